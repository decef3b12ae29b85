"""Agent sessions: named state kept across the commands of one agent run.

A session is named by the harness (Claude Code's ``session_id``, ``--session ID`` or
``$STOCKADE_SESSION``).  Its state lives in Stockade's own state directory,
``$STOCKADE_STATE`` or ``$XDG_STATE_HOME/stockade`` (``~/.local/state/stockade``), under
``sessions/<id>/``: never in the workspace, and read-only inside every sandbox (``stockade
run`` protects the state directory like its cache).  Nothing in it is read from a path a
sandboxed command can write.

``state.json`` holds the counters the ``session`` section limits (steps, denials in a row
and their times, failures in a row), the session's status (``active``, ``stopped`` with the
reason, ``ended``), its policy and workspace, session-scoped approvals, and the hashes of
the files the session read (for read-before-edit).  The file journal is
:mod:`stockade.runtime.journal`'s, beside it.

Every change happens under an exclusive lock of ``sessions/<id>/lock`` (hooks of parallel
tool calls run concurrently) and is written by rename, so a crash leaves the old state.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from stockade import catalogue as codes
from stockade.diagnostics import Diagnostic, StockadeError
from stockade.runtime.audit import state_root

__all__ = ["state_root"]  # where the state is (lean: `stockade run` reads it from stockade.runtime.audit)

#: What a session id may look like (Claude Code's are UUIDs).
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
#: At most this many denial times are kept (for ``max-denials N within D``).
_MAX_TIMES = 10_000
STATE_VERSION = 1


def _error(code: str, message: str, help: str | None = None) -> StockadeError:
    return StockadeError(Diagnostic(code, message, help=help))


def sessions_dir(environ: Mapping[str, str] | None = None) -> str:
    """Where every session's state directory is."""
    return os.path.join(state_root(environ), "sessions")


def check_id(session_id: str) -> str:
    """``session_id`` if it is a valid session name (raises R560 otherwise)."""
    if not isinstance(session_id, str) or not SESSION_ID.match(session_id):
        raise _error(codes.BAD_SESSION, f"bad session id `{str(session_id)[:80]}`",
                     "a session id is 1-128 letters, digits, `.`, `_` or `-`, starting with a letter or digit")
    return session_id


def session_from(explicit: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The session a command belongs to: ``explicit`` (``--session``), else ``$STOCKADE_SESSION``."""
    env = os.environ if environ is None else environ
    name = explicit or env.get("STOCKADE_SESSION") or None
    return None if name is None else check_id(name)


# -- the policy's session settings ------------------------------------------------------


@dataclass(frozen=True)
class Limit:
    """One limit of the ``session`` section with where it was written (``file:line``)."""

    count: int
    window: float | None
    where: str
    text: str


@dataclass(frozen=True)
class SessionSettings:
    """The ``session`` section of a compiled policy, resolved (defaults: no limits,
    ``on-limit stop``, ``approvals persist``)."""

    max_denials: Limit | None = None
    denial_window: Limit | None = None
    max_steps: Limit | None = None
    max_failures: Limit | None = None
    on_limit: str = "stop"
    approvals: str = "persist"
    approvals_where: str = "the default"
    never_persist: tuple[Any, ...] = ()  # SessionRule records with a pattern

    @classmethod
    def from_ir(cls, ir: Any) -> SessionSettings:
        """The settings of ``ir.session``."""
        values: dict[str, Any] = {}
        never: list[Any] = []
        for rule in getattr(ir, "session", ()):
            origin = rule.origin
            where = f"{origin.file}:{origin.line}" if origin is not None else "the policy"
            if rule.name == "never-persist":
                never.append(rule)
            elif rule.choice is not None:
                values[rule.name.replace("-", "_")] = rule.choice
                if rule.name == "approvals":
                    values["approvals_where"] = where
            else:
                limit = Limit(int(rule.count or 0), rule.window, where, rule.text)
                key = "denial_window" if rule.name == "max-denials" and rule.window is not None \
                    else rule.name.replace("-", "_")
                values[key] = limit
        return cls(never_persist=tuple(never), **values)


# -- the state --------------------------------------------------------------------------


@dataclass
class SessionState:
    """A session's state as loaded under its lock (see the module docstring)."""

    id: str
    directory: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return str(self.data.get("status", "active"))

    @property
    def steps(self) -> int:
        return int(self.data.get("steps", 0))

    def to_json(self) -> dict[str, Any]:
        """The state as shown by ``stockade session show``."""
        return {"id": self.id, **{k: v for k, v in self.data.items() if k not in ("reads",)},
                "files_read": len(self.data.get("reads", {}))}


def _new_state(session_id: str, policy: str | None, workspace: str | None) -> dict[str, Any]:
    return {"version": STATE_VERSION, "id": session_id, "created": time.time(), "status": "active",
            "stopped_reason": None, "policy": policy, "workspace": workspace, "worktree": None, "steps": 0,
            "denials_in_row": 0, "denial_times": [], "failures_in_row": 0, "denials": 0, "failures": 0,
            "approvals": [], "reads": {}}


def _read_json(path: str) -> Any:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        return json.loads(handle.read(64 * 1024 * 1024).decode("utf-8"))


def write_json(path: str, data: Any) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file renamed over it)."""
    temp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8", "surrogateescape"))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def session_path(session_id: str, environ: Mapping[str, str] | None = None) -> str:
    """The state directory of one session."""
    return os.path.join(sessions_dir(environ), check_id(session_id))


def exists(session_id: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the session has state."""
    return os.path.isfile(os.path.join(session_path(session_id, environ), "state.json"))


