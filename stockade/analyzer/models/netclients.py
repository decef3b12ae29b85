"""Network clients beyond curl/wget/ssh: name lookups, ICMP and route probes, scanners, text
browsers, HTTP/WebSocket/gRPC clients, FTP/TFTP, mosh, message-queue and database clients,
SMB, and container registries.

Each is data: which options take a value, and which operands name the host it talks to.  A
name lookup (``dig``, ``host``, ``nslookup``, ``getent hosts``) is judged as a contact of the
name looked up (the query reaches that name's servers: a lookup of ``secret.evil.example`` is a
way out) and of the server named with ``@server``; a registry image (``evil.example/img``)
contacts its registry.
"""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, Parsed, parse_options, register
from stockade.analyzer.models.net import contact_url, model_ssh, model_wget

#: DNS record types and classes (operands of dig/host/drill that are not names)
_RR_WORDS = frozenset({"a", "aaaa", "any", "axfr", "caa", "cname", "dnskey", "ds", "hinfo", "https", "ixfr", "mx",
                       "naptr", "ns", "nsec", "nsec3", "ptr", "rrsig", "soa", "spf", "srv", "sshfp", "svcb", "tlsa",
                       "txt", "in", "ch", "hs", "cs"})
_DIG_VALUES = {"-b", "-c", "-f", "-k", "-p", "-q", "-t", "-x", "-y", "-m"}
_HOST_VALUES = {"-c", "-N", "-R", "-t", "-W", "-m"}
_NSLOOKUP_VALUES: set[str] = set()


def _lookup(inv: Invocation, name: str, index: int | None) -> None:
    """A DNS lookup of ``name``: the query reaches the name's own servers."""
    if not name or name in (".", "localhost"):
        return
    if UNKNOWN in name:
        inv.unknown(f"looks up a name that is not known before it runs (`{show(name)}`)", index)
        suffix = name.rpartition(UNKNOWN)[2].strip(".")
        if "." in suffix:  # `$(whoami).evil.example`: the query still reaches evil.example's servers
            inv.network(suffix, 53, index)
        return
    inv.network(name.rstrip("."), 53, index)


def model_dig(inv: Invocation) -> None:
    """dig/drill/kdig/delv ``[@server] [-t TYPE] [-x ADDR] NAME [TYPE] [+opts]``: the name and the
    server are contacted; ``-f`` reads a batch of names (not visible); ``-k``/``-y`` read keys."""
    parsed = parse_options(inv.argv, _DIG_VALUES)
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-x", "-q"):
            _lookup(inv, value, index)
        elif option == "-f":
            inv.read(value, index)
            inv.unknown(f"`{inv.name} -f` looks up the names listed in `{show(value)}`", index)
        elif option == "-k":
            inv.read(value, index)
    for word, index in parsed.positionals:
        if word.startswith("@"):
            _lookup(inv, word[1:], index)
        elif word.startswith("+") or word.lower() in _RR_WORDS:
            continue
        else:
            _lookup(inv, word, index)


def model_host(inv: Invocation) -> None:
    """host/nslookup ``NAME [SERVER]``: both are contacted (nslookup with no name is interactive:
    its queries come from stdin, not visible)."""
    parsed = parse_options(inv.argv, _HOST_VALUES if inv.name == "host" else _NSLOOKUP_VALUES)
    words = [(w, i) for w, i in parsed.positionals if not (inv.name == "nslookup" and w.startswith("-"))]
    if not words and inv.name == "nslookup":
        if inv.stdin.text is None:
            inv.unknown("`nslookup` reads the names to look up from stdin", None)
        else:
            for line in inv.stdin.text.split("\n"):
                for word in line.split()[:1]:
                    _lookup(inv, word, None)
        return
    for word, index in words:
        if word.lower() in _RR_WORDS:
            continue
        _lookup(inv, word, index)


def model_getent(inv: Invocation) -> None:
    """getent DATABASE [KEY…]: ``hosts``/``ahosts*`` keys are name lookups; other databases
    (passwd, group, services…) are local reads."""
    parsed = parse_options(inv.argv, {"-s", "--service", "-i"})
    words = list(parsed.positionals)
    if not words or not words[0][0].startswith(("hosts", "ahosts")):
        return
    for word, index in words[1:]:
        _lookup(inv, word, index)


