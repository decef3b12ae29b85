"""Build the typed AST from Lark's concrete tree, checking sections, keywords and values.

The grammar only knows the shape ``SECTION { [locked] KEYWORD ARG* [because "…"] }``; this
module knows which keywords each section takes and what their arguments look like, so
mistakes get precise messages ("unknown keyword `wrte` in `filesystem`, did you mean
`write`?") and every rule is checked even after an earlier one failed.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from stockade import catalogue as codes
from stockade.diagnostics import Diagnostic, Span
from stockade.policy_lang import values
from stockade.policy_lang.ast import (
    Block,
    CommandRuleNode,
    Comment,
    EnvAssignment,
    EnvNamesNode,
    EnvSetNode,
    FsRuleNode,
    HostNode,
    Include,
    LimitNode,
    NetDefaultNode,
    NetRuleNode,
    PatternNode,
    PolicyFile,
    Rule,
    SessionNode,
    TestCaseNode,
    VerdictSettingNode,
    Word,
)

if TYPE_CHECKING:  # pragma: no cover
    from lark import Token, Tree

    from stockade.policy_lang.ast import FsKind, LimitName, SectionKind, SessionName, Verdict

    #: ``_Builder.rule_<section>(keyword, tokens, locked, span, keyword_token, reason)``
    _RuleMethod = Callable[[str, list[Token], bool, Span, Token, str | None], Rule | None]

VERDICTS = ("allow", "confirm", "deny")
#: The keywords each section accepts.
SECTION_KEYWORDS: dict[str, tuple[str, ...]] = {
    "filesystem": ("read", "write", "readonly", "deny"),
    "network": ("default", "allow", "deny"),
    "environment": ("keep", "drop", "set"),
    "limits": ("timeout", "memory", "processes", "output", "cpu", "cpus", "filesize", "disk"),
    "commands": ("allow", "confirm", "deny", "unknown-effects", "unparsable"),
    "session": ("max-denials", "max-steps", "max-failures", "on-limit", "approvals", "never-persist"),
    "test": VERDICTS,
}
#: The session settings that take one word, and the words they take (strictest first).
SESSION_CHOICES: dict[str, tuple[str, ...]] = {
    "on-limit": ("stop", "confirm"),
    "approvals": ("never", "session", "persist"),
}
_LIMIT_PARSERS: dict[str, Callable[[str], float]] = {
    "timeout": values.parse_duration,
    "cpu": values.parse_duration,
    "memory": values.parse_size,
    "output": values.parse_size,
    "filesize": values.parse_size,
    "disk": values.parse_size,
    "processes": values.parse_count,
    "cpus": values.parse_cpus,
}
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A "did you mean" hint for a misspelt keyword, or None."""
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean `{match[0]}`?" if match else None


def _tokens(tree: Tree[Token]) -> list[Token]:
    """Every token of a subtree, in order (iterative: no generator per level)."""
    out: list[Token] = []
    stack: list[Token | Tree[Token]] = [tree]
    while stack:
        node = stack.pop()
        children = getattr(node, "children", None)
        if children is None:
            out.append(cast("Token", node))
        else:
            stack.extend(reversed(children))
    return out


def _edge_token(tree: Tree[Token], last: bool) -> Token:
    node: Token | Tree[Token] = tree
    while getattr(node, "children", None):
        node = cast("Tree[Token]", node).children[-1 if last else 0]
    return cast("Token", node)


def _subtrees(tree: Tree[Token]) -> list[Tree[Token]]:
    """The children of a node whose grammar rule holds only subrules (``start``)."""
    return cast("list[Tree[Token]]", tree.children)


def _start(token: Token) -> tuple[int, int]:
    """The line and column of a token (the lexer positions every token it makes)."""
    line, column = token.line, token.column
    assert line is not None and column is not None, "an unpositioned token"
    return line, column


def _end(token: Token) -> tuple[int, int]:
    """The end line and column of a token (computed from its start when the lexer left them out)."""
    line, column = _start(token)
    return token.end_line or line, token.end_column or column + len(token)


def code_lines(tree: Tree[Token]) -> set[int]:
    """The line numbers that hold code (to tell trailing comments from leading ones)."""
    lines: set[int] = set()
    for token in _tokens(tree):
        line, _ = _start(token)
        lines.add(line)
        if token.end_line and token.end_line != line:
            lines.update(range(line, token.end_line + 1))
    return lines


