"""Running one simple command: builtins, functions, and per-tool models.

:func:`run_command` is called by the walker with a resolved argv.  It records an
:class:`~stockade.analyzer.effects.Execute` (so command rules see every level, e.g. both
``sudo rm …`` and ``rm …``), then applies the shell builtins that change walker state
(``cd``, ``pushd``, ``eval``, ``source``, ``trap``, ``alias``…), calls of functions the script
defined, or the tool's model from :mod:`stockade.analyzer.models`.  Models talk to the walker
only through :class:`Invocation`.
"""

from __future__ import annotations

from stockade.analyzer.effects import (
    UNKNOWN,
    Delete,
    Execute,
    Network,
    Persistence,
    Privilege,
    Read,
    Rename,
    SpanT,
    TupleRecord,
    Unknown,
    Write,
    show,
)

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterable
    from typing import Any

    from stockade.analyzer.walker import Walker

MAX_FUNCTION_DEPTH = 16


class Stdin(TupleRecord):
    """What a command reads on standard input: known text, or None (unknown data)."""

    __slots__ = ()
    _fields = ("text", "what")
    text: str | None
    what: str

    def __new__(cls, text: str | None, what: str) -> Stdin:
        return tuple.__new__(cls, (text, what))


TERMINAL = Stdin(None, "the terminal")


