"""Everyday inspection tools that only read their operands (binaries, processes, system
state), as data, so that they are not judged by the default model of a program with no model
(which takes any path outside the writable areas as an unknown effect); and ``fd``, whose
``-x``/``-X`` run a command per match.
"""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN
from stockade.analyzer.exec import Invocation, Stdin
from stockade.analyzer.models import Spec, parse_options, register, spec_model

T = "text"


def _t(*names: str) -> dict[str, str]:
    return dict.fromkeys(names, T)


READERS: dict[str, Spec] = {
    # binaries and libraries
    "ldd": Spec(),
    "readelf": Spec(values=_t("-x", "--hex-dump", "-p", "--string-dump", "-R", "--relocated-dump", "-w",
                              "--debug-dump", "-T")),
    "objdump": Spec(values=_t("-j", "--section", "-M", "--disassembler-options", "-b", "--target", "-m",
                              "--architecture", "--start-address", "--stop-address", "--prefix",
                              "--prefix-strip", "-W", "--dwarf")),
    "nm": Spec(values=_t("-f", "--format", "-t", "--radix", "--target", "--plugin", "-X")),
    "size": Spec(values=_t("-A", "--format", "--radix", "--target")),
    "otool": Spec(values=_t("-p", "-s")),
    "c++filt": Spec(args="text"),
    "addr2line": Spec(args="text", values={"-e": "read", "--exe": "read", "-j": T, "--section": T}),
    "pkg-config": Spec(args="text", values=_t("--define-variable", "--variable", "--atleast-version",
                                              "--exact-version", "--max-version")),
    # processes and system state
    "ps pstree pgrep lscpu lsblk lsusb lspci lsmod vmstat iostat mpstat who w last lastlog getent uptime "
    "sw_vers top htop btop "
    "lsns": Spec(args="text", values=_t("-o", "-O", "-p", "-u", "-U", "-g", "-G", "-t", "-C", "-n", "-d", "-s",
                                        "-f", "--format", "--sort", "--pid", "--user")),
    "lsof": Spec(values=_t("-p", "-u", "-g", "-c", "-d", "-i", "-s", "-F", "-r", "-T", "-k")),
    "ss netstat": Spec(args="text", values=_t("-A", "--query", "-f", "--family", "-F", "--filter")),
    "dmesg": Spec(args="text", values=_t("-f", "--facility", "-l", "--level", "-s", "--buffer-size",
                                         "--time-format"), flags={"-c": "privilege", "--read-clear": "privilege",
                                                                  "-C": "privilege", "--clear": "privilege"}),
    "journalctl": Spec(args="text", values={**_t("-u", "--unit", "--user-unit", "-n", "--lines", "-o", "--output",
                                                 "-p", "--priority", "-S", "--since", "-U", "--until", "-b", "--boot",
                                                 "-t", "--identifier", "-g", "--grep", "-k", "--facility",
                                                 "--output-fields", "-M", "--machine", "-F", "--field"),
                                              "-D": "readr", "--directory": "readr", "--file": "read"},
                       optional=frozenset({"-b", "--boot"}),
                       flags={"--vacuum-size": "privilege", "--vacuum-time": "privilege",
                              "--vacuum-files": "privilege", "--rotate": "privilege", "--flush": "privilege"}),
    # searching and describing files
    "whereis": Spec(args="text", values=_t("-B", "-M", "-S")),
    "locate plocate mlocate": Spec(args="text", values={"-d": "read", "--database": "read", "-l": T, "-n": T,
                                                        "--limit": T}),
    "apropos whatis tldr": Spec(args="text"),
    "identify ffprobe mediainfo exif pdfinfo": Spec(values=_t("-v", "-loglevel", "-show_entries",
                                                                            "-of", "-print_format", "-format",
                                                                            "-select_streams")),
    "tokei cloc scc": Spec(args="readr", values=_t("-e", "--exclude", "-t", "--type", "-o", "--output", "-s",
                                                   "--sort", "--exclude-dir", "--include-lang", "--exclude-lang")),
    "diffstat": Spec(values=_t("-p", "-w", "-D", "-S")),
    "hexyl": Spec(values=_t("-n", "--length", "-s", "--skip", "-c", "--bytes", "--display-offset", "--border",
                            "--color")),
    "shasum md5 sha256 b3sum": Spec(values=_t("-a", "--algorithm")),
}


def model_fd(inv: Invocation) -> None:
    """fd/fdfind ``[PATTERN] [PATH…]``: reads the paths recursively (names only);
    ``-x``/``--exec`` and ``-X``/``--exec-batch`` run a command on every match (unknown names)."""
    argv = inv.argv
    values = {"-e", "--extension", "-E", "--exclude", "-t", "--type", "-d", "--max-depth", "--min-depth",
              "--exact-depth", "-S", "--size", "--changed-within", "--changed-before", "-o", "--owner", "-j",
              "--threads", "--max-results", "--base-directory", "--path-separator", "--ignore-file", "-c",
              "--color", "--format", "--search-path", "--batch-size"}
    stop = len(argv)
    for index, word in enumerate(argv[1:], start=1):
        if word in ("-x", "--exec", "-X", "--exec-batch"):
            stop = index
            break
    parsed = parse_options(argv[:stop], values)
    words = list(parsed.positionals)
    if words:
        words.pop(0)  # the pattern
    for value, index in parsed.values_of("--search-path", "--base-directory"):
        words.append((value, index))
    if not words:
        words = [(".", 0)]
    for word, index in words:
        inv.read(word, index if index else None, recursive=True)
    for value, index in parsed.values_of("--ignore-file"):
        inv.read(value, index)
    if stop < len(argv) - 1:
        command = argv[stop + 1:]
        end = len(command)
        if ";" in command:
            end = command.index(";")
        sub = [UNKNOWN if "{" in word and "}" in word else word for word in command[:end]]
        if not any(UNKNOWN in word for word in sub):
            sub.append(UNKNOWN)
        inv.run(stop + 1, argv=sub, spans=[inv.at(stop + 1 + offset) for offset in range(len(sub))],
                stdin=Stdin(None, "the terminal"))


for _names, _spec in READERS.items():
    register(_names, spec_model(_spec))
# fd (`-x`/`-X`) is modelled in selection.py, with the names its patterns select
