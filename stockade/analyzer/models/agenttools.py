"""More tools a coding agent meets that ran code or touched secrets unseen under the default
model: task runners (just, task, rake), gh, pandoc, jupyter, gpg and the ssh key tools, database
clients (psql, mysql), HTTP clients (http/xh, aria2c) and twine.

As in :mod:`~stockade.analyzer.models.devtools`: option → role tables, where ``program`` is a
program the tool runs (unknown code when it is a file the agent can write) and ``foreign`` a
file of code or configuration it runs (unknown when it is not the project's own).
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import Parsed, parse_options, register
from stockade.analyzer.models.devtools import FOREIGN, P, apply, env_value, foreign_file
from stockade.analyzer.models.fresh import fresh_project, known_content
from stockade.analyzer.models.net import contact_url

T = "text"
R = "read"
W = "write"

# -- task runners -----------------------------------------------------------------------------

#: runner → (its recipe files, option → role)
_RUNNERS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "just": (("justfile", "Justfile", ".justfile"),
             {"-f": FOREIGN, "--justfile": FOREIGN, "-d": T, "--working-directory": T, "--set": T, "--shell": P,
              "--shell-arg": T, "--dotenv-path": R, "--dotenv-filename": T, "--command": "command", "-c": "command",
              "--chooser": P, "--color": T, "--list-heading": T, "--list-prefix": T}),
    "task": (("Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "Taskfile.dist.yml"),
             {"-t": FOREIGN, "--taskfile": FOREIGN, "-d": T, "--dir": T, "-o": T, "--output": T, "-c": T,
              "--color": T, "--concurrency": T, "-I": T, "--interval": T}),
    "rake": (("Rakefile", "rakefile", "Rakefile.rb"),
             {"-f": FOREIGN, "--rakefile": FOREIGN, "-e": "ruby", "--execute": "ruby", "-E": "ruby",
              "--execute-continue": "ruby", "-p": "ruby", "--execute-print": "ruby", "-r": "ruby-require",
              "--require": "ruby-require", "-I": T, "--libdir": T, "-R": T, "--rakelibdir": T, "-C": T,
              "--directory": T, "-j": T, "--jobs": T}),
}


def model_runner(inv: Invocation) -> None:
    """just/task/rake: the recipes are the project's code (unknown when this text wrote the
    recipe file, or ``-f`` names one from elsewhere); ``just --shell``/``--chooser`` are programs,
    ``just --command CMD`` runs CMD, ``rake -e`` runs Ruby that cannot be seen into."""
    names, values = _RUNNERS[inv.name]
    argv = inv.argv
    index = 1
    given_file = False
    while index < len(argv):
        word = argv[index]
        name, eq, value = word.partition("=")
        role = values.get(name) if word[:1] == "-" else None
        if role is None:
            index += 1
            continue
        value_index = index
        if not eq and index + 1 < len(argv):
            value, value_index = argv[index + 1], index + 1
            index += 1
        if role == "command":
            inv.run(value_index)
            return
        if role in ("ruby", "ruby-require"):
            inv.unknown(f"`{inv.name} {name}` runs Ruby code that cannot be seen into (`{show(value)}`)", value_index)
        elif role != T:
            given_file = given_file or role == FOREIGN
            apply(inv, role, value, value_index, f"`{inv.name} {name}`")
        index += 1
    if not given_file and not (inv.name == "just" and _known_justfile(inv, names)):
        fresh_project(inv, ".", names, None)


#: justfile syntax that computes what runs or how: interpolation, backticks, settings,
#: variables and exports, imports and modules, shebang or script recipes
_JUST_COMPUTED = re.compile(r"\{\{|`|^\s*(?:set|export|import|mod|unexport)\b|:=|^\s*#!|\[\s*(?:script|extension)",
                            re.M)


def _known_justfile(inv: Invocation, names: tuple[str, ...]) -> bool:
    """The justfile ``just`` reads was written by this command with content known here and plain
    (recipes of shell lines, no interpolation, backticks, settings or imports): its recipe lines
    are walked as the shell code they are (``sh -cu`` runs each); True when so."""
    from stockade.analyzer.models.fresh import wrote_anything

    if not wrote_anything(inv.walker):
        return False
    for name in names:
        text = known_content(inv.walker, inv.path(name))
        if text is None:
            continue
        if UNKNOWN in text or _JUST_COMPUTED.search(text):
            return False
        for line in text.split("\n"):
            if line[:1] in (" ", "\t") and line.strip() and not line.lstrip().startswith("#"):
                inv.script(line.strip().lstrip("@-").lstrip(), None, what="a recipe of the justfile")
        return True
    return False


# -- gh ----------------------------------------------------------------------------------------

#: gh subcommands that talk to GitHub's API (almost all of them); the rest are local
_GH_LOCAL = frozenset({"help", "version", "--version", "completion", "config", "alias", "status-never", "-h",
                       "--help"})


def model_gh(inv: Invocation) -> None:
    """gh: reads its credentials in ``$GH_CONFIG_DIR`` (or ``~/.config/gh``) and talks to
    api.github.com; ``extension install``/``exec`` and an unknown command (an extension) run
    code that cannot be seen into; ``alias set --shell`` stores shell code run later;
    ``repo clone`` is ``git clone``; ``auth login/setup-git`` write configuration."""
    argv = inv.argv
    words = [(w, i) for i, w in enumerate(argv[1:], start=1) if not w.startswith("-")]
    if not words:
        return
    sub, sub_index = words[0]
    if sub == "alias":
        if "--shell" in argv or "-s" in argv:
            inv.unknown("`gh alias set --shell` stores shell code that a later `gh` command runs", sub_index)
        return
    if sub in _GH_LOCAL and sub != "config":
        return
    action = words[1][0] if len(words) > 1 else ""
    home = (env_value(inv, "HOME") or "~").rstrip("/")
    config = env_value(inv, "GH_CONFIG_DIR") or (env_value(inv, "XDG_CONFIG_HOME") or home + "/.config") + "/gh"
    if not (env_value(inv, "GH_TOKEN") or env_value(inv, "GITHUB_TOKEN")):
        inv.read(config + "/hosts.yml", sub_index)
    if sub == "config":
        if action == "set":
            inv.write(config + "/config.yml", sub_index)
        return
    host = env_value(inv, "GH_HOST") or "github.com"
    contact_url(inv, "https://api." + host if host == "github.com" else "https://" + host, sub_index, 443)
    if sub in ("extension", "ext", "extensions") and action in ("install", "exec", "upgrade"):
        inv.unknown(f"`gh extension {action}` runs an extension's code that cannot be seen into", sub_index)
    elif sub == "auth" and action in ("login", "setup-git", "refresh", "switch", "logout"):
        inv.write(config + "/hosts.yml", sub_index)
        if action == "setup-git":
            inv.write(home + "/.gitconfig", sub_index)
    elif sub == "repo" and action in ("clone", "fork") and len(words) > 2:
        target = words[3] if len(words) > 3 else None
        name = words[2][0].rstrip("/").rpartition("/")[2].removesuffix(".git")
        inv.write(target[0] if target else name, target[1] if target else words[2][1], recursive=True)
    elif sub in ("run", "release") and action == "download":
        inv.write(".", sub_index)
    elif sub == "codespace" and action in ("ssh", "cp"):
        inv.unknown("`gh codespace` runs commands on a remote machine", sub_index)


# -- documents, notebooks ------------------------------------------------------------------------

_PANDOC_VALUES = {"-F": P, "--filter": P, "-L": FOREIGN, "--lua-filter": FOREIGN, "-o": W, "--output": W,
                  "--extract-media": "writer", "--template": R, "-H": R, "--include-in-header": R, "-B": R,
                  "--include-before-body": R, "-A": R, "--include-after-body": R, "--reference-doc": R,
                  "--css": T, "-c": T, "-f": T, "-r": T, "--from": T, "-t": T, "-w": T, "--to": T, "-M": T,
                  "-V": T, "--metadata": T, "--variable": T, "--data-dir": FOREIGN, "-d": FOREIGN, "--defaults": FOREIGN,
                  "--resource-path": T, "--pdf-engine": P, "--pdf-engine-opt": T, "--citeproc": T,
                  "--bibliography": R, "--csl": R, "--syntax-definition": R, "--highlight-style": T,
                  "--log": W, "--request-header": T, "--metadata-file": R, "--abbreviations": R}


def model_pandoc(inv: Invocation) -> None:
    """pandoc: input files are read, ``-o`` written; ``--filter``/``--pdf-engine`` run programs,
    ``--lua-filter``/``--defaults``/``--data-dir`` run code or configuration from files; URL
    inputs are fetched."""
    parsed = parse_options(inv.argv, _PANDOC_VALUES)
    for option, value, index in parsed.options:
        role = _PANDOC_VALUES.get(option)
        if role is not None and value is not None and role != T:
            apply(inv, role, value, index, f"`pandoc {option}`")
    for word, index in parsed.positionals:
        if "://" in word:
            contact_url(inv, word, index, 443)
        else:
            inv.read(word, index)


def model_jupyter(inv: Invocation) -> None:
    """jupyter: ``nbconvert --execute``/``execute``/``run`` run the notebook's code (the
    project's own; unknown when it is not — see ``foreign``); ``--output``/``--output-dir``
    are written; a server (``notebook``, ``lab``, ``server``) runs whatever its clients send."""
    argv = inv.argv
    words = [(w, i) for i, w in enumerate(argv[1:], start=1) if not w.startswith("-")]
    if not words:
        return
    sub, sub_index = words[0]
    runs = sub in ("execute", "run") or (sub == "nbconvert" and any(w.startswith("--execute") for w in argv))
    for index, word in enumerate(argv):
        name, eq, value = word.partition("=")
        if name in ("--output", "--output-dir", "--FilesWriter.build_directory"):
            target = value if eq else (argv[index + 1] if index + 1 < len(argv) else "")
            inv.write(target, index, recursive=name != "--output")
    if sub in ("notebook", "lab", "server", "console", "qtconsole", "kernel"):
        inv.unknown(f"`jupyter {sub}` runs code that its clients send", sub_index)
        return
    for word, index in words[1:]:
        if word.endswith((".ipynb", ".py")):
            if runs:
                foreign_file(inv, word, index, f"`jupyter {sub}`")
            else:
                inv.read(word, index)


# -- keys ----------------------------------------------------------------------------------------


def model_gpg(inv: Invocation) -> None:
    """gpg: the keyring is ``--homedir``/``$GNUPGHOME`` (or ``~/.gnupg``), read by every command
    and written by imports, key generation and trust changes; ``-o`` writes; files are read;
    ``--keyserver``/``--recv-keys`` talk to a key server; ``--exec-path``/``--photo-viewer`` run
    programs."""
    values = {"-o", "--output", "--homedir", "-r", "--recipient", "-u", "--local-user", "--keyserver",
              "--default-key", "--passphrase", "--passphrase-file", "--passphrase-fd", "--trust-model",
              "--cipher-algo", "--digest-algo", "--compress-algo", "--photo-viewer", "--exec-path", "--keyring",
              "--secret-keyring", "--trustdb-name", "--status-fd", "--logger-fd", "--command-fd", "--pinentry-mode",
              "--export-options", "--import-options", "--list-options", "--verify-options", "--keyid-format"}
    parsed = parse_options(inv.argv, values)
    home = next((v for v, _ in reversed(parsed.values_of("--homedir"))), None) or env_value(inv, "GNUPGHOME") \
        or (env_value(inv, "HOME") or "~").rstrip("/") + "/.gnupg"
    writes = parsed.has("--import", "--gen-key", "--generate-key", "--full-generate-key", "--quick-gen-key",
                        "--quick-generate-key", "--recv-keys", "--receive-keys", "--refresh-keys", "--edit-key",
                        "--sign-key", "--lsign-key", "--delete-keys", "--delete-secret-keys", "--import-ownertrust",
                        "--update-trustdb", "--quick-add-uid", "--quick-add-key", "--fetch-keys", "--card-edit")
    (inv.write if writes else inv.read)(home, None, recursive=True)
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-o", "--output"):
            inv.write(value, index)
        elif option in ("--passphrase-file", "--keyring", "--secret-keyring"):
            inv.read(value, index)
        elif option in ("--photo-viewer", "--exec-path"):
            apply(inv, P, value, index, f"`gpg {option}`")
        elif option == "--keyserver":
            contact_url(inv, value if "://" in value else "hkps://" + value, index, 443)
    for word, index in parsed.positionals:
        if not parsed.has("--recv-keys", "--receive-keys", "--edit-key", "--sign-key", "--delete-keys",
                          "--export", "--list-keys", "-k", "--fingerprint", "--quick-gen-key"):
            inv.read(word, index)


#: pass subcommands that only list the store's names (no decryption)
_PASS_LISTS = frozenset({"ls", "list", "find", "search", "help", "version", "--help", "--version"})
#: pass subcommands that write the store (``insert``, ``generate``, ``edit``, ``rm``, ``mv``, ``cp``, ``init``)
_PASS_WRITES = frozenset({"insert", "add", "generate", "edit", "rm", "remove", "delete", "mv", "rename", "cp",
                          "copy", "init"})


def model_pass(inv: Invocation) -> None:
    """pass (the standard unix password manager): the store (``$PASSWORD_STORE_DIR`` or
    ``~/.password-store``) is read; showing, copying or editing an entry decrypts it with gpg,
    which reads the keyring (``$GNUPGHOME`` or ``~/.gnupg``); ``insert``/``generate``/``rm``…
    write the store; ``git …`` runs git in it."""
    home = (env_value(inv, "HOME") or "~").rstrip("/")
    store = env_value(inv, "PASSWORD_STORE_DIR") or home + "/.password-store"
    words = [word for word in inv.argv[1:] if not word.startswith("-")]
    sub = words[0] if words else "ls"  # (`pass` alone lists the entries' names)
    inv.read(store, None, recursive=True)
    if sub in _PASS_LISTS:
        return
    if sub in _PASS_WRITES:
        inv.write(store, None, recursive=True)
    if sub != "rm" and sub != "remove" and sub != "delete":
        inv.read(env_value(inv, "GNUPGHOME") or home + "/.gnupg", None, recursive=True)


def model_ssh_keys(inv: Invocation) -> None:
    """ssh-keygen writes the key ``-f`` names (default ``~/.ssh/id_<type>``) unless it only reads
    (``-l``, ``-y``, ``-F``, ``-R`` rewrites known_hosts); ssh-add reads the keys it is given (or
    ``~/.ssh/id_*``); ssh-copy-id reads the public key and contacts the host (this machine's:
    it appends to ``~/.ssh/authorized_keys``)."""
    argv = inv.argv
    home = (env_value(inv, "HOME") or "~").rstrip("/")
    if inv.name == "ssh-keygen":
        parsed = parse_options(argv, {"-f", "-t", "-b", "-C", "-N", "-P", "-F", "-R", "-I", "-n", "-V", "-z", "-O",
                                      "-s", "-Y", "-m", "-E", "-a", "-w", "-D", "-r"})
        files = parsed.values_of("-f")
        path, index = files[-1] if files else (home + "/.ssh/id_" + (parsed.values_of("-t") or [("rsa", 0)])[-1][0],
                                               None)
        if parsed.has("-l", "-y", "-B", "-Q"):
            inv.read(path, index)
        elif parsed.has("-F", "-R", "-H"):
            (inv.read if parsed.has("-F") else inv.write)(path if files else home + "/.ssh/known_hosts", index)
        else:
            inv.write(path, index)
            inv.write(path + ".pub", index)
        for value, value_index in parsed.values_of("-s"):
            inv.read(value, value_index)
        return
    parsed = parse_options(argv, {"-t", "-E", "-S", "-H", "-h", "-i", "-p", "-o", "-F", "-J"})
    if inv.name == "ssh-add":
        keys: list[tuple[str, int | None]] = list(parsed.positionals)
        for word, index in keys or [(home + "/.ssh/id_rsa", None), (home + "/.ssh/id_ed25519", None)]:
            inv.read(word, index)
        return
    for value, index in parsed.values_of("-i"):
        inv.read(value, index)
    if not parsed.values_of("-i"):
        inv.read(home + "/.ssh", None, recursive=True)
    for word, index in parsed.positionals[:1]:
        host = word.rpartition("@")[2]
        contact_url(inv, "ssh://" + host, index, 22)
        if host.lower().strip("[]") in ("localhost", "127.0.0.1", "::1", "localhost.localdomain") and "@" not in word:
            # (this machine, as this user: the key is appended to this user's authorized keys)
            inv.write(home + "/.ssh/authorized_keys", index)


# -- network clients -----------------------------------------------------------------------------

#: libpq connection keywords whose value is a file the client reads (a password file, TLS keys)
_LIBPQ_FILES = frozenset({"passfile", "sslkey", "sslcert", "sslrootcert", "sslcrl", "sslcrldir"})
#: libpq's variables naming a file it reads
_LIBPQ_FILE_VARS = ("PGPASSFILE", "PGSERVICEFILE", "PGSSLKEY", "PGSSLCERT", "PGSSLROOTCERT", "PGSSLCRL")


def _conninfo_pairs(text: str) -> list[tuple[str, str]] | None:
    """The ``keyword = value`` pairs of a libpq connection string (values bare or in single
    quotes, with backslash escapes), or None when ``text`` is not one."""
    pairs: list[tuple[str, str]] = []
    position, size = 0, len(text)
    while True:
        while position < size and text[position].isspace():
            position += 1
        if position >= size:
            return pairs
        equals = text.find("=", position)
        if equals < 0:
            return None
        key = text[position:equals].strip()
        if not key or any(c.isspace() for c in key):
            return None
        position = equals + 1
        while position < size and text[position].isspace():
            position += 1
        value: list[str] = []
        quoted = position < size and text[position] == "'"
        position += quoted
        while position < size and (quoted or not text[position].isspace()):
            char = text[position]
            if char == "\\" and position + 1 < size:
                position += 1
                char = text[position]
            elif quoted and char == "'":
                break
            value.append(char)
            position += 1
        position += quoted
        pairs.append((key.lower(), "".join(value)))


def _libpq_hosts(inv: Invocation, hosts: str, index: int | None) -> None:
    """The servers of a ``host=``/``hostaddr=`` list (``a,b:5433`` in a URI): a path is a local
    socket, anything else is contacted."""
    from urllib.parse import unquote

    for host in hosts.split(","):
        host = unquote(host.strip())
        if host.startswith("["):
            host = host[1:].partition("]")[0]
        elif host.count(":") == 1:
            host = host.partition(":")[0]
        if not host or host.startswith(("/", "@")):
            continue
        if UNKNOWN in host:
            inv.unknown(f"`{inv.name}` connects to a server not known before it runs (`{show(host)}`)", index)
        else:
            inv.network(host.lower(), None, index)


def libpq_target(inv: Invocation, word: str, index: int | None) -> bool:
    """A libpq database name that is a connection string (``host=H dbname=D``) or a URI
    (``postgresql://[user@]host[:port][,host…]/db?host=…``), as ``-d``/``--dbname`` or the
    database operand of psql and the PostgreSQL tools: the servers it names are contacted,
    the files its keywords name are read, a ``service=`` is the entry of a service file whose
    server the command does not show.  Whether ``word`` was one (else a plain name)."""
    from urllib.parse import parse_qsl, unquote

    if word.startswith(("postgresql://", "postgres://")):
        rest = word.partition("://")[2]
        authority, _, tail = rest.partition("/") if "/" in rest.partition("?")[0] else rest.partition("?")
        query = tail.partition("?")[2] if "/" in rest.partition("?")[0] else tail
        _libpq_hosts(inv, authority.rpartition("@")[2], index)
        pairs = [(key.lower(), unquote(value)) for key, value in parse_qsl(query, keep_blank_values=True)]
    elif "=" in word:
        found = _conninfo_pairs(word)
        if found is None:
            return False
        pairs = found
    else:
        return False
    for key, value in pairs:
        if key in ("host", "hostaddr"):
            _libpq_hosts(inv, value, index)
        elif key in _LIBPQ_FILES and value:
            inv.read(value, index, recursive=key == "sslcrldir")
        elif key == "service" and value:
            inv.unknown(f"`{inv.name}` connects to the server the service `{show(value)}` names in a service file, "
                        "which the command does not show", index)
    return True


def libpq_environment(inv: Invocation) -> None:
    """The files libpq's variables name (``PGPASSFILE``, ``PGSERVICEFILE``, ``PGSSLKEY`` …): read
    by every PostgreSQL client it starts; ``PGSERVICE``: a server the command does not show."""
    for var in _LIBPQ_FILE_VARS:
        value = env_value(inv, var)
        if value:
            inv.read(value, None)
    service = env_value(inv, "PGSERVICE")
    if service:
        inv.unknown(f"`{inv.name}` connects to the server the service `{show(service)}` (`PGSERVICE`) names in a "
                    "service file, which the command does not show", None)


def _libpq_operands(inv: Invocation, parsed: Parsed, options: tuple[str, ...], operands: int) -> None:
    """The ``-d``/``--dbname`` values and the first ``operands`` operands, judged as libpq
    database names (:func:`libpq_target`), and libpq's variables."""
    for value, index in parsed.values_of(*options):
        libpq_target(inv, value, index)
    for word, index in parsed.positionals[:operands]:
        libpq_target(inv, word, index)
    libpq_environment(inv)


def model_db_client(inv: Invocation) -> None:
    """psql/mysql: the server in ``-h``/``--host`` (a local socket by default), ``-f`` files run
    as SQL, ``-c``/``-e`` commands — whose ``\\!``/``system`` lines run shell commands —, output
    files ``-o``/``--tee``."""
    mysql = inv.name in ("mysql", "mariadb")
    values = {"-h", "--host", "-p" if not mysql else "-P", "--port", "-U", "-u", "--user", "-d", "--dbname",
              "-D", "--database", "-f", "--file", "-c", "--command", "-e", "--execute", "-o", "--output",
              "-L", "--log-file", "--tee", "-v", "--set", "--variable", "-S", "--socket", "--init-command",
              "--defaults-file", "--defaults-extra-file"}
    parsed = parse_options(inv.argv, values)
    if not mysql:  # (`-d`/the first operand: a database name, a connection string or a URI)
        _libpq_operands(inv, parsed, ("-d", "--dbname"), 1)
    host = "localhost"
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-h", "--host"):
            host = value
        elif option in ("-f", "--file"):  # SQL whose `\!` lines run shell commands
            _db_sql_file(inv, value, index, f"`{inv.name} {option}`")
        elif option in ("--defaults-file", "--defaults-extra-file"):
            inv.read(value, index)
        elif option in ("-o", "--output", "-L", "--log-file", "--tee"):
            inv.write(value.lstrip("|"), index)
        elif option in ("-c", "--command", "-e", "--execute", "--init-command"):
            _db_shell_lines(inv, value.replace(";", "\n"), index, f"`{inv.name} {option}`")
    if mysql and not host.startswith("/"):
        inv.network(host, None, None)
    elif not mysql:
        _libpq_hosts(inv, host, None)
    if inv.name == "psql" and not parsed.has("-X", "--no-psqlrc"):  # (psql runs its rc file's commands)
        rc = env_value(inv, "PSQLRC")
        if rc is not None:
            foreign_file(inv, rc, None, "`PSQLRC`")
    text = inv.stdin.text
    if text is not None:
        _db_shell_lines(inv, text, None, "the SQL on stdin")
    elif (inv.stdin.what.startswith("`") or _piped_foreign(inv)) and \
            not parsed.has("-c", "--command", "-e", "--execute", "-f", "--file"):
        # (`psql < /tmp/x.sql`, `cat /tmp/x.sql | mysql`: SQL the agent may have put there; see
        # Walker.redirected)
        inv.unknown(f"`{inv.name}` runs SQL from {inv.stdin.what}, whose `\\!` lines run shell commands: it cannot be "
                    "seen into", None)


def _piped_foreign(inv: Invocation) -> bool:
    """Whether the command piped into this one (``cat /tmp/x.sql | mysql``) read a file that may
    hold what the agent put there (:func:`~stockade.analyzer.models.fresh.foreign_input`): the
    reads recorded between its run and this one."""
    from stockade.analyzer.effects import Execute, Read
    from stockade.analyzer.models.fresh import foreign_input

    if not inv.stdin.what.startswith("the output of"):
        return False
    effects = inv.walker.effects
    position = len(effects) - 1
    while position >= 0 and effects[position].__class__ is not Execute:  # (this command's own run)
        position -= 1
    position -= 1
    while position >= 0 and effects[position].__class__ is not Execute:  # the producer's effects
        effect = effects[position]
        if effect.__class__ is Read and foreign_input(inv.walker, effect.path):
            return True
        position -= 1
    return False


def _db_sql_file(inv: Invocation, word: str, index: int | None, what: str, depth: int = 0) -> None:
    """A SQL file the client runs (``-f FILE``, ``\\i FILE``, ``source FILE``): its content when
    this text made it (a file written here, ``<(echo …)``) — its shell lines walked —, else
    unknown code when it is not the project's own (:func:`foreign_file`)."""
    from stockade.analyzer.words import process_text

    if word.startswith("/dev/fd/"):
        text = process_text(inv.walker, word)
    elif word in ("-", "/dev/stdin"):
        text = inv.stdin.text
    else:
        text = known_content(inv.walker, inv.path(word)) if UNKNOWN not in word else None
    if text is None or depth > 4:
        if word.startswith("/dev/fd/") or word in ("-", "/dev/stdin"):
            inv.unknown(f"{what} runs SQL produced by another command, whose `\\!` lines run shell commands: it "
                        "cannot be seen into", index)
        else:
            foreign_file(inv, word, index, what)
        return
    if not word.startswith("/dev/fd/"):
        inv.read(word, index)
    _db_shell_lines(inv, text, index, f"`{show(word)}`", depth + 1)


def _db_shell_lines(inv: Invocation, text: str, index: int | None, where: str, depth: int = 0) -> None:
    """The shell commands in SQL a psql or mysql client runs, walked: ``\\!``/``system``
    lines, the program of a ``COPY … TO/FROM PROGRAM`` and psql's ``\\o |cmd`` pipes; files it
    includes (psql's ``\\i``/``\\ir``, mysql's ``source``/``\\.``) are SQL files it runs; files
    its SQL reads or writes by a literal name (:data:`_SQL_READS`, :data:`_SQL_WRITES`: judged on
    this machine, where a local server runs) are reads and writes."""
    for match in re.finditer(r"(?:^|\n|;)\s*(?:\\(?:i|ir|include|include_relative)|source|\\\.)\s+([^\s;]+)", text,
                             re.I):
        _db_sql_file(inv, match.group(1).strip("'\""), index, f"the SQL file {where} includes", depth)
    for match in re.finditer(r"\bprogram\s+'((?:[^']|'')*)'", text, re.I):
        inv.script(match.group(1).replace("''", "'"), index, what=f"the program of a `COPY` in {where}")
    for match in re.finditer(r"\\(?:o|out|g|w|write)\s*\|([^\n]*)", text):
        inv.script(match.group(1), index, what=f"the command {where} pipes output to")
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith(("\\!", "system ")):
            inv.script(line.split(None, 1)[1] if " " in line else "", index, what=f"the shell command in {where}")
    if "'" in text:  # files the SQL has the server (or psql's `\copy`) read or write
        for match in _SQL_READS.finditer(text):  # (a leading `~` is a name: SQL expands no tilde)
            if match.group(1):
                inv.read("./" + match.group(1) if match.group(1)[:1] == "~" else match.group(1), index)
        for match in _SQL_WRITES.finditer(text):
            if match.group(1):
                inv.write("./" + match.group(1) if match.group(1)[:1] == "~" else match.group(1), index)


#: SQL that reads a file named by a literal: PostgreSQL's ``pg_read_file('/x')``,
#: ``lo_import``, ``COPY t FROM '/x'`` (and psql's ``\copy``), MySQL's ``LOAD_FILE('/x')`` and
#: ``LOAD DATA [LOCAL] INFILE '/x'`` (group 1: the path)
_SQL_READS = re.compile(r"\b(?:(?:pg_read_file|pg_read_binary_file|pg_stat_file|lo_import|load_file)\s*\(\s*|"
                        r"copy\b[^;]*?\bfrom\s+|load\s+data\s+(?:low_priority\s+|concurrent\s+)?(?:local\s+)?"
                        r"infile\s+)'([^']*)'", re.I)
#: SQL that writes a file: ``COPY … TO '/x'``, ``SELECT … INTO OUTFILE|DUMPFILE '/x'``, ``lo_export(oid, '/x')``
_SQL_WRITES = re.compile(r"\b(?:copy\b[^;]*?\bto\s+|into\s+(?:outfile|dumpfile)\s+|lo_export\s*\([^,;]*,\s*)'([^']*)'",
                         re.I)


_HTTP_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
_HTTP_VALUES = {"-o", "--output", "-a", "--auth", "--session", "--session-read-only", "--cert", "--cert-key",
                "--verify", "--proxy", "-A", "--auth-type", "-p", "--print", "--pretty", "-s", "--style",
                "--timeout", "--max-redirects", "--format-options", "--response-charset", "--response-mime",
                "-d", "--dir", "-i", "--input-file", "-x", "--all-proxy", "--http-proxy", "--https-proxy",
                "--conf-path", "--save-session", "--log", "-l"}


def _url(word: str) -> str:
    """An HTTPie URL operand as a URL (``:8000/x`` is localhost, ``host/x`` is http)."""
    if "://" in word:
        return word
    return "http://localhost" + word if word.startswith(":") else "http://" + word


def model_http_client(inv: Invocation) -> None:
    """http/https/xh/xhs (HTTPie): ``[METHOD] URL [ITEMS]`` — the URL is contacted, ``name@FILE``,
    ``name=@FILE`` and ``name:=@FILE`` items upload files (reads), ``-o`` writes, ``--session``
    files are read and written.  aria2c: every operand is a URL; ``-d``/``-o`` write,
    ``--on-download-*`` run programs, ``-i`` reads the URL list."""
    parsed = parse_options(inv.argv, _HTTP_VALUES)
    aria = inv.name.startswith("aria2")
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-o", "--output") or (aria and option in ("-d", "--dir")):
            inv.write(value, index, recursive=option in ("-d", "--dir"))
        elif option.startswith("--on-download-") or option == "--on-bt-download-complete":
            apply(inv, P, value, index, f"`{inv.name} {option}`")
        elif option in ("-i", "--input-file", "--cert", "--cert-key", "--conf-path", "--session-read-only"):
            inv.read(value, index)
        elif option in ("--session", "--save-session", "--log", "-l"):
            inv.write(value, index)
        elif option in ("--proxy", "-x", "--all-proxy", "--http-proxy", "--https-proxy"):
            contact_url(inv, value.partition(":")[2] if not aria and ":" in value and "://" not in
                        value.partition(":")[0] else value, index, 80)
    for option, value, index in parsed.options:  # `--on-download-complete=CMD` (attached)
        if value is None and option.startswith("--on-download-"):
            apply(inv, P, inv.argv[index].partition("=")[2], index, f"`{inv.name} {option}`")
    words = list(parsed.positionals)
    if aria:
        for word, index in words:
            contact_url(inv, _url(word), index, 80)
        return
    if words and (words[0][0] in _HTTP_METHODS or (len(words) > 1 and words[0][0].isascii() and
                                                   words[0][0].isalpha())):
        words.pop(0)  # (HTTPie and xh take a first word of letters alone, in any case, as the method)
    if not words:
        return
    url, url_index = words.pop(0)
    contact_url(inv, _url(url), url_index, 443 if url.startswith("https") or inv.name in ("https", "xhs") else 80)
    for word, index in words:
        for marker in (":=@", "=@", "@"):
            name, found, path = word.partition(marker)
            if found and "=" not in name.replace("==", "") and (marker != "@" or ":" not in name):
                inv.read(path, index)
                break


def model_twine(inv: Invocation) -> None:
    """twine upload: the distributions are read and sent to the repository (upload.pypi.org or
    ``--repository-url``); ``--config-file`` (``~/.pypirc``) holds credentials."""
    parsed = parse_options(inv.argv, {"-r", "--repository", "--repository-url", "-u", "--username", "-p",
                                      "--password", "--config-file", "--cert", "--client-cert", "-c", "--comment",
                                      "-i", "--identity", "--sign-with"})
    words = list(parsed.positionals)
    if not words:
        return
    sub, sub_index = words.pop(0)
    if sub != "upload":
        for word, index in words:
            inv.read(word, index)
        return
    urls = parsed.values_of("--repository-url")
    contact_url(inv, urls[-1][0] if urls else "https://upload.pypi.org/legacy/", urls[-1][1] if urls else sub_index,
                443)
    for value, index in parsed.values_of("--config-file"):
        inv.read(value, index)
    for word, index in words:
        inv.read(word, index)


register("just task rake", model_runner)
register("gh", model_gh)
register("pandoc", model_pandoc)
register("jupyter jupyter-nbconvert", model_jupyter)
register("gpg gpg2", model_gpg)
register("pass", model_pass)
register("ssh-keygen ssh-add ssh-copy-id", model_ssh_keys)
#: database dump and load tools: program → (options naming the server, options naming a file
#: written, options naming a file read, the other options that take a value)
_DB_DUMPS: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]] = {
    "pg_dump pg_dumpall": (frozenset({"-h", "--host"}), frozenset({"-f", "--file"}), frozenset(),
                           frozenset({"-p", "--port", "-U", "--username", "-d", "--dbname", "-F", "--format",
                                      "-n", "--schema", "-N", "--exclude-schema", "-t", "--table", "-T",
                                      "--exclude-table", "-j", "--jobs", "-Z", "--compress", "-E", "--encoding",
                                      "--role", "-l", "--database", "-S", "--superuser", "--lock-wait-timeout"})),
    "pg_restore": (frozenset({"-h", "--host"}), frozenset({"-f", "--file"}), frozenset({"-L", "--use-list"}),
                   frozenset({"-p", "--port", "-U", "--username", "-d", "--dbname", "-F", "--format", "-n",
                              "--schema", "-t", "--table", "-j", "--jobs", "-I", "--index", "-P", "--function",
                              "-T", "--trigger", "--role", "-S", "--superuser"})),
    "mysqldump mariadb-dump mysqlpump": (frozenset({"-h", "--host"}), frozenset({"-r", "--result-file"}),
                                         frozenset({"--defaults-file", "--defaults-extra-file"}),
                                         frozenset({"-P", "--port", "-u", "--user", "-S", "--socket",
                                                    "--where", "-w", "--tables", "--ignore-table",
                                                    "--default-character-set"})),
    "mongodump mongoexport": (frozenset({"-h", "--host", "--uri"}), frozenset({"-o", "--out", "--archive"}),
                              frozenset({"--config"}),
                              frozenset({"--port", "-u", "--username", "-p", "--password", "-d", "--db", "-c",
                                         "--collection", "-q", "--query", "--authenticationDatabase",
                                         "--type", "-f", "--fields"})),
    "mongorestore mongoimport": (frozenset({"-h", "--host", "--uri"}), frozenset(),
                                 frozenset({"--config", "--archive", "--file", "--dir"}),
                                 frozenset({"--port", "-u", "--username", "-p", "--password", "-d", "--db", "-c",
                                            "--collection", "--authenticationDatabase", "--type", "-f",
                                            "--fields", "--nsInclude", "--nsExclude"})),
}
_DB_DUMP_BY_NAME = {name: row for names, row in _DB_DUMPS.items() for name in names.split()}


