"""The connect launcher of the handoff (:mod:`stockade.runtime.handoff`): its executable,
compiled once per source into stockade's cache directory and read back only from a
directory of this user that no one else can write, and how one run passes it to
bubblewrap (by content, from a memory file) with the socket pair its listener comes back
on.  A run needs this before bubblewrap starts; the handoff itself (answering the
``connect`` calls) is loaded while bubblewrap sets the sandbox up.
"""

from __future__ import annotations

import _socket
import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping

#: Where the launcher is put inside the sandbox (on bubblewrap's own ``/dev`` tmpfs).
LAUNCH_PATH = "/dev/.stockade-connect"
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "connect_launch.c")
#: The environment variables: the C compiler to build the launcher with, and ``off`` to
#: turn the handoff off (every connection relayed).
COMPILER_VARIABLE = "STOCKADE_CC"
SWITCH_VARIABLE = "STOCKADE_HANDOFF"
MAX_BINARY = 8 << 20
#: How the launcher is compiled (then with ``-static``, else without): freestanding, no C
#: library, a few kilobytes
BUILD_FLAGS = ("-O2", "-nostdlib", "-ffreestanding", "-fno-stack-protector", "-fno-pie", "-no-pie",
               "-fno-asynchronous-unwind-tables", "-s")
#: ``SO_NETNS_COOKIE`` (Linux 5.14)
_SO_NETNS_COOKIE = 71


def _trusted_directory(path: str) -> bool:
    """Whether ``path`` is a real directory of this user that no one else can write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _read_trusted(path: str) -> bytes | None:
    """The bytes of the launcher at ``path`` when it is a regular file of this user that no
    one else can write, in such a directory, and an ELF file; else None."""
    if not _trusted_directory(os.path.dirname(path)):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        import stat

        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022 \
                or not 0 < st.st_size <= MAX_BINARY:
            return None
        data = b""
        while len(data) < st.st_size:
            chunk = os.read(fd, st.st_size - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return data if data[:4] == b"\x7fELF" else None


def kernel_ready() -> bool:
    """Whether this kernel has ``SO_NETNS_COOKIE`` (Linux 5.14, as seccomp's ``ADDFD``
    with ``SETFD``): without it a handed socket could not be told from the sandbox's own."""
    try:
        probe = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    except OSError:
        return False
    try:
        return len(probe.getsockopt(_socket.SOL_SOCKET, _SO_NETNS_COOKIE, 8)) == 8
    except OSError:
        return False
    finally:
        probe.close()


#: Where the C compiler is looked for: the system's directories only, never the caller's
#: ``PATH`` (it may name the workspace, ``.`` or another directory a sandboxed command could
#: have written a ``cc`` into, which the host would then run).
COMPILER_DIRECTORIES = ("/usr/local/bin", "/usr/bin", "/bin")


def _compiler(environ: Mapping[str, str]) -> str | None:
    """The C compiler: ``$STOCKADE_CC`` (an absolute path the user gives), else ``cc``,
    ``gcc`` or ``clang`` in :data:`COMPILER_DIRECTORIES`."""
    given = environ.get(COMPILER_VARIABLE)
    if given:
        return given if os.path.isabs(given) and os.access(given, os.X_OK) else None
    for directory in COMPILER_DIRECTORIES:
        for name in ("cc", "gcc", "clang"):
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    return None


