"""Developer tools a coding agent runs: go, gem, pagers (less, most), test runners (pytest, tox,
nox), pre-commit, ansible, yq's in-place edits, flock's command, and what extractors write.

Each tool is described by tables — option → role of its value — with a small function for
what the tables cannot say.  Roles are those of :func:`~stockade.analyzer.models.apply_role`
plus:

* ``program``: a command line the tool runs later (``go build -toolexec``, ``go test -exec``):
  judged by :func:`~stockade.analyzer.models.programs.judge_program` — unknown code when the
  program is a file the agent can write, else the command line is walked;
* ``foreign``: a file of code or configuration the tool runs (``pytest -c``, ``nox -f``,
  ``pre-commit run -c``, ``go build -overlay``): read, and unknown code when it lies outside the
  workspace in a place the agent can write (``/tmp``) or this text wrote it — the project's own
  files are its code, as running ``./build.sh`` is;
* ``deleter``: a directory the tool empties (``pytest --basetemp``).

Extraction (``tar x``, ``unzip``, ``7z x``): the members of an archive are not visible, so an
extraction is judged as a write of the directory it extracts into, not of everything below it —
extracting into the workspace is allowed although ``.git/hooks`` (read-only) lies below.  Under
``stockade run`` the sandbox refuses a crafted member such as ``.git/hooks/post-checkout``;
under ``stockade hook`` without a sandbox that member is the accepted residual risk (see
docs/analyzer.md).  What the text does show is judged: members named on the command line are
writes of those paths below the directory, and extracting into a repository's ``.git``
directory (where the hooks and configuration are direct children) is unknown effects.
"""

from __future__ import annotations

import re
import shlex

from stockade.analyzer.effects import UNKNOWN, Write, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, Spec, apply_role, parse_options, register, spec_model
from stockade.analyzer.models.fresh import fresh_found, fresh_project, run_file, written_by
from stockade.analyzer.models.net import contact_url
from stockade.analyzer.models.programs import agent_writable, judge_program
from stockade.analyzer.models.shells import _MODULE_TOOLS

T = "text"
W = "write"
R = "read"
P = "program"
FOREIGN = "foreign"

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterable


def env_value(inv: Invocation, name: str) -> str | None:
    """A variable the program sees: a prefix assignment, or exported earlier in the text."""
    value = inv.env.get(name)
    if value is not None:
        return value
    state = inv.walker.state
    return state.variables.get(name) if name in state.exported else None


def split_words(text: str) -> list[str] | None:
    """Words of an option string (``GOFLAGS``, ``PYTEST_ADDOPTS``); None when not known."""
    if UNKNOWN in text:
        return None
    try:
        return shlex.split(text)
    except ValueError:
        return None


def apply(inv: Invocation, role: str, value: str, index: int | None, what: str) -> None:
    """Apply a role (``program``, ``foreign``, ``deleter`` or one of apply_role's) to a value."""
    if role == P:
        judge_program(inv.walker, value, inv.at(index), what)
    elif role == FOREIGN:
        foreign_file(inv, value, index, what)
    elif role == "deleter":
        inv.delete(value, index, recursive=True)
    else:
        apply_role(inv, role, value, index)


#: a file named by URL (a tool that loads code or configuration fetches it first)
_REMOTE_FILE = re.compile(r"(?i)(https?|ftp)://")


def foreign_file(inv: Invocation, word: str, index: int | None, what: str) -> None:
    """A tool runs the code or configuration in the file ``word``: a read, and unknown code when
    it is not the project's own (outside the workspace where the agent can write, or written by
    this text)."""
    if word in ("", "-"):
        return
    if _REMOTE_FILE.match(word):  # (`gradle -I https://…/init.gradle`: fetched, then run)
        contact_url(inv, word, index, 443)
        inv.unknown(f"{what} runs the code or configuration it downloads from `{show(word)}`, which cannot be seen "
                    "into", index)
        return
    inv.read(word, index)
    path = inv.path(word)
    if path.startswith(("/dev/fd/", "/proc/self/fd/", "/dev/stdin")):  # (a here-string, a pipe: not its language's)
        inv.unknown(f"{what} runs the code or configuration it reads from `{show(word)}`, which cannot be seen into",
                    index)
        return
    workspace = inv.walker.context.workspace.rstrip("/")
    inside = path.startswith(workspace + "/")
    producer = written_by(inv.walker, path, False)
    if producer is not None or (not inside and agent_writable(inv.walker, path)):
        why = f"{producer} wrote it earlier in this command" if producer else "it lies where the agent can write"
        inv.unknown(f"{what} runs the code or configuration in `{show(word)}`, and {why}: it cannot be seen into",
                    index)


def dash_options(argv: list[str], start: int, values: dict[str, str] | frozenset[str],
                 stop: Iterable[str] = ()) -> tuple[list[tuple[str, str | None, int]], list[tuple[str, int]]]:
    """Go-style options: ``-name``/``--name``, ``-name=value`` or ``-name value`` (for names in
    ``values``); no clusters.  Parsing stops at ``--`` and at words in ``stop`` (``-args``)."""
    options: list[tuple[str, str | None, int]] = []
    positionals: list[tuple[str, int]] = []
    stops = frozenset(stop)
    index = start
    while index < len(argv):
        word = argv[index]
        if word == "--" or word in stops:
            break
        if word[:1] == "-" and word != "-":
            name, eq, value = word.partition("=")
            name = "-" + name.lstrip("-")
            if eq:
                options.append((name, value, index))
            elif name in values and index + 1 < len(argv):
                options.append((name, argv[index + 1], index + 1))
                index += 1
            else:
                options.append((name, None, index))
        else:
            positionals.append((word, index))
        index += 1
    return options, positionals


# -- go ------------------------------------------------------------------------------------

