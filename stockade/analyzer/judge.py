"""Judging effects against the compiled policy: the verdict and every reason for it.

Command rules are strictest-wins over every argv the command runs (each unwrapping level);
effects are judged against the filesystem (``ir.path_access``, plus the rules *below* a path
for recursive operations), the network (``ir.network_access``), and fixed rules for privilege
escalation and persistence (deny).  Unknown effects take the policy's ``unknown-effects``
verdict, unparsable text its ``unparsable`` verdict.  The strictest reason decides; an allow
rule never loosens what the effects show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from stockade.analyzer.effects import (UNKNOWN, Delete, Effect, Execute, Network, Persistence, Privilege, Read,
                                       Rename, SpanT, Unknown, Unparsable, Write, show)
from stockade.compiler.ir import VERDICT_RANK, Origin, PolicyIR

_PSEUDO_FILES = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero",
                           "/dev/random", "/dev/urandom", "/dev/full"})
_RC_FILES = (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin",
             ".bash_logout", ".config/fish/config.fish", ".inputrc", ".xprofile", ".xinitrc", ".pam_environment")
_AUTOSTART_DIRS = (".config/autostart", ".config/systemd/user", "Library/LaunchAgents", ".config/upstart",
                   ".local/share/systemd/user")
_SYSTEM_PERSIST = ("/etc/cron", "/etc/profile", "/etc/bash.bashrc", "/etc/zsh", "/etc/rc.local", "/etc/init.d",
                   "/etc/systemd", "/lib/systemd", "/usr/lib/systemd", "/etc/xdg/autostart", "/var/spool/cron",
                   "/Library/LaunchAgents", "/Library/LaunchDaemons", "/etc/ld.so.preload", "/etc/sudoers.d")


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a verdict: a code, a message, the span in the command, and the rule that decided."""

    verdict: str
    code: str
    message: str
    span: SpanT
    rule: Origin | None = None
    rule_text: str | None = None

    def to_json(self) -> dict:
        """The reason as a JSON object."""
        return {"verdict": self.verdict, "code": self.code, "message": self.message,
                "span": {"start": self.span[0], "end": self.span[1]},
                "rule": None if self.rule is None else {"file": self.rule.file, "line": self.rule.line,
                                                         "column": self.rule.column, "layer": self.rule.layer,
                                                         "text": self.rule_text}}


@dataclass(frozen=True, slots=True)
class Verdict:
    """The analyzer's answer: ``allow``, ``confirm`` or ``deny``, with every reason."""

    command: str
    decision: str
    reasons: tuple[Reason, ...] = ()

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    def to_json(self) -> dict:
        """The verdict as a JSON object."""
        return {"command": self.command, "decision": self.decision,
                "reasons": [reason.to_json() for reason in self.reasons]}


def _persistence_target(path: str, home: str) -> str | None:
    if path.startswith(home.rstrip("/") + "/"):
        rel = path[len(home.rstrip("/")) + 1:]
        for name in _RC_FILES:
            if rel == name:
                return f"a shell startup file (`~/{name}`)"
        for name in _AUTOSTART_DIRS:
            if rel == name or rel.startswith(name + "/"):
                return f"an autostart location (`~/{name}`)"
    if "/.git/hooks/" in path + "/" and not path.endswith("/.git/hooks"):
        return "a git hook"
    if path.endswith("/.git/hooks"):
        return "the git hooks directory"
    for prefix in _SYSTEM_PERSIST:
        if path == prefix or path.startswith(prefix):
            return f"a system startup location (`{prefix}`)"
    return None