class Client:
    """A network client as data: options taking a value (``values``), the option naming the
    host (``host_options``, with a port option and a default port), how operands name hosts
    (``operands``: ``all``, ``first``, ``url``) and options whose value is read or written."""

    __slots__ = ("default_port", "flag_prefixes", "host_options", "operands", "port_options", "reads", "unknown",
                 "values", "writes")

    def __init__(self, values: str = "", host_options: str = "", port_options: str = "", default_port: int | None = None,
                 operands: str = "first", reads: str = "", writes: str = "", unknown: str = "",
                 flag_prefixes: str = ""):
        self.values = frozenset(values.split()) | frozenset(host_options.split()) | frozenset(port_options.split()) \
            | frozenset(reads.split()) | frozenset(writes.split()) | frozenset(unknown.split())
        self.host_options = frozenset(host_options.split())
        self.port_options = frozenset(port_options.split())
        self.default_port = default_port
        self.operands = operands
        self.reads = frozenset(reads.split())
        self.writes = frozenset(writes.split())
        self.unknown = frozenset(unknown.split())
        #: single-dash words starting so are one flag each, whatever follows (nmap's ``-sT``, ``-Pn``,
        #: ``-PS22``: not a cluster whose ``-T`` would take the next word as its value)
        self.flag_prefixes = tuple(flag_prefixes.split())


_PING = "-c -i -I -w -W -s -t -p -Q -l -m -M -S -T -F -g -G -N -O -b -B"
CLIENTS: dict[str, Client] = {
    # ICMP, routes and scanners: every non-numeric operand is a target
    "ping ping4 ping6 fping arping hping3 nping tracepath tracepath6": Client(_PING, operands="all"),
    "traceroute traceroute6 tcptraceroute mtr": Client("-f -g -i -m -N -p -q -s -t -w -z -z -c -P -I -o -a -b -B "
                                                     "-G -Q -L -u -T -U -Z -F -y --port --interval "
                                                     "--report-cycles --first-ttl --max-ttl --address "
                                                     "--psize --gracetime --timeout --tos --displaymode",
                                                     operands="all"),
    "nmap masscan zmap rustscan": Client("-p --ports -e -S -g --source-port --max-rate --min-rate -T --top-ports "
                                         "--exclude --script-args --max-retries --host-timeout -D -sI -b "
                                         "--data-length --ttl --spoof-mac --proxies",
                                         reads="-iL --excludefile --resume",
                                         writes="-oN -oX -oG -oA -oS -oJ -oL --output-filename",
                                         unknown="--script", operands="all", flag_prefixes="-s -P"),
    # text browsers and other URL clients: every operand is a URL (or a bare host)
    "wscat": Client("-H --header -p --protocol -s --subprotocol -o --origin --auth --ca --cert --key -w --wait "
                    "-x --execute", host_options="-c --connect", reads="--ca --cert --key", operands="url"),
    "lynx links links2 elinks w3m browsh carbonyl websocat curlie httpie wuzz": Client(
        "-o -O -H --header -c --connect -t --timeout -P --proxy -cfg -lss -cookie_file -config-file -T "
        "-session -useragent -auth -pauth -dump-charset -width -cols", operands="url",
        reads="-cmd_script -cookie_file -cfg -lss -config-file", writes="-cmd_log -trace -o --output"),
    "gnutls-cli": Client("-p --port --priority --x509cafile --x509certfile --x509keyfile --sni-hostname "
                         "--alpn --starttls-proto", port_options="-p --port", default_port=443,
                         reads="--x509cafile --x509certfile --x509keyfile", operands="first"),
    "grpcurl": Client("-d -H -rpc-header -reflect-header -proto -import-path -cacert -cert -key -authority "
                      "-servername -max-time -connect-timeout -keepalive-time -max-msg-sz -format -user-agent "
                      "-protoset -protoset-out", reads="-proto -import-path -cacert -cert -key -protoset",
                      writes="-protoset-out", operands="first", default_port=443),
    # remote shells and file transfer: the first operand is the host
    "ftp pftp tftp tnftp lftp ncftp mosh": Client("-p --port -u --user -P -o -m -r -s -c -e -f --ssh "
                                                  "--server --predict --family --bind-server --client",
                                                  reads="-f", unknown="-c -e --ssh --server", operands="first",
                                                  port_options="-p --port -P"),
    # message queues and databases: the host is an option (or a URL operand)
    "redis-cli valkey-cli keydb-cli": Client("-n -a --user --pass -r -i -x --rdb --pipe-timeout --pattern "
                                             "--count --cacert --cert --key --sni", host_options="-h -u",
                                             port_options="-p", default_port=6379, operands="none",
                                             reads="--cacert --cert --key", writes="--rdb"),
    "mosquitto_pub mosquitto_sub mosquitto_rr": Client("-t -m -i -I -q -u -P -k --will-topic --will-payload "
                                                       "--cafile --cert --key -W -C -T -V -x -e -D",
                                                       host_options="-h --host", port_options="-p --port",
                                                       default_port=1883, operands="none",
                                                       reads="-f --file --cafile --cert --key -F"),
    "mongosh mongo": Client("-u --username -p --password --authenticationDatabase --eval --file -f "
                            "--tlsCAFile --tlsCertificateKeyFile", host_options="--host", port_options="--port",
                            default_port=27017, operands="url", reads="--tlsCAFile --tlsCertificateKeyFile",
                            unknown="--eval --file -f"),
    "clickhouse-client cqlsh influx nats kcat kafkacat": Client("-u --user --password -d --database -q --query "
                                                                "-t -P -C -K -X -c -o -G -p --port",
                                                                host_options="--host -h -b --brokers -s "
                                                                             "--server",
                                                                default_port=None, operands="url"),
    "sqlcmd": Client("-U -P -d -Q -q -o -i -v -s -w -t -l -h -W -k -A -E -G -N -C -a -H -y -Y -f -r -R -e -X",
                     host_options="-S --server", default_port=1433, operands="none", reads="-i", writes="-o"),
    "mycli pgcli litecli usql": Client("-u --user -p --password -P --port -d --database -D -S --socket "
                                       "-e --execute -l --logfile --myclirc --pgclirc --liteclirc -W",
                                       host_options="-h --host", default_port=None, operands="url",
                                       writes="-l --logfile", reads="--myclirc --pgclirc --liteclirc"),
    "smbclient smbget rpcclient": Client("-U --user -W --workgroup -p --port -c --command -A "
                                         "--authentication-file -I --ip-address -n -m -s -l -d -O -t -T -D "
                                         "--directory", host_options="-L --list -I --ip-address",
                                         default_port=445, operands="unc", reads="-A --authentication-file -s",
                                         unknown="-c --command"),
}


