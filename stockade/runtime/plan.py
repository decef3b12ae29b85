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
import sys

from stockade import catalogue as codes

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping, Sequence
    from typing import Any, TypeGuard

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


def facts_hold(facts: Mapping[str, str], placeholders: Sequence[str] = (),
               files: Mapping[str, str] | None = None) -> bool:
    """Whether every recorded path still has the recorded kind.

    A placeholder recorded missing that is now an empty directory (or, for a file
    placeholder of ``files``, a file with its content) still holds: it is another run's
    mount point (see :mod:`stockade.runtime.runlock`), over which this plan's argv mounts
    exactly as over nothing."""
    files = files or {}
    for path, kind in facts.items():
        now = path_kind(path)
        if now == kind or (kind == "missing" and path in placeholders and (
                _holds(path, files[path]) if path in files else now == "dir" and _empty_dir(path))):
            continue
        return False
    return True


def _holds(path: str, content: str) -> bool:
    """Whether ``path`` is a regular file (not a link) holding exactly ``content``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(content) + 2) == content.encode()
    finally:
        os.close(fd)


def _empty_dir(path: str) -> bool:
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


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
        "placeholder_files": dict(data.get("placeholder_files", {})),
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
        # the run's network broker (stockade.runtime.broker): None, or the ports it serves
        "broker": _broker_plan(ir, data.get("broker")) if backend in ("bwrap", "seatbelt") else None,
    }


def _broker_plan(ir: Any, broker: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The broker's part of a plan: the ports it serves, and the policy's decision for each
    ``host-loopback`` port (``decided``: ``[port, allowed, reason, rule, file:line]``) — a
    pure function of the IR, so that a connection to such a port is judged without loading
    the policy (:class:`stockade.runtime.broker.Broker`)."""
    if broker is None:
        return None
    from stockade.runtime.broker import HOST_LOOPBACK, Judge

    judge = Judge(ir)
    decided = []
    for port in broker.get("loopback", ()):
        decision = judge.judge(HOST_LOOPBACK, port)
        decided.append([port, decision.allowed, decision.reason, decision.rule, decision.where])
    return {**broker, "decided": decided}


#: The kinds :func:`path_kind` answers.
_KINDS = frozenset({"missing", "dir", "file", "symlink", "other"})
#: The limits that are counts of bytes or processes (the others are seconds).
_INT_LIMITS = frozenset({"memory", "processes", "output", "file_size", "disk"})
_LIMIT_NAMES = frozenset({"timeout", "cpu", "cpus", *_INT_LIMITS})


def _strs(value: Any) -> TypeGuard[list[str]]:
    return type(value) is list and all(type(word) is str for word in value)


def _str_map(value: Any, values: Any = (str,)) -> TypeGuard[dict[str, Any]]:
    return type(value) is dict and all(type(k) is str and type(v) in values for k, v in value.items())


def _limit(name: str, value: Any) -> bool:
    if value is None:
        return True
    if type(value) is int:
        return value >= 0
    return type(value) is float and name not in _INT_LIMITS and 0 <= value < 1e12  # not nan, not inf


def _env_rule(rule: Any) -> bool:
    return (type(rule) in (list, tuple) and len(rule) == 3 and rule[0] in ("keep", "drop", "set")
            and type(rule[1]) is str and (rule[2] is None or type(rule[2]) is str))


