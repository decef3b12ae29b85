"""The session layer of ``stockade hook``: limits, approvals, read-before-edit, the journal.

The judging of one event (:mod:`.claude_code`, :mod:`.generic_hook`) knows nothing of
sessions.  For an event of a named session (Claude Code's ``session_id``, or ``--session``),
:func:`pre_tool_use` takes that answer and, under the session's lock:

1. refuses every command of a stopped or ended session (``X640``) or past ``max-steps``;
2. turns a ``confirm`` of a ``Bash`` command into ``allow`` when stored approvals cover
   every confirmed segment (``X643``; never a ``deny``);
3. refuses a ``Write``/``Edit``/``MultiEdit``/``NotebookEdit`` of an existing file the
   session has not read, or that changed since it read it (``X642``);
4. under ``on-limit confirm`` after a limit, turns ``allow`` into ``confirm`` (``X641``);
5. counts the step with its final decision (denials in a row or in a window trip the
   breaker), remembers files read, keeps the pre-image of a file about to be edited.

:func:`post_tool_use` handles ``PostToolUse``: the new content's hash of an edited file (so
the session may edit it again, and revert knows what it left), the hash of a file read, and
a failed tool as a failure (``max-failures``).

Files are hashed on the host through :mod:`stockade.runtime.beneath` (never following a
symlink, never opening a fifo), and only below the workspace: a path outside it cannot be
checked for read-before-edit, so an edit there is judged by the policy alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from stockade import catalogue as codes
from stockade.integrations.generic_hook import HookDecision, reason
from stockade.runtime import approvals, journal, sessions

_EDIT_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
_READ_TOOLS = {"Read": "file_path"}


def _workspace(ir: Any) -> str:
    return os.path.realpath(ir.context.workspace)


def _file_path(event: Mapping[str, Any], tools: Mapping[str, str], workspace: str) -> str | None:
    tool_input = event.get("tool_input")
    key = tools.get(str(event.get("tool_name")))
    if key is None or not isinstance(tool_input, dict) or not isinstance(tool_input.get(key), str):
        return None
    path = tool_input[key]
    given = event.get("cwd")
    cwd = given if isinstance(given, str) else workspace
    return os.path.normpath(os.path.join(cwd, str(path)))


def _rel(workspace: str, path: str) -> str | None:
    if not path.startswith(workspace.rstrip("/") + "/"):
        return None
    return os.path.relpath(path, workspace)


def _with(answer: HookDecision, decision: str, extra: dict, keep: bool = True) -> HookDecision:
    reasons = (*answer.reasons, extra) if keep else (extra,)
    return HookDecision(decision, reasons, {**answer.subject})


def pre_tool_use(ir: Any, event: Mapping[str, Any], answer: HookDecision, session_id: str,
                 environ: Mapping[str, str] | None = None) -> tuple[HookDecision, int]:
    """The answer for a ``PreToolUse`` event of a session, and the session's step number."""
    settings = sessions.SessionSettings.from_ir(ir)
    workspace = _workspace(ir)
    policy = os.path.abspath(ir.layers[-1].file) if ir.layers and not ir.layers[-1].file.startswith("<") else None
    with sessions.open_session(session_id, policy=policy, workspace=workspace,
                               environ=environ) as state:
        why = sessions.blocked(state) or sessions.over_steps(state, settings)
        if why is not None:
            if state.status == "active":
                sessions.stop(state, why)
                why = sessions.blocked(state) or why
            answer = _with(answer, "deny", reason("deny", codes.SESSION_STOPPED, why), keep=False)
            state.data["steps"] = state.steps + 1
            return answer, state.steps
        tool = event.get("tool_name")
        if answer.decision == "confirm" and tool in ("Bash", None) and isinstance(answer.subject.get("command"), str):
            answer = _approved(ir, answer, state, workspace, environ)
        edited = _file_path(event, _EDIT_TOOLS, workspace) if answer.decision in ("allow", "confirm") else None
        if edited is not None:
            answer = _read_before_edit(answer, state, workspace, edited)
        downgraded = sessions.downgraded(state)
        if downgraded is not None and answer.decision == "allow":
            answer = _with(answer, "confirm", reason("confirm", codes.SESSION_NEEDS_PERSON, downgraded))
        tripped = sessions.record_decision(state, settings, answer.decision or "none")
        if tripped is not None and answer.decision == "deny":
            answer = _with(answer, "deny", reason("deny", codes.SESSION_STOPPED,
                                                  f"this denial stops the session: {tripped}"))
        read = _file_path(event, _READ_TOOLS, workspace) if answer.decision == "allow" else None
        if read is not None:
            _remember_read(state, workspace, read)
        if edited is not None and answer.decision in ("allow", "confirm"):
            journal.Journal(state.directory, environ).before(workspace, [edited], state.steps, str(tool))
        return answer, state.steps


