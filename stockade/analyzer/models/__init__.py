"""Per-tool command models: what each program's arguments read, write, delete, run, contact.

Most tools are described as data — a :class:`Spec` in :data:`SPECS` saying which options
take a value, what role positional arguments and option values play, and which flags make
an operation recursive.  Tools that embed code or have subcommands (git, find, xargs, sed,
awk, tar, curl, ssh, shells, interpreters, wrappers) have a small model function each, in
the topic modules of this package.  :data:`MODELS` maps a program's basename to its model.

Roles: ``read``, ``readr`` (recursive read), ``list`` (names only), ``write``, ``writer``,
``delete``, ``deleter``, ``text`` (no effect), ``url`` (network), ``script`` (shell code),
``unknown`` (code that cannot be seen into).
"""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN, Opaque, TupleRecord
from stockade.analyzer.exec import _BY_NAME, Invocation

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    Model = Callable[[Invocation], None]


_NO_VALUES: dict[str, str] = {}  # the shared empty defaults of Spec (never mutated)
_NO_FLAGS: frozenset[str] = frozenset()


class Spec(TupleRecord):
    """A data-like model of a simple tool.

    * ``args``: role of positional arguments;
    * ``first``: role of the first positional (e.g. a pattern);
    * ``last``: role of the last positional when there are two or more;
    * ``values``: value-taking option → role of its value;
    * ``recursive``: flags that make reads/writes/deletes recursive;
    * ``flags``: flag → ``writes-args`` | ``unknown:<why>`` | ``privilege``;
    * ``stdin_out``: passes stdin through to stdout (cat);
    * ``first_given_by``: options that supply the first positional's value instead
      (grep -e/-f): then every positional is args;
    * ``optional``: options whose value is only ever attached (``--color=WHEN``);
    * ``default``: path the tool works on without positionals, when recursive.

    A value option whose role is ``target`` names the directory written into (``cp -t DIR``):
    it is written recursively, and every positional is then of ``args``' role (no ``last``)."""

    __slots__ = ()
    _fields = ("args", "first", "last", "values", "recursive", "flags", "stdin_out", "first_given_by", "optional",
               "default")
    args: str
    first: str | None
    last: str | None
    values: dict[str, str]
    recursive: frozenset[str]
    flags: dict[str, str]
    stdin_out: bool
    first_given_by: frozenset[str]
    optional: frozenset[str]
    default: str | None

    def __new__(cls, args: str = "read", first: str | None = None, last: str | None = None,
                values: dict[str, str] = _NO_VALUES, recursive: frozenset[str] = _NO_FLAGS,
                flags: dict[str, str] = _NO_VALUES, stdin_out: bool = False,
                first_given_by: frozenset[str] = _NO_FLAGS, optional: frozenset[str] = _NO_FLAGS,
                default: str | None = None) -> Spec:
        return tuple.__new__(cls, (args, first, last, values, recursive, flags, stdin_out, first_given_by, optional,
                                   default))


class Parsed(TupleRecord):
    """An argv split into options (name, value, index) and positionals (word, index)."""

    __slots__ = ()
    _fields = ("options", "positionals")
    options: tuple[tuple[str, str | None, int], ...]
    positionals: tuple[tuple[str, int], ...]

    def __new__(cls, options: tuple[tuple[str, str | None, int], ...],
                positionals: tuple[tuple[str, int], ...]) -> Parsed:
        return tuple.__new__(cls, (options, positionals))

    def has(self, *names: str) -> bool:
        """Whether any of the options is present."""
        for option, _, _ in self.options:  # noqa: SIM110  (a loop: `any` of a generator costs a frame more)
            if option in names:
                return True
        return False

    def values_of(self, *names: str) -> list[tuple[str, int]]:
        """The values given to the options (with the argv index of each)."""
        return [(value, index) for option, value, index in self.options if option in names and value is not None]


_new_tuple = tuple.__new__  # a record without its Python-level __new__ (parse_options runs per command)


