"""The network broker: a run's host allow-list, enforced on the host, every refusal explained.

bubblewrap can only give a sandbox all of the host's network or none of it.  For a policy
that allows some destinations (host rules, ``default allow`` with denies, ``host-loopback``
grants), ``stockade run`` gives the sandbox an empty network namespace of its own and
starts a :class:`Broker` for the run's lifetime: threads in the ``stockade`` process, on
the host.

How a connection gets out
=========================

1. bubblewrap makes the sandbox's network namespace (``--unshare-net``) and holds the
   sandbox before its command (``--block-fd``); the host opens listening TCP sockets on
   that namespace's loopback — the HTTP proxy port, the SOCKS5 port and one port per
   ``allow host-loopback:PORT`` — from a short-lived helper that enters the namespace
   (:class:`~stockade.runtime.netns.SandboxListeners`: a thread as root, a forked child
   otherwise), keeps them, and only then lets the command start.  The :class:`Broker` is
   made at the sandbox's first use of the network (:class:`~stockade.runtime.netns.Standby`
   holds the listeners until then).
   Nothing inside holds a descriptor of those listeners, and no unix socket is made or
   reachable there: the seccomp filter that refuses ``socket(AF_UNIX)`` stays as it is.
   The one program of stockade that runs inside is the connect launcher of the handoff
   (:mod:`stockade.runtime.handoff`), when a C compiler could build it: bubblewrap runs it
   in place of the command; it installs a seccomp filter on itself that sends every
   ``connect`` to a user-space listener (and refuses ``MSG_FASTOPEN`` sends and
   ``SIOCGSKNS``), sends that listener to the broker over a socket pair bubblewrap passed
   it, closes both and execs the command (same ``argv``, environment, ``/proc/self/exe``).
   It runs with the command's privileges only, and even a hostile process holding such a
   listener can only *ask* for connections: the broker judges each one.
2. The broker accepts on those sockets (they stay in the sandbox's namespace; the broker
   itself is in the host's) and speaks HTTP proxy (absolute-form requests, each framed,
   judged and recorded on its own, and ``CONNECT``), SOCKS5 (``CONNECT`` with a domain
   name, IPv4 or IPv6 address: remote name resolution, ``socks5h``) and SOCKS4/4a
   ``CONNECT`` on both proxy ports; a ``host-loopback`` port forwards to the same port on
   the host's ``127.0.0.1``.  Requests are parsed strictly (:func:`_parse_request`,
   :func:`_body_framing`): what two parsers could read differently is refused.
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

With the launcher, a connection to a ``host-loopback`` grant or to a fake address of the
stub resolver is not relayed: the broker, answering the ``connect``, judges it as above,
connects a socket of the host's namespace to the checked address and puts it in the
process in place of its own (``SECCOMP_IOCTL_NOTIF_ADDFD``), so the kernel carries the
bytes (:mod:`stockade.runtime.handoff`: how, why a handed socket cannot be re-pointed, and
its byte counts).  Every other ``connect`` the broker makes on the process's own socket,
in the sandbox's namespace; proxy clients are relayed as before.  When the broker stops,
the listener closes and every ``connect`` inside fails with ``ENOSYS``.

A client that ignores the proxy variables finds no route: the namespace has nothing but
its loopback — unless the namespace takes the routes and port 53 (the first of
:meth:`Broker.spec_attempts` that opens): then every address there is local, a stub
resolver answers DNS with fake addresses and capture listeners take the connections,
judged the same way (:mod:`stockade.runtime.netstub`).  When the broker stops (the run
ends, or it is killed), its listeners close: connections are refused (or fail with
``ENOSYS`` under the launcher's filter), never opened.
"""

from __future__ import annotations

import _socket
import _thread
import os
import time

from stockade.runtime.netns import (  # noqa: F401 - (the names this module had before they moved there)
    HTTP_PROXY_PORT,
    SOCKS_PORT,
    ListenSpec,
    SandboxListeners,
    _close,
    _has_ipv6,
    _Task,
    capture_attempts,
    libc_errno,
    libc_function,
    listener_specs,
    loopback_up,
    open_listeners,
    proxy_environment,
    proxy_ports,
)
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

#: The host name that stands for the host's loopback in the IR's queries.
HOST_LOOPBACK = "host-loopback"
#: The most bytes of an HTTP request head the broker reads.
MAX_HEAD = 65536
#: The most refused names (stub resolver) recorded in one run.
MAX_LOOKUP_RECORDS = 10000
#: Seconds to read a request head, and to connect upstream.
HEAD_TIMEOUT = 30.0
#: connections one run may hold open at once (each is a thread on the host); past it, the
#: extra ones are reset and the run's end message says so once
MAX_CONNECTIONS = 512
CONNECT_TIMEOUT = 10.0
_BUFFER = 1 << 18

