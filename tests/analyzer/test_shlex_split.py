""":func:`stockade.analyzer.words.shlex_split` is ``shlex.split``: the same words, and the same
``ValueError`` for text shlex cannot split (it takes ``str.split`` only for text without
quotes, backslashes or white space other than shlex's)."""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from stockade.analyzer.words import shlex_split

_ALPHABET = "ab~#$é \t\n\r\x0b\x0c\x1c\u00a0\u2003'\"\\"


def _split(function, text: str) -> list[str] | str:
    try:
        return function(text)
    except ValueError as error:
        return f"ValueError: {error}"


@given(st.text(alphabet=_ALPHABET, max_size=16))
def test_the_same_words_as_shlex(text: str) -> None:
    assert _split(shlex_split, text) == _split(shlex.split, text)


def test_plain_and_quoted_text() -> None:
    assert shlex_split("/home/u\n") == ["/home/u"]
    assert shlex_split("a  b\tc\r\n") == ["a", "b", "c"]
    assert shlex_split("'a b' c") == ["a b", "c"]
    assert shlex_split("a\u00a0b") == ["a\u00a0b"]  # (not a blank to shlex)
    assert _split(shlex_split, "'a") == _split(shlex.split, "'a")