def model_db_dump(inv: Invocation) -> None:
    """pg_dump/pg_restore/mysqldump/mongodump and their kin: the server named by ``-h``/
    ``--host``/``--uri`` (a local socket by default) is contacted, the output file
    (``-f``/``--result-file``/``--out``) written, config and list files read; operands are
    database names (``mongorestore DIR``, ``pg_restore FILE``: the dump read)."""
    hosts, writes, reads, others = _DB_DUMP_BY_NAME[inv.name]
    parsed = parse_options(inv.argv, hosts | writes | reads | others)
    if inv.name.startswith("pg_"):  # (pg_dump's operand, `-d`/`--dbname`: a name, a connection string or a URI)
        _libpq_operands(inv, parsed, ("-d", "--dbname"), 1 if inv.name == "pg_dump" else 0)
    host = "localhost"
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in hosts:
            host = value
            if "://" in value:
                from stockade.analyzer.models.net import contact_url

                contact_url(inv, value, index)
                host = ""
        elif option in writes:
            inv.write(value, index, recursive=inv.name == "mongodump" and option in ("-o", "--out"))
        elif option in reads:
            inv.read(value, index, recursive=option == "--dir")
    if host and inv.name.startswith("pg_"):
        _libpq_hosts(inv, host, None)
    elif host and not host.startswith("/"):
        inv.network(host.rpartition("@")[2].partition(":")[0] or host, None, None)
    if inv.name in ("pg_restore", "mongorestore", "mongoimport"):
        for word, index in parsed.positionals[-1:]:
            inv.read(word, index, recursive=inv.name == "mongorestore")


