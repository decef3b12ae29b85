"""CMD (``cmd.exe``): a parser of its own for its small grammar, and the walk of its commands.

CMD reads a command line in phases, and so does this module:

1. **Percent expansion** of a whole logical line (a parenthesised block spanning lines is
   one line: its variables are expanded before any of its commands runs): ``%VAR%``,
   ``%VAR:a=b%``, ``%VAR:~s,n%``; a variable the text does not set and Windows does not
   define is not known (its value comes from the environment); ``%1``, ``%*`` and ``%~dp0``
   are not known.  Text a variable expands to is parsed — ``&`` in a value separates
   commands, as in CMD.
2. **Tokens**: ``^`` escapes the next character (``^`` at the end of a line joins the next
   line), ``"…"`` quotes (operators inside are text), the operators ``&``, ``&&``, ``||``,
   ``|``, ``(``, ``)`` and redirections ``<``, ``>``, ``>>``, ``N>``, ``N>&M``.
3. **Statements**: ``(…)`` blocks, ``if [/i] [not] exist|defined|errorlevel|A==B|A op B``
   (both branches are walked), ``for`` (``/d``, ``/r``, ``/l``, ``/f`` with ``'command'``:
   that command is walked, and the loop variable is not known), ``call`` (``call :label``,
   ``call FILE.bat``, ``call COMMAND`` with a second percent expansion), ``start``,
   ``set`` / ``set /a`` / ``set /p``, ``setlocal enabledelayedexpansion`` (``!VAR!``),
   ``cd``/``pushd``/``popd``, labels and ``goto`` (every line is walked, whatever the jumps:
   a superset of what runs), ``rem`` and ``::`` comments.

Built-in commands with effects: ``rmdir``/``rd`` (``/s``: the tree), ``del``/``erase``
(``/s``: below), ``copy``, ``move``, ``ren``, ``mkdir``/``md``, ``type``, ``mklink``; every
other name is a program (:func:`~stockade.analyzer.models.windows.run_windows`: Windows
models, then bash's tool models).  Spans point into the analysed text.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, Execute, Unknown, Unparsable, show
from stockade.analyzer.exec import TERMINAL, Invocation, Stdin
from stockade.analyzer.models import windows as win
from stockade.analyzer.models.net import contact_url
from stockade.analyzer.models.windows import run_windows, unc_host, win_read, win_write
from stockade.analyzer.winpaths import is_mapped_path, windows_environment

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable
    from typing import Any

    from stockade.analyzer.effects import SpanT

#: Statements one CMD text may hold (past it: unparsable).
MAX_STATEMENTS = 20_000
MAX_FOR_VALUES = 64
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_#$'()*+,\-.?@\[\]`{}~]*")
_DYNAMIC = frozenset({"CD", "DATE", "TIME", "RANDOM", "ERRORLEVEL", "CMDEXTVERSION", "CMDCMDLINE", "HIGHESTNUMANODENUMBER"})
_BLANKS = " \t"
_ARG_SEPARATORS = " \t,;="


class Char:
    """(No instances: the expanded text is a string plus a list of source offsets.)"""


def _expand_percent(text: str, offsets: list[int], lookup: Any) -> tuple[str, list[int]]:
    """Phase 1: ``%VAR%`` expansion of ``text`` (``offsets[i]``: where character ``i`` came
    from); returns the expanded text and its offsets."""
    if "%" not in text:
        return text, offsets
    out: list[str] = []
    where: list[int] = []
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if char != "%":
            out.append(char)
            where.append(offsets[index])
            index += 1
            continue
        # %%, %1, %*, %~dp0, %VAR%, %VAR:…%
        nxt = text[index + 1] if index + 1 < length else ""
        if nxt == "%":
            out.append("%%")
            where.extend((offsets[index], offsets[index + 1]))
            index += 2
            continue
        if nxt.isdigit() or nxt == "*":
            out.append(UNKNOWN)
            where.append(offsets[index])
            index += 2
            continue
        if nxt == "~":
            match = re.match(r"~[a-zA-Z$:]*[0-9]", text[index + 1:])
            if match:
                out.append(UNKNOWN)
                where.append(offsets[index])
                index += 1 + match.end()
                continue
        end = text.find("%", index + 1)
        if end == -1:
            out.append(char)
            where.append(offsets[index])
            index += 1
            continue
        body = text[index + 1:end]
        name, colon, modifier = body.partition(":")
        if not name or not _NAME_RE.fullmatch(name):
            out.append(char)
            where.append(offsets[index])
            index += 1
            continue
        value = lookup(name)
        if value is not None and colon and UNKNOWN not in value:
            value = _modify(value, modifier)
        elif colon and value is not None:
            value = UNKNOWN
        if value is None:
            value = UNKNOWN
        out.append(value)
        if value:  # the value's characters point at `%VAR%` (its last one at the closing `%`)
            where.extend([offsets[index]] * (len(value) - 1))
            where.append(offsets[end])
        index = end + 1
    return "".join(out), where


def _modify(value: str, modifier: str) -> str:
    """``%VAR:a=b%`` (replace, case-insensitive; ``*a=b``: up to the first) and ``%VAR:~s,n%``."""
    if modifier.startswith("~"):
        numbers = modifier[1:].split(",")
        try:
            start = int(numbers[0]) if numbers[0] else 0
            count = int(numbers[1]) if len(numbers) > 1 and numbers[1] else None
        except ValueError:
            return UNKNOWN
        part = value[start:]
        return part[:count] if count is not None else part
    old, eq, new = modifier.partition("=")
    if not eq or not old:
        return UNKNOWN
    if old.startswith("*"):
        position = value.lower().find(old[1:].lower())
        return new + value[position + len(old) - 1:] if position != -1 else value
    return re.sub(re.escape(old), lambda _m: new, value, flags=re.IGNORECASE)


# -- tokens --------------------------------------------------------------------------------

class Token:
    """A word (``kind`` ``word``: ``text`` without quotes and carets, ``raw`` as written) or an
    operator (``kind`` the operator), with its span in the analysed text."""

    __slots__ = ("kind", "quoted", "raw", "span", "text")

    def __init__(self, kind: str, text: str, raw: str, span: SpanT, quoted: bool = False):
        self.kind = kind
        self.text = text
        self.raw = raw
        self.span = span
        self.quoted = quoted

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.text!r})"


_OPERATOR_START = "&|<>()\n"
#: A command line of plain words: nothing CMD expands, quotes, escapes or splits at.
_PLAIN_RE = re.compile(r"[ \t]*[^\s%!^&|<>()\",;=@:][^\s%!^&|<>()\",;=]*(?:[ \t]+[^\s%!^&|<>()\",;=]+)*[ \t]*")
_WORD_RE = re.compile(r"\S+")
#: a built-in's name followed by text CMD separates from it (``echo.``, ``cd..``, ``dir/b``)
_NAME_TAIL_RE = re.compile(r"([^\s.(/\\=,;+]+)([.(/\\=,;+].*)$", re.DOTALL)


def tokenize(text: str, where: list[int], base: int) -> list[Token]:
    """Phase 2 over expanded text: words, operators and newlines (spans via ``where``)."""
    if '"' not in text and "^" not in text and "(" not in text and ")" not in text and "\r" not in text:
        return _simple_tokens(text, where, base)
    tokens: list[Token] = []
    index = 0
    length = len(text)

    def span(start: int, end: int) -> SpanT:
        if start >= len(where):
            last = where[-1] + 1 if where else 0
            return (base + last, base + last)
        begin = where[start]
        finish = where[end - 1] + 1 if end - 1 < len(where) and end > start else begin
        return (base + begin, base + max(begin, finish))

    while index < length:
        char = text[index]
        if char in _BLANKS or char == "\r":
            index += 1
            continue
        if char == "\n":
            tokens.append(Token("\n", "\n", "\n", span(index, index + 1)))
            index += 1
            continue
        if char == "&":
            if text.startswith("&&", index):
                tokens.append(Token("&&", "&&", "&&", span(index, index + 2)))
                index += 2
            else:
                tokens.append(Token("&", "&", "&", span(index, index + 1)))
                index += 1
            continue
        if char == "|":
            if text.startswith("||", index):
                tokens.append(Token("||", "||", "||", span(index, index + 2)))
                index += 2
            else:
                tokens.append(Token("|", "|", "|", span(index, index + 1)))
                index += 1
            continue
        if char in "()":
            tokens.append(Token(char, char, char, span(index, index + 1)))
            index += 1
            continue
        if char in "<>" or (char.isdigit() and index + 1 < length and text[index + 1] in "<>"
                            and (index == 0 or text[index - 1] in _BLANKS + "&|()\n")):
            start = index
            if char.isdigit():
                index += 1
            op = text[index]
            index += 1
            if op == ">" and index < length and text[index] == ">":
                index += 1
            if index < length and text[index] == "&":
                index += 1
                while index < length and text[index].isdigit():
                    index += 1
                tokens.append(Token("dup", text[start:index], text[start:index], span(start, index)))
                continue
            kind = "<" if op == "<" else (">>" if text[start:index].endswith(">>") else ">")
            tokens.append(Token(kind, kind, text[start:index], span(start, index)))
            continue
        # a word
        start = index
        parts: list[str] = []
        quoted = False
        while index < length:
            char = text[index]
            if char == '"':
                quoted = True
                close = text.find('"', index + 1)
                if close == -1:
                    close = text.find("\n", index + 1)
                    if close == -1:
                        close = length
                    parts.append(text[index + 1:close])
                    index = close
                    break
                parts.append(text[index + 1:close])
                index = close + 1
                continue
            if char == "^":
                if index + 1 < length:
                    if text[index + 1] == "\n":  # a continued line
                        index += 2
                        continue
                    parts.append(text[index + 1])
                    index += 2
                    continue
                index += 1
                continue
            if char in _BLANKS or char in "&|<>\n\r" or char in "()":
                if char in "()" and not _paren_is_operator(text, index, tokens, start):
                    parts.append(char)
                    index += 1
                    continue
                break
            parts.append(char)
            index += 1
        tokens.append(Token("word", "".join(parts), text[start:index], span(start, index), quoted))
    return tokens


_SIMPLE_TOKEN_RE = re.compile(r"(?P<dup>(?<![^\s&|])[0-9]?>>?&[0-9]*|(?<![^\s&|])[0-9]?<&[0-9]*)"
                              r"|(?P<redir>(?<![^\s&|])[0-9](?=[<>])[<>]>?|>>|[<>])"
                              r"|(?P<op>&&|\|\||[&|\n])|(?P<word>[^\s&|<>]+)")


def _simple_tokens(text: str, where: list[int], base: int) -> list[Token]:
    """:func:`tokenize` for text without quotes, carets or parentheses (a regular language)."""
    tokens: list[Token] = []
    for match in _SIMPLE_TOKEN_RE.finditer(text):
        start, end = match.span()
        span = (base + where[start], base + where[end - 1] + 1)
        kind = match.lastgroup
        value = match.group()
        if kind == "word":
            tokens.append(Token("word", value, value, span))
        elif kind == "op":
            tokens.append(Token(value, value, value, span))
        elif kind == "dup":
            tokens.append(Token("dup", value, value, span))
        else:
            op = "<" if "<" in value else (">>" if value.endswith(">>") else ">")
            tokens.append(Token(op, op, value, span))
    return tokens


def _paren_is_operator(text: str, index: int, tokens: list[Token], word_start: int) -> bool:
    """``(`` opens a block only where a command starts; ``)`` always may close one (the
    parser decides by its depth: outside a block it is text again)."""
    if text[index] == ")":
        return True
    return word_start == index and (not tokens or tokens[-1].kind in ("&", "&&", "||", "|", "(", "\n"))


# -- the walk ------------------------------------------------------------------------------

class CmdRun:
    """One CMD text being walked, with its variables (upper-case names) and options."""

    def __init__(self, walker: Any, env: dict[str, str], delayed: bool, collapse: SpanT | None):
        self.walker = walker
        self.defaults = windows_environment(walker.context)
        self.variables: dict[str, str] = {name.upper(): value for name, value in env.items()} if env else {}
        self.delayed = delayed
        self.collapse = collapse
        self.statements = 0
        self.for_values: dict[str, str] = {}

    # variables
    def lookup(self, name: str) -> str | None:
        upper = name.upper()
        value = self.variables.get(upper)
        if value is not None:
            return value
        if upper == "CD":
            return self.walker.state.cwd
        if upper in _DYNAMIC:
            return UNKNOWN
        return self.defaults.get(upper)

    def span(self, span: SpanT) -> SpanT:
        return self.collapse if self.collapse is not None else span

    # -- lines
    def run(self, text: str, base: int) -> None:
        """Walk a whole text, one logical line at a time (a block with its lines); a plain
        command line (words only: no character CMD gives a meaning) is split at blanks."""
        if _PLAIN_RE.fullmatch(text):
            tokens = [Token("word", match.group(), match.group(), (base + match.start(), base + match.end()))
                      for match in _WORD_RE.finditer(text)]
            first = tokens[0].text.lower() if tokens else ""
            if first and first not in _BUILTINS and first not in ("if", "for", "else") and "." not in first[:1] \
                    and _NAME_TAIL_RE.match(first) is None:
                # a program with plain arguments: straight to its model
                self.walker.step()
                spans = [self.span(token.span) for token in tokens]
                run_windows(self.walker, [token.text for token in tokens], spans, TERMINAL, {}, spans[0])
                return
            if tokens and not first.startswith(("rem", "::", ":")):
                self.sequence(tokens, 0, len(tokens), 0)
                return
        for start, end in _logical_lines(text):
            line = text[start:end]
            if not line.strip():
                continue
            expanded, where = _expand_percent(line, list(range(start, end)), self.lookup)
            tokens = tokenize(expanded, where, base)
            self.sequence(tokens, 0, len(tokens), 0)

    def sequence(self, tokens: list[Token], start: int, end: int, depth: int) -> int:
        """Walk statements in ``tokens[start:end]``; returns where it stopped (a ``)`` at depth)."""
        index = start
        while index < end:
            kind = tokens[index].kind
            if kind in ("&", "&&", "||", "\n"):
                index += 1
                continue
            if kind == ")":
                if depth > 0:
                    return index
                index += 1  # a stray `)` outside a block: text CMD ignores here
                continue
            index = self.pipeline(tokens, index, end, depth)
        return index

    def pipeline(self, tokens: list[Token], start: int, end: int, depth: int) -> int:
        stdin: Stdin = TERMINAL
        index = start
        while True:
            index, output = self.command(tokens, index, end, depth, stdin)
            if index < end and tokens[index].kind == "|":
                stdin = output or Stdin(None, "the output of the previous command")
                index += 1
                continue
            return index

    def command(self, tokens: list[Token], start: int, end: int, depth: int,
                stdin: Stdin) -> tuple[int, Stdin | None]:
        """One command (a block or a simple command with its redirections)."""
        if start >= end:
            return end, None
        self.statements += 1
        self.walker.step()
        if self.statements > MAX_STATEMENTS:
            self.walker.effects.append(Unparsable("the CMD text has more statements than the analyzer follows",
                                                  self.span(tokens[start].span)))
            return end, None
        if tokens[start].kind == "(":
            close = self.sequence(tokens, start + 1, end, depth + 1)
            if close >= end or tokens[close].kind != ")":
                self.walker.effects.append(Unparsable("a `(` block that is not closed", self.span(tokens[start].span)))
                return end, None
            index = close + 1
            index = self.redirections(tokens, index, end)
            # `) else (`
            if index < end and tokens[index].kind == "word" and tokens[index].text.lower() == "else":
                index += 1
            return index, None
        words: list[Token] = []
        index = start
        redirects: list[tuple[Token, Token | None]] = []
        while index < end:
            token = tokens[index]
            kind = token.kind
            if kind == "word":
                words.append(token)
                index += 1
                continue
            if kind in ("<", ">", ">>"):
                target = tokens[index + 1] if index + 1 < end and tokens[index + 1].kind == "word" else None
                redirects.append((token, target))
                index += 2 if target is not None else 1
                continue
            if kind == "dup":
                index += 1
                continue
            if kind == ")" and depth == 0:
                words.append(Token("word", ")", ")", token.span))
                index += 1
                continue
            if kind == "(" and words and words[0].text.lower().lstrip("@") == "for" and words[-1].text.lower() == "in":
                # the set of a `for`: words up to the matching `)`
                nesting = 0
                while index < end:
                    token = tokens[index]
                    if token.kind == "(":
                        nesting += 1
                    elif token.kind == ")":
                        nesting -= 1
                    words.append(token if token.kind == "word" else Token("word", token.text, token.raw, token.span,
                                                                          token.quoted))
                    index += 1
                    if nesting == 0:
                        break
                continue
            if kind == "(" and words and _wants_block(words):
                # the body of if/for/else: walk the words so far as a prefix, then the block
                after = self.simple(words, stdin, tokens, index, end, depth)
                self._redirect(redirects)
                return after, None
            if kind == "(" and words:
                words.append(Token("word", "(", "(", token.span))
                index += 1
                continue
            break
        self._redirect(redirects)
        if not words:
            return index, None
        output = self.simple_words(words, stdin)
        return index, output

    def redirections(self, tokens: list[Token], index: int, end: int) -> int:
        redirects: list[tuple[Token, Token | None]] = []
        while index < end and tokens[index].kind in ("<", ">", ">>", "dup"):
            token = tokens[index]
            if token.kind == "dup":
                index += 1
                continue
            target = tokens[index + 1] if index + 1 < end and tokens[index + 1].kind == "word" else None
            redirects.append((token, target))
            index += 2 if target is not None else 1
        self._redirect(redirects)
        return index

    def _redirect(self, redirects: list[tuple[Token, Token | None]]) -> None:
        for op, target in redirects:
            if target is None:
                self.walker.effects.append(Unparsable("a redirection without a file", self.span(op.span)))
                continue
            inv = self.invocation(["redirect", self.word(target)], [op.span, target.span])

            if op.kind == "<":
                win_read(inv, inv.argv[1], 1)
            else:
                win_write(inv, inv.argv[1], 1)

    def word(self, token: Token) -> str:
        """A word's value at run time: ``!VAR!`` (delayed expansion) and loop variables."""
        text = token.text
        if self.for_values and "%" in text:
            for name, value in self.for_values.items():
                text = re.sub(r"%%?(~[fdpnxsatz]*)?" + re.escape(name), _loop_value(value), text)
        if self.delayed and "!" in text:
            def replace(match: re.Match[str]) -> str:
                value = self.lookup(match.group(1))
                return UNKNOWN if value is None else value
            text = re.sub(r"!([^!:\s]+)(?::[^!]*)?!", replace, text)
        return text

    def invocation(self, argv: list[str], spans: list[SpanT], stdin: Stdin = TERMINAL) -> Invocation:
        spans = [self.span(s) for s in spans]
        return Invocation(self.walker, argv, spans, stdin, {}, spans[0] if spans else (0, 0))

    # -- simple commands
    def simple(self, words: list[Token], stdin: Stdin, tokens: list[Token], index: int, end: int, depth: int) -> int:
        """An ``if``/``for``/``else`` whose body is a block at ``tokens[index]``."""
        self.prefix(words, tokens, index, end, depth)
        close = self.sequence(tokens, index + 1, end, depth + 1)
        if close >= end or tokens[close].kind != ")":
            self.walker.effects.append(Unparsable("a `(` block that is not closed", self.span(tokens[index].span)))
            return end
        after = close + 1
        if after < end and tokens[after].kind == "word" and tokens[after].text.lower() == "else":
            after += 1
        return after

    def prefix(self, words: list[Token], tokens: list[Token], index: int, end: int, depth: int) -> None:
        """What an ``if``/``for`` header does before its body (``for /f`` runs its command)."""
        if words and words[0].text.lower() == "for":
            self.for_header(words)
        elif words and words[0].text.lower() == "if":
            rest = self.if_condition(words)
            if rest:
                self.simple_words(rest, TERMINAL)

    def simple_words(self, words: list[Token], stdin: Stdin) -> Stdin | None:
        """Walk one simple command given as word tokens."""
        while words and words[0].text in ("@",):
            words = words[1:]
        if not words:
            return None
        first = words[0]
        name = first.text
        if name.startswith("@"):
            name = name.lstrip("@")
            if not name:
                return self.simple_words(words[1:], stdin)
            first = Token("word", name, first.raw, first.span, first.quoted)
            words = [first, *words[1:]]
        low = name.lower()
        if low.startswith(":"):
            return None  # a label or a `::` comment
        if low == "rem" or low.startswith(("rem.", "rem/")):
            return None
        if low == "else":
            return self.simple_words(words[1:], stdin)
        if low == "if":
            rest = self.if_condition(words)
            return self.simple_words(rest, stdin) if rest else None
        if low == "for":
            body = self.for_header(words)
            if body is not None:
                saved = dict(self.for_values)
                try:
                    return self.simple_words(body, stdin)
                finally:
                    self.for_values = saved
            return None
        # `echo.`, `echo(`, `cd..`: the name ends at the first delimiter CMD knows
        match = _NAME_TAIL_RE.match(name) if name[:1] != "." else None
        if match and match.group(1).lower() in _BUILTINS and not first.quoted:
            head, tail = match.group(1), match.group(2)
            if head.lower() in ("echo",) and tail[:1] in ".(":
                return self.builtin("echo", [first, *words[1:]], stdin)
            first = Token("word", head, head, first.span)
            extra = Token("word", tail.lstrip("=,;") if tail[:1] in "=,;" else tail, tail, first.span)
            words = [first, extra, *words[1:]] if extra.text else [first, *words[1:]]
            low = head.lower()
        if low in _BUILTINS:  # (quoted too: strict)
            return self.builtin(low, words, stdin)
        argv = [self.word(w) for w in words]
        spans = [self.span(w.span) for w in words]

        saved_env = self.walker.state.variables
        run_windows(self.walker, argv, spans, stdin, {}, spans[0])
        del saved_env
        return None

    def if_condition(self, words: list[Token]) -> list[Token]:
        """The command of ``if …`` (both branches are walked: the condition is not judged)."""
        index = 1
        while index < len(words) and words[index].text.lower() in ("/i", "not"):
            index += 1
        if index >= len(words):
            return []
        word = words[index].text.lower()
        if word in ("exist", "defined", "errorlevel", "cmdextversion"):
            return words[index + 2:]
        text = words[index].text
        if "==" in text and not text.endswith("=="):
            return words[index + 1:]
        if text.endswith("=="):
            return words[index + 2:]
        if index + 1 < len(words) and words[index + 1].text == "==":
            return words[index + 3:]
        if index + 1 < len(words) and words[index + 1].text.lower() in ("equ", "neq", "lss", "leq", "gtr", "geq"):
            return words[index + 3:]
        self.walker.effects.append(Unparsable("an `if` condition the analyzer does not read",
                                              self.span(words[0].span)))
        return []

    def for_header(self, words: list[Token]) -> list[Token] | None:
        """``for [/d|/r [root]|/l|/f ["opts"]] %V in (SET) do COMMAND``: sets the loop variable
        (known for a literal set, a glob for file names, not known for ``/f``), runs a ``/f``
        set's ``'command'``; returns COMMAND's words."""
        index = 1
        mode = ""
        root: str | None = None
        while index < len(words) and words[index].text[:1] == "/" and len(words[index].text) == 2:
            mode = words[index].text.lower()
            index += 1
            if mode == "/r" and index < len(words) and not words[index].text.startswith("%"):
                root = self.word(words[index])
                index += 1
            elif mode == "/f" and index < len(words) and words[index].quoted and not words[index].text.startswith("%"):
                index += 1  # the options
        if index >= len(words) or not words[index].text.startswith("%"):
            self.walker.effects.append(Unparsable("a `for` loop the analyzer does not read", self.span(words[0].span)))
            return None
        variable = words[index].text.lstrip("%")
        index += 1
        if index >= len(words) or words[index].text.lower() != "in":
            self.walker.effects.append(Unparsable("a `for` loop without `in`", self.span(words[0].span)))
            return None
        index += 1
        # the set: words from `(` to `)` (the tokenizer kept the parentheses in the words)
        items: list[Token] = []
        while index < len(words):
            token = words[index]
            index += 1
            items.append(token)
            if (token.text.endswith(")") and not token.quoted) or token.raw.endswith(")"):
                break
        do = index
        if do >= len(words) or words[do].text.lower() != "do":
            self.walker.effects.append(Unparsable("a `for` loop without `do`", self.span(words[0].span)))
            return None
        values = self.for_set(items, mode, root)
        body = words[do + 1:]
        self.for_values = dict(self.for_values)
        self.for_values[variable] = values[0] if len(values) == 1 else UNKNOWN
        if 1 < len(values) <= MAX_FOR_VALUES and body:
            saved = dict(self.for_values)
            for value in values[1:]:
                self.for_values[variable] = value
                self.simple_words(body, TERMINAL)
            self.for_values = saved
            self.for_values[variable] = values[0]
        return body

    def for_set(self, items: list[Token], mode: str, root: str | None) -> list[str]:
        """The values a ``for`` variable takes."""
        texts = [self.word(t) for t in items]
        joined = " ".join(texts).strip()
        if joined.startswith("("):
            joined = joined[1:]
        if joined.endswith(")"):
            joined = joined[:-1]
        if mode == "/f":
            raw = " ".join(t.raw for t in items).strip().strip("()").strip()
            if raw.startswith(("'", "`")):
                command = raw.strip("'`")
                self.nested(command, items[0].span)
            elif not raw.startswith('"'):

                inv = self.invocation(["for", joined], [items[0].span, items[0].span])
                for name in joined.split():
                    win_read(inv, name, 1)
            return [UNKNOWN]
        if mode == "/l":
            return [UNKNOWN] if UNKNOWN in joined else ["0"]
        values = [part for part in re.split(r"[\s,;]+", joined) if part]
        if not values:
            return [UNKNOWN]
        if mode == "/r":
            base = (root or ".").rstrip("\\/")
            return [base + "\\**\\" + value if value != "." else base for value in values]
        return values

    def nested(self, text: str, span: SpanT) -> None:
        """Walk CMD code found in a ``for /f`` set or a ``call``."""
        run_cmd_code(self.walker, text, self.span(span), exact=self.collapse is None, env=dict(self.variables),
                     delayed=self.delayed)

    def builtin(self, name: str, words: list[Token], stdin: Stdin) -> Stdin | None:
        """The CMD built-in commands."""

        argv = [name, *(self.word(w) for w in words[1:])]
        spans = [w.span for w in words]
        self.walker.effects.append(Execute(tuple(argv), self.span(spans[0])))
        inv = self.invocation(argv, spans, stdin)
        args = _split_args(argv[1:])
        if name in ("echo",):
            text = " ".join(t.raw for t in words[1:]) if len(words) > 1 else ""
            if words[0].text.lower().startswith("echo") and len(words[0].text) > 4:
                text = words[0].text[5:] + (" " + text if text else "")
            value = self.word(Token("word", text, text, words[0].span))
            return Stdin(value + "\n" if UNKNOWN not in value else None, "the output of `echo`")
        if name in ("rmdir", "rd"):
            opts, targets = _cmd_switches(args, context=self.walker.context)
            for word, index in targets:
                win.win_delete(inv, word, index, "s" in opts)
            return None
        if name in ("del", "erase"):
            opts, targets = _cmd_switches(args, context=self.walker.context)
            for word, index in targets:
                win.win_delete(inv, word, index, "s" in opts)
            return None
        if name in ("mkdir", "md"):
            _, targets = _cmd_switches(args, context=self.walker.context)
            for word, index in targets:
                win.win_write(inv, word, index)
            return None
        if name in ("type", "more"):
            _, targets = _cmd_switches(args, context=self.walker.context)
            for word, index in targets:
                win.win_read(inv, word, index)
            return Stdin(None, f"the content of `{show(targets[0][0])}`" if targets else "the output of `type`")
        if name in ("copy",):
            _, targets = _cmd_switches(args, plus=True, context=self.walker.context)
            if not targets:
                return None
            dest = targets[-1] if len(targets) > 1 else (".", None)
            for word, index in targets[:-1] if len(targets) > 1 else targets:
                win.win_read(inv, word, index)
            win.win_write(inv, dest[0], dest[1])
            return None
        if name in ("move",):
            _, targets = _cmd_switches(args, context=self.walker.context)
            if len(targets) >= 2:
                for word, index in targets[:-1]:
                    win.win_rename(inv, word, targets[-1][0], index)
            return None
        if name in ("ren", "rename"):
            _, targets = _cmd_switches(args, context=self.walker.context)
            if len(targets) >= 2:
                source = targets[0][0]
                head = re.split(r"[\\/]", source)
                parent = "\\".join(head[:-1])
                win.win_rename(inv, source, (parent + "\\" if parent else "") + targets[1][0], targets[0][1])
            return None
        if name in ("cd", "chdir", "pushd"):
            rest = [a for a in args if a[0].lower() != "/d"]
            if not rest:
                return None
            target = " ".join(a for a, _ in rest) if name != "pushd" else rest[0][0]
            from stockade.analyzer.winpaths import resolve_variants

            if UNKNOWN in target:
                self.walker.state.cwd = UNKNOWN
            else:

                if unc_host(target):
                    win.win_read(inv, target, rest[0][1])
                if name == "pushd":
                    self.walker.state.dirstack = [*self.walker.state.dirstack, self.walker.state.cwd]
                self.walker.state.cwd = resolve_variants(self.walker, target)[0]
            return None
        if name == "popd":
            stack = self.walker.state.dirstack
            if stack:
                self.walker.state.cwd = stack[-1]
                self.walker.state.dirstack = stack[:-1]
            return None
        if name == "set":
            self.builtin_set(words, inv)
            return None
        if name == "setlocal":
            if any(a.lower() == "enabledelayedexpansion" for a, _ in args):
                self.delayed = True
            return None
        if name == "call":
            self.builtin_call(words, stdin)
            return None
        if name == "start":
            self.builtin_start(words, stdin)
            return None
        if name == "path":
            if args:
                self.variables["PATH"] = " ".join(a for a, _ in args).lstrip("=")
                inv.unknown("`path` changes where programs are found", 1)
            return None
        if name == "mklink":
            win.model_mklink(inv)
            return None
        if name in ("assoc", "ftype"):
            win.model_assoc(inv)
            return None
        if name in ("goto", "exit", "cls", "title", "color", "ver", "vol", "pause", "shift", "endlocal", "prompt",
                    "verify", "break", "date", "time", "dir", "tree", "where", "findstr", "find", "sort",
                    "hostname", "whoami", "systeminfo", "tasklist", "ipconfig", "cmdextversion"):
            if name in ("dir", "tree", "findstr", "find", "sort"):
                for word, index in args:
                    if (word[:1] != "/" or is_mapped_path(word, self.walker.context)) and not (
                            name in ("findstr", "find") and index == 1):
                        win.win_read(inv, word.strip('"'), index)
            return None
        return None

    def builtin_set(self, words: list[Token], inv: Invocation) -> None:
        """``set NAME=VALUE``, ``set "NAME=VALUE"``, ``set /a EXPR``, ``set /p NAME=PROMPT``."""
        if len(words) < 2:
            return
        first = words[1].text
        if first.lower() in ("/a", "/p"):
            rest = " ".join(self.word(w) for w in words[2:])
            body = rest.strip().strip('"')
            if first.lower() == "/p":
                name = body.partition("=")[0].strip()
                if name:
                    self.variables[name.upper()] = UNKNOWN
                return
            for part in body.split(","):
                name, eq, expression = part.partition("=")
                name = name.strip().rstrip("+-*/%&|^<>").strip()
                if eq and name:
                    self.variables[name.upper()] = _arith(expression, self.lookup)
            return
        raw = " ".join(self.word(w) if not w.quoted else w.text for w in words[1:])
        # quotes: `set "X=a b"` (the last quote ends it), `set X="a"` keeps them
        if words[1].quoted and words[1].raw.startswith('"'):
            raw = self.word(words[1]) + (" " + " ".join(self.word(w) for w in words[2:]) if len(words) > 2 else "")
        name, eq, value = raw.partition("=")
        if not eq:
            return
        name = name.strip()
        if not name:
            return
        if value == "":
            self.variables.pop(name.upper(), None)
        else:
            self.variables[name.upper()] = value
        if name.upper() in ("PATH", "PATHEXT", "COMSPEC"):
            inv.unknown(f"`set {name}` changes where programs are found", 1)

    def builtin_call(self, words: list[Token], stdin: Stdin) -> None:
        """``call :label``: the label's lines are walked anyway; ``call FILE.bat``: a batch file
        (not visible); ``call COMMAND``: the command, with a second percent expansion."""
        if len(words) < 2:
            return
        target = words[1].text
        if target.startswith(":"):
            return
        rest = " ".join(w.raw for w in words[1:])
        expanded, _ = _expand_percent(rest.replace("%%", "%"), list(range(len(rest))), self.lookup)
        if expanded != rest:
            self.walker.effects.append(Unknown(f"`call` expands `{show(rest)[:60]}` a second time",
                                               self.span(words[1].span))) if UNKNOWN in expanded else None
            run_cmd_code(self.walker, expanded, self.span(words[1].span), exact=False,
                         env=dict(self.variables), delayed=self.delayed)
            return
        self.simple_words(words[1:], stdin)

    def builtin_start(self, words: list[Token], stdin: Stdin) -> None:
        """``start ["title"] [/d DIR] [/b /wait /min /max /high …] PROGRAM [ARGS]``: PROGRAM runs
        (a URL is opened: the host contacted)."""
        index = 1
        if index < len(words) and words[index].quoted:
            index += 1
        while index < len(words) and words[index].text[:1] == "/":
            if (words[index].text.lower() in ("/d",) and index + 1 < len(words)) or words[index].text.lower() in ("/affinity", "/node"):
                index += 1
            index += 1
        if index >= len(words):
            return
        target = self.word(words[index])
        if "://" in target:

            inv = self.invocation(["start", target], [words[0].span, words[index].span])
            contact_url(inv, target, 1)
            return
        self.simple_words(words[index:], stdin)


