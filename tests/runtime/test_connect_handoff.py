"""The connect handoff for real (:mod:`stockade.runtime.handoff`): `stockade run` under
bubblewrap, the launcher compiled with the host's C compiler, clients inside the sandbox
(Python, curl), servers on the host's loopback, names mapped by the broker's table
resolver.  Attempts to re-point a handed socket run only inside the sandbox
(``handoff_probe.py``).

Needs bubblewrap and a C compiler; skipped otherwise.
"""

from __future__ import annotations

import hashlib
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

from stockade.runtime import handoff
from stockade.runtime.broker import BrokerHooks, TableResolver
from stockade.runtime.session import RunOutcome, run
from tests.runtime.servers import LoopbackServer

from .conftest import box_root

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("bwrap") is None or handoff._compiler(os.environ) is None
    or os.uname().machine not in ("x86_64", "aarch64"), reason="needs Linux, bubblewrap and a C compiler")

BODY = os.urandom(3 << 20)


class _Server(LoopbackServer):
    """An HTTP/1.0 server on a loopback address of the host that sends :data:`BODY`,
    counting the connections it accepted."""

    def serve(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            try:
                while b"\r\n\r\n" not in head:
                    data = conn.recv(65536)
                    if not data:
                        return
                    head += data
                conn.sendall(f"HTTP/1.0 200 OK\r\nContent-Length: {len(BODY)}\r\n\r\n".encode() + BODY)
            except OSError:
                pass


class _Holder(LoopbackServer):
    """A server on the host's loopback that sends 1000 bytes and never closes a connection."""

    def __init__(self) -> None:
        self.held: list[socket.socket] = []
        super().__init__(threaded=False)

    def serve(self, conn: socket.socket) -> None:
        conn.sendall(b"h" * 1000)
        self.held.append(conn)

    def close(self) -> None:
        super().close()
        for conn in self.held:
            conn.close()


@dataclass
class World:
    root: Path
    workspace: Path
    home: Path
    policy: Path
    audit: Path
    server: _Server
    closed: _Server
    server6: _Server | None
    resolver: TableResolver
    holder: _Holder


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    root = box_root()
    mp = pytest.MonkeyPatch()
    server, closed, holder = _Server(), _Server(), _Holder()
    server6 = _Server("::1") if _has_ipv6_loopback() else None
    try:
        for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
            (root / name).mkdir()
            mp.setenv(name, str(root / name))
        mp.delenv("STOCKADE_CACHE_DIR", raising=False)
        mp.delenv(handoff.SWITCH_VARIABLE, raising=False)
        mp.delenv(handoff.COMPILER_VARIABLE, raising=False)
        workspace = root / "ws"
        home = workspace / "home"
        home.mkdir(parents=True)
        shutil.copy(HERE / "handoff_probe.py", workspace / "probe.py")
        grants = f"host-loopback:{server.port} host-loopback:{holder.port}" + (f" host-loopback:{server6.port}" if server6 else "")
        policy = root / "handoff.policy"
        policy.write_text(f"""\
policy "handoff-test"

filesystem {{
    read  /
    write $WORKSPACE
}}

network {{
    default deny
    allow   localhost
    allow   {grants}
    allow   svc.test:{server.port} only443.test:443
}}

environment {{
    keep PATH HOME LANG
}}

commands {{
    unknown-effects allow
}}
""")
        resolver = TableResolver({"svc.test": ["127.0.0.1"], "only443.test": ["127.0.0.1"]})
        yield World(root, workspace, home, policy, root / "audit.jsonl", server, closed, server6, resolver, holder)
    finally:
        for each in (server, closed, server6, holder):
            if each is not None:
                each.close()
        mp.undo()
        shutil.rmtree(root, ignore_errors=True)


def _run(world: World, *argv: str, hooks: BrokerHooks | None = None) -> tuple[RunOutcome, str, str]:
    out, err = bytearray(), bytearray()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(world.home), "LANG": "C.UTF-8"}
    outcome = run(list(argv), policy=str(world.policy), workspace=str(world.workspace), audit=str(world.audit),
                  approve=True, stdout=out.extend, stderr=err.extend, environ=env,
                  broker=hooks or BrokerHooks(resolver=world.resolver))
    assert outcome.ran, outcome.reasons
    return outcome, out.decode(), err.decode()


def _probe(world: World, *args: str, hooks: BrokerHooks | None = None) -> tuple[RunOutcome, str, str]:
    return _run(world, "python3", "probe.py", *args, hooks=hooks)


def _records(world: World, command_part: str, event: str = "net") -> list[dict]:
    records = [json.loads(line) for line in world.audit.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("event") == event and command_part in r.get("command", "")]


def _digest() -> str:
    return f"{len(BODY)} {hashlib.sha256(BODY).hexdigest()}"


