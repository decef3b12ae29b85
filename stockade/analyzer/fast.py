"""An exact fast path for simple commands: no tree-sitter for ``git status`` or ``rm -rf ./build``.

Most commands an agent runs are one program with plain arguments, or a few of them joined
by ``&&``, ``||``, ``;`` and ``|``.  For those, a hand lexer
produces the same words the tree walk would — and then *the same* machinery runs:
:func:`~stockade.analyzer.words.expand_fields` (tilde, splitting, quote removal),
:func:`~stockade.analyzer.exec.run_command` (wrappers, nested scripts, per-tool models) and
the judge.  Nested code found by a model (``bash -c '…'``) is handed back to the walker,
which tries this path again and otherwise parses with tree-sitter.

The lexer accepts, conservatively, only text that is:

* ASCII, printable (space and tab separate words; no newline, ``\\r`` or other controls);
* words made of letters, digits and ``- _ . / : @ % + , = ~ *`` — no ``; & | < > ( ) $ ` \\
  { } [ ] ! # ? ^`` or quotes inside other constructs;
* single-quoted strings (any printable ASCII but ``'``) and double-quoted strings without
  ``$``, backtick, backslash or ``!``;
* whose first word is not a reserved word or a declaration builtin (nor starts with one,
  unquoted, followed by a quoted string: ``if'x'`` is the keyword to tree-sitter), and has no ``=``
  (that would be an assignment) and no ``@``, ``%`` or ``+`` (tree-sitter-bash reads
  ``a@``/``a%``/``a+:`` in command position as a malformed variable and reports a syntax
  error, which the analyzer must see the same way);
* with no word starting ``==`` or ``=~`` (the grammar's test operators, which it parses
  differently in a command: ``x == y`` is one argument, a trailing ``==`` an error).

A single trailing newline is allowed (nested code fed by here-strings and here-documents
ends with one).  Lists (:func:`lex_list`): such commands joined by ``&&``, ``||``, ``;`` and ``|`` (no
empty command, no trailing operator, no lone ``&``).  They are walked as the tree walk
walks ``program``/``list``/``pipeline`` nodes: in order, every part of a pipeline in a
subshell with the previous part's output as its standard input, and the walker's depth
raised by the same number of levels.

Anything else returns ``None`` and goes to tree-sitter.  ``tests/analyzer/test_fast_path.py``
asserts, over the whole corpus and over generated simple commands, that verdicts (reasons
and spans included) are identical with and without this path.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from stockade.analyzer.effects import SpanT, clip
from stockade.analyzer.exec import Stdin, run_command
from stockade.analyzer.words import expand_fields

if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.walker import Walker

_UNQUOTED = r"A-Za-z0-9_./:@%+,=~*\-"
_SQ = r"'[ -&(-~\t]*'"                       # printable ASCII except '
_DQ = r'"[ #%-\[\]-_a-~\t]*"'                # printable ASCII except " $ \ ` !
#: One word: unquoted characters and quoted strings, concatenated (no nested quantifiers).
_WORD_RE = re.compile(rf"(?:[{_UNQUOTED}]|{_SQ}|{_DQ})+")
_TEST_OP_RE = re.compile(r"(?:^|[ \t])=[=~]")
_PART_RE = re.compile(rf"([{_UNQUOTED}]+)|'([^']*)'|\"([^\"]*)\"")
#: Tokens for ``findall``: (blanks before it, an operator, a word) — one of the last two set.
#: Text no token matches is skipped by ``findall``: the lexers check that the tokens' lengths
#: add up to the whole text (less trailing blanks), which only an exact tiling does.
_TOKENS_RE = re.compile(rf"([ \t]*)(?:(&&|\|\||[;|])|((?:[{_UNQUOTED}]++|{_SQ}|{_DQ})++))")
#: Text whose first word certainly holds ``= @ % +`` (an assignment, ``a@``…): never lexed.
_BAD_HEAD_RE = re.compile(r"[ \t]*[A-Za-z0-9_./:,~*\-]*[=@%+]")
#: The common case, no quotes at all: the same language restricted to unquoted words.
_PLAIN_TOKENS_RE = re.compile(rf"([ \t]*)(?:(&&|\|\||[;|])|([{_UNQUOTED}]+))")
#: Unquoted text made only of words, blanks and operator characters: ``str.split`` tiles it
#: (blanks are only space and tab), so no regex has to walk the words.
_PLAIN_TEXT_RE = re.compile(rf"[{_UNQUOTED} \t;&|]*")
_OPERATORS = frozenset({"&&", "||", ";", "|"})

#: First words tree-sitter-bash parses as something other than a simple command.
_NOT_SIMPLE = frozenset({
    "if", "then", "elif", "else", "fi", "for", "select", "while", "until", "do", "done", "case", "esac", "in",
    "function", "time", "coproc", "declare", "typeset", "export", "local", "readonly", "unset", "unsetenv",
})

Word = tuple[list[tuple[str, str]], int, int]


def lex_simple(text: str) -> list[Word] | None:
    """The words of a simple command as ``(parts, start, end)``, or None when the text is not
    one (then tree-sitter decides).  ``parts`` are ``(text, "lit"|"q")`` as in
    :meth:`~stockade.analyzer.words.WordExpander.parts`."""
    if not text.isascii() or "=" in text and _TEST_OP_RE.search(text):
        return None
    quoted = _quoted(text)
    if quoted is None:
        return None
    words: list[Word] = []
    position = 0
    if not quoted:
        find = text.find
        for word in text.split():
            if "&" in word or "|" in word or ";" in word:
                return None
            start = find(word, position)
            position = start + len(word)
            words.append(([(word, "lit")], start, position))
        return words if words and _command_head_ok(text, words) else None
    for blank, operator, word in (_TOKENS_RE if quoted else _PLAIN_TOKENS_RE).findall(text):
        if operator:
            return None
        start = position + len(blank)
        position = start + len(word)
        parts = _word_parts(word) if quoted and ("'" in word or '"' in word) else [(word, "lit")]
        words.append((parts, start, position))
    if position != len(text.rstrip(" \t")) or not words or not _command_head_ok(text, words):
        return None
    return words


def _quoted(text: str) -> bool | None:
    """Whether the text has quotes; None when it certainly does not lex (saves the tokenizer's
    pass over text that tree-sitter will parse anyway): unquoted text with a character outside
    words, blanks and operators, text without single quotes holding ``$ ` \\ !`` (which
    only a single-quoted string may contain), or a first word with ``= @ % +`` in its
    unquoted start (:func:`_command_head_ok` refuses it)."""
    if _BAD_HEAD_RE.match(text) is not None:
        return None
    if "'" in text:
        return True
    if '"' not in text:
        return False if _PLAIN_TEXT_RE.fullmatch(text) is not None else None
    return None if "$" in text or "`" in text or "\\" in text or "!" in text else True


