"""Tools that run code given in their arguments or files: debuggers, database shells,
editors, pagers, build tools and script runners.

Each model says which arguments are code in the tool's own language and what that code can
do: a shell escape (``gdb -ex 'shell …'``, sqlite3 ``.shell``, ed ``!``) is walked as shell
code; commands that write files (``.output FILE``, ``w FILE``) are writes; code that can do
anything and cannot be followed (elisp, gdb ``python``, a make recipe given by ``--eval``) is
an unknown effect; files of code (``gdb -x``, ``make -f``, ``cmake -P``, ``emacs -l``) are
run like a script file (:func:`~stockade.analyzer.models.fresh.run_file`).
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, Rename, Unknown, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, Parsed, apply_role, parse_options, register
from stockade.analyzer.models.envvars import CFLAG_VARS, judge_cflags
from stockade.analyzer.models.fresh import fresh_project, run_file
from stockade.analyzer.models.net import contact_url
from stockade.analyzer.models.programs import judge_program
from stockade.analyzer.models.shells import _MODULE_TOOLS, named_paths
from stockade.analyzer.words import process_text

T = "text"

# -- gdb ------------------------------------------------------------------------------------------

#: gdb commands that only inspect or run the debugged program (given on the command line)
_GDB_SAFE = re.compile(r"(bt|backtrace|where|info|i|run|r|start|starti|continue|c|cont|quit|q|thread|frame|f|"
                       r"list|l|disassemble|disas|x|next|n|step|s|stepi|si|nexti|ni|finish|fin|kill|k|break|b|"
                       r"tbreak|watch|delete|d|up|down|display|set\s+(pagination|confirm|print|width|height|"
                       r"logging\s+(on|off|enabled|redirect))|p|print|ptype|whatis|echo|printf|show|help|"
                       r"handle|catch)(\s|$)")
_GDB_VALUES = {"--ex": "cmd", "--eval-command": "cmd", "--iex": "cmd", "--init-eval-command": "cmd", "-x": "file",
               "--x": "file", "--command": "file", "--ix": "file", "--init-command": "file", "-p": T, "--pid": T,
               "--cd": T, "-d": T, "--directory": T, "-s": "read", "--symbols": "read", "-e": "read",
               "--exec": "read", "--se": "read", "-c": "read", "--core": "read", "--tty": T, "-D": T,
               "--data-directory": T, "-b": T, "-l": T}


def single_dash_long(argv: list[str]) -> list[str]:
    """argv with gdb/sqlite3-style long options (``-ex``, ``-cmd``) spelt with two dashes."""
    return [("-" + word if word[:1] == "-" and word[1:2] != "-" and len(word.partition("=")[0]) > 2 else word)
            for word in argv]


def gdb_command(inv: Invocation, text: str, index: int) -> None:
    """One gdb command: ``shell``/``!``/``pipe`` run shell code (walked); ``python``/``guile``,
    ``source``, ``call``/``print`` of a function, ``dump``/``shell`` … are unknown; inspecting
    and running the program are visible."""
    text = text.strip()
    match = re.match(r"(shell|!)\s*(.*)", text, re.S)
    if match:
        inv.script(match.group(2), index, what="the gdb `shell` command")
        return
    match = re.match(r"(pipe|\|)\s*[^|]*\|\s*(.*)", text, re.S)
    if match:
        inv.script(match.group(2), index, what="the gdb `pipe` command")
        return
    match = re.match(r"set\s+logging\s+file\s+(\S+)", text)
    if match:
        inv.write(match.group(1), index)
        return
    if _GDB_SAFE.match(text) and "(" not in text:
        return
    inv.unknown(f"the gdb command `{show(text)[:60]}` can run code that cannot be seen into", index)
    named_paths(inv, text, index)  # (`python import os; os.system("…")`: what it visibly hands a shell)


def model_gdb(inv: Invocation) -> None:
    """gdb: ``-ex CMD`` runs a gdb command (:func:`gdb_command`); ``-x FILE`` runs a command
    file; ``--args PROG ARGS`` and ``PROG`` name the program debugged (read); with ``--args``
    the program is judged as the command ``PROG ARGS`` it runs as."""
    argv = single_dash_long(inv.argv)
    stop = len(argv)
    if "--args" in argv:
        stop = argv.index("--args")
    parsed = parse_options(argv[:stop], _GDB_VALUES)
    for option, value, index in parsed.options:
        role = _GDB_VALUES.get(option)
        if role is None or value is None:
            continue
        if role == "cmd":
            gdb_command(inv, value, index)
        elif role == "file":
            run_file(inv, value, index)
        else:
            apply_role(inv, role, value, index)
    program = [(w, i) for w, i in parsed.positionals][:1]
    if stop < len(argv) - 1:
        program = [(argv[stop + 1], stop + 1)]
    for word, index in program:
        inv.read(word, index)
    if stop < len(argv) - 1:  # (`gdb -batch -ex run --args rm -rf ~`: the program runs as that command)
        inv.run(stop + 1, argv=argv[stop + 1:], spans=inv.spans[stop + 1:])


# -- sqlite3 --------------------------------------------------------------------------------------

_SQLITE_VALUES = {"--cmd": "sql", "--init": "file", "--separator": T, "--newline": T, "--nullvalue": T,
                  "--vfs": T, "--mmap": T, "--pagecache": T, "--lookaside": T, "--heap": T, "--maxsize": T,
                  "--escape": T}
_SQL_ATTACH = re.compile(r"\b(?:attach(?:\s+database)?|vacuum\s+into)\s+'([^']*)'", re.I)




def _sqlite_arguments(text: str) -> list[str]:
    """A dot-command's arguments as sqlite3's shell splits them: at blanks, a word in quotes
    is one argument (its quotes removed; backslash escapes resolved in double quotes)."""
    arguments: list[str] = []
    position = 0
    while position < len(text):
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        quote = text[position]
        if quote in "'\"":
            end = position + 1
            while end < len(text) and text[end] != quote:
                end += 2 if quote == '"' and text[end] == "\\" else 1
            word = text[position + 1:end]
            if quote == '"':
                word = re.sub(r"\\(.)", r"\1", word)
            arguments.append(word)
            position = end + 1
        else:
            end = position
            while end < len(text) and not text[end].isspace():
                end += 1
            arguments.append(text[position:end])
            position = end
    return arguments


def _sqlite_command(text: str) -> str:
    """The command line ``.shell``/``.system`` gives ``system()``: its arguments joined by
    blanks, each one holding a blank put in double quotes (as sqlite3's shell does)."""
    return " ".join(f'"{word}"' if " " in word else word for word in _sqlite_arguments(text))


def sqlite_file(inv: Invocation, word: str, index: int | None, depth: int = 0) -> None:
    """``.read FILE``, ``-init FILE``: SQL and dot-commands from a file — the content this
    command wrote there when known (judged as such), else :func:`run_file`."""
    from stockade.analyzer.models.fresh import foreign_input, known_content

    if word in ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):  # (`-init /dev/stdin <<< TEXT`)
        text = inv.stdin.text if inv.stdin.text is not None and UNKNOWN not in inv.stdin.text else None
        if text is None:
            inv.unknown(f"sqlite3 runs SQL and dot-commands from {inv.stdin.what}, which cannot be seen into", index)
        else:
            sqlite_text(inv, text, index, depth + 1)
        return
    text = known_content(inv.walker, inv.path(word)) if UNKNOWN not in word else None
    if text is None or depth > 4:
        run_file(inv, word, index)
        if foreign_input(inv.walker, inv.path(word)) and inv.walker.effects[-1].__class__ is not Unknown:
            inv.unknown(f"sqlite3 runs the SQL and dot-commands of `{show(word)}`, which lies where the agent can "
                        "write: they cannot be seen into", index)
        return
    inv.read(word, index)
    sqlite_text(inv, text, index, depth + 1)


