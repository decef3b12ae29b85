"""Parsing shell text with tree-sitter-bash, aware of the parser's own blind spots.

* **Backslash-newline.** Bash deletes ``\\<newline>`` before splitting words (outside single
  quotes, quoted heredocs and comments), so ``r\\<newline>m`` is ``rm``; tree-sitter sees two
  words.  We parse once, find every such pair the shell would join, delete them and parse
  again, keeping a map back to the original offsets for spans.
* **Carriage returns.** Bash treats ``\\r`` as an ordinary character; tree-sitter treats it as
  blank.  Splitting on it only ever makes the analyzer see *more* commands and words than
  bash would run, which errs on the strict side.
* **A brace word in command position.**  ``{rm,-rf,~}`` is one word to bash (``{`` is the
  reserved word only when it stands alone), brace-expanded to ``rm -rf ~``; tree-sitter-bash
  takes its ``{`` for a group's and fails.  :func:`hide_brace_words` gives the grammar every
  ``{`` that starts a longer word as a plain word character (same offsets); the tree's
  words keep the text as written, and the word expander expands it.
* **A word split after ``$``; words after a redirection.**  Two misreadings without an error
  node, repaired by the walk (see :meth:`~stockade.analyzer.words.WordExpander.word_parts`
  and :meth:`~stockade.analyzer.walker.Walker.redirect`): ``${HOME}/.ssh$x~`` becomes
  ``${HOME}/.ssh$`` and ``x~`` (adjacent nodes are one word), and in ``rm >a -rf ~`` the words
  ``-rf ~`` are destinations of the redirection (they are the command's arguments).
* **ERROR / MISSING nodes** mean the grammar did not understand the text: the caller fails
  closed with the ``unparsable`` verdict.
* **A pipeline at the end of the text is slow.**  tree-sitter-bash takes 10–20 times longer
  on a text that ends in a pipeline of three or more commands than on the same text plus a
  newline: ``a | b | c`` costs ~100 µs, with the newline ~6–9 µs.  :func:`parse` therefore
  hands the parser the text plus a newline when the text has two ``|`` or more and the
  newline leaves the tree as it is: the text ends in a character other than a blank or
  newline and has no backslash (no line continuation to create), no ``<`` or ``>`` (a
  here-document's last line is read up to the end of the text, and with redirections the
  grammar's pipelines are ambiguous: the end of the text decides how ``>>a | b | c>x | d``
  is grouped), and the parse has no error (otherwise the text is parsed as it is, so error
  nodes are where they always were).  Every node then has the same type, fields and
  offsets as without the newline, except the root's end, which :meth:`Source.span` clamps
  to the text — an empirical fact about the grammar, which
  ``tests/analyzer/test_parser_newline.py`` checks node by node over the corpus, the
  verdict snapshot and generated texts (it found the redirection case above).
* **A memory-safety bug in the grammar's external scanner.**  Every released tree-sitter-bash
  (0.21.0 … 0.25.1) calls C ``isdigit()`` on the code point that follows ``{`` (and on the one
  after ``{N..``) while looking for a brace range (``scanner.c``, ``brace_start``).  For a code
  point above U+00FF that indexes glibc's 384-entry ctype table out of bounds: the process
  segfaults when the read lands on an unmapped page (ASLR and the locale decide: about half
  the runs for ``echo a{\\U00099d94``), and otherwise the scanner acts on garbage.  Upstream:
  tree-sitter/tree-sitter-bash#337 (fix proposed in #348, unreleased).  The guard holds on
  the exact bytes handed to the parser: :func:`tree_of` is the only caller of
  ``Parser.parse``, and it refuses bytes holding ``{``, ASCII digits, optionally ``..`` and
  digits, then a byte that starts a UTF-8 sequence of a character above U+00FF (``\\xc4`` or
  more) followed by a continuation byte — however the text got there: characters above
  U+00FF, bytes smuggled in with ``surrogateescape`` (from a file, from JSON ``\\udcXX``
  escapes, from ANSI-C ``$'\\udcf3…'`` escapes) whose run is valid UTF-8 once encoded, or
  pieces joined by removing a backslash-newline.  It raises :class:`UnsafeText`; the walker
  turns that into an ``unparsable`` effect.  Text that cannot be encoded at all (a lone
  surrogate below U+DC80) is refused the same way.

tree-sitter is imported lazily and one :class:`~tree_sitter.Parser` is cached per process.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

_PARSER: Any = None

#: The bytes on which the scanner's ``brace_start`` may call ``isdigit()`` out of bounds: a
#: ``{``, digits, optionally ``..`` and digits, then a lead byte of a character above U+00FF
#: and a continuation byte (conservative: a lone or invalid byte reaches the scanner as -1,
#: which is safe; any two bytes that may decode to a character above U+00FF are refused).
_SCANNER_UB_RE = re.compile(rb"\{[0-9]*(?:\.\.[0-9]*)?[\xc4-\xff][\x80-\xbf]")


class UnsafeText(ValueError):
    """Text the parser must not see (it would read out of bounds and may crash the process).

    ``start``/``end`` are character offsets in the text given to :func:`parse`."""

    def __init__(self, why: str, start: int, end: int):
        super().__init__(why)
        self.why = why
        self.start = start
        self.end = end


def check_scanner_bytes(data: bytes) -> None:
    """Raise :class:`UnsafeText` (with *byte* offsets) when the bytes ``data``, handed to
    tree-sitter-bash as they are, would make its scanner index a C table out of bounds."""
    if data.isascii():  # (the pattern needs a byte of 0xC4 or more: skip the search)
        return
    match = _SCANNER_UB_RE.search(data)
    if match is None:
        return
    start, end = match.start(), match.end()
    lead = data[end - 2]
    length = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    try:
        what = f"the character U+{ord(data[end - 2:end - 2 + length].decode('utf-8')):04X}"
        end = end - 2 + length
    except UnicodeDecodeError:
        what = f"the bytes `{data[end - 2:end].hex(' ')}`"
    raise UnsafeText(f"a `{{` followed by {what} crashes the shell parser (tree-sitter-bash scanner bug); "
                     "refusing to parse it", start, end)


def encode(text: str) -> bytes:
    """``text`` as the parser reads it (UTF-8, escaped bytes restored); :class:`UnsafeText`
    when it holds a character that has no UTF-8 form (a lone surrogate below U+DC80)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as error:
        raise UnsafeText(f"the text holds U+{ord(text[error.start]):04X}, which is not a character; "
                         "refusing to parse it", error.start, error.end) from None


