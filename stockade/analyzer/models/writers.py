"""Tools that write where an option or operand says: compilers' output directories, plain
editors, device nodes, Python's command-line modules (``python -m venv DIR``, ``-m zipfile -e
ZIP DIR``, ``-m tarfile -e``, ``-m json.tool IN OUT``), ``virtualenv``; and build tools whose
operands are target labels, not paths (``bazel test //...``).
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, Parsed, Spec, parse_options, register, spec_model, visible_operands
from stockade.analyzer.models.shells import _MODULE_TOOLS
from stockade.analyzer.regex import LazyPattern

T = "text"


def _t(*names: str) -> dict[str, str]:
    return dict.fromkeys(names, T)


WRITERS: dict[str, Spec] = {
    # packet capture: -w writes the capture, -r/-F read a capture / filter file
    "tcpdump": Spec(args="text", values={**_t("-i", "--interface", "-c", "-s", "--snapshot-length", "-B",
                                              "--buffer-size", "-C", "-G", "-W", "-y", "--linktype", "-E", "-M",
                                              "-T", "-j", "--time-stamp-type", "-Q", "--direction", "-Z",
                                              "--relinquish-privileges", "--count", "--time-stamp-precision"),
                                           "-w": "write", "-r": "read", "-F": "read", "-V": "read",
                                           "-z": "unknown:`tcpdump -z` runs a command on every saved file"}),
    "tshark dumpcap": Spec(args="text", values={**_t("-i", "--interface", "-c", "-a", "--autostop", "-b",
                                                     "--ring-buffer", "-f", "-Y", "--display-filter", "-e", "-E",
                                                     "-T", "-o", "-s", "--snapshot-length", "-B", "--buffer-size",
                                                     "-y", "--linktype", "-d", "-q", "-z", "-R", "--read-filter",
                                                     "-j", "-J", "-O", "-n", "-N", "-2", "-G", "-X"),
                                                  "-w": "write", "-r": "read", "--read-file": "read"}),
    # javac: sources read; -d/-s/-h are output directories
    "javac": Spec(values={**_t("-cp", "-classpath", "--class-path", "-sourcepath", "--source-path", "-encoding",
                               "--release", "-source", "-target", "--module", "-m", "--module-path", "-p",
                               "--processor-path", "-processorpath", "-processor", "--add-modules",
                               "--limit-modules", "--system", "-bootclasspath", "--boot-class-path",
                               "--module-source-path", "-A", "-J"),
                          "-d": "writer", "-s": "writer", "-h": "writer"}),
    # tsc: sources and the project file read; the output directories and files written
    "tsc": Spec(values={**_t("--target", "-t", "--module", "-m", "--lib", "--jsx", "--moduleResolution",
                             "--rootDir", "--baseUrl", "--types", "--typeRoots", "--locale", "--newLine",
                             "--maxNodeModuleJsDepth", "--jsxFactory", "--jsxImportSource"),
                        "--outDir": "writer", "-outDir": "writer", "--declarationDir": "writer",
                        "--outFile": "write", "--out": "write", "--tsBuildInfoFile": "write",
                        "--generateTrace": "writer", "-p": "read", "--project": "read", "-b": "read",
                        "--build": "read"}),
    # document and asset converters: inputs read, the output option (or the last operand) written
    "xmllint": Spec(values={**_t("--path", "--xpath", "--encode", "--maxmem", "--pattern", "--dtdvalidfpi"),
                            "-o": "write", "--output": "write", "--schema": "read", "--relaxng": "read",
                            "--dtdvalid": "read", "--schematron": "read"}),
    "xsltproc": Spec(values={**_t("--path", "--maxdepth", "--maxvars", "--maxparserdepth"),
                             "-o": "write", "--output": "write", "--writesubtree": "writer"}),
    "jsonnet": Spec(values={**_t("-V", "--ext-str", "--ext-code", "-A", "--tla-str", "--tla-code", "-s",
                                 "--max-stack", "-t", "--max-trace"),
                            "-o": "write", "--output-file": "write", "-m": "writer", "--multi": "writer",
                            "-J": "read", "--jpath": "read", "--ext-str-file": "read", "--ext-code-file": "read",
                            "--tla-str-file": "read", "--tla-code-file": "read"}),
    "dot neato twopi circo fdp sfdp osage patchwork": Spec(values={"-o": "write"}),
    "tidy": Spec(values={**_t("-wrap", "-indent-spaces", "-language", "-access"),
                         "-o": "write", "-output": "write", "-f": "write", "-file": "write", "-config": "read"},
                 flags={"-m": "writes-args", "-modify": "writes-args"}),
    "uglifyjs terser": Spec(values={"-o": "write", "--output": "write", "--config-file": "read",
                                    "--name-cache": "write", "--source-map": T}),
    "babel": Spec(values={"-o": "write", "--out-file": "write", "-d": "writer", "--out-dir": "writer",
                          "--config-file": "read", "--extensions": T, "-x": T}),
    "svgo": Spec(values={"-o": "write", "--output": "write", "-f": "readr", "--folder": "readr",
                         "--config": "read", "-p": T, "--precision": T}),
    "mmdc": Spec(values={**_t("-t", "--theme", "-w", "--width", "-H", "--height", "-b", "--backgroundColor",
                              "-e", "--outputFormat", "-s", "--scale"),
                         "-i": "read", "--input": "read", "-o": "write", "--output": "write",
                         "-c": "read", "--configFile": "read", "-C": "read", "--cssFile": "read",
                         "-p": "read", "--puppeteerConfigFile": "read"}),
    "asciidoctor asciidoctor-pdf": Spec(values={
        **_t("-a", "--attribute", "-b", "--backend", "-d", "--doctype", "-E", "--template-engine", "-S",
             "--safe-mode", "-e", "--eruby"),
        "-o": "write", "--out-file": "write", "-D": "writer", "--destination-dir": "writer", "-B": "read",
        "--base-dir": "read", "-T": "readr", "--template-dir": "readr",
        "-r": "unknown:`asciidoctor -r` loads a Ruby library", "--require": "unknown:`asciidoctor -r` loads a Ruby library"}),
    "esbuild": Spec(values={"--outfile": "write", "--outdir": "writer", "--metafile": "write",
                            "--tsconfig": "read"}),
    "pdftotext pdftohtml pdftoppm pdftocairo": Spec(last="write", values=_t("-f", "-l", "-r", "-x", "-y", "-W",
                                                                            "-H", "-enc", "-opw", "-upw")),
    "sass lessc": Spec(last="write", values={"-I": "read", "--load-path": "read", "-s": T, "--style": T}),
    "rst2html rst2html5 rst2latex rst2man rst2odt rst2pdf rst2xml": Spec(last="write"),
    "cpp": Spec(last="write", values={"-o": "write", "-I": "read", "-include": "read", "-D": T, "-U": T}),
    "wkhtmltopdf wkhtmltoimage": Spec(last="write"),
}
#: GNU gettext's value options: catalogues in, one catalogue (or a directory of them) out
_GETTEXT_VALUES = {
    "-o": "write", "--output-file": "write", "-p": "writer", "--output-dir": "writer", "-d": "writer",
    "--default-domain": T, "-D": "readr", "--directory": "readr", "-f": "read", "--files-from": "read",
    "-x": "read", "--exclude-file": "read", "-C": "read", "--compendium": "read", "-l": T, "--locale": T,
    "-r": T, "--resource": T, "-L": T, "--language": T, "--flag": T, "--from-code": T, "-t": T, "--to-code": T, "-w": T, "--width": T, "-i": "read",
    "--input": "read", "--msgid-bugs-address": T, "--package-name": T, "--package-version": T,
    "--copyright-holder": T, "--template": "read", "--msgid": T, "--msgctxt": T, "--comment": T,
    "--more-than": T, "--less-than": T, "--only-file": "read", "--ignore-file": "read"}
#: options whose value is only ever attached (`-kNAME`, `-cTAG`, `-MPREFIX`)
_GETTEXT_ATTACHED = frozenset({"-k", "--keyword", "-c", "--add-comments", "-M", "--msgstr-prefix", "-m",
                               "--msgstr-suffix"})
WRITERS["msgfmt msgcat msgconv msguniq msgcomm msgattrib msggrep msgen msgunfmt msginit xgettext"] = \
    Spec(values=_GETTEXT_VALUES, optional=_GETTEXT_ATTACHED)
WRITERS["sassc"] = Spec(last="write", values={"-I": "readr", "--load-path": "readr", "-t": T, "--style": T,
                                              "-P": T, "--precision": T, "-m": T, "--sourcemap": T})
# audio converters: inputs, then the output file last
WRITERS["sox"] = Spec(last="write", values={
    **_t("-b", "--bits", "-c", "--channels", "-e", "--encoding", "-r", "--rate", "-t", "--type", "-v", "--volume",
         "-C", "--compression", "-L", "-B", "-x", "--buffer", "--input-buffer", "-V", "--comment", "--add-comment",
         "--norm", "--plot", "--replay-gain", "-D", "--no-dither", "--combine", "-m", "-M"),
    "--comment-file": "read", "--effects-file": "read"})
WRITERS["lame"] = Spec(last="write", values=_t("-b", "-B", "-V", "-q", "-m", "-s", "--resample", "--preset", "--tt",
                                               "--ta", "--tl", "--ty", "--tc", "--tn", "--tg", "--abr", "-F"))
WRITERS["look"] = Spec(first="text", values=_t("-t", "--terminate"))
WRITERS["msgmerge"] = Spec(values=_GETTEXT_VALUES, optional=_GETTEXT_ATTACHED,
                           flags={"-U": "writes-args", "--update": "writes-args"})
for _names, _spec in WRITERS.items():
    register(_names, spec_model(_spec))

#: file utilities published as npm packages (run by npx/bunx/pnpm dlx or from node_modules/.bin)
NODE_FILE_TOOLS: dict[str, Spec] = {
    "rimraf del del-cli trash trash-put trash-cli": Spec(args="deleter", values=_t("--glob", "--preserve-root")),
    "mkdirp make-dir": Spec(args="write", values=_t("-m", "--mode")),
    "cpy cpy-cli copyfiles cpx ncp": Spec(last="writer", values=_t("-u", "--up", "-e", "--exclude", "--cwd",
                                                                     "--rename")),
    "move-file mv-cli": Spec(last="writer"),
}
for _names, _spec in NODE_FILE_TOOLS.items():
    register(_names, spec_model(_spec))


def model_degit(inv: Invocation) -> None:
    """``degit|tiged [opts] SRC [DEST]``: downloads a repository's files (github.com, or the
    host a ``gitlab:``/``bitbucket:`` source names) into DEST (default: the working directory)."""
    parsed = parse_options(inv.argv, _t("--mode", "-m"))
    words = list(parsed.positionals)
    if not words:
        return
    source, index = words[0]
    host = {"gitlab": "gitlab.com", "bitbucket": "bitbucket.org", "git.sr.ht": "git.sr.ht"}.get(
        source.split(":", 1)[0] if ":" in source else "", "github.com")
    if "://" in source or source.startswith("git@"):
        from stockade.analyzer.models.net import contact_url

        contact_url(inv, source if "://" in source else "ssh://" + source.replace(":", "/", 1), index, 443)
    else:
        inv.network(host, 443, index)
    inv.write(words[1][0] if len(words) > 1 else ".", words[1][1] if len(words) > 1 else index, recursive=True)


def model_shx(inv: Invocation) -> None:
    """``shx CMD ARGS``: runs the shelljs version of a Unix command (``shx rm -rf dist``)."""
    parsed = parse_options(inv.argv, frozenset(), stop_at_first_positional=True)
    if parsed.positionals:
        inv.run(parsed.positionals[0][1])


register("degit tiged", model_degit)
register("shx", model_shx)
#: the npm packages above (by the name a runner is given: ``npx rimraf``, ``bunx degit``)
NODE_PACKAGES = frozenset({*" ".join(NODE_FILE_TOOLS).split(), "degit", "tiged", "shx"})


def model_pdftk(inv: Invocation) -> None:
    """``pdftk IN… OPERATION … output FILE``: reads the inputs (``A=in.pdf`` handles too), writes
    the file after ``output`` (``-``: standard output); ``burst`` writes pages in the cwd;
    ``attach_files``/``update_info`` read their files."""
    argv = inv.argv
    index = 1
    while index < len(argv):
        word = argv[index]
        if word == "output" and index + 1 < len(argv):
            if argv[index + 1] != "-":
                inv.write(argv[index + 1].replace("%", ""), index + 1)
            index += 2
            continue
        if word in ("attach_files", "update_info", "update_info_utf8", "stamp", "background", "multistamp",
                    "multibackground", "fill_form"):
            if index + 1 < len(argv) and argv[index + 1] != "-":
                inv.read(argv[index + 1], index + 1)
            index += 2
            continue
        if word == "burst":
            inv.write(".", index)
        elif "." in word or "/" in word:
            inv.read(word.partition("=")[2] if re.match(r"[A-Z]+=", word) else word, index)
        index += 1


register("pdftk", model_pdftk)


def model_msgexec(inv: Invocation) -> None:
    """``msgexec``/``msgfilter [-i IN] [-o OUT] COMMAND [ARGS]``: run COMMAND once per message
    (msgfilter: a filter of each translation); the options as the other gettext tools'."""
    parsed = parse_options(inv.argv, set(_GETTEXT_VALUES), stop_at_first_positional=True, optional=_GETTEXT_ATTACHED)
    for option, value, index in parsed.options:
        role = _GETTEXT_VALUES.get(option)
        if value is not None and role in ("read", "readr"):
            inv.read(value, index, recursive=role == "readr")
        elif value is not None and role in ("write", "writer"):
            inv.write(value, index, recursive=role == "writer")
    if parsed.positionals:
        inv.run(parsed.positionals[0][1])


