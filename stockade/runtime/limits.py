"""Resource limits of a confined run: rlimits, a pids cgroup, and killing the whole tree.

From the policy's ``limits`` block (:meth:`Limits.from_ir`):

* ``memory`` → ``RLIMIT_AS`` (address space of each process);
* ``cpu`` → ``RLIMIT_CPU`` (soft at the limit: ``SIGXCPU``; hard one second later);
* ``processes`` → ``RLIMIT_NPROC``.  The kernel counts it per *real uid* (through every
  user namespace level up to the host), so for an ordinary user it caps the sandbox's
  processes plus the user's others.  It is **not enforced for host root** (the kernel
  exempts ``INIT_USER``; a sandbox started by root runs as kuid 0 even inside the user
  namespace).  So when running as root the runtime also puts the sandbox in a ``pids``
  cgroup with ``pids.max`` (cgroup v1 ``pids`` hierarchy, or cgroup v2 when usable), and if
  no cgroup is writable, a watchdog (:mod:`stockade.runtime.watchdog`) counts the processes
  of the sandbox's pid namespace and kills the namespace when the count passes the limit;
* ``filesize`` (or ``file_size``) → ``RLIMIT_FSIZE`` (``SIGXFSZ`` / ``EFBIG``);
* ``timeout`` and ``output`` are enforced by :mod:`stockade.runtime.execute`.

The tree is killed through the pid namespace: bwrap runs with ``--unshare-pid
--die-with-parent``, so SIGKILL to bwrap (the leader of its own process group) kills the
namespace's init and with it every process inside, including ones that called ``setsid``.
"""

from __future__ import annotations

import _signal  # the C module behind `signal`, whose IntEnum wrappers import `enum`
import os
import time
from _thread import get_ident

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable

from stockade.runtime.record import Record

#: Names of limit hits reported by a run.
LIMIT_NAMES = ("timeout", "memory", "cpu", "processes", "output", "file_size")


class Limits(Record):
    """The resource limits of one run (None: unlimited)."""

    timeout: float | None = None
    memory: int | None = None
    cpu: float | None = None
    processes: int | None = None
    output: int | None = None
    file_size: int | None = None

    @classmethod
    def from_ir(cls, ir: Any) -> "Limits":
        """The limits a compiled policy sets (tightest across layers)."""
        def get(name: str) -> float | None:
            return ir.limit(name)

        def as_int(value: float | None) -> int | None:
            return None if value is None else max(int(value), 0)

        file_size = get("filesize")
        if file_size is None:
            file_size = get("file_size")
        return cls(timeout=get("timeout"), memory=as_int(get("memory")), cpu=get("cpu"),
                   processes=as_int(get("processes")), output=as_int(get("output")), file_size=as_int(file_size))

    def to_json(self) -> dict:
        """The limits as a JSON object."""
        return {name: getattr(self, name) for name in LIMIT_NAMES}


def rlimits(limits: Limits) -> list[tuple[int, tuple[int, int]]]:
    """The ``(resource, (soft, hard))`` pairs to set in the child before it execs."""
    out: list[tuple[int, tuple[int, int]]] = []
    if limits.memory is None and limits.cpu is None and limits.processes is None and limits.file_size is None:
        return out
    import resource
    if limits.memory is not None:
        out.append((resource.RLIMIT_AS, (limits.memory, limits.memory)))
    if limits.cpu is not None:
        soft = max(int(limits.cpu + 0.999), 1)
        out.append((resource.RLIMIT_CPU, (soft, soft + 1)))
    if limits.processes is not None:
        out.append((resource.RLIMIT_NPROC, (limits.processes, limits.processes)))
    if limits.file_size is not None:
        out.append((resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size)))
    return out


def nproc_enforced() -> bool:
    """Whether the kernel enforces ``RLIMIT_NPROC`` for us (not for host root)."""
    return os.getuid() != 0