def system_resolver(name: str) -> list[str]:
    """The addresses of ``name`` as the host resolves it (``getaddrinfo``), in order."""
    found = _socket.getaddrinfo(name, None, 0, _socket.SOCK_STREAM, _socket.IPPROTO_TCP)
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
            raise _socket.gaierror(_socket.EAI_NONAME, "Name or service not known")
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

        from stockade.compiler.query import ip_literal

        if not 0 < port < 65536:
            return self._refuse(host, port, f"`{port}` is not a port", self._unnamed())
        text = host.lower().rstrip(".")
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        if text == HOST_LOOPBACK:
            return self._host_loopback(host, port, "127.0.0.1")
        # every spelling a resolver takes as an address (`127.1`, `0x7f.1`, `2130706433`,
        # `::ffff:7f00:1`, `fe80::1%lo`) is judged as that address, and never looked up
        address = ip_literal(text)
        if address is None and (text == "localhost" or text.endswith(".localhost")):
            # (through the broker, `localhost` is the host's: never looked up, judged as 127.0.0.1)
            address = ip_literal("127.0.0.1")
        if address is not None:
            return self._address(host, port, address, None)
        if not _host_name(text):
            return self._refuse(host, port, "not a host name", self._unnamed())
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

    def _unnamed(self) -> NetworkDecision | None:
        """The decision to name for a destination no rule can match (not a host name, not a
        port): the policy's ``default deny`` (no rule allows such a destination); None under
        ``default allow`` (the default did not refuse it: stockade did)."""
        if self.ir.network.default != "deny":
            return None
        from stockade.compiler.query import NetworkDecision

        return NetworkDecision("", None, False, None)

    def _named(self, decision: NetworkDecision) -> NetworkDecision | None:
        """``decision`` to name as the refusal's rule when a rule decided it, else the
        default only where it is ``deny`` (:meth:`_unnamed`)."""
        return decision if decision.rule is not None else self._unnamed()

    def _host_loopback(self, host: str, port: int, address: str) -> Decision:
        decision = self.ir.network_access(HOST_LOOPBACK, port)
        if decision.allowed and decision.rule is not None and decision.rule.host.kind == "host-loopback":
            rule, where = self._rule(decision)
            return Decision(True, host, port, (address,), "allowed", rule, where)
        reason = (f"`{address}` is the host's loopback: only `allow host-loopback:{port}` reaches it"
                  if decision.rule is None or decision.allowed else "denied by a rule")
        return self._refuse(host, port, reason, self._named(decision), address)

    def _address(self, host: str, port: int, address: IPv4Address | IPv6Address,
                 by_name: NetworkDecision | None) -> Decision:
        mapped = getattr(address, "ipv4_mapped", None)
        plain = mapped if mapped is not None else address
        text = str(plain)
        from stockade.compiler.query import special_range

        kind = special_range(plain)
        if kind == "loopback" or (kind == "unspecified" and plain.is_unspecified):
            # (`0.0.0.0` and `::` reach the host's loopback; a loopback address carried in
            # another IPv6 form is connected to as the plain one)
            loopback = text if plain.is_loopback else "127.0.0.1"
            return self._host_loopback(host, port, loopback)
        if kind == "unspecified":  # the rest of 0.0.0.0/8: no address to connect to
            return self._refuse(host, port, f"`{text}` is not an address to connect to", self._unnamed(), text)
        decision = self.ir.network_access(text, port)
        resolved = f"resolves to `{text}`, " if by_name is not None else ""
        if decision.rule is not None and decision.rule.action == "deny":
            return self._refuse(host, port, f"{resolved}denied by a rule", decision, text)
        for carried in _carried_ipv4(plain):  # (`deny 203.0.113.66` holds for `64:ff9b::cb00:7142` too)
            inner = self.ir.network_access(str(carried), port)
            if inner.rule is not None and inner.rule.action == "deny":
                return self._refuse(host, port, f"{resolved}carries `{carried}`, denied by a rule", inner, text)
        if kind is not None:
            if decision.allowed and decision.rule is not None and decision.rule.host.kind == "cidr":
                rule, where = self._rule(decision)
                return Decision(True, host, port, (text,), "allowed", rule, where)
            article = "an" if kind[0] in "aeiou" else "a"
            return self._refuse(host, port, f"{resolved}{article} {kind} address: only a rule naming that "
                                             f"address or range allows it", self._named(decision), text)
        if by_name is not None:
            rule, where = self._rule(by_name)
            return Decision(True, host, port, (text,), "allowed", rule, where)
        if not decision.allowed:
            return self._refuse(host, port, "no rule allows it (an address is judged as an address)", decision, text)
        rule, where = self._rule(decision)
        return Decision(True, host, port, (text,), "allowed", rule, where)


