"""Programs that print a plain value: a date, a number, a commit id, a machine name.

What they print is not known before they run, but its shape is: ``date +%F`` prints digits
and dashes, ``nproc`` and ``id -u`` a number, ``whoami`` a user name, ``git rev-parse --short HEAD`` hexadecimal
digits.  None of it holds a ``/``, a glob character, or starts with ``.`` or ``-``, so
``tar -czf "backup-$(date +%F).tgz" data/`` writes one file in the working directory and
``mkdir -p "logs/$(date +%Y%m%d)"`` one directory in ``logs``.  Such output is the marker
:data:`~stockade.analyzer.effects.UNKNOWN_NAME` (or :data:`~stockade.analyzer.effects.UNKNOWN_NUMBER`):
unknown to every test, condition and command name, and judged as the names it could be
(``*``) where it is part of a path.  A form not listed here (``date -f``, ``%x``, ``%z``,
names with ``/`` or a leading ``-``) prints what is unknown, as before — but a git ref name
(``git branch --show-current``, ``git describe``) is :data:`~stockade.analyzer.effects.REF_NAME`:
components without ``..`` or a leading dot, judged as the names below a directory.  Each model only adds what the program prints to the program's own model.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import CHILD_PID, REF_NAME, UNKNOWN_NAME, UNKNOWN_NAME_OR_EMPTY, UNKNOWN_NUMBER
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, default_model, register

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model

#: ``date`` conversions that print only digits (with GNU's flags and width: ``%-d``, ``%_H``
#: pad with blanks, still no ``/``)
_DATE_DIGITS = frozenset("CdeGgHIjklMmNqSsUuVWwYy")
#: conversions that print letters, digits, blanks, ``:``, ``,`` and ``-`` (not first)
_DATE_TEXT = frozenset("aAbBhFTRr")
#: ... and those that may print nothing (``%p`` in a locale without AM/PM)
_DATE_MAYBE_EMPTY = frozenset("pPZ")
#: conversions that print a fixed text
_DATE_FIXED = {"n": "\n", "t": "\t", "%": "%"}
_DATE_DIRECTIVE = re.compile(r"%([-_0^#]*[0-9]*)([EO]?)(.)", re.DOTALL)
_DATE_FLAGS = frozenset({"-u", "--utc", "--universal"})
#: fixed formats: ``-I``/``--iso-8601[=…]`` (``2026-12-02T10:00:00+00:00``), ``-R``, ``--rfc-3339=…``
_DATE_FORMATS = re.compile(r"-I[a-z]*|--iso-8601(?:=[a-z]+)?|-R|--rfc-email|--rfc-2822|--rfc-3339=[a-z]+")


def _date_text(fmt: str) -> str | None:
    """What ``date +FMT`` prints: the format's own text, each conversion as a plain marker;
    None for a conversion whose output is not plain (``%x``, ``%D`` in some locales, ``%z``)."""
    out: list[str] = []
    last = 0
    for match in _DATE_DIRECTIVE.finditer(fmt):
        out.append(fmt[last:match.start()])
        last = match.end()
        flags, modifier, conversion = match.groups()
        if conversion in _DATE_FIXED and not flags and not modifier:
            out.append(_DATE_FIXED[conversion])
        elif conversion in _DATE_DIGITS:
            plain_digits = "_" not in flags and not modifier and conversion not in "ekl"
            out.append(UNKNOWN_NUMBER if plain_digits else UNKNOWN_NAME)
        elif conversion in _DATE_TEXT:
            out.append(UNKNOWN_NAME)
        elif conversion in _DATE_MAYBE_EMPTY:
            out.append(UNKNOWN_NAME_OR_EMPTY)
        else:
            return None
    if "%" in fmt[last:]:
        return None
    out.append(fmt[last:])
    return "".join(out)


def date_output(inv: Invocation) -> None:
    """``date [-u] (+FORMAT | -I… | -R | --rfc-3339=…)``: prints the current time as the format
    says.  The locale's default format, ``-d STRING`` and ``-r FILE`` (a time before 1970
    makes ``%s`` negative), ``-s``/``--set`` and other options: not known."""
    text = None
    for word in inv.argv[1:]:
        if word in _DATE_FLAGS:
            continue
        if _DATE_FORMATS.fullmatch(word):
            text = UNKNOWN_NAME
        elif word[:1] == "+":
            text = _date_text(word[1:])
        else:
            return
        if text is None:
            return
    if text is not None:
        inv.output(text + "\n", "the time `date` prints")


#: ``id`` options that print numbers (``-G``: several, blank-separated)
_ID_NUMBERS = frozenset({"-u", "-g", "-G", "-ru", "-rg", "-ur", "-gr", "--user", "--group", "--groups"})


def id_output(inv: Invocation) -> None:
    """``id -u`` / ``-g`` / ``-G`` (with ``-r``, no ``-n``): the user's or group's numbers."""
    words = inv.argv[1:]
    if words and all(word in _ID_NUMBERS or word in ("-r", "--real") for word in words) and \
            any(word not in ("-r", "--real") for word in words):
        inv.output(UNKNOWN_NUMBER + "\n", "the number `id` prints")


#: ``id`` options that print one name (``-un``: the user's, ``-gn``: the group's)
_ID_NAMES = frozenset({"-u", "-g", "-n", "-un", "-nu", "-gn", "-ng", "--user", "--group", "--name"})


def user_output(inv: Invocation) -> None:
    """``whoami``, ``logname``, ``id -un`` (``-gn``), ``hostname [-s|-f]``: the user's, group's or
    machine's name (set by the machine's administrator: letters, digits, ``.``, ``_``, ``-``,
    not first)."""
    words = inv.argv[1:]
    if inv.name in ("whoami", "logname"):
        plain = not words
    elif inv.name == "hostname":
        plain = all(word in ("-s", "--short", "-f", "--fqdn", "--long") for word in words)
    else:  # id
        plain = all(word in _ID_NAMES for word in words) and any("n" in word for word in words) and \
            any("n" not in word or len(word) == 3 for word in words)
    if plain:
        inv.output(UNKNOWN_NAME + "\n", f"the name `{inv.name}` prints")


def pgrep_output(inv: Invocation) -> None:
    """``pgrep PATTERN``: pids, numbers one per line (``/proc/$(pgrep -n node)/status``); ``pgrep -P
    $$`` (``-P $!``): the pids of the command's own processes."""
    from stockade.analyzer.models.system import own_children

    if any(word in ("-l", "-a", "--list-name", "--list-full", "-d", "--delimiter", "-w", "--lightweight")
           or word.startswith(("--delimiter=", "-d")) for word in inv.argv[1:]):
        return  # (names, whole command lines, other separators)
    if own_children(inv):
        inv.output(CHILD_PID + "\n", "the pids of this command's own processes `pgrep -P` prints")
    else:  # (pids or a count: numbers, one per line)
        inv.output(UNKNOWN_NUMBER + "\n", "the pids `pgrep` prints")


