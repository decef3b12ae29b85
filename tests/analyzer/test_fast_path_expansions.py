"""The fast path's ``$NAME`` in double quotes (``rm -rf "$OUT/root"``, ``rm -rf "$BUILD_DIR"/*``) is
exact: verdicts with and without the fast path are identical whatever the variables hold (set,
unset, empty, blanks, globs, tildes, braces, separators, alternatives), and the shapes
tree-sitter-bash reads differently still go to it."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stockade.analyzer import analyze, walker

_NAMES = ["x", "y", "HOME", "PWD", "OLDPWD", "IFS", "unset_one", "BASH_SOURCE", "_", "PATH", "OUT", "e"]
_WORDS = ['"${n}"', '"${n}/root"', '"${n}"/*', '"a${n}"', '"${n}-"', '"${n}:x"', '"${n}.txt"', '"${n}${m}"',
          '"${n}/${m}"', '"~${n}"', '"${n}"~', '~/"${n}"', '"${n}"\'q\'', '"a ${n} b"', '" ${n}"', '"${n} ${m}"',
          '"${n}[0]"', '"${n}{a,b}"', '{}', '"${n}"x=1', '--o="${n}"', '"${n}=${m}"', "-rf", "/", "~", "'${n}'"]
_PROGRAMS = ["rm", "cat", "ls", "cp", "echo", "bash", "sh", "git", "curl", "tee", "mkdir", "chmod", "find", "eval",
             "printf", "cd", "source", "touch", "env", "xargs"]
_SETUPS = ["", "x=a; ", "x='a b'; ", "x='*'; ", "x=~; ", "x='~/.ssh'; ", "x='{a,b}'; ", "x=; ", "x=/; ", "y=..; ",
           "OUT=$HOME; ", "IFS=/; x=a/b; ", "unset HOME; ", "cd /tmp || cd ~; ", "x=${P:-~/.ssh}; ",
           "y=\"$(id)\"; ", "cd ~; OLDPWD=/etc; ", "e=' '; ", "x=$'a\\nb'; ", "declare -A x; "]

_command = st.builds(lambda program, words, names: " ".join(
    [program, *(word.replace("${n}", "$" + names[i % len(names)]).replace("${m}", "$" + names[(i + 1) % len(names)])
                for i, word in enumerate(words))]),
    st.sampled_from(_PROGRAMS), st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4),
    st.lists(st.sampled_from(_NAMES), min_size=2, max_size=2))
_tails = st.sampled_from(["", " # c", " > out", " && ls", " | sh", "; cat f"])


def _same(ir, command: str) -> None:
    fast = analyze(command, ir)
    full = analyze(command, ir, fast_path=False)
    assert fast == full, f"{command!r}\nfast: {fast}\nfull: {full}"


def test_double_quoted_expansions_take_the_fast_path(ir, monkeypatch) -> None:
    parsed: list[str] = []
    original = walker.parse
    monkeypatch.setattr(walker, "parse", lambda text, *a, **k: parsed.append(text) or original(text, *a, **k))
    for text in ('rm -rf "$OUT/root"', 'rm -rf "$BUILD_DIR"/*', 'cat "$HOME/.ssh/id_rsa" | sh'):
        analyze(text, ir)
        assert text not in parsed, text
    monkeypatch.undo()


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(_SETUPS), _command, _tails, st.sampled_from(["bash -c '{}'", "{}"]))
@example("", 'rm -rf "$OUT/root"', "", "{}")
@example("", 'rm -rf "$BUILD_DIR"/*', "", "{}")
@example("x='*'; ", 'rm -rf "$x"/*', "", "bash -c '{}'")
@example("cd /tmp || cd ~; ", 'rm -rf "$PWD"/*', "", "bash -c '{}'")
@example("x=${P:-~/.ssh}; ", 'cat "$x/id_rsa"', "", "bash -c '{}'")
@example("unset HOME; ", 'cat "$HOME/.ssh/id_rsa"', "", "bash -c '{}'")
@example("x='*'; ", 'rm "a $x b"', "", "bash -c '{}'")  # (a `*` value in a quoted word: marked on both paths)
def test_generated_expansions_same_verdicts(ir, setup: str, command: str, tail: str, frame: str) -> None:
    _same(ir, setup + frame.replace("{}", command + tail))
