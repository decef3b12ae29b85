"""The connect handoff: allowed connections get a socket of the host instead of a relay.

A relay hop in user space costs a second loopback TCP connection per byte, which on a
small machine halves a download.  So, for the connections it would relay to a
``host-loopback`` grant or to a name the stub resolver handed a fake address for, the
broker hands the sandboxed process a socket it connected itself in the host's network
namespace, and the kernel carries the bytes with no relay (as rootless containers'
``bypass4netns`` does).  The sandbox keeps its own empty network namespace: that stays the
enforcement, and everything here fails closed into it.

How
===

1. **The launcher.**  bubblewrap runs a small C program of stockade's
   (``connect_launch.c``, compiled once per source with the host's C compiler into
   stockade's cache directory, :func:`launcher_binary`) in place of the command.  It is
   given to the sandbox by content (``--perms 0555 --ro-bind-data FD /dev/.stockade-connect``
   from a memfd the host filled), never by a path the sandbox could write.  It enters a
   Landlock domain of its own (no file or network rule; Landlock ABI 6, Linux 6.12), whose
   ptrace scoping keeps the command from tracing or writing the memory of bubblewrap's
   init — pid 1 inside, the one process there without the filter below, which could
   otherwise be driven to disconnect a handed socket — then installs a
   seccomp filter on itself with ``SECCOMP_FILTER_FLAG_NEW_LISTENER`` (and
   ``WAIT_KILLABLE_RECV`` where the kernel has it) — every ``connect``
   goes to a user-space listener; ``sendto``/``sendmsg``/``sendmmsg`` with
   ``MSG_FASTOPEN`` fail with ``EOPNOTSUPP``; ``ioctl(SIOCGSKNS)`` fails with ``EPERM`` —
   sends the listener to the host over a socket pair, closes both and execs the command
   (same ``argv``, environment and ``/proc/self/exe`` as without it).  When anything of
   that fails it execs the command anyway: the broker relays, as before.  It has no
   privilege the command lacks: a hostile process holding such a listener can only *ask*
   the broker for connections, which the broker judges; and it cannot install a listener
   of its own to answer its connects itself (the kernel allows one listener per filter
   chain: ``EBUSY``).
2. **Each notified connect** (:meth:`Handoff._handle`): the broker opens a pidfd of the
   process and its ``/proc/PID/mem``, checks the notification is still live
   (``SECCOMP_IOCTL_NOTIF_ID_VALID``: the pid was not reused), reads the socket address
   (at most 128 bytes) and takes a copy of the socket (``pidfd_getfd``).
3. **Handled** (a TCP socket of the sandbox's namespace; the address a loopback spelling
   at an ``allow host-loopback:PORT`` port, or a fake address of the stub resolver at any
   port): judged by the broker's :class:`~stockade.runtime.broker.Judge` exactly as the
   relay judges it (same records, same rules).  Allowed: the broker connects a socket of
   its own namespace to the checked address (the client's ``TCP_NODELAY``,
   ``SO_KEEPALIVE``, ``TCP_KEEP*`` and ``IPV6_V6ONLY`` copied; ``O_NONBLOCK`` and
   ``O_CLOEXEC`` as the client's), puts it at the client's descriptor number
   (``SECCOMP_IOCTL_NOTIF_ADDFD`` with ``SETFD``) and answers 0.  Refused: ``ECONNREFUSED``
   and the deny record; an upstream failure: its errno.
4. **Everything else is connected by the broker on its copy** of the client's socket, with
   the address it read, and answered with that connect's result: the socket is the
   sandbox's, so its own namespace routes it (its loopback servers, the proxy ports, the
   capture listeners; no route out).  The broker never lets the kernel continue the
   call (``SECCOMP_USER_NOTIF_FLAG_CONTINUE``): the kernel would read the descriptor and
   the address again, after the check, and another thread could have swapped them.
   Unix sockets are never connected for the sandbox (``EISCONN`` or ``EACCES``), netlink
   ones only without multicast groups, other families get ``EOPNOTSUPP``.
5. **A host socket in the sandbox cannot be re-pointed.**  It arrives connected
   (established).  Every further ``connect`` on it, ``AF_UNSPEC`` (disconnect) included,
   is refused (its ``SO_NETNS_COOKIE`` is not the sandbox namespace's): so it never
   returns to the unconnected state, and ``listen``, ``bind`` and a TCP Fast Open
   ``sendto`` to another address all fail in the kernel (``EINVAL``/``EISCONN``); Fast
   Open is refused by the filter besides.  ``shutdown`` only disconnects a socket that is
   still connecting, which a handed socket never is; ``io_uring`` is refused by the
   sandbox's own filter; ``TCP_REPAIR`` and ``SIOCGSKNS`` need ``CAP_NET_ADMIN`` over the
   host's namespace.
6. **Fail closed.**  When the broker stops (the run ends, or it is killed) it closes the
   listener: from then on every ``connect`` in the sandbox fails with ``ENOSYS``.

Byte counts: the broker no longer sees the bytes.  It subscribes to sock_diag's
``SKNLGRP_INET_TCP_DESTROY`` in the host's namespace; when a handed socket (known by its
``SO_COOKIE``) is destroyed, its record gets the kernel's ``tcpi_bytes_acked`` and
``tcpi_bytes_received`` (sequence space: they include one for the SYN sent, one for each
FIN).  A handed socket still open when the run ends (its close not finished) is asked for
by its addresses and cookie (a sock_diag request): its counts so far.  Where neither
answers (the subscription is refused, a message was lost), the record says
``bytes: unknown`` and carries no counts.
"""