#: PostgreSQL's server utilities: option → role (``host``: the server, ``conn``: a database name
#: that may be a connection string, ``write``: a directory written) — every other option they
#: take a value of is text
_PG_UTILITY_VALUES = {
    "-h": "host", "--host": "host", "-d": "conn", "--dbname": "conn", "--maintenance-db": "conn",
    **dict.fromkeys(("-p", "--port", "-U", "--username", "-t", "--timeout", "-T", "--template", "-O", "--owner",
                     "-E", "--encoding", "-l", "--locale", "--lc-collate", "--lc-ctype", "--icu-locale",
                     "--icu-rules", "--locale-provider", "--builtin-locale", "-S", "--strategy", "-j", "--jobs",
                     "--table", "-n", "--schema", "-N", "--exclude-schema", "-i", "--index", "-g", "--role",
                     "-c", "--connection-limit", "--min-xid-age", "--min-mxid-age", "-P", "--parallel",
                     "--buffer-usage-limit", "--tablespace", "-F", "--format", "-X", "--wal-method", "-Z",
                     "--compress", "-r", "--max-rate", "-s", "--status-interval", "-C", "--create-slot-never",
                     "--slot", "-L", "--label", "-M", "--max-concurrent", "--checkpoint", "--target",
                     "--manifest-checksums", "--manifest-force-encode-never", "-E", "--endpos", "-o", "--option",
                     "--plugin", "--startpos", "-I", "--incremental"), "text"),
}


