"""``stockade check [POLICY…] [--policy FILE]``: compile each policy, show warnings, run its ``test`` blocks.

The policy is also compiled for this platform's sandbox backend (bwrap, Seatbelt or the
Windows plan; another with ``--platform``), so what `stockade run` would warn about or refuse
shows here too.

Exit 0 when every policy compiles and its tests pass, 1 when a test fails, 2 on errors.
"""

from __future__ import annotations

import argparse
import sys

from stockade import catalogue as codes
from stockade.cli.common import (
    add_context_args,
    add_format_arg,
    add_policy_args,
    compile_from_args,
    dump_json,
    policy_choice,
    print_warnings,
    quiet,
)
from stockade.cli.main import EXIT_OK, EXIT_USAGE, EXIT_VIOLATION
from stockade.diagnostics import Diagnostic, StockadeError

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.compiler.ir import PolicyIR

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.compiler.ir import PolicyIR
    from stockade.diagnostics import Diagnostic


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``check`` parser."""
    parser = sub.add_parser("check", help="check policies: syntax, layers, conflicts and their tests",
                            description="Compile each policy, report every problem, and run its test blocks.")
    add_policy_args(parser, many=True)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print the sandbox backend's warnings in full (default: one line counting them)")
    add_context_args(parser)
    add_format_arg(parser)
    parser.set_defaults(handler=run)


def _backend_diagnostics(ir: PolicyIR) -> tuple[list[Diagnostic], bool]:
    """What the platform's sandbox backend says about the policy (its warnings; its errors,
    which would refuse `stockade run`), and whether there are errors."""
    from stockade.backends.registry import build, platform_backend

    backend = platform_backend(ir.context.platform)
    if backend is None:
        return [], False
    try:
        artifact = build(ir, backend, by_runtime=True)  # what `stockade run` would say
    except StockadeError as error:
        if error.diagnostics and all(d.code == codes.BAD_WORKSPACE for d in error.diagnostics):
            note = Diagnostic(codes.BAD_WORKSPACE, f"the {backend} backend was not checked: the workspace "
                              f"`{ir.context.workspace}` does not exist", None,
                              "pass `--workspace DIR` to check the sandbox for that workspace", "note")
            return [note], False
        return list(error.diagnostics), any(d.severity == "error" for d in error.diagnostics)
    return list(artifact.warnings), False


def _backend_summary(ir: PolicyIR, problems: list[Diagnostic]) -> str:
    """One line for the backend's warnings: how many of each code, and how to see them."""
    from collections import Counter

    from stockade.backends.registry import platform_backend

    counts = Counter(d.code for d in problems)
    listed = ", ".join(f"{code} ×{n}" if n > 1 else code for code, n in sorted(counts.items()))
    return (f"stockade: note: the {platform_backend(ir.context.platform)} backend warns {len(problems)} "
            f"time{'s' if len(problems) != 1 else ''} ({listed}); `stockade check -v` shows them")


def broker_available() -> bool:
    """Whether `stockade run` starts its network broker on this machine: on Linux (inside the
    sandbox's own network namespace) and on macOS (on the host's loopback, the one port the
    Seatbelt profile admits); not on Windows, where host rules are warned about."""
    import importlib.util

    return sys.platform in ("linux", "darwin") and importlib.util.find_spec("stockade.runtime.broker") is not None


def network_warnings(ir: PolicyIR) -> list[Diagnostic]:
    """A warning (``B330``) for every network rule this platform cannot enforce, with its location."""
    from stockade.backends.netplan import unenforced_network_rules

    return unenforced_network_rules(ir, broker_available(), sys.platform)


def run(args: argparse.Namespace) -> int:
    """Check every policy named (or the built-in default)."""
    from stockade.cli.judging import best_judge
    from stockade.cli.render import diagnostics_json, print_diagnostics
    from stockade.compiler.policy_tests import run_tests

    judge = best_judge()
    status = EXIT_OK
    results = []
    named = list(args.policy) + ([args.policy_option] if args.policy_option else [])
    for path in named or [policy_choice(None).path]:
        name = path or "<builtin>/default.policy"
        try:
            compiled = compile_from_args(path, args)
        except StockadeError as error:
            status = EXIT_USAGE
            if args.format == "json":
                results.append({"policy": name, "ok": False, "diagnostics": diagnostics_json(error.diagnostics)})
            else:
                print_diagnostics(error.diagnostics, error.sources, sys.stderr)
            continue
        compiled.warnings.extend(network_warnings(compiled.ir))  # rules this platform cannot enforce: shown in full
        backend_problems, backend_errors = _backend_diagnostics(compiled.ir)
        if backend_errors:
            status = EXIT_USAGE
        warnings = [*compiled.warnings, *compiled.test_notes, *backend_problems]
        if args.format == "json" or getattr(args, "verbose", False) or backend_errors:
            print_warnings(warnings, compiled.sources, args.format)
        else:  # the backend's warnings in one line: they are about this machine as much as the policy
            print_warnings([*compiled.warnings, *compiled.test_notes], compiled.sources, args.format)
            if backend_problems and not quiet():
                print(_backend_summary(compiled.ir, backend_problems), file=sys.stderr)
        outcomes = run_tests(compiled.ir, judge=judge)
        failed = [o for o in outcomes if not o.passed]
        if failed and status == EXIT_OK:
            status = EXIT_VIOLATION
        ir = compiled.ir
        if args.format == "json":
            results.append({"policy": name, "ok": not failed, "name": ir.name, "layers": len(ir.layers),
                            "warnings": diagnostics_json(warnings),
                            "tests": [o.to_json() for o in outcomes]})
            continue
        from stockade.cli.cmd_test import print_failures

        print_failures(failed)
        rules = len(ir.filesystem) + len(ir.network.rules) + len(ir.environment) + len(ir.limits) + len(ir.commands)
        verdict = "ok" if not failed and not backend_errors else "FAILED"
        if not failed and not backend_errors and quiet():
            continue
        print(f"{verdict}: {name}: policy `{ir.name}`, {len(ir.layers)} layer(s), {rules} rules, "
              f"{len(outcomes) - len(failed)}/{len(outcomes)} tests passed")
    if args.format == "json":
        print(dump_json({"ok": status == EXIT_OK, "results": results}))
    return status
