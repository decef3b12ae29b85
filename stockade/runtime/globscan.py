"""Glob masks decided at each run's start: an incremental, budgeted, symlink-safe scan.

bubblewrap has no glob mounts, so a rule such as ``deny "**/.env*"`` is realised by masking
every path that matches it.  Which paths match changes after a plan is compiled (a ``.env``
written later, one inside ``node_modules``), so ``stockade run`` decides it at the start of
**every** run, from the current tree, for the *scan roots* the plan names (the workspace and
every writable root of the policy, intersected with each glob's literal prefix: see
:class:`~stockade.backends.bwrap.BwrapBackend`'s ``glob_per_run`` option):

* :func:`scan_globs` walks the roots with directory descriptors (``O_NOFOLLOW |
  O_DIRECTORY`` and ``dir_fd=``, never a path string below the root), never following a
  symlink and skipping no directory name (``node_modules``, ``.git`` and caches included;
  only ``/proc``, ``/sys`` and ``/dev``).  A **per-directory index** in stockade's cache
  directory (``globscan/``, read-only inside every sandbox like the rest of stockade's
  state) remembers each directory's identity ``(st_dev, st_ino, st_ctime_ns, st_mtime_ns)``,
  its subdirectories, its matches and its entry count; a directory whose identity is
  unchanged is not listed again.  A sandbox can forge ``st_mtime`` (``touch -d``) but not
  ``st_ctime``, which any change of a directory's entries (and of its times) sets to the
  current time.  A directory changed within :data:`RACY_NS` of a scan's start is listed
  again next time (the kernel's timestamps are coarse: a change in the same tick would
  leave the identity as it was).  A missing, damaged or foreign index is a full scan.
* a **budget** bounds the work: more than ``STOCKADE_GLOB_SCAN_LIMIT`` entries (default
  :data:`DEFAULT_ENTRY_LIMIT`) in the scanned trees, more than ``STOCKADE_GLOB_SCAN_SECONDS``
  (default :data:`DEFAULT_TIME_LIMIT`, of CPU time), a tree deeper than :data:`MAX_DEPTH` or more than
  ``STOCKADE_GLOB_MATCH_LIMIT`` matches (default :data:`DEFAULT_MATCH_LIMIT`, each a mount)
  refuses the run (``R550``, naming the glob rules and the count) — never a silent gap.
* :func:`plan_with_globs` gives the run its argv: the plan's own (compiled without these
  matches) when nothing matches, the plan's remembered glob argv when the matches are those
  it was made for, else a new one: the bwrap backend's filesystem planner is run again over
  the plan's IR with the matches as decision points (so masks, pins and their order are
  exactly what a compile would give) and the result is remembered next to the plan
  (``globplans/KEY`` in the cache, with the plan's identity).

A match that is a symlink masks what it resolves to (never the link itself, which
bubblewrap would follow anyway): the planner mounts at the canonical target, which is
stricter than the policy for the target, never looser; the target's canonical path and
kind are part of the match, so a link re-pointed elsewhere gives a new plan.  A directory
that cannot be listed but can be entered is hidden whole (stricter: the sandbox could open
a guessed name inside).

This module is on the path of every cached run and imports nothing heavy (no ``re``, no
``typing``); the matcher below implements :func:`stockade.compiler.query.glob_to_regex`'s
meaning without regular expressions (a test checks both agree).
"""

from __future__ import annotations

import marshal
import os
import stat
import time

from stockade import catalogue as codes

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping, Sequence
    from typing import Any, TypeGuard

INDEX_VERSION = 2
#: Entries (files, directories, links …) the scanned trees may hold before a run is refused.
DEFAULT_ENTRY_LIMIT = 1_000_000
#: Matches (each one a mount) beyond which a run is refused: bubblewrap's set-up time grows
#: faster than the number of mounts.
DEFAULT_MATCH_LIMIT = 2_000
#: Seconds of CPU time a scan may take before the run is refused (CPU, not wall-clock time:
#: a loaded machine slows every scan down without making it more work).
DEFAULT_TIME_LIMIT = 20.0
#: Directory levels below a scan root before the run is refused.
MAX_DEPTH = 400
#: A directory whose ctime or mtime is this close to (or after) a scan's start is listed
#: again by the next scan (nanoseconds).
RACY_NS = 1_000_000_000
#: Pseudo filesystems that are never scanned (bubblewrap gives the sandbox fresh ones).
SKIP = frozenset({"/proc", "/sys", "/dev"})

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOT_NAMES = frozenset({"", ".", ".."})
_LIT, _ONE, _STAR, _ANY, _SEP = range(5)


