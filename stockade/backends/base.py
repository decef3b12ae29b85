"""The shared base of every target, in the manner of sqlglot's dialects.

A *target* turns a policy IR into an artifact: a **backend** (:class:`Backend`) a sandbox
artifact (bwrap argv, SBPL profile, Windows plan), an **exporter**
(:class:`stockade.integrations.base.Exporter`) another agent tool's configuration file.

Every target declares, in :attr:`Target.SECTIONS`, one decision for each policy section of
:data:`stockade.compiler.ir.SECTIONS`:

* :func:`handled` ``("method")`` — the artifact encodes the section; ``method`` is the one
  :meth:`~Target.render` calls to render it (the driver checks that it was called).  What
  it cannot express exactly is approximated on the safe side (stricter, with a warning
  naming the rule and its line) or refused per rule (:meth:`Target.unsupported_rule`);
* :data:`RUNTIME` — the artifact does not encode the section; ``stockade run`` enforces it
  around the sandbox.  Compiling warns once naming the section (``B321``) when the policy
  has rules there — except for the runtime itself (``by_runtime=True``), which knows.
  :func:`runtime` ``("check")`` first calls ``check``, which refuses the rules ``stockade
  run`` cannot enforce with this target (e.g. ``disk`` on macOS);
* :data:`UNSUPPORTED` — compiling fails listing every rule of the section with its span
  (``B302``);
* :data:`OMITTED` (exporters only) — the other tool's file has no place for the section:
  one warning per rule (``X601``), an error under ``--strict``.

:meth:`Target.build` is the driver: it loops over the sections, renders, and fails with
every unsupported rule at once — nothing is ever dropped silently.  A section without a
decision is a programming error (:class:`TargetDefinitionError`), caught by the driver and
by ``tests/backends/test_target_sections.py``.  A new target is one module and its tests,
registered in :mod:`stockade.backends.registry` (see ``docs/contributing.md``).

Backends are pure: IR (plus the concrete :class:`~stockade.compiler.ir.Context` it carries)
in, artifact out.  They never touch the filesystem beyond reading symlinks of paths, and
never run anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from stockade import catalogue as codes
from stockade.compiler import ir as ir_module
from stockade.compiler.ir import Origin, PolicyIR, Section, rule_origin
from stockade.diagnostics import Diagnostic, Span, StockadeError


def origin_span(origin: Origin | None) -> Span | None:
    """The source span of an IR origin (for diagnostics about a rule)."""
    if origin is None:
        return None
    return Span(origin.file, origin.line, origin.column)


@dataclass
class Artifact:
    """What a target produced.

    ``text`` is the artifact as a user would save it (SBPL profile, shell-quoted argv,
    PowerShell script, JSON); ``data`` is its structured form (argv list, plan dict) for
    ``--format json`` and for the runtime; ``warnings`` name every rule that was
    approximated on the safe side, and every section left to ``stockade run``.
    """

    target: str
    text: str
    data: Any = None
    warnings: list[Diagnostic] = field(default_factory=list)


class UnsupportedRules(StockadeError):
    """Raised when a backend cannot express some rules safely; lists every one of them."""


class TargetDefinitionError(TypeError):
    """A target class breaks the section contract (a section without a decision, a handler
    that does not exist or was never called): a programming error, never a policy error."""


# -- section decisions -----------------------------------------------------------------------

class Handling:
    """What a target does with one policy section (see the module docstring)."""

    __slots__ = ("kind", "method")

    def __init__(self, kind: str, method: str | None = None) -> None:
        self.kind = kind
        self.method = method

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Handling) and (self.kind, self.method) == (other.kind, other.method)

    def __hash__(self) -> int:
        return hash((self.kind, self.method))

    def __repr__(self) -> str:
        return f"{self.kind}({self.method!r})" if self.method else self.kind.upper()


def handled(method: str) -> Handling:
    """The artifact encodes the section; :meth:`Target.render` renders it with ``method``."""
    return Handling("handled", method)


def runtime(check: str) -> Handling:
    """``stockade run`` enforces the section, after ``check`` refused what it cannot enforce
    with this target (the method calls :meth:`Target.unsupported_rule` per such rule)."""
    return Handling("runtime", check)


#: The artifact does not encode the section; ``stockade run`` enforces it (warning ``B321``).
RUNTIME = Handling("runtime")
#: The target cannot enforce the section: compiling fails listing every rule (``B302``).
UNSUPPORTED = Handling("unsupported")
#: Exporters: the other tool's file has no place for the section (``X601`` per rule).
OMITTED = Handling("omitted")

#: How ``stockade run`` enforces each section a target leaves to it (for the ``B321`` warning).
RUNTIME_HOW: dict[str, str] = {
    "filesystem": "`stockade run` confines the command's files",
    "network": "`stockade run` confines the command's network",
    "environment": "`stockade run` hands the command only the environment the policy builds",
    "limits": "`stockade run` applies them to the sandboxed command",
    "commands": "`stockade run` (and `stockade hook`) judge every command before it runs",
    "session": "`stockade hook` and `stockade run --session` count steps, denials and failures of a named session",
    "verdicts": "`stockade run` (and `stockade hook`) apply them when judging a command",
}


class Target:
    """Base of every target: the section contract, diagnostics helpers and the driver."""

    #: The ``--target`` / ``--to`` name.
    name: ClassVar[str] = ""
    #: What the artifact is, for messages (``the codex rules format``); default: the name.
    label: ClassVar[str] = ""
    #: One decision per section of :data:`stockade.compiler.ir.SECTIONS` (section name → decision).
    SECTIONS: ClassVar[dict[str, Handling]] = {}
    #: The decisions this kind of target may make.
    KINDS: ClassVar[frozenset[str]] = frozenset({"handled", "runtime", "unsupported"})
    #: What :meth:`finish` raises for unsupported rules.
    ERROR: ClassVar[type[StockadeError]] = StockadeError

    def __init__(self, ir: PolicyIR, *, by_runtime: bool = False, **options: Any) -> None:
        self.ir = ir
        #: the caller is ``stockade run``, which enforces the RUNTIME sections itself: no ``B321``
        self.by_runtime = by_runtime
        #: target-specific options (e.g. ``environ`` for backends that rebuild the environment)
        self.options = options
        self.warnings: list[Diagnostic] = []
        self.unsupported: list[Diagnostic] = []
        #: ids of the rules refused (so that a RUNTIME warning does not name them)
        self.refused: set[int] = set()

    # -- the contract --------------------------------------------------------------------

    @classmethod
    def decisions(cls, sections: tuple[Section, ...] | None = None) -> list[tuple[Section, Handling]]:
        """Each section (default :data:`~stockade.compiler.ir.SECTIONS`) with this target's
        decision; raises :class:`TargetDefinitionError` listing every breach of the contract."""
        sections = ir_module.SECTIONS if sections is None else sections
        problems: list[str] = []
        for section in sections:
            handling = cls.SECTIONS.get(section.name)
            if handling is None:
                problems.append(f"no decision for the section `{section.name}`")
            elif handling.kind not in cls.KINDS:
                problems.append(f"section `{section.name}`: `{handling.kind}` is not a decision this target can make")
            elif handling.method is not None and not callable(getattr(cls, handling.method, None)):
                problems.append(f"section `{section.name}`: no method `{handling.method}`")
        known = {section.name for section in sections}
        problems += [f"a decision for `{name}`, which is not a section" for name in cls.SECTIONS if name not in known]
        if problems:
            raise TargetDefinitionError(f"target `{cls.name}` ({cls.__module__}.{cls.__qualname__}): "
                                        + "; ".join(problems))
        return [(section, cls.SECTIONS[section.name]) for section in sections]

    # -- helpers for subclasses ----------------------------------------------------------

    def warn(self, message: str, origin: Origin | None, help: str | None = None,
             code: str = codes.APPROXIMATED_RULE) -> None:
        """Record a safe-side approximation of a rule (stricter than the policy)."""
        self.warnings.append(Diagnostic(code, message, origin_span(origin), help, "warning"))

    def unsupported_rule(self, message: str, origin: Origin | None, help: str | None = None,
                         code: str = codes.UNSUPPORTED_RULE, rule: object = None) -> None:
        """Record a rule with no safe approximation on this target; compiling fails at the end."""
        self.unsupported.append(Diagnostic(code, message, origin_span(origin), help, "error"))
        if rule is not None:
            self.refused.add(id(rule))

    def unsupported_limits(self, names: tuple[str, ...], why: str) -> None:
        """Refuse every limit of ``names`` the policy sets: this target cannot enforce it
        (never dropped silently; compiling fails listing each rule)."""
        for rule in self.ir.limits:
            if rule.name in names:
                self.unsupported_rule(f"limit `{rule.name}` cannot be enforced by the {self.name} target: {why}",
                                      rule.origin, code=codes.UNSUPPORTED_LIMIT,
                                      help=f"remove `{rule.name}` for this target",
                                      rule=rule)

    def omit(self, message: str, origin: Origin | None) -> None:
        """Record a rule the artifact has no place for (exporters: :data:`OMITTED`)."""
        raise TargetDefinitionError(f"target `{self.name}` cannot omit rules")

    # -- the driver ----------------------------------------------------------------------

    def render(self) -> Artifact:
        """Produce the artifact, calling the :func:`handled` methods; subclasses implement it."""
        raise NotImplementedError

    def finish(self, artifact: Artifact) -> Artifact:
        """Fail with every unsupported rule (and the warnings), or return the artifact with its warnings."""
        if self.unsupported:
            raise self.ERROR(self.unsupported + self.warnings)
        artifact.warnings = list(self.warnings)
        return artifact

    def build(self) -> Artifact:
        """Apply every section's decision, render, then :meth:`finish`."""
        decisions = self.decisions()
        for section, handling in decisions:
            if handling.kind == "runtime":
                self._runtime(section, handling)
            elif handling.kind == "unsupported":
                self._unsupported(section)
        called = self._watch([h.method for _, h in decisions if h.kind == "handled" and h.method])
        try:
            artifact = self.render()
        finally:
            for method in called:
                self.__dict__.pop(method, None)
        if not self.unsupported:
            missed = [section.name for section, handling in decisions
                      if handling.kind == "handled" and handling.method and not called[handling.method]
                      and section.rules(self.ir)]
            if missed:
                raise TargetDefinitionError(f"target `{self.name}` declares {', '.join(missed)} handled, but "
                                            "render() never called the handler")
        for section, handling in decisions:
            if handling.kind == "omitted":
                self._omitted(section)
        return self.finish(artifact)

    def _watch(self, methods: list[str | None]) -> dict[str, bool]:
        """Wrap each handler on the instance so that :meth:`build` knows render() called it."""
        called: dict[str, bool] = {}
        for name in methods:
            if name is None or name in called:
                continue
            called[name] = False
            bound: Callable[..., Any] = getattr(self, name)

            def watcher(*args: Any, _name: str = name, _bound: Callable[..., Any] = bound, **kwargs: Any) -> Any:
                called[_name] = True
                return _bound(*args, **kwargs)

            self.__dict__[name] = watcher
        return called

    def _runtime(self, section: Section, handling: Handling) -> None:
        if handling.method is not None:
            getattr(self, handling.method)()
        rules = [(node, text) for node, text in section.rules(self.ir) if id(node) not in self.refused]
        if not rules or self.by_runtime:
            return
        texts = ", ".join(f"`{text}`" for _, text in rules[:4]) + (f" and {len(rules) - 4} more" if len(rules) > 4 else "")
        self.warnings.append(Diagnostic(
            codes.RUNTIME_SECTION, f"the {section.name} section is not in the {self.name} artifact: "
                    f"{RUNTIME_HOW.get(section.name, '`stockade run` enforces it')} ({texts})",
            origin_span(rule_origin(rules[0][0])),
            f"run commands with `stockade run`; the {self.name} artifact alone does not enforce "
            f"the {section.noun}", "warning"))

    def _unsupported(self, section: Section) -> None:
        for node, text in section.rules(self.ir):
            self.unsupported_rule(f"the {self.name} target cannot enforce {section.noun}: `{text}`",
                                  rule_origin(node), help=f"remove the {section.name} section for this target",
                                  rule=node)

    def _omitted(self, section: Section) -> None:
        """One warning per source line for the rules of a section the artifact has no place for."""
        by_line: dict[tuple[str, int], tuple[Origin | None, list[str]]] = {}
        for node, text in section.rules(self.ir):
            origin = rule_origin(node)
            key = (origin.file, origin.line) if origin else ("", id(node))
            by_line.setdefault(key, (origin, []))[1].append(f"`{text}`")
        for origin, texts in by_line.values():
            verb = "is" if len(texts) == 1 else "are"
            self.omit(f"{self.label or self.name} has no {section.noun}: {', '.join(texts)} {verb} not exported",
                      origin)