def check_scanner_safe(text: str, to_orig: list[int] | None = None) -> None:
    """Raise :class:`UnsafeText` when ``text``, encoded as the parser reads it, holds bytes on
    which tree-sitter-bash's scanner indexes a C table out of bounds (see
    :func:`check_scanner_bytes`).  ``to_orig`` maps character offsets back to the caller's text."""
    data = encode(text)
    try:
        check_scanner_bytes(data)
    except UnsafeText as refused:
        chars = _byte_to_char(text, data)
        start, end = chars[refused.start], chars[refused.end - 1] + 1
        if to_orig is not None:
            start, end = to_orig[start], to_orig[end - 1] + 1
        raise UnsafeText(refused.why, start, end) from None


def _byte_to_char(text: str, data: bytes) -> list[int]:
    """Byte offset in ``data`` (``text`` encoded) → character offset in ``text`` (one more
    entry, for the end)."""
    if len(data) == len(text):
        return list(range(len(text) + 1))
    out: list[int] = []
    for index, char in enumerate(text):
        out.extend([index] * len(char.encode("utf-8", "surrogateescape")))
    out.append(len(text))
    return out


#: node kind id → node type, filled as kinds are met: ``node.type`` makes a new string on every
#: call (~4 times the cost of ``node.kind_id``), and the walker reads the type of most nodes.
KIND_NAMES: dict[int, str] = {}

#: Node types inside which a backslash-newline is kept literally.
_LITERAL_CONTEXTS = frozenset({"raw_string", "comment", "ansi_c_string"})


def parser() -> Any:
    """The cached tree-sitter-bash parser (created on first use)."""
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_bash

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER


class Source:
    """Parsed shell text: the tree, the text the parser saw, and the way back to the
    original character offsets (``base`` is added to every offset; with ``collapse`` set,
    every span is that one span, for nested code whose text is not verbatim in its parent)."""

    __slots__ = ("_byte_to_orig", "base", "collapse", "data", "direct", "limit", "sliceable", "text", "tree")

    def __init__(self, text: str, data: bytes, tree: Any, base: int = 0, collapse: tuple[int, int] | None = None,
                 _byte_to_orig: list[int] | None = None):
        self.text = text
        self.data = data
        self.tree = tree
        self.base = base
        self.collapse = collapse
        self._byte_to_orig = _byte_to_orig
        #: byte offsets are character offsets of :attr:`text` (ASCII): slice it, never decode
        self.sliceable = len(data) == len(text)
        #: a node's span is ``base`` plus its byte offsets (no offset map, no collapsed span)
        self.direct = collapse is None and _byte_to_orig is None
        #: the end of :attr:`data` (the root may end one byte later: see :func:`parse`)
        self.limit = len(data)

    def offset(self, byte_offset: int) -> int:
        """The original character offset of a byte offset in :attr:`data`."""
        if self._byte_to_orig is not None:
            byte_offset = self._byte_to_orig[min(byte_offset, len(self._byte_to_orig) - 1)]
        return self.base + byte_offset

    def span(self, node: Any) -> tuple[int, int]:
        """The original ``(start, end)`` character span of a node."""
        if self.collapse is not None:
            return self.collapse
        if self._byte_to_orig is None:
            base = self.base
            end = node.end_byte
            if end > self.limit:
                end = self.limit
            return base + node.start_byte, base + end
        return self.offset(node.start_byte), self.offset(node.end_byte)

    def node_text(self, node: Any) -> str:
        """The text of a node as the parser saw it."""
        if self.sliceable:
            return self.text[node.start_byte:node.end_byte]
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")


def _odd_backslashes(text: str, index: int) -> bool:
    count = 0
    while index >= 0 and text[index] == "\\":
        count += 1
        index -= 1
    return count % 2 == 1


def _literal_at(tree: Any, byte_offset: int) -> bool:
    node = tree.root_node.descendant_for_byte_range(byte_offset, byte_offset + 1)
    while node is not None:
        kind = node.type
        if kind in _LITERAL_CONTEXTS:
            return True
        if kind == "heredoc_body" or kind == "heredoc_content":
            start = node.parent.child_by_field_name("start") if node.parent else None
            for sibling in (node.parent.children if node.parent else ()):
                if sibling.type == "heredoc_start":
                    start = sibling
            if start is not None and start.text[:1] in (b"'", b'"', b"\\"):
                return True
        node = node.parent
    return False


def newline_safe(text: str) -> bool:
    """Whether a newline after ``text`` leaves its parse tree as it is (when the parse has no
    error): ``text`` ends in a character other than a blank or newline, and holds no
    backslash and no ``<`` or ``>`` (here-documents read their last line up to the end of the
    text, and redirections make the grammar's pipelines ambiguous: what follows the text
    decides how ``>>a | b | c>x | d`` is grouped)."""
    return text[-1:] not in _ENDS_UNSAFE and "\\" not in text and "<" not in text and ">" not in text


_ENDS_UNSAFE = frozenset({"", " ", "\t", "\n", "\r", "\v", "\f"})


#: ``{`` starting a word that has more after it: bash reads it as part of the word (brace
#: expansion), never as the reserved word ``{``, which must stand alone.
_BRACE_WORD_RE = re.compile(rb"(?:^|(?<=[\s;&|()`]))\{(?=[^\s;&|()<>}])")


