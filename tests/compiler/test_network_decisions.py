"""The network decision semantics of the IR (``ir.network_access``), as the language defines them.

Exact host, ``*.domain`` (subdomains only, the apex is separate), ``host:port``, IPv4/IPv6 and
CIDR, IP literals in every spelling a resolver accepts, ``localhost`` (127.0.0.0/8, ::1 and
the name), the host's loopback (``host-loopback``), private ranges, the default; the most
specific rule wins, a port-specific rule beats a port-less one, ties deny.  One line per
case; hypothesis checks the host parser and the address decisions against a brute-force
reference.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.compiler.ir import Context, HostPattern, NetRule, Network, Origin, PolicyIR
from stockade.compiler.query import HOST_LOOPBACK_NAME, ip_literal, is_special_address
from stockade.policy_lang import values
from tests.compiler.helpers import compile_text

CTX = Context("/work/ws", "/home/dev", "/tmp", "linux")


def ir_of(default: str, *rules: str) -> PolicyIR:
    """An IR from ``allow HOST`` / ``deny HOST`` words, parsed by the language's host parser."""
    out = []
    for line, text in enumerate(rules, 1):
        action, word = text.split()
        kind, value, port = values.parse_host(word)
        out.append(NetRule(action, HostPattern(kind, value, port), origin=Origin("t.policy", line, 5)))  # type: ignore[arg-type]
    return PolicyIR("t", CTX, network=Network(default, tuple(out)))  # type: ignore[arg-type]


def host_loopback(port: int, action: str = "allow") -> NetRule:
    """A ``host-loopback:PORT`` rule as the IR holds it once the language form exists."""
    return NetRule(action, HostPattern("host-loopback", "", port), origin=Origin("t.policy", 9, 5))  # type: ignore[arg-type]


