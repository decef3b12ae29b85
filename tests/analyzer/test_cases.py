"""The project's own analyzer cases, one JSON object a line in ``tests/analyzer/cases/*.jsonl``.

Each file groups the cases of one mechanism (tool family, shell feature); a case is
``{"id", "command", "expect", "why"}`` with ``expect`` one of ``deny`` (the verdict must be
``deny``), ``flag`` (``confirm`` or ``deny``) or ``allow``, under the same policy as the
public corpus (``examples/coding-agent.policy``'s equivalent, the ``ir`` fixture).  Two
optional fields: ``shell`` (``bash``, the default, ``powershell``, ``cmd`` or ``auto``: the
text is analysed as that shell's) and ``platform`` (``windows``: judged against
``examples/windows-agent.policy`` compiled for Windows paths, the ``windows_ir`` fixture).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stockade.analyzer import analyze
from stockade.analyzer.winshell import analyze_shell

CASES_DIR = Path(__file__).parent / "cases"


def _load() -> list[dict]:
    cases = []
    for path in sorted(CASES_DIR.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                case = json.loads(line)
                case["file"] = f"{path.name}:{number}"
                cases.append(case)
    return cases


CASES = _load()


def test_case_ids_are_unique() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(ir, request, case: dict) -> None:
    shell = case.get("shell", "bash")
    if case.get("platform") == "windows":
        verdict = analyze_shell(case["command"], request.getfixturevalue("windows_ir"), None, shell)
    elif shell != "bash":
        verdict = analyze_shell(case["command"], ir, None, shell)
    else:
        verdict = analyze(case["command"], ir)
    detail = f"{case['file']}: " + "; ".join(f"{r.verdict} {r.code} {r.message}" for r in verdict.reasons)
    assert case["expect"] in ("deny", "flag", "allow"), case
    if case["expect"] == "deny":
        assert verdict.decision == "deny", detail
    elif case["expect"] == "flag":
        assert verdict.decision in ("confirm", "deny"), detail
    else:
        assert verdict.decision == "allow", detail
