"""Locate and check the platform's sandbox tool, and shape the sandbox argv.

Linux uses bubblewrap (``bwrap``); macOS uses ``sandbox-exec`` with the Seatbelt profile
the ``seatbelt`` backend generates.  Either way the runtime builds a *prefix* argv that ends
with ``--``; the command is appended after it.

Fail closed: if the tool is missing, user namespaces are disabled, or a probe run of the
tool fails, :func:`require_sandbox` raises :class:`~stockade.diagnostics.StockadeError`
with an ``R5xx`` code that says what is missing and how to fix it (the CLI exits 3).
There is deliberately **no opt-out**: the IR has no "unconfined" setting, so nothing ever
runs without the sandbox.  (If a policy ever gains an explicit, source-visible
``unconfined`` setting, that would be the only way; no flag or environment variable
exists.)

**Seccomp.**  A bwrap artifact for a policy without all network carries a seccomp filter as a
placeholder word after ``--seccomp`` (see :mod:`stockade.backends.seccomp`).
:func:`supply_seccomp` replaces it with a file descriptor (a memfd holding the program) that
the caller passes to bwrap; :func:`~stockade.runtime.execute.run_confined` does it for every
run.  An argv whose filter is not supplied (a number that is not a passed descriptor, a
malformed placeholder, a filter for another architecture) is refused (R510).

Probing is cheap: reading three ``/proc/sys`` files on every run, and one real
``bwrap … true`` run whose success is remembered in the cache directory, keyed by the
bwrap binary (path, size, mtime), the kernel boot id and the uid.
"""

from __future__ import annotations

import os
import sys

from stockade import catalogue as codes
from stockade.compiler.cache import cache_dir
from stockade.runtime.record import Record

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping, Sequence

    from stockade.compiler.ir import PolicyIR
    from stockade.diagnostics import StockadeError

#: bwrap options the runtime needs whatever the backend emitted: a pid namespace (so a
#: timeout kills the whole tree, even processes that called setsid), death with the
#: parent (so nothing outlives ``stockade``), and a new session (no TIOCSTI injection
#: into the calling terminal).
RUNTIME_BWRAP_FLAGS: tuple[str, ...] = ("--unshare-pid", "--die-with-parent", "--new-session")

_INSTALL_HELP = ("install bubblewrap: `apt-get install bubblewrap` (Debian/Ubuntu), "
                 "`dnf install bubblewrap` (Fedora), `pacman -S bubblewrap` (Arch)")
_USERNS_HELP = ("enable unprivileged user namespaces: `sysctl -w kernel.unprivileged_userns_clone=1` "
                "(Debian), `sysctl -w user.max_user_namespaces=15000`, or on Ubuntu 24.04+ "
                "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`")


def _error(code: str, message: str, help: str | None = None) -> StockadeError:
    """A :class:`~stockade.diagnostics.StockadeError` (diagnostics are imported only
    when something is wrong)."""
    from stockade.diagnostics import Diagnostic, StockadeError

    return StockadeError(Diagnostic(code, message, help=help))


class SandboxTool(Record):
    """The sandbox tool found on this machine."""

    backend: str  # "bwrap" or "seatbelt"
    path: str


def _read_int(path: str) -> int | None:
    try:
        with open(path, "rb") as handle:
            return int(handle.read().strip() or b"0")
    except (OSError, ValueError):
        return None


