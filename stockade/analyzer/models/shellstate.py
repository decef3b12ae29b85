"""Builtins that change the shell's state or run code given to them in passing.

``coproc`` runs its command; ``mapfile``/``readarray -C`` run a callback; ``read`` assigns
what it reads (known text from a here-string, here-document or a known producer: see
:func:`read_fields`); ``hash -p`` and ``enable -f`` make a name run a file the analyzer cannot
see into; ``set -a`` exports later assignments; names with an array subscript
(``a[$(cmd)]``) run the subscript's substitutions when a builtin assigns or tests them.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import CHILD_PID, UNKNOWN, UNKNOWN_NUMBER, Unknown, show
from stockade.analyzer.exec import HASHED_KEY, HASHED_PREFIX, Invocation
from stockade.analyzer.models import MODELS, default_model, parse_options, register
from stockade.analyzer.words import ARRAY_KEY, ARRAY_SEP, INDEX_RE, LISTED_KEY, NAMEREF, array_elements

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from stockade.analyzer.models import Model
    from stockade.analyzer.walker import Walker

#: directories a ``hash -p`` target may lie in without being code the agent could have written
SYSTEM_BIN_DIRS = ("/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/")
#: ``set`` flag and ``-o`` name that export every later assignment
_ALLEXPORT = "*"
#: more known lines than this on the stdin of ``read``: its variables are judged as unknown
_MAX_LINES = 8


def subscript_code(walker: Walker, name: str, span: tuple[int, int]) -> None:
    """A variable name with a subscript (``a[$(cmd)]``): bash evaluates the subscript as
    arithmetic when the name is assigned or tested, running its substitutions."""
    if "[" in name and ("$(" in name or "`" in name or "$" in name):
        walker.nested_script(": " + name[name.index("["):], span, exact=False, subshell=True)
    subscript_values(walker, name, span)


_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAMETER_RE = re.compile(r"\$\{?([0-9])")  # (`b[$1]`: a positional parameter's value)


def subscript_values(walker: Walker, name: str, span: tuple[int, int]) -> None:
    """An indexed array's subscript (``a[x]``, ``b[x+1]``) is arithmetic: the values of the
    variables it names are evaluated in turn, and a subscript in one of them runs its
    substitutions (``x='a[$(cmd)]'; b[x]=1`` runs cmd); single quotes in a subscript do not
    quote (``a['$(cmd)']=1`` runs cmd: bash expands it as in double quotes)."""
    start = name.find("[")
    if start == -1:
        return
    subscript = name[start + 1:name.rfind("]") if name.rfind("]") > start else len(name)]
    if "'" in subscript and ("$(" in subscript or "`" in subscript):
        walker.nested_script(": " + subscript.replace("'", ""), span, exact=False, subshell=True)
    for identifier in [*_NAME_RE.findall(subscript), *_PARAMETER_RE.findall(subscript)][:8]:
        value = walker.lookup(identifier)
        if value and UNKNOWN not in value and "[" in value:
            integer_assignment(walker, value, span)


#: the key prefix under which a variable's integer attribute (``declare -i NAME``) is kept
INTEGER_PREFIX = "\ue009int:"


#: a name in an arithmetic expression (not a digit of a number, ``0x1f``, nor one after a base, ``16#ff``)
_ARITH_NAME_RE = re.compile(r"(?<![0-9A-Za-z_#@])[A-Za-z_][A-Za-z0-9_]*")


def integer_assignment(walker: Walker, value: str, span: tuple[int, int]) -> None:
    """A text bash evaluates as arithmetic (a value assigned with the integer attribute,
    ``declare -i n; n=VALUE``, a ``let`` argument, an operand of ``[[ A -eq B ]]``, a
    subscript): an array subscript in it runs its substitutions (``n='a[$(cmd)]'``), and so
    does one in the value of any name it mentions, evaluated in turn
    (``x='a[$(cmd)]'; let y=x+1`` runs cmd)."""
    pending = [value]
    seen = 0
    while pending and seen < 16:
        value = pending.pop()
        seen += 1
        if not value or UNKNOWN in value:
            continue
        if "[" in value and ("$" in value or "`" in value):
            walker.nested_script(": " + value[value.index("["):], span, exact=False, subshell=True)
            return
        for name in _ARITH_NAME_RE.findall(value)[:8]:
            pending.append(walker.lookup(name) or "")


def is_integer(walker: Walker, name: str) -> bool:
    """Whether ``name`` (or the array of ``name[i]``) has the integer attribute."""
    return INTEGER_PREFIX + name.partition("[")[0].rstrip("+") in walker.state.variables


def declared_attributes(walker: Walker, node: Any, attributes: str) -> None:
    """``declare``/``typeset``/``local`` with ``-l``/``-u`` (the values it assigns are
    lowercased or uppercased: ``typeset -l X=/ETC/SHADOW`` holds ``/etc/shadow``) or ``-i``
    (the values are evaluated as arithmetic: an array subscript in them runs its substitutions)."""
    variables = walker.state.variables
    for child in node.named_children:
        if "i" in attributes and child.type in ("variable_assignment", "variable_name", "word"):
            target = child.child_by_field_name("name") if child.type == "variable_assignment" else child
            declared = walker.src.node_text(target).partition("=")[0].partition("[")[0] if target is not None else ""
            if declared.isidentifier():  # (later assignments are evaluated as arithmetic too)
                variables[INTEGER_PREFIX + declared] = "i"
        if child.type != "variable_assignment":
            continue
        target = child.child_by_field_name("name")
        name = walker.src.node_text(target) if target is not None else ""
        value = variables.get(name)
        if not name or value is None or value.startswith(NAMEREF):
            continue
        if "i" in attributes:  # (`declare -i j=i`: the value of i is evaluated too)
            integer_assignment(walker, value, walker.src.span(child))
            if not value.lstrip("-").isdigit():
                variables[name] = UNKNOWN  # (the value of the expression: not followed)
            continue
        if attributes[-1] in "lu":  # (the last of -l/-u given wins)
            variables[name] = value.lower() if attributes[-1] == "l" else value.upper()


def forget_array(walker: Walker, name: str) -> None:
    """A builtin wrote ``name`` (``a[i]``, ``a``) as a whole array or one element in a way not
    followed: the array's elements are unknown from now on (see :func:`words.array_elements`)."""
    base, bracket, _ = name.partition("[")
    variables = walker.state.variables
    variables[ARRAY_KEY + base] = UNKNOWN
    index = name[len(base) + 1:-1] if bracket and name.endswith("]") else "0"
    if not (index.isdigit() and int(index) > 0):
        variables[base] = UNKNOWN  # (element 0 may be the one written)


