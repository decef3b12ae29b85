"""Patterns that select the files a tool reads or acts on.

``rg -g GLOB``, ``grep -r --include=GLOB``, ``find -name/-path PATTERN -exec CMD {}``, ``fd
PATTERN -x CMD``: the pattern names the files that are read (or given to the command), below
each root at any depth.  They are judged as the glob ``ROOT/**/PATTERN`` (see
:mod:`stockade.analyzer.globs`), so ``rg -g '.env*' KEY`` reads ``.env`` files, which a policy
may deny, while ``rg -g '*.py' TODO`` reads Python files.  Tool globs match a leading dot
(``*`` in ``rg -g '*.env*'`` matches ``.env``): such a pattern is also judged without its
leading stars.  The models here run after each tool's own model.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN
from stockade.analyzer.exec import Invocation
from stockade.analyzer.globs import has_glob
from stockade.analyzer.models import (  # noqa: F401  (the models wrapped here register first)
    MODELS,
    Parsed,
    files,
    parse_options,
    register,
    text,
    vcs,
    wrappers,
)
from stockade.analyzer.models.files import _GREP_VALUES, NUL
from stockade.analyzer.models.shellstate import model_parallel
from stockade.analyzer.models.text import _RG_VALUES
from stockade.analyzer.models.wrappers import pasted_name

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model

_REGEX_META = re.compile(r"[\\^$()|+{}\[\]]")


def selected(root: str, pattern: str) -> list[str]:
    """The globs a name pattern below ``root`` is judged as (``ROOT/**/PATTERN``; a pattern with
    a ``/`` is relative to the root; leading stars also dropped, as tool globs match dots)."""
    pattern = pattern.strip()
    if not pattern or UNKNOWN in pattern:
        return [root.rstrip("/") + "/**/" + UNKNOWN]
    base = root.rstrip("/") or ""
    if "/" in pattern.strip("/"):
        stripped = pattern.lstrip("*").lstrip("/")
        out = [base + "/" + pattern.lstrip("/")]
        if stripped and stripped != pattern:
            out.append(base + "/**/" + stripped)
        return out
    pattern = pattern.strip("/")
    out = [base + "/**/" + pattern]
    stripped = pattern.lstrip("*")
    if stripped and stripped != pattern:
        out.append(base + "/**/" + stripped)
        if stripped[:1] not in (".", "?", "["):  # (`*env`, a regex's `env$`: the star may be the dot of `.env`)
            out.append(base + "/**/." + stripped)
    if stripped[:1] == "?":  # (a leading `?` may be the dot)
        out.append(base + "/**/." + stripped[1:])
    return out


def regex_glob(regex: str) -> str:
    """A glob matching (at least) the names an ``fd`` regex finds (``^\\.env`` → ``.env*``)."""
    anchored_start = regex.startswith("^")
    anchored_end = regex.endswith("$") and not regex.endswith("\\$")
    body = regex[1 if anchored_start else 0:len(regex) - (1 if anchored_end else 0)]
    body = body.replace(".*", "*").replace("\\.", "\0").replace(".", "?").replace("\0", ".")
    if _REGEX_META.search(body):
        return "*"
    return ("" if anchored_start else "*") + body + ("" if anchored_end else "*")


def _wrap(name: str, extra: Model) -> None:
    """Register ``extra`` to run after the model ``name`` already has."""
    previous = MODELS[name]

    def model(inv: Invocation) -> None:
        previous(inv)
        extra(inv)

    model.__doc__ = f"{previous.__doc__ or ''} (then {extra.__name__})"
    register(name, model)


def _any_case(glob: str) -> str:
    """A glob matching what ``glob`` matches in any case (each letter outside a bracket
    expression as ``[xX]``)."""
    out, depth = [], 0
    for char in glob:
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        out.append(f"[{char.lower()}{char.upper()}]" if char.isascii() and char.isalpha() and not depth else char)
    return "".join(out)


def _rg_type_globs(parsed: Parsed) -> list[tuple[str, int]]:
    """``rg --type-add 'e:*.env' -t e``: the globs of the file types defined on the command line
    that ``-t``/``--type`` selects (the built-in types name ordinary source files)."""
    defined: dict[str, list[str]] = {}
    for value, _ in parsed.values_of("--type-add"):
        name, colon, globs = value.partition(":")
        if colon and not globs.startswith("include:"):
            defined.setdefault(name, []).extend(glob for glob in globs.split(",") if glob)
    return [(glob, index) for value, index in parsed.values_of("-t", "--type") for glob in defined.get(value, [])]


def rg_globs(inv: Invocation) -> None:
    """``rg -g GLOB`` / ``--glob`` / ``--iglob`` (not ``!GLOB``): an override that searches the
    files it matches, hidden or not, below every searched path."""
    for word in inv.argv[1:]:  # (no word that can give -g/--glob/--iglob/--type-add: nothing to do, no parse)
        if word.startswith(("--glob", "--iglob", "--type-add")) if word[:2] == "--" else (word[:1] == "-" and "g" in word):
            break
    else:
        return
    parsed = parse_options(inv.argv, _RG_VALUES)
    globs = [(value[1:] if value[:1] == "=" else value, index) for value, index in parsed.values_of("-g", "--glob")
             if not value.lstrip("=").startswith("!")]  # (`-g=.env`: taken as the glob `.env`, the strict side)
    if parsed.has("--glob-case-insensitive"):
        globs = [(_any_case(value), index) for value, index in globs]
    # (an --iglob matches without regard to case: `.ENV*` finds `.env`)
    globs += [(_any_case(value), index) for value, index in parsed.values_of("--iglob") if not value.startswith("!")]
    globs += _rg_type_globs(parsed)
    if not globs:
        return
    words = [word for word, _ in parsed.positionals]
    if not parsed.values_of("-e", "--regexp", "-f", "--file") and words and not parsed.has("--files"):
        words.pop(0)
    # hidden directories are entered only with --hidden/-uu (or when the glob names them)
    hidden = parsed.has("--hidden", "-.", "-uu", "-uuu") or sum(
        1 for option, _, _ in parsed.options if option in ("-u", "--unrestricted")) >= 2
    for root in words or ["."]:
        for value, index in globs:
            for pattern in selected(root, value):
                inv.read(pattern, index, skip_hidden=not hidden)


def grep_includes(inv: Invocation) -> None:
    """``grep -r --include=GLOB``: reads the files the glob matches below every root."""
    for word in inv.argv:  # (no word `--include` or `--include=…`: nothing to do, no parse)
        if word.startswith("--include") and (len(word) == 9 or word[9] == "="):
            break
    else:
        return
    parsed = parse_options(inv.argv, _GREP_VALUES)
    includes = parsed.values_of("--include")
    recursive = parsed.has("-r", "-R", "--recursive", "--dereference-recursive") or any(
        value == "recurse" for value, _ in parsed.values_of("-d", "--directories"))
    if not includes or not recursive:
        return
    words = [word for word, _ in parsed.positionals]
    if words and not parsed.values_of("-e", "--regexp", "-f", "--file"):
        words.pop(0)
    for root in words or ["."]:
        for value, index in includes:
            for pattern in selected(root, value):
                inv.read(pattern, index)


_FD_VALUES = {"-e", "--extension", "-t", "--type", "-E", "--exclude", "-d", "--max-depth", "--min-depth",
              "--exact-depth", "-j", "--threads", "-S", "--size", "--changed-within", "--changed-before",
              "-o", "--owner", "--base-directory", "--path-separator", "--search-path", "-c", "--color",
              "--ignore-file", "--max-results", "--batch-size", "--format"}


def model_fd(inv: Invocation) -> None:
    """``fd [PATTERN] [PATHS] [-x|-X CMD…]``: lists the names matching the pattern (a regex,
    a glob with ``-g``) below the paths; ``-x``/``--exec`` runs CMD on each (``{}``: the name),
    ``-X``/``--exec-batch`` once on all of them."""
    argv = inv.argv
    end = len(argv)
    command: list[str] = []
    command_at = None
    for index, word in enumerate(argv[1:], start=1):
        if word in ("-x", "--exec", "-X", "--exec-batch"):
            end = index
            command = argv[index + 1:]
            command_at = index + 1
            if ";" in command:
                command = command[:command.index(";")]
            break
    parsed = parse_options(argv[:end], _FD_VALUES)
    for value, index in parsed.values_of("--ignore-file"):
        inv.read(value, index)
    words = [word for word, _ in parsed.positionals]
    roots = [value for value, _ in parsed.values_of("--search-path", "--base-directory")]
    pattern = words.pop(0) if words else ""
    roots = roots or words or ["."]
    if parsed.has("-g", "--glob"):
        glob = pattern or "*"
    elif parsed.has("-F", "--fixed-strings"):
        glob = "*" + pattern + "*" if pattern else "*"
    else:
        glob = regex_glob(pattern) if pattern else "*"
    for extension, _ in parsed.values_of("-e", "--extension"):
        glob = glob.rstrip("*") + "*." + extension.lstrip(".")
    targets = [path for root in roots for path in selected(root, glob)]
    if parsed.has("-H", "--hidden", "-u", "--unrestricted"):
        targets += hidden_variants(roots, glob)
    for root in roots:
        inv.read(root, None)
    if not command or command_at is None:
        fd_output(inv, parsed, targets)
        return
    if parsed.has("-x", "--exec") or argv[command_at - 1] in ("-x", "--exec"):
        for target in targets:
            sub = [word.replace("{}", target) for word in command]
            if not any("{}" in word for word in command):
                sub.append(target)
            inv.run(command_at, argv=sub, spans=[inv.at(command_at)] * len(sub))
    else:
        sub = [w for w in command if w != "{}"] + targets
        inv.run(command_at, argv=sub, spans=[inv.at(command_at)] * len(sub))


def hidden_variants(roots: list[str], glob: str) -> list[str]:
    """The globs of the dot-files and of the files in dot-directories (``.git/config``) a
    name glob also selects below each root when a tool does not skip hidden entries."""
    out = []
    for root in roots:
        base = root.rstrip("/") or ""
        out += [base + "/**/" + (glob if glob[:1] == "." else "." + glob), base + "/**/.*/**/" + glob]
    return out


def fd_output(inv: Invocation, parsed: Parsed, targets: list[str]) -> None:
    """What ``fd`` without ``-x``/``-X`` prints (for a following pipe or ``$(…)``): the names it
    selects, judged as their globs (``fd -e md``: ``./**/*.md``; hidden and ignored entries are
    skipped unless ``-H``/``-u``, which add them).  ``-l`` and ``--format`` print other text:
    not known."""
    if parsed.has("-l", "--list-details", "--format") or any(UNKNOWN in target for target in targets):
        return
    separator = NUL if parsed.has("-0", "--print0") else "\n"
    inv.output("".join(target + separator for target in dict.fromkeys(targets)), "the names `fd` prints")


def find_selected(inv: Invocation) -> None:
    """``find ROOT -name|-iname|-path PATTERN … -exec CMD {}``: CMD gets the names the
    patterns select (judged as ``ROOT/**/PATTERN``), besides the whole tree ``find``'s own
    model gives it."""
    argv = inv.argv
    roots: list[str] = []
    index = 1
    while index < len(argv) and (argv[index] in ("-H", "-L", "-P") or argv[index].startswith("-O")):
        index += 1
    while index < len(argv) and not (argv[index].startswith("-") or argv[index] in ("(", "!", ")", ",")):
        roots.append(argv[index])
        index += 1
    roots = roots or ["."]
    patterns: list[str] = []
    while index < len(argv):
        word = argv[index]
        if word in ("-name", "-iname") and index + 1 < len(argv):
            patterns.append(argv[index + 1])
        elif word in ("-path", "-ipath", "-wholename", "-iwholename") and index + 1 < len(argv):
            patterns.append(_relative_path_pattern(argv[index + 1], roots))
        elif word in ("-regex", "-iregex") and index + 1 < len(argv):
            # (a regular expression matched against the whole name: as the glob it can match)
            glob = regex_glob("^" + argv[index + 1].lstrip("^").removesuffix("$") + "$")
            patterns.append(_relative_path_pattern(_any_case(glob) if word == "-iregex" else glob, roots))
        elif word in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(argv) and argv[end] not in (";", "+"):
                end += 1
            command = argv[index + 1:end]
            if command and patterns and any("{}" in word for word in command):
                for root in roots:
                    for pattern in patterns:
                        for target in selected(root, pattern):
                            sub = [word.replace("{}", pasted_name(target, word)) for word in command]
                            inv.run(index + 1, argv=sub, spans=inv.spans[index + 1:end])
            index = end
        index += 1
    actions = ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fls", "-fprintf", "-quit")
    if patterns and not any(word in actions for word in argv):
        # what it prints, for a following pipe or `$(…)`: the names the patterns select
        names = [target for root in roots for pattern in patterns for target in selected(root, pattern)]
        if all(UNKNOWN not in name for name in names):
            inv.output("".join(name + "\n" for name in names), "the names `find` prints")


def _relative_path_pattern(pattern: str, roots: list[str]) -> str:
    """A ``-path`` pattern (matched against the whole name find prints) below the roots."""
    for root in roots:
        if pattern.startswith(root.rstrip("/") + "/"):
            return pattern[len(root.rstrip("/")) + 1:]
    return pattern.lstrip("*").lstrip("/") or "*"


def git_ls_files(inv: Invocation) -> None:
    """``git ls-files``, ``git diff/show/log --name-only``: print names of files below the working directory (relative ones):
    judged as the glob ``**/*`` (a name below here, not a hidden one).  Tracked dot-files
    (``.env.example``) are left out on purpose: what git lists is committed, and committed
    content is readable through git's objects anyway (``git show HEAD:.env``, inside the
    sandbox too); counting them would deny every ``wc -l $(git ls-files)``."""
    if inv.argv[1:2] == ["ls-files"] or (inv.argv[1:2] in (["diff"], ["show"], ["log"], ["diff-tree"], ["ls-tree"],
                                                           ["whatchanged"]) and "--name-only" in inv.argv):
        globs = _pathspec_globs(inv.argv[2:]) if inv.argv[1] == "ls-files" else None
        inv.output(globs or "**/*\n", f"the names `git {inv.argv[1]}` prints")


