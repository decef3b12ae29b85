"""``stockade run --session ID``: one confined run as a step of an agent session.

Around :func:`stockade.runtime.session.run`:

1. under the session's lock: a stopped or ended session, or one past ``max-steps``,
   refuses the command (``R585``); otherwise the step is numbered;
2. the run judges the command as usual; a ``confirm`` is first checked against the stored
   approvals (session, project, user: :mod:`stockade.runtime.approvals`) — every confirmed
   segment must be covered, a ``deny`` never is — and otherwise asks the person, who may
   answer ``always`` to store an approval of the granularity shown;
3. the run is a preview whose changes are journaled (pre-images kept) and then applied
   (:mod:`stockade.runtime.journal`), so ``stockade revert ID`` can take them back;
4. under the lock again: the step's decision and the command's exit status are counted
   (``max-denials``, ``max-failures``); every audit record carries ``session`` and ``step``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from stockade import catalogue as codes
from stockade.runtime import approvals, journal, sessions


def ask_terminal(prompt: str) -> str:
    """Ask on the controlling terminal; the answer typed, lowercased ("" when none)."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        os.write(fd, prompt.encode("utf-8", "replace"))
        line = b""
        while not line.endswith(b"\n") and len(line) < 4096:
            chunk = os.read(fd, 1)
            if not chunk:
                break
            line += chunk
        return line.decode("utf-8", "replace").strip().lower()
    except OSError:
        return ""
    finally:
        os.close(fd)


class SessionConfirm:
    """The ``confirm`` callback of a session run: stored approvals first, then the person
    (``yes`` once, ``always`` to store the approval shown, anything else refuses)."""

    def __init__(self, ir: Any, session: str, settings: sessions.SessionSettings, workspace: str,
                 ask: Callable[[str], str] | None, show: Callable[[Any], None] | None = None,
                 scope: str = "project", environ: Mapping[str, str] | None = None):
        self.ir = ir
        self.session = session
        self.settings = settings
        self.workspace = workspace
        self.ask = ask
        self.show = show
        self.scope = "session" if settings.approvals == "session" else scope
        self.environ = environ
        self.approved_by = "terminal"
        self.notes: list[str] = []

    def __call__(self, judgement: Any) -> bool:
        with sessions.open_session(self.session, environ=self.environ) as state:
            stored = approvals.load(self.workspace, state.data.get("approvals", []), self.environ)
        text = str(judgement.detail.get("command", ""))
        applied = approvals.apply(judgement.detail, text, self.ir, None, stored)
        if applied.decision == "allow":
            self.approved_by = "approval " + ", ".join(f"{a.id} (`{a.text}`, {a.scope})" for a in applied.used)
            return True
        if self.ask is None:
            return False
        if self.show is not None:
            self.show(judgement)
        candidate = self._candidate(judgement, text)
        if candidate is None:
            return self.ask("stockade: this command needs confirmation; type `yes` to run it: ") == "yes"
        approval, what = candidate
        answer = self.ask(f"stockade: type `yes` to run it once, `always` to also allow {what} "
                          f"from now on ({self.scope}): ")
        if answer == "always":
            with sessions.open_session(self.session, environ=self.environ) as state:
                stored_one = approvals.add(approval, self.scope, workspace=self.workspace,
                                           origin={"by": "terminal", "command": text, "session": self.session},
                                           session_approvals=state.data.setdefault("approvals", []),
                                           environ=self.environ)
            self.approved_by = f"terminal (stored approval {stored_one.id})"
            self.notes.append(f"stored approval {stored_one.id}: `{stored_one.text}` ({stored_one.scope})")
            return True
        return answer == "yes"

    def _candidate(self, judgement: Any, text: str) -> tuple[approvals.Approval, str] | None:
        """The approval an ``always`` would store: the one simple command every ``confirm``
        reason belongs to (None: there is none, or it may not be stored)."""
        if self.settings.approvals == "never" or any(
                isinstance(r, dict) and r.get("verdict") == "deny" for r in judgement.detail.get("reasons", ())):
            return None
        argvs = {argv for _, argv in approvals.owners(judgement.detail, text, self.ir, None)}
        if len(argvs) != 1 or None in argvs:
            return None  # several commands (or none) need confirmation: approve it once
        (argv,) = argvs
        assert argv is not None
        try:
            approval = approvals.derive(argv)
            approvals.check_storable(approval, argv, self.scope, self.settings)
        except Exception:
            return None
        return approval, approvals.describe(approval)


def run_in_session(command: Any, session: str, *, policy: Any = None, workspace: str | None = None,
                   approve: bool = False, ask: Callable[[str], str] | None = None,
                   show_reasons: Callable[[Any], None] | None = None, preview_apply: Any = None,
                   environ: Mapping[str, str] | None = None, **kwargs: Any) -> Any:
    """Run ``command`` as one step of ``session`` (see the module docstring); the
    :class:`~stockade.runtime.session.RunOutcome`, with ``notes`` in ``warnings``."""
    from stockade.compiler.cache import cached_ir
    from stockade.runtime.session import RunOutcome, run

    sessions.check_id(session)
    real_workspace = os.path.realpath(workspace or os.getcwd())
    ir = cached_ir(None if policy is None else os.fspath(policy), workspace=real_workspace)
    settings = sessions.SessionSettings.from_ir(ir)
    policy_path = None if policy is None else os.path.abspath(os.fspath(policy))
    with sessions.open_session(session, policy=policy_path, workspace=real_workspace, environ=environ) as state:
        why = sessions.blocked(state) or sessions.over_steps(state, settings)
        if why is not None and state.status == "active":
            sessions.stop(state, why)
        state.data["steps"] = state.steps + 1
        step = state.steps
        if why is not None:
            text = command if isinstance(command, str) else " ".join(command)
            return RunOutcome("deny", (why,), False, tuple(command if not isinstance(command, str) else ()), text,
                              real_workspace, "", detail={"decision": "deny", "reasons": [
                                  {"verdict": "deny", "code": codes.SESSION_RUN_REFUSED, "message": why}]})
        downgraded = sessions.downgraded(state)
    confirm = SessionConfirm(ir, session, settings, real_workspace, ask, show_reasons, environ=environ)
    the_journal = journal.Journal(sessions.session_path(session, environ), environ)
    journaled: list[str] = []

    def apply(preview: Any) -> bool:
        paths = [c.path for c in preview.changes] + [c.old_path for c in preview.changes if c.old_path]
        journaled.extend(the_journal.before(real_workspace, paths, step, "run"))
        if preview_apply is None:
            return True
        return bool(preview_apply(preview) if callable(preview_apply) else preview_apply)

    outcome = run(command, policy=policy, workspace=real_workspace, approve=approve and downgraded is None,
                  confirm=confirm, preview=True, apply=apply, environ=environ,
                  audit_extra={"session": session, "step": step}, force_confirm=downgraded, **kwargs)
    if outcome.preview is not None and outcome.preview.applied and journaled:
        the_journal.after(real_workspace, journaled)
    with sessions.open_session(session, environ=environ) as state:
        tripped = sessions.record_decision(state, settings, outcome.verdict, count_step=False)
        if outcome.ran:
            tripped = sessions.record_outcome(state, settings, bool(outcome.exit_status)) or tripped
    notes = list(confirm.notes)
    if tripped is not None:
        notes.append(f"session `{session}` reached a limit: {tripped}")
    return outcome.replace(warnings=(*outcome.warnings, *notes)) if notes else outcome