# -- the matcher ----------------------------------------------------------------------


def compile_glob(pattern: str) -> tuple:
    """The tokens of a path glob, read as :func:`~stockade.compiler.query.glob_to_regex`
    reads it: ``/**/`` is ``/`` or ``/…/``, ``**`` anything, ``*`` and ``?`` within a
    component, everything else literal."""
    tokens: list[tuple[int, str]] = []
    literal: list[str] = []
    i = 0

    def flush() -> None:
        if literal:
            tokens.append((_LIT, "".join(literal)))
            literal.clear()

    while i < len(pattern):
        if pattern.startswith("/**/", i):
            flush()
            tokens.append((_SEP, ""))
            i += 4
            continue
        if pattern.startswith("**", i):
            flush()
            tokens.append((_ANY, ""))
            i += 2
            continue
        char = pattern[i]
        if char == "*":
            flush()
            tokens.append((_STAR, ""))
        elif char == "?":
            flush()
            tokens.append((_ONE, ""))
        else:
            literal.append(char)
        i += 1
    flush()
    return tuple(tokens)


def glob_match(tokens: tuple, text: str) -> bool:
    """Whether the whole of ``text`` matches the tokens of :func:`compile_glob`.

    The set of positions reachable after each token is carried forward (no backtracking),
    so a hostile path (hundreds of components) costs at most tokens × length² steps.
    """
    n = len(text)
    states = {0}
    for kind, value in tokens:
        reached: set[int] = set()
        for si in states:
            if kind == _LIT:
                if text.startswith(value, si):
                    reached.add(si + len(value))
            elif kind == _ONE:
                if si < n and text[si] != "/":
                    reached.add(si + 1)
            elif kind == _STAR:
                end = text.find("/", si)
                reached.update(range(si, (n if end < 0 else end) + 1))
            elif kind == _ANY:
                reached.update(range(si, n + 1))
            elif text.startswith("/", si):  # _SEP: "/" or "/" + anything + "/"
                k = si
                while k >= 0:
                    reached.add(k + 1)
                    k = text.find("/", k + 1)
        if not reached:
            return False
        states = reached
    return n in states


def _name_test(pattern: str) -> tuple:
    """What an entry's name must be for the pattern to match a path ending in it: ``("any",)``
    when the last component has ``**``, ``("eq", s)``, ``("prefix", s)`` or ``("glob", tokens)``."""
    last = pattern.rsplit("/", 1)[-1]
    if "**" in last:
        return ("any",)
    tokens = compile_glob(last)
    if all(kind == _LIT for kind, _ in tokens):
        return ("eq", last)
    if len(tokens) == 2 and tokens[0][0] == _LIT and tokens[1][0] == _STAR:
        return ("prefix", tokens[0][1])
    if len(tokens) == 1 and tokens[0][0] == _STAR:
        return ("any",)
    return ("glob", tokens)


class _Globs:
    """The globs of a plan, with a cheap test on names before the full match."""

    def __init__(self, patterns: Sequence[str]):
        self.exact: set[str] = set()
        self.prefixes: list[str] = []
        self.others: list[tuple] = []
        self.full: list[tuple] = []
        self.any_name = False
        for pattern in patterns:
            test = _name_test(pattern)
            if test[0] == "any":
                self.any_name = True
            elif test[0] == "eq":
                self.exact.add(test[1])
            elif test[0] == "prefix":
                self.prefixes.append(test[1])
            else:
                self.others.append(test[1])
            self.full.append(compile_glob(pattern))
        self.prefix_tuple = tuple(self.prefixes)

    def candidate(self, name: str) -> bool:
        """Whether some glob may match a path whose last component is ``name``."""
        if self.any_name or name in self.exact or (self.prefix_tuple and name.startswith(self.prefix_tuple)):
            return True
        return any(glob_match(tokens, name) for tokens in self.others)

    def matches(self, path: str) -> bool:
        """Whether some glob matches the whole path."""
        return any(glob_match(tokens, path) for tokens in self.full)


