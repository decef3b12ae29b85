"""Preview: run against a copy-on-write view of the workspace, then list what changed.

bubblewrap 0.8.0 has no overlay options, so the runtime mounts the overlay itself: before
bwrap starts, the pre-exec helper (:mod:`stockade.runtime.prexec`, a fresh process: no
Python runs between fork and exec) enters a new user + mount namespace (mapping only its
own uid and gid), makes every mount private, and mounts ``overlay`` over the workspace
(``lowerdir`` = the workspace, ``upperdir``/``workdir`` in a private temp dir, option
``userxattr`` as unprivileged overlayfs requires).  Then bwrap is exec'd in that mount
namespace, so its binds of the workspace see the merged view.  The host's workspace is
never written; every change lands in the upper dir.

:func:`collect_changes` reads the upper dir against the real workspace: added, modified,
deleted files (whiteouts are character devices 0/0), new and replaced directories (opaque
dirs: ``user.overlay.opaque``), permission changes, symlinks, type changes, and renames (a
deleted file whose content reappears elsewhere).  :mod:`stockade.runtime.apply` applies
them with a journal.  Both trees are hostile (a sandboxed command wrote the upper dir;
another may be changing the workspace now), so they are read through
:class:`~stockade.runtime.beneath.Tree`: no symlink is ever followed (a directory swapped
for a link to ``~/.ssh`` cannot put a secret in the diff) and no fifo is opened.  The
scratch dirs live in stockade's state directory (``<cache dir>/preview``, read-only inside
every sandbox); an unusable one is R524.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stockade import catalogue as codes
from stockade.diagnostics import Diagnostic, StockadeError
from stockade.runtime.beneath import Tree
from stockade.runtime.record import Record

_CLOCK_REALTIME_COARSE = getattr(time, "CLOCK_REALTIME_COARSE", 5)
_OPAQUE_XATTRS = ("user.overlay.opaque", "trusted.overlay.opaque")
_WHITEOUT_XATTRS = ("user.overlay.whiteout", "trusted.overlay.whiteout")
_ORIGIN_XATTRS = ("user.overlay.origin", "trusted.overlay.origin")
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


def start_time_ns() -> int:
    """Now, as the kernel stamps inode times (``CLOCK_REALTIME_COARSE``, which lags the
    precise clock by up to a tick): any change after this call has a ctime at or above it."""
    try:
        return time.clock_gettime_ns(_CLOCK_REALTIME_COARSE)
    except OSError:
        return time.time_ns() - 20_000_000


class Overlay:
    """A copy-on-write view of ``workspace`` for one preview run."""

    def __init__(self, workspace: str, base_dir: str | None = None):
        self.workspace = os.path.realpath(workspace)
        if not os.path.isdir(self.workspace):
            raise StockadeError(Diagnostic(codes.WORKSPACE_UNUSABLE, f"the workspace `{workspace}` is not a directory"))
        base = base_dir or tempfile.gettempdir()
        #: When the preview began (the filesystems' coarse clock, which stamps ctimes):
        #: a workspace entry changed since then is a conflict for the apply.
        self.started_ns = start_time_ns()
        self.root = tempfile.mkdtemp(prefix="stockade-preview-", dir=base)
        if _inside(self.root, self.workspace):
            shutil.rmtree(self.root, ignore_errors=True)
            raise StockadeError(Diagnostic(codes.WORKSPACE_UNUSABLE,
                                           "the preview's scratch directory would be inside the workspace",
                                           help="set TMPDIR to a directory outside the workspace"))
        st = os.stat(self.workspace, follow_symlinks=False)
        #: The workspace directory's identity: the overlay is mounted only on that directory.
        self.workspace_id = (st.st_dev, st.st_ino)
        self.upper = os.path.join(self.root, "upper")
        self.work = os.path.join(self.root, "work")
        os.mkdir(self.upper, 0o755)
        os.mkdir(self.work, 0o700)

    def pre_exec(self) -> tuple[tuple[object, ...], ...]:
        """The pre-exec steps that mount the overlay in new user + mount namespaces (see
        :func:`stockade.runtime.prexec.overlay`)."""
        return (("overlay", self.workspace, self.workspace_id, self.upper, self.work, os.getuid(), os.getgid()),)

    def probe(self) -> None:
        """Check that the overlay can be mounted here (raises R521 otherwise)."""
        from stockade.runtime.execute import spawn

        devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        try:
            pid = spawn(["true"], {"PATH": "/usr/bin:/bin"}, stdin=devnull, stdout=devnull, stderr=devnull,
                        pre_exec=self.pre_exec())
            status = os.waitpid(pid, 0)[1]
            if os.waitstatus_to_exitcode(status) != 0:
                raise OSError(0, f"`true` ended with {os.waitstatus_to_exitcode(status)} in the view")
        except OSError as exc:
            raise StockadeError(Diagnostic(
                codes.OVERLAY_UNAVAILABLE, f"cannot mount a copy-on-write view of the workspace: {exc.strerror or exc}",
                help="previews need unprivileged overlayfs in a user namespace (Linux 5.11+); "
                     "run without `--preview` to let the command write the workspace directly")) from None
        finally:
            os.close(devnull)

    def changes(self) -> list[Change]:
        """What the run changed (see :func:`collect_changes`)."""
        return collect_changes(self.workspace, self.upper)

    def cleanup(self) -> None:
        """Remove the scratch directories."""
        shutil.rmtree(self.root, ignore_errors=True)


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def is_whiteout(tree: Tree, rel: str, st: os.stat_result | None = None) -> bool:
    """Whether an upper-dir entry is an overlayfs whiteout (char device 0/0, or an
    xattr whiteout)."""
    st = st or tree.lstat(rel)
    if st is None:
        return False
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
        return True
    if stat.S_ISREG(st.st_mode) and st.st_size == 0:
        return any(tree.xattr(rel, name) is not None for name in _WHITEOUT_XATTRS)
    return False


def is_opaque(tree: Tree, rel: str) -> bool:
    """Whether an upper-dir directory hides the lower directory of the same name."""
    return any(tree.xattr(rel, name) in (b"y",) for name in _OPAQUE_XATTRS)


def has_origin(tree: Tree, rel: str) -> bool:
    """Whether an upper-dir entry was copied up from a lower entry (overlayfs records the
    lower's file handle in ``user.overlay.origin``)."""
    return any(tree.xattr(rel, name) is not None for name in _ORIGIN_XATTRS)


def entry_kind(st: os.stat_result) -> str:
    """``file``, ``dir``, ``symlink`` or ``other``."""
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    return "other"


def same_entry(upper: Tree, lower: Tree, rel: str, ust: os.stat_result, lst: os.stat_result) -> bool:
    """Whether an upper entry equals the lower one (type, permissions, content/target)."""
    kind = entry_kind(ust)
    if kind != entry_kind(lst) or stat.S_IMODE(ust.st_mode) != stat.S_IMODE(lst.st_mode):
        return False
    try:
        if kind == "symlink":
            return upper.readlink(rel) == lower.readlink(rel)
        if kind == "file":
            return ust.st_size == lst.st_size and _digest(upper, rel) == _digest(lower, rel)
    except OSError:
        return False
    return True


def _digest(tree: Tree, rel: str) -> str:
    h = hashlib.sha256()
    for block in tree.blocks(rel):
        h.update(block)
    return h.hexdigest()


def walk_upper(workspace: str, upper: str) -> Iterator[tuple[str, str, str | None]]:
    """The raw operations an upper dir implies, top-down: ``(op, rel_path, detail)`` with
    op ``delete``, ``replace`` (copy the upper entry over, recursively for dirs), ``chmod``
    or ``unsupported``.  Neither tree's symlinks are ever followed."""
    with Tree(workspace) as lower, Tree(upper) as up:
        yield from walk_trees(lower, up)


def walk_trees(lower: Tree, upper: Tree, rel: str = "") -> Iterator[tuple[str, str, str | None]]:
    """:func:`walk_upper` over open trees."""
    try:
        names = upper.listdir(rel)
    except OSError:
        return
    for name in names:
        path = f"{rel}/{name}" if rel else name
        ust, lst = upper.lstat(path), lower.lstat(path)
        if ust is None:
            continue
        if is_whiteout(upper, path, ust):
            if lst is not None:
                yield ("delete", path, None)
            continue
        kind = entry_kind(ust)
        if kind == "other":
            yield ("unsupported", path, None)
            continue
        if kind == "dir" and lst is not None and entry_kind(lst) == "dir" and not is_opaque(upper, path):
            if stat.S_IMODE(ust.st_mode) != stat.S_IMODE(lst.st_mode):
                yield ("chmod", path, oct(stat.S_IMODE(ust.st_mode)))
            yield from walk_trees(lower, upper, path)
            continue
        if lst is not None and kind != "dir" and same_entry(upper, lower, path, ust, lst):
            continue  # copied up but unchanged (opened for writing, touched)
        yield ("replace", path, None)


def _text_lines(tree: Tree, rel: str) -> list[str] | None:
    try:
        data = tree.read(rel, DIFF_MAX_BYTES)
    except OSError:
        return None
    if data is None or b"\0" in data:
        return None
    return data.decode("utf-8", "replace").splitlines(keepends=True)


def _line_counts(old: tuple[Tree, str] | None, new: tuple[Tree, str] | None) -> tuple[int, int, bool]:
    old_lines = [] if old is None else _text_lines(*old)
    new_lines = [] if new is None else _text_lines(*new)
    if old_lines is None or new_lines is None:
        return 0, 0, True
    added = removed = 0
    for line in difflib.ndiff(old_lines, new_lines) if len(old_lines) + len(new_lines) < 20000 else ():
        if line.startswith("+ "):
            added += 1
        elif line.startswith("- "):
            removed += 1
    return added, removed, False


def _files_under(tree: Tree, rel: str) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry below (and including) ``rel`` that is not a whiteout."""
    st = tree.lstat(rel)
    if st is None:
        return
    yield rel, st
    if stat.S_ISDIR(st.st_mode):
        try:
            names = tree.listdir(rel)
        except OSError:
            return
        for name in names:
            child = f"{rel}/{name}"
            cst = tree.lstat(child)
            if cst is None or is_whiteout(tree, child, cst):
                continue
            yield from _files_under(tree, child)


def collect_changes(workspace: str, upper: str) -> list[Change]:
    """The changes of an upper dir against the workspace, for display (renames paired).
    Neither tree's symlinks are followed."""
    with Tree(workspace) as lower, Tree(upper) as up:
        return _collect(lower, up)


def _collect(lower: Tree, up: Tree) -> list[Change]:
    changes: list[Change] = []
    for op, path, detail in walk_trees(lower, up):
        lst = lower.lstat(path)
        if op == "delete":
            if lst is None:
                continue
            for rel, st in _files_under(lower, path):
                added, removed, binary = _line_counts((lower, rel), None) \
                    if entry_kind(st) == "file" else (0, 0, False)
                changes.append(Change("deleted", rel, entry_kind(st), old_mode=stat.S_IMODE(st.st_mode),
                                      removed_lines=removed, binary=binary))
        elif op == "chmod":
            if lst is None or detail is None:
                continue
            changes.append(Change("mode", path, "dir", old_mode=stat.S_IMODE(lst.st_mode), new_mode=int(detail, 8)))
        elif op == "unsupported":
            changes.append(Change("unsupported", path, "other"))
        else:
            ust = up.lstat(path)
            if ust is None:
                continue
            if lst is not None and entry_kind(lst) != entry_kind(ust):
                changes.append(Change("type", path, entry_kind(ust), old_mode=stat.S_IMODE(lst.st_mode),
                                      new_mode=stat.S_IMODE(ust.st_mode)))
                if entry_kind(ust) != "dir":
                    continue
            if lst is not None and entry_kind(lst) == "dir" and entry_kind(ust) == "dir":
                # a replaced (opaque) directory: everything below the old one goes
                for rel, st in list(_files_under(lower, path))[1:]:
                    changes.append(Change("deleted", rel, entry_kind(st), old_mode=stat.S_IMODE(st.st_mode)))
            for rel, st in _files_under(up, path):
                kind = entry_kind(st)
                old = lower.lstat(rel)
                if rel == path and lst is not None and entry_kind(lst) == kind:
                    if kind == "file" and not same_entry(up, lower, rel, st, lst) and _same_bytes(up, lower, rel):
                        changes.append(Change("mode", rel, kind, old_mode=stat.S_IMODE(lst.st_mode),
                                              new_mode=stat.S_IMODE(st.st_mode)))
                        continue
                    if kind == "dir":
                        continue
                    added, removed, binary = _line_counts((lower, rel), (up, rel)) if kind == "file" \
                        else (0, 0, False)
                    changes.append(Change("modified", rel, kind, old_mode=stat.S_IMODE(lst.st_mode),
                                          new_mode=stat.S_IMODE(st.st_mode), added_lines=added,
                                          removed_lines=removed, binary=binary))
                    continue
                # below a replaced directory, an entry that existed before
                if (rel != path and old is not None and entry_kind(old) == kind and kind != "dir"
                        and same_entry(up, lower, rel, st, old)):
                    changes = [c for c in changes if not (c.kind == "deleted" and c.path == rel)]
                    continue
                added, removed, binary = _line_counts(None, (up, rel)) if kind == "file" else (0, 0, False)
                changes.append(Change("added", rel, kind, new_mode=stat.S_IMODE(st.st_mode), added_lines=added,
                                      binary=binary))
    return _pair_renames(changes, lower, up)


def _same_bytes(a: Tree, b: Tree, rel: str) -> bool:
    try:
        return _digest(a, rel) == _digest(b, rel)
    except OSError:
        return False


def _key(tree: Tree, rel: str, entry: str) -> str | None:
    try:
        return ("L" + tree.readlink(rel)) if entry == "symlink" else _digest(tree, rel)
    except OSError:
        return None


def _pair_renames(changes: list[Change], lower: Tree, up: Tree) -> list[Change]:
    deleted = {c.path: c for c in changes if c.kind == "deleted" and c.entry in ("file", "symlink")}
    by_digest: dict[str, list[str]] = {}
    for path, change in deleted.items():
        key = _key(lower, path, change.entry)
        if key is not None:
            by_digest.setdefault(key, []).append(path)
    out: list[Change] = []
    used: set[str] = set()
    for change in changes:
        if change.kind == "added" and change.entry in ("file", "symlink") and by_digest:
            key = _key(up, change.path, change.entry)
            candidates = [p for p in by_digest.get(key or "", []) if p not in used]
            if candidates:
                source = candidates[0]
                used.add(source)
                out.append(Change("renamed", change.path, change.entry, old_path=source,
                                  old_mode=deleted[source].old_mode, new_mode=change.new_mode))
                continue
        out.append(change)
    return [c for c in out if not (c.kind == "deleted" and c.path in used)]


def unified_diff(workspace: str, upper: str, change: Change) -> str:
    """The unified diff of one change (text files; a note for binary or non-files).
    Neither tree's symlinks are followed."""
    with Tree(workspace) as lower, Tree(upper) as up:
        return _unified_diff(lower, up, change)


def _unified_diff(lower: Tree, up: Tree, change: Change) -> str:
    old_rel = change.old_path or change.path
    has_old = change.kind not in ("added",)
    has_new = change.kind not in ("deleted",)
    if change.entry != "file" or change.kind in ("mode", "unsupported"):
        detail = {"mode": f"mode {oct(change.old_mode or 0)} → {oct(change.new_mode or 0)}"}.get(change.kind, change.kind)
        return f"--- {change.path}: {change.entry} {detail}\n"
    old_lines = _text_lines(lower, old_rel) if has_old else []
    new_lines = _text_lines(up, change.path) if has_new else []
    if old_lines is None or new_lines is None:
        return f"Binary files a/{old_rel} and b/{change.path} differ\n"
    out = "".join(difflib.unified_diff(old_lines, new_lines, f"a/{old_rel}" if has_old else "/dev/null",
                                       f"b/{change.path}" if has_new else "/dev/null"))
    if out and not out.endswith("\n"):
        out += "\n\\ No newline at end of file\n"
    return out


# -- a preview run's result (what stockade.runtime.session.run returns) -------------------


class PreviewResult(Record):
    """What a preview run would change in the workspace, and whether it was applied.

    ``unsupported`` lists the paths of devices, fifos and sockets, which are never
    applied; ``conflicts`` the workspace paths changed by someone else since the preview
    started, when the apply was refused for them (nothing was applied); ``diff`` is the full unified diff when :func:`stockade.runtime.session.run` was
    asked for it.
    """

    changes: tuple[Change, ...]
    counts: Mapping[str, int]
    insertions: int
    deletions: int
    applied: bool = False
    applied_count: int = 0
    unsupported: tuple[str, ...] = ()
    diff: str | None = None
    conflicts: tuple[str, ...] = ()

    _hidden = frozenset({"diff"})

    @property
    def applicable(self) -> bool:
        """Whether there is anything that can be applied."""
        return bool(self.changes) and len(self.unsupported) < len(self.changes)

    def to_json(self) -> dict:
        """The preview as a JSON object (as in the audit trail; the diff is left out)."""
        return {"changes": [c.to_json() for c in self.changes], "counts": dict(self.counts),
                "insertions": self.insertions, "deletions": self.deletions, "applied": self.applied,
                "conflicts": list(self.conflicts)}


def open_overlay(workspace: str, state_root: str | None = None) -> Overlay:
    """An overlay over ``workspace`` under stockade's state directory (the cache directory,
    read-only inside every sandbox), probed to work; R5xx otherwise (R524: the state
    directory is unusable)."""
    from stockade.compiler.cache import cache_dir

    if os.path.realpath(workspace) != workspace:  # the run judged and confined this path, not a link's target
        raise StockadeError(Diagnostic(codes.WORKSPACE_UNUSABLE,
                                       f"the workspace `{workspace}` was replaced (by a symlink?) "
                                               "since the run started; refusing to preview it"))
    root = os.path.abspath(state_root or cache_dir())
    base = os.path.join(root, "preview")
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        overlay = Overlay(workspace, base_dir=base)
    except OSError as exc:
        raise state_dir_error(root, exc) from None
    try:
        overlay.probe()
    except BaseException:
        overlay.cleanup()
        raise
    return overlay


def state_dir_error(root: str, exc: OSError) -> StockadeError:
    """R524: stockade's state directory cannot hold a preview or an apply's journal."""
    return StockadeError(Diagnostic(
        codes.STATE_DIRECTORY_UNUSABLE,
        f"cannot use the state directory `{root}` for the preview: {exc.strerror or exc}",
        help="previews keep their scratch copy and the apply journal there; set `STOCKADE_CACHE_DIR` "
             "to a writable directory outside the workspace"))


def collect_preview(overlay: Overlay, placeholders: Sequence[str], diff: bool = False) -> tuple[PreviewResult,
                                                                                                   frozenset[str]]:
    """The changes of a preview run, and the paths left out of them: the placeholders
    bubblewrap made for protected paths appear as new empty directories, not changes."""
    holders = set(placeholders)
    try:
        raw = overlay.changes()
    except OSError as exc:  # the workspace itself was replaced (say by a symlink) meanwhile
        raise StockadeError(Diagnostic(codes.APPLY_FAILED, f"cannot read the preview's changes: {exc.strerror or exc}; "
                                               "nothing was applied")) from None
    exclude = frozenset(c.path for c in raw
                        if c.kind == "added" and c.entry == "dir"
                        and os.path.join(overlay.workspace, c.path) in holders
                        and _empty_dir(overlay.upper, c.path))
    changes = tuple(c for c in raw if c.path not in exclude)
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.kind] = counts.get(change.kind, 0) + 1
    text = "".join(unified_diff(overlay.workspace, overlay.upper, c) for c in changes) if diff else None
    return PreviewResult(changes, counts, sum(c.added_lines for c in changes), sum(c.removed_lines for c in changes),
                         unsupported=tuple(c.path for c in changes if c.kind == "unsupported"), diff=text), exclude


def _empty_dir(root: str, rel: str) -> bool:
    try:
        with Tree(root) as tree:
            return not tree.listdir(rel)
    except OSError:
        return False


def settle_preview(overlay: Overlay, plan: Mapping[str, Any], diff: bool,
                   apply: bool | Callable[[PreviewResult], bool], state_root: str | None = None) -> PreviewResult:
    """Collect the preview's changes and apply them when ``apply`` (a bool, or a callable
    given the :class:`PreviewResult`) says so and there is something to apply.  An apply
    refused because the workspace changed since the preview started returns the result
    with ``conflicts`` set (and nothing applied)."""
    preview, exclude = collect_preview(overlay, plan.get("placeholders", ()), diff)
    if not preview.applicable:
        return preview
    if not (apply(preview) if callable(apply) else apply):
        return preview
    from stockade.runtime.apply import ApplyConflict, apply_changes

    try:
        count = apply_changes(overlay.workspace, overlay.upper, exclude, since_ns=overlay.started_ns,
                              state_root=state_root)
    except ApplyConflict as conflict:
        return preview.replace(conflicts=conflict.paths)
    return preview.replace(applied=True, applied_count=count)