register("msgexec msgfilter", model_msgexec)


#: plain editors: every file operand (``+LINE`` is a position) may be saved
_EDITOR_VALUES = {"nano": {"-T": T, "--tabsize": T, "-r": T, "--fill": T, "-Y": T, "--syntax": T, "-Q": T,
                           "--quotestr": T, "-o": "read", "--operatingdir": "read", "-C": "writer",
                           "--backupdir": "writer", "-s": "program", "--speller": "program", "-X": T,
                           "--wordchars": T, "-f": "read", "--rcfile": "read", "-W": T, "-g": T},
                  "micro": {"-config-dir": "writer", "-plugin": T, "-options": T, "-debug": T},
                  "kak": {"-e": "unknown", "-E": "unknown", "-c": T, "-s": T, "-ui": T, "-f": "unknown",
                          "-i": T, "-p": T},
                  "hx helix": {"-c": "read", "--config": "read", "--log": "write", "-w": T, "--working-dir": T},
                  "joe jmacs jpico jstar jed mcedit ne mg zile pico gedit kate mousepad pluma leafpad xed": {},
                  # (GUI editors given files: each may be saved)
                  "code codium code-insiders cursor subl zed gvim mvim atom": {"--user-data-dir": "writer",
                                                                              "--extensions-dir": "writer",
                                                                              "--profile": T, "-g": T,
                                                                              "--goto": T, "--locale": T,
                                                                              "--install-extension": "extension",
                                                                              "--log": T, "--category": T}}


