"""Network tools: curl, wget, ssh, scp, sftp, rsync, nc/ncat/socat, telnet, ftp."""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import Parsed, parse_options, register
from stockade.analyzer.regex import LazyPattern

_DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21, "ssh": 22, "git": 9418, "ws": 80, "wss": 443,
                  "sftp": 22, "scp": 22, "rsync": 873, "telnet": 23, "ftps": 990, "smb": 445}
_URL_RE = LazyPattern(r"^(?:(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*)://)?(?:[^@/?#]*@)?"
                     r"(?P<host>\[[^\]]*\]|[^/:?#\[\]]*)(?::(?P<port>[^/?#]*))?")


def split_url(word: str, default_port: int | None = None) -> tuple[str, int | None]:
    """Host and port of a URL or ``host[:port]`` word (host may contain UNKNOWN)."""
    match = _URL_RE.match(word)
    if not match:
        return word, default_port
    host = match.group("host").strip("[]")
    scheme = (match.group("scheme") or "").lower()
    port_text = match.group("port")
    port: int | None
    if port_text and port_text.isdigit():
        port = int(port_text)
    elif port_text:
        port = None
    else:
        port = _DEFAULT_PORTS.get(scheme, default_port)
    return host, port


def contact_url(inv: Invocation, word: str, index: int | None, default_port: int | None = None) -> None:
    """The command contacts the host of a URL (an unknown host is an unknown effect)."""
    if word.startswith("file://"):  # (`file:///etc/x`, `file://localhost/etc/x`: the path)
        rest = word[7:]
        inv.read(rest if rest.startswith("/") else "/" + rest.partition("/")[2], index)
        return
    if word[:6].lower() in ("scp://", "sftp:/") or (word[:6].lower() == "ssh://" and word.count("/") > 3):
        local = _loopback_path(word)
        if local is not None and local not in ("/", "~"):  # (a file of this machine, reached through sshd)
            inv.read(local, index, recursive=True)
            if inv.name == "curl" and any(w in ("-T", "--upload-file") or w.startswith("--upload-file=")
                                          for w in inv.argv):
                inv.write(local, index)
    host, port = split_url(word, default_port)
    if not host or UNKNOWN in host:
        inv.unknown(f"contacts a host that is not known before it runs (`{show(word)}`)", index)
        return
    inv.network(host, port, index)


_CURL_VALUES = {"-o", "--output", "-d", "--data", "--data-binary", "--data-raw", "--data-ascii",
                "--data-urlencode", "--json", "-X", "--request", "-H", "--header", "-T", "--upload-file", "-u",
                "--user", "-x", "--proxy", "-A", "--user-agent", "-e", "--referer", "-F", "--form", "-K",
                "--config", "--connect-timeout", "-m", "--max-time", "-b", "--cookie", "-c", "--cookie-jar",
                "--cacert", "--cert", "--key", "-E", "-w", "--write-out", "--retry", "-r", "--range",
                "--resolve", "--connect-to", "-D", "--dump-header", "--url", "--output-dir", "--stderr",
                "--trace", "--trace-ascii", "-z", "--time-cond", "--netrc-file", "-Y", "-y", "-C",
                "--limit-rate", "--max-filesize", "--proto", "--interface", "-Q", "--quote", "--unix-socket",
                "--abstract-unix-socket", "--preproxy", "--socks4", "--socks4a", "--socks5", "--socks5-hostname",
                "--proxy-user", "-U", "--dns-servers", "--doh-url", "--variable", "--expand-url", "--etag-save",
                "--etag-compare", "--hsts", "--alt-svc", "--libcurl", "--proxy-cacert", "--capath",
                "--crlfile", "--pinnedpubkey", "--ciphers", "--local-port", "--ftp-port", "-P", "--mail-from",
                "--mail-rcpt", "--request-target", "--aws-sigv4", "--oauth2-bearer", "--parallel-max",
                "--create-file-mode", "--noproxy", "--proxy1.0", "--keepalive-time", "--expect100-timeout", "--happy-eyeballs-timeout-ms",
                "--url-query", "--retry-delay", "--retry-max-time", "--max-redirs", "--speed-limit",
                "--speed-time", "--form-string", "--cert-type", "--key-type", "--pass", "--proxy-header",
                "--tls-max", "--ftp-method", "--ftp-account", "--ftp-alternative-to-user", "--ftp-ssl-ccc-mode",
                "--krb", "--login-options", "--mail-auth", "--sasl-authzid", "--service-name",
                "--socks5-gssapi-service", "--tlsauthtype", "--tlsuser", "--tlspassword", "--proxy-tlsauthtype",
                "--proxy-tlsuser", "--proxy-tlspassword", "--proxy-key", "--proxy-cert", "--proxy-cert-type",
                "--proxy-key-type", "--proxy-pass", "--proxy-ciphers", "--proxy-crlfile", "--proxy-pinnedpubkey",
                "--proxy-service-name", "--proxy-capath", "--random-file", "--egd-file", "--delegation",
                "--dns-interface", "--dns-ipv4-addr", "--dns-ipv6-addr", "--haproxy-clientip", "--ip-tos",
                "--vlan-priority", "--trace-config", "--rate", "-t", "--telnet-option", "--tftp-blksize", "--ech",
                "--curves", "--tls13-ciphers", "--proxy-tls13-ciphers", "--hostpubmd5", "--hostpubsha256",
                "--pubkey", "--ssl-sessions", "--keepalive-cnt", "--engine", "--proto-default", "--proto-redir"}