def plan_problem(plan: Any) -> str | None:
    """The first field of a loaded plan whose shape or type is not what :func:`build_plan`
    makes (a damaged cache entry, used as a miss), or None.  Every field a run reads is
    checked: the run then never meets a value of the wrong type."""
    if type(plan) is not dict:
        return "plan"
    get = plan.get
    backend = get("backend")
    if backend not in ("bwrap", "seatbelt"):
        return "backend"
    argv = get("argv")
    if not _strs(argv) or (backend == "bwrap" and not argv):
        return "argv"
    for name in ("policy", "policy_hash", "profile", "bwrap", "bwrap_writable"):
        value = get(name, 0)  # missing: not None, not a str
        if value is not None and type(value) is not str:
            return name
    if not _str_map(get("params")):
        return "params"
    placeholders = get("placeholders")
    if not _strs(placeholders) or not all(path.startswith("/") for path in placeholders):
        return "placeholders"
    if type(get("machine")) is not str:
        return "machine"
    if not _str_map(get("seccomp"), (bytes,)):
        return "seccomp"
    facts = get("facts")
    if not _str_map(facts) or not _KINDS.issuperset(facts.values()):
        return "facts"
    limits = get("limits")
    if type(limits) is not dict or not all(name in _LIMIT_NAMES and _limit(name, value)
                                           for name, value in limits.items()):
        return "limits"
    rules = get("env_rules")
    if type(rules) is not list or not all(_env_rule(rule) for rule in rules):
        return "env_rules"
    if not _str_map(get("placeholder_files")):
        return "placeholder_files"
    broker = get("broker", 0)  # missing (a plan from before the broker): not None, not a dict
    if broker is not None and not (type(broker) is dict and all(
            type(broker.get(key, [])) is list and all(type(p) is int and 0 < p < 65536 for p in broker.get(key, []))
            for key in ("loopback", "ports")) and "loopback" in broker):
        return "broker"
    if broker is not None and not (type(broker.get("decided", [])) is list and all(
            type(entry) is list and len(entry) == 5 and type(entry[0]) is int and type(entry[1]) is bool
            and all(type(text) is str for text in entry[2:]) for entry in broker.get("decided", []))):
        return "broker"
    if not _strs(get("searched")):
        return "searched"
    for name in ("warnings", "ir"):
        if type(get(name)) is not bytes:
            return name
    return _glob_problem(plan)


def _glob_problem(plan: dict) -> str | None:
    """The first damaged field of a plan's run-time glob part (stockade.runtime.globscan)."""
    get = plan.get
    scan = get("glob_scan")
    if scan is not None and (type(scan) is not dict
                             or not all(_strs(scan.get(k)) for k in ("patterns", "rules", "roots"))
                             or not all(root.startswith("/") for root in scan["roots"])):
        return "glob_scan"
    if not _strs(get("glob_static", [])):
        return "glob_static"
    return None


def plan_ir_json(plan: Mapping[str, Any]) -> Any:
    """The IR of a plan, as the JSON-shaped value ``PolicyIR.from_json`` takes."""
    return marshal.loads(plan["ir"])


#: The origin of the rules :func:`protect_state` adds.
STATE_RULE_FILE = "<stockade runtime state>"


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def protect_state(ir: Any, paths: Sequence[str], missing: Sequence[str] = ()) -> Any:
    """The IR with a ``readonly`` rule for each of stockade's own state paths (the cache
    directory, the audit file) and trusted inputs (see :func:`protect_inputs`) that the
    policy would let the sandbox write.

    A sandboxed command must not be able to change what the next run trusts: a cached
    plan or verdict (a weaker sandbox, a denied command allowed), the audit trail, the
    policy, stockade's own code.  The rule is added only where the policy grants write
    (never turning a denied path into a readable one); the backend then mounts the path
    read-only and pins the directories between it and the writable mount above it, so it
    can be neither written nor renamed away.  A literal ``write`` rule deeper inside a
    protected path (more specific, so it would win) gets a ``readonly`` rule too.  Paths
    that do not exist are skipped (the runtime creates the state paths first), except
    those in ``missing``: the backend mounts an empty read-only placeholder on the first
    missing component, so that the sandbox cannot create them.
    """
    from dataclasses import replace

    from stockade.compiler.ir import FsRule, Origin

    layer = max((each.index for each in ir.layers), default=0)
    extra: list[Any] = []
    seen: set[str] = set()

    def add(real: str) -> None:
        if real not in seen:
            seen.add(real)
            extra.append(FsRule("readonly", real, source_text=f"readonly {real}",
                                origin=Origin(STATE_RULE_FILE, 1, 1, layer=layer)))

    keep_missing = set(missing)
    workspace = getattr(getattr(ir, "context", None), "workspace", None) or "\0"
    for path in [*paths, *missing]:
        if not path or not os.path.isabs(path) or (path not in keep_missing and not os.path.lexists(path)):
            continue
        real = os.path.realpath(path)
        if real in seen:
            continue
        if ir.path_access(real).can_write:
            add(real)
        for rule in ir.filesystem:  # a deeper grant would beat the rule above
            if (rule.access == "write" and not rule.is_glob and rule.pattern != real and _within(rule.pattern, real)
                    and not _within(workspace, rule.pattern)):  # never the workspace itself
                add(rule.pattern)
    return replace(ir, filesystem=ir.filesystem + tuple(extra)) if extra else ir


