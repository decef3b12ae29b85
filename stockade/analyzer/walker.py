"""The walk over a parsed shell script: every node that can execute, in order.

:class:`Walker` visits statements (``visit_<kind>`` with a generic fallback that walks
every named child, so constructs it does not model are still searched for code), tracks
the shell state that decides what later words mean (variables incl. ``IFS``, the working
directory through ``cd``/``pushd``/subshells, functions, symlinks made by ``ln -s``), feeds
known text to commands that read standard input, and hands each simple command's argv to
:mod:`stockade.analyzer.exec`, which unwraps it and applies the per-tool models.

Lists and pipelines are walked iteratively; nesting deeper than :data:`MAX_DEPTH` is
reported as unparsable rather than risking the interpreter's recursion limit.

**Bounded.**  Every analysis ends within a work budget (the answer of a hook that hangs is
fail-open): walk steps — statements, commands, function calls — are counted against
:data:`WORK_BUDGET` plus :data:`WORK_PER_CHAR` per character of the text, and characters
produced by expansion against :data:`EXPANSION_BUDGET`; past either, the walk stops and
the rest of the text gets an unknown effect (the policy's ``unknown-effects`` verdict).
Values longer than :data:`~stockade.analyzer.words.MAX_VALUE_CHARS` are not followed, and
a function called again in the same state (its body, arguments, input and the whole shell
state) is not walked again: the state it left is reused (see
:func:`~stockade.analyzer.exec.run_command`), so ``f() { f; f; f; }; f`` costs a few calls,
not 3^16.
"""

from __future__ import annotations

import re
from time import perf_counter as _wall_clock
from time import process_time as _cpu_time

from stockade.analyzer.control import CWD_KEY, ControlFlow, settle_cwd
from stockade.analyzer.effects import (
    CHILD_PID,
    UNKNOWN,
    UNKNOWN_NUMBER,
    Effect,
    EnvChange,
    Network,
    Read,
    SpanT,
    Unknown,
    Unparsable,
    Write,
    clip,
)
from stockade.analyzer.exec import LASTPIPE_KEY, TERMINAL, Stdin, run_command
from stockade.analyzer.fast import run_simple
from stockade.analyzer.judge import MAX_PATH_CHARS, plain_names_glob
from stockade.analyzer.models.envvars import judge_env_var
from stockade.analyzer.models.fresh import record_written  # (loaded with the models already: no cold-start cost)
from stockade.analyzer.models.netconfig import tool_configs
from stockade.analyzer.models.shellstate import (
    assign_through,
    bash_tables,
    coproc_descriptors,
    coproc_name,
    declare_nameref,
    declared_attributes,
    deref,
    forget_array,
    integer_assignment,
    is_integer,
    nameref_target,
    subscript_code,
    subscript_values,
)
from stockade.analyzer.parse import (
    KIND_NAMES,
    Source,
    UnsafeText,
    first_error,
    heredoc_misread,
    heredoc_missed_expansion,
    parse,
)
from stockade.analyzer.words import (
    ARRAY_KEY,
    ARRAY_SEP,
    ASSOC_KEY,
    ASSOC_MARK,
    ASSOC_SEP,
    INDEX_RE,
    MAX_VALUE_CHARS,
    NAMEREF,
    WordExpander,
    array_elements,
    assoc_entries,
)

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable
    from typing import Any

    from stockade.compiler.ir import Context

MAX_DEPTH = 100
MAX_NESTED_SCRIPTS = 2000
#: Walk steps one analysis may take, plus :data:`WORK_PER_CHAR` per character of its text.
WORK_BUDGET = 200_000
WORK_PER_CHAR = 8
#: Characters expansion may produce in one analysis (all words and values together).
EXPANSION_BUDGET = 64 * 1024 * 1024
#: CPU seconds one analysis may take, plus :data:`TIME_PER_CHAR` per character of its text
#: (checked every :data:`CHECK_EVERY` steps): a backstop for walks whose steps are costly, so
#: that a hook never times out into no answer (a command the hook reads: under 8 s).  The
#: CPU clock is a system call: it is first read at the first check, and the time before it
#: counted as the wall time that passed (no less than the CPU time: the strict side).
TIME_BUDGET = 5.0
TIME_PER_CHAR = 20e-6
CHECK_EVERY = 2048


#: an indexed array with more elements than this is not followed (its elements are unknown)
_MAX_ARRAY = 4096


