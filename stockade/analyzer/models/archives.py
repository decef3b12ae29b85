"""Archivers, compressors and other writers of their operands.

Compressors replace their operand in place (a write of the new name and a delete of the old one)
unless told to keep it or to write to stdout.  Extractors (``unzip``, ``7z x``, ``cpio -i``,
``ar x``, ``patch`` without a file operand) write entries whose names are inside the archive or
the patch: they are judged as a write of the directory they extract into (not of everything below
it), so extracting into the workspace is allowed and into a read-only or denied place is not.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import parse_options, register
from stockade.analyzer.models.net import contact_url
from stockade.analyzer.models.text import REMOTE_ARCHIVE

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

T = "text"


class Compressor:
    """A compressor's options: value options, its suffix, whether it deletes the input by
    default, and the flags that decompress, keep the input, write to stdout or only test."""

    __slots__ = ("deletes", "keep", "name_out", "stdout", "suffix", "test", "unpack", "values")

    def __init__(self, suffix: str, deletes: bool, values: frozenset[str] = frozenset(),
                 unpack: frozenset[str] = frozenset({"-d", "--decompress", "--uncompress"}),
                 keep: frozenset[str] = frozenset({"-k", "--keep"}),
                 stdout: frozenset[str] = frozenset({"-c", "--stdout", "--to-stdout"}),
                 test: frozenset[str] = frozenset({"-t", "--test", "-l", "--list"}),
                 name_out: frozenset[str] = frozenset()):
        self.suffix, self.deletes, self.values = suffix, deletes, values
        self.unpack, self.keep, self.stdout, self.test, self.name_out = unpack, keep, stdout, test, name_out


_GZIP = Compressor(".gz", True, frozenset({"-S", "--suffix", "-b", "--blocksize", "-p", "--processes"}))
_XZ = Compressor(".xz", True, frozenset({"-S", "--suffix", "-F", "--format", "-C", "--check", "-T", "--threads",
                                         "-M", "--memlimit", "--files", "--files0", "--filters"}))
_BZIP2 = Compressor(".bz2", True)
_ZSTD = Compressor(".zst", False, frozenset({"-o", "-D", "--patch-from", "-T", "--threads", "-B", "--format",
                                             "--memory", "-M", "--filelist", "--output-dir-flat",
                                             "--output-dir-mirror", "--trace"}),
                   keep=frozenset({"-k", "--keep"}), test=frozenset({"-t", "--test", "-l", "--list", "-b"}),
                   name_out=frozenset({"-o"}))
_LZ4 = Compressor(".lz4", False, frozenset({"-B", "-D", "-T"}), test=frozenset({"-t", "--test", "--list"}))
_BROTLI = Compressor(".br", False, frozenset({"-o", "--output", "-q", "--quality", "-w", "--lgwin", "-S",
                                               "--suffix", "-D", "--dictionary"}),
                     name_out=frozenset({"-o", "--output"}))

_LZIP = Compressor(".lz", True, frozenset({"-o", "--output", "-b", "--member-size", "-m", "--match-length",
                                           "-s", "--dictionary-size", "-n", "--threads", "-B", "--data-size"}),
                   name_out=frozenset({"-o", "--output"}))
_LZOP = Compressor(".lzo", False, frozenset({"-o", "--output", "-S", "--suffix", "-p", "--path"}),
                   keep=frozenset({"-k", "--keep"}), name_out=frozenset({"-o", "--output"}))

COMPRESSORS: dict[str, tuple[Compressor, bool]] = {  # name → (options, decompresses by default)
    "lzip": (_LZIP, False), "plzip": (_LZIP, False), "clzip": (_LZIP, False), "lunzip": (_LZIP, True),
    "lzop": (_LZOP, False),
    "gzip": (_GZIP, False), "pigz": (_GZIP, False), "gunzip": (_GZIP, True), "unpigz": (_GZIP, True),
    "xz": (_XZ, False), "lzma": (_XZ, False), "unxz": (_XZ, True), "unlzma": (_XZ, True),
    "bzip2": (_BZIP2, False), "pbzip2": (_BZIP2, False), "lbzip2": (_BZIP2, False), "bunzip2": (_BZIP2, True),
    "zstd": (_ZSTD, False), "zstdmt": (_ZSTD, False), "unzstd": (_ZSTD, True),
    "lz4": (_LZ4, False), "unlz4": (_LZ4, True), "brotli": (_BROTLI, False), "compress": (_GZIP, False),
    "uncompress": (_GZIP, True),
}


def model_compressor(inv: Invocation) -> None:
    """gzip/xz/bzip2/zstd/lz4/brotli FILES: each operand is read and replaced by the
    (de)compressed file beside it, and deleted unless kept (``-k``; zstd/lz4/brotli keep it
    unless ``--rm``); ``-c``/``--stdout`` writes only stdout; ``-o`` names the output."""
    spec, unpack = COMPRESSORS[inv.name]
    parsed = parse_options(inv.argv, spec.values)
    unpack = unpack or parsed.has(*spec.unpack)
    to_stdout = parsed.has(*spec.stdout)
    testing = parsed.has(*spec.test)
    deletes = (spec.deletes and not parsed.has(*spec.keep)) or parsed.has("--rm")
    outputs = parsed.values_of(*spec.name_out) if spec.name_out else []
    recursive = parsed.has("-r", "--recursive") and inv.name not in ("lz4", "unlz4")
    for option, value, index in parsed.options:
        if value is not None and option in ("-D", "--patch-from", "--dictionary", "--filelist", "--files",
                                            "--files0"):
            inv.read(value, index)
        elif value is not None and option in ("--output-dir-flat", "--output-dir-mirror", "--trace"):
            inv.write(value, index)
    for value, index in outputs:
        inv.write(value, index)
    words = list(parsed.positionals)
    if inv.name in ("lz4", "unlz4") and len(words) == 2 and not parsed.has("-m", "--multiple"):
        (source, source_index), (target, target_index) = words  # lz4 IN OUT
        inv.read(source, source_index)
        inv.write(target, target_index)
        if deletes:
            inv.delete(source, source_index)
        return
    for word, index in words:
        inv.read(word, index)
        if to_stdout or testing:
            continue
        if recursive:  # every file below the directory is replaced
            inv.write(word, index, recursive=True)
        elif not outputs:
            out = word[: -len(spec.suffix)] if unpack and word.endswith(spec.suffix) else (
                word if unpack else word + spec.suffix)
            inv.write(out if out != word else word + ".out", index)
        if deletes:
            inv.delete(word, index, recursive=recursive)
    if to_stdout or testing or not words:
        inv.output(None, f"the output of `{inv.name}`")


def model_unzip(inv: Invocation) -> None:
    """unzip ARCHIVE [MEMBERS] [-x …] [-d DIR]: reads the archive and writes its members in DIR
    (or the cwd); ``-l``/``-t``/``-v``/``-p``/``-Z``/``-z`` only list, test or print."""
    parsed = parse_options(inv.argv, {"-d", "-P", "-x", "-I", "-O"})
    if inv.name == "funzip" or parsed.has("-l", "-t", "-v", "-p", "-Z", "-z", "-c"):
        for word, index in parsed.positionals[:1]:
            inv.read(word, index)
        inv.output(None, f"the output of `{inv.name}`")
        return
    if parsed.positionals:
        inv.read(*parsed.positionals[0])
    if parsed.has("-:"):  # members may climb out with `../`
        inv.unknown("`unzip -:` lets members write above the target directory", None)
    target = parsed.values_of("-d")
    inv.write(target[-1][0] if target else ".", target[-1][1] if target else None)


_7Z_WRITES = frozenset("a u d rn".split())
_7Z_EXTRACTS = frozenset("x e".split())


def _deletes_added(inv: Invocation, switches: list[tuple[str, int]], words: list[tuple[str, int]]) -> None:
    """``7z a -sdel``: the files added are deleted afterwards."""
    if any(switch.lower() == "-sdel" for switch, _ in switches):
        for word, index in words:
            if not word.startswith("@"):
                inv.delete(word, index, recursive=True)


def model_7z(inv: Invocation) -> None:
    """7z COMMAND [SWITCHES] ARCHIVE [FILES]: ``a``/``u``/``d``/``rn`` write the archive
    (``a``/``u`` read the files, recursively); ``x``/``e`` write the members into
    ``-o<DIR>`` (attached) or the cwd; ``-w<DIR>`` is a work directory; ``-so`` writes stdout."""
    words = [(w, i) for i, w in enumerate(inv.argv[1:], start=1) if not w.startswith("-")]
    switches = [(w, i) for i, w in enumerate(inv.argv[1:], start=1) if w.startswith("-")]
    if not words:
        return
    command, _ = words.pop(0)
    out_dir: tuple[str, int] | None = None
    to_stdout = False
    for switch, index in switches:
        if switch.startswith("-o") and len(switch) > 2:
            out_dir = (switch[2:], index)
        elif switch.startswith("-w") and len(switch) > 2:
            inv.write(switch[2:], index)
        elif re.match(r"-a?[ix](?:r[-0]?)?@", switch):  # (`-i@LIST`, `-xr@LIST`: a list file, read)
            inv.read(switch.partition("@")[2], index)
            if switch.lstrip("-a")[:1] == "i":  # (the files it lists are added: not known here)
                inv.read(UNKNOWN, index)
        elif re.match(r"-a?i(?:r[-0]?)?!", switch) and command.lower() in ("a", "u"):
            # `-i!PATTERN`, `-ir!PATTERN` (recursive): files added besides the operands, absolute ones too
            inv.read(switch.partition("!")[2], index, recursive=switch.partition("!")[0].rstrip("-0")[-1:] == "r")
        elif switch == "-so":
            to_stdout = True
    if not words:
        return
    archive, archive_index = words.pop(0)
    command = command.lower()
    if command in _7Z_WRITES:
        inv.write(archive, archive_index)
        if command in ("a", "u"):
            for word, index in words:
                (inv.read(word[1:], index) if word.startswith("@") else inv.read(word, index, recursive=True))
            _deletes_added(inv, switches, words)
        return
    inv.read(archive, archive_index)
    if command in _7Z_EXTRACTS and not to_stdout:
        inv.write(out_dir[0] if out_dir else ".", out_dir[1] if out_dir else None)
    inv.output(None, f"the output of `{inv.name}`")


def model_rar(inv: Invocation) -> None:
    """rar COMMAND [-SWITCHES] ARCHIVE [FILES…] [DIR/]: ``a``/``u``/``f``/``m`` write the archive
    and read the files (recursively); ``m`` and ``-df`` delete them afterwards; ``x``/``e``
    extract into the last operand ending in ``/`` (or ``-op DIR``, or the cwd); ``d``/``c``/``k``/
    ``rn`` change the archive."""
    words = [(w, i) for i, w in enumerate(inv.argv[1:], start=1) if not w.startswith("-")]
    switches = [w for w in inv.argv[1:] if w.startswith("-")]
    if len(words) < 2:
        return
    (command, _), (archive, archive_index) = words[0], words[1]
    command = command.lower()
    files = words[2:]
    if command in ("a", "u", "f", "m", "mf"):
        inv.write(archive, archive_index)
        for word, index in files:
            (inv.read(word[1:], index) if word.startswith("@") else inv.read(word, index, recursive=True))
            moves = command.startswith("m") or any(s.lower() in ("-df", "-dr") for s in switches)
            if moves and not word.startswith("@"):
                inv.delete(word, index, recursive=True)
    elif command in ("d", "c", "k", "rn", "s", "ch", "r", "rr", "cw"):
        inv.write(archive, archive_index)
    elif command in ("x", "e"):
        inv.read(archive, archive_index)
        out = [s[3:] for s in switches if s.lower().startswith("-op") and len(s) > 3]
        if files and files[-1][0].endswith("/"):
            inv.write(files[-1][0], files[-1][1])
        else:
            inv.write(out[-1] if out else ".", None)
    else:
        inv.read(archive, archive_index)


def model_cpio(inv: Invocation) -> None:
    """cpio: ``-i`` extracts members below ``-D DIR`` (or the cwd); ``-o`` writes an archive
    (``-O``/``-F``); ``-p DIR`` copies the listed files into DIR; ``--rsh-command`` runs a
    program; ``-E``/``-I`` read."""
    parsed = parse_options(inv.argv, {"-D", "--directory", "-F", "--file", "-O", "-I", "-E", "--pattern-file",
                                      "-H", "--format", "-M", "--message", "-R", "--owner", "--rsh-command",
                                      "-C", "--io-size", "--block-size"})
    extract = parsed.has("-i", "--extract")
    create = parsed.has("-o", "--create")
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option == "--rsh-command":
            inv.unknown(f"`cpio --rsh-command` runs `{value}`", index)
        elif option in ("-F", "--file", "-O", "-I") and REMOTE_ARCHIVE.match(value) and \
                not parsed.has("--force-local"):  # (`-F host:file`: an archive on another machine, by rsh/ssh)
            contact_url(inv, "ssh://" + value.split(":", 1)[0].rpartition("@")[2], index, 22)
        elif option in ("-E", "--pattern-file", "-I") or (option in ("-F", "--file") and not create):
            inv.read(value, index)
        elif option == "-O" or (option in ("-F", "--file") and create):
            inv.write(value, index)
    if create and inv.stdin.text is not None:  # (`cpio -o` archives the files named on stdin, one a line)
        for line in inv.stdin.text.split("\n")[:256]:
            if line.strip():
                inv.read(line.strip(), None)
    directory = parsed.values_of("-D", "--directory")
    if extract and not parsed.has("-t", "--list"):
        inv.write(directory[-1][0] if directory else ".", directory[-1][1] if directory else None)
        if not parsed.has("--no-absolute-filenames"):  # GNU cpio keeps a member's leading `/`
            inv.unknown("`cpio -i` writes members named by absolute paths where they say "
                        "(without `--no-absolute-filenames`)", None)
    elif parsed.has("-p", "--pass-through"):
        for word, index in parsed.positionals[:1]:
            inv.write(word, index, recursive=True)
    inv.output(None, "the output of `cpio`")


#: pax's options that take a value (``-f ARCHIVE``, ``-s /old/new/``, …)
_PAX_VALUES = frozenset("fsxobBEGTU")


def _pax_substitution(value: str) -> Callable[[str], str] | None:
    """pax's ``-s /old/new/[gp]`` as a function of a name (None: not one it can apply: the
    name it gives is not known).  ``old`` is a basic regular expression (read as Python's),
    ``&`` and ``\\N`` in ``new`` the match and its groups."""
    if len(value) < 3 or UNKNOWN in value:
        return None
    parts = value[1:].split(value[0])
    if len(parts) != 3 or not set(parts[2]) <= set("gp"):
        return None
    old, new, flags = parts
    try:
        pattern = re.compile(old.replace("\\(", "(").replace("\\)", ")"))
    except re.error:
        return None
    replacement = re.sub(r"\\(\d)", r"\\g<\1>", new.replace("\\&", "\0")).replace("&", r"\g<0>").replace("\0", "&")

    def rename(name: str) -> str:
        try:
            return pattern.sub(replacement, name, count=0 if "g" in flags else 1)
        except (re.error, IndexError):
            return UNKNOWN

    return rename


def model_pax(inv: Invocation) -> None:
    """pax: no ``-r``/``-w`` lists the archive (read); ``-r`` extracts its members below the
    working directory, where absolute member names write where they say (unknown effects);
    ``-w`` writes the archive (``-f``, else stdout) of its operands (read whole); ``-rw`` copies
    the operands into the last one (written below).  ``-s`` substitutions and ``-i`` (names typed
    in) rename what lands: destinations not known when it reads or copies."""
    argv = inv.argv
    flags: set[str] = set()
    values: list[tuple[str, str, int]] = []
    operands: list[tuple[str, int]] = []
    index = 1
    while index < len(argv):
        word = argv[index]
        if word == "--":
            operands += [(w, i) for i, w in enumerate(argv[index + 1:], start=index + 1)]
            break
        if word.startswith("-") and len(word) > 1:
            for position, letter in enumerate(word[1:], start=1):
                if letter in _PAX_VALUES:
                    rest = word[position + 1:]
                    if rest:
                        values.append((letter, rest, index))
                    elif index + 1 < len(argv):
                        index += 1
                        values.append((letter, argv[index], index))
                    break
                flags.add(letter)
        else:
            operands.append((word, index))
        index += 1
    read, write = "r" in flags, "w" in flags
    archives = [(value, where) for letter, value, where in values if letter == "f"]
    substitutions = [(_pax_substitution(value), where) for letter, value, where in values if letter == "s"]
    renamed = bool(substitutions) or "i" in flags
    if read and write:  # copy: every operand but the last into the last, under its own (renamed) path
        target = operands[-1] if operands else (".", None)
        for word, where in operands[:-1]:
            inv.read(word, where, recursive=True)
            name = word
            for rename, at in substitutions:
                name = rename(name) if rename is not None else UNKNOWN
                where = at
            inv.write(target[0].rstrip("/") + "/" + name.lstrip("/") if name.strip("/.") else target[0], where,
                      recursive=True)
            if name != word and name.startswith("/"):  # (a renamed absolute name: judged where it says too)
                inv.write(name, where, recursive=True)
        if "i" in flags:
            inv.unknown("`pax -rw -i` copies files under names typed in: where they land is not known", target[1])
        return
    if read:
        for rename, at in substitutions:  # `-s ',^,/etc/,'`: every member below the prefix it puts first
            prefix = rename("") if rename is not None else None
            if prefix and UNKNOWN not in prefix and rename is not None and rename("x") == prefix + "x":
                inv.write(prefix, at, recursive=True)
    for value, where in archives:
        if write:
            inv.write(value, where)
        else:
            inv.read(value, where)
    if write:
        listed: list[tuple[str, int | None]] = [*operands] or [(".", None)]
        for word, at_word in listed:
            inv.read(word, at_word, recursive=True)
        if not archives:
            inv.output(None, "the archive `pax -w` writes")
        return
    if read:
        inv.write(".", None)
        why = "with `-s` (or `-i`) renames the members it extracts" if renamed else \
            "writes members named by absolute paths where they say"
        inv.unknown(f"`pax -r` {why}: where they land is not known", None)
        return
    inv.output(None, "the list `pax` prints")


def model_ar(inv: Invocation) -> None:
    """ar KEY[MODS] [RELPOS] [COUNT] ARCHIVE [MEMBERS]: ``d m q r s`` write the archive (``q r``
    read the members), ``x`` writes members into the cwd (``--output DIR``), ``t p`` read."""
    parsed = parse_options(inv.argv, {"--plugin", "--target", "--output", "--record-libdeps"})
    for value, index in parsed.values_of("--plugin"):
        inv.unknown(f"`ar --plugin {value}` loads a code module", index)
    words = list(parsed.positionals)
    key = ""
    for option, _, _ in parsed.options:
        if len(option) == 2 and option[1] in "dmpqrstx":
            key = option[1:] + key
    if (not key and words) or (words and words[0][0][:1] in "dmpqrstx" and not key):
        key = words.pop(0)[0]
    skip = sum(1 for mod in "abi" if mod in key[1:]) + ("N" in key)
    words = words[skip:]
    if not words or not key:
        return
    archive, archive_index = words.pop(0)
    operation = key[:1]
    if operation in "dmqrs":
        inv.write(archive, archive_index)
        if operation in "qr":
            for word, index in words:
                inv.read(word, index)
    else:
        inv.read(archive, archive_index)
        if operation == "x":
            out = parsed.values_of("--output")
            inv.write(out[0][0] if out else ".", out[0][1] if out else None)


def model_patch(inv: Invocation) -> None:
    """patch [-p N] [-d DIR] [-i PATCH | < PATCH] [FILE [PATCH]]: FILE is rewritten (``-o``: the
    output instead); without FILE the files named inside the patch are written below DIR (or
    the cwd, judged as a write of that directory); ``--dry-run`` writes nothing."""
    parsed = parse_options(inv.argv, {"-i", "--input", "-o", "--output", "-d", "--directory", "-p", "--strip",
                                      "-r", "--reject-file", "-B", "--prefix", "-Y", "--basename-prefix",
                                      "-z", "--suffix", "-V", "--version-control", "-D", "--ifdef", "-F",
                                      "--fuzz", "--quoting-style", "--reject-format", "-g", "--get"})
    dir_index: int | None = None
    saved = inv.walker.state.cwd
    for option, value, index in parsed.options:
        if value is not None and option in ("-d", "--directory"):
            dir_index = index
            inv.walker.state.cwd = inv.path(value)  # patch works there (restored below)
    dry = parsed.has("--dry-run", "-C", "--check")
    try:
        for option, value, index in parsed.options:
            if value is None:
                continue
            if option in ("-i", "--input"):
                inv.read(value, index)
            elif option in ("-o", "--output", "-r", "--reject-file") and not dry:
                inv.write(value, index)
            elif option in ("-B", "--prefix") and not dry:
                inv.write(value + "x", index)
        words = list(parsed.positionals)
        if len(words) >= 2:
            inv.read(*words[1])
        if words:
            word, index = words[0]
            inv.read(word, index)
            if not dry and not parsed.values_of("-o", "--output"):
                inv.write(word, index)
        elif not dry:
            inv.write(".", dir_index)
    finally:
        inv.walker.state.cwd = saved


def model_sponge(inv: Invocation) -> None:
    """sponge [-a] FILE: soaks up stdin and writes (``-a`` appends to) FILE."""
    for word, index in parse_options(inv.argv, frozenset()).positionals:
        inv.write(word, index)


def model_split(inv: Invocation) -> None:
    """split [OPTIONS] [INPUT [PREFIX]]: writes PREFIXaa, PREFIXab… (prefix ``x``);
    ``--filter`` runs each piece through shell code.  csplit [-f PREFIX] FILE PATTERNS:
    writes PREFIX00… (prefix ``xx``)."""
    if inv.name == "csplit":
        parsed = parse_options(inv.argv, {"-b", "--suffix-format", "-f", "--prefix", "-n", "--digits"})
        prefix = parsed.values_of("-f", "--prefix")
        words = list(parsed.positionals)
        if words:
            inv.read(*words[0])
        target, index = prefix[-1] if prefix else ("xx", None)
        inv.write(target + "00", index)
        return
    parsed = parse_options(inv.argv, {"-a", "--suffix-length", "--additional-suffix", "-b", "--bytes", "-C",
                                      "--line-bytes", "-l", "--lines", "-n", "--number", "-t", "--separator",
                                      "--filter"}, optional=frozenset({"--numeric-suffixes", "--hex-suffixes"}))
    filtered = False
    for value, index in parsed.values_of("--filter"):
        inv.script(value, index, what="the command given to `split --filter`")
        filtered = True
    words = list(parsed.positionals)
    if words:
        inv.read(*words[0])
    if not filtered:
        target, index = (words[1][0], words[1][1]) if len(words) >= 2 else ("x", None)
        inv.write(target + "aa", index)


def model_iconv(inv: Invocation) -> None:
    """iconv [-f FROM] [-t TO] [-o OUT] FILES: files read, ``-o`` written."""
    parsed = parse_options(inv.argv, {"-f", "--from-code", "-t", "--to-code", "-o", "--output"})
    for value, index in parsed.values_of("-o", "--output"):
        inv.write(value, index)
    for word, index in parsed.positionals:
        inv.read(word, index)
    if not parsed.values_of("-o", "--output"):
        inv.output(None, "the output of `iconv`")


#: openssl's single-dash long options: option → the role of its value
_OPENSSL = {
    "-in": "read", "-out": "write", "-keyout": "write", "-key": "read", "-inkey": "read", "-CAfile": "read",
    "-CA": "read", "-CAkey": "read", "-cert": "read", "-certfile": "read", "-signkey": "read", "-config": "read",
    "-extfile": "read", "-sigfile": "read", "-signature": "read", "-rand": "read", "-writerand": "write",
    "-CRL": "read", "-crl": "read", "-untrusted": "read", "-trusted": "read", "-chain": "read",
    "-msgfile": "write", "-dcert": "read", "-dkey": "read", "-CAserial": "write", "-verify": "read",
    "-prverify": "read", "-kfile": "read", "-peerkey": "read", "-sess_out": "write", "-sess_in": "read",
    "-keylogfile": "write", "-reqout": "write", "-respout": "write", "-reqin": "read", "-respin": "read",
    "-index": "read", "-outdir": "write", "-paramfile": "read", "-pubout-never": "text",
    "-engine": "unknown:`openssl -engine` loads a code module", "-provider-path":
    "unknown:`openssl -provider-path` loads code modules from a directory",
    "-connect": "host", "-proxy": "host", "-host": "host", "-url": "url", "-accept": "listen", "-port": "listen",
    "-sign": "read", "-keyfile": "read", "-certin-never": "text",
}
#: openssl commands whose operands are files they read (``openssl dgst -sha256 FILE``)
_OPENSSL_FILE_OPERANDS = frozenset({"dgst", "md5", "sha1", "sha224", "sha256", "sha384", "sha512", "rmd160",
                                    "base64", "enc"})


def model_openssl(inv: Invocation) -> None:
    """openssl COMMAND [OPTIONS]: ``-in``/``-key``/``-CAfile``… read, ``-out``/``-keyout``…
    write, ``-passin``/``-passout file:PATH`` read, ``-connect``/``-proxy`` contact a host,
    ``-engine`` loads code; ``s_client`` without ``-connect`` contacts localhost:443."""
    argv = inv.argv
    index = 2 if len(argv) > 1 and not argv[1].startswith("-") else 1
    command = argv[1] if index == 2 else ""
    connected = False
    while index < len(argv):
        word = argv[index]
        role = _OPENSSL.get(word)
        if word in ("-passin", "-passout", "-pass", "-kfile") and index + 1 < len(argv):
            source = argv[index + 1]
            if source.startswith("file:"):
                inv.read(source[5:], index + 1)
            index += 2
            continue
        if role is None or index + 1 >= len(argv):
            if role is None and word[:1] != "-" and command in _OPENSSL_FILE_OPERANDS:
                inv.read(word, index)
            index += 1
            continue
        value = argv[index + 1]
        if role == "host":
            contact_url(inv, "https://" + value, index + 1, 443)
            connected = connected or word == "-connect"
        elif role == "url":
            contact_url(inv, value, index + 1, 80)
            connected = True
        elif role == "listen":
            if command in ("s_server", "ocsp"):
                inv.network("0.0.0.0", int(value) if value.isdigit() else None, index + 1)
        elif role.startswith("unknown:"):
            inv.unknown(role.partition(":")[2], index)
        elif role == "read":
            inv.read(value, index + 1)
        elif role == "write":
            inv.write(value, index + 1, recursive=word == "-outdir")
        index += 2
    if command in ("s_client", "s_time") and not connected:
        inv.network("localhost", 443, 1)
    if command == "rand":
        _openssl_rand(inv)
    inv.output(None, "the output of `openssl`")


def _openssl_rand(inv: Invocation) -> None:
    """``openssl rand [-out F] [-hex|-base64] NUM``: NUM random bytes; more than the fresh
    model's disk bound (to a file or a redirected output) fills the disk."""
    from stockade.analyzer.models.fresh import DISK_LIMIT, size_of, stdout_to_file

    argv = inv.argv
    count = argv[-1] if len(argv) > 2 and argv[-2] not in ("-out", "-rand", "-writerand", "-engine") else ""
    size = size_of(count) if count[:1].isdigit() else None
    if size is not None and size > DISK_LIMIT and ("-out" in argv or stdout_to_file(inv)):
        inv.unknown(f"`openssl rand {show(count)}` writes a huge file: it fills the disk", len(argv) - 1)


register(" ".join(COMPRESSORS), model_compressor)
register("unzip funzip", model_unzip)
register("7z 7za 7zr 7zz", model_7z)
register("rar", model_rar)
def model_jar(inv: Invocation) -> None:
    """``jar {c|u|x|t}[vf0Mm…] [JARFILE] [MANIFEST] [-C DIR] FILES…`` (and the long
    ``--create --file=F`` spelling): creating or updating reads the files (below ``-C DIR``) and
    writes the archive; extracting writes the working directory; listing reads the archive."""
    argv = inv.argv
    if len(argv) < 2:
        return
    mode = argv[1].lstrip("-") if not argv[1].startswith("--") else ""
    long_mode = {"--create": "c", "--update": "u", "--extract": "x", "--list": "t"}
    letters = mode or "".join(long_mode.get(word.partition("=")[0], "") for word in argv[1:])
    archive: tuple[str, int] | None = None
    words: list[tuple[str, int]] = []
    directory = "."
    index = 2 if mode else 1
    if mode and "f" in mode and index < len(argv):
        archive = (argv[index], index)
        index += 1
    while index < len(argv):
        word = argv[index]
        if word == "-C" and index + 1 < len(argv):
            directory = argv[index + 1]
            index += 2
            continue
        if word.startswith(("--file=", "-f=")):
            archive = (word.partition("=")[2], index)
        elif word in ("--file", "-f") and index + 1 < len(argv):
            archive = (argv[index + 1], index + 1)
            index += 1
        elif not word.startswith("-"):
            words.append((word, index))
        index += 1
    if "c" in letters or "u" in letters:
        if archive is not None:
            inv.write(archive[0], archive[1])
        for word, at in words:
            inv.read(word if word.startswith("/") or directory == "." else directory.rstrip("/") + "/" + word, at,
                     recursive=True)
    elif "x" in letters:
        if archive is not None:
            inv.read(archive[0], archive[1])
        inv.write(".", None)
    elif archive is not None:
        inv.read(archive[0], archive[1])


register("cpio", model_cpio)
register("pax", model_pax)
register("jar", model_jar)
register("ar", model_ar)
register("patch", model_patch)


#: version-control tools' subcommands that apply patches to the working copy (files the patch
#: names, not seen), and the options that make one apply nothing there
_PATCH_APPLIERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "hg": (frozenset({"import", "patch", "qpush", "qfold", "qgoto"}), frozenset({"--bypass", "--dry-run"})),
    "svn": (frozenset({"patch"}), frozenset({"--dry-run"})),
    "quilt": (frozenset({"push", "fold"}), frozenset()),
    "stg": (frozenset({"push", "import", "goto", "pick", "fold"}), frozenset()),
}
#: their options (before the subcommand) that take a value
_VCS_GLOBALS = frozenset({"-R", "--repository", "--cwd", "--config", "--config-dir", "--username",
                          "--password", "--color", "--pager"})