class _Builder:
    def __init__(self, filename: str):
        self.filename = filename
        self.diagnostics: list[Diagnostic] = []

    # -- helpers ---------------------------------------------------------------------

    def span_of_token(self, token: Token) -> Span:
        return Span(self.filename, *_start(token), *_end(token))

    def span_of_tree(self, tree: Tree[Token]) -> Span:
        """From the first to the last token of a subtree (positions are kept on tokens only)."""
        return Span(self.filename, *_start(_edge_token(tree, False)), *_end(_edge_token(tree, True)))

    @staticmethod
    def span_of_word(word: Word) -> Span:
        """The span of a word this builder made (each has one)."""
        assert word.span is not None, "a word without a span"
        return word.span

    def error(self, code: str, message: str, span: Span | None, help: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, message, span, help))

    def word(self, token: Token) -> Word:
        span = self.span_of_token(token)
        if token.type == "STRING":
            return Word(self.decode_string(str(token), span), True, span)
        return Word(str(token), False, span)

    def decode_string(self, raw: str, span: Span) -> str:
        body = raw[1:-1]
        if "\\" not in body:
            return body
        out: list[str] = []
        i = 0
        while i < len(body):
            char = body[i]
            if char == "\\" and i + 1 < len(body):
                escaped = body[i + 1]
                if escaped in _ESCAPES:
                    out.append(_ESCAPES[escaped])
                else:
                    column = span.column + 1 + i
                    self.error(codes.UNKNOWN_ESCAPE, f"unknown escape `\\{escaped}` in string",
                               Span(self.filename, span.line, column, span.line, column + 2),
                               'strings know `\\"`, `\\\\`, `\\n`, `\\t` and `\\r`')
                    out.append(escaped)
                i += 2
                continue
            out.append(char)
            i += 1
        return "".join(out)

    # -- the file --------------------------------------------------------------------

    def build(self, tree: Tree[Token], comments: tuple[Comment, ...]) -> PolicyFile:
        name: str | None = None
        name_span: Span | None = None
        enforced = False
        enforced_span: Span | None = None
        includes: list[Include] = []
        blocks: list[Block] = []
        for item in _subtrees(tree):
            kind = item.data
            if kind == "policy_decl":
                token = cast("Token", item.children[0])
                span = self.span_of_tree(item)
                if name is not None:
                    self.error(codes.DUPLICATE_HEADER, "the policy is named twice", span,
                               f"it was named `{name}` at {name_span}")
                    continue
                name = self.word(token).text
                name_span = span
                if not name.strip():
                    self.error(codes.EMPTY_VALUE, "the policy name is empty", span, 'e.g. `policy "coding-agent"`')
            elif kind == "enforced_decl":
                if enforced:
                    self.error(codes.DUPLICATE_HEADER, "`enforced` is given twice", self.span_of_tree(item))
                enforced = True
                enforced_span = self.span_of_tree(item)
            elif kind == "include_decl":
                token = cast("Token", item.children[0])
                path = self.word(token).text
                span = self.span_of_token(token)
                if not path:
                    self.error(codes.EMPTY_VALUE, "the include path is empty", span)
                    continue
                includes.append(Include(path, span))
            else:
                block = self.block(item)
                if block is not None:
                    blocks.append(block)
        span = Span(self.filename, 1, 1)
        return PolicyFile(name, enforced, tuple(includes), tuple(blocks), self.filename, comments,
                          name_span, enforced_span, span)

    def block(self, tree: Tree[Token]) -> Block | None:
        children = list(tree.children)
        head = cast("Token", children.pop(0))
        has_label = bool(children) and getattr(children[0], "type", None) == "STRING"
        label_token = cast("Token", children.pop(0)) if has_label else None
        section = str(head)
        span = self.span_of_tree(tree)
        if section not in SECTION_KEYWORDS:
            self.error(codes.UNKNOWN_SECTION, f"unknown section `{section}`", self.span_of_token(head),
                       did_you_mean(section, SECTION_KEYWORDS) or
                       "sections are " + ", ".join(f"`{s}`" for s in SECTION_KEYWORDS))
            return None
        label = self.word(label_token).text if label_token is not None else None
        if section == "test" and label is None:
            self.error(codes.EMPTY_VALUE, "a test block needs a name", self.span_of_token(head),
                       'e.g. `test "pushes" {`')
        elif section != "test" and label_token is not None:
            self.error(codes.BLOCK_TAKES_NO_NAME, f"a `{section}` block takes no name", self.span_of_token(label_token),
                       f"write `{section} {{`")
        rules: list[Rule] = []
        for rule_tree in cast("list[Tree[Token]]", children):  # after the head and label: `rule` subtrees
            rule = self.rule(section, rule_tree)
            if rule is not None:
                rules.append(rule)
        # `section` is one of SECTION_KEYWORDS, checked above
        return Block(cast("SectionKind", section), tuple(rules), label, span)

    # -- rules -------------------------------------------------------------------------

    def rule(self, section: str, tree: Tree[Token]) -> Rule | None:
        children = list(tree.children)
        locked = False
        if getattr(children[0], "type", None) == "LOCKED":
            locked = True
            locked_token = cast("Token", children.pop(0))
            if section == "test":
                self.error(codes.MISPLACED_MODIFIER, "`locked` has no meaning in a test block",
                           self.span_of_token(locked_token))
        keyword_token = cast("Token", children.pop(0))
        keyword = str(keyword_token)
        reason: str | None = None
        reason_span: Span | None = None
        if children and getattr(children[-1], "data", None) == "because":
            because = cast("Tree[Token]", children.pop())
            reason = self.word(cast("Token", because.children[-1])).text
            reason_span = self.span_of_tree(because)
        span = self.span_of_tree(tree)
        if keyword not in SECTION_KEYWORDS[section]:
            elsewhere = [s for s, kws in SECTION_KEYWORDS.items() if keyword in kws]
            hint = did_you_mean(keyword, SECTION_KEYWORDS[section])
            if hint is None and elsewhere:
                hint = f"`{keyword}` belongs in the `{elsewhere[0]}` section"
            if hint is None:
                hint = f"`{section}` takes " + ", ".join(f"`{k}`" for k in SECTION_KEYWORDS[section])
            self.error(codes.UNKNOWN_KEYWORD, f"unknown keyword `{keyword}` in `{section}`",
                       self.span_of_token(keyword_token), hint)
            return None
        if reason is not None and section != "commands":
            self.error(codes.MISPLACED_MODIFIER, "`because` is only for command rules", reason_span)
        if reason is not None and not reason.strip():
            self.error(codes.EMPTY_VALUE, "the reason after `because` is empty", reason_span)
        method: _RuleMethod = getattr(self, f"rule_{section}")
        # what is left of the rule are its argument tokens (`because` was its only subtree)
        return method(keyword, cast("list[Token]", children), locked, span, keyword_token, reason)

    def _words(self, tokens: list[Token], keyword_token: Token, allow_commas: bool = False) -> list[Word] | None:
        words: list[Word] = []
        ok = True
        for token in tokens:
            if token.type == "COMMA" and not allow_commas:
                self.error(codes.UNEXPECTED_COMMA, "unexpected `,`", self.span_of_token(token),
                           "separate values with spaces")
                ok = False
            elif token.type != "COMMA":
                words.append(self.word(token))
        if not words and ok:
            self.error(codes.BAD_ARGUMENTS, f"`{keyword_token}` needs at least one value",
                       self.span_of_token(keyword_token))
            return None
        return words if ok else None

    def _single(self, tokens: list[Token], keyword_token: Token, what: str) -> Word | None:
        words = self._words(tokens, keyword_token)
        if words is None:
            return None
        if len(words) != 1:
            self.error(codes.BAD_ARGUMENTS, f"`{keyword_token}` takes one {what}",
                       words[1].span if len(words) > 1 else None)
            return None
        return words[0]

    def rule_filesystem(self, keyword: str, tokens: list[Token], locked: bool, span: Span, keyword_token: Token,
                        reason: str | None) -> Rule | None:
        words = self._words(tokens, keyword_token)
        if words is None:
            return None
        for word in words:
            if not word.text:
                self.error(codes.EMPTY_VALUE, "empty path", word.span)
                return None
            if "\n" in word.text or "\x00" in word.text:
                self.error(codes.EMPTY_VALUE, "a path cannot hold a newline or NUL", word.span)
                return None
        return FsRuleNode(cast("FsKind", keyword), tuple(words), locked, span)  # a keyword of the section

    def rule_network(self, keyword: str, tokens: list[Token], locked: bool, span: Span, keyword_token: Token,
                     reason: str | None) -> Rule | None:
        if keyword == "default":
            word = self._single(tokens, keyword_token, "of `allow` or `deny`")
            if word is None:
                return None
            if word.text not in ("allow", "deny"):
                self.error(codes.BAD_ARGUMENTS, f"`default` takes `allow` or `deny`, not `{word.text}`", word.span,
                           did_you_mean(word.text, ("allow", "deny")))
                return None
            return NetDefaultNode("allow" if word.text == "allow" else "deny", locked, span)
        words = self._words(tokens, keyword_token)
        if words is None:
            return None
        hosts: list[HostNode] = []
        for word in words:
            try:
                kind, value, port = values.parse_host(word.text)
            except values.ValueProblem as problem:
                self.error(problem.code, problem.message, word.span, problem.help)
                continue
            hosts.append(HostNode(kind, value, port, word))
        if len(hosts) != len(words):
            return None
        return NetRuleNode("allow" if keyword == "allow" else "deny", tuple(hosts), locked, span)

    def rule_environment(self, keyword: str, tokens: list[Token], locked: bool, span: Span, keyword_token: Token,
                         reason: str | None) -> Rule | None:
        if keyword == "set":
            return self._env_set(tokens, locked, span, keyword_token)
        words = self._words(tokens, keyword_token)
        if words is None:
            return None
        for word in words:
            try:
                values.check_env_name(word.text, allow_glob=True)
            except values.ValueProblem as problem:
                self.error(problem.code, problem.message, word.span, problem.help)
                return None
        return EnvNamesNode("keep" if keyword == "keep" else "drop", tuple(words), locked, span)

    def _env_set(self, tokens: list[Token], locked: bool, span: Span, keyword_token: Token) -> Rule | None:
        # NAME=value, NAME="quoted value" (two adjacent tokens) or NAME "value"
        assignments: list[EnvAssignment] = []
        pending: list[Token] = list(tokens)
        if not pending:
            self.error(codes.BAD_ARGUMENTS, "`set` needs at least one `NAME=value`", self.span_of_token(keyword_token))
            return None
        while pending:
            token = pending.pop(0)
            if token.type != "WORD":
                self.error(codes.BAD_ARGUMENTS, "expected `NAME=value`", self.span_of_token(token),
                           'e.g. `set CI=1` or `set GREETING="hi"`')
                return None
            text = str(token)
            name, eq, value = text.partition("=")
            word = self.word(token)
            if eq and value == "" and pending and pending[0].type == "STRING" and \
                    pending[0].line == token.line and pending[0].column == token.end_column:
                value_token = pending.pop(0)
                value = self.word(value_token).text
                word = Word(f"{name}={value}", True, Span(self.filename, *_start(token), *_end(value_token)))
            elif not eq:
                if pending and pending[0].type == "STRING":
                    value_token = pending.pop(0)
                    value = self.word(value_token).text
                    word = Word(f"{name}={value}", True, Span(self.filename, *_start(token), *_end(value_token)))
                else:
                    self.error(codes.BAD_ARGUMENTS, f"`{text}` has no value", word.span, f"write `{text}=value`")
                    return None
            try:
                values.check_env_name(name, allow_glob=False)
            except values.ValueProblem as problem:
                self.error(problem.code, problem.message, word.span, problem.help)
                return None
            assignments.append(EnvAssignment(name, value, word))
        return EnvSetNode(tuple(assignments), locked, span)

    def rule_limits(self, keyword: str, tokens: list[Token], locked: bool, span: Span, keyword_token: Token,
                    reason: str | None) -> Rule | None:
        word = self._single(tokens, keyword_token, "value")
        if word is None:
            return None
        try:
            value = _LIMIT_PARSERS[keyword](word.text)
        except values.ValueProblem as problem:
            self.error(problem.code, problem.message, word.span, problem.help)
            return None
        return LimitNode(cast("LimitName", keyword), value, word, locked, span)  # a keyword of the section

    def rule_commands(self, keyword: str, tokens: list[Token], locked: bool, span: Span, keyword_token: Token,
                      reason: str | None) -> Rule | None:
        if keyword in ("unknown-effects", "unparsable"):
            word = self._single(tokens, keyword_token, "verdict")
            if word is None:
                return None
            if word.text not in VERDICTS:
                self.error(codes.BAD_ARGUMENTS, f"`{keyword}` takes `allow`, `confirm` or `deny`, not `{word.text}`",
                           word.span,
                           did_you_mean(word.text, VERDICTS))
                return None
            if reason is not None:
                self.error(codes.MISPLACED_MODIFIER, f"`because` is not allowed on `{keyword}`", span)
            # the keyword is a keyword of the section, the verdict was checked above
            return VerdictSettingNode("unknown-effects" if keyword == "unknown-effects" else "unparsable",
                                      cast("Verdict", word.text), locked, span)
        patterns = self._patterns(tokens, keyword_token)
        if patterns is None:
            return None
        return CommandRuleNode(cast("Verdict", keyword), patterns, reason, locked, span)  # a section keyword

    def _patterns(self, tokens: list[Token], keyword_token: Token) -> tuple[PatternNode, ...] | None:
        """Comma-separated command patterns (None when one is malformed, with its error)."""
        patterns: list[PatternNode] = []
        current: list[Word] = []
        ok = True
        for token in [*tokens, None]:  # None: the end of the last pattern
            if token is None or token.type == "COMMA":
                if not current:
                    where = self.span_of_token(token) if token is not None else self.span_of_token(keyword_token)
                    self.error(codes.BAD_ARGUMENTS, "empty command pattern", where, "patterns are separated by `,`")
                    ok = False
                else:
                    first, last = self.span_of_word(current[0]), self.span_of_word(current[-1])
                    patterns.append(PatternNode(tuple(current), Span(self.filename, first.line, first.column,
                                                                     last.end_line, last.end_column)))
                current = []
                continue
            word = self.word(token)
            if not word.text:
                self.error(codes.EMPTY_VALUE, "empty word in a command pattern", word.span)
                ok = False
            current.append(word)
        return tuple(patterns) if ok else None

    def rule_session(self, keyword: str, tokens: list[Token], locked: bool, span: Span, keyword_token: Token,
                     reason: str | None) -> Rule | None:
        name = cast("SessionName", keyword)  # a keyword of the section
        if keyword == "never-persist":
            patterns = self._patterns(tokens, keyword_token)
            return None if patterns is None else SessionNode(name, patterns=patterns, locked=locked, span=span)
        words = self._words(tokens, keyword_token)
        if words is None:
            return None
        if keyword in SESSION_CHOICES:
            choices = SESSION_CHOICES[keyword]
            if len(words) != 1 or words[0].text not in choices:
                self.error(codes.BAD_ARGUMENTS, f"`{keyword}` takes " + " or ".join(f"`{c}`" for c in choices),
                           words[0].span, did_you_mean(words[0].text, choices))
                return None
            return SessionNode(name, choice=words[0].text, words=tuple(words), locked=locked, span=span)
        # max-denials N [within DURATION], max-steps N, max-failures N
        shape_ok = len(words) == 1 or (keyword == "max-denials" and len(words) == 3 and words[1].text == "within")
        if not shape_ok:
            example = "`max-denials 3` or `max-denials 10 within 1h`" if keyword == "max-denials" else f"`{keyword} 50`"
            self.error(codes.BAD_ARGUMENTS, f"`{keyword}` takes a count", words[0].span, f"e.g. {example}")
            return None
        try:
            count = int(values.parse_count(words[0].text))
            window = values.parse_duration(words[2].text) if len(words) == 3 else None
        except values.ValueProblem as problem:
            self.error(problem.code, problem.message, words[0].span, problem.help)
            return None
        return SessionNode(name, count=count, window=window, words=tuple(words), locked=locked, span=span)

    def rule_test(self, keyword: str, tokens: list[Token], locked: bool, span: Span, keyword_token: Token,
                  reason: str | None) -> Rule | None:
        words = self._words(tokens, keyword_token)
        if words is None:
            return None
        if len(words) != 1 or not words[0].quoted:
            first = words[0].span
            self.error(codes.BAD_ARGUMENTS, "a test case takes one quoted command", first,
                       f'e.g. `{keyword} "git push --force origin main"`')
            return None
        if not words[0].text.strip():
            self.error(codes.EMPTY_VALUE, "the test command is empty", words[0].span)
            return None
        return TestCaseNode(cast("Verdict", keyword), words[0], span)  # a keyword of the section


def build_ast(tree: Tree[Token], filename: str,
              comments: tuple[Comment, ...] = ()) -> tuple[PolicyFile | None, list[Diagnostic]]:
    """Build the AST of one file; the AST is None when any rule was malformed."""
    builder = _Builder(filename)
    policy = builder.build(tree, comments)
    if builder.diagnostics:
        return None, builder.diagnostics
    return policy, []
