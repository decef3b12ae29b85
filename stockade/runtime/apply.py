"""Apply a preview's changes to the workspace: all or nothing, journaled in stockade's own
state directory, never following a symlink, refusing what someone else changed meanwhile.

The workspace and the preview's upper dir are hostile: a sandboxed command wrote them, and
another one may be writing the workspace while the host applies.  So:

1. **Check.** The operations (``replace``, ``delete``, ``chmod``) come from the upper dir.
   Every target's parent is opened by walking from the workspace root, each component
   ``O_NOFOLLOW|O_DIRECTORY`` (:mod:`stockade.runtime.beneath`), and everything is done
   with ``dir_fd=``.  The conflict check refuses the whole apply (:class:`ApplyConflict`,
   nothing touched) when a target changed after the preview began: its ctime is at or
   after the start (user space cannot set a ctime), an entry the preview copied up is gone,
   a directory on the way is no longer one, or — for a directory the preview deletes or
   replaces — anything below it was created or changed.
2. **Journal.** ``<state>/apply/<hash of the workspace>/journal.json`` — the state directory
   is the cache directory, read-only inside every sandbox, never the workspace — lists the
   operations with the identity of every entry they replace; it is written atomically and
   fsynced, and a lock file beside it is held for the whole apply.
3. **Place.** Each new entry is copied from the upper dir (no symlink followed, hard links
   as separate files, special files refused, setuid/setgid bits stripped) to a temporary
   name ``.stockade-new-<token>-<n>`` inside its target's parent directory, so that the
   switch is a rename within one directory even when the upper dir is on another
   filesystem.  No name of the workspace has changed yet.
4. **Switch.** Journal state ``switching``.  For each operation the parent is walked again
   and must be the directory checked; the old entry, still the one checked, is renamed to
   ``.stockade-old-<token>-<n>`` and the new one renamed into place (never over an entry
   that appeared meanwhile).  Mode changes come last.  Then the old entries are checked
   again: a write into one of them since the check is a conflict too.
5. **Commit.** Journal state ``done``; the old entries are removed; the journal is removed.

A failure rolls everything back at once; a crash (kill -9, power loss) is rolled back by
:func:`recover`, which ``stockade run`` calls when a journal for its workspace exists.  It
reads only the journal in the state directory: anything in the workspace (a
``.stockade-apply`` directory included) is plain data, applied like any other file.
"""

from __future__ import annotations

import errno
import os
import stat

from stockade import catalogue as codes
from stockade.diagnostics import Diagnostic, StockadeError
from stockade.runtime.beneath import DIR_FLAGS, Tree, open_dir_at, open_file_at, split, xattr_at

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterable
    from typing import Any

JOURNAL_VERSION = 2
_NEW, _OLD = ".stockade-new-", ".stockade-old-"
_WHITEOUT_XATTRS = ("user.overlay.whiteout", "trusted.overlay.whiteout")
_SETID = stat.S_ISUID | stat.S_ISGID
#: Parent directories kept open during one apply (beyond that they are walked again).
_HELD_DIRS = 256
_SECOND = 1_000_000_000


class ApplyConflict(StockadeError):
    """The apply was refused: these workspace paths changed since the preview started
    (nothing was applied)."""

    def __init__(self, paths: Iterable[str]):
        self.paths = tuple(sorted(set(paths)))
        shown = ", ".join(f"`{p}`" for p in self.paths[:20]) + (" …" if len(self.paths) > 20 else "")
        super().__init__(Diagnostic(
            codes.APPLY_CONFLICT, f"not applied: changed in the workspace since the preview started: {shown}",
            help="the workspace is untouched; run the command again to preview it against the current files"))


def _error(code: str, message: str, help: str | None = None) -> StockadeError:
    return StockadeError(Diagnostic(code, message, help=help))


def _rename_noreplace(src: str, dst: str, src_dir_fd: int, dst_dir_fd: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    func = getattr(libc, "renameat2", None)
    if func is not None:
        if func(src_dir_fd, os.fsencode(src), dst_dir_fd, os.fsencode(dst), 1) == 0:  # RENAME_NOREPLACE
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(err, os.strerror(err), dst)
    if _stat_at(dst_dir_fd, dst) is not None:  # the filesystem has no RENAME_NOREPLACE
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
    os.rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)


