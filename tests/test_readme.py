"""The README's shown outputs are what the commands print.

A code block preceded by ``<!-- checked -->`` is a session: each ``$ `` line (with its
``\\``-continued lines) is run by ``/bin/sh`` with ``stockade`` on ``PATH`` (this tree), its
standard output and error together must equal the lines that follow it, up to the next
``$ `` line (``...`` in an expected line matches any text).  ``<!-- checked: file NAME -->``
before a block writes the block as the file ``NAME`` first; ``<!-- checked: python -->``
marks a block of ``>>>`` examples, run with :mod:`doctest`.

Everything runs in a private directory: ``HOME`` is a fresh ``home`` there (shown as
``/home/dev`` in the README: the path is replaced before comparing), the current directory
is ``~/app`` holding ``examples/`` (a copy) and an empty ``~/src/app`` workspace, and the
cache and state directories are private too (the user policy is looked for in
``~/.config``).
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SHOWN_HOME = "/home/dev"

_MARK = re.compile(r"^<!-- checked(?:: (?P<what>[^>]*?))? -->\s*$")


class Block:
    """One marked code block: its kind (``session``, ``file NAME`` or ``python``), first line, text."""

    def __init__(self, what: str, line: int, text: str) -> None:
        self.what = what
        self.line = line
        self.text = text

    def __repr__(self) -> str:
        return f"README.md:{self.line} ({self.what})"


def marked_blocks(text: str) -> list[Block]:
    """The marked blocks of a Markdown text, in order."""
    lines = text.split("\n")
    blocks = []
    index = 0
    while index < len(lines):
        match = _MARK.match(lines[index])
        if match is None:
            index += 1
            continue
        start = index + 1
        assert lines[start].startswith("```"), f"README.md:{start + 1}: a `checked` mark must precede a code block"
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
        blocks.append(Block(match.group("what") or "session", start + 2, "\n".join(lines[start + 1:end]) + "\n"))
        index = end + 1
    return blocks


def sessions(block: Block) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) pairs of a session block."""
    out: list[tuple[str, list[str]]] = []
    lines = block.text.rstrip("\n").split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        assert line.startswith("$ "), f"{block}: expected a `$ ` command, got {line!r}"
        command = line[2:]
        while command.endswith("\\") and index + 1 < len(lines):
            index += 1
            command = command + "\n" + lines[index]
        index += 1
        expected = []
        while index < len(lines) and not lines[index].startswith("$ "):
            expected.append(lines[index])
            index += 1
        out.append((command, expected))
    return out


def matches(expected: str, actual: str) -> bool:
    """Whether an output line is the shown one (``...`` matches any text)."""
    if "..." not in expected:
        return expected == actual
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual) is not None


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The private directories and environment the README's commands run in."""
    root = tmp_path_factory.mktemp("readme")
    home = root / "home"
    app = home / "app"
    (home / "src" / "app").mkdir(parents=True)
    app.mkdir()
    shutil.copytree(ROOT / "examples", app / "examples")
    bin_dir = root / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "stockade"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m stockade "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "STOCKADE_")) and k != "COLUMNS"}
    env.update(HOME=str(home), PATH=f"{bin_dir}:{env.get('PATH', os.defpath)}", PYTHONPATH=str(ROOT), NO_COLOR="1",
               XDG_CACHE_HOME=str(root / "cache"), XDG_STATE_HOME=str(root / "state"),
               XDG_CONFIG_HOME=str(home / ".config"), TMPDIR="/tmp", LANG="C.UTF-8")
    return {"home": home, "app": app, "env": env}


BLOCKS = marked_blocks(README.read_text(encoding="utf-8"))

#: ``STOCKADE_UPDATE_README=1``: the outputs that differ, rewritten into the README at the end.
UPDATES: list[tuple[str, list[str], list[str]]] = []


@pytest.fixture(scope="module", autouse=True)
def _rewrite() -> object:
    yield
    if UPDATES:
        text = README.read_text(encoding="utf-8")
        for command, expected, actual in UPDATES:
            old = "$ " + command + "\n" + "".join(line + "\n" for line in expected)
            new = "$ " + command + "\n" + "".join(line + "\n" for line in actual)
            text = text.replace(old, new, 1)
        README.write_text(text, encoding="utf-8")


def test_the_readme_marks_blocks_to_check() -> None:
    kinds = {block.what.split()[0] for block in BLOCKS}
    assert {"session", "file", "python"} <= kinds
    assert sum(1 for block in BLOCKS if block.what == "session") >= 8


@pytest.mark.parametrize("block", BLOCKS, ids=repr)
def test_readme_block(block: Block, place: dict) -> None:
    app, home = place["app"], place["home"]
    if block.what.startswith("file "):
        (app / block.what.split(" ", 1)[1]).write_text(block.text, encoding="utf-8")
        return
    if block.what == "python":
        cwd = os.getcwd()
        os.chdir(app)
        try:
            parser = doctest.DocTestParser()
            test = parser.get_doctest(block.text.replace(SHOWN_HOME, str(home)), {}, repr(block), "README.md",
                                      block.line)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
            runner.run(test)
            assert runner.failures == 0 and test.examples, f"{block}: see the doctest report above"
        finally:
            os.chdir(cwd)
        return
    assert block.what == "session", block
    for command, expected in sessions(block):
        done = subprocess.run(["/bin/sh", "-c", command.replace(SHOWN_HOME, str(home))], cwd=app, env=place["env"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        actual = done.stdout.replace(str(home), SHOWN_HOME).rstrip("\n").split("\n") if done.stdout else []
        if os.environ.get("STOCKADE_UPDATE_README") and not (len(actual) == len(expected)
                                                              and all(map(matches, expected, actual))):
            UPDATES.append((command, expected, actual))
            continue
        assert len(actual) == len(expected) and all(map(matches, expected, actual)), \
            f"{block}: `{command}` printed:\n" + "\n".join(actual) + "\n--- the README shows:\n" + "\n".join(expected)