def _carried_ipv4(address: IPv4Address | IPv6Address) -> list[IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (6to4, NAT64, Teredo), judged too."""
    if address.version != 6:
        return []
    import ipaddress

    six: Any = address
    if six.sixtofour is not None:
        return [six.sixtofour]
    if any(address in ipaddress.ip_network(net) for net in ("64:ff9b::/96", "64:ff9b:1::/48")):
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    return list(six.teredo or ())


def _host_name(text: str) -> bool:
    if not text or len(text) > 253:
        return False
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789-_")
    return all(label and len(label) <= 63 and set(label) <= allowed for label in text.split("."))


class BrokerHooks(Record):
    """What a caller of ``stockade.runtime.session.run`` may give the broker: a resolver
    (default: the host's, :func:`system_resolver`; tests give a :class:`TableResolver`) and
    ``on_start``, called with the :class:`Broker` once it holds the sandbox's listeners;
    ``capture=False``: the listeners without the stub resolver and capture, as on a kernel
    that refuses them (clients that ignore the proxy variables then find no route);
    ``handoff=False``: no connect handoff (every connection relayed, as without a C
    compiler; :mod:`stockade.runtime.handoff`)."""

    resolver: Any = None
    on_start: Any = None
    capture: bool = True
    handoff: bool = True


class Broker:
    """One run's broker (see the module docstring).

    ``load_ir`` gives the policy (called once, on the broker's thread, while the sandbox
    starts); ``base`` holds the fields every audit record of the run carries (policy,
    command, workspace, pid); records go to ``audit_path`` (None: kept in :attr:`events` only).
    """

    def __init__(self, load_ir: Callable[[], PolicyIR], *, loopback_ports: Sequence[int] = (),
                 audit_path: str | None = None, base: Mapping[str, Any] | None = None,
                 resolver: Resolver | None = None, on_start: Callable[[Broker], object] | None = None,
                 rule_ports: Sequence[int] = (), decided: Sequence[Sequence[Any]] = ()):
        self.load_ir = load_ir
        self.loopback_ports = tuple(sorted(set(loopback_ports)))
        #: the policy's decision for each ``host-loopback`` port, from the plan (a connection
        #: to one is judged without loading the policy; see :func:`stockade.runtime.plan.build_plan`)
        self.loopback_decided = {int(port): Decision(allowed, HOST_LOOPBACK, int(port), ("127.0.0.1",), reason,
                                                     rule, where)
                                 for port, allowed, reason, rule, where in decided if port in self.loopback_ports}
        #: the ports ``allow`` rules name (captured with ``capture``)
        self.rule_ports = tuple(sorted(set(rule_ports)))
        #: the listeners are opened with the namespace's capabilities: the stub resolver and
        #: transparent capture (:mod:`stockade.runtime.netstub`) come with them; ``capture_ipv6``:
        #: on IPv6 too
        self.capture = False
        self.capture_ipv6 = False
        self._attempts: list[tuple[bool, bool]] = [(False, False)]
        #: whether :meth:`spec_attempts` tries the stub resolver and capture at all
        self.may_capture = True
        self.stub: Any = None
        self._dns_recorded: set[str] = set()
        self._dns_refused = 0
        self.audit_path = audit_path
        self.base = dict(base or {})
        self.resolver = resolver
        self.on_start = on_start
        self.http_port, self.socks_port = proxy_ports(self.loopback_ports)
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
        self._over_limit = 0
        self._thread: _Task | None = None
        self._pending: tuple[Callable[..., None], tuple[Any, ...]] | None = None
        self._wake_read, self._wake_write = os.pipe2(os.O_CLOEXEC)
        #: the connect handoff (:mod:`stockade.runtime.handoff`) when the run has its launcher
        self.handoff: Any = None
        self.netns_cookie = b""

    # -- the sandbox side -------------------------------------------------------------------

    def listen_specs(self) -> list[ListenSpec]:
        """The sockets the broker holds inside the sandbox, in order
        (:func:`stockade.runtime.netns.listener_specs` for its ports and :attr:`capture`)."""
        return listener_specs(self.http_port, self.socks_port, self.loopback_ports, self.rule_ports, self.capture,
                              self.capture_ipv6)

    def environment(self) -> dict[str, str]:
        """The proxy variables for the sandbox (:func:`proxy_environment`)."""
        return proxy_environment(self.http_port, self.socks_port)

    def listen_on_host(self) -> int:
        """Listen on one port of the host's own ``127.0.0.1`` (chosen by the kernel) for both
        proxy protocols, for a sandbox that shares the host's loopback and may reach only that
        port (macOS: the Seatbelt profile's ``BROKER_PORT``); the proxy variables name it.
        :meth:`serve` then accepts on it.  Returns the port."""
        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", 0))
            sock.listen(512)
        except BaseException:
            _close(sock)
            raise
        port = sock.getsockname()[1]
        self.http_port = self.socks_port = port
        self._pending = (self._serve_listeners, ([sock], [ListenSpec("proxy", port=port)]))
        return port

    def adopt(self, listeners: Sequence[Any]) -> None:
        """Take the sandbox's listening sockets, one per :meth:`listen_specs` entry in order
        (:class:`~stockade.runtime.netns.SandboxListeners` opens them); :meth:`serve` then accepts on them."""
        if len(listeners) != len(self.listen_specs()):
            raise ValueError(f"{len(listeners)} listeners for {len(self.listen_specs())} specs")
        try:  # (the sandbox's namespace, named for the connect handoff: SO_NETNS_COOKIE, Linux 5.14)
            self.netns_cookie = listeners[0].getsockopt(_socket.SOL_SOCKET, 71, 8) if listeners else b""
        except OSError:
            self.netns_cookie = b""
        self._pending = (self._serve_listeners, (list(listeners),))

    def spec_attempts(self) -> list[list[ListenSpec]]:
        """The listener sets to try inside the sandbox's namespace, in order: with the stub
        resolver and capture on IPv4 and IPv6, on IPv4 only, then without them (a kernel or
        namespace that refuses the routes or port 53); :meth:`choose` then says which opened."""
        self._attempts = capture_attempts(self.may_capture)
        out = []
        for capture, ipv6 in self._attempts:
            self.capture, self.capture_ipv6 = capture, ipv6
            out.append(self.listen_specs())
        self.choose(0)
        return out

    def start_handoff(self, channel: Any, listener: int = -1) -> None:
        """Serve the connect handoff (:mod:`stockade.runtime.handoff`) for a sandbox whose
        command starts through the launcher, whose listener comes on ``channel`` (or came
        already: ``listener``); after :meth:`serve` (the listeners name the sandbox's namespace)."""
        from stockade.runtime.handoff import Handoff

        with self._lock:
            if self._stopped:
                channel.close()
                if listener >= 0:
                    os.close(listener)
                return
            self.handoff = Handoff(self, channel, listener)
        self.handoff.start()

    def choose(self, index: int) -> None:
        """The listeners opened are those of :meth:`spec_attempts`' entry ``index``."""
        self.capture, self.capture_ipv6 = self._attempts[index]

    def serve(self) -> None:
        """Start the broker's thread (once; from a thread in the host's network namespace),
        then call ``on_start`` here (before the caller lets the command start, however short
        the run).  Connections made before the thread runs wait in the listeners' queues."""
        pending, self._pending = self._pending, None
        if pending is not None:
            target, args = pending
            with self._lock:  # (stop() closes the wake pipe itself when no thread was started)
                self._thread = _Task(target, *args)
            if self.on_start is not None:
                self.on_start(self)

    def _serve_listeners(self, listeners: list[Any], specs: Sequence[ListenSpec] | None = None) -> None:
        """Accept on every listener (one thread, polling), a thread per connection; answer
        each datagram (the stub resolver's) on this thread; close the wake pipe at the end.
        ``specs``: what each listener serves (default: :meth:`listen_specs`)."""
        try:
            self._accept_all(listeners, specs)
        finally:
            with self._lock:
                self._close_wake()

    def _accept_all(self, listeners: list[Any], specs: Sequence[ListenSpec] | None = None) -> None:
        specs = self.listen_specs() if specs is None else specs
        with self._lock:
            if self._stopped:
                for sock in listeners:
                    _close(sock)
                return
            self._listeners = listeners
        self._ready.release()
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
        killed): from then on the sandbox's connections are refused, never opened.  Waits for
        the connections' records, not for the accepting thread (it ends on its own)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            listeners, self._listeners = self._listeners, []
            connections = list(self._connections)
            if self._thread is None:
                self._close_wake()
            else:
                os.write(self._wake_write, b"x")  # wakes the accepting thread (it closes the pipe)
            handoff = self.handoff
        if handoff is not None:
            handoff.stop()  # (connects fail with ENOSYS from here on)
        for sock in listeners:
            _close(sock)
        for sock in connections:
            _close(sock)
        here = _thread.get_ident()
        with self._lock:
            workers = [w for w in self._workers.values() if w.ident != here]
        deadline = time.monotonic() + 5
        for worker in workers:  # their connections are closed: they record them and end
            worker.join(max(deadline - time.monotonic(), 0))

    def _close_wake(self) -> None:
        """Close the wake pipe (once; under the lock)."""
        if self._wake_write >= 0:
            os.close(self._wake_read)
            os.close(self._wake_write)
            self._wake_read = self._wake_write = -1

    # -- connections ----------------------------------------------------------------------------

    def _accept(self, listener: Any, kind: str) -> None:
        try:
            fd, _ = listener._accept()
        except OSError:
            return
        conn: Any = _socket.socket(fileno=fd)  # (`_socket`: `socket` costs ~3-5 ms to import)
        with self._lock:
            if self._stopped:
                _close(conn)
                return
            if len(self._workers) >= MAX_CONNECTIONS:  # a flood: the host's threads and memory are not the sandbox's
                _reset(conn)
                self._over_limit += 1
                if self._over_limit == 1:
                    self.problems.append(f"the sandbox held more than {MAX_CONNECTIONS} connections open at once; the "
                                         "network broker reset the ones beyond that")
                return
            self._connections.add(conn)
            key = object()
            try:
                self._workers[key] = _Task(self._serve, conn, kind, key)  # (under the lock: it removes itself)
            except RuntimeError:  # no thread to be had (a flood of connections): this one is refused
                self._connections.discard(conn)
                _reset(conn)

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
            elif first == b"\x04":
                self._socks4(conn)
            elif first:
                self._http(conn)
        except (OSError, ValueError):  # (what a client sends never ends the broker, nor prints a traceback)
            pass
        finally:
            with self._lock:
                self._connections.discard(conn)
                self._workers.pop(key, None)
            _close(conn)

    def _http(self, conn: socket.socket) -> None:
        """HTTP proxy requests on one client connection, each decided on its own: a
        ``CONNECT`` (then a tunnel), or absolute-form requests, one after another (each
        forwarded with its body alone, by its own framing; the next one is read, judged and
        recorded afresh, never relayed as bytes of the first)."""
        reader = _Reader(conn)
        while True:
            try:
                head = reader.head(time.monotonic() + HEAD_TIMEOUT)
            except _HeadTooLarge:
                _reply(conn, 431, "request head too large")
                return
            if head is None:
                return
            request = _parse_request(head)
            if isinstance(request, str):
                self._refused_request(head, "http", request)
                _reply(conn, 400, request)
                return
            method, target, version, headers = request
            if method.upper() == "CONNECT":
                host, port = _split_host_port(target, None)
                if host is None or port is None:
                    self._bad_target(conn, "connect", target, f"bad CONNECT target `{target}`")
                    return
                self._forward(conn, "connect", host, port, reader.take_buffer(), lambda ok, message: _reply(
                    conn, 200 if ok else (403 if message.startswith("blocked") else 502), message,
                    established=ok))
                return
            if not self._absolute(conn, reader, method, target, version, headers):
                return

    def _refused_request(self, head: bytes, protocol: str, reason: str) -> None:
        """Record a request head refused as malformed, naming the destination its request line
        asks for when there is one (a smuggling attempt is never silent)."""
        assert self.judge is not None
        words = head.split(b"\r\n", 1)[0].split(b"\n", 1)[0].split(b" ")
        if len(words) < 2 or not words[1]:
            return  # (not a proxy request at all: nothing to name)
        target = words[1].decode("latin-1")
        if "://" in target:
            scheme, _, rest = target.partition("://")
            authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[-1]
            host, port = _split_host_port(authority, 443 if scheme.lower() == "https" else 80)
        else:
            host, port = _split_host_port(target, None)
        self._record(self.judge._refuse(host or target[:200], port or 0, reason, self.judge._unnamed()), protocol)

    def _bad_target(self, conn: socket.socket, protocol: str, target: str, message: str) -> None:
        """Answer ``400`` for a destination that cannot be parsed (a port out of range or not a
        number, a missing port, a broken IPv6 bracket), and record it: never silent."""
        assert self.judge is not None
        host, _, port_text = target.rpartition(":") if not target.endswith("]") else (target, "", "")
        port = int(port_text) if port_text.isascii() and port_text.isdigit() and len(port_text) < 10 else 0
        self._record(self.judge._refuse(host or target, port, message, self.judge._unnamed()), protocol)
        _reply(conn, 400, message)

    def _absolute(self, conn: socket.socket, reader: _Reader, method: str, target: str, version: str,
                  headers: list[tuple[str, str]]) -> bool:
        """Forward one absolute-form request (``GET http://host:port/path``) with its body;
        whether the connection may carry another request."""
        if not target.lower().startswith("http://"):
            message = "only absolute-form `http://` requests and CONNECT are proxied"
            if "://" in target:
                self._refused_request(f"{method} {target}".encode("latin-1"), "http", message)
            _reply(conn, 400, message)
            return False
        rest_of_url = target[7:]
        end = min([rest_of_url.find(c) for c in "/?#" if c in rest_of_url] or [len(rest_of_url)])
        authority, path = rest_of_url[:end], rest_of_url[end:].split("#", 1)[0]
        hostport = authority.rsplit("@", 1)[-1]
        host, port = _split_host_port(hostport, 80)
        if host is None or port is None:
            self._bad_target(conn, "http", hostport, f"bad request target `{target}`")
            return False
        framing = _body_framing(headers)
        if isinstance(framing, str):
            assert self.judge is not None
            self._record(self.judge._refuse(host, port, framing, self.judge._unnamed()), "http")
            _reply(conn, 400, framing)
            return False
        # the request goes to the host of its target: a `Host` header naming another is replaced
        # (RFC 9112 3.2.2), so a server behind an allowed address never serves another name
        kept = [f"{name}: {value}" for name, value in headers if name.lower() not in _HOP_HEADERS]
        lines = [f"{method} {path if path.startswith('/') else '/' + path} {version}", f"Host: {hostport}", *kept,
                 "Connection: close"]
        payload = "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n"
        state = {"refused": False, "more": False}

        def answer(ok: bool, message: str) -> None:
            if not ok:
                state["refused"] = True
                _reply(conn, 403 if message.startswith("blocked") else 502, message)

        def relay(client: Any, upstream: Any, counts: list[int]) -> None:
            state["more"] = _exchange(reader, client, upstream, framing, counts)

        self._forward(conn, "http", host, port, payload, answer, relay)
        return state["more"] and not state["refused"]

    def _socks(self, conn: socket.socket) -> None:
        deadline = time.monotonic() + HEAD_TIMEOUT  # (the whole request, however slowly it is sent)
        greeting = _recv_exact(conn, 2, deadline)
        methods = _recv_exact(conn, greeting[1], deadline)
        if 0 not in methods:
            conn.sendall(b"\x05\xff")
            return
        conn.sendall(b"\x05\x00")
        version, command, _, atyp = _recv_exact(conn, 4, deadline)
        if atyp == 1:
            host = _socket.inet_ntop(_socket.AF_INET, _recv_exact(conn, 4, deadline))
        elif atyp == 4:
            host = _socket.inet_ntop(_socket.AF_INET6, _recv_exact(conn, 16, deadline))
        elif atyp == 3:
            host = _recv_exact(conn, _recv_exact(conn, 1, deadline)[0], deadline).decode("latin-1")
        else:
            conn.sendall(b"\x05\x08\x00\x01\0\0\0\0\0\0")
            return
        port = int.from_bytes(_recv_exact(conn, 2, deadline), "big")
        if version != 5 or command != 1:
            conn.sendall(b"\x05\x07\x00\x01\0\0\0\0\0\0")  # command not supported (only CONNECT)
            what = {2: "BIND", 3: "UDP ASSOCIATE"}.get(command, f"command {command}") if version == 5 \
                else f"request of version {version}"
            self._record(self._refusal_of(host, port, f"SOCKS5 {what} is not served (only CONNECT)"), "socks5")
            return

        def answer(ok: bool, message: str) -> None:
            code = 0 if ok else (2 if message.startswith("blocked") else 5)
            conn.sendall(bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0]))

        self._forward(conn, "socks5", host, port, b"", answer)

    def _socks4(self, conn: socket.socket) -> None:
        """A SOCKS4 or SOCKS4a ``CONNECT`` (an IPv4 address, or a name after ``0.0.0.x``):
        judged and relayed like a SOCKS5 one; ``BIND`` is refused and recorded."""
        deadline = time.monotonic() + HEAD_TIMEOUT
        _, command = _recv_exact(conn, 2, deadline)
        port = int.from_bytes(_recv_exact(conn, 2, deadline), "big")
        address = _recv_exact(conn, 4, deadline)
        _recv_until_nul(conn, 256, deadline)  # the user id (not used)
        host = _socket.inet_ntop(_socket.AF_INET, address)
        if address[:3] == b"\0\0\0" and address[3]:  # SOCKS4a: the name follows
            host = _recv_until_nul(conn, 256, deadline).decode("latin-1")

        def answer(ok: bool, message: str) -> None:
            conn.sendall(b"\x00" + (b"\x5a" if ok else b"\x5b") + bytes(6))

        if command != 1:
            answer(False, "")
            self._record(self._refusal_of(host, port, "SOCKS4 BIND is not served (only CONNECT)"), "socks4")
            return
        self._forward(conn, "socks4", host, port, b"", answer)

    def _refusal_of(self, host: str, port: int, reason: str) -> Decision:
        """The record of a request refused for what it asks, not where: the policy's own
        refusal of the destination when it has one (with its rule), else ``reason``."""
        assert self.judge is not None
        decision = self.judge.judge(host, port) if host else None
        if decision is not None and not decision.allowed:
            return decision.replace(reason=f"{reason}; {decision.reason}")
        return self.judge._refuse(host, port, reason, self.judge._unnamed())

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
            # the sandbox's own loopback, where nothing of its own can listen on this port: said
            # in the record (a client that meant the host's service learns how it is granted)
            judge = self.judge
            assert judge is not None
            self._record(judge._refuse(address, port, f"`{address}` is the sandbox's own loopback (nothing listens "
                                       f"there); the host's is reached only by `allow host-loopback:{port}`",
                                       judge._unnamed(), address), "capture")
            _reset(conn)
            return
        stub = self._stub()
        if stub is None:
            _reset(conn)
            return
        host = address
        if stub.pool.contains(address):
            name = stub.pool.name(address)
            if name is None:
                judge = self.judge
                assert judge is not None
                self._record(judge._refuse(address, port, "a fake address the stub resolver did not hand out",
                                           judge._unnamed(), address), "capture")
                _reset(conn)
                return
            host = name

        def answer(ok: bool, message: str) -> None:
            if not ok:
                _reset(conn)

        self._forward(conn, "capture", host, port, b"", answer)

    def _unfake(self, host: str, port: int) -> tuple[str, Decision | None]:
        """Where the stub resolver hands out fake addresses, a proxied destination that is one
        (a client that resolved the name itself, ``socks5://``) is the name it stands for; one
        the stub did not hand out is refused (real addresses there are not reachable)."""
        if not self.capture:
            return host, None
        from stockade.compiler.query import ip_literal

        address = ip_literal(host)
        stub = self._stub() if address is not None and address.version == 4 else None
        if stub is None or not stub.pool.contains(str(address)):
            return host, None
        name = stub.pool.name(str(address))
        if name is None:
            assert self.judge is not None
            return host, self.judge._refuse(host, port, "a fake address the stub resolver did not hand out",
                                            self.judge._unnamed(), str(address))
        return name, None

    def _forward(self, conn: socket.socket, protocol: str, host: str, port: int, payload: bytes,
                 answer: Callable[[bool, str], object] | None,
                 relay: Callable[[Any, Any, list[int]], object] | None = None) -> None:
        """Judge the destination, connect to a checked address, answer, relay (both ways, or
        with ``relay(conn, upstream, counts)``: one HTTP exchange), record."""
        assert self.judge is not None
        host, decision = self._unfake(host, port)
        if decision is None:
            decision = self.judge.judge(host, port)
        shown = f"{host}:{port}" if host != HOST_LOOPBACK else f"host-loopback:{port}"
        if not decision.allowed:
            self._record(decision, protocol)
            if answer is not None:
                answer(False, f"blocked by stockade: {shown} ({_because(decision)})")
            return
        upstream = None
        problem = ""
        for address in decision.addresses:
            family = _socket.AF_INET6 if ":" in address else _socket.AF_INET
            sock: Any = _socket.socket(family, _socket.SOCK_STREAM)
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
            if relay is not None:
                relay(conn, upstream, counts)
            else:
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
                duration: float | None = None, error: str | None = None, handoff: str | None = None) -> None:
        """Write the audit record of ``decision``.  ``handoff``: the connection was handed to
        the sandbox (:mod:`stockade.runtime.handoff`): ``kernel`` (the counts are the
        kernel's) or ``unknown`` (no counts: the record says so)."""
        from stockade.runtime import audit as audit_mod

        record: dict[str, Any] = {"time": audit_mod.now_iso(), **self.base, "event": "net",
                                  "decision": "allow" if decision.allowed else "deny", "protocol": protocol,
                                  "host": _printable(decision.host), "port": decision.port,
                                  "address": decision.addresses[0] if decision.addresses else None,
                                  "rule": decision.rule, "rule_at": decision.where, "reason": _printable(decision.reason)}
        if error is not None:
            record["error"] = error
        if sent is not None:
            record.update(bytes_sent=sent, bytes_received=received, duration=round(duration or 0.0, 6))
        if handoff is not None:
            record["handed_over"] = True
            if sent is None:
                record.update(bytes="unknown", duration=round(duration or 0.0, 6))
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
            bracketed = f"[{host}]" if ":" in host and not host.startswith("[") else host  # (IPv6: `[::1]:80`)
            shown = f"host-loopback:{port}" if host == HOST_LOOPBACK else f"{bracketed}:{port}"
            if lookup:
                shown = f"name lookup of {host}"
            times = f", {count} times" if count > 1 else ""
            lines.append(f"blocked: {shown} ({_because(event)}{times})")
        return lines


