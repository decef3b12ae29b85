"""Stockade: a declarative policy compiler and static analyzer for AI-agent sandboxes.

Stages are subpackages: ``policy_lang`` → ``compiler`` → ``backends``; ``analyzer``;
``runtime``; ``cli``.  Nothing heavy is imported here: ``stockade run`` with a compiled
artifact must start fast.  The library API (:mod:`stockade.api`: ``load_policy``, ``Policy``,
``run``) is re-exported lazily.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

__version__ = "0.1.0"

_LAZY = {"load_policy": "stockade.api", "Policy": "stockade.api", "PathCheck": "stockade.api", "run": "stockade.api"}


def __getattr__(name: str) -> Any:
    """Import the library API on first use (keeps ``import stockade`` light)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'stockade' has no attribute {name!r}")
