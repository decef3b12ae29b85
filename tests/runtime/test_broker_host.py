"""The broker on the host's own loopback, as ``stockade run`` starts it for a Seatbelt
sandbox (macOS shares the host's loopback; the profile admits only the broker's port).

These parts run anywhere: a real :class:`Broker` listening on one kernel-chosen port of
``127.0.0.1`` for both proxy protocols, the ``sandbox-exec`` prefix given that port, and
the compiled plan of a Seatbelt target carrying the broker.  ``sandbox-exec`` itself runs
only on macOS (``tests/platform/``).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from stockade.compiler.pipeline import compile_policy
from stockade.diagnostics import StockadeError
from stockade.runtime.broker import Broker, TableResolver
from stockade.runtime.sandbox import seatbelt_argv
from stockade.runtime.session import seatbelt_broker_prefix

from .test_broker import _exchange, _Upstream


def test_one_host_port_serves_http_and_socks_and_judges_by_the_policy(tmp_path: Path) -> None:
    upstream = _Upstream()
    up = upstream.port
    policy = tmp_path / "p.policy"
    policy.write_text(f'policy "p"\nnetwork {{\n    default deny\n    allow up.test:{up}\n'
                      f'    allow host-loopback:{up}\n}}\n')
    ir = compile_policy(str(policy), workspace=str(tmp_path), home=str(tmp_path), tmpdir=str(tmp_path)).ir
    broker = Broker(lambda: ir, resolver=TableResolver({"up.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}),
                    base={"command": "test"})
    port = broker.listen_on_host()
    broker.serve()
    try:
        assert broker.wait_ready(5)
        env = broker.environment()
        assert env["HTTPS_PROXY"] == f"http://127.0.0.1:{port}" and env["ALL_PROXY"] == f"socks5h://127.0.0.1:{port}"
        reply = _exchange(port, f"CONNECT up.test:{up} HTTP/1.1\r\n\r\nhello".encode())
        assert reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b"ok") and upstream.seen[-1] == b"hello"
        name = b"up.test"
        with socket.create_connection(("127.0.0.1", port), 5) as conn:  # SOCKS5 on the same port
            conn.sendall(b"\x05\x01\x00")
            assert conn.recv(2) == b"\x05\x00"
            conn.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + up.to_bytes(2, "big"))
            assert conn.recv(10)[:2] == b"\x05\x00"
        refused = _exchange(port, f"CONNECT other.test:{up} HTTP/1.1\r\n\r\n".encode())
        assert refused.startswith(b"HTTP/1.1 403 ") and b"other.test" in refused
    finally:
        broker.stop()
        upstream.server.shutdown(socket.SHUT_RDWR)
        upstream.server.close()
    assert [e["decision"] for e in broker.events if e["host"] == "other.test"] == ["deny"]
    with pytest.raises(OSError):  # stopped: the port refuses, never opens
        socket.create_connection(("127.0.0.1", port), 2)


def test_the_sandbox_exec_prefix_gets_the_broker_port() -> None:
    prefix = seatbelt_argv("(version 1)\n(deny default)\n", {"BROKER_PORT": "0", "WORKSPACE": "/w"})
    out = seatbelt_broker_prefix(prefix, 49152)
    assert out.count("BROKER_PORT=49152") == 1 and out[out.index("BROKER_PORT=49152") - 1] == "-D"
    assert "BROKER_PORT=0" not in out and out[-1] == "--" and len(out) == len(prefix)
    assert "WORKSPACE=/w" in out
    with pytest.raises(StockadeError) as info:  # a profile that does not admit the broker: refused, not run open
        seatbelt_broker_prefix(seatbelt_argv("(version 1)\n(deny default)\n", {"WORKSPACE": "/w"}), 49152)
    assert info.value.diagnostics[0].code == "R510"


def test_a_seatbelt_plan_carries_the_broker(tmp_path: Path) -> None:
    from stockade.backends.base import compile_ir
    from stockade.runtime.plan import build_plan, plan_problem

    policy = tmp_path / "p.policy"
    policy.write_text('policy "p"\nfilesystem {\n    read /\n}\nnetwork {\n    default deny\n    allow pypi.org\n}\n')
    ir = compile_policy(str(policy), workspace="/w", home="/h", tmpdir="/t", platform="darwin").ir
    artifact = compile_ir(ir, "seatbelt", by_runtime=True)
    plan = build_plan(ir, artifact, "seatbelt", {})
    assert plan["broker"]["loopback"] == [] and plan["params"]["BROKER_PORT"] == "0"
    loaded = {**plan, "bwrap": None, "bwrap_writable": None, "machine": "arm64", "searched": [],
              "placeholder_files": {}}  # as a run loads it
    assert plan_problem(loaded) is None


def test_a_host_broker_that_cannot_listen_stops_the_run(tmp_path: Path) -> None:
    """No port on the host's loopback: R508, and the command is never started without its broker."""
    from stockade.runtime.session import _HostBridge

    class NoPort(Broker):
        def listen_on_host(self) -> int:
            raise OSError(98, "Address already in use")

    with pytest.raises(StockadeError) as info:
        _HostBridge(NoPort(lambda: None))  # type: ignore[arg-type,return-value]
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.code == "R508" and "did not run" in diagnostic.message