#: the variables naming a proxy that HTTP clients (curl, wget, pip, npm, git, requests) honour
PROXY_VARIABLES = frozenset({"http_proxy", "https_proxy", "all_proxy", "ftp_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                             "ALL_PROXY", "FTP_PROXY", "socks_proxy", "SOCKS_PROXY"})


class Invocation:
    """One command being modelled: its argv (with spans) and the walker's services."""

    __slots__ = ("argv", "env", "name", "span", "spans", "stdin", "walker")

    def __init__(self, walker: Walker, argv: list[str], spans: list[SpanT], stdin: Stdin,
                 env: dict[str, str], span: SpanT):
        self.walker = walker
        self.argv = argv
        self.spans = spans
        self.stdin = stdin
        self.env = env
        self.span = span
        self.name = argv[0].rpartition("/")[2]  # os.path.basename

    # -- spans and paths --------------------------------------------------------------------

    def at(self, index: int | None) -> SpanT:
        """The span of argv word ``index`` (the whole command when None or out of range)."""
        if index is None or not 0 <= index < len(self.spans):
            return self.span
        return self.spans[index]

    @property
    def cwd(self) -> str:
        return self.walker.state.cwd

    def path(self, word: str) -> str:
        """The absolute path a word names."""
        return self.walker.resolve(word)

    # -- effects --------------------------------------------------------------------------

    def read(self, word: str, index: int | None, recursive: bool = False, skip_hidden: bool = False) -> None:
        """The command reads the path ``word`` (``skip_hidden``: a recursive read that leaves out
        dot-files and dot-directories below it)."""
        if word == "-" or word == "":
            return
        spans = self.spans
        span = spans[index] if index is not None and 0 <= index < len(spans) else self.span
        walker = self.walker
        walker.effects.append(_new_tuple(Read, (walker.resolve(word), span, recursive, skip_hidden)))

    def write(self, word: str, index: int | None, recursive: bool = False) -> None:
        """The command writes the path ``word``."""
        if word == "-" or word == "":
            return
        spans = self.spans
        span = spans[index] if index is not None and 0 <= index < len(spans) else self.span
        walker = self.walker
        walker.effects.append(_new_tuple(Write, (walker.resolve(word), span, recursive)))

    def delete(self, word: str, index: int | None, recursive: bool = False) -> None:
        """The command deletes the path ``word``."""
        if word == "":
            return
        spans = self.spans
        span = spans[index] if index is not None and 0 <= index < len(spans) else self.span
        walker = self.walker
        walker.effects.append(_new_tuple(Delete, (walker.resolve(word), span, recursive)))
        links = walker.state.links
        if links:  # (`rm LINK` removes the link itself: later paths through its name are the name's)
            head, slash, name = word.rstrip("/").rpartition("/")
            own = (walker.resolve(head or "/") if slash else walker.state.cwd).rstrip("/") + "/" + name
            links.pop(own, None)

    def network(self, host: str, port: int | None, index: int | None) -> None:
        """The command contacts ``host`` (and the proxy that its proxy variables name)."""
        walker = self.walker
        walker.effects.append(_new_tuple(Network, (host, port, self.at(index))))
        if (self.env or walker.state.exported) and (
                not PROXY_VARIABLES.isdisjoint(self.env) or not PROXY_VARIABLES.isdisjoint(walker.state.exported)):
            from stockade.analyzer.models.net import contact_proxies

            contact_proxies(self, host, index)

    def unknown(self, why: str, index: int | None = None) -> None:
        """Code or effects that cannot be seen into."""
        self.walker.effects.append(_new_tuple(Unknown, (why, self.at(index))))

    def privilege(self, what: str, index: int | None = None) -> None:
        """The command escalates privileges."""
        self.walker.effects.append(_new_tuple(Privilege, (what, self.at(index))))

    def persistence(self, what: str, index: int | None = None) -> None:
        """The command installs something that runs later."""
        self.walker.effects.append(_new_tuple(Persistence, (what, self.at(index))))

    def output(self, text: str | None, what: str = "") -> None:
        """What the command writes to stdout, when known (fed to a following pipe)."""
        self.walker.set_output(_new_tuple(Stdin, (text, what or f"the output of `{self.name}`")))

    # -- nested code ----------------------------------------------------------------------

    def run(self, start: int, extra: Iterable[str] = (), stdin: Stdin | None = None,
            argv: list[str] | None = None, spans: list[SpanT] | None = None) -> None:
        """Run ``argv[start:]`` (plus ``extra`` words) as a command of its own."""
        sub = list(argv if argv is not None else self.argv[start:])
        sub_spans = list(spans if spans is not None else self.spans[start:])
        for word in extra:
            sub.append(word)
            sub_spans.append(self.span)
        if not sub:
            return
        run_command(self.walker, sub, sub_spans, self.stdin if stdin is None else stdin, dict(self.env),
                    sub_spans[0] if sub_spans else self.span)

    def script(self, text: str, index: int | None, positional: list[str] | None = None,
               stdin: Stdin | None = None, what: str = "nested shell code") -> None:
        """Parse and walk shell code found in an argument (unknown text → unknown effects)."""
        if UNKNOWN in text:
            self.unknown(f"{what} is not known before it runs (`{show(text)}`)", index)
            return
        self.walker.nested_script(text, self.at(index), exact=True, subshell=True, positional=positional,
                                  stdin=stdin or TERMINAL, env=self.env)


#: the key in a state's variables that ``shopt -s dotglob`` sets (not a shell name)
DOTGLOB_KEY = "\ue007dotglob"
#: the key in a state's variables that ``shopt -s lastpipe`` sets: a pipeline's last command runs
#: in the shell itself (job control is off in scripts and ``bash -c``), not in a subshell
LASTPIPE_KEY = "\ue009lastpipe"
#: the key in a state's variables that ``shopt -s nocaseglob`` sets (not a shell name)
NOCASEGLOB_KEY = "\ue007nocaseglob"
#: the key set once ``hash -p FILE NAME`` has filled bash's table; each entry is under
#: ``HASHED_PREFIX + NAME`` (not shell names)
HASHED_KEY = "\ue008hashed"
HASHED_PREFIX = "\ue008hash:"


def _hashed(walker: Walker, argv: list[str], spans: list[SpanT]) -> list[str]:
    """``hash -p /usr/bin/curl ls; ls …``: a command name bash finds in its hash table runs the
    file the table names (not a function or builtin of that name, which come first)."""
    name = argv[0]
    target = walker.state.variables.get(HASHED_PREFIX + name)
    if target is None or "/" in name or name in walker.state.functions or name in _SHELL_BUILTINS:
        return argv
    return [target, *argv[1:]]


def _any_case(word: str) -> str:
    """``shopt -s nocaseglob``: a glob word's components that hold a pattern match names in any
    case — each letter spelt ``[xX]``, a bracket expression given both cases of its letters."""
    if UNKNOWN in word or not any(char in word for char in "*?["):
        return word
    parts = word.split("/")
    for number, part in enumerate(parts):
        if not any(char in part for char in "*?["):
            continue
        out, inside = [], False
        for char in part:
            if char == "[" and not inside:
                inside = True
                out.append(char)
            elif char == "]" and inside and out[-1] != "[":
                inside = False
                out.append(char)
            elif char.isascii() and char.isalpha():
                out.append(char.lower() + char.upper() if inside else f"[{char.lower()}{char.upper()}]")
            else:
                out.append(char)
        parts[number] = "".join(out)
    return "/".join(parts)


def _dotglob(argv: list[str], spans: list[SpanT]) -> tuple[list[str], list[SpanT]]:
    """``shopt -s dotglob`` or a set ``GLOBIGNORE``: a glob operand also names the dot-files
    its leading wildcard could match (:func:`globs.dotglob_variants`), each an operand more."""
    from stockade.analyzer.globs import dotglob_variants, has_glob

    out, out_spans = argv[:1], spans[:1]
    for index in range(1, len(argv)):
        word = argv[index]
        where = spans[index] if index < len(spans) else spans[-1] if spans else (0, 0)
        out.append(word)
        out_spans.append(where)
        if has_glob(word) and UNKNOWN not in word:
            for variant in dotglob_variants(word):
                out.append(variant)
                out_spans.append(where)
    return out, out_spans


def run_command(walker: Walker, argv: list[str], spans: list[SpanT], stdin: Stdin,
                env: dict[str, str], span: SpanT) -> None:
    """Model one simple command with a resolved argv."""
    name = argv[0]
    effects = walker.effects
    walker.steps += 1  # (Walker.step inline: one call less per command)
    if walker.steps > walker.budget:
        walker.step()  # raises
    variables = walker.state.variables
    if DOTGLOB_KEY in variables or variables.get("GLOBIGNORE"):
        argv, spans = _dotglob(argv, spans)
    if NOCASEGLOB_KEY in variables:
        argv = [argv[0], *(_any_case(word) for word in argv[1:])]
    if HASHED_KEY in variables:
        argv = _hashed(walker, argv, spans)
        name = argv[0]
    first_span = spans[0] if spans else span
    effects.append(_new_tuple(Execute, (tuple(argv), first_span)))
    found = _BY_NAME.get(name)
    if found is None:
        found = _name_entry(name)
    model, basename, plain = found
    if not plain:  # (the name holds the unknown mark, a glob character or a slash)
        if UNKNOWN in name:
            effects.append(Unknown(f"the command name `{show(name)}` is not known before it runs", first_span))
            return
        if ("*" in name or "?" in name or "]" in name.partition("[")[2]) and \
                _globbed_command(walker, argv, spans, stdin, env, span):  # (a `[` with no `]` is itself: `[ … ]`)
            return
        if "/" in name and len(effects) > 1 and _copied_program(walker, argv, spans, stdin, env, span):
            return
    functions = walker.state.functions
    if functions:
        function = functions.get(name)
        if function is not None and "/" not in name:
            if walker.function_depth >= MAX_FUNCTION_DEPTH or name in walker.recursive:
                # recursion: the body was already walked at a shallower depth; a function that
                # calls itself this deep (a fork bomb, unbounded recursion) is not followed again
                if name not in walker.recursive:
                    walker.recursive = walker.recursive | {name}
                    effects.append(Unknown(f"the function `{show(name)}` calls itself without a visible end "
                                           "(a fork bomb or unbounded recursion)", first_span))
                return
            # a call in the same state as an earlier one (same body, arguments, input, shell
            # state) has the same effects, already recorded: take the state it left
            key = (id(function[0]), function[1].id, tuple(argv), stdin, state_key(walker.state))
            calls = walker.calls
            if calls is None:
                calls = walker.calls = {}
            after = calls.get(key)
            if after is not None:
                restore_state(walker.state, after)
                return
            source, body = function
            saved = walker.state.positional
            walker.state.positional = [name, *argv[1:]]
            walker.function_depth += 1
            try:
                walker.walk_function(source, body, stdin)
            finally:
                walker.function_depth -= 1
                walker.state.positional = saved
            calls[key] = walker.state.copy()
            return
    if walker.aliases is not None and name in walker.aliases:
        _run_alias(walker, argv, spans, stdin, env, first_span)
        return
    if plain or "/" not in name:
        if env or variables.get("PATH") is not None:
            _path_lookup(walker, name, env, first_span)
    elif len(effects) > 1:
        _check_executed(walker, name, first_span)
    # Invocation(walker, argv, spans, stdin, env, span) without type.__call__ (which in CPython
    # 3.11 re-enters the interpreter: ~1,200 machine instructions per command)
    invocation = _new_object(Invocation)
    invocation.walker = walker
    invocation.argv = argv
    invocation.spans = spans
    invocation.stdin = stdin
    invocation.env = env
    invocation.span = span
    invocation.name = basename
    if not plain and "/" in name:  # (a program run by its path is read to run it: `~/.ssh/x.sh`)
        invocation.read(name, 0)
        if model is not _MODELS[2] and len(argv) > 1:  # type: ignore[index]
            _planted_name(invocation, model)
            return
    model(invocation)


def _copied_program(walker: Walker, argv: list[str], spans: list[SpanT], stdin: Stdin, env: dict[str, str],
                    span: SpanT) -> bool:
    """A program run by a path that is a link or copy this text made of another program
    (``cp /bin/rm /tmp/ls; /tmp/ls -rf ~``): run as that program (True); a copy of a program
    not known is unknown code.  False when the path is none."""
    from stockade.analyzer.models.fresh import program_origin

    name = argv[0]
    if not walker.state.links and not _write_seen(walker):
        return False
    origin = program_origin(walker, name)
    if origin == walker.resolve(name) and not walker.state.links:
        return False
    if UNKNOWN in origin:
        walker.effects.append(Unknown(f"runs `{show(name)}`, a copy of a program not known before it runs", spans[0]))
        return True
    if origin.rpartition("/")[2] == name.rpartition("/")[2] or origin == name:
        return False
    from stockade.analyzer.models.programs import agent_writable

    if agent_writable(walker, origin):  # (a copy of a file the agent may have made: judged as run where it is)
        return False
    run_command(walker, [origin, *argv[1:]], spans, stdin, env, span)
    return True


def _write_seen(walker: Walker) -> bool:
    """Whether this text wrote any file so far (see :func:`.fresh.wrote_anything`)."""
    from stockade.analyzer.models.fresh import wrote_anything

    return wrote_anything(walker)


def _planted_name(inv: Invocation, model: Callable[[Invocation], None]) -> None:
    """A program run by a path where the agent may have put it (``./cat``, ``/tmp/bin/ls``,
    ``.venv/bin/python``) is judged by the model of its name — and, since its name says nothing
    of what the file is, as a program with no model as well: a path it is given that the policy
    does not let it write gets the ``unknown-effects`` verdict (``./cat -rf ~``)."""
    from stockade.analyzer.models import visible_operands
    from stockade.analyzer.models.programs import agent_writable

    model(inv)
    if agent_writable(inv.walker, inv.walker.resolve(inv.argv[0])):
        visible_operands(inv, 1)


#: characters that make an alias's code more than words (walked as shell code then)
_ALIAS_CODE = frozenset(";&|<>()$`'\"\\\n*?[{~#=")


def _run_alias(walker: Walker, argv: list[str], spans: list[SpanT], stdin: Stdin, env: dict[str, str],
               span: SpanT) -> None:
    """A command whose name is an alias this text defined (``alias ll='ls -la'``): bash runs the
    alias's code with the command's other words after it — and, when that code ends in a
    blank, expands an alias in the next word too (``alias a='rm -rf ' b='~'``; ``a b`` is
    ``rm -rf ~``).  (Bash expands aliases only where ``expand_aliases`` is on and on lines after
    the definition; judged as if it always did.)  An alias is not expanded again inside its
    own code."""
    aliases = walker.aliases
    assert aliases is not None
    saved = aliases
    text = ""
    rest = list(argv)
    rest_spans = list(spans)
    while rest and rest[0] in aliases:  # (the alias, then each next word its code's blank makes one)
        code = aliases[rest[0]]
        aliases = {name: value for name, value in aliases.items() if name != rest[0]}
        text += code
        rest, rest_spans = rest[1:], rest_spans[1:]
        if code[-1:] not in (" ", "\t"):
            break
    walker.aliases = aliases or None
    try:
        if UNKNOWN in text:
            walker.effects.append(Unknown(f"the alias `{show(argv[0])}` runs code not known before it runs", span))
        elif UNKNOWN not in "".join(rest):
            import shlex

            walker.nested_script(text + " " + " ".join(shlex.quote(word) for word in rest), span, exact=False,
                                 subshell=False, stdin=stdin, env=env or None)
        elif _ALIAS_CODE.isdisjoint(text) and text.split():
            words = text.split()
            run_command(walker, [*words, *rest], [span] * len(words) + rest_spans, stdin, env, span)
        else:
            walker.effects.append(Unknown(f"the alias `{show(argv[0])}` runs code with words not known before it "
                                          "runs", span))
    finally:
        walker.aliases = saved


def state_key(state: Any) -> tuple[Any, ...]:
    """Everything in a walker :class:`~stockade.analyzer.walker.State` that decides what later
    words and commands mean, as a hashable value (functions by the identity of their code)."""
    return (tuple(sorted(state.variables.items())), state.cwd,
            tuple(sorted((name, id(src), body.id) for name, (src, body) in state.functions.items())),
            tuple(sorted(state.links.items())), None if state.positional is None else tuple(state.positional),
            tuple(state.dirstack), tuple(sorted(state.exported)),
            None if not state.alternatives else tuple(sorted((name, tuple(options))
                                                             for name, (_, options) in state.alternatives.items())))


def restore_state(state: Any, saved: Any) -> None:
    """Make ``state`` (in place: callers hold it) a copy of ``saved``."""
    copy = saved.copy()
    state.variables = copy.variables
    state.cwd = copy.cwd
    state.functions = copy.functions
    state.links = copy.links
    state.positional = copy.positional
    state.dirstack = copy.dirstack
    state.exported = copy.exported
    state.alternatives = copy.alternatives
#: names bash runs as builtins, never looked up in ``$PATH``
_SHELL_BUILTINS = frozenset(
    "cd pushd popd dirs echo printf read mapfile readarray test [ [[ true false : . source eval exec export "
    "declare typeset local readonly unset set shopt alias unalias trap wait jobs fg bg kill let return exit "
    "break continue shift getopts hash type command builtin enable help history umask ulimit times caller "
    "compgen complete coproc disown suspend logout pwd".split())


def _path_lookup(walker: Walker, name: str, env: dict[str, str], span: SpanT) -> None:
    """A ``$PATH`` the command changed: a name may run a file the agent could write (a
    relative entry, the temporary directory, or a directory this command wrote into)."""
    path = env.get("PATH")
    if path is None:
        path = walker.state.variables.get("PATH")
    if path is None or name in _SHELL_BUILTINS or name in walker.state.functions:
        return
    context = walker.context
    temporary = tuple(d.rstrip("/") + "/" for d in (context.tmpdir, "/tmp", "/var/tmp", "/dev/shm") if d)
    workspace = context.workspace.rstrip("/") + "/"  # (a workspace below /tmp is the project's, as elsewhere)
    written = None
    for entry in path.split(":"):
        if entry == UNKNOWN:
            break  # the inherited search path: from here on, the system's programs
        directory = walker.resolve(entry) if entry else walker.state.cwd
        suspicious = UNKNOWN in directory or not entry.startswith(("/", "~")) or \
            ((directory + "/").startswith(temporary) and not (directory + "/").startswith(workspace))
        if not suspicious:
            if written is None:
                written = [e.dest if isinstance(e, Rename) else e.path for e in walker.effects
                           if isinstance(e, (Write, Rename))]
            prefix = directory.rstrip("/") + "/"
            suspicious = any((p + "/").startswith(prefix) for p in written)
        if suspicious:
            walker.effects.append(Unknown(f"`{name}` may run `{show(directory)}/{name}`, a file the agent can "
                                          "write (the command put that directory in `PATH`)", span))
            if UNKNOWN not in directory:  # (a script this text wrote there: what it does is judged too)
                from stockade.analyzer.models.fresh import check_executed

                check_executed(walker, directory.rstrip("/") + "/" + name, span)
            return


def _globbed_command(walker: Walker, argv: list[str], spans: list[SpanT], stdin: Stdin,
                     env: dict[str, str], span: SpanT) -> bool:
    """A command name with glob characters (``/usr/b?n/r? -rf ~``): bash runs whatever file
    the glob matches.  Judged as every known program it could be (each run from the same
    state); a glob that could be too many, or files in a directory that is not a standard
    one, is code that cannot be seen into.  False: it could be no known program (the name
    is then modelled as it is, as any program without a model)."""
    from stockade.analyzer.globs import command_candidates

    models = (_MODELS or _load_models())[0]
    name = argv[0]
    first_span = spans[0] if spans else span
    candidates = command_candidates(name, models)
    if candidates is None:
        walker.effects.append(Unknown(f"the command name `{show(name)}` is a glob that could run many programs",
                                      first_span))
        return True
    if not candidates:  # (bash runs whatever file it matches: one the analyzer does not know)
        walker.effects.append(Unknown(f"the command name `{show(name)}` is a glob that matches no program the "
                                      "analyzer knows: what it runs is not known", first_span))
        return False
    saved = walker.state
    for candidate in candidates:
        walker.state = saved.copy()
        try:
            run_command(walker, [candidate, *argv[1:]], spans, stdin, env, span)
        finally:
            walker.state = saved
    return True


#: command name → (its model: builtins by bare name, then programs by basename, else the
#: default; its basename; whether the name holds none of the unknown mark, ``* ? [`` and
#: ``/``), filled as names are met; cleared when full.
_BY_NAME: dict[str, tuple[Callable[[Invocation], None], str, bool]] = {}


def _name_entry(name: str) -> tuple[Callable[[Invocation], None], str, bool]:
    """:data:`_BY_NAME`'s entry for ``name`` (made and remembered)."""
    models, builtins, default = _MODELS or _load_models()
    basename = name.rpartition("/")[2]  # os.path.basename
    plain = UNKNOWN not in name and "*" not in name and "?" not in name and "[" not in name and "/" not in name
    found = (builtins.get(name) or models.get(basename) or default, basename, plain)
    if len(_BY_NAME) >= 4096:
        _BY_NAME.clear()
    _BY_NAME[name] = found
    return found
_new_tuple = tuple.__new__  # an effect record without its Python-level __new__
_new_object = object.__new__


_MODELS: tuple[dict[str, Callable[[Invocation], None]], dict[str, Callable[[Invocation], None]], Any] | None = None


def _load_models() -> tuple:
    """The model tables (imported on first use: the models import this module)."""
    global _MODELS, _check_executed
    from stockade.analyzer.models import _BUILTINS, MODELS, default_model
    from stockade.analyzer.models.fresh import check_executed

    _check_executed = check_executed
    _MODELS = (MODELS, _BUILTINS, default_model)
    return _MODELS


def _check_executed(walker: Walker, name: str, span: SpanT) -> None:
    """A command run by path that this command wrote (replaced by :func:`.fresh.check_executed`)."""
    _load_models()
    _check_executed(walker, name, span)