def _editor_model(values: dict[str, str]):
    def model(inv: Invocation) -> None:
        argv = inv.argv
        for index, word in enumerate(argv[1:-1], start=1):  # (micro's single-dash long option)
            if word == "-plugin" and argv[index + 1] in ("install", "update"):
                inv.unknown(f"`{inv.name} -plugin {argv[index + 1]}` downloads and installs editor plugins, code "
                            "that cannot be seen into", index)
                return
        parsed = parse_options(inv.argv, set(values))
        for option, value, index in parsed.options:
            role = values.get(option)
            if value is None or role is None:
                continue
            if role == "program":
                from stockade.analyzer.models.programs import judge_program

                judge_program(inv.walker, value, inv.at(index), f"`{inv.name} {option}`", shell=False)
            elif role == "unknown":
                inv.unknown(f"`{inv.name} {option}` runs editor commands, which can run shell commands", index)
            elif role == "extension":
                inv.unknown(f"`{inv.name} {option} {show(value)}` installs an editor extension, code that cannot be "
                            "seen into", index)
            elif role == "read":
                inv.read(value, index)
            elif role in ("write", "writer"):
                inv.write(value, index, recursive=role == "writer")
        for word, index in parsed.positionals:
            if word.startswith("+"):
                continue
            inv.read(word, index)
            inv.write(word, index)

    return model


