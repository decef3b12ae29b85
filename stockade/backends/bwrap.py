"""The bubblewrap (Linux) backend: a policy IR becomes a deterministic ``bwrap`` argv.

How the policy is realised
==========================

**Filesystem.**  Every literal rule path is canonicalised (symlinks resolved, so a rule
cannot be dodged through another name) and becomes a *decision point*; the access at a
point is the IR's decision for the canonical path — and, when a rule named the path
through a symlink, never more than the IR's decision for that name either (a path reached
under several names gets the strictest of their accesses, with a warning).  Points are
mounted shallow → deep, so later (deeper) mounts cover earlier ones and the most specific
rule wins, as in the IR:

* ``/`` readable → ``--ro-bind / /``; otherwise a *minimal root*: bubblewrap's own empty
  tmpfs, into which only readable and writable points are bound, made read-only
  (``--remount-ro /``) and search-only (``--chmod 0111``) at the end.  Top-level
  symlinks a process needs to start (``/bin`` → ``usr/bin`` …) are recreated when their
  target is readable; every start path the policy leaves unreadable is warned about.
* a point whose access differs from its enclosing mount: ``--ro-bind`` (read),
  ``--bind`` (write), an empty read-only tmpfs (denied directory; mode ``0000``, or
  ``0111`` when a deeper point inside must stay reachable) or ``--ro-bind /dev/null``
  (denied file: bubblewrap mounts it ``nodev``, so opening it fails).
* **pins**: every directory between a writable mount and a protected mount inside it is
  bound onto itself (same access).  A mount point cannot be renamed or removed, so a
  sandboxed process cannot move ``.git`` aside and recreate an unprotected ``.git/hooks``.
* **protected paths that do not exist yet** under a writable mount: an empty read-only
  placeholder directory is mounted at the first missing component (mode ``0000`` for a
  denied path, ``0555`` otherwise), which stops the path from being created.  A missing
  git file that git reads as a file (``commondir``, ``config.worktree``, a user git config:
  a directory there makes git fail) gets a read-only *file* instead, holding what git
  assumes when it is missing (``.`` for ``commondir``, nothing for a config); it is in
  ``data["placeholder_files"]`` too, so that the runtime can create it with that content
  first (host git keeps working while the run lasts) and remove it afterwards.  bubblewrap
  creates the placeholder on the host; the list is in ``data["placeholders"]`` so that the
  runtime can remove what stays empty after the run.  When the first missing component
  is an ancestor of the protected path, the placeholder is stricter than the policy (the
  whole ancestor is read-only) and a warning says so.
* **symlinks that point out** need no special case: mounts sit at canonical paths and a
  symlink is resolved inside the sandbox, so it reaches exactly what its target allows.
* **globs** cannot be expressed by mounts.  They are expanded at compile time by a bounded
  walk of the trees an agent is most likely to reach — the workspace, the home directory
  and every writable rule path inside them (or ``glob_roots`` when given) — and each existing match
  becomes a point.  Files created later, and matches outside the walked trees, are
  protected only by the analyzer: every glob rule gets a warning saying so.  A walk that
  exceeds ``glob_walk_limit`` directories is an error (fail closed, never a silent gap).
  With the ``glob_per_run`` option (what ``stockade run`` compiles with), the workspace and
  every writable rule path inside it or the home directory are left out of that walk and named in ``data["glob_scan"]``
  (with the globs and the matches the walk found): the runtime scans them at the start of
  each run, package and cache directories included (:mod:`stockade.runtime.globscan`), and
  compiles the run's argv again with ``glob_matches`` (the paths it found, made points
  without any walk) and ``glob_hidden`` (directories it could not list, hidden whole).

**Network.**  Always ``--unshare-net``: the sandbox has a network namespace of its own,
whose loopback is the policy's ``localhost``.  bubblewrap cannot filter destinations, so
a policy that allows any (host rules, ``host-loopback:PORT``, ``default allow``, ``allow *``)
is enforced by ``stockade run``'s **network broker** (:mod:`stockade.runtime.broker`):
``data["broker"]`` says so and lists the ``host-loopback`` ports it serves.  Even a policy
that allows every destination goes through the broker, so that the host's loopback and
private ranges stay out of reach.  Compiled for another use (not ``by_runtime``), the argv
alone gives no network: a warning per allow rule (``B301``).
A network namespace does not hold every socket: a unix socket with a path
(``/run/docker.sock``) is reached through the filesystem, and a read-only mount does not
stop ``connect()`` to it.  So whenever the network is unshared, the argv's
**seccomp filter** (:mod:`stockade.backends.seccomp`, in every sandbox) also refuses
``socket(AF_UNIX | AF_VSOCK)`` and datagram ``socketpair()`` with ``EACCES``; stream
``socketpair()`` keeps working.  bubblewrap reads a filter from a file descriptor
(``--seccomp FD``), so the argv holds a placeholder word (``STOCKADE_SECCOMP_FD:<arch>:
<base64 program>``) that the runtime replaces with a descriptor it opens; bubblewrap
rejects the placeholder itself (``Invalid fd``), so the argv cannot run without the
filter by mistake.  The program is also in ``data["seccomp"]`` (base64, with
``data["seccomp_arch"]``).  The architecture is ``platform.machine()`` unless the
``seccomp_arch`` option names one; one without a filter is error ``B309``.

**Kernel interfaces.**  When Stockade runs as root, so does the command (with no
capabilities, but root owns the kernel's knobs): ``/proc/sys``, ``/proc/sysrq-trigger``,
``/proc/irq``, ``/proc/bus`` and ``/proc/fs`` are read-only mounts of their own, ``/sys``
is read-only (also under ``write /``), no rule makes a path below ``/proc`` or ``/sys``
writable, and ``/proc/kcore``, ``/proc/keys``, ``/proc/timer_list``, ``/sys/firmware`` and the
rest of Docker's masked paths are hidden (:data:`KERNEL_READONLY`, :data:`KERNEL_MASKED`;
warning ``B310`` when a rule said otherwise).  The seccomp filter (above) is in every
sandbox: its setuid-mode and keyring checks do not depend on the network.

**Process.**  New user (nested user namespaces disabled), pid, ipc, uts and cgroup
namespaces, every capability dropped, ``--die-with-parent``, ``--new-session``, a private
``/dev`` and ``/proc`` (unless a rule explicitly denies them) — with a ``memory`` limit,
``/dev/shm`` is a tmpfs of its own no larger than the limit — ``--chdir`` to the canonical
workspace.  **Environment**: ``--clearenv`` then ``--setenv`` for every variable the policy
keeps or sets from ``environ``; without ``environ``, only ``set`` variables and a minimal
``PATH``.

The argv ends with ``--``; the runtime appends the command.  Resource limits are not
enforced by bubblewrap (the runtime applies them).  The backend reads the filesystem
(existence, symlinks, glob walk) but never writes to it and never runs anything.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from stockade import catalogue as codes
from stockade.backends import paths as P
from stockade.backends import seccomp
from stockade.backends.base import RUNTIME, Artifact, Backend, Handling, handled
from stockade.compiler.git_paths import placeholder_content
from stockade.compiler.ir import ACCESS_RANK, FsRule, Network, Origin, PolicyIR
from stockade.compiler.query import GlobMatcher, glob_to_regex
from stockade.diagnostics import Diagnostic, StockadeError

#: What a dynamically linked process needs to start, checked in a minimal root.
START_PATHS: tuple[str, ...] = (
    "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
)
#: Pseudo filesystems bubblewrap creates fresh (they expose no host files).
PSEUDO_MOUNTS: dict[str, str] = {"/dev": "--dev", "/proc": "--proc"}
#: Kernel interfaces that stay read-only inside, whatever the policy says (Docker's
#: ``ReadonlyPaths``): as root, a writable ``/proc/sys/kernel/core_pattern`` is host root.
#: bubblewrap covers some of them itself, but skips ``/proc/sys`` (its directory is never
#: writable, only the files in it are).  ``/sys`` as a whole stays read-only too.
KERNEL_READONLY: tuple[str, ...] = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/sys")
#: Kernel interfaces hidden inside (Docker's ``MaskedPaths``): kernel memory, the keys the
#: caller can see, timers and scheduler state of the host, firmware tables.
KERNEL_MASKED: tuple[str, ...] = (
    "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
    "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
)
#: Shared memory in bubblewrap's /dev: sized by the ``memory`` limit.
SHM = "/dev/shm"
#: Not walked when expanding globs.
GLOB_SKIP: tuple[str, ...] = ("/proc", "/sys", "/dev")
#: Directories not descended into when expanding globs: version-control internals, package
#: trees and tool caches hold no user secrets, and walking them dominates compile time.
GLOB_SKIP_NAMES: frozenset[str] = frozenset({
    ".git", "node_modules", "__pycache__", ".cache", ".npm", ".yarn", ".pnpm-store", ".cargo", ".rustup",
    ".pyenv", ".rbenv", ".nvm", ".gradle", ".m2", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
    "site-packages", "dist-packages",
})
#: PATH inside the sandbox when no environment is given.
MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"
#: Default bound on the directories visited to expand globs.
GLOB_WALK_LIMIT = 100_000

NAMESPACE_ARGS: tuple[tuple[str, ...], ...] = (
    ("--unshare-user",), ("--disable-userns",), ("--unshare-ipc",), ("--unshare-pid",),
    ("--unshare-uts",), ("--unshare-cgroup-try",),
)
PROCESS_ARGS: tuple[tuple[str, ...], ...] = (("--die-with-parent",), ("--new-session",), ("--cap-drop", "ALL"))

_ENV_NAME = re.compile(r"[^=\x00]+\Z")


#: The files bound read-only over a missing git file (see ``git_paths.placeholder_content``),
#: shipped with stockade (read-only inside every sandbox), by content.
PLACEHOLDER_FILES: dict[str, str] = {".": "git-dot.placeholder", "": "git-empty.placeholder"}


def _placeholder_source(content: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), PLACEHOLDER_FILES[content])


def _min_access(*accesses: str) -> str:
    return min(accesses, key=ACCESS_RANK.__getitem__)


@dataclass(frozen=True, slots=True)
class Point:
    """A canonical path where the policy's access may change, and the rules behind it."""

    path: str
    access: str
    rules: tuple[FsRule, ...] = ()


