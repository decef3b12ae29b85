"""The confirmation prompt on a real terminal: `stockade run` under a pseudo-terminal that is
the process's controlling terminal (``pty.fork``: a new session with the pty's slave as its
controlling tty), a person typing `yes` or `no`."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stockade.runtime import gate

ROOT = Path(__file__).resolve().parents[2]

POLICY = """policy "confirm-push"

filesystem {
    read  /
    write $WORKSPACE $TMPDIR /tmp
}

network {
    default deny
}

commands {
    confirm git push
}
"""

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def private_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose HOME and XDG directories are inside ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "STOCKADE_"))}
    for name in ("home", "cache", "state", "config"):
        (tmp_path / name).mkdir(exist_ok=True)
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               PYTHONPATH=str(ROOT), TERM="dumb", NO_COLOR="1")
    return env


def run_on_pty(argv: list[str], cwd: Path, env: dict[str, str], answers: dict[bytes, bytes]) -> tuple[int, str]:
    """Run ``argv`` with a pty as stdin/stdout/stderr and controlling terminal; each time the
    output so far ends with a key of ``answers`` (a prompt), type its value.  Returns the
    exit status and everything the terminal showed."""
    pid, master = pty.fork()
    if pid == 0:  # the child: a session leader whose controlling terminal is the pty
        try:
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    shown = bytearray()
    pending = dict(answers)
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
        for prompt in list(pending):
            if bytes(shown).rstrip().endswith(prompt.rstrip()):
                os.write(master, pending.pop(prompt))
    os.close(master)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), shown.decode("utf-8", "replace")


def git_workspace(tmp_path: Path, env: dict[str, str]) -> Path:
    """A workspace with a repository on branch `feature` and a bare `origin` inside it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", "-c", "init.defaultBranch=feature"]
    for args in (["init", "-q", "-b", "feature", "."], ["commit", "-q", "--allow-empty", "-m", "first"],
                 ["init", "-q", "--bare", "remote.git"], ["remote", "add", "origin", str(workspace / "remote.git")]):
        subprocess.run([*git, *args], cwd=workspace, env=env, check=True, capture_output=True)
    return workspace


def pushed(workspace: Path, env: dict[str, str]) -> bool:
    """Whether `feature` reached the bare remote."""
    result = subprocess.run(["git", "--git-dir", str(workspace / "remote.git"), "branch", "--list", "feature"],
                            env=env, capture_output=True, text=True, check=True)
    return "feature" in result.stdout


def test_terminal_confirm_reads_a_typed_answer_from_a_real_pty() -> None:
    for typed, expected in ((b"yes\n", True), (b"YES \n", True), (b"no\n", False), (b"y\n", False)):
        master, slave = os.openpty()
        try:
            os.write(master, typed)  # typed ahead: the line discipline holds it for the reader
            assert gate.terminal_confirm("ok? ", tty_path=os.ttyname(slave)) is expected
            shown = b""
            while b"ok? " not in shown and select.select([master], [], [], 10)[0]:
                shown += os.read(master, 100)
            assert b"ok? " in shown  # the prompt reached the terminal (after the echo)
        finally:
            os.close(master)
            os.close(slave)


def test_terminal_confirm_without_a_terminal_is_no(tmp_path: Path) -> None:
    assert gate.terminal_confirm("ok? ", tty_path=str(tmp_path / "missing")) is False


@needs_bwrap
@pytest.mark.parametrize("typed", [b"yes\n", b"no\n"])
def test_run_asks_on_the_controlling_terminal_and_proceeds_only_on_yes(tmp_path: Path, typed: bytes) -> None:
    env = private_env(tmp_path)
    workspace = git_workspace(tmp_path, env)
    policy = tmp_path / "confirm.policy"
    policy.write_text(POLICY)
    env["STOCKADE_AUDIT"] = str(tmp_path / "audit.jsonl")
    status, shown = run_on_pty([sys.executable, "-m", "stockade", "run", "--policy", str(policy), "--",
                                "git", "push", "origin", "feature"], workspace, env,
                               {gate.CONFIRM_PROMPT.encode(): typed})
    assert "type `yes` to run it" in shown, shown
    if typed == b"yes\n":
        assert status == 0, shown
        assert pushed(workspace, env)
        assert "[new branch]" in shown
    else:
        assert status == 1, shown
        assert not pushed(workspace, env)
        assert "rerun with `--approve`" in shown


@needs_bwrap
def test_a_preview_is_applied_by_typing_yes(tmp_path: Path) -> None:
    env = private_env(tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env["STOCKADE_AUDIT"] = str(tmp_path / "audit.jsonl")
    status, shown = run_on_pty([sys.executable, "-m", "stockade", "run", "--preview", "--",
                                "touch", "made-in-preview"], workspace, env,
                               {b"apply these changes to the workspace? type `yes`:": b"yes\n"})
    assert status == 0, shown
    assert "A made-in-preview" in shown
    assert (workspace / "made-in-preview").exists(), shown
    assert "applied 1 change(s)" in shown
