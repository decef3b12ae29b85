"""Run inside a `stockade run` sandbox by tests/runtime/test_connect_handoff.py (never on the
host): ``python3 handoff_probe.py MODE ARG...`` prints one line per check."""

import errno
import fcntl
import hashlib
import os
import select
import socket
import sys
import time

mode, args = sys.argv[1], sys.argv[2:]


def fetch(sock: socket.socket) -> bytes:
    sock.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
    data = b""
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    return data.partition(b"\r\n\r\n")[2]


def error_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, str(exc.errno))


if mode == "download":  # HOST PORT: the body's length and sha256
    family = socket.AF_INET6 if ":" in args[0] else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.connect((args[0], int(args[1])))
    body = fetch(sock)
    print(len(body), hashlib.sha256(body).hexdigest())
elif mode == "thread":  # HOST PORT: the download from a thread other than the main one
    import threading

    got = []
    worker = threading.Thread(target=lambda: got.append(fetch(socket.create_connection((args[0], int(args[1])), 10))))
    worker.start()
    worker.join()
    print(len(got[0]), hashlib.sha256(got[0]).hexdigest())
elif mode == "nonblocking":  # HOST PORT
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    code = sock.connect_ex((args[0], int(args[1])))
    print("connect", errno.errorcode.get(code, code) if code else 0)
    select.select([], [sock], [], 10)
    print("so_error", sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
    print("nonblocking", bool(fcntl.fcntl(sock.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK))
    print("cloexec", bool(fcntl.fcntl(sock.fileno(), fcntl.F_GETFD) & fcntl.FD_CLOEXEC))
    sock.setblocking(True)
    sock.settimeout(20)
    print("body", len(fetch(sock)))
elif mode == "refused":  # HOST PORT
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(10)
    try:
        sock.connect((args[0], int(args[1])))
        print("connected")
    except OSError as exc:
        print("failed", error_name(exc))
elif mode == "name-refused":  # NAME PORT: resolve through the stub, then try to connect
    address = socket.getaddrinfo(args[0], int(args[1]), socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(10)
    try:
        sock.connect((address, int(args[1])))
        print(address, "connected")
    except OSError as exc:
        print(address, "failed", error_name(exc))
elif mode == "resolve":  # NAME
    print(socket.getaddrinfo(args[0], 80, socket.AF_INET, socket.SOCK_STREAM)[0][4][0])
elif mode == "name":  # NAME PORT: resolve through the stub, then connect and fetch
    address = socket.getaddrinfo(args[0], int(args[1]), socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    sock = socket.create_connection((address, int(args[1])), 10)
    print(address, len(fetch(sock)))
elif mode == "own-server":  # a server on the sandbox's own loopback, and a client of it
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname(), 5)
    conn, _ = server.accept()
    conn.sendall(b"inside")
    print(client.recv(10).decode())
elif mode == "unspec":  # HOST PORT: try to re-point a handed socket
    sock = socket.create_connection((args[0], int(args[1])), 10)
    for label, address in (("again", (args[0], int(args[1]))), ("other", ("127.0.0.1", 1))):
        try:
            sock.connect(address)
            print(label, "connected")
        except OSError as exc:
            print(label, error_name(exc))
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    unspec = (ctypes.c_ushort * 8)(socket.AF_UNSPEC)
    result = libc.connect(sock.fileno(), unspec, 16)
    print("unspec", result, errno.errorcode.get(ctypes.get_errno(), "0") if result else "")
    try:
        sock.listen(5)
        print("listen ok")
    except OSError as exc:
        print("listen", error_name(exc))
    try:
        sock.bind(("0.0.0.0", 0))
        print("bind ok")
    except OSError as exc:
        print("bind", error_name(exc))
    print("still", len(fetch(sock)))
elif mode == "fastopen":  # HOST PORT: a Fast Open sendto, on a new socket and on a handed one
    fresh = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        fresh.sendto(b"GET / HTTP/1.0\r\n\r\n", socket.MSG_FASTOPEN, (args[0], int(args[1])))
        print("fresh sent")
    except OSError as exc:
        print("fresh", error_name(exc))
    handed = socket.create_connection((args[0], int(args[1])), 10)
    try:
        handed.sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.1", 1))
        print("handed sent")
    except OSError as exc:
        print("handed", error_name(exc))
elif mode == "twice":  # HOST PORT MARKER GO: connect, then wait for GO and connect again
    print("first", len(fetch(socket.create_connection((args[0], int(args[1])), 10))), flush=True)
    open(args[2], "w").close()
    while not os.path.exists(args[3]):
        time.sleep(0.05)
    try:
        socket.create_connection((args[0], int(args[1])), 10)
        print("second connected")
    except OSError as exc:
        print("second", error_name(exc))
elif mode == "leave-open":  # HOST PORT: read what the server sends first, exit without closing
    sock = socket.create_connection((args[0], int(args[1])), 10)
    sock.sendall(b"hello")
    got = b""
    while len(got) < 1000:
        got += sock.recv(1000 - len(got))
    print(len(got), flush=True)
    os._exit(0)
elif mode == "pid1":  # reach bubblewrap's init (no launcher filter), or shadow the broker's listener
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.ptrace(16, 1, 0, 0)  # PTRACE_ATTACH
    print("attach", "ok" if result == 0 else errno.errorcode[ctypes.get_errno()])
    try:
        os.close(os.open("/proc/1/mem", os.O_RDWR))
        print("mem ok")
    except OSError as exc:
        print("mem", error_name(exc))

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    code = (Filter * 1)(Filter(0x06, 0, 0, 0x7FFF0000))  # return ALLOW
    program = Program(1, code)
    libc.syscall.restype = ctypes.c_long
    number = {"x86_64": 317, "aarch64": 277}[os.uname().machine]
    listener = libc.syscall(number, 1, 8, ctypes.byref(program))  # SET_MODE_FILTER, NEW_LISTENER
    print("listener", "installed" if listener >= 0 else errno.errorcode[ctypes.get_errno()])
elif mode == "self":  # what the command sees of itself
    with open("/proc/self/cmdline", "rb") as handle:
        print("argv", handle.read().split(b"\0")[:2])
    print("exe", os.readlink("/proc/self/exe"))
    print("fds", sorted(int(fd) for fd in os.listdir("/proc/self/fd")))
    print("env", sorted(os.environ))
