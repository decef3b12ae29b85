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
    if len(inv.argv) < 3:
        return
    if inv.argv[1] != "rand":  # (`openssl enc -in /dev/zero -out f`: an endless input)
        device = next((inv.argv[at + 1] for at in range(2, len(inv.argv) - 1)
                       if inv.argv[at] == "-in" and inv.argv[at + 1] in _ENDLESS), None)
        if device is not None:
            outs = [inv.argv[at + 1] for at in range(2, len(inv.argv) - 1) if inv.argv[at] == "-out"]
            _huge(inv, f"`openssl {inv.argv[1]}` copies `{device}`", bool(outs) or stdout_to_file(inv))
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


def _buffering(inv: Invocation) -> None:
    """sort, tac, shuf: they hold all of their input (in memory or temporary files) before they
    write; ``shuf -r`` without ``-n`` writes without end."""
    words = inv.argv[1:]
    if inv.name == "shuf" and any(word in ("-r", "--repeat") or re.fullmatch(r"-[a-zA-Z]*r[a-zA-Z]*", word)
                                  for word in words) and not any(word.startswith(("-n", "--head-count"))
                                                                 for word in words):
        _huge(inv, "`shuf -r` writes without end", stdout_to_file(inv))
        return
    files = [word for word in words if word[:1] != "-"]
    device = next((word for word in files if word in _ENDLESS), None)
    if device is not None or (inv.name != "shuf" and not files and inv.stdin.what.startswith(ENDLESS)):
        _fills(inv, f"`{inv.name}` holds all of an endless input (in temporary files)")


_PRINTF_WIDTH = re.compile(r"%[-+ 0#']*(\*|\d+)")


def _printf(inv: Invocation) -> None:
    """printf: a width (``%100000000000s``, ``%*s`` with its argument) beyond the limit."""
    words = [word for word in inv.argv[1:] if word != "--"]
    if words[:1] == ["-v"]:
        return  # (into a variable)
    if not words or UNKNOWN in words[0]:
        return
    arguments = iter(words[1:])
    for width in _PRINTF_WIDTH.findall(words[0]):
        value = next(arguments, "0") if width == "*" else width
        if value.isdigit() and int(value) > DISK_LIMIT:
            _huge(inv, f"`printf` pads to a width of {value}", stdout_to_file(inv))
            return


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


def model_unshar(inv: Invocation) -> None:
    """unshar FILE…: a shell archive is a shell script; unshar runs it (``-d DIR``: there)."""
    parsed = parse_options(inv.argv, {"-d", "--directory"})
    for word, index in parsed.positionals:
        inv.read(word, index)
    directory = next((value for value, _ in parsed.values_of("-d", "--directory")), ".")
    inv.write(directory, None)
    inv.unknown(f"`{inv.name}` runs the shell archive it is given, which cannot be seen into", 0)


#: extractors that write the members their archive names: tool → the options naming the directory
_EXTRACTORS = {"unrar": ("-op",), "rar": ("-op",), "unar": ("-o", "-output-directory"),
               "cabextract": ("-d", "--directory"), "lha": ("w=",)}


def model_extractor(inv: Invocation) -> None:
    """unrar/rar x, unar, cabextract, lha x: read the archive, write the members it names into
    the working directory (or the one given): a later run of a file there runs what it may
    have written."""
    words = inv.argv[1:]
    options = _EXTRACTORS.get(inv.name, ())
    directory = "."
    for at, word in enumerate(words):
        for option in options:
            if word == option and at + 1 < len(words):
                directory = words[at + 1]
            elif word.startswith(option) and len(word) > len(option) and option.endswith(("=", "p")):
                directory = word[len(option):]
    positionals = [(word, at) for at, word in enumerate(words, start=1) if not word.startswith("-")]
    if inv.name in ("unrar", "rar", "lha") and positionals:
        if positionals[0][0] not in ("x", "e", "-x", "-e") and not positionals[0][0].startswith(("x", "e")):
            for word, index in positionals[1:]:
                inv.read(word, index)
            return
        positionals = positionals[1:]
        if inv.name in ("unrar", "rar") and len(positionals) > 1 and positionals[-1][0].endswith("/"):
            directory = positionals[-1][0]
            positionals = positionals[:-1]
    for word, index in positionals:
        inv.read(word, index)
    inv.write(directory, None)


def _gunzip_name(inv: Invocation) -> None:
    """gunzip -N / gzip -dN: the output gets the name the archive's header gives."""
    words = inv.argv[1:]
    decompress = inv.name in ("gunzip", "unpigz") or any(
        word == "--decompress" or re.fullmatch(r"-[a-zA-Z0-9]*d[a-zA-Z0-9]*", word) for word in words)
    named = any(word == "--name" or re.fullmatch(r"-[a-zA-Z0-9]*N[a-zA-Z0-9]*", word) for word in words)
    if decompress and named:
        for word in words:
            if not word.startswith("-"):
                inv.write(inv.path(word).rpartition("/")[0] or "/", None)


def _tmux_server(inv: Invocation) -> None:
    """``tmux kill-server``: every session (the agent's own, if it runs in one)."""
    if "kill-server" in inv.argv[1:]:
        inv.unknown("`tmux kill-server` ends every tmux session and what runs in them", inv.argv.index("kill-server"))


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
for _name in ("sort", "tac", "shuf"):
    _wrap(_name, _buffering)
_wrap("printf", _printf)
for _name in ("gunzip", "gzip", "unpigz", "pigz"):
    _wrap(_name, _gunzip_name)
_wrap("tmux", _tmux_server)
register("unshar", model_unshar)
register(" ".join(name for name in _EXTRACTORS if name != "rar"), model_extractor)  # (rar: archives.model_rar)
_wrap("seq", _seq)
_wrap("openssl", _openssl)
_wrap("truncate", _truncate)
_wrap("kill", _kill_group)
register("uudecode", model_uudecode)
register("fuser", model_fuser)
register("skill", model_skill)
