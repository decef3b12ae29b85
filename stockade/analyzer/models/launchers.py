"""Programs that run code given in options or files of their own language, and programs that
hand their argument to whatever the desktop runs for it.

* The dynamic loader run directly (``/lib64/ld-linux-x86-64.so.2 PROG ARGS``, ``ld.so
  --library-path DIR PROG``) runs PROG: the command is modelled like a wrapper's;
  ``--preload``/``--audit`` load libraries whose code cannot be seen into; ``--list`` and
  ``--verify`` only inspect PROG.
* ``xdg-open``, ``gio open``, ``kde-open``, ``gnome-open``, ``exo-open``, ``wslview``, ``open``
  and browser launchers run the handler the desktop picks for the target (a ``.desktop``
  file, a script, a URL): unknown effects; a URL is also contacted and a file read.
* ``expect``: ``-c CODE``, ``-f FILE`` and a script operand are Tcl that spawns programs and
  types into them: unknown; a ``spawn`` command's words are walked as the command it starts.
* ``lldb``: ``-o``/``-O``/``-k`` commands (``platform shell`` and ``shell`` run shell code,
  ``script`` and expressions run code), ``-s``/``-S``/``-K`` command files (unknown).
* Command files of debuggers and editors, whose content cannot be seen: ``gdb -x``/``-ix``/
  ``--command``, ``vim -u``/``-S``/``-s``, ``nvim -l``, ``emacs -l``/``--load``/``--script``.
* ``/proc/self/exe`` run as a command is the shell itself.
* npm/pnpm/yarn/bun run the package scripts of a ``package.json`` this command wrote: walked
  when its content is known (:func:`~stockade.analyzer.models.fresh.known_content`).
"""

from __future__ import annotations

import re
import shlex

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, default_model, parse_options, register
from stockade.analyzer.models.coderunners import _GDB_VALUES, single_dash_long
from stockade.analyzer.models.fresh import known_content, written_by
from stockade.analyzer.models.net import contact_url

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model

# -- the dynamic loader ------------------------------------------------------------------------

#: the loader's options that take a value (glibc ld.so(8))
_LOADER_VALUES = frozenset({"--library-path", "--inhibit-rpath", "--audit", "--preload", "--argv0",
                            "--glibc-hwcaps-prefix", "--glibc-hwcaps-mask"})
#: options after which the loader runs nothing
_LOADER_INSPECT = frozenset({"--list", "--verify", "--help", "--version", "--list-diagnostics",
                             "--list-tunables"})
#: the loader's names on the architectures a coding agent meets
LOADERS = ("ld.so ld-linux.so.2 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1 ld-linux-armhf.so.3 "
           "ld-linux-riscv64-lp64d.so.1 ld64.so.1 ld64.so.2 ld-musl-x86_64.so.1 ld-musl-aarch64.so.1 "
           "ld-musl-armhf.so.1 ld-linux-x32.so.2")


def model_loader(inv: Invocation) -> None:
    """``ld.so [OPTIONS] PROG [ARGS]``: runs PROG with ARGS (modelled as that command)."""
    parsed = parse_options(inv.argv, _LOADER_VALUES, stop_at_first_positional=True)
    inspect = False
    for option, value, index in parsed.options:
        if option in ("--preload", "--audit") and value is not None:
            for library in re.split(r"[ :]", value):
                if library:
                    inv.read(library, index)
            inv.unknown(f"`{inv.name} {option}` loads libraries whose code cannot be seen into "
                        f"(`{show(value)}`)", index)
        elif option == "--library-path" and value is not None:
            for directory in value.split(":"):
                if directory:
                    inv.read(directory, index)
        elif option in _LOADER_INSPECT:
            inspect = True
    if not parsed.positionals:
        return
    word, index = parsed.positionals[0]
    if inspect:
        inv.read(word, index)
        return
    if "/" in word or word[:1] == "~":
        from stockade.analyzer.models.programs import agent_writable

        if agent_writable(inv.walker, inv.path(word)):
            inv.read(word, index)
            inv.unknown(f"`{inv.name}` runs `{show(word)}`, a file in a place the agent can write (even from a "
                        "filesystem mounted without execution): its code cannot be seen into", index)
            return
    inv.run(index)


