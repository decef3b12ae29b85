"""The canonical text of a policy: ``format_policy(ast) -> str`` (used by ``stockade fmt``).

Layout rules:

* header first, in the order ``policy``, ``enforced``, ``include``…; then the blocks in
  source order, one blank line between groups;
* 4-space indent, one rule per line, the ``locked`` prefix, keywords (with their ``locked``)
  padded to a common column within a block — except that ``unknown-effects``/``unparsable``
  align among themselves, not with the command verdicts, as in the examples — and
  ``because`` aligned;
* a word keeps its quotes when it was quoted, and a bare word is quoted only when it must
  be (when it is not a ``WORD`` of the grammar — empty, whitespace, ``"``, ``#``, ``{``,
  ``}`` other than in ``${NAME}``, ``,`` — or is the keyword ``because``), so
  that ``parse(format_policy(ast)) == ast``; strings escape ``\\``, ``"``, newline, tab, CR;
* comments are kept: a comment on its own line stays before the header, block or rule it
  precedes (or before the ``}`` of its block, or at the end of the file); a comment that ends
  a line stays on that line, two spaces after the code.  Single blank lines between rules and
  comments are kept, runs of them collapse.

The output is a fixed point: ``format_policy(parse(format_policy(ast))) == format_policy(ast)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import NoReturn

from stockade.policy_lang.ast import (
    Block,
    CommandRuleNode,
    Comment,
    EnvNamesNode,
    EnvSetNode,
    FsRuleNode,
    LimitNode,
    NetDefaultNode,
    NetRuleNode,
    PolicyFile,
    Rule,
    SessionNode,
    TestCaseNode,
    VerdictSettingNode,
    Visitor,
    Word,
)

INDENT = "    "
#: Bare words the lexer would read as a keyword in an argument position.
_RESERVED_WORDS = frozenset({"because"})
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_ESCAPE_RE = re.compile(r'[\\"\n\t\r]')
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


@lru_cache(maxsize=1)
def bare_word() -> re.Pattern[str]:
    """The grammar's ``WORD`` terminal (read from ``policy.lark``, so the two never drift apart)."""
    grammar = resources.files("stockade.policy_lang").joinpath("policy.lark").read_text(encoding="utf-8")
    match = re.search(r"^WORD:\s*/(.*)/\s*$", grammar, re.MULTILINE)
    if match is None:  # pragma: no cover - the grammar always defines WORD
        raise RuntimeError("policy.lark defines no `WORD` terminal")
    return re.compile(match.group(1))


def needs_quotes(text: str) -> bool:
    """Whether ``text`` cannot be written as a bare word."""
    return text in _RESERVED_WORDS or bare_word().fullmatch(text) is None


def quote(text: str) -> str:
    """``text`` as a double-quoted string, escaping ``\\``, ``"``, newline, tab and CR."""
    return '"' + _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], text) + '"'


def render_word(word: Word) -> str:
    """A word as written: quoted when it was quoted or must be, bare otherwise.

    Keeping the quotes of a quoted word matters in command patterns (``"a|b"`` is one literal
    word, bare ``a|b`` two alternatives) and in test blocks (the command must be quoted).
    """
    return quote(word.text) if word.quoted or needs_quotes(word.text) else word.text


def _comment_text(comment: Comment) -> str:
    return "#" + comment.text.rstrip()


# -- one rule as text ------------------------------------------------------------------


@dataclass(frozen=True)
class RuleText:
    """The parts of a rule's line: keyword head, argument text, optional reason, alignment group."""

    head: str
    args: str
    reason: str | None = None
    group: str = "rules"