for _names, _values in _EDITOR_VALUES.items():
    register(_names, _editor_model(_values))

#: kakoune's expansions that run shell code: ``%sh{…}`` with any of its quoting delimiters
_KAK_SHELL_OPEN = LazyPattern(r"%sh([{(\[<]|[^\w\s{(\[<])")
_KAK_CLOSERS = {"{": "}", "(": ")", "[": "]", "<": ">"}
#: keys that pipe the selection through a shell command or insert its output (``|cmd<ret>``, ``!cmd<ret>``,
#: ``$cmd<ret>``, their ``<a-…>`` forms)
_KAK_SHELL_KEYS = LazyPattern(r"(?:<a-[|!]>|[|!$])((?:(?!<ret>).)+)<ret>", re.S)
_KAK_WRITE = LazyPattern(r"(?:^|[;\n]|%\{)\s*(?:w|write|write!|w!|wq|write-quit|wa|echo\s+-to-file)\s+"
                         r"(?:-\S+\s+)*([^\s;}]+)", re.M)


def _kak_shell(text: str) -> list[str]:
    """The shell code of each ``%sh{…}`` (nested delimiters balanced) in kakoune command text."""
    out: list[str] = []
    position = 0
    while True:
        match = _KAK_SHELL_OPEN.search(text, position)
        if match is None:
            return out
        opener = match.group(1)
        closer = _KAK_CLOSERS.get(opener, opener)
        depth, index = 1, match.end()
        while index < len(text):
            char = text[index]
            if char == closer and (opener == closer or depth == 1):
                break
            if opener != closer and char == opener:
                depth += 1
            elif opener != closer and char == closer:
                depth -= 1
            index += 1
        out.append(text[match.end():index])
        position = index + 1


def model_kak(inv: Invocation) -> None:
    """kakoune: a file operand may be saved; ``-e``/``-E`` commands, ``-f`` keys and what ``-p``
    sends to a session can run anything (unknown effects) — the shell code they visibly hold (``%sh{…}``, ``|cmd<ret>``
    keys) is walked and the files they ``write`` are written."""
    _KAK_EDITOR(inv)
    parsed = parse_options(inv.argv, set(_EDITOR_VALUES["kak"]))
    commands = list(parsed.options)
    if parsed.values_of("-p"):  # `kak -p SESSION`: the commands on stdin go to that session
        inv.unknown("`kak -p` sends the commands on its input to a session, where they run", None)
        if inv.stdin.text is not None:
            commands.append(("-e", inv.stdin.text, None))  # type: ignore[arg-type]
    for option, value, index in commands:
        if option not in ("-e", "-E", "-f") or not value or UNKNOWN in value:
            continue
        keys = [m.group(1).replace("<space>", " ").replace("<minus>", "-").replace("<lt>", "<").replace("<gt>", ">")
                for m in _KAK_SHELL_KEYS.finditer(value)]  # (key names typed as the characters they are)
        for code in _kak_shell(value) + keys:
            if code.strip():
                inv.script(code, index, what="the shell code of a kakoune command")
        if option != "-f":
            for found in _KAK_WRITE.finditer(value):
                inv.write(found.group(1), index)


_KAK_EDITOR = _editor_model(_EDITOR_VALUES["kak"])
register("kak", model_kak)


def model_mknod(inv: Invocation) -> None:
    """mknod [-m MODE] NAME TYPE [MAJOR MINOR]: writes NAME; a block or character device (``b``,
    ``c``, ``u``) needs CAP_MKNOD and gives raw access to that device."""
    parsed = parse_options(inv.argv, {"-m", "--mode", "-Z", "--context"})
    words = list(parsed.positionals)
    if not words:
        return
    inv.write(words[0][0], words[0][1])
    if len(words) > 1 and words[1][0] in ("b", "c", "u"):
        inv.privilege(f"`mknod {words[0][0]} {words[1][0]}` creates a device node (raw access to a device)",
                      words[1][1])


register("mknod", model_mknod)


# -- python -m MODULE: the standard library's command-line tools that write -----------------------

def model_py_venv(inv: Invocation) -> None:
    """python -m venv [options] DIR…: each directory is created (written below)."""
    parsed = parse_options(inv.argv, {"--prompt"})
    for word, index in parsed.positionals:
        inv.write(word, index, recursive=True)


