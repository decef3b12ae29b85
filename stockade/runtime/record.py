"""Small immutable records for the run path, without importing :mod:`dataclasses`.

``stockade run`` is started once per agent command, so its hot path avoids the
``dataclasses`` machinery (importing it pulls in ``inspect``, and creating each class
execs generated code: together several milliseconds).  :class:`Record` gives what the
runtime used from frozen dataclasses: a keyword/positional constructor over the
annotated fields (in order, base classes first), defaults from the class body,
per-instance defaults from :attr:`Record._factories`, value equality and hashing, a
``repr`` (fields listed in :attr:`Record._hidden` left out), immutability (assignment
raises :class:`FrozenRecordError`, an ``AttributeError`` like dataclasses'
``FrozenInstanceError``), and :meth:`Record.replace`::

    class Point(Record):
        x: int
        y: int = 0

    p = Point(1)
    p.replace(y=2)        # Point(x=1, y=2)
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable
    from typing import Any, ClassVar


class FrozenRecordError(AttributeError):
    """Raised when a field of a :class:`Record` is assigned or deleted."""


class Record:
    """Base class of an immutable record; see the module docstring."""

    #: The fields, in constructor order (computed for each subclass).
    _fields: ClassVar[tuple[str, ...]] = ()
    #: Field name → zero-argument factory for a fresh default (like ``default_factory``).
    _factories: ClassVar[dict[str, Callable[[], Any]]] = {}
    #: Fields left out of ``repr``.
    _hidden: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names: list[str] = []
        for klass in reversed(cls.__mro__):
            for name, hint in vars(klass).get("__annotations__", {}).items():
                if name.startswith("_") or "ClassVar" in str(hint) or name in names:
                    continue
                names.append(name)
        cls._fields = tuple(names)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} arguments, {len(args)} given")
        values = dict(zip(fields, args, strict=False))  # the rest by keyword or default
        for name in fields[len(args):]:
            if name in kwargs:
                values[name] = kwargs.pop(name)
            elif name in self._factories:
                values[name] = self._factories[name]()
            elif hasattr(type(self), name):
                values[name] = getattr(type(self), name)
            else:
                raise TypeError(f"{type(self).__name__}() missing the argument `{name}`")
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got unexpected arguments: {', '.join(sorted(kwargs))}")
        self.__dict__.update(values)

    def _values(self) -> tuple[Any, ...]:
        return tuple(self.__dict__[name] for name in self._fields)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenRecordError(f"cannot assign to field `{name}` of an immutable {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise FrozenRecordError(f"cannot delete field `{name}` of an immutable {type(self).__name__}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={self.__dict__[name]!r}" for name in self._fields if name not in self._hidden)
        return f"{type(self).__name__}({shown})"

    def replace(self, **changes: Any) -> Any:
        """A copy with some fields changed (like ``dataclasses.replace``)."""
        values = {name: self.__dict__[name] for name in self._fields}
        values.update(changes)
        return type(self)(**values)