@contextmanager
def open_session(session_id: str, *, create: bool = True, policy: str | None = None, workspace: str | None = None,
                 environ: Mapping[str, str] | None = None) -> Iterator[SessionState]:
    """The session's state, locked; written back when the block ends without an error.

    A missing session is created when ``create`` (else R561).  The state directory is
    made ``0700``."""
    directory = session_path(session_id, environ)
    state_file = os.path.join(directory, "state.json")
    if not os.path.isfile(state_file):
        if not create:
            raise _error(codes.NO_SUCH_SESSION, f"no session `{session_id}`",
                         "`stockade session list` shows the sessions")
        os.makedirs(directory, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(directory, "lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            data = _read_json(state_file)
        except FileNotFoundError:
            data = _new_state(session_id, policy, workspace)
        except (OSError, ValueError) as exc:
            raise _error(codes.BAD_SESSION, f"the state of session `{session_id}` is unreadable: {exc}",
                         f"remove `{directory}` to start the session again") from None
        if not isinstance(data, dict):
            raise _error(codes.BAD_SESSION, f"the state of session `{session_id}` is not an object")
        state = SessionState(session_id, directory, data)
        yield state
        write_json(state_file, state.data)
    finally:
        os.close(fd)


def list_sessions(environ: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every session's summary, newest first."""
    root = sessions_dir(environ)
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        if not SESSION_ID.match(name):
            continue
        try:
            data = _read_json(os.path.join(root, name, "state.json"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.append({"id": name, "status": data.get("status"), "steps": data.get("steps", 0),
                        "denials": data.get("denials", 0), "created": data.get("created"),
                        "workspace": data.get("workspace"), "stopped_reason": data.get("stopped_reason")})
    out.sort(key=lambda s: -(s.get("created") or 0))
    return out


# -- the breaker ------------------------------------------------------------------------


def blocked(state: SessionState) -> str | None:
    """Why no command of the session may run now (None: it may)."""
    if state.status == "stopped":
        return (f"session `{state.id}` is stopped: {state.data.get('stopped_reason')}; "
                f"a person must run `stockade session resume {state.id}`")
    if state.status == "ended":
        return f"session `{state.id}` has ended"
    return None


def over_steps(state: SessionState, settings: SessionSettings) -> str | None:
    """The reason the next step is past ``max-steps`` (None: it is not)."""
    limit = settings.max_steps
    steps = state.steps - int(state.data.get("steps_at_resume") or 0)
    if limit is not None and steps >= limit.count:
        return f"{steps} steps reached `{limit.text}` ({limit.where})"
    return None


def stop(state: SessionState, reason: str) -> None:
    """Stop the session: every further command is refused until ``stockade session resume``."""
    state.data["status"] = "stopped"
    state.data["stopped_reason"] = reason
    state.data["stopped_at"] = time.time()


def record_decision(state: SessionState, settings: SessionSettings, decision: str,
                    now: float | None = None, count_step: bool = True) -> str | None:
    """Count one step with its final decision (``count_step=False``: the step was counted
    when it began); returns the reason the session trips (and stops it when ``on-limit
    stop``), or None."""
    now = time.time() if now is None else now
    data = state.data
    if count_step:
        data["steps"] = state.steps + 1
    if decision == "deny":
        data["denials"] = int(data.get("denials", 0)) + 1
        data["denials_in_row"] = int(data.get("denials_in_row", 0)) + 1
        times = [t for t in data.get("denial_times", []) if isinstance(t, (int, float))]
        times.append(now)
        data["denial_times"] = times[-_MAX_TIMES:]
    else:
        data["denials_in_row"] = 0
    tripped = None
    limit = settings.max_denials
    if decision == "deny" and limit is not None and data["denials_in_row"] >= limit.count:
        tripped = f"{data['denials_in_row']} denials in a row reached `{limit.text}` ({limit.where})"
    window = settings.denial_window
    if tripped is None and decision == "deny" and window is not None and window.window is not None:
        recent = [t for t in data["denial_times"] if t > now - window.window]
        if len(recent) >= window.count:
            tripped = f"{len(recent)} denials reached `{window.text}` ({window.where})"
    if tripped is None:
        tripped = over_steps(state, settings)
    if tripped is not None:
        _trip(state, settings, tripped)
    return tripped


def record_outcome(state: SessionState, settings: SessionSettings, failed: bool) -> str | None:
    """Count the outcome of a command that ran (``failed``: a non-zero exit or a tool
    error); returns the reason the session trips, or None."""
    data = state.data
    if not failed:
        data["failures_in_row"] = 0
        return None
    data["failures"] = int(data.get("failures", 0)) + 1
    data["failures_in_row"] = int(data.get("failures_in_row", 0)) + 1
    limit = settings.max_failures
    if limit is not None and data["failures_in_row"] >= limit.count:
        reason = f"{data['failures_in_row']} failures in a row reached `{limit.text}` ({limit.where})"
        _trip(state, settings, reason)
        return reason
    return None


def _trip(state: SessionState, settings: SessionSettings, reason: str) -> None:
    if settings.on_limit == "stop":
        stop(state, reason)
    else:  # on-limit confirm: every further command asks a person
        state.data["confirm_reason"] = reason


def downgraded(state: SessionState) -> str | None:
    """Under ``on-limit confirm`` after a limit: why an ``allow`` must ask a person."""
    reason = state.data.get("confirm_reason")
    return None if not reason else f"session `{state.id}` reached a limit ({reason}): every command needs a person"


def resume(session_id: str, environ: Mapping[str, str] | None = None) -> SessionState:
    """Let a stopped session go on: counters of denials and failures in a row start again."""
    with open_session(session_id, create=False, environ=environ) as state:
        if state.status == "ended":
            raise _error(codes.BAD_SESSION, f"session `{session_id}` has ended and cannot be resumed")
        state.data.update(status="active", stopped_reason=None, denials_in_row=0, failures_in_row=0,
                          denial_times=[], confirm_reason=None, resumed_at=time.time(),
                          steps_at_resume=state.steps)
        return state


def end(session_id: str, environ: Mapping[str, str] | None = None) -> SessionState:
    """Mark the session ended: every further command of it is refused."""
    with open_session(session_id, create=False, environ=environ) as state:
        state.data["status"] = "ended"
        state.data["ended_at"] = time.time()
        return state
