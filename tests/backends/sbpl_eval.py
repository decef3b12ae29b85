"""An SBPL reader and evaluator, used by the tests to check Seatbelt profiles.

This is a model of Apple's sandbox profile language as far as generated profiles use it —
enough to answer "would this profile allow operation X on path P?" without a Mac:

* **reader** — s-expressions, symbols, integers, ``"strings"`` with ``\\"`` ``\\\\`` ``\\n``
  ``\\t`` ``\\r`` escapes, ``#"raw regex strings"``, ``;`` comments;
* **expressions** — ``(param "NAME")`` (the ``-D`` values), ``(string-append …)``,
  ``(regex-quote …)``;
* **rules** — ``(version 1)``, ``(allow|deny [(with …)] OPERATION… FILTER…)``; several
  filters in one rule mean *any of them*; no filter means always;
* **filters** — ``literal``/``path`` (exact), ``subpath`` (the path and below), ``prefix``
  (string prefix), ``regex`` (Apple's POSIX-style dialect, translated), ``vnode-type``,
  ``extension``, ``require-all/any/not``, ``remote``/``local`` ``ip`` endpoints, mach names,
  sysctl names, ``target``;
* **decision** — operations form a hierarchy (``file*`` ⊃ ``file-read*`` ⊃
  ``file-read-data``); ``last-match`` mode lets the last matching rule of any level decide,
  ``specific-first`` mode lets rules naming the exact operation beat wildcard rules (a
  behaviour reported for some macOS versions).  A profile that is right in both modes does
  not depend on which one the kernel really uses.

Anything outside the researched vocabulary (operation or filter name, a filter used with an
operation it does not apply to, a missing parameter) raises :class:`SBPLError`, so a typo in
a generated profile fails the test instead of being silently ignored.

Paths are resolved the way macOS would before Seatbelt sees them: :func:`canonicalise`
follows a symlink table (``/tmp`` → ``/private/tmp`` and friends, plus any test links).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# -- vocabulary (researched from Apple's operation table and real system profiles) ------------

OPERATIONS: frozenset[str] = frozenset("""
default appleevent-send authorization-right-obtain boot-arg-set device* device-camera device-microphone
darwin-notification-post distributed-notification-post dynamic-code-generation
file* file-chroot file-clone file-ioctl file-issue-extension file-link file-map-executable file-mknod
file-mount file-mount-update file-read* file-read-data file-read-metadata file-read-xattr file-revoke
file-search file-test-existence file-unmount file-write* file-write-acl file-write-create file-write-data
file-write-finderinfo file-write-flags file-write-mode file-write-owner file-write-setugid file-write-times
file-write-unlink file-write-xattr fs-rename fs-snapshot* fs-snapshot-create fs-snapshot-delete
fs-snapshot-revert generic-issue-extension qtn-user hid-control iokit* iokit-issue-extension iokit-open
iokit-set-properties iokit-get-properties ipc* ipc-posix* ipc-posix-issue-extension ipc-posix-sem*
ipc-posix-sem-create ipc-posix-sem-open ipc-posix-sem-post ipc-posix-sem-unlink ipc-posix-sem-wait
ipc-posix-shm* ipc-posix-shm-read* ipc-posix-shm-read-data ipc-posix-shm-read-metadata ipc-posix-shm-write*
ipc-posix-shm-write-create ipc-posix-shm-write-data ipc-posix-shm-write-unlink ipc-sysv* ipc-sysv-msg
ipc-sysv-sem ipc-sysv-shm job-creation load-unsigned-code lsopen mach* mach-cross-domain-lookup mach-host*
mach-host-exception-port-set mach-host-special-port-set mach-issue-extension mach-lookup mach-per-user-lookup
mach-priv* mach-priv-host-port mach-priv-task-port mach-register mach-task-name network* network-inbound
network-bind network-outbound nvram* nvram-delete nvram-get nvram-set opendirectory-user-modify process*
process-codesigning-status* process-codesigning-status-set process-codesigning-status-get process-exec*
process-exec-interpreter process-fork process-info* process-info-codesignature process-info-dirtycontrol
process-info-listpids process-info-rusage process-info-pidinfo process-info-pidfdinfo
process-info-pidfileportinfo process-info-setcontrol pseudo-tty signal socket-ioctl sysctl* sysctl-read
sysctl-write system* system-acct system-audit system-automount system-chud system-debug system-fsctl
system-info system-kext* system-kext-load system-kext-unload system-kext-query system-mac-label
system-nfssvc system-package-check system-privilege system-reboot system-sched system-set-time
system-socket system-suspend-resume system-swap user-preference* user-preference-read
managed-preference-read user-preference-write storage-class-map
""".split())

#: Legacy spellings accepted by the profile compiler and used in real profiles.
ALIASES: dict[str, str] = {
    "process-exec": "process-exec*",
    "ipc-posix-sem": "ipc-posix-sem*",
    "ipc-posix-shm": "ipc-posix-shm*",
}

_FILE_FAMILY = ("file", "process-exec")
#: filter name → operation prefixes it applies to (None: any operation)
FILTERS: dict[str, tuple[str, ...] | None] = {
    "require-all": None, "require-any": None, "require-not": None,
    "extension": None,
    "literal": _FILE_FAMILY, "path": _FILE_FAMILY, "subpath": _FILE_FAMILY, "prefix": _FILE_FAMILY,
    "regex": _FILE_FAMILY, "vnode-type": _FILE_FAMILY, "path-ancestors": _FILE_FAMILY,
    "file-mode": _FILE_FAMILY, "xattr": ("file-read-xattr", "file-write-xattr"),
    "remote": ("network",), "local": ("network",), "socket-domain": ("network", "system-socket"),
    "socket-protocol": ("network", "system-socket"),
    "global-name": ("mach",), "global-name-prefix": ("mach",), "local-name": ("mach",),
    "xpc-service-name": ("mach",),
    "sysctl-name": ("sysctl",), "sysctl-name-prefix": ("sysctl",),
    "target": ("signal", "process-info", "mach-priv-task-port", "mach-task-name"),
    "iokit-registry-entry-class": ("iokit",), "iokit-user-client-class": ("iokit",),
    "preference-domain": ("user-preference", "managed-preference"),
}
VNODE_TYPES = frozenset({"REGULAR-FILE", "DIRECTORY", "SYMLINK", "CHARACTER-DEVICE", "BLOCK-DEVICE",
                         "FIFO", "SOCKET", "TTY"})
MODIFIERS = frozenset({"report", "no-report", "message", "send-signal", "errno"})


class SBPLError(Exception):
    """A profile this model does not accept (syntax, vocabulary, or evaluation)."""


# -- reader ----------------------------------------------------------------------------

class Symbol(str):
    """A bare SBPL symbol."""


class RawString(str):
    """A ``#"…"`` string: backslashes kept verbatim (used for regexes)."""


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def read(text: str) -> list[Any]:
    """Read every top-level form of an SBPL profile."""
    pos = 0
    forms: list[Any] = []
    stack: list[list[Any]] = []
    while pos < len(text):
        ch = text[pos]
        if ch in " \t\r\n":
            pos += 1
        elif ch == ";":
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end + 1
        elif ch == "(":
            stack.append([])
            pos += 1
        elif ch == ")":
            if not stack:
                raise SBPLError(f"unbalanced `)` at offset {pos}")
            done = stack.pop()
            (stack[-1] if stack else forms).append(done)
            pos += 1
        elif ch == '"' or text.startswith('#"', pos):
            raw = ch == "#"
            pos += 2 if raw else 1
            buf: list[str] = []
            while True:
                if pos >= len(text):
                    raise SBPLError("unterminated string")
                c = text[pos]
                if c == '"':
                    pos += 1
                    break
                if c == "\\" and not raw:
                    nxt = text[pos + 1: pos + 2]
                    if nxt not in _ESCAPES:
                        raise SBPLError(f"unknown string escape `\\{nxt}`")
                    buf.append(_ESCAPES[nxt])
                    pos += 2
                    continue
                buf.append(c)
                pos += 1
            value = "".join(buf)
            (stack[-1] if stack else forms).append(RawString(value) if raw else value)
        else:
            match = re.compile(r"[^\s()\";]+").match(text, pos)
            assert match is not None
            token = match.group(0)
            pos = match.end()
            atom: Any = int(token) if re.fullmatch(r"-?\d+", token) else Symbol(token)
            (stack[-1] if stack else forms).append(atom)
    if stack:
        raise SBPLError("unbalanced `(`: missing `)`")
    return forms


