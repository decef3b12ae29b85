"""The pre-exec helper: a fresh process that confines itself, mounts, then execs the sandbox tool.

:func:`stockade.runtime.execute.spawn` never runs Python between ``fork`` and ``exec`` (a
threaded host could deadlock there).  When work must happen in the child before the sandbox
tool starts — the preview's overlay mount, the ``disk`` layer, or limits on a program that
cannot be held by the parent (not bubblewrap) — the child execs *this file* with the
interpreter that runs stockade (``python -I -S prexec.py SPEC_FD REPORT_FD``).  After an exec
the process is single-threaded and holds no lock of the host, so Python is safe here.  It
costs a Python start (~15 ms), so plain runs never come here.

The parent writes the spec (:mod:`marshal`: a dict) to ``SPEC_FD`` and reads ``REPORT_FD``.
The helper does what the forked child used to do, in the same order: join the run's cgroup
(writing ``0`` to ``tasks``/``cgroup.procs``: this process is one thread), set the rlimits
(before any user namespace is made, which records them), run the steps, restore the
signals Python ignores (``SIGPIPE``, ``SIGXFSZ``), and exec the sandbox tool with the
environment of the spec.  It writes ``+`` to the report pipe just before the exec; the pipe
is close-on-exec, so the parent sees ``+`` and end-of-file when the exec worked, and
``+errno:stage:message`` (or ``errno:stage:message``) when something failed (the helper
then exits 127).  Nothing at all (the helper died first) is a failure too.

Steps (tuples built in the parent):

* ``("overlay", workspace, (dev, ino), upper, work, uid, gid)`` — the preview's
  copy-on-write view (:mod:`stockade.runtime.preview`): new user + mount namespaces mapping
  only our ids, every mount private, ``overlay`` on the workspace directory itself (opened
  ``O_NOFOLLOW`` and checked to be the directory the preview was made for);
* ``("disk", directories, files, workspace, covered, limit, uid, gid)`` — the ``disk``
  layer (:mod:`stockade.runtime.disk`);
* ``("call", "module:function", args)`` — import a function (on the parent's ``sys.path``)
  and call it (tests use it to act in the window before the mounts).

This file imports nothing of stockade: it is run as a script, without ``site``.
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence
    from typing import Any

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNS = 0x00020000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
#: How the layers' directories are opened: a path that became a symlink fails (fail closed).
_OPEN = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC if hasattr(os, "O_PATH") else 0


class _Libc:
    """``unshare`` and ``mount`` through :mod:`ctypes`, raising :class:`OSError`."""

    def __init__(self) -> None:
        import ctypes

        self._ctypes = ctypes
        self._libc = ctypes.CDLL(None, use_errno=True)

    def check(self, result: int, what: str) -> None:
        if result != 0:
            err = self._ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def unshare(self, flags: int) -> int:
        return int(self._libc.unshare(flags))

    def mount(self, source: str | None, target: str, fstype: str | None, flags: int, data: bytes | None,
              what: str) -> None:
        self.check(self._libc.mount(None if source is None else source.encode(), target.encode(),
                                    None if fstype is None else fstype.encode(), flags, data), what)


def map_ids(uid: int, gid: int) -> None:
    """In a new user namespace: map ``uid``/``gid`` to themselves and deny ``setgroups``, so
    that files keep their owners."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def escape_option(path: str) -> str:
    """``path`` escaped for a mount option list (``,``, ``:`` and ``\\``)."""
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def overlay(libc: _Libc, workspace: str, expected: Sequence[int], upper: str, work: str, uid: int,
            gid: int) -> None:
    """The preview's overlay (see the module docstring)."""
    import errno

    libc.check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare")
    map_ids(uid, gid)
    libc.mount(None, "/", None, _MS_REC | _MS_PRIVATE, None, "make mounts private")
    # on the workspace directory itself, never through a symlink swapped in for it
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != tuple(expected):
            raise OSError(errno.ESTALE, f"the workspace `{workspace}` was replaced")
        here = f"/proc/self/fd/{fd}"
        options = f"userxattr,lowerdir={here},upperdir={escape_option(upper)},workdir={escape_option(work)}"
        libc.mount("overlay", here, "overlay", 0, options.encode(), "mount overlay")
    finally:
        os.close(fd)


def _kept_flags(path: str) -> int:
    """The mount flags of ``path``'s mount that a remount must keep (in a user namespace the
    kernel refuses to drop a locked ``nosuid``, ``nodev``, ``noexec`` or atime setting)."""
    have = os.statvfs(path).f_flag
    out = _MS_NOSUID | _MS_NODEV
    for st_flag, ms_flag in ((getattr(os, "ST_NOEXEC", 8), 8), (getattr(os, "ST_NOATIME", 1024), 1024),
                             (getattr(os, "ST_NODIRATIME", 2048), 2048), (getattr(os, "ST_RELATIME", 4096), 1 << 21)):
        if have & st_flag:
            out |= ms_flag
    return out


def disk(libc: _Libc, directories: Sequence[str], files: Sequence[str], workspace: str, covered: bool,
         limit: int, uid: int, gid: int) -> None:
    """The ``disk`` layer (see :mod:`stockade.runtime.disk`); errors say ``disk limit: ``."""
    try:
        _disk(libc, directories, files, workspace, covered, limit, uid, gid)
    except OSError as exc:
        if "disk limit: " in str(exc.strerror):
            raise
        where = f" (`{exc.filename}`)" if exc.filename else ""
        raise OSError(exc.errno, f"disk limit: {exc.strerror}{where}") from None


