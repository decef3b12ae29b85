"""Reports of verdicts: text with the command drawn and offending spans underlined, JSON,
and SARIF 2.1.0 for code-scanning tools."""

from __future__ import annotations

from stockade import catalogue as codes
from stockade.analyzer.judge import Reason, Verdict

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterable

_LEVEL = {"deny": "error", "confirm": "warning", "allow": "note"}


def _locator(text: str) -> Callable[[str, int], tuple[int, int]]:
    """A ``line_col(text, offset)`` for many offsets of one text: its line starts are found
    once, each offset's line by bisection (a script of 100,000 lines may have 30,000 reasons)."""
    from bisect import bisect_right

    starts: list[int] | None = None

    def line_col(_: str, offset: int) -> tuple[int, int]:
        nonlocal starts
        if starts is None:
            from stockade.analyzer import line_starts

            starts = line_starts(text)
        offset = max(0, min(offset, len(text)))
        line = bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1

    return line_col


#: the longest source line drawn under a reason (longer ones: a window around the span)
_MAX_DRAWN = 240


def render_text(verdict: Verdict, origin_name: str = "command") -> str:
    """The verdict for a person: decision, then each reason with its span underlined."""
    lines = [f"{verdict.decision}: {_summary(verdict)}"]
    source_lines = verdict.command.split("\n")
    _line_col = _locator(verdict.command)
    for reason in verdict.reasons:
        line, column = _line_col(verdict.command, reason.span[0])
        end_line, end_column = _line_col(verdict.command, reason.span[1])
        lines.append(f"{origin_name}:{line}:{column}: {reason.verdict}[{reason.code}]: {reason.message}")
        text = source_lines[line - 1] if line - 1 < len(source_lines) else ""
        width = (end_column - column) if end_line == line else len(text) - column + 1
        gutter = str(line)
        if len(text) > _MAX_DRAWN:  # (a window around the span's start, the rest elided)
            first = max(0, column - 1 - _MAX_DRAWN // 4)
            shown = text[first:first + _MAX_DRAWN]
            lead = "…" if first else ""
            text = lead + shown + ("…" if first + _MAX_DRAWN < len(text) else "")
            column = column - first + len(lead)
            width = min(width, len(shown) - (column - 1 - len(lead)))
        lines.append(f"  {gutter} | {text}")
        lines.append(f"  {' ' * len(gutter)} | {' ' * (column - 1)}{'^' * max(1, width)}")
        if reason.rule is not None:
            rule = f" `{reason.rule_text}`" if reason.rule_text else ""
            lines.append(f"  = decided by{rule} at {reason.rule.file}:{reason.rule.line}")
    return "\n".join(lines)


def _summary(verdict: Verdict) -> str:
    if not verdict.reasons:
        return "nothing in the command goes beyond the policy"
    return f"{len(verdict.reasons)} reason{'s' if len(verdict.reasons) != 1 else ''}"


def to_sarif(verdicts: Iterable[tuple[str, Verdict]]) -> dict:
    """SARIF 2.1.0: one run, one result per reason (``uri`` names the command or script)."""
    rules: dict[str, dict] = {}
    results = []
    for uri, verdict in verdicts:
        _line_col = _locator(verdict.command)
        for reason in verdict.reasons:
            rules.setdefault(reason.code, {"id": reason.code, "name": _RULE_NAMES.get(reason.code, reason.code),
                                           "shortDescription": {"text": _RULE_NAMES.get(reason.code, reason.code)}})
            line, column = _line_col(verdict.command, reason.span[0])
            end_line, end_column = _line_col(verdict.command, reason.span[1])
            result = {
                "ruleId": reason.code,
                "level": _LEVEL[reason.verdict],
                "message": {"text": reason.message},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": uri},
                    "region": {"startLine": line, "startColumn": column, "endLine": end_line,
                               "endColumn": max(end_column, column + 1)}}}],
                "properties": {"verdict": reason.verdict},
            }
            if reason.rule is not None:
                result["relatedLocations"] = [{"id": 1, "message": {"text": reason.rule_text or "policy rule"},
                                               "physicalLocation": {"artifactLocation": {"uri": reason.rule.file},
                                                                    "region": {"startLine": reason.rule.line,
                                                                               "startColumn": reason.rule.column}}}]
            results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "stockade", "version": _version(), "semanticVersion": _version(),
                                      "informationUri": "https://example.invalid/stockade",
                                      "rules": list(rules.values())}},
                  "results": results}],
    }


def _version() -> str:
    from stockade import __version__

    return str(__version__)


_RULE_NAMES: dict[str, str] = {
    codes.UNPARSABLE_COMMAND: "unparsable", codes.COMMAND_RULE: "command-rule", codes.DENIED_READ: "denied-read",
    codes.DENIED_WRITE: "denied-write",
    codes.DENIED_NETWORK: "denied-network", codes.PERSISTENCE: "persistence",
    codes.PRIVILEGE_ESCALATION: "privilege-escalation", codes.UNKNOWN_EFFECTS: "unknown-effects",
    codes.ANALYZER_INTERNAL_ERROR: "analyzer-error",
}


def reason_json(reason: Reason) -> dict:
    """A reason as JSON (for batch output)."""
    return reason.to_json()