def contact_proxies(inv: Invocation, host: str, index: int | None) -> None:
    """A command that contacts ``host`` with proxy variables set (``HTTPS_PROXY=URL cmd``,
    ``export ALL_PROXY=…``) contacts the proxy too: each proxy named is judged as a
    destination (whichever the program picks for the URL's scheme, and whether ``NO_PROXY``
    exempts the host: the strict reading)."""
    from stockade.analyzer.effects import Network, Unknown
    from stockade.analyzer.exec import PROXY_VARIABLES

    walker = inv.walker
    state = walker.state
    span = inv.at(index)
    seen: set[str] = set()
    for name in sorted(PROXY_VARIABLES):
        value = inv.env.get(name)
        if value is None and name in state.exported:
            value = state.variables.get(name)
            if value is None:
                value = UNKNOWN
        if value is None or value in seen or value.strip() == "":
            continue
        seen.add(value)
        proxy, port = split_url(value.strip(), 1080 if value.lower().startswith("socks") else 3128)
        if not proxy or UNKNOWN in proxy:
            walker.effects.append(Unknown(f"`{name}` sends the connection to `{show(host)}` through a proxy that is "
                                          f"not known before it runs (`{show(value)}`)", span))
        elif proxy != host:
            walker.effects.append(Network(proxy, port, span))


def proxies_of(inv: Invocation, host: str, index: int | None) -> None:
    """:func:`contact_proxies` when the command has proxy variables set (a command that
    contacts a host it does not name: ``git fetch`` of a configured remote)."""
    from stockade.analyzer.exec import PROXY_VARIABLES

    if not PROXY_VARIABLES.isdisjoint(inv.env) or not PROXY_VARIABLES.isdisjoint(inv.walker.state.exported):
        contact_proxies(inv, host, index)


_ENGINE_SOCKET = LazyPattern(r"(docker|podman|containerd|crio|buildkit|kubelet|lxd)[^/]*\.sock$|/run/.*docker")


_CURL_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "v": "\v"}


