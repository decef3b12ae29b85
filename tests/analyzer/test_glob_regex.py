"""What :func:`stockade.analyzer.globs.path_candidates` relies on to build the regexes of a
glob's prefixes from one translation of its components: the regex of ``parts[:k]`` is the
first ``k`` component regexes joined, and a run of literal characters is escaped as each
character would be on its own."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from stockade.analyzer.globs import _compile_body, _component_regex, _pieces, glob_regex

_COMPONENTS = st.sampled_from(["a", "b.c", ".env", "*", "**", "?", "[ab]", "[!a]", "[", "x*y*z", "*.md", ".*", "a]b",
                               "(", "+", "é", "a b", "ws"])


@given(st.lists(_COMPONENTS, max_size=6), st.booleans())
def test_prefix_regexes_are_joined_component_regexes(parts: list[str], dots: bool) -> None:
    pieces = _pieces(parts, dots)
    for k in range(len(parts) + 1):
        assert _compile_body("".join(pieces[:k])).pattern == glob_regex(parts[:k], dots).pattern


@given(st.text(alphabet="ab.()+^$|\\{}é -", max_size=12))
def test_literal_runs_are_escaped_character_by_character(text: str) -> None:
    assert _component_regex(text, True) == "".join(re.escape(char) for char in text)


def test_globs_match_as_before() -> None:
    regex = glob_regex(["ws", "*.md"])
    assert regex.match("/ws/a.md") and not regex.match("/ws/.a.md") and not regex.match("/ws/d/a.md")
    assert glob_regex(["**", ".env*"]).match("/a/b/.env.local")