#: build flags (go help build) and the test/vet/run ones: flag → role of its value
_GO_FLAGS: dict[str, str] = {
    "-o": W, "-toolexec": P, "-exec": P, "-vettool": P, "-overlay": FOREIGN, "-modfile": FOREIGN,
    "-pkgdir": "writer", "-C": T, "-p": T, "-tags": T, "-mod": T, "-ldflags": T, "-gcflags": T, "-asmflags": T,
    "-gccgoflags": T, "-installsuffix": T, "-compiler": T, "-buildmode": T, "-coverpkg": T, "-covermode": T,
    "-coverprofile": W, "-cpuprofile": W, "-memprofile": W, "-blockprofile": W, "-mutexprofile": W, "-trace": W,
    "-outputdir": "writer", "-run": T, "-bench": T, "-count": T, "-timeout": T, "-parallel": T, "-skip": T,
    "-benchtime": T, "-list": T, "-shuffle": T, "-fuzz": T, "-fuzztime": T, "-fuzzminimizetime": T,
    "-pgo": R, "-json": T, "-vet": T, "-failfast": T, "-f": T, "-reuse": R, "-debug-actiongraph": W,
    "-debug-trace": W, "-buildvcs": T, "-memprofilerate": T, "-blockprofilerate": T, "-mutexprofilefraction": T,
}
#: variables that turn off module verification: what is downloaded is not checked
_GO_INSECURE = ("GOINSECURE", "GONOSUMDB", "GONOSUMCHECK", "GONOSUMCHECKS", "GOFLAGS_INSECURE")
#: subcommands that fetch a module given as ``path@version`` (or any remote path, ``get``)
_GO_FETCHING = frozenset({"install", "run", "get"})
#: the proxy go uses when GOPROXY is not set
_GO_DEFAULT_PROXY = "https://proxy.golang.org"


def model_go(inv: Invocation) -> None:
    """``go SUBCOMMAND [build flags] [packages]``, with ``GOFLAGS`` (flags for every command),
    ``GOPROXY`` (the hosts modules come from), ``GOINSECURE``/``GONOSUMDB``/``GOSUMDB=off``
    (verification off), ``GOTOOLCHAIN`` (another toolchain downloaded and run):

    * ``generate`` runs the commands written in ``//go:generate`` comments: unknown code;
    * ``install``/``run``/``get`` of ``path@version`` (``get`` of any path) fetch a module
      through the proxy and build it (``run``, ``install``: its code runs or is installed);
    * ``env -w``/``-u`` writes the per-user go env file (``GOENV``);
    * build flags: ``-o`` writes, ``-toolexec``/``-exec``/``-vettool`` run programs,
      ``-overlay``/``-modfile`` take code from files."""
    argv = inv.argv
    flags_text = env_value(inv, "GOFLAGS")
    extra = split_words(flags_text) if flags_text is not None else []
    if extra is None:
        inv.unknown(f"`GOFLAGS` is not known (`{show(flags_text or '')}`): it sets flags of every go command", None)
        extra = []
    _go_environment(inv)
    words = [(w, i) for i, w in enumerate(argv[1:], start=1) if not w.startswith("-")]
    if not words:
        return
    sub, sub_index = words[0]
    if sub == "env":
        _go_env(inv, sub_index)
        return
    if sub == "generate" and "-n" not in argv[sub_index + 1:]:
        inv.unknown("`go generate` runs the commands written in `//go:generate` comments of the source", sub_index)
    for word in extra:
        flag, eq, setting = word.partition("=")
        flag_role = _GO_FLAGS.get("-" + flag.lstrip("-"))
        if flag.lstrip("-") == "insecure":
            inv.unknown("`GOFLAGS=-insecure` fetches modules without verification", None)
        elif eq and flag_role is not None:
            apply(inv, flag_role, setting, None, f"`GOFLAGS={show(word)}`")
    start = sub_index + 1
    if sub == "mod" or sub == "work" or sub == "tool":
        start += 1  # `go mod download`, `go tool NAME`
    options, packages = dash_options(argv, start, _GO_FLAGS, stop=("-args",))
    for option, value, index in options:
        role = _GO_FLAGS.get(option)
        if value is None or role is None:
            continue
        if option == "-ldflags" and "-extld" in value:
            inv.unknown(f"`go {sub} -ldflags` names an external linker that go runs (`{show(value)}`)", index)
        elif role != T:
            apply(inv, role, value, index, f"`go {sub} {option}`")
    if sub == "mod" and start - 1 < len(argv) and argv[start - 1] == "download":
        # (`go mod download [MODULE@VERSION…]`: the modules named, or the main module's requirements, come
        # through the proxy)
        for package, index in packages or [("", start - 1)]:
            _go_fetch(inv, index, package)
    if sub in _GO_FETCHING:
        for package, index in packages:
            remote = "@" in package or (sub == "get" and not package.startswith((".", "/")))
            if not remote:
                # (the project's own commands go to GOBIN too: `$GOPATH/bin`, `~/go/bin` by default)
                if sub == "install":
                    gobin = env_value(inv, "GOBIN") or (env_value(inv, "GOPATH") or "~/go").split(":")[0] + "/bin"
                    inv.write(gobin, index)
                continue
            _go_fetch(inv, index, package)
            if sub == "run":
                inv.unknown(f"`go run {show(package)}` builds and runs a module fetched from the network", index)
            elif sub == "install":
                gobin = env_value(inv, "GOBIN") or (env_value(inv, "GOPATH") or "~/go").split(":")[0] + "/bin"
                inv.write(gobin, index)


def _go_environment(inv: Invocation) -> None:
    """The variables that change where modules come from and whether they are checked."""
    proxy = env_value(inv, "GOPROXY")
    if proxy is not None:
        for entry in proxy.replace("|", ",").split(","):
            entry = entry.strip()
            if entry and entry not in ("direct", "off"):
                contact_url(inv, entry if "://" in entry else "https://" + entry, None, 443)
    for name in _GO_INSECURE:
        value = env_value(inv, name)
        if value:
            inv.unknown(f"`{name}={show(value)}` fetches modules without checking them against the checksum "
                        "database", None)
    sumdb = env_value(inv, "GOSUMDB")
    if sumdb is not None and sumdb.strip().lower() == "off":
        inv.unknown("`GOSUMDB=off` fetches modules without checking them", None)
    toolchain = env_value(inv, "GOTOOLCHAIN")
    if toolchain is not None and toolchain.strip() not in ("", "local", "auto", "path", "local+auto", "local+path"):
        inv.unknown(f"`GOTOOLCHAIN={show(toolchain)}` downloads and runs another go toolchain", None)
    for name in ("GOROOT", "GOENV"):
        value = env_value(inv, name)
        if value is not None and name == "GOENV" and value not in ("off", ""):
            foreign_file(inv, value, None, "`GOENV`")
        elif value is not None and name == "GOROOT" and agent_writable(inv.walker, inv.path(value)):
            inv.unknown(f"`GOROOT={show(value)}` runs the go tools from a place the agent can write", None)


