"""Small, pure helpers on absolute paths shared by the backends.

Every backend turns filesystem rules into operations on concrete paths: it needs them
canonical (symlinks resolved, so a rule cannot be dodged through another name), ordered
shallow → deep (so the most specific rule is applied last), and it needs to ask which rule
path is the nearest ancestor of another.  These helpers do only that; the only filesystem
access is :func:`canonical`, which reads symlinks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Container, Iterable, Iterator

_WILDCARD = re.compile(r"[*?\[]")


class BadPath(ValueError):
    """A path that no backend can express (NUL byte, not absolute)."""


def check_path(path: str) -> str:
    """Return ``path`` if it is absolute and free of NUL bytes, else raise :class:`BadPath`."""
    if "\x00" in path:
        raise BadPath(f"path `{path!r}` contains a NUL byte")
    if not path.startswith("/"):
        raise BadPath(f"path `{path}` is not absolute")
    return path


def normalise(path: str) -> str:
    """Lexically normalise an absolute path (``..``, ``.``, duplicate slashes)."""
    check_path(path)
    out = os.path.normpath(path)
    return "/" + out.lstrip("/")


def canonical(path: str) -> str:
    """The canonical spelling of an absolute path: normalised, every existing symlink
    resolved (missing tails are kept as written, normalised)."""
    return os.path.realpath(normalise(path))


def depth(path: str) -> int:
    """The number of components of an absolute path (``/`` → 0)."""
    return len([part for part in path.split("/") if part])


def order_key(path: str) -> tuple[int, str]:
    """Sort key ordering paths shallow → deep, then by name (deterministic)."""
    return depth(path), path


def is_within(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies below it (both normalised, absolute)."""
    if root == "/":
        return True
    return path == root or path.startswith(root + "/")


def ancestors(path: str) -> Iterator[str]:
    """The proper ancestors of an absolute path, deepest first, ending with ``/``."""
    while path != "/":
        path = os.path.dirname(path)
        yield path


def nearest(path: str, candidates: Container[str]) -> str | None:
    """The deepest proper ancestor of ``path`` that is in ``candidates``, if any."""
    for ancestor in ancestors(path):
        if ancestor in candidates:
            return ancestor
    return None


def glob_prefix(pattern: str) -> str:
    """The literal directory a path glob is anchored at (``/a/b/**/*.env`` → ``/a/b``)."""
    parts: list[str] = []
    for part in pattern.split("/")[1:]:
        if _WILDCARD.search(part):
            break
        parts.append(part)
    else:  # no wildcard: the pattern is literal, its parent anchors it
        parts = parts[:-1]
    return "/" + "/".join(parts)


def outermost(paths: Iterable[str]) -> list[str]:
    """The paths that are not below another of the given paths, sorted."""
    result: list[str] = []
    for path in sorted(set(paths), key=order_key):
        if not any(is_within(path, kept) for kept in result):
            result.append(path)
    return sorted(result)
