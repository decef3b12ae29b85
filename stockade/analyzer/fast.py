"""An exact fast path for simple commands: no tree-sitter for ``git status`` or ``git commit -m 'x'``.

Most commands an agent runs are one program with plain or quoted arguments, or a few of
them joined by ``&&``, ``||``, ``;`` and ``|``.  For those, this module finds the words the
tree walk would, and then *the same* machinery runs:
:func:`~stockade.analyzer.exec.run_command` (wrappers, nested scripts, per-tool models) and
the judge.  Nested code found by a model (``bash -c '…'``) is handed back to the walker,
which tries this path again and otherwise parses with tree-sitter.

The path takes, conservatively, only text that is:

* ASCII words of letters, digits and ``- _ . / : @ % + , = ~ *``, single-quoted strings (any
  printable ASCII but ``'``) and double-quoted strings without backtick, backslash or ``!``
  whose only ``$`` start ``$NAME`` (never followed by ``[``; the value looked up when the
  command runs, as ``WordExpander.visit_string`` does, never split; not in the command word;
  declined where tree-sitter-bash's nodes leave blanks out — blanks alone between the
  opening quote or an expansion and a ``$`` — or split the word: an expansion later followed
  by ``=`` and another ``$``) — nothing else to expand but a leading tilde — separated by spaces and tabs, and, in text
  without quotes, the argument ``{}`` (find's and xargs's placeholder, never the command word: there
  tree-sitter-bash reads a compound statement; as an argument it is a concatenation of ``{``
  and ``}``, whose value is ``{}``); no ``$`` outside single quotes, no other character;
* whose command words hold none of ``= @ % +`` (no assignment; tree-sitter-bash reads
  ``a@``/``a%``/``a+:`` in command position as a malformed variable and reports a syntax
  error, which the analyzer must see the same way) and are not reserved words or
  declaration builtins (nor start with one, unquoted, followed by a quoted string:
  ``if'x'`` is the keyword to tree-sitter-bash);
* with no word starting ``==`` or ``=~`` (the grammar's test operators, which it parses
  differently in a command: ``x == y`` is one argument, a trailing ``==`` an error);
* one such command, or several joined by ``&&``, ``||``, ``;`` and ``|`` (no empty command,
  no trailing operator, no lone ``&``).
  They are walked as the tree walk walks ``program``/``list``/``pipeline`` nodes: in order,
  every part of a pipeline in a subshell with the previous part's output as its standard
  input, and the walker's depth raised by the same number of levels.

Text without quotes whose operators stand apart (the plain lane) is split with ``str.split``
and its words run as argv directly (a word is its own field unless it starts with a tilde);
other text (quotes, or operators touching words: ``curl x|sh``) is tiled by
one ``findall`` and its words joined by :func:`~stockade.analyzer.words.expand_fields`
(quote removal, a leading tilde).  A single trailing newline is allowed (nested code fed by
here-strings and here-documents ends with one).

:func:`run_simple` also takes, around such a simple command or list, a trailing comment
(``ls  # list``: dropped, as the tree walk skips the program's ``comment`` child) and, for a
simple command, one trailing redirection of a plain word with ``>``, ``>>`` or ``<``
(``echo x >> notes``): tree-sitter-bash reads a ``redirected_statement``, whose redirection
the walk records before it walks the command, one level deeper.  A simple command may start
with assignments ``NAME=value`` of plain or quoted text (``NODE_ENV=test npm test``; not ``_=``,
not ``+=``, the value nonempty, at most 64 characters and not starting with ``=``, and then a
command word without ``:``, which tree-sitter-bash reads as a syntax error): its environment,
each variable an ``EnvChange`` judged by the environment-variable models, as
``Walker.simple_command`` does.  Anything else — ``$`` expansions, assignments alone or in
lists, other redirections — returns ``False`` and goes to tree-sitter.
``tests/analyzer/test_fast_path*.py`` assert, over the whole corpus and over generated
commands, that verdicts (reasons and spans included) are identical with and without this
path.
"""

from __future__ import annotations

import re