def set_array(walker: Walker, name: str, elements: list[str] | None) -> None:
    """``read -a``/``mapfile`` assigned array ``name`` (None: elements unknown)."""
    variables = walker.state.variables
    if elements is None or len(elements) > 4096 or any(ARRAY_SEP in element for element in elements):
        variables[ARRAY_KEY + name] = UNKNOWN
        variables[name] = UNKNOWN
        return
    variables[ARRAY_KEY + name] = "".join([ARRAY_SEP + element for element in elements])
    variables[name] = elements[0] if elements else ""


#: a nameref chain longer than this (or a cycle) is not followed: its value is unknown
_MAX_NAMEREF_HOPS = 8


def _split_subscript(target: str) -> tuple[str, str]:
    """``a[1]`` → (``a``, ``1``); ``X`` → (``X``, "")."""
    base, bracket, rest = target.partition("[")
    return (base, rest[:-1]) if bracket and rest.endswith("]") else (target, "")


def _element_index(walker: Walker, index: str) -> int | None:
    """The element number of a subscript (``1``, ``$i``, ``i`` holding an integer), else None."""
    text = index.strip()
    if INDEX_RE.fullmatch(text):
        return int(text)
    name = text[2:-1] if text.startswith("${") and text.endswith("}") else text[1:] if text[:1] == "$" else text
    value = walker.lookup(name) if name.isidentifier() else None
    return int(value.strip()) if value is not None and INDEX_RE.fullmatch(value.strip()) else None


def deref(walker: Walker, target: str, hops: int = 0) -> str | None:
    """The value of the variable a nameref or ``${!r}`` names (``X`` or an array element
    ``a[i]``) at the time it is used; None when not known."""
    if hops > _MAX_NAMEREF_HOPS or not target or UNKNOWN in target:
        return None
    base, index = _split_subscript(target)
    if not index and not base.isidentifier():
        return walker.lookup(base)  # (`r=1; ${!r}`: a positional or special parameter)
    if not base.isidentifier():
        return None
    raw = walker.state.variables.get(base)
    if raw is not None and raw[:2] == NAMEREF:  # a nameref to a nameref
        return deref(walker, raw[2:] + (f"[{index}]" if index else ""), hops + 1) if raw[2:] else None
    if not index:
        return walker.lookup(base)
    if index in ("@", "*"):
        return None
    number = _element_index(walker, index)
    elements = array_elements(walker, base)
    if number is None or elements is None:
        return None
    if number < 0:
        number += len(elements)
    return elements[number] if 0 <= number < len(elements) else ""


def nameref_target(walker: Walker, name: str) -> str | None:
    """The name the nameref ``name`` refers to, followed through chains (``a[1]`` for an
    element); "" for a nameref not bound yet; None when ``name`` is not a nameref."""
    raw = walker.state.variables.get(name)
    if raw is None or raw[:2] != NAMEREF:
        return None
    target = raw[2:]
    for _ in range(_MAX_NAMEREF_HOPS):
        base, index = _split_subscript(target)
        further = walker.state.variables.get(base)
        if further is None or further[:2] != NAMEREF or not further[2:]:
            return target
        target = further[2:] + (f"[{index}]" if index else "")
    return UNKNOWN


def declare_nameref(walker: Walker, name: str, target: str | None) -> None:
    """``declare -n name=target`` (``local -n``, ``typeset -n``); ``target`` None: ``declare -n
    name`` (bound by the variable's value when it names a variable, else by the next
    assignment).  A target that is not a variable name (or an element) is not followed."""
    variables = walker.state.variables
    if target is None:
        raw = variables.get(name)
        if raw is not None and raw[:2] == NAMEREF:
            return
        target = raw if raw is not None and _is_reference(raw) else ""
    variables[name] = NAMEREF + target if target == "" or _is_reference(target) else UNKNOWN


def _is_reference(text: str) -> bool:
    """Whether ``text`` names a variable or an array element (``X``, ``a[1]``, ``a[$i]``)."""
    base, index = _split_subscript(text)
    return base.isidentifier() and UNKNOWN not in text and (not index or ("$(" not in index and "`" not in index))