# (default, rules, host, port, allowed, deciding rule or None for the default)
CASES = [
    # exact host, case and trailing dot, lookalikes
    ("deny", ("allow github.com",), "github.com", 443, True, "github.com"),
    ("deny", ("allow github.com",), "GitHub.COM.", 443, True, "github.com"),
    ("deny", ("allow github.com",), "github.com.evil.test", 443, False, None),
    ("deny", ("allow github.com",), "evilgithub.com", 443, False, None),
    ("deny", ("allow github.com",), "api.github.com", 443, False, None),
    # *.domain: subdomains only, the apex is separate, deeper wildcards are more specific
    ("deny", ("allow *.npmjs.org",), "registry.npmjs.org", 443, True, "*.npmjs.org"),
    ("deny", ("allow *.npmjs.org",), "a.b.npmjs.org", 443, True, "*.npmjs.org"),
    ("deny", ("allow *.npmjs.org",), "npmjs.org", 443, False, None),
    ("deny", ("allow *.npmjs.org",), "npmjs.org.evil.test", 443, False, None),
    ("deny", ("allow *.example.com", "deny *.corp.example.com"), "x.corp.example.com", 443, False,
     "*.corp.example.com"),
    ("deny", ("deny *.example.com", "allow *.corp.example.com"), "x.corp.example.com", 443, True,
     "*.corp.example.com"),
    ("deny", ("allow *.example.com", "deny bad.example.com"), "bad.example.com", 443, False, "bad.example.com"),
    ("deny", ("deny *.example.com", "allow good.example.com"), "good.example.com", 443, True, "good.example.com"),
    # ports: a port-specific rule matches its port only and beats a port-less rule
    ("deny", ("allow github.com:443",), "github.com", 443, True, "github.com:443"),
    ("deny", ("allow github.com:443",), "github.com", 22, False, None),
    ("deny", ("allow github.com:443",), "github.com", None, False, None),
    ("deny", ("allow github.com", "deny github.com:22"), "github.com", 22, False, "github.com:22"),
    ("deny", ("allow github.com", "deny github.com:22"), "github.com", 443, True, "github.com"),
    ("deny", ("allow github.com", "deny github.com:22"), "github.com", None, False, "github.com:22"),
    ("deny", ("deny github.com", "allow github.com:443"), "github.com", 443, True, "github.com:443"),
    ("allow", ("deny *:25",), "mail.example.com", 25, False, "*:25"),
    # ties deny
    ("deny", ("allow 10.0.0.0/8", "deny 10.0.0.0/8:80"), "10.1.1.1", 80, False, "10.0.0.0/8:80"),
    ("deny", ("allow localhost", "deny 127.0.0.0/8"), "127.0.0.1", 80, False, "127.0.0.0/8"),
    ("deny", ("allow localhost", "deny ::1"), "::1", 80, False, "::1/128"),
    # CIDRs: the longest prefix wins; IPv4 and IPv6 apart
    ("deny", ("allow 10.1.0.0/16", "deny 10.1.2.0/24"), "10.1.2.9", 80, False, "10.1.2.0/24"),
    ("deny", ("allow 10.1.0.0/16", "deny 10.1.2.0/24"), "10.1.3.9", 80, True, "10.1.0.0/16"),
    ("deny", ("deny 10.0.0.0/8", "allow 10.9.9.9"), "10.9.9.9", 80, True, "10.9.9.9/32"),
    ("deny", ("allow fd00::/8",), "fd12::1", 80, True, "fd00::/8"),
    ("deny", ("allow fd00::/8",), "[fd12::1]", 80, True, "fd00::/8"),
    ("deny", ("allow 0.0.0.0/0",), "fd12::1", 80, False, None),
    # IP literals are judged as addresses, in every spelling a resolver accepts
    ("allow", ("deny 169.254.169.254",), "169.254.169.254", 80, False, "169.254.169.254/32"),
    ("allow", ("deny 169.254.169.254",), "0xa9.0xfe.0xa9.0xfe", 80, False, "169.254.169.254/32"),
    ("allow", ("deny 169.254.169.254",), "2852039166", 80, False, "169.254.169.254/32"),
    ("allow", ("deny 169.254.169.254",), "0251.0376.0251.0376", 80, False, "169.254.169.254/32"),
    ("allow", ("deny 169.254.169.254",), "::ffff:169.254.169.254", 80, False, "169.254.169.254/32"),
    ("allow", ("deny 169.254.169.254",), "[::ffff:a9fe:a9fe]", 80, False, "169.254.169.254/32"),
    ("allow", ("deny 8.8.8.8",), "8.8.8.8", 53, False, "8.8.8.8/32"),
    ("allow", ("deny 8.8.8.8",), "8.8.2056", 53, False, "8.8.8.8/32"),
    ("allow", ("deny 8.8.8.8",), "134744072", 53, False, "8.8.8.8/32"),
    ("allow", ("deny 8.8.8.8",), "8.8.8.9", 53, True, None),
    # localhost: the name, 127.0.0.0/8, ::1 and the unspecified address (which reaches it)
    ("deny", ("allow localhost",), "localhost", 8080, True, "localhost"),
    ("deny", ("allow localhost",), "LOCALHOST.", 8080, True, "localhost"),
    ("deny", ("allow localhost",), "app.localhost", 8080, True, "localhost"),
    ("deny", ("allow localhost",), "127.0.0.1", 8080, True, "localhost"),
    ("deny", ("allow localhost",), "127.8.9.10", 8080, True, "localhost"),
    ("deny", ("allow localhost",), "127.1", 8080, True, "localhost"),
    ("deny", ("allow localhost",), "2130706433", 8080, True, "localhost"),
    ("deny", ("allow localhost",), "::1", 8080, True, "localhost"),
    ("deny", ("allow localhost",), "[::1]", 8080, True, "localhost"),
    ("deny", ("allow localhost",), "::ffff:127.0.0.1", 8080, True, "localhost"),
    ("deny", ("allow localhost",), "0.0.0.0", 8080, True, "localhost"),
    ("deny", ("allow localhost",), "::", 8080, True, "localhost"),
    ("deny", ("allow localhost:8080",), "127.0.0.1", 5432, False, None),
    ("allow", ("deny localhost",), "0.0.0.0", 80, False, "localhost"),
    ("allow", ("deny localhost",), "0x7f.1", 80, False, "localhost"),
    ("allow", ("deny localhost",), "localhost", 80, False, "localhost"),
    ("allow", ("deny localhost", "allow localhost:3000"), "127.0.0.1", 3000, True, "localhost:3000"),
    ("allow", (), "127.0.0.1", 80, True, None),
    # private, link-local (metadata), shared and reserved addresses need a rule naming them
    ("allow", (), "10.0.0.1", 80, False, None),
    ("allow", (), "192.168.1.1", 80, False, None),
    ("allow", (), "172.16.0.1", 80, False, None),
    ("allow", (), "100.64.0.1", 80, False, None),
    ("allow", (), "169.254.169.254", 80, False, None),
    ("allow", (), "fe80::1%eth0", 80, False, None),
    ("allow", (), "fd00::1", 80, False, None),
    ("allow", (), "::ffff:10.0.0.1", 80, False, None),
    ("deny", ("allow *",), "10.0.0.1", 80, False, None),
    ("deny", ("allow *",), "93.184.216.34", 80, True, "*"),
    ("deny", ("allow *",), "example.com", 80, True, "*"),
    ("allow", ("allow 10.0.0.0/8",), "10.0.0.1", 80, True, "10.0.0.0/8"),
    ("allow", ("allow 192.168.1.5",), "192.168.1.5", 80, True, "192.168.1.5/32"),
    ("allow", (), "93.184.216.34", 443, True, None),
    # default
    ("deny", (), "example.com", 443, False, None),
    ("allow", (), "example.com", 443, True, None),
    ("allow", ("deny evil.example",), "example.com", 443, True, None),
    ("allow", ("deny evil.example",), "evil.example", 443, False, "evil.example"),
    # names that look like numbers but are not addresses stay names
    ("deny", ("allow 256.1.1.1.example",), "256.1.1.1.example", 80, True, "256.1.1.1.example"),
]


