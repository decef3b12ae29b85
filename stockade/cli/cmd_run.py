"""``stockade run``: judge a command, then run it confined, with limits and an audit trail.

Usage::

    stockade run [--policy P] [--workspace DIR] [--audit FILE] [--approve]
                 [--preview [--diff] [--apply]] [--no-cache] [--format text|json]
                 (-- CMD ARGS… | -c 'shell text')

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
* ``125`` the process-limit watchdog killed it (only when neither ``RLIMIT_NPROC`` nor a
  pids cgroup can be used); other limit hits (output truncated, cpu, memory, file size,
  refused forks) keep the command's status and are named on stderr and in the audit;
* ``1`` refused by the policy (``deny``, or ``confirm`` without approval);
* ``2`` usage error, or a policy that does not compile;
* ``3`` environment problem: no bubblewrap, no user namespaces, sandbox failed to start,
  preview overlay unavailable.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_ENVIRONMENT = 0, 1, 2, 3


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``run`` parser."""
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


def _err(message: str) -> None:
    print(f"stockade: {message}", file=sys.stderr)


def _fail(error: Any, fmt: str, code: int) -> int:
    from stockade.cli.render import report_error

    report_error(error, fmt, sys.stdout if fmt == "json" else sys.stderr)
    return code


def _context(args: argparse.Namespace) -> dict[str, str]:
    workspace = os.path.realpath(args.workspace or os.getcwd())
    home = os.environ.get("HOME") or os.path.expanduser("~")
    tmpdir = os.environ.get("TMPDIR") or "/tmp"
    platform = "darwin" if sys.platform == "darwin" else "linux"
    return {"workspace": workspace, "home": home, "tmpdir": tmpdir, "platform": platform}


def load_plan(policy: str | None, ctx: dict[str, str], use_cache: bool = True) -> tuple[dict, str | None]:
    """The run plan for a policy and context: from the cache, or compiled and cached."""
    from stockade.runtime import cache

    target = "seatbelt" if ctx["platform"] == "darwin" else "bwrap"
    key = cache.plan_key(policy, ctx, target)
    if key is not None and use_cache:
        from stockade.runtime.plan import facts_hold

        hit = cache.load_plan(key)
        if hit is not None and facts_hold(hit.get("facts", {})):
            return hit, key
    from stockade.backends.base import compile_ir
    from stockade.compiler.pipeline import compile_policy
    from stockade.runtime.limits import Limits
    from stockade.runtime.plan import build_plan

    result = compile_policy(policy, workspace=ctx["workspace"], home=ctx["home"], tmpdir=ctx["tmpdir"],
                            platform=ctx["platform"])
    artifact = compile_ir(result.ir, target)
    plan = build_plan(result.ir, artifact, target, Limits.from_ir(result.ir).to_json())
    if key is not None:
        plan = cache.store_plan(key, plan, result.sources)
    return plan, key


def run(args: argparse.Namespace) -> int:
    """Judge, confine, run, audit; see the module docstring for exit codes."""
    from stockade.diagnostics import StockadeError

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if args.shell is not None:
        if command:
            _err("give either `-c TEXT` or `-- CMD ARGS`, not both")
            return EXIT_USAGE
        command = ["/bin/sh", "-c", args.shell]
        text = args.shell
    else:
        if not command:
            _err("no command: use `stockade run -- CMD ARGS` or `stockade run -c 'shell text'`")
            return EXIT_USAGE
        import shlex

        text = shlex.join(command)
    if (args.diff or args.apply) and not args.preview:
        _err("`--diff` and `--apply` need `--preview`")
        return EXIT_USAGE
    if args.workspace and not os.path.isdir(args.workspace):
        _err(f"the workspace `{args.workspace}` is not a directory")
        return EXIT_USAGE
    ctx = _context(args)
    try:
        plan, key = load_plan(args.policy, ctx, use_cache=not args.no_cache)
    except StockadeError as error:
        return _fail(error, args.format, EXIT_USAGE)
    except OSError as exc:
        _err(f"cannot read the policy `{args.policy}`: {exc.strerror}")
        return EXIT_USAGE
    try:
        return _execute(plan, key, command, text, ctx, args)
    except StockadeError as error:
        return _fail(error, args.format, EXIT_ENVIRONMENT if any(d.code.startswith("R5") for d in error.diagnostics)
                     else EXIT_USAGE)


