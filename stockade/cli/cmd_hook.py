"""``stockade hook claude-code|generic --policy P``: a pre-execution gate for agent harnesses.

Reads one JSON event on standard input and answers on standard output.

* ``claude-code``: a Claude Code ``PreToolUse`` event; the answer is Claude Code's hook JSON
  (``hookSpecificOutput.permissionDecision`` ask/deny with the reason) and the exit code is
  always 0, as Claude Code reads JSON only on exit 0 — malformed events and policy errors
  are answered with ``deny``.  What the policy allows, and tools the hook does not judge,
  get no output (no decision: Claude Code's own permissions and prompts apply) unless
  ``--approve-allowed`` (then ``allow``).  ``--confine`` rewrites an allowed or confirmed
  ``Bash`` command (``updatedInput``) to run under ``stockade run`` with the same policy
  and workspace, so the sandbox is the second line behind the analyzer.
* ``generic``: ``{"command": …}`` or ``{"tool": …, "path": …, "access": …}``; the answer is
  the verdict JSON; the exit code is 0 allow, 4 confirm, 1 deny.

``--audit FILE`` appends one JSON line per decision (the runtime's audit format); if the
line cannot be written the answer becomes ``deny``.  The event is judged in a child
process (:func:`~stockade.integrations.generic_hook.judge_isolated`): a crash or a judging
that runs past ``--timeout`` seconds is answered ``deny`` — never no answer.
"""

from __future__ import annotations

import argparse
import json
import sys

from stockade import catalogue as codes
from stockade.cli.common import add_policy_args