#: the sqlite3 shell's file functions called with a literal name (group 3)
_SQL_FILE_CALL = re.compile(r"""\b(readfile|writefile|fsdir)\s*\(\s*(['"])([^'"\n]+)\2""", re.I)


def sqlite_text(inv: Invocation, text: str, index: int | None, depth: int = 0) -> None:
    """SQL and dot-commands: ``.shell``/``.system`` run shell code; ``.output``/``.once``/
    ``.save``/``.backup`` write (``|cmd``: shell code); ``.read``/``.import`` read (``.read |cmd``
    runs it); ``.load``, ``load_extension()`` and ``writefile()`` are unknown; ``ATTACH`` and
    ``VACUUM INTO`` write the database file they name."""
    if UNKNOWN in text:
        inv.unknown(f"sqlite3 runs SQL and dot-commands that are not known before it runs (`{show(text)[:60]}`)",
                    index)
        return
    for line in text.split("\n"):
        line = line.strip()
        if not line.startswith("."):
            for match in _SQL_ATTACH.finditer(line):
                if match.group(1) not in ("", ":memory:"):
                    inv.write(match.group(1), index)
            for match in _SQL_FILE_CALL.finditer(line):  # (the shell's readfile('F'), writefile('F', …), fsdir('D'))
                kind, path = match.group(1).lower(), match.group(3)
                path = "./" + path if path[:1] == "~" else path  # (SQL expands no tilde)
                if kind == "writefile":
                    inv.write(path, index)
                else:
                    inv.read(path, index, recursive=kind == "fsdir")
            if re.search(r"\b(load_extension|writefile|edit|fts3_tokenizer)\s*\(", line, re.I):
                inv.unknown(f"the SQL `{show(line)[:60]}` loads code or writes files", index)
            continue
        command, _, rest = line[1:].partition(" ")
        rest = rest.strip()
        argument = rest.strip("'\"")
        # (the shell takes a dot-command's unique prefix: `.she`/`.sys` are `.shell`/`.system`)
        if len(command) >= 2 and ("shell".startswith(command) or "system".startswith(command)):
            command = "shell"
        if command in ("shell", "system"):
            inv.script(_sqlite_command(rest), index, what=f"the sqlite3 `.{command}` command")
        elif command in ("output", "once", "save", "backup", "excel"):
            words = [w for w in argument.split() if not w.startswith("-")]
            target = words[-1] if words else ""
            if target.startswith("|"):
                inv.script(argument.partition("|")[2], index, what=f"the sqlite3 `.{command} |` command")
            elif target:
                inv.write(target, index)
        elif command in ("read", "import", "open", "restore"):
            words = [w for w in argument.split() if not w.startswith("-")]
            if argument.startswith("|"):
                inv.script(argument[1:], index, what=f"the sqlite3 `.{command} |` command")
            elif words:
                if command == "read":
                    sqlite_file(inv, words[0], index, depth)
                elif command in ("open", "restore"):
                    inv.write(words[-1], index)
                else:
                    inv.read(words[0], index)
        elif command in ("load", "cd", "log", "trace"):
            inv.unknown(f"the sqlite3 `.{command}` command loads code or changes what later commands do", index)


def model_sqlite(inv: Invocation) -> None:
    """``sqlite3 [OPTIONS] [DB [SQL…]]``: the database file is written (unless ``-readonly``);
    every SQL argument and ``-cmd`` is judged by :func:`sqlite_text`."""
    parsed = parse_options(single_dash_long(inv.argv), _SQLITE_VALUES)
    for option, value, index in parsed.options:
        role = _SQLITE_VALUES.get(option)
        if value is None or role is None:
            continue
        if role == "sql":
            sqlite_text(inv, value, index)
        elif role == "file":
            sqlite_file(inv, value, index)
    words = list(parsed.positionals)
    if not words:  # (an in-memory database: the SQL and dot-commands come from standard input)
        if parsed.has("--safe"):
            return
        if inv.stdin.text is not None:
            sqlite_text(inv, inv.stdin.text, 0)
        elif inv.stdin.what != "the terminal":
            inv.unknown(f"sqlite3 runs SQL and dot-commands from {inv.stdin.what}, which cannot be seen into", 0)
        return
    database, index = words[0]
    if database not in (":memory:", ""):
        if parsed.has("--readonly", "--safe"):
            inv.read(database, index)
        else:
            inv.write(database, index)
    if parsed.has("--safe"):
        return
    for text, index in words[1:]:
        sqlite_text(inv, text, index)
    if len(words) == 1 and inv.stdin.text is not None:
        sqlite_text(inv, inv.stdin.text, index)
    elif len(words) == 1 and inv.stdin.what != "the terminal":
        inv.unknown(f"sqlite3 runs SQL and dot-commands from {inv.stdin.what}, which cannot be seen into", index)


# -- editors: emacs, ed ---------------------------------------------------------------------------


#: lisp calls whose first argument is a shell command line (a string literal)
_LISP_SHELL = re.compile(r'\((?:(?:async-)?shell-command(?:-to-string)?|call-process-shell-command|'
                         r'start-process-shell-command\s+"[^"]*"\s+(?:nil|"[^"]*"))\s+"((?:[^"\\]|\\.)*)"')