# -- the scan -------------------------------------------------------------------------


class DamagedPlan(ValueError):
    """The plan's IR cannot be decoded to plan a run's matches (a damaged cache entry)."""


class ScanBudgetExceeded(Exception):
    """The scanned trees are larger (or deeper, or slower to list) than the budget."""

    def __init__(self, what: str, root: str, count: int, limit: float = 0):
        super().__init__(what)
        self.what, self.root, self.count, self.limit = what, root, count, limit


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "d"
    if stat.S_ISLNK(mode):
        return "l"
    if stat.S_ISREG(mode):
        return "f"
    return "o"


def _entry_kind(entry: os.DirEntry) -> str:
    try:
        if entry.is_dir(follow_symlinks=False):
            return "d"
        if entry.is_symlink():
            return "l"
        return "f" if entry.is_file(follow_symlinks=False) else "o"
    except OSError:
        return "o"


def _open_root(root: str) -> int | None:
    """A descriptor on ``root`` opened component by component without following a
    symlink; None when it does not exist or is not a directory.  A symlink on the way
    raises (the plan's roots are canonical: something replaced a directory since)."""
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in [p for p in root.split("/") if p]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                return None
            except NotADirectoryError:
                return None
            except OSError as exc:
                if exc.errno == 40:  # ELOOP: a symlink
                    raise ScanBudgetExceeded("symlink", root, 0) from None
                raise
            os.close(fd)
            fd = child
        result, fd = fd, -1
        return result
    finally:
        if fd >= 0:
            os.close(fd)