def _command_head_ok(text: str, words: list[Word]) -> bool:
    """Whether the first word leaves the command simple for tree-sitter too."""
    first, start, end = words[0]
    head = text[start:end]
    return not ("=" in head or "@" in head or "%" in head or "+" in head
                or first[0][0] in _NOT_SIMPLE and (len(first) == 1 or first[0][1] == "lit"))


def _word_parts(word: str) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = []
    for part in _PART_RE.finditer(word):
        unquoted, single, double = part.groups()
        if unquoted is not None:
            parts.append((unquoted, "lit"))
        else:
            parts.append((single if single is not None else double, "q"))
    return parts


Pipeline = list[list[Word]]
Statement = list[Pipeline]


def lex_list(text: str) -> list[Statement] | None:
    """Simple commands joined by ``&&``/``||`` (a statement's pipelines), ``;`` (statements)
    and ``|`` (a pipeline's commands), or None when the text is anything else."""
    if not text.isascii() or "=" in text and _TEST_OP_RE.search(text):
        return None
    quoted = _quoted(text)
    if quoted is None:
        return None
    command: list[Word] = []
    pipeline: Pipeline = [command]
    statement: Statement = [pipeline]
    statements: list[Statement] = [statement]
    position = 0
    tokens: list[tuple[str, str, str]] | None = None
    if not quoted:
        # blank-separated tokens, each a word or an operator: found by str.split and str.find
        tokens = []
        find = text.find
        for token in text.split():
            if token in _OPERATORS:
                start = find(token, position)
                tokens.append((text[position:start], token, ""))
            elif "&" in token or "|" in token or ";" in token:
                tokens = None  # operators glued to words: the tokenizer below splits them
                break
            else:
                start = find(token, position)
                tokens.append((text[position:start], "", token))
            position = start + len(token)
        position = 0
    if tokens is None:
        tokens = (_TOKENS_RE if quoted else _PLAIN_TOKENS_RE).findall(text)
    for blank, operator, word in tokens:
        start = position + len(blank)
        if word:
            position = start + len(word)
            parts = _word_parts(word) if quoted and ("'" in word or '"' in word) else [(word, "lit")]
            command.append((parts, start, position))
            continue
        position = start + len(operator)
        if not command or not _command_head_ok(text, command):
            return None
        command = []
        if operator == "|":
            pipeline.append(command)
        elif operator == ";":
            pipeline = [command]
            statement = [pipeline]
            statements.append(statement)
        else:
            pipeline = [command]
            statement.append(pipeline)
    if position != len(text.rstrip(" \t")):  # findall skipped text no token matches
        return None
    if not command or not _command_head_ok(text, command):
        return None
    return statements


