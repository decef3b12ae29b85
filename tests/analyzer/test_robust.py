"""Hostile input to the analyzer (issue 13, bounded and crash-proof analysis), beyond the cases
``test_bounds.py`` names: other shapes of the same kinds.

* Glob patterns in parameter expansion (``${x##*a*a…b}``, ``${x//*a*a…b/}``) matched against a
  long known value: translated naively (``.*a.*a…``) a regex backtracks through every way to
  place the stars — minutes for one word.  The pieces between stars are atomic groups now
  (linear), and a substitution that tries every end at every position is bounded.
* Work whose steps are costly: nested endless loops read their body's text at every turn;
  a CPU-time budget backs the step budget.
* Python's own limits reached by text: nesting deeper than the interpreter's recursion limit
  inside one word, numbers of more than 4300 digits — the ``unparsable`` verdict with the
  reason, never an internal error (``A499``).
* ANSI-C ``\\x``/``\\u`` without digits, lone surrogates given to the PowerShell analyzer.

The costly cases run in a SUBPROCESS limited to 60 s of CPU time and 2 GiB: without the fixes
they do not finish, and the limit turns that into a failed test.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.analyzer import analyze
from stockade.analyzer.paramexp import glob_regex
from stockade.analyzer.winshell import analyze_shell
from tests.analyzer.test_bounds import _analyze_limited  # (a child limited to 60 s of CPU and 2 GiB)

_LONG = "a" * 4000
_STARS = "*a" * 40 + "b"

#: name → (text, the code of a deciding reason, a phrase of its message)
HOSTILE = {
    "prefix removal, many stars": (f"x={_LONG}; y=${{x##{_STARS}}}; rm -rf ~", "A403", "deletes"),
    "suffix removal, many stars": (f"x={_LONG}; y=${{x%%{_STARS}}}; rm -rf ~", "A403", "deletes"),
    "shortest prefix, many stars": (f"x={_LONG}; y=${{x#{_STARS}}}; rm -rf ~", "A403", "deletes"),
    "substitution, many stars": (f"x={_LONG}; y=${{x//{_STARS}/}}; rm -rf ~", "A403", "deletes"),
    "first substitution, many stars": (f"x={_LONG}; y=${{x/{_STARS}/z}}; rm -rf ~", "A403", "deletes"),
    "doubling by substitution": ("x=a; " + "x=${x//a/aa}; " * 40 + "rm -rf ~", "A403", "deletes"),
    "3,000 nested endless loops": ("while true; do " * 3000 + "ls" + "; done" * 3000, "A400", "nesting too deep"),
    "nested endless until loops": ("until false; do " * 12 + "ls" + "; done" * 12, "A410", "work budget"),
    "nested loops over 8 values": ("for i in 1 2 3 4 5 6 7 8; do " * 12 + "ls" + "; done" * 12, "A410",
                                   "work budget"),
    "5,000 nested defaults": ("echo " + "${x:-" * 5000 + "a" + "}" * 5000, "A400", "nesting too deep"),
    "2,000 nested subscripts": ("echo " + "${a[" * 2000 + "0" + "]}" * 2000, "A400", "nesting too deep"),
    "a brace range of 5,000 digits": ("echo {1.." + "9" * 5000 + "}", "A400", "number too long"),
    "a port of 5,000 digits": ("curl http://github.com:" + "9" * 5000 + "/", "A400", "number too long"),
    "a byte count of 5,000 digits": ("head -c " + "9" * 5000 + " /dev/zero", "A400", "number too long"),
}


def test_hostile_texts_finish_with_the_strict_verdict_and_a_reason() -> None:
    names = list(HOSTILE)
    verdicts = _analyze_limited([HOSTILE[name][0] for name in names])
    for name, (decision, reasons) in zip(names, verdicts, strict=True):
        _, code, phrase = HOSTILE[name]
        assert all(reason_code != "A499" for reason_code, _ in reasons), (name, reasons)
        assert decision != "allow", name
        assert any(reason_code == code and phrase in message for reason_code, message in reasons), (name, reasons)


def test_the_time_budget_stops_a_walk_with_its_reason(ir, monkeypatch) -> None:
    """The CPU-time budget behind the step budget (here set to nothing: the first check stops)."""
    from stockade.analyzer import walker

    monkeypatch.setattr(walker, "TIME_BUDGET", -1.0)
    monkeypatch.setattr(walker, "TIME_PER_CHAR", 0.0)
    verdict = analyze("while true; do " * 8 + "ls" + "; done" * 8 + "; rm -rf ~", ir)
    assert verdict.decision != "allow"
    assert any(r.code == "A410" and "s of CPU time" in r.message for r in verdict.reasons), verdict
    monkeypatch.undo()
    assert analyze("for i in 1 2 3; do ls; done", ir).decision == "allow"  # (short walks never reach a check)


def test_expansions_with_stars_keep_their_values(ir) -> None:
    """The linear matching gives bash's results (a path built by them is judged)."""
    home = ir.context.home
    for text in ("x=aXbXc; cat ~/.${x//a*c/ssh}/id", "x=.sshX; cat ~/${x%X*}", "x=.sshXaXb; cat ~/${x%%X*}",
                 "x=aa.ssh; cat ~/${x##*a}", "x=a/.ssh; cat ~/${x#*/}", "x=.s*h; cat ~/${x/\\*/s}",
                 "x=zzX.ssh; cat ~/${x/#*X/}", "x=.sshYzY; cat ~/${x/%Y*/}"):
        verdict = analyze(text, ir)
        assert any(r.code == "A402" and f"{home}/.ssh" in r.message for r in verdict.reasons), (text, verdict)


