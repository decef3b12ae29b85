"""Rendering of diagnostics at the CLI edge: human text (colour on a terminal) or JSON.

The human form is::

    examples/bad.policy:3:5: error[P101]: unknown keyword `wrte`
      3 |     wrte /tmp
        |     ^^^^
      = help: did you mean `write`?
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import IO

from stockade.diagnostics import Diagnostic, Span, StockadeError

_COLOURS = {"error": "bold red", "warning": "bold yellow", "note": "bold cyan"}


def use_colour(stream: IO[str]) -> bool:
    """Colour and bold as ``--color`` says: by default only on a terminal, never with
    ``NO_COLOR`` set (:func:`stockade.cli.main.colour_wanted`)."""
    from stockade.cli.main import colour_wanted

    return colour_wanted(stream)


#: ANSI styles of the analyzer's verdict text (no rich: ``analyze`` is a hot path).
_ANSI = {"allow": "\x1b[1;32m", "confirm": "\x1b[1;33m", "deny": "\x1b[1;31m", "note": "\x1b[36m"}
_RESET = "\x1b[0m"


def paint_verdict_text(text: str) -> str:
    """The analyzer's text report (:func:`stockade.analyzer.report.render_text`) coloured:
    the decision, each reason's header and caret in its verdict's colour, the deciding rule
    in cyan."""
    out = []
    current = ""
    for number, line in enumerate(text.split("\n")):
        head, sep, rest = line.partition(":")
        if number == 0 and head in _ANSI:
            out.append(f"{_ANSI[head]}{head}{_RESET}{sep}{rest}")
            continue
        verdict = next((v for v in ("allow", "confirm", "deny") if f": {v}[" in line), None)
        if verdict is not None and not line.startswith(" "):
            current = verdict
            where, _, tail = line.partition(f": {verdict}[")
            out.append(f"{where}: {_ANSI[verdict]}{verdict}[{tail.split(']', 1)[0]}]{_RESET}{tail.split(']', 1)[1]}")
        elif line.lstrip().startswith("|") and line.rstrip().endswith("^") and current:
            bar, _, carets = line.rpartition("| ")
            out.append(f"{bar}| {_ANSI[current]}{carets}{_RESET}")
        elif line.startswith("  = "):
            out.append(f"{_ANSI['note']}{line}{_RESET}")
        else:
            out.append(line)
    return "\n".join(out)


def _source_line(span: Span, sources: dict[str, str]) -> str | None:
    text = sources.get(span.file)
    if text is None:
        try:
            with open(span.file, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            return None
        sources[span.file] = text
    lines = text.splitlines()
    if 1 <= span.line <= len(lines):
        return lines[span.line - 1]
    return None


def _caret(span: Span, line: str) -> str:
    start = max(span.column - 1, 0)
    width = span.end_column - span.column if span.end_line in (0, span.line) and span.end_column > span.column else 1
    width = max(1, min(width, max(len(line) - start, 1)))
    prefix = "".join(ch if ch == "\t" else " " for ch in line[:start])
    return prefix + "^" * width


def format_diagnostic(diag: Diagnostic, sources: dict[str, str] | None = None) -> list[tuple[str, str | None]]:
    """The lines of one diagnostic, each with an optional rich style."""
    sources = sources if sources is not None else {}
    out: list[tuple[str, str | None]] = []
    where = f"{diag.span}: " if diag.span else "stockade: "
    out.append((f"{where}{diag.severity}[{diag.code}]: {diag.message}", _COLOURS.get(diag.severity)))
    if diag.span:
        line = _source_line(diag.span, sources)
        if line is not None:
            gutter = str(diag.span.line)
            out.append((f"  {gutter} | {line}", None))
            out.append((f"  {' ' * len(gutter)} | {_caret(diag.span, line)}", _COLOURS.get(diag.severity)))
    for related in diag.related:
        out.append((f"  = note: {related.message} at {related.span}", "cyan"))
        line = _source_line(related.span, sources)
        if line is not None:
            gutter = str(related.span.line)
            out.append((f"  {gutter} | {line}", None))
            out.append((f"  {' ' * len(gutter)} | {_caret(related.span, line)}", "cyan"))
    if diag.help:
        out.append((f"  = help: {diag.help}", "green"))
    return out


def print_diagnostics(diagnostics: Iterable[Diagnostic], sources: dict[str, str] | None = None,
                      stream: IO[str] | None = None) -> None:
    """Print diagnostics for a person, with colour when ``stream`` is a terminal."""
    stream = stream or sys.stderr
    colour = use_colour(stream)
    console = None
    if colour:
        from rich.console import Console

        console = Console(file=stream, highlight=False, soft_wrap=True, force_terminal=True)
    for diag in diagnostics:
        for text, style in format_diagnostic(diag, sources):
            if console is not None:
                from rich.text import Text

                console.print(Text(text, style=style or ""))
            else:
                print(text, file=stream)


def diagnostics_json(diagnostics: Iterable[Diagnostic]) -> list[dict]:
    """Diagnostics as JSON objects."""
    return [d.to_json() for d in diagnostics]


def report_error(error: StockadeError, fmt: str = "text", stream: IO[str] | None = None) -> None:
    """Render a stage's :class:`StockadeError` in the chosen format."""
    if fmt == "json":
        json.dump({"ok": False, "diagnostics": diagnostics_json(error.diagnostics)}, stream or sys.stdout, indent=2)
        print(file=stream or sys.stdout)
    else:
        print_diagnostics(error.diagnostics, error.sources, stream)
