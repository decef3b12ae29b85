"""Limits that hold for the whole process tree, and the disk limits, attacked for real under
bubblewrap through the library run API (:func:`stockade.runtime.session.run`).

* ``memory``: two children each take 60 % of the limit → the tree is stopped (a memory
  cgroup counts the tree, not each process); 600 MiB written into ``/dev/shm`` under
  ``memory 256MiB`` fails (tmpfs pages are charged to the cgroup);
* ``filesize``: a 2 MiB file under ``filesize 1MiB`` fails;
* ``disk``: 200 MiB written to ``/tmp`` under ``disk 64MiB`` fails inside the sandbox and
  nothing of it stays on the host; the workspace is written directly.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.runtime.limits import RunCgroup
from stockade.runtime.session import RunOutcome, run
from tests.runtime.conftest import box_root

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")

MiB = 1 << 20
ROOT = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def _policy(limits: str, write: str = "") -> str:
    return ("policy \"limits\"\n\nfilesystem {\n    read  /\n    deny  ~/.ssh\n"
            f"    write $WORKSPACE $TMPDIR /tmp {write}\n}}\n\n"
            f"limits {{\n{limits}\n}}\n\ncommands {{\n    unknown-effects allow\n}}\n")


class Machine:
    """A private home, workspace and TMPDIR (outside /tmp), and stockade's own state."""

    def __init__(self, root: Path, state: Path):
        self.root = root
        self.home = root / "home"
        self.workspace = self.home / "ws"
        self.tmpdir = root / "tmp"
        self.state = state
        for path in (self.workspace, self.tmpdir, self.home / ".ssh"):
            path.mkdir(parents=True, exist_ok=True)

    def run(self, command: str, limits: str, write: str = "", **options) -> tuple[RunOutcome, str, str]:
        policy = self.root / f"p-{uuid.uuid4().hex[:8]}.policy"
        policy.write_text(_policy(limits, write))
        out, err = bytearray(), bytearray()
        environ = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home), "TMPDIR": str(self.tmpdir),
                   "LANG": "C.UTF-8"}
        outcome = run(command, policy=str(policy), workspace=str(self.workspace), approve=True,
                      audit=str(self.state / "audit.jsonl"), environ=environ, stdout=out.extend,
                      stderr=err.extend, **options)
        return outcome, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def audit(self) -> list[dict]:
        return [json.loads(line) for line in (self.state / "audit.jsonl").open()]


@pytest.fixture()
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("STOCKADE_CACHE_DIR", raising=False)
    monkeypatch.delenv("STOCKADE_AUDIT", raising=False)
    root = box_root()
    try:
        yield Machine(root, tmp_path)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _memory_cgroup_available() -> bool:
    made = RunCgroup.create(memory=256 * MiB)
    if made is None:
        return False
    try:
        return made.memory_dir is not None
    finally:
        made.remove()


needs_memory_cgroup = pytest.mark.skipif(not _memory_cgroup_available(), reason="no writable memory cgroup")

# each child takes 60 % of `memory 256MiB` (touched, not just reserved), then waits
_HOG = f"{PYTHON} -I -S -c 'import time; x = b\"a\" * ({int(0.6 * 256)} << 20); time.sleep(20); print(\"SURVIVED\")'"


@needs_memory_cgroup
def test_two_children_each_under_the_limit_stop_the_tree_together(machine: Machine) -> None:
    started = time.monotonic()
    outcome, out, err = machine.run(f"{_HOG} & {_HOG} & wait; echo TREE-DONE",
                                    "    memory 256MiB\n    processes 64\n    timeout 60s")
    assert outcome.ran
    assert "memory" in outcome.limits_hit, (out, err)
    assert "SURVIVED" not in out and "TREE-DONE" not in out  # the whole tree was stopped
    assert time.monotonic() - started < 20
    assert outcome.exit_status == 137 and not outcome.warnings
    assert machine.audit()[-1]["limits_hit"] == ["memory"]


