"""Coreutils and everyday file tools, mostly as data (:class:`Spec` per tool)."""

from __future__ import annotations

import re

from stockade.analyzer.effects import (
    CHILD_PID,
    UNKNOWN,
    UNKNOWN_NAME,
    UNKNOWN_NAME_OR_EMPTY,
    UNKNOWN_NUMBER,
    LinkTarget,
    show,
)
from stockade.analyzer.exec import Invocation
from stockade.analyzer.judge import plain_names_glob
from stockade.analyzer.models import MODELS, Spec, parse_options, register, spec_model
from stockade.analyzer.words import LISTED_OPEN, decode_ansi_c, listed, resolve_listed

TYPE_CHECKING = False  # (`typing` is imported only by type checkers)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

R = frozenset({"-r", "-R", "--recursive", "-a", "--archive"})

T = "text"
#: grep's options that take a value (GNU and BSD); ``-f``/``--file``/``--exclude-from`` name files it reads
_GREP_VALUES = {"-e": T, "--regexp": T, "-f": "read", "--file": "read", "-m": T, "--max-count": T, "-A": T,
                "--after-context": T, "-B": T, "--before-context": T, "-C": T, "--context": T, "--include": T,
                "--exclude": T, "--exclude-dir": T, "--exclude-from": "read", "--label": T, "-d": T,
                "--directories": T, "-D": T, "--devices": T, "--binary-files": T, "--group-separator": T}