_PROC_EXE = re.compile(r"/proc/(self|thread-self|\d+)(?:/task/\d+)?/exe")


def model_proc_exe(inv: Invocation) -> None:
    """``/proc/self/exe ARGS`` (``/proc/$$/exe``): the program of the process that runs it —
    the shell itself, judged as ``bash ARGS``; another process's program is not known; a
    program merely named ``exe`` is judged like any program without a model."""
    match = _PROC_EXE.fullmatch(inv.path(inv.argv[0]))
    if match is None:
        from stockade.analyzer.models import default_model

        default_model(inv)
        return
    if match.group(1) in ("self", "thread-self"):
        inv.run(0, argv=["bash", *inv.argv[1:]], spans=list(inv.spans))
        return
    inv.unknown(f"`{show(inv.argv[0])}` runs the program of another process, which is not known", 0)


# -- desktop launchers -------------------------------------------------------------------------

_LAUNCHERS = ("xdg-open gio kde-open kde-open5 kde-open6 gnome-open exo-open wslview open see run-mailcap "
              "sensible-browser x-www-browser www-browser gvfs-open mimeopen handlr kioclient kioclient5")


#: gio subcommands → what they do to their operands (the last of ``copy``/``move`` is the destination)
_GIO = {"cat": "read", "info": "read", "list": "read", "tree": "read", "monitor": "read", "tree-view": "read",
        "remove": "delete", "rm": "delete", "trash": "delete", "mkdir": "write", "save": "write", "set": "write",
        "rename": "write", "copy": "copy", "cp": "copy", "move": "move", "mv": "move"}
#: gio options that take a value
_GIO_VALUES = frozenset({"-a", "--attributes", "-t", "--attribute-type", "--etag", "-e"})


def _gio_files(inv: Invocation) -> None:
    """``gio cat|info|list FILE`` read, ``remove|trash`` delete, ``mkdir|save|set|rename`` write,
    ``copy|move SRC… DEST`` read (move: delete) the sources and write the destination; a URI
    (``https://…``) is a contact, ``file://`` its path.  Other subcommands: as a program
    without a model."""
    if len(inv.argv) < 2 or inv.argv[1] not in _GIO:
        default_model(inv)
        return
    role = _GIO[inv.argv[1]]
    words = list(parse_options(inv.argv, _GIO_VALUES, start=2).positionals)
    if inv.argv[1] in ("set", "rename"):
        words = words[:1]  # (`gio set FILE ATTR VALUE`, `gio rename FILE NAME`: the file)
    for position, (word, index) in enumerate(words):
        last = position == len(words) - 1 and len(words) > 1
        effect = role if role not in ("copy", "move") else "write" if last else "read"
        if "://" in word and not word.startswith("file://"):
            contact_url(inv, word, index)
            continue
        path = word[7:] if word.startswith("file://") else word
        if effect == "read":
            inv.read(path, index, recursive=inv.argv[1] == "tree")
            if role == "move":
                inv.delete(path, index, recursive=True)
        elif effect == "delete":
            inv.delete(path, index, recursive=True)
        else:
            inv.write(path, index, recursive=role in ("copy", "move"))