from __future__ import annotations

import _socket
import _struct
import _thread
import os
import sys
import time

from stockade.runtime.launcher import (  # noqa: F401 - (the names this module had before they moved there)
    BUILD_FLAGS,
    COMPILER_DIRECTORIES,
    COMPILER_VARIABLE,
    LAUNCH_PATH,
    MAX_BINARY,
    SOURCE,
    SWITCH_VARIABLE,
    Launch,
    _compiler,
    _read_trusted,
    _trusted_directory,
    kernel_ready,
    launcher_binary,
    usable_prefix,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable
    from typing import Any

    from stockade.runtime.broker import Broker, Decision

#: Seconds the run's end waits for the destroy messages of handed sockets still open.
DRAIN_WAIT = 0.3

# seccomp user notification (linux/seccomp.h); the same numbers on x86_64 and aarch64
NOTIF_RECV = 0xC0502100
NOTIF_SEND = 0xC0182101
NOTIF_ID_VALID = 0x40082102
NOTIF_ADDFD = 0x40182103
ADDFD_FLAG_SETFD = 1
NOTIF_SIZE = 80
SYS_PIDFD_GETFD = 438
SO_COOKIE, SO_NETNS_COOKIE, SO_DOMAIN, SO_PROTOCOL, SO_TYPE = 57, 71, 39, 38, 3
MAX_SOCKADDR = 128
AF_NETLINK = 16
EPERM, EBADF, EACCES, EFAULT, EINVAL, ENOTSOCK, EOPNOTSUPP = 1, 9, 13, 14, 22, 88, 95
EISCONN, ECONNREFUSED, ETIMEDOUT = 106, 111, 110
O_CLOEXEC_OCTAL = 0o2000000
# sock_diag (linux/sock_diag.h, linux/inet_diag.h)
NETLINK_SOCK_DIAG = 4
SKNLGRP_INET_TCP_DESTROY = 1
SOL_NETLINK = 270
NETLINK_ADD_MEMBERSHIP = 1
INET_DIAG_INFO = 2
SOCK_DIAG_BY_FAMILY = 20


# -- libc calls ----------------------------------------------------------------------------

def _libc(name: str) -> Callable[..., int]:
    """libc's ``name`` (:func:`stockade.runtime.netns.libc_function`)."""
    from stockade.runtime.netns import libc_function

    return libc_function(name)


def _errno() -> int:
    from stockade.runtime.netns import libc_errno

    return libc_errno()


def pidfd_getfd(pidfd: int, target: int) -> int:
    """A copy of descriptor ``target`` of the process ``pidfd`` names (Linux 5.6)."""
    fd = _libc("syscall")(SYS_PIDFD_GETFD, pidfd, target, 0)
    if fd < 0:
        number = _errno()
        raise OSError(number, os.strerror(number))
    return fd


def raw_connect(fd: int, address: bytes) -> int:
    """``connect(fd, address)`` with the address as bytes; 0 or the errno."""
    if _libc("connect")(fd, address, len(address)) == 0:
        return 0
    return _errno()


#: ``pidfd_open`` of a thread rather than a process (Linux 6.9)
PIDFD_THREAD = os.O_EXCL


def _pidfd(tid: int) -> int:
    """A pidfd for the thread ``tid`` that made the call (a notification names the thread):
    of that thread (``PIDFD_THREAD``), or before Linux 6.9 of its process (its descriptor
    table is the one the thread uses; the notification is checked live after this)."""
    try:
        return os.pidfd_open(tid, PIDFD_THREAD)
    except OSError as exc:
        if exc.errno != EINVAL:
            raise
    with open(f"/proc/{tid}/status", "rb") as status:
        for line in status:
            if line.startswith(b"Tgid:"):
                return os.pidfd_open(int(line.split()[1]))
    raise OSError(EINVAL, "no thread group")


# -- the handoff ---------------------------------------------------------------------------

def _sockaddr(data: bytes) -> tuple[int, str, int] | None:
    """(family, address, port) of an AF_INET or AF_INET6 sockaddr, else None."""
    if len(data) < 2:
        return None
    family = int.from_bytes(data[:2], sys.byteorder)
    if family == _socket.AF_INET and len(data) >= 16:
        return family, _socket.inet_ntop(_socket.AF_INET, data[4:8]), int.from_bytes(data[2:4], "big")
    if family == _socket.AF_INET6 and len(data) >= 24:
        return family, _socket.inet_ntop(_socket.AF_INET6, data[8:24]), int.from_bytes(data[2:4], "big")
    return None


def _loopback(address: str) -> bool:
    """Whether ``address`` reaches the local host: 127/8, ``::1``, the unspecified addresses,
    and those as IPv4-mapped IPv6."""
    text = address[7:] if address.lower().startswith("::ffff:") and "." in address else address
    return text.startswith("127.") or text in ("0.0.0.0", "::1", "::")


def _fresh(sock: Any) -> bool:
    """Whether a socket is neither listening nor connected (a connect on one that is gets
    the kernel's own answer, ``EINVAL`` or ``EISCONN``, never a handed socket)."""
    try:
        if sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_ACCEPTCONN):
            return False
        sock.getpeername()
    except OSError:
        return True
    return False