def model_virtualenv(inv: Invocation) -> None:
    """virtualenv [options] DIR: the directory is created; ``--extra-search-dir`` is read;
    ``--activators``/``--seeder`` are names."""
    parsed = parse_options(inv.argv, {"-p", "--python", "--prompt", "--activators", "--seeder", "--app-data",
                                      "--extra-search-dir", "--discovery", "--creator", "--pip", "--setuptools",
                                      "--wheel", "--config-file"})
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("--extra-search-dir", "--config-file"):
            inv.read(value, index, recursive=option == "--extra-search-dir")
        elif option == "--app-data":
            inv.write(value, index, recursive=True)
    for word, index in parsed.positionals:
        inv.write(word, index, recursive=True)


def model_py_archive(inv: Invocation) -> None:
    """python -m zipfile|tarfile: ``-e ARCHIVE DIR`` extracts into DIR (written below); ``-c
    ARCHIVE FILES`` writes ARCHIVE and reads the files; ``-l``/``-t`` read."""
    argv = inv.argv
    words = [(w, i) for i, w in enumerate(argv[1:], start=1)]
    mode = next(((w, i) for w, i in words if w in ("-e", "--extract", "-c", "--create", "-l", "--list", "-t",
                                                      "--test")), None)
    if mode is None:
        return
    operands = [(w, i) for w, i in words if i > mode[1] and not w.startswith("-")]
    if mode[0] in ("-e", "--extract"):
        if operands:
            inv.read(operands[0][0], operands[0][1])
        target = operands[1] if len(operands) > 1 else (".", None)
        inv.write(target[0], target[1], recursive=True)
    elif mode[0] in ("-c", "--create"):
        if operands:
            inv.write(operands[0][0], operands[0][1])
        for word, index in operands[1:]:
            inv.read(word, index, recursive=True)
    else:
        for word, index in operands:
            inv.read(word, index)


def model_py_json_tool(inv: Invocation) -> None:
    """python -m json.tool [options] [INFILE [OUTFILE]]: reads INFILE, writes OUTFILE."""
    parsed = parse_options(inv.argv, {"--indent"})
    words = list(parsed.positionals)
    if words:
        inv.read(words[0][0], words[0][1])
    if len(words) > 1:
        inv.write(words[1][0], words[1][1])
    if not words:
        inv.output(None, "the output of `python -m json.tool`")


def model_py_http_server(inv: Invocation) -> None:
    """python -m http.server [-d DIR] [-b ADDR] [PORT]: serves every file below DIR (dot-files
    too) to whoever connects: a read of the whole tree of ``-d``/``--directory``, by default of
    the working directory (``cd ~/.ssh && python3 -m http.server``)."""
    parsed = parse_options(inv.argv, {"-d", "--directory", "-b", "--bind", "-p", "--protocol"})
    directories: list[tuple[str, int | None]] = [*parsed.values_of("-d", "--directory")] or [(".", None)]
    for value, index in directories:
        inv.read(value, index, recursive=True)
    _listens(inv, parsed, 8000)


def _listens(inv: Invocation, parsed: Parsed, port: int) -> None:
    """A server of ``python -m``: it listens on ``-b``/``--bind`` (default every interface) and
    the port operand (default ``port``): a destination others reach, judged by the network rules."""
    binds = parsed.values_of("-b", "--bind")
    address, where = binds[-1] if binds else ("0.0.0.0", None)
    numbers = [(w, i) for w, i in parsed.positionals if w.isdigit()]
    if numbers:
        port, where = int(numbers[-1][0]), numbers[-1][1]
    inv.network(address if UNKNOWN not in address else UNKNOWN, port, where)


def model_py_gzip(inv: Invocation) -> None:
    """python -m gzip [-d] [--fast|--best] [FILE]: compresses FILE into ``FILE.gz`` (``-d``:
    decompresses ``NAME.gz`` into ``NAME``), keeping the input; without FILE, stdin to stdout."""
    parsed = parse_options(inv.argv, set())
    decompress = parsed.has("-d", "--decompress")
    for word, index in parsed.positionals:
        inv.read(word, index)
        if decompress:
            inv.write(word[:-3] if word.endswith(".gz") else UNKNOWN, index)
        else:
            inv.write(word + ".gz", index)
    if not parsed.positionals:
        inv.output(None, "the output of `python -m gzip`")


def model_py_zipapp(inv: Invocation) -> None:
    """python -m zipapp SOURCE [-o OUTPUT] [-p INTERPRETER] [-m MAIN]: reads SOURCE, writes
    OUTPUT (default ``SOURCE.pyz``)."""
    parsed = parse_options(inv.argv, {"-o", "--output", "-p", "--python", "-m", "--main"})
    outputs = parsed.values_of("-o", "--output")
    for word, index in parsed.positionals[:1]:
        inv.read(word, index, recursive=True)
        if not outputs:
            inv.write(word.rstrip("/") + ".pyz", index)
    for value, index in outputs:
        inv.write(value, index)


