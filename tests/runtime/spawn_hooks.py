"""Functions the pre-exec helper calls in tests (a ``("call", "module:function", args)``
step of :mod:`stockade.runtime.prexec`): they run in the helper, after the limits are set
and before the mounts and the exec."""

from __future__ import annotations

import os


def refuse(message: str) -> None:
    """Fail the way a refused mount would."""
    raise RuntimeError(message)


def swap_for_symlink(path: str, target: str) -> None:
    """Replace the directory ``path`` with a symlink to ``target`` (the window between the
    parent's checks and the mounts)."""
    os.rmdir(path)
    os.symlink(target, path)
