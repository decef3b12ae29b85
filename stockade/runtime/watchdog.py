"""The last-resort process limit: a watchdog over the sandbox's pid namespace.

Used only when neither ``RLIMIT_NPROC`` (not enforced for host root) nor a writable pids
cgroup can cap the number of processes (see :mod:`stockade.runtime.limits`): a thread
polls ``/proc`` for the processes of the sandbox's pid namespace and kills its init — and
with it the whole namespace — once there are more than the limit.
"""

from __future__ import annotations

import _signal  # the C module behind `signal`, whose IntEnum wrappers import `enum`
import os
import threading


class PidNamespaceWatchdog:
    """Last-resort process limit: polls the processes of a pid namespace and kills its
    init (and so the whole namespace) once there are more than ``limit``."""

    def __init__(self, leader_pid: int, limit: int, interval: float = 0.02):
        self.leader_pid = leader_pid
        self.limit = limit
        self.interval = interval
        self.tripped = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        """Start polling."""
        self._thread.start()

    def stop(self) -> None:
        """Stop polling."""
        self._stop.set()
        self._thread.join(timeout=1)

    def _namespace(self, own: str) -> str | None:
        """The sandbox's pid namespace: that of a child of the leader (bwrap clones its
        child into the new namespace; its own stays the parent's), or the namespace the
        leader's children are made in (a leader that unshared before forking)."""
        for pid in _children(self.leader_pid):
            try:
                namespace = os.readlink(f"/proc/{pid}/ns/pid")
            except OSError:
                continue
            if namespace != own:
                return namespace
        try:
            return os.readlink(f"/proc/{self.leader_pid}/ns/pid_for_children")
        except OSError:
            return None

    def _loop(self) -> None:
        own = os.readlink("/proc/self/ns/pid")
        # the leader as first seen (its start time): once it has exited and been reaped its
        # pid may be another sandbox's, whose namespace must not be counted as this one's
        started = _start_time(self.leader_pid)
        target: str | None = None
        while not self._stop.wait(self.interval):
            if started is None or _start_time(self.leader_pid) != started:
                return  # (the leader is gone: the sandbox it led has ended)
            if target is None:  # (found once: the sandbox's namespace does not change)
                found = self._namespace(own)
                if found is None or found == own:
                    continue
                target = found
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
                        os.kill(pid, _signal.SIGKILL)
                    except OSError:
                        pass
                return



def _start_time(pid: int) -> bytes | None:
    """The start time of process ``pid`` (``/proc/PID/stat`` field 22), None when it is gone:
    with the pid, it names one process (a pid is reused once its process is reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[19] if len(fields) > 19 else None

def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (from ``/proc/PID/task/*/children`` when the kernel
    has it, else by scanning every process's parent)."""
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                out.extend(int(word) for word in handle.read().split())
        return out
    except (OSError, ValueError):
        pass
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(pid).encode():
            out.append(int(entry))
    return out