def run_simple(walker: "Walker", text: str, base: int, collapse: SpanT | None, stdin: "Stdin",
               depth_limit: int) -> bool:
    """Run ``text`` through the models if it is a simple command or a list of them; False
    when it is not (the caller parses it).  The walker's depth is raised as the tree walk
    would (program → [list →] [pipeline →] command), so limits trigger at the same nesting.
    One final newline (a here-string's, a here-document line's) ends the command as the
    end of text does; it is dropped (any other newline makes the lexers refuse the text)."""
    if text[-1:] == "\n":
        text = text[:-1]
    if ";" in text or "|" in text or "&" in text:
        return _run_list(walker, text, base, collapse, stdin, depth_limit)
    if walker.depth + 2 > depth_limit:
        return False
    words = lex_simple(text)
    if words is None:
        return False
    _run_words(walker, words, base, collapse, stdin, 2)
    return True


def _run_list(walker: "Walker", text: str, base: int, collapse: SpanT | None, stdin: "Stdin",
              depth_limit: int) -> bool:
    if walker.depth + 4 > depth_limit:
        return False
    statements = lex_list(text)
    if statements is None:
        return False
    for statement in statements:
        depth = 2 if len(statement) > 1 else 1  # program [→ list]
        for pipeline in statement:
            if len(pipeline) == 1:
                _run_words(walker, pipeline[0], base, collapse, stdin, depth + 1)
                continue
            current = stdin
            last = len(pipeline) - 1
            for index, words in enumerate(pipeline):  # as Walker.visit_pipeline / walk_producing
                saved = walker.state
                walker.state = saved.copy()
                try:
                    walker._last_output = None
                    _run_words(walker, words, base, collapse, current, depth + 2)
                    output = walker._last_output
                    walker._last_output = None
                finally:
                    walker.state = saved
                if index < last:
                    current = output if output is not None else Stdin(
                        None, f"the output of `{clip(text[words[0][1]:words[-1][2]])}`")
    return True


def _run_words(walker: "Walker", words: list[Word], base: int, collapse: SpanT | None, stdin: "Stdin",
               depth: int) -> None:
    """Expand one command's words and run it ``depth`` levels below the walker's depth."""
    argv: list[str] = []
    spans: list[SpanT] = []
    for parts, start, end in words:
        span = collapse if collapse is not None else (base + start, base + end)
        if len(parts) == 1:
            # the lexer's text is ASCII: a quoted string, or a literal without braces or a
            # leading tilde, is its own one field (as expand_fields would return)
            value, kind = parts[0]
            if kind == "q" or "{" not in value and value[0] != "~":
                argv.append(value)
                spans.append(span)
                continue
        for value in expand_fields(parts, walker):
            argv.append(value)
            spans.append(span)
    # every word the lexer accepts expands to at least one field: argv is never empty
    span = collapse if collapse is not None else (base + words[0][1], base + words[-1][2])
    walker.depth += depth
    try:
        run_command(walker, argv, spans, stdin, {}, span)
    finally:
        walker.depth -= depth
