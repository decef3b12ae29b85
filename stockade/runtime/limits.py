"""Resource limits of a confined run: rlimits, the run's cgroup, and killing the whole tree.

From the policy's ``limits`` block (:meth:`Limits.from_ir`):

* ``memory`` → a total for the whole process tree: the run's memory cgroup
  (:class:`RunCgroup`: v1 ``memory.limit_in_bytes`` + ``memory.memsw.limit_in_bytes``, or
  v2 ``memory.max`` + ``memory.swap.max`` in a delegated subtree), which also counts the
  pages of tmpfs files the tree writes (``/dev/shm``); and ``RLIMIT_AS`` (each process's
  address space) as well.  When no memory cgroup can be made (a normal user without a
  delegated cgroup v2 subtree) only ``RLIMIT_AS`` holds, per process, and the run says so
  (:data:`MEMORY_PER_PROCESS`);
* ``cpu`` → ``RLIMIT_CPU`` (soft at the limit: ``SIGXCPU``; hard one second later);
* ``processes`` → ``RLIMIT_NPROC``.  The kernel counts it per *real uid* (through every
  user namespace level up to the host), so for an ordinary user it caps the sandbox's
  processes plus the user's others.  It is **not enforced for host root** (the kernel
  exempts ``INIT_USER``; a sandbox started by root runs as kuid 0 even inside the user
  namespace).  So when running as root the runtime also puts the sandbox in a ``pids``
  cgroup with ``pids.max`` (cgroup v1 ``pids`` hierarchy, or cgroup v2 when usable), and if
  no cgroup is writable, a watchdog (:mod:`stockade.runtime.watchdog`) counts the processes
  of the sandbox's pid namespace and kills the namespace when the count passes the limit;
* ``filesize`` → ``RLIMIT_FSIZE`` (``SIGXFSZ`` / ``EFBIG``): the largest file any process
  of the run may write;
* ``disk`` → what the run may leave written outside the workspace: see
  :mod:`stockade.runtime.disk` (a size-limited, discarded layer over every writable path
  outside the workspace);
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

from stockade.runtime.record import Record

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

#: Names of limit hits reported by a run.
LIMIT_NAMES = ("timeout", "memory", "cpu", "cpus", "processes", "output", "file_size", "disk")

#: The period of the CPU bandwidth limit (``cpus``), microseconds.
CPU_PERIOD_US = 100_000
#: The run-time warning when ``cpus`` cannot be applied.
CPUS_UNENFORCED = ("limit `cpus` is not enforced: no writable cpu cgroup (run as root, or from a delegated "
                   "cgroup v2 subtree with the cpu controller)")
#: The run-time warning when ``memory`` cannot be a total for the process tree.
MEMORY_PER_PROCESS = ("limit `memory` holds per process only (RLIMIT_AS), not for the whole process tree: "
                      "no writable memory cgroup (run as root, or from a delegated cgroup v2 subtree)")


class Limits(Record):
    """The resource limits of one run (None: unlimited)."""

    timeout: float | None = None
    memory: int | None = None
    cpu: float | None = None
    cpus: float | None = None
    processes: int | None = None
    output: int | None = None
    file_size: int | None = None
    disk: int | None = None

    @classmethod
    def from_ir(cls, ir: Any) -> Limits:
        """The limits a compiled policy sets (tightest across layers)."""
        def get(name: str) -> float | None:
            return ir.limit(name)

        def as_int(value: float | None) -> int | None:
            return None if value is None else max(int(value), 0)

        return cls(timeout=get("timeout"), memory=as_int(get("memory")), cpu=get("cpu"), cpus=get("cpus"),
                   processes=as_int(get("processes")), output=as_int(get("output")),
                   file_size=as_int(get("filesize")), disk=as_int(get("disk")))

    def to_json(self) -> dict:
        """The limits as a JSON object."""
        return {name: getattr(self, name) for name in LIMIT_NAMES}


def rlimits(limits: Limits) -> list[tuple[int, tuple[int, int]]]:
    """The ``(resource, (soft, hard))`` pairs to set on the child before it can fork."""
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


class RunCgroup:
    """The run's own cgroup: ``pids.max`` (used when ``RLIMIT_NPROC`` is not enforced) and
    ``memory`` as a total for the whole process tree; :meth:`create` returns None when no
    hierarchy that has one of the controllers asked for is writable.

    One directory per hierarchy: on cgroup v1 each controller has its own (``memory``,
    ``pids``); on cgroup v2 one directory holds both.  A v1 controller is used where the
    machine has one (a controller bound to v1 is not available in v2); otherwise the v2
    hierarchy, in the nearest ancestor of our own cgroup that delegates the controllers
    to its children and whose ``cgroup.procs`` we can write (a delegated subtree, as a
    normal user gets from systemd; the root cgroup as root).

    Memory: v1 ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes`` (memory plus
    swap); v2 ``memory.max``, ``memory.swap.max = 0`` and ``memory.oom.group = 1`` (an OOM
    kill takes the whole cgroup).  Pages of tmpfs files (``/dev/shm``, the ``disk`` layer)
    are charged to the cgroup of the process that writes them.

    A process joins before it can fork (:meth:`join`: the parent moves a held bubblewrap, or
    the pre-exec helper of :mod:`stockade.runtime.prexec` moves itself).  On a cgroup v1
    hierarchy it is written to ``tasks``, not ``cgroup.procs``: moving a whole thread group
    takes ``cgroup_threadgroup_rwsem`` for writing, which waits for an RCU grace period (5–15
    ms on this machine class, on every run), while moving one thread does not — and the
    process moved has one thread (bwrap waiting for its arguments; the helper), so that is
    the whole process.
    """

    def __init__(self, dirs: list[tuple[str, str]], pids_dir: str | None = None, memory_dir: str | None = None,
                 memory_v1: bool = False, cpu_dir: str | None = None):
        #: ``(directory, the file a process joins through)`` for each hierarchy
        self.dirs = dirs
        self.path = dirs[0][0]
        self.pids_dir = pids_dir
        self.memory_dir = memory_dir
        self.memory_v1 = memory_v1
        self.cpu_dir = cpu_dir
        self._oom_fd: int | None = None

    @classmethod
    def create(cls, pids: int | None = None, memory: int | None = None, cpus: float | None = None) -> RunCgroup | None:
        """Make the run's cgroup with the limits given (None: not asked for) under our own
        cgroups, where possible (removing empty ones left behind by runs that were killed);
        check :attr:`pids_dir`, :attr:`memory_dir` and :attr:`cpu_dir` for what was set up.

        ``cpus`` is a CPU bandwidth share: ``0.5`` lets the whole tree use half of one CPU
        (v1 ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``, v2 ``cpu.max``)."""
        wanted = [name for name, value in (("pids", pids), ("memory", memory), ("cpu", cpus)) if value is not None]
        if not wanted:
            return None
        dirs: list[tuple[str, str]] = []
        got: dict[str, str] = {}
        memory_v1 = False
        name = f"stockade-{os.getpid()}-{get_ident() % 100000}"
        for parent, controllers, v1 in _parents(wanted):
            controllers = [c for c in controllers if c not in got]
            if not controllers:
                continue
            _remove_stale(parent)
            path = os.path.join(parent, name)
            try:
                os.mkdir(path)
            except FileExistsError:
                pass
            except OSError:
                continue
            try:
                for controller in controllers:
                    if controller == "pids":
                        _write(os.path.join(path, "pids.max"), str(pids))
                    elif controller == "cpu":
                        quota = max(1000, int(float(cpus or 0) * CPU_PERIOD_US))
                        if v1:
                            _write(os.path.join(path, "cpu.cfs_period_us"), str(CPU_PERIOD_US))
                            _write(os.path.join(path, "cpu.cfs_quota_us"), str(quota))
                        else:
                            _write(os.path.join(path, "cpu.max"), f"{quota} {CPU_PERIOD_US}")
                    elif v1:
                        _write(os.path.join(path, "memory.limit_in_bytes"), str(memory))
                        _write_optional(os.path.join(path, "memory.memsw.limit_in_bytes"), str(memory))
                    else:
                        _write(os.path.join(path, "memory.max"), str(memory))
                        _write_optional(os.path.join(path, "memory.swap.max"), "0")
                        _write_optional(os.path.join(path, "memory.oom.group"), "1")
            except OSError:
                _rmdir_quiet(path)
                continue
            dirs.append((path, "tasks" if v1 else "cgroup.procs"))
            for controller in controllers:
                got[controller] = path
                if controller == "memory":
                    memory_v1 = v1
        if not dirs:
            return None
        return cls(dirs, got.get("pids"), got.get("memory"), memory_v1, got.get("cpu"))

    def join(self, pid: int) -> None:
        """Move process ``pid``, which must be single-threaded, into the cgroup (before it
        can fork; see the class docstring)."""
        for path, join in self.dirs:
            _write(os.path.join(path, join), str(pid))

    def oom_events(self) -> int | None:
        """A descriptor that becomes readable when the kernel's OOM killer acts in the cgroup
        (cgroup v1, through ``cgroup.event_control``), or None: on v2 ``memory.oom.group``
        already kills the whole tree.  The caller stops the tree when it fires — also when
        the notification is an ancestor's (v1 notifies a cgroup's descendants too): the
        safe side."""
        if self.memory_dir is None or not self.memory_v1:
            return None
        if self._oom_fd is None:
            try:
                efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            except (AttributeError, OSError):
                return None
            try:
                control = os.open(os.path.join(self.memory_dir, "memory.oom_control"), os.O_RDONLY | os.O_CLOEXEC)
                try:
                    _write(os.path.join(self.memory_dir, "cgroup.event_control"), f"{efd} {control}")
                finally:
                    os.close(control)
            except OSError:
                os.close(efd)
                return None
            self._oom_fd = efd
        return self._oom_fd

    def pids(self) -> list[int]:
        """The processes currently in the cgroup."""
        members: set[int] = set()
        for path, _ in self.dirs:
            try:
                with open(os.path.join(path, "cgroup.procs"), "rb") as handle:
                    members.update(int(line) for line in handle.read().split())
            except OSError:
                pass
        return sorted(members)

    def hit(self) -> bool:
        """Whether a fork was refused because of ``pids.max``."""
        return self.pids_dir is not None and _event_count(os.path.join(self.pids_dir, "pids.events"), b"max") > 0

    def memory_hit(self) -> bool:
        """Whether the kernel's OOM killer killed a process of the cgroup (the memory total
        was reached and nothing could be reclaimed)."""
        if self.memory_dir is None:
            return False
        if self.memory_v1:
            return _event_count(os.path.join(self.memory_dir, "memory.oom_control"), b"oom_kill") > 0
        events = os.path.join(self.memory_dir, "memory.events")
        return _event_count(events, b"oom_kill") > 0 or _event_count(events, b"oom_group_kill") > 0

    def kill_all(self) -> None:
        """SIGKILL every process in the cgroup, and any that the killed ones forked before
        they died: read the members again until a read shows no process not yet killed.

        A process that was sent SIGKILL stays listed until it is reaped (an orphan waits
        for init), so reading until the list is empty could spin; no process that has a
        fatal signal pending can fork, so a read without a new member ends it.
        """
        killed: set[int] = set()
        for _ in range(1000):  # bounded: each round kills every member seen
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
        """Kill what is left and remove the cgroup directories.

        The kernel refuses the ``rmdir`` (``EBUSY``) until the last exited process is
        released — an orphaned one (bubblewrap's namespace init outlives its parent by a
        moment) only when init reaps it.  So the ``rmdir`` is retried for ``patience``
        seconds (from 0.2 ms, backing off to 5 ms); a cgroup still busy after that holds
        only killed processes, and the next run's :meth:`create` removes it once its run
        is gone (:func:`_remove_stale`).
        """
        self.kill_all()
        if self._oom_fd is not None:
            os.close(self._oom_fd)
            self._oom_fd = None
        deadline = time.monotonic() + patience
        for path, _ in self.dirs:
            pause = 0.0002
            while True:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(pause)
                    pause = min(pause * 2, 0.005)


class PidsCgroup(RunCgroup):
    """A run cgroup with ``pids.max`` only (the form the process limit alone needs)."""

    @classmethod
    def create(cls, limit: int) -> RunCgroup | None:  # type: ignore[override]  # takes only the pids limit
        """Make a cgroup with ``pids.max = limit`` (see :meth:`RunCgroup.create`)."""
        made = RunCgroup.create(pids=limit)
        return made if made is not None and made.pids_dir is not None else None


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


def _write_optional(path: str, text: str) -> None:
    """Write a control file that the kernel may lack (no swap accounting, older kernels)."""
    try:
        _write(path, text)
    except FileNotFoundError:
        pass


def _event_count(path: str, key: bytes) -> int:
    """The value of ``key`` in a flat-keyed cgroup file (``pids.events``, ``memory.events``,
    v1 ``memory.oom_control``); 0 when absent or unreadable."""
    try:
        with open(path, "rb") as handle:
            for line in handle.read().splitlines():
                name, _, value = line.partition(b" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _parents(wanted: list[str], lines: list[str] | None = None, base: str = "/sys/fs/cgroup",
             v2_roots: tuple[str, ...] = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")) -> list[tuple[str, list[str], bool]]:
    """Writable places for the run's cgroup: ``(parent directory, controllers it gives,
    cgroup v1?)`` — our own v1 cgroup of each wanted controller, then for the others our
    v2 cgroup's parent when it delegates them to its children (``lines``: those of
    ``/proc/self/cgroup``; ``base`` and ``v2_roots``: where the hierarchies are mounted)."""
    out: list[tuple[str, list[str], bool]] = []
    if lines is None:
        try:
            with open("/proc/self/cgroup", "rb") as handle:
                lines = handle.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return out
    on_v1: set[str] = set()
    unified = None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if not controllers:
            unified = path
            continue
        names = controllers.split(",")
        for controller in wanted:
            if controller in names:
                on_v1.add(controller)
                for mount in (f"{base}/{controllers}", f"{base}/{controller}"):
                    if os.path.isdir(mount):
                        parent = mount + path.rstrip("/")
                        if os.access(parent, os.W_OK):
                            out.append((parent, [controller], True))
                        break
    rest = [c for c in wanted if c not in on_v1]
    if rest and unified is not None:
        for root in v2_roots:
            if not os.path.exists(os.path.join(root, "cgroup.controllers")):
                continue  # not a cgroup v2 mount
            # our own cgroup holds us, so it cannot give controllers to children (v2 has no
            # processes in inner nodes, the root excepted): the run's cgroup is a sibling, in
            # our parent — never further up, where it would leave our ancestors' limits
            own = unified.rstrip("/") or "/"
            parent = root + (os.path.dirname(own) if own != "/" else "").rstrip("/")
            try:
                with open(os.path.join(parent, "cgroup.subtree_control"), "rb") as handle:
                    given = handle.read().decode().split()
            except OSError:
                given = []
            usable = [c for c in rest if c in given]
            if usable and os.access(parent, os.W_OK) and os.access(os.path.join(parent, "cgroup.procs"), os.W_OK):
                out.append((parent, usable, False))
            break
    return out
