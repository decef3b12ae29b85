"""Windows path semantics for the analyzer: one place for the CMD and PowerShell frontends
and the Windows tool models.

The judge and the IR work on POSIX-shaped absolute paths.  A Windows path is mapped into
that namespace the way WSL mounts the drives: ``C:\\Users\\me`` is ``/mnt/c/Users/me``.  A
policy compiled for Windows (``--platform windows``) is mapped the same way, once, by
:func:`analysis_ir` (its rules, workspace, home and temporary directory lower-cased: Windows
compares names case-insensitively), so a policy's rules apply unchanged to bash, CMD and
PowerShell commands.

What :func:`resolve_variants` knows about a word naming a path:

* both separators; ``~`` and ``~\\`` (the home); drive letters (``C:``, any case), a rooted
  path without a drive (the current drive), drive-relative ``D:name`` (on another drive: the
  directory there is not known);
* ``\\\\?\\`` and ``\\\\?\\UNC\\`` prefixes are removed; UNC paths ``\\\\server\\share\\…`` map to
  ``/mnt/unc/server/share/…`` (never writable by a policy; :func:`unc_host` names the host
  contacted); device paths (``\\\\.\\PhysicalDrive0``, ``\\\\.\\pipe\\…``) are not known;
* ``..`` stops at the drive's root; trailing dots and spaces of a component are removed
  (Windows strips them: ``hooks.`` is ``hooks``), so is an alternate data stream
  (``config::$DATA`` is ``config``);
* 8.3 short names (``PROGRA~1``): the well-known ones are expanded, any other makes the rest
  of the path not known (strict: the long name cannot be known without the disk);
* case: the part of a path inside the workspace, home or temporary directory is spelled as
  the context spells them; when the rest differs from its lower-cased form, both spellings
  are judged (a rule on ``.git/hooks`` also covers ``.GIT\\HOOKS``).
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from stockade.compiler.ir import Context, PolicyIR

#: Where drive ``X:`` is mapped in the analyzer's namespace (as WSL mounts it).
DRIVES = "/mnt/"
UNC_ROOT = "/mnt/unc/"
_DRIVE_RE = re.compile(r"^([A-Za-z]):")
_MAPPED_RE = re.compile(r"^/mnt/[a-z](?:/|$)")
_SHORT_RE = re.compile(r"^[^~.\x00]{1,6}~[0-9]{1,6}(?:\.[^.]{0,3})?$")
_KNOWN_SHORT = {"progra~1": "Program Files", "progra~2": "Program Files (x86)", "docume~1": UNKNOWN}
_SEPARATORS_RE = re.compile(r"[\\/]")
_PROFILE_RE = re.compile(r"^/mnt/[a-z]/users/(?!public(?:/|$)|default(?:/|$))[^/]+(?=/|$)", re.IGNORECASE)


def is_windows_path(word: str) -> bool:
    """Whether a word is spelled as a Windows path (a drive, UNC or device path, or with ``\\``)."""
    return bool(_DRIVE_RE.match(word)) or "\\" in word


def is_mapped_path(word: str, context: Any) -> bool:
    """Whether a word starting with ``/`` is a path of the analyzer's namespace (a drive
    mapping, or below the context's home, workspace or temporary directory: the values the
    analyzer gives ``%USERPROFILE%``, ``%TEMP%`` …) rather than a ``/switch``."""
    if word.startswith(DRIVES) and _MAPPED_RE.match(word):
        return True
    low = word.lower()
    for directory in (context.home, context.workspace, context.tmpdir):
        if directory and directory != "/":
            prefix = directory.rstrip("/").lower()
            if low == prefix or low.startswith((prefix + "/", prefix + "\\")):
                return True
    return False


def drive_path(drive: str, rest: str = "") -> str:
    """The mapped path of ``rest`` (``/``-separated, relative) on drive ``drive``."""
    base = DRIVES + drive.lower()
    return base + "/" + rest.lstrip("/") if rest.strip("/") else base


def to_mapped(path: str) -> str:
    """A Windows absolute path (``C:\\x``, ``\\\\server\\share``) in the analyzer's namespace,
    without case folding (used for the IR and the context)."""
    text = path.replace("\\", "/")
    if text.startswith(("//?/", "//./")) and _DRIVE_RE.match(text[4:]):
        text = text[4:]
    match = _DRIVE_RE.match(text)
    if match:
        return _normal(drive_path(match.group(1), text[2:]), len(DRIVES) + 1)
    if text.startswith("//"):
        return _normal(UNC_ROOT + text.lstrip("/"), len(UNC_ROOT) - 1)
    return text


def unc_host(word: str) -> str | None:
    """The server a UNC path names (``\\\\fileserver\\share`` → ``fileserver``), else None."""
    text = word.replace("\\", "/")
    if text.lower().startswith("//?/unc/"):
        text = "//" + text[8:]
    elif text.startswith(("//?/", "//./")):
        return None
    if text.startswith("//") and len(text) > 2 and text[2] != "/":
        host = text[2:].split("/", 1)[0]
        return host or None
    return None


def _normal(path: str, root_length: int) -> str:
    """Normalise ``.``/``..`` and repeated separators; ``..`` stops at ``path[:root_length]``."""
    root = path[:root_length]
    parts: list[str] = []
    for part in path[root_length:].split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    root = root.rstrip("/") or "/"
    if not parts:
        return root
    return (root if root != "/" else "") + "/" + "/".join(parts)


def _clean_component(part: str) -> str:
    """What Windows makes of one path component: trailing dots and spaces removed, an
    alternate data stream removed, a short name expanded (or not known)."""
    if part in (".", "..") or not part:
        return part
    if ":" in part:
        part = part.split(":", 1)[0]
    stripped = part.rstrip(". ")
    if stripped:
        part = stripped
    if "~" in part and _SHORT_RE.match(part):
        return _KNOWN_SHORT.get(part.lower(), UNKNOWN)
    return part


class WinContext:
    """The context's directories for one walk, with what case-folding needs.

    ``fold``: every path is lower-cased (a policy compiled for Windows, see :func:`analysis_ir`)."""

    __slots__ = ("dirs", "fold", "globs", "home", "names", "tmpdir", "workspace")

    def __init__(self, context: Context):
        self.home = context.home
        self.workspace = context.workspace
        self.tmpdir = context.tmpdir
        self.fold = getattr(context, "platform", "") == "windows" or _MAPPED_RE.match(context.home or "") is not None
        dirs = sorted({d.rstrip("/") for d in (context.workspace, context.home, context.tmpdir) if d}, key=len,
                      reverse=True)
        self.dirs = tuple((d, d.lower()) for d in dirs)
        #: the lower-cased components of the policy's literal rules and the patterns of its glob
        #: rules (see :func:`register_policy`); None: not known, every spelling is judged
        self.names: frozenset[str] | None = None
        self.globs: tuple[str, ...] = ()

    def spellings(self, path: str) -> list[str]:
        """The spellings of a mapped absolute path that are judged (see the module docstring)."""
        if self.fold:
            return [path.lower()]
        lowered = path.lower()
        head, rest = "", path
        for spelled, low in self.dirs:
            if lowered == low or lowered.startswith(low + "/"):
                head, rest = spelled, path[len(spelled):]
                break
        first = head + rest
        folded = head + rest.lower()
        found = [first] if folded == first or not self.may_differ(folded[len(head):]) else [first, folded]
        if not head:
            # a Windows user profile (`C:\Users\NAME\…`) under a policy written for another
            # system: also judged as the home (its secrets are the same kind of secrets)
            match = _PROFILE_RE.match(path)
            if match and self.home and self.home != "/":
                found.append(self.home.rstrip("/") + path[match.end():].lower())
        return found


    def may_differ(self, rest: str) -> bool:
        """Whether a rule could judge the lower-cased ``rest`` of a path (below the context
        directory that starts it) otherwise than its spelling as written: only when one of its
        components is a component of a literal rule or matches one of a glob rule."""
        names = self.names
        if names is None:
            return True
        from fnmatch import fnmatchcase

        for part in rest.split("/"):
            if part and (part in names or any(fnmatchcase(part, glob) for glob in self.globs)):
                return True
        return False


def register_policy(ir: Any) -> None:
    """Let the spellings of paths judged against ``ir`` (its context) be only those that can
    make a difference (see :meth:`WinContext.may_differ`).  Policies sharing one context add
    up (the names of every one of them are kept)."""
    entry = _REGISTERED.get(id(ir))
    if entry is not None and entry is ir:
        return
    context = win_context(ir.context)
    if context.fold:
        return
    if len(_REGISTERED) > 64:
        _REGISTERED.clear()
    _REGISTERED[id(ir)] = ir
    names: set[str] = set(context.names or ())
    globs: set[str] = set(context.globs)
    for rule in ir.filesystem:
        for part in rule.pattern.lower().split("/"):
            if not part or part in ("*", "**"):
                continue
            if rule.is_glob and any(c in part for c in "*?["):
                globs.add(part)
            else:
                names.add(part)
    context.globs = tuple(sorted(globs))
    context.names = frozenset(names)


_REGISTERED: dict[int, Any] = {}
_CONTEXTS: dict[int, tuple[Any, WinContext]] = {}


def win_context(context: Context) -> WinContext:
    """The :class:`WinContext` of ``context`` (memoised)."""
    entry = _CONTEXTS.get(id(context))
    if entry is not None and entry[0] is context:
        return entry[1]
    found = WinContext(context)
    if len(_CONTEXTS) > 64:
        _CONTEXTS.clear()
    _CONTEXTS[id(context)] = (context, found)
    return found


def resolve_word(word: str, cwd: str, home: str, roots: tuple[str, ...] = ()) -> str:
    """The mapped absolute path a Windows word names, from the (mapped) directory ``cwd``
    (a rooted path below ``home`` or one of ``roots`` — the values the analyzer gives
    ``%USERPROFILE%``, ``%TEMP%`` … — is that path, not one on the current drive)."""
    if word in ("~",) or word.startswith(("~\\", "~/")):
        word = home + "/" + word[2:] if len(word) > 2 else home
    text = word.replace("\\", "/")
    low = text[:8].lower()
    if low.startswith("//?/unc/"):
        text = "//" + text[8:]
    elif text.startswith(("//?/", "//./", "//??/")) or low.startswith("/??/"):
        rest = text[4:] if not text.startswith("//??/") else text[5:]
        if _DRIVE_RE.match(rest) and (len(rest) == 2 or rest[2] == "/"):
            text = rest
        else:
            return UNKNOWN + "/a Windows device path " + word
    match = _DRIVE_RE.match(text)
    if match:
        drive = match.group(1).lower()
        rest = text[2:]
        if rest.startswith("/"):
            path = DRIVES + drive + rest
        else:  # drive-relative: the directory current on that drive
            on = DRIVES + drive
            path = cwd + "/" + rest if cwd == on or cwd.startswith(on + "/") else on + "/" + UNKNOWN + "/" + rest
        root = len(DRIVES) + 1
    elif text.startswith("//"):
        path = UNC_ROOT + text.lstrip("/")
        root = len(UNC_ROOT) - 1
    elif text.startswith("/"):
        if _MAPPED_RE.match(text) or text.startswith(UNC_ROOT) or _below_any(text, (home, *roots)):
            path = text
        else:
            drive_match = _MAPPED_RE.match(cwd)
            path = cwd[:len(DRIVES) + 1] + text if drive_match else text
        root = len(DRIVES) + 1 if _MAPPED_RE.match(path) else 0
    else:
        if not text:
            return cwd
        if text.startswith(UNKNOWN):
            return text
        path = cwd.rstrip("/") + "/" + text
        root = len(DRIVES) + 1 if _MAPPED_RE.match(path) else 0
    if "[" in path:  # not a wildcard on Windows, a character class to the judge: any character there
        path = path.replace("[", "?")
    parts = path.split("/")
    path = "/".join(_clean_component(part) if index > 0 else part for index, part in enumerate(parts))
    if UNKNOWN in path:
        head, _, tail = path.partition(UNKNOWN)
        return _normal(head, root) + "/" + UNKNOWN + tail if head.strip("/") else path
    return _normal(path, root)


def _below_any(path: str, roots: tuple[str, ...]) -> bool:
    """Whether ``path`` is one of ``roots`` (POSIX directories, not ``/``) or below one."""
    for root in roots:
        if root and root != "/":
            root = root.rstrip("/")
            if path == root or path.startswith(root + "/"):
                return True
    return False


def resolve_variants(walker: Any, word: str, cwd: str | None = None) -> list[str]:
    """The mapped paths (one, or more spellings) a Windows word names for ``walker``'s state.

    A wildcard component starting with ``*`` also matches names that start with a dot on
    Windows (``*`` is ``.git`` too): it is judged a second time as ``.*…``."""
    base = walker.state.cwd if cwd is None else cwd
    key = (id(walker.context), base, word)
    entry = _VARIANTS.get(key)
    if entry is not None and entry[0] is walker.context:
        return entry[1]
    context = win_context(walker.context)
    path = resolve_word(word, base, walker.home, (walker.context.workspace, walker.context.tmpdir))
    if UNKNOWN in path and not path.startswith(UNKNOWN):
        found = [path if not context.fold else path.lower()]
    else:
        found = context.spellings(path)
        if "/*" in path:
            head, _, tail = path.partition("/*")
            found.extend(context.spellings(head + "/.*" + tail))
    if len(_VARIANTS) >= 4096:
        _VARIANTS.clear()
    _VARIANTS[key] = (walker.context, found)
    return found


#: (id of the context, cwd, word) → (the context, :func:`resolve_variants`: a pure function of
#: them); cleared when full.
_VARIANTS: dict[tuple[int, str, str], tuple[Any, list[str]]] = {}


# -- a policy compiled for Windows --------------------------------------------------------------

_IRS: dict[int, tuple[Any, Any]] = {}


def analysis_ir(ir: PolicyIR) -> PolicyIR:
    """The IR to judge against: ``ir`` itself, or — for a policy compiled for Windows — the
    same policy with every path mapped into the analyzer's namespace and lower-cased (rules
    keep their origins, so reasons still name the policy's lines).  Memoised per IR."""
    context = ir.context
    if getattr(context, "platform", "") != "windows":
        return ir
    entry = _IRS.get(id(ir))
    if entry is not None and entry[0] is ir:
        return entry[1]
    from dataclasses import replace

    def mapped(path: str) -> str:
        return to_mapped(path).lower() if path else path

    rules = tuple(replace(rule, pattern=mapped(rule.pattern)) for rule in ir.filesystem)  # type: ignore[type-var]
    new_context = replace(context, workspace=mapped(context.workspace),  # type: ignore[type-var]
                          home=mapped(context.home), tmpdir=mapped(context.tmpdir))
    converted = replace(ir, filesystem=rules, context=new_context)
    if len(_IRS) > 16:
        _IRS.clear()
    _IRS[id(ir)] = (ir, converted)
    return converted