def parse_options(argv: list[str], takes_value: set[str] | frozenset[str] | dict[str, str],
                  start: int = 1, stop_at_first_positional: bool = False,
                  optional: frozenset[str] | set[str] = frozenset()) -> Parsed:
    """Split argv: ``--x=v``, ``--x v``, ``-abc`` clusters, ``-ov``/``-o v`` for value options, and
    ``-long v`` for a value option named with one dash (``-eval``: as ``takes_value`` lists it).

    ``optional`` names options whose value is optional and therefore only ever attached
    (``-i.bak``, ``--color=auto``): the next word is never their value."""
    options: list[tuple[str, str | None, int]] = []
    positionals: list[tuple[str, int]] = []
    index = start
    count = len(argv)
    only_positionals = False
    while index < count:
        word = argv[index]
        if only_positionals or word[:1] != "-" or word == "-":
            positionals.append((word, index))
            if stop_at_first_positional:
                only_positionals = True
            index += 1
            continue
        if word == "--":
            only_positionals = True
            index += 1
            continue
        if word[1] == "-":  # --long, --long=value
            name, eq, value = word.partition("=")
            if name not in takes_value and name not in optional and len(name) > 3 and \
                    argv[0].rpartition("/")[2] in ABBREVIATING:
                name = _long_option(name, takes_value, optional, argv[0].rpartition("/")[2] == "git")
            if eq:
                options.append((name, value, index))
            elif name in takes_value and name not in optional and index + 1 < count:
                options.append((name, argv[index + 1], index + 1))
                index += 1
            else:
                options.append((name, None, index))
            index += 1
            continue
        length = len(word)
        if length > 2 and word in takes_value and word not in optional:
            # a single-dash long option the tool names so (`-eval CODE`, `-cmd SQL`)
            options.append((word, argv[index + 1], index + 1) if index + 1 < count else (word, None, index))
            index += 2
            continue
        # short cluster
        position = 1
        consumed_next = False
        while position < length:
            flag = "-" + word[position]
            if flag in optional:
                options.append((flag, word[position + 1:] or None, index))
                break
            if flag in takes_value:
                rest = word[position + 1:]
                if rest:
                    options.append((flag, rest, index))
                elif index + 1 < count:
                    options.append((flag, argv[index + 1], index + 1))
                    consumed_next = True
                else:
                    options.append((flag, None, index))
                break
            options.append((flag, None, index))
            position += 1
        index += 2 if consumed_next else 1
    return _new_tuple(Parsed, (tuple(options), tuple(positionals)))


#: programs that take a unique prefix of a long option for the option (getopt_long's rule:
#: ``sort --outp=F`` is ``--output=F``, ``sed --in-pl`` is ``--in-place``, ``wget --output-d``)
#: — GNU coreutils, sed, grep, tar, gzip, wget, diffutils, patch, findutils' xargs, gawk, make
ABBREVIATING = frozenset(
    "cat tac cp mv rm ln install mkdir rmdir touch chmod chown chgrp sort uniq cut tr head tail tee split csplit "
    "join paste comm shuf base64 base32 basenc du df ls dir vdir stat truncate shred wc date env nice nohup "
    "timeout stdbuf realpath readlink mktemp od fold fmt nl pr expand unexpand sum md5sum sha1sum sha224sum "
    "sha256sum sha384sum sha512sum b2sum cksum numfmt ptx tsort dircolors sed gsed grep egrep fgrep tar gtar "
    "gzip gunzip zcat wget diff diff3 sdiff cmp patch xargs gawk make gmake git".split())


