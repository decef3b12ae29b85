"""Stub for `_signal`, the C module behind `signal` (typeshed has none): the parts Stockade uses."""

from collections.abc import Callable
from types import FrameType
from typing import Any

_Handler = Callable[[int, FrameType | None], Any] | int | None

SIG_DFL: int
SIG_IGN: int
SIGABRT: int
SIGBUS: int
SIGINT: int
SIGKILL: int
SIGPIPE: int
SIGSEGV: int
SIGTERM: int
SIGXCPU: int
SIGXFSZ: int

def signal(signalnum: int, handler: _Handler, /) -> _Handler: ...
