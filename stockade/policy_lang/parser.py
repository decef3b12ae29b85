"""Parse policy text into an AST, collecting every diagnostic the parser can recover from.

Two steps: the Lark LALR grammar (``policy.lark``, strict mode) gives a concrete tree of
blocks and rules; :mod:`stockade.policy_lang.ast_builder` checks sections, keywords and
argument shapes and builds the typed AST.  Syntax errors are phrased in the language's own
words (never Lark terminal names), and the parser resumes after each one so that one run
reports all errors of a file.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from stockade import catalogue as codes
from stockade.diagnostics import Diagnostic, Span
from stockade.policy_lang.ast import Comment, PolicyFile

if TYPE_CHECKING:  # pragma: no cover
    from lark import Lark, Token

#: How terminals are named in messages.
TERMINAL_WORDS: dict[str, str] = {
    "WORD": "a word",
    "STRING": "a quoted string",
    "COMMA": "`,`",
    "LOCKED": "`locked`",
    "LBRACE": "`{`",
    "RBRACE": "`}`",
    "_NL": "the end of the line",
    "$END": "the end of the file",
    "POLICY": "`policy`",
    "INCLUDE": "`include`",
    "ENFORCED": "`enforced`",
    "BECAUSE": "`because`",
}


_collected = threading.local()


def _collect_comment(token: Token) -> None:
    buffer = getattr(_collected, "comments", None)
    if buffer is not None:
        buffer.append(Comment(str(token)[1:].rstrip("\r"), token.line or 0))  # 0: no line


@lru_cache(maxsize=1)
def grammar() -> Lark:
    """The Lark parser for the policy language (built once per process)."""
    from lark import Lark

    text = resources.files("stockade.policy_lang").joinpath("policy.lark").read_text(encoding="utf-8")
    return Lark(text, parser="lalr", strict=True, propagate_positions=False, maybe_placeholders=False,
                lexer_callbacks={"COMMENT": _collect_comment})


def _describe_expected(expected: set[str] | frozenset[str]) -> str:
    names = sorted({TERMINAL_WORDS.get(name, f"`{name.lower()}`") for name in expected if not name.startswith("__")})
    if not names:
        return ""
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]


def _token_text(token: object) -> str:
    text = str(token)
    if text.strip() == "":
        return "the end of the line" if "\n" in text else "whitespace"
    return f"`{text}`"


class _SyntaxErrors:
    """Collects syntax errors during a parse, one per line, phrased for people."""

    def __init__(self, filename: str, text: str):
        self.filename = filename
        # lines as the lexer counts them: only `\n` ends a line (`\r`, `\f`, U+2028 do not)
        self.lines = text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.items: list[Diagnostic] = []
        self.lines_with_errors: set[int] = set()
        self.hit_end = False

    def add(self, line: int, column: int, message: str, help: str | None = None, width: int = 1) -> None:
        if line in self.lines_with_errors or line > max(len(self.lines), 1):
            return  # beyond the text: the `}` added to close an unclosed block (already reported)
        self.lines_with_errors.add(line)
        span = Span(self.filename, line, column, line, column + max(width, 1))
        self.items.append(Diagnostic(codes.SYNTAX_ERROR, message, span, help))

    def on_error(self, error: Exception) -> bool:
        from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

        if isinstance(error, UnexpectedCharacters):
            line_text = self.lines[error.line - 1] if 0 < error.line <= len(self.lines) else ""
            char = line_text[error.column - 1: error.column] if line_text else ""
            if char == '"':
                self.add(error.line, error.column, "unterminated string",
                         help="close the string with `\"` on the same line", width=len(line_text) - error.column + 1)
            else:
                self.add(error.line, error.column, f"unexpected character `{char}`")
            return True
        if isinstance(error, UnexpectedToken):
            token = error.token
            if token.type == "$END":
                self.hit_end = True
                line = max(len(self.lines), 1)
                self.add(line, len(self.lines[-1]) + 1 if self.lines else 1,
                         "unexpected end of file", help="a block is not closed: add `}`")
                return False
            expected = _describe_expected(error.expected)
            found = _token_text(token)
            help_text = None
            if token.type == "STRING" and "WORD" in error.expected and "STRING" not in error.expected:
                help_text = "a section name is a bare word, e.g. `filesystem {`"
            elif token.type == "RBRACE" and "_NL" in error.expected:
                help_text = "put `}` on a line of its own"
            elif token.type == "RBRACE":
                help_text = "there is no block open here"
            elif token.type == "LBRACE":
                help_text = "a block starts with its section name, e.g. `network {`; blocks do not nest"
            elif token.type == "_NL" and "LBRACE" in error.expected:
                help_text = "put `{` on the same line as the section name"
            self.add(token.line, token.column, f"unexpected {found}" + (f", expected {expected}" if expected else ""),
                     help=help_text, width=len(str(token).rstrip("\r\n")) or 1)
            return True
        if isinstance(error, UnexpectedEOF):
            self.hit_end = True
            line = max(len(self.lines), 1)
            self.add(line, 1, "unexpected end of file", help="a block is not closed: add `}`")
            return False
        return False


def parse(text: str, filename: str = "<policy>") -> tuple[PolicyFile | None, list[Diagnostic]]:
    """Parse policy ``text``; returns the AST (None on syntax errors) and every diagnostic.

    Never raises for bad input: every problem is a diagnostic with a span.
    """
    from lark.exceptions import LarkError

    from stockade.policy_lang.ast_builder import build_ast, code_lines

    if "\x00" in text:
        index = text.index("\x00")
        line = text.count("\n", 0, index) + 1
        column = index - (text.rfind("\n", 0, index) + 1) + 1
        return None, [Diagnostic(codes.SYNTAX_ERROR, "unexpected NUL byte", Span(filename, line, column, line,
                                                                                 column + 1),
                                 "a policy is a text file")]
    source = text if text.endswith("\n") else text + "\n"
    errors = _SyntaxErrors(filename, text)
    try:
        parser = grammar()
    except Exception as exc:  # a broken installation, not a broken policy: say so
        return None, [Diagnostic(codes.GRAMMAR_UNAVAILABLE,
                                 f"internal error: the policy grammar cannot be built: {exc}",
                                 Span(filename, 1, 1), "reinstall stockade with its dependencies "
                                 "(`pip install stockade` brings lark and interegular)")]
    comments: list[Comment] = []
    _collected.comments = comments
    tree = None
    try:
        # an unclosed block at the end of the file: report it, close it, and parse on so
        # that the rest of the file is still checked
        for attempt in range(3):
            try:
                tree = parser.parse(source + "}\n" * attempt, on_error=errors.on_error)
                break
            except LarkError as exc:
                errors.on_error(exc)
                if not errors.hit_end:
                    break
                comments.clear()
    except RecursionError:
        errors.add(1, 1, "the policy is nested too deeply to parse")
    finally:
        _collected.comments = None
    if tree is None:
        if not errors.items:
            errors.add(1, 1, "the policy could not be parsed")
        return None, errors.items
    lines = code_lines(tree)
    marked = tuple(Comment(c.text, c.line, c.line in lines) for c in comments)
    policy, diagnostics = build_ast(tree, filename, marked)
    if errors.items:
        # the parser recovered: keep the builder's findings on lines without a syntax error
        extra = [d for d in diagnostics if d.span is None or d.span.line not in errors.lines_with_errors]
        return None, sorted(errors.items + extra, key=lambda d: (d.span.line, d.span.column) if d.span else (0, 0))
    return policy, diagnostics