def _long_option(name: str, takes_value: set[str] | frozenset[str] | dict[str, str],
                 optional: frozenset[str] | set[str], any_prefix: bool = False) -> str:
    """The long option ``name`` abbreviates when it is a prefix of exactly one option that
    takes a value (the program's other options are not listed: where one of them shares the
    prefix, the program refuses the word as ambiguous and runs nothing), else ``name``.  A
    name that ends where a word of that option does (``--time`` of ``--time-style``,
    ``--checkpoint`` of ``--checkpoint-action``) is an option of its own in these programs,
    not an abbreviation: kept."""
    found = {option for option in (*takes_value, *optional) if option[:len(name)] == name and option[:2] == "--"}
    if len(found) != 1:
        return name
    option = found.pop()
    # (git's parse-options takes any unique prefix: `--open` is `--open-files-in-pager`)
    return name if option[len(name):len(name) + 1] == "-" and not any_prefix else option


def apply_role(inv: Invocation, role: str, word: str, index: int | None) -> None:
    """Apply one role to one argument."""
    access = _ACCESS_ROLES.get(role)
    if access is not None:
        method, recursive = access
        if word[:8].lower() == "file:///":  # (a file URL where a path goes: `wkhtmltopdf file:///etc/shadow`)
            word = word[7:].partition("?")[0].partition("#")[0]
        method(inv, word, index, recursive)
        return
    if role == "text":
        return
    if role == "url":
        from stockade.analyzer.models.net import contact_url

        contact_url(inv, word, index)
    elif role == "script":
        inv.script(word, index)
    elif role.startswith("unknown"):
        inv.unknown(role.partition(":")[2] or f"`{inv.name}` runs code from its arguments", index)


#: The roles that are a filesystem access: role → (the Invocation method, recursive).
_ACCESS_ROLES = {
    "read": (Invocation.read, False), "list": (Invocation.read, False), "readr": (Invocation.read, True),
    "write": (Invocation.write, False), "writer": (Invocation.write, True), "target": (Invocation.write, True),
    "delete": (Invocation.delete, False), "deleter": (Invocation.delete, True),
}
_RECURSIVE_ROLE = {"read": "readr", "write": "writer", "delete": "deleter"}


def spec_model(spec: Spec) -> Model:
    """A model function from a :class:`Spec`."""
    values = spec.values
    flags = spec.flags
    recursive_flags = spec.recursive
    first, last, stdin_out = spec.first, spec.last, spec.stdin_out
    first_given_by, optional, default = spec.first_given_by, spec.optional, spec.default

    def model(inv: Invocation) -> None:
        parsed = parse_options(inv.argv, values, optional=optional)
        options = parsed.options
        recursive = False
        if recursive_flags:
            for option, _, _ in options:
                if option in recursive_flags:
                    recursive = True
                    break
        args_role = spec.args
        targeted = False  # a `target` option named the directory: no positional is the destination
        index: int | None  # the argv index of a word (None: a default path)
        for option, value, index in options:
            if flags:
                effect = flags.get(option)
                if effect is not None:
                    if effect == "writes-args":
                        args_role = "write"
                    elif effect.startswith("unknown"):
                        inv.unknown(effect.partition(":")[2] or f"`{inv.name} {option}` runs code", index)
                    elif effect == "privilege":
                        inv.privilege(f"`{inv.name} {option}`", index)
            if value is not None:
                role = values.get(option)
                if role is not None:
                    apply_role(inv, role, value, index)
                    if role == "target":
                        targeted = True
        positionals: list[tuple[str, int | None]] = list(parsed.positionals)  # None: a default path
        if first is not None and positionals and not (first_given_by and parsed.has(*first_given_by)):
            word, index = positionals.pop(0)
            apply_role(inv, first, word, index)
        if default is not None and recursive and not positionals:
            positionals = [(default, None)]
        if last is not None and len(positionals) >= 2 and not targeted:
            word, index = positionals.pop()
            apply_role(inv, last + ("r" if recursive and last == "write" else ""), word, index)
        if stdin_out and len(positionals) == 1 and positionals[0][0] == "-":
            positionals = []  # (`cat -`: standard input, passed through)
        if positionals:
            role = _RECURSIVE_ROLE.get(args_role, args_role) if recursive else args_role
            access = _ACCESS_ROLES.get(role)
            if access is not None:  # (apply_role's first case, looked up once)
                method, recursive_access = access
                for word, index in positionals:
                    if word[:8].lower() == "file:///":  # (a file URL: the file it names)
                        word = word[7:].partition("?")[0].partition("#")[0]
                    method(inv, word, index, recursive_access)
            else:
                for word, index in positionals:
                    apply_role(inv, role, word, index)
        elif stdin_out:
            inv.output(inv.stdin.text, inv.stdin.what)

    return model