def model_py_compile(inv: Invocation) -> None:
    """python -m py_compile FILES / compileall [-d D] [-o] DIRS: writes the byte code next to
    each source (``__pycache__``, below each directory for compileall)."""
    parsed = parse_options(inv.argv, {"-d", "-s", "-p", "-x", "-i", "-o", "-j", "-r", "--invalidation-mode"})
    for word, index in parsed.positionals:
        inv.read(word, index, recursive=True)
        if inv.name == "py:py_compile" and word != "-":  # (FILE → DIR/__pycache__/FILE.TAG.pyc)
            inv.write((word.rpartition("/")[0] or ".") + "/__pycache__", index, recursive=True)
        else:
            inv.write(word, index, recursive=True)


def model_py_pydoc(inv: Invocation) -> None:
    """python -m pydoc: imports the files and modules it documents (see
    :func:`~stockade.analyzer.models.shells.module_operands`); ``-w NAME`` writes ``NAME.html`` in the working directory; ``-p PORT``
    (``-b``) serves documentation on ``-n HOST`` (default localhost)."""
    parsed = parse_options(inv.argv, {"-p", "-n"})
    words = parsed.positionals
    if not parsed.has("-k", "-p", "-b"):  # (it imports what it documents: a file, a module)
        from stockade.analyzer.models.shells import module_operands

        module_operands(inv, "pydoc", 1)
    if parsed.has("-w"):
        for word, index in words:
            inv.write(word.rpartition("/")[2].removesuffix(".py") + ".html", index)
    ports = parsed.values_of("-p")
    if ports or parsed.has("-b"):
        hosts = parsed.values_of("-n")
        port = ports[-1][0] if ports else "0"
        inv.network(hosts[-1][0] if hosts else "localhost", int(port) if port.isdigit() else None,
                    ports[-1][1] if ports else None)


def model_py_profile(inv: Invocation) -> None:
    """python -m cProfile|profile|trace [-o FILE] SCRIPT|-m MODULE|-c CODE: ``-o`` (trace's
    ``--file``, ``-C``) is written; the script runs (a file run), ``-c`` code cannot be seen into."""
    parsed = parse_options(inv.argv, {"-o", "--outfile", "-s", "--sort", "-m", "--module", "-c", "--file",
                                      "-f", "-C", "--coverdir", "--ignore-module", "--ignore-dir"},
                           stop_at_first_positional=True)
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-o", "--outfile", "--file", "-f"):
            inv.write(value, index)
        elif option in ("-C", "--coverdir"):
            inv.write(value, index, recursive=True)
        elif option == "-c":
            inv.unknown(f"inline `python` code (`{show(value)[:60]}`) cannot be seen into", index)
    if parsed.positionals:
        from stockade.analyzer.models.fresh import run_file

        script, at = parsed.positionals[0]
        if script in ("-", "/dev/stdin") or script.startswith("/dev/fd/"):
            inv.unknown(f"the profiled script is code from {inv.stdin.what}, which cannot be seen into", at)
        else:
            run_file(inv, script, at)


def model_py_timeit(inv: Invocation) -> None:
    """python -m timeit [-s SETUP] STATEMENT…: the statements are Python code, judged as
    inline code is (:mod:`.inline`: code that only computes is harmless, other code unknown)."""
    parsed = parse_options(inv.argv, {"-s", "--setup", "-n", "--number", "-r", "--repeat", "-u", "--unit"})
    from stockade.analyzer.models.inline import harmless_inline
    from stockade.analyzer.models.shells import named_paths

    codes = [*parsed.values_of("-s", "--setup"), *parsed.positionals]
    # (the setup and the statements run in one namespace: `-s 'import os' 'os.system(…)'` — checked as one)
    whole = "\n".join(value for value, _ in codes)
    opened = harmless_inline("python3", whole) if codes and UNKNOWN not in whole else None
    if opened is not None:
        for path in opened:
            inv.read(path, codes[0][1])
        return
    for value, index in codes:
        inv.unknown(f"`python -m timeit` runs the Python code `{show(value)[:60]}`, which cannot be seen into", index)
        named_paths(inv, value, index)


def model_py_ensurepip(inv: Invocation) -> None:
    """python -m ensurepip: installs pip into ``--root DIR``, the user's site (``--user``:
    ``~/.local``) or the interpreter's own site-packages (which interpreter: not known here)."""
    parsed = parse_options(inv.argv, {"--root"})
    roots = parsed.values_of("--root")
    for value, index in roots:
        inv.write(value, index, recursive=True)
    if parsed.has("--user"):
        inv.write("~/.local", None, recursive=True)
    elif not roots:
        inv.unknown("`python -m ensurepip` installs pip into the interpreter's site-packages", None)


def model_py_browser(inv: Invocation) -> None:
    """python -m webbrowser URL (``antigravity``): the program that handles the URL runs (a
    browser, or whatever the desktop's handler is); a URL's host is contacted."""
    from stockade.analyzer.models.net import contact_url

    parsed = parse_options(inv.argv, set())
    inv.unknown(f"`python -m {inv.name[3:]}` runs whatever program handles the URL", None)
    for word, index in parsed.positionals:
        if "://" in word:
            contact_url(inv, word, index, 443)


