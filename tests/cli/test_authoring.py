"""The authoring commands: ``init``, ``explain POLICY …``, ``diff``, and ``test``'s
``--coverage``, ``--run``, ``-v`` and ``--format github`` — through the real CLI, with a
private home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stockade.compiler.pipeline import compile_policy
from stockade.compiler.starter import starter_policy
from stockade.policy_lang import parse
from stockade.policy_lang.formatter import format_policy

ROOT = Path(__file__).resolve().parents[2]
AGENT = str(ROOT / "examples" / "coding-agent.policy")
OVERLAY = str(ROOT / "examples" / "team-overlay.policy")


def cli(tmp_path: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"), NO_COLOR="1")
    workspace = tmp_path / "ws"  # the default workspace: apart from the home
    workspace.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "stockade", *args], capture_output=True, text=True, env=env,
                          cwd=cwd or workspace, timeout=120)


# -- init ------------------------------------------------------------------------------


def test_init_writes_a_checked_formatted_policy_and_refuses_to_overwrite(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    for marker in ("package.json", "pyproject.toml", "Cargo.toml", "go.mod"):
        (project / marker).write_text("")
    done = cli(tmp_path, "init", str(project))
    assert done.returncode == 0, done.stderr
    assert "found: git, node, python, rust, go" in done.stdout
    policy = project / "stockade.policy"
    text = policy.read_text()
    assert 'policy "shop"' in text and "registry.npmjs.org:443" in text and "crates.io:443" in text
    ast, diagnostics = parse(text, "stockade.policy")
    assert diagnostics == [] and format_policy(ast, text) == text
    check = cli(tmp_path, "check", str(policy), "--workspace", str(project))
    assert check.returncode == 0, check.stderr
    assert "11/11 tests passed" in check.stdout or "tests passed" in check.stdout
    again = cli(tmp_path, "init", str(project))
    assert again.returncode == 2 and "already exists" in again.stderr
    assert policy.read_text() == text


def test_init_for_an_empty_directory_still_checks(tmp_path: Path) -> None:
    text = starter_policy(str(tmp_path), home=str(tmp_path))
    assert "found: no known tool" in text
    compile_policy(text=text, workspace=str(tmp_path), home=str(tmp_path))


# -- explain -----------------------------------------------------------------------------


def test_explain_code_still_works(tmp_path: Path) -> None:
    done = cli(tmp_path, "explain", "b300")
    assert done.returncode == 0 and done.stdout.startswith("B300: unknown target")


def test_explain_a_path_names_the_deciding_rule_and_the_rules_it_beat(tmp_path: Path) -> None:
    done = cli(tmp_path, "explain", AGENT, "~/.ssh/id_rsa", "--format", "json", "--home", "/home/dev")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["decision"] == "no access"
    assert data["decided_by"]["rule"] == "deny ~/.ssh" and data["decided_by"]["line"] == 7
    assert [b["rule"] for b in data["beaten"]] == ["read /"]
    assert "less specific" in data["beaten"][0]["why"]


def test_explain_goes_through_layers(tmp_path: Path) -> None:
    done = cli(tmp_path, "explain", OVERLAY, "github.com:443")
    assert done.returncode == 0, done.stderr
    assert "host `github.com:443`: allowed" in done.stdout
    assert "company-base.policy" in done.stdout and "(layer `" in done.stdout
    denied = cli(tmp_path, "explain", "--policy", OVERLAY, "evil.example")
    assert "denied" in denied.stdout and "default deny" in denied.stdout


def test_explain_a_command_after_dashdash(tmp_path: Path) -> None:
    done = cli(tmp_path, "explain", AGENT, "--", "git", "push", "--force", "origin", "main")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "command `git push --force origin main`: deny"
    assert "`deny git push --force|-f`" in lines[1]
    assert any("`confirm git push`" in line for line in lines[2:])
    none = cli(tmp_path, "explain", AGENT, "--", "ls")
    assert "judged by its effects" in none.stdout


def test_explain_needs_a_subject(tmp_path: Path) -> None:
    assert cli(tmp_path, "explain", AGENT).returncode == 2
    assert cli(tmp_path, "explain", AGENT, "a", "b").returncode == 2


# -- diff --------------------------------------------------------------------------------


def test_diff_reports_a_looser_change_with_an_example_and_exits_1(tmp_path: Path) -> None:
    new = tmp_path / "new.policy"
    new.write_text(Path(AGENT).read_text().replace("deny     ~/.ssh ~/.aws", "deny     ~/.ssh"))
    done = cli(tmp_path, "diff", AGENT, str(new), "--format", "json", "--home", "/home/dev")
    assert done.returncode == 1, done.stderr
    changes = json.loads(done.stdout)["changes"]
    assert [c["example"] for c in changes if c["looser"]] == ["~/.aws"]
    [change] = changes
    assert (change["old"], change["new"]) == ("none access", "read access")
    assert change["old_rule"].endswith("deny ~/.aws") and change["new_rule"].endswith("read /")


def test_diff_stricter_only_exits_0_and_same_policy_has_no_difference(tmp_path: Path) -> None:
    new = tmp_path / "new.policy"
    new.write_text(Path(AGENT).read_text().replace("    allow   git status, git diff, git log\n",
                                                   "    confirm git status\n    allow   git diff, git log\n"))
    done = cli(tmp_path, "diff", AGENT, str(new))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "command `git status`: allow → confirm" in done.stdout
    same = cli(tmp_path, "diff", AGENT, AGENT)
    assert same.returncode == 0 and "no semantic difference" in same.stdout


# -- test flags ----------------------------------------------------------------------------


def test_test_coverage_run_verbose_and_github(tmp_path: Path) -> None:
    coverage = cli(tmp_path, "test", AGENT, "--coverage")
    assert coverage.returncode == 0, coverage.stderr
    assert "no test exercises `deny su`" in coverage.stdout
    assert "no test exercises `deny git push --force|-f`" not in coverage.stdout
    suite = tmp_path / "s.yaml"
    suite.write_text("- command: git push --force\n  expect: allow\n- command: ls\n  expect: allow\n")
    only = cli(tmp_path, "test", AGENT, str(suite), "--only-suites", "--run", "git*", "-v")
    assert only.returncode == 1
    assert "1 passed" not in only.stdout and "0 passed, 1 failed" in only.stdout
    assert "FAIL" in only.stdout
    github = cli(tmp_path, "test", AGENT, str(suite), "--only-suites", "--format", "github")
    assert github.returncode == 1
    [annotation] = [line for line in github.stdout.splitlines() if line.startswith("::error")]
    assert annotation.startswith(f"::error file={str(suite).replace(':', '%3A')},line=1::test failed: ")


@pytest.mark.parametrize("pattern", ["pushes", "sudo"])
def test_run_selects_by_suite_name_or_command(tmp_path: Path, pattern: str) -> None:
    done = cli(tmp_path, "test", AGENT, "--run", pattern, "-v")
    assert done.returncode == 0, done.stderr
    assert " 0 failed" in done.stdout and not done.stdout.startswith("0 passed")
