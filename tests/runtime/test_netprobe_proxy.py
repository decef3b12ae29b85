"""Adversarial variants against the broker's proxy protocols, on real sockets: a real
:class:`Broker` serving loopback listeners, real upstream servers on the host's loopback.

Every variant of a refusal must reach no server and leave a record: address spellings in
``CONNECT``, absolute-form requests, SOCKS5 (IPv4, IPv6, names) and SOCKS4/4a; a ``Host``
header naming another host; a second request on a kept-alive connection; request
smuggling framings; header injection; bad ports; SOCKS commands that are not served.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from stockade.compiler.pipeline import compile_policy
from stockade.runtime import broker as broker_mod
from stockade.runtime.broker import Broker, TableResolver
from tests.runtime.servers import LoopbackServer


class _Server(LoopbackServer):
    """An HTTP server on the host's loopback that keeps every byte each connection sent and
    answers one request with the ``Host`` header it received (then closes)."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self._lock = threading.Lock()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        data = b""
        with conn:
            conn.settimeout(5)
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                host = next((line.split(b":", 1)[1].strip() for line in data.split(b"\r\n")
                             if line.lower().startswith(b"host:")), b"")
                body = b"host=" + host
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
                conn.settimeout(0.3)  # keep whatever else the connection carried (a pipelined request)
                while chunk := conn.recv(65536):
                    data += chunk
            except OSError:
                pass
            with self._lock:
                self.received.append(data)

    def everything(self) -> bytes:
        with self._lock:
            return b"\n".join(self.received)

    def close(self) -> None:
        self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()


@dataclass
class World:
    broker: Broker
    port: int        # the broker's proxy port (both protocols)
    up: _Server      # granted: `allow host-loopback:PORT`, and `up.test` resolves to it
    other: _Server   # the host's loopback service that no rule grants


@pytest.fixture()
def world(tmp_path: Path) -> Iterator[World]:
    up, other = _Server(), _Server()
    path = tmp_path / "probe.policy"
    path.write_text(f'policy "probe"\nnetwork {{\n    default allow\n    allow host-loopback:{up.port}\n'
                    f'    deny  evil.test\n}}\n')
    ir = compile_policy(str(path), workspace=str(tmp_path), home=str(tmp_path), tmpdir=str(tmp_path)).ir
    names = {name: ["127.0.0.1"] for name in ("up.test", "evil.test", "other.test")}
    broker = Broker(lambda: ir, resolver=TableResolver(names), base={"command": "probe"})
    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in broker.listen_specs()]
    broker.adopt(listeners)
    broker.serve()
    assert broker.wait_ready(5)
    try:
        yield World(broker, listeners[0].getsockname()[1], up, other)
    finally:
        broker.stop()
        up.close()
        other.close()


def _talk(port: int, data: bytes, timeout: float = 10, end: bool = False) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout) as conn:
        conn.sendall(data)
        if end:
            conn.shutdown(socket.SHUT_WR)
        out = b""
        try:
            while chunk := conn.recv(65536):
                out += chunk
        except ConnectionResetError:
            pass
        return out


def _socks5(host: str, port: int) -> bytes:
    if host.startswith("["):
        address = b"\x04" + socket.inet_pton(socket.AF_INET6, host[1:-1])
    else:
        try:
            address = b"\x01" + socket.inet_aton(host) if host.count(".") == 3 and host.replace(".", "").isdigit() \
                else b"\x03" + bytes([len(host)]) + host.encode("latin-1")
        except OSError:
            address = b"\x03" + bytes([len(host)]) + host.encode("latin-1")
    return b"\x05\x01\x00" + b"\x05\x01\x00" + address + port.to_bytes(2, "big")


def _records(world: World) -> list[dict]:
    world.broker.stop()  # (allowed connections are recorded when they end)
    return world.broker.events


#: the host's loopback in the spellings a client may try (the broker connects to the checked address)
LOOPBACK_SPELLINGS = ["127.0.0.1", "127.1", "2130706433", "0x7f.1", "0177.0.0.1", "0x7f000001", "[::ffff:127.0.0.1]",
                      "[::ffff:7f00:1]", "0.0.0.0", "0", "[::]", "[::1]", "localhost", "LOCALHOST.", "other.test",
                      "127.0.0.1."]


