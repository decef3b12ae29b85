"""``stockade diff OLD NEW``: the semantic differences between two policies.

Both are compiled for the same workspace and home; every path, destination and command
whose decision changes is listed with a concrete example and the rules that decide it
before and after (:func:`stockade.compiler.diff.diff_policies`).  Exit 1 when NEW is
looser anywhere (a CI gate for policy changes), 0 otherwise, 2 on errors.
"""

from __future__ import annotations

import argparse

from stockade.cli.common import add_context_args, add_format_arg, compile_from_args, dump_json, fail
from stockade.cli.main import EXIT_OK, EXIT_VIOLATION
from stockade.diagnostics import StockadeError


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``diff`` parser."""
    parser = sub.add_parser("diff", help="semantic differences between two policies (exit 1 when NEW is looser)",
                            description="Compare two policies by what they decide: paths, destinations, commands, "
                                        "settings, limits and environment. Exit 1 when NEW is looser anywhere.")
    parser.add_argument("old", metavar="OLD", help="the policy before the change")
    parser.add_argument("new", metavar="NEW", help="the policy after the change")
    add_context_args(parser)
    add_format_arg(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Compile both, compare, print, exit by looseness."""
    from stockade.compiler.diff import diff_policies

    try:
        old = compile_from_args(args.old, args).ir
        new = compile_from_args(args.new, args).ir
    except StockadeError as error:
        return fail(error, args.format)
    changes = diff_policies(old, new)
    looser = [c for c in changes if c.looser]
    if args.format == "json":
        print(dump_json({"ok": not looser, "looser": bool(looser), "changes": [c.to_json() for c in changes]}))
        return EXIT_VIOLATION if looser else EXIT_OK
    for change in changes:
        mark = "looser " if change.looser else "stricter" if _stricter(change) else "changed"
        print(f"{mark}  {change.kind} `{change.example}`: {change.old} → {change.new}")
        if change.old_rule or change.new_rule:
            print(f"          was: {change.old_rule or 'no rule'}")
            print(f"          now: {change.new_rule or 'no rule'}")
    summary = f"{len(changes)} difference{'s' if len(changes) != 1 else ''}"
    print(f"{summary}, {len(looser)} looser" if changes else "no semantic difference")
    return EXIT_VIOLATION if looser else EXIT_OK


def _stricter(change: object) -> bool:
    return getattr(change, "kind", "") != "environment" and not getattr(change, "looser", False)
