"""The backend-neutral intermediate representation (IR) of a compiled policy.

The IR is the contract between stages: the compiler produces it, the backends render it,
the analyzer judges effects against it and the runtime executes under it.  It is a closed
set of frozen dataclasses, JSON-serialisable both ways (:meth:`PolicyIR.to_json` /
:meth:`PolicyIR.from_json`) and described by ``ir.schema.json`` beside this file.

Every rule keeps its :class:`Origin` (file, line, column, layer) so that every decision can
be explained back to source; origins are excluded from equality, like spans in the AST.

Decisions (path access, command verdicts, network, environment) are answered by the query
API in :mod:`stockade.compiler.query`, reachable as methods on :class:`PolicyIR`.

This module is on the hot path of ``stockade run``: it imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from functools import cached_property
from operator import attrgetter

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping, Sequence
    from typing import Any, Literal

    from stockade.compiler.query import CommandDecision, NetworkDecision, PathDecision, PolicyIndex

    Verdict = Literal["allow", "confirm", "deny"]
    FsKind = Literal["read", "write", "readonly", "deny"]
    HostKind = Literal["any", "localhost", "host-loopback", "host", "domain", "cidr"]

IR_VERSION = 1

#: Strictness of verdicts: the strictest matching rule wins.
VERDICT_RANK: dict[str, int] = {"allow": 0, "confirm": 1, "deny": 2}

#: On equal specificity the stricter filesystem rule wins: deny > readonly > write > read.
FS_KIND_RANK: dict[str, int] = {"read": 0, "write": 1, "readonly": 2, "deny": 3}
#: What each filesystem rule grants.
FS_KIND_ACCESS: dict[str, str] = {"read": "read", "write": "write", "readonly": "read", "deny": "none"}
#: How much access grants, for comparisons (tighten-only, conformance).
ACCESS_RANK: dict[str, int] = {"none": 0, "read": 1, "write": 2}


class _Node:
    """What ``@dataclass(frozen=True)`` generates for each IR class, written once: the
    ``__init__`` (positional or keyword arguments in field order, defaults and default
    factories), immutability (assigning or deleting a field raises
    :class:`dataclasses.FrozenInstanceError`), copying and pickling, and ``==``, ``hash`` and
    ``repr`` over the fields the dataclass compares, hashes and shows.

    The classes stay dataclasses (``fields``, ``replace``, ``asdict`` work on them); the
    decorator just generates nothing.  Each generated method is Python source compiled on
    every start, and this module is imported by every cold ``stockade analyze``, ``hook``
    and uncached ``run`` verdict: about 40 compiled functions, 10 ms, saved.
    """

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names, defaults = _init_spec(self.__class__)
        if len(args) > len(names):
            raise TypeError(f"{self.__class__.__name__}() takes {len(names)} arguments, {len(args)} given")
        for name, value in zip(names, args, strict=False):  # (fewer args than names: the rest by keyword)
            _set(self, name, value)
        for index in range(len(args), len(names)):
            name = names[index]
            if name in kwargs:
                value = kwargs.pop(name)
            else:
                kind, default = defaults[index]
                if kind == _REQUIRED:
                    raise TypeError(f"{self.__class__.__name__}() missing the argument `{name}`")
                value = default() if kind == _FACTORY else default
            _set(self, name, value)
        if kwargs:
            given = sorted(kwargs)
            twice = [name for name in given if name in names]
            raise TypeError(f"{self.__class__.__name__}() got "
                            + (f"multiple values for {twice}" if twice else f"unexpected arguments {given}"))

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))  # type: ignore[arg-type]

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for f, value in zip(fields(self), state, strict=True):  # type: ignore[arg-type]
            _set(self, f.name, value)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        key = _keys(self.__class__)[0]
        return bool(key(self) == key(other))

    def __hash__(self) -> int:
        return hash(_keys(self.__class__)[1](self))

    def __repr__(self) -> str:
        shown = _keys(self.__class__)[2]
        return f"{self.__class__.__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in shown)})"


_set = object.__setattr__
_REQUIRED, _VALUE, _FACTORY = 0, 1, 2
#: IR class → (the names ``__init__`` takes, in order; (kind, default) for each).
_INIT: dict[type, tuple[tuple[str, ...], tuple[tuple[int, Any], ...]]] = {}


def _init_spec(cls: type) -> tuple[tuple[str, ...], tuple[tuple[int, Any], ...]]:
    found = _INIT.get(cls)
    if found is None:
        taken = [f for f in fields(cls) if f.init]
        defaults = tuple((_FACTORY, f.default_factory) if f.default_factory is not MISSING
                         else (_VALUE, f.default) if f.default is not MISSING else (_REQUIRED, None)
                         for f in taken)
        found = _INIT[cls] = (tuple(f.name for f in taken), defaults)
    return found


#: IR class → (compare key, hash key, names shown by repr), from its dataclass fields.
_KEYS: dict[type, tuple[Any, Any, tuple[str, ...]]] = {}


def _tuple_getter(names: list[str]) -> Any:
    """A function giving the tuple of the named attributes (a 1-tuple for one name)."""
    if len(names) == 1:
        single = attrgetter(names[0])
        return lambda obj: (single(obj),)
    return attrgetter(*names)


def _keys(cls: type) -> tuple[Any, Any, tuple[str, ...]]:
    found = _KEYS.get(cls)
    if found is None:
        every = fields(cls)
        compared = [f.name for f in every if f.compare]
        hashed = [f.name for f in every if (f.compare if f.hash is None else f.hash)]
        found = _KEYS[cls] = (_tuple_getter(compared), _tuple_getter(hashed), tuple(f.name for f in every if f.repr))
    return found


#: The decorator of the IR node classes: slotted dataclasses whose every method is
#: :class:`_Node`'s (immutable: see there).
_node = dataclass(init=False, slots=True, eq=False, repr=False)


@_node
class Origin(_Node):
    """Where an IR rule came from: the source file, position and layer (0 = lowest)."""

    file: str
    line: int
    column: int
    layer: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


def _origin() -> Any:
    return field(default=None, compare=False, hash=False, repr=False)


@_node
class Layer(_Node):
    """One policy file in the include stack, lowest layer first."""

    index: int
    name: str
    file: str
    enforced: bool = False


@_node
class Context(_Node):
    """The concrete machine facts a policy was compiled against."""

    workspace: str
    home: str
    tmpdir: str
    platform: str = "linux"


@_node
class FsRule(_Node):
    """A filesystem rule on a canonical absolute path or path glob.

    ``pattern`` is absolute; when ``is_glob`` it may contain ``*`` (within one component),
    ``?`` and ``**`` (any number of components).  A rule applies to the path it names and
    everything below it.
    """

    kind: FsKind
    pattern: str
    is_glob: bool = False
    locked: bool = False
    source_text: str = ""
    origin: Origin | None = _origin()

    @property
    def access(self) -> str:
        """What the rule grants: ``none``, ``read`` or ``write``."""
        return FS_KIND_ACCESS[self.kind]


@_node
class HostPattern(_Node):
    """A network destination: ``any``, ``localhost`` (the sandbox's own loopback),
    ``host-loopback`` (a port of the host's loopback, always with a port), an exact
    ``host``, a ``domain`` wildcard (``*.example.com``: subdomains only) or an IPv4/IPv6
    ``cidr``; ``port`` None means every port."""

    kind: HostKind
    value: str = ""
    port: int | None = None

    def __str__(self) -> str:
        host = {"any": "*", "localhost": "localhost", "host-loopback": "host-loopback",
                "domain": f"*.{self.value}"}.get(self.kind, self.value)
        if self.port is None:
            return host
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"


@_node
class NetRule(_Node):
    """Allow or deny contact with the destinations of a :class:`HostPattern`."""

    action: Literal["allow", "deny"]
    host: HostPattern
    locked: bool = False
    origin: Origin | None = _origin()


@_node
class Network(_Node):
    """The network block: a default and explicit rules (most specific wins, ties deny)."""

    default: Literal["allow", "deny"] = "deny"
    rules: tuple[NetRule, ...] = ()
    default_locked: bool = False
    default_origin: Origin | None = _origin()


@_node
class EnvRule(_Node):
    """``keep`` (allow-list glob), ``drop`` (deny-list glob, beats keep) or ``set`` NAME=value."""

    action: Literal["keep", "drop", "set"]
    name: str
    value: str | None = None
    locked: bool = False
    origin: Origin | None = _origin()


@_node
class LimitRule(_Node):
    """One resource limit: ``timeout``/``cpu`` in seconds, ``memory``/``output``/``filesize``
    (the largest file a process may write)/``disk`` (what a run may leave written outside the
    workspace) in bytes, ``processes`` as a count."""

    name: Literal["timeout", "memory", "processes", "output", "cpu", "cpus", "filesize", "disk"]
    value: float
    locked: bool = False
    origin: Origin | None = _origin()


@_node
class PatternToken(_Node):
    """One word of a command pattern: alternatives, each an fnmatch-style word.

    The special alternative ``**`` (alone) matches any number of positional words.
    """

    alternatives: tuple[str, ...]

    @property
    def is_flag(self) -> bool:
        return all(a.startswith("-") and a not in ("-", "--") for a in self.alternatives)

    @property
    def is_rest(self) -> bool:
        return self.alternatives == ("**",)

    def __str__(self) -> str:
        return "|".join(self.alternatives)


@_node
class CommandRule(_Node):
    """An argv-prefix pattern with a verdict; the strictest matching rule wins."""

    verdict: Verdict
    pattern: tuple[PatternToken, ...]
    reason: str | None = None
    locked: bool = False
    origin: Origin | None = _origin()

    @property
    def text(self) -> str:
        """The pattern as written in canonical policy syntax."""
        return " ".join(str(t) for t in self.pattern)


@_node
class SessionRule(_Node):
    """A setting of the ``session`` section (enforced by ``stockade hook`` and ``stockade run``
    for a named session): ``max-denials``/``max-steps``/``max-failures`` with a ``count`` (and,
    for ``max-denials``, an optional ``window`` in seconds: None means in a row),
    ``on-limit``/``approvals`` with a ``choice``, ``never-persist`` with a command ``pattern``."""

    name: Literal["max-denials", "max-steps", "max-failures", "on-limit", "approvals", "never-persist"]
    count: int | None = None
    window: float | None = None
    choice: str | None = None
    pattern: tuple[PatternToken, ...] = ()
    locked: bool = False
    origin: Origin | None = _origin()

    @property
    def text(self) -> str:
        """The setting as policy text (``max-denials 3``)."""
        if self.name == "never-persist":
            return "never-persist " + " ".join(str(t) for t in self.pattern)
        if self.choice is not None:
            return f"{self.name} {self.choice}"
        window = f" within {self.window:g}s" if self.window is not None else ""
        return f"{self.name} {self.count}{window}"


@_node
class VerdictSetting(_Node):
    """A policy-wide verdict (``unknown-effects``, ``unparsable``) and where it was set."""

    verdict: Verdict
    locked: bool = False
    origin: Origin | None = _origin()
    #: ``unknown-effects`` or ``unparsable``
    name: str = ""

    @property
    def text(self) -> str:
        """The setting as written in policy syntax."""
        return f"{self.name} {self.verdict}" if self.name else self.verdict


@_node
class TestCase(_Node):
    """An expected verdict for a command, from a ``test`` block or a YAML suite."""

    suite: str
    expect: Verdict
    command: str
    origin: Origin | None = _origin()


@dataclass(init=False, eq=False, repr=False)  # not slotted: `index` is a cached_property
class PolicyIR(_Node):
    """A compiled policy: every rule of every layer, merged tighten-only.

    Decisions are methods (:meth:`path_access`, :meth:`command_verdict`,
    :meth:`network_access`, :meth:`filter_environment`), answered from an index built on
    first use.
    """

    name: str
    context: Context
    layers: tuple[Layer, ...] = ()
    filesystem: tuple[FsRule, ...] = ()
    network: Network = field(default_factory=Network)
    environment: tuple[EnvRule, ...] = ()
    limits: tuple[LimitRule, ...] = ()
    commands: tuple[CommandRule, ...] = ()
    session: tuple[SessionRule, ...] = ()
    unknown_effects: VerdictSetting = field(default_factory=lambda: VerdictSetting("confirm", name="unknown-effects"))
    unparsable: VerdictSetting = field(default_factory=lambda: VerdictSetting("deny", name="unparsable"))
    tests: tuple[TestCase, ...] = ()
    source_hash: str = ""

    # -- the query API ---------------------------------------------------------------

    @cached_property
    def index(self) -> PolicyIndex:
        """The lookup index behind every decision (built once, on first use)."""
        from stockade.compiler.query import PolicyIndex

        return PolicyIndex(self)

    def path_access(self, path: str, cwd: str | None = None) -> PathDecision:
        """Access to ``path`` (``none``/``read``/``write``) and the rule that decided.

        Most specific path wins; on equal specificity the stricter rule wins.  ``~`` and
        relative paths (against ``cwd``, default the workspace) are resolved lexically.
        """
        return self.index.path_access(path, cwd)

    def command_verdict(self, argv: Sequence[str]) -> CommandDecision:
        """The verdict of the command rules for ``argv`` (strictest match wins), if any."""
        return self.index.command_verdict(argv)

    def network_access(self, host: str, port: int | None = None) -> NetworkDecision:
        """Whether ``host``:``port`` may be contacted, and the rule that decided."""
        return self.index.network_access(host, port)

    def filter_environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The environment a confined command sees, built from ``environ`` by the policy."""
        return self.index.filter_environment(environ)

    def limit(self, name: str) -> float | None:
        """The value of a resource limit (tightest across layers), or None."""
        values = [rule.value for rule in self.limits if rule.name == name]
        return min(values) if values else None

    # -- serialisation ---------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The IR as a JSON-compatible dict (validated by ``ir.schema.json``)."""
        out: dict[str, Any] = {"ir_version": IR_VERSION}
        out.update(_to_json(self))
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PolicyIR:
        """Rebuild the IR from :meth:`to_json` output."""
        if data.get("ir_version") != IR_VERSION:
            raise ValueError(f"unsupported ir version `{data.get('ir_version')}`")
        ir: PolicyIR = _from_json(cls, data)
        return ir


# -- JSON conversion (generic over the closed set of dataclasses above) -------------------

def _to_json(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: _to_json(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    return value


def _from_json(cls: type, data: Mapping[str, Any]) -> Any:
    kwargs = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        kwargs[f.name] = _decode(_FIELD_SPEC[cls][f.name], data[f.name])
    return cls(**kwargs)


def _decode(spec: Any, raw: Any) -> Any:
    if raw is None:
        return None
    if isinstance(spec, tuple):  # ("tuple", element-spec)
        return tuple(_decode(spec[1], item) for item in raw)
    if isinstance(spec, type) and hasattr(spec, "__dataclass_fields__"):
        return _from_json(spec, raw)
    return raw


# Field decoding specs: which fields hold nested nodes or tuples of them.
_FIELD_SPEC: dict[type, dict[str, Any]] = {
    Origin: {"file": str, "line": int, "column": int, "layer": int},
    Layer: {"index": int, "name": str, "file": str, "enforced": bool},
    Context: {"workspace": str, "home": str, "tmpdir": str, "platform": str},
    FsRule: {"kind": str, "pattern": str, "is_glob": bool, "locked": bool, "source_text": str, "origin": Origin},
    HostPattern: {"kind": str, "value": str, "port": int},
    NetRule: {"action": str, "host": HostPattern, "locked": bool, "origin": Origin},
    Network: {"default": str, "rules": ("tuple", NetRule), "default_locked": bool, "default_origin": Origin},
    EnvRule: {"action": str, "name": str, "value": str, "locked": bool, "origin": Origin},
    LimitRule: {"name": str, "value": float, "locked": bool, "origin": Origin},
    SessionRule: {"name": str, "count": int, "window": float, "choice": str, "pattern": ("tuple", PatternToken),
                  "locked": bool, "origin": Origin},
    PatternToken: {"alternatives": ("tuple", str)},
    CommandRule: {"verdict": str, "pattern": ("tuple", PatternToken), "reason": str, "locked": bool, "origin": Origin},
    VerdictSetting: {"verdict": str, "locked": bool, "origin": Origin, "name": str},
    TestCase: {"suite": str, "expect": str, "command": str, "origin": Origin},
    PolicyIR: {
        "name": str,
        "context": Context,
        "layers": ("tuple", Layer),
        "filesystem": ("tuple", FsRule),
        "network": Network,
        "environment": ("tuple", EnvRule),
        "limits": ("tuple", LimitRule),
        "commands": ("tuple", CommandRule),
        "session": ("tuple", SessionRule),
        "unknown_effects": VerdictSetting,
        "unparsable": VerdictSetting,
        "tests": ("tuple", TestCase),
        "source_hash": str,
    },
}


# -- policy sections (the contract between the IR and every target) -----------------------

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

class Section:
    """One enforced section of a policy: its ``name``, what it decides (``doc``), the noun
    for its rules in messages, and ``rules(ir)``, every rule or setting of the section in
    that IR with its text as written (``deny ~/.ssh``).

    Every target (:class:`stockade.backends.base.Target`) declares one decision for each
    section of :data:`SECTIONS`: adding a section here makes every target without a decision
    for it fail loudly (see ``docs/contributing.md``, "Add a policy section").  ``tests``
    and ``layers`` are compile-time metadata, not enforced sections: no target renders them.
    """

    __slots__ = ("doc", "name", "noun", "rules")

    def __init__(self, name: str, doc: str, noun: str,
                 rules: Callable[[PolicyIR], tuple[tuple[Any, str], ...]]) -> None:
        self.name = name
        self.doc = doc
        self.noun = noun
        self.rules = rules

    def __repr__(self) -> str:
        return f"Section({self.name!r})"


def rule_origin(node: Any) -> Origin | None:
    """Where a rule or setting of a section was written (a network default's origin too)."""
    if isinstance(node, Network):
        return node.default_origin
    origin: Origin | None = getattr(node, "origin", None)
    return origin


def _network_rules(ir: PolicyIR) -> tuple[tuple[Any, str], ...]:
    default = ((ir.network, f"default {ir.network.default}"),) if ir.network.default_origin is not None else ()
    return default + tuple((r, f"{r.action} {r.host}") for r in ir.network.rules)


#: Every enforced section of a policy, in the order of the language.
SECTIONS: tuple[Section, ...] = (
    Section("filesystem", "which paths can be read or written", "filesystem rules",
            lambda ir: tuple((r, f"{r.kind} {r.source_text or r.pattern}") for r in ir.filesystem)),
    Section("network", "which destinations can be contacted", "network rules", _network_rules),
    Section("environment", "which variables a confined command sees", "environment rules",
            lambda ir: tuple((r, f"{r.action} {r.name}") for r in ir.environment)),
    Section("limits", "time, memory, process, output and disk bounds", "limits",
            lambda ir: tuple((r, r.name) for r in ir.limits)),
    Section("commands", "verdicts on commands, judged before they run", "command rules",
            lambda ir: tuple((r, f"{r.verdict} {r.text}") for r in ir.commands)),
    Section("session", "limits and approvals of an agent session", "session settings",
            lambda ir: tuple((r, r.text) for r in ir.session)),
    Section("verdicts", "the `unknown-effects` and `unparsable` verdicts", "verdict settings",
            lambda ir: tuple((s, s.text) for s in (ir.unknown_effects, ir.unparsable) if s.origin is not None)),
)
