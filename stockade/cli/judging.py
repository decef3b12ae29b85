"""The judge used by ``stockade check`` and ``stockade test``: the analyzer when present.

The compiler runs policy tests through a judge callback (it must not import the analyzer);
this adapter gives it the analyzer's verdict, falling back to command rules alone only when
the analyzer package is not built.
"""

from __future__ import annotations

from stockade.compiler.ir import PolicyIR
from stockade.compiler.policy_tests import Judge, Judgement, command_rules_judge


def analyzer_judge(ir: PolicyIR, command: str) -> Judgement:
    """Judge ``command`` with the static analyzer; the first reason of the decided verdict explains it."""
    from stockade.analyzer import analyze

    verdict = analyze(command, ir)
    reasons = list(getattr(verdict, "reasons", ()) or ())
    deciding = [r for r in reasons if getattr(r, "decision", getattr(r, "verdict", None)) == verdict.decision]
    reason = (deciding or reasons or [None])[0]
    message = getattr(reason, "message", "") if reason is not None else "no rule or effect objects"
    origin = getattr(reason, "rule", None) if reason is not None else None
    if origin is not None and not hasattr(origin, "line"):
        origin = getattr(origin, "origin", None)
    return Judgement(verdict.decision, message, origin)


def best_judge() -> Judge:
    """The analyzer's judge if the analyzer is available, else command rules alone."""
    try:
        import stockade.analyzer  # noqa: F401

        if hasattr(stockade.analyzer, "analyze"):
            return analyzer_judge
    except ImportError:
        pass
    return command_rules_judge