def _plain_rename(src: str, dst: str, *, src_dir_fd: int, dst_dir_fd: int, noreplace: bool = False) -> None:
    if noreplace:
        _rename_noreplace(src, dst, src_dir_fd, dst_dir_fd)
    else:
        os.rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)


#: Every rename of the switch goes through this (tests replace it to crash or race);
#: both names are in the same directory.
_rename = _plain_rename


def journal_dir(workspace: str, state_root: str | None = None) -> str:
    """Where an apply to ``workspace`` keeps its journal (see
    :func:`stockade.runtime.session.apply_state_dir`)."""
    from stockade.runtime.session import apply_state_dir

    return apply_state_dir(os.path.realpath(workspace), state_root)


def _stat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _ident(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino]


def _recent(st: os.stat_result, since: int) -> bool:
    """Whether an entry changed at or after ``since`` (on a filesystem that stamps whole
    seconds, anything in the second before counts too)."""
    ctime = st.st_ctime_ns
    if ctime >= since:
        return True
    return ctime % _SECOND == 0 and ctime >= since - since % _SECOND - _SECOND


def _changed_below(dir_fd: int, rel: str, since: int, out: list[str]) -> None:
    """Add to ``out`` every entry below ``dir_fd`` changed at or after ``since``."""
    for name in sorted(os.listdir(dir_fd)):
        st = _stat_at(dir_fd, name)
        if st is None:
            continue
        path = f"{rel}/{name}"
        if _recent(st, since):
            out.append(path)
        if stat.S_ISDIR(st.st_mode):
            _changed_in(dir_fd, name, path, since, out)


