"""A pipeline of three or more commands followed by `&&`/`||`: tree-sitter-bash 0.25.1 reads
``a | b | c && d`` as ``a | (b | c && d)``, bash as ``(a | b | c) && d``.  The tree walk
repairs it, so what follows the list runs in the shell itself (a `cd` or an assignment
there holds for the next command) and reads the shell's standard input, not ``a``'s output.
One line per case: the command, the verdict, a piece of the first reason (both paths)."""

from __future__ import annotations

import pytest

from stockade.analyzer import analyze

CASES = [
    ("ls|ls|ls && cd ~ && rm -rf .ssh", "deny", "deletes `/home/stockade-fake-user/.ssh`"),
    ("ls | ls | ls || cd ~; rm -rf .ssh", "deny", "deletes `/home/stockade-fake-user/.ssh`"),
    ("true|true|true && x=~/.ssh && rm -rf $x", "deny", "deletes `/home/stockade-fake-user/.ssh`"),
    ("a | b | c | d && cd ~ && rm -rf .aws", "deny", "deletes `/home/stockade-fake-user/.aws`"),
    ("f() { ls|ls|ls && cd ~ && rm -rf .ssh; }; f", "deny", "deletes `/home/stockade-fake-user/.ssh`"),
    ("x=1;ls|ls|ls&&bash #", "confirm", "`bash` runs code from the terminal"),
    ("ls|ls|ls && cat | bash", "confirm", "`bash` runs code from the terminal"),
    ("a | b | c | d | e && cd ~ || rm -rf .gnupg", "deny", "deletes `/home/stockade-fake-user/.gnupg`"),
    ("ls | grep x | wc -l && git status", "allow", ""),
]


@pytest.mark.parametrize("command, verdict, reason", CASES)
def test_a_list_after_a_long_pipeline_runs_in_the_shell(ir, command: str, verdict: str, reason: str) -> None:
    for fast_path in (True, False):
        result = analyze(command, ir, fast_path=fast_path)
        assert result.decision == verdict, (fast_path, result)
        assert not reason or reason in result.reasons[0].message, (fast_path, result)
    assert analyze(command, ir) == analyze(command, ir, fast_path=False)
