"""Structured diagnostics shared by every stage.

Errors are values: a :class:`Diagnostic` has a code, a lowercase message (user input in
backticks, no final period), a :class:`Span` in the source and an optional hint.  Stages
collect them and raise one :class:`StockadeError` carrying all of them; only the CLI renders
them (see ``stockade.cli.render``).

Every code is declared once in :mod:`stockade.catalogue` (``P1xx`` policy language, ``C2xx``
compiler, ``B3xx`` backends, ``A4xx`` analyzer, ``R5xx`` runtime, ``X6xx`` integrations,
``E0xx`` command line) and raised by name: ``Diagnostic(codes.UNKNOWN_TARGET, ...)`` with
``from stockade import catalogue as codes``; ``stockade explain CODE`` explains one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file; lines and columns are 1-based, ``end_*`` exclusive."""

    file: str
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    def to_json(self) -> dict:
        """The span as a JSON object."""
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line or self.line,
            "end_column": self.end_column or self.column + 1,
        }


@dataclass(frozen=True, slots=True)
class Related:
    """A secondary location that explains a diagnostic (e.g. the locked rule it loosens)."""

    message: str
    span: Span


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in an input: a code, a message, where, and how to fix it."""

    code: str
    message: str
    span: Span | None = None
    help: str | None = None
    severity: Severity = "error"
    related: tuple[Related, ...] = field(default=())

    def to_json(self) -> dict:
        """The diagnostic as a JSON object."""
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "span": self.span.to_json() if self.span else None,
            "help": self.help,
            "related": [{"message": r.message, "span": r.span.to_json()} for r in self.related],
        }

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span else ""
        return f"{where}{self.severity}[{self.code}]: {self.message}"


class StockadeError(Exception):
    """Raised by a stage with every diagnostic it collected; rendered at the CLI edge."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic, sources: dict[str, str] | None = None):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        # file name -> source text, so the renderer can print the offending line
        self.sources: dict[str, str] = dict(sources or {})
        super().__init__("\n".join(str(d) for d in self.diagnostics))

    @property
    def errors(self) -> list[Diagnostic]:
        """Only the diagnostics of severity ``error``."""
        return [d for d in self.diagnostics if d.severity == "error"]


class DiagnosticSink:
    """Collects diagnostics during a stage; :meth:`raise_if_errors` ends the stage."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []
        self.sources: dict[str, str] = {}

    def error(self, code: str, message: str, span: Span | None = None, help: str | None = None,
              related: tuple[Related, ...] = ()) -> None:
        """Record an error."""
        self.items.append(Diagnostic(code, message, span, help, "error", related))

    def warning(self, code: str, message: str, span: Span | None = None, help: str | None = None,
                related: tuple[Related, ...] = ()) -> None:
        """Record a warning."""
        self.items.append(Diagnostic(code, message, span, help, "warning", related))

    def extend(self, diagnostics: list[Diagnostic]) -> None:
        """Record several diagnostics at once."""
        self.items.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == "warning"]

    def raise_if_errors(self) -> None:
        """Raise one :class:`StockadeError` with everything collected, if any error is among it."""
        if self.has_errors:
            raise StockadeError(self.items, self.sources)
