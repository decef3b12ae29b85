"""Tools that hide commands in their arguments: find, sed, awk, rg, tar, zip, editors."""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, Delete, Read, Write, show
from stockade.analyzer.exec import Invocation, Stdin
from stockade.analyzer.judge import MATCHED_BELOW
from stockade.analyzer.models import MODELS, Parsed, parse_options, register
from stockade.analyzer.models import shells as _shells  # noqa: F401  (perl/ruby's interpreter model, wrapped below)
from stockade.analyzer.models.net import contact_url
from stockade.analyzer.models.programs import judge_program
from stockade.analyzer.regex import LazyPattern

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model

_FIND_VALUE_TESTS = {"-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-type", "-xtype", "-size",
                     "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-newer", "-perm", "-user",
                     "-group", "-maxdepth", "-mindepth", "-uid", "-gid", "-links", "-inum", "-samefile",
                     "-wholename", "-iwholename", "-lname", "-ilname", "-printf", "-fstype", "-used",
                     "-regextype", "-context", "-newermt", "-newerct", "-anewer", "-cnewer"}


#: find actions whose entries are those the tests before them select
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete"})


def model_find(inv: Invocation) -> None:
    """find ROOTS EXPR: roots are listed; ``-delete`` deletes below them; ``-exec``/``-execdir``/
    ``-ok``/``-okdir`` run a command on each found path (``{}`` = a path below a root);
    ``-fprint*``/``-fls`` write files."""
    argv = inv.argv
    index = 1
    roots: list[tuple[str, int]] = []
    while index < len(argv) and (argv[index] in ("-H", "-L", "-P") or argv[index].startswith("-O")):
        index += 1
    while index < len(argv) and not (argv[index].startswith("-") or argv[index] in ("(", "!", ")", ",")):
        roots.append((argv[index], index))
        index += 1
    if not roots:
        roots = [(".", 0)]
    for root, root_index in roots:
        inv.read(root, root_index or None)
    root_word = roots[0][0] if len(roots) == 1 else UNKNOWN
    expression = index
    while index < len(argv):
        word = argv[index]
        named = _find_matched_name(argv, expression, index) if word in _FIND_ACTIONS else None
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(argv) and argv[end] not in (";", "+"):
                end += 1
            sub = [w.replace("{}", root_word) for w in argv[index + 1:end]]
            if sub:
                for root, _ in roots:
                    # {} is each matched entry: ROOT/…/NAME when -name tests select them
                    for found in ([root.rstrip("/") + MATCHED_BELOW + name for name in named] if named else [root]):
                        argv_for_root = [orig.replace("{}", found) if "{}" in orig else w
                                         for w, orig in zip(sub, argv[index + 1:end], strict=True)]
                        _run_on_tree(inv, argv_for_root, index + 1, end, argv[index + 1:end])
            index = end + 1
            continue
        if word == "-delete":
            for root, _ in roots:
                if named:
                    for name in named:  # only entries whose name matches are deleted, at any depth below the root
                        inv.delete(root.rstrip("/") + MATCHED_BELOW + name, index)
                else:
                    inv.delete(root, index, recursive=True)
        elif word in ("-fprint", "-fprint0", "-fls", "-fprintf") and index + 1 < len(argv):
            inv.write(argv[index + 1], index + 1)
            index += 1
        elif word in ("-newer", "-anewer", "-cnewer", "-samefile") and index + 1 < len(argv):
            inv.read(argv[index + 1], index + 1)  # (the reference file is looked at)
            index += 1
        elif word == "-files0-from" and index + 1 < len(argv):
            inv.read(argv[index + 1], index + 1)
            inv.unknown(f"`find -files0-from {show(argv[index + 1])}` searches the roots listed in it", index + 1)
            index += 1
        elif word in _FIND_VALUE_TESTS:
            index += 1
        index += 1


def _find_branches(argv: list[str], start: int, stop: int | None = None) -> list[tuple[int, int]]:
    """The top-level alternatives of a find expression (split at ``-o``/``-or``/``,`` outside
    parentheses and ``-exec`` commands), from ``start`` to ``stop`` (the end): (first index,
    end index) of each."""
    stop = len(argv) if stop is None else stop
    branches: list[tuple[int, int]] = []
    depth = 0
    begin = index = start
    while index < stop:
        word = argv[index]
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            while index < len(argv) and argv[index] not in (";", "+"):
                index += 1
        elif word == "(":
            depth += 1
        elif word == ")":
            depth -= 1
        elif word in ("-o", "-or", ",") and depth == 0:
            branches.append((begin, index))
            begin = index + 1
        elif word in _FIND_VALUE_TESTS:
            index += 1
        index += 1
    branches.append((begin, stop))
    return branches


def _find_matched_name(argv: list[str], start: int, at: int | None = None) -> list[str] | None:
    """The name globs every entry a find action acts on matches one of: those of the
    alternative the action at ``at`` is in (``-path ./x -prune -o -name '*.log' -delete``: the
    second), from a ``-name`` test (``-iname``: lowercased) or a group of alternatives that each
    name one (``\\( -name '*.orig' -o -name '*.rej' \\)``), not negated; with ``at`` None, of the
    whole expression when it has no alternation.  None: any name."""
    branches = _find_branches(argv, start)
    if at is None and len(branches) != 1:
        return None
    chosen = [(lo, hi) for lo, hi in branches if at is None or lo <= at < hi]
    if not chosen:
        return None
    names = _conjunct_names(argv, *chosen[0])
    if names is None or any("/" in name or UNKNOWN in name for name in names):
        return None
    return names


def _conjunct_names(argv: list[str], low: int, high: int, depth: int = 0) -> list[str] | None:
    """The names a conjunction of find tests (``argv[low:high]``, no top-level ``-o``) limits
    entries to: its first non-negated ``-name`` test or group whose every alternative has one
    (an entry passes all the tests, so any one of them bounds the names); None: not limited."""
    index = low
    while index < high:
        word = argv[index]
        negated = index > low and argv[index - 1] in ("!", "-not")
        if word == "(":
            close, level = index + 1, 1
            while close < high and level:
                level += {"(": 1, ")": -1}.get(argv[close], 0)
                close += 1
            if level or depth > 8:
                return None
            if not negated:
                names: list[str] = []
                for lo, hi in _find_branches(argv, index + 1, close - 1):
                    found = _conjunct_names(argv, lo, hi, depth + 1)
                    if found is None:
                        break
                    names += found
                else:
                    if names:
                        return names
            index = close
            continue
        if word == ")":
            return None
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            while index < high and argv[index] not in (";", "+"):
                index += 1
        elif word in ("-name", "-iname") and index + 1 < high:
            if not negated:  # (`! -name x` only narrows what another test selected)
                return [argv[index + 1].lower() if word == "-iname" else argv[index + 1]]
            index += 1
        elif word in _FIND_VALUE_TESTS:
            index += 1
        index += 1
    return None


def _run_on_tree(inv: Invocation, argv: list[str], start: int, end: int, original: list[str]) -> None:
    # a found path is anything below the root: effects on it are recursive over the root
    effects = inv.walker.effects
    mark = len(effects)
    inv.run(start, argv=argv, spans=inv.spans[start:end])
    placeholder_paths = {inv.path(w) for w, orig in zip(argv, original, strict=True)
                         if "{}" in orig and UNKNOWN not in w}
    for position in range(mark, len(effects)):
        effect = effects[position]
        if isinstance(effect, (Delete, Write, Read)) and effect.path in placeholder_paths:
            effects[position] = type(effect)(effect.path, effect.span, True)


