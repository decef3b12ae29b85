"""Preview: run against a copy-on-write view of the workspace, then list what changed.

bubblewrap 0.8.0 has no overlay options, so the runtime mounts the overlay itself: in the
child, between fork and exec, it enters a new user + mount namespace (mapping only its own
uid and gid), makes every mount private, and mounts ``overlay`` over the workspace
(``lowerdir`` = the workspace, ``upperdir``/``workdir`` in a private temp dir, option
``userxattr`` as unprivileged overlayfs requires).  Then bwrap is exec'd in that mount
namespace, so its binds of the workspace see the merged view.  The host's workspace is
never written; every change lands in the upper dir.

:func:`collect_changes` reads the upper dir against the real workspace: added, modified,
deleted files (whiteouts are character devices 0/0), new and replaced directories (opaque
dirs: ``user.overlay.opaque``), permission changes, symlinks, type changes, and renames (a
deleted file whose content reappears elsewhere).  :mod:`stockade.runtime.apply` applies
them with a journal.
"""

from __future__ import annotations

import ctypes
import difflib
import hashlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

from stockade.diagnostics import Diagnostic, StockadeError
from stockade.runtime.record import Record

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNS = 0x00020000
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_OPAQUE_XATTRS = ("user.overlay.opaque", "trusted.overlay.opaque")
_WHITEOUT_XATTRS = ("user.overlay.whiteout", "trusted.overlay.whiteout")
#: Files larger than this are compared by hash only and not diffed line by line.
DIFF_MAX_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Change:
    """One change in the preview, relative to the workspace.

    ``kind``: ``added``, ``modified``, ``deleted``, ``renamed`` (from ``old_path``),
    ``mode`` (permissions only), ``type`` (file ↔ dir ↔ symlink), ``unsupported`` (a
    device, fifo or socket: never applied).  ``entry`` is ``file``, ``dir`` or ``symlink``.
    """

    kind: str
    path: str
    entry: str
    old_path: str | None = None
    old_mode: int | None = None
    new_mode: int | None = None
    added_lines: int = 0
    removed_lines: int = 0
    binary: bool = False

    def to_json(self) -> dict:
        """The change as a JSON object (modes in octal text)."""
        return {
            "kind": self.kind, "path": self.path, "entry": self.entry, "old_path": self.old_path,
            "old_mode": None if self.old_mode is None else oct(self.old_mode),
            "new_mode": None if self.new_mode is None else oct(self.new_mode),
            "added_lines": self.added_lines, "removed_lines": self.removed_lines, "binary": self.binary,
        }


def _escape_option(path: str) -> str:
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


class Overlay:
    """A copy-on-write view of ``workspace`` for one preview run."""

    def __init__(self, workspace: str, base_dir: str | None = None):
        self.workspace = os.path.realpath(workspace)
        if not os.path.isdir(self.workspace):
            raise StockadeError(Diagnostic("R520", f"the workspace `{workspace}` is not a directory"))
        base = base_dir or tempfile.gettempdir()
        self.root = tempfile.mkdtemp(prefix="stockade-preview-", dir=base)
        if _inside(self.root, self.workspace):
            shutil.rmtree(self.root, ignore_errors=True)
            raise StockadeError(Diagnostic("R520", "the preview's scratch directory would be inside the workspace",
                                           help="set TMPDIR to a directory outside the workspace"))
        self.upper = os.path.join(self.root, "upper")
        self.work = os.path.join(self.root, "work")
        os.mkdir(self.upper, 0o755)
        os.mkdir(self.work, 0o700)
        self._libc = ctypes.CDLL(None, use_errno=True)

    def pre_exec(self) -> Callable[[], None]:
        """The function to run in the child before exec: mount the overlay in new
        user + mount namespaces."""
        libc = self._libc
        uid, gid = os.getuid(), os.getgid()
        options = (f"userxattr,lowerdir={_escape_option(self.workspace)},upperdir={_escape_option(self.upper)},"
                   f"workdir={_escape_option(self.work)}").encode()
        target = self.workspace.encode()

        def check(result: int, what: str) -> None:
            if result != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"{what}: {os.strerror(err)}")

        def enter() -> None:
            check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare")
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
                try:
                    os.write(fd, text.encode())
                finally:
                    os.close(fd)
            check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "make mounts private")
            check(libc.mount(b"overlay", target, b"overlay", 0, options), "mount overlay")

        return enter

    def probe(self) -> None:
        """Check that the overlay can be mounted here (raises R521 otherwise)."""
        import subprocess

        try:
            subprocess.run(["true"], preexec_fn=self.pre_exec(), check=True, close_fds=True)
        except (OSError, subprocess.SubprocessError) as exc:
            raise StockadeError(Diagnostic(
                "R521", f"cannot mount a copy-on-write view of the workspace: {exc}",
                help="previews need unprivileged overlayfs in a user namespace (Linux 5.11+); "
                     "run without `--preview` to let the command write the workspace directly")) from None

    def changes(self) -> list[Change]:
        """What the run changed (see :func:`collect_changes`)."""
        return collect_changes(self.workspace, self.upper)

    def cleanup(self) -> None:
        """Remove the scratch directories."""
        shutil.rmtree(self.root, ignore_errors=True)


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def is_whiteout(path: str, st: os.stat_result | None = None) -> bool:
    """Whether an upper-dir entry is an overlayfs whiteout (char device 0/0, or an
    xattr whiteout)."""
    st = st or os.lstat(path)
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
        return True
    if stat.S_ISREG(st.st_mode) and st.st_size == 0:
        return any(_getxattr(path, name) is not None for name in _WHITEOUT_XATTRS)
    return False