class Backend(Target):
    """Base of the sandbox backends (``bwrap``, ``seatbelt``, ``windows``, ``windows-ps``)."""

    ERROR: ClassVar[type[StockadeError]] = UnsupportedRules

    #: IR node type → renderer method name, for rendering one rule at a time (:meth:`dispatch`).
    RENDERERS: ClassVar[dict[type, str]] = {}

    def dispatch(self, node: Any) -> Any:
        """Render one IR node through :attr:`RENDERERS` (a missing entry is unsupported)."""
        method_name = self.RENDERERS.get(type(node))
        if method_name is None:
            self.unsupported_rule(f"the {self.name} backend cannot express `{type(node).__name__}`",
                                  getattr(node, "origin", None))
            return None
        method: Callable[[Any], Any] = getattr(self, method_name)
        return method(node)

    def compile(self) -> Artifact:
        """Render the artifact, then fail with every unsupported rule, if any (see :meth:`Target.build`)."""
        return self.build()


def get_backend(target: str) -> type[Backend]:
    """The backend class for a target name (``B300`` for an unknown one)."""
    from stockade.backends.registry import target_class

    found = target_class(target, kinds=("backend",))
    if not (isinstance(found, type) and issubclass(found, Backend)):
        raise TargetDefinitionError(f"the backend target `{target}` is not a Backend subclass")
    return found


def compile_ir(ir: PolicyIR, target: str, **options: Any) -> Artifact:
    """Compile an IR to one backend's artifact (raises :class:`UnsupportedRules`);
    ``by_runtime=True`` when the caller is ``stockade run``."""
    return get_backend(target)(ir, **options).compile()