class Scanner:
    """One scan of a plan's roots against its globs, with the previous scan's index."""

    def __init__(self, patterns: Sequence[str], index: Mapping[str, Any] | None = None,
                 limit: int = DEFAULT_ENTRY_LIMIT, seconds: float = DEFAULT_TIME_LIMIT):
        self.globs = _Globs(patterns)
        self.old: Mapping[str, Any] = index if isinstance(index, dict) else {}
        self.new: dict[str, tuple] = {}
        self.limit = limit
        self.seconds = seconds
        self.deadline = time.process_time() + seconds
        self.started = time.time_ns()
        self.count = 0
        self.listed = 0
        self.hits: list[tuple] = []

    def _identity(self, st: os.stat_result) -> tuple | None:
        racy = self.started - RACY_NS
        if st.st_ctime_ns >= racy or st.st_mtime_ns >= racy:
            return None  # list it again next time
        return (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns)

    def _cached(self, path: str, st: os.stat_result) -> tuple | None:
        """The index's record of a directory when its identity is unchanged and the record
        is well formed (a damaged one is a miss)."""
        old = self.old.get(path)
        if old.__class__ is not tuple or len(old) != 4 or old[0] is None:
            return None
        if old[0] != (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns):
            return None
        _, subdirs, hits, count = old
        if subdirs.__class__ is not str or hits.__class__ is not tuple or count.__class__ is not int:
            return None
        # subdirs: names joined with "/", which no name holds ("", "." and ".." are skipped
        # where they are opened)
        for hit in hits:
            if hit.__class__ is not tuple or len(hit) != 2 or hit[0].__class__ is not str or "/" in hit[0]:
                return None
        return old

    def _list(self, fd: int, path: str, st: os.stat_result) -> tuple:
        """List a directory: its subdirectories, its matching entries and its entry count."""
        subdirs: list[str] = []
        hits: list[tuple[str, str]] = []
        count = 0
        globs = self.globs
        base = path.rstrip("/") + "/"
        budget = self.limit - self.count
        with os.scandir(fd) as entries:
            for entry in entries:
                count += 1
                if count & 4095 == 0:  # a huge directory: the budget is checked while listing it
                    if count > budget:
                        raise ScanBudgetExceeded("entries", path, self.count + count, self.limit)
                    if time.process_time() > self.deadline:
                        raise ScanBudgetExceeded("time", path, self.count + count, self.seconds)
                name = entry.name
                if globs.candidate(name) and globs.matches(base + name):
                    hits.append((name, _entry_kind(entry)))
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if is_dir:
                    subdirs.append(name)
        self.listed += 1
        return (self._identity(st), "/".join(sorted(subdirs)), tuple(sorted(hits)), count)

    def _record(self, path: str, record: tuple) -> list[str]:
        """Keep a directory's record; its subdirectories."""
        self.new[path] = record
        self.count += record[3] + 1
        if self.count > self.limit:
            raise ScanBudgetExceeded("entries", path, self.count, self.limit)
        if record[2]:
            base = path.rstrip("/") + "/"
            for name, kind in record[2]:
                self.hits.append((base + name, kind))
        return record[1].split("/") if record[1] else []

    def _visit(self, fd: int, path: str) -> list[str]:
        """Record one open directory (from the index or listed); its subdirectories."""
        st = os.fstat(fd)  # before listing: a change after this is a new ctime
        record = self._cached(path, st)
        if record is None:
            try:
                record = self._list(fd, path, st)
            except PermissionError:
                # cannot be listed: hidden whole when it can be entered (a guessed name inside
                # could be opened), else out of the sandbox's reach as well as ours
                if os.access(".", os.X_OK, dir_fd=fd):
                    self.hits.append((path, "u"))
                return []
        return self._record(path, record)

    def scan(self, root: str) -> None:
        """Scan one root (its descriptors are closed whatever happens)."""
        fd = _open_root(root)
        if fd is None:
            return
        root = root.rstrip("/") or "/"
        frames: list[tuple[int, str, Any]] = [(fd, root.rstrip("/") + "/", None)]
        old, new = self.old, self.new
        visited = 0
        try:
            frames[0] = (fd, frames[0][1], iter(self._visit(fd, root)))
            while frames:
                parent, path, pending = frames[-1]
                name = next(pending, None)
                if name is None:
                    os.close(parent)
                    frames.pop()
                    continue
                if name in _NOT_NAMES:
                    continue  # a damaged index: never opened
                child_path = path + name
                if child_path in SKIP:
                    continue
                visited += 1
                if visited & 63 == 0 and time.process_time() > self.deadline:
                    raise ScanBudgetExceeded("time", child_path, self.count, self.seconds)
                leaf = old.get(child_path)
                if leaf.__class__ is tuple and len(leaf) == 4 and leaf[1] == "" and leaf[0] is not None:
                    # a directory without subdirectories last time: its identity is enough,
                    # read through the parent's descriptor without following a link
                    try:
                        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
                    except OSError:
                        continue  # gone since it was listed: its parent changed, so listed next time
                    if leaf[0] == (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns) and leaf[2] == () \
                            and leaf[3].__class__ is int:
                        new[child_path] = leaf  # unchanged, no subdirectories, no matches
                        self.count += leaf[3] + 1
                        if self.count > self.limit:
                            raise ScanBudgetExceeded("entries", child_path, self.count, self.limit)
                        continue
                    record = self._cached(child_path, st)
                    if record is not None:
                        self._record(child_path, record)
                        continue
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=parent)
                except PermissionError:
                    if os.access(name, os.X_OK, dir_fd=parent, follow_symlinks=False):
                        self.hits.append((child_path, "u"))
                    continue
                except OSError:
                    continue  # gone or replaced since it was listed: its parent changed, so listed next time
                frames.append((child, child_path + "/", None))
                if len(frames) > MAX_DEPTH:
                    raise ScanBudgetExceeded("depth", child_path, len(frames) - 1, MAX_DEPTH)
                frames[-1] = (child, child_path + "/", iter(self._visit(child, child_path)))
        finally:
            for frame_fd, _, _ in frames:
                os.close(frame_fd)


def _resolved(path: str) -> tuple:
    """A symlink match's canonical target and its kind (the planner masks the target)."""
    target = os.path.realpath(path)
    try:
        kind = _kind(os.lstat(target).st_mode)
    except OSError:
        kind = "-"
    return (path, "l", target, kind)