_SED_CMD_RE = LazyPattern(r"\s*(?:(?:\d+(?:~\d+)?|\$|/(?:[^/\\]|\\.)*/[IM]*|\\(.)(?:(?!\1).)*\1)(?:\s*,\s*(?:\d+|\$|/(?:[^/\\]|\\.)*/[IM]*|[+~]\d+))?)?\s*!?\s*")


#: a sed command after an optional address, with the separators and braces of a script
_SED_SCRIPT_SHAPE = LazyPattern(r"^\s*(?:[0-9$]+|/[^/]*/)?[!]?\s*[{};]|[;{}\n]\s*[ewWrRs]")


def _reads_as_sed_script(word: str) -> bool:
    """Whether an operand of sed reads as a script rather than a file name: braces or `;`
    separating commands (``$!{h};${x;e cat F``)."""
    return UNKNOWN not in word and bool(_SED_SCRIPT_SHAPE.search(word))


def sed_script(inv: Invocation, script: str, index: int) -> None:
    """Scan a sed script for commands that run code (``e``, ``s///e``) or touch files (``w``,
    ``r``, ``R``, ``W``, ``s///w``)."""
    if UNKNOWN in script:
        inv.unknown("the sed script is not known before it runs", index)
        return
    for line in re.split(r"[;\n]", script):
        rest = line
        match = _SED_CMD_RE.match(rest)
        if match:
            rest = rest[match.end():]
        rest = rest.lstrip("{} \t")
        if not rest:
            continue
        cmd = rest[0]
        arg = rest[1:].strip()
        if cmd == "e":
            if arg:
                inv.script(arg, index, what="the sed `e` command")
            else:
                inv.unknown("sed `e` runs the pattern space as a command", index)
        elif cmd in "wW" and arg:
            inv.write(arg, index)
        elif cmd in "rR" and arg:
            inv.read(arg, index)
        elif cmd in "sy" and len(rest) > 1:
            delim = rest[1]
            parts = re.split(r"(?<!\\)" + re.escape(delim), rest[2:])
            if len(parts) >= 3:
                flags = delim.join(parts[2:])  # the flags, and a `w` file name that may hold the delimiter
                if "e" in re.sub(r"w.*", "", flags) and cmd == "s":
                    _sed_substitute_exec(inv, parts[0], parts[1], delim, index)
                wmatch = re.search(r"w\s*(\S.*)", flags)
                if wmatch and cmd == "s":
                    inv.write(wmatch.group(1).strip(), index)



#: sed regexes that match a whole pattern space (so ``s/RE/TEXT/e`` runs TEXT itself)
_SED_WHOLE = frozenset({".*", "^.*", ".*$", "^.*$"})


def _sed_substitute_exec(inv: Invocation, regex: str, replacement: str, delim: str, index: int | None) -> None:
    """``s/RE/TEXT/e``: the pattern space after the substitution is run as a command.  A
    replacement without ``&`` and without escapes other than ``\\\\``, ``\\n`` and the
    escaped delimiter is written as it runs (those unescaped): its commands are walked;
    unless RE matches the whole pattern space, the rest of the line around it is not known
    (and a line RE does not match runs as it is)."""
    # (any other escape — `\\1`, GNU's case conversions `\\U…`, `\\l` — changes the text that runs)
    if "&" not in replacement and not re.search(r"\\[^\\n" + re.escape(delim) + "]", replacement):
        command = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), replacement)
        if command.strip():
            inv.script(command, index, what="the sed `s///e` command")
            if regex in _SED_WHOLE:
                return
    inv.unknown("sed `s///e` runs the result as a command", index)

def model_sd(inv: Invocation) -> None:
    """``sd [-p] [-s] [-F] [-f FLAGS] [-n N] FIND REPLACE [FILE…]``: rewrites the files in place
    (``-p``/``--preview`` only prints); with no file it filters stdin."""
    parsed = parse_options(inv.argv, {"-f", "--flags", "-n", "--max-replacements"})
    preview = parsed.has("-p", "--preview")
    for word, index in parsed.positionals[2:]:
        (inv.read if preview else inv.write)(word, index)


def project_file(inv: Invocation, path: str) -> bool:
    """Whether the script file ``path`` (``sed -f``, ``awk -f``) is the project's own: a file in
    the workspace this text did not write — run as ``bash scripts/x.sh`` is (see
    docs/limitations.md: one command text at a time); elsewhere, or written here with content
    not known, it cannot be seen into."""
    from stockade.analyzer.models.fresh import written_by

    if path in ("-", "") or path.startswith(("/dev/", "/proc/")):
        return False  # (standard input, a pipe: not a file of the project)
    resolved = inv.path(path)
    workspace = inv.walker.context.workspace.rstrip("/")
    return UNKNOWN not in resolved and resolved.startswith(workspace + "/") and \
        written_by(inv.walker, resolved) is None


def program_text(inv: Invocation, path: str) -> str | None:
    """The known text of a program file a tool reads (``-f FILE``): its standard input when
    ``-``/``/dev/stdin`` is a here-string or known output, or a file this text wrote with known
    content; None when not known."""
    if path in ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
        text = inv.stdin.text
    else:
        from stockade.analyzer.models.fresh import known_content

        resolved = path if path[:8] == "/dev/fd/" else inv.path(path)  # (`<(echo CODE)`: its known text)
        text = None if UNKNOWN in resolved and resolved[:8] != "/dev/fd/" else known_content(inv.walker, resolved)
    return None if text is None or UNKNOWN in text else text


def model_sed(inv: Invocation) -> None:
    """sed: the script is scanned; ``-i`` rewrites the input files; ``-f`` reads a script."""
    # `-i[SUFFIX]`/`--in-place[=SUFFIX]`: the suffix is only ever attached, never the next word
    parsed = parse_options(inv.argv, {"-e", "--expression", "-f", "--file", "-l", "--line-length"},
                           optional=frozenset({"-i", "--in-place"}))
    in_place = any(option in ("-i", "--in-place") or option.startswith("-i") for option, _, _ in parsed.options)
    scripts = parsed.values_of("-e", "--expression")
    for path, index in parsed.values_of("-f", "--file"):
        known = program_text(inv, path)
        if known is not None:
            scripts = [*scripts, (known, index)]  # (`sed -f - FILE <<< SCRIPT`, a file written here: known)
            if path not in ("-", "/dev/stdin"):
                inv.read(path, index)
            continue
        inv.read(path, index)
        if not project_file(inv, path):
            inv.unknown("the sed script file is not visible", index)
    words = list(parsed.positionals)
    if not scripts and not parsed.values_of("-f", "--file") and words:
        scripts = [words.pop(0)]
    elif scripts and words and _reads_as_sed_script(words[0][0]):
        # `sed -n '${x;e CMD' -e '}' FILE`: GNU sed takes the first operand for a file once -e is
        # given, other seds and older releases for the script's first piece: judged as both
        scripts = [words[0], *scripts]
    if len(scripts) > 1:  # (sed joins its -e scripts with newlines: a block or `e` may span them)
        scripts = [("\n".join(script for script, _ in scripts), scripts[0][1])]
    for script, index in scripts:
        sed_script(inv, script, index)
    for word, index in words:
        inv.read(word, index)
        if in_place:
            inv.write(word, index)


