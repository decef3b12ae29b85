"""Integrations with other agent tools: pre-execution hooks, exporters and importers.

One module per tool, each on the shared base in :mod:`.base`:

* :mod:`.claude_code` — the Claude Code ``PreToolUse`` hook and ``settings.json`` export/import
* :mod:`.codex` — Codex CLI ``.rules`` (Starlark ``prefix_rule``) export/import
* :mod:`.srt` — Anthropic sandbox-runtime settings export/import
* :mod:`.cursor` — Cursor ``sandbox.json`` export/import
* :mod:`.generic_hook` — the JSON-in/JSON-out hook for any harness, and the judging of
  hook events shared by every hook

Targets are looked up by name and imported lazily (nothing heavy is imported here).
"""

from __future__ import annotations

import importlib
from typing import Any

#: ``--to`` / ``--from`` name → "module:ExporterClass:ImporterClass"
TARGETS: dict[str, tuple[str, str, str]] = {
    "codex-rules": ("stockade.integrations.codex", "CodexExporter", "CodexImporter"),
    "srt": ("stockade.integrations.srt", "SrtExporter", "SrtImporter"),
    "claude-settings": ("stockade.integrations.claude_code", "ClaudeSettingsExporter", "ClaudeSettingsImporter"),
    "cursor": ("stockade.integrations.cursor", "CursorExporter", "CursorImporter"),
}


def target_names() -> list[str]:
    """Every export/import target name."""
    return list(TARGETS)


def _class(target: str, index: int) -> Any:
    from stockade.diagnostics import Diagnostic, StockadeError

    try:
        module, *classes = TARGETS[target]
    except KeyError:
        raise StockadeError(Diagnostic("X602", f"unknown target `{target}`",
                                       help="targets: " + ", ".join(TARGETS))) from None
    return getattr(importlib.import_module(module), classes[index])


def export_ir(ir: Any, target: str, strict: bool = False) -> Any:
    """Export a compiled policy to a target; returns an :class:`~stockade.backends.base.Artifact`.

    Raises :class:`~stockade.integrations.base.ExportError` under ``strict`` when the target
    cannot express some rules.
    """
    return _class(target, 0)(ir).export(strict)


def import_text(text: str, target: str, file: str = "<input>", home: str | None = None) -> Any:
    """Import a target's file as policy text; returns an :class:`~stockade.integrations.base.ImportResult`."""
    return _class(target, 1)(text, file, home=home).convert()