#: lisp calls that delete, or write, the file their first string argument names (``copy-file``,
#: ``rename-file``, ``make-symbolic-link``: the second, the destination; ``rename-file`` also
#: deletes the first); group 1 the function, 2 the first name, 3 the second
_LISP_FILES = re.compile(r'\((delete-file|delete-directory|with-temp-file|copy-file|copy-directory|rename-file|'
                         r'make-symbolic-link|set-file-modes)\s+"((?:[^"\\]|\\.)*)"(?:\s+"((?:[^"\\]|\\.)*)")?')
#: ``(write-region START END "FILE" …)``, ``(append-to-file START END "FILE")``: the call's text
_LISP_WRITE_REGION = re.compile(r'\((?:write-region|append-to-file)\s')


def _lisp_files(inv: Invocation, code: str, index: int) -> None:
    """The files lisp deletes or writes by a literal name: ``(delete-file "~/.bashrc")``,
    ``(delete-directory "D" t)`` (recursive), ``(with-temp-file "F" …)``, ``(copy-file "A" "B")``
    (writes B), ``(rename-file "A" "B")`` (deletes A, writes B), ``(write-region … "F")``
    (every absolute or home literal in the call is taken for the file written: the strict side)."""
    for match in _LISP_FILES.finditer(code):
        function, first, second = match.group(1), match.group(2), match.group(3)
        if function in ("delete-file", "delete-directory"):
            inv.delete(first, index, recursive=function == "delete-directory")
        elif function in ("with-temp-file", "set-file-modes"):
            inv.write(first, index)
        elif second:
            if function == "rename-file":
                inv.delete(first, index)
            inv.write(second, index, recursive=function == "copy-directory")
    for match in _LISP_WRITE_REGION.finditer(code):
        depth, end = 1, match.end()
        while end < len(code) and depth:  # (the call's text, to its closing parenthesis)
            depth += {"(": 1, ")": -1}.get(code[end], 0)
            end += 1
        for literal in re.findall(r'"([~/][^"\\]*)"', code[match.end():end]):
            inv.write(literal, index)


def _lisp_names(inv: Invocation, code: str, index: int) -> None:
    """What lisp given to emacs names: the literal command line of ``(shell-command "CMD")``,
    ``(shell-command-to-string "CMD")``, ``(call-process-shell-command "CMD")`` … is walked as
    the shell code it is (the lisp stays unknown code as well); literal paths are judged as
    read (see :func:`.shells.named_paths`)."""
    from stockade.analyzer.models.shells import named_paths

    for match in _LISP_SHELL.finditer(code):
        text = re.sub(r"\\(.)", r"\1", match.group(1))
        if text:
            inv.script(text, index, what="the shell command of an emacs lisp call")
    if UNKNOWN not in code:
        _lisp_files(inv, code, index)
        named_paths(inv, code, index)


def model_emacs(inv: Invocation) -> None:
    """emacs: ``--eval``/``-f`` run lisp (unknown); ``-l``/``--load``/``--script`` run a lisp
    file; files given are edited (written)."""
    argv = inv.argv
    index = 1
    while index < len(argv):
        word = argv[index]
        name, eq, attached = word.partition("=")
        value = attached if eq else (argv[index + 1] if index + 1 < len(argv) else "")
        step = 1 if eq else 2
        if name in ("--eval", "-eval", "--execute", "-execute", "-f", "--funcall", "-funcall") or (
                inv.name == "emacsclient" and name == "-e"):
            inv.unknown(f"`emacs {name}` runs lisp code (`{show(value)[:60]}`), which cannot be seen into", index)
            _lisp_names(inv, value, index + (0 if eq else 1))
            index += step
        elif name in ("-l", "--load", "-load", "--script", "-script", "-x"):
            run_file(inv, value, index + (0 if eq else 1))
            index += step
        elif name in ("-L", "--directory", "-d", "--display", "--init-directory", "-u", "--user", "--chdir",
                      "--fg-color", "--bg-color", "--font", "-fn", "--geometry", "--title", "-T", "--name",
                      "--dump-file", "--terminal", "-t"):
            index += step
        elif word.startswith(("+", "-")):
            index += 1
        else:
            inv.write(word, index)
            index += 1


def ed_script(inv: Invocation, text: str, index: int | None) -> None:
    """ed commands: ``!cmd`` and ``r !cmd``/``w !cmd`` run shell code; ``w FILE``/``W FILE``
    write FILE; ``r FILE``/``e FILE`` read."""
    for line in text.split("\n"):
        line = line.strip()
        match = re.match(r"^[0-9,.$;'a-z+\-/]*?(w|W|wq|r|e|E|f)\s*(!?)\s*(.*)$", line)
        if line.startswith("!"):
            inv.script(line[1:], index, what="the ed `!` command")
        elif match and match.group(2):
            inv.script(match.group(3), index, what=f"the ed `{match.group(1)} !` command")
        elif match and match.group(3) and match.group(1) in ("w", "W", "wq"):
            inv.write(match.group(3), index)
        elif match and match.group(3) and match.group(1) in ("r", "e", "E"):
            inv.read(match.group(3), index)


def model_ed(inv: Invocation) -> None:
    """``ed [-s] [-p PROMPT] FILE``: edits FILE (written) with commands read from stdin
    (:func:`ed_script`; not known: unknown)."""
    parsed = parse_options(inv.argv, {"-p", "--prompt"})
    for word, index in parsed.positionals:
        if word.startswith("!"):
            inv.script(word[1:], index, what="the file `ed !` reads from a command")
        else:
            inv.write(word, index)
    text = inv.stdin.text
    if text is None:
        if inv.stdin.what != "the terminal":
            inv.unknown(f"`{inv.name}` runs editor commands from {inv.stdin.what}, which cannot be seen into")
        return
    ed_script(inv, text, None)


# -- man, split ---------------------------------------------------------------------------------


