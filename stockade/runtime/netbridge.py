"""The network bridge: the first program inside a sandbox whose policy allows some destinations.

``stockade run`` starts it as the sandbox's command, in front of the real one::

    python3 -I -S netbridge.py CONTROL_FD 127.0.0.1:3128,127.0.0.1:1080,127.0.0.1:5432 -- COMMAND...

It runs inside the sandbox's own (empty) network namespace, under the sandbox's seccomp
filter, as the sandbox's user.  It

1. creates one listening TCP socket per address named (on the namespace's loopback);
2. hands those *listening* sockets to the host-side broker over ``CONTROL_FD`` — a stream
   ``socketpair`` end that the runtime passed through bubblewrap — as ``SCM_RIGHTS``
   ancillary data, and waits for the broker's one-byte acknowledgement;
3. closes the control descriptor and every listener (only the broker holds them now) and
   ``exec``\\ s the command.

So no process of the bridge stays behind, no unix socket is created inside the sandbox
(the seccomp filter keeps refusing ``socket(AF_UNIX)``), and no socket path of the broker
is reachable from inside: the broker accepts connections on sockets that live in the
sandbox's namespace and relays them from the host's.  A command that closes the listeners'
ports cannot, as nothing inside holds them; a command started without the broker (the
acknowledgement never comes) never starts.

It imports only C modules (``_socket``, ``posix`` via ``os``) so that it starts quickly, and
it is a script, run with ``-I -S``: no environment variable, user site or current directory
changes what it imports.
"""

import _socket
import os
import sys


def _fail(message: str, status: int = 126) -> None:
    os.write(2, f"stockade: network bridge: {message}\n".encode("utf-8", "replace"))
    os._exit(status)


def main(argv: list) -> None:
    """Listen, hand the listeners to the broker, exec the command (see the module doc)."""
    if len(argv) < 4 or argv[2] != "--":
        _fail("usage: netbridge.py FD ADDR,... -- COMMAND...", 2)
    control = int(argv[0])
    addresses = [a for a in argv[1].split(",") if a]
    command = argv[3:]
    listeners = []
    try:
        for address in addresses:
            host, _, port = address.rpartition(":")
            sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
            sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
            sock.bind((host, int(port)))
            sock.listen(512)
            listeners.append(sock)
    except OSError as exc:
        _fail(f"cannot listen on `{address}` inside the sandbox: {exc.strerror or exc}")
    fds = b"".join(s.fileno().to_bytes(4, sys.byteorder) for s in listeners)
    channel = _socket.socket(fileno=control)
    try:
        channel.sendmsg([b"L" + argv[1].encode()], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        ack = channel.recv(1)
    except OSError as exc:
        _fail(f"the network broker cannot be reached: {exc.strerror or exc}")
    if ack != b"K":
        _fail("the network broker did not accept the bridge; the command was not started")
    channel.close()
    for sock in listeners:
        sock.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        # what bubblewrap says when it cannot exec a command (the runtime maps it to 126/127)
        os.write(2, f"bwrap: execvp {command[0]}: {exc.strerror}\n".encode("utf-8", "replace"))
        os._exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
