"""Lints of a merged policy: rules that compile but do not do what they seem to.

Warnings only (the policy still compiles), each with a code, the rule's location and the
rule that explains it:

* ``C250`` — a command rule no command can reach: every command it matches is also matched
  by a stricter rule, which therefore always decides (``allow git status`` under
  ``deny git``).  Found with the commands' own semantics: sample commands are built from
  the rule's pattern (each alternative, a neutral word for each wildcard) and judged by the
  merged rules; when a stricter rule decides every one of them, the rule is unreachable.
* ``C251`` — a grant that re-opens part of a denied tree (``read ~/.aws/credentials`` under
  ``deny ~/.aws``; ``write`` under ``readonly``): the more specific rule wins, so the
  warning says which access the path gets.
* ``C252`` — the ``test`` blocks of an included layer, which checking the including policy
  does not run (each file runs its own tests).
"""

from __future__ import annotations

import itertools
import posixpath
from collections.abc import Sequence

from stockade import catalogue as codes
from stockade.compiler.ir import FS_KIND_RANK, VERDICT_RANK, CommandRule, FsRule, PolicyIR
from stockade.diagnostics import DiagnosticSink, Related, Span

#: The word put for a wildcard when sampling the commands a rule matches (no rule names it).
NEUTRAL_WORD = _NEUTRAL = "stockade-any-word"
#: At most this many sample commands per rule.
_MAX_SAMPLES = 32


def _span(origin: object) -> Span | None:
    if origin is None:
        return None
    return Span(origin.file, origin.line, origin.column)  # type: ignore[attr-defined]


def _where(origin: object) -> str:
    return f"line {origin.line}" if origin is not None else "the policy"  # type: ignore[attr-defined]


def sample_commands(rule: CommandRule) -> list[list[str]]:
    """Concrete argvs the rule's pattern matches: each alternative of each word (up to
    :data:`_MAX_SAMPLES` combinations), a neutral word for ``*``-like words, and a trailing
    word for a ``**``."""
    choices: list[list[list[str]]] = []
    for token in rule.pattern:
        if token.is_rest:
            choices.append([[], [_NEUTRAL]])
            continue
        options = []
        for alternative in token.alternatives:
            if any(c in alternative for c in "*?["):
                options.append([alternative.replace("*", "x").replace("?", "x").split("[", 1)[0] or _NEUTRAL])
            else:
                options.append([alternative])
        choices.append(options)
    samples = []
    for combo in itertools.islice(itertools.product(*choices), _MAX_SAMPLES):
        argv = [word for part in combo for word in part]
        if argv:
            samples.append(argv)
    return samples


def unreachable_commands(ir: PolicyIR) -> list[tuple[CommandRule, CommandRule]]:
    """Every command rule whose sample commands are all decided by one stricter rule, with that rule."""
    out = []
    for rule in ir.commands:
        samples = sample_commands(rule)
        if not samples:
            continue
        deciders: list[CommandRule] = []
        for argv in samples:
            decision = ir.command_verdict(argv)
            if rule not in decision.matches:
                deciders = []
                break  # the sample is not what the rule matches (flags normalised away): no claim
            best = decision.rule
            if best is None or best is rule or VERDICT_RANK[best.verdict] <= VERDICT_RANK[rule.verdict]:
                deciders = []
                break
            deciders.append(best)
        if deciders:
            out.append((rule, deciders[0]))
    return out


def _below(path: str, root: str) -> bool:
    return path != root and (root == "/" or path.startswith(root.rstrip("/") + "/"))


def reopened_trees(ir: PolicyIR) -> list[tuple[FsRule, FsRule]]:
    """Every grant below a stricter rule's literal tree (``read`` or ``write`` under ``deny``,
    ``write`` under ``readonly``), with the nearest such rule above it."""
    denies = [r for r in ir.filesystem if not r.is_glob and r.kind in ("deny", "readonly") and r.origin is not None]
    out = []
    for rule in ir.filesystem:
        if rule.is_glob or rule.origin is None or rule.kind == "deny":
            continue
        above = [d for d in denies if _below(rule.pattern, d.pattern) and FS_KIND_RANK[d.kind] > FS_KIND_RANK[rule.kind]
                 and not (d.kind == "readonly" and rule.kind in ("read", "readonly"))]
        if above:
            out.append((rule, max(above, key=lambda d: len(d.pattern))))
    return out


def lint(ir: PolicyIR, layer_tests: Sequence[tuple[str, int, object]], sink: DiagnosticSink) -> None:
    """Add the lint warnings of a merged policy to ``sink`` (``layer_tests``: for every
    included layer with tests, its file, how many, and the first test's origin)."""
    for rule, decider in unreachable_commands(ir):
        span = _span(rule.origin)
        related = (Related(f"`{decider.verdict} {decider.text}` decides first", s),) if (
            s := _span(decider.origin)) else ()
        sink.warning(codes.UNREACHABLE_COMMAND_RULE,
                     f"`{rule.verdict} {rule.text}` never decides: `{decider.verdict} {decider.text}` "
                     f"({_where(decider.origin)}) matches every command it matches and is stricter",
                     span, f"remove it, or narrow `{decider.verdict} {decider.text}`", related)
    home = ir.context.home.rstrip("/")
    for grant, tree in reopened_trees(ir):
        path = grant.pattern
        shown = "~" + path[len(home):] if home and path.startswith(home + "/") else path
        tree_text = tree.source_text or tree.pattern
        where = (Related(f"`{tree.kind} {tree_text}` given here", s),) if (s := _span(tree.origin)) else ()
        access = {"read": "readable", "readonly": "readable", "write": "writable"}[grant.kind]
        sink.warning(codes.REOPENED_TREE,
                     f"`{grant.kind} {grant.source_text or path}` re-opens part of `{tree.kind} {tree_text}` "
                     f"({_where(tree.origin)}): the more specific rule wins, so `{shown}` is {access}",
                     _span(grant.origin), f"remove it if `{tree.kind} {tree_text}` should hold for the whole tree",
                     where)
    for file, count, origin in layer_tests:
        sink.warning(codes.INCLUDED_TESTS_NOT_RUN,
                     f"the {count} test{'s' if count != 1 else ''} of included `{posixpath.basename(file)}` "
                     f"{'are' if count != 1 else 'is'} not run with this policy", _span(origin),
                     f"run them with `stockade test {file}`")