def input_context() -> dict[str, str]:
    """The context entries that name what the next start of stockade runs, each
    newline-separated: ``inputs`` (part of the plan's cache key: a plan is for one
    interpreter and one copy of stockade) — the ``stockade`` package directory, the
    interpreter's prefixes and executable; ``search`` — the launcher (``sys.argv[0]`` when
    it is a ``stockade`` script), every absolute entry of the module path (site-packages,
    where the ``.pth`` files are; the launcher's directory) and the user site directory
    when it is enabled (also in ``usersite``).  ``search`` varies with ``-S``,
    ``PYTHONPATH`` and the like, so it is not part of the key: a cached plan is used only
    when it covered every entry (:func:`inputs_covered`).  Cheap: strings only, no system
    call.

    ``sys.path[0]`` of ``python -m stockade`` / ``-c`` (the current directory, unless
    ``-P``) is left out: protecting it would make the directory stockade was started from
    read-only.
    """
    import stockade

    argv0 = sys.argv[0] if sys.argv else ""
    launcher = os.path.basename(argv0) == "stockade"
    inputs = [os.path.dirname(os.path.abspath(stockade.__file__)), sys.prefix, sys.exec_prefix, sys.base_prefix,
              sys.base_exec_prefix, sys.executable]
    search = [os.path.abspath(argv0)] if launcher else []
    path = sys.path
    if path and not launcher and not sys.flags.safe_path and (argv0 in ("", "-c") or argv0.endswith("__main__.py")):
        path = path[1:]
    search += [entry for entry in path if entry.startswith("/")]
    site = sys.modules.get("site")
    usersite = getattr(site, "USER_SITE", None) if getattr(site, "ENABLE_USER_SITE", False) else None
    if usersite:
        search.append(usersite)
    return {"inputs": "\n".join(dict.fromkeys(p for p in inputs if p)), "search": "\n".join(dict.fromkeys(search)),
            "usersite": usersite or ""}


def inputs_covered(plan: Mapping[str, Any], ctx: Mapping[str, str]) -> bool:
    """Whether a cached plan was compiled with every entry of ``ctx["search"]`` protected."""
    searched = plan.get("searched")
    if not isinstance(searched, list):
        return False
    covered = set(searched)
    return all(entry in covered for entry in ctx.get("search", "").split("\n") if entry)


