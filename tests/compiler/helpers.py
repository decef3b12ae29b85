"""Helpers for compiler tests: compile policy text against a throwaway context."""

from __future__ import annotations

from pathlib import Path

from stockade.compiler.pipeline import CompileResult, compile_policy
from stockade.diagnostics import StockadeError


def compile_text(text: str, tmp_path: Path, name: str = "p.policy", **context: str) -> CompileResult:
    """Write ``text`` to a file in ``tmp_path`` and compile it with a workspace and home there."""
    path = tmp_path / name
    path.write_text(text)
    workspace = context.pop("workspace", str(tmp_path / "ws"))
    home = context.pop("home", str(tmp_path / "home"))
    return compile_policy(path, workspace=workspace, home=home, tmpdir=context.pop("tmpdir", "/tmp"),
                          environ=context.pop("environ", {}), **context)


def error_codes(error: StockadeError) -> list[str]:
    """The codes of an error's diagnostics of severity error, in order."""
    return [d.code for d in error.diagnostics if d.severity == "error"]
