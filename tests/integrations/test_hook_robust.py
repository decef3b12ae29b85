"""Every hook invocation ends with an answer that blocks when anything goes wrong (issue 13).

Claude Code reads a hook's JSON only on exit 0, blocks on exit 2 (showing its stderr), and
treats any other exit — a crash, a traceback — as a non-blocking error: the tool call runs.
The hooks run in SUBPROCESSES under ``LC_ALL=C`` with hostile events: JSON escapes that make
bytes which are not UTF-8 (or not characters) in every field each tool reads, mistyped and
missing fields, Python-only JSON (``NaN``), and texts whose analysis hits a budget.  Each must
exit 0 with no decision (allowed: Claude Code's own permissions apply) or a valid ``deny``/``ask``.
When the answer cannot even be written (standard output closed), the hook exits 2 (Claude
Code) or 1 (generic): blocking.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.integrations.helpers import _STATE, CONTEXT_ARGS, ROOT

#: raw JSON string literals (their escapes reach the hook's JSON reader as written)
RAW = {
    "surrogate-escaped bytes": b'"a{\\udcf3\\udcb0\\udc80\\udc80 ~/.ssh/x"',
    "lone surrogate": b'"~/.ssh/\\ud800"',
    "NUL": b'"~/.ssh/id\\u0000x"',
    "ANSI-C escapes": b'"cat $\'\\\\udcf3\\\\udcb0\\\\udc80\\\\udc80\' a{$\'\\\\xf3\\\\xb0\\\\x80\\\\x80\'"',
    "escape without digits": b'"cat $\'\\\\x\'/x ~/.ssh/id"',
    "backslash-newline join": b'"echo a{\\\\\\n\\udcf3\\udcb0\\udc80\\udc80"',
}
#: tool → the field of its input the hostile text goes in
FIELDS = {"Bash": "command", "PowerShell": "command", "Write": "file_path", "Read": "file_path",
          "Grep": "pattern", "Glob": "path", "WebFetch": "url"}


def _events() -> dict[str, bytes]:
    events = {}
    for name, raw in RAW.items():
        for tool, field in FIELDS.items():
            extra = b', "pattern": "*"' if tool == "Glob" else b""
            events[f"{tool} {name}"] = (b'{"hook_event_name": "PreToolUse", "tool_name": "' + tool.encode() +
                                        b'", "tool_input": {"' + field.encode() + b'": ' + raw + extra + b'}}')
        events[f"cwd {name}"] = (b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": ' + raw +
                                 b', "tool_input": {"command": "rm -rf x"}}')
    bash = b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": '
    events.update({
        "tool_input a list": bash + b'["rm -rf ~"]}',
        "tool_input null": bash + b"null}",
        "command a list": bash + b'{"command": ["rm", "-rf", "~"]}}',
        "NaN in the event": bash + b'{"command": "ls", "timeout": NaN}}',
        "a number of 10,000 digits": bash + b'{"command": "ls", "timeout": ' + b"9" * 10_000 + b"}}",
        "nested 100,000 deep": bash + b'{"command": "ls", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
        "pattern bomb": bash + json.dumps({"command": "x=" + "a" * 4000 + "; y=${x//" + "*a" * 40 + "b/}; rm -rf ~"}
                                          ).encode() + b"}",
        "nested endless loops": bash + json.dumps({"command": "while true; do " * 3000 + "ls" + "; done" * 3000}
                                                  ).encode() + b"}",
        "deep defaults": bash + json.dumps({"command": "echo " + "${x:-" * 5000 + "a" + "}" * 5000}).encode() + b"}",
    })
    return events


EVENTS = _events()


def _hook(harness: str, data: bytes, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, LC_ALL="C", NO_COLOR="1", HOME="/home/dev",
               STOCKADE_CACHE_DIR=os.path.join(_STATE, "cache"), XDG_CACHE_HOME=os.path.join(_STATE, "xdg-cache"),
               XDG_STATE_HOME=os.path.join(_STATE, "state"))
    env.pop("LANG", None)
    env.pop("LC_CTYPE", None)
    return subprocess.run([sys.executable, "-m", "stockade", "hook", harness, "--policy", "examples/coding-agent.policy",
                           *CONTEXT_ARGS], input=data, stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT, env=env,
                          timeout=120)


#: events whose every reading is dangerous or malformed: the answer must block (the others may
#: be allowed: a file name holding ``a{`` and those bytes is a file in the workspace)
MUST_BLOCK = [*(f"{tool} {name}" for tool in ("Bash", "PowerShell", "Write", "Read")
                for name in ("lone surrogate", "NUL")),
              "Bash surrogate-escaped bytes", "Bash escape without digits", "Bash backslash-newline join",
              "tool_input a list", "tool_input null", "command a list", "pattern bomb", "nested endless loops",
              "deep defaults"]


@pytest.mark.parametrize("name", list(EVENTS))
def test_claude_code_answers_every_hostile_event(name: str) -> None:
    result = _hook("claude-code", EVENTS[name])
    assert result.returncode == 0, (name, result.stderr.decode(errors="replace")[-2000:])
    assert b"Traceback" not in result.stderr, name
    if not result.stdout.strip():  # allowed: no decision
        assert name not in MUST_BLOCK, name
        return
    decision = json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"]
    assert decision in ("deny", "ask"), (name, decision)


@pytest.mark.parametrize("name", ["pattern bomb", "deep defaults", "Bash lone surrogate", "tool_input a list"])
def test_generic_hook_answers_hostile_commands(name: str) -> None:
    event = json.loads(EVENTS[name].decode("utf-8"))
    tool_input = event["tool_input"]
    command = tool_input.get("command") if isinstance(tool_input, dict) else tool_input
    result = _hook("generic", json.dumps({"command": command}).encode())
    assert result.returncode == 1, (name, result.stderr.decode(errors="replace")[-2000:])
    assert json.loads(result.stdout)["decision"] == "deny"


@pytest.mark.parametrize(("harness", "code"), [("claude-code", 2), ("generic", 1)])
def test_an_answer_that_cannot_be_written_still_blocks(harness: str, code: int) -> None:
    """Standard output closed before the answer: the exit code blocks (Claude Code: 2)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # writing the answer fails (EPIPE)
    try:
        result = _hook(harness, json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                                            "tool_input": {"command": "rm -rf ~"}, "command": "rm -rf ~"}).encode(),
                       stdout=write_end)
    finally:
        os.close(write_end)
    assert result.returncode == code, result.stderr.decode(errors="replace")[-2000:]
    assert b"deny" in result.stderr
