"""Bounded, crash-proof analysis (issue 13): budgets, input limits, linear path matching and
script locations, and the bash syntax errors tree-sitter-bash accepts.

The budget cases run in a SUBPROCESS with a CPU-time and an address-space limit: without the
budgets they take minutes and gigabytes (``f() { f; f; f; }; f`` ran over 60 s and reached
5.4 GB), and the limit turns that into a failed test instead of a stuck or swapping pytest.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.analyzer import MAX_COMMAND_CHARS, MAX_SCRIPT_CHARS, analyze, analyze_script, line_col
from stockade.analyzer.judge import MAX_PATH_CHARS
from stockade.compiler.ir import FsRule
from stockade.compiler.query import _PathIndex, glob_program, glob_to_regex, program_matches, split_path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

#: The child: analyze each text of stdin's JSON list, print [decision, [[code, message]…]] each.
_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
sys.path.insert(0, TESTS)
from conftest import fixture_ir
from stockade.analyzer import analyze
ir = fixture_ir("/w", "/home/u", "/t")
out = []
for text in json.loads(sys.stdin.read()):
    verdict = analyze(text, ir)
    out.append([verdict.decision, [[r.code, r.message] for r in verdict.reasons]])
print(json.dumps(out))
"""


def _analyze_limited(texts: list[str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Verdicts of ``texts`` from a child process limited to 60 s of CPU and 2 GiB."""
    code = _CHILD.replace("TESTS", repr(str(HERE)))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, input=json.dumps(texts), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"the analyzer process died ({proc.returncode}): {proc.stderr[-2000:]}"
    return [(decision, [tuple(r) for r in reasons]) for decision, reasons in json.loads(proc.stdout)]


BUDGET_CASES = {
    # (text, code, a phrase of the deciding reason)
    "fork-bomb function": ("f() { f; f; f; }; f; rm -rf ~", "A403", "deletes"),
    "fork-bomb, mutual": ("f() { g; g; g; }; g() { h; h; h; }; h() { f; f; f; }; f", None, None),
    "doubling": ("x=aaaa; " + "x=$x$x; " * 40 + "echo $x", "A410", "longer than 65536 characters"),
    "doubling, used": ("x=aaaa; " + "x=$x$x; " * 40 + "rm $x", "A410", "longer than 65536 characters"),
    "many expansions of a long value": ("x=" + "a" * 60000 + "; echo " + "$x" * 3000, "A410", "work budget"),
    "growing recursion": ("f() { x=$x.; f; f; }; f", "A410", "calls itself"),
    "80,000-component path": ("cat /" + "a/" * 40000, "A400", "longer than the analyzer judges"),
    "deep cwd": ("cd a; " * 20000 + "cat x y z", "A400", "longer than the analyzer judges"),
    "3 MB command": ("ls; " * 750_000, "A400", "more than the analyzer reads"),
}


def test_budget_cases_finish_with_a_reason() -> None:
    names = list(BUDGET_CASES)
    verdicts = _analyze_limited([BUDGET_CASES[name][0] for name in names])
    for name, (decision, reasons) in zip(names, verdicts, strict=True):
        _, code, phrase = BUDGET_CASES[name]
        assert all(reason_code != "A499" for reason_code, _ in reasons), (name, reasons)
        if code is None:
            continue
        assert decision != "allow", name
        assert any(reason_code == code and phrase in message for reason_code, message in reasons), (name, reasons)


def test_repeated_function_calls_keep_their_effects_on_state(ir) -> None:
    """A call memoised by its state still leaves the state it left the first time."""
    verdict = analyze("f() { cd ~; }; cd /tmp; f; cd /tmp; f; rm -rf .ssh", ir)
    assert any(r.code == "A403" and "/.ssh" in r.message for r in verdict.reasons), verdict
    verdict = analyze("f() { x=$1; }; f /tmp; f ~/.ssh; rm -rf $x", ir)
    assert any(r.code == "A403" and "/.ssh" in r.message for r in verdict.reasons), verdict


def test_input_limits_give_unparsable_with_the_reason(ir) -> None:
    long_command = "echo " + "a" * MAX_COMMAND_CHARS
    [reason] = analyze(long_command, ir).reasons
    assert reason.code == "A400" and f"({MAX_COMMAND_CHARS})" in reason.message
    assert reason.span == (0, len(long_command))
    assert analyze("echo " + "a" * (MAX_COMMAND_CHARS - 5), ir).decision == "allow"  # at the limit: analysed
    script = "ls\n" * (MAX_COMMAND_CHARS // 3 + 10)  # longer than a command, a script is analysed
    assert analyze_script(script, ir).verdict.decision == "allow"
    assert analyze_script("#" * (MAX_SCRIPT_CHARS + 1), ir).verdict.reasons[0].code == "A400"
    path = "/tmp/" + "d/" * (MAX_PATH_CHARS // 2)
    reasons = analyze(f"cat {path}", ir).reasons
    assert [r.code for r in reasons] == ["A400"] and "longer than the analyzer judges" in reasons[0].message
    assert analyze("cat /tmp/" + "d/" * (MAX_PATH_CHARS // 2 - 8), ir).decision == "allow"


# -- bash syntax errors that tree-sitter-bash accepts ------------------------------------------

SYNTAX_ERRORS = ["then ls", "fi", "done", "}", "ls; }", "x(p)", "x (p) y", "ls;;", "ls;; ls", "esac x", "in",
                 "]]", "ls | fi", "ls && done", "! fi", "(fi)", "echo $(done)", "{ fi; }", "ls\nelif\nls", "do",
                 "ls; then", "ls & fi", "bash -c 'ls; fi'", "git status'", "} ]]", "f() { }", "{ #c\n}",
                 "for i in a; do done", "coproc", "time fi", "time -p }", "coproc done", "echo >2>x", ">>1<x",
                 "if true; then fi", "if a; then b; else fi", "if a; then b; elif c; then fi"]
NOT_ERRORS = ["echo fi", "x=1 fi", "'fi'", "\"done\"", "f\\i", "echo }", "{ ls; }", "case a in a) ls;; esac",
              "echo ';;'", "f() (ls)", "f() { ls; }; f", "ls 2>fi", "cat <<E\nfi\nE", "echo in", "[[ x ]]",
              "time", "time -p ls", "coproc x", "echo >&2>x", "ls 2>&1", "}x", "for i in a; do ls; done",
              "if a; then b; elif c; then d; else e; fi"]


@pytest.mark.parametrize("text", SYNTAX_ERRORS)
def test_bash_syntax_errors_are_unparsable(ir, text: str) -> None:
    for fast_path in (True, False):
        verdict = analyze(text, ir, fast_path=fast_path)
        assert verdict.decision == "deny" and any(r.code == "A400" for r in verdict.reasons), (text, verdict)


@pytest.mark.parametrize("text", NOT_ERRORS)
def test_words_that_only_look_reserved_are_not_errors(ir, text: str) -> None:
    assert all(r.code != "A400" for r in analyze(text, ir).reasons), text


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_syntax_cases_agree_with_bash() -> None:
    """``bash -n`` parses without running anything: the texts are judged as bash judges them."""
    for text in SYNTAX_ERRORS + NOT_ERRORS:
        if text.startswith("bash -c"):  # (bash -n does not parse the -c argument)
            continue
        failed = subprocess.run(["bash", "-n", "-c", text], capture_output=True).returncode != 0
        assert failed == (text in SYNTAX_ERRORS), text


#: Pieces of shell text for generated syntax (no `time`, `coproc`, here-strings or unclosed
#: groups: shapes whose errors bash reports and the analyzer does not all model).
_SYNTAX_PIECES = ["ls", "a", " ", "\n", "|", "||", "&&", ";", "&", "'x y'", '"$y"', "$x", "(", ")", "}", "{a,b}",
                  ">", ">>", "2>&1", "#", "if ", "then ", "else ", "fi", "for i in a; do ", "done", "while ",
                  "case x in a) ;; esac", "x=1 ", "!", "~", "echo", ";;", "do ", "elif ", "esac", "in ", "]]"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_SYNTAX_PIECES), min_size=1, max_size=8).map("".join))
def test_generated_allowed_texts_are_bash_syntax(ir, text: str) -> None:
    """A text the analyzer allows is one bash can parse (``bash -n``: parsed, never run)."""
    if analyze(text, ir).decision == "allow":
        assert subprocess.run(["bash", "-n", "-c", text], capture_output=True).returncode == 0, text


def test_the_lines_before_a_syntax_error_are_judged(ir) -> None:
    verdict = analyze("cat ~/.ssh/id_rsa\nfi\nls", ir)
    assert {r.code for r in verdict.reasons} == {"A402", "A400"}
    [error] = [r for r in verdict.reasons if r.code == "A400"]
    assert error.span == (18, 20) and "bash syntax error" in error.message


# -- linear path matching and script locations -------------------------------------------------

_COMPONENT = st.sampled_from(["a", "b", ".env", "x.pem", "ab", "q"])
_GLOB_PART = st.sampled_from(["a", "b", ".env", "*.pem", "*", "?", "a*", "**", "q", "*b"])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_GLOB_PART, min_size=1, max_size=5), st.lists(_COMPONENT, min_size=1, max_size=12))
def test_component_programs_match_as_the_glob_regex(glob_parts: list[str], parts: list[str]) -> None:
    pattern = "/" + "/".join(glob_parts)
    program = glob_program(pattern)
    if program is None:  # matched by its regex
        assert "**/**" in pattern or re.search(r"[^/]\*\*|\*\*[^/]", pattern)
        return
    regex = glob_to_regex(pattern)
    matches = program_matches(program, parts)
    for depth in range(1, len(parts) + 1):
        ancestor = "/" + "/".join(parts[:depth])
        assert matches[depth] == (regex.match(ancestor) is not None), (pattern, ancestor)


def test_deep_paths_are_decided_as_shallow_ones() -> None:
    rules = [FsRule("read", "/"), FsRule("deny", "/**/secrets/.env", True), FsRule("deny", "/**/.env.*", True),
             FsRule("write", "/w"), FsRule("deny", "/w/**/*.pem", True), FsRule("readonly", "/w/a/**", True)]
    index = _PathIndex(rules)
    for tail in ("q", "secrets/.env", ".env.x", "k.pem", ".env"):
        for depth in (3, 200, 20000):
            path = "/w/" + "/".join(["a", ".env"] * depth) + "/" + tail
            deep = index.decide(path)
            shallow = index.decide("/w/a/.env/" + tail)
            assert deep is shallow, (tail, depth)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["ls", "cat ~/.ssh/x", "rm -rf ~", "\n", "  ", "echo a", "; ", "curl x | sh"]),
                max_size=30).map("".join))
def test_script_findings_are_located_as_line_col(ir, text: str) -> None:
    report = analyze_script(text, ir)
    for finding in report.findings:
        assert (finding.line, finding.column) == line_col(text, finding.reason.span[0])


def test_split_path_round_trip() -> None:
    assert split_path("/a//b/") == ["a", "b"]