def _printable(text: str) -> str:
    """``text`` with every character outside printable ASCII escaped (``\\x0d``): a host name
    the sandbox sent (CR, LF, terminal escapes) cannot forge lines in the records' renderings
    or the end-of-run summary."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(c if " " <= c <= "~" else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                   for c in text)


def _because(decision: Decision | Mapping[str, Any]) -> str:
    if isinstance(decision, Decision):
        reason, rule, where = decision.reason, decision.rule, decision.where
    else:
        reason, rule, where = decision.get("reason", ""), decision.get("rule", ""), decision.get("rule_at", "")
    if rule:
        return f"{reason}; {rule} at {where}" if where else f"{reason}; {rule}"
    return reason


def _reset(conn: Any) -> None:
    """Close ``conn`` with a reset (``SO_LINGER`` 0): the client sees the connection refused."""
    try:
        conn.setsockopt(_socket.SOL_SOCKET, _socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        conn.close()
    except OSError:
        pass


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
    if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        return None, None
    return host, int(port_text)


def _recv_until_nul(conn: socket.socket, limit: int, deadline: float) -> bytes:
    """Bytes up to a NUL (not kept), at most ``limit`` of them, before ``deadline``."""
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ConnectionError("too slow")
        conn.settimeout(min(left, HEAD_TIMEOUT))
        byte = conn.recv(1)
        if not byte:
            raise ConnectionError("the client closed the connection")
        if byte == b"\0":
            return data
        data += byte
        if len(data) > limit:
            raise ConnectionError("too long")


class _HeadTooLarge(Exception):
    """A request head over :data:`MAX_HEAD` bytes."""


#: The headers a proxy does not forward (hop-by-hop ones, and ``Host``: the target names it).
_HOP_HEADERS = frozenset({"host", "connection", "proxy-connection", "proxy-authorization", "keep-alive", "upgrade",
                          "te", "trailer"})
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class _Reader:
    """Buffered reads from a client: request heads (whole, bounded in size and time), then
    bodies by their framing; what was read past one request is the next one's."""

    def __init__(self, conn: socket.socket):
        self.conn = conn
        self.buffer = b""

    def _fill(self) -> bool:
        chunk = self.conn.recv(65536)
        self.buffer += chunk
        return bool(chunk)

    def head(self, deadline: float) -> bytes | None:
        """The next request head (without its blank line), None at the end of the connection.
        Raises :class:`_HeadTooLarge`, or :class:`TimeoutError` past ``deadline`` (a head sent
        a byte at a time holds no connection longer than that)."""
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > MAX_HEAD:
                raise _HeadTooLarge()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request head took too long")
            self.conn.settimeout(min(left, HEAD_TIMEOUT))
            if not self._fill():
                return None
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        if len(head) > MAX_HEAD:
            raise _HeadTooLarge()
        return head

    def take_buffer(self) -> bytes:
        """What was read past the head (the start of a tunnel's bytes)."""
        data, self.buffer = self.buffer, b""
        return data

    def read(self, most: int) -> bytes:
        """Up to ``most`` bytes (b"" at the end)."""
        if not self.buffer and not self._fill():
            return b""
        data, self.buffer = self.buffer[:most], self.buffer[most:]
        return data

    def line(self, limit: int = 4096) -> bytes:
        """One line with its CRLF; raises :class:`ValueError` for a longer one or a bare CR/LF."""
        while b"\r\n" not in self.buffer:
            if len(self.buffer) > limit or not self._fill():
                raise ValueError("a chunk line too long or cut off")
        line, _, self.buffer = self.buffer.partition(b"\r\n")
        if len(line) > limit or b"\r" in line or b"\n" in line or b"\0" in line:
            raise ValueError("a malformed chunk line")
        return line + b"\r\n"

    def pending(self) -> bool:
        """Whether the client has sent more already (a pipelined request)."""
        if self.buffer:
            return True
        from select import POLLIN, poll

        waiter = poll()
        waiter.register(self.conn.fileno(), POLLIN)
        return bool(waiter.poll(0))