def model_launcher(inv: Invocation) -> None:
    """``xdg-open TARGET`` and the like: the handler the desktop picks runs with the target."""
    argv = inv.argv
    start = 1
    if inv.name == "gio":
        if len(argv) < 2 or argv[1] not in ("open", "launch"):
            _gio_files(inv)
            return
        start = 2
    if inv.name in ("kioclient", "kioclient5") and len(argv) > 1 and argv[1] in ("exec", "openURL"):
        start = 2
    if inv.name == "handlr" and len(argv) > 1 and argv[1] == "open":
        start = 2
    targets = [(word, index) for index, word in enumerate(argv[start:], start=start) if word[:1] != "-"]
    if not targets:
        return  # nothing to open (--help, --version)
    for word, index in targets:
        if "://" in word and not word.startswith("file://"):
            contact_url(inv, word, index)
        elif word.startswith("file://"):
            inv.read(word[7:], index)
        elif ":" not in word.partition("/")[0] or word.startswith(("/", ".", "~")):
            inv.read(word, index)
    shown = " ".join(show(word) for word, _ in targets)[:60]
    inv.unknown(f"`{inv.name}` runs whatever program handles `{shown}`: what it does cannot be seen into", 0)


# -- expect --------------------------------------------------------------------------------------

_EXPECT_VALUES = frozenset({"-c", "-f", "-D"})
_TCL_SPAWN = re.compile(r"(?:^|[\n;\[{])\s*spawn\s+((?:-\S+\s+)*)([^\n;\]}]*)")


_TCL_SEND = re.compile(r"(?:^|[\n;\[{])\s*send\s+(?:-\S+\s+)*(?:\"((?:[^\"\\]|\\.)*)\"|\{([^}]*)\})")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})
_TCL_ESCAPES = {"r": "\n", "n": "\n", "t": "\t", "\\": "\\", '"': '"', "$": "$", "[": "[", "]": "]"}


def _spawned(inv: Invocation, code: str, index: int) -> None:
    """The programs a Tcl text starts with ``spawn`` (walked as commands); what it ``send``s
    to a spawned interactive shell is walked as that shell's input."""
    shell = False
    for match in _TCL_SPAWN.finditer(code):
        words = match.group(2).strip()
        if not words:
            continue
        try:
            argv = shlex.split(words.replace("{", '"').replace("}", '"'))
        except ValueError:
            continue
        if argv:
            inv.script(shlex.join(argv), index, what="the command an expect script spawns")
            shell = shell or (argv[0].rpartition("/")[2] in _SHELLS and "-c" not in argv[1:])
    if not shell:
        return
    typed = []
    for match in _TCL_SEND.finditer(code):
        if match.group(1) is not None:
            typed.append(re.sub(r"\\(.)", lambda m: _TCL_ESCAPES.get(m.group(1), m.group(1)), match.group(1)))
        else:
            typed.append(match.group(2))
    if typed:
        inv.script("".join(typed), index, what="the text an expect script types into a shell")


def model_expect(inv: Invocation) -> None:
    """expect: Tcl code runs programs and types into them (unknown); ``spawn`` commands are
    walked; a script file given is read."""
    parsed = parse_options(inv.argv, _EXPECT_VALUES, stop_at_first_positional=True)
    ran = False
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option == "-c":
            ran = True
            if UNKNOWN not in value:
                _spawned(inv, value, index)
            inv.unknown(f"`expect -c` runs Tcl code that starts programs and types into them "
                        f"(`{show(value)[:60]}`)", index)
        elif option == "-f":
            ran = True
            inv.read(value, index)
            inv.unknown(f"`expect -f {show(value)}` runs a Tcl script that cannot be seen into", index)
    if parsed.positionals and not any(option == "-f" for option, _, _ in parsed.options):
        word, index = parsed.positionals[0]
        inv.read(word, index)
        inv.unknown(f"`expect {show(word)}` runs a Tcl script that cannot be seen into", index)
    elif not ran and not parsed.positionals and inv.stdin.what != "the terminal" and not any(
            option in ("-v", "--version", "-h", "--help") for option, _, _ in parsed.options):
        inv.unknown(f"`expect` runs Tcl code from {inv.stdin.what}, which cannot be seen into", 0)


# -- lldb ----------------------------------------------------------------------------------------

