"""Spawn a confined command, stream its output through a cap, enforce the timeout.

:func:`run_confined` takes a sandbox prefix argv (ending with ``--``), the command, the
filtered environment and the :class:`~stockade.runtime.limits.Limits`; it returns a
:class:`RunResult` with the exit status, duration, output byte counts and the limits hit.

Exit status (what ``stockade run`` exits with, see ``stockade.cli.cmd_run``): the
command's own status when it ended by itself; ``128 + N`` when a signal ``N`` ended it
(like a shell); ``124`` when the timeout killed it (like coreutils ``timeout``); ``125``
when the process-limit watchdog killed it; ``127`` (``126``) when the command does not exist
(cannot be executed) inside the sandbox, as a shell says.  Other limit hits (output truncated, cpu,
file size, memory, refused forks) keep the command's status and are named in
``limits_hit``.

The environment passed to the sandbox tool *is* the command's environment: bwrap hands
its own environment to the command, so secrets of the parent never reach it.

**Spawning: no Python between fork and exec.**  A host may call ``stockade.run`` from many
threads; a forked child of a threaded process holds copies of locks that other threads held
at the fork (the import lock, logging and allocator locks), so Python code run there can
deadlock.  So every child is started by ``_posixsubprocess.fork_exec`` (what
:mod:`subprocess` uses without a ``preexec_fn``, without importing :mod:`subprocess`: fork or
vfork and exec in C, async-signal-safe by construction): a new session, the standard
streams, every other descriptor closed but the ones passed, ``cwd``, ``SIGPIPE``/``SIGXFSZ``
restored, exec; an exec or ``chdir`` failure comes back as :class:`OSError`.  What the child
used to do in Python before the exec is done in one of three ways (:func:`spawn`):

* **nothing to do** (no rlimit, no cgroup, no mount): the sandbox tool is exec'd directly;
* **bubblewrap with limits** (every ``stockade run`` on Linux): bwrap is started *held*,
  ``bwrap --perms 0755 --args FD <prefix options> -- command``.  bwrap reads its ``--args``
  descriptor to the end before it does anything else — before it forks or makes a
  namespace — so while the parent keeps the pipe's write end open it only waits.  The parent
  joins the pid to the run's cgroup and sets the rlimits with ``prlimit``, then writes the
  release, :data:`RELEASE` (``--dir /``: takes the pending ``--perms`` and does nothing), and
  closes.  The release is 8 bytes, written whole or not at all; if the parent dies before
  writing it, the ``--perms`` followed by another option is a parse error and bwrap exits
  before it forks: the command never runs without its limits.  This costs no extra process;
* **anything else** — the preview's overlay or the ``disk`` layer (mounts in new
  namespaces), or limits on a tool the parent cannot hold (not bwrap, a setuid bwrap, no
  ``prlimit``: macOS): the child execs the pre-exec helper (:mod:`stockade.runtime.prexec`)
  with the interpreter that runs stockade.  After its exec it is a fresh single-threaded
  process, where Python is safe; it joins the cgroup, sets the rlimits, mounts, and execs
  the sandbox tool, reporting a failure over a close-on-exec pipe.  It costs a Python start
  (~15 ms), never on the plain path.

Output is read with :func:`select.poll`, and the exit is awaited on a pidfd (Linux 5.3+;
elsewhere by polling ``waitpid``), so the timeout needs no thread or signal.

**Memory.**  With a memory cgroup (see :class:`~stockade.runtime.limits.RunCgroup`) an OOM
kill anywhere in the tree stops the whole run: cgroup v2 kills the group itself
(``memory.oom.group``); on v1 the kernel's OOM notification (an eventfd, polled with the
output) makes the runtime kill the tree.  The run then ends with ``137`` (SIGKILL) and
``memory`` in ``limits_hit``.
"""

from __future__ import annotations

import _signal  # the C module behind `signal`, whose IntEnum wrappers import `enum`
import os
import time

