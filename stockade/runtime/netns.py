"""How the network broker gets into a sandbox: its listening sockets, opened inside the
sandbox's network namespace from the host (:class:`SandboxListeners`, see its docstring and
``docs/network.md``), and the few libc calls that needs.

A run loads this once bubblewrap runs, with the broker (:mod:`stockade.runtime.broker`,
which re-exports these names) and while bubblewrap sets the sandbox up; what it needs
before bubblewrap starts is in :mod:`stockade.runtime.proxyenv` and
:mod:`stockade.runtime.launcher`.
"""

from __future__ import annotations

import _socket
import _struct
import _thread
import os
import sys
import time

from stockade.runtime.proxyenv import (  # noqa: F401 - (the broker's names, also had from here)
    HTTP_PROXY_PORT,
    SOCKS_PORT,
    proxy_environment,
    proxy_ports,
)
from stockade.runtime.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

#: ``setns`` flags of a network and a user namespace; the ``ioctl`` that opens the
#: user namespace owning a namespace; ``ioctl`` numbers for an interface's flags.
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
NS_GET_USERNS = 0xB701
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
#: Seconds the host waits for bubblewrap to bring the sandbox's loopback up.
LOOPBACK_WAIT = 10.0


_LIBC: dict[str, Any] = {}


def libc_function(name: str) -> Callable[..., int]:
    """libc's function ``name`` (returning an ``int``; ``errno`` kept for :func:`libc_errno`),
    through ``_ctypes`` itself: the ``ctypes`` package costs several milliseconds to import,
    and Python 3.11 has no ``os.setns``.  Raises :class:`OSError` where it cannot be had."""
    found = _LIBC.get(name)
    if found is not None:
        return found
    try:
        import _ctypes
    except ImportError as exc:
        raise OSError(0, f"no ctypes: {exc}") from None
    try:
        library: Any = _LIBC.get("")
        if library is None:
            class CInt(_ctypes._SimpleCData):
                _type_ = "i"

            class Function(_ctypes.CFuncPtr):
                _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
                _restype_ = CInt

            class Libc:
                _handle = _ctypes.dlopen(None, os.RTLD_NOW | os.RTLD_GLOBAL)  # type: ignore[arg-type]

            libc: Any = Libc()
            library = _LIBC[""] = (Function, libc)
        found = _LIBC[name] = library[0]((name, library[1]))
    except (AttributeError, TypeError, ValueError) as exc:
        raise OSError(0, f"libc's {name} is not available: {exc}") from None
    return found


def libc_errno() -> int:
    """The ``errno`` of the last call of a :func:`libc_function` on this thread."""
    import _ctypes

    return int(_ctypes.get_errno())


def _libc_namespace_calls() -> tuple[Callable[[int, int], int], Callable[[], int]]:
    """libc's ``setns`` and its ``errno`` reader, had before a fork (the child imports
    nothing); raises :class:`OSError` where they cannot be had."""
    setns = libc_function("setns")
    import _ctypes

    return setns, _ctypes.get_errno


class ListenSpec(Record):
    """One socket the broker holds inside the sandbox's network namespace: what it serves
    (``kind``: ``proxy`` or ``loopback:PORT``), where (``host``, ``port``) and whether it is
    a datagram socket."""

    kind: str
    host: str = "127.0.0.1"
    port: int = 0
    datagram: bool = False


def listener_specs(http_port: int, socks_port: int, loopback_ports: Sequence[int], rule_ports: Sequence[int],
                   capture: bool, capture_ipv6: bool) -> list[ListenSpec]:
    """The sockets the broker holds inside the sandbox, in order: HTTP proxy, SOCKS5, then
    every ``host-loopback`` port; with ``capture``, then the stub resolver's and the capture
    listeners (:func:`capture_specs`, on IPv6 too with ``capture_ipv6``)."""
    specs = [ListenSpec("proxy", port=http_port), ListenSpec("proxy", port=socks_port),
             *(ListenSpec(f"loopback:{port}", port=port) for port in loopback_ports)]
    if capture:
        specs += capture_specs(http_port, socks_port, loopback_ports, rule_ports, capture_ipv6)
    return specs


