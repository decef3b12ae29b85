"""Judging hook events against a policy, shared by every hook, and the generic JSON hook.

The generic hook reads one JSON object on standard input and answers one JSON object:

* ``{"command": "git push -f", "cwd": "/repo"}`` — a shell command, judged by the analyzer
  (the answer is the analyzer's verdict JSON, as ``stockade analyze --format json``);
* ``{"tool": "read_file", "path": "~/.ssh/id_rsa", "access": "read"|"write", "cwd": …}`` —
  a file access, judged against the filesystem rules (``access`` defaults to ``read``).

Every answer has ``decision`` (``allow``/``confirm``/``deny``) and ``reasons`` (objects with
``verdict``, ``code``, ``message`` and the deciding ``rule``).  Malformed input — not JSON,
not an object, missing or mistyped fields, more than :data:`MAX_EVENT_BYTES` — is answered
with ``deny`` and a reason (``X631``); nothing raises.  Codes: ``X630`` a path outside what
the policy grants, ``X631`` malformed event, ``X632`` the policy could not be loaded,
``X633`` the audit trail could not be written, ``X639`` the judging itself failed (an
internal error, or the separate process it runs in crashed or ran past its time limit).

**Crash isolation.**  A hook that dies without an answer is fail-open: Claude Code treats a
crashed hook as a non-blocking error and runs the command.  :func:`judge_isolated` therefore
judges in a forked child process (with a memory limit) and waits for its answer at most
:data:`HOOK_TIMEOUT` seconds; a child that crashes (a signal, even ``SIGSEGV`` in the shell
parser), exits without an answer or runs past the time is answered ``deny`` by the parent.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from stockade import catalogue as codes
from stockade.compiler.ir import PolicyIR

#: Events larger than this are refused (a Write tool's content is part of the event).
MAX_EVENT_BYTES = 16 * 1024 * 1024
#: Seconds the hook waits for the judging child (Claude Code's own hook timeout is 60 s).
HOOK_TIMEOUT = 30.0
#: Address space the judging child may use beyond what it has when it starts (bytes).
CHILD_MEMORY = 2 * 1024 * 1024 * 1024


@dataclass(frozen=True)
class HookDecision:
    """A hook's answer: the decision (None: no opinion), its reasons, and what was judged."""

    decision: str | None
    reasons: tuple[dict, ...] = ()
    subject: Mapping[str, Any] = field(default_factory=dict)

    @property
    def message(self) -> str:
        """The reasons as one line for people (``; ``-separated)."""
        deciding = [r for r in self.reasons if r.get("verdict") == self.decision] or list(self.reasons)
        parts = []
        for reason in deciding:
            text = reason.get("message", "")
            rule = reason.get("rule")
            if rule and rule.get("file"):
                where = f"{rule['file']}:{rule['line']}"
                text += f" (rule `{rule['text']}` at {where})" if rule.get("text") else f" (rule at {where})"
            parts.append(text)
        return "; ".join(parts) or ("allowed by the policy" if self.decision == "allow" else "")

    def to_json(self) -> dict:
        """The answer as a JSON object (``decision``, ``reasons`` and the judged subject)."""
        data = dict(self.subject)
        data.update({"decision": self.decision, "reasons": list(self.reasons)})
        return data


def reason(verdict: str, code: str, message: str, rule: Any = None) -> dict:
    """One reason object (the shape of the analyzer's ``Reason.to_json``)."""
    origin = getattr(rule, "origin", None)
    text = None
    if rule is not None and hasattr(rule, "kind"):
        text = f"{rule.kind} {rule.source_text or rule.pattern}"
    return {"verdict": verdict, "code": code, "message": message, "span": None,
            "rule": None if origin is None else {"file": origin.file, "line": origin.line, "column": origin.column,
                                                 "layer": origin.layer, "text": text}}


def malformed(message: str, subject: Mapping[str, Any] | None = None) -> HookDecision:
    """A deny for an event that cannot be read."""
    return HookDecision("deny", (reason("deny", codes.HOOK_MALFORMED_EVENT, f"malformed hook event: {message}"),),
                        dict(subject or {}))


