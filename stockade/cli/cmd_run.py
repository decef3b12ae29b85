"""``stockade run``: judge a command, then run it confined, with limits and an audit trail.

Usage::

    stockade run [--policy P] [--workspace DIR] [--audit FILE] [--approve]
                 [--preview [--diff] [--apply]] [--no-cache] [--format text|json]
                 (-- CMD ARGS… | -c 'shell text')

The stages are chained by :func:`stockade.runtime.session.run`; this module parses the
arguments, calls it with a terminal ``confirm`` callback and an ``apply`` callback (typed
``yes``), renders the outcome as text or JSON, and maps it to an exit code:

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
  pids cgroup can be used); other limit hits (output truncated, cpu, memory, file size,
  refused forks) keep the command's status and are named on stderr and in the audit;
* ``1`` refused by the policy (``deny``, or ``confirm`` without approval);
* ``2`` usage error, or a policy that does not compile;
* ``3`` environment problem: no bubblewrap, no user namespaces, sandbox failed to start,
  preview overlay unavailable.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any
    import argparse

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_ENVIRONMENT = 0, 1, 2, 3


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``run`` parser."""
    import argparse

    parser = sub.add_parser("run", help="run a command confined by a policy",
                            description="Judge a command with the analyzer, then run it confined.")
    parser.add_argument("--policy", "-p", metavar="P", help="the policy file (default: the built-in policy)")
    parser.add_argument("--workspace", "-w", metavar="DIR", help="the workspace (default: the current directory)")
    parser.add_argument("--audit", metavar="FILE", help="append audit records here (default: $STOCKADE_AUDIT "
                                                        "or ~/.local/state/stockade/audit.jsonl)")
    parser.add_argument("--approve", action="store_true", help="approve a `confirm` verdict without asking")
    parser.add_argument("--preview", action="store_true", help="run against a copy-on-write view; show changes")
    parser.add_argument("--diff", action="store_true", help="with --preview: print the full diff")
    parser.add_argument("--apply", action="store_true", help="with --preview: apply the changes without asking")
    parser.add_argument("--no-cache", action="store_true", help="compile the policy afresh")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("-c", dest="shell", metavar="TEXT", help="run `/bin/sh -c TEXT` (the analyzer judges TEXT)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the command to run")
    parser.set_defaults(handler=run)


#: The options :func:`parse_fast` reads: spelling → (destination, takes a value).
_FAST_OPTIONS: dict[str, tuple[str, bool]] = {
    "--policy": ("policy", True), "-p": ("policy", True), "--workspace": ("workspace", True),
    "-w": ("workspace", True), "--audit": ("audit", True), "--format": ("format", True), "-c": ("shell", True),
    "--approve": ("approve", False), "--preview": ("preview", False), "--diff": ("diff", False),
    "--apply": ("apply", False), "--no-cache": ("no_cache", False),
}


