"""Semantic differences between two compiled policies.

:func:`diff_policies` compares two IRs (compiled for the same workspace and home) on probe
sets taken from both: every filesystem rule's path, a path below it and a name its glob
matches; every network rule's destination and one no rule names; sample commands of every
command rule (:func:`stockade.compiler.lint.sample_commands`); the verdict settings, the
limits and the environment rules.  Each :class:`Change` has a concrete example, the rules
that decide it before and after, and whether the new policy is looser there.  Changes that
share both deciding rules and outcomes are reported once.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from stockade.compiler.ir import VERDICT_RANK, PolicyIR

_ACCESS_RANK = {"none": 0, "read": 1, "write": 2}
#: A command word and host name no rule is expected to name (the sample of a wildcard).
_SAMPLE_HOST = "example.org"


@dataclass(frozen=True)
class Change:
    """One difference: what (``path``, ``host``, ``command``, ``setting``), a concrete example,
    the old and new outcomes, the rules that decide them (``file:line: rule``), and whether
    the new policy is looser for it."""

    kind: str
    example: str
    old: str
    new: str
    looser: bool
    old_rule: str | None = None
    new_rule: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The change as a JSON object."""
        return {"kind": self.kind, "example": self.example, "old": self.old, "new": self.new, "looser": self.looser,
                "old_rule": self.old_rule, "new_rule": self.new_rule}


def _where(rule: Any, text: str) -> str | None:
    if rule is None:
        return None
    origin = getattr(rule, "origin", None)
    return f"{origin}: {text}" if origin is not None else text


def _fs_text(rule: Any) -> str:
    return f"{rule.kind} {rule.source_text or rule.pattern}"


def _path_probes(ir: PolicyIR) -> list[str]:
    out = []
    for rule in ir.filesystem:
        pattern = rule.pattern
        if rule.is_glob:
            if pattern.startswith("/**/"):
                pattern = ir.context.workspace.rstrip("/") + "/" + pattern[4:]
            pattern = pattern.replace("**", "x").replace("*", "x").replace("?", "x")
            pattern = pattern.split("[", 1)[0].rstrip("/") or "/"
        out.append(pattern)
        out.append(pattern.rstrip("/") + "/example")
    return out


def _host_probes(ir: PolicyIR) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for rule in ir.network.rules:
        host = rule.host
        if host.kind == "domain":
            name = f"www.{host.value}"
        elif host.kind == "cidr":
            name = str(ipaddress.ip_network(host.value, strict=False).network_address)
        elif host.kind == "any":
            name = _SAMPLE_HOST
        else:
            name = host.value
        out.append((name, host.port))
        if host.port is not None:
            out.append((name, None))
    out.append((_SAMPLE_HOST, 443))
    return out


