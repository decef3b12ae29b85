"""Anthropic sandbox-runtime (``srt``): settings JSON export and import.

Format (``~/.srt-settings.json``, ``srt --settings FILE``; checked against the schema that
ships in the npm package ``@anthropic-ai/sandbox-runtime`` 0.0.83, ``sandbox-config.js``)::

    {"network":    {"allowedDomains": [...], "deniedDomains": [...], "strictAllowlist": true},
     "filesystem": {"denyRead": [...], "allowRead": [...], "allowWrite": [...], "denyWrite": [...]}}

Semantics (as documented there): reads are allowed everywhere except ``denyRead``, which
``allowRead`` re-opens inside a denied region; writes are denied everywhere except
``allowWrite``, and ``denyWrite`` takes precedence over ``allowWrite``.  Network is allow-only:
``allowedDomains`` (``host``, ``*.domain`` — subdomains only —, optional ``:port``),
``deniedDomains`` checked first (a bare ``*`` denies everything); no "allow everything" entry
exists.  ``allowLocalBinding`` opens the sandbox's own loopback (Stockade's ``localhost``); a
``localhost`` domain entry is the *host's* loopback reached through srt's proxy (Stockade's
``host-loopback``).  The lists are checked against the IR before they are written: an entry
through which srt would reach what the policy denies is left out (see :func:`network_settings`).  Paths may start
with ``~``; relative paths are relative to the working directory; globs are accepted.

:class:`SrtModel` is this module's reading of those semantics (``allowRead`` against
``denyRead``: the deeper entry wins), used for fidelity warnings and round-trip tests.
srt has no command rules, environment rules or limits: those are reported, never dropped
silently.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from stockade import catalogue as codes
from stockade.backends.base import OMITTED, Artifact, Handling, handled
from stockade.compiler.ir import HostPattern, NetRule, PolicyIR
from stockade.compiler.query import HOST_LOOPBACK_NAME, glob_to_regex, ip_literal
from stockade.integrations.base import (
    Exporter,
    Importer,
    PolicyDraft,
    dedupe,
    depth,
    expect_list_of_str,
    expect_object,
    fs_fidelity,
    has_glob,
    home_form,
    is_under,
    json_text,
    load_json,
    locate_value,
    quote_word,
    source_comment,
)

# -- the model -------------------------------------------------------------------------


def _entry_text(entry: Any) -> str:
    return entry["path"] if isinstance(entry, dict) else entry


def normalize_entry(entry: str, home: str, cwd: str) -> str:
    """An srt path entry as an absolute path or absolute glob."""
    if entry == "~" or entry.startswith("~/"):
        return home.rstrip("/") + entry[1:]
    if entry.startswith("**/"):
        return "/" + entry
    if not entry.startswith("/"):
        return os.path.normpath(os.path.join(cwd, entry))
    return entry


def match_depth(entry: str, path: str) -> int | None:
    """How deep the entry matched ``path`` (an ancestor or the path), or None."""
    if not has_glob(entry):
        return depth(entry) if is_under(path, entry) else None
    regex = glob_to_regex(entry)
    parts = [p for p in path.split("/") if p]
    for count in range(len(parts), 0, -1):
        if regex.match("/" + "/".join(parts[:count])):
            return count
    return None


def _deepest(entries: list[str], path: str) -> int | None:
    depths = [d for d in (match_depth(e, path) for e in entries) if d is not None]
    return max(depths) if depths else None


@dataclass(frozen=True)
class SrtModel:
    """srt's decisions for a settings object (see the module docstring)."""

    deny_read: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()
    allow_write: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    allow_local_binding: bool = False

    @classmethod
    def from_settings(cls, settings: dict, home: str, cwd: str, extra_write: tuple[str, ...] = ()) -> SrtModel:
        """Build the model from parsed settings; ``extra_write`` are implicit writable roots."""
        fs = settings.get("filesystem") or {}
        net = settings.get("network") or {}

        def paths(key: str) -> tuple[str, ...]:
            return tuple(normalize_entry(_entry_text(e), home, cwd) for e in fs.get(key) or ())

        return cls(paths("denyRead"), paths("allowRead"), paths("allowWrite") + extra_write, paths("denyWrite"),
                   tuple(net.get("allowedDomains") or ()), tuple(net.get("deniedDomains") or ()),
                   net.get("allowLocalBinding") is True)

    def path_access(self, path: str) -> str:
        """``none``, ``read`` or ``write``."""
        denied = _deepest(list(self.deny_read), path)
        allowed = _deepest(list(self.allow_read), path)
        readable = denied is None or (allowed is not None and allowed >= denied)
        if not readable:
            return "none"
        if _deepest(list(self.allow_write), path) is not None and _deepest(list(self.deny_write), path) is None:
            return "write"
        return "read"

    def host_allowed(self, host: str, port: int | None = None) -> bool:
        """Whether a connection to ``host``:``port`` passes the domain lists.  The sandbox's own
        loopback is ``allowLocalBinding``'s; a ``localhost`` entry of the lists is the *host's*
        loopback, reached through srt's proxy (Stockade's ``host-loopback``)."""
        name = host.lower().strip("[]").rstrip(".")
        if name == HOST_LOOPBACK_NAME:
            name = "localhost"
        elif name == "localhost" or name.endswith(".localhost") or _is_loopback_literal(name):
            return self.allow_local_binding
        if any(domain_matches(e, name, port, deny=True) for e in self.denied_domains):
            return False
        return any(domain_matches(e, name, port) for e in self.allowed_domains)