from stockade import catalogue as codes
from stockade.runtime.limits import (
    CPUS_UNENFORCED,
    MEMORY_PER_PROCESS,
    Limits,
    RunCgroup,
    nproc_enforced,
    rlimits,
)
from stockade.runtime.record import Record
from stockade.runtime.sandbox import _error, supply_seccomp

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

EXIT_TIMEOUT = 124
EXIT_PROCESS_LIMIT = 125

_MEMORY_MARKERS = (b"memoryerror", b"cannot allocate memory", b"out of memory", b"bad_alloc",
                   b"failed to allocate", b"mmap failed")
_TAIL = 4096

if TYPE_CHECKING:  # pragma: no cover - a type alias for annotations only (no `typing` at run time)
    Sink = Callable[[bytes], object]


class RunResult(Record):
    """What happened to one confined command."""

    _hidden = frozenset({"stderr_tail"})

    exit_status: int
    returncode: int
    duration: float
    bytes_out: int
    bytes_err: int
    bytes_shown: int
    limits_hit: tuple[str, ...] = ()
    setup_failed: bool = False
    stderr_tail: bytes = b""
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict:
        """The result as a JSON object (for the audit trail and ``--format json``)."""
        return {
            "exit_status": self.exit_status,
            "duration": round(self.duration, 6),
            "bytes_out": self.bytes_out,
            "bytes_err": self.bytes_err,
            "bytes_shown": self.bytes_shown,
            "limits_hit": list(self.limits_hit),
            "setup_failed": self.setup_failed,
            "warnings": list(self.warnings),
        }


class _Cap:
    """Counts output across stdout and stderr and cuts it at the limit, saying so once."""

    def __init__(self, limit: int | None, out: Sink, err: Sink):
        self.limit = limit
        self.out = out
        self.err = err
        self.shown = 0
        self.truncated = False

    def feed(self, data: bytes, sink: Sink) -> None:
        if self.limit is None:
            self.shown += len(data)
            sink(data)
            return
        room = self.limit - self.shown
        if room > 0:
            part = data[:room]
            self.shown += len(part)
            sink(part)
        if len(data) > room and not self.truncated:
            self.truncated = True
            self.err(f"\nstockade: output truncated at {self.limit} bytes (limit `output`); "
                     f"the rest is discarded\n".encode())


def _default_sink(fd: int) -> Sink:
    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(fd, view)
            except BrokenPipeError:
                return
            view = view[written:]
    return write


class _SpawnFailed(OSError):
    """The child could not exec the sandbox tool (or failed before the exec)."""


#: What a held bubblewrap reads on ``--args`` when the parent releases it: an option that
#: takes the pending ``--perms`` and does nothing (``/`` exists).  Without it the ``--perms``
#: placed before the prefix's options is a parse error: bwrap exits before it forks.
RELEASE = b"--dir\0/\0"
#: The pre-exec helper, run as a script by the interpreter that runs stockade.
_HELPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prexec.py")


def _pipe() -> tuple[int, int]:
    """A close-on-exec pipe whose ends are not 0–2 (the child's standard streams)."""
    low: list[int] = []
    read_fd, write_fd = os.pipe()
    while read_fd < 3 or write_fd < 3:
        low += [fd for fd in (read_fd, write_fd) if fd < 3]
        read_fd, write_fd = (os.dup(fd) if fd < 3 else fd for fd in (read_fd, write_fd))
    for fd in low:
        os.close(fd)
    return read_fd, write_fd


