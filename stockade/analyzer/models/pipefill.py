"""Filling a disk through a pipe: an endless source (``yes``, ``cat /dev/urandom``, ``seq inf``)
piped through filters that pass it on without a bound (``tr``, ``gzip``, ``base64``, ``sed``…)
into a file, into ``tee FILE`` or into ``split``'s part files.  The source's output is marked
endless; a filter that reads it passes the mark on, and writing it to a file fills the disk
(the ``unknown-effects`` verdict, as :mod:`.fresh` judges ``yes > f``).  A filter that bounds it (``head``, ``dd
count=``) ends the mark.
"""

from __future__ import annotations

from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, parse_options, register
from stockade.analyzer.models.fresh import _ENDLESS, _fills, stdout_to_file

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model

#: the ``what`` of a standard input that never ends
ENDLESS = "the endless output of "
#: filters that copy their standard input to standard output without a bound (when given no file)
FILTERS = ("cat", "tr", "sed", "gzip", "bzip2", "xz", "zstd", "lz4", "base64", "base32", "xxd", "od", "hexdump",
           "rev", "pv", "tee", "awk", "gawk", "mawk", "nl", "fold", "expand", "unexpand", "gpg", "openssl",
           "iconv", "dd")
#: sources whose output never ends: program → operands that make it endless (None: always)
SOURCES: dict[str, frozenset[str] | None] = {"yes": None, "cat": _ENDLESS, "seq": frozenset({"inf", "infinity",
                                                                                           "+inf"}),
                                             "base64": _ENDLESS, "xxd": _ENDLESS, "od": _ENDLESS,
                                             "hexdump": _ENDLESS, "tr": None}


#: pv's options that take a value (``-o``/``--output`` and ``-P``/``--pidfile`` name files it writes)
_PV_VALUES = {"-L": "text", "--rate-limit": "text", "-s": "text", "--size": "text", "-N": "text", "--name": "text",
              "-i": "text", "--interval": "text", "-w": "text", "--width": "text", "-H": "text", "--height": "text",
              "-B": "text", "--buffer-size": "text", "-d": "text", "--watchfd": "text", "-R": "text",
              "--remote": "text", "-F": "text", "--format": "text", "-D": "text", "--delay-start": "text",
              "-A": "text", "--last-written": "text", "-m": "text", "--average-rate-window": "text",
              "-o": "write", "--output": "write", "-P": "write", "--pidfile": "write", "-U": "write",
              "--store-and-forward": "write"}


def model_pv(inv: Invocation) -> None:
    """pv FILE…: copies its files (or its input) to its output, showing progress; ``-o FILE``
    writes the output to a file.  An endless file (``pv /dev/zero``) into a file fills the disk."""
    parsed = parse_options(inv.argv, set(_PV_VALUES))
    to_file = stdout_to_file(inv)
    for option, value, index in parsed.options:
        if value is not None and _PV_VALUES.get(option) == "write":
            inv.write(value, index)
            to_file = to_file or option in ("-o", "--output")
    endless = False
    for word, index in parsed.positionals:
        inv.read(word, index)
        endless = endless or word in _ENDLESS
    if endless and to_file:
        _fills(inv, "`pv` copies an endless file to a file")
    elif endless:
        inv.output(None, ENDLESS + "`pv`")


register("pv", model_pv)


def _endless_source(inv: Invocation) -> bool:
    operands = SOURCES.get(inv.name, frozenset())
    if inv.name == "tr":
        return False  # tr has no file operands: endless only from its input
    if operands is None:
        return True
    return any(word.lower() in operands for word in inv.argv[1:])


def _endless_dd(inv: Invocation) -> bool:
    """``dd if=/dev/zero`` with no ``count=`` and no ``of=``: an endless output (into a pipe)."""
    operands = dict(word.partition("=")[::2] for word in inv.argv[1:] if "=" in word)
    return operands.get("if") in _ENDLESS and "count" not in operands and "of" not in operands and \
        "iflag" not in operands


def _file_operands(inv: Invocation) -> list[str]:
    return [word for word in inv.argv[1:] if word[:1] != "-" and "=" not in word]


