"""Verdicts are unchanged: every snapshot case gives exactly the recorded JSON verdict.

The snapshot (``snapshot/verdicts.jsonl``, see :mod:`snapshot_cases`) was recorded from the
analyzer before its speed work; intended model fixes regenerate it and the diff is reviewed.
"""

from __future__ import annotations

import json

import pytest
from snapshot_cases import SNAPSHOT, cases, snapshot_ir, verdict_json


def _recorded() -> list[dict]:
    with open(SNAPSHOT, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_snapshot_covers_the_case_list() -> None:
    recorded = _recorded()
    assert [r["command"] for r in recorded] == cases()
    decisions = {r["decision"] for r in recorded}
    assert decisions == {"allow", "confirm", "deny"}
    assert sum(len(r["reasons"]) > 1 for r in recorded) > 100


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path", "tree-sitter"])
def test_verdicts_identical_to_snapshot(fast_path: bool) -> None:
    ir = snapshot_ir()
    mismatches = []
    for expected in _recorded():
        got = verdict_json(expected["command"], ir, fast_path)
        if got != expected:
            mismatches.append((expected["command"], expected, got))
    assert not mismatches, f"{len(mismatches)} verdicts differ; first:\n" + "\n".join(
        f"{c!r}\n  expected {e}\n  got      {g}" for c, e, g in mismatches[:5])