def test_a_granted_download_is_handed_over_intact(world: World) -> None:
    outcome, out, err = _probe(world, "download", "127.0.0.1", str(world.server.port), "intact")
    assert (outcome.exit_status, out.strip()) == (0, _digest()), err
    (run_record,) = _records(world, "intact", "run")
    assert run_record["net_handoff"] == "handoff"
    (record,) = _records(world, "intact")
    assert record["decision"] == "allow" and record["handed_over"] is True
    assert record["protocol"] == "host-loopback" and record["address"] == "127.0.0.1"
    assert record["rule"] == f"allow host-loopback:{world.server.port}"
    assert record["rule_at"].startswith(str(world.policy))
    if "bytes" in record:  # (no sock_diag destroy messages here: the record says so, with no counts)
        assert record["bytes"] == "unknown" and "bytes_received" not in record
    else:  # the kernel's counts: the head and body received (a FIN may add one), the request sent
        assert len(BODY) < record["bytes_received"] <= len(BODY) + 100
        assert 20 < record["bytes_sent"] < 100


def test_a_granted_port_is_judged_from_the_plan_without_loading_the_policy(world: World) -> None:
    brokers: list[object] = []
    outcome, out, err = _probe(world, "download", "127.0.0.1", str(world.server.port), "from-plan",
                               hooks=BrokerHooks(resolver=world.resolver, on_start=brokers.append))
    assert (outcome.exit_status, out.strip()) == (0, _digest()), err
    (broker,) = brokers
    assert broker.judge is None  # type: ignore[attr-defined]  # (the plan's decision: no IR loaded)
    (record,) = _records(world, "from-plan")
    assert record["rule"] == f"allow host-loopback:{world.server.port}"
    assert record["rule_at"].startswith(str(world.policy))


def test_a_connect_from_another_thread(world: World) -> None:
    """(a notification names the thread, not the process)"""
    outcome, out, err = _probe(world, "thread", "127.0.0.1", str(world.server.port))
    assert (outcome.exit_status, out.strip()) == (0, _digest()), err
    (record,) = _records(world, "probe.py thread")
    assert record["handed_over"]


def test_a_connection_still_open_at_the_end_is_counted(world: World) -> None:
    """(the peer never closes: the handed socket outlives the sandbox, its counts are asked for)"""
    outcome, out, err = _probe(world, "leave-open", "127.0.0.1", str(world.holder.port))
    assert (outcome.exit_status, out.strip()) == (0, "1000"), err
    (record,) = _records(world, "leave-open")
    assert record["handed_over"] and record["decision"] == "allow"
    if "bytes" in record:
        assert record["bytes"] == "unknown" and "bytes_sent" not in record
    else:
        assert record["bytes_received"] == 1000 and record["bytes_sent"] in (5, 6)


def test_curl_download_through_the_handoff(world: World) -> None:
    if shutil.which("curl") is None:
        pytest.skip("no curl")
    outcome, out, err = _run(world, "curl", "-sS", "--noproxy", "*", "-o", "got.bin", "-w", "%{http_code}",
                             f"http://127.0.0.1:{world.server.port}/curl")
    assert (outcome.exit_status, out) == (0, "200"), err
    assert (world.workspace / "got.bin").read_bytes() == BODY


def test_an_ungranted_loopback_port_is_the_sandboxs_own(world: World) -> None:
    before = world.closed.accepted
    _outcome, out, _ = _probe(world, "refused", "127.0.0.1", str(world.closed.port))
    assert out.strip() == "failed ECONNREFUSED"
    assert world.closed.accepted == before  # the host's port was never reached


def test_a_fake_address_is_handed_over_and_a_refused_one_recorded(world: World) -> None:
    outcome, out, err = _probe(world, "name", "svc.test", str(world.server.port))
    address, size = out.split()
    assert address.startswith("198.1") and int(size) == len(BODY), err
    (record,) = [r for r in _records(world, "name svc.test") if r["protocol"] == "capture"]
    assert record["decision"] == "allow" and record["host"] == "svc.test" and record.get("handed_over")
    assert record["rule"] == f"allow svc.test:{world.server.port}"
    # a name allowed at another port only: refused, with its record and rule
    outcome, out, _ = _probe(world, "name-refused", "only443.test", str(world.server.port))
    fake, verdict = out.split(" ", 1)
    assert fake.startswith("198.1") and verdict.strip() == "failed ECONNREFUSED"
    (record,) = _records(world, "name-refused only443.test")
    assert record["decision"] == "deny" and record["host"] == "only443.test" and record["port"] == world.server.port
    assert record["rule"] == "default deny" and record["rule_at"].startswith(str(world.policy))
    assert any(line.startswith(f"blocked: only443.test:{world.server.port}") for line in outcome.blocked)
    # a fake address the stub did not hand out
    outcome, out, _ = _probe(world, "refused", "198.18.200.7", "443")
    assert out.strip() == "failed ECONNREFUSED"
    (record,) = _records(world, "refused 198.18.200.7")
    assert record["decision"] == "deny" and "did not hand out" in record["reason"]


def test_nonblocking_connect(world: World) -> None:
    _outcome, out, err = _probe(world, "nonblocking", "127.0.0.1", str(world.server.port))
    lines = out.splitlines()
    assert lines[0] in ("connect 0", "connect EINPROGRESS") and lines[1:] == [
        "so_error 0", "nonblocking True", "cloexec True", f"body {len(BODY)}"], out + err


