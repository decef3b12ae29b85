"""Codex CLI execution policy: ``.rules`` files (Starlark ``prefix_rule``) export and import.

Format (Codex's execpolicy README, ``codex-rs/execpolicy``)::

    prefix_rule(
        pattern = ["git", "push", ["--force", "-f"]],   # tokens left to right; a list = alternatives
        decision = "forbidden",                         # allow | prompt | forbidden (default allow)
        justification = "history rewrite on shared branches",
        match = [["git", "push", "--force"]],           # examples validated when Codex loads the file
    )

A rule matches a command whose argv starts with the pattern's tokens (exact words, each at
its position); when several match, the strictest decision wins (forbidden > prompt > allow)
— the same rule as Stockade's.  A program given as a path (``/usr/bin/sudo``) that matches no
rule as written is matched by its basename (Codex resolves host executables when it checks a
command, as ``codex execpolicy check --resolve-host-executables`` does).  Mapping:
``allow``→``allow``, ``confirm``→``prompt``, ``deny``→``forbidden``.

What Codex cannot express, each reported with the rule's origin: wildcards (``*``, ``**``
inside a pattern, ``"*.sh"``), flags anywhere/normalised (Codex matches a flag only at its
position and in its spelling), words past options (Stockade reads ``git -C dir push`` as
``git push``; Codex compares argv word by word, so a ``deny``/``confirm`` rule of several
words misses it), and every non-command section (filesystem, network, environment, limits,
``unknown-effects``/``unparsable``).  Files live in
``~/.codex/rules/*.rules`` (older releases: ``~/.codex/policy/*.codexpolicy``).

The importer reads the Starlark subset with Python's :mod:`ast` (Starlark call syntax is a
subset of Python's), never executing anything; errors are located at ``file:line:col``.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from stockade import catalogue as codes
from stockade.backends.base import OMITTED, Artifact, Handling, handled
from stockade.compiler.ir import CommandRule
from stockade.integrations.base import Exporter, Importer, PolicyDraft, has_glob, pattern_word, source_comment

DECISION_OF = {"allow": "allow", "confirm": "prompt", "deny": "forbidden"}
VERDICT_OF = {value: key for key, value in DECISION_OF.items()}
_RANK = {"allow": 0, "prompt": 1, "forbidden": 2}


# -- the model -------------------------------------------------------------------------


@dataclass(frozen=True)
class CodexRule:
    """One ``prefix_rule``: tokens (each a tuple of alternatives) and a decision."""

    pattern: tuple[tuple[str, ...], ...]
    decision: str
    justification: str | None = None
    line: int = 0


@dataclass(frozen=True)
class CodexModel:
    """Codex's decision for an argv: the strictest matching prefix rule."""

    rules: tuple[CodexRule, ...]

    def command_verdict(self, argv: Sequence[str]) -> str | None:
        """The Stockade verdict name of the strictest matching rule, or None.

        Like Codex's approval check (which resolves host executables): rules are matched
        against the argv as written first; only when none matches and the program is given
        as a path (``/usr/bin/sudo``) are they matched against its basename.  The gating by
        ``host_executable()`` entries is not modelled (the exporter writes none).
        """
        best = self._strictest(argv)
        if best is None and argv and "/" in argv[0] and os.path.basename(argv[0]):
            best = self._strictest([os.path.basename(argv[0]), *argv[1:]])
        return None if best is None else VERDICT_OF[best]

    def _strictest(self, argv: Sequence[str]) -> str | None:
        best: str | None = None
        for rule in self.rules:
            if len(argv) < len(rule.pattern):
                continue
            # a prefix match: the command may have more words than the pattern
            if all(word in alts for word, alts in zip(argv, rule.pattern, strict=False)) and (
                    best is None or _RANK[rule.decision] > _RANK[best]):
                best = rule.decision
        return best