def diff_policies(old: PolicyIR, new: PolicyIR) -> list[Change]:
    """Every semantic difference from ``old`` to ``new``, each with a concrete example."""
    from stockade.compiler.lint import sample_commands

    changes: list[Change] = []
    seen: set[tuple[Any, ...]] = set()

    def add(change: Change, key: tuple[Any, ...]) -> None:
        if key not in seen:
            seen.add(key)
            changes.append(change)

    home = new.context.home.rstrip("/")

    def shown(path: str) -> str:
        return "~" + path[len(home):] if home and (path + "/").startswith(home + "/") else path

    for path in dict.fromkeys(_path_probes(old) + _path_probes(new)):
        before, after = old.path_access(path), new.path_access(path)
        if before.access != after.access:
            old_rule = _where(before.rule, _fs_text(before.rule)) if before.rule else None
            new_rule = _where(after.rule, _fs_text(after.rule)) if after.rule else None
            add(Change("path", shown(path), f"{before.access} access", f"{after.access} access",
                       _ACCESS_RANK[after.access] > _ACCESS_RANK[before.access], old_rule, new_rule),
                ("path", old_rule, new_rule, before.access, after.access))
    for host, port in dict.fromkeys(_host_probes(old) + _host_probes(new)):
        before_net, after_net = old.network_access(host, port), new.network_access(host, port)
        if before_net.allowed != after_net.allowed:
            def net_rule(ir: PolicyIR, decision: Any) -> str:
                rule = decision.rule
                return _where(rule, f"{rule.action} {rule.host}") or "" if rule else f"default {ir.network.default}"
            old_rule, new_rule = net_rule(old, before_net), net_rule(new, after_net)
            example = f"{host}:{port}" if port is not None else host
            add(Change("host", example, "allowed" if before_net.allowed else "denied",
                       "allowed" if after_net.allowed else "denied", after_net.allowed, old_rule, new_rule),
                ("host", old_rule, new_rule))
    unknown = {"old": old.unknown_effects.verdict, "new": new.unknown_effects.verdict}
    for rule in [*old.commands, *new.commands]:
        for argv in sample_commands(rule):
            before_cmd, after_cmd = old.command_verdict(argv), new.command_verdict(argv)
            if before_cmd.verdict == after_cmd.verdict:
                continue
            old_text = before_cmd.verdict or "judged by its effects"
            new_text = after_cmd.verdict or "judged by its effects"
            # no rule: the effects decide, at most the policy's `unknown-effects` verdict
            old_rank = VERDICT_RANK[before_cmd.verdict or unknown["old"]]
            new_rank = VERDICT_RANK[after_cmd.verdict or unknown["new"]]
            looser = new_rank < old_rank or (after_cmd.verdict is None and before_cmd.verdict is not None)
            old_rule = (_where(before_cmd.rule, f"{before_cmd.rule.verdict} {before_cmd.rule.text}")
                        if before_cmd.rule else None)
            new_rule = (_where(after_cmd.rule, f"{after_cmd.rule.verdict} {after_cmd.rule.text}")
                        if after_cmd.rule else None)
            add(Change("command", " ".join(argv), old_text, new_text, looser, old_rule, new_rule),
                ("command", old_rule, new_rule))
    for name in ("unknown_effects", "unparsable"):
        before_setting, after_setting = getattr(old, name), getattr(new, name)
        if before_setting.verdict != after_setting.verdict:
            label = name.replace("_", "-")
            add(Change("setting", label, before_setting.verdict, after_setting.verdict,
                       VERDICT_RANK[after_setting.verdict] < VERDICT_RANK[before_setting.verdict],
                       _where(before_setting, f"{label} {before_setting.verdict}"),
                       _where(after_setting, f"{label} {after_setting.verdict}")), ("setting", name))
    for limit in sorted({r.name for r in old.limits} | {r.name for r in new.limits}):
        before_limit, after_limit = old.limit(limit), new.limit(limit)
        if before_limit != after_limit:
            looser = after_limit is None or (before_limit is not None and after_limit > before_limit)
            add(Change("limit", limit, _number(before_limit), _number(after_limit), looser), ("limit", limit))
    names = sorted({r.name.replace("*", "EXAMPLE").replace("?", "X") for r in [*old.environment, *new.environment]})
    probe = dict.fromkeys(names, "value")
    before_env, after_env = old.filter_environment(probe), new.filter_environment(probe)
    for name in sorted(set(before_env) | set(after_env)):
        if before_env.get(name) == after_env.get(name):
            continue
        looser = name in after_env and name not in before_env and after_env[name] == probe.get(name)
        add(Change("environment", name, _env_state(before_env, name, probe), _env_state(after_env, name, probe),
                   looser), ("environment", name))
    return changes


def _env_state(env: dict[str, str], name: str, probe: dict[str, str]) -> str:
    if name not in env:
        return "not passed"
    return "passed" if env[name] == probe.get(name) else f"set to `{env[name]}`"


def _number(value: float | None) -> str:
    if value is None:
        return "none"
    return str(int(value)) if float(value).is_integer() else str(value)