def hide_brace_words(data: bytes) -> bytes:
    """``data`` with every ``{`` that starts a longer word replaced by a byte the grammar
    reads as a word character (same length: offsets are unchanged).  tree-sitter-bash takes
    such a ``{`` in command position for a group's brace and fails (``{rm,-rf,~}`` is
    ``rm -rf ~`` to bash); the words keep their text (the :class:`Source` holds the text as
    written), and the word expander does the brace expansion from it."""
    position = data.find(b"{")  # (`bytes in bytes` first tries the operand as an int: slower)
    if position == -1:
        return data
    # each `{` on its own (what _BRACE_WORD_RE matches, without its lookbehind tried at every
    # byte of the text: `${NAME}` and `a{b}` are most of the braces met)
    marked: bytearray | None = None
    last = len(data) - 1
    while position != -1:
        if position < last and (position == 0 or data[position - 1] in _BRACE_BEFORE) and \
                data[position + 1] not in _BRACE_NOT_AFTER:
            if marked is None:
                marked = bytearray(data)
            marked[position] = 1
        position = data.find(b"{", position + 1)
    return data if marked is None else bytes(marked)


#: the bytes before a `{` that starts a word, and those after it that leave it a brace
#: (the classes of :data:`_BRACE_WORD_RE`; ``\s`` of a bytes pattern is these six)
_BRACE_BEFORE = frozenset(b" \t\n\r\f\v;&|()`")
_BRACE_NOT_AFTER = frozenset(b" \t\n\r\f\v;&|()<>}")


#: the reserved words ``time`` (with ``-p``), ``!`` and ``coproc [NAME]`` before a compound
#: command (a ``{`` group, a subshell, ``while``/``for``/``if``…), in command position:
#: tree-sitter-bash reads them as a command taking the compound's words as arguments
_PREFIX_WORD_RE = re.compile(
    rb"(?:^|(?<=[;&|(\n{])|(?<=\bthen)|(?<=\bdo)|(?<=\belse)|(?<=\bif)|(?<=\belif)|(?<=\bwhile)|(?<=\buntil))"
    rb"[ \t]*((?:(?:time(?:[ \t]+-p)*(?:[ \t]+--)?|coproc(?:[ \t]+[A-Za-z_][A-Za-z0-9_]*)?)[ \t]+)(?:![ \t]+)*"
    rb"|(?:![ \t]+)+)"
    rb"(?=\{[ \t\n]|\{$|\(|\[\[(?:[ \t\n]|$)|(?:while|until|for|select|if|case)(?:[ \t\n;]|$))")


def _blank(match: re.Match[bytes]) -> bytes:
    whole, start = match.group(0), match.start(1) - match.start(0)
    return whole[:start] + b" " * (len(whole) - start)


#: ``!`` alone before the end of a line or a ``;`` in command position (read as ``:``): to bash a negated
#: empty pipeline (it runs nothing); tree-sitter-bash negates the next line's command instead
#: (``!⏎case …`` fails to parse, ``!⏎{ ls; }`` reads a stray ``}``)
_BARE_BANG_RE = re.compile(
    rb"(?:^|(?<=[;(\n{])|(?<=(?<!\|)&)|(?<=&&)|(?<=\|\|)|(?<=\bthen)|(?<=\bdo)|(?<=\belse)|(?<=\bif)|(?<=\belif)|(?<=\bwhile)|"
    rb"(?<=\buntil))[ \t]*(!)(?=[ \t]*(?:\n|;(?!;)|$))")


def _blank_bang(match: re.Match[bytes]) -> bytes:
    whole = match.group(0)
    return whole[:match.start(1) - match.start(0)] + b":"  # (the null command: parses where `!` stood)


def hide_prefix_words(data: bytes) -> bytes:
    """``data`` with ``time [-p]``, ``!`` and ``coproc [NAME]`` before a compound command
    blanked (same length: offsets are unchanged).  None changes what the compound does
    (``time`` only measures it, ``!`` only negates its status, ``coproc`` runs it in the
    background), and tree-sitter-bash does not know them as reserved words there:
    ``time { ls; }`` would be the command ``time`` with the arguments ``{ ls``, and
    ``time {`` or ``coproc while }`` (syntax errors to bash) ordinary commands."""
    # (`bytes.find`: `b"!" in data` first tries the operand as an integer, ~1,300 instructions)
    if data.find(b"time") == -1 and data.find(b"!") == -1 and data.find(b"coproc") == -1:
        return data
    if _PREFIX_HINT_RE.search(data) is None:  # (a blank after each, or a bare `!`: `#!/bin/sh` has neither)
        return data
    if data.find(b"!") != -1:
        data = _BARE_BANG_RE.sub(_blank_bang, data)
    return _PREFIX_WORD_RE.sub(_blank, data)


#: what every match of :data:`_PREFIX_WORD_RE` and :data:`_BARE_BANG_RE` holds: a cheap search
#: before the costly ones
_PREFIX_HINT_RE = re.compile(rb"(?:time|coproc|!)[ \t]|![\n;]|!$")


def hide_escaped_returns(data: bytes) -> bytes:
    """``data`` with the carriage return after each backslash replaced by a byte the grammar
    reads as a word character (same length).  To bash ``\\`` then CR escapes the CR, and the
    newline after it ends the command (``echo \\⏎rm -rf ~`` in a CR-LF text runs ``rm``);
    tree-sitter-bash takes backslash, CR, LF for a line continuation and would read
    ``echo rm -rf ~``.  The words keep their text as written."""
    return data.replace(b"\\\r", b"\\\x01") if data.find(b"\\\r") != -1 else data


#: a ``$`` followed by a blank, a newline or other white space the grammar skips (CR, FF,
#: VT): a literal ``$`` to bash (after pairs ``$$``, each the special parameter)
_BARE_DOLLAR_RE = re.compile(rb"(?<!\$)(?:\$\$)*\$(?=[ \t\n\r\f\v])")
_BARE_DOLLAR_HINT_RE = re.compile(rb"\$[ \t\n\r\f\v]")