# -- exporting -------------------------------------------------------------------------


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _control(char: str) -> str:
    """A control character as a Starlark escape; any other character unchanged."""
    if char in "\n\t\r":
        return _ESCAPES[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x20 or ord(char) == 0x7F else char


def _starlark_string(text: str) -> str:
    """A Starlark string literal.  Every control character is escaped: Codex's lexer drops a
    raw carriage return inside a string, so the rule would not keep its word or reason."""
    return '"' + "".join(_ESCAPES.get(c) or _control(c) for c in text) + '"'


def _comment(text: str) -> str:
    """A one-line ``#`` comment: a newline in a policy word would end it and turn the rest of
    the rule's text into Starlark code (a file Codex rejects, or a rule nobody wrote)."""
    return "# " + "".join(_control(c) for c in text)


def _token(alternatives: Sequence[str]) -> str:
    if len(alternatives) == 1:
        return _starlark_string(alternatives[0])
    return "[" + ", ".join(_starlark_string(a) for a in alternatives) + "]"


class CodexExporter(Exporter):
    """IR → Codex ``.rules``."""

    name: ClassVar[str] = "codex-rules"
    label: ClassVar[str] = "the codex rules format"
    #: codex rules hold command prefixes only
    SECTIONS: ClassVar[dict[str, Handling]] = {
        "filesystem": OMITTED, "network": OMITTED, "environment": OMITTED, "limits": OMITTED,
        "commands": handled("rules"), "session": OMITTED, "verdicts": OMITTED,
    }

    def pattern_of(self, rule: CommandRule) -> list[tuple[str, ...]] | None:
        """The Codex pattern of a command rule, or None (with a warning) when it has none."""
        tokens = list(rule.pattern)
        while tokens and tokens[-1].is_rest:
            tokens.pop()  # a trailing `**` is what a prefix already means
        text = f"{rule.verdict} {rule.text}"
        if any(t.is_rest or any(has_glob(a) for a in t.alternatives) for t in tokens) or not tokens:
            side = "stricter: not allowed" if rule.verdict == "allow" else "looser: not enforced"
            self.cannot_express(f"`{text}` uses wildcards, which codex prefix rules cannot express (exported "
                                f"{side})", rule.origin)
            return None
        if rule.verdict != "allow" and any(t.is_flag for t in tokens[1:]):
            self.cannot_express(f"`{text}`: codex matches flags only at their position and in their spelling "
                                "(exported looser: `git push origin --force` is not matched)", rule.origin)
        elif rule.verdict != "allow" and len(tokens) > 1:
            # stockade reads the words of a command past its options (`git -C dir push` is `git push`);
            # codex compares argv word by word from the start, so an option before a word hides it
            words = [t.alternatives[0] for t in tokens]
            example = " ".join([words[0], "--some-option", *words[1:]])
            self.cannot_express(f"`{text}`: codex matches each word only at its position (exported looser: "
                                f"`{example}` is not matched)", rule.origin)
        return [tuple(t.alternatives) for t in tokens]

    def rules(self) -> list[tuple[CommandRule, list[tuple[str, ...]]]]:
        """Every exportable command rule with its pattern."""
        out = []
        for rule in self.ir.commands:
            pattern = self.pattern_of(rule)
            if pattern is not None:
                out.append((rule, pattern))
        return out

    def render(self) -> Artifact:
        """The ``.rules`` text; ``data`` is the list of rules as JSON."""
        lines = [_comment(f"codex execution policy generated by `stockade export --to codex-rules` from policy "
                          f"`{self.ir.name}`"),
                 "# decisions: allow | prompt | forbidden; the strictest matching rule wins", ""]
        data = []
        for rule, pattern in self.rules():
            decision = DECISION_OF[rule.verdict]
            if rule.origin is not None:
                lines.append(_comment(f"{rule.origin}: {rule.verdict} {rule.text}"))
            lines.append("prefix_rule(")
            lines.append("    pattern = [" + ", ".join(_token(t) for t in pattern) + "],")
            lines.append(f"    decision = {_starlark_string(decision)},")
            if rule.reason and rule.reason.strip():  # codex rejects a blank justification
                lines.append(f"    justification = {_starlark_string(rule.reason)},")
            example = ", ".join(_starlark_string(t[0]) for t in pattern)
            lines.append(f"    match = [[{example}]],")
            lines.append(")")
            lines.append("")
            data.append({"pattern": [list(t) for t in pattern], "decision": decision,
                         "justification": rule.reason if rule.reason and rule.reason.strip() else None})
        return Artifact(self.name, "\n".join(lines).rstrip("\n") + "\n", data)


# -- importing -------------------------------------------------------------------------


def parse_rules(text: str, file: str, importer: Importer | None = None) -> list[CodexRule]:
    """Read ``prefix_rule`` calls from a ``.rules`` file (located errors on anything else)."""
    helper = importer or CodexImporter(text, file)
    try:
        module = ast.parse(text, filename=file)
    except SyntaxError as exc:
        raise helper.fail(codes.IMPORT_INVALID_RULES_FILE,
                          f"not a valid rules file: {(exc.msg or 'syntax error').lower()}",
                          exc.lineno or 1, exc.offset or 1) from None
    rules = []
    for stmt in module.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            raise helper.fail(codes.IMPORT_UNKNOWN_CALL, "expected a call such as `prefix_rule(...)`", stmt.lineno,
                              stmt.col_offset + 1)
        name = call.func.id
        if name != "prefix_rule":
            if name in ("host_executable", "network_rule"):
                if importer is not None:
                        importer.warn(f"`{name}(...)` has no stockade equivalent and is not imported", stmt.lineno,
                                  stmt.col_offset + 1)
                continue
            raise helper.fail(codes.IMPORT_UNKNOWN_CALL, f"unknown function `{name}`", call.lineno, call.col_offset + 1,
                              help="codex rules files hold `prefix_rule(...)` calls")
        rules.append(_prefix_rule(helper, call))
    return rules


def _literal(helper: Importer, node: ast.expr, what: str) -> Any:  # any literal: the caller checks its shape
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError):
        raise helper.fail(codes.IMPORT_BAD_PREFIX_RULE, f"`{what}` must be a literal", node.lineno,
                          node.col_offset + 1) from None


