"""No input leaves a hook without an answer (issue 13).

Claude Code treats a hook that crashes or prints nothing as a non-blocking error and runs the
command: fail-open.  The hooks run in SUBPROCESSES under ``LC_ALL=C``/``POSIX``/``C.UTF-8``
with events whose JSON ``\\udcXX`` escapes make bytes that reach tree-sitter-bash's scanner as
characters above U+00FF after ``{`` (it reads out of bounds there and may segfault): the
answer must be ``deny`` with the refusal.  A judging that crashes anyway, or runs past the
hook's time limit, is answered ``deny`` by the hook's parent process.
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import subprocess
import sys

import pytest

from stockade.integrations.generic_hook import HookDecision, judge_isolated
from tests.integrations.helpers import _STATE, CONTEXT_ARGS, ROOT

LOCALES = ["C", "POSIX", "C.UTF-8"]
CODE_POINTS = [cp for cp in range(0x100, 0x110000, 0x1000) if not 0xD800 <= cp < 0xE000]
#: ``a{`` and the UTF-8 bytes of each code point as surrogate escapes (``\\udcXX`` in JSON).
COMMAND = " ".join("a{" + chr(cp).encode().decode("ascii", "surrogateescape") for cp in CODE_POINTS)


def hook(harness: str, event: dict | str, *args: str, locale: str = "C") -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, LC_ALL=locale, NO_COLOR="1", HOME="/home/dev",
               STOCKADE_CACHE_DIR=os.path.join(_STATE, "cache"), XDG_CACHE_HOME=os.path.join(_STATE, "xdg-cache"),
               XDG_STATE_HOME=os.path.join(_STATE, "state"))
    env.pop("LANG", None)
    env.pop("LC_CTYPE", None)
    data = event if isinstance(event, str) else json.dumps(event)
    return subprocess.run([sys.executable, "-m", "stockade", "hook", harness, "--policy", "examples/coding-agent.policy",
                           *CONTEXT_ARGS, *args], input=data.encode(), capture_output=True, cwd=ROOT, env=env,
                          timeout=120)


def claude_event(command: str) -> dict:
    return {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            "cwd": "/ws/app", "session_id": "s"}


@pytest.mark.parametrize("locale", LOCALES)
def test_generic_hook_refuses_smuggled_scanner_bytes(locale: str) -> None:
    assert "\\udc" in json.dumps({"command": COMMAND})
    result = hook("generic", {"command": COMMAND}, locale=locale)
    assert result.returncode == 1, result.stderr[-2000:]
    answer = json.loads(result.stdout)
    assert answer["decision"] == "deny"
    assert {r["code"] for r in answer["reasons"]} == {"A400"} and "scanner bug" in answer["reasons"][0]["message"]


@pytest.mark.parametrize("locale", LOCALES)
def test_claude_code_hook_refuses_smuggled_scanner_bytes(locale: str) -> None:
    result = hook("claude-code", claude_event(COMMAND), locale=locale)
    assert result.returncode == 0, result.stderr[-2000:]
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny" and "scanner bug" in output["permissionDecisionReason"]


def test_a_crashing_judge_is_answered_deny() -> None:
    """A real segfault in the judging process (a NULL read): the parent answers."""
    def crash() -> HookDecision:
        faulthandler.disable()  # (pytest's handler would print the child's traceback)
        ctypes.string_at(0)
        raise AssertionError("not reached")

    answer = judge_isolated(crash)
    assert answer.decision == "deny"
    [reason] = answer.reasons
    assert reason["code"] == "X639" and "crashed (SIGSEGV)" in reason["message"]


def test_a_judge_that_exits_or_raises_is_answered_deny() -> None:
    assert judge_isolated(lambda: os._exit(3)).reasons[0]["message"].endswith("without an answer")
    assert "ZeroDivisionError" in judge_isolated(lambda: HookDecision(str(1 // 0))).reasons[0]["message"]
    answer = judge_isolated(lambda: HookDecision("allow", ({"code": "X", "message": "\udcf3"},), {"command": "\udcf3"}))
    assert answer == HookDecision("allow", ({"code": "X", "message": "\udcf3"},), {"command": "\udcf3"})


@pytest.mark.parametrize("harness", ["generic", "claude-code"])
def test_a_judging_past_the_timeout_is_answered_deny(harness: str) -> None:
    event = claude_event("ls") if harness == "claude-code" else {"command": "ls"}
    result = hook(harness, event, "--timeout", "0")
    text = result.stdout.decode()
    assert "did not finish within 0 s" in text, (text, result.stderr)
    if harness == "claude-code":
        assert result.returncode == 0 and json.loads(text)["hookSpecificOutput"]["permissionDecision"] == "deny"
    else:
        assert result.returncode == 1 and json.loads(text)["decision"] == "deny"


@pytest.mark.parametrize("harness", ["generic", "claude-code"])
def test_a_3_mb_command_is_unparsable_not_allowed(harness: str) -> None:
    command = "ls; " * 750_000
    event = claude_event(command) if harness == "claude-code" else {"command": command}
    result = hook(harness, event)
    text = result.stdout.decode()
    assert "more than the analyzer reads" in text
    if harness == "claude-code":
        assert json.loads(text)["hookSpecificOutput"]["permissionDecision"] == "deny"
    else:
        assert json.loads(text)["decision"] == "deny"


def test_a_file_path_past_the_limit_is_denied() -> None:
    result = hook("generic", {"tool": "read_file", "path": "/tmp/" + "a/" * 40000, "access": "read"})
    answer = json.loads(result.stdout)
    assert answer["decision"] == "deny" and answer["reasons"][0]["code"] == "X631"