# -- Apple regex dialect → Python ------------------------------------------------------------

def translate_regex(regex: str) -> re.Pattern[str]:
    """Compile an SBPL (POSIX extended style) regex; constructs outside the subset fail."""
    out: list[str] = []
    i = 0
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            if i + 1 >= len(regex):
                raise SBPLError(f"regex `{regex}` ends with a backslash")
            out.append(re.escape(regex[i + 1]))
            i += 2
            continue
        if ch == "[":
            end = regex.find("]", i + 2 if regex[i + 1: i + 2] in ("^", "]") else i + 1)
            if end < 0:
                raise SBPLError(f"regex `{regex}` has an unterminated bracket")
            body = regex[i + 1: end]
            if "\\" in body or "[:" in body:
                raise SBPLError(f"regex `{regex}` uses an unsupported bracket expression")
            out.append("[" + body.replace("[", "\\[") + "]")
            i = end + 1
            continue
        if ch in "{}":
            raise SBPLError(f"regex `{regex}` uses bounded repetition, which generated profiles avoid")
        if ch == "$":
            out.append(r"\Z")
        elif ch in "^.*+?()|":
            out.append(ch)
        else:
            out.append(re.escape(ch))
        i += 1
    try:
        return re.compile("".join(out), re.DOTALL)
    except re.error as exc:
        raise SBPLError(f"regex `{regex}` does not compile: {exc}") from None


