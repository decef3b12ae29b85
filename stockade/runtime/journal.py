"""A session's file journal: every change with its pre-image, a diff, and ``revert``.

What a session changes in its workspace is journaled before it reaches the files:

* through ``stockade run --session ID``, the run is a preview (an overlay over the
  workspace) and the preview's upper directory names exactly what the command changed;
  the pre-images of those paths are kept before the changes are applied;
* through the hook, an allowed ``Write``/``Edit``/``MultiEdit``/``NotebookEdit`` keeps the
  file's pre-image before the tool runs (``PreToolUse``) and its new content's hash after
  (``PostToolUse``).

The first change of a path keeps its state before the session (a file's bytes and mode,
a symlink's target, or "absent"); each later change only updates the state the session
left (the post-image hash).  ``stockade session diff`` shows pre-image against the files
now; :func:`revert` restores exactly the journaled paths to their pre-session state, and
refuses (and lists) every path whose content is no longer what the session left — someone
else changed it since.

Budgets: files are hashed up to 64 MiB (then their size and change times stand for the
rest); a pre-image larger than ``STOCKADE_JOURNAL_FILE_MAX`` bytes (default 16 MiB), or
past ``STOCKADE_JOURNAL_MAX`` bytes for the whole session (default 512 MiB), is not kept:
the path is journaled as ``unkept`` and revert lists it instead of restoring it.  Binary
files are kept like any other; the diff says "binary files differ" for them.

Workspace files are hostile (the sandbox wrote them): they are read and written only
through :mod:`stockade.runtime.beneath` (no symlink followed, fifos never opened) and only
below the workspace; the journal itself is in the session's state directory.
"""

from __future__ import annotations

import difflib
import errno
import hashlib
import json
import os
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stockade import catalogue as codes
from stockade.runtime import beneath

DEFAULT_FILE_MAX = 16 * 1024 * 1024
#: Bytes of a file hashed; past them its size and change times are hashed too (the hook must
#: answer quickly, whatever the size of a file).
HASH_LIMIT = 64 * 1024 * 1024
DEFAULT_TOTAL_MAX = 512 * 1024 * 1024


def _budget(name: str, default: int, environ: Mapping[str, str] | None) -> int:
    env = os.environ if environ is None else environ
    try:
        return max(0, int(env.get(name, default)))
    except ValueError:
        return default


@dataclass(frozen=True)
class Snapshot:
    """A path's state: ``absent``, ``file`` (``sha256``, ``mode``, ``data`` when read),
    ``symlink`` (``target``), ``dir``, ``other`` (a device, fifo or socket) or ``unkept``."""

    kind: str
    sha256: str | None = None
    mode: int | None = None
    target: str | None = None
    data: bytes | None = field(default=None, repr=False)
    size: int = 0

    def key(self) -> tuple[Any, ...]:
        """What must be equal for two snapshots to be the same state."""
        return (self.kind, self.sha256, self.target)


def _split_rel(workspace: str, path: str) -> list[str] | None:
    """The components of ``path`` below ``workspace`` (None: not below it)."""
    path = os.path.normpath(os.path.join(workspace, path))
    if path == workspace or not path.startswith(workspace.rstrip("/") + "/"):
        return None
    try:
        return beneath.split(os.path.relpath(path, workspace))
    except ValueError:
        return None


def snapshot(workspace: str, rel: str, keep_data: bool = True, max_bytes: int = DEFAULT_FILE_MAX) -> Snapshot:
    """The state of ``rel`` below ``workspace``, read without following any symlink; a
    parent that is a symlink or not a directory makes the path ``other`` (never followed)."""
    parts = beneath.split(rel)
    try:
        root = os.open(workspace, beneath.DIR_FLAGS)
    except OSError:
        return Snapshot("absent")
    try:
        try:
            dir_fd = beneath.open_dir_at(root, parts[:-1])
        except FileNotFoundError:
            return Snapshot("absent")
        except OSError:  # a symlink or a file on the way: nothing below it is the session's
            return Snapshot("other")
        try:
            name = parts[-1]
            try:
                st = os.lstat(name, dir_fd=dir_fd)
            except FileNotFoundError:
                return Snapshot("absent")
            if stat.S_ISLNK(st.st_mode):
                return Snapshot("symlink", target=os.readlink(name, dir_fd=dir_fd))
            if stat.S_ISDIR(st.st_mode):
                return Snapshot("dir", mode=stat.S_IMODE(st.st_mode))
            if not stat.S_ISREG(st.st_mode):
                return Snapshot("other")
            fd = beneath.open_file_at(dir_fd, name)
            with os.fdopen(fd, "rb") as handle:
                digest = hashlib.sha256()
                chunks: list[bytes] = []
                size = 0
                while size < HASH_LIMIT:
                    chunk = handle.read(1 << 20)
                    if not chunk:
                        break
                    size += len(chunk)
                    digest.update(chunk)
                    if keep_data and size <= max_bytes:
                        chunks.append(chunk)
                done = os.fstat(handle.fileno())
                if size >= HASH_LIMIT:  # a huge file: its first bytes, size and change time stand for it
                    digest.update(f"\0{done.st_size}:{done.st_mtime_ns}:{done.st_ctime_ns}".encode())
                    size = done.st_size
                data = b"".join(chunks) if keep_data and size <= max_bytes else None
                return Snapshot("file", digest.hexdigest(), stat.S_IMODE(st.st_mode), data=data, size=size)
        finally:
            os.close(dir_fd)
    finally:
        os.close(root)