def launcher_binary(environ: Mapping[str, str] | None = None) -> tuple[bytes | None, str]:
    """The launcher's executable (compiled on first use, then cached), or None and why not:
    the handoff is off (``STOCKADE_HANDOFF=off``), this is not Linux on x86_64 or aarch64,
    or there is no C compiler (``$STOCKADE_CC``, else ``cc``/``gcc``/``clang`` in the system's
    directories).  The file
    is named by a hash of the source and the machine, in stockade's cache directory, and
    used only while it is this user's and no one else can write it or its directory."""
    env = os.environ if environ is None else environ
    if env.get(SWITCH_VARIABLE, "").lower() in ("0", "off", "no", "false"):
        return None, f"turned off (`{SWITCH_VARIABLE}`)"
    machine = os.uname().machine
    if not sys.platform.startswith("linux") or machine not in ("x86_64", "aarch64"):
        return None, f"no launcher for `{machine}`"
    if not kernel_ready():
        return None, "the kernel is older than Linux 5.14 (no `SO_NETNS_COOKIE`, seccomp `ADDFD` with `SETFD`)"
    try:
        with open(SOURCE, "rb") as handle:
            source = handle.read()
    except OSError as exc:
        return None, f"the launcher's source is missing ({exc.strerror})"
    from stockade.compiler.cache import cache_dir, sha256

    key = sha256(source + b"\0" + machine.encode()).hexdigest()[:32]
    directory = os.path.join(cache_dir(env), "connect-launch")
    path = os.path.join(directory, f"connect-launch-{key}")
    data = _read_trusted(path)
    if data is not None:
        return data, ""
    compiler = _compiler(env)
    if compiler is None:
        return None, "no C compiler to build the launcher with (`cc`, or `$STOCKADE_CC`)"
    return _build(compiler, directory, path)


def _build(compiler: str, directory: str, path: str) -> tuple[bytes | None, str]:
    """Compile the launcher into ``path`` (:data:`BUILD_FLAGS` with ``-static``, else without);
    the bytes or why not."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError as exc:
        return None, f"cannot make `{directory}`: {exc.strerror}"
    if not _trusted_directory(directory):
        return None, f"`{directory}` is not a directory only this user can write"
    import subprocess  # (only the first run of a new source compiles)

    temporary = os.path.join(directory, f".build-{os.getpid()}-{time.monotonic_ns()}")
    problem = ""
    try:
        for static in (["-static"], []):
            try:
                done = subprocess.run([compiler, *BUILD_FLAGS, *static, "-o", temporary, SOURCE], capture_output=True,
                                      timeout=120, stdin=subprocess.DEVNULL, cwd="/")  # (not the workspace)
            except (OSError, subprocess.SubprocessError) as exc:
                problem = str(exc)
                continue
            if done.returncode == 0:
                os.chmod(temporary, 0o555)
                os.replace(temporary, path)
                data = _read_trusted(path)
                return (data, "") if data is not None else (None, "the compiled launcher cannot be read back")
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            problem = said[-1] if said else f"status {done.returncode}"
        return None, f"the launcher did not compile: {problem}"
    finally:
        try:
            os.unlink(temporary)
        except OSError:
            pass


class Launch:
    """One run's launcher: the memfd bubblewrap copies it from, and the socket pair its
    listener comes back on.  ``options`` go before bubblewrap's final ``--``, ``argv``
    before the command; ``fds`` are passed to bubblewrap and closed once it started."""

    def __init__(self, binary: bytes):
        from stockade.runtime.sandbox import _program_fd

        self.data_fd = _program_fd(binary)
        self.channel, there = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self._there = there
        self.fds: tuple[int, ...] = (self.data_fd, there.fileno())
        self.options = ["--perms", "0555", "--ro-bind-data", str(self.data_fd), LAUNCH_PATH]
        self.argv = [LAUNCH_PATH, str(there.fileno())]

    def started(self) -> None:
        """bubblewrap has its copies: close this process's sandbox-side descriptors."""
        if self.data_fd >= 0:
            os.close(self.data_fd)
            self.data_fd = -1
            self._there.close()
        self.fds = ()

    def close(self) -> None:
        """Close everything (the channel too: the run is over)."""
        self.started()
        self.channel.close()


def usable_prefix(prefix: list[str]) -> bool:
    """Whether a bwrap prefix makes ``/dev`` a tmpfs of its own (``--dev /dev``) and puts
    nothing else there, so that :data:`LAUNCH_PATH` is made on that tmpfs."""
    at = [i for i, word in enumerate(prefix) if word == "/dev"]
    return any(prefix[i - 1] == "--dev" for i in at if i > 0) and len(at) == 1