_EXIT = {"allow": 0, "confirm": 4, "deny": 1, None: 0}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``hook`` parser."""
    parser = sub.add_parser("hook", help="judge an agent harness's tool event (pre-execution hook)",
                            description="Read one hook event as JSON on stdin, answer allow/confirm/deny as JSON.")
    parser.add_argument("harness", choices=("claude-code", "generic"), help="the event and answer format")
    add_policy_args(parser)
    parser.add_argument("--audit", metavar="FILE", help="append one JSON line per decision to FILE")
    parser.add_argument("--workspace", "-w", metavar="DIR",
                        help="the agent's workspace (default: the event's `cwd`, else the current directory)")
    parser.add_argument("--home", metavar="DIR", help="the home directory `~` means (default: $HOME)")
    parser.add_argument("--tmpdir", metavar="DIR", help="the temporary directory (default: $TMPDIR or /tmp)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", default=None,
                        help="deny when judging takes longer (default: 30; harnesses time hooks out, "
                             "Claude Code after 60)")
    parser.add_argument("--approve-allowed", action="store_true",
                        help="claude-code: answer `allow` for what the policy allows, which skips Claude Code's own "
                             "permission prompt (default: no decision, Claude Code's permissions apply)")
    parser.add_argument("--confine", action="store_true",
                        help="claude-code: rewrite an allowed (or confirmed) Bash command to run under `stockade run` "
                             "with the same policy and workspace (answered `ask`, or `allow` with --approve-allowed)")
    parser.add_argument("--passthrough-allow", action="store_true",
                        help="claude-code: accepted for compatibility; no decision on allow is now the default")
    parser.add_argument("--session", metavar="ID",
                        help="the agent session the event belongs to (default: $STOCKADE_SESSION, else the "
                             "event's `session_id` when the policy has a `session` section)")
    parser.set_defaults(handler=run)


def _post_event(event: object) -> bool:
    return isinstance(event, dict) and event.get("hook_event_name") in ("PostToolUse", "PostToolUseFailure")


def _session_of(args: argparse.Namespace, ir: object, event: object) -> str | None:
    """The session an event belongs to: ``--session``, ``$STOCKADE_SESSION``, or the event's
    ``session_id`` when the policy has a ``session`` section (None: no session)."""
    from stockade.runtime.sessions import check_id, session_from

    explicit = session_from(args.session)
    if explicit is not None:
        return explicit
    if getattr(ir, "session", ()) and isinstance(event, dict) and isinstance(event.get("session_id"), str):
        return check_id(event["session_id"])
    return None


def _confined(event: dict, policy: str | None, workspace: str, approve: bool) -> dict:
    """The event's Bash input rewritten to run under ``stockade run`` (``--confine``), with
    the policy the hook judged by (the built-in one by its file) and the same workspace."""
    import os

    from stockade.integrations.claude_code import confined_input

    if policy is None:
        from importlib import resources

        policy = str(resources.files("stockade.compiler").joinpath("builtin/default.policy"))
    return confined_input(event["tool_input"], os.path.abspath(policy), os.path.abspath(workspace), approve,
                          [sys.executable, "-m", "stockade"])


def run(args: argparse.Namespace) -> int:
    """Judge one event; never raises, never prints a traceback.  Whatever goes wrong — even
    outside the judging (the audit, the answer's rendering, an interrupt) — the answer
    blocks: a ``deny`` on stdout when it can still be written, and the exit code each
    harness takes as blocking (Claude Code: 2, whose stderr it shows; a crashed hook's
    other codes let the tool call run)."""
    try:
        return _run(args)
    except BaseException as exc:  # fail closed: the last resort, also for KeyboardInterrupt and SystemExit
        message = f"internal hook error ({type(exc).__name__}: {exc}); failing closed"
        try:
            if args.harness == "claude-code":
                sys.stdout.write(json.dumps({"hookSpecificOutput": {
                    "hookEventName": "PreToolUse", "permissionDecision": "deny",
                    "permissionDecisionReason": f"stockade: {message}"}}) + "\n")
            else:
                sys.stdout.write(json.dumps({"decision": "deny", "reasons": [{
                    "verdict": "deny", "code": codes.HOOK_INTERNAL_ERROR, "message": message, "span": None,
                    "rule": None}]}) + "\n")
            sys.stdout.flush()
        except BaseException:  # (stdout closed or broken: the exit code and stderr still block)
            pass
        try:
            print(f"stockade: deny: {message}", file=sys.stderr)
        except BaseException:
            pass
        return 2 if args.harness == "claude-code" else 1


def _run(args: argparse.Namespace) -> int:
    """:func:`run` without the last-resort guard."""
    from stockade.integrations.generic_hook import (
        HOOK_TIMEOUT,
        HookDecision,
        judge_isolated,
        load_ir,
        read_event,
        reason,
        write_audit,
    )

    source = f"hook:{args.harness}"
    if (args.confine or args.approve_allowed) and args.harness != "claude-code":
        print("stockade: `--confine` and `--approve-allowed` apply to `claude-code` events only", file=sys.stderr)
        return 2
    ir = None
    event: object = None
    policy_path: str | None = None
    workspace: str | None = None
    answer: HookDecision | None
    try:
        event = read_event(sys.stdin.buffer)
        if isinstance(event, HookDecision):
            answer = event
        else:
            workspace = args.workspace
            if workspace is None and isinstance(event, dict) and isinstance(event.get("cwd"), str) \
                    and event["cwd"].startswith("/") and args.harness == "claude-code":
                workspace = event["cwd"]
            from stockade.cli.common import policy_from_args

            policy_path = policy_from_args(args)
            ir, answer = load_ir(policy_path, workspace, args.home, args.tmpdir)
            from stockade.compiler.cache import cache_warning

            warning = cache_warning()
            if warning is not None:  # an unusable cache directory: only slower
                print(f"stockade: {warning}", file=sys.stderr)
            if ir is not None:
                if args.harness == "claude-code":
                    from stockade.integrations.claude_code import judge_event as judge
                else:
                    from stockade.integrations.generic_hook import judge_generic as judge
                policy = ir
                session = _session_of(args, ir, event)
                if session is not None and _post_event(event):  # what a tool did: recorded, never answered
                    from stockade.integrations.session_hook import post_tool_use

                    tripped = post_tool_use(ir, event, session)
                    if tripped is not None:
                        print(f"stockade: session `{session}` stopped: {tripped}", file=sys.stderr)
                    return 0
                if _post_event(event):
                    return 0
                timeout = HOOK_TIMEOUT if args.timeout is None else max(args.timeout, 0.0)
                answer = judge_isolated(lambda: judge(policy, event), timeout)
                if session is not None:
                    from stockade.integrations.session_hook import pre_tool_use
                    from stockade.runtime.audit import default_audit_path

                    answer, step = pre_tool_use(ir, event, answer, session)
                    answer = HookDecision(answer.decision, answer.reasons,
                                          {**answer.subject, "session": session, "step": step})
                    args.audit = args.audit or default_audit_path()  # a session's decisions are always audited
    except Exception as exc:  # fail closed: a bug in the hook never lets a tool call through
        answer = HookDecision("deny", (reason("deny", codes.HOOK_INTERNAL_ERROR,
                                              f"internal hook error ({type(exc).__name__}: {exc}); "
                                              "failing closed"),))
    assert answer is not None
    answer = write_audit(args.audit, ir, source, answer)
    if answer.decision == "deny":
        print(f"stockade: deny: {answer.message}", file=sys.stderr)
    if args.harness == "claude-code":
        from stockade.integrations.claude_code import hook_output

        updated = None
        if args.confine and ir is not None and answer.decision in ("allow", "confirm") \
                and answer.subject.get("tool") == "Bash" and isinstance(event, dict):
            updated = _confined(event, policy_path, workspace or ir.context.workspace, answer.decision == "confirm")
        output = hook_output(answer, args.approve_allowed, updated)
        if output is not None:
            sys.stdout.write(json.dumps(output) + "\n")
        return 0
    sys.stdout.write(json.dumps(answer.to_json()) + "\n")
    return _EXIT.get(answer.decision, 1)