def hide_bare_dollars(data: bytes) -> bytes:
    """``data`` with each ``$`` that a blank or newline follows replaced by a byte the grammar
    reads as a word character (same length).  Bash reads such a ``$`` as itself; the grammar
    takes the blanks for the inside of an expansion and reads ``$⏎rm -rf ~`` as the variable
    ``$rm`` with arguments (``x=$⏎rm -rf ~`` as an assignment of it), hiding the command on the
    next line.  The words keep their text as written."""
    if _BARE_DOLLAR_HINT_RE.search(data) is None:  # (a tenth of the cost of the full pattern)
        return data
    return _BARE_DOLLAR_RE.sub(_hide_last, data)


def _hide_last(match: re.Match[bytes]) -> bytes:
    return match.group(0)[:-1] + b"\x01"


#: a here-document operator and a plain delimiter (a name, maybe quoted whole or after `\`)
_HEREDOC_OP_RE = re.compile(
    rb"(?<!<)<<(-?)[ \t]*(?:(['\"])([A-Za-z_][A-Za-z0-9_]*)\2|\\?([A-Za-z_][A-Za-z0-9_]*))(?=[ \t;|&)<>]|\Z)")

#: :data:`_HEREDOC_OP_RE` in a whole text (its delimiter may end the line)
_HEREDOC_OP_TEXT_RE = re.compile(_HEREDOC_OP_RE.pattern.replace(rb"[ \t;|&)<>]", rb"[ \t\n;|&)<>]"))


def hide_delimiter_prefixes(data: bytes) -> tuple[bytes, list[int]]:
    """``data`` with the first byte of each here-document body line that starts with the
    delimiter without being it (``EOF is near`` in a body ended by ``EOF``) replaced by a byte
    the grammar reads as body text (same length), and where those bytes are.  Bash ends a body
    only at a line that is exactly the delimiter; the grammar's scanner at one that starts
    with it, and the body's end, and every command after it, would be misread.  Only plain
    delimiters are looked at; the words keep their text as written, and :func:`parse_tree`
    keeps the repair only when every replaced byte lies in a here-document body of the tree
    (``heredoc_misread`` still compares each body's end with bash's)."""
    spots: list[int] = []
    if not _prefix_line_possible(data):
        return data, spots
    pending: list[tuple[bytes, bool]] = []
    out = bytearray(data)
    position = 0
    size = len(data)
    while position < size:
        end = data.find(b"\n", position)
        if end == -1:
            end = size
        line = data[position:end]
        if pending:
            delimiter, dash = pending[0]
            skip = len(line) - len(line.lstrip(b"\t")) if dash else 0
            body = line[skip:]
            if body == delimiter or (body[len(delimiter):len(delimiter) + 1] == b")" and body.startswith(delimiter)):
                pending.pop(0)
            elif body.startswith(delimiter):
                out[position + skip] = 0x01
                spots.append(position + skip)
        elif b"<<" in line:
            for match in _HEREDOC_OP_RE.finditer(line):
                pending.append((match.group(3) or match.group(4), bool(match.group(1))))
        position = end + 1
    return (bytes(out), spots) if spots else (data, spots)


def _prefix_line_possible(data: bytes) -> bool:
    """Whether some line of ``data`` (after the first) starts with the delimiter of a plain
    here-document operator in it (tabs before it allowed) and is not that delimiter alone
    (nor the delimiter and ``)``): a necessary condition for :func:`hide_delimiter_prefixes`
    to replace a byte, checked without walking the lines in Python."""
    for match in _HEREDOC_OP_TEXT_RE.finditer(data):
        delimiter = match.group(3) or match.group(4)
        start = data.find(delimiter, match.end())
        while start != -1:
            line_start = start
            while line_start > 0 and data[line_start - 1] == 0x09:
                line_start -= 1
            after = data[start + len(delimiter):start + len(delimiter) + 1]
            if line_start > 0 and data[line_start - 1] == 0x0A and after not in (b"", b"\n", b")"):
                return True
            start = data.find(delimiter, start + 1)
    return False


def _in_bodies(tree: Any, spots: list[int]) -> bool:
    """Whether every byte offset of ``spots`` lies in a here-document body of ``tree``."""
    root = tree.root_node
    for spot in spots:
        node = root.descendant_for_byte_range(spot, spot + 1)
        while node is not None and node.type not in ("heredoc_body", "heredoc_content"):
            node = node.parent
        if node is None:
            return False
    return True


#: a ``[`` that starts a command (after an operator, a reserved word or the start of a line)
_TEST_BRACKET_RE = re.compile(rb"(^|[;&|({\n!]|\b(?:then|do|else|elif|if|while|until))([ \t]*)\[(?=[ \t])", re.M)


def hide_test_brackets(data: bytes) -> bytes:
    """``data`` with each ``[`` that starts a command replaced by a byte the grammar reads as a
    word character (same length).  To bash ``[`` is a command like any other, its arguments
    words; the grammar reads ``[ … ]`` as an expression of its own and fails on forms it does not
    know (``[ \\( -f a \\) -o … ]``, ``[ "$a" \\> "$b" ]``).  Used only when the text does not
    parse otherwise; the command keeps its name ``[`` (the words keep their text)."""
    return _TEST_BRACKET_RE.sub(lambda match: match.group(1) + match.group(2) + b"\x01", data)


_ARITH_BASE_RE = re.compile(rb"(?<![A-Za-z0-9_#])[0-9]{1,2}#(?=\$)")