def model_patch_applier(inv: Invocation) -> None:
    """``hg import|qpush``, ``svn patch``, ``quilt push|fold``, ``stg push|import``: what a program
    with no model gets (:func:`default_model`), and the working copy written below its top (or
    ``--cwd``/``-R``/svn's ``WCPATH``) with files the patch names — files that cannot be seen, so
    running one afterwards is code not seen into (see :func:`.fresh.unseen_members`)."""
    from stockade.analyzer.models import default_model
    from stockade.analyzer.models.fresh import unseen_members

    default_model(inv)
    subcommands, inert = _PATCH_APPLIERS.get(inv.name, (frozenset(), frozenset()))
    parsed = parse_options(inv.argv, _VCS_GLOBALS, stop_at_first_positional=True)
    if not parsed.positionals or parsed.positionals[0][0] not in subcommands:
        return
    at = parsed.positionals[0][1]
    if any(word.partition("=")[0] in inert for word in inv.argv[at + 1:]):
        return
    tree = next((value for option, value, _ in parsed.options if option in ("-R", "--repository", "--cwd")
                 and value), ".")
    if inv.name == "svn":
        operands = [word for word in inv.argv[at + 1:] if not word.startswith("-")]
        tree = operands[1] if len(operands) > 1 else tree
    inv.write(tree, at)
    unseen_members(inv.walker, inv.walker.effects[-1])


