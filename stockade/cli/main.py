"""The ``stockade`` command: parse arguments, call one stage function, render, exit.

Each subcommand lives in ``stockade/cli/cmd_<name>.py`` with ``register(subparsers)`` (adds
its parser, ``set_defaults(handler=run)``) and ``run(args) -> int``.  Only the invoked
subcommand's module is imported, so ``stockade run`` stays fast; the plain forms of
``stockade run`` and ``stockade analyze`` (see their ``parse_fast``) do not even import
``argparse``, and everything else goes through it.

Exit codes (DESIGN.md): 0 ok/allow, 1 policy violation or failed test (``deny``),
2 usage or input error, 3 environment problem (e.g. sandbox tool missing),
4 ``confirm`` (the analyzer wants a human to approve).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_CONFIRM = 4

#: The global options (:func:`take_global_options`), read wherever they appear before ``--``:
#: ``color`` (``auto``: on a terminal without ``NO_COLOR``; ``always``; ``never``) and
#: ``quiet`` (no warnings, no success summaries: errors and results only).
SETTINGS: dict[str, Any] = {"color": "auto", "quiet": False}

#: subcommand → module suffix (``stockade.cli.cmd_<suffix>``)
COMMANDS: dict[str, str] = {
    "check": "check",
    "fmt": "fmt",
    "test": "test",
    "compile": "compile",
    "analyze": "analyze",
    "run": "run",
    "audit": "audit",
    "hook": "hook",
    "export": "export",
    "import": "import_",
    "explain": "explain",
    "diff": "diff",
    "init": "init",
    "session": "session",
    "approvals": "approvals",
    "revert": "revert",
    "show": "show",
}


#: Subcommands whose words after ``--`` are a command, passed verbatim as ``args.command``.
SPLITS_AT_DASHDASH = frozenset({"explain"})


class FastArgs:
    """Parsed arguments with attribute access, as ``argparse.Namespace`` gives them (a plain
    class: ``types.SimpleNamespace`` would cost an import), for the hot subcommands'
    argparse-free ``parse_fast``."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return "FastArgs(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"


def read_plain_options(argv: Sequence[str], options: dict[str, tuple[str, bool]], values: dict[str, Any]) -> bool:
    """Read the plain forms of a subcommand's options into ``values`` without argparse:
    each option (spelling → (destination, takes a value)) given once, its value the next
    word not starting with ``-``, then nothing, or ``--`` and the command (stored under
    ``command``, the ``--`` included).  False for anything else (an unknown or abbreviated
    option, ``--opt=value``, a repeated option, a missing value, a command without ``--``):
    the caller then leaves the arguments to argparse."""
    seen: set[str] = set()
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--" or (word.endswith(".policy") and not word.startswith("-")
                            and argv[index + 1:index + 2] in ([], ["--"])):  # the POLICY operand
            values["command"] = list(argv[index:])
            return True
        spec = options.get(word)
        if spec is None or spec[0] in seen:
            return False
        dest, takes_value = spec
        seen.add(dest)
        if takes_value:
            if index + 1 >= len(argv) or argv[index + 1].startswith("-"):
                return False
            values[dest] = argv[index + 1]
            index += 2
        else:
            values[dest] = True
            index += 1
    return True


def hoist_policy_operand(argv: Sequence[str], options: dict[str, tuple[str, bool]]) -> list[str]:
    """``run``/``analyze`` arguments with a POLICY operand (a word ending in ``.policy``)
    moved after the options that follow it, just before ``--``: the command operand is an
    ``argparse.REMAINDER``, which would otherwise swallow those options (``stockade analyze
    team.policy --format json -- ls``).  ``options`` names the options taking a value; the
    arguments are returned unchanged when there is no such operand before ``--``."""
    words = list(argv)
    cut = words.index("--") if "--" in words else len(words)
    index = 0
    while index < cut:
        word = words[index]
        spec = options.get(word)
        if spec is not None and spec[1]:
            index += 2
            continue
        if word.startswith("-"):
            index += 1
            continue
        if not word.endswith(".policy"):
            return words  # a command without `--`, or an error the command reports
        rest = index + 1
        while rest < cut and words[rest].startswith("-"):  # only options may follow it before `--`
            spec = options.get(words[rest])
            rest += 2 if spec is not None and spec[1] else 1
        if index + 1 == cut or rest < cut:
            return words
        return [*words[:index], *words[index + 1:cut], word, *words[cut:]]
    return words


def take_global_options(argv: Sequence[str]) -> list[str] | str:
    """``argv`` without the global options ``--color WHEN`` (``--color=WHEN``) and
    ``-q``/``--quiet``, which are stored in :data:`SETTINGS`; they may appear anywhere
    before ``--``.  A bad ``--color`` value is returned as the error message."""
    out: list[str] = []
    index = 0
    words = list(argv)
    while index < len(words):
        word = words[index]
        if word == "--":
            out.extend(words[index:])
            break
        if word in ("-q", "--quiet"):
            SETTINGS["quiet"] = True
        elif word == "--color" or word.startswith("--color="):
            if word == "--color":
                if index + 1 >= len(words):
                    return "`--color` needs a value: auto, always or never"
                index += 1
                value = words[index]
            else:
                value = word.split("=", 1)[1]
            if value not in ("auto", "always", "never"):
                return f"`--color {value}`: expected auto, always or never"
            SETTINGS["color"] = value
        else:
            out.append(word)
        index += 1
    return out