def protect_inputs(ir: Any, ctx: Mapping[str, str], sources: Sequence[str] = ()) -> tuple[Any, dict[str, Any]]:
    """The IR with stockade's state (``ctx["state"]``), the policy's source files
    (``sources``, as the compile result names them), stockade's installation
    (``ctx["inputs"]``, ``ctx["search"]``, ``ctx["usersite"]``: :func:`input_context`) protected by
    :func:`protect_state`, and the plan entries about the bubblewrap binary ``ctx["bwrap"]``:
    ``bwrap`` (its path) and ``bwrap_writable`` (the first of it and its parent directories
    that the policy lets the sandbox write, or None: the runtime refuses to use it then),
    and ``searched`` (for :func:`inputs_covered`).  Raises R513 when one of the paths is
    reached through a symlink the sandbox could replace (:func:`replaceable_link`).

    An installation path that is the workspace or one of its ancestors is not protected
    (the workspace would become read-only); the launcher, the package and the interpreter
    never are that.
    """
    workspace = ctx.get("workspace", "")
    paths = [path for path in ctx.get("state", "").split("\n") if path]
    paths += [os.path.abspath(path) for path in sources if path and not path.startswith("<")]
    usersite = ctx.get("usersite", "")
    searched = [entry for entry in ctx.get("search", "").split("\n") if entry]
    for path in [*ctx.get("inputs", "").split("\n"), *searched]:
        if (path and path != usersite and os.path.isabs(path)
                and not (workspace and _within(workspace, os.path.realpath(path)))):
            paths.append(path)
    bwrap = ctx.get("bwrap") or None
    facts: dict[str, Any] = {"bwrap": bwrap, "bwrap_writable": None, "searched": searched}
    if bwrap:
        from stockade.runtime.sandbox import sandbox_writable

        facts["bwrap_writable"] = sandbox_writable(ir, bwrap)
    protected = protect_state(ir, paths, [usersite] if usersite else [])
    for path in paths:
        link = replaceable_link(protected, path)
        if link is not None:
            from stockade.diagnostics import Diagnostic, StockadeError

            raise StockadeError(Diagnostic(
                codes.SYMLINK_INPUT_UNTRUSTED,
                f"`{path}` is reached through the symlink `{link}`, which the sandbox could replace "
                        f"(the policy lets it write `{os.path.dirname(link)}`); refusing to trust it",
                help=f"name it by its real path `{os.path.realpath(path)}`, or move the symlink out of "
                     "the writable paths"))
    return protected, facts


def replaceable_link(ir: Any, path: str) -> str | None:
    """The first symlink on the way to ``path`` (itself included) that sits in a directory
    the policy of ``ir`` lets the sandbox write, or None.  A mount cannot protect a symlink
    (it lands on the target), so the sandbox could point such a name elsewhere for the next
    run."""
    current = "/"
    for part in os.path.abspath(path).split("/"):
        if not part:
            continue
        current = os.path.join(current, part)
        try:
            is_link = stat.S_ISLNK(os.lstat(current).st_mode)
        except OSError:
            return None
        if is_link:
            if ir.path_access(os.path.realpath(os.path.dirname(current))).can_write:
                return current
            current = os.path.realpath(current)
    return None


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


def create_placeholder_files(files: Mapping[str, str]) -> None:
    """Create the file placeholders of a plan (path → content) that do not exist, with
    their content, before bubblewrap mounts over them: the host then sees what git assumes
    of a missing file (``commondir`` = ``.``) rather than the empty file bubblewrap would
    create, so host git keeps working while the run lasts.  The parents are walked without
    following a symlink.  Best effort: bubblewrap creates what is left."""
    from stockade.runtime.runlock import parent_nofollow

    for path, content in files.items():
        found = parent_nofollow(path)
        if found is None:
            continue
        fd, name = found
        try:
            handle = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                             dir_fd=fd)
            try:
                os.write(handle, content.encode())
            finally:
                os.close(handle)
        except OSError:
            pass
        finally:
            os.close(fd)


def remove_placeholders(placeholders: Sequence[str], files: Mapping[str, str] | None = None) -> None:
    """Remove the placeholders bwrap left on the host (deepest first), never following a
    symlink on the way: directories if they are still empty; files (``files``: path →
    content) if they are regular and hold their placeholder content or nothing.  Only safe
    when no other run may be using them: a run releases its
    :class:`~stockade.runtime.runlock.RunLock` instead, which removes them when it is the
    last run out."""
    from stockade.runtime.runlock import remove_placeholder_paths

    remove_placeholder_paths(placeholders, files or {})