_LLDB_VALUES = {"-o": "cmd", "--one-line": "cmd", "-O": "cmd", "--one-line-before-file": "cmd", "-k": "cmd",
                "--one-line-on-crash": "cmd", "-s": "file", "--source": "file", "-S": "file",
                "--source-before-file": "file", "-K": "file", "--source-on-crash": "file", "-p": "text",
                "--attach-pid": "text", "-n": "text", "--attach-name": "text", "-c": "read", "--core": "read",
                "-f": "read", "--file": "read", "-a": "text", "--arch": "text", "-l": "text", "--script-language": "text",
                "-r": "text", "--repl": "text"}
_LLDB_SAFE = re.compile(r"(bt|run|r|c|continue|q|quit|exit|n|next|s|step|si|ni|finish|up|down|b|br|breakpoint|"
                        r"thread|frame|f|image|target|process\s+(launch|attach|continue|status|kill|detach)|"
                        r"register\s+read|disassemble|di|settings\s+(set|show)|help|version|watchpoint|detach|"
                        r"type|log\s+(enable|disable|list))(\s|$)")


def lldb_command(inv: Invocation, text: str, index: int) -> None:
    """One lldb command: ``platform shell``/``shell`` run shell code (walked), ``script`` and
    expressions run code (unknown); inspecting and running the program are visible."""
    text = text.strip()
    match = re.match(r"(?:platform\s+shell|shell|_regexp-shell)(?:\s+-[a-zA-Z]+(?:\s+\S+)?)*\s+(.*)", text, re.S)
    if match:
        inv.script(match.group(1), index, what="the lldb `platform shell` command")
        return
    if _LLDB_SAFE.match(text) and "(" not in text and "--outfile" not in text and " -o " not in text:
        return
    inv.unknown(f"the lldb command `{show(text)[:60]}` can run code that cannot be seen into", index)
    from stockade.analyzer.models.shells import named_paths

    named_paths(inv, text, index)  # (`script os.system("…")`, `expr system("…")`: what it visibly hands a shell)


def model_lldb(inv: Invocation) -> None:
    """lldb: ``-o CMD`` (:func:`lldb_command`), ``-s FILE`` (a command file: unknown), the
    program debugged (read), judged too as the command it runs as with its arguments after
    ``--`` (``lldb -- PROG ARGS``, ``lldb PROG -- ARGS``)."""
    argv = inv.argv
    stop = argv.index("--") if "--" in argv else len(argv)
    parsed = parse_options(argv[:stop], _LLDB_VALUES)
    for option, value, index in parsed.options:
        role = _LLDB_VALUES.get(option)
        if role is None or value is None:
            continue
        if role == "cmd":
            lldb_command(inv, value, index)
        elif role == "file":
            _command_file(inv, value, index, f"lldb {option}", "lldb commands")
            for line in (_known_file(inv, value) or "").split("\n"):  # (a file whose text is known: each command)
                if line.strip() and not line.lstrip().startswith("#"):
                    lldb_command(inv, line, index)
        elif role == "read":
            inv.read(value, index)
    program = parsed.positionals[:1]
    if stop < len(argv) - 1 and not program:
        program = ((argv[stop + 1], stop + 1),)
    for word, index in program:
        inv.read(word, index)
    if program and stop < len(argv) - 1:  # the command the program runs as
        first, at = program[0]
        if at > stop:  # `lldb -- PROG ARGS`
            inv.run(at)
        else:  # `lldb PROG -- ARGS`
            inv.run(at, argv=[first, *argv[stop + 1:]], spans=[inv.at(at), *inv.spans[stop + 1:]])


# -- command files of debuggers and editors ------------------------------------------------------