@pytest.mark.parametrize("spelling", LOOPBACK_SPELLINGS)
@pytest.mark.parametrize("protocol", ["connect", "http", "socks5", "socks4"])
def test_the_host_loopback_in_any_spelling_is_refused(world: World, spelling: str, protocol: str) -> None:
    port = world.other.port
    if protocol == "connect":
        reply = _talk(world.port, f"CONNECT {spelling}:{port} HTTP/1.1\r\n\r\nGET / HTTP/1.0\r\n\r\n".encode())
        assert reply.startswith(b"HTTP/1.1 403 "), reply
    elif protocol == "http":
        reply = _talk(world.port, f"GET http://{spelling}:{port}/ HTTP/1.1\r\nHost: up.test\r\n\r\n".encode())
        assert reply.startswith(b"HTTP/1.1 403 "), reply
    elif protocol == "socks5":
        reply = _talk(world.port, _socks5(spelling, port))
        assert reply[2:4] == b"\x05\x02", reply
    else:
        if spelling.startswith("["):
            pytest.skip("SOCKS4 has no IPv6")
        try:
            packed = socket.inet_aton(spelling) if spelling.count(".") == 3 and spelling[0].isdigit() else None
        except OSError:
            packed = None
        request = (b"\x04\x01" + port.to_bytes(2, "big") + (packed or b"\0\0\0\1") + b"user\0"
                   + (b"" if packed else spelling.encode() + b"\0"))
        reply = _talk(world.port, request)
        assert reply[:2] == b"\x00\x5b", reply
    (record,) = _records(world)
    assert record["decision"] == "deny" and record["protocol"] == protocol and record["port"] == port, record
    assert record["reason"], record
    assert world.other.received == []


def test_the_summary_brackets_ipv6_destinations(world: World) -> None:
    _talk(world.port, f"CONNECT [::1]:{world.other.port} HTTP/1.1\r\n\r\n".encode())
    _talk(world.port, _socks5("[fd00::1]", 80))
    assert [line.split(" (")[0] for line in world.broker.summary()] == [
        f"blocked: [::1]:{world.other.port}", "blocked: [fd00::1]:80"]


def test_a_host_header_naming_another_host_is_replaced(world: World) -> None:
    reply = _talk(world.port, f"GET http://up.test:{world.up.port}/ HTTP/1.1\r\nHost: evil.test\r\n"
                              f"host: evil.test\r\n\r\n".encode())
    assert reply.endswith(f"host=up.test:{world.up.port}".encode()), reply
    assert b"evil.test" not in world.up.everything()


def test_each_request_on_a_kept_alive_connection_is_decided(world: World) -> None:
    first = f"GET http://up.test:{world.up.port}/a HTTP/1.1\r\nHost: up.test\r\nConnection: keep-alive\r\n\r\n"
    second = f"GET http://evil.test:{world.up.port}/b HTTP/1.1\r\nHost: evil.test\r\n\r\n"
    reply = _talk(world.port, (first + second).encode())
    assert reply.startswith(b"HTTP/1.1 200 OK") and b"HTTP/1.1 403 " in reply and b"evil.test" in reply, reply
    assert b"evil.test" not in world.up.everything() and b"/b" not in world.up.everything()
    decisions = sorted((r["decision"], r["host"], r["rule"]) for r in _records(world))
    assert decisions == [("allow", "up.test", "default allow"), ("deny", "evil.test", "deny evil.test")]


def test_a_second_allowed_request_goes_on_a_connection_of_its_own(world: World) -> None:
    one = f"GET http://up.test:{world.up.port}/one HTTP/1.1\r\nHost: up.test\r\n\r\n"
    two = f"POST http://up.test:{world.up.port}/two HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody"
    reply = _talk(world.port, (one + two).encode())
    assert reply.count(b"HTTP/1.1 200 OK") == 2, reply
    received = sorted(world.up.received)
    assert len(received) == 2 and received[0].startswith(b"GET /one ") and received[1].startswith(b"POST /two ")
    assert received[1].endswith(b"\r\n\r\nbody"), received


def test_a_chunked_body_carries_no_second_request(world: World) -> None:
    smuggled = f"GET http://evil.test:{world.up.port}/x HTTP/1.1\r\nHost: evil.test\r\n\r\n"
    request = (f"POST http://up.test:{world.up.port}/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
               f"4\r\nbody\r\n0\r\n\r\n{smuggled}")
    reply = _talk(world.port, request.encode())
    assert reply.startswith(b"HTTP/1.1 200 OK") and b"HTTP/1.1 403 " in reply, reply
    assert b"evil.test" not in world.up.everything()
    assert world.up.received[0].endswith(b"4\r\nbody\r\n0\r\n\r\n")