@dataclass(frozen=True, slots=True)
class State:
    """What the sandbox shows at and below a point: its access and what backs it
    (``host`` bind, ``hidden`` empty tmpfs, ``masked`` file, ``pseudo`` fresh /dev or
    /proc), and the path of the mount that established it."""

    access: str
    backing: str
    root: str


@dataclass(frozen=True, slots=True)
class MountOp:
    """One filesystem operation of the argv, at ``dest``; ``perms`` precedes tmpfs."""

    args: tuple[str, ...]
    dest: str
    perms: str | None = None


@dataclass(frozen=True, slots=True)
class FsPlan:
    """The filesystem part of the argv, in order, and what bubblewrap creates on the host."""

    mounts: tuple[MountOp, ...]
    chmods: tuple[tuple[str, str], ...]
    remounts: tuple[str, ...]
    placeholders: tuple[str, ...]
    minimal_root: bool
    #: placeholders that are files (path → content), a subset of ``placeholders``
    placeholder_files: tuple[tuple[str, str], ...] = ()


class _FsPlanner:
    """Turns the filesystem rules of an IR into an :class:`FsPlan` (see the module doc)."""

    def __init__(self, backend: BwrapBackend):
        self.backend = backend
        self.ir: PolicyIR = backend.ir
        self.access: dict[str, str] = {}
        self.rules: dict[str, list[FsRule]] = {}
        self.mounts: list[MountOp] = []
        self.tmpfs_perms: dict[str, str] = {}
        self.remounts: list[str] = []
        self.chmods: dict[str, str] = {}
        self.placeholders: list[str] = []
        self.placeholder_files: dict[str, str] = {}
        self.state: dict[str, State] = {}
        self.mounted: set[str] = set()
        #: denied points of a run's glob matches: not pinned (see ``add_given``)
        self.unpinned: set[str] = set()

    # -- decision points ---------------------------------------------------------------

    def _ir_access(self, path: str) -> str:
        return self.ir.path_access(path).access

    def add_point(self, name: str, rule: FsRule | None) -> None:
        """Add the canonical form of ``name`` as a decision point."""
        path = P.canonical(name)
        access = self._ir_access(path)
        # a rule path reached under another name (a symlink, an unnormalised spelling):
        # never grant more than that name or the rule itself allows
        named = _min_access(self._ir_access(name), rule.access if rule else "write")
        if ACCESS_RANK[named] < ACCESS_RANK[access]:
            origin = rule.origin if rule else None
            self.backend.warn(f"`{name}` resolves to `{path}`; the stricter access `{named}` applies "
                              f"to `{path}` (the policy gives it `{access}`)", origin,
                              code=codes.SYMLINK_STRICTER_ACCESS)
            access = named
        self.access[path] = _min_access(access, self.access.get(path, access))
        if rule is not None:
            self.rules.setdefault(path, []).append(rule)

    def collect(self) -> None:
        """Collect every decision point: ``/``, literal rules, pseudo mounts, glob matches."""
        self.add_point("/", None)
        for rule in self.ir.filesystem:
            if not rule.is_glob:
                self.add_point(P.normalise(rule.pattern), rule)
        globs = [rule for rule in self.ir.filesystem if rule.is_glob]
        if globs:
            expander = _GlobExpander(self, globs)
            given = self.backend.options.get("glob_matches")
            if given is not None:
                expander.add_given(given, self.backend.options.get("glob_hidden") or ())
            else:
                expander.expand()
        self._kernel_interfaces()

    def _kernel_interfaces(self) -> None:
        """Make ``/proc`` and ``/sys`` no way to host-root power: no point below them is
        writable, :data:`KERNEL_READONLY` paths are read-only mounts of their own and
        :data:`KERNEL_MASKED` ones are hidden (when they exist and can be seen at all)."""
        def kernel(path: str) -> bool:
            return P.is_within(path, "/proc") or P.is_within(path, "/sys")

        for path, access in list(self.access.items()):
            if access == "write" and kernel(path):
                self.backend.warn(f"`{path}` is a kernel interface: it is read-only inside the sandbox "
                                  f"(the policy gives it `write`)", self._origin(path),
                                  code=codes.KERNEL_OR_CONTEXT_PATH)
                self.access[path] = "read"
        proc = self.ir.path_access("/proc")
        proc_mounted = not (proc.access == "none" and proc.rule is not None)  # see plan(): a fresh procfs
        for path in KERNEL_READONLY:
            if path == "/sys":
                # only `/` can hold /sys writable: its bind is recursive
                if self.access["/"] == "write" and "/sys" not in self.access and os.path.isdir("/sys"):
                    self.backend.warn("`/sys` is a kernel interface: it is read-only inside the sandbox "
                                      "(the policy gives it `write` through `/`)", self._origin("/"),
                                      code=codes.KERNEL_OR_CONTEXT_PATH)
                    self.access["/sys"] = "read"
            elif proc_mounted and os.path.lexists(path):
                self.access[path] = _min_access("read", self.access.get(path, "read"))
        for path in KERNEL_MASKED:
            if (proc_mounted or not P.is_within(path, "/proc")) and os.path.lexists(path):
                for point, access in list(self.access.items()):
                    if P.is_within(point, path) and access != "none":
                        self.backend.warn(f"`{point}` is a kernel interface hidden inside the sandbox "
                                          f"(the policy gives it `{access}`)", self._origin(point),
                                          code=codes.KERNEL_OR_CONTEXT_PATH)
                        self.access[point] = "none"
                self.access[path] = "none"

    # -- planning ------------------------------------------------------------------------

    def plan(self) -> FsPlan:
        """Walk the points shallow → deep and emit the mounts that realise them."""
        root_access = self.access["/"]
        minimal = root_access == "none"
        if root_access == "read":
            self._mount(("--ro-bind", "/", "/"), "/")
        elif root_access == "write":
            self._mount(("--bind", "/", "/"), "/")
        self.state["/"] = State(root_access, "hidden" if minimal else "host", "/")
        if minimal:
            self.chmods["/"] = "0111"
            self.remounts.append("/")
        for pseudo, option in PSEUDO_MOUNTS.items():
            decision = self.ir.path_access(pseudo)
            if decision.access == "none" and decision.rule is not None:
                self.access.setdefault(pseudo, "none")  # explicitly denied: a normal point
                continue
            self._mount((option, pseudo), pseudo)
            self.state[pseudo] = State("pseudo", "pseudo", pseudo)
            self.access.pop(pseudo, None)
            memory = self.ir.limit("memory")
            if pseudo == "/dev" and memory is not None and not any(P.is_within(p, SHM) for p in self.access):
                # bubblewrap's /dev/shm is a directory of its /dev tmpfs, as large as half the
                # machine's memory: give it a tmpfs of its own, no larger than `memory`
                self._mount(("--perms", "1777", "--size", str(max(int(memory), 4096)), "--tmpfs", SHM), SHM)
        for path in sorted(self.access, key=P.order_key):
            if path != "/" and path not in self.state:
                self._plan_point(path)
        if minimal:
            self._start_paths()
        mounts = sorted(self.mounts, key=lambda op: P.order_key(op.dest))  # stable: ties keep order
        return FsPlan(
            mounts=tuple(MountOp(op.args, op.dest, self.tmpfs_perms.get(op.dest) if op.args[0] == "--tmpfs" else None)
                         for op in mounts),
            chmods=tuple(sorted(self.chmods.items(), key=lambda item: P.order_key(item[0]), reverse=True)),
            remounts=tuple(sorted(set(self.remounts), key=P.order_key, reverse=True)),
            placeholders=tuple(self.placeholders),
            minimal_root=minimal,
            placeholder_files=tuple(sorted(self.placeholder_files.items())),
        )

    def _origin(self, path: str) -> Origin | None:
        rules = self.rules.get(path)
        return rules[0].origin if rules else None

    def _mount(self, args: tuple[str, ...], dest: str) -> None:
        self.mounts.append(MountOp(args, dest))
        self.mounted.add(dest)

    def _hide(self, path: str, perms: str) -> None:
        self._mount(("--tmpfs", path), path)
        self.tmpfs_perms[path] = perms
        self.remounts.append(path)

    def _parent_state(self, path: str) -> State:
        parent = P.nearest(path, self.state)
        assert parent is not None  # "/" is always in the state
        return self.state[parent]

    def _reach_into_hidden(self, state: State, dest: str) -> None:
        """A mount inside a hidden tmpfs: make the tmpfs and the directories bubblewrap
        creates on the way traversable but not listable."""
        if state.root in self.tmpfs_perms:
            self.tmpfs_perms[state.root] = "0111"
        for ancestor in P.ancestors(dest):
            if ancestor == state.root or not P.is_within(ancestor, state.root):
                break
            self.chmods.setdefault(ancestor, "0111")

    def _pin(self, state: State, dest: str) -> None:
        """Bind every directory between a writable mount and ``dest`` onto itself."""
        for ancestor in P.ancestors(dest):
            if ancestor == state.root or not P.is_within(ancestor, state.root):
                break
            if ancestor not in self.mounted:
                # `-try`: a directory removed between compile and run needs no pin
                self._mount(("--bind-try", ancestor, ancestor), ancestor)

    def _plan_point(self, path: str) -> None:
        access = self.access[path]
        parent = self._parent_state(path)
        exists = os.path.lexists(path)
        if parent.backing == "masked" or (parent.backing == "pseudo" and not exists):
            self.state[path] = parent
            return
        if parent.backing == "hidden":
            if access == "none" or not exists:
                if access == "write" and not exists:
                    self._warn_missing_grant(path)
                self.state[path] = parent
                return
            self._bind(path, access)
            self._reach_into_hidden(parent, path)
            return
        if access == parent.access:
            self.state[path] = parent
            return
        if exists:
            if access == "none":
                if os.path.isdir(path):
                    self._hide(path, "0000")
                    self.state[path] = State("none", "hidden", path)
                else:
                    self._mount(("--ro-bind", "/dev/null", path), path)
                    self.state[path] = State("none", "masked", path)
            else:
                self._bind(path, access)
            if parent.access == "write" and parent.backing == "host" and path not in self.unpinned:
                self._pin(parent, path)
            return
        if parent.access == "write" and parent.backing == "host":
            self._placeholder(path, access, parent)
        elif access == "write":
            self._warn_missing_grant(path)
            self.state[path] = parent
        else:
            self.state[path] = State(_min_access(access, parent.access), parent.backing, parent.root)

    def _bind(self, path: str, access: str) -> None:
        self._mount(("--ro-bind" if access == "read" else "--bind", path, path), path)
        self.state[path] = State(access, "host", path)

    def _placeholder(self, path: str, access: str, parent: State) -> None:
        top = path
        for ancestor in P.ancestors(path):
            if os.path.lexists(ancestor):
                break
            top = ancestor
        content = placeholder_content(path, self.rules.get(path, ())) if top == path and access == "read" else None
        if content is not None:
            # a git file git reads as a file (`commondir`, `config.worktree`, a user config):
            # an empty directory there makes git fail, so a read-only file holding what git
            # assumes when it is missing is mounted instead (git_paths.placeholder_content)
            if top not in self.placeholders:
                self._mount(("--ro-bind", _placeholder_source(content), top), top)
                self.placeholders.append(top)
                self.placeholder_files[top] = content
                self._pin(parent, top)
                self.backend.warn(f"read-only git file `{path}` does not exist; a read-only file git reads as "
                                  f"missing is mounted there (`stockade run` creates it with that content first "
                                  f"and removes it afterwards; run by hand, bubblewrap leaves an empty file on "
                                  f"the host, which git may refuse: remove it after the run)",
                                  self._origin(path), code=codes.MISSING_PATH)
            self.state[top] = State("read", "host", top)
            return
        if top not in self.placeholders:
            perms = "0000" if top == path and access == "none" else "0555"
            self._hide(top, perms)
            self.placeholders.append(top)
            self._pin(parent, top)
            self.state[top] = State("read" if perms == "0555" else "none", "hidden", top)
        what = "denied" if access == "none" else "read-only"
        if top == path:
            message = (f"{what} path `{path}` does not exist; an empty read-only directory is mounted there "
                       f"to stop its creation (bubblewrap leaves it on the host)")
        else:
            message = (f"{what} path `{path}` does not exist; its missing ancestor `{top}` is mounted as an "
                       f"empty read-only directory (stricter than the policy; bubblewrap leaves it on the host)")
        self.backend.warn(message, self._origin(path), code=codes.MISSING_PATH)
        self.state[path] = self.state[top]

    def _warn_missing_grant(self, path: str) -> None:
        self.backend.warn(f"`{path}` does not exist and its parent is not writable inside the sandbox, "
                          f"so it cannot be created there", self._origin(path), code=codes.MISSING_PATH)

    def _start_paths(self) -> None:
        """In a minimal root: recreate start symlinks whose target is readable; warn about
        every start path the policy leaves unreadable."""
        for path in START_PATHS:
            if not os.path.lexists(path):
                continue
            target = P.canonical(path)
            readable = self._ir_access(target) != "none"
            if os.path.islink(path) and readable and path not in self.access:
                state = self._parent_state(path)
                if state.backing == "hidden":
                    self._mount(("--symlink", os.readlink(path), path), path)
                    self._reach_into_hidden(state, path)
            if not readable:
                self.backend.warn(f"`{path}` is not readable under the policy; programs may fail to start "
                                  f"in the minimal root", None, code=codes.START_PATH_UNREADABLE)


