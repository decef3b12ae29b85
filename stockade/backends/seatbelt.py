"""The macOS Seatbelt backend: IR → an SBPL profile and the ``sandbox-exec`` argv.

The profile starts closed (``(deny default)``), opens the small baseline a command-line
process needs to start, then renders the filesystem rules so that Seatbelt's
*last-match-wins* evaluation reproduces the IR's *most-specific-path-wins* decision:

* every rule is emitted in a **depth slice**: a literal rule at the depth of its path, a
  glob rule once per depth it can match at (its regex restricted to exactly that many path
  components), each slice ordered by strictness (``read`` < ``write`` < ``readonly`` <
  ``deny``), slices shallow → deep — so for any path the last matching rule is the IR's;
* globs that can match arbitrarily deep (``**``) get one final tail slice beyond the
  deepest rule; when two such globs grant different access, the one granting less access
  is emitted last (stricter than the IR if both match one path at different depths —
  warned; never looser);
* each rule sets both read and write for its subtree, because a deeper rule replaces a
  shallower one completely in the IR.

After the rules come the device nodes every process needs, metadata-only access to the
directories on the way to granted paths (``realpath`` must ``lstat`` every component), and
finally the move guards: ``file-write-unlink`` and ``file-write-create`` are denied on every
writable ancestor of a protected path (and on a glob's literal anchor), so a protected
directory can neither be renamed away nor replaced by a planted one.

Paths are canonical macOS spellings (``/tmp``, ``/var``, ``/etc`` live under ``/private``;
Seatbelt matches the resolved path).  The workspace, home and temporary directory are
passed as ``-D`` parameters (``(param "WORKSPACE")``), so arbitrary bytes in them never
meet the SBPL reader; other path text is escaped, or — when it holds control characters —
passed as a parameter too.  Regex text is escaped for Apple's POSIX-style regex dialect and
parameter values are quoted with ``regex-quote``.

Network: loopback as the ``localhost`` rules say (``(remote ip "localhost:*")`` or the
ports named), the ports of ``allow host-loopback:PORT`` (on macOS the host's loopback is
the sandbox's), and — when the policy allows anything beyond loopback (hosts, domains,
ranges, ``default allow``) — outbound TCP to the network broker's loopback port only,
``(param "BROKER_PORT")``, which ``stockade run`` fills when it starts the broker.  Seatbelt
cannot filter by host name or address; the broker decides every connection by the IR, and
``data["broker"]`` names the parameter and the proxy variables the run must set.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from stockade import catalogue as codes
from stockade.backends.base import RUNTIME, Artifact, Backend, Handling, handled, runtime
from stockade.backends.netplan import (
    BROKER_HOST,
    BROKER_PORT_PARAM,
    BROKER_PORT_PLACEHOLDER,
    BROKER_PORT_UNSET,
    allows_everything,
    brokered_rules,
    needs_broker,
    proxy_environment,
)
from stockade.compiler.ir import ACCESS_RANK, FS_KIND_RANK, FsRule, Network, PolicyIR
from stockade.compiler.query import HOST_LOOPBACK_NAME

#: Where ``sandbox-exec`` lives; the runtime must not look it up on ``PATH``.
SANDBOX_EXEC = "/usr/bin/sandbox-exec"

#: Top-level macOS symlinks into ``/private`` (Seatbelt sees the resolved spelling).
PRIVATE_ALIASES: tuple[str, ...] = ("/tmp", "/var", "/etc")

#: Operations granted by a readable rule: reading, executing and mapping code from it.
READ_OPS: tuple[str, ...] = ("file-read*", "process-exec", "file-map-executable")
#: Operations granted by a writable rule.
WRITE_OPS: tuple[str, ...] = ("file-write*",)
#: Operations denied on writable ancestors of protected paths (rename away / plant).
MOVE_OPS: tuple[str, ...] = ("file-write-unlink", "file-write-create")

#: The context directories passed as ``-D`` parameters, in the order they are tried.
ROOT_PARAMS: tuple[tuple[str, str], ...] = (("WORKSPACE", "workspace"), ("HOME", "home"), ("TMPDIR", "tmpdir"))

#: Paths a process must be able to read for dyld to start anything at all.
STARTUP_PATHS: tuple[str, ...] = ("/usr/lib", "/System/Library")

_REGEX_SPECIAL = set("\\^$.|?*+()[]{}")


# -- path spelling -----------------------------------------------------------------------

def macos_canonical(path: str) -> str:
    """The spelling Seatbelt matches: ``/tmp``, ``/var`` and ``/etc`` under ``/private``."""
    for alias in PRIVATE_ALIASES:
        if path == alias or path.startswith(alias + "/"):
            return "/private" + path
    return path


def private_alias(path: str) -> str | None:
    """The un-``/private`` spelling of a canonical path, if it has one."""
    for alias in PRIVATE_ALIASES:
        full = "/private" + alias
        if path == full or path.startswith(full + "/"):
            return path[len("/private"):]
    return None


def path_problem(path: str, glob: bool = False) -> str | None:
    """Why ``path`` cannot be used as a canonical absolute path, or None if it can."""
    if "\x00" in path:
        return "contains a NUL byte"
    if not path.startswith("/"):
        return "is not absolute"
    if path != "/" and (path.endswith("/") or "//" in path):
        return "is not normalised"
    parts = path.split("/")[1:]
    if path != "/" and any(part in (".", "..") for part in parts):
        return "contains `.` or `..` components"
    if glob and any("**" in part and part != "**" for part in parts):
        return "uses `**` inside a path component (only whole `**` components are supported)"
    return None


def depth(path: str) -> int:
    """The number of components of an absolute path (``/`` → 0)."""
    return len([part for part in path.split("/") if part])


def ancestors_or_self(path: str) -> list[str]:
    """``path`` and each of its ancestors, deepest first, ending with ``/``."""
    out = [path]
    while path != "/":
        path = posixpath.dirname(path)
        out.append(path)
    return out


def sbpl_string(text: str) -> str:
    """``text`` as an SBPL (TinyScheme) string literal: backslash and quote escaped.

    Only printable text may be spelled inline; callers pass other text as parameters.
    """
    if not is_inline_safe(text):
        raise ValueError(f"text `{text!r}` must be passed as a parameter")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def is_inline_safe(text: str) -> bool:
    """Whether ``text`` can be written as a string literal (no control characters)."""
    return all(ch.isprintable() for ch in text)


def regex_escape(text: str) -> str:
    """``text`` as a literal in Apple's POSIX-style regex dialect."""
    return "".join("\\" + ch if ch in _REGEX_SPECIAL else ch for ch in text)


