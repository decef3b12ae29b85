"""The broker's decisions, judged on policies compiled from text, and its proxy protocols
served on real sockets (loopback listeners handed to a real :class:`Broker`).

The sandboxed runs (bubblewrap, the bridge, clients inside) are in ``test_broker_sandbox.py``.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.compiler.pipeline import compile_policy
from stockade.diagnostics import StockadeError
from stockade.runtime.broker import HOST_LOOPBACK, Broker, Judge, TableResolver, proxy_environment
from tests.runtime.servers import LoopbackServer

POLICY = """\
policy "net"
network {
    default deny
    allow github.com pypi.org:443
    allow *.example.test
    allow 198.51.100.7
    allow 10.20.0.0/16:8080
    allow private-ok.test
    allow host-loopback:5432
    deny  host-loopback:6379
    deny  bad.example.test
    deny  203.0.113.66
}
"""

TABLE = TableResolver({
    "github.com": ["203.0.113.10"], "pypi.org": ["203.0.113.11", "2001:db8::11"],
    "api.example.test": ["203.0.113.12"], "bad.example.test": ["203.0.113.13"],
    "github.com.evil.test": ["203.0.113.14"], "example.test": ["203.0.113.15"],
    "private-ok.test": ["10.20.1.5"], "sneaky.example.test": ["10.0.0.5"],
    "meta.example.test": ["169.254.169.254"], "loop.example.test": ["127.0.0.1"],
    "v6meta.example.test": ["fd00:ec2::254"], "mixed.example.test": ["203.0.113.16", "192.168.1.1"],
    "cgnat.example.test": ["100.64.0.1"], "denied-addr.example.test": ["203.0.113.66"],
    "mapped.example.test": ["::ffff:10.0.0.1"],
})


def _ir(tmp_path: Path, text: str = POLICY):
    path = tmp_path / "net.policy"
    path.write_text(text)
    return compile_policy(str(path), workspace=str(tmp_path), home=str(tmp_path), tmpdir=str(tmp_path)).ir


@pytest.fixture()
def judge(tmp_path: Path) -> Judge:
    return Judge(_ir(tmp_path), TABLE)


@pytest.mark.parametrize("host, port, allowed, address, because", [
    ("github.com", 443, True, "203.0.113.10", "allow github.com at"),
    ("GitHub.COM.", 22, True, "203.0.113.10", "allow github.com at"),
    ("pypi.org", 443, True, "203.0.113.11", "allow pypi.org:443"),
    ("pypi.org", 80, False, None, "no rule allows it; default deny at"),        # wrong port
    ("github.com.evil.test", 443, False, None, "no rule allows it"),           # lookalike domain
    ("api.example.test", 443, True, "203.0.113.12", "allow *.example.test"),
    ("example.test", 443, False, None, "no rule allows it"),                   # apex is not `*.domain`
    ("bad.example.test", 443, False, None, "denied by a rule; deny bad.example.test"),
    ("203.0.113.10", 443, False, "203.0.113.10", "an address is judged as an address"),  # github's, literally
    ("198.51.100.7", 443, True, "198.51.100.7", "allow 198.51.100.7/32"),
    ("[2001:db8::11]", 443, False, "2001:db8::11", "judged as an address"),
    ("sneaky.example.test", 443, False, "10.0.0.5", "resolves to `10.0.0.5`, a private address"),
    ("meta.example.test", 80, False, "169.254.169.254", "a metadata address"),
    ("v6meta.example.test", 80, False, "fd00:ec2::254", "a metadata address"),
    ("cgnat.example.test", 80, False, "100.64.0.1", "a shared address"),
    ("mapped.example.test", 80, False, "10.0.0.1", "a private address"),
    ("mixed.example.test", 443, False, "192.168.1.1", "a private address"),   # every address is checked
    ("loop.example.test", 443, False, "127.0.0.1", "only `allow host-loopback:443` reaches it"),
    ("127.0.0.1", 5432, True, "127.0.0.1", "allow host-loopback:5432"),
    ("private-ok.test", 8080, True, "10.20.1.5", "allow private-ok.test"),  # its range is allowed explicitly
    ("private-ok.test", 443, False, "10.20.1.5", "a private address"),
    ("10.20.3.4", 8080, True, "10.20.3.4", "allow 10.20.0.0/16:8080"),
    ("denied-addr.example.test", 443, False, "203.0.113.66", "denied by a rule; deny 203.0.113.66/32"),
    ("nowhere.example.test", 443, False, None, "does not resolve"),
    (HOST_LOOPBACK, 5432, True, "127.0.0.1", "allow host-loopback:5432"),
    (HOST_LOOPBACK, 6379, False, "127.0.0.1", "denied by a rule; deny host-loopback:6379"),
    (HOST_LOOPBACK, 80, False, "127.0.0.1", "only `allow host-loopback:80`"),
    ("exa$mple.test", 80, False, None, "not a host name"),
])
def test_decisions(judge: Judge, host: str, port: int, allowed: bool, address: str | None, because: str) -> None:
    decision = judge.judge(host, port)
    assert decision.allowed is allowed, decision
    assert (decision.addresses[0] if decision.addresses else None) == address
    text = f"{decision.reason}; {decision.rule} at {decision.where}"
    assert because in text, text
    if decision.rule and decision.rule != "default deny":
        assert decision.where.startswith(str(Path(judge.ir.layers[0].file))), decision.where


def test_refused_names_are_never_looked_up(tmp_path: Path) -> None:
    asked: list[str] = []

    def resolver(name: str) -> list[str]:
        asked.append(name)
        return ["203.0.113.1"]

    judge = Judge(_ir(tmp_path), resolver)
    assert not judge.judge("exfiltrate-secret.attacker.test", 443).allowed
    assert not judge.judge("bad.example.test", 443).allowed
    assert judge.judge("github.com", 443).allowed
    assert asked == ["github.com"]


def test_default_allow_with_denies(tmp_path: Path) -> None:
    ir = _ir(tmp_path, 'policy "b"\nnetwork {\n    default allow\n    deny 169.254.169.254 evil.test\n}\n')
    judge = Judge(ir, TableResolver({"ok.test": ["203.0.113.20"], "evil.test": ["203.0.113.21"],
                                     "meta.test": ["169.254.169.254"], "lan.test": ["192.168.0.9"]}))
    assert judge.judge("ok.test", 443).allowed
    assert judge.judge("203.0.113.99", 22).allowed
    denied = judge.judge("evil.test", 443)
    assert not denied.allowed and denied.rule == "deny evil.test"
    meta = judge.judge("meta.test", 80)
    assert not meta.allowed and meta.rule == "deny 169.254.169.254/32" and meta.where.endswith(":4")
    assert not judge.judge("lan.test", 80).allowed          # default allow does not open the LAN
    assert not judge.judge("localhost", 80).allowed          # nor the host's loopback
    assert not judge.judge(HOST_LOOPBACK, 80).allowed


def test_host_loopback_needs_a_port(tmp_path: Path) -> None:
    with pytest.raises(StockadeError) as caught:
        _ir(tmp_path, 'policy "x"\nnetwork {\n    allow host-loopback\n}\n')
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "P120" and "needs a port" in diagnostic.message
    assert "host-loopback:5432" in (diagnostic.help or "")


def test_host_loopback_round_trips_through_the_formatter(tmp_path: Path) -> None:
    from stockade.policy_lang.formatter import format_policy
    from stockade.policy_lang.parser import parse

    def format_text(source: str) -> str:
        ast, problems = parse(source)
        assert ast is not None and not problems
        return format_policy(ast, source)

    text = 'policy "x"\n\nnetwork {\n    allow host-loopback:5432\n    deny  host-loopback:6379\n}\n'
    formatted = format_text(text)
    assert "host-loopback:5432" in formatted and "host-loopback:6379" in formatted
    assert format_text(formatted) == formatted
    ir = _ir(tmp_path, formatted)
    assert [str(rule.host) for rule in ir.network.rules] == ["host-loopback:5432", "host-loopback:6379"]
    assert ir.network_access(HOST_LOOPBACK, 5432).allowed
    assert not ir.network_access("localhost", 5432).allowed  # the sandbox's loopback is another thing
    assert not ir.network_access(HOST_LOOPBACK, 5433).allowed


def test_allow_any_does_not_reach_host_loopback(tmp_path: Path) -> None:
    ir = _ir(tmp_path, 'policy "x"\nnetwork {\n    default allow\n    allow *\n}\n')
    assert not ir.network_access(HOST_LOOPBACK, 5432).allowed


def test_proxy_environment_names_every_client() -> None:
    env = proxy_environment(3128, 1080)
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "PIP_PROXY", "npm_config_proxy",
                 "npm_config_https_proxy", "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY", "CARGO_HTTP_PROXY"):
        assert env[name] == "http://127.0.0.1:3128", name
    assert env["ALL_PROXY"] == env["all_proxy"] == "socks5h://127.0.0.1:1080"
    assert env["NO_PROXY"] == "localhost,127.0.0.1,::1"


# -- the protocols, on real sockets ------------------------------------------------------------


class _Upstream(LoopbackServer):
    """A loopback server that answers each connection with what it received first."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        super().__init__(threaded=False)

    def serve(self, conn: socket.socket) -> None:
        with conn:
            data = conn.recv(65536)
            self.seen.append(data)
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[Broker, int, _Upstream]]:
    """A broker whose 'sandbox' listeners are loopback sockets made here, for a policy that
    grants the upstream's port on the host loopback and maps `up.test` to it."""
    upstream = _Upstream()
    text = (f'policy "p"\nnetwork {{\n    default deny\n    allow up.test:{upstream.port}\n'
            f'    allow host-loopback:{upstream.port}\n}}\n')
    ir = _ir(tmp_path, text)
    broker = Broker(lambda: ir, resolver=TableResolver({"up.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}),
                    base={"command": "test"})
    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in broker.listen_specs()]
    broker.adopt(listeners)
    broker.serve()
    assert broker.wait_ready(5)
    port = listeners[0].getsockname()[1]
    try:
        yield broker, port, upstream
    finally:
        broker.stop()
        upstream.server.shutdown(socket.SHUT_RDWR)  # wakes its accept (a bare close would leave it listening)
        upstream.server.close()


def _exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), 5) as conn:
        conn.sendall(data)
        out = b""
        while chunk := conn.recv(65536):
            out += chunk
        return out