def _audit_base(plan: dict, text: str, ctx: dict[str, str]) -> dict[str, Any]:
    from stockade.runtime.audit import now_iso

    return {"time": now_iso(), "policy": plan.get("policy"), "policy_hash": plan.get("policy_hash"),
            "command": text, "workspace": ctx["workspace"], "pid": os.getpid()}


def _prefix(plan: dict, ctx: dict[str, str]) -> tuple[str, list[str]]:
    from stockade.runtime import sandbox

    tool = sandbox.require_sandbox("darwin" if ctx["platform"] == "darwin" else sys.platform)
    if tool.backend == "bwrap":
        if plan.get("backend") != "bwrap":
            raise _r5("R510", "the cached plan is not for bubblewrap")
        return "bwrap", sandbox.harden_bwrap_argv(plan["argv"], cwd=ctx["workspace"], bwrap=tool.path)
    return "seatbelt", sandbox.seatbelt_argv(plan.get("profile") or "", plan.get("params"), tool.path)


def _r5(code: str, message: str) -> Exception:
    from stockade.diagnostics import Diagnostic, StockadeError

    return StockadeError(Diagnostic(code, message))


def _execute(plan: dict, key: str | None, command: list[str], text: str, ctx: dict[str, str],
             args: argparse.Namespace) -> int:
    from stockade.runtime import audit, gate
    from stockade.runtime.cache import filter_environment
    from stockade.runtime.limits import Limits

    audit_path = args.audit or audit.default_audit_path()
    backend, prefix = _prefix(plan, ctx)  # fail closed before asking anything

    def load_ir() -> Any:
        from stockade.compiler.ir import PolicyIR

        return PolicyIR.from_json(plan["ir"])

    judgement = gate.judge(text, load_ir, ctx["workspace"], key)
    ask = gate.terminal_confirm if (args.format == "text" and gate.has_terminal()) else None
    if judgement.decision == "confirm" and not args.approve and ask is not None:
        _print_reasons(judgement, "needs confirmation")
    decision = gate.decide(judgement, args.approve, ask)
    record = _audit_base(plan, text, ctx)
    record.update({"event": "decision", "verdict": judgement.decision, "reasons": list(judgement.reasons),
                   "approved_by": decision.approved_by, "runs": decision.runs, "cached_verdict": judgement.cached})
    audit.append_record(audit_path, record)
    if not decision.runs:
        if args.format == "json":
            _dump({"verdict": judgement.decision, "reasons": list(judgement.reasons), "ran": False,
                   "detail": judgement.detail})
        else:
            why = "denied by the policy" if judgement.decision == "deny" else \
                "needs confirmation: rerun with `--approve` or on a terminal"
            _print_reasons(judgement, why)
        return EXIT_VIOLATION

    limits = Limits(**plan.get("limits", {}))
    env = filter_environment(plan.get("env_rules", []), os.environ)
    overlay = None
    stage = os.path.join(ctx["workspace"], ".stockade-apply")
    if os.path.lexists(stage):
        from stockade.runtime.apply import recover

        done = recover(ctx["workspace"])
        if done:
            _err(f"an interrupted apply in the workspace was {done}")
    if args.preview:
        from stockade.runtime.preview import Overlay
        from stockade.runtime.sandbox import cache_dir

        base = os.path.join(cache_dir(), "preview")
        os.makedirs(base, exist_ok=True)
        overlay = Overlay(ctx["workspace"], base_dir=base)
        try:
            overlay.probe()
        except BaseException:
            overlay.cleanup()
            raise
    captured: dict[str, bytearray] = {"out": bytearray(), "err": bytearray()}
    sinks: dict[str, Any] = {}
    if args.format == "json":
        sinks = {"stdout": captured["out"].extend, "stderr": captured["err"].extend}
    from stockade.runtime.execute import run_confined
    from stockade.runtime.plan import remove_placeholders

    try:
        result = run_confined(prefix, command, env, limits, cwd=ctx["workspace"],
                              pre_exec=overlay.pre_exec() if overlay else None, **sinks)
        remove_placeholders(plan.get("placeholders", ()))
        if result.setup_failed:
            raise _r5("R507", "the sandbox could not be set up; the command did not run: "
                              f"`{result.stderr_tail.decode('utf-8', 'replace').strip().splitlines()[-1]}`")
        preview_info = None
        if overlay is not None:
            preview_info = _preview(overlay, plan, args)
    finally:
        if overlay is not None:
            overlay.cleanup()
    record = _audit_base(plan, text, ctx)
    record.update({"event": "run", "verdict": judgement.decision, "backend": backend, "sandbox_argv": prefix,
                   "command_argv": command, "limits": limits.to_json(), **result.to_json()})
    if preview_info is not None:
        record["preview"] = preview_info
    audit.append_record(audit_path, record)
    for hit in result.limits_hit:
        if hit != "output" and args.format == "text":
            _err(f"limit `{hit}` was hit" + (f" ({_limit_value(limits, hit)})" if _limit_value(limits, hit) else ""))
    if args.format == "json":
        _dump({"verdict": judgement.decision, "reasons": list(judgement.reasons), "ran": True,
               **result.to_json(), "stdout": captured["out"].decode("utf-8", "replace"),
               "stderr": captured["err"].decode("utf-8", "replace"), "preview": preview_info})
    return result.exit_status


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
    _err(f"`{judgement.decision}`: {why}")
    for reason in judgement.reasons:
        print(f"  - {reason}", file=sys.stderr)