def nproc_output(inv: Invocation) -> None:
    """``nproc [--all] [--ignore=N]``: the number of processors."""
    if all(word == "--all" or word.startswith("--ignore=") for word in inv.argv[1:]):
        inv.output(UNKNOWN_NUMBER + "\n", "the number `nproc` prints")


def getconf_output(inv: Invocation) -> None:
    """``getconf _NPROCESSORS_ONLN`` (and other numeric system values): a number."""
    words = inv.argv[1:]
    if len(words) == 1 and words[0].lstrip("_") in ("NPROCESSORS_ONLN", "NPROCESSORS_CONF", "PAGESIZE",
                                                    "PAGE_SIZE", "ARG_MAX", "CLK_TCK", "OPEN_MAX", "LONG_BIT"):
        inv.output(UNKNOWN_NUMBER + "\n", "the number `getconf` prints")


#: uname options whose values are plain names (``-o`` prints `GNU/Linux`, ``-v`` a build text)
_UNAME_PLAIN = frozenset("smrpi")
_UNAME_LONG = {"--kernel-name": "s", "--machine": "m", "--kernel-release": "r", "--processor": "p",
               "--hardware-platform": "i"}


def uname_output(inv: Invocation) -> None:
    """``uname [-s|-m|-r|-p|-i]``: the kernel's name, the machine (``x86_64``), the release."""
    for word in inv.argv[1:]:
        if word in _UNAME_LONG:
            continue
        if not (word[:1] == "-" and word[1:2] != "-" and len(word) > 1 and set(word[1:]) <= _UNAME_PLAIN):
            return
    inv.output(UNKNOWN_NAME + "\n", "the names `uname` prints")


#: a revision that is a name, a commit id or HEAD, with `~N`/`^N` after it (no `/`, no `:`)
_PLAIN_REVISION = re.compile(r"(?:HEAD|@|[A-Za-z0-9_][A-Za-z0-9_.-]*)(?:[~^][0-9]*)*(?:\^\{commit\})?")


