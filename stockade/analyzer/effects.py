"""What an executed command does, as immutable records with the span that caused them.

Spans are ``(start, end)`` character offsets into the analysed command text (``end``
exclusive).  Paths are as resolved by the walker: absolute when the script determines
them, containing :data:`UNKNOWN` where it does not.

The records are :class:`TupleRecord` classes — tuples with named fields, like
:func:`collections.namedtuple` but written out: a command creates several, a tuple is
several times cheaper to build than a frozen dataclass, and a plain class statement costs
next to nothing at import, where ``@dataclass(frozen=True)`` compiles six generated methods
per class on every start (``typing.NamedTuple`` needs :mod:`typing`, and ``namedtuple``
execs generated code for every class; ``benchmarks/README.md``, *Records re-measured*, has
the figures).  Equality and hashing include the record's kind: a ``Read`` and a ``Write``
of the same path and span are different values.
"""

from __future__ import annotations

from os import urandom as _urandom

try:
    from _collections import _tuplegetter  # namedtuple's field accessor (C)
except ImportError:  # pragma: no cover - not CPython
    from operator import itemgetter

    def _tuplegetter(index: int, doc: str) -> property:  # type: ignore[no-redef]
        return property(itemgetter(index), doc=doc)

#: Marks a part of a word whose value the script does not determine.
UNKNOWN = "\x00"
#: An unknown part known to be plain text: no ``/``, no glob character, no leading ``.`` or
#: ``-``, never empty (``$(date +%F)``).  Unknown like any other part to everything but the
#: judge, which reads a path made of known text and such parts as the glob with ``*`` in their
#: place: the names in a known directory that it could be.  Every such marker is UNKNOWN,
#: :data:`PLAIN_MARK`, a kind letter and a token drawn when the process starts (so that no
#: text, ``"$X"$'\x02'``, can spell one), then :data:`PLAIN_MARK` again.
PLAIN_MARK = "\x02"
_TOKEN = _urandom(8).hex()
UNKNOWN_NAME = UNKNOWN + PLAIN_MARK + "n" + _TOKEN + PLAIN_MARK
#: A plain name that may also be empty (``$(git rev-parse --short HEAD)`` outside a repository,
#: ``%p`` in a locale without AM/PM): as a whole path component, the path may be its parent.
UNKNOWN_NAME_OR_EMPTY = UNKNOWN + PLAIN_MARK + "e" + _TOKEN + PLAIN_MARK
#: An unknown part known to be a decimal number (``$(nproc)``, ``$(id -u)``, a coprocess's
#: descriptors ``${COPROC[1]}``): a plain name to the judge, a descriptor after ``>&``.
UNKNOWN_NUMBER = UNKNOWN + PLAIN_MARK + "d" + _TOKEN + PLAIN_MARK
#: The process id of a job this command put in the background (``$!`` after ``cmd &``, a
#: coprocess's ``NAME_PID``): a number to the judge, and to the tracers that attach to a process
#: (:mod:`~stockade.analyzer.models.attach`) and ``kill`` the command's own child, whose code is
#: judged where it was started.
CHILD_PID = UNKNOWN + PLAIN_MARK + "j" + _TOKEN + PLAIN_MARK
#: A git ref name (``$(git branch --show-current)``, ``$(git describe)``): components joined by
#: ``/``, none empty, none starting with ``.``, no ``..``, no glob character (git's rules for ref
#: names) — or nothing; judged as the names below a directory it could be (``**/*``, or the
#: directory itself).
REF_NAME = UNKNOWN + PLAIN_MARK + "r" + _TOKEN + PLAIN_MARK

SpanT = tuple[int, int]

_tuple_new = tuple.__new__


