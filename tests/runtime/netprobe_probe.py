"""Probes run inside the sandbox by ``test_netprobe_sandbox.py`` (standard library only):
clients that try to get past the broker.

``python3 netprobe_probe.py MODE ARG...`` prints one line per attempt:
``TARGET -> got FIRST-LINE`` when something answered, ``TARGET -> failed EXCEPTION`` when not.

Modes: ``connect HOST PORT [HOST PORT ...]`` (a direct TCP connection, ignoring the proxy
variables, then an HTTP request); ``proxy URL...`` (urllib through the proxy variables, ``NO_PROXY`` left out);
``resolve-proxy NAME PATH`` (the name resolved here, its address asked of
the proxy); ``sockets`` (raw, packet and unix sockets); ``fork HOST PORT`` (a direct connection from a
child process); ``twice HOST PORT MARKER GO`` (a direct connection, then another once
``GO`` exists, after writing ``MARKER``).
"""

import os
import socket
import sys
import time
import urllib.request


def _connect(host: str, port: str) -> str:
    try:
        with socket.create_connection((host, int(port)), 10) as sock:
            sock.sendall(b"GET /hello.txt HTTP/1.0\r\nHost: probe\r\n\r\n")
            sock.settimeout(10)
            data = sock.recv(200)
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        return f"{host} {port} -> got {line}" if data else f"{host} {port} -> failed closed"
    except Exception as exc:
        return f"{host} {port} -> failed {type(exc).__name__}: {exc}"


def _proxied(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return f"{url} -> got {answer.status} {answer.read(100).decode('latin-1').strip()}"
    except Exception as exc:
        return f"{url} -> failed {type(exc).__name__}: {exc}"


def _sockets() -> list[str]:
    out = []
    attempts = [
        ("raw-tcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)),
        ("raw-icmp", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
        ("raw-v6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_TCP)),
        ("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))),
        ("unix-stream", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
        ("unix-dgram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)),
    ]
    def address_on_lo() -> None:  # SIOCSIFADDR: an address of the sandbox's choosing on its loopback
        import fcntl
        import struct

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            request = struct.pack("16sH2s4s8s", b"lo", socket.AF_INET, b"", socket.inet_aton("10.9.9.9"), b"")
            fcntl.ioctl(sock.fileno(), 0x8916, request)
        raise SystemExit("an address was added")

    try:
        address_on_lo()
    except Exception as exc:
        out.append(f"ifaddr -> failed {type(exc).__name__}: {exc}")
    for name, make in attempts:
        try:
            sock = make()
        except Exception as exc:
            out.append(f"{name} -> failed {type(exc).__name__}: {exc}")
            continue
        sock.close()
        out.append(f"{name} -> got a socket")
    return out


def main(mode: str, args: list[str]) -> None:
    """Run one probe (see the module docstring)."""
    if mode == "connect":
        for at in range(0, len(args), 2):
            print(_connect(args[at], args[at + 1]), flush=True)
    elif mode == "proxy":  # (every URL through the proxy: the sandbox's own loopback too)
        os.environ.pop("no_proxy", None)
        os.environ.pop("NO_PROXY", None)
        for url in args:
            print(_proxied(url), flush=True)
    elif mode == "resolve-proxy":  # resolve NAME here (the stub's fake address), then ask the proxy for it
        os.environ.pop("no_proxy", None)
        os.environ.pop("NO_PROXY", None)
        address = socket.getaddrinfo(args[0], 80, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
        print(_proxied(f"http://{address}{args[1]}"), flush=True)
    elif mode == "sockets":
        for line in _sockets():
            print(line, flush=True)
    elif mode == "fork":
        child = os.fork()
        if child == 0:
            print(_connect(args[0], args[1]), flush=True)
            os._exit(0)
        os.waitpid(child, 0)
    elif mode == "twice":
        host, port, marker, go = args
        print(_connect(host, port), flush=True)
        with open(marker, "w"):
            pass
        deadline = time.monotonic() + 60
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.05)
        print(_connect(host, port), flush=True)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
