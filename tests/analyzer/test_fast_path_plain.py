"""The fast path (commands and lists of unquoted words, run straight from ``str.split``) and
the ``{}`` placeholder word are exact: verdicts with and without the fast path are identical.

``{}`` (find's and xargs's placeholder) is accepted only as a whole argument: tree-sitter-bash
reads it as a concatenation of ``{`` and ``}`` (value ``{}``), but as a compound statement in
command position, and ``x{}``/``{}x`` as other concatenations — those go to tree-sitter.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stockade.analyzer import analyze
from stockade.analyzer.fast import lex_plain

_WORDS = ["ls", "rm", "find", "xargs", "echo", "git", "sh", "cat", "time", "if", "x=1", "a@b", "=", "==", "=~",
          "{}", "{}x", "x{}", "{}{}", "{", "}", "~", "~/x", "~+", "~root/y", "-rf", "-exec", "-I", "+", "*.md",
          ".", "/etc/shadow", "a:b", "%s", "--", "a,b"]
_BLANKS = [" ", "  ", "\t", " \t"]
_OPS = ["&&", "||", ";", "|", " && ", " || ", "; ", " | ", " ;", "&", ""]

_commands = st.builds(lambda lead, words, blanks, trail: lead + "".join(
    b + w for b, w in zip(blanks, words, strict=False)).lstrip(" \t") + trail,
    st.sampled_from(["", " ", "\t"]), st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6),
    st.lists(st.sampled_from(_BLANKS), min_size=6, max_size=6), st.sampled_from(["", " ", "\t "]))
_lists = st.builds(lambda first, rest: first + "".join(op + command for op, command in rest),
                   _commands, st.lists(st.tuples(st.sampled_from(_OPS), _commands), max_size=4))


def _same(ir, command: str) -> None:
    fast = analyze(command, ir)
    full = analyze(command, ir, fast_path=False)
    assert fast == full, f"{command!r}\nfast: {fast}\nfull: {full}"


def test_placeholder_is_lexed_only_as_a_whole_argument() -> None:
    assert lex_plain("find . -exec rm -rf {} +") is not None
    assert lex_plain("xargs -I {} rm {}") is not None
    for text in ("{} a", "echo {}x", "echo x{}", "echo {}{}", "echo {", "echo }", "echo {a,b}"):
        assert lex_plain(text) is None, text
    assert lex_plain("find . -name x | xargs -I {} rm {}") is not None
    for text in ("a; {} b", "a | {}", "echo {}x && ls", "x=1 && ls", "a;b", "a && b|c"):
        assert lex_plain(text) is None, text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_lists)
@example("find . -exec rm -rf {} +")
@example("find ~ -name '*.pyc' | xargs -I {} rm {}")
@example("echo {} && {} x")
@example("ls ~ ~+ ~root/y;cd /tmp && ls ~+")
@example("test {} = x")
@example("- a@b")  # a lone `-` before `a=b` or `a@b`: dropped or an error to tree-sitter-bash
@example("- a=b")
@example("- PROMPT_COMMAND=id")
@example("- ProxyCommand=sh >f")
def test_generated_plain_text_same_verdicts(ir, command: str) -> None:
    _same(ir, command)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_lists, st.sampled_from(["bash -c '{}'", "sh <<< '{}'", "eval '{}\n'", "x=1; {}"]))
def test_nested_plain_text_same_verdicts(ir, command: str, frame: str) -> None:
    _same(ir, frame.replace("{}", command, 1))