def test_http_forward_and_connect(served: tuple[Broker, int, _Upstream]) -> None:
    broker, port, upstream = served
    reply = _exchange(port, f"GET http://up.test:{upstream.port}/x?y HTTP/1.1\r\nHost: up.test\r\n"
                            f"Proxy-Connection: keep-alive\r\n\r\n".encode())
    assert reply.endswith(b"ok")
    assert upstream.seen[-1].startswith(b"GET /x?y HTTP/1.1\r\n") and b"Proxy-Connection" not in upstream.seen[-1]
    reply = _exchange(port, f"CONNECT up.test:{upstream.port} HTTP/1.1\r\n\r\nhello".encode())
    assert reply.startswith(b"HTTP/1.1 200 Connection established\r\n\r\n") and reply.endswith(b"ok")
    blocked = _exchange(port, f"CONNECT other.test:{upstream.port} HTTP/1.1\r\n\r\n".encode())
    assert blocked.startswith(b"HTTP/1.1 403 ") and b"other.test" in blocked and b"no rule allows it" in blocked
    broker.stop()  # (an allowed connection is recorded when it ends)
    events = {(e["protocol"], e["decision"]): e for e in broker.events}  # (recorded as they end)
    assert sorted(events) == [("connect", "allow"), ("connect", "deny"), ("http", "allow")]
    forwarded = events["http", "allow"]
    assert forwarded["bytes_received"] > 0 and forwarded["bytes_sent"] > 0 and forwarded["address"] == "127.0.0.1"
    refused = events["connect", "deny"]
    assert refused["rule"] == "default deny" and refused["command"] == "test" and refused["host"] == "other.test"
    assert broker.summary() == [f"blocked: other.test:{upstream.port} (no rule allows it; default deny at "
                                f"{refused['rule_at']})"]


