"""Argument groups and helpers shared by subcommands: loading a policy, writing output."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import IO, TYPE_CHECKING, Any

from stockade import catalogue as codes
from stockade.cli.main import EXIT_USAGE
from stockade.diagnostics import Diagnostic, StockadeError

if TYPE_CHECKING:  # pragma: no cover
    from stockade.compiler.pipeline import CompileResult


def add_context_args(parser: argparse.ArgumentParser) -> None:
    """``--workspace``, ``--home``, ``--tmpdir``, ``--platform``: the compile context."""
    group = parser.add_argument_group("context")
    group.add_argument("--workspace", metavar="DIR", help="the agent's workspace (default: current directory)")
    group.add_argument("--home", metavar="DIR", help="the home directory `~` means (default: $HOME)")
    group.add_argument("--tmpdir", metavar="DIR", help="the temporary directory (default: $TMPDIR or /tmp)")
    group.add_argument("--platform", choices=("linux", "darwin", "windows"),
                       help="compile for this platform (default: this machine's)")


def add_format_arg(parser: argparse.ArgumentParser, choices: tuple[str, ...] = ("text", "json")) -> None:
    """``--format``."""
    parser.add_argument("--format", choices=choices, default="text", help="output format (default: text)")


def compile_from_args(path: str | None, args: argparse.Namespace) -> CompileResult:
    """Compile ``path`` (None: the built-in default) with the context options of ``args``."""
    from stockade.compiler.pipeline import compile_policy

    return compile_policy(path, workspace=getattr(args, "workspace", None), home=getattr(args, "home", None),
                          tmpdir=getattr(args, "tmpdir", None), platform=getattr(args, "platform", None))


def print_warnings(warnings: list[Diagnostic], sources: dict[str, str], fmt: str) -> None:
    """Warnings go to stderr in text mode (JSON output carries them itself)."""
    if warnings and fmt == "text":
        from stockade.cli.render import print_diagnostics

        print_diagnostics(warnings, sources, sys.stderr)


def fail(error: StockadeError, fmt: str = "text", code: int = EXIT_USAGE) -> int:
    """Render a stage's error and return the exit code."""
    from stockade.cli.render import report_error

    report_error(error, fmt, sys.stdout if fmt == "json" else sys.stderr)
    return code


def usage_error(message: str, fmt: str = "text") -> int:
    """A usage problem found after argument parsing."""
    return fail(StockadeError(Diagnostic(codes.USAGE_ERROR, message)), fmt)


def write_output(text: str, output: str | None, stream: IO[str] | None = None) -> None:
    """Write to ``output`` atomically, or to stdout."""
    if output is None or output == "-":
        (stream or sys.stdout).write(text if text.endswith("\n") else text + "\n")
        return
    directory = os.path.dirname(os.path.abspath(output))
    temporary = os.path.join(directory, f".{os.path.basename(output)}.tmp{os.getpid()}")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text if text.endswith("\n") else text + "\n")
    os.replace(temporary, output)


def dump_json(data: Any) -> str:
    """Stable, readable JSON."""
    return json.dumps(data, indent=2, ensure_ascii=False)