class _RuleRenderer(Visitor):
    """Turns one rule node into its :class:`RuleText`."""

    @staticmethod
    def _head(keyword: str, locked: bool) -> str:
        return f"locked {keyword}" if locked else keyword

    def visit_FsRuleNode(self, node: FsRuleNode) -> RuleText:
        return RuleText(self._head(node.kind, node.locked), " ".join(render_word(w) for w in node.paths))

    def visit_NetDefaultNode(self, node: NetDefaultNode) -> RuleText:
        return RuleText(self._head("default", node.locked), node.action)

    def visit_NetRuleNode(self, node: NetRuleNode) -> RuleText:
        return RuleText(self._head(node.action, node.locked), " ".join(render_word(h.word) for h in node.hosts))

    def visit_EnvNamesNode(self, node: EnvNamesNode) -> RuleText:
        return RuleText(self._head(node.action, node.locked), " ".join(render_word(w) for w in node.names))

    def visit_EnvSetNode(self, node: EnvSetNode) -> RuleText:
        parts = []
        for assignment in node.assignments:
            value = assignment.value
            # a bare empty value is written `NAME=`; quotes only when written or needed
            if assignment.word.quoted or needs_quotes(f"{assignment.name}={value}"):
                value = quote(value)
            parts.append(f"{assignment.name}={value}")
        return RuleText(self._head("set", node.locked), " ".join(parts))

    def visit_LimitNode(self, node: LimitNode) -> RuleText:
        return RuleText(self._head(node.name, node.locked), render_word(node.word))

    def visit_CommandRuleNode(self, node: CommandRuleNode) -> RuleText:
        patterns = ", ".join(" ".join(render_word(w) for w in p.words) for p in node.patterns)
        reason = f"because {quote(node.reason)}" if node.reason is not None else None
        return RuleText(self._head(node.verdict, node.locked), patterns, reason)

    def visit_VerdictSettingNode(self, node: VerdictSettingNode) -> RuleText:
        return RuleText(self._head(node.setting, node.locked), node.verdict, group="setting")

    def visit_SessionNode(self, node: SessionNode) -> RuleText:
        if node.patterns:
            args = ", ".join(" ".join(render_word(w) for w in p.words) for p in node.patterns)
        else:
            args = " ".join(render_word(w) for w in node.words)
        return RuleText(self._head(node.name, node.locked), args)

    def visit_TestCaseNode(self, node: TestCaseNode) -> RuleText:
        return RuleText(node.expect, quote(node.command.text))

    def generic_visit(self, node: object) -> NoReturn:
        raise TypeError(f"cannot format `{type(node).__name__}` as a rule")


def rule_text(rule: Rule) -> RuleText:
    """The parts of one rule's line (see :class:`RuleText`)."""
    text: RuleText = _RuleRenderer().visit(rule)
    return text


def align_rules(rules: tuple[Rule, ...] | list[Rule]) -> list[str]:
    """The rule lines of one block (without indent): keywords and ``because`` aligned."""
    texts = [rule_text(rule) for rule in rules]
    widths: dict[str, int] = {}
    for text in texts:
        widths[text.group] = max(widths.get(text.group, 0), len(text.head))
    bodies = [f"{t.head.ljust(widths[t.group])} {t.args}".rstrip() for t in texts]
    reason_column = max((len(b) for b, t in zip(bodies, texts, strict=True) if t.reason is not None), default=0) + 2
    return [f"{body.ljust(reason_column)}{t.reason}" if t.reason is not None else body
            for body, t in zip(bodies, texts, strict=True)]


# -- where each comment goes -----------------------------------------------------------

#: What a comment attaches to: ``("policy",)``, ``("include", i)``, ``("open", b)``, ``("rule", b, r)``,
#: ``("close", b)``...
Key = tuple[str, *tuple[int, ...]]


@dataclass
class _Placement:
    """Comments sorted to the places they are printed: before, after, or closing a block."""

    leading: dict[Key, list[Comment]] = field(default_factory=dict)
    trailing: dict[Key, Comment] = field(default_factory=dict)
    block_end: dict[int, list[Comment]] = field(default_factory=dict)
    end_of_file: list[Comment] = field(default_factory=list)
    lines: dict[Key, int] = field(default_factory=dict)