def _is_loopback_literal(host: str) -> bool:
    address = ip_literal(host)
    return address is not None and (address.is_loopback or address.is_unspecified)


def _digits(text: str) -> bool:
    """ASCII digits, few enough to be a port (``int()`` refuses other digits and huge numbers)."""
    return 0 < len(text) <= 6 and text.isascii() and text.isdigit()


def split_port(entry: str) -> tuple[str, int | None]:
    """``host:443`` → (``host``, 443); ``[::1]:8443`` → (``::1``, 8443)."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and _digits(rest[1:]) else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        if _digits(port):
            return host, int(port)
    return entry, None


def domain_matches(entry: str, host: str, port: int | None, deny: bool = False) -> bool:
    """Whether a domain-list entry matches a destination (an unknown port matches port entries
    only on the deny side)."""
    pattern, entry_port = split_port(entry)
    if entry_port is not None and entry_port != port and not (deny and port is None):
        return False
    pattern, host = pattern.lower(), host.lower().strip("[]")
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


# -- exporting -------------------------------------------------------------------------


@dataclass
class FsLists:
    """The four srt filesystem lists, as absolute paths or absolute globs."""

    deny_read: list[str] = field(default_factory=list)
    allow_read: list[str] = field(default_factory=list)
    allow_write: list[str] = field(default_factory=list)
    deny_write: list[str] = field(default_factory=list)


def filesystem_lists(ir: PolicyIR) -> FsLists:
    """Translate the filesystem rules into srt's four lists (most-specific-wins emulated)."""
    out = FsLists()
    literal = [r for r in ir.filesystem if not r.is_glob]
    base_read = ir.path_access("/").access != "none"
    if not base_read:
        out.deny_read.append("/")
    for rule in ir.filesystem:
        ancestors = [a for a in literal if a is not rule and a.pattern != rule.pattern and is_under(rule.pattern, a.pattern)]
        under_deny = not base_read or any(a.kind == "deny" for a in ancestors)
        under_write = any(a.kind == "write" for a in ancestors)
        if rule.kind == "deny":
            out.deny_read.append(rule.pattern)
            out.deny_write.append(rule.pattern)
            continue
        if under_deny:
            out.allow_read.append(rule.pattern)
        if rule.kind == "write":
            out.allow_write.append(rule.pattern)
        elif rule.kind == "readonly" or under_write:
            out.deny_write.append(rule.pattern)
    for name in ("deny_read", "allow_read", "allow_write", "deny_write"):
        setattr(out, name, dedupe(getattr(out, name)))
    return out