def model_man(inv: Invocation) -> None:
    """man: ``-P``/``--pager`` and ``-H``/``--html`` name a program it runs (:func:`judge_program`);
    ``-l FILE`` and a name with a ``/`` read a file; page names are text."""
    parsed = parse_options(inv.argv, {"-P", "--pager", "-C", "--config-file", "-M", "--manpath", "-S", "-s",
                                      "--sections", "-m", "--systems", "-L", "--locale", "-e", "--extension",
                                      "-p", "--preprocessor", "-r", "--prompt", "-E", "--encoding", "-R",
                                      "--recode", "-T", "--troff-device", "-X"},
                           optional=frozenset({"-H", "--html", "-T", "--troff-device", "-X", "--gxditview"}))
    local = parsed.has("-l", "--local-file")
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-P", "--pager", "-H", "--html"):
            if value.strip() not in ("cat", "less", "more", "less -R", "most"):  # (a program where the agent
                judge_program(inv.walker, value, inv.at(index), f"the pager given to `man {option}`")  # can write)
        elif option in ("-C", "--config-file"):
            inv.read(value, index)
    for word, index in parsed.positionals:  # (a page name with a `/` is a file man formats, as with `-l`)
        if local or "/" in word:
            inv.read(word, index)


def model_split(inv: Invocation) -> None:
    """``split [OPTIONS] [INPUT [PREFIX]]``: writes PREFIX* (``x*`` by default) or pipes each
    part to ``--filter`` shell code."""
    parsed = parse_options(inv.argv, {"-a", "--suffix-length", "--additional-suffix", "-b", "--bytes", "-C",
                                      "--line-bytes", "-l", "--lines", "-n", "--number", "-t", "--separator",
                                      "--filter"}, optional=frozenset({"-d", "-x", "--numeric-suffixes",
                                                                       "--hex-suffixes"}))
    filtered = False
    for value, index in parsed.values_of("--filter"):
        inv.script(value.replace("$FILE", "part"), index, what="the `split --filter` command")
        filtered = True
    words = list(parsed.positionals)
    if words:
        inv.read(words[0][0], words[0][1])
    if filtered:
        return
    suffix = "".join(value for value, _ in parsed.values_of("--additional-suffix"))
    if len(words) >= 2:
        inv.write(words[1][0] + "aa" + suffix, words[1][1])
    else:
        inv.write("xaa" + suffix, None)


# -- make, cmake ----------------------------------------------------------------------------------

_MAKE_VALUES = {"-C": T, "--directory": T, "-f": "file", "--file": "file", "--makefile": "file", "-I": T,
                "--include-dir": T, "-j": T, "--jobs": T, "-l": T, "--load-average": T, "-o": T, "--old-file": T,
                "--assume-old": T, "-W": T, "--what-if": T, "--new-file": T, "--assume-new": T, "-O": T,
                "--output-sync": T, "--eval": "eval", "-E": "eval", "--jobserver-auth": T, "--debug": T}
_SHELL_META = re.compile(r"[;|&`$<>()]|\b(sh|bash|curl|wget|rm|python3?|perl|nc)\b")


def _recipes(inv: Invocation, text: str | None, index: int | None) -> None:
    """The recipe lines of a makefile whose text is known (a here-string) are shell code: walked
    (the make code around them stays unknown)."""
    if text is None or UNKNOWN in text:
        return
    for line in text.replace("$$", "$").split("\n"):
        if line.startswith("\t"):
            inv.script(line.lstrip("\t@-+ "), index, what="a recipe of the makefile")
        elif ":" in line and ";" in line.partition(":")[2]:  # `all: ; cmd`
            inv.script(line.partition(":")[2].partition(";")[2], index, what="a recipe of the makefile")


#: make variables that name a program the recipes run (``make CC=PROG``)
_MAKE_PROGRAMS = frozenset({"CC", "CXX", "CPP", "LD", "AR", "AS", "FC", "F77", "RANLIB", "STRIP", "NM", "OBJCOPY",
                            "PYTHON", "PERL", "INSTALL", "M4", "YACC", "LEX", "CCLD", "HOSTCC"})


#: make syntax that computes what runs (functions, includes, exports, a changed shell)
_MAKE_COMPUTED = re.compile(r"\$[({]|^\s*-?(?:include|sinclude|define|export|override|vpath|load)\b|"
                            r"^\s*(?:SHELL|\.SHELLFLAGS|MAKEFLAGS|\.ONESHELL)\b", re.M)


def _known_makefile(inv: Invocation, directory: str, index: int | None) -> bool:
    """The makefile make reads in ``directory`` was written by this command with content
    known here and plain (rules and recipes, no make functions, includes or exports): its
    recipes are walked as the shell code they are; True when so (else see fresh_project)."""
    from stockade.analyzer.models.fresh import known_content, wrote_anything

    if not wrote_anything(inv.walker):
        return False
    base = directory.rstrip("/") or "/"
    for name in ("GNUmakefile", "makefile", "Makefile"):  # (the order GNU make looks in)
        text = known_content(inv.walker, inv.path(base + "/" + name))
        if text is not None:
            if _MAKE_COMPUTED.search(text.replace("$$", "")):
                return False
            _recipes(inv, text, index)
            return True
    return False


def _makefile_text(inv: Invocation, text: str | None, index: int | None, what: str) -> None:
    """A makefile read from input or from a file this text made (``make -f -``, ``make -f
    <(printf …)``): a plain one (rules and recipes) is judged by its recipes; one whose text is
    not known, or that computes what runs (functions, includes), is unknown code as well."""
    if text is None or UNKNOWN in text or _MAKE_COMPUTED.search(text.replace("$$", "")):
        inv.unknown(what, index)
    _recipes(inv, text, index)


def model_ninja(inv: Invocation) -> None:
    """ninja [-C DIR] [-f FILE] [TARGETS]: runs the commands of the build file (the project's
    ``build.ninja``, or ``-f FILE``), as make runs a makefile: unknown code when this text wrote
    the file."""
    parsed = parse_options(inv.argv, {"-C", "-f", "-j", "-k", "-l", "-d", "-t", "-w"})
    directory = "."
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option == "-C":
            directory = value
        elif option == "-f":
            run_file(inv, value, index)
    if not parsed.values_of("-f"):
        if directory != ".":
            inv.read(directory.rstrip("/") + "/build.ninja", None)  # (the build file there: read)
        fresh_project(inv, directory, ("build.ninja",), None)


def model_make(inv: Invocation) -> None:
    """make runs the recipes of the project's makefile (judged like ``npm test``: by what is
    visible); ``--eval`` adds make code of its own (unknown), ``-f FILE`` runs the recipes of
    FILE (:func:`run_file`), and a variable given a command line (``CC='curl …|sh'``,
    ``SHELL=…``) changes what every recipe runs (unknown)."""
    parsed = parse_options(inv.argv, _MAKE_VALUES, optional=frozenset({"-j", "--jobs", "-l", "--load-average",
                                                                       "-O", "--output-sync", "--debug"}))
    moved = parsed.values_of("-C", "--directory")
    saved = inv.walker.state.cwd
    if moved:  # (`make -C DIR -f F`: make moves to DIR first; F and the recipes are there)
        inv.walker.state.cwd = inv.path(moved[-1][0])
    try:
        _make_options(inv, parsed)
    finally:
        inv.walker.state.cwd = saved
    _make_directory(inv, parsed)


