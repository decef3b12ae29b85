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
from stockade.analyzer.models.pipefill import ENDLESS
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


def _bytes(name: str, words: list[str], text: str) -> str | None:
    """``head -c N``/``tail -c N`` (``--bytes=N``) of known ASCII text: its first or last N
    characters (``+N`` for tail: from the Nth on); None when not followed."""
    if len(words) == 1:
        value = words[0][2:] if words[0][:2] == "-c" else words[0][8:] if words[0][:8] == "--bytes=" else None
    elif len(words) == 2 and words[0] in ("-c", "--bytes"):
        value = words[1]
    else:
        return None
    if value is None or not text.isascii():
        return None
    from_start = value[:1] == "+"
    count = _count(value.lstrip("+"))
    if count is None:
        return None
    if name == "head":
        return text[:count]
    return text[max(count - 1, 0):] if from_start else (text[-count:] if count else "")


def _fold(words: list[str], text: str) -> str | None:
    """``fold -w N`` (``-wN``, ``--width=N``; default 80) of known text with no line longer
    than N: unchanged; longer lines are not followed."""
    width: int | None = 80
    if words:
        joined = "".join(words)
        value = joined[2:] if joined[:2] == "-w" else joined[8:] if joined[:8] == "--width=" else None
        width = _count(value) if value is not None else None
    if width is None or any(len(line) > width for line in _lines(text)):
        return None
    return text


def _head_tail(name: str, words: list[str], text: str) -> str | None:
    if any(word[:2] == "-c" or word[:7] == "--bytes" for word in words):
        return _bytes(name, words, text)
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
    delete = squeeze = False
    while words and words[0][:1] == "-" and len(words[0]) > 1:
        if words[0] in ("-d", "--delete"):
            delete = True
        elif words[0] in ("-s", "--squeeze-repeats"):
            squeeze = True
        elif words[0] in ("-ds", "-sd"):
            delete = squeeze = True
        else:
            return None  # (-c, -t: not followed)
        words = words[1:]
    sets = [_tr_set(word) for word in words]
    if None in sets:
        return None
    if delete and len(sets) == (2 if squeeze else 1):
        drop = frozenset(sets[0] or "")
        kept = "".join(char for char in text if char not in drop)
        return _squeezed(kept, sets[1] or "") if squeeze else kept
    if squeeze and not delete and len(sets) == 1:
        return _squeezed(text, sets[0] or "")
    if not delete and len(sets) == 2 and sets[0] and sets[1]:
        source, target = sets[0], sets[1]
        target = (target + target[-1] * len(source))[:len(source)]
        translated = text.translate(str.maketrans(source, target))
        return _squeezed(translated, target) if squeeze else translated
    return None


def _squeezed(text: str, members: str) -> str:
    """``tr -s SET``: each run of one character of SET becomes that character once."""
    squeeze = frozenset(members)
    out: list[str] = []
    for char in text:
        if not (out and char == out[-1] and char in squeeze):
            out.append(char)
    return "".join(out)


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
        elif word.startswith("-s") and word[2:3] == "d":  # `-sd,`, `-sd ' '`
            value = word[3:]
            if not value and position + 1 < len(words):
                position += 1
                value = words[position]
            serial, delimiter = True, value[:1] if value[:1] != "\\" else _ESCAPES.get(value[1:2], "")
        elif word != "-":
            return None
        position += 1
    return delimiter.join(_lines(text)) + "\n" if serial else text


_SED_LINE = re.compile(r"\s*([0-9]+)\s*([pq])\s*$|\s*\$\s*p\s*$")


