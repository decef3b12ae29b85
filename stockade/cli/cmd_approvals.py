"""``stockade approvals list|add|revoke``: stored "always" answers to ``confirm``.

* ``list [--session ID]`` — the approvals that apply here: the session's, the project's
  (this workspace) and the user's, each with its id, scope and origin;
* ``add [--scope session|project|user] [--session ID] [--yes] -- COMMAND`` — derive the
  approval of the right granularity from COMMAND, show what it will match, and store it
  after a typed ``yes`` (or ``--yes``); the policy's ``session`` section may forbid it;
* ``revoke ID [--session ID]`` — remove one.

Approvals only ever turn ``confirm`` into ``allow`` (see :mod:`stockade.runtime.approvals`).
Exit codes: 0 done, 1 refused (by the policy, or not confirmed), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from stockade.cli.main import EXIT_OK, EXIT_USAGE, EXIT_VIOLATION


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``approvals`` parser."""
    parser = sub.add_parser("approvals", help="list, add and revoke stored approvals",
                            description="Stored `always` answers: they turn `confirm` into `allow`, never a `deny`.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name in ("list", "add", "revoke"):
        action = actions.add_parser(name, help={"list": "the approvals that apply here",
                                                "add": "derive, show and store an approval",
                                                "revoke": "remove an approval"}[name])
        action.add_argument("--session", metavar="ID", help="the session (default: $STOCKADE_SESSION)")
        action.add_argument("--workspace", metavar="DIR", help="the project (default: the current directory)")
        action.add_argument("--format", choices=("text", "json"), default="text")
        if name == "add":
            action.add_argument("--scope", choices=("session", "project", "user"), default="project")
            action.add_argument("--policy", "-p", metavar="POLICY", help="the policy whose `session` section applies")
            action.add_argument("--yes", action="store_true", help="store without asking")
            action.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND")
        if name == "revoke":
            action.add_argument("id", metavar="APPROVAL")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Do the action; render."""
    from stockade.diagnostics import StockadeError

    try:
        return {"list": _list, "add": _add, "revoke": _revoke}[args.action](args)
    except StockadeError as error:
        from stockade.cli.render import report_error

        report_error(error, args.format)
        return EXIT_VIOLATION if any(d.code == "R582" for d in error.diagnostics) else EXIT_USAGE


def _workspace(args: argparse.Namespace) -> str:
    return os.path.realpath(args.workspace or os.getcwd())


def _list(args: argparse.Namespace) -> int:
    from stockade.runtime import approvals
    from stockade.runtime.sessions import open_session, session_from

    session = session_from(args.session)
    session_entries: list = []
    if session is not None:
        with open_session(session, create=False) as state:
            session_entries = list(state.data.get("approvals", []))
    found = approvals.load(_workspace(args), session_entries)
    if args.format == "json":
        json.dump([a.to_json() for a in found], sys.stdout, indent=2)
        print()
        return EXIT_OK
    if not found:
        print("no approvals")
    for approval in found:
        origin = approval.origin or {}
        print(f"{approval.id}  {approval.scope:<8} `{approval.text}`  (from `{origin.get('command', '?')}`)")
    return EXIT_OK


def _add(args: argparse.Namespace) -> int:
    import shlex

    from stockade.compiler.cache import cached_ir
    from stockade.runtime import approvals
    from stockade.runtime.sessions import SessionSettings, open_session, session_from

    words = list(args.command)
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        print("stockade: no command: `stockade approvals add -- npm test`", file=sys.stderr)
        return EXIT_USAGE
    argv = shlex.split(words[0]) if len(words) == 1 and " " in words[0] else words
    workspace = _workspace(args)
    ir = cached_ir(args.policy, workspace=workspace)
    settings = SessionSettings.from_ir(ir)
    from stockade.analyzer import analyze

    verdict = analyze(shlex.join(argv), ir)
    if verdict.decision == "deny":
        print(f"stockade: `{shlex.join(argv)}` is denied by the policy; an approval can never allow it",
              file=sys.stderr)
        return EXIT_VIOLATION
    approval = approvals.derive(argv)
    approvals.check_storable(approval, argv, args.scope, settings)
    print(f"approval `{approval.text}` ({args.scope}) will allow {approvals.describe(approval)}")
    if not args.yes:
        from stockade.runtime.session_run import ask_terminal

        if ask_terminal("stockade: store it? type `yes`: ") != "yes":
            print("stockade: not stored", file=sys.stderr)
            return EXIT_VIOLATION
    session = session_from(args.session)
    origin = {"by": "stockade approvals add", "command": shlex.join(argv), "session": session}
    if args.scope == "session":
        if session is None:
            print("stockade: a session approval needs `--session ID`", file=sys.stderr)
            return EXIT_USAGE
        with open_session(session, create=False) as state:
            stored = approvals.add(approval, "session", workspace=workspace, origin=origin,
                                   session_approvals=state.data.setdefault("approvals", []))
    else:
        stored = approvals.add(approval, args.scope, workspace=workspace, origin=origin)
    _audit("approval-added", stored, session)
    if args.format == "json":
        json.dump(stored.to_json(), sys.stdout, indent=2)
        print()
    else:
        print(f"stored approval {stored.id}")
    return EXIT_OK


def _revoke(args: argparse.Namespace) -> int:
    from stockade.runtime import approvals
    from stockade.runtime.sessions import open_session, session_from

    session = session_from(args.session)
    removed = None
    if session is not None:
        with open_session(session, create=False) as state:
            removed = approvals.revoke(args.id, workspace=_workspace(args),
                                       session_approvals=state.data.setdefault("approvals", []))
    else:
        removed = approvals.revoke(args.id, workspace=_workspace(args))
    if removed is None:
        print(f"stockade: no approval `{args.id}` here", file=sys.stderr)
        return EXIT_USAGE
    _audit("approval-revoked", removed, session)
    print(f"revoked approval {removed.id} (`{removed.text}`, {removed.scope})")
    return EXIT_OK


def _audit(event: str, approval: object, session: str | None) -> None:
    """An audit record for a stored or removed approval (its origin in the trail)."""
    from stockade.runtime.audit import append_record, default_audit_path, now_iso

    record = {"time": now_iso(), "event": event, "approval": approval.to_json(),  # type: ignore[attr-defined]
              "command": approval.text, "verdict": None}  # type: ignore[attr-defined]
    if session is not None:
        record["session"] = session
    append_record(default_audit_path(), record)