from stockade.analyzer.control import CWD_KEY, settle_cwd
from stockade.analyzer.effects import EnvChange, SpanT, Write, clip
from stockade.analyzer.exec import LASTPIPE_KEY, Stdin, run_command
from stockade.analyzer.models.envvars import judge_env_var
from stockade.analyzer.models.fresh import record_written  # (the walker loads the models anyway)
from stockade.analyzer.words import expand_fields, named_value, tilde

_new_tuple = tuple.__new__  # a record without its Python-level __new__ (as in exec.py)

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable
    from typing import Any

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
_SQ = r"'[ -&(-~\t]*+'"                 # printable ASCII except '
_DQ_PLAIN = r'"[ #%-\[\]-_a-~\t]*+"'     # printable ASCII except " \ ` ! $
#: A double-quoted string that may also hold ``$NAME`` (never followed by ``[``).
_DQ = r'"(?:[ #%-\[\]-_a-~\t]++|\$[A-Za-z_][A-Za-z0-9_]*+(?!\[))*+"'
#: A superset of the quoted text the tokenizer accepts, checked before it: outside quotes
#: none of ``< > ( ) ` \ [ ] ! # ? ^ $`` or a newline, double-quoted strings without
#: `` ` \ ! $``.  Text it rejects has a character no token holds and never lexes.
_QUOTED_TEXT_RE = re.compile(r"""(?:[^'"<>()`\\\[\]!#?^\n$]++|'[^']*+'|"(?:[^"`\\!$]++|\$[A-Za-z_])*+")*+""")
#: Tokens for ``findall``: (blanks before it, an operator, a word) — one of the last two set.
#: Text no token matches is skipped by ``findall``: the lexer checks that the tokens' lengths
#: add up to the whole text (less trailing blanks), which only an exact tiling does.
_TOKENS_RE = re.compile(rf"([ \t]*)(?:(&&|\|\||[;|])|((?:[{_UNQUOTED}]++|{_SQ}|{_DQ})++))")
#: A quoted word's parts: unquoted text, a single-quoted string, a double-quoted string.
_PART_RE = re.compile(rf"([{_UNQUOTED}]+)|'([^']*)'|\"([^\"]*)\"")
#: ``$NAME`` in a double-quoted string's content (see :func:`_word_parts`).
_DQ_VAR_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
#: An expansion, later ``=`` and another ``$``: tree-sitter-bash splits some such words
#: (``$x=$HOME/y``), so they are declined.
_EXPANSION_EQ_EXPANSION_RE = re.compile(r"\$[^=]*=.*\$")
#: Text whose first word holds ``= @ % +`` in its unquoted start (which :func:`_head_ok` refuses).
_BAD_HEAD_RE = re.compile(r"[ \t]*[A-Za-z0-9_./:,~*\-]*[=@%+]")
#: A comment to the end of the text: a ``#`` after a blank, then printable ASCII.  The first
#: such ``#`` may lie in a quoted string, but then the text before it holds an unterminated
#: quote, which no lexer accepts; where that text lexes, the ``#`` starts a word: a comment
#: (tree-sitter-bash makes it the program's last child, which the walk skips).
_TRAILING_COMMENT_RE = re.compile(r"[ \t]#[ -~\t]*+\Z")
#: One redirection at the end of the text: blanks, ``>``, ``>>`` or ``<`` (so not ``>&``, ``>|``,
#: ``<<``, ``<(``, ``&>`` or a descriptor's ``2>``), and a plain word (its target).
_TRAILING_REDIRECT_RE = re.compile(rf"[ \t]+(>>|>|<)[ \t]*+([{_UNQUOTED}]++)[ \t]*+\Z")
#: A leading assignment ``NAME=value`` (not ``_=``: a command to tree-sitter-bash) of plain or
#: quoted text, and the blanks after it.
_ASSIGNMENT_RE = re.compile(rf"[ \t]*+(?!_=)([A-Za-z_][A-Za-z0-9_]*+)=((?:[{_UNQUOTED}]++|{_SQ}|{_DQ_PLAIN})++)[ \t]++")
#: A word starting ``==`` or ``=~`` (see the module docstring).
_TEST_OP_RE = re.compile(r"(?:^|[ \t])=[=~]")

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
#: A word of the quoted lane: its parts (``(text, "lit"|"q")`` as in
#: :meth:`~stockade.analyzer.words.WordExpander.parts`), start and end in the lexed text.
Word = tuple[list[tuple[str, str]], int, int]
QuotedStatements = list[list[list[list[Word]]]]


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
    """Run ``text`` through the models if it is a simple command of plain or quoted words or
    a list of them; False when it is not (the caller parses it).  The walker's depth is raised as the tree walk
    would (program → [list →] [pipeline →] command), so limits trigger at the same nesting.
    One final newline (a here-string's, a here-document line's) ends the command as the
    end of text does; it is dropped (any other newline makes the path refuse the text)."""
    if text[-1:] == "\n":
        text = text[:-1]
    if "$" in text and walker.state.alternatives:
        return False  # (the tree walk walks a command naming a variable with alternatives once per value)
    if "#" in text:
        comment = _TRAILING_COMMENT_RE.search(text)
        if comment is not None:  # a comment to the end (the text before it must lex: see the regex)
            text = text[:comment.start()]
    if ">" in text or "<" in text:
        redirect = _TRAILING_REDIRECT_RE.search(text)
        return redirect is not None and _run_redirected(walker, text, redirect, base, collapse, stdin, depth_limit)
    if "=" in text:
        assigned = _ASSIGNMENT_RE.match(text)
        if assigned is not None:
            return _run_assigned(walker, text, assigned, base, collapse, stdin, depth_limit)
    if ";" in text or "|" in text or "&" in text:
        return _run_list(walker, text, base, collapse, stdin, depth_limit)
    if walker.depth + 3 > depth_limit:
        return False
    if _PLAIN_SIMPLE_RE.fullmatch(text) is not None and "==" not in text and "=~" not in text:  # (_plain_simple)
        command = _plain_command(text, text.split(), 0, base, collapse)
        if command is not None:
            _run_plain(walker, command, base, collapse, stdin, 2)
            return True
    if "'" not in text and '"' not in text:
        return False
    statements = lex_quoted(text)
    if statements is None:
        return False
    _run_words(walker, statements[0][0][0], base, collapse, stdin, 2)
    return True


