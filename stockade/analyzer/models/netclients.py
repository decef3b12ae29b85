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

import re

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, Parsed, parse_options, register
from stockade.analyzer.models.net import contact_url, model_scp, model_ssh, model_wget

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
    # (`--eval FILE` sends the Lua script in FILE; `--rdb`/`--functions-rdb FILE` save the server's data there)
    "redis-cli valkey-cli keydb-cli": Client("-n -a --user --pass -r -i --rdb --pipe-timeout --pattern "
                                             "--count --cacert --cacertdir --cert --key --sni -s --askpass "
                                             "--memkeys-samples --quoted-pattern", host_options="-h -u",
                                             port_options="-p", default_port=6379, operands="none",
                                             reads="--cacert --cert --key --eval --cacertdir",
                                             writes="--rdb --functions-rdb"),
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
    "mysqlsh": Client("-u --user --dbuser -p --password -S --socket -D --schema --database -e --execute -f --file "
                      "--log-file --ssl-ca --ssl-cert --ssl-key --ssl-mode --name-cache --result-format -C "
                      "--import --dbpassword --connect-timeout", host_options="--uri -h --host",
                      port_options="-P --port", default_port=3306, operands="url",
                      reads="--ssl-ca --ssl-cert --ssl-key", writes="--log-file", unknown="-e --execute -f --file"),
    # (the Apache distribution's `*.sh` names are left out: a globbed command name such as `./scripts/*.sh` would
    # be taken for one of them, see globs.command_candidates)
    "kafka-console-producer kafka-console-consumer kafka-topics kafka-consumer-groups kafka-configs": Client(
        "--topic --property --producer-property --consumer-property --group --partition --offset --max-messages "
        "--timeout-ms --formatter --partitions --replication-factor --config --compression-codec --key-serializer "
        "--value-serializer --reader-config --request-required-acks --message-send-max-retries --line-reader "
        "--entity-type --entity-name --add-config --delete-config --include --isolation-level --describe",
        host_options="--bootstrap-server --broker-list --zookeeper", default_port=9092, operands="none",
        reads="--command-config --producer.config --consumer.config --consumer-config --admin.config"),
    "memcached-tool": Client(default_port=11211, operands="first"),
    "curlftpfs": Client("-o", default_port=21, operands="first"),
    "ntpdate sntp": Client("-a -e -k -o -p -t -c -K -M -r -S -g -l -U", default_port=123, operands="all",
                           reads="-k"),
    "iperf iperf3": Client("-i --interval -t --time -n --bytes -k --blockcount -l --length -P --parallel -w --window "
                           "-M --set-mss -B --bind -O --omit -T --title -C --congestion -b --bitrate -A --affinity "
                           "-S --tos --cport -L --flowlabel --username --connect-timeout -F --file "
                           "--rsa-public-key-path --logfile --pidfile", host_options="-c --client",
                           port_options="-p --port", default_port=5201, operands="none",
                           reads="-F --file --rsa-public-key-path", writes="--logfile --pidfile"),
    # r-commands and PuTTY's plink: the first operand is the host
    "rsh rlogin remsh": Client("-l -p -e", port_options="-p", default_port=514, operands="first"),
    "plink": Client("-l -P -pw -pwfile -i -m -L -R -D -proxycmd -hostkey -sshlog -sshrawlog -serial -sercfg "
                    "-loghost -load", port_options="-P", default_port=22, reads="-i -m -pwfile",
                    writes="-sshlog -sshrawlog", unknown="-proxycmd", operands="first"),
    # Firebird's isql: `[host[/port]:]database` (a local path has no host part)
    "isql-fb isql-firebird": Client("-u -user -p -password -r -role -i -input -o -output -c -cache -ch -charset "
                                    "-t -terminator -m -merge -q -x -e -z -now", reads="-i -input",
                                    writes="-o -output", default_port=3050, operands="database"),
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
                for part in value.split(",") if "," in value and "://" not in value else [value]:  # (broker lists)
                    part = part.replace("\\", "/").lstrip("/") if "://" not in part else part  # (//host: SMB)
                    contact_url(inv, part if "://" in part else _bare_host(part.split("/", 1)[0]), index, port)
            elif option in client.reads:
                inv.read(value, index)
            elif option in client.writes:
                inv.write(value, index)
            elif option in client.unknown:
                inv.unknown(f"`{inv.name} {option}` runs commands or code that cannot be seen into "
                            f"(`{show(value)[:60]}`)", index)
                if inv.name == "lftp" and option in ("-c", "-e"):
                    lftp_commands(inv, value, index)
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
        elif client.operands == "database" and words:
            word, index = words[0]
            host, colon, _ = word.partition(":")
            if "://" in word:
                contact_url(inv, word, index, port)
            elif colon and len(host) > 1 and not host.startswith((".", "~")) and "/" not in host.rstrip("/0123456789"):
                contact_url(inv, _bare_host(host.partition("/")[0]), index, port)
            else:
                inv.read(word, index)  # (a local database file, opened for reading and writing)
                inv.write(word, index)
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