def _last_component_regex(pattern: str) -> GlobMatcher:
    """What an entry's name must match to be a candidate for ``pattern`` (``.*`` when the
    glob ends in ``**``, which matches names at any depth)."""
    last = pattern.rsplit("/", 1)[-1]
    if "**" in last:
        return re.compile(".*", re.DOTALL)
    return glob_to_regex(last)


class _GlobExpander:
    """Bounded walk that turns existing matches of glob rules into decision points."""

    def __init__(self, planner: _FsPlanner, globs: list[FsRule]):
        self.planner = planner
        self.globs = [(rule, glob_to_regex(P.normalise(rule.pattern)), P.glob_prefix(P.normalise(rule.pattern)),
                       _last_component_regex(P.normalise(rule.pattern)))
                      for rule in globs]
        options = planner.backend.options
        self.limit: int = int(options.get("glob_walk_limit") or GLOB_WALK_LIMIT)
        roots = options.get("glob_roots")
        if roots is None:
            # the workspace, the home directory and the writable trees inside them; shared
            # temporary directories are left out: other users' files come and go there
            # between compile and run, and a mount whose source vanished fails the run
            ctx = planner.ir.context
            roots = [ctx.workspace, ctx.home]
            roots += [r.pattern for r in planner.ir.filesystem if r.kind == "write" and not r.is_glob
                      and (P.is_within(r.pattern, ctx.workspace) or P.is_within(r.pattern, ctx.home))]
        self.roots = P.outermost(P.canonical(P.normalise(r)) for r in roots if r)
        self.visited = 0
        #: ``glob_per_run``: the runtime masks the matches under these roots at each run's
        #: start (:mod:`stockade.runtime.globscan`); the walk here leaves them out
        self.run_roots: list[str] = []
        if options.get("glob_per_run"):
            # the workspace and the writable trees inside it or the home directory; shared
            # temporary directories stay out here too: scanning a shared /tmp (tens of
            # thousands of directories other programs leave) at every start would cost
            # several times the run itself, and their later files are warned about (B304)
            ctx = planner.ir.context
            writable = [r.pattern for r in planner.ir.filesystem if r.kind == "write" and not r.is_glob
                        and (P.is_within(r.pattern, ctx.workspace) or P.is_within(r.pattern, ctx.home))]
            canonical = (P.canonical(P.normalise(path)) for path in [ctx.workspace, *writable] if path)
            self.run_roots = [r for r in P.outermost(canonical) if r not in GLOB_SKIP]
        self.static: list[str] = []
        self.skip_roots: set[str] = set()

    def _starts(self, roots: list[str]) -> list[str]:
        starts: set[str] = set()
        for _, _, prefix, _ in self.globs:
            for root in roots:
                if P.is_within(root, prefix):
                    starts.add(root)
                elif P.is_within(prefix, root):
                    starts.add(prefix)
        return P.outermost(starts)

    def add_given(self, paths: Iterable[str], hidden: Iterable[str]) -> None:
        """``glob_matches``: the matches a run's scan found (and those found when its plan
        was compiled) become points, without walking; ``glob_hidden``: directories the scan
        could not list, hidden whole (stricter than the policy)."""
        planner = self.planner
        for path in paths:
            if not os.path.lexists(path):
                continue  # gone since the scan: nothing to mask (never a placeholder on the host)
            for rule, regex, prefix, _ in self.globs:
                if P.is_within(path, prefix) and regex.match(path):
                    planner.add_point(path, rule)
        # a denied match needs no pins: a mount follows its directory when that is renamed,
        # so the content stays masked, and a file created at the old name is the sandbox's
        # own; pinning every directory above every match costs a mount each (bubblewrap's
        # set-up time grows faster than the number of mounts)
        for path, access in planner.access.items():
            rules = planner.rules.get(path)
            if access == "none" and rules and all(rule.is_glob for rule in rules):
                planner.unpinned.add(path)
        for path in hidden:
            canonical = P.canonical(path)
            self.planner.access[canonical] = "none"
            self.planner.backend.warn(f"`{path}` cannot be listed, so the glob rules cannot be checked inside it; "
                                      f"it is hidden (stricter than the policy)", self.globs[0][0].origin,
                                      code=codes.GLOB_ENFORCED_ON_MATCHES)

    def expand(self) -> None:
        run_starts = self._starts(self.run_roots)
        starts_list = [s for s in self._starts(self.roots) if os.path.isdir(s) and not os.path.islink(s)
                       and not any(P.is_within(s, r) for r in run_starts)]
        self.skip_roots = set(run_starts)
        matches: dict[FsRule, int] = {rule: 0 for rule, _, _, _ in self.globs}
        for start in starts_list:
            if not self._walk(start, matches):
                for rule, _, _, _ in self.globs:
                    self.planner.backend.unsupported_rule(
                        f"glob `{rule.source_text or rule.pattern}` cannot be expanded: more than "
                        f"{self.limit} directories under `{start}`", rule.origin,
                        help="narrow the glob, or raise the `glob_walk_limit` option",
                        code=codes.GLOB_ENFORCED_ON_MATCHES)
                return
        walked = ", ".join(f"`{s}`" for s in starts_list) or "nothing"
        if self.run_roots:
            self.planner.backend.glob_scan = {
                "patterns": [P.normalise(rule.pattern) for rule, _, _, _ in self.globs],
                "rules": [rule.source_text or rule.pattern for rule, _, _, _ in self.globs],
                "roots": run_starts, "static": self.static}
            scanned = ", ".join(f"`{s}`" for s in run_starts) or "nothing"
            for rule, _, _, _ in self.globs:
                self.planner.backend.warn(
                    f"bubblewrap cannot express the glob `{rule.source_text or rule.pattern}`: `stockade run` masks "
                    f"its matches under {scanned} at the start of each run; under {walked} its {matches[rule]} "
                    f"match(es) existing when the plan was compiled are masked (package and cache directories "
                    f"there are not walked); files created there later, or elsewhere, that match it are protected "
                    f"only by the analyzer", rule.origin, code=codes.GLOB_ENFORCED_ON_MATCHES)
            return
        for rule, _, _, _ in self.globs:
            self.planner.backend.warn(
                f"bubblewrap cannot express the glob `{rule.source_text or rule.pattern}`: its {matches[rule]} "
                f"existing match(es) under {walked} are mounted as the rule says; files created later or "
                f"elsewhere (including inside version-control, package and cache directories, which are "
                f"not walked) that match it are protected only by the analyzer", rule.origin,
                code=codes.GLOB_ENFORCED_ON_MATCHES)

    def _walk(self, start: str, matches: dict[FsRule, int]) -> bool:
        stack = [start]
        while stack:
            directory = stack.pop()
            self.visited += 1
            if self.visited > self.limit:
                return False
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                for rule, regex, prefix, last in self.globs:
                    # the last component first: one cheap test rejects almost every entry
                    if last.match(entry.name) and P.is_within(entry.path, prefix) and regex.match(entry.path):
                        matches[rule] += 1
                        self.planner.add_point(entry.path, rule)
                        if self.run_roots and (not self.static or self.static[-1] != entry.path):
                            self.static.append(entry.path)
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if is_dir and entry.path not in GLOB_SKIP and entry.name not in GLOB_SKIP_NAMES \
                        and entry.path not in self.skip_roots:
                    stack.append(entry.path)
        return True


