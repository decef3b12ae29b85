"""Run a policy's tests: ``test`` blocks and YAML suites of expected verdicts.

A test case is judged by a *judge*: a function ``(ir, command) -> Judgement``.  The CLI
passes the analyzer's judge; :func:`command_rules_judge` (command rules alone, on a plain
split of the command line) is the fallback that needs nothing beyond the compiler.  A
failing case names its location, the verdict it got, and the rule that decided.

YAML suites are lists of ``{command, expect[, name]}`` (or ``{tests: [...]}``); problems in
them are diagnostics with the YAML file's line and column.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from stockade import catalogue as codes
from stockade.compiler.ir import VERDICT_RANK, Origin, PolicyIR, TestCase
from stockade.diagnostics import DiagnosticSink, Span, StockadeError

if TYPE_CHECKING:  # pragma: no cover
    from stockade.compiler.ir import Verdict
    from stockade.diagnostics import Diagnostic


@dataclass(frozen=True)
class Judgement:
    """A judge's answer: the decision, a short reason, and the rule that decided (if any)."""

    decision: str
    reason: str = ""
    rule: Origin | None = None


Judge = Callable[[PolicyIR, str], Judgement]


@dataclass(frozen=True)
class TestOutcome:
    """One test case and what the judge said of it."""

    case: TestCase
    got: Judgement

    @property
    def passed(self) -> bool:
        return self.got.decision == self.case.expect

    def to_json(self) -> dict[str, Any]:
        """The outcome as a JSON object."""
        origin = self.case.origin
        return {
            "suite": self.case.suite,
            "command": self.case.command,
            "expect": self.case.expect,
            "got": self.got.decision,
            "passed": self.passed,
            "reason": self.got.reason,
            "rule": str(self.got.rule) if self.got.rule else None,
            "location": str(origin) if origin else None,
        }


_OPERATORS = {";", "&&", "||", "|", "&", "|&", ";;", "\n", "(", ")"}


def command_rules_judge(ir: PolicyIR, command: str) -> Judgement:
    """Judge a command line by the command rules alone (no effects): each simple command
    split at shell operators is matched; the strictest verdict wins; no match is allow."""
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        return Judgement(ir.unparsable.verdict, f"cannot split the command: {exc}", ir.unparsable.origin)
    best = Judgement("allow", "no command rule matches")
    segment: list[str] = []
    for token in [*tokens, ";"]:
        if token in _OPERATORS or set(token) <= set(";&|()"):
            if segment:
                decision = ir.command_verdict(segment)
                rule = decision.rule  # the rule that gave the verdict (None: no rule matches)
                if rule is not None and decision.verdict is not None \
                        and VERDICT_RANK[decision.verdict] >= VERDICT_RANK[best.decision] \
                        and (best.rule is None or VERDICT_RANK[decision.verdict] > VERDICT_RANK[best.decision]):
                    reason = f"`{rule.verdict} {rule.text}` matches" + (f": {rule.reason}" if rule.reason else "")
                    best = Judgement(decision.verdict, reason, rule.origin)
            segment = []
        else:
            segment.append(token)
    return best


def run_tests(ir: PolicyIR, cases: Sequence[TestCase] | None = None, judge: Judge | None = None) -> list[TestOutcome]:
    """Judge every case (default: the policy's own ``test`` blocks)."""
    judge = judge or command_rules_judge
    return [TestOutcome(case, judge(ir, case.command)) for case in (ir.tests if cases is None else cases)]


def select_cases(cases: Sequence[TestCase], pattern: str) -> list[TestCase]:
    """The cases whose suite name or command matches ``pattern`` (a glob with ``*``/``?``,
    else a substring)."""
    from fnmatch import fnmatchcase

    if any(c in pattern for c in "*?["):
        return [c for c in cases if fnmatchcase(c.suite, pattern) or fnmatchcase(c.command, pattern)]
    return [c for c in cases if pattern in c.suite or pattern in c.command]


def uncovered_rules(ir: PolicyIR, outcomes: Sequence[TestOutcome]) -> list[tuple[str, Origin]]:
    """The filesystem, network and command rules of the policy that no test exercised: none
    decided a test, and (command rules) none matched a simple command of one.  Each as
    (rule text, origin), in source order; rules the compiler implied (no source) are left out."""
    exercised: set[tuple[str, int, int]] = set()
    for outcome in outcomes:
        origin = outcome.got.rule
        if origin is not None:
            exercised.add((origin.file, origin.line, origin.column))
        for argv in _simple_commands(outcome.case.command):
            for rule in ir.command_verdict(argv).matches:
                if rule.origin is not None:
                    exercised.add((rule.origin.file, rule.origin.line, rule.origin.column))
    rules: list[tuple[str, Origin]] = []
    for fs in ir.filesystem:
        if fs.origin is not None and fs.source_text and "implied by" not in fs.source_text:
            rules.append((f"{fs.kind} {fs.source_text}", fs.origin))
    for net in ir.network.rules:
        if net.origin is not None:
            rules.append((f"{net.action} {net.host}", net.origin))
    for command in ir.commands:
        if command.origin is not None:
            rules.append((f"{command.verdict} {command.text}", command.origin))
    missing = [(text, o) for text, o in rules if (o.file, o.line, o.column) not in exercised]
    return sorted(missing, key=lambda item: (item[1].layer, item[1].file, item[1].line, item[1].column))