def _run_redirected(walker: Walker, text: str, redirect: re.Match[str], base: int, collapse: SpanT | None,
                    stdin: Stdin, depth_limit: int) -> bool:
    """Run a simple command with one redirection of a plain word at its end (``echo x >> f``,
    ``sort < data``), as the tree walk runs the ``redirected_statement`` tree-sitter-bash reads
    (program → redirected_statement → command, :meth:`~stockade.analyzer.walker.Walker.redirected`):
    the redirection's effect first, then the command — its output recorded as what the file
    holds (``>``, ``>>``), or the known content of a file this text wrote as its input (``<``).
    False when the rest is not one simple command, or the working directory has alternatives
    (the tree walk opens the file in each)."""
    if walker.depth + 3 > depth_limit or walker.state.alternatives:
        return False
    body = text[:redirect.start()]
    plain = None
    words = None
    if ";" in body or "|" in body or "&" in body:
        if "'" not in body and '"' not in body:
            return False
        statements = lex_quoted(body)
        if statements is None or len(statements) > 1 or len(statements[0]) > 1 or len(statements[0][0]) > 1:
            return False  # (a list: its last command alone is redirected, after the others ran)
        words = statements[0][0][0]
    else:
        plain = _plain_simple(body, base, collapse)
        if plain is None:
            if "'" not in body and '"' not in body:
                return False
            statements = lex_quoted(body)
            if statements is None:
                return False
            words = statements[0][0][0]
    operator, target = redirect.group(1), redirect.group(2)
    if target[0] == "~":
        target = tilde(target, walker)
    span = collapse if collapse is not None else (base + redirect.start(2), base + redirect.end(2))
    effects = walker.effects
    walker.depth += 1  # (the redirected statement; the redirection is recorded at its level)
    try:
        walker.file_access(target, span, read=operator == "<", write=operator != "<")
        last = effects[-1]
        if operator != "<":
            if last.__class__ is Write:  # (not a /dev/tcp connection)
                before, walker._last_output = walker._last_output, None
                if plain is not None:
                    _run_plain(walker, plain, base, collapse, stdin, 2)
                else:
                    _run_words(walker, words, base, collapse, stdin, 2)  # type: ignore[arg-type]
                output = walker._last_output
                if output is None:
                    walker._last_output = before
                record_written(walker, last, None if output is None else output.text, operator == ">>")
                return True
        else:
            stdin = walker.stdin_from(last, stdin)
        if plain is not None:
            _run_plain(walker, plain, base, collapse, stdin, 2)
        else:
            _run_words(walker, words, base, collapse, stdin, 2)  # type: ignore[arg-type]
    finally:
        walker.depth -= 1
    return True


