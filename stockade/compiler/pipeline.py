"""The one function that chains the front stages: policy text → AST → IR.

``compile_policy`` loads a policy file (or the built-in default), resolves its includes into
layers, lowers every layer against a :class:`~stockade.compiler.ir.Context`, merges them
tighten-only and returns the IR with any warnings.  Errors raise
:class:`~stockade.diagnostics.StockadeError` with every diagnostic collected.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping

from stockade.compiler.ir import PolicyIR
from stockade.diagnostics import Diagnostic


@dataclass
class CompileResult:
    """A compiled policy: its IR, warnings, and the source text of every file read."""

    ir: PolicyIR
    warnings: list[Diagnostic] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)


def compile_policy(path: str | os.PathLike[str] | None = None, *, text: str | None = None,
                   workspace: str | None = None, home: str | None = None, tmpdir: str | None = None,
                   environ: Mapping[str, str] | None = None, platform: str | None = None) -> CompileResult:
    """Compile a policy file (or ``text``; or the built-in default when both are None).

    ``workspace`` defaults to the current directory, ``home`` to ``$HOME``, ``tmpdir`` to
    ``$TMPDIR`` or ``/tmp``; ``environ`` (default ``os.environ``) supplies other variables.
    """
    raise NotImplementedError("being written")
