"""Load a policy file and its includes into layers, lowest layer first.

``include "x.policy"`` is relative to the including file.  A file included twice (a
diamond) is one layer; an include cycle is an error that shows the whole chain; a missing
include points at the ``include`` line.  The built-in default policy lives in the package.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources

from stockade import catalogue as codes
from stockade.diagnostics import DiagnosticSink, Related
from stockade.policy_lang import parse
from stockade.policy_lang.ast import Include, PolicyFile

#: The name under which the built-in default policy is reported.
BUILTIN_DEFAULT = "<builtin>/default.policy"
MAX_INCLUDE_DEPTH = 32
#: The largest policy file read (a bigger one is refused, not read to the end).
MAX_POLICY_BYTES = 4 * 2**20


@dataclass(frozen=True)
class LoadedFile:
    """One parsed policy file of the include stack."""

    path: str
    text: str
    ast: PolicyFile


def builtin_default_text() -> str:
    """The text of the built-in default policy."""
    return resources.files("stockade.compiler").joinpath("builtin/default.policy").read_text(encoding="utf-8")


def _display(path: str) -> str:
    if path.startswith("<"):
        return path
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return relative if not relative.startswith("..") else path


class NotARegularFile(OSError):
    """A path that is not a regular file (``what`` says what it is)."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


class FileTooLarge(OSError):
    """A file larger than the limit (``size`` bytes)."""

    def __init__(self, size: int):
        super().__init__(size)
        self.size = size


def _read_policy_file(path: str) -> str:
    """The text of a policy file: a regular file of at most :data:`MAX_POLICY_BYTES` (a device,
    FIFO or socket is refused before it is read, so `/dev/zero` or a FIFO never hangs)."""
    return read_regular_file(path, MAX_POLICY_BYTES).decode("utf-8")


def read_regular_file(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Raises :class:`IsADirectoryError`, :class:`NotARegularFile` (a device, FIFO or socket:
    refused before it is read, so `/dev/zero` or a FIFO never hangs), :class:`FileTooLarge`
    or :class:`OSError`.
    """
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0
    if mode and stat.S_ISDIR(mode):
        raise IsADirectoryError(path)
    if mode and not stat.S_ISREG(mode):
        raise NotARegularFile(_kind_of(mode))
    descriptor = os.open(path, flags)  # non-blocking: a FIFO swapped in after the stat does not hang
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(_kind_of(info.st_mode))
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(max(info.st_size, len(data)))
    return data


def _kind_of(mode: int) -> str:
    import stat

    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


class _Loader:
    def __init__(self, sink: DiagnosticSink):
        self.sink = sink
        self.loaded: dict[str, LoadedFile | None] = {}
        self.order: list[LoadedFile] = []

    def read(self, path: str, include: Include | None) -> str | None:
        if path == BUILTIN_DEFAULT:
            return builtin_default_text()
        try:
            return _read_policy_file(path)
        except NotARegularFile as exc:
            self.sink.error(codes.UNREADABLE_POLICY, f"`{_display(path)}` is {exc.what}, not a policy file",
                            include.span if include else None, "a policy is a regular text file")
        except FileTooLarge as exc:
            self.sink.error(codes.UNREADABLE_POLICY, f"`{_display(path)}` is larger than {MAX_POLICY_BYTES // 2**20} "
                            f"MiB ({exc.size} bytes)", include.span if include else None,
                            "a policy is a small text file: split it or include the right file")
        except FileNotFoundError:
            message = f"policy file `{_display(path)}` not found"
            help_text = "paths in `include` are relative to the including file" if include else None
            self.sink.error(codes.POLICY_NOT_FOUND, message, include.span if include else None, help_text)
        except IsADirectoryError:
            self.sink.error(codes.POLICY_NOT_FOUND, f"`{_display(path)}` is a directory, not a policy file",
                            include.span if include else None)
        except UnicodeDecodeError as exc:
            self.sink.error(codes.UNREADABLE_POLICY, f"`{_display(path)}` is not UTF-8 text (byte {exc.start})",
                            include.span if include else None)
        except OSError as exc:
            self.sink.error(codes.UNREADABLE_POLICY, f"cannot read `{_display(path)}`: {exc.strerror or exc}",
                            include.span if include else None)
        return None

    def visit(self, path: str, include: Include | None, ancestors: list[tuple[str, Include | None]],
              text: str | None = None) -> None:
        """Load ``path`` (reached through ``include``) below its ``ancestors`` (file, include)."""
        stack = [p for p, _ in ancestors]
        if path in stack:
            cycle = ancestors[stack.index(path):] + [(path, include)]
            start = os.path.dirname(cycle[0][0])
            names = " → ".join(os.path.relpath(p, start) for p, _ in cycle)
            related = tuple(Related(f"`{_display(p)}` is included here", inc.span)
                            for p, inc in cycle[1:-1] if inc is not None and inc.span is not None)
            self.sink.error(codes.INCLUDE_CYCLE, f"include cycle: {names}", include.span if include else None,
                            "a policy cannot include itself, directly or through other files", related)
            return
        if path in self.loaded:
            return
        if len(ancestors) >= MAX_INCLUDE_DEPTH:
            self.sink.error(codes.INCLUDE_CYCLE, f"includes nested deeper than {MAX_INCLUDE_DEPTH} files",
                            include.span if include else None)
            return
        self.loaded[path] = None
        if text is None:
            text = self.read(path, include)
            if text is None:
                return
        display = _display(path)
        self.sink.sources[display] = text
        ast, diagnostics = parse(text, display)
        self.sink.extend(diagnostics)
        if ast is None:
            return
        if path.startswith("<builtin>"):
            base = str(resources.files("stockade.compiler").joinpath("builtin"))
        else:
            base = os.path.dirname(path)
        for child in ast.includes:
            child_path = os.path.normpath(os.path.join(base, os.path.expanduser(child.path)))
            self.visit(child_path, child, ancestors + [(path, include)])
        loaded = LoadedFile(display, text, ast)
        self.loaded[path] = loaded
        self.order.append(loaded)


def load_layers(path: str | None, text: str | None, sink: DiagnosticSink) -> list[LoadedFile]:
    """Parse a policy and everything it includes; the list is ordered lowest layer first."""
    loader = _Loader(sink)
    if text is not None:
        root = os.path.abspath(path) if path else os.path.abspath("<policy>")
        loader.visit(root, None, [], text)
    elif path is not None:
        loader.visit(os.path.abspath(path), None, [])
    else:
        loader.visit(BUILTIN_DEFAULT, None, [], builtin_default_text())
    return loader.order
