"""Merge layers tighten-only.

Every rule of every layer goes into the IR, where *most specific path wins* and *strictest
command rule wins* resolve them.  A rule marked ``locked`` (or any rule of an ``enforced``
file) cannot be loosened by a higher layer; an attempt is an error showing both locations:

* filesystem — a higher rule on the locked path or below it that grants more access;
* network — ``default allow`` over a locked ``default deny``; an ``allow`` of a destination
  inside a locked ``deny``, or not allowed by the lower layers when their default is locked;
* environment — ``keep`` of a name a locked ``drop`` removes; ``set`` over a locked ``set``;
* limits — a larger value than a locked limit;
* commands — a less strict verdict for argv a locked rule matches;
* ``unknown-effects`` / ``unparsable`` — a less strict verdict than a locked one.

Singletons (network default, limits, verdict settings) take the highest layer's value.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from fnmatch import fnmatchcase

from stockade import catalogue as codes
from stockade.compiler.argv import compile_pattern, parse_argv, pattern_matches
from stockade.compiler.ir import (
    ACCESS_RANK,
    VERDICT_RANK,
    CommandRule,
    Context,
    EnvRule,
    FsRule,
    HostPattern,
    Layer,
    LimitRule,
    NetRule,
    Network,
    Origin,
    PolicyIR,
    SessionRule,
    VerdictSetting,
)
from stockade.compiler.lower import LayerRules
from stockade.compiler.query import glob_to_regex
from stockade.diagnostics import DiagnosticSink, Related, Span

_WILD = re.compile(r"[*?\[]")


def _span(origin: Origin | None) -> Span | None:
    return _origin_span(origin) if origin else None


def _origin_span(origin: Origin) -> Span:
    return Span(origin.file, origin.line, origin.column)


class _Merger:
    def __init__(self, sink: DiagnosticSink):
        self.sink = sink

    def loosens(self, what: str, higher: Origin | None, locked: Origin | None, help: str | None = None) -> None:
        related = (Related("the locked rule is here", _origin_span(locked)),) if locked else ()
        self.sink.error(codes.LOOSENS_LOCKED_RULE, f"{what} loosens a locked rule of a lower layer", _span(higher),
                        help or "a higher layer may only tighten a locked rule", related)

    # -- filesystem ----------------------------------------------------------------------

    @staticmethod
    def _literal_prefix(pattern: str) -> str:
        match = _WILD.search(pattern)
        return pattern if match is None else pattern[: match.start()].rsplit("/", 1)[0] or "/"

    def _fs_overlaps(self, higher: FsRule, locked: FsRule) -> bool:
        """Whether ``higher`` decides some path that ``locked`` covers (equal or below)."""
        if not locked.is_glob:
            if higher.is_glob:
                prefix = self._literal_prefix(higher.pattern)
                return _under(prefix, locked.pattern) or _under(locked.pattern, prefix)
            return _under(higher.pattern, locked.pattern)
        regex = glob_to_regex(locked.pattern)
        candidate = higher.pattern
        parts = candidate.split("/")
        return any(regex.match("/".join(parts[:i]) or "/") for i in range(1, len(parts) + 1))

    def check_filesystem(self, higher: Sequence[FsRule], locked: Sequence[FsRule]) -> None:
        # name the most specific locked rule that is loosened
        locked = sorted(locked, key=lambda guard: len(guard.pattern), reverse=True)
        for rule in higher:
            for guard in locked:
                if ACCESS_RANK[rule.access] > ACCESS_RANK[guard.access] and self._fs_overlaps(rule, guard):
                    self.loosens(f"`{rule.kind} {rule.source_text}`", rule.origin, guard.origin,
                                 f"`{guard.kind} {guard.source_text}` is locked")
                    break

    # -- network -------------------------------------------------------------------------

    @staticmethod
    def _host_within(inner: HostPattern, outer: HostPattern) -> bool:
        if outer.port is not None and inner.port != outer.port:
            return False
        if outer.kind == "any":
            return True
        if outer.kind == inner.kind and outer.value == inner.value:
            return True
        if outer.kind == "domain" and inner.kind in ("host", "domain"):
            return inner.value.endswith("." + outer.value)
        if outer.kind == "cidr" and inner.kind == "cidr":
            a, b = ipaddress.ip_network(inner.value), ipaddress.ip_network(outer.value)
            if isinstance(a, ipaddress.IPv4Network) and isinstance(b, ipaddress.IPv4Network):
                return a.subnet_of(b)
            if isinstance(a, ipaddress.IPv6Network) and isinstance(b, ipaddress.IPv6Network):
                return a.subnet_of(b)
            return False  # of different versions
        if outer.kind == "localhost" and inner.kind == "cidr":
            network = ipaddress.ip_network(inner.value)
            return network.is_loopback
        return False

    def check_network(self, layer: LayerRules, lower_network: Network) -> None:
        default = layer.network_default
        if default is not None and lower_network.default_locked and lower_network.default == "deny" \
                and default.verdict == "allow":
            self.loosens("`default allow`", default.origin, lower_network.default_origin)
        lower_ir = PolicyIR("lower", Context("/", "/", "/"), network=lower_network)
        for rule in layer.network:
            if rule.action != "allow":
                continue
            for guard in lower_network.rules:
                if guard.locked and guard.action == "deny" and (
                        self._host_within(rule.host, guard.host) or self._host_within(guard.host, rule.host)):
                    self.loosens(f"`allow {rule.host}`", rule.origin, guard.origin)
                    break
            else:
                if lower_network.default_locked and lower_network.default == "deny" and \
                        not self._allowed_below(lower_ir, rule.host):
                    self.loosens(f"`allow {rule.host}`", rule.origin, lower_network.default_origin,
                                 "the lower layer's `default deny` is locked: only destinations it allows may be allowed")

    @staticmethod
    def _allowed_below(lower_ir: PolicyIR, host: HostPattern) -> bool:
        if host.kind in ("host", "localhost", "host-loopback"):
            name = "host-loopback" if host.kind == "host-loopback" else host.value or "localhost"
            return lower_ir.network_access(name, host.port).allowed
        if host.kind == "cidr":
            network = ipaddress.ip_network(host.value)
            return network.num_addresses == 1 and lower_ir.network_access(str(network.network_address),
                                                                          host.port).allowed
        return False  # a wildcard or `*` reaches further than any finite allow-list

    # -- commands ------------------------------------------------------------------------

    def check_commands(self, higher: Sequence[CommandRule], locked: Sequence[CommandRule]) -> None:
        compiled = [(guard, compile_pattern(guard.pattern)) for guard in locked]
        for rule in higher:
            argv = [token.alternatives[0] if token.alternatives[0] != "**" else "" for token in rule.pattern]
            parsed = parse_argv([word for word in argv if word])
            for guard, pattern in compiled:
                if VERDICT_RANK[rule.verdict] < VERDICT_RANK[guard.verdict] and pattern_matches(pattern, parsed):
                    self.loosens(f"`{rule.verdict} {rule.text}`", rule.origin, guard.origin,
                                 f"`{guard.verdict} {guard.text}` is locked")
                    break


def _under(path: str, ancestor: str) -> bool:
    return path == ancestor or ancestor == "/" or path.startswith(ancestor.rstrip("/") + "/")


def _size_text(value: float) -> str:
    """A byte count as a policy would write it (``64MiB``; ``1500B`` when no unit divides it)."""
    number = int(value)
    for shift, unit in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if number >= 1 << shift and number % (1 << shift) == 0:
            return f"{number >> shift}{unit}"
    return f"{number}B"


def _warn_disk(disk: LimitRule, filesystem: Sequence[FsRule], context: Context, sink: DiagnosticSink) -> None:
    """Name every write rule outside the workspace: under a ``disk`` limit, what the sandbox
    writes there is kept in a private, size-limited layer and discarded after the run."""
    related = (Related("the `disk` limit is here", _origin_span(disk.origin)),) if disk.origin else ()
    for rule in filesystem:
        if rule.access != "write" or (not rule.is_glob and _under(rule.pattern, context.workspace)):
            continue
        if rule.pattern == "/" and not rule.is_glob:
            sink.warning(codes.DISK_LIMIT_DISCARDS_WRITES,
                         "the `disk` limit cannot be enforced while `/` is writable: `stockade run` "
                                 "refuses to run this policy", _span(rule.origin),
                         "grant write on the workspace and the paths that need it, not on `/`", related)
            continue
        sink.warning(codes.DISK_LIMIT_DISCARDS_WRITES,
                     f"under the `disk` limit, files written to `{rule.source_text or rule.pattern}` do not "
                             "persist: the sandbox writes them into a private layer of at most "
                             f"{_size_text(disk.value)} that is discarded after the run", _span(rule.origin),
                     "write what must persist into the workspace, or remove the `disk` limit", related)


#: How strict each choice of a session setting is (higher is stricter).
SESSION_CHOICE_RANK = {"on-limit": {"confirm": 0, "stop": 1}, "approvals": {"persist": 0, "session": 1, "never": 2}}


def _looser_session(new: SessionRule, current: SessionRule) -> bool:
    """Whether ``new`` would loosen ``current`` (same setting)."""
    if new.choice is not None and current.choice is not None:
        ranks = SESSION_CHOICE_RANK[new.name]
        return ranks[new.choice] < ranks[current.choice]
    if (new.count or 0) > (current.count or 0):
        return True
    return new.window is not None and current.window is not None and new.window < current.window


def _merge_session(settings: dict[str, SessionRule], rules: Sequence[SessionRule], merger: _Merger) -> None:
    """Session settings: singletons take the highest layer's value, a locked one cannot be
    loosened (a larger count, a shorter window, a looser choice); ``never-persist`` patterns
    add up."""
    for rule in rules:
        if rule.name == "never-persist":
            settings[f"never-persist {' '.join(str(t) for t in rule.pattern)}"] = rule
            continue
        key = rule.name if rule.window is None else f"{rule.name} within"
        current = settings.get(key)
        if current is not None and current.locked:
            if _looser_session(rule, current):
                merger.loosens(f"`{rule.text}`", rule.origin, current.origin)
                continue
            rule = SessionRule(rule.name, rule.count, rule.window, rule.choice, rule.pattern, True, rule.origin)
        settings[key] = rule


def merge_layers(layers: Sequence[LayerRules], context: Context, sink: DiagnosticSink,
                 source_hash: str = "") -> PolicyIR:
    """Merge lowered layers (lowest first) into one IR, rejecting loosened locked rules."""
    merger = _Merger(sink)
    filesystem: list[FsRule] = []
    network = Network()
    network_rules: list[NetRule] = []
    environment: list[EnvRule] = []
    limits: dict[str, LimitRule] = {}
    commands: list[CommandRule] = []
    session: dict[str, SessionRule] = {}
    unknown_effects = VerdictSetting("confirm", name="unknown-effects")
    unparsable = VerdictSetting("deny", name="unparsable")
    name = None
    for layer in layers:
        # filesystem
        merger.check_filesystem(layer.filesystem, [r for r in filesystem if r.locked])
        filesystem.extend(layer.filesystem)
        # network
        merger.check_network(layer, Network(network.default, tuple(network_rules), network.default_locked,
                                             network.default_origin))
        if layer.network_default is not None and not (
                network.default_locked and network.default == "deny" and layer.network_default.verdict == "allow"):
            network = Network("allow" if layer.network_default.verdict == "allow" else "deny",
                              (), layer.network_default.locked or network.default_locked,
                              layer.network_default.origin)
        network_rules.extend(layer.network)
        # environment
        locked_drops = [r for r in environment if r.locked and r.action == "drop"]
        locked_sets = {r.name: r for r in environment if r.locked and r.action == "set"}
        for rule in layer.environment:
            if rule.action == "keep":
                for guard in locked_drops:
                    if fnmatchcase(rule.name, guard.name) or rule.name == guard.name:
                        merger.loosens(f"`keep {rule.name}`", rule.origin, guard.origin)
                        break
            elif rule.action == "set" and rule.name in locked_sets and locked_sets[rule.name].value != rule.value:
                merger.loosens(f"`set {rule.name}`", rule.origin, locked_sets[rule.name].origin)
        environment = [r for r in environment
                       if not (r.action == "set" and any(n.action == "set" and n.name == r.name and not r.locked
                                                         for n in layer.environment))]
        environment.extend(layer.environment)
        # limits
        for limit in layer.limits:
            current_limit = limits.get(limit.name)
            if current_limit is not None and current_limit.locked:
                if limit.value > current_limit.value:
                    merger.loosens(f"`{limit.name}`", limit.origin, current_limit.origin)
                    continue
                limit = LimitRule(limit.name, limit.value, True, limit.origin)
            limits[limit.name] = limit
        # session settings
        _merge_session(session, layer.session, merger)
        # commands
        merger.check_commands(layer.commands, [r for r in commands if r.locked])
        commands.extend(layer.commands)
        # verdict settings
        for attribute in ("unknown_effects", "unparsable"):
            new = getattr(layer, attribute)
            if new is None:
                continue
            current = unknown_effects if attribute == "unknown_effects" else unparsable
            if current.locked and VERDICT_RANK[new.verdict] < VERDICT_RANK[current.verdict]:
                merger.loosens(f"`{attribute.replace('_', '-')} {new.verdict}`", new.origin, current.origin)
                continue
            if current.locked:
                new = VerdictSetting(new.verdict, True, new.origin, new.name)
            if attribute == "unknown_effects":
                unknown_effects = new
            else:
                unparsable = new
        name = layer.name or name
    if "disk" in limits:
        _warn_disk(limits["disk"], filesystem, context, sink)
    top = layers[-1] if layers else None
    policy_name = (top.name if top and top.name else None) or name or "policy"
    return PolicyIR(
        name=policy_name,
        context=context,
        layers=tuple(Layer(layer.index, layer.name or "", layer.file, layer.enforced) for layer in layers),
        filesystem=tuple(filesystem),
        network=Network(network.default, tuple(network_rules), network.default_locked, network.default_origin),
        environment=tuple(environment),
        limits=tuple(limits.values()),
        commands=tuple(commands),
        session=tuple(session.values()),
        unknown_effects=unknown_effects,
        unparsable=unparsable,
        tests=tuple(top.tests) if top else (),  # each file's own tests: the root's
        source_hash=source_hash,
    )
