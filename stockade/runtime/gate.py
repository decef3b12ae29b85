"""The gate before a run: the analyzer's verdict decides whether the command may start.

* ``deny`` refuses, with every reason;
* ``confirm`` asks on a terminal (the user must type ``yes``); without a terminal it
  refuses, unless ``--approve`` was given;
* ``allow`` runs.

Fail closed: if the analyzer is missing or fails, the verdict is ``deny`` with the error as
its reason.  Verdicts are cached by :mod:`stockade.runtime.cache` (the analyzer, and with it
tree-sitter, is only imported on a miss).
"""

from __future__ import annotations

import os
import sys

from stockade.runtime import cache
from stockade.runtime.record import Record

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Mapping
    from typing import Any, ClassVar


class Judgement(Record):
    """The analyzer's verdict on a command, with its reasons (as text) and full detail."""

    _factories: ClassVar[dict[str, Callable[[], Any]]] = {"detail": dict}

    decision: str
    reasons: tuple[str, ...]
    detail: dict
    cached: bool = False


class GateDecision(Record):
    """Whether the command runs, and who decided (``policy``, ``--approve``, ``terminal`` or
    another approver's name)."""

    judgement: Judgement
    runs: bool
    approved_by: str | None


def _reason_text(reason: Any) -> str:
    if isinstance(reason, str):
        return reason
    if isinstance(reason, dict):
        return str(reason.get("message") or reason)
    message = getattr(reason, "message", None)
    return str(message) if message else str(reason)


def analyze(command_text: str, ir_loader: Callable[[], Any], cwd: str | None) -> Judgement:
    """Run the analyzer on ``command_text`` (fail closed: any failure is ``deny``)."""
    try:
        from stockade.analyzer import analyze as analyzer_analyze  # lazy: tree-sitter lives there
    except ImportError as exc:
        return Judgement("deny", (f"the analyzer is not available: {exc}",))
    try:
        verdict = analyzer_analyze(command_text, ir_loader(), cwd=cwd)
        decision = str(verdict.decision)
        reasons = tuple(_reason_text(r) for r in getattr(verdict, "reasons", ()))
        detail = verdict.to_json() if hasattr(verdict, "to_json") else {}
    except Exception as exc:  # fail closed on any analyzer error
        return Judgement("deny", (f"the analyzer failed: {type(exc).__name__}: {exc}",))
    if decision not in ("allow", "confirm", "deny"):
        return Judgement("deny", (f"the analyzer returned an unknown verdict `{decision}`",))
    return Judgement(decision, reasons, detail if isinstance(detail, dict) else {})


def judge(command_text: str, ir_loader: Callable[[], Any], cwd: str, plan_key: str | None = None,
          environ: Mapping[str, str] | None = None) -> Judgement:
    """The verdict for a command, from the verdict cache when ``plan_key`` is known."""
    key = cache.verdict_key(plan_key, cwd, command_text) if plan_key else None
    if key is not None:
        hit = cache.load_verdict(key, environ)
        if hit is not None:
            return Judgement(hit["decision"], tuple(hit.get("reasons", ())), hit.get("detail", {}), cached=True)
    judgement = analyze(command_text, ir_loader, cwd)
    failed = any(r.startswith(("the analyzer is not available", "the analyzer failed")) for r in judgement.reasons)
    if key is not None and not failed:
        cache.store_verdict(key, {"decision": judgement.decision, "reasons": list(judgement.reasons),
                                  "detail": judgement.detail}, environ)
    return judgement


def terminal_confirm(prompt: str, tty_path: str = "/dev/tty") -> bool:
    """Ask on the controlling terminal; only a typed ``yes`` approves.

    The terminal is opened unbuffered for reading and writing in binary (a text-mode
    ``"r+"`` stream needs a seekable file, which a terminal is not), the prompt written,
    and one line read, byte by byte up to the newline (at most 4 KiB).  Anything but
    ``yes`` — end of input, an error, no terminal — is a no."""
    try:
        fd = os.open(tty_path, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    try:
        os.write(fd, prompt.encode("utf-8", "replace"))
        answer = bytearray()
        while len(answer) < 4096:
            chunk = os.read(fd, 1)
            if not chunk or chunk in (b"\n", b"\r"):
                break
            answer += chunk
        return answer.decode("utf-8", "replace").strip().lower() == "yes"
    except OSError:
        return False
    finally:
        os.close(fd)


def has_terminal() -> bool:
    """Whether a person can be asked: stdin and stderr are terminals."""
    return sys.stdin.isatty() and sys.stderr.isatty() and os.path.exists("/dev/tty")


#: What a person is asked before a ``confirm`` command runs.
CONFIRM_PROMPT = "stockade: this command needs confirmation; type `yes` to run it: "


def decide(judgement: Judgement, approve: bool = False, ask: Callable[[str], bool] | None = None,
           asked_by: str = "terminal") -> GateDecision:
    """Apply the verdict: ``ask`` is called for ``confirm`` when there is no ``--approve``
    (pass None when no one can be asked: the command is refused); ``asked_by`` names who
    approved when ``ask`` says yes."""
    if judgement.decision == "allow":
        return GateDecision(judgement, True, "policy")
    if judgement.decision == "confirm":
        if approve:
            return GateDecision(judgement, True, "--approve")
        if ask is not None and ask(CONFIRM_PROMPT):
            return GateDecision(judgement, True, asked_by)
        return GateDecision(judgement, False, None)
    return GateDecision(judgement, False, None)