_BUILTINS = frozenset({
    "echo", "rmdir", "rd", "del", "erase", "mkdir", "md", "type", "copy", "move", "ren", "rename", "cd", "chdir",
    "pushd", "popd", "set", "setlocal", "endlocal", "call", "start", "path", "mklink", "assoc", "ftype", "goto",
    "exit", "cls", "title", "color", "ver", "vol", "pause", "shift", "prompt", "verify", "break", "date", "time",
    "dir", "rem",
})


def _loop_value(value: str) -> Callable[[re.Match[str]], str]:
    """The replacement of a loop variable reference: the value (``%~fV`` too); another
    modifier (``%~dpV``: a part of the path) is not known."""
    def replace(match: re.Match[str]) -> str:
        modifier = match.group(1)
        return value if not modifier or modifier in ("~", "~f") or UNKNOWN in value else UNKNOWN
    return replace


def _wants_block(words: list[Token]) -> bool:
    """Whether a `(` after these words is a block: ``if … (``, ``for … do (``, ``else (``."""
    first = words[0].text.lower().lstrip("@")
    if first in ("if", "else"):
        return True
    return first == "for" and words[-1].text.lower() == "do"


def _split_args(args: list[str]) -> list[tuple[str, int]]:
    """Arguments of a built-in (argv index), split further at ``,`` and ``;`` (CMD's delimiters)."""
    out: list[tuple[str, int]] = []
    for index, arg in enumerate(args, start=1):
        for part in re.split(r"[,;]", arg) if '"' not in arg else [arg]:
            if part:
                out.append((part, index))
    return out