def hide_arithmetic_bases(data: bytes) -> bytes:
    """``data`` with the base prefix of each ``BASE#$VALUE`` inside ``((…))`` (and ``$((…))``)
    replaced by blanks (same length).  Bash reads ``10#$d`` as ``$d`` in base 10; the grammar
    refuses a base before an expansion.  The expansion keeps its place and text, and a number's
    base changes nothing that runs.  Used only when the text does not parse otherwise."""
    out = bytearray(data)
    position = data.find(b"((")
    while position != -1:
        depth = 0
        index = position
        while index < len(data):
            byte = data[index]
            if byte == 0x28:
                depth += 1
            elif byte == 0x29:
                depth -= 1
                if depth == 0:
                    break
            index += 1
        for match in _ARITH_BASE_RE.finditer(data, position, index):
            out[match.start():match.end()] = b" " * (match.end() - match.start())
        position = data.find(b"((", max(index, position + 2))
    return bytes(out)


def parse_tree(text: str, data: bytes, _repair: bool = True) -> Any:
    """The tree-sitter tree of ``data`` (``text`` encoded, brace words hidden: see
    :func:`hide_brace_words`); a text with two ``|`` or more is parsed with a newline after
    it when :func:`newline_safe` allows and that parse has no error — much faster when the
    text ends in a pipeline, and the same tree but for the root's end (see the module
    docstring).  Descriptor ``0`` before a redirection is repaired (:func:`zero_descriptor_repaired`;
    ``_repair`` False: not)."""
    if _repair and ("0<" in text or "0>" in text):
        tree = parse_tree(text, data, False)
        fixed = zero_descriptor_repaired(data, tree)
        return tree if fixed is None else parse_tree(text, fixed, False)
    # (the tests on ``text``: its ASCII characters are exactly the ASCII bytes of ``data``, and
    # `in` on a str costs a fraction of `bytes.find`, ~700 instructions a call)
    if "{" in text:
        data = hide_brace_words(data)
    if "time" in text or "!" in text or "coproc" in text:
        data = hide_prefix_words(data)
    if "\\\r" in text:
        data = hide_escaped_returns(data)
    if "$" in text:
        data = hide_bare_dollars(data)
    if "<<" in text:
        repaired = heredoc_repaired_tree(data)
        if repaired is not None:
            return repaired
    if text.count("|") >= 2 and newline_safe(text):  # it may end in a pipeline of three
        tree = tree_of(data + b"\n")
        if not tree.root_node.has_error:
            return tree
    tree = tree_of(data)
    if tree.root_node.has_error and ("[ " in text or "#$" in text or "<>" in text):
        return error_repaired_tree(text, data) or tree
    return tree


#: a ``0`` that starts a word and is followed by a redirection operator: bash's descriptor 0
_ZERO_FD_RE = re.compile(rb"(?<![^\s;&|()])0(?=[<>])")


def zero_descriptor_repaired(data: bytes, tree: Any) -> bytes | None:
    """None, or — when the grammar read a descriptor ``0`` before a redirection as an argument in
    ``tree`` (``sh 0< f``, ``exec 0</dev/null``, ``echo x 0>f``: it does for no other digit) —
    ``data`` with that ``0`` as a blank before ``<`` (standard input, the operator's default) and
    as ``9`` before ``>`` (a descriptor other than standard output, as 0 is), to parse again.  The walker reads a
    redirection's descriptor from the text as written."""
    out: bytearray | None = None
    root = tree.root_node
    for match in _ZERO_FD_RE.finditer(data):
        at = match.start()
        node = root.descendant_for_byte_range(at, at + 1)
        if node is None or node.type != "number" or node.start_byte != at or node.end_byte != at + 1 or \
                node.parent is None or node.parent.type != "command":
            continue
        if out is None:
            out = bytearray(data)
        out[at] = 0x20 if data[at + 1:at + 2] == b"<" else 0x39
    return None if out is None else bytes(out)


def heredoc_repaired_tree(data: bytes) -> Any | None:
    """The tree of ``data`` with :func:`hide_delimiter_prefixes` applied, when that changes a
    byte and every changed byte lies in a here-document body of it; else None."""
    hidden, spots = hide_delimiter_prefixes(data)
    if spots:
        tree = tree_of(hidden)
        if _in_bodies(tree, spots):
            return tree
    return None


def error_repaired_tree(text: str, data: bytes) -> Any | None:
    """For a text whose tree has an error: the tree of ``data`` with :func:`hide_test_brackets`
    and :func:`hide_arithmetic_bases` applied, and each ``<>`` read as ``>>``, when that has
    none; else None.  The grammar does not know the read-write redirection ``[N]<>FILE``
    (``exec 9<>lock``), which is a redirection wherever ``>>`` is one; the walker reads the
    operator's text from the source as written, so it judges ``<>`` (a read and a write)."""
    hidden = data
    if "[ " in text:
        hidden = hide_test_brackets(hidden)
    if "#$" in text and "((" in text:
        hidden = hide_arithmetic_bases(hidden)
    if "<>" in text:
        hidden = hidden.replace(b"<>", b">>")
    if hidden != data:
        retried = tree_of(hidden)
        if not retried.root_node.has_error:
            return retried
    return None


def tree_of(data: bytes) -> Any:
    """``Parser.parse(data)`` — the only call of it — after :func:`check_scanner_bytes` on
    exactly these bytes (raises :class:`UnsafeText` with byte offsets)."""
    if not data.isascii():  # (check_scanner_bytes passes ASCII bytes: one call less)
        check_scanner_bytes(data)
    return (_PARSER or parser()).parse(data)


def parse(text: str, base: int = 0, collapse: tuple[int, int] | None = None) -> Source:
    """Parse shell text, joining backslash-newlines the way bash does.

    Raises :class:`UnsafeText` (before the parser sees them) for bytes the parser cannot
    handle safely: every parse goes through :func:`tree_of`, which checks the bytes it is
    given; byte offsets are mapped back to character offsets of ``text`` here.  A line
    that starts with a backslash is kept apart from the line before it (see
    :func:`split_backslash_lines`)."""
    source = _parse(text, base, collapse)
    if "\n\\" in source.text:  # (rare: a line starting with `\`, such as `\rm`)
        return split_backslash_lines(source)
    return source