def _pathspec_globs(words: list[str]) -> str | None:
    """``git ls-files '*.env'``: the names it prints are the tracked files its glob pathspecs
    match (a leading ``*`` matches across directories, and a dot: ``**/*.env``, ``**/.env``);
    None when an operand is not a glob (every name below may be printed)."""
    operands = [word for word in words if word[:1] != "-" and word != "--"]
    if not operands or any(not has_glob(word) or word[:1] == ":" or UNKNOWN in word for word in operands):
        return None
    out: list[str] = []
    for word in operands:
        out.append(word)
        if word[:1] == "*" and "/" not in word:
            stripped = word.lstrip("*")
            out.extend(["**/" + word, "**/" + stripped] if stripped else [])
    return "".join(line + "\n" for line in out)


def listed_names(inv: Invocation) -> None:
    """``rg -l``/``--files [ROOT…]``, ``grep -l PATTERN FILE…``: what they print (for a following
    pipe or ``$(…)``): rg, names of files below each root — judged as the globs ``ROOT/**/*``
    (or ``ROOT/**/GLOB`` for its ``-g`` globs), dot-files and dot-directories only with
    ``--hidden``/``-uu``; grep without ``-r``, some of its operands.  (``grep -rl`` prints any
    name below, dot-files and ``.git`` included: not known.)"""
    argv = inv.argv
    rg = inv.name == "rg"
    for word in argv[1:]:  # (no -l/-L/--files…: nothing to do, no parse)
        if word[:2] == "--" and word.startswith(("--files", "--files-with")):
            break
        if word[:1] == "-" and word[1:2] != "-" and ("l" in word or (not rg and "L" in word)):
            break
    else:
        return
    parsed = parse_options(argv, _RG_VALUES if rg else _GREP_VALUES)
    if not parsed.has("-l", "--files-with-matches", "--files-without-match", *(("--files",) if rg else ("-L",))):
        return
    words = [word for word, _ in parsed.positionals]
    if words and not parsed.has("--files") and not parsed.values_of("-e", "--regexp", "-f", "--file"):
        words.pop(0)
    if not rg:
        if parsed.has("-r", "-R", "--recursive", "--dereference-recursive") or parsed.values_of("-d",
                                                                                            "--directories"):
            return  # (any file below, dot-files such as `.env` and `.git/config` included: not known)
        if words and all(UNKNOWN not in word for word in words):
            inv.output("".join(word + "\n" for word in words), f"the names `{inv.name}` prints")
        return
    hidden = parsed.has("--hidden", "-.", "-uu", "-uuu") or sum(
        1 for option, _, _ in parsed.options if option in ("-u", "--unrestricted")) >= 2
    patterns = [value for value, _ in parsed.values_of("-g", "--glob", "--iglob") if not value.startswith("!")] or ["*"]
    names: list[str] = []
    for root in words or ["."]:
        base = root.rstrip("/") or "/"
        names.append(root)  # (a file operand is printed as given)
        for pattern in patterns:
            names += selected(root, pattern)
            if hidden:  # dot-files, and files in dot-directories (`.git/config`)
                names += [base + "/**/" + (pattern if pattern[:1] == "." else "." + pattern),
                          base + "/**/.*/**/" + pattern]
    if all(UNKNOWN not in name for name in names):
        inv.output("".join(name + "\n" for name in dict.fromkeys(names)), f"the names `{inv.name}` prints")