def _make_options(inv: Invocation, parsed: Parsed) -> None:
    """:func:`model_make`'s options: ``--eval`` code, ``-f`` makefiles."""
    for option, value, index in parsed.options:
        role = _MAKE_VALUES.get(option)
        if role is None or value is None:
            continue
        if role == "eval":
            inv.unknown(f"`make {option}` runs make code (`{show(value)[:60]}`), which cannot be seen into", index)
            _recipes(inv, value, index)  # (its recipes are shell code: walked)
        elif role == "file" and (value in ("-", "/dev/stdin") or value.startswith(("/dev/fd/", "/proc/self/fd/"))):
            text = process_text(inv.walker, value) if value.startswith("/dev/fd/") else \
                inv.stdin.text if value in ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0") else None
            where = "another command" if value.startswith("/dev/fd/") and value != "/dev/fd/0" else inv.stdin.what
            _makefile_text(inv, text, index, f"`make {option} {show(value)}` runs a makefile from {where}")
        elif role == "file":
            from stockade.analyzer.models.fresh import known_content, wrote_anything

            text = known_content(inv.walker, inv.path(value)) if wrote_anything(inv.walker) else None
            if text is None:
                run_file(inv, value, index)
            else:  # a makefile this text wrote: judged by its recipes
                inv.read(value, index)
                _makefile_text(inv, text, index, f"`make {option} {show(value)}` runs a makefile this command wrote")


def _make_directory(inv: Invocation, parsed: Parsed) -> None:
    """:func:`model_make`'s makefile and variables: the one found below ``-C DIR``, and
    ``NAME=VALUE`` words."""
    if not parsed.values_of("-f", "--file", "--makefile"):
        directories = parsed.values_of("-C", "--directory")
        directory, at = directories[-1] if directories else (".", None)
        if directories:  # (make reads the makefile it finds there: one of these names)
            for name in ("GNUmakefile", "makefile", "Makefile"):
                inv.read(directory.rstrip("/") + "/" + name, at)
        if not _known_makefile(inv, directory, at):
            fresh_project(inv, directory, ("Makefile", "makefile", "GNUmakefile"), at)
    for word, index in parsed.positionals:
        name, eq, value = word.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*[+:?]?", name):
            continue
        if name.rstrip("+:?") in _MAKE_PROGRAMS and not _SHELL_META.search(value):  # `make CC=/tmp/x`
            judge_program(inv.walker, value, inv.at(index), f"`make {name}=`")
        elif name.rstrip("+:?") in ("SHELL", ".SHELLFLAGS", "MAKESHELL") or (
                _SHELL_META.search(value) and name.rstrip("+:?") not in ("CFLAGS", "CXXFLAGS", "LDFLAGS",
                                                                        "CPPFLAGS", "PREFIX", "DESTDIR")):
            inv.unknown(f"`make {name}=…` makes the recipes run `{show(value)[:60]}`", index)
        elif name.rstrip("+:?") in ("DESTDIR", "PREFIX", "prefix"):
            inv.write(value, index, recursive=True)
        elif name.rstrip("+:?") in CFLAG_VARS:  # (`make CFLAGS='-wrapper PROG'`: the compiler's options)
            judge_cflags(inv.walker, name.rstrip("+:?"), value, inv.at(index))


_CMAKE_E_ROLES: dict[str, tuple[str, str | None]] = {
    # subcommand → (role of its arguments, role of the last when two or more)
    "rm": ("delete", None), "remove": ("delete", None), "remove_directory": ("deleter", None),
    "make_directory": ("write", None), "touch": ("write", None), "touch_nocreate": ("write", None),
    "copy": ("read", "writer"), "copy_directory": ("readr", "writer"), "copy_if_different": ("read", "writer"),
    "copy_directory_if_different": ("readr", "writer"), "create_symlink": ("link", "write"),
    "create_hardlink": ("read", "write"), "cat": ("read", None), "md5sum": ("read", None),
    "sha1sum": ("read", None), "sha256sum": ("read", None), "sha512sum": ("read", None), "compare_files": ("read", None),
    "echo": ("text", None), "echo_append": ("text", None), "sleep": ("text", None), "capabilities": ("text", None),
    "environment": ("text", None), "true": ("text", None), "false": ("text", None), "tar": ("tar", None),
}


def model_cmake(inv: Invocation) -> None:
    """cmake: ``-E CMD`` file commands (``rm``, ``copy``, ``rename``…; ``chdir DIR CMD``,
    ``env … CMD`` and ``time CMD`` run a command); ``-P FILE`` runs a cmake script; ``-B DIR``
    writes the build tree; ``--install`` writes the install prefix; configuring and building
    run the project's own code (visible)."""
    argv = inv.argv
    if len(argv) > 2 and argv[1] == "-E":
        _cmake_e(inv, argv[2], 3)
        return
    parsed = parse_options(argv, {"-S", "-B", "-C", "-D", "-U", "-G", "-T", "-A", "-P", "--build", "--install",
                                  "--prefix", "--config", "--target", "-t", "-j", "--parallel", "--preset",
                                  "--toolchain", "--install-prefix", "--component", "--graphviz", "--trace-redirect",
                                  "-L", "--log-level"},
                           optional=frozenset({"-j", "--parallel"}))
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-P", "-C", "--toolchain"):  # a cmake script: unknown outside the project (/tmp)
            from stockade.analyzer.models.devtools import foreign_file

            foreign_file(inv, value, index, f"`cmake {option}`")
        elif option in ("-B", "--graphviz", "--trace-redirect"):
            inv.write(value, index, recursive=option == "-B")
        elif option == "-D" and re.match(r"CMAKE_[A-Z_]*LAUNCHER(:[A-Z]+)?=", value):
            inv.unknown(f"`cmake -D{show(value)[:40]}` makes every compile run another program", index)
        elif option == "-D" and re.match(r"CMAKE_(\w+_COMPILER|LINKER|AR|RANLIB|MAKE_PROGRAM)(:[A-Z]+)?=", value):
            # (the compiler, linker or build tool cmake runs: a program judged as such)
            judge_program(inv.walker, value.partition("=")[2], inv.at(index), f"`cmake -D{value.partition('=')[0]}`",
                          shell=False)
        elif option == "-D" and re.match(r"CMAKE_(TOOLCHAIN_FILE|PROJECT_INCLUDE|PROJECT_INCLUDE_BEFORE|"
                                         r"PROJECT_TOP_LEVEL_INCLUDES|USER_MAKE_RULES_OVERRIDE)(:[A-Z]+)?=", value):
            from stockade.analyzer.models.devtools import foreign_file

            foreign_file(inv, value.partition("=")[2], index, f"`cmake -D{value.partition('=')[0]}`")
        elif option in ("--prefix", "--install-prefix"):
            inv.write(value, index, recursive=True)
    for value, index in parsed.values_of("-S"):
        fresh_project(inv, value, ("CMakeLists.txt",), index)
    if not parsed.values_of("-S", "--build", "--install", "-P") and parsed.positionals:
        fresh_project(inv, parsed.positionals[-1][0], ("CMakeLists.txt",), parsed.positionals[-1][1])
    elif not parsed.values_of("-S", "--build", "--install", "-P", "-E") and parsed.values_of("-B"):
        fresh_project(inv, ".", ("CMakeLists.txt",), None)  # (`cmake -B build`: the source is the cwd)
    if parsed.has("--install") and not parsed.has("--prefix"):
        inv.write("/usr/local", None, recursive=True)


