"""Glob patterns in paths and command names, matched against what they could name.

The analyzer never lists a directory (the workspace is the agent's, and the analysis is
static): a glob is judged as every path *the policy has a rule for* that it could match,
plus one representative name for the paths no rule names (:func:`path_candidates`); a
globbed command name as every known program it could be (:func:`command_candidates`).

Shell globs follow bash's defaults: ``*``, ``?`` and ``[…]`` stay within a component, a
component's leading ``.`` is matched only by a literal ``.`` (no ``dotglob``); ``**`` (the
analyzer's spelling of "any depth", from ``rg -g``/``find -name`` patterns) spans components.
"""

from __future__ import annotations

import re
from itertools import pairwise

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterable

_GLOB_CHARS = re.compile(r"[*?\[]")
#: more candidates than this: the glob is judged as unbounded (`/usr/bin/r*` is about 70 known
#: programs, each walked once: a few milliseconds)
MAX_CANDIDATES = 160
#: a glob path with more components than this could name any path a rule names
MAX_GLOB_COMPONENTS = 64
#: the directories a globbed command directory may stand for
BIN_DIRS = ("/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/usr/libexec",
            "/usr/games", "/snap/bin", "/opt/homebrew/bin")
#: common programs besides those with a model (a globbed name could be one of them)
COMMON_PROGRAMS = frozenset((
    "rm rmdir mv cp ln dd shred truncate chmod chown chgrp chattr mkdir touch install tee sponge sudo su doas "
    "pkexec bash sh dash zsh ksh fish python python3 perl ruby node php lua curl wget nc ncat netcat socat ssh scp "
    "sftp rsync git tar zip unzip gzip xz bzip2 cat less more head tail grep find xargs env nohup timeout kill "
    "pkill killall crontab at systemctl mount umount mkfs fdisk passwd useradd usermod visudo reboot shutdown "
    "halt poweroff ls id whoami true false echo printf sed awk gawk vim vi nano emacs").split())


def has_glob(text: str) -> bool:
    """Whether a word has glob characters."""
    return "*" in text or "?" in text or "[" in text


_STAR = "\0*"  # a star, until the component's regex is assembled


#: POSIX character classes in a bracket expression (``[[:alpha:]]``); the others (``cntrl``,
#: ``graph``, ``print``, a name bash does not know) match any one character but ``/``
_POSIX_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
                  "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "xdigit": "0-9A-Fa-f", "word": "a-zA-Z0-9_",
                  "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")}
_ANY_ONE = "[^/]"


def _bracket_end(part: str, index: int) -> int:
    """The index of the ``]`` closing the bracket expression opened at ``index`` (-1: none,
    the ``[`` is literal): a ``]`` first in it is a member (``[]a]``, ``[!]]``), and
    ``[:name:]``, ``[=c=]``, ``[.c.]`` are elements."""
    position = index + 1
    if part[position:position + 1] in ("!", "^"):
        position += 1
    if part[position:position + 1] == "]":
        position += 1
    length = len(part)
    while position < length:
        char = part[position]
        if char == "[" and part[position + 1:position + 2] in (":", "=", "."):
            close = part.find(part[position + 1] + "]", position + 2)
            if close != -1:
                position = close + 2
                continue
        if char == "]":
            return position
        position += 1
    return -1


def _class_regex(body: str) -> str:
    """The regex of a bracket expression's body (without its brackets); what Python's regex
    cannot say exactly (an unknown or unprintable class, a range out of order) matches any one
    character but ``/`` — more than bash's, never less (a glob that may match a denied name is
    that access)."""
    negate = body[:1] in ("!", "^")
    core = body[1:] if negate else body
    members: list[str] = []
    position = 0
    while position < len(core):
        char = core[position]
        if char == "[" and core[position + 1:position + 2] in (":", "=", "."):
            kind = core[position + 1]
            close = core.find(kind + "]", position + 2)
            if close != -1:
                name = core[position + 2:close]
                if kind == ":":
                    if name not in _POSIX_CLASSES:
                        return _ANY_ONE
                    members.append(_POSIX_CLASSES[name])
                else:
                    members.append(re.escape(name))
                position = close + 2
                continue
        if char == "\\" and position + 1 < len(core):
            members.append(re.escape(core[position + 1]))
            position += 2
            continue
        members.append("-" if char == "-" and members and position + 1 < len(core) else re.escape(char))
        position += 1
    regex = ("[^" if negate else "[") + "".join(members) + "]"
    try:
        re.compile(regex)
    except re.error:
        return _ANY_ONE
    return regex


