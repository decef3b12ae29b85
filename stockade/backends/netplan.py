"""How a policy's network block is enforced, the same way on every target.

A policy that allows nothing beyond the sandbox's loopback needs no help: each backend
blocks the network (bwrap's network namespace, Seatbelt's ``(deny default)``, the Windows
firewall) and opens loopback as the ``localhost`` rules say.  Every other policy — one host
rule, a CIDR, ``default allow`` with or without denies — is enforced by the **network
broker**: a host-side proxy started for the run that decides each connection with
:meth:`~stockade.compiler.ir.PolicyIR.network_access`, and the only destination the sandbox
can reach beyond loopback.  (Even ``default allow`` goes through it: private, link-local
and metadata addresses, and the host's own loopback, need a rule naming them.)

This module is pure data and decisions over the IR, shared by the backends, the exporters
and the CLI:

* :func:`allows_everything` — the one case the network is shared as it is (no deny, and
  rules naming every private range besides ``default allow``);
* :func:`needs_broker` — whether a policy is enforced through the broker;
* :func:`proxy_environment` — the variables that point clients at the broker (the standard
  spellings and the ones pip, npm, yarn, git, cargo and Go read);
* :func:`unenforced_network_rules` — a warning, naming the rule, for every network rule a
  platform cannot enforce (no broker there): such a rule is enforced stricter (blocked),
  never dropped silently.
"""

from __future__ import annotations

from stockade import catalogue as codes
from stockade.compiler.ir import NetRule, Origin, PolicyIR
from stockade.diagnostics import Diagnostic

#: The ``sandbox-exec`` parameter (``-DBROKER_PORT=…``) and plan placeholder holding the
#: loopback TCP port the broker listens on for this run (known only when the run starts).
BROKER_PORT_PARAM = "BROKER_PORT"
#: The port a compiled artifact holds until the run sets the broker's: ``0``, which no
#: connection reaches (an artifact run without the broker fails closed).
BROKER_PORT_UNSET = "0"
#: The placeholder for the broker's port in the proxy variables of a compiled artifact.
BROKER_PORT_PLACEHOLDER = "${BROKER_PORT}"
#: Where the broker listens for a sandbox that shares the host's loopback (macOS, Windows).
BROKER_HOST = "127.0.0.1"
#: Destinations clients reach directly, never through the broker (the sandbox's loopback).
NO_PROXY = "localhost,127.0.0.1,::1"

#: Host kinds decided on the loopback without the broker (``host-loopback`` needs the broker
#: where the sandbox has its own network namespace; on macOS and Windows it is the loopback).
LOOPBACK_KINDS = frozenset({"localhost"})


def reaches_beyond_loopback(rule: NetRule, host_loopback_direct: bool = False) -> bool:
    """Whether an ``allow`` rule grants a destination outside the sandbox's loopback."""
    kind: str = rule.host.kind
    if kind in LOOPBACK_KINDS:
        return False
    return not (host_loopback_direct and kind == "host-loopback")


#: Destinations that ``default allow`` alone does not reach: a policy reaches them all only
#: with rules naming their ranges (then the network can be shared as it is).
SPECIAL_PROBES: tuple[str, ...] = ("10.0.0.1", "172.16.0.1", "192.168.0.1", "100.64.0.1", "169.254.169.254",
                                   "fd00::1", "fe80::1", "198.18.0.1")


def allows_everything(ir: PolicyIR) -> bool:
    """Whether the policy allows every destination — no deny rule, ``default allow`` (or
    ``allow *``), and rules naming the private, link-local and reserved ranges — so the
    sandbox may share the network as it is, with no broker."""
    net = ir.network
    if any(r.action == "deny" for r in net.rules):
        return False
    if net.default != "allow" and not any(r.host.kind == "any" and r.host.port is None for r in net.rules):
        return False
    return all(ir.network_access(address, None).allowed for address in SPECIAL_PROBES)