register(" ".join(_PATCH_APPLIERS), model_patch_applier)
register("sponge", model_sponge)
register("split csplit", model_split)
register("iconv", model_iconv)
register("openssl", model_openssl)


# -- backup repositories: restic, borg ------------------------------------------------------------

#: restic's repository types whose server is a fixed service (the bucket or container names no host)
_RESTIC_SERVICES = {"b2": "api.backblazeb2.com", "azure": "blob.core.windows.net", "gs": "storage.googleapis.com"}
_RESTIC_VALUES = frozenset({"-r", "--repo", "--repository-file", "-p", "--password-file", "--password-command",
                            "--cacert", "--tls-client-cert", "--cache-dir", "-o", "--option", "--limit-upload",
                            "--limit-download", "--pack-size", "--compression", "--key-hint", "--target", "-t",
                            "--host", "-H", "--tag", "--path", "--exclude", "-e", "--iexclude", "--exclude-file",
                            "--iexclude-file", "--files-from", "--files-from-raw", "--files-from-verbatim",
                            "--include", "-i", "--iinclude", "--keep-last", "--keep-daily", "--keep-weekly",
                            "--keep-monthly", "--keep-yearly", "--keep-within", "--keep-tag", "--max-unused",
                            "--read-data-subset", "--parent", "--time", "--stdin-filename", "--exclude-larger-than",
                            "--exclude-if-present", "--group-by", "-g", "--from-repo", "--from-password-file",
                            "--retry-lock", "--mode"})