def userns_problem() -> str | None:
    """Why unprivileged user namespaces are unavailable, or None if the sysctls allow them."""
    if _read_int("/proc/sys/kernel/unprivileged_userns_clone") == 0 and os.geteuid() != 0:
        return "unprivileged user namespaces are disabled (`kernel.unprivileged_userns_clone` is 0)"
    if _read_int("/proc/sys/user/max_user_namespaces") == 0:
        return "user namespaces are disabled (`user.max_user_namespaces` is 0)"
    if _read_int("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1 and os.geteuid() != 0:
        return ("unprivileged user namespaces are restricted by apparmor "
                "(`kernel.apparmor_restrict_unprivileged_userns` is 1)")
    return None


def find_bwrap(environ: Mapping[str, str] | None = None) -> str:
    """The real path of the first ``bwrap`` on ``PATH``, checked to be trustworthy (raises
    R501 if there is none, R512 if it is not trustworthy; see :func:`untrusted_bwrap`)."""
    env = os.environ if environ is None else environ
    path = _which("bwrap", env.get("PATH", os.defpath))
    if path is None:
        raise _error(codes.BWRAP_MISSING,
                     "bubblewrap (`bwrap`) is not installed or not on PATH; refusing to run unconfined",
                     help=_INSTALL_HELP)
    real = os.path.realpath(path)
    problem = untrusted_bwrap(real)
    if problem is not None:
        raise refuse_bwrap(real, problem)
    return real


_TRUST_HELP = ("use a bubblewrap installed by the system (`/usr/bin/bwrap`: `apt-get install bubblewrap`), "
               "owned by root and writable by nobody else, first on PATH, in a directory the policy does not "
               "let the sandbox write")


def refuse_bwrap(path: str, why: str) -> StockadeError:
    """The R512 error: the bubblewrap found at ``path`` is not trusted, because ``why``."""
    return _error(codes.BWRAP_UNTRUSTED, f"refusing to use bubblewrap at `{path}`: {why}", help=_TRUST_HELP)


def untrusted_bwrap(path: str) -> str | None:
    """Why the bubblewrap binary at ``path`` (a real path) cannot be trusted, or None: it
    or one of its parent directories is a symlink, writable by group or others (a sticky
    directory excepted), or owned by a user other than root and the caller.  (Whether the
    *sandbox* could write it is a question for the policy: :func:`sandbox_writable`.)"""
    uid = os.getuid()
    current = path
    while True:
        try:
            st = os.lstat(current)
        except OSError as exc:
            return f"`{current}` cannot be examined ({exc.strerror or exc})"
        mode = st.st_mode
        if current == path and mode & 0o170000 != 0o100000:  # S_ISREG, without `stat`
            return "it is not a regular file"
        if mode & 0o170000 == 0o120000:
            return f"`{current}` is a symlink"
        if st.st_uid not in (0, uid):
            return f"`{current}` is owned by uid {st.st_uid}, not root or the caller"
        if mode & 0o022 and (current == path or not mode & 0o1000):  # a sticky directory (`/tmp`) is fine:
            # others cannot rename or remove what root or the caller owns in it
            return f"`{current}` is writable by {'group' if mode & 0o020 else 'others'}"
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def sandbox_writable(ir: PolicyIR, path: str) -> str | None:
    """The first of ``path`` and its parent directories that the policy of ``ir`` lets the
    sandbox write (so that a command could have planted or replaced what is there), or None."""
    current = path
    while True:
        if ir.path_access(current).can_write:
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _which(name: str, search: str) -> str | None:
    """The first executable file ``name`` in the ``search`` path (what ``shutil.which``
    answers, without importing ``shutil``)."""
    for directory in search.split(os.pathsep):
        candidate = os.path.join(directory or os.curdir, name)
        if os.access(candidate, os.F_OK | os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def _probe_key(bwrap: str) -> str:
    # the inode and ctime too: a binary replaced in place (same size, mtime set back) is
    # probed again (the trust checks run on every run anyway, before the stamp is read)
    st = os.stat(bwrap)
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as handle:  # bytes: no codec to load
            boot = handle.read().strip().decode("ascii", "replace")
    except OSError:
        boot = "unknown"
    return (f"{bwrap}|{st.st_size}|{st.st_mtime_ns}|{st.st_dev}|{st.st_ino}|{st.st_ctime_ns}|{st.st_mode}|"
            f"{st.st_uid}|{boot}|{os.getuid()}")


def probe_bwrap(bwrap: str, environ: Mapping[str, str] | None = None, use_cache: bool = True) -> None:
    """Check that ``bwrap`` can really build a sandbox here (raises R502/R503 otherwise).

    A success is cached; a failure never is.
    """
    problem = userns_problem()
    if problem is not None:
        raise _error(codes.USER_NAMESPACES_UNAVAILABLE, problem + "; bubblewrap cannot build a sandbox",
                     help=_USERNS_HELP)
    stamp = os.path.join(cache_dir(environ), "bwrap-probe")
    key = _probe_key(bwrap)
    if use_cache:
        try:
            fd = os.open(stamp, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO there does not block
            try:
                if os.read(fd, 4096) == key.encode():
                    return
            finally:
                os.close(fd)
        except OSError:
            pass
    import subprocess  # only when the probe is not cached

    try:
        done = subprocess.run([bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
                               "--dev", "/dev", "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _error(codes.BWRAP_CANNOT_SANDBOX, f"bubblewrap at `{bwrap}` cannot be run: {exc}",
                     help=_INSTALL_HELP) from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise _error(codes.BWRAP_CANNOT_SANDBOX,
                     f"bubblewrap cannot create a sandbox here: `{detail[-1] if detail else done.returncode}`",
                     help=_USERNS_HELP)
    if use_cache:
        try:
            os.makedirs(os.path.dirname(stamp), exist_ok=True)
            from _thread import get_ident

            tmp = f"{stamp}.{os.getpid()}.{get_ident()}"  # unique to this thread: concurrent probes never share one
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(key)
            os.replace(tmp, stamp)
        except OSError:
            pass


def require_sandbox(platform: str | None = None, environ: Mapping[str, str] | None = None,
                    bwrap: str | None = None) -> SandboxTool:
    """The sandbox tool for this platform, checked to work (raises R5xx otherwise);
    ``bwrap``: the path :func:`find_bwrap` already answered."""
    platform = platform or sys.platform
    if platform.startswith("linux"):
        path = bwrap or find_bwrap(environ)
        probe_bwrap(path, environ)
        return SandboxTool("bwrap", path)
    if platform == "darwin":
        path = "/usr/bin/sandbox-exec"
        if not os.path.exists(path):
            raise _error(codes.SANDBOX_EXEC_MISSING, "`/usr/bin/sandbox-exec` is missing; refusing to run unconfined",
                         help="sandbox-exec ships with macOS; check the system installation")
        return SandboxTool("seatbelt", path)
    raise _error(codes.PLATFORM_UNSUPPORTED,
                 f"`stockade run` cannot confine commands on `{platform}` yet; refusing to run unconfined",
                 help="use `stockade compile --target windows` to produce a plan and apply it with your own tooling")


def _option_present(argv: Sequence[str], option: str) -> bool:
    end = argv.index("--") if "--" in argv else len(argv)
    return option in argv[1:end]


def harden_bwrap_argv(argv: Sequence[str], cwd: str | None = None, bwrap: str | None = None) -> list[str]:
    """A bwrap prefix argv (ending with ``--``) with the runtime's required flags added.

    Adds :data:`RUNTIME_BWRAP_FLAGS` that are absent and ``--chdir cwd`` when the argv has no
    ``--chdir``; replaces ``argv[0]`` with ``bwrap`` when given.  Raises R510 when the argv
    is not a bwrap prefix ending with ``--``.
    """
    argv = list(argv)
    if not argv or os.path.basename(argv[0]) != "bwrap" or argv[-1] != "--":
        raise _error(codes.ARTIFACT_REFUSED, "the bwrap artifact is not a bwrap argv ending with `--`; refusing to run")
    extra: list[str] = [flag for flag in RUNTIME_BWRAP_FLAGS if not _option_present(argv, flag)]
    if cwd is not None and not _option_present(argv, "--chdir"):
        extra += ["--chdir", cwd]
    head = bwrap or argv[0]
    return [head, *extra, *argv[1:]]


#: bwrap options that read a seccomp program from a file descriptor.
SECCOMP_OPTIONS: tuple[str, ...] = ("--seccomp", "--add-seccomp-fd")


def _refuse_seccomp(message: str) -> StockadeError:
    return _error(codes.ARTIFACT_REFUSED, f"{message}; refusing to run without the seccomp filter",
                  help="let `stockade run` supply the filter (it recompiles stale plans with "
                       "`--no-cache`), or pass the program on the named descriptor")


def _program_fd(data: bytes) -> int:
    """A descriptor (memfd, else a pipe) positioned at the start of ``data``."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("stockade-seccomp", os.MFD_CLOEXEC)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.lseek(fd, 0, os.SEEK_SET)
        except OSError:
            os.close(fd)
            raise
        return fd
    read, write = os.pipe()
    try:
        os.write(write, data)  # a few hundred bytes: far below any pipe's capacity
    finally:
        os.close(write)
    return read


def _checked_program(word: str) -> bytes:
    """The program of a placeholder word, checked to be well formed and built for this
    machine's architecture (raises R510)."""
    from stockade.backends import seccomp

    try:
        arch, data = seccomp.parse_placeholder(word)
    except ValueError as exc:
        raise _refuse_seccomp(f"the seccomp placeholder is malformed: {exc}") from None
    here = seccomp.supported_arch()
    if arch != here:
        raise _refuse_seccomp(f"the seccomp filter is for `{arch}`, this machine is `{here or 'unsupported'}`")
    return data


#: The start of a seccomp placeholder word (``stockade.backends.seccomp.PLACEHOLDER_PREFIX``,
#: repeated here so that a run with checked programs does not import the backend).
_PLACEHOLDER_PREFIX = "STOCKADE_SECCOMP_FD:"


def checked_seccomp_programs(argv: Sequence[str]) -> dict[str, bytes]:
    """Every seccomp placeholder of an argv with its program, checked as
    :func:`supply_seccomp` checks it (raises R510).  A run plan stores them, with the machine
    they were checked on, so that a cached run does not decode them again."""
    return {word: _checked_program(word) for word in argv if word.startswith(_PLACEHOLDER_PREFIX)}


def supply_seccomp(argv: Sequence[str], supplied: Sequence[int] = (),
                   checked: Mapping[str, bytes] | None = None) -> tuple[list[str], list[int]]:
    """The argv with every seccomp placeholder replaced by an open descriptor, and those
    descriptors (the caller passes them to bwrap, then closes them).

    ``supplied`` are descriptors the caller passes anyway: a numeric ``--seccomp FD`` must be
    one of them.  ``checked`` maps placeholder words to programs already checked on this
    machine by :func:`checked_seccomp_programs`; any other placeholder is decoded and
    checked here.  Raises R510 for a placeholder that is malformed, not after a seccomp
    option, or built for another architecture, and for a descriptor not supplied.
    """
    words = list(argv)
    if not any(word in SECCOMP_OPTIONS for word in words):
        return words, []
    known = checked or {}
    fds: list[int] = []
    try:
        for i, word in enumerate(words):
            if word.startswith(_PLACEHOLDER_PREFIX):
                if i == 0 or words[i - 1] not in SECCOMP_OPTIONS:
                    raise _refuse_seccomp("a seccomp placeholder is not the argument of `--seccomp`")
                data = known.get(word)
                if data is None:
                    data = _checked_program(word)
                try:
                    fd = _program_fd(data)
                except OSError as exc:
                    raise _refuse_seccomp(f"cannot hand the seccomp filter to bwrap: {exc}") from None
                fds.append(fd)
                words[i] = str(fd)
            elif word in SECCOMP_OPTIONS and i + 1 < len(words):
                value = words[i + 1]
                if not value.startswith(_PLACEHOLDER_PREFIX) and not (value.isdigit() and int(value) in supplied):
                    raise _refuse_seccomp(f"`{word} {value}` names no descriptor passed to bwrap")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return words, fds


def seatbelt_argv(profile: str, params: Mapping[str, str] | None = None,
                  sandbox_exec: str = "/usr/bin/sandbox-exec") -> list[str]:
    """The ``sandbox-exec`` prefix argv (ending with ``--``) for an SBPL profile text.

    ``params`` become ``-D KEY=VALUE`` definitions readable in the profile with ``(param
    "KEY")``.  Raises R510 for an empty profile (sandbox-exec would reject it, but failing
    here is clearer).
    """
    if not profile.strip():
        raise _error(codes.ARTIFACT_REFUSED, "the seatbelt profile is empty; refusing to run")
    argv = [sandbox_exec, "-p", profile]
    for key, value in sorted((params or {}).items()):
        if not key or "=" in key:
            raise _error(codes.ARTIFACT_REFUSED, f"bad seatbelt parameter name `{key}`")
        argv += ["-D", f"{key}={value}"]
    argv.append("--")
    return argv