def regex_quote(text: str) -> str:
    """SBPL's ``regex-quote``: ``text`` as a regex matching itself."""
    return "".join("\\" + c if c in "\\^$.|?*+()[]{}" else c for c in text)


# -- requests and paths ------------------------------------------------------------------------

DEFAULT_LINKS: dict[str, str] = {"/tmp": "/private/tmp", "/var": "/private/var", "/etc": "/private/etc"}


def canonicalise(path: str, links: Mapping[str, str] | None = None, follow_last: bool = True) -> str:
    """Resolve ``path`` through a symlink table as the kernel would (``..`` after links)."""
    table = dict(DEFAULT_LINKS if links is None else links)
    parts = [p for p in path.split("/") if p]
    resolved: list[str] = []
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        candidate = "/" + "/".join([*resolved, part])
        if candidate in table and (parts or follow_last):
            hops += 1
            if hops > 40:
                raise SBPLError(f"symlink loop at `{candidate}`")
            target = table[candidate]
            if not target.startswith("/"):
                target = "/" + "/".join(resolved) + "/" + target
            parts = [p for p in target.split("/") if p] + parts
            resolved = []
            continue
        resolved.append(part)
    return "/" + "/".join(resolved)


@dataclass(frozen=True)
class Request:
    """One operation to decide: a file operation on a path, or a network endpoint."""

    operation: str
    path: str | None = None
    vnode_type: str = "REGULAR-FILE"
    remote: tuple[str, int] | None = None
    local: tuple[str, int] | None = None
    extensions: frozenset[str] = frozenset()


# -- filters -------------------------------------------------------------------------------

Pred = Callable[[Request], bool]


@dataclass(frozen=True)
class Rule:
    """One ``allow``/``deny`` rule with its operations and its compiled filter."""

    action: str
    operations: tuple[str, ...]
    predicate: Pred
    text: str


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _endpoint(spec: str) -> Callable[[tuple[str, int] | None], bool]:
    host, sep, port = spec.rpartition(":")
    if not sep or host not in ("localhost", "*") or not (port == "*" or port.isdigit()):
        raise SBPLError(f"network endpoint `{spec}` must be `localhost:PORT` or `*:PORT` (PORT a number or `*`)")

    def match(endpoint: tuple[str, int] | None) -> bool:
        if endpoint is None:
            return False
        address, number = endpoint
        if host == "localhost" and not _is_loopback(address):
            return False
        return port == "*" or int(port) == number

    return match


