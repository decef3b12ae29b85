"""Shells, ``eval``/``source``, directory builtins, and language interpreters."""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import Parsed, parse_options, register, visible_operands
from stockade.analyzer.regex import LazyPattern
from stockade.analyzer.words import process_text

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "hush", "busybox-sh", "fish", "rbash", "yash", "posh",
                    "loksh", "oksh", "pdksh", "lksh", "ksh93", "osh", "bash5"})
_SHELL_VALUES = {"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}
_FISH_VALUES = {*_SHELL_VALUES, "-C", "--init-command"}  # (fish's code run before the rest; bash's -C is a flag)


def model_shell(inv: Invocation) -> None:
    """``sh -c CODE [name args…]`` is parsed and walked; ``sh FILE`` runs a script file
    (read); ``sh`` with code on stdin walks that code when known, otherwise it is code the
    analyzer cannot see (a download or decoded payload piped into a shell)."""
    # `+o NAME` / `+O NAME` turn options off: they are options, not the script operand
    argv = list(inv.argv)
    index = 1
    while index < len(argv) and (argv[index] in ("+o", "+O") or (argv[index][:1] == "+" and argv[index][1:].isalpha())):
        if argv[index] in ("+o", "+O"):
            argv[index] = "-" + argv[index][1]
            index += 2
        else:  # (`sh +e FILE`: a flag turned off, not the script)
            argv[index] = "-" + argv[index][1:]
            index += 1
    parsed = parse_options(argv, _FISH_VALUES if inv.name == "fish" else _SHELL_VALUES, stop_at_first_positional=True)
    command_mode = any(option == "-c" or (option.startswith("-") and not option.startswith("--") and "c" in option
                                          and len(option) == 2) for option, _, _ in parsed.options)
    interactive = any(option == "-i" or (option[:1] == "-" and option[1:2] != "-" and "i" in option)
                      for option, _, _ in parsed.options)
    for option, value, index in parsed.options:
        if option in ("-C", "--init-command") and value and inv.name == "fish":  # (run before the rest)
            inv.script(value, index, what=f"the code given to `fish {option}`")
        elif option in ("--rcfile", "--init-file") and value:
            inv.read(value, index)
            if interactive:  # (an interactive shell sources it first, `-c CODE` or not)
                text = process_text(inv.walker, value) if value.startswith("/dev/fd/") else None
                if text is not None:
                    inv.walker.nested_script(text, inv.at(index), exact=False, subshell=True, env=inv.env)
                else:
                    run_file(inv, value, index)
    words = list(parsed.positionals)
    if words and words[0][0] == "-":  # (`sh - ARGS`: a lone `-` ends the options, as `--` does)
        words = words[1:]
    if command_mode:
        if not words:
            inv.unknown("`-c` without code", None)
            return
        code, index = words[0]
        positional = [w for w, _ in words[1:]] or [inv.name]
        inv.script(code, index, positional=positional, what=f"the code given to `{inv.name} -c`")
        return
    if words and not parsed.has("-s"):
        script, index = words[0]
        text = process_text(inv.walker, script) if script.startswith("/dev/fd/") else None
        if text is not None:  # `bash <(echo CODE)`: the code is the producer's known output
            inv.walker.nested_script(text, inv.at(index), exact=False, subshell=True,
                                     positional=[w for w, _ in words], env=inv.env)
        elif script in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0") and inv.stdin.text is not None \
                and UNKNOWN not in inv.stdin.text:  # `sh /dev/stdin <<EOF`: the known text is the script
            inv.walker.nested_script(inv.stdin.text, inv.at(index), exact=False, subshell=True,
                                     positional=[w for w, _ in words], env=inv.env)
        elif script.startswith("/dev/fd/") or script in ("/dev/stdin", "-"):
            inv.unknown(f"`{inv.name}` runs a script produced by another command", index)
        else:
            run_file(inv, script, index)
            if index is not None:  # what the script is given: as an unmodelled program's arguments
                visible_operands(inv, index + 1)
        return
    _stdin_code(inv)


def _stdin_code(inv: Invocation) -> None:
    text = inv.stdin.text
    if text is None:
        inv.unknown(f"`{inv.name}` runs code from {inv.stdin.what}, which is not known before it runs")
    else:
        inv.walker.nested_script(text, inv.span, exact=False, subshell=True)


def model_eval(inv: Invocation) -> None:
    """``eval WORDS``: the words joined are code, run in this shell (its ``cd``, variables
    and functions stay); walked when known."""
    code = " ".join(inv.argv[1:])
    if UNKNOWN in code:
        inv.script(code, 1 if len(inv.argv) > 1 else None, what="the code given to `eval`")
        return
    inv.walker.nested_script(code, inv.at(1 if len(inv.argv) > 1 else None), exact=True, subshell=False,
                             env=inv.env)


def model_source(inv: Invocation) -> None:
    """``source FILE`` / ``. FILE``: runs a file in this shell — its content is not visible."""
    if len(inv.argv) > 1:
        if inv.argv[1] == "--":  # (`source -- FILE`: the options end; FILE is the next word)
            inv.argv = [inv.argv[0], *inv.argv[2:]]
            inv.spans = [inv.spans[0], *inv.spans[2:]]
            if len(inv.argv) < 2:
                return
        word = inv.argv[1]
        text = inv.stdin.text
        produced = process_text(inv.walker, word) if word.startswith("/dev/fd/") else None
        if produced is not None:  # `. <(echo CODE)`: the producer's known output, run in this shell
            saved = inv.walker.state.positional
            if len(inv.argv) > 2:  # (`. FILE ARGS`: the positional parameters while it runs)
                inv.walker.state.positional = [saved[0] if saved else "bash", *inv.argv[2:]]
            try:
                inv.walker.nested_script(produced, inv.at(1), exact=False, subshell=False, env=inv.env)
            finally:
                if len(inv.argv) > 2:
                    inv.walker.state.positional = saved
        elif word in ("/dev/stdin", "/proc/self/fd/0", "/dev/fd/0") and text is not None and UNKNOWN not in text:
            # `. /dev/stdin <<< 'code'`: known text, run in this shell
            inv.walker.nested_script(text, inv.at(1), exact=True, subshell=False)
        elif word.startswith("/dev/fd/") or word in ("/dev/stdin", "-"):
            inv.unknown("sources code produced by another command", 1)
        else:
            for path in _source_candidates(inv, word):
                run_file(inv, path, 1)


def _source_candidates(inv: Invocation, word: str) -> list[str]:
    """The files ``source WORD`` may read: a name without ``/`` is looked up in ``$PATH``
    first (bash's ``sourcepath``), then in the working directory — each entry this command
    put in ``PATH`` (``PATH=~/.ssh:$PATH; source id_rsa`` reads ``~/.ssh/id_rsa``), up to the
    inherited part, whose directories hold the system's files; else ``WORD`` itself."""
    path = inv.env.get("PATH") if inv.env else None
    if path is None:
        path = inv.walker.state.variables.get("PATH")
    if "/" in word or path is None:
        return [word]
    found: list[str] = []
    for entry in path.split(":")[:16]:
        if UNKNOWN in entry:
            if entry != UNKNOWN:  # (an entry not known: the file could be anywhere)
                found.append(UNKNOWN + "/" + word)
            break  # (the inherited search path: from here on, the system's directories)
        found.append(entry.rstrip("/") + "/" + word if entry else word)
    if word not in found:
        found.append(word)
    return list(dict.fromkeys(found))


def model_cd(inv: Invocation) -> None:
    """``cd DIR`` / ``pushd DIR|+N|-N`` / ``popd [+N|-N]``: the working directory of later
    commands and the directory stack (``cd -`` goes to ``$OLDPWD``; a relative ``DIR`` is
    looked up in ``$CDPATH`` first: bash takes the first entry where it exists, which the
    analyzer cannot see, so the first entry is assumed)."""
    walker = inv.walker
    state = walker.state
    name = inv.name
    args = [a for a in inv.argv[1:]
            if not (a.startswith("-") and a != "-" and not (name != "cd" and a[1:].isdigit()))]
    no_cd = name != "cd" and "-n" in inv.argv[1:]
    old = state.cwd
    stack = [state.cwd, *reversed(state.dirstack)]  # as `dirs` lists it
    if name in ("pushd", "popd") and args and args[0][:1] in ("+", "-") and args[0][1:].isdigit():
        number = int(args[0][1:])
        index = number if args[0][0] == "+" else len(stack) - 1 - number
        if not 0 <= index < len(stack) or (name == "pushd" and len(stack) == 1 and index):
            _set_stack(walker, [UNKNOWN])
            return
        if name == "pushd":
            stack = stack[index:] + stack[:index]
        else:
            del stack[index]
            if not stack:
                stack = [UNKNOWN]
        _set_stack(walker, stack)
        return
    if name == "popd":
        if no_cd and len(stack) > 1:
            del stack[1]
        else:
            stack = stack[1:] or [UNKNOWN]
        _set_stack(walker, stack)
        return
    if name == "pushd" and not args:
        if len(stack) < 2:
            _set_stack(walker, [UNKNOWN])
            return
        stack[0], stack[1] = stack[1], stack[0]
        _set_stack(walker, stack)
        return
    prefix = inv.env or {}  # `CDPATH=… cd x`, `HOME=… cd`: the assignments hold for this cd
    target = args[0] if args else _home_of(prefix, state.variables)
    if target == "~":
        target = walker.home
    if target == "-" and name == "cd":
        previous = state.variables.get("OLDPWD")
        new = previous if previous else UNKNOWN
    else:
        new = inv.path(_cdpath(prefix.get("CDPATH", state.variables.get("CDPATH")), target))
    if UNKNOWN in new:
        new = UNKNOWN
    if name == "pushd":
        if no_cd:
            stack.insert(1, new)
        else:
            stack.insert(0, new)
        _set_stack(walker, stack)
    else:
        state.cwd = new
    if state.cwd != old:
        state.variables["OLDPWD"] = old


def _home_of(prefix: dict[str, str], variables: dict[str, str]) -> str:
    """Where a ``cd`` without operands goes: ``$HOME`` as assigned (``HOME=/etc; cd``), else home."""
    home = prefix.get("HOME") or variables.get("HOME")
    return home if home else "~"


def _cdpath(cdpath: str | None, target: str) -> str:
    """The directory ``cd TARGET`` goes to with ``$CDPATH`` set (its first entry, see model_cd)."""
    if not cdpath or target.startswith(("/", "./", "../", "~")) or target in (".", ".."):
        return target
    entry = cdpath.split(":")[0] or "."
    return entry.rstrip("/") + "/" + target


def _set_stack(walker: object, stack: list[str]) -> None:
    """Make ``stack`` (as ``dirs`` lists it: the working directory first) the walker's."""
    state = walker.state  # type: ignore[attr-defined]
    if state.cwd != stack[0]:
        state.variables["OLDPWD"] = state.cwd
    state.cwd = stack[0]
    state.dirstack = list(reversed(stack[1:]))


def _trap_code(inv: Invocation, code: str, index: int) -> str:
    """The code a trap runs: ``code`` as expanded when the trap is set, or — when that holds a
    value not known, from a plain double-quoted word (``trap "kill $pid" EXIT``) — the word as
    written, whose variables the walk expands (they still hold the values they had)."""
    if UNKNOWN not in code:
        return code
    start, end = inv.at(index)
    raw = inv.walker.command[start:end]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"' and not any(char in raw[1:-1] for char in '"`\\') and \
            "$(" not in raw:
        return raw[1:-1]
    return code


def model_trap(inv: Invocation) -> None:
    """``trap CODE SIGNALS``: the code runs later, in this shell."""
    args = [a for a in inv.argv[1:] if a not in ("-p", "-l", "--")]
    walker = inv.walker
    if len(args) >= 2 and args[0] not in ("-", ""):
        at = inv.argv.index(args[0])
        args = [_trap_code(inv, args[0], at), *args[1:]]
    if len(args) >= 2 and all(signal.upper() in ("EXIT", "0", "SIGEXIT") for signal in args[1:]):
        # the code runs when the shell exits: walked then, with the variables it will see (a
        # later `trap … EXIT` replaces it, `trap - EXIT` removes it)
        if args[0] in ("-", ""):
            walker.exit_trap = None
        else:
            code, index = args[0], at
            walker.exit_trap = lambda: inv.script(code, index, what="the code given to `trap`")
        return
    if len(args) >= 2 and args[0] not in ("-", ""):
        inv.script(args[0], at, what="the code given to `trap`")


def model_alias(inv: Invocation) -> None:
    """``alias name=CODE``: the code runs whenever the alias is used; walked now, and kept for
    the commands that use it (see :func:`~stockade.analyzer.exec.run_command`)."""
    walker = inv.walker
    for index, word in enumerate(inv.argv[1:], start=1):
        name, eq, value = word.partition("=")
        if eq:
            inv.script(value, index, what="the code of an alias")
            if UNKNOWN not in name:
                walker.aliases = {**(walker.aliases or {}), name: value}
            else:
                walker.aliases = None


def model_unalias(inv: Invocation) -> None:
    """``unalias [-a] NAME…``: the aliases are gone (``-a``: all of them)."""
    walker = inv.walker
    if walker.aliases is None:
        return
    if "-a" in inv.argv[1:]:
        walker.aliases = None
        return
    walker.aliases = {name: value for name, value in walker.aliases.items() if name not in inv.argv[1:]} or None


def model_let(inv: Invocation) -> None:
    """``let EXPR``: arithmetic; variable values with subscripts run code; ``let x=EXPR`` assigns
    (see :func:`_let_assigns`)."""
    from stockade.analyzer.models.shellstate import integer_assignment

    for index, word in enumerate(inv.argv[1:], start=1):
        if "$(" in word or "`" in word:
            inv.walker.nested_script(": " + word, inv.at(index), exact=False)
        else:  # (`let y=x+1`: the value of each name is evaluated, a subscript in it runs code)
            integer_assignment(inv.walker, word, inv.at(index))
        _let_assigns(inv, word)


_LET_ASSIGN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<<|>>|[-+*/%&|^])?=(?!=)(.*)$", re.S)
_LET_STEP = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)\s*(?:\+\+|--)|(?:\+\+|--)\s*([A-Za-z_][A-Za-z0-9_]*))\s*$")


