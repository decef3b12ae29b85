"""AST of the policy language: a closed set of frozen dataclasses.

Every node carries its source :class:`~stockade.diagnostics.Span`, excluded from equality,
so two parses of differently formatted but equivalent text compare equal (the formatter's
round-trip property).  Values are kept as written (a path stays ``~/.ssh``); the compiler
resolves them.  Walk trees with :class:`Visitor`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from stockade.diagnostics import Span


def _span() -> Any:
    return field(default=None, compare=False, hash=False, repr=False)


@dataclass(frozen=True, slots=True)
class Word:
    """One argument as written: its text (quotes removed, escapes decoded) and whether it was quoted."""

    text: str
    quoted: bool = False
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Comment:
    """A ``#`` comment; ``trailing`` when it ends a line that holds code."""

    text: str
    line: int = field(default=0, compare=False)
    trailing: bool = field(default=False, compare=False)


# -- filesystem ------------------------------------------------------------------------

FsKind = Literal["read", "write", "readonly", "deny"]


@dataclass(frozen=True, slots=True)
class FsRuleNode:
    """``[locked] read|write|readonly|deny PATH…``"""

    kind: FsKind
    paths: tuple[Word, ...]
    locked: bool = False
    span: Span | None = _span()


# -- network ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NetDefaultNode:
    """``[locked] default allow|deny``"""

    action: Literal["allow", "deny"]
    locked: bool = False
    span: Span | None = _span()


HostKind = Literal["any", "localhost", "host-loopback", "host", "domain", "cidr"]


@dataclass(frozen=True, slots=True)
class HostNode:
    """A parsed destination: kind ``any``/``localhost``/``host-loopback``/``host``/``domain``/``cidr``,
    value, port."""

    kind: HostKind
    value: str
    port: int | None
    word: Word


@dataclass(frozen=True, slots=True)
class NetRuleNode:
    """``[locked] allow|deny HOST…``"""

    action: Literal["allow", "deny"]
    hosts: tuple[HostNode, ...]
    locked: bool = False
    span: Span | None = _span()


# -- environment -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EnvNamesNode:
    """``[locked] keep|drop NAME-GLOB…``"""

    action: Literal["keep", "drop"]
    names: tuple[Word, ...]
    locked: bool = False
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class EnvAssignment:
    """``NAME=value`` inside a ``set`` rule."""

    name: str
    value: str
    word: Word


@dataclass(frozen=True, slots=True)
class EnvSetNode:
    """``[locked] set NAME=value…``"""

    assignments: tuple[EnvAssignment, ...]
    locked: bool = False
    span: Span | None = _span()


# -- limits ----------------------------------------------------------------------------

LimitName = Literal["timeout", "memory", "processes", "output", "cpu", "cpus", "filesize", "disk"]


@dataclass(frozen=True, slots=True)
class LimitNode:
    """``[locked] timeout|cpu DURATION``, ``memory|output|filesize|disk SIZE``, ``processes COUNT``.

    ``value`` is in seconds, bytes or a count; ``word`` keeps the text as written.
    """

    name: LimitName
    value: float
    word: Word
    locked: bool = False
    span: Span | None = _span()


# -- commands --------------------------------------------------------------------------

Verdict = Literal["allow", "confirm", "deny"]


@dataclass(frozen=True, slots=True)
class PatternNode:
    """One argv pattern: its words (``a|b`` alternatives, ``*``, ``**``, fnmatch wildcards)."""

    words: tuple[Word, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class CommandRuleNode:
    """``[locked] allow|confirm|deny PATTERN[, PATTERN…] [because "reason"]``"""

    verdict: Verdict
    patterns: tuple[PatternNode, ...]
    reason: str | None = None
    locked: bool = False
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class VerdictSettingNode:
    """``[locked] unknown-effects|unparsable allow|confirm|deny``"""

    setting: Literal["unknown-effects", "unparsable"]
    verdict: Verdict
    locked: bool = False
    span: Span | None = _span()


# -- session ---------------------------------------------------------------------------

SessionName = Literal["max-denials", "max-steps", "max-failures", "on-limit", "approvals", "never-persist"]


@dataclass(frozen=True, slots=True)
class SessionNode:
    """A setting of the ``session`` block.

    ``max-denials N [within DURATION]``, ``max-steps N``, ``max-failures N`` (``count``;
    ``window`` in seconds or None for "in a row"), ``on-limit stop|confirm`` and
    ``approvals persist|session|never`` (``choice``), ``never-persist PATTERN[, PATTERN…]``
    (``patterns``, command patterns as in ``commands``).
    """

    name: SessionName
    count: int | None = None
    window: float | None = None
    choice: str | None = None
    patterns: tuple[PatternNode, ...] = ()
    words: tuple[Word, ...] = ()
    locked: bool = False
    span: Span | None = _span()


# -- tests -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TestCaseNode:
    """``allow|confirm|deny "command"`` inside a ``test`` block."""

    expect: Verdict
    command: Word
    span: Span | None = _span()


# -- blocks and the file ---------------------------------------------------------------

SectionKind = Literal["filesystem", "network", "environment", "limits", "commands", "session", "test"]
Rule = (FsRuleNode | NetDefaultNode | NetRuleNode | EnvNamesNode | EnvSetNode | LimitNode
        | CommandRuleNode | VerdictSettingNode | SessionNode | TestCaseNode)


@dataclass(frozen=True, slots=True)
class Block:
    """A section: its kind, its label (test blocks are named) and its rules in order."""

    kind: SectionKind
    rules: tuple[Rule, ...]
    label: str | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Include:
    """``include "path"`` (relative to the including file)."""

    path: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class PolicyFile:
    """One parsed policy file."""

    name: str | None
    enforced: bool
    includes: tuple[Include, ...]
    blocks: tuple[Block, ...]
    file: str = field(default="<policy>", compare=False)
    comments: tuple[Comment, ...] = field(default=(), compare=False)
    name_span: Span | None = _span()
    enforced_span: Span | None = _span()
    span: Span | None = _span()

    def rules(self, kind: SectionKind) -> list[Rule]:
        """Every rule of the blocks of one kind, in source order."""
        return [rule for block in self.blocks if block.kind == kind for rule in block.rules]


NODE_TYPES: tuple[type, ...] = (
    Word, Comment, FsRuleNode, NetDefaultNode, HostNode, NetRuleNode, EnvNamesNode, EnvAssignment,
    EnvSetNode, LimitNode, PatternNode, CommandRuleNode, VerdictSettingNode, SessionNode, TestCaseNode, Block,
    Include, PolicyFile,
)


class Visitor:
    """Walks an AST: ``visit`` calls ``visit_<ClassName>`` or :meth:`generic_visit`.

    The generic fallback visits every child node (fields holding nodes or tuples of them).
    """

    def visit(self, node: Any) -> Any:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            return self.generic_visit(node)
        return method(node)

    def generic_visit(self, node: Any) -> None:
        for f in fields(node):
            value = getattr(node, f.name)
            if isinstance(value, NODE_TYPES):
                self.visit(value)
            elif isinstance(value, tuple):
                for item in value:
                    if isinstance(item, NODE_TYPES):
                        self.visit(item)