def model_pg_utility(inv: Invocation) -> None:
    """pg_isready, createdb/dropdb, createuser/dropuser, vacuumdb/reindexdb/clusterdb,
    pg_basebackup/pg_receivewal/pg_recvlogical: the server of ``-h`` (a local socket by default;
    a path is a socket directory), ``-d``/``--maintenance-db`` (and the database operand of the
    maintenance tools) as libpq reads them (:func:`libpq_target`); pg_basebackup and
    pg_receivewal write the directory of ``-D``, pg_recvlogical the file of ``-f``."""
    values = dict(_PG_UTILITY_VALUES)
    if inv.name in ("pg_basebackup", "pg_receivewal", "pg_recvlogical"):
        values.update({"-D": "write", "--pgdata": "write", "--directory": "write", "-f": "file", "--file": "file",
                       "-t": "write", "--target": "text"})
    else:
        values.update({"-D": "text", "-t": "text"})
    parsed = parse_options(inv.argv, values)
    host = "localhost"
    for option, value, index in parsed.options:
        role = values.get(option)
        if value is None or role is None:
            continue
        if role == "host":
            host = value
        elif role == "conn":
            libpq_target(inv, value, index)
        elif role == "write":
            inv.write(value, index, recursive=True)
        elif role == "file" and value != "-":
            inv.write(value, index)
    if inv.name in ("vacuumdb", "reindexdb", "clusterdb"):
        for word, index in parsed.positionals[:1]:
            libpq_target(inv, word, index)
    libpq_environment(inv)
    _libpq_hosts(inv, host, None)


register("psql mysql mariadb", model_db_client)
register("pg_isready createdb dropdb createuser dropuser vacuumdb reindexdb clusterdb pg_basebackup "
         "pg_receivewal pg_recvlogical", model_pg_utility)
register(" ".join(_DB_DUMPS), model_db_dump)
register("http https xh xhs aria2c", model_http_client)
register("twine", model_twine)