def split_backslash_lines(source: Source) -> Source:
    """``source`` parsed again with a blank before each backslash that starts a line where
    tree-sitter-bash took the line for more words of the command before it.

    The grammar reads a newline followed by ``\\`` (``echo hi⏎\\rm -rf ~``) as part of a
    word — ``echo`` gets the arguments ``hi``, ``⏎\\rm``, ``-rf`` and ``~`` — where bash ends
    the command at the newline and runs ``rm -rf ~``.  A blank at the start of a line means
    nothing to bash, and the grammar then ends the command at the newline; the blank maps
    back to the backslash's offset.  Only newlines the tree holds inside a ``word`` are
    touched (never one in a string, comment or here-document)."""
    for _ in range(4):  # (each pass repairs every such newline of the tree; another is rare)
        data = source.data
        root = source.tree.root_node
        inserts: list[int] = []
        position = data.find(b"\n\\")
        while position != -1:
            node = root.descendant_for_byte_range(position, position + 1)
            if node is not None and node.type == "word" and data[node.start_byte] == 0x0A:
                inserts.append(position + 1)
            position = data.find(b"\n\\", position + 1)
        if not inserts:
            return source
        old_map = source._byte_to_orig
        chars = None if source.sliceable else _byte_to_char(source.text, data)
        text_pieces: list[str] = []
        data_pieces: list[bytes] = []
        new_map: list[int] = []
        last = 0
        for at in inserts + [len(data)]:
            data_pieces.append(data[last:at])
            text_pieces.append(source.text[last:at] if chars is None else source.text[chars[last]:chars[at]])
            new_map.extend(range(last, at) if old_map is None else old_map[last:at])
            if at != len(data):
                data_pieces.append(b" ")
                text_pieces.append(" ")
                new_map.append(at if old_map is None else old_map[at])
            last = at
        new_map.append(len(data) if old_map is None else old_map[len(data)])
        new_text = "".join(text_pieces)
        new_data = b"".join(data_pieces)
        try:
            tree = parse_tree(new_text, new_data)
        except UnsafeText as refused:
            raise UnsafeText(refused.why, new_map[refused.start], new_map[refused.end - 1] + 1) from None
        source = _source(new_text, new_data, tree, source.base, source.collapse, new_map)
    return source


def _parse(text: str, base: int = 0, collapse: tuple[int, int] | None = None) -> Source:
    """:func:`parse` but for lines that start with a backslash."""
    ascii = text.isascii()
    data = text.encode() if ascii else encode(text)
    byte_map: list[int] | None = None if ascii else _byte_to_char(text, data)
    if "\\\n" not in text:
        tree = _checked_tree(text, data, byte_map)
        if "((" in text and tree.root_node.has_error:  # (`((cd x); y)`, `(( ))`: as bash reads them)
            repaired = _double_paren_repaired(text, base, collapse)
            if repaired is not None:
                return repaired
        if "<<<" in text and ascii and tree.root_node.has_error:  # (`cat > f <<< x`: as bash reads it)
            repaired = _herestring_repaired(text, tree, base, collapse)
            if repaired is not None:
                return repaired
        return _source(text, data, tree, base, collapse, byte_map)
    # which backslash-newlines does bash join?  Those outside literal contexts — which need
    # a quote (raw and ANSI-C strings), a `#` (comments) or `<<` (quoted here-documents):
    # without any, every one is joined and the text as written need not be parsed.
    literal_possible = "'" in text or "#" in text or "<<" in text
    tree = _checked_tree(text, data, byte_map) if literal_possible else None
    joins: list[int] = []
    position = text.find("\\\n")
    while position != -1:
        if _odd_backslashes(text, position) and (
                tree is None or not _literal_at(tree, len(text[:position].encode("utf-8", "surrogateescape")))):
            joins.append(position)
        position = text.find("\\\n", position + 2)
    if not joins:
        return _source(text, data, tree if tree is not None else _checked_tree(text, data, byte_map), base, collapse,
                       byte_map)
    joined, joined_data, new_map = _edited(text, [(position, 2, "") for position in joins])
    try:  # joining can make `{` meet the bytes of such a character
        tree = tree_of(hide_bare_dollars(hide_escaped_returns(hide_prefix_words(hide_brace_words(joined_data)))))
    except UnsafeText as refused:
        start, end = new_map[refused.start], new_map[refused.end - 1] + 1
        raise UnsafeText(refused.why, start, end) from None
    return _source(joined, joined_data, tree, base, collapse, new_map)



def _edited(text: str, edits: list[tuple[int, int, str]]) -> tuple[str, bytes, list[int]]:
    """``text`` with ``edits`` (in order: at an offset, that many characters removed and a
    text inserted), its encoding, and for each of its bytes (and its end) the offset in
    ``text`` it came from (an inserted character: the offset it was inserted at)."""
    pieces: list[str] = []
    orig_index: list[int] = []
    last = 0
    for position, removed, inserted in edits:
        pieces.append(text[last:position])
        orig_index.extend(range(last, position))
        pieces.append(inserted)
        orig_index.extend([position] * len(inserted))
        last = position + removed
    pieces.append(text[last:])
    orig_index.extend(range(last, len(text)))
    edited = "".join(pieces)
    data = encode(edited)
    new_map = [orig_index[index] for index in _byte_to_char(edited, data)[:-1]]
    new_map.append(len(text))
    return edited, data, new_map