class BwrapBackend(Backend):
    """Compile a policy IR to a bubblewrap argv (see the module docstring)."""

    name: ClassVar[str] = "bwrap"
    #: filesystem: mounts (globs expanded at compile time or per run, with a warning);
    #: network: all or none (host allow-lists and loopback-only become none, with a warning;
    #: a seccomp filter blocks unix sockets); environment: ``--clearenv`` / ``--setenv``;
    #: limits: applied by ``stockade run`` (rlimits, cgroups, timeout, output cap, ``disk``),
    #: the argv only sizes ``/dev/shm``; commands and verdicts: judged by ``stockade run``.
    SECTIONS: ClassVar[dict[str, Handling]] = {
        "filesystem": handled("plan_filesystem"), "network": handled("render_network"),
        "environment": handled("environment"), "limits": RUNTIME, "commands": RUNTIME, "session": RUNTIME, "verdicts": RUNTIME,
    }

    RENDERERS: ClassVar[dict[type, str]] = {Network: "render_network"}

    def __init__(self, ir: PolicyIR, environ: Mapping[str, str] | None = None, **options: Any):
        super().__init__(ir, **options)
        self.environ = environ
        #: with the ``glob_per_run`` option: what the runtime scans at each run's start
        self.glob_scan: dict[str, Any] | None = None
        #: when the policy allows some destinations: what the run's network broker serves
        #: (``{"loopback": [ports], "ports": [ports]}``: the ``host-loopback`` grants and the
        #: ports the other ``allow`` rules name), else None
        self.broker: dict[str, Any] | None = None

    # -- pieces ----------------------------------------------------------------------------

    def _workspace(self) -> str:
        raw = self.ir.context.workspace
        try:
            workspace = P.canonical(P.normalise(raw))
        except P.BadPath as exc:
            raise StockadeError(Diagnostic(codes.BAD_WORKSPACE, f"invalid workspace: {exc}")) from None
        if not os.path.isdir(workspace):
            raise StockadeError(Diagnostic(
                codes.BAD_WORKSPACE, f"workspace `{raw}` does not exist or is not a directory",
                help="create it, or pass an existing directory with --workspace"))
        return workspace

    def plan_filesystem(self) -> FsPlan | None:
        """The mounts for the filesystem rules, or None when some rule cannot be expressed."""
        if not self._check_rules():
            return None
        planner = _FsPlanner(self)
        planner.collect()
        if self.unsupported:
            return None
        return planner.plan()

    def _check_rules(self) -> bool:
        ok = True
        for rule in self.ir.filesystem:
            try:
                P.check_path(rule.pattern)
            except P.BadPath as exc:
                self.unsupported_rule(f"cannot express filesystem rule: {exc}", rule.origin,
                                      code=codes.UNREPRESENTABLE_VALUE)
                ok = False
        return ok

    def render_network(self, network: Network) -> list[tuple[str, ...]]:
        """Always ``--unshare-net``: the sandbox's network namespace is its own.  A policy
        that allows some destinations (or all of them: the host's loopback and the LAN stay
        out) gets the run's network broker (``self.broker``: ``stockade run`` starts it);
        compiled for another use, each rule the argv alone cannot enforce is warned about."""
        denies = [r for r in network.rules if r.action == "deny"]
        loopback = sorted({r.host.port for r in network.rules
                           if r.action == "allow" and r.host.kind == "host-loopback" and r.host.port is not None})
        reaching = [r for r in network.rules if r.action == "allow" and r.host.kind != "localhost"]
        if network.default == "allow" or reaching:
            # ports: those the `allow` rules name (captured for clients that ignore the proxy)
            ports = sorted({r.host.port for r in reaching if r.host.port is not None and r.host.kind != "host-loopback"})
            self.broker = {"loopback": loopback, **({"ports": ports} if ports else {})}
        if self.by_runtime:
            return [("--unshare-net",)]
        if network.default == "allow":
            self.warn("bubblewrap cannot filter destinations: the policy allows network"
                      + (f" except {len(denies)} denied destination(s)" if denies else "")
                      + "; `stockade run` enforces it with its network broker (the host's loopback and private "
                      "ranges stay out), this argv alone gives the sandbox no network", network.default_origin,
                      code=codes.APPROXIMATED_RULE)
        for rule in network.rules:
            if rule.action != "allow":
                continue
            if rule.host.kind == "localhost":
                self.warn(f"`allow {rule.host}` reaches only the sandbox's own loopback, not the host's "
                          "(the host's is `host-loopback:PORT`)", rule.origin, code=codes.APPROXIMATED_RULE)
            else:
                self.warn(f"`allow {rule.host}` is enforced by the network broker of `stockade run`; "
                          f"this argv alone gives the sandbox no network", rule.origin, code=codes.APPROXIMATED_RULE)
        return [("--unshare-net",)]

    def environment(self) -> dict[str, str]:
        """The environment set inside the sandbox."""
        if self.environ is not None:
            env = self.ir.filter_environment(self.environ)
        else:
            env = {r.name: r.value or "" for r in self.ir.environment if r.action == "set"}
            env.setdefault("PATH", MINIMAL_PATH)
            keeps = [r for r in self.ir.environment if r.action == "keep"]
            if keeps and not self.by_runtime:  # (the runtime hands the filtered environment itself)
                self.warn(f"compiled without an environment to keep from: {', '.join(f'`keep {r.name}`' for r in keeps)}"
                          f" keep nothing; the sandbox gets only the `set` variables and `PATH={env['PATH']}`",
                          keeps[0].origin, code=codes.APPROXIMATED_RULE)
        clean: dict[str, str] = {}
        for name, value in sorted(env.items()):
            if not _ENV_NAME.match(name) or "\x00" in value:
                origin = next((r.origin for r in self.ir.environment if r.name == name), None)
                self.unsupported_rule(f"cannot set environment variable `{name!r}`: invalid name or value",
                                      origin, code=codes.UNREPRESENTABLE_VALUE)
                continue
            clean[name] = value
        return clean

    # -- the driver -------------------------------------------------------------------------

    def render(self) -> Artifact:
        """Build the argv groups, the environment, and the artifact."""
        workspace = self._workspace()
        plan = self.plan_filesystem()
        if plan is None:
            return Artifact(self.name, "", {})
        groups: list[tuple[str, ...]] = [*NAMESPACE_ARGS]
        groups += self.dispatch(self.ir.network) or []
        groups += PROCESS_ARGS
        # every sandbox gets the filter (setuid modes, keyrings); its socket checks go with
        # every policy short of all network, which cannot do without them
        sockets = ("--unshare-net",) in groups
        if not sockets and self.options.get("as_root", os.geteuid() == 0):
            # as root, host unix sockets are host root (/run/docker.sock, systemd's private
            # socket, the system bus trust uid 0): refused even with all network allowed
            sockets = True
            net = self.ir.network
            origin = net.default_origin if net.default == "allow" else next(
                (r.origin for r in net.rules if r.action == "allow" and r.host.kind == "any"), None)
            self.warn("running as root: host unix sockets stay refused although the policy allows all network "
                      "(sockets such as `/run/docker.sock` trust uid 0, which is host root)", origin,
                      code=codes.ROOT_KEEPS_SOCKETS_REFUSED,
                      help="run stockade as a normal user to let the command reach host unix sockets")
        arch = seccomp.supported_arch(self.options.get("seccomp_arch"))
        if arch is None and sockets:
            seccomp.arch_name(self.options.get("seccomp_arch"))  # raises B309
        if arch is None:
            machine = self.options.get("seccomp_arch") or os.uname().machine
            self.warn(f"no seccomp filter for the architecture `{machine}`: inside the sandbox, files can be "
                      f"made setuid/setgid and the caller's keyrings are reachable", None, code=codes.NO_SECCOMP_FILTER)
        else:
            groups.append(("--seccomp", seccomp.placeholder(arch, sockets)))
        for op in plan.mounts:
            if op.perms is not None:
                groups.append(("--perms", op.perms, *op.args))
            else:
                groups.append(op.args)
        groups += [("--chmod", mode, path) for path, mode in plan.chmods]
        groups += [("--remount-ro", path) for path in plan.remounts]
        env = self.environment()
        groups.append(("--clearenv",))
        groups += [("--setenv", name, value) for name, value in env.items()]
        chdir = workspace
        if self.ir.path_access(workspace).access == "none":
            self.warn(f"the workspace `{workspace}` is not readable under the policy; the sandbox starts in `/`",
                      None, code=codes.MISSING_PATH)
            chdir = "/"
        groups.append(("--chdir", chdir))
        groups.append(("--",))
        argv = ["bwrap", *(arg for group in groups for arg in group)]
        data = {
            "argv": argv,
            "env": env,
            "placeholders": list(plan.placeholders),
            "placeholder_files": dict(plan.placeholder_files),
            "minimal_root": plan.minimal_root,
            "unshare_net": "--unshare-net" in argv,
            "broker": self.broker,
            "seccomp": seccomp.encoded_program(arch, sockets) if arch else None,
            "seccomp_arch": arch,
            "warnings": [w.to_json() for w in self.warnings],
        }
        if self.glob_scan is not None:
            data["glob_scan"] = self.glob_scan
        return Artifact(self.name, render_text(self.ir.name, groups), data)


def render_text(policy_name: str, groups: Iterable[tuple[str, ...]]) -> str:
    """The argv as a readable shell command: one option (with its arguments) per line;
    when it has a seccomp placeholder, comment lines say how to supply the filter."""
    name = policy_name.replace("\n", " ").replace("\r", " ")
    items = list(groups)
    lines = [f"# bubblewrap sandbox for policy `{name}`; append the command after --"]
    word = next((group[1] for group in items if group[0] == "--seccomp"), None)
    if word is not None:
        encoded = word.rsplit(":", 1)[1]
        lines += [
            "# the word after --seccomp stands for a file descriptor holding the seccomp filter (setuid",
            "# modes, keyrings, host unix sockets); bwrap refuses it as it is. `stockade run` supplies it;",
            "# by hand (bash): replace that word with 3 and start the command with",
            f"#   3< <(printf %s '{encoded}' | base64 -d) bwrap ...",
        ]
    lines.append("bwrap \\")
    for i, group in enumerate(items):
        end = "" if i == len(items) - 1 else " \\"
        lines.append("  " + " ".join(shlex.quote(arg) for arg in group) + end)
    return "\n".join(lines) + "\n"
