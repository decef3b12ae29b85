"""Static file servers: they hand every file below a directory to whoever connects.

``php -S ADDR -t DIR``, busybox ``httpd -h DIR``, ``ruby -run -e httpd -- DIR``,
``darkhttpd DIR``, ``miniserve DIR``, ``serve DIR``, ``http-server DIR``, ``caddy file-server
--root DIR``: the directory named is read whole, dot-files included (the default, the working
directory, is the agent's own).  Also ruby's ``-run`` file commands (``ruby -run -e cp -- A B``
is ``cp A B``).  Each server is a row of :data:`SERVERS`; a row runs after the model the
program already has (php's and ruby's are the interpreters').
"""

from __future__ import annotations

from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, default_model, parse_options, register

#: program → (options naming the served directory, options taking another value, whether the
#: first operand is the directory, an option that must be present for it to serve)
SERVERS: dict[str, tuple[frozenset[str], frozenset[str], bool, str | None]] = {
    "php": (frozenset({"-t"}), frozenset({"-S", "-d", "-c", "-f", "-r", "-B", "-R", "-E", "-F", "-z"}), False, "-S"),
    "httpd": (frozenset({"-h"}), frozenset({"-p", "-c", "-u", "-r", "-m", "-e", "-d"}), False, None),
    "darkhttpd": (frozenset(), frozenset({"--port", "--addr", "--log", "--index", "--mimetypes", "--uid", "--gid",
                                          "--pidfile", "--auth", "--header"}), True, None),
    "miniserve": (frozenset(), frozenset({"-p", "--port", "-i", "--interfaces", "-a", "--auth", "--index",
                                          "-t", "--title", "--header", "--route-prefix"}), True, None),
    "serve": (frozenset(), frozenset({"-l", "--listen", "-p", "--port", "-c", "--config", "--ssl-cert",
                                      "--ssl-key"}), True, None),
    "http-server": (frozenset(), frozenset({"-p", "--port", "-a", "-c", "-e", "--ext", "-P", "--proxy", "-C",
                                            "--cert", "-K", "--key", "--username", "--password"}), True, None),
    "caddy": (frozenset({"--root", "-r"}), frozenset({"--listen", "-l", "--domain", "-d", "--templates"}), False,
              None),
}
#: ruby's un.rb commands (``ruby -run -e NAME -- ARGS``) that are the coreutils of that name
_RUBY_UN = frozenset({"cp", "ln", "mv", "rm", "mkdir", "rmdir", "install", "chmod", "touch"})


def _server_model(name: str, previous):
    directories, values, positional, needs = SERVERS[name]

    def model(inv: Invocation) -> None:
        previous(inv)
        if name == "caddy" and inv.argv[1:2] != ["file-server"]:
            return
        parsed = parse_options(inv.argv, directories | values, start=2 if name == "caddy" else 1,
                               stop_at_first_positional=name == "php")
        if needs is not None and not parsed.has(needs):
            return
        for value, index in parsed.values_of(*directories):
            inv.read(value, index, recursive=True)
        if positional and parsed.positionals:
            word, index = parsed.positionals[0]
            inv.read(word, index, recursive=True)

    model.__doc__ = f"{previous.__doc__ or ''} (then the directory it serves)"
    return model


def _ruby_un(previous):
    def model(inv: Invocation) -> None:
        argv = inv.argv
        if "-run" not in argv or "-e" not in argv:
            previous(inv)
            return
        at = argv.index("-e")
        command = argv[at + 1] if at + 1 < len(argv) else ""
        rest = at + 2 + (argv[at + 2:at + 3] == ["--"])
        if command in _RUBY_UN:
            inv.run(rest, argv=[command, *argv[rest:]], spans=[inv.at(at + 1), *inv.spans[rest:]])
        elif command == "httpd":  # ruby -run -e httpd -- [--port N] [--bind-address A] DIR
            parsed = parse_options(argv, {"--port", "-p", "--bind-address", "-b", "--max-clients", "-m",
                                          "--temp-dir", "--do-not-reverse-lookup", "--request-timeout", "-t",
                                          "--http-version", "--ssl-certificate", "--ssl-private-key"}, start=rest)
            for word, index in parsed.positionals[:1]:
                inv.read(word, index, recursive=True)
        else:
            previous(inv)

    model.__doc__ = f"{previous.__doc__ or ''} (`-run -e CMD`: un.rb's file commands)"
    return model


for _name in SERVERS:
    register(_name, _server_model(_name, MODELS.get(_name, default_model)))
register("ruby", _ruby_un(MODELS.get("ruby", default_model)))


#: tunnel clients: program → (the subcommands that open a tunnel — every other one only
#: configures or lists —, the relay they connect to, its port)
TUNNELS: dict[str, tuple[frozenset[str], str, int]] = {
    "ngrok": (frozenset({"http", "tcp", "tls", "start", "tunnel"}), "connect.ngrok-agent.com", 443),
    "cloudflared": (frozenset({"tunnel", "access"}), "region1.v2.argotunnel.com", 7844),
    "bore": (frozenset({"local"}), "bore.pub", 7835),
    "localtunnel lt": (frozenset(), "localtunnel.me", 443),
    # (`tailscale funnel` serves a local port on the internet, `serve` on the tailnet)
    # (`up`/`login` join the tailnet through the vendor's control server)
    "tailscale": (frozenset({"funnel", "serve", "up", "login"}), "controlplane.tailscale.com", 443),
}


def model_tunnel(inv: Invocation) -> None:
    """ngrok/cloudflared/bore/localtunnel/tailscale funnel: a tunnel exposes a local port to the internet through
    the vendor's relay, which the command contacts (judged by the network rules); other
    subcommands (``ngrok config``, ``cloudflared --version``) as a program with no model."""
    row = _TUNNEL_BY_NAME.get(inv.name)
    if row is None:  # pragma: no cover
        return
    subcommands, relay, port = row
    words = [(word, index) for index, word in enumerate(inv.argv[1:], start=1) if not word.startswith("-")]
    if not subcommands or (words and words[0][0] in subcommands):
        inv.network(relay, port, words[0][1] if words else 0)
        return
    default_model(inv)


_TUNNEL_BY_NAME = {name: row for names, row in TUNNELS.items() for name in names.split()}
for _names in TUNNELS:
    register(_names, model_tunnel)