class BudgetSpent(Exception):
    """The analysis spent its work budget: raised from deep in the walk, caught by
    :func:`walk_command`, which records an unknown effect for the rest of the text."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why

_ASSIGN_WORD_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_ARITH_OPS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CODE_IN_VALUE_RE = re.compile(r"\$\(|`")
_DEV_NET_RE = re.compile(r"^/dev/(tcp|udp)/([^/]+)/([^/]+)$")
_REDIRECTS = frozenset({"file_redirect", "herestring_redirect", "heredoc_redirect"})
#: Reserved words that cannot start a command: written unquoted in command position (where
#: tree-sitter-bash takes them for a command's name), a syntax error to bash.
_NOT_A_COMMAND = frozenset({"then", "else", "elif", "fi", "do", "done", "esac", "in", "}", "]]", "function"})
#: Reserved words that take a command after them (tree-sitter-bash reads them as commands).
_KEYWORD_PREFIXES = frozenset({"time", "coproc", "!"})
#: commands that print nothing on stdout (so `$(cd DIR && pwd)` is the output of `pwd`)
_SILENT_COMMANDS = frozenset({"cd", "test", "[", "true", ":", "set", "export", "unset", "shopt", "umask"})
#: functions bash calls without being asked: walked where they are defined
_HOOK_FUNCTIONS = frozenset({"command_not_found_handle", "command_not_found_handler"})
def _flatten(node: Any, kind: str) -> list[Any]:
    """The operands of a left-nested chain of ``kind`` nodes (``a && b || c``, ``a | b | c``),
    in order, collected without recursion (a chain can be thousands of commands long)."""
    items: list[Any] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == kind:
            stack.extend(reversed(current.named_children))
        else:
            items.append(current)
    return items


def _ascii_class(excluded: str) -> str:
    """A character class of the ASCII characters not in ``excluded`` (spelt out: a negated
    class over the whole of Unicode costs ~12 ms to compile, on every cold start)."""
    return "[" + "".join(re.escape(chr(c)) for c in range(128) if chr(c) not in excluded) + "]"


#: A word node whose value is its text, one field: ASCII, nonempty, no escapes, braces,
#: expansions or substitutions (``$``, `````, ``<(``, ``>(``) and no leading tilde.
_INERT_WORD_RE = re.compile(_ascii_class("\\{`$<>~") + _ascii_class("\\{`$<>") + "*")

WORD_TYPES = frozenset({
    "word", "string", "raw_string", "ansi_c_string", "concatenation", "simple_expansion", "expansion",
    "command_substitution", "process_substitution", "arithmetic_expansion", "number", "translated_string",
    "brace_expression", "extglob_pattern", "regex", "string_content", "special_variable_name",
})


#: Nodes a word the grammar split can be made of (besides a leading ``variable_assignment``).
_WORD_PIECES = WORD_TYPES | {"command_name"}

#: ``|`` then ``!``: perhaps a negation after a pipe (see :meth:`Walker.piped_negations`)
_PIPED_BANG_RE = re.compile(rb"\|&?[ \t\n]*!")
#: nodes whose text between children is literal text (an escaped blank there is not dropped)
_BLANK_HOLDERS = frozenset({"heredoc_body", "heredoc_redirect", "string", "raw_string", "ansi_c_string", "comment",
                            "word", "regex", "extglob_pattern", "translated_string", "heredoc_content"})

#: The ``exported`` of a state that exported nothing: shared, never changed (exporting a name
#: sets ``state.exported = state.exported | {name}``; a set() per command costs more).
_NO_NAMES: frozenset[str] = frozenset()


class State:
    """The shell state that decides what later words mean."""

    __slots__ = ("alternatives", "cwd", "dirstack", "exported", "functions", "links", "positional", "variables")

    #: variables whose value differs between the branches that ran before (``if``, ``case``):
    #: name → (the merged value object, which the variable still holds while this applies; the
    #: values of the branches).  Commands naming one are walked once per value (strictest wins).
    alternatives: dict[str, tuple[str, tuple[str, ...]]] | None

    def __init__(self, variables: dict[str, str], cwd: str, functions: dict[str, tuple[Source, Any]] | None = None,
                 links: dict[str, str] | None = None, positional: list[str] | None = None,
                 dirstack: list[str] | None = None, exported: set[str] | frozenset[str] | None = None):
        self.variables = variables
        self.cwd = cwd
        self.functions = {} if functions is None else functions
        self.links = {} if links is None else links
        self.positional = positional
        self.dirstack = [] if dirstack is None else dirstack
        self.exported = _NO_NAMES if exported is None else exported
        self.alternatives = None

    def copy(self) -> State:
        """A copy for a subshell: changes inside do not leak out."""
        state = _new_object(State)  # not State(…): see _new_object
        state.variables = self.variables.copy()  # (.copy() is cheaper than dict(…))
        state.cwd = self.cwd
        state.functions = self.functions.copy() if self.functions else {}  # ({} is cheaper still)
        state.links = self.links  # (shared: a link a subshell makes is on disk for the parent too)
        state.positional = None if self.positional is None else list(self.positional)
        state.dirstack = list(self.dirstack) if self.dirstack else []
        state.exported = set(self.exported) if self.exported else _NO_NAMES
        state.alternatives = self.alternatives.copy() if self.alternatives else None
        return state


#: ``_new_object(Cls)`` and setting the fields is how the per-command objects are made on the
#: hot paths: in CPython 3.11 a call ``Cls(…)`` of a class with a Python ``__init__`` goes
#: through ``type.__call__`` and re-enters the interpreter (~1,200 machine instructions more
#: than a plain Python call), and the analyzer makes several such objects per command.
_new_object = object.__new__
_new_tuple = tuple.__new__  # a record (Stdin, an effect) without its Python-level __new__


def decoded_code(walker: Walker, text: str, span: SpanT) -> None:
    """Code run by ``eval``/``sh -c`` that holds text a decoder produced (``eval "$(base64 -d
    <<< aWQ=)"``): the decoded value is walked, and code hidden by encoding stays code that
    cannot be seen into (a reviewer of the command line sees only the encoded form)."""
    for value in walker.decoded:
        if len(value) > 1 and value in text:
            walker.effects.append(Unknown(f"runs code that `base64 -d` decoded (`{clip(value)}`): encoded code "
                                          "cannot be seen into on the command line", span))
            return


def _array_words(node: Any) -> list[list[Any]]:
    """The words of an array assignment's ``( … )``: adjacent nodes are one word (the grammar
    splits ``[k]=$HOME/x`` after the bare ``$``, see :meth:`WordExpander.word_parts`)."""
    groups: list[list[Any]] = []
    end = -1
    for item in node.named_children:
        if groups and item.start_byte == end:
            groups[-1].append(item)
        else:
            groups.append([item])
        end = item.end_byte
    return groups


#: the bytes of a blank (before a compound command a blanked ``coproc NAME`` may precede)
_BLANKS = frozenset(b" \t")


class Walker(ControlFlow):
    """Walks one command or script and collects its effects."""

    #: the source being walked and its word expander (set by :meth:`walk_in`)
    src: Source = None  # type: ignore[assignment]  # None only until the first walk_in sets it
    words: WordExpander = None  # type: ignore[assignment]  # likewise
    #: nested scripts walked so far; depth of the function calls being walked
    nested_scripts = 0
    function_depth = 0
    exit_trap: Callable[[], None] | None = None  # `trap CODE EXIT` (set by the trap model)
    process_output: Stdin | None = None  # the known output of the last `<(…)` walked
    #: (a redirected command, the words the grammar hung on its redirections): see
    #: :meth:`visit_redirected_statement`
    redirect_words: tuple[Any, list[Any]] | None = None
    #: (a redirected command, the span of a lone `-` before its here-document, which the grammar
    #: drops: `make -f - <<EOF`): the argument is added back in :meth:`simple_command`
    dash_word: tuple[Any, SpanT] | None = None
    #: ids of word nodes that start a new line the grammar glued to the command before (see
    #: :meth:`glued_lines`; None: none met)
    glued: set[int] | None = None
    #: which value of each variable in ``state.alternatives`` the command being walked sees
    alternative: int | None = None
    #: what the command just walked writes to stdout, when known (see :meth:`set_output`)
    _last_output: Stdin | None = None
    #: the file a redirection of standard output writes in the statement being walked:
    #: (its Write effect, whether it appends), for :func:`~stockade.analyzer.models.fresh.record_written`
    stdout_file: tuple[Any, bool] | None = None
    #: likewise the file a redirection of standard input reads (its Read effect, the word)
    stdin_file: tuple[Any, str] | None = None
    #: the file a simple command's own redirection (``>z cat /dev/zero``) sends its standard
    #: output to while its model runs, and the one ``exec > FILE`` sent this shell's standard
    #: output to (for :func:`~stockade.analyzer.models.fresh.stdout_to_file`)
    command_stdout: str | None = None
    exec_stdout: str | None = None
    #: how many command substitutions are being walked (a decoded value is known only as a word there)
    substituting = 0
    #: the texts ``base64 -d`` decoded in substitutions (see :func:`decoded_code`)
    decoded: frozenset[str] = frozenset()
    #: variables ``read`` assigned from input that is not known (see :meth:`arith_data`)
    read_data: frozenset[str] | set[str] = frozenset()
    #: functions found calling themselves without end (see :func:`~stockade.analyzer.exec.run_command`)
    recursive: frozenset[str] = frozenset()
    #: configuration files ``git config`` wrote in this text (see :mod:`.models.vcs`; None: none yet)
    git_configs: dict[str, dict[str, str]] | None = None
    #: aliases this text defined, name → code (see :func:`~stockade.analyzer.exec.run_command`; None: none)
    aliases: dict[str, str] | None = None
    #: (function, arguments, input, state before) → state after: see exec.run_command (None: no call yet)
    calls: dict[tuple[Any, ...], State] | None = None
    #: ``${P:-word}`` of an unknown ``P`` was met in the command being walked; the command is
    #: walked again with ``use_defaults`` (the expansion gives ``word``): see WordExpander
    saw_default = False
    use_defaults = False
    #: (name, word) of the ``${P:=word}`` met in the command being walked
    possible: list[tuple[str, str]] | None = None
    #: a ``declare -A`` is being walked (its array assignments are associative)
    declaring_assoc = False
    #: the program a prefix assignment being judged is for (None: every later program)
    env_program: str | None = None
    #: variables whose value was too long (reported once)
    too_long: frozenset[str] = frozenset()

    def __init__(self, context: Context, command: str, cwd: str | None = None, fast_path: bool = True):
        self._start(context, command, cwd, fast_path)

    def _start(self, context: Context, command: str, cwd: str | None, fast_path: bool) -> None:
        """Set up the walk (``__init__``; :func:`walk_command` calls it on ``_new_object(Walker)``)."""
        self.context = context
        self.fast_path = fast_path
        self.command = command
        self.effects: list[Effect] = []
        state = self.state = _new_object(State)  # State({…}, cwd): see _new_object
        initial = _INITIAL_VARIABLES
        if initial[0] is not context:
            initial = _initial_variables(context)
        state.variables = initial[1].copy()
        state.cwd = cwd or context.workspace
        state.functions = {}
        state.links = {}
        state.positional = None
        state.dirstack = []
        state.exported = _NO_NAMES
        state.alternatives = None
        self.home = context.home
        self.depth = 0
        self.steps = 0
        #: the step limit, and the step at which :meth:`checkpoint` next looks at it and the time
        size = len(command)
        limit = self.limit = WORK_BUDGET + WORK_PER_CHAR * size
        self.budget = limit if limit < CHECK_EVERY else CHECK_EVERY  # (min(limit, CHECK_EVERY), without a call)
        self.started = _wall_clock()  # (no system call, unlike the CPU clock: see TIME_BUDGET)
        self.deadline: float | None = None  # (the CPU clock's, set at the first check)
        self.expanded = 0
        # (src, words, nested_scripts and function_depth start as the class's values)

    # -- entry points ------------------------------------------------------------------

    def run_text(self, text: str, base: int = 0, collapse: SpanT | None = None) -> None:
        """Parse and walk shell text (the top-level command or a nested script)."""
        if self.fast_path and run_simple(self, text, base, collapse, TERMINAL, MAX_DEPTH):
            return
        self.parse_and_walk(text, base, collapse)

    def parse_and_walk(self, text: str, base: int = 0, collapse: SpanT | None = None) -> None:
        """:meth:`run_text` without trying the fast path."""
        source = self.parse_or_refuse(text, base, collapse)
        if source is None:
            return
        error = first_error(source.tree)
        if error is not None:
            kind = "missing token" if error.is_missing else "syntax the shell grammar does not accept"
            self.effects.append(Unparsable(f"{kind} near `{clip(source.node_text(error) or text)}`",
                                           source.span(error)))
        else:
            self.stray_terminators(source)
        self.walk_in(source, source.tree.root_node)

    def parse_or_refuse(self, text: str, base: int, collapse: SpanT | None) -> Source | None:
        """Parse text; text the parser cannot handle safely becomes an unparsable effect."""
        try:
            return parse(text, base, collapse)
        except UnsafeText as refused:
            span = collapse if collapse is not None else (base + refused.start, base + refused.end)
            self.effects.append(Unparsable(refused.why, span))
            return None

    def walk_in(self, source: Source, node: Any, stdin: Stdin = TERMINAL) -> None:
        """Walk ``node`` of ``source`` (switching the expander to that source)."""
        saved_source, saved_words = self.src, self.words
        words = _new_object(WordExpander)  # WordExpander(self, source): see _new_object
        words.scope = self
        words.source = source
        self.src, self.words = source, words
        try:
            self.walk(node, stdin)
        finally:
            self.src, self.words = saved_source, saved_words

    def walk_function(self, source: Source, body: Any, stdin: Stdin) -> None:
        """Walk a function's body at a call: a redirection written after the definition
        (``f() { echo x; } > ~/.bashrc``) opens its file at every call, as bash does."""
        definition = body.parent
        if definition is None or definition.type != "function_definition" or \
                definition.child_by_field_name("redirect") is None:
            self.walk_in(source, body, stdin)
            return
        saved_source, saved_words = self.src, self.words
        words = _new_object(WordExpander)
        words.scope = self
        words.source = source
        self.src, self.words = source, words
        try:
            self.redirected(definition, body, body, stdin)
        finally:
            self.src, self.words = saved_source, saved_words

    # -- Scope protocol for words.py ------------------------------------------------------

    def positional_words(self) -> list[str] | None:
        """The positional parameters ``"$@"`` gives, one word each (None: not known)."""
        params = self.state.positional
        return None if params is None else params[1:]

    def lookup(self, name: str) -> str | None:
        """The value of a variable or parameter, None when the script does not determine it."""
        if name == "PWD":
            return self.state.cwd
        if name.isdigit() or name in ("@", "*", "#"):
            params = self.state.positional
            if params is None:  # a command line: `$0` is the shell, there are no arguments
                return "bash" if name == "0" else None
            if name == "*":  # joined with the first character of $IFS (none when it is empty)
                ifs = self.state.variables.get("IFS", " ")
                if ifs is not None and UNKNOWN in ifs:
                    return UNKNOWN
                return (ifs[:1] if ifs is not None else " ").join(params[1:])
            if name == "@":
                return " ".join(params[1:])
            if name == "#":
                return str(len(params) - 1)
            index = int(name)
            return params[index] if index < len(params) else ""
        value = self.state.variables.get(name)
        if self.alternative is not None:
            alternatives = self.state.alternatives
            entry = alternatives.get(name) if alternatives else None
            if entry is not None and entry[0] is value:
                value = entry[1][self.alternative % len(entry[1])]
        if value and value[0] == UNKNOWN and value.startswith(NAMEREF):  # `declare -n r=X`: X's value now
            return deref(self, value[2:])
        if value is None and name == "BASH_SOURCE":
            return ""  # no script file is being run: a command line has no source
        if value is None and name in _BASH_NUMBERS:
            return UNKNOWN_NUMBER  # (`$RANDOM`, `$BASHPID`: bash's own, a decimal number; unset: empty)
        if value is not None and len(value) > MAX_VALUE_CHARS:  # not followed: unknown where used
            if name not in self.too_long:
                self.too_long = self.too_long | {name}
                self.unknown(f"the value of `${name}` is longer than {MAX_VALUE_CHARS} characters; the analysis "
                             "does not follow it", (0, len(self.command)))
            return None
        return value

    def spend(self, size: int) -> None:
        """Count ``size`` characters made by expansion; past :data:`EXPANSION_BUDGET`, stop."""
        self.expanded += size
        if self.expanded > EXPANSION_BUDGET:
            raise BudgetSpent(f"expansion made more than {EXPANSION_BUDGET} characters")

    def step(self) -> None:
        """Count one walk step; past the work budget, stop the walk."""
        self.steps += 1
        if self.steps > self.budget:
            self.checkpoint()

    def checkpoint(self) -> None:
        """Every :data:`CHECK_EVERY` steps: past the step limit or the time budget, stop the
        walk (raise :class:`BudgetSpent`); else set the next checkpoint."""
        if self.steps > self.limit:
            raise BudgetSpent(f"more than {self.limit} steps")
        now = _cpu_time()
        if self.deadline is None:  # the first check: the CPU clock read at the start was at least
            # `now` less the wall time since (so this deadline is the exact one or earlier)
            self.deadline = now - (_wall_clock() - self.started) + TIME_BUDGET + TIME_PER_CHAR * len(self.command)
        if now > self.deadline:
            raise BudgetSpent(f"more than {TIME_BUDGET + TIME_PER_CHAR * len(self.command):.1f} s of CPU time")
        self.budget = min(self.limit, self.steps + CHECK_EVERY)

    def cwd_text(self) -> str:
        return self.state.cwd

    def substitute(self, node: Any) -> str:
        """Walk a command or process substitution in a subshell; its value is the output of a
        single simple command whose model knows it (``$(echo ~)``, ``$(mktemp -d)``), trailing
        newlines removed; otherwise unknown."""
        saved = self.state
        self.state = saved.copy()
        saved_output = self._last_output
        self._last_output = None
        children = [child for child in node.named_children if child.type != "comment"]
        self.substituting += 1
        try:
            for child in children:
                self.walk(child, TERMINAL)
            output = self._last_output
        finally:
            self.substituting -= 1
            self.state = saved
            self._last_output = saved_output
        if node.type == "process_substitution":  # `done < <(git ls-files)`: what the command reads
            self.process_output = output if output is not None and output.text is not None and \
                len(children) == 1 and (children[0].type == "command" or _fed_command(children[0])) else None
        if len(children) == 1 and children[0].type == "file_redirect" and node.type == "command_substitution":
            return self._file_value(children[0])
        if output is None or output.text is None or len(children) != 1 or node.type != "command_substitution":
            return UNKNOWN
        body = children[0]
        if body.type == "list":  # `$(cd "$(dirname "$0")" && pwd)`: commands that print nothing, then one
            items = _flatten(body, "list")
            if not all(item.type == "command" and self._silent(item) for item in items[:-1]):
                return UNKNOWN
            body = items[-1]
        if _fed_command(body):
            body = body.named_children[0]  # `$(cat <<'EOF' … EOF)`: the command, fed a here-document
        if body.type != "command" and not (body.type == "pipeline" and all(
                part.type == "command" for part in _flatten(body, "pipeline"))):
            return UNKNOWN
        return output.text.rstrip("\n")

    def _file_value(self, node: Any) -> str:
        """The value of ``$(< FILE)`` (already walked as a read of FILE): the content of a file
        this command text wrote, when known (``echo /etc > t; rm -rf $(< t)``); else unknown."""
        found = self.stdin_file
        self.stdin_file = None
        if found is None or self.src.node_text(node)[:1] != "<":
            return UNKNOWN
        fed = self.stdin_from(found[0], _new_tuple(Stdin, (None, "")))
        return UNKNOWN if fed.text is None else fed.text.rstrip("\n")

    def _silent(self, node: Any) -> bool:
        """Whether a simple command prints nothing to stdout (``cd DIR``, ``test …``, ``X=v``)."""
        name = node.child_by_field_name("name")
        if name is None:
            return True  # assignments only
        return self.src.node_text(name) in _SILENT_COMMANDS

    def assign(self, name: str, value: str) -> None:
        """``${name:=value}``: the expansion assigns the variable."""
        target = assign_through(self, name, value)
        if target is not None:
            self.state.variables[target] = value

    def reference(self, name: str) -> str | None:
        """The name the nameref ``name`` refers to ("" when not bound), None for a plain variable."""
        raw = self.state.variables.get(name)
        if raw is None or not raw.startswith(NAMEREF):
            return None
        target = nameref_target(self, name)
        return None if target is None else "" if target == UNKNOWN else target

    def indirect(self, name: str) -> str | None:
        """What ``${!name}`` expands to: the name a nameref refers to, else the value of the
        variable (or array element) that ``$name`` names."""
        target = nameref_target(self, name)
        if target is not None:
            return target if target and target != UNKNOWN else None
        value = self.lookup(name)
        return deref(self, value) if value and UNKNOWN not in value else None

    def nested_fragment(self, text: str, node: Any) -> None:
        """Walk text the grammar kept raw (``${x%$(cmd)}``, `` ${u-`cmd`} ``) as a word."""
        self.nested_script(": " + text, self.src.span(node), exact=False, subshell=True)

    def arithmetic(self, node: Any) -> None:
        """Walk an arithmetic context: substitutions run, and so do array subscripts hidden in
        the values of the variables it names (``v='a[$(cmd)]'; (( v ))``)."""
        stack = [node]
        while stack:
            current = stack.pop()
            kind = current.type
            if kind in ("command_substitution", "process_substitution"):
                self.substitute(current)
                continue
            if kind == "variable_name":
                name = self.src.node_text(current)
                if name in self.read_data:
                    self.arith_data(name, current)
                self.arith_value(self.lookup(name), current)
                continue
            if self.read_data and kind in ("variable_name", "simple_expansion", "expansion", "word") and \
                    self.src.node_text(current).strip("${}") in self.read_data:
                self.arith_data(self.src.node_text(current).strip("${}"), current)
            if kind in ("simple_expansion", "expansion", "string", "concatenation", "word", "raw_string"):
                self.arith_value(self.words.text(current), current)
                continue
            stack.extend(current.named_children)

    def arith_data(self, name: str, node: Any) -> None:
        """Arithmetic on a variable ``read`` took from a file or a pipe (its value not known):
        bash evaluates the value as an expression, and a subscript in it (``a[$(cmd)]``) runs."""
        value = self.lookup(name)
        if value is not None and UNKNOWN in value:
            self.effects.append(Unknown(f"arithmetic evaluates `${name}`, read from input that is not known: an "
                                        "array subscript in it runs commands", self.src.span(node)))

    def arith_value(self, value: str | None, node: Any) -> None:
        """Bash evaluates a variable's value as an expression: subscripts in it run code."""
        if value and "[" in value and UNKNOWN not in value:  # (`[[ a[x] -eq 1 ]]`: x's value too)
            subscript_values(self, value, self.src.span(node))
        seen = 0
        while value and seen < 8 and UNKNOWN not in value:
            if _CODE_IN_VALUE_RE.search(value):
                self.nested_script(": " + value, self.src.span(node), exact=False, subshell=True)
                return
            if not _IDENT_RE.match(value.strip()):  # (`x+1`: the names it mentions are evaluated)
                integer_assignment(self, value, self.src.span(node))
                return
            value = self.lookup(value.strip())
            seen += 1

    # -- nested code ----------------------------------------------------------------------

    def nested_script(self, text: str, span: SpanT, exact: bool, subshell: bool = True,
                      positional: list[str] | None = None, stdin: Stdin = TERMINAL,
                      env: dict[str, str] | None = None) -> None:
        """Parse and walk code found inside a word (``bash -c``, ``eval``, hooks, …)."""
        self.nested_scripts += 1
        if self.decoded:
            decoded_code(self, text, span)
        if self.nested_scripts > MAX_NESTED_SCRIPTS or self.depth > MAX_DEPTH:
            self.effects.append(Unparsable("nested code too deep to follow", span))
            return
        base = 0
        collapse: tuple[int, int] | None = span  # None: the text is the source as written
        if exact:
            start = self.command.find(text, span[0], span[1]) if text else -1
            if start != -1:
                base, collapse = start, None
        saved = self.state
        if subshell:
            self.state = saved.copy()
        if positional is not None:
            self.state.positional = positional
        if env:  # the child's environment: `X=~ bash -c 'rm -rf "$X"'`
            self.state.variables.update(env)
        self.depth += 1
        try:
            if self.fast_path and run_simple(self, text, base, collapse, stdin, MAX_DEPTH):
                return
            source = self.parse_or_refuse(text, base, collapse)
            if source is None:
                return
            error = first_error(source.tree)
            if error is not None:
                self.effects.append(Unparsable(f"nested code does not parse near `{clip(source.node_text(error))}`",
                                               source.span(error)))
            else:
                self.stray_terminators(source)
            self.walk_in(source, source.tree.root_node, stdin)
        finally:
            self.depth -= 1
            if subshell:
                self.state = saved

    # -- statements -----------------------------------------------------------------------

    def walk(self, node: Any, stdin: Stdin = TERMINAL) -> None:
        """Visit one node."""
        self.steps += 1
        if self.steps > self.budget:
            self.checkpoint()
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                self.effects.append(Unparsable("nesting too deep to follow", self.src.span(node)))
                return
            handler = _VISITORS.get(node.kind_id)  # (an int: node.type makes a new string)
            if handler is None:
                handler = _VISITORS[node.kind_id] = getattr(Walker, "visit_" + node.type, None) or Walker.generic
            handler(self, node, stdin)
        finally:
            self.depth -= 1

    def generic(self, node: Any, stdin: Stdin) -> None:
        """Constructs without a visitor: search every child for code."""
        for child in node.named_children:
            if child.type in WORD_TYPES:
                self.words.parts(child)
            else:
                self.walk(child, stdin)

    def visit_comment(self, node: Any, stdin: Stdin) -> None:
        return

    def visit_program(self, node: Any, stdin: Stdin) -> None:
        if self.src.data.find(b"&", node.start_byte, node.end_byte) != -1 and self.background_walk(node, stdin):
            return
        kinds = KIND_NAMES
        for child in node.named_children:
            kind = kinds.get(child.kind_id)
            if kind is None:
                kind = kinds[child.kind_id] = child.type
            # a comment runs nothing: walk it only where walking reports the nesting limit
            if kind != "comment" or self.depth >= MAX_DEPTH:
                self.walk(child, stdin)

    def background_walk(self, node: Any, stdin: Stdin) -> bool:
        """The statements of ``node`` when one of them ends in ``&``: that one runs in the
        background, in a subshell, so its ``cd``, assignments and functions do not hold for
        what follows (``cd ~ & rm -rf .ssh`` removes the working directory's ``.ssh``); its
        effects are judged as any others.  False (nothing walked) when none does."""
        children = node.children
        if not any(child.type == "&" for child in children):
            return False
        for index, child in enumerate(children):
            if not child.is_named or (child.type == "comment" and self.depth < MAX_DEPTH):
                continue
            if index + 1 < len(children) and children[index + 1].type == "&":
                saved = self.state
                self.state = saved.copy()
                try:
                    self.walk(child, stdin)
                finally:
                    self.state = saved
                saved.variables["!"] = CHILD_PID  # (`$!`: the job's pid, see attach.py and kill)
            else:
                self.walk(child, stdin)
        return True

    def visit_do_group(self, node: Any, stdin: Stdin) -> None:
        self.no_empty_body(node)
        self.visit_program(node, stdin)

    def no_empty_body(self, node: Any) -> None:
        """``{ }`` and ``do done`` hold no command: a syntax error to bash."""
        for child in node.named_children:
            if child.type != "comment":
                return
        if node.type == "do_group" or (node.children[:1] and node.children[0].type == "{"):
            self.syntax_error(f"`{clip(self.src.node_text(node))}` holds no command", self.src.span(node))
    visit_else_clause = visit_program

    def coprocess(self, node: Any, stdin: Stdin, visit: Any) -> bool:
        """A compound command after ``coproc [NAME]`` (blanked by the parse): bash runs it in
        the background, in a subshell (its ``cd`` and assignments stay there), and sets
        ``NAME[0]``/``NAME[1]`` to its descriptors.  True when ``node`` was one (walked here
        by ``visit``, the visitor of its kind)."""
        if getattr(self, "_coproc_node", None) is node:
            return False
        name = coproc_name(self.src.data, node.start_byte)
        if name is None:
            return False
        saved = self.state
        self.state = saved.copy()
        self._coproc_node = node
        try:
            visit(self, node, stdin)
        finally:
            self.state = saved
            self._coproc_node = None
        coproc_descriptors(self, name)
        return True

    def visit_compound_statement(self, node: Any, stdin: Stdin) -> None:
        if node.start_byte > 6 and self.src.data[node.start_byte - 1] in _BLANKS and \
                self.coprocess(node, stdin, Walker.visit_compound_statement):
            return
        self.no_empty_body(node)
        if self.src.data.find(b"&", node.start_byte, node.end_byte) != -1 and node.children[:1] and \
                node.children[0].type == "{" and self.background_walk(node, stdin):
            return
        for child in node.named_children:
            if child.type in WORD_TYPES or child.type in ("binary_expression", "unary_expression",
                                                          "postfix_expression", "parenthesized_expression",
                                                          "variable_name", "ternary_expression", "subscript"):
                self.arithmetic(child)
            else:
                self.walk(child, stdin)

    def visit_subshell(self, node: Any, stdin: Stdin) -> None:
        if node.start_byte > 6 and self.src.data[node.start_byte - 1] in _BLANKS and \
                self.coprocess(node, stdin, Walker.visit_subshell):
            return
        saved = self.state
        self.state = saved.copy()
        try:
            for child in node.named_children:
                self.walk(child, stdin)
        finally:
            self.state = saved

    def visit_pipeline(self, node: Any, stdin: Stdin) -> None:
        parts = _flatten(node, "pipeline")
        rest: list[Any] = []
        while len(parts) > 1 and parts[-1].type == "list":
            # tree-sitter-bash reads `a | b | c && d` as `a | (b | c && d)` (nested once per
            # further `|`); bash, as `(a | b | c) && d`: the pipeline takes the list's first
            # item, and the rest run in this shell (a `cd` or an assignment there holds for
            # what follows)
            items = _flatten(parts[-1], "list")
            parts = parts[:-1] + _flatten(items[0], "pipeline")
            rest = items[1:] + rest
        current_in = stdin
        last_here = len(parts) > 1 and LASTPIPE_KEY in self.state.variables  # (`shopt -s lastpipe`)
        for index, part in enumerate(parts):
            saved = self.state
            if len(parts) > 1 and not (last_here and index == len(parts) - 1):
                self.state = saved.copy()  # every pipeline part runs in a subshell
            try:
                out = self.walk_producing(part, current_in)
            finally:
                self.state = saved
            current_in = out if index + 1 < len(parts) else current_in
        if parts and not rest and out.text is not None:
            self._last_output = out  # (what the pipeline prints: its last command's known output)
        for item in rest:
            self.walk(item, stdin)

    def walk_producing(self, node: Any, stdin: Stdin) -> Stdin:
        """Walk a statement and return what it writes to standard output, when known."""
        self._last_output = None
        self.walk(node, stdin)
        output = self._last_output
        self._last_output = None
        if output is not None:
            return output
        return _new_tuple(Stdin, (None, f"the output of `{clip(self.src.node_text(node))}`"))

    def visit_negated_command(self, node: Any, stdin: Stdin) -> None:
        self.generic(node, stdin)

    def visit_redirected_statement(self, node: Any, stdin: Stdin) -> None:
        body = whole = node.child_by_field_name("body")
        if body is not None and body.type == "list":
            # tree-sitter-bash hangs `a && b > f` on the whole list; bash redirects only the
            # last command, and opens `f` after `a` ran (in the directory `a` may have changed)
            items = _flatten(body, "list")
            for item in items[:-1]:
                self.walk(item, stdin)
            body = items[-1]
        alternatives = self.state.alternatives
        cwd_entry = alternatives.get(CWD_KEY) if alternatives and self.alternative is None else None
        if cwd_entry is not None and cwd_entry[0] is self.state.cwd:
            # the redirections open their files in each directory the cwd may be (strictest wins)
            ends: list[str] = []
            for cwd in cwd_entry[1]:
                self.state.cwd = cwd
                self.redirected(node, whole, body, stdin)
                ends.append(self.state.cwd)
            self.state.cwd = settle_cwd(self.state, ends, cwd_entry)
            return
        saw, self.saw_default = self.saw_default, False
        pending = self.redirect_words
        self.redirected(node, whole, body, stdin)
        if self.saw_default and not self.use_defaults:  # (`cat < ${P:-f}`: see visit_command)
            self.with_defaults(self.redirected, (node, whole, body, stdin), pending)
        self.saw_default = saw or self.saw_default

    def redirected(self, node: Any, whole: Any, body: Any, stdin: Stdin) -> None:
        """:meth:`visit_redirected_statement` for its last command ``body`` (in one cwd)."""
        continuations: list[tuple[Any, bool]] = []
        words: list[Any] = []  # words after a redirection: the command's arguments
        self.stdout_file = self.stdin_file = None
        previous_end = whole.end_byte if whole is not None else node.start_byte
        for child in node.children:
            if child == whole or not child.is_named or (child.type == "word" and node.type == "function_definition"):
                continue  # (a function's name)
            if child.type == "heredoc_redirect":
                if body is not None and body.type == "command" and \
                        self.src.data[previous_end:child.start_byte].strip() == b"-":
                    # `cmd - <<EOF`: tree-sitter-bash drops the `-` (bash gives it to the command)
                    self.dash_word = (body, self.src.span(child))
                stdin = self.heredoc(child, stdin, continuations, words)
            elif child.type == "herestring_redirect":
                stdin = self.herestring(child)
            else:
                self.process_output = None
                self.redirect(child, words)
                fed = self.process_output
                if fed is not None:  # `< <(cmd)`: stdin is the output of cmd, when known
                    self.process_output = None
                    target = child.child_by_field_name("destination")
                    if target is not None and target.type == "process_substitution" and \
                            self.src.node_text(child)[:1] == "<" and self.src.node_text(target)[:1] == "<":
                        stdin = fed
        captured, self.stdout_file = self.stdout_file, None
        if self.stdin_file is not None:  # `sh < f`: a file this command wrote with known content
            read, self.stdin_file = self.stdin_file[0], None
            stdin = self.stdin_from(read, stdin)
        if words:
            # `rm >a -rf ~` runs `rm -rf ~`: tree-sitter-bash hangs the words after a
            # redirection's target on the redirection (as more destinations, or a here-
            # document's arguments); bash gives them to the command
            if body is not None and body.type == "command":
                self.redirect_words = (body, words)
            else:  # after a compound command's redirection a word is a syntax error to bash
                for word in words:
                    self.words.parts(word)
                self.effects.append(Unparsable(f"a word after the redirection of a compound command near "
                                               f"`{clip(self.src.node_text(words[0]))}`", self.src.span(words[0])))
        if body is None:
            return
        if continuations:
            out = self.walk_producing(body, stdin)
            for cont, piped in continuations:
                self.walk(cont, out if piped else TERMINAL)
            if captured is not None:
                record_written(self, captured[0], out.text, captured[1])
        elif captured is not None:  # what the file holds afterwards: the body's output, when known
            if body.type == "command" and self.src.node_text(body).strip() == "exec":
                # (`exec > f`: the standard output of every later command of this shell)
                self.exec_stdout = None if captured[0].path in _NULL_FILES else captured[0].path
            before, self._last_output = self._last_output, None
            self.walk(body, stdin)
            output = self._last_output
            if output is None:
                self._last_output = before
            elif output.what.startswith("the endless output of ") and captured[0].path not in _NULL_FILES:
                # (`{ yes; } > f`, `(yes) > f`, `< /dev/zero cat > z`: an endless output into a file)
                self.effects.append(Unknown(f"{output.what} goes to `{clip(captured[0].path)}`: it fills the disk",
                                            captured[0].span))
            record_written(self, captured[0], None if output is None else output.text, captured[1])
        else:
            self.walk(body, stdin)

    def heredoc(self, node: Any, stdin: Stdin, continuations: list[tuple[Any, bool]],
                words: list[Any] | None = None) -> Stdin:
        """A heredoc: its body (expanded unless the delimiter is quoted) becomes stdin;
        statements the grammar hangs on it (``| sh``, ``&& cmd``) are continuations, words
        after it (``cat <<EOF -n``: the command's arguments) go to ``words``."""
        quoted = False
        body_text: str | None = ""
        piped = False
        line_end = -1  # where the line of `<<EOF` ends (the body starts after it)
        misread = False
        end_at = node.end_byte
        ended_apart = heredoc_misread(self.src.data, node)
        if ended_apart is not None:  # (bash and the grammar end the body on different lines)
            self.effects.append(Unparsable(ended_apart, self.src.span(node)))
        for index, child in enumerate(node.children):
            kind = child.type
            if kind in WORD_TYPES and node.field_name_for_child(index) == "argument":
                if 0 <= line_end <= child.start_byte:
                    # tree-sitter-bash reads a body whose first line starts with `\` (`\rm -rf ~`)
                    # as words after the redirection: they are the body (see below)
                    misread = True
                    continue
                if words is not None:
                    words.append(child)
                    continue
            if kind == "heredoc_start":
                quoted = self.src.node_text(child)[:1] in ("'", '"', "\\")
                line_end = self.src.data.find(b"\n", child.end_byte)
            elif kind == "heredoc_end":
                end_at = child.start_byte
            elif kind == "heredoc_body":
                if quoted:
                    body_text = self.src.node_text(child)
                else:
                    text = self.src.node_text(child)
                    if "$" in text and heredoc_missed_expansion(self.src.data, child):
                        if not heredoc_missed_expansion(self.src.data, child, code_only=True):
                            # (only parameters the grammar did not read, `Usage: $0 [options]`: no
                            # code runs; the body's text is not known)
                            self.words.parts(child, True)
                            body_text = None
                            continue
                        # (an expansion the grammar did not see: walked from a body it reads)
                        self.nested_script(_reread_heredoc(text), self.src.span(child), exact=False)
                        body_text = None
                        continue
                    # (`…` in the body: bash runs it, the grammar keeps it as text; `\$`, `\``,
                    # `\\` and backslash-newline lose their backslash: `\$HOME` is `$HOME` to the
                    # shell that reads the body)
                    parts = self.words.parts(child, True) if child.named_children or "`" in text or "\\" in text \
                        else [(text, "q")]
                    body_text = "".join(text for text, _ in parts)
                    if UNKNOWN in body_text:
                        body_text = None
            elif kind == "|":
                piped = True
            elif kind in ("&&", "||", ";", "&"):
                piped = False
            elif kind in ("file_redirect", "herestring_redirect"):
                self.redirect(child, words)
            elif child.is_named and kind not in ("heredoc_end", "heredoc_content"):
                first = child.children[0].type if child.children else ""
                continuations.append((child, piped or first == "|"))
        if misread:  # the body as bash reads it: the raw lines (expansions in them: not known)
            raw = self.src.data[line_end + 1:end_at].decode("utf-8", "surrogateescape")
            body_text = raw if quoted else None if "$" in raw or "`" in raw else \
                raw.replace("\\\n", "").replace("\\\\", "\\")
        return _new_tuple(Stdin, (body_text, "a here-document"))

    def visit_heredoc_body(self, node: Any, stdin: Stdin) -> None:
        self.words.parts(node, True)

    def visit_string_content(self, node: Any, stdin: Stdin) -> None:
        return

    def herestring(self, node: Any) -> Stdin:
        """A here-string: its word becomes stdin."""
        text = ""
        named = node.named_children
        data = self.src.data
        if named and b"\n" in data[node.start_byte:named[0].start_byte].replace(b"\\\n", b""):
            # `<<<` then a newline: bash wants the word on the same line (a syntax error there)
            self.syntax_error("`<<<` with no word before the end of the line", self.src.span(node))
        elif named and named[-1].type == "number" and data[named[-1].end_byte:named[-1].end_byte + 1] in (b"<", b">"):
            # `<<< 2>&1`: a number before a redirection operator is its file descriptor, not a word
            self.syntax_error("`<<<` followed by a redirection instead of a word", self.src.span(node))
        for child in named:
            text = self.words.text(child)
        return _new_tuple(Stdin, (None if UNKNOWN in text else text + "\n", "a here-string"))

    def redirect(self, node: Any, words: list[Any] | None = None) -> None:
        """A file redirection: reads, writes, or a ``/dev/tcp`` connection.

        tree-sitter-bash takes the words after the target for more destinations
        (``>a -rf ~``): they are the command's arguments to bash, and go to ``words`` (when
        None, they are only searched for code); one the grammar split off the target
        (no blank between them: see :meth:`WordExpander.word_parts`) is the target's."""
        if node.type == "herestring_redirect":
            self.herestring(node)
            return
        operator = ""
        dest = None
        descriptor = ""
        more: list[Any] = []  # the rest of the target's word
        last_end = -1
        after = False  # a word after the target seen
        for index, child in enumerate(node.children):
            name = node.field_name_for_child(index)
            if name == "descriptor":
                descriptor = self.src.node_text(child)
            if not child.is_named and child.type not in ("(", ")"):
                if not operator and child.type == ">>" and self.src.node_text(child) == "<>":
                    operator = "<>"  # (parsed as `>>`: see parse.error_repaired_tree)
                operator = operator or child.type
            elif name == "destination" and dest is None:
                dest = child
                last_end = child.end_byte
                if self.src.data.find(b"\n", node.start_byte, child.start_byte) != -1:
                    self.syntax_error(f"`{operator}` without a target on its line", self.src.span(node))
                if child.type == "number" and operator in ("<", ">", ">>", "<>", ">|", "&>", "&>>") \
                        and self.src.data[child.end_byte:child.end_byte + 1] in (b"<", b">"):
                    self.syntax_error(f"`{operator}` without a target (bash reads `{self.src.node_text(child)}` as "
                                      "the next redirection's descriptor)", self.src.span(child))
            elif name == "destination":
                if child.type == "number" and self.src.data[child.end_byte:child.end_byte + 1] in (b"<", b">"):
                    continue  # the descriptor of the next redirection (`>&/dev/tcp/h/1 0>&1`)
                if child.start_byte == last_end and not after:
                    more.append(child)
                elif words is not None:
                    words.append(child)  # (the command joins a word's adjacent nodes)
                    after = True
                else:
                    self.words.parts(child)
                    after = True
                last_end = child.end_byte
            elif child.type in WORD_TYPES and name != "descriptor":
                self.words.parts(child)
        if dest is None:
            return
        if dest.type == "number" and operator in (">&", "<&", ">&-", "<&-") and not more:
            return
        if operator in (">&", "<&") and dest.type == "word" and self.src.node_text(dest)[:1] == "-" and \
                len(self.src.node_text(dest)) > 1:
            # bash reads `<& -p` as `<&-` (close) and a word `p`: an argument of a simple
            # command, a syntax error after a compound one; the grammar reads one target
            self.effects.append(Unparsable(f"bash reads `{operator} {clip(self.src.node_text(dest))}` as closing the "
                                           "descriptor followed by another word, which the grammar does not see",
                                           self.src.span(dest)))
            return
        target = self.words.text(dest) if not more else self.words.word_text([dest, *more])
        if operator in (">&", "<&") and (target.isdigit() or target == "-" or (
                target[:3] == "\x00\x02d" and plain_names_glob(target) == "[0-9]*")):
            return  # (a descriptor: `>&3`, `>&"${COPROC[1]}"`)
        span = self.src.span(dest) if not more else (self.src.span(dest)[0], self.src.span(more[-1])[1])
        self.file_access(target, span, read="<" in operator, write=">" in operator)
        if operator in (">", ">|", ">>", "&>", "&>>") and descriptor in ("", "1") and \
                self.effects[-1].__class__ is Write:
            self.stdout_file = (self.effects[-1], operator in (">>", "&>>"))
        elif operator == "<" and descriptor in ("", "0"):
            self.stdin_file = (self.effects[-1], target)

    def stdin_from(self, read: Any, stdin: Stdin) -> Stdin:
        """The input a command gets from ``< FILE`` (``read``: the redirection's effect): the
        endless output of a device (``/dev/urandom``); the known content of a file this command
        wrote; nothing known for a file the agent may have
        put there (``sqlite3 db < /tmp/x.sql``: not the project's own); else ``stdin`` as it was."""
        if read.__class__ is not Read:
            return stdin
        if read.path in ("/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"):  # (`tr -dc a-z < /dev/urandom`)
            from stockade.analyzer.models.pipefill import ENDLESS

            return _new_tuple(Stdin, (None, ENDLESS + f"`{read.path}`"))
        from stockade.analyzer.models.fresh import foreign_input, known_content

        text = known_content(self, read.path) if getattr(self, "written_text", None) else None
        if text is not None:
            return _new_tuple(Stdin, (text, f"`{clip(read.path)}`"))
        if foreign_input(self, read.path):
            return _new_tuple(Stdin, (None, f"`{clip(read.path)}`"))
        return stdin

    def file_access(self, target: str, span: SpanT, read: bool, write: bool) -> None:
        """Record a redirection's effect on ``target``."""
        match = _DEV_NET_RE.match(target)
        if match:
            port = int(match.group(3)) if match.group(3).isdigit() else None
            self.effects.append(Network(match.group(2), port, span))
            return
        path = self.resolve(target)
        if write:
            self.effects.append(Write(path, span))
        if read:
            self.effects.append(Read(path, span))

    visit_file_redirect = lambda self, node, stdin: self.redirect(node)  # noqa: E731
    visit_herestring_redirect = lambda self, node, stdin: self.herestring(node)  # noqa: E731

    def visit_function_definition(self, node: Any, stdin: Stdin) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is not None and body is not None:
            if body.type == "compound_statement":
                self.no_empty_body(body)
            name = self.src.node_text(name_node)
            self.state.functions[name] = (self.src, body)
            if name in _HOOK_FUNCTIONS:  # bash calls it by itself (for any command not found)
                saved = self.state
                self.state = saved.copy()
                self.state.positional = [name, UNKNOWN]
                try:
                    self.walk(body, TERMINAL)
                finally:
                    self.state = saved

    def visit_test_command(self, node: Any, stdin: Stdin) -> None:
        stack = list(node.named_children)
        while stack:
            current = stack.pop()
            if current.type == "binary_expression":
                op = current.child_by_field_name("operator")
                if op is not None and self.src.node_text(op) in _ARITH_OPS:
                    for side in ("left", "right"):
                        operand = current.child_by_field_name(side)
                        if operand is not None:
                            name = self.src.node_text(operand).strip("\"${}")
                            if self.read_data and name in self.read_data and self.src.node_text(node)[:2] == "[[":
                                # `[[ $n -gt 3 ]]` evaluates $n as an expression (`[` and `test` do not)
                                self.arith_data(name, operand)
                            self.arith_value(self.words.text(operand), operand)
                    continue
                stack.extend(current.named_children)
            elif current.type == "unary_expression" and current.children and \
                    self.src.node_text(current.children[0]) == "-v":
                for operand in current.named_children[1:]:  # `[[ -v 'a[$(cmd)]' ]]` runs cmd
                    for text in self.words.fields(operand):
                        subscript_code(self, text, self.src.span(operand))
            elif current.type in WORD_TYPES:
                self.words.parts(current)
            elif current.type in ("variable_name", "test_operator"):
                continue
            else:
                stack.extend(current.named_children)

    # -- assignments ------------------------------------------------------------------------

    def assignment_value(self, node: Any, more: list[Any] | None = None) -> tuple[str, str, Any]:
        """Name, value and value node of a ``variable_assignment`` (``more``: nodes the grammar
        split off the value's word, see :meth:`WordExpander.word_parts`)."""
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = self.src.node_text(name_node) if name_node is not None else UNKNOWN
        if name_node is not None and name_node.type == "subscript":
            self.words.parts(name_node)
            base = name_node.named_children[0] if name_node.named_children else None
            if base is not None and base.type == "variable_name":  # `a[i]=v`: element i
                base_name = self.src.node_text(base)
                target = self.reference(base_name)
                if target:  # `declare -n r=a; r[1]=v` sets a[1]
                    base_name = target if "[" not in target else UNKNOWN
                index_node = name_node.child_by_field_name("index")
                index_text = self.src.node_text(index_node) if index_node is not None else ""
                value = self.words.text(value_node) if value_node is not None else ""
                plus = self.src.node_text(node)[len(self.src.node_text(name_node)):].startswith("+=")
                entries = assoc_entries(self, base_name)
                if entries is not None:  # `m[key]=v` of an associative array
                    key = self.words.text(index_node) if index_node is not None else UNKNOWN
                    if plus:
                        earlier = next((v for k, v in reversed(entries) if k == key), "")
                        value = earlier + value
                    return base_name, self._set_assoc(base_name, None if UNKNOWN in key else
                                                      [*entries, (key, value)]), value_node
                elements = array_elements(self, base_name)
                if elements is None or plus or not INDEX_RE.fullmatch(index_text) or \
                        not -len(elements) <= int(index_text) <= len(elements):
                    self.state.variables.pop(ARRAY_KEY + base_name, None)
                    return base_name, UNKNOWN, value_node  # (the array is no longer known)
                index = int(index_text) % (len(elements) + (int(index_text) >= 0))
                elements = elements[:index] + [value] + elements[index + 1:]
                return base_name, elements[0] if self._set_array(base_name, elements) else UNKNOWN, value_node
            name = UNKNOWN
        if value_node is None:
            return name, "" if more is None else self.words.word_text(more), None
        if value_node.type == "array" and (self.declaring_assoc or assoc_entries(self, name) is not None):
            plus = self.src.node_text(node)[len(self.src.node_text(name_node or node)):].startswith("+=")
            pairs: list[tuple[str, str]] | None = (assoc_entries(self, name) or []) if plus else []
            for group in _array_words(value_node):
                fields = self.words.word_fields(group)
                text = "".join([self.src.node_text(item) for item in group])
                if pairs is None:
                    continue
                item_key = text[1:text.index("]=")] if text[:1] == "[" and "]=" in text else None
                if item_key is not None and len(item_key) > 1 and item_key[0] == item_key[-1] and item_key[0] in "'\"" and \
                        fields and fields[0][:1] == "[":  # (`["k"]=v`: a quoted literal key)
                    item_key = item_key[1:-1]
                if item_key is not None and len(fields) == 1 and not any(c in item_key for c in "$`'\"\\"):
                    pairs.append((item_key, fields[0].partition("]=")[2]))
                else:
                    pairs = None  # (`m=(k v)` pairs, computed keys: not followed)
            return name, self._set_assoc(name, pairs), value_node
        if value_node.type == "array":
            slots: dict[int, str] | None = {}
            last = -1
            for group in _array_words(value_node):
                fields = self.words.word_fields(group)
                text = "".join([self.src.node_text(item) for item in group])
                if text[:1] == "[" and "]=" in text:  # `([k]=v)`: element k, then k+1, …
                    key = text[1:text.index("]=")]
                    if slots is None or not key.isdigit() or len(fields) != 1:
                        slots = None
                        continue
                    last = int(key)
                    slots[last] = fields[0].partition("]=")[2]
                elif slots is not None:
                    for field in fields:
                        last += 1
                        slots[last] = field
            # holes (`([3]=x)`): unknown elements, the set ones known (bash skips holes in
            # `${a[@]}` and reads one as empty: the analysis knows neither way)
            values = [slots.get(i, UNKNOWN) for i in range(max(slots) + 1)] if slots and \
                max(slots) < _MAX_ARRAY else [] if slots is not None and not slots else None
            if self.src.node_text(node)[len(self.src.node_text(name_node or node)):].startswith("+="):
                before = array_elements(self, name)  # `a+=(x y)`: appended
                values = None if before is None or values is None else before + values
            if values is None or name == UNKNOWN:
                self.state.variables.pop(ARRAY_KEY + name, None)
                return name, UNKNOWN, value_node
            if not self._set_array(name, values):
                return name, UNKNOWN, value_node
            return name, values[0] if values else "", value_node
        value = self.words.text(value_node) if more is None else self.words.word_text([value_node, *more])
        if self.src.node_text(node)[len(self.src.node_text(name_node or node)):].startswith("+="):
            old = self.lookup(name)
            value = UNKNOWN if old is None else old + value
        return name, value, value_node

    def _set_assoc(self, name: str, entries: list[tuple[str, str]] | None) -> str:
        """Record the entries of associative array ``name`` (None: not known from now on); the
        value the caller gives the plain variable (ASSOC_MARK, or UNKNOWN when not recorded)."""
        variables = self.state.variables
        if entries is None or len(entries) > _MAX_ARRAY or any(
                ARRAY_SEP in k or ARRAY_SEP in v or ASSOC_SEP in k or ASSOC_SEP in v for k, v in entries):
            variables.pop(ASSOC_KEY + name, None)
            return UNKNOWN
        variables[ASSOC_KEY + name] = "".join([ARRAY_SEP + k + ASSOC_SEP + v for k, v in entries])
        return ASSOC_MARK

    def _set_array(self, name: str, elements: list[str]) -> bool:
        """Record the elements of indexed array ``name`` (see :func:`words.array_elements`;
        the caller sets the variable itself to element 0, or to UNKNOWN when this is False:
        too many elements, or one holding the record's separator)."""
        if len(elements) > _MAX_ARRAY or any(ARRAY_SEP in element for element in elements):
            self.state.variables.pop(ARRAY_KEY + name, None)
            return False
        self.state.variables[ARRAY_KEY + name] = "".join([ARRAY_SEP + element for element in elements])
        return True

    def element_keys(self, node: Any, name_node: Any) -> None:
        """``b=([x]=1)``, ``a+=([x]=1)``: an indexed array's keys are arithmetic (see
        :func:`subscript_values`); an associative array's are strings."""
        value = node.child_by_field_name("value")
        if value is None or value.type != "array" or name_node is None or self.declaring_assoc or \
                assoc_entries(self, self.src.node_text(name_node)) is not None:
            return
        for element in value.named_children:
            text = self.src.node_text(element)
            if text[:1] == "[" and "]=" in text:
                subscript_values(self, "a" + text.partition("]=")[0] + "]", self.src.span(element))

    def visit_variable_assignment(self, node: Any, stdin: Stdin) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is not None and self.src.data[name_node.start_byte:name_node.start_byte + 5] == b"BASH_":
            bash_tables(self, node, name_node)  # (`BASH_CMDS[ls]=/bin/rm`, `BASH_ALIASES[x]=CODE`)
        if name_node is not None and name_node.type == "subscript":  # (`b[x]=1`: x's value is arithmetic)
            subscript_values(self, self.src.node_text(name_node), self.src.span(name_node))
        self.element_keys(node, name_node)
        saw, self.saw_default = self.saw_default, False
        name, value, value_node = self.assignment_value(node)
        if value_node is not None and name != UNKNOWN and is_integer(self, name) and (
                value == UNKNOWN or "[" in self.src.node_text(node.child_by_field_name("name") or node)):
            integer_assignment(self, self.words.text(value_node), self.src.span(node))  # (`n+=V`, `a[0]=V`: V)
        target = assign_through(self, name, value, self.src.span(node)) if name != UNKNOWN else None  # (of a nameref)
        if target is None:
            self.saw_default = saw
            return
        name = target
        other = self.possible_value(node, name, value, saw)
        if other is not None:
            self.env_assignment(name, other, node, in_shell=True)
        else:
            self.state.variables[name] = value
        self.env_assignment(name, value, node, in_shell=True)

    def possible_value(self, node: Any, name: str, value: str, saw: bool) -> str | None:
        """After :meth:`assignment_value` of ``node`` gave ``value``: when it met ``${P:-word}``
        of an unknown ``P`` (``d=${P:-~/.ssh}``), the value it has with the word, which the
        variable now holds as an alternative to ``value`` (see :meth:`visit_command`); else
        None (the caller stores ``value``).  ``saw``: the flag of the enclosing walk."""
        other: str | None = None
        if self.saw_default and not self.use_defaults:
            self.use_defaults = True
            try:
                other = self.assignment_value(node)[1]
            finally:
                self.use_defaults = False
            self.settle_possible()
            if other == value or ARRAY_KEY + name in self.state.variables or not _IDENT_RE.match(name):
                other = None
            else:
                mark = "".join([UNKNOWN, UNKNOWN])
                state = self.state
                state.alternatives = dict(state.alternatives) if state.alternatives else {}
                state.alternatives[name] = (mark, (value, other))
                state.variables[name] = mark
        self.saw_default = saw or self.saw_default
        return other

    def visit_variable_assignments(self, node: Any, stdin: Stdin) -> None:
        for child in node.named_children:
            self.walk(child, stdin)

    def env_assignment(self, name: str, value: str, node: Any, in_shell: bool) -> None:
        """Variables that make later programs run code (PAGER, GIT_SSH_COMMAND, …)."""
        exported = self.state.exported
        if in_shell and name not in exported and "*" not in exported and name not in ("PROMPT_COMMAND", "PS4"):
            return  # ("*": `set -a`, every assignment is exported)
        judge_env_var(self, name, value, self.src.span(node))

    def visit_declaration_command(self, node: Any, stdin: Stdin) -> None:
        keyword = node.children[0].type if node.children else ""
        nameref = False  # `declare -n r=HOME`: `$r` is `$HOME` (judged as its value now)
        assoc = False  # `declare -A m`: an associative array
        attributes = ""  # `-l`, `-u`, `-i`: values lowercased, uppercased, evaluated as arithmetic
        for child in node.named_children:
            if child.type == "word":
                flags = self.src.node_text(child)
                if flags[:1] == "-":
                    attributes += "".join(flag for flag in flags if flag in "lui")
                if flags[:1] == "-" and "x" in flags:
                    keyword = "export"  # `declare -x`, `typeset -gx`, `local -x` export too
                if flags[:1] == "-" and "n" in flags and node.children[0].type != "export":  # (`export -n`: unexport)
                    nameref = True
                if flags[:1] == "-" and "A" in flags:
                    assoc = True
        self.declaring_assoc = assoc
        try:
            self.declarations(node, keyword, nameref, assoc)
        finally:
            self.declaring_assoc = False
        if attributes and not nameref:
            declared_attributes(self, node, attributes)

    def declarations(self, node: Any, keyword: str, nameref: bool, assoc: bool) -> None:
        """The names and assignments of a declaration command (:meth:`visit_declaration_command`)."""
        for child in node.named_children:
            if assoc and child.type == "variable_name":
                name = self.src.node_text(child)
                if assoc_entries(self, name) is None:
                    self.state.variables[name] = self._set_assoc(name, [])
            if child.type == "variable_assignment":
                saw, self.saw_default = self.saw_default, False
                target = child.child_by_field_name("name")
                if target is not None and target.type == "subscript" and not assoc:  # (`declare b[x]=1`)
                    subscript_values(self, self.src.node_text(target), self.src.span(target))
                if not assoc:
                    self.element_keys(child, target)
                name, value, _ = self.assignment_value(child)
                if nameref and name != UNKNOWN:  # bound to the name: its value is looked up when used
                    subscript_code(self, value, self.src.span(child))  # (`declare -n r='a[$(cmd)]'`: run on use)
                    declare_nameref(self, name, value)
                    value = self.state.variables[name]
                other = None
                if name != UNKNOWN and not nameref:  # (`local d=${1:-~/.ssh}`: either value)
                    other = self.possible_value(child, name, value, saw)
                else:
                    self.saw_default = saw or self.saw_default
                if name != UNKNOWN:
                    if is_integer(self, name):  # (`declare -i n; export n='a[$(cmd)]'`)
                        integer_assignment(self, value, self.src.span(child))
                    if other is None:
                        self.state.variables[name] = value
                    if keyword == "export" or "*" in self.state.exported:
                        self.state.exported = self.state.exported | {name}
                        self.effects.append(EnvChange(name, self.src.span(child)))
                        self.env_assignment(name, value, child, in_shell=True)
                        if other is not None:
                            self.env_assignment(name, other, child, in_shell=True)
            elif child.type == "variable_name":
                name = self.src.node_text(child)
                if nameref:
                    declare_nameref(self, name, None)
                if keyword == "export":
                    self.state.exported = self.state.exported | {name}
                    known = self.state.variables.get(name)
                    if known is not None:
                        self.env_assignment(name, known, child, in_shell=True)
            elif child.type in WORD_TYPES:
                for text in self.words.fields(child):
                    if "[" in text:  # `declare 'a[$(cmd)]=1'`: the subscript is evaluated
                        subscript_code(self, text.partition("=")[0], self.src.span(child))
                    if "=" in text and _ASSIGN_WORD_RE.match(text):
                        key, _, val = text.partition("=")
                        if "[" in key or "(" in val:  # `declare 'a[1]=x'`, `declare "a=(x)"`: not followed
                            forget_array(self, key.rstrip("+"))
                            continue
                        if nameref:
                            subscript_code(self, val, self.src.span(child))
                            declare_nameref(self, key, val)
                            continue
                        self.state.variables[key.rstrip("+")] = val
                        if keyword == "export" or "*" in self.state.exported:
                            self.env_assignment(key.rstrip("+"), val, child, in_shell=False)

    def visit_unset_command(self, node: Any, stdin: Stdin) -> None:
        keyword = node.children[0].type if node.children else ""
        argv = [keyword]
        spans: list[SpanT] = [self.src.span(node)]
        for child in node.named_children:
            if child.type in WORD_TYPES or child.type == "variable_name":
                for value in self.words.fields(child):
                    argv.append(value)
                    spans.append(self.src.span(child))
        if keyword == "unset":  # an unset variable expands to nothing (see models.shellstate)
            run_command(self, argv, spans, stdin, {}, self.src.span(node))
        else:
            for name in argv[1:]:
                self.state.variables.pop(name, None)

    # -- simple commands --------------------------------------------------------------------

    def visit_command(self, node: Any, stdin: Stdin) -> None:
        alternatives = self.state.alternatives
        if alternatives and self.alternative is None:
            text = self.src.node_text(node)
            counts = [len(values) for name, (mark, values) in alternatives.items()
                      if ("$" + name in text or "${" + name in text) and self.state.variables.get(name) is mark]
            cwd_entry = alternatives.get(CWD_KEY)
            if cwd_entry is not None and cwd_entry[0] is self.state.cwd:
                counts.append(len(cwd_entry[1]))  # every command depends on the working directory
            else:
                cwd_entry = None
            if counts:
                pending = self.redirect_words
                start = self.state.cwd
                ends: list[str] = []
                try:
                    for index in range(max(counts)):  # once per value a branch may have left
                        self.alternative = index
                        self.redirect_words = pending
                        self.state.cwd = start if cwd_entry is None else cwd_entry[1][index % len(cwd_entry[1])]
                        self.simple_command(node, stdin)
                        ends.append(self.state.cwd)
                finally:
                    self.alternative = None
                self.state.cwd = settle_cwd(self.state, ends, cwd_entry)  # (`cd "$D"`: one directory per value)
                return
        saw, self.saw_default = self.saw_default, False
        pending = self.redirect_words
        self.simple_command(node, stdin)
        if self.saw_default and not self.use_defaults:
            self.with_defaults(self.simple_command, (node, stdin), pending)
        self.saw_default = saw or self.saw_default

    def visit_for_statement(self, node: Any, stdin: Stdin) -> None:
        """A ``for`` loop (:class:`ControlFlow`'s), walked again when its words met
        ``${P:-word}`` of an unknown ``P`` (see :meth:`visit_command`)."""
        if node.start_byte > 6 and self.src.data[node.start_byte - 1] in b" \t" and \
                self.coprocess(node, stdin, Walker.visit_for_statement):
            return
        saw, self.saw_default = self.saw_default, False
        body = node.child_by_field_name("body")
        if body is not None and "&" in self.src.node_text(body):
            from stockade.analyzer.models.fanout import background_loop

            background_loop(self, node, body)
        ControlFlow.visit_for_statement(self, node, stdin)
        if self.saw_default and not self.use_defaults:
            self.with_defaults(lambda n, s: ControlFlow.visit_for_statement(self, n, s), (node, stdin), None)
        self.saw_default = saw or self.saw_default

    def with_defaults(self, walk: Any, args: tuple[Any, ...], pending: tuple[Any, list[Any]] | None) -> None:
        """Walk again, on a copy of the state, with ``${P:-word}`` of unknown ``P`` giving
        ``word`` (one of the values it may have: its effects are judged too); a working
        directory that differs is either (``cd ${D:-dir}``)."""
        saved = self.state
        self.state = saved.copy()
        self.use_defaults = True
        self.redirect_words = pending
        try:
            walk(*args)
            other = self.state.cwd
        finally:
            self.use_defaults = False
            self.state = saved
        if other != saved.cwd:
            saved.cwd = settle_cwd(saved, [saved.cwd, other])
        self.settle_possible()

    def assign_possible(self, name: str, value: str) -> None:
        """``${P:=word}`` of an unknown ``P``: after the command, ``P`` is its unknown value or
        ``word`` (see :meth:`settle_possible`)."""
        target = nameref_target(self, name)  # (a nameref: the variable it refers to)
        name = target if target else name
        if not self.use_defaults and _IDENT_RE.match(name):
            self.possible = [*(self.possible or ()), (name, value)]

    def settle_possible(self) -> None:
        """The variables ``${P:=word}`` may have set: a command naming one is walked once per
        value (see :meth:`visit_command`)."""
        possible, self.possible = self.possible, None
        state = self.state
        for name, value in possible or ():
            mark = "".join([UNKNOWN, UNKNOWN])
            state.alternatives = dict(state.alternatives) if state.alternatives else {}
            state.alternatives[name] = (mark, (UNKNOWN, value))
            state.variables[name] = mark

    def simple_command(self, node: Any, stdin: Stdin) -> None:
        """Walk one simple command (:meth:`visit_command`, for one set of alternatives)."""
        words: list[Any] | None = None  # more arguments, which the grammar hung on a redirection
        if self.redirect_words is not None and self.redirect_words[0] == node:
            words = self.redirect_words[1]
            self.redirect_words = None
        prefix: list[tuple[str, str, Any]] = []
        argv: list[str] = []
        spans: list[SpanT] = []
        redirects: list[Any] = []
        source = self.src
        fields = self.words.fields
        # a plain word (the common case) is its own one field: no expander needed
        text = source.text if source.sliceable else None
        base = source.base if source.direct else None
        inert = _INERT_WORD_RE.fullmatch
        kinds = KIND_NAMES
        last_end = -1  # the end of the last word or assignment (a word starting there continues it)
        first = 0  # where its fields start in argv
        glued = self.glued
        rest: Any = None  # a word that starts the next line (see glued_lines)
        for child in node.children:
            kind = kinds.get(child.kind_id)
            if kind is None:
                kind = kinds[child.kind_id] = child.type
            if glued is not None and child.id in glued:
                rest = child
                break
            if kind == "word" or kind == "command_name":
                if child.start_byte == last_end:
                    self.join_word(child, first, argv, spans, prefix)
                    last_end = child.end_byte
                    continue
                last_end = child.end_byte
                first = len(argv)
                subs = (child,) if kind == "word" else child.named_children
                for sub in subs:
                    if text is not None and (sub is child or kinds.get(sub.kind_id) == "word"):  # (child: a word)
                        start, end = sub.start_byte, sub.end_byte
                        value = text[start:end]
                        if inert(value) is not None:
                            argv.append(value)
                            spans.append((base + start, base + end) if base is not None else source.span(sub))
                            continue
                    span = source.span(sub)
                    for value in fields(sub):
                        argv.append(value)
                        spans.append(span)
            elif kind == "variable_assignment":
                last_end = child.end_byte
                prefix.append(self.assignment_value(child))
            elif kind in _REDIRECTS:  # the grammar's `redirect` field holds exactly these
                redirects.append(child)
            elif kind in WORD_TYPES and child.is_named:
                if child.start_byte == last_end:
                    self.join_word(child, first, argv, spans, prefix)
                    last_end = child.end_byte
                    continue
                last_end = child.end_byte
                first = len(argv)
                span = source.span(child)
                for value in fields(child):
                    argv.append(value)
                    spans.append(span)
            elif child.is_named and kind != "comment":
                if kind == "subshell":  # `x (p)`: bash reads `x (` as a function definition's start
                    self.syntax_error(f"`(` after the command word `{clip(source.node_text(node.children[0]))}`",
                                      source.span(child))
                self.walk(child, stdin)
        if argv and (argv[0] in _NOT_A_COMMAND or argv[0] in _KEYWORD_PREFIXES or argv[0][:2] == "} "):
            self.reserved_word(node, argv)
        command_stdout = None
        if redirects:
            if words is None:
                words = []
            outer = self.stdout_file, self.stdin_file
            self.stdout_file = self.stdin_file = None
            for child in redirects:
                if child.type == "herestring_redirect":
                    stdin = self.herestring(child)
                elif child.type == "heredoc_redirect":
                    stdin = self.heredoc(child, stdin, [], words)
                else:
                    self.redirect(child, words)
            if self.stdin_file is not None:  # (`< /dev/zero cat`: the device's endless output, a known file)
                stdin = self.stdin_from(self.stdin_file[0], stdin)
            if self.stdout_file is not None:
                command_stdout = self.stdout_file[0].path
            self.stdout_file, self.stdin_file = outer
        if self.dash_word is not None and self.dash_word[0] == node:  # (see redirected)
            argv.append("-")
            spans.append(self.dash_word[1])
            self.dash_word = None
        if words:
            self.add_words(words, argv, spans)
        if not argv:
            for name, value, _ in prefix:
                if name != UNKNOWN:
                    self.state.variables[name] = value
            if rest is not None:
                self.glued_rest(node, rest)
            return
        env: dict[str, str] = {}
        if prefix:  # (the program they are judged for; a command walked meanwhile leaves it as it was)
            saved_program, self.env_program = self.env_program, argv[0]
            for name, value, value_node in prefix:
                if name == UNKNOWN:
                    continue
                env[name] = value
                self.effects.append(EnvChange(name, self.src.span(node)))
                self.env_assignment(name, value, value_node if value_node is not None else node, in_shell=False)
            self.env_program = saved_program
        if argv == ["exec"] and command_stdout is not None:  # (`exec > f`: every later command's output)
            self.exec_stdout = None if command_stdout in _NULL_FILES else command_stdout
        saved_stdout, self.command_stdout = self.command_stdout, command_stdout
        try:
            run_command(self, argv, spans, stdin, env, self.src.span(node))
        finally:
            self.command_stdout = saved_stdout
        if rest is not None:
            self.glued_rest(node, rest)

    def glued_rest(self, node: Any, rest: Any) -> None:
        """The line the grammar glued on the command ``node`` from the word ``rest`` on (see
        :meth:`glued_lines`): the next command, run in this shell."""
        self.nested_script(self.src.data[rest.start_byte + 1:node.end_byte].decode("utf-8", "surrogateescape"),
                           self.src.span(rest), exact=True, subshell=False)

    def reserved_word(self, node: Any, argv: list[str]) -> None:
        """A command named by a reserved word that cannot start one (``fi``, ``then``, ``}``…),
        or ``time``/``coproc`` followed by one (or ``coproc`` by nothing): when the word is
        written unquoted as the command's first word (after an assignment or a redirection
        it is an ordinary word), bash stops there with a syntax error."""
        word = argv[0]
        child = node.children[0] if node.children else None
        if child is not None and child.type != "command_name":
            # `>f x=1⏎do`: tree-sitter-bash continues the command on the next line; bash ends
            # it at the newline, and the word starts a new command there
            name = node.child_by_field_name("name")
            previous = name.prev_sibling if name is not None else None
            if previous is not None and b"\n" in self.src.data[previous.end_byte:name.start_byte]:
                child = name
        if child is None or child.type != "command_name":
            return
        text = self.src.node_text(child)
        if text[:2] == "} ":  # (tree-sitter-bash reads `} ]]` and `} }` as one word, expanded to one or two)
            text = "}"
        if word[:2] == "} ":
            word = "}"
        if text != word:
            return
        if word in _NOT_A_COMMAND:
            self.syntax_error(f"`{word}` cannot start a command", self.src.span(child))
            return
        rest = argv[1:]
        while rest and (rest[0] in ("!", "time") or (rest[0] in ("-p", "--") and word == "time")):
            word = "time" if rest[0] == "time" else word  # (`! time`, `time !`, `! !`: prefixes of one command)
            rest = rest[1:]
        if rest[:1] and rest[0][:2] == "} ":  # (as above)
            rest = ["}", *rest[1:]]
        if rest[:1] == ["coproc"]:
            word, rest = "coproc", rest[1:]
        if word == "coproc" and len(rest) >= 2 and rest[1] in ("while", "until", "for", "if", "case", "select", "{",
                                                               "[["):
            # `coproc NAME while …` that the parse left as words (a well-formed one was read as the
            # compound it is: see parse.hide_prefix_words)
            self.syntax_error(f"`coproc {rest[0]}` followed by an unfinished `{rest[1]}`", self.src.span(node))
            return
        if word == "coproc" and len(rest) >= 2 and rest[1] in _NOT_A_COMMAND:  # `coproc NAME then`
            rest = rest[1:]
        if (rest[:1] and (rest[0] in _NOT_A_COMMAND or (word == "coproc" and rest[0] == "coproc"))) or (
                word == "coproc" and not rest):
            what = f"`{rest[0]}`" if rest else "nothing"
            self.syntax_error(f"`{word}` followed by {what}", self.src.span(node))
        elif word == "time" and not rest and node.next_sibling is not None and \
                node.next_sibling.type in ("&&", "||", "|", "|&"):  # `time || x`: time wants a pipeline
            self.syntax_error(f"`time` followed by `{node.next_sibling.type}`", self.src.span(node))

    def piped_negations(self, source: Source) -> None:
        """``a | ! b``: ``!`` starts a pipeline, never a part after ``|``: a syntax error to
        bash that tree-sitter-bash reads as a negated part."""
        stack = [source.tree.root_node]
        while stack:
            node = stack.pop()
            previous = None
            for child in node.children:
                if child.type == "negated_command" and node.type == "pipeline" and previous in ("|", "|&"):
                    self.syntax_error(f"`!` after `{previous}`", source.span(child), source)
                    return
                previous = child.type
                if child.child_count:
                    stack.append(child)

    def glued_lines(self, source: Source) -> None:
        """A line that starts with a backslash (``git status⏎\\rm -rf /etc``): tree-sitter-bash
        reads it as more words of the command on the line before; bash, as a command of its own.
        The words that start at such a newline are marked: :meth:`simple_command` ends the
        command there and walks the rest as the next command."""
        data = source.data
        root = source.tree.root_node
        position = data.find(b"\n\\")
        while position != -1:
            count = 0  # (a newline after an odd run of backslashes is a line continuation)
            while position - count - 1 >= 0 and data[position - count - 1] == 0x5C:
                count += 1
            if count % 2:
                position = data.find(b"\n\\", position + 2)
                continue
            node = root.descendant_for_byte_range(position, position + 1)
            while node is not None and node.type not in ("word", "command_name") and node.start_byte == position:
                node = node.parent
            if node is not None and node.start_byte == position and node.type == "word" and \
                    node.parent is not None and node.parent.type == "command_name":
                node = node.parent  # (`x=1⏎\\rm …`: the grammar made it the command name)
            if node is not None and node.start_byte == position and node.type in ("word", "command_name") and \
                    node.parent is not None and node.parent.type == "command":
                if self.glued is None:
                    self.glued = set()
                self.glued.add(node.id)
            position = data.find(b"\n\\", position + 2)

    def dropped_blanks(self, source: Source) -> None:
        """A backslash-escaped blank between tokens, then ``(``: tree-sitter-bash skips the
        escape as if it were a blank, bash reads a word of one blank, and a ``(`` after a
        word is a syntax error to bash (``\\ (ls)``; bash runs nothing from there on).  Directly
        before ``#`` the grammar starts a comment where bash goes on with the word
        (``ls \\ #; rm -rf ~`` runs ``rm``): unparsable.
        Elsewhere the skipped blank only takes a leading blank off a word, or a word of a
        blank away from an argument list: the analysis judges more than bash runs."""
        data = source.data
        root = source.tree.root_node
        for blank in (b"\\ ", b"\\\t"):
            position = data.find(blank)
            while position != -1:
                after = position + 2
                while data[after:after + 1] in (b" ", b"\t"):
                    after += 1
                comment = data[position + 2:position + 3] == b"#"
                if data[after:after + 1] != b"(" and not comment:
                    position = data.find(blank, position + 2)
                    continue
                count = 0
                while position - count - 1 >= 0 and data[position - count - 1] == 0x5C:
                    count += 1
                if count % 2 == 0:  # (an odd run of backslashes ends in this escape)
                    node = root.descendant_for_byte_range(position, position + 2)
                    inside = node is not None and (node.child_count == 0 or node.type in _BLANK_HOLDERS)
                    while not inside and node is not None:
                        node = node.parent
                        inside = node is not None and node.type in _BLANK_HOLDERS
                    span = source.span(root.descendant_for_byte_range(position, position + 2))
                    if not inside and comment:  # `\ #; cmd`: bash reads the word ` #`, the grammar a comment
                        self.effects.append(Unparsable("a backslash-escaped blank before `#`: bash reads a word, "
                                                       "the shell grammar a comment that hides the rest of the "
                                                       "line", span))
                        return
                    if not inside:
                        self.syntax_error("a backslash-escaped blank (a word to bash, which the shell grammar "
                                          "skips) followed by `(`", span, source)
                        return
                position = data.find(blank, position + 2)

    def syntax_error(self, what: str, span: SpanT, source: Source | None = None) -> None:
        """A syntax error of bash's that tree-sitter-bash accepts: bash runs the lines before
        it, not the rest (the ``unparsable`` verdict; the rest is judged as well).  Not
        reported in a text whose parse has errors already (it is unparsable anyway)."""
        if (source or self.src).tree.root_node.has_error:
            return
        self.effects.append(Unparsable(f"a bash syntax error: {what}; bash does not run the text from there on",
                                       span))

    def stray_terminators(self, source: Source) -> None:
        """``;;``, ``;&`` or ``;;&`` outside a ``case`` item: a syntax error to bash that
        tree-sitter-bash accepts (also: :meth:`dropped_blanks`)."""
        data = source.data
        # (the tests on the text: its ASCII characters are exactly the ASCII bytes of the data,
        # and `in` on a str costs a fraction of `bytes.find`)
        text = source.text
        if "\\" in text and (data.find(b"\\ ") != -1 or data.find(b"\\\t") != -1):
            self.dropped_blanks(source)
        if "!" in text and _PIPED_BANG_RE.search(data) is not None:
            self.piped_negations(source)
        if "\n\\" in text:
            self.glued_lines(source)
        if ";;" not in text and ";&" not in text:
            return
        stack = [source.tree.root_node]
        while stack:
            node = stack.pop()
            for child in node.children:
                kind = child.type
                if kind in (";;", ";&", ";;&") and node.type != "case_item":
                    self.syntax_error(f"`{kind}` outside a `case`", source.span(child), source)
                    return
                if child.child_count:
                    stack.append(child)

    def join_word(self, child: Any, first: int, argv: list[str], spans: list[SpanT],
                  prefix: list[tuple[str, str, Any]]) -> None:
        """Continue the word (or assignment) that ends where ``child`` starts: one shell word
        that tree-sitter-bash split (see :meth:`WordExpander.word_parts`).  Its fields replace
        those from ``first`` in ``argv``; an assignment's value is redone in ``prefix``."""
        group = [child]
        previous = child.prev_sibling
        while previous is not None and previous.end_byte == group[0].start_byte:
            kind = previous.type
            if kind not in _WORD_PIECES and kind != "variable_assignment":
                break
            group.insert(0, previous)
            if kind == "variable_assignment":
                break
            previous = previous.prev_sibling
        if len(group) == 1:  # (a zero-width node between them: not the word before)
            self.add_words(child.named_children if child.type == "command_name" else [child], argv, spans)
            return
        nodes: list[Any] = []
        for node in group:
            nodes.extend(node.named_children if node.type == "command_name" else (node,))
        head = nodes[0]
        if head.type == "variable_assignment":
            prefix[-1] = self.assignment_value(head, nodes[1:])
            return
        del argv[first:], spans[first:]
        source = self.src
        span = (source.span(nodes[0])[0], source.span(nodes[-1])[1])
        values = self.words.word_fields(nodes)
        argv.extend(values)
        spans.extend([span] * len(values))

    def add_words(self, nodes: list[Any], argv: list[str], spans: list[SpanT]) -> None:
        """Add the fields of word nodes to ``argv`` (adjacent nodes are one word)."""
        groups: list[list[Any]] = []
        last_end = -1
        for child in nodes:
            if child.start_byte == last_end:
                groups[-1].append(child)
            else:
                groups.append([child])
            last_end = child.end_byte
        source = self.src
        for group in groups:
            span = (source.span(group[0])[0], source.span(group[-1])[1])
            values = self.words.fields(group[0]) if len(group) == 1 else self.words.word_fields(group)
            argv.extend(values)
            spans.extend([span] * len(values))

    def set_output(self, output: Stdin) -> None:
        """Record what the command just walked writes to stdout (for a following pipe)."""
        self._last_output = output

    # -- paths ------------------------------------------------------------------------------

    def resolve(self, word: str, cwd: str | None = None) -> str:
        """An absolute path for a resolved word (UNKNOWN kept), through recorded symlinks."""
        state = self.state
        base = state.cwd if cwd is None else cwd
        if not state.links:  # a pure function of (home, base, word): memoised
            key = (self.home, base, word)
            found = _RESOLVED.get(key)
            if found is None:
                found = self._resolve(word, base)
                if len(_RESOLVED) >= _RESOLVED_SIZE:
                    _RESOLVED.clear()
                _RESOLVED[key] = found
            return found
        return self._resolve(word, base)

    def _resolve(self, word: str, base: str) -> str:
        """:meth:`resolve` against the directory ``base``."""
        if word == "~" or word.startswith("~/"):
            word = self.home + word[1:]
        if not word.startswith("/"):
            # (unknown parts that are plain names, `$(date +%F)`, start no `/`: below base)
            if word.startswith(UNKNOWN) and not (word[1:2] == "\x02" and plain_names_glob(word) is not None):
                return word
            word = base.rstrip("/") + "/" + word if word else base
        if len(word) > MAX_PATH_CHARS:
            return word  # not judged (the judge refuses it): not worth normalising either
        if UNKNOWN not in word or ("\x02" in word and plain_names_glob(word) is not None):
            links = self.state.links
            if links and "/.." in word:  # (`c/..` through a link is the link target's parent, as the kernel goes)
                word = _physical(word, links)
            word = _magic_path(word, base) if ("/proc/" in word or "/dev/fd" in word) else _normalize(word)
            links = self.state.links
            if links:
                for _ in range(8):
                    changed = False
                    for link, target in links.items():
                        if word == link or word.startswith(link + "/"):
                            word = _normalize(target + word[len(link):])
                            changed = True
                            break
                    if not changed:
                        break
        return word

    def unknown(self, why: str, span: SpanT) -> None:
        """Record code or effects that cannot be seen into."""
        self.effects.append(_new_tuple(Unknown, (why, span)))


