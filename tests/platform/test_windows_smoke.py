"""Windows smoke tests: the ``windows-ps`` script of the coding-agent policy on a real
Windows machine.

``stockade run`` refuses to run on Windows (it would run unconfined); the confinement there
is the script ``stockade compile --target windows-ps`` writes, so these tests compile it
for a private home, workspace and temporary directory and run commands through it.  The
script needs an elevated shell (firewall rules): GitHub's Windows runners are elevated.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from platform_smoke import DISALLOWED, POLICY, SECRET, Box, box, skip_unless

__all__ = ["box"]  # the fixture, imported

pytestmark = skip_unless("win32")

POWERSHELL = shutil.which("powershell") or "powershell.exe"


@pytest.fixture
def script(box: Box, tmp_path: Path) -> Path:
    """The compiled windows-ps script for the box."""
    out = tmp_path / "sandbox.ps1"
    result = subprocess.run([sys.executable, "-m", "stockade", "compile", str(POLICY), "--target", "windows-ps",
                             "--platform", "windows", "--workspace", str(box.workspace), "--home", str(box.home),
                             "--tmpdir", str(box.tmpdir), "-o", str(out)],
                            env=box.env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return out


def run(box: Box, script: Path, command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``command`` (a Windows command line) through the sandbox script."""
    argv = [POWERSHELL, "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-File", str(script),
            "-Command", command]
    return subprocess.run(argv, cwd=box.workspace, env=box.env(), capture_output=True, text=True, timeout=timeout)


def _firewall_rules() -> list[str]:
    listed = subprocess.run([POWERSHELL, "-NoProfile", "-Command",
                             "Get-NetFirewallRule -Name 'stockade-*' -ErrorAction SilentlyContinue | "
                             "ForEach-Object { $_.Name } | ConvertTo-Json"], capture_output=True, text=True, timeout=120)
    text = listed.stdout.strip()
    if not text:
        return []
    value = json.loads(text)
    return value if isinstance(value, list) else [value]


def test_cmd_echo(box: Box, script: Path) -> None:
    result = run(box, script, "cmd.exe /c echo hi")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == "hi"


def test_git_status(box: Box, script: Path) -> None:
    git = shutil.which("git") or "git.exe"
    result = run(box, script, f'"{git}" status --short --branch')
    assert result.returncode == 0, result.stdout + result.stderr
    assert "##" in result.stdout


def test_python(box: Box, script: Path) -> None:
    result = run(box, script, f'"{sys.executable}" -c "import os; print(os.cpu_count() > 0)"')
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == "True"


def test_write_inside_workspace_but_not_outside(box: Box, script: Path) -> None:
    inside = run(box, script, "cmd.exe /c echo ok> made.txt")
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert (box.workspace / "made.txt").read_text().strip() == "ok"
    target = box.home / "outside.txt"
    run(box, script, f'cmd.exe /c echo pwned> "{target}"')
    assert not target.exists()


def test_ssh_key_is_unreadable(box: Box, script: Path) -> None:
    result = run(box, script, f'cmd.exe /c type "{box.home / ".ssh" / "id_rsa"}"')
    assert SECRET not in result.stdout + result.stderr


def test_no_network_to_a_disallowed_host(box: Box, script: Path) -> None:
    host, port = DISALLOWED
    code = (f"import socket; s = socket.socket(); s.settimeout(20); "
            f"r = s.connect_ex(('{host}', {port})); print('result', r)")
    started = time.monotonic()
    result = run(box, script, f'"{sys.executable}" -c "{code}"')
    assert "result 0" not in result.stdout
    # WSAEACCES (10013): the firewall's block, at once — not a timeout of an unanswered address
    assert "result 10013" in result.stdout, result.stdout + result.stderr
    assert time.monotonic() - started < 120


def test_killed_run_is_cleaned_up_by_the_next(box: Box, script: Path) -> None:
    argv = [POWERSHELL, "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-File", str(script),
            "-Command", "cmd.exe /c ping -n 60 127.0.0.1"]
    proc = subprocess.Popen(argv, cwd=box.workspace, env=box.env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not _firewall_rules() and time.monotonic() < deadline:
        time.sleep(1)
    assert _firewall_rules(), "the run never added its firewall rules"
    proc.kill()  # TerminateProcess: no finally block runs
    proc.wait(timeout=60)
    assert _firewall_rules(), "nothing left behind to clean up: the test proves nothing"
    again = run(box, script, "cmd.exe /c echo again")
    assert again.returncode == 0, again.stdout + again.stderr
    assert _firewall_rules() == []
    state = Path(os.environ["LOCALAPPDATA"]) / "stockade" / "windows"
    assert not list(state.glob("run-*.journal"))
