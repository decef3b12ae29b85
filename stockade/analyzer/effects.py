"""What an executed command does, as frozen records with the span that caused them.

Spans are ``(start, end)`` character offsets into the analysed command text (``end``
exclusive).  Paths are as resolved by the walker: absolute when the script determines
them, containing :data:`UNKNOWN` where it does not.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Marks a part of a word whose value the script does not determine.
UNKNOWN = "\x00"

SpanT = tuple[int, int]


def is_known(text: str) -> bool:
    """Whether a resolved word has no unknown part."""
    return UNKNOWN not in text


def show(text: str) -> str:
    """A resolved word for messages: unknown parts shown as ``…``."""
    return text.replace(UNKNOWN, "…")


@dataclass(frozen=True, slots=True)
class Read:
    """The command reads ``path`` (recursively: the whole tree below it)."""

    path: str
    span: SpanT
    recursive: bool = False


@dataclass(frozen=True, slots=True)
class Write:
    """The command creates or modifies ``path`` (recursively: anything below it)."""

    path: str
    span: SpanT
    recursive: bool = False


@dataclass(frozen=True, slots=True)
class Delete:
    """The command removes ``path`` (recursively: with everything below it)."""

    path: str
    span: SpanT
    recursive: bool = False


@dataclass(frozen=True, slots=True)
class Rename:
    """The command moves ``source`` to ``dest`` (a delete of one, a write of the other)."""

    source: str
    dest: str
    span: SpanT


@dataclass(frozen=True, slots=True)
class Execute:
    """A simple command runs with this argv (after unwrapping; judged by command rules)."""

    argv: tuple[str, ...]
    span: SpanT


@dataclass(frozen=True, slots=True)
class Network:
    """The command contacts ``host`` on ``port`` (None: the port is not known)."""

    host: str
    port: int | None
    span: SpanT


@dataclass(frozen=True, slots=True)
class Privilege:
    """The command gains or uses privileges beyond the agent's own (sudo, setuid, …)."""

    what: str
    span: SpanT


@dataclass(frozen=True, slots=True)
class EnvChange:
    """The command changes an environment variable of the shell or a child."""

    name: str
    span: SpanT


@dataclass(frozen=True, slots=True)
class Persistence:
    """The command installs something that runs later (rc files, hooks, cron, autostart)."""

    what: str
    span: SpanT


@dataclass(frozen=True, slots=True)
class Unknown:
    """Code or effects the analyzer cannot see into; judged by ``unknown-effects``."""

    why: str
    span: SpanT


@dataclass(frozen=True, slots=True)
class Unparsable:
    """The text cannot be parsed reliably; judged by ``unparsable``."""

    why: str
    span: SpanT


Effect = Read | Write | Delete | Rename | Execute | Network | Privilege | EnvChange | Persistence | Unknown | Unparsable