@pytest.mark.parametrize("default, rules, host, port, allowed, rule", CASES,
                         ids=[f"{c[0]}-{'+'.join(c[1]) or 'none'}-{c[2]}:{c[3]}" for c in CASES])
def test_decision(default: str, rules: tuple[str, ...], host: str, port: int | None, allowed: bool,
                  rule: str | None) -> None:
    decision = ir_of(default, *rules).network_access(host, port)
    assert (decision.allowed, str(decision.rule.host) if decision.rule else None) == (allowed, rule)


# the host's loopback: only `allow host-loopback:PORT` reaches it, never the default or `*`
HOST_LOOPBACK_CASES = [
    ("deny", (host_loopback(5432),), 5432, True),
    ("deny", (host_loopback(5432),), 5433, False),
    ("deny", (host_loopback(5432),), None, False),
    ("allow", (), 5432, False),
    ("allow", (NetRule("allow", HostPattern("any")),), 5432, False),
    ("deny", (NetRule("allow", HostPattern("any", port=5432)),), 5432, False),
    ("deny", (NetRule("allow", HostPattern("localhost")),), 5432, False),
    ("deny", (host_loopback(5432), host_loopback(5432, "deny")), 5432, False),
]


@pytest.mark.parametrize("default, rules, port, allowed", HOST_LOOPBACK_CASES)
def test_host_loopback(default: str, rules: tuple[NetRule, ...], port: int | None, allowed: bool) -> None:
    ir = PolicyIR("t", CTX, network=Network(default, rules))  # type: ignore[arg-type]
    assert ir.network_access(HOST_LOOPBACK_NAME, port).allowed is allowed


def test_host_loopback_rules_are_no_wildcard() -> None:
    """A host-loopback rule decides the host's loopback only: never another host on its port."""
    ir = PolicyIR("t", CTX, network=Network("deny", (host_loopback(5432),)))
    for host in ("example.com", "127.0.0.1", "localhost", "10.0.0.1"):
        assert not ir.network_access(host, 5432).allowed, host


def test_compiled_policy_decides_like_the_table(tmp_path: Path) -> None:
    policy = "network {\n    default allow\n    deny 169.254.169.254 *.evil.example\n    allow localhost\n}\n"
    ir = compile_text(policy, tmp_path).ir
    assert not ir.network_access("0xa9fea9fe", 80).allowed
    assert not ir.network_access("x.evil.example", 443).allowed
    assert ir.network_access("evil.example", 443).allowed
    assert ir.network_access("127.0.0.1", 5432).allowed
    decision = ir.network_access("10.0.0.1", 80)
    assert not decision.allowed and decision.rule is None and "private" in decision.reason


# -- properties ------------------------------------------------------------------------

labels = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8).filter(
    lambda s: not s.isdigit())
names = st.lists(labels, min_size=2, max_size=4).map(".".join)
ports = st.one_of(st.none(), st.integers(1, 65535))
v4 = st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address)
v6 = st.integers(0, 2**128 - 1).map(ipaddress.IPv6Address)


@st.composite
def host_words(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["name", "domain", "v4", "v6", "cidr4", "cidr6", "localhost", "any"]))
    port = draw(ports)
    if kind == "name":
        text = draw(names)
    elif kind == "domain":
        text = "*." + draw(names)
    elif kind == "v4":
        text = str(draw(v4))
    elif kind == "v6":
        text = str(draw(v6))
    elif kind == "cidr4":
        text = str(ipaddress.ip_network(f"{draw(v4)}/{draw(st.integers(0, 32))}", strict=False))
    elif kind == "cidr6":
        text = str(ipaddress.ip_network(f"{draw(v6)}/{draw(st.integers(0, 128))}", strict=False))
    else:
        text = kind if kind == "localhost" else "*"
    if port is None:
        return text
    return f"[{text}]:{port}" if ":" in text else f"{text}:{port}"