def _fork_exec(args: Sequence[str], env: Mapping[str, str], *, cwd: str | None, stdin: int | None,
               stdout: int, stderr: int, keep: Sequence[int]) -> int:
    """Start ``args`` with ``_posixsubprocess.fork_exec``: fork (vfork where it can) and
    exec in C, running no Python in the child.  The child starts a new session, takes its
    standard streams, keeps ``keep`` open (made inheritable there) and closes every other
    descriptor, changes to ``cwd``, restores ``SIGPIPE``/``SIGXFSZ`` and execs; a bare name
    is searched on ``env``'s ``PATH``.  An exec or ``chdir`` failure raises :class:`OSError`."""
    import _posixsubprocess

    fork_exec: Any = _posixsubprocess.fork_exec  # typeshed's stub lacks the None defaults
    name = os.fsencode(args[0])
    if b"/" in name:
        executables: tuple[bytes, ...] = (name,)
    else:
        path = env.get("PATH", os.defpath)
        executables = tuple(os.path.join(os.fsencode(part), name) for part in path.split(os.pathsep))
    env_list = [os.fsencode(key) + b"=" + os.fsencode(value) for key, value in env.items()]
    err_read, err_write = _pipe()
    try:
        try:
            call = [list(args), executables, True, tuple(sorted({*keep, err_write})), cwd, env_list,
                    -1 if stdin is None else stdin, -1, -1, stdout, -1, stderr, err_read, err_write,
                    True, True, -1, None, None, None, -1, None, True]  # ... preexec_fn=None, allow_vfork
            signature = getattr(fork_exec, "__text_signature__", None)
            if signature is not None and "allow_vfork" not in signature:
                del call[-1]  # an interpreter whose fork_exec has no allow_vfork argument
            pid: int = fork_exec(*call)
        finally:
            os.close(err_write)
        report = b""
        while True:
            chunk = os.read(err_read, 4096)
            if not chunk:
                break
            report += chunk
    finally:
        os.close(err_read)
    if report:
        os.waitpid(pid, 0)
        _, _, rest = report.partition(b":")
        code, _, message = rest.partition(b":")
        try:
            number = int(code, 16)
        except ValueError:
            number = 0
        stage = ("chdir" if cwd is not None else "setup") if message.startswith(b"noexec") else "exec"
        said = os.strerror(number) if number else message.decode("utf-8", "replace")
        raise _SpawnFailed(number, f"{stage}: {said}")
    return pid


def _reap_killed(pid: int) -> None:
    try:
        os.kill(pid, _signal.SIGKILL)
    except OSError:
        pass
    os.waitpid(pid, 0)


def _can_hold(args: Sequence[str], end: int | None) -> bool:
    """Whether the parent can hold and confine this argv itself: bubblewrap by absolute path
    with at least one option before the ``--`` at ``end``, not setuid (the parent may not
    set a setuid process's rlimits), and ``prlimit`` here (Linux)."""
    if end is None or end < 2 or os.path.basename(args[0]) != "bwrap" or not os.path.isabs(args[0]):
        return False
    try:
        import resource

        resource.prlimit  # noqa: B018 - Linux only
        return not os.stat(args[0]).st_mode & 0o6000
    except (ImportError, AttributeError, OSError):
        return False


def held_argv(args: Sequence[str], fd: int) -> list[str]:
    """A bubblewrap argv that waits for :data:`RELEASE` on descriptor ``fd`` before it does
    anything, and exits with a parse error when the descriptor ends without it."""
    return [args[0], "--perms", "0755", "--args", str(fd), *args[1:]]


def _spawn_held(args: Sequence[str], env: Mapping[str, str], *, cwd: str | None,
                stdin: int | None, stdout: int, stderr: int, keep: Sequence[int],
                pairs: Sequence[tuple[int, tuple[int, int]]], cgroup: RunCgroup | None) -> int:
    """Start bwrap held, confine it from here, then release it (see the module docstring)."""
    from resource import prlimit

    read_fd, write_fd = _pipe()
    held = held_argv(args, read_fd)
    try:
        try:
            pid = _fork_exec(held, env, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr, keep=[*keep, read_fd])
        finally:
            os.close(read_fd)
    except BaseException:
        os.close(write_fd)
        raise
    stage = "cgroup"
    try:
        if cgroup is not None:
            cgroup.join(pid)
        stage = "rlimit"
        for which, values in pairs:
            prlimit(pid, which, values)
        stage = "release"
        os.write(write_fd, RELEASE)  # shorter than PIPE_BUF: written whole or not at all
    except BaseException as exc:
        os.close(write_fd)
        _reap_killed(pid)
        if isinstance(exc, OSError):
            raise _SpawnFailed(exc.errno or 0, f"{stage}: {exc.strerror or exc}") from None
        raise
    os.close(write_fd)
    return pid


