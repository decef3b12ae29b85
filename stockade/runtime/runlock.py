"""Concurrent runs: the run lock, and removing bubblewrap's placeholder directories safely.

For a protected path that does not exist yet, bubblewrap makes a mount point on the host (a
*placeholder*, see :mod:`stockade.backends.bwrap`), and the run removes it afterwards.  Two
runs in one workspace share these directories, and neither may remove them while the other
lives:

* an ``rmdir`` on the host of a directory that is a mount point in another run's mount
  namespace succeeds (Linux 3.18+) and detaches that mount there: the other sandbox's
  protection of the path is gone while its command runs;
* a run that checks its plan while another run's placeholder exists sees a directory there,
  and its sandbox binds it: removed under it, bubblewrap fails (``R507``).

So every confined run holds a **shared** ``flock`` on ``run.lock`` in stockade's cache
directory (never in the workspace) from before its plan's path facts are checked until its
sandbox is gone (:meth:`RunLock.acquire`, :meth:`RunLock.release`).  Before the sandbox
starts, its placeholders are appended to ``placeholders`` there (NUL-separated); when it ends,
a run that gets the lock **exclusively without waiting** — no other run is alive — removes
every recorded placeholder that is still an empty directory and clears the record; otherwise
they are left to the last run out.  A sandboxed command cannot change either file (the cache
directory is read-only inside every sandbox), nor take the lock exclusively while its own run
holds it shared, and the lock's descriptor is not inherited by the sandbox.

Placeholders are usually under the workspace, where a sandboxed command may have replaced
a parent directory by a symlink.  Removal never follows one: each path is walked from ``/``
with ``O_PATH | O_DIRECTORY | O_NOFOLLOW`` descriptors and removed with ``rmdir(name,
dir_fd=…)``; a symlink (or anything not a directory) on the way leaves the path alone.

When the cache directory cannot hold the lock (it is a file, read-only, on a read-only file
system), the run goes on without it and removes no placeholder at all (they are left on the
host, where they change nothing but the plan's path facts); :attr:`RunLock.problem` says why.
Runs that share a workspace must share the cache directory (one per user by default) for the
lock to order them.
"""

from __future__ import annotations

import os
import time

from stockade import catalogue as codes

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterable, Mapping

#: The lock file and the record of placeholders, in the cache directory.
LOCK_NAME = "run.lock"
RECORD_NAME = "placeholders"
#: How long a run waits for an exclusive holder (a run removing placeholders: milliseconds).
WAIT_SECONDS = 10.0

_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


class RunLock:
    """A run's shared hold on the cache directory's run lock (``fd`` None: not held, see
    :attr:`problem`)."""

    def __init__(self, directory: str, fd: int | None, problem: str | None = None):
        self.directory = directory
        self.fd = fd
        self.problem = problem
        self.placeholders: list[str] = []  # this run's (see :meth:`record`)

    @classmethod
    def acquire(cls, directory: str, wait: float = WAIT_SECONDS) -> RunLock:
        """Take the run lock shared (creating the file), waiting up to ``wait`` seconds for a
        run that holds it exclusively.  A lock file that cannot be opened gives an unheld
        lock with its :attr:`problem`; a lock still held exclusively after ``wait`` raises
        ``R540``."""
        import fcntl

        path = os.path.join(directory, LOCK_NAME)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o600)
        except OSError as first:
            try:
                fd = os.open(path, os.O_RDONLY | _NOFOLLOW)  # a read-only cache that has one
            except OSError:
                return cls(directory, None, f"cannot open the run lock `{path}`: {first.strerror or first}")
        deadline = None
        pause = 0.0005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return cls(directory, fd)
            except BlockingIOError:
                pass
            except OSError as exc:  # a file system without flock
                os.close(fd)
                return cls(directory, None, f"cannot lock `{path}`: {exc.strerror or exc}")
            now = time.monotonic()
            if deadline is None:
                deadline = now + wait
            elif now >= deadline:
                os.close(fd)
                from stockade.diagnostics import Diagnostic, StockadeError

                raise StockadeError(Diagnostic(
                    codes.RUN_LOCK_HELD,
                    f"the run lock `{path}` is held exclusively by another process; the command did not run",
                    help="a stockade run removing placeholders holds it for milliseconds: find the process "
                         f"holding it (`fuser {path}`)"))
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def record(self, placeholders: Iterable[str], files: Mapping[str, str] | None = None) -> None:
        """Record placeholders (before the sandbox that makes them starts), so that the last
        run out removes them even if this one is killed; ``files`` (path → content) are the
        placeholders that are files (see :func:`remove_placeholder_paths`)."""
        files = files or {}
        entries = [_entry(p, files) for p in placeholders if isinstance(p, str) and p.startswith("/") and "\0" not in p]
        paths = [p for p in entries if p is not None]
        if self.fd is None or not paths:
            return
        self.placeholders += paths
        try:
            fd = os.open(os.path.join(self.directory, RECORD_NAME), os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW,
                         0o600)
        except OSError:
            return  # removed below if this run is the last one out, else left on the host
        try:
            os.write(fd, "".join(p + "\0" for p in paths).encode("utf-8", "surrogateescape"))
        except OSError:
            pass
        finally:
            os.close(fd)

    def release(self, placeholders: Iterable[str] = ()) -> None:
        """Give up the lock (again: nothing); when no other run holds it, first remove every
        placeholder recorded (by any run), this run's and ``placeholders`` that is still an
        empty directory (deepest first)."""
        fd, self.fd = self.fd, None
        if fd is None:
            return
        import fcntl

        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return  # another run is alive: the placeholders are its too
            record = os.path.join(self.directory, RECORD_NAME)
            paths = {p for p in (*self.placeholders, *placeholders) if isinstance(p, str)}
            recorded = _read_record(record)
            paths.update(recorded)
            if paths:
                remove_placeholder_paths(*_split_entries(paths))
            if recorded:
                try:
                    os.close(os.open(record, os.O_WRONLY | os.O_TRUNC | _NOFOLLOW))
                except OSError:
                    pass
        finally:
            os.close(fd)