def _component_regex(part: str, dots: bool) -> str:
    """One path component of a glob as a regex."""
    out: list[str] = []
    if not dots and part[:1] in ("*", "?", "["):
        out.append(r"(?!\.)")
    index = 0
    while index < len(part):
        char = part[index]
        if char == "*":
            if out and out[-1] == _STAR:
                index += 1
                continue  # `**` inside a component is `*`
            out.append(_STAR)
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = _bracket_end(part, index)
            if end == -1:
                out.append(re.escape(char))
            else:
                out.append(_class_regex(part[index + 1:end]))
                index = end
        else:  # a run of literal characters, escaped at once (re.escape maps each on its own)
            special = _GLOB_CHARS.search(part, index)
            end = len(part) if special is None else special.start()
            out.append(re.escape(part[index:end]))
            index = end
            continue
        index += 1
    stars = [i for i, piece in enumerate(out) if piece == _STAR]
    if len(stars) > 1:
        # every star but the last finds the leftmost match of what follows it and commits
        # (an atomic group): the same matches as the plain regex, without its backtracking
        # (`*a*a*a*a*b` on a long name would take exponential time)
        pieces = list(out)
        for start, end in pairwise(stars):
            pieces[start] = "(?>[^/]*?" + "".join(pieces[start + 1:end]) + ")"
            for i in range(start + 1, end):
                pieces[i] = ""
        pieces[stars[-1]] = "[^/]*"
        return "".join(pieces)
    return "".join("[^/]*" if piece == _STAR else piece for piece in out)


def name_regex(glob: str) -> re.Pattern[str]:
    """A file-name glob (``find -name``: a leading wildcard matches a dot) as a regex for
    ``match`` (with the POSIX classes and the linear matching of :func:`glob_regex`)."""
    return re.compile(_component_regex(glob, True) + r"\Z", re.DOTALL)


def glob_regex(parts: list[str], dots: bool = False) -> re.Pattern[str]:
    """The components ``parts`` of an absolute glob as a regex over absolute paths."""
    return _compile_body("".join(_pieces(parts, dots)))


def _pieces(parts: list[str], dots: bool = False) -> list[str]:
    """The regex of each component of ``parts`` (a ``**`` right after another: empty, as
    ``**/**`` is ``**``); the regex of ``parts[:k]`` is that of the first ``k`` joined."""
    return ["" if part == "**" and index and parts[index - 1] == "**" else
            r"(?:/(?!\.)[^/]+)*" if part == "**" else "/" + _component_regex(part, dots)
            for index, part in enumerate(parts)]


def _compile_body(body: str) -> re.Pattern[str]:
    return re.compile((body or "/") + r"\Z", re.DOTALL)


#: a glob word with more components starting with a glob character than this gets only the
#: variant with every one of them dotted (2**k variants otherwise)
_MAX_DOTTED = 3


def _dotted(part: str) -> str | None:
    """The component ``part`` (starting with a glob character) as it matches a dot-file under
    ``dotglob``: ``*x`` → ``.*x``, ``?x`` → ``.x``, ``[…]x`` → ``.x`` (a class may hold ``.``);
    None when it cannot match one."""
    if part[:1] == "*":
        return "." + part
    if part[:1] == "?":
        return "." + part[1:]
    if part[:1] == "[":
        end = part.find("]", 3 if part[1:2] in ("!", "^") else 2)
        return None if end == -1 else "." + part[end + 1:]
    return None


def dotglob_variants(word: str) -> list[str]:
    """The words a glob ``word`` adds under ``shopt -s dotglob`` (or a set ``GLOBIGNORE``),
    where a leading ``*``, ``?`` or ``[…]`` also matches a leading ``.``: the word with those
    components spelt with a literal dot, as the analyzer's globs (bash's defaults) read them."""
    parts = word.split("/")
    spots = [i for i, part in enumerate(parts) if part[:1] in ("*", "?", "[") and part != "**"]
    dotted = {i: _dotted(parts[i]) for i in spots}
    spots = [i for i in spots if dotted[i] is not None]
    if not spots:
        return []
    masks = range(1, 2 ** len(spots)) if len(spots) <= _MAX_DOTTED else [2 ** len(spots) - 1]
    out = []
    for mask in masks:
        variant = list(parts)
        for bit, i in enumerate(spots):
            if mask >> bit & 1:
                variant[i] = dotted[i] or parts[i]
        out.append("/".join(variant))
    return out