def assign_through(walker: Walker, name: str, value: str, span: tuple[int, int] | None = None) -> str | None:
    """An assignment ``name=value`` where ``name`` may be a nameref: the name to store the
    value under (the referred variable), or None when the assignment was handled here (an
    unbound nameref is bound — a subscript of the name it is bound to runs its substitutions
    when the nameref is used: walked now, at ``span``; an array element is set or the array
    forgotten)."""
    target = nameref_target(walker, name)
    if span is not None and is_integer(walker, name if target is None or target in ("", UNKNOWN) else target):
        integer_assignment(walker, value, span)
    if target is None:
        return name
    if target == "":  # `declare -n r; r=X`: binds r to X
        if span is not None:  # (`declare -n r; r='a[$(cmd)]'; echo $r` runs cmd)
            subscript_code(walker, value, span)
        walker.state.variables[name] = NAMEREF + value if _is_reference(value) else UNKNOWN
        return None
    if target == UNKNOWN:
        return None
    base, index = _split_subscript(target)
    if not index:
        return base
    number = _element_index(walker, index)
    elements = array_elements(walker, base)
    if number is None or elements is None or not -len(elements) <= number <= len(elements):
        forget_array(walker, target if number is not None and number > 0 else base)
        return None
    number %= len(elements) + (number >= 0)
    set_array(walker, base, elements[:number] + [value] + elements[number + 1:])
    return None


def set_variable(walker: Walker, name: str, value: str, span: tuple[int, int], what: str) -> None:
    """A builtin assigns ``name`` (``read``, ``printf -v``): through a nameref that is the
    variable it refers to (``declare -n r=PATH; printf -v r /tmp/evil``), judged as an
    assignment in the shell — ``PATH`` given a value not known makes later command names
    unknown programs; an exported variable is judged for the programs that see it."""
    target = assign_through(walker, name, value, span)
    if target is None:
        return
    walker.state.variables[target] = value
    if target == "PATH" and UNKNOWN in value.partition(":")[0]:
        walker.effects.append(Unknown(f"{what} sets `PATH` to a value not known before it runs: later command "
                                      "names may run any program", span))
    exported = walker.state.exported
    if exported and (target in exported or "*" in exported):
        from stockade.analyzer.models.envvars import judge_env_var

        judge_env_var(walker, target, value, span)


def model_getopts(inv: Invocation) -> None:
    """``getopts OPTSTRING NAME [ARGS]``: NAME (through a nameref too) gets the next option's
    letter and ``OPTARG`` its value.  When the words it parses are known (ARGS, or the
    positional parameters: a command line has none) each value is one of those the whole
    parse gives, or the end's (NAME ``?``, OPTARG unset); else not known (:func:`set_variable`)."""
    if len(inv.argv) < 3:
        return
    walker = inv.walker
    args = inv.argv[3:] if len(inv.argv) > 3 else walker.positional_words()
    if args is not None and any(UNKNOWN in word for word in args):
        args = None
    pairs = None if args is None or UNKNOWN in inv.argv[1] else _getopts_parse(inv.argv[1], args)
    subscript_code(walker, inv.argv[2], inv.at(2))
    if "[" in inv.argv[2]:
        forget_array(walker, inv.argv[2])
    else:
        _set_values(walker, inv.argv[2], None if pairs is None else {"?", *(letter for letter, _ in pairs)}, inv.span)
    _set_values(walker, "OPTARG", None if pairs is None else {"", *(value for _, value in pairs)}, inv.span)


def _getopts_parse(optstring: str, args: list[str]) -> list[tuple[str, str]]:
    """Every (NAME, OPTARG) bash's ``getopts OPTSTRING`` gives over ``args`` before the end
    (OPTARG empty where bash unsets it; a leading ``:`` in OPTSTRING: silent reporting)."""
    silent = optstring[:1] == ":"
    letters = optstring.lstrip(":")
    pairs: list[tuple[str, str]] = []
    index = 0
    while index < len(args) and len(pairs) < 64:
        word = args[index]
        if word == "--" or word[:1] != "-" or word == "-":
            break
        position = 1
        while position < len(word):
            letter = word[position]
            found = letters.find(letter) if letter != ":" else -1
            if found == -1:  # (an invalid option: `?`, OPTARG the letter when silent)
                pairs.append(("?", letter if silent else ""))
            elif letters[found + 1:found + 2] == ":":
                if position + 1 < len(word):
                    pairs.append((letter, word[position + 1:]))
                elif index + 1 < len(args):
                    index += 1
                    pairs.append((letter, args[index]))
                else:  # (its value missing)
                    pairs.append((":" if silent else "?", letter if silent else ""))
                break
            else:
                pairs.append((letter, ""))
            position += 1
        index += 1
    return pairs


#: at most this many values of a variable a builtin sets are remembered (else: not known)
_MAX_VALUES = 4


def _set_values(walker: Walker, name: str, values: set[str] | None, span: tuple[int, int]) -> None:
    """``name`` gets one of ``values`` (None: a value not known): a later command that uses
    it is judged with each (see ``State.alternatives``)."""
    current = walker.state.variables.get(name)
    if values is None or len(values) > _MAX_VALUES or not name.isidentifier() or \
            (current is not None and current.startswith(NAMEREF)):
        set_variable(walker, name, UNKNOWN, span, "`getopts`")
        return
    if len(values) == 1:
        set_variable(walker, name, next(iter(values)), span, "`getopts`")
        return
    mark = "".join([UNKNOWN, UNKNOWN])  # a new object: the variable holds it until reassigned
    set_variable(walker, name, mark, span, "`getopts`")
    state = walker.state
    state.alternatives = dict(state.alternatives) if state.alternatives else {}
    state.alternatives[name] = (mark, tuple(sorted(values)))


def model_coproc(inv: Invocation) -> None:
    """``coproc [NAME] COMMAND``: runs the command (tree-sitter-bash reads ``coproc NAME { …; }``
    as a command ``coproc NAME { …`` followed by ``}``)."""
    argv = inv.argv
    start = 1
    if len(argv) > 2 and argv[2] in ("{", "("):
        start = 3
    elif len(argv) > 1 and argv[1] in ("{", "("):
        start = 2
    end = len(argv)
    while end > start and argv[end - 1] in ("}", ")"):
        end -= 1
    if end > start:
        inv.run(start, argv=argv[start:end], spans=inv.spans[start:end])
    coproc_descriptors(inv.walker, argv[1] if start == 3 else "COPROC")


