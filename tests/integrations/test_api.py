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
    assert 'decision = "forbidden"' in policy.compile("codex-rules", allow_looser=True).text
    assert "(version 1)" in policy.compile("seatbelt").text or policy.compile("seatbelt").text
    with pytest.raises(ExportError):
        policy.compile("cursor", strict=True)


def test_load_policy_errors_are_located() -> None:
    import stockade
    from stockade.diagnostics import StockadeError

    with pytest.raises(StockadeError) as info:
        stockade.load_policy(text="filesystm {\n}\n")
    assert info.value.diagnostics[0].code == "P102"


@pytest.fixture()
def machine(tmp_path, monkeypatch: pytest.MonkeyPatch):
    """A fake home with a secret, a workspace, and private stockade cache and audit
    locations (outside /tmp, which the policy lets the sandbox write)."""
    import shutil
    import tempfile
    from pathlib import Path

    if not sys.platform.startswith("linux"):
        pytest.skip("bubblewrap runs on Linux only")
    base = "/var/tmp" if Path("/var/tmp").is_dir() else str(tmp_path)
    root = Path(tempfile.mkdtemp(prefix="stockade-api-", dir=base)).resolve()
    (root / "home" / ".ssh").mkdir(parents=True)
    (root / "home" / ".ssh" / "id_rsa").write_text("PRIVATE KEY canary\n")
    (root / "home" / "ws").mkdir()
    (root / "tmp").mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "cache"))
    monkeypatch.setenv("STOCKADE_AUDIT", str(root / "audit.jsonl"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _load(machine, **kwargs):
    import stockade

    return stockade.load_policy(kwargs.pop("path", ROOT / "examples/coding-agent.policy"),
                                workspace=str(machine / "home" / "ws"), home=str(machine / "home"),
                                tmpdir=str(machine / "tmp"), **kwargs)


def test_run_allowed_command_output_through_the_sinks(machine) -> None:
    import stockade

    out, err = bytearray(), bytearray()
    outcome = stockade.run(["sh", "-c", "echo hi; echo oops >&2"], policy=_load(machine), stdout=out.extend,
                           stderr=err.extend)
    assert outcome.ran and outcome.verdict == "allow" and outcome.exit_status == 0
    assert (bytes(out), bytes(err)) == (b"hi\n", b"oops\n")
    assert outcome.workspace == str(machine / "home" / "ws")
    assert outcome.audit == str(machine / "audit.jsonl") and (machine / "audit.jsonl").exists()
    assert outcome.to_json()["exit_status"] == 0


def test_run_by_path_in_a_workspace(machine) -> None:
    import stockade

    out = bytearray()
    outcome = stockade.run("pwd", policy=str(ROOT / "examples/coding-agent.policy"),
                           workspace=str(machine / "home" / "ws"), stdout=out.extend,
                           environ={"PATH": "/usr/bin:/bin", "HOME": str(machine / "home"),
                                    "TMPDIR": str(machine / "tmp")})
    assert outcome.ran and bytes(out).decode().strip() == str(machine / "home" / "ws")


def test_run_denied_command_is_not_run(machine) -> None:
    import stockade

    out = bytearray()
    outcome = stockade.run(f"cat {machine}/home/.ssh/id_rsa", policy=_load(machine), stdout=out.extend)
    assert not outcome.ran and outcome.verdict == "deny" and outcome.exit_status is None
    assert outcome.reasons and any(".ssh" in reason for reason in outcome.reasons)
    assert out == bytearray()


def test_run_reports_a_limit_hit(machine) -> None:
    import stockade

    text = (ROOT / "examples/coding-agent.policy").read_text().replace("timeout   10m", "timeout   1s")
    assert "timeout   1s" in text
    policy = _load(machine, path=None, text=text)
    outcome = stockade.run(["sleep", "30"], policy=policy, stdout=lambda b: None, stderr=lambda b: None)
    assert outcome.ran and outcome.exit_status == 124 and outcome.limits_hit == ("timeout",)


def test_run_refuses_a_policy_loaded_for_another_workspace(machine) -> None:
    import stockade
    from stockade.diagnostics import StockadeError

    other = machine / "other"
    other.mkdir()
    with pytest.raises(StockadeError) as info:
        stockade.run(["true"], policy=_load(machine), workspace=str(other))
    assert info.value.diagnostics[0].code == "R522"
