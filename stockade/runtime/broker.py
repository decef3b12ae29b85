"""The network broker: a run's host allow-list, enforced on the host, every refusal explained.

bubblewrap can only give a sandbox all of the host's network or none of it.  For a policy
that allows some destinations (host rules, ``default allow`` with denies, ``host-loopback``
grants), ``stockade run`` gives the sandbox an empty network namespace of its own and
starts a :class:`Broker` for the run's lifetime: threads in the ``stockade`` process, on
the host.

How a connection gets out
=========================

1. The sandbox's command is preceded by the bridge (:mod:`stockade.runtime.netbridge`),
   which creates listening TCP sockets on the namespace's loopback — the HTTP proxy port,
   the SOCKS5 port and one port per ``allow host-loopback:PORT`` — and hands them to the
   broker over a stream ``socketpair`` (``SCM_RIGHTS``), then execs the command.  Nothing
   inside keeps a descriptor of the broker, and no unix socket is made or reachable there:
   the seccomp filter that refuses ``socket(AF_UNIX)`` stays as it is.
2. The broker accepts on those sockets (they stay in the sandbox's namespace; the broker
   itself is in the host's) and speaks HTTP proxy (absolute-form requests and
   ``CONNECT``) and SOCKS5 (``CONNECT`` with a domain name, IPv4 or IPv6 address: remote
   name resolution, ``socks5h``) on both proxy ports; a ``host-loopback`` port forwards
   to the same port on the host's ``127.0.0.1``.
3. Every destination is judged by the policy (:meth:`Judge.judge`): the name by
   ``ir.network_access`` (most specific rule wins; a refused name is never looked up), then
   it is resolved **on the host** and **every** address it resolves to is judged as an
   address; the connection goes to one of those checked addresses (no second lookup, no
   rebinding).  Loopback, private, link-local, shared (CGNAT), unspecified, multicast,
   reserved and cloud-metadata addresses are refused unless a CIDR or address rule allows
   them explicitly (loopback: only ``allow host-loopback:PORT``); IP literals are judged
   as addresses, never by a name rule.
4. Each refusal is an audit record (``event: net``, ``decision: deny``: host, port,
   address, the deciding rule and its ``file:line``, the command) and is summarised at the
   end of the run; each allowed connection is a record with its byte counts when it ends.

A client that ignores the proxy variables finds no route: the namespace has nothing but
its loopback — unless the listeners are opened with the namespace's capabilities (as root,
:meth:`Broker.open_capable`): then every address there is local, a stub resolver answers
DNS with fake addresses and capture listeners take the connections, judged the same way
(:mod:`stockade.runtime.netstub`).  When the broker stops (the run ends, or it is killed), its listeners close:
connections are refused, never opened.
"""

from __future__ import annotations

import _socket
import _thread
import os
import sys
import time

from stockade.runtime.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    import socket
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from ipaddress import IPv4Address, IPv6Address
    from typing import Any

    from stockade.compiler.ir import PolicyIR
    from stockade.compiler.query import NetworkDecision

    Resolver = Callable[[str], Sequence[str]]

#: The ports the bridge listens on inside the sandbox (its namespace is its own: any port
#: is free there); moved up when a ``host-loopback`` grant takes one.
HTTP_PROXY_PORT = 3128
SOCKS_PORT = 1080
#: The host name that stands for the host's loopback in the IR's queries.
HOST_LOOPBACK = "host-loopback"
#: The most bytes of an HTTP request head the broker reads.
MAX_HEAD = 65536
#: The most refused names (stub resolver) recorded in one run.
MAX_LOOKUP_RECORDS = 10000
#: Seconds to read a request head, and to connect upstream.
HEAD_TIMEOUT = 30.0
CONNECT_TIMEOUT = 10.0
_BUFFER = 1 << 18

#: Cloud metadata endpoints (AWS, GCP, Azure, ...: 169.254.169.254; AWS IPv6: fd00:ec2::254).
METADATA_ADDRESSES = frozenset({"169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200"})


def proxy_environment(http_port: int = HTTP_PROXY_PORT, socks_port: int = SOCKS_PORT) -> dict[str, str]:
    """The variables that point clients at the broker inside the sandbox: the standard
    ones (curl, Python, Go, git's libcurl) and the spellings pip, npm, yarn and cargo read."""
    http = f"http://127.0.0.1:{http_port}"
    socks = f"socks5h://127.0.0.1:{socks_port}"
    no_proxy = "localhost,127.0.0.1,::1"
    return {
        "HTTP_PROXY": http, "http_proxy": http, "HTTPS_PROXY": http, "https_proxy": http,
        "ALL_PROXY": socks, "all_proxy": socks, "NO_PROXY": no_proxy, "no_proxy": no_proxy,
        "PIP_PROXY": http, "npm_config_proxy": http, "npm_config_https_proxy": http,
        "npm_config_noproxy": no_proxy, "YARN_HTTP_PROXY": http, "YARN_HTTPS_PROXY": http,
        "CARGO_HTTP_PROXY": http,
    }


