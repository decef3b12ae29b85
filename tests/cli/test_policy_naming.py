"""One way to name a policy in every command, discovery of the project's and the user's
policy, `stockade show` and `show --which`, and flags that mean the same everywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stockade.cli.common import split_command_operands
from stockade.compiler import discovery
from stockade.diagnostics import StockadeError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

TEAM = """policy "team"

filesystem {
    read  /
    write $WORKSPACE $TMPDIR /tmp
}

network {
    default deny
}

commands {
    deny git push  because "pushes go through CI"
}
"""


def private_env(tmp_path: Path) -> dict[str, str]:
    """HOME and the XDG directories inside ``tmp_path``; the checkout on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "STOCKADE_"))}
    for name in ("home", "cache", "state", "config"):
        (tmp_path / name).mkdir(exist_ok=True)
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               PYTHONPATH=str(ROOT), STOCKADE_AUDIT=str(tmp_path / "audit.jsonl"), NO_COLOR="1")
    return env


def stockade(tmp_path: Path, *args: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stockade", *args], capture_output=True, text=True, input=stdin,
                          cwd=cwd or tmp_path, env=private_env(tmp_path), timeout=120)


@pytest.fixture
def team(tmp_path: Path) -> Path:
    path = tmp_path / "team.policy"
    path.write_text(TEAM)
    return path


@pytest.mark.parametrize("form", [("team.policy", "--"), ("--policy", "team.policy", "--"), ("-p", "team.policy", "--")])
def test_analyze_judges_the_command_against_the_named_policy(tmp_path: Path, team: Path, form: tuple[str, ...]) -> None:
    result = stockade(tmp_path, "analyze", *form, "git push")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "pushes go through CI" in result.stdout
    assert "team.policy:13" in result.stdout  # relative to the current directory


def test_run_never_executes_the_policy_file(tmp_path: Path, team: Path) -> None:
    team.chmod(0o755)
    team.write_text("#!/bin/sh\ntouch executed\n" + TEAM)  # would leave a trace if executed
    result = stockade(tmp_path, "run", "team.policy", "--", "true")
    assert not (tmp_path / "executed").exists()
    assert result.returncode in (0, 2), result.stderr  # 2: the shebang line is not policy language
    team.write_text(TEAM)
    result = stockade(tmp_path, "run", "team.policy", "--", "git", "push")
    assert result.returncode == 1 and "pushes go through CI" in result.stderr


@pytest.mark.parametrize(("words", "message"), [
    (["team.policy", "git", "push"], "must follow `--`"),
    (["notes.txt", "--", "ls"], "name it with `--policy notes.txt`"),
    (["git", "--", "ls"], "is not a policy file"),
    (["a.policy", "b.policy", "--", "ls"], "only the policy may come before `--`"),
    (["missing.policy", "--", "ls"], "no policy file `missing.policy`"),
])
def test_ambiguous_operands_are_refused_never_guessed(tmp_path: Path, team: Path, words: list[str],
                                                       message: str) -> None:
    (tmp_path / "notes.txt").write_text("x")
    for command in ("analyze", "run"):
        result = stockade(tmp_path, command, *words)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "error[E010]" in result.stderr and message in result.stderr, result.stderr


def test_a_policy_named_twice_is_refused(tmp_path: Path, team: Path) -> None:
    for args in (("analyze", "team.policy", "--policy", "team.policy", "--", "ls"),
                 ("run", "team.policy", "--policy", "team.policy", "--", "true"),
                 ("compile", "team.policy", "-p", "team.policy"),
                 ("export", "team.policy", "-p", "team.policy", "--to", "srt"),
                 ("show", "team.policy", "--policy", "team.policy")):
        result = stockade(tmp_path, *args)
        assert result.returncode == 2 and "the policy is named twice" in result.stderr, (args, result.stderr)