def _cmd_switches(args: list[tuple[str, int]], plus: bool = False,
                  context: Any = None) -> tuple[set[str], list[tuple[str, int]]]:
    """A built-in's ``/x`` switches (lower-case, value after ``:`` dropped) and its other words
    (``/s/q`` is two switches; ``copy a+b c``: ``plus`` splits at ``+``)."""
    opts: set[str] = set()
    words: list[tuple[str, int]] = []
    for word, index in args:
        if word.startswith("/") and len(word) > 1 and word[1:2] not in "\\/" and not (
                context is not None and is_mapped_path(word, context)):
            for part in word[1:].split("/"):
                if part:
                    opts.add(part.split(":")[0].lower()[:1] if len(part.split(":")[0]) <= 2 else part.lower())
            continue
        for part in (word.split("+") if plus else [word]):
            if part:
                words.append((part, index))
    return opts, words


def _arith(expression: str, lookup: Any) -> str:
    """The value of a ``set /a`` expression when it is a plain number, else not known."""
    text = expression.strip().strip('"')
    return text if re.fullmatch(r"-?[0-9]+", text) else UNKNOWN


def _logical_lines(text: str) -> list[tuple[int, int]]:
    """Split text into logical lines: a line ends at a newline that is not escaped by ``^``
    and is not inside a ``(`` block opened by a command (quotes respected)."""
    if "\n" not in text:
        return [(0, len(text))]
    lines: list[tuple[int, int]] = []
    start = 0
    depth = 0
    quoted = False
    index = 0
    length = len(text)
    at_command = True
    while index < length:
        char = text[index]
        if char == '"':
            quoted = not quoted
        elif char == "\n":
            quoted = False
            if index > 0 and text[index - 1] == "^" and not (index > 1 and text[index - 2] == "^"):
                index += 1
                continue
            if depth == 0:
                lines.append((start, index))
                start = index + 1
            at_command = True
            index += 1
            continue
        elif not quoted:
            if char == "^":
                index += 2
                continue
            if char == "(" and (at_command or _after_keyword(text, start, index)):
                depth += 1
            elif char == ")" and depth > 0:
                depth -= 1
            elif char in "&|":
                at_command = True
                index += 1
                continue
            elif (char == ":" and at_command and text[index:index + 2] == "::") or (char.lower() == "r" and at_command and re.match(r"rem(\s|$)", text[index:index + 4], re.I)):
                end = text.find("\n", index)
                index = length if end == -1 else end
                continue
        if char not in " \t@" and char != "(":
            at_command = False
        index += 1
    lines.append((start, length))
    return lines