def _in_pool(address: str) -> bool:
    """Whether an IPv4 address is in the stub resolver's range (:data:`~stockade.runtime.netstub.POOL`)."""
    from stockade.runtime.netstub import POOL

    try:
        value = int.from_bytes(_socket.inet_aton(address), "big")
        base = int.from_bytes(_socket.inet_aton(POOL[0]), "big")
    except OSError:
        return False
    return value >> (32 - POOL[1]) == base >> (32 - POOL[1])


def _fake_v4(address: str) -> str | None:
    """The IPv4 address of ``address`` (itself, or IPv4-mapped), else None."""
    if address.lower().startswith("::ffff:") and "." in address:
        return address[7:]
    return address if "." in address and ":" not in address else None


_COPIED = ((_socket.IPPROTO_TCP, _socket.TCP_NODELAY), (_socket.SOL_SOCKET, _socket.SO_KEEPALIVE),
           (_socket.IPPROTO_TCP, getattr(_socket, "TCP_KEEPIDLE", 4)), (_socket.IPPROTO_TCP, _socket.TCP_KEEPINTVL),
           (_socket.IPPROTO_TCP, _socket.TCP_KEEPCNT))


class _Pending:
    """A handed socket whose record waits for its byte counts."""

    def __init__(self, decision: Decision, protocol: str, started: float, family: int, local: tuple[Any, ...],
                 peer: tuple[Any, ...], cookie: int):
        self.decision = decision
        self.protocol = protocol
        self.started = started
        self.family = family
        self.local = local
        self.peer = peer
        self.cookie = cookie


