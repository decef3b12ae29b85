"""The last-resort process limit (``stockade.runtime.watchdog``), run for real under
bubblewrap: it finds the sandbox's pid namespace (made by bwrap for its child, not for
bwrap itself) and kills it once it holds more processes than the limit."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest

from stockade.runtime.execute import EXIT_PROCESS_LIMIT, run_confined
from stockade.runtime.limits import Limits, RunCgroup, nproc_enforced
from stockade.runtime.watchdog import PidNamespaceWatchdog, _children

BWRAP = shutil.which("bwrap")
pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pid namespaces are Linux only"),
              pytest.mark.skipif(BWRAP is None, reason="bubblewrap is not installed")]

SANDBOX = [BWRAP or "bwrap", "--unshare-user", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/",
           "--proc", "/proc", "--dev", "/dev"]
FORKS = "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 30 & done; wait"


def _watched(script: str, limit: int) -> tuple[bool, int]:
    """Run ``script`` in a sandbox under a watchdog: (whether it tripped, the returncode)."""
    sandbox = subprocess.Popen([*SANDBOX, "sh", "-c", script])
    watchdog = PidNamespaceWatchdog(sandbox.pid, limit)
    watchdog.start()
    try:
        returncode = sandbox.wait(timeout=20)
    finally:
        watchdog.stop()
        sandbox.kill()
    return watchdog.tripped, returncode


def test_the_watchdog_kills_a_namespace_with_too_many_processes() -> None:
    started = time.monotonic()
    assert _watched(FORKS, 4) == (True, -9)
    assert time.monotonic() - started < 15


def test_the_watchdog_leaves_a_namespace_within_the_limit_alone() -> None:
    assert _watched("sleep 0.3 & sleep 0.3 & wait", 8) == (False, 0)


def test_children_lists_the_direct_children() -> None:
    parent = subprocess.Popen(["sh", "-c", "sleep 5 & sleep 5 & wait"])
    try:
        for _ in range(100):
            if len(_children(parent.pid)) == 2:
                break
            time.sleep(0.02)
        assert len(_children(parent.pid)) == 2
    finally:
        parent.kill()
        parent.wait()


@pytest.mark.skipif(nproc_enforced(), reason="RLIMIT_NPROC is enforced for this user: no watchdog is needed")
def test_a_run_without_a_writable_cgroup_is_stopped_by_the_watchdog(monkeypatch: pytest.MonkeyPatch) -> None:
    # as root, where RLIMIT_NPROC does not hold: without a pids cgroup the watchdog must
    monkeypatch.setattr(RunCgroup, "create", classmethod(lambda cls, pids=None, memory=None, cpus=None: None))
    result = run_confined([*SANDBOX, "--"], ["sh", "-c", FORKS], {"PATH": "/usr/bin:/bin"},
                          Limits(timeout=20, processes=4))
    assert result.exit_status == EXIT_PROCESS_LIMIT and "processes" in result.limits_hit
    assert result.duration < 15


def test_the_watchdog_ends_with_its_leader_and_never_counts_a_later_process_with_its_pid() -> None:
    # the leader exits and is reaped: its pid may then be another sandbox's (pids wrap), so
    # the watchdog stops by itself instead of counting whatever process holds that pid next
    sandbox = subprocess.Popen([*SANDBOX, "true"])
    watchdog = PidNamespaceWatchdog(sandbox.pid, 1, interval=0.01)
    watchdog.start()
    sandbox.wait(timeout=20)
    deadline = time.monotonic() + 5
    while watchdog._thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not watchdog._thread.is_alive() and not watchdog.tripped
    watchdog.stop()