def _let_assigns(inv: Invocation, word: str) -> None:
    """``let x=1+1`` sets ``x`` to the value (when its operands are known, see
    :mod:`stockade.analyzer.arith`); ``let x+=1``, ``let x++`` leave it not known."""
    from stockade.analyzer.arith import evaluate

    variables = inv.walker.state.variables
    match = _LET_ASSIGN.match(word)
    if match is not None:
        name, operator, expression = match.groups()
        value = None if operator else evaluate(expression, inv.walker.lookup)
        variables[name] = UNKNOWN if value is None else value
        return
    step = _LET_STEP.match(word)
    if step is not None:
        variables[step.group(1) or step.group(2)] = UNKNOWN


# interpreters: option → what its value is
_INTERPRETERS: dict[str, dict[str, str]] = {
    "python python2 python3 pypy pypy3": {"-c": "code", "-m": "module", "-W": "text", "-X": "text", "-Q": "text"},
    "ipython ipython3": {"-c": "code", "-m": "module", "--profile": "text", "--ipython-dir": "text",
                         "--profile-dir": "text", "--colors": "text", "--logfile": "text"},
    "node nodejs": {"-e": "code", "--eval": "code", "-p": "code", "--print": "code", "-r": "read",
                    "--require": "read", "--import": "read", "--input-type": "text", "--loader": "read",
                    "--experimental-loader": "read", "--env-file": "read", "--env-file-if-exists": "read",
                    "--test": "tests",
                    # (files and directories it writes or loads: judged in buildtools.model_interpreter)
                    **dict.fromkeys(("--cpu-prof-dir", "--heap-prof-dir", "--diagnostic-dir", "--report-directory",
                                     "--report-dir", "--redirect-warnings", "--trace-event-file-pattern",
                                     "--snapshot-blob", "--experimental-config-file", "--cpu-prof-name",
                                     "--heap-prof-name", "--report-filename", "--title", "--conditions", "-C",
                                     "--trace-event-categories", "--unhandled-rejections", "--dns-result-order",
                                     "--watch-path"), "text")},
    "perl": {"-e": "code", "-E": "code", "-M": "text", "-m": "text", "-I": "text", "-x": "text"},
    "ruby": {"-e": "code", "-r": "text", "-I": "text", "-E": "text"},
    "php": {"-r": "code", "-B": "code", "-R": "code", "-E": "code", "-f": "script", "-d": "text", "-c": "read"},
    "lua luajit": {"-e": "code", "-l": "text"},
    "Rscript": {"-e": "code"},
    "R": {"-e": "code", "-f": "script", "--file": "script"},
    "osascript": {"-e": "code", "-l": "text", "-s": "text"},
    "tclsh wish": {},
    "jshell runghc": {}, "irb": {"-r": "read", "-I": "text"},
    "ghci": {"-e": "code"}, "iex": {"-e": "code", "--eval": "code", "-r": "read", "-S": "text"},
    "groovy scala clojure racket": {"-e": "code"},
    "julia": {"-e": "code", "-E": "code", "--eval": "code", "--print": "code", "-L": "read", "--load": "read",
              "--project": "text", "-t": "text", "--threads": "text", "-J": "read", "--sysimage": "read"},
    "elixir": {"-e": "code", "--eval": "code", "-r": "read", "--require": "read"},
    "guile": {"-c": "code", "-l": "read", "-e": "text"},
    "sbcl": {"--eval": "code", "--load": "read", "--script": "read"},
    # (shells of other languages than sh's: their code is not walked as shell code — csh's,
    # when it parses as sh, is also walked as sh's: see _csh_as_sh)
    "tcsh csh xonsh elvish ion murex": {"-c": "code"},
    "nu nushell": {"-c": "code", "--commands": "code", "-e": "code", "--execute": "code"},
    "swipl": {"-g": "code", "-t": "code", "-f": "read", "-s": "read", "-l": "read"},
    "bb babashka": {"-e": "code", "--eval": "code", "-f": "script", "--file": "script", "-m": "text", "--main": "text"},
    "ocaml utop": {"-e": "code", "-I": "text"},
    "gforth": {"-e": "code", "--evaluate": "code"},
    "pwsh-never": {},
    "ts-node tsx": {"-e": "code", "--eval": "code", "-p": "code", "--print": "code", "-r": "read",
                    "--require": "read"},
    # (more languages' one-liners: code that cannot be seen into)
    "ghc": {"-e": "code"}, "clisp": {"-x": "code"}, "ecl": {"-eval": "code", "--eval": "code"},
    "raku perl6 rakudo": {"-e": "code", "-M": "text", "-I": "text"}, "pike": {"-e": "code"},
    "scala-cli": {"-e": "code", "--execute-script": "code", "--execute-scala": "code"},
    "amm": {"-c": "code", "--code": "code"}, "clj clojure": {"-e": "code", "--eval": "code"},
    "chez chezscheme scheme petite": {"--script": "script"}, "gawk-never": {},
    "ysh oil osh es rc": {"-c": "code"},
    "awk-never": {},
}
# (Lisp and Scheme systems, the JDK's script shell and swift: inline code too)
_INTERPRETERS.update({
    "csi": {"-e": "code", "-eval": "code", "-p": "code", "-print": "code", "-s": "script", "-script": "script"},
    "chibi-scheme": {"-e": "code", "-p": "code"}, "gsi": {"-e": "code"}, "gxi": {"-e": "code"},
    "jrunscript": {"-e": "code", "-f": "script", "-l": "text"}, "swift": {"-e": "code"},
    "ccl ccl64": {"-e": "code", "--eval": "code", "-l": "script", "--load": "script"},
})


