"""The environment rules' meaning, in one place for the compiler's decision API and the runtime.

``keep`` globs are an allow-list when any is present, ``drop`` globs remove names and beat
``keep``, ``set`` assigns.  This module imports nothing heavy: the runtime applies it on every run
from the cached plan's ``(action, name, value)`` triples, without loading the IR.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Iterable, Mapping, Sequence


def filter_environment(rules: Iterable[Sequence[Any]], environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a confined command sees (same semantics as the IR's
    ``filter_environment``: ``keep`` globs allow-list when present, ``drop`` globs beat
    ``keep``, ``set`` assigns), from ``(action, name, value)`` rules."""
    rules = list(rules)
    keep = [name for action, name, _ in rules if action == "keep"]
    drop = [name for action, name, _ in rules if action == "drop"]
    out: dict[str, str] = {}
    for name, value in environ.items():
        if keep and not any(glob_match(name, k) for k in keep):
            continue
        if any(glob_match(name, d) for d in drop):
            continue
        out[name] = value
    for action, name, value in rules:
        if action == "set":
            out[name] = value or ""
    return out


def glob_match(name: str, pattern: str) -> bool:
    """``fnmatch.fnmatchcase(name, pattern)``; patterns of only ``*`` and ``?`` wildcards
    (every environment rule so far) are matched without compiling a regular expression."""
    if "[" in pattern:
        from fnmatch import fnmatchcase

        return fnmatchcase(name, pattern)
    n = p = 0
    star = mark = -1
    while n < len(name):
        if p < len(pattern) and pattern[p] in ("?", name[n]) and pattern[p] != "*":
            n += 1
            p += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark = p, n
            p += 1
        elif star >= 0:
            mark += 1
            n, p = mark, star + 1
        else:
            return False
    return all(c == "*" for c in pattern[p:])
