"""Codex rules: export goldens, the real codex CLI when installable, import, round trip."""

from __future__ import annotations

import pytest

from tests.integrations.helpers import (
    CONTEXT_ARGS,
    EXAMPLES,
    FIXTURES,
    GOLDEN,
    PROBE_COMMANDS,
    check_golden,
    compile_text,
    fixture,
    stockade,
)


@pytest.mark.parametrize("example", EXAMPLES)
def test_export_golden(example: str) -> None:
    result = stockade("export", "--to", "codex-rules", "--allow-looser", f"examples/{example}.policy", *CONTEXT_ARGS)
    assert result.returncode == 0, result.stderr
    check_golden(GOLDEN / "codex-rules" / f"{example}.rules", result.stdout.decode())
    assert b"codex matches flags only at their position" in result.stderr


def test_export_reports_wildcards_with_their_line() -> None:
    from stockade.integrations import export_ir

    ir = compile_text('policy "w"\ncommands {\n    deny git * --force\n    allow make test\n}\n')
    artifact = export_ir(ir, "codex-rules", allow_looser=True)
    assert [str(w.span) for w in artifact.warnings if "wildcards" in w.message] == ["<policy>:3:10"]
    assert 'pattern = ["make", "test"]' in artifact.text and "git" not in artifact.text.split("prefix_rule")[1:][0]


def test_exported_rules_parse_back_and_match_examples() -> None:
    from stockade.integrations.codex import CodexModel, parse_rules

    text = (GOLDEN / "codex-rules" / "team-overlay.rules").read_text()
    rules = parse_rules(text, "team-overlay.rules")
    model = CodexModel(tuple(rules))
    assert model.command_verdict(["terraform", "apply", "-auto-approve"]) == "deny"
    assert model.command_verdict(["git", "push", "origin"]) == "confirm"
    assert model.command_verdict(["git", "status"]) == "allow"
    assert model.command_verdict(["echo"]) is None


def test_import_and_round_trip() -> None:
    from stockade.integrations import export_ir
    from stockade.integrations.codex import CodexModel, parse_rules

    result = stockade("import", "--from", "codex-rules", str(FIXTURES / "codex_sample.rules"))
    assert result.returncode == 0, result.stderr
    assert b"host_executable" in result.stderr  # reported, not dropped silently
    text = result.stdout.decode()
    assert "# from codex_sample.rules:2: prefix_rule git reset --hard (forbidden)" in text
    assert 'because "destructive; use `git stash` instead"' in text
    ir = compile_text(text)
    before = CodexModel(tuple(parse_rules(fixture("codex_sample.rules"), "x.rules", None) or ()))
    after = CodexModel(tuple(parse_rules(export_ir(ir, "codex-rules", allow_looser=True).text, "y.rules")))
    for argv in PROBE_COMMANDS:
        assert before.command_verdict(argv) == after.command_verdict(argv) == ir.command_verdict(argv).verdict, argv


def test_import_malformed_is_located() -> None:
    result = stockade("import", "--from", "codex-rules", "tests/integrations/fixtures/codex_bad.rules")
    assert result.returncode == 2
    assert b"codex_bad.rules:3:16: error[X616]: unknown decision `block`" in result.stderr
    assert b"Traceback" not in result.stderr


@pytest.mark.parametrize(("text", "code"), [
    ("prefix_rule(pattern = [\n", "X613"),
    ("exec('x')\n", "X614"),
    ("prefix_rule(pattern = [], decision = 'allow')\n", "X615"),
    ("prefix_rule(pattern = ['a'], colour = 'red')\n", "X615"),
    ("x = 1\n", "X614"),
])
def test_import_errors(tmp_path, text: str, code: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "x.rules"
    path.write_text(text)
    result = stockade("import", "--from", "codex-rules", str(path))
    assert result.returncode == 2 and f"error[{code}]".encode() in result.stderr, result.stderr