class Journal:
    """The journal of one session (``<session dir>/journal``)."""

    def __init__(self, session_dir: str, environ: Mapping[str, str] | None = None):
        self.directory = os.path.join(session_dir, "journal")
        self.index = os.path.join(self.directory, "index.json")
        self.blobs = os.path.join(self.directory, "blobs")
        self.file_max = _budget("STOCKADE_JOURNAL_FILE_MAX", DEFAULT_FILE_MAX, environ)
        self.total_max = _budget("STOCKADE_JOURNAL_MAX", DEFAULT_TOTAL_MAX, environ)

    # the index: {"entries": {abs path: {...}}, "order": [abs path, ...], "bytes": N}
    def load(self) -> dict[str, Any]:
        """The index (empty when there is none)."""
        try:
            fd = os.open(self.index, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return {"entries": {}, "order": [], "bytes": 0}
        with os.fdopen(fd, "rb") as handle:
            data = json.loads(handle.read().decode("utf-8", "surrogateescape"))
        return data if isinstance(data, dict) else {"entries": {}, "order": [], "bytes": 0}

    def save(self, data: dict[str, Any]) -> None:
        """Write the index atomically."""
        from stockade.runtime.sessions import write_json

        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        write_json(self.index, data)

    def _keep_blob(self, data: bytes, digest: str) -> None:
        os.makedirs(self.blobs, mode=0o700, exist_ok=True)
        path = os.path.join(self.blobs, digest)
        if os.path.exists(path):
            return
        temp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)

    def blob(self, digest: str) -> bytes:
        """A kept pre-image's bytes."""
        with open(os.path.join(self.blobs, os.path.basename(digest)), "rb") as handle:
            return handle.read()

    def before(self, workspace: str, paths: Iterable[str], step: int, source: str) -> list[str]:
        """Keep the pre-image of each path (absolute, or relative to ``workspace``) that has
        none yet; returns the paths journaled (paths outside the workspace are skipped)."""
        data = self.load()
        entries: dict[str, Any] = data.setdefault("entries", {})
        order: list[str] = data.setdefault("order", [])
        done = []
        for path in paths:
            parts = _split_rel(workspace, path)
            if parts is None:
                continue
            rel = "/".join(parts)
            absolute = os.path.join(workspace, rel)
            if absolute in entries:
                entries[absolute]["steps"].append(step)
                done.append(absolute)
                continue
            snap = snapshot(workspace, rel, True, self.file_max)
            pre: dict[str, Any] = {"kind": snap.kind, "sha256": snap.sha256, "mode": snap.mode,
                                   "target": snap.target, "size": snap.size}
            if snap.kind == "file":
                if snap.data is None or data.get("bytes", 0) + snap.size > self.total_max:
                    pre = {"kind": "unkept", "sha256": snap.sha256, "size": snap.size,
                           "why": "over the journal's size budget"}
                else:
                    self._keep_blob(snap.data, str(snap.sha256))
                    data["bytes"] = data.get("bytes", 0) + snap.size
            entries[absolute] = {"workspace": workspace, "rel": rel, "pre": pre, "post": None, "source": source,
                                 "first_step": step, "steps": [step], "time": time.time(), "reverted": False}
            order.append(absolute)
            done.append(absolute)
        self.save(data)
        return done

    def after(self, workspace: str, paths: Iterable[str]) -> None:
        """Record the state the session left at each journaled path (its post-image)."""
        data = self.load()
        entries = data.get("entries", {})
        for path in paths:
            parts = _split_rel(workspace, path)
            if parts is None:
                continue
            absolute = os.path.join(workspace, "/".join(parts))
            entry = entries.get(absolute)
            if entry is None:
                continue
            snap = snapshot(workspace, entry["rel"], keep_data=False)
            entry["post"] = {"kind": snap.kind, "sha256": snap.sha256, "target": snap.target}
            entry["reverted"] = False
        self.save(data)

    def changes(self) -> list[dict[str, Any]]:
        """Every journaled path, in the order first changed."""
        data = self.load()
        entries = data.get("entries", {})
        return [{"path": p, **entries[p]} for p in data.get("order", []) if p in entries]

    def diff(self) -> str:
        """A unified diff of each journaled path: its pre-session state against the file now."""
        out: list[str] = []
        for change in self.changes():
            workspace, rel, pre = change["workspace"], change["rel"], change["pre"]
            now = snapshot(workspace, rel, True, self.file_max)
            old = self.blob(pre["sha256"]) if pre["kind"] == "file" else None
            if pre["kind"] == "unkept":
                out.append(f"--- a/{rel}\n+++ b/{rel}\n(pre-image not kept: {pre.get('why')})\n")
                continue
            if (pre["kind"], pre.get("sha256"), pre.get("target")) == now.key():
                continue
            new = now.data if now.kind == "file" else None
            if (old is not None and b"\0" in old) or (new is not None and b"\0" in new):
                out.append(f"Binary files a/{rel} and b/{rel} differ\n")
                continue
            if pre["kind"] == "symlink" or now.kind == "symlink":
                out.append(f"--- a/{rel}\n+++ b/{rel}\n-symlink {pre.get('target')}\n+{now.kind} {now.target or ''}\n")
                continue
            a = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
            b = (new or b"").decode("utf-8", "replace").splitlines(keepends=True)
            fromfile = "/dev/null" if pre["kind"] == "absent" else f"a/{rel}"
            tofile = "/dev/null" if now.kind == "absent" else f"b/{rel}"
            out.extend(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                       for line in difflib.unified_diff(a, b, fromfile, tofile))
        return "".join(out)