def host_entry(host: HostPattern, ports: bool = True) -> str | None:
    """An srt domain-list entry for a host pattern, or None when srt has no spelling for it
    (the sandbox's own ``localhost`` is ``allowLocalBinding``, not an entry; ``host-loopback``
    is srt's ``localhost``, the host's loopback through its proxy).  ``ports``: whether the
    target accepts a ``:port`` suffix (without, a port-specific pattern has no entry)."""
    kind: str = host.kind
    if kind == "localhost":
        return None
    if kind == "host-loopback" or (kind == "host" and host.value == HOST_LOOPBACK_NAME):
        value = "localhost"
    elif kind == "host":
        value = host.value
        if ":" in value:
            value = f"[{value}]"
    elif kind == "domain":
        value = f"*.{host.value}"
    elif kind == "cidr":
        network = ipaddress.ip_network(host.value, strict=False)
        if network.num_addresses != 1:
            return None
        address = str(network.network_address)
        value = f"[{address}]" if network.version == 6 else address
    elif kind == "any":
        value = "*"
    else:
        return None
    if host.port is None:
        return value
    return f"{value}:{host.port}" if ports else None


@dataclass
class NetLists:
    """The network settings of an srt-style target: domain lists and the loopback switch,
    each list entry with the rule it came from (for warnings)."""

    allowed: list[str] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    allow_local_binding: bool = False
    origins: dict[str, NetRule] = field(default_factory=dict)


def network_lists(exporter: Exporter, allow_any_deny: bool = True) -> tuple[list[str], list[str]]:
    """allowedDomains and deniedDomains for the IR (see :func:`network_settings`)."""
    lists = network_settings(exporter, allow_any_deny=allow_any_deny)
    return lists.allowed, lists.denied


def network_settings(exporter: Exporter, allow_any_deny: bool = True, ports: bool = True,
                     apex_wildcards: bool = False, local_binding: bool = True,
                     model: Callable[[NetLists], Callable[[str, int | None], bool]] | None = None) -> NetLists:
    """The network settings for the IR, never looser than the policy.

    Every rule the target cannot spell is warned about (naming the rule); an ``allow`` with
    no spelling is left out (stricter).  Then the settings are checked against the IR on
    probe destinations: an entry that would let the target reach a destination the policy
    denies (a deny with no spelling, a denied port, a ``*.domain`` apex where the target's
    wildcard covers it — ``apex_wildcards``) is dropped, with a warning naming it.
    ``model`` reads the lists as the target decides (default: :class:`SrtModel`);
    ``local_binding``: whether the target can open the sandbox's own loopback at all."""
    ir = exporter.ir
    out = NetLists()
    if ir.network.default == "allow":
        exporter.cannot_express(f"`default allow` cannot be expressed: {exporter.label} allows only the listed "
                                "domains (exported stricter)", ir.network.default_origin)
    loopback = [ir.network_access(h, None).allowed for h in ("localhost", "127.0.0.1", "::1")]
    out.allow_local_binding = all(loopback) and local_binding
    for rule in ir.network.rules:
        kind: str = rule.host.kind
        if kind == "localhost":
            if rule.action == "allow" and not local_binding:
                exporter.cannot_express(f"`allow {rule.host}`: {exporter.label} has no setting for the sandbox's own "
                                        "loopback (exported stricter: not allowed)", rule.origin)
            elif rule.action == "allow" and not out.allow_local_binding:
                exporter.cannot_express(f"`allow {rule.host}`: {exporter.label} opens the sandbox's own loopback "
                                        "on every port or none (exported stricter: not allowed)", rule.origin)
            elif rule.action == "deny" and out.allow_local_binding:
                exporter.cannot_express(f"`deny {rule.host}`: {exporter.label} opens the sandbox's own loopback "
                                        "on every port or none (exported stricter: loopback closed)", rule.origin)
            continue
        entry = host_entry(rule.host, ports)
        if rule.action == "allow":
            if entry is None or entry.split(":")[0] == "*":
                exporter.cannot_express(f"`allow {rule.host}` has no {exporter.label} domain entry (exported "
                                        "stricter: not allowed)", rule.origin)
                continue
            out.allowed.append(entry)
            out.origins.setdefault(entry, rule)
        elif entry is not None and not (entry.startswith("*") and not entry.startswith("*.") and not allow_any_deny):
            out.denied.append(entry)
            out.origins.setdefault(entry, rule)
    if any(rule.host.kind == "localhost" and rule.action == "deny" for rule in ir.network.rules):
        out.allow_local_binding = False
    out.allowed, out.denied = dedupe(out.allowed), dedupe(out.denied)
    _tighten(exporter, out, model or _srt_decider, apex_wildcards)
    return out