#: The ranges that are nobody's public address: a name resolving into one of them, or an
#: address literal in one, needs a rule naming that address or range (loopback: a
#: ``host-loopback`` rule).  (Documentation and benchmarking ranges are ordinary addresses.)
SPECIAL_RANGES: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "unspecified"), ("10.0.0.0/8", "private"), ("100.64.0.0/10", "shared"),
    ("127.0.0.0/8", "loopback"), ("169.254.0.0/16", "link-local"), ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "private"), ("192.168.0.0/16", "private"), ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("::/128", "unspecified"), ("::1/128", "loopback"), ("fc00::/7", "private"), ("fe80::/10", "link-local"),
    ("fec0::/10", "link-local"), ("ff00::/8", "multicast"),
)
_SPECIAL: list[Any] = []


def special_range(address: IPv4Address | IPv6Address) -> str | None:
    """What kind of non-public address ``address`` is (``loopback``, ``metadata``,
    ``private``, ``link-local``, ``shared`` (CGNAT), ``unspecified``, ``multicast``,
    ``reserved``), or None for any other.  An IPv6 address that carries an IPv4 one
    (IPv4-mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``) is judged
    by the IPv4 address too."""
    import ipaddress

    if not _SPECIAL:
        _SPECIAL.extend((ipaddress.ip_network(net), kind) for net, kind in SPECIAL_RANGES)
    if str(address) in METADATA_ADDRESSES:
        return "metadata"
    if address.version == 6:
        embedded = getattr(address, "ipv4_mapped", None) or getattr(address, "sixtofour", None)
        if embedded is None and address in ipaddress.ip_network("64:ff9b::/96"):
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            kind = special_range(embedded)
            if kind is not None:
                return kind
    for network, kind in _SPECIAL:
        if address.version == network.version and address in network:
            return kind
    return None


def system_resolver(name: str) -> list[str]:
    """The addresses of ``name`` as the host resolves it (``getaddrinfo``), in order."""
    import socket

    found = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in found))


class TableResolver:
    """A resolver from a fixed table (name → addresses): the broker's resolver for tests
    and for hosts that must not be looked up.  A name not in the table does not resolve."""

    def __init__(self, table: Mapping[str, Iterable[str]]):
        self.table = {name.lower().rstrip("."): tuple(addresses) for name, addresses in table.items()}

    def __call__(self, name: str) -> list[str]:
        """The table's addresses for ``name`` (raises :class:`OSError` when it has none)."""
        found = self.table.get(name.lower().rstrip("."))
        if not found:
            import socket

            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(found)


class Decision(Record):
    """The broker's answer for one destination: allowed or not, why, and the rule."""

    allowed: bool
    host: str
    port: int
    #: the checked addresses to connect to (allowed), or the address that was refused
    addresses: tuple[str, ...] = ()
    reason: str = ""
    #: the deciding rule's text (``allow github.com:443``, ``default deny``) and location
    rule: str = ""
    where: str = ""


def _where(origin: Any) -> str:
    return f"{origin.file}:{origin.line}" if origin is not None else ""


class Judge:
    """Judges destinations against a policy IR, resolving names with ``resolver``."""

    def __init__(self, ir: PolicyIR, resolver: Resolver | None = None):
        self.ir = ir
        self.resolver = resolver or system_resolver

    def _rule(self, decision: NetworkDecision) -> tuple[str, str]:
        rule = decision.rule
        if rule is not None:
            return f"{rule.action} {rule.host}", _where(rule.origin)
        network = self.ir.network
        return f"default {network.default}", _where(network.default_origin) or "the built-in default"

    def _refuse(self, host: str, port: int, reason: str, decision: NetworkDecision | None = None,
                address: str | None = None) -> Decision:
        rule, where = self._rule(decision) if decision is not None else ("", "")
        return Decision(False, host, port, (address,) if address else (), reason, rule, where)

    def judge(self, host: str, port: int) -> Decision:
        """The decision for ``host``:``port`` (see the module docstring, step 3)."""
        import ipaddress

        if host == HOST_LOOPBACK:
            return self._host_loopback(host, port, "127.0.0.1")
        text = host.lower().rstrip(".")
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        try:
            address = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            address = None
        if address is not None:
            return self._address(host, port, address, None)
        if not _host_name(text):
            return Decision(False, host, port, (), "not a host name")
        decision = self.ir.network_access(text, port)
        if not decision.allowed:
            reason = "denied by a rule" if decision.rule is not None else "no rule allows it"
            return self._refuse(host, port, reason, decision)
        try:
            addresses = [str(a) for a in self.resolver(text)]
        except (OSError, UnicodeError) as exc:
            return self._refuse(host, port, f"the name does not resolve on the host ({exc})", decision)
        if not addresses:
            return self._refuse(host, port, "the name does not resolve on the host", decision)
        checked = []
        for each in addresses:
            try:
                parsed = ipaddress.ip_address(each)
            except ValueError:
                return self._refuse(host, port, f"the resolver answered `{each}`, not an address", decision)
            verdict = self._address(host, port, parsed, decision)
            if not verdict.allowed:
                return verdict
            checked.append(str(parsed))
        rule, where = self._rule(decision)
        return Decision(True, host, port, tuple(checked), "allowed", rule, where)

    def _host_loopback(self, host: str, port: int, address: str) -> Decision:
        decision = self.ir.network_access(HOST_LOOPBACK, port)
        if decision.allowed and decision.rule is not None and decision.rule.host.kind == "host-loopback":
            rule, where = self._rule(decision)
            return Decision(True, host, port, (address,), "allowed", rule, where)
        reason = (f"`{address}` is the host's loopback: only `allow host-loopback:{port}` reaches it"
                  if decision.rule is None or decision.allowed else "denied by a rule")
        return self._refuse(host, port, reason, decision if decision.rule is not None else None, address)

    def _address(self, host: str, port: int, address: IPv4Address | IPv6Address,
                 by_name: NetworkDecision | None) -> Decision:
        mapped = getattr(address, "ipv4_mapped", None)
        plain = mapped if mapped is not None else address
        text = str(plain)
        kind = special_range(plain)
        if kind == "loopback":
            return self._host_loopback(host, port, text)
        decision = self.ir.network_access(text, port)
        resolved = f"resolves to `{text}`, " if by_name is not None else ""
        if decision.rule is not None and decision.rule.action == "deny":
            return self._refuse(host, port, f"{resolved}denied by a rule", decision, text)
        if kind is not None:
            if decision.allowed and decision.rule is not None and decision.rule.host.kind == "cidr":
                rule, where = self._rule(decision)
                return Decision(True, host, port, (text,), "allowed", rule, where)
            article = "an" if kind[0] in "aeiou" else "a"
            return self._refuse(host, port, f"{resolved}{article} {kind} address: only a rule naming that "
                                             f"address or range allows it", decision, text)
        if by_name is not None:
            rule, where = self._rule(by_name)
            return Decision(True, host, port, (text,), "allowed", rule, where)
        if not decision.allowed:
            return self._refuse(host, port, "no rule allows it (an address is judged as an address)", decision, text)
        rule, where = self._rule(decision)
        return Decision(True, host, port, (text,), "allowed", rule, where)


