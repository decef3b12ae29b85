"""Policy tests: test blocks, YAML suites, the command-rules judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from stockade.compiler.policy_tests import command_rules_judge, load_yaml_suite, run_tests
from stockade.diagnostics import StockadeError
from tests.compiler.helpers import compile_text

POLICY = ('commands {\n  deny sudo because "no root"\n  confirm git push\n  allow git status\n}\n'
          'test "t" {\n  deny "sudo ls"\n  allow "git status && git push"\n}\n')


def test_failing_case_names_location_verdict_and_rule(tmp_path: Path) -> None:
    ir = compile_text(POLICY, tmp_path).ir
    outcomes = run_tests(ir)
    assert [o.passed for o in outcomes] == [True, False]
    failed = outcomes[1]
    assert failed.got.decision == "confirm"
    assert str(failed.case.origin).endswith("p.policy:8:3")
    assert failed.got.rule is not None and failed.got.rule.line == 3
    assert failed.to_json()["rule"].endswith("p.policy:3:11")


def test_command_rules_judge_splits_at_operators_and_fails_closed(tmp_path: Path) -> None:
    ir = compile_text(POLICY, tmp_path).ir
    assert command_rules_judge(ir, "echo hi; sudo id").decision == "deny"
    assert command_rules_judge(ir, "ls|sudo tee x").decision == "deny"
    assert command_rules_judge(ir, "ls -la").decision == "allow"
    unparsable = command_rules_judge(ir, "echo 'unterminated")
    assert unparsable.decision == "deny" and "cannot split" in unparsable.reason


def test_yaml_suites(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("- command: sudo ls\n  expect: deny\n- command: git status\n  expect: allow\n  name: basics\n")
    cases = load_yaml_suite(str(suite))
    assert [(c.command, c.expect, c.suite) for c in cases] == [
        ("sudo ls", "deny", str(suite)), ("git status", "allow", "basics")]
    assert cases[1].origin.line == 3
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("tests:\n  - command: x\n    expect: confirm\n")
    assert len(load_yaml_suite(str(mapping))) == 1


@pytest.mark.parametrize("text, message, line", [
    ("- command: ls\n  expect: maybe\n", "`expect` must be `allow`, `confirm` or `deny` (got `maybe`)", 2),
    ("- expect: deny\n", "a test case needs a `command`", 1),
    ("- command: ls\n  expect: deny\n  colour: red\n", "unknown field `colour` in a test case", 1),
    ("key: [unclosed\n", "the test suite is not valid yaml", 2),
    ("just a string\n", "a test suite is a list of cases", 1),
    ("- - nested\n", "a test case is a mapping with `command` and `expect`", 1),
])
def test_bad_yaml_suites_are_located_diagnostics(text: str, message: str, line: int, tmp_path: Path) -> None:
    suite = tmp_path / "bad.yaml"
    suite.write_text(text)
    with pytest.raises(StockadeError) as caught:
        load_yaml_suite(str(suite))
    diagnostic = caught.value.diagnostics[0]
    assert diagnostic.code == "C230" and diagnostic.message.startswith(message)
    assert diagnostic.span.file == str(suite) and diagnostic.span.line == line
