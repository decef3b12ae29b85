"""An analyzer that cannot be loaded stops `stockade check` and `stockade test` (R560, exit
3): judging policy tests with command rules alone would pass tests the analyzer fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Start the CLI with tree-sitter unimportable (as on an installation missing it).
BLOCKED = ("import sys; sys.modules['tree_sitter'] = None; from stockade.cli.main import main; "
           "sys.exit(main(sys.argv[1:]))")


def _private(tmp: Path) -> dict[str, str]:
    """The environment with a private HOME and cache (the real HOME is never written)."""
    return dict(os.environ, HOME=str(tmp), STOCKADE_CACHE_DIR=str(tmp / "cache"), XDG_CACHE_HOME=str(tmp / "xdg"))


@pytest.mark.parametrize("command", [["check", "examples/coding-agent.policy"],
                                     ["test", "examples/coding-agent.policy"]])
def test_a_missing_analyzer_is_an_environment_error(command: list[str], tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", BLOCKED, *command], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env=_private(tmp_path))
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "error[R560]" in done.stderr and "Traceback" not in done.stderr
    assert "passed" not in done.stdout


def test_with_the_analyzer_the_same_commands_pass(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "stockade", "check", "examples/coding-agent.policy"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env=_private(tmp_path))
    assert done.returncode == 0 and "6/6 tests passed" in done.stdout, done.stderr