def _simple_commands(command: str) -> list[list[str]]:
    """The simple commands of a test's command line, split as words (best effort, for coverage)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return []
    out: list[list[str]] = [[]]
    for word in words:
        if word in _OPERATORS:
            out.append([])
        else:
            out[-1].append(word)
    return [argv for argv in out if argv]


def load_yaml_suite(path: str) -> list[TestCase]:
    """Read a YAML suite of test cases; raises :class:`StockadeError` with located problems."""
    import yaml

    sink = DiagnosticSink()
    from stockade.compiler.loader import MAX_POLICY_BYTES, FileTooLarge, NotARegularFile, read_regular_file

    try:
        data = read_regular_file(path, MAX_POLICY_BYTES)
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = _error(codes.BAD_TEST_SUITE, f"test suite `{path}` is not UTF-8 text (byte {exc.start})")
        raise StockadeError([problem]) from None
    except OSError as exc:
        reason = (f"`{path}` is {exc.what}, not a test suite" if isinstance(exc, NotARegularFile) else
                  f"test suite `{path}` is larger than {MAX_POLICY_BYTES // 2**20} MiB"
                  if isinstance(exc, FileTooLarge) else f"cannot read test suite `{path}`: {exc.strerror or exc}")
        raise StockadeError(sink.items + [_error(codes.BAD_TEST_SUITE, reason)]) from None
    too_deep = _yaml_too_deep(text)
    if too_deep is not None:
        sink.error(codes.BAD_TEST_SUITE, f"the test suite is nested deeper than {MAX_SUITE_DEPTH} levels",
                   Span(path, *too_deep), "a suite is a list of `{command, expect}` mappings")
        raise StockadeError(sink.items, {path: text})
    sink.sources[path] = text

    def span(node: yaml.Node) -> Span:
        mark = node.start_mark
        return Span(path, mark.line + 1, mark.column + 1)

    try:
        root = yaml.compose(text)
    except RecursionError:
        sink.error(codes.BAD_TEST_SUITE, "the test suite is nested too deeply", Span(path, 1, 1))
        raise StockadeError(sink.items, sink.sources) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Span(path, mark.line + 1, mark.column + 1) if mark else Span(path, 1, 1)
        sink.error(codes.BAD_TEST_SUITE, f"the test suite is not valid yaml: {getattr(exc, 'problem', None) or exc}",
                   where)
        raise StockadeError(sink.items, sink.sources) from None
    if root is None:
        return []
    if isinstance(root, yaml.MappingNode):
        tests = [value for key, value in root.value if isinstance(key, yaml.ScalarNode) and key.value == "tests"]
        if not tests:
            sink.error(codes.BAD_TEST_SUITE, "a test suite is a list of cases, or a mapping with `tests:`", span(root))
            raise StockadeError(sink.items, sink.sources)
        root = tests[0]
    if not isinstance(root, yaml.SequenceNode):
        sink.error(codes.BAD_TEST_SUITE, "a test suite is a list of cases", span(root), "e.g. `- command: git status`")
        raise StockadeError(sink.items, sink.sources)
    suite_name = path
    cases: list[TestCase] = []
    for item in root.value:
        if not isinstance(item, yaml.MappingNode):
            sink.error(codes.BAD_TEST_SUITE, "a test case is a mapping with `command` and `expect`", span(item))
            continue
        fields = {key.value: value for key, value in item.value if isinstance(key, yaml.ScalarNode)}
        unknown = sorted(set(fields) - {"command", "expect", "name"})
        for name in unknown:
            sink.error(codes.BAD_TEST_SUITE, f"unknown field `{name}` in a test case", span(item),
                       "fields: `command`, `expect`, `name`")
        command = fields.get("command")
        expect = fields.get("expect")
        if not isinstance(command, yaml.ScalarNode) or not command.value.strip():
            sink.error(codes.BAD_TEST_SUITE, "a test case needs a `command`", span(item))
            continue
        if not isinstance(expect, yaml.ScalarNode) or expect.value not in VERDICT_RANK:
            where = span(expect) if expect is not None else span(item)
            got = f" (got `{expect.value}`)" if isinstance(expect, yaml.ScalarNode) else ""
            sink.error(codes.BAD_TEST_SUITE, f"`expect` must be `allow`, `confirm` or `deny`{got}", where)
            continue
        name = fields.get("name")
        label = name.value if isinstance(name, yaml.ScalarNode) else suite_name
        where = span(item)
        verdict = cast("Verdict", expect.value)  # one of VERDICT_RANK, checked above
        cases.append(TestCase(label, verdict, command.value, Origin(path, where.line, where.column)))
    sink.raise_if_errors()
    return cases


#: A YAML suite nested deeper than this (flow brackets or indentation) is refused before parsing.
MAX_SUITE_DEPTH = 32


def _yaml_too_deep(text: str) -> tuple[int, int] | None:
    """Where a YAML text first nests deeper than :data:`MAX_SUITE_DEPTH` (flow ``[``/``{``
    outside quotes, or block indentation in steps of at least one space), if it does."""
    depth = 0
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip(" -")
        if len(line) - len(stripped) > MAX_SUITE_DEPTH * 8:
            return number, 1
        quote: str | None = None
        for column, char in enumerate(line, 1):
            if quote is not None:
                if char == quote:
                    quote = None
            elif char in "'\"":
                quote = char
            elif char == "#":
                break
            elif char in "[{":
                depth += 1
                if depth > MAX_SUITE_DEPTH:
                    return number, column
            elif char in "]}":
                depth -= 1
    return None


def _error(code: str, message: str) -> Diagnostic:
    from stockade.diagnostics import Diagnostic

    return Diagnostic(code, message)