def _known_file(inv: Invocation, word: str) -> str | None:
    """The text of a file this command made, when known: a process substitution's
    (``<(echo …)``) or a file it wrote earlier (``echo … > f``)."""
    from stockade.analyzer.models.fresh import known_content, wrote_anything
    from stockade.analyzer.words import process_text

    if word.startswith("/dev/fd/"):
        return process_text(inv.walker, word)
    if not wrote_anything(inv.walker):
        return None
    text = known_content(inv.walker, inv.path(word))
    return None if text is None or UNKNOWN in text else text


def _command_file(inv: Invocation, word: str, index: int, option: str, what: str) -> None:
    """``option FILE`` runs the ``what`` in FILE: a read of it, and code that cannot be seen into."""
    if not word:
        return
    inv.read(word, index)
    inv.unknown(f"`{option} {show(word)}` runs the {what} in that file, which cannot be seen into", index)


_GDB_MODEL = MODELS.get("gdb")


def model_gdb(inv: Invocation) -> None:
    """gdb: as coderunners.py's model; a command file (``-x``, ``-ix``, ``--command``) runs gdb
    commands (``shell``, ``python``) that cannot be seen into."""
    if _GDB_MODEL is not None:
        _GDB_MODEL(inv)
    argv = single_dash_long(inv.argv)
    if "--args" in argv:
        argv = argv[:argv.index("--args")]
    for option, value, index in parse_options(argv, _GDB_VALUES).options:
        if value is not None and _GDB_VALUES.get(option) == "file":
            _command_file(inv, value, index, "gdb -" + option.lstrip("-"), "gdb commands")
            from stockade.analyzer.models.coderunners import gdb_command

            for line in (_known_file(inv, value) or "").split("\n"):  # (a file whose text is known: each command)
                if line.strip() and not line.lstrip().startswith("#"):
                    gdb_command(inv, line, index)


_EDITOR_MODEL = MODELS.get("vim")
#: ``vim -u`` values that load no file
_VIM_NO_RC = frozenset({"NONE", "NORC", "DEFAULTS", "NOPLUGIN"})


def model_editor(inv: Invocation) -> None:
    """vim/nvim: as text.py's model; ``-u VIMRC``, ``-S SCRIPT`` (``Session.vim`` without a
    name), ``-s KEYS`` outside Ex mode and nvim's ``-l LUA`` run code in files that cannot be
    seen into; ``-w``/``-W FILE`` write the typed keys to FILE."""
    if _EDITOR_MODEL is not None:
        _EDITOR_MODEL(inv)
    argv = inv.argv
    ex_mode = inv.name == "ex" or any(w[:1] == "-" and w[1:2] != "-" and ("e" in w or "E" in w)
                                      for w in argv[1:] if w not in ("-c", "--cmd"))
    index = 1
    while index < len(argv):
        word = argv[index]
        if word == "--":
            break
        value = argv[index + 1] if index + 1 < len(argv) else ""
        if word[:1] == "-" and word[1:2] != "-" and len(word) > 2 and "u" in word[1:]:
            # `-Nu VIMRC` (flags clustered before it), `-uVIMRC` (attached)
            flags, _, attached = word[1:].partition("u")
            if flags.isalpha() and not attached and value:
                word = "-u"
            elif attached and not flags:
                if attached not in _VIM_NO_RC:
                    _command_file(inv, attached, index, f"{inv.name} -u", "editor commands")
                index += 1
                continue
        if word == "-u" and value:
            if value not in _VIM_NO_RC:
                _command_file(inv, value, index + 1, f"{inv.name} -u", "editor commands")
            index += 2
        elif word == "-S":
            if value and not value.startswith(("-", "+")):
                _command_file(inv, value, index + 1, f"{inv.name} -S", "editor commands")
                index += 2
            else:
                _command_file(inv, "Session.vim", index, f"{inv.name} -S", "editor commands")
                index += 1
        elif word.startswith("-S") and len(word) > 2:
            _command_file(inv, word[2:], index, f"{inv.name} -S", "editor commands")
            index += 1
        elif word == "-s" and value and not ex_mode:
            _command_file(inv, value, index + 1, f"{inv.name} -s", "typed editor keys")
            index += 2
        elif word == "-l" and inv.name == "nvim" and value:
            _command_file(inv, value, index + 1, "nvim -l", "Lua code")
            break  # the rest are the script's arguments
        elif word in ("-w", "-W") and value:
            inv.write(value, index + 1)
            index += 2
        elif word in ("-c", "--cmd") and value:
            _vim_settings(inv, value, index + 1)
            index += 2
        elif word in ("-i", "-T", "-U", "-r", "-t", "-q", "--listen", "--remote", "--servername"):
            index += 2
        else:
            if word[:1] == "+" and len(word) > 1:
                _vim_settings(inv, word[1:], index)
            index += 1
    if ex_mode and inv.stdin.what != "the terminal":
        _ex_stdin(inv)