def _spawn_helper(args: Sequence[str], env: Mapping[str, str], *, cwd: str | None, stdin: int | None,
                  stdout: int, stderr: int, keep: Sequence[int], pairs: Sequence[tuple[int, tuple[int, int]]],
                  cgroup: RunCgroup | None, steps: Sequence[tuple[object, ...]]) -> int:
    """Start the pre-exec helper (:mod:`stockade.runtime.prexec`), which confines itself,
    runs ``steps`` and execs ``args``; its failures raise :class:`OSError` here."""
    import marshal
    import sys

    if not sys.executable:
        raise _SpawnFailed(0, "setup: no Python interpreter for the pre-exec helper (`sys.executable` is empty)")
    spec = marshal.dumps({"argv": list(args), "env": dict(env), "rlimits": list(pairs),
                          "cgroup": list(cgroup.dirs) if cgroup is not None else [], "steps": list(steps),
                          "path": [entry for entry in sys.path if isinstance(entry, str)]})
    spec_read, spec_write = _pipe()
    report_read, report_write = _pipe()
    try:
        pid = _fork_exec([sys.executable, "-I", "-S", _HELPER, str(spec_read), str(report_write)], os.environ,
                         cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr, keep=[*keep, spec_read, report_write])
    except BaseException:
        for fd in (spec_write, report_read):
            os.close(fd)
        raise
    finally:
        for fd in (spec_read, report_write):
            os.close(fd)
    report = b""
    try:
        view = memoryview(spec)
        try:
            while view:
                view = view[os.write(spec_write, view):]
        except BrokenPipeError:
            pass  # the helper is gone: its report says why
        finally:
            os.close(spec_write)
        while True:
            chunk = os.read(report_read, 4096)
            if not chunk:
                break
            report += chunk
    except BaseException:
        _reap_killed(pid)
        raise
    finally:
        os.close(report_read)
    if report == b"+":
        return pid
    _, status = os.waitpid(pid, 0)
    said = report.decode("utf-8", "replace").removeprefix("+")
    number, _, rest = said.partition(":")
    stage, _, message = rest.partition(":")
    if not rest:
        stage, message = "setup", f"the pre-exec helper ended before the exec (wait status {status})"
    raise _SpawnFailed(int(number) if number.isdigit() else 0, f"{stage}: {message}")


def spawn(argv: Sequence[str], env: Mapping[str, str], *, cwd: str | None = None, stdin: int | None = None,
          stdout: int, stderr: int, pass_fds: Sequence[int] = (), limits: Limits | None = None,
          cgroup: RunCgroup | None = None, pre_exec: Sequence[tuple[object, ...]] | None = None,
          options_end: int | None = None) -> int:
    """Start ``argv`` in a new session and return its pid (a bare program name is searched
    on ``env``'s ``PATH``, as :mod:`subprocess` does).

    The child gets ``stdin`` (default: inherited), ``stdout`` and ``stderr`` as its
    descriptors 0–2, keeps ``pass_fds`` open, and closes every other descriptor; it is in
    ``cgroup`` and under the rlimits of ``limits`` before it can fork or make a user
    namespace, and the ``pre_exec`` steps (see :mod:`stockade.runtime.prexec`: the preview's
    overlay, the ``disk`` layer) run before the exec.  ``options_end``: the index of the
    ``--`` that ends a bubblewrap argv's options, which lets a bwrap with limits be held and
    confined by the parent (see the module docstring).  No Python runs between fork and
    exec.  Raises :class:`OSError` (with the child's ``errno``) when any of that fails.
    """
    if callable(pre_exec):
        raise TypeError("pre_exec takes steps (see stockade.runtime.prexec), not a function")
    args = [os.fspath(word) for word in argv]
    environment = {str(k): str(v) for k, v in env.items()}
    pairs = rlimits(limits) if limits is not None else []
    steps = tuple(pre_exec or ())
    keep = [fd for fd in pass_fds if fd > 2]
    if not steps and not pairs and cgroup is None:
        return _fork_exec(args, environment, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr, keep=keep)
    if not steps and _can_hold(args, options_end):
        return _spawn_held(args, environment, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr, keep=keep,
                           pairs=pairs, cgroup=cgroup)
    return _spawn_helper(args, environment, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr, keep=keep,
                         pairs=pairs, cgroup=cgroup, steps=steps)


