"""The static analyzer: judge shell commands and scripts against a compiled policy.

Public API::

    analyze(command, ir, cwd=None) -> Verdict      # allow / confirm / deny with reasons
    analyze_script(text, ir, cwd=None) -> ScriptReport   # the whole script + per-line findings
    judge_command(ir, command) -> Verdict          # the seam for policy tests

The pipeline: :mod:`.parse` (tree-sitter-bash) → :mod:`.walker` (shell semantics, with
:mod:`.words` for expansion and :mod:`.exec` + :mod:`.models` for tools) → effects
(:mod:`.effects`) → :mod:`.judge` (against the IR) → :mod:`.report` (text, JSON, SARIF).

Fail closed: any internal error becomes the policy's ``unparsable`` verdict with a reason
saying so — never an exception, never ``allow``.
"""

from __future__ import annotations

from stockade.analyzer.effects import TupleRecord
from stockade.analyzer.judge import Judge, Reason, Verdict

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.compiler.ir import PolicyIR

__all__ = ["LineFinding", "Reason", "ScriptReport", "Verdict", "analyze", "analyze_script", "judge_command"]


def analyze(command: str, ir: PolicyIR, cwd: str | None = None, *, fast_path: bool = True) -> Verdict:
    """Judge one command (or script) against the policy; never raises.

    ``fast_path=False`` parses every text with tree-sitter, bypassing the exact lexer for
    simple commands (:mod:`.fast`) — for differential tests; the verdict is the same."""
    try:
        if not isinstance(command, str):
            raise TypeError(f"command must be a string, not {type(command).__name__}")
        walk = _walk_command or _load_walker()
        judge = _new_object(Judge)  # Judge(ir, cwd) without type.__call__ (see Judge._start)
        judge._start(ir, cwd)
        judge.judge(walk(ir.context, command, cwd, fast_path))
        return judge.verdict(command)
    except Exception as exc:  # fail closed: an analyzer error never lets a command through
        setting = ir.unparsable
        verdict = setting.verdict if setting.verdict != "allow" else "deny"
        text = command if isinstance(command, str) else repr(command)
        reason = Reason(verdict, "A499", f"internal analyzer error ({type(exc).__name__}: {exc}); failing closed",
                        (0, len(text)), setting.origin)
        return Verdict(text, verdict, (reason,))


_walk_command = None
_new_object = object.__new__


def _load_walker():
    """Import the walker on first use (importing :mod:`stockade.analyzer` for its types stays cheap)."""
    global _walk_command
    from stockade.analyzer.walker import walk_command

    _walk_command = walk_command
    return walk_command


def judge_command(ir: PolicyIR, command: str) -> Verdict:
    """The judge callback for policy tests: the same as :func:`analyze`."""
    return analyze(command, ir)


class LineFinding(TupleRecord):
    """A non-allow reason located in a script: 1-based line and column."""

    __slots__ = ()
    _fields = ("line", "column", "reason")
    line: int
    column: int
    reason: Reason

    def __new__(cls, line: int, column: int, reason: Reason) -> LineFinding:
        return tuple.__new__(cls, (line, column, reason))

    def to_json(self) -> dict:
        """The finding as a JSON object."""
        data = self.reason.to_json()
        data.update({"line": self.line, "column": self.column})
        return data


class ScriptReport(TupleRecord):
    """A whole script's verdict and its findings by line."""

    __slots__ = ()
    _fields = ("verdict", "findings")
    verdict: Verdict
    findings: tuple[LineFinding, ...]

    def __new__(cls, verdict: Verdict, findings: tuple[LineFinding, ...]) -> ScriptReport:
        return tuple.__new__(cls, (verdict, findings))

    def to_json(self) -> dict:
        """The report as a JSON object."""
        return {"decision": self.verdict.decision, "findings": [f.to_json() for f in self.findings]}


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1


def analyze_script(text: str, ir: PolicyIR, cwd: str | None = None) -> ScriptReport:
    """Judge a whole script (state flows from line to line) and locate each finding."""
    verdict = analyze(text, ir, cwd)
    findings = []
    for reason in verdict.reasons:
        line, column = line_col(text, reason.span[0])
        findings.append(LineFinding(line, column, reason))
    findings.sort(key=lambda f: (f.line, f.column))
    return ScriptReport(verdict, tuple(findings))