class _Loader:
    def __init__(self, params: Mapping[str, str]):
        self.params = dict(params)
        self.used_params: set[str] = set()

    def value(self, expr: Any) -> str:
        """Evaluate a string expression."""
        if isinstance(expr, str) and not isinstance(expr, Symbol):
            return expr
        if isinstance(expr, list) and expr and isinstance(expr[0], Symbol):
            head, args = expr[0], expr[1:]
            if head == "param" and len(args) == 1:
                name = self.value(args[0])
                if name not in self.params:
                    raise SBPLError(f"parameter `{name}` is not defined (no -D{name}=…)")
                self.used_params.add(name)
                return self.params[name]
            if head == "string-append":
                return "".join(self.value(a) for a in args)
            if head == "regex-quote" and len(args) == 1:
                return regex_quote(self.value(args[0]))
        raise SBPLError(f"unsupported expression `{expr!r}`")

    def filter(self, expr: Any, operations: Sequence[str]) -> Pred:
        if not (isinstance(expr, list) and expr and isinstance(expr[0], Symbol)):
            raise SBPLError(f"filter expected, got `{expr!r}`")
        name, args = str(expr[0]), expr[1:]
        if name not in FILTERS:
            raise SBPLError(f"unknown filter `{name}`")
        families = FILTERS[name]
        if families is not None:
            for op in operations:
                if op != "default" and not any(op.startswith(f) for f in families):
                    raise SBPLError(f"filter `{name}` does not apply to operation `{op}`")
        if name in ("require-all", "require-any"):
            subs = [self.filter(a, operations) for a in args]
            if name == "require-all":
                return lambda r: all(s(r) for s in subs)
            return lambda r: any(s(r) for s in subs)
        if name == "require-not":
            if len(args) != 1:
                raise SBPLError("`require-not` takes exactly one filter")
            sub = self.filter(args[0], operations)
            return lambda r: not sub(r)
        if name in ("literal", "path"):
            values = [self.value(a) for a in args]
            return lambda r: r.path in values
        if name == "subpath":
            roots = [self.value(a) for a in args]
            return lambda r: r.path is not None and any(
                r.path == root or r.path.startswith(root.rstrip("/") + "/") for root in roots)
        if name == "prefix":
            prefixes = [self.value(a) for a in args]
            return lambda r: r.path is not None and any(r.path.startswith(p) for p in prefixes)
        if name == "regex":
            patterns = [translate_regex(self.value(a)) for a in args]
            return lambda r: r.path is not None and any(p.search(r.path) for p in patterns)
        if name == "vnode-type":
            kinds = {str(a) for a in args}
            if not kinds <= VNODE_TYPES:
                raise SBPLError(f"unknown vnode type in `{expr!r}`")
            return lambda r: r.vnode_type in kinds
        if name == "extension":
            classes = {self.value(a) for a in args}
            return lambda r: bool(classes & r.extensions)
        if name in ("remote", "local"):
            if len(args) != 2 or str(args[0]) not in ("ip", "tcp", "udp"):
                raise SBPLError(f"unsupported network filter `{expr!r}`")
            match = _endpoint(self.value(args[1]))
            return (lambda r: match(r.remote)) if name == "remote" else (lambda r: match(r.local))
        if name == "target":
            if [str(a) for a in args] not in (["self"], ["same-sandbox"], ["children"]):
                raise SBPLError(f"unknown target `{expr!r}`")
            return lambda r: False  # process targets are not probed
        # names of mach services, sysctls, iokit classes, preference domains: never probed here
        for a in args:
            self.value(a)
        return lambda r: False

    def rule(self, form: list[Any]) -> Rule:
        action = str(form[0])
        items = list(form[1:])
        if items and isinstance(items[0], list) and items[0] and items[0][0] == "with":
            modifier = items.pop(0)
            if len(modifier) < 2 or str(modifier[1]) not in MODIFIERS:
                raise SBPLError(f"unknown modifier `{modifier!r}`")
        operations: list[str] = []
        while items and isinstance(items[0], Symbol):
            op = str(items.pop(0))
            op = ALIASES.get(op, op)
            if op not in OPERATIONS:
                raise SBPLError(f"unknown operation `{op}`")
            operations.append(op)
        if not operations:
            raise SBPLError(f"rule without an operation: `{form!r}`")
        if not items:
            predicate: Pred = lambda r: True  # noqa: E731
        else:
            subs = [self.filter(item, operations) for item in items]
            predicate = lambda r: any(s(r) for s in subs)  # noqa: E731
        return Rule(action, tuple(operations), predicate, repr(form))


