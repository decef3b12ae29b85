"""Programs named by configuration and variables (``core.pager=./x.sh``, ``GIT_SSH=/tmp/x``,
``LESSOPEN='|./pre %s'``): a tool runs that program later, out of sight of the command line.

A program given by path is judged by where it lives: a file in a place an agent can write
(the workspace, the temporary directories) or one written earlier in the same text is code
that cannot be seen into — the ``unknown-effects`` verdict; a program elsewhere (``/usr/bin/vim``)
or named by a bare command name is judged as running it (the command line is walked like
``sh -c``).  Configuration that hides a program in a writable file is a classic way around a
review of the command line, so the place decides, not what the file is called.

The program is seen through what only starts it: wrappers (``env``, ``nice``, ``timeout`` …,
:data:`~stockade.analyzer.models.wrappers.WRAPPERS`) run the command after their options, and
an interpreter given a file (``sh /tmp/e.sh``, ``python3 ./ed.py``, ``node p.js``) runs the
code of that file — so ``core.editor='sh /tmp/e.sh'`` is judged as ``core.editor=/tmp/e.sh``
is.  Each command of a shell command line (after ``;``, ``&&``, ``|`` …, and inside ``sh -c``)
is looked at so.
"""

from __future__ import annotations

from functools import lru_cache

from stockade.analyzer.effects import UNKNOWN, Read, Unknown, show

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.effects import SpanT
    from stockade.analyzer.walker import Walker

#: directories an agent can write under any policy this analyzer judges (with the workspace
#: and ``$TMPDIR`` of the policy's context)
_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/user")


def agent_writable(walker: Walker, path: str) -> bool:
    """Whether ``path`` (resolved) lies where the agent may have put a file: the workspace, the
    temporary directories, or a file this text wrote."""
    if UNKNOWN in path:
        return True
    context = walker.context
    for root in (context.workspace, context.tmpdir, *_SCRATCH):
        if root and (path == root or path.startswith(root.rstrip("/") + "/")):
            return True
    from stockade.analyzer.models.fresh import written_by

    return written_by(walker, path) is not None


def first_word(command: str) -> str:
    """The program of a command line (its first blank-separated word, quotes removed)."""
    word = command.strip().split(None, 1)[0] if command.strip() else ""
    return word.strip("'\"")


def judge_program(walker: Walker, command: str, span: SpanT, what: str, shell: bool = True) -> None:
    """A tool will run ``command`` (``what`` says where it is set): unknown code when the program
    (or the file an interpreter it names runs) is a file the agent may have written, else the
    command line is walked (``shell``: it is shell code; otherwise only its program is judged)."""
    if UNKNOWN in command:
        walker.effects.append(Unknown(f"{what} is a program that is not known (`{show(command)}`)", span))
        return
    program = first_word(command)
    if not writable_program(walker, command if shell else program, span, what, shell):
        walker.nested_script(command if shell else program, span, exact=True, subshell=True)


def writable_program(walker: Walker, command: str, span: SpanT, what: str, shell: bool = True) -> bool:
    """Whether the command line ``command`` (shell code when ``shell``, else one program) runs a
    file the agent may have written (:func:`code_files`): then that is recorded (a read of the
    file and code that cannot be seen into) and True is returned."""
    for word, script in code_files(command) if shell else [(first_word(command), False)]:
        if not (script or "/" in word or word[:1] == "~") or word in ("-", "/dev/stdin") or not word:
            continue
        path = walker.resolve(word)
        if agent_writable(walker, path):  # (running the file reads it: a denied one is a read of a secret)
            walker.effects.append(Read(path, span, False, False))
            walker.effects.append(Unknown(f"{what} runs `{show(word)}`, a file in a place the agent can write: "
                                          "its code cannot be seen into", span))
            return True
    return False


#: words that end one command of a command line and start the next
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", "(", ")", ";;", "{", "}", "!"})
#: how deep ``sh -c 'sh -c …'`` is followed
_MAX_DEPTH = 4
#: characters that make a command line more than blank-separated words (shlex reads those)
_LEXED = frozenset("'\"\\;&|<>()\n#`$")