_LS_VALUES = frozenset({"-I", "--ignore", "--hide", "--block-size", "-T", "--tabsize", "-w", "--width", "--format",
                        "--sort", "--time", "--time-style", "--quoting-style", "--indicator-style"})


#: ls options that print names only, one a line or in columns (``-F``/``-p`` add a mark)
_LS_NAME_FLAGS = frozenset("1dAaUtrSXvcuFpCx")
_LS_NAME_LONG = frozenset({"--directory", "--all", "--almost-all", "--reverse", "--classify", "--color",
                           "--color=never", "--color=auto", "--color=always", "--sort", "--"})


def _names_only(parsed: Parsed) -> bool:
    """Whether ``ls`` given these options prints names only (no long listing, no recursion)."""
    for option, _, _ in parsed.options:
        if (option.startswith("--") and option not in _LS_NAME_LONG) or \
                (not option.startswith("--") and not set(option[1:]) <= _LS_NAME_FLAGS):
            return False
    return True


def ls_default(inv: Invocation) -> None:
    """``ls`` without operands lists the working directory (``cd ~/.ssh && ls``) and prints the
    names there (judged as the glob ``*``, with ``-a``/``-A`` also ``.*``); ``ls GLOB…``
    prints the names each glob matches: what it prints (for ``$(ls /usr/bin/sud*) id``, a pipe)
    is those globs, judged as the files — or, in command position, the programs — they could be."""
    parsed = parse_options(inv.argv, _LS_VALUES, optional=frozenset({"--color"}))
    if not parsed.positionals:
        inv.read(".", None, recursive=parsed.has("-R", "--recursive"))
        if _names_only(parsed) and not parsed.has("-d", "--directory"):  # (`ls | while read f`, `$(ls)`)
            hidden = parsed.has("-a", "-A", "--all", "--almost-all")
            inv.output(".*\n*\n" if hidden else "*\n", "the names `ls` prints")
        return

    if not _names_only(parsed):
        return
    words = [word for word, _ in parsed.positionals]
    if all(UNKNOWN not in word and has_glob(word.rstrip("/").rpartition("/")[2]) for word in words):
        inv.output("".join(word + "\n" for word in words), "the names `ls` prints")


