"""Regular expressions compiled on first use.

A cold ``stockade analyze -- CMD`` imports every tool model, but one command uses few of
them: compiling every model's patterns at import would cost milliseconds that most runs
never use.  :class:`LazyPattern` stands in for a compiled pattern and compiles it when a
method is first called.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    def LazyPattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
        """To type checkers, a lazy pattern is the compiled pattern it stands for."""
        ...
else:
    #: the methods a pattern's first use stores in slots of the same names
    _METHODS = ("findall", "finditer", "fullmatch", "match", "search", "split", "sub", "subn")

    class LazyPattern:
        """A :class:`re.Pattern` compiled on first use (``match``, ``search``, ``finditer``, …).

        The first use also stores the compiled pattern's common methods in slots of their
        names, so later calls find them there without going through :meth:`__getattr__`."""

        __slots__ = ("_compiled", "_flags", "_pattern", *_METHODS)

        def __init__(self, pattern: str, flags: int = 0):
            self._pattern = pattern
            self._flags = flags
            self._compiled: re.Pattern[str] | None = None

        def __getattr__(self, name: str) -> object:
            compiled = self._compiled
            if compiled is None:
                compiled = self._compiled = re.compile(self._pattern, self._flags)
                for method in _METHODS:
                    object.__setattr__(self, method, getattr(compiled, method))
            return getattr(compiled, name)

        def __repr__(self) -> str:
            return f"LazyPattern({self._pattern!r}, {self._flags!r})"
