"""The compiled-policy cache shared by ``stockade analyze`` and ``stockade run``.

Compiling a policy loads the Lark grammar and runs the compiler: tens of milliseconds that a
process started once per agent command should not pay every time.  An entry is keyed by the
policy file's path and bytes (or ``builtin``), the compile context, the user, a purpose tag
and a fingerprint of stockade's own code; it records the SHA-256 of **every** file the
compile read (includes too) and the value of every environment variable the sources
mention.  An entry is used only while all of them still match: an edited include, a changed
variable or an upgraded stockade is a miss, never a stale policy.

Entries are files under the cache directory (``$STOCKADE_CACHE_DIR``,
``$XDG_CACHE_HOME/stockade`` or ``~/.cache/stockade``) holding one dict of plain values
(str, int, float, bool, None, bytes, lists, dicts) in :mod:`marshal` format, written
atomically; a corrupt or unreadable entry is a miss and an unwritable cache is only slower.
Marshal rather than JSON because this module is on the path of every cached ``stockade
run``: :mod:`marshal` is built into the interpreter and several times faster, while
importing :mod:`json` imports and compiles regular expressions (milliseconds per start).
Its format depends on the Python version, which is part of every key.  Only stockade
reads and writes these files; a sandboxed command cannot reach them (the runtime mounts
the cache directory read-only inside every sandbox).  SHA-256 comes from the small built-in
``_sha256`` module when there is one, rather than ``hashlib``, which loads OpenSSL; regular
expressions are compiled on first use.
"""

from __future__ import annotations

import marshal
import os
import sys

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Mapping
    from typing import Any, TypeGuard

try:
    from _sha256 import sha256 as sha256  # (re-exported: the runtime hashes with it too)
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import sha256 as sha256

CACHE_VERSION = "4"
_VARIABLE_PATTERN = r"\$\{?([A-Za-z_][A-Za-z0-9_]*)"
_variable_findall: Callable[[str], list[str]] | None = None
_fingerprint: str | None = None


def cache_dir(environ: Mapping[str, str] | None = None) -> str:
    """Stockade's cache directory (``$STOCKADE_CACHE_DIR``, ``$XDG_CACHE_HOME/stockade``,
    or ``~/.cache/stockade``)."""
    env = os.environ if environ is None else environ
    explicit = env.get("STOCKADE_CACHE_DIR")
    if explicit:
        return explicit
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "stockade")


