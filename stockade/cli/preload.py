"""Load the modules of a hot command from one file: a ``.pyc``-like cache of their code.

``stockade run``, ``analyze`` and ``hook`` are started once per agent command, and a cached
``stockade run`` imports about twenty of stockade's modules.  Through the normal import
system each costs about 0.1 ms before its code runs — the path finder's lookups and
``stat`` calls, opening, reading and validating its ``.pyc`` — on a Python start of ~12 ms.
So each hot subcommand keeps the compiled code of the stockade modules it imported last
time in one file, ``stockade/__pycache__/hot-<command>.<cache tag>.bundle``, next to
Python's own ``.pyc`` files and trusted as they are:

* an entry is used only while its source file has the size and modification time it had
  when the entry was made (what Python checks before it uses a ``.pyc``) and is the same
  file (inode: installers write new files), and only by the interpreter that wrote it (the cache tag in the file name and the bytecode magic number
  inside); its code is unmarshalled only when the module is imported;
* anything else — a module not in the bundle, a stale entry, an unreadable or damaged
  file — is imported the normal way, and the bundle is then rewritten;
* at the end of a run whose imported stockade modules differ from the bundle's (the first
  run, an upgrade, an edited module, a run that compiled its policy), the bundle is
  rewritten atomically with exactly the modules that run imported — unless Python was told
  not to write bytecode (``-B``, ``PYTHONDONTWRITEBYTECODE``) or the directory is not
  writable; a bundle is never required.

Only modules of the ``stockade`` package are bundled, and only modules imported after
:func:`install` (the package itself and :mod:`stockade.cli.main` are already loaded by
then).  The loader is a :class:`importlib.machinery.SourceFileLoader` whose
``get_code`` comes from the bundle, so modules loaded from it have the same ``__file__``,
``__spec__``, ``__cached__``, source lines and resource access as normally imported ones.
"""

from __future__ import annotations

import marshal
import os
import sys

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

#: What :mod:`importlib.machinery` re-exports, taken from the interpreter's own import
#: system (importing :mod:`importlib` would load :mod:`warnings` too).
_external = sys.modules.get("_frozen_importlib_external")
_bootstrap = sys.modules.get("_frozen_importlib")

#: The bundle format; a file with another version is ignored.
BUNDLE_VERSION = 2

#: An entry: (source path, is a package, the source's stamp (see :func:`_stamp`), ``.pyc``
#: path, marshalled code).
Entry = "tuple[str, bool, tuple[int, int, int], str | None, bytes]"


def bundle_path(root: str, command: str) -> str | None:
    """Where the bundle of ``command`` lives for the package at ``root`` (honouring
    ``sys.pycache_prefix``), or None when this interpreter writes no bytecode cache."""
    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    name = f"hot-{command}.{tag}.bundle"
    prefix = getattr(sys, "pycache_prefix", None)
    if prefix:
        return os.path.join(prefix, os.path.splitdrive(root)[1].lstrip("\\/"), name)
    return os.path.join(root, "__pycache__", name)


if _external is not None:

    class BundleLoader(_external.SourceFileLoader):  # type: ignore[name-defined,misc]
        """A source file loader whose code comes from the bundle (falling back to the
        ``.pyc`` or the source if the bundled code cannot be read)."""

        def __init__(self, fullname: str, path: str, code: bytes):
            super().__init__(fullname, path)
            self.bundled = code

        def get_code(self, fullname: str) -> Any:
            """The module's code object."""
            if fullname == self.name:
                try:
                    return marshal.loads(self.bundled)
                except (EOFError, ValueError, TypeError):
                    pass
            return super().get_code(fullname)