def test_socks5_with_a_name(served: tuple[Broker, int, _Upstream]) -> None:
    broker, port, upstream = served
    name = b"up.test"
    request = b"\x05\x01\x00" + b"\x05\x01\x00\x03" + bytes([len(name)]) + name + upstream.port.to_bytes(2, "big")
    reply = _exchange(port, request + b"ping")
    assert reply[:2] == b"\x05\x00" and reply[2:4] == b"\x05\x00" and reply.endswith(b"ok")
    assert upstream.seen[-1] == b"ping"
    name = b"evil.test"
    request = b"\x05\x01\x00" + b"\x05\x01\x00\x03" + bytes([len(name)]) + name + (443).to_bytes(2, "big")
    reply = _exchange(port, request)
    assert reply[2:4] == b"\x05\x02"  # connection not allowed by ruleset
    assert broker.blocked()[-1]["host"] == "evil.test" and broker.blocked()[-1]["protocol"] == "socks5"


def test_stopped_broker_refuses(served: tuple[Broker, int, _Upstream]) -> None:
    broker, port, upstream = served
    broker.stop()
    with pytest.raises(OSError):
        _exchange(port, f"CONNECT up.test:{upstream.port} HTTP/1.1\r\n\r\n".encode())
    assert upstream.seen == []