def test_escapes_without_digits_are_themselves(ir) -> None:
    """``$'\\x'``, ``$'\\u'`` and ``$'\\U'`` without hex digits are the backslash and the letter."""
    verdict = analyze("echo $'\\x' $'\\u' $'\\U' $'\\xg'", ir)
    assert verdict.decision == "allow", verdict
    verdict = analyze("cat $'\\x'/../.ss$'\\x68'; rm -rf ~", ir)
    assert all(r.code != "A499" for r in verdict.reasons) and verdict.decision == "deny", verdict


def test_a_nul_character_is_refused_not_taken_for_an_unknown_value(ir) -> None:
    """NUL is the walk's own mark of a value not known: in the input it made `cat ~/.ssh<NUL>` a
    read of an unknown path (confirm, not deny), and 50,000 of them took 19 s."""
    for text in ("cat ~/.ssh\0", "ls\0 ~/.ssh", "\0" * 50_000, "echo a\nrm -rf ~\0"):
        verdict = analyze(text, ir)
        assert verdict.decision == "deny", text
        assert [r.code for r in verdict.reasons] == ["A400"] and "NUL" in verdict.reasons[0].message
        assert verdict.reasons[0].span == (text.index("\0"), text.index("\0") + 1)
    for shell in ("powershell", "cmd", "auto"):
        assert analyze_shell("dir\0 x", ir, None, shell).reasons[0].code == "A400", shell


def test_lone_surrogates_are_refused_by_the_windows_shells(ir) -> None:
    for shell in ("powershell", "auto"):
        verdict = analyze_shell("Remove-Item -Recurse ~ \ud922x", ir, None, shell)
        assert verdict.decision == "deny", verdict
        assert [r.code for r in verdict.reasons] == ["A400"] and "not a character" in verdict.reasons[0].message


def test_bracket_expressions_match_as_bash(ir) -> None:
    """POSIX classes, a ``]`` first in the class, equivalence classes; an empty or broken
    bracket expression is not an internal error (found by fuzzing: ``[]`` made ``[]\\Z``)."""
    for text in ("cat /etc/sha[[:alpha:]]ow", "cat /etc/sha[![:digit:]]ow", "cat /etc/sh[[=a=]]dow",
                 "cat /etc/shado[[:lower:][:digit:]]", "cat ~/.ss[]h]", "cat ~/.ss[!]]", "cat /etc/shad[z-a]w",
                 "cat /etc/s[[:cntrl:]h]adow"):
        verdict = analyze(text, ir)
        assert verdict.decision == "deny" and verdict.reasons[0].code == "A402", (text, verdict)
    assert analyze("cat /etc/sha[[:digit:]]ow", ir).decision == "allow"
    for text in ("<<E\n[\U0003ba47\udcf5]0[]", "cat /etc/[[]", "cat x[]", "ls [[:nope:]]"):
        assert all(r.code != "A499" for r in analyze(text, ir).reasons), text


