"""How much a producer writes, which files a decoder names, which processes a signal reaches.

* **Output size.** A producer whose output is endless or beyond
  :data:`~stockade.analyzer.models.fresh.DISK_LIMIT` — ``head -c 2T`` or ``head -n`` of an
  endless input, ``seq 1 1e100``, ``openssl rand 1000000000000`` — fills the disk when its output
  goes to a file (the ``unknown-effects`` verdict, as ``yes > f`` gets), and otherwise marks its
  output endless, so that a filter that passes it on into a file (``| gzip > z.gz``) fills it
  (see :mod:`.pipefill`).  ``truncate -s 100G`` makes a file that size: any later write of it
  (``shred``) fills the disk.
* **Writers of names read from their input.** ``uudecode`` without ``-o`` writes the file its
  input's header names (any path): a write this text cannot place, and a later run of a file in
  the working directory (``&& sh payload.sh``) runs what it may have written.
* **Signals to processes not identified.** ``kill -- -$$`` signals the shell's whole process
  group (the harness's, too); ``fuser -k`` every process using a file or port; ``skill`` the
  processes its patterns match.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, parse_options, register
from stockade.analyzer.models.fresh import _ENDLESS, DISK_LIMIT, _fills, size_of, stdout_to_file
from stockade.analyzer.models.pipefill import ENDLESS

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model


def _huge(inv: Invocation, what: str, to_file: bool) -> None:
    """``inv`` writes a huge or endless output: into a file it fills the disk; else the output
    is marked endless for what reads it."""
    if to_file:
        _fills(inv, what)
    else:
        inv.output(None, ENDLESS + f"`{inv.name}`")


def _over_limit(value: str) -> bool:
    """A size (``2T``, ``100G``, ``1000000000000``) beyond the limit, or not a size known here."""
    size = size_of(value.lstrip("+"))
    return size is None or size > DISK_LIMIT


def _wrap(name: str, check: object) -> None:
    inner: Model | None = MODELS.get(name)

    def model(inv: Invocation) -> None:
        if inner is not None:
            inner(inv)
        check(inv)  # type: ignore[operator]

    register(name, model)


def _head(inv: Invocation) -> None:
    """``head -c SIZE``/``-n COUNT`` of an endless input (stdin or a device) beyond the limit."""
    parsed = parse_options(inv.argv, {"-c", "--bytes", "-n", "--lines"})
    files = [word for word, _ in parsed.positionals]
    endless = any(word in _ENDLESS for word in files) or (not files and inv.stdin.what.startswith(ENDLESS))
    if not endless:
        return
    for value, _ in parsed.values_of("-c", "--bytes", "-n", "--lines"):
        if UNKNOWN not in value and not value.startswith("-") and _over_limit(value):
            # (`-n`: every line is a byte at least)
            _huge(inv, f"`head` copies `{value}` of an endless input", stdout_to_file(inv))
            return


_SEQ_VALUES = {"-f", "--format", "-s", "--separator"}


def _seq(inv: Invocation) -> None:
    """``seq [FIRST [INCREMENT]] LAST``: as many numbers as the range holds, each as long as LAST."""
    parsed = parse_options(inv.argv, _SEQ_VALUES)
    numbers = []
    for word, _ in parsed.positionals[:3]:
        try:
            numbers.append(float(word))
        except ValueError:
            return
    if not numbers or any(number != number for number in numbers):  # (nan)
        return
    first, step, last = (1.0, 1.0, numbers[0]) if len(numbers) == 1 else \
        (numbers[0], 1.0, numbers[1]) if len(numbers) == 2 else tuple(numbers)
    if step == 0 or abs(last) == float("inf"):
        return  # (`seq inf` is judged as endless by fresh.py)
    count = (last - first) / step + 1
    width = max(len(f"{abs(value):.0f}") for value in (first, last)) + 1
    if count * width > DISK_LIMIT:
        _huge(inv, f"`seq` writes {count:.3g} numbers", stdout_to_file(inv))


def _openssl(inv: Invocation) -> None:
    """``openssl rand [-hex|-base64] [-out FILE] NUM``: NUM bytes (twice as many in hex)."""
    if len(inv.argv) < 3 or inv.argv[1] != "rand":
        return
    words, outs, skip = [], [], False  # (openssl's options are single-dash words: `-out FILE`, `-hex`)
    for at, word in enumerate(inv.argv[2:], start=2):
        if skip:
            skip = False
        elif word in _OPENSSL_VALUES:
            skip = True
            if word == "-out" and at + 1 < len(inv.argv) and inv.argv[at + 1] not in ("/dev/null", "-", "/dev/stdout"):
                outs.append(inv.argv[at + 1])
        elif not word.startswith("-"):
            words.append(word)
    if not words or UNKNOWN in words[-1] or not _over_limit(words[-1]):
        return
    _huge(inv, f"`openssl rand {words[-1]}` writes a huge file", bool(outs) or stdout_to_file(inv))


_OPENSSL_VALUES = frozenset({"-out", "-engine", "-rand", "-writerand", "-provider", "-provider-path", "-propquery"})


def _truncate(inv: Invocation) -> None:
    """``truncate -s SIZE FILE``: a file of SIZE (sparse until it is written: ``shred`` fills it)."""
    parsed = parse_options(inv.argv, {"-s", "--size", "-r", "--reference", "-o", "--io-blocks"})
    for value, _ in parsed.values_of("-s", "--size"):
        if UNKNOWN not in value and not value.startswith(("-", "<", "/", "%")) and _over_limit(value.lstrip(">")):
            _fills(inv, f"`truncate -s {value}` makes a huge file")
            return


def model_uudecode(inv: Invocation) -> None:
    """uudecode [-o FILE] [FILE…]: reads the encoded files (stdin without); writes ``-o FILE``,
    else the file the input's header names, anywhere (``-p``/``--stdout``: standard output)."""
    parsed = parse_options(inv.argv, {"-o", "--output-file"})
    for word, index in parsed.positionals:
        inv.read(word, index)
    outputs = parsed.values_of("-o", "--output-file")
    for value, index in outputs:
        if value not in ("/dev/stdout", "-"):
            inv.write(value, index)
    if outputs or parsed.has("-p", "--stdout", "-c"):
        return
    inv.write(".", None)  # (as an extractor's: a later run of a file here runs what it may have written)
    inv.unknown(f"`{inv.name}` writes the file its input names, which the command does not show", 0)