#: (the context last walked in, its initial variables): ``$HOME``, ``$WORKSPACE``, ``$TMPDIR``,
#: ``$IFS`` and ``$SHELL`` (the login shell: a POSIX shell, so ``$SHELL -c CODE`` walks CODE),
#: copied for every walk (an agent's commands share one context).
_INITIAL_VARIABLES: tuple[Any, dict[str, str]] = (None, {})


def _fed_command(node: Any) -> bool:
    """Whether ``node`` is a command fed only a here-document, a here-string or a file
    (``cat <<'EOF' …``, ``wc -l < f``), its errors maybe discarded (``2>/dev/null``): what it
    prints is its model's output."""
    return node.type == "redirected_statement" and node.named_children[0].type == "command" and all(
        child.type in ("heredoc_redirect", "herestring_redirect") or child == node.named_children[0]
        or (child.type == "file_redirect" and _input_or_quiet(child)) for child in node.named_children)


#: files that take any amount of output without filling a disk
_NULL_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full"})


def _input_or_quiet(node: Any) -> bool:
    """Whether a ``file_redirect`` is ``< FILE`` or ``2>/dev/null`` (standard output untouched)."""
    text = node.text
    return (text[:1] == b"<" and text[1:2] not in (b"<", b">", b"&")) or \
        text.replace(b" ", b"") == b"2>/dev/null"