def default_model(inv: Invocation) -> None:
    """A program with no model is judged by what is visible: arguments (and option values,
    ``--out=PATH``, ``-oPATH``, ``key=PATH``) that look like paths are reads; every word that
    can name a file is also an :class:`~stockade.analyzer.effects.Opaque` — what the program
    does to it is not known, so a path the policy does not let it write (read-only or denied)
    gets the policy's ``unknown-effects`` verdict; the value of an output option (``-o FILE``,
    ``--output=FILE``) is a write."""
    name = inv.name
    if name[-4:].lower() == ".exe" or (name != name.lower() and name.lower() in MODELS):
        # a Windows program named from bash (WSL, Git Bash): `CMD.EXE`, `git.exe`, `Reg`
        from stockade.analyzer.models.windows import program_name

        model = MODELS.get(program_name(name))
        if model is not None and model is not default_model:
            inv.name = program_name(name)
            model(inv)
            return
    if name[-1:].isdigit():  # a versioned name: `python3.12`, `pip3.9`, `node18`, `gcc-12`, `zsh-5.9`
        base = versioned_base(name)
        model = MODELS.get(base) if base is not None else None
        if model is not None and model is not default_model:
            inv.name = base  # type: ignore[assignment]
            model(inv)
            return
    if "-" in name[1:] and name[:1].isupper():  # `Remove-Item` given to bash: PowerShell's, not judged here
        from stockade.analyzer.pwsh import is_cmdlet

        if is_cmdlet(name):
            inv.unknown(f"`{name}` is a PowerShell cmdlet, which bash does not run: analyze the text as PowerShell "
                        "(`--shell powershell` or `auto`) to judge it", 0)
    visible_operands(inv, 1)
    _visible_urls(inv)
    _output_options(inv)
    if len(inv.argv) > 3 and not _CODE_WORDS.isdisjoint(inv.argv):  # (`X exec python -c CODE`: a wrapped command)
        from stockade.analyzer.models.wrappers import nested_code_commands

        nested_code_commands(inv)


#: option words after which an interpreter's value is code (see :func:`.wrappers.nested_code_commands`)
_CODE_WORDS = frozenset({"-c", "-e", "-E", "--eval", "-p", "--print", "-r", "eval"})


#: URL schemes of network protocols (a program given such a URL is judged to contact its host)
_NETWORK_SCHEMES = frozenset({"http", "https", "ftp", "ftps", "sftp", "ssh", "git", "ws", "wss", "tcp", "udp",
                              "telnet", "rsync", "smb", "ldap", "ldaps", "mqtt", "amqp", "redis", "mongodb",
                              "postgres", "postgresql", "mysql", "imap", "imaps", "smtp", "smtps", "gopher", "dict",
                              "tftp", "scp", "irc", "ircs", "nntp", "grpc", "quic"})


def _visible_urls(inv: Invocation) -> None:
    """A program with no model given a network URL (as an operand or an option's value) is
    judged to contact its host."""
    for index, word in enumerate(inv.argv[1:], start=1):
        if "://" not in word:
            continue
        url = word.partition("=")[2] if "=" in word.partition("://")[0] else word  # --url=U, key=U
        scheme = url.partition("://")[0].lower()
        if "+" in scheme:  # git+https://
            scheme = scheme.rpartition("+")[2]
            url = url.partition("+")[2]
        if scheme in _NETWORK_SCHEMES:
            from stockade.analyzer.models.net import contact_url

            contact_url(inv, url, index)
        elif scheme == "file" and url[7:8] == "/":  # (`chromium file:///etc/shadow`: the file it opens)
            inv.read(url[7:].partition("?")[0].partition("#")[0], index)


