"""``stockade audit [FILE]``: show an audit trail as a table, filtered.

Without FILE (or ``--file FILE``) the default trail is read: ``$STOCKADE_AUDIT``, else
``$XDG_STATE_HOME/stockade/audit.jsonl`` — where ``stockade run`` writes.  On a terminal
the table is drawn (coloured unless ``NO_COLOR`` or ``--color never``: then no colour and
no bold); piped, it is plain columns, never wrapped or cut.

Filters: ``--verdict allow|confirm|deny``, ``--event decision|run|net`` (``net``: the
connections the network broker allowed, with byte counts, and refused, with the deciding
rule), ``--since`` (ISO time
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
    parser.add_argument("file", metavar="FILE", nargs="?",
                        help="the audit file (default: $STOCKADE_AUDIT or $XDG_STATE_HOME/stockade/audit.jsonl, "
                             "the trail `stockade run` writes)")
    parser.add_argument("--file", dest="file_option", metavar="FILE", help="the same as the FILE operand")
    parser.add_argument("--verdict", choices=("allow", "confirm", "deny"), help="only this verdict")
    parser.add_argument("--event", choices=("decision", "run", "net"),
                        help="only decisions, only runs, or only network connections (allowed and refused)")
    parser.add_argument("--since", metavar="WHEN", help="only records since WHEN (ISO time, or `2h`, `3d` ago)")
    parser.add_argument("--grep", metavar="TEXT", help="only records containing TEXT")
    parser.add_argument("--session", metavar="ID", help="only one agent session's records: its timeline, step by step")
    parser.add_argument("--limit", type=int, default=0, metavar="N", help="only the last N records")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.set_defaults(handler=run)


def _outcome(record: dict) -> str:
    if record.get("event") == "net":
        where = record.get("rule_at") or ""
        if record.get("decision") == "deny":
            rule = record.get("rule") or ""
            return f"blocked {_destination(record)}: {record.get('reason', '')}" + (
                f" ({rule} at {where})" if rule and where else "")
        if record.get("error"):
            return f"{_destination(record)}: {record['error']}"
        return (f"{_destination(record)} via {record.get('address')}: {record.get('bytes_sent', 0)} B sent, "
                f"{record.get('bytes_received', 0)} B received")
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


def _destination(record: dict) -> str:
    host, port = record.get("host"), record.get("port")
    if str(record.get("protocol", "")).startswith("dns"):  # the stub resolver's (stockade.runtime.netstub)
        return f"name lookup of {host}"
    if host == "host-loopback":
        return f"host-loopback:{port}"
    shown = f"[{host}]" if ":" in str(host) and not str(host).startswith("[") else host  # IPv6: `[::1]:443`
    return f"{shown}:{port}"


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
    if args.file is not None and args.file_option is not None:
        print("stockade: error: give the audit file once, as FILE or with `--file`", file=sys.stderr)
        return EXIT_USAGE
    if args.file is None:
        from stockade.runtime.audit import default_audit_path

        args.file = args.file_option or default_audit_path()
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
    rows = [_row(record) for record in records]
    columns = list(_COLUMNS)
    if where.session is not None:  # a session's timeline: its step instead of the policy
        index = columns.index("policy")
        columns[index] = "step"
        for row, record in zip(rows, records, strict=True):
            row[index] = str(record.get("step", ""))
    from stockade.cli.render import use_colour

    if not sys.stdout.isatty() and not use_colour(sys.stdout):  # piped: plain columns, never wrapped
        widths = [max([len(c)] + [len(row[i]) for row in rows]) for i, c in enumerate(columns)]
        print(f"audit: {args.file}")
        for row in [columns, *rows]:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        print(f"{len(records)} record(s)")
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table

    colour = use_colour(sys.stdout)
    table = Table(title=f"audit: {args.file}", show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold", no_wrap=column in ("time", "event", "verdict"))
    style = {"allow": "green", "confirm": "yellow", "deny": "red"}
    for row in rows:
        verdict = row[2]
        row[2] = f"[{style[verdict]}]{verdict}[/]" if verdict in style else verdict
        table.add_row(*row)
    # without colour no style at all (NO_COLOR means no bold either); `--color always` forces it
    console = Console(highlight=False, soft_wrap=False, color_system="auto" if colour else None,
                      force_terminal=True if colour else None)
    console.print(table)
    console.print(f"{len(records)} record(s)")
    return EXIT_OK


_COLUMNS = ("time", "event", "verdict", "policy", "command", "outcome", "duration")


def _row(record: dict) -> list[str]:
    """One table row of a record (see :data:`_COLUMNS`)."""
    duration = record.get("duration")
    when = str(record.get("time", ""))
    return [f"{when[:10]} {when[11:19]}".strip(), str(record.get("event", "")), str(record.get("verdict") or record.get("decision") or ""),
            str(record.get("policy") or ""), str(record.get("command") or ""),
            _outcome(record) if record.get("event") != "corrupt" else f"corrupt line {record.get('line')}",
            f"{duration * 1000:.0f} ms" if isinstance(duration, (int, float)) else ""]