def _go_fetch(inv: Invocation, index: int, package: str = "") -> None:
    """A module is fetched through the proxy (GOPROXY or the default); with ``direct`` in
    GOPROXY, from the host its path names (``evil.example/m`` is that host's)."""
    proxy = env_value(inv, "GOPROXY")
    if proxy is None:
        contact_url(inv, _GO_DEFAULT_PROXY, index, 443)
    elif "direct" in proxy.replace("|", ",").split(","):
        host = package.partition("@")[0].partition("/")[0]
        if "." in host and UNKNOWN not in host:
            inv.network(host.lower(), 443, index)
        elif UNKNOWN in host:
            inv.unknown(f"`go` fetches a module from a host that is not known (`{show(package)}`)", index)


def _go_env(inv: Invocation, sub_index: int) -> None:
    """``go env -w KEY=VALUE`` / ``-u KEY`` writes the go env file (``GOENV``, else
    ``$XDG_CONFIG_HOME/go/env``); the values set there apply to every later go command."""
    rest = inv.argv[sub_index + 1:]
    if not any(word in ("-w", "-u") for word in rest):
        return
    target = env_value(inv, "GOENV")
    if target is None:
        config = env_value(inv, "XDG_CONFIG_HOME") or (env_value(inv, "HOME") or "~").rstrip("/") + "/.config"
        target = config.rstrip("/") + "/go/env"
    inv.write(target, sub_index)
    for offset, word in enumerate(rest, start=sub_index + 1):
        key, eq, value = word.partition("=")
        if eq and key in ("GOFLAGS", "GOPROXY", "GOTOOLCHAIN", "GOINSECURE", "GONOSUMDB", "GOSUMDB", "CC", "CXX"):
            if key in ("CC", "CXX"):
                judge_program(inv.walker, value, inv.at(offset), f"`go env -w {key}`")
            else:
                inv.unknown(f"`go env -w {show(word)}` changes how every later go command fetches or builds", offset)


# -- gem -----------------------------------------------------------------------------------

_GEM_VALUES: dict[str, str] = {
    "-s": "url", "--source": "url", "--clear-sources": T, "-i": "writer", "--install-dir": "writer",
    "-n": "writer", "--bindir": "writer", "--build-root": "writer", "-v": T, "--version": T, "--platform": T,
    "-g": "gemdeps", "--file": "gemdeps", "--host": "url", "-p": "url", "--http-proxy": "url",
    "--target": "writer", "--config-file": FOREIGN, "-P": T, "--trust-policy": T, "--document": T,
    "-a": "url", "--add": "url", "-r": T, "--remove": T, "--key": T, "--otp": T, "--spec": T, "-k": T,
}
#: the rubygems server ``gem`` talks to by default
_RUBYGEMS = "https://rubygems.org"


def model_gem(inv: Invocation) -> None:
    """``gem COMMAND``: ``install``/``update``/``fetch`` download gems from ``--source`` or
    rubygems.org, and installing a gem (a local ``.gem`` file, or ``--local``) builds its native
    extensions — code inside the archive that cannot be seen into; ``build`` runs the gemspec
    (Ruby); ``exec`` runs a gem's program; ``sources --add``, ``signin`` write ``~/.gemrc`` and
    ``~/.gem/credentials``; ``push``/``yank``/``owner`` talk to the server."""
    argv = inv.argv
    words = [(w, i) for i, w in enumerate(argv[1:], start=1) if not w.startswith("-")]
    if not words:
        return
    sub, sub_index = words[0]
    rest = argv[sub_index + 1:]
    sources: list[tuple[str, int]] = []
    local = "-l" in rest or "--local" in rest
    operands: list[tuple[str, int]] = []
    index = sub_index + 1
    while index < len(argv):
        word = argv[index]
        name = word.partition("=")[0]
        role = _GEM_VALUES.get(name)
        if sub == "sources" and name in ("-a", "--add", "-r", "--remove"):
            role = "url"
        if word.startswith("-") and role is not None:
            value = word.partition("=")[2] if "=" in word else (argv[index + 1] if index + 1 < len(argv) else "")
            value_index = index if "=" in word else index + 1
            if "=" not in word:
                index += 1
            if role == "url":
                sources.append((value, value_index))
            elif role == "gemdeps":
                run_file(inv, value, value_index)
                inv.unknown(f"`gem {sub} --file` installs the gems a Gemfile names", value_index)
            elif role != T:
                apply(inv, role, value, value_index, f"`gem {sub} {name}`")
        elif not word.startswith("-"):
            operands.append((word, index))
        index += 1
    for source, source_index in sources:
        contact_url(inv, source, source_index, 443)
    home = (env_value(inv, "HOME") or "~").rstrip("/")
    if sub in ("install", "i", "update", "fetch", "specific_install", "exec", "push", "yank", "owner", "signin") \
            and not sources and not local:
            contact_url(inv, env_value(inv, "RUBYGEMS_HOST") or _RUBYGEMS, sub_index, 443)
    if sub in ("install", "i", "update"):
        for word, index in operands:
            if word.endswith(".gem") or "/" in word:
                inv.read(word, index)
                inv.unknown(f"installing `{show(word)}` builds the gem's extensions: code inside the archive", index)
        if local and not any(w.endswith(".gem") for w, _ in operands):
            inv.unknown(f"`gem {sub} --local` installs gem files found on this machine", sub_index)
        if sub == "update" and "--system" in rest:
            inv.unknown("`gem update --system` replaces rubygems itself and runs its setup", sub_index)
    elif sub == "build":
        for word, index in operands[:1]:
            run_file(inv, word, index)
        if not operands:
            fresh_project(inv, ".", (), sub_index)
    elif sub in ("exec", "specific_install"):
        inv.unknown(f"`gem {sub}` runs a gem's code", sub_index)
    elif sub == "sources" and (any(w in rest for w in ("-a", "--add", "-r", "--remove", "-c", "--clear-all")) or
                               any(w.startswith(("--add=", "--remove=")) for w in rest)):
        inv.write(home + "/.gemrc", sub_index)
    elif sub == "signin":
        inv.write(home + "/.gem/credentials", sub_index)
    elif sub == "unpack" and not any(w.startswith("--target") for w in rest):
        inv.write(".", sub_index)