#: interpreter flags that print information and run no code
_INFO_FLAGS = frozenset({"--version", "-V", "-v", "--help", "-h", "-VV"})
_PYTHON_INFO_FLAGS = _INFO_FLAGS - {"-v"}  # (python -v is verbose mode: it reads code from stdin)
#: modules run with ``python -m`` that are tools with a model of their own
_MODULE_TOOLS = {"pip": "pip", "pip3": "pip", "venv-never": "", "http.server-never": "", "IPython": "ipython",
                 "twine": "twine", "pipx": "pipx", "awscli": "aws", "pre_commit": "pre-commit", "jupyter": "jupyter",
                 "pytest": "pytest", "poetry": "poetry", "uv": "uv", "tox": "tox", "nox": "nox", "build": "py:build"}
#: modules run with ``python -m`` that read code from standard input (a REPL, a debugger) or run
#: the script given to them
_MODULE_REPLS = frozenset({"code", "asyncio", "pdb", "idlelib"})
_MODULE_SCRIPT_RUNNERS = frozenset({"pdb"})  # (cProfile, profile, trace: writers.model_py_profile)
#: modules run with ``python -m`` that import or run the files or modules their operands name
#: (``-m doctest f.py``, ``-m unittest tests.test_x``, ``-m pydoc ./m.py``, ``-m runpy m``)
_MODULE_FILE_RUNNERS = frozenset({"doctest", "unittest", "pydoc", "runpy"})