def _changed_in(dir_fd: int, name: str, rel: str, since: int, out: list[str]) -> None:
    """:func:`_changed_below` for the directory ``name`` of ``dir_fd`` (``rel`` in the
    workspace); one that cannot be opened without following a link counts as changed."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        out.append(rel)
        return
    try:
        _changed_below(fd, rel, since, out)
    finally:
        os.close(fd)


def _names(token: str, n: int) -> tuple[str, str]:
    return f"{_NEW}{token}-{n}", f"{_OLD}{token}-{n}"


class _Dirs:
    """The parent directories of the targets, opened by walking from the workspace root
    (held open, up to a limit, so that a rollback reaches them even if renamed)."""

    def __init__(self, tree: Tree):
        self.tree = tree
        self.held: dict[str, int] = {}
        self.touched: set[str] = set()

    def sync(self) -> None:
        """fsync every directory changed since the last call (once each)."""
        for parent in sorted(self.touched):
            fd = self.open(parent)
            try:
                os.fsync(fd)
            finally:
                self.release(fd)
        self.touched.clear()

    def open(self, parent: str) -> int:
        """A descriptor of workspace directory ``parent`` (``""``: the root); call
        :meth:`release` with it."""
        if parent in self.held:
            return self.held[parent]
        fd = open_dir_at(self.tree.fd, split(parent))
        if len(self.held) < _HELD_DIRS:
            self.held[parent] = fd
        return fd

    def release(self, fd: int) -> None:
        """Close ``fd`` unless it is held."""
        if fd not in self.held.values():
            os.close(fd)

    def verify(self, parent: str, fd: int) -> bool:
        """Whether walking to ``parent`` again reaches the directory ``fd`` (not a symlink,
        not a directory swapped in)."""
        try:
            if _ident(os.stat(self.tree.root, follow_symlinks=False)) != _ident(os.fstat(self.tree.fd)):
                return False  # the workspace itself was moved away
            fresh = open_dir_at(self.tree.fd, split(parent))
        except OSError:
            return False
        try:
            return _ident(os.fstat(fresh)) == _ident(os.fstat(fd))
        finally:
            os.close(fresh)

    def close(self) -> None:
        """Close every held descriptor."""
        for fd in self.held.values():
            os.close(fd)
        self.held.clear()


def _split_parent(rel: str) -> tuple[str, str]:
    parts = split(rel)
    if not parts:
        raise ValueError("empty path")
    return "/".join(parts[:-1]), parts[-1]


# -- copying from the upper dir --------------------------------------------------------


def _is_whiteout(dir_fd: int, name: str, st: os.stat_result) -> bool:
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
        return True
    return stat.S_ISREG(st.st_mode) and st.st_size == 0 and \
        any(xattr_at(dir_fd, name, attr) is not None for attr in _WHITEOUT_XATTRS)


def _copy_data(src: int, dst: int) -> None:
    try:
        while os.sendfile(dst, src, None, 1 << 30):
            pass
        return
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS):
            raise
    while True:
        block = os.read(src, 1 << 20)
        if not block:
            return
        view = memoryview(block)
        while view:
            view = view[os.write(dst, view):]


def _copy_entry(src_dir: int, name: str, dst_dir: int, dst_name: str, rel: str) -> None:
    """Copy the upper-dir entry ``name`` (never followed) to ``dst_name``: symlinks as
    symlinks, directories recursively, regular files by content (hard links become
    separate files), modes without setuid/setgid, mtimes kept; anything else refused."""
    st = os.stat(name, dir_fd=src_dir, follow_symlinks=False)
    mode = stat.S_IMODE(st.st_mode) & ~_SETID
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(name, dir_fd=src_dir), dst_name, dir_fd=dst_dir)
    elif stat.S_ISDIR(st.st_mode):
        sfd = os.open(name, DIR_FLAGS, dir_fd=src_dir)
        try:
            os.mkdir(dst_name, 0o700, dir_fd=dst_dir)
            dfd = os.open(dst_name, DIR_FLAGS, dir_fd=dst_dir)
            try:
                for child in sorted(os.listdir(sfd)):
                    cst = os.stat(child, dir_fd=sfd, follow_symlinks=False)
                    if not _is_whiteout(sfd, child, cst):
                        _copy_entry(sfd, child, dfd, child, f"{rel}/{child}")
                _settle(dfd, mode, st)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)
    elif stat.S_ISREG(st.st_mode):
        sfd = open_file_at(src_dir, name)
        try:
            dfd = os.open(dst_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                          dir_fd=dst_dir)
            try:
                _copy_data(sfd, dfd)
                _settle(dfd, mode, st)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)
    else:
        raise _error(codes.UNAPPLIABLE_ENTRY, f"cannot apply `{rel}`: not a file, directory or symlink")


def _settle(fd: int, mode: int, st: os.stat_result) -> None:
    """Give a placed copy its mode (setuid/setgid already dropped) and times, and sync it."""
    os.fchmod(fd, mode)
    os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.fsync(fd)


def _remove_at(dir_fd: int, name: str) -> None:
    st = _stat_at(dir_fd, name)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        import shutil

        shutil.rmtree(name, dir_fd=dir_fd)  # descriptor-based: never follows a symlink
    else:
        os.unlink(name, dir_fd=dir_fd)


# -- the journal -------------------------------------------------------------------------


def _write_journal(directory: str, journal: dict[str, Any]) -> None:
    import json

    path = os.path.join(directory, "journal.json")
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        json.dump(journal, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dfd = os.open(directory, DIR_FLAGS)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


class _Lock:
    """The exclusive lock of one workspace's apply state (``<dir>.lock``, kept)."""

    def __init__(self, directory: str):
        self.fd = -1
        parent = os.path.dirname(directory)
        try:
            os.makedirs(parent, mode=0o700, exist_ok=True)
            self.fd = os.open(directory + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise _error(codes.STATE_DIRECTORY_UNUSABLE,
                         f"cannot use the state directory `{parent}` for the apply journal: "
                                 f"{exc.strerror or exc}",
                         help="set `STOCKADE_CACHE_DIR` to a writable directory outside the workspace") from None

    def acquire(self) -> bool:
        """Take the lock without waiting; False if another process holds it."""
        import fcntl

        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def release(self) -> None:
        """Release and close."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# -- applying ----------------------------------------------------------------------------


def apply_changes(workspace: str, upper: str, exclude: frozenset[str] = frozenset(), *, since_ns: int,
                  state_root: str | None = None) -> int:
    """Apply the upper dir of a preview to ``workspace``; returns the number of operations.

    ``exclude`` names workspace-relative paths to leave alone (the sandbox tool's own
    placeholders); ``since_ns`` is when the preview began
    (:attr:`~stockade.runtime.preview.Overlay.started_ns`): anything changed in the
    workspace since then is a conflict; ``state_root`` is stockade's state directory
    (default: the cache directory).  Raises :class:`ApplyConflict` (nothing applied),
    R522 if another apply to this workspace is running, R523 for an entry that cannot be
    applied, R524 for an unusable state directory, R525 when the apply failed (rolled back).
    """
    from stockade.runtime.preview import walk_trees

    workspace = os.path.realpath(workspace)
    directory = journal_dir(workspace, state_root)
    lock = _Lock(directory)
    try:
        if not lock.acquire():
            raise _error(codes.WORKSPACE_BUSY_OR_MISMATCH, "another stockade is applying changes to this workspace",
                         help="wait for it to finish, then run the command again")
        if os.path.lexists(directory):
            _recover_locked(workspace, directory)
        try:
            tree = Tree(workspace)
        except OSError as exc:
            raise _error(codes.APPLY_FAILED, f"cannot open the workspace `{workspace}`: {exc.strerror or exc}; "
                                 "nothing was applied") from None
        with tree, Tree(upper) as up:
            ops: list[dict[str, Any]] = []
            for op, path, detail in walk_trees(tree, up):
                if op == "unsupported" or path in exclude:
                    continue
                entry: dict[str, Any] = {"op": op, "path": path}
                if op == "chmod":
                    entry["new_mode"] = int(str(detail), 8) & ~_SETID
                ops.append(entry)
            ops.sort(key=lambda e: e["op"] == "chmod")  # modes last (a directory made read-only)
            for number, entry in enumerate(ops):
                entry["n"] = number
            if not ops:
                return 0
            dirs = _Dirs(tree)
            try:
                ops = _check(dirs, up, ops, since_ns)
                if not ops:
                    return 0
                _run(workspace, directory, dirs, up, ops, since_ns)
            finally:
                dirs.close()
        return len(ops)
    finally:
        lock.release()


def _check(dirs: _Dirs, up: Tree, ops: list[dict[str, Any]], since: int) -> list[dict[str, Any]]:
    """Record each target's identity, or raise :class:`ApplyConflict` for every target
    changed since ``since``; the operations left to do."""
    from stockade.runtime.preview import has_origin

    conflicts: list[str] = []
    kept = []
    sources = _rename_sources(dirs, ops)
    for entry in ops:
        rel = entry["path"]
        parent, name = _split_parent(rel)
        try:
            pfd = dirs.open(parent)
        except OSError:
            conflicts.append(parent or rel)  # a directory on the way is gone or no longer one
            continue
        try:
            entry["parent"] = _ident(os.fstat(pfd))
            st = _stat_at(pfd, name)
            if entry["op"] == "chmod":
                if st is None or not stat.S_ISDIR(st.st_mode):
                    conflicts.append(rel)
                    continue
                entry["old"] = _ident(st)
                entry["old_mode"] = stat.S_IMODE(st.st_mode)
                kept.append(entry)
                continue
            if st is None:
                if entry["op"] == "replace" and has_origin(up, rel) and not _renamed_here(up, rel, sources):
                    conflicts.append(rel)  # the preview changed it; someone removed it since
                elif entry["op"] == "replace":
                    entry["old"] = None
                    kept.append(entry)
                continue  # a delete of something already gone: nothing to do
            entry.update(old=_ident(st), ctime=st.st_ctime_ns, mtime=st.st_mtime_ns, size=st.st_size,
                         dir=stat.S_ISDIR(st.st_mode))
            if _recent(st, since):
                conflicts.append(rel)
            elif stat.S_ISDIR(st.st_mode):  # deleted or replaced: nothing below may have changed
                _changed_in(pfd, name, rel, since, conflicts)  # (any conflict refuses the whole apply)
            kept.append(entry)
        finally:
            dirs.release(pfd)
    if conflicts:
        raise ApplyConflict(conflicts)
    return kept


def _rename_sources(dirs: _Dirs, ops: list[dict[str, Any]]) -> set[str]:
    """The kinds of the entries this apply removes (``any`` for a directory: whatever was
    in it): where an entry the preview renamed may come from."""
    kinds: set[str] = set()
    for entry in ops:
        if entry["op"] == "chmod":
            continue
        st = dirs.tree.lstat(entry["path"])
        if st is not None:
            kinds.add("any" if stat.S_ISDIR(st.st_mode) else _kind(st))
    return kinds


def _kind(st: os.stat_result) -> str:
    return "dir" if stat.S_ISDIR(st.st_mode) else "symlink" if stat.S_ISLNK(st.st_mode) else "file"


def _renamed_here(up: Tree, rel: str, sources: set[str]) -> bool:
    """Whether a copied-up entry whose workspace path is gone may be the preview's own
    rename of an entry it removes (overlayfs records only that an entry was copied up,
    not from where)."""
    st = up.lstat(rel)
    return st is not None and ("any" in sources or _kind(st) in sources)


def _run(workspace: str, directory: str, dirs: _Dirs, up: Tree, ops: list[dict[str, Any]], since: int) -> None:
    """Journal, place, switch, verify, commit (rolling back on any failure)."""
    import shutil

    token = os.urandom(8).hex()
    journal: dict[str, Any] = {"version": JOURNAL_VERSION, "workspace": workspace, "token": token,
                               "state": "placing", "ops": ops}
    try:
        os.mkdir(directory, 0o700)
        _write_journal(directory, journal)
    except OSError as exc:
        shutil.rmtree(directory, ignore_errors=True)
        raise _error(codes.STATE_DIRECTORY_UNUSABLE,
                     f"cannot write the apply journal in `{directory}`: {exc.strerror or exc}",
                     help="set `STOCKADE_CACHE_DIR` to a writable directory outside the workspace") from None
    try:
        _place(dirs, up, ops, token)
        journal["state"] = "switching"
        _write_journal(directory, journal)
        _switch(dirs, ops, token, since)
    except BaseException as failure:
        problems = _undo_all(dirs, journal)
        if problems:  # keep the journal: the next run tries again
            raise _error(codes.APPLY_FAILED,
                         "the apply failed and could not be rolled back completely: " + "; ".join(problems),
                         help="run `stockade run -- true` in this workspace to retry the roll back") from failure
        shutil.rmtree(directory, ignore_errors=True)
        if isinstance(failure, OSError):
            raise _error(codes.APPLY_FAILED, f"cannot apply the changes: {failure.strerror or failure}"
                                 + (f": `{failure.filename}`" if isinstance(failure.filename, str) else "")
                                 + "; nothing was applied") from None
        raise
    journal["state"] = "done"
    _write_journal(directory, journal)
    _finish(dirs, journal)
    shutil.rmtree(directory, ignore_errors=True)


def _place(dirs: _Dirs, up: Tree, ops: list[dict[str, Any]], token: str) -> None:
    """Copy every new entry to its temporary name beside its target."""
    for entry in ops:
        if entry["op"] != "replace":
            continue
        parent, _name = _split_parent(entry["path"])
        new_name, _old = _names(token, entry["n"])
        pfd = dirs.open(parent)
        try:
            if not dirs.verify(parent, pfd):
                raise ApplyConflict([parent])
            upfd, uname = up.parent(entry["path"])
            try:
                _copy_entry(upfd, uname, pfd, new_name, entry["path"])
            finally:
                os.close(upfd)
            entry["new"] = _ident(os.stat(new_name, dir_fd=pfd, follow_symlinks=False))
            dirs.touched.add(parent)
        finally:
            dirs.release(pfd)
    dirs.sync()


def _switch(dirs: _Dirs, ops: list[dict[str, Any]], token: str, since: int) -> None:
    """Rename every old entry aside and every new one into place, then check the old
    entries again."""
    for entry in ops:
        rel = entry["path"]
        parent, name = _split_parent(rel)
        new_name, old_name = _names(token, entry["n"])
        pfd = dirs.open(parent)
        try:
            if not dirs.verify(parent, pfd):
                raise ApplyConflict([parent or rel])
            st = _stat_at(pfd, name)
            if entry["op"] == "chmod":
                if st is None or _ident(st) != entry["old"]:
                    raise ApplyConflict([rel])
                fd = os.open(name, DIR_FLAGS, dir_fd=pfd)
                try:
                    if _ident(os.fstat(fd)) != entry["old"]:
                        raise ApplyConflict([rel])
                    os.fchmod(fd, entry["new_mode"])
                finally:
                    os.close(fd)
                entry["chmodded"] = True
                continue
            if entry["old"] is not None:
                if st is None or _ident(st) != entry["old"] or st.st_ctime_ns != entry["ctime"]:
                    raise ApplyConflict([rel])
                _rename(name, old_name, src_dir_fd=pfd, dst_dir_fd=pfd)
                moved = _stat_at(pfd, old_name)
                if moved is None or _ident(moved) != entry["old"]:
                    raise ApplyConflict([rel])
            elif st is not None:
                raise ApplyConflict([rel])
            if entry["op"] == "replace":
                placed = _stat_at(pfd, new_name)
                if placed is None or _ident(placed) != entry["new"]:
                    raise ApplyConflict([rel])  # someone replaced the copy placed beside it
                try:
                    _rename(new_name, name, src_dir_fd=pfd, dst_dir_fd=pfd, noreplace=True)
                except FileExistsError:
                    raise ApplyConflict([rel]) from None
            dirs.touched.add(parent)
        finally:
            dirs.release(pfd)
    dirs.sync()
    conflicts: list[str] = []
    for entry in ops:  # nothing written into an old entry between its check and its rename
        if entry["op"] == "chmod" or entry["old"] is None:
            continue
        parent, _name = _split_parent(entry["path"])
        _new, old_name = _names(token, entry["n"])
        pfd = dirs.open(parent)
        try:
            st = _stat_at(pfd, old_name)
            if st is None or _ident(st) != entry["old"] or st.st_mtime_ns != entry["mtime"] or \
                    (not entry["dir"] and st.st_size != entry["size"]):
                conflicts.append(entry["path"])
            elif entry["dir"]:
                fd = os.open(old_name, DIR_FLAGS, dir_fd=pfd)
                try:
                    found: list[str] = []
                    _changed_below(fd, entry["path"], since, found)
                    conflicts.extend(found)
                finally:
                    os.close(fd)
        finally:
            dirs.release(pfd)
    if conflicts:
        raise ApplyConflict(conflicts)


def _undo_all(dirs: _Dirs, journal: dict[str, Any]) -> list[str]:
    """Undo every operation of a journal in reverse; the problems (empty: all undone)."""
    problems = []
    for entry in reversed(journal["ops"]):
        try:
            _undo(dirs, journal, entry)
        except (OSError, ValueError) as exc:
            problems.append(f"`{entry['path']}`: {getattr(exc, 'strerror', None) or exc}")
    return problems


def _parent_fd(dirs: _Dirs, entry: dict[str, Any]) -> int:
    parent, _name = _split_parent(entry["path"])
    pfd = dirs.open(parent)
    if _ident(os.fstat(pfd)) != entry.get("parent"):
        dirs.release(pfd)
        raise OSError(errno.ESTALE, "the directory is not the one the apply used")
    return pfd


def _undo(dirs: _Dirs, journal: dict[str, Any], entry: dict[str, Any]) -> None:
    _parent, name = _split_parent(entry["path"])
    new_name, old_name = _names(journal["token"], entry["n"])
    if journal["state"] == "placing" and entry["op"] != "replace":
        return
    pfd = _parent_fd(dirs, entry)
    try:
        if entry["op"] == "chmod":
            if journal["state"] == "switching":
                fd = os.open(name, DIR_FLAGS, dir_fd=pfd)
                try:
                    if _ident(os.fstat(fd)) == entry["old"]:
                        os.fchmod(fd, entry["old_mode"])
                finally:
                    os.close(fd)
            return
        if entry["op"] == "replace":
            if _stat_at(pfd, new_name) is not None:
                _remove_at(pfd, new_name)  # never moved in
            elif journal["state"] == "switching":
                st = _stat_at(pfd, name)
                if st is not None and entry.get("new") == _ident(st):
                    _remove_at(pfd, name)  # moved in: take it out again
        if journal["state"] == "switching" and entry.get("old") is not None and _stat_at(pfd, old_name) is not None:
            try:
                _plain_rename(old_name, name, src_dir_fd=pfd, dst_dir_fd=pfd, noreplace=True)
            except FileExistsError:
                raise OSError(errno.EEXIST, f"kept at `{old_name}`: something else is at its place") from None
        os.fsync(pfd)
    finally:
        dirs.release(pfd)


def _finish(dirs: _Dirs, journal: dict[str, Any]) -> list[str]:
    """Remove the old entries of a committed apply (and any temporary left)."""
    problems = []
    for entry in journal["ops"]:
        if entry["op"] == "chmod":
            continue
        new_name, old_name = _names(journal["token"], entry["n"])
        try:
            pfd = _parent_fd(dirs, entry)
        except (OSError, ValueError) as exc:
            problems.append(f"`{entry['path']}`: {getattr(exc, 'strerror', None) or exc}")
            continue
        try:
            _remove_at(pfd, old_name)
            _remove_at(pfd, new_name)
        except OSError as exc:
            problems.append(f"`{entry['path']}`: {exc.strerror or exc}")
        finally:
            dirs.release(pfd)
    return problems


# -- recovery ----------------------------------------------------------------------------


def recover(workspace: str, state_root: str | None = None) -> str | None:
    """Finish or undo an interrupted apply to ``workspace``, from its journal in the state
    directory only; returns what was done (``discarded``, ``rolled back``, ``completed``,
    with the entries that could not be restored if any) or None if there was nothing to
    do, or another stockade is applying right now."""
    workspace = os.path.realpath(workspace)
    directory = journal_dir(workspace, state_root)
    if not os.path.lexists(directory):
        return None
    lock = _Lock(directory)
    try:
        if not lock.acquire():
            return None
        return _recover_locked(workspace, directory)
    finally:
        lock.release()


def _valid(journal: Any, workspace: str) -> bool:
    if not isinstance(journal, dict) or journal.get("version") != JOURNAL_VERSION:
        return False
    if journal.get("workspace") != workspace or journal.get("state") not in ("placing", "switching", "done"):
        return False
    token = journal.get("token")
    if not isinstance(token, str) or len(token) != 16 or any(c not in "0123456789abcdef" for c in token):
        return False
    ops = journal.get("ops")
    if not isinstance(ops, list):
        return False
    for entry in ops:
        if not isinstance(entry, dict) or entry.get("op") not in ("replace", "delete", "chmod"):
            return False
        if not isinstance(entry.get("n"), int) or not isinstance(entry.get("path"), str):
            return False
        try:
            _split_parent(entry["path"])
        except ValueError:
            return False
    return True


def _recover_locked(workspace: str, directory: str) -> str:
    import json
    import shutil

    try:
        with open(os.path.join(directory, "journal.json"), encoding="utf-8") as handle:
            journal = json.load(handle)
    except (OSError, ValueError):
        journal = None
    if not _valid(journal, workspace):
        shutil.rmtree(directory, ignore_errors=True)
        return "discarded"
    assert journal is not None
    try:
        tree = Tree(workspace)
    except OSError:
        return "not recovered: the workspace cannot be opened"
    dirs = _Dirs(tree)
    try:
        if journal["state"] == "done":
            problems, done = _finish(dirs, journal), "completed"
        else:
            problems = _undo_all(dirs, journal)
            done = "discarded" if journal["state"] == "placing" else "rolled back"
    finally:
        dirs.close()
        tree.close()
    shutil.rmtree(directory, ignore_errors=True)
    if problems:
        return f"{done} (not restored: {'; '.join(problems)})"
    return done