#: variables bash itself sets to a decimal number (until they are unset)
_BASH_NUMBERS = frozenset({"RANDOM", "SRANDOM", "BASHPID", "PPID", "UID", "EUID", "SECONDS", "EPOCHSECONDS"})


def _initial_variables(context: Context) -> tuple[Any, dict[str, str]]:
    """Remember ``context``'s initial variables (see :data:`_INITIAL_VARIABLES`)."""
    global _INITIAL_VARIABLES
    _INITIAL_VARIABLES = (context, {"HOME": context.home, "WORKSPACE": context.workspace,
                                    "TMPDIR": context.tmpdir, "IFS": " \t\n", "SHELL": "/bin/sh",
                                    "BASH": "/bin/bash",  # (bash sets it to its own path: `$BASH -c CODE`)
                                    "$": "self"})  # (the shell's pid: `/proc/$$/root` is `/proc/self/root`)
    return _INITIAL_VARIABLES


#: (home, cwd, word) → :meth:`Walker.resolve` without symlinks; cleared when full.
_RESOLVED: dict[tuple[str, str, str], str] = {}
_RESOLVED_SIZE = 4096

#: node kind id → Walker method (``visit_<type>`` or ``generic``), filled as kinds are met.
_VISITORS: dict[int, Any] = {}


