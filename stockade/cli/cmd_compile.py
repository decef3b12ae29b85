"""``stockade compile POLICY --target T``: the IR or a backend's artifact.

Targets: ``ir`` (JSON) and every backend of :data:`stockade.backends.registry.TARGETS`
(``bwrap`` argv, ``seatbelt`` SBPL, ``windows`` JSON plan, ``windows-ps`` PowerShell); an
unknown one is ``B300``.  Warnings about safe-side approximations, and sections left to
``stockade run`` (``B321``), go to stderr; rules a target cannot express safely fail the
compile with every one listed (exit 2).
"""

from __future__ import annotations

import argparse

from stockade.cli.common import (
    add_context_args,
    add_format_arg,
    add_policy_args,
    compile_from_args,
    dump_json,
    fail,
    policy_from_args,
    print_warnings,
    write_output,
)
from stockade.cli.main import EXIT_OK
from stockade.diagnostics import StockadeError


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``compile`` parser."""
    parser = sub.add_parser("compile", help="compile a policy to the IR or a sandbox artifact",
                            description="Compile a policy for one target and print or save the artifact.")
    add_policy_args(parser)
    from stockade.backends.registry import names

    parser.add_argument("--target", "-t", default="ir",
                        help=", ".join(["ir", *names("backend")]) + " (default: ir)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the artifact here (default: stdout)")
    add_context_args(parser)
    add_format_arg(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Compile and print or save the artifact."""
    from stockade.backends.registry import build, lookup

    try:
        if args.target != "ir":
            entry = lookup(args.target, ("backend",), extra=("ir",))  # B300 before compiling anything
            args.platform = args.platform or entry.platform
        compiled = compile_from_args(policy_from_args(args), args)
        print_warnings(compiled.warnings, compiled.sources, args.format)
        if args.target == "ir":
            write_output(dump_json(compiled.ir.to_json()), args.output)
            return EXIT_OK
        artifact = build(compiled.ir, args.target, kinds=("backend",))
    except StockadeError as error:
        return fail(error, args.format)
    print_warnings(artifact.warnings, compiled.sources, args.format)
    if args.format == "json":
        from stockade.cli.render import diagnostics_json

        payload = {"target": artifact.target, "artifact": artifact.data if artifact.data is not None else artifact.text,
                   "warnings": diagnostics_json(artifact.warnings)}
        write_output(dump_json(payload), args.output)
    else:
        write_output(artifact.text, args.output)
    return EXIT_OK
