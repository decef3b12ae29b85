"""Lints: unreachable command rules, grants that re-open a denied tree, tests of included
layers, the policy's own name, and `check` showing what the platform's backend says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from stockade import catalogue as codes
from stockade.compiler.pipeline import compile_policy

ROOT = Path(__file__).resolve().parents[2]


def _warnings(text: str, tmp_path: Path, code: str) -> list:
    result = compile_policy(text=text, workspace=str(tmp_path), home="/home/dev")
    return [w for w in result.warnings if w.code == code]


def test_a_rule_under_a_stricter_general_rule_never_decides(tmp_path: Path) -> None:
    text = ('commands {\n  deny git\n  allow git status\n  confirm git push --force\n  allow make test\n'
            '  confirm make\n  allow ls\n  deny ls -R\n  allow cargo build|test\n  deny cargo *\n}\n')
    found = _warnings(text, tmp_path, codes.UNREACHABLE_COMMAND_RULE)
    assert [(w.span.line, w.message.split("`")[1]) for w in found] == [
        (3, "allow git status"), (4, "confirm git push --force"), (5, "allow make test"),
        (9, "allow cargo build|test")]
    assert "`deny git` (line 2)" in found[0].message
    assert found[0].related and found[0].related[0].span.line == 2


def test_a_narrower_stricter_rule_does_not_make_the_general_one_unreachable(tmp_path: Path) -> None:
    text = 'commands {\n  allow git\n  deny git push\n  confirm npm publish\n  allow npm\n}\n'
    assert _warnings(text, tmp_path, codes.UNREACHABLE_COMMAND_RULE) == []


def test_a_grant_inside_a_denied_tree_is_reported_with_the_access_it_gets(tmp_path: Path) -> None:
    text = ('filesystem {\n  read /\n  deny ~/.aws\n  read ~/.aws/credentials\n  readonly ~/.config\n'
            '  write ~/.config/app\n  read ~/.config/other\n  deny ~/.ssh\n}\n')
    found = _warnings(text, tmp_path, codes.REOPENED_TREE)
    assert [w.span.line for w in found] == [4, 6]
    assert found[0].message == ("`read ~/.aws/credentials` re-opens part of `deny ~/.aws` (line 3): the more "
                                "specific rule wins, so `~/.aws/credentials` is readable")
    assert "is writable" in found[1].message


def test_tests_of_included_layers_are_reported(tmp_path: Path) -> None:
    (tmp_path / "base.policy").write_text('policy "base"\ntest "t" {\n  allow "true"\n  deny "sudo x"\n}\n')
    top = tmp_path / "top.policy"
    top.write_text('include "base.policy"\n')
    result = compile_policy(top, workspace=str(tmp_path), home="/home/dev")
    assert [w for w in result.warnings if w.code == codes.INCLUDED_TESTS_NOT_RUN] == []  # shown by check/test only
    [found] = [w for w in result.test_notes if w.code == codes.INCLUDED_TESTS_NOT_RUN]
    assert found.message == "the 2 tests of included `base.policy` are not run with this policy"
    assert found.span.line == 3 and found.span.file.endswith("base.policy")


def test_an_unnamed_file_is_named_after_itself(tmp_path: Path) -> None:
    (tmp_path / "base.policy").write_text('policy "company"\n')
    overlay = tmp_path / "team.policy"
    overlay.write_text('include "base.policy"\n')
    assert compile_policy(overlay, workspace=str(tmp_path), home="/home/dev").ir.name == "team"
    assert compile_policy(text="filesystem {\n  read /\n}\n", workspace=str(tmp_path), home="/h").ir.name == "policy"
    assert compile_policy(None, workspace=str(tmp_path), home="/h").ir.name == "default"


def test_examples_give_no_lint_warnings_of_their_own(tmp_path: Path) -> None:
    for example in sorted((ROOT / "examples").glob("*.policy")):
        result = compile_policy(example, workspace=str(tmp_path), home="/home/dev")
        assert [w for w in result.warnings if w.code in (codes.UNREACHABLE_COMMAND_RULE, codes.REOPENED_TREE)] == []


def _check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "c"),
               XDG_STATE_HOME=str(tmp_path / "s"), XDG_CONFIG_HOME=str(tmp_path / "g"), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "stockade", "check", *args], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)


def test_check_shows_the_backend_warnings_of_the_platform(tmp_path: Path) -> None:
    policy = tmp_path / "p.policy"
    policy.write_text('filesystem {\n  read /\n  write $WORKSPACE\n  deny "/**/secret*"\n}\n')
    linux = _check(tmp_path, str(policy), "-v", "--workspace", str(tmp_path), "--platform", "linux")
    assert linux.returncode == 0, linux.stderr
    assert "warning[B304]: bubblewrap cannot express the glob `/**/secret*`" in linux.stderr
    assert "policy `p`" in linux.stdout
    bare = tmp_path / "bare.policy"
    bare.write_text('filesystem {\n  write $WORKSPACE\n}\n')
    darwin = _check(tmp_path, str(bare), "-v", "--workspace", str(tmp_path), "--platform", "darwin")
    assert "warning[B313]: no process can start under this profile" in darwin.stderr
    summary = _check(tmp_path, str(bare), "--workspace", str(tmp_path), "--platform", "darwin")
    assert "note: the seatbelt backend warns" in summary.stderr and "B313" in summary.stderr
    assert "warning[B313]" not in summary.stderr