def _cmake_e(inv: Invocation, command: str, start: int) -> None:
    argv = inv.argv
    words = [(w, i) for i, w in enumerate(argv[start:], start=start)]
    if command in ("chdir", "time", "env"):
        rest = words
        if command == "chdir":
            rest = words[1:]
        elif command == "env":
            while rest and (rest[0][0].startswith("--") or "=" in rest[0][0]):
                rest = rest[1:]
        if rest:
            from stockade.analyzer.models.runners import run_in

            run_in(inv, words[0][0] if command == "chdir" and words else None, rest[0][1])  # (chdir: in that dir)
        return
    if command == "rename" and len(words) == 2:
        inv.walker.effects.append(Rename(inv.path(words[0][0]), inv.path(words[1][0]), inv.at(words[0][1])))
        return
    if command == "tar":
        tar = MODELS.get("tar")
        if tar is not None:
            inv.run(start - 1, argv=["tar", *argv[start:]], spans=[inv.at(start - 1), *inv.spans[start:]])
        return
    roles = _CMAKE_E_ROLES.get(command)
    if roles is None:
        inv.unknown(f"`cmake -E {show(command)}` has effects that are not known", start - 1)
        return
    args_role, last_role = roles
    if args_role == "link":  # create_symlink OLD NEW: NEW points at OLD (a way to reach it later)
        if len(words) == 2:
            from stockade.analyzer.effects import LinkTarget

            inv.write(words[1][0], words[1][1])
            inv.walker.effects.append(LinkTarget(inv.path(words[0][0]), inv.at(words[0][1])))
        return
    positionals = [(w, i) for w, i in words if not (w.startswith("-") and command in ("rm", "remove"))]
    recursive = command in ("rm", "remove") and any(w.startswith("-") and "r" in w.lower() for w, _ in words)
    if last_role is not None and len(positionals) >= 2:
        word, index = positionals.pop()
        apply_role(inv, last_role, word, index)
    for word, index in positionals:
        apply_role(inv, args_role + ("r" if recursive and args_role == "delete" else ""), word, index)


# -- calculators and macro processors whose text can run commands ------------------------------


def _dc_text(inv: Invocation, text: str, index: int | None) -> None:
    """dc code: ``!`` runs the rest of its line as a shell command (walked)."""
    if UNKNOWN in text:
        inv.unknown("dc runs code that is not known before it runs", index)
        return
    for line in text.split("\n"):
        at = line.find("!")
        while at != -1 and line[at + 1:at + 2] in ("<", ">", "="):  # (`!<r`, `!>r`, `!=r`: comparisons)
            at = line.find("!", at + 2)
        if at != -1:
            inv.script(line[at + 1:], index, what="the dc `!` command")


def model_dc(inv: Invocation) -> None:
    """dc: ``-e EXPR`` and the files (or input) it reads are dc code; ``!CMD`` in it runs a shell
    command.  Files given are read (their ``!`` lines cannot be seen into unless this text wrote
    them)."""
    parsed = parse_options(inv.argv, {"-e", "--expression", "-f", "--file"})
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-e", "--expression"):
            _dc_text(inv, value, index)
        else:
            run_file(inv, value, index)
    for word, index in parsed.positionals:
        run_file(inv, word, index)
    if not parsed.positionals and not parsed.values_of("-e", "--expression", "-f", "--file") and \
            inv.stdin.text is not None:
        _dc_text(inv, inv.stdin.text, None)


#: m4 builtins that run a shell command (group 2: the command, when a plain literal)
_M4_SYSCMD = re.compile(r"\b(e?syscmd)\s*\(\s*`?([^`'()\n]*)'?\s*\)")


def _m4_text(inv: Invocation, text: str, index: int | None) -> None:
    """m4 input: ``syscmd(CMD)``/``esyscmd(CMD)`` run shell commands (walked); ``include(F)``
    and ``sinclude(F)`` read F."""
    if UNKNOWN in text:
        if "syscmd" in text:
            inv.unknown("m4 runs a shell command that is not known before it runs", index)
        return
    for match in _M4_SYSCMD.finditer(text):
        inv.script(match.group(2), index, what=f"the m4 `{match.group(1)}` command")
    for match in re.finditer(r"\bs?include\s*\(\s*`?([^`'()\n]+)'?\s*\)", text):
        inv.read(match.group(1), index)


def model_m4(inv: Invocation) -> None:
    """m4 FILES: files are read (their macros are the project's); macro definitions
    (``-D NAME=TEXT``) and known input (``m4 <<< TEXT``) are scanned for ``syscmd``."""
    parsed = parse_options(inv.argv, {"-D", "--define", "-U", "--undefine", "-I", "--include", "-o", "--error-output",
                                      "-l", "--arglength", "-d", "--debug", "--debugfile", "-F", "--freeze-state",
                                      "-R", "--reload-state", "-L", "--nesting-limit"}, optional=frozenset({"-d"}))
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-D", "--define"):
            _m4_text(inv, value.partition("=")[2], index)
        elif option in ("-o", "--error-output", "--debugfile", "-F", "--freeze-state"):
            inv.write(value, index)
        elif option in ("-R", "--reload-state"):
            run_file(inv, value, index)
    files = [(word, index) for word, index in parsed.positionals if word != "-"]
    for word, index in files:
        run_file(inv, word, index)
    if (not files or "-" in (word for word, _ in parsed.positionals)) and inv.stdin.text is not None:
        _m4_text(inv, inv.stdin.text, None)


