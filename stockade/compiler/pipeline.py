"""The one function that chains the front stages: policy text → AST → IR.

``compile_policy`` loads a policy file (or the built-in default), resolves its includes into
layers, lowers every layer against a :class:`~stockade.compiler.ir.Context`, merges them
tighten-only and returns the IR with any warnings.  Errors raise
:class:`~stockade.diagnostics.StockadeError` with every diagnostic collected.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from stockade import catalogue as codes
from stockade.compiler.ir import Context, FsRule, PolicyIR
from stockade.diagnostics import Diagnostic, DiagnosticSink, StockadeError

if TYPE_CHECKING:  # pragma: no cover
    from stockade.compiler.lower import PathResolver


@dataclass
class CompileResult:
    """A compiled policy: its IR, warnings, and the source text of every file read."""

    ir: PolicyIR
    warnings: list[Diagnostic] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)


def _platform_name() -> str:
    return {"darwin": "darwin", "win32": "windows"}.get(sys.platform, "linux")


def make_context(workspace: str | None = None, home: str | None = None, tmpdir: str | None = None,
                 environ: Mapping[str, str] | None = None, platform: str | None = None) -> Context:
    """The compile context: defaults are the current directory, ``$HOME`` and ``$TMPDIR``/``/tmp``.

    POSIX paths are made absolute and their symlinks resolved, like every path of a policy.
    """
    environ = os.environ if environ is None else environ
    platform = platform or _platform_name()
    workspace = workspace or os.getcwd()
    home = home or environ.get("HOME") or os.path.expanduser("~")
    if platform == "windows" and not tmpdir:
        import ntpath

        tmpdir = ntpath.join(home, "AppData", "Local", "Temp")
    tmpdir = tmpdir or environ.get("TMPDIR") or "/tmp"
    if platform != "windows":
        from stockade.compiler.lower import resolve_posix

        # a POSIX path stays POSIX on any compiling machine (os.path.abspath would give a
        # Windows host's C:\… spelling)
        workspace, home, tmpdir = (resolve_posix(p if p.startswith("/") else os.path.abspath(p), platform)
                                   for p in (workspace, home, tmpdir))
    return Context(workspace=workspace, home=home, tmpdir=tmpdir, platform=platform)


def compile_policy(path: str | os.PathLike[str] | None = None, *, text: str | None = None,
                   workspace: str | None = None, home: str | None = None, tmpdir: str | None = None,
                   environ: Mapping[str, str] | None = None, platform: str | None = None) -> CompileResult:
    """Compile a policy file (or ``text``; or the built-in default when both are None).

    ``workspace`` defaults to the current directory, ``home`` to ``$HOME``, ``tmpdir`` to
    ``$TMPDIR`` or ``/tmp``; ``environ`` (default ``os.environ``) supplies other variables.
    Raises :class:`StockadeError` with every error found.
    """
    from stockade.compiler.layers import merge_layers
    from stockade.compiler.loader import load_layers
    from stockade.compiler.lower import PathResolver, lower_layer

    environ = os.environ if environ is None else environ
    sink = DiagnosticSink()
    context = make_context(workspace, home, tmpdir, environ, platform)
    files = load_layers(os.fspath(path) if path is not None else None, text, sink)
    if sink.has_errors or not files:
        if not sink.has_errors:
            sink.error(codes.POLICY_NOT_FOUND, "no policy to compile")
        raise StockadeError(sink.items, sink.sources)
    resolver = PathResolver(context, environ)
    layers = [lower_layer(loaded.ast, index, resolver, sink) for index, loaded in enumerate(files)]
    digest = hashlib.sha256()
    for loaded in files:
        digest.update(loaded.path.encode() + b"\0" + loaded.text.encode() + b"\0")
    digest.update(json.dumps([context.workspace, context.home, context.tmpdir, context.platform]).encode())
    ir = merge_layers(layers, context, sink, digest.hexdigest())
    sink.raise_if_errors()
    ir, read = _protect_git(ir, resolver, environ, sink)
    sources = dict(sink.sources)
    for git_file in read:  # hashed by the caches (a changed git config recompiles); no text kept
        sources.setdefault(git_file, "")
    return CompileResult(ir, sink.warnings, sources)


def _protect_git(ir: PolicyIR, resolver: PathResolver, environ: Mapping[str, str],
                 sink: DiagnosticSink) -> tuple[PolicyIR, list[str]]:
    """The IR with the rules that protecting a repository's git config or hooks implies
    (:mod:`stockade.compiler.git_paths`), and the git files read to find them."""
    import posixpath

    from stockade.compiler.git_paths import implied_git_rules, with_git_rules
    from stockade.diagnostics import Span
    from stockade.policy_lang.ast import Word

    def lexical(rule: FsRule) -> str | None:
        expanded = resolver.expand(Word(rule.source_text, False, None), DiagnosticSink())
        if not expanded:
            return None
        return posixpath.normpath(posixpath.join(ir.context.workspace, expanded))

    protection = implied_git_rules(ir, environ, lexical)
    for message, rule in protection.warnings:
        origin = rule.origin
        span = Span(origin.file, origin.line, origin.column) if origin else None
        sink.warning(codes.GIT_FILE_THROUGH_WRITABLE_SYMLINK, message, span,
                     "protect the repository's real git directory, or replace the "
                                            "symlink by the directory it names")
    if protection.rules:  # the IR's hash covers them: cached verdicts are keyed by it
        digest = hashlib.sha256(ir.source_hash.encode())
        for rule in protection.rules:
            digest.update(b"\0" + rule.pattern.encode("utf-8", "surrogateescape"))
        ir = replace(ir, source_hash=digest.hexdigest())
    return with_git_rules(ir, protection), protection.read