@lru_cache(maxsize=512)
def code_files(command: str, depth: int = 0) -> tuple[tuple[str, bool], ...]:
    """The words of a shell command line that name a file whose code runs, each with whether
    it is a script operand (a file an interpreter opens, so a path even without a ``/``): the
    program of each command, the program a wrapper runs (``nice /tmp/e``), and the file an
    interpreter runs (``sh /tmp/e.sh``, ``python3 ed.py``), also inside ``sh -c CODE``."""
    if _LEXED.isdisjoint(command):  # (plain words, the common case: no need for the lexer)
        tokens = command.split()
    else:
        import shlex

        try:
            lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError:
            tokens = command.split()
    found: list[tuple[str, bool]] = []
    words: list[str] = []
    position = 0
    while position <= len(tokens):
        token = tokens[position] if position < len(tokens) else ";"
        position += 1
        if token in _SEPARATORS or position > len(tokens):
            if words:
                found.extend(_command_files(words, depth))
            words = []
        elif token[:1] in "<>" or token in ("&>", "&>>"):
            position += 1  # (a redirection and its target: not a word of the command)
            if words and words[-1].isdigit():
                words.pop()  # (`2>/dev/null`: the descriptor of the redirection)
        else:
            words.append(token)
    return tuple(found)


def _command_files(words: list[str], depth: int) -> list[tuple[str, bool]]:
    """:func:`code_files` of one simple command's words."""
    from stockade.analyzer.models import parse_options
    from stockade.analyzer.models.shells import _INTERPRETERS, _SHELL_VALUES, SHELLS
    from stockade.analyzer.models.wrappers import WRAPPERS

    while words and "=" in words[0] and words[0][:1] not in "=-" and words[0].partition("=")[0].isidentifier():
        words = words[1:]  # (`VAR=value cmd`: the assignments before the program)
    found: list[tuple[str, bool]] = []
    for _ in range(8):
        if not words:
            break
        found.append((words[0], False))
        name = words[0].rpartition("/")[2]
        spec = WRAPPERS.get(name)
        if spec is not None and not spec.shell_joined and not spec.code_flags:
            parsed = parse_options(words, spec.values, stop_at_first_positional=True)
            if any(option in spec.no_exec_flags for option, _, _ in parsed.options):
                break
            rest = [word for word, _ in parsed.positionals]
            while name == "env" and rest and "=" in rest[0] and rest[0][:1] != "=":
                rest = rest[1:]
            words = rest[spec.operands:]
            continue
        if name in SHELLS:
            parsed = parse_options(words, _SHELL_VALUES, stop_at_first_positional=True)
            if any(option[:1] == "-" and option[1:2] != "-" and "c" in option for option, _, _ in parsed.options):
                if parsed.positionals and depth < _MAX_DEPTH:  # (`sh -c CODE`: the programs CODE runs)
                    found.extend(code_files(parsed.positionals[0][0], depth + 1))
                break
            if parsed.positionals and not parsed.has("-s"):
                found.append((parsed.positionals[0][0], True))
            break
        options = _interpreter_options(name, _INTERPRETERS)
        if options is not None:
            values = {option for option, role in options.items() if role not in ("flag", "tests")}
            parsed = parse_options(words, values, stop_at_first_positional=True)
            roles = [(options.get(option), value) for option, value, _ in parsed.options]
            if any(role in ("code", "module") for role, _ in roles):
                break
            scripts = [value for role, value in roles if role == "script" and value]
            if scripts:
                found.append((scripts[0], True))
            elif parsed.positionals:
                found.append((parsed.positionals[0][0], True))
        break
    return found


def _interpreter_options(name: str, table: dict[str, dict[str, str]], versioned: bool = True) -> dict[str, str] | None:
    """The options table of the interpreter ``name`` (``python3.12`` is ``python3``), or None."""
    for names, options in table.items():
        if name in names.split():
            return options
    if versioned and name[-1:].isdigit():
        from stockade.analyzer.models import versioned_base

        base = versioned_base(name)
        if base is not None and base != name:
            return _interpreter_options(base, table, False)
    return None
