"""``stockade show [POLICY] [--which]``: the effective policy, and which policy applies.

* ``stockade show [POLICY]`` prints the merged policy — every layer's rules, a view that
  need not compile as one file (a higher layer's rule may meet a lower one's) — in the policy
  language, each rule followed by its origin (``# file:line``, layer); a ``locked`` rule
  (or a rule of an ``enforced`` file) is written ``locked``.  Limits show the tightest value
  across the layers.  Paths are shown as written (``~/.ssh``, ``$WORKSPACE/…``).
* ``stockade show --which`` prints the policy a command in this directory would use and
  why: named on the command line, the project's (``.stockade/policy`` or
  ``stockade.policy`` from here upwards), the user's (``$XDG_CONFIG_HOME/stockade/policy``)
  or the built-in one.

``--format json`` prints ``{"policy", "origin", "why"}`` for ``--which``, else the IR with
the choice.  Exit 0, 2 when the policy does not compile.
"""

from __future__ import annotations

import argparse
import json
import re

from stockade.cli.common import (
    add_context_args,
    add_format_arg,
    add_policy_args,
    compile_from_args,
    display_path,
    dump_json,
    fail,
    named_policy,
    policy_choice,
    print_warnings,
    size_text,
)
from stockade.cli.main import EXIT_OK
from stockade.diagnostics import StockadeError

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.compiler.ir import LimitRule, Origin, PolicyIR

#: A word written without quotes in the policy language.
_BARE = re.compile(r"[A-Za-z0-9_./~$+:@%=,-]+")
#: Origin comments start in this column.
_COMMENT_COLUMN = 44


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``show`` parser."""
    parser = sub.add_parser("show", help="show the effective policy with each rule's origin, or which policy applies",
                            description="Print the merged effective policy in the policy language, each rule with "
                                        "its origin; with --which, which policy applies here and why.")
    add_policy_args(parser)
    parser.add_argument("--which", action="store_true", help="print which policy applies and why")
    add_context_args(parser)
    add_format_arg(parser)
    parser.set_defaults(handler=run)


def _word(text: str) -> str:
    if _BARE.fullmatch(text) and "*" not in text:
        return text
    return json.dumps(text, ensure_ascii=False)


def _where(origin: Origin | None, ir: PolicyIR) -> str:
    if origin is None:
        return ""
    layer = ir.layers[origin.layer].name if 0 <= origin.layer < len(ir.layers) else str(origin.layer)
    return f"{display_path(origin.file)}:{origin.line} ({layer})"


def _line(code: str, origin: Origin | None, ir: PolicyIR, locked: bool) -> str:
    text = f"    {'locked ' if locked else ''}{code}"
    where = _where(origin, ir)
    return f"{text:<{_COMMENT_COLUMN}} # {where}" if where else text


def _duration(seconds: float) -> str:
    number = int(seconds)
    if number != seconds:
        return f"{seconds:g}s"
    for size, unit in ((3600, "h"), (60, "m")):
        if number >= size and number % size == 0:
            return f"{number // size}{unit}"
    return f"{number}s"


def effective_text(ir: PolicyIR) -> str:
    """The merged policy in the language, one rule per line with its origin."""
    out = [f"# effective policy `{ir.name}`: {len(ir.layers)} layer(s), lowest first"]
    for layer in ir.layers:
        out.append(f"#   {layer.index}: {layer.name} ({display_path(layer.file)})"
                   + (", enforced" if layer.enforced else ""))
    out += [f"policy {json.dumps(ir.name)}", ""]
    if ir.filesystem:
        out.append("filesystem {")
        for rule in ir.filesystem:
            if " implied by " in rule.source_text:  # derived by the compiler (git metadata): not written
                out.append(f"    # {rule.kind} {rule.source_text}")
                continue
            out.append(_line(f"{rule.kind:<8} {_word(rule.source_text or rule.pattern)}", rule.origin, ir, rule.locked))
        out += ["}", ""]
    network = ir.network
    out.append("network {")
    out.append(_line(f"default {network.default}", network.default_origin, ir, network.default_locked))
    for net in network.rules:
        out.append(_line(f"{net.action:<7} {_word(str(net.host))}", net.origin, ir, net.locked))
    out += ["}", ""]
    if ir.environment:
        out.append("environment {")
        for env in ir.environment:
            value = env.name if env.action != "set" else f"{env.name}={env.value or ''}"
            out.append(_line(f"{env.action:<4} {_word(value)}", env.origin, ir, env.locked))
        out += ["}", ""]
    tightest: dict[str, LimitRule] = {}
    for limit in ir.limits:
        best = tightest.get(limit.name)
        if best is None or limit.value < best.value:
            tightest[limit.name] = limit
    if tightest:
        out.append("limits {")
        for limit in tightest.values():
            name, amount = limit.name, limit.value
            shown = _duration(amount) if name in ("timeout", "cpu") else str(int(amount)) if name == "processes" \
                else size_text(amount)
            out.append(_line(f"{name:<9} {shown}", limit.origin, ir, limit.locked))
        out += ["}", ""]
    out.append("commands {")
    for command in ir.commands:
        pattern = " ".join(str(token) for token in command.pattern)
        reason = f"  because {json.dumps(command.reason, ensure_ascii=False)}" if command.reason else ""
        out.append(_line(f"{command.verdict:<7} {pattern}{reason}", command.origin, ir, command.locked))
    for setting in (ir.unknown_effects, ir.unparsable):
        out.append(_line(f"{setting.name} {setting.verdict}", setting.origin, ir, setting.locked))
    out.append("}")
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace) -> int:
    """Print which policy applies, or the effective policy."""
    try:
        choice = policy_choice(named_policy(args.policy, args.policy_option))
        if args.which:
            if args.format == "json":
                print(dump_json(choice.to_json()))
            else:
                print(display_path(choice.path) if choice.path else "<builtin>/default.policy")
                print(f"  {choice.origin}: {choice.why}")
            return EXIT_OK
        compiled = compile_from_args(choice.path, args)
    except StockadeError as error:
        return fail(error, args.format)
    print_warnings(compiled.warnings, compiled.sources, args.format)
    if args.format == "json":
        print(dump_json({**choice.to_json(), "ir": compiled.ir.to_json()}))
    else:
        print(effective_text(compiled.ir), end="")
    return EXIT_OK
