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

from stockade.analyzer import analyze
from stockade.analyzer.parse import UnsafeText, check_scanner_safe

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

MINIMISED = ["{\U000d5692", "x {\U000d5692", "echo {\U00099d94", "echo {1..\U00099d94", "a {12\u65e5",
             "bash -c 'echo {\U000d5692'", "echo {\\\n\U000d5692"]

_CHILD = """
import json, sys
sys.path.insert(0, TESTS)
from conftest import fixture_ir
from stockade.analyzer import analyze
ir = fixture_ir("/w", "/home/u", "/t")
texts = json.loads(sys.stdin.read())
for cp in range(0x100, 0x110000, 0x800):       # the whole code point range, both trigger sites
    if not 0xD800 <= cp < 0xE000:
        texts += ["echo {" + chr(cp), "echo {1.." + chr(cp)]
out = [[v.decision, [r.code for r in v.reasons]] for v in (analyze(t, ir) for t in texts)]
print(json.dumps(out))
"""


def test_crashing_inputs_are_refused_in_subprocesses() -> None:
    code = _CHILD.replace("TESTS", repr(str(HERE)))
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(6)]
    for proc in procs:
        out, err = proc.communicate(json.dumps(MINIMISED), timeout=120)
        assert proc.returncode == 0, f"analyzer process died with {proc.returncode}: {err[-2000:]}"
        for decision, codes in json.loads(out):
            assert decision == "deny" and codes == ["A400"]


@pytest.mark.parametrize("text", MINIMISED)
def test_refusal_names_the_spot(ir, text: str) -> None:
    verdict = analyze(text, ir)
    assert verdict.decision == "deny"
    [reason] = verdict.reasons
    assert reason.code == "A400" and "tree-sitter-bash scanner bug" in reason.message
    start, end = reason.span
    assert text[start] == "{" and ord(text[end - 1]) > 0xFF


@pytest.mark.parametrize("text", ["echo 日本 {a,b}", "echo {é,ü}", "echo \"{\"日", "echo {a日}", "echo 日{", "x={1..9}日",
                                  "echo {1.2日}", "echo $'{\\u65e5'"])
def test_guard_is_exact_other_non_ascii_text_parses(ir, text: str) -> None:
    check_scanner_safe(text)  # the scanner never calls isdigit() on a character above U+00FF here
    assert all(r.code != "A400" for r in analyze(text, ir).reasons)


def test_guard_matches_every_scanner_trigger() -> None:
    for prefix in ("{", "{7", "{12..", "{1..", "{..", "{3..45"):
        with pytest.raises(UnsafeText):
            check_scanner_safe("echo " + prefix + "\u0100")
    check_scanner_safe("echo {\u00ff {1..\u00ff")         # Latin-1 is inside the C table
    check_scanner_safe("echo {\udcff")                     # a smuggled byte reaches the scanner as -1