def scan_globs(patterns: Sequence[str], roots: Sequence[str], index_path: str | None,
               limit: int = DEFAULT_ENTRY_LIMIT, seconds: float = DEFAULT_TIME_LIMIT,
               use_index: bool = True, max_matches: int = DEFAULT_MATCH_LIMIT) -> list[tuple]:
    """The current matches of ``patterns`` under ``roots``, sorted: ``(path, kind)`` tuples
    (kind ``f`` file, ``d`` directory, ``o`` other, ``u`` a directory that cannot be
    listed) and ``(path, "l", target, target_kind)`` for symlinks.  The index at
    ``index_path`` is read (when ``use_index``) and rewritten when anything changed.
    Raises :class:`ScanBudgetExceeded`."""
    key = [INDEX_VERSION, list(patterns), list(roots), os.getuid()]
    old = None
    if use_index and index_path:
        try:
            with open(index_path, "rb") as handle:
                data = marshal.loads(handle.read())
            if isinstance(data, dict) and data.get("key") == key:
                old = data.get("dirs")
        except (OSError, EOFError, ValueError, TypeError):
            old = None
    scanner = Scanner(patterns, old, limit, seconds)
    for root in roots:
        scanner.scan(root)
    if index_path and (scanner.listed or len(scanner.new) != len(scanner.old)):
        _write_index(index_path, {"key": key, "dirs": scanner.new})
    if len(scanner.hits) > max_matches:
        raise ScanBudgetExceeded("matches", roots[0] if roots else "/", len(scanner.hits), max_matches)
    return sorted(_resolved(hit[0]) if hit[1] == "l" else hit for hit in set(scanner.hits))


def _write_index(path: str, data: dict) -> None:
    try:
        payload = marshal.dumps(data)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass  # an index that cannot be written is only slower


# -- the run's argv -------------------------------------------------------------------