def _kill_tree(pid: int, cgroup: RunCgroup | None) -> None:
    """SIGKILL the sandbox's process group (bwrap leads it; its pid namespace dies with it)
    and whatever is left in the cgroup."""
    try:
        os.killpg(pid, _signal.SIGKILL)
    except OSError:
        pass
    if cgroup is not None:
        cgroup.kill_all()


class _Exit:
    """Awaits the exit of one child, with a deadline: on a pidfd when the kernel has them,
    else by polling ``waitpid``."""

    def __init__(self, pid: int):
        self.pid = pid
        self.status: int | None = None
        try:
            self.pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self.pidfd = None

    def wait(self, timeout: float | None) -> int | None:
        """The child's wait status, or None if it is still running after ``timeout`` seconds."""
        if self.status is not None:
            return self.status
        if timeout is None:
            return self._reap(0)
        if self.pidfd is not None:
            from select import POLLIN, poll

            waiter = poll()
            waiter.register(self.pidfd, POLLIN)
            if not waiter.poll(int(max(timeout, 0) * 1000) + 1):
                return None
            return self._reap(0)
        deadline = time.monotonic() + timeout
        while True:
            status = self._reap(os.WNOHANG)
            if status is not None or time.monotonic() >= deadline:
                return status
            time.sleep(0.005)

    def _reap(self, flags: int) -> int | None:
        pid, status = os.waitpid(self.pid, flags)
        if pid == 0:
            return None
        self.status = status
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        return status

    def close(self) -> None:
        """Release the pidfd (the child must have been reaped, or be left to the caller)."""
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def run_confined(prefix: Sequence[str], command: Sequence[str], env: Mapping[str, str], limits: Limits,
                 cwd: str | None = None, stdout: Sink | None = None, stderr: Sink | None = None,
                 stdin: int | None = None, pre_exec: Sequence[tuple[object, ...]] | None = None,
                 pass_fds: Sequence[int] = (), seccomp_programs: Mapping[str, bytes] | None = None,
                 workspace: str | None = None, after_spawn: Callable[[int | None], object] | None = None) -> RunResult:
    """Run ``prefix + command`` with the limits, streaming output to the sinks.

    ``pre_exec``: steps run before the sandbox tool is exec'd, after the rlimits are set (the
    preview's overlay mount, see :mod:`stockade.runtime.prexec`); with a ``disk`` limit a step then puts every
    path the prefix binds writable outside ``workspace`` (default ``cwd``) under a
    size-limited layer that is discarded after the run (:mod:`stockade.runtime.disk`).
    ``memory`` is a total for the tree when a memory cgroup can be made; otherwise the
    result's ``warnings`` say that it holds per process only.  A seccomp placeholder in a bwrap prefix is
    replaced by a descriptor holding the filter (see
    :func:`~stockade.runtime.sandbox.supply_seccomp`, given the ``seccomp_programs`` already
    checked; R510 when it cannot be).  ``after_spawn`` is called with the sandbox tool's pid
    once it was started, or with None when it failed to start (the caller closes the
    descriptors it passed); when it raises, the sandbox tool is killed and reaped (a sandbox
    it holds before its command, ``--block-fd``, never runs it) and the error propagates.
    Raises R506 when the sandbox tool cannot be started at all.
    """
    out_sink = stdout or _default_sink(1)
    err_sink = stderr or _default_sink(2)
    cap = _Cap(limits.output, out_sink, err_sink)
    warnings: list[str] = []
    pids_limit = limits.processes if limits.processes is not None and not nproc_enforced() else None
    cpus = getattr(limits, "cpus", None)
    cgroup = RunCgroup.create(pids=pids_limit, memory=limits.memory, cpus=cpus) if (
        pids_limit is not None or limits.memory is not None or cpus is not None) else None
    if limits.memory is not None and (cgroup is None or cgroup.memory_dir is None):
        warnings.append(MEMORY_PER_PROCESS)
    if cpus is not None and (cgroup is None or cgroup.cpu_dir is None):
        warnings.append(CPUS_UNENFORCED)
    oom_fd = cgroup.oom_events() if cgroup is not None else None  # v1: stop the whole tree on an OOM kill
    try:
        if limits.disk is not None:
            from stockade.runtime.disk import disk_pre_exec

            pre_exec = disk_pre_exec(prefix, workspace or cwd or os.getcwd(), limits.disk, pre_exec)
        prefix, filter_fds = supply_seccomp(prefix, pass_fds, seccomp_programs)
    except BaseException:
        if cgroup is not None:
            cgroup.remove()
        raise
    argv = [*prefix, *command]
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    started = time.monotonic()
    pid = None
    try:
        pid = spawn(argv, env, cwd=cwd, stdin=stdin, stdout=out_write, stderr=err_write,
                    pass_fds=(*pass_fds, *filter_fds), limits=limits, cgroup=cgroup, pre_exec=pre_exec,
                    options_end=len(prefix) - 1 if prefix and prefix[-1] == "--" else None)
    except OSError as exc:
        for fd in (out_read, err_read):
            os.close(fd)
        if cgroup is not None:
            cgroup.remove()
        said = str(exc.strerror or exc)
        if "disk limit: " in said:
            raise _error(codes.DISK_LIMIT_UNENFORCEABLE, f"cannot set up the `disk` layer; the command did not run: "
                                 f"{said.split('disk limit: ', 1)[1]}",
                         help="the `disk` limit needs tmpfs and overlayfs in a private mount namespace over "
                              "every writable directory outside the workspace") from None
        raise _error(codes.SANDBOX_START_FAILED, f"cannot start the sandbox `{argv[0]}`: {exc.strerror or exc}",
                     help="check that the sandbox tool is installed and executable") from None
    finally:
        for fd in (*filter_fds, out_write, err_write):
            os.close(fd)
        if after_spawn is not None:
            try:
                after_spawn(pid)
            except BaseException:
                if pid is not None:  # the sandbox is held (see `after_spawn`): it never runs the command
                    _kill_tree(pid, cgroup)
                    os.waitpid(pid, 0)
                    for fd in (out_read, err_read):
                        os.close(fd)
                    if cgroup is not None:
                        cgroup.remove()
                raise
    from select import POLLIN, poll  # imported while the sandbox starts

    exit_ = _Exit(pid)
    watchdog = None
    if pids_limit is not None and (cgroup is None or cgroup.pids_dir is None):
        from stockade.runtime.watchdog import PidNamespaceWatchdog

        watchdog = PidNamespaceWatchdog(pid, pids_limit)
        watchdog.start()
    deadline = None if limits.timeout is None else started + limits.timeout
    timed_out = False
    counts = {"out": 0, "err": 0}
    tail = bytearray()
    streams = {out_read: "out", err_read: "err"}
    reader = poll()
    for fd in streams:
        reader.register(fd, POLLIN)
    oom_killed = False
    if oom_fd is not None:
        reader.register(oom_fd, POLLIN)
    status: int | None = None
    try:
        while streams:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                timed_out = True
                _kill_tree(pid, cgroup)
                break
            for fd, _ in reader.poll(None if remaining is None else int(remaining * 1000) + 1):
                if fd == oom_fd:
                    reader.unregister(fd)
                    oom_killed = True
                    _kill_tree(pid, cgroup)
                    continue
                data = os.read(fd, 65536)
                name = streams.get(fd)
                if name is None:
                    continue
                if not data:
                    reader.unregister(fd)
                    del streams[fd]
                    continue
                counts[name] += len(data)
                if name == "err":
                    tail += data
                    del tail[:-_TAIL]
                cap.feed(data, out_sink if name == "out" else err_sink)
        status = exit_.wait(None if deadline is None else max(deadline - time.monotonic(), 0))
        if status is None:
            timed_out = True
            _kill_tree(pid, cgroup)
            status = exit_.wait(None)
    except BaseException:
        _kill_tree(pid, cgroup)
        exit_.wait(None)
        raise
    finally:
        exit_.close()
        for fd in (out_read, err_read):
            os.close(fd)
        if watchdog is not None:
            watchdog.stop()
    assert status is not None  # waited without a timeout
    returncode = os.waitstatus_to_exitcode(status)
    duration = time.monotonic() - started
    hits: list[str] = []
    if timed_out:
        hits.append("timeout")
    watchdog_hit = watchdog is not None and watchdog.tripped
    if watchdog_hit or (cgroup is not None and cgroup.hit()):
        hits.append("processes")
    elif limits.processes is not None and b"resource temporarily unavailable" in bytes(tail).lower():
        hits.append("processes")  # fork refused by RLIMIT_NPROC (EAGAIN)
    cgroup_oom = oom_killed or (cgroup is not None and cgroup.memory_hit())
    if cgroup is not None:
        cgroup.remove()
    # bwrap reports a command killed by signal N as status 128 + N
    sig = -returncode if returncode < 0 else (returncode - 128 if 128 < returncode < 160 else None)
    if limits.cpu is not None and sig in (_signal.SIGXCPU, _signal.SIGKILL) and not timed_out and not watchdog_hit:
        hits.append("cpu")
    lowered = bytes(tail).lower()
    if limits.file_size is not None and (sig == _signal.SIGXFSZ or b"file too large" in lowered
                                         or b"file size limit exceeded" in lowered):
        hits.append("file_size")  # EFBIG, or a shell saying that SIGXFSZ killed a child
    if limits.disk is not None and b"no space left on device" in lowered:
        hits.append("disk")  # ENOSPC from the disk layer (the message of a program that hit it)
    if limits.memory is not None and not timed_out and (
            cgroup_oom or sig in (_signal.SIGSEGV, _signal.SIGABRT, _signal.SIGBUS)
            or any(marker in bytes(tail).lower() for marker in _MEMORY_MARKERS)):
        hits.append("memory")
    if cap.truncated:
        hits.append("output")
    told = bytes(tail)
    not_run = returncode == 1 and counts["out"] == 0 and told.startswith(b"bwrap: execvp ")
    if timed_out:
        exit_status = EXIT_TIMEOUT
    elif watchdog_hit:
        exit_status = EXIT_PROCESS_LIMIT
    elif not_run:  # the sandbox was built; the command is missing (127) or not executable (126) there
        exit_status = 126 if b"permission denied" in told.lower() else 127
    elif returncode < 0:
        exit_status = 128 - returncode
    else:
        exit_status = returncode
    setup_failed = returncode == 1 and counts["out"] == 0 and told.startswith(b"bwrap: ") and not not_run
    return RunResult(exit_status, returncode, duration, counts["out"], counts["err"], cap.shown, tuple(hits),
                     setup_failed, bytes(tail), tuple(warnings))