#: The longest integer a JSON text may hold (Python's own limit for reading one, ``sys.int_info``).
MAX_JSON_DIGITS = 4300


def strict_json(text: str) -> Any:
    """``json.loads(text)`` for input that decides a verdict: what a JSON reader may read in
    another way than the sender meant is refused with :class:`ValueError` — a key given twice
    in one object (``{"command": "rm -rf ~", "command": "ls"}``: Python keeps the last, other
    readers the first or refuse), ``NaN``/``Infinity`` (not JSON), a number too large for a
    float, an integer of more than :data:`MAX_JSON_DIGITS` digits; nesting deeper than the
    reader follows raises ``ValueError("JSON nested too deeply")``."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_not_json, parse_float=_finite,
                          parse_int=_integer)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key `{key[:80]}` is given twice in one object")
            seen.add(key)
    return result


def _not_json(name: str) -> Any:
    raise ValueError(f"`{name}` is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number `{text[:40]}` is too large")
    return value


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_DIGITS:
        raise ValueError(f"a number of {len(text.lstrip('-'))} digits (more than {MAX_JSON_DIGITS})")
    return int(text)


def read_event(stream: IO[bytes]) -> Any | HookDecision:
    """Read and parse one JSON event (at most :data:`MAX_EVENT_BYTES`, read by
    :func:`strict_json`); a deny when it cannot."""
    try:
        data = stream.read(MAX_EVENT_BYTES + 1)
    except OSError as exc:
        return malformed(f"cannot read standard input ({exc.strerror})")
    if len(data) > MAX_EVENT_BYTES:
        return malformed(f"event larger than {MAX_EVENT_BYTES // (1024 * 1024)} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return malformed("not UTF-8")
    if not text.strip():
        return malformed("empty input")
    try:
        return strict_json(text)
    except json.JSONDecodeError as exc:
        return malformed(f"not JSON ({exc.msg.lower()} at line {exc.lineno} column {exc.colno})")
    except ValueError as exc:
        return malformed(str(exc))


# -- judging ---------------------------------------------------------------------------


def judge_command(ir: PolicyIR, command: str, cwd: str | None = None) -> HookDecision:
    """A shell command, judged by the analyzer (never raises)."""
    from stockade.analyzer import analyze

    verdict = analyze(command, ir, cwd)
    data = verdict.to_json()
    return HookDecision(verdict.decision, tuple(data["reasons"]), {"command": command})


def judge_path(ir: PolicyIR, path: str, access: str, cwd: str | None = None,
               subject: Mapping[str, Any] | None = None) -> HookDecision:
    """A file access (``read`` or ``write``) against the filesystem rules (a path longer than
    the analyzer judges, :data:`~stockade.analyzer.judge.MAX_PATH_CHARS`, is denied)."""
    from stockade.analyzer.judge import MAX_PATH_CHARS

    if len(path) > MAX_PATH_CHARS:
        return malformed(f"a path of {len(path)} characters is longer than the hook judges ({MAX_PATH_CHARS})",
                         {"path": path[:200] + "…", "access": access})
    decision = ir.path_access(path, cwd)
    subject = dict(subject or {"path": path, "access": access})
    granted = decision.can_write if access == "write" else decision.can_read
    if granted:
        return HookDecision("allow", (reason("allow", codes.HOOK_ACCESS_DECISION,
                                             f"{access} of `{decision.path}` is granted",
                                             decision.rule),), subject)
    if decision.rule is None:
        message = f"no rule grants {access} access to `{decision.path}`"
    else:
        have = {"none": "no access", "read": "read-only access"}[decision.access]
        message = f"{access} of `{decision.path}` is denied: the policy gives it {have}"
    return HookDecision("deny", (reason("deny", codes.HOOK_ACCESS_DECISION, message, decision.rule),), subject)


def literal_base(root: str, pattern: str) -> str:
    """The directory a glob pattern searches: ``root`` joined with its literal leading part."""
    parts = []
    for part in pattern.split("/"):
        if any(c in part for c in "*?[{"):
            break
        parts.append(part)
    literal = "/".join(parts)
    if pattern.startswith("/"):
        return literal or "/"
    return os.path.join(root, literal) if literal else root


def judge_search(ir: PolicyIR, root: str, pattern: str, cwd: str | None, subject: Mapping[str, Any],
                 contents: bool) -> HookDecision:
    """A search below ``root``: a content search is judged like ``grep -r`` (it reads files
    below), a name search (glob) needs read access to the directory."""
    if not contents:
        return judge_path(ir, literal_base(root, pattern), "read", cwd, subject)
    verdict = judge_command(ir, f"grep -r -- {shlex.quote(pattern)} {shlex.quote(root)}", cwd)
    return HookDecision(verdict.decision, verdict.reasons, dict(subject))


def judge_url(ir: PolicyIR, url: str, subject: Mapping[str, Any]) -> HookDecision:
    """A URL fetch against the network rules."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return malformed(f"`{url}` is not a URL", subject)
    if not host:
        return malformed(f"`{url}` has no host", subject)
    if port is None:
        port = {"http": 80, "https": 443}.get(parts.scheme)
    decision = ir.network_access(host, port)
    verdict = "allow" if decision.allowed else "deny"
    rule = decision.rule
    origin = getattr(rule, "origin", None) if rule is not None else ir.network.default_origin
    message = f"contact with `{host}` is {'allowed' if decision.allowed else 'denied'}"
    if rule is None:
        message += f" (network `default {ir.network.default}`)"
    data = {"verdict": verdict, "code": codes.HOOK_ACCESS_DECISION, "message": message, "span": None,
            "rule": None if origin is None else {"file": origin.file, "line": origin.line, "column": origin.column,
                                                 "layer": origin.layer, "text": None}}
    return HookDecision(verdict, (data,), dict(subject))


