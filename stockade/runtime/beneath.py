"""Filesystem access beneath a directory that never follows a symlink.

Everything a sandboxed command can write (the workspace, a preview's upper dir) is hostile
to the host side: a directory may be swapped for a symlink to ``~/.ssh`` at any moment.
:class:`Tree` opens its root once (``O_DIRECTORY|O_NOFOLLOW``) and reaches every entry by
walking the components of a relative path from that root, each opened with
``O_NOFOLLOW|O_DIRECTORY``, and then acting on the last component with ``dir_fd=`` (no
follow).  A symlink anywhere on the way is an error (``ELOOP`` or ``ENOTDIR``), never a
detour.  Files are opened ``O_NOFOLLOW|O_NONBLOCK`` and must be regular (a fifo cannot
block the host).  Relative paths are checked: no absolute path, no empty, ``.`` or ``..``
component.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterator

#: Flags of every directory opened on the way.
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Flags of a regular file opened for reading.
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def split(rel: str) -> list[str]:
    """The components of a relative path (ValueError for an absolute path, or an empty,
    ``.`` or ``..`` component, or a NUL byte)."""
    if not rel:
        return []
    parts = rel.split("/")
    if rel.startswith("/") or "\0" in rel or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a plain relative path: {rel!r}")
    return parts


def open_dir_at(root_fd: int, parts: list[str]) -> int:
    """A new descriptor of the directory ``parts`` below ``root_fd``, walked without
    following symlinks (OSError ``ELOOP``/``ENOTDIR``/``ENOENT`` otherwise)."""
    fd = os.open(".", DIR_FLAGS, dir_fd=root_fd)
    for part in parts:
        try:
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    return fd


class Tree:
    """A directory tree read without following symlinks (see the module docstring)."""

    def __init__(self, root: str):
        self.root = root
        self.fd = os.open(root, DIR_FLAGS)

    def close(self) -> None:
        """Close the root descriptor."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def parent(self, rel: str) -> tuple[int, str]:
        """A new descriptor of the directory holding ``rel``, and ``rel``'s last name."""
        parts = split(rel)
        if not parts:
            raise ValueError("the root itself has no parent")
        return open_dir_at(self.fd, parts[:-1]), parts[-1]

    def open_dir(self, rel: str) -> int:
        """A new descriptor of the directory ``rel``."""
        return open_dir_at(self.fd, split(rel))

    def lstat(self, rel: str) -> os.stat_result | None:
        """The entry's own status (None when it, or a directory on the way, is missing or not
        a directory)."""
        if not rel:
            return os.fstat(self.fd)
        try:
            pfd, name = self.parent(rel)
        except OSError:
            return None
        try:
            return os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except OSError:
            return None
        finally:
            os.close(pfd)

    def listdir(self, rel: str) -> list[str]:
        """The sorted names in directory ``rel``."""
        fd = self.open_dir(rel)
        try:
            return sorted(os.listdir(fd))
        finally:
            os.close(fd)

    def open_file(self, rel: str) -> int:
        """A read-only descriptor of the regular file ``rel`` (OSError otherwise)."""
        pfd, name = self.parent(rel)
        try:
            return open_file_at(pfd, name)
        finally:
            os.close(pfd)

    def read(self, rel: str, limit: int | None = None) -> bytes | None:
        """The bytes of regular file ``rel`` (None when it is larger than ``limit``)."""
        fd = self.open_file(rel)
        try:
            if limit is not None and os.fstat(fd).st_size > limit:
                return None
            chunks: list[bytes] = []
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
        finally:
            os.close(fd)

    def blocks(self, rel: str) -> Iterator[bytes]:
        """The bytes of regular file ``rel``, in blocks."""
        fd = self.open_file(rel)
        try:
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return
                yield chunk
        finally:
            os.close(fd)

    def readlink(self, rel: str) -> str:
        """The target of symlink ``rel`` (never followed)."""
        pfd, name = self.parent(rel)
        try:
            return os.readlink(name, dir_fd=pfd)
        finally:
            os.close(pfd)

    def xattr(self, rel: str, attr: str) -> bytes | None:
        """Extended attribute ``attr`` of entry ``rel`` itself (None if absent)."""
        try:
            pfd, name = self.parent(rel)
        except OSError:
            return None
        try:
            return xattr_at(pfd, name, attr)
        finally:
            os.close(pfd)


def open_file_at(dir_fd: int, name: str) -> int:
    """A read-only descriptor of regular file ``name`` in ``dir_fd`` (never following a
    symlink, never blocking on a fifo; OSError for anything else)."""
    fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"not a regular file: {name!r}")
    return fd


def xattr_at(dir_fd: int, name: str, attr: str) -> bytes | None:
    """Extended attribute ``attr`` of entry ``name`` in ``dir_fd`` itself (never followed;
    None if absent or unreadable)."""
    try:
        return os.getxattr(f"/proc/self/fd/{dir_fd}/{name}", attr, follow_symlinks=False)
    except OSError:
        return None