def _prefix_rule(helper: Importer, call: ast.Call) -> CodexRule:
    if call.args:
        raise helper.fail(codes.IMPORT_BAD_PREFIX_RULE, "`prefix_rule` takes keyword arguments only", call.lineno,
                          call.col_offset + 1)
    args = {kw.arg: kw for kw in call.keywords}
    for key, kw in args.items():
        if key not in ("pattern", "decision", "justification", "match", "not_match"):
            raise helper.fail(codes.IMPORT_BAD_PREFIX_RULE, f"unknown argument `{key}` of `prefix_rule`",
                              kw.value.lineno,
                              kw.value.col_offset + 1)
    if "pattern" not in args:
        raise helper.fail(codes.IMPORT_BAD_PREFIX_RULE, "`prefix_rule` needs a `pattern`", call.lineno,
                          call.col_offset + 1)
    node = args["pattern"].value
    raw = _literal(helper, node, "pattern")
    pattern: list[tuple[str, ...]] = []
    if not isinstance(raw, list) or not raw:
        raise helper.fail(codes.IMPORT_BAD_PREFIX_RULE, "`pattern` must be a non-empty list", node.lineno,
                          node.col_offset + 1)
    for item in raw:
        alts = tuple(item) if isinstance(item, list) else (item,)
        if not alts or not all(isinstance(a, str) and a for a in alts):
            raise helper.fail(codes.IMPORT_BAD_PREFIX_RULE,
                              "`pattern` tokens must be strings or non-empty lists of strings",
                              node.lineno, node.col_offset + 1)
        pattern.append(alts)
    decision = "allow"
    if "decision" in args:
        node = args["decision"].value
        decision = _literal(helper, node, "decision")
        if decision not in _RANK:
            raise helper.fail(codes.IMPORT_UNKNOWN_DECISION, f"unknown decision `{decision}`", node.lineno,
                              node.col_offset + 1,
                              help="use `allow`, `prompt` or `forbidden`")
    justification = None
    if "justification" in args:
        node = args["justification"].value
        justification = _literal(helper, node, "justification")
        if not isinstance(justification, str):
            raise helper.fail(codes.IMPORT_BAD_PREFIX_RULE, "`justification` must be a string", node.lineno,
                              node.col_offset + 1)
    return CodexRule(tuple(pattern), decision, justification, call.lineno)


class CodexImporter(Importer):
    """Codex ``.rules`` → policy (a ``commands`` block)."""

    name: ClassVar[str] = "codex-rules"

    def draft(self) -> PolicyDraft:
        """One command rule per ``prefix_rule``, each with a comment naming its line."""
        rules = parse_rules(self.source, self.file, self)
        draft = PolicyDraft(os.path.splitext(os.path.basename(self.file))[0] or "codex")
        draft.note(f"imported from codex rules `{os.path.basename(self.file)}` by `stockade import --from codex-rules`")
        draft.note("codex rules only decide commands: add filesystem and network rules (or `include` a base policy)")
        for rule in rules:
            words = []
            for alts in rule.pattern:
                if any(has_glob(a) or "|" in a for a in alts):
                    self.warn(f"the word `{'|'.join(alts)}` is literal in codex but a wildcard or choice in "
                              "stockade", rule.line)
                words.append("|".join(pattern_word(a) for a in alts) if len(alts) > 1 else pattern_word(alts[0]))
            line = f"{VERDICT_OF[rule.decision]} {' '.join(words)}"
            if rule.justification:
                from stockade.policy_lang.formatter import quote

                line += f" because {quote(rule.justification)}"
            shown = " ".join("|".join(a) for a in rule.pattern)
            draft.add("commands", line, source_comment(self.file, rule.line, f"prefix_rule {shown} ({rule.decision})"))
        return draft