register("py:http.server", model_py_http_server)
register("py:venv", model_py_venv)
register("virtualenv", model_virtualenv)
register("py:zipfile py:tarfile", model_py_archive)
register("py:json.tool", model_py_json_tool)
register("py:gzip", model_py_gzip)
register("py:zipapp", model_py_zipapp)
register("py:py_compile py:compileall", model_py_compile)
register("py:pydoc", model_py_pydoc)
register("py:cProfile py:profile py:trace", model_py_profile)
register("py:timeit", model_py_timeit)
register("py:webbrowser py:antigravity", model_py_browser)
register("py:ensurepip", model_py_ensurepip)
_MODULE_TOOLS.update({"venv": "py:venv", "virtualenv": "virtualenv", "zipfile": "py:zipfile",
                      "tarfile": "py:tarfile", "json.tool": "py:json.tool", "http.server": "py:http.server",
                      **{name: "py:" + name for name in ("gzip", "zipapp", "py_compile", "compileall", "pydoc",
                                                         "cProfile", "profile", "trace", "timeit", "webbrowser",
                                                         "antigravity", "ensurepip", "debugpy", "ftplib",
                                                         "telnetlib")}})


# -- bazel: target labels, not paths --------------------------------------------------------

_BAZEL_VALUES = {"--config", "--output_base", "--output_user_root", "--bazelrc", "--jobs", "-j", "-k",
                 "--compilation_mode", "-c", "--test_output", "--test_filter", "--define", "--copt", "--platforms",
                 "--target_pattern_file"}


def model_bazel(inv: Invocation) -> None:
    """bazel/bazelisk COMMAND [options] TARGETS [-- ARGS]: targets (``//pkg:t``, ``//...``,
    ``@repo//x``, ``:t``) are labels; ``--bazelrc`` and ``--target_pattern_file`` are read,
    ``--output_base``/``--output_user_root`` written; arguments after ``--`` go to the program
    ``run`` starts (the project's own, judged as an unmodelled program's arguments)."""
    argv = inv.argv
    stop = argv.index("--") if "--" in argv else len(argv)
    parsed = parse_options(argv[:stop], _BAZEL_VALUES)
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("--bazelrc", "--target_pattern_file"):
            inv.read(value, index)
        elif option in ("--output_base", "--output_user_root"):
            inv.write(value, index, recursive=True)
    if stop < len(argv):
        visible_operands(inv, stop + 1)


register("bazel bazelisk", model_bazel)


# -- binutils that rewrite object files ------------------------------------------------------

#: objcopy/strip options that take a value, and what the value is (``NAME=FILE`` values name
#: the file after the ``=``)
_OBJCOPY_VALUES = {**_t("-I", "--input-target", "-O", "--output-target", "-B", "--binary-architecture", "-F",
                        "--target", "-j", "--only-section", "-R", "--remove-section", "-K", "--keep-symbol", "-N",
                        "--strip-symbol", "-L", "--localize-symbol", "-G", "--keep-global-symbol", "-W",
                        "--weaken-symbol", "--redefine-sym", "--set-section-flags", "--rename-section",
                        "--prefix-symbols", "--prefix-sections", "--prefix-alloc-sections", "--change-addresses",
                        "--adjust-vma", "--set-start", "--pad-to", "--gap-fill", "-i", "--interleave",
                        "-b", "--byte", "--set-section-alignment", "--remove-relocations", "--add-symbol",
                        "--heap", "--stack", "--subsystem", "--image-base", "--file-alignment",
                        "--section-alignment", "--compress-debug-sections", "--elf-stt-common"),
                    "-o": "write", "--add-section": "=read", "--update-section": "=read", "--dump-section": "=write",
                    "--add-gnu-debuglink": "read", "--strip-symbols": "read", "--keep-symbols": "read",
                    "--localize-symbols": "read", "--globalize-symbols": "read", "--weaken-symbols": "read",
                    "--keep-global-symbols": "read", "--redefine-syms": "read"}


def model_objcopy(inv: Invocation) -> None:
    """``objcopy [OPTIONS] IN [OUT]``: IN is read and OUT written — without OUT, IN itself is
    rewritten; ``strip [-o OUT] FILES…`` rewrites every file (or writes OUT).  Option values
    naming files are read or written (``--dump-section NAME=FILE`` writes FILE,
    ``--add-section NAME=FILE`` reads it)."""
    parsed = parse_options(inv.argv, _OBJCOPY_VALUES, optional=frozenset({"--compress-debug-sections"}))
    output = False
    for option, value, index in parsed.options:
        role = _OBJCOPY_VALUES.get(option)
        if value is None or role is None or role == T:
            continue
        if role.startswith("="):
            role, value = role[1:], value.partition("=")[2]
            if not value:
                continue
        if option == "-o":
            output = True
        (inv.write if role == "write" else inv.read)(value, index)
    files = list(parsed.positionals)
    if inv.name.endswith("objcopy") and len(files) >= 2:
        word, index = files.pop()
        inv.write(word, index)
        output = True
    for word, index in files:
        (inv.read if output else inv.write)(word, index)


register("objcopy strip eu-strip llvm-objcopy llvm-strip", model_objcopy)
if "javac" not in MODELS:  # pragma: no cover
    raise ImportError("models.writers replaces models registered before it")


# -- perl one-liners that are only substitutions ------------------------------------------------

