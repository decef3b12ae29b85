"""What an executed command does, as immutable records with the span that caused them.

Spans are ``(start, end)`` character offsets into the analysed command text (``end``
exclusive).  Paths are as resolved by the walker: absolute when the script determines
them, containing :data:`UNKNOWN` where it does not.

The records are :class:`~typing.NamedTuple` classes: a command creates several, and a tuple
is several times cheaper to build than a frozen dataclass (and costs nothing at import).
Compare them by type as well as by value (a ``Read`` and a ``Write`` of the same path are
equal tuples).
"""

from __future__ import annotations

from typing import NamedTuple

#: Marks a part of a word whose value the script does not determine.
UNKNOWN = "\x00"

SpanT = tuple[int, int]


def is_known(text: str) -> bool:
    """Whether a resolved word has no unknown part."""
    return UNKNOWN not in text


def show(text: str) -> str:
    """A resolved word for messages: unknown parts shown as ``…``."""
    return text.replace(UNKNOWN, "…")


def clip(text: str, width: int = 40) -> str:
    """Shell text for a message: one line, unknown parts as ``…``, at most ``width`` characters."""
    text = text.replace("\n", "⏎").replace(UNKNOWN, "…")
    return text if len(text) <= width else text[: width - 1] + "…"


class Read(NamedTuple):
    """The command reads ``path`` (recursively: the whole tree below it; ``skip_hidden``: but
    not the entries below it whose name starts with ``.``, as ``rg`` and ``ag`` by default)."""

    path: str
    span: SpanT
    recursive: bool = False
    skip_hidden: bool = False


class Write(NamedTuple):
    """The command creates or modifies ``path`` (recursively: anything below it)."""

    path: str
    span: SpanT
    recursive: bool = False


class Delete(NamedTuple):
    """The command removes ``path`` (recursively: with everything below it)."""

    path: str
    span: SpanT
    recursive: bool = False


class Rename(NamedTuple):
    """The command moves ``source`` to ``dest`` (a delete of one, a write of the other)."""

    source: str
    dest: str
    span: SpanT


class Execute(NamedTuple):
    """A simple command runs with this argv (after unwrapping; judged by command rules)."""

    argv: tuple[str, ...]
    span: SpanT


class Network(NamedTuple):
    """The command contacts ``host`` on ``port`` (None: the port is not known)."""

    host: str
    port: int | None
    span: SpanT


class Privilege(NamedTuple):
    """The command gains or uses privileges beyond the agent's own (sudo, setuid, …)."""

    what: str
    span: SpanT


class EnvChange(NamedTuple):
    """The command changes an environment variable of the shell or a child."""

    name: str
    span: SpanT


class Persistence(NamedTuple):
    """The command installs something that runs later (rc files, hooks, cron, autostart)."""

    what: str
    span: SpanT


class Unknown(NamedTuple):
    """Code or effects the analyzer cannot see into; judged by ``unknown-effects``."""

    why: str
    span: SpanT


class Unparsable(NamedTuple):
    """The text cannot be parsed reliably; judged by ``unparsable``."""

    why: str
    span: SpanT


class LinkTarget(NamedTuple):
    """A link made to ``path`` (``ln``): reading through it later must be as allowed as reading it."""

    path: str
    span: SpanT


Effect = Read | Write | Delete | Rename | Execute | Network | Privilege | EnvChange | Persistence | Unknown | Unparsable | LinkTarget
