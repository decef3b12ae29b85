"""A brace word in command position (``{rm,-rf,~}``) is brace-expanded as bash does, not
refused as unparsable: tree-sitter-bash takes its ``{`` for a group's brace, so
:func:`stockade.analyzer.parse.hide_brace_words` hides every ``{`` that starts a longer word
from the grammar (same offsets) and the word expander expands the text as written."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stockade.analyzer import analyze
from stockade.analyzer.parse import (
    _BARE_BANG_RE,
    _BRACE_WORD_RE,
    _PREFIX_WORD_RE,
    _blank,
    _blank_bang,
    hide_brace_words,
    hide_prefix_words,
)


def _codes(verdict) -> list[str]:
    return [reason.code for reason in verdict.reasons]


def test_a_brace_word_in_command_position_is_the_command_it_expands_to(ir, sandbox_dirs) -> None:
    _, home, tmpdir = sandbox_dirs
    verdict = analyze("{rm,-rf,~}", ir)
    assert verdict.decision == "deny" and _codes(verdict) == ["A403"]
    assert home in verdict.reasons[0].message and verdict.reasons[0].span == (0, 10)
    assert _codes(analyze("x=1; {rm,-rf,~}", ir)) == ["A403"]
    assert "A403" in _codes(analyze("$({rm,-rf,~})", ir))
    # the same command on a path the policy lets it delete is judged on that path
    assert analyze(f"{{rm,-rf,{tmpdir}/build}}", ir).decision == "allow"
    assert analyze("{ls,-la}", ir).decision == "allow"
    # a brace range in command position, and a brace word in an argument, as before
    assert "A403" in _codes(analyze("for i in {1..3}; do {rm,-rf,~/$i}; done", ir))
    assert analyze("echo {a,b}", ir).decision == "allow"


def test_groups_and_other_braces_are_left_to_the_grammar(ir) -> None:
    assert analyze("{ echo hi; }", ir).decision == "allow"
    assert analyze("{ rm -rf ~; }", ir).decision == "deny"
    # no closing brace: no expansion; bash looks for a program named `{rm,-rf,~` (not found),
    # judged like any unknown program by what it visibly touches
    assert analyze("{rm,-rf,~", ir).decision == "allow"
    # `{ls;}` is a syntax error to bash (a lone `}`), which then runs nothing; what follows a
    # brace word is still seen
    assert "A403" in _codes(analyze("{ls;} && rm -rf ~", ir))


def test_only_braces_that_start_a_longer_word_are_hidden() -> None:
    assert hide_brace_words(b"{rm,-rf,~}") == b"\x01rm,-rf,~}"
    assert hide_brace_words(b"a; {b,c} {d,e}|{f,g}") == b"a; \x01b,c} \x01d,e}|\x01f,g}"
    assert hide_brace_words(b"$({x,y})") == b"$(\x01x,y})"
    for text in (b"{ a; }", b"{}", b"find . -exec rm {} +", b"x{a,b}", b"${x}", b"x={a,b}", b"'{a'", b"{\n",
                 b"{;", b"{|x", b"{(x)", b"{<f", b"f(){ :; }", b"!{a,b}"):
        assert hide_brace_words(text) == text, text


@given(st.text(alphabet="{} ;&|()<>`'\"$!ab,\n\t", max_size=40))
def test_hiding_keeps_every_offset_and_touches_only_braces(text: str) -> None:
    data = text.encode()
    hidden = hide_brace_words(data)
    assert len(hidden) == len(data)
    assert all(a == b or (a == ord("{") and b == 1) for a, b in zip(data, hidden, strict=True))


@given(st.binary(max_size=24) | st.text(alphabet="{} ;&|()<>`$ab,\n\t\r\f\v\x0b", max_size=40).map(str.encode))
def test_hiding_is_exactly_the_brace_word_pattern(data: bytes) -> None:
    # the hand scan (one `bytes.find` per brace) does what the documented pattern does
    assert hide_brace_words(data) == _BRACE_WORD_RE.sub(b"\x01", data)


@given(st.lists(st.sampled_from(["time", " ", "\t", "!", "coproc", "{", "(", "[[", "while", ";", "\n", "-p", "--",
                                 "x", "if", "then", "do", "#!/bin/sh"]), max_size=10).map("".join))
def test_prefix_words_hint_never_skips_a_match(text: str) -> None:
    # the cheap search before the costly pattern only skips texts the pattern leaves alone
    data = text.encode()
    assert hide_prefix_words(data) == _PREFIX_WORD_RE.sub(_blank, _BARE_BANG_RE.sub(_blank_bang, data))
