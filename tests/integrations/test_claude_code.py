"""Claude Code: the PreToolUse hook through the real CLI, settings.json export/import."""

from __future__ import annotations

import json

import pytest

from tests.integrations.helpers import (
    CONTEXT,
    CONTEXT_ARGS,
    EXAMPLES,
    GOLDEN,
    PROBE_COMMANDS,
    PROBE_PATHS,
    ROOT,
    check_golden,
    compile_text,
    fixture,
    stockade,
)

POLICY = "examples/coding-agent.policy"


def hook(event: str | bytes, *extra: str):  # type: ignore[no-untyped-def]
    return stockade("hook", "claude-code", "--policy", POLICY, *CONTEXT_ARGS, *extra, stdin=event)


@pytest.mark.parametrize(("name", "decision", "needle"), [
    ("claude_bash_force_push.json", "deny", "git push --force"),
    ("claude_bash_status.json", "allow", ""),
    ("claude_bash_push.json", "ask", ""),
    ("claude_read_ssh.json", "deny", "deny ~/.ssh"),
    ("claude_write_workspace.json", "allow", ""),
    ("claude_edit_git_hook.json", "deny", "read-only"),
    ("claude_multiedit_env.json", "deny", "**/.env"),
    ("claude_notebook_edit.json", "deny", "read-only"),
    ("claude_grep_home.json", "deny", ".aws"),
    ("claude_glob_workspace.json", "allow", ""),
    ("claude_webfetch_evil.json", "deny", "evil.example"),
])
def test_hook_answers_in_claude_code_format(name: str, decision: str, needle: str) -> None:
    result = hook(fixture(name), "--approve-allowed")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert output["permissionDecision"] == decision
    assert output["permissionDecisionReason"].startswith("stockade:")
    assert needle in output["permissionDecisionReason"]


def test_unjudged_tool_gets_no_opinion() -> None:
    result = hook(fixture("claude_todo.json"))
    assert result.returncode == 0 and result.stdout == b""


def test_allow_leaves_claude_codes_permission_flow_alone_by_default() -> None:
    for extra in ((), ("--passthrough-allow",)):  # the old spelling of the default is still accepted
        assert hook(fixture("claude_bash_status.json"), *extra).stdout == b""  # no decision
        denied = json.loads(hook(fixture("claude_bash_force_push.json"), *extra).stdout)
        assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
        asked = json.loads(hook(fixture("claude_bash_push.json"), *extra).stdout)
        assert asked["hookSpecificOutput"]["permissionDecision"] == "ask"
    approved = json.loads(hook(fixture("claude_bash_status.json"), "--approve-allowed").stdout)
    assert approved["hookSpecificOutput"]["permissionDecision"] == "allow"


