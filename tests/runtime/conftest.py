"""Fixtures for the runtime tests: a fake home with secrets, a workspace, canaries, and the
coding-agent policy compiled against them into a real bubblewrap prefix argv."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "examples" / "coding-agent.policy"


@dataclass
class Box:
    """A compiled sandbox over a temp home and workspace, with canary files to check."""

    root: Path
    home: Path
    workspace: Path
    outside: Path
    ir: object
    prefix: list[str]
    env: dict[str, str]
    placeholders: list[str]
    canaries: dict[str, str]

    def intact(self) -> bool:
        """Whether every canary still exists with its original content."""
        for path, digest in self.canaries.items():
            try:
                if hashlib.sha256(Path(path).read_bytes()).hexdigest() != digest:
                    return False
            except OSError:
                return False
        return True


def _canary(path: Path, text: str, canaries: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    canaries[str(path)] = hashlib.sha256(text.encode()).hexdigest()


def make_box(tmp: Path, limits: dict | None = None) -> Box:
    """Build the fake machine and compile the coding-agent policy against it."""
    from stockade.backends.base import compile_ir
    from stockade.compiler.pipeline import compile_policy
    from stockade.runtime.plan import strip_environment
    from stockade.runtime.sandbox import harden_bwrap_argv

    root = tmp.resolve()
    home, workspace, outside = root / "home", root / "home" / "ws", root / "outside"
    canaries: dict[str, str] = {}
    _canary(home / ".ssh" / "id_ed25519", "PRIVATE KEY canary\n", canaries)
    _canary(home / ".aws" / "credentials", "[default]\naws_secret_access_key=canary\n", canaries)
    _canary(home / ".bashrc", "# bashrc canary\n", canaries)
    _canary(home / ".profile", "# profile canary\n", canaries)
    _canary(home / "notes.txt", "home canary\n", canaries)
    _canary(outside / "canary.txt", "outside canary\n", canaries)
    _canary(workspace / ".env", "API_TOKEN=canary\n", canaries)
    _canary(workspace / ".git" / "hooks" / "pre-commit", "#!/bin/sh\nexit 0\n", canaries)
    _canary(workspace / ".git" / "config", "[core]\n", canaries)
    _canary(workspace / "src" / "main.py", "print('hi')\n", canaries)
    tmpdir = root / "tmp"
    tmpdir.mkdir(exist_ok=True)
    result = compile_policy(str(POLICY), workspace=str(workspace), home=str(home), tmpdir=str(tmpdir))
    artifact = compile_ir(result.ir, "bwrap")
    prefix = harden_bwrap_argv(strip_environment(artifact.data["argv"]), cwd=str(workspace))
    env = result.ir.filter_environment({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
                                        "GITHUB_TOKEN": "ghp_canary", "AWS_SECRET_ACCESS_KEY": "canary",
                                        "LANG": "C.UTF-8"})
    return Box(root, home, workspace, outside, result.ir, prefix, env,
               list(artifact.data.get("placeholders", [])), canaries)


def box_root() -> Path:
    """A fresh directory *outside* /tmp (the policy lets the sandbox write all of /tmp)."""
    base = "/var/tmp" if os.path.isdir("/var/tmp") else os.path.expanduser("~")
    return Path(tempfile.mkdtemp(prefix="stockade-box-", dir=base))


@pytest.fixture(scope="module")
def box() -> Iterator[Box]:
    """One compiled sandbox shared by a test module (the attempts do not change it)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("bubblewrap runs on Linux only")
    root = box_root()
    try:
        yield make_box(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture()
def cli_env(tmp_path: Path) -> dict[str, str]:
    """An environment for running the CLI with private cache and audit locations."""
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    env.pop("STOCKADE_AUDIT", None)
    env.pop("STOCKADE_CACHE_DIR", None)
    return env
