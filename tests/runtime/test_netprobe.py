"""Adversarial variants against the broker's decisions (:class:`Judge`): every spelling of an
address a resolver accepts, IPv6 forms that carry an IPv4 address, zone ids, the unspecified
addresses, lookalike and malformed names, ports out of range.  Each is refused, judged as
what it is (an address is never looked up), and names the rule that decided.

The same variants over the proxy protocols, on real sockets, are in ``test_netprobe_proxy.py``;
inside real sandboxes in ``test_netprobe_sandbox.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stockade.compiler.pipeline import compile_policy
from stockade.runtime.broker import Judge

STRICT = """\
policy "probe"
network {
    default deny
    allow github.com
    allow *.example.test
    allow 198.51.100.0/24
    allow host-loopback:5432
    deny  bad.example.test
}
"""

WIDE = """\
policy "wide"
network {
    default allow
    allow 0.0.0.0/0
    allow ::/0
    deny  169.254.169.254 203.0.113.66
}
"""


class _Resolver:
    """Answers every name with a public address, and remembers what it was asked: an address
    spelling that reached it would have been judged as a name."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, name: str) -> list[str]:
        self.asked.append(name)
        return ["203.0.113.50"]


def _judge(tmp_path: Path, text: str) -> tuple[Judge, _Resolver]:
    path = tmp_path / "probe.policy"
    path.write_text(text)
    ir = compile_policy(str(path), workspace=str(tmp_path), home=str(tmp_path), tmpdir=str(tmp_path)).ir
    resolver = _Resolver()
    return Judge(ir, resolver), resolver


