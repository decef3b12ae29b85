"""``stockade run``: judge a command, then run it confined, with limits and an audit trail.

Usage::

    stockade run [POLICY | --policy FILE] [--workspace DIR] [--cwd DIR] [--audit FILE] [--approve]
                 [--preview [--diff] [--apply]] [--no-cache] [--format text|json]
                 (-- CMD ARGS… | -c 'shell text')

The stages are chained by :func:`stockade.runtime.session.run`; this module parses the
arguments, calls it with a terminal ``confirm`` callback and an ``apply`` callback (typed
``yes``), and has the outcome rendered as text or JSON (:mod:`stockade.cli.run_output`) and
mapped to an exit code:

1. The policy is compiled (or its cached plan is used: see ``stockade.runtime.cache``).
2. The analyzer judges the command text (``-c TEXT``, or the argv shell-quoted): ``deny``
   refuses with the reasons; ``confirm`` asks on a terminal (type ``yes``) and refuses
   without one unless ``--approve``; ``allow`` runs.  Every decision is audited.
3. The command runs under bubblewrap (Linux) or ``sandbox-exec`` (macOS) with the policy's
   limits and filtered environment.  There is no way to run unconfined: a missing or
   broken sandbox tool is an error.
4. ``--preview`` runs against a copy-on-write view of the workspace and lists the changes;
   ``--diff`` adds the full diff; they are applied only with ``--apply`` or a typed ``yes``.

Exit codes:

* the command's own exit status when it ran (``128 + N`` if signal ``N`` ended it);
* ``124`` the timeout killed it (like coreutils ``timeout``);
* ``127`` (``126``) the command does not exist (cannot be executed) inside the sandbox;
* ``125`` the process-limit watchdog killed it (only when neither ``RLIMIT_NPROC`` nor a
  pids cgroup can be used); ``137`` with ``memory`` hit when the run's memory cgroup
  OOM-killed a process (the whole tree is stopped); other limit hits (output truncated,
  cpu, file size, disk, refused forks) keep the command's status and are named on stderr
  and in the audit; run warnings (``memory`` held per process only) go to stderr too;
* ``1`` refused by the policy (``deny``, or ``confirm`` without approval), or a preview's
  apply refused because someone changed those workspace files since it began (``R526``);
* ``2`` usage error, or a policy that does not compile;
* ``3`` environment problem: no bubblewrap, no user namespaces, sandbox failed to start,
  preview overlay unavailable.
"""

from __future__ import annotations

import os
import sys

