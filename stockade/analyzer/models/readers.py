"""Everyday inspection tools that only read their operands (binaries, processes, system
state), as data, so that they are not judged by the default model of a program with no model
(which takes any path outside the writable areas as an unknown effect).  ``fd`` is modelled
in :mod:`.selection`, with the names its patterns select.
"""

from __future__ import annotations

from stockade.analyzer.models import Spec, register, spec_model

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
    # (locate, plocate, mlocate: what they print, in :mod:`.selection`)
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


for _names, _spec in READERS.items():
    register(_names, spec_model(_spec))
