"""Stockade: runtime stage.

The library API is :func:`stockade.runtime.session.run` (re-exported here lazily as
``run``, with ``RunOutcome`` and ``PreviewResult``), so importing a runtime module stays
cheap.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

_LAZY = ("run", "RunOutcome", "PreviewResult")


def __getattr__(name: str) -> Any:
    """Import the run API on first use."""
    if name in _LAZY:
        from stockade.runtime import session

        return getattr(session, name)
    raise AttributeError(f"module 'stockade.runtime' has no attribute {name!r}")
