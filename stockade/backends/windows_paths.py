"""Windows path handling for the Windows backend: parse, validate, normalise, compare.

Windows paths are case-insensitive and accept both ``\\`` and ``/`` as separators.  The
backend accepts only absolute *drive* paths (``C:\\Users\\dev``); everything that can alias
another object or escape the ACL model is rejected with a reason:

* UNC and device paths (``\\\\server\\share``, ``\\\\?\\C:\\``, ``\\\\.\\pipe``)
* drive-relative paths (``C:foo``) and relative paths
* ``..`` components (the compiler canonicalises paths; a ``..`` left over is suspicious)
* control characters (newlines included) and the characters ``<>"|``
* ``:`` inside a component (alternate data streams)
* components ending in a dot or a space (Windows strips them, so two spellings alias)
* reserved device names (``CON``, ``NUL``, ``COM1``, ``LPT1`` …, with any extension)

``*`` and ``?`` are accepted only in globs.  A path that is rooted but has no drive
(``\\etc\\shadow``, as the compiler spells a POSIX path for platform windows) is classified
as *rooted*, never guessed onto a drive.

The comparison key of a path is its lower-cased form with ``\\`` separators (Windows
compares names case-insensitively; ``str.lower`` approximates the NTFS upcase table).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$", re.IGNORECASE)
_BAD_CHARS = re.compile(r'[\x00-\x1f<>"|]')
_DRIVE = re.compile(r"^([A-Za-z]):([\\/]|$)")

PathKind = Literal["drive", "rooted"]


class WinPathError(ValueError):
    """A path the Windows backend refuses, with a lowercase reason."""


@dataclass(frozen=True, slots=True)
class WinPath:
    """A validated Windows path: ``drive`` (``C``) or None for a rooted driveless path,
    and its components as written (case preserved)."""

    drive: str | None
    parts: tuple[str, ...]

    @property
    def kind(self) -> PathKind:
        return "drive" if self.drive else "rooted"

    def __str__(self) -> str:
        if self.drive is None:
            return "\\" + "\\".join(self.parts)
        return f"{self.drive}:\\" + "\\".join(self.parts)

    @property
    def key(self) -> str:
        """The case-insensitive comparison key."""
        return str(self).lower()

    @property
    def volume(self) -> str:
        """The volume (``C:``); rooted paths have none."""
        return f"{self.drive}:" if self.drive else ""

    @property
    def parent(self) -> WinPath | None:
        """The parent path, None for a root."""
        if not self.parts:
            return None
        return WinPath(self.drive, self.parts[:-1])

    def ancestors(self) -> list[WinPath]:
        """Proper ancestors, deepest first, ending with the root."""
        return [WinPath(self.drive, self.parts[:i]) for i in range(len(self.parts) - 1, -1, -1)]

    def child(self, name: str) -> WinPath:
        """This path with one more component."""
        return WinPath(self.drive, self.parts + (name,))

    def is_within(self, other: WinPath) -> bool:
        """Whether this path is ``other`` or below it (case-insensitive)."""
        if (self.drive or "").upper() != (other.drive or "").upper() or len(self.parts) < len(other.parts):
            return False
        return all(a.lower() == b.lower() for a, b in zip(self.parts, other.parts, strict=False))


def parse_win_path(text: str, *, glob: bool = False) -> WinPath:
    """Parse and validate a Windows path (``\\`` or ``/`` separators); raise
    :class:`WinPathError` naming the problem."""
    if not text:
        raise WinPathError("empty path")
    if _BAD_CHARS.search(text):
        bad = _BAD_CHARS.search(text).group(0)  # type: ignore[union-attr]
        what = "a control character (newline, tab, …)" if ord(bad) < 0x20 else f"the character `{bad}`"
        raise WinPathError(f"contains {what}, which windows paths cannot hold")
    if text[:2] in ("\\\\", "//", "\\/", "/\\"):
        raise WinPathError("is a UNC or device path; only local drive paths are supported")
    match = _DRIVE.match(text)
    if match:
        drive: str | None = match.group(1).upper()
        rest = text[2:]
    elif text[0] in "\\/":
        drive = None
        rest = text
    elif len(text) >= 2 and text[1] == ":":
        raise WinPathError("is drive-relative (`X:name`); use an absolute path such as `X:\\name`")
    else:
        raise WinPathError("is not an absolute windows path")
    parts: list[str] = []
    for part in re.split(r"[\\/]+", rest):
        if part in ("", "."):
            continue
        if part == "..":
            raise WinPathError("contains a `..` component")
        if ":" in part:
            raise WinPathError("names an alternate data stream (`:` inside a component)")
        if not glob and ("*" in part or "?" in part):
            raise WinPathError("contains a wildcard but is not a glob")
        if part[-1] in ". " and part.strip(". ") != "":
            raise WinPathError(f"component `{part}` ends in a dot or space, which windows strips")
        if part.strip(". ") == "" and part not in (".",):
            raise WinPathError(f"component `{part}` is only dots or spaces")
        if _RESERVED.match(part):
            raise WinPathError(f"component `{part}` is a reserved device name")
        parts.append(part)
    return WinPath(drive, tuple(parts))


def looks_windows(text: str) -> bool:
    """Whether ``text`` is spelled as a windows drive or UNC path (not a POSIX path)."""
    return bool(_DRIVE.match(text)) or text.startswith("\\")


def glob_base(path: WinPath) -> tuple[WinPath, tuple[str, ...]]:
    """Split a glob into its literal base directory and the wildcard remainder.

    Only ``*`` and ``?`` are wildcards (as in the IR's globs); ``[`` is an ordinary
    character of a windows name (``C:\\src\\p[1]``)."""
    for i, part in enumerate(path.parts):
        if "*" in part or "?" in part:
            return WinPath(path.drive, path.parts[:i]), path.parts[i:]
    return WinPath(path.drive, path.parts[:-1]), path.parts[-1:]