class PidsCgroup:
    """A private ``pids`` cgroup with ``pids.max`` (used when ``RLIMIT_NPROC`` is not
    enforced); :meth:`create` returns None when no cgroup hierarchy is writable.

    The child joins it between fork and exec (:meth:`join_self`).  On a cgroup v1
    hierarchy it writes itself to ``tasks``, not ``cgroup.procs``: moving a whole thread
    group takes ``cgroup_threadgroup_rwsem`` for writing, which waits for an RCU grace
    period (5–15 ms on this machine class, on every run), while moving the calling thread
    alone does not — and the child of a fork is a single thread, so that is the whole
    process.
    """

    def __init__(self, path: str):
        self.path = path

    @classmethod
    def create(cls, limit: int) -> "PidsCgroup | None":
        """Make a cgroup with ``pids.max = limit`` under our own pids cgroup, if possible
        (removing empty ones left behind by runs that were killed)."""
        for parent in _pids_parents():
            _remove_stale(parent)
            path = os.path.join(parent, f"stockade-{os.getpid()}-{get_ident() % 100000}")
            try:
                os.mkdir(path)
            except FileExistsError:
                pass
            except OSError:
                continue
            try:
                _write(os.path.join(path, "pids.max"), str(limit))
            except OSError:
                _rmdir_quiet(path)
                continue
            return cls(path)
        return None

    def join_self(self) -> None:
        """Move the calling process, which must be single-threaded, into the cgroup (run in
        the child before exec; see the class docstring)."""
        tasks = os.path.join(self.path, "tasks")  # cgroup v1 only
        _write(tasks if os.path.exists(tasks) else os.path.join(self.path, "cgroup.procs"), "0")

    def pids(self) -> list[int]:
        """The processes currently in the cgroup."""
        try:
            with open(os.path.join(self.path, "cgroup.procs"), "rb") as handle:
                return [int(line) for line in handle.read().split()]
        except OSError:
            return []

    def hit(self) -> bool:
        """Whether a fork was refused because of ``pids.max``."""
        try:
            with open(os.path.join(self.path, "pids.events"), "rb") as handle:
                for line in handle.read().splitlines():
                    name, _, value = line.partition(b" ")
                    if name == b"max" and int(value) > 0:
                        return True
        except (OSError, ValueError):
            pass
        return False

    def kill_all(self) -> None:
        """SIGKILL every process in the cgroup, and any that the killed ones forked before
        they died: read the members again until a read shows no process not yet killed.

        A process that was sent SIGKILL stays listed until it is reaped (an orphan waits
        for init), so reading until the list is empty could spin; no process that has a
        fatal signal pending can fork, so a read without a new member ends it.
        """
        killed: set[int] = set()
        for _ in range(1000):  # bounded: pids.max caps the members at any moment
            fresh = [pid for pid in self.pids() if pid not in killed]
            if not fresh:
                return
            for pid in fresh:
                try:
                    os.kill(pid, _signal.SIGKILL)
                except OSError:
                    pass
                killed.add(pid)

    def remove(self, patience: float = 0.002) -> None:
        """Kill what is left and remove the cgroup directory.

        The kernel refuses the ``rmdir`` (``EBUSY``) until the last exited process is
        released — an orphaned one (bubblewrap's namespace init outlives its parent by a
        moment) only when init reaps it.  So the ``rmdir`` is retried for ``patience``
        seconds (from 0.2 ms, backing off to 5 ms); a cgroup still busy after that holds
        only killed processes, and the next run's :meth:`create` removes it once its run
        is gone (:func:`_remove_stale`).
        """
        self.kill_all()
        deadline = time.monotonic() + patience
        pause = 0.0002
        while True:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return
                time.sleep(pause)
                pause = min(pause * 2, 0.005)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _rmdir_quiet(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass


def _remove_stale(parent: str) -> None:
    """Remove the empty cgroups of runs whose process is gone (a run killed before it
    could remove its own)."""
    try:
        names = [name for name in os.listdir(parent) if name.startswith("stockade-")]
    except OSError:
        return
    for name in names:
        pid = name.split("-")[1]
        if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            _rmdir_quiet(os.path.join(parent, name))  # refused while anything is still inside


def _pids_parents() -> list[str]:
    """Writable places for a pids cgroup: our v1 ``pids`` cgroup, or the v2 root when it
    delegates ``pids``."""
    out: list[str] = []
    try:
        with open("/proc/self/cgroup", "rb") as handle:
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            base = "/sys/fs/cgroup/pids"
            if os.path.isdir(base):
                out.append(base + path.rstrip("/"))
    for line in lines:
        if line.startswith("0::"):
            path = line[3:]
            for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                try:
                    with open(os.path.join(root + path, "cgroup.subtree_control"), "rb") as handle:
                        if b"pids" in handle.read().split() and path == "/":
                            out.append(root)
                except OSError:
                    continue
    return [p for p in out if os.access(p, os.W_OK)]
