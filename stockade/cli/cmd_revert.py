"""``stockade revert ID [--dry-run]``: take back every file change of a session.

Restores exactly the files the session changed (through ``stockade run --session`` and the
hook's file tools) to their state before the session, newest change first, and refuses —
listing each — every file changed since by someone else, or whose pre-image was over the
journal's budget.  Exit codes: 0 all restored, 1 some refused, 2 usage or unknown session.
"""

from __future__ import annotations

import argparse
import json
import sys

from stockade.cli.main import EXIT_OK, EXIT_USAGE, EXIT_VIOLATION


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``revert`` parser."""
    parser = sub.add_parser("revert", help="restore the files a session changed",
                            description="Restore every file an agent session changed to its state before the session.")
    parser.add_argument("id", metavar="SESSION")
    parser.add_argument("--dry-run", action="store_true", help="say what would be restored, change nothing")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Revert; render."""
    from stockade.diagnostics import StockadeError
    from stockade.runtime.journal import Journal, revert
    from stockade.runtime.sessions import open_session

    try:
        with open_session(args.id, create=False) as state:
            result = revert(Journal(state.directory), dry_run=args.dry_run)
    except StockadeError as error:
        from stockade.cli.render import report_error

        report_error(error, args.format)
        return EXIT_USAGE
    if args.format == "json":
        json.dump(result.to_json(), sys.stdout, indent=2)
        print()
    else:
        verb = "would restore" if args.dry_run else "restored"
        for path in result.restored:
            print(f"{verb} {path}")
        for path, why in result.refused:
            print(f"not restored {path}: {why} [R583]")
        print(f"{len(result.restored)} {verb}, {len(result.refused)} refused, {len(result.unchanged)} already as before")
    return EXIT_VIOLATION if result.refused else EXIT_OK