_AWK_SYSTEM_RE = LazyPattern(r"\bsystem\s*\(\s*(\"(?:[^\"\\]|\\.)*\")?")
_AWK_PIPE_RE = LazyPattern(r"(?<![|])\|(?![|])\s*(&?)")
_AWK_OUT_RE = LazyPattern(r"\bprint[f]?\b[^;}]*?(>>?)\s*(\"(?:[^\"\\]|\\.)*\"|[A-Za-z_]\w*|\()")
#: one atom of a concatenated awk file name: a string, ``ENVIRON["NAME"]`` or a variable
_AWK_ATOM_RE = LazyPattern(r"\s*(?:(\"(?:[^\"\\]|\\.)*\")|ENVIRON\s*\[\s*\"(\w+)\"\s*\]|([A-Za-z_]\w*)(?![\w(\[])"
                           r"|ARGV\s*\[\s*([0-9]+)\s*\])")
#: the variables the shell gives every program's environment (see the walker's initial ones)
_ENVIRONMENT_NAMES = frozenset({"HOME", "TMPDIR", "PWD"})
#: ``"cmd" | getline`` (a concatenation of strings and names at the start of an expression), or a pipe
_AWK_GETLINE_RE = LazyPattern(r"(?:(?<=[;{(\n!&|])|^)[ \t]*((?:\"(?:[^\"\\]|\\.)*\"[ \t]*|ENVIRON\s*\[\s*\"\w+\"\s*\][ \t]*"
                              r"|[A-Za-z_]\w*(?![\w(\[])[ \t]*)+)"
                              r"\|\s*&?\s*getline\b|\|\s*&?\s*")
_AWK_IN_RE = LazyPattern(r"\bgetline\b[^;}]*?<\s*(\"(?:[^\"\\]|\\.)*\"|[A-Za-z_]\w*)")


_AWK_ASSIGN_RE = LazyPattern(r"(?<![=!<>~\w$])([A-Za-z_]\w*)\s*=(?!=)\s*")
#: the builtins of constant strings the analysis evaluates: ``tolower("X")``, ``substr(s, 2)`` …
_AWK_CALL_RE = LazyPattern(r"\s*(tolower|toupper|substr|sprintf)\s*\(")
_AWK_NUMBER_RE = LazyPattern(r"\s*([0-9]+)")


_NO_STRINGS: dict[str, str] = {}


def _awk_quote(value: str) -> str:
    """A string as an awk literal (how :func:`_awk_strings` holds known values)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _awk_literal(literal: str) -> str:
    """The value of an awk string literal (with its quotes)."""
    return bytes(literal[1:-1], "utf-8").decode("unicode_escape", "replace")


def _awk_strings(program: str, given: dict[str, str], inv: Invocation | None = None) -> dict[str, str]:
    """The variables of an awk program that hold one known string: set once (by ``-v``, an
    operand, or ``name = EXPR`` in the program, where EXPR concatenates strings, known
    variables, ``ENVIRON["NAME"]`` and the string builtins of constants — see
    :func:`_awk_concat`) and never otherwise assigned."""
    counts: dict[str, int] = {}
    values: dict[str, int] = {}  # name → where its one assigned expression starts
    for match in _AWK_ASSIGN_RE.finditer(program):
        name = match.group(1)
        counts[name] = counts.get(name, 0) + 1
        values[name] = match.end()
    for name in list(counts) + list(given):
        # changed otherwise: `c += …`, `c++`, `getline c`, `sub(…, c)`, `for (c in a)`, or a
        # function's parameter of that name (which holds what each call passes)
        if re.search(rf"(?:\+\+|--|\bgetline\s*)\s*\b{name}\b|\b{name}\s*(?:\+\+|--|[-+*/%^]=)"
                     rf"|\b(?:g?sub|split|match|patsplit|gensub)\s*\([^)]*\b{name}\b"
                     rf"|\bfor\s*\(\s*{name}\s+in\b|\bfunc(?:tion)?\s+\w+\s*\([^)]*\b{name}\b", program):
            counts[name] = 2
    known = {name: _awk_quote(value) for name, value in given.items() if name not in counts and UNKNOWN not in value}
    pending = [name for name, count in counts.items() if count == 1 and name not in given]
    for _ in range(4):  # (a value may name variables assigned later in the text: a few passes)
        progress = False
        for name in list(pending):
            value, end = _awk_concat(inv, program, values[name], known)
            if value is not None and program[end:].lstrip(" \t")[:1] in (";", "}", "\n", "#", ""):
                known[name] = _awk_quote(value)
                pending.remove(name)
                progress = True
        if not progress:
            break
    return known


def _awk_environ(inv: Invocation | None, name: str) -> str | None:
    """``ENVIRON["NAME"]``: the value the command's environment gives NAME, when known."""
    if inv is None:
        return None
    value = inv.env.get(name) if inv.env else None
    if value is None and (name in _ENVIRONMENT_NAMES or name in inv.walker.state.exported):
        value = inv.walker.lookup(name)
    return None if value is None or UNKNOWN in value else value


def _awk_concat(inv: Invocation | None, program: str, position: int, strings: dict[str, str],
                depth: int = 0) -> tuple[str | None, int]:
    """The value of the awk expression at ``position`` when it is a concatenation of known
    parts — string literals, variables holding a known string, ``ENVIRON["NAME"]`` of a known
    value, parenthesised concatenations and ``tolower``/``toupper``/``substr``/``sprintf``
    (``%s`` only) of them — and where it ends; (None, position) when some part is computed."""
    parts: list[str] = []
    start = position
    while depth < 8:
        while program[position:position + 1] == " ":
            position += 1
        if program[position:position + 1] == "(":
            inner, end = _awk_concat(inv, program, position + 1, strings, depth + 1)
            if inner is None or program[end:].lstrip()[:1] != ")":
                return None, start
            parts.append(inner)
            position = program.index(")", end) + 1
            continue
        call = _AWK_CALL_RE.match(program, position)
        if call is not None:
            arguments, end = _awk_arguments(inv, program, call.end(), strings, depth)
            value = None if arguments is None else _awk_builtin(call.group(1), arguments)
            if value is None:
                return None, start
            parts.append(value)
            position = end
            continue
        match = _AWK_ATOM_RE.match(program, position)
        if match is None or "\n" in program[position:match.start(match.lastindex or 0)]:
            break  # (a newline ends the statement)
        literal, environ, variable, argument = match.groups()
        if argument is not None:  # `ARGV[1]`: an operand (as the strings hold it; see awk_program)
            variable = f"ARGV[{argument}]"
        if variable is not None:
            literal = strings.get(variable)
            if literal is None:
                return None, start
        if environ is not None:
            value = _awk_environ(inv, environ)
            if value is None:
                return None, start
            parts.append(value)
        elif literal is not None and literal.startswith('"'):
            parts.append(_awk_literal(literal))
        else:
            return None, start
        position = match.end()
    if not parts:
        return None, start
    return "".join(parts), position