from stockade.cli.main import FastArgs, read_plain_options

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    import argparse
    from typing import Any

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_ENVIRONMENT = 0, 1, 2, 3


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``run`` parser."""
    import argparse

    parser = sub.add_parser("run", help="run a command confined by a policy",
                            description="Judge a command with the analyzer, then run it confined.")
    parser.add_argument("--policy", "-p", metavar="FILE", help="the policy file (or the POLICY operand before `--`; "
                                                              "default: the project's, the user's or the built-in)")
    parser.add_argument("--workspace", "-w", metavar="DIR", help="the workspace (default: the current directory)")
    parser.add_argument("--cwd", metavar="DIR", help="start the command in DIR, the workspace or a directory inside "
                                                     "it (default: the workspace)")
    parser.add_argument("--audit", metavar="FILE", help="append audit records here (default: $STOCKADE_AUDIT "
                                                        "or ~/.local/state/stockade/audit.jsonl)")
    parser.add_argument("--approve", action="store_true", help="approve a `confirm` verdict without asking")
    parser.add_argument("--preview", action="store_true", help="run against a copy-on-write view; show changes")
    parser.add_argument("--diff", action="store_true", help="with --preview: print the full diff")
    parser.add_argument("--apply", action="store_true", help="with --preview: apply the changes without asking")
    parser.add_argument("--no-cache", action="store_true", help="compile the policy afresh")
    parser.add_argument("--session", metavar="ID", help="run as a step of agent session ID (default: "
                        "$STOCKADE_SESSION): session limits, approvals, and a journal for `stockade revert`")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("-c", dest="shell", metavar="TEXT", help="run `/bin/sh -c TEXT` (the analyzer judges TEXT)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="[POLICY] -- CMD ARGS",
                        help="an existing `*.policy` file, then the command to run after `--`")
    parser.set_defaults(handler=run)


#: The options :func:`parse_fast` reads: spelling → (destination, takes a value).
_FAST_OPTIONS: dict[str, tuple[str, bool]] = {
    "--policy": ("policy", True), "-p": ("policy", True), "--workspace": ("workspace", True),
    "-w": ("workspace", True), "--audit": ("audit", True), "--cwd": ("cwd", True), "--format": ("format", True), "-c": ("shell", True),
    "--approve": ("approve", False), "--preview": ("preview", False), "--diff": ("diff", False),
    "--apply": ("apply", False), "--no-cache": ("no_cache", False), "--session": ("session", True),
}


def parse_fast(argv: list[str]) -> Any | None:
    """The parsed arguments of ``stockade run`` (what :func:`register`'s parser gives, as
    :class:`FastArgs`), without importing ``argparse`` — or None, and the caller uses
    argparse, for anything but the plain forms: each option spelled in full and given
    once, its value as the next word not starting with ``-``, ``--format`` text or json,
    then nothing, or ``--`` and the command.  (Abbreviations, ``--opt=value``, ``-h``, a
    command without ``--``, repeated options and every error are argparse's.)"""
    values: dict[str, Any] = {"policy": None, "workspace": None, "cwd": None, "audit": None, "approve": False,
                              "preview": False, "diff": False, "apply": False, "no_cache": False,
                              "format": "text", "shell": None, "command": [], "session": None}
    if not read_plain_options(argv, _FAST_OPTIONS, values):
        return None
    if values["format"] not in ("text", "json"):
        return None
    return FastArgs(**values, handler=run)


def _run_in_session(args: Any, command: list[str] | str, session: str, text_mode: bool,
                    captured: dict[str, bytearray], sinks: dict[str, Any], prompt: Any, policy: str | None) -> int:
    """``stockade run --session ID``: the run as a step of the session (its journal, limits
    and approvals: :mod:`stockade.runtime.session_run`)."""
    from stockade.cli.run_output import print_reasons, render_outcome
    from stockade.runtime import gate
    from stockade.runtime.session_run import ask_terminal, run_in_session

    ask = ask_terminal if text_mode and gate.has_terminal() else None
    outcome = run_in_session(command, session, policy=policy, workspace=args.workspace, audit=args.audit,
                             approve=args.approve, ask=ask,
                             show_reasons=lambda j: print_reasons(j, "needs confirmation"),
                             preview_apply=prompt, use_cache=not args.no_cache, notify=_err,
                             diff=args.diff and text_mode, **sinks)
    if text_mode and outcome.ran and not outcome.limits_hit and not outcome.warnings and (
            outcome.preview is None or not args.preview):
        return outcome.exit_status if outcome.exit_status is not None else EXIT_OK
    return render_outcome(outcome, text_mode, captured, prompt if args.preview else None)


def _err(message: str) -> None:
    print(f"stockade: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Parse, call :func:`stockade.runtime.session.run`, render; see the module docstring
    for exit codes."""
    from stockade.cli.common import policy_choice, split_command_operands

    named, words = split_command_operands(args.command, args.policy)
    command: list[str] | str = words
    if args.shell is not None:
        if command:
            _err("give either `-c TEXT` or `-- CMD ARGS`, not both")
            return EXIT_USAGE
        command = args.shell
    elif not command:
        _err("no command: use `stockade run -- CMD ARGS` or `stockade run -c 'shell text'`")
        return EXIT_USAGE
    if (args.diff or args.apply) and not args.preview:
        _err("`--diff` and `--apply` need `--preview`")
        return EXIT_USAGE
    if args.workspace and not os.path.isdir(args.workspace):
        _err(f"the workspace `{args.workspace}` is not a directory")
        return EXIT_USAGE
    if args.cwd is not None:
        root = os.path.realpath(args.workspace or ".")
        where = os.path.realpath(os.path.join(root, args.cwd)) if not os.path.isabs(args.cwd) else \
            os.path.realpath(args.cwd)
        if not os.path.isdir(where) or not (where == root or where.startswith(root.rstrip("/") + "/")):
            _err(f"`--cwd {args.cwd}` is not a directory inside the workspace `{root}`")
            return EXIT_USAGE
        args.cwd = where
    from stockade.runtime import gate
    from stockade.runtime.session import run as run_session

    text_mode = args.format == "text"
    captured: dict[str, bytearray] = {"out": bytearray(), "err": bytearray()}
    sinks: dict[str, Any] = {}
    if not text_mode:
        sinks = {"stdout": captured["out"].extend, "stderr": captured["err"].extend}
    prompt = confirm = None
    if args.preview:
        from stockade.cli.run_output import ApplyPrompt

        prompt = ApplyPrompt(args, text_mode)
    if text_mode and gate.has_terminal():
        from stockade.cli.run_output import TerminalConfirm

        confirm = TerminalConfirm()
    session = getattr(args, "session", None) or os.environ.get("STOCKADE_SESSION") or None
    try:
        if session is not None:
            return _run_in_session(args, command, session, text_mode, captured, sinks, prompt,
                                   policy_choice(named).path)
        outcome = run_session(command, policy=policy_choice(named).path, workspace=args.workspace, audit=args.audit,
                              approve=args.approve, confirm=confirm, preview=args.preview,
                              diff=args.diff and text_mode, apply=prompt if prompt is not None else False,
                              use_cache=not args.no_cache, notify=_err, cwd=args.cwd, **sinks)
    except Exception as error:
        from stockade.diagnostics import StockadeError  # only when something went wrong

        if not isinstance(error, StockadeError):
            raise
        from stockade.cli.run_output import report_failure

        return report_failure(error, args.format)
    if (text_mode and outcome.ran and outcome.preview is None and not outcome.limits_hit and not outcome.warnings
            and not outcome.blocked):
        return outcome.exit_status if outcome.exit_status is not None else EXIT_OK  # nothing more to say
    from stockade.cli.run_output import render_outcome

    return render_outcome(outcome, text_mode, captured, prompt)