@pytest.mark.parametrize("head", [
    "POST http://up.test:PORT/ HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "POST http://up.test:PORT/ HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nbody",
    "POST http://up.test:PORT/ HTTP/1.1\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
    "POST http://up.test:PORT/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "POST http://up.test:PORT/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
    "POST http://up.test:PORT/ HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n",
    "GET http://up.test:PORT/ HTTP/1.1\r\nX-A: 1\nHost: evil.test\r\n\r\n",            # a bare LF
    "GET http://up.test:PORT/ HTTP/1.1\r\nX-A: 1\rHost: evil.test\r\n\r\n",            # a bare CR
    "GET http://up.test:PORT/ HTTP/1.1\r\nHost : evil.test\r\n\r\n",                    # space before the colon
    "GET http://up.test:PORT/ HTTP/1.1\r\nX-A: 1\r\n Host: evil.test\r\n\r\n",          # a folded line
    "GET http://up.test:PORT/ HTTP/1.1\r\nX-A: a\0b\r\n\r\n",                           # a NUL
    "GET http://up.test:PORT/  HTTP/1.1\r\n\r\n",
    "GET http://up.test:PORT/ HTTP/2\r\n\r\n",
    "GET\thttp://up.test:PORT/ HTTP/1.1\r\n\r\n",
    "GET https://up.test:PORT/ HTTP/1.1\r\n\r\n",
    "GET /relative HTTP/1.1\r\nHost: up.test\r\n\r\n",
    "GET http://up.test:PORT:PORT/ HTTP/1.1\r\n\r\n",
    "CONNECT up.test: PORT HTTP/1.1\r\n\r\n",
])
def test_ambiguous_or_malformed_requests_reach_no_server(world: World, head: str) -> None:
    reply = _talk(world.port, head.replace("PORT", str(world.up.port)).encode("latin-1"))
    assert reply.startswith(b"HTTP/1.1 400 "), reply
    assert world.up.received == []
    if "up.test" in head.split("\r\n")[0] and "\t" not in head:  # never silent: named with what it asked for
        (record,) = world.broker.blocked()
        assert record["decision"] == "deny" and record["host"].startswith("up.test"), record


@pytest.mark.parametrize("target", ["up.test:0", "up.test:65536", "up.test", "up.test:", "up.test:abc", "up.test:+80",
                                    "up.test:\u00b2", "up.test:80:80", "[::1", "[::1]x", ":443"])
def test_bad_connect_ports_reach_no_server(world: World, target: str) -> None:
    reply = _talk(world.port, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode("latin-1"))
    assert reply.startswith(b"HTTP/1.1 400 "), reply
    assert world.broker.problems == []
    (record,) = world.broker.blocked()  # never silent
    assert record["protocol"] == "connect" and "bad CONNECT target" in record["reason"], record
    assert _talk(world.port, f"GET http://up.test:{world.up.port}/ HTTP/1.1\r\n\r\n".encode()).startswith(
        b"HTTP/1.1 200 OK")  # (the broker goes on serving)