def code_fingerprint() -> str:
    """A hash of the stockade modules whose output is cached (a changed module is a miss).

    In a source checkout (and an editable install) every module's name, size and mtime
    count, so an edit in place is seen.  In an installed copy (under ``site-packages`` or
    ``dist-packages``) the installation's ``RECORD`` file counts (its size and mtime: every
    install or upgrade rewrites it, and it lists the hash of every file installed), or
    without one the directories' mtimes: installers replace files rather than rewrite them,
    which changes the directory.  Either saves a ``stat`` per module on every ``stockade run``.
    """
    global _fingerprint
    if _fingerprint is None:
        import stockade

        root = os.path.dirname(os.path.abspath(stockade.__file__))
        installed = os.path.basename(os.path.dirname(root)) in ("site-packages", "dist-packages")
        version = getattr(stockade, "__version__", "")
        lines = [version, root]
        if installed:
            record = os.path.join(os.path.dirname(root), f"stockade-{version}.dist-info", "RECORD")
            try:
                st = os.stat(record)
            except OSError:
                pass
            else:
                _fingerprint = sha256(f"{version}\n{root}\n{record}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
                return _fingerprint
        for sub in ("compiler", "backends", "analyzer", "policy_lang"):
            stack = [os.path.join(root, sub)]
            while stack:
                directory = stack.pop()
                try:
                    entries = sorted((e.name, e) for e in os.scandir(directory))
                    if installed:
                        lines.append(f"{directory}|{os.stat(directory).st_mtime_ns}")
                except OSError:
                    continue
                for name, entry in entries:
                    if name == "__pycache__" or name.endswith(".pyc"):
                        continue  # written by Python itself as modules are first imported
                    if entry.is_dir():
                        stack.append(entry.path)
                    elif not installed:
                        st = entry.stat()
                        lines.append(f"{entry.path}|{st.st_size}|{st.st_mtime_ns}")
        _fingerprint = sha256("\n".join(lines).encode()).hexdigest()
    return _fingerprint


def file_sha256(path: str) -> str | None:
    """The SHA-256 of a file's bytes, or None if it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return sha256(handle.read()).hexdigest()
    except OSError:
        return None


def referenced_variables(sources: Mapping[str, str]) -> list[str]:
    """The ``$NAME`` / ``${NAME}`` variables mentioned in policy sources."""
    global _variable_findall
    if _variable_findall is None:
        import re

        _variable_findall = re.compile(_VARIABLE_PATTERN).findall
    names: set[str] = set()
    for text in sources.values():
        names.update(_variable_findall(text))
    return sorted(names)


def entry_key(policy: str | None, context: Mapping[str, str], purpose: str) -> str | None:
    """The key of a cache entry, or None when the policy file cannot be read."""
    if policy is None:
        source = "builtin"
    else:
        digest = file_sha256(policy)
        if digest is None:
            return None
        # rule origins name the files relative to the current directory: an entry holds them as
        # shown from where it was compiled
        source = f"{os.path.abspath(policy)}|{digest}|shown-from={os.getcwd()}"
    parts = [CACHE_VERSION, sys.implementation.cache_tag or sys.version, str(marshal.version), code_fingerprint(),
             source, purpose, str(os.getuid()),
             *(f"{k}={context[k]}" for k in sorted(context))]
    return sha256("\n".join(parts).encode()).hexdigest()


def entry_path(kind: str, key: str, environ: Mapping[str, str] | None = None) -> str:
    """Where an entry of one kind (``plans``, ``verdicts``, ``ir`` …) is stored."""
    return os.path.join(cache_dir(environ), kind, key[:2], key + ".marshal")


#: Why writing to the cache failed in this process (None: no failure): the cache directory
#: is unusable (a file in its place, read-only, a read-only file system, no permission).
#: Commands then go on without the cache; the CLI warns once (:func:`cache_warning`).
write_problem: str | None = None


def cache_warning() -> str | None:
    """The one-line warning for a cache that could not be written, or None."""
    if write_problem is None:
        return None
    return f"warning: {write_problem}; going on without the cache"


def read_entry(path: str) -> dict[str, Any] | None:
    """A dict from the cache, or None (missing, unreadable, not a regular file, or corrupt)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO in its place does not block
    except OSError:
        return None
    try:
        if os.fstat(fd).st_mode & 0o170000 != 0o100000:  # not a regular file
            return None
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        data = marshal.loads(b"".join(chunks))
    except (OSError, EOFError, ValueError, TypeError):
        return None
    finally:
        os.close(fd)
    return data if type(data) is dict else None


def write_entry(path: str, data: Mapping[str, Any]) -> bool:
    """Write a dict of plain values atomically; whether it was written.  A cache that cannot
    be written is only slower (:data:`write_problem` says why)."""
    global write_problem
    try:
        payload = marshal.dumps(dict(data))
    except ValueError:  # a value marshal cannot hold: not cached
        return False
    from _thread import get_ident

    tmp = f"{path}.{os.getpid()}.{get_ident()}.tmp"  # unique to this thread: concurrent writers never share one
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        if write_problem is None:
            where = exc.filename if isinstance(exc.filename, str) else path
            write_problem = f"the cache directory cannot be written (`{where}`: {exc.strerror or exc})"
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True


def _checks(value: Any) -> TypeGuard[dict[str, str | None]]:
    """Whether an entry's ``sources`` or ``variables`` is a dict of str to str or None."""
    return type(value) is dict and all(type(k) is str and (v is None or type(v) is str) for k, v in value.items())


def load_checked(kind: str, key: str, environ: Mapping[str, str] | None = None, *,
                 variables: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """A cached entry whose source files and variables are all unchanged, or None
    (``variables``: where the policy's variables come from, default ``environ``)."""
    env = variables if variables is not None else os.environ if environ is None else environ
    data = read_entry(entry_path(kind, key, environ))
    if data is None or data.get("version") != CACHE_VERSION:
        return None
    sources, recorded = data.get("sources"), data.get("variables")
    if not _checks(sources) or not _checks(recorded):
        return None  # damaged: a miss
    for path, digest in sources.items():
        if file_sha256(path) != digest:
            return None
    for name, value in recorded.items():
        if env.get(name) != value:
            return None
    return data


def store_checked(kind: str, key: str, payload: Mapping[str, Any], sources: Mapping[str, str],
                  environ: Mapping[str, str] | None = None, *,
                  variables: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Record an entry with the hashes of its source files and the variables they mention."""
    env = variables if variables is not None else os.environ if environ is None else environ
    data = dict(payload)
    data["version"] = CACHE_VERSION
    data["sources"] = {os.path.abspath(p): file_sha256(p) for p in sources if os.path.isfile(p)}
    data["variables"] = {name: env.get(name) for name in referenced_variables(sources)}
    write_entry(entry_path(kind, key, environ), data)
    return data


def ir_json_problem(data: Any) -> str | None:
    """Where a JSON-shaped IR (a cache entry's) does not have the shape and the types
    ``PolicyIR.from_json`` builds from (a damaged entry: a miss), or None.  Every field is
    checked against the IR's field specs: a missing required field, a value of another type,
    a None where the field has no None default."""
    global _ir_shapes
    from stockade.compiler import ir

    if type(data) is not dict or data.get("ir_version") != ir.IR_VERSION:
        return "ir_version"
    if _ir_shapes is None:
        from dataclasses import MISSING, fields

        _ir_shapes = {cls: tuple((f.name, f.default is MISSING and f.default_factory is MISSING, f.default is None,
                                  spec.get(f.name)) for f in fields(cls))
                      for cls, spec in ir._FIELD_SPEC.items()}
    return _node_problem(ir.PolicyIR, data, "ir", _ir_shapes)


#: IR class → (field name, required, None allowed, spec) for each field (built on first use).
_ir_shapes: dict[Any, tuple[tuple[str, bool, bool, Any], ...]] | None = None


def _node_problem(cls: Any, data: Any, where: str, shapes: Mapping[Any, Any]) -> str | None:
    if type(data) is not dict:
        return where
    for name, required, none_ok, kind in shapes[cls]:
        if name not in data:
            if required:
                return f"{where}.{name}"
            continue
        raw = data[name]
        if raw is None:
            if not none_ok:
                return f"{where}.{name}"
            continue
        if type(kind) is tuple:  # ("tuple", element)
            if type(raw) is not list:
                return f"{where}.{name}"
            element = kind[1]
            for index, item in enumerate(raw):
                if _value_problem(element, item, "", shapes) is not None:
                    return _value_problem(element, item, f"{where}.{name}[{index}]", shapes)
        elif kind is not None and _value_problem(kind, raw, "", shapes) is not None:
            return _value_problem(kind, raw, f"{where}.{name}", shapes)
    return None


def _value_problem(kind: Any, raw: Any, where: str, shapes: Mapping[Any, Any]) -> str | None:
    if kind in shapes:
        return _node_problem(kind, raw, where, shapes)
    if kind is float:
        return None if type(raw) in (int, float) else where
    return None if type(raw) is kind else where


def cached_ir(policy: str | None, *, workspace: str | None = None, home: str | None = None,
              tmpdir: str | None = None, use_cache: bool = True) -> Any:
    """The compiled :class:`~stockade.compiler.ir.PolicyIR` of a policy file (None: the
    built-in policy) for a context — from the cache while it is fresh, else compiled by
    :func:`~stockade.compiler.pipeline.compile_policy` (raising its errors) and stored.

    What ``stockade analyze`` and ``stockade hook`` load on every call: compiling loads the
    grammar and runs the compiler (hundreds of milliseconds), decoding a cached IR does not.
    """
    workspace = os.path.abspath(workspace or os.getcwd())
    home = os.path.abspath(home or os.path.expanduser("~"))
    tmpdir = os.path.abspath(tmpdir or os.environ.get("TMPDIR") or "/tmp")
    key = entry_key(policy, {"workspace": workspace, "home": home, "tmpdir": tmpdir}, "ir") if use_cache else None
    if key is not None:
        entry = load_checked("ir", key)
        if entry is not None and ir_json_problem(entry.get("ir")) is None:
            from stockade.compiler.ir import PolicyIR

            try:
                return PolicyIR.from_json(entry["ir"])
            except Exception:  # a damaged entry (any shape) is a miss
                pass
    from stockade.compiler.pipeline import compile_policy

    result = compile_policy(policy, workspace=workspace, home=home, tmpdir=tmpdir)
    if key is not None:
        store_checked("ir", key, {"ir": result.ir.to_json()}, result.sources)
    return result.ir