def coproc_name(data: bytes, start: int) -> str | None:
    """The name of the coprocess when the compound command at byte ``start`` of ``data`` follows
    ``coproc [NAME]`` (which the parse blanked: see :func:`.parse.hide_prefix_words`):
    ``NAME``, ``COPROC`` without one; None when no ``coproc`` comes before it."""
    index = start - 1
    while index >= 0 and data[index] in (0x20, 0x09):
        index -= 1
    end = index + 1
    while index >= 0 and (data[index] == 0x5F or 0x30 <= data[index] <= 0x39 or 0x41 <= data[index] <= 0x5A
                          or 0x61 <= data[index] <= 0x7A):
        index -= 1
    word = data[index + 1:end]
    if word == b"coproc":
        return "COPROC"
    while index >= 0 and data[index] in (0x20, 0x09):
        index -= 1
    if index >= 5 and data[index - 5:index + 1] == b"coproc" and word and (
            index == 5 or data[index - 6] in b" \t\n;&|({"):
        return word.decode()
    return None


def coproc_descriptors(walker: Walker, name: str) -> None:
    """A coprocess ``NAME`` (``COPROC`` unless a compound command is named): ``NAME[0]`` and
    ``NAME[1]`` are the descriptors of its output and input, ``NAME_PID`` its process id —
    numbers not known before it runs (``>&"${COPROC[1]}"`` duplicates a descriptor)."""
    if not name.isidentifier():
        return
    set_array(walker, name, [UNKNOWN_NUMBER, UNKNOWN_NUMBER])
    walker.state.variables[name + "_PID"] = walker.state.variables["!"] = CHILD_PID


def model_mapfile(inv: Invocation) -> None:
    """``mapfile``/``readarray [-C CALLBACK] ARRAY``: the callback is code run every ``-c`` lines."""
    parsed = parse_options(inv.argv, {"-C", "-c", "-d", "-n", "-O", "-s", "-u"})
    text = inv.stdin.text
    for option, value, index in parsed.options:
        if option == "-C" and value is not None:
            # evaluated as `CALLBACK INDEX LINE`: the lines read (when known), else an unknown one
            read = [line for line in text.split("\n") if line][:8] if text is not None else []
            for line in read or [UNKNOWN]:
                inv.script(value + ' 0 "$1"', index, positional=["bash", line],
                           what=f"the callback given to `{inv.name} -C`")
    lines = [line for line in text.split("\n") if line] if text is not None and not parsed.has("-u", "-d") else []
    known = text is not None and not parsed.has("-u", "-d", "-n", "-O", "-s")
    targets: list[tuple[str, int | None]] = [*parsed.positionals[:1]] or [("MAPFILE", None)]
    for word, where in targets:
        subscript_code(inv.walker, word, inv.at(where))
        if "[" in word:
            forget_array(inv.walker, word)
        else:  # (one element per line, each with its newline unless -t)
            set_array(inv.walker, word, (lines if parsed.has("-t") else [line + "\n" for line in lines])
                      if known else None)


def read_fields(text: str | None, names: list[str], ifs: str | None) -> dict[str, str]:
    """The values ``read NAMES`` assigns from the first line of ``text`` (None: unknown)."""
    if not names:
        names = ["REPLY"]
    if text is None:
        return dict.fromkeys(names, UNKNOWN)
    line = text.split("\n", 1)[0]
    separators = " \t\n" if ifs is None or UNKNOWN in ifs else ifs
    if len(names) == 1 or not separators:
        stripped = line.strip(" \t\n") if names != ["REPLY"] else line
        return {names[0]: stripped}
    values: dict[str, str] = {}
    rest = line.strip(" \t")
    for name in names[:-1]:
        cut = min((rest.find(ch) for ch in separators if ch in rest), default=-1)
        if cut == -1:
            values[name], rest = rest, ""
        else:
            values[name], rest = rest[:cut], rest[cut + 1:].lstrip(" \t")
    values[names[-1]] = rest
    return values


def _listed(value: str | None) -> bool:
    """Whether a value read is a glob: names a listing printed (``ls``, ``find``), as known."""
    return value is not None and UNKNOWN not in value and ("*" in value or "?" in value or "[" in value)