#: What :func:`_normalize` changes: an empty, ``.`` or ``..`` component.
_ABNORMAL_RE = re.compile(r"//|/\.\.?(?:/|\Z)")
def _magic_path(path: str, cwd: str) -> str:
    """Normalise an absolute path through the kernel's magic links, component by component
    (``..`` after a link is the parent of its target, as the kernel resolves it):
    ``/proc/self/root`` (also ``thread-self``, ``/proc/PID`` and ``/proc/PID/task/TID``) is
    ``/`` — another process's root is judged as this one's —, ``/proc/self/cwd`` the working
    directory (another process's: not known), ``/dev/fd`` is ``/proc/self/fd``, and a path
    continuing below an open descriptor (``/dev/fd/3/..``) is not known."""
    parts = path.split("/")
    stack: list[str] = []
    for position, part in enumerate(parts):
        if part in ("", "."):
            continue
        if part == "..":
            if stack:
                stack.pop()
            continue
        stack.append(part)
        depth = len(stack)
        if stack[0] == "dev" and depth == 2 and part == "fd":
            stack = ["proc", "self", "fd"]
            continue
        if stack[0] != "proc" or depth < 3:
            continue
        process = stack[1]
        if not (process in ("self", "thread-self") or process.isdigit()):
            continue
        task = depth == 5 and stack[2] == "task" and stack[3].isdigit()
        if depth not in (3, 5) or (depth == 5 and not task):
            if depth == 4 and stack[2] == "fd" and position + 1 < len(parts) and any(parts[position + 1:]):
                return UNKNOWN + "/" + "/".join(p for p in parts[position + 1:] if p)
            continue
        if part == "root":
            stack = []
        elif part == "cwd":
            rest = parts[position + 1:]
            if process not in ("self", "thread-self") or UNKNOWN in cwd:
                return UNKNOWN + "/" + "/".join(p for p in rest if p)
            return _magic_path(cwd.rstrip("/") + "/" + "/".join(rest), "/")
    if stack[:3] == ["proc", "self", "fd"] and path.startswith("/dev/fd"):
        return "/dev/fd/" + "/".join(stack[3:]) if len(stack) > 3 else "/dev/fd"  # (named as written)
    return "/" + "/".join(stack)