def representative(path: str) -> str:
    """One concrete name a glob stands for when no rule names what it matches."""
    return re.sub(r"\[[^\]]*\]", "x", path).replace("**", "x").replace("*", "x").replace("?", "x")


def _sample(pattern: str) -> str | None:
    """A concrete name matched by a policy glob's last component (``.env*`` → ``.env``)."""
    if "/" in pattern or pattern == "**":
        return None
    sample = pattern.replace("**", "").replace("*", "").replace("?", "x")
    return sample or None


#: the characters a name shared by two globs is spelt with (besides their literal ones)
_WITNESS_ALPHABET = "x" + "".join(dict.fromkeys(
    "abcdefghijklmnopqrstuvwyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
    + "".join(chr(code) for code in range(33, 127) if chr(code) != "/")))
#: component globs longer than this are not intersected (a sample of the rule's glob only)
_MAX_WITNESS_TOKENS = 48


def _tokens(part: str) -> list[str | re.Pattern[str] | None]:
    """A glob component as tokens: a literal character, None for ``*``, a one-character regex
    for ``?`` and a bracket expression."""
    out: list[str | re.Pattern[str] | None] = []
    index = 0
    while index < len(part):
        char = part[index]
        if char == "*":
            if not out or out[-1] is not None:
                out.append(None)
        elif char == "?":
            out.append(re.compile(_ANY_ONE))
        elif char == "[" and (end := _bracket_end(part, index)) != -1:
            out.append(re.compile(_class_regex(part[index + 1:end])))
            index = end
        else:
            out.append(char)
        index += 1
    return out


def _takes(token: str | re.Pattern[str] | None, char: str) -> bool:
    if token is None:
        return True
    if isinstance(token, str):
        return token == char
    return token.fullmatch(char) is not None


def component_witness(word: str, rule: str) -> str | None:
    """A name that both the component glob ``word`` (bash's: a leading wildcard does not match
    a dot) and the policy's component glob ``rule`` match, or None when they share none
    (``.e[n]v.local`` and ``.env*`` share ``.env.local``).  A star of ``word`` is not taken to
    spell the rule's literal characters (``*.py`` is not judged as ``.env.py``): a word that
    names a rule's literal name in part names it with its own characters or classes."""
    first, second = _tokens(word), _tokens(rule)
    if len(first) > _MAX_WITNESS_TOKENS or len(second) > _MAX_WITNESS_TOKENS:
        return None
    alphabet = "".join(dict.fromkeys(_WITNESS_ALPHABET + "".join(t for t in (*first, *second) if isinstance(t, str))))
    start = (0, 0, False)
    parents: dict[tuple[int, int, bool], tuple[tuple[int, int, bool], str] | None] = {start: None}
    queue = [start]
    for state in queue:
        i, j, consumed = state
        if i == len(first) and j == len(second):
            spelt = []
            while (link := parents[state]) is not None:
                state, char = link
                spelt.append(char)
            return "".join(reversed(spelt))
        moves: list[tuple[tuple[int, int, bool], str]] = []
        if i < len(first) and first[i] is None:
            moves.append(((i + 1, j, consumed), ""))
        if j < len(second) and second[j] is None:
            moves.append(((i, j + 1, consumed), ""))
        if i < len(first) and j < len(second):
            one, two = first[i], second[j]
            if one is None and isinstance(two, str):
                continue  # (a star of the word may not stand for the rule's literal text: `*.py` is not `.env.py`)
            for char in ((one,) if isinstance(one, str) else (two,) if isinstance(two, str) else alphabet):
                if char == "." and not consumed and not isinstance(one, str):
                    continue  # (bash: a leading wildcard does not match a dot)
                if _takes(one, char) and _takes(two, char):
                    moves.append(((i if one is None else i + 1, j if two is None else j + 1, True), char))
        for target, char in moves:
            if target not in parents:
                parents[target] = (state, char)
                queue.append(target)
    return None