class FastArgs:
    """Parsed arguments with attribute access (what ``argparse.Namespace`` gives; a plain
    class, as ``types.SimpleNamespace`` would cost an import on the fast path)."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return "FastArgs(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"


def parse_fast(argv: list[str]) -> Any | None:
    """The parsed arguments of ``stockade run`` (what :func:`register`'s parser gives, as
    :class:`FastArgs`), without importing ``argparse`` — or None, and the caller uses
    argparse, for anything but the plain forms: each option spelled in full and given
    once, its value as the next word not starting with ``-``, ``--format`` text or json,
    then nothing, or ``--`` and the command.  (Abbreviations, ``--opt=value``, ``-h``, a
    command without ``--``, repeated options and every error are argparse's.)"""
    values: dict[str, Any] = {"policy": None, "workspace": None, "audit": None, "approve": False,
                              "preview": False, "diff": False, "apply": False, "no_cache": False,
                              "format": "text", "shell": None, "command": []}
    seen: set[str] = set()
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            values["command"] = argv[i:]
            break
        spec = _FAST_OPTIONS.get(word)
        if spec is None or spec[0] in seen:
            return None
        dest, takes_value = spec
        seen.add(dest)
        if takes_value:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                return None
            values[dest] = argv[i + 1]
            i += 2
        else:
            values[dest] = True
            i += 1
    if values["format"] not in ("text", "json"):
        return None
    return FastArgs(**values, handler=run)


def _err(message: str) -> None:
    print(f"stockade: {message}", file=sys.stderr)


def _fail(error: Any, fmt: str, code: int) -> int:
    from stockade.cli.render import report_error

    report_error(error, fmt, sys.stdout if fmt == "json" else sys.stderr)
    return code


class _TerminalConfirm:
    """Ask on the terminal for a ``confirm`` verdict, after showing the reasons."""

    approved_by = "terminal"

    def __call__(self, judgement: Any) -> bool:
        from stockade.runtime import gate

        _print_reasons(judgement, "needs confirmation")
        return gate.terminal_confirm(gate.CONFIRM_PROMPT)


class _ApplyPrompt:
    """Show the preview (text mode), then apply with ``--apply`` or a typed ``yes``."""

    def __init__(self, args: argparse.Namespace, text_mode: bool):
        self.args = args
        self.text_mode = text_mode
        self.shown = False

    def show(self, preview: Any) -> None:
        """Print the change listing (and the diff with ``--diff``) once."""
        if self.text_mode and not self.shown:
            _print_preview(preview, self.args.diff)
        self.shown = True

    def __call__(self, preview: Any) -> bool:
        self.show(preview)
        if self.args.apply:
            return True
        if not self.text_mode:
            return False
        from stockade.runtime import gate

        return gate.has_terminal() and gate.terminal_confirm(
            "stockade: apply these changes to the workspace? type `yes`: ")


def run(args: argparse.Namespace) -> int:
    """Parse, call :func:`stockade.runtime.session.run`, render; see the module docstring
    for exit codes."""
    command: list[str] | str = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
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
    from stockade.runtime import gate
    from stockade.runtime.session import run as run_session

    text_mode = args.format == "text"
    captured: dict[str, bytearray] = {"out": bytearray(), "err": bytearray()}
    sinks: dict[str, Any] = {}
    if not text_mode:
        sinks = {"stdout": captured["out"].extend, "stderr": captured["err"].extend}
    prompt = _ApplyPrompt(args, text_mode)
    try:
        outcome = run_session(command, policy=args.policy, workspace=args.workspace, audit=args.audit,
                              approve=args.approve,
                              confirm=_TerminalConfirm() if text_mode and gate.has_terminal() else None,
                              preview=args.preview, diff=args.diff and text_mode, apply=prompt,
                              use_cache=not args.no_cache, notify=_err, **sinks)
    except Exception as error:
        from stockade.diagnostics import StockadeError  # only when something went wrong

        if not isinstance(error, StockadeError):
            raise
        return _fail(error, args.format, EXIT_ENVIRONMENT if any(d.code.startswith("R5") for d in error.diagnostics)
                     else EXIT_USAGE)
    if not outcome.ran:
        if not text_mode:
            _dump(outcome.to_json())
        else:
            why = "denied by the policy" if outcome.verdict == "deny" else \
                "needs confirmation: rerun with `--approve` or on a terminal"
            _print_reasons(outcome, why)
        return EXIT_VIOLATION
    if outcome.preview is not None and text_mode:
        prompt.show(outcome.preview)
        _print_preview_end(outcome.preview)
    if text_mode:
        for hit in outcome.limits_hit:
            if hit != "output":
                value = _limit_value(outcome.limits, hit)
                _err(f"limit `{hit}` was hit" + (f" ({value})" if value else ""))
    else:
        data = outcome.to_json()
        shown = data.pop("preview")
        data["stdout"] = captured["out"].decode("utf-8", "replace")
        data["stderr"] = captured["err"].decode("utf-8", "replace")
        data["preview"] = shown
        _dump(data)
    return outcome.exit_status if outcome.exit_status is not None else EXIT_OK


def _limit_value(limits: Any, hit: str) -> str:
    value = getattr(limits, hit, None)
    if value is None:
        return ""
    return f"{value:g}s" if hit in ("timeout", "cpu") else f"{int(value)}"


def _dump(data: dict) -> None:
    import json

    json.dump(data, sys.stdout, indent=2)
    print()


def _print_reasons(judgement: Any, why: str) -> None:
    """Name the verdict and why the command does not simply run, then every reason
    (``judgement``: a gate judgement or a run outcome)."""
    verdict = getattr(judgement, "decision", None) or judgement.verdict
    _err(f"`{verdict}`: {why}")
    for reason in judgement.reasons:
        print(f"  - {reason}", file=sys.stderr)


_MARK = {"added": "A", "modified": "M", "deleted": "D", "renamed": "R", "mode": "P", "type": "T", "unsupported": "?"}


def _print_preview(preview: Any, diff: bool) -> None:
    """The change listing on stderr, and the full diff on stdout with ``--diff``."""
    out = sys.stderr
    changes = preview.changes
    if not changes:
        print("stockade: preview: no changes", file=out)
        return
    summary = ", ".join(f"{n} {k}" for k, n in sorted(preview.counts.items()))
    print(f"stockade: preview: {summary}", file=out)
    width = max(len(c.path) + (len(c.old_path) + 4 if c.old_path else 0) for c in changes)
    for change in changes:
        name = f"{change.old_path} → {change.path}" if change.old_path else change.path
        if change.entry == "dir" and change.kind != "renamed":
            name += "/"
        if change.kind in ("mode", "type"):
            stat = f"{oct(change.old_mode or 0)} → {oct(change.new_mode or 0)}"
        elif change.binary:
            stat = "binary"
        elif change.entry == "symlink":
            stat = "symlink"
        else:
            stat = f"+{change.added_lines} -{change.removed_lines}" if change.entry == "file" else ""
        print(f"  {_MARK.get(change.kind, '?')} {name:<{width + 1}} {stat}", file=out)
    files = sum(1 for c in changes if c.entry != "dir")
    print(f" {files} file(s) changed, {preview.insertions} insertion(s)(+), {preview.deletions} deletion(s)(-)",
          file=out)
    if diff and preview.diff:
        sys.stdout.write(preview.diff)
        sys.stdout.flush()


def _print_preview_end(preview: Any) -> None:
    """Whether the changes were applied, and what could not be."""
    if preview.applicable:
        if preview.applied:
            _err(f"applied {preview.applied_count} change(s) to the workspace")
        else:
            _err("not applied; the workspace is untouched (use `--apply` to apply)")
    if preview.unsupported:
        _err("not applicable (devices, fifos, sockets): " + ", ".join(f"`{p}`" for p in preview.unsupported))
