"""The analyzer's entry point for a named shell: bash, PowerShell, CMD, or ``auto``.

:func:`analyze_shell` is :func:`stockade.analyzer.analyze` for a text of any of the three
shells: the same effect records and the same judge, so a policy's rules apply unchanged.
A policy compiled for Windows (``--platform windows``) is judged in the analyzer's path
namespace (:func:`~stockade.analyzer.winpaths.analysis_ir`).  ``auto`` tells the shells
apart by the text (:func:`detect_shell`): PowerShell's cmdlet names, ``$env:``, .NET type
literals and its aliases that no Unix program shares; CMD's ``%VAR%``, ``/switch`` forms of
its built-ins and batch idioms; anything else is bash (whose models still unwrap
``cmd /c`` and ``powershell -c`` inside it).
"""

from __future__ import annotations

import re

from stockade import catalogue as codes
from stockade.analyzer import MAX_COMMAND_CHARS, analyze
from stockade.analyzer.judge import Judge, Reason, Verdict
from stockade.analyzer.winpaths import analysis_ir, register_policy

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from stockade.compiler.ir import PolicyIR

SHELLS = ("bash", "powershell", "cmd", "auto")

_PS_SIGNS = re.compile(
    r"(?:^|[\s;|&({])(?:[A-Za-z]+-[A-Z][A-Za-z]+)(?=[\s;|)}]|$)"  # Verb-Noun
    r"|\$env:|\$\{env:|\$_\b|\$PSScriptRoot|\$PROFILE\b|\[[A-Za-z.]+\]::|@\{|(?:^|[|;]\s*)(?:iex|iwr|irm|gci|gc|ni|ri)\b"
    r"|-ErrorAction\b|-ExecutionPolicy\b|(?:^|\s)-(?:Recurse|Force|Path|LiteralPath|Uri|OutFile)\b", re.IGNORECASE)
_CMD_SIGNS = re.compile(
    r"%[A-Za-z_][A-Za-z0-9_]*%|%~[a-z]*[0-9]|(?:^|[&|(]\s*)@?(?:rmdir|rd|del|erase|copy|xcopy|move|dir|type|md|mkdir|"
    r"attrib|robocopy|icacls|takeown|schtasks|reg|sc|set|if|for|start|call|echo)\s+/[A-Za-z?]"
    r"|^@echo\s+off|(?:^|[&|]\s*)(?:if\s+(?:not\s+)?exist|for\s+/[fdrl]|set\s+/[ap]|goto\s+:?\w|rem\s)"
    r"|\b[12]?>\s*nul\b|\^&|(?:^|[&|]\s*)(?:cls|ver|cd\s+/d)\b", re.IGNORECASE)


def detect_shell(command: str) -> str:
    """``powershell``, ``cmd`` or ``bash``: which shell the text is written for (see the module
    docstring; a text with signs of both Windows shells is PowerShell when the signs of
    PowerShell come first)."""
    ps = _PS_SIGNS.search(command)
    cmd = _CMD_SIGNS.search(command)
    if ps and (not cmd or ps.start() <= cmd.start()):
        return "powershell"
    if cmd:
        return "cmd"
    return "bash"


def analyze_shell(command: str, ir: PolicyIR, cwd: str | None = None, shell: str = "bash") -> Verdict:
    """Judge a command written for ``shell`` (bash, powershell, cmd or auto) against the
    policy; never raises (an internal error fails closed, as :func:`~stockade.analyzer.analyze`)."""
    try:
        if shell == "auto":
            shell = detect_shell(command) if isinstance(command, str) else "bash"
        if shell == "bash":
            return analyze(command, ir, cwd)
        judged = analysis_ir(ir)
        if shell not in ("powershell", "cmd"):
            raise ValueError(f"unknown shell `{shell}`")
        if not isinstance(command, str):
            raise TypeError(f"command must be a string, not {type(command).__name__}")
        if len(command) > MAX_COMMAND_CHARS or "\0" in command:
            return analyze(command, judged, None)  # the same refusal, worded once
        register_policy(judged)
        walk = _WALKS.get(shell) or _load_walk(shell)
        effects = walk(judged.context, command, cwd)
        judge = Judge(judged, None)
        judge.judge(effects)
        return _readable(judge.verdict(command), judged is not ir)
    except Exception as exc:  # fail closed
        setting = ir.unparsable
        verdict = setting.verdict if setting.verdict != "allow" else "deny"
        text = command if isinstance(command, str) else repr(command)
        reason = Reason(verdict, codes.ANALYZER_INTERNAL_ERROR,
                        f"internal analyzer error ({type(exc).__name__}: {exc}); failing closed",
                        (0, len(text)), setting.origin)
        return Verdict(text, verdict, (reason,))


_WALKS: dict[str, Any] = {}


def _load_walk(shell: str) -> Any:
    """The frontend of ``shell`` (imported on first use)."""
    if shell == "powershell":
        from stockade.analyzer.pwsh import walk_powershell as walk
    else:
        from stockade.analyzer.cmdshell import walk_cmd as walk
    _WALKS[shell] = walk
    return walk


_MAPPED_DRIVE = re.compile(r"/mnt/([a-z])(?=/|`|$)")


def _windows_spelling(message: str) -> str:
    """``/mnt/c/users/me`` in backticks as ``C:\\users\\me``."""
    message = _MAPPED_DRIVE.sub(lambda m: m.group(1).upper() + ":", message)
    return re.sub(r"`([A-Z]:[^`]*)`", lambda m: "`" + (m.group(1).replace("/", "\\") if len(m.group(1)) > 2
                                                        else m.group(1) + "\\") + "`", message)


def _readable(verdict: Verdict, windows: bool) -> Verdict:
    """The verdict with the reasons that differ only in the case of a path given once (a path
    is judged in the spellings :func:`~stockade.analyzer.winpaths.resolve_variants` gives),
    and — under a policy compiled for Windows — paths shown as Windows spells them."""
    seen: set[tuple] = set()
    kept: list[Reason] = []
    for reason in verdict.reasons:
        key = (reason.verdict, reason.code, reason.span, reason.message.lower())
        if key in seen:
            continue
        seen.add(key)
        if windows and ("/mnt/" in reason.message or "/mnt/" in (reason.rule_text or "")):
            rule_text = reason.rule_text
            if rule_text is not None and "/mnt/" in rule_text:
                rule_text = _windows_spelling(rule_text.replace(" /mnt/", " `/mnt/", 1) + "`").replace("`", "")
            reason = Reason(reason.verdict, reason.code, _windows_spelling(reason.message), reason.span, reason.rule,
                            rule_text)
        kept.append(reason)
    if len(kept) == len(verdict.reasons) and not windows:
        return verdict
    return Verdict(verdict.command, verdict.decision, tuple(kept))


__all__ = ["SHELLS", "analyze_shell", "detect_shell"]