# -- languages whose inline code is given by options of their own spelling ----------------------

#: program → its options (any spelling: ``-batch``, ``--eval``, ``--batch-string=…``) whose value
#: is code in the language (an unknown effect; the paths and command lines it names are judged)
_CODE_OPTIONS: dict[str, frozenset[str]] = {
    "kotlin": frozenset({"-e", "-expression"}),
    "octave octave-cli": frozenset({"--eval"}),
    "matlab": frozenset({"-batch", "-r"}),
    "maxima": frozenset({"--batch-string", "-r", "--run-string", "--batch-lisp"}),
    "crystal": frozenset({"eval"}),
    "gp": frozenset({"-e"}),
    "scilab scilab-cli": frozenset({"-e", "-f"}),
    "mathematica wolframscript math": frozenset({"-code", "-c", "-run"}),
}


def model_code_options(inv: Invocation) -> None:
    """A language tool whose option (or, for ``crystal eval``, subcommand) gives inline code: that
    code cannot be seen into (what it names is judged, :func:`~.shells.named_paths`); with code on
    a standard input that is not the terminal, that code likewise."""
    from stockade.analyzer.models.shells import named_paths

    options = next(spelled for names, spelled in _CODE_OPTIONS.items() if inv.name in names.split())
    argv = inv.argv
    for index, word in enumerate(argv[1:], start=1):
        name, eq, attached = word.partition("=")
        if name in options:
            code = attached if eq else (argv[index + 1] if index + 1 < len(argv) else "")
            inv.unknown(f"inline `{inv.name}` code (`{show(code)[:60]}`) cannot be seen into", index)
            named_paths(inv, code, index + (0 if eq else 1))
            return
    if inv.stdin.text is not None:
        inv.unknown(f"`{inv.name}` runs code from {inv.stdin.what}, which cannot be seen into")
        named_paths(inv, inv.stdin.text, None)


# -- erlang ---------------------------------------------------------------------------------------

#: erl's options that print information and start no node
_ERL_INFO = frozenset({"-version", "+V", "-help"})
#: erl's options whose values are code or name a module function it calls
_ERL_CODE = frozenset({"-eval", "-s", "-run", "-S", "-boot", "-config", "-args_file", "-pa", "-pz", "-extra"})


def model_erl(inv: Invocation) -> None:
    """erl: ``-eval EXPR`` runs Erlang code, ``-s``/``-run``/``-S`` call a module's function,
    ``-pa``/``-pz``/``-boot``/``-config`` load code or configuration from elsewhere; without
    ``-noshell`` it starts a shell that runs what it reads: code that cannot be seen into.
    ``escript FILE`` runs the script file (a read; unknown when this command wrote it)."""
    argv = inv.argv
    if inv.name == "escript":
        for index, word in enumerate(argv[1:], start=1):
            if not word.startswith("-"):
                run_file(inv, word, index)
                break
        return
    if argv[1:] and all(word in _ERL_INFO for word in argv[1:]):
        return
    for index, word in enumerate(argv[1:], start=1):
        if word in _ERL_CODE:
            value = argv[index + 1] if index + 1 < len(argv) else ""
            inv.unknown(f"`erl {word} {show(value)[:50]}` runs Erlang code that cannot be seen into", index)
            if word == "-eval" and value:
                from stockade.analyzer.models.shells import named_paths

                named_paths(inv, value, index + 1)
            return
    inv.unknown("`erl` starts an Erlang shell that runs code that cannot be seen into")


# -- deno, cargo ----------------------------------------------------------------------------------

_DENO_VALUES = {"-c", "--config", "--import-map", "--lock", "--cert", "--location", "--seed", "-L", "--log-level",
                "--ext", "--watch-exclude"}


def model_deno(inv: Invocation) -> None:
    """deno: ``run``/``serve``/``install``/``compile`` of a URL (or ``npm:``/``jsr:`` package)
    run code that cannot be seen into; ``eval`` runs inline code; a local module is a script
    file; ``task``/``test``/``fmt``/``lint`` run the project's own code (visible)."""
    parsed = parse_options(inv.argv, _DENO_VALUES, stop_at_first_positional=True)
    if not parsed.positionals:
        return
    sub, index = parsed.positionals[0]
    if sub in ("eval", "repl"):
        inv.unknown(f"`deno {sub}` runs inline code, which cannot be seen into", index)
        if sub == "eval" and index + 1 < len(inv.argv):
            from stockade.analyzer.models.shells import named_paths

            named_paths(inv, inv.argv[-1], len(inv.argv) - 1)
        return
    if sub in ("cache", "check", "info", "doc", "bundle", "vendor", "add"):  # (they fetch what they name)
        for word, at in parsed.positionals[1:]:
            if "://" in word:
                contact_url(inv, word, at, 443)
        return
    if sub not in ("run", "serve", "install", "compile", "x"):
        return
    rest = parse_options(inv.argv, _DENO_VALUES | {"-n", "--name", "--root", "--env-file"} if sub == "install"
                         else _DENO_VALUES, start=index + 1, stop_at_first_positional=True, optional=frozenset())
    if not rest.positionals:
        return
    module, at = rest.positionals[0]
    from stockade.analyzer.models.net import inspect_options

    inspect_options(inv, index + 1, at)
    if "://" in module or module.startswith(("npm:", "jsr:", "github:")) or UNKNOWN in module:
        if "://" in module:
            contact_url(inv, module, at, 443)
        inv.unknown(f"`deno {sub}` runs `{show(module)}`, code that cannot be seen into", at)
        return
    run_file(inv, module, at)


_CARGO_MODEL = MODELS.get("cargo")
#: ``target.<triple-or-cfg>.runner = "CMD ARGS"`` given to ``--config`` as one TOML basic string
_CARGO_RUNNER = re.compile(r"""\s*target\.[\w.\-()'",= ]+?\.runner\s*=\s*"([^"]*)"\s*$""")