def _run_assigned(walker: Walker, text: str, match: re.Match[str] | None, base: int, collapse: SpanT | None,
                  stdin: Stdin, depth_limit: int) -> bool:
    """Run a simple command after leading assignments ``NAME=value`` of plain or quoted text
    (``NODE_ENV=test npm test``), as :meth:`~stockade.analyzer.walker.Walker.simple_command`
    runs a command with a prefix: every assignment an :class:`EnvChange` of the command and
    its variable judged (:func:`~stockade.analyzer.models.envvars.judge_env_var`), then the
    command with them in its environment.  False (tree-sitter decides) for assignments alone,
    a value that is empty, starts with ``=`` or is longer than 64 characters, a command word
    holding ``:`` (``x=1 a:b`` is a syntax error to tree-sitter-bash), anything but one
    simple command after them, or a working directory with alternatives."""
    if walker.depth + 3 > depth_limit or walker.state.alternatives:
        return False
    assignments: list[tuple[str, str, int, int]] = []  # name, value text, value start and end
    first = match.start(1) if match is not None else 0
    position = 0
    while match is not None:
        value = match.group(2)
        if value[0] == "=" or len(value) > 64:
            return False
        assignments.append((match.group(1), value, match.start(2), match.end(2)))
        position = match.end()
        match = _ASSIGNMENT_RE.match(text, position)
    rest = text[position:]
    if not rest:
        return False
    plain = _plain_simple(rest, base + position, collapse)
    words = None
    if plain is None:
        if "'" not in rest and '"' not in rest:
            return False
        statements = lex_quoted(rest)
        if statements is None or len(statements) > 1 or len(statements[0]) > 1 or len(statements[0][0]) > 1:
            return False
        words = statements[0][0][0]
        head = rest[words[0][1]:words[0][2]]
        end = words[-1][2]
    else:
        head = plain[0][0]
        end = plain[3]
    if ":" in head:
        return False
    prefix: list[tuple[str, str, SpanT]] = []
    for name, value, start, stop in assignments:
        if "'" in value or '"' in value:
            parts = _word_parts(value)
            if parts is None:  # (not for a value without `$`)
                return False
            value = "".join([part for part, _ in parts])
            if parts[0][1] == "lit" and value[0] == "~":
                value = tilde(value, walker)
        elif value[0] == "~":
            value = tilde(value, walker)
        prefix.append((name, value, collapse if collapse is not None else (base + start, base + stop)))
    span = collapse if collapse is not None else (base + first, base + position + end)
    if plain is not None:
        _run_plain(walker, plain, base + position, collapse, stdin, 2, (prefix, span))
    else:
        _run_words(walker, words, base + position, collapse, stdin, 2, (prefix, span))  # type: ignore[arg-type]
    return True