# -- the profile ---------------------------------------------------------------------------

def _covers(rule_op: str, op: str) -> int | None:
    """How specifically ``rule_op`` names ``op``: larger is more specific, None if not at all."""
    if rule_op == op:
        return 1000
    if rule_op == "default":
        return None
    if rule_op.endswith("*") and op.startswith(rule_op[:-1]):
        return len(rule_op)
    return None


@dataclass
class Profile:
    """A loaded profile: its rules in order, and the default decision."""

    rules: list[Rule] = field(default_factory=list)
    default: str = "allow"
    used_params: set[str] = field(default_factory=set)

    def decide(self, request: Request, mode: str = "last-match") -> bool:
        """Whether ``request`` is allowed (``mode``: ``last-match`` or ``specific-first``)."""
        op = ALIASES.get(request.operation, request.operation)
        if op not in OPERATIONS or (op.endswith("*") and op not in ALIASES.values()):
            raise SBPLError(f"probe operation `{op}` must be a concrete operation")
        candidates = [(level, rule) for rule in self.rules for o in rule.operations
                      if (level := _covers(o, op)) is not None]
        if mode == "last-match":
            for _, rule in reversed(candidates):
                if rule.predicate(request):
                    return rule.action == "allow"
            return self.default == "allow"
        if mode != "specific-first":
            raise SBPLError(f"unknown mode `{mode}`")
        for level in sorted({lvl for lvl, _ in candidates}, reverse=True):
            for lvl, rule in reversed(candidates):
                if lvl == level and rule.predicate(request):
                    return rule.action == "allow"
        return self.default == "allow"

    def allowed(self, request: Request) -> bool:
        """The decision, insisting that both evaluation modes agree."""
        last = self.decide(request, "last-match")
        specific = self.decide(request, "specific-first")
        if last != specific:
            raise SBPLError(f"profile depends on the rule-precedence model for {request}")
        return last


def load(text: str, params: Mapping[str, str] | None = None) -> Profile:
    """Read and check a profile; ``params`` are the ``-D`` values."""
    loader = _Loader(params or {})
    profile = Profile()
    version_seen = False
    for form in read(text):
        if not (isinstance(form, list) and form and isinstance(form[0], Symbol)):
            raise SBPLError(f"top-level form expected, got `{form!r}`")
        head = str(form[0])
        if head == "version":
            if form[1:] != [1]:
                raise SBPLError(f"unsupported `{form!r}`")
            version_seen = True
        elif head in ("allow", "deny"):
            if not version_seen:
                raise SBPLError("`(version 1)` must come first")
            rule = loader.rule(form)
            if rule.operations == ("default",):
                profile.default = rule.action
            else:
                profile.rules.append(rule)
        else:
            raise SBPLError(f"unknown top-level form `{head}`")
    if not version_seen:
        raise SBPLError("missing `(version 1)`")
    profile.used_params = loader.used_params
    return profile


def parse_argv(argv: Sequence[str]) -> tuple[str, dict[str, str]]:
    """The profile text and parameters of a ``sandbox-exec -p PROFILE -DNAME=value … --`` argv."""
    if not argv or not argv[0].endswith("sandbox-exec"):
        raise SBPLError("argv must start with sandbox-exec")
    profile: str | None = None
    params: dict[str, str] = {}
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            break
        if arg == "-p":
            profile = argv[i + 1]
            i += 2
        elif arg.startswith("-D"):
            name, sep, value = arg[2:].partition("=")
            if not sep or not name:
                raise SBPLError(f"bad parameter `{arg}`")
            params[name] = value
            i += 1
        else:
            raise SBPLError(f"unexpected sandbox-exec argument `{arg}`")
    if profile is None:
        raise SBPLError("no -p PROFILE")
    return profile, params
