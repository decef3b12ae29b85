"""macOS smoke tests: ``stockade run`` under the coding-agent policy on a real Mac.

Each command is judged by the analyzer first; ``--approve`` accepts a ``confirm`` verdict
(inline interpreter code), so what is tested is the confinement, not the prompt.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from platform_smoke import DISALLOWED, POLICY, SECRET, Box, box, skip_unless

__all__ = ["box"]  # the fixture, imported

pytestmark = skip_unless("darwin")


def run(box: Box, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``stockade run --policy coding-agent --approve -- argv`` in the box's workspace."""
    cmd = [sys.executable, "-m", "stockade", "run", "--policy", str(POLICY), "--workspace", str(box.workspace),
           "--approve", "--", *argv]
    return subprocess.run(cmd, cwd=box.workspace, env=box.env(), capture_output=True, text=True, timeout=timeout)


def test_shell_echo(box: Box) -> None:
    result = run(box, "/bin/sh", "-c", "echo hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hi"


def test_git_status(box: Box) -> None:
    result = run(box, "git", "status", "--short", "--branch")
    assert result.returncode == 0, result.stderr
    assert "##" in result.stdout


def test_python(box: Box) -> None:
    result = run(box, "python3", "-c", "import os, sys; print(os.cpu_count() > 0, sys.version_info[0])")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "3"]


def _hidden(path: Path) -> str:
    """Python that rebuilds ``path`` at run time: the analyzer cannot see which file it names,
    so the command is run (``--approve``) and the sandbox, not the analyzer, must refuse."""
    return f"bytes.fromhex({path.as_posix().encode().hex()!r}).decode()"


def test_write_inside_workspace_but_not_outside(box: Box) -> None:
    inside = run(box, "/bin/sh", "-c", "echo ok > made.txt")
    assert inside.returncode == 0, inside.stderr
    assert (box.workspace / "made.txt").read_text().strip() == "ok"
    target = box.home / "outside.txt"
    code = (f"print('ran', flush=True)\n"
            f"try:\n    open({_hidden(target)}, 'w').write('pwned')\n    print('written')\n"
            f"except OSError as e:\n    print('refused', e.errno)\n")
    outside = run(box, "python3", "-c", code)
    assert "ran" in outside.stdout, outside.stdout + outside.stderr  # the command did run
    assert "written" not in outside.stdout
    assert not target.exists()


def test_ssh_key_is_unreadable(box: Box) -> None:
    key = box.home / ".ssh" / "id_rsa"
    code = (f"print('ran', flush=True)\n"
            f"try:\n    print(open({_hidden(key)}).read())\n"
            f"except OSError as e:\n    print('refused', e.errno)\n")
    result = run(box, "python3", "-c", code)
    assert "ran" in result.stdout, result.stdout + result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert "refused" in result.stdout


def test_no_network_to_a_disallowed_host(box: Box) -> None:
    host, port = DISALLOWED
    code = ("import errno, socket\n"
            "s = socket.socket()\n"
            "s.settimeout(20)\n"
            "try:\n"
            f"    s.connect(({host!r}, {port}))\n"
            "    print('connected')\n"
            "except OSError as e:\n"
            "    print('refused', e.errno in (errno.EPERM, errno.EACCES))\n")
    result = run(box, "python3", "-c", code)
    assert "connected" not in result.stdout
    assert result.stdout.split() == ["refused", "True"], result.stdout + result.stderr  # the sandbox, not a timeout


def _running(pattern: str) -> bool:
    """Whether a process whose command line contains ``pattern`` exists (any pid namespace)."""
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, timeout=30).returncode == 0


def test_killed_run_leaves_no_process_behind(box: Box) -> None:
    duration = f"60.{os.getpid() % 10000:04d}"  # a command line no other process has
    pattern = f"sleep {duration}"
    marker = box.workspace / "started.txt"
    cmd = [sys.executable, "-m", "stockade", "run", "--policy", str(POLICY), "--workspace", str(box.workspace),
           "--approve", "--", "/bin/sh", "-c", f"echo started > started.txt; exec sleep {duration}"]
    proc = subprocess.Popen(cmd, cwd=box.workspace, env=box.env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while not (marker.exists() and _running(pattern)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _running(pattern), "the confined command never started"
    os.kill(proc.pid, signal.SIGKILL)  # stockade itself, as a crashed harness would leave it
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _running(pattern) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = _running(pattern)
    if alive:
        try:  # leave the runner clean (the group this test started), then report
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not alive, "the confined command outlived the killed `stockade run`"
    again = run(box, "/bin/sh", "-c", "echo again")
    assert again.returncode == 0 and again.stdout.strip() == "again"


def test_profile_is_accepted_by_sandbox_exec(box: Box, tmp_path: Path) -> None:
    """The compiled profile, given to sandbox-exec directly: Apple's own parser accepts it."""
    out = tmp_path / "agent.sb"
    compiled = subprocess.run([sys.executable, "-m", "stockade", "compile", str(POLICY), "--target", "seatbelt",
                               "--workspace", str(box.workspace), "--home", str(box.home), "-o", str(out)],
                              env=box.env(), capture_output=True, text=True, timeout=120)
    assert compiled.returncode == 0, compiled.stderr
    result = subprocess.run(["/usr/bin/sandbox-exec", "-f", str(out), "-D", f"WORKSPACE={box.workspace}",
                             "-D", f"HOME={box.home}", "-D", f"TMPDIR={os.environ.get('TMPDIR', '/tmp')}",
                             "/usr/bin/true"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_the_broker_judges_a_host_rule_on_macos(box: Box) -> None:
    """The coding-agent policy's host rules go through `stockade run`'s broker, listening on
    the host's loopback at the one port the profile admits: a host it does not list gets the
    broker's 403 (never resolved), named at the end of the run."""
    code = ("import os, socket, urllib.parse\n"
            "proxy = urllib.parse.urlsplit(os.environ['HTTPS_PROXY'])\n"
            "s = socket.create_connection((proxy.hostname, proxy.port), 20)\n"
            "s.sendall(b'CONNECT not-listed.example:443 HTTP/1.1\\r\\n\\r\\n')\n"
            "print(s.recv(200).split(b'\\r\\n')[0].decode())\n")
    result = run(box, "python3", "-c", code)
    assert result.stdout.startswith("HTTP/1.1 403 "), result.stdout + result.stderr
    assert "not-listed.example:443" in result.stderr  # the end-of-run summary of blocked destinations