_PERL_OWN = MODELS.get("perl")
_PERL_TAKES_REST = frozenset("eEMmIxCdDl0Fi")
#: text that makes a substitution run code (interpolated blocks, code assertions, backticks)
_PERL_CODE_MARKS = ("@{", "${", "`", "(?{", "(??{", "\\N{")
_PERL_PRINT = LazyPattern(r"print(?:\s+\$(?:_|[0-9&]))?\s+(?:if|unless)\s+(?:!\s*)?/(?:[^/\\]|\\.)*/[imsx]*")
_PERL_ITEM = r"(?:\$(?:_|[0-9&.])|\$F\[-?\d+\]|\"(?:[^\"\\$@]|\\.)*\"|'[^']*')"
#: `print`, `print $F[0], "\t", $_` (autosplit fields, captures, literals), optionally `if /RE/`
_PERL_PRINT_LIST = LazyPattern(rf"print(?:\s+{_PERL_ITEM}(?:\s*[,.]\s*{_PERL_ITEM})*)?"
                               r"(?:\s+(?:if|unless)\s+(?:!\s*)?/(?:[^/\\]|\\.)*/[imsx]*)?")


def _perl_statement_safe(statement: str) -> bool:
    """Whether one statement is ``s/…/…/FLAGS`` (no ``e``), ``tr/…/…/``, ``y/…/…/`` or ``print if /…/``."""
    if _PERL_PRINT.fullmatch(statement) or _PERL_PRINT_LIST.fullmatch(statement):
        return True
    for op, flags in (("s", "msixpodualngcr"), ("tr", "cdsr"), ("y", "cdsr")):
        if not statement.startswith(op) or len(statement) <= len(op):
            continue
        delim = statement[len(op)]
        if delim.isalnum() or delim.isspace() or delim in "({[<#" or delim == "_":
            return False
        parts: list[str] = []
        current = ""
        index = len(op) + 1
        while index < len(statement):
            char = statement[index]
            if char == "\\" and index + 1 < len(statement):
                current += statement[index:index + 2]
                index += 2
                continue
            if char == delim and len(parts) < 2:
                parts.append(current)
                current = ""
            else:
                current += char
            index += 1
        return len(parts) == 2 and all(c in flags for c in current)
    return False


def perl_code_is_substitution(code: str) -> bool:
    """Whether perl code is only substitutions/transliterations (no code runs from it)."""
    if any(mark in code for mark in _PERL_CODE_MARKS):
        return False
    statements = [part.strip() for part in code.strip().split(";")]
    statements = [part for part in statements if part]
    return bool(statements) and all(_perl_statement_safe(part) for part in statements)


def _perl_codes(argv: list[str]) -> tuple[list[str], int, bool] | None:
    """The ``-e`` codes of a perl command line, the index of its first operand and whether it
    edits in place (``-i``) (None: it loads modules or runs a script file)."""
    codes: list[str] = []
    in_place = False
    index = 1
    while index < len(argv) and argv[index].startswith("-") and argv[index] not in ("-", "--"):
        word = argv[index]
        position = 1
        while position < len(word):
            char = word[position]
            position += 1
            if char in "l0":  # -l[OCTAL], -0[DIGITS]: only digits belong to it
                while position < len(word) and (word[position].isdigit() or (char == "0" and word[position] in "xX")):
                    position += 1
                continue
            if char not in _PERL_TAKES_REST:
                continue
            in_place = in_place or char == "i"
            rest = word[position:]
            if char in "eE":
                if not rest and index + 1 < len(argv):
                    index += 1
                    rest = argv[index]
                codes.append(rest)
            elif char in "MmxdD":
                return None  # modules, debuggers and embedded scripts load code
            elif char == "I" and not rest:
                index += 1
            break
        index += 1
    if argv[index:index + 1] == ["--"]:
        index += 1
    return (codes, index, in_place) if codes else None


def _perl_loops(argv: list[str], stop: int) -> bool:
    """Whether the switches before ``stop`` hold ``-n`` or ``-p`` (a loop over the operands)."""
    for word in argv[1:stop]:
        if word[:1] != "-" or word[1:2] == "-":
            continue
        for char in word[1:]:
            if char in "np":
                return True
            if char in _PERL_TAKES_REST and char not in "l0":  # (-l/-0 take only digits)
                break
    return False


def model_perl(inv: Invocation) -> None:
    """perl: its model; a one-liner whose code is only substitutions (``perl -pi -e
    's/\\bfoo\\b/bar/g' FILES``) runs no code of its own: only the files it rewrites count."""
    from stockade.analyzer.effects import Unknown

    effects = inv.walker.effects
    before = len(effects)
    if _PERL_OWN is not None:
        _PERL_OWN(inv)
    found = _perl_codes(inv.argv)
    if found is not None and not all(perl_code_is_substitution(code) for code in found[0]):
        if _perl_loops(inv.argv, found[1]):  # -n/-p: `<>` opens every operand, whatever the code does
            for index in range(found[1], len(inv.argv)):
                inv.read(inv.argv[index], index)
        return
    if found is None:
        return
    effects[before:] = [effect for effect in effects[before:]
                        if not (effect.__class__ is Unknown and effect.why.startswith("inline `perl` code"))]
    for index in range(found[1], len(inv.argv)):  # the files it reads (and, with -i, rewrites)
        inv.read(inv.argv[index], index)
        if found[2]:
            inv.write(inv.argv[index], index)
    if found[1] >= len(inv.argv):
        inv.output(None, "the output of `perl`")


register("perl", model_perl)
