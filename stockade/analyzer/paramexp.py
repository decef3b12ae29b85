"""Parameter-expansion operators on known values: what ``${x%suffix}``, ``${x//a/b}``,
``${x:off:len}``, ``${x^^}`` and the rest become when ``x`` is known.

:func:`apply_operator` is called by :meth:`~stockade.analyzer.words.WordExpander.visit_expansion`
with the variable's value (known: no :data:`~stockade.analyzer.effects.UNKNOWN` in it) and the
operand nodes after the operator; it returns the resulting text, or None when the result is
not known before the command runs (an operand with an unknown value, an extended glob, an
arithmetic offset it does not evaluate).  Patterns are bash globs: ``*``, ``?``, ``[…]`` and
backslash escapes in unquoted text, literal text in quotes; an unquoted expansion in a pattern
is itself a pattern, as in bash.  The replacement of ``${x/a/b}`` follows bash 5.2's default
``patsub_replacement``: an unquoted ``&`` is the matched text.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from stockade.analyzer.words import WordExpander

#: values longer than this are not matched against patterns (the result is unknown)
MAX_PATTERN_SUBJECT = 4096

#: a token of a pattern or replacement: (text, literal) — literal text is quoted
Token = tuple[str, bool]

_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
            "space": r" \t\n\r\f\v", "blank": r" \t", "xdigit": "0-9A-Fa-f",
            "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "word": "a-zA-Z0-9_"}
_LITERAL_KINDS = frozenset({"regex", "word", "number", "variable_name", "special_variable_name"})
_QUOTED_KINDS = frozenset({"string", "raw_string", "ansi_c_string"})
_EXPANSION_KINDS = frozenset({"simple_expansion", "expansion"})
_OFFSET_KINDS = frozenset({"number", "variable_name", "word", "parenthesized_expression", "unary_expression"})


def operand_tokens(expander: WordExpander, nodes: list[Any]) -> list[list[Token]] | None:
    """The operand nodes split at the unnamed separators (``/`` of ``${x/a/b}``, ``:`` of
    ``${x:1:2}``) into token lists; None when a piece's value is not known."""
    groups: list[list[Token]] = [[]]
    for node in nodes:
        kind = node.type
        if not node.is_named:
            if kind in ("/", ":"):
                groups.append([])
                continue
            groups[-1].append((expander.source.node_text(node), False))
            continue
        tokens = _tokens(expander, node)
        if tokens is None:
            return None
        groups[-1].extend(tokens)
    return groups


def _tokens(expander: WordExpander, node: Any) -> list[Token] | None:
    kind = node.type
    if kind in _LITERAL_KINDS:
        text = expander.source.node_text(node)
        return None if "$" in text or "`" in text else [(text, False)]
    if kind == "concatenation":
        out: list[Token] = []
        for child in node.children:
            tokens = _tokens(expander, child)
            if tokens is None:
                return None
            out.extend(tokens)
        return out
    if kind in _QUOTED_KINDS or kind in _EXPANSION_KINDS:
        text = "".join(text for text, _ in expander.parts(node, True))
        if UNKNOWN in text:
            return None
        if kind in _EXPANSION_KINDS:  # unquoted: the value is itself a pattern
            return [(text, False)]
        return [(text, True)]
    return None


def glob_regex(tokens: list[Token]) -> re.Pattern[str] | None:
    """A compiled regex matching what the bash glob ``tokens`` matches (None: not supported),
    meant for ``fullmatch``.  Every piece between two ``*`` has a fixed length, so the
    leftmost place each piece fits is the right one: the pieces after the first ``*`` but
    the last are atomic lazy groups (``(?>.*?piece)``) — a match costs time linear in the
    subject, where ``.*a.*a.*a…b`` would backtrack through every way to place the stars."""
    out: list[str] = []
    for text, literal in tokens:
        if literal:
            out.append(re.escape(text))
            continue
        index = 0
        length = len(text)
        while index < length:
            char = text[index]
            if char == "\\":
                if index + 1 < length:
                    out.append(re.escape(text[index + 1]))
                    index += 2
                    continue
                return None  # a lone trailing backslash (the grammar split the word)
            if char in "*?+@!" and text[index + 1:index + 2] == "(":
                return None  # an extended glob
            if char == "*":
                out.append(_STAR)
            elif char == "?":
                out.append(".")
            elif char == "[":
                bracket = _bracket(text, index)
                if bracket is None:
                    out.append(re.escape(char))
                else:
                    regex, index = bracket
                    out.append(regex)
                    continue
            else:
                out.append(re.escape(char))
            index += 1
    try:
        return re.compile(_atomic(out), re.S)
    except re.error:  # pragma: no cover - the translation only makes valid classes
        return None