#: A record entry for a file placeholder: ``FILE_TAG + content + FILE_TAG + path``.
FILE_TAG = "\x01"


def _entry(path: str, files: Mapping[str, str]) -> str | None:
    content = files.get(path)
    if content is None:
        return path
    if FILE_TAG in content or "\0" in content:
        return None
    return f"{FILE_TAG}{content}{FILE_TAG}{path}"


def _split_entries(entries: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """Record entries as (directory paths, {file path: content})."""
    dirs: list[str] = []
    files: dict[str, str] = {}
    for entry in entries:
        if entry.startswith(FILE_TAG):
            content, _, path = entry[1:].partition(FILE_TAG)
            if path.startswith("/"):
                files[path] = content
        elif entry.startswith("/"):
            dirs.append(entry)
    return dirs, files


def _read_record(path: str) -> list[str]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
    except OSError:
        return []
    try:
        data = b""
        while len(data) < 1 << 24:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            data += chunk
    except OSError:
        return []
    finally:
        os.close(fd)
    return [p for p in data.decode("utf-8", "surrogateescape").split("\0") if p]


def parent_nofollow(path: str) -> tuple[int, str] | None:
    """A descriptor of the directory of ``path`` (absolute) walked from ``/`` without
    following a symlink, and the last component; None when the walk fails."""
    parts = path.split("/")
    if parts[0] != "" or len(parts) < 2 or any(part in ("", ".", "..") for part in parts[1:]):
        return None
    try:
        fd = os.open("/", _DIR_FLAGS)
    except OSError:
        return None
    try:
        for name in parts[1:-1]:
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except OSError:
        os.close(fd)
        return None
    return fd, parts[-1]


def rmdir_nofollow(path: str) -> bool:
    """Remove the empty directory ``path`` (absolute) without following any symlink on the
    way (:func:`parent_nofollow`), then ``rmdir`` the last component relative to its
    parent's.  Whether it was removed."""
    found = parent_nofollow(path)
    if found is None:
        return False
    fd, name = found
    try:
        os.rmdir(name, dir_fd=fd)  # rmdir never follows a final symlink (ENOTDIR)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def unlink_file_placeholder(path: str, content: str) -> bool:
    """Remove the file placeholder ``path`` if it is still a regular file holding
    ``content`` or nothing (what the run or bubblewrap put there), never following a
    symlink; whether it was removed."""
    found = parent_nofollow(path)
    if found is None:
        return False
    fd, name = found
    expected = content.encode("utf-8", "surrogateescape")
    try:
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        try:
            st = os.fstat(handle)
            held = os.read(handle, len(expected) + 1) if st.st_size <= len(expected) else None
        finally:
            os.close(handle)
        if not (st.st_mode & 0o170000 == 0o100000 and held in (b"", expected)):
            return False
        os.unlink(name, dir_fd=fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def remove_placeholder_paths(directories: Iterable[str], files: Mapping[str, str]) -> None:
    """Remove file placeholders (:func:`unlink_file_placeholder`), then the directories that
    are still empty (:func:`remove_empty_dirs`)."""
    for path, content in files.items():
        unlink_file_placeholder(path, content)
    remove_empty_dirs(path for path in directories if path not in files)


def remove_empty_dirs(paths: Iterable[str]) -> None:
    """:func:`rmdir_nofollow` on each path, deepest first (a child before its parent)."""
    for path in sorted(set(paths), key=len, reverse=True):
        rmdir_nofollow(path)
