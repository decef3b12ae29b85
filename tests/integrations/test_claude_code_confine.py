"""`stockade hook claude-code --confine`: an allowed Bash command is rewritten (Claude Code's
`updatedInput`) to run under `stockade run` with the same policy — really under bubblewrap:
a read of a path the policy denies fails, although the analyzer let the command through."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

POLICY = """policy "confine"

filesystem {
    read  /
    write $WORKSPACE $TMPDIR /tmp
    deny  ~/.ssh
}

network {
    default deny
}

commands {
    allow   python3
    confirm git push
    deny    git push --force
    unknown-effects allow
}
"""

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


@pytest.fixture
def box(tmp_path: Path) -> dict:
    """A private HOME with a fake key, a workspace, a policy and the environment."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_fake").write_text("FAKE-KEY-MATERIAL\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    policy = tmp_path / "confine.policy"
    policy.write_text(POLICY)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "STOCKADE_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), PYTHONPATH=str(ROOT), NO_COLOR="1",
               STOCKADE_AUDIT=str(tmp_path / "audit.jsonl"))
    return {"home": home, "workspace": workspace, "policy": policy, "env": env, "tmp": tmp_path}


def answer(box: dict, command: str, *extra: str) -> dict | None:
    event = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(box["workspace"]),
             "tool_input": {"command": command, "description": "a command", "timeout": 60000}}
    done = subprocess.run([sys.executable, "-m", "stockade", "hook", "claude-code", str(box["policy"]), *extra],
                          input=json.dumps(event), capture_output=True, text=True, env=box["env"],
                          cwd=box["workspace"], timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["hookSpecificOutput"] if done.stdout.strip() else None


def bash(box: dict, command: str) -> subprocess.CompletedProcess[str]:
    """Run a (rewritten) Bash tool command as Claude Code's Bash tool would."""
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=box["env"],
                          cwd=box["workspace"], timeout=120)


def test_confine_rewrites_an_allowed_command_keeping_the_other_fields(box: dict) -> None:
    output = answer(box, "python3 reader.py", "--confine")
    assert output is not None and output["permissionDecision"] == "ask"  # no opt-in: the person approves
    updated = output["updatedInput"]
    assert updated["description"] == "a command" and updated["timeout"] == 60000
    assert f"run --policy {box['policy']} --workspace {box['workspace']} -- bash -c" in updated["command"]
    assert "--approve" not in updated["command"]
    approved = answer(box, "python3 reader.py", "--confine", "--approve-allowed")
    assert approved is not None and approved["permissionDecision"] == "allow"
    assert approved["updatedInput"] == updated


def test_confine_leaves_deny_alone_and_approves_a_confirmed_command(box: dict) -> None:
    denied = answer(box, "git push --force origin main", "--confine")
    assert denied is not None and denied["permissionDecision"] == "deny" and "updatedInput" not in denied
    asked = answer(box, "git push origin feature", "--confine", "--approve-allowed")
    assert asked is not None and asked["permissionDecision"] == "ask"  # confirm: always the person's call
    assert " run --policy " in asked["updatedInput"]["command"] and " --approve -- " in asked["updatedInput"]["command"]


@needs_bwrap
def test_the_rewritten_command_runs_confined(box: dict) -> None:
    reader = box["workspace"] / "reader.py"
    reader.write_text(f"print(open({str(box['home'] / '.ssh' / 'id_fake')!r}).read())\n")
    output = answer(box, "python3 reader.py", "--confine")
    assert output is not None
    done = bash(box, output["updatedInput"]["command"])
    assert "FAKE-KEY-MATERIAL" not in done.stdout + done.stderr
    assert done.returncode != 0 and "Error" in done.stderr  # the read failed inside the sandbox
    records = [json.loads(line) for line in (box["tmp"] / "audit.jsonl").read_text().splitlines()]
    assert [r["event"] for r in records] == ["decision", "run"]  # it went through `stockade run`


@needs_bwrap
def test_the_rewritten_command_means_the_same_text(box: dict) -> None:
    command = """printf '%s|' "a b" 'c"d' $((1+2)) "$(echo sub)" x\\ y; echo"""
    output = answer(box, command, "--confine")
    assert output is not None
    confined = bash(box, output["updatedInput"]["command"])
    assert confined.returncode == 0, confined.stderr
    assert confined.stdout == "a b|c\"d|3|sub|x y|\n"
