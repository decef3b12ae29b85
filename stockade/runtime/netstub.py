"""The broker's stub resolver and transparent capture, for clients that ignore the proxy variables.

Where the broker's listeners are opened with the capabilities of the sandbox's network
namespace (as root: the host makes the namespace itself), the namespace gets three more
things (all set up by :func:`stockade.runtime.netns.open_listeners`, from the
:class:`~stockade.runtime.netns.ListenSpec` records :func:`~stockade.runtime.netns.capture_specs` gives):

1. **Every address is local.**  A ``local 0.0.0.0/0 dev lo`` route (and ``local ::/0``),
   added over netlink (:func:`add_local_routes`; no ``ip`` binary, no ``iptables``), makes
   the kernel deliver a connection to *any* address to the namespace's own sockets, so a
   listener on the wildcard address accepts connections to every address on its port, and
   the accepted socket's own address (``getsockname``) is the destination the client asked
   for.
2. **A stub resolver on port 53 of every address** (UDP and TCP, IPv4 and IPv6), served by
   the broker (:class:`Stub`): whatever name server the sandbox's ``/etc/resolv.conf``
   names (the host's file, unchanged; without one the C library asks ``127.0.0.1``), the
   query reaches the stub.  A name the policy may reach at some port is answered with a
   fake address from :data:`POOL` (198.18.0.0/15, a range reserved for benchmarks and
   never routed on the internet), remembered for the run; a refused name gets
   ``NXDOMAIN`` and an audit record.  Queries are never forwarded anywhere: data put in a
   name goes no further than the broker's record.  ``AAAA`` and other types of a reachable
   name get an empty answer (``NOERROR``, no record: clients fall back to the ``A``
   address).
3. **Capture listeners** on the wildcard addresses of the ports :func:`capture_ports` names
   (22, 80, 443 and every port an ``allow`` rule names, less the proxy's and the
   ``host-loopback`` ports).  A connection there is judged like a proxied one: to a fake
   address, as the name the stub handed out for it; to any other address, as that address
   (an IP literal).  A port without a listener refuses the connection at once (it cannot
   be recorded: nothing accepted it).

The DNS wire format is parsed here by hand, bounded, and every malformed packet is
dropped or answered ``FORMERR``: nothing a client sends raises out of :meth:`Stub.answer`.
"""

from __future__ import annotations

import _socket
import _struct as struct  # (not `struct`: the run path does without its Python wrapper)
import _thread

