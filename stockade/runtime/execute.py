"""Spawn a confined command, stream its output through a cap, enforce the timeout.

:func:`run_confined` takes a sandbox prefix argv (ending with ``--``), the command, the
filtered environment and the :class:`~stockade.runtime.limits.Limits`; it returns a
:class:`RunResult` with the exit status, duration, output byte counts and the limits hit.

Exit status (what ``stockade run`` exits with, see ``stockade.cli.cmd_run``): the
command's own status when it ended by itself; ``128 + N`` when a signal ``N`` ended it
(like a shell); ``124`` when the timeout killed it (like coreutils ``timeout``); ``125``
when the process-limit watchdog killed it.  Other limit hits (output truncated, cpu,
file size, memory, refused forks) keep the command's status and are named in
``limits_hit``.

The environment passed to the sandbox tool *is* the command's environment: bwrap hands
its own environment to the command, so secrets of the parent never reach it.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from typing import Callable, Mapping, Sequence

from stockade.runtime.limits import Limits, PidNamespaceWatchdog, PidsCgroup, make_preexec, nproc_enforced
from stockade.runtime.record import Record
from stockade.runtime.sandbox import _error, supply_seccomp

EXIT_TIMEOUT = 124
EXIT_PROCESS_LIMIT = 125

_MEMORY_MARKERS = (b"memoryerror", b"cannot allocate memory", b"out of memory", b"bad_alloc",
                   b"failed to allocate", b"mmap failed")
_TAIL = 4096

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


def _kill_tree(proc: subprocess.Popen, cgroup: PidsCgroup | None) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    if cgroup is not None:
        cgroup.kill_all()


def run_confined(prefix: Sequence[str], command: Sequence[str], env: Mapping[str, str], limits: Limits,
                 cwd: str | None = None, stdout: Sink | None = None, stderr: Sink | None = None,
                 stdin: int | None = None, pre_exec: Callable[[], None] | None = None,
                 pass_fds: Sequence[int] = ()) -> RunResult:
    """Run ``prefix + command`` with the limits, streaming output to the sinks.

    ``pre_exec`` runs in the child after the rlimits are set and before the sandbox tool is
    exec'd (the preview's overlay mount).  A seccomp placeholder in a bwrap prefix is
    replaced by a descriptor holding the filter (see
    :func:`~stockade.runtime.sandbox.supply_seccomp`; R510 when it cannot be).  Raises R506
    when the sandbox tool cannot be started at all.
    """
    out_sink = stdout or _default_sink(1)
    err_sink = stderr or _default_sink(2)
    cap = _Cap(limits.output, out_sink, err_sink)
    cgroup = None
    if limits.processes is not None and not nproc_enforced():
        cgroup = PidsCgroup.create(limits.processes)
    try:
        prefix, filter_fds = supply_seccomp(prefix, pass_fds)
    except BaseException:
        if cgroup is not None:
            cgroup.remove()
        raise
    argv = [*prefix, *command]
    started = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(env),
                                cwd=cwd, start_new_session=True, close_fds=True,
                                pass_fds=(*pass_fds, *filter_fds), preexec_fn=make_preexec(limits, cgroup, pre_exec))
    except (OSError, subprocess.SubprocessError) as exc:
        if cgroup is not None:
            cgroup.remove()
        raise _error("R506", f"cannot start the sandbox `{argv[0]}`: {exc}",
                     help="check that the sandbox tool is installed and executable") from None
    finally:
        for fd in filter_fds:
            os.close(fd)
    watchdog = None
    if limits.processes is not None and not nproc_enforced() and cgroup is None:
        watchdog = PidNamespaceWatchdog(proc.pid, limits.processes)
        watchdog.start()
    deadline = None if limits.timeout is None else started + limits.timeout
    timed_out = False
    counts = {"out": 0, "err": 0}
    tail = bytearray()
    selector = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    selector.register(proc.stdout, selectors.EVENT_READ, "out")
    selector.register(proc.stderr, selectors.EVENT_READ, "err")
    open_streams = 2
    try:
        while open_streams:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                timed_out = True
                _kill_tree(proc, cgroup)
                break
            for key, _ in selector.select(remaining):
                data = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                if not data:
                    selector.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                counts[key.data] += len(data)
                if key.data == "err":
                    tail += data
                    del tail[:-_TAIL]
                cap.feed(data, out_sink if key.data == "out" else err_sink)
        remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
        try:
            returncode = proc.wait(remaining)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_tree(proc, cgroup)
            returncode = proc.wait()
    except BaseException:
        _kill_tree(proc, cgroup)
        proc.wait()
        raise
    finally:
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
        if watchdog is not None:
            watchdog.stop()
    duration = time.monotonic() - started
    hits: list[str] = []
    if timed_out:
        hits.append("timeout")
    watchdog_hit = watchdog is not None and watchdog.tripped
    if watchdog_hit or (cgroup is not None and cgroup.hit()):
        hits.append("processes")
    elif limits.processes is not None and b"resource temporarily unavailable" in bytes(tail).lower():
        hits.append("processes")  # fork refused by RLIMIT_NPROC (EAGAIN)
    if cgroup is not None:
        cgroup.remove()
    # bwrap reports a command killed by signal N as status 128 + N
    sig = -returncode if returncode < 0 else (returncode - 128 if 128 < returncode < 160 else None)
    if limits.cpu is not None and sig in (signal.SIGXCPU, signal.SIGKILL) and not timed_out and not watchdog_hit:
        hits.append("cpu")
    if limits.file_size is not None and (sig == signal.SIGXFSZ or b"file too large" in bytes(tail).lower()):
        hits.append("file_size")
    if limits.memory is not None and not timed_out and (
            sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS)
            or any(marker in bytes(tail).lower() for marker in _MEMORY_MARKERS)):
        hits.append("memory")
    if cap.truncated:
        hits.append("output")
    if timed_out:
        status = EXIT_TIMEOUT
    elif watchdog_hit:
        status = EXIT_PROCESS_LIMIT
    elif returncode < 0:
        status = 128 - returncode
    else:
        status = returncode
    setup_failed = (returncode == 1 and counts["out"] == 0 and bytes(tail).startswith(b"bwrap: "))
    return RunResult(status, returncode, duration, counts["out"], counts["err"], cap.shown, tuple(hits),
                     setup_failed, bytes(tail))