#: restic/borg subcommands that change nothing in the repository
_BACKUP_READS = frozenset({"snapshots", "ls", "list", "cat", "dump", "find", "stats", "check", "diff", "info",
                           "restore", "extract", "mount", "version", "help", "key", "export-tar"})


def backup_repository(inv: Invocation, repo: str, index: int | None, changes: bool) -> None:
    """A restic or borg repository: a remote one (``sftp:[user@]host:/path``, ``rest:URL``,
    ``s3:HOST/bucket``, ``[user@]host:path``, ``ssh://…``) is contacted; ``rclone:``/``swift:``
    reach storage named elsewhere (unknown); a local one is read, and written when the
    subcommand changes it."""
    kind, colon, rest = repo.partition(":")
    lower = kind.lower()
    if UNKNOWN in kind:
        inv.unknown(f"`{inv.name}` uses a repository that is not known before it runs (`{show(repo)}`)", index)
    elif "://" in repo and lower in ("ssh", "sftp", "http", "https"):
        contact_url(inv, repo, index, 22)
    elif colon and lower == "sftp":
        host = rest.partition("//")[2].partition("/")[0] if rest.startswith("//") else rest.partition(":")[0]
        contact_url(inv, "ssh://" + host.rpartition("@")[2], index, 22)
    elif colon and lower in ("rest", "s3"):
        contact_url(inv, rest if "://" in rest else "https://" + rest, index, 443)
    elif colon and lower in _RESTIC_SERVICES:
        inv.network(_RESTIC_SERVICES[lower], 443, index)
    elif colon and lower in ("rclone", "swift"):
        inv.unknown(f"`{inv.name}` reaches storage named in its configuration (`{show(repo)}`)", index)
    elif colon and lower != "local" and "/" not in kind and len(kind) > 1:  # borg's `[user@]host:path`
        contact_url(inv, "ssh://" + kind.rpartition("@")[2], index, 22)
    else:
        path = rest if lower == "local" and colon else repo
        inv.read(path, index, recursive=True)
        if changes:
            inv.write(path, index, recursive=True)