def _awk_arguments(inv: Invocation | None, program: str, position: int, strings: dict[str, str],
                   depth: int) -> tuple[list[str] | None, int]:
    """The known arguments of a builtin call from after its ``(`` (numbers as text), and the
    position after its ``)``; None when one is computed."""
    arguments: list[str] = []
    while True:
        number = _AWK_NUMBER_RE.match(program, position)
        if number is not None and program[number.end():].lstrip()[:1] in (",", ")"):
            arguments.append(number.group(1))
            position = number.end()
        else:
            value, end = _awk_concat(inv, program, position, strings, depth + 1)
            if value is None:
                return None, position
            arguments.append(value)
            position = end
        rest = program[position:].lstrip()
        position = len(program) - len(rest) + 1
        if rest[:1] == ")":
            return arguments, position
        if rest[:1] != ",":
            return None, position


def _awk_builtin(name: str, arguments: list[str]) -> str | None:
    """A string builtin of known arguments (None: not evaluated)."""
    if name in ("tolower", "toupper"):
        return None if len(arguments) != 1 else arguments[0].lower() if name == "tolower" else arguments[0].upper()
    if name == "substr" and len(arguments) in (2, 3) and all(a.isdigit() for a in arguments[1:]):
        begin = max(int(arguments[1]), 1) - 1
        return arguments[0][begin:] if len(arguments) == 2 else arguments[0][begin:begin + int(arguments[2])]
    if name == "sprintf" and arguments:
        pieces = arguments[0].split("%s")
        if any("%" in piece.replace("%%", "") for piece in pieces) or len(pieces) != len(arguments):
            return None
        text = pieces[0]
        for argument, piece in zip(arguments[1:], pieces[1:], strict=True):
            text += argument + piece
        return text.replace("%%", "%")
    return None


def _awk_file_name(inv: Invocation, program: str, start: int, strings: dict[str, str]) -> str | None:
    """The file name of ``print > EXPR`` from ``start``: a concatenation of known parts (see
    :func:`_awk_concat`; None: some part is computed)."""
    value, position = _awk_concat(inv, program, start, strings)
    rest = program[position:].lstrip()
    if value is None or (rest and rest[0] not in ";}\n|"):
        return None  # (an operator or a call: computed)
    return value


#: gawk's special network files ``/inet[46]/tcp|udp/LPORT/HOST/RPORT`` (a host of 0: a server)
_AWK_INET = re.compile(r"/inet[46]?/(?:tcp|udp)/[^/\"]*/([^/\"]*)/([^/\"]*)")


def awk_program(inv: Invocation, program: str, index: int, given: dict[str, str] | None = None,
                operands: list[str] | None = None) -> None:
    """Scan an awk program: ``system("…")`` with literal code is walked (also through a
    variable holding one known string: ``-v c='…'``, ``c = "…"``); computed commands, pipes
    to or from commands are unknown; ``print > "file"`` writes."""
    if UNKNOWN in program:
        inv.unknown("the awk program is not known before it runs", index)
        return
    if "/inet" in program:  # gawk's network files: `print |& "/inet/tcp/0/HOST/PORT"`
        for match in _AWK_INET.finditer(program):
            host, port = match.group(1), match.group(2)
            if host and host != "0":
                inv.network(host.lower(), int(port) if port.isdigit() else None, index)
            else:
                inv.unknown(f"the awk program opens the network file `{show(match.group(0))}` (a server or a host "
                            "not known)", index)
    strings = _awk_strings(program, given or {}, inv) if "=" in program or given else _NO_STRINGS
    if operands and "ARGV" in program and not re.search(r"\bARGV\s*\[[^\]]*\]\s*=(?!=)|\b(?:split|delete)\b[^;]*ARGV",
                                                       program):  # (`system(ARGV[1])`: the operand)
        strings = {**strings, **{f"ARGV[{number}]": _awk_quote(word) for number, word in enumerate(operands)
                                 if UNKNOWN not in word}}
    if strings:  # `system(c)`, `c | getline`, `print | c`: the string the variable holds
        program = re.sub(r"(\bsystem\s*\(\s*)([A-Za-z_]\w*)(?=\s*\))|([A-Za-z_]\w*)(?=\s*\|\s*&?\s*getline\b)"
                         r"|(\|\s*&?\s*)([A-Za-z_]\w*)\b(?!\s*\()",
                         lambda m: (m.group(1) + strings.get(m.group(2), m.group(2)) if m.group(2) else
                                    strings.get(m.group(3), m.group(3)) if m.group(3) else
                                    m.group(4) + strings.get(m.group(5), m.group(5))), program)
        # gawk's indirect call `@f(…)` of a variable holding the name of a function: that function
        program = re.sub(r"@\s*([A-Za-z_]\w*)(?=\s*\()",
                         lambda m: strings[m.group(1)][1:-1] if re.fullmatch(r'"[A-Za-z_]\w*"', strings.get(m.group(1), ""))
                         else m.group(0), program)
    for match in _AWK_SYSTEM_RE.finditer(program):
        literal = match.group(1)
        rest = program[match.end():].lstrip()
        command, end = _awk_concat(inv, program, match.start(1) if literal else match.end(), strings)
        if literal and rest.startswith(")"):
            inv.script(_awk_literal(literal), index, what="the awk `system()` command")
        elif command is not None and program[end:].lstrip()[:1] == ")":  # `system("cat " d "/x")`
            inv.script(command, index, what="the awk `system()` command")
        else:
            inv.unknown("awk `system()` runs a computed command", index)
    if re.search(r"@\s*[A-Za-z_]\w*\s*\(", program):
        inv.unknown("gawk calls a function named by a variable (`@f()`), which can be `system`", index)
    for match in re.finditer(r"@(load|include)\s*\"([^\"]*)\"", program):
        if match.group(1) == "include":
            inv.read(match.group(2), index)
        inv.unknown(f"gawk `@{match.group(1)}` brings in code that is not visible", index)
    stripped = re.sub(r"\"(?:[^\"\\]|\\.)*\"", '""', program)
    stripped = re.sub(r"/(?:[^/\\\n]|\\.)+/", "//", stripped)
    pipes = len(_AWK_PIPE_RE.findall(stripped))
    if pipes:
        # the literal commands of `print | "cmd"` and `"cmd" | getline` are walked (a shell
        # there reads code from awk: its own model says so); a computed one is unknown
        commands: list[tuple[str, bool]] = []  # (command, whether the awk program feeds it)
        printed: list[str | None] = []  # what each fed command is given, when known
        for match in _AWK_GETLINE_RE.finditer(program):
            if match.group(1):  # `"cmd" | getline`, `"ca" "t f" | getline`: what the pipe's left side concatenates
                command, end = _awk_concat(inv, program, match.start(1), strings)
                if command is not None and end >= match.end(1) - len(match.group(1)) + len(match.group(1).rstrip()):
                    commands.append((command, False))
                continue
            if re.match(r"\s*getline\b", program[match.end():]):
                continue
            # `print | "cmd"`, `print | "sh -c " q`: a concatenation of known parts
            command, end = _awk_concat(inv, program, match.end(), strings)
            if command is not None and program[end:].lstrip(" \t")[:1] in (";", "}", "\n", ")", ""):
                commands.append((command, True))
                printed.append(_awk_printed(inv, program, match.start(), strings)
                               if not _AWK_ECHO_RE.fullmatch(program) else _awk_records(inv, operands))
        if len(commands) < pipes:
            inv.unknown("awk pipes to or from a command", index)
        fed_texts = iter(printed)
        for command, fed in commands:
            text = next(fed_texts, None) if fed else None
            if text is not None and command.split()[:1] and command.split()[0].rpartition("/")[2] in _AWK_FED_SHELLS \
                    and not _AWK_ECHO_RE.fullmatch(program):
                # (the code it prints is walked; what else the program prints into the shell is not seen)
                inv.unknown(f"awk prints shell code into `{show(command)[:40]}`", index)
            inv.script(command, index, stdin=Stdin(text, "what the awk program prints") if fed else None,
                       what="the command an awk pipe runs")
    for match in _AWK_OUT_RE.finditer(program):
        name = _awk_file_name(inv, program, match.start(2), strings)
        if name is not None:
            inv.write(name, index)
        else:
            inv.unknown("awk writes to a computed file name", index)
    for match in _AWK_IN_RE.finditer(program):
        target = match.group(1)
        name, _ = _awk_concat(inv, program, match.start(1), strings)
        if name is not None:
            inv.read(name, index)
        elif target not in ("ARGV", "FILENAME"):
            inv.unknown(f"awk reads a computed file name (`getline < {target}`)", index)


