"""Fixtures of the platform smoke suite (helpers in ``platform_smoke.py``)."""

from __future__ import annotations

from platform_smoke import box

__all__ = ["box"]
