"""The ``disk`` limit: what a run may leave written outside the workspace.

Under ``limits { disk SIZE }`` every path the sandbox may write outside the workspace —
``/tmp``, ``$TMPDIR``, a ``write ~/.cache`` — is, for the run, an overlay: the host
directory is the read-only lower layer and the upper layer is one private tmpfs of
``SIZE`` bytes shared by all of them.  The sandbox sees the host's files there and may
create, change and delete files as the policy allows, but every change lands in the
tmpfs, which is discarded with the run: **nothing written outside the workspace under a
``disk`` limit persists after the run**, and writing more than ``SIZE`` in all fails with
``ENOSPC`` ("No space left on device").  Deleting a host file there hides it for the run
only.  The workspace itself is not limited and is written directly (a writable path that
contains the workspace — ``write ~`` with the workspace under it — is overlaid, and the real
workspace is bound back over it).  A writable *file* outside the workspace (not a
directory) becomes read-only for the run.  The compiler warns about each write rule this
affects (``C245``).

How: in the child, between fork and exec (after the preview's overlay, if any), a new
mount namespace (and, for a normal user, a user namespace mapping only its own ids) in
which the tmpfs and the overlays are mounted; bubblewrap is exec'd in it, so its binds of
those paths take the overlays, and the namespace — with the tmpfs — goes away with the
last process of the run.  The host is never written and no host-side cleanup is needed.
A writable ``/`` cannot be overlaid this way: such a run is refused (``R545``).  The
tmpfs's pages are charged to the run's memory cgroup too.
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Callable, Sequence

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNS = 0x00020000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
#: bwrap options that make a host path writable inside the sandbox (source, destination).
_WRITABLE_BINDS = frozenset({"--bind", "--bind-try", "--dev-bind", "--dev-bind-try"})
#: How the layers' directories are opened: a path that became a symlink fails (fail closed).
_OPEN = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC if hasattr(os, "O_PATH") else 0


def _inside(path: str, directory: str) -> bool:
    return path == directory or directory == "/" or path.startswith(directory.rstrip("/") + "/")


def writable_roots(prefix: Sequence[str], workspace: str) -> list[str]:
    """The outermost host paths a bwrap prefix binds writable outside ``workspace``."""
    sources: list[str] = []
    i = 0
    while i < len(prefix):
        word = prefix[i]
        if word == "--":
            break
        if word in _WRITABLE_BINDS and i + 2 < len(prefix):
            source = prefix[i + 1]
            if not _inside(source, workspace):
                sources.append(source)
            i += 3
            continue
        i += 1
    roots: list[str] = []
    for source in sorted(set(sources), key=len):
        if not any(_inside(source, root) for root in roots):
            roots.append(source)
    return roots


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


def _escape(path: str) -> str:
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def disk_pre_exec(prefix: Sequence[str], workspace: str, limit: int,
                  before: Callable[[], None] | None = None) -> Callable[[], None]:
    """The function to run in the child before the sandbox tool is exec'd: ``before`` (the
    preview's overlay), then the ``disk`` layer over every writable path of ``prefix``
    outside ``workspace`` (see the module docstring).  Raises ``R545`` here, in the parent,
    when the limit cannot be enforced (``/`` is writable)."""
    from stockade.runtime.sandbox import _error

    if not prefix or os.path.basename(prefix[0]) != "bwrap" or not sys.platform.startswith("linux"):
        raise _error("R545", "the `disk` limit is enforced only on linux with bubblewrap; the command did not run",
                     help="remove the `disk` limit on this platform")
    workspace = os.path.realpath(workspace)
    roots = writable_roots(prefix, workspace)
    if "/" in roots:
        raise _error("R545", "the `disk` limit cannot be enforced while `/` is writable; the command did not run",
                     help="grant write on the workspace and the paths that need it, not on `/`")
    directories: list[str] = []
    files: list[str] = []
    for root in roots:
        try:
            mode = os.lstat(root).st_mode
        except OSError:
            continue  # bubblewrap reports a missing source itself
        if stat.S_ISLNK(mode):  # the plan named a directory or file: this is not what was compiled
            raise _error("R545", f"cannot set up the `disk` layer: `{root}` is a symlink now; the command did not run",
                         help="run again (the plan is recompiled when a path changes kind)")
        (directories if stat.S_ISDIR(mode) else files).append(root)
    covered = [root for root in directories if _inside(workspace, root)]  # the workspace is bound back
    if not directories and not files:
        return before or (lambda: None)
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    tmpfs_options = f"size={max(limit, 4096)},nr_inodes={max(limit // 4096, 4096)},mode=0700".encode()

    def check(result: int, what: str) -> None:
        if result != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"disk limit: {what}: {os.strerror(err)}")

    def mount(source: str | None, target: str, fstype: str | None, flags: int, data: bytes | None,
              what: str) -> None:
        check(libc.mount(None if source is None else source.encode(), target.encode(),
                         None if fstype is None else fstype.encode(), flags, data), what)

    def enter() -> None:
        if before is not None:
            before()
        try:
            layer()
        except OSError as exc:
            if "disk limit: " in str(exc.strerror):
                raise
            where = f" (`{exc.filename}`)" if exc.filename else ""
            raise OSError(exc.errno, f"disk limit: {exc.strerror}{where}") from None

    def layer() -> None:
        if libc.unshare(_CLONE_NEWNS) != 0:  # a normal user (not already in a user namespace of its own)
            check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare")
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
                try:
                    os.write(fd, text.encode())
                finally:
                    os.close(fd)
        with open("/proc/self/uid_map", "rb") as handle:
            initial = handle.read().split() == [b"0", b"0", b"4294967295"]
        mount(None, "/", None, _MS_REC | _MS_PRIVATE, None, "make mounts private")
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
                    text = (f"lowerdir=/proc/self/fd/{lower},upperdir={_escape(os.path.join(base, f'u{index}'))},"
                            f"workdir={_escape(os.path.join(base, f'w{index}'))}")
                    options.append(text if initial else text + ",userxattr")
                for index in range(len(directories) - 1, -1, -1):  # the first (holding the tmpfs) last
                    mount("overlay", directories[index], "overlay", 0, options[index].encode(),
                          f"overlay `{directories[index]}`")
                for fd in kept:
                    mount(f"/proc/self/fd/{fd}", workspace, None, _MS_BIND | _MS_REC, None, "bind the workspace back")
        finally:
            for fd in (*lowers, *kept):
                os.close(fd)

    return enter