#: Each tool's own options: a flag of one tool is often a value option of another (``wc -l``,
#: ``cat -s``, ``sort -f``, ``touch -m``, ``ls -d`` are flags), so tables are never shared
#: between tools whose options differ.  Options whose value is optional (``--color[=WHEN]``)
#: only take an attached value and are left out or listed in ``optional``.
SPECS: dict[str, Spec] = {
    "cat": Spec(stdin_out=True),
    "tac": Spec(values={"-s": T, "--separator": T}, stdin_out=True),
    "wc": Spec(values={"--files0-from": "read"}),
    "md5sum sha1sum sha224sum sha256sum sha384sum sha512sum cksum sum rev zcat bzcat xzcat zless readlink "
    "unlink-never": Spec(),
    "b2sum": Spec(values={"-l": T, "--length": T}),
    "realpath": Spec(values={"--relative-to": T, "--relative-base": T}),
    "more": Spec(values={"-n": T, "--lines": T}),
    "less": Spec(values={"-b": T, "-h": T, "-j": T, "-k": "read", "-o": "write", "-O": "write", "-p": T, "-P": T,
                         "-t": T, "-T": "read", "-x": T, "-y": T, "-z": T, "-#": T}),
    "nl": Spec(values=dict.fromkeys(("-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"), T)),
    "bat batcat": Spec(values={"-l": T, "--language": T, "-H": T, "--highlight-line": T, "--tabs": T, "--theme": T,
                               "--style": T, "-r": T, "--line-range": T, "-m": T, "--map-syntax": T,
                               "--file-name": T, "--wrap": T, "--terminal-width": T},
                       flags={"--pager": "unknown:`bat --pager` runs a pager command"}),
    "file": Spec(values={"-f": "read", "--files-from": "read", "-m": "read", "--magic-file": "read", "-F": T,
                         "--separator": T, "-e": T, "--exclude": T, "-P": T, "--parameter": T}),
    "stat": Spec(values={"-c": T, "--format": T, "--printf": T}),
    "base32 base64 basenc": Spec(values={"-w": T, "--wrap": T, "-b": T, "--break": T, "-o": "write",
                                         "--output": "write", "-i": "read", "--input": "read"}),
    "fold": Spec(values={"-w": T, "--width": T}),
    "fmt": Spec(values={"-w": T, "--width": T, "-g": T, "--goal": T, "-p": T, "--prefix": T}),
    "expand unexpand": Spec(values={"-t": T, "--tabs": T}),
    "column": Spec(values=dict.fromkeys(("-s", "-c", "-o", "-N", "-R", "-H", "-W", "-E", "--separator",
                                         "--output-separator", "--table-columns", "--output-width"), T)),
    "xxd": Spec(last="write", values=dict.fromkeys(("-c", "-g", "-l", "-s", "-o", "-n", "-cols", "-len", "-seek"), T)),
    "od": Spec(values=dict.fromkeys(("-A", "-j", "-N", "-S", "-t", "--address-radix", "--skip-bytes",
                                     "--read-bytes", "--strings", "--format"), T)),
    "hexdump hd": Spec(values={"-e": T, "-f": "read", "-n": T, "-s": T}),
    "strings": Spec(values={"-n": T, "--bytes": T, "-t": T, "--radix": T, "-e": T, "--encoding": T,
                            "-T": T, "--target": T, "-s": T, "--output-separator": T}),
    "cmp": Spec(values={"-i": T, "--ignore-initial": T, "-n": T, "--bytes": T}),
    "head": Spec(values={"-n": T, "-c": T, "--lines": T, "--bytes": T}),
    "tail": Spec(values={"-n": T, "-c": T, "--lines": T, "--bytes": T, "-s": T, "--sleep-interval": T,
                         "--pid": T, "--max-unchanged-stats": T}),
    "ls dir vdir": Spec(args="list", values={"-I": T, "--ignore": T, "--hide": T, "--block-size": T, "-T": T,
                                             "--tabsize": T, "-w": T, "--width": T, "--format": T,
                                             "--sort": T, "--time": T, "--time-style": T, "--quoting-style": T,
                                             "--indicator-style": T}, optional=frozenset({"--color"})),
    "du": Spec(args="list", values={"-d": T, "--max-depth": T, "-B": T, "--block-size": T, "-t": T, "--threshold": T,
                                    "--exclude": T, "-X": "read", "--exclude-from": "read",
                                    "--files0-from": "read", "--time-style": T}),
    "tree": Spec(args="list", values={"-L": T, "-P": T, "-I": T, "-o": "write", "--filelimit": T, "--charset": T,
                                      "--timefmt": T, "--sort": T, "--fromfile": "read"}),
    "sort": Spec(values={"-o": "write", "--output": "write", "-t": T, "--field-separator": T, "-k": T, "--key": T,
                         "-S": T, "--buffer-size": T, "-T": "writer", "--temporary-directory": "writer",
                         "--files0-from": "read", "--parallel": T, "--batch-size": T, "--compress-program": T,
                         "--random-source": "read", "--sort": T}),
    "shuf": Spec(values={"-o": "write", "--output": "write", "--random-source": "read", "-n": T, "--head-count": T,
                         "-i": T, "--input-range": T}),
    "uniq": Spec(last="write", values={"-f": T, "--skip-fields": T, "-s": T, "--skip-chars": T, "-w": T,
                                       "--check-chars": T, "--group": T, "--all-repeated": T},
                 optional=frozenset({"--group", "--all-repeated"})),
    "cut": Spec(values={"-b": T, "--bytes": T, "-c": T, "--characters": T, "-d": T, "--delimiter": T, "-f": T,
                        "--fields": T, "--output-delimiter": T}),
    "tr": Spec(args="text"),
    "paste": Spec(values={"-d": T, "--delimiters": T}),
    "join": Spec(values=dict.fromkeys(("-a", "-e", "-o", "-t", "-v", "-1", "-2", "-j"), T)),
    "comm": Spec(values={"--output-delimiter": T}),
    "diff colordiff": Spec(values={"-x": T, "--exclude": T, "-X": "read", "--exclude-from": "read", "--label": T,
                                   "-I": T, "--ignore-matching-lines": T, "-C": T, "-U": T, "-F": T,
                                   "--show-function-line": T, "-W": T, "--width": T, "-S": T,
                                   "--starting-file": T, "--from-file": "read", "--to-file": "read",
                                   "--line-format": T, "--tabsize": T, "--horizon-lines": T},
                           recursive=frozenset({"-r", "--recursive"})),
    "sdiff": Spec(values={"-o": "write", "--output": "write", "-w": T, "--width": T, "-I": T}),
    "rm unlink shred": Spec(args="delete", recursive=frozenset({"-r", "-R", "--recursive"}),
                            values={"-n": T, "--iterations": T, "-s": T, "--size": T, "--random-source": "read"},
                            optional=frozenset({"--interactive", "--remove"})),
    "rmdir": Spec(args="delete"),
    "mkdir": Spec(args="write", values={"-m": T, "--mode": T, "--context": T}, optional=frozenset({"--context"})),
    # extended attributes, line endings: they rewrite the files they are given
    "setfattr": Spec(args="write", values={"-n": T, "--name": T, "-v": T, "--value": T, "-x": T, "--remove": T,
                                           "--restore": "read"}),
    "getfattr": Spec(values={"-n": T, "--name": T, "-e": T, "--encoding": T, "-m": T, "--match": T},
                     recursive=frozenset({"-R", "--recursive"})),
    "dos2unix unix2dos mac2unix unix2mac": Spec(args="write", values={"-c": T, "--convmode": T, "-D": T,
                                                                        "--display-enc": T, "-i": T, "--info": T},
                                                optional=frozenset({"-i", "--info"})),
    "touch": Spec(args="write", values={"-d": T, "--date": T, "-t": T, "-r": "read", "--reference": "read",
                                        "--time": T}),
    "truncate": Spec(args="write", values={"-s": T, "--size": T, "-r": "read", "--reference": "read",
                                           "-o": T}),
    "mkfifo mknod": Spec(args="write", values={"-m": T, "--mode": T}),
    # rename EXPRESSION FILES… (perl's) / rename FROM TO FILES… (util-linux's): the files are renamed
    "rename prename file-rename perl-rename": Spec(first="text", args="write",
                                                   values={"-e": T, "-E": T, "-u": T, "--unicode": T}),
    "rename.ul": Spec(args="write"),
    "cp": Spec(args="read", last="write", recursive=R, values={"-t": "target", "--target-directory": "target",
                                                                "-S": T, "--suffix": T}),
    "install": Spec(args="read", last="write", values={"-m": T, "-o": T, "-g": T, "--mode": T, "--owner": T,
                                                        "--group": T, "-t": "target", "--target-directory": "target",
                                                        "-S": T, "--suffix": T, "--strip-program": "script"},
                    flags={"-d": "writes-args"}),
    "tee": Spec(args="write", stdin_out=False),
    "chmod chgrp chown touch-r": Spec(first="text", args="write", recursive=frozenset({"-R", "--recursive"}),
                                      values={"--reference": "read", "--from": T},
                                      first_given_by=frozenset({"--reference"})),  # (then no mode/owner)
    "setfacl": Spec(args="write", recursive=frozenset({"-R", "--recursive"}),
                    values={"-m": T, "--modify": T, "-x": T, "--remove": T, "-M": "read", "--modify-file": "read",
                            "-X": "read", "--remove-file": "read", "--set": T, "--set-file": "read"}),
    "grep egrep fgrep zgrep": Spec(first="text", recursive=frozenset({"-r", "-R", "--recursive",
                                                                            "--dereference-recursive"}),
                                         values=_GREP_VALUES, first_given_by=frozenset({"-e", "--regexp", "-f",
                                                                                        "--file"}),
                                         optional=frozenset({"--color", "--colour"}), default="."),
    "date": Spec(args="text", values={"-f": "read", "--file": "read", "-r": "read", "--reference": "read",
                                      "-d": "text", "--date": "text"}),
    "echo printf true false : pwd whoami id uname hostname which type sleep seq yes basename dirname "
    "test [ [[ env-print printenv nproc arch groups tty clear reset wait hash help history jobs fg bg "
    "getopts shift return exit break continue set shopt umask ulimit logout times read mapfile readarray "
    "dirs popd-print true-cmd cal uptime free df locale tput stty expr bc dc factor numfmt": Spec(args="text"),
    "make cmake ninja cargo go rustc gcc cc g++ clang javac mvn gradle tsc eslint prettier black ruff mypy "
    "pytest tox nox flake8 isort pylint yarn pnpm bun deno npx": Spec(
        args="text", values={"-C": "text", "-f": "read", "--file": "read", "-o": "write", "-j": "text",
                             "--manifest-path": "read"}),
}


