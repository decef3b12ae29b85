"""Probes run inside the sandbox by ``test_netstub_sandbox.py``: clients that ignore the
proxy variables, and raw DNS packets (standard library only).

``python3 netstub_probe.py MODE ARG...`` prints one result line per step; exit status 3
when a step fails.
"""

import socket
import struct
import sys


def _nameserver() -> str:
    """The first name server the sandbox's resolver configuration names (the C library's
    default, 127.0.0.1, without one)."""
    try:
        with open("/etc/resolv.conf") as config:
            for line in config:
                words = line.split()
                if len(words) >= 2 and words[0] == "nameserver":
                    return words[1]
    except OSError:
        pass
    return "127.0.0.1"


def _query(name: bytes, qtype: int = 1, ident: int = 0x4242) -> bytes:
    labels = b"".join(bytes([len(label)]) + label for label in name.split(b".") if label)
    return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + labels + b"\0" + struct.pack("!HH", qtype, 1)


def _reply(packet: bytes) -> str:
    ident, flags, _, count, _, _ = struct.unpack_from("!HHHHHH", packet, 0)
    at = 12
    while packet[at]:
        at += packet[at] + 1
    at += 5
    answers = []
    for _ in range(count):
        kind, size = struct.unpack_from("!H", packet, at + 2)[0], struct.unpack_from("!H", packet, at + 10)[0]
        data = packet[at + 12:at + 12 + size]
        answers.append(socket.inet_ntoa(data) if kind == 1 else data.hex())
        at += 12 + size
    return f"id={ident:04x} rcode={flags & 0xF} answers={','.join(answers)}"


def _udp(server: str, packet: bytes, wait: float = 5.0) -> bytes | None:
    family = socket.AF_INET6 if ":" in server else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        sock.settimeout(wait)
        sock.connect((server, 53))
        sock.send(packet)
        try:
            return sock.recv(65535)
        except OSError:
            return None


def _tcp(server: str, packet: bytes) -> bytes | None:
    with socket.create_connection((server, 53), 5) as sock:
        sock.sendall(len(packet).to_bytes(2, "big") + packet)
        head = sock.recv(2)
        if len(head) < 2:
            return None
        size, data = int.from_bytes(head, "big"), b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            if not chunk:
                break
            data += chunk
        return data


def main(mode: str, args: list[str]) -> None:
    """Run one probe (see the module docstring)."""
    if mode == "resolve":
        found = socket.getaddrinfo(args[0], 443, type=socket.SOCK_STREAM)
        print(" ".join(sorted({info[4][0] for info in found})))
    elif mode == "connect":
        with socket.create_connection((args[0], int(args[1])), 10) as sock:
            sock.sendall(args[2].encode() + b"\n")
            print(sock.recv(200).decode().strip())
    elif mode == "query":  # query NAME QTYPE [SERVER] [tcp]
        server = args[2] if len(args) > 2 and args[2] != "-" else _nameserver()
        packet = _query(args[0].encode(), int(args[1]))
        answer = _tcp(server, packet) if args[3:] == ["tcp"] else _udp(server, packet)
        print(_reply(answer) if answer else "no answer")
    elif mode == "garbage":  # malformed packets over UDP and TCP, then one good query
        server = _nameserver()
        header = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0)
        bad = [b"", b"\x01", b"\x00" * 11, struct.pack("!HHHHHH", 7, 0x0100, 0, 0, 0, 0),
               struct.pack("!HHHHHH", 7, 0x0100, 2, 0, 0, 0) + b"\x01a\x00\x00\x01\x00\x01" * 2,
               header + b"\xc0\x0c\x00\x01\x00\x01", header + b"\x3fabc", header + b"\x40" + b"a" * 64 + b"\0\0\1\0\1",
               struct.pack("!HHHHHH", 7, 0x8180, 1, 0, 0, 0) + b"\x01a\x00\x00\x01\x00\x01",
               header + (b"\x3f" + b"a" * 63) * 5 + b"\0\0\1\0\1", header + b"\x01a\x00\x00",
               bytes(range(256)) * 4, b"\xff" * 60000]
        answered = 0
        for packet in bad:
            if _udp(server, packet, 0.5) is not None:
                answered += 1
        for payload in (b"\xff\xff" + b"x" * 10, b"\x00\x05hello", b"\x00"):
            with socket.create_connection((server, 53), 5) as sock:
                sock.sendall(payload)
                sock.shutdown(socket.SHUT_WR)
                sock.settimeout(5)
                try:
                    sock.recv(100)
                except OSError:
                    pass
        print(f"answered {answered} of {len(bad)}")
        answer = _udp(server, _query(b"pypi.test"))
        print(_reply(answer) if answer else "no answer")
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2:])
    except Exception as exc:
        print(f"failed: {type(exc).__name__}: {exc}")
        sys.exit(3)