def index_path(plan: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str:
    """Where the scan index of a plan's globs and roots lives (in stockade's cache)."""
    from stockade.compiler.cache import cache_dir, sha256

    spec = plan["glob_scan"]
    digest = sha256(repr((spec.get("patterns"), spec.get("roots"))).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(cache_dir(environ), "globscan", digest[:2], digest + ".marshal")


def _number(environ: Mapping[str, str], name: str, default: float) -> float:
    try:
        value = float(environ.get(name) or default)
    except ValueError:
        return default
    return value if value > 0 else default


def _refusal(plan: Mapping[str, Any], exc: ScanBudgetExceeded) -> Exception:
    from stockade.diagnostics import Diagnostic, StockadeError

    rules = ", ".join(f"`{text}`" for text in plan["glob_scan"].get("rules", ())) or "the policy's globs"
    if exc.what == "symlink":
        return StockadeError(Diagnostic(
            codes.GLOB_SCAN_INCOMPLETE,
            f"cannot decide the masks of the glob rule(s) {rules}: the scan root `{exc.root}` is now "
                    f"reached through a symlink; refusing to run",
            help="restore the directory, or run with --no-cache to compile the plan for the new layout"))
    head = {"entries": f"more than {exc.limit} entries", "depth": f"directories more than {exc.limit} levels deep",
            "time": f"more than {exc.limit:g} s of CPU time", "matches": f"more than {exc.limit} matches"}[exc.what]
    if exc.what == "depth":
        tail = f"at `{exc.root}`"
    elif exc.what == "matches":
        tail = f"{exc.count} under `{exc.root}` and the other roots; each one is a mount"
    else:
        tail = f"{exc.count} counted when it stopped at `{exc.root}`"
    return StockadeError(Diagnostic(
        codes.GLOB_SCAN_INCOMPLETE,
        f"cannot decide the masks of the glob rule(s) {rules}: the scan found {head} ({tail}); "
                f"refusing to run rather than leave matches unmasked",
        help="remove what is not needed from the tree, narrow the glob (e.g. `$WORKSPACE/**/.env*` instead of "
             "`**/.env*`), or raise STOCKADE_GLOB_SCAN_LIMIT (entries), STOCKADE_GLOB_SCAN_SECONDS or "
             "STOCKADE_GLOB_MATCH_LIMIT"))


def plan_with_globs(plan: Mapping[str, Any], key: str | None, environ: Mapping[str, str] | None = None,
                    use_index: bool = True) -> Mapping[str, Any]:
    """The plan with the argv and placeholders of this run's glob matches (see the module
    doc); raises ``R550`` past the scan budget."""
    env = os.environ if environ is None else environ
    spec = plan["glob_scan"]
    try:
        matches = scan_globs(spec["patterns"], spec["roots"], index_path(plan),
                             int(_number(env, "STOCKADE_GLOB_SCAN_LIMIT", DEFAULT_ENTRY_LIMIT)),
                             _number(env, "STOCKADE_GLOB_SCAN_SECONDS", DEFAULT_TIME_LIMIT), use_index,
                             int(_number(env, "STOCKADE_GLOB_MATCH_LIMIT", DEFAULT_MATCH_LIMIT)))
    except ScanBudgetExceeded as exc:
        raise _refusal(plan, exc) from None
    if not matches:
        return plan
    from stockade.compiler.cache import entry_path, read_entry, sha256, write_entry

    base = sha256(plan["ir"] + "\0".join(plan["argv"]).encode("utf-8", "surrogateescape")).hexdigest()
    path = entry_path("globplans", key) if key is not None else None
    overlay = read_entry(path) if path is not None and use_index else None
    if overlay is None or overlay.get("base") != base or overlay.get("glob_set") != matches \
            or not _overlay_ok(overlay):
        overlay = {**replan(plan, matches), "base": base}
        if path is not None:
            write_entry(path, overlay)
    return {**plan, "argv": overlay["glob_argv"], "placeholders": overlay["glob_placeholders"],
            "placeholder_files": overlay["glob_placeholder_files"], "seccomp": overlay["seccomp"]}


def _strs(value: Any) -> TypeGuard[list[str]]:
    return type(value) is list and all(type(word) is str for word in value)


def _overlay_ok(overlay: Mapping[str, Any]) -> bool:
    """Whether a remembered glob argv has the shape :func:`replan` gives it (a damaged
    entry is re-planned)."""
    argv, placeholders, files, programs = (overlay.get("glob_argv"), overlay.get("glob_placeholders"),
                                           overlay.get("glob_placeholder_files"), overlay.get("seccomp"))
    return (_strs(argv) and bool(argv) and argv[-1] == "--" and _strs(placeholders)
            and all(p.startswith("/") for p in placeholders)
            and type(files) is dict and all(type(k) is str and type(v) is str for k, v in files.items())
            and type(programs) is dict and all(type(k) is str and type(v) is bytes for k, v in programs.items()))


def replan(plan: Mapping[str, Any], matches: Sequence[tuple]) -> dict[str, Any]:
    """The argv, placeholders and seccomp programs of a plan for ``matches`` (kept in the
    cache as ``globplans/KEY``, next to the plan, with the plan's identity): the bwrap
    backend compiles the plan's IR again with the matches (and those found when the plan
    was compiled) as decision points, without walking anything."""
    from stockade.backends.base import compile_ir
    from stockade.compiler.ir import PolicyIR
    from stockade.runtime.plan import plan_ir_json, strip_environment
    from stockade.runtime.sandbox import checked_seccomp_programs

    try:
        ir = PolicyIR.from_json(plan_ir_json(plan))
    except (EOFError, ValueError, TypeError, KeyError, AttributeError, IndexError):
        raise DamagedPlan("the cached plan's IR cannot be decoded") from None
    paths = [*plan.get("glob_static", ()), *(m[0] for m in matches if m[1] != "u")]
    hidden = [m[0] for m in matches if m[1] == "u"]
    artifact = compile_ir(ir, "bwrap", glob_matches=paths, glob_hidden=hidden, by_runtime=True)
    argv = strip_environment(artifact.data.get("argv") or [])
    programs = dict(plan.get("seccomp") or {})
    programs.update(checked_seccomp_programs(argv))
    return {"glob_set": [tuple(m) for m in matches], "glob_argv": argv,
            "glob_placeholders": list(artifact.data.get("placeholders", ())),
            "glob_placeholder_files": dict(artifact.data.get("placeholder_files", {})), "seccomp": programs}
