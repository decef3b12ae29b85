"""Parse policy text into an AST, collecting every diagnostic the parser can recover from.

Two steps: the Lark LALR grammar (``policy.lark``, strict mode) gives a concrete tree of
blocks and rules; :mod:`stockade.policy_lang.ast_builder` checks sections, keywords and
argument shapes and builds the typed AST.  Syntax errors are phrased in the language's own
words (never Lark terminal names), and the parser resumes after each one so that one run
reports all errors of a file.
"""

from __future__ import annotations

import re
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
        return "end of line" if "\n" in text else "whitespace"
    return f"`{text}`"


#: At most this many syntax errors are reported per file (each costs a parse of the file).
MAX_SYNTAX_ERRORS = 20
#: And at most this many characters are parsed in all while looking for more of them.
PARSE_BUDGET_CHARS = 1_500_000

_STRINGS_AND_COMMENTS = re.compile(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*')
_SURROGATE = re.compile("[\ud800-\udfff]")
_TOP_LEVEL_HELP = ('at the top level come `policy "name"`, `include "file"`, `enforced` and blocks '
                   '`SECTION {`, each on its own line')
_RULE_HELP = 'a rule is one line: `[locked] KEYWORD VALUE ... [because "reason"]`'


def _code_of(line: str) -> str:
    """A line without its strings and comment (to see its braces)."""
    return _STRINGS_AND_COMMENTS.sub(" ", line)


def _depths(lines: list[str]) -> list[int]:
    """How many blocks are open at the start of each line (blocks do not nest: 0 or 1 in a good file)."""
    depths: list[int] = []
    depth = 0
    for line in lines:
        depths.append(depth)
        for char in _code_of(line):
            if char == "{":
                depth += 1
            elif char == "}":
                depth = max(0, depth - 1)
    return depths


def _neutral(line: str, depth: int) -> str:
    """What a line with a syntax error is replaced by to parse on: nothing, but its braces kept
    (a block header stays a block, a rule ending in `}` still closes its block), so one bad line
    gives one error and not one on every line after it."""
    code = _code_of(line)
    opens, closes = "{" in code, "}" in code
    if depth == 0:
        return "_ {" if opens and code.rstrip().endswith("{") else ""
    if closes and not opens:
        return "}"
    return ""


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

    def add(self, line: int, column: int, message: str, help: str | None = None, width: int = 1) -> None:
        if line in self.lines_with_errors or line > max(len(self.lines), 1):
            return  # beyond the text: the `}` added to close an unclosed block (already reported)
        self.lines_with_errors.add(line)
        span = Span(self.filename, line, column, line, column + max(width, 1))
        self.items.append(Diagnostic(codes.SYNTAX_ERROR, message, span, help))

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""

    def end_of_file(self) -> None:
        line = max(len(self.lines), 1)
        self.add(line, len(self.lines[-1]) + 1 if self.lines else 1, "unexpected end of file",
                 help="a block is not closed: add `}` on a line of its own")

    def record(self, error: Exception, depths: list[int]) -> int | None:
        """Report ``error``; the line to neutralise, or None when the file ended inside a block."""
        from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

        if isinstance(error, UnexpectedCharacters):
            line_text = self.line_text(error.line)
            char = line_text[error.column - 1: error.column] if line_text else ""
            if char == '"':
                self.add(error.line, error.column, "unterminated string",
                         help="close the string with `\"` on the same line", width=len(line_text) - error.column + 1)
            else:
                self.add(error.line, error.column, f"unexpected character {char!r}"
                         if not char.isprintable() or char.isspace() else f"unexpected character `{char}`",
                         help="words are separated by spaces or tabs; quote a value that holds this character")
            return error.line
        if isinstance(error, UnexpectedEOF) or (isinstance(error, UnexpectedToken) and error.token.type == "$END"):
            self.end_of_file()
            return None
        if not isinstance(error, UnexpectedToken):  # pragma: no cover - lark raises only these
            self.add(1, 1, "the policy could not be parsed", help=_TOP_LEVEL_HELP)
            return 1
        token = error.token
        line, column = token.line or 1, token.column or 1
        if line > len(self.lines):  # the `}` added to close an unclosed block
            return None
        depth = depths[line - 1] if line - 1 < len(depths) else 0
        text = self.line_text(line)
        width = len(str(token).rstrip("\r\n")) or 1
        expected = set(error.expected)
        before = text[:column - 1].split()
        if expected == {"STRING"} and token.type != "_NL" and before:
            rest = _code_of(text[column - 1:]).strip() or str(token)
            what = {"policy": ("the policy name", "policy"), "include": ("the include path", "include"),
                    "because": ("the reason after `because`", "because")}.get(before[-1])
            if what is not None:
                self.add(line, column, f"{what[0]} must be quoted", help=f'write `{what[1]} "{rest}"`',
                         width=len(rest))
                return line
        if expected == {"STRING"} and token.type == "_NL" and before:
            missing = {"policy": "the policy needs a name", "include": "`include` needs a file",
                       "because": "`because` needs a reason"}.get(before[-1])
            if missing is not None:
                example = {"policy": 'policy "coding-agent"', "include": 'include "base.policy"',
                           "because": 'because "no privilege escalation"'}[before[-1]]
                self.add(line, column, missing, help=f"e.g. `{example}`")
                return line
        described = _describe_expected(expected)
        found = _token_text(token)
        help_text: str
        if token.type == "STRING" and "WORD" in expected and "STRING" not in expected:
            help_text = ("a section name is a bare word, e.g. `filesystem {`" if depth == 0 else
                         "a rule starts with its keyword, e.g. `deny \"~/.ssh\"`")
        elif token.type == "RBRACE":
            if depth == 0:
                help_text = "there is no block open here"
            elif "_NL" in expected:
                help_text = "put `}` on a line of its own"
            else:
                help_text = _RULE_HELP
        elif token.type == "LBRACE":
            help_text = ("blocks do not nest: close the block above with `}` first" if depth > 0 else
                         "a block starts with its section name, e.g. `network {`")
        elif token.type == "_NL" and "LBRACE" in expected:
            help_text = "put `{` on the same line as the section name"
        elif depth == 0:
            help_text = _TOP_LEVEL_HELP
        else:
            help_text = _RULE_HELP
        self.add(line, column, f"unexpected {found}" + (f", expected {described}" if described else ""),
                 help=help_text, width=width)
        return line


def parse(text: str, filename: str = "<policy>") -> tuple[PolicyFile | None, list[Diagnostic]]:
    """Parse policy ``text``; returns the AST (None on syntax errors) and every diagnostic.

    Never raises for bad input: every problem is a diagnostic with a span.
    """
    from lark.exceptions import UnexpectedInput

    from stockade.policy_lang.ast_builder import build_ast, code_lines

    if "\x00" in text:
        index = text.index("\x00")
        line = text.count("\n", 0, index) + 1
        column = index - (text.rfind("\n", 0, index) + 1) + 1
        return None, [Diagnostic(codes.SYNTAX_ERROR, "unexpected NUL byte", Span(filename, line, column, line,
                                                                                 column + 1),
                                 "a policy is a text file")]
    surrogate = _SURROGATE.search(text)
    if surrogate is not None:
        index = surrogate.start()
        line = text.count("\n", 0, index) + 1
        column = index - (text.rfind("\n", 0, index) + 1) + 1
        return None, [Diagnostic(codes.SYNTAX_ERROR, f"unexpected lone surrogate U+{ord(text[index]):04X}",
                                 Span(filename, line, column, line, column + 1),
                                 "a policy is UTF-8 text: this character cannot be encoded")]
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
    lines = source.split("\n")
    closing = 0
    budget = PARSE_BUDGET_CHARS
    try:
        # On a syntax error: report it, replace its line by a neutral one (its braces kept) and
        # parse again, so that every bad line is reported once and the good ones are still
        # checked; a file that ends inside a block is closed with `}` and parsed on.
        while True:
            current = "\n".join(lines) + "}\n" * closing
            budget -= len(current)
            comments.clear()
            try:
                tree = parser.parse(current)
                break
            except UnexpectedInput as exc:
                depths = _depths(lines)
                bad = errors.record(exc, depths)
                if bad is None:
                    closing += 1
                    if closing > 2:
                        break
                elif 0 < bad <= len(lines):
                    replacement = _neutral(lines[bad - 1], depths[bad - 1])
                    if lines[bad - 1] == replacement:
                        replacement = ""
                        if lines[bad - 1] == "":
                            break  # nothing left to neutralise: give up on this file
                    lines[bad - 1] = replacement
                else:
                    break
            if len(errors.items) >= MAX_SYNTAX_ERRORS or budget <= 0:
                why = ("too many syntax errors" if len(errors.items) >= MAX_SYNTAX_ERRORS else
                       "the file is too large to look for more syntax errors")
                errors.items.append(Diagnostic(codes.SYNTAX_ERROR, f"{why}: the rest of the file was not checked",
                                               Span(filename, 1, 1), "fix these first", "note"))
                tree = None
                break
    except RecursionError:
        errors.add(1, 1, "the policy is nested too deeply to parse")
    finally:
        _collected.comments = None
    if tree is None:
        if not errors.items:
            errors.add(1, 1, "the policy could not be parsed")
        return None, errors.items
    with_code = code_lines(tree)
    marked = tuple(Comment(c.text, c.line, c.line in with_code) for c in comments)
    policy, diagnostics = build_ast(tree, filename, marked)
    if errors.items:
        # the parser recovered: keep the builder's findings on lines without a syntax error
        extra = [d for d in diagnostics if d.span is None or d.span.line not in errors.lines_with_errors]
        return None, sorted(errors.items + extra, key=lambda d: (d.span.line, d.span.column) if d.span else (0, 0))
    return policy, diagnostics
