"""Texts the fast path once lexed differently from tree-sitter-bash (found by the
differential tests), now declined: verdicts with and without the fast path are identical."""

from __future__ import annotations

import pytest

from stockade.analyzer import analyze
from stockade.analyzer.fast import lex_simple

QUIRKS = [
    "ls 'rm -rf ~'x=$HOME/y",  # a quoted part, then `x=$HOME/y`: tree-sitter splits the word
    "ls x'a'$HOME.y", "ls \"a\"x$HOME/y", "ls $HOME'a'$HOME/y",
    "- a@b", "- a=b", "- PROMPT_COMMAND=id", "x=1 - a=b",  # a lone `-`: dropped or an error
    "- ProxyCommand=sh >f", "x=1 - a=b > f",
]


@pytest.mark.parametrize("command", QUIRKS)
def test_quirks_same_verdicts(ir, command: str) -> None:
    fast = analyze(command, ir)
    full = analyze(command, ir, fast_path=False)
    assert fast == full, f"{command!r}\nfast: {fast}\nfull: {full}"


def test_quirks_are_declined() -> None:
    for command in QUIRKS:
        assert lex_simple(command.partition(" >")[0]) is None, command
