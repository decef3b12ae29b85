"""``stockade fmt``: print, check, diff or rewrite policy files in their canonical form.

Usage::

    stockade fmt FILE             print the canonical form of one file (``-`` reads stdin)
    stockade fmt --check FILE…    exit 1 and name the files that would change
    stockade fmt --diff FILE…     print a unified diff; exit 1 if any file would change
    stockade fmt --write FILE…    rewrite the files in place (atomically)

``--policy FILE`` names a file too; with none, the discovered project or user policy is
formatted.  ``-w`` is refused with an explanation: it is ``--workspace`` in every command.

Exit codes: 0 nothing to change (or printed / rewritten), 1 some file is not canonical
(``--check``/``--diff``), 2 a file is missing, unreadable or has errors (its diagnostics
are printed; the other files are still processed).
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import tempfile
from dataclasses import dataclass

from stockade.cli.common import add_policy_args
from stockade.cli.main import EXIT_OK, EXIT_USAGE, EXIT_VIOLATION

STDIN = "-"


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``fmt`` parser."""
    parser = sub.add_parser("fmt", help="format policy files canonically",
                            description="Print, check, diff or rewrite policy files in their canonical form "
                                        "(comments kept).")
    parser.add_argument("files", nargs="*", metavar="POLICY",
                        help="policy files; `-` reads standard input (default: the project's or the user's policy)")
    add_policy_args(parser, operand=False)
    parser.add_argument("--check", action="store_true", help="exit 1 and name the files that would change")
    parser.add_argument("--diff", action="store_true", help="print a unified diff; exit 1 if any file would change")
    parser.add_argument("--write", action="store_true", help="rewrite the files in place")
    parser.add_argument("-w", dest="old_write", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(handler=run)


@dataclass
class Formatted:
    """One input and its canonical form (``formatted`` is None when it could not be formatted)."""

    name: str
    original: str
    formatted: str | None

    @property
    def changed(self) -> bool:
        """Whether the canonical form differs from the input."""
        return self.formatted is not None and self.formatted != self.original


def _error(message: str) -> None:
    print(f"stockade: error: {message}", file=sys.stderr)


def read_source(name: str) -> str | None:
    """The text of a file (or stdin for ``-``); None after printing why it cannot be read."""
    try:
        if name == STDIN:
            data = sys.stdin.buffer.read()
        else:
            with open(name, "rb") as handle:
                data = handle.read()
    except FileNotFoundError:
        _error(f"no such file `{name}`")
        return None
    except IsADirectoryError:
        _error(f"`{name}` is a directory, not a policy file")
        return None
    except OSError as exc:
        _error(f"cannot read `{name}`: {exc.strerror or exc}")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _error(f"`{name}` is not UTF-8 text (byte {exc.start})")
        return None


def format_source(name: str, text: str) -> Formatted:
    """Parse and format one source; diagnostics are printed when it has errors."""
    from stockade.cli.render import print_diagnostics
    from stockade.policy_lang.formatter import format_policy
    from stockade.policy_lang.parser import parse

    label = "<stdin>" if name == STDIN else name
    body = text[1:] if text.startswith("\ufeff") else text  # a byte-order mark is dropped
    policy, diagnostics = parse(body, label)
    if policy is None:
        print_diagnostics(diagnostics, {label: body})
        return Formatted(name, text, None)
    return Formatted(name, text, format_policy(policy, body))


def write_atomically(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` via a temporary file in the same directory and ``os.replace``."""
    directory = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o7777
    # not a `with` around all: the temporary's name is unlinked below when writing or replacing fails
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", newline="", dir=directory,  # noqa: SIM115
                                         prefix=f".{os.path.basename(path)}.", suffix=".tmp", delete=False)
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(handle.name, mode)
        os.replace(handle.name, path)
    except BaseException:
        try:
            os.unlink(handle.name)
        except OSError:
            pass
        raise


def _diff(item: Formatted) -> str:
    label = "<stdin>" if item.name == STDIN else item.name
    lines = difflib.unified_diff(item.original.splitlines(keepends=True), (item.formatted or "").splitlines(keepends=True),
                                 fromfile=label, tofile=f"{label} (formatted)")
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def run(args: argparse.Namespace) -> int:
    """Format the files as asked; returns the exit code."""
    if args.old_write:
        _error("`-w` no longer means `--write`: in every stockade command `-w` is `--workspace`; "
               "write `stockade fmt --write FILE…`")
        return EXIT_USAGE
    if args.policy_option is not None:
        args.files = [*args.files, args.policy_option]
    if not args.files:
        from stockade.cli.common import policy_choice

        found = policy_choice(None)
        if found.path is None:
            _error("no policy file to format: name one (`stockade fmt FILE`); none found by discovery")
            return EXIT_USAGE
        args.files = [found.path]
    if args.write and (args.check or args.diff):
        _error("`--write` cannot be combined with `--check` or `--diff`")
        return EXIT_USAGE
    if args.write and STDIN in args.files:
        _error("`--write` cannot rewrite standard input")
        return EXIT_USAGE
    if args.files.count(STDIN) > 1:
        _error("standard input `-` can be read only once")
        return EXIT_USAGE
    printing = not (args.check or args.diff or args.write)
    if printing and len(args.files) > 1:
        _error("give one file to print, or use `--check`, `--diff` or `--write` for several")
        return EXIT_USAGE
    status = EXIT_OK
    for name in args.files:
        text = read_source(name)
        if text is None:
            status = EXIT_USAGE
            continue
        item = format_source(name, text)
        if item.formatted is None:
            status = EXIT_USAGE
            continue
        if printing:
            sys.stdout.write(item.formatted)
            continue
        if args.write:
            if item.changed:
                try:
                    write_atomically(name, item.formatted)
                except OSError as exc:
                    _error(f"cannot write `{name}`: {exc.strerror or exc}")
                    status = EXIT_USAGE
                    continue
                print(f"reformatted {name}", file=sys.stderr)
            continue
        if item.changed:
            if args.diff:
                sys.stdout.write(_diff(item))
            if args.check:
                print(f"would reformat {'<stdin>' if name == STDIN else name}")
            status = max(status, EXIT_VIOLATION)
    return status
