"""Argument groups and helpers shared by subcommands: naming and loading a policy, writing
output.

**Naming a policy** is the same in every command (:func:`add_policy_args`,
:func:`policy_choice`, :func:`split_command_operands`)::

    stockade check|test|compile|export|show|fmt|hook … [POLICY] [--policy FILE] …
    stockade analyze|run [POLICY] [--policy FILE] [options] [-- COMMAND…]

* ``POLICY`` (the first operand) or ``--policy FILE`` / ``-p FILE``, not both (``E010``);
* for ``analyze`` and ``run``, whose command follows ``--``, the word before ``--`` is the
  policy only when it is an existing file whose name ends in ``.policy``; anything else
  there is refused with ``E010`` — never judged or run as a command, never guessed at;
  without ``--`` the words are the command, unless the first ends in ``.policy`` (then it
  is the policy and nothing may follow it);
* no policy named: discovery (:mod:`stockade.compiler.discovery`): the project's
  ``.stockade/policy`` or ``stockade.policy`` from the current directory upwards, the
  user's ``$XDG_CONFIG_HOME/stockade/policy``, the built-in one.

This module is imported by ``stockade run`` and ``stockade analyze``: it imports nothing
heavy at load time (argparse, the diagnostics and the catalogue only when needed).
"""

from __future__ import annotations

import os
import sys

from stockade.cli.main import EXIT_USAGE

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    import argparse
    from collections.abc import Sequence
    from typing import IO, Any

    from stockade.compiler.discovery import PolicyChoice
    from stockade.compiler.pipeline import CompileResult
    from stockade.diagnostics import Diagnostic, StockadeError

#: The suffix that makes the word before ``--`` a policy operand.
POLICY_SUFFIX = ".policy"


def quiet() -> bool:
    """Whether ``-q``/``--quiet`` was given: errors and results only."""
    from stockade.cli.main import SETTINGS

    return bool(SETTINGS["quiet"])


def add_policy_args(parser: argparse.ArgumentParser, operand: bool = True, many: bool = False) -> None:
    """The policy operand (``POLICY``, optional; ``POLICY…`` with ``many``) and
    ``--policy FILE`` / ``-p FILE`` (stored as ``policy_option``)."""
    if operand:
        parser.add_argument("policy", nargs="*" if many else "?", metavar="POLICY",
                            help="the policy file" + ("s" if many else "") + " (default: the project's, the "
                                 "user's or the built-in policy; `stockade show --which` tells which)")
    parser.add_argument("--policy", "-p", dest="policy_option", metavar="FILE",
                        help="the policy file (the same as the POLICY operand; give one or the other)")


def policy_error(message: str, help: str | None = None) -> StockadeError:
    """An ``E010`` error: the policy is named ambiguously."""
    from stockade import catalogue as codes
    from stockade.diagnostics import Diagnostic, StockadeError

    return StockadeError(Diagnostic(codes.POLICY_NAMING, message, help=help))


def named_policy(operand: str | None, option: str | None) -> str | None:
    """The policy named by the operand or ``--policy`` (None: neither); both is ``E010``."""
    if operand is not None and option is not None:
        raise policy_error(f"the policy is named twice: `{operand}` and `--policy {option}`",
                           help="give the policy once, as the first operand or with `--policy`")
    return operand if operand is not None else option


def split_command_operands(words: Sequence[str], option: str | None) -> tuple[str | None, list[str]]:
    """The operands of ``analyze``/``run`` (``[POLICY] [-- COMMAND…]``, as argparse's
    ``REMAINDER`` gives them) split into the named policy (or ``option``) and the command
    words; see the module docstring for the grammar."""
    words = list(words)
    if "--" in words:
        cut = words.index("--")
        before, command = words[:cut], words[cut + 1:]
    elif words and words[0].endswith(POLICY_SUFFIX):
        before, command = words[:1], []
        if len(words) > 1:
            if words[1].startswith("-"):
                raise policy_error(f"options after the policy `{words[0]}`: " + " ".join(f"`{w}`" for w in words[1:]),
                                   help="options come before the policy operand and the command")
            raise policy_error(f"the command after the policy `{words[0]}` must follow `--`",
                               help=f"write `{words[0]} -- {' '.join(words[1:])}`")
    else:
        return option, words
    if not before:
        return option, command
    if len(before) > 1:
        raise policy_error("only the policy may come before `--`: " + " ".join(f"`{w}`" for w in before),
                           help="put the whole command after `--`, and name the policy once")
    operand = before[0]
    if not operand.endswith(POLICY_SUFFIX):
        hint = (f"`{operand}` is a file but its name does not end in `{POLICY_SUFFIX}`: name it with "
                f"`--policy {operand}`") if os.path.isfile(operand) else \
            "put the command after `--`; a policy operand is a file whose name ends in `.policy`"
        raise policy_error(f"`{operand}` before `--` is not a policy file", help=hint)
    if not os.path.isfile(operand):
        raise policy_error(f"no policy file `{operand}`",
                           help="the word before `--` names the policy; to run or judge it as a command, "
                                "put it after `--`")
    return named_policy(operand, option), command