def _after_keyword(text: str, start: int, index: int) -> bool:
    before = text[start:index].rstrip().lower()
    return bool(re.search(r"(^|[\s&|(])(do|else)$", before)) or before.startswith(("if ", "@if ")) or bool(
        re.search(r"(^|[\s&|(])if\s", before))


def nested_walk(walker: Any, text: str, span: SpanT, exact: bool,
                body: Callable[[int, SpanT | None], None]) -> None:
    """Walk nested code (CMD or PowerShell) as a child process: ``body(base, collapse)``
    runs with a copy of the walker's state, restored afterwards, within the depth and
    nesting budgets.  ``exact``: ``text`` appears in the analysed command within ``span``
    and spans point into it (``base``); otherwise every effect gets ``span`` (``collapse``)."""
    from stockade.analyzer.walker import MAX_DEPTH, MAX_NESTED_SCRIPTS

    walker.nested_scripts += 1
    if walker.nested_scripts > MAX_NESTED_SCRIPTS or walker.depth > MAX_DEPTH:
        walker.effects.append(Unparsable("nested code too deep to follow", span))
        return
    base = 0
    collapse: SpanT | None = span
    if exact and text:
        found = walker.command.find(text, span[0], max(span[1], span[0] + len(text)))
        if found != -1:
            base, collapse = found, None
    saved = walker.state
    walker.state = saved.copy()
    walker.depth += 1
    try:
        body(base, collapse)
    finally:
        walker.depth -= 1
        walker.state = saved