def colour_wanted(stream: Any) -> bool:
    """Whether to colour (and embolden) what goes to ``stream``: ``--color always``, or
    ``auto`` on a terminal without ``NO_COLOR`` (any non-empty value) in the environment."""
    setting = SETTINGS["color"]
    if setting != "auto":
        return bool(setting == "always")
    import os

    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def _import(name: str) -> Any:
    """The module ``name`` (``importlib.import_module`` without importing :mod:`importlib`,
    which brings :mod:`warnings` along: both are avoidable on the hot path)."""
    __import__(name)
    return sys.modules[name]


def _load(name: str) -> Any:
    """The module of the subcommand ``name`` (every subcommand has one: a missing module
    is a broken installation and raises)."""
    return _import(f"stockade.cli.cmd_{COMMANDS[name]}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; with ``only``, just that subcommand's module is imported."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="stockade",
        description="Declarative policy compiler and static analyzer for AI-agent sandboxes.",
    )
    from stockade import __version__

    parser.add_argument("-V", "--version", action="version", version=f"stockade {__version__}")
    # the global options are taken out of the arguments by `take_global_options` before parsing
    # (they may come anywhere before `--`): declared here for the help only
    parser.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="print errors and results only: no warnings or success summaries (anywhere before `--`)")
    parser.add_argument("--color", choices=("auto", "always", "never"), default=argparse.SUPPRESS,
                        help="colour and bold: auto (on a terminal, unless NO_COLOR is set), always, never")
    parser.epilog = "`stockade help COMMAND` (or `stockade COMMAND --help`) describes one command."
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is not None and name != only:
            continue
        _load(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    SETTINGS.update(color="auto", quiet=False)
    _printable_output()
    taken = take_global_options(sys.argv[1:] if argv is None else argv)
    if isinstance(taken, str):
        print(f"stockade: error: {taken}", file=sys.stderr)
        return EXIT_USAGE
    args_list = taken
    if args_list[:1] == ["help"]:
        return _help(args_list[1:])
    if args_list and args_list[0] in ("run", "analyze"):  # the hot commands' plain forms skip argparse
        module = _import(f"stockade.cli.cmd_{args_list[0]}")
        args_list = [args_list[0], *hoist_policy_operand(args_list[1:], module._FAST_OPTIONS)]
        fast = module.parse_fast(args_list[1:])
        if fast is not None:
            return _call(fast.handler, fast)
    first = next((a for a in args_list if not a.startswith("-")), None)
    only = first if first in COMMANDS else None
    parser = build_parser(only)
    after: list[str] | None = None
    if only in SPLITS_AT_DASHDASH and "--" in args_list:  # `explain POLICY -- COMMAND`: the command verbatim
        cut = args_list.index("--")
        args_list, after = args_list[:cut], args_list[cut + 1:]
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return int(exc.code or 0)
    if after is not None:
        args.command = after
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return _call(handler, args)


def _printable_output() -> None:
    """Make stdout print any text: bytes that are not UTF-8 in a command, a path or a file
    (held as lone surrogates) would make a strict stdout (a UTF-8 locale's) raise while
    printing the verdict; they are printed as ``\\udcXX`` escapes instead."""
    stream = sys.stdout
    if getattr(stream, "errors", None) == "strict":
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # (a replaced or closed stream: left as it is)
            pass


#: Subcommands started once per agent command, whose process ends without the
#: interpreter's teardown (see :func:`console`).
HOT_COMMANDS = frozenset({"run", "analyze", "hook"})


def console(argv: Sequence[str] | None = None) -> None:
    """The ``stockade`` command (``bin/stockade``, ``python -m stockade``): :func:`main`,
    then exit with its code.

    The hot subcommands (:data:`HOT_COMMANDS`) run without the cyclic garbage collector
    (unless ``--batch`` keeps the process alive: it only slows the start, ~6 ms of a cold
    ``stockade analyze``), and end with ``os._exit``
    once stdout and stderr are flushed, skipping the interpreter's teardown of every
    loaded module (about 5 ms for ``stockade run``, more with the analyzer loaded): their
    files are closed and their audit records written by then, and they register no exit
    handlers.  Everything else exits normally.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    hot = bool(args_list) and args_list[0] in HOT_COMMANDS
    if hot and "--batch" not in args_list:
        import gc

        gc.disable()  # a one-shot process: the cyclic collector only slows the imports down
    code = main(args_list)
    if hot:
        import os

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    sys.exit(code)


def _help(words: Sequence[str]) -> int:
    """``stockade help [COMMAND]``: the help of a subcommand, or the overview."""
    if not words:
        build_parser().print_help()
        return EXIT_OK
    name = words[0]
    if name not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(name, list(COMMANDS), n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        print(f"stockade: error: unknown command `{name}`{hint} (commands: {', '.join(COMMANDS)})", file=sys.stderr)
        return EXIT_USAGE
    try:
        build_parser(name).parse_args([name, "--help"])
    except SystemExit as exc:
        return int(exc.code or 0)
    return EXIT_OK


def _call(handler: Callable[[Any], int], args: Any) -> int:
    """Run a subcommand's handler; an interrupt exits 130, a closed pipe quietly."""
    try:
        return int(handler(args))
    except KeyboardInterrupt:
        print("stockade: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as error:  # an environment or policy error a handler did not render itself
        from stockade.diagnostics import StockadeError  # (not imported on the way in: the hot path)

        if not isinstance(error, StockadeError):
            raise
        from stockade.cli.run_output import report_failure

        return report_failure(error, getattr(args, "format", "text") or "text")


if __name__ == "__main__":  # pragma: no cover
    console()
