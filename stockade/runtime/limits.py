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
  no cgroup is writable, a watchdog counts the processes of the sandbox's pid namespace and
  kills the namespace when the count passes the limit;
* ``filesize`` (or ``file_size``) → ``RLIMIT_FSIZE`` (``SIGXFSZ`` / ``EFBIG``);
* ``timeout`` and ``output`` are enforced by :mod:`stockade.runtime.execute`.

The tree is killed through the pid namespace: bwrap runs with ``--unshare-pid
--die-with-parent``, so SIGKILL to bwrap (the leader of its own process group) kills the
namespace's init and with it every process inside, including ones that called ``setsid``.
"""

from __future__ import annotations

import os
import resource
import signal
import time
from _thread import get_ident
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
    enforced); :meth:`create` returns None when no cgroup hierarchy is writable."""

    def __init__(self, path: str):
        self.path = path

    @classmethod
    def create(cls, limit: int) -> "PidsCgroup | None":
        """Make a cgroup with ``pids.max = limit`` under our own pids cgroup, if possible."""
        for parent in _pids_parents():
            path = os.path.join(parent, f"stockade-{os.getpid()}-{get_ident() % 100000}")
            try:
                os.mkdir(path)
            except FileExistsError:
                pass
            except OSError:
                continue
            try:
                with open(os.path.join(path, "pids.max"), "w", encoding="ascii") as handle:
                    handle.write(str(limit))
            except OSError:
                _rmdir_quiet(path)
                continue
            return cls(path)
        return None

    def join_self(self) -> None:
        """Move the calling process into the cgroup (run in the child before exec)."""
        fd = os.open(os.path.join(self.path, "cgroup.procs"), os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)

    def pids(self) -> list[int]:
        """The processes currently in the cgroup."""
        try:
            with open(os.path.join(self.path, "cgroup.procs"), encoding="ascii") as handle:
                return [int(line) for line in handle if line.strip()]
        except OSError:
            return []

    def hit(self) -> bool:
        """Whether a fork was refused because of ``pids.max``."""
        try:
            with open(os.path.join(self.path, "pids.events"), encoding="ascii") as handle:
                for line in handle:
                    name, _, value = line.partition(" ")
                    if name == "max" and int(value) > 0:
                        return True
        except (OSError, ValueError):
            pass
        return False

    def kill_all(self) -> None:
        """SIGKILL every process left in the cgroup."""
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def remove(self, patience: float = 1.0) -> None:
        """Kill what is left and remove the cgroup directory.

        The kernel refuses the ``rmdir`` (``EBUSY``) until the last exited process is
        released, usually a fraction of a millisecond after the sandbox is reaped; so the
        retries start at 0.2 ms and back off to 5 ms, for up to ``patience`` seconds.
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


def _rmdir_quiet(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass


def _pids_parents() -> list[str]:
    """Writable places for a pids cgroup: our v1 ``pids`` cgroup, or the v2 root when it
    delegates ``pids``."""
    out: list[str] = []
    try:
        with open("/proc/self/cgroup", encoding="ascii") as handle:
            lines = handle.read().splitlines()
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
                    with open(os.path.join(root + path, "cgroup.subtree_control"), encoding="ascii") as handle:
                        if "pids" in handle.read().split() and path == "/":
                            out.append(root)
                except OSError:
                    continue
    return [p for p in out if os.access(p, os.W_OK)]


class PidNamespaceWatchdog:
    """Last-resort process limit: polls the processes of a pid namespace and kills its
    init (and so the whole namespace) once there are more than ``limit``."""

    def __init__(self, leader_pid: int, limit: int, interval: float = 0.02):
        self.leader_pid = leader_pid
        self.limit = limit
        self.interval = interval
        self.tripped = False
        import threading  # only for the last-resort watchdog

        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        """Start polling."""
        self._thread.start()

    def stop(self) -> None:
        """Stop polling."""
        self._stop.set()
        self._thread.join(timeout=1)

    def _namespace(self) -> str | None:
        # the sandbox's pid namespace: the one the leader's children live in
        try:
            return os.readlink(f"/proc/{self.leader_pid}/ns/pid_for_children")
        except OSError:
            return None

    def _loop(self) -> None:
        own = os.readlink("/proc/self/ns/pid")
        while not self._stop.wait(self.interval):
            target = self._namespace()
            if target is None or target == own:
                continue
            count = 0
            members: list[int] = []
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit():
                    continue
                try:
                    if os.readlink(f"/proc/{entry.name}/ns/pid") == target:
                        count += 1
                        members.append(int(entry.name))
                except OSError:
                    continue
            if count > self.limit:
                self.tripped = True
                for pid in [self.leader_pid, *members]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                return


def make_preexec(limits: Limits, cgroup: PidsCgroup | None = None,
                 then: Callable[[], None] | None = None) -> Callable[[], None]:
    """The function the child runs between fork and exec: join the cgroup, set the
    rlimits (before any user namespace is made, which
    records them), then ``then`` (e.g. the preview's overlay mount)."""
    pairs = rlimits(limits)

    def preexec() -> None:
        if cgroup is not None:
            cgroup.join_self()
        for which, values in pairs:
            resource.setrlimit(which, values)
        if then is not None:
            then()

    return preexec
