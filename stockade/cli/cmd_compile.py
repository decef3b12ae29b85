"""``stockade compile POLICY --target T``: the IR or a backend's artifact.

Targets: ``ir`` (JSON), ``bwrap`` (argv), ``seatbelt`` (SBPL), ``windows`` (JSON plan),
``windows-ps`` (PowerShell).  Warnings about safe-side approximations go to stderr;
rules a target cannot express safely fail the compile with every one listed (exit 2).
"""

from __future__ import annotations

import argparse

from stockade.cli.common import (
    add_context_args, add_format_arg, compile_from_args, dump_json, fail, print_warnings, write_output,
)
from stockade.cli.main import EXIT_OK
from stockade.diagnostics import StockadeError


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``compile`` parser."""
    parser = sub.add_parser("compile", help="compile a policy to the IR or a sandbox artifact",
                            description="Compile a policy for one target and print or save the artifact.")
    parser.add_argument("policy", nargs="?", metavar="POLICY", help="the policy file (default: the built-in policy)")
    parser.add_argument("--target", "-t", default="ir",
                        help="ir, bwrap, seatbelt, windows or windows-ps (default: ir)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the artifact here (default: stdout)")
    add_context_args(parser)
    add_format_arg(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Compile and print or save the artifact."""
    try:
        if args.target == "windows" or args.target == "windows-ps":
            args.platform = args.platform or "windows"
        compiled = compile_from_args(args.policy, args)
        print_warnings(compiled.warnings, compiled.sources, args.format)
        if args.target == "ir":
            write_output(dump_json(compiled.ir.to_json()), args.output)
            return EXIT_OK
        from stockade.backends.base import compile_ir

        artifact = compile_ir(compiled.ir, args.target)
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
