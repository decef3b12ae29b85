"""Stockade: runtime stage.

The library API is :func:`stockade.runtime.session.run` (re-exported here lazily as
``run``, with ``RunOutcome`` and ``PreviewResult``), so importing a runtime module stays
cheap.
"""

from typing import Any

_LAZY = ("run", "RunOutcome", "PreviewResult")


def __getattr__(name: str) -> Any:
    """Import the run API on first use."""
    if name in _LAZY:
        from stockade.runtime import session

        return getattr(session, name)
    raise AttributeError(f"module 'stockade.runtime' has no attribute {name!r}")
