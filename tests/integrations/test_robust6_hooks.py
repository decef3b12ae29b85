"""Hook events a JSON reader may read in another way than the harness meant, and events that
made the judging slow (issue 13, a second hostile review).  Each runs the real hook in a
SUBPROCESS under ``LC_ALL=C`` (the hooks' helper of ``test_hook_bounds.py``).

* A key given twice (``{"command": "rm -rf ~", "command": "ls"}``): Python keeps the last,
  other readers the first; ``NaN``/``Infinity`` (not JSON); an integer past Python's 4,300
  digits (read as an internal error before) — each is a malformed event, ``deny`` (X631).
* A ``WebFetch`` URL whose host has a million labels: matched against the domain rules in
  linear time, answered by the network rules, not by the 30-s timeout.
* Commands the parser misread (a line starting with ``\\``, a here-document delimiter the
  grammar reads as another word) are denied through both hooks.
"""

from __future__ import annotations

import json

import pytest

from tests.integrations.test_hook_bounds import claude_event, hook

MALFORMED = {
    "a key twice": ('{"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": "/ws/app", '
                    '"tool_input": {"command": "rm -rf ~", "command": "ls"}}', "given twice"),
    "a tool name twice": ('{"tool_name": "Bash", "tool_name": "Read", "cwd": "/ws/app", '
                          '"tool_input": {"command": "rm -rf ~", "file_path": "/ws/app/x"}}', "given twice"),
    "NaN": ('{"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/ws/app", "x": NaN}', "not JSON"),
    "Infinity": ('{"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/ws/app", "x": -Infinity}',
                 "not JSON"),
    "a huge integer": ('{"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/ws/app", "x": 1'
                       + "0" * 5000 + "}", "digits"),
    "a huge float": ('{"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/ws/app", "x": 1e999}',
                     "too large"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_claude_code_refuses_events_json_readers_disagree_on(name: str) -> None:
    event, phrase = MALFORMED[name]
    result = hook("claude-code", event, "--approve-allowed")
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr[-2000:]
    answer = json.loads(result.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "malformed hook event" in answer["permissionDecisionReason"]
    assert phrase in answer["permissionDecisionReason"]


@pytest.mark.parametrize("event", ['{"command": "rm -rf ~", "command": "ls"}', '{"command": "ls", "x": NaN}',
                                   '{"command": "ls", "x": 1' + "0" * 5000 + "}"])
def test_generic_hook_refuses_events_json_readers_disagree_on(event: str) -> None:
    result = hook("generic", event)
    assert result.returncode == 1 and b"Traceback" not in result.stderr, result.stderr[-2000:]
    answer = json.loads(result.stdout)
    assert answer["decision"] == "deny" and answer["reasons"][0]["code"] == "X631", answer


def test_a_webfetch_host_of_a_million_labels_is_judged_not_timed_out() -> None:
    event = {"hook_event_name": "PreToolUse", "tool_name": "WebFetch", "cwd": "/ws/app",
             "tool_input": {"url": "https://" + "a." * 1_000_000 + "evil.example/"}}
    result = hook("claude-code", event, "--timeout", "20")
    answer = json.loads(result.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "did not finish" not in answer["permissionDecisionReason"], answer


@pytest.mark.parametrize("command", ["echo hi\n\\rm -rf ~", "cat <<E'x'\nEx\nrm -rf ~\nE'x'\n",
                                     "cat <<\u0145\n\u0145\nrm -rf ~\nE\n"])
def test_misread_commands_are_denied_by_both_hooks(command: str) -> None:
    result = hook("claude-code", claude_event(command), "--approve-allowed")
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny", result.stdout
    result = hook("generic", {"command": command})
    assert result.returncode == 1 and json.loads(result.stdout)["decision"] == "deny", result.stdout