def git_value_output(inv: Invocation) -> None:
    """``git rev-parse [--short[=N]] [--verify] [-q] REV``: a commit id (hexadecimal digits);
    ``git rev-list --count REV…``: a number.  Other options (``--abbrev-ref``, ``--show-…``)
    print other things: not known here."""
    words = inv.argv[1:]
    if not words:
        return
    sub, rest = words[0], words[1:]
    if _prints_ref_name(sub, rest):
        inv.output(REF_NAME + "\n", f"the ref name `git {sub}` prints")
        return
    if sub == "rev-parse":
        revisions = [word for word in rest if word[:1] != "-"]
        options = [word for word in rest if word[:1] == "-"]
        if len(revisions) == 1 and all(_PLAIN_REVISION.fullmatch(word) for word in revisions) and all(
                option in ("--verify", "-q", "--quiet", "--short") or re.fullmatch(r"--short=[0-9]+", option)
                for option in options):
            # (nothing outside a repository or for a revision that does not exist)
            inv.output(UNKNOWN_NAME_OR_EMPTY + "\n", "the commit id `git rev-parse` prints")
    elif sub == "rev-list" and "--count" in rest:
        revisions = [word for word in rest if word[:1] != "-"]
        if revisions and all(_PLAIN_REVISION.fullmatch(word.lstrip("^")) or re.fullmatch(
                r"[A-Za-z0-9_.@^~-]+\.\.\.?[A-Za-z0-9_.@^~-]+", word) for word in revisions) and all(
                word in ("--count", "--all", "--no-merges", "--merges", "--first-parent") for word in rest
                if word[:1] == "-"):
            inv.output(UNKNOWN_NAME_OR_EMPTY + "\n", "the number `git rev-list --count` prints")


#: ``git describe`` options that keep its output a ref name (a tag, ``-N-gHASH``, ``-dirty``)
_DESCRIBE_OPTIONS = re.compile(r"--(?:tags|all|always|long|first-parent|contains|exact-match|dirty(?:=[\w.-]+)?|"
                               r"abbrev=[0-9]+|candidates=[0-9]+|match=\S+|exclude=\S+)")


def _prints_ref_name(sub: str, rest: list[str]) -> bool:
    """Whether ``git SUB REST`` prints one ref name (git's rules: no ``..``, no component starting
    with ``.``, no glob character): ``rev-parse --abbrev-ref HEAD``, ``branch --show-current``,
    ``symbolic-ref --short HEAD``, ``describe [--tags|--always|…]``."""
    if sub not in ("rev-parse", "branch", "symbolic-ref", "describe"):
        return False
    options = [word for word in rest if word[:1] == "-"]
    revisions = [word for word in rest if word[:1] != "-"]
    if sub == "rev-parse":
        return bool(options) and any(word in ("--abbrev-ref", "--symbolic-full-name") for word in options) and \
            all(word in ("--abbrev-ref", "--symbolic-full-name", "--verify", "-q", "--quiet") for word in options) and \
            len(revisions) == 1 and _PLAIN_REVISION.fullmatch(revisions[0]) is not None
    if sub == "branch":
        return rest == ["--show-current"]
    if sub == "symbolic-ref":
        return revisions == ["HEAD"] and all(word in ("--short", "-q", "--quiet") for word in options)
    if sub == "describe":
        return len(revisions) <= 1 and all(_PLAIN_REVISION.fullmatch(word) for word in revisions) and \
            all(_DESCRIBE_OPTIONS.fullmatch(word) for word in options)
    return False


def wc_output(inv: Invocation) -> None:
    """``wc -l`` (``-c``, ``-w``, ``-m``, ``-L``) of its standard input, no file named: a number."""
    words = inv.argv[1:]
    if inv.stdin.text is None and len(words) == 1 and words[0] in ("-l", "-c", "-w", "-m", "-L", "--lines",
                                                                   "--bytes", "--words", "--chars"):
        inv.output(UNKNOWN_NUMBER + "\n", "the number `wc` prints")


def _after(name: str, extra: Model) -> None:
    """Register ``extra`` to run after the model ``name`` has (or the default one)."""
    previous = MODELS.get(name, default_model)

    def model(inv: Invocation) -> None:
        previous(inv)
        extra(inv)

    model.__doc__ = f"{previous.__doc__ or ''} (then {extra.__name__})"
    register(name, model)


_after("date", date_output)
_after("id", id_output)
_after("id", user_output)
_after("whoami", user_output)
_after("logname", user_output)
_after("hostname", user_output)
_after("nproc", nproc_output)
_after("pgrep", pgrep_output)
_after("getconf", getconf_output)
_after("uname", uname_output)
_after("git", git_value_output)
_after("wc", wc_output)
