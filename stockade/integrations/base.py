"""The shared base of every integration: exporters, importers, target models.

An integration is one module per tool (``codex``, ``srt``, ``claude_code``, ``cursor``) that
may define, in the manner of sqlglot's dialects:

* an :class:`Exporter` subclass — IR → the tool's configuration file.  What the tool cannot
  express is recorded with :meth:`Exporter.cannot_express`, a warning naming the rule and
  its origin (``file:line:col``); nothing is dropped silently.  ``strict`` turns those
  warnings into one error (:class:`ExportError`).
* an :class:`Importer` subclass — the tool's file → policy text in the Stockade language,
  canonicalised by :func:`stockade.policy_lang.formatter.format_policy`, with comments that
  name the source entries.  Malformed input raises a located diagnostic (``X61x``).
* a *model* of the tool's own semantics (``path_access``, ``command_verdict``,
  ``host_allowed``), used by exporters to check their output against the IR (fidelity) and
  by the round-trip tests.

Each exporter declares a decision per policy section (``SECTIONS``, see
:mod:`stockade.backends.base`); a section the tool has no place for is ``OMITTED``: one
warning per rule.

Diagnostic codes: ``X600`` export refused under ``--strict``, ``X601`` a rule the target
cannot express exactly, ``X610``–``X619`` malformed import input, ``X620`` an import entry
with no Stockade equivalent, ``X630``–``X639`` hooks.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from stockade import catalogue as codes
from stockade.backends.base import Artifact, Target, origin_span
from stockade.compiler.ir import FsRule, Origin, PolicyIR
from stockade.diagnostics import Diagnostic, Span, StockadeError

# -- exporting -------------------------------------------------------------------------


class ExportError(StockadeError):
    """Raised under ``--strict`` when a target cannot express some rules; lists all of them."""


class Exporter(Target):
    """Base of every exporter: the section contract of :class:`~stockade.backends.base.Target`
    (plus :data:`~stockade.backends.base.OMITTED`), warnings keyed by origin, the strict switch."""

    KINDS: ClassVar[frozenset[str]] = frozenset({"handled", "runtime", "unsupported", "omitted"})
    ERROR: ClassVar[type[StockadeError]] = ExportError

    def __init__(self, ir: PolicyIR, **options: Any) -> None:
        super().__init__(ir, **options)
        self.strict = False
        self.allow_looser = False
        #: ``X602``: what the result would allow that the policy forbids (one per rule)
        self.looser_items: list[Diagnostic] = []
        self._seen: set[tuple[str, int, str]] = set()
        self._looser_keys: set[tuple[str, int, int, str]] = set()

    def looser(self, message: str, origin: Origin | None, help: str | None = None) -> None:
        """Record that the result allows something the policy forbids (``X602``, one per rule):
        an error unless ``allow_looser``, then a warning."""
        key = (origin.file, origin.line, origin.column, "") if origin else ("", 0, 0, message)
        if key in self._looser_keys:
            return
        self._looser_keys.add(key)
        self.looser_items.append(Diagnostic(codes.EXPORT_LOOSER, message, origin_span(origin), help, "error"))

    def cannot_express(self, message: str, origin: Origin | None, help: str | None = None) -> None:
        """Record that a rule cannot be expressed exactly (one warning per source line and message).

        A message that says the rule is exported looser (``exported looser``, ``looser than
        the policy``) is a looseness: it goes to :meth:`looser`, whichever exporter wrote it."""
        if _LOOSER.search(message):
            self.looser(message, origin, help)
            return
        key = (origin.file if origin else "", origin.line if origin else 0, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.warnings.append(Diagnostic(codes.EXPORT_APPROXIMATED, message, origin_span(origin), help, "warning"))

    def omit(self, message: str, origin: Origin | None) -> None:
        """A rule of an :data:`~stockade.backends.base.OMITTED` section: an ``X601`` warning."""
        self.cannot_express(message, origin)

    def finish(self, artifact: Artifact) -> Artifact:
        """Fail on unsupported rules; on a result looser than the policy unless ``allow_looser``
        (``X602``); and under ``strict`` when anything could not be expressed exactly."""
        artifact = super().finish(artifact)
        if self.looser_items and not self.allow_looser and not self.strict:
            note = Diagnostic(codes.EXPORT_LOOSER, f"the {self.name} file would be looser than the policy "
                              f"({len(self.looser_items)} rule{'s' if len(self.looser_items) != 1 else ''}); "
                              "nothing was written", None,
                              "pass `--allow-looser` to write it anyway, or enforce the policy with `stockade run`",
                              "error")
            raise ExportError([*self.looser_items, note, *self.warnings])
        looser = [Diagnostic(d.code, d.message, d.span, d.help, "warning") for d in self.looser_items]
        if self.strict and (self.warnings or looser):
            errors = [Diagnostic(codes.STRICT_EXPORT_REFUSED, f"`--strict`: {d.message}", d.span, d.help,
                                 "error") for d in [*looser, *self.warnings]]
            raise ExportError(errors)
        artifact.warnings[:0] = looser
        return artifact

    def export(self, strict: bool = False, allow_looser: bool = False) -> Artifact:
        """Render; fail on a looser result unless ``allow_looser``, and under ``strict`` when
        anything could not be expressed."""
        self.strict = strict
        self.allow_looser = allow_looser
        return self.build()


def json_text(data: Any) -> str:
    """Stable JSON text for configuration files (two-space indent, trailing newline)."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# -- paths -----------------------------------------------------------------------------

