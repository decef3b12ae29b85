"""The audit trail: one JSON line per decision and per run, appended safely.

Each record is a JSON object on one line with at least ``time`` (ISO 8601 UTC), ``event``
(``decision``, ``run`` or ``net``), ``policy`` and ``policy_hash``, ``command``; decisions add
``verdict``, ``reasons`` and ``approved_by``; runs add ``backend``, ``sandbox_argv``,
``exit_status``, ``duration``, ``bytes_out``/``bytes_err``/``bytes_shown``, ``limits_hit``,
``net_blocked`` (how many connections the network broker refused) and, for previews,
``preview`` (the change summary and whether it was applied).  Network records (one per
connection the run's network broker handled, :mod:`stockade.runtime.broker`) add
``decision`` (``allow``/``deny``), ``protocol`` (``http``, ``connect``, ``socks5``,
``host-loopback``), ``host``, ``port``, ``address`` (the address connected to, or the one
refused), ``rule`` and ``rule_at`` (the deciding rule and its ``file:line``), ``reason``;
allowed ones ``bytes_sent``, ``bytes_received`` and ``duration`` when they end.

Records are encoded by :func:`json_line` (what ``json.dumps(record, ensure_ascii=False,
separators=(",", ":"), default=str)`` gives, tested against it) because every ``stockade
run`` writes them and importing :mod:`json` compiles regular expressions; reading the
trail (``stockade audit``) is :mod:`stockade.runtime.audit_read`'s, with :mod:`json`.

Appends are atomic with respect to each other: the file is opened ``O_APPEND``, locked
with a POSIX write lock (``os.lockf``; readers take a read lock with ``fcntl.lockf``) and
each record is written with a single ``write``.  Environment
values are never recorded (the sandbox argv carries no environment: it is passed to the
sandbox tool directly).

The default file is ``$STOCKADE_AUDIT``, else ``$XDG_STATE_HOME/stockade/audit.jsonl``
(``~/.local/state/stockade/audit.jsonl``); ``stockade run --audit FILE`` overrides it.
"""

from __future__ import annotations

import os
import time

from stockade import catalogue as codes

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping
    from typing import Any

    from stockade.diagnostics import StockadeError


def _error(code: str, message: str, help: str | None = None) -> StockadeError:
    from stockade.diagnostics import Diagnostic, StockadeError

    return StockadeError(Diagnostic(code, message, help=help))


def state_root(environ: Mapping[str, str] | None = None) -> str:
    """Stockade's state directory (sessions, approvals): ``$STOCKADE_STATE``, else
    ``$XDG_STATE_HOME/stockade`` (``~/.local/state/stockade``); read-only in every sandbox."""
    env = os.environ if environ is None else environ
    if env.get("STOCKADE_STATE"):
        return os.path.abspath(env["STOCKADE_STATE"])
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(os.path.abspath(base), "stockade")


def default_audit_path(environ: Mapping[str, str] | None = None) -> str:
    """Where audit records go when neither the policy nor ``--audit`` names a file."""
    env = os.environ if environ is None else environ
    if env.get("STOCKADE_AUDIT"):
        return env["STOCKADE_AUDIT"]
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "stockade", "audit.jsonl")


def now_iso() -> str:
    """The current time, ISO 8601 in UTC with milliseconds (``2025-01-31T12:00:00.123Z``)."""
    seconds, millis = divmod(time.time_ns() // 1_000_000, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


#: JSON escapes for a string (what ``json`` escapes with ``ensure_ascii=False``: quote,
#: backslash and the control characters below U+0020).
_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)}
_ESCAPES.update({ord("\\"): "\\\\", ord('"'): '\\"', ord("\b"): "\\b", ord("\f"): "\\f", ord("\n"): "\\n",
                 ord("\r"): "\\r", ord("\t"): "\\t"})


def _json_string(text: str) -> str:
    if text.isprintable() and '"' not in text and "\\" not in text:  # nothing to escape (three scans in C)
        return '"' + text + '"'
    return '"' + text.translate(_ESCAPES) + '"'


def _json_parts(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_json_string(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if value != value:
            out.append("NaN")
        elif value in (float("inf"), float("-inf")):
            out.append("Infinity" if value > 0 else "-Infinity")
        else:
            out.append(float.__repr__(value))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _json_parts(item, out)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key, item in value.items():
            if isinstance(key, str):
                name = key
            elif key is None or isinstance(key, (bool, int, float)):
                name = "".join(_json_list(key))
            else:
                raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
            if not first:
                out.append(",")
            first = False
            out.append(_json_string(name))
            out.append(":")
            _json_parts(item, out)
        out.append("}")
    else:
        out.append(_json_string(str(value)))


def _json_list(value: Any) -> list[str]:
    out: list[str] = []
    _json_parts(value, out)
    return out


def json_line(record: Mapping[str, Any]) -> str:
    """``record`` as one line of JSON (``json.dumps(record, ensure_ascii=False,
    separators=(",", ":"), default=str)``), without importing :mod:`json`."""
    return "".join(_json_list(dict(record)))


def append_record(path: str, record: Mapping[str, Any]) -> None:
    """Append one record as a JSON line, under an exclusive lock (raises R530 on failure)."""
    text = json_line(record) + "\n"
    try:
        line = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (bytes that were not UTF-8 in an argv): JSON escapes
        line = "".join(f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" else c for c in text).encode("utf-8")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
    try:
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:  # the first record: make the directory
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise _error(codes.AUDIT_WRITE_FAILED, f"cannot open the audit file `{path}`: {exc.strerror}",
                     help="pass a writable file with `--audit FILE`") from None
    try:
        os.lockf(fd, os.F_LOCK, 0)
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise _error(codes.AUDIT_WRITE_FAILED, f"cannot write the audit file `{path}`: {exc.strerror}") from None
    finally:
        os.close(fd)  # closing releases the lock
