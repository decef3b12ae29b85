"""The loopback servers the runtime's network tests share: one accept loop.

A test's server subclasses :class:`LoopbackServer` and says what it does with each
connection (:meth:`LoopbackServer.serve`); the base listens on a loopback address of the
host (a port the kernel chooses), accepts on a thread of its own, counts what it accepted
and serves each connection on a thread of its own (``threaded=False``: on the accepting
thread, one at a time, in order).
"""

from __future__ import annotations

import socket
import threading


class LoopbackServer:
    """A TCP server on ``host`` (``127.0.0.1``, or an IPv6 loopback address), serving each
    connection with :meth:`serve`.  Subclasses set their own attributes before calling
    ``super().__init__()``: the accept loop starts there."""

    def __init__(self, host: str = "127.0.0.1", *, threaded: bool = True, backlog: int = 64) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.server = socket.create_server((host, 0), family=family, backlog=backlog)
        self.port: int = self.server.getsockname()[1]
        #: the connections accepted so far
        self.accepted = 0
        self._threaded = threaded
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            if self._threaded:
                threading.Thread(target=self.serve, args=(conn,), daemon=True).start()
            else:
                self.serve(conn)

    def serve(self, conn: socket.socket) -> None:
        """Serve one accepted connection (the subclass's; this one closes it)."""
        conn.close()

    def close(self) -> None:
        """Stop accepting: the listening socket is shut down and closed."""
        try:
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server.close()
