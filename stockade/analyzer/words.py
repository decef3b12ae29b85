"""Shell word expansion over tree-sitter nodes: what argv a word really becomes.

Implements, in bash's order: brace expansion, tilde expansion, parameter expansion
(variables the script assigned, the context's ``$HOME``/``$WORKSPACE``/``$TMPDIR``/``$PWD``,
positional parameters of functions and ``sh -c``), command/process substitution (walked by
the caller, value unknown), arithmetic (walked; value unknown), word splitting on ``$IFS``
for unquoted expansions, and quote removal (``r''m``, ``\\rm``, ``$'\\x72\\x6d'``).

A part whose value the script does not determine becomes :data:`UNKNOWN` — never empty.
Glob characters are kept: a path with ``*`` is judged as a pattern by the judge.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN
from stockade.analyzer.regex import LazyPattern

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Protocol
else:
    Protocol = object  # Scope is a structural type for checkers only

# private characters: quoted brace syntax, split points, quoted tilde
_Q_OPEN, _Q_COMMA, _Q_CLOSE, _SPLIT, _Q_TILDE = "\ue000", "\ue001", "\ue002", "\ue003", "\ue004"
#: an indexed array's elements are held in the scope's variables under ARRAY_KEY + name, each
#: element preceded by ARRAY_SEP (element 0 is also the plain variable, as in bash)
ARRAY_KEY, ARRAY_SEP = "\ue005", "\ue006"
INDEX_RE = re.compile(r"-?[0-9]+")
#: an associative array (``declare -A m``): the plain variable holds ASSOC_MARK, and ASSOC_KEY +
#: name its entries in order, each ARRAY_SEP key ASSOC_SEP value
ASSOC_KEY, ASSOC_SEP, ASSOC_MARK = "\ue007", "\ue008", "\x00\ue007"
#: a nameref (``declare -n r=X``): the variable holds NAMEREF + the name it refers to (``X``,
#: ``a[1]``; empty: not bound yet), resolved each time it is used (see models.shellstate)
NAMEREF = "\x00\ue009"
#: a loop variable over a glob (``for f in *.txt``) holds one of the names the glob matches,
#: and a file name can hold code: LISTED_KEY + name keeps the glob it was set to, and a plain
#: ``$f``/``${f}`` of that value expands between LISTED_OPEN and LISTED_CLOSE until the word
#: it lands in is known (see :func:`resolve_listed`).  LISTED_CLOSE holds UNKNOWN: a mark left
#: anywhere makes the value unknown, never a name
LISTED_KEY, LISTED_OPEN, LISTED_CLOSE = "\ue00alisted:", "\ue00a", "\x00\ue00b"
_LISTED_RE = re.compile("\ue00a([^\ue00a\ue00b]*)\x00\ue00b")
#: characters that make a word code rather than a name (``sh -c "wc -l $f"``; quotes alone do
#: not: ``gzip \\"$f\\"`` names a file)
_CODE_CHARS = frozenset(" \t\n;|&$`()<>")
_UNPROTECT = str.maketrans({_Q_OPEN: "{", _Q_COMMA: ",", _Q_CLOSE: "}", _Q_TILDE: "~"})
_PROTECT = str.maketrans({"{": _Q_OPEN, ",": _Q_COMMA, "}": _Q_CLOSE, "~": _Q_TILDE})
_MAX_BRACE_WORDS = 256
#: A word or value longer than this once expanded is not followed: it is UNKNOWN (``x=$x$x``
#: doubles a value with every statement; bash would hold it, the analyzer does not).
MAX_VALUE_CHARS = 64 * 1024
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
                   "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_RE = LazyPattern(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.S)
_DQ_ESCAPE_RE = re.compile(r'\\([$`"\\\n])')
_HEREDOC_ESCAPE_RE = re.compile(r"\\([$`\\\n])")


def _unescape_heredoc(match: re.Match[str]) -> str:
    return "" if match.group(1) == "\n" else match.group(1)


def _backticks(text: str) -> list[tuple[int, int]]:
    """The spans of the `` `…` `` substitutions in text where a backslash escapes the next
    character (an unterminated one runs to the end of the text)."""
    spans: list[tuple[int, int]] = []
    index = 0
    size = len(text)
    start = -1
    while index < size:
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "`":
            if start == -1:
                start = index
            else:
                spans.append((start, index + 1))
                start = -1
        index += 1
    if start != -1:
        spans.append((start, size))
    return spans


def _slice(source: Any, start: int, end: int) -> str:
    """The parsed text between two byte offsets (as :meth:`Source.node_text` reads a node)."""
    if source.sliceable:
        return source.text[start:end]
    return source.data[start:end].decode("utf-8", "surrogateescape")


_NESTED_CODE_RE = re.compile(r"\$\(|`|<\(|>\(")
#: What a ``$`` expands when a word's text follows it: a name, one digit or a special parameter.
_PARAMETER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")


#: text that :func:`shlex.split` splits at blanks only: no quote, no backslash, and no white
#: space other than shlex's (space, tab, newline, carriage return)
_SHLEX_PLAIN_RE = re.compile(r"[^'\"\\\s]*(?:[ \t\r\n]+[^'\"\\\s]+)*[ \t\r\n]*")  # (no backtracking)


def shlex_split(text: str) -> list[str]:
    """``shlex.split(text)`` (may raise ``ValueError`` as it does); text without quotes or
    backslashes by ``str.split`` (the same words: shlex's lexer costs ~100 Python lines a word)."""
    if _SHLEX_PLAIN_RE.fullmatch(text) is not None:
        return text.split()
    import shlex

    return shlex.split(text)


class Scope(Protocol):
    """What expansion needs from the walker."""

    home: str

    def lookup(self, name: str) -> str | None:
        """The value of a variable (may contain UNKNOWN), or None when unset/unknown."""

    def cwd_text(self) -> str:
        """The current directory (UNKNOWN when not determined)."""

    def substitute(self, node: Any) -> str:
        """Walk a command/process substitution; return its value (usually UNKNOWN)."""

    def assign(self, name: str, value: str) -> None:
        """Set a variable (``${x:=value}``)."""

    def indirect(self, name: str) -> str | None:
        """What ``${!name}`` expands to (None: not known)."""

    def nested_fragment(self, text: str, node: Any) -> None:
        """Walk a text fragment that may hide substitutions (``${x%$(cmd)}``)."""

    def arithmetic(self, node: Any) -> None:
        """Walk an arithmetic node: substitutions and subscripts in variable values."""

    def arith_value(self, value: str | None, node: Any) -> None:
        """A variable's value evaluated as an expression (``i='a[$(cmd)]'; ${x[i]}`` runs cmd)."""

    def spend(self, size: int) -> None:
        """Count ``size`` expanded characters against the analysis's budget (may raise)."""

    def unknown(self, why: str, span: tuple[int, int]) -> None:
        """Record effects that cannot be seen into."""


def decode_ansi_c(body: str) -> str:
    """The value of ``$'…'`` contents (without the quotes).  ``\\xHH`` and ``\\NNN`` are
    bytes, as in bash: one above 0x7F is a ``surrogateescape`` character, and bytes that
    make UTF-8 together are the character they make (``$'\\xc3\\xa1'`` is ``á``, as the
    shell passes it on); ``\\u``/``\\U`` are characters."""
    escaped_bytes = False

    def replace(match: re.Match[str]) -> str:
        nonlocal escaped_bytes
        esc = match.group(1)
        head = esc[0]
        if (head == "u" or head == "U") and len(esc) > 1:
            return chr(min(int(esc[1:], 16), 0x10FFFF))
        if (head == "x" and len(esc) > 1) or head.isdigit():  # (`\x` alone is itself)
            value = int(esc[1:], 16) if head == "x" else int(esc, 8) & 0xFF
            if value < 0x80:
                return chr(value)
            escaped_bytes = True
            return chr(0xDC00 + value)
        if head == "c" and len(esc) == 2:
            return chr(ord(esc[1].upper()) ^ 0x40)
        return _SIMPLE_ESCAPES.get(esc, "\\" + esc)

    value = _ANSI_RE.sub(replace, body)
    if escaped_bytes:
        try:
            value = value.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # (a lone surrogate from `\\u`: refused when parsed or judged)
            pass
    return value


def _unescape_dq(match: re.Match[str]) -> str:
    """A backslash escape in double quotes: the character, or nothing for a line join."""
    char = match.group(1)
    return "" if char == "\n" else char


def _unescape_unquoted(text: str) -> list[tuple[str, str]]:
    """An unquoted word's text: backslash-escaped characters become quoted parts."""
    if "\\" not in text:
        return [(text, "lit")]
    out: list[tuple[str, str]] = []
    i = 0
    buf: list[str] = []
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            if buf:
                out.append(("".join(buf), "lit"))
                buf = []
            if text[i + 1] != "\n":
                out.append((text[i + 1], "q"))
            i += 2
            continue
        buf.append(char)
        i += 1
    if buf:
        out.append(("".join(buf), "lit"))
    return out


def _brace_expand(word: str) -> list[str]:
    """Bash brace expansion of one word (``{a,b}``, ``{1..3}``, ``{a..c}``), bounded."""
    results = [word]
    done: list[str] = []
    while results:
        current = results.pop()
        match = _find_brace(current)
        if match is None:
            done.append(current)
        else:
            start, end, options = match
            for option in reversed(options):
                results.append(current[:start] + option + current[end + 1:])
        if len(done) + len(results) > _MAX_BRACE_WORDS:
            return [UNKNOWN]
    return done


def _find_brace(word: str) -> tuple[int, int, list[str]] | None:
    start = word.find("{")
    while start != -1:
        depth = 0
        commas: list[int] = []
        for index in range(start, len(word)):
            char = word[index]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    inner = word[start + 1:index]
                    if commas:
                        bounds = [start, *commas, index]
                        return start, index, [word[bounds[k] + 1:bounds[k + 1]] for k in range(len(bounds) - 1)]
                    seq = _sequence(inner)
                    if seq is not None:
                        return start, index, seq
                    break
            elif char == "," and depth == 1:
                commas.append(index)
        start = word.find("{", start + 1)
    return None


def _sequence(inner: str) -> list[str] | None:
    parts = inner.split("..")
    if len(parts) not in (2, 3):
        return None
    step = 1
    if len(parts) == 3:
        if not re.fullmatch(r"-?\d+", parts[2]):
            return None
        step = abs(int(parts[2])) or 1
    a, b = parts[0], parts[1]
    if re.fullmatch(r"-?\d+", a) and re.fullmatch(r"-?\d+", b):
        lo, hi = int(a), int(b)
        if abs(hi - lo) // step > _MAX_BRACE_WORDS:
            return [UNKNOWN]
        rng = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        return [str(n) for n in rng]
    if len(a) == 1 and len(b) == 1 and a.isalpha() and b.isalpha():
        lo, hi = ord(a), ord(b)
        rng = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        return [chr(n) for n in rng]
    return None


def resolve_listed(word: str, lines: bool = False) -> str:
    """``word`` with each name a glob matched (between the LISTED marks) put in: the glob,
    where the rest of the word is a name or path (``"$f"``, ``"out/$f"``); UNKNOWN where the
    word is code (``"wc -l $f"`` for ``sh -c``, ``eval``): the name is pasted there as text,
    and a name can hold code (``$(rm -rf ~).txt``); with ``lines``, text printed one name a
    line is names."""
    rest = set(_LISTED_RE.sub("", word))
    if lines:  # (a printed list: one name a line)
        rest.discard("\n")
    word = _LISTED_RE.sub(_glob_of if _CODE_CHARS.isdisjoint(rest) else UNKNOWN, word)
    # (a mark split from its pair, `x='a *'; cat $x`: that piece is not known)
    return word.replace(LISTED_OPEN, UNKNOWN) if LISTED_OPEN in word else word


def listed(value: str, any_glob: bool = False) -> str:
    """``value`` of an expansion marked as names a glob matches (see :func:`resolve_listed`)
    when it holds a ``*``: a glob a variable holds came from a listing (``files=(*.txt)``,
    ``set -- *``, ``$(ls)``, ``g=$f``) or was written as a pattern, and the analysis cannot
    tell which; with ``any_glob``, also for ``?`` and ``[…]`` (a loop variable's own glob)."""
    if ("*" in value or (any_glob and ("?" in value or "[" in value))) and UNKNOWN not in value:
        return LISTED_OPEN + value + LISTED_CLOSE
    return value


#: a shell name (in an arithmetic operand: a variable whose value is evaluated)
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def named_value(scope: Scope, name: str) -> str:
    """What ``$NAME`` expands to (shared by the tree walk and the fast path): its value,
    UNKNOWN when not known, marked by :func:`listed` when it holds a ``*`` or is a name a
    loop's glob matched."""
    value = scope.lookup(name)
    if value is None:
        return UNKNOWN
    if "*" in value:
        return listed(value)
    if ("?" in value or "[" in value) and scope.lookup(LISTED_KEY + name) == value:
        return listed(value, any_glob=True)  # (a name the loop's glob matched)
    return value


def _glob_of(match: re.Match[str]) -> str:
    return match.group(1)


def expand_fields(parts: list[tuple[str, str]], scope: Scope) -> list[str]:
    """The argv words a word's parts become: IFS splitting of unquoted expansions, brace
    expansion, tilde expansion, quote removal.  Shared by the tree walk and the fast path."""
    if not parts:
        return []
    if len(parts) == 1:
        text, kind = parts[0]
        # one ASCII quoted string, or one plain ASCII literal: nothing to expand or split
        # (exactly what the general path below returns; an unquoted empty word vanishes)
        if kind == "q" and text.isascii():
            return [text]
        if kind == "lit" and text.isascii() and "{" not in text:
            if text[:1] != "~":
                return [text] if text else []
            value = tilde(text, scope)  # `~`, `~/x`: one field, unless the home is not ASCII
            if value.isascii():
                return [value]
    else:
        for _, kind in parts:
            if kind != "q":
                break
        else:  # only quoted parts: one field, their text (no private marks in ASCII)
            word = "".join([text for text, _ in parts])
            if word.isascii():
                return [word]
    size = 0
    for text, _ in parts:
        size += len(text)
    scope.spend(size)
    if size > MAX_VALUE_CHARS:
        return [UNKNOWN]
    ifs: str | None = None
    marked = []
    only_unquoted_empty = True
    for text, kind in parts:
        if kind == "lit":
            marked.append(text)
        elif kind == "exp":
            if ifs is None:
                ifs = scope.lookup("IFS")
                if ifs is None or UNKNOWN in ifs:
                    ifs = " \t\n" if ifs is None else ifs.replace(UNKNOWN, "")
            if ifs and any(ch in text for ch in ifs):
                if LISTED_OPEN in text:  # (split into several arguments: each is a name, not code)
                    text = _LISTED_RE.sub(_glob_of, text)
                text = "".join(_SPLIT if ch in ifs else ch for ch in text)
            marked.append(_protect(text))
        else:
            only_unquoted_empty = False
            marked.append(_protect(text))
        if text and kind != "exp":
            only_unquoted_empty = False
    word = "".join(marked)
    words = _brace_expand(word) if "{" in word else [word]
    out: list[str] = []
    for item in words:
        if item.startswith("~"):
            item = tilde(item, scope)
        pieces = item.split(_SPLIT) if _SPLIT in item else [item]
        for piece in pieces:
            if piece or (len(pieces) == 1 and not only_unquoted_empty):
                # the private marks are not ASCII: an ASCII piece holds none
                if not piece.isascii():
                    if LISTED_OPEN in piece:
                        piece = resolve_listed(piece)
                    piece = piece.translate(_UNPROTECT)
                out.append(piece)
    return out


def _protect(text: str) -> str:
    """Quoted (or expanded) text with its brace syntax and tilde marked as literal
    (``str.translate`` only when one of those characters is there: it costs per character)."""
    if "{" in text or "," in text or "}" in text or "~" in text:
        return text.translate(_PROTECT)
    return text


class WordExpander:
    """Expands word nodes of one parsed source against a :class:`Scope`."""

    def __init__(self, scope: Scope, source: Any):
        self.scope = scope
        self.source = source

    # -- public ------------------------------------------------------------------------

    def fields(self, node: Any) -> list[str]:
        """The argv words one word node becomes (after splitting and brace expansion)."""
        return expand_fields(self.parts(node), self.scope)

    def text(self, node: Any) -> str:
        """One word's value without splitting (assignments, case subjects, here-strings)."""
        return self._joined(self.parts(node), node, node)

    def _joined(self, parts: list[tuple[str, str]], first: Any, last: Any) -> str:
        """The parts' text, tilde-expanded; UNKNOWN (an unknown effect recorded) past
        :data:`MAX_VALUE_CHARS`."""
        size = 0
        for text, _ in parts:
            size += len(text)
        if size > 64:
            self.scope.spend(size)
            if size > MAX_VALUE_CHARS:
                span = (self.source.span(first)[0], self.source.span(last)[1])
                self.scope.unknown(f"a value longer than {MAX_VALUE_CHARS} characters once expanded is not followed",
                                   span)
                return UNKNOWN
        value = "".join(text for text, _ in parts)
        if _SPLIT in value:  # (`x="${a[@]}"`: the words joined with spaces)
            value = value.replace(_SPLIT, " ")
        if LISTED_OPEN in value:
            value = resolve_listed(value)
        if parts and parts[0][1] == "lit" and value.startswith("~"):
            value = self._tilde(value)
        return value

    # -- parts: (text, kind) with kind lit (unquoted literal), q (quoted), exp (unquoted
    # expansion result, subject to splitting) ---------------------------------------------

    def parts(self, node: Any, quoted: bool = False) -> list[tuple[str, str]]:
        """The pieces of a word node with how each was quoted."""
        handler = _PART_VISITORS.get(node.kind_id)  # (an int: node.type makes a new string)
        if handler is None:
            handler = _PART_VISITORS[node.kind_id] = (getattr(WordExpander, "visit_" + node.type, None)
                                                      or WordExpander.generic)
        return handler(self, node, quoted)

    def generic(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        """Unknown node kinds: walk their children for code; the value is unknown."""
        for child in node.named_children:
            if child.type in ("command_substitution", "process_substitution"):
                self.scope.substitute(child)
            else:
                self.parts(child, quoted)
        return [(UNKNOWN, "q")]

    def _literal(self, text: str, quoted: bool) -> list[tuple[str, str]]:
        if quoted:
            return [(text, "q")]
        return _unescape_unquoted(text)

    def visit_word(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        text = self.source.node_text(node)
        if _NESTED_CODE_RE.search(text):
            self.scope.nested_fragment(text, node)
            return [(UNKNOWN, "q")]
        return self._literal(text, quoted)

    visit_number = visit_word
    visit_extglob_pattern = visit_word
    visit_brace_expression = visit_word
    visit_file_descriptor = visit_word
    visit_variable_name = visit_word
    visit_test_operator = visit_word
    visit_special_variable_name = visit_word

    def visit_regex(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        text = self.source.node_text(node)
        if _NESTED_CODE_RE.search(text):
            self.scope.nested_fragment(text, node)
            return [(UNKNOWN, "q")]
        return [(text, "q")]

    def visit_heredoc_body(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        """An unquoted here-document's body: its text between the expansions (``\\$``,
        ``\\` ``, ``\\\\`` and backslash-newline unescaped), and the expansions' values."""
        source = self.source
        out: list[tuple[str, str]] = []
        position = node.start_byte
        data = source.data
        for child in node.children:
            gap = _slice(source, position, child.start_byte) if child.start_byte > position else ""
            if child.type == "heredoc_content":
                out.extend(self._heredoc_text(gap, node))
                out.extend(self._heredoc_text(source.node_text(child), child))
            else:
                backslashes = 0
                while child.start_byte - backslashes - 1 >= node.start_byte and \
                        data[child.start_byte - backslashes - 1] == 0x5C:
                    backslashes += 1
                if backslashes % 2:  # `\$(…)` at the body's start: the grammar expands the escaped `$`
                    out.extend(self._heredoc_text(gap[:-1], node))
                    out.append((source.node_text(child), "q"))
                else:
                    out.extend(self._heredoc_text(gap, node))
                    out.extend(self.parts(child, True))
            position = max(position, child.end_byte)
        if node.end_byte > position:
            out.extend(self._heredoc_text(_slice(source, position, node.end_byte), node))
        return out

    def _heredoc_text(self, text: str, node: Any) -> list[tuple[str, str]]:
        """Text of an unquoted here-document between the expansions the grammar found: its
        escapes undone, and its `` `…` `` command substitutions (which bash runs there; the
        grammar keeps them as text) walked, their output unknown."""
        if "`" not in text:
            return [(_HEREDOC_ESCAPE_RE.sub(_unescape_heredoc, text), "q")]
        out: list[tuple[str, str]] = []
        last = 0
        for start, end in _backticks(text):
            out.append((_HEREDOC_ESCAPE_RE.sub(_unescape_heredoc, text[last:start]), "q"))
            self.scope.nested_fragment(text[start:end], node)
            out.append((UNKNOWN, "q"))
            last = end
        out.append((_HEREDOC_ESCAPE_RE.sub(_unescape_heredoc, text[last:]), "q"))
        return out

    def visit_raw_string(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        return [(self.source.node_text(node)[1:-1], "q")]

    def visit_ansi_c_string(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        value = decode_ansi_c(self.source.node_text(node)[2:-1])
        end = value.find("\0")
        if end != -1:  # (bash keeps the string up to a NUL it makes: `$'/\\0tmp'` is `/`)
            value = value[:end]
        return [(value, "q")]

    def visit_string_content(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        return [(_DQ_ESCAPE_RE.sub(_unescape_dq, self.source.node_text(node)), "q")]

    def visit_string(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        last = node.start_byte + 1
        source = self.source
        for child in node.named_children:
            start = child.start_byte
            if start > last:  # text the grammar left between children
                gap = source.data[last:start].decode("utf-8", "surrogateescape")
                out.append((_DQ_ESCAPE_RE.sub(lambda m: m.group(1), gap), "q"))
            kind = child.type
            if kind != "string_content" and source.data[start:start + 1] in (b" ", b"\t", b"\n"):
                # tree-sitter-bash puts the blanks after a `$NAME` into the next expansion's
                # first token (`"$c $f"`, `"$c ${f}"`, `"$c $(ls)"`): they are the string's text
                data = source.data
                lead = start
                while data[lead:lead + 1] in (b" ", b"\t", b"\n"):
                    lead += 1
                out.append((data[start:lead].decode(), "q"))
            if kind == "string_content":  # as visit_string_content, inline
                text = source.node_text(child)
                out.append((_DQ_ESCAPE_RE.sub(_unescape_dq, text) if "\\" in text else text, "q"))
            elif kind == "simple_expansion":
                part = self.visit_simple_expansion(child, True)[0]
                if part[0] != UNKNOWN and child.end_byte - child.start_byte == 2 and source.node_text(child) == "$@":
                    words = getattr(self.scope, "positional_words", lambda: None)()
                    if words is not None:  # "$@": one field per parameter
                        part = (_SPLIT.join(words), "q")
                out.append(part)
            else:
                out.extend((text, "q") for text, _ in self.parts(child, True))
            last = child.end_byte
        end = node.end_byte - 1
        if end > last:
            gap = self.source.data[last:end].decode("utf-8", "surrogateescape")
            out.append((_DQ_ESCAPE_RE.sub(lambda m: m.group(1), gap), "q"))
        return out or [("", "q")]

    visit_translated_string = visit_string

    def visit_concatenation(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        children = node.children
        if children[-1].type == "$":
            return self.word_parts([node], quoted)
        out: list[tuple[str, str]] = []
        for child in children:
            out.extend(self.parts(child, quoted))
        return out

    def word_parts(self, nodes: list[Any], quoted: bool = False) -> list[tuple[str, str]]:
        """The parts of one shell word that tree-sitter-bash split into adjacent nodes.

        After ``${x}`` and more text, the grammar ends the word at a ``$NAME`` followed by
        text (``${HOME}/.ssh$x~`` is the concatenation ``${HOME}/.ssh$`` — a bare ``$`` —
        and the word ``x~``, no error reported; in an assignment the rest even becomes the
        command name).  Bash reads one word, ``$x`` an expansion: a bare ``$`` directly
        followed by a word's text is read here as bash reads it (the parameter it names,
        the rest of that text literal)."""
        flat: list[Any] = []
        for node in nodes:
            if node.type == "concatenation":
                flat.extend(node.children)
            else:
                flat.append(node)
        out: list[tuple[str, str]] = []
        index = 0
        while index < len(flat):
            child = flat[index]
            index += 1
            dollar = child.type == "$"
            if dollar and index < len(flat):
                follower = flat[index]
                if follower.type == "word" and follower.start_byte == child.end_byte:
                    text = self.source.node_text(follower)
                    match = _PARAMETER_RE.match(text)
                    if match is not None and _NESTED_CODE_RE.search(text) is None:
                        value = self.scope.lookup(match.group())
                        out.append((UNKNOWN if value is None else value, "q" if quoted else "exp"))
                        if match.end() < len(text):
                            out.extend(self._literal(text[match.end():], quoted))
                        index += 1
                        continue
            if dollar and self.source.node_text(child) == "$$":  # (`x.$$`: the grammar's node for `$$`)
                value = self.scope.lookup("$")
                out.append((UNKNOWN if value is None else value, "q" if quoted else "exp"))
                continue
            out.extend(self.parts(child, quoted))
        return out

    def word_fields(self, nodes: list[Any]) -> list[str]:
        """The argv words one shell word split into adjacent nodes becomes (:meth:`word_parts`)."""
        return expand_fields(self.word_parts(nodes), self.scope)

    def word_text(self, nodes: list[Any]) -> str:
        """:meth:`text` of one shell word split into adjacent nodes (:meth:`word_parts`)."""
        return self._joined(self.word_parts(nodes), nodes[0], nodes[-1])

    def _value(self, value: str | None, quoted: bool) -> list[tuple[str, str]]:
        if value is None:
            value = UNKNOWN
        elif "*" in value:
            value = listed(value)
        return [(value, "q" if quoted else "exp")]

    def visit_simple_expansion(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        children = node.named_children
        return [(named_value(self.scope, self.source.node_text(children[0]) if children else ""),
                 "q" if quoted else "exp")]

    def visit_command_substitution(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        return self._value(self.scope.substitute(node), quoted)

    def visit_process_substitution(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        scope = self.scope
        scope.substitute(node)
        fed = getattr(scope, "process_output", None)
        if fed is not None and fed.text is not None and UNKNOWN not in fed.text and \
                self.source.node_text(node)[:1] == "<":
            # `<(echo CODE)`: a file whose content is known (see process_text)
            texts: dict[str, str] | None = getattr(scope, "fd_texts", None)
            if texts is None:
                texts = scope.fd_texts = {}  # type: ignore[attr-defined]
            word = f"/dev/fd/{UNKNOWN}{len(texts)}"
            texts[word] = fed.text
            return [(word, "q")]
        return [("/dev/fd/" + UNKNOWN, "q")]

    def visit_arithmetic_expansion(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        self.scope.arithmetic(node)
        text = self.source.node_text(node)
        if text[:3] == "$((" and text[-2:] == "))" and "$(" not in text[3:] and "`" not in text:
            from stockade.analyzer.arith import evaluate

            return self._value(evaluate(text[3:-2], self.scope.lookup), quoted)  # (None: not known)
        return self._value(UNKNOWN, quoted)

    def visit_expansion(self, node: Any, quoted: bool) -> list[tuple[str, str]]:
        children = node.children
        name = None
        operator = None
        indirect = False
        length = False
        subscript: str | None = None
        rest: list[Any] = []
        for index, child in enumerate(children):
            kind = child.type
            if kind in ("${", "}"):
                continue
            field = node.field_name_for_child(index)
            if name is None and kind in ("variable_name", "special_variable_name"):
                name = self.source.node_text(child)
            elif name is None and kind == "subscript":
                name = UNKNOWN
                array = child.named_children[0] if child.named_children else None
                index_node = child.child_by_field_name("index")
                index_text = self.source.node_text(index_node) if index_node is not None else ""
                if "'" in index_text and "$(" in index_text and array is not None and \
                        assoc_entries(self.scope, self.source.node_text(array)) is None:
                    # (`${a['$(cmd)']}`: an indexed array's subscript is expanded as in double quotes)
                    self.scope.nested_fragment(index_text.replace("'", ""), node)
                if array is not None and index_node is not None and index_text not in ("@", "*") and \
                        "$" not in index_text and "`" not in index_text and \
                        assoc_entries(self.scope, self.source.node_text(array)) is None:
                    # (`${a[i]}`, `${a[i+1]}` of an indexed array: the subscript is arithmetic, the
                    # value of each name in it evaluated)
                    self.scope.arith_value(self.scope.lookup(index_text) if _NAME_RE.fullmatch(index_text)
                                           else index_text, index_node)
                if array is not None and self.source.node_text(array) == "BASH_SOURCE":
                    name = "BASH_SOURCE"  # (a command line has none: see Walker.lookup)
                elif array is not None and assoc_entries(self.scope, self.source.node_text(array)) is not None:
                    # an associative array (`declare -A m`): `${m[key]}`, `${m[@]}`, `${!m[@]}`
                    key = index_text if index_text in ("@", "*") else \
                        self.text(index_node) if index_node is not None else UNKNOWN
                    if UNKNOWN not in key and all(c.type == "}" for c in children[index + 1:]):
                        return self._assoc_expansion(self.source.node_text(array), key, indirect, length, quoted)
                elif array is not None and (index_text in ("@", "*") or INDEX_RE.fullmatch(index_text)
                                            or _index_value(self, index_text) is not None):
                    # an indexed array the script assigned (see Walker.assignment_value):
                    # `${a[@]}` its elements, `${a[i]}` one of them (`${a[$i]}`, `${a[i]}`: the
                    # value of i); else unknown
                    name = self.source.node_text(array)
                    subscript = index_text if index_text in ("@", "*") or INDEX_RE.fullmatch(index_text) \
                        else _index_value(self, index_text)
                self.parts(child, True)
                for sub in child.named_children:
                    if sub.type != "variable_name":
                        self.parts(sub, True)
            elif name is None and kind == "!":
                indirect = True
            elif name is None and kind == "#":
                length = True
            elif operator is None and (field == "operator" or not child.is_named):
                operator = kind
            else:
                rest.append(child)
        # every operand may hide code: walk them all
        operand: list[tuple[str, str]] = []
        for child in rest:
            operand.extend(self.parts(child, True))
        if operator == ":":  # `${x:i:n}`: the offset and length are arithmetic (names' values evaluated)
            for child in rest:
                for word in _NAME_RE.findall(self.source.node_text(child)):
                    self.scope.arith_value(self.scope.lookup(word), child)
        if name is None or name == UNKNOWN:
            return self._value(UNKNOWN, quoted)
        if subscript is not None and subscript != "0":
            return self._array_expansion(name, subscript, indirect, length, operator, rest, quoted)
        if indirect:  # `${!r}`: the variable `$r` names (or the name the nameref r refers to)
            named = self.scope.lookup(name)
            if named and "[" in named and ("$(" in named or "`" in named) and UNKNOWN not in named:
                # (`x='a[$(cmd)]'; ${!x}`: the subscript of the name is evaluated, running cmd)
                self.scope.nested_fragment(named[named.index("["):], node)
            value = self.scope.indirect(name)
            if operator is None:
                return self._value(value, quoted)
            if value is None and operator in (":-", "-", ":+", "+"):  # `${!ref:-word}`: word is possible
                return self._possible_default(name, operator, operand, rest, quoted)
            return self._value(UNKNOWN, quoted)
        if name in ("@", "*"):
            return self._positional_expansion(name, length, operator, rest, quoted)
        value = self.scope.lookup(name)
        if operator == "@" and rest and rest[0].type == "P":
            self._prompt_expansion(name, value, node)
        if length:
            return self._value(str(len(value)) if value is not None and UNKNOWN not in value else None, quoted)
        if operator is None:
            if value and ("?" in value or "[" in value) and "*" not in value and \
                    self.scope.lookup(LISTED_KEY + name) == value:
                return [(listed(value, any_glob=True), "q" if quoted else "exp")]  # (as visit_simple_expansion)
            return self._value(value, quoted)
        if value is None and operator in (":-", "-", ":+", "+") and name.isdigit() and name != "0" and \
                getattr(self.scope, "positional_words", list)() is None:
            # a command line has no positional parameters (see Walker.lookup): `${1:-build}` is the word
            if operator in (":+", "+"):
                return [("", "q")] if quoted else []
            return self._value(self._operand_text(operand, rest), quoted)
        if operator in (":-", "-", ":=", "=", ":?", "?"):
            if (value is None or (value == UNKNOWN and operator[0] == ":")) and operator[-1] != "?":
                # not known, so possibly unset (or empty): the default is one of its values
                return self._possible_default(name, operator, operand, rest, quoted)
            if value is not None and value != "":
                return self._value(value, quoted)
            if value == "" and operator in (":-", ":="):  # (known empty: the word, tilde-expanded)
                text = self._operand_text(operand, rest)
                if text is not None and operator == ":=":
                    self.scope.assign(name, text)
                return self._value(text, quoted)
            return self._value(None, quoted)  # (`-`, `=`: an unset and an empty value are not told apart)
        if operator in (":+", "+"):
            if value is None or (value == UNKNOWN and operator == ":+"):
                # set (and not empty) or not: the word is one of the values
                return self._possible_default(name, operator, operand, rest, quoted)
            if value is not None and (UNKNOWN not in value or operator == "+") and (value != "" or operator == "+"):
                return [(text, "q" if quoted else "exp") for text, _ in operand] or [("", "q")]
            if value == "" and operator == ":+":
                return [("", "q")] if quoted else []
            return self._value(None, quoted)
        if value is None or UNKNOWN in value:
            return self._value(None, quoted)
        from stockade.analyzer.paramexp import apply_operator

        return self._value(apply_operator(self, value, operator, rest), quoted)

    def _prompt_expansion(self, name: str, value: str | None, node: Any) -> None:
        """``${x@P}`` expands the value as a prompt string: its command substitutions run
        (``x='$(rm -rf ~)'; echo "${x@P}"``).  A known value is walked as a double-quoted word
        (backslashes dropped: a prompt escape such as ``\\$`` may become a ``$``); a value
        not known is code that cannot be seen into."""
        if value is None or UNKNOWN in value:
            self.scope.unknown(f"`${{{name}@P}}` runs the command substitutions in the value of `{name}`, "
                               "which is not known", self.source.span(node))
        elif "$" in value or "`" in value:
            self.scope.nested_fragment('"' + value.replace("\\", "").replace('"', '\\"') + '"', node)

    def _array_expansion(self, name: str, subscript: str, indirect: bool, length: bool, operator: str | None,
                         rest: list[Any], quoted: bool) -> list[tuple[str, str]]:
        """``${a[@]}``, ``${a[*]}``, ``${#a[@]}``, ``${a[i]}`` of an indexed array (unknown
        when the script does not determine its elements)."""
        elements = array_elements(self.scope, name)
        if operator == "@" and rest and rest[0].type == "P":  # `${a[@]@P}`: each element as a prompt
            chosen: list[str | None] = [None] if elements is None or indirect else list(elements[:_MAX_EACH])
            if elements is not None and not indirect and subscript not in ("@", "*"):
                index = int(subscript)
                chosen = [elements[index] if -len(elements) <= index < len(elements) else ""]
            for element in chosen:
                self._prompt_expansion(f"{name}[{subscript}]", element, rest[0].parent)
        if elements is None or (indirect and (subscript not in ("@", "*") or operator is not None or length)):
            return self._value(None, quoted)
        if indirect:  # `${!a[@]}`: the indices
            elements = [str(i) for i in range(len(elements))]
        if operator == ":" and subscript in ("@", "*"):  # `${a[@]:1:2}`: a slice of the elements
            elements = _slice_elements(self, elements, rest)
            if elements is None:
                return self._value(None, quoted)
            operator = None
        if subscript not in ("@", "*"):
            index = int(subscript)
            if index < 0:
                index += len(elements)
            value = elements[index] if 0 <= index < len(elements) else ""
            if length:
                return self._value(None if UNKNOWN in value else str(len(value)), quoted)
            return self._value(value if operator is None else None, quoted)
        if length:
            return self._value(str(len(elements)), quoted)
        return self._each_element(elements, subscript == "*", operator, rest, quoted)

    def _positional_expansion(self, name: str, length: bool, operator: str | None, rest: list[Any],
                              quoted: bool) -> list[tuple[str, str]]:
        """``${@:offset:count}``, ``${*:offset}``, ``${@%.txt}``, ``${#@}``: the operator applies to
        each positional parameter, as to an array's elements (a slice counts ``$0`` as the
        first: ``${@:0}`` starts with it, ``${@: -1}`` is the last parameter)."""
        words = getattr(self.scope, "positional_words", lambda: None)()
        if words is None:
            return self._value(None, quoted)
        if length:
            return self._value(str(len(words)), quoted)
        elements = list(words)
        if operator == ":":
            zero = self.scope.lookup("0")
            sliced = _slice_elements(self, [UNKNOWN if zero is None else zero, *elements], rest)
            if sliced is None:
                return self._value(None, quoted)
            elements, operator = sliced, None
        return self._each_element(elements, name == "*", operator, rest, quoted)

    def _each_element(self, elements: list[str], star: bool, operator: str | None, rest: list[Any],
                      quoted: bool) -> list[tuple[str, str]]:
        """Known elements (of an array or the positional parameters) after ``operator``, as
        ``"${a[@]}"`` (one word each; unquoted, each is split) or ``"${a[*]}"`` (``star``: one
        word, joined with the first character of ``$IFS``) gives them."""
        if operator is not None:
            from stockade.analyzer.paramexp import apply_operator

            if operator in (":-", "-", ":=", "=", ":?", "?", ":+", "+") or any(UNKNOWN in e for e in elements):
                return self._value(None, quoted)
            if len(elements) == 1:  # one element: the operator applies to it as to a variable
                return self._value(apply_operator(self, elements[0], operator, rest), quoted)
            # `${a[@]/#/$HOME/}`, `${a[@]%.bak}`: the operator applies to each element
            results = [apply_operator(self, element, operator, rest) for element in elements[:_MAX_EACH]]
            if len(elements) > _MAX_EACH or any(result is None for result in results):
                return self._value(None, quoted)
            elements = results  # type: ignore[assignment]
        if star and quoted:  # "${a[*]}": one word, joined with $IFS's first character
            ifs = self.scope.lookup("IFS")
            if ifs is not None and UNKNOWN in ifs:
                return self._value(None, quoted)
            return [((" " if ifs is None else ifs[:1]).join(elements), "q")]
        if not elements:
            return [] if not quoted else [("", "q")]
        # "${a[@]}": one word per element; unquoted, each element is split in turn
        return [(_SPLIT.join(elements), "q" if quoted else "exp")]

    def _possible_default(self, name: str, operator: str, operand: list[tuple[str, str]], rest: list[Any],
                          quoted: bool) -> list[tuple[str, str]]:
        """``${P:-word}`` (``-``, ``:=``, ``=``, ``:+``, ``+``) of a ``P`` that is not known: the
        value is not known, but ``word`` is one of the values it may have.  The scope is told
        (``saw_default``), and walks the command again with ``use_defaults`` set, when this
        expansion gives the word (strictest wins); ``${P:=word}`` leaves ``P`` either value."""
        scope = self.scope
        text = self._operand_text(operand, rest)
        if text is None:
            return self._value(None, quoted)
        if operator in (":=", "="):
            remember = getattr(scope, "assign_possible", None)
            if remember is not None:
                remember(name, text)
        if getattr(scope, "use_defaults", False):
            return [(text, "q" if quoted else "exp")] if text or quoted else []
        if hasattr(scope, "saw_default"):
            scope.saw_default = True
        return self._value(None, quoted)

    def _assoc_expansion(self, name: str, key: str, indirect: bool, length: bool,
                         quoted: bool) -> list[tuple[str, str]]:
        """``${m[key]}``, ``${m[@]}``, ``${!m[@]}``, ``${#m[@]}`` of an associative array whose
        entries the script determines (with an operator: not followed, unknown)."""
        entries = assoc_entries(self.scope, name) or []
        if key not in ("@", "*"):
            if indirect:
                return self._value(None, quoted)
            value = next((v for k, v in reversed(entries) if k == key), "")
            return self._value(None if length and UNKNOWN in value else str(len(value)) if length else value, quoted)
        words = [k for k, _ in entries] if indirect else [v for _, v in entries]
        if length:
            return self._value(None if indirect else str(len(words)), quoted)
        if key == "*" and quoted:
            return [(" ".join(words), "q")]
        if not words:
            return [] if not quoted else [("", "q")]
        return [(_SPLIT.join(words), "q" if quoted else "exp")]

    def _operand_text(self, operand: list[tuple[str, str]], rest: list[Any]) -> str | None:
        """The text of a default word (``${x:-~/y}``: tilde-expanded); None when unknown."""
        text = "".join(text for text, _ in operand)
        if UNKNOWN in text:
            return None
        if text.startswith("~") and rest and rest[0].type in ("word", "concatenation") and \
                self.source.node_text(rest[0])[:1] == "~":
            text = self._tilde(text)
        return text

    # -- tilde ----------------------------------------------------------------------------

    def _tilde(self, word: str) -> str:
        return tilde(word, self.scope)


#: node kind id → WordExpander method (``visit_<type>`` or ``generic``), filled as kinds are met.
_PART_VISITORS: dict[int, Any] = {}


def array_elements(scope: Scope, name: str) -> list[str] | None:
    """The elements of indexed array ``name`` (a plain variable: one element), None when the
    script does not determine them: the record must still agree with element 0, which every
    other writer of the variable (``read``, ``for``, ``a=x``) changes."""
    reference = getattr(scope, "reference", None)
    if reference is not None:  # `declare -n r=a; "${r[1]}"`: the elements of a
        target = reference(name)
        if target is not None:
            if not target or "[" in target:
                return None
            name = target
    first = scope.lookup(name)
    if first is None:
        return None
    record = scope.lookup(ARRAY_KEY + name)
    if record is None:
        # (a variable written in a way not followed may be an array: `a=([2]=x)`, `read -a`)
        return None if first == UNKNOWN else [first]
    if record[:1] != ARRAY_SEP and record:  # (UNKNOWN: written in a way not followed)
        return None
    elements = record.split(ARRAY_SEP)[1:]
    if (elements[0] if elements else "") != first:
        return None
    return elements


#: at most this many elements get an operator applied one by one (more: unknown)
_MAX_EACH = 64


def _index_value(expander: WordExpander, index: str) -> str | None:
    """The element number a subscript ``$i``, ``${i}`` or ``i`` stands for, when ``i`` holds a
    known integer (None otherwise)."""
    name = index[2:-1] if index.startswith("${") and index.endswith("}") else index[1:] if index[:1] == "$" else index
    if not name or not (name[0].isalpha() or name[0] == "_") or not name.replace("_", "").isalnum():
        return None
    value = expander.scope.lookup(name)
    return value.strip() if value is not None and INDEX_RE.fullmatch(value.strip()) else None


def assoc_entries(scope: Scope, name: str) -> list[tuple[str, str]] | None:
    """The (key, value) entries of associative array ``name`` in the order set (later ones
    win), None when it is not one the script determines."""
    if scope.lookup(name) != ASSOC_MARK:
        return None
    reference = getattr(scope, "reference", None)
    target = reference(name) if reference is not None else None
    if target is not None:  # (a nameref to the array)
        if not target or "[" in target:
            return None
        name = target
    record = scope.lookup(ASSOC_KEY + name)
    if record is None or (record and record[:1] != ARRAY_SEP):
        return None
    return [tuple(item.split(ASSOC_SEP, 1)) for item in record.split(ARRAY_SEP)[1:]]  # type: ignore[misc]


def _slice_elements(expander: WordExpander, elements: list[str], rest: list[Any]) -> list[str] | None:
    """``${a[@]:offset}``, ``${a[@]:offset:count}`` of known elements (negative offset: from
    the end; None when an operand is not a known integer)."""
    from stockade.analyzer.paramexp import _integer

    pieces: list[list[tuple[str, bool]]] = [[]]
    for node in rest:
        if not node.is_named and node.type == ":":
            pieces.append([])
        elif node.type in ("number", "variable_name", "word", "parenthesized_expression", "unary_expression"):
            pieces[-1].append((expander.source.node_text(node), False))
        else:
            return None
    if len(pieces) > 2 or not pieces[0]:
        return None
    offset = _integer(expander, pieces[0])
    count = _integer(expander, pieces[1]) if len(pieces) == 2 else len(elements)
    if offset is None or count is None or count < 0:
        return None
    if offset < 0:
        offset += len(elements)
        if offset < 0:
            return []
    return elements[offset:offset + count]


def tilde(word: str, scope: Scope) -> str:
    """Tilde expansion of a word that starts with ``~``."""
    head, sep, tail = word.partition("/")
    user = head[1:]
    if user == "":
        home = scope.lookup("HOME")  # `~` is `$HOME` (`HOME=/etc; cat ~/shadow`)
        # (an unset HOME — recorded as empty — gives the user's home from the password database)
        base = scope.home if home is None or home == "" else home
    elif user == "+":
        base = scope.cwd_text()
    elif user == "-":  # `~-` is `$OLDPWD`
        base = scope.lookup("OLDPWD") or UNKNOWN
    elif user == "root":
        base = "/root"
    elif user == scope.home.rstrip("/").rpartition("/")[2] and user not in ("", ".", ".."):
        base = scope.home  # `~alice` where the home is /home/alice: the user's own home
    else:
        base = UNKNOWN
    return base + sep + tail


def process_text(scope: object, word: str) -> str | None:
    """The known content of the file a process substitution names (``<(echo CODE)``: the word
    :meth:`WordExpander.visit_process_substitution` gave it), else None."""
    texts: dict[str, str] | None = getattr(scope, "fd_texts", None)
    return texts.get(word) if texts else None
