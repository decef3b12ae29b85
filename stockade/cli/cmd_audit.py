"""``stockade audit FILE``: show an audit trail as a table, filtered.

Filters: ``--verdict allow|confirm|deny``, ``--event decision|run``, ``--since`` (ISO time
or a duration ago: ``15m``, ``2h``, ``3d``), ``--grep TEXT`` (case-insensitive, anywhere in
the record).  ``--format json`` prints the matching records as a JSON array.  Exit codes:
0 shown, 2 bad arguments or unreadable file.
"""

from __future__ import annotations

import argparse
import sys

from stockade.cli.main import EXIT_OK, EXIT_USAGE


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``audit`` parser."""
    parser = sub.add_parser("audit", help="show and filter an audit trail",
                            description="Show the JSONL audit trail written by `stockade run` as a table.")
    parser.add_argument("file", metavar="FILE", help="the audit file")
    parser.add_argument("--verdict", choices=("allow", "confirm", "deny"), help="only this verdict")
    parser.add_argument("--event", choices=("decision", "run"), help="only decisions or only runs")
    parser.add_argument("--since", metavar="WHEN", help="only records since WHEN (ISO time, or `2h`, `3d` ago)")
    parser.add_argument("--grep", metavar="TEXT", help="only records containing TEXT")
    parser.add_argument("--session", metavar="ID", help="only one agent session's records: its timeline, step by step")
    parser.add_argument("--limit", type=int, default=0, metavar="N", help="only the last N records")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.set_defaults(handler=run)


def _outcome(record: dict) -> str:
    if record.get("event") == "decision":
        return "runs" if record.get("runs") else "refused"
    status = record.get("exit_status")
    hits = record.get("limits_hit") or []
    text = f"exit {status}"
    if hits:
        text += " (" + ", ".join(hits) + ")"
    preview = record.get("preview")
    if preview:
        text += f"; preview {len(preview.get('changes', []))} change(s)" + (", applied" if preview.get("applied") else "")
    return text


def run(args: argparse.Namespace) -> int:
    """Print the filtered records."""
    from stockade.diagnostics import StockadeError
    from stockade.runtime.audit_read import AuditFilter, parse_since, read_records

    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        print(f"stockade: {exc}", file=sys.stderr)
        return EXIT_USAGE
    where = AuditFilter(verdict=args.verdict, event=args.event, since=since, grep=args.grep,
                        session=getattr(args, "session", None))
    try:
        records = list(read_records(args.file, where))
    except StockadeError as error:
        from stockade.cli.render import report_error

        report_error(error, args.format)
        return EXIT_USAGE
    if args.limit > 0:
        records = records[-args.limit:]
    if args.format == "json":
        import json

        json.dump(records, sys.stdout, indent=2)
        print()
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"audit: {args.file}", show_lines=False)
    columns = ("step", "time", "event", "verdict", "command", "outcome", "duration") if where.session else \
        ("time", "event", "verdict", "policy", "command", "outcome", "duration")
    for column in columns:
        table.add_column(column, overflow="fold", no_wrap=column in ("time", "event", "verdict"))
    style = {"allow": "green", "confirm": "yellow", "deny": "red"}
    for record in records:
        verdict = str(record.get("verdict") or "")
        duration = record.get("duration")
        when = str(record.get("time", ""))
        first = (str(record.get("step", "")),) if where.session else ()
        table.add_row(*first, f"{when[:10]} {when[11:19]}".strip(), str(record.get("event", "")),
                      f"[{style.get(verdict, '')}]{verdict}[/]" if verdict in style else verdict,
                      *(() if where.session else (str(record.get("policy") or ""),)), str(record.get("command") or ""),
                      _outcome(record) if record.get("event") != "corrupt" else f"corrupt line {record.get('line')}",
                      f"{duration * 1000:.0f} ms" if isinstance(duration, (int, float)) else "")
    console = Console(highlight=False, soft_wrap=False)
    console.print(table)
    console.print(f"{len(records)} record(s)")
    return EXIT_OK