def closing_lines(policy: PolicyFile, source: str) -> dict[int, int]:
    """Block index → the line of its ``}`` in ``source`` (the AST does not record it).

    The source is lexed like the grammar does (strings, words, comments, braces); a block
    closes at the first ``}`` token after its last rule (or after its opening line).
    """
    braces: list[tuple[int, int]] = []  # (line, column) of every `}` token
    word = bare_word()
    for number, text in enumerate(source.split("\n"), start=1):
        column = 0
        while column < len(text):
            char = text[column]
            if char == "#":
                break
            if char == "}":
                braces.append((number, column + 1))
                column += 1
                continue
            token = _STRING.match(text, column) if char == '"' else word.match(text, column)
            column = token.end() if token is not None and token.end() > column else column + 1
    closes: dict[int, int] = {}
    for index, block in enumerate(policy.blocks):
        start = block.rules[-1].span if block.rules and block.rules[-1].span is not None else block.span
        if start is None:
            continue
        after = next((line for line, column in braces if (line, column) > (start.line, start.column)), None)
        if after is not None:
            closes[index] = after
    return closes


def _anchors(policy: PolicyFile, closes: dict[int, int]) -> list[tuple[int, Key]]:
    """``(line, key)`` of everything a comment can attach to, from the AST's spans."""
    found: list[tuple[int, Key]] = []
    if policy.name is not None and policy.name_span is not None:
        found.append((policy.name_span.line, ("policy",)))
    if policy.enforced and policy.enforced_span is not None:
        found.append((policy.enforced_span.line, ("enforced",)))
    for index, include in enumerate(policy.includes):
        if include.span is not None:
            found.append((include.span.line, ("include", index)))
    for b, block in enumerate(policy.blocks):
        if block.span is None:
            continue
        found.append((block.span.line, ("open", b)))
        for r, rule in enumerate(block.rules):
            if rule.span is not None:
                found.append((rule.span.line, ("rule", b, r)))
        if b in closes:
            found.append((closes[b], ("close", b)))
    return found


def place_comments(policy: PolicyFile, source: str | None = None) -> _Placement:
    """Attach every comment of ``policy`` to the header, block or rule it belongs to.

    Without the ``source`` the closing braces are not known: a comment after a block's last
    rule then goes before what follows the block.
    """
    placement = _Placement()
    closes = closing_lines(policy, source) if source is not None and policy.comments else {}
    anchors = sorted(_anchors(policy, closes), key=lambda a: a[0])  # stable: `open` before `close`
    by_line: dict[int, Key] = {}
    for line, key in anchors:
        by_line.setdefault(line, key)
        placement.lines[key] = line
    anchor_lines = [line for line, _ in anchors]
    for comment in sorted(policy.comments, key=lambda c: c.line):
        if comment.line in by_line and by_line[comment.line] not in placement.trailing:
            placement.trailing[by_line[comment.line]] = comment
            continue
        following = next((key for line, key in anchors if line > comment.line), None) if anchor_lines else None
        if following is None or not comment.line:
            placement.end_of_file.append(comment)
        elif following[0] == "close" and len(following) == 2:  # ("close", block index)
            placement.block_end.setdefault(following[1], []).append(comment)
        else:
            placement.leading.setdefault(following, []).append(comment)
    return placement


# -- the file --------------------------------------------------------------------------