def _srt_decider(lists: NetLists) -> Callable[[str, int | None], bool]:
    return SrtModel(allowed_domains=tuple(lists.allowed), denied_domains=tuple(lists.denied),
                    allow_local_binding=lists.allow_local_binding).host_allowed


def _entry_probes(entry: str, apex_wildcards: bool) -> list[tuple[str, int | None]]:
    host, port = split_port(entry)
    names = [f"probe.{host[2:]}", f"a.b.{host[2:]}"] + ([host[2:]] if apex_wildcards else []) \
        if host.startswith("*.") else [HOST_LOOPBACK_NAME if host == "localhost" else host]
    ports = {port, None, 22, 80, 443, 8080}
    return [(name, p) for name in names for p in sorted(ports, key=lambda p: -1 if p is None else p)]


def _tighten(exporter: Exporter, lists: NetLists, decider: Callable[[NetLists], Callable[[str, int | None], bool]],
             apex_wildcards: bool) -> None:
    """Drop every allowed entry through which the target reaches what the IR denies."""
    ir = exporter.ir
    probes: list[tuple[str, int | None]] = []
    for rule in ir.network.rules:
        host, port = probe_host(rule.host)
        probes += [(host, p) for p in sorted({port, None, 22, 443}, key=lambda p: -1 if p is None else p)]
    while True:
        allowed = decider(lists)
        candidates = probes + [p for entry in lists.allowed for p in _entry_probes(entry, apex_wildcards)]
        leak = next(((h, p) for h, p in candidates if allowed(h, p) and not ir.network_access(h, p).allowed), None)
        if leak is None:
            return
        host, port = leak
        decision = ir.network_access(host, port)
        why = f"`{decision.rule.action} {decision.rule.host}`" if decision.rule else f"`default {ir.network.default}`"
        where = f"{host}:{port}" if port is not None else host
        entry = next((e for e in lists.allowed if _entry_covers(e, host, port, apex_wildcards)), None)
        if entry is not None:
            lists.allowed.remove(entry)
            source = lists.origins.get(entry)
            exporter.cannot_express(f"`allow {source.host if source is not None else entry}` is exported as "
                                    f"`{entry}`, which would also reach `{where}` that the policy denies ({why}); "
                                    "left out (exported stricter)", source.origin if source is not None else None)
        elif lists.allow_local_binding:
            lists.allow_local_binding = False
            exporter.cannot_express(f"{exporter.label} opens the sandbox's own loopback on every port or none, and "
                                    f"the policy denies `{where}` ({why}): loopback closed (exported stricter)",
                                    decision.rule.origin if decision.rule else ir.network.default_origin)
        else:  # nothing left to narrow: no network at all
            lists.allowed.clear()
            exporter.cannot_express(f"{exporter.label} would reach `{where}`, which the policy denies ({why}): "
                                    "no domain exported (exported stricter)",
                                    decision.rule.origin if decision.rule else ir.network.default_origin)


def _entry_covers(entry: str, host: str, port: int | None, apex_wildcards: bool) -> bool:
    pattern, _ = split_port(entry)
    name = "localhost" if host == HOST_LOOPBACK_NAME else host
    if apex_wildcards and pattern.startswith("*.") and name.lower() == pattern[2:].lower():
        return domain_matches(entry.replace("*.", "", 1), name, port)
    return domain_matches(entry, name, port)


def probe_host(host: HostPattern) -> tuple[str, int | None]:
    """A concrete destination a host pattern decides."""
    kind: str = host.kind
    if kind == "domain":
        return f"probe.{host.value}", host.port
    if kind == "cidr":
        return str(ipaddress.ip_network(host.value, strict=False).network_address), host.port
    if kind == "localhost":
        return "localhost", host.port
    if kind == "host-loopback":
        return HOST_LOOPBACK_NAME, host.port
    if kind == "any":
        return "probe.example", host.port
    return host.value, host.port


