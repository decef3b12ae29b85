"""Fan-out: ``xargs`` and ``parallel`` starting processes without a bound.

Their models (:mod:`.wrappers`, :mod:`.shellstate`) judge the command they run; this adds
what running it many times does (the policy's ``unknown-effects`` verdict, at least):

- an endless input (``yes | xargs …``, ``cat /dev/zero | parallel …``, marked by
  :mod:`.pipefill`): the command is started without end;
- no bound on the processes at once (``xargs -P 0``, ``parallel -j 0``, or more than
  :data:`MAX_JOBS`) over an input whose size is not known: as many processes as input items;
- a command that itself forks or fans out (a nested ``xargs -P``/``parallel``, shell code that
  puts commands in the background, a function calling itself) run more than one at a time.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, Unknown
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, parse_options, register
from stockade.analyzer.models.pipefill import ENDLESS

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from stockade.analyzer.models import Model
    from stockade.analyzer.walker import Walker

#: more processes at once than this is no bound (a policy's process limit is in the hundreds)
MAX_JOBS = 64
#: shell code that starts a command in the background or fans out again
_FORKS = re.compile(r"(?<![&>|])&(?![&>])|\b(xargs|parallel)\b|\$0\b|:\(\)|\bfork\b|\bnohup\b|\bsetsid\b")
_XARGS_VALUES = {"-I", "-a", "--arg-file", "-d", "--delimiter", "-E", "-L", "--max-lines", "-n", "--max-args",
                 "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"}
_PARALLEL_VALUES = {"-j", "--jobs", "-P", "--max-procs", "-S", "--sshlogin", "-a", "--arg-file", "-d",
                    "--delimiter", "-n", "--max-args", "-N", "-L", "--max-lines", "-I", "--joblog", "--results",
                    "--tmpdir", "--workdir", "--wd", "--halt", "--timeout", "--delay", "--memfree", "--load",
                    "--retries", "--tag-string", "--colsep", "-C", "--sep"}


def _jobs(value: str | None) -> int | None:
    """Processes at once for a ``-P``/``-j`` value (None: no bound or not known)."""
    if value is None:
        return None
    if UNKNOWN in value:
        return MAX_JOBS  # (`-P "$(nproc)"`: a count computed when it runs, taken as bounded)
    text = value.strip()
    if text.endswith("%"):
        number = text[:-1]
        return 1 if number.isdigit() and int(number) <= 400 else None  # (a share of the cores)
    if text[:1] in "+-":
        return 1 if text[1:].isdigit() and int(text[1:]) <= MAX_JOBS else None  # (cores plus or minus N)
    if not text.isdigit() or int(text) == 0:
        return None
    return int(text)


def _fan_out(inv: Invocation, values: set[str], job_options: tuple[str, ...]) -> None:
    parsed = parse_options(inv.argv, values, stop_at_first_positional=True,
                           optional=frozenset({"-i", "-l", "-e", "--replace", "--eof"}))
    jobs: int | None = 1
    for option, value, _ in parsed.options:
        if option in job_options:
            jobs = _jobs(value)
            if jobs is not None and jobs > MAX_JOBS:
                jobs = None
    command = [word for word, _ in parsed.positionals]
    finite = ":::" in command or "::::" in command or any(option in ("-a", "--arg-file")
                                                           for option, _, _ in parsed.options)
    shown = " ".join(word for word in command if word not in (":::", "::::"))[:60] or "echo"
    if inv.stdin.what.startswith(ENDLESS) and not finite:
        inv.unknown(f"`{inv.name}` runs `{shown}` once for each item of {inv.stdin.what[len(ENDLESS):]}'s endless "
                    "output: processes are started without end")
        return
    if jobs is not None and jobs <= 1:
        return
    text = inv.stdin.text
    if jobs is None and not finite and (text is None or UNKNOWN in text or "*" in text
                                                 or text.count("\n") > MAX_JOBS):
        inv.unknown(f"`{inv.name}` runs `{shown}` with no bound on the processes at once, one per input item "
                    "(an input whose size is not known): a fork bomb or resource exhaustion")
        return
    code = " ".join(command)
    if _FORKS.search(code):
        inv.unknown(f"`{inv.name}` runs `{shown}`, which starts more processes itself, several at a time: "
                    "the processes grow without a bound")


#: a command put in the background (``&`` not part of ``&&``, ``&>`` or ``>&``)
_BACKGROUND = re.compile(r"(?<![&>])&(?![&>])")
#: a brace sequence (``{1..100000}``)
_SEQUENCE = re.compile(r"\{(-?\d+)\.\.(-?\d+)(?:\.\.-?\d+)?\}")


def background_loop(walker: Walker, node: Any, body: Any) -> None:
    """A ``for`` loop whose body puts a command in the background, over more items than
    :data:`MAX_JOBS` or a list whose length is not known (``for i in $(seq 1 100000); do
    sleep 1 & done``): that many processes at once."""
    source = walker.src
    inside = source.node_text(body)
    if _BACKGROUND.search(inside) is None or "wait" in inside.split():
        return
    count = 0
    for index, child in enumerate(node.children):
        if node.field_name_for_child(index) != "value":
            continue
        text = source.node_text(child)
        if "$" in text or "`" in text:
            count = MAX_JOBS + 1  # (a substitution or a variable: how many is not known)
            break
        count += 1
        for match in _SEQUENCE.finditer(text):
            count += abs(int(match.group(2)) - int(match.group(1)))
    if count > MAX_JOBS:
        walker.effects.append(Unknown("a loop puts a command in the background for each of more items than "
                                      f"{MAX_JOBS} (or a number not known): that many processes at once",
                                      source.span(node)))


def _wrapping(name: str, values: set[str], job_options: tuple[str, ...]) -> Model:
    inner = MODELS[name]

    def model(inv: Invocation) -> None:
        inner(inv)
        _fan_out(inv, values, job_options)

    return model


register("xargs", _wrapping("xargs", _XARGS_VALUES, ("-P", "--max-procs")))
register("parallel", _wrapping("parallel", _PARALLEL_VALUES, ("-j", "--jobs", "-P", "--max-procs")))