class HotBundle:
    """A meta path finder serving stockade's modules from one bundle file (see the module
    docstring); :meth:`save` rewrites the file when this run's modules differ."""

    def __init__(self, path: str, root: str, entries: dict[str, Any]):
        self.path = path
        self.root = root
        self.entries = entries
        self.stale = False

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        """The spec of a bundled module whose source is unchanged, else None."""
        entry = self.entries.get(name)
        if entry is None:
            return None
        origin, is_package, stamp, cached, code = entry
        try:
            current = _stamp(os.stat(origin))
        except OSError:
            self.stale = True
            return None
        if current != stamp:
            self.stale = True
            return None
        spec = _bootstrap.ModuleSpec(name, BundleLoader(name, origin, code), origin=origin,
                                     is_package=is_package)
        spec.has_location = True
        spec.cached = cached
        if is_package:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        return spec

    def save(self) -> bool:
        """Rewrite the bundle with the stockade modules loaded now, if they differ from
        its entries or one was stale; whether it was written."""
        if sys.dont_write_bytecode or not _writable(os.path.dirname(self.path)):
            return False  # e.g. a system-wide install run by a user: decided before any work
        loaded = self._loaded_modules()
        if not self.stale and loaded.keys() == self.entries.keys():
            return False  # every one was served by the bundle, validated as it was imported
        entries = self._entries(loaded)
        payload = marshal.dumps({"version": BUNDLE_VERSION, "magic": _external.MAGIC_NUMBER, "modules": entries})
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(tmp, "wb") as handle:
                handle.write(payload)
            os.replace(tmp, self.path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return False
        self.entries = entries
        self.stale = False
        return True

    def _loaded_modules(self) -> dict[str, Any]:
        """The spec of every loaded ``stockade.*`` module imported from a source file under
        the package root (the package and the modules loaded before :func:`install` are
        not served by the bundle, and are left out)."""
        out: dict[str, Any] = {}
        prefix = self.root + os.sep
        for name, module in list(sys.modules.items()):
            if not name.startswith("stockade.") or name in _LOADED_BEFORE:
                continue
            spec = getattr(module, "__spec__", None)
            origin = getattr(spec, "origin", None)
            if (isinstance(origin, str) and origin.startswith(prefix) and origin.endswith(".py")
                    and isinstance(getattr(spec, "loader", None), _external.SourceFileLoader)):
                out[name] = spec
        return out

    def _entries(self, loaded: dict[str, Any]) -> dict[str, Any]:
        """The bundle entries of the ``loaded`` modules: an unchanged entry is kept, else
        the code is what Python itself would load now (the ``.pyc``, or the source compiled)."""
        out: dict[str, Any] = {}
        for name, spec in loaded.items():
            origin = spec.origin
            try:
                stamp = _stamp(os.stat(origin))
                old = self.entries.get(name)
                if old is not None and old[2] == stamp:
                    code = old[4]
                else:
                    code = marshal.dumps(_external.SourceFileLoader(name, origin).get_code(name))
            except (OSError, ImportError, SyntaxError, ValueError):
                continue
            out[name] = (origin, spec.submodule_search_locations is not None, stamp, getattr(spec, "cached", None),
                         code)
        return out


#: Modules always imported before :func:`install` runs (not worth bundling).
_LOADED_BEFORE = frozenset({"stockade.cli", "stockade.cli.main", "stockade.cli.preload"})


def install(command: str) -> HotBundle | None:
    """Put the bundle of ``command`` first on ``sys.meta_path`` (an empty one when there is
    no usable file yet, so that :meth:`HotBundle.save` can write it); None when this
    interpreter has no bytecode cache or no standard import system."""
    package = sys.modules.get("stockade")
    if _external is None or _bootstrap is None or package is None or not getattr(package, "__file__", None):
        return None
    root = os.path.dirname(os.path.abspath(package.__file__))
    path = bundle_path(root, command)
    if path is None:
        return None
    entries: dict[str, Any] = {}
    try:
        with open(path, "rb") as handle:
            data = marshal.loads(handle.read())
        if (isinstance(data, dict) and data.get("version") == BUNDLE_VERSION
                and data.get("magic") == _external.MAGIC_NUMBER and isinstance(data.get("modules"), dict)):
            entries = {name: entry for name, entry in data["modules"].items() if _well_formed(name, entry)}
    except (OSError, EOFError, ValueError, TypeError):
        pass
    bundle = HotBundle(path, root, entries)
    sys.meta_path.insert(0, bundle)
    return bundle


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    """What identifies a version of a source file: its mtime, size and inode."""
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _writable(directory: str) -> bool:
    """Whether a file can be made in ``directory`` (or, if it does not exist yet, in the
    nearest existing directory above it)."""
    while directory and not os.path.isdir(directory):
        parent = os.path.dirname(directory)
        if parent == directory:
            return False
        directory = parent
    return bool(directory) and os.access(directory, os.W_OK)


def _well_formed(name: Any, entry: Any) -> bool:
    return (isinstance(name, str) and name.startswith("stockade.") and isinstance(entry, tuple) and len(entry) == 5
            and isinstance(entry[0], str) and isinstance(entry[2], tuple) and isinstance(entry[4], bytes))
