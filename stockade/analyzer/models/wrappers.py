"""Wrappers: programs that run another command given in their arguments.

Each wrapper is data — which of its options take a value, how many operands come before the
wrapped command — plus a note when it changes privilege or runs the command through a shell.
The wrapped command is modelled in turn (``env -i nice -n 19 timeout 9 rm -rf ~`` is ``rm``).
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, UNKNOWN_NAME, TupleRecord
from stockade.analyzer.exec import Invocation, Stdin
from stockade.analyzer.models import parse_options, register
from stockade.analyzer.models.envvars import judge_env_var
from stockade.analyzer.words import decode_ansi_c, shlex_split

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

_NONE: frozenset[str] = frozenset()


class Wrapper(TupleRecord):
    """How a wrapper's argv is laid out: ``values`` (options taking a value), ``operands``
    (before the command: timeout DURATION, flock FILE), ``privilege`` (an escalation note),
    ``shell_joined`` (the command words are joined and run by ``sh -c``: watch, su -c),
    ``no_exec_flags`` (flags that only look the command up: command -v), ``code_flags``
    (options whose value is shell code: su -c, flock -c), ``optional`` (options whose value is
    only ever attached: watch -d), ``direct_flags`` (flags that make a ``shell_joined`` wrapper
    run the words as they are: watch -x)."""

    __slots__ = ()
    _fields = ("values", "operands", "privilege", "shell_joined", "no_exec_flags", "code_flags", "optional",
               "direct_flags")
    values: frozenset[str]
    operands: int
    privilege: str | None
    shell_joined: bool
    no_exec_flags: frozenset[str]
    code_flags: frozenset[str]
    optional: frozenset[str]
    direct_flags: frozenset[str]

    def __new__(cls, values: frozenset[str] = _NONE, operands: int = 0, privilege: str | None = None,
                shell_joined: bool = False, no_exec_flags: frozenset[str] = _NONE, code_flags: frozenset[str] = _NONE,
                optional: frozenset[str] = _NONE, direct_flags: frozenset[str] = _NONE) -> Wrapper:
        return tuple.__new__(cls, (values, operands, privilege, shell_joined, no_exec_flags, code_flags, optional,
                                   direct_flags))


WRAPPERS: dict[str, Wrapper] = {
    "env": Wrapper(frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"})),
    "command": Wrapper(no_exec_flags=frozenset({"-v", "-V"})),
    "builtin": Wrapper(),
    "exec": Wrapper(frozenset({"-a"})),
    "nice": Wrapper(frozenset({"-n", "--adjustment"})),
    "nohup": Wrapper(),
    "setsid": Wrapper(),
    "timeout": Wrapper(frozenset({"-s", "--signal", "-k", "--kill-after"}), operands=1),
    "stdbuf": Wrapper(frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
    "flock": Wrapper(frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), operands=1,
                     code_flags=frozenset({"-c", "--command"})),
    "watch": Wrapper(frozenset({"-n", "--interval", "-q", "--equexit"}), shell_joined=True,
                     optional=frozenset({"-d", "--differences"}), direct_flags=frozenset({"-x", "--exec"})),
    "sudo": Wrapper(frozenset({"-u", "--user", "-g", "--group", "-C", "-h", "-p", "-r", "-t", "-U", "-D"}),
                    privilege="`sudo` runs a command as another user", code_flags=frozenset()),
    "doas": Wrapper(frozenset({"-u", "-C"}), privilege="`doas` runs a command as another user"),
    "pkexec": Wrapper(frozenset({"--user"}), privilege="`pkexec` runs a command as another user"),
    "su": Wrapper(frozenset({"-s", "--shell", "-g", "--group", "-G"}), privilege="`su` switches user",
                  code_flags=frozenset({"-c", "--command", "--session-command"})),
    "runuser": Wrapper(frozenset({"-u", "--user", "-g", "-G", "-s"}), privilege="`runuser` switches user",
                       code_flags=frozenset({"-c", "--command"})),
    "nsenter": Wrapper(frozenset({"-t", "--target"}), privilege="`nsenter` enters other namespaces"),
}


def model_wrapper(inv: Invocation) -> None:
    """See through a wrapper to the command it runs."""
    spec = WRAPPERS[inv.name]
    if spec.privilege:
        inv.privilege(spec.privilege, 0)
    values = set(spec.values) | set(spec.code_flags)
    parsed = parse_options(inv.argv, values, stop_at_first_positional=True, optional=spec.optional)
    env = dict(inv.env)
    before = inv.walker.state.cwd
    for option, value, index in parsed.options:
        if option in spec.no_exec_flags:
            if inv.name == "command" and option == "-v":  # `$(command -v rm)`: a word that runs rm
                from stockade.analyzer.models.shellstate import located

                inv.output(located(inv, [word for word, _ in parsed.positionals], skip_functions=False))
            return
        if option in spec.code_flags and value is not None:
            inv.script(value, index, what=f"the code given to `{inv.name} {option}`")
        if inv.name == "env" and option in ("-S", "--split-string") and value is not None:
            # env splits the string into words that replace it and reads its options again
            # from the first (`env -S '-C /etc A=1 cat shadow'`): the same model, on that argv
            split = split_string(value, lambda name: inv.env.get(name, inv.walker.lookup(name)))
            if split is None:
                inv.unknown(f"what `env -S` runs is not known (`{value}`)", index)
                return
            inv.run(0, argv=[inv.argv[0], *split, *inv.argv[index + 1:]],
                    spans=[inv.spans[0], *[inv.at(index)] * len(split), *inv.spans[index + 1:]])
            return
        if inv.name == "env" and option in ("-C", "--chdir") and value is not None:
            inv.walker.state.cwd = inv.path(value)
    words = list(parsed.positionals)
    if inv.name == "env":  # NAME=value operands
        while words and "=" in words[0][0] and not words[0][0].startswith("="):
            name, _, value = words[0][0].partition("=")
            env[name] = value
            judge_env_var(inv.walker, name, value, inv.at(words[0][1]))
            words.pop(0)
        inv.env = env  # the command env runs sees them, as a prefix assignment's command does
    words = words[spec.operands:]
    if inv.name in ("su", "runuser"):
        return  # su [user]: an interactive shell as another user (already a privilege)
    if not words:
        return
    start = words[0][1]
    if spec.shell_joined and not (spec.direct_flags and parsed.has(*spec.direct_flags)):
        inv.script(" ".join(inv.argv[start:]), start, what=f"the command run by `{inv.name}`")
        return
    state = inv.walker.state
    cwd = state.cwd
    if inv.name in ("builtin", "command") and inv.argv[start] in state.functions:
        _run_past_function(inv, start)
        return
    if cwd == before:
        inv.run(start)
        return
    try:  # `env -C DIR CMD`: only CMD runs in DIR
        inv.run(start)
    finally:
        if inv.walker.state is state:
            state.cwd = before


_SPLIT_ESCAPES = {"f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", '"': '"', "#": "#", "$": "$",
                  "'": "'", "\\": "\\"}
_SPLIT_VARIABLE_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def split_string(text: str, lookup: Callable[[str], str | None]) -> list[str] | None:
    """The words GNU ``env -S``/``--split-string`` makes of ``text``: split at blanks outside
    quotes; ``'…'`` literal but for ``\\\\`` and ``\\'``; ``"…"`` and bare text with the escapes
    ``\\n \\t \\" \\$ \\# …``; ``\\_`` a separator outside double quotes and a space inside;
    ``\\c`` and a ``#`` starting a word end the string; ``${NAME}`` expanded (``lookup``, UNKNOWN
    when not known) except in single quotes.  None where env refuses the string (an unknown
    escape, ``$NAME`` without braces, an unterminated quote)."""
    words: list[str] = []
    current: list[str] = []
    started = False  # (a word begun: an empty quoted word is a word)
    single = double = False
    index = 0
    size = len(text)
    while index < size:
        char = text[index]
        if char == "'" and not double:
            single = not single
            started = True
            index += 1
            continue
        if char == '"' and not single:
            double = not double
            started = True
            index += 1
            continue
        if char in " \t\n\v\f\r" and not single and not double:
            if started:
                words.append("".join(current))
                current, started = [], False
            index += 1
            continue
        if char == "#" and not started:
            break
        if char == "\\" and (not single or text[index + 1:index + 2] in ("\\", "'")):
            escaped = text[index + 1:index + 2]
            index += 2
            if escaped == "_":
                if double:
                    current.append(" ")
                    started = True
                elif started:
                    words.append("".join(current))
                    current, started = [], False
                continue
            if escaped == "c" and not double:
                break
            if escaped not in _SPLIT_ESCAPES:
                return None
            current.append(_SPLIT_ESCAPES[escaped])
            started = True
            continue
        if char == "$" and not single:
            match = _SPLIT_VARIABLE_RE.match(text, index)
            if match is None:
                return None
            value = lookup(match.group(1))
            current.append(UNKNOWN if value is None else value)
            started = started or bool(value) or value is None
            index = match.end()
            continue
        current.append(char)
        started = True
        index += 1
    else:
        if single or double:
            return None
    if started:
        words.append("".join(current))
    return words


def _arg_file_text(inv: Invocation, word: str) -> str | None:
    """The known content of ``xargs -a FILE``: ``<(echo …)``, a file this command wrote with
    known text (None: not known)."""
    from stockade.analyzer.models.fresh import known_content

    path = word if word[:8] == "/dev/fd/" else inv.path(word)
    if UNKNOWN in path.replace("/dev/fd/" + UNKNOWN, "", 1):
        return None
    text = known_content(inv.walker, path)
    return None if text is None or UNKNOWN in text else text


def _run_past_function(inv: Invocation, start: int) -> None:
    """``builtin NAME``/``command NAME`` run the builtin or program NAME, never the function of
    that name (``cd() { builtin cd ~/.ssh; }`` is no recursion): the function is hidden while
    the command runs, and kept unless the command itself defines it again."""
    state = inv.walker.state
    name = inv.argv[start]
    hidden = state.functions[name]
    state.functions = {key: value for key, value in state.functions.items() if key != name}
    try:
        inv.run(start)
    finally:
        now = inv.walker.state
        if name not in now.functions:
            now.functions = {**now.functions, name: hidden}


def model_xargs(inv: Invocation) -> None:
    """``xargs CMD ARGS``: runs CMD with words read from stdin appended (unknown words);
    ``-I R`` replaces R in the arguments; ``-a FILE`` reads the words from a file."""
    # -i, -l and -e take only an attached value (-i{} -l1 -eEOF): the next word is the command
    parsed = parse_options(inv.argv, {"-I", "-a", "--arg-file", "-d", "--delimiter", "-E", "-L", "--max-lines",
                                      "-n", "--max-args", "-P", "--max-procs", "-s", "--max-chars",
                                      "--process-slot-var"},
                           stop_at_first_positional=True,
                           optional=frozenset({"-i", "-l", "-e", "--replace", "--eof"}))
    replace = None
    delimiter: str | None = None
    items = None if inv.stdin.text is None else inv.stdin.text
    for option, value, index in parsed.options:
        if option in ("-a", "--arg-file") and value:
            inv.read(value, index)
            items = _arg_file_text(inv, value)
        if option in ("-I", "-i", "--replace"):
            replace = value or "{}"
        if option in ("-0", "--null"):
            delimiter = "\0"
        if option in ("-d", "--delimiter") and value:
            delimiter = decode_ansi_c(value)[:1] or None
    words = list(parsed.positionals)
    no_input = Stdin(None, "the terminal")
    inputs = _xargs_items(items, delimiter, replace is not None)
    if not words:
        for item in inputs:
            inv.run(0, argv=["echo", item], spans=[inv.span, inv.span], stdin=no_input)
        return
    start = words[0][1]
    if replace is not None:
        for item in inputs:
            argv = [w.replace(replace, pasted_name(item, w)) for w in inv.argv[start:]]
            inv.run(start, argv=argv, spans=inv.spans[start:], stdin=no_input)
    elif inputs == [UNKNOWN]:
        inv.run(start, extra=[UNKNOWN], stdin=no_input)
    else:  # the words read from a known producer (`echo ~/.ssh | xargs rm -rf`)
        inv.run(start, extra=inputs, stdin=no_input)


#: characters that make a word code rather than a name (``sh -c 'rm {}'``)
_CODE_CHARS = frozenset(" \t\n;|&$`()<>\"'")


def pasted_name(item: str, word: str) -> str:
    """What replacing a placeholder in ``word`` with the input ``item`` gives: the item, except
    where it stands for names a listing printed (a glob: ``ls``, ``find``, ``git ls-files``) and
    the word is code (``sh -c 'rm {}'``): a name is pasted into the code as text, and a name can
    hold code (``;rm -rf ~;``) — not known."""
    if item[:1] != UNKNOWN and ("*" in item or "?" in item or "[" in item) and not _CODE_CHARS.isdisjoint(word):
        return UNKNOWN_NAME
    return item


#: more input items than this from a known producer: judged as unknown words
_MAX_XARGS_ITEMS = 32


def _xargs_items(text: str | None, delimiter: str | None, lines: bool) -> list[str]:
    """The items xargs reads from ``text`` (None: unknown): blank-separated words with quotes
    removed (one item a line with ``-I``), or split at ``delimiter`` (``-0``, ``-d``)."""
    if text is None or UNKNOWN in text:
        return [UNKNOWN]
    if delimiter is not None:
        from stockade.analyzer.models.files import NUL

        items = text.split(NUL if delimiter == "\0" else delimiter)
        if items and items[-1] in ("", "\n"):
            items.pop()
    elif lines:
        items = [line.strip() for line in text.split("\n") if line.strip()]
    else:
        try:
            items = shlex_split(text)
        except ValueError:
            return [UNKNOWN]
    if not items:
        return []
    return items if len(items) <= _MAX_XARGS_ITEMS else [UNKNOWN]


for _name in WRAPPERS:
    register(_name, model_wrapper, builtin=_name in ("command", "builtin", "exec"))
register("xargs", model_xargs)


#: programs whose ``-c``/``-e`` value is code, as the words of an unmodelled program's argv:
#: program → its code options
_CODE_RUNNERS = {**{name: frozenset({"-c"}) for name in ("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish")},
                 **{name: frozenset({"-c"}) for name in ("python", "python2", "python3", "pypy", "pypy3")},
                 **{name: frozenset({"-e", "-E"}) for name in ("perl", "ruby", "lua", "luajit", "Rscript")},
                 "node": frozenset({"-e", "--eval", "-p", "--print"}), "nodejs": frozenset({"-e", "--eval"}),
                 "php": frozenset({"-r"}), "deno": frozenset({"eval"}), "bun": frozenset({"-e", "--eval"})}


def nested_code_commands(inv: Invocation) -> None:
    """A program with no model whose arguments hold a shell or interpreter with inline code
    (``pyenv-like exec python -c CODE``, ``tool run -- sh -c CODE``): a wrapper of a command is
    the common reason, so the words from that program on are walked as the command it may run
    (what it does with the rest is not known either way)."""
    argv = inv.argv
    for index in range(1, len(argv) - 2):
        word = argv[index]
        options = _CODE_RUNNERS.get(word.rpartition("/")[2])
        if options is not None and argv[index + 1] in options:
            inv.run(index)
            return