#: a ``*`` among the pieces :func:`glob_regex` collects
_STAR = ".*"


def _atomic(pieces: list[str]) -> str:
    """The regex of glob pieces (each one character's regex, or :data:`_STAR`): the text
    before the first star, each piece between two stars as ``(?>.*?piece)``, then ``.*`` and
    the text after the last star (for ``fullmatch``: the end is anchored)."""
    segments: list[list[str]] = [[]]
    for piece in pieces:
        if piece is _STAR:
            segments.append([])
        else:
            segments[-1].append(piece)
    if len(segments) == 1:
        return "".join(segments[0])
    middle = "".join(f"(?>.*?{''.join(segment)})" for segment in segments[1:-1] if segment)
    return "".join(segments[0]) + middle + ".*" + "".join(segments[-1])


def _stars(pattern: re.Pattern[str]) -> bool:
    """Whether a pattern of :func:`glob_regex` holds a ``*`` (its matches have no fixed
    length): every other piece has its ``.`` and ``*`` escaped (a ``?`` is a ``.``, and the
    piece after it never starts with a bare ``*``)."""
    return ".*" in pattern.pattern


#: ``${x/pat/rep}`` with a ``*`` in ``pat`` tries every end at every position (as bash
#: does): for a longer value the result is not computed (unknown)
MAX_STAR_SUBSTITUTE = 512


def _bracket(text: str, start: int) -> tuple[str, int] | None:
    """``[…]`` at ``start``: (its regex, the index after it), or None (a literal ``[``)."""
    index = start + 1
    negate = text[index:index + 1] in ("!", "^")
    if negate:
        index += 1
    members: list[str] = []
    first = True
    while index < len(text):
        char = text[index]
        if char == "]" and not first:
            body = "".join(members)
            return ("[^" if negate else "[") + body + "]", index + 1
        first = False
        if char == "[" and text[index + 1:index + 2] == ":":
            end = text.find(":]", index + 2)
            name = text[index + 2:end] if end >= 0 else ""
            if name not in _CLASSES:
                return None
            members.append(_CLASSES[name])
            index = end + 2
            continue
        if char == "\\" and index + 1 < len(text):
            members.append(re.escape(text[index + 1]))
            index += 2
            continue
        if char == "-" and members and text[index + 1:index + 2] not in ("]", ""):
            members.append("-")
        else:
            members.append(re.escape(char) if char != "-" else r"\-")
        index += 1
    return None


def _replacement(tokens: list[Token], matched: str) -> str:
    """The replacement text of ``${x/pat/rep}`` for one match (``&`` is the match)."""
    out: list[str] = []
    for text, literal in tokens:
        if literal:
            out.append(text)
            continue
        index = 0
        while index < len(text):
            char = text[index]
            if char == "\\" and index + 1 < len(text):
                out.append(text[index + 1])
                index += 2
                continue
            out.append(matched if char == "&" else char)
            index += 1
    return "".join(out)


def _remove(value: str, pattern: re.Pattern[str], operator: str) -> str:
    """``#``/``##`` (prefix) and ``%``/``%%`` (suffix) removal."""
    length = len(value)
    if operator in ("#", "##"):
        cuts = range(length + 1) if operator == "#" else range(length, -1, -1)
        for cut in cuts:
            if pattern.fullmatch(value, 0, cut):
                return value[cut:]
        return value
    cuts = range(length, -1, -1) if operator == "%" else range(length + 1)
    for cut in cuts:
        if pattern.fullmatch(value, cut):
            return value[:cut]
    return value


