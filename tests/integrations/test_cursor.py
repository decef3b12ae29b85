"""Cursor sandbox.json: export goldens (validated by a schema written from the docs), import, round trip."""

from __future__ import annotations

import json

import pytest

from tests.integrations.helpers import (
    CONTEXT,
    CONTEXT_ARGS,
    EXAMPLES,
    FIXTURES,
    GOLDEN,
    PROBE_PATHS,
    ROOT,
    check_golden,
    compile_text,
    fixture,
    stockade,
)


@pytest.mark.parametrize("example", EXAMPLES)
def test_export_golden(example: str) -> None:
    result = stockade("export", "--to", "cursor", "--allow-looser", f"examples/{example}.policy", *CONTEXT_ARGS)
    assert result.returncode == 0, result.stderr
    check_golden(GOLDEN / "cursor" / f"{example}.json", result.stdout.decode())
    # denied secrets cannot be expressed in sandbox.json: reported with their line
    assert b"exported looser than the policy" in result.stderr and b"no documented host list" in result.stderr


def test_export_validates_against_documented_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "tests/integrations/schemas/cursor-sandbox.schema.json").read_text())
    for example in EXAMPLES:
        jsonschema.validate(json.loads((GOLDEN / "cursor" / f"{example}.json").read_text()), schema)


def test_strict_refuses() -> None:
    result = stockade("export", "--to", "cursor", "--strict", "examples/coding-agent.policy", *CONTEXT_ARGS)
    assert result.returncode == 2 and b"error[X600]" in result.stderr


def test_import_and_round_trip() -> None:
    from stockade.integrations import export_ir
    from stockade.integrations.cursor import CursorModel

    result = stockade("import", "--from", "cursor", str(FIXTURES / "cursor_sample.json"), "--home", "/home/dev")
    assert result.returncode == 0, result.stderr
    ir = compile_text(result.stdout.decode())
    original = json.loads(fixture("cursor_sample.json"))
    again = export_ir(ir, "cursor", allow_looser=True).data
    before = CursorModel.from_settings(original, CONTEXT["workspace"], CONTEXT["home"])
    after = CursorModel.from_settings(again, CONTEXT["workspace"], CONTEXT["home"])
    for path in PROBE_PATHS:
        assert before.path_access(path) == after.path_access(path) == ir.path_access(path).access, path
    assert before.host_allowed("github.com") == after.host_allowed("github.com") is False


def test_import_malformed_is_located() -> None:
    result = stockade("import", "--from", "cursor", "tests/integrations/fixtures/cursor_bad.json")
    assert result.returncode == 2
    assert b"cursor_bad.json:2:11: error[X612]: unknown sandbox type `workspace_everything`" in result.stderr