def capture_attempts(may_capture: bool) -> list[tuple[bool, bool]]:
    """``(capture, capture_ipv6)`` of each listener set to try, in order: with the stub
    resolver and capture on IPv4 and IPv6 (when this kernel has IPv6), on IPv4 only, then
    without them (a kernel or namespace that refuses the routes or port 53)."""
    attempts = ([(True, True), (True, False)] if _has_ipv6() else [(True, False)]) if may_capture else []
    return [*attempts, (False, False)]


def _has_ipv6() -> bool:
    """Whether this kernel has IPv6 (the namespace gets capture on it too)."""
    return bool(_socket.has_ipv6) and os.path.exists("/proc/net/if_inet6")


def receive_listener(channel: Any) -> int:
    """The seccomp listener the connect launcher sent on ``channel`` (checked to be one), or -1."""
    try:
        data, ancillary, _, _ = channel.recvmsg(1, _socket.CMSG_SPACE(4), _socket.MSG_CMSG_CLOEXEC)
    except OSError:
        return -1
    fds = [int.from_bytes(payload[i:i + 4], sys.byteorder) for level, kind, payload in ancillary
           if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS for i in range(0, len(payload) - 3, 4)]
    chosen = -1
    for fd in fds:
        try:
            ok = chosen < 0 and data == b"S" and os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:seccomp notify"
        except OSError:
            ok = False
        if ok:
            chosen = fd
        else:
            os.close(fd)
    return chosen


# -- capture (stockade.runtime.netstub): its side in the namespace -----------------------------

#: The ports captured besides those ``allow`` rules name: ssh, HTTP, HTTPS.
USUAL_PORTS = (22, 80, 443)
#: The DNS port.
DNS_PORT = 53
# netlink (rtnetlink(7)): a `local` route of the whole address space on `lo`
_RTM_NEWROUTE, _NLMSG_ERROR = 24, 2
_NLM_F_REQUEST, _NLM_F_ACK, _NLM_F_EXCL, _NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
_RT_TABLE_LOCAL, _RTPROT_STATIC, _RT_SCOPE_HOST, _RTN_LOCAL = 255, 4, 254, 2
_RTA_OIF, _RTA_TABLE = 4, 15
#: ``IP_PKTINFO`` and ``IP_FREEBIND`` (Python's socket module names neither); the IPv6 ones it has.
IP_PKTINFO, IP_FREEBIND = 8, 15


def want_destination(sock: _socket.socket) -> None:
    """Have the kernel tell each datagram's destination address (``IP_PKTINFO``,
    ``IPV6_RECVPKTINFO``): a client connected to ``127.0.0.53`` or to any other address
    drops an answer that comes from another."""
    if sock.family == _socket.AF_INET6:
        sock.setsockopt(_socket.IPPROTO_IPV6, _socket.IPV6_RECVPKTINFO, 1)
        # IPv6 checks a source address against the interfaces' addresses, not the local
        # routes: ``IP_FREEBIND`` lets the answer leave from any (every one is local here)
        sock.setsockopt(_socket.IPPROTO_IP, IP_FREEBIND, 1)
    else:
        sock.setsockopt(_socket.IPPROTO_IP, IP_PKTINFO, 1)


def capture_ports(rule_ports: Iterable[int], taken: Iterable[int]) -> list[int]:
    """The TCP ports captured on every address: :data:`USUAL_PORTS` and ``rule_ports`` (the
    ports ``allow`` rules name), less ``taken`` (the proxy's and ``host-loopback`` ports,
    which listen on ``127.0.0.1``) and the DNS port (the stub's)."""
    skip = {*taken, DNS_PORT}
    return sorted({*USUAL_PORTS, *rule_ports} - skip)


