"""Shared test helpers: paths to the repository's examples."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture
def examples_dir() -> Path:
    """The examples folder of the repository."""
    return EXAMPLES