def _bare_host(word: str) -> str:
    """The host of ``[user@]host[:port|:path]`` (an operand with no scheme)."""
    return word.rpartition("@")[2]


def _with_argv(inv: Invocation, argv: list[str]) -> Invocation:
    """``inv`` with its words respelt (as many, in the same places: the spans still fit)."""
    other = Invocation(inv.walker, argv, inv.spans, inv.stdin, inv.env, inv.span)
    return other


def client_model(client: Client):
    """A model function from a :class:`Client`."""

    # single-dash options of more than one letter (nmap's `-oN FILE`, `-iL FILE`): read whole,
    # not as a cluster of one-letter flags
    long_single = frozenset(v for v in client.values if v[1:2] != "-" and len(v) > 2)
    doubled = client.values | {"-" + v for v in long_single}

    def model(inv: Invocation) -> None:
        if client.flag_prefixes and any(len(w) > 2 and w.startswith(client.flag_prefixes) for w in inv.argv[1:]):
            inv = _with_argv(inv, [inv.argv[0], *(("--" + w[1:] if len(w) > 2 and w.startswith(client.flag_prefixes)
                                                   and w not in client.values else w) for w in inv.argv[1:])])
        if long_single and not long_single.isdisjoint(inv.argv):
            parsed = parse_options(["-" + w if w in long_single else w for w in inv.argv], doubled)
            parsed = Parsed(tuple((o[1:] if o[1:] in long_single else o, v, i) for o, v, i in parsed.options),
                            parsed.positionals)
        else:
            parsed = parse_options(inv.argv, client.values)
        port = client.default_port
        for option, value, _ in parsed.options:
            if option in client.port_options and value is not None and value.isdigit():
                port = int(value)
        hosts_given = False
        for option, value, index in parsed.options:
            if value is None:
                continue
            if option in client.host_options:
                hosts_given = True
                value = value.replace("\\", "/").lstrip("/") if "://" not in value else value  # (//host: SMB)
                contact_url(inv, value if "://" in value else _bare_host(value.split("/", 1)[0]), index, port)
            elif option in client.reads:
                inv.read(value, index)
            elif option in client.writes:
                inv.write(value, index)
            elif option in client.unknown:
                inv.unknown(f"`{inv.name} {option}` runs commands or code that cannot be seen into "
                            f"(`{show(value)[:60]}`)", index)
        words = list(parsed.positionals)
        for word, index in words:
            if word.lower().startswith(("exec:", "sh-c:", "cmd:")):  # websocat's address types that run programs
                inv.unknown(f"`{inv.name}` runs `{show(word.partition(':')[2])}` on the connection", index)
        if client.operands == "all":
            for word, index in words:
                if not word.replace(".", "").isdigit() or word.count(".") == 3:
                    contact_url(inv, word if "://" in word else _bare_host(word), index, port)
        elif client.operands == "first" and words:
            word, index = words[0]
            target = word if "://" in word else _bare_host(word)
            if len(words) > 1 and words[1][0].isdigit() and inv.name in ("ftp", "tftp", "pftp", "tnftp"):
                port = int(words[1][0])
            contact_url(inv, target, index, port)
        elif client.operands == "url":
            urls = [(word, index) for word, index in words if "://" in word]
            if not urls and not hosts_given and words and not words[0][0].startswith(("/", ".", "~")):
                urls = words[:1]  # a bare host (`lynx example.org`)
            for word, index in urls:
                contact_url(inv, word, index, port or 80)
        elif client.operands == "unc":
            for word, index in words:
                if word.startswith(("//", "\\\\")):
                    contact_url(inv, word.replace("\\", "/").lstrip("/").split("/", 1)[0], index, port)
                elif "://" in word:
                    contact_url(inv, word, index, port)
        inv.output(None, f"the output of `{inv.name}`")

    return model


