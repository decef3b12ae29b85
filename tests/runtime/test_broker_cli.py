"""``stockade run`` under the coding-agent policy, as a user runs it: a refused destination
is named at the end of the run, and ``stockade audit --event net`` lists it with its rule.

The names are refused by the policy before any lookup, so no DNS and no network is needed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runtime.conftest import POLICY

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("bwrap") is None,
                                reason="bubblewrap is Linux only")

RUNNER = "import subprocess, sys\nsys.exit(subprocess.run(sys.argv[1:]).returncode)\n"


def _stockade(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stockade", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def _policy_line(text: str) -> int:
    return next(i for i, line in enumerate(POLICY.read_text().splitlines(), 1) if text in line)


def test_block_is_explained_and_listed(tmp_path: Path, cli_env: dict[str, str]) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "x.py").write_text(RUNNER)
    env = {**cli_env, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp")}
    done = _stockade(["run", "--policy", str(POLICY), "--workspace", str(workspace), "--approve", "--",
                      "python3", "x.py", "curl", "-fsS", "--max-time", "10", "https://github.com.evil.test/",
                      "http://pypi.org.evil.test/simple/"], env, workspace)
    assert done.returncode != 0
    default = _policy_line("default deny")
    assert f"stockade: blocked: github.com.evil.test:443 (no rule allows it; default deny at {POLICY}:{default})" \
        in done.stderr.splitlines(), done.stderr
    assert f"stockade: blocked: pypi.org.evil.test:80 (no rule allows it; default deny at {POLICY}:{default})" \
        in done.stderr.splitlines(), done.stderr
    audit = Path(cli_env["XDG_STATE_HOME"], "stockade", "audit.jsonl")
    listed = _stockade(["audit", str(audit), "--event", "net", "--format", "json"], env, workspace)
    assert listed.returncode == 0, listed.stderr
    records = json.loads(listed.stdout)
    assert [(r["host"], r["port"], r["decision"]) for r in records] == [
        ("github.com.evil.test", 443, "deny"), ("pypi.org.evil.test", 80, "deny")]
    assert all(r["rule"] == "default deny" and r["rule_at"] == f"{POLICY}:{default}" and r["address"] is None
               and "x.py curl" in r["command"] for r in records)
    table = _stockade(["audit", str(audit), "--event", "net"], {**env, "COLUMNS": "300"}, workspace)
    assert "blocked github.com.evil.test:443: no rule allows it" in table.stdout, table.stdout
    run = [json.loads(line) for line in audit.read_text().splitlines() if '"event":"run"' in line][-1]
    assert run["net_blocked"] == 2