def ag_file_regex(inv: Invocation) -> None:
    """``ag -G REGEX``/``--file-search-regex`` (``pt -G``/``--file-search-regexp``): only files
    whose path the regex matches are searched, below every searched path: judged as the glob the
    regex could match there (``ag --hidden -G '\\.env' KEY`` reads ``.env`` files)."""
    for word in inv.argv[1:]:  # (no word that can give -G: nothing to do, no parse)
        if word.startswith("--file-search-regex") or (word[:1] == "-" and word[1:2] != "-" and "G" in word):
            break
    else:
        return
    from stockade.analyzer.models.text import _AG_VALUES

    values = {*_AG_VALUES, "--file-search-regexp"}
    parsed = parse_options(inv.argv, values, optional=frozenset({"-C", "--context"}))
    regexes = parsed.values_of("-G", "--file-search-regex", "--file-search-regexp")
    if not regexes:
        return
    words = [word for word, _ in parsed.positionals]
    if not parsed.values_of("-g") and words:
        words.pop(0)
    hidden = parsed.has("--hidden", "-u", "--unrestricted")
    for root in words or ["."]:
        for value, index in regexes:
            for pattern in selected(root, regex_glob(value)):
                if hidden or not _names_hidden(pattern[len(root):]):  # (ag skips dot-files and dot-directories)
                    inv.read(pattern, index, skip_hidden=not hidden)