def model_restic(inv: Invocation) -> None:
    """``restic [-r REPO] COMMAND …``: the repository (``-r``, ``RESTIC_REPOSITORY``; a
    ``--repository-file``: not known) is judged by :func:`backup_repository`; ``backup`` reads
    its operands, ``restore --target`` writes; ``--password-file``/``--cacert`` are read,
    ``--password-command`` is run."""
    from stockade.analyzer.models.packages import env_value

    parsed = parse_options(inv.argv, _RESTIC_VALUES)
    words = list(parsed.positionals)
    sub, at = words[0] if words else ("", None)
    changes = sub not in _BACKUP_READS
    repos = parsed.values_of("-r", "--repo")
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("--repository-file", "-p", "--password-file", "--cacert", "--tls-client-cert",
                      "--exclude-file", "--iexclude-file", "--files-from", "--files-from-raw",
                      "--files-from-verbatim", "--from-password-file"):
            inv.read(value, index)
            if option == "--repository-file":
                inv.unknown(f"`restic` uses the repository named in `{show(value)}`", index)
        elif option == "--password-command":
            inv.script(value, index, what="the command given to `restic --password-command`")
        elif option == "--cache-dir" or (option in ("--target", "-t") and sub == "restore"):
            inv.write(value, index, recursive=True)
        elif option == "--from-repo":
            backup_repository(inv, value, index, False)
    for name in ("RESTIC_PASSWORD_FILE", "RESTIC_PASSWORD_COMMAND", "RESTIC_REPOSITORY_FILE"):
        found = env_value(inv, name)
        if found is not None and name == "RESTIC_PASSWORD_COMMAND":
            inv.script(found[1], 0, what="the command of `RESTIC_PASSWORD_COMMAND`")
        elif found is not None:
            inv.read(found[1], 0)
    named = env_value(inv, "RESTIC_REPOSITORY")
    if repos:
        backup_repository(inv, repos[-1][0], repos[-1][1], changes)
    elif named is not None:
        backup_repository(inv, named[1], 0, changes)
    elif sub not in ("", "version", "help", "generate", "self-update", "cache"):
        inv.unknown("`restic` uses the repository of its environment, which the command does not show", at)
    if sub == "backup":
        for word, index in words[1:]:
            inv.read(word, index, recursive=True)
    elif sub == "self-update":
        inv.network("github.com", 443, at)
        inv.unknown("`restic self-update` replaces its own executable", at)