def path_candidates(glob: str, literal: Iterable[str], globbed: Iterable[str], deep: bool = False) -> list[str]:
    """The concrete paths a glob path could be, for judging: each rule path (``literal``) it
    could match, an ancestor of one, or a path below one; a name each glob rule (``globbed``)
    matches, in the glob's directory; and the :func:`representative` name.  ``deep``: a
    ``**`` also descends into hidden directories (``find``'s search, judged for reads)."""
    parts = [part for part in glob.split("/") if part]
    out: list[str] = [representative(glob)]
    seen = set(out)
    if len(parts) > MAX_GLOB_COMPONENTS:
        # matching it against every prefix of every rule is quadratic in its length: every
        # rule path is judged as one it could name (strict, and linear)
        out.extend(rule for rule in literal if rule not in seen)
        return out
    pieces = _pieces(parts)  # (each component's regex made once: the prefixes below share them)
    full = _compile_body("".join(pieces))
    spread = parts.index("**") if deep and "**" in parts else -1
    above = _compile_body("".join(pieces[:spread])) if spread >= 0 else None
    prefixes: list[re.Pattern[str]] | None = None  # the regexes of the glob's first 1, 2, … components
    for rule in literal:
        if not rule.strip("/"):  # (no component)
            continue
        rule_parts: list[str] | None = None  # (split only where needed)
        found: str | None = None
        below_root = False
        if above is not None:
            rule_parts = split = [part for part in rule.split("/") if part]
            below_root = any(above.match("/" + "/".join(split[:k])) for k in range(len(split) + 1))
        if below_root:
            # `ROOT/**/NAME` with the rule's path at or below ROOT: NAME below the rule's path
            rest = parts[spread + 1:]
            found = rule + ("/" + representative("/".join(rest)) if rest else "")
            if found not in seen:
                seen.add(found)
                out.append(found)
            continue
        if full.match(rule):
            found = rule
        else:
            # the glob's first k components name the rule's path: a path below it
            if prefixes is None:
                prefixes = [_compile_body("".join(pieces[:k])) for k in range(1, len(parts))]
            for k, prefix in enumerate(prefixes, start=1):
                if prefix.match(rule):
                    found = rule + "/" + representative("/".join(parts[k:]))
                    break
            else:
                # the glob names an ancestor of the rule's path
                if rule_parts is None:
                    rule_parts = [part for part in rule.split("/") if part]
                for k in range(1, len(rule_parts)):
                    ancestor = "/" + "/".join(rule_parts[:k])
                    if full.match(ancestor):
                        found = ancestor
                        break
        if found is not None and found not in seen:
            seen.add(found)
            out.append(found)
    if parts and has_glob(parts[-1]):
        last = glob_regex(parts[-1:])
        directory = representative("/" + "/".join(parts[:-1]))
        for rule in globbed:
            sample = _sample(rule.rpartition("/")[2])
            if sample is None or not last.match("/" + sample):
                rule_last = rule.rpartition("/")[2]
                sample = None if rule_last == "**" else component_witness(parts[-1], rule_last)
            if sample is not None:
                candidate = directory.rstrip("/") + "/" + sample
                if candidate not in seen:
                    seen.add(candidate)
                    out.append(candidate)
    return out


def command_candidates(name: str, programs: Iterable[str]) -> list[str] | None:
    """The command names a globbed command name could be (None: too many to tell, or a
    directory that is not a standard one; empty: no known program, the name is run as it is)."""
    directory, slash, base = name.rpartition("/")
    if slash:
        if has_glob(directory):
            parts: list[str] = []
            for part in directory.split("/"):
                if part == "..":
                    if parts:
                        parts.pop()
                elif part and part != ".":
                    parts.append(part)
            regex = glob_regex(parts)
            directories = [d for d in BIN_DIRS if regex.match(d)]
            if not directories:
                return None
        else:
            directories = [directory or "/"]
    else:
        directories = [""]
    base_regex = glob_regex([base])
    names = sorted({program for program in (*programs, *COMMON_PROGRAMS)
                    if "/" not in program and not has_glob(program) and base_regex.match("/" + program)})
    if len(names) * len(directories) > MAX_CANDIDATES:
        return None
    return [(d.rstrip("/") + "/" if slash else "") + program for d in directories for program in names]