def add_local_routes(families: Iterable[int]) -> None:
    """Make every address of each address family in ``families`` local to the calling
    thread's network namespace: a ``local`` route of the whole space on ``lo`` in the
    ``local`` table (``ip route add local 0.0.0.0/0 dev lo``), over netlink.  Needs
    ``CAP_NET_ADMIN`` there; raises :class:`OSError` when the kernel refuses, and (never
    the host's by mistake) in a namespace with any interface but ``lo``."""
    with open("/proc/thread-self/net/dev", "rb") as table:
        interfaces = {line.split(b":", 1)[0].strip() for line in table.read().splitlines()[2:] if b":" in line}
    if interfaces != {b"lo"}:
        raise OSError(0, "not a sandbox's network namespace (it has interfaces besides `lo`): no capture routes")
    index = _socket.if_nametoindex("lo")
    sock = _socket.socket(_socket.AF_NETLINK, _socket.SOCK_RAW, 0)  # NETLINK_ROUTE
    try:
        sock.bind((0, 0))
        for sequence, family in enumerate(sorted(set(families)), 1):
            rtmsg = _struct.pack("=BBBBBBBBI", family, 0, 0, 0, _RT_TABLE_LOCAL, _RTPROT_STATIC, _RT_SCOPE_HOST,
                                _RTN_LOCAL, 0)
            attrs = _struct.pack("=HHI", 8, _RTA_OIF, index) + _struct.pack("=HHI", 8, _RTA_TABLE, _RT_TABLE_LOCAL)
            body = rtmsg + attrs
            flags = _NLM_F_REQUEST | _NLM_F_ACK | _NLM_F_CREATE | _NLM_F_EXCL
            sock.send(_struct.pack("=IHHII", 16 + len(body), _RTM_NEWROUTE, flags, sequence, 0) + body)
            reply = sock.recv(65536)
            if len(reply) < 20:
                raise OSError(0, "no answer from the kernel to a route request")
            _, kind, _, _, _ = _struct.unpack_from("=IHHII", reply, 0)
            error = _struct.unpack_from("=i", reply, 16)[0]
            if kind != _NLMSG_ERROR or error:
                code = -error
                raise OSError(code, f"cannot make every address local in the sandbox's namespace: {os.strerror(code)}")
    finally:
        sock.close()


def capture_specs(http_port: int, socks_port: int, loopback_ports: Sequence[int], rule_ports: Iterable[int],
                  ipv6: bool) -> list[ListenSpec]:
    """The sockets a capable namespace gets besides the proxy's and the ``host-loopback``
    ones on ``127.0.0.1``: the stub resolver (UDP and TCP) and the capture listeners on the
    wildcard addresses, and with ``ipv6`` the same on ``::`` plus the proxy and the
    ``host-loopback`` ports on ``::1`` (a client that tries ``localhost``'s ``::1`` first)."""
    ports = capture_ports(rule_ports, (http_port, socks_port, *loopback_ports))
    wildcards = ("0.0.0.0", "::") if ipv6 else ("0.0.0.0",)
    specs = [ListenSpec("dns", host, DNS_PORT, datagram) for host in wildcards for datagram in (True, False)]
    if ipv6:
        specs += [ListenSpec("proxy", "::1", http_port), ListenSpec("proxy", "::1", socks_port),
                  *(ListenSpec(f"loopback:{port}", "::1", port) for port in loopback_ports)]
    specs += [ListenSpec("capture", host, port) for host in wildcards for port in ports]
    return specs


def _loopback_flags(control: Any) -> int:
    import fcntl

    request = b"lo".ljust(16, b"\0")
    return int.from_bytes(fcntl.ioctl(control.fileno(), SIOCGIFFLAGS, request + bytes(24))[16:18], sys.byteorder)


def _await_loopback(timeout: float) -> None:
    """Wait until ``lo`` of the calling thread's network namespace is up: bubblewrap's
    sandbox brings it up itself (address, then link) while the host listens there, and an
    address added twice would fail its set-up.  Raises :class:`OSError` after ``timeout``."""
    control = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        deadline = time.monotonic() + timeout
        while not _loopback_flags(control) & IFF_UP:
            if time.monotonic() > deadline:
                raise OSError(0, f"its loopback did not come up within {timeout:g} s")
            time.sleep(0.0002)
    finally:
        control.close()