def model_chattr(inv: Invocation) -> None:
    """chattr [-RVf] [-v VERSION] [-p PROJECT] MODE… FILES: the mode words (``+i``, ``-a``,
    ``=e``) are not options and not files; every file is written (recursively with ``-R``)."""
    argv = inv.argv
    recursive = False
    index = 1
    while index < len(argv):
        word = argv[index]
        if word == "--":
            index += 1
            break
        if word in ("-v", "-p") and index + 1 < len(argv):
            index += 2
            continue
        if word[:1] in "+-=" and len(word) > 1 and all(c in "aAcCdDeFijmPsStTux" for c in word[1:]):
            index += 1  # a mode word (`-i` clears the immutable flag: not an option)
            continue
        if word[:1] == "-" and len(word) > 1 and all(c in "RVf" for c in word[1:]):
            recursive = recursive or "R" in word
            index += 1
            continue
        inv.write(word, index, recursive=recursive)
        index += 1
    for position in range(index, len(argv)):
        inv.write(argv[position], position, recursive=recursive)


#: directories whatever the machine (so ``ln -s X DIR`` makes ``DIR/X``): system ones, and
#: path endings that are directories in any checkout or home
_SYSTEM_DIRS = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc", "/root",
                          "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/bin", "/usr/lib", "/usr/local",
                          "/usr/local/bin", "/usr/local/lib", "/usr/sbin", "/usr/share", "/var", "/var/tmp",
                          "/etc/cron.d", "/etc/profile.d", "/etc/sudoers.d", "/etc/systemd/system"})
