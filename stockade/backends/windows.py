"""The Windows backend: a JSON confinement plan (``windows``) and its PowerShell rendering
(``windows-ps``).

Windows has no single sandbox profile; confinement is assembled from parts, and the plan
lists each of them as data, in the order a launcher applies them:

1. **preflight** — every volume is a local fixed NTFS drive (no UNC, no mapped drive),
   every path an ACE is placed on is canonical (no reparse point or 8.3 alias on the way),
   the workspace exists;
2. **principals** — a dedicated local *sandbox account* (``stockade-sbx``, created on first
   use by the elevated script, its random password kept DPAPI-protected in Stockade's
   state directory) that the command runs as, and a capability SID (``S-1-15-3-1024-…``)
   derived deterministically from the lower-cased workspace path (:func:`capability_sid`);
3. **restricted token** — the script logs the account on (``CreateProcessWithLogonW``) to
   start a small runner, which makes a ``CreateRestrictedToken`` copy of its own token with
   ``DISABLE_MAX_PRIVILEGE | LUA_TOKEN | WRITE_RESTRICTED`` whose restricting SIDs are the
   capability SID and the logon SID.  *Reads* pass the normal check only: they are what
   the account may read — what ``BUILTIN\\Users`` reads (System32, Program Files: processes
   start) plus the plan's grants — so the user's profile, whose DACL names only the user,
   SYSTEM and Administrators, is closed to it, and ``~/.ssh`` carries an explicit deny for
   the account besides.  *Writes* must pass the restricting check too: only where the plan
   granted the capability SID.  Firewall rules are keyed to the account's SID, which is
   the confined process's user SID, so they really match it (a restricting-only SID never
   satisfies the normal pass of the firewall's access check).  The token's default DACL
   grants the account, the capability and logon SIDs and SYSTEM, so the child can open the
   objects it creates; the child gets ``winsta0\\default`` as its desktop, only its three
   standard handles (``PROC_THREAD_ATTRIBUTE_HANDLE_LIST``), and ``\\\\.\\NUL`` grants the
   capability SID read and write;
4. **ACEs** for the account and the capability SID (one entry for both), in canonical
   order: every filesystem rule puts an
   explicit *deny* of what it does not grant and an explicit *allow* of what it grants on
   its path, inheritable (``OI CI``).  Inherited ACEs are ordered nearest ancestor first,
   so the deepest rule decides — the policy's most-specific-path-wins.  Paths no rule
   covers carry no ACE for the SID and are inaccessible.  Protected paths inside writable
   regions get their writable ancestors guarded against ``DELETE`` (no rename-away), and
   ``FILE_DELETE_CHILD`` is never granted (it would let a parent delete a protected child);
5. **Job Object** limits from the policy's limits (memory, processes, CPU time,
   kill-on-close, UI restrictions);
6. **network** — Windows Firewall rules (WFP) blocking the sandbox account from every
   non-loopback address, or nothing when the policy allows everything; a policy with host
   rules reaches them through the network broker on ``127.0.0.1:$BrokerPort`` (the proxy
   variables point there; the firewall exempts loopback, so the broker is reachable and
   nothing else outside is);
7. **spawn** steps and the **environment** rebuilt from the policy;
8. a **teardown** journal that removes exactly what was added.  ACEs are *persisted*
   grants: applied once (an ACE already present is not written again, so a drive root is
   not re-propagated on every run) and removed by the script's ``-Uninstall``; firewall
   rules and placeholders are per run, recorded in a journal file in Stockade's state
   directory before they are added, removed in a ``finally`` block, and — after a killed
   PowerShell — by the next run before it starts.

What cannot be expressed exactly is approximated on the safe side with a warning, or is an
error (see ``docs/backends-windows.md``).  The backend is pure: IR in, plan out.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from typing import Any, ClassVar

from stockade import catalogue as codes
from stockade.backends.base import RUNTIME, Artifact, Backend, Handling, handled
from stockade.backends.netplan import (
    BROKER_HOST,
    BROKER_PORT_PLACEHOLDER,
    BROKER_PORT_UNSET,
    allows_everything,
    brokered_rules,
    needs_broker,
    proxy_environment,
)
from stockade.backends.windows_paths import WinPath, WinPathError, glob_base, looks_windows, parse_win_path
from stockade.compiler.ir import Context, FsRule, PolicyIR
from stockade.diagnostics import Diagnostic, StockadeError

PLAN_VERSION = 1

# -- access masks (winnt.h) ----------------------------------------------------------------

RIGHTS: dict[str, int] = {
    # icacls specific-right abbreviations → bits
    "RD": 0x1, "WD": 0x2, "AD": 0x4, "REA": 0x8, "WEA": 0x10, "X": 0x20, "DC": 0x40,
    "RA": 0x80, "WA": 0x100, "DE": 0x10000, "RC": 0x20000, "WDAC": 0x40000, "WO": 0x80000,
    "S": 0x100000,
}
FILE_GENERIC_READ = 0x120089
FILE_GENERIC_WRITE = 0x120116
FILE_GENERIC_EXECUTE = 0x1200A0
DELETE = 0x10000
FILE_DELETE_CHILD = 0x40
SYNCHRONIZE = 0x100000
#: every right a rule decides (FILE_ALL_ACCESS without SYNCHRONIZE, which reads need)
ALL_DECIDED = 0x1F01FF & ~SYNCHRONIZE

#: what each access grants: read = generic read+execute (icacls RX); write = modify
#: (icacls M), deliberately without FILE_DELETE_CHILD
ALLOW_MASK: dict[str, int] = {
    "read": FILE_GENERIC_READ | FILE_GENERIC_EXECUTE,
    "write": FILE_GENERIC_READ | FILE_GENERIC_WRITE | FILE_GENERIC_EXECUTE | DELETE,
}
#: what each access denies: every decided right it does not grant
DENY_MASK: dict[str, int] = {
    "none": ALL_DECIDED,
    "read": ALL_DECIDED & ~ALLOW_MASK["read"],
    "write": ALL_DECIDED & ~ALLOW_MASK["write"],
}
ANCESTOR_GUARD_MASK = DELETE

# -- token, integrity, job object constants --------------------------------------------------

TOKEN_FLAGS = {"DISABLE_MAX_PRIVILEGE": 0x1, "LUA_TOKEN": 0x4, "WRITE_RESTRICTED": 0x8}
INTEGRITY = {"low": "S-1-16-4096", "medium": "S-1-16-8192"}
ADMINISTRATORS = "S-1-5-32-544"
JOB_LIMIT_FLAGS = {
    "JOB_OBJECT_LIMIT_ACTIVE_PROCESS": 0x8,
    "JOB_OBJECT_LIMIT_JOB_TIME": 0x4,
    "JOB_OBJECT_LIMIT_PROCESS_MEMORY": 0x100,
    "JOB_OBJECT_LIMIT_JOB_MEMORY": 0x200,
    "JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION": 0x400,
    "JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE": 0x2000,
}
UI_RESTRICTIONS = {
    "JOB_OBJECT_UILIMIT_HANDLES": 0x1,
    "JOB_OBJECT_UILIMIT_READCLIPBOARD": 0x2,
    "JOB_OBJECT_UILIMIT_WRITECLIPBOARD": 0x4,
    "JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS": 0x8,
    "JOB_OBJECT_UILIMIT_DISPLAYSETTINGS": 0x10,
    "JOB_OBJECT_UILIMIT_GLOBALATOMS": 0x20,
    "JOB_OBJECT_UILIMIT_DESKTOP": 0x40,
    "JOB_OBJECT_UILIMIT_EXITWINDOWS": 0x80,
}
#: every IPv4/IPv6 address except loopback, as Windows Firewall address ranges
NON_LOOPBACK = ["0.0.0.0-126.255.255.255", "128.0.0.0-255.255.255.255",
                "::", "::2-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"]
#: The script parameter holding the network broker's loopback port (0: no broker, fail closed).
WINDOWS_BROKER_PARAM = "BrokerPort"

CAPABILITY_PREFIX = "S-1-15-3-1024"
BUILTIN_USERS = "S-1-5-32-545"
#: the local account the command runs as (at most 20 characters: a SAM account name)
SANDBOX_ACCOUNT = "stockade-sbx"
#: placeholders the launcher replaces with SIDs it resolves on the machine
ACCOUNT_PLACEHOLDER = "%ACCOUNT%"
LOGON_PLACEHOLDER = "%LOGON%"
SYSTEM = "S-1-5-18"
#: the interactive desktop; a restricted child without it fails in user32's DLL initialisation
DESKTOP = "winsta0\\default"
#: the null device: shells redirect to it; its DACL does not name the restricting SIDs
NULL_DEVICE = "\\\\.\\NUL"
#: file rights on the null device: read, write, append, attributes, synchronize (no WRITE_DAC)
NULL_DEVICE_MASK = 0x0012019F
#: where the launcher keeps its run journal (firewall rules, placeholders) and the record of
#: the persisted grants: the user's own profile, outside every writable grant
STATE_DIR = "%LOCALAPPDATA%\\stockade\\windows"
#: where the script places the runner it starts as the sandbox account (the account may read
#: and execute it, never write it)
RUNNER_DIR = "%ProgramData%\\stockade\\runner"
#: variables every Windows process expects: kept whatever the policy's keep list says
#: (dropping SystemRoot breaks Winsock, TEMP/TMP temp files, APPDATA/LOCALAPPDATA .NET and
#: git); a policy ``drop`` of one of them still wins (warned)
WINDOWS_ENV_KEEP: tuple[str, ...] = (
    "SystemRoot", "windir", "SystemDrive", "TEMP", "TMP", "PATHEXT", "ComSpec", "USERPROFILE", "HOMEDRIVE",
    "HOMEPATH", "APPDATA", "LOCALAPPDATA", "ProgramData", "ProgramFiles", "ProgramFiles(x86)", "ProgramW6432",
    "CommonProgramFiles", "CommonProgramFiles(x86)", "CommonProgramW6432", "ALLUSERSPROFILE", "PUBLIC",
    "USERNAME", "USERDOMAIN", "COMPUTERNAME", "OS", "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE",
    "PROCESSOR_IDENTIFIER", "PSModulePath",
)


def capability_sid(workspace: str) -> str:
    """The capability SID of a workspace: ``S-1-15-3-1024-`` and eight 32-bit
    sub-authorities, the little-endian words of SHA-256 over ``stockade-capability:`` +
    the lower-cased canonical workspace path (UTF-8).  The same form as a named capability
    (``DeriveCapabilitySidsFromName``), from a preimage Windows never hashes."""
    key = parse_win_path(workspace).key
    digest = hashlib.sha256(("stockade-capability:" + key).encode("utf-8")).digest()
    words = struct.unpack("<8I", digest)
    return CAPABILITY_PREFIX + "-" + "-".join(str(w) for w in words)


def rights_of(mask: int) -> list[str]:
    """The icacls specific-right abbreviations of a mask (every bit must have one)."""
    names = [name for name, bit in RIGHTS.items() if mask & bit]
    if sum(RIGHTS[n] for n in names) != mask:
        raise ValueError(f"mask `{mask:#x}` has bits without an icacls name")
    return names


def ace_sddl(kind: str, inheritance: str, mask: int, sid: str) -> str:
    """One ACE in SDDL: ``(D;OICI;0x000f01ff;;;S-1-…)``."""
    flags = "OICI" if inheritance == "OICI" else ""
    return f"({'D' if kind == 'deny' else 'A'};{flags};0x{mask:08x};;;{sid})"


def posix_key(path: WinPath) -> str:
    """The spelling of a windows path in the POSIX namespace the IR query API walks:
    ``C:\\Users\\Dev`` → ``/c:/users/dev``; a rooted driveless path stays POSIX."""
    parts = [p.lower() for p in path.parts]
    if path.drive:
        parts.insert(0, path.drive.lower() + ":")
    return "/" + "/".join(parts)


def query_ir(ir: PolicyIR) -> PolicyIR:
    """An IR whose filesystem rules live in the POSIX namespace of :func:`posix_key`, so
    the shared query API answers windows paths case-insensitively.  Rules whose paths do
    not parse are left out (they are errors of the backend anyway)."""
    rules = []
    for rule in ir.filesystem:
        try:
            path = parse_win_path(rule.pattern, glob=rule.is_glob)
        except WinPathError:
            continue
        rules.append(FsRule(rule.kind, posix_key(path), rule.is_glob, rule.locked, rule.source_text, rule.origin))
    return PolicyIR(name=ir.name, context=Context("/", "/", "/", "windows"), filesystem=tuple(rules))


def _origin_text(rule: FsRule) -> str | None:
    return str(rule.origin) if rule.origin else None


def _rule_ref(rule: FsRule) -> dict[str, Any]:
    return {"kind": rule.kind, "pattern": rule.pattern, "origin": _origin_text(rule)}


@dataclass(frozen=True, slots=True)
class _Target:
    """A literal path an IR rule places ACEs on."""

    path: WinPath
    rule: FsRule


class WindowsBackend(Backend):
    """IR → Windows confinement plan (JSON); see the module docstring."""

    name: ClassVar[str] = "windows"
    #: filesystem: ACEs for a capability SID (globs on existing matches, warned); network:
    #: firewall rules, all or none or loopback; environment: rebuilt by the launcher;
    #: limits: a Job Object (memory, processes, cpu), the wait step (timeout) and the
    #: output cap — ``filesize`` and ``disk`` are refused; commands and verdicts: judged
    #: before a command runs (``stockade run``, ``stockade hook``), not by the plan.
    SECTIONS: ClassVar[dict[str, Handling]] = {
        "filesystem": handled("_acl"), "network": handled("_network"), "environment": handled("_environment"),
        "limits": handled("_job"), "commands": RUNTIME, "session": RUNTIME, "verdicts": RUNTIME,
    }

    RENDERERS: ClassVar[dict[type, str]] = {FsRule: "render_fs_rule"}

    def __init__(self, ir: PolicyIR, **options: Any):
        """Options: ``globs`` = ``"existing"`` (default: ACEs on matches that exist when the
        plan is applied, with a warning) or ``"error"``; ``loopback`` = ``"error"``
        (default: a policy that denies localhost fails, Windows Firewall cannot filter
        loopback) or ``"accept"``."""
        super().__init__(ir, **options)
        self.targets: list[_Target] = []
        self.globs: list[tuple[FsRule, WinPath]] = []
        self.drives: list[WinPath] = []
        self.query = query_ir(ir)

    # -- context ---------------------------------------------------------------------

    def _context(self) -> dict[str, WinPath]:
        ctx = self.ir.context
        errors: list[Diagnostic] = []
        out: dict[str, WinPath] = {}
        for field_name in ("workspace", "home", "tmpdir"):
            value = getattr(ctx, field_name)
            if not looks_windows(value):
                errors.append(Diagnostic(
                    codes.KERNEL_OR_CONTEXT_PATH,
                    f"the windows target needs windows paths, but the {field_name} is `{value}`",
                    help="compile with `--platform windows` and windows paths, e.g. "
                         "`--workspace C:\\Users\\me\\project --home C:\\Users\\me`"))
                continue
            try:
                out[field_name] = parse_win_path(value)
            except WinPathError as exc:
                errors.append(Diagnostic(codes.UNUSABLE_PATH, f"the {field_name} `{value}` {exc}"))
                continue
            if out[field_name].drive is None:
                errors.append(Diagnostic(codes.KERNEL_OR_CONTEXT_PATH,
                                         f"the {field_name} `{value}` has no drive letter",
                                         help="pass a drive path such as `C:\\Users\\me\\project`"))
        if errors:
            raise StockadeError(errors)
        return out

    # -- filesystem rules ------------------------------------------------------------------

    def render_fs_rule(self, rule: FsRule) -> None:
        """Classify one filesystem rule: literal ACE target, glob, or skipped."""
        try:
            path = parse_win_path(rule.pattern, glob=rule.is_glob)
        except WinPathError as exc:
            self.unsupported_rule(f"path `{rule.pattern}` {exc}", rule.origin, code=codes.UNUSABLE_PATH,
                                  help="write a local drive path without `..`, streams or device names")
            return
        if path.drive is None and not path.parts:
            roots = ", ".join(f"`{d}`" for d in self.drives)
            self.warn(f"`{rule.kind} {rule.source_text or rule.pattern}` covers the root of every drive; "
                      f"the plan applies it to {roots} only, other drives stay inaccessible",
                      rule.origin, code=codes.ALL_DRIVES_ROOT)
            for drive in self.drives:
                self.targets.append(_Target(drive, rule))
            return
        if rule.is_glob:
            if path.drive is None:
                if path.parts[0] != "**":
                    self._skip_posix(rule)
                    return
                for drive in self.drives:
                    self.globs.append((rule, WinPath(drive.drive, path.parts)))
            else:
                self.globs.append((rule, path))
            return
        if path.drive is None:
            self._skip_posix(rule)
            return
        self.targets.append(_Target(path, rule))

    def _skip_posix(self, rule: FsRule) -> None:
        self.warn(f"`{rule.kind} {rule.pattern}` is a POSIX path with no meaning on windows; skipped",
                  rule.origin, code=codes.PATH_RULE_APPROXIMATED,
                  help="guard it in a layer for linux/macOS; on windows no path matches it")

    def access(self, path: WinPath) -> str:
        """The IR's access to a windows path (none/read/write)."""
        return self.query.path_access(posix_key(path)).access

    # -- plan parts ------------------------------------------------------------------------

    def _acl(self, sid: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The ACE entries (canonical order per object, objects shallow → deep) and the
        placeholders for protected paths that must exist."""
        by_path: dict[str, list[_Target]] = {}
        paths: dict[str, WinPath] = {}
        for target in self.targets:
            by_path.setdefault(target.path.key, []).append(target)
            paths.setdefault(target.path.key, target.path)
        placeholders: dict[str, dict[str, Any]] = {}
        guards: dict[str, list[FsRule]] = {}
        for key, targets in by_path.items():
            path = paths[key]
            for target in targets:
                granted = target.rule.access
                parent = path.parent
                if granted == "write" or parent is None:
                    continue
                # a protected path: its writable ancestors must not be renamed away
                for ancestor in path.ancestors():
                    if self.access(ancestor) == "write":
                        guards.setdefault(ancestor.key, []).append(target.rule)
                        paths.setdefault(ancestor.key, ancestor)
                if self.access(parent) == "write" and key not in placeholders:
                    placeholders[key] = {
                        "path": str(path), "type": "directory", "create_missing_ancestors": True,
                        "teardown": "remove-if-created-and-empty", "rule": _rule_ref(target.rule),
                        "reason": "a protected path inside a writable region must exist, or the "
                                  "sandbox could create it with the region's access",
                    }
        entries: list[dict[str, Any]] = []
        ordered = sorted(set(by_path) | set(guards), key=lambda k: (len(paths[k].parts), k))
        for key in ordered:
            path = paths[key]
            if_missing = "placeholder" if key in placeholders else "skip"
            denies: list[dict[str, Any]] = []
            allows: list[dict[str, Any]] = []
            for target in by_path.get(key, []):
                access = target.rule.access
                denies.append(self._ace(path, "deny", DENY_MASK[access], "OICI", sid, "rule", target.rule, if_missing))
                if access != "none":
                    allows.append(self._ace(path, "allow", ALLOW_MASK[access], "OICI", sid, "rule",
                                            target.rule, if_missing))
            if key in guards:
                denies.append(self._ace(path, "deny", ANCESTOR_GUARD_MASK, "none", sid, "ancestor-guard",
                                        guards[key][0], if_missing))
            entries.extend(denies + allows)
        for number, entry in enumerate(entries, 1):
            entry["id"] = f"ace-{number:03d}"
        return entries, sorted(placeholders.values(), key=lambda p: (p["path"].count("\\"), p["path"].lower()))

    @staticmethod
    def _ace(path: WinPath, kind: str, mask: int, inheritance: str, sid: str, purpose: str,
             rule: FsRule, if_missing: str) -> dict[str, Any]:
        return {
            "id": "",
            "path": str(path),
            "lifetime": "persistent",
            "principals": ["sandbox-account", "capability"],
            "type": kind,
            "mask": mask,
            "mask_hex": f"0x{mask:08X}",
            "rights": rights_of(mask),
            "inheritance": inheritance,
            "sddl": ace_sddl(kind, inheritance, mask, sid),
            "purpose": purpose,
            "rule": _rule_ref(rule),
            "if_missing": if_missing,
        }

    def _glob_guards(self, sid: str) -> list[dict[str, Any]]:
        mode = self.options.get("globs", "existing")
        out = []
        writable_rules = [t.path for t in self.targets if t.rule.access == "write"]
        for number, (rule, path) in enumerate(self.globs, 1):
            base, rest = glob_base(path)
            writable = [str(w) for w in writable_rules if w.is_within(base) or base.is_within(w)]
            if writable or self.access(base) == "write":
                message = (f"glob `{rule.pattern}` has no windows ACL equivalent: it is enforced on the "
                           f"matches that exist when the sandbox starts; matches created later inside "
                           f"writable {', '.join(f'`{w}`' for w in writable) or f'`{base}`'} get that "
                           f"region's access")
                if mode == "error":
                    self.unsupported_rule(message, rule.origin, code=codes.SEATBELT_START_OR_WINDOWS_GLOB,
                                          help="replace the glob by literal paths, or compile with "
                                               "`globs=existing` to accept enforcement on existing matches")
                else:
                    self.warn(message, rule.origin, code=codes.SEATBELT_START_OR_WINDOWS_GLOB,
                              help="list secrets that may appear later as literal paths")
            access = rule.access
            aces = [{"type": "deny", "mask": DENY_MASK[access], "mask_hex": f"0x{DENY_MASK[access]:08X}",
                     "rights": rights_of(DENY_MASK[access]), "inheritance": "OICI",
                     "sddl": ace_sddl("deny", "OICI", DENY_MASK[access], sid)}]
            if access != "none":
                aces.append({"type": "allow", "mask": ALLOW_MASK[access], "mask_hex": f"0x{ALLOW_MASK[access]:08X}",
                             "rights": rights_of(ALLOW_MASK[access]), "inheritance": "OICI",
                             "sddl": ace_sddl("allow", "OICI", ALLOW_MASK[access], sid)})
            roots = self._walk_roots(rule, base)
            out.append({
                "id": f"glob-{number:03d}",
                "rule": _rule_ref(rule),
                "pattern": str(path),
                "base": str(base),
                "walk_roots": [str(r) for r in roots],
                "remainder": list(rest),
                "match": "existing-at-apply",
                "case_sensitive": False,
                "follow_reparse_points": False,
                "aces": aces,
                "guard_ancestors_within": sorted({str(w) for w in writable_rules}, key=str.lower)
                if access != "write" else [],
            })
        return out

    def _restate_at_profile_boundaries(self, context: dict[str, WinPath]) -> None:
        """Put the IR's decision on the home, workspace and temporary directory themselves
        when it comes from a rule on an ancestor: a user profile has a protected DACL, so an
        inheritable ACE on ``C:\\`` never reaches it (the account could not read the home a
        ``read /`` rule grants)."""
        placed = {t.path.key for t in self.targets}
        for name in ("home", "workspace", "tmpdir"):
            path = context[name]
            if path.key in placed:
                continue
            decision = self.query.path_access(posix_key(path))
            if decision.rule is None or decision.access == "none" or decision.rule.is_glob:
                continue
            original = next((r for r in self.ir.filesystem if r.kind == decision.rule.kind and not r.is_glob
                             and r.origin == decision.rule.origin and r.source_text == decision.rule.source_text), None)
            if original is not None:
                self.targets.append(_Target(path, original))
                placed.add(path.key)

    def _walk_roots(self, rule: FsRule, base: WinPath) -> list[WinPath]:
        """Where the launcher looks for a glob's existing matches: its base, unless that is
        above the context directories (``C:\\`` for ``**\\.env``): then only the workspace,
        the home and the temporary directory below it are walked (warned), never a drive."""
        context = [self._ctx[name] for name in ("workspace", "home", "tmpdir")]
        if not any(c.is_within(base) and c.key != base.key for c in context):
            return [base]
        roots = [c for c in context if c.is_within(base)]
        roots = [r for r in roots if not any(r.is_within(o) and r.key != o.key for o in roots)]
        roots = list({r.key: r for r in roots}.values())
        self.warn(f"glob `{rule.pattern}` is enforced on the matches that exist below "
                  f"{', '.join(f'`{r}`' for r in roots)}; the rest of `{base}` is not walked for matches",
                  rule.origin, code=codes.SEATBELT_START_OR_WINDOWS_GLOB,
                  help="list secrets elsewhere on the drive as literal paths")
        return roots

    def _network(self, sid: str) -> dict[str, Any]:
        """The firewall rules and proxy variables: nothing when the policy allows everything;
        otherwise the capability SID is blocked from every non-loopback address, and a policy
        that allows destinations beyond loopback reaches them through the network broker on
        ``127.0.0.1:$BrokerPort`` (the proxy variables point there; loopback is exempt from
        the Windows Firewall, so the broker is reachable and nothing else outside is)."""
        net = self.ir.network
        user_sddl = f"O:LSD:(A;;CC;;;{sid})"
        if allows_everything(self.ir):
            return {"mode": "all", "enforcement": "none", "firewall_rules": [], "environment": {},
                    "broker": None, "requires_elevation": False}
        loopback_ok = all(self.ir.network_access(h).allowed for h in ("localhost", "127.0.0.1", "::1"))
        if not loopback_ok:
            origin = net.default_origin
            message = ("the policy denies localhost, but windows firewall rules do not filter loopback "
                       "traffic; a confined process could still reach local services")
            if self.options.get("loopback", "error") == "accept":
                self.warn(message + " (accepted by option `loopback=accept`)", origin,
                          code=codes.LOOPBACK_DENY_UNENFORCEABLE)
            else:
                self.unsupported_rule(message, origin, code=codes.LOOPBACK_DENY_UNENFORCEABLE,
                                      help="add `allow localhost` to the network block, or compile with "
                                           "`loopback=accept`")
        brokered = needs_broker(self.ir, host_loopback_direct=True)
        rules = []
        for direction in ("outbound", "inbound"):
            rules.append({
                "name": f"stockade-{sid.rsplit('-', 1)[-1]}-{direction}",
                "direction": direction,
                "action": "block",
                "protocol": "any",
                "remote_addresses": list(NON_LOOPBACK),
                "local_user_sddl": user_sddl,
                "profile": "any",
            })
        out: dict[str, Any] = {
            "mode": "broker" if brokered else "loopback",
            "enforcement": "windows-firewall",
            "firewall_rules": rules,
            "requires_elevation": True,
            "environment": {},
            "broker": None,
        }
        if brokered:
            for text, origin in [] if self.by_runtime else brokered_rules(self.ir, host_loopback_direct=True):
                self.warn(f"`{text}` is enforced by the network broker the launcher passes as `-{WINDOWS_BROKER_PARAM}`: "
                          "without one the plan reaches loopback only", origin, code=codes.RUNTIME_SECTION)
            env = proxy_environment(BROKER_PORT_PLACEHOLDER)  # Windows names are case-insensitive: one spelling
            out["environment"] = {k: v for k, v in env.items() if k == k.upper() or k.upper() not in env}
            out["broker"] = {"port_param": WINDOWS_BROKER_PARAM, "listen": BROKER_HOST,
                             "port_placeholder": BROKER_PORT_PLACEHOLDER, "unset_port": int(BROKER_PORT_UNSET),
                             "note": "the launcher starts the network broker for the run on 127.0.0.1 and passes "
                                     "its port; without it no destination beyond loopback is reachable"}
        return out

    def _job(self) -> dict[str, Any]:
        self.unsupported_limits(("filesize", "disk"), "a Job Object limits neither the size of one file nor "
                                                      "what a run leaves written")
        self.unsupported_limits(("cpus",), "the plan's launcher sets no CPU rate control on the Job Object")
        ir = self.ir
        flags = ["JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE", "JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION"]
        limits: dict[str, int] = {}
        memory = ir.limit("memory")
        if memory is not None:
            flags += ["JOB_OBJECT_LIMIT_PROCESS_MEMORY", "JOB_OBJECT_LIMIT_JOB_MEMORY"]
            limits["process_memory_bytes"] = int(memory)
            limits["job_memory_bytes"] = int(memory)
        processes = ir.limit("processes")
        if processes is not None:
            flags.append("JOB_OBJECT_LIMIT_ACTIVE_PROCESS")
            limits["active_processes"] = max(1, int(processes))
        cpu = ir.limit("cpu")
        if cpu is not None:
            flags.append("JOB_OBJECT_LIMIT_JOB_TIME")
            limits["job_user_time_100ns"] = int(cpu * 10_000_000)
        flags.sort(key=lambda f: JOB_LIMIT_FLAGS[f])
        return {
            "limit_flags": flags,
            "limit_flags_value": sum(JOB_LIMIT_FLAGS[f] for f in flags),
            "limits": limits,
            "memory_semantics": "the whole job's committed memory (stricter than per process)",
            "ui_restrictions": list(UI_RESTRICTIONS),
            "ui_restrictions_value": sum(UI_RESTRICTIONS.values()),
            "breakaway_allowed": False,
        }

    def _environment(self) -> dict[str, Any]:
        env = self.ir.environment
        from stockade.compiler.environment import glob_match

        drops = [r for r in env if r.action == "drop"]
        for name in WINDOWS_ENV_KEEP:
            rule = next((r for r in drops if glob_match(name.upper(), r.name.upper())), None)
            if rule is not None:
                self.warn(f"`drop {rule.name}` removes `{name}`, which windows programs need (sockets, temp "
                          f"files, .NET and git may fail)", rule.origin, code=codes.APPROXIMATED_RULE)
        return {
            "keep": [r.name for r in env if r.action == "keep"],
            "windows_keep": list(WINDOWS_ENV_KEEP),
            "drop": [r.name for r in env if r.action == "drop"],
            "set": [{"name": r.name, "value": r.value or ""} for r in env if r.action == "set"],
            "name_matching": "case-insensitive (windows variable names are)",
            "semantics": "start from the parent's environment; with keep patterns only matching names "
                         "and the windows_keep names stay; drop beats keep; set applies last",
        }

    # -- the plan --------------------------------------------------------------------------

    def plan(self) -> dict[str, Any]:
        """Build the plan dict (validated by ``windows_plan.schema.json``)."""
        context = self._context()
        self._ctx = context
        seen: set[str] = set()
        for field_name in ("workspace", "home", "tmpdir"):
            root = WinPath(context[field_name].drive, ())
            if root.key not in seen:
                seen.add(root.key)
                self.drives.append(root)
        for rule in self.ir.filesystem:
            self.dispatch(rule)
        self._restate_at_profile_boundaries(context)
        sid = capability_sid(str(context["workspace"]))
        aces, placeholders = self._acl(sid)
        globs = self._glob_guards(sid)
        network = self._network(sid)
        for rule in network["firewall_rules"]:
            # keyed to the confined process's user SID: the sandbox account (see the module docstring)
            rule["local_user_sddl"] = f"O:LSD:(A;;CC;;;{ACCOUNT_PLACEHOLDER})"
        timeout = self.ir.limit("timeout")
        output = self.ir.limit("output")
        volumes = sorted({p.volume for p in [*(t.path for t in self.targets), *(p for _, p in self.globs),
                                                context["workspace"]]})
        ace_paths = sorted({a["path"] for a in aces}, key=lambda p: (p.count("\\"), p.lower()))
        preflight: list[dict[str, Any]] = []
        for volume in volumes:
            preflight.append({"check": "fixed-local-drive", "target": volume + "\\",
                              "why": "no network, mapped or removable drives"})
            preflight.append({"check": "ntfs", "target": volume + "\\", "why": "ACLs need NTFS"})
        preflight.append({"check": "exists", "target": str(context["workspace"]),
                          "why": "the workspace must exist"})
        for path in ace_paths:
            preflight.append({"check": "canonical", "target": path,
                              "why": "no reparse point or 8.3 alias on the path, so the ACE lands where "
                                     "the policy says"})
        if network["requires_elevation"]:
            preflight.append({"check": "elevated", "target": "",
                              "why": "adding firewall rules needs an administrator"})
        teardown: list[dict[str, Any]] = []
        for rule in reversed(network["firewall_rules"]):
            teardown.append({"action": "remove-firewall-rule", "target": rule["name"]})
        for glob in reversed(globs):
            teardown.append({"action": "remove-glob-aces", "target": glob["id"], "sid": sid, "when": "uninstall"})
        for ace in reversed(aces):
            teardown.append({"action": "remove-ace", "target": ace["path"], "ace": ace["id"], "sid": sid,
                             "sddl": ace["sddl"], "when": "uninstall"})
        for holder in reversed(placeholders):
            teardown.append({"action": "remove-placeholder", "target": holder["path"],
                             "only_if": "created-by-plan-and-empty"})
        spawn = [
            {"step": "preflight"},
            {"step": "create-placeholders"},
            {"step": "apply-aces"},
            {"step": "apply-glob-aces"},
            {"step": "add-firewall-rules"},
            {"step": "provision-sandbox-account"},
            {"step": "logon-sandbox-account", "runner": RUNNER_DIR},
            {"step": "create-restricted-token"},
            {"step": "create-job-object"},
            {"step": "create-process-suspended", "cwd": str(context["workspace"]),
             "flags": ["CREATE_SUSPENDED", "CREATE_UNICODE_ENVIRONMENT", "CREATE_NEW_PROCESS_GROUP"]},
            {"step": "assign-process-to-job"},
            {"step": "resume-thread"},
            {"step": "wait", "timeout_seconds": timeout, "on_timeout": "terminate-job"},
            {"step": "teardown", "always": True},
        ]
        plan: dict[str, Any] = {
            "plan_version": PLAN_VERSION,
            "target": "windows",
            "policy": self.ir.name,
            "source_hash": self.ir.source_hash,
            "context": {k: str(v) for k, v in context.items()},
            "preflight": preflight,
            "principal": {
                "kind": "capability-sid",
                "sid": sid,
                "account": {
                    "name": SANDBOX_ACCOUNT,
                    "sid": None,
                    "resolve": "the local account of that name; created (member of BUILTIN\\Users only) with a "
                               "random password when missing",
                    "credential": STATE_DIR + "\\account.dpapi",
                    "logon": "CreateProcessWithLogonW, LOGON_WITH_PROFILE",
                },
                "derivation": {
                    "scheme": "sha256-words",
                    "prefix": CAPABILITY_PREFIX,
                    "input": "stockade-capability:" + context["workspace"].key,
                },
            },
            "token": {
                "api": "CreateRestrictedToken",
                "flags": list(TOKEN_FLAGS),
                "flags_value": sum(TOKEN_FLAGS.values()),
                "write_restricted": True,
                "deny_only_sids": [ADMINISTRATORS],
                "restricting_sids": [
                    {"role": "capability", "sid": sid},
                    {"role": "logon-session", "sid": None, "resolve": "TokenGroups entry with SE_GROUP_LOGON_ID"},
                ],
                "default_dacl": f"D:(A;;GA;;;{SYSTEM})(A;;GA;;;{sid})(A;;GA;;;{ACCOUNT_PLACEHOLDER})"
                                f"(A;;GA;;;{LOGON_PLACEHOLDER})",
                "desktop": DESKTOP,
                "inherited_handles": ["stdin", "stdout", "stderr"],
                "privileges_kept": ["SeChangeNotifyPrivilege"],
                "integrity_level": {"name": "medium", "sid": INTEGRITY["medium"]},
                "access_rule": "reads need the normal check (the sandbox account and its groups) to pass; "
                               "writes need it and the restricting check (capability and logon SIDs)",
            },
            "devices": [{"path": NULL_DEVICE, "sid": sid, "mask": NULL_DEVICE_MASK,
                         "mask_hex": f"0x{NULL_DEVICE_MASK:08X}", "lifetime": "until-reboot",
                         "sddl": ace_sddl("allow", "none", NULL_DEVICE_MASK, sid)}],
            "state": {"dir": STATE_DIR, "journal": STATE_DIR + "\\run-" + sid.rsplit("-", 1)[-1] + ".journal",
                      "grants": STATE_DIR + "\\grants-" + sid.rsplit("-", 1)[-1] + ".json",
                      "recovery": "a journal left by a killed run is replayed (its firewall rules and "
                                  "placeholders removed) before the next run starts"},
            "acl": {"sid": sid, "entries": aces},
            "placeholders": placeholders,
            "globs": globs,
            "job": self._job(),
            "network": network,
            "environment": self._environment(),
            "output_limit_bytes": int(output) if output is not None else None,
            "spawn": spawn,
            "teardown": teardown,
            "warnings": [],
        }
        return plan

    def render(self) -> Artifact:
        """The plan as pretty JSON."""
        plan = self.plan()
        plan["warnings"] = [_warning_json(d) for d in self.warnings]
        return Artifact(target=self.name, text=json.dumps(plan, indent=2, ensure_ascii=False) + "\n", data=plan)


def _warning_json(diagnostic: Diagnostic) -> dict[str, Any]:
    return {"code": diagnostic.code, "message": diagnostic.message,
            "origin": str(diagnostic.span) if diagnostic.span else None}


class WindowsPowerShellBackend(WindowsBackend):
    """IR → the Windows plan rendered as a PowerShell script (``windows-ps``)."""

    name: ClassVar[str] = "windows-ps"

    def render(self) -> Artifact:
        """The plan as a PowerShell script; ``data`` is the plan dict."""
        from stockade.backends.windows_ps import render_powershell

        artifact = super().render()
        return Artifact(target=self.name, text=render_powershell(artifact.data), data=artifact.data)