def model_bundle(inv: Invocation) -> None:
    """bundler: ``exec CMD`` runs CMD (with the Gemfile's gems); a Gemfile named by ``--gemfile``
    or ``BUNDLE_GEMFILE`` is Ruby code every subcommand evaluates (:func:`foreign_file`); ``install``/``update``/``add``
    run the Gemfile (Ruby code of the project: unknown when this text wrote it) and download
    from its sources (rubygems.org unless ``--local``); ``config [set] KEY VALUE`` writes
    ``~/.bundle/config`` (``.bundle/config`` with ``--local``), a ``mirror.*`` URL is contacted."""
    argv = inv.argv
    words = [(w, i) for i, w in enumerate(argv[1:], start=1) if not w.startswith("-")]
    if not words and any(w in ("--version", "-v", "--help", "-h") for w in argv[1:]):
        return  # (`bundle --version`: prints, installs nothing; a bare `bundle` is `bundle install`)
    sub, sub_index = words[0] if words else ("install", 0)
    named = env_value(inv, "BUNDLE_GEMFILE")
    gemfile, named_at, what = named or "Gemfile", None, "`BUNDLE_GEMFILE`"
    for index in range(sub_index + 1, len(argv)):
        name, eq, value = argv[index].partition("=")
        if name == "--gemfile":
            named_at, what = (index if eq else index + 1), "`bundle --gemfile`"
            gemfile = named = value if eq else (argv[index + 1] if index + 1 < len(argv) else gemfile)
        elif sub in ("exec", "ex") and index == (words[1][1] if len(words) > 1 else 0):
            break  # (the command `bundle exec` runs: its own options follow)
    if named and UNKNOWN not in named:  # (every subcommand evaluates the Gemfile: Ruby code)
        foreign_file(inv, named, named_at, what)
    if sub in ("exec", "ex"):
        if len(words) > 1:
            inv.run(words[1][1])
        return
    if sub in ("install", "i", "update", "add", "lock", "outdated", "cache", "package"):
        run_file(inv, gemfile, None)
        if "--local" not in argv:
            contact_url(inv, _RUBYGEMS, sub_index, 443)
    elif sub == "config" and len(words) >= 3 and words[1][0] not in ("get", "list"):
        # `config [set] KEY VALUE`: the user's ~/.bundle/config unless --local (bundler 2's default);
        # a `mirror.*` value is where later installs download from
        if "--local" in argv:
            inv.write(".bundle/config", sub_index)
        else:
            inv.write((env_value(inv, "HOME") or "~").rstrip("/") + "/.bundle/config", sub_index)
        pair = [w for w, _ in words[1:] if w not in ("set", "unset")]
        if len(pair) >= 2 and pair[0].lower().startswith("mirror.") and "://" in pair[1]:
            contact_url(inv, pair[1], sub_index, 443)


# -- pagers ------------------------------------------------------------------------------------

_LESS_VALUES: dict[str, str] = {
    "-b": T, "-h": T, "-j": T, "-p": T, "-P": T, "-t": T, "-T": R, "-x": T, "-y": T, "-z": T, "-#": T,
    "-o": W, "-O": W, "--log-file": W, "--LOG-FILE": W, "-k": "lesskey", "--lesskey-file": "lesskey",
    "--lesskey-src": "lesskey", "--lesskey-content": "lesskey", "--tag-file": R, "--pattern": T, "--prompt": T,
    "--buffers": T, "--max-back-scroll": T, "--max-forw-scroll": T, "--shift": T, "--tabs": T,
    "--window": T, "--jump-target": T, "--tag": T, "--rscroll": T, "--line-num-width": T,
    "--status-col-width": T, "--header": T, "--wordwrap": T, "--intr": T, "--color": T, "-D": T,
    "--use-color": T, "--quotes": T, "--mouse": T, "--wheel-lines": T, "--show-preproc-errors": T,
}


def _less_env_words(text: str) -> list[str] | None:
    """The options in ``$LESS``: blank-separated, but a ``+`` command takes the rest of the
    text, blanks included, up to a ``$`` (``LESS='+!rm -rf ~'`` starts with ``!rm -rf ~``)."""
    out: list[str] = []
    while True:
        match = re.search(r"(?:^|\s)\+", text)
        split = split_words(text if match is None else text[:match.start()])
        if split is None:
            return None
        out.extend(split)
        if match is None:
            return out
        command, _, text = text[match.end():].partition("$")
        out.append("+" + command)


def model_less(inv: Invocation) -> None:
    """less [OPTIONS] [+CMD] FILES: files are read; ``+CMD`` (and ``+`` options in ``$LESS``)
    are commands less runs at start — ``!cmd`` and ``|Xcmd`` run shell commands, ``v`` runs the
    editor, ``s FILE`` saves to a file (none of them when ``LESSSECURE=1``); ``-k``/``--lesskey-*``
    load key bindings and variables (which can set ``LESSOPEN``); ``-o``/``-O`` write a log."""
    argv = inv.argv
    secure = env_value(inv, "LESSSECURE") == "1"
    words: list[tuple[str, int | None]] = []
    less_env = env_value(inv, "LESS")
    if less_env is not None:
        split = _less_env_words(less_env)
        if split is None:
            inv.unknown("`LESS` is not known: it holds options and start commands of less", None)
        else:
            words.extend((w, None) for w in split)
    words.extend((w, i) for i, w in enumerate(argv[1:], start=1))
    position = 0
    files_only = False
    while position < len(words):
        word, index = words[position]
        position += 1
        if files_only or word[:1] not in ("-", "+") or word == "-":
            inv.read(word, index)
            continue
        if word == "--":
            files_only = True
            continue
        if word[:1] == "+":
            if not secure:
                _less_commands(inv, word.lstrip("+"), index)
            continue
        name, eq, value = word.partition("=")
        if name[:2] != "--" and len(name) > 2:  # -oFILE, -kFILE: an attached value
            name, value, eq = name[:2], word[2:], "="
        role = _LESS_VALUES.get(name)
        if role is None:
            continue
        if not eq:
            if position >= len(words):
                continue
            value, index = words[position]
            position += 1
        if role == "lesskey":
            inv.unknown(f"`less {name}` loads key bindings and variables (which can set an input preprocessor) "
                        f"from `{show(value)}`", index)
        elif role != T:
            apply_role(inv, role, value, index)


def _less_commands(inv: Invocation, commands: str, index: int | None) -> None:
    """Commands less runs at start: keystrokes, up to a command that takes the rest."""
    position = 0
    while position < len(commands):
        char = commands[position]
        rest = commands[position + 1:]
        if char in "/?&":  # a search pattern takes the rest
            return
        if char == "!":
            inv.script(rest.replace("%", "file"), index, what="the shell command of `less +!`")
            return
        if char == "|":  # |<mark>command: pipes the text to a shell command
            inv.script(rest[1:], index, what="the shell command of `less +|`")
            return
        if char == "v":
            editor = env_value(inv, "VISUAL") or env_value(inv, "EDITOR") or "vi"
            judge_program(inv.walker, editor, inv.at(index), "the editor `less +v` runs")
        elif char == "s" and rest.strip():
            inv.write(rest.strip(), index)
            return
        elif char == ":" and rest[:1] in ("e", "x"):
            for name in rest[1:].split():
                inv.read(name, index)
            return
        position += 1