def _names_hidden(pattern: str) -> bool:
    """Whether a glob below a root names a dot-file or passes through a dot-directory
    (``**/.env*``)."""
    return any(part[:1] == "." and part not in (".", "..") for part in pattern.split("/"))


_LOCATE_VALUES = frozenset({"-d", "--database", "-l", "-n", "--limit", "-r", "--regexp", "--regex", "-e"})


def model_locate(inv: Invocation) -> None:
    """``locate PATTERN…`` prints the names in its database (any file on the machine) that hold
    PATTERN (a glob matches the whole name; ``-b``: the last component): judged as the globs
    ``/**/*PATTERN*`` — a pattern that can name a secret (``locate id_rsa | xargs cat``) is
    that name.  A regular expression (``-r``) or ``-d`` database: names not known."""
    parsed = parse_options(inv.argv, _LOCATE_VALUES)
    for value, index in parsed.values_of("-d", "--database"):
        inv.read(value, index)
    patterns = [word for word, _ in parsed.positionals]
    if not patterns or parsed.values_of("-r", "--regexp", "--regex", "-d", "--database") or \
            any(UNKNOWN in word or ("/" in word.strip("*") and parsed.has("-b", "--basename")) for word in patterns):
        inv.output(None, f"the names `{inv.name}` prints")
        return
    names = []
    for pattern in patterns:
        if has_glob(pattern):  # (matched against the whole name: at any depth, the strict side)
            names.append(pattern if pattern[:1] == "/" else "/**/" + pattern)
        else:
            names.append("/**/*" + pattern + "*")
            if not parsed.has("-b", "--basename"):  # (a directory whose name holds it: every name below)
                names.append("/**/*" + pattern + "*/**")
    inv.output("".join(name + "\n" for name in names), f"the names `{inv.name}` prints")


