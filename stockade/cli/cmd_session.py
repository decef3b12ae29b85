"""``stockade session list|show|resume|end|diff|start``: an agent session's state.

* ``list`` — every session with its status, steps and denials;
* ``show ID`` — one session: counters, why it stopped, approvals, journaled files;
* ``resume ID`` — a person lets a stopped session go on (counters in a row start again);
* ``end ID [--merge|--discard]`` — no further command of the session runs; with a session
  worktree, merge its changes into the workspace or throw them away;
* ``diff ID`` — every change the session made, as a unified diff against the files now;
* ``start [ID] --worktree`` — a session with its own git worktree (or copy) of the
  workspace; prints the id and the directory to run the agent in.

Exit codes: 0 done, 1 the merge left conflicts, 2 usage or unknown session.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from stockade.cli.main import EXIT_OK, EXIT_USAGE


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``session`` parser."""
    parser = sub.add_parser("session", help="list, inspect, resume and end agent sessions",
                            description="An agent session's state: limits, approvals, journal, worktree.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="every session")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    for name, text in (("show", "one session's state"), ("resume", "let a stopped session go on"),
                       ("diff", "the session's changes as a unified diff")):
        action = actions.add_parser(name, help=text)
        action.add_argument("id", metavar="ID")
        action.add_argument("--format", choices=("text", "json"), default="text")
    end = actions.add_parser("end", help="end a session (with a worktree: merge or discard it)")
    end.add_argument("id", metavar="ID")
    choice = end.add_mutually_exclusive_group()
    choice.add_argument("--merge", action="store_true", help="merge the session worktree's changes")
    choice.add_argument("--discard", action="store_true", help="throw the session worktree away")
    end.add_argument("--format", choices=("text", "json"), default="text")
    start = actions.add_parser("start", help="start a session, optionally in its own worktree")
    start.add_argument("id", metavar="ID", nargs="?", help="the session id (default: a new one)")
    start.add_argument("--worktree", action="store_true", help="give the session its own worktree or copy")
    start.add_argument("--workspace", metavar="DIR", help="the workspace (default: the current directory)")
    start.add_argument("--policy", "-p", metavar="POLICY", help="the session's policy file")
    start.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(handler=run)


def _print_json(data: object) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    print()


def run(args: argparse.Namespace) -> int:
    """Do the action; render."""
    from stockade.diagnostics import StockadeError

    try:
        return _ACTIONS[args.action](args)
    except StockadeError as error:
        from stockade.cli.render import report_error

        report_error(error, args.format)
        return EXIT_USAGE


def _list(args: argparse.Namespace) -> int:
    from stockade.runtime.sessions import list_sessions

    found = list_sessions()
    if args.format == "json":
        _print_json(found)
        return EXIT_OK
    if not found:
        print("no sessions")
    for item in found:
        why = f" — {item['stopped_reason']}" if item.get("stopped_reason") else ""
        print(f"{item['id']}  {item['status']}  {item['steps']} step(s), {item['denials']} denial(s)  "
              f"{item.get('workspace') or ''}{why}")
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    from stockade.runtime.journal import Journal
    from stockade.runtime.sessions import open_session

    with open_session(args.id, create=False) as state:
        data = state.to_json()
        changes = Journal(state.directory).changes()
    data["journal"] = [{"path": c["path"], "before": c["pre"]["kind"], "source": c["source"],
                        "reverted": c["reverted"]} for c in changes]
    if args.format == "json":
        _print_json(data)
        return EXIT_OK
    print(f"session {data['id']}: {data['status']}" + (f" — {data['stopped_reason']}" if data.get("stopped_reason")
                                                       else ""))
    for key in ("workspace", "policy", "steps", "denials", "denials_in_row", "failures", "failures_in_row",
                "files_read"):
        print(f"  {key.replace('_', ' ')}: {data.get(key)}")
    if data.get("worktree"):
        print(f"  worktree: {data['worktree'].get('path')} ({data['worktree'].get('kind')})")
    for approval in data.get("approvals", []):
        print(f"  approval {approval.get('id')}: `{' '.join([approval['program'], *approval['words']])}` (session)")
    for change in data["journal"]:
        mark = " (reverted)" if change["reverted"] else ""
        print(f"  changed {change['path']} (was {change['before']}, by {change['source']}){mark}")
    return EXIT_OK


def _resume(args: argparse.Namespace) -> int:
    from stockade.runtime.sessions import resume

    state = resume(args.id)
    if args.format == "json":
        _print_json(state.to_json())
    else:
        print(f"session {args.id} resumed at step {state.steps}")
    return EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    from stockade.runtime.journal import Journal
    from stockade.runtime.sessions import exists, session_path

    if not exists(args.id):
        from stockade.runtime.sessions import open_session

        with open_session(args.id, create=False):
            pass  # raises the R581 error
    text = Journal(session_path(args.id)).diff()
    if args.format == "json":
        _print_json({"id": args.id, "diff": text})
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _end(args: argparse.Namespace) -> int:
    from stockade.runtime import worktrees
    from stockade.runtime.sessions import end, open_session

    with open_session(args.id, create=False) as state:
        tree = state.data.get("worktree")
    result: dict[str, Any] = {"id": args.id}
    code = EXIT_OK
    if tree and (args.merge or args.discard):
        outcome = worktrees.finish(tree, merge=args.merge)
        result.update(outcome)
        code = EXIT_OK if not outcome.get("conflicts") else 1
    elif tree:
        result["worktree"] = tree.get("path")
    end(args.id)
    if args.format == "json":
        _print_json(result)
    else:
        print(f"session {args.id} ended")
        for line in result.get("lines", []):
            print(f"  {line}")
        if tree and not (args.merge or args.discard):
            print(f"  its worktree `{tree.get('path')}` is kept: end it with `--merge` or `--discard`")
    return code


def _start(args: argparse.Namespace) -> int:
    import os
    import secrets

    from stockade.runtime import worktrees
    from stockade.runtime.sessions import check_id, exists, open_session

    session = check_id(args.id or "s-" + secrets.token_hex(6))
    if exists(session):
        from stockade import catalogue as codes
        from stockade.diagnostics import Diagnostic, StockadeError

        raise StockadeError(Diagnostic(codes.BAD_SESSION, f"session `{session}` exists already",
                                       help="pick another id, or `stockade session end` it first"))
    workspace = os.path.realpath(args.workspace or os.getcwd())
    policy = os.path.abspath(args.policy) if args.policy else None
    tree = worktrees.create(session, workspace) if args.worktree else None
    with open_session(session, policy=policy, workspace=tree["path"] if tree else workspace) as state:
        state.data["worktree"] = tree
        state.data["origin_workspace"] = workspace
    where = tree["path"] if tree else workspace
    if args.format == "json":
        _print_json({"id": session, "workspace": where, "worktree": tree})
    else:
        print(f"session {session}")
        print(f"  workspace: {where}" + (f" ({tree['kind']} of {workspace})" if tree else ""))
        print(f"  run the agent there with STOCKADE_SESSION={session}")
    return EXIT_OK


_ACTIONS = {"list": _list, "show": _show, "resume": _resume, "diff": _diff, "end": _end, "start": _start}