#: shells that run what an awk pipe prints into them
_AWK_FED_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})


#: a program that prints every record of its input unchanged into one command (``{ print | "sh" }``,
#: ``{print $0 | "bash"}``)
_AWK_ECHO_RE = LazyPattern(r"""\s*\{\s*print(?:\s+\$0|\s*\(\s*\$0\s*\))?\s*\|\s*"[^"\\]*"\s*;?\s*\}\s*""")


def _awk_records(inv: Invocation, operands: list[str] | None) -> str | None:
    """The records a program reads from its standard input, printed one a line, when that input
    is known and no file operand replaces it (None otherwise)."""
    if operands and any("=" not in word or word.startswith("/") for word in operands[1:]):
        return None
    text = inv.stdin.text
    if text is None or UNKNOWN in text:
        return None
    return text if text.endswith("\n") or not text else text + "\n"


def _awk_printed(inv: Invocation, program: str, pipe: int, strings: dict[str, str]) -> str | None:
    """What ``print EXPR | "cmd"`` (the ``|`` at ``pipe``) writes to the command, when EXPR is a
    known concatenation: that text and a newline (``print "rm -rf ~" | "sh"`` feeds a shell
    known code); None when computed (``$0``, a ``printf`` with conversions)."""
    matches = list(re.finditer(r"\bprint(f?)\b\s*\(?", program[:pipe]))
    found = matches[-1] if matches else None
    if found is None or re.search(r"[;{}\n]", program[found.end():pipe]):
        return None
    value, end = _awk_concat(inv, program, found.end(), strings)
    if value is None or program[end:pipe].strip(" \t)"):
        return None
    if found.group(1):  # printf FORMAT: no conversions, no newline added
        return None if "%" in value.replace("%%", "") else value.replace("%%", "%")
    return value + "\n"


#: awk options whose value is a program file (gawk's ``-E``/``--exec``: the last option, for scripts)
_PROGRAM_FILE = ("-f", "--file", "-E", "--exec")


def model_awk(inv: Invocation) -> None:
    """awk PROGRAM FILES: the program is scanned; files are read; ``-f`` (gawk's ``-E``/``--exec``
    too) reads a program."""
    parsed = parse_options(inv.argv, {"-F", "-v", "-f", "--file", "-E", "--exec", "-e", "--source", "-i", "--include",
                                      "-W", "-l", "--load"})
    programs = parsed.values_of("-e", "--source")
    in_place = False
    for option, path, index in parsed.options:
        if path is None or option not in ("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load"):
            continue
        library = option in ("-i", "--include", "-l", "--load") and "/" not in path
        name = path.rpartition(".")[0] if library and path.endswith((".awk", ".so")) else path
        if library and name == "inplace":  # gawk's inplace library: every file operand is rewritten
            in_place = True
        elif library and name in (_GAWK_LIBRARIES if option in ("-i", "--include") else _GAWK_EXTENSIONS):
            continue  # (a library of gawk's own that adds functions only)
        else:
            known = program_text(inv, path) if option in _PROGRAM_FILE else None
            if known is not None:  # (`awk -f - <<< PROGRAM`, a file this text wrote)
                programs = [*programs, (known, index)]
                if path not in ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
                    inv.read(path, index)
                continue
            if not library:
                inv.read(path, index)
            from stockade.analyzer.models.fresh import known_content

            text = known_content(inv.walker, inv.path(path)) if option in _PROGRAM_FILE else None
            if text is not None and UNKNOWN not in text:  # (a program file this text made: scanned)
                programs = [*programs, (text, index)]
                continue
            if option in _PROGRAM_FILE and project_file(inv, path):
                continue
            inv.unknown("the awk program file is not visible" if option in _PROGRAM_FILE else
                        f"`awk {option} {show(path)}` loads code that is not visible", index)
    words = list(parsed.positionals)
    if not programs and not parsed.values_of(*_PROGRAM_FILE) and words:
        programs = [words.pop(0)]
    given = {}  # -v NAME=VALUE (and NAME=VALUE operands, set before the files after them are read)
    for assignment, _ in parsed.values_of("-v") + [(word, index) for word, index in words if "=" in word]:
        name, _, value = assignment.partition("=")
        if name.isidentifier():
            given[name] = value
    if len(programs) > 1:  # (gawk joins every `-e` text into one program)
        programs = [("\n".join(program for program, _ in programs), programs[0][1])]
    operands = [inv.argv[0], *(word for word, _ in words)]
    for program, index in programs:
        awk_program(inv, program, index, given, operands)
    for word, index in words:
        if "=" in word and not word.startswith("/"):
            continue  # var=value operand
        if in_place:
            inv.write(word, index)
        else:
            inv.read(word, index)


#: awk libraries shipped with gawk (``-i NAME``) and its extensions (``-l NAME``) that only add
#: functions: no file access or process of their own
_GAWK_LIBRARIES = frozenset({"ord", "join", "strtonum", "getopt", "assert", "round", "cliff_rand", "ctime",
                             "bits2str", "isnumeric", "have_mpfr", "tocsv", "quicksort", "shellquote", "walkarray",
                             "processarray", "libintl", "intdiv0", "gettime", "ftrans", "rewind", "readable",
                             "zerofile", "noassign"})
_GAWK_EXTENSIONS = frozenset({"ordchr", "time", "intdiv", "fnmatch", "revoutput"})


_RG_VALUES = {"-e", "--regexp", "-f", "--file", "-g", "--glob", "--iglob", "-t", "--type", "-T", "--type-not",
              "-m", "--max-count", "-A", "--after-context", "-B", "--before-context", "-C", "--context", "--pre",
              "--pre-glob", "-j", "--threads", "-M", "--max-columns", "--type-add", "--type-clear", "--ignore-file",
              "-E", "--encoding", "--max-depth", "-d", "-r", "--replace", "--sort", "--sortr", "--path-separator",
              "--colors", "--color", "--context-separator", "--field-context-separator", "--field-match-separator",
              "--engine", "--dfa-size-limit", "--regex-size-limit", "--max-filesize", "--hostname-bin",
              "--hyperlink-format", "--generate", "--max-columns-preview"}