def loopback_up() -> None:
    """Bring up ``lo`` of the calling thread's network namespace (needs ``CAP_NET_ADMIN`` there)."""
    import fcntl

    control = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)  # (not `socket`: ~3 ms to import)
    try:
        request = b"lo".ljust(16, b"\0")
        flags = int.from_bytes(fcntl.ioctl(control.fileno(), SIOCGIFFLAGS, request + bytes(24))[16:18],
                               sys.byteorder)
        fcntl.ioctl(control.fileno(), SIOCSIFFLAGS, request + (flags | IFF_UP).to_bytes(2, sys.byteorder) + bytes(22))
    finally:
        control.close()


def open_listeners(specs: Sequence[ListenSpec]) -> list[Any]:
    """Bring the namespace's loopback up and open one socket per spec, in order, in the
    calling thread's network namespace (the sandbox's); closes what it opened on failure."""
    loopback_up()
    wildcard = {_socket.AF_INET6 if ":" in spec.host else _socket.AF_INET for spec in specs
                if spec.host in ("0.0.0.0", "::")}
    if wildcard:  # capture (stockade.runtime.netstub): every address of the namespace is local
        add_local_routes(wildcard)
    sockets: list[Any] = []
    try:
        for spec in specs:
            family = _socket.AF_INET6 if ":" in spec.host else _socket.AF_INET
            sock = _socket.socket(family, _socket.SOCK_DGRAM if spec.datagram else _socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
            if family == _socket.AF_INET6:  # `::` is IPv6 only (0.0.0.0 has its own listener)
                sock.setsockopt(_socket.IPPROTO_IPV6, _socket.IPV6_V6ONLY, 1)
            if spec.datagram:  # (the stub resolver's) answers leave from the address asked
                want_destination(sock)
            sock.bind((spec.host, spec.port))
            if not spec.datagram:
                sock.listen(512)
    except BaseException:
        for sock in sockets:
            _close(sock)
        raise
    return sockets


class SandboxListeners:
    """The broker's listening sockets, opened inside the network namespace of a sandbox that
    bubblewrap made and holds before its command (``--block-fd``), and held by this process
    only.

    bubblewrap reports the sandbox's process and namespaces on ``--info-fd`` (``report_fd``
    here) once it has made them.  A short-lived helper, started at once so that its work
    overlaps bubblewrap's, reads that report, names the process by a pidfd and checks it —
    alive, a child of ``parent`` (that bubblewrap), in the network namespace the report
    names — then enters that network namespace, waits for the sandbox to bring its loopback
    up, opens one socket per spec (:func:`open_listeners`; when that fails, one per spec of
    each of ``fallbacks`` in turn) and hands them over.  Nothing of the sandbox has run yet
    and nothing it could write is read.

    The helper is a thread of this process when this process has ``CAP_SYS_ADMIN``,
    ``CAP_NET_ADMIN`` and ``CAP_NET_BIND_SERVICE`` in its own user namespace (root): it has
    them in every namespace bubblewrap makes below it, so the thread enters the network
    namespace alone (only that thread's namespace changes, and it ends there).  Otherwise
    (a normal user) it is a forked child: it must first enter the user namespace that owns
    that network namespace (``NS_GET_USERNS``: bubblewrap nests another one inside it; this
    uid made it, so it has every capability there, and a forked child is single-threaded,
    as entering a user namespace needs); it sends the sockets back over a socket pair
    (``SCM_RIGHTS``) and exits, running no import and taking no lock.  ``direct`` forces
    the thread (True) or the child (False).
    """

    def __init__(self, report_fd: int, parent: int, specs: Sequence[ListenSpec], timeout: float = 30.0, *,
                 fallbacks: Sequence[Sequence[ListenSpec]] = (), direct: bool | None = None):
        import fcntl  # noqa: F401 - (before the fork: the child imports nothing; open_listeners uses it)
        from select import POLLIN, poll

        choices = [list(specs), *(list(each) for each in fallbacks)]
        self.counts = [len(each) for each in choices]
        #: which of ``specs`` (0) and ``fallbacks`` (1, 2, ...) the listeners are for
        self.chosen = 0
        self.child = 0
        self._thread: _Task | None = None
        self._answer: str | tuple[int, list[Any]] = "Ethe helper that listens inside the sandbox gave no answer"
        setns, get_errno = _libc_namespace_calls()
        args = (report_fd, parent, choices, timeout, setns, get_errno, poll, POLLIN)
        if direct if direct is not None else _capable_here():
            def listen() -> None:
                try:
                    self._answer = _helper(*args, enter_user=False)
                except BaseException as exc:
                    self._answer = f"E{getattr(exc, 'strerror', None) or exc}"

            self._thread = _Task(listen)
            return
        here, there = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            self.child = os.fork()
        except BaseException:
            here.close()
            there.close()
            raise
        if self.child == 0:  # pragma: no cover - the child (coverage does not follow it)
            status = 1
            try:
                here.close()
                said = _helper(*args, enter_user=True)
                if isinstance(said, str):
                    there.sendall(said.encode("utf-8", "replace"))
                else:
                    passed = b"".join(sock.fileno().to_bytes(4, sys.byteorder) for sock in said[1])
                    there.sendmsg([b"L" + bytes([said[0]])], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, passed)])
                    status = 0
            except BaseException as exc:
                try:
                    there.sendall(f"E{getattr(exc, 'strerror', None) or exc}".encode("utf-8", "replace"))
                except BaseException:
                    pass
            finally:
                os._exit(status)
        there.close()
        self._channel = here

    def result(self) -> list[Any] | None:
        """The listeners, in the order of the specs that opened (:attr:`chosen`: the first of
        ``specs`` and then ``fallbacks`` that did); None when bubblewrap ended before it made the
        sandbox (its own error says why).  Raises :class:`OSError` saying which step failed.
        A forked helper may still be exiting: :meth:`reap` waits for it."""
        if self._thread is not None:
            self._thread.join()
            said = self._answer
        else:
            said = self._received()
        if not isinstance(said, str):
            self.chosen = said[0]
            return said[1]
        if said[:1] == "N":
            return None
        raise OSError(0, said[1:] if said[:1] == "E" else "the helper that listens inside the sandbox ended "
                                                          "without an answer")

    def _received(self) -> str | tuple[int, list[Any]]:
        """The forked helper's answer: the index of the set that opened and its sockets, or its text."""
        try:
            data, ancillary, _, _ = self._channel.recvmsg(4096, _socket.CMSG_SPACE(4 * max(self.counts)),
                                                          _socket.MSG_CMSG_CLOEXEC)
        finally:
            self._channel.close()
            self.reap(block=False)  # (it exits once it has answered; the caller reaps it before the command)
        fds: list[int] = []
        for level, kind, payload in ancillary:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                fds += [int.from_bytes(payload[i:i + 4], sys.byteorder) for i in range(0, usable, 4)]
        if data[:1] == b"L" and len(data) == 2 and data[1] < len(self.counts) and len(fds) == self.counts[data[1]]:
            return data[1], [_socket.socket(fileno=fd) for fd in fds]
        for fd in fds:
            os.close(fd)
        return data.decode("utf-8", "replace")

    def reap(self, block: bool = True) -> None:
        """Collect the forked helper's exit (it exits once it has answered)."""
        if self.child and os.waitpid(self.child, 0 if block else os.WNOHANG)[0]:
            self.child = 0