class Handoff:
    """The broker's side of the connect handoff for one run (see the module docstring):
    :meth:`start` once the sandbox's command was let go, :meth:`stop` with the broker."""

    def __init__(self, broker: Broker, channel: Any, listener: int = -1):
        self.broker = broker
        self.channel = channel
        #: the launcher's listener (received here, or before by :class:`~stockade.runtime.netns.Standby`)
        self.listener = listener
        self.netns_cookie = b""
        self._stopped = False
        self._lock = _thread.allocate_lock()
        self._wake_read, self._wake_write = os.pipe2(os.O_CLOEXEC)
        self._pending: dict[int, _Pending] = {}
        #: connects being answered (each on a thread of its own), at most MAX_CONNECTIONS
        self._handling = 0
        self._diag: Any = None
        self._done: Any = None
        #: whether a listener came (the launcher ran and installed its filter)
        self.active = listener >= 0

    def start(self) -> None:
        """Serve on a thread of its own: wait for the listener, then for notifications."""
        from stockade.runtime.netns import _Task

        self.netns_cookie = self.broker.netns_cookie
        try:
            diag = _socket.socket(_socket.AF_NETLINK, _socket.SOCK_RAW | _socket.SOCK_CLOEXEC, NETLINK_SOCK_DIAG)
            diag.setsockopt(_socket.SOL_SOCKET, _socket.SO_RCVBUF, 1 << 20)
            diag.bind((0, 0))
            diag.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, SKNLGRP_INET_TCP_DESTROY)
            self._diag = diag
        except OSError:
            self._diag = None
        self._done = _Task(self._serve)

    def _serve(self) -> None:
        from select import POLLIN, poll

        try:
            waiter = poll()
            if self.listener >= 0:
                waiter.register(self.listener, POLLIN)
            else:
                waiter.register(self.channel.fileno(), POLLIN)
            waiter.register(self._wake_read, POLLIN)
            if self._diag is not None:
                waiter.register(self._diag.fileno(), POLLIN)
            while not self._stopped:
                for fd, events in waiter.poll():
                    if fd == self._wake_read or self._stopped:
                        return
                    if self._diag is not None and fd == self._diag.fileno():
                        self._destroyed()
                    elif fd == self.channel.fileno():
                        waiter.unregister(fd)
                        listener = self._receive()
                        if listener >= 0:
                            self.listener = listener
                            self.active = True
                            waiter.register(listener, POLLIN)
                    elif fd == self.listener:
                        if events & POLLIN:
                            self._next()
                        else:  # (every process of the sandbox is gone)
                            waiter.unregister(fd)
        finally:
            with self._lock:
                if self.listener >= 0:
                    os.close(self.listener)  # from here on, connects in the sandbox fail with ENOSYS
                    self.listener = -1
                os.close(self._wake_read)
                os.close(self._wake_write)
                self._wake_read = self._wake_write = -1

    def _receive(self) -> int:
        """The listener the launcher sent (checked to be a seccomp notification fd), or -1."""
        from stockade.runtime.netns import receive_listener

        return receive_listener(self.channel)

    def stop(self) -> None:
        """Close the listener (connects fail with ``ENOSYS`` from then on) and write the
        records of handed sockets still waiting for their counts."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            if self._wake_write >= 0:
                os.write(self._wake_write, b"x")
        if self._done is not None:
            self._done.join(5)
        else:  # (never started: nothing closes the pipe but this)
            with self._lock:
                os.close(self._wake_read)
                os.close(self._wake_write)
                self._wake_read = self._wake_write = -1
        if self._pending and self._diag is not None:
            self._drain(time.monotonic())  # (what came already)
            with self._lock:
                left = list(self._pending.values())
            for pending in left:  # still open (a close not finished): the counts so far
                counts = _query(pending)
                if counts is not None:
                    with self._lock:
                        self._pending.pop(pending.cookie, None)
                    self._record_counts(pending, counts)
            if self._pending:  # destroyed just now: its message may be on its way
                self._drain(time.monotonic() + DRAIN_WAIT)
        with self._lock:
            left, self._pending = list(self._pending.values()), {}
        for pending in left:
            self._record_counts(pending, None)
        if self._diag is not None:
            self._diag.close()
            self._diag = None
        self.channel.close()

    # -- notifications ---------------------------------------------------------------------

    def _next(self) -> None:
        import fcntl

        from stockade.runtime.netns import _Task

        buffer = bytearray(NOTIF_SIZE)
        try:
            fcntl.ioctl(self.listener, NOTIF_RECV, buffer, True)
        except OSError:  # (the process is gone, or was interrupted)
            return
        from stockade.runtime.broker import MAX_CONNECTIONS

        with self._lock:
            crowded = self._handling >= MAX_CONNECTIONS
            if not crowded:
                self._handling += 1
        if not crowded:
            try:
                _Task(self._handle, bytes(buffer))
                return
            except RuntimeError:  # no thread to be had
                with self._lock:
                    self._handling -= 1
        # (a flood of connects: the host's threads are not the sandbox's) refused
        self._respond(_struct.unpack_from("=Q", buffer, 0)[0], -ECONNREFUSED)

    def _respond(self, ident: int, error: int) -> None:
        import fcntl

        with self._lock:
            listener = self.listener
            if listener < 0:
                return
            try:
                fcntl.ioctl(listener, NOTIF_SEND, _struct.pack("=QqiI", ident, 0, error, 0))
            except OSError:
                pass

    def _valid(self, ident: int) -> bool:
        import fcntl

        with self._lock:
            if self.listener < 0:
                return False
            try:
                fcntl.ioctl(self.listener, NOTIF_ID_VALID, _struct.pack("=Q", ident))
            except OSError:
                return False
        return True

    def _handle(self, notification: bytes) -> None:
        ident, pid = _struct.unpack_from("=QI", notification, 0)
        args = _struct.unpack_from("=6Q", notification, 32)
        target = args[0] & 0xFFFFFFFF
        length = args[2] & 0xFFFFFFFF
        try:
            try:
                error = self._decide(ident, pid, target, args[1], length)
            except Exception:  # (nothing a client does ends the broker; refused, never opened)
                error = -ECONNREFUSED
            if error is not None:
                self._respond(ident, error)
        finally:
            with self._lock:
                self._handling -= 1

    def _decide(self, ident: int, pid: int, target: int, pointer: int, length: int) -> int | None:
        """The answer for one connect (0 or a negative errno), None when already answered."""
        try:
            pidfd = _pidfd(pid)
        except OSError:
            return -ECONNREFUSED
        copy = -1
        try:
            try:
                mem = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return -ECONNREFUSED
            try:
                if not self._valid(ident):
                    return None  # (gone: nobody to answer)
                if length > MAX_SOCKADDR or length < 2:
                    return -EINVAL
                try:
                    address = os.pread(mem, length, pointer)
                except (OSError, OverflowError):
                    return -EFAULT
                if len(address) != length:
                    return -EFAULT
            finally:
                os.close(mem)
            try:
                copy = pidfd_getfd(pidfd, target)
            except OSError as exc:
                return -(exc.errno or EBADF)
            try:
                sock: Any = _socket.socket(fileno=os.dup(copy))
            except OSError:
                return -ENOTSOCK
            try:
                return self._connect(ident, pid, target, copy, sock, address)
            finally:
                sock.close()
        finally:
            os.close(pidfd)
            if copy >= 0:
                os.close(copy)

    def _connect(self, ident: int, pid: int, target: int, copy: int, sock: Any, address: bytes) -> int | None:
        family = sock.family
        if family == _socket.AF_UNIX:  # (never connected for the sandbox: a path is resolved by the caller)
            try:
                sock.getpeername()
                return -EISCONN
            except OSError:
                return -EACCES
        try:
            cookie = sock.getsockopt(_socket.SOL_SOCKET, SO_NETNS_COOKIE, 8)
        except OSError:
            cookie = b""
        if self.netns_cookie and cookie != self.netns_cookie:
            # a socket of another namespace: one the broker handed over (it stays connected,
            # so it can never listen or be pointed elsewhere)
            return -EOPNOTSUPP if address[:2] == b"\0\0" else -EISCONN
        if family == AF_NETLINK:
            groups = int.from_bytes(address[8:12], sys.byteorder) if len(address) >= 12 else 0
            return -raw_connect(copy, address) if groups == 0 else -EPERM
        if family not in (_socket.AF_INET, _socket.AF_INET6):
            return -EOPNOTSUPP
        parsed = _sockaddr(address)
        if parsed is not None and sock.type == _socket.SOCK_STREAM and sock.proto in (0, _socket.IPPROTO_TCP) \
                and parsed[0] == family and _fresh(sock):
            handled = self._handled(parsed[1], parsed[2], family, sock) if self.netns_cookie else None
            if handled is not None:
                return self._hand_over(ident, pid, target, copy, sock, *handled)
        return -raw_connect(copy, address)

    def _handled(self, address: str, port: int, family: int, sock: Any) -> tuple[Decision, str, list[str]] | None:
        """(decision, protocol, addresses to connect to) for a connect the handoff takes."""
        broker = self.broker
        loopback = _loopback(address)
        four = None if loopback else _fake_v4(address)
        if loopback and port not in broker.loopback_ports:
            return None
        if not loopback and (four is None or not broker.capture or not _in_pool(four)):
            return None
        decided = broker.loopback_decided.get(port) if loopback else None
        # (only now: a connect elsewhere never loads the policy; a host-loopback port's
        # decision came with the plan)
        judge = broker._judge() if decided is None else None
        if judge is None and decided is None:
            return None
        from stockade.runtime.broker import HOST_LOOPBACK

        v6only = False
        if family == _socket.AF_INET6:
            try:
                v6only = bool(sock.getsockopt(_socket.IPPROTO_IPV6, _socket.IPV6_V6ONLY))
            except OSError:
                pass
        if loopback:
            decision = decided if decided is not None else judge.judge(HOST_LOOPBACK, port)  # type: ignore[union-attr]
            # (the host's 127.0.0.1, as the relay; an IPv6 socket tries ::1 after it)
            targets = ["127.0.0.1"] if family == _socket.AF_INET else ["::1"] if v6only else ["::ffff:127.0.0.1", "::1"]
            return decision.replace(addresses=tuple(targets)), "host-loopback", targets
        assert four is not None and judge is not None
        stub = broker._stub()
        if stub is None or not stub.pool.contains(four):
            return None
        name = stub.pool.name(four)
        if name is None:
            return judge._refuse(four, port, "a fake address the stub resolver did not hand out",
                                 judge._unnamed(), four), "capture", []
        decision = judge.judge(name, port)
        if not decision.allowed:
            return decision, "capture", []
        if family == _socket.AF_INET:
            targets = [a for a in decision.addresses if ":" not in a]
        else:
            targets = [a if ":" in a else f"::ffff:{a}" for a in decision.addresses
                       if not (v6only and ":" not in a)]
        if not targets:
            return None  # (no address of the client's family: the relay's capture listener takes it)
        return decision, "capture", targets

    def _hand_over(self, ident: int, pid: int, target: int, copy: int, client: Any, decision: Decision,
                   protocol: str, targets: list[str]) -> int | None:
        import fcntl

        from stockade.runtime.broker import CONNECT_TIMEOUT

        broker = self.broker
        if not decision.allowed:
            broker._record(decision, protocol)
            return -ECONNREFUSED
        options = []
        for level, name in _COPIED:
            try:
                options.append((level, name, client.getsockopt(level, name)))
            except OSError:
                pass
        if client.family == _socket.AF_INET6:
            try:
                options.append((_socket.IPPROTO_IPV6, _socket.IPV6_V6ONLY,
                                client.getsockopt(_socket.IPPROTO_IPV6, _socket.IPV6_V6ONLY)))
            except OSError:
                pass
        nonblocking = bool(fcntl.fcntl(copy, fcntl.F_GETFL) & os.O_NONBLOCK)
        cloexec = False
        try:
            with open(f"/proc/{pid}/fdinfo/{target}", "rb") as info:
                for line in info.read().splitlines():
                    if line.startswith(b"flags:"):
                        cloexec = bool(int(line.split()[1], 8) & O_CLOEXEC_OCTAL)
        except (OSError, ValueError, IndexError):
            pass
        upstream: Any = None
        problem, number = "", ECONNREFUSED
        port = decision.port
        for address in targets:
            sock: Any = _socket.socket(client.family, _socket.SOCK_STREAM)
            try:
                for level, name, value in options:
                    try:
                        sock.setsockopt(level, name, value)
                    except OSError:
                        pass
                sock.settimeout(CONNECT_TIMEOUT)
                sock.connect((address, port))
            except OSError as exc:
                sock.close()
                problem, number = exc.strerror or str(exc), exc.errno or (ETIMEDOUT if isinstance(exc, TimeoutError)
                                                                          else ECONNREFUSED)
                continue
            upstream = sock
            shown = address[7:] if address.startswith("::ffff:") else address
            decision = decision.replace(addresses=(shown,))
            break
        if upstream is None:
            broker._record(decision, protocol, error=f"cannot connect: {problem}")
            return -number
        try:
            upstream.setblocking(not nonblocking)
            cookie = int.from_bytes(upstream.getsockopt(_socket.SOL_SOCKET, SO_COOKIE, 8), sys.byteorder)
            pending = _Pending(decision, protocol, time.monotonic(), upstream.family, upstream.getsockname(),
                               upstream.getpeername(), cookie)
            with self._lock:
                if self.listener < 0:
                    return None
                try:
                    fcntl.ioctl(self.listener, NOTIF_ADDFD, _struct.pack(
                        "=QIIII", ident, ADDFD_FLAG_SETFD, upstream.fileno(), target, os.O_CLOEXEC if cloexec else 0))
                except OSError:
                    return None  # (the client is gone, or gave up)
                self._pending[cookie] = pending
            return 0
        finally:
            _close_quietly(upstream)

    # -- byte counts -----------------------------------------------------------------------

    def _destroyed(self) -> None:
        """Read destroy messages; write the records of the handed sockets among them."""
        try:
            data = self._diag.recv(1 << 16)
            messages = _destroy_messages(data)
        except Exception:  # (ENOBUFS when messages were lost: those records say `unknown`)
            return
        for cookie, counts in messages:
            with self._lock:
                pending = self._pending.pop(cookie, None)
            if pending is not None:
                self._record_counts(pending, counts)

    def _drain(self, deadline: float) -> None:
        from select import POLLIN, poll

        waiter = poll()
        waiter.register(self._diag.fileno(), POLLIN)
        while self._pending:
            left = deadline - time.monotonic()
            if not waiter.poll(max(int(left * 1000), 0)):
                return
            self._destroyed()

    def _record_counts(self, pending: _Pending, counts: tuple[int, int] | None) -> None:
        duration = time.monotonic() - pending.started
        if counts is None:
            self.broker._record(pending.decision, pending.protocol, handoff="unknown", duration=duration)
        else:
            # (the kernel's counts are sequence space: less the SYN sent; a FIN may add one each way)
            self.broker._record(pending.decision, pending.protocol, sent=max(counts[0] - 1, 0), received=counts[1],
                                duration=duration, handoff="kernel")


def _query(pending: _Pending) -> tuple[int, int] | None:
    """The kernel's counts of a handed socket that is still open (a sock_diag request for
    its addresses and cookie), else None."""
    family = pending.family

    def packed(address: tuple[Any, ...]) -> bytes:
        raw = _socket.inet_pton(family, address[0])
        return raw.ljust(16, b"\0")

    try:
        sockid = (_struct.pack("!HH", pending.local[1], pending.peer[1]) + packed(pending.local) + packed(pending.peer)
                  + _struct.pack("=III", 0, pending.cookie & 0xFFFFFFFF, pending.cookie >> 32))
        request = _struct.pack("=BBBBI", family, _socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), 0, 0xFFFFFFFF) + sockid
        message = _struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, 1, 1, 0) + request
        diag = _socket.socket(_socket.AF_NETLINK, _socket.SOCK_RAW | _socket.SOCK_CLOEXEC, NETLINK_SOCK_DIAG)
    except Exception:  # (a bad address, a struct out of range: no counts)
        return None
    try:
        diag.settimeout(1.0)
        diag.send(message)
        for cookie, counts in _destroy_messages(diag.recv(1 << 16)):
            if cookie == pending.cookie and counts is not None:
                return counts
    except OSError:
        pass
    finally:
        diag.close()
    return None


def _destroy_messages(data: bytes) -> list[tuple[int, tuple[int, int] | None]]:
    """(socket cookie, (bytes acked, bytes received) or None) of each sock_diag message."""
    out = []
    at = 0
    while at + 16 <= len(data):
        length, kind = _struct.unpack_from("=IH", data, at)
        if length < 16:
            break
        body = data[at + 16:at + length]
        at += (length + 3) & ~3
        if kind != SOCK_DIAG_BY_FAMILY or len(body) < 72:
            continue
        low, high = _struct.unpack_from("=II", body, 44)
        counts = None
        attribute = 72
        while attribute + 4 <= len(body):
            size, kind_ = _struct.unpack_from("=HH", body, attribute)
            if size < 4:
                break
            if kind_ == INET_DIAG_INFO and size - 4 >= 136:
                counts = _struct.unpack_from("=QQ", body, attribute + 4 + 120)
            attribute += (size + 3) & ~3
        out.append((low | high << 32, counts))
    return out


def _close_quietly(sock: Any) -> None:
    try:
        sock.close()
    except OSError:
        pass
