"""``stockade init [DIR]``: write a starter policy for the project in DIR (default: here).

The policy (:func:`stockade.compiler.starter.starter_policy`) is written to
``DIR/stockade.policy`` (or ``-o FILE``; ``-o -`` prints it) after it has been compiled and
its tests run; an existing policy file is never overwritten (exit 2).
"""

from __future__ import annotations

import argparse
import os
import sys

from stockade.cli.common import add_format_arg, fail, usage_error
from stockade.cli.main import EXIT_OK
from stockade.diagnostics import StockadeError

#: The project policy files `stockade init` will not overwrite.
POLICY_NAMES = ("stockade.policy", os.path.join(".stockade", "policy"))


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``init`` parser."""
    parser = sub.add_parser("init", help="write a starter policy for this project",
                            description="Detect the project's tools (git, npm, pip, cargo, go) and write a starter "
                                        "policy for them that passes `stockade check`.")
    parser.add_argument("directory", nargs="?", default=".", metavar="DIR", help="the project (default: here)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the policy here (default: DIR/stockade.policy; `-`: standard output)")
    parser.add_argument("--name", metavar="NAME", help="the policy's name (default: the directory's name)")
    parser.add_argument("--home", metavar="DIR", help="the home directory `~` means (default: $HOME)")
    add_format_arg(parser, ("text",))
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the starter policy after checking it."""
    from stockade.cli.judging import best_judge
    from stockade.compiler.pipeline import compile_policy
    from stockade.compiler.policy_tests import run_tests
    from stockade.compiler.starter import detect_tools, starter_policy

    root = args.directory
    if not os.path.isdir(root):
        return usage_error(f"`{root}` is not a directory", args.format)
    output = args.output or os.path.join(root, POLICY_NAMES[0])
    if output != "-":
        existing = [p for p in ([output] if args.output else [os.path.join(root, n) for n in POLICY_NAMES])
                    if os.path.lexists(p)]
        if existing:
            return usage_error(f"`{existing[0]}` already exists: `stockade init` does not overwrite a policy "
                               "(remove it, or pass `-o FILE`)", args.format)
    text = starter_policy(root, args.home, args.name)
    try:
        compiled = compile_policy(text=text, workspace=root, home=args.home)
    except StockadeError as error:  # pragma: no cover - the template is checked by the tests
        return fail(error, args.format)
    failed = [o for o in run_tests(compiled.ir, judge=best_judge()) if not o.passed]
    if failed:  # pragma: no cover - the template is checked by the tests
        return usage_error("the starter policy fails its own test `" + failed[0].case.command + "`", args.format)
    if output == "-":
        sys.stdout.write(text)
        return EXIT_OK
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(output, flags, 0o644)  # O_EXCL: never overwrite, even in a race
    except FileExistsError:
        return usage_error(f"`{output}` already exists: `stockade init` does not overwrite a policy", args.format)
    except OSError as exc:
        return usage_error(f"cannot write `{output}`: {exc.strerror or exc}", args.format)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    tools = ", ".join(t.name for t in detect_tools(root)) or "no known tool"
    print(f"wrote {output} (found: {tools}); next: `stockade check {output}`")
    return EXIT_OK