_FUSER_KILL = re.compile(r"-[a-zA-Z]*k[a-zA-Z]*$")


def model_fuser(inv: Invocation) -> None:
    """fuser [-k] NAME…: lists (or with ``-k`` signals) every process using a file or a port."""
    if any(word == "--kill" or (word[:2] != "--" and _FUSER_KILL.match(word)) for word in inv.argv[1:]):
        inv.unknown("`fuser -k` signals every process using the files or ports it names, which the command does "
                    "not identify", 0)


def model_skill(inv: Invocation) -> None:
    """skill: signals the processes its patterns (user, terminal, command) match."""
    if not any(word in ("-l", "-L", "--list", "--table", "-h", "--help", "-V", "--version") for word in inv.argv[1:]):
        inv.unknown(f"`{inv.name}` signals every process its patterns match", 0)


def _kill_group(inv: Invocation) -> None:
    """``kill -- -$$``: the shell's own process group (the harness's too), not one process."""
    if inv.name != "kill":
        return
    for index, word in enumerate(inv.argv[1:], start=1):
        if word in ("-self", "-thread-self"):
            inv.unknown(f"`kill {word.replace('self', '$$')}` signals the shell's whole process group", index)
            return


_wrap("head", _head)
_wrap("seq", _seq)
_wrap("openssl", _openssl)
_wrap("truncate", _truncate)
_wrap("kill", _kill_group)
register("uudecode", model_uudecode)
register("fuser", model_fuser)
register("skill", model_skill)
