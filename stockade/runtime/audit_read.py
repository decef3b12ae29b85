"""Reading the audit trail (``stockade audit``): records oldest first, filtered by verdict,
event, time and text.

The writer is :mod:`stockade.runtime.audit` (on the path of every ``stockade run``); this
module is loaded only to read, and uses :mod:`json` and :mod:`datetime` freely.  A reader
takes a shared POSIX lock, so it never sees half of a record being appended.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from stockade import catalogue as codes
from stockade.runtime.audit import _error
from stockade.runtime.record import Record


class AuditFilter(Record):
    """Which records :func:`read_records` keeps (every field optional)."""

    verdict: str | None = None
    event: str | None = None
    since: _dt.datetime | None = None
    grep: str | None = None
    session: str | None = None

    def keep(self, record: Mapping[str, Any]) -> bool:
        """Whether a record passes the filter."""
        # a network record (`event: net`) has a `decision` (allow or deny) instead
        if self.verdict is not None and record.get("verdict", record.get("decision")) != self.verdict:
            return False
        if self.event is not None and record.get("event") != self.event:
            return False
        if self.session is not None and record.get("session") != self.session:
            return False
        if self.since is not None:
            when = parse_time(str(record.get("time", "")))
            if when is None or when < self.since:
                return False
        if self.grep is not None:
            import json

            haystack = json.dumps(record, ensure_ascii=False).lower()
            if self.grep.lower() not in haystack:
                return False
        return True


def parse_time(text: str) -> _dt.datetime | None:
    """An ISO 8601 time (``Z`` accepted; naive times are UTC), or None."""
    try:
        value = _dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=_dt.UTC)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str, now: _dt.datetime | None = None) -> _dt.datetime:
    """``--since`` values: an ISO time/date, or a duration ago (``90s``, ``15m``, ``2h``,
    ``3d``, ``1w``).  Raises ValueError with a message for anything else."""
    text = text.strip()
    if len(text) >= 2 and text[-1] in _UNITS and text[:-1].isascii() and text[:-1].replace(".", "", 1).isdigit():
        now = now or _dt.datetime.now(_dt.UTC)
        try:
            return now - _dt.timedelta(seconds=float(text[:-1]) * _UNITS[text[-1]])
        except (OverflowError, ValueError):  # further back than a date can be: everything
            return _dt.datetime.min.replace(tzinfo=_dt.UTC)
    value = parse_time(text)
    if value is None:
        raise ValueError(f"cannot read `{text}` as a time: use an ISO date like `2025-01-31T12:00` "
                         "or a duration like `2h`")
    return value


def read_records(path: str, where: AuditFilter | None = None) -> Iterator[dict]:
    """The records of an audit file, oldest first; unreadable lines become
    ``{"event": "corrupt", "line": N}`` records instead of stopping the reader."""
    try:
        handle = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by the `with` below
    except OSError as exc:
        raise _error(codes.AUDIT_READ_FAILED, f"cannot read the audit file `{path}`: {exc.strerror}") from None
    import fcntl
    import json

    with handle:
        fcntl.lockf(handle.fileno(), fcntl.LOCK_SH)
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not an object")
            except ValueError:
                record = {"event": "corrupt", "line": number}
            if where is None or where.keep(record):
                yield record


def summarize(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Counts by verdict and event, for the table footer."""
    out: dict[str, int] = {}
    for record in records:
        key = str(record.get("verdict") or record.get("event"))
        out[key] = out.get(key, 0) + 1
    return out
