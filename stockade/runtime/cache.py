"""The run cache: compiled run plans keyed by policy and context, and analyzer verdicts.

``stockade run`` should cost almost nothing on top of the command, so the slow stages
(the Lark parser, the compiler, the backend, tree-sitter) are skipped when their output
is already known:

* a **plan** (:class:`RunPlan`) is everything the runtime needs to run under a policy: the
  sandbox prefix argv, the limits, the environment rules, the policy's name and hash, and
  the IR as JSON (only decoded when the analyzer must run).  Its key hashes the policy
  file's bytes (or ``builtin``), the context (workspace, home, tmpdir, platform, uid), the
  target and a fingerprint of stockade's own code (file sizes and mtimes).  An entry also
  records every source file the compile read with its SHA-256, and the environment
  variables the sources mention with their values; a hit is used only when all of them
  still match — an edited include is a miss, never a stale policy;
* a **verdict** is the analyzer's answer for (plan key, working directory, command text).
  The analyzer is a pure function of those, so a cached verdict is the same verdict.

Entries are JSON files in the cache directory (``$STOCKADE_CACHE_DIR``,
``$XDG_CACHE_HOME/stockade`` or ``~/.cache/stockade``), written atomically.  A corrupt or
unreadable entry is a miss.  This module imports nothing heavy.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from fnmatch import fnmatchcase
from typing import Any, Mapping, Sequence

from stockade.runtime.sandbox import cache_dir

CACHE_VERSION = "1"
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_fingerprint: str | None = None


def code_fingerprint() -> str:
    """A hash of the sizes and mtimes of the stockade modules whose output is cached."""
    global _fingerprint
    if _fingerprint is None:
        import stockade

        root = os.path.dirname(os.path.abspath(stockade.__file__))
        digest = hashlib.sha256(getattr(stockade, "__version__", "").encode())
        for sub in ("compiler", "backends", "analyzer", "policy_lang"):
            stack = [os.path.join(root, sub)]
            while stack:
                try:
                    entries = sorted(os.scandir(stack.pop()), key=lambda e: e.name)
                except OSError:
                    continue
                for entry in entries:
                    if entry.is_dir() and entry.name != "__pycache__":
                        stack.append(entry.path)
                    elif not entry.name.endswith(".pyc"):
                        st = entry.stat()
                        digest.update(f"{entry.path}|{st.st_size}|{st.st_mtime_ns}\n".encode())
        _fingerprint = digest.hexdigest()
    return _fingerprint


def file_sha256(path: str) -> str | None:
    """The SHA-256 of a file's bytes, or None if it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def plan_key(policy: str | None, context: Mapping[str, str], target: str) -> str | None:
    """The cache key of a plan, or None when the policy file cannot be read."""
    if policy is None:
        source = "builtin"
    else:
        digest = file_sha256(policy)
        if digest is None:
            return None
        source = f"{os.path.abspath(policy)}|{digest}"
    parts = [CACHE_VERSION, code_fingerprint(), source, target, str(os.getuid()),
             *(f"{k}={context[k]}" for k in sorted(context))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def referenced_variables(sources: Mapping[str, str]) -> list[str]:
    """The ``$NAME`` / ``${NAME}`` variables mentioned in policy sources."""
    names: set[str] = set()
    for text in sources.values():
        names.update(_VAR.findall(text))
    return sorted(names)


def filter_environment(rules: Sequence[Sequence[Any]], environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a confined command sees (same semantics as the IR's
    ``filter_environment``: ``keep`` globs allow-list when present, ``drop`` globs beat
    ``keep``, ``set`` assigns), from ``(action, name, value)`` rules."""
    keep = [name for action, name, _ in rules if action == "keep"]
    drop = [name for action, name, _ in rules if action == "drop"]
    out: dict[str, str] = {}
    for name, value in environ.items():
        if keep and not any(fnmatchcase(name, k) for k in keep):
            continue
        if any(fnmatchcase(name, d) for d in drop):
            continue
        out[name] = value
    for action, name, value in rules:
        if action == "set":
            out[name] = value or ""
    return out


def _path(kind: str, key: str, environ: Mapping[str, str] | None) -> str:
    return os.path.join(cache_dir(environ), kind, key[:2], key + ".json")


def _read(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write(path: str, data: Mapping[str, Any]) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError:
        pass  # a cache that cannot be written is only slower


def load_plan(key: str, environ: Mapping[str, str] | None = None, *,
              variables: Mapping[str, str] | None = None) -> dict | None:
    """A cached plan for ``key``, if every source file and variable it depends on is
    unchanged (``variables``: where the policy's variables come from, default ``environ``)."""
    env = variables if variables is not None else os.environ if environ is None else environ
    data = _read(_path("plans", key, environ))
    if data is None or data.get("version") != CACHE_VERSION:
        return None
    for path, digest in data.get("sources", {}).items():
        if file_sha256(path) != digest:
            return None
    for name, value in data.get("variables", {}).items():
        if env.get(name) != value:
            return None
    return data


def store_plan(key: str, plan: Mapping[str, Any], sources: Mapping[str, str],
               environ: Mapping[str, str] | None = None, *, variables: Mapping[str, str] | None = None) -> dict:
    """Record a plan with the hashes of its sources and the variables they mention
    (``variables``: where their values come from, default ``environ``)."""
    env = variables if variables is not None else os.environ if environ is None else environ
    data = dict(plan)
    data["version"] = CACHE_VERSION
    data["sources"] = {p: file_sha256(p) for p in sources if os.path.isfile(p)}
    data["variables"] = {name: env.get(name) for name in referenced_variables(sources)}
    _write(_path("plans", key, environ), data)
    return data


def verdict_key(plan_key_: str, cwd: str, command_text: str) -> str:
    """The cache key of an analyzer verdict."""
    return hashlib.sha256(f"{plan_key_}\n{cwd}\n{command_text}".encode()).hexdigest()


def load_verdict(key: str, environ: Mapping[str, str] | None = None) -> dict | None:
    """A cached verdict (``decision``, ``reasons``, ``detail``), or None."""
    data = _read(_path("verdicts", key, environ))
    if data is None or data.get("decision") not in ("allow", "confirm", "deny"):
        return None
    return data


def store_verdict(key: str, verdict: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> None:
    """Remember an analyzer verdict."""
    _write(_path("verdicts", key, environ), verdict)