_GLOB_CHARS = re.compile(r"[*?\[]")


def has_glob(path: str) -> bool:
    """Whether a path holds wildcard characters."""
    return _GLOB_CHARS.search(path) is not None


def home_form(path: str, home: str) -> str:
    """``/home/u/.ssh`` → ``~/.ssh`` when under ``home``; other paths unchanged."""
    home = home.rstrip("/")
    if path == home:
        return "~"
    if path.startswith(home + "/"):
        return "~" + path[len(home):]
    return path


def is_under(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it (lexically)."""
    root = root.rstrip("/") or "/"
    return root == "/" or path == root or path.startswith(root + "/")


def depth(path: str) -> int:
    """Number of components of an absolute path."""
    return len([p for p in path.split("/") if p])


def probe_paths(ir: PolicyIR) -> list[tuple[FsRule, str]]:
    """For every filesystem rule, concrete paths it decides (its path and a child below it).

    Glob rules are instantiated: a leading ``/**/`` becomes the workspace, other wildcards
    plain names.
    """
    out: list[tuple[FsRule, str]] = []
    for rule in ir.filesystem:
        pattern = rule.pattern
        if rule.is_glob:
            if pattern.startswith("/**/"):
                pattern = ir.context.workspace.rstrip("/") + "/" + pattern[4:]
            pattern = pattern.replace("**", "probe").replace("*", "probe").replace("?", "p")
        out.append((rule, pattern))
        out.append((rule, pattern.rstrip("/") + "/stockade-probe"))
    return out


def fs_fidelity(exporter: Exporter, model_access: Callable[[str], str]) -> None:
    """Compare the target's path access with the IR's on every rule's probes: a looser one is
    ``X602`` (:meth:`Exporter.looser`), a stricter one a warning; messages name the rule's own
    path (never the probe names made up for the check)."""
    ir = exporter.ir
    for rule, probe in probe_paths(ir):
        want = ir.path_access(probe)
        if want.rule is not rule and want.rule != rule:
            continue  # another, more specific rule decides this probe; it gets its own check
        got = model_access(probe)
        if got != want.access:
            looser = _ACCESS_RANK[got] > _ACCESS_RANK[want.access]
            shown = (rule.source_text or rule.pattern) if rule.is_glob else home_form(rule.pattern, ir.context.home)
            where = (f"paths matching `{shown}` get" if rule.is_glob else
                     f"`{shown}` gets" if not probe.endswith("/stockade-probe") else f"paths below `{shown}` get")
            text = f"`{rule.kind} {rule.source_text or rule.pattern}`"
            if looser:
                exporter.looser(f"{text} is exported looser than the policy: {where} {got} access instead of "
                                f"{want.access}", rule.origin)
            else:
                exporter.cannot_express(f"{text} is exported stricter than the policy: {where} {got} access "
                                        f"instead of {want.access}", rule.origin)


def command_fidelity(exporter: Exporter, model_verdict: Callable[[Sequence[str]], str | None]) -> None:
    """Compare the target's verdicts with the IR's on sample commands of every command rule
    (:func:`stockade.compiler.lint.sample_commands`): a milder one is ``X602``.  A command the
    target decides with no rule of its own is not compared (its default is the tool's)."""
    from stockade.compiler.ir import VERDICT_RANK
    from stockade.compiler.lint import NEUTRAL_WORD, sample_commands

    ir = exporter.ir
    for rule in ir.commands:
        for argv in sample_commands(rule):
            want = ir.command_verdict(argv)
            if want.verdict is None or (want.rule is not rule and want.rule != rule):
                continue  # another rule decides this sample; it gets its own check
            got = model_verdict(argv)
            if got is not None and VERDICT_RANK[got] < VERDICT_RANK[want.verdict]:
                shown = " ".join("…" if word == NEUTRAL_WORD else word for word in argv)
                exporter.looser(f"`{rule.verdict} {rule.text}` is exported looser than the policy: `{shown}` is "
                                f"`{got}` in {getattr(exporter, 'label', exporter.name)} instead of `{want.verdict}`", rule.origin)
                break


_ACCESS_RANK = {"none": 0, "read": 1, "write": 2}
_LOOSER = re.compile(r"exported looser|looser than the policy")


# -- importing -------------------------------------------------------------------------


class ImportFailed(StockadeError):
    """Raised when an input file cannot be read as the target's format (located diagnostics)."""


def located_error(code: str, message: str, file: str, line: int = 1, column: int = 1,
                  help: str | None = None, text: str | None = None) -> ImportFailed:
    """One located import diagnostic as an exception (with the source for the caret)."""
    span = Span(file, max(line, 1), max(column, 1))
    return ImportFailed(Diagnostic(code, message, span, help), {file: text} if text is not None else None)


#: JSON input nested deeper than this is refused (settings files are a few levels deep).
MAX_JSON_DEPTH = 64
#: Integers with more digits than this are refused (no setting needs them).
MAX_INT_DIGITS = 30


class _HugeNumber(ValueError):
    pass


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _HugeNumber(text)
    return int(text)


def _bounded_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _HugeNumber(text)
    return value


def _json_depth(text: str) -> tuple[int, int]:
    """The deepest nesting of ``[``/``{`` in JSON text (outside strings) and where it first passes
    :data:`MAX_JSON_DEPTH` (an index; -1 if it never does)."""
    depth = deepest = 0
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return depth, index
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest, -1


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def load_json(text: str, file: str) -> Any:
    """Parse JSON, turning a syntax error into a located ``X610`` diagnostic; input nested
    deeper than :data:`MAX_JSON_DEPTH`, integers of more than :data:`MAX_INT_DIGITS` digits
    and non-finite numbers are refused (``X610``, ``X612``) before they can cost a traceback."""
    _, too_deep = _json_depth(text)
    if too_deep >= 0:
        raise located_error(codes.IMPORT_INVALID_JSON, f"the input is nested deeper than {MAX_JSON_DEPTH} levels",
                            file, *_position(text, too_deep), help="a settings file is a few levels deep",
                            text=text)
    try:
        return json.loads(text, parse_int=_bounded_int, parse_float=_bounded_float, parse_constant=_bounded_float)
    except json.JSONDecodeError as exc:
        raise located_error(codes.IMPORT_INVALID_JSON, f"not valid JSON: {exc.msg.lower()}", file, exc.lineno,
                            exc.colno,
                            text=text) from None
    except _HugeNumber as exc:
        index = text.find(str(exc))
        shown = str(exc) if len(str(exc)) <= 20 else str(exc)[:17] + "..."
        raise located_error(codes.IMPORT_BAD_VALUE, f"the number `{shown}` is out of range", file,
                            *_position(text, max(index, 0)), help="no setting takes a number this large",
                            text=text) from None
    except RecursionError:
        raise located_error(codes.IMPORT_INVALID_JSON, "the input is nested too deeply", file, text=text) from None


def locate_key(text: str, key: str, after: int = 0) -> tuple[int, int]:
    """Line and column of the first ``"key"`` in JSON text (1, 1 when absent)."""
    index = text.find(json.dumps(key), after)
    if index < 0:
        return 1, 1
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def locate_value(text: str, value: str) -> tuple[int, int]:
    """Line and column of a JSON string value (1, 1 when absent)."""
    return locate_key(text, value)


@dataclass
class PolicyDraft:
    """A policy being written by an importer: sections of (comment, rule line) entries."""

    name: str
    header_comments: list[str] = field(default_factory=list)
    sections: dict[str, list[tuple[str | None, str]]] = field(default_factory=dict)

    def add(self, section: str, rule: str, comment: str | None = None) -> None:
        """Add one rule line (``deny ~/.ssh``) with an optional comment line above it (repeats are skipped).

        Two filesystem rules on one path that say the same thing twice merge into the
        stronger one (``read`` and ``write`` → ``write``; ``read`` and ``readonly`` →
        ``readonly``; ``readonly`` and ``deny`` → ``deny``), as the source tool means them;
        other pairs stay (and fail the import's check)."""
        entries = self.sections.setdefault(section, [])
        if any(existing == rule for _, existing in entries):
            return
        if section == "filesystem":
            kind, _, word = rule.partition(" ")
            for index, (old_comment, existing) in enumerate(entries):
                old_kind, _, old_word = existing.partition(" ")
                if old_word != word or " " in word.strip('"'):
                    continue
                merged = _MERGED.get(frozenset((kind, old_kind)))
                if merged is not None:
                    entries[index] = (old_comment, f"{merged} {word}")
                    return
        entries.append((comment, rule))

    def note(self, text: str) -> None:
        """A comment at the top of the file."""
        self.header_comments.append(text)

    def text(self) -> str:
        """The draft as policy text (not yet canonical)."""
        lines = [f"# {c}" for c in self.header_comments]
        lines.append(f"policy {quote_word(self.name, force=True)}")
        for section in ("filesystem", "network", "environment", "limits", "commands"):
            entries = self.sections.get(section)
            if not entries:
                continue
            lines.append("")
            lines.append(f"{section} {{")
            last_comment = None
            for comment, rule in entries:
                if comment is not None and comment != last_comment:
                    lines.append(f"    # {comment}")
                last_comment = comment
                lines.append(f"    {rule}")
            lines.append("}")
        return "\n".join(lines) + "\n"


_MERGED = {frozenset(("read", "write")): "write", frozenset(("readonly", "deny")): "deny",
           frozenset(("read", "readonly")): "readonly"}


def quote_word(text: str, force: bool = False) -> str:
    """A word for policy text: bare when the grammar allows it, else quoted."""
    from stockade.policy_lang.formatter import needs_quotes, quote

    return quote(text) if force or needs_quotes(text) else text


def pattern_word(text: str) -> str:
    """A literal command word for a pattern: ``|`` and wildcards are quoted so they stay literal."""
    from stockade.policy_lang.formatter import needs_quotes, quote

    if needs_quotes(text) or "|" in text:
        return quote(text)
    return text


def finish_policy(draft: PolicyDraft, file: str = "<import>") -> str:
    """Render a draft, parse it and return its canonical text (raises if it does not parse)."""
    from stockade.policy_lang import parse
    from stockade.policy_lang.formatter import format_policy

    text = draft.text()
    ast, diagnostics = parse(text, IMPORTED_POLICY)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise ImportFailed([_invalid(file, len(errors)), *errors], {IMPORTED_POLICY: text})
    if ast is None:
        raise ImportFailed(Diagnostic(codes.IMPORT_RESULT_UNPARSABLE, "the imported policy does not parse"),
                           {IMPORTED_POLICY: text})
    return format_policy(ast, text)


def _invalid(file: str, count: int) -> Diagnostic:
    return Diagnostic(codes.IMPORT_RESULT_INVALID,
                      f"the policy imported from `{os.path.basename(file)}` does not compile "
                      f"({count} error{'s' if count != 1 else ''}); nothing was written",
                      None, "fix the entries named below in the input, or import and edit by hand")


class Importer:
    """Base of every importer: ``convert(text, file) -> ImportResult``."""

    name: ClassVar[str] = ""

    def __init__(self, text: str, file: str, *, home: str | None = None):
        self.source = text
        self.file = file
        self.home = home
        self.warnings: list[Diagnostic] = []

    def warn(self, message: str, line: int = 1, column: int = 1) -> None:
        """An entry with no Stockade equivalent (``X620``), located in the input."""
        self.warnings.append(Diagnostic(codes.IMPORT_ENTRY_DROPPED, message, Span(self.file, line, column), None,
                                        "warning"))

    def fail(self, code: str, message: str, line: int = 1, column: int = 1, help: str | None = None) -> ImportFailed:
        """A located error for malformed input."""
        return located_error(code, message, self.file, line, column, help, self.source)

    def draft(self) -> PolicyDraft:
        """Build the policy draft (subclasses implement it)."""
        raise NotImplementedError

    def convert(self) -> ImportResult:
        """The imported policy as canonical text, with warnings.

        The text is compiled before it is returned: an import that would write a policy
        `stockade check` rejects (conflicting rules, an undefined variable, a `~user` path)
        fails with ``X621`` and the compiler's diagnostics."""
        try:
            draft = self.draft()
        except (RecursionError, MemoryError):
            raise self.fail(codes.IMPORT_BAD_VALUE, "the input is nested too deeply to import",
                            help="a settings file is a few levels deep") from None
        text = finish_policy(draft, self.file)
        check_imported_policy(text, self.file, self.home)
        return ImportResult(text, list(self.warnings))


#: The name under which an imported policy's own diagnostics are located.
IMPORTED_POLICY = "<imported policy>"


def check_imported_policy(text: str, file: str, home: str | None) -> None:
    """Compile an imported policy's text; raise :class:`ImportFailed` (``X621``) with the
    compiler's diagnostics when it does not compile."""
    from stockade.compiler.pipeline import compile_policy

    home = home or os.path.expanduser("~")
    try:
        compile_policy(text=text, workspace="/stockade-import-check/workspace", home=home,
                       tmpdir="/stockade-import-check/tmp", environ={})
    except StockadeError as error:
        found = [d if d.span is None or d.span.file != "<policy>" else _relocate(d) for d in error.diagnostics
                 if d.severity == "error"]
        raise ImportFailed([_invalid(file, len(found)), *found], {IMPORTED_POLICY: text}) from None


def _relocate(diagnostic: Diagnostic) -> Diagnostic:
    """A compiler diagnostic of ``<policy>`` (text compiled without a file) named after the import."""
    from dataclasses import replace

    from stockade.diagnostics import Related

    def move(span: Span) -> Span:
        return replace(span, file=IMPORTED_POLICY) if span.file == "<policy>" else span

    return replace(diagnostic, span=move(diagnostic.span) if diagnostic.span else None,
                   related=tuple(Related(r.message, move(r.span)) for r in diagnostic.related))


@dataclass(frozen=True)
class ImportResult:
    """An imported policy: canonical policy text and the entries that had no equivalent."""

    text: str
    warnings: list[Diagnostic]


def expect_list_of_str(importer: Importer, value: Any, key: str, where: int = 0) -> list[str]:
    """``value`` as a list of strings, or a located ``X611`` error naming ``key``."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        line, col = locate_key(importer.source, key, where)
        raise importer.fail(codes.IMPORT_WRONG_TYPE, f"`{key}` must be a list of strings", line, col)
    return list(value)


def expect_object(importer: Importer, value: Any, key: str) -> dict[str, Any]:
    """``value`` as a JSON object (missing → empty), or a located ``X611`` error."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        line, col = locate_key(importer.source, key) if key != "(root)" else (1, 1)
        raise importer.fail(codes.IMPORT_WRONG_TYPE, f"`{key}` must be a JSON object", line, col)
    return value


def source_comment(file: str, line: int, text: str) -> str:
    """A comment naming a source entry: ``from FILE:LINE: TEXT`` (shortened)."""
    text = " ".join(text.split())
    if len(text) > 90:
        text = text[:87] + "..."
    return f"from {os.path.basename(file)}:{line}: {text}"


def dedupe(items: Sequence[str]) -> list[str]:
    """Items in first-seen order without repeats."""
    return list(dict.fromkeys(items))