def model_rg(inv: Invocation) -> None:
    """ripgrep ``[options] PATTERN [PATHS]`` (the pattern comes from ``-e``/``-f`` instead when
    given, and there is none with ``--files``): the paths (default ``.``) are read recursively,
    leaving out hidden entries unless ``--hidden``/``-uu``/``-.``; ``-f``/``--ignore-file``
    read files; ``--pre``/``--hostname-bin`` run programs."""
    parsed = parse_options(inv.argv, _RG_VALUES)
    hidden = False
    unrestricted = 0
    for option, value, index in parsed.options:
        if option in ("--pre", "--hostname-bin") and value:
            inv.unknown(f"`rg {option}` runs `{show(value)}`"
                        + (" on every file it searches" if option == "--pre" else ""), index)
        elif option in ("-f", "--file", "--ignore-file") and value:
            inv.read(value, index)
        elif option in ("--hidden", "-."):
            hidden = True
        elif option in ("-u", "--unrestricted"):
            unrestricted += 1
    hidden = hidden or unrestricted >= 2
    words: list[tuple[str, int | None]] = list(parsed.positionals)  # None: the default path
    if not parsed.values_of("-e", "--regexp", "-f", "--file") and words and not parsed.has("--files",
                                                                                           "--type-list"):
        words.pop(0)
    for word, at in words or [(".", None)]:
        inv.read(word, at, recursive=True, skip_hidden=not hidden)


_AG_VALUES = {"-A", "--after", "-B", "--before", "--depth", "-G", "--file-search-regex", "-g", "--ignore",
              "--ignore-dir", "-m", "--max-count", "-p", "--path-to-ignore", "--pager", "-W", "--width",
              "--workers", "--color-line-number", "--color-match", "--color-path"}


def model_ag(inv: Invocation) -> None:
    """The silver searcher ``[options] PATTERN [PATHS]`` (no pattern with ``-g PATTERN``): the
    paths (default ``.``) are read recursively, hidden entries only with ``--hidden``/``-u``;
    ``-p`` reads an ignore file; ``--pager`` runs a command."""
    parsed = parse_options(inv.argv, _AG_VALUES, optional=frozenset({"-C", "--context"}))
    hidden = parsed.has("--hidden", "-u", "--unrestricted")
    for option, value, index in parsed.options:
        if option == "--pager" and value:
            inv.unknown(f"`ag --pager` runs `{show(value)}`", index)
        elif option in ("-p", "--path-to-ignore") and value:
            inv.read(value, index)
    words: list[tuple[str, int | None]] = list(parsed.positionals)  # None: the default path
    if not parsed.values_of("-g") and words:
        words.pop(0)
    for word, at in words or [(".", None)]:
        inv.read(word, at, recursive=True, skip_hidden=not hidden)


def _tar_options(argv: list[str], values: set[str]) -> Parsed:
    """tar's options, the old style included: a first word without a dash is a bundle of
    letters, and each letter that takes a value takes the next word after the bundle, in order
    (``tar xzfC a.tgz DIR``: ``-f a.tgz -C DIR``); indices are those of ``argv``."""
    if len(argv) < 2 or argv[1][:1] == "-":
        return parse_options(argv, values)
    expanded, where = [argv[0]], [0]
    following = 2
    for letter in argv[1]:
        expanded.append("-" + letter)
        where.append(1)
        if "-" + letter in values and following < len(argv):
            expanded.append(argv[following])
            where.append(following)
            following += 1
    expanded.extend(argv[following:])
    where.extend(range(following, len(argv)))
    parsed = parse_options(expanded, values)
    return Parsed(tuple((option, value, where[index]) for option, value, index in parsed.options),
                  tuple((word, where[index]) for word, index in parsed.positionals))


#: an archive name tar (and cpio) reads as ``[user@]host:file`` (a colon before any slash)
REMOTE_ARCHIVE = re.compile(r"^(?:[^/:@]+@)?[A-Za-z0-9_.-]+:(?!//)[^:]*$")


def model_tar(inv: Invocation) -> None:
    """tar: create reads members and writes the archive; extract reads the archive and
    writes below ``-C`` (or the cwd; ``--one-top-level=DIR``: below DIR); ``--to-command``, ``--checkpoint-action=exec``,
    ``-I``/``--use-compress-program``, ``--rsh-command``, ``--info-script`` run commands."""
    values = {"-f", "--file", "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from", "-I",
              "--use-compress-program", "--to-command", "--checkpoint-action", "--rsh-command", "-F",
              "--info-script", "--new-volume-script", "--exclude", "-b", "-N", "--newer", "--transform",
              "--xform", "--owner", "--group", "--mode", "-H", "--format", "-K", "-V", "--label", "-g",
              "--listed-incremental", "--index-file", "--volno-file", "--rmt-command"}
    parsed = _tar_options(inv.argv, values)
    mode = "list"
    for option, _, _ in parsed.options:
        if option in ("-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate"):
            mode = "create"
        elif option in ("-x", "--extract", "--get"):
            mode = "extract"
    directory = "."
    top_level: str | None = None  # `--one-top-level=DIR`
    archive: tuple[str, int] | None = None
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-f", "--file"):
            archive = (value, index)
        elif option in ("-g", "--listed-incremental", "--index-file", "--volno-file"):
            inv.write(value, index)  # (the snapshot file is read and rewritten; the listing or volume number written)
        elif option == "--rmt-command":
            judge_program(inv.walker, value, inv.at(index), "the remote tape program of `tar`")
        elif option in ("-C", "--directory"):
            directory = value
        elif option == "--one-top-level":
            top_level = value  # (extracted below DIR, itself below -C's directory when relative)
        elif option in ("-T", "--files-from", "-X", "--exclude-from"):
            if value not in ("-", "/dev/stdin"):
                inv.read(value, index)
            listed = program_text(inv, value) if option in ("-T", "--files-from") else None
            if listed is None and mode == "create" and option in ("-T", "--files-from"):
                inv.unknown(f"`tar {option}` archives the files `{show(value)}` lists, which are not known before it "
                            "runs", index)
            for name in (listed or "").splitlines()[:256]:  # (the names it archives, when known: read)
                if name.strip() and not name.startswith("-"):
                    name = name.strip()  # (relative to the -C directory given before it)
                    before = [v for o, v, at in parsed.options if o in ("-C", "--directory") and v and at < index]
                    if before and name[:1] not in "/~":
                        name = before[-1].rstrip("/") + "/" + name
                    inv.read(name, index, recursive=True)
                    if mode == "create":
                        _removes_member(inv, parsed, name.strip(), index)
        # (programs tar runs: walked, unless the program is a file where the agent can write)
        elif option in ("--to-command", "--rsh-command", "--info-script", "--new-volume-script", "-F"):
            judge_program(inv.walker, value, inv.at(index), f"the command given to `tar {option}`")
        elif option in ("-I", "--use-compress-program"):
            judge_program(inv.walker, value, inv.at(index), "the compression program of `tar`")
        elif option == "--checkpoint-action":
            kind, _, command = value.partition("=")
            if kind == "exec":
                judge_program(inv.walker, command, inv.at(index), "the `tar --checkpoint-action=exec` command")
    if top_level is not None:
        directory = top_level if top_level[:1] in "/~" else directory.rstrip("/") + "/" + top_level
    if archive is not None and REMOTE_ARCHIVE.match(archive[0]) and not parsed.has("--force-local"):
        # (`tar xf host:a.tar`, `-f user@host:f`: the archive is on another machine, reached by rsh/ssh)
        contact_url(inv, "ssh://" + archive[0].split(":", 1)[0].rpartition("@")[2], archive[1], 22)
    elif archive is not None and archive[0] != "-":
        if mode == "create":
            inv.write(archive[0], archive[1])
        else:
            inv.read(archive[0], archive[1])
    if mode == "create":
        # `-C DIR` holds for the members named after it, in order (`tar cf a.tgz -C ~ .ssh`)
        changes = [(index, value) for option, value, index in parsed.options
                   if option in ("-C", "--directory") and value is not None]
        for word, index in parsed.positionals:
            base = ""
            for at, value in changes:
                if at < index:
                    base = value if value[:1] in "/~" or not base else base.rstrip("/") + "/" + value
            if base and word[:1] != "/":
                word = base.rstrip("/") + "/" + word
            inv.read(word, index, recursive=True)
            _removes_member(inv, parsed, word, index)
    elif mode == "extract" and parsed.has("-P", "--absolute-names"):
        inv.unknown("`tar -P` extracts members at the absolute paths the archive names", None)
    elif mode == "extract" and parsed.values_of("--transform", "--xform", "--strip-components-never"):
        inv.write(directory, None, recursive=True)  # renamed members can land anywhere below it
    elif mode == "extract":
        # the members are new entries below the directory; their names are not visible (GNU
        # tar strips a leading `/` and refuses `..`): judged as a write of the directory
        # itself, so extracting into the workspace is allowed and into a read-only or denied
        # place is not (a crafted archive naming `.git/hooks/x` is the accepted residue)
        inv.write(directory, None)