def _physical(word: str, links: dict[str, str]) -> str:
    """``word`` (absolute) with each link this text made followed where it stands, before a
    ``..`` after it is taken: ``/w/c/../x`` with ``/w/c`` a link to ``/h/.config`` is ``/h/x``."""
    current = ""
    for part in word.split("/")[1:]:
        if part in ("", "."):
            continue
        if part == "..":
            current = current.rsplit("/", 1)[0]
            continue
        current = current + "/" + part
        for _ in range(8):
            target = links.get(current)
            if target is None:
                break
            current = _normalize(target).rstrip("/")
    return current or "/"


def _normalize(path: str) -> str:
    """Lexically normalise an absolute path (``.``, ``..``, repeated and trailing slashes)."""
    if (path == "/" or path[-1] != "/") and (("//" not in path and "/." not in path) or _ABNORMAL_RE.search(path) is None):
        return path  # already normal: the loop below would rebuild the same text
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


def walk_command(context: Context, command: str, cwd: str | None = None, fast_path: bool = True) -> list[Effect]:
    """All effects of a command or script (``fast_path=False``: tree-sitter for all text)."""
    walker = _new_object(Walker)  # Walker(…): see _new_object
    walker._start(context, command, cwd, fast_path)
    try:
        if not fast_path or not run_simple(walker, command, 0, None, TERMINAL, MAX_DEPTH):  # (run_text, inline)
            walker.parse_and_walk(command)
        exit_trap = walker.exit_trap  # `trap CODE EXIT`: runs at the end, in the state then
        if exit_trap is not None:
            walker.exit_trap = None
            exit_trap()
    except BudgetSpent as spent:
        walker.effects.append(Unknown(f"the analysis stopped at its work budget ({spent.why}); what the command "
                                      "does beyond that is not judged", (0, len(command))))
    except RecursionError:  # a construct nested deeper than the walk's own checks count
        walker.effects.append(Unparsable("nesting too deep to follow (the analysis stopped)", (0, len(command))))
    except ValueError as error:  # Python's limit on converting a number of more than 4300 digits
        if "integer string conversion" not in str(error):
            raise
        walker.effects.append(Unparsable("a number too long to follow (the analysis stopped)", (0, len(command))))
    if Write in map(type, walker.effects):  # a tool's configuration written (`.npmrc`, `.curlrc`): see .models.netconfig
        tool_configs(walker)
    return walker.effects


__all__ = ["Read", "State", "Stdin", "Walker", "Write", "walk_command"]


def _reread_heredoc(body: str) -> str:
    """An unquoted here-document whose body is ``body`` after a first character the grammar
    reads well (it misses the expansions of a body that starts with an escaped backslash)."""
    delimiter = "STOCKADE_EOF"
    while delimiter in body:
        delimiter += "_"
    return f": <<{delimiter}\nx{body}\n{delimiter}\n"