def test_find_names_with_classes_are_matched_below(ir) -> None:
    """``find -name GLOB -exec rm`` matches GLOB as bash globs do (``fnmatch`` knows no POSIX class)."""
    workspace = ir.context.workspace
    for name in ("[[:alpha:]]ooks", "pre-com[[:lower:]]it", "h*s"):
        verdict = analyze(f"cd {workspace}; find . -name '{name}' -exec rm -rf {{}} +", ir)
        assert verdict.decision == "deny" and ".git/hooks" in verdict.reasons[0].message, (name, verdict)
    assert analyze(f"cd {workspace}; find . -name '[[:digit:]]*.pyc' -delete", ir).decision == "allow"


def test_files_written_earlier_are_found_after_effects_are_dropped_or_replaced(ir) -> None:
    """The set of written paths kept across a script (so that each question about a file the
    text wrote does not scan every effect again) stays right when a model drops effects
    (perl's substitution-only code) or replaces them (``find -exec`` on ``{}``)."""
    workspace = ir.context.workspace
    for text in ("echo 'rm -rf ~' > f; perl -pi -e 's/a/b/' g; bash f",
                 "perl -pi -e 's/a/b/' g; echo 'rm -rf ~' > f; perl -pi -e 's/a/b/' h; bash f",
                 f"cd {workspace}; find . -name x -exec touch {{}} +; echo 'rm -rf ~' > f; bash f"):
        verdict = analyze(text, ir)
        assert verdict.decision == "deny" and any(r.code == "A403" for r in verdict.reasons), (text, verdict)
    assert analyze("echo 'rm -rf ~' > d/f; mv d e; bash e/f", ir).decision == "confirm"  # (moved with its directory)
    for text in ("echo ls > f; bash g", "echo ls > d/f; mv d/f g; bash g"):
        assert analyze(text, ir).decision == "allow", text


def test_reports_locate_every_reason_as_line_col_and_window_long_lines(ir) -> None:
    """Text and SARIF reports find each reason's line once per text (a 100,000-line script has
    30,000 reasons: counting lines from the start for each was quadratic), and draw a window
    of a long line, not all of it (an 8 MiB line of `/dev/zero` printed 16 MB)."""
    from stockade.analyzer import line_col
    from stockade.analyzer.report import render_text, to_sarif

    text = "\n".join(["ls", "cat ~/.ssh/id", "x=1; rm -rf ~", "echo " + "a" * 5000 + "; cat ~/.aws/c"] * 3)
    verdict = analyze(text, ir)
    assert len(verdict.reasons) >= 9
    rendered = render_text(verdict, "s.sh")
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in to_sarif([("s.sh", verdict)])["runs"][0]["results"]]
    for reason, region in zip(verdict.reasons, regions, strict=True):
        line, column = line_col(text, reason.span[0])
        assert f"s.sh:{line}:{column}:" in rendered
        assert (region["startLine"], region["startColumn"]) == (line, column)
    assert max(len(line) for line in rendered.splitlines()) < 400
    assert "aaa; cat ~/.aws/c" in rendered and "  4 | …aaa" in rendered


def test_windows_installers_named_with_exe_from_bash(ir) -> None:
    for text in ("choco.exe install x", "winget.exe list", "scoop.exe install x", "c* x"):
        assert all(r.code != "A499" for r in analyze(text, ir).reasons), text


# -- the glob translation equals the naive one ---------------------------------------------------

_PIECE = st.sampled_from(["a", "b", "*", "?", "[ab]", "[!a]", "**", "\\*", "."])


def _naive(pattern: str) -> re.Pattern[str]:
    out = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "[":
            end = pattern.index("]", index)
            body = pattern[index + 1:end]
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            index = end + 1
            continue
        if char == "\\":
            out.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        out.append(".*" if char == "*" else "." if char == "?" else re.escape(char))
        index += 1
    return re.compile("".join(out), re.S)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECE, max_size=6).map("".join), st.text("ab.*", max_size=8))
def test_atomic_glob_regex_matches_as_the_naive_translation(pattern: str, subject: str) -> None:
    compiled = glob_regex([(pattern, False)])
    assert compiled is not None
    naive = _naive(pattern)
    for start in range(len(subject) + 1):
        for end in range(start, len(subject) + 1):
            assert bool(compiled.fullmatch(subject, start, end)) == bool(naive.fullmatch(subject, start, end)), \
                (pattern, subject, start, end, compiled.pattern)