def is_opaque(path: str) -> bool:
    """Whether an upper-dir directory hides the lower directory of the same name."""
    return any(_getxattr(path, name) in (b"y",) for name in _OPAQUE_XATTRS)


def _getxattr(path: str, name: str) -> bytes | None:
    try:
        return os.getxattr(path, name, follow_symlinks=False)
    except OSError:
        return None


def entry_kind(st: os.stat_result) -> str:
    """``file``, ``dir``, ``symlink`` or ``other``."""
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    return "other"


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def same_entry(upper: str, lower: str, ust: os.stat_result, lst: os.stat_result) -> bool:
    """Whether an upper entry equals the lower one (type, permissions, content/target)."""
    kind = entry_kind(ust)
    if kind != entry_kind(lst) or stat.S_IMODE(ust.st_mode) != stat.S_IMODE(lst.st_mode):
        return False
    if kind == "symlink":
        return os.readlink(upper) == os.readlink(lower)
    if kind == "file":
        return ust.st_size == lst.st_size and _digest(upper) == _digest(lower)
    return True


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def walk_upper(workspace: str, upper: str, rel: str = "") -> Iterator[tuple[str, str, str | None]]:
    """The raw operations an upper dir implies, top-down: ``(op, rel_path, detail)`` with
    op ``delete``, ``replace`` (copy the upper entry over, recursively for dirs), ``chmod``
    or ``unsupported``."""
    try:
        names = sorted(os.listdir(os.path.join(upper, rel)))
    except OSError:
        return
    for name in names:
        path = os.path.join(rel, name) if rel else name
        up, low = os.path.join(upper, path), os.path.join(workspace, path)
        ust, lst = os.lstat(up), _lstat(low)
        if is_whiteout(up, ust):
            if lst is not None:
                yield ("delete", path, None)
            continue
        kind = entry_kind(ust)
        if kind == "other":
            yield ("unsupported", path, None)
            continue
        if kind == "dir" and lst is not None and entry_kind(lst) == "dir" and not is_opaque(up):
            if stat.S_IMODE(ust.st_mode) != stat.S_IMODE(lst.st_mode):
                yield ("chmod", path, oct(stat.S_IMODE(ust.st_mode)))
            yield from walk_upper(workspace, upper, path)
            continue
        if lst is not None and kind != "dir" and same_entry(up, low, ust, lst):
            continue  # copied up but unchanged (opened for writing, touched)
        yield ("replace", path, None)


def _text_lines(path: str) -> list[str] | None:
    try:
        if os.path.getsize(path) > DIFF_MAX_BYTES:
            return None
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", "replace").splitlines(keepends=True)


def _line_counts(old: str | None, new: str | None) -> tuple[int, int, bool]:
    old_lines = [] if old is None else _text_lines(old)
    new_lines = [] if new is None else _text_lines(new)
    if old_lines is None or new_lines is None:
        return 0, 0, True
    added = removed = 0
    for line in difflib.ndiff(old_lines, new_lines) if len(old_lines) + len(new_lines) < 20000 else ():
        if line.startswith("+ "):
            added += 1
        elif line.startswith("- "):
            removed += 1
    return added, removed, False


