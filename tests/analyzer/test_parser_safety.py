"""The parser must never take the process down: inputs that crash tree-sitter-bash.

Every released tree-sitter-bash (0.21.0 … 0.25.1) calls C ``isdigit()`` on the code point
after ``{`` (and after ``{N..``); above U+00FF that reads glibc's ctype table out of bounds and
segfaults in about half the processes (it depends on the address-space layout).  The
minimised input found by the property tests was ``{`` + U+D5692 (two characters).  The
analyzer refuses such text before parsing (``unparsable``, A400).

The crash tests run the analyzer in SUBPROCESSES, several at once (each has its own layout):
without the guard, at least one of them segfaults with probability > 99 %, which fails the
test instead of killing pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.analyzer import analyze
from stockade.analyzer.parse import UnsafeText, check_scanner_bytes, check_scanner_safe, hide_brace_words

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

#: ``{`` inside a word: a ``{`` that starts a word reaches the parser hidden (see
#: :func:`~stockade.analyzer.parse.hide_brace_words`), so the scanner never reads after it.
MINIMISED = ["a{\U000d5692", "x a{\U000d5692", "echo a{\U00099d94", "echo a{1..\U00099d94", "a a{12\u65e5",
             "bash -c 'echo a{\U000d5692'", "echo a{\\\n\U000d5692"]
#: The same characters as UTF-8 bytes smuggled in with ``surrogateescape`` (from a file, JSON
#: ``\\udcXX`` escapes, ANSI-C strings): valid UTF-8 again once the parser gets the bytes.
SMUGGLED = [text.encode("utf-8").decode("ascii", "surrogateescape") for text in MINIMISED]

_CHILD = """
import json, sys
sys.path.insert(0, TESTS)
from conftest import fixture_ir
from stockade.analyzer import analyze
ir = fixture_ir("/w", "/home/u", "/t")
texts = json.loads(sys.stdin.read())
for cp in range(0x100, 0x110000, 0x800):       # the whole code point range, both trigger sites
    if not 0xD800 <= cp < 0xE000:
        texts += ["echo a{" + chr(cp), "echo a{1.." + chr(cp)]
        texts += [t.encode().decode("ascii", "surrogateescape") for t in texts[-2:]]
out = [[v.decision, [r.code for r in v.reasons]] for v in (analyze(t, ir) for t in texts)]
print(json.dumps(out))
"""


def test_crashing_inputs_are_refused_in_subprocesses() -> None:
    code = _CHILD.replace("TESTS", repr(str(HERE)))
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(6)]
    for proc in procs:
        out, err = proc.communicate(json.dumps(MINIMISED + SMUGGLED), timeout=120)
        assert proc.returncode == 0, f"analyzer process died with {proc.returncode}: {err[-2000:]}"
        for decision, codes in json.loads(out):
            assert decision == "deny" and codes == ["A400"]


@pytest.mark.parametrize("text", MINIMISED + SMUGGLED)
def test_refusal_names_the_spot(ir, text: str) -> None:
    verdict = analyze(text, ir)
    assert verdict.decision == "deny"
    [reason] = verdict.reasons
    assert reason.code == "A400" and "tree-sitter-bash scanner bug" in reason.message
    start, end = reason.span
    assert text[start] == "{" and ord(text[end - 1]) > 0xFF


@pytest.mark.parametrize("text", ["echo $'a{\\udcf3\\udcb0\\udc80\\udc80'", "bash -c $'a{\\udcf3\\udcb0\\udc80\\udc80'",
                                  "bash -c $'a{\\\\\\n\\udcf3\\udcb0\\udc80\\udc80'"])
def test_ansi_c_escapes_that_make_such_bytes_are_refused_in_nested_code(ir, text: str) -> None:
    assert text.isascii()
    codes = [r.code for r in analyze(text, ir).reasons]
    assert (text.startswith("echo") and codes == []) or codes == ["A400"]


def test_a_lone_surrogate_is_refused_not_an_internal_error(ir) -> None:
    verdict = analyze("bash -c $'echo \\ud800'", ir)
    assert [(r.code, "not a character" in r.message) for r in verdict.reasons] == [("A400", True)]

@pytest.mark.parametrize("text", ["echo 日本 {a,b}", "echo {é,ü}", "echo \"{\"日", "echo {a日}", "echo 日{", "x={1..9}日",
                                  "echo {1.2日}", "echo $'{\\u65e5'", "echo {\U00099d94", "{\U000d5692"])
def test_guard_is_exact_other_non_ascii_text_parses(ir, text: str) -> None:
    # the scanner never calls isdigit() on a character above U+00FF here (a `{` starting a
    # word reaches the parser hidden)
    check_scanner_bytes(hide_brace_words(text.encode("utf-8", "surrogateescape")))
    assert all(r.code != "A400" for r in analyze(text, ir).reasons)


def test_guard_matches_every_scanner_trigger() -> None:
    for prefix in ("{", "{7", "{12..", "{1..", "{..", "{3..45"):
        with pytest.raises(UnsafeText):
            check_scanner_safe("echo " + prefix + "\u0100")
    check_scanner_safe("echo {\u00ff {1..\u00ff")         # Latin-1 is inside the C table
    check_scanner_safe("echo {\udcff")                     # a smuggled byte reaches the scanner as -1
    check_scanner_safe("echo {\udcf3x")                    # (a lead byte alone: invalid UTF-8, -1 too)
    for smuggled in ("\udcc4\udc80", "\udcf3\udcb0\udc80\udc80", "\udce6\udc97\udca5"):
        with pytest.raises(UnsafeText):                    # bytes that are a character again
            check_scanner_safe("echo {" + smuggled)


_BYTE = st.one_of(st.integers(0x80, 0xBF), st.integers(0xC0, 0xFF), st.integers(0x20, 0x7E)).map(lambda b: bytes([b]))


@settings(max_examples=2000, deadline=None)
@given(st.sampled_from([b"{", b"{7", b"{12", b"{1..", b"{..", b"{3..45"]), st.lists(_BYTE, min_size=1, max_size=4))
def test_guard_refuses_every_byte_sequence_that_decodes_above_latin_1(prefix: bytes, tail: list[bytes]) -> None:
    """Whatever bytes follow the brace, the scanner's next code point (decoded as UTF-8, as
    tree-sitter decodes it; invalid bytes are -1) is above U+00FF only if the guard refuses."""
    rest = b"".join(tail)
    data = b"echo a" + prefix + rest + b" x"
    try:
        first = rest.decode("utf-8", "surrogateescape")[0]
        above = ord(first) > 0xFF and not 0xDC80 <= ord(first) <= 0xDCFF
    except UnicodeDecodeError:
        above = False
    try:
        check_scanner_bytes(data)
        refused = False
    except UnsafeText:
        refused = True
    if above:
        assert refused, data
