"""Configuration files that redirect tools: where they connect, what they run.

A file such as ``.curlrc``, ``.wgetrc``, ``.npmrc``, ``pip.conf``, ``.gitconfig``,
``~/.ssh/config`` or ``.cargo/config.toml`` changes what a later run of its tool does: the
proxy or registry it talks to, a program it starts (``script-shell``, ``ProxyCommand``,
``core.pager``, ``rustc-wrapper``), whether it checks certificates.  Its tool reads it from a
place set by the project or a variable (``HOME``, ``CURL_HOME``, ``WGETRC``,
``GIT_CONFIG_GLOBAL``, ``NPM_CONFIG_USERCONFIG``), so a file of that name written anywhere is
judged, after the walk, with what this text leaves in it:

- content known (``echo 'registry=https://x/' > .npmrc``): every URL and proxy host it names
  is a destination judged by the network rules; a key that runs a program, loads more
  configuration, writes files or turns certificate checks off is the ``unknown-effects``
  verdict, naming the key;
- content not known (``cp x .npmrc``, a download): the ``unknown-effects`` verdict, naming the
  file and its tool.

``curl -K FILE`` and ``wget --config FILE`` of a file this text wrote with known content are
judged the same way (see :func:`judge_config_text`).
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, Execute, Network, Read, SpanT, Unknown, Write, show

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.exec import Invocation
    from stockade.analyzer.models import Model
    from stockade.analyzer.walker import Walker

#: file name → the tool whose configuration it is
CONFIG_NAMES: dict[str, str] = {
    ".curlrc": "curl", "_curlrc": "curl", "curlrc": "curl", ".wgetrc": "wget", "wgetrc": "wget",
    ".netrc": "curl and git", "_netrc": "curl and git",
    ".npmrc": "npm", "npmrc": "npm", ".yarnrc": "yarn", ".yarnrc.yml": "yarn", ".pnpmrc": "pnpm",
    "bunfig.toml": "bun", ".bunfig.toml": "bun", "pip.conf": "pip", "pip.ini": "pip", "uv.toml": "uv",
    ".pypirc": "twine", ".condarc": "conda", "condarc": "conda", ".gitconfig": "git", ".gitmodules": "git",
    ".gemrc": "gem", ".terraformrc": "terraform", "terraform.rc": "terraform", ".bowerrc": "bower",
    "gradle-wrapper.properties": "gradle", "maven-wrapper.properties": "maven", ".mvn/jvm.config": "maven",
    ".hgrc": "mercurial", ".wgetrc2": "wget",
}
#: path endings (a directory and a name) → tool
CONFIG_TAILS: dict[str, str] = {
    "/.ssh/config": "ssh", "/ssh/ssh_config": "ssh", "/.cargo/config.toml": "cargo", "/.cargo/config": "cargo",
    "/git/config": "git", "/.docker/config.json": "docker", "/.m2/settings.xml": "maven",
    "/.mvn/jvm.config": "maven", "/.mvn/maven.config": "maven", "/.gradle/gradle.properties": "gradle",
    "/.bundle/config": "bundler", "/.config/containers/registries.conf": "podman",
}
_TAIL_NAMES = frozenset(tail.rpartition("/")[2] for tail in CONFIG_TAILS)

#: keys whose value is a proxy or a server to talk to (lowercase, separators removed)
_HOST_KEYS = frozenset({"proxy", "x", "httpproxy", "httpsproxy", "ftpproxy", "allproxy", "preproxy", "socks5",
                        "socks5hostname", "socks4", "socks4a", "noproxy", "registry", "npmregistryserver",
                        "indexurl", "extraindexurl", "findlinks", "url", "pushurl", "insteadof", "pushinsteadof",
                        "hostname", "proxyjump", "proxyhost", "proxyport", "distributionurl", "channelalias",
                        "proxyservers", "repository", "source", "mirror", "dohurl", "connectto", "resolve"})
#: keys that make the tool run a program or load code
_CODE_KEYS = frozenset({"scriptshell", "nodeoptions", "onloadscript", "yarnpath", "plugins", "preload",
                        "rustcwrapper", "rustcworkspacewrapper", "rustc", "rustdoc", "runner", "linker", "pager",
                        "editor", "sshcommand", "hookspath", "fsmonitor", "askpass", "gitproxy", "program",
                        "textconv", "clean", "smudge", "process", "driver", "helper", "cmd", "command",
                        "proxycommand", "localcommand", "knownhostscommand", "exec", "credsstore", "credhelpers",
                        "shell", "browser", "git", "initmodule", "jvmargs", "javaagent", "update", "sshcmd",
                        "injectenvironmentfiles", "packobjectshook", "tool", "externaldiff", "sequenceeditor",
                        "credentialhelper", "gpgprogram", "macdef", "preinstall", "postinstall", "hooks"})
#: keys that load more configuration, or make the tool write or send files
_FILE_KEYS = frozenset({"config", "k", "include", "includepath", "path", "globalconfig", "userconfig",
                        "output", "o", "remotename", "uploadfile", "t", "netrcfile", "cookiejar", "c",
                        "dumpheader", "d", "trace", "traceascii", "libcurl", "stderr", "outputdocument",
                        "dirprefix", "postfile", "input", "i", "logfile", "appendoutput", "prefix", "cache",
                        "identityfile", "certificatefile", "userknownhostsfile", "controlpath", "cafile", "cert"})
#: keys (and values) that turn certificate checks off
_TLS_OFF = re.compile(r"^(?:insecure|k|strictssl|sslverify|checkcertificate|enablestrictssl|verifyssl|"
                      r"trustedhost|strictsslverify|unsafehttpwhitelist|sslnoverify|stricthostkeychecking)$")
_JSON_PAIR = re.compile(r'"([A-Za-z0-9_.@:/-]{1,80})"\s*:\s*"?([^",{}\[\]\n]*)')
_URL_RE = re.compile(r"\b[a-z][a-z0-9+.-]{1,15}://[^\s\"'<>;,)]+", re.I)
_LINE_RE = re.compile(r"^\s*-{0,2}([A-Za-z_@/:.\[\]\"' -]*?[A-Za-z0-9_\]\"'])(?:\s*(?:=|:|\s)\s*(.*?))?\s*$")
#: lines looked at in one file (past it: not followed)
_MAX_LINES = 400


def config_tool(path: str) -> str | None:
    """The tool whose configuration the file ``path`` is, or None."""
    name = path.rpartition("/")[2]
    tool = CONFIG_NAMES.get(name)
    if tool is not None:
        return tool
    if name in _TAIL_NAMES:
        for tail, owner in CONFIG_TAILS.items():
            if path.endswith(tail):
                return owner
    if name in ("config", "config.worktree") and "/.git/" in path:  # (a submodule's or a worktree's:
        return "git"  # `.git/modules/NAME/config`, `.git/worktrees/NAME/config.worktree`)
    return None


def _key(text: str) -> str:
    """A key reduced to its last component, lowercase, without separators
    (``http.https://x.proxy`` → ``proxy``, ``script-shell`` → ``scriptshell``)."""
    text = text.strip().strip("[]\"'").lower()
    if text.startswith("//"):  # `//registry.example/:_authToken`: a credential for that host
        return "authtoken"
    text = text.rpartition(".")[2] if "://" not in text else text.rsplit(".", 1)[-1]
    return re.sub(r"[-_ ]", "", text.rpartition(":")[2] if text.startswith("@") else text)


def judge_config_text(walker: Walker, tool: str, path: str, text: str, span: SpanT) -> None:
    """Judge the known content ``text`` of configuration file ``path`` of ``tool``."""
    from stockade.analyzer.models.net import split_url

    shown = show(path)
    text = text.replace("\\:", ":")  # (`https\://x` in a .properties file)
    if text.lstrip()[:1] in ("{", "["):  # JSON: one `key = value` line per string member
        text = "\n".join(f"{key} = {value}" for key, value in _JSON_PAIR.findall(text)) + "\n" + text
    hosts: set[tuple[str, int | None]] = set()
    for found in _URL_RE.finditer(text):
        host, port = split_url(found.group())
        if host and UNKNOWN not in host:
            hosts.add((host, port))
    reported: set[str] = set()
    section = ""
    for number, line in enumerate(text.splitlines()):
        if number >= _MAX_LINES:
            walker.effects.append(Unknown(f"`{shown}` ({tool}'s configuration) is longer than {_MAX_LINES} lines: "
                                          "the rest is not followed", span))
            break
        stripped = line.strip()
        if stripped[:1] == "[" and stripped.endswith("]"):
            section = stripped[1:-1].strip().split()[0].lower() if stripped[1:-1].strip() else ""
            continue
        if not stripped or stripped[0] in "#;!":
            continue
        match = _LINE_RE.match(stripped)
        if match is None:
            continue
        key, value = _key(match.group(1)), (match.group(2) or "").strip().strip("\"'")
        if key in _HOST_KEYS and value and "://" not in value and key not in ("noproxy", "source", "repository"):
            host, port = split_url(value.split()[0], 3128 if "proxy" in key else None)
            if host and UNKNOWN not in host and not host.startswith(("/", ".", "~")) and host != "*":
                hosts.add((host, port))
        if key in reported:
            continue
        if tool == "git" and section == "alias":
            reported.add(key)
            walker.effects.append(Unknown(f"`{shown}` (git's configuration) defines the alias `{match.group(1).strip()}`"
                                          f" (`{show(value)[:60]}`): a later `git {match.group(1).strip()}` runs it",
                                          span))
            continue
        if key in _CODE_KEYS or ((key == "alias" or ".alias" in match.group(1).lower()) and value.startswith("!")) \
                or (value.startswith("!") and tool == "git"):
            reported.add(key)
            walker.effects.append(Unknown(f"`{shown}` ({tool}'s configuration) sets `{match.group(1).strip()}`, "
                                          f"which makes {tool} run a program (`{show(value)[:60]}`)", span))
        elif key in _FILE_KEYS and _PLAIN_PATH.fullmatch(value) and UNKNOWN not in value:
            reported.add(key)  # a path written out: the tool may read and write below it, judged as that
            where = walker.resolve(value)
            walker.effects.extend((Read(where, span, True), Write(where, span, True)))
        elif key in _FILE_KEYS:
            reported.add(key)
            walker.effects.append(Unknown(f"`{shown}` ({tool}'s configuration) sets `{match.group(1).strip()}`: "
                                          f"{tool} reads, writes or sends files it names (`{show(value)[:60]}`)",
                                          span))
        elif _TLS_OFF.match(key) and (value.lower() in ("false", "0", "no", "off") or (
                key in ("trustedhost", "unsafehttpwhitelist") and value) or (
                key in ("insecure", "k", "sslnoverify") and value.lower() in ("", "true", "1", "yes", "on"))):
            reported.add(key)
            walker.effects.append(Unknown(f"`{shown}` ({tool}'s configuration) sets `{match.group(1).strip()}`, "
                                          "which turns off certificate checks", span))
        elif key == "authtoken" and match.group(1).strip().startswith("//"):
            # `//HOST/:_authToken=…`: a credential for that host only, which is judged as contacted
            host, port = split_url("https:" + match.group(1).strip().partition(":_")[0], 443)
            if host and UNKNOWN not in host:
                hosts.add((host, port))
            else:
                reported.add(key)
                walker.effects.append(Unknown(f"`{shown}` ({tool}'s configuration) holds credentials for a host that "
                                              "is not known", span))
        elif key == "authtoken" or (key in ("password", "login", "machine") and "netrc" in shown):
            reported.add(key)
            walker.effects.append(Unknown(f"`{shown}` ({tool}'s configuration) holds credentials that {tool} "
                                          "sends to the hosts it names", span))
    for host, port in sorted(hosts, key=lambda item: (item[0], item[1] or 0)):
        walker.effects.append(Network(host, port, span))


#: a file key's value that is a path as written (no variable, token, glob or URL)
_PLAIN_PATH = re.compile(r"~?[A-Za-z0-9._/+@,-]+")

#: the programs of a tool whose name is not its program's (`bundle config set …` writes bundler's)
_PROGRAMS: dict[str, tuple[str, ...]] = {"bundler": ("bundle",)}


def secret_values(text: str) -> str:
    """``text`` with the values of credential lines (``//host/:_authToken=${NPM_TOKEN}``) that
    are not known here given as known: the key and host matter, not the secret."""
    from stockade.analyzer.models.files import secret_placeholders

    return secret_placeholders(text)


def settings_file(inv: Invocation, tool: str, word: str, index: int | None, what: str) -> None:
    """A tool told to read its settings from ``word`` (``--userconfig F``, ``PIP_CONFIG_FILE=F``):
    a read of it; content this command wrote there and that is known here is judged as that
    configuration; any other content is unknown, unless the file is where the tool reads its
    configuration anyway (:func:`default_config`: naming it changes nothing)."""
    from stockade.analyzer.models.fresh import known_content, written_by

    inv.read(word, index)
    path = inv.path(word)
    if UNKNOWN in path:
        inv.unknown(f"{what} takes settings from a file that is not known before it runs", index)
        return
    written = written_by(inv.walker, path) is not None
    text = known_content(inv.walker, path) if written else None
    if text is not None:
        if config_tool(path) is None:  # (else judged after the walk: see tool_configs)
            judge_config_text(inv.walker, tool, path, secret_values(text), inv.at(index))
    elif written or not default_config(inv.walker, tool, path):
        inv.unknown(f"{what} takes settings from `{show(word)}`, which are not visible", index)


def default_config(walker: Walker, tool: str, path: str) -> bool:
    """Whether ``path`` (resolved) is where ``tool`` reads its configuration anyway (the
    project's ``.npmrc``, ``~/.npmrc``, ``~/.config/pip/pip.conf`` …): naming it changes nothing."""
    home = walker.context.home.rstrip("/")
    places = _DEFAULT_CONFIGS.get(tool, ())
    return any(path == (home + place[1:] if place.startswith("~/") else
                        walker.state.cwd.rstrip("/") + place[1:] if place.startswith("./") else place)
               for place in places)


#: where each tool reads its configuration without being told
_DEFAULT_CONFIGS: dict[str, tuple[str, ...]] = {
    "npm": ("./.npmrc", "~/.npmrc"), "pip": ("~/.config/pip/pip.conf", "~/.pip/pip.conf", "/etc/pip.conf"),
    "yarn": ("./.yarnrc", "./.yarnrc.yml", "~/.yarnrc"), "pnpm": ("./.npmrc", "~/.npmrc"),
}


def tool_configs(walker: Walker) -> None:
    """After the walk: each configuration file this text wrote (see the module docstring)."""
    seen: set[str] = set()
    command: tuple[str, ...] = ()
    for effect in list(walker.effects):
        if effect.__class__ is Execute:
            command = effect.argv
            continue
        if effect.__class__ is not Write:
            continue
        path = effect.path
        if path in seen or UNKNOWN in path:
            continue
        tool = config_tool(path)
        if tool is None:
            continue
        seen.add(path)
        # (imported here, past the common case: a function-level import costs ~8,000 instructions)
        from stockade.analyzer.models.fresh import known_content, written_by

        producer = written_by(walker, path)
        if producer is None:
            continue  # (a build tool's output)
        if producer.strip("`") in (*tool.split(), *_PROGRAMS.get(tool, ())):  # its own `config set KEY VALUE`
            if "set" in command and "config" in command:
                words = [w for w in command[command.index("set") + 1:] if w[:1] != "-"]
                if words:
                    key, eq, value = words[0].partition("=")
                    line = f"{key} = {value if eq else ' '.join(words[1:])}\n"
                    judge_config_text(walker, tool, path, line, effect.span)
            continue
        text = known_content(walker, path, partial=True)
        span = effect.span
        if text is not None and UNKNOWN in text:
            text = secret_values(text)  # (`_authToken=${NPM_TOKEN}`: a secret not known here is still a secret)
        if text is None or UNKNOWN in text:
            why = "what it held before is not known" if text is not None else "its content is not known here"
            walker.effects.append(Unknown(f"{producer} writes `{show(path)}`, {tool}'s configuration, and {why}: it "
                                          f"can change where {tool} connects and what it runs", span))
            text = text.replace(UNKNOWN, "\n") if text is not None else None
        if text:
            judge_config_text(walker, tool, path, text, span)


#: variables naming a tool's configuration file (or ``dir/``: the directory it is read from)
CONFIG_VARS: dict[str, tuple[str, str]] = {
    "WGETRC": ("wget", ""), "CURL_HOME": ("curl", "/.curlrc"), "NPM_CONFIG_USERCONFIG": ("npm", ""),
    "npm_config_userconfig": ("npm", ""), "NPM_CONFIG_GLOBALCONFIG": ("npm", ""),
    "npm_config_globalconfig": ("npm", ""), "PIP_CONFIG_FILE": ("pip", ""), "UV_CONFIG_FILE": ("uv", ""),
    "CONDARC": ("conda", ""), "NETRC": ("curl and git", ""), "CARGO_HOME": ("cargo", "/config.toml"),
    "DOCKER_CONFIG": ("docker", "/config.json"), "BUNDLE_USER_CONFIG": ("bundler", ""),
    "GEMRC": ("gem", ""), "TF_CLI_CONFIG_FILE": ("terraform", ""), "YARN_RC_FILENAME": ("yarn", ""),
    "HGRCPATH": ("mercurial", ""), "GRADLE_USER_HOME": ("gradle", "/gradle.properties"),
    "CLOUDSDK_CONFIG": ("gcloud", "/properties"), "KUBECONFIG": ("kubectl", ""),
}


def judge_config_var(walker: Walker, name: str, value: str, span: SpanT) -> None:
    """A variable that points a tool at a configuration file: one this text wrote is judged
    as that configuration; one where the agent can write, not known here, is unknown."""
    from stockade.analyzer.models.fresh import foreign_input, known_content, written_by
    from stockade.analyzer.models.programs import agent_writable

    tool, tail = CONFIG_VARS[name]
    if value.strip() in ("", "/dev/null"):
        return
    path = walker.resolve(value.strip()).rstrip("/") + tail
    if UNKNOWN in path:
        walker.effects.append(Unknown(f"`{name}` makes {tool} read its configuration from a place not known "
                                      f"before it runs (`{show(value)}`)", span))
        return
    text = known_content(walker, path) if written_by(walker, path) is not None else None
    if text is not None:
        judge_config_text(walker, tool, path, secret_values(text), span)
    elif (agent_writable(walker, path) or foreign_input(walker, path)) and not default_config(walker, tool, path):
        walker.effects.append(Unknown(f"`{name}` makes {tool} read its configuration from `{show(path)}`, where the "
                                      f"agent can write: it can change where {tool} connects and what it runs", span))


def _config_option(name: str, options: tuple[str, ...]) -> Model:
    """``name``'s model, plus its configuration-file option (``curl -K``, ``wget --config``):
    a file this text wrote with known content is judged as that configuration; for wget,
    one not known is an unknown effect (curl's model says so itself)."""
    from stockade.analyzer.models import MODELS, parse_options

    inner = MODELS[name]

    def model(inv: Invocation) -> None:
        inner(inv)
        argv = inv.argv
        if not any(word.startswith(options) for word in argv[1:]):
            return
        # (imported past the common case: a function-level import costs ~8,000 instructions)
        from stockade.analyzer.models.fresh import known_content, written_by

        parsed = parse_options(argv, set(options))
        for option, value, index in parsed.options:
            if option not in options or not value:
                continue
            path = inv.path(value)
            text = known_content(inv.walker, path) if written_by(inv.walker, path) is not None else None
            if text is not None:
                judge_config_text(inv.walker, name, path, text, inv.at(index))
            elif name != "curl" and value != "/dev/null":
                inv.read(value, index)
                inv.unknown(f"`{name} {option}` takes its settings (proxies, outputs, commands) from "
                            f"`{show(value)}`, which is not visible", index)

    return model


def _register() -> None:
    from stockade.analyzer.models import register

    register("curl", _config_option("curl", ("-K", "--config")))
    register("wget", _config_option("wget", ("--config",)))


_register()