def _disk(libc: _Libc, directories: Sequence[str], files: Sequence[str], workspace: str, covered: bool,
          limit: int, uid: int, gid: int) -> None:
    def mount(source: str | None, target: str, fstype: str | None, flags: int, data: bytes | None,
              what: str) -> None:
        libc.mount(source, target, fstype, flags, data, f"disk limit: {what}")

    if libc.unshare(_CLONE_NEWNS) != 0:  # a normal user (not already in a user namespace of its own)
        libc.check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "disk limit: unshare")
        map_ids(uid, gid)
    with open("/proc/self/uid_map", "rb") as handle:
        initial = handle.read().split() == [b"0", b"0", b"4294967295"]
    mount(None, "/", None, _MS_REC | _MS_PRIVATE, None, "make mounts private")
    tmpfs_options = f"size={max(limit, 4096)},nr_inodes={max(limit // 4096, 4096)},mode=0700".encode()
    # descriptors first: the tmpfs is mounted over the first directory, hiding it
    lowers = [os.open(path, _OPEN) for path in directories]
    kept = [os.open(path, _OPEN) for path in ([workspace] if covered else [])]
    try:
        for path in files:
            mount(path, path, None, _MS_BIND, None, f"bind `{path}`")
            mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _kept_flags(path), None,
                  f"make `{path}` read-only")
        if directories:
            base = directories[0]
            mount("tmpfs", base, "tmpfs", _MS_NOSUID | _MS_NODEV, tmpfs_options, "mount the tmpfs")
            for index, lower in enumerate(lowers):
                upper, work = os.path.join(base, f"u{index}"), os.path.join(base, f"w{index}")
                info = os.fstat(lower)
                os.mkdir(upper, 0o700)
                os.mkdir(work, 0o700)
                os.chmod(upper, stat.S_IMODE(info.st_mode))  # the overlay's root takes the upper's
                try:
                    os.chown(upper, info.st_uid, info.st_gid)
                except OSError:
                    pass  # an owner not mapped in our user namespace: ours stays
            options = []
            for index, lower in enumerate(lowers):
                text = (f"lowerdir=/proc/self/fd/{lower},upperdir={escape_option(os.path.join(base, f'u{index}'))},"
                        f"workdir={escape_option(os.path.join(base, f'w{index}'))}")
                options.append(text if initial else text + ",userxattr")
            for index in range(len(directories) - 1, -1, -1):  # the first (holding the tmpfs) last
                mount("overlay", directories[index], "overlay", 0, options[index].encode(),
                      f"overlay `{directories[index]}`")
            for fd in kept:
                mount(f"/proc/self/fd/{fd}", workspace, None, _MS_BIND | _MS_REC, None, "bind the workspace back")
    finally:
        for fd in (*lowers, *kept):
            os.close(fd)


def _call(target: str, args: Sequence[Any]) -> None:
    import importlib

    module, _, name = target.partition(":")
    getattr(importlib.import_module(module), name)(*args)


def run_steps(steps: Sequence[tuple[Any, ...]], path: Sequence[str] = ()) -> None:
    """Run the steps of a spec, in order (see the module docstring)."""
    libc: _Libc | None = None
    for step in steps:
        kind, args = step[0], step[1:]
        if kind == "call":
            sys.path[:] = [*path, *[entry for entry in sys.path if entry not in path]]
            _call(args[0], args[1])
            continue
        if libc is None:
            libc = _Libc()
        if kind == "overlay":
            overlay(libc, *args)
        elif kind == "disk":
            disk(libc, *args)
        else:
            raise ValueError(f"unknown pre-exec step `{kind}`")


def main(argv: Sequence[str]) -> None:
    """Read the spec from ``argv[1]``, report on ``argv[2]``, and exec (never returns)."""
    report = int(argv[2])
    stage = "setup"
    try:
        os.set_inheritable(report, False)
        spec_fd = int(argv[1])
        data = b""
        while True:
            chunk = os.read(spec_fd, 1 << 16)
            if not chunk:
                break
            data += chunk
        os.close(spec_fd)
        import marshal

        spec = marshal.loads(data)
        stage = "cgroup"
        for directory, join in spec.get("cgroup", ()):
            fd = os.open(os.path.join(directory, join), os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        stage = "rlimit"
        if spec.get("rlimits"):
            import resource

            for which, values in spec["rlimits"]:
                resource.setrlimit(which, values)
        stage = "pre_exec"
        run_steps(spec.get("steps", ()), spec.get("path", ()))
        import _signal

        for signum in (_signal.SIGPIPE, getattr(_signal, "SIGXFSZ", None)):
            if signum is not None:
                _signal.signal(signum, _signal.SIG_DFL)
        stage = "exec"
        args, env = list(spec["argv"]), dict(spec["env"])
        os.write(report, b"+")
        if os.sep in args[0]:
            os.execve(args[0], args, env)
        os.execvpe(args[0], args, env)  # a bare name: searched on the environment's PATH
    except BaseException as exc:
        try:
            number = exc.errno if isinstance(exc, OSError) and exc.errno else 0
            os.write(report, f"{number}:{stage}:{exc}".encode("utf-8", "replace"))
        finally:
            os._exit(127)


if __name__ == "__main__":
    main(sys.argv)
