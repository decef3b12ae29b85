"""The runtime's own process plumbing, for real: :func:`spawn` (fork + exec without
:mod:`subprocess`), the pids cgroup the child joins, and the audit trail's JSON encoder."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.runtime.audit import json_line
from stockade.runtime.execute import run_confined, spawn
from stockade.runtime.limits import Limits, PidsCgroup, nproc_enforced

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def _collect(pid: int, read_fd: int) -> tuple[int, str]:
    chunks = []
    while True:
        data = os.read(read_fd, 65536)
        if not data:
            break
        chunks.append(data)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode()


def _spawn_shell(script: str, **kwargs) -> tuple[int, str]:
    read_fd, write_fd = os.pipe()
    try:
        pid = spawn(["/bin/sh", "-c", script], {"PATH": "/usr/bin:/bin"}, stdout=write_fd, stderr=write_fd, **kwargs)
    finally:
        os.close(write_fd)
    return _collect(pid, read_fd)


def test_spawn_runs_the_command_with_exactly_the_given_environment(tmp_path: Path) -> None:
    code, out = _spawn_shell("echo \"$PATH|$HOME|$(pwd)\"; exit 7", cwd=str(tmp_path))
    assert code == 7 and out == f"/usr/bin:/bin||{tmp_path}\n"


def test_spawn_searches_a_bare_name_on_the_environment_path() -> None:
    read_fd, write_fd = os.pipe()
    pid = spawn(["echo", "found"], {"PATH": "/usr/bin:/bin"}, stdout=write_fd, stderr=write_fd)
    os.close(write_fd)
    assert _collect(pid, read_fd) == (0, "found\n")


def test_spawn_keeps_only_the_standard_streams_and_the_passed_descriptors() -> None:
    stray_read, stray_write = os.pipe()
    passed_read, passed_write = os.pipe()
    os.set_inheritable(stray_read, True)  # even an inheritable stray descriptor is closed
    try:
        code, out = _spawn_shell("ls /proc/self/fd | sort -n | tr '\\n' ' '", pass_fds=[passed_read])
    finally:
        for fd in (stray_read, stray_write, passed_write):
            os.close(fd)
    os.close(passed_read)
    fds = {int(word) for word in out.split()}
    assert code == 0
    # 0-2, the passed one, and the descriptor `ls` opens on /proc/self/fd itself
    assert {0, 1, 2, passed_read} <= fds and stray_read not in fds and stray_write not in fds
    assert len(fds - {0, 1, 2, passed_read}) <= 1


def test_spawn_starts_a_new_session_and_restores_ignored_signals() -> None:
    # field 6 of /proc/PID/stat is the session id (no `ps`: minimal images lack procps)
    code, out = _spawn_shell("set -- $(cat /proc/$$/stat); echo $6; grep -E '^SigIgn' /proc/self/status")
    lines = out.split("\n")
    assert code == 0 and int(lines[0]) != os.getsid(0)
    ignored = int(lines[1].split()[1], 16)
    assert not ignored & (1 << (13 - 1)), "SIGPIPE is still ignored in the child"  # Python ignores it


def test_spawn_sets_the_rlimits_before_exec() -> None:
    code, out = _spawn_shell("ulimit -f; ulimit -v", limits=Limits(file_size=1024 * 512, memory=1 << 30))
    assert code == 0 and out.split() == [str(512 * 1024 // 512), str((1 << 30) // 1024)]


def test_spawn_reports_an_exec_failure_as_oserror() -> None:
    read_fd, write_fd = os.pipe()
    try:
        with pytest.raises(OSError) as error:
            spawn(["/nonexistent/tool"], {}, stdout=write_fd, stderr=write_fd)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert error.value.errno == 2 and "exec" in str(error.value)


def test_spawn_reports_a_failed_chdir_and_a_failing_hook(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    hook = ("call", "tests.runtime.spawn_hooks:refuse", ("overlay refused",))
    try:
        with pytest.raises(OSError, match="chdir"):
            spawn(["/bin/true"], {}, cwd=str(tmp_path / "missing"), stdout=write_fd, stderr=write_fd)
        with pytest.raises(OSError, match="pre_exec: overlay refused"):
            spawn(["/bin/true"], {}, stdout=write_fd, stderr=write_fd, pre_exec=[hook])
        with pytest.raises(TypeError):  # no Python function runs between fork and exec
            spawn(["/bin/true"], {}, stdout=write_fd, stderr=write_fd, pre_exec=lambda: None)  # type: ignore[arg-type]
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_run_confined_turns_a_missing_tool_into_r506() -> None:
    from stockade.diagnostics import StockadeError

    with pytest.raises(StockadeError, match="R506"):
        run_confined(["/nonexistent/bwrap", "--"], ["true"], {}, Limits(timeout=5))


def test_run_confined_timeout_kills_a_command_that_closed_its_output() -> None:
    # the streams close at once, the process lives on: the wait on the pidfd must time out
    started = time.monotonic()
    result = run_confined(["/bin/sh", "-c", 'exec >/dev/null 2>&1; sleep 30', "sh"], [], {"PATH": "/usr/bin:/bin"},
                          Limits(timeout=0.5))
    assert result.exit_status == 124 and "timeout" in result.limits_hit
    assert time.monotonic() - started < 10


# -- the pids cgroup -----------------------------------------------------------------------


@pytest.fixture()
def cgroup():
    if nproc_enforced():
        pytest.skip("RLIMIT_NPROC is enforced: no cgroup is used")
    made = PidsCgroup.create(5)
    if made is None:
        pytest.skip("no writable pids cgroup hierarchy")
    yield made
    made.remove()


@LINUX_ONLY
def test_the_child_joins_the_cgroup_and_its_limit_holds(cgroup: PidsCgroup) -> None:
    code, out = _spawn_shell("cat /proc/self/cgroup; for i in 1 2 3 4 5 6 7 8; do sleep 5 & done; wait",
                             cgroup=cgroup)
    name = os.path.basename(cgroup.path)
    assert any(line.endswith("/" + name) for line in out.splitlines() if "pids" in line or line.startswith("0::"))
    assert "fork" in out.lower() or "resource temporarily unavailable" in out.lower() or code != 0
    assert cgroup.hit()


@LINUX_ONLY
def test_the_parent_stays_where_it_was(cgroup: PidsCgroup) -> None:
    before = Path("/proc/self/cgroup").read_text()
    _spawn_shell("true", cgroup=cgroup)
    assert Path("/proc/self/cgroup").read_text() == before


@LINUX_ONLY
def test_empty_cgroups_of_dead_runs_are_removed(cgroup: PidsCgroup) -> None:
    parent = os.path.dirname(cgroup.path)
    dead = 4_000_000  # above any pid_max: no process has it
    stale = os.path.join(parent, f"stockade-{dead}-1")
    os.mkdir(stale)
    try:
        again = PidsCgroup.create(5)
        assert again is not None
        again.remove()
        assert not os.path.exists(stale)
    finally:
        if os.path.exists(stale):
            os.rmdir(stale)


# -- the audit trail's JSON ----------------------------------------------------------------

_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_values = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner,
                                                                                             max_size=4),
                       max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), _values, max_size=6))
def test_json_line_is_what_json_dumps_gives(record: dict) -> None:
    assert json_line(record) == json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)


def test_json_line_edge_values() -> None:
    record = {"nan": float("nan"), "inf": [float("inf"), float("-inf")], "tuple": (1, "a"), 3: "int key",
              None: "none key", True: "bool key", 2.5: "float key", "path": Path("/w"), "ctl": "\x00\x1f\u2028\"\\"}
    assert json_line(record) == json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
    with pytest.raises(TypeError):
        json_line({("a",): 1})


# -- bubblewrap held by the parent -----------------------------------------------------------


def _bwrap_with_release(release: bytes | None, tmp_path: Path) -> tuple[int, str, bool]:
    """Run a held bwrap whose command leaves a marker; ``release`` written (or nothing, as when
    the parent dies before it) and the pipe closed.  Returns (status, output, marker made)."""
    import shutil

    from stockade.runtime.execute import held_argv

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("no bubblewrap")
    marker = tmp_path / "ran"
    argv = [bwrap, "--ro-bind", "/", "/", "--bind", str(tmp_path), str(tmp_path), "--",
            "/bin/sh", "-c", f"touch {marker}; echo ran"]
    args_read, args_write = os.pipe()
    read_fd, write_fd = os.pipe()
    try:
        pid = spawn(held_argv(argv, args_read), {"PATH": "/usr/bin:/bin"}, stdout=write_fd, stderr=write_fd,
                    pass_fds=[args_read])
    finally:
        os.close(write_fd)
        os.close(args_read)
    if release is not None:
        os.write(args_write, release)
    os.close(args_write)
    code, out = _collect(pid, read_fd)
    return code, out, marker.exists()


@LINUX_ONLY
def test_a_held_bwrap_runs_the_command_once_released(tmp_path: Path) -> None:
    from stockade.runtime.execute import RELEASE

    code, out, ran = _bwrap_with_release(RELEASE, tmp_path)
    assert (code, out, ran) == (0, "ran\n", True)


@LINUX_ONLY
def test_a_held_bwrap_never_runs_the_command_without_the_release(tmp_path: Path) -> None:
    # the parent died before it confined and released bwrap: bwrap must not go on unconfined
    code, out, ran = _bwrap_with_release(None, tmp_path)
    assert code != 0 and not ran and "--perms" in out


@LINUX_ONLY
def test_run_confined_holds_bwrap_and_sets_its_limits_from_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from stockade.runtime import execute

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("no bubblewrap")

    def no_helper(*args: object, **kwargs: object) -> int:
        raise AssertionError("a plain bwrap run with limits must not start the pre-exec helper (a Python start)")

    monkeypatch.setattr(execute, "_spawn_helper", no_helper)
    prefix = [os.path.realpath(bwrap), "--ro-bind", "/", "/", "--proc", "/proc", "--chdir", "/", "--"]
    out = bytearray()
    result = run_confined(prefix, ["/bin/sh", "-c", "ulimit -f; ulimit -v"],
                          {"PATH": "/usr/bin:/bin"}, Limits(file_size=512 * 1024, memory=1 << 30, timeout=30),
                          stdout=out.extend, stderr=out.extend)
    lines = out.decode().splitlines()
    assert result.exit_status == 0 and lines[:2] == [str(1024), str((1 << 30) // 1024)], out