_DIR_ENDINGS = ("/.git", "/.git/hooks", "/.git/info", "/.github", "/.github/workflows", "/.husky", "/.vscode",
                "/.ssh", "/.aws", "/.gnupg", "/.config", "/.local", "/.local/bin", "/.cache", "/bin",
                "/node_modules", "/node_modules/.bin", "/.cargo/bin", "/.config/systemd/user", "/.config/autostart")
_LN_VALUES = {"-t", "--target-directory", "-S", "--suffix"}


def _is_directory(inv: Invocation, word: str) -> bool:
    """Whether ``word`` names a directory the analysis knows of (``DIR/``, ``.``, the working
    directory, workspace, home, temporary dirs, one ``mkdir`` made in this text, a system
    directory, ``.git``, ``.git/hooks`` …)."""
    if word.endswith("/") or word.rpartition("/")[2] in (".", ".."):
        return True
    from stockade.analyzer.models.fresh import known_directory  # (fresh wraps this module's models)

    if known_directory(inv, word):
        return True
    path = inv.path(word)
    return UNKNOWN not in path and (path in _SYSTEM_DIRS or path.endswith(_DIR_ENDINGS))


def _basename(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1] or word


def model_ln(inv: Invocation) -> None:
    """``ln [-s] TARGET [LINK|DIR]``, ``ln TARGET… DIR``, ``ln -t DIR TARGET…``, ``ln -T TARGET
    LINK``: writes each link — ``DIR/basename(TARGET)`` when the last operand is a directory
    (written ``DIR/``, several targets, or a directory the analysis knows); a symlink is
    remembered so later paths through it resolve to its target; a link to a path the policy
    denies is reported.  Two operands whose last may or may not be a directory: both paths
    are judged as written, the link remembered as the last operand."""
    parsed = parse_options(inv.argv, _LN_VALUES)
    symbolic = parsed.has("-s", "--symbolic")
    relative = parsed.has("-r", "--relative")
    words = list(parsed.positionals)
    target_dir = parsed.values_of("-t", "--target-directory")
    maybe: list[tuple[str, int]] = []  # link paths also judged as written
    if target_dir:
        directory, dir_index = target_dir[-1]
        pairs = [(w, i, directory.rstrip("/") + "/" + _basename(w), dir_index) for w, i in words]
    elif len(words) == 1:
        w, i = words[0]
        pairs = [(w, i, _basename(w), i)]
    elif len(words) >= 2:
        link, link_index = words[-1]
        no_target = parsed.has("-T", "--no-target-directory") or \
            (parsed.has("-n", "--no-dereference") and _unfollowed(inv, link) in inv.walker.state.links)
        if len(words) > 2 or (not no_target and _is_directory(inv, link)):
            pairs = [(w, i, link.rstrip("/") + "/" + _basename(w), link_index) for w, i in words[:-1]]
        else:
            pairs = [(words[0][0], words[0][1], link, link_index)]
            if not no_target and UNKNOWN not in link:  # (`ln -s X d` with d an existing directory: d/X)
                maybe.append((link + "/" + _basename(words[0][0]), link_index))
    else:
        return
    for path, index in maybe:
        inv.write(path, index)
    for target, target_index, link, link_index in pairs:
        inv.write(link, link_index)
        if symbolic and not relative and not target.startswith("/") and _known_path(target) and _known_path(link):
            # a relative symlink target is relative to the link's directory (`-r`: to the working one)
            link_dir = inv.path(link).rsplit("/", 1)[0] or "/"
            resolved_target = inv.walker.resolve(target, cwd=link_dir)
        else:
            resolved_target = inv.path(target)
        resolved_link = _unfollowed(inv, link)  # (`ln -sfn ~ x` replaces the link x, not what x points to)
        if not _known_path(resolved_link) or not _known_path(resolved_target):
            inv.unknown(f"a link to `{show(target)}` whose path is not known", target_index)
            continue
        inv.walker.state.links[resolved_link] = resolved_target
        # the judge decides whether the target may be read: a link is a way to read it later
        inv.walker.effects.append(LinkTarget(resolved_target, inv.at(target_index)))