def _run_prefixed(walker: Walker, argv: list[str], spans: list[SpanT], stdin: Stdin,
                  assigned: tuple[list[tuple[str, str, SpanT]], SpanT]) -> None:
    """Run a command with the prefix assignments of :func:`_run_assigned` (as the end of
    :meth:`~stockade.analyzer.walker.Walker.simple_command`)."""
    prefix, span = assigned
    env: dict[str, str] = {}
    saved_program, walker.env_program = walker.env_program, argv[0]
    for name, value, value_span in prefix:
        env[name] = value
        walker.effects.append(_new_tuple(EnvChange, (name, span)))
        judge_env_var(walker, name, value, value_span)
    walker.env_program = saved_program
    run_command(walker, argv, spans, stdin, env, span)


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
            if (not token.isalnum() and _BAD_PLAIN_HEAD_RE.search(token) is not None) or token in _NOT_SIMPLE:
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
        _attach(statements, operator, command)
    return statements


def _attach(statements: list[Any], operator: str, command: Any) -> list[Any]:
    """Add ``command`` to a list's ``statements`` after ``operator``: to the last pipeline
    (``|``), as a new statement (``;``), or as a new pipeline of the last statement
    (``&&``, ``||``); the pipeline it is now in."""
    if operator == "|":
        pipeline = statements[-1][-1]
        pipeline.append(command)
    elif operator == ";":
        pipeline = [command]
        statements.append([pipeline])
    else:
        pipeline = [command]
        statements[-1].append(pipeline)
    return pipeline


_OPERATORS = frozenset({"&&", "||", ";", "|"})


def _run_plain(walker: Walker, command: PlainCommand, base: int, collapse: SpanT | None, stdin: Stdin,
               depth: int, assigned: tuple[list[tuple[str, str, SpanT]], SpanT] | None = None) -> None:
    """Run a :data:`PlainCommand` ``depth`` levels below the walker's depth, as
    ``Walker.visit_command`` runs the same words (a plain word is its own one field unless it
    starts with a tilde; its span is already in the command)."""
    argv, spans, start, end, tilde_possible = command
    if tilde_possible:
        argv, spans = _tilde_fields(argv, spans, walker)
    span = collapse if collapse is not None else (base + start, base + end)
    walker.depth += depth
    try:
        if assigned is None:
            run_command(walker, argv, spans, stdin, {}, span)
        else:
            _run_prefixed(walker, argv, spans, stdin, assigned)
    finally:
        walker.depth -= depth


def _tilde_fields(words: list[str], spans: list[SpanT], walker: Walker) -> tuple[list[str], list[SpanT]]:
    """Plain words with those that start with ``~`` expanded (as :func:`expand_fields`)."""
    argv: list[str] = []
    argv_spans: list[SpanT] = []
    for word, span in zip(words, spans, strict=False):
        if word[0] == "~":
            if "{" not in word and word.isascii():  # (expand_fields of one ASCII literal part: its tilde)
                value = tilde(word, walker)
                if value.isascii():
                    argv.append(value)
                    argv_spans.append(span)
                    continue
            for value in expand_fields([(word, "lit")], walker):
                argv.append(value)
                argv_spans.append(span)
        else:
            argv.append(word)
            argv_spans.append(span)
    return argv, argv_spans


def _run_list(walker: Walker, text: str, base: int, collapse: SpanT | None, stdin: Stdin,
              depth_limit: int) -> bool:
    """Run a list of plain (:func:`_plain_list`) or quoted (:func:`lex_quoted`) commands as
    the tree walk runs its ``program``, ``list`` and ``pipeline`` nodes; False when the text
    is not one."""
    if walker.depth + 4 > depth_limit:
        return False
    if "getopts" in text and "$" in text:
        return False  # (getopts may leave values with alternatives, which the tree walk follows)
    plain = _plain_list(text, base, collapse)
    if plain is not None:
        if ("&&" in text or "||" in text) and _stateful_and_or(plain, False):
            return False  # (the tree walk judges both ways of `&&`/`||`: see ControlFlow.visit_list)
        _walk_list(walker, text, plain, _run_plain, base, collapse, stdin)
        return True
    quoted = lex_quoted(text)  # (also plain words whose operators do not stand apart: `a|b`, `a;b`)
    if quoted is None:
        return False
    if ("&&" in text or "||" in text) and _stateful_and_or(quoted, True):
        return False
    _walk_list(walker, text, quoted, _run_words, base, collapse, stdin)
    return True


