"""The runtime's library run API (:func:`stockade.runtime.session.run`), for real under
bubblewrap: output through the sinks, refusals as outcomes, limits, confirm and apply
callbacks, the audit trail, errors, and a cached run that stays lean."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.diagnostics import StockadeError
from stockade.runtime.session import PreviewResult, RunOutcome, run
from tests.runtime.conftest import POLICY, Box, box_root, make_box

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")


@pytest.fixture(scope="module")
def sbox() -> Iterator[Box]:
    import shutil

    root = box_root()
    try:
        yield make_box(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture()
def private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Private cache and audit locations for stockade itself."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("STOCKADE_CACHE_DIR", raising=False)
    monkeypatch.delenv("STOCKADE_AUDIT", raising=False)
    return tmp_path


def environ(box: Box) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(box.home), "TMPDIR": str(box.root / "tmp"),
            "LANG": "C.UTF-8", "GITHUB_TOKEN": "ghp_canary_secret"}


def confined(box: Box, command, private: Path, policy: str | Path = POLICY, **options) -> tuple[RunOutcome, str, str]:
    """Run through the library with captured output."""
    out, err = bytearray(), bytearray()
    outcome = run(command, policy=str(policy), workspace=str(box.workspace), audit=str(private / "audit.jsonl"),
                  environ=environ(box), stdout=out.extend, stderr=err.extend, **options)
    return outcome, out.decode(), err.decode()


def audit_records(private: Path) -> list[dict]:
    path = private / "audit.jsonl"
    return [json.loads(line) for line in path.open()] if path.exists() else []


def test_allowed_shell_text_runs_with_output_in_the_sinks(sbox, private) -> None:
    outcome, out, err = confined(sbox, "echo out; echo err >&2; exit 7", private)
    assert outcome.ran and outcome.verdict == "allow" and outcome.approved_by == "policy"
    assert (out, err) == ("out\n", "err\n")
    assert outcome.exit_status == 7 and outcome.bytes_out == 4 and outcome.bytes_err == 4
    assert outcome.command == ("/bin/sh", "-c", "echo out; echo err >&2; exit 7")
    assert outcome.backend == "bwrap" and outcome.sandbox_argv[0].endswith("bwrap")
    assert outcome.audit == str(private / "audit.jsonl") and outcome.policy == "coding-agent"
    records = audit_records(private)
    assert [r["event"] for r in records] == ["decision", "run"] and records[1]["exit_status"] == 7
    data = outcome.to_json()
    assert data["ran"] is True and data["exit_status"] == 7 and data["preview"] is None
    assert json.loads(json.dumps(data)) == data


def test_argv_command_and_filtered_environment(sbox, private) -> None:
    outcome, out, _ = confined(sbox, ["env"], private)
    assert outcome.ran and outcome.exit_status == 0 and outcome.text == "env"
    assert "ghp_canary_secret" not in out and "CI=1" in out
    assert "ghp_canary_secret" not in (private / "audit.jsonl").read_text()


def test_denied_command_is_an_outcome_with_reasons(sbox, private) -> None:
    outcome, out, err = confined(sbox, f"cat {sbox.home}/.ssh/id_ed25519", private)
    assert not outcome.ran and outcome.verdict == "deny" and outcome.exit_status is None
    assert any(".ssh" in reason for reason in outcome.reasons)
    assert out == err == ""
    assert outcome.to_json()["ran"] is False and "detail" in outcome.to_json()
    assert [r["event"] for r in audit_records(private)] == ["decision"]
    assert sbox.intact()


def test_confirm_callback_decides(sbox, private) -> None:
    asked: list[str] = []

    def no(judgement) -> bool:
        asked.append(judgement.decision)
        return False

    refused, _, _ = confined(sbox, "git push origin feature", private, confirm=no)
    assert asked == ["confirm"] and not refused.ran and refused.verdict == "confirm"
    without, _, _ = confined(sbox, "git push origin feature", private)
    assert not without.ran

    def yes(judgement) -> bool:
        return True

    yes.approved_by = "harness"  # type: ignore[attr-defined]
    text = "git push origin feature 2>/dev/null; echo pushed"
    approved, out, _ = confined(sbox, text, private, confirm=yes)
    assert approved.ran and approved.approved_by == "harness" and out.endswith("pushed\n")
    assert audit_records(private)[-2]["approved_by"] == "harness"
    flagged, _, _ = confined(sbox, text, private, approve=True)
    assert flagged.ran and flagged.approved_by == "--approve"


def test_limits_hit_are_reported(sbox, private) -> None:
    tight = private / "tight.policy"
    tight.write_text(POLICY.read_text().replace("timeout   10m", "timeout   1s").replace("output    1MiB",
                                                                                         "output    100B"))
    slow, _, _ = confined(sbox, ["sleep", "30"], private, policy=tight)
    assert slow.ran and slow.exit_status == 124 and "timeout" in slow.limits_hit
    assert slow.limits.timeout == 1.0 and slow.duration < 10
    loud, out, err = confined(sbox, ["seq", "1000"], private, policy=tight)
    assert loud.exit_status == 0 and loud.limits_hit == ("output",)
    assert len(out) == 100 and loud.bytes_shown == 100 and loud.bytes_out > 100 and "truncated" in err


def test_preview_apply_callback(sbox, private) -> None:
    target = sbox.workspace / "src" / "main.py"
    before = target.read_text()
    seen: list[PreviewResult] = []

    def decline(preview: PreviewResult) -> bool:
        seen.append(preview)
        return False

    script = "echo more >> src/main.py; echo n > new.txt"
    shown, _, _ = confined(sbox, script, private, preview=True, diff=True, apply=decline)
    assert len(seen) == 1 and shown.preview is not None and not shown.preview.applied
    assert {(c.kind, c.path) for c in shown.preview.changes} == {("modified", "src/main.py"), ("added", "new.txt")}
    assert shown.preview.counts == {"added": 1, "modified": 1} and "+more" in (shown.preview.diff or "")
    assert target.read_text() == before and not (sbox.workspace / "new.txt").exists()
    nothing, _, _ = confined(sbox, "true", private, preview=True, apply=decline)
    assert len(seen) == 1 and nothing.preview is not None and not nothing.preview.changes
    applied, _, _ = confined(sbox, "echo n > new.txt", private, preview=True, apply=lambda preview: True)
    assert applied.preview is not None and applied.preview.applied and applied.preview.applied_count == 1
    assert (sbox.workspace / "new.txt").read_text() == "n\n"
    assert audit_records(private)[-1]["preview"]["applied"] is True
    (sbox.workspace / "new.txt").unlink()


def test_errors_raise(sbox, private, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = private / "bad.policy"
    bad.write_text('policy "x"\nfilesystem {\n  wrte /tmp\n}\n')
    with pytest.raises(StockadeError) as info:
        confined(sbox, "true", private, policy=bad)
    assert info.value.diagnostics[0].code[0] in "CP"
    with pytest.raises(StockadeError) as info:
        run("true", workspace=str(private / "missing"))
    assert info.value.diagnostics[0].code == "R520"
    with pytest.raises(ValueError):
        run([], policy=str(POLICY))
    monkeypatch.setenv("PATH", str(private / "empty-path"))
    canary = private / "ran"
    with pytest.raises(StockadeError) as info:
        confined(sbox, ["/usr/bin/touch", str(canary)], private)
    assert info.value.diagnostics[0].code == "R501" and not canary.exists()


def test_cached_library_run_imports_neither_lark_nor_tree_sitter(sbox, private) -> None:
    probe = ("import json, sys; from stockade.runtime.session import run; "
             "o = run(['true'], policy=sys.argv[1], workspace=sys.argv[2], audit=sys.argv[3], "
             "environ=json.loads(sys.argv[4])); "
             "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('lark', 'tree_sitter', 'tree_sitter_bash')"
             " or (m.startswith(('stockade.policy_lang', 'stockade.analyzer', 'stockade.compiler'))"
             "     and m not in ('stockade.compiler', 'stockade.compiler.cache', 'stockade.compiler.environment'))); "
             "print(o.exit_status, heavy)")
    args = [sys.executable, "-c", probe, str(POLICY), str(sbox.workspace), str(private / "audit.jsonl"),
            json.dumps(environ(sbox))]
    env = {**environ(sbox), "XDG_CACHE_HOME": str(private / "cache")}
    cwd = Path(__file__).resolve().parents[2]
    first = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    second = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert second.stdout.strip() == "0 []", second.stderr


def test_the_sandbox_cannot_touch_stockades_own_state(sbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the cache and the audit file inside the writable workspace, a command can
    neither plant a plan or verdict, nor rename the cache away, nor edit the trail."""
    state = sbox.workspace / "state"
    monkeypatch.setenv("STOCKADE_CACHE_DIR", str(state / "cache"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    audit = state / "audit.jsonl"
    # inline Python: the analyzer cannot see into it (confirm, approved), so only the
    # sandbox stands in the way
    attack = (
        "import os\n"
        "def attempt(name, fn, *args):\n"
        "    try:\n"
        "        fn(*args)\n"
        "        print(name)\n"
        "    except OSError:\n"
        "        pass\n"
        "def append(path):\n"
        "    with open(path, 'a') as handle:\n"
        "        handle.write('x')\n"
        f"os.chdir({str(state)!r})\n"
        "attempt('wrote a plan', append, 'cache/planted')\n"
        "attempt('wrote the audit', append, 'audit.jsonl')\n"
        "attempt('made a dir', os.mkdir, 'cache/plans/zz')\n"
        "attempt('moved the cache', os.rename, 'cache', 'cache.away')\n"
        "attempt('moved the audit', os.rename, 'audit.jsonl', 'a.away')\n"
        "attempt('moved the state', os.rename, '../state', '../state.away')\n"
        "attempt('removed the audit', os.unlink, 'audit.jsonl')\n"
        "print('done')\n")
    try:
        for _ in range(2):  # compiled, then from the (still trustworthy) cache
            out, err = bytearray(), bytearray()
            outcome = run(["python3", "-I", "-S", "-c", attack], policy=str(POLICY), workspace=str(sbox.workspace),
                          audit=str(audit), environ=environ(sbox), stdout=out.extend, stderr=err.extend,
                          approve=True)
            assert outcome.ran and out.decode().strip() == "done", (out.decode(), err.decode())
        records = [json.loads(line) for line in audit.open()]
        assert [r["event"] for r in records] == ["decision", "run", "decision", "run"]
        assert (state / "cache").is_dir() and not (state / "cache" / "planted").exists()
        assert records[2]["cached_verdict"] is True
    finally:
        import shutil

        shutil.rmtree(state, ignore_errors=True)
