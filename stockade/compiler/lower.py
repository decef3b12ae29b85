"""Lower one layer's AST to IR rules: resolve variables, canonicalise paths, check conflicts.

Variables: ``~`` is the context's home; ``$WORKSPACE``, ``$HOME``, ``$TMPDIR`` come from
the context, any other ``$NAME``/``${NAME}`` from the environment.  An undefined variable
is an error (never an empty string).  Paths are made absolute (relative ones against the
workspace), normalised, and symlinks of their existing prefix are resolved, so ``/tmp`` is
``/private/tmp`` on macOS; paths that do not exist yet still compile.  Globs keep their
wildcard part; their literal prefix is canonicalised the same way.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from stockade import catalogue as codes
from stockade.compiler.ir import (
    CommandRule,
    Context,
    EnvRule,
    FsRule,
    HostPattern,
    LimitRule,
    NetRule,
    Origin,
    PatternToken,
    SessionRule,
    TestCase,
    VerdictSetting,
)
from stockade.diagnostics import DiagnosticSink, Related, Span
from stockade.policy_lang.ast import (
    CommandRuleNode,
    EnvNamesNode,
    EnvSetNode,
    FsRuleNode,
    LimitNode,
    NetDefaultNode,
    NetRuleNode,
    PatternNode,
    PolicyFile,
    SessionNode,
    TestCaseNode,
    VerdictSettingNode,
    Visitor,
    Word,
)

_VARIABLE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")
_GLOB_CHARS = re.compile(r"[*?\[]")
#: On macOS these live under /private; used when compiling for darwin on another system.
_DARWIN_PRIVATE = ("/tmp", "/var", "/etc")


@dataclass
class LayerRules:
    """The IR rules of one layer, before layers are merged."""

    index: int
    file: str
    name: str | None
    enforced: bool
    filesystem: list[FsRule] = field(default_factory=list)
    network_default: VerdictSetting | None = None  # verdict holds "allow"/"deny"
    network: list[NetRule] = field(default_factory=list)
    environment: list[EnvRule] = field(default_factory=list)
    limits: list[LimitRule] = field(default_factory=list)
    commands: list[CommandRule] = field(default_factory=list)
    session: list[SessionRule] = field(default_factory=list)
    unknown_effects: VerdictSetting | None = None
    unparsable: VerdictSetting | None = None
    tests: list[TestCase] = field(default_factory=list)


def _origin(span: Span | None, layer: int) -> Origin | None:
    return Origin(span.file, span.line, span.column, layer) if span else None


def host_platform() -> str:
    """The platform name of the machine compiling (``linux``, ``darwin`` or ``windows``)."""
    return {"darwin": "darwin", "win32": "windows"}.get(sys.platform, "linux")


def darwin_canonical(path: str) -> str:
    """A normalised absolute path spelled the way macOS resolves it: ``/tmp``, ``/var`` and
    ``/etc`` are symlinks into ``/private``; nothing else is rewritten (``/bin`` stays
    ``/bin``: macOS has no merged ``/usr``)."""
    for root in _DARWIN_PRIVATE:
        if path == root or path.startswith(root + "/"):
            return "/private" + path
    return path


def resolve_posix(path: str, platform: str) -> str:
    """The canonical spelling of a POSIX path for ``platform``: normalised, and its symlinks
    resolved by the rules of the *target*.  The compiling machine's symlinks are followed only
    when it is the target platform; cross-compiling for macOS applies macOS's own aliases
    (never, say, a Linux host's merged-``/usr`` ``/bin`` → ``/usr/bin``)."""
    normal = posixpath.normpath(path)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    if not posixpath.isabs(normal):
        return normal
    if platform == "darwin":
        normal = darwin_canonical(normal)
    if platform != host_platform():
        return normal
    resolved = os.path.realpath(normal)
    return darwin_canonical(resolved) if platform == "darwin" else resolved


class PathResolver:
    """Expands variables and canonicalises paths for one context and platform."""

    def __init__(self, context: Context, environ: Mapping[str, str]):
        self.context = context
        self.environ = environ
        self.windows = context.platform == "windows"
        self.variables = {"WORKSPACE": context.workspace, "HOME": context.home, "TMPDIR": context.tmpdir}

    def expand(self, word: Word, sink: DiagnosticSink) -> str | None:
        """``word`` with ``~`` and ``$VARIABLES`` expanded; None (with an error) if undefined."""
        text = word.text
        if text == "~" or text.startswith("~/") or (self.windows and text.startswith("~\\")):
            text = "$HOME" + text[1:]
        elif text.startswith("~"):
            sink.error(codes.UNSUPPORTED_TILDE, f"`{text.split('/')[0]}` is not supported", word.span,
                       "only `~` (the context's home) may start a path")
            return None
        failed = False

        def replace(match: re.Match[str]) -> str:
            nonlocal failed
            name = match["braced"] or match["bare"]
            if name in self.variables:
                return self.variables[name]
            if name in self.environ:
                return self.environ[name]
            failed = True
            span = word.span
            if span is not None:
                offset = match.start() + (1 if word.quoted else 0)
                # `~` was rewritten to `$HOME`: columns only shift for text after it
                span = Span(span.file, span.line, span.column + offset, span.line,
                            span.column + offset + len(match.group(0)))
            sink.error(codes.UNDEFINED_VARIABLE, f"undefined variable `${name}`", span,
                       "defined: `$WORKSPACE`, `$HOME`, `$TMPDIR` and the variables of the environment")
            return ""

        expanded = _VARIABLE.sub(replace, text)
        return None if failed else expanded

    def canonical(self, path: str, literal: bool = False) -> tuple[str, bool]:
        """The canonical form of an expanded path or glob, and whether it is a glob.

        ``literal``: the wildcard characters in ``path`` all came from variable values, so
        the path names exactly one file (see :meth:`wildcard_source`)."""
        is_glob = not literal and bool(_GLOB_CHARS.search(path))
        if self.windows:
            return self._canonical_windows(path, is_glob), is_glob
        if is_glob and not path.startswith("/"):
            # a relative glob that starts with `**` matches anywhere; others are workspace-relative
            path = "/" + path if path.startswith("**") else posixpath.join(self.context.workspace, path)
        elif not path.startswith("/"):
            path = posixpath.join(self.context.workspace, path)
        if not is_glob:
            return self._resolve(path), False
        parts = path.split("/")
        first_wild = next(i for i, part in enumerate(parts) if _GLOB_CHARS.search(part))
        prefix = "/".join(parts[:first_wild]) or "/"
        rest = "/".join(parts[first_wild:])
        resolved = self._resolve(prefix)
        pattern = (resolved.rstrip("/") + "/" + rest)
        while pattern.endswith("/**") and len(pattern) > 3:  # a rule covers its subtree anyway
            pattern = pattern[:-3]
        return pattern, bool(_GLOB_CHARS.search(pattern))

    def wildcard_source(self, word: Word) -> tuple[bool, bool]:
        """Whether the written text of ``word`` has wildcards of its own, and whether the
        values of its variables (``~`` included) hold wildcard characters."""
        text = "$HOME" + word.text[1:] if word.text == "~" or word.text.startswith(("~/", "~\\")) else word.text
        written = bool(_GLOB_CHARS.search(_VARIABLE.sub("", text)))
        from_values = False
        for match in _VARIABLE.finditer(text):
            name = match["braced"] or match["bare"]
            value = self.variables.get(name, self.environ.get(name, ""))
            from_values = from_values or bool(_GLOB_CHARS.search(value))
        return written, from_values

    def _resolve(self, path: str) -> str:
        return resolve_posix(path, self.context.platform)

    def _canonical_windows(self, path: str, is_glob: bool) -> str:
        path = path.replace("/", "\\")
        if is_glob and path.startswith("**"):
            # "anywhere", as `/**/…` on POSIX: from the root of the workspace's drive
            drive = ntpath.splitdrive(self.context.workspace)[0]
            path = drive + "\\" + path
        elif not ntpath.isabs(path):
            path = ntpath.join(self.context.workspace, path)
        return ntpath.normpath(path) if not is_glob else path


class Lowerer(Visitor):
    """Lowers the rules of one :class:`PolicyFile` into a :class:`LayerRules`."""

    def __init__(self, ast: PolicyFile, index: int, resolver: PathResolver, sink: DiagnosticSink):
        self.ast = ast
        self.index = index
        self.resolver = resolver
        self.sink = sink
        self.out = LayerRules(index, ast.file, ast.name, ast.enforced)
        self.locked_all = ast.enforced
        # per-layer duplicate/conflict detection: key → (rule kind, span, source text)
        self.seen_paths: dict[str, tuple[str, Span | None, str]] = {}
        self.seen_hosts: dict[HostPattern, tuple[str, Span | None]] = {}
        self.seen_patterns: dict[str, tuple[str, Span | None]] = {}
        self.seen_singletons: dict[str, tuple[str, Span | None]] = {}
        self.seen_env: dict[str, tuple[str, Span | None]] = {}

    def lower(self) -> LayerRules:
        """Lower every block of the file."""
        for block in self.ast.blocks:
            self.current_label = block.label
            for rule in block.rules:
                self.visit(rule)
        return self.out

    def origin(self, span: Span | None) -> Origin | None:
        return _origin(span, self.index)

    def locked(self, locked: bool) -> bool:
        return locked or self.locked_all

    def _conflict(self, what: str, first: tuple[str, Span | None], second_kind: str, span: Span | None,
                  hard: bool) -> None:
        kind, first_span = first
        related = (Related(f"`{kind}` given here", first_span),) if first_span else ()
        if kind == second_kind:
            self.sink.warning(codes.DUPLICATE_RULE, f"duplicate rule: {what}", span, "remove one of them", related)
        elif hard:
            self.sink.error(codes.CONFLICTING_RULES, f"conflicting rules: `{kind}` and `{second_kind}` on {what}", span,
                            "keep the one you mean", related)
        else:
            self.sink.warning(codes.RULES_MEET, f"rules `{kind}` and `{second_kind}` meet on {what} once variables are "
                              "resolved; the stricter applies", span, None, related)

    # -- visitors ------------------------------------------------------------------------

    def visit_FsRuleNode(self, node: FsRuleNode) -> None:
        for word in node.paths:
            expanded = self.resolver.expand(word, self.sink)
            if expanded is None:
                continue
            written, from_values = self.resolver.wildcard_source(word)
            if written and from_values:
                self.sink.error(codes.WILDCARD_IN_VARIABLE,
                                f"`{word.text}` is a glob, and its variables expand to names holding `*`, `?` or "
                                f"`[`", word.span, "rename the directory, or write the rule without the variable")
                continue
            pattern, is_glob = self.resolver.canonical(expanded, literal=not written)
            previous = self.seen_paths.get(pattern)
            if previous is not None:
                same_text = previous[2].rstrip("/") == word.text.rstrip("/")
                if previous[0] == node.kind:
                    if same_text:  # the same path twice only through variables is expected
                        self._conflict(f"`{pattern}`", previous[:2], node.kind, word.span, hard=True)
                    continue
                self._conflict(f"`{pattern}`", previous[:2], node.kind, word.span, hard=same_text)
            else:
                self.seen_paths[pattern] = (node.kind, word.span, word.text)
            self.out.filesystem.append(FsRule(node.kind, pattern, is_glob, self.locked(node.locked), word.text,
                                              self.origin(word.span)))

    def visit_NetDefaultNode(self, node: NetDefaultNode) -> None:
        if self._singleton("network default", node.action, node.span):
            self.out.network_default = VerdictSetting(node.action, self.locked(node.locked), self.origin(node.span))

    def visit_NetRuleNode(self, node: NetRuleNode) -> None:
        for host in node.hosts:
            pattern = HostPattern(host.kind, host.value, host.port)
            previous = self.seen_hosts.get(pattern)
            if previous is not None:
                self._conflict(f"`{host.word.text}`", previous, node.action, host.word.span, hard=True)
                continue
            self.seen_hosts[pattern] = (node.action, host.word.span)
            self.out.network.append(NetRule(node.action, pattern, self.locked(node.locked),
                                            self.origin(host.word.span)))

    def visit_EnvNamesNode(self, node: EnvNamesNode) -> None:
        for word in node.names:
            previous = self.seen_env.get(word.text)
            if previous is not None:
                self._conflict(f"`{word.text}`", previous, node.action, word.span, hard=True)
                continue
            self.seen_env[word.text] = (node.action, word.span)
            self.out.environment.append(EnvRule(node.action, word.text, None, self.locked(node.locked),
                                                self.origin(word.span)))

    def visit_EnvSetNode(self, node: EnvSetNode) -> None:
        for assignment in node.assignments:
            key = f"set {assignment.name}"
            value_word = Word(assignment.value, True, assignment.word.span)
            value = self.resolver.expand(value_word, self.sink) if "$" in assignment.value else assignment.value
            if value is None:
                continue
            if self._singleton(key, value, assignment.word.span):
                self.out.environment.append(EnvRule("set", assignment.name, value, self.locked(node.locked),
                                                    self.origin(assignment.word.span)))

    def visit_LimitNode(self, node: LimitNode) -> None:
        if self._singleton(f"`{node.name}`", node.word.text, node.span):
            self.out.limits.append(LimitRule(node.name, node.value, self.locked(node.locked),
                                             self.origin(node.span)))

    def _pattern_tokens(self, pattern: PatternNode) -> tuple[PatternToken, ...] | None:
        tokens = tuple(PatternToken(tuple(word.text.split("|")) if not word.quoted else (word.text,))
                       for word in pattern.words)
        if any("" in token.alternatives for token in tokens):
            self.sink.error(codes.EMPTY_ALTERNATIVE, "empty alternative in a command pattern", pattern.span,
                            "write alternatives as `push|pull`")
            return None
        return tokens

    def visit_SessionNode(self, node: SessionNode) -> None:
        if node.name == "never-persist":
            for pattern in node.patterns:
                tokens = self._pattern_tokens(pattern)
                if tokens is not None:
                    self.out.session.append(SessionRule(node.name, pattern=tokens, locked=self.locked(node.locked),
                                                        origin=self.origin(pattern.span)))
            return
        key = f"`{node.name}`" if node.window is None else f"`{node.name} … within`"
        if self._singleton(key, " ".join(w.text for w in node.words), node.span):
            self.out.session.append(SessionRule(node.name, node.count, node.window, node.choice, (),
                                                self.locked(node.locked), self.origin(node.span)))

    def visit_CommandRuleNode(self, node: CommandRuleNode) -> None:
        for pattern in node.patterns:
            tokens = self._pattern_tokens(pattern)
            if tokens is None:
                continue
            text = " ".join(str(t) for t in tokens)
            previous = self.seen_patterns.get(text)
            if previous is not None:
                self._conflict(f"`{text}`", previous, node.verdict, pattern.span, hard=True)
                continue
            self.seen_patterns[text] = (node.verdict, pattern.span)
            self.out.commands.append(CommandRule(node.verdict, tokens, node.reason, self.locked(node.locked),
                                                 self.origin(pattern.span)))

    def visit_VerdictSettingNode(self, node: VerdictSettingNode) -> None:
        if not self._singleton(f"`{node.setting}`", node.verdict, node.span):
            return
        setting = VerdictSetting(node.verdict, self.locked(node.locked), self.origin(node.span), node.setting)
        if node.setting == "unknown-effects":
            self.out.unknown_effects = setting
        else:
            self.out.unparsable = setting

    def visit_TestCaseNode(self, node: TestCaseNode) -> None:
        self.out.tests.append(TestCase(self.current_label or "", node.expect, node.command.text,
                                       self.origin(node.span)))

    def _singleton(self, what: str, value: str, span: Span | None) -> bool:
        previous = self.seen_singletons.get(what)
        if previous is None:
            self.seen_singletons[what] = (value, span)
            return True
        related = (Related("first given here", previous[1]),) if previous[1] else ()
        if previous[0] == value:
            self.sink.warning(codes.DUPLICATE_RULE, f"{what} is given twice", span, "remove one of them", related)
        else:
            self.sink.error(codes.CONFLICTING_RULES,
                            f"{what} is given twice with different values (`{previous[0]}`, `{value}`)",
                            span, "keep the one you mean", related)
        return False


def lower_layer(ast: PolicyFile, index: int, resolver: PathResolver, sink: DiagnosticSink) -> LayerRules:
    """Lower one parsed file (layer ``index``) to IR rules."""
    return Lowerer(ast, index, resolver, sink).lower()
