"""Shells, ``eval``/``source``, directory builtins, and language interpreters."""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import parse_options, register

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox-sh", "fish", "rbash"})
_SHELL_VALUES = {"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}


def model_shell(inv: Invocation) -> None:
    """``sh -c CODE [name args…]`` is parsed and walked; ``sh FILE`` runs a script file
    (read); ``sh`` with code on stdin walks that code when known, otherwise it is code the
    analyzer cannot see (a download or decoded payload piped into a shell)."""
    # `+o NAME` / `+O NAME` turn options off: they are options, not the script operand
    argv = list(inv.argv)
    index = 1
    while index < len(argv) and argv[index] in ("+o", "+O"):
        argv[index] = "-" + argv[index][1]
        index += 2
    parsed = parse_options(argv, _SHELL_VALUES, stop_at_first_positional=True)
    command_mode = any(option == "-c" or (option.startswith("-") and not option.startswith("--") and "c" in option
                                          and len(option) == 2) for option, _, _ in parsed.options)
    for option, value, index in parsed.options:
        if option in ("--rcfile", "--init-file") and value:
            inv.read(value, index)
    words = list(parsed.positionals)
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
        if script.startswith("/dev/fd/") or script in ("/dev/stdin", "-"):
            inv.unknown(f"`{inv.name}` runs a script produced by another command", index)
        else:
            run_file(inv, script, index)
        return
    _stdin_code(inv)


def _stdin_code(inv: Invocation) -> None:
    text = inv.stdin.text
    if text is None:
        inv.unknown(f"`{inv.name}` runs code from {inv.stdin.what}, which is not known before it runs")
    else:
        inv.walker.nested_script(text, inv.span, exact=False, subshell=True)


def model_eval(inv: Invocation) -> None:
    """``eval WORDS``: the words joined are code; walked when known."""
    code = " ".join(inv.argv[1:])
    inv.script(code, 1 if len(inv.argv) > 1 else None, what="the code given to `eval`")


def model_source(inv: Invocation) -> None:
    """``source FILE`` / ``. FILE``: runs a file in this shell — its content is not visible."""
    if len(inv.argv) > 1:
        word = inv.argv[1]
        if word.startswith("/dev/fd/") or word in ("/dev/stdin", "-"):
            inv.unknown("sources code produced by another command", 1)
        else:
            run_file(inv, word, 1)


def model_cd(inv: Invocation) -> None:
    """``cd DIR`` / ``pushd DIR`` / ``popd``: the working directory of later commands."""
    state = inv.walker.state
    args = [a for a in inv.argv[1:] if not (a.startswith("-") and a not in ("-",))]
    if inv.name == "popd":
        state.cwd = state.dirstack.pop() if state.dirstack else UNKNOWN
        return
    target = args[0] if args else "~"
    if target == "~":
        target = inv.walker.home
    if target == "-":
        state.cwd = UNKNOWN
        return
    if inv.name == "pushd":
        state.dirstack.append(state.cwd)
    new = inv.path(target)
    state.cwd = new if UNKNOWN not in new else UNKNOWN


def model_trap(inv: Invocation) -> None:
    """``trap CODE SIGNALS``: the code runs later, in this shell."""
    args = [a for a in inv.argv[1:] if a not in ("-p", "-l", "--")]
    if len(args) >= 2 and args[0] not in ("-", ""):
        inv.script(args[0], inv.argv.index(args[0]), what="the code given to `trap`")


def model_alias(inv: Invocation) -> None:
    """``alias name=CODE``: the code runs whenever the alias is used; walked now."""
    for index, word in enumerate(inv.argv[1:], start=1):
        _, eq, value = word.partition("=")
        if eq:
            inv.script(value, index, what="the code of an alias")


def model_let(inv: Invocation) -> None:
    """``let EXPR``: arithmetic; variable values with subscripts run code."""
    for index, word in enumerate(inv.argv[1:], start=1):
        if "$(" in word or "`" in word:
            inv.walker.nested_script(": " + word, inv.at(index), exact=False)


# interpreters: option → what its value is
_INTERPRETERS: dict[str, dict[str, str]] = {
    "python python2 python3 pypy pypy3": {"-c": "code", "-m": "module", "-W": "text", "-X": "text", "-Q": "text"},
    "node nodejs": {"-e": "code", "--eval": "code", "-p": "code", "--print": "code", "-r": "read",
                    "--require": "read", "--import": "read", "--input-type": "text"},
    "perl": {"-e": "code", "-E": "code", "-M": "text", "-m": "text", "-I": "text", "-x": "text"},
    "ruby": {"-e": "code", "-r": "text", "-I": "text", "-E": "text"},
    "php": {"-r": "code", "-B": "code", "-R": "code", "-E": "code", "-f": "read", "-d": "text", "-c": "read"},
    "lua luajit": {"-e": "code", "-l": "text"},
    "Rscript": {"-e": "code"},
    "osascript": {"-e": "code"},
    "tclsh wish": {},
    "awk-never": {},
}


def interpreter_model(options: dict[str, str]):
    """A model for a language interpreter: inline code is unknown, a script file is read,
    code on stdin is unknown."""
    values = {name for name, role in options.items() if role != "flag"}

    def model(inv: Invocation) -> None:
        parsed = parse_options(inv.argv, values, stop_at_first_positional=True)
        for option, value, index in parsed.options:
            role = options.get(option)
            if role == "code":
                inv.unknown(f"inline `{inv.name}` code (`{show(value or '')[:60]}`) cannot be seen into", index)
                return
            if role == "module":
                return  # runs an installed module: judged by what is visible
            if role == "read" and value:
                inv.read(value, index)
        if parsed.positionals:
            script, index = parsed.positionals[0]
            if script == "-" or script.startswith("/dev/fd/") or script == "/dev/stdin":
                inv.unknown(f"`{inv.name}` runs code from {inv.stdin.what}", index)
            else:
                run_file(inv, script, index)
            return
        inv.unknown(f"`{inv.name}` runs code from {inv.stdin.what}, which cannot be seen into")

    return model


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
register("let", model_let, builtin=True)
for _names, _options in _INTERPRETERS.items():
    register(_names, interpreter_model(_options))