#: vim options naming programs it runs (``:!``, ``:make``, ``:grep``, ``K``, ``=``, ``gq``) and
#: directories whose plugins and scripts it loads
_VIM_PROGRAM_OPTIONS = frozenset({"shell", "sh", "makeprg", "mp", "grepprg", "gp", "keywordprg", "kp", "equalprg",
                                  "ep", "formatprg", "fp"})
_VIM_PATH_OPTIONS = frozenset({"runtimepath", "rtp", "packpath", "pp"})
_VIM_SET = re.compile(r"\s*(?:se|set|setl|setlocal|setg|setglobal)\s+(.*)", re.S)


def _vim_settings(inv: Invocation, command: str, index: int | None) -> None:
    """``:set shell=/tmp/sh``, ``:set makeprg=…`` name a program vim runs later (judged as one,
    :func:`~.programs.judge_program`); ``:set rtp^=DIR`` (``packpath``) makes it load the plugins
    and scripts of DIR (:func:`~.devtools.foreign_file`)."""
    from stockade.analyzer.models.devtools import foreign_file
    from stockade.analyzer.models.programs import judge_program

    for part in command.split("|"):
        match = _VIM_SET.match(part)
        if match is None:
            continue
        for setting in re.split(r"(?<!\\)\s+", match.group(1).strip()):
            pair = re.match(r"(\w+)([-+^]?=|:)(.*)", setting, re.S)
            if pair is None:
                continue
            name, value = pair.group(1), pair.group(3).replace("\\ ", " ")
            if not value or UNKNOWN in value:
                continue
            if name in _VIM_PROGRAM_OPTIONS:
                judge_program(inv.walker, value, inv.at(index), f"vim's `{name}` option")
            elif name in _VIM_PATH_OPTIONS:
                for entry in value.split(","):
                    if entry and entry not in ("$VIMRUNTIME", "$VIM"):
                        foreign_file(inv, entry, index, f"vim's `{name}` option")


def _ex_stdin(inv: Invocation) -> None:
    """Ex mode (``ex``, ``vim -e``/``-es``) reads its commands from standard input: known text is
    judged command by command (as ``-c`` commands are), text not known is unknown code."""
    from stockade.analyzer.models.text import _ex_command, _ex_commands

    text = inv.stdin.text
    if text is None or UNKNOWN in text:
        inv.unknown(f"`{inv.name}` runs editor commands from {inv.stdin.what}, which cannot be seen into")
        return
    for line in text.split("\n"):
        if line.strip() and not line.lstrip().startswith('"'):
            _vim_settings(inv, line, None)
            for command in _ex_commands(line):
                _ex_command(inv, command, 0)


_EMACS_MODEL = MODELS.get("emacs")