def regex_literal(regex: str) -> str:
    """A regex as SBPL source: ``#"…"`` when it has no quote, else an escaped string."""
    if '"' not in regex and is_inline_safe(regex):
        return '#"' + regex + '"'
    return sbpl_string(regex)


# -- globs ---------------------------------------------------------------------------------
# Tokens mirror stockade.compiler.query.glob_to_regex exactly, so that a depth-restricted
# regex matches precisely the paths the IR's glob matches at that depth.

@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # "lit" (one char), "star" [^/]*, "qmark" [^/], "dstar" .*, "sds" (?:/.*)?/
    char: str = ""


def glob_tokens(pattern: str) -> list[_Tok]:
    """Tokenise a path glob the way the IR's ``glob_to_regex`` reads it."""
    out: list[_Tok] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("/**/", i):
            out.append(_Tok("sds"))
            i += 4
        elif pattern.startswith("**", i):
            out.append(_Tok("dstar"))
            i += 2
        elif pattern[i] == "*":
            out.append(_Tok("star"))
            i += 1
        elif pattern[i] == "?":
            out.append(_Tok("qmark"))
            i += 1
        else:
            out.append(_Tok("lit", pattern[i]))
            i += 1
    return out


@dataclass(frozen=True)
class GlobShape:
    """A glob split into its literal head (up to the first wildcard) and the rest."""

    head: str
    rest: tuple[_Tok, ...]

    @property
    def slots(self) -> int:
        """How many tokens can absorb any number of components."""
        return sum(1 for t in self.rest if t.kind in ("dstar", "sds"))

    @property
    def min_depth(self) -> int:
        """The fewest components a path this glob matches can have."""
        return self.head.count("/") + sum(1 for t in self.rest if (t.kind == "lit" and t.char == "/") or t.kind == "sds")

    @property
    def bounded(self) -> bool:
        """Whether every match has exactly :attr:`min_depth` components."""
        return self.slots == 0

    @property
    def anchor(self) -> str:
        """The literal directory the glob is anchored at (never moved by a match)."""
        if not self.rest:
            return self.head
        if self.head.endswith("/"):
            return self.head[:-1] or "/"
        if self.rest[0].kind == "sds":  # the head is whole components
            return self.head or "/"
        return self.head[: self.head.rfind("/")] or "/"