def _host_name(text: str) -> bool:
    if not text or len(text) > 253:
        return False
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789-_")
    return all(label and len(label) <= 63 and set(label) <= allowed for label in text.split("."))


#: ``unshare``/``setns`` flag of a network namespace; ``ioctl`` numbers for an interface's flags.
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def _libc_namespace_calls() -> tuple[Callable[[int], int], Callable[[int, int], int], Callable[[], int]]:
    """libc's ``unshare`` and ``setns`` (and ``errno``), through ``_ctypes`` itself: the
    ``ctypes`` package costs several milliseconds to import, and Python 3.11 has no
    ``os.unshare``/``os.setns``.  Raises :class:`OSError` where they cannot be had."""
    try:
        import _ctypes
    except ImportError as exc:
        raise OSError(0, f"no ctypes: {exc}") from None
    try:
        class CInt(_ctypes._SimpleCData):
            _type_ = "i"

        class Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
            _restype_ = CInt

        class Libc:
            _handle = _ctypes.dlopen(None, os.RTLD_NOW | os.RTLD_GLOBAL)  # type: ignore[arg-type]

        libc: Any = Libc()
        return Function(("unshare", libc)), Function(("setns", libc)), _ctypes.get_errno
    except (AttributeError, TypeError, ValueError) as exc:
        raise OSError(0, f"libc's namespace calls are not available: {exc}") from None


class ListenSpec(Record):
    """One socket the broker holds inside the sandbox's network namespace: what it serves
    (``kind``: ``proxy`` or ``loopback:PORT``), where (``host``, ``port``) and whether it is
    a datagram socket."""

    kind: str
    host: str = "127.0.0.1"
    port: int = 0
    datagram: bool = False


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
        from stockade.runtime.netstub import add_local_routes

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
                from stockade.runtime.netstub import want_destination

                want_destination(sock)
            sock.bind((spec.host, spec.port))
            if not spec.datagram:
                sock.listen(512)
    except BaseException:
        for sock in sockets:
            _close(sock)
        raise
    return sockets


class SandboxNetns:
    """A fresh network namespace for one sandbox, made by the host (root only): its loopback
    up, one socket per :class:`ListenSpec` on its loopback, and a way for the calling
    thread to step into it to start the sandbox (``enter``) and back (``leave``).

    Namespaces are per thread: only the calling thread moves, for the moment it takes to
    fork the sandbox tool, so the broker's threads stay in the host's namespace.  The
    namespace belongs to the host's user namespace, so nothing inside the sandbox (an
    unprivileged user namespace of its own) can reconfigure it.  Needs ``CAP_SYS_ADMIN``;
    raises :class:`OSError` without it.
    """

    def __init__(self, specs: Sequence[ListenSpec]):
        unshare, self._setns, get_errno = _libc_namespace_calls()
        self._get_errno = get_errno
        self.home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        self.inside = -1
        self.listeners: list[Any] = []
        if unshare(CLONE_NEWNET) != 0:
            errno = get_errno()
            os.close(self.home)
            raise OSError(errno, f"cannot make a network namespace: {os.strerror(errno)}")
        try:
            self.inside = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            self.listeners = open_listeners(specs)
        except BaseException:
            self.leave()
            self.close()
            raise
        self.leave()

    def _move(self, fd: int) -> None:
        if self._setns(fd, CLONE_NEWNET) != 0:
            errno = self._get_errno()
            raise OSError(errno, f"cannot change the network namespace: {os.strerror(errno)}")

    def enter(self) -> None:
        """Move the calling thread into the sandbox's namespace."""
        self._move(self.inside)

    def leave(self) -> None:
        """Move the calling thread back to the host's namespace."""
        self._move(self.home)

    def close(self) -> None:
        """Release the namespace (it ends with the sandbox's last process)."""
        for fd in (self.home, self.inside):
            if fd >= 0:
                os.close(fd)
        self.home = self.inside = -1


