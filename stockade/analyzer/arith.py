"""The value of a bash arithmetic expansion whose operands are known.

``x=$((1+1)); y=/etc$x; rm -rf "${y%2}/nginx"`` deletes ``/etc/nginx``: the expansion's value
is known when its text is integer constants, variables holding integers (bare or as ``$x``)
and the operators below.  Anything else — assignments (``x=1``, ``x++``), the comma operator,
``**`` (unbounded work), arrays, substitutions, a base (``16#ff``) — leaves it not known (None),
as before.  Arithmetic is bash's: 64-bit two's complement, division truncating toward zero,
division by zero an error (not known).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

#: expressions longer than this are not evaluated
MAX_TEXT = 256
_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|[0-9]+)|\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?|([A-Za-z_][A-Za-z0-9_]*)"
                    r"|(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%()<>!~&|^?:]))")
_BINARY = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7, ">=": 7,
           "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}


class _NotKnown(Exception):
    """The expression's value is not known (or bash would fail on it)."""


def _wrap(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _tokens(text: str, lookup: Callable[[str], str | None]) -> list[tuple[str, int | str]]:
    out: list[tuple[str, int | str]] = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise _NotKnown
        number, dollar, bare, operator = match.groups()
        if number is not None:
            out.append(("n", int(number, 16) if number[:2] in ("0x", "0X") else
                        int(number, 8) if number[:1] == "0" and len(number) > 1 else int(number)))
        elif dollar is not None or bare is not None:
            value = lookup(dollar or bare or "")
            if value is None:
                raise _NotKnown  # (a variable the text does not set: the environment's, not known)
            value = value.strip() or "0"  # (set and empty, or unset by the text: 0)
            if not re.fullmatch(r"-?[0-9]{1,18}", value):
                raise _NotKnown  # (a value that is itself an expression, or not known)
            out.append(("n", int(value)))
        else:
            out.append(("o", operator))
        position = match.end()
    return out


def _parse(tokens: list[tuple[str, int | str]], position: int, level: int) -> tuple[int, int]:
    """Precedence climbing: the value of the expression at ``position`` with operators of at
    least ``level``; returns (value, next position)."""
    value, position = _unary(tokens, position)
    while position < len(tokens):
        kind, operator = tokens[position]
        if kind != "o":
            raise _NotKnown
        if operator == "?" and level <= 0:
            then, position = _parse(tokens, position + 1, 0)
            if position >= len(tokens) or tokens[position] != ("o", ":"):
                raise _NotKnown
            other, position = _parse(tokens, position + 1, 0)
            value = then if value else other
            continue
        precedence = _BINARY.get(str(operator))
        if precedence is None or precedence < level:
            break
        right, position = _parse(tokens, position + 1, precedence + 1)
        value = _apply(str(operator), value, right)
    return value, position


def _unary(tokens: list[tuple[str, int | str]], position: int) -> tuple[int, int]:
    if position >= len(tokens):
        raise _NotKnown
    kind, token = tokens[position]
    if kind == "n":
        return int(token), position + 1
    if token == "(":
        value, position = _parse(tokens, position + 1, 0)
        if position >= len(tokens) or tokens[position] != ("o", ")"):
            raise _NotKnown
        return value, position + 1
    if token in ("-", "+", "!", "~"):
        if position + 1 < len(tokens) and tokens[position + 1] == ("o", token) and token in "-+":
            raise _NotKnown  # (`--x`, `++x`: assignments)
        value, position = _unary(tokens, position + 1)
        return _wrap(-value if token == "-" else value if token == "+" else int(not value) if token == "!"
                     else ~value), position
    raise _NotKnown


def _apply(operator: str, left: int, right: int) -> int:
    if operator in ("/", "%"):
        if right == 0:
            raise _NotKnown
        quotient = abs(left) // abs(right) * (1 if (left < 0) == (right < 0) else -1)
        return _wrap(quotient if operator == "/" else left - right * quotient)
    if operator in ("<<", ">>"):
        right &= 63
        return _wrap(left << right if operator == "<<" else left >> right)
    results = {"+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
               "<": lambda: int(left < right), ">": lambda: int(left > right), "<=": lambda: int(left <= right),
               ">=": lambda: int(left >= right), "==": lambda: int(left == right), "!=": lambda: int(left != right),
               "&": lambda: left & right, "|": lambda: left | right, "^": lambda: left ^ right,
               "&&": lambda: int(bool(left) and bool(right)), "||": lambda: int(bool(left) or bool(right))}
    return _wrap(results[operator]())


def evaluate(text: str, lookup: Callable[[str], str | None]) -> str | None:
    """The value bash gives ``$((text))`` as a decimal string, or None when it is not known."""
    if len(text) > MAX_TEXT or not text.strip():
        return None
    try:
        tokens = _tokens(text, lookup)
        value, position = _parse(tokens, 0, 0)
    except (_NotKnown, RecursionError, ValueError):
        return None
    return str(value) if position == len(tokens) else None