def glob_shape(pattern: str) -> GlobShape:
    """Split ``pattern`` into a :class:`GlobShape`."""
    toks = glob_tokens(pattern)
    i = 0
    while i < len(toks) and toks[i].kind == "lit":
        i += 1
    return GlobShape("".join(t.char for t in toks[:i]), tuple(toks[i:]))


def _any_with(slashes: int, at_least: bool) -> str:
    """Regex for ``.*`` absorbing exactly (or at least) ``slashes`` slashes."""
    body = "[^/]*" + "/[^/]*" * slashes
    return body + ".*" if at_least else body


def _rest_regex(rest: Sequence[_Tok], extra: Sequence[int], at_least: bool) -> str:
    out: list[str] = []
    slot = 0
    for tok in rest:
        if tok.kind == "lit":
            out.append(regex_escape(tok.char))
        elif tok.kind == "star":
            out.append("[^/]*")
        elif tok.kind == "qmark":
            out.append("[^/]")
        elif tok.kind == "dstar":
            out.append(_any_with(extra[slot], at_least))
            slot += 1
        else:  # sds: "/" alone, or "/" + .* + "/" (one more slash plus what .* absorbs)
            k = extra[slot]
            slot += 1
            if k == 0 and not at_least:
                out.append("/")
            elif k == 0:
                out.append("/(" + _any_with(0, True) + "/)?")
            else:
                out.append("/" + _any_with(k - 1, at_least) + "/")
    return "".join(out)


#: At most this many alternatives per depth slice of one glob (a glob with more ways to
#: spread its components over its `**` is refused, not compiled for minutes).
MAX_GLOB_ALTERNATIVES = 256


def _compositions(total: int, parts: int) -> Iterable[tuple[int, ...]]:
    """Every way to write ``total`` as an ordered sum of ``parts`` numbers ≥ 0."""
    if parts == 0:
        if total == 0:
            yield ()
        return
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def glob_too_complex(shape: GlobShape, max_depth: int) -> bool:
    """Whether the glob needs more than :data:`MAX_GLOB_ALTERNATIVES` alternatives in a slice."""
    from math import comb

    if shape.bounded:
        return False
    excess = max(max_depth + 1 - shape.min_depth, 0)
    return comb(excess + shape.slots - 1, shape.slots - 1) > MAX_GLOB_ALTERNATIVES


def glob_rest_regex(shape: GlobShape, at_depth: int, at_least: bool = False) -> str | None:
    """Regex (without the literal head) for the glob matching a path of exactly
    ``at_depth`` components (or at least that many), or None if it cannot."""
    excess = at_depth - shape.min_depth
    if excess < 0:
        if not at_least:
            return None
        excess = 0
    if shape.bounded:
        return _rest_regex(shape.rest, (), False) if excess == 0 else None
    alternatives: list[str] = []
    for combo in _compositions(excess, shape.slots):
        alternatives.append(_rest_regex(shape.rest, combo, at_least))
    alternatives = list(dict.fromkeys(alternatives))
    return alternatives[0] if len(alternatives) == 1 else "(" + "|".join(alternatives) + ")"


# -- SBPL expressions ------------------------------------------------------------------------