#: filters that read an endless file operand to its end, copying it on without a bound
#: (``gzip -c /dev/zero > z.gz``, ``grep -a . /dev/urandom > f``, ``zstd /dev/zero -o z``)
OPERAND_FILTERS = frozenset({"gzip", "bzip2", "xz", "zstd", "lz4", "base32", "rev", "nl", "fold", "expand",
                             "unexpand", "iconv", "grep", "egrep", "fgrep", "strings"})


def _endless_operand(inv: Invocation) -> None:
    """An :data:`OPERAND_FILTERS` filter given an endless device as a file: into a file (its
    standard output or ``-o FILE``) it fills the disk, else its output is endless too."""
    if not any(word in _ENDLESS for word in _file_operands(inv)):
        return
    if stdout_to_file(inv) or any(word in ("-o", "--output") or word.startswith("--output=") for word in inv.argv):
        _fills(inv, f"`{inv.name}` copies an endless file to a file")
    else:
        inv.output(None, ENDLESS + f"`{inv.name}`")


def _wrap(name: str, inner: Model) -> Model:
    def model(inv: Invocation) -> None:
        inner(inv)
        if not inv.stdin.what.startswith(ENDLESS):
            # not fed an endless input: only a source starts one (`yes`, `cat /dev/zero`)
            if name in SOURCES and _endless_source(inv) and not stdout_to_file(inv):
                inv.output(None, ENDLESS + f"`{inv.name}`")
            elif name == "dd" and _endless_dd(inv):
                inv.output(None, ENDLESS + "`dd`")
            elif name in OPERAND_FILTERS:
                _endless_operand(inv)
            return
        files = _file_operands(inv)
        if name == "dd":
            operands = dict(word.partition("=")[::2] for word in inv.argv[1:] if "=" in word)
            if "count" in operands or "if" in operands:
                return
            if operands.get("of", "/dev/null") != "/dev/null":
                _fills(inv, "`dd` copies an endless input to a file")
                return
        elif name == "tee":
            if any(word not in ("/dev/null", "/dev/stdout", "/dev/stderr") for word in files):
                _fills(inv, "`tee` copies an endless input to a file")
                return
        elif name not in ("tr", "sed", "awk", "gawk", "mawk", "gpg", "openssl", "iconv") and files:
            return  # the filter reads its files, not the endless input
        if stdout_to_file(inv):
            _fills(inv, f"`{inv.name}` copies an endless input to a file")
            return
        inv.output(None, ENDLESS + f"`{inv.name}`")

    return model


def _split(inner: Model) -> Model:
    def model(inv: Invocation) -> None:
        """split: as before; an endless input (``cat /dev/zero | split -b 1G -``, or an endless
        device as its INPUT) is written to ever more part files: it fills the disk."""
        inner(inv)
        parsed = parse_options(inv.argv, {"-a", "--suffix-length", "--additional-suffix", "-b", "--bytes", "-C",
                                          "--line-bytes", "-l", "--lines", "-n", "--number", "-t", "--separator",
                                          "--filter"}, optional=frozenset({"-d", "-x", "--numeric-suffixes",
                                                                           "--hex-suffixes"}))
        if parsed.values_of("--filter") or parsed.values_of("-n", "--number"):
            return  # (piped to a command, or a fixed number of parts of a file whose size it reads)
        source = parsed.positionals[0][0] if parsed.positionals else "-"
        if (source == "-" and inv.stdin.what.startswith(ENDLESS)) or inv.path(source) in _ENDLESS:
            _fills(inv, "`split` writes an endless input to part files without end")

    return model


for _name in FILTERS:
    _model = MODELS.get(_name)
    if _model is not None:
        register(_name, _wrap(_name, _model))
for _name in SOURCES:
    if _name not in FILTERS and _name in MODELS:
        register(_name, _wrap(_name, MODELS[_name]))
for _name in OPERAND_FILTERS:
    if _name not in FILTERS and _name not in SOURCES and _name in MODELS:
        register(_name, _wrap(_name, MODELS[_name]))
if "split" in MODELS:
    register("split", _split(MODELS["split"]))