def judge_generic(ir: PolicyIR, event: Any) -> HookDecision:
    """The generic hook: ``{"command"}`` or ``{"tool", "path", "access"}`` (see the module docstring)."""
    if not isinstance(event, dict):
        return malformed(f"expected a JSON object, got {type(event).__name__}")
    cwd = event.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        return malformed("`cwd` must be a string")
    if "command" in event:
        command = event["command"]
        if not isinstance(command, str):
            return malformed("`command` must be a string", {"command": repr(command)[:200]})
        return judge_command(ir, command, cwd)
    path, tool, access = event.get("path"), event.get("tool", "file"), event.get("access", "read")
    if path is None:
        return malformed("expected `command`, or `path` (with `tool` and `access`)")
    if not isinstance(path, str) or not path or "\0" in path:
        return malformed("`path` must be a non-empty string")
    if not isinstance(tool, str):
        return malformed("`tool` must be a string")
    if access not in ("read", "write"):
        return malformed("`access` must be `read` or `write`")
    return judge_path(ir, path, access, cwd, {"tool": tool, "path": path, "access": access})


# -- crash isolation ---------------------------------------------------------------------


def judge_isolated(judge: Callable[[], HookDecision], timeout: float = HOOK_TIMEOUT) -> HookDecision:
    """``judge()`` run in a forked child process; its answer comes back through a pipe.  A
    child that dies (any signal), exits without a complete answer, or has not answered
    after ``timeout`` seconds (it is then killed) gives a ``deny`` (``X639``).  Without
    ``os.fork`` (Windows), ``judge()`` runs in this process."""
    if not hasattr(os, "fork"):
        return judge()
    import select
    import signal
    import time

    read_end, write_end = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid == 0:  # the child: judge, write the answer, leave without cleanup
        status = 0
        try:
            os.close(read_end)
            _limit_memory(CHILD_MEMORY)
            data = json.dumps(_answer_json(_judged(judge))).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view):]
        except BaseException:
            status = 70
        finally:
            os._exit(status)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    timed_out = False
    answered = False
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_end], [], [], remaining)
            if ready:
                chunk = os.read(read_end, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        answered = True
    finally:
        os.close(read_end)
        if timed_out or not answered:  # (also when waiting was interrupted: the child must not outlive it)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
    if timed_out:
        return _failed(f"judging did not finish within {timeout:g} s (the judging process was killed)")
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return _failed(f"the judging process crashed ({name})")
    try:
        answer = json.loads(b"".join(chunks))
        return HookDecision(answer["decision"], tuple(answer["reasons"]), answer["subject"])
    except (ValueError, KeyError, TypeError):
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        return _failed(f"the judging process ended (status {code}) without an answer")


def _judged(judge: Callable[[], HookDecision]) -> HookDecision:
    """``judge()``; an exception (a bug, or memory the child may not have) becomes a deny."""
    try:
        return judge()
    except Exception as exc:  # fail closed: a bug in judging never lets a tool call through
        return _failed(f"internal hook error ({type(exc).__name__}: {exc}); failing closed")


def _failed(message: str) -> HookDecision:
    return HookDecision("deny", (reason("deny", codes.HOOK_INTERNAL_ERROR, message),))


def _answer_json(answer: HookDecision) -> dict[str, Any]:
    return {"decision": answer.decision, "reasons": list(answer.reasons), "subject": dict(answer.subject)}


def _limit_memory(extra: int) -> None:
    """Cap this process's address space at its current size plus ``extra`` bytes (Linux;
    elsewhere a no-op): past it allocations fail, and a crash is answered by the parent."""
    try:
        import resource

        with open("/proc/self/statm", encoding="ascii") as handle:
            size = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = size + extra
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft == resource.RLIM_INFINITY or soft > limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (OSError, ValueError, ImportError):
        pass


# -- audit -----------------------------------------------------------------------------


def audit_record(ir: PolicyIR | None, source: str, answer: HookDecision) -> dict:
    """The audit record of one hook decision (the runtime's record shape)."""
    from stockade.runtime.audit import now_iso

    subject = answer.subject
    command = subject.get("command")
    if command is None and subject.get("path") is not None:
        command = f"{subject.get('tool', 'file')} {subject.get('access', '')} {subject['path']}".strip()
    return {"time": now_iso(), "event": "decision", "source": source,
            "policy": ir.name if ir else None, "policy_hash": ir.source_hash if ir else None,
            "command": command, "tool": subject.get("tool"), "verdict": answer.decision or "none",
            "reasons": list(answer.reasons), "approved_by": subject.get("approved_by"),
            **{key: subject[key] for key in ("session", "step") if key in subject}}


def write_audit(path: str | None, ir: PolicyIR | None, source: str, answer: HookDecision) -> HookDecision:
    """Append the decision to the audit trail; if that fails, the answer becomes a deny (fail closed)."""
    if not path:
        return answer
    from stockade.diagnostics import StockadeError
    from stockade.runtime.audit import append_record

    try:
        append_record(path, audit_record(ir, source, answer))
    except StockadeError as error:
        message = "; ".join(d.message for d in error.diagnostics)
        return HookDecision("deny", (*answer.reasons, reason("deny", codes.HOOK_AUDIT_FAILED,
                                                             f"audit trail not written: {message}")),
                            answer.subject)
    return answer


def load_ir(policy: str | None, workspace: str | None = None, home: str | None = None,
            tmpdir: str | None = None) -> tuple[PolicyIR | None, HookDecision | None]:
    """The hook's compiled policy (from the compiled-policy cache while it is fresh); on
    failure a deny naming every error (never raises)."""
    from stockade.compiler.cache import cached_ir
    from stockade.diagnostics import StockadeError

    try:
        return cached_ir(policy, workspace=workspace, home=home, tmpdir=tmpdir), None
    except StockadeError as error:
        messages = [str(d) for d in error.errors] or [str(error)]
        return None, HookDecision("deny", tuple(reason("deny", codes.HOOK_POLICY_NOT_LOADED,
                                                       f"policy not loaded: {m}") for m in messages))
    except OSError as error:
        return None, HookDecision("deny", (reason("deny", codes.HOOK_POLICY_NOT_LOADED, f"policy not loaded: {error}"),
                                           ))