for _names, _client in CLIENTS.items():
    _model = client_model(_client)
    for _name in _names.split():
        register(_name, _model)


def model_whois(inv: Invocation) -> None:
    """whois ``[-h SERVER] NAME``: asks a registry's server (``-h``, else one chosen for the
    name, not visible) about the name."""
    parsed = parse_options(inv.argv, {"-h", "--host", "-p", "--port", "-T", "-i", "-s", "-t", "-v", "-q"})
    servers = parsed.values_of("-h", "--host")
    if servers:
        contact_url(inv, servers[-1][0], servers[-1][1], 43)
    elif parsed.positionals:
        word, index = parsed.positionals[0]
        inv.unknown(f"`whois` asks a registry server it chooses about `{show(word)}`", index)


def model_autossh(inv: Invocation) -> None:
    """autossh ``[-M PORT[:ECHO]] [-f] SSH-ARGS``: ssh, with autossh's own options removed."""
    argv = list(inv.argv)
    spans = list(inv.spans)
    index = 1
    while index < len(argv):
        if argv[index] == "-M" and index + 1 < len(argv):
            del argv[index:index + 2], spans[index:index + 2]
        elif argv[index].startswith("-M") or argv[index] == "-f":
            del argv[index], spans[index]
        else:
            index += 1
    inv.argv, inv.spans = argv, spans
    model_ssh(inv)


register("getent", model_getent)
register("dig drill kdig delv", model_dig)
register("host nslookup", model_host)
register("whois", model_whois)
register("autossh", model_autossh)
register("wget2", model_wget)

# -- container registries -----------------------------------------------------------------

_CONTAINER_MODEL = MODELS.get("docker")
#: subcommands whose first operand is an image reference (or, for login, a registry)
_IMAGE_COMMANDS = frozenset({"pull", "push", "run", "create", "login", "logout", "search"})


def _registry(reference: str) -> str | None:
    """The registry host of an image reference, when it names one (``evil.example/img``,
    ``localhost:5000/x``, ``10.0.0.1/x``); Docker Hub names (``alpine``, ``library/x``) give None."""
    if "/" not in reference:
        return None
    first = reference.split("/", 1)[0]
    if "." in first or ":" in first or first == "localhost":
        return first
    return None


def model_engine(inv: Invocation) -> None:
    """docker/podman/nerdctl: the engine's model, and the registry an image reference names
    (``pull``/``push``/``run``/``create``; ``login REGISTRY``) is contacted."""
    if _CONTAINER_MODEL is not None:
        _CONTAINER_MODEL(inv)
    from stockade.analyzer.models.containers import _GLOBAL_VALUES, _RUN_VALUES

    parsed = parse_options(inv.argv, _GLOBAL_VALUES, stop_at_first_positional=True)
    if not parsed.positionals:
        return
    command, at = parsed.positionals[0]
    if command in ("image", "container") and len(inv.argv) > at + 1:
        at += 1
        command = inv.argv[at]
    if command not in _IMAGE_COMMANDS:
        return
    sub = parse_options(inv.argv, _RUN_VALUES | {"-u", "--username", "-p", "--password", "--platform", "-f",
                                                 "--filter", "--limit", "--format"},
                        start=at + 1, stop_at_first_positional=True)
    if not sub.positionals:
        return
    if command == "push" and len(sub.positionals) > 1:  # podman push IMAGE DESTINATION
        destination, at = sub.positionals[1]
        host = _registry(destination.partition("://")[2] or destination)
        if host is not None:
            contact_url(inv, "https://" + host, at, 443)
    word, index = sub.positionals[0]
    if command in ("login", "logout"):
        contact_url(inv, word if "://" in word else "https://" + word, index, 443)
        return
    host = _registry(word)
    if host is not None:
        contact_url(inv, "https://" + host, index, 443)


register("docker podman nerdctl", model_engine)
