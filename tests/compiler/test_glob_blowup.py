"""Globs never cost exponential time.

A glob with several ``*`` becomes a :class:`~stockade.compiler.query.LinearGlob` (an
automaton, linear in the path) instead of a backtracking regex, with the same meaning;
redundant wildcards (``**/**``, ``***``) are collapsed when a policy is compiled; and the
Seatbelt backend refuses a glob whose depth slices would need too many alternatives instead
of enumerating them for minutes.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stockade
from stockade import catalogue as codes
from stockade.backends.base import UnsupportedRules, compile_ir
from stockade.compiler.pipeline import compile_policy
from stockade.compiler.query import LinearGlob, glob_to_regex
from stockade.diagnostics import StockadeError


def _reference_regex(pattern: str) -> re.Pattern[str]:
    """The regex reading of a glob (what glob_to_regex compiles for few wildcards)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("/**/", i):
            out.append("(?:/.*)?/")
            i += 4
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            out.append("[^/]*" if pattern[i] == "*" else "[^/]" if pattern[i] == "?" else re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


@given(st.text("ab/*?", max_size=10).map(lambda s: "/" + s), st.text("ab/", max_size=10).map(lambda s: "/" + s))
@settings(max_examples=400, deadline=None)
def test_the_automaton_means_what_the_regex_means(pattern: str, path: str) -> None:
    expected = _reference_regex(pattern).match(path) is not None
    assert (LinearGlob(pattern).match(path) is not None) == expected, (pattern, path)


def test_match_honours_pos_and_endpos() -> None:
    glob = LinearGlob("/a*b*c*d")
    assert glob.match("/aXbXcXd/rest", 0, 8)
    assert glob.match("/aXbXcXd/rest") is None


def test_eight_stars_use_the_automaton_and_answer_on_a_long_path() -> None:
    matcher = glob_to_regex("/tmp/*a*a*a*a*a*a*a*b")
    assert isinstance(matcher, LinearGlob)
    assert matcher.match("/tmp/" + "a" * 5000) is None  # a backtracking regex would not return
    assert matcher.match("/tmp/" + "a" * 5000 + "b")
    assert not isinstance(glob_to_regex("/home/*/.ssh/*"), LinearGlob)


def test_a_policy_with_a_starry_glob_decides_long_paths() -> None:
    policy = stockade.load_policy(text='filesystem {\n  read /\n  deny "/tmp/*a*a*a*a*a*a*a*b"\n}\n',
                                  workspace="/tmp", home="/tmp")
    assert policy.check_path("/tmp/" + "a" * 3000).allowed
    assert not policy.check_path("/tmp/" + "a" * 3000 + "b").allowed


def test_redundant_wildcards_are_collapsed() -> None:
    ir = compile_policy(text='filesystem {\n  read /\n  deny "/tmp' + "/**" * 30 + '/x" "/a***b"\n}\n',
                        workspace="/tmp", home="/tmp").ir
    patterns = sorted(rule.pattern for rule in ir.filesystem if rule.kind == "deny")
    assert patterns == ["/a**b", "/tmp/**/x"]


def test_seatbelt_compiles_thirty_deep_wildcards() -> None:
    ir = compile_policy(text='filesystem {\n  read /\n  deny "/tmp' + "/**" * 30 + '/x"\n}\n',
                        workspace="/Users/dev/ws", home="/Users/dev", platform="darwin").ir
    single = compile_policy(text='filesystem {\n  read /\n  deny "/tmp/**/x"\n}\n',
                            workspace="/Users/dev/ws", home="/Users/dev", platform="darwin").ir
    assert compile_ir(ir, "seatbelt").text == compile_ir(single, "seatbelt").text


def test_seatbelt_refuses_a_glob_with_too_many_ways_to_match() -> None:
    text = ('filesystem {\n  read /\n  deny "/tmp' + "/**/a" * 30 + '"\n  write "/tmp'
            + "/d" * 60 + '"\n}\n')
    ir = compile_policy(text=text, workspace="/Users/dev/ws", home="/Users/dev", platform="darwin").ir
    with pytest.raises((UnsupportedRules, StockadeError)) as caught:
        compile_ir(ir, "seatbelt")
    found = [d for d in caught.value.diagnostics if d.severity == "error"]
    assert [d.code for d in found] == [codes.UNSUPPORTED_RULE]
    assert "too many `**`" in found[0].message and found[0].span.line == 3


def _plain_component(part: str) -> str:
    out = []
    for char in part:
        out.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
    return "".join(out)


@given(st.text("ab*?.", min_size=1, max_size=8).filter(lambda p: p != "**"), st.text("ab.", max_size=10))
@settings(max_examples=400, deadline=None)
def test_the_analyzer_s_atomic_component_regex_means_the_plain_one(part: str, name: str) -> None:
    from stockade.analyzer.globs import glob_regex

    plain = re.compile("/" + _plain_component(part) + r"\Z", re.DOTALL)
    expected = plain.match("/" + name) is not None
    assert (glob_regex([part], dots=True).match("/" + name) is not None) == expected, (part, name)


def test_the_analyzer_judges_a_starry_command_glob_against_long_rule_paths() -> None:
    policy = stockade.load_policy(text='filesystem {\n  read /\n  deny "/tmp/' + "a" * 60 + '"\n}\n',
                                  workspace="/tmp", home="/tmp")
    assert policy.analyze("cat /tmp/*a*a*a*a*a*a*a*a*a*a*b").decision == "allow"  # would not return before
    assert policy.analyze("cat /tmp/*a*a*a*a*a*a*a*a*a*a").decision == "deny"