from stockade.runtime.netns import (  # noqa: F401 - (the namespace side lives there; the names are had from here too)
    DNS_PORT,
    IP_FREEBIND,
    IP_PKTINFO,
    USUAL_PORTS,
    add_local_routes,
    capture_ports,
    capture_specs,
    want_destination,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence
    from typing import Any

    from stockade.compiler.ir import PolicyIR

#: The fake addresses the stub hands out (the first and last of the range are not used).
POOL = ("198.18.0.0", 15)
#: The most names the stub remembers in one run (later new names get ``SERVFAIL``).
MAX_NAMES = 65536
#: Seconds a fake answer may be cached by the client (the mapping lasts the whole run).
TTL = 60
#: The most DNS messages served on one TCP connection, and the seconds to wait for each.
TCP_MESSAGES = 32
TCP_TIMEOUT = 10.0

# DNS constants (RFC 1035, 3596, 6891)
TYPE_A, TYPE_PTR, TYPE_AAAA = 1, 12, 28
CLASS_IN = 1
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP, REFUSED = 0, 1, 2, 3, 4, 5



class DnsError(ValueError):
    """A packet that is not a DNS query this stub can read."""


class Query:
    """One parsed DNS query: its header fields and its single question."""

    __slots__ = ("flags", "ident", "labels", "qclass", "qtype", "question")

    def __init__(self, ident: int, flags: int, labels: tuple[bytes, ...], qtype: int, qclass: int,
                 question: bytes):
        self.ident = ident
        self.flags = flags
        #: the name's labels as sent (case kept: the answer echoes the question)
        self.labels = labels
        self.qtype = qtype
        self.qclass = qclass
        #: the question section's bytes, as sent
        self.question = question

    @property
    def opcode(self) -> int:
        """The query's operation (0: a standard query)."""
        return (self.flags >> 11) & 0xF

    def name(self) -> str:
        """The name, lower case, without the final dot; bytes outside printable ASCII and
        the dot inside a label are shown escaped (``\\DDD``), so that they never make a
        name a rule could match."""
        out = []
        for label in self.labels:
            text = "".join(chr(b + 32) if 65 <= b <= 90 else chr(b) if 33 <= b <= 126 and b not in (46, 92)
                           else f"\\{b:03d}" for b in label)
            out.append(text)
        return ".".join(out)


def parse_query(packet: bytes) -> Query:
    """The query in ``packet`` (a DNS message without the TCP length prefix).  Raises
    :class:`DnsError` for anything else: a response, a header shorter than 12 bytes, other
    than one question, a name with a compression pointer, a label over 63 or a name over
    255 bytes, a truncated question."""
    if len(packet) < 12:
        raise DnsError("shorter than a DNS header")
    if len(packet) > 65535:
        raise DnsError("longer than a DNS message")
    ident, flags, qdcount, ancount, nscount, _arcount = struct.unpack_from("!HHHHHH", packet, 0)
    if flags & 0x8000:
        raise DnsError("a response, not a query")
    if qdcount != 1:
        raise DnsError(f"{qdcount} questions")
    if ancount or nscount:
        raise DnsError("a query with answers")
    at = 12
    labels: list[bytes] = []
    total = 1
    while True:
        if at >= len(packet):
            raise DnsError("the name runs past the packet")
        size = packet[at]
        if size & 0xC0:
            raise DnsError("a compressed or extended label in the question")
        at += 1
        if size == 0:
            break
        if at + size > len(packet):
            raise DnsError("a label runs past the packet")
        total += size + 1
        if total > 255:
            raise DnsError("a name longer than 255 bytes")
        labels.append(bytes(packet[at:at + size]))
        at += size
    if at + 4 > len(packet):
        raise DnsError("the question has no type and class")
    qtype, qclass = struct.unpack_from("!HH", packet, at)
    return Query(ident, flags, tuple(labels), qtype, qclass, bytes(packet[12:at + 4]))


def encode_name(name: str) -> bytes:
    """``name`` in DNS wire form (labels of at most 63 bytes; raises :class:`DnsError`)."""
    out = b""
    for label in name.rstrip(".").split(".") if name.strip(".") else []:
        raw = label.encode("ascii")
        if not 0 < len(raw) < 64:
            raise DnsError(f"bad label in `{name}`")
        out += bytes([len(raw)]) + raw
    if len(out) + 1 > 255:
        raise DnsError(f"`{name}` is longer than 255 bytes")
    return out + b"\0"


def build_query(name: str, qtype: int = TYPE_A, ident: int = 0, qclass: int = CLASS_IN) -> bytes:
    """A standard query for ``name`` (recursion desired), as a client sends it."""
    return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + encode_name(name) + struct.pack("!HH", qtype, qclass)


def build_reply(query: Query, rcode: int, answers: Sequence[tuple[int, bytes]] = ()) -> bytes:
    """The answer to ``query``: its id, its question echoed, ``rcode``, and one record per
    ``(type, rdata)`` of ``answers`` (owner: the question's name; class IN; :data:`TTL`).
    Authoritative, recursion available, no EDNS."""
    flags = 0x8000 | 0x0400 | (query.flags & 0x0100) | 0x0080 | (rcode & 0xF)
    head = struct.pack("!HHHHHH", query.ident, flags, 1, len(answers), 0, 0)
    body = b"".join(struct.pack("!HHHIH", 0xC00C, kind, CLASS_IN, TTL, len(data)) + data for kind, data in answers)
    return head + query.question + body


def parse_reply(packet: bytes) -> tuple[int, int, list[tuple[int, bytes]]]:
    """``(id, rcode, [(type, rdata), ...])`` of an answer as :func:`build_reply` writes it
    (for tests and tools; raises :class:`DnsError` for anything else)."""
    if len(packet) < 12:
        raise DnsError("shorter than a DNS header")
    ident, flags, qdcount, ancount, _, _ = struct.unpack_from("!HHHHHH", packet, 0)
    if not flags & 0x8000 or qdcount != 1:
        raise DnsError("not an answer to one question")
    at = 12
    while packet[at]:
        at += packet[at] + 1
    at += 5
    answers = []
    for _ in range(ancount):
        _, kind, _, _, size = struct.unpack_from("!HHHIH", packet, at)
        at += 12
        answers.append((kind, bytes(packet[at:at + size])))
        at += size
    return ident, flags & 0xF, answers


class FakePool:
    """The fake addresses of one run: name ↔ address, handed out in order, never reused."""

    def __init__(self, base: str = POOL[0], prefix: int = POOL[1], limit: int = MAX_NAMES):
        self.base = int.from_bytes(_socket.inet_aton(base), "big")
        self.size = min(1 << (32 - prefix), limit + 2)
        self.mask = ~((1 << (32 - prefix)) - 1) & 0xFFFFFFFF
        self.by_name: dict[str, int] = {}
        self.by_address: dict[int, str] = {}
        self._lock = _thread.allocate_lock()

    def address(self, name: str) -> str | None:
        """The fake address of ``name`` (a new one the first time), or None when the pool is full."""
        with self._lock:
            found = self.by_name.get(name)
            if found is None:
                offset = len(self.by_name) + 1
                if offset >= self.size - 1:
                    return None
                found = self.base + offset
                self.by_name[name] = found
                self.by_address[found] = name
        return _socket.inet_ntoa(found.to_bytes(4, "big"))

    def contains(self, address: str) -> bool:
        """Whether ``address`` is in the pool's range (handed out or not)."""
        value = _ipv4_value(address)
        return value is not None and value & self.mask == self.base

    def name(self, address: str) -> str | None:
        """The name ``address`` was handed out for, or None."""
        value = _ipv4_value(address)
        with self._lock:
            return self.by_address.get(value) if value is not None else None


def _ipv4_value(address: str) -> int | None:
    if address.startswith("::ffff:") and "." in address:
        address = address[7:]
    try:
        return int.from_bytes(_socket.inet_aton(address), "big") if address.count(".") == 3 else None
    except OSError:
        return None


class Lookup:
    """What the stub answered for one query, and why (a refusal is an audit record)."""

    __slots__ = ("address", "allowed", "name", "qtype", "rcode", "reason", "rule", "where")

    def __init__(self, name: str, qtype: int, rcode: int, address: str | None = None, allowed: bool = True,
                 reason: str = "", rule: str = "", where: str = ""):
        self.name, self.qtype, self.rcode, self.address = name, qtype, rcode, address
        self.allowed, self.reason, self.rule, self.where = allowed, reason, rule, where


def _is_host_name(text: str) -> bool:
    if not text or len(text) > 253:
        return False
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789-_")
    return all(label and len(label) <= 63 and set(label) <= allowed for label in text.split("."))


class Stub:
    """The stub resolver of one run (see the module docstring): answers queries from the
    policy's name rules alone, with fake addresses from a :class:`FakePool`."""

    def __init__(self, ir: PolicyIR):
        self.ir = ir
        self.pool = FakePool()
        ports = {r.host.port for r in ir.network.rules if r.host.port is not None}
        free = next(p for p in range(1, 65536) if p not in ports)
        #: a port no rule names (decided by the port-less rules alone), then every named one
        self.ports: tuple[int, ...] = (free, *sorted(ports))

    def reachable(self, name: str) -> tuple[bool, str, str, str]:
        """Whether the policy lets ``name`` be reached at some port: ``(allowed, reason,
        rule, where)``; a refusal names the rule that decides the name at a port no rule names."""
        from stockade.compiler.query import ip_literal
        from stockade.runtime.broker import HOST_LOOPBACK, _where

        network = self.ir.network
        # (a name no rule can match is refused by the default where it is `deny`, and named so)
        unnamed = ((f"default {network.default}", _where(network.default_origin) or "the built-in default")
                   if network.default == "deny" else ("", ""))
        if not _is_host_name(name):
            return False, "not a host name", *unnamed
        if name == HOST_LOOPBACK:
            return (False, "`host-loopback` is not looked up: its granted ports are the sandbox's own 127.0.0.1",
                    *unnamed)
        if ip_literal(name) is not None:
            return False, "an address is not a name to look up", *unnamed
        first = None
        for port in self.ports:
            decision = self.ir.network_access(name, port)
            if decision.allowed:
                return True, "", "", ""
            if first is None:
                first = decision
        assert first is not None
        rule = first.rule
        if rule is not None:
            text, where = f"{rule.action} {rule.host}", _where(rule.origin)
        else:
            text, where = f"default {network.default}", _where(network.default_origin) or "the built-in default"
        reason = "denied by a rule" if rule is not None and rule.action == "deny" else "no rule allows it at any port"
        return False, reason, text, where

    def lookup(self, query: Query) -> Lookup:
        """The answer for a parsed query (see the module docstring)."""
        name = query.name()
        if query.qclass != CLASS_IN or query.opcode != 0:
            return Lookup(name, query.qtype, NOTIMP if query.opcode else REFUSED)
        if name == "localhost" or name.endswith(".localhost"):
            return Lookup(name, query.qtype, NOERROR, "127.0.0.1" if query.qtype == TYPE_A else None)
        if query.qtype == TYPE_PTR and name.endswith(".in-addr.arpa"):
            parts = name[:-13].split(".")
            address = ".".join(reversed(parts))
            if len(parts) == 4 and self.pool.contains(address):
                found = self.pool.name(address)
                return Lookup(name, query.qtype, NOERROR if found else NXDOMAIN, found)
        allowed, reason, rule, where = self.reachable(name)
        if not allowed:
            return Lookup(name, query.qtype, NXDOMAIN, None, False, reason, rule, where)
        if query.qtype != TYPE_A:
            return Lookup(name, query.qtype, NOERROR)
        fake = self.pool.address(name)
        if fake is None:
            return Lookup(name, query.qtype, SERVFAIL, None, True, "the stub's fake addresses are used up")
        return Lookup(name, query.qtype, NOERROR, fake)

    def answer(self, packet: bytes) -> tuple[bytes | None, Lookup | None]:
        """The reply to ``packet`` (None: not answered — not a query at all) and the
        lookup it made (None when the packet was malformed).  Never raises for any input."""
        try:
            query = parse_query(packet)
        except DnsError:
            return _formerr(packet), None
        except Exception:  # (defensive: a parser bug must not reach the broker)
            return None, None
        try:
            found = self.lookup(query)
        except Exception:
            return build_reply(query, SERVFAIL), None
        answers: list[tuple[int, bytes]] = []
        if found.address is not None and found.rcode == NOERROR:
            if query.qtype == TYPE_A:
                answers.append((TYPE_A, _socket.inet_aton(found.address)))
            elif query.qtype == TYPE_PTR:
                try:
                    answers.append((TYPE_PTR, encode_name(found.address)))
                except (DnsError, UnicodeError):
                    pass
        return build_reply(query, found.rcode, answers), found


def _formerr(packet: bytes) -> bytes | None:
    """``FORMERR`` for a malformed query with a readable header; None for a response or a
    packet too short to carry an id (never answered: no loops, no reflection)."""
    if len(packet) < 12 or packet[2] & 0x80:
        return None
    ident, flags = struct.unpack_from("!HH", packet, 0)
    return struct.pack("!HHHHHH", ident, 0x8000 | (flags & 0x7900) | FORMERR, 0, 0, 0, 0)


# -- datagrams: the reply leaves from the address the query went to ------------------------------

def receive(sock: _socket.socket) -> tuple[bytes, tuple[Any, ...], list[tuple[int, int, bytes]]]:
    """One datagram: ``(data, sender, ancillary)``, the ancillary data to answer from the
    address it was sent to (see :func:`reply`)."""
    data, ancillary, _, peer = sock.recvmsg(65535, 256)
    source: list[tuple[int, int, bytes]] = []
    for level, kind, payload in ancillary:
        if level == _socket.IPPROTO_IP and kind == IP_PKTINFO and len(payload) >= 12:
            source = [(level, kind, bytes(4) + payload[8:12] + bytes(4))]  # ipi_spec_dst := ipi_addr
        elif level == _socket.IPPROTO_IPV6 and kind == _socket.IPV6_PKTINFO and len(payload) >= 20:
            source = [(level, kind, payload[:16] + bytes(4))]
    return data, peer, source


def reply(sock: _socket.socket, data: bytes, peer: tuple[Any, ...], source: list[tuple[int, int, bytes]]) -> None:
    """Send ``data`` to ``peer`` from the address :func:`receive` saw the query go to."""
    sock.sendmsg([data], source, 0, peer)