@needs_memory_cgroup
def test_dev_shm_is_counted_in_the_memory_limit(machine: Machine) -> None:
    # in a script, where the analyzer does not see the write (the sandbox is what must hold)
    (machine.workspace / "fill.sh").write_text("head -c 600M /dev/zero > /dev/shm/fill; echo rc=$?; "
                                               "echo size=$(stat -c %s /dev/shm/fill)\n")
    outcome, out, err = machine.run("sh fill.sh", "    memory 256MiB\n    timeout 60s")
    assert "size=629145600" not in out, (out, err)
    assert "memory" in outcome.limits_hit


def test_dev_shm_is_capped_at_the_memory_limit_without_a_cgroup(machine: Machine,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # where no memory cgroup can be made, /dev/shm is a tmpfs of its own no larger than `memory`
    monkeypatch.setattr(RunCgroup, "create", classmethod(lambda cls, pids=None, memory=None, cpus=None: None))
    (machine.workspace / "fill.sh").write_text("head -c 600M /dev/zero > /dev/shm/fill; echo rc=$?; "
                                               "echo size=$(stat -c %s /dev/shm/fill)\n")
    outcome, out, err = machine.run("sh fill.sh", "    memory 256MiB\n    timeout 60s")
    assert "rc=0" not in out and "no space left on device" in err.lower(), (out, err)
    assert f"size={256 * MiB}" in out and any("per process" in w for w in outcome.warnings)


def test_a_file_larger_than_filesize_fails(machine: Machine) -> None:
    outcome, out, err = machine.run("head -c 2M /dev/zero > big; echo rc=$?", "    filesize 1MiB")
    assert "file_size" in outcome.limits_hit, (out, err)
    assert (machine.workspace / "big").stat().st_size <= MiB
    small, _, _ = machine.run("head -c 512K /dev/zero > small", "    filesize 1MiB")
    assert small.exit_status == 0 and (machine.workspace / "small").stat().st_size == 512 * 1024


def test_disk_limit_stops_writes_outside_the_workspace_and_none_persist(machine: Machine) -> None:
    name = f"stockade-disk-{uuid.uuid4().hex}"
    host_tmp, host_tmpdir = Path("/tmp") / name, machine.tmpdir / name
    seen = Path("/tmp") / f"{name}-seen"
    seen.write_text("host file\n")
    notes = machine.root / "notes.txt"  # a writable file outside the workspace: read-only under `disk`
    notes.write_text("notes\n")
    try:
        outcome, out, err = machine.run(
            f"head -c 200M /dev/zero > /tmp/{name}; echo rc=$?; head -c 1K /dev/zero > $TMPDIR/{name}; "
            f"cat /tmp/{name}-seen; rm -f /tmp/{name}-seen; echo kept > kept.txt; echo x >> {notes}; "
            "echo notes=$?", "    disk 64MiB", write=str(notes))
        assert outcome.ran and "rc=0" not in out, (out, err)
        assert "no space left on device" in err.lower() and "disk" in outcome.limits_hit
        assert "host file" in out  # the host's files are visible ...
        assert not host_tmp.exists() and not host_tmpdir.exists()  # ... and nothing written stays
        assert seen.read_text() == "host file\n"  # nor is a deletion carried out on the host
        assert (machine.workspace / "kept.txt").read_text() == "kept\n"  # the workspace is written directly
        assert not list(machine.tmpdir.iterdir())
        assert "notes=0" not in out and notes.read_text() == "notes\n"
    finally:
        for path in (host_tmp, seen, host_tmpdir):
            if path.is_file() and not path.is_symlink():
                path.unlink()


def test_disk_limit_with_the_workspace_inside_a_writable_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the workspace under /tmp: /tmp is overlaid, the workspace bound back over it
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    machine = Machine(tmp_path / "m", tmp_path)
    outcome, out, err = machine.run(
        "echo inside > in-ws.txt; echo outside > ../../outside.txt; head -c 100M /dev/zero > ../../big; echo rc=$?",
        "    disk 16MiB")
    assert outcome.ran and "rc=0" not in out, (out, err)
    assert (machine.workspace / "in-ws.txt").read_text() == "inside\n"
    assert not (machine.root / "outside.txt").exists() and not (machine.root / "big").exists()


def test_disk_limit_with_a_preview(machine: Machine) -> None:
    # the preview's overlay of the workspace and the disk layer in the same child
    name = f"stockade-disk-{uuid.uuid4().hex}"
    (machine.workspace / "fill.sh").write_text(f"head -c 100M /dev/zero > $TMPDIR/{name}; echo rc=$?; "
                                               "echo new > new.txt\n")
    outcome, out, err = machine.run("sh fill.sh", "    disk 16MiB", preview=True, apply=False)
    assert "rc=0" not in out and "disk" in outcome.limits_hit, (out, err)
    assert outcome.preview is not None and [c.path for c in outcome.preview.changes] == ["new.txt"]
    assert not (machine.workspace / "new.txt").exists() and not (machine.tmpdir / name).exists()


def test_disk_limit_refuses_a_writable_root(machine: Machine) -> None:
    """`write /` with `disk`: refused.  Through `stockade run` such a policy is refused even
    earlier (the bubblewrap binary would be sandbox-writable, R512), so the disk layer's own
    refusal is checked on the compiled argv itself."""
    from stockade.backends.base import compile_ir
    from stockade.compiler.pipeline import compile_policy
    from stockade.diagnostics import StockadeError
    from stockade.runtime.disk import disk_pre_exec
    from stockade.runtime.plan import strip_environment

    policy = machine.root / "root.policy"
    policy.write_text('policy "w"\nfilesystem {\n    write /\n}\nlimits {\n    disk 1MiB\n}\n'
                      'commands {\n    unknown-effects allow\n}\n')
    marker = machine.workspace / "ran"
    with pytest.raises(StockadeError) as info:
        run(["/usr/bin/touch", str(marker)], policy=str(policy), workspace=str(machine.workspace), approve=True,
            audit=str(machine.state / "audit.jsonl"), environ={"PATH": "/usr/bin:/bin", "HOME": str(machine.home)})
    assert info.value.diagnostics[0].code in ("R512", "R545") and not marker.exists()
    ir = compile_policy(str(policy), workspace=str(machine.workspace), home=str(machine.home),
                        tmpdir=str(machine.tmpdir)).ir
    argv = strip_environment(compile_ir(ir, "bwrap").data["argv"])
    with pytest.raises(StockadeError) as info:
        disk_pre_exec(argv, str(machine.workspace), 1 << 20)
    assert info.value.diagnostics[0].code == "R545" and "`/` is writable" in info.value.diagnostics[0].message


def test_without_a_memory_cgroup_the_run_warns_that_memory_is_per_process(machine: Machine,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RunCgroup, "create", classmethod(lambda cls, pids=None, memory=None, cpus=None: None))
    outcome, _, _ = machine.run("true", "    memory 256MiB")
    assert outcome.exit_status == 0
    assert any("per process" in w for w in outcome.warnings)
    assert any("per process" in w for w in machine.audit()[-1]["warnings"])
    assert "per process" in json.dumps(outcome.to_json())


_AS_USER = """
import json, sys
from stockade.runtime.execute import run_confined
from stockade.runtime.limits import Limits
job = json.load(open(sys.argv[1]))
out, err = bytearray(), bytearray()
result = run_confined(job["prefix"], ["sh", "fill.sh"], job["env"], Limits(**job["limits"]), cwd=job["ws"],
                      stdout=out.extend, stderr=err.extend)
print(json.dumps({**result.to_json(), "out": out.decode(), "err": err.decode()}))
"""


@pytest.mark.skipif(os.getuid() != 0 or shutil.which("setpriv") is None or not os.path.exists("/usr/bin/python3"),
                    reason="needs root to become a normal user")
def test_as_a_normal_user_disk_holds_and_memory_warns(tmp_path: Path) -> None:
    # uid 65534 has no writable memory cgroup here: `memory` holds per process and the run
    # says so; the disk layer is mounted in a user namespace of the user's own
    import subprocess

    from stockade.backends.base import compile_ir
    from stockade.compiler.pipeline import compile_policy
    from stockade.runtime.plan import strip_environment
    from stockade.runtime.sandbox import harden_bwrap_argv

    root = box_root()
    try:
        os.chmod(root, 0o755)
        home, ws, tmpdir = root / "home", root / "home" / "ws", root / "tmp"
        for path in (ws, tmpdir):
            path.mkdir(parents=True)
        policy = root / "p.policy"
        notes = home / "notes.txt"
        notes.parent.mkdir(parents=True, exist_ok=True)
        notes.write_text("notes\n")
        policy.write_text(_policy("    memory 256MiB\n    disk 16MiB", write=str(notes)))
        (ws / "fill.sh").write_text(f"head -c 100M /dev/zero > $TMPDIR/fill; echo rc=$?; echo ws > ws.txt; "
                                    f"echo planted >> {notes}; echo notes=$?\n")
        ir = compile_policy(str(policy), workspace=str(ws), home=str(home), tmpdir=str(tmpdir)).ir
        prefix = harden_bwrap_argv(strip_environment(compile_ir(ir, "bwrap").data["argv"]), cwd=str(ws))
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(tmpdir)}
        job = root / "job.json"
        job.write_text(json.dumps({"prefix": prefix, "env": env, "ws": str(ws),
                                   "limits": {"memory": 256 * MiB, "disk": 16 * MiB, "timeout": 60}}))
        for path in (root, *root.rglob("*")):
            os.chown(path, 65534, 65534)
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                               "/usr/bin/python3", "-I", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
                               + _AS_USER, str(job)], cwd=ws, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert "rc=0" not in result["out"] and "no space left on device" in result["err"].lower(), result
        assert "disk" in result["limits_hit"]
        assert any("per process" in w for w in result["warnings"])
        assert not (tmpdir / "fill").exists() and (ws / "ws.txt").read_text() == "ws\n"
        assert "notes=0" not in result["out"] and notes.read_text() == "notes\n"  # a file: read-only
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_cli_prints_run_warnings_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from stockade.cli.run_output import render_outcome
    from stockade.runtime.limits import MEMORY_PER_PROCESS, Limits

    outcome = RunOutcome("allow", (), True, ("true",), "true", "/w", "/a", exit_status=0, limits=Limits(memory=1),
                         warnings=(MEMORY_PER_PROCESS,))
    assert render_outcome(outcome, True, {"out": bytearray(), "err": bytearray()}, None) == 0
    assert f"stockade: warning: {MEMORY_PER_PROCESS}" in capsys.readouterr().err


