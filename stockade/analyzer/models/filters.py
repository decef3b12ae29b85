"""Text filters fed known text: what they print is known too.

``echo /ETC | tr A-Z a-z | xargs rm -rf`` deletes ``/etc``, and ``d=$(echo /usr | tr -d '\\n')``
holds ``/usr``: a filter whose standard input is known text (a here-string, ``echo``, a file
this command wrote) and that is given no file prints a known text, which the next command of
the pipe, a substitution or ``xargs`` then uses.  The filters: ``head``, ``tail``, ``sort``,
``uniq``, ``tac``, ``rev``, ``tr``, ``cut``, ``paste``, ``sed`` with one ``s`` command of
plain text, ``awk '{print $N}'``, ``grep`` (a plain pattern filters; any other pattern passes
every line on: more than grep prints, never less), and ``xargs`` with no command
(``echo``).  An option or a form not listed leaves the output unknown, as before: each model
only adds what it prints to the tool's own model.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, register
from stockade.analyzer.models.wrappers import _xargs_items

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    from stockade.analyzer.models import Model

#: known input longer than this is not filtered (the output is left unknown)
_MAX_INPUT = 65536
_CLASSES = {"[:upper:]": "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "[:lower:]": "abcdefghijklmnopqrstuvwxyz",
            "[:digit:]": "0123456789", "[:space:]": " \t\n\r\f\v", "[:blank:]": " \t"}
_CLASSES["[:alpha:]"] = _CLASSES["[:upper:]"] + _CLASSES["[:lower:]"]
_CLASSES["[:alnum:]"] = _CLASSES["[:alpha:]"] + _CLASSES["[:digit:]"]
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "f": "\f", "v": "\v", "0": "\0"}
_REGEX_CHARS = frozenset(".[]*^$\\+?(){}|")
_GLOB_CHARS = re.compile(r"[*?\[]")
#: filters that print some of their lines, and those that print all of them in another order
_SELECTING = frozenset({"head", "tail", "grep"})
_REORDERING = frozenset({"sort", "uniq", "tac", "xargs"})


def _lines(text: str) -> list[str]:
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def _joined(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _count(word: str) -> int | None:
    return int(word) if word.isdigit() and len(word) < 9 else None


def _head_tail(name: str, words: list[str], text: str) -> str | None:
    count, from_start = 10, False
    position = 0
    while position < len(words):
        word = words[position]
        if word in ("-n", "--lines") and position + 1 < len(words):
            position += 1
            word = "-n" + words[position]
        if word.startswith("--lines="):
            word = "-n" + word[8:]
        if word.startswith("-n"):
            value = word[2:]
            from_start = value.startswith("+")
            found = _count(value.lstrip("+"))
        elif word[:1] == "-" and word[1:].isdigit():
            found = _count(word[1:])
        else:
            return None
        if found is None:
            return None
        count = found
        position += 1
    lines = _lines(text)
    if name == "head":
        return _joined(lines[:count])
    if from_start:
        return _joined(lines[max(count - 1, 0):])
    return _joined(lines[-count:] if count else [])


def _sort(words: list[str], text: str) -> str | None:
    unique, reverse = False, False
    for word in words:
        if word in ("--unique", "--reverse"):
            unique, reverse = unique or word == "--unique", reverse or word == "--reverse"
        elif word[:1] == "-" and word[1:2] != "-" and len(word) > 1 and all(flag in "ur" for flag in word[1:]):
            unique, reverse = unique or "u" in word, reverse or "r" in word
        else:
            return None
    return _joined(sorted(set(_lines(text)) if unique else _lines(text), reverse=reverse))


def _uniq(words: list[str], text: str) -> str | None:
    if words:
        return None
    out: list[str] = []
    for line in _lines(text):
        if not out or out[-1] != line:
            out.append(line)
    return _joined(out)


def _tr_set(spec: str) -> str | None:
    """The characters of a tr set (ranges, escapes, the POSIX classes above); None: not followed."""
    out: list[str] = []
    position = 0
    while position < len(spec):
        if spec[position] == "[":
            for name, members in _CLASSES.items():
                if spec.startswith(name, position):
                    out.append(members)
                    position += len(name)
                    break
            else:
                return None
            continue
        char = spec[position]
        if char == "\\" and position + 1 < len(spec):
            char = _ESCAPES.get(spec[position + 1], spec[position + 1])
            position += 1
        if position + 2 < len(spec) and spec[position + 1] == "-":
            end = spec[position + 2]
            if end < char:
                return None
            out.append("".join(chr(code) for code in range(ord(char), ord(end) + 1)))
            position += 3
            continue
        out.append(char)
        position += 1
    return "".join(out)


def _tr(words: list[str], text: str) -> str | None:
    delete = False
    while words and words[0][:1] == "-" and len(words[0]) > 1:
        if words[0] in ("-d", "--delete"):
            delete = True
        else:
            return None  # (-c, -s, -t: not followed)
        words = words[1:]
    sets = [_tr_set(word) for word in words]
    if None in sets:
        return None
    if delete and len(sets) == 1:
        drop = frozenset(sets[0] or "")
        return "".join(char for char in text if char not in drop)
    if not delete and len(sets) == 2 and sets[0] and sets[1]:
        source, target = sets[0], sets[1]
        target = (target + target[-1] * len(source))[:len(source)]
        return text.translate(str.maketrans(source, target))
    return None


def _ranges(spec: str) -> list[tuple[int, int]] | None:
    out = []
    for part in spec.split(","):
        low, dash, high = part.partition("-")
        if not (low or high) or not (low.isdigit() or not low) or not (high.isdigit() or not high):
            return None
        start = int(low) if low else 1
        end = (int(high) if high else 1 << 30) if dash else start
        out.append((start, end))
    return out


def _cut(words: list[str], text: str) -> str | None:
    delimiter, fields, chars = "\t", None, None
    position = 0
    while position < len(words):
        word = words[position]
        option, value = word[:2], word[2:]
        if option in ("-d", "-f", "-c", "-b") and not value and position + 1 < len(words):
            position += 1
            value = words[position]
        if option == "-d" and len(value) == 1:
            delimiter = value
        elif option == "-f":
            fields = _ranges(value)
        elif option in ("-c", "-b"):
            chars = _ranges(value)
        else:
            return None
        position += 1
    selected = fields if fields is not None else chars
    if selected is None:
        return None
    out = []
    for line in _lines(text):
        if fields is not None:
            if delimiter not in line:
                out.append(line)
                continue
            parts = line.split(delimiter)
            out.append(delimiter.join(part for number, part in enumerate(parts, 1)
                                      if any(start <= number <= end for start, end in selected)))
        else:
            out.append("".join(char for number, char in enumerate(line, 1)
                               if any(start <= number <= end for start, end in selected)))
    return _joined(out)


def _paste(words: list[str], text: str) -> str | None:
    serial, delimiter = False, "\t"
    position = 0
    while position < len(words):
        word = words[position]
        if word in ("-s", "--serial"):
            serial = True
        elif word.startswith(("-d", "--delimiters=")):
            value = word.partition("=")[2] if word.startswith("--") else word[2:]
            if not value and position + 1 < len(words):
                position += 1
                value = words[position]
            delimiter = value[:1] if value and value[:1] != "\\" else _ESCAPES.get(value[1:2], "")
        elif word.startswith("-s") and word[2:3] == "d":  # `-sd,`
            serial, delimiter = True, word[3:4] or delimiter
        elif word != "-":
            return None
        position += 1
    return delimiter.join(_lines(text)) + "\n" if serial else text


def _sed(words: list[str], text: str) -> str | None:
    scripts = [word for word in words if word not in ("-e", "--expression", "-E", "-r")]
    if len(scripts) != 1 or len(scripts[0]) < 4 or scripts[0][0] != "s":
        return None
    script = scripts[0]
    delimiter = script[1]
    parts = script[2:].split(delimiter)
    if len(parts) != 3 or parts[2] not in ("", "g") or delimiter.isalnum() or delimiter == "\\":
        return None
    pattern, replacement, flags = parts
    if not pattern or _REGEX_CHARS & set(pattern) or "&" in replacement or "\\" in replacement:
        return None
    return "".join(line.replace(pattern, replacement, -1 if flags == "g" else 1) + "\n" for line in _lines(text))


_AWK_PRINT = re.compile(r"\s*\{\s*print(?:\s+\$(\d+))?\s*;?\s*\}\s*")


def _awk(words: list[str], text: str) -> str | None:
    separator: str | None = None
    program: str | None = None
    position = 0
    while position < len(words):
        word = words[position]
        if word.startswith("-F"):
            value = word[2:]
            if not value and position + 1 < len(words):
                position += 1
                value = words[position]
            if len(value) != 1 or value in "\\ ":
                return None
            separator = value
        elif program is None and not word.startswith("-"):
            program = word
        else:
            return None
        position += 1
    found = _AWK_PRINT.fullmatch(program or "")
    if found is None:
        return None
    number = int(found.group(1)) if found.group(1) else 0
    out = []
    for line in _lines(text):
        if number == 0:
            out.append(line)
            continue
        fields = line.split(separator) if separator is not None else line.split()
        out.append(fields[number - 1] if number <= len(fields) else "")
    return _joined(out)


def _grep(words: list[str], text: str) -> str | None:
    invert, ignore, fixed = False, False, False
    pattern: str | None = None
    for word in words:
        if word[:1] == "-" and len(word) > 1 and pattern is None and not word.startswith("--"):
            for flag in word[1:]:
                if flag not in "viFEwx":
                    return None
            invert, ignore, fixed = invert or "v" in word, ignore or "i" in word, fixed or "F" in word
            if "w" in word or "x" in word:  # (whole words or lines: a subset of the plain match)
                fixed = False
        elif pattern is None:
            pattern = word
        else:
            return None  # (a file operand)
    if pattern is None:
        return None
    if not fixed and _REGEX_CHARS & set(pattern):
        return text  # (a pattern not followed: every line may be printed — more than grep prints, never less)
    needle = pattern.lower() if ignore else pattern
    return _joined([line for line in _lines(text) if (needle in (line.lower() if ignore else line)) != invert])


def _xargs(words: list[str], text: str) -> str | None:
    if words:
        return None  # (a command, or options: the model runs it)
    items = _xargs_items(text, None, False)
    return None if items == [UNKNOWN] else " ".join(items) + "\n"


def _rev(words: list[str], text: str) -> str | None:
    return None if words else _joined([line[::-1] for line in _lines(text)])


def _tac(words: list[str], text: str) -> str | None:
    return None if words else _joined(_lines(text)[::-1])


#: filter → the function computing what it prints from its arguments and its known input
FILTERS: dict[str, Callable[[list[str], str], str | None]] = {
    "head": lambda words, text: _head_tail("head", words, text),
    "tail": lambda words, text: _head_tail("tail", words, text),
    "sort": _sort, "uniq": _uniq, "tr": _tr, "cut": _cut, "paste": _paste, "sed": _sed, "awk": _awk,
    "gawk": _awk, "mawk": _awk, "grep": _grep, "xargs": _xargs, "rev": _rev, "tac": _tac,
}


def _filter_model(name: str, previous: Model | None) -> Model:
    compute = FILTERS[name]

    def model(inv: Invocation) -> None:
        if previous is not None:
            previous(inv)
        text = inv.stdin.text
        if text is None or UNKNOWN in text or len(text) > _MAX_INPUT:
            return
        try:
            output = compute(list(inv.argv[1:]), text)
        except (ValueError, IndexError):
            output = None
        if output is not None and _GLOB_CHARS.search(text):
            # a listing's names are known only as the globs they match (`ls DIR/*`, `compgen -c`):
            # a filter that selects lines may print any of them (all of them, as a bound); one
            # that keeps them all reorders them; one that rewrites them prints names not known
            output = text if name in _SELECTING else output if name in _REORDERING else None
        if output is not None:
            inv.output(output, f"the output of `{name}` of known text")

    model.__doc__ = f"{previous.__doc__ or name}; fed known text, what it prints is known (filters.py)"
    return model


for _name in FILTERS:
    register(_name, _filter_model(_name, MODELS.get(_name)))
