"""Servers for the broker tests, run inside a test network namespace (or on loopback).

``python3 broker_servers.py ADDRESS ROOT CERT KEY``: serves ``ROOT`` over HTTP on port 80
and over HTTPS (``CERT``/``KEY``) on port 443, and echoes plain TCP on port 7 (each line
back, prefixed ``echo:``), all on ``ADDRESS``, until killed.  Standard library only.
"""

from __future__ import annotations

import functools
import http.server
import socketserver
import ssl
import sys
import threading


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class _Echo(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        for line in self.rfile:
            self.wfile.write(b"echo:" + line)
            self.wfile.flush()


class _Threading(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main(argv: list[str]) -> None:
    """Start the three servers and wait."""
    address, root, cert, key = argv
    handler = functools.partial(_Quiet, directory=root)
    plain = http.server.ThreadingHTTPServer((address, 80), handler)
    secure = http.server.ThreadingHTTPServer((address, 443), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    secure.socket = context.wrap_socket(secure.socket, server_side=True)
    echo = _Threading((address, 7), _Echo)
    for server in (plain, secure, echo):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])
