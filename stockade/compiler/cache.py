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
    from typing import Any, Callable, Mapping

try:
    from _sha256 import sha256
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import sha256

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
        source = f"{os.path.abspath(policy)}|{digest}"
    parts = [CACHE_VERSION, sys.implementation.cache_tag or sys.version, str(marshal.version), code_fingerprint(),
             source, purpose, str(os.getuid()),
             *(f"{k}={context[k]}" for k in sorted(context))]
    return sha256("\n".join(parts).encode()).hexdigest()


def entry_path(kind: str, key: str, environ: Mapping[str, str] | None = None) -> str:
    """Where an entry of one kind (``plans``, ``verdicts``, ``ir`` …) is stored."""
    return os.path.join(cache_dir(environ), kind, key[:2], key + ".marshal")


def read_entry(path: str) -> dict | None:
    """A dict from the cache, or None (missing, unreadable or corrupt)."""
    try:
        with open(path, "rb") as handle:
            data = marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def write_entry(path: str, data: Mapping[str, Any]) -> None:
    """Write a dict of plain values atomically; a cache that cannot be written is only slower."""
    try:
        payload = marshal.dumps(dict(data))
    except ValueError:  # a value marshal cannot hold: not cached
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, path)
    except OSError:
        pass


def load_checked(kind: str, key: str, environ: Mapping[str, str] | None = None, *,
                 variables: Mapping[str, str] | None = None) -> dict | None:
    """A cached entry whose source files and variables are all unchanged, or None
    (``variables``: where the policy's variables come from, default ``environ``)."""
    env = variables if variables is not None else os.environ if environ is None else environ
    data = read_entry(entry_path(kind, key, environ))
    if data is None or data.get("version") != CACHE_VERSION:
        return None
    for path, digest in data.get("sources", {}).items():
        if file_sha256(path) != digest:
            return None
    for name, value in data.get("variables", {}).items():
        if env.get(name) != value:
            return None
    return data


def store_checked(kind: str, key: str, payload: Mapping[str, Any], sources: Mapping[str, str],
                  environ: Mapping[str, str] | None = None, *, variables: Mapping[str, str] | None = None) -> dict:
    """Record an entry with the hashes of its source files and the variables they mention."""
    env = variables if variables is not None else os.environ if environ is None else environ
    data = dict(payload)
    data["version"] = CACHE_VERSION
    data["sources"] = {os.path.abspath(p): file_sha256(p) for p in sources if os.path.isfile(p)}
    data["variables"] = {name: env.get(name) for name in referenced_variables(sources)}
    write_entry(entry_path(kind, key, environ), data)
    return data


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
        if entry is not None:
            from stockade.compiler.ir import PolicyIR

            try:
                return PolicyIR.from_json(entry["ir"])
            except (KeyError, TypeError, ValueError):
                pass  # a damaged entry is a miss
    from stockade.compiler.pipeline import compile_policy

    result = compile_policy(policy, workspace=workspace, home=home, tmpdir=tmpdir)
    if key is not None:
        store_checked("ir", key, {"ir": result.ir.to_json()}, result.sources)
    return result.ir
