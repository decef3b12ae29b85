"""``stockade export --to TARGET POLICY``: the policy as another agent tool's configuration.

Targets: every export of :data:`stockade.backends.registry.TARGETS` — ``codex-rules``
(Codex ``.rules``), ``codex-config`` (a Codex ``config.toml`` network profile), ``srt`` (sandbox-runtime settings JSON), ``claude-settings`` (Claude
Code ``settings.json``), ``cursor`` (Cursor ``sandbox.json``); an unknown one is ``B300``.
Whatever the target cannot express is printed as a warning naming the rule and its line.
A result looser than the policy (a path, host or command it would allow that the policy
forbids) is an error (``X602``, exit 2, nothing written) unless ``--allow-looser``;
``--strict`` also fails on what is merely not expressed (exit 2, nothing written).
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
    write_output,
)
from stockade.cli.main import EXIT_OK
from stockade.diagnostics import StockadeError


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``export`` parser."""
    from stockade.backends.registry import TARGETS, names

    exports = names("export")
    parser = sub.add_parser("export", help="export a policy to another agent tool's configuration",
                            description="Export a policy as another agent tool's configuration: "
                                        + "; ".join(f"{n} ({TARGETS[n].doc})" for n in exports) + ".")
    add_policy_args(parser)
    parser.add_argument("--to", "-t", required=True, dest="target", metavar="TARGET",
                        help="the target format: " + ", ".join(exports))
    parser.add_argument("-o", "--output", metavar="FILE", help="write the file here (default: stdout)")
    parser.add_argument("--strict", action="store_true",
                        help="fail (exit 2) when the target cannot express a rule exactly, even on the strict side")
    parser.add_argument("--allow-looser", action="store_true",
                        help="write the file even where it is looser than the policy (each such rule is a warning)")
    add_context_args(parser)
    add_format_arg(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Compile, export, print warnings, write the file."""
    from stockade.backends.registry import lookup
    from stockade.cli.common import print_warnings
    from stockade.integrations import export_ir

    try:
        lookup(args.target, ("export",))  # B300 before compiling anything
        compiled = compile_from_args(policy_from_args(args), args)
        print_warnings(compiled.warnings, compiled.sources, args.format)
        artifact = export_ir(compiled.ir, args.target, strict=args.strict, allow_looser=args.allow_looser)
    except StockadeError as error:
        return fail(error, args.format)
    print_warnings(artifact.warnings, compiled.sources, args.format)
    if args.format == "json":
        from stockade.cli.render import diagnostics_json

        payload = {"target": artifact.target, "artifact": artifact.text, "data": artifact.data,
                   "warnings": diagnostics_json(artifact.warnings)}
        write_output(dump_json(payload), args.output)
    else:
        write_output(artifact.text, args.output)
    return EXIT_OK
