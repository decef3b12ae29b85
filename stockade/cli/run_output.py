"""What ``stockade run`` prints besides the command's own output: refusals and their
reasons, the preview's change listing and the apply prompt, limits hit, JSON results,
errors.

Kept apart from :mod:`stockade.cli.cmd_run` so that the common case — an allowed command
that ran, in text mode — does not load it.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    import argparse
    from typing import Any

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_ENVIRONMENT = 0, 1, 2, 3


def report_failure(error: Any, fmt: str) -> int:
    """Render a ``StockadeError`` that stopped the run; its exit code: environment
    problems (``R5xx``) exit 3, policy and usage errors 2."""
    from stockade.cli.render import report_error

    report_error(error, fmt, sys.stdout if fmt == "json" else sys.stderr)
    return EXIT_ENVIRONMENT if any(d.code.startswith("R5") for d in error.diagnostics) else EXIT_USAGE


class TerminalConfirm:
    """Ask on the terminal for a ``confirm`` verdict, after showing the reasons."""

    approved_by = "terminal"

    def __call__(self, judgement: Any) -> bool:
        from stockade.runtime import gate

        print_reasons(judgement, "needs confirmation")
        return gate.terminal_confirm(gate.CONFIRM_PROMPT)


class ApplyPrompt:
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


def render_outcome(outcome: Any, text_mode: bool, captured: dict[str, bytearray], prompt: ApplyPrompt | None) -> int:
    """Report a run's outcome (a refusal, a preview, limits hit; everything as JSON in
    ``json`` mode, with the ``captured`` output); the exit code."""
    if not outcome.ran:
        if not text_mode:
            _dump(outcome.to_json())
        else:
            why = "denied by the policy" if outcome.verdict == "deny" else \
                "needs confirmation: rerun with `--approve` or on a terminal"
            print_reasons(outcome, why)
        return EXIT_VIOLATION
    if outcome.preview is not None and text_mode:
        if prompt is not None:
            prompt.show(outcome.preview)
        _print_preview_end(outcome.preview)
    if text_mode:
        from stockade.cli.common import quiet

        for warning in () if quiet() else outcome.warnings:
            _warn(f"warning: {warning}")
        for line in outcome.blocked:  # the network broker's refusals (`stockade audit --event net` lists them)
            _warn(line)
        for hit in outcome.limits_hit:
            if hit != "output":
                value = _limit_value(outcome.limits, hit)
                _warn(f"limit `{hit}` was hit" + (f" ({value})" if value else ""))
    else:
        data = outcome.to_json()
        shown = data.pop("preview")
        data["stdout"] = captured["out"].decode("utf-8", "replace")
        data["stderr"] = captured["err"].decode("utf-8", "replace")
        data["preview"] = shown
        _dump(data)
    if outcome.preview is not None and outcome.preview.conflicts:
        return EXIT_VIOLATION  # the apply was refused
    return outcome.exit_status if outcome.exit_status is not None else EXIT_OK


def _warn(message: str) -> None:
    print(f"stockade: {message}", file=sys.stderr)


def _limit_value(limits: Any, hit: str) -> str:
    value = getattr(limits, hit, None)
    if value is None:
        return ""
    if hit in ("timeout", "cpu"):
        return f"{value:g}s"
    if hit in ("memory", "output", "filesize", "disk"):
        from stockade.cli.common import size_text

        return size_text(value)
    return f"{int(value)}"


def _dump(data: dict) -> None:
    import json

    json.dump(data, sys.stdout, indent=2)
    print()


def print_reasons(judgement: Any, why: str) -> None:
    """Name the verdict and why the command does not simply run, then every reason
    (``judgement``: a gate judgement or a run outcome)."""
    verdict = getattr(judgement, "decision", None) or judgement.verdict
    _warn(f"`{verdict}`: {why}")
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
    if preview.conflicts:
        _warn("error[R526]: not applied: changed in the workspace since the preview started: "
              + ", ".join(f"`{p}`" for p in preview.conflicts))
        print("  = help: the workspace is untouched; run the command again to preview it against the current files",
              file=sys.stderr)
    elif preview.applicable:
        if preview.applied:
            _warn(f"applied {preview.applied_count} change(s) to the workspace")
        else:
            _warn("not applied; the workspace is untouched (use `--apply` to apply)")
    if preview.unsupported:
        _warn("not applicable (devices, fifos, sockets): " + ", ".join(f"`{p}`" for p in preview.unsupported))