def run_cmd_code(walker: Any, text: str, span: SpanT, exact: bool = True, env: dict[str, str] | None = None,
                 delayed: bool = False) -> None:
    """Walk ``text`` as CMD code for ``walker`` (a child ``cmd``: see :func:`nested_walk`)."""
    nested_walk(walker, text, span, exact, lambda base, collapse: _run(walker, text, base, collapse, env or {},
                                                                       delayed))


def _run(walker: Any, text: str, base: int, collapse: SpanT | None, env: dict[str, str], delayed: bool) -> None:
    from stockade.analyzer.pwsh import _restore_resolution, _use_windows_resolution

    previous = _use_windows_resolution(walker)
    try:
        CmdRun(walker, env, delayed, collapse).run(text, base)
    finally:
        _restore_resolution(walker, previous)


def walk_cmd(context: Any, command: str, cwd: str | None = None) -> list[Any]:
    """All effects of a CMD command line or batch text (the entry point of ``--shell cmd``)."""
    from stockade.analyzer.pwsh import new_walker
    from stockade.analyzer.walker import BudgetSpent

    walker = new_walker(context, command, cwd)
    try:
        _run(walker, command, 0, None, {}, False)
    except BudgetSpent as spent:
        walker.effects.append(Unknown(f"the analysis stopped at its work budget ({spent.why}); what the command "
                                      "does beyond that is not judged", (0, len(command))))
    except RecursionError:
        walker.effects.append(Unparsable("nesting too deep to follow", (0, len(command))))
    return walker.effects


__all__ = ["run_cmd_code", "tokenize", "walk_cmd"]