def double_paren_insertions(text: str) -> list[tuple[int, str]]:
    """Where bash reads a ``((`` otherwise than the grammar: (offset, text to insert there).

    Bash reads ``((`` to the ``)`` that closes the second ``(`` (quotes and escapes skipped): a
    ``)`` right after it makes an arithmetic command, anything else two nested subshells —
    ``((cd x); y)`` is ``( (cd x); y)`` (a blank inserted after the first ``(``, as for ``$((``,
    a command substitution of a subshell).  An empty ``(( ))`` is an arithmetic command that
    evaluates nothing (status 1, like ``((0))``: a ``0`` inserted).  The grammar reads both as
    errors."""
    insertions: list[tuple[int, str]] = []
    outer = ""  # (the quote open where the scan for `((` is)
    position = 0
    while position < len(text) - 1:
        char = text[position]
        if outer:
            if char == outer:
                outer = ""
            elif char == "\\" and outer == '"':
                position += 1
            position += 1
            continue
        if char == "\\":
            position += 2
            continue
        if char in "'\"":
            outer = char
            position += 1
            continue
        if char != "(" or text[position + 1] != "(":
            position += 1
            continue
        closing = _closing_paren(text, position + 2)
        if closing is None:
            break
        if closing + 1 < len(text) and text[closing + 1] == ")":
            if not text[position + 2:closing].strip():
                insertions.append((closing, "0"))
            position = closing + 2
        else:
            insertions.append((position + 1, " "))
            position += 1
    return insertions


def _closing_paren(text: str, index: int) -> int | None:
    """The offset of the ``)`` that closes a ``(`` just before ``index`` (quotes and escapes
    skipped), None when there is none."""
    depth = 1
    quote = ""
    while index < len(text):
        char = text[index]
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"':
                index += 1
        elif char == "\\":
            index += 1
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if not depth:
                return index
        index += 1
    return None


