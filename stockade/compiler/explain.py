"""Why a policy decides a path, a destination or a command as it does.

:func:`explain_path`, :func:`explain_host` and :func:`explain_command` return an
:class:`Explanation`: the decision, the rule that decided it (or the default that did), and
every other rule that also applies and why it lost — through all layers, each rule with its
origin and layer.  The decisions are the IR's own (:meth:`PolicyIR.path_access` and the
others); the rules that lost are found by asking the same question of each rule alone.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from stockade.compiler.ir import FS_KIND_RANK, VERDICT_RANK, CommandRule, FsRule, NetRule, Network, Origin, PolicyIR


@dataclass(frozen=True)
class RuleRef:
    """A rule as shown in an explanation: its text, where it is, and its layer's file."""

    text: str
    origin: Origin | None
    layer: str | None
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        """The rule as a JSON object."""
        origin = self.origin
        return {"rule": self.text, "file": origin.file if origin else None, "line": origin.line if origin else None,
                "column": origin.column if origin else None, "layer": self.layer, "why": self.why or None}


@dataclass(frozen=True)
class Explanation:
    """A decision, the rule that made it (None: a default did) and the rules it beat."""

    kind: str  # path, host or command
    subject: str
    decision: str
    decided_by: RuleRef | None
    default: str | None = None
    beaten: tuple[RuleRef, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The explanation as a JSON object."""
        return {"kind": self.kind, "subject": self.subject, "decision": self.decision,
                "decided_by": self.decided_by.to_json() if self.decided_by else None, "default": self.default,
                "beaten": [r.to_json() for r in self.beaten]}


def _layer(ir: PolicyIR, origin: Origin | None) -> str | None:
    if origin is None:
        return None
    for layer in ir.layers:
        if layer.index == origin.layer:
            return layer.name or posixpath.basename(layer.file)
    return None


def _fs_text(rule: FsRule) -> str:
    return f"{rule.kind} {rule.source_text or rule.pattern}"


def _depth(path: str) -> int:
    return len([part for part in path.split("/") if part])


def explain_path(ir: PolicyIR, path: str, cwd: str | None = None) -> Explanation:
    """Which filesystem rule decides ``path``, and every rule that also covers it."""
    decision = ir.path_access(path, cwd)
    target = decision.path
    parts = [part for part in target.split("/") if part]
    ancestors = ["/" + "/".join(parts[:i]) for i in range(len(parts), -1, -1)]  # deepest first
    covering: list[tuple[FsRule, int]] = []
    for rule in ir.filesystem:
        if replace(ir, filesystem=(rule,)).path_access(target).rule is None:
            continue  # the rule does not cover the path
        if rule.is_glob:
            from stockade.compiler.query import glob_to_regex

            matcher = glob_to_regex(rule.pattern)
            depth = max((_depth(a) for a in ancestors if matcher.match(a)), default=0)
        else:
            depth = _depth(rule.pattern)
        covering.append((rule, depth))
    winner = decision.rule
    win_depth = next((d for r, d in covering if r is winner or r == winner), 0)
    beaten = []
    for rule, depth in sorted(covering, key=lambda item: (-item[1], -FS_KIND_RANK[item[0].kind])):
        if rule is winner or rule == winner:
            continue
        why = ("less specific: it names a shorter path" if depth < win_depth else
               "as specific, and less strict" if FS_KIND_RANK[rule.kind] < FS_KIND_RANK[winner.kind] else
               "as specific and as strict: the first one decides") if winner is not None else ""
        beaten.append(RuleRef(_fs_text(rule), rule.origin, _layer(ir, rule.origin), why))
    decided = RuleRef(_fs_text(winner), winner.origin, _layer(ir, winner.origin)) if winner else None
    return Explanation("path", target, f"{decision.access} access" if decision.access != "none" else "no access",
                       decided, None if winner else "no rule covers the path: no access", tuple(beaten))


def explain_host(ir: PolicyIR, host: str, port: int | None = None) -> Explanation:
    """Which network rule (or the default) decides ``host``:``port``, and every rule that matches it."""
    decision = ir.network_access(host, port)
    winner = decision.rule
    beaten = []
    for rule in ir.network.rules:
        if rule is winner or rule == winner:
            continue
        alone = replace(ir, network=Network("deny" if rule.action == "allow" else "allow", (rule,)))
        if alone.network_access(host, port).rule is None:
            continue
        why = ("less specific" if rule.action == decision_action(winner) or winner is None else
               "less specific, or as specific and `deny` wins ties")
        beaten.append(RuleRef(_net_text(rule), rule.origin, _layer(ir, rule.origin), why))
    subject = f"{host}:{port}" if port is not None else host
    default = None if winner else f"no rule matches: `default {ir.network.default}` decides"
    decided = RuleRef(_net_text(winner), winner.origin, _layer(ir, winner.origin)) if winner else None
    return Explanation("host", subject, "allowed" if decision.allowed else "denied", decided, default, tuple(beaten))


def decision_action(rule: NetRule | None) -> str | None:
    """The action of a network rule (None for no rule)."""
    return rule.action if rule is not None else None


def _net_text(rule: NetRule) -> str:
    return f"{rule.action} {rule.host}"


def _cmd_text(rule: CommandRule) -> str:
    return f"{rule.verdict} {rule.text}"


def explain_command(ir: PolicyIR, argv: Sequence[str]) -> Explanation:
    """Which command rule decides ``argv`` (the strictest that matches), and every other match.

    Without a matching rule the command is judged by its effects (`stockade analyze`); the
    explanation says so."""
    decision = ir.command_verdict(list(argv))
    winner = decision.rule
    beaten = []
    for rule in decision.matches:
        if rule is winner or rule == winner:
            continue
        assert winner is not None
        why = ("less strict" if VERDICT_RANK[rule.verdict] < VERDICT_RANK[winner.verdict] else
               "as strict: the first one decides")
        beaten.append(RuleRef(_cmd_text(rule), rule.origin, _layer(ir, rule.origin), why))
    subject = " ".join(argv)
    if winner is None:
        return Explanation("command", subject, "no command rule", None,
                           "no command rule matches: the command is judged by its effects "
                           "(`stockade analyze` shows them)")
    return Explanation("command", subject, winner.verdict,
                       RuleRef(_cmd_text(winner), winner.origin, _layer(ir, winner.origin)), None, tuple(beaten))