class Judge:
    """Holds effects against one policy."""

    def __init__(self, ir: PolicyIR, cwd: str | None = None):
        self.ir = ir
        self.cwd = cwd
        self.reasons: list[Reason] = []
        self._seen: set[tuple] = set()
        literal = [rule for rule in ir.filesystem if not rule.is_glob]
        self._literal_rules = sorted(literal, key=lambda r: r.pattern)

    def add(self, verdict: str, code: str, message: str, span: SpanT, rule: object = None) -> None:
        """Record one reason (deduplicated)."""
        key = (verdict, code, message, span)
        if key in self._seen:
            return
        self._seen.add(key)
        origin = getattr(rule, "origin", None) if rule is not None else None
        text = _rule_text(rule)
        self.reasons.append(Reason(verdict, code, message, span, origin, text))

    def unknown(self, message: str, span: SpanT) -> None:
        setting = self.ir.unknown_effects
        self.add(setting.verdict, "A410", message, span, setting)

    # -- effects ----------------------------------------------------------------------------

    def judge(self, effects: Iterable[Effect]) -> None:
        """Judge every effect."""
        for effect in effects:
            handler = getattr(self, "judge_" + type(effect).__name__, None)
            if handler is not None:
                handler(effect)

    def judge_Execute(self, effect: Execute) -> None:
        decision = self.ir.command_verdict(list(effect.argv))
        if decision.verdict is not None and decision.verdict != "allow":
            rule = decision.rule
            because = f": {rule.reason}" if rule is not None and rule.reason else ""
            self.add(decision.verdict, "A401", f"command `{show(' '.join(effect.argv))[:80]}` matches "
                     f"`{decision.verdict} {rule.text if rule else ''}`{because}", effect.span, rule)

    def _path(self, path: str, span: SpanT, op: str) -> str | None:
        if path in _PSEUDO_FILES or path.startswith(("/dev/fd/", "/proc/self/fd/")):
            return None
        if UNKNOWN in path:
            self.unknown(f"{op} a path that is not known before it runs (`{show(path)}`)", span)
            return None
        if any(ch in path for ch in "*?["):
            # a glob: judge the pattern as one concrete name (dot-files are not matched by *)
            return path.replace("*", "x").replace("?", "x").replace("[", "x")
        return path

    def _below(self, path: str, need: str) -> list:
        """Rules below ``path`` that grant less than ``need``."""
        prefix = path.rstrip("/") + "/"
        out = []
        for rule in self._literal_rules:
            if rule.pattern.startswith(prefix) or path == "/" and rule.pattern != "/":
                if need == "write" and rule.access != "write" or need == "read" and rule.access == "none":
                    out.append(rule)
        return out

    def judge_Read(self, effect: Read) -> None:
        path = self._path(effect.path, effect.span, "reads")
        if path is None:
            return
        decision = self.ir.path_access(path, self.cwd)
        if not decision.can_read:
            self.add("deny", "A402", f"reads `{decision.path}`, which the policy denies", effect.span, decision.rule)
        elif effect.recursive:
            for rule in self._below(decision.path, "read")[:3]:
                self.add("deny", "A402", f"reads everything below `{decision.path}`, including `{rule.pattern}`, "
                         "which the policy denies", effect.span, rule)

    def _write(self, path_in: str, span: SpanT, recursive: bool, verb: str) -> None:
        path = self._path(path_in, span, verb)
        if path is None:
            return
        decision = self.ir.path_access(path, self.cwd)
        target = _persistence_target(decision.path, self.ir.context.home)
        if target is not None:
            self.add("deny", "A405", f"{verb} {target}: code that runs later (persistence)", span)
        if not decision.can_write:
            self.add("deny", "A403", f"{verb} `{decision.path}`, which the policy does not make writable",
                     span, decision.rule)
        elif recursive:
            for rule in self._below(decision.path, "write")[:3]:
                self.add("deny", "A403", f"{verb} everything below `{decision.path}`, including `{rule.pattern}`, "
                         f"which the policy does not make writable", span, rule)

    def judge_Write(self, effect: Write) -> None:
        self._write(effect.path, effect.span, effect.recursive, "writes")

    def judge_Delete(self, effect: Delete) -> None:
        self._write(effect.path, effect.span, effect.recursive, "deletes")

    def judge_Rename(self, effect: Rename) -> None:
        self._write(effect.source, effect.span, True, "moves")
        self._write(effect.dest, effect.span, True, "writes")

    def judge__LinkTarget(self, effect) -> None:
        path = self._path(effect.path, effect.span, "links to")
        if path is None:
            return
        decision = self.ir.path_access(path, self.cwd)
        if not decision.can_read:
            self.unknown(f"makes a link to `{decision.path}`, which the policy denies: reads through it "
                         "would bypass the rule", effect.span)

    def judge_Network(self, effect: Network) -> None:
        decision = self.ir.network_access(effect.host, effect.port)
        if not decision.allowed:
            where = effect.host if effect.port is None else f"{effect.host}:{effect.port}"
            rule = decision.rule if decision.rule is not None else _DefaultRule(self.ir)
            self.add("deny", "A404", f"contacts `{where}`, which the network policy does not allow", effect.span,
                     rule)

    def judge_Privilege(self, effect: Privilege) -> None:
        self.add("deny", "A406", f"privilege escalation: {effect.what}", effect.span)

    def judge_Persistence(self, effect: Persistence) -> None:
        self.add("deny", "A405", f"persistence: {effect.what}", effect.span)

    def judge_Unknown(self, effect: Unknown) -> None:
        self.unknown(effect.why, effect.span)

    def judge_Unparsable(self, effect: Unparsable) -> None:
        setting = self.ir.unparsable
        self.add(setting.verdict, "A400", f"cannot parse the command reliably: {effect.why}", effect.span, setting)

    def verdict(self, command: str) -> Verdict:
        """The strictest reason decides; no reason means allow."""
        decision = "allow"
        for reason in self.reasons:
            if VERDICT_RANK[reason.verdict] > VERDICT_RANK[decision]:
                decision = reason.verdict
        ordered = sorted(self.reasons, key=lambda r: (-VERDICT_RANK[r.verdict], r.span))
        return Verdict(command, decision, tuple(r for r in ordered if r.verdict != "allow"))


def _rule_text(rule: object) -> str | None:
    """The rule as policy text, for reports."""
    if rule is None:
        return None
    if hasattr(rule, "host"):
        return f"{rule.action} {rule.host}"
    if hasattr(rule, "kind") and isinstance(getattr(rule, "pattern", None), str):
        return f"{rule.kind} {rule.pattern}"
    if hasattr(rule, "verdict") and hasattr(rule, "pattern"):
        return f"{rule.verdict} {rule.text}"
    return getattr(rule, "text", None)


class _DefaultRule:
    def __init__(self, ir: PolicyIR):
        self.origin = ir.network.default_origin
        self.text = f"default {ir.network.default}"
