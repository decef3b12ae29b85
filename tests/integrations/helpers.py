"""Shared helpers for the integration tests: the CLI as a subprocess, fixtures, goldens, probes."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOLDEN = Path(__file__).resolve().parent / "golden"
CONTEXT = {"workspace": "/ws/app", "home": "/home/dev", "tmpdir": "/tmp"}
CONTEXT_ARGS = ["--workspace", "/ws/app", "--home", "/home/dev", "--tmpdir", "/tmp"]
EXAMPLES = ("coding-agent", "team-overlay")

#: Probe commands and paths for round trips (argv lists; absolute paths).
PROBE_COMMANDS = [
    ["git", "push", "--force", "origin", "main"], ["git", "push", "origin", "feature"], ["git", "status"],
    ["git", "reset", "--hard"], ["git", "reset", "--keep"], ["git", "fetch"], ["ls", "-la"], ["npm", "run", "test"],
    ["npm", "run", "build"], ["curl", "https://x"], ["git", "diff", "--stat"], ["sudo", "ls"], ["rm", "-rf", "/"],
]
PROBE_PATHS = [
    "/home/dev/.ssh/id_rsa", "/home/dev/.ssh/known_hosts", "/home/dev/.aws/credentials", "/ws/app/src/main.py",
    "/ws/app/.env", "/ws/app/.git/hooks/pre-commit", "/tmp/x", "/etc/passwd", "/home/dev/.cache/pip/x",
    "/home/dev/.cache/go-build/a", "/opt/sdk/lib", "/home/dev/notes/a.md", "/etc/hosts",
]
PROBE_HOSTS = [("github.com", 443), ("registry.npmjs.org", 443), ("pypi.org", 443), ("pypi.org", 80),
               ("uploads.github.com", 443), ("evil.example", 443), ("files.pypi.org", 443)]


#: The subprocesses' cache and state: a private directory, never the fake HOME's (`/home/dev`
#: is only the context policies are compiled for; nothing may be written there).
_STATE = tempfile.mkdtemp(prefix="stockade-integrations-")
atexit.register(shutil.rmtree, _STATE, True)


def stockade(*args: str, stdin: bytes | str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess (no colour), with HOME `/home/dev` and a private
    cache and state directory."""
    env = dict(os.environ, NO_COLOR="1", HOME="/home/dev", STOCKADE_CACHE_DIR=os.path.join(_STATE, "cache"),
               XDG_CACHE_HOME=os.path.join(_STATE, "xdg-cache"), XDG_STATE_HOME=os.path.join(_STATE, "state"))
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([sys.executable, "-m", "stockade", *args], input=data, capture_output=True, cwd=cwd,
                          env=env, timeout=60)


def fixture(name: str) -> str:
    """A fixture file's text."""
    return (FIXTURES / name).read_text(encoding="utf-8")


def check_golden(path: Path, text: str) -> None:
    """Compare with a golden file (``STOCKADE_UPDATE_GOLDEN=1`` rewrites it)."""
    if os.environ.get("STOCKADE_UPDATE_GOLDEN") or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if not os.environ.get("STOCKADE_UPDATE_GOLDEN"):
            raise AssertionError(f"golden file {path} was missing and has been written; re-run")
    assert text == path.read_text(encoding="utf-8"), f"differs from {path}"


def compile_text(text: str):  # type: ignore[no-untyped-def]
    """Compile policy text in the fixed test context."""
    from stockade.compiler.pipeline import compile_policy

    return compile_policy(None, text=text, **CONTEXT).ir


def load_json(text: str) -> dict:
    """Parse JSON text."""
    return json.loads(text)