def _unfollowed(inv: Invocation, word: str) -> str:
    """The path of ``word`` itself: its directories resolved (links followed), its last name not."""
    head, slash, name = word.rstrip("/").rpartition("/")
    if not slash:
        return inv.path(".").rstrip("/") + "/" + name
    return inv.path(head or "/").rstrip("/") + "/" + name


def _known_path(word: str) -> bool:
    """Whether a word is known, or unknown only in plain names (``app-$(git rev-parse HEAD)``:
    judged as the names it could be)."""
    return UNKNOWN not in word or plain_names_glob(word) is not None


_JQ_TWO_VALUES = {"--arg": False, "--argjson": False, "--slurpfile": True, "--rawfile": True}
_JQ_VALUES = {"-f", "--from-file", "--indent", "-L", "--library-path"}


def model_jq(inv: Invocation) -> None:
    """jq/gojq/yq ``[options] FILTER [FILES]``: files are read; ``--slurpfile``/``--rawfile
    NAME FILE`` read FILE (these options take two words); ``-f FILE`` reads the filter from
    FILE (then every positional is an input); after ``--args``/``--jsonargs`` positionals
    are values, not files."""
    argv = inv.argv
    index = 1
    filter_given = False
    values_only = False
    positionals: list[tuple[str, int, bool]] = []  # word, index, is a value (after --args)
    while index < len(argv):
        word = argv[index]
        if word == "--":
            positionals.extend((w, i, values_only) for i, w in enumerate(argv[index + 1:], start=index + 1))
            break
        if word in _JQ_TWO_VALUES:
            if _JQ_TWO_VALUES[word] and index + 2 < len(argv):
                inv.read(argv[index + 2], index + 2)
            index += 3
            continue
        if word in _JQ_VALUES:
            if word in ("-f", "--from-file") and index + 1 < len(argv):
                inv.read(argv[index + 1], index + 1)
                filter_given = True
            index += 2
            continue
        if word[:1] == "-" and word[1:2] not in ("-", "") and ("f" in word or "L" in word):
            # a short cluster (-rf FILE): -f reads the filter from the next word, -L skips it
            if "f" in word and index + 1 < len(argv):
                inv.read(argv[index + 1], index + 1)
                filter_given = True
            index += 2
            continue
        if word in ("--args", "--jsonargs"):
            values_only = True
        elif word.startswith("--from-file="):
            inv.read(word.partition("=")[2], index)
            filter_given = True
        elif not word.startswith("-") or word == "-":
            positionals.append((word, index, values_only))
        index += 1
    if inv.name == "yq" and positionals and positionals[0][0] in ("eval", "e", "eval-all", "ea"):
        positionals.pop(0)
    if not filter_given and positionals:
        positionals.pop(0)
    for word, index, is_value in positionals:
        if not is_value:
            inv.read(word, index)


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


#: a NUL byte in known output (``printf 'a\\0b'``): not the unknown marker, which is a NUL too
NUL = "\ufdd0"


def known_nul(text: str) -> str:
    """Decode backslash escapes of known text: a NUL they produce becomes :data:`NUL` (text with
    an unknown part keeps the unknown marker)."""
    if UNKNOWN in text:
        return decode_ansi_c(text)
    return decode_ansi_c(text).replace(UNKNOWN, NUL)


#: ``KEY=VALUE`` ending a line, where KEY names a credential and VALUE is one word holding a
#: part not known here (``//host/:_authToken=${NPM_TOKEN}``, ``password=$PW``)
_SECRET_VALUE = re.compile(r"((?:^|\n)[^\n=\x00]*(?:authtoken|_auth|password|passwd|token|secret|apikey|api_key|"
                           r"username|email)\s*[=:]\s*)([^\s;&|<>()`'\"\\]*\x00[^\s;&|<>()`'\"\\]*)(?=\n|$)", re.I)