def module_operands(inv: Invocation, module: str, start: int) -> None:
    """The operands of a :data:`_MODULE_FILE_RUNNERS` module: a path is a file it runs (a read;
    unknown code when this command wrote it), a dotted name the module file it imports (unknown
    code when this command wrote ``name.py`` or ``name/__init__.py``)."""
    from stockade.analyzer.models.fresh import written_by, wrote_anything

    argv = inv.argv
    if module == "unittest":
        _unittest_discovery(inv, start)
    for at in range(start, len(argv)):
        word = argv[at]
        if word[:1] == "-" or UNKNOWN in word or (module == "unittest" and word == "discover"):
            continue
        if "/" in word or word.endswith((".py", ".txt", ".rst", ".md")):
            run_file(inv, word, at)
        elif wrote_anything(inv.walker) and re.fullmatch(r"[A-Za-z_][\w.]*", word):
            base = word.replace(".", "/")
            for candidate in (base + ".py", base + "/__init__.py", base.rpartition("/")[0] + ".py"):
                producer = written_by(inv.walker, inv.path(candidate), False) if candidate != ".py" else None
                if producer is not None:
                    inv.unknown(f"`{module}` imports `{show(word)}` from `{show(candidate)}`, which "
                                f"{producer} wrote earlier in this command: code that cannot be seen into", at)
                    break


def _unittest_discovery(inv: Invocation, start: int) -> None:
    """``python -m unittest`` without operands, or ``… discover [-s DIR] [-p PATTERN] [DIR
    [PATTERN]]``: it imports the test modules it finds below the start directory (``test*.py``
    by default): one this command wrote is code that cannot be seen into."""
    from fnmatch import fnmatchcase

    from stockade.analyzer.models.fresh import fresh_found

    words = inv.argv[start:]
    operands = [word for word in words if word[:1] != "-"]
    if operands and operands[0] != "discover":
        return
    rest = [word for word in words if word != "discover"] if operands else words
    parsed = parse_options(["discover", *rest],  # (the first word stands for the program)
                           {"-s", "--start-directory", "-p", "--pattern", "-t", "--top-level-directory", "-k"})
    places = [word for word, _ in parsed.positionals]
    starts = parsed.values_of("-s", "--start-directory")
    patterns = parsed.values_of("-p", "--pattern")
    directory = starts[-1][0] if starts else places[0] if places else "."
    pattern = patterns[-1][0] if patterns else places[1] if len(places) > 1 else "test*.py"
    if UNKNOWN in pattern:
        pattern = "*.py"
    fresh_found(inv, directory, lambda name: fnmatchcase(name, pattern), "imports the tests in", start - 1)


def _node_fallback_written(inv: Invocation, path: str, index: int | None) -> None:
    """``require("./x.json")`` loads ``x.json.js`` (or ``x.json/index.js`` …) when ``x.json``
    is not there: one that this command wrote is code that cannot be seen into."""
    from stockade.analyzer.models.fresh import written_by, wrote_anything
    from stockade.analyzer.models.inline import JS_FALLBACKS

    if not wrote_anything(inv.walker):
        return
    for ending in JS_FALLBACKS:
        producer = written_by(inv.walker, inv.path(path + ending))
        if producer is not None:
            inv.unknown(f"`{inv.name}` loads `{show(path + ending)}` for `require(\"{show(path)}\")` when "
                        f"`{show(path)}` is not there; {producer} wrote it earlier in this command: code that "
                        "cannot be seen into", index)
            return


