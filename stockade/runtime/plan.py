"""A run plan: the compiled facts a confined run needs, as a dict of plain values (cacheable).

:func:`build_plan` turns an IR and its sandbox artifact into a plain dict: the prefix argv
(environment options removed — the runtime hands the filtered environment to the sandbox
tool directly, so no variable value is ever in the argv or the audit trail), the
placeholders bubblewrap creates on the host, the limits, the environment rules, the
policy's name and hash, the IR as JSON, and the **path facts**: the kind (missing, dir,
file, symlink, other) of every absolute path the argv names.  :func:`facts_hold` checks
those facts again before a cached plan is used: a path that appeared, vanished or changed
kind since the compile makes the plan stale (recompiled), so a cached argv never mounts
differently from a fresh one for the paths it names.

Known limit (the bwrap backend's, not the cache's): glob rules are expanded to the
matches that exist when the plan is compiled; a file created later that matches a glob is
protected by the analyzer only.  ``stockade run --no-cache`` forces a fresh compile.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Mapping, Sequence

#: bwrap options that carry environment, with their argument counts.
_ENV_OPTIONS = {"--clearenv": 0, "--setenv": 2, "--unsetenv": 1}


def strip_environment(argv: Sequence[str]) -> list[str]:
    """The argv without ``--clearenv``/``--setenv``/``--unsetenv`` (before ``--``)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            out.extend(argv[i:])
            break
        if word in _ENV_OPTIONS:
            i += 1 + _ENV_OPTIONS[word]
            continue
        out.append(word)
        i += 1
    return out


def path_kind(path: str) -> str:
    """``missing``, ``dir``, ``file``, ``symlink`` or ``other`` (not following symlinks)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "missing"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


def path_facts(argv: Sequence[str], extra: Sequence[str] = ()) -> dict[str, str]:
    """The kind of every absolute path named in the argv (and ``extra``)."""
    paths = {word for word in argv[1:] if word.startswith("/")}
    paths.update(extra)
    return {path: path_kind(path) for path in sorted(paths)}


def facts_hold(facts: Mapping[str, str]) -> bool:
    """Whether every recorded path still has the recorded kind."""
    return all(path_kind(path) == kind for path, kind in facts.items())


def build_plan(ir: Any, artifact: Any, backend: str, limits_json: Mapping[str, Any]) -> dict[str, Any]:
    """The plan for an IR and its artifact (``bwrap`` argv or ``seatbelt`` profile)."""
    data = artifact.data if isinstance(artifact.data, dict) else {}
    placeholders = list(data.get("placeholders", ()))
    programs: dict[str, bytes] = {}
    if backend == "bwrap":
        from stockade.runtime.sandbox import checked_seccomp_programs

        argv = strip_environment(data.get("argv") or [])
        facts = path_facts(argv)  # placeholders are missing here; runs remove them again
        programs = checked_seccomp_programs(argv)
    else:
        argv = []
        facts = {}
    return {
        "policy": ir.name,
        "policy_hash": ir.source_hash,
        "backend": backend,
        "argv": argv,
        "profile": artifact.text if backend == "seatbelt" else None,
        "params": data.get("params", {}) if backend == "seatbelt" else {},
        "placeholders": placeholders,
        "machine": os.uname().machine,
        "seccomp": programs,
        "facts": facts,
        "limits": dict(limits_json),
        "env_rules": [[r.action, r.name, r.value] for r in ir.environment],
        "warnings": [w.to_json() for w in artifact.warnings],
        "ir": ir.to_json(),
    }


def remove_placeholders(placeholders: Sequence[str]) -> None:
    """Remove the placeholder directories bwrap left on the host, if they are still empty
    (deepest first)."""
    for path in sorted(placeholders, key=len, reverse=True):
        try:
            os.rmdir(path)
        except OSError:
            pass