class _Emitter:
    """Collects output lines; a blank line separates entries that had one in the source."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.previous: int | None = None
        #: line index → (code, comment) for lines that end in a comment
        self.trailing: dict[int, tuple[str, str]] = {}

    def emit_with_comment(self, code: str, comment: str, source_line: int | None, keep_gap: bool = True) -> None:
        """A line of code that ends in a comment (aligned with its neighbours at the end)."""
        self.emit(f"{code}  {comment}", source_line, keep_gap)
        self.trailing[len(self.lines) - 1] = (code, comment)

    def aligned(self) -> list[str]:
        """The lines, with trailing comments of consecutive lines in one column."""
        lines = list(self.lines)
        index = 0
        while index < len(lines):
            if index not in self.trailing:
                index += 1
                continue
            end = index
            while end + 1 in self.trailing:
                end += 1
            width = max(len(self.trailing[i][0]) for i in range(index, end + 1))
            for i in range(index, end + 1):
                code, comment = self.trailing[i]
                lines[i] = f"{code.ljust(width)}  {comment}"
            index = end + 1
        return lines

    def blank(self) -> None:
        if self.lines and self.lines[-1] != "":
            self.lines.append("")

    def emit(self, text: str, source_line: int | None, keep_gap: bool = True) -> None:
        if keep_gap and self.previous and source_line and source_line - self.previous > 1:
            self.blank()
        self.lines.append(text)
        self.previous = source_line


class _Formatter:
    def __init__(self, policy: PolicyFile, source: str | None):
        self.policy = policy
        self.place = place_comments(policy, source)
        self.out = _Emitter()

    def line(self, key: Key, text: str, indent: str = "", first: bool = False) -> None:
        """Leading comments of ``key``, then its line with its trailing comment."""
        comments = self.place.leading.get(key, [])
        for index, comment in enumerate(comments):
            self.out.emit(indent + _comment_text(comment), comment.line, keep_gap=not (first and index == 0))
        trailing = self.place.trailing.get(key)
        keep_gap = not (first and not comments)
        if trailing is not None:
            self.out.emit_with_comment(indent + text, _comment_text(trailing), self.place.lines.get(key), keep_gap)
        else:
            self.out.emit(indent + text, self.place.lines.get(key), keep_gap)

    def run(self) -> str:
        policy = self.policy
        header: list[tuple[Key, str]] = []
        if policy.name is not None:
            header.append((("policy",), f"policy {quote(policy.name)}"))
        if policy.enforced:
            header.append((("enforced",), "enforced"))
        groups: list[list[tuple[Key, str]]] = [header] if header else []
        includes: list[tuple[Key, str]] = [(("include", i), f"include {quote(inc.path)}")
                                           for i, inc in enumerate(policy.includes)]
        if includes:
            groups.append(includes)
        for items in groups:
            self.out.blank()
            for key, text in items:  # header lines stay together: no blank between them
                self.line(key, text, first=True)
        for index, block in enumerate(policy.blocks):
            self.out.blank()
            self.block(index, block)
        if self.place.end_of_file:
            if self.out.previous is None:  # no spans to tell: keep the comments apart
                self.out.blank()
            for comment in self.place.end_of_file:
                self.out.emit(_comment_text(comment), comment.line or None)
        return "\n".join(self.out.aligned()) + "\n" if self.out.lines else ""

    def block(self, index: int, block: Block) -> None:
        head = block.kind + (f" {quote(block.label)}" if block.label is not None else "") + " {"
        self.line(("open", index), head, first=True)
        for rule_index, text in enumerate(align_rules(block.rules)):
            self.line(("rule", index, rule_index), text, INDENT, first=rule_index == 0)
        for position, comment in enumerate(self.place.block_end.get(index, [])):
            self.out.emit(INDENT + _comment_text(comment), comment.line, keep_gap=bool(block.rules) or position > 0)
        trailing = self.place.trailing.get(("close", index))
        if trailing is not None:
            self.out.emit_with_comment("}", _comment_text(trailing), self.place.lines.get(("close", index)), False)
        else:
            self.out.emit("}", self.place.lines.get(("close", index)), keep_gap=False)


def format_policy(ast: PolicyFile, source: str | None = None) -> str:
    """The canonical text of a policy file, comments included (see the module docstring).

    ``source``, the text ``ast`` was parsed from, places comments exactly (the AST does not
    record where a block's ``}`` is); without it a comment between a block's last rule and
    its ``}`` moves below the block.
    """
    return _Formatter(ast, source).run()