#: ClickHouse table functions whose first argument is a file (read), an address or URL (contacted), or a
#: script (run); ``INTO OUTFILE``/``FROM INFILE`` are files of the client's machine
_CH_FUNCTION = re.compile(r"\b(file|url|s3|s3Cluster|gcs|hdfs|remote|remoteSecure|cluster|mysql|postgresql|mongodb|"
                          r"redis|azureBlobStorage|executable|executablePool)\s*\(\s*'([^']*)'", re.I)
_CH_INTO = re.compile(r"\b(?:into\s+outfile|from\s+infile)\s+'([^']*)'", re.I)
_CH_WRITES_FUNCTION = re.compile(r"\binsert\s+into\s+(?:table\s+)?function\s+file\s*\(\s*'([^']*)'", re.I)


def clickhouse_sql(inv: Invocation, sql: str, index: int | None) -> None:
    """What a ClickHouse query touches outside the server: ``file('PATH')`` reads (``INSERT INTO
    FUNCTION file(…)`` writes), ``url``/``s3``/``remote``/``mysql``… contact their address,
    ``executable`` runs a script, ``INTO OUTFILE``/``FROM INFILE`` write or read a local file."""
    for name, argument in _CH_FUNCTION.findall(sql):
        kind = name.lower()
        if kind == "file":
            inv.read(argument, index)
        elif kind.startswith("executable"):
            inv.unknown(f"the query runs the script `{show(argument)}`", index)
        elif "://" in argument:
            contact_url(inv, argument, index, 443)
        elif argument:
            contact_url(inv, _bare_host(argument.split(",")[0].split("/", 1)[0]), index, None)
    for argument in _CH_WRITES_FUNCTION.findall(sql):
        inv.write(argument, index)
    for match in _CH_INTO.finditer(sql):
        (inv.write if match.group(0).lower().startswith("into") else inv.read)(match.group(1), index)


_CH_CLIENT = MODELS.get("clickhouse-client")
_CH_QUERY = frozenset({"-q", "--query"})
_CH_LOCAL_VALUES = frozenset({"-q", "--query", "--queries-file", "-S", "--structure", "--input-format",
                              "--output-format", "-N", "--table", "-f", "--file", "--database", "-d",
                              "--config-file", "-C", "--logger.log", "--logger.level", "--format", "--path"})


def _queries(inv: Invocation, parsed: Parsed) -> bool:
    """Judge the queries given with ``-q``/``--query``; whether any was given."""
    given = False
    for option, value, index in parsed.options:
        if option in _CH_QUERY and value is not None:
            given = True
            clickhouse_sql(inv, value, index)
    return given


def model_clickhouse_client(inv: Invocation) -> None:
    """clickhouse-client: the server it contacts (a :class:`Client`), and what its queries touch
    on this machine (:func:`clickhouse_sql`)."""
    if _CH_CLIENT is not None:
        _CH_CLIENT(inv)
    _queries(inv, parse_options(inv.argv, CLIENTS["clickhouse-client cqlsh influx nats kcat kafkacat"].values))


def model_clickhouse_local(inv: Invocation) -> None:
    """clickhouse-local: queries over local files (``--file``, ``file('PATH')``) with no server;
    ``--queries-file`` is read; with no query, the queries come from stdin (when known, judged)."""
    parsed = parse_options(inv.argv, _CH_LOCAL_VALUES)
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("--queries-file", "-f", "--file", "--config-file", "-C"):
            inv.read(value, index)
            if option == "--queries-file":
                inv.unknown(f"`{inv.name}` runs the queries of `{show(value)}`", index)
        elif option == "--path":
            inv.write(value, index, recursive=True)
        elif option == "--logger.log":
            inv.write(value, index)
    if not _queries(inv, parsed) and not parsed.values_of("--queries-file"):
        if inv.stdin.text is not None:
            clickhouse_sql(inv, inv.stdin.text, None)
        elif inv.stdin.what != "the terminal":
            inv.unknown(f"`{inv.name}` runs the queries of {inv.stdin.what}", None)
    inv.output(None, f"the output of `{inv.name}`")


