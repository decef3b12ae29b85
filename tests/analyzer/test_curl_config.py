"""curl's config-file reader (``curl -K``): a one-line case table and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.analyzer.models.net import curl_config_words

CASES = [
    ('url = "http://a.example/x"', ["--url", "http://a.example/x"]),
    ("url: http://a.example/x", ["--url", "http://a.example/x"]),
    ("url http://a.example/x trailing", ["--url", "http://a.example/x"]),
    ("-o /tmp/out", ["-o", "/tmp/out"]),
    ("--output=/tmp/out", ["--output", "/tmp/out"]),
    ("silent", ["--silent"]),
    ("  # a comment\n\n", []),
    ('data = "a\\"b\\\\c\\td"', ["--data", 'a"b\\c\td']),
    ('url = "unterminated', None),
    ("config = other.cfg", None),
    ("-K nested.cfg", None),
]


@pytest.mark.parametrize(("text", "words"), CASES, ids=[text[:30] for text, _ in CASES])
def test_case(text: str, words: list[str] | None) -> None:
    assert curl_config_words(text) == words


_NAME = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True).filter(lambda n: n != "config")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_NAME, st.text(st.characters(blacklist_categories=("Cs",),
                                                        blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                                         max_size=30)), max_size=8))
def test_quoted_values_round_trip(pairs: list[tuple[str, str]]) -> None:
    """``name = "VALUE"`` with VALUE escaped reads back as ``--name VALUE``."""
    text = "\n".join(f'{name} = "' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' for name, value in pairs)
    expected = [word for name, value in pairs for word in ("--" + name, value)]
    assert curl_config_words(text) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_words_or_none(text: str) -> None:
    words = curl_config_words(text)
    assert words is None or all(isinstance(word, str) and word for word in words[::2])