def secret_placeholders(text: str) -> str:
    """``text`` with each credential value not known here (see :data:`_SECRET_VALUE`) given as
    ``SECRET``: which secret it is does not change what the text does (a configuration file
    written with it), so the rest stays known."""
    return _SECRET_VALUE.sub(lambda match: match.group(1) + "SECRET", text) if UNKNOWN in text else text


def _globbed_directories(inv: Invocation, start: int) -> None:
    """An absolute operand with a glob (``echo ~/.ssh/*``, ``printf '%s\\n' /etc/s*``) lists the
    directory its first globbed component is in: bash reads that directory to expand it (the
    names printed are its entries), a read of it."""
    from stockade.analyzer.globs import has_glob

    for index in range(start, len(inv.argv)):
        word = inv.argv[index]
        if word[:1] != "/" or not has_glob(word) or UNKNOWN in word:
            continue
        parts = word.split("/")
        for depth, part in enumerate(parts):
            if has_glob(part):
                inv.read("/".join(parts[:depth]) or "/", index)
                break


def model_echo(inv: Invocation) -> None:
    """``echo``: no effect but the directories a glob operand lists
    (:func:`_globbed_directories`); its output is known text (for a following pipe)."""
    _globbed_directories(inv, 1)
    args = inv.argv[1:]
    interpret = False
    newline = True
    while args and args[0] in ("-n", "-e", "-E", "-ne", "-en"):
        interpret = interpret or "e" in args[0]
        newline = newline and "n" not in args[0]
        args = args[1:]
    text = secret_placeholders(" ".join(args))
    if interpret:
        text = known_nul(text)
    # (a job's pid, `echo $! > app.pid`, is known as such: `kill "$(cat app.pid)"` signals the job)
    inv.output(None if UNKNOWN in text.replace(CHILD_PID, "") else text + ("\n" if newline else ""),
               "the output of `echo`")


def model_printf(inv: Invocation) -> None:
    """``printf FORMAT ARGS``: output known when the format is (``%s``/``%b`` filled in); a glob
    argument lists its directory (:func:`_globbed_directories`)."""
    args = inv.argv[1:]
    _globbed_directories(inv, 2 if args[:1] != ["-v"] else 4)
    variable = None  # printf -v NAME: the output is assigned to NAME
    if args[:1] == ["-v"]:
        if len(args) < 2:
            return
        from stockade.analyzer.models.shellstate import subscript_code

        subscript_code(inv.walker, args[1], inv.at(2))  # `printf -v 'a[$(cmd)]'` runs cmd
        variable = args[1]
        args = args[2:]
    if args[:1] == ["--"]:  # (the end of the options: `printf -- '--flag\n'`)
        args = args[1:]
    if not args:
        if variable is not None and "[" not in variable:
            from stockade.analyzer.models.shellstate import set_variable

            set_variable(inv.walker, variable, UNKNOWN, inv.span, "`printf -v`")
        return
    fmt, rest = args[0], args[1:]
    template = known_nul(fmt)
    if "%(" in template:  # `%(%Y%m%d)T`: the time, as date's format says (digits for %Y%m%d)
        template, rest = _strftime_conversions(template, rest)
    pieces: list[str] = []
    while True:  # the format is reused while arguments are left (`printf '%s\n' a b`)
        out = template
        used = 0
        for arg in rest:
            for spec in ("%s", "%b", "%d"):
                if spec in out:
                    out = out.replace(spec, listed(known_nul(arg) if spec == "%b" else arg), 1)
                    used += 1
                    break
            else:
                break
        pieces.append(out)
        rest = rest[used:]
        if not rest or not used or len(pieces) > 64:
            break
    out = "".join(pieces)
    if LISTED_OPEN in out:  # (a glob's names printed into code, `printf 'cat %s' *.txt | sh`: not known)
        out = resolve_listed(out, lines=True)
    if "%" in out.replace("%%", ""):
        out = UNKNOWN
    if variable is not None:
        if "[" in variable:  # `printf -v 'a[1]'`: one element, not followed
            from stockade.analyzer.models.shellstate import forget_array

            forget_array(inv.walker, variable)
        else:
            from stockade.analyzer.models.shellstate import set_variable

            set_variable(inv.walker, variable, out.replace("%%", "%") if _plain_known(out) else UNKNOWN, inv.span,
                         "`printf -v`")
        return
    out = secret_placeholders(out)
    inv.output(out.replace("%%", "%") if _plain_known(out) else None, "the output of `printf`")


