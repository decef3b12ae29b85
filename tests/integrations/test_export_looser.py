"""Exports are never looser than the policy by accident.

An export that would allow a path, host or command the policy forbids fails with ``X602``
(one error per rule, exit 2, nothing written) unless ``--allow-looser``; its messages name
the rule's own path, never the probe paths made up for the check; ``--strict`` also fails on
what is merely not expressed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stockade import catalogue as codes
from stockade.compiler.pipeline import compile_policy
from stockade.diagnostics import StockadeError
from stockade.integrations import export_ir

from .helpers import CONTEXT_ARGS, stockade

ROOT = Path(__file__).resolve().parents[2]


def _ir(text: str, tmp_path: Path):
    return compile_policy(text=text, workspace=str(tmp_path), home="/home/dev").ir


def test_cursor_dropping_denies_fails_naming_the_rule() -> None:
    result = stockade("export", "--to", "cursor", "examples/coding-agent.policy", *CONTEXT_ARGS)
    assert result.returncode == 2
    err = result.stderr.decode()
    assert "error[X602]: `deny ~/.ssh` is exported looser than the policy: `~/.ssh` gets read access" in err
    assert "stockade-probe" not in err and "probe" not in err.replace("probes", "")
    assert result.stdout == b""


def test_allow_looser_writes_the_file_with_warnings(tmp_path: Path) -> None:
    out = tmp_path / "sandbox.json"
    result = stockade("export", "--to", "cursor", "--allow-looser", "examples/coding-agent.policy", *CONTEXT_ARGS,
                      "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "warning[X602]" in result.stderr.decode()
    json.loads(out.read_text())


def test_strict_fails_on_what_is_merely_not_expressed(tmp_path: Path) -> None:
    ir = _ir('policy "p"\nfilesystem {\n  read /\n  write $WORKSPACE\n}\nlimits {\n  timeout 10m\n}\n', tmp_path)
    artifact = export_ir(ir, "srt")  # nothing looser: no error without --strict
    assert [d.code for d in artifact.warnings] == [codes.EXPORT_APPROXIMATED]
    with pytest.raises(StockadeError) as caught:
        export_ir(ir, "srt", strict=True)
    assert [d.code for d in caught.value.diagnostics] == [codes.STRICT_EXPORT_REFUSED]


def test_a_policy_the_target_expresses_exports_without_flags(tmp_path: Path) -> None:
    ir = _ir('policy "p"\nfilesystem {\n  read /\n  write $WORKSPACE /tmp\n}\nnetwork {\n  default deny\n}\n', tmp_path)
    artifact = export_ir(ir, "cursor")
    assert not [d for d in artifact.warnings if d.code == codes.EXPORT_LOOSER]


def test_network_rules_a_target_cannot_express_are_exported_stricter(tmp_path: Path) -> None:
    """Cursor's sandbox.json has no host list: `default allow` with a deny becomes no network
    (stricter, warned with the rule's line) — never the looser `default allow`."""
    ir = _ir('policy "p"\nfilesystem {\n  read /\n}\nnetwork {\n  default allow\n  deny evil.example\n}\n', tmp_path)
    artifact = export_ir(ir, "cursor")
    assert json.loads(artifact.text)["networkPolicy"] == {"default": "deny"}
    assert not [d for d in artifact.warnings if d.code == codes.EXPORT_LOOSER]
    stricter = [d for d in artifact.warnings if d.span is not None and "stricter" in d.message]
    assert [d.span.line for d in stricter] == [6]


def test_command_looseness_fails_codex_and_claude(tmp_path: Path) -> None:
    ir = _ir('policy "p"\ncommands {\n  deny git push --force\n}\n', tmp_path)
    for target in ("codex-rules", "claude-settings"):
        with pytest.raises(StockadeError) as caught:
            export_ir(ir, target)
        assert codes.EXPORT_LOOSER in [d.code for d in caught.value.diagnostics], target
        assert export_ir(ir, target, allow_looser=True).text


def test_command_probes_catch_a_milder_verdict_generically(tmp_path: Path) -> None:
    from stockade.integrations.base import command_fidelity
    from stockade.integrations.codex import CodexExporter

    ir = _ir('policy "p"\ncommands {\n  deny curl * --insecure\n  confirm git push\n  allow ls\n}\n', tmp_path)
    exporter = CodexExporter(ir)
    command_fidelity(exporter, lambda argv: "allow")  # a target that allows everything it is asked
    found = exporter.looser_items
    assert [d.span.line for d in found] == [3, 4]
    assert "`curl x --insecure` is `allow` in the codex rules format instead of `deny`" in found[0].message
    assert all("stockade-any-word" not in d.message for d in found)