# -- test runners ------------------------------------------------------------------------------

_PYTEST_VALUES: dict[str, str] = {
    "-p": "plugin", "-c": FOREIGN, "--config-file": FOREIGN, "--basetemp": "deleter", "--junitxml": W,
    "--junit-xml": W, "--resultlog": W, "--result-log": W, "--log-file": W, "--html": W, "--report-log": W,
    "--json-report-file": W, "--alluredir": "writer", "--cov-report": "cov-report", "--cov-config": R,
    "-o": "ini", "--override-ini": "ini", "--pdbcls": "plugin", "--rootdir": T, "--confcutdir": T, "-k": T, "-m": T,
    "--deselect": T, "--ignore": T, "--ignore-glob": T, "-n": T, "--dist": T, "--tb": T, "--durations": T,
    "--maxfail": T, "-W": T, "--capture": T, "-r": T, "--color": T, "--timeout": T, "--reruns": T, "--cov": T,
    "--import-mode": T, "--log-level": T, "--log-cli-level": T, "--log-format": T, "--debug": W,
    "--cov-fail-under": T, "--benchmark-json": W, "--benchmark-save": T, "--benchmark-storage": "writer",
}


def model_pytest(inv: Invocation) -> None:
    """pytest [OPTIONS] [PATHS]: test files and conftest.py are the project's code (unknown when
    this text wrote them); ``-p NAME`` loads a plugin module (unknown when this text wrote it);
    ``-c`` takes the configuration from a file; ``--basetemp`` is emptied; reports are written;
    ``PYTEST_ADDOPTS`` adds options."""
    words = list(inv.argv[1:])
    indices: list[int | None] = list(range(1, len(inv.argv)))
    addopts = env_value(inv, "PYTEST_ADDOPTS")
    if addopts is not None:
        split = split_words(addopts)
        if split is None:
            inv.unknown("`PYTEST_ADDOPTS` is not known: it adds options to pytest", None)
        else:
            words = split + words
            none: list[int | None] = [None] * len(split)
            indices = none + indices
    plugins = env_value(inv, "PYTEST_PLUGINS")
    if plugins:
        for name in plugins.split(","):
            _plugin(inv, name.strip(), None, "`PYTEST_PLUGINS`")
    position = 0
    found: list[tuple[str, int | None]] = []  # (the directories it collects test files from)
    while position < len(words):
        word, index = words[position], indices[position]
        position += 1
        if word[:1] != "-" or word == "-":
            if not word.partition("::")[0].endswith(".py"):
                found.append((word, index))
            inv.read(word, index)
            fresh_project(inv, word if not word.endswith(".py") else word.rpartition("/")[0] or ".",
                          ("conftest.py",), index)
            target = word.partition("::")[0]  # (`tests/test_x.py::test_y`)
            producer = written_by(inv.walker, inv.path(target), False) if target.endswith(".py") else None
            if producer is not None:
                inv.unknown(f"`pytest` runs the tests in `{show(target)}`, which {producer} wrote earlier in this "
                            "command: their code cannot be seen into", index)
            continue
        name, eq, value = word.partition("=")
        if name[:2] != "--" and len(name) > 2 and name[:2] in ("-p", "-c", "-o", "-k", "-m", "-n", "-W", "-r"):
            name, value, eq = name[:2], word[2:], "="
        role = _PYTEST_VALUES.get(name)
        if role is None:
            continue
        if not eq:
            if position >= len(words):
                continue
            value, index = words[position], indices[position]
            position += 1
        if role == "plugin":
            _plugin(inv, value.partition(":")[0] if name == "--pdbcls" else value, index, f"`pytest {name}`")
        elif role == "cov-report":
            kind, _, target = value.partition(":")
            if target:
                inv.write(target, index, recursive=kind in ("html", "annotate"))
        elif role == "ini":
            key, _, setting = value.partition("=")
            if key.strip() == "cache_dir":
                inv.write(setting, index, recursive=True)
            elif key.strip() == "addopts" and split_words(setting) is not None:
                words = split_words(setting) or []  # (`-o addopts=`: none; else options as on the command line)
                if words:
                    inv.script(shlex.join(["pytest", *words]), index, what=f"the options of `pytest {name} addopts`")
            elif key.strip() in ("addopts", "plugins", "required_plugins"):
                inv.unknown(f"`pytest {name} {show(key)}` changes the options or plugins pytest loads", index)
        elif role != T:
            apply(inv, role, value, index, f"`pytest {name}`")
    fresh_project(inv, ".", ("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"), None)
    for directory, index in found or [(".", None)]:  # (test discovery: `test_*.py`, `*_test.py` below each)
        if fresh_found(inv, directory, _pytest_file, "runs the tests in", index):
            break


def _pytest_file(name: str) -> bool:
    """Whether pytest collects a file of this name as tests (its default ``python_files``)."""
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _plugin(inv: Invocation, name: str, index: int | None, what: str) -> None:
    """A plugin module loaded by name: unknown code when this text wrote it (``NAME.py`` or a
    package directory in the working directory)."""
    if not name or name.startswith("no:"):
        return
    if UNKNOWN in name:
        inv.unknown(f"{what} loads a plugin that is not known (`{show(name)}`)", index)
        return
    stem = name.replace(".", "/")
    for candidate in (stem + ".py", stem + "/__init__.py", stem):
        producer = written_by(inv.walker, inv.path(candidate), False)
        if producer is not None:
            inv.unknown(f"{what} loads the plugin `{show(name)}`, which {producer} wrote earlier in this command: "
                        "its code cannot be seen into", index)
            return


_TOX_VALUES: dict[str, str] = {
    "-e": T, "--env": T, "-c": FOREIGN, "--conf": FOREIGN, "--workdir": "writer", "--root": T,
    "-x": "override", "--override": "override", "--installpkg": "package", "-r": T, "-m": T, "--labels": T,
    "-f": T, "--factors": T, "-n": T, "--result-json": W, "--hashseed": T, "--discover": T, "-p": T,
    "--parallel": T, "--runner": T, "--exit-and-dump-after": T, "--force-dep": T,
}
_NOX_VALUES: dict[str, str] = {
    "-s": T, "--session": T, "--sessions": T, "-e": T, "-k": T, "-p": T, "--python": T, "-t": T, "--tags": T,
    "-f": FOREIGN, "--noxfile": FOREIGN, "--envdir": "writer", "--report": W, "--default-venv-backend": T,
    "--force-venv-backend": T, "--extra-pythons": T, "--force-python": T, "-P": T,
}