def _sed_lines(words: list[str], text: str) -> str | None:
    """``sed -n Np``, ``sed Nq``, ``sed -n '$p'``: one line (or the first N) of known text."""
    quiet = any(word in ("-n", "--quiet", "--silent") for word in words)
    scripts = [word for word in words if word not in ("-n", "--quiet", "--silent", "-e", "--expression")]
    if len(scripts) != 1:
        return None
    match = _SED_LINE.match(scripts[0])
    if match is None:
        return None
    lines = _lines(text)
    if match.group(1) is None:  # `$p`
        return _joined(lines[-1:]) if quiet else None
    number, command = int(match.group(1)), match.group(2)
    if command == "p" and quiet:
        return _joined(lines[number - 1:number] if number else [])
    if command == "q" and not quiet:
        return _joined(lines[:number])
    return None


def _sed(words: list[str], text: str) -> str | None:
    if any(word in ("-n", "--quiet", "--silent") for word in words) or re.match(r"\s*[0-9]+q\s*$", words[-1] if words else ""):
        return _sed_lines(words, text)
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


def _same(condition: Callable[[list[str], str], bool]) -> Callable[[list[str], str], str | None]:
    """A filter that prints known text unchanged when ``condition`` holds of its arguments and
    the text (``expand`` of text without tabs, ``iconv`` of ASCII text…); else not followed."""
    def compute(words: list[str], text: str) -> str | None:
        return text if condition(words, text) else None

    return compute


def _no_tabs(words: list[str], text: str) -> bool:
    return not words and "\t" not in text


def _iconv_ascii(words: list[str], text: str) -> bool:
    return text.isascii() and all(re.fullmatch(r"-[ft]|--(?:from|to)-code(?:=\S+)?|-c|[A-Za-z0-9_.:/-]+", word)
                                  for word in words) and not any(word.startswith("-o") for word in words)


def _dd_plain(words: list[str], text: str) -> bool:
    return all(word.partition("=")[0] in ("status", "bs", "ibs", "obs") and "=" in word for word in words)


def _strings_all(words: list[str], text: str) -> bool:
    return not words and all(len(line) >= 4 and line.isprintable() for line in _lines(text))


def _fmt_one(words: list[str], text: str) -> bool:
    lines = _lines(text)
    return not words and len(lines) == 1 and len(lines[0]) <= 75 and " " not in lines[0].strip()


def _column_one(words: list[str], text: str) -> bool:
    return words in ([], ["-t"]) and all(" " not in line and "\t" not in line for line in _lines(text)) and \
        len(_lines(text)) == 1


def _rev(words: list[str], text: str) -> str | None:
    return None if words else _joined([line[::-1] for line in _lines(text)])


def _tac(words: list[str], text: str) -> str | None:
    return None if words else _joined(_lines(text)[::-1])


def _pairs(words: list[str]) -> list[list[str]]:
    """``words`` with each ``-w`` joined to its value (``["-w", "0"]``)."""
    out: list[list[str]] = []
    for word in words:
        if out and out[-1] == ["-w"]:
            out[-1].append(word)
        else:
            out.append([word])
    return out


def _base64(words: list[str], text: str) -> str | None:
    """``base64 [-d] [-i] [-w0]`` (and base32) of known text: the decoded text (when it is UTF-8) or
    the encoded one (``cat $(echo L2V0Yy9zaGFkb3cK | base64 -d)`` reads `/etc/shadow`)."""
    import base64
    import binascii

    decode = wrap = False
    words = ["-w0" if pair == ["-w", "0"] else pair[0] for pair in _pairs(words)]
    for word in words:
        if word in ("-d", "--decode", "-D"):
            decode = True
        elif word in ("-i", "--ignore-garbage", "-di", "-id"):
            decode = decode or "d" in word
        elif word in ("-w0", "--wrap=0"):
            wrap = True
        else:
            return None  # (a file operand, another wrap width: not followed)
    if not decode:
        encoded = base64.b64encode(text.encode("utf-8", "surrogateescape")).decode("ascii")
        return encoded if wrap else "".join(encoded[i:i + 76] + "\n" for i in range(0, len(encoded), 76))
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
        return data.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


