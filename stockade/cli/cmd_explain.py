"""``stockade explain CODE``: what a diagnostic code means, why Stockade reports it, how to
fix it, and an example that triggers it (from :mod:`stockade.catalogue`).

The code is matched in any case; the name of its constant (``unknown_target``) works too.
``--format json`` prints the entry as a JSON object.  An unknown code is a usage error
(``E001``, exit 2) with the closest codes as a hint.
"""

from __future__ import annotations

import argparse
import sys

from stockade import catalogue
from stockade.cli.common import add_format_arg, dump_json, fail
from stockade.cli.main import EXIT_OK
from stockade.diagnostics import Diagnostic, StockadeError

#: Width of the plain-text explanation (paragraphs are wrapped to it).
WIDTH = 88


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``explain`` parser."""
    parser = sub.add_parser("explain", help="explain a diagnostic code",
                            description="Print what a diagnostic code means, why Stockade reports it, how to fix "
                                        "it, and an example that triggers it.")
    parser.add_argument("code", metavar="CODE", help="a diagnostic code such as `B300` (any case)")
    add_format_arg(parser)
    parser.set_defaults(handler=run)


def lookup(text: str) -> catalogue.Entry | None:
    """The entry of a code (``b300``) or of a constant's name (``unknown_target``), or None."""
    found = catalogue.get(text)
    if found is not None:
        return found
    wanted = text.strip().upper().replace("-", "_")
    return next((e for e in catalogue.ENTRIES.values() if e.name == wanted), None)


def suggestions(text: str) -> list[str]:
    """The codes closest to ``text`` (by code, then by name), at most three."""
    import difflib

    wanted = text.strip().upper()
    close = difflib.get_close_matches(wanted, list(catalogue.ENTRIES), n=3, cutoff=0.6)
    if not close:
        by_name = {e.name: str(e.code) for e in catalogue.ENTRIES.values()}
        close = [by_name[n] for n in difflib.get_close_matches(wanted.replace("-", "_"), list(by_name), n=3,
                                                               cutoff=0.6)]
    return close


def unknown_code(text: str) -> StockadeError:
    """The usage error for a code the catalogue does not have, with a did-you-mean."""
    close = suggestions(text)
    if close:
        hint = "did you mean " + " or ".join(f"`{c}`" for c in close) + "?"
    else:
        hint = "codes are a letter and three digits, such as `B300`; the README lists every code"
    return StockadeError(Diagnostic(catalogue.USAGE_ERROR, f"unknown diagnostic code `{text}`", help=hint))


def text_lines(found: catalogue.Entry) -> list[tuple[str, str | None]]:
    """The plain-text explanation of an entry, as (line, rich style) pairs."""
    import textwrap

    out: list[tuple[str, str | None]] = [(f"{found.code}: {found.title}", "bold"),
                                         (f"{found.family} · {found.name}", "dim"), ("", None)]
    for paragraph in found.explanation.split("\n\n"):
        out.extend((line, None) for line in textwrap.wrap(paragraph, WIDTH, break_on_hyphens=False))
        out.append(("", None))
    if found.reserved:
        out += [(f"Reserved: {found.reserved}", "yellow"), ("", None)]
    if found.example:
        label = {"policy": "Example policy:", "shell": "Example:"}.get(found.example_kind or "", "Example:")
        out.append((label, "bold"))
        out.extend((f"    {line}" if line else "", "cyan") for line in found.example.rstrip("\n").split("\n"))
        out.append(("", None))
    return out[:-1] if out and out[-1] == ("", None) else out


def run(args: argparse.Namespace) -> int:
    """Print the catalogue entry of ``args.code``."""
    found = lookup(args.code)
    if found is None:
        return fail(unknown_code(args.code), args.format)
    if args.format == "json":
        print(dump_json({"ok": True, **found.to_json()}))
        return EXIT_OK
    from stockade.cli.render import use_colour

    lines = text_lines(found)
    if use_colour(sys.stdout):
        from rich.console import Console
        from rich.text import Text

        console = Console(highlight=False, soft_wrap=True, force_terminal=True)
        for line, style in lines:
            text = Text(line, style=style or "")
            if style is None:
                text.highlight_regex(r"`[^`]+`", "cyan")  # code spans, as in the diagnostics' messages
            console.print(text)
    else:
        for line, _ in lines:
            print(line)
    return EXIT_OK