def curl_config_words(text: str) -> list[str] | None:
    """The command-line words a curl config file (``-K FILE``) stands for: one option a line,
    ``name = value``, ``name: value`` or ``name value`` (a name without dashes is the long
    option ``--name``), the value double-quoted (with ``\\`` escapes) or up to a blank; ``#``
    starts a comment.  None when a line cannot be read so (or it names another config)."""
    words: list[str] = []
    for raw in text.splitlines()[:512]:
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        end = 0
        while end < len(line) and line[end] not in " \t=:":
            end += 1
        name, rest = line[:end], line[end:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        option = name if name.startswith("-") else "--" + name
        if option in ("-K", "--config"):
            return None
        if not rest:
            words.append(option)
            continue
        if rest[0] == '"':
            value, position = [], 1
            while position < len(rest) and rest[position] != '"':
                char = rest[position]
                if char == "\\" and position + 1 < len(rest):
                    position += 1
                    char = _CURL_ESCAPES.get(rest[position], rest[position])
                value.append(char)
                position += 1
            if position >= len(rest):
                return None  # (an unterminated quote: curl refuses the file)
            words += [option, "".join(value)]
        else:
            words += [option, rest.split()[0]]
    return words


def _curl_config(inv: Invocation, parsed: Parsed) -> bool:
    """``curl -K FILE`` with FILE's text known (a here-string on ``-``, a file this text wrote):
    curl as if its options were on the command line (True); False when none is known."""
    from stockade.analyzer.models.text import program_text

    configs = [(option, value, index) for option, value, index in parsed.options
               if option in ("-K", "--config") and value is not None]
    if not configs:
        return False
    words: list[str] = []
    for _, value, _ in configs:
        text = program_text(inv, value)
        config = None if text is None else curl_config_words(text)
        if config is None:
            return False
        words += config
    drop = set()
    argv = list(inv.argv)
    for _, value, index in configs:  # (the index of the value's word: after the option, or joined to it)
        drop.add(index)
        before = argv[index - 1] if index > 1 else ""
        if argv[index] == value and (before == "--config" or (before[:1] == "-" and before[1:2] != "-" and
                                                               before[-1:] == "K")):
            if before in ("-K", "--config"):
                drop.add(index - 1)
            else:
                argv[index - 1] = before[:-1]  # (`-sK -`: the flags before it stay)
    argv = [word for position, word in enumerate(argv) if position not in drop]
    spans = [span for position, span in enumerate(inv.spans) if position not in drop]
    at = inv.at(configs[0][2])
    inv.run(0, argv=argv[:1] + words + argv[1:], spans=spans[:1] + [at] * len(words) + spans[1:])
    return True


def model_curl(inv: Invocation) -> None:
    """curl: URLs are contacted; ``-o`` writes, ``-O`` writes into the cwd; ``@file`` data,
    ``-T``, ``-K`` and ``--netrc-file`` read; ``-x`` contacts the proxy; a config (``-K``)
    whose text is known is read as the options it holds."""
    parsed = parse_options(inv.argv, _CURL_VALUES)
    if _curl_config(inv, parsed):
        for option, value, index in parsed.options:
            if option in ("-K", "--config") and value is not None:
                inv.read(value, index)
        return
    for option, value, index in parsed.options:
        if value is None:
            if option in ("-J", "--remote-header-name"):
                inv.write(".", index)  # a name the server chooses, in the output directory
            if option in ("-n", "--netrc"):
                inv.read("~/.netrc", index)
            continue
        if option in ("-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii",
                      "--stderr", "--output-dir", "--etag-save", "--hsts", "--alt-svc", "--libcurl"):
            inv.write(value, index, recursive=option == "--output-dir")
        elif option in ("-d", "--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json", "-F", "--form"):
            payload = value.partition("=")[2] if option in ("-F", "--form", "--data-urlencode") and "=" in value else value
            if option == "--data-urlencode" and "@" in value and "=" not in value.partition("@")[0]:
                payload = "@" + value.partition("@")[2]  # name@FILE: the content of FILE, encoded
            if payload.startswith(("@", "<")):
                path = payload[1:]
                if option in ("-F", "--form"):  # (`@FILE;type=…`, `@"FILE";type=…`: the name ends at `;`)
                    path = path[1:].partition('"')[0] if path.startswith('"') else path.partition(";")[0]
                inv.read(path, index)
        elif option in ("--url-query", "--variable", "-w", "--write-out", "-H", "--header"):
            # `name@FILE`/`@FILE` (the part before a `=` is a name): the content of FILE
            name, at, path = value.partition("@")
            if at and "=" not in name and (option in ("--url-query", "--variable") or not name) and path != "-":
                inv.read(path, index)
            if option in ("-w", "--write-out"):  # (`%output{FILE}`, `%output{>>FILE}`: the rest goes to FILE)
                for target in re.findall(r"%output\{(?:>>)?([^}]*)\}", value):
                    inv.write(target, index)
        elif option == "--dns-servers":  # the name lookups go to these servers
            for server in value.split(","):
                server = server.strip()
                if server:
                    host, _, port = server.rpartition(":") if server.count(":") == 1 else (server, "", "")
                    inv.network(host.strip("[]"), int(port) if port.isdigit() else 53, index)
        elif option == "--doh-url":
            contact_url(inv, value, index, 443)
        elif option in ("-K", "--config"):
            inv.read(value, index)
            inv.unknown(f"`curl {option}` takes URLs, outputs and options from `{value}`, which is not visible", index)
        elif option in ("-T", "--upload-file", "--cacert", "--cert", "--key", "-E",
                        "--netrc-file", "-b", "--cookie", "--proxy-cacert", "--crlfile", "--etag-compare",
                        "--proxy-key", "--proxy-cert", "--proxy-crlfile", "--random-file", "--egd-file",
                        "--proxy-capath", "--capath"):
            if option in ("-T", "--upload-file") and "{" in value and not parsed.has("-g", "--globoff"):
                for name in curl_braces(value):  # (`-T "{a,b}"`, `-T "{~/.netrc}"`: curl's own globbing)
                    inv.read(name, index)
            elif option not in ("-b", "--cookie") or "=" not in value:
                inv.read(value, index)
        elif option in ("-x", "--proxy", "--preproxy", "--socks4", "--socks4a", "--socks5", "--socks5-hostname",
                        "--proxy1.0") and value != "":  # (an empty proxy: none)
            contact_url(inv, value, index, 1080)
        elif option == "--resolve":  # [+]HOST:PORT:ADDR[,ADDR]…: HOST is reached at ADDR
            parts = value.lstrip("+").split(":", 2)
            if len(parts) == 3:
                for address in parts[2].split(","):
                    address = address.strip("[]")
                    contact_url(inv, f"[{address}]" if ":" in address else address, index,
                                int(parts[1]) if parts[1].isdigit() else None)
        elif option == "--connect-to":  # HOST1:PORT1:HOST2:PORT2: connects to HOST2 instead
            parts = value.split(":")
            if len(parts) >= 4 and parts[2]:
                inv.network(parts[2].strip("[]"), int(parts[3]) if parts[3].isdigit() else None, index)
        elif option in ("--unix-socket", "--abstract-unix-socket"):
            if _ENGINE_SOCKET.search(value):
                inv.privilege(f"`curl {option} {value}` talks to a daemon that acts as root", index)
            elif option == "--abstract-unix-socket":  # (a name no file rule covers: any local daemon)
                inv.unknown(f"`curl {option} {value}` talks to the process listening on that abstract socket", index)
            else:
                inv.write(value, index)  # connecting to a socket is writing to it
        elif option == "--url":
            contact_url(inv, value, index, 80)
    via_socket = parsed.has("--unix-socket", "--abstract-unix-socket")
    remote_name = parsed.has("-O", "--remote-name", "--remote-name-all") and not parsed.has("-J", "--remote-header-name")
    directory = next((value for option, value, _ in parsed.options if option == "--output-dir" and value), None)
    for word, index in parsed.positionals:
        if not via_socket:  # over a socket, the URL's host only names the Host header
            contact_url(inv, word, index, 80)
        if remote_name:  # `-O`: the file is named by the URL's last path component, in the cwd
            name = word.partition("#")[0].partition("?")[0].rstrip("/").rpartition("/")[2]
            if "://" not in word or not name or word.rstrip("/").endswith("://" + name):
                name = "."  # no file name in the URL: curl refuses, or names it itself
            inv.write(name if directory is None or name == "." else directory.rstrip("/") + "/" + name, index)
    inv.output(None, f"data downloaded by `{inv.name}`")


def wget_name(url: str) -> str:
    """The file wget saves a URL in without ``-O``: the last component of its path (with the
    query), ``index.html`` for a directory."""
    rest = url.partition("://")[2] if "://" in url else url
    path = rest.partition("/")[2] if "/" in rest else ""
    path = path.partition("#")[0]
    query = ""
    if "?" in path:
        path, _, query = path.partition("?")
    name = path.rpartition("/")[2] or "index.html"
    return name + ("?" + query if query else "")


#: more wget options that take a value (a separate word, or after `=`): value → role
_WGET_VALUES = {
    **dict.fromkeys(("--load-cookies", "--certificate", "--private-key", "--ca-certificate", "--crl-file",
                     "--config", "--random-file", "--hsts-file", "--egd-file", "--ca-directory"), "read"),
    **dict.fromkeys(("--save-cookies", "--warc-file", "--rejected-log", "--warc-cdx-file"), "write"),
    "--use-askpass": "unknown", "-B": "url", "--base": "url",
    **dict.fromkeys(("-D", "--domains", "--exclude-domains", "-A", "--accept", "-R", "--reject", "--accept-regex",
                     "--reject-regex", "-I", "--include-directories", "-X", "--exclude-directories", "--cut-dirs",
                     "--referer", "--http-user", "--http-password", "--ftp-user", "--ftp-password", "--proxy-user",
                     "--proxy-password", "--limit-rate", "-w", "--wait", "--waitretry", "--dns-timeout",
                     "--connect-timeout", "--read-timeout", "--bind-address", "--local-encoding",
                     "--remote-encoding", "--default-page", "--restrict-file-names", "--backups",
                     "--compression", "--progress", "--secure-protocol", "--ciphers", "--prefer-family",
                     "--retry-on-http-error", "--report-speed", "--certificate-type", "--private-key-type",
                     "--pinnedpubkey", "--warc-header", "--warc-max-size", "--regex-type"), "text"),
}


def model_wget(inv: Invocation) -> None:
    """wget: URLs contacted; ``-O``/``-o``/``-a`` write; ``-P`` writes a directory; by
    default it writes into the cwd; ``-i`` reads a URL list (unknown hosts)."""
    parsed = parse_options(inv.argv, {"-O", "--output-document", "-o", "--output-file", "-a", "--append-output",
                                      "-P", "--directory-prefix", "-i", "--input-file", "-e", "--execute",
                                      "-U", "--user-agent", "--header", "--post-data", "--post-file", "-t",
                                      "--tries", "-T", "--timeout", "-Q", "--quota", "-l", "--level",
                                      "--user", "--password", "--body-file", "--method", *_WGET_VALUES})
    wrote = False
    for option, value, index in parsed.options:
        if value is None:
            continue
        role = _WGET_VALUES.get(option)
        if role is not None:
            if role == "unknown":
                inv.unknown(f"`wget {option}` runs the program `{show(value)}`", index)
            elif role == "url":  # the base that relative links (and `-i` entries) resolve against
                contact_url(inv, value, index, 80)
            elif role != "text":
                (inv.read if role == "read" else inv.write)(value, index)
            continue
        if option in ("-O", "--output-document", "-o", "--output-file", "-a", "--append-output"):
            inv.write(value, index)
            wrote = wrote or option in ("-O", "--output-document")
        elif option in ("-P", "--directory-prefix"):
            inv.write(value, index, recursive=True)
            wrote = True
        elif option in ("-i", "--input-file", "--post-file", "--body-file"):
            inv.read(value, index)
            if option in ("-i", "--input-file"):
                inv.unknown("contacts hosts listed in a file", index)
        elif option in ("-e", "--execute"):
            setting = re.match(r"\s*(\w+)\s*=\s*(.*?)\s*$", value)
            key = setting.group(1).lower().replace("-", "_") if setting else ""
            if key in ("http_proxy", "https_proxy", "ftp_proxy") and setting:
                contact_url(inv, setting.group(2), index, 3128)
            elif key in ("use_proxy", "robots", "tries", "timeout", "quiet", "verbose", "check_certificate"):
                pass
            elif key in _WGETRC_FILES and setting and setting.group(2):  # (a file option, as a wgetrc command)
                role = _WGETRC_FILES[key]
                if role == "read":
                    inv.read(setting.group(2), index)
                else:
                    inv.write(setting.group(2), index, recursive=role == "directory")
                wrote = wrote or key in ("output_document", "dir_prefix")
            else:
                inv.unknown(f"wget runs the command `{value}`", index)
    recursive = parsed.has("-r", "--recursive", "-m", "--mirror", "-p", "--page-requisites")
    if not wrote:  # one file named from the URL in the cwd; a tree of them with -r/-m
        names = [wget_name(word) for word, _ in parsed.positionals]
        if recursive or not names or any(UNKNOWN in name for name in names) or parsed.has(
                "--content-disposition", "--trust-server-names"):
            inv.write(".", None, recursive=recursive)
        else:
            for name, (_, index) in zip(names, parsed.positionals, strict=True):
                inv.write(name, index)
    for word, index in parsed.positionals:
        contact_url(inv, word, index, 80)
    inv.output(None, "data downloaded by `wget`")


#: wgetrc commands (``-e CMD``) naming a file it writes or reads, as the option of the same name
_WGETRC_FILES = {"output_document": "write", "logfile": "write", "dir_prefix": "directory", "save_cookies": "write",
                 "post_file": "read", "body_file": "read", "load_cookies": "read",
                 "ca_certificate": "read", "certificate": "read", "private_key": "read", "hsts_file": "write"}


def _ssh_command(inv: Invocation, key: str, command: str, index: int) -> None:
    """A command line an ssh option runs locally (``ProxyCommand``, ``LocalCommand``,
    ``KnownHostsCommand``): a program in a place the agent can write is code that cannot be
    seen into (as a program named by configuration); else the command line is walked."""
    from stockade.analyzer.models.programs import first_word, judge_program

    program = first_word(command)
    if UNKNOWN in command or "/" in program or program[:1] == "~":
        judge_program(inv.walker, command, inv.at(index), f"ssh `{key}`")
        return
    inv.script(command, index, what=f"ssh `{key}`")


def curl_braces(value: str, limit: int = 64) -> list[str]:
    """The names curl's globbing makes of ``{a,b}`` sets in ``value`` (one element too:
    ``{x}`` is ``x``); ``[a-z]`` ranges are left as they are (a glob of the same names); past
    ``limit`` names, the value as written."""
    names = [""]
    position = 0
    for match in re.finditer(r"\{([^{}]*)\}", value):
        choices = match.group(1).split(",")
        names = [name + value[position:match.start()] + choice for name in names for choice in choices]
        position = match.end()
        if len(names) > limit:
            return [value]
    return [name + value[position:] for name in names]


def _ssh_options(inv: Invocation, value: str, index: int) -> None:
    key, _, setting = value.partition("=")
    if not setting:
        key, _, setting = value.partition(" ")
    key = key.strip().lower()
    if key in ("proxycommand", "localcommand", "knownhostscommand", "remotecommand"):
        if setting.strip().lower() != "none":
            _ssh_command(inv, key, setting.strip(), index)
    elif key == "userknownhostsfile":  # read, and new host keys are added to it
        for path in setting.split():
            inv.read(path, index)
            inv.write(path, index)
    elif key in ("identityfile", "certificatefile"):
        inv.read(setting.strip(), index)
    elif key == "proxyjump":
        for hop in setting.strip().split(","):
            contact_url(inv, "ssh://" + hop.rpartition("@")[2], index, 22)
    elif key == "hostname":  # the host actually contacted, whatever the alias given
        contact_url(inv, "ssh://" + setting.strip(), index, 22)
    elif key in ("include", "identityagent", "globalknownhostsfile", "revokedhostkeys"):
        inv.read(setting.strip(), index)
    elif key in ("controlpath", "userknownhostsfile-write"):
        inv.write(setting.strip(), index)
    elif key in ("pkcs11provider", "securitykeyprovider") and setting.strip().lower() not in ("none", "internal", ""):
        _loaded_library(inv, f"ssh -o {key}", setting.strip(), index)


def _loaded_library(inv: Invocation, what: str, path: str, index: int | None) -> None:
    """ssh loads the shared library ``path`` (``-I``, ``PKCS11Provider``): its code runs in
    ssh; one where the agent can write (or a bare name, looked up) cannot be seen into."""
    from stockade.analyzer.models.programs import agent_writable

    inv.read(path, index)
    resolved = inv.path(path)
    if UNKNOWN in resolved or agent_writable(inv.walker, resolved):
        inv.unknown(f"`{what} {show(path)}` loads a shared library where the agent can write: its code cannot be "
                    "seen into", index)


_SSH_VALUES = {"-o", "-i", "-F", "-p", "-l", "-J", "-L", "-R", "-D", "-W", "-b", "-c", "-E", "-e", "-I", "-m",
               "-O", "-Q", "-S", "-w", "-B", "-P"}


def model_ssh(inv: Invocation) -> None:
    """ssh: contacts the host (``-p`` port); ``-o ProxyCommand=…`` runs local shell code;
    ``-F``/``-i`` read; a remote command runs on the other machine."""
    parsed = parse_options(inv.argv, _SSH_VALUES, stop_at_first_positional=True)
    options = parsed.options
    if parsed.positionals and inv.argv[parsed.positionals[0][1] - 1] != "--":
        # OpenSSH parses options again after the destination, up to the remote command
        # (`ssh host -o ProxyJump=… cmd`)
        options += parse_options(inv.argv, _SSH_VALUES, start=parsed.positionals[0][1] + 1,
                                 stop_at_first_positional=True).options
    port = 22
    for option, value, index in options:
        if value is None:
            continue
        if option == "-o":
            _ssh_options(inv, value, index)
        elif option in ("-i", "-F", "-E"):
            (inv.write if option == "-E" else inv.read)(value, index)
            if option == "-F" and value != "/dev/null" and inv.name == "ssh":
                inv.unknown(f"`ssh -F {show(value)}` reads a configuration file, whose `ProxyCommand`/"
                            "`LocalCommand`/`Match exec` can run commands and whose `HostName` can name "
                            "any host", index)
        elif option == "-S" and inv.name in ("ssh", "autossh") and value.lower() != "none":
            inv.write(value, index)  # (the control socket, as `-o ControlPath=`: made there with -M)
        elif option == "-I" and inv.name == "ssh":  # (a PKCS#11 library)
            _loaded_library(inv, "ssh -I", value, index)
        elif option == "-p" and value.isdigit():
            port = int(value)
        elif option == "-J":
            contact_url(inv, "ssh://" + value, index, 22)
        elif option in ("-W", "-L") and inv.name == "ssh":  # stdio or a local port forwarded to HOST:PORT
            fields = value.rsplit(":", 2) if option == "-L" else value.rsplit(":", 1)
            host = fields[-2] if len(fields) >= 2 else ""
            if host and not host.startswith("/") and UNKNOWN not in host:
                target_port = fields[-1]
                inv.network(host.strip("[]").lower(), int(target_port) if target_port.isdigit() else None, index)
        elif option == "-D" and inv.name == "ssh":
            inv.unknown(f"`ssh -D {show(value)}` opens a SOCKS proxy: what is reached through it is not known", index)
    renamed = any(option == "-o" and value is not None and value.strip().lower().startswith("hostname")
                  for option, value, _ in options)  # -o HostName=…: the alias is not contacted
    if parsed.positionals and not renamed:
        host, index = parsed.positionals[0]
        contact_url(inv, "ssh://" + host.rpartition("@")[2] + (f":{port}" if ":" not in host else ""), index, port)
    if parsed.positionals and inv.name in ("ssh", "autossh", "mosh"):
        host, index = parsed.positionals[0]
        name = host.rpartition("@")[2]
        for option, value, _ in options:
            if option == "-o" and value is not None and value.strip().lower().startswith("hostname"):
                name = value.strip()[8:].lstrip(" =")
        if is_loopback(name):
            user = host.rpartition("@")[0]
            if user and user == "root":
                inv.privilege(f"`{inv.name} {show(host)}` logs in to this machine as root", index)
            _on_this_machine(inv, index)
    inv.output(None, "the output of `ssh`")


#: names and addresses of this machine (ssh to one runs the command here, as the user)
_LOOPBACK = re.compile(r"^(?:localhost(?:\.localdomain)?|ip6-localhost|127(?:\.\d{1,3}){1,3}|\[?::1\]?|0\.0\.0\.0|0)$",
                       re.I)


def _loopback_path(word: str) -> str | None:
    """The local path of ``[user@]host:path`` or ``scp://host/path`` when host is this machine
    (a relative path: below the home directory), else None."""
    if "://" in word:
        rest = word.split("://", 1)[1]
        host, _, path = rest.partition("/")
        host = host.rpartition("@")[2].rpartition(":")[0] or host.rpartition("@")[2]
        path = "/" + path
        if path.startswith("/~/"):
            path = "~" + path[2:]
    else:
        host, _, path = word.partition(":")
        host = host.rpartition("@")[2]
    if not is_loopback(host):
        return None
    return path if path.startswith(("/", "~")) else "~/" + path if path else "~"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine (``localhost``, ``127.0.0.1``, ``::1``)."""
    return bool(_LOOPBACK.match(host.strip().rstrip(".")))


def _on_this_machine(inv: Invocation, index: int) -> None:
    """``ssh localhost CMD``: CMD runs on this machine, as the user, in the home directory — the
    words after the host joined, as sshd gives them to the login shell; without one, the
    commands on its input (a known here-string or pipe: walked), or a shell for a person."""
    words = parse_options(inv.argv, _SSH_VALUES, start=index + 1, stop_at_first_positional=True).positionals
    walker = inv.walker
    if words:
        code, at = " ".join(word for word, _ in words), words[0][1]
    elif inv.stdin.text is not None:
        code, at = inv.stdin.text, index
    else:
        if inv.stdin.what != "the terminal":
            inv.unknown(f"`{inv.name}` to this machine runs the commands of {inv.stdin.what}", index)
        return
    saved = walker.state.cwd
    walker.state.cwd = walker.context.home
    try:
        inv.script(code, at, what=f"the command `{inv.name}` runs on this machine")
    finally:
        walker.state.cwd = saved


#: scp/sftp options that take a value (ssh-like: ``-o``, ``-i``, ``-F``, ``-P`` port, ``-S`` program)
_SCP_VALUES = {"-o", "-i", "-F", "-P", "-S", "-l", "-J", "-c", "-D", "-X", "-b", "-B", "-R", "-s"}
#: rsync's own: most of its single letters are flags (``-P``, ``-i``, ``-l``, ``-S``, ``-o``, ``-c`` …)
_RSYNC_VALUES = {"-e", "--rsh", "--rsync-path", "--exclude", "--include", "--exclude-from", "--include-from",
                 "--files-from", "-f", "--filter", "--port", "--password-file", "--log-file", "-T", "--temp-dir",
                 "--backup-dir", "--chmod", "-B", "--block-size", "--suffix", "--compare-dest", "--copy-dest",
                 "--link-dest", "--max-size", "--min-size", "--timeout", "--contimeout", "--bwlimit",
                 "--partial-dir", "--info", "--debug", "--out-format", "--log-file-format", "-M",
                 "--remote-option", "--usermap", "--groupmap", "--chown", "--iconv", "--modify-window",
                 "--sockopts", "--address", "--only-write-batch", "--write-batch", "--read-batch",
                 "--checksum-choice", "--compress-choice", "--compress-level", "--max-delete", "--max-alloc"}


def model_scp(inv: Invocation) -> None:
    """scp/rsync/sftp: ``host:path`` arguments contact the host; local sources are read and a
    local destination written; ``-e``/``--rsh`` (rsync) is a command run locally."""
    parsed = parse_options(inv.argv, _RSYNC_VALUES if inv.name == "rsync" else _SCP_VALUES)
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option == "-o":
            _ssh_options(inv, value, index)
        elif option in ("-e", "--rsh"):
            inv.script(value, index, what="the remote shell command")
        elif option == "--rsync-path" and inv.name == "rsync":
            # the program run on the other side, which may be this machine (localhost)
            inv.script(value, index, what="the command given to `rsync --rsync-path`")
        elif option == "-b" and inv.name == "sftp":
            from stockade.analyzer.models.devtools import sftp_batch

            sftp_batch(inv, value, index)
        elif option == "-S" and inv.name in ("scp", "sftp"):
            inv.unknown(f"{inv.name} runs the program `{value}` as its transport", index)
        elif option in ("-i", "-F", "--exclude-from", "--include-from", "--files-from", "--password-file",
                        "--read-batch") or (option == "-b" and inv.name == "sftp"):
            inv.read(value, index)
        elif option in ("--log-file", "--write-batch", "--only-write-batch", "--backup-dir", "--partial-dir",
                        "-T", "--temp-dir") and (option != "-T" or inv.name == "rsync"):
            inv.write(value, index, recursive=option in ("--backup-dir", "--partial-dir", "-T", "--temp-dir"))
        elif option in ("--link-dest", "--compare-dest", "--copy-dest") and inv.name == "rsync":
            inv.read(value, index, recursive=True)  # (files there are compared, copied or hard-linked)
    words = list(parsed.positionals)
    if inv.name == "rsync":
        _rsync_files_from(inv, parsed, words)
    if inv.name == "sftp" and words:  # sftp [user@]host[:path]: the first operand is the host
        host, index = words.pop(0)
        contact_url(inv, "ssh://" + host.split(":", 1)[0].rpartition("@")[2], index, 22)
        local = _loopback_path(host) if ":" in host else None
        if local is not None:
            inv.read(local, index, recursive=True)
        return
    remote = re.compile(r"^(?:[a-z]+://|[^/]*[^/\\]:)")
    for position, (word, index) in enumerate(words):
        is_dest = position == len(words) - 1 and len(words) > 1
        if remote.match(word) and not word.startswith("/"):
            if "://" in word:
                contact_url(inv, word, index, 22)
            else:
                contact_url(inv, "ssh://" + word.split(":", 1)[0].rpartition("@")[2], index, 22)
            local = _loopback_path(word)
            if local is not None:  # (`scp localhost:.ssh/id_rsa x`: a file of this machine's home)
                (inv.write if is_dest else inv.read)(local, index, recursive=True)
        elif is_dest:
            inv.write(word, index, recursive=True)
        else:
            inv.read(word, index, recursive=True)
            _removes_source(inv, parsed, word, index)
            if inv.name == "rsync":
                _rsync_selected(inv, parsed, word, index)


def _rsync_patterns(parsed: Parsed) -> list[str]:
    """The patterns of the files rsync is told to include (``--include=PAT``, ``-f '+ PAT'``,
    ``--filter='include PAT'``): names it copies from its sources."""
    patterns = []
    for option, value, _ in parsed.options:
        if value is None or UNKNOWN in value:
            continue
        if option == "--include":
            patterns.append(value)
        elif option in ("-f", "--filter"):
            rule, _, pattern = value.strip().partition(" ")
            if rule.partition(",")[0] in ("+", "include") and pattern.strip():
                patterns.append(pattern.strip())
    return patterns


def _rsync_selected(inv: Invocation, parsed: Parsed, source: str, index: int) -> None:
    """What rsync copies from a local source beyond the tree read: the files an include pattern
    selects (a pattern without ``/`` matches a name at any depth, one with a leading ``/`` at the
    source's top) and the names ``--files-from`` lists (relative to the source), when known."""
    base = source.rstrip("/") or "/"
    for pattern in _rsync_patterns(parsed):
        name = pattern.rstrip("/")
        if not name or name in ("*", "**", "***"):
            continue
        if name.startswith("/"):
            inv.read(base + name, index, recursive=True)
        else:
            inv.read(f"{base}/{name}", index, recursive=True)
            inv.read(f"{base}/**/{name}", index, recursive=True)
    listings = parsed.values_of("--files-from")
    if not listings:
        return
    listing = listings[-1][0]
    from stockade.analyzer.models.text import program_text

    listed = program_text(inv, listing)
    for line in (listed or "").splitlines()[:256]:  # (the names it copies, when known: read)
        name = line.strip()
        if name and UNKNOWN not in name:
            inv.read(name if name.startswith("/") else f"{base}/{name}", index, recursive=True)


def _rsync_files_from(inv: Invocation, parsed: Parsed, words: list[tuple[str, int]]) -> None:
    """``rsync --files-from=FILE SRC DEST`` with a list that is not known (a file, a pipe): the
    names it sends cannot be seen."""
    from stockade.analyzer.models.text import program_text

    for value, index in parsed.values_of("--files-from"):
        if program_text(inv, value) is None:
            inv.unknown(f"`rsync --files-from` sends the files `{show(value)}` lists, which are not known before it "
                        "runs", index)


def _removes_source(inv: Invocation, parsed: Parsed, word: str, index: int) -> None:
    """``rsync --remove-source-files``: the files it sent are deleted on the sending side."""
    if inv.name == "rsync" and parsed.has("--remove-source-files", "--remove-sent-files"):
        inv.delete(word, index, recursive=True)


#: socat address types that name a file (or a socket) on this machine
_SOCAT_FILES = frozenset({"file", "open", "gopen", "create", "pipe", "unix-connect", "unix-client", "unix-sendto",
                          "unix", "unix-listen", "abstract-connect"})


def model_nc(inv: Invocation) -> None:
    """nc/ncat/netcat/telnet/socat: contacts ``host port``; ``-e``/``-c`` run a program on
    the connection; listening accepts connections from anywhere."""
    parsed = parse_options(inv.argv, {"-e", "-c", "-p", "-s", "-w", "-i", "-q", "-x", "-X", "-P", "-O", "-I",
                                      "--exec", "--sh-exec", "--lua-exec", "-G", "-g", "-T", "-V"})
    for option, value, index in parsed.options:
        if option in ("-e", "-c", "--exec", "--sh-exec", "--lua-exec") and value is not None:
            inv.unknown(f"`{inv.name}` runs `{value}` on a network connection", index)
            if option != "--lua-exec" and UNKNOWN not in value:  # (`-c`/`--sh-exec`: `sh -c`; `-e`: a program)
                inv.script(value, index, what=f"the command `{inv.name} {option}` runs on the connection")
        if option == "-l":
            inv.network("0.0.0.0", None, index)
    words = [(w, i) for w, i in parsed.positionals]
    if inv.name == "socat":
        one_way = "-u" in inv.argv[1:] or "-U" in inv.argv[1:]
        for position, (word, index) in enumerate(words):
            lower = word.lower()
            kind, _, rest = word.partition(":")
            kind = kind.lower()
            if "/" in kind or kind.startswith("."):  # a bare file name is a GOPEN address (`./x`, `/dev/tcp/…`)
                path = word.split(",")[0]
                reading = not one_way or (position == 0) == ("-u" in inv.argv[1:])
                (inv.read if reading else inv.write)(path, index)
                if not one_way:
                    inv.write(path, index)
            elif kind in ("socks4", "socks4a", "socks5", "proxy", "proxy-connect", "socks"):
                # `SOCKS4A:PROXY:HOST:PORT[,socksport=N]`, `PROXY:PROXY:HOST:PORT[,proxyport=N]`: both the
                # proxy and, through it, the host are contacted
                fields = rest.split(",")[0].split(":")
                settings = dict(o.partition("=")[::2] for o in rest.split(",")[1:])
                proxy_port = settings.get("socksport" if kind.startswith("socks") else "proxyport", "")
                if fields and fields[0]:
                    inv.network(fields[0], int(proxy_port) if proxy_port.isdigit()
                                else 1080 if kind.startswith("socks") else 8080, index)
                if len(fields) >= 2 and fields[1]:
                    target_port = fields[2] if len(fields) > 2 else ""
                    inv.network(fields[1], int(target_port) if target_port.isdigit() else None, index)
            elif lower.startswith(("exec:", "system:")):
                command = word.split(":", 1)[1]
                inv.unknown(f"socat runs `{command}`", index)
                if UNKNOWN not in command:  # (address options after a comma are socat's: `,pty,stderr`)
                    inv.script(command.split(",")[0], index, what=f"the command socat's `{kind.upper()}` address runs")
            elif "-listen" in kind or kind in ("ssl-l", "openssl-l"):
                number, _, options = rest.partition(",")  # `TCP-LISTEN:4444,fork,bind=127.0.0.1`
                bound = [o.partition("=")[2] for o in options.split(",") if o.startswith("bind=")]
                inv.network(bound[0] if bound else "0.0.0.0", int(number) if number.isdigit() else None, index)
            elif kind in _SOCAT_FILES and rest:
                path = rest.split(",")[0]  # (address options follow a comma)
                if kind != "create":
                    inv.read(path, index)
                if kind in ("file", "open", "gopen", "create", "pipe"):  # (both ways unless -u/-U)
                    inv.write(path, index)
            elif lower.startswith(("tcp", "udp", "openssl", "ssl")) and ":" in word:
                parts = word.split(":")
                if len(parts) >= 3:
                    inv.network(parts[1], int(parts[2].split(",")[0]) if parts[2].split(",")[0].isdigit() else None, index)
        return
    if words:
        host, index = words[0]
        port = int(words[1][0]) if len(words) > 1 and words[1][0].isdigit() else None
        if UNKNOWN in host:
            inv.unknown("contacts a host that is not known before it runs", index)
        else:
            inv.network(host, port, index)


register("curl", model_curl)
register("wget", model_wget)
register("ssh", model_ssh)
def model_sshfs(inv: Invocation) -> None:
    """``sshfs [user@]host:[dir] MOUNTPOINT [-o OPTS]``: contacts host; ``-o ssh_command=CMD``
    runs CMD; on this machine (``localhost:``) the mount point shows the directory (home when
    none is given), and paths below it are that directory's."""
    parsed = parse_options(inv.argv, {"-o", "-p", "-F"})
    for value, index in parsed.values_of("-o"):
        for item in value.split(","):
            key, _, setting = item.partition("=")
            if key.strip() in ("ssh_command", "sshfs_command") and setting:
                inv.script(setting, index, what=f"the command given to `sshfs -o {key.strip()}`")
    words = list(parsed.positionals)
    if len(words) < 2:
        return
    (source, at), (mount, mount_at) = words[0], words[1]
    contact_url(inv, "ssh://" + source.split(":", 1)[0].rpartition("@")[2], at, 22)
    local = _loopback_path(source)
    if local is not None:
        target, link = inv.path(local), inv.path(mount)
        if UNKNOWN in target or UNKNOWN in link:
            inv.unknown(f"`sshfs` shows a directory of this machine at a place not known (`{show(mount)}`)", mount_at)
            return
        inv.walker.state.links[link] = target  # (as a link: later paths below the mount point are the target's)
        inv.read(local, at, recursive=True)


register("scp rsync sftp", model_scp)
register("sshfs", model_sshfs)
register("nc ncat netcat telnet socat", model_nc)


# -- listening debuggers ------------------------------------------------------------------------

#: the loopback spellings of a listening address (anything else reaches beyond this machine)
_LOOPBACK_HOSTS = frozenset({"localhost", "::1", "[::1]", "ip6-localhost"})


def listen_address(value: str, host: str, port: int) -> tuple[str, int | None]:
    """``[HOST:]PORT`` as node's ``SplitHostPort`` reads it (``[::]:9229``, ``:::9229``,
    ``0.0.0.0``, ``9229``, ``[::1]``): (host, port), with the defaults ``host`` and ``port`` for
    what is not given (a port that is not a number: None)."""
    if value.startswith("[") and value.endswith("]"):  # (an IPv6 address alone)
        return value[1:-1] or host, port
    address, colon, number = value.rpartition(":")
    if not colon:
        return (host, int(value)) if value.isdigit() else (value or host, port)
    address = address[1:-1] if address.startswith("[") and address.endswith("]") else address
    return address or host, int(number) if number.isdigit() else None


def loopback_host(host: str) -> bool:
    """Whether listening on ``host`` accepts connections from this machine only (127.0.0.0/8,
    ``::1``, ``localhost``); ``0.0.0.0``, ``::`` and every other address reach beyond it."""
    if host.lower() in _LOOPBACK_HOSTS:
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def inspector(inv: Invocation, option: str, value: str, index: int | None, port: int = 9229) -> None:
    """``node --inspect[=[HOST:]PORT]`` (deno's, bun's; ``debugpy --listen``): the debugger
    listens on HOST (default 127.0.0.1) and PORT (default ``port``) — a listening address judged
    by the network rules; and whoever connects to it runs any code in the process, so an address
    beyond the loopback (``0.0.0.0``, ``::``, an interface's address) is code that cannot be seen
    into."""
    name = inv.name if not inv.name.startswith("py:") else "python -m " + inv.name[3:]
    if UNKNOWN in value:
        inv.unknown(f"`{name} {option}` opens a debugger on an address not known before it runs", index)
        return
    host, number = listen_address(value, "127.0.0.1", port)
    inv.network(host, number, index)
    if not loopback_host(host):
        inv.unknown(f"`{name} {option}={show(value)}` opens a debugger on `{show(host)}`, beyond this "
                    "machine's loopback: whoever connects to it runs code in the process", index)


#: the options of JavaScript runtimes that open an inspector (``--inspect[=[HOST:]PORT]``)
INSPECT_OPTIONS = frozenset({"--inspect", "--inspect-brk", "--inspect-wait"})


def inspect_options(inv: Invocation, start: int, end: int, port: int = 9229) -> None:
    """The ``--inspect*=[HOST:]PORT`` options among ``inv.argv[start:end]`` (deno's, bun's: the
    value only after ``=``), judged by :func:`inspector`."""
    for index in range(start, min(end, len(inv.argv))):
        option, eq, value = inv.argv[index].partition("=")
        if eq and option in INSPECT_OPTIONS:
            inspector(inv, option, value, index, port)


def model_py_debugpy(inv: Invocation) -> None:
    """python -m debugpy --listen [HOST:]PORT | --connect [HOST:]PORT [--wait-for-client]
    SCRIPT | -m MODULE | -c CODE | --pid PID: ``--listen`` opens the debugger (default host
    127.0.0.1) — whoever connects runs code in the process (:func:`inspector`); ``--connect``
    contacts the address; the script runs (a file run), ``-c`` code and ``--pid`` (code injected
    into another process) cannot be seen into."""
    parsed = parse_options(inv.argv, {"--listen", "--connect", "-m", "-c", "--pid", "--log-to",
                                      "--configure-subProcess", "--adapter-access-token"},
                           stop_at_first_positional=True)
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option == "--listen":
            inspector(inv, option, value, index, 5678)
        elif option == "--connect":
            host, port = listen_address(value, "127.0.0.1", 5678)
            inv.network(host if UNKNOWN not in value else UNKNOWN, port, index)
        elif option == "-c":
            inv.unknown(f"inline `python` code (`{show(value)[:60]}`) cannot be seen into", index)
        elif option == "--pid":
            inv.unknown(f"`debugpy --pid {show(value)}` injects code into another process", index)
        elif option == "--log-to":
            inv.write(value, index, recursive=True)
    if parsed.positionals:
        from stockade.analyzer.models.fresh import run_file

        run_file(inv, parsed.positionals[0][0], parsed.positionals[0][1])


register("py:debugpy", model_py_debugpy)