def model_clickhouse(inv: Invocation) -> None:
    """``clickhouse client|local|SUBCOMMAND …``: the one binary's tools, each as its own program
    (``clickhouse client`` is ``clickhouse-client``); other tools (server, keeper …) are not
    modelled."""
    if len(inv.argv) < 2 or inv.argv[1].startswith("-"):
        inv.unknown("`clickhouse` runs a tool chosen by its options", 1 if len(inv.argv) > 1 else None)
        return
    tool = inv.argv[1]
    if tool in ("client", "local"):
        inv.run(1, argv=["clickhouse-" + tool, *inv.argv[2:]], spans=[inv.at(1), *inv.spans[2:]])
    else:
        inv.unknown(f"`clickhouse {show(tool)}` is not modelled", 1)


#: cluster and secret-store CLIs: the Go flags naming the server they talk to, and its default port (the
#: variables, `VAULT_ADDR` …, are judged where they are set: netenv.py)
SERVER_FLAGS: dict[str, tuple[frozenset[str], int]] = {
    "vault": (frozenset({"address", "agent-address"}), 8200),
    "consul": (frozenset({"http-addr", "grpc-addr"}), 8500),
    "nomad": (frozenset({"address"}), 4646),
    "boundary": (frozenset({"addr"}), 9200),
}


def server_flags(inv: Invocation) -> None:
    """``vault -address=URL``, ``consul -http-addr HOST:PORT`` …: the server the command talks to
    (one or two dashes, ``=VALUE`` or the next word, as Go's flag package reads them)."""
    row = SERVER_FLAGS.get(inv.name)
    if row is None:
        return
    names, port = row
    argv = inv.argv
    for index, word in enumerate(argv[1:], start=1):
        if word == "--":
            break
        name, eq, value = word.lstrip("-").partition("=")
        if not word.startswith("-") or name not in names:
            continue
        if not eq:
            if index + 1 >= len(argv):
                continue
            value = argv[index + 1]
        if value:
            contact_url(inv, value, index + (not eq), port)


_LFTP_OPEN = re.compile(r"^\s*(?:open|connect)\s+(.*)$")


def lftp_commands(inv: Invocation, text: str, index: int | None) -> None:
    """lftp's commands (``-c``/``-e``, ``;``-separated): ``open [-u U] [-p P] HOST|URL`` contacts
    the host, ``put``/``mput``/``reput`` send local files, ``mirror -R`` a local tree; the rest
    stays unknown (the caller says so)."""
    for command in re.split(r"[;\n]|&&|\|\|", text):
        words = command.split()
        if not words:
            continue
        verb = words[0]
        if verb in ("open", "connect"):
            rest = parse_options(["open", *words[1:]], {"-u", "--user", "-p", "--port", "-e", "-s", "-S",
                                                        "--env-password"}).positionals
            if rest:
                contact_url(inv, rest[0][0] if "://" in rest[0][0] else _bare_host(rest[0][0]), index, 21)
        elif verb in ("put", "mput", "reput"):
            for word, _ in parse_options([verb, *words[1:]], {"-o", "-O"}).positionals:
                inv.read(word, index)
        elif verb == "mirror" and ("-R" in words or "--reverse" in words):
            operands = parse_options(["mirror", *words[1:]], {"-x", "-X", "-i", "-I", "-P", "--parallel",
                                                              "--exclude", "--include", "-N", "--newer-than"})
            local = operands.positionals[0][0] if operands.positionals else "."
            inv.read(local, index, recursive=True)


register("getent", model_getent)
register("clickhouse-client", model_clickhouse_client)
register("clickhouse-local", model_clickhouse_local)
register("clickhouse", model_clickhouse)
register("rcp", model_scp)
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


def model_py_netlib(inv: Invocation) -> None:
    """``python -m ftplib [-d] [-r[FILE]] HOST …`` and ``python -m telnetlib [-d] HOST [PORT]``: the
    standard library's test clients contact HOST (port 21, or PORT / 23)."""
    words = [(word, index) for index, word in enumerate(inv.argv[1:], start=1) if word[:1] != "-"]
    if not words:
        return
    host, at = words[0]
    if inv.name == "py:telnetlib":
        port = words[1][0] if len(words) > 1 else "23"
        inv.network(host, int(port) if port.isdigit() else None, at)
    else:
        inv.network(host, 21, at)


register("py:ftplib py:telnetlib", model_py_netlib)