#: what perl's ``-M``/``-m`` take: a module, its import list (``-MList::Util=sum,max``), ``-`` for ``no``
_PERL_MODULE = re.compile(r"-?[A-Za-z_][\w:]*(?:=[\w:,$@%&-]*)?")


def _csh_as_sh(inv: Invocation, code: str, index: int | None) -> None:
    """``csh -c CODE``: csh's simple commands, pipes, lists, quotes, ``~`` and ``>``/``>>``
    redirections are read as sh reads them, so code that parses as sh is also walked as sh
    code (what it visibly runs and touches; csh's own syntax stays unknown)."""
    from stockade.analyzer.parse import UnsafeText, first_error, parse

    if UNKNOWN in code:
        return
    try:
        if first_error(parse(code).tree) is not None:
            return
    except UnsafeText:
        return
    inv.script(code, index, what=f"the `{inv.name} -c` code, read as sh's")


def interpreter_model(options: dict[str, str]):
    """A model for a language interpreter: inline code is unknown, a script file is read,
    code on stdin is unknown."""
    values = {name for name, role in options.items() if role not in ("flag", "tests")}

    def model(inv: Invocation) -> None:
        parsed = parse_options(inv.argv, values, stop_at_first_positional=True)
        info = _INFO_FLAGS if not inv.name.startswith(("python", "pypy")) else _PYTHON_INFO_FLAGS
        if not parsed.positionals and parsed.options and all(option in info for option, _, _ in parsed.options):
            return  # `python3 --version`, `node -v`: prints a version, runs no code
        if _node_test_runner(inv, parsed):
            return
        script_option: tuple[str, int] | None = None
        for option, value, index in parsed.options:
            role = options.get(option)
            if role == "code":
                from stockade.analyzer.models.inline import harmless_inline
                from stockade.analyzer.models.pipefill import ENDLESS

                if inv.name.startswith(("python", "pypy", "node")) and any(  # (after python's code: its argv)
                        other in ("-i", "--interactive") and (inv.name.startswith("node") or (at or 0) < (index or 0))
                        for other, _, at in parsed.options):
                    inv.unknown(f"`{inv.name} -i` runs the code it reads from {inv.stdin.what} after this code", index)

                opened = harmless_inline(inv.name, value, inv.stdin.what.startswith(ENDLESS)) \
                    if value and UNKNOWN not in value else None
                if opened is not None:  # (code that only computes and prints: what it opens is read)
                    for path in opened:
                        inv.read(path, index)
                        if inv.name.startswith("node"):
                            _node_fallback_written(inv, path, index)
                    named_paths(inv, value or "", index, urls=False)  # (it only computes: a URL is text)
                    return
                inv.unknown(f"inline `{inv.name}` code (`{show(value or '')[:60]}`) cannot be seen into", index)
                named_paths(inv, value or "", index)
                if inv.name in ("csh", "tcsh") and value:
                    _csh_as_sh(inv, value, index)
                return
            if role == "module":
                rest = [w for w in inv.argv[index + 1:] if not w.startswith("-")] if index is not None else []
                if value in _MODULE_TOOLS and index is not None and inv.name.startswith(("python", "pypy")):
                    # python -m pip …, -m IPython …, -m twine …: the tool's own model
                    inv.run(index, argv=[_MODULE_TOOLS[value], *inv.argv[index + 1:]],
                            spans=inv.spans[index:])
                elif value in _MODULE_SCRIPT_RUNNERS and rest and index is not None:  # (`-m trace --trace f.py`)
                    if rest[0] in ("/dev/stdin",) or rest[0].startswith("/dev/fd/"):
                        inv.unknown(f"`{inv.name} -m {value}` runs code from {inv.stdin.what}", index)
                    else:
                        run_file(inv, rest[0], inv.argv.index(rest[0], index + 1))
                elif value in _MODULE_FILE_RUNNERS and index is not None:
                    module_operands(inv, value, index + 1)
                elif value in _MODULE_REPLS and index is not None:  # (`echo CODE | python3 -m code`)
                    inv.unknown(f"`{inv.name} -m {value}` runs code from {inv.stdin.what}, which cannot be seen into",
                                index)
                    if inv.stdin.text is not None and UNKNOWN not in inv.stdin.text:
                        named_paths(inv, inv.stdin.text, index)
                elif index is not None:  # an installed module: its arguments as an unmodelled program's
                    visible_operands(inv, index + 1)
                return
            if option in ("-M", "-m") and value and inv.name.startswith("perl") and \
                    not _PERL_MODULE.fullmatch(value):  # (`-Mstrict;system("…")`: `use strict;system("…");`)
                inv.unknown(f"`{inv.name} {option}{show(value)[:60]}` runs the code after the module's name", index)
                named_paths(inv, value, index)
            if option == "-X" and value is not None and value.startswith("pycache_prefix="):
                inv.write(value.partition("=")[2] or ".", index, recursive=True)  # (compiled modules written there)
            if option == "-W" and value is not None and inv.name.startswith(("python", "pypy")):
                from stockade.analyzer.models.envvars import warning_imports

                if warning_imports(value):  # (`-W ignore::evil.X` imports `evil`)
                    inv.unknown(f"`{inv.name} -W {show(value)}` imports the module of a warning category", index)
            if role == "read" and value:  # (code it loads: `node -r F`, `php -c F`: unknown when this text wrote F)
                run_file(inv, value, index)
            elif role == "script" and value:  # (`php -f FILE`, `R -f FILE`: the script, as an operand would be)
                script_option = (value, index)
        if any(options.get(option) == "tests" for option, _, _ in parsed.options):
            # `node --test [FILES]`: runs the project's test files (the named ones, or those it
            # finds below the working directory), as a test runner does
            for word, index in parsed.positionals:
                run_file(inv, word, index)
            return
        if script_option is not None:
            if script_option[0] in ("-", "/dev/stdin") or script_option[0].startswith("/dev/fd/"):
                inv.unknown(f"`{inv.name}` runs code from {inv.stdin.what}", script_option[1])
            else:
                run_file(inv, *script_option)
            return
        if parsed.positionals:
            script, index = parsed.positionals[0]
            if script in ("-", "/dev/stdin") and _stdin_one_liner(inv, index):
                return
            if script == "-" or script.startswith("/dev/fd/") or script == "/dev/stdin":
                produced = process_text(inv.walker, script) if script.startswith("/dev/fd/") else inv.stdin.text
                where = "another command" if script.startswith("/dev/fd/") and produced is not None else \
                    inv.stdin.what
                inv.unknown(f"`{inv.name}` runs code from {where}", index)
                if produced is not None:  # (`python3 <(echo CODE)`, `python3 - <<EOF`: what the code names)
                    named_paths(inv, produced, index)
            else:
                run_file(inv, script, index)
                if index is not None:  # what the script is given: as an unmodelled program's arguments
                    visible_operands(inv, index + 1)
                    _setup_py(inv, script, index)
            return
        if _stdin_one_liner(inv, None):
            return
        inv.unknown(f"`{inv.name}` runs code from {inv.stdin.what}, which cannot be seen into")
        if inv.stdin.text is not None and UNKNOWN not in inv.stdin.text:  # (`python3 <<EOF`: what the code names)
            named_paths(inv, inv.stdin.text, None)

    return model


