"""Error recovery and the wording of syntax errors.

One bad line gives errors on that line only (no cascade over the rest of the file), every
syntax error says how to fix it, and arbitrary text never makes the parser raise, hang or
report more errors than the file has lines.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade import catalogue as codes
from stockade.diagnostics import Span, StockadeError
from stockade.policy_lang import parse
from stockade.policy_lang.parser import MAX_SYNTAX_ERRORS

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = (ROOT / "examples" / "coding-agent.policy").read_text(encoding="utf-8")
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def diagnostics(text: str) -> list:
    return parse(text, "t.policy")[1]


def test_an_unquoted_reason_is_one_error_and_the_other_errors_still_show() -> None:
    text = ('policy "x"\ncommands {\n    deny sudo because no root\n    allow git status\n    wrte foo\n}\n'
            "filesystem {\n  wrte /tmp\n}\n")
    found = diagnostics(text)
    assert [(d.code, d.span.line) for d in found] == [
        (codes.SYNTAX_ERROR, 3), (codes.UNKNOWN_KEYWORD, 5), (codes.UNKNOWN_KEYWORD, 8)]
    assert found[0].message == "the reason after `because` must be quoted"
    assert found[0].help == 'write `because "no root"`'
    assert (found[0].span.column, found[0].span.end_column) == (23, 30)


def test_an_unquoted_name_or_include_is_one_clear_error() -> None:
    found = diagnostics('policy x\nfilesystem {\n  read /\n}\n')
    assert [(d.message, d.help) for d in found] == [("the policy name must be quoted", 'write `policy "x"`')]
    found = diagnostics('include base.policy\n')
    assert [(d.message, d.help) for d in found] == [("the include path must be quoted",
                                                     'write `include "base.policy"`')]
    assert [d.message for d in diagnostics('policy\n')] == ["the policy needs a name"]


def test_braces_are_explained_by_where_they_are() -> None:
    stray = diagnostics('filesystem {\n  read /\n}\n}\n')
    assert [(d.span.line, d.help) for d in stray] == [(4, "there is no block open here")]
    inside = diagnostics('filesystem {\n  locked }\n')
    assert inside[0].help.startswith("a rule is one line")
    same_line = diagnostics('filesystem {\n  read / }\n')
    assert same_line[0].help == "put `}` on a line of its own"
    nested = diagnostics('filesystem {\n  read / {\n  write /tmp\n}\nlimits {\n  memory 1x\n}\n')
    assert [(d.span.line, d.code) for d in nested] == [(2, codes.SYNTAX_ERROR), (6, codes.UNKNOWN_UNIT)]
    assert nested[0].help.startswith("blocks do not nest")


def test_no_message_says_unexpected_the() -> None:
    for text in ('filesystem\n{\n}\n', 'commands {\n  deny sudo because\n}\n', 'policy "a" "b"\n'):
        for found in diagnostics(text):
            assert "unexpected the" not in found.message, found


def test_a_url_in_the_network_section_is_called_a_url() -> None:
    found = diagnostics('network {\n  allow https://pypi.org\n  deny http://example.com:8080/x\n}\n')
    assert [d.code for d in found] == [codes.BAD_HOST, codes.BAD_HOST]
    assert "a host, not a url" in found[0].message.lower()
    assert found[0].help == "write `allow pypi.org:443`"
    assert found[1].help == "write `deny example.com:8080`"


def test_every_syntax_error_has_a_span_and_a_hint() -> None:
    broken = ['policy x\n', 'filesystem {\n  read "a\n}\n', 'filesystem {\n read /\n', '}\n', 'x {\n} y\n',
              'filesystem { read / }\n', 'commands {\n  deny sudo because\n}\n', 'filesystem {\n  \x0b\n}\n',
              'test {\n  locked allow "x"\n}\n', 'policy "a"\npolicy "b"\nenforced\nenforced\n']
    for text in broken:
        found = diagnostics(text)
        assert found, text
        for item in found:
            assert isinstance(item.span, Span) and item.span.line >= 1 and item.span.column >= 1, (text, item)
            assert item.help, (text, item)


def test_syntax_errors_are_capped_with_a_note() -> None:
    text = "filesystem {\n" + "  read / }\n" * 200 + "}\n"
    found = diagnostics(text)
    assert len(found) == MAX_SYNTAX_ERRORS + 1
    assert found[-1].severity == "note" and "too many syntax errors" in found[-1].message


@given(st.text(max_size=300))
@SETTINGS
def test_arbitrary_text_never_raises_and_errors_stay_bounded(text: str) -> None:
    policy, found = parse(text, "t.policy")
    lines = text.count("\n") + 1
    syntax = [d for d in found if d.code == codes.SYNTAX_ERROR and d.severity == "error"]
    assert len(syntax) <= min(lines, MAX_SYNTAX_ERRORS)
    assert policy is None or not [d for d in found if d.severity == "error"]


_rule_lines = [index for index, line in enumerate(SAMPLE.split("\n"))
               if line.startswith("    ") and line.strip() and not line.strip().startswith("#")]
_bad_line = st.text(st.characters(blacklist_characters="{}\n\r\x00", blacklist_categories=("Cs",)), max_size=40)


@given(st.sampled_from(_rule_lines), _bad_line)
@SETTINGS
def test_one_bad_line_among_good_ones_gives_errors_on_that_line_only(index: int, bad: str) -> None:
    lines = SAMPLE.split("\n")
    lines[index] = "    " + bad
    text = "\n".join(lines)
    for found in parse(text, "t.policy")[1]:
        assert found.span is not None and found.span.line == index + 1, (bad, found)


@given(st.text(max_size=200))
@settings(max_examples=40, deadline=None)
def test_load_policy_text_never_raises_anything_but_stockade_error(text: str) -> None:
    import stockade

    try:
        stockade.load_policy(text=text, workspace="/tmp", home="/tmp")
    except StockadeError as error:
        assert error.diagnostics
