"""``stockade test [POLICY | --policy FILE] [SUITE.yaml…]``: run a policy's tests and YAML suites.

Each failure names its location, the verdict it got and the rule that decided; the last
line counts them (``N passed, M failed``).  Exit 0 all passed, 1 any failed, 2 on errors.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from stockade.cli.common import (
    add_context_args,
    add_format_arg,
    add_policy_args,
    compile_from_args,
    dump_json,
    fail,
    policy_from_args,
    print_warnings,
    quiet,
)
from stockade.cli.main import EXIT_OK, EXIT_VIOLATION
from stockade.diagnostics import StockadeError

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.compiler.policy_tests import TestOutcome


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``test`` parser."""
    parser = sub.add_parser("test", help="run a policy's test blocks and YAML test suites",
                            description="Judge every test case against the policy and report failures.")
    parser.add_argument("operands", nargs="*", metavar="[POLICY] SUITE",
                        help="the policy file (unless `--policy` names it), then YAML suites: "
                             "`- command: …  expect: deny`")
    add_policy_args(parser, operand=False)
    parser.add_argument("--only-suites", action="store_true", help="skip the policy's own test blocks")
    add_context_args(parser)
    add_format_arg(parser)
    parser.set_defaults(handler=run)


def print_failures(failed: Sequence[TestOutcome]) -> None:
    """One located line per failed case, with the rule that decided."""
    for outcome in failed:
        case = outcome.case
        where = f"{case.origin}: " if case.origin else ""
        print(f"{where}test failed: `{case.command}` expected {case.expect}, got {outcome.got.decision}")
        if outcome.got.reason:
            print(f"  = because: {outcome.got.reason}")
        if outcome.got.rule:
            print(f"  = decided by: {outcome.got.rule}")


def run(args: argparse.Namespace) -> int:
    """Run the tests."""
    from stockade.cli.judging import best_judge
    from stockade.compiler.policy_tests import load_yaml_suite, run_tests

    operands = list(args.operands)
    try:
        if args.policy_option is None and operands and not operands[0].endswith((".yaml", ".yml")):
            policy = policy_from_args(args, operands.pop(0))
        else:
            policy = policy_from_args(args)
        compiled = compile_from_args(policy, args)
        cases = [] if args.only_suites else list(compiled.ir.tests)
        for suite in operands:
            cases.extend(load_yaml_suite(suite))
    except StockadeError as error:
        return fail(error, args.format)
    print_warnings(compiled.warnings, compiled.sources, args.format)
    outcomes = run_tests(compiled.ir, cases, judge=best_judge())
    failed = [o for o in outcomes if not o.passed]
    if args.format == "json":
        print(dump_json({"ok": not failed, "passed": len(outcomes) - len(failed), "failed": len(failed),
                         "tests": [o.to_json() for o in outcomes]}))
    else:
        print_failures(failed)
        if failed or not quiet():
            print(f"{len(outcomes) - len(failed)} passed, {len(failed)} failed")
    sys.stdout.flush()
    return EXIT_VIOLATION if failed else EXIT_OK
