"""Fuzzing every entry point with a bounded budget (issue 13): the analyzer's texts against
``bash -n``, batch mode's JSON lines, and both hooks' events (Claude Code ``PreToolUse`` and
the generic hook).

Each property has a fixed ``max_examples`` and no per-example deadline, so the whole module
stays within a few seconds of CI time; ``derandomize=True`` makes the bash comparison the same
run every time (a new disagreement is found by running it with another seed locally, not by a
flaky CI run).  ``bash -n`` only parses the file it is given — nothing generated is executed.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.analyzer import analyze
from stockade.integrations import claude_code, generic_hook

#: shell tokens the texts are made of (reserved words, operators, quotes, redirections); the
#: backslash is left out: tree-sitter-bash reads ``\ `` as a blank (a known disagreement)
TOKENS = ["ls", "echo", "a", "x=1", "cat f", ";", "&&", "||", "|", "&", "\n", "(", ")", "{", "}", "if", "then",
          "else", "elif", "fi", "for", "in", "do", "done", "while", "until", "case", "esac", ";;", "function",
          "f()", "time", "!", "[[", "]]", "<", ">", ">>", "<<<", "'", '"', "$(", "`", "${", "$((", "))", "((",
          "select", "coproc", "-p", "x", "*", "=", "#", "$x", "export", "local", "return", "{ ls;", "(ls)",
          "&>", ">|", "<&", ">&", "2>&1", "<(", "|&", ";&"]
shell_texts = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=8).map(" ".join)
BUDGET = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(shell_texts)
def test_texts_the_analyzer_allows_parse_in_bash(ir, tmp_path_factory, text: str) -> None:
    """What the analyzer allows, bash must accept: a syntax error bash stops at is ``unparsable``
    (bash may run the lines before it; the analyzer judged them as well)."""
    if analyze(text, ir).decision != "allow":
        return
    path = tmp_path_factory.mktemp("bash-n") / "text.sh"
    path.write_text(text, encoding="utf-8")
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30,
                            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    assert result.returncode == 0, (text, result.stderr)


# -- batch mode ---------------------------------------------------------------------------

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                      max_size=4), max_leaves=12)
commands = st.one_of(shell_texts, st.text(max_size=60),
                     st.sampled_from(["ls", "rm -rf ~", "cat ~/.ssh/id_rsa", "git push -f", "a{\udcf3\udc80",
                                      "$'\\udcf4'{", "time {", "cat <<<\nls"]))
batch_lines = st.one_of(
    st.builds(lambda ident, command: json.dumps({"id": ident, "command": command}), st.integers(), commands),
    st.builds(lambda value: json.dumps(value), json_values),
    st.builds(lambda depth: "[" * depth + "]" * depth, st.integers(900, 3000)),
    st.text(max_size=40).map(lambda text: text.replace("\n", " ")),
)


@BUDGET
@given(st.lists(batch_lines, min_size=1, max_size=6))
def test_batch_mode_answers_every_line(ir, lines: list[str]) -> None:
    """``analyze --batch``: one JSON answer per non-blank line, a verdict each (malformed lines
    and deep nesting are ``deny``), never a traceback."""
    from stockade.cli import cmd_analyze

    out = io.StringIO()
    saved = sys.stdin, sys.stdout
    sys.stdin, sys.stdout = io.StringIO("\n".join(lines) + "\n", newline="\n"), out
    try:
        code = cmd_analyze._batch(ir, None)
    finally:
        sys.stdin, sys.stdout = saved
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(answers) == sum(1 for line in lines if line.strip())
    assert code in (0, 1, 4)
    for line, answer in zip([line for line in lines if line.strip()], answers, strict=True):
        assert answer["decision"] in ("allow", "confirm", "deny")
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):
            item = None
        if not (isinstance(item, dict) and isinstance(item.get("command"), str)):
            assert answer["decision"] == "deny", (line, answer)


# -- hooks ----------------------------------------------------------------------------------

tools = st.sampled_from(["Bash", "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep", "WebFetch",
                         "Task", ""])
tool_inputs = st.fixed_dictionaries({}, optional={"command": commands, "file_path": st.text(max_size=30),
                                                  "path": st.text(max_size=30), "pattern": st.text(max_size=10),
                                                  "url": st.text(max_size=30), "notebook_path": st.text(max_size=30)})
claude_events = st.one_of(
    st.fixed_dictionaries({"hook_event_name": st.sampled_from(["PreToolUse", "PostToolUse"]), "tool_name": tools,
                           "tool_input": tool_inputs},
                          optional={"cwd": st.sampled_from(["/ws/app", "relative", "/"]), "session_id": st.text()}),
    json_values,
)
generic_events = st.one_of(
    st.fixed_dictionaries({"command": commands}, optional={"cwd": st.sampled_from(["/ws", "/tmp", "x"])}),
    st.fixed_dictionaries({"path": st.text(max_size=30)},
                          optional={"tool": st.text(max_size=8), "access": st.sampled_from(["read", "write", "x"])}),
    json_values,
)


def _read(event: object) -> object:
    """The event as the hook reads it: JSON bytes on stdin (lone surrogates as ``\\udcXX``)."""
    return generic_hook.read_event(io.BytesIO(json.dumps(event).encode()))


@BUDGET
@given(claude_events)
def test_claude_code_hook_answers_every_event(ir, event: object) -> None:
    """Every PreToolUse event gets an answer the harness can read: a decision (None only for a
    tool the policy has no opinion on) and a JSON-serialisable hook output."""
    read = _read(event)
    answer = read if isinstance(read, generic_hook.HookDecision) else claude_code.judge_event(ir, read)
    assert answer.decision in ("allow", "confirm", "deny", None)
    json.dumps(answer.to_json())
    output = claude_code.hook_output(answer)
    if output is not None:
        decision = json.loads(json.dumps(output))["hookSpecificOutput"]["permissionDecision"]
        assert decision in ("allow", "ask", "deny")
    if isinstance(event, dict) and event.get("tool_name") == "Bash" and not isinstance(read, generic_hook.HookDecision) \
            and event.get("hook_event_name") == "PreToolUse" and event.get("cwd", "/") != "relative":
        assert answer.decision in ("allow", "confirm", "deny")


@BUDGET
@given(generic_events)
def test_generic_hook_answers_every_event(ir, event: object) -> None:
    """Every generic event gets a verdict (malformed events are ``deny``)."""
    read = _read(event)
    answer = read if isinstance(read, generic_hook.HookDecision) else generic_hook.judge_generic(ir, read)
    assert answer.decision in ("allow", "confirm", "deny")
    json.dumps(answer.to_json())
    if not isinstance(event, dict) or ("command" not in event and "path" not in event):
        assert answer.decision == "deny"
