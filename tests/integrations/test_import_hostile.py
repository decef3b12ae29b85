"""Importers on hostile input: located diagnostics, never a traceback; and never a policy
that does not compile.

Every importer is fed deep nesting, huge numbers and entries that become paths the language
refuses; the result is a :class:`StockadeError` with located diagnostics, or policy text that
compiles.  A round trip that would write conflicting rules fails with the conflicts (``X621``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stockade import catalogue as codes
from stockade.compiler.pipeline import compile_policy
from stockade.diagnostics import StockadeError
from stockade.integrations import export_ir, import_text

ROOT = Path(__file__).resolve().parents[2]
DEEP_ARRAY = "[" * 100_000 + "]" * 100_000
HUGE_INT = '{"timeout": ' + "9" * 5000 + "}"

HOSTILE = [
    ("srt", DEEP_ARRAY), ("srt", '{"filesystem": ' + '{"a":' * 5000 + "1" + "}" * 5000 + "}"), ("srt", HUGE_INT),
    ("srt", '{"network": {"allowedDomains": ["a.com:99999999999999999999999"]}}'),
    ("cursor", DEEP_ARRAY), ("cursor", HUGE_INT), ("cursor", '{"networkPolicy": {"default": ' + "[" * 3000
                                                     + "]" * 3000 + "}}"),
    ("claude-settings", DEEP_ARRAY), ("claude-settings", HUGE_INT),
    ("claude-settings", '{"sandbox": {"network": {"x": 1e999}}}'),
    ("codex-rules", "prefix_rule(pattern=" + "[" * 5000 + "]" * 5000 + ")"),
    ("codex-rules", 'prefix_rule(pattern=["git"], decision="forbidden", match=' + "(" * 3000 + "1" + ")" * 3000 + ")"),
    ("codex-rules", "x = " + "1+" * 20000 + "1"),
    ("codex-rules", 'prefix_rule(pattern=["a"], decision=' + "9" * 5000 + ")"),
    ("codex-rules", 'prefix_rule(pattern=["x"], justification=' + "-" * 10000 + "1)"),
]


@pytest.mark.parametrize(("target", "text"), HOSTILE, ids=[f"{t}-{i}" for i, (t, _) in enumerate(HOSTILE)])
def test_hostile_input_is_a_located_error(target: str, text: str) -> None:
    with pytest.raises(StockadeError) as caught:
        import_text(text, target, "in.json", home="/tmp/h")
    assert caught.value.diagnostics
    assert all(d.code[0] in "XPC" for d in caught.value.diagnostics)


@pytest.mark.parametrize(("target", "text", "code"), [
    ("srt", '{"filesystem": {"denyRead": ["$WORKSPACEknown_hosts"]}}', codes.UNDEFINED_VARIABLE),
    ("cursor", '{"additionalReadonlyPaths": ["$HOMEx"]}', codes.UNDEFINED_VARIABLE),
    ("claude-settings", '{"permissions": {"deny": ["Read(~4GiB)"]}}', codes.UNSUPPORTED_TILDE),
])
def test_an_import_that_would_not_compile_fails_with_the_reason(target: str, text: str, code: str) -> None:
    with pytest.raises(StockadeError) as caught:
        import_text(text, target, "in.json", home="/tmp/h")
    found = caught.value.diagnostics
    assert found[0].code == codes.IMPORT_RESULT_INVALID
    assert code in [d.code for d in found[1:]]
    assert all(d.span is not None and d.span.file == "<imported policy>" for d in found[1:])
    assert "<imported policy>" in caught.value.sources


def test_claude_settings_round_trip_compiles(tmp_path: Path) -> None:
    ir = compile_policy(ROOT / "examples" / "coding-agent.policy", workspace=str(tmp_path), home="/tmp/h").ir
    exported = export_ir(ir, "claude-settings", allow_looser=True)
    result = import_text(exported.text, "claude-settings", "settings.json", home="/tmp/h")
    compile_policy(text=result.text, workspace=str(tmp_path), home="/tmp/h")  # no C211: no raise


def test_real_conflicts_fail_the_import() -> None:
    settings = {"permissions": {"deny": ["Read(~/.ssh)"], "allow": ["Edit(~/.ssh)"]}}
    with pytest.raises(StockadeError) as caught:
        import_text(json.dumps(settings), "claude-settings", "settings.json", home="/tmp/h")
    found = caught.value.diagnostics
    assert found[0].code == codes.IMPORT_RESULT_INVALID
    assert [d.code for d in found[1:]] == [codes.CONFLICTING_RULES]