class TupleRecord(tuple):
    """An immutable record: a tuple whose items are named by the class's ``_fields``.

    A subclass lists ``_fields`` and writes its ``__new__`` (positional or keyword
    arguments with defaults, as fast as namedtuple's generated one); the field accessors,
    ``repr``, pickling and ``_replace`` come from here."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        for index, name in enumerate(cls.__dict__.get("_fields", ())):
            setattr(cls, name, _tuplegetter(index, f"Field {index}: {name}"))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in zip(self._fields, self, strict=True))})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((type(self).__qualname__, tuple.__hash__(self)))

    def __getnewargs__(self) -> tuple:
        return tuple(self)

    def _replace(self, **changes: object) -> TupleRecord:
        """A copy with some fields changed."""
        return type(self)(**{**dict(zip(self._fields, self, strict=True)), **changes})

    def _asdict(self) -> dict:
        """The fields as a dict."""
        return dict(zip(self._fields, self, strict=True))


def is_known(text: str) -> bool:
    """Whether a resolved word has no unknown part."""
    return UNKNOWN not in text


def plain_unknown(text: str) -> str:
    """``text`` with each plain-value marker as a bare :data:`UNKNOWN`."""
    return text.replace(UNKNOWN_NAME, UNKNOWN).replace(UNKNOWN_NUMBER, UNKNOWN).replace(
        UNKNOWN_NAME_OR_EMPTY, UNKNOWN).replace(CHILD_PID, UNKNOWN).replace(REF_NAME, UNKNOWN)


def show(text: str) -> str:
    """A resolved word for messages: unknown parts shown as ``…``."""
    if PLAIN_MARK in text:
        text = plain_unknown(text)
    return text.replace(UNKNOWN, "…")


def clip(text: str, width: int = 40) -> str:
    """Shell text for a message: one line, unknown parts as ``…``, at most ``width`` characters."""
    if PLAIN_MARK in text:
        text = plain_unknown(text)
    text = text.replace("\n", "⏎").replace(UNKNOWN, "…")
    return text if len(text) <= width else text[: width - 1] + "…"

class Read(TupleRecord):
    """The command reads ``path`` (recursively: the whole tree below it; ``skip_hidden``: but
    not the entries below it whose name starts with ``.``, as ``rg`` and ``ag`` by default)."""

    __slots__ = ()
    _fields = ("path", "span", "recursive", "skip_hidden")
    path: str
    span: SpanT
    recursive: bool
    skip_hidden: bool

    def __new__(cls, path: str, span: SpanT, recursive: bool = False, skip_hidden: bool = False) -> Read:
        return _tuple_new(cls, (path, span, recursive, skip_hidden))


class Write(TupleRecord):
    """The command creates or modifies ``path`` (recursively: anything below it)."""

    __slots__ = ()
    _fields = ("path", "span", "recursive")
    path: str
    span: SpanT
    recursive: bool

    def __new__(cls, path: str, span: SpanT, recursive: bool = False) -> Write:
        return _tuple_new(cls, (path, span, recursive))


class Delete(TupleRecord):
    """The command removes ``path`` (recursively: with everything below it)."""

    __slots__ = ()
    _fields = ("path", "span", "recursive")
    path: str
    span: SpanT
    recursive: bool

    def __new__(cls, path: str, span: SpanT, recursive: bool = False) -> Delete:
        return _tuple_new(cls, (path, span, recursive))


class Rename(TupleRecord):
    """The command moves ``source`` to ``dest`` (a delete of one, a write of the other)."""

    __slots__ = ()
    _fields = ("source", "dest", "span")
    source: str
    dest: str
    span: SpanT

    def __new__(cls, source: str, dest: str, span: SpanT) -> Rename:
        return _tuple_new(cls, (source, dest, span))


class Execute(TupleRecord):
    """A simple command runs with this argv (after unwrapping; judged by command rules)."""

    __slots__ = ()
    _fields = ("argv", "span")
    argv: tuple[str, ...]
    span: SpanT

    def __new__(cls, argv: tuple[str, ...], span: SpanT) -> Execute:
        return _tuple_new(cls, (argv, span))


class Network(TupleRecord):
    """The command contacts ``host`` on ``port`` (None: the port is not known)."""

    __slots__ = ()
    _fields = ("host", "port", "span")
    host: str
    port: int | None
    span: SpanT

    def __new__(cls, host: str, port: int | None, span: SpanT) -> Network:
        return _tuple_new(cls, (host, port, span))


class Privilege(TupleRecord):
    """The command gains or uses privileges beyond the agent's own (sudo, setuid, …)."""

    __slots__ = ()
    _fields = ("what", "span")
    what: str
    span: SpanT

    def __new__(cls, what: str, span: SpanT) -> Privilege:
        return _tuple_new(cls, (what, span))


class EnvChange(TupleRecord):
    """The command changes an environment variable of the shell or a child."""

    __slots__ = ()
    _fields = ("name", "span")
    name: str
    span: SpanT

    def __new__(cls, name: str, span: SpanT) -> EnvChange:
        return _tuple_new(cls, (name, span))


class Persistence(TupleRecord):
    """The command installs something that runs later (rc files, hooks, cron, autostart)."""

    __slots__ = ()
    _fields = ("what", "span")
    what: str
    span: SpanT

    def __new__(cls, what: str, span: SpanT) -> Persistence:
        return _tuple_new(cls, (what, span))


class Unknown(TupleRecord):
    """Code or effects the analyzer cannot see into; judged by ``unknown-effects``."""

    __slots__ = ()
    _fields = ("why", "span")
    why: str
    span: SpanT

    def __new__(cls, why: str, span: SpanT) -> Unknown:
        return _tuple_new(cls, (why, span))


class Unparsable(TupleRecord):
    """The text cannot be parsed reliably; judged by ``unparsable``."""

    __slots__ = ()
    _fields = ("why", "span")
    why: str
    span: SpanT

    def __new__(cls, why: str, span: SpanT) -> Unparsable:
        return _tuple_new(cls, (why, span))


class LinkTarget(TupleRecord):
    """A link made to ``path`` (``ln``): reading through it later must be as allowed as reading it."""

    __slots__ = ()
    _fields = ("path", "span")
    path: str
    span: SpanT

    def __new__(cls, path: str, span: SpanT) -> LinkTarget:
        return _tuple_new(cls, (path, span))


class Opaque(TupleRecord):
    """A program with no model is given ``path`` (by ``program``): what it does to the path is
    not known, so a path the policy does not let it write is judged by ``unknown-effects``."""

    __slots__ = ()
    _fields = ("program", "path", "span")
    program: str
    path: str
    span: SpanT

    def __new__(cls, program: str, path: str, span: SpanT) -> Opaque:
        return _tuple_new(cls, (program, path, span))


class Harmless(TupleRecord):
    """The write at ``span`` left ``path`` — a file a tool reads when it next starts — with
    content known to make that tool run nothing (``repos: []``, editor settings): the write is
    judged as a plain write, not as code run later."""

    __slots__ = ()
    _fields = ("path", "span")
    path: str
    span: SpanT

    def __new__(cls, path: str, span: SpanT) -> Harmless:
        return _tuple_new(cls, (path, span))


Effect = (Read | Write | Delete | Rename | Execute | Network | Privilege | EnvChange | Persistence | Unknown
          | Unparsable | LinkTarget | Opaque | Harmless)