def test_the_disk_layer_covers_the_outermost_writable_paths_outside_the_workspace() -> None:
    from stockade.runtime.disk import writable_roots

    prefix = ["bwrap", "--ro-bind", "/", "/", "--bind", "/tmp", "/tmp", "--bind-try", "/tmp/a", "/tmp/a",
              "--bind", "/home/u/ws", "/home/u/ws", "--bind", "/home/u/.cache", "/home/u/.cache",
              "--ro-bind", "/etc", "/etc", "--tmpfs", "/run", "--chdir", "/home/u/ws", "--", "--bind", "/x", "/x"]
    assert writable_roots(prefix, "/home/u/ws") == ["/tmp", "/home/u/.cache"]
    assert writable_roots(["bwrap", "--bind", "/home/u", "/home/u", "--"], "/home/u/ws") == ["/home/u"]


def test_the_run_cgroup_goes_where_the_controllers_are(tmp_path: Path) -> None:
    from stockade.runtime.limits import _parents

    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    (v1 / "memory" / "job").mkdir(parents=True)
    (v1 / "pids").mkdir()
    app = v2 / "user.slice" / "app.slice"
    (app / "term.scope").mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu memory pids\n")
    (app / "cgroup.subtree_control").write_text("memory pids\n")
    (app / "cgroup.procs").write_text("")
    hybrid = ["4:memory:/job", "8:pids:/", "0::/"]
    assert sorted(_parents(["pids", "memory"], hybrid, str(v1), (str(v2),))) == [
        (str(v1 / "memory" / "job"), ["memory"], True), (str(v1 / "pids"), ["pids"], True)]
    # a delegated v2 subtree: a sibling of our own cgroup, in its parent; never further up
    unified = ["0::/user.slice/app.slice/term.scope"]
    assert _parents(["memory"], unified, str(v1), (str(v2),)) == [(str(app), ["memory"], False)]
    (app / "cgroup.subtree_control").write_text("pids\n")
    assert _parents(["memory", "pids"], unified, str(v1), (str(v2),)) == [(str(app), ["pids"], False)]
    (app / "cgroup.subtree_control").write_text("cpu\n")
    assert _parents(["memory"], unified, str(v1), (str(v2),)) == []


