"""``stockade run`` and ``stockade audit`` end to end, as a user runs them (subprocesses),
plus the runtime's unit-level contracts (seatbelt argv, environment filter, audit
concurrency, lean imports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from multiprocessing import Pool
from pathlib import Path

import pytest

from tests.runtime.conftest import POLICY, box_root, make_box

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")


def stockade(args: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stockade", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def cli_box():
    import shutil

    root = box_root()
    try:
        yield make_box(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_args(box, *extra: str) -> list[str]:
    return ["run", "--policy", str(POLICY), "--workspace", str(box.workspace), *extra]


def box_env(box, cli_env: dict[str, str]) -> dict[str, str]:
    env = dict(cli_env)
    env["HOME"] = str(box.home)
    env["TMPDIR"] = str(box.root / "tmp")
    env["GITHUB_TOKEN"] = "ghp_canary_secret"
    return env


def test_allowed_command_runs_and_status_passes_through(cli_box, cli_env) -> None:
    env = box_env(cli_box, cli_env)
    done = stockade(run_args(cli_box, "-c", "echo out; exit 7"), env)
    assert done.returncode == 7, done.stderr
    assert done.stdout == "out\n"
    records = [json.loads(line) for line in
               Path(cli_env["XDG_STATE_HOME"], "stockade", "audit.jsonl").read_text().splitlines()]
    assert [r["event"] for r in records] == ["decision", "run"]
    run = records[1]
    assert run["exit_status"] == 7 and run["policy"] == "coding-agent" and run["policy_hash"]
    assert run["sandbox_argv"][0].endswith("bwrap") and run["bytes_out"] == 4
    assert "ghp_canary_secret" not in json.dumps(records)


def test_denied_command_is_refused_with_reasons(cli_box, cli_env) -> None:
    env = box_env(cli_box, cli_env)
    done = stockade(run_args(cli_box, "-c", f"cat {cli_box.home}/.ssh/id_ed25519"), env)
    assert done.returncode == 1
    assert "deny" in done.stderr and ".ssh" in done.stderr
    assert "PRIVATE KEY" not in done.stdout


def test_confirm_without_terminal_is_refused_unless_approved(cli_box, cli_env) -> None:
    env = box_env(cli_box, cli_env)
    refused = stockade(run_args(cli_box, "-c", "git push origin feature"), env)
    assert refused.returncode == 1 and "confirm" in refused.stderr
    approved = stockade(run_args(cli_box, "--approve", "--format", "json", "-c", "echo approved"), env)
    assert approved.returncode == 0 and json.loads(approved.stdout)["stdout"] == "approved\n"


def test_secret_environment_is_not_visible(cli_box, cli_env) -> None:
    env = box_env(cli_box, cli_env)
    done = stockade(run_args(cli_box, "--format", "json", "--", "env"), env)
    assert done.returncode == 0, done.stdout + done.stderr
    inside = json.loads(done.stdout)["stdout"]
    assert "ghp_canary_secret" not in inside and "CI=1" in inside


def test_missing_bubblewrap_refuses_with_exit_3(cli_box, cli_env) -> None:
    env = box_env(cli_box, cli_env)
    env["PATH"] = str(cli_box.root / "empty-path")
    done = stockade(run_args(cli_box, "--", "/bin/echo", "ESCAPED"), env)
    assert done.returncode == 3
    assert "R501" in done.stderr and "apt-get install bubblewrap" in done.stderr
    assert "ESCAPED" not in done.stdout


def test_policy_error_is_exit_2(cli_box, cli_env, tmp_path: Path) -> None:
    bad = tmp_path / "bad.policy"
    bad.write_text('policy "x"\nfilesystem {\n  wrte /tmp\n}\n')
    done = stockade(["run", "--policy", str(bad), "--", "true"], box_env(cli_box, cli_env))
    assert done.returncode == 2 and "error[" in done.stderr and "Traceback" not in done.stderr


def test_timeout_exit_124_and_output_cap(cli_box, cli_env, tmp_path: Path) -> None:
    policy = tmp_path / "tight.policy"
    policy.write_text(POLICY.read_text().replace("timeout   10m", "timeout   1s").replace("output    1MiB",
                                                                                          "output    100B"))
    env = box_env(cli_box, cli_env)
    slow = stockade(["run", "--policy", str(policy), "--workspace", str(cli_box.workspace), "--", "sleep", "30"], env)
    assert slow.returncode == 124 and "timeout" in slow.stderr
    loud = stockade(["run", "--policy", str(policy), "--workspace", str(cli_box.workspace), "--",
                     "seq", "1000"], env)
    assert loud.returncode == 0 and len(loud.stdout) == 100 and "truncated" in loud.stderr


def test_preview_then_apply_via_cli(cli_box, cli_env) -> None:
    env = box_env(cli_box, cli_env)
    target = cli_box.workspace / "src" / "main.py"
    before = target.read_text()
    shown = stockade(run_args(cli_box, "--preview", "--diff", "-c", "echo more >> src/main.py; echo n > new.txt"), env)
    assert shown.returncode == 0, shown.stderr
    assert "+more" in shown.stdout and "new.txt" in shown.stderr and "untouched" in shown.stderr
    assert target.read_text() == before and not (cli_box.workspace / "new.txt").exists()
    applied = stockade(run_args(cli_box, "--preview", "--apply", "-c", "echo n > new.txt"), env)
    assert applied.returncode == 0 and (cli_box.workspace / "new.txt").read_text() == "n\n"
    assert not (cli_box.workspace / ".git" / "new.txt").exists()
    (cli_box.workspace / "new.txt").unlink()


def test_audit_command_filters(cli_box, cli_env) -> None:
    env = box_env(cli_box, cli_env)
    stockade(run_args(cli_box, "--", "true"), env)
    stockade(run_args(cli_box, "-c", "sudo ls"), env)
    path = str(Path(cli_env["XDG_STATE_HOME"], "stockade", "audit.jsonl"))
    denied = json.loads(stockade(["audit", path, "--verdict", "deny", "--format", "json"], env).stdout)
    assert [r["command"] for r in denied] == ["sudo ls"]
    table = stockade(["audit", path, "--since", "1h"], {**env, "COLUMNS": "200"})
    assert table.returncode == 0 and "sudo ls" in table.stdout and "3 record(s)" in table.stdout
    assert stockade(["audit", path, "--since", "yesterday-ish"], env).returncode == 2
    for far in ("99999999999999999d", "\u00b2h"):  # further back than a date can go; a non-ASCII digit
        answer = stockade(["audit", path, "--since", far], {**env, "COLUMNS": "200"})
        assert "Traceback" not in answer.stderr, answer.stderr
        assert answer.returncode == (0 if far[0] == "9" else 2), answer.stderr


def test_cached_run_imports_neither_lark_nor_tree_sitter(cli_box, cli_env) -> None:
    env = box_env(cli_box, cli_env)
    args = run_args(cli_box, "--", "true")
    assert stockade(args, env).returncode == 0  # fills the plan and verdict caches
    probe = ("import sys; from stockade.cli.main import main; code = main(sys.argv[1:]); "
             "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('lark', 'tree_sitter', 'tree_sitter_bash')"
             " or m.startswith('stockade.policy_lang') or m.startswith('stockade.analyzer')); "
             "print(heavy); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", probe, *args], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _append(args: tuple[str, int]) -> None:
    from stockade.runtime.audit import append_record

    path, worker = args
    for i in range(200):
        append_record(path, {"worker": worker, "i": i, "pad": "x" * 3000})


def test_concurrent_audit_appends_do_not_interleave(tmp_path: Path) -> None:
    path = str(tmp_path / "audit.jsonl")
    with Pool(4) as pool:
        pool.map(_append, [(path, w) for w in range(4)])
    lines = Path(path).read_text().splitlines()
    assert len(lines) == 800
    assert all(json.loads(line)["pad"] == "x" * 3000 for line in lines)


def test_seatbelt_argv() -> None:
    from stockade.diagnostics import StockadeError
    from stockade.runtime.sandbox import seatbelt_argv

    argv = seatbelt_argv("(version 1)(deny default)", {"WORKSPACE": "/w"})
    assert argv == ["/usr/bin/sandbox-exec", "-p", "(version 1)(deny default)", "-D", "WORKSPACE=/w", "--"]
    with pytest.raises(StockadeError):
        seatbelt_argv("  ")


def test_environment_filter_matches_the_ir(cli_box) -> None:
    from stockade.runtime.cache import filter_environment

    environ = {"PATH": "/bin", "HOME": "/h", "GITHUB_TOKEN": "t", "AWS_REGION": "x", "LC_ALL": "C", "OTHER": "o",
               "MY_SECRET": "s", "CI": "0"}
    rules = [[r.action, r.name, r.value] for r in cli_box.ir.environment]
    assert filter_environment(rules, environ) == cli_box.ir.filter_environment(environ)


def test_harden_adds_runtime_flags_and_rejects_garbage() -> None:
    from stockade.diagnostics import StockadeError
    from stockade.runtime.sandbox import harden_bwrap_argv

    argv = harden_bwrap_argv(["bwrap", "--ro-bind", "/", "/", "--"], cwd="/w")
    for flag in ("--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert argv[argv.index("--chdir") + 1] == "/w" and argv[-1] == "--"
    with pytest.raises(StockadeError):
        harden_bwrap_argv(["sh", "-c", "true"])


def test_bytes_that_are_not_utf8_in_the_argv_run_and_are_audited(cli_box, cli_env) -> None:
    env = box_env(cli_box, cli_env)
    args = [os.fsencode(a) for a in [sys.executable, "-m", "stockade", *run_args(cli_box, "--", "printf", "%s")]]
    done = subprocess.run([*args, b"caf\xe9\xff"], env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert done.stdout == b"caf\xe9\xff"
    path = Path(env["XDG_STATE_HOME"], "stockade", "audit.jsonl")
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    assert last["event"] == "run" and last["command_argv"][-1] == "caf\udce9\udcff"


def test_a_command_missing_inside_the_sandbox_exits_127_like_a_shell(cli_box, cli_env) -> None:
    env = box_env(cli_box, cli_env)
    done = stockade(run_args(cli_box, "--", "/nonexistent/tool"), env)
    assert done.returncode == 127 and "No such file or directory" in done.stderr and "R507" not in done.stderr
    script = cli_box.workspace / "not-executable"
    script.write_text("echo hi\n")
    done = stockade(run_args(cli_box, "--", str(script)), env)
    assert done.returncode == 126 and "Permission denied" in done.stderr
    script.unlink()