def needs_broker(ir: PolicyIR, host_loopback_direct: bool = False) -> bool:
    """Whether the policy allows some destination beyond the sandbox's loopback, short of
    everything, so that it is enforced through the broker (``host_loopback_direct``: the
    sandbox shares the host's loopback, so ``allow host-loopback:PORT`` is a loopback rule
    there)."""
    if allows_everything(ir):
        return False
    if ir.network.default == "allow":
        return True
    return any(r.action == "allow" and reaches_beyond_loopback(r, host_loopback_direct) for r in ir.network.rules)


def proxy_environment(port: int | str, host: str = BROKER_HOST) -> dict[str, str]:
    """The variables that send clients through the broker at ``host``:``port``.

    HTTP(S) clients get the HTTP proxy (absolute-form requests and ``CONNECT``), the rest
    SOCKS5 with remote name resolution (``socks5h``: names are resolved by the broker, on the
    host).  Spellings: the standard upper- and lower-case variables (curl, wget, Python,
    Go, git, cargo read them), npm/yarn/pip's own, cargo's ``CARGO_HTTP_PROXY``.
    """
    http = f"http://{host}:{port}"
    socks = f"socks5h://{host}:{port}"
    env = {
        "HTTP_PROXY": http, "HTTPS_PROXY": http, "ALL_PROXY": socks, "NO_PROXY": NO_PROXY,
        "npm_config_proxy": http, "npm_config_https_proxy": http, "npm_config_noproxy": NO_PROXY,
        "YARN_HTTP_PROXY": http, "YARN_HTTPS_PROXY": http, "PIP_PROXY": http, "CARGO_HTTP_PROXY": http,
    }
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        env[name.lower()] = env[name]
    return env


def brokered_rules(ir: PolicyIR, host_loopback_direct: bool = False) -> list[tuple[str, Origin | None]]:
    """``(rule text, origin)`` of every network rule only the broker enforces — ``default
    allow`` and each ``allow`` beyond loopback — for the warning of an artifact used without
    ``stockade run`` (which reaches loopback only).  Empty when the policy needs no broker."""
    if not needs_broker(ir, host_loopback_direct):
        return []
    out: list[tuple[str, Origin | None]] = []
    if ir.network.default == "allow":
        out.append(("default allow", ir.network.default_origin))
    out += [(f"allow {r.host}", r.origin) for r in ir.network.rules
            if r.action == "allow" and reaches_beyond_loopback(r, host_loopback_direct)]
    return out


def unenforced_network_rules(ir: PolicyIR, broker_available: bool, platform: str,
                             host_loopback_direct: bool = False) -> list[Diagnostic]:
    """A warning (``B330``), with the rule's location, for every network rule ``platform``
    cannot enforce because no broker runs there: each is enforced stricter (blocked).

    Empty when the policy needs no broker, or when the broker is available."""
    if broker_available or not needs_broker(ir, host_loopback_direct):
        return []
    from stockade.backends.base import origin_span

    where = f"on {platform}" if platform else "here"
    help_text = ("`stockade run` enforces host rules through its network broker; until it runs on this platform "
                 "the sandbox reaches loopback only")
    out: list[Diagnostic] = []
    if ir.network.default == "allow":
        out.append(Diagnostic(codes.NETWORK_NOT_ENFORCED,
                              f"`default allow` cannot be enforced {where}: no network broker, so only "
                              "loopback is reachable (stricter than the policy)",
                              origin_span(ir.network.default_origin), help_text, "warning"))
    for rule in ir.network.rules:
        if rule.action == "allow" and reaches_beyond_loopback(rule, host_loopback_direct):
            out.append(Diagnostic(codes.NETWORK_NOT_ENFORCED,
                                  f"`allow {rule.host}` cannot be enforced {where}: no network broker, so it is "
                                  "blocked (stricter than the policy)", origin_span(rule.origin), help_text,
                                  "warning"))
    return out


__all__ = ["BROKER_HOST", "BROKER_PORT_PARAM", "BROKER_PORT_PLACEHOLDER", "BROKER_PORT_UNSET", "NO_PROXY", "allows_everything", "brokered_rules", "needs_broker",
           "proxy_environment", "reaches_beyond_loopback", "unenforced_network_rules"]