class BrokerHooks(Record):
    """What a caller of ``stockade.runtime.session.run`` may give the broker: a resolver
    (default: the host's, :func:`system_resolver`; tests give a :class:`TableResolver`) and
    ``on_start``, called with the :class:`Broker` once it holds the sandbox's listeners;
    ``bridge``: use the in-sandbox bridge even where the host could make the sandbox's
    network namespace itself (root), as a normal user's run does."""

    resolver: Any = None
    on_start: Any = None
    bridge: bool = False


class Broker:
    """One run's broker (see the module docstring).

    ``load_ir`` gives the policy (called once, on the broker's thread, while the sandbox
    starts); ``base`` holds the fields every audit record of the run carries (policy,
    command, workspace, pid); records go to ``audit_path`` (None: kept in :attr:`events` only).
    """

    def __init__(self, load_ir: Callable[[], PolicyIR], *, loopback_ports: Sequence[int] = (),
                 audit_path: str | None = None, base: Mapping[str, Any] | None = None,
                 resolver: Resolver | None = None, on_start: Callable[[Broker], object] | None = None,
                 rule_ports: Sequence[int] = ()):
        self.load_ir = load_ir
        self.loopback_ports = tuple(sorted(set(loopback_ports)))
        #: the ports ``allow`` rules name (captured with ``capture``)
        self.rule_ports = tuple(sorted(set(rule_ports)))
        #: the listeners are opened with the namespace's capabilities: the stub resolver and
        #: transparent capture (:mod:`stockade.runtime.netstub`) come with them; ``capture_ipv6``:
        #: on IPv6 too
        self.capture = False
        self.capture_ipv6 = False
        self.stub: Any = None
        self._dns_recorded: set[str] = set()
        self._dns_refused = 0
        self.audit_path = audit_path
        self.base = dict(base or {})
        self.resolver = resolver
        self.on_start = on_start
        taken = set(self.loopback_ports)
        self.http_port = _free_port(HTTP_PROXY_PORT, taken)
        taken.add(self.http_port)
        self.socks_port = _free_port(SOCKS_PORT, taken)
        self.judge: Judge | None = None
        self.events: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self._lock = _thread.allocate_lock()
        self._listeners: list[Any] = []
        self._connections: set[socket.socket] = set()
        self._workers: dict[object, _Task] = {}
        self._stopped = False
        self._ready = _Task.done_flag()
        self._judge_lock = _thread.allocate_lock()
        self._judge_failed = False
        self._host_end: socket.socket | None = None
        self._thread: _Task | None = None
        self._pending: tuple[Callable[..., None], tuple[Any, ...]] | None = None
        self._wake_read, self._wake_write = os.pipe2(os.O_CLOEXEC)

    # -- the sandbox side -------------------------------------------------------------------

    def listen_specs(self) -> list[ListenSpec]:
        """The sockets the broker holds inside the sandbox, in order: HTTP proxy, SOCKS5,
        then every ``host-loopback`` port; with :attr:`capture`, then the stub resolver's and
        the capture listeners (:func:`stockade.runtime.netstub.capture_specs`)."""
        specs = [ListenSpec("proxy", port=self.http_port), ListenSpec("proxy", port=self.socks_port),
                 *(ListenSpec(f"loopback:{port}", port=port) for port in self.loopback_ports)]
        if self.capture:
            from stockade.runtime.netstub import capture_specs

            specs += capture_specs(self.http_port, self.socks_port, self.loopback_ports, self.rule_ports,
                                   self.capture_ipv6)
        return specs

    def addresses(self) -> list[str]:
        """The ``host:port`` of every stream listener of :meth:`listen_specs`, in order (the
        bridge's argument)."""
        return [f"{spec.host}:{spec.port}" for spec in self.listen_specs()]

    def environment(self) -> dict[str, str]:
        """The proxy variables for the sandbox (:func:`proxy_environment`)."""
        return proxy_environment(self.http_port, self.socks_port)

    def start(self, argv: Sequence[str], serve: bool = True) -> tuple[list[str], int]:
        """Start the broker; the command to run inside the sandbox instead of ``argv`` (the
        bridge, then ``argv``) and the descriptor to pass to the sandbox for the bridge (the
        caller closes it once the sandbox has started).  With ``serve=False`` the broker's
        thread starts only at :meth:`serve` (after the sandbox's start: the bridge waits)."""
        host_end, sandbox_end = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self._host_end = host_end  # type: ignore[assignment]
        fd = sandbox_end.detach()
        os.set_inheritable(fd, True)
        self._pending = (self._control, ())
        if serve:
            self.serve()
        bridge = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netbridge.py")
        return [sys.executable, "-I", "-S", bridge, str(fd), ",".join(self.addresses()), "--", *argv], fd

    def start_in_namespace(self) -> SandboxNetns:
        """Start the broker without a bridge (as root): make the sandbox's network namespace
        here, listen in it (:class:`SandboxNetns`), and accept; the caller starts the sandbox
        inside that namespace (``netns.enter()`` … ``netns.leave()`` around the spawn) with
        bubblewrap's ``--unshare-net`` left out.  Raises :class:`OSError` when it cannot."""
        netns: SandboxNetns = self.open_capable(SandboxNetns)
        self._pending = (self._serve_listeners, (netns.listeners,))
        return netns

    def open_capable(self, opener: Callable[[list[ListenSpec]], Any]) -> Any:
        """``opener(specs)`` for a path that opens the listeners with the capabilities of the
        sandbox's namespace (:func:`open_listeners` in it): with the stub resolver and
        capture on IPv4 and IPv6 (:attr:`capture`, :attr:`capture_ipv6`), else on IPv4,
        else without them, the first that works; raises the last :class:`OSError`."""
        attempts = [(True, True), (True, False), (False, False)] if _has_ipv6() else [(True, False), (False, False)]
        for capture, ipv6 in attempts:
            self.capture, self.capture_ipv6 = capture, ipv6
            try:
                return opener(self.listen_specs())
            except OSError:
                if not capture:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def serve(self) -> None:
        """Start the broker's thread (once; from a thread in the host's network namespace).
        Connections made before it runs wait in the listeners' queues."""
        pending, self._pending = self._pending, None
        if pending is not None:
            target, args = pending
            self._thread = _Task(target, *args)

    def _control(self) -> None:
        """Receive the bridge's listeners, acknowledge them, and accept on them."""
        host_end: Any = self._host_end
        count = len(self.addresses())
        try:
            data, ancillary, _, _ = host_end.recvmsg(4096, _socket.CMSG_SPACE(4 * count), _socket.MSG_CMSG_CLOEXEC)
        except OSError:
            data, ancillary = b"", []
        fds: list[int] = []
        for level, kind, payload in ancillary:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                fds += [int.from_bytes(payload[i:i + 4], sys.byteorder) for i in range(0, usable, 4)]
        if data[:1] != b"L" or len(fds) != count or self._stopped:
            for fd in fds:
                os.close(fd)
            host_end.close()
            return
        try:
            host_end.sendall(b"K")  # the command starts; its connections wait in the listeners' queues
        except OSError:
            pass
        host_end.close()
        self._serve_listeners([_socket.socket(fileno=fd) for fd in fds])

    def _serve_listeners(self, listeners: list[Any]) -> None:
        """Accept on every listener (one thread, polling), a thread per connection; answer
        each datagram (the stub resolver's) on this thread."""
        specs = self.listen_specs()
        with self._lock:
            if self._stopped:
                for sock in listeners:
                    _close(sock)
                return
            self._listeners = listeners
        self._ready.release()
        if self.on_start is not None:
            self.on_start(self)
        from select import POLLIN, poll

        by_fd = {sock.fileno(): (sock, spec) for sock, spec in zip(listeners, specs, strict=True)}
        waiter = poll()
        for fd in by_fd:
            waiter.register(fd, POLLIN)
        waiter.register(self._wake_read, POLLIN)
        while not self._stopped:
            for fd, _ in waiter.poll():
                if fd == self._wake_read or self._stopped:
                    return
                sock, spec = by_fd[fd]
                if spec.datagram:
                    self._datagram(sock)
                else:
                    self._accept(sock, spec.kind)

    def _judge(self) -> Judge | None:
        """The judge, made on the first connection (a run that connects nowhere never loads
        the policy here); None when the policy cannot be loaded (every connection refused)."""
        with self._judge_lock:
            if self.judge is None and not self._judge_failed:
                try:
                    self.judge = Judge(self.load_ir(), self.resolver)
                except Exception as exc:
                    self._judge_failed = True
                    self.problems.append(f"the network broker could not load the policy, so it refused every "
                                         f"connection: {exc}")
            return self.judge

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Whether the broker holds the sandbox's listeners (waiting up to ``timeout``)."""
        if not self._ready.acquire(timeout=-1 if timeout is None else timeout):
            return False
        self._ready.release()
        return True

    def stop(self) -> None:
        """Close the listeners and every open connection (the run is over, or the broker is
        killed): from then on the sandbox's connections are refused, never opened."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            listeners, self._listeners = self._listeners, []
            connections = list(self._connections)
        os.write(self._wake_write, b"x")  # wakes the accepting thread
        for sock in listeners:
            _close(sock)
        for sock in connections:
            _close(sock)
        if self._host_end is not None:
            _close(self._host_end)
        thread = self._thread
        here = _thread.get_ident()
        if thread is not None and thread.ident != here:
            thread.join(5)
        with self._lock:
            workers = [w for w in self._workers.values() if w.ident != here]
        deadline = time.monotonic() + 5
        for worker in workers:  # their connections are closed: they record them and end
            worker.join(max(deadline - time.monotonic(), 0))
        if thread is None or not thread.alive():
            os.close(self._wake_read)
            os.close(self._wake_write)

    # -- connections ----------------------------------------------------------------------------

    def _accept(self, listener: Any, kind: str) -> None:
        try:
            fd, _ = listener._accept()
        except OSError:
            return
        import socket  # (on the first connection: a run that connects nowhere never loads it)

        conn = socket.socket(fileno=fd)
        with self._lock:
            if self._stopped:
                _close(conn)
                return
            self._connections.add(conn)
            key = object()
            self._workers[key] = _Task(self._serve, conn, kind, key)  # (under the lock: it removes itself)

    def _serve(self, conn: socket.socket, kind: str, key: object) -> None:
        try:
            if self._judge() is None:
                return
            conn.settimeout(HEAD_TIMEOUT)
            if kind.startswith("loopback:"):
                self._forward(conn, "host-loopback", HOST_LOOPBACK, int(kind.split(":", 1)[1]), b"", None)
                return
            if kind == "capture":
                self._captured(conn)
                return
            if kind == "dns":
                self._dns_stream(conn)
                return
            first = conn.recv(1, _socket.MSG_PEEK)
            if first == b"\x05":
                self._socks(conn)
            elif first:
                self._http(conn)
        except OSError:
            pass
        finally:
            with self._lock:
                self._connections.discard(conn)
                self._workers.pop(key, None)
            _close(conn)

    def _http(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(8192)
            if not chunk:
                return
            head += chunk
            if len(head) > MAX_HEAD:
                _reply(conn, 431, "request head too large")
                return
        head, _, rest = head.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            _reply(conn, 400, "not an HTTP proxy request")
            return
        method, target, version = parts
        if method.upper() == "CONNECT":
            host, port = _split_host_port(target, None)
            if host is None or port is None:
                _reply(conn, 400, f"bad CONNECT target `{target}`")
                return
            self._forward(conn, "connect", host, port, rest, lambda ok, message: _reply(
                conn, 200 if ok else (403 if message.startswith("blocked") else 502), message,
                established=ok))
            return
        if not target.lower().startswith("http://"):
            _reply(conn, 400, "only absolute-form `http://` requests and CONNECT are proxied")
            return
        rest_of_url = target[7:]
        authority, slash, path = rest_of_url.partition("/")
        host, port = _split_host_port(authority.rsplit("@", 1)[-1], 80)
        if host is None or port is None:
            _reply(conn, 400, f"bad request target `{target}`")
            return
        headers = [line for line in lines[1:] if line.split(":", 1)[0].strip().lower() not in (
            "proxy-connection", "proxy-authorization", "connection", "keep-alive")]
        request = "\r\n".join([f"{method} /{path if slash else ''} {version}", *headers, "Connection: close"])
        payload = request.encode("latin-1") + b"\r\n\r\n" + rest
        self._forward(conn, "http", host, port, payload, lambda ok, message: None if ok else _reply(
            conn, 403 if message.startswith("blocked") else 502, message))

    def _socks(self, conn: socket.socket) -> None:
        greeting = _recv_exact(conn, 2)
        methods = _recv_exact(conn, greeting[1])
        if 0 not in methods:
            conn.sendall(b"\x05\xff")
            return
        conn.sendall(b"\x05\x00")
        version, command, _, atyp = _recv_exact(conn, 4)
        if atyp == 1:
            host = _socket.inet_ntop(_socket.AF_INET, _recv_exact(conn, 4))
        elif atyp == 4:
            host = _socket.inet_ntop(_socket.AF_INET6, _recv_exact(conn, 16))
        elif atyp == 3:
            host = _recv_exact(conn, _recv_exact(conn, 1)[0]).decode("latin-1")
        else:
            conn.sendall(b"\x05\x08\x00\x01\0\0\0\0\0\0")
            return
        port = int.from_bytes(_recv_exact(conn, 2), "big")
        if version != 5 or command != 1:
            conn.sendall(b"\x05\x07\x00\x01\0\0\0\0\0\0")  # command not supported (only CONNECT)
            return

        def answer(ok: bool, message: str) -> None:
            code = 0 if ok else (2 if message.startswith("blocked") else 5)
            conn.sendall(bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0]))

        self._forward(conn, "socks5", host, port, b"", answer)

    # -- clients that ignore the proxy (stockade.runtime.netstub) ------------------------------

    def _stub(self) -> Any:
        """The run's stub resolver (made with the judge), or None when the policy cannot be loaded."""
        judge = self._judge()
        if judge is None:
            return None
        with self._judge_lock:
            if self.stub is None:
                from stockade.runtime.netstub import Stub

                self.stub = Stub(judge.ir)
            return self.stub

    def _datagram(self, sock: Any) -> None:
        """Answer one DNS datagram (on the accepting thread; nothing in it waits on the network)."""
        from stockade.runtime import netstub

        try:
            packet, peer, source = netstub.receive(sock)
        except OSError:
            return
        try:
            stub = self._stub()
            reply, lookup = stub.answer(packet) if stub is not None else (None, None)
            if lookup is not None:
                self._lookup_record(lookup, "dns")
            if reply is not None:
                netstub.reply(sock, reply, peer, source)
        except Exception:  # a datagram never stops the broker
            pass

    def _dns_stream(self, conn: socket.socket) -> None:
        """Answer DNS over TCP (two-byte length before each message), a few messages per connection."""
        from stockade.runtime import netstub

        stub = self._stub()
        if stub is None:
            return
        conn.settimeout(netstub.TCP_TIMEOUT)
        for _ in range(netstub.TCP_MESSAGES):
            try:
                size = int.from_bytes(_recv_exact(conn, 2), "big")
                packet = _recv_exact(conn, size)
            except (OSError, ConnectionError):
                return
            reply, lookup = stub.answer(packet)
            if lookup is not None:
                self._lookup_record(lookup, "dns-tcp")
            if reply is None:
                return
            conn.sendall(len(reply).to_bytes(2, "big") + reply)

    def _lookup_record(self, lookup: Any, protocol: str) -> None:
        """The audit record of a refused lookup: once per name and run (a client asks for its
        ``A`` and ``AAAA`` records, and again), at most ``MAX_LOOKUP_RECORDS`` names.  An
        allowed name that could not be answered (the fake addresses are used up) is a
        problem of the run, said once."""
        if lookup.allowed:
            if lookup.reason:
                message = f"the stub resolver could not answer `{lookup.name}` and later names: {lookup.reason}"
                with self._lock:
                    if not any(p.startswith("the stub resolver could not answer") for p in self.problems):
                        self.problems.append(message)
            return
        with self._lock:
            if lookup.name in self._dns_recorded:
                return
            if len(self._dns_recorded) < MAX_LOOKUP_RECORDS:
                self._dns_recorded.add(lookup.name)
            self._dns_refused += 1
            count = self._dns_refused
        if count > MAX_LOOKUP_RECORDS:
            if count == MAX_LOOKUP_RECORDS + 1:
                self.problems.append(f"more than {MAX_LOOKUP_RECORDS} names were refused: the later ones "
                                     "were answered `NXDOMAIN` but not recorded")
            return
        decision = Decision(False, lookup.name, 53, (), lookup.reason, lookup.rule, lookup.where)
        self._record(decision, protocol)

    def _captured(self, conn: socket.socket) -> None:
        """A connection a client made to an address of its own (not the proxy's): judged as
        the name the stub handed out for a fake address, else as the address itself."""
        local = conn.getsockname()
        address, port = str(local[0]), int(local[1])
        if address.startswith("::ffff:"):
            address = address[7:]
        if address.startswith("127.") or address == "::1":
            _reset(conn)  # the sandbox's own loopback: nothing of its own listens on this port
            return
        stub = self._stub()
        if stub is None:
            _reset(conn)
            return
        host = address
        if stub.pool.contains(address):
            name = stub.pool.name(address)
            if name is None:
                self._record(Decision(False, address, port, (address,), "a fake address the stub resolver did "
                                      "not hand out"), "capture")
                _reset(conn)
                return
            host = name

        def answer(ok: bool, message: str) -> None:
            if not ok:
                _reset(conn)

        self._forward(conn, "capture", host, port, b"", answer)

    def _forward(self, conn: socket.socket, protocol: str, host: str, port: int, payload: bytes,
                 answer: Callable[[bool, str], object] | None) -> None:
        """Judge the destination, connect to a checked address, answer, relay, record."""
        assert self.judge is not None
        decision = self.judge.judge(host, port)
        shown = f"{host}:{port}" if host != HOST_LOOPBACK else f"host-loopback:{port}"
        if not decision.allowed:
            self._record(decision, protocol)
            if answer is not None:
                answer(False, f"blocked by stockade: {shown} ({_because(decision)})")
            return
        import socket

        upstream = None
        problem = ""
        for address in decision.addresses:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(CONNECT_TIMEOUT)
            try:
                sock.connect((address, port))
            except OSError as exc:
                sock.close()
                problem = exc.strerror or str(exc)
                continue
            upstream = sock
            decision = decision.replace(addresses=(address,))
            break
        if upstream is None:
            self._record(decision, protocol, error=f"cannot connect: {problem}")
            if answer is not None:
                answer(False, f"stockade: cannot connect to {shown}: {problem}")
            return
        with self._lock:
            if self._stopped:
                _close(upstream)
                return
            self._connections.add(upstream)
        started = time.monotonic()
        counts = [0, 0]
        try:
            if answer is not None:
                answer(True, "connection established")
            if payload:
                upstream.sendall(payload)
                counts[0] += len(payload)
            conn.settimeout(None)
            upstream.settimeout(None)
            back = _Task(_pump, upstream, conn, counts, 1)
            _pump(conn, upstream, counts, 0)
            back.join()
        finally:
            with self._lock:
                self._connections.discard(upstream)
            _close(upstream)
            self._record(decision, protocol, sent=counts[0], received=counts[1],
                         duration=time.monotonic() - started)

    # -- the record -----------------------------------------------------------------------------

    def _record(self, decision: Decision, protocol: str, *, sent: int | None = None, received: int | None = None,
                duration: float | None = None, error: str | None = None) -> None:
        from stockade.runtime import audit as audit_mod

        record: dict[str, Any] = {"time": audit_mod.now_iso(), **self.base, "event": "net",
                                  "decision": "allow" if decision.allowed else "deny", "protocol": protocol, "host": decision.host, "port": decision.port,
                                  "address": decision.addresses[0] if decision.addresses else None,
                                  "rule": decision.rule, "rule_at": decision.where, "reason": decision.reason}
        if error is not None:
            record["error"] = error
        if sent is not None:
            record.update(bytes_sent=sent, bytes_received=received, duration=round(duration or 0.0, 6))
        with self._lock:
            self.events.append(record)
        if self.audit_path is not None:
            try:
                audit_mod.append_record(self.audit_path, record)
            except Exception as exc:
                message = f"a network record could not be written: {exc}"
                if message not in self.problems:
                    self.problems.append(message)

    def blocked(self) -> list[dict[str, Any]]:
        """The refused connections so far (audit records)."""
        with self._lock:
            return [event for event in self.events if event["decision"] == "deny"]

    def summary(self) -> list[str]:
        """One line per refused destination, for the end of the run."""
        seen: dict[tuple[str, int, bool], tuple[dict[str, Any], int]] = {}
        for event in self.blocked():
            key = (event["host"], event["port"], str(event["protocol"]).startswith("dns"))
            first, count = seen.get(key, (event, 0))
            seen[key] = (first, count + 1)
        lines = []
        for (host, port, lookup), (event, count) in seen.items():
            shown = f"host-loopback:{port}" if host == HOST_LOOPBACK else f"{host}:{port}"
            if lookup:
                shown = f"name lookup of {host}"
            times = f", {count} times" if count > 1 else ""
            lines.append(f"blocked: {shown} ({_because(event)}{times})")
        return lines


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