@dataclass
class _Params:
    """The ``-D`` parameters of a profile: context roots plus any unprintable path text."""

    roots: list[tuple[str, str]] = field(default_factory=list)  # (name, value), deepest first
    values: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, value: str) -> str:
        self.values[name] = value
        return name

    def spill(self, value: str) -> str:
        """A fresh parameter holding ``value`` (text that cannot be written inline)."""
        for name, existing in self.values.items():
            if existing == value and name.startswith("PATH_"):
                return name
        return self.add(f"PATH_{sum(1 for n in self.values if n.startswith('PATH_'))}", value)

    def root_of(self, path: str) -> tuple[str, str] | None:
        """The deepest root parameter that ``path`` equals or lies below."""
        for name, value in self.roots:
            if value != "/" and (path == value or path.startswith(value + "/")):
                return name, value
        return None

    def string(self, text: str) -> str:
        """An SBPL expression whose value is ``text`` (inline or a parameter)."""
        return sbpl_string(text) if is_inline_safe(text) else f'(param "{self.spill(text)}")'

    def path(self, path: str) -> str:
        """An SBPL expression for an absolute path, rooted at a parameter where possible."""
        root = self.root_of(path)
        if root is None:
            return self.string(path)
        name, value = root
        tail = path[len(value):]
        if not tail:
            return f'(param "{name}")'
        return f'(string-append (param "{name}") {self.string(tail)})'

    def regex(self, head: str, rest: str) -> str:
        """An SBPL regex expression: ``^`` + quoted ``head`` + ``rest`` (already regex)."""
        root = self.root_of(head)
        if root is not None:
            name, value = root
            parts = [f'(regex-quote (param "{name}"))']
            head = head[len(value):]
        else:
            parts = []
        if head and not is_inline_safe(head):
            parts.append(f'(regex-quote (param "{self.spill(head)}"))')
            head = ""
        tail = regex_escape(head) + rest
        if not is_inline_safe(tail):  # control characters in the pattern: the regex itself as a parameter
            parts.append(f'(param "{self.spill(tail)}")')
            tail = ""
        if not parts:
            return regex_literal("^" + tail)
        tail_parts = [regex_literal(tail)] if tail else []
        return "(string-append " + " ".join(['"^"', *parts, *tail_parts]) + ")"


@dataclass(frozen=True)
class _Entry:
    """One filesystem rule placed in a depth slice."""

    depth: int
    rank: int
    order: int
    rule: FsRule
    filters: tuple[str, ...]
    note: str


# -- the backend -----------------------------------------------------------------------------