def _parse_request(head: bytes) -> tuple[str, str, str, list[tuple[str, str]]] | str:
    """``(method, target, version, headers)`` of a request head, or why it is refused: a NUL,
    a bare CR or LF, a folded or malformed header line (no whitespace before the colon), a
    request line that is not ``METHOD TARGET HTTP/1.x``."""
    if b"\0" in head:
        return "a NUL in the request head"
    lines = head.decode("latin-1").split("\r\n")
    if any("\r" in line or "\n" in line for line in lines):
        return "a bare CR or LF in the request head"
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0] or not set(parts[0]) <= _TOKEN or not parts[1] \
            or parts[2] not in ("HTTP/1.0", "HTTP/1.1"):
        return "not an HTTP proxy request"
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or not set(name) <= _TOKEN:
            return f"a malformed header line `{line[:80]}`"
        headers.append((name, value.strip(" \t")))
    return parts[0], parts[1], parts[2], headers


def _body_framing(headers: Sequence[tuple[str, str]]) -> tuple[str, int] | str:
    """How a request's body is delimited: ``("length", n)``, ``("chunked", 0)``, or why the
    request is refused (framings that two parsers could read differently: both
    ``Content-Length`` and ``Transfer-Encoding``, two lengths, a coding besides ``chunked``)."""
    lengths = {value for name, value in headers if name.lower() == "content-length"}
    codings = [value.lower() for name, value in headers if name.lower() == "transfer-encoding"]
    if codings:
        if lengths or codings != ["chunked"]:
            return "an ambiguous request body (Transfer-Encoding other than one `chunked`, or with Content-Length)"
        return "chunked", 0
    if len(lengths) > 1:
        return "two different Content-Length headers"
    if lengths:
        (value,) = lengths
        if not (value.isascii() and value.isdigit()) or len(value) > 18:
            return f"a bad Content-Length `{value[:40]}`"
        return "length", int(value)
    return "length", 0