def _capable_here() -> bool:
    """Whether this process has ``CAP_SYS_ADMIN``, ``CAP_NET_ADMIN`` and
    ``CAP_NET_BIND_SERVICE`` in its own user namespace (so in every one below it), read from
    ``/proc/self/status`` (not read for a process that is not root: it takes the forked helper)."""
    if os.geteuid() != 0:
        return False
    try:
        fd = os.open("/proc/self/status", os.O_RDONLY | os.O_CLOEXEC)
        try:
            text = os.read(fd, 1 << 16)
        finally:
            os.close(fd)
        need = 1 << 21 | 1 << 12 | 1 << 10
        return int(text.split(b"CapEff:", 1)[1].split()[0], 16) & need == need
    except (OSError, ValueError, IndexError):
        return False


def _report_number(report: str, key: str) -> int | None:
    """The number after ``"key":`` in bubblewrap's JSON report (no ``json`` import for it)."""
    at = report.find(f'"{key}":')
    if at < 0:
        return None
    text = report[at + len(key) + 3:].lstrip()
    end = 0
    while end < len(text) and text[end].isdigit():
        end += 1
    return int(text[:end]) if end else None


def _helper(report_fd: int, parent: int, choices: Sequence[Sequence[ListenSpec]], timeout: float,
            setns: Callable[[int, int], int], get_errno: Callable[[], int], poll: Any, pollin: int, *,
            enter_user: bool) -> str | tuple[int, list[Any]]:
    """The helper's work (see :class:`SandboxListeners`; on its thread, or in the forked
    child with ``enter_user``): the index of the set that opened and its sockets, else the
    answer (``N``: no sandbox was made; ``E`` and why)."""
    deadline = time.monotonic() + timeout
    report = b""
    waiter = poll()
    waiter.register(report_fd, pollin)
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not waiter.poll(int(left * 1000) + 1):
            return f"Ebubblewrap did not report its sandbox within {timeout:g} s"
        chunk = os.read(report_fd, 4096)
        if not chunk:
            break
        report += chunk
    text = report.decode("utf-8", "replace")
    if not text.strip():
        return "N"
    pid, netns_id = _report_number(text, "child-pid"), _report_number(text, "net-namespace")
    if pid is None:
        return f"Ebubblewrap's report names no process: `{text[:200]}`"
    opened: list[int] = []
    try:
        try:
            opened.append(os.pidfd_open(pid))
        except OSError as exc:
            if exc.errno != 38:  # ENOSYS: a kernel before 5.3 (the parent and namespace checks remain)
                return f"Ethe sandbox's process {pid} is gone: {exc.strerror}"
        pidfd = opened[0] if opened else None
        try:
            netfd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            return f"Ecannot open the sandbox's network namespace: {exc.strerror}"
        opened.append(netfd)
        if netns_id is not None and os.fstat(netfd).st_ino != netns_id:
            return f"Eprocess {pid} is not in the network namespace bubblewrap made"
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            fields = []
        if len(fields) < 2 or fields[1] != str(parent).encode():
            return f"Eprocess {pid} is not bubblewrap's child"
        if pidfd is not None:
            alive = poll()
            alive.register(pidfd, pollin)
            if alive.poll(0):
                return f"Ethe sandbox's process {pid} ended before its command started"
        if enter_user:
            import fcntl  # (imported by the parent before the fork: no import happens here)

            try:
                userfd = fcntl.ioctl(netfd, NS_GET_USERNS)
            except OSError as exc:
                return ("Ecannot find the user namespace of the sandbox's network namespace (`NS_GET_USERNS`, "
                        f"Linux 4.9): {exc.strerror}")
            opened.append(userfd)
            own = os.stat("/proc/self/ns/user")
            if (own.st_dev, own.st_ino) != (os.fstat(userfd).st_dev, os.fstat(userfd).st_ino) \
                    and setns(userfd, CLONE_NEWUSER) != 0:
                return f"Ecannot enter the sandbox's user namespace: {os.strerror(get_errno())}"
        if setns(netfd, CLONE_NEWNET) != 0:
            return f"Ecannot enter the sandbox's network namespace: {os.strerror(get_errno())}"
    finally:
        for fd in opened:
            os.close(fd)
    try:
        _await_loopback(max(deadline - time.monotonic(), 0.0))
    except OSError as exc:
        return f"Ecannot listen inside the sandbox: {exc.strerror or exc}"
    problem = ""
    for index, specs in enumerate(choices):  # the first set that opens
        try:
            return index, open_listeners(specs)
        except OSError as exc:
            problem = f"Ecannot listen inside the sandbox: {exc.strerror or exc}"
    return problem


