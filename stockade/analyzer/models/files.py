"""Coreutils and everyday file tools, mostly as data (:class:`Spec` per tool)."""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN, LinkTarget
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import Spec, parse_options, register, spec_model
from stockade.analyzer.words import decode_ansi_c

R = frozenset({"-r", "-R", "--recursive", "-a", "--archive"})

SPECS: dict[str, Spec] = {
    "cat tac": Spec(values={"-s": "text"}, stdin_out=True),
    "nl more less wc md5sum sha1sum sha256sum sha512sum cksum b2sum xxd od hexdump strings file stat "
    "base32 base64 fold fmt expand unexpand rev column bat cmp readlink realpath zcat bzcat xzcat zless": Spec(
        values={"-w": "text", "-t": "text", "-f": "text", "-b": "text", "-s": "text", "--format": "text",
                "-c": "text", "-N": "text", "-l": "text"}),
    "head tail": Spec(values={"-n": "text", "-c": "text", "--lines": "text", "--bytes": "text",
                              "-s": "text", "--pid": "text"}),
    "jq yq gojq": Spec(first="text", values={"--arg": "text", "--argjson": "text", "--slurpfile": "read",
                                             "--rawfile": "read", "-f": "read", "--from-file": "read",
                                             "--indent": "text"}),
    "ls dir vdir du tree": Spec(args="list", values={"-I": "text", "--ignore": "text", "-L": "text",
                                                       "--block-size": "text", "--max-depth": "text", "-d": "text"}),
    "sort uniq cut tr paste join comm diff colordiff sdiff": Spec(
        values={"-o": "write", "--output": "write", "-t": "text", "-k": "text", "-d": "text", "-f": "text",
                "-c": "text", "-s": "text", "-S": "text", "-T": "text", "-U": "text", "--label": "text",
                "-x": "text", "-X": "read"},
        recursive=frozenset({"-r", "--recursive"})),
    "rm unlink shred": Spec(args="delete", recursive=frozenset({"-r", "-R", "--recursive"}),
                            values={"-n": "text", "--interactive": "text"}),
    "rmdir": Spec(args="delete"),
    "mkdir touch truncate mkfifo mknod": Spec(args="write", values={"-m": "text", "--mode": "text",
                                                                   "-s": "text", "--size": "text",
                                                                   "-d": "text", "-t": "text", "-r": "read",
                                                                   "--reference": "read"}),
    "cp": Spec(args="read", last="write", recursive=R, values={"-t": "writer", "--target-directory": "writer",
                                                                "-S": "text", "--suffix": "text"}),
    "install": Spec(args="read", last="write", values={"-m": "text", "-o": "text", "-g": "text",
                                                        "-t": "writer", "--target-directory": "writer"},
                    flags={"-d": "writes-args"}),
    "tee": Spec(args="write", stdin_out=False),
    "chmod chgrp chown chattr setfacl touch-r": Spec(first="text", args="write", recursive=frozenset({"-R", "--recursive"}),
                                                     values={"--reference": "read"}),
    "grep egrep fgrep zgrep": Spec(first="text", recursive=frozenset({"-r", "-R", "--recursive",
                                                                      "--dereference-recursive"}),
                                   values={"-e": "text", "--regexp": "text", "-f": "read", "--file": "read",
                                           "-m": "text", "-A": "text", "-B": "text", "-C": "text",
                                           "--include": "text", "--exclude": "text", "--exclude-dir": "text",
                                           "--color": "text", "--colour": "text", "-d": "text", "-D": "text"}),
    "echo printf true false : pwd date whoami id uname hostname which type sleep seq yes basename dirname "
    "test [ [[ env-print printenv nproc arch groups tty clear reset wait hash help history jobs fg bg "
    "getopts shift return exit break continue set shopt umask ulimit logout times read mapfile readarray "
    "dirs popd-print true-cmd cal uptime free df locale tput stty expr bc dc factor numfmt": Spec(args="text"),
    "make cmake ninja cargo go rustc gcc cc g++ clang javac mvn gradle tsc eslint prettier black ruff mypy "
    "pytest tox nox flake8 isort pylint yarn pnpm bun deno npx": Spec(
        args="text", values={"-C": "text", "-f": "read", "--file": "read", "-o": "write", "-j": "text",
                             "--manifest-path": "read"}),
}


