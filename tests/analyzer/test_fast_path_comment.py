"""The fast path drops a trailing comment (``ls  # list``) exactly as the tree walk skips it:
verdicts with and without the fast path are identical, also where a ``#`` is not a comment
(inside quotes, inside a word) or the comment is not plain ASCII."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_fast_path import simple_commands, simple_lists

from stockade.analyzer import analyze

_COMMENTS = ["#", "# x", "#rm -rf ~", "# 'unterminated", '# "q" $(id) `id` <<EOF', "# a | b && c; d", "#\t\\",
             "# é", "# {日", "#\rx", "# x\ny", "## x #"]
_BLANKS = [" ", "  ", "\t", ""]

_commented = st.builds(lambda text, blank, comment: text + blank + comment, st.one_of(simple_commands, simple_lists),
                       st.sampled_from(_BLANKS), st.sampled_from(_COMMENTS))


def _same(ir, command: str) -> None:
    fast = analyze(command, ir)
    full = analyze(command, ir, fast_path=False)
    assert fast == full, f"{command!r}\nfast: {fast}\nfull: {full}"


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_commented)
@example("ls  # rm -rf ~")
@example("echo 'a #b' c # d")
@example("echo \"a #b\" c")
@example("echo a#b # c")
@example("echo x >> f # append")
@example("git status && rm -rf ~ # cleanup")
@example(" # only a comment")
def test_generated_comments_same_verdicts(ir, command: str) -> None:
    _same(ir, command)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_commented.filter(lambda text: "'" not in text and "\n" not in text),
       st.sampled_from(["bash -c '{}'", "sh <<< '{}'", "eval '{}\n'", "x=1; {}"]))
def test_nested_comments_same_verdicts(ir, command: str, frame: str) -> None:
    _same(ir, frame.replace("{}", command, 1))