def model_emacs(inv: Invocation) -> None:
    """emacs: as coderunners.py's model; a lisp file loaded (``-l``, ``--load``, ``--script``,
    ``-x``) runs code that cannot be seen into."""
    if _EMACS_MODEL is not None:
        _EMACS_MODEL(inv)
    argv = inv.argv
    for index, word in enumerate(argv[1:], start=1):
        name, eq, attached = word.partition("=")
        if name in ("-l", "--load", "-load", "--script", "-script", "-x"):
            value = attached if eq else (argv[index + 1] if index + 1 < len(argv) else "")
            if value:
                _command_file(inv, value, index if eq else index + 1, f"emacs {name}", "lisp code")


# -- package scripts this command wrote --------------------------------------------------------

_JS_MODELS: dict[str, Model] = {name: MODELS[name] for name in ("npm", "pnpm", "yarn", "bun") if name in MODELS}
#: subcommand → the package scripts it runs (None: the script named by the next word)
_JS_SCRIPTS: dict[str, tuple[str, ...] | None] = {
    "run": None, "run-script": None, "rr": None, "urn": None, "test": ("pretest", "test", "posttest"),
    "t": ("pretest", "test", "posttest"), "tst": ("pretest", "test", "posttest"),
    "start": ("prestart", "start", "poststart"), "stop": ("prestop", "stop", "poststop"),
    "restart": ("prerestart", "restart", "postrestart"),
    "install": ("preinstall", "install", "postinstall", "prepare"), "i": ("preinstall", "install", "postinstall",
                                                                          "prepare"),
    "ci": ("preinstall", "install", "postinstall", "prepare"), "add": ("preinstall", "install", "postinstall",
                                                                       "prepare"),
}


def model_js_scripts(inv: Invocation) -> None:
    """npm/pnpm/yarn/bun: their models, plus — when this command wrote ``package.json`` — the
    package scripts the subcommand runs (``test``, ``run NAME``, ``yarn NAME``, install
    hooks): walked when its content is known, unknown code when not."""
    _JS_MODELS[inv.name](inv)
    walker = inv.walker
    path = inv.path("package.json")
    producer = written_by(walker, path)
    if producer is None:
        return
    words = [(word, index) for index, word in enumerate(inv.argv[1:], start=1) if word[:1] != "-"]
    if not words:
        names: tuple[str, ...] = ("preinstall", "install", "postinstall", "prepare") if inv.name != "bun" else ()
        index = 0
    else:
        sub, index = words[0]
        found = _JS_SCRIPTS.get(sub, ())
        if found is None:
            names = (f"pre{words[1][0]}", words[1][0], f"post{words[1][0]}") if len(words) > 1 else ()
        elif found == () and inv.name in ("yarn", "pnpm", "bun") and sub not in ("exec", "dlx", "x", "config"):
            names = (f"pre{sub}", sub, f"post{sub}")  # `yarn build`: a script of that name
        else:
            names = found
    if not names:
        return
    text = known_content(walker, path)
    scripts = None
    if text is not None:
        import json

        try:
            data = json.loads(text)
        except ValueError:
            data = None
        scripts = data.get("scripts", {}) if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        inv.unknown(f"`{inv.name}` runs the scripts of `package.json`, which {producer} wrote earlier in this "
                    "command: they cannot be seen into", index)
        return
    for name in names:
        code = scripts.get(name)
        if isinstance(code, str):
            inv.script(code, index, what=f"the package script `{name}`")


if None in (_GDB_MODEL, _EDITOR_MODEL, _EMACS_MODEL):  # pragma: no cover
    raise ImportError("models.launchers wraps the models of coderunners.py and text.py: import it after them")
register(LOADERS, model_loader)
register("exe", model_proc_exe)
register(_LAUNCHERS, model_launcher)
register("expect", model_expect)
register("lldb lldb-15 lldb-16 lldb-17 lldb-18 lldb-19", model_lldb)
register("gdb cgdb", model_gdb)
register("vim vi nvim ex view gvim vimdiff nvimdiff gvimdiff rview rvim evim", model_editor)
register("emacs", model_emacs)
for _name in _JS_MODELS:
    register(_name, model_js_scripts)