#: ``setup.py`` commands that install, and the options that say where
_SETUP_INSTALLS = frozenset({"install", "develop", "easy_install", "install_lib", "install_scripts", "install_data"})
_SETUP_PLACES = ("--prefix", "--root", "--home", "--install-lib", "--install-scripts", "--install-data",
                 "--install-base", "--install-platbase", "--install-dir", "-d", "--script-dir", "-s")


def _setup_py(inv: Invocation, script: str, index: int) -> None:
    """``python setup.py install|develop [--user | --prefix=DIR …]``: the project's own setup
    code runs (judged as an existing script), and the install writes the user's site-packages
    and scripts (``~/.local``) with ``--user``, else the directory an option names."""
    if not inv.name.startswith(("python", "pypy")) or script.rpartition("/")[2] != "setup.py":
        return
    words = inv.argv[index + 1:]
    if not _SETUP_INSTALLS.intersection(words):
        return
    for position, word in enumerate(words, start=index + 1):
        name, eq, value = word.partition("=")
        if name == "--user":
            inv.write("~/.local", position, recursive=True)
        elif name in _SETUP_PLACES:
            target = value if eq else (inv.argv[position + 1] if position + 1 < len(inv.argv) else "")
            if target:
                inv.write(target, position, recursive=True)


#: node's test runner options that take a value (``--test-name-pattern=…``, ``--test-reporter …``)
_NODE_TEST_VALUES = frozenset({"--test-name-pattern", "--test-reporter", "--test-reporter-destination",
                               "--test-concurrency", "--test-timeout", "--test-shard", "--test-skip-pattern"})


def _node_test_runner(inv: Invocation, parsed: Parsed) -> bool:
    """``node --test`` without files runs the project's own test files (found below the working
    directory, as ``npm test`` runs its scripts): nothing this text does not show is assumed.
    Code given inline or loaded by ``-r``/``--import`` keeps the interpreter's judgement."""
    if not inv.name.startswith("node") or parsed.positionals:
        return False
    options = [option for option, _, _ in parsed.options]
    if "--test" not in options:
        return False
    allowed = {"--test", "--test-only", "--experimental-test-coverage", "--watch", "--experimental-test-snapshots",
               *_NODE_TEST_VALUES}
    for option, value, index in parsed.options:
        if option.startswith("--test-reporter-destination") and value:
            inv.write(value, index)
    return all(option in allowed or option.split("=", 1)[0] in allowed for option in options)


def _stdin_one_liner(inv: Invocation, index: int | None) -> bool:
    """Code on stdin that is known (a here-document) and only computes and prints (see
    :mod:`.inline`): its literal files are read and nothing else is assumed.  Known code that
    does more keeps the unknown verdict, with the paths and shell commands written in it judged."""
    from stockade.analyzer.models.inline import harmless_inline

    text = inv.stdin.text
    if text is None or UNKNOWN in text:
        return False
    opened = harmless_inline(inv.name, text)
    if opened is None:
        named_paths(inv, text, index)
        return False
    for path in opened:
        inv.read(path, index)
    named_paths(inv, text, index)
    return True


_PATH_LITERAL = LazyPattern(r"""(?<![\w$])(['"])((?:~|/|\.\.?/|\.\w)[^'"\n$`{}]*|[\w.-]+(?:/[\w.-]+)+)\1""")


#: a call that runs a shell command line given as a string literal (``os.system("…")``,
#: ``subprocess.run("…", shell=True)``, ``child_process.execSync("…")``, Ruby/Perl ``system "…"``,
#: Lua ``os.execute``, PHP ``shell_exec``, AppleScript ``do shell script "…"``): the literal (group 2; no backslash but ``\"``)
_SHELL_CALL = LazyPattern(
    r"""(?<![\w])(?:os\.(?:system|popen|execute|popen[234])|subprocess\.(?:run|call|check_call|check_output|Popen|"""
    r"""getoutput|getstatusoutput)|commands\.getoutput|(?:child_process\.|cp\.)?(?:execSync|spawnSync)|"""
    r"""child_process\.exec|(?<=\)\.)(?:run|call|check_call|check_output|Popen|getoutput|exec)|"""
    r"""(?<=\w\.)(?:check_call|check_output|Popen|getoutput|getstatusoutput)|system|popen|shell_exec|passthru|"""
    r"""proc_open|IO\.popen|Open3\.\w+|do\s+shell\s+script)"""
    r"""\s*[({]?\s*(?<![fF])(['"])((?:[^'"\\\n]|\\")*)\1""")