#: (host, port, the address it is judged as (None: a name refused before any lookup), text in the reason)
STRICT_REFUSED = [
    # the host's loopback, spelled as a resolver takes it
    ("127.0.0.1", 80, "127.0.0.1", "host's loopback"),
    ("2130706433", 80, "127.0.0.1", "host's loopback"),
    ("0177.0.0.1", 80, "127.0.0.1", "host's loopback"),
    ("0x7f.1", 80, "127.0.0.1", "host's loopback"),
    ("0X7F.0.0.1", 80, "127.0.0.1", "host's loopback"),
    ("127.1", 80, "127.0.0.1", "host's loopback"),
    ("0x7f000001", 80, "127.0.0.1", "host's loopback"),
    ("127.0.0.1.", 80, "127.0.0.1", "host's loopback"),
    ("::ffff:127.0.0.1", 80, "127.0.0.1", "host's loopback"),
    ("[::ffff:7f00:1]", 80, "127.0.0.1", "host's loopback"),
    ("[::1]", 80, "::1", "host's loopback"),
    ("64:ff9b::7f00:1", 80, "127.0.0.1", "host's loopback"),
    ("0.0.0.0", 80, "127.0.0.1", "host's loopback"),        # connecting to it reaches the loopback
    ("[::]", 80, "127.0.0.1", "host's loopback"),
    ("0", 80, "127.0.0.1", "host's loopback"),
    ("HOST-LOOPBACK.", 80, "127.0.0.1", "host's loopback"),
    ("localhost", 80, "127.0.0.1", "host's loopback"),      # through the broker: the host's, never looked up
    ("db.localhost.", 80, "127.0.0.1", "host's loopback"),
    ("::127.0.0.1", 80, "::7f00:1", "a reserved address"),  # IPv4-compatible: no one's address
    ("::ffff:0:7f00:1", 80, "::ffff:0:7f00:1", "a reserved address"),
    ("0.1.2.3", 80, "0.1.2.3", "not an address to connect to"),
    # private, link-local, shared, metadata
    ("fe80::1%lo", 80, "fe80::1", "a link-local address"),
    ("[fe80::1%25lo]", 80, "fe80::1", "a link-local address"),
    ("169.254.169.254", 80, "169.254.169.254", "a metadata address"),
    ("0xa9fea9fe", 80, "169.254.169.254", "a metadata address"),
    ("0251.0376.0251.0376", 80, "169.254.169.254", "a metadata address"),
    ("[::ffff:169.254.169.254]", 80, "169.254.169.254", "a metadata address"),
    ("64:ff9b::a9fe:a9fe", 80, "64:ff9b::a9fe:a9fe", "a metadata address"),
    ("2002:a9fe:a9fe::1", 80, "2002:a9fe:a9fe::1", "a metadata address"),
    ("fd00:ec2::254", 80, "fd00:ec2::254", "a metadata address"),
    ("[fd00::1]", 80, "fd00::1", "a private address"),
    ("100.64.0.1", 80, "100.64.0.1", "a shared address"),
    ("10.1", 80, "10.0.0.1", "a private address"),
    ("192.168.1", 80, "192.168.0.1", "a private address"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", 80, "127.0.0.1", "host's loopback"),  # Teredo carrying 127.0.0.1
    # a public address is an address, never a name: `allow github.com` does not cover it
    ("203.0.113.10", 443, "203.0.113.10", "judged as an address"),
    ("3405803786", 443, "203.0.113.10", "judged as an address"),
    ("[2001:db8::1]", 443, "2001:db8::1", "judged as an address"),
]

#: (host, port, text in the reason): refused by name, never looked up
STRICT_NAMES_REFUSED = [
    ("github.com.evil.test", 443, "no rule allows it"),
    ("evil.test", 443, "no rule allows it"),
    ("example.test", 443, "no rule allows it"),             # apex, not `*.example.test`
    ("bad.example.test", 443, "denied by a rule"),
    ("BAD.Example.TEST.", 443, "denied by a rule"),
    ("xn--gthub-n4a.com", 443, "no rule allows it"),         # punycode lookalike
    ("g\u0131thub.com", 443, "not a host name"),                  # dotless i, not IDNA-encoded
    ("github.com\x00.evil.test", 443, "not a host name"),
    ("github.com\r\nHost: evil.test", 443, "not a host name"),
    ("github.com@evil.test", 443, "not a host name"),
    ("user@github.com", 443, "not a host name"),
    ("*.example.test", 443, "not a host name"),
    (".example.test", 443, "not a host name"),
    ("github..com", 443, "not a host name"),
    ("", 443, "not a host name"),
    ("a" * 64 + ".example.test", 443, "not a host name"),
    ("github.com", 0, "not a port"),
    ("github.com", 65536, "not a port"),
    ("github.com", -1, "not a port"),
]


@pytest.mark.parametrize("host, port, address, because", STRICT_REFUSED)
def test_addresses_in_every_spelling_are_judged_as_addresses(tmp_path: Path, host: str, port: int,
                                                             address: str, because: str) -> None:
    judge, resolver = _judge(tmp_path, STRICT)
    decision = judge.judge(host, port)
    assert not decision.allowed, decision
    assert decision.addresses == (address,), decision
    assert because in decision.reason, decision
    assert resolver.asked == []
    assert decision.rule and decision.where.startswith(str(tmp_path)), decision  # named, with its line


@pytest.mark.parametrize("host, port, because", STRICT_NAMES_REFUSED)
def test_names_refused_before_any_lookup(tmp_path: Path, host: str, port: int, because: str) -> None:
    judge, resolver = _judge(tmp_path, STRICT)
    decision = judge.judge(host, port)
    assert not decision.allowed, decision
    assert because in decision.reason, decision
    assert resolver.asked == []
    assert decision.rule in ("default deny", "deny bad.example.test"), decision
    assert decision.where.startswith(str(tmp_path)), decision


@pytest.mark.parametrize("host, port, address, rule", [
    ("github.com.", 443, "203.0.113.50", "allow github.com"),
    ("GitHub.COM", 22, "203.0.113.50", "allow github.com"),
    ("api.example.test", 443, "203.0.113.50", "allow *.example.test"),
    ("198.51.100.7", 443, "198.51.100.7", "allow 198.51.100.0/24"),
    ("0xc6.51.100.7", 443, "198.51.100.7", "allow 198.51.100.0/24"),   # the same address, spelt in hex
    ("3325256711", 443, "198.51.100.7", "allow 198.51.100.0/24"),
    ("::ffff:198.51.100.7", 443, "198.51.100.7", "allow 198.51.100.0/24"),
    ("0.0.0.0", 5432, "127.0.0.1", "allow host-loopback:5432"),        # the host's loopback, where granted
    ("[::ffff:127.0.0.1]", 5432, "127.0.0.1", "allow host-loopback:5432"),
    ("Host-Loopback", 5432, "127.0.0.1", "allow host-loopback:5432"),
])
def test_the_allowed_ones_still_pass(tmp_path: Path, host: str, port: int, address: str, rule: str) -> None:
    judge, _ = _judge(tmp_path, STRICT)
    decision = judge.judge(host, port)
    assert decision.allowed and decision.addresses == (address,) and decision.rule.startswith(rule), decision


@pytest.mark.parametrize("host, address, because", [
    ("0.0.0.0", "127.0.0.1", "host's loopback"),      # `allow 0.0.0.0/0` is no grant of the host's loopback
    ("0", "127.0.0.1", "host's loopback"),
    ("[::]", "127.0.0.1", "host's loopback"),
    ("2130706433", "127.0.0.1", "host's loopback"),
    ("[::ffff:127.0.0.1]", "127.0.0.1", "host's loopback"),
    ("0.0.0.1", "0.0.0.1", "not an address to connect to"),
    ("0xa9fea9fe", "169.254.169.254", "denied by a rule"),
    ("[::ffff:a9fe:a9fe]", "169.254.169.254", "denied by a rule"),
    ("64:ff9b::cb00:7142", "64:ff9b::cb00:7142", "carries `203.0.113.66`, denied by a rule"),
    ("2002:cb00:7142::1", "2002:cb00:7142::1", "carries `203.0.113.66`, denied by a rule"),
])
def test_wide_open_policies_keep_the_host_out(tmp_path: Path, host: str, address: str, because: str) -> None:
    judge, resolver = _judge(tmp_path, WIDE)
    decision = judge.judge(host, 8080)
    assert not decision.allowed and decision.addresses == (address,) and because in decision.reason, decision
    assert resolver.asked == []


def test_names_resolving_to_special_addresses_name_the_address(tmp_path: Path) -> None:
    path = tmp_path / "p.policy"
    path.write_text('policy "open"\nnetwork {\n    default allow\n    deny 169.254.169.254\n}\n')
    ir = compile_policy(str(path), workspace=str(tmp_path), home=str(tmp_path), tmpdir=str(tmp_path)).ir
    table = {"v4compat.test": ["::7f00:1"], "zero.test": ["0.0.0.0"], "teredo.test": [
        "2001:0:4136:e378:8000:63bf:80ff:fffe"], "nat64.test": ["64:ff9b:1::a9fe:a9fe"], "scoped.test": ["fe80::1%lo"]}
    judge = Judge(ir, lambda name: table[name])
    for name, because in [("v4compat.test", "a reserved address"), ("zero.test", "host's loopback"),
                          ("teredo.test", "host's loopback"), ("nat64.test", "carries `169.254.169.254`, denied by a rule"),
                          ("scoped.test", "a link-local address")]:
        decision = judge.judge(name, 443)
        assert not decision.allowed and because in decision.reason, (name, decision)


def _packet(labels: list[bytes], qtype: int) -> bytes:
    import struct

    name = b"".join(bytes([len(label)]) + label for label in labels) + b"\0"
    return struct.pack("!HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0) + name + struct.pack("!HH", qtype, 1)


@pytest.mark.parametrize("labels", [
    [b"secret\x00data", b"example", b"test"], [b"a.b", b"example", b"test"], [b"1", b"2", b"3", b"4"],
    [b"2130706433"], [b"host-loopback"], [b"github", b"com", b"evil", b"test"], [b"GITHUB", b"COM", b"EVIL"],
    [b"x" * 63, b"y" * 63, b"z" * 63, b"evil"], [b"\xff\xfe", b"com"],
])
@pytest.mark.parametrize("qtype", [1, 16, 28, 255])  # A, TXT, AAAA, ANY
def test_the_stub_refuses_odd_names_with_the_rule(tmp_path: Path, labels: list[bytes], qtype: int) -> None:
    from stockade.runtime import netstub

    judge, _ = _judge(tmp_path, STRICT)
    reply, lookup = netstub.Stub(judge.ir).answer(_packet(labels, qtype))
    assert reply is not None and lookup is not None
    _, rcode, answers = netstub.parse_reply(reply)
    assert (rcode, answers) == (netstub.NXDOMAIN, []) and not lookup.allowed
    assert lookup.rule == "default deny" and lookup.where.startswith(str(tmp_path)), (lookup.reason, lookup.rule)


def test_a_flood_of_refused_names_is_recorded_once_each_and_bounded(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from stockade.runtime import broker as broker_mod
    from stockade.runtime import netstub

    monkeypatch.setattr(broker_mod, "MAX_LOOKUP_RECORDS", 5)
    judge, _ = _judge(tmp_path, STRICT)
    broker = broker_mod.Broker(lambda: judge.ir)
    stub = broker._stub()
    for _ in range(3):  # every name asked again (A, AAAA, TXT): still one record per name
        for n in range(12):
            for qtype in (1, 28, 16):
                reply, lookup = stub.answer(_packet([f"chunk{n}-secret".encode(), b"exfil", b"test"], qtype))
                assert reply is not None and netstub.parse_reply(reply)[1] == netstub.NXDOMAIN
                broker._lookup_record(lookup, "dns")
    names = [event["host"] for event in broker.events]
    assert names == [f"chunk{n}-secret.exfil.test" for n in range(5)], names
    assert all(e["rule"] == "default deny" and e["protocol"] == "dns" for e in broker.events)
    assert [p for p in broker.problems if "were answered `NXDOMAIN` but not recorded" in p], broker.problems


@pytest.mark.parametrize("qtype", [16, 28, 255, 12, 33])  # TXT, AAAA, ANY, PTR, SRV of an allowed name
def test_the_stub_answers_no_data_but_an_address(tmp_path: Path, qtype: int) -> None:
    from stockade.runtime import netstub

    judge, _ = _judge(tmp_path, STRICT)
    reply, lookup = netstub.Stub(judge.ir).answer(_packet([b"c2VjcmV0", b"example", b"test"], qtype))
    assert reply is not None and lookup is not None and lookup.allowed
    assert netstub.parse_reply(reply)[1:] == (netstub.NOERROR, [])