def network_fidelity(exporter: Exporter, allowed: bool | None,
                     model_allowed: Callable[[str, int | None], bool]) -> None:
    """Warn for every network rule whose probe the target decides differently (stricter: the
    settings were tightened before, so a looser decision here is a bug — refused)."""
    ir = exporter.ir
    for rule in ir.network.rules:
        host, port = probe_host(rule.host)
        want = ir.network_access(host, port)
        got = model_allowed(host, port)
        if got and not want.allowed:
            raise AssertionError(f"exported network settings reach `{host}` that the policy denies")
        if got != want.allowed:
            exporter.cannot_express(f"`{rule.action} {rule.host}` is exported stricter than the policy: `{host}` is "
                                    "denied", rule.origin)


class SrtExporter(Exporter):
    """IR → srt settings JSON."""

    name: ClassVar[str] = "srt"
    label: ClassVar[str] = "srt"
    #: srt settings hold filesystem and network lists only
    SECTIONS: ClassVar[dict[str, Handling]] = {
        "filesystem": handled("settings"), "network": handled("settings"), "environment": OMITTED,
        "limits": OMITTED, "commands": OMITTED, "session": OMITTED, "verdicts": OMITTED,
    }

    def settings(self) -> dict:
        """The settings object."""
        ctx = self.ir.context
        lists = filesystem_lists(self.ir)

        def show(paths: list[str]) -> list[str]:
            return [("**/" + p[4:]) if p.startswith("/**/") else home_form(p, ctx.home) for p in paths]

        net = network_settings(self)
        return {
            "network": {"allowedDomains": net.allowed, "deniedDomains": net.denied,
                        "allowLocalBinding": net.allow_local_binding, "strictAllowlist": True},
            "filesystem": {"denyRead": show(lists.deny_read), "allowRead": show(lists.allow_read),
                           "allowWrite": show(lists.allow_write), "denyWrite": show(lists.deny_write)},
        }

    def render(self) -> Artifact:
        """The settings file; fidelity warnings for every rule srt decides differently."""
        settings = self.settings()
        ctx = self.ir.context
        model = SrtModel.from_settings(settings, ctx.home, ctx.workspace)
        fs_fidelity(self, model.path_access)
        network_fidelity(self, None, model.host_allowed)
        return Artifact(self.name, json_text(settings), settings)


# -- importing -------------------------------------------------------------------------


def policy_path(entry: str) -> str:
    """An srt path entry as a Stockade path word (relative → ``$WORKSPACE``)."""
    if entry in (".", "./"):
        return "$WORKSPACE"
    if entry.startswith("./"):
        entry = entry[2:]
    if not entry.startswith(("/", "~", "**/", "$")):
        entry = "$WORKSPACE/" + entry
    return quote_word(entry) if not has_glob(entry) else quote_word(entry, force=True)


def domain_word(entry: str) -> str:
    """An srt domain entry as a Stockade destination."""
    host, port = split_port(entry)
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}" if port is not None else host