def _plain_known(text: str) -> bool:
    """Whether ``text`` is known but for plain-value markers (``%(%Y)T``: digits)."""
    return UNKNOWN not in text or UNKNOWN not in text.replace(UNKNOWN_NUMBER, "").replace(UNKNOWN_NAME, "").replace(
        UNKNOWN_NAME_OR_EMPTY, "").replace(CHILD_PID, "")


_STRFTIME_RE = re.compile(r"%\(([^)]*)\)T|%%|%")


def _strftime_conversions(template: str, args: list[str]) -> tuple[str, list[str]]:
    """``printf``'s ``%(FMT)T`` conversions filled in (each takes one argument: the time, now
    when absent or ``-1``/``-2``), when they are the format's only conversions and the times
    are not before 1970; else the format as it is."""
    from stockade.analyzer.models.plainvalues import _date_text

    out: list[str] = []
    last = 0
    rest = list(args)
    for match in _STRFTIME_RE.finditer(template):
        if match.group(0) == "%%":
            continue
        if match.group(1) is None:
            return template, args
        time = rest.pop(0) if rest else "-1"
        text = _date_text(match.group(1))
        if text is None or not (time in ("-1", "-2") or time.isdigit()):
            return template, args
        out.append(template[last:match.start()])
        out.append(text)
        last = match.end()
    out.append(template[last:])
    return "".join(out), rest


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
register("jq gojq yq", model_jq)
register("mv", model_mv)
register("echo", model_echo, builtin=False)
register("printf", model_printf)
register("dd", model_dd)
register("chattr", model_chattr)
_INSTALL_SPEC = spec_model(SPECS["install"])


def model_install(inv: Invocation) -> None:
    """install: the generic table (sources read, the destination written), and a mode with the
    setuid or setgid bit (``-m 4755``, ``-m u+s``) is privilege escalation."""
    _INSTALL_SPEC(inv)
    for value, index in parse_options(inv.argv, SPECS["install"].values).values_of("-m", "--mode"):
        if re.search(r"[+=][rwxXt]*s", value) or re.fullmatch(r"0*[2-7][0-7]{3}", value):
            inv.privilege(f"`install -m {value}` sets the setuid/setgid bit", index)


register("install", model_install)


def _files0_model(name: str) -> None:
    """``wc``/``du``/``sort --files0-from=F``: the files read are the names listed in F
    (NUL-separated; ``-`` standard input): each is read when F's text is known (a here-string,
    a pipe from a known producer, a file this text wrote), else what is read is not known."""
    spec = spec_model(SPECS[name])
    values = SPECS[name].values

    def model(inv: Invocation) -> None:
        spec(inv)
        if not any(word.startswith("--files0-from") for word in inv.argv[1:]):
            return
        from stockade.analyzer.models.text import program_text

        for value, index in parse_options(inv.argv, values).values_of("--files0-from"):
            listed = program_text(inv, value)
            if listed is None:
                inv.unknown(f"`{inv.name} --files0-from {show(value)}` reads the files listed in it, "
                            "which are not known", index)
                continue
            for listed_name in listed.split("\0")[:256]:
                if listed_name.strip():  # (a here-string's newline kept in the name: read as the plain name)
                    inv.read(listed_name.strip("\n"), index, recursive=name == "du")


    register(name, model)


for _name in ("wc", "du", "sort"):
    _files0_model(_name)


def _sort_compressor(inner: Callable[[Invocation], None]) -> Callable[[Invocation], None]:
    """sort's model, and the program ``--compress-program`` names."""
    def model(inv: Invocation) -> None:
        """sort as before; ``--compress-program=PROG``: a program sort starts for its temporary
        files (judged by ``programs.judge_program``: a file the agent can write is unknown code;
        else walked as a command line, the wider reading of what sort executes)."""
        from stockade.analyzer.models.programs import judge_program

        inner(inv)
        for option, value, index in parse_options(inv.argv, _SORT_VALUES).options:
            if option == "--compress-program" and value:
                judge_program(inv.walker, value, inv.at(index), "`sort --compress-program`")

    return model


_SORT_VALUES = frozenset(SPECS["sort"].values)
register("sort", _sort_compressor(MODELS["sort"]))