def _copy_exact(reader: _Reader, upstream: Any, left: int, counts: list[int]) -> bool:
    """Copy ``left`` bytes from the client to ``upstream``; False when the client ends first."""
    while left:
        data = reader.read(min(left, _BUFFER))
        if not data:
            return False
        upstream.sendall(data)
        counts[0] += len(data)
        left -= len(data)
    return True


def _send_body(reader: _Reader, upstream: Any, framing: tuple[str, int], counts: list[int]) -> bool:
    """Copy one request body from the client to ``upstream``; whether it was whole."""
    try:
        kind, left = framing
        if kind == "length":
            return _copy_exact(reader, upstream, left, counts)
        while True:  # chunked: size line, data, CRLF ... a zero size, trailers, a blank line
            line = reader.line()
            size_text = line[:-2].split(b";", 1)[0].strip(b" \t")
            if not size_text or len(size_text) > 16 or not all(c in b"0123456789abcdefABCDEF" for c in size_text):
                return False
            size = int(size_text, 16)
            upstream.sendall(line)
            counts[0] += len(line)
            if size == 0:
                while True:
                    trailer = reader.line(8192)
                    upstream.sendall(trailer)
                    counts[0] += len(trailer)
                    if trailer == b"\r\n":
                        return True
            if not _copy_exact(reader, upstream, size, counts):
                return False
            if reader.line(0) != b"\r\n":
                return False
            upstream.sendall(b"\r\n")
            counts[0] += 2
    except (OSError, ValueError):
        return False


