"""The one registry of targets: every ``compile --target``, ``export --to`` and ``import
--from`` name, read by :mod:`stockade.api` and the CLI.

Each entry names its class as ``"module:Class"``, imported only when the target is used
(``stockade run`` loads the one backend it needs), its kind — ``backend`` (a sandbox
artifact, ``stockade compile``) or ``export`` (another tool's file, ``stockade export``) —
and, for exports, the importer that reads that tool's file back (``stockade import``).
``ir`` (the IR as JSON) is a pseudo-target the API and ``stockade compile`` answer
themselves.  An unknown name is error ``B300``, with the nearest names and the list.

Adding a target is one module with its class, one :func:`register` line below, and its
tests (``docs/contributing.md``, "Add a target").
"""

from __future__ import annotations

import sys

from stockade import catalogue as codes

TYPE_CHECKING = False  # `typing` is not imported at run time (``stockade run`` reads this module)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from stockade.diagnostics import StockadeError

#: The kinds of target: sandbox artifacts and other tools' files.
KINDS: tuple[str, ...] = ("backend", "export")


class TargetEntry:
    """One registered target: its name, kind, ``"module:Class"``, optional importer, a line
    for help texts and the ``--platform`` ``stockade compile`` defaults to for it."""

    __slots__ = ("doc", "importer", "kind", "name", "platform", "spec")

    def __init__(self, name: str, kind: str, spec: str, importer: str | None = None, doc: str = "",
                 platform: str | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"target kind must be one of {KINDS}, not `{kind}`")
        self.name = name
        self.kind = kind
        self.spec = spec
        self.importer = importer
        self.doc = doc
        self.platform = platform

    def __repr__(self) -> str:
        return f"TargetEntry({self.name!r}, {self.kind!r}, {self.spec!r})"


#: target name → entry, in the order the CLI lists them.
TARGETS: dict[str, TargetEntry] = {}


def register(name: str, kind: str, spec: str, importer: str | None = None, doc: str = "",
             platform: str | None = None) -> TargetEntry:
    """Register a target (``spec`` and ``importer`` are ``"module:Class"``, imported lazily)."""
    entry = TARGETS[name] = TargetEntry(name, kind, spec, importer, doc, platform)
    return entry


def unregister(name: str) -> None:
    """Remove a target (tests that register one of their own)."""
    TARGETS.pop(name, None)


register("bwrap", "backend", "stockade.backends.bwrap:BwrapBackend", doc="bubblewrap argv (Linux)")
register("seatbelt", "backend", "stockade.backends.seatbelt:SeatbeltBackend", doc="SBPL profile (macOS)")
register("windows", "backend", "stockade.backends.windows:WindowsBackend", doc="JSON confinement plan",
         platform="windows")
register("windows-ps", "backend", "stockade.backends.windows:WindowsPowerShellBackend",
         doc="the Windows plan as a PowerShell script", platform="windows")
register("codex-rules", "export", "stockade.integrations.codex:CodexExporter",
         "stockade.integrations.codex:CodexImporter", doc="Codex CLI .rules")
register("codex-config", "export", "stockade.integrations.codex_config:CodexConfigExporter",
         doc="Codex CLI config.toml permission profile (network)")
register("srt", "export", "stockade.integrations.srt:SrtExporter", "stockade.integrations.srt:SrtImporter",
         doc="Anthropic sandbox-runtime settings")
register("claude-settings", "export", "stockade.integrations.claude_code:ClaudeSettingsExporter",
         "stockade.integrations.claude_code:ClaudeSettingsImporter", doc="Claude Code settings.json")
register("cursor", "export", "stockade.integrations.cursor:CursorExporter",
         "stockade.integrations.cursor:CursorImporter", doc="Cursor sandbox.json")


def names(*kinds: str, importable: bool = False) -> list[str]:
    """The registered names of the given kinds (all kinds when none), in registration order;
    ``importable``: only those with an importer."""
    return [entry.name for entry in TARGETS.values()
            if (not kinds or entry.kind in kinds) and (entry.importer is not None or not importable)]


def unknown_target(name: str, choices: list[str]) -> StockadeError:
    """Error ``B300`` for an unknown target name, with the nearest names and the list (or,
    for a target of another kind, the command that takes it)."""
    import difflib  # only when something is wrong

    from stockade.diagnostics import Diagnostic, StockadeError

    other = TARGETS.get(name)
    if other is not None:
        command = f"stockade export --to {name}" if other.kind == "export" else f"stockade compile --target {name}"
        hint = f"`{name}` is {'an export' if other.kind == 'export' else 'a backend'} target: use `{command}`; "
    else:
        near = difflib.get_close_matches(name, choices, n=2, cutoff=0.6)
        hint = f"did you mean {' or '.join(f'`{n}`' for n in near)}? " if near else ""
    return StockadeError(Diagnostic(codes.UNKNOWN_TARGET, f"unknown target `{name}`",
                                    help=hint + "targets: " + ", ".join(choices)))


def lookup(name: str, kinds: tuple[str, ...] = KINDS, importable: bool = False, extra: tuple[str, ...] = ()) -> TargetEntry:
    """The entry of a target of one of ``kinds`` (``B300`` otherwise; ``extra`` names, such
    as ``ir``, are listed in the hint)."""
    entry = TARGETS.get(name)
    if entry is None or entry.kind not in kinds or (importable and entry.importer is None):
        raise unknown_target(name, [*extra, *names(*kinds, importable=importable)])
    return entry


def _load(spec: str) -> Any:
    module_name, class_name = spec.split(":")
    __import__(module_name)  # (importlib.import_module without importing importlib)
    return getattr(sys.modules[module_name], class_name)


def target_class(name: str, kinds: tuple[str, ...] = KINDS) -> Any:
    """The class of a target (a :class:`~stockade.backends.base.Target` subclass)."""
    return _load(lookup(name, kinds).spec)


def importer_class(name: str) -> Any:
    """The importer class of an export target (``B300`` when it has none)."""
    importer = lookup(name, ("export",), importable=True).importer
    assert importer is not None
    return _load(importer)


def build(ir: Any, name: str, *, strict: bool = False, kinds: tuple[str, ...] = KINDS,
          extra_names: tuple[str, ...] = (), **options: Any) -> Any:
    """Compile an IR for any registered target; returns an :class:`~stockade.backends.base.Artifact`.

    ``strict`` (exports) fails when the target cannot express a rule exactly, and an export
    looser than the policy fails (``X602``) unless ``allow_looser=True``; ``options`` go
    to the target (``by_runtime=True`` when the caller is ``stockade run``); ``extra_names``
    are listed in the ``B300`` hint (``ir``).
    """
    entry = lookup(name, kinds, extra=extra_names)
    cls = _load(entry.spec)
    allow_looser = bool(options.pop("allow_looser", False))
    if entry.kind == "export":
        return cls(ir, **options).export(strict, allow_looser)
    return cls(ir, **options).compile()


#: The sandbox backend `stockade run` uses on each platform.
PLATFORM_BACKENDS: dict[str, str] = {"linux": "bwrap", "darwin": "seatbelt", "windows": "windows"}


def platform_backend(platform: str) -> str | None:
    """The backend that confines commands on ``platform`` (None: no backend there)."""
    return PLATFORM_BACKENDS.get(platform)
