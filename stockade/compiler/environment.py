"""The environment rules' meaning, in one place for the compiler's decision API and the runtime.

``keep`` globs are an allow-list when any is present, ``drop`` globs remove names and beat
``keep``, ``set`` assigns.  This module imports nothing heavy: the runtime applies it on every run
from the cached plan's ``(action, name, value)`` triples, without loading the IR.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any


def filter_environment(rules: Iterable[Sequence[Any]], environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a confined command sees (same semantics as the IR's
    ``filter_environment``: ``keep`` globs allow-list when present, ``drop`` globs beat
    ``keep``, ``set`` assigns), from ``(action, name, value)`` rules."""
    rules = list(rules)
    keep_names, keep = _matchers(name for action, name, _ in rules if action == "keep")
    drop_names, drop = _matchers(name for action, name, _ in rules if action == "drop")
    any_keep = bool(keep_names or keep)
    out: dict[str, str] = {}
    for name, value in environ.items():
        if any_keep and name not in keep_names and not any(match(name) for match in keep):
            continue
        if name in drop_names or any(match(name) for match in drop):
            continue
        out[name] = value
    for action, name, value in rules:
        if action == "set":
            out[name] = value or ""
    return out


def _matchers(patterns: Iterable[str]) -> tuple[set[str], list[Callable[[str], bool]]]:
    """Exact names as a set, and a matcher for each other pattern."""
    names: set[str] = set()
    others = []
    for pattern in patterns:
        if "*" in pattern or "?" in pattern or "[" in pattern:
            others.append(name_matcher(pattern))
        else:
            names.add(pattern)
    return names, others


def name_matcher(pattern: str) -> Callable[[str], bool]:
    """A predicate equal to ``glob_match(name, pattern)``, specialised for the common
    shapes (``NAME``, ``PREFIX*``, ``*SUFFIX``, ``*PART*``) — the runtime filters every
    variable of the parent's environment through every rule on each run."""
    if "[" not in pattern and "?" not in pattern:
        stars = pattern.count("*")
        inner = pattern.strip("*")
        if stars == 0:
            return pattern.__eq__
        if "*" not in inner:
            if pattern == "*" * len(pattern):
                return lambda name: True
            if stars == 1 and pattern.endswith("*"):
                return lambda name: name.startswith(inner)
            if stars == 1 and pattern.startswith("*"):
                return lambda name: name.endswith(inner)
            if stars == 2 and pattern.startswith("*") and pattern.endswith("*"):
                return lambda name: inner in name
    return lambda name: glob_match(name, pattern)


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