def _removes_member(inv: Invocation, parsed: Parsed, word: str, index: int | None) -> None:
    """``tar --remove-files``, ``zip -m``/``--move``: the archiver deletes each member it
    archived (a directory with everything below it)."""
    if parsed.has("--remove-files") if inv.name != "zip" else parsed.has("-m", "--move"):
        inv.delete(word, index, recursive=True)


def _stdin_names(inv: Invocation, parsed: Parsed, index: int | None) -> None:
    """``zip -@``/``--names-stdin``: the names of the files to archive are read from standard
    input; when that input is known (a here-string, ``echo``), each line is a file it reads."""
    if not parsed.has("-@", "--names-stdin"):
        return
    listed = program_text(inv, "-")
    for name in (listed or "").splitlines()[:256]:
        if name.strip():
            inv.read(name.strip(), index, recursive=False)
            _removes_member(inv, parsed, name.strip(), index)


def _zip_test_command(inv: Invocation, command: str, index: int) -> None:
    """``zip -TT CMD``: CMD tests the archive; a program in a place the agent can write is
    code that cannot be seen into (as a program named by configuration), else it is walked."""
    from stockade.analyzer.models.programs import first_word, judge_program

    program = first_word(command)
    if UNKNOWN in command or "/" in program or program[:1] == "~":
        judge_program(inv.walker, command, inv.at(index), "`zip -TT`")
        return
    inv.script(command, index, what="the command given to `zip -TT`")


def model_zip(inv: Invocation) -> None:
    """zip ARCHIVE FILES: reads files (``-r`` recursive), writes the archive; ``-TT`` runs a
    command.  unzip ARCHIVE: reads it, writes below ``-d`` or the cwd."""
    argv = [("--unzip-command" + ("=" + w[3:].removeprefix("=") if len(w) > 3 else "")) if w.startswith("-TT") else w
            for w in inv.argv]  # -TT is one option, not -T -T (`-TTcmd`, `-TT=cmd`, `-TT cmd`)
    parsed = parse_options(argv, {"-x", "-i", "--unzip-command", "-P", "--password", "-n", "--suffixes", "-b",
                                  "--temp-path", "-O", "--output-file", "-t", "-tt", "-Z", "--compression-method",
                                  "--names-stdin-never", "-U", "--unicode", "-la", "--logfile-path",
                                  "-lf", "--logfile"})
    for option, value, index in parsed.options:
        if option == "--unzip-command" and value:
            _zip_test_command(inv, value, index)
        elif (option in ("-O", "--output-file", "-lf", "--logfile-path") and value) or (option in ("-b", "--temp-path") and value):
            inv.write(value, index)
    words = list(parsed.positionals)
    if words:
        inv.write(words[0][0], words[0][1])
        recursive = parsed.has("-r", "--recurse-paths", "-R", "--recurse-patterns")
        includes = parsed.values_of("-i", "--include")
        for word, index in words[1:]:
            inv.read(word, index, recursive=recursive)
            _removes_member(inv, parsed, word, index)
            if recursive and UNKNOWN not in word:
                # (`-r . -i '.env*'`: the names below it the patterns select — a `*` crosses `/`)
                root = "" if word in (".", "./") else word.rstrip("/") + "/"
                for pattern, at in includes:
                    inv.read(root + pattern, at)
                    if pattern[:1] == "*":
                        inv.read(root + "**/" + pattern.lstrip("*") if pattern.strip("*") else root + "**", at)
        _stdin_names(inv, parsed, words[0][1])


def model_editor(inv: Invocation) -> None:
    """vim/vi/nvim/ex: ``-c CMD``/``+CMD``/``--cmd CMD`` run ex commands (``!`` runs shell
    code); files given are edited (written), or read in read-only mode (``view``, ``-R``, ``-M``)."""
    values = {"-c", "--cmd", "-S", "-u", "-U", "-i", "-T", "-w", "-W", "-s"}
    if inv.name == "ex" or any(w[:1] == "-" and w[1:2] != "-" and ("e" in w or "E" in w) for w in inv.argv[1:]
                               if w not in ("-c", "--cmd")):
        values.discard("-s")  # in Ex mode (-e, -es, ex) -s is silent mode, not a script to read
    parsed = parse_options(inv.argv, values)
    commands = [(v, i) for v, i in parsed.values_of("-c", "--cmd")]
    files: list[tuple[str, int]] = []
    for word, index in parsed.positionals:
        if word.startswith("+"):
            commands.append((word[1:], index))
        else:
            files.append((word, index))
    for path, index in parsed.values_of("-S", "-u"):
        inv.read(path, index)
    for path, index in parsed.values_of("-i"):  # (the viminfo/shada file: read, and rewritten on exit)
        if path != "NONE":
            inv.write(path, index)
    for command, index in commands:
        text = command.lstrip(": ")
        text = re.sub(r"^(silent!?|exe(cute)?|sil!?)\s+", "", text)
        if text.startswith("!"):
            inv.script(text[1:], index, what="the vim `!` command")
            continue
        for part in _ex_commands(text):
            _ex_command(inv, part, index)
    # `-R`/`view` (read-only: writing takes `:w!`), `-M` (no changes, no writes): the files are
    # read; what `-c` commands write is judged above
    read_only = inv.name in ("view", "rview") or parsed.has("-R", "-M")
    for word, index in files:
        if _NETRW_URL.match(word):  # (netrw fetches it — scp, curl, ftp … — and `:w` sends it back)
            from stockade.analyzer.models.net import contact_url, is_loopback

            scheme, _, rest = word.partition("://")
            host, _, path = rest.partition("/")
            if scheme.lower() in ("scp", "sftp") and is_loopback(host.rpartition("@")[2].partition(":")[0]):
                # (this machine's file, through sshd: netrw's path is below the home, `//P` absolute)
                (inv.read if read_only else inv.write)(path if path.startswith("/") else "~/" + path, index)
            contact_url(inv, word, index, _NETRW_PORTS.get(scheme.lower()))
            continue
        (inv.read if read_only else inv.write)(word, index)