def model_compgen(inv: Invocation) -> None:
    """``compgen -c [PREFIX]`` (``-A command``) prints the names of commands starting with PREFIX: the glob
    ``PREFIX*`` (in command position, the programs it could be); other lists are not known;
    ``-C CMD`` runs CMD and ``-F FUNC`` calls FUNC (walked); ``-W LIST`` expands LIST as words
    (its substitutions run)."""
    argv = inv.argv
    for index in range(1, len(argv) - 1):
        if argv[index] == "-C":  # (`compgen -C CMD WORD` runs CMD now, for the words it prints)
            inv.script(argv[index + 1], index + 1, what="the command `compgen -C` runs")
        elif argv[index] == "-W":  # (`compgen -W LIST`: LIST is expanded, substitutions and all)
            inv.walker.nested_script(": " + argv[index + 1], inv.at(index + 1), exact=False)
        elif argv[index] == "-F":  # (`compgen -F FUNC WORD` calls the function now)
            inv.run(index + 1, argv=[argv[index + 1]], spans=[inv.at(index + 1)])
    if argv[1:3] == ["-A", "command"]:  # (`compgen -A command` is `compgen -c`)
        argv = [argv[0], "-c", *argv[3:]]
    if len(argv) in (2, 3) and argv[1] == "-c" and (len(argv) == 2 or not argv[2].startswith("-")):
        prefix = argv[2] if len(argv) == 3 else ""
        if UNKNOWN not in prefix and "/" not in prefix:
            inv.output(re.sub(r"([*?\[\]])", r"\\\1", prefix) + "*\n", "the command names `compgen -c` prints")
            return
    inv.output(None, "the names `compgen` prints")


_wrap("rg", rg_globs)
_wrap("rg", listed_names)
for _ls in ("ls", "dir", "vdir"):
    _wrap(_ls, ls_default)
_wrap("git", git_ls_files)
for _grep in ("grep", "egrep", "fgrep"):
    if _grep in MODELS:
        _wrap(_grep, grep_includes)
        _wrap(_grep, listed_names)
_wrap("find", find_selected)
register("pt", MODELS["ag"])  # (the platinum searcher: ag's options)
for _ag in ("ag", "pt"):
    _wrap(_ag, ag_file_regex)
register("compgen", model_compgen, builtin=True)
register("locate plocate mlocate slocate", model_locate)
register("fd fdfind", model_fd)
register("parallel", model_parallel)  # (here: after wrappers.py, which has a cruder one)