#: options that name the file a program writes, in nearly every tool that has them
_OUTPUT_OPTIONS = frozenset({"-o", "--output", "--output-file", "--outfile", "--out-file", "--out", "--output-path"})
#: options that name the directory a program writes into
_OUTPUT_DIRS = frozenset({"--out-dir", "--outdir", "--output-dir", "--output-directory"})


def _output_options(inv: Invocation) -> None:
    """A program with no model given an output option (``-o FILE``, ``--output=FILE``) writes
    that file: ``msgfmt -o /usr/share/locale/x.mo`` writes where the policy does not allow."""
    argv = inv.argv
    for word in argv:  # (no word that can be an output option: nothing to do)
        if word[:2] == "-o" or word[:5] == "--out":
            break
    else:
        return
    for index in range(1, len(argv)):
        word = argv[index]
        if word == "--":
            return
        option = word.partition("=")[0] if word[:2] == "--" else word
        if (word in _OUTPUT_OPTIONS or word in _OUTPUT_DIRS) and index + 1 < len(argv):
            value, at = argv[index + 1], index + 1
        elif word[:2] == "--" and "=" in word and (option in _OUTPUT_OPTIONS or option in _OUTPUT_DIRS):
            value, at = word.partition("=")[2], index
        elif word[:2] == "-o" and len(word) > 2 and word[2] in "/~":  # `-o/usr/x`: an attached value
            value, at = word[2:], index
        else:
            continue
        if value and value[:1] != "-" and "://" not in value and UNKNOWN not in value:
            inv.write(value, at)  # (a directory: new entries below it, judged as a write of it)


def versioned_base(name: str) -> str | None:
    """The program a versioned name is (``python3.12`` → ``python3``, else ``python``;
    ``gcc-12`` → ``gcc``), the longest prefix with a model; None when there is none."""
    stem = name
    while stem and (stem[-1].isdigit() or stem[-1] in ".-_"):
        stem = stem[:-1]
        if stem and stem[-1] not in ".-_" and not stem[-1].isdigit() and stem in MODELS:
            return stem
        if len(stem) > 1 and stem[-1] in ".-_" and stem[:-1] in MODELS:
            return stem[:-1]
    return None


def visible_operands(inv: Invocation, start: int) -> None:
    """:func:`default_model`'s judgement of ``inv.argv[start:]``: the arguments a program
    with no model of its own gets (also those an interpreter passes to its script or module)."""
    walker = inv.walker
    effects = walker.effects
    spans = inv.spans
    name = inv.name
    for index, word in enumerate(inv.argv[start:], start=start):
        if word[:1] == "-":
            _, eq, value = word.partition("=")
            if eq:
                word = value
            elif word[1:2] != "-" and len(word) > 2 and word[2] in "/~.":
                word = word[2:]  # -o/etc/passwd: an attached value
            else:
                continue
        elif "=" in word:
            word = word.partition("=")[2]
        if not word or "://" in word or word.startswith(("http:", "https:")):
            continue
        slash = "/" in word
        if slash or word[:1] in "~.":
            if word[:1] != "." or slash or len(word) > 1:
                inv.read(word, index)
        elif UNKNOWN in word:
            continue
        if word in (".", ".."):
            continue
        span = spans[index] if index < len(spans) else inv.span
        effects.append(_new_tuple(Opaque, (name, walker.resolve(word), span)))


MODELS: dict[str, Model] = {}
_BUILTINS: dict[str, Model] = {}


def register(names: str, model: Model, builtin: bool = False) -> None:
    """Register a model under each space-separated name."""
    for name in names.split():
        (_BUILTINS if builtin else MODELS)[name] = model
    _BY_NAME.clear()  # run_command's name → model memo


def builtin_model(name: str) -> Model | None:
    """Shell builtins (only by bare name: ``/bin/cd`` is not the builtin)."""
    return _BUILTINS.get(name)