def model_read(inv: Invocation) -> None:
    """``read [-r] [-a ARRAY] NAMES``: assigns the first line of stdin (known or not)."""
    parsed = parse_options(inv.argv, {"-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u"})
    walker = inv.walker
    names = [word for word, _ in parsed.positionals]
    for word, index in parsed.positionals:
        subscript_code(walker, word, inv.at(index))
    text = inv.stdin.text
    delimiters = parsed.values_of("-d")
    if text is not None and delimiters and delimiters[-1][0] == "" and not parsed.has("-u", "-n", "-N"):
        from stockade.analyzer.models.files import NUL  # `read -d ''`: NUL-separated items of known text

        text = text.replace("\n", " ").replace(NUL, "\n")
    elif parsed.has("-u", "-d", "-n", "-N"):
        text = None
    arrays = parsed.values_of("-a")
    for name, index in arrays:
        subscript_code(walker, name, inv.at(index))
        if text is None or "[" in name:
            forget_array(walker, name)
            walker.state.variables[name] = UNKNOWN
        else:  # the first line's fields, split at $IFS
            line = text.split("\n", 1)[0]
            ifs = inv.env.get("IFS", walker.lookup("IFS"))
            if ifs is not None and UNKNOWN in ifs:
                set_array(walker, name, None)
            else:
                separators = " \t\n" if ifs is None else ifs
                fields = "".join([" " if ch in separators else ch for ch in line]).split() if separators else [line]
                set_array(walker, name, fields if not set(separators) - set(" \t\n") else None)
    if arrays and not names:
        return
    ifs = inv.env.get("IFS", walker.lookup("IFS"))
    lines = [line for line in text.split("\n") if line] if text is not None else []
    if 1 < len(lines) <= _MAX_LINES:
        # `while read x` over known lines: each line is a value `x` may have (see
        # State.alternatives: a command using it is walked once per line)
        per_line = [read_fields(line, names, ifs) for line in lines]
        state = walker.state
        for name in per_line[0]:
            if "[" in name:
                forget_array(walker, name)
                continue
            mark = "".join([UNKNOWN, UNKNOWN])  # a new object, held until the variable is reassigned
            if state.alternatives is None:
                state.alternatives = {}
            values = tuple(values[name] for values in per_line)
            state.alternatives[name] = (mark, values)
            state.variables[name] = mark
            if any(_listed(value) for value in values):  # (as below, per line)
                listed_mark = "".join([UNKNOWN, UNKNOWN])
                state.alternatives[LISTED_KEY + name] = (listed_mark, values)
                state.variables[LISTED_KEY + name] = listed_mark
        return
    for name, value in read_fields(text, names, ifs).items():
        if "[" in name:
            forget_array(walker, name)
        else:
            set_variable(walker, name, value, inv.span, f"`{inv.name}`")
            if _listed(value):  # a name a listing printed (`ls | while read f`): see words.resolve_listed
                walker.state.variables[LISTED_KEY + name] = value
            if text is None:  # data from a file or a pipe: arithmetic on it evaluates it (see Walker.arithmetic)
                walker.read_data = walker.read_data | {name}
                if is_integer(walker, name):
                    inv.unknown(f"`{inv.name}` assigns the integer variable `{name}` input that is not known, which "
                                "bash evaluates as arithmetic: an array subscript in it runs commands")


def model_hash(inv: Invocation) -> None:
    """``hash -p FILE NAME``: later ``NAME`` runs ``FILE`` (judged as that program: see
    :func:`stockade.analyzer.exec._hashed`); ``hash -r`` empties the table, ``-d NAME`` drops one."""
    parsed = parse_options(inv.argv, {"-p", "-t", "-d"})
    variables = inv.walker.state.variables
    if parsed.has("-r"):
        for key in [key for key in variables if key.startswith(HASHED_PREFIX)]:
            del variables[key]
    for option, value, index in parsed.options:
        if option == "-d" and value is not None:
            variables.pop(HASHED_PREFIX + value, None)
        if option == "-p" and value is not None:
            path = inv.path(value)
            names = " ".join(word for word, _ in parsed.positionals) or "a command"
            if UNKNOWN in path or not path.startswith(SYSTEM_BIN_DIRS):
                inv.unknown(f"`hash -p` makes `{show(names)}` run `{show(path)}`, which cannot be seen into", index)
            for word, _ in parsed.positionals:  # (`hash -p /bin/rm cat`: later `cat` is `rm`)
                if "/" not in word and UNKNOWN not in word:
                    variables[HASHED_KEY] = "1"
                    variables[HASHED_PREFIX + word] = path


_TABLE_ENTRY = re.compile(r"\[([^\]]*)\]=(.*)", re.S)


def bash_tables(walker: Walker, node: Any, name_node: Any) -> None:
    """``BASH_CMDS[NAME]=FILE`` (or ``BASH_CMDS=([NAME]=FILE …)``) fills the command hash table,
    as ``hash -p FILE NAME`` does; ``BASH_ALIASES[NAME]=CODE`` defines an alias, whose code runs
    where it is used (walked now, as ``alias`` is)."""
    text = walker.src.node_text(name_node)
    base = text.partition("[")[0]
    if base not in ("BASH_CMDS", "BASH_ALIASES"):
        return
    value_node = node.child_by_field_name("value")
    entries: list[tuple[str, str]] = []
    if name_node.type == "subscript":
        index = name_node.child_by_field_name("index")
        key = walker.words.text(index) if index is not None else UNKNOWN
        entries.append((key, walker.words.text(value_node) if value_node is not None else ""))
    elif value_node is not None and value_node.type == "array":
        for element in value_node.named_children:
            match = _TABLE_ENTRY.fullmatch(walker.words.text(element))
            entries.append((match.group(1), match.group(2)) if match else (UNKNOWN, UNKNOWN))
    span = walker.src.span(node)
    variables = walker.state.variables
    for key, value in entries:
        if base == "BASH_ALIASES":
            if UNKNOWN in value:
                walker.unknown(f"the alias `{show(key)}` set through `BASH_ALIASES` is not known before it runs", span)
            elif value:
                walker.nested_script(value, span, exact=False)
            continue
        path = walker.resolve(value) if value and UNKNOWN not in value else UNKNOWN
        if UNKNOWN in path or not path.startswith(SYSTEM_BIN_DIRS):
            walker.unknown(f"`BASH_CMDS` makes `{show(key)}` run `{show(path)}`, which cannot be seen into", span)
        if UNKNOWN not in key and "/" not in key:  # (later `NAME` runs that file: see exec._hashed)
            variables[HASHED_KEY] = "1"
            variables[HASHED_PREFIX + key] = path