def _runner_model(tool: str, values: dict[str, str], project: tuple[str, ...]) -> Callable[[Invocation], None]:
    """tox/nox: the project's configuration runs (unknown when this text wrote it); options from
    the table; ``tox -x key=value`` overrides configuration (commands, dependencies); ``tox exec
    -- CMD`` runs CMD."""

    def model(inv: Invocation) -> None:
        argv = inv.argv
        index = 1
        while index < len(argv):
            word = argv[index]
            if word == "--":
                if tool == "tox" and any(w in ("exec", "e") for w in argv[1:index]):
                    inv.run(index + 1)
                break
            name, eq, value = word.partition("=")
            role = values.get(name) if word[:1] == "-" else None
            if role is not None:
                value_index = index
                if not eq and index + 1 < len(argv):
                    value, value_index = argv[index + 1], index + 1
                    index += 1
                if role == "override":
                    inv.unknown(f"`{tool} {name} {show(value)}` overrides the configuration (commands, "
                                "dependencies) it runs", value_index)
                elif role == "package":
                    run_file(inv, value, value_index)
                elif role != T:
                    apply(inv, role, value, value_index, f"`{tool} {name}`")
            index += 1
        fresh_project(inv, ".", project, None)

    return model


# -- pre-commit --------------------------------------------------------------------------------


def model_pre_commit(inv: Invocation) -> None:
    """pre-commit: ``install`` writes hooks into ``.git/hooks`` (one per ``-t``/``--hook-type``),
    ``uninstall`` deletes them, ``init-templatedir`` installs hooks every new repository copies;
    ``run`` runs the hooks of the project's configuration (``-c``: a configuration from a file);
    ``try-repo`` runs the hooks of another repository (unknown code)."""
    argv = inv.argv
    words = [(w, i) for i, w in enumerate(argv[1:], start=1) if not w.startswith("-")]
    sub, sub_index = words[0] if words else ("run", 0)
    hook_types: list[str] = []
    config: tuple[str, int] | None = None
    for index in range(sub_index + 1, len(argv)):
        word = argv[index]
        name, eq, value = word.partition("=")
        if not eq and index + 1 < len(argv):
            value = argv[index + 1]
        if name in ("-t", "--hook-type"):
            hook_types.append(value)
        elif name in ("-c", "--config"):
            config = (value, index if eq else index + 1)
    git_dir = (env_value(inv, "GIT_DIR") or ".git").rstrip("/")
    if sub in ("install", "uninstall"):
        for hook in hook_types or ["pre-commit"]:
            (inv.write if sub == "install" else inv.delete)(f"{git_dir}/hooks/{hook}", sub_index)
    elif sub == "init-templatedir":
        if len(words) > 1:
            inv.write(words[1][0], words[1][1], recursive=True)
        inv.persistence("`pre-commit init-templatedir` installs hooks that every new repository copies", sub_index)
    elif sub == "try-repo" and len(words) > 1:
        repo, index = words[1]
        if "://" in repo:
            contact_url(inv, repo, index, 443)
        inv.unknown(f"`pre-commit try-repo` runs the hooks of `{show(repo)}`", index)
    if config is not None:
        foreign_file(inv, config[0], config[1], f"`pre-commit {sub} --config`")
    elif sub in ("run", "install", "install-hooks"):
        fresh_project(inv, ".", (".pre-commit-config.yaml",), sub_index)


# -- ansible -----------------------------------------------------------------------------------

_ANSIBLE_VALUES = frozenset({
    "-i", "--inventory", "--inventory-file", "-m", "--module-name", "-a", "--args", "-c", "--connection",
    "-u", "--user", "-e", "--extra-vars", "-f", "--forks", "-l", "--limit", "-t", "--tags", "--skip-tags",
    "--private-key", "--key-file", "--vault-password-file", "--vault-id", "-M", "--module-path", "-T",
    "--timeout", "--become-method", "--become-user", "-B", "--background", "-P", "--poll", "--ssh-common-args",
    "--ssh-extra-args", "--sftp-extra-args", "--scp-extra-args", "--playbook-dir", "-U", "--url", "-d",
    "--directory", "-C", "--checkout", "--start-at-task",
})
#: flags that only show something (no task runs)
_ANSIBLE_INFO = frozenset({"--version", "-h", "--help", "--syntax-check", "--list-hosts", "--list-tasks",
                           "--list-tags"})
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "localhost,", "127.0.0.1,"})


def model_ansible(inv: Invocation) -> None:
    """ansible PATTERN -m MODULE -a ARGS / ansible-playbook PLAYBOOK / ansible-pull -U URL /
    ansible-galaxy install: modules run on the inventory's hosts — ``shell``/``command``/``raw``
    arguments are shell code (walked: the inventory may be this machine); other modules and
    playbooks are effects that cannot be seen into; ``-b``/``--become`` escalates privileges;
    ``--vault-password-file`` may be a program; key and inventory files are read."""
    argv = inv.argv
    name = inv.name
    parsed = parse_options(argv, _ANSIBLE_VALUES)
    if any(option in _ANSIBLE_INFO for option, _, _ in parsed.options):
        return
    module = "command" if name == "ansible" else ""
    code: tuple[str, int] | None = None
    local = False
    inline_hosts = False
    for option, value, index in parsed.options:
        if option in ("-b", "--become", "-K", "--ask-become-pass"):
            inv.privilege(f"`{name} {option}` runs tasks as another user", index)
        if value is None:
            continue
        if option in ("-m", "--module-name"):
            module = value
        elif option in ("-a", "--args"):
            code = (value, index)
        elif option in ("-c", "--connection"):
            local = value == "local"
        elif option in ("-i", "--inventory", "--inventory-file", "--private-key", "--key-file"):
            if "," not in value:
                inv.read(value, index)
            elif value.strip(",") in _LOCAL_HOSTS or value.strip(",") == "localhost":
                local = True
            elif option != "--private-key" and option != "--key-file":
                hosts = [host for host in value.split(",") if host.strip()]
                inline_hosts = inline_hosts or bool(hosts)
                for host in hosts:  # (`-i 10.0.0.5,`: an inline list of the hosts it connects to, by ssh)
                    contact_url(inv, host.strip(), index, 22)
        elif option in ("--vault-password-file",):
            foreign_file(inv, value, index, f"`{name} {option}`")
        elif option in ("-e", "--extra-vars") and value.startswith("@"):
            inv.read(value[1:], index)
        elif option in ("-M", "--module-path"):
            foreign_file(inv, value, index, f"`{name} {option}`")
        elif option in ("-U", "--url"):
            contact_url(inv, value, index, 443)
    positionals = parsed.positionals
    if name == "ansible":
        pattern = positionals[0][0] if positionals else ""
        local = local or pattern in _LOCAL_HOSTS
        if module.rpartition(".")[2] in ("shell", "command", "raw") and code is not None:
            inv.script(code[0], code[1], what=f"the code given to the `{module}` module")
        elif module.rpartition(".")[2] == "script" and code is not None:
            run_file(inv, code[0].split()[0] if code[0].split() else "", code[1])
        else:
            inv.unknown(f"`ansible -m {show(module)}` runs a module whose effects cannot be seen into", None)
        if not local and not inline_hosts:
            inv.unknown(f"`ansible {show(pattern)}` contacts the hosts of its inventory", None)
        return
    if name == "ansible-galaxy":
        words = [w for w, _ in positionals]
        if "install" in words:
            contact_url(inv, "https://galaxy.ansible.com", None, 443)
            inv.unknown("`ansible-galaxy install` downloads roles or collections whose code runs later", None)
        return
    for word, index in positionals:
        inv.read(word, index)
    inv.unknown(f"`{name}` runs tasks (on the hosts of its inventory) whose effects cannot be seen into", None)


