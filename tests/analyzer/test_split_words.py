"""One shell word that tree-sitter-bash 0.25 splits into adjacent nodes is still one word.

After ``${NAME}`` and more text, the grammar ends a word at a ``$NAME`` with text after it:
``${HOME}/.ssh$x~`` is the concatenation ``${HOME}/.ssh$`` (a bare ``$``) followed by the
word ``x~`` — no error reported — and in an assignment the rest becomes the command name.
The tree walk rejoins adjacent nodes (no blank between them) and reads the bare ``$`` as
bash does.  Found by the differential fast-path tests (``ls ${HOME}/.ssh$x~``: the fast path
kept the trailing ``~``, the tree walk lost it).  Each expected argv is what bash 5 prints
for the same words (``printf '[%s]' …`` with ``HOME=/home/dev``), but that a variable the
script did not set is unknown to the analyzer (the environment may set it).
"""

from __future__ import annotations

import pytest
from conftest import build_ir

from stockade.analyzer import analyze
from stockade.analyzer.effects import UNKNOWN, Execute, Read
from stockade.analyzer.walker import walk_command

HOME = "/home/dev"

#: (command, the argv bash runs last)
ARGV = [
    ("x=q; ls ${HOME}/.ssh$x~ b", ("ls", "/home/dev/.sshq~", "b")),
    ("x=q; ls ${x}a$x~$x~", ("ls", "qaq~q~")),
    ("x=q; ls $x~$x~", ("ls", "q~q~")),
    ("a=1; ls ${a}$a/a$a~ ${a}a$a\\~", ("ls", "11/a1~", "1a1~")),
    ("a=1; ls ${a}a$ab~c", ("ls", "1a" + UNKNOWN + "~c")),  # the longest name: `$ab` (unknown)
    ("x=q; y=${HOME}/.ssh$x~; ls \"$y\"", ("ls", "/home/dev/.sshq~")),  # an assignment's value
    ("x=q; y=${HOME}/.ssh$x~ ls", ("ls",)),  # a prefix assignment: no command `x~`
    ("x=q; ${HOME}/.ssh$x~ a", ("/home/dev/.sshq~", "a")),  # the command word
]


@pytest.fixture(scope="module")
def home_ir():
    return build_ir("/var/tmp/stockade-split/ws", HOME, "/var/tmp/stockade-split/tmp")


@pytest.mark.parametrize("command,argv", ARGV)
def test_split_word_is_one_word(home_ir, command: str, argv: tuple[str, ...]) -> None:
    for fast_path in (False, True):
        runs = [e.argv for e in walk_command(home_ir.context, command, fast_path=fast_path) if isinstance(e, Execute)]
        assert runs[-1] == argv, (command, fast_path, runs)
    assert analyze(command, home_ir) == analyze(command, home_ir, fast_path=False)


def test_split_word_reads_its_whole_path(home_ir) -> None:
    effects = walk_command(home_ir.context, "ls ${HOME}/.ssh$x~", fast_path=False)
    reads = [e for e in effects if isinstance(e, Read)]
    assert len(reads) == 1 and reads[0].path.startswith("/home/dev/.ssh") and reads[0].path.endswith("~")
    assert reads[0].span == (3, 18)
