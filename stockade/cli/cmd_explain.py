"""``stockade explain CODE`` and ``stockade explain POLICY (PATH | HOST[:PORT] | -- COMMAND)``.

With one argument shaped like a diagnostic code: what the code means, why Stockade reports
it, how to fix it, and an example that triggers it (from :mod:`stockade.catalogue`).  The
code is matched in any case; the name of its constant (``unknown_target``) works too.  An
unknown code is a usage error (``E001``, exit 2) with the closest codes as a hint.

With a policy (positionally or ``--policy``) and a subject: the decision of the policy for a
path (``/…``, ``~/…``, ``./…``, ``$VAR/…`` or anything with a ``/``), a destination
(``host`` or ``host:port``) or a command (after ``--``), the rule that decided it and every
rule it beat, through all layers (:mod:`stockade.compiler.explain`).

``--format json`` prints the entry or the explanation as a JSON object.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from stockade import catalogue
from stockade.cli.common import add_context_args, add_format_arg, compile_from_args, dump_json, fail, usage_error
from stockade.cli.main import EXIT_OK
from stockade.diagnostics import Diagnostic, StockadeError

#: Width of the plain-text explanation (paragraphs are wrapped to it).
WIDTH = 88


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``explain`` parser."""
    parser = sub.add_parser("explain", help="explain a diagnostic code, or a policy's decision",
                            description="`explain CODE`: what a diagnostic code means, why Stockade reports it, how "
                                        "to fix it, and an example. `explain POLICY (PATH | HOST[:PORT] | -- "
                                        "COMMAND)`: the rule that decides, and every rule it beat.",
                            usage="stockade explain CODE | POLICY (PATH | HOST[:PORT] | -- COMMAND) [options]")
    parser.add_argument("words", nargs="*", metavar="CODE|POLICY SUBJECT",
                        help="a diagnostic code such as `B300` (any case); or a policy and what to explain")
    parser.add_argument("--policy", metavar="POLICY", help="the policy (instead of the first argument)")
    add_context_args(parser)
    add_format_arg(parser)
    parser.set_defaults(handler=run, command=None)


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


_CODE_SHAPE = re.compile(r"[A-Za-z][0-9]{3}\Z|[A-Za-z]+(?:[_-][A-Za-z]+)+\Z")


def run(args: argparse.Namespace) -> int:
    """Explain a code, or a policy's decision."""
    words = list(args.words)
    if args.command is not None or args.policy is not None or len(words) != 1 or (
            not _CODE_SHAPE.match(words[0]) and lookup(words[0]) is None and os.path.exists(words[0])):
        return run_decision(args, words)
    return run_code(args, words[0])


def run_decision(args: argparse.Namespace, words: list[str]) -> int:
    """``explain POLICY SUBJECT``: the deciding rule and the rules it beat."""
    from stockade.compiler import explain

    policy = args.policy
    if policy is None:
        if not words:
            return usage_error("name a policy and what to explain: a path, a host or `-- COMMAND`", args.format)
        policy, words = words[0], words[1:]
    if args.command is not None:
        if words:
            return usage_error(f"give a path, a host or `-- COMMAND`, not both (`{words[0]}`)", args.format)
        if not args.command:
            return usage_error("give the command after `--`", args.format)
    elif len(words) != 1:
        return usage_error("give one path or host to explain, or `-- COMMAND`" if not words else
                           f"give one path or host (got {len(words)} words; a command goes after `--`)", args.format)
    try:
        compiled = compile_from_args(policy, args)
    except StockadeError as error:
        return fail(error, args.format)
    ir = compiled.ir
    if args.command is not None:
        result = explain.explain_command(ir, args.command)
    elif _is_path(words[0]):
        result = explain.explain_path(ir, words[0])
    else:
        host, port = _split_host(words[0])
        if port == -1:
            return usage_error(f"bad port in `{words[0]}`", args.format)
        result = explain.explain_host(ir, host, port)
    if args.format == "json":
        print(dump_json({"ok": True, "policy": ir.name, **result.to_json()}))
        return EXIT_OK
    print(f"{result.kind} `{result.subject}`: {result.decision}")
    if result.decided_by is not None:
        print(f"  decided by  {_ref(result.decided_by)}")
    if result.default:
        print(f"  = {result.default}")
    for beaten in result.beaten:
        print(f"  beat        {_ref(beaten)}")
        if beaten.why:
            print(f"              ({beaten.why})")
    return EXIT_OK


def _ref(ref: object) -> str:
    origin = getattr(ref, "origin", None)
    layer = getattr(ref, "layer", None)
    where = f"  at {origin}" if origin is not None else ""
    return f"`{getattr(ref, 'text', '')}`{where}" + (f" (layer `{layer}`)" if layer else "")


def _is_path(text: str) -> bool:
    return text.startswith(("/", "~", ".", "$")) or "/" in text


def _split_host(text: str) -> tuple[str, int | None]:
    """``host:port`` → (host, port); ``[::1]:80`` too; port -1 when it is not a number."""
    if text.startswith("[") and "]" in text:
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not port_text:
        return host, None
    return (host, int(port_text)) if port_text.isascii() and port_text.isdigit() and 0 < int(port_text) < 65536 else (host, -1)


def run_code(args: argparse.Namespace, code: str) -> int:
    """Print the catalogue entry of ``code``."""
    found = lookup(code)
    if found is None:
        return fail(unknown_code(code), args.format)
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

