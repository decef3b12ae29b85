"""The compiler: variables, canonical paths, includes, layers, conflicts, the IR and its schema."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from stockade.compiler.ir import PolicyIR
from stockade.compiler.pipeline import compile_policy
from stockade.diagnostics import StockadeError
from tests.compiler.helpers import compile_text, error_codes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCHEMA = json.loads(resources.files("stockade.compiler").joinpath("ir.schema.json").read_text())


@pytest.mark.parametrize("name", [None, *sorted(p.name for p in EXAMPLES.glob("*.policy"))])
def test_examples_compile_to_schema_valid_ir_that_round_trips(name: str | None, tmp_path: Path) -> None:
    path = EXAMPLES / name if name else None
    ir = compile_policy(path, workspace=str(tmp_path), home="/home/dev", environ={}).ir
    data = json.loads(json.dumps(ir.to_json()))
    jsonschema.validate(data, SCHEMA)
    again = PolicyIR.from_json(data)
    assert again == ir
    assert [str(r.origin) for r in again.filesystem] == [str(r.origin) for r in ir.filesystem]
    assert all(rule.origin is not None and rule.origin.line >= 1 for rule in ir.filesystem + ir.commands)


def test_variables_expand_and_undefined_ones_are_errors(tmp_path: Path) -> None:
    text = "filesystem {\n  write $WORKSPACE/out ${TMPDIR}/x ~/cache $PROJECT_ROOT/y\n  read $NOPE/a \"$ALSO_NOPE\"\n}\n"
    with pytest.raises(StockadeError) as caught:
        compile_text(text, tmp_path, environ={"PROJECT_ROOT": "/srv/p"})
    errors = caught.value.errors
    assert [d.code for d in errors] == ["C201", "C201"]
    assert [d.message for d in errors] == ["undefined variable `$NOPE`", "undefined variable `$ALSO_NOPE`"]
    assert [(d.span.line, d.span.column) for d in errors] == [(3, 8), (3, 17)]
    ok = compile_text("filesystem {\n  write $WORKSPACE/out ${TMPDIR}/x ~/cache $PROJECT_ROOT/y\n}\n", tmp_path,
                      environ={"PROJECT_ROOT": "/srv/p"})
    patterns = [r.pattern for r in ok.ir.filesystem]
    assert patterns == [f"{tmp_path}/ws/out", "/tmp/x", f"{tmp_path}/home/cache", "/srv/p/y"]


def test_paths_are_canonical_symlinks_resolved_and_missing_paths_compile(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    text = f"filesystem {{\n  deny {tmp_path}/link/sub/../sub/not-yet/file\n  read relative/dir\n  deny \"**/.env\"\n}}\n"
    ir = compile_text(text, tmp_path).ir
    assert ir.filesystem[0].pattern == f"{real}/sub/not-yet/file"
    assert ir.filesystem[1].pattern == f"{tmp_path}/ws/relative/dir"
    assert ir.filesystem[2].pattern == "/**/.env" and ir.filesystem[2].is_glob


def test_includes_are_layers_relative_to_the_including_file(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "base.policy").write_text('policy "base"\nenforced\nfilesystem {\n  deny ~/.ssh\n}\n')
    ir = compile_text('policy "top"\ninclude "base/base.policy"\nfilesystem {\n  read /\n}\n', tmp_path).ir
    assert [(layer.name, layer.enforced) for layer in ir.layers] == [("base", True), ("top", False)]
    assert ir.filesystem[0].locked and ir.filesystem[0].origin.layer == 0
    assert not ir.filesystem[1].locked and ir.filesystem[1].origin.layer == 1
    assert ir.name == "top"


def test_include_not_found_and_cycles_show_the_chain(tmp_path: Path) -> None:
    (tmp_path / "a.policy").write_text('include "b.policy"\n')
    (tmp_path / "b.policy").write_text('include "c.policy"\ninclude "gone.policy"\n')
    (tmp_path / "c.policy").write_text('include "a.policy"\n')
    with pytest.raises(StockadeError) as caught:
        compile_policy(tmp_path / "a.policy", workspace=str(tmp_path), environ={})
    messages = [d.message for d in caught.value.errors]
    cycle = next(m for m in messages if m.startswith("include cycle"))
    assert "a.policy → b.policy → c.policy → a.policy" in cycle
    assert any("`" in m and "gone.policy" in m and "not found" in m for m in messages)
    cycle_diag = next(d for d in caught.value.errors if d.code == "C203")
    assert cycle_diag.span.file.endswith("c.policy") and len(cycle_diag.related) == 2


def test_diamond_includes_load_once(tmp_path: Path) -> None:
    (tmp_path / "common.policy").write_text("filesystem {\n  deny ~/.ssh\n}\n")
    (tmp_path / "x.policy").write_text('include "common.policy"\n')
    (tmp_path / "y.policy").write_text('include "common.policy"\n')
    ir = compile_text('include "x.policy"\ninclude "y.policy"\n', tmp_path).ir
    assert len(ir.layers) == 4 and len(ir.filesystem) == 1


BASE = """policy "base"
filesystem {
    read /
    locked deny ~/.ssh
    locked readonly $WORKSPACE/.git
    write $WORKSPACE
}
network {
    locked default deny
    allow github.com
    locked deny *.evil.example
}
environment {
    locked drop "AWS_*"
    locked set CI=1
}
limits {
    locked timeout 10m
    memory 1GiB
}
commands {
    locked deny sudo
    locked deny git push --force
    locked unknown-effects confirm
}
"""


@pytest.mark.parametrize("overlay, fragment", [
    ("filesystem {\n  read ~/.ssh/known_hosts\n}\n", "`read ~/.ssh/known_hosts`"),
    ("filesystem {\n  write $WORKSPACE/.git/objects\n}\n", "`write $WORKSPACE/.git/objects`"),
    ("filesystem {\n  write \"$WORKSPACE/.git/*\"\n}\n", "`write $WORKSPACE/.git/*`"),
    ("network {\n  default allow\n}\n", "`default allow`"),
    ("network {\n  allow example.org\n}\n", "`allow example.org`"),
    ("network {\n  allow api.evil.example\n}\n", "`allow api.evil.example`"),
    ("environment {\n  keep AWS_REGION\n}\n", "`keep AWS_REGION`"),
    ("environment {\n  set CI=0\n}\n", "`set CI`"),
    ("limits {\n  timeout 1h\n}\n", "`timeout`"),
    ("commands {\n  allow sudo ls\n}\n", "`allow sudo ls`"),
    ("commands {\n  confirm git push -f origin\n}\n", "`confirm git push -f origin`"),
    ("commands {\n  unknown-effects allow\n}\n", "`unknown-effects allow`"),
])
def test_loosening_a_locked_rule_is_rejected_with_both_locations(overlay: str, fragment: str, tmp_path: Path) -> None:
    (tmp_path / "base.policy").write_text(BASE)
    with pytest.raises(StockadeError) as caught:
        compile_text('include "base.policy"\n' + overlay, tmp_path, name="top.policy")
    errors = caught.value.errors
    assert [d.code for d in errors] == ["C220"], errors
    assert errors[0].message.startswith(fragment) and "loosens a locked rule" in errors[0].message
    assert errors[0].span.file.endswith("top.policy")
    assert errors[0].related and errors[0].related[0].span.file.endswith("base.policy")


def test_tightening_and_loosening_unlocked_rules_are_fine(tmp_path: Path) -> None:
    (tmp_path / "base.policy").write_text(BASE)
    overlay = ('include "base.policy"\nfilesystem {\n  deny $WORKSPACE/secrets\n  write /opt/cache\n}\n'
               'network {\n  allow github.com:443\n  deny github.com:22\n}\nlimits {\n  timeout 5m\n  memory 2GiB\n}\n'
               'commands {\n  unknown-effects deny\n  allow git status\n}\n')
    ir = compile_text(overlay, tmp_path, name="top.policy").ir
    assert ir.limit("timeout") == 300 and ir.limit("memory") == 2 * 1024**3
    assert ir.unknown_effects.verdict == "deny" and ir.unknown_effects.locked
    assert ir.path_access(str(tmp_path / "ws" / "secrets" / "k")).access == "none"


def test_duplicates_warn_and_conflicts_error_within_a_file(tmp_path: Path) -> None:
    result = compile_text("filesystem {\n  read /x\n  read /x\n}\n", tmp_path)
    assert [d.code for d in result.warnings] == ["C210"]
    with pytest.raises(StockadeError) as caught:
        compile_text("filesystem {\n  read /x\n  deny /x/\n}\nnetwork {\n  allow a.com\n  deny a.com\n}\n"
                     "limits {\n  timeout 1m\n  timeout 2m\n}\ncommands {\n  allow git push\n  deny git push\n}\n",
                     tmp_path)
    assert error_codes(caught.value) == ["C211", "C211", "C211", "C211"]
    assert all(d.related for d in caught.value.errors)


def test_conflict_only_through_variables_is_a_warning(tmp_path: Path) -> None:
    result = compile_text("filesystem {\n  write $TMPDIR\n  readonly /tmp\n}\n", tmp_path, tmpdir="/tmp")
    assert [d.code for d in result.warnings] == ["C212"]


def test_policy_file_not_found_and_not_utf8(tmp_path: Path) -> None:
    with pytest.raises(StockadeError) as caught:
        compile_policy(tmp_path / "missing.policy", environ={})
    assert error_codes(caught.value) == ["C202"]
    (tmp_path / "bin.policy").write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(StockadeError) as caught:
        compile_policy(tmp_path / "bin.policy", environ={})
    assert error_codes(caught.value) == ["C204"]


def test_windows_context_keeps_windows_paths(tmp_path: Path) -> None:
    ir = compile_text("filesystem {\n  write $WORKSPACE\n  deny ~/.ssh\n}\n", tmp_path,
                      workspace="C:\\Users\\dev\\proj", home="C:\\Users\\dev", tmpdir="C:\\Temp", platform="windows").ir
    assert [r.pattern for r in ir.filesystem] == ["C:\\Users\\dev\\proj", "C:\\Users\\dev\\.ssh"]
