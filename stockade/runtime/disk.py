"""The ``disk`` limit: what a run may leave written outside the workspace.

Under ``limits { disk SIZE }`` every path the sandbox may write outside the workspace —
``/tmp``, ``$TMPDIR``, a ``write ~/.cache`` — is, for the run, an overlay: the host
directory is the read-only lower layer and the upper layer is one private tmpfs of
``SIZE`` bytes shared by all of them.  The sandbox sees the host's files there and may
create, change and delete files as the policy allows, but every change lands in the
tmpfs, which is discarded with the run: **nothing written outside the workspace under a
``disk`` limit persists after the run**, and writing more than ``SIZE`` in all fails with
``ENOSPC`` ("No space left on device").  Deleting a host file there hides it for the run
only.  The workspace itself is not limited and is written directly (a writable path that
contains the workspace — ``write ~`` with the workspace under it — is overlaid, and the real
workspace is bound back over it).  A writable *file* outside the workspace (not a
directory) becomes read-only for the run.  The compiler warns about each write rule this
affects (``C245``).

How: before bubblewrap starts (after the preview's overlay, if any), the pre-exec helper
(:mod:`stockade.runtime.prexec`, a fresh process: nothing runs between fork and exec)
enters a new mount namespace (and, for a normal user, a user namespace mapping only its
own ids) in which the tmpfs and the overlays are mounted; bubblewrap is exec'd in it, so
its binds of those paths take the overlays, and the namespace — with the tmpfs — goes
away with the last process of the run.  This module plans the layer (:func:`disk_pre_exec`,
in the parent); the helper mounts it.  The host is never written and no host-side cleanup is needed.
A writable ``/`` cannot be overlaid this way: such a run is refused (``R545``).  The
tmpfs's pages are charged to the run's memory cgroup too.
"""

from __future__ import annotations

import os
import stat
import sys

from stockade import catalogue as codes

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

#: bwrap options that make a host path writable inside the sandbox (source, destination).
_WRITABLE_BINDS = frozenset({"--bind", "--bind-try", "--dev-bind", "--dev-bind-try"})


def _inside(path: str, directory: str) -> bool:
    return path == directory or directory == "/" or path.startswith(directory.rstrip("/") + "/")


def writable_roots(prefix: Sequence[str], workspace: str) -> list[str]:
    """The outermost host paths a bwrap prefix binds writable outside ``workspace``."""
    sources: list[str] = []
    i = 0
    while i < len(prefix):
        word = prefix[i]
        if word == "--":
            break
        if word in _WRITABLE_BINDS and i + 2 < len(prefix):
            source = prefix[i + 1]
            if not _inside(source, workspace):
                sources.append(source)
            i += 3
            continue
        i += 1
    roots: list[str] = []
    for source in sorted(set(sources), key=len):
        if not any(_inside(source, root) for root in roots):
            roots.append(source)
    return roots


def disk_pre_exec(prefix: Sequence[str], workspace: str, limit: int,
                  before: Sequence[tuple[object, ...]] | None = None) -> tuple[tuple[object, ...], ...]:
    """The pre-exec steps of a run with a ``disk`` limit: ``before`` (the preview's overlay),
    then the ``disk`` layer over every writable path of ``prefix`` outside ``workspace`` (see
    the module docstring; mounted by :func:`stockade.runtime.prexec.disk`).  Raises ``R545``
    here, in the parent, when the limit cannot be enforced (``/`` is writable)."""
    from stockade.runtime.sandbox import _error

    steps = tuple(before or ())
    if not prefix or os.path.basename(prefix[0]) != "bwrap" or not sys.platform.startswith("linux"):
        raise _error(codes.DISK_LIMIT_UNENFORCEABLE,
                     "the `disk` limit is enforced only on linux with bubblewrap; the command did not run",
                     help="remove the `disk` limit on this platform")
    workspace = os.path.realpath(workspace)
    roots = writable_roots(prefix, workspace)
    if "/" in roots:
        raise _error(codes.DISK_LIMIT_UNENFORCEABLE,
                     "the `disk` limit cannot be enforced while `/` is writable; the command did not run",
                     help="grant write on the workspace and the paths that need it, not on `/`")
    directories: list[str] = []
    files: list[str] = []
    for root in roots:
        try:
            mode = os.lstat(root).st_mode
        except OSError:
            continue  # bubblewrap reports a missing source itself
        if stat.S_ISLNK(mode):  # the plan named a directory or file: this is not what was compiled
            raise _error(codes.DISK_LIMIT_UNENFORCEABLE,
                         f"cannot set up the `disk` layer: `{root}` is a symlink now; the command did not run",
                         help="run again (the plan is recompiled when a path changes kind)")
        (directories if stat.S_ISDIR(mode) else files).append(root)
    covered = any(_inside(workspace, root) for root in directories)  # the workspace is bound back
    if not directories and not files:
        return steps
    return (*steps, ("disk", directories, files, workspace, covered, limit, os.getuid(), os.getgid()))
