"""Adversarial clients inside real ``stockade run`` sandboxes, against the broker: the host's
loopback services in every spelling (directly and through the proxy), IP literals spelt as
integers, names resolving to private, metadata, shared or loopback addresses, a second
process, raw/packet/unix sockets, a resolver that changes its answer (rebinding), the broker
stopped mid-run.  Servers: the network-namespace host and site of ``test_broker_sandbox`` and
a service on the host's loopback that no rule grants (it must never accept a connection).

Needs root (``ip netns``) and bubblewrap; skipped otherwise.
"""

# ruff: noqa: F811  (the test functions take the `net` fixture imported from test_broker_sandbox)
from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.runtime.broker import Broker, BrokerHooks, TableResolver
from tests.runtime.servers import LoopbackServer

from .netns_hosts import netns_available
from .test_broker_sandbox import Net, _net_records, _run, net  # noqa: F401

pytestmark = pytest.mark.skipif(not netns_available() or shutil.which("bwrap") is None,
                                reason="needs root (ip netns) and bubblewrap")

HERE = Path(__file__).resolve().parent


class _HostService(LoopbackServer):
    """A service on the host's 127.0.0.1 that no rule grants: counts what it accepts."""

    def __init__(self) -> None:
        super().__init__(threaded=False)

    def serve(self, conn: socket.socket) -> None:
        with conn:
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nsecret\n")


@pytest.fixture()
def service() -> Iterator[_HostService]:
    server = _HostService()
    try:
        yield server
    finally:
        server.close()


def _resolver(net: Net, **extra: list[str]) -> TableResolver:
    table = {name: list(addresses) for name, addresses in net.resolver.table.items()}
    table.update({name.replace("_", "."): addresses for name, addresses in extra.items()})
    return TableResolver(table)


def _probe(net: Net, *args: str, hooks: BrokerHooks | None = None) -> list[str]:
    shutil.copy(HERE / "netprobe_probe.py", net.workspace / "netprobe_probe.py")
    _, out, _ = _run(net, "python3", "netprobe_probe.py", *args, hooks=hooks or BrokerHooks(
        resolver=net.resolver))
    return out.splitlines()


def _capturing(net: Net) -> None:
    seen: list[Broker] = []
    _run(net, "true", hooks=BrokerHooks(resolver=net.resolver, on_start=seen.append))
    if not (seen and seen[0].capture):
        pytest.skip("the broker's listeners were opened without the stub resolver and capture here")


#: the host's loopback, as a client may spell it
LOOPBACK = ["127.0.0.1", "127.1", "2130706433", "0x7f.1", "0177.0.0.1", "::ffff:127.0.0.1", "::1", "0.0.0.0", "::",
            "localhost"]


def test_the_host_loopback_is_never_reached_directly(net: Net, service: _HostService) -> None:
    args = [word for host in LOOPBACK for word in (host, str(service.port))]
    lines = _probe(net, "connect", *args)
    assert len(lines) == len(LOOPBACK) and all("-> failed" in line for line in lines), lines
    assert service.accepted == 0


def test_the_host_loopback_is_refused_through_the_proxy_in_any_spelling(net: Net, service: _HostService) -> None:
    urls = [f"http://{'[' + h + ']' if ':' in h else h}:{service.port}/?spelling" for h in LOOPBACK]
    lines = _probe(net, "proxy", *urls)
    assert len(lines) == len(urls) and all("-> failed HTTPError: HTTP Error 403" in line for line in lines), lines
    assert service.accepted == 0
    records = _net_records(net, "?spelling")
    assert len(records) == len(urls) and all(r["decision"] == "deny" and r["port"] == service.port for r in records)
    assert all(r["address"] in ("127.0.0.1", "::1") and "loopback" in r["reason"] for r in records), [
        (r["host"], r["address"], r["reason"], r["rule"]) for r in records]
    assert all(r["rule"] == "default deny" and r["rule_at"].startswith(str(net.policy)) for r in records), records


def test_ip_literals_spelt_otherwise_are_judged_as_addresses(net: Net) -> None:
    _capturing(net)
    value = int.from_bytes(socket.inet_aton(net.host.address), "big")
    a, b, c, d = net.host.address.split(".")
    spellings = [str(value), hex(value), f"{a}.{b}.{int(c) * 256 + int(d)}", f"::ffff:{net.host.address}"]
    lines = _probe(net, "connect", *[word for s in spellings for word in (s, "80")])
    assert len(lines) == len(spellings) and all("-> failed" in line for line in lines), lines
    records = [r for r in _net_records(net, "netprobe_probe.py connect") if str(value) in r["command"]]
    assert len(records) == len(spellings), records
    assert all(r["decision"] == "deny" and r["host"] == net.host.address and r["protocol"] == "capture"
               and "judged as an address" in r["reason"] and r["rule"] == "default deny" for r in records), records


