"""The environment rules' glob matching (shared by the IR's decisions and the runtime's
filter): the hand-written matchers give exactly what ``fnmatch.fnmatchcase`` gives."""

from __future__ import annotations

from fnmatch import fnmatchcase

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.compiler.environment import filter_environment, glob_match, name_matcher

_alphabet = st.sampled_from("AB_*?x[]!")
_names = st.text(alphabet="AB_x", max_size=6)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=_alphabet, max_size=6), _names)
def test_glob_match_and_name_matcher_are_fnmatchcase(pattern: str, name: str) -> None:
    try:
        expected = fnmatchcase(name, pattern)
    except Exception:  # a pattern fnmatch cannot compile is not a rule
        return
    assert glob_match(name, pattern) == expected
    assert name_matcher(pattern)(name) == expected


def test_common_shapes() -> None:
    cases = {"PATH": ["PATH"], "LC_*": ["LC_ALL", "LC_"], "*_TOKEN": ["GH_TOKEN", "_TOKEN"],
             "*PASSWORD*": ["PASSWORD", "DB_PASSWORD_FILE"], "*": ["", "ANY"]}
    for pattern, names in cases.items():
        assert all(name_matcher(pattern)(name) for name in names), pattern
    assert not name_matcher("LC_*")("XLC_A") and not name_matcher("*_TOKEN")("TOKEN_X")


def test_filter_environment_drop_beats_keep_and_set_assigns() -> None:
    rules = [("keep", "PATH", None), ("keep", "GH_*", None), ("drop", "*_TOKEN", None), ("set", "CI", "1")]
    env = {"PATH": "/bin", "GH_TOKEN": "secret", "GH_HOST": "h", "HOME": "/h"}
    assert filter_environment(rules, env) == {"PATH": "/bin", "GH_HOST": "h", "CI": "1"}