def model_history(inv: Invocation) -> None:
    """``history -w|-a [FILE]`` writes the history list to FILE (``$HISTFILE``, else
    ``~/.bash_history``): ``HISTFILE=~/.bashrc history -w`` rewrites a startup file;
    ``-r``/``-n`` read it."""
    argv = inv.argv
    flags = "".join(word[1:] for word in argv[1:] if word[:1] == "-" and word[1:2] != "-")
    operands = [(word, index) for index, word in enumerate(argv[1:], start=1) if word[:1] != "-"]
    if not set(flags) & set("warn"):
        return
    if operands and not operands[0][0].isdigit():
        target, at = operands[0]
    else:
        value = inv.env.get("HISTFILE") if inv.env else None
        target = value if value is not None else inv.walker.lookup("HISTFILE") or "~/.bash_history"
        at = 0
    if UNKNOWN in target:
        inv.unknown(f"`history -{flags}` uses a history file that is not known (`{show(target)}`)", at)
    elif set(flags) & set("wa"):
        inv.write(target, at)
    else:
        inv.read(target, at)


def model_fc(inv: Invocation) -> None:
    """``fc -l`` lists the history; ``fc -e EDITOR`` runs EDITOR on the commands (then runs what
    it leaves), ``fc -s`` runs a history command again: commands not in the text."""
    argv = inv.argv
    if any(word[:1] == "-" and "l" in word[1:] for word in argv[1:]):
        return
    for index, word in enumerate(argv[1:-1], start=1):
        if word == "-e":
            inv.script(argv[index + 1] + " /tmp/bash-fc", index + 1, what="the editor of `fc -e`")
    inv.unknown("`fc` runs commands from the shell's history, which the text does not show", 0)


def model_shift(inv: Invocation) -> None:
    """``shift [N]``: the positional parameters move down by N (1); more than there are: bash
    fails and leaves them; N not known: they are not known."""
    state = inv.walker.state
    params = state.positional
    if params is None:
        return
    word = inv.argv[1] if len(inv.argv) > 1 else "1"
    if not word.isdigit() or len(word) > 6:
        state.positional = [params[0], UNKNOWN] if UNKNOWN in word or not word.isdigit() else params
        return
    count = int(word)
    if count <= len(params) - 1:
        state.positional = [params[0], *params[1 + count:]]


def model_test(inv: Invocation) -> None:
    """``test``/``[`` as a command: ``-v 'a[$(cmd)]'`` evaluates the subscript (running cmd);
    every other test has no effect."""
    argv = inv.argv
    for index in range(1, len(argv) - 1):
        if argv[index] == "-v":
            subscript_code(inv.walker, argv[index + 1], inv.at(index + 1))


def model_enable(inv: Invocation) -> None:
    """``enable -f FILE NAME``: loads a builtin from a shared object."""
    parsed = parse_options(inv.argv, {"-f"})
    for option, value, index in parsed.options:
        if option == "-f":
            inv.unknown(f"`enable -f` loads a builtin from `{show(value or '')}`, which cannot be seen into", index)


def model_set(inv: Invocation) -> None:
    """``set -a`` / ``set -o allexport`` export every later assignment (``+a`` stops it);
    ``set -- ARGS`` sets the positional parameters."""
    state = inv.walker.state
    argv = inv.argv
    index = 1
    while index < len(argv):
        word = argv[index]
        if word == "--":
            state.positional = [(state.positional or ["bash"])[0], *argv[index + 1:]]
            return
        if word in ("-o", "+o") and index + 1 < len(argv):
            if argv[index + 1] == "allexport":
                _allexport(inv, word[0] == "-")
            index += 2
            continue
        if word[:1] in ("-", "+") and "a" in word[1:]:
            _allexport(inv, word[0] == "-")
        elif word[:1] not in ("-", "+"):
            state.positional = [(state.positional or ["bash"])[0], *argv[index:]]
            return
        index += 1


def _allexport(inv: Invocation, on: bool) -> None:
    state = inv.walker.state
    if on:
        state.exported = state.exported | {_ALLEXPORT}
    else:
        state.exported = state.exported - {_ALLEXPORT}


def model_unset(inv: Invocation) -> None:
    """``unset [-v|-f] NAMES``: an unset variable expands to nothing."""
    state = inv.walker.state
    functions = "-f" in inv.argv[1:]
    for index, word in enumerate(inv.argv[1:], start=1):
        if word.startswith("-"):
            continue
        subscript_code(inv.walker, word, inv.at(index))
        if functions:
            state.functions.pop(word, None)
        elif "[" in word:  # `unset 'a[0]'`: the array has a hole
            forget_array(inv.walker, word)
        else:
            state.variables[word] = ""
            state.variables.pop(ARRAY_KEY + word, None)


def model_shopt(inv: Invocation) -> None:
    """``shopt -s dotglob`` makes a glob's leading wildcard match dot-files (see
    :func:`exec._dotglob`), ``nocaseglob`` globs match in any case; ``shopt -s lastpipe`` runs a pipeline's last command in the shell
    itself; ``-u`` turns them off. An option name not known is taken as on."""
    from stockade.analyzer.exec import DOTGLOB_KEY, LASTPIPE_KEY, NOCASEGLOB_KEY

    argv = inv.argv
    mode = ""
    for word in argv[1:]:
        if word.startswith("-") and word != "-":
            mode = "s" if "s" in word else "u" if "u" in word else mode
            continue
        if word == "dotglob" or UNKNOWN in word:
            if mode == "s" or (mode == "" and UNKNOWN in word):
                inv.walker.state.variables[DOTGLOB_KEY] = "on"
            elif mode == "u" and UNKNOWN not in word:
                inv.walker.state.variables.pop(DOTGLOB_KEY, None)
        if word == "nocaseglob" or UNKNOWN in word:  # (globs match names in any case)
            if mode == "s" or (mode == "" and UNKNOWN in word):
                inv.walker.state.variables[NOCASEGLOB_KEY] = "on"
            elif mode == "u" and UNKNOWN not in word:
                inv.walker.state.variables.pop(NOCASEGLOB_KEY, None)
        if word == "lastpipe" or UNKNOWN in word:  # (the last command of a pipe runs in this shell)
            if mode == "s" or (mode == "" and UNKNOWN in word):
                inv.walker.state.variables[LASTPIPE_KEY] = "on"
            elif mode == "u" and UNKNOWN not in word:
                inv.walker.state.variables.pop(LASTPIPE_KEY, None)