def test_ipv6_loopback(world: World) -> None:
    if world.server6 is None:
        pytest.skip("no ::1 on this host")
    outcome, out, err = _probe(world, "download", "::1", str(world.server6.port), "six")
    assert (outcome.exit_status, out.strip()) == (0, _digest()), err
    (record,) = _records(world, "download ::1")
    assert record["handed_over"] and record["address"] == "::1"


def test_the_other_paths_still_work(world: World) -> None:
    # the HTTP proxy (clients that read the proxy variables still relay)
    url = f"http://svc.test:{world.server.port}/proxied"
    if shutil.which("curl") is not None:
        outcome, out, err = _run(world, "curl", "-sS", "-o", "proxied.bin", url)
        assert outcome.exit_status == 0, err
        assert (world.workspace / "proxied.bin").read_bytes() == BODY
        (record,) = _records(world, "/proxied")
        assert record["protocol"] == "http" and not record.get("handed_over") and record["bytes_received"] > len(BODY)
    outcome, out, err = _run(world, "python3", "-c", "import urllib.request, sys; "
                             f"sys.stdout.write(str(len(urllib.request.urlopen('{url}py', timeout=20).read())))")
    assert (outcome.exit_status, out) == (0, str(len(BODY))), err
    # a server on the sandbox's own loopback
    outcome, out, err = _probe(world, "own-server")
    assert (outcome.exit_status, out.strip()) == (0, "inside"), err
    # a UDP lookup through the stub resolver
    outcome, out, err = _probe(world, "resolve", "svc.test")
    assert outcome.exit_status == 0 and out.strip().startswith("198.1"), err


def test_a_handed_socket_cannot_be_repointed(world: World) -> None:
    _outcome, out, err = _probe(world, "unspec", "127.0.0.1", str(world.server.port))
    assert out.splitlines() == ["again EISCONN", "other EISCONN", "unspec -1 ENOTSUP", "listen EINVAL",
                                "bind EINVAL", f"still {len(BODY)}"], out + err


def test_init_is_out_of_reach_and_the_listener_cannot_be_shadowed(world: World) -> None:
    """bubblewrap's init (pid 1 inside) has no launcher filter: the command must not be able
    to make it disconnect a handed socket; nor may it install a listener of its own."""
    _outcome, out, err = _probe(world, "pid1")
    assert out.splitlines() == ["attach EPERM", "mem EACCES", "listener EBUSY"], out + err


def test_fast_open_is_refused(world: World) -> None:
    _outcome, out, _err = _probe(world, "fastopen", "127.0.0.1", str(world.server.port))
    assert out.splitlines() == ["fresh ENOTSUP", "handed ENOTSUP"]  # (EOPNOTSUPP), out + err


def test_the_command_sees_itself_as_without_the_launcher(world: World) -> None:
    with_launcher = _probe(world, "self")[1]
    without = _probe(world, "self", hooks=BrokerHooks(resolver=world.resolver, handoff=False))[1]
    assert with_launcher == without
    assert "argv [b'python3', b'probe.py']" in with_launcher and "exe /" in with_launcher


def test_without_a_compiler_the_relay_carries_the_connection(world: World, monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    monkeypatch.setenv(handoff.COMPILER_VARIABLE, str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # (no launcher compiled yet)
    outcome, out, err = _probe(world, "download", "127.0.0.1", str(world.server.port), "nocc")
    assert (outcome.exit_status, out.strip()) == (0, _digest()), err
    (run_record,) = _records(world, "nocc", "run")
    assert run_record["net_handoff"].startswith("relay: no C compiler")
    (record,) = _records(world, "nocc")
    assert record["protocol"] == "host-loopback" and not record.get("handed_over")
    assert record["bytes_received"] > len(BODY)


def test_broker_stopped_mid_run(world: World) -> None:
    marker, go = world.workspace / "first-done", world.workspace / "go"
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

    before = world.server.accepted
    _outcome, out, err = _probe(world, "twice", "127.0.0.1", str(world.server.port), str(marker), str(go),
                               hooks=BrokerHooks(resolver=world.resolver, on_start=on_start))
    assert stopped.is_set()
    assert out.splitlines() == [f"first {len(BODY)}", "second ENOSYS"], out + err
    assert world.server.accepted == before + 1


def test_a_missing_or_unexecutable_command_reads_as_without_the_launcher(world: World) -> None:
    script = world.workspace / "noshebang"
    script.write_text("echo ran by sh\n")
    script.chmod(0o755)
    plain = world.workspace / "plain.txt"
    plain.write_text("text\n")
    for argv in (["no-such-command-xyz"], ["./plain.txt"], ["./noshebang"]):
        seen = []
        for handoff_on in (True, False):
            outcome, out, err = _run(world, *argv, hooks=BrokerHooks(resolver=world.resolver, handoff=handoff_on))
            seen.append((outcome.exit_status, out, err.replace("stockade: ", "")))
        assert seen[0] == seen[1], seen
    assert seen[0][:2] == (0, "ran by sh\n")