class SrtImporter(Importer):
    """srt settings JSON → policy."""

    name: ClassVar[str] = "srt"

    def draft(self) -> PolicyDraft:
        """Read the settings and write the equivalent rules."""
        data = load_json(self.source, self.file)
        root = expect_object(self, data, "(root)")
        draft = PolicyDraft(os.path.splitext(os.path.basename(self.file))[0] or "srt")
        draft.note(f"imported from srt settings `{os.path.basename(self.file)}` by `stockade import --from srt`")
        self.add_filesystem(draft, expect_object(self, root.get("filesystem"), "filesystem"), "filesystem")
        self.add_network(draft, expect_object(self, root.get("network"), "network"))
        for key in sorted(set(root) - {"filesystem", "network"}):
            self.warn(f"`{key}` has no stockade equivalent and is not imported", *locate_value(self.source, key))
        return draft

    def entries(self, fs: dict, key: str) -> list[str]:
        """A filesystem list as strings (``{"path", "literal"}`` objects accepted)."""
        raw = fs.get(key)
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise self.fail(codes.IMPORT_WRONG_TYPE, f"`{key}` must be a list", *locate_value(self.source, key))
        out = []
        for item in raw:
            if isinstance(item, dict) and isinstance(item.get("path"), str):
                out.append(item["path"])
            elif isinstance(item, str) and item:
                out.append(item)
            else:
                raise self.fail(codes.IMPORT_WRONG_TYPE,
                                f"`{key}` entries must be paths or {{\"path\", \"literal\"}} objects",
                                *locate_value(self.source, key))
        return out

    def add_filesystem(self, draft: PolicyDraft, fs: dict, where: str, prefix: str = "") -> None:
        """The four lists as filesystem rules (``prefix`` names the enclosing key)."""
        home = self.home or os.path.expanduser("~")
        deny_read = self.entries(fs, "denyRead")
        allow_read = self.entries(fs, "allowRead")
        allow_write = self.entries(fs, "allowWrite")
        deny_write = self.entries(fs, "denyWrite")
        if fs.get("disabled") is True:
            self.warn("`filesystem.disabled` turns srt's filesystem rules off; imported rules are enforced",
                      *locate_value(self.source, "disabled"))
        draft.add("filesystem", "read /", f"srt reads everywhere except `denyRead` ({where})")

        def comment(key: str, entry: str) -> str:
            line, _ = locate_value(self.source, entry)
            return source_comment(self.file, line, f"{prefix}{where}.{key} `{entry}`")

        norm = lambda e: normalize_entry(self.unprefix(e), home, "/W")  # noqa: E731 - a local shorthand
        for entry in deny_read:
            draft.add("filesystem", f"deny {self.path(entry)}", comment("denyRead", entry))
        for entry in allow_read:
            draft.add("filesystem", f"read {self.path(entry)}", comment("allowRead", entry))
        for entry in allow_write:
            blocked = [d for d in deny_write if match_depth(norm(d), norm(entry)) is not None and d != entry]
            if blocked:
                line, col = locate_value(self.source, entry)
                self.warn(f"`allowWrite` `{entry}` has no effect under `denyWrite` `{blocked[0]}`", line, col)
                continue
            draft.add("filesystem", f"write {self.path(entry)}", comment("allowWrite", entry))
        for entry in deny_write:
            if entry in deny_read:
                continue  # `deny` already forbids writing
            draft.add("filesystem", f"readonly {self.path(entry)}", comment("denyWrite", entry))

    def unprefix(self, entry: str) -> str:
        """Hook for formats with path prefixes (Claude Code's ``//``); srt has none."""
        return entry

    def path(self, entry: str) -> str:
        """A path entry as a policy path word."""
        return policy_path(self.unprefix(entry))

    def add_network(self, draft: PolicyDraft, net: dict, prefix: str = "") -> None:
        """``allowedDomains``/``deniedDomains`` as a default-deny network block."""
        allowed = expect_list_of_str(self, net.get("allowedDomains"), "allowedDomains")
        denied = expect_list_of_str(self, net.get("deniedDomains"), "deniedDomains")
        draft.add("network", "default deny", "srt denies every domain it does not allow")
        for key, verb, entries in (("allowedDomains", "allow", allowed), ("deniedDomains", "deny", denied)):
            for entry in entries:
                line, col = locate_value(self.source, entry)
                word = domain_word(entry)
                if not word or (word.startswith("*") and verb == "allow" and not word.startswith("*.")):
                    raise self.fail(codes.IMPORT_BAD_VALUE, f"`{entry}` is not a valid `{key}` entry", line, col)
                host, port = split_port(entry)
                if host.lower() == "localhost":  # the host's loopback, through srt's proxy
                    if port is None:
                        self.warn(f"`{entry}`: the host's whole loopback has no stockade rule (`host-loopback` "
                                  f"takes a port); not imported{' (stricter)' if verb == 'allow' else ''}", line, col)
                        continue
                    word = f"{HOST_LOOPBACK_NAME}:{port}"
                draft.add("network", f"{verb} {quote_word(word)}",
                          source_comment(self.file, line, f"{prefix}network.{key} `{entry}`"))
        if net.get("allowLocalBinding") is True:
            line, col = locate_value(self.source, "allowLocalBinding")
            draft.add("network", "allow localhost",
                      source_comment(self.file, line, f"{prefix}network.allowLocalBinding: the sandbox's own loopback"))