def test_split_command_operands_grammar(tmp_path: Path, team: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert split_command_operands(["--", "git", "push"], None) == (None, ["git", "push"])
    assert split_command_operands(["team.policy", "--", "git", "push"], None) == ("team.policy", ["git", "push"])
    assert split_command_operands(["git", "status"], "p.policy") == ("p.policy", ["git", "status"])
    assert split_command_operands(["team.policy"], None) == ("team.policy", [])
    assert split_command_operands(["--", "team.policy"], None) == (None, ["team.policy"])  # after `--`: a command
    with pytest.raises(StockadeError):
        split_command_operands(["team.policy", "--script", "x"], None)
    from stockade.cli.cmd_analyze import _FAST_OPTIONS
    from stockade.cli.main import hoist_policy_operand

    assert hoist_policy_operand(["team.policy", "--format", "json", "--", "ls"], _FAST_OPTIONS) == \
        ["--format", "json", "team.policy", "--", "ls"]
    assert hoist_policy_operand(["--cwd", "x.policy", "ls", "-la"], _FAST_OPTIONS) == ["--cwd", "x.policy", "ls", "-la"]
    assert hoist_policy_operand(["ls", "-la"], _FAST_OPTIONS) == ["ls", "-la"]


@pytest.mark.parametrize("command", ["check", "test", "compile", "export", "show"])
def test_every_command_takes_the_policy_as_operand_or_option(tmp_path: Path, team: Path, command: str) -> None:
    extra = ("--to", "srt") if command == "export" else ()
    by_operand = stockade(tmp_path, command, "team.policy", *extra)
    by_option = stockade(tmp_path, command, "--policy", "team.policy", *extra)
    assert by_operand.returncode == by_option.returncode == 0, (by_operand.stderr, by_option.stderr)
    assert by_operand.stdout == by_option.stdout


def test_hook_takes_the_policy_as_operand_or_option(tmp_path: Path, team: Path) -> None:
    event = json.dumps({"command": "git push"})
    for args in (("team.policy",), ("--policy", "team.policy")):
        result = stockade(tmp_path, "hook", "generic", *args, stdin=event)
        assert result.returncode == 1 and json.loads(result.stdout)["decision"] == "deny", result.stdout


def test_project_policy_is_discovered_upwards_and_used_by_every_command(tmp_path: Path) -> None:
    project = tmp_path / "project"
    deep = project / "src" / "deep"
    deep.mkdir(parents=True)
    (project / ".git").mkdir()
    (project / "stockade.policy").write_text(TEAM)
    which = stockade(tmp_path, "show", "--which", cwd=deep)
    assert which.returncode == 0
    assert which.stdout.splitlines()[0] == str(project / "stockade.policy")
    assert "project:" in which.stdout
    assert stockade(tmp_path, "analyze", "--", "git push", cwd=deep).returncode == 1
    assert stockade(tmp_path, "run", "--", "git", "push", cwd=deep).returncode == 1
    assert "policy `team`" in stockade(tmp_path, "check", cwd=deep).stdout
    # `.stockade/policy` is looked for first in each directory
    (project / "src" / ".stockade").mkdir()
    (project / "src" / ".stockade" / "policy").write_text('policy "inner"\n')
    which = stockade(tmp_path, "show", "--which", "--format", "json", cwd=deep)
    assert json.loads(which.stdout)["policy"] == str(project / "src" / ".stockade" / "policy")


def test_discovery_stops_at_the_repository_top(tmp_path: Path) -> None:
    (tmp_path / "stockade.policy").write_text(TEAM)  # above the repository: not this project's
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    found, last = discovery.project_policy(str(repo), {"HOME": str(tmp_path / "home")})
    assert found is None and last == str(repo)


def test_user_policy_then_builtin(tmp_path: Path) -> None:
    (tmp_path / "somewhere").mkdir()
    which = stockade(tmp_path, "show", "--which", cwd=tmp_path / "somewhere")
    assert which.stdout.startswith("<builtin>/default.policy") and "builtin:" in which.stdout
    user = tmp_path / "config" / "stockade" / "policy"
    user.parent.mkdir(parents=True)
    user.write_text(TEAM)
    which = stockade(tmp_path, "show", "--which", cwd=tmp_path / "somewhere")
    assert which.stdout.splitlines()[0] == str(user) and "user:" in which.stdout
    named = stockade(tmp_path, "show", "--which", str(EXAMPLES / "coding-agent.policy"))
    assert "named on the command line" in named.stdout


def test_an_untrusted_discovered_policy_is_refused_not_skipped(tmp_path: Path) -> None:
    project = tmp_path / "shared"
    (project / ".git").mkdir(parents=True)
    policy = project / "stockade.policy"
    policy.write_text(TEAM)
    policy.chmod(0o666)
    result = stockade(tmp_path, "analyze", "--", "ls", cwd=project)
    assert result.returncode == 2 and "error[C290]" in result.stderr and "others than its owner" in result.stderr
    policy.unlink()
    os.symlink(EXAMPLES / "coding-agent.policy", policy)
    result = stockade(tmp_path, "show", "--which", cwd=project)
    assert result.returncode == 2 and "symbolic link" in result.stderr


def test_show_prints_every_layer_with_origins(tmp_path: Path) -> None:
    overlay = tmp_path / "team-overlay.policy"
    overlay.write_text((EXAMPLES / "team-overlay.policy").read_text())
    (tmp_path / "company-base.policy").write_text((EXAMPLES / "company-base.policy").read_text())
    result = stockade(tmp_path, "show", "team-overlay.policy")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "#   0: company-base (company-base.policy), enforced" in lines
    assert any(line.startswith("    locked deny     ~/.ssh") and line.endswith("# company-base.policy:8 (company-base)")
               for line in lines)
    assert any(line.startswith("    confirm git push") and line.endswith("# team-overlay.policy:26 (payments-team)")
               for line in lines)
    assert any(line.startswith("    locked timeout   10m") for line in lines)  # the tightest of the layers
    assert any("unknown-effects deny" in line for line in lines)


def test_fmt_w_is_refused_with_an_explanation(tmp_path: Path, team: Path) -> None:
    result = stockade(tmp_path, "fmt", "-w", "team.policy")
    assert result.returncode == 2 and "`-w` is `--workspace`" in result.stderr and "--write" in result.stderr
    assert stockade(tmp_path, "fmt", "--write", "--policy", "team.policy").returncode == 0


def test_w_is_workspace_everywhere(tmp_path: Path, team: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for args in (("compile", "team.policy", "-w", str(ws)), ("show", "team.policy", "-w", str(ws), "--format", "json"),
                 ("check", "team.policy", "-w", str(ws))):
        result = stockade(tmp_path, *args)
        assert result.returncode == 0, (args, result.stderr)
    ir = json.loads(stockade(tmp_path, "compile", "team.policy", "-w", str(ws)).stdout)
    assert ir["context"]["workspace"] == str(ws)
    for args in (("team.policy", "-w", str(ws)), ("-w", str(ws), "team.policy"), ("-w", str(ws), "-p", "team.policy")):
        analyzed = stockade(tmp_path, "analyze", *args, "--format", "json", "--", f"touch {ws}/x")
        assert analyzed.returncode == 0, (args, analyzed.stdout + analyzed.stderr)
        assert json.loads(analyzed.stdout)["decision"] == "allow"
    outside = stockade(tmp_path, "analyze", "team.policy", "--", f"touch {ws}/x")  # the workspace is tmp_path
    assert outside.returncode == 0
    script = tmp_path / "s.sh"
    script.write_text("git push\n")
    by_operand = stockade(tmp_path, "analyze", "team.policy", "--script", "s.sh", "--format", "json")
    assert by_operand.returncode == 1, by_operand.stderr