@pytest.mark.parametrize("request_, because", [
    ("GET http://up.test@evil.test:PORT/ HTTP/1.1\r\nHost: up.test\r\n\r\n", "denied by a rule"),   # userinfo
    ("GET http://evil.test:PORT?@up.test/ HTTP/1.1\r\n\r\n", "denied by a rule"),                   # the authority ends at ?
    ("GET http://evil.test:PORT#@up.test/ HTTP/1.1\r\n\r\n", "denied by a rule"),
    ("get http://EVIL.TEST.:PORT/ HTTP/1.0\r\n\r\n", "denied by a rule"),                           # lowercase, 1.0
    ("connect evil.test:PORT HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", "denied by a rule"),          # a body after it
    ("CONNECT [::ffff:127.0.0.1]:OTHER HTTP/1.1\r\n\r\n", "host's loopback"),
    ("CONNECT [fe80::1%lo]:PORT HTTP/1.1\r\n\r\n", "a link-local address"),
    ("CONNECT [fe80::1%25lo]:PORT HTTP/1.1\r\n\r\n", "a link-local address"),
    ("CONNECT [::ffff:a9fe:a9fe]:80 HTTP/1.1\r\n\r\n", "a metadata address"),
    ("CONNECT 0xa9fea9fe:80 HTTP/1.1\r\n\r\n", "a metadata address"),
    ("CONNECT [fd00::1]:80 HTTP/1.1\r\n\r\n", "a private address"),
    ("CONNECT 100.64.1.1:80 HTTP/1.1\r\n\r\n", "a shared address"),
    ("CONNECT [::7f00:1]:OTHER HTTP/1.1\r\n\r\n", "a reserved address"),
    ("GET http://[::]:OTHER/ HTTP/1.1\r\n\r\n", "host's loopback"),
    ("GET http://0:OTHER/ HTTP/1.1\r\n\r\n", "host's loopback"),
    ("CONNECT HOST-LOOPBACK.:OTHER HTTP/1.1\r\n\r\n", "only `allow host-loopback:"),
    ("GET http://evil.test%2e:PORT/ HTTP/1.1\r\n\r\n", "not a host name"),
    ("GET http://up.test%00.evil.test:PORT/ HTTP/1.1\r\n\r\n", "not a host name"),
])
def test_disguised_targets_are_refused_with_their_record(world: World, request_: str, because: str) -> None:
    text = request_.replace("OTHER", str(world.other.port)).replace("PORT", str(world.up.port))
    reply = _talk(world.port, text.encode())
    assert reply.startswith(b"HTTP/1.1 403 "), reply
    (record,) = _records(world)
    assert record["decision"] == "deny" and because in record["reason"], record
    assert world.up.received == [] and world.other.received == []


def test_a_request_head_too_large_is_refused(world: World) -> None:
    big = f"GET http://up.test:{world.up.port}/ HTTP/1.1\r\nX: {'a' * (broker_mod.MAX_HEAD + 10)}\r\n\r\n"
    assert _talk(world.port, big.encode()).startswith(b"HTTP/1.1 431 ")
    assert world.up.received == []


@pytest.mark.parametrize("stream", [
    b"GET http://up.test/ HTTP/1.1\r\nX: " + b"a" * 500,
    b"\x05\x01\x00\x05\x01\x00\x03\xff" + b"a" * 255,          # SOCKS5, a long name
    b"\x04\x01\x00\x50\x00\x00\x00\x01" + b"u" * 250,          # SOCKS4a, a long user id
])
def test_a_slow_request_holds_neither_the_broker_nor_its_connection(world: World, monkeypatch: pytest.MonkeyPatch,
                                                                    stream: bytes) -> None:
    monkeypatch.setattr(broker_mod, "HEAD_TIMEOUT", 1.0)
    slow = socket.create_connection(("127.0.0.1", world.port), 10)
    ended = False
    try:
        slow.sendall(stream[:1])
        # another client is served meanwhile
        assert _talk(world.port, f"GET http://up.test:{world.up.port}/ HTTP/1.1\r\n\r\n".encode()).startswith(
            b"HTTP/1.1 200 OK")
        for at in range(1, len(stream)):  # a byte at a time, each within the per-read timeout: the request's own limit ends it
            try:
                slow.sendall(stream[at:at + 1])
                slow.settimeout(0.1)
                if slow.recv(1) == b"":
                    ended = True
                    break
            except TimeoutError:
                continue
            except OSError:
                ended = True
                break
    finally:
        slow.close()
    assert ended
    assert world.up.received == [b"GET / HTTP/1.1\r\nHost: up.test:%d\r\nConnection: close\r\n\r\n" % world.up.port]


def test_socks5_commands_that_are_not_served_are_recorded(world: World) -> None:
    for command in (2, 3):  # BIND, UDP ASSOCIATE
        reply = _talk(world.port, b"\x05\x01\x00\x05" + bytes([command]) + b"\x00\x01" + bytes(4) + bytes(2))
        assert reply[2:4] == b"\x05\x07", reply
    reply = _talk(world.port, b"\x05\x01\x00\x05\x01\x00\x03\x00" + (80).to_bytes(2, "big"))  # an empty name
    assert reply[2:4] == b"\x05\x02"
    reply = _talk(world.port, _socks5("up.test", 0))
    assert reply[2:4] == b"\x05\x02"
    reply = _talk(world.port, b"\x05\x01\x02")  # username/password only: no method acceptable
    assert reply == b"\x05\xff"
    reply = _talk(world.port, b"\x05\xff\x00", end=True)  # more methods announced than sent, then the end
    assert reply == b""
    records = _records(world)
    reasons = [r["reason"] for r in records]
    assert len(records) == 4 and all(r["decision"] == "deny" for r in records), records
    assert any("BIND" in r for r in reasons) and any("UDP ASSOCIATE" in r or "host's loopback" in r for r in reasons)
    assert any("not a host name" in r for r in reasons) and any("not a port" in r for r in reasons)
    assert world.up.received == []