class SeatbeltBackend(Backend):
    """Render a policy as an SBPL profile for ``sandbox-exec`` (see module docstring)."""

    name: ClassVar[str] = "seatbelt"
    #: filesystem: depth-sliced rules, globs as anchored regexes; network: loopback as the
    #: policy says, everything else through the broker's port (``(param "BROKER_PORT")``);
    #: environment and limits: not in a profile, ``stockade run`` rebuilds the environment
    #: and applies the limits before ``sandbox-exec`` (``disk`` is refused: it needs
    #: bubblewrap); commands and verdicts: judged by ``stockade run``.
    SECTIONS: ClassVar[dict[str, Handling]] = {
        "filesystem": handled("_filesystem"), "network": handled("visit_Network"), "environment": RUNTIME,
        "limits": runtime("refuse_limits"), "commands": RUNTIME, "session": RUNTIME, "verdicts": RUNTIME,
    }

    RENDERERS: ClassVar[dict[type, str]] = {FsRule: "visit_FsRule", Network: "visit_Network"}

    def __init__(self, ir: PolicyIR, **options: Any):
        super().__init__(ir, **options)
        self.params = _Params()
        self._rules: list[FsRule] = []
        self._max_depth = 0

    # -- driver ------------------------------------------------------------------------

    def render(self) -> Artifact:
        """Produce the profile text and the ``sandbox-exec`` argv."""
        self._set_params()
        self._rules = self._canonical_rules()
        self.cir = replace(self.ir, filesystem=tuple(self._rules))
        lines = ["(version 1)", "", "; closed by default: everything below is an exception", "(deny default)", ""]
        lines += self._baseline()
        lines += self._filesystem()
        lines += self._devices()
        lines += self._metadata()
        lines += self._move_guards()
        lines += self.dispatch(self.ir.network) or []
        self._check_startup()
        profile = "\n".join(lines).rstrip("\n") + "\n"
        argv = [SANDBOX_EXEC, "-p", profile]
        for name, value in self.params.values.items():
            argv.append(f"-D{name}={value}")
        argv.append("--")
        data = {"profile": profile, "argv": argv, "params": dict(self.params.values), "broker": self.broker()}
        return Artifact(target=self.name, text=profile, data=data)

    def refuse_limits(self) -> None:
        """The limits ``stockade run`` cannot apply on macOS: ``disk`` (error ``B320``)."""
        self.unsupported_limits(("disk",), "macOS has no private size-limited layer for the paths outside the "
                                           "workspace (`stockade run` enforces `disk` with bubblewrap only)")
        self.unsupported_limits(("cpus",), "macOS has no cgroups: `stockade run` enforces `cpus` with bubblewrap "
                                           "and a cpu cgroup only")

    def _set_params(self) -> None:
        ctx = self.ir.context
        roots: list[tuple[str, str]] = []
        for name, attr in ROOT_PARAMS:
            value = getattr(ctx, attr)
            problem = path_problem(value)
            if problem:
                self.unsupported_rule(f"the {attr} `{value!r}` {problem}", None, code=codes.KERNEL_OR_CONTEXT_PATH)
                continue
            value = macos_canonical(value)
            self.params.add(name, value)
            roots.append((name, value))
        # deepest first, so a home inside the workspace roots at HOME
        self.params.roots = sorted(roots, key=lambda item: (-depth(item[1]), item[0]))

    def _canonical_rules(self) -> list[FsRule]:
        out: list[FsRule] = []
        for rule in self.ir.filesystem:
            problem = path_problem(rule.pattern, rule.is_glob)
            if problem:
                self.unsupported_rule(f"path `{rule.pattern!r}` {problem}", rule.origin, code=codes.UNUSABLE_PATH)
                continue
            out.append(FsRule(rule.kind, macos_canonical(rule.pattern), rule.is_glob, rule.locked,
                              rule.source_text, origin=rule.origin))
        return out

    # -- baseline ----------------------------------------------------------------------

    def _baseline(self) -> list[str]:
        return [
            "; -- baseline: what any command-line process needs to start ------------------",
            "; fork and exec: shells run pipelines of child processes (exec itself is further",
            "; limited to readable files by the filesystem rules below)",
            "(allow process-fork)",
            "; signals and process info only within this sandbox: job control, timeouts, ps of",
            "; its own children — never other processes of the user",
            "(allow signal (target same-sandbox))",
            "(allow process-info* (target same-sandbox))",
            "; CoreFoundation reads preferences at start-up in many tools",
            "(allow user-preference-read)",
            "; user and group lookups (getpwuid: whoami, git, ssh) and the per-user temp and",
            "; cache directory lookup (confstr) go to these two daemons",
            "(allow mach-lookup",
            '  (global-name "com.apple.system.opendirectoryd.libinfo")',
            '  (global-name "com.apple.bsd.dirhelper"))',
            "; preferences (CFPreferences, read by git's and Python's frameworks through",
            "; cfprefsd), unified logging (os_log of every framework) and notify(3) (libnotify:",
            "; timezone and network-change notifications) are daemons, not files",
            "(allow mach-lookup",
            '  (global-name "com.apple.cfprefsd.daemon")',
            '  (global-name "com.apple.cfprefsd.agent")',
            '  (global-name "com.apple.logd")',
            '  (global-name "com.apple.system.notification_center"))',
            "; host_processor_info(): libuv's os.cpus() in Node.js",
            "(allow mach-host*)",
            "; POSIX semaphores: Python multiprocessing locks",
            "(allow ipc-posix-sem)",
            "; read-only hardware and OS facts that runtimes query at start-up (CPU count,",
            "; page size, memory, OS version), and the process table entries of its own pids",
            "(allow sysctl-read",
            *[f'  (sysctl-name "{name}")' for name in _SYSCTL_NAMES],
            *[f'  (sysctl-name-prefix "{name}")' for name in _SYSCTL_PREFIXES],
            ")",
            "",
        ]

    # -- filesystem --------------------------------------------------------------------

    def visit_FsRule(self, rule: FsRule) -> list[_Entry]:
        """Place one rule in the depth slices it can decide (see module docstring)."""
        rank = FS_KIND_RANK[rule.kind]
        if not rule.is_glob:
            filters = [f"(subpath {self.params.path(rule.pattern)})"]
            alias = private_alias(rule.pattern)
            if alias is not None and rule.access != "write":
                filters.append(f"(subpath {self.params.path(alias)})")  # defence in depth
            return [_Entry(depth(rule.pattern), rank, 0, rule, tuple(filters), "")]
        shape = glob_shape(rule.pattern)
        if glob_too_complex(shape, max(self._max_depth, shape.min_depth)):
            self.unsupported_rule(f"glob `{rule.source_text or rule.pattern}` has too many `**` for a Seatbelt "
                                  "profile", rule.origin, "write the glob with fewer `**`, or name the directories it means",
                                  code=codes.UNSUPPORTED_RULE)
            return []
        entries = []
        start = shape.min_depth
        for d in range(start, max(self._max_depth, start) + 1):
            rest = glob_rest_regex(shape, d)
            if rest is not None:
                regex = self.params.regex(shape.head, rest + "(/.*)?$")
                entries.append(_Entry(d, rank, 0, rule, (f"(regex {regex})",), f"at depth {d}"))
        if not shape.bounded:
            d = max(self._max_depth, start) + 1
            rest = glob_rest_regex(shape, d, at_least=True)
            regex = self.params.regex(shape.head, (rest or "") + "(/.*)?$")
            entries.append(_Entry(d, rank, 1, rule, (f"(regex {regex})",), f"at depth {d} or deeper"))
        return entries

    def _filesystem(self) -> list[str]:
        self._max_depth = 0
        for rule in self._rules:
            if rule.is_glob:
                shape = glob_shape(rule.pattern)
                self._max_depth = max(self._max_depth, shape.min_depth)
            else:
                self._max_depth = max(self._max_depth, depth(rule.pattern))
        entries: list[_Entry] = []
        for rule in self._rules:
            entries.extend(self.dispatch(rule) or [])
        self._warn_deep_globs()
        # in a slice the IR's tie-break decides (stricter kind last); in the tail, where the
        # match depths cannot be compared, the rule granting the least access goes last, so
        # the profile is never looser than the IR there
        entries.sort(key=lambda e: (e.order, e.depth, -ACCESS_RANK[e.rule.access] if e.order else 0, e.rank))
        lines = ["; -- filesystem: shallow → deep, stricter last (last match wins) ------------"]
        if not entries:
            lines.append("; (no filesystem rules: no path is accessible)")
        # neighbours with the same access become one rule with several filters (any of
        # them): no other rule sits between them, so the decision is unchanged
        group: list[_Entry] = []
        for entry in [*entries, None]:
            if group and (entry is None or entry.rule.access != group[0].rule.access):
                for member in group:
                    lines.append(f"; {self._describe(member.rule)}{' ' + member.note if member.note else ''}")
                filters = [f for member in group for f in member.filters]
                lines += self._emit(group[0].rule.access, list(dict.fromkeys(filters)))
                group = []
            if entry is not None:
                group.append(entry)
        lines.append("")
        return lines

    @staticmethod
    def _emit(access: str, filters: Sequence[str]) -> list[str]:
        body = " " + filters[0] if len(filters) == 1 else "\n  " + "\n  ".join(filters)
        read, write = " ".join(READ_OPS), " ".join(WRITE_OPS)
        if access == "write":
            return [f"(allow {read} {write}{body})"]
        if access == "read":
            return [f"(allow {read}{body})", f"(deny {write}{body})"]
        return [f"(deny {read} {write}{body})"]

    @staticmethod
    def _describe(rule: FsRule) -> str:
        where = f" ({rule.origin})" if rule.origin else ""
        return _comment_safe(f"{rule.kind} {rule.pattern}{where}")

    def _warn_deep_globs(self) -> None:
        deep = [r for r in self._rules if r.is_glob and not glob_shape(r.pattern).bounded]
        kinds = {r.access for r in deep}
        if len(kinds) < 2:
            return
        strictest = min(deep, key=lambda r: (ACCESS_RANK[r.access], -FS_KIND_RANK[r.kind]))
        for rule in deep:
            if rule.access != strictest.access:
                self.warn(f"`{rule.pattern}` and `{strictest.pattern}` may both match one path below depth "
                          f"{self._max_depth}; there the rule granting less access applies, not the deeper one",
                          rule.origin, help="Seatbelt regexes cannot compare match depths beyond the deepest rule",
                          code=codes.PATH_RULE_APPROXIMATED)

    # -- after the rules ---------------------------------------------------------------

    def _devices(self) -> list[str]:
        return [
            "; -- device nodes every process uses (after the rules: always available) -----",
            "; the bit bucket and the controlling terminal are read and written by shells",
            "(allow file-read* file-write-data file-ioctl",
            '  (literal "/dev/null")',
            '  (literal "/dev/tty"))',
            "; randomness and zeroes: read-only",
            "(allow file-read* file-ioctl",
            '  (literal "/dev/zero")',
            '  (literal "/dev/random")',
            '  (literal "/dev/urandom"))',
            "; dyld opens the dtrace helper when starting some binaries",
            '(allow file-read* file-write-data file-ioctl (literal "/dev/dtracehelper"))',
            "; /dev/fd/N: bash process substitution <(…) and /dev/stdin",
            '(allow file-read* file-write-data (subpath "/dev/fd"))',
            "; pseudo-terminals: openpty() for interactive tools; only ptys this sandbox opened",
            "(allow pseudo-tty)",
            '(allow file-read* file-write-data file-ioctl (literal "/dev/ptmx"))',
            "(allow file-read* file-write-data file-ioctl",
            '  (require-all (regex #"^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))',
            "; the terminal inherited from before the sandbox (no pty extension): ioctl on the",
            "; descriptors already open (isatty, window size, raw mode) — opening another",
            "; terminal by name stays denied",
            "(allow file-ioctl",
            '  (require-all (regex #"^/dev/ttys[0-9]+$") (vnode-type CHARACTER-DEVICE)))',
            "",
        ]

    def _metadata(self) -> list[str]:
        granted: set[str] = set()
        for rule in self._rules:
            if rule.access == "none":
                continue
            path = glob_shape(rule.pattern).anchor if rule.is_glob else rule.pattern
            for ancestor in ancestors_or_self(path)[0 if rule.is_glob else 1:]:
                if not self.cir.path_access(ancestor).can_read:
                    granted.add(ancestor)
        if not granted:
            return []
        lines = ["; -- stat only (no listing, no content) on directories leading to granted paths,",
                 "; so realpath() and getcwd() can walk to them",
                 "(allow file-read-metadata"]
        lines += [f"  (literal {self.params.path(p)})" for p in sorted(granted, key=lambda p: (depth(p), p))]
        lines[-1] += ")"
        return lines + [""]

    def protected_anchors(self) -> list[str]:
        """Paths whose protection a rename of them or of an ancestor would undo."""
        out = []
        for rule in self._rules:
            if rule.access != "write":
                out.append(glob_shape(rule.pattern).anchor if rule.is_glob else rule.pattern)
        return out

    def _move_guards(self) -> list[str]:
        guarded: set[str] = set()
        for anchor in self.protected_anchors():
            for path in ancestors_or_self(anchor):
                if path not in guarded and self.cir.path_access(path).can_write:
                    guarded.add(path)
        if not guarded:
            return []
        lines = ["; -- move guards (last: nothing re-opens them): a writable directory that holds",
                 "; a protected path cannot be renamed, removed or replaced",
                 f"(deny {' '.join(MOVE_OPS)}"]
        lines += [f"  (literal {self.params.path(p)})" for p in sorted(guarded, key=lambda p: (depth(p), p))]
        lines[-1] += ")"
        return lines + [""]

    def _check_startup(self) -> None:
        for path in STARTUP_PATHS:
            if not self.cir.path_access(path).can_read:
                self.warn(f"no process can start under this profile: `{path}` is not readable", None,
                          help="grant `read` on system paths (e.g. `read /usr /System /bin /Library`)",
                          code=codes.SEATBELT_START_OR_WINDOWS_GLOB)

    # -- network -----------------------------------------------------------------------

    def visit_Network(self, net: Network) -> list[str]:
        """Render the network block: loopback as the ``localhost`` (and ``host-loopback``)
        rules say, and — when the policy allows anything beyond loopback — the broker's
        port only (see module docstring)."""
        lines = ["; -- network -----------------------------------------------------------------"]
        if allows_everything(self.ir):
            lines += ["; the policy allows every destination, private ranges included; certificate checks need trustd",
                      "(allow network*)",
                      '(allow mach-lookup (global-name "com.apple.trustd.agent"))', ""]
            return lines
        loopback_all = all(self.ir.network_access(h, None).allowed for h in ("localhost", "127.0.0.1", "::1"))
        if loopback_all:
            lines += ["; loopback: local services and listeners on 127.0.0.1 / ::1",
                      '(allow network-outbound (remote ip "localhost:*"))',
                      '(allow network-bind network-inbound (local ip "localhost:*"))']
            denied = sorted({r.host.port for r in net.rules if r.action == "deny" and r.host.kind == "localhost"
                             and r.host.port is not None})
            if denied:
                lines.append("(deny network-outbound network-bind network-inbound")
                lines += [f'  (remote ip "localhost:{p}")' for p in denied]
                lines[-1] += ")"
        else:
            ports = sorted({r.host.port for r in net.rules if r.action == "allow" and r.host.kind == "localhost"
                            and r.host.port is not None and self.ir.network_access("localhost", r.host.port).allowed
                            and self.ir.network_access("127.0.0.1", r.host.port).allowed})
            if ports:
                lines.append("; loopback, on the ports the policy names")
                lines.append("(allow network-outbound")
                lines += [f'  (remote ip "localhost:{p}")' for p in ports]
                lines[-1] += ")"
        # the host's loopback is the sandbox's loopback on macOS: a granted port is reached directly
        host_ports = sorted({r.host.port for r in net.rules if str(r.host.kind) == "host-loopback"
                             and r.action == "allow" and r.host.port is not None
                             and self.ir.network_access(HOST_LOOPBACK_NAME, r.host.port).allowed})
        if host_ports and not loopback_all:
            lines.append("; the host's loopback ports the policy grants (`host-loopback:PORT`)")
            lines.append("(allow network-outbound")
            lines += [f'  (remote tcp "localhost:{p}")' for p in host_ports]
            lines[-1] += ")"
        if needs_broker(self.ir, host_loopback_direct=True):
            # port 0 until the run sets the broker's port: nothing beyond loopback is reachable
            self.params.add(BROKER_PORT_PARAM, BROKER_PORT_UNSET)
            if not self.by_runtime:
                for text, origin in brokered_rules(self.ir, host_loopback_direct=True):
                    self.warn(f"`{text}` is enforced by `stockade run`'s network broker: the profile run alone "
                              f"reaches loopback only (`{BROKER_PORT_PARAM}={BROKER_PORT_UNSET}`)", origin,
                              code=codes.RUNTIME_SECTION)
            lines += ["; every other destination through the stockade network broker, which decides each",
                      "; connection by the policy's host rules; its loopback port is a parameter of the run",
                      f'(allow network-outbound (remote tcp (string-append "localhost:" (param "{BROKER_PORT_PARAM}"))))',
                      "; certificate checks of TLS tunnelled through the broker need trustd",
                      '(allow mach-lookup (global-name "com.apple.trustd.agent"))']
        if len(lines) == 1:
            lines.append("; no network: (deny default) covers it")
        return lines + [""]

    def broker(self) -> dict[str, Any] | None:
        """What ``stockade run`` must provide for this profile's network: the broker's loopback
        port as the ``-D`` parameter (``0`` in ``params`` until then: no connection beyond
        loopback succeeds), and the proxy variables (the port as a placeholder), or None when
        the policy needs no broker."""
        if not needs_broker(self.ir, host_loopback_direct=True):
            return None
        return {"port_param": BROKER_PORT_PARAM, "listen": BROKER_HOST, "port_placeholder": BROKER_PORT_PLACEHOLDER,
                "environment": proxy_environment(BROKER_PORT_PLACEHOLDER),
                "loopback": []}  # (the host's loopback ports are the sandbox's on macOS: no forwards)