@pytest.mark.parametrize(("event", "needle"), ids=lambda v: repr(v)[:30], argvalues=[
    (b"not json", "not JSON"),
    (b"", "empty input"),
    (b"\xff\xfe", "not UTF-8"),
    (b"[1, 2]", "expected a JSON object"),
    (b'{"hook_event_name": "PreToolUse", "tool_input": {}}', "tool_name"),
    (b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": 42}}', "tool_input.command"),
    (b'{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {}}', "tool_input.file_path"),
    (b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "ls"}', "tool_input"),
    (b'{"hook_event_name": "Notification", "tool_name": "Bash", "tool_input": {"command": "ls"}}', "Notification"),
    (b'{"tool_name": "Bash", "cwd": 3, "tool_input": {"command": "ls"}}', "cwd"),
    (b"[" * 100000, "nested"),
])
def test_malformed_events_are_denied_with_a_reason(event: bytes, needle: str) -> None:
    result = hook(event)
    assert result.returncode == 0
    assert "Traceback" not in result.stderr.decode()
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert needle in output["permissionDecisionReason"]


def test_post_tool_use_events_get_no_answer() -> None:
    """What a tool did is recorded for a session (see tests/runtime/test_sessions.py), never answered."""
    result = hook(b'{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}')
    assert result.returncode == 0 and result.stdout == b""


def test_huge_event_is_denied() -> None:
    big = b'{"tool_name": "Write", "tool_input": {"file_path": "/ws/app/x", "content": "' + b"a" * (17 << 20) + b'"}}'
    output = json.loads(hook(big).stdout)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny" and "larger than" in output["permissionDecisionReason"]


def test_bad_policy_is_a_deny_not_a_crash(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.policy"
    bad.write_text("filesystm {\n}\n")
    result = stockade("hook", "claude-code", "--policy", str(bad), stdin=fixture("claude_bash_status.json"))
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert result.returncode == 0 and output["permissionDecision"] == "deny"
    assert "policy not loaded" in output["permissionDecisionReason"]


def test_audit_appends_one_line_per_decision(tmp_path) -> None:  # type: ignore[no-untyped-def]
    audit = tmp_path / "audit.jsonl"
    hook(fixture("claude_bash_force_push.json"), "--audit", str(audit))
    hook(fixture("claude_read_ssh.json"), "--audit", str(audit))
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [r["verdict"] for r in records] == ["deny", "deny"]
    assert records[0]["command"] == "git push --force origin main" and records[0]["source"] == "hook:claude-code"
    assert records[1]["tool"] == "Read" and records[0]["policy"] == "coding-agent"
    listed = stockade("audit", "--file", str(audit), "--format", "json")
    if listed.returncode == 0:  # the audit viewer reads the same records
        assert b"git push --force" in listed.stdout


def test_unwritable_audit_fails_closed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = hook(fixture("claude_bash_status.json"), "--audit", str(blocker / "audit.jsonl"))
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny" and "audit" in output["permissionDecisionReason"]


# -- settings.json ------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES)
def test_export_golden(example: str) -> None:
    result = stockade("export", "--to", "claude-settings", f"examples/{example}.policy", *CONTEXT_ARGS)
    assert result.returncode == 0, result.stderr
    check_golden(GOLDEN / "claude-settings" / f"{example}.json", result.stdout.decode())
    assert b"warning[X601]" in result.stderr  # limits and env keep/drop are reported, not dropped


def test_export_strict_fails_listing_rules() -> None:
    result = stockade("export", "--to", "claude-settings", "--strict", POLICY, *CONTEXT_ARGS)
    assert result.returncode == 2 and result.stdout == b""
    assert b"error[X600]" in result.stderr and b"coding-agent.policy:28:5" in result.stderr


def test_exported_settings_validate_against_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "tests/integrations/schemas/claude-settings.schema.json").read_text())
    for example in EXAMPLES:
        jsonschema.validate(json.loads((GOLDEN / "claude-settings" / f"{example}.json").read_text()), schema)


def test_import_writes_formatted_policy_with_source_comments() -> None:
    result = stockade("import", "--from", "claude-settings", "tests/integrations/fixtures/claude_settings_sample.json",
                      "--home", "/home/dev")
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert "# from claude_settings_sample.json:" in text and "confirm git push" in text
    assert "deny    curl" in text or "deny curl" in text.replace("  ", " ")
    fmt = stockade("fmt", "--check", "-", stdin=text)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_import_malformed_is_located(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "settings.json"
    bad.write_text('{\n  "permissions": {\n    "deny": ["Bash(rm"]\n  }\n}\n')
    result = stockade("import", "--from", "claude-settings", str(bad))
    assert result.returncode == 2
    assert f"{bad}:3:14: error[X617]".encode() in result.stderr
    bad.write_text('{\n  "permissions": [1,\n}\n')
    assert f"{bad}:3:1: error[X610]".encode() in stockade("import", "--from", "claude-settings", str(bad)).stderr


def test_round_trip_keeps_decisions() -> None:
    from stockade.integrations import export_ir, import_text
    from stockade.integrations.claude_code import ClaudeModel

    original = json.loads(fixture("claude_settings_sample.json"))
    imported = import_text(fixture("claude_settings_sample.json"), "claude-settings", "settings.json", home="/home/dev")
    ir = compile_text(imported.text)
    again = export_ir(ir, "claude-settings").data
    before = ClaudeModel.from_settings(original, CONTEXT["home"], CONTEXT["workspace"])
    after = ClaudeModel.from_settings(again, CONTEXT["home"], CONTEXT["workspace"])
    for argv in PROBE_COMMANDS:
        assert before.command_verdict(argv) == after.command_verdict(argv) == ir.command_verdict(argv).verdict, argv
    for path in PROBE_PATHS:
        assert before.sandbox.path_access(path) == after.sandbox.path_access(path), path
        if before.tool_decision("Read", path) == "deny":
            assert after.tool_decision("Read", path) == "deny", path
    for host in ("github.com", "files.pypi.org", "evil.example"):
        assert before.sandbox.host_allowed(host, 443) == after.sandbox.host_allowed(host, 443), host