# -- yq, flock, extractors ---------------------------------------------------------------------

_JQ_MODEL = MODELS.get("jq")
_YQ_VALUES = frozenset({"-o", "--output-format", "-p", "--input-format", "-I", "--indent", "--expression",
                        "--from-file", "-s", "--split-exp", "--xml-attribute-prefix", "--xml-content-name",
                        "--csv-separator", "--lua-prefix", "--lua-suffix", "--properties-separator",
                        "--arg", "--argjson", "--rawfile", "--slurpfile", "--indentless-lists", "-L"})


#: yq's operators that read a file named by a literal (group 2)
_YQ_LOAD = re.compile(r"""\b(load|load_str|load_xml|load_props|load_base64)\s*\(\s*"([^"\n]+)"\s*\)""")


def model_yq(inv: Invocation) -> None:
    """yq: as jq (filter, files read) and ``-i``/``--inplace``/``--in-place`` write the files back;
    ``-s``/``--split-exp`` writes files named by an expression in the working directory."""
    if _JQ_MODEL is not None:
        _JQ_MODEL(inv)
    argv = inv.argv
    inplace = False
    split = False
    files: list[tuple[str, int]] = []
    expression_given = False
    index = 1
    while index < len(argv):
        word = argv[index]
        name = word.partition("=")[0]
        if word[:1] == "-" and word != "-":
            if name in ("-i", "--inplace", "--in-place") or (word[1:2] != "-" and "i" in word[1:] and
                                                            not any(c in word[1:] for c in "opIsL")):
                inplace = True
            if name in ("-s", "--split-exp"):
                split = True
            if name in ("--expression", "--from-file"):
                expression_given = True
            if name in _YQ_VALUES and "=" not in word:
                index += 1
        else:
            files.append((word, index))
        index += 1
    if files and files[0][0] in ("eval", "e", "eval-all", "ea"):
        files.pop(0)
    if not expression_given and files:
        expression, at = files.pop(0)
        for match in _YQ_LOAD.finditer(expression):  # (`load("f")`, `load_str("f")`…: yq reads the file)
            inv.read(match.group(2), at)
    if inplace:
        for word, position in files:
            inv.write(word, position)
    if split:
        inv.write(".", None)


_FLOCK_MODEL = MODELS.get("flock")


def model_flock(inv: Invocation) -> None:
    """flock [OPTIONS] FILE -c COMMAND (the ``-c`` after the lock file, as well as before it):
    COMMAND is shell code; otherwise as the wrapper model (FILE COMMAND ARGS)."""
    argv = inv.argv
    values = {"-w", "--timeout", "-E", "--conflict-exit-code"}
    index = 1
    while index < len(argv):
        word = argv[index]
        if word in values:
            index += 2
            continue
        if word[:1] == "-" and word != "-":
            index += 1
            continue
        if index + 2 < len(argv) and argv[index + 1] in ("-c", "--command"):
            inv.script(argv[index + 2], index + 2, what="the command given to `flock -c`")
            return
        break
    if _FLOCK_MODEL is not None:
        _FLOCK_MODEL(inv)


_TAR_VALUES = frozenset({"-f", "--file", "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from", "-I",
                         "--use-compress-program", "--to-command", "--checkpoint-action", "--rsh-command", "-F",
                         "--info-script", "--new-volume-script", "--exclude", "-b", "-N", "--newer", "--transform",
                         "--xform", "--owner", "--group", "--mode", "-H", "--format", "-K", "-V", "--label"})


def _members(inv: Invocation) -> list[tuple[str, int]] | None:
    """The member names an extraction command gives (None: not an extraction)."""
    argv = list(inv.argv)
    name = inv.name
    if name in ("tar", "gtar", "bsdtar"):
        if len(argv) > 1 and not argv[1].startswith("-"):
            argv[1] = "-" + argv[1]
        parsed = parse_options(argv, _TAR_VALUES)
        if not parsed.has("-x", "--extract", "--get"):
            return None
        return list(parsed.positionals)
    if name == "unzip":
        parsed = parse_options(argv, {"-d", "-P", "-x", "-I", "-O"})
        if parsed.has("-l", "-t", "-v", "-p", "-Z", "-z", "-c"):
            return None
        return list(parsed.positionals[1:])
    if name in ("7z", "7za", "7zr", "7zz"):
        words = [(w, i) for i, w in enumerate(argv[1:], start=1) if not w.startswith("-")]
        if not words or words[0][0].lower() not in ("x", "e"):
            return None
        return words[2:]
    return None