_ENVIRONMENTS: dict[int, tuple[Any, dict[str, str]]] = {}


def windows_environment(context: Context) -> dict[str, str]:
    """The Windows environment variables the analyzer knows (upper-case names), as mapped
    paths: the profile directories from the context's home, the system directories of
    drive ``C:`` (memoised per context: treat the answer as read-only)."""
    entry = _ENVIRONMENTS.get(id(context))
    if entry is not None and entry[0] is context:
        return entry[1]
    if len(_ENVIRONMENTS) > 64:
        _ENVIRONMENTS.clear()
    found = _windows_environment(context)
    _ENVIRONMENTS[id(context)] = (context, found)
    return found


def _windows_environment(context: Context) -> dict[str, str]:
    home = context.home.rstrip("/") or "/"
    tmp = context.tmpdir
    system = drive_path("c")
    values = {
        "USERPROFILE": home, "HOME": home, "APPDATA": home + "/AppData/Roaming",
        "USERNAME": home.rstrip("/").rpartition("/")[2] or UNKNOWN,
        "LOCALAPPDATA": home + "/AppData/Local", "TEMP": tmp, "TMP": tmp, "TMPDIR": tmp,
        "WORKSPACE": context.workspace, "SYSTEMDRIVE": system, "SYSTEMROOT": system + "/Windows",
        "WINDIR": system + "/Windows", "PROGRAMFILES": system + "/Program Files",
        "PROGRAMFILES(X86)": system + "/Program Files (x86)", "PROGRAMDATA": system + "/ProgramData",
        "ALLUSERSPROFILE": system + "/ProgramData", "PUBLIC": system + "/Users/Public",
        "COMSPEC": system + "/Windows/System32/cmd.exe", "OS": "Windows_NT",
        "PATHEXT": ".COM;.EXE;.BAT;.CMD;.VBS;.JS;.WS;.MSC;.PS1",
    }
    match = _MAPPED_RE.match(home)
    if match:
        values["HOMEDRIVE"] = home[:len(DRIVES) + 1]
        values["HOMEPATH"] = home[len(DRIVES) + 1:] or "/"
    else:
        values["HOMEDRIVE"] = ""
        values["HOMEPATH"] = home
    if context.platform == "windows" or match:
        fold = {key: value.lower() if "/" in value else value for key, value in values.items()}
        fold["OS"] = "Windows_NT"
        return fold
    return values


__all__ = ["analysis_ir", "is_windows_path", "resolve_variants", "resolve_word", "to_mapped", "unc_host",
           "windows_environment"]