def located(inv: Invocation, names: list[str], skip_functions: bool) -> str | None:
    """What ``which NAMES``/``type -P``/``command -v`` prints, as a command word that runs
    the same program: the bare name (the walker finds it as the script would), or a path in a
    system directory when a function of that name would shadow it (``which`` looks at files
    only); None when not known (a name with ``/`` or unknown text, a changed ``$PATH``)."""
    walker = inv.walker
    out = []
    for name in names:
        if not name or "/" in name or UNKNOWN in name:
            return None
        if skip_functions and name in walker.state.functions:
            if walker.state.variables.get("PATH") is not None:
                return None
            out.append("/usr/bin/" + name)
        else:
            out.append(name)
    return "\n".join(out) + "\n" if out else None


def model_complete(inv: Invocation) -> None:
    """``complete -C CMD NAME`` (``compgen -C``) runs CMD to complete NAME's words, ``bind -x
    'KEYS: CMD'`` runs CMD when the keys are typed: code an interactive shell runs later,
    walked as the shell code it is (the strict side: it may run in this session)."""
    argv = inv.argv
    for index in range(1, len(argv)):
        word = argv[index]
        if inv.name != "bind" and word in ("-C", "-F") and index + 1 < len(argv):
            if word == "-C":
                inv.script(argv[index + 1], index + 1, what=f"the completion command `{inv.name} -C` registers")
        elif inv.name == "bind" and word == "-x" and index + 1 < len(argv):
            binding = argv[index + 1]
            command = binding.partition(":")[2].strip() if ":" in binding else binding
            inv.script(command.strip("'\""), index + 1, what="the command `bind -x` binds to keys")


def model_which(inv: Invocation) -> None:
    """``which NAME…``: prints where each program is (see :func:`located`)."""
    names = inv.argv[1:]
    if not any(name.startswith("-") for name in names):
        inv.output(located(inv, names, skip_functions=True))


def model_type(inv: Invocation) -> None:
    """``type -P NAME…`` prints a program's path (``-p``: only when no function is named so)."""
    argv = inv.argv
    if len(argv) > 2 and argv[1] in ("-P", "-p", "-fP", "-Pf"):
        names = argv[2:]
        if argv[1] == "-p" and any(name in inv.walker.state.functions for name in names):
            inv.output(None)
            return
        inv.output(located(inv, names, skip_functions=True))


register("coproc", model_coproc, builtin=True)
register("complete bind", model_complete, builtin=True)
register("which", model_which)
register("type", model_type, builtin=True)
register("shopt", model_shopt, builtin=True)
register("mapfile readarray", model_mapfile, builtin=True)
register("read", model_read, builtin=True)
register("getopts", model_getopts, builtin=True)
register("hash", model_hash, builtin=True)
register("shift", model_shift, builtin=True)
register("history", model_history, builtin=True)
register("fc", model_fc, builtin=True)
register("test [", model_test, builtin=True)
register("enable", model_enable, builtin=True)
register("set", model_set, builtin=True)
register("unset", model_unset, builtin=True)


# -- producers of known output: what `$(…)` of them is ---------------------------------------


def model_mktemp(inv: Invocation) -> None:
    """``mktemp [-d] [-u] [-p DIR|--tmpdir[=DIR]] [-t] [TEMPLATE]``: creates a new file (a
    directory with ``-d``) in the temporary directory (or where the template says) and prints
    its name — a fresh name, ``XXXXXXXXXX`` here."""
    parsed = parse_options(inv.argv, {"-p", "--suffix"}, optional=frozenset({"--tmpdir"}))
    walker = inv.walker
    directory: str | None = None
    in_tmp = parsed.has("-t", "--tmpdir")
    for option, value, _ in parsed.options:
        if option in ("-p", "--tmpdir") and value:
            directory = value
            in_tmp = True
    template = parsed.positionals[0][0] if parsed.positionals else "tmp.XXXXXXXXXX"
    if "X" not in template:
        template += ".XXXXXXXXXX"
    if in_tmp or not parsed.positionals:
        if directory is None:
            directory = walker.lookup("TMPDIR") or "/tmp"
        template = directory.rstrip("/") + "/" + template.rpartition("/")[2]
    path = inv.path(template)
    if not parsed.has("-u", "--dry-run"):
        inv.write(path, parsed.positionals[0][1] if parsed.positionals else None)
    inv.output(None if UNKNOWN in path else path + "\n", "the output of `mktemp`")


def model_dirname(inv: Invocation) -> None:
    """``dirname NAME…``: prints each name without its last component."""
    names = [word for word in inv.argv[1:] if not word.startswith("-")]
    lines = []
    for name in names:
        stripped = name.rstrip("/")
        head = stripped.rpartition("/")[0].rstrip("/") if "/" in stripped else "."
        lines.append(head or "/")
    text = "".join(line + "\n" for line in lines)
    inv.output(None if UNKNOWN in text else text, "the output of `dirname`")


def model_basename(inv: Invocation) -> None:
    """``basename NAME [SUFFIX]``: prints the last component."""
    args = [word for word in inv.argv[1:] if not word.startswith("-")]
    if not args or "-a" in inv.argv or "-s" in inv.argv:
        return
    base = args[0].rstrip("/").rpartition("/")[2] or "/"
    if len(args) > 1 and base.endswith(args[1]) and base != args[1]:
        base = base[:-len(args[1])]
    inv.output(None if UNKNOWN in base else base + "\n", "the output of `basename`")