def _stateful_and_or(statements: list[Any], quoted: bool) -> bool:
    """Whether a statement joined by ``&&``/``||`` runs one of :data:`_STATEFUL` (its first
    word: plain text, or the parts of a quoted word joined)."""
    for statement in statements:
        if len(statement) > 1:
            for pipeline in statement:
                for command in pipeline:
                    first = "".join([value for value, _ in command[0][0]]) if quoted else command[0][0]
                    if first in _STATEFUL:
                        return True
    return False


#: builtins that change the working directory or variables: in an `&&`/`||` list they are left
#: to the tree walk, which judges the list both ways (a first command that fails or not)
_STATEFUL = frozenset({"cd", "pushd", "popd", "read", "readarray", "mapfile", "unset", "export", "declare",
                       "typeset", "local", "set", "source", ".", "eval", "shift", "getopts", "printf", "hash",
                       "alias", "unalias", "enable", "shopt", "builtin", "command", "exec", "let"})


def _walk_list(walker: Walker, text: str, statements: list[Any], run: Callable[..., None], base: int,
               collapse: SpanT | None, stdin: Stdin) -> None:
    """Run a list's statements with ``run`` (:func:`_run_plain` or :func:`_run_words`), as
    the tree walk runs ``program``, ``list`` and ``pipeline`` nodes."""
    for statement in statements:
        depth = 2 if len(statement) > 1 else 1  # program [→ list]
        for pipeline in statement:
            alternatives = walker.state.alternatives
            entry = alternatives.get(CWD_KEY) if alternatives and walker.alternative is None else None
            if entry is not None and entry[0] is walker.state.cwd:  # once per directory (as Walker.visit_command)
                ends: list[str] = []
                for each in entry[1]:
                    walker.state.cwd = each
                    _walk_pipeline(walker, text, pipeline, run, base, collapse, stdin, depth)
                    ends.append(walker.state.cwd)
                walker.state.cwd = settle_cwd(walker.state, ends, entry)
            else:
                _walk_pipeline(walker, text, pipeline, run, base, collapse, stdin, depth)


def _walk_pipeline(walker: Walker, text: str, pipeline: list[Any], run: Callable[..., None], base: int,
                   collapse: SpanT | None, stdin: Stdin, depth: int) -> None:
    """Run one pipeline of a list (each command in a subshell, fed the previous one's output)."""
    if len(pipeline) == 1:
        run(walker, pipeline[0], base, collapse, stdin, depth + 1)
        return
    current = stdin
    last = len(pipeline) - 1
    last_here = LASTPIPE_KEY in walker.state.variables  # (`shopt -s lastpipe`: the last one runs here)
    for index, command in enumerate(pipeline):  # as Walker.visit_pipeline / walk_producing
        saved = walker.state
        if not (last_here and index == last):
            walker.state = saved.copy()
        try:
            walker._last_output = None
            run(walker, command, base, collapse, current, depth + 2)
            output = walker._last_output
            walker._last_output = None
        finally:
            walker.state = saved
        if index < last:
            if output is None:
                start, end = (command[2], command[3]) if run is _run_plain else (command[0][1], command[-1][2])
                output = _new_tuple(Stdin, (None, f"the output of `{clip(text[start:end])}`"))
            current = output


def lex_quoted(text: str) -> QuotedStatements | None:
    """The statements of a command or list of the quoted lane (see the module docstring), as
    words with their parts, or None when the text is not one."""
    if not text.isascii() or (("==" in text or "=~" in text) and _TEST_OP_RE.search(text) is not None) \
            or _QUOTED_TEXT_RE.fullmatch(text) is None or _BAD_HEAD_RE.match(text) is not None:
        return None  # (the last: a first word that _head_ok refuses, e.g. `NAME='…' cmd`, seen before lexing)
    if (text.split(None, 1) or ("",))[0] in _NOT_SIMPLE:
        return None  # (`for f in *; do wc "$f"; done`: a first word that _head_ok refuses, seen before lexing)
    command: list[Word] = []
    pipeline = [command]
    statements: QuotedStatements = [[pipeline]]
    position = 0
    for blank, operator, word in _TOKENS_RE.findall(text):
        start = position + len(blank)
        if word:
            position = start + len(word)
            if "'" in word or '"' in word:
                parts = _word_parts(word)
                if parts is None:
                    return None
                command.append((parts, start, position))
            else:
                command.append(([(word, "lit")], start, position))
            continue
        position = start + len(operator)
        if not command or not _head_ok(text, command):
            return None
        command = []
        pipeline = _attach(statements, operator, command)
    if position != len(text.rstrip(" \t")) or not command or not _head_ok(text, command):
        return None  # (findall skipped text no token matches, or an operator ends the text)
    return statements