def policy_choice(named: str | None, start: str | None = None) -> PolicyChoice:
    """The policy named, or the one discovery picks (project, user, built-in)."""
    from stockade.compiler.discovery import choose

    return choose(named, start)


def policy_from_args(args: Any, operand: str | None = None) -> str | None:
    """The policy path for parsed arguments with :func:`add_policy_args`'s attributes (the
    operand, or ``operand`` when given, and ``--policy``), discovery included; None is the
    built-in policy."""
    named = named_policy(operand if operand is not None else getattr(args, "policy", None),
                         getattr(args, "policy_option", None))
    return policy_choice(named).path


def add_context_args(parser: argparse.ArgumentParser) -> None:
    """``--workspace``, ``--home``, ``--tmpdir``, ``--platform``: the compile context."""
    group = parser.add_argument_group("context")
    group.add_argument("--workspace", "-w", metavar="DIR", help="the agent's workspace (default: current directory)")
    group.add_argument("--home", metavar="DIR", help="the home directory `~` means (default: $HOME)")
    group.add_argument("--tmpdir", metavar="DIR", help="the temporary directory (default: $TMPDIR or /tmp)")
    group.add_argument("--platform", choices=("linux", "darwin", "windows"),
                       help="compile for this platform (default: this machine's)")


def add_format_arg(parser: argparse.ArgumentParser, choices: tuple[str, ...] = ("text", "json")) -> None:
    """``--format``."""
    parser.add_argument("--format", choices=choices, default="text", help="output format (default: text)")


def compile_from_args(path: str | None, args: argparse.Namespace) -> CompileResult:
    """Compile ``path`` (None: the built-in default) with the context options of ``args``."""
    from stockade.compiler.pipeline import compile_policy

    return compile_policy(path, workspace=getattr(args, "workspace", None), home=getattr(args, "home", None),
                          tmpdir=getattr(args, "tmpdir", None), platform=getattr(args, "platform", None))


def print_warnings(warnings: list[Diagnostic], sources: dict[str, str], fmt: str) -> None:
    """Warnings go to stderr in text mode (JSON output carries them itself); none with
    ``--quiet``."""
    if warnings and fmt == "text" and not quiet():
        from stockade.cli.render import print_diagnostics

        print_diagnostics(warnings, sources, sys.stderr)


def fail(error: StockadeError, fmt: str = "text", code: int = EXIT_USAGE) -> int:
    """Render a stage's error and return the exit code."""
    from stockade.cli.render import report_error

    report_error(error, fmt, sys.stdout if fmt == "json" else sys.stderr)
    return code


def usage_error(message: str, fmt: str = "text") -> int:
    """A usage problem found after argument parsing."""
    from stockade import catalogue as codes
    from stockade.diagnostics import Diagnostic, StockadeError

    return fail(StockadeError(Diagnostic(codes.USAGE_ERROR, message)), fmt)


def write_output(text: str, output: str | None, stream: IO[str] | None = None) -> None:
    """Write to ``output`` atomically, or to stdout."""
    if output is None or output == "-":
        (stream or sys.stdout).write(text if text.endswith("\n") else text + "\n")
        return
    directory = os.path.dirname(os.path.abspath(output))
    temporary = os.path.join(directory, f".{os.path.basename(output)}.tmp{os.getpid()}")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text if text.endswith("\n") else text + "\n")
    os.replace(temporary, output)


def dump_json(data: Any) -> str:
    """Stable, readable JSON."""
    import json

    return json.dumps(data, indent=2, ensure_ascii=False)


def display_path(path: str, cwd: str | None = None) -> str:
    """A file path as shown to the user: relative to the current directory when it lies
    under it, else absolute (rule locations, policy origins)."""
    if path.startswith("<"):  # `<builtin>/default.policy`, `<stdin>`
        return path
    absolute = os.path.abspath(path)
    here = os.path.abspath(cwd or os.getcwd())
    if absolute == here or absolute.startswith(here.rstrip("/") + "/"):
        return os.path.relpath(absolute, here)
    return absolute


def size_text(value: float) -> str:
    """A byte count for people: as a policy writes it when a binary unit divides it
    (``4GiB``, ``512MiB``), else to one decimal in the largest unit it reaches (``1.4MiB``),
    bytes below 1 KiB (``900B``)."""
    number = int(value)
    units = ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB"))
    for shift, unit in units:
        if number >= 1 << shift and number % (1 << shift) == 0:
            return f"{number >> shift}{unit}"
    for shift, unit in units:
        if number >= 1 << shift:
            return f"{number / (1 << shift):.1f}{unit}"
    return f"{number}B"
