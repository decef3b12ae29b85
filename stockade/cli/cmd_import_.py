"""``stockade import --from SOURCE FILE``: another agent tool's configuration as a policy.

Sources: every export of :data:`stockade.backends.registry.TARGETS` with an importer
(``codex-rules``, ``srt``, ``claude-settings``, ``cursor``); an unknown one is ``B300``.  The output is canonical
policy text (as ``stockade fmt`` prints it) with comments naming the source entries.
Malformed input is reported at ``file:line:col`` (exit 2); entries with no Stockade
equivalent are warnings.
"""

from __future__ import annotations

import argparse
import sys

from stockade import catalogue as codes
from stockade.cli.common import add_format_arg, dump_json, fail, print_warnings, write_output
from stockade.cli.main import EXIT_OK, EXIT_USAGE
from stockade.diagnostics import Diagnostic, StockadeError

#: Inputs larger than this are refused.
MAX_INPUT_BYTES = 16 * 1024 * 1024


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``import`` parser."""
    from stockade.backends.registry import TARGETS, names

    sources = names("export", importable=True)
    parser = sub.add_parser("import", help="import another agent tool's configuration as a policy",
                            description="Write an equivalent policy from another agent tool's configuration: "
                                        + "; ".join(f"{n} ({TARGETS[n].doc})" for n in sources) + ".")
    parser.add_argument("file", metavar="FILE", help="the file to import (`-`: standard input)")
    parser.add_argument("--from", "-f", required=True, dest="source", metavar="SOURCE",
                        help="the input format: " + ", ".join(sources))
    parser.add_argument("-o", "--output", metavar="OUT", help="write the policy here (default: stdout)")
    parser.add_argument("--home", metavar="DIR", help="the home directory `~` means (default: $HOME)")
    add_format_arg(parser)
    parser.set_defaults(handler=run)


def _read(path: str) -> str:
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            from stockade.compiler.loader import read_regular_file

            data = read_regular_file(path, MAX_INPUT_BYTES)
    except OSError as exc:
        from stockade.compiler.loader import FileTooLarge, NotARegularFile

        reason = f"`{path}` is {exc.what}, not a settings file" if isinstance(exc, NotARegularFile) else (
            f"`{path}` is larger than 16 MiB" if isinstance(exc, FileTooLarge) else
            f"cannot read `{path}`: {exc.strerror or exc}")
        raise StockadeError(Diagnostic(codes.IMPORT_UNREADABLE_INPUT, reason)) from None
    if len(data) > MAX_INPUT_BYTES:
        raise StockadeError(Diagnostic(codes.IMPORT_UNREADABLE_INPUT, f"`{path}` is larger than 16 MiB"))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StockadeError(Diagnostic(codes.IMPORT_UNREADABLE_INPUT,
                                       f"`{path}` is not UTF-8 (byte {exc.start})")) from None


def run(args: argparse.Namespace) -> int:
    """Read, convert, write the policy."""
    from stockade.backends.registry import importer_class
    from stockade.integrations import import_text

    name = "<stdin>" if args.file == "-" else args.file
    try:
        importer_class(args.source)  # B300 before reading anything
        text = _read(args.file)
        result = import_text(text, args.source, name, home=args.home)
    except StockadeError as error:
        return fail(error, args.format, EXIT_USAGE)
    print_warnings(result.warnings, {name: text}, args.format)
    if args.format == "json":
        from stockade.cli.render import diagnostics_json

        write_output(dump_json({"policy": result.text, "warnings": diagnostics_json(result.warnings)}), args.output)
    else:
        write_output(result.text, args.output)
    return EXIT_OK