@dataclass
class RevertResult:
    """What :func:`revert` restored, and what it refused with the reason."""

    restored: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"restored": self.restored,
                "refused": [{"path": p, "why": w, "code": codes.REVERT_REFUSED} for p, w in self.refused],
                "unchanged": self.unchanged}


def revert(journal: Journal, dry_run: bool = False) -> RevertResult:
    """Restore every journaled path whose state is still what the session left to its
    pre-session state, newest change first; refuse the others (see the module docstring)."""
    result = RevertResult()
    data = journal.load()
    entries = data.get("entries", {})
    for path in reversed(data.get("order", [])):
        entry = entries.get(path)
        if entry is None or entry.get("reverted"):
            continue
        workspace, rel, pre, post = entry["workspace"], entry["rel"], entry["pre"], entry["post"]
        now = snapshot(workspace, rel, keep_data=False)
        if (pre["kind"], pre.get("sha256"), pre.get("target")) == now.key():
            result.unchanged.append(path)
            entry["reverted"] = True
            continue
        if pre["kind"] == "unkept":
            result.refused.append((path, f"its pre-image was not kept ({pre.get('why')})"))
            continue
        if post is None:
            result.refused.append((path, "the journal has no record of what the session left there "
                                         "(register the hook for `PostToolUse` too)"))
            continue
        if (post["kind"], post.get("sha256"), post.get("target")) != now.key():
            result.refused.append((path, "changed since the session changed it (by someone else)"))
            continue
        if dry_run:
            result.restored.append(path)
            continue
        try:
            _restore(journal, workspace, rel, pre, now)
        except OSError as exc:
            result.refused.append((path, f"cannot restore it: {exc.strerror or exc}"))
            continue
        entry["reverted"] = True
        result.restored.append(path)
    if not dry_run:
        journal.save(data)
    return result


def _restore(journal: Journal, workspace: str, rel: str, pre: Mapping[str, Any], now: Snapshot) -> None:
    parts = beneath.split(rel)
    root = os.open(workspace, beneath.DIR_FLAGS)
    try:
        dir_fd = _open_parents(root, parts[:-1], create=pre["kind"] != "absent")
        if dir_fd is None:
            return  # the parent is gone, and so is the path: nothing to remove
        try:
            name = parts[-1]
            if pre["kind"] == "absent":
                if now.kind == "dir":
                    os.rmdir(name, dir_fd=dir_fd)  # only an empty directory the session made
                elif now.kind != "absent":
                    os.unlink(name, dir_fd=dir_fd)
                return
            if pre["kind"] == "dir":
                if now.kind != "dir":
                    if now.kind != "absent":
                        os.unlink(name, dir_fd=dir_fd)
                    os.mkdir(name, pre.get("mode") or 0o755, dir_fd=dir_fd)
                return
            temp = f".stockade-revert-{os.getpid()}-{name}"[:240]
            if pre["kind"] == "symlink":
                os.symlink(pre["target"], temp, dir_fd=dir_fd)
            else:
                content = journal.blob(pre["sha256"])
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             pre.get("mode") or 0o644, dir_fd=dir_fd)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(content)
                    os.fchmod(handle.fileno(), pre.get("mode") or 0o644)
            if now.kind == "dir":
                os.rmdir(name, dir_fd=dir_fd)
            os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
    finally:
        os.close(root)


def _open_parents(root: int, parts: list[str], create: bool) -> int | None:
    """The directory ``parts`` below ``root``, made where missing when ``create``; a
    symlink on the way is an error (ELOOP/ENOTDIR), never followed."""
    fd = os.open(".", beneath.DIR_FLAGS, dir_fd=root)
    for part in parts:
        try:
            child = os.open(part, beneath.DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                os.close(fd)
                return None
            try:
                os.mkdir(part, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            try:
                child = os.open(part, beneath.DIR_FLAGS, dir_fd=fd)
            except OSError:
                os.close(fd)
                raise
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise OSError(exc.errno, "a symlink or file is in the way") from None
            raise
        os.close(fd)
        fd = child
    return fd