def _because(decision: Decision | Mapping[str, Any]) -> str:
    if isinstance(decision, Decision):
        reason, rule, where = decision.reason, decision.rule, decision.where
    else:
        reason, rule, where = decision.get("reason", ""), decision.get("rule", ""), decision.get("rule_at", "")
    if rule:
        return f"{reason}; {rule} at {where}" if where else f"{reason}; {rule}"
    return reason


def _has_ipv6() -> bool:
    """Whether this kernel has IPv6 (the namespace gets capture on it too)."""
    return bool(_socket.has_ipv6) and os.path.exists("/proc/net/if_inet6")


def _reset(conn: Any) -> None:
    """Close ``conn`` with a reset (``SO_LINGER`` 0): the client sees the connection refused."""
    try:
        conn.setsockopt(_socket.SOL_SOCKET, _socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        conn.close()
    except OSError:
        pass


def _free_port(wanted: int, taken: set[int]) -> int:
    port = wanted
    while port in taken:
        port += 1
    return port


def _split_host_port(text: str, default: int | None) -> tuple[str | None, int | None]:
    """``host:port``, ``[v6]:port`` or a bare host (with ``default``)."""
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            return None, None
        host, rest = text[1:close], text[close + 1:]
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else None)
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" in text:
        return None, None
    else:
        host, port_text = text, ""
    if port_text is None or not host:
        return None, None
    if not port_text:
        return host, default
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None, None
    return host, int(port_text)


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the client closed the connection")
        data += chunk
    return data