#: filters whose output is known only where it becomes a word (``$(… | base64 -d)``)
_DECODERS = frozenset({"base64", "base32", "xxd", "basenc", "openssl"})


def _base32(words: list[str], text: str) -> str | None:
    """``base32 -d`` of known text: the decoded text (when it is UTF-8)."""
    import base64
    import binascii

    if words not in (["-d"], ["--decode"]):
        return None
    try:
        return base64.b32decode("".join(text.split())).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _xxd(words: list[str], text: str) -> str | None:
    """``xxd -r -p`` (``-ps``, ``-plain``, ``-postscript``; the flags in any order) of known
    hex: the decoded text (when it is UTF-8); other modes are not followed."""
    import binascii

    reverse = plain = False
    for word in words:
        if word in ("-r", "-revert"):
            reverse = True
        elif word in ("-p", "-ps", "-plain", "-postscript"):
            plain = True
        elif word in ("-rp", "-pr"):
            reverse = plain = True
        else:
            return None
    if not (reverse and plain):
        return None
    digits = "".join(ch for ch in text if ch in "0123456789abcdefABCDEF")
    try:
        return binascii.unhexlify(digits[:len(digits) // 2 * 2]).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _basenc(words: list[str], text: str) -> str | None:
    """``basenc --base64|--base64url|--base32|--base16 -d`` of known text: the decoded text."""
    import base64
    import binascii

    decoders = {"--base64": base64.b64decode, "--base64url": base64.urlsafe_b64decode,
                "--base32": base64.b32decode, "--base16": lambda data: base64.b16decode(data, casefold=True)}
    chosen = [decoders[word] for word in words if word in decoders]
    if len(chosen) != 1 or not any(word in ("-d", "--decode") for word in words) or \
            any(word not in decoders and word not in ("-d", "--decode", "-i", "--ignore-garbage") for word in words):
        return None
    try:
        return chosen[0]("".join(text.split())).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _openssl(words: list[str], text: str) -> str | None:
    """``openssl base64 -d`` / ``openssl enc -base64 -d`` (``-a``, ``-A``) of known text: the
    decoded text; any other command, cipher or option is not followed."""
    import base64
    import binascii

    if not words or words[0] not in ("base64", "enc"):
        return None
    decode, armored = False, words[0] == "base64"
    for word in words[1:]:
        if word == "-d":
            decode = True
        elif word in ("-a", "-base64"):
            armored = True
        elif word not in ("-A", "-e"):
            return None
    if not (decode and armored):
        return None
    try:
        return base64.b64decode("".join(text.split()), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


#: filter → the function computing what it prints from its arguments and its known input
FILTERS: dict[str, Callable[[list[str], str], str | None]] = {
    "head": lambda words, text: _head_tail("head", words, text),
    "tail": lambda words, text: _head_tail("tail", words, text),
    "sort": _sort, "uniq": _uniq, "tr": _tr, "cut": _cut, "paste": _paste, "sed": _sed, "awk": _awk,
    "gawk": _awk, "mawk": _awk, "grep": _grep, "xargs": _xargs, "rev": _rev, "tac": _tac, "fold": _fold,
    "expand": _same(_no_tabs), "iconv": _same(_iconv_ascii), "dd": _same(_dd_plain),
    "strings": _same(_strings_all), "fmt": _same(_fmt_one), "column": _same(_column_one), "base64": _base64, "base32": _base32,
    "xxd": _xxd, "basenc": _basenc, "openssl": _openssl,
}


def _filter_model(name: str, previous: Model | None) -> Model:
    compute = FILTERS[name]

    def model(inv: Invocation) -> None:
        if previous is not None:
            previous(inv)
        text = inv.stdin.text
        if text is None or UNKNOWN in text or len(text) > _MAX_INPUT:
            return
        if name != "head" and inv.stdin.what.startswith(ENDLESS):
            return  # (known lines without end, `yes X |`: only head bounds them, others pass on the mark)
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
            if name in _DECODERS:  # (code run from it is walked and stays unknown: see walker.decoded_code)
                inv.walker.decoded = inv.walker.decoded | {output.strip()}
            inv.output(output, f"the output of `{name}` of known text")

    model.__doc__ = f"{previous.__doc__ or name}; fed known text, what it prints is known (filters.py)"
    return model


for _name in FILTERS:
    register(_name, _filter_model(_name, MODELS.get(_name)))

#: lines of ``yes``'s endless output that are followed (one more than xargs takes as known words)
_YES_LINES = 33
_YES_MODEL = MODELS.get("yes")


def model_yes_output(inv: Invocation) -> None:
    """``yes [STRING…]`` prints its arguments (``y`` without) on every line without end: the
    lines a filter keeps of it are known (``yes ~/.netrc | head -1`` prints ``~/.netrc``'s
    path); the first lines are followed, which is all that ``head -N`` takes for small N."""
    if _YES_MODEL is not None:
        _YES_MODEL(inv)
    words = inv.argv[1:]
    if words[:1] == ["--"]:
        words = words[1:]
    elif words and words[0][:2] == "--":
        return  # (--help, --version)
    line = " ".join(words) if words else "y"
    if UNKNOWN in line or len(line) > 4096:
        return
    inv.output((line + "\n") * _YES_LINES, ENDLESS + "`yes`")


register("yes", model_yes_output)

_SEQ_MODEL = MODELS.get("seq")
#: numbers of ``seq`` output that are followed
_SEQ_MAX = 64


#: a ``seq -f`` format: text around one ``%`` conversion of a floating-point number (C's printf)
_SEQ_FORMAT = re.compile(r"[^%]*(?:%%[^%]*)*%[-+ #0']*[0-9]{0,3}(?:\.[0-9]{1,3})?[gGfeE](?:[^%]|%%)*")


def model_seq_output(inv: Invocation) -> None:
    """``seq [-w] [-f FORMAT] [-s SEP] [FIRST [INCREMENT]] LAST`` of small integers prints known
    lines (``y=$(seq 1 1)``, ``seq -w 1 10``: zero-padded, ``seq -f 'part-%02g' 1 4``)."""
    if _SEQ_MODEL is not None:
        _SEQ_MODEL(inv)
    words = inv.argv[1:]
    pad = False
    fmt: str | None = None
    while words and words[0][:1] == "-" and not words[0][1:].isdigit():
        if words[0] in ("-w", "--equal-width"):
            pad = True
            words = words[1:]
        elif words[0] in ("-f", "--format") and len(words) > 1:
            fmt, words = words[1], words[2:]
        elif words[0].startswith("--format="):
            fmt, words = words[0].partition("=")[2], words[1:]
        else:
            return
    if fmt is not None and (UNKNOWN in fmt or len(fmt) > 256 or not _SEQ_FORMAT.fullmatch(fmt)):
        return
    if not 1 <= len(words) <= 3 or not all(word.lstrip("-").isdigit() and len(word) < 10 for word in words):
        return
    numbers = [int(word) for word in words]
    first, step, last = (1, 1, numbers[0]) if len(numbers) == 1 else \
        (numbers[0], 1, numbers[1]) if len(numbers) == 2 else tuple(numbers)
    if step == 0 or (last - first) // step + 1 > _SEQ_MAX:
        return
    values = range(first, last + (1 if step > 0 else -1), step)
    if fmt is not None:
        try:
            texts = [fmt.replace("'", "") % float(value) for value in values]
        except (TypeError, ValueError, OverflowError):
            return
    elif pad:
        width = max((len(str(value)) for value in values), default=0)
        texts = [("-" + str(-value).zfill(width - 1)) if value < 0 else str(value).zfill(width) for value in values]
    else:
        texts = [str(value) for value in values]
    inv.output(_joined(texts), "the numbers `seq` prints")


register("seq", model_seq_output)