def _comment_safe(text: str) -> str:
    """``text`` made safe for a one-line SBPL comment (control characters escaped)."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


#: Read-only sysctls: CPU topology, cache and frequency facts that V8 (Node.js), the JVM
#: and Python's ``os.cpu_count`` read at start-up, OS identity, and process-table entries.
_SYSCTL_NAMES: tuple[str, ...] = (
    "hw.activecpu", "hw.busfrequency_compat", "hw.byteorder", "hw.cacheconfig", "hw.cachelinesize",
    "hw.cachelinesize_compat", "hw.cpufamily", "hw.cpufrequency", "hw.cpufrequency_compat", "hw.cputype",
    "hw.cpusubtype", "hw.l1dcachesize", "hw.l1dcachesize_compat", "hw.l1icachesize_compat", "hw.l2cachesize",
    "hw.l2cachesize_compat", "hw.l3cachesize_compat", "hw.logicalcpu", "hw.logicalcpu_max", "hw.machine",
    "hw.memsize", "hw.model", "hw.ncpu", "hw.nperflevels", "hw.packages", "hw.pagesize", "hw.pagesize_compat",
    "hw.physicalcpu", "hw.physicalcpu_max", "hw.tbfrequency_compat", "hw.vectorunit", "kern.argmax",
    "kern.hostname", "kern.maxfilesperproc", "kern.maxproc", "kern.osproductversion", "kern.osrelease",
    "kern.ostype", "kern.osvariant_status", "kern.osversion", "kern.secure_kernel", "kern.usrstack64",
    "kern.version", "machdep.cpu.brand_string", "sysctl.proc_cputype", "vm.loadavg",
)
_SYSCTL_PREFIXES: tuple[str, ...] = ("hw.optional.", "hw.perflevel", "kern.proc.pgrp.", "kern.proc.pid.")

__all__ = ["SeatbeltBackend", "glob_rest_regex", "glob_shape", "macos_canonical", "regex_escape", "sbpl_string"]