def _reply(conn: socket.socket, status: int, message: str, established: bool = False) -> None:
    reasons = {200: "Connection established", 400: "Bad Request", 403: "Forbidden", 431: "Request Header Fields Too Large",
               502: "Bad Gateway"}
    if established:
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        return
    body = (message + "\n").encode("utf-8", "replace")
    conn.sendall(f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\nX-Stockade-Blocked: "
                 f"{'1' if status == 403 else '0'}\r\n\r\n".encode() + body)


def _pump(source: socket.socket, sink: socket.socket, counts: list[int], index: int) -> None:
    """Copy ``source`` to ``sink`` until the end, counting bytes; then end ``sink``'s writes.
    The bytes go through a pipe with ``splice`` (never copied into Python) where the kernel
    has it, else through a buffer."""
    try:
        if not _splice(source, sink, counts, index):
            buffer = bytearray(_BUFFER)
            view = memoryview(buffer)
            while True:
                size = source.recv_into(buffer)
                if not size:
                    break
                sink.sendall(view[:size])
                counts[index] += size
    except OSError:
        pass
    try:
        sink.shutdown(_socket.SHUT_WR)
    except OSError:
        pass


def _splice(source: socket.socket, sink: socket.socket, counts: list[int], index: int) -> bool:
    """Copy with ``os.splice`` through a pipe; False (nothing copied) when it cannot be used."""
    splice = getattr(os, "splice", None)
    if splice is None:
        return False
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        try:
            import fcntl

            fcntl.fcntl(write_end, 1031, _BUFFER * 4)  # F_SETPIPE_SZ: fewer, larger moves
        except OSError:
            pass
        src, dst = source.fileno(), sink.fileno()
        first = True
        while True:
            try:
                size = splice(src, write_end, _BUFFER * 4)
            except OSError:
                if first:
                    return False
                raise
            first = False
            if not size:
                return True
            left = size
            while left:
                left -= splice(read_end, dst, left)
            counts[index] += size
    finally:
        os.close(read_end)
        os.close(write_end)


def _close(sock: Any) -> None:
    try:
        sock.shutdown(_socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
