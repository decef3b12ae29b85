"""The run cache: compiled run plans keyed by policy and context, and analyzer verdicts.

``stockade run`` should cost almost nothing on top of the command, so the slow stages
(the Lark parser, the compiler, the backend, tree-sitter) are skipped when their output
is already known:

* a **plan** (:class:`RunPlan`) is everything the runtime needs to run under a policy: the
  sandbox prefix argv, the limits, the environment rules, the policy's name and hash, and
  the IR as its JSON-shaped dict (only turned into a ``PolicyIR`` when the analyzer must run).  Its key hashes the policy
  file's bytes (or ``builtin``), the context (workspace, home, tmpdir, platform, uid), the
  target and a fingerprint of stockade's own code (file sizes and mtimes).  An entry also
  records every source file the compile read with its SHA-256, and the environment
  variables the sources mention with their values; a hit is used only when all of them
  still match — an edited include is a miss, never a stale policy;
* a **verdict** is the analyzer's answer for (plan key, working directory, command text).
  The analyzer is a pure function of those, so a cached verdict is the same verdict.

Entries are :mod:`marshal` files in the cache directory (``$STOCKADE_CACHE_DIR``,
``$XDG_CACHE_HOME/stockade`` or ``~/.cache/stockade``; see :mod:`stockade.compiler.cache`),
written atomically.  A corrupt or unreadable entry is a miss.  This module imports nothing heavy.
"""

from __future__ import annotations

from stockade.compiler.cache import entry_key, entry_path, load_checked, read_entry, sha256, store_checked, write_entry
from stockade.compiler.environment import filter_environment, glob_match  # noqa: F401 (used by the runtime)

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping
    from typing import Any


def plan_key(policy: str | None, context: Mapping[str, str], target: str) -> str | None:
    """The cache key of a plan, or None when the policy file cannot be read (the context's
    ``search`` and ``usersite`` are checked against the plan instead:
    :func:`stockade.runtime.plan.inputs_covered`)."""
    return entry_key(policy, {k: v for k, v in context.items() if k != "search" and k != "usersite"},
                     f"plan:{target}")


def load_plan(key: str, environ: Mapping[str, str] | None = None, *,
              variables: Mapping[str, str] | None = None) -> dict | None:
    """A cached plan for ``key``, if every source file and variable it depends on is
    unchanged (``variables``: where the policy's variables come from, default ``environ``)."""
    return load_checked("plans", key, environ, variables=variables)


def store_plan(key: str, plan: Mapping[str, Any], sources: Mapping[str, str],
               environ: Mapping[str, str] | None = None, *, variables: Mapping[str, str] | None = None) -> dict:
    """Record a plan with the hashes of its sources and the variables they mention
    (``variables``: where their values come from, default ``environ``)."""
    return store_checked("plans", key, plan, sources, environ, variables=variables)


def verdict_key(plan_key_: str, cwd: str, command_text: str) -> str:
    """The cache key of an analyzer verdict."""
    return sha256(f"{plan_key_}\n{cwd}\n{command_text}".encode("utf-8", "surrogateescape")).hexdigest()


def load_verdict(key: str, environ: Mapping[str, str] | None = None) -> dict | None:
    """A cached verdict (``decision``, ``reasons``, ``detail``), or None (also when the
    entry is damaged: a field missing or of another type, a detail that is not JSON)."""
    data = read_entry(entry_path("verdicts", key, environ))
    if data is None or data.get("decision") not in ("allow", "confirm", "deny"):
        return None
    reasons, detail = data.get("reasons"), data.get("detail")
    if type(reasons) is not list or not all(type(r) is str for r in reasons) or type(detail) is not dict \
            or not _json(detail, 0):
        return None
    return data


def _json(value: Any, depth: int) -> bool:
    """Whether a value is JSON-shaped (str keys; str, int, float, bool, None, lists, dicts)."""
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return True
    if depth > 64:
        return False
    if kind is list:
        return all(_json(item, depth + 1) for item in value)
    if kind is dict:
        return all(type(k) is str and _json(v, depth + 1) for k, v in value.items())
    return False


def store_verdict(key: str, verdict: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> None:
    """Remember an analyzer verdict."""
    write_entry(entry_path("verdicts", key, environ), verdict)
