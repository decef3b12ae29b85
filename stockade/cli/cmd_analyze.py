"""``stockade analyze``: judge a command, a script, or a batch of commands against a policy.

Exit codes: 0 allow, 4 confirm, 1 deny, 2 usage or input error (bad policy, unreadable
script).  The compiled policy is cached on disk (keyed by the policy text's hash and the
context) so that a cold ``stockade analyze -- CMD`` does not parse the policy language.

Start-up time matters here (an agent harness may start one process per command): the cache
is the IR's JSON data in :mod:`marshal` form (no ``json`` import to read it), and the policy
compiler, ``json``, the error types and the report renderers are imported only by the paths
that use them.
"""

from __future__ import annotations

import argparse
import marshal
import os
import sys
from typing import Any

try:  # the built-in SHA-256: importing hashlib loads OpenSSL (~3 ms)
    from _sha256 import sha256
except ImportError:  # pragma: no cover - other Python builds
    from hashlib import sha256

_EXIT = {"allow": 0, "confirm": 4, "deny": 1}


def register(subparsers: Any) -> None:
    """Add the ``analyze`` subcommand."""
    parser = subparsers.add_parser("analyze", help="judge a shell command or script against a policy")
    parser.add_argument("--policy", "-p", help="policy file (default: the built-in policy)")
    parser.add_argument("--workspace", help="workspace directory (default: the current directory)")
    parser.add_argument("--home", help="home directory (default: $HOME)")
    parser.add_argument("--tmpdir", help="temporary directory (default: $TMPDIR or /tmp)")
    parser.add_argument("--cwd", help="directory the command runs in (default: the workspace)")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument("--script", metavar="FILE", help="analyze a whole script file (per-line findings)")
    parser.add_argument("--batch", action="store_true",
                        help='read JSON lines {"id", "command"} on stdin, write one JSON verdict per line')
    parser.add_argument("--no-cache", action="store_true", help="do not use the compiled-policy cache")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command (after --)")
    parser.set_defaults(handler=run)


def _cache_path(key: str) -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "stockade", f"ir-{key}.marshal")


def load_policy(args: argparse.Namespace) -> Any:
    """The compiled IR for the arguments (from the on-disk cache when it is fresh)."""
    workspace = os.path.abspath(args.workspace or os.getcwd())
    home = os.path.abspath(args.home or os.path.expanduser("~"))
    tmpdir = os.path.abspath(args.tmpdir or os.environ.get("TMPDIR") or "/tmp")
    key = None
    if not args.no_cache:
        try:
            with open(args.policy, "rb") if args.policy else _Default() as handle:
                text = handle.read()
            digest = sha256(text + b"\0" + "\0".join([workspace, home, tmpdir, str(args.policy)]).encode())
            key = digest.hexdigest()[:32]
            with open(_cache_path(key), "rb") as handle:
                data = marshal.load(handle)
            from stockade.compiler.ir import PolicyIR

            return PolicyIR.from_json(data)
        except (OSError, ValueError, KeyError, TypeError, EOFError):
            pass
    from stockade.compiler.pipeline import compile_policy

    ir = compile_policy(args.policy, workspace=workspace, home=home, tmpdir=tmpdir).ir
    if key is not None:  # includes are part of the key only via the main text
        try:
            path = _cache_path(key)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as handle:
                marshal.dump(ir.to_json(), handle)
            os.replace(tmp, path)
        except (OSError, ValueError):
            pass
    return ir


class _Default:
    """The cache key text of the built-in policy."""

    def __enter__(self) -> "_Default":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def read(self) -> bytes:
        return b"<default>"


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit code."""
    command_words = list(args.command)
    if command_words[:1] == ["--"]:
        command_words = command_words[1:]
    modes = sum([bool(command_words), bool(args.script), bool(args.batch)])
    if modes != 1:
        print("stockade analyze: give exactly one of `-- COMMAND`, `--script FILE` or `--batch`", file=sys.stderr)
        return 2
    try:
        ir = load_policy(args)
    except OSError as error:
        print(f"stockade analyze: cannot read policy: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        from stockade.diagnostics import StockadeError  # imported only when compiling failed

        if not isinstance(error, StockadeError):
            raise
        from stockade.cli.render import report_error

        report_error(error, "json" if args.format == "json" else "text")
        return 2
    from stockade.analyzer import analyze, analyze_script

    if args.batch:
        return _batch(ir, args.cwd)
    if args.script:
        try:
            with open(args.script, encoding="utf-8", errors="surrogateescape") as handle:
                text = handle.read()
        except OSError as error:
            print(f"stockade analyze: cannot read script `{args.script}`: {error.strerror}", file=sys.stderr)
            return 2
        report = analyze_script(text, ir, args.cwd)
        verdict = report.verdict
        uri = args.script
        if args.format == "json":
            import json

            data = report.to_json()
            data["file"] = uri
            print(json.dumps(data, indent=2))
            return _EXIT[verdict.decision]
    else:
        command = command_words[0] if len(command_words) == 1 else " ".join(command_words)
        verdict = analyze(command, ir, args.cwd)
        uri = "command"
    if args.format == "json":
        import json

        print(json.dumps(verdict.to_json(), indent=2))
    elif args.format == "sarif":
        import json

        from stockade.analyzer.report import to_sarif

        print(json.dumps(to_sarif([(uri, verdict)]), indent=2))
    else:
        from stockade.analyzer.report import render_text

        print(render_text(verdict, uri))
    return _EXIT[verdict.decision]


def _batch(ir: Any, cwd: str | None) -> int:
    import json

    from stockade.analyzer import analyze

    worst = "allow"
    out = sys.stdout
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        ident: Any = None
        try:
            item = json.loads(line)
            if not isinstance(item, dict):
                raise ValueError("expected a JSON object")
            ident = item.get("id")
            command = item["command"]
            if not isinstance(command, str):
                raise ValueError("`command` must be a string")
            verdict = analyze(command, ir, item.get("cwd") if isinstance(item.get("cwd"), str) else cwd)
            record = {"id": ident, "decision": verdict.decision,
                      "reasons": [reason.to_json() for reason in verdict.reasons]}
        except (ValueError, KeyError) as error:
            record = {"id": ident, "decision": "deny",
                      "reasons": [{"verdict": "deny", "code": "A498",
                                   "message": f"malformed input line {number}: {error}", "span": None, "rule": None}]}
        decision = record["decision"]
        if _EXIT[decision] and (worst == "allow" or decision == "deny"):
            worst = decision
        out.write(json.dumps(record) + "\n")
        out.flush()
    return _EXIT[worst]
