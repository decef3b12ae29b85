"""The library API: load_policy, Policy.analyze/check_path/compile, run, lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.integrations.helpers import CONTEXT, CONTEXT_ARGS, ROOT, stockade


def test_import_stockade_stays_light() -> None:
    code = "import sys, stockade; stockade.load_policy; print('lark' in sys.modules, 'tree_sitter' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_analyze_is_the_cli_verdict() -> None:
    import stockade

    policy = stockade.load_policy(ROOT / "examples/coding-agent.policy", **CONTEXT)
    verdict = policy.analyze("git push --force origin main")
    assert verdict.decision == "deny"
    cli = stockade_cli = stockade  # noqa: F841 - the module, for clarity below
    result = globals()["_cli_json"]("git push --force origin main")
    assert verdict.to_json()["decision"] == result["decision"]
    assert [r["code"] for r in verdict.to_json()["reasons"]] == [r["code"] for r in result["reasons"]]


def _cli_json(command: str) -> dict:
    result = stockade("analyze", "--policy", "examples/coding-agent.policy", *CONTEXT_ARGS, "--no-cache",
                      "--format", "json", "--", command)
    return json.loads(result.stdout)


def test_check_path_and_host() -> None:
    import stockade

    policy = stockade.load_policy(ROOT / "examples/coding-agent.policy", **CONTEXT)
    assert not policy.check_path("~/.ssh/id_rsa").allowed
    assert policy.check_path("/ws/app/src/x.py", "write").allowed
    assert not policy.check_path("/ws/app/.git/hooks/pre-commit", "write").allowed
    assert policy.check_path("/ws/app/.git/hooks/pre-commit", "read").to_json()["granted"] == "read"
    assert policy.check_host("github.com", 443) and not policy.check_host("evil.example", 443)
    with pytest.raises(ValueError):
        policy.check_path("/x", "execute")


def test_compile_targets() -> None:
    import stockade
    from stockade.integrations.base import ExportError

    policy = stockade.load_policy(ROOT / "examples/coding-agent.policy", **CONTEXT)
    assert policy.compile("ir").data["name"] == "coding-agent"
    srt = policy.compile("srt")
    assert srt.target == "srt" and "~/.ssh" in srt.data["filesystem"]["denyRead"] and srt.warnings
    assert 'decision = "forbidden"' in policy.compile("codex-rules").text
    assert "(version 1)" in policy.compile("seatbelt").text or policy.compile("seatbelt").text
    with pytest.raises(ExportError):
        policy.compile("cursor", strict=True)


def test_load_policy_errors_are_located() -> None:
    import stockade
    from stockade.diagnostics import StockadeError

    with pytest.raises(StockadeError) as info:
        stockade.load_policy(text="filesystm {\n}\n")
    assert info.value.diagnostics[0].code == "P102"


def test_run_delegates_or_says_it_cannot() -> None:
    import stockade
    import stockade.runtime
    from stockade.diagnostics import StockadeError

    if hasattr(stockade.runtime, "run"):
        pytest.skip("the runtime provides a run API; covered by the runtime's tests")
    with pytest.raises(StockadeError) as info:
        stockade.run(["true"], policy=stockade.load_policy(ROOT / "examples/coding-agent.policy", **CONTEXT))
    assert info.value.diagnostics[0].code == "X640"
