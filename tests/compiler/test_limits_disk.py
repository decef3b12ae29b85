"""`filesize` and `disk` in the compiler: IR and its schema, locked layering (a higher layer
cannot raise a locked limit), the `disk` warnings naming the write rules they affect, and
the targets that cannot enforce them refusing them (never dropped)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from stockade.backends.base import UnsupportedRules, compile_ir
from stockade.compiler.ir import PolicyIR
from stockade.diagnostics import StockadeError
from stockade.integrations import export_ir, target_names
from tests.compiler.helpers import compile_text

POLICY = """policy "d"
filesystem {
    read  /
    write $WORKSPACE /tmp ~/.cache
}
limits {
    disk     64MiB
    filesize 1MiB
    memory   256MiB
}
"""


def _schema() -> dict:
    return json.loads(resources.files("stockade.compiler").joinpath("ir.schema.json").read_text())


def test_the_limits_reach_the_ir_and_its_schema(tmp_path: Path) -> None:
    ir = compile_text(POLICY, tmp_path).ir
    assert ir.limit("disk") == 64 << 20 and ir.limit("filesize") == 1 << 20
    data = ir.to_json()
    jsonschema.validate(data, _schema())
    assert PolicyIR.from_json(data) == ir
    from stockade.runtime.limits import Limits

    limits = Limits.from_ir(ir)
    assert (limits.disk, limits.file_size, limits.memory) == (64 << 20, 1 << 20, 256 << 20)
    assert Limits(**limits.to_json()) == limits


@pytest.mark.parametrize("name, higher", [("disk", "128MiB"), ("filesize", "2MiB")])
def test_a_higher_layer_cannot_raise_a_locked_limit(name: str, higher: str, tmp_path: Path) -> None:
    (tmp_path / "base.policy").write_text(f"limits {{\n    locked {name} 1MiB\n}}\n")
    with pytest.raises(StockadeError) as caught:
        compile_text(f'include "base.policy"\nlimits {{\n    {name} {higher}\n}}\n', tmp_path, name="top.policy")
    errors = caught.value.errors
    assert [d.code for d in errors] == ["C220"] and errors[0].message.startswith(f"`{name}`")
    assert errors[0].related[0].span.file.endswith("base.policy")
    lower = compile_text(f'include "base.policy"\nlimits {{\n    {name} 512KiB\n}}\n', tmp_path, name="ok.policy")
    rule = next(r for r in lower.ir.limits if r.name == name)
    assert rule.value == 512 << 10 and rule.locked  # tightening is fine and stays locked


def test_disk_warns_about_every_write_rule_outside_the_workspace(tmp_path: Path) -> None:
    result = compile_text(POLICY, tmp_path)
    warned = [w for w in result.warnings if w.code == "C245"]
    assert sorted(w.message.split("`")[3] for w in warned) == ["/tmp", "~/.cache"]
    assert all("do not persist" in w.message and w.span.line == 4 for w in warned)
    assert all(w.related and w.related[0].span.line == 7 for w in warned)
    root = compile_text('filesystem {\n    write /\n}\nlimits {\n    disk 1MiB\n}\n', tmp_path, name="r.policy")
    assert any(w.code == "C245" and "refuses" in w.message for w in root.warnings)
    assert not [w for w in compile_text(POLICY.replace("    disk     64MiB\n", ""), tmp_path, name="n.policy").warnings
                if w.code == "C245"]


@pytest.mark.parametrize("target, refused", [("seatbelt", {"disk"}), ("windows", {"disk", "filesize"}),
                                             ("windows-ps", {"disk", "filesize"})])
def test_targets_that_cannot_enforce_them_refuse_them(target: str, refused: set[str], tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    if target.startswith("windows"):
        ir = compile_text(POLICY.replace("/tmp ~/.cache", "~/.cache").replace("read  /", "read  C:\\"), tmp_path,
                          workspace="C:\\ws", home="C:\\Users\\u", tmpdir="C:\\Temp", platform="windows").ir
    else:
        ir = compile_text(POLICY, tmp_path).ir
    with pytest.raises(UnsupportedRules) as caught:
        compile_ir(ir, target)
    named = {d.message.split("`")[1] for d in caught.value.diagnostics if d.code == "B320"}
    assert named == refused
    assert all(d.span is not None and d.span.line in (7, 8) for d in caught.value.diagnostics if d.code == "B320")


def test_bwrap_compiles_them_for_the_runtime(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    artifact = compile_ir(compile_text(POLICY, tmp_path).ir, "bwrap")
    assert artifact.data["argv"][0] == "bwrap"


@pytest.mark.parametrize("target", target_names())
def test_exports_name_them_instead_of_dropping_them(target: str, tmp_path: Path) -> None:
    ir = compile_text(POLICY, tmp_path).ir
    artifact = export_ir(ir, target)
    said = " ".join(w.message for w in artifact.warnings)
    assert "disk" in said and "filesize" in said
