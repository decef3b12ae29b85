"""The policy language: grammar, parser, AST, formatter.

``parse(text, filename)`` returns ``(PolicyFile | None, diagnostics)`` and never raises for
bad input.  This package imports nothing from later stages.
"""

from stockade.policy_lang.parser import parse

__all__ = ["parse"]