def _word_parts(word: str) -> list[tuple[str, str]] | None:
    """A quoted word's parts: ``(text, "lit")`` for unquoted text, ``(text, "q")`` for the
    content of a quoted string, ``(NAME, "v")`` for ``$NAME`` in double quotes (looked up when
    the command runs); None for a shape tree-sitter-bash reads differently: blanks alone
    between the opening quote or an expansion and a ``$`` (the grammar's nodes leave them
    out), an expansion later followed by ``=`` and another ``$`` in the word."""
    parts: list[tuple[str, str]] = []
    for unquoted, single, double in _PART_RE.findall(word):
        if unquoted:
            parts.append((unquoted, "lit"))
        elif "$" not in double:
            parts.append((single or double, "q"))
        else:
            if "=" in word and _EXPANSION_EQ_EXPANSION_RE.search(word) is not None:
                return None
            position = 0
            for name in _DQ_VAR_RE.finditer(double):
                if name.start() > position:
                    between = double[position:name.start()]
                    if not between.strip(" \t"):
                        return None
                    parts.append((between, "q"))
                parts.append((name.group(1), "v"))
                position = name.end()
            if position < len(double) or not parts:
                parts.append((double[position:], "q"))
    return parts


def _head_ok(text: str, command: list[Word]) -> bool:
    """Whether tree-sitter-bash reads the words as the same simple command: the command word
    holds none of ``= @ % +`` (an assignment, or what the grammar reads as a malformed
    variable) and is not a reserved word or declaration builtin, quoted alone or unquoted
    at its start (``'if' x``, ``if'x'``)."""
    parts, start, end = command[0]
    head = text[start:end]
    if "=" in head or "@" in head or "%" in head or "+" in head or "$" in head:
        return False
    first, kind = parts[0]
    return not (first in _NOT_SIMPLE and (kind == "lit" or len(parts) == 1))


def _run_words(walker: Walker, words: list[Word], base: int, collapse: SpanT | None, stdin: Stdin,
               depth: int, assigned: tuple[list[tuple[str, str, SpanT]], SpanT] | None = None) -> None:
    """Expand one command's words and run it ``depth`` levels below the walker's depth, as
    :meth:`~stockade.analyzer.walker.Walker.visit_command` does."""
    argv: list[str] = []
    spans: list[SpanT] = []
    for parts, start, end in words:
        span = collapse if collapse is not None else (base + start, base + end)
        if len(parts) == 1:
            # the lexer's text is ASCII: a quoted string, or a literal without braces or a
            # leading tilde, is its own one field (as expand_fields would return)
            value, kind = parts[0]
            if kind == "q" or (kind == "lit" and "{" not in value and value[0] != "~"):
                argv.append(value)
                spans.append(span)
                continue
        for _, kind in parts:
            if kind == "v":  # `"$NAME"`: its value, quoted (as WordExpander.visit_string)
                parts = [(named_value(walker, value), "q") if kind == "v" else (value, kind) for value, kind in parts]
                break
        for value in expand_fields(parts, walker):
            argv.append(value)
            spans.append(span)
    span = collapse if collapse is not None else (base + words[0][1], base + words[-1][2])
    walker.depth += depth
    try:
        if assigned is None:
            run_command(walker, argv, spans, stdin, {}, span)
        else:
            _run_prefixed(walker, argv, spans, stdin, assigned)
    finally:
        walker.depth -= depth