def model_cargo(inv: Invocation) -> None:
    """cargo: ``install`` builds a crate (``--git URL``: from a repository; ``--path``: a local
    tree) and writes its binaries to ``--root`` or ``~/.cargo``; ``--config`` can set a runner or
    linker (unknown), as ``cargo rustc -- -C linker=PROG`` can (PROG judged as a program); other subcommands build and run the project's own code."""
    argv = inv.argv
    for index, word in enumerate(argv[1:], start=1):
        if word == "--config" or word.startswith("--config="):
            value = word.partition("=")[2] if "=" in word else (argv[index + 1] if index + 1 < len(argv) else "")
            if "=" in value and re.search(r"runner|linker|rustc|rustc-wrapper|rustflags|\balias\b", value):
                runner = _CARGO_RUNNER.match(value)
                if runner is not None and "\\" not in runner.group(1):  # (a runner given as one TOML string:
                    # cargo runs that command line with the built program as its last argument)
                    inv.script(runner.group(1), index, what="the runner `cargo --config` sets")
                else:
                    inv.unknown(f"`cargo --config {show(value)[:50]}` changes the program cargo runs", index)
    if "--" in argv and any(word in ("rustc", "rustdoc") for word in argv[1:argv.index("--")]):
        from stockade.analyzer.models.envvars import _rust_linkers  # (`cargo rustc -- -C linker=PROG`)

        at = argv.index("--")
        _rust_linkers(inv.walker, f"cargo {'rustdoc' if 'rustdoc' in argv[1:at] else 'rustc'} --",
                      " ".join(argv[at + 1:]), inv.at(at))
    if _CARGO_MODEL is not None:
        _CARGO_MODEL(inv)
    if len(argv) > 1 and argv[1] in ("build", "b", "run", "r", "test", "t", "bench", "check", "c", "install"):
        fresh_project(inv, ".", ("Cargo.toml", "build.rs"), 1)
    parsed = parse_options(argv, {"--git", "--branch", "--tag", "--rev", "--path", "--root", "--version",
                                  "--registry", "--index", "--target", "--target-dir", "-j", "--jobs", "--features",
                                  "-F", "--profile", "--bin", "--example", "--config", "-Z", "--color",
                                  "--manifest-path", "-p", "--package"}, stop_at_first_positional=False)
    if not parsed.positionals or parsed.positionals[0][0] not in ("install", "binstall"):
        return
    sub_index = parsed.positionals[0][1]
    if parsed.positionals[0][0] == "binstall":
        inv.unknown("`cargo binstall` downloads and installs prebuilt binaries, which cannot be seen into", sub_index)
    for url, index in parsed.values_of("--git", "--index"):
        contact_url(inv, url, index, 443)
        inv.unknown(f"`cargo install` builds and installs code from `{show(url)}`, which cannot be seen into", index)
    for path, index in parsed.values_of("--path"):
        inv.read(path, index, recursive=True)
    roots = parsed.values_of("--root")
    if roots:
        for root, index in roots:
            inv.write(root, index, recursive=True)
    else:
        inv.write("~/.cargo", sub_index, recursive=True)
    if not parsed.values_of("--git", "--index", "--registry"):
        inv.network("crates.io", 443, sub_index)


_JAVA_VALUES = {"--cp": T, "--classpath": T, "--class-path": T, "-p": T, "--module-path": T, "--add-modules": T,
                "-m": T, "--module": T, "--jar": "file", "--source": T}


def model_java(inv: Invocation) -> None:
    """java: ``-jar FILE`` (and a ``.java`` source file) runs that file's code (:func:`run_file`);
    class names and class paths are text; ``-javaagent:``/``-agentpath:`` load code from a file."""
    argv = single_dash_long(inv.argv)
    parsed = parse_options(argv, _JAVA_VALUES, stop_at_first_positional=True)
    for option, value, index in parsed.options:
        if _JAVA_VALUES.get(option) == "file" and value is not None:
            run_file(inv, value, index)
            return
        name = option.partition(":")[0]
        if name in ("--javaagent", "--agentpath", "--agentlib") and ":" in option:
            run_file(inv, option.partition(":")[2].partition("=")[0], index)
    if parsed.positionals:
        word, index = parsed.positionals[0]
        if word.endswith(".java"):
            run_file(inv, word, index)


if _CARGO_MODEL is None:  # pragma: no cover
    raise ImportError("coderunners.py wraps files.py's cargo model: import it after files.py")
def model_pdb(inv: Invocation) -> None:
    """``pdb [-c COMMAND]… (-m MODULE | SCRIPT) [ARGS]`` (and ``python -m pdb``): a command that
    is not a debugger command is a Python statement (``!stmt`` always is): unknown code; the
    script is the project's own (a file run)."""
    parsed = parse_options(inv.argv, {"-c", "--command", "-m"}, stop_at_first_positional=True)
    for option, value, index in parsed.options:
        if option in ("-c", "--command") and value is not None:
            command = value.strip().split(None, 1)[0] if value.strip() else ""
            if value.lstrip().startswith("!") or command not in _PDB_COMMANDS or "," in value:
                inv.unknown(f"the pdb command `{show(value)[:60]}` runs Python code, which cannot be seen into", index)
                named_paths(inv, value, index)  # (paths and shell command lines visible in it)
    if not parsed.values_of("-m") and parsed.positionals:
        run_file(inv, parsed.positionals[0][0], parsed.positionals[0][1])


#: pdb's own commands that evaluate no Python (``p``, ``display``, ``condition``, a breakpoint's
#: condition, and anything pdb does not know are Python code)
_PDB_COMMANDS = frozenset({"h", "help", "w", "where", "bt", "d", "down", "u", "up", "b", "break", "tbreak", "cl",
                           "clear", "disable", "enable", "ignore", "s", "step", "n", "next", "unt", "until", "r",
                           "return", "c", "cont", "continue", "j", "jump", "l", "list", "ll", "longlist", "a",
                           "args", "q", "quit", "exit", "run", "restart", "retval", "rv"})


register("gdb cgdb", model_gdb)
register("pdb pdb3 py:pdb", model_pdb)
_MODULE_TOOLS["pdb"] = "py:pdb"
register("sqlite3 sqlite", model_sqlite)
register("emacs emacsclient", model_emacs)
register("ed red", model_ed)
register("man", model_man)
register("split", model_split)
register("ninja samu", model_ninja)
register("make gmake bmake", model_make)
register("cmake", model_cmake)
register("deno", model_deno)
register("cargo", model_cargo)
register("erl escript", model_erl)
register("dc", model_dc)
register("m4 gm4", model_m4)
register(" ".join(_CODE_OPTIONS), model_code_options)
register("java", model_java)