_BORG_VALUES = frozenset({"-r", "--repo", "--rsh", "--remote-path", "--lock-wait", "--umask", "-e", "--exclude",
                          "--exclude-from", "--pattern", "--patterns-from", "-C", "--compression", "--comment",
                          "--timestamp", "-c", "--checkpoint-interval", "--chunker-params", "--encryption",
                          "--keep-last", "--keep-daily", "--keep-weekly", "--keep-monthly", "--keep-yearly",
                          "--keep-within", "-a", "--glob-archives", "--match-archives", "--sort-by", "--first",
                          "--last", "--format", "--strip-components", "--upload-ratelimit", "--debug-topic",
                          "--files-cache", "--stdin-name", "--paths-from-command", "--content-from-command",
                          "--other-repo", "--prefix"})


def model_borg(inv: Invocation) -> None:
    """``borg [--rsh CMD] COMMAND REPO[::ARCHIVE] [PATH…]`` (borg 2: ``-r REPO``; else
    ``BORG_REPO``): the repository is judged by :func:`backup_repository`; ``create`` reads its
    paths, ``extract`` writes the current directory, ``mount`` shows the archive at its mount
    point; ``--rsh``/``BORG_RSH`` and ``--paths-from-command`` are commands it runs."""
    from stockade.analyzer.models.packages import env_value

    parsed = parse_options(inv.argv, _BORG_VALUES)
    words = list(parsed.positionals)
    sub, at = words[0] if words else ("", None)
    operands = words[1:]
    changes = sub not in _BACKUP_READS
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("--rsh", "--remote-path"):
            inv.script(value, index, what=f"the command given to `borg {option}`")
        elif option in ("--exclude-from", "--patterns-from"):
            inv.read(value, index)
        elif option in ("--paths-from-command", "--content-from-command"):
            inv.script(value, index, what=f"the command given to `borg {option}`")
    found = env_value(inv, "BORG_RSH")
    if found is not None:
        inv.script(found[1], 0, what="the command of `BORG_RSH`")
    repos = parsed.values_of("-r", "--repo")
    named = env_value(inv, "BORG_REPO")
    if repos:
        backup_repository(inv, repos[-1][0].partition("::")[0], repos[-1][1], changes)
    elif operands and not operands[0][0].startswith("::") and sub not in ("help", "version", "benchmark"):
        repo, index = operands.pop(0)
        backup_repository(inv, repo.partition("::")[0], index, changes)
    elif named is not None:
        backup_repository(inv, named[1], 0, changes)
        if operands and operands[0][0].startswith("::"):
            operands.pop(0)
    elif sub not in ("", "help", "version"):
        inv.unknown("`borg` uses the repository of its environment, which the command does not show", at)
    if sub == "create":
        for word, index in operands:
            inv.read(word, index, recursive=True)
    elif sub == "extract":
        inv.write(".", at)
    elif sub == "mount" and operands:
        inv.write(operands[-1][0], operands[-1][1])


register("restic", model_restic)
register("borg borg2 borgbackup", model_borg)