#: the URLs vim's netrw opens as files (``vim scp://host/f``, ``vim https://host/f``)
_NETRW_URL = re.compile(r"(?i)(scp|sftp|http|https|ftp|rcp|rsync|dav|davs|fetch)://")
_NETRW_PORTS = {"scp": 22, "sftp": 22, "http": 80, "https": 443, "ftp": 21, "rcp": 514, "rsync": 873, "dav": 80,
                "davs": 443, "fetch": 80}


#: ex commands that read a file into the editor (``:r FILE``, ``:e FILE``, ``:sp FILE``…)
_EX_READ = re.compile(r"(r|re|rea|read|e|ed|edi|edit|e!|edit!|sp|split|vs|vsplit|new|vne|vnew|tabe|tabedit|"
                      r"tabnew|view|sv|sview|badd|arga|argadd|next|n|args|vi|visual)\s+(\S+)\s*$")
#: ex commands that run the editor commands of a file
_EX_SOURCE = re.compile(r"(so|sou|sour|sourc|source|ru|run|runtime|luafile|pyf|pyfile|py3f|py3file|rubyf|"
                        r"rubyfile|perldo)!?(\s|$)")


_VIM_SYSTEM = re.compile(r"""\b(?:system|systemlist|jobstart)\s*\(\s*(?:'((?:[^']|'')*)'|"((?:[^"\\]|\\.)*)")\s*[,)]""")
_NVIM_EXECUTE = re.compile(r"""\bos\.execute\s*\(\s*(?:'([^'\\]*)'|"([^"\\]*)")\s*\)""")


def _vim_system_literal(inv: Invocation, text: str, index: int) -> None:
    """``:call system("CMD")``, ``:echo systemlist('CMD')``, ``:lua os.execute("CMD")``: a string
    literal given to the shell is walked as the shell code it is (the command stays unknown
    code as well: the rest of the expression is not followed)."""
    for match in list(_VIM_SYSTEM.finditer(text)) + list(_NVIM_EXECUTE.finditer(text)):
        single, double = match.group(1), match.group(2)
        code = single.replace("''", "'") if single is not None else \
            re.sub(r"\\(.)", r"\1", double or "")
        if code:
            inv.script(code, index, what="the shell command of a vim expression")


def _sourced_file(inv: Invocation, text: str, index: int) -> None:
    """``:source FILE``, ``:luafile FILE``, ``:pyfile FILE``: the editor reads FILE to run it
    (``:runtime NAME`` searches the runtime path: no file named here)."""
    command, _, rest = text.partition(" ")
    path = rest.strip()
    if path and not command.startswith("ru") and command.rstrip("!") != "perldo":
        inv.read(path, index)


def _ex_commands(text: str) -> list[str]:
    """An ex command line split at ``|`` (not inside the argument of ``!``, ``normal``, ``g``)."""
    if re.match(r"\s*(norm|normal|g|global|v|vglobal|exe|execute)\b", text) or "!" in text.partition("|")[0]:
        return [text]
    return [part.strip() for part in text.split("|") if part.strip()]


def _ex_command(inv: Invocation, text: str, index: int) -> None:
    """One ex command: reads and writes of files, sourcing, code run (unknown)."""
    text = re.sub(r"^(silent!?|exe(cute)?|sil!?|keepalt|noautocmd|noa)\s+", "", text.lstrip(": "))
    if text.startswith("!"):
        inv.script(text[1:], index, what="the vim `!` command")
        return
    piped = re.match(r"(?:(?:r|re|rea|read)\s*|(?:w|wr|wri|writ|write)\s+|[%.$,0-9'<>+-]+\s*)!(?!!)\s*(.*)", text, re.S)
    if piped and piped.group(1).strip():
        # `:r !cmd` (its output read in), `:w !cmd` (the buffer piped to it), `:%!cmd` (a filter)
        inv.script(piped.group(1), index, what="the vim `!` command")
        return
    match = _EX_READ.match(text)
    if match and "!" not in match.group(2):
        inv.read(match.group(2), index)
        return
    if _EX_SOURCE.match(text):
        _sourced_file(inv, text, index)
        inv.unknown(f"the editor command `{show(text)[:40]}` runs code in a file that cannot be seen into", index)
        return
    _vim_system_literal(inv, text, index)
    forced = re.sub(r"^(w|wq|x|sav|saveas|wa|q|qa|wqa|xa|up|update)!", r"\1", text)  # (`w!` forces, runs nothing)
    if re.search(r"\b(system|systemlist|jobstart|job_start|term_start|termopen|libcall|libcallnr|ch_open|py3?|lua|"
                 r"perl|ruby|terminal|term|r\s*!|w\s*!|writefile|delete|rename|mkdir|setfperm|filecopy)\b|!\s*\S",
                 forced):  # (vim script functions that run programs, load libraries, connect, or change files)
        inv.unknown(f"the editor command `{show(text)[:40]}` runs code", index)
        _editor_code_names(inv, forced, index)
        return
    target = re.match(r"(w|wr|wri|writ|write|wq|x|xit|sav|saveas|wa|up|update)(?=[!\s>]|$)!?\s*(>>\s*)?(\S+)?",
                      text)
    if target and target.group(3):
        inv.write(target.group(3), index)


def _editor_code_names(inv: Invocation, code: str, index: int) -> None:
    """What code in an editor command names (``:call system("cat ~/.netrc")``, ``:lua
    os.execute("…")``, ``:py3 os.system("…")``): shell command lines given to a shell as
    literals are walked, literal paths judged as read (see :func:`.shells.named_paths`)."""
    from stockade.analyzer.models.shells import named_paths

    named_paths(inv, code, index)


_PERL_TAKES_REST = frozenset("eEMmIxCdDF")  # (-l and -0 take only digits: `-lpi` is -l -p -i)


def model_perl(inv: Invocation) -> None:
    """perl/ruby: the interpreter's model, plus ``-i[EXT]`` (alone or in a cluster: ``-pi``,
    ``-i.bak``): the files operated on are rewritten in place."""
    model = _INTERPRETER.get(inv.name)
    (model or _no_model)(inv)
    argv = inv.argv
    in_place = False
    code_given = False
    index = 1
    while index < len(argv) and argv[index].startswith("-") and argv[index] not in ("-", "--"):
        word = argv[index]
        for position, char in enumerate(word[1:], start=1):
            if char == "i":
                in_place = True
                break
            if char in _PERL_TAKES_REST:
                if char in "eE":
                    code_given = True
                    if position == len(word) - 1:
                        index += 1  # the code is the next word
                if char in "IMmx" and position == len(word) - 1 and inv.name == "ruby":
                    index += 1
                break
        index += 1
    if argv[index:index + 1] == ["--"]:
        index += 1
    if not in_place:
        return
    files = argv[index:] if code_given else argv[index + 1:]
    start = index if code_given else index + 1
    for offset, word in enumerate(files):
        inv.write(word, start + offset)


def _no_model(inv: Invocation) -> None:
    return


_INTERPRETER: dict[str, Model] = {name: MODELS[name] for name in ("perl", "ruby") if name in MODELS}


register("find", model_find)
register("perl ruby", model_perl)
register("sed gsed", model_sed)
register("sd", model_sd)
register("awk gawk mawk nawk", model_awk)
register("rg ripgrep", model_rg)
register("ag", model_ag)
register("tar gtar bsdtar-x", model_tar)
register("zip", model_zip)
register("vim vi nvim ex view gvim vimdiff nvimdiff gvimdiff rview rvim evim", model_editor)
