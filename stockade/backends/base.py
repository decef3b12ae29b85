"""The shared base of every backend, in the manner of sqlglot's dialects.

A backend is a class with documented capability flags and a dispatch map from IR rule type
to a renderer method.  :meth:`Backend.compile` walks the IR through that map and returns an
:class:`Artifact`.  What a target cannot express exactly is either approximated on the
safe side (stricter, with a warning naming the rule and its line) or collected as an
unsupported rule; at the end, all unsupported rules raise one :class:`UnsupportedRules`
error listing every one of them with its origin — nothing is ever dropped silently.

A new backend is one module that subclasses :class:`Backend`, registers itself with
:func:`register`, and one test file ``tests/backends/test_<name>.py``.

Backends are pure: IR (plus the concrete :class:`~stockade.compiler.ir.Context` it carries)
in, artifact out.  They never touch the filesystem beyond reading symlinks of paths, and
never run anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from stockade.compiler.ir import Origin, PolicyIR
from stockade.diagnostics import Diagnostic, Span, StockadeError


def origin_span(origin: Origin | None) -> Span | None:
    """The source span of an IR origin (for diagnostics about a rule)."""
    if origin is None:
        return None
    return Span(origin.file, origin.line, origin.column)


@dataclass
class Artifact:
    """What a backend produced.

    ``text`` is the artifact as a user would save it (SBPL profile, shell-quoted argv,
    PowerShell script, JSON); ``data`` is its structured form (argv list, plan dict) for
    ``--format json`` and for the runtime; ``warnings`` name every rule that was
    approximated on the safe side.
    """

    target: str
    text: str
    data: Any = None
    warnings: list[Diagnostic] = field(default_factory=list)


class UnsupportedRules(StockadeError):
    """Raised when a backend cannot express some rules safely; lists every one of them."""


class Backend:
    """Base of all backends: capability flags, a dispatch map, and the compile driver."""

    #: The ``--target`` name of this backend.
    name: ClassVar[str] = ""
    # Whether filesystem rules can restrict reads (not only writes).
    SUPPORTS_READ_RESTRICTIONS: ClassVar[bool] = True
    # Whether path globs (`*`, `**`, `?`) can be expressed natively.
    SUPPORTS_GLOBS: ClassVar[bool] = False
    # Whether a host allow-list can be enforced (needs a filtering proxy on most targets).
    SUPPORTS_HOST_FILTERING: ClassVar[bool] = False
    # Whether loopback-only network (`allow localhost`) can be expressed.
    SUPPORTS_LOCALHOST_ONLY: ClassVar[bool] = False
    # Whether resource limits can be enforced by the artifact itself.
    SUPPORTS_LIMITS: ClassVar[bool] = False
    # Whether the environment can be rebuilt by the artifact itself.
    SUPPORTS_ENVIRONMENT: ClassVar[bool] = False

    def __init__(self, ir: PolicyIR, **options: Any):
        self.ir = ir
        #: target-specific options (e.g. ``environ`` for backends that rebuild the environment)
        self.options = options
        self.warnings: list[Diagnostic] = []
        self.unsupported: list[Diagnostic] = []

    # -- helpers for subclasses --------------------------------------------------------

    def warn(self, message: str, origin: Origin | None, help: str | None = None, code: str = "B301") -> None:
        """Record a safe-side approximation of a rule (stricter than the policy)."""
        self.warnings.append(Diagnostic(code, message, origin_span(origin), help, "warning"))

    def unsupported_rule(self, message: str, origin: Origin | None, help: str | None = None,
                         code: str = "B302") -> None:
        """Record a rule with no safe approximation on this target; compile fails at the end."""
        self.unsupported.append(Diagnostic(code, message, origin_span(origin), help, "error"))

    def unsupported_limits(self, names: tuple[str, ...], why: str) -> None:
        """Refuse every limit of ``names`` the policy sets: this target cannot enforce it
        (never dropped silently; compiling fails listing each rule)."""
        for rule in self.ir.limits:
            if rule.name in names:
                self.unsupported_rule(f"limit `{rule.name}` cannot be enforced by the {self.name} target: {why}",
                                      rule.origin, code="B320", help=f"remove `{rule.name}` for this target")

    # -- the driver --------------------------------------------------------------------

    #: IR node type → renderer method name; each backend fills it in.
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

    def render(self) -> Artifact:
        """Produce the artifact; subclasses implement this with :meth:`dispatch`."""
        raise NotImplementedError

    def compile(self) -> Artifact:
        """Render the artifact, then fail with every unsupported rule, if any."""
        artifact = self.render()
        if self.unsupported:
            raise UnsupportedRules(self.unsupported + self.warnings)
        artifact.warnings = list(self.warnings)
        return artifact


_REGISTRY: dict[str, str] = {
    # target name → "module:Class", imported lazily so `stockade run` loads only one
    "bwrap": "stockade.backends.bwrap:BwrapBackend",
    "seatbelt": "stockade.backends.seatbelt:SeatbeltBackend",
    "windows": "stockade.backends.windows:WindowsBackend",
    "windows-ps": "stockade.backends.windows:WindowsPowerShellBackend",
}


def register(target: str, spec: str) -> None:
    """Register a backend class under a target name (``"module:Class"``, imported lazily)."""
    _REGISTRY[target] = spec


def targets() -> list[str]:
    """Every known target name."""
    return sorted(_REGISTRY)


def get_backend(target: str) -> type[Backend]:
    """The backend class for a target name."""
    import importlib

    try:
        spec = _REGISTRY[target]
    except KeyError:
        raise StockadeError(Diagnostic("B300", f"unknown target `{target}`",
                                       help="targets: " + ", ".join(targets()))) from None
    module_name, class_name = spec.split(":")
    return getattr(importlib.import_module(module_name), class_name)


def compile_ir(ir: PolicyIR, target: str, **options: Any) -> Artifact:
    """Compile an IR to one target's artifact (raises :class:`UnsupportedRules`)."""
    return get_backend(target)(ir, **options).compile()