from stockade.analyzer.models import (  # noqa: E402,F401
    files,
    net,
    selection,
    shells,
    shellstate,
    system,
    text,
    vcs,
    wrappers,
)

# isort: split
# (after the modules above: these replace models registered there, or wrap them: cargo)
from stockade.analyzer.models import archives, clouds, containers, packages  # noqa: E402,F401

# isort: split
# (after the modules above: these wrap models registered there)
from stockade.analyzer.models import coderunners, fresh, readers, runners  # noqa: E402,F401

# isort: split
# (after the modules above: these replace or wrap models registered there: tar, flock, less, go)
# (Windows programs and shells: after the others, whose models they reuse)
from stockade.analyzer.models import (  # noqa: E402,F401
    agenttools,
    devtools,
    windows,
)

# isort: split
# (after every other: these wrap models registered above: docker, pip, npm, bun, uv, cargo;
# gdb, vim, emacs)
from stockade.analyzer.models import gitpaths, launchers, netclients, pipefill, projects, writers  # noqa: E402,F401

# isort: split
# (formatters replace the plain `black`/`ruff`/`prettier`/`eslint` entries of files.py;
# toolchains wrap pipx's, yarn's and conda's models; servers php's and ruby's)
from stockade.analyzer.models import formatters, servers, toolchains  # noqa: E402,F401

# isort: split
# (after every other: wrap bun, go, python, xargs and parallel as registered above)
from stockade.analyzer.models import fanout, netconfig, sourcerun  # noqa: E402,F401

# isort: split
# (media and document converters: replace readers' `identify`)
from stockade.analyzer.models import media  # noqa: E402,F401

# isort: split
# (password managers and secret stores: gopass, secret-tool, security, keyctl, op, bw, lpass)
from stockade.analyzer.models import secretstores  # noqa: E402,F401

# isort: split
# (JVM builds, task runners and duckdb: they replace the plain `mvn`/`gradle` entries of files.py)
from stockade.analyzer.models import buildtools  # noqa: E402,F401

# isort: split
# (wraps the models above of the tools whose configuration files are code)
from stockade.analyzer.models import toolconfigs  # noqa: E402,F401

# isort: split
# (wraps the final models of head, sort, tr, cut, sed, awk, grep, xargs …: what they print of known text)
from stockade.analyzer.models import filters  # noqa: E402,F401

# isort: split
# (last: wraps the final models of tar, make, zip, xz … with the options their variables hold)
from stockade.analyzer.models import optionenv  # noqa: E402,F401

# isort: split
# (wraps the final models of head, seq, openssl, truncate and kill: how much they write, whom they signal;
# and of pip, uv, uvx, npm, go, gradle, mvn, java: installing or building what this text wrote, proxies)
from stockade.analyzer.models import fetched, outsize  # noqa: E402,F401

# isort: split
# (after every other: wraps the final models of npm, cargo, go, poetry, uv … with the files their
# init subcommands write)
from stockade.analyzer.models import scaffold  # noqa: E402,F401

# isort: split
# (after every other: wraps the final models of gdb, lldb, strace, perf … and of the JDK tools)
from stockade.analyzer.models import attach  # noqa: E402,F401

# isort: split
# (after every other: adds what date, id, nproc, uname, git rev-parse print to their final models)
from stockade.analyzer.models import plainvalues  # noqa: E402,F401

# isort: split
# (after runners, whose Runner rows and model they extend: sandbox, container and queue runners)
from stockade.analyzer.models import sandboxes  # noqa: E402,F401

# isort: split
# (last: wraps the final models of gnuplot, mix, nim, bazel, gcc … with the code their options carry)
from stockade.analyzer.models import oneliners  # noqa: E402,F401

# isort: split
# (last: wraps the final models of kitty, vim, nvim and systemctl: commands sent into running programs)
from stockade.analyzer.models import injection  # noqa: E402,F401
