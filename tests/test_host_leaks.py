"""The tests do not write to the home directory: the CLI and integration test modules (they
start `stockade` subprocesses, some with a fake `HOME=/home/dev` context) run in a pytest
subprocess whose `HOME` is a fresh directory standing in for the real one; afterwards that
directory is still empty and `/home` is unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import changed, snapshot

ROOT = Path(__file__).resolve().parent.parent

#: Test modules that start the CLI (cheap ones: the check runs them again; the export goldens
#: are left out, they are made for the real home directory's path).
MODULES = ["tests/cli/test_cli.py", "tests/integrations/test_claude_code.py", "tests/integrations/test_generic_hook.py"]


def test_cli_and_integration_tests_leave_home_alone(tmp_path: Path) -> None:
    home = tmp_path / "real-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "STOCKADE_"))}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    before = snapshot((Path("/home"),))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "not golden", *MODULES], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == []
    assert changed(before, snapshot((Path("/home"),))) == []
