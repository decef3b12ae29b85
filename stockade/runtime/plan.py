"""A run plan: the compiled facts a confined run needs, as a dict of plain values (cacheable).

:func:`build_plan` turns an IR and its sandbox artifact into a plain dict: the prefix argv
(environment options removed — the runtime hands the filtered environment to the sandbox
tool directly, so no variable value is ever in the argv or the audit trail), the
placeholders bubblewrap creates on the host, the limits, the environment rules, the
policy's name and hash, the IR as JSON (packed: see :func:`plan_ir_json`), and the **path facts**: the kind (missing, dir,
file, symlink, other) of every absolute path the argv names.  :func:`facts_hold` checks
those facts again before a cached plan is used: a path that appeared, vanished or changed
kind since the compile makes the plan stale (recompiled), so a cached argv never mounts
differently from a fresh one for the paths it names.

Glob rules (bwrap): the plan keeps the argv without the matches under the workspace and
the writable roots (``glob_scan`` names the globs and those roots); every run scans them
and gets the argv of the current matches (:mod:`stockade.runtime.globscan`), so a
``.env`` written after the compile, or inside ``node_modules``, is masked by the next run.
Known limit: matches elsewhere (the home directory outside those roots) are those that
existed when the plan was compiled (``glob_static``); one created there later is protected
by the analyzer only until the plan is compiled again (``stockade run --no-cache``).
"""

from __future__ import annotations

import marshal
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
        # the parts a cached run does not read are packed, so that loading a plan copies
        # their bytes instead of building their objects (the IR only matters when the
        # analyzer runs, on a verdict-cache miss)
        "warnings": marshal.dumps([w.to_json() for w in artifact.warnings]),
        "ir": marshal.dumps(ir.to_json()),
        # globs whose matches are decided at each run's start (stockade.runtime.globscan)
        "glob_scan": data.get("glob_scan") if backend == "bwrap" else None,
        "glob_static": list((data.get("glob_scan") or {}).get("static", ())) if backend == "bwrap" else [],
    }


def plan_ir_json(plan: Mapping[str, Any]) -> Any:
    """The IR of a plan, as the JSON-shaped value ``PolicyIR.from_json`` takes."""
    return marshal.loads(plan["ir"])


#: The origin of the rules :func:`protect_state` adds.
STATE_RULE_FILE = "<stockade runtime state>"


def protect_state(ir: Any, paths: Sequence[str]) -> Any:
    """The IR with a ``readonly`` rule for each of stockade's own state paths (the cache
    directory, the audit file) that the policy would let the sandbox write.

    A sandboxed command must not be able to change what the next run trusts: a cached
    plan or verdict (a weaker sandbox, a denied command allowed) or the audit trail.  The
    rule is added only where the policy grants write (never turning a denied path into a
    readable one); the backend then mounts the path read-only and pins the directories
    between it and the writable mount above it, so it can be neither written nor renamed
    away.  Paths that do not exist are skipped (the runtime creates them first).
    """
    from dataclasses import replace

    from stockade.compiler.ir import FsRule, Origin

    extra = []
    for path in paths:
        if not path or not os.path.isabs(path) or not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        if ir.path_access(real).can_write:
            extra.append(FsRule("readonly", real, source_text=f"readonly {real}",
                                origin=Origin(STATE_RULE_FILE, 1, 1, layer=max((l.index for l in ir.layers), default=0))))
    return replace(ir, filesystem=ir.filesystem + tuple(extra)) if extra else ir


def prepare_state(directories: Sequence[str] = (), files: Sequence[str] = ()) -> list[str]:
    """Create stockade's state directories and files (empty) so that they can be protected;
    the absolute paths of those that exist afterwards."""
    out = []
    for path, is_file in [*((d, False) for d in directories), *((f, True) for f in files)]:
        try:
            if is_file:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600))
            else:
                os.makedirs(path, exist_ok=True)
        except OSError:
            pass
        if os.path.lexists(path):
            out.append(os.path.abspath(path))
    return out


def remove_placeholders(placeholders: Sequence[str]) -> None:
    """Remove the placeholder directories bwrap left on the host, if they are still empty
    (deepest first)."""
    for path in sorted(placeholders, key=len, reverse=True):
        try:
            os.rmdir(path)
        except OSError:
            pass
