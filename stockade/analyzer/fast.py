"""An exact fast path for simple commands: no tree-sitter for ``git status`` or ``rm -rf ./build``.

Most commands an agent runs are one program with plain arguments.  For those, a hand lexer
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
* whose first word is not a reserved word or a declaration builtin, and has no ``=``
  (that would be an assignment) and no ``@``, ``%`` or ``+`` (tree-sitter-bash reads
  ``a@``/``a%``/``a+:`` in command position as a malformed variable and reports a syntax
  error, which the analyzer must see the same way);
* with no word starting ``==`` or ``=~`` (the grammar's test operators, which it parses
  differently in a command: ``x == y`` is one argument, a trailing ``==`` an error).

Anything else returns ``None`` and goes to tree-sitter.  ``tests/analyzer/test_fast_path.py``
asserts, over the whole corpus and over generated simple commands, that verdicts (reasons
and spans included) are identical with and without this path.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from stockade.analyzer.effects import SpanT
from stockade.analyzer.words import expand_fields

if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.walker import Stdin, Walker

_UNQUOTED = r"A-Za-z0-9_./:@%+,=~*\-"
_SQ = r"'[ -&(-~\t]*'"                       # printable ASCII except '
_DQ = r'"[ #%-\[\]-_a-~\t]*"'                # printable ASCII except " $ \ ` !
#: One word: unquoted characters and quoted strings, concatenated (no nested quantifiers).
_WORD_RE = re.compile(rf"(?:[{_UNQUOTED}]|{_SQ}|{_DQ})+")
_SIMPLE_RE = re.compile(rf"[ \t]*{_WORD_RE.pattern}(?:[ \t]+{_WORD_RE.pattern})*[ \t]*")
_TEST_OP_RE = re.compile(r"(?:^|[ \t])=[=~]")
_PART_RE = re.compile(rf"([{_UNQUOTED}]+)|'([^']*)'|\"([^\"]*)\"")

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
    if not text.isascii() or _SIMPLE_RE.fullmatch(text) is None or _TEST_OP_RE.search(text):
        return None
    words: list[Word] = []
    for match in _WORD_RE.finditer(text):
        parts: list[tuple[str, str]] = []
        for part in _PART_RE.finditer(match.group()):
            unquoted, single, double = part.groups()
            if unquoted is not None:
                parts.append((unquoted, "lit"))
            else:
                parts.append((single if single is not None else double, "q"))
        words.append((parts, match.start(), match.end()))
    if not words:
        return None
    first, start, end = words[0]
    head = text[start:end]
    if "=" in head or "@" in head or "%" in head or "+" in head or len(first) == 1 and first[0][0] in _NOT_SIMPLE:
        return None
    return words


def run_simple(walker: "Walker", text: str, base: int, collapse: SpanT | None, stdin: "Stdin",
               depth_limit: int) -> bool:
    """Run ``text`` through the models if it is a simple command; False when it is not (the
    caller parses it).  The walker's depth is raised as the tree walk would (program →
    command), so limits trigger at the same nesting."""
    from stockade.analyzer.exec import run_command

    if walker.depth + 2 > depth_limit:
        return False
    words = lex_simple(text)
    if words is None:
        return False
    argv: list[str] = []
    spans: list[SpanT] = []
    for parts, start, end in words:
        span = collapse if collapse is not None else (base + start, base + end)
        for value in expand_fields(parts, walker):
            argv.append(value)
            spans.append(span)
    if not argv:
        return False
    span = collapse if collapse is not None else (base + words[0][1], base + words[-1][2])
    walker.depth += 2
    try:
        run_command(walker, argv, spans, stdin, {}, span)
    finally:
        walker.depth -= 2
    return True
