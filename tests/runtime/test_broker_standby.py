"""A run's standby (:class:`stockade.runtime.netns.Standby`): it holds the sandbox's
listeners until the sandbox first uses the network, then makes the broker, which serves
what waited in the queues; stopped before that, or when the broker cannot be made, the
listeners close and connections are refused.

The 'sandbox' listeners here are loopback sockets made by the test (as in
``test_broker.py``); the standby and the broker are real.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from stockade.runtime.broker import Broker, TableResolver
from stockade.runtime.netns import Standby

from .test_broker import _exchange, _ir, _Upstream


def _held(make: object) -> tuple[Standby, int]:
    standby = Standby(make, may_capture=False)  # type: ignore[arg-type]
    (specs,) = standby.spec_attempts()  # without capture: the HTTP proxy's and the SOCKS port
    assert [spec.kind for spec in specs] == ["proxy", "proxy"]
    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in specs]
    standby.hold(listeners, 0)
    return standby, listeners[0].getsockname()[1]


def test_the_broker_is_made_at_the_first_connection_and_serves_it(tmp_path: Path) -> None:
    upstream = _Upstream()
    ir = _ir(tmp_path, f'policy "p"\nnetwork {{\n    default deny\n    allow up.test:{upstream.port}\n'
                       f'    allow host-loopback:{upstream.port}\n}}\n')
    made: list[Broker] = []

    def make() -> Broker:
        made.append(Broker(lambda: ir, resolver=TableResolver({"up.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}),
                           base={"command": "test"}))
        return made[-1]

    standby, port = _held(make)
    try:
        assert made == [] and standby.broker is None and standby.summary() == []
        reply = _exchange(port, f"CONNECT up.test:{upstream.port} HTTP/1.1\r\n\r\nhello".encode())
        assert reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b"ok") and upstream.seen[-1] == b"hello"
        assert len(made) == 1 and standby.broker is made[0]
        refused = _exchange(port, f"CONNECT other.test:{upstream.port} HTTP/1.1\r\n\r\n".encode())
        assert refused.startswith(b"HTTP/1.1 403 ")
    finally:
        standby.stop()
        upstream.server.shutdown(socket.SHUT_RDWR)
        upstream.server.close()
    assert len(made) == 1
    assert [record["host"] for record in standby.blocked()] == ["other.test"]
    assert len(standby.summary()) == 1 and "other.test" in standby.summary()[0] and standby.problems == []
    with pytest.raises(OSError):  # stopped: the port refuses, never opens
        socket.create_connection(("127.0.0.1", port), 2)


def test_a_standby_stopped_before_any_use_makes_no_broker_and_refuses() -> None:
    made: list[object] = []
    standby, port = _held(lambda: made.append(1))
    standby.stop()
    assert made == [] and standby.broker is None and standby.summary() == [] and not standby.handoff_active()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), 2)


def test_a_broker_that_cannot_be_made_refuses_every_connection() -> None:
    def make() -> Broker:
        raise RuntimeError("no broker here")

    standby, port = _held(make)
    try:
        try:  # queued, then closed unanswered (reset, however far the client got)
            with socket.create_connection(("127.0.0.1", port), 5) as conn:
                conn.sendall(b"CONNECT up.test:443 HTTP/1.1\r\n\r\n")
                assert conn.recv(65536) == b""
        except (ConnectionResetError, BrokenPipeError):
            pass
        with pytest.raises(OSError):  # the listeners are closed: later connections are refused
            socket.create_connection(("127.0.0.1", port), 2)
    finally:
        standby.stop()
    assert standby.broker is None
    assert standby.problems == ["the network broker could not start, so it refused every connection: no broker here"]
