"""Shared helpers and the ``box`` fixture of the platform smoke suite (imported by each test module:
a ``conftest.py`` here would shadow the top-level one).

The suite proves, on a real macOS or Windows machine, that the artifacts Stockade generates
start ordinary programs and confine them: ``.github/workflows/platforms.yml`` runs it on
``macos-latest`` and ``windows-latest`` runners.  Each test works in a private temporary
*home* (with a planted ``.ssh/id_rsa``) and *workspace* (a git repository): nothing of the
runner's real home is read or written.  On any other platform every test is skipped with
the reason, so ``pytest`` on Linux stays green and says why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "examples" / "coding-agent.policy"
SECRET = "stockade-smoke-secret-7f3a"
#: an address reserved for documentation (RFC 5737): nothing answers there, so a refusal
#: that comes at once is the sandbox's, and no traffic leaves the runner
DISALLOWED = ("192.0.2.1", 80)


@dataclass
class Box:
    """A private home and workspace for one test."""

    home: Path
    workspace: Path
    tmpdir: Path

    def env(self) -> dict[str, str]:
        """The environment for the CLI: the private home and Stockade's state inside it."""
        env = dict(os.environ)
        env.update({"HOME": str(self.home), "USERPROFILE": str(self.home),
                    "XDG_STATE_HOME": str(self.home / ".local" / "state"),
                    "XDG_CACHE_HOME": str(self.home / ".cache"), "XDG_CONFIG_HOME": str(self.home / ".config"),
                    "STOCKADE_AUDIT": str(self.home / "audit.jsonl"), "PYTHONPATH": str(ROOT),
                    # the policy's $TMPDIR is writable: keep it apart from the home, which is not
                    "TMPDIR": str(self.tmpdir), "TEMP": str(self.tmpdir), "TMP": str(self.tmpdir)})
        return env


@pytest.fixture
def box(tmp_path: Path) -> Box:
    """A home with a secret key and a workspace that is a git repository."""
    home = (tmp_path / "home").resolve()
    workspace = (tmp_path / "work").resolve()
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET + "\n")
    workspace.mkdir()
    tmpdir = (tmp_path / "tmp").resolve()
    tmpdir.mkdir()
    (workspace / "README.md").write_text("smoke\n")
    git = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(home)}
    subprocess.run(["git", "init", "-q", str(workspace)], check=True, env={**os.environ, **git}, timeout=60)
    return Box(home, workspace, tmpdir)


def skip_unless(platform: str) -> pytest.MarkDecorator:
    """Skip a whole module unless running on ``platform`` (``darwin`` or ``win32``)."""
    names = {"darwin": "macOS", "win32": "Windows"}
    return pytest.mark.skipif(sys.platform != platform,
                              reason=f"platform smoke test: needs a real {names[platform]} machine "
                                     f"(this is {sys.platform}); run by .github/workflows/platforms.yml")