def model_ln(inv: Invocation) -> None:
    """``ln [-s] TARGET LINK``: writes LINK; a symlink is remembered so later paths through it
    resolve to its target; a link to a path the policy denies is reported."""
    parsed = parse_options(inv.argv, {"-t", "--target-directory", "-S", "--suffix"})
    symbolic = parsed.has("-s", "--symbolic")
    words = list(parsed.positionals)
    target_dir = parsed.values_of("-t", "--target-directory")
    if target_dir:
        directory, dir_index = target_dir[0]
        pairs = [(w, i, directory.rstrip("/") + "/" + w.rstrip("/").rsplit("/", 1)[-1], dir_index) for w, i in words]
    elif len(words) == 1:
        w, i = words[0]
        pairs = [(w, i, w.rstrip("/").rsplit("/", 1)[-1] or w, i)]
    elif len(words) >= 2:
        link, link_index = words[-1]
        if len(words) > 2:
            pairs = [(w, i, link.rstrip("/") + "/" + w.rstrip("/").rsplit("/", 1)[-1], link_index)
                     for w, i in words[:-1]]
        else:
            pairs = [(words[0][0], words[0][1], link, link_index)]
    else:
        return
    for target, target_index, link, link_index in pairs:
        inv.write(link, link_index)
        if symbolic and not target.startswith("/") and UNKNOWN not in target and UNKNOWN not in link:
            # a relative symlink target is relative to the link's directory
            link_dir = inv.path(link).rsplit("/", 1)[0] or "/"
            resolved_target = inv.walker.resolve(target, cwd=link_dir)
        else:
            resolved_target = inv.path(target)
        resolved_link = inv.path(link)
        if UNKNOWN in resolved_link or UNKNOWN in resolved_target:
            inv.unknown(f"a link to `{target}` whose path is not known", target_index)
            continue
        inv.walker.state.links[resolved_link] = resolved_target
        # the judge decides whether the target may be read: a link is a way to read it later
        inv.walker.effects.append(LinkTarget(resolved_target, inv.at(target_index)))


def model_mv(inv: Invocation) -> None:
    """``mv SRC… DEST``: each source is deleted (moved away) and the destination written."""
    parsed = parse_options(inv.argv, {"-t", "--target-directory", "-S", "--suffix"})
    words = list(parsed.positionals)
    target_dir = parsed.values_of("-t", "--target-directory")
    if target_dir:
        dest, dest_index = target_dir[0]
    elif len(words) >= 2:
        dest, dest_index = words.pop()
    else:
        return
    for word, index in words:
        inv.delete(word, index, recursive=True)
    inv.write(dest, dest_index, recursive=True)


def model_echo(inv: Invocation) -> None:
    """``echo``: no effect; its output is known text (for a following pipe)."""
    args = inv.argv[1:]
    interpret = False
    newline = True
    while args and args[0] in ("-n", "-e", "-E", "-ne", "-en"):
        interpret = interpret or "e" in args[0]
        newline = newline and "n" not in args[0]
        args = args[1:]
    text = " ".join(args)
    if interpret:
        text = decode_ansi_c(text)
    inv.output(None if UNKNOWN in text else text + ("\n" if newline else ""), "the output of `echo`")


def model_printf(inv: Invocation) -> None:
    """``printf FORMAT ARGS``: output known when the format is (``%s``/``%b`` filled in)."""
    args = inv.argv[1:]
    if args[:1] == ["-v"]:
        if len(args) > 1:
            inv.walker.state.variables[args[1]] = UNKNOWN
        return
    if not args:
        return
    fmt, rest = args[0], args[1:]
    out = decode_ansi_c(fmt)
    for arg in rest:
        for spec in ("%s", "%b", "%d"):
            if spec in out:
                out = out.replace(spec, decode_ansi_c(arg) if spec == "%b" else arg, 1)
                break
    if "%" in out.replace("%%", ""):
        out = UNKNOWN
    inv.output(None if UNKNOWN in out else out.replace("%%", "%"), "the output of `printf`")


def model_dd(inv: Invocation) -> None:
    """``dd if=… of=…``."""
    for index, word in enumerate(inv.argv[1:], start=1):
        key, eq, value = word.partition("=")
        if eq and key == "if":
            inv.read(value, index)
        elif eq and key == "of":
            inv.write(value, index)


for _names, _spec in SPECS.items():
    register(_names, spec_model(_spec))
register("ln link", model_ln)
register("mv", model_mv)
register("echo", model_echo, builtin=False)
register("printf", model_printf)
register("dd", model_dd)