def _approved(ir: Any, answer: HookDecision, state: sessions.SessionState, workspace: str,
              environ: Mapping[str, str] | None) -> HookDecision:
    stored = approvals.load(workspace, state.data.get("approvals", []), environ)
    verdict = {"decision": answer.decision, "reasons": list(answer.reasons)}
    command = str(answer.subject["command"])
    applied = approvals.apply(verdict, command, ir, None, stored)
    if applied.decision != "allow":
        return answer
    names = ", ".join(f"`{a.text}` ({a.scope} approval {a.id})" for a in applied.used)
    return HookDecision("allow", (*answer.reasons, reason("allow", codes.APPROVED, f"approved by {names}")),
                        {**answer.subject, "approved_by": [a.id for a in applied.used]})


def _read_before_edit(answer: HookDecision, state: sessions.SessionState, workspace: str,
                      path: str) -> HookDecision:
    rel = _rel(workspace, path)
    if rel is None:
        return answer
    now = journal.snapshot(workspace, rel, keep_data=False)
    if now.kind == "absent":
        return answer  # a new file: nothing to overwrite
    reads: dict[str, Any] = state.data.setdefault("reads", {})
    seen = reads.get(path)
    if now.kind != "file":
        message = f"`{path}` is a {now.kind}, not a file this session read; the edit is refused"
    elif seen is None:
        message = (f"`{path}` exists and this session has not read it: read it with the Read tool first, "
                   "then edit it (no blind overwrites)")
    elif seen != now.sha256:
        message = (f"`{path}` changed since this session read it (someone else may be editing it): "
                   "read it again, then edit it")
    else:
        return answer
    return _with(answer, "deny", reason("deny", codes.READ_BEFORE_EDIT, message))


def _remember_read(state: sessions.SessionState, workspace: str, path: str) -> None:
    rel = _rel(workspace, path)
    if rel is None:
        return
    snap = journal.snapshot(workspace, rel, keep_data=False)
    if snap.kind == "file":
        state.data.setdefault("reads", {})[path] = snap.sha256


def _failed(response: Any) -> bool:
    if not isinstance(response, dict):
        return False
    if response.get("is_error") is True or response.get("isError") is True or response.get("interrupted") is True:
        return True
    for key in ("exit_code", "exitCode", "returncode"):
        value = response.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value != 0:
            return True
    return False


def post_tool_use(ir: Any, event: Mapping[str, Any], session_id: str,
                  environ: Mapping[str, str] | None = None) -> str | None:
    """Record what a tool did (``PostToolUse``/``PostToolUseFailure``); returns the reason the
    session tripped, if it did."""
    settings = sessions.SessionSettings.from_ir(ir)
    workspace = _workspace(ir)
    with sessions.open_session(session_id, workspace=workspace, environ=environ) as state:
        edited = _file_path(event, _EDIT_TOOLS, workspace)
        if edited is not None:
            journal.Journal(state.directory, environ).after(workspace, [edited])
            _remember_read(state, workspace, edited)  # the session knows what it wrote
        read = _file_path(event, _READ_TOOLS, workspace)
        if read is not None:
            _remember_read(state, workspace, read)
        failed = event.get("hook_event_name") == "PostToolUseFailure" or _failed(event.get("tool_response"))
        return sessions.record_outcome(state, settings, failed)