#: Perl, Ruby and PHP run a backquoted string (and Perl's ``qx{…}``, Ruby's ``%x(…)``) as a shell command
_BACKTICKS = LazyPattern(r"""`([^`\\$]*)`|\bqx\s*([{(\[<|/!])|%x([({\[])""")
_CLOSING = {"{": "}", "(": ")", "[": "]", "<": ">"}
#: Perl's and Ruby's quote operators as the command line of a call that runs a shell
#: (``system q(cat ~/.netrc)``, ``exec qq{…}``, Ruby ``system %q(…)``): the opening delimiter
_QUOTED_CALL = LazyPattern(r"""(?<![\w$])(?:system|exec)\s*\(?\s*(?:qq?|%[qQ]?)\s*([{(\[<|/!])""")
#: calls that delete or write the file named by a string literal (``shutil.rmtree("/x")``,
#: ``fs.writeFileSync("/x", …)``, ``shutil.copy("a", "/x")``; not ``open(…, "w")``, which code
#: often holds as text): (group 1: delete or write, group 3:
#: the path; a copy's or move's destination is its second argument)
_FILE_CALL = LazyPattern(
    r"""(?<![\w])(?:(rmtree|remove|unlink|rmdir|removedirs|rmSync|rmdirSync|unlinkSync|rm_rf|rm_r|rm_f|"""
    r"""remove_dir_all|remove_file|remove_tree|remove_dir|remove_entry(?:_secure)?|rimraf(?:Sync)?|removeSync|"""
    r"""emptyDirSync|rm(?=\s*\())|(writeFileSync|appendFileSync|write_text|write_bytes|"""
    r"""(?:copyfile|copy2?|copytree|move|rename|renameSync|copyFileSync|symlink|symlinkSync|cp|mv)"""
    r"""\s*\(\s*(?:['"][^'"\n]*['"]|[\w.]+)\s*,))\s*\(?\s*(['"])((?:~|/)[^'"\n$`{}]*)\3""")


#: Tcl's ``exec PROGRAM ARG…`` (at a command's start: the text's, a line's, after ``;``, ``[`` or
#: ``{``), its words a command line with ``|`` pipes and ``<``/``>`` redirections, as a shell's
_TCL_EXEC = LazyPattern(r"""(?:^|[\[;\n{])[ \t]*exec[ \t]+(?:-ignorestderr[ \t]+|-keepnewline[ \t]+|--[ \t]+)*"""
                        r"""([^\]\n;}]+)""")
#: Tcl's ``file delete ?-force? ?--? NAME…`` (group 1 the names, bare or quoted words)
_TCL_DELETE = LazyPattern(r"""\bfile[ \t]+delete(?:[ \t]+-force|[ \t]+--)*((?:[ \t]+(?:"[^"\n]*"|[^\s\];}]+))+)""")


def shell_strings(name: str, code: str) -> list[str]:
    """The shell command lines written as string literals in inline code of the language
    ``name`` runs (``os.system("rm -rf ~")``, perl's `` `cat ~/.netrc` ``), at most 16."""
    commands = [match.group(2).replace('\\"', '"') for match in _SHELL_CALL.finditer(code)]
    if name.startswith(("perl", "ruby", "php", "julia")) and ("`" in code or "qx" in code or "%x" in code):
        for match in _BACKTICKS.finditer(code):
            opener = match.group(2) or match.group(3)
            if opener is None:
                commands.append(match.group(1))
                continue
            end = code.find(_CLOSING.get(opener, opener), match.end())
            if end != -1:
                commands.append(code[match.end():end])
    if name.startswith(("perl", "ruby")) and ("q" in code or "%" in code):
        for match in _QUOTED_CALL.finditer(code):
            opener = match.group(1)
            end = code.find(_CLOSING.get(opener, opener), match.end())
            if end != -1 and "$" not in code[match.end():end] and "#{" not in code[match.end():end]:
                commands.append(code[match.end():end])
    if name in ("tclsh", "wish", "expect") and "exec" in code:
        commands += [match.group(1).strip() for match in _TCL_EXEC.finditer(code)]
    return commands[:16]


def named_commands(inv: Invocation, code: str, index: int | None) -> None:
    """Shell command lines written as string literals in code that cannot be seen into and
    handed to a shell (``os.system("rm -rf ~")``) are walked as the shell code they are: a
    denied effect visible there is denied, whatever else the code does."""
    if UNKNOWN in code or ("(" not in code and " " not in code):
        return
    for command in shell_strings(inv.name, code):
        if command.strip():
            inv.walker.nested_script(command, inv.at(index), exact=False, subshell=True)
    if "HOME" in code or "home" in code:  # (`rmtree($ENV{HOME})`, `FileUtils.rm_rf(Dir.home)`: as `"~"`)
        code = _BARE_HOME.sub('"~"', _home_spelled(code))
    if "expanduser" in code:  # (`os.remove(os.path.expanduser('~/.bashrc'))`: the literal)
        code = _EXPANDUSER.sub(r"\1\2\1", code)
    if inv.name in ("tclsh", "wish", "expect") and "delete" in code:  # (`file delete -force ~/.ssh`)
        for match in _TCL_DELETE.finditer(code):
            for word in match.group(1).split():
                inv.delete(word.strip('"'), index, recursive=True)
    for match in _FILE_CALL.finditer(code):
        if match.group(1):
            inv.delete(match.group(4), index, recursive=True)
        else:
            inv.write(match.group(4), index)


_OPEN_CALL = LazyPattern(r"""\b((?:open|fopen|readFileSync|readFile|createReadStream|writeFileSync|writeFile|"""
                         r"""appendFileSync|appendFile|createWriteStream|read_text|read_bytes|write_text|write_bytes|"""
                         r"""file_get_contents|file_put_contents|readfile|File\.read|File\.write|File\.open|"""
                         r"""IO\.read|IO\.write|Path))\s*\(\s*(['"])([^'"\n]{1,1024})\2(?:\s*,\s*(['"])([^'"\n]{0,8})\4)?""")