def herestring_moves(tree: Any, data: bytes) -> list[tuple[int, int, int]]:
    """Here-strings the grammar cannot read after output redirections (``cat > f <<< x``,
    ``jq . 2>/dev/null <<< '{}'``: an ERROR ``<<`` and a ``< x`` redirection): for each, the end
    of the command, and the start and end of the here-string.  Moved right after the command
    (``cat <<< x > f``), it parses, and means the same to bash: the redirections before it
    only touch other descriptors (none holds ``<`` or names descriptor 0)."""
    moves: list[tuple[int, int, int]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if not node.has_error:
            continue
        if node.type != "redirected_statement":
            stack.extend(node.children)
            continue
        children = node.children
        for index, child in enumerate(children):
            if not child.is_error or data[child.start_byte:child.end_byte] != b"<<" or index + 1 >= len(children):
                continue
            string = children[index + 1]
            body = children[0]
            between = children[1:index]
            if string.type != "file_redirect" or data[child.end_byte:child.end_byte + 1] != b"<" or \
                    string.children[0].type != "<" or body.type not in ("command", "subshell", "compound_statement") \
                    or not between or any(other.type != "file_redirect" or b"<" in data[other.start_byte:other.end_byte]
                                          or b"&0" in data[other.start_byte:other.end_byte] for other in between):
                continue
            moves.append((body.end_byte, child.start_byte, string.end_byte))
        stack.extend(child for child in children if child.type != "ERROR")
    return sorted(moves)


def _herestring_repaired(text: str, tree: Any, base: int, collapse: tuple[int, int] | None) -> Source | None:
    """The source of ``text`` (ASCII) with :func:`herestring_moves` applied (offsets mapped back
    to ``text``), when that parses without an error; else None."""
    moves = herestring_moves(tree, text.encode())
    if not moves:
        return None
    edits: list[tuple[int, int, str]] = []
    last = -1
    for body_end, start, end in moves:
        if body_end <= last:
            return None
        edits += [(body_end, 0, " " + text[start:end]), (start, end - start, "")]
        last = end
    return _edited_source(text, edits, base, collapse)


def _double_paren_repaired(text: str, base: int, collapse: tuple[int, int] | None) -> Source | None:
    """The source of ``text`` with the insertions of :func:`double_paren_insertions` (offsets
    mapped back to ``text``), when that parses without an error; else None."""
    insertions = double_paren_insertions(text)
    if not insertions:
        return None
    return _edited_source(text, [(position, 0, inserted) for position, inserted in insertions], base, collapse)


def _edited_source(text: str, edits: list[tuple[int, int, str]], base: int,
                   collapse: tuple[int, int] | None) -> Source | None:
    """The source of ``text`` with ``edits`` applied (see :func:`_edited`; offsets mapped back to
    ``text``), when that parses without an error; else None."""
    repaired, repaired_data, new_map = _edited(text, edits)
    try:
        tree = parse_tree(repaired, repaired_data)
    except UnsafeText:
        return None
    if tree.root_node.has_error:
        return None
    return _source(repaired, repaired_data, tree, base, collapse, new_map)


def _checked_tree(text: str, data: bytes, byte_map: list[int] | None) -> Any:
    """:func:`parse_tree`, its refusal's byte offsets mapped to character offsets of ``text``."""
    try:
        return parse_tree(text, data)
    except UnsafeText as refused:
        if byte_map is None:
            raise
        raise UnsafeText(refused.why, byte_map[refused.start], byte_map[refused.end - 1] + 1) from None


def _source(text: str, data: bytes, tree: Any, base: int, collapse: tuple[int, int] | None,
            byte_to_orig: list[int] | None) -> Source:
    """``Source(…)`` without ``type.__call__`` (which in CPython 3.11 re-enters the
    interpreter for ``__init__``: a parse makes one per nested script)."""
    source = _new_object(Source)
    source.text = text
    source.data = data
    source.tree = tree
    source.base = base
    source.collapse = collapse
    source._byte_to_orig = byte_to_orig
    source.sliceable = len(data) == len(text)
    source.direct = collapse is None and byte_to_orig is None
    source.limit = len(data)
    return source


_new_object = object.__new__


def first_error(tree: Any) -> Any | None:
    """The first ERROR or MISSING node of a tree, if any (iterative: no recursion limit)."""
    if not tree.root_node.has_error:
        return None
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            return node
        if node.has_error:
            stack.extend(reversed(node.children))
    return tree.root_node


#: the bytes that end a word to bash's lexer (blanks, newline and the metacharacters)
_WORD_END = frozenset(b" \t\n;&|<>()")


def bash_delimiter(data: bytes, position: int) -> bytes | None:
    """The here-document delimiter bash makes of the word at ``position`` of ``data``: the
    word as bash's lexer reads it (up to a blank or metacharacter outside quotes), quotes
    removed (``E'x'`` and ``"E"x`` are ``Ex``, ``\\E`` is ``E``, ``E""`` is ``E``).  None
    for a word holding an expansion or ``$'…'``/``$"…"`` quoting (bash does not expand the
    delimiter, but reads such a word past blanks) or an unterminated quote."""
    out = bytearray()
    size = len(data)
    index = position
    while index < size:
        byte = data[index]
        if byte in _WORD_END:
            break
        if byte == 0x5C:  # `\`: the next byte as itself (a backslash-newline: nothing)
            if index + 1 < size and data[index + 1] != 0x0A:
                out.append(data[index + 1])
            index += 2
        elif byte == 0x27:  # `'…'`: every byte as itself
            close = data.find(b"'", index + 1)
            if close == -1:
                return None
            out += data[index + 1:close]
            index = close + 1
        elif byte == 0x22:  # `"…"`: a backslash quotes only `$`, `` ` ``, `"`, `\` and newline
            index += 1
            while index < size and data[index] != 0x22:
                byte = data[index]
                if byte == 0x5C and index + 1 < size:
                    after = data[index + 1]
                    if after != 0x0A:
                        out += data[index + 1:index + 2] if after in b'$`"\\' else data[index:index + 2]
                    index += 2
                    continue
                if byte == 0x60 or (byte == 0x24 and data[index + 1:index + 2] in (b"(", b"{", b"[")):
                    return None
                out.append(byte)
                index += 1
            if index >= size:
                return None
            index += 1
        elif byte == 0x60 or (byte == 0x24 and data[index + 1:index + 2] in (b"'", b'"', b"(", b"{", b"[")):
            return None
        else:
            out.append(byte)
            index += 1
    return bytes(out)


def heredoc_misread(data: bytes, node: Any) -> str | None:
    """Why bash ends the here-document of ``node`` (a ``heredoc_redirect`` of a tree parsed
    from ``data``) on another line than tree-sitter-bash did, or None when both agree.

    The grammar's scanner reads the delimiter as its own approximation of a word (``E'x'``
    with the quotes, ``'E'x`` as ``E``), stores each character in one byte (``Ņ``, U+0145,
    becomes ``E``; a character above U+007F never matches again), and ends the body at a
    line that only *starts* with the delimiter.  Bash ends it at the first line that is
    exactly the delimiter (tabs stripped for ``<<-``; in ``$( )`` also one followed by
    ``)``): where the two differ, the commands bash runs after the body are not those in the
    tree (``cat <<Ņ⏎Ņ⏎rm -rf ~⏎E`` hides ``rm -rf ~`` in a body)."""
    start = body = end = None
    dash = False
    for child in node.children:
        kind = child.type
        if kind == "heredoc_start":
            start = child
        elif kind == "heredoc_body":
            body = child
        elif kind == "heredoc_end":
            end = child
        elif kind == "<<-":
            dash = True
    if start is None or end is None or end.is_missing:
        return None  # (no end: the tree has an error, which is unparsable already)
    delimiter = bash_delimiter(data, start.start_byte)
    if delimiter is None:
        return "a here-document delimiter with an expansion or `$'…'` quoting, which the parser does not read as bash"
    in_substitution = False
    parent = node.parent
    while parent is not None and not in_substitution:
        in_substitution = parent.type == "command_substitution"
        parent = parent.parent
    line_start = data.rfind(b"\n", 0, end.start_byte) + 1
    line_end = data.find(b"\n", end.start_byte)
    if line_end != -1 and end.end_byte > line_end + 1:  # (the end token swallowed the lines after it)
        return "the parser's end of a here-document runs past its line; the commands after it are not those it read"
    region_start = line_start if body is None else data.rfind(b"\n", 0, body.start_byte) + 1
    lines = data[region_start:line_start].split(b"\n")[:-1] if line_start > region_start else []
    lines.append(data[line_start:] if line_end == -1 else data[line_start:line_end])
    for number, line in enumerate(lines, start=1):
        if dash:
            line = line.lstrip(b"\t")
        ends = line == delimiter or (in_substitution and line.startswith(delimiter)
                                     and line[len(delimiter):len(delimiter) + 1] == b")")
        if ends != (number == len(lines)):
            shown = "".join(char if char.isprintable() else repr(char)[1:-1]
                            for char in delimiter.decode("utf-8", "backslashreplace"))
            where = f"its line {number}" if ends else "a later line or the end of the text"
            return (f"bash ends the here-document delimited by `{shown}` at {where}, the parser at its line "
                    f"{len(lines)}; the commands after it are not those the parser read")
    return None


def heredoc_missed_expansion(data: bytes, body: Any, code_only: bool = False) -> bool:
    """Whether the ``heredoc_body`` node ``body`` of an unquoted here-document holds an
    expansion bash performs (a ``$`` after an even run of backslashes, followed by ``(``,
    ``{``, ``[``, a name or a special parameter) outside every expansion node of the tree.
    The grammar misses them after a body that starts with an escaped backslash
    (``cat <<E⏎\\\\\\\\$(rm -rf ~)⏎E`` has no command substitution in its tree)."""
    start, end = body.start_byte, body.end_byte
    position = data.find(b"$", start, end)
    if position == -1:
        return False
    covered = [(child.start_byte, child.end_byte) for child in body.named_children if child.type != "heredoc_content"]
    while position != -1:
        backslashes = 0
        while position - backslashes - 1 >= start and data[position - backslashes - 1] == 0x5C:
            backslashes += 1
        after = data[position + 1:position + 2]
        if backslashes % 2 == 0 and after and (after in b"({[" or (not code_only and (
                after in b"_@*#?$!-" or after.isalnum()))) and not any(low <= position < high for low, high in covered):
            return True
        position = data.find(b"$", position + 1, end)
    return False
