"""The judge used by ``stockade check`` and ``stockade test``: the analyzer when present.

The compiler runs policy tests through a judge callback (it must not import the analyzer);
this adapter gives it the analyzer's verdict.  An analyzer that cannot be loaded is an
environment error (``R560``, exit 3), never a silent fallback to a weaker judge.
"""

from __future__ import annotations

from stockade import catalogue as codes
from stockade.compiler.ir import PolicyIR
from stockade.compiler.policy_tests import Judge, Judgement


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
    """The analyzer's judge (raises ``R560`` when the analyzer cannot be loaded: judging
    the tests with command rules alone would pass tests the real analyzer fails)."""
    try:
        import tree_sitter  # noqa: F401 (the analyzer loads these lazily: check them now)
        import tree_sitter_bash  # noqa: F401

        import stockade.analyzer  # noqa: F401
    except ImportError as exc:
        from stockade.diagnostics import Diagnostic, StockadeError

        raise StockadeError(Diagnostic(
            codes.ANALYZER_UNAVAILABLE,
            f"the analyzer cannot be loaded: `{exc}`; refusing to judge with command rules alone",
            help="reinstall stockade with its dependencies (`pip install stockade`: tree-sitter and "
                 "tree-sitter-bash)")) from None
    return analyzer_judge