class Standby:
    """A run's broker until the sandbox first uses the network.

    It holds the sandbox's listeners (:meth:`hold`) and the connect launcher's channel, and
    watches them on one thread: it takes the launcher's listener when it comes, and at the
    first connection, datagram or ``connect()`` to answer it makes the broker
    (``make_broker``: a :class:`~stockade.runtime.broker.Broker`, whose module then loads),
    hands it everything and ends; the broker answers what waited in the queues (a
    ``connect()`` waits in the kernel meanwhile).  A run that never uses the network never
    loads the broker's protocols or the handoff's.  :meth:`stop` closes what it holds, or
    stops the broker: later connections are refused and ``connect()`` fails with ``ENOSYS``,
    as with the broker.  When the broker cannot be made, every connection is refused (its
    listeners closed) and :attr:`problems` says why.
    """

    def __init__(self, make_broker: Callable[[], Any], loopback_ports: Sequence[int] = (),
                 rule_ports: Sequence[int] = (), may_capture: bool = True):
        self._make = make_broker
        #: the broker, once made
        self.broker: Any = None
        self.loopback_ports = tuple(sorted(set(loopback_ports)))
        self.rule_ports = tuple(sorted(set(rule_ports)))
        self.http_port, self.socks_port = proxy_ports(self.loopback_ports)
        self.may_capture = may_capture
        self._problems: list[str] = []
        self._lock = _thread.allocate_lock()
        self._listeners: list[Any] = []
        self._chosen = 0
        self._channel: Any = None
        self._listener = -1
        #: whether the launcher's listener came (the connect handoff is on)
        self.launcher_ready = False
        self._stopped = False
        self._thread: _Task | None = None
        self._wake_read, self._wake_write = os.pipe2(os.O_CLOEXEC)

    def spec_attempts(self) -> list[list[ListenSpec]]:
        """The listener sets to try inside the sandbox's namespace, in order (as
        :meth:`stockade.runtime.broker.Broker.spec_attempts`)."""
        return [listener_specs(self.http_port, self.socks_port, self.loopback_ports, self.rule_ports, capture, ipv6)
                for capture, ipv6 in capture_attempts(self.may_capture)]

    def hold(self, listeners: list[Any], chosen: int, channel: Any = None) -> None:
        """Watch ``listeners`` (those of :meth:`spec_attempts`' entry ``chosen``) and the
        launcher's ``channel`` (None: no launcher) until the first use or :meth:`stop`."""
        with self._lock:
            if self._stopped:
                for sock in listeners:
                    _close(sock)
                if channel is not None:
                    channel.close()
                return
            self._listeners, self._chosen, self._channel = list(listeners), chosen, channel
            self._thread = _Task(self._watch)

    def _watch(self) -> None:
        try:
            self._watch_until_used()
        except Exception as exc:  # (fail closed: nothing would answer what waits)
            with self._lock:
                if not self._stopped:
                    self._problems.append(f"the network broker stopped, so it refused every connection: {exc}")
                self._release()
        finally:
            with self._lock:  # (the watcher's to close once it started: stop() does not wait for it)
                os.close(self._wake_read)
                os.close(self._wake_write)
                self._wake_read = self._wake_write = -1

    def _watch_until_used(self) -> None:
        """Every descriptor is used under the lock and only while not stopped: :meth:`stop`
        closes them without waiting for this thread."""
        from select import POLLIN, poll

        waiter = poll()
        for sock in self._listeners:
            waiter.register(sock.fileno(), POLLIN)
        channel = self._channel.fileno() if self._channel is not None else -1
        if channel >= 0:
            waiter.register(channel, POLLIN)
        waiter.register(self._wake_read, POLLIN)
        while True:
            ready = waiter.poll()
            with self._lock:
                if self._stopped:
                    return
                for fd, events in ready:
                    if fd == channel:
                        waiter.unregister(fd)
                        listener = receive_listener(self._channel)
                        if listener >= 0:
                            self._listener = listener
                            self.launcher_ready = True
                            waiter.register(listener, POLLIN)
                    elif fd == self._listener and not events & POLLIN:
                        waiter.unregister(fd)  # (every process of the sandbox is gone)
                    else:
                        self._wake_broker()
                        return

    def _wake_broker(self) -> None:
        """Make the broker and hand it the listeners, the channel and the launcher's listener
        (under the lock)."""
        try:
            broker = self._make()
            broker.may_capture = self.may_capture
            broker.spec_attempts()
            broker.choose(self._chosen)
            broker.adopt(self._listeners)
        except Exception as exc:  # fail closed: nothing will answer; refuse rather than hold
            self._problems.append(f"the network broker could not start, so it refused every connection: {exc}")
            self._release()
            return
        self.broker = broker
        self._listeners = []
        broker.serve()
        if self._channel is not None:
            broker.start_handoff(self._channel, self._listener)
            self._channel, self._listener = None, -1

    def _release(self) -> None:
        """Close what is held (under the lock)."""
        for sock in self._listeners:
            _close(sock)
        self._listeners = []
        if self._listener >= 0:
            os.close(self._listener)  # (connects in the sandbox fail with ENOSYS from here on)
            self._listener = -1
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def stop(self) -> None:
        """Close the listeners and the launcher's listener, or stop the broker (the run is
        over, or the broker is killed): from then on connections are refused and ``connect()``
        fails with ``ENOSYS``.  The watcher ends on its own (it touches nothing once stopped)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            broker = self.broker
            if self._thread is None:
                os.close(self._wake_read)
                os.close(self._wake_write)
                self._wake_read = self._wake_write = -1
            elif self._wake_write >= 0:
                os.write(self._wake_write, b"x")
            self._release()
        if broker is not None:
            broker.stop()

    @property
    def problems(self) -> list[str]:
        """What the run's end message says besides the refusals."""
        return [*self._problems, *(self.broker.problems if self.broker is not None else ())]

    def summary(self) -> list[str]:
        """One line per refused destination (:meth:`stockade.runtime.broker.Broker.summary`)."""
        return self.broker.summary() if self.broker is not None else []

    def blocked(self) -> list[dict[str, Any]]:
        """The refusals' records."""
        return self.broker.blocked() if self.broker is not None else []

    def handoff_active(self) -> bool:
        """Whether the connect handoff is on (the launcher's listener came)."""
        handoff = self.broker.handoff if self.broker is not None else None
        return self.launcher_ready or bool(handoff is not None and handoff.active)


class _Task:
    """A thread that can be joined, on ``_thread`` (``threading`` is not on ``stockade
    run``'s path: it costs an import; these threads never outlive the process's exit)."""

    def __init__(self, target: Callable[..., object], *args: Any):
        self._done = self.done_flag()
        self.ident: int | None = None

        def run() -> None:
            try:
                target(*args)
            finally:
                self._done.release()

        self.ident = _thread.start_new_thread(run, ())

    @staticmethod
    def done_flag() -> Any:
        """A lock held until released once (``acquire`` waits for it)."""
        flag = _thread.allocate_lock()
        flag.acquire()
        return flag

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the end (at most ``timeout`` seconds); whether it ended."""
        if not self._done.acquire(timeout=-1 if timeout is None else timeout):
            return False
        self._done.release()
        return True

    def alive(self) -> bool:
        """Whether it is still running."""
        return bool(self._done.locked())


def _close(sock: Any) -> None:
    try:
        sock.shutdown(_socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