@settings(max_examples=300, deadline=None)
@given(host_words())
def test_host_parser_round_trips(word: str) -> None:
    """Parsing a host word and printing the pattern gives a word that parses the same."""
    parsed = values.parse_host(word)
    assert values.parse_host(str(HostPattern(*parsed))) == parsed  # type: ignore[arg-type]


def _spellings(address: ipaddress.IPv4Address) -> list[str]:
    n = int(address)
    a, b, c, d = address.packed
    return [str(address), str(n), hex(n), f"{a}.{(b << 16) | (c << 8) | d}", f"{a}.{b}.{(c << 8) | d}",
            ".".join(f"0{x:o}" if x else "0" for x in (a, b, c, d)), ".".join(hex(x) for x in (a, b, c, d)),
            f"::ffff:{address}", f"[::ffff:{address}]"]


@settings(max_examples=300, deadline=None)
@given(v4)
def test_every_spelling_of_an_address_is_that_address(address: ipaddress.IPv4Address) -> None:
    for text in _spellings(address):
        assert ip_literal(text) == address, text


def _reference(ir: PolicyIR, address: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int) -> bool:
    """Brute force: the longest matching prefix among the CIDR rules, ties deny; else the
    default, except for special addresses (loopback is left out of the generated ones)."""
    best: tuple[int, int] | None = None
    verdicts: dict[tuple[int, int], set[str]] = {}
    for rule in ir.network.rules:
        network = ipaddress.ip_network(rule.host.value)
        if address.version != network.version or address not in network:
            continue
        if rule.host.port is not None and rule.host.port != port:
            continue
        key = (network.prefixlen, 1 if rule.host.port is not None else 0)
        verdicts.setdefault(key, set()).add(rule.action)
        best = key if best is None or key > best else best
    if best is not None:
        return verdicts[best] == {"allow"}
    return ir.network.default == "allow" and not is_special_address(address)


cidr_rules = st.builds(
    lambda action, address, prefix, port: f"{action} "
    + (f"{ipaddress.ip_network(f'{address}/{prefix}', strict=False)}" + (f":{port}" if port else "")),
    st.sampled_from(["allow", "deny"]), st.sampled_from(["10.1.2.3", "10.200.0.1", "93.184.216.34", "8.8.8.8"]),
    st.sampled_from([8, 16, 24, 31, 32]), st.sampled_from([None, 80, 443]))
probe = st.sampled_from(["10.1.2.3", "10.1.2.4", "10.1.9.9", "10.200.0.1", "93.184.216.34", "93.184.0.1",
                         "8.8.8.8", "8.8.4.4", "1.1.1.1"]).map(ipaddress.IPv4Address)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["allow", "deny"]), st.lists(cidr_rules, max_size=6, unique=True), probe,
       st.sampled_from([80, 443]))
def test_address_decisions_match_a_brute_force_reference(default: str, rules: list[str],
                                                          address: ipaddress.IPv4Address, port: int) -> None:
    seen: set[tuple[str, int | None]] = set()
    unique = []
    for text in rules:  # the language refuses the same destination twice
        _kind, value, rule_port = values.parse_host(text.split()[1])
        if (value, rule_port) not in seen:
            seen.add((value, rule_port))
            unique.append(text)
    ir = ir_of(default, *unique)
    for spelling in _spellings(address):
        assert ir.network_access(spelling, port).allowed is _reference(ir, address, port), spelling


@pytest.mark.parametrize(("address", "special"), [
    ("10.0.0.1", True), ("169.254.169.254", True), ("100.100.100.200", True), ("93.184.216.34", False),
    ("127.0.0.1", False), ("::1", False), ("::", False),  # the `localhost` rules decide these
    ("::ffff:10.0.0.1", True), ("::ffff:169.254.169.254", True), ("::ffff:127.0.0.1", True),
    ("2002:a00:1::", True), ("64:ff9b::a00:1", True), ("64:ff9b::7f00:1", True), ("fd00:ec2::254", True),
    ("2606:4700::1111", False), ("::ffff:93.184.216.34", False),
])
def test_special_addresses_are_one_table_with_the_broker(address: str, special: bool) -> None:
    """The analyzer and the broker read one table: an IPv6 spelling of a private or
    loopback IPv4 address is that address, never a public one under `default allow`."""
    from stockade.compiler.query import special_range

    parsed = ipaddress.ip_address(address)
    assert is_special_address(parsed) is special
    assert (special_range(parsed) is not None) is (special or address in ("127.0.0.1", "::1", "::"))