def _extractor(model: Callable[[Invocation], None]) -> Callable[[Invocation], None]:
    """Wrap an extractor's model: members named in the text are writes below the directory it
    extracts into; extracting into a repository's ``.git`` directory is unknown effects (see the
    module docstring for the members that cannot be seen)."""

    def extract(inv: Invocation) -> None:
        effects = inv.walker.effects
        before = len(effects)
        model(inv)
        members = _members(inv)
        if members is None:
            return
        target: str | None = None
        for effect in effects[before:]:
            if effect.__class__ is Write and not effect.recursive:
                target = effect.path
        if target is None:
            return
        for member, index in members:
            if UNKNOWN in member or member.startswith("-") or ".." in member.split("/"):
                continue  # (GNU tar, unzip and 7z refuse `..` in member names)
            inv.write(target.rstrip("/") + "/" + member.lstrip("/"), index)
        parts = target.split("/")
        if ".git" in parts and not members:
            inv.unknown(f"`{inv.name}` extracts an archive into `{show(target)}`, a repository's metadata: members "
                        "that cannot be seen can replace its hooks and configuration")

    return extract


if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

register("go", model_go)
register("gem", model_gem)
register("bundle bundler", model_bundle)
register("less", model_less)
register("most", spec_model(Spec(values={"-s": T, "-t": T, "-w": T})))
register("pytest py.test", model_pytest)
register("tox", _runner_model("tox", _TOX_VALUES, ("tox.ini", "pyproject.toml", "setup.cfg")))
register("nox", _runner_model("nox", _NOX_VALUES, ("noxfile.py",)))
register("pre-commit", model_pre_commit)
register("ansible ansible-playbook ansible-pull ansible-galaxy", model_ansible)
register("yq", model_yq)


#: xmlstarlet's subcommands (and their long names) → how many words each of its options takes
#: (XPath expressions, names, values: text); every other word not an option is a file read
_XMLSTARLET: dict[str, dict[str, int]] = {
    "sel": {"-t": 0, "--template": 0, "-c": 1, "--copy-of": 1, "-v": 1, "--value-of": 1, "-o": 1, "--output": 1,
            "-m": 1, "--match": 1, "-i": 1, "--if": 1, "--elif": 1, "-e": 1, "--elem": 1, "-a": 1, "--attr": 1,
            "-s": 2, "--sort": 2, "-N": 1, "--var": 1, "-E": 1, "--encode": 1},
    "ed": {"-d": 1, "--delete": 1, "-u": 1, "--update": 1, "-v": 1, "--value": 1, "-x": 1, "--expr": 1,
           "-i": 1, "--insert": 1, "-a": 1, "--append": 1, "-s": 1, "--subnode": 1, "-t": 1, "--type": 1,
           "-n": 1, "--name": 1, "-r": 1, "--rename": 1, "-m": 2, "--move": 2, "--var": 2, "-N": 1},
    "val": {"-d": 1, "--dtd": 1, "-s": 1, "--xsd": 1, "-r": 1, "--relaxng": 1},
    "fo": {"-s": 1, "--indent-spaces": 1, "-e": 1, "--encode": 1},
    "el": {}, "c14n": {}, "pyx": {}, "p2x": {}, "depyx": {}, "esc": {}, "unesc": {},
}
_XMLSTARLET_NAMES = {"select": "sel", "edit": "ed", "validate": "val", "format": "fo", "elements": "el",
                     "canonic": "c14n", "transform": "tr", "list": "ls"}


def model_xmlstarlet(inv: Invocation) -> None:
    """xmlstarlet COMMAND …: ``sel``/``ed``/``val``/``fo``/``el``… read their files (the values
    of their options are XPath expressions, names and values, not paths; ``val -d/-s/-r`` read
    the schema); ``ed -L`` writes the files back; ``tr XSL`` runs the stylesheet (which can write
    files with ``exsl:document``: unknown unless the text knows none); ``ls DIR`` lists DIR."""
    argv = inv.argv
    at = 1
    while at < len(argv) and argv[at].startswith("-"):  # (global options: -q, --no-doc-namespace …)
        at += 1
    if at >= len(argv):
        return
    command = _XMLSTARLET_NAMES.get(argv[at], argv[at])
    if command == "ls":
        for index, word in enumerate(argv[at + 1:], start=at + 1):
            inv.read(word, index)
        if at + 1 >= len(argv):
            inv.read(".", at)
        return
    if command == "tr":
        for index, word in enumerate(argv[at + 1:], start=at + 1):  # (the stylesheet, then the files)
            if not word.startswith("-") and "=" not in word:  # (`-s NAME=VALUE`: a parameter)
                inv.read(word, index)
        inv.unknown("`xmlstarlet tr` runs an XSLT stylesheet, which can write files (`exsl:document`) and "
                    "read any", at)
        return
    takes = _XMLSTARLET.get(command)
    if takes is None:
        inv.unknown(f"`xmlstarlet {show(argv[at])}` is not modelled", at)
        return
    in_place = False
    index = at + 1
    while index < len(argv):
        word = argv[index]
        if word in ("-L", "--inplace") and command == "ed":
            in_place = True
        elif word in takes:
            count = takes[word]
            if word in ("--var", "-N") and "=" in (argv[index + 1] if index + 1 < len(argv) else ""):
                count = 1  # (`--var NAME=VALUE`)
            if command == "val" and index + 1 < len(argv):
                inv.read(argv[index + 1], index + 1)
            index += count
        elif word == "-":
            pass
        elif not word.startswith("-"):
            (inv.write if in_place else inv.read)(word, index)
            if in_place:
                inv.read(word, index)
        index += 1


register("xmlstarlet xml", model_xmlstarlet)
register("flock", model_flock)
# `python -m pytest …` and the like: the tool's own model
_MODULE_TOOLS.update({"pytest": "pytest", "tox": "tox", "nox": "nox", "pre_commit": "pre-commit"})
for _name in ("tar", "gtar", "unzip", "7z", "7za", "7zr", "7zz"):
    _model = MODELS.get(_name)
    if _model is not None:
        register(_name, _extractor(_model))
register("bsdtar", _extractor(MODELS["tar"]))


def sftp_batch(inv: Invocation, word: str, index: int | None) -> None:
    """``sftp -b FILE``: the batch's ``!command`` lines run local shell commands.  From stdin
    (``-b -``) of known text they are walked; a batch file is code of the kind ``foreign``
    describes (unknown when outside the workspace where the agent can write, or written by this
    text)."""
    if word != "-":
        foreign_file(inv, word, index, "`sftp -b`")
        return
    text = inv.stdin.text
    if text is None:
        inv.unknown("`sftp -b -` reads its commands (which can run local shell commands) from stdin", index)
        return
    for line in text.split("\n"):
        line = line.strip().lstrip("-@")
        if line.startswith("!"):
            inv.script(line[1:], index, what="the local command of an sftp batch")