def _exchange(reader: _Reader, conn: Any, upstream: Any, framing: tuple[str, int], counts: list[int]) -> bool:
    """One forwarded request: its body to ``upstream`` (beside), the answer back to the client
    until the upstream ends it (the request said ``Connection: close``).  Whether the client
    connection may go on: its body went whole and the client already sent another request
    (otherwise the client's side is ended, as a server's close ends an answer)."""
    whole = [False]

    def send() -> None:
        whole[0] = _send_body(reader, upstream, framing, counts)

    body = _Task(send)
    try:
        if not _splice_until_end(upstream, conn, counts, 1):
            buffer = bytearray(_BUFFER)
            view = memoryview(buffer)
            while True:
                size = upstream.recv_into(buffer)
                if not size:
                    break
                conn.sendall(view[:size])
                counts[1] += size
    except OSError:
        pass
    if not body.join(0):
        for sock, how in ((conn, _socket.SHUT_RD), (upstream, _socket.SHUT_RDWR)):
            try:  # (the answer is over: the rest of a body goes nowhere, and waits on neither side)
                sock.shutdown(how)
            except OSError:
                pass
        body.join()
        whole[0] = False
    go_on = whole[0] and reader.pending()
    if not go_on:
        try:
            conn.shutdown(_socket.SHUT_WR)
        except OSError:
            pass
    return go_on


def _splice_until_end(source: Any, sink: Any, counts: list[int], index: int) -> bool:
    """:func:`_splice` (the relay's zero-copy move), False where it cannot be used."""
    try:
        return _splice(source, sink, counts, index)
    except OSError:
        return True


def _recv_exact(conn: socket.socket, size: int, deadline: float | None = None) -> bytes:
    data = b""
    while len(data) < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request took too long")
            conn.settimeout(min(left, HEAD_TIMEOUT))
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