_MARK = {"added": "A", "modified": "M", "deleted": "D", "renamed": "R", "mode": "P", "type": "T", "unsupported": "?"}


def _preview(overlay: Any, plan: dict, args: argparse.Namespace) -> dict:
    from stockade.runtime.preview import unified_diff

    placeholders = set(plan.get("placeholders", ()))
    # bwrap's placeholders for protected paths appear as new empty dirs: not changes
    exclude = frozenset(c.path for c in overlay.changes()
                        if c.kind == "added" and c.entry == "dir"
                        and os.path.join(overlay.workspace, c.path) in placeholders
                        and not os.listdir(os.path.join(overlay.upper, c.path)))
    changes = [c for c in overlay.changes() if c.path not in exclude]
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.kind] = counts.get(change.kind, 0) + 1
    insertions = sum(c.added_lines for c in changes)
    deletions = sum(c.removed_lines for c in changes)
    text_mode = args.format == "text"
    out = sys.stderr if text_mode else None
    if text_mode:
        if not changes:
            print("stockade: preview: no changes", file=out)
        else:
            summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
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
            print(f" {files} file(s) changed, {insertions} insertion(s)(+), {deletions} deletion(s)(-)", file=out)
            if args.diff:
                for change in changes:
                    sys.stdout.write(unified_diff(overlay.workspace, overlay.upper, change))
                sys.stdout.flush()
    applied = False
    unsupported = [c.path for c in changes if c.kind == "unsupported"]
    if changes and len(unsupported) < len(changes):
        approve = args.apply
        if not approve and text_mode:
            from stockade.runtime import gate

            if gate.has_terminal():
                approve = gate.terminal_confirm("stockade: apply these changes to the workspace? type `yes`: ")
        if approve:
            from stockade.runtime.apply import apply_changes

            count = apply_changes(overlay.workspace, overlay.upper, exclude)
            applied = True
            if text_mode:
                print(f"stockade: applied {count} change(s) to the workspace", file=out)
        elif text_mode:
            print("stockade: not applied; the workspace is untouched (use `--apply` to apply)", file=out)
    if unsupported and text_mode:
        print("stockade: not applicable (devices, fifos, sockets): " + ", ".join(f"`{p}`" for p in unsupported),
              file=out)
    return {"changes": [c.to_json() for c in changes], "counts": counts, "insertions": insertions,
            "deletions": deletions, "applied": applied}