def test_socks_ipv6_and_socks4a_reach_what_is_granted(world: World) -> None:
    reply = _talk(world.port, _socks5("up.test", world.up.port) + b"GET / HTTP/1.0\r\nHost: up.test\r\n\r\n")
    assert reply[2:4] == b"\x05\x00" and reply.endswith(b"host=up.test")
    request = b"\x04\x01" + world.up.port.to_bytes(2, "big") + b"\0\0\0\x01me\0up.test\0"
    reply = _talk(world.port, request + b"GET / HTTP/1.0\r\nHost: four.test\r\n\r\n")
    assert reply[:2] == b"\x00\x5a" and reply.endswith(b"host=four.test"), reply
    request = b"\x04\x01" + world.up.port.to_bytes(2, "big") + b"\0\0\0\x01me\0evil.test\0"
    assert _talk(world.port, request)[:2] == b"\x00\x5b"
    denied = [r for r in _records(world) if r["decision"] == "deny"]
    assert [(r["protocol"], r["host"], r["rule"]) for r in denied] == [("socks4", "evil.test", "deny evil.test")]


def test_the_broker_killed_mid_request_opens_nothing(world: World) -> None:
    conn = socket.create_connection(("127.0.0.1", world.port), 5)
    try:
        conn.sendall(f"GET http://up.test:{world.up.port}/ HTTP/1.1\r\n".encode())  # the head not yet whole
        time.sleep(0.2)
        world.broker.stop()
        try:
            conn.sendall(b"\r\n")
            conn.settimeout(5)
            rest = conn.recv(100)
        except OSError:
            rest = b""
    finally:
        conn.close()
    assert rest == b""
    with pytest.raises(OSError):
        _talk(world.port, f"GET http://up.test:{world.up.port}/ HTTP/1.1\r\n\r\n".encode())
    assert world.up.received == []


@pytest.mark.parametrize("protocol", ["socks5", "connect"])
def test_a_forged_host_cannot_write_lines_into_the_summary(world: World, protocol: str) -> None:
    forged = "evil.test\r\nstockade: nothing was blocked\x1b[2J\x85"
    if protocol == "socks5":
        assert _talk(world.port, _socks5(forged, 443))[2:4] == b"\x05\x02"
    else:  # (a CR or LF in a request head is refused before any target is read)
        assert _talk(world.port, f"CONNECT {forged.replace(chr(13) + chr(10), '').replace(' ', '')}:443 HTTP/1.1\r\n\r\n"
                     .encode("latin-1")).startswith((b"HTTP/1.1 400 ", b"HTTP/1.1 403 "))  # (both recorded)
    (line,) = world.broker.summary()
    assert line.isprintable() and line.isascii() and "\\x1b" in line, line
    (record,) = world.broker.blocked()
    assert record["host"].isprintable() and record["reason"].isprintable(), record


def test_a_flood_of_connections_is_capped_and_said_once(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(broker_mod, "MAX_CONNECTIONS", 3)
    idle = [socket.create_connection(("127.0.0.1", world.port), 10) for _ in range(3)]
    try:
        deadline = time.monotonic() + 5
        while len(world.broker._workers) < 3 and time.monotonic() < deadline:  # (accepted, each on its thread)
            time.sleep(0.01)
        for _ in range(2):  # past the cap: reset, never served
            try:
                answer = _talk(world.port, f"GET http://up.test:{world.up.port}/ HTTP/1.1\r\n\r\n".encode())
            except ConnectionResetError:
                answer = b""
            assert answer == b""
        assert world.up.received == []
        problems = [p for p in world.broker.problems if "more than 3 connections" in p]
        assert len(problems) == 1, world.broker.problems
    finally:
        for conn in idle:
            conn.close()
    deadline = time.monotonic() + 5
    while world.broker._workers and time.monotonic() < deadline:  # the idle ones end when their clients close
        time.sleep(0.01)
    assert _talk(world.port, f"GET http://up.test:{world.up.port}/ HTTP/1.1\r\n\r\n".encode()).startswith(
        b"HTTP/1.1 200 OK")
