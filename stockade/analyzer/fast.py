"""An exact fast path for plain commands: no tree-sitter for ``git status`` or ``rm -rf ./build``.

Most commands an agent runs are one program with plain arguments, or a few of them joined
by ``&&``, ``||``, ``;`` and ``|``.  For those, ``str.split`` gives the words the tree walk
would, and then *the same* machinery runs: :func:`~stockade.analyzer.exec.run_command`
(wrappers, nested scripts, per-tool models) and the judge.  Nested code found by a model
(``bash -c '…'``) is handed back to the walker, which tries this path again and otherwise
parses with tree-sitter.

The path takes, conservatively, only text that is:

* plain words — letters, digits and ``- _ . / : @ % + , = ~ *`` — separated by spaces and
  tabs, and the argument ``{}`` (find's and xargs's placeholder, never the command word:
  there tree-sitter-bash reads a compound statement; as an argument it is a concatenation
  of ``{`` and ``}``, whose value is ``{}``); no quotes, no ``$``, no other character;
* whose command words hold none of ``= @ % +`` (no assignment; tree-sitter-bash reads
  ``a@``/``a%``/``a+:`` in command position as a malformed variable and reports a syntax
  error, which the analyzer must see the same way) and are not reserved words or
  declaration builtins;
* with no word starting ``==`` or ``=~`` (the grammar's test operators, which it parses
  differently in a command: ``x == y`` is one argument, a trailing ``==`` an error);
* one such command, or several joined by ``&&``, ``||``, ``;`` and ``|`` standing apart (no
  empty command, no trailing operator, no lone ``&``).  They are walked as the tree walk
  walks ``program``/``list``/``pipeline`` nodes: in order, every part of a pipeline in a
  subshell with the previous part's output as its standard input, and the walker's depth
  raised by the same number of levels.

A word is its own argv field unless it starts with a tilde (then
:func:`~stockade.analyzer.words.expand_fields` expands it, as the tree walk does).  A single
trailing newline is allowed (nested code fed by here-strings and here-documents ends with
one).

Anything else — quotes, expansions, assignments, redirections, comments — returns ``False``
and goes to tree-sitter.  ``tests/analyzer/test_fast_path*.py`` assert, over the whole corpus and
over generated commands, that verdicts (reasons and spans included) are identical with and
without this path.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import SpanT, clip
from stockade.analyzer.exec import Stdin, run_command
from stockade.analyzer.words import expand_fields

_new_tuple = tuple.__new__  # a record without its Python-level __new__ (as in exec.py)

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.walker import Walker

_UNQUOTED = r"A-Za-z0-9_./:@%+,=~*\-"
#: A simple command of plain words whose first word holds none of ``= @ % +`` (no assignment,
#: nothing tree-sitter-bash reads as a malformed variable): all that remains to check is
#: that the command word is not reserved and no word starts with ``==`` or ``=~``.
_PLAIN_SIMPLE_RE = re.compile(rf"[ \t]*[A-Za-z0-9_./:,~*\-]++(?:[ \t]++(?:[{_UNQUOTED}]++|\{{\}}(?![^ \t])))*+[ \t]*+")
#: The characters of plain words, blanks and operators: :func:`_plain_list` splits such text
#: and checks that every operator (``&& || ; |``) stands apart between two commands, that a
#: command's first word holds none of ``= @ % + { }`` (no assignment, nothing tree-sitter-bash
#: reads as a malformed variable or a compound statement) and braces come only as ``{}``.
_PLAIN_LIST_TEXT_RE = re.compile(rf"[{_UNQUOTED} \t;&|{{}}]*+")
#: A character a command's first plain word may not hold (see :data:`_PLAIN_LIST_TEXT_RE`).
_BAD_PLAIN_HEAD_RE = re.compile(r"[=@%+{}]")

#: First words tree-sitter-bash parses as something other than a simple command.
_NOT_SIMPLE = frozenset({
    "if", "then", "elif", "else", "fi", "for", "select", "while", "until", "do", "done", "case", "esac", "in",
    "function", "time", "coproc", "declare", "typeset", "export", "local", "readonly", "unset", "unsetenv",
    "-",  # a lone `-` before `a=b` or `a@b` is dropped or an error to tree-sitter-bash
})

#: A command of plain words, lexed for running: its argv (before tilde expansion), their
#: spans, the command's start and end in the lexed text, and whether a word may start with ``~``.
PlainCommand = tuple[list[str], list[SpanT], int, int, bool]
#: A list's statements (``;``), each of pipelines (``&&``, ``||``), each of commands (``|``).
Statements = list[list[list[PlainCommand]]]


def lex_plain(text: str, base: int = 0, collapse: SpanT | None = None) -> Statements | None:
    """The statements of a plain command or list (see the module docstring), spans offset
    by ``base`` (or all ``collapse``), or None when the path does not take the text (then
    tree-sitter decides)."""
    if ";" in text or "|" in text or "&" in text:
        return _plain_list(text, base, collapse)
    command = _plain_simple(text, base, collapse)
    return None if command is None else [[[command]]]


def run_simple(walker: Walker, text: str, base: int, collapse: SpanT | None, stdin: Stdin,
               depth_limit: int) -> bool:
    """Run ``text`` through the models if it is a plain command or a list of them; False
    when it is not (the caller parses it).  The walker's depth is raised as the tree walk
    would (program → [list →] [pipeline →] command), so limits trigger at the same nesting.
    One final newline (a here-string's, a here-document line's) ends the command as the
    end of text does; it is dropped (any other newline makes the path refuse the text)."""
    if text[-1:] == "\n":
        text = text[:-1]
    if ";" in text or "|" in text or "&" in text:
        return _run_list(walker, text, base, collapse, stdin, depth_limit)
    if walker.depth + 3 > depth_limit:
        return False
    command = _plain_simple(text, base, collapse)
    if command is None:
        return False
    _run_plain(walker, command, base, collapse, stdin, 2)
    return True


def _plain_simple(text: str, base: int, collapse: SpanT | None) -> PlainCommand | None:
    """The :data:`PlainCommand` of a single plain command, or None."""
    if _PLAIN_SIMPLE_RE.fullmatch(text) is None or "==" in text or "=~" in text:
        return None
    return _plain_command(text, text.split(), 0, base, collapse)


def _plain_command(text: str, fields: list[str], offset: int, base: int,
                   collapse: SpanT | None) -> PlainCommand | None:
    """The :data:`PlainCommand` of ``text`` (at ``offset`` in the lexed text; ``fields`` its
    ``str.split()``), text that :data:`_PLAIN_SIMPLE_RE` accepts; None when its command word is
    reserved (tree-sitter reads it as something else than a simple command)."""
    if fields[0] in _NOT_SIMPLE:
        return None
    spans: list[SpanT] = []
    if " ".join(fields) == text:  # one space between words, none around: the offsets add up
        position = offset
        for word in fields:
            end = position + len(word)
            spans.append((base + position, base + end))
            position = end + 1
        start, end = offset, offset + len(text)
    else:
        position = 0
        for word in fields:
            found = text.find(word, position)  # the next word starts at the next non-blank
            position = found + len(word)
            spans.append((base + offset + found, base + offset + position))
        start, end = spans[0][0] - base, spans[-1][1] - base
    if collapse is not None:
        spans = [collapse] * len(fields)
    return fields, spans, start, end, "~" in text


def _plain_list(text: str, base: int, collapse: SpanT | None) -> Statements | None:
    """The statements of text of plain words and operators whose commands open with a word
    holding none of ``= @ % +`` (so no assignments), the operators standing apart (``a && b``,
    not ``a&&b``), or None."""
    if _PLAIN_LIST_TEXT_RE.fullmatch(text) is None or "==" in text or "=~" in text:
        return None
    tokens = text.split()
    exact = " ".join(tokens) == text  # one space between tokens, none around: the offsets add up
    tilde_possible = "~" in text
    braces = "{" in text or "}" in text
    unseen = text.count("&") + text.count("|") + text.count(";")  # operator characters not yet met
    commands: list[PlainCommand] = []
    operators: list[str] = []  # operators[i] joins commands[i] and commands[i + 1]
    fields: list[str] = []
    spans: list[SpanT] = []
    position = start = end = 0
    for token in tokens:
        found = position if exact else text.find(token, position)  # (the next token starts there)
        position = found + len(token) + exact  # (+ 1 for the space after it, when exact)
        if token in _OPERATORS:
            if not fields:  # no command before it
                return None
            unseen -= len(token)
            commands.append((fields, spans if collapse is None else [collapse] * len(fields), start, end,
                             tilde_possible))
            operators.append(token)
            fields = []
            spans = []
            continue
        if not fields:
            start = found
            if not token.isalnum() and _BAD_PLAIN_HEAD_RE.search(token) is not None or token in _NOT_SIMPLE:
                return None
        elif braces and ("{" in token or "}" in token) and token != "{}":
            return None
        end = found + len(token)
        fields.append(token)
        spans.append((base + found, base + end))
    if unseen or not fields:  # an operator inside a token (`a;b`), or at the end
        return None
    commands.append((fields, spans if collapse is None else [collapse] * len(fields), start, end, tilde_possible))
    statements: Statements = [[[commands[0]]]]
    for operator, command in zip(operators, commands[1:], strict=False):
        if operator == "|":  # to the last pipeline
            statements[-1][-1].append(command)
        elif operator == ";":  # a new statement
            statements.append([[command]])
        else:  # `&&`, `||`: a new pipeline of the last statement
            statements[-1].append([command])
    return statements


_OPERATORS = frozenset({"&&", "||", ";", "|"})


def _run_plain(walker: Walker, command: PlainCommand, base: int, collapse: SpanT | None, stdin: Stdin,
               depth: int) -> None:
    """Run a :data:`PlainCommand` ``depth`` levels below the walker's depth, as
    ``Walker.visit_command`` runs the same words (a plain word is its own one field unless it
    starts with a tilde; its span is already in the command)."""
    argv, spans, start, end, tilde_possible = command
    if tilde_possible:
        argv, spans = _tilde_fields(argv, spans, walker)
    span = collapse if collapse is not None else (base + start, base + end)
    walker.depth += depth
    try:
        run_command(walker, argv, spans, stdin, {}, span)
    finally:
        walker.depth -= depth


def _tilde_fields(words: list[str], spans: list[SpanT], walker: Walker) -> tuple[list[str], list[SpanT]]:
    """Plain words with those that start with ``~`` expanded (as :func:`expand_fields`)."""
    argv: list[str] = []
    argv_spans: list[SpanT] = []
    for word, span in zip(words, spans, strict=False):
        if word[0] == "~":
            for value in expand_fields([(word, "lit")], walker):
                argv.append(value)
                argv_spans.append(span)
        else:
            argv.append(word)
            argv_spans.append(span)
    return argv, argv_spans


def _run_list(walker: Walker, text: str, base: int, collapse: SpanT | None, stdin: Stdin,
              depth_limit: int) -> bool:
    """Run a plain list (see :func:`_plain_list`) as the tree walk runs its ``program``,
    ``list`` and ``pipeline`` nodes; False when the text is not one."""
    if walker.depth + 4 > depth_limit:
        return False
    statements = _plain_list(text, base, collapse)
    if statements is None:
        return False
    for statement in statements:
        depth = 2 if len(statement) > 1 else 1  # program [→ list]
        for pipeline in statement:
            if len(pipeline) == 1:
                _run_plain(walker, pipeline[0], base, collapse, stdin, depth + 1)
                continue
            current = stdin
            last = len(pipeline) - 1
            for index, command in enumerate(pipeline):  # as Walker.visit_pipeline / walk_producing
                saved = walker.state
                walker.state = saved.copy()
                try:
                    walker._last_output = None
                    _run_plain(walker, command, base, collapse, current, depth + 2)
                    output = walker._last_output
                    walker._last_output = None
                finally:
                    walker.state = saved
                if index < last:
                    if output is None:
                        output = _new_tuple(Stdin, (None, f"the output of `{clip(text[command[2]:command[3]])}`"))
                    current = output
    return True