#: an expression for the home directory in a language's code: Perl ``$ENV{HOME}``, Ruby
#: ``ENV["HOME"]``/``Dir.home``, Python ``os.environ["HOME"]``/``Path.home()``, ``getenv("HOME")``
#: (C, PHP, Lua, Python), Node ``os.homedir()``/``process.env.HOME``, Julia ``homedir()``
_HOME_EXPR = (r"""(?:\$ENV\{\s*['"]?HOME['"]?\s*\}|\bENV(?:\.fetch\(|\[)\s*['"]HOME['"]\s*[\])]|"""
              r"""\benviron(?:\.get\(|\[)\s*['"]HOME['"]\s*[\])]|\bgetenv\(\s*['"]HOME['"]\s*\)|"""
              r"""\bhomedir\(\s*\)|\bPath\.home\(\s*\)|\bDir\.home\b|\bprocess\.env(?:\.HOME\b|\[\s*['"]HOME['"]\s*\]))""")
#: Python's ``os.path.expanduser("~/x")`` of a literal (group 1 the quote, 2 the path)
_EXPANDUSER = LazyPattern(r"""(?:\bos\.path\.|\bpath\.|\b)expanduser\(\s*(['"])(~[^'"\n]*)\1\s*\)""")
#: the module or object a home expression is called on (``os.``, ``require("os").``, ``File::``)
_QUALIFIED = r"""(?:[\w$]+(?:\(\s*['"][\w:]+['"]\s*\))?(?:\.|->|::))*"""
#: the home expression inside a string (``"$ENV{HOME}/.netrc"``): read as ``~``
_HOME_IN_STRING = LazyPattern(r"""\$ENV\{\s*['"]?HOME['"]?\s*\}(?=/)""")
#: the home expression joined to a literal (``ENV["HOME"] + "/.netrc"``, ``getenv("HOME")."/x"``,
#: ``os.homedir()+"/.ssh"``, ``homedir()*"/x"``, ``os.getenv("HOME") .. "/x"``,
#: ``os.path.join(os.environ["HOME"], ".netrc")``, ``Path.home() / ".ssh"``): group 2 the literal
_HOME_JOINED = LazyPattern(_QUALIFIED + _HOME_EXPR + r"""\s*(?:\+|\.\.?|\*|,|/)\s*(['"])/?([^'"\n$`{}]{1,1024})\1""")


#: the home expression alone, with the module or object it is called on (``os.homedir()``,
#: ``require("os").homedir()``, ``Dir.home``, ``$ENV{HOME}``): read as the ``"~"`` literal
_BARE_HOME = LazyPattern(_QUALIFIED + _HOME_EXPR)


#: Perl's ``open`` with a mode: three arguments (``open(my $f, ">>", ".git/config")``, group 2
#: the mode, 4 the path) or two, the mode before the name in one literal (``open F, ">x"``, 5/6)
_PERL_OPEN = LazyPattern(r"""\bopen\s*\(?\s*(?:my\s+)?[$\w:]+\s*,\s*(?:(['"])\s*(\+?[<>]{1,2})\s*\1\s*,\s*"""
                         r"""(['"])([^'"\n]{1,1024})\3|(['"])\s*(\+?[<>]{1,2})\s*([^'"\n&=][^'"\n]{0,1023})\5)""")


#: a network URL written as a string literal in code (group 2): ``urlopen("https://h/x")``,
#: ``fetch('http://h')``, ``Net::HTTP.get(URI("https://h"))``
_URL_LITERAL = LazyPattern(r"""(['"])((?:https?|ftp|wss?)://[^'"\s$`{}]{1,1024})\1""")


def _home_spelled(code: str) -> str:
    """Code with its spellings of the home directory joined to a literal rewritten as ``"~/…"``
    literals, so that :data:`_PATH_LITERAL` sees the path they name."""
    if "HOME" not in code and "home" not in code:
        return code
    code = _HOME_JOINED.sub(lambda match: f'"~/{match.group(2)}"', code)
    return _HOME_IN_STRING.sub("~", code)


def named_paths(inv: Invocation, code: str, index: int | None, urls: bool = True) -> None:
    """Paths written as string literals in code that cannot be seen into (``open("/etc/shadow")``,
    ``expanduser("~/.ssh/id_rsa")``) are judged as read: a denied path named in the code is
    denied, whatever the code does with it; command lines it hands to a shell are walked
    (:func:`named_commands`); with ``urls``, a network URL literal is judged as contacted."""
    named_commands(inv, code, index)
    if UNKNOWN in code or ("/" not in code and "~" not in code and "." not in code and "(" not in code):
        return
    code = _home_spelled(code)
    if urls and "://" in code:  # a URL literal in code that cannot be seen into: judged as contacted
        from stockade.analyzer.models.net import contact_url

        for match in _URL_LITERAL.finditer(code):
            contact_url(inv, match.group(2), index)
    for match in _PATH_LITERAL.finditer(code):
        path = match.group(2)
        if len(path) > 1 and path != "~":
            inv.read(path, index)
    if "(" in code:  # a file a call opens by a literal name (`open("credentials", "a")`): read, or written
        for match in _OPEN_CALL.finditer(code):
            name, path, mode = match.group(1), match.group(3), match.group(5) or ""
            if not path or path == "~":
                continue
            if name.startswith(("write", "append", "file_put", "File.write", "IO.write")) or \
                    any(flag in mode for flag in "wax+"):
                inv.write(path, index)
            else:
                inv.read(path, index)
    if "open" in code:  # Perl's open with a mode (three arguments, or the mode before the name)
        for match in _PERL_OPEN.finditer(code):
            mode, path = (match.group(2), match.group(4)) if match.group(4) else (match.group(6), match.group(7))
            if path and path.strip() not in ("", "~", "-"):
                (inv.write if ">" in mode or "+" in mode else inv.read)(path.strip(), index)


def run_file(inv: Invocation, word: str, index: int | None) -> None:
    """A script file run (read; unknown code when this command wrote it): see :mod:`.fresh`."""
    from stockade.analyzer.models.fresh import run_file as run

    run(inv, word, index)


register(" ".join(SHELLS), model_shell)
register("eval", model_eval, builtin=True)
register("source .", model_source, builtin=True)
register("cd pushd popd", model_cd, builtin=True)
register("trap", model_trap, builtin=True)
register("alias", model_alias, builtin=True)
register("unalias", model_unalias, builtin=True)
register("let", model_let, builtin=True)
for _names, _options in _INTERPRETERS.items():
    register(_names, interpreter_model(_options))