def _substitute(value: str, pattern: re.Pattern[str], replacement: list[Token], operator: str) -> str | None:
    """``/`` (first), ``//`` (every), ``/#`` (anchored at the start), ``/%`` (at the end):
    the longest match at the first position that matches."""
    length = len(value)
    if operator == "/#":
        for end in range(length, -1, -1):
            if pattern.fullmatch(value, 0, end):
                return _replacement(replacement, value[:end]) + value[end:]
        return value
    if operator == "/%":
        for start in range(length + 1):
            if pattern.fullmatch(value, start):
                return value[:start] + _replacement(replacement, value[start:])
        return value
    stars = _stars(pattern)
    if stars and length > MAX_STAR_SUBSTITUTE:
        return None
    out: list[str] = []
    position = 0
    replaced = False
    while position <= length:
        if replaced and operator == "/":
            break
        found = -1
        if not stars:  # every match has the same length: the one match at this position, if any
            match = pattern.match(value, position)
            found = -1 if match is None else match.end()
        else:
            for end in range(length, position - 1, -1):
                if pattern.fullmatch(value, position, end):
                    found = end
                    break
        if found > position:
            out.append(_replacement(replacement, value[position:found]))
            position = found
            replaced = True
            continue
        if position < length:
            out.append(value[position])
        position += 1
    out.append(value[position:])
    return "".join(out)


def _integer(expander: WordExpander, tokens: list[Token]) -> int | None:
    """A substring offset or length: an integer, ``(-N)`` or a variable holding one."""
    text = "".join(text for text, _ in tokens).strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    if re.fullmatch(r"[+-]?\d{1,9}", text):
        return int(text)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        value = expander.scope.lookup(text)
        if value is not None and re.fullmatch(r"\s*[+-]?\d{1,9}\s*", value):
            return int(value)
    return None


def _substring(expander: WordExpander, value: str, nodes: list[Any]) -> str | None:
    """``${x:offset}`` and ``${x:offset:length}`` (negative: counted from the end)."""
    pieces: list[list[Token]] = [[]]
    for node in nodes:
        if not node.is_named and node.type == ":":
            pieces.append([])
        elif node.type in _OFFSET_KINDS:
            pieces[-1].append((expander.source.node_text(node), False))
        else:
            return None
    if len(pieces) > 2 or (not pieces[0] and len(pieces) == 1):
        return None
    offset = _integer(expander, pieces[0]) if pieces[0] else 0  # (`${x::2}`: an empty offset is 0)
    if offset is None:
        return None
    length = len(value)
    start = offset if offset >= 0 else max(0, length + offset) if -offset <= length else None
    if start is None:
        return ""  # bash expands an offset before the start to nothing
    if len(pieces) == 1:
        return value[start:]
    count = _integer(expander, pieces[1])
    if count is None:
        return None
    if count >= 0:
        return value[start:start + count]
    end = length + count
    return value[start:end] if end >= start else None  # (bash: an error, the command is not run)


_CASE = {"^^": str.upper, ",,": str.lower, "@U": str.upper, "@L": str.lower,
         "^": lambda s: s[:1].upper() + s[1:], ",": lambda s: s[:1].lower() + s[1:],
         "@u": lambda s: s[:1].upper() + s[1:]}


def apply_operator(expander: WordExpander, value: str, operator: str, nodes: list[Any]) -> str | None:
    """``value`` (known) after the expansion operator ``operator`` with operand ``nodes``
    (the children after the operator); None when the result is not known."""
    if operator == ":":
        return _substring(expander, value, nodes)
    if operator == "@":
        operator = "@" + (nodes[0].type if nodes else "")
        nodes = []
    if operator in _CASE:
        return _CASE[operator](value) if not nodes else None  # (a pattern limits the change)
    if operator not in ("#", "##", "%", "%%", "/", "//", "/#", "/%"):
        return None
    if len(value) > MAX_PATTERN_SUBJECT:
        return None
    groups = operand_tokens(expander, nodes)
    if groups is None:
        return None
    if operator[0] != "/":
        if len(groups) != 1:
            groups = [[token for group in groups for token in group]]  # a `:` or `/` is pattern text
        pattern = glob_regex(groups[0])
        return None if pattern is None else _remove(value, pattern, operator)
    pattern_tokens = groups[0]
    replacement = [token for group in groups[1:2] for token in group]
    if len(groups) > 2:  # `/` after the first separator is replacement text
        for group in groups[2:]:
            replacement = replacement + [("/", True)] + group
    if not pattern_tokens:  # an empty pattern: `/#` prepends, `/%` appends, `/` and `//` change nothing
        if operator == "/#":
            return _replacement(replacement, "") + value
        return value + _replacement(replacement, "") if operator == "/%" else value
    pattern = glob_regex(pattern_tokens)
    return None if pattern is None else _substitute(value, pattern, replacement, operator)
