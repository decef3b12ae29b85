"""Integrations with other agent tools: pre-execution hooks, exporters and importers.

One module per tool, each on the shared base in :mod:`.base`:

* :mod:`.claude_code` — the Claude Code ``PreToolUse`` hook and ``settings.json`` export/import
* :mod:`.codex` — Codex CLI ``.rules`` (Starlark ``prefix_rule``) export/import
* :mod:`.srt` — Anthropic sandbox-runtime settings export/import
* :mod:`.cursor` — Cursor ``sandbox.json`` export/import
* :mod:`.generic_hook` — the JSON-in/JSON-out hook for any harness, and the judging of
  hook events shared by every hook

Targets are registered once, in :mod:`stockade.backends.registry`, and imported lazily
(nothing heavy is imported here).
"""

from __future__ import annotations

from typing import Any


def target_names() -> list[str]:
    """Every export/import target name (from :data:`stockade.backends.registry.TARGETS`)."""
    from stockade.backends.registry import names

    return names("export")


def export_ir(ir: Any, target: str, strict: bool = False, allow_looser: bool = False) -> Any:
    """Export a compiled policy to a target; returns an :class:`~stockade.backends.base.Artifact`.

    Raises :class:`~stockade.integrations.base.ExportError` when the result would be looser
    than the policy (``X602``, unless ``allow_looser``: then warnings), and under ``strict``
    when the target cannot express some rules exactly; ``B300`` for an unknown target.
    """
    from stockade.backends.registry import build

    return build(ir, target, strict=strict, kinds=("export",), allow_looser=allow_looser)


def import_text(text: str, target: str, file: str = "<input>", home: str | None = None) -> Any:
    """Import a target's file as policy text; returns an :class:`~stockade.integrations.base.ImportResult`."""
    from stockade.backends.registry import importer_class

    return importer_class(target)(text, file, home=home).convert()