def _files_under(root: str, rel: str) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry below (and including) ``root/rel`` that is not a whiteout."""
    top = os.path.join(root, rel)
    st = os.lstat(top)
    yield rel, st
    if stat.S_ISDIR(st.st_mode):
        for name in sorted(os.listdir(top)):
            child = os.path.join(rel, name)
            cst = os.lstat(os.path.join(root, child))
            if is_whiteout(os.path.join(root, child), cst):
                continue
            yield from _files_under(root, child)


def collect_changes(workspace: str, upper: str) -> list[Change]:
    """The changes of an upper dir against the workspace, for display (renames paired)."""
    changes: list[Change] = []
    for op, path, detail in walk_upper(workspace, upper):
        low, up = os.path.join(workspace, path), os.path.join(upper, path)
        lst = _lstat(low)
        if op == "delete":
            assert lst is not None
            for rel, st in _files_under(workspace, path):
                added, removed, binary = _line_counts(os.path.join(workspace, rel), None) \
                    if entry_kind(st) == "file" else (0, 0, False)
                changes.append(Change("deleted", rel, entry_kind(st), old_mode=stat.S_IMODE(st.st_mode),
                                      removed_lines=removed, binary=binary))
        elif op == "chmod":
            assert lst is not None and detail is not None
            changes.append(Change("mode", path, "dir", old_mode=stat.S_IMODE(lst.st_mode), new_mode=int(detail, 8)))
        elif op == "unsupported":
            changes.append(Change("unsupported", path, "other"))
        else:
            ust = os.lstat(up)
            if lst is not None and entry_kind(lst) != entry_kind(ust):
                changes.append(Change("type", path, entry_kind(ust), old_mode=stat.S_IMODE(lst.st_mode),
                                      new_mode=stat.S_IMODE(ust.st_mode)))
                if entry_kind(ust) != "dir":
                    continue
            if lst is not None and entry_kind(lst) == "dir" and entry_kind(ust) == "dir":
                # a replaced (opaque) directory: everything below the old one goes
                for rel, st in list(_files_under(workspace, path))[1:]:
                    changes.append(Change("deleted", rel, entry_kind(st), old_mode=stat.S_IMODE(st.st_mode)))
            for rel, st in _files_under(upper, path):
                kind = entry_kind(st)
                old = _lstat(os.path.join(workspace, rel))
                if rel == path and lst is not None and entry_kind(lst) == kind:
                    if kind == "file" and not same_entry(up, low, st, lst) and _digest(up) == _digest(low):
                        changes.append(Change("mode", rel, kind, old_mode=stat.S_IMODE(lst.st_mode),
                                              new_mode=stat.S_IMODE(st.st_mode)))
                        continue
                    if kind == "dir":
                        continue
                    added, removed, binary = _line_counts(low, up) if kind == "file" else (0, 0, False)
                    changes.append(Change("modified", rel, kind, old_mode=stat.S_IMODE(lst.st_mode),
                                          new_mode=stat.S_IMODE(st.st_mode), added_lines=added,
                                          removed_lines=removed, binary=binary))
                    continue
                if rel != path and old is not None and entry_kind(old) == kind and kind != "dir":
                    # below a replaced directory, an entry that existed before
                    if same_entry(os.path.join(upper, rel), os.path.join(workspace, rel), st, old):
                        changes = [c for c in changes if not (c.kind == "deleted" and c.path == rel)]
                        continue
                added, removed, binary = _line_counts(None, os.path.join(upper, rel)) \
                    if kind == "file" else (0, 0, False)
                changes.append(Change("added", rel, kind, new_mode=stat.S_IMODE(st.st_mode), added_lines=added,
                                      binary=binary))
    return _pair_renames(changes, workspace, upper)


def _pair_renames(changes: list[Change], workspace: str, upper: str) -> list[Change]:
    deleted = {c.path: c for c in changes if c.kind == "deleted" and c.entry in ("file", "symlink")}
    by_digest: dict[str, list[str]] = {}
    for path, change in deleted.items():
        full = os.path.join(workspace, path)
        key = ("L" + os.readlink(full)) if change.entry == "symlink" else _digest(full)
        by_digest.setdefault(key, []).append(path)
    out: list[Change] = []
    used: set[str] = set()
    for change in changes:
        if change.kind == "added" and change.entry in ("file", "symlink") and by_digest:
            full = os.path.join(upper, change.path)
            key = ("L" + os.readlink(full)) if change.entry == "symlink" else _digest(full)
            candidates = [p for p in by_digest.get(key, []) if p not in used]
            if candidates:
                source = candidates[0]
                used.add(source)
                out.append(Change("renamed", change.path, change.entry, old_path=source,
                                  old_mode=deleted[source].old_mode, new_mode=change.new_mode))
                continue
        out.append(change)
    return [c for c in out if not (c.kind == "deleted" and c.path in used)]


def unified_diff(workspace: str, upper: str, change: Change) -> str:
    """The unified diff of one change (text files; a note for binary or non-files)."""
    old_rel = change.old_path or change.path
    old = os.path.join(workspace, old_rel) if change.kind not in ("added",) else None
    new = os.path.join(upper, change.path) if change.kind not in ("deleted",) else None
    if change.entry != "file" or change.kind in ("mode", "unsupported"):
        detail = {"mode": f"mode {oct(change.old_mode or 0)} → {oct(change.new_mode or 0)}"}.get(change.kind, change.kind)
        return f"--- {change.path}: {change.entry} {detail}\n"
    old_lines = [] if old is None else _text_lines(old)
    new_lines = [] if new is None else _text_lines(new)
    if old_lines is None or new_lines is None:
        return f"Binary files a/{old_rel} and b/{change.path} differ\n"
    out = "".join(difflib.unified_diff(old_lines, new_lines, "/dev/null" if old is None else f"a/{old_rel}",
                                       "/dev/null" if new is None else f"b/{change.path}"))
    if out and not out.endswith("\n"):
        out += "\n\\ No newline at end of file\n"
    return out


# -- a preview run's result (what stockade.runtime.session.run returns) -------------------


class PreviewResult(Record):
    """What a preview run would change in the workspace, and whether it was applied.

    ``unsupported`` lists the paths of devices, fifos and sockets, which are never
    applied; ``diff`` is the full unified diff when :func:`stockade.runtime.session.run` was
    asked for it.
    """

    changes: tuple["Change", ...]
    counts: Mapping[str, int]
    insertions: int
    deletions: int
    applied: bool = False
    applied_count: int = 0
    unsupported: tuple[str, ...] = ()
    diff: str | None = None

    _hidden = frozenset({"diff"})

    @property
    def applicable(self) -> bool:
        """Whether there is anything that can be applied."""
        return bool(self.changes) and len(self.unsupported) < len(self.changes)

    def to_json(self) -> dict:
        """The preview as a JSON object (as in the audit trail; the diff is left out)."""
        return {"changes": [c.to_json() for c in self.changes], "counts": dict(self.counts),
                "insertions": self.insertions, "deletions": self.deletions, "applied": self.applied}


def open_overlay(workspace: str) -> Overlay:
    """An overlay over ``workspace`` under the cache directory, probed to work (R5xx otherwise)."""
    from stockade.compiler.cache import cache_dir

    base = os.path.join(cache_dir(), "preview")
    os.makedirs(base, exist_ok=True)
    overlay = Overlay(workspace, base_dir=base)
    try:
        overlay.probe()
    except BaseException:
        overlay.cleanup()
        raise
    return overlay


def collect_preview(overlay: Overlay, placeholders: Sequence[str], diff: bool = False) -> tuple[PreviewResult,
                                                                                                   frozenset[str]]:
    """The changes of a preview run, and the paths left out of them: the placeholders
    bubblewrap made for protected paths appear as new empty directories, not changes."""
    holders = set(placeholders)
    raw = overlay.changes()
    exclude = frozenset(c.path for c in raw
                        if c.kind == "added" and c.entry == "dir"
                        and os.path.join(overlay.workspace, c.path) in holders
                        and not os.listdir(os.path.join(overlay.upper, c.path)))
    changes = tuple(c for c in raw if c.path not in exclude)
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.kind] = counts.get(change.kind, 0) + 1
    text = "".join(unified_diff(overlay.workspace, overlay.upper, c) for c in changes) if diff else None
    return PreviewResult(changes, counts, sum(c.added_lines for c in changes), sum(c.removed_lines for c in changes),
                         unsupported=tuple(c.path for c in changes if c.kind == "unsupported"), diff=text), exclude


def settle_preview(overlay: Overlay, plan: Mapping[str, Any], diff: bool,
                   apply: bool | Callable[[PreviewResult], bool]) -> PreviewResult:
    """Collect the preview's changes and apply them when ``apply`` (a bool, or a callable
    given the :class:`PreviewResult`) says so and there is something to apply."""
    preview, exclude = collect_preview(overlay, plan.get("placeholders", ()), diff)
    if not preview.applicable:
        return preview
    if not (apply(preview) if callable(apply) else apply):
        return preview
    from stockade.runtime.apply import apply_changes

    count = apply_changes(overlay.workspace, overlay.upper, exclude)
    return preview.replace(applied=True, applied_count=count)