@pytest.mark.parametrize("name, address, because", [
    ("lan.example.test", "10.99.0.1", "a private address"),
    ("meta.example.test", "169.254.169.254", "a metadata address"),
    ("cgnat.example.test", "100.64.0.9", "a shared address"),
    ("ula.example.test", "fd00::1", "a private address"),
    ("loop.example.test", "::ffff:127.0.0.1", "host's loopback"),
    ("compat.example.test", "::7f00:1", "a reserved address"),
    ("zero.example.test", "0.0.0.0", "host's loopback"),
])
def test_names_resolving_to_special_addresses_are_refused_directly(net: Net, name: str, address: str,
                                                                   because: str) -> None:
    _capturing(net)
    hooks = BrokerHooks(resolver=_resolver(net, **{name.replace(".", "_"): [address]}))
    lines = _probe(net, "connect", name, "443", hooks=hooks)
    assert len(lines) == 1 and "-> failed" in lines[0], lines
    (record,) = [r for r in _net_records(net, f"connect {name} 443") if r["host"] == name]
    assert record["decision"] == "deny" and because in record["reason"] and record["protocol"] == "capture"
    assert record["rule"] == "default deny" and record["rule_at"].startswith(str(net.policy)), record


def test_a_second_process_is_judged_the_same(net: Net) -> None:
    _capturing(net)
    lines = _probe(net, "fork", net.host.address, "80")
    assert len(lines) == 1 and "-> failed" in lines[0], lines
    (record,) = _net_records(net, f"fork {net.host.address} 80")
    assert record["decision"] == "deny" and record["host"] == net.host.address


def test_raw_packet_and_unix_sockets_are_refused(net: Net) -> None:
    lines = _probe(net, "sockets")
    assert len(lines) == 7 and all("-> failed PermissionError" in line for line in lines), lines


def test_the_address_checked_is_the_address_connected(net: Net) -> None:
    """A resolver whose answer changes (DNS rebinding): each connection goes to the address
    its own decision checked, and a change to a loopback answer is refused, never followed."""
    answers = iter([[net.host.address], ["127.0.0.1"], ["127.0.0.1"], ["127.0.0.1"]])

    def rebinding(name: str) -> list[str]:
        if name == "pypi.test":
            return next(answers)
        return net.resolver(name)

    lines = _probe(net, "proxy", "http://pypi.test/hello.txt?rebind", "http://pypi.test/hello.txt?rebind",
                   hooks=BrokerHooks(resolver=rebinding))
    assert lines[0].endswith("-> got 200 hello through the broker"), lines
    assert "-> failed HTTPError: HTTP Error 403" in lines[1], lines
    allowed, refused = sorted(_net_records(net, "?rebind"), key=lambda r: r["decision"])
    assert (allowed["decision"], allowed["address"]) == ("allow", net.host.address)
    assert (refused["decision"], refused["address"]) == ("deny", "127.0.0.1") and "loopback" in refused["reason"]


def test_the_broker_stopped_mid_run_opens_nothing_directly(net: Net) -> None:
    _capturing(net)
    marker, go = net.workspace / "probe-first", net.workspace / "probe-go"
    for path in (marker, go):
        path.unlink(missing_ok=True)
    stopped = threading.Event()

    def on_start(broker: Broker) -> None:
        def kill() -> None:
            deadline = time.monotonic() + 60
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            broker.stop()
            stopped.set()
            go.touch()
        threading.Thread(target=kill, daemon=True).start()

    lines = _probe(net, "twice", "pypi.test", "80", str(marker), str(go),
                   hooks=BrokerHooks(resolver=net.resolver, on_start=on_start))
    assert stopped.is_set()
    assert len(lines) == 2 and "-> got HTTP/1.0 200" in lines[0], lines
    assert "-> failed" in lines[1] and "got" not in lines[1], lines


def test_fake_addresses_through_the_proxy_are_their_names(net: Net) -> None:
    """A client that resolves a name itself (the stub's fake address) and then asks the proxy
    for the address reaches that name, judged as the name; a fake address the stub did not hand
    out is refused and recorded (real addresses in the stub's range are not reachable)."""
    _capturing(net)
    lines = _probe(net, "resolve-proxy", "pypi.test", "/hello.txt?fake-run")
    assert lines == [lines[0].split(" -> ")[0] + " -> got 200 hello through the broker"], lines
    (record,) = _net_records(net, "?fake-run")
    assert (record["decision"], record["host"], record["address"]) == ("allow", "pypi.test", net.host.address)
    lines = _probe(net, "proxy", "http://198.19.255.200/?unfaked", "http://3323199432/?unfaked")
    assert len(lines) == 2 and all("-> failed HTTPError: HTTP Error 403" in line for line in lines), lines
    records = _net_records(net, "?unfaked")
    assert len(records) == 2 and all("a fake address the stub resolver did not hand out" in r["reason"]
                                      and r["rule"] == "default deny" for r in records), records
