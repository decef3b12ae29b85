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

Bounded: a command longer than :data:`MAX_COMMAND_CHARS` (a script: :data:`MAX_SCRIPT_CHARS`),
or holding a NUL character, is not analysed — it gets the ``unparsable`` verdict with the reason —
and every analysis has a work budget (see :mod:`.walker`): past it, the ``unknown-effects`` verdict.
"""

from __future__ import annotations

from stockade import catalogue as codes
from stockade.analyzer.effects import TupleRecord
from stockade.analyzer.judge import Judge, Reason, Verdict

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.compiler.ir import PolicyIR

#: The longest command :func:`analyze` reads: Linux's longest single argument
#: (``MAX_ARG_STRLEN``), so the longest text ``bash -c`` can be given.
MAX_COMMAND_CHARS = 128 * 1024
#: The longest script :func:`analyze_script` reads.
MAX_SCRIPT_CHARS = 8 * 1024 * 1024

__all__ = ["LineFinding", "Reason", "ScriptReport", "Verdict", "analyze", "analyze_script", "judge_command"]


def analyze(command: str, ir: PolicyIR, cwd: str | None = None, *, fast_path: bool = True,
            max_chars: int = MAX_COMMAND_CHARS) -> Verdict:
    """Judge one command (or script) against the policy; never raises.

    ``fast_path=False`` parses every text with tree-sitter, bypassing the exact lexer for
    simple commands (:mod:`.fast`) — for differential tests; the verdict is the same.  A
    text longer than ``max_chars`` is not analysed: the ``unparsable`` verdict, with the reason."""
    try:
        if not isinstance(command, str):
            raise TypeError(f"command must be a string, not {type(command).__name__}")
        if ir.context.platform == "windows":  # judged in the analyzer's path namespace
            from stockade.analyzer.winpaths import analysis_ir, resolve_word

            ir = analysis_ir(ir)
            if cwd:
                cwd = resolve_word(cwd, ir.context.workspace, ir.context.home).lower()
        judge = _new_object(Judge)  # Judge(ir, cwd) without type.__call__ (see Judge._start)
        judge._start(ir, cwd)
        if len(command) > max_chars:
            from stockade.analyzer.effects import Unparsable

            judge.judge([Unparsable(f"the text is {len(command)} characters long, more than the analyzer reads "
                                    f"({max_chars})", (0, len(command)))])
            return judge.verdict(command)
        if "\0" in command:  # (the walk's mark of an unknown value: input may not hold it)
            from stockade.analyzer.effects import Unparsable

            nul = command.find("\0")
            judge.judge([Unparsable("the text holds a NUL character, which no shell reads as written", (nul, nul + 1))])
            return judge.verdict(command)
        walk = _walk_command or _load_walker()
        judge.judge(walk(ir.context, command, cwd, fast_path))
        return judge.verdict(command)
    except Exception as exc:  # fail closed: an analyzer error never lets a command through
        setting = ir.unparsable
        verdict = setting.verdict if setting.verdict != "allow" else "deny"
        text = command if isinstance(command, str) else repr(command)
        reason = Reason(verdict, codes.ANALYZER_INTERNAL_ERROR,
                        f"internal analyzer error ({type(exc).__name__}: {exc}); failing closed",
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
        return {"decision": self.verdict.decision, "reasons": [f.to_json() for f in self.findings]}


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1


def line_starts(text: str) -> list[int]:
    """The offset of every line's first character (one pass over the text)."""
    starts = [0]
    position = text.find("\n")
    while position != -1:
        starts.append(position + 1)
        position = text.find("\n", position + 1)
    return starts


def analyze_script(text: str, ir: PolicyIR, cwd: str | None = None) -> ScriptReport:
    """Judge a whole script (state flows from line to line) and locate each finding
    (linear: the line starts are found once, each finding's line by bisection)."""
    from bisect import bisect_right

    verdict = analyze(text, ir, cwd, max_chars=MAX_SCRIPT_CHARS)
    findings = []
    starts: list[int] | None = None
    for reason in verdict.reasons:
        if starts is None:
            starts = line_starts(text)
        offset = max(0, min(reason.span[0], len(text)))
        line = bisect_right(starts, offset)
        findings.append(LineFinding(line, offset - starts[line - 1] + 1, reason))
    findings.sort(key=lambda f: (f.line, f.column))
    return ScriptReport(verdict, tuple(findings))