def realpath_output(inv: Invocation) -> None:
    """``realpath NAME…``, ``readlink -f|-e|-m NAME…``: print each name made absolute (the
    links the text made followed, as every path is); ``--relative-to`` or a plain
    ``readlink`` (a link's target): not known."""
    argv = inv.argv
    if inv.name == "readlink" and not any((w[:1] == "-" and w[1:2] != "-" and any(c in w for c in "fem"))
                                          or w in ("--canonicalize", "--canonicalize-existing",
                                                   "--canonicalize-missing") for w in argv[1:]):
        return
    if any(w.startswith(("--relative", "-z", "--zero")) for w in argv[1:]):
        return
    names = [word for word in argv[1:] if not word.startswith("-")]
    text = "".join(inv.path(name) + "\n" for name in names)
    if names:
        inv.output(None if UNKNOWN in text else text, f"the output of `{inv.name}`")


def model_pwd(inv: Invocation) -> None:
    """``pwd``: prints the working directory."""
    cwd = inv.walker.state.cwd
    inv.output(None if UNKNOWN in cwd else cwd + "\n", "the output of `pwd`")


register("mktemp", model_mktemp)
register("dirname", model_dirname)
for _name in ("realpath", "readlink"):
    _previous = MODELS.get(_name, default_model)

    def _resolved(inv: Invocation, previous: Model = _previous) -> None:
        previous(inv)
        realpath_output(inv)

    _resolved.__doc__ = f"{_previous.__doc__ or ''} (then {realpath_output.__name__})"
    register(_name, _resolved)
register("basename", model_basename)
register("pwd", model_pwd, builtin=True)


_PARALLEL_VALUES = frozenset({
    "-j", "--jobs", "-P", "--max-procs", "-S", "--sshlogin", "--joblog", "-a", "--arg-file", "-d", "--delimiter",
    "-n", "--max-args", "-N", "-L", "--max-lines", "--tmpdir", "--workdir", "--wd", "--results", "--colsep",
    "-C", "-I", "--timeout", "--delay", "--retries", "-E", "--halt", "--memfree", "--load", "--env",
    "--sshloginfile", "--slf", "--basefile", "--bf", "--return", "--transferfile", "--tf", "--block", "--tagstring",
    "--shebang-wrap"})
_PARALLEL_REPLACEMENTS = ("{}", "{.}", "{/}", "{//}", "{/.}", "{#}", "{%}")


def model_parallel(inv: Invocation) -> None:
    """GNU ``parallel [OPTIONS] [COMMAND] (::: ARGS | :::: FILES)…``: runs COMMAND through a
    shell once per input (the ``:::`` arguments, or the lines of stdin), the input in place of
    ``{}`` or appended; without COMMAND, each input is a command.  ``--dry-run`` runs nothing;
    ``-S`` runs on other hosts."""
    import shlex

    argv = inv.argv
    split = len(argv)
    for index, word in enumerate(argv):
        if word in (":::", "::::", ":::+", "::::+") and index:
            split = index
            break
    parsed = parse_options(argv[:split], _PARALLEL_VALUES, stop_at_first_positional=True)
    replace = "{}"
    files_input = False
    for option, value, index in parsed.options:
        if option in ("-S", "--sshlogin", "--sshloginfile", "--slf") and value:
            inv.unknown(f"`parallel {option}` runs commands on other hosts (`{show(value)}`)", index)
        elif option in ("-a", "--arg-file") and value:
            inv.read(value, index)
            files_input = True
        elif option in ("--joblog", "--results") and value and value != "-":
            inv.write(value, index, recursive=option == "--results")  # a log file / a tree of outputs
        elif option in ("--tmpdir", "--workdir", "--wd") and value and value not in (".", "..."):
            inv.write(value, index, recursive=True)
        elif option == "-I" and value:
            replace = value
        elif option in ("--dry-run",):
            return
    command = [word for word, _ in parsed.positionals]
    command_at = parsed.positionals[0][1] if parsed.positionals else None
    items: list[str] = []
    mode = ""
    for index in range(split, len(argv)):
        word = argv[index]
        if word in (":::", ":::+"):
            mode = "args"
        elif word in ("::::", "::::+"):
            mode = "files"
        elif mode == "args":
            items.append(word)
        else:
            inv.read(word, index)
            items.append(UNKNOWN)
    if split == len(argv):
        text = None if files_input else inv.stdin.text
        items = [UNKNOWN] if text is None else [line for line in text.split("\n") if line]
    if len(items) > 16:
        items = [UNKNOWN]
    at = command_at if command_at is not None else (split + 1 if split < len(argv) else None)
    if parsed.has("-q", "--quote") and command:  # each word is quoted: `sh -c 'cat {}'` stays one word
        for item in items:
            words = list(command)
            if not any(mark in word for word in words for mark in (replace, *_PARALLEL_REPLACEMENTS)):
                words.append(item)
            for mark in (replace, *_PARALLEL_REPLACEMENTS):
                words = [word.replace(mark, item) for word in words]
            inv.script(" ".join(word if UNKNOWN in word else shlex.quote(word) for word in words), at,
                       what="the command `parallel -q` runs")
        return
    for item in items:
        quoted = item if UNKNOWN in item else shlex.quote(item)
        if not command:
            code = item
        elif any(mark in word for word in command for mark in (replace, *_PARALLEL_REPLACEMENTS)):
            code = " ".join(command)
            for mark in (replace, *_PARALLEL_REPLACEMENTS):
                code = code.replace(mark, quoted)
        else:
            code = " ".join(command) + " " + quoted
        inv.script(code, at, what="the command `parallel` runs")

