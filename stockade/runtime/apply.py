"""Apply a preview's changes to the workspace, all or nothing, with a journal.

1. **Stage**: every new or changed entry of the upper dir (files, symlinks, whole new or
   replaced directories, with permissions and mtimes) is copied into
   ``WORKSPACE/.stockade-apply/new/<n>``, on the workspace's own filesystem so that the
   later renames are atomic.
2. **Journal**: ``.stockade-apply/journal.json`` lists every operation (``replace``,
   ``delete``, ``chmod`` with the old mode) and is written atomically and fsynced, in state
   ``applying``.
3. **Switch**: each operation moves the old entry (if any) to ``old/<n>`` and renames the
   staged one into place — renames only, no partial writes.
4. **Commit**: the journal turns to ``done``; the staging directory is removed.

:func:`recover` finishes or undoes an interrupted apply: no journal → the staging dir is
discarded (the workspace was never touched); ``applying`` → every operation is rolled back
in reverse; ``done`` → only the clean-up remains.  ``stockade run`` calls it before a
preview, so a crash (kill -9, power loss) never leaves the workspace half-written.
Hard links in the upper dir are applied as separate files.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from typing import Any

from stockade.diagnostics import Diagnostic, StockadeError
from stockade.runtime.preview import walk_upper

STAGE_NAME = ".stockade-apply"

# indirection so tests can simulate a crash between renames
_rename = os.rename


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_journal(stage: str, journal: dict[str, Any]) -> None:
    path = os.path.join(stage, "journal.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(journal, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(stage)


def _copy_entry(source: str, target: str) -> None:
    st = os.lstat(source)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(source), target)
    elif stat.S_ISDIR(st.st_mode):
        os.mkdir(target, 0o700)
        from stockade.runtime.preview import is_whiteout

        for name in sorted(os.listdir(source)):
            child = os.path.join(source, name)
            if is_whiteout(child):
                continue
            _copy_entry(child, os.path.join(target, name))
        os.chmod(target, stat.S_IMODE(st.st_mode))
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif stat.S_ISREG(st.st_mode):
        shutil.copyfile(source, target, follow_symlinks=False)
        with open(target, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(target, stat.S_IMODE(st.st_mode))
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        raise StockadeError(Diagnostic("R523", f"cannot apply `{target}`: not a file, directory or symlink"))


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def apply_changes(workspace: str, upper: str, exclude: frozenset[str] = frozenset()) -> int:
    """Apply the upper dir of a preview to ``workspace``; returns the number of
    operations.  ``exclude`` names workspace-relative paths to leave alone (the sandbox
    tool's own placeholders).  Raises R522 if another apply is unfinished."""
    workspace = os.path.realpath(workspace)
    recover(workspace)
    ops = [(op, path, detail) for op, path, detail in walk_upper(workspace, upper)
           if op != "unsupported" and path.split("/", 1)[0] != STAGE_NAME and path not in exclude]
    if not ops:
        return 0
    stage = os.path.join(workspace, STAGE_NAME)
    try:
        os.mkdir(stage, 0o700)
    except FileExistsError:
        raise StockadeError(Diagnostic("R522", f"`{stage}` already exists; another apply may be running",
                                       help="remove it if no other stockade is applying changes")) from None
    os.mkdir(os.path.join(stage, "new"))
    os.mkdir(os.path.join(stage, "old"))
    journal: dict[str, Any] = {"state": "staging", "ops": []}
    try:
        for number, (op, path, detail) in enumerate(ops):
            entry: dict[str, Any] = {"op": op, "path": path, "n": number}
            if op == "replace":
                _copy_entry(os.path.join(upper, path), os.path.join(stage, "new", str(number)))
            elif op == "chmod":
                entry["old_mode"] = stat.S_IMODE(os.lstat(os.path.join(workspace, path)).st_mode)
                entry["new_mode"] = int(str(detail), 8)
            journal["ops"].append(entry)
        _fsync_dir(os.path.join(stage, "new"))
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)  # nothing was touched yet
        raise
    journal["state"] = "applying"
    _write_journal(stage, journal)
    for entry in journal["ops"]:
        _do(workspace, stage, entry)
    journal["state"] = "done"
    _write_journal(stage, journal)
    shutil.rmtree(stage, ignore_errors=True)
    return len(ops)


def _do(workspace: str, stage: str, entry: dict[str, Any]) -> None:
    target = os.path.join(workspace, entry["path"])
    new = os.path.join(stage, "new", str(entry["n"]))
    old = os.path.join(stage, "old", str(entry["n"]))
    if entry["op"] == "chmod":
        os.chmod(target, entry["new_mode"])
        return
    if os.path.lexists(target):
        _rename(target, old)
    if entry["op"] == "replace":
        _rename(new, target)


def _undo(workspace: str, stage: str, entry: dict[str, Any]) -> None:
    target = os.path.join(workspace, entry["path"])
    new = os.path.join(stage, "new", str(entry["n"]))
    old = os.path.join(stage, "old", str(entry["n"]))
    if entry["op"] == "chmod":
        if os.path.lexists(target):
            os.chmod(target, entry["old_mode"])
        return
    if entry["op"] == "replace" and not os.path.lexists(new) and os.path.lexists(target):
        os.rename(target, new)  # the staged entry had been moved in: take it out again
    if os.path.lexists(old):
        if os.path.lexists(target):
            _remove(target)
        os.rename(old, target)


def recover(workspace: str) -> str | None:
    """Finish or undo an interrupted apply in ``workspace``; returns what was done
    (``discarded``, ``rolled back``, ``completed``) or None if there was nothing."""
    stage = os.path.join(os.path.realpath(workspace), STAGE_NAME)
    if not os.path.isdir(stage) or os.path.islink(stage):
        return None
    try:
        with open(os.path.join(stage, "journal.json"), encoding="utf-8") as handle:
            journal = json.load(handle)
    except (OSError, ValueError):
        journal = None
    if journal is None or journal.get("state") == "staging":
        shutil.rmtree(stage)
        return "discarded"
    if journal.get("state") == "applying":
        for entry in reversed(journal.get("ops", [])):
            _undo(os.path.realpath(workspace), stage, entry)
        shutil.rmtree(stage)
        return "rolled back"
    shutil.rmtree(stage)
    return "completed"