def test_a_writable_path_swapped_for_a_symlink_fails_closed_under_disk(machine: Machine) -> None:
    # the plan binds `scratch`; before the run it becomes a symlink to a directory the policy
    # does not let the sandbox write: the disk layer refuses to follow it
    from stockade.backends.base import compile_ir
    from stockade.compiler.pipeline import compile_policy
    from stockade.diagnostics import StockadeError
    from stockade.runtime.execute import run_confined
    from stockade.runtime.limits import Limits
    from stockade.runtime.plan import strip_environment
    from stockade.runtime.sandbox import harden_bwrap_argv

    scratch, target = machine.root / "scratch", machine.root / "target"
    scratch.mkdir()
    target.mkdir()
    policy = machine.root / "s.policy"
    policy.write_text(f'filesystem {{\n    read /\n    write $WORKSPACE "{scratch}"\n}}\n')
    ir = compile_policy(str(policy), workspace=str(machine.workspace), home=str(machine.home)).ir
    prefix = harden_bwrap_argv(strip_environment(compile_ir(ir, "bwrap").data["argv"]), cwd=str(machine.workspace))
    scratch.rmdir()
    scratch.symlink_to(target)
    with pytest.raises(StockadeError) as info:
        run_confined(prefix, ["/bin/sh", "-c", f"echo x > {scratch}/planted"], {"PATH": "/usr/bin:/bin"},
                     Limits(disk=MiB, timeout=30), cwd=str(machine.workspace), stdout=lambda b: None,
                     stderr=lambda b: None)
    assert info.value.diagnostics[0].code == "R545" and "disk" in info.value.diagnostics[0].message
    assert not (target / "planted").exists()
    # the same swap in the window between that check and the mounts (made here by a step that
    # runs in the pre-exec helper just before the layer): the layer's O_NOFOLLOW open fails closed
    scratch.unlink()
    scratch.mkdir()
    swap = [("call", "tests.runtime.spawn_hooks:swap_for_symlink", (str(scratch), str(target)))]
    with pytest.raises(StockadeError) as info:
        run_confined(prefix, ["/bin/sh", "-c", f"echo x > {scratch}/planted"], {"PATH": "/usr/bin:/bin"},
                     Limits(disk=MiB, timeout=30), cwd=str(machine.workspace), stdout=lambda b: None,
                     stderr=lambda b: None, pre_exec=swap)
    assert info.value.diagnostics[0].code == "R545" and str(scratch) in info.value.diagnostics[0].message
    assert not (target / "planted").exists()
