"""``stockade analyze``: judge a command, a script, or a batch of commands against a policy.

Exit codes: 0 allow, 4 confirm, 1 deny, 2 usage or input error (bad policy, unreadable
script).  The compiled policy comes from the compiled-policy cache shared with ``stockade
run`` (:mod:`stockade.compiler.cache`: checked against every source file, the variables the
sources mention and stockade's own code), so that a cold ``stockade analyze -- CMD`` does
not parse the policy language.

Start-up time matters here (an agent harness may start one process per command): the policy
compiler, the error types and the report renderers are imported only by the paths that use
them, and :func:`parse_fast` reads the plain forms of the arguments without ``argparse``.
"""

from __future__ import annotations

import sys

from stockade import catalogue as codes
from stockade.cli.main import FastArgs, read_plain_options

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Protocol

    class AnalyzeArgs(Protocol):
        """The parsed arguments (an ``argparse.Namespace`` or :func:`parse_fast`'s ``FastArgs``)."""

        policy: str | None
        workspace: str | None
        home: str | None
        tmpdir: str | None
        cwd: str | None
        format: str
        script: str | None
        batch: bool
        no_cache: bool
        shell: str
        platform: str | None
        command: list[str]

_EXIT = {"allow": 0, "confirm": 4, "deny": 1}


def register(subparsers: Any) -> None:
    """Add the ``analyze`` subcommand."""
    import argparse

    parser = subparsers.add_parser("analyze", help="judge a shell command or script against a policy")
    parser.add_argument("--policy", "-p", metavar="FILE",
                        help="policy file (or the POLICY operand before `--`; default: the project's, the user's "
                             "or the built-in policy)")
    parser.add_argument("--workspace", "-w", help="workspace directory (default: the current directory)")
    parser.add_argument("--home", help="home directory (default: $HOME)")
    parser.add_argument("--tmpdir", help="temporary directory (default: $TMPDIR or /tmp)")
    parser.add_argument("--cwd", help="directory the command runs in (default: the workspace)")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument("--script", metavar="FILE", help="analyze a whole script file (per-line findings)")
    parser.add_argument("--batch", action="store_true",
                        help='read JSON lines {"id", "command"} on stdin, write one JSON verdict per line')
    parser.add_argument("--no-cache", action="store_true", help="do not use the compiled-policy cache")
    parser.add_argument("--shell", choices=_SHELLS, default="bash",
                        help="the shell the text is written for (auto: told apart per command; default: bash)")
    parser.add_argument("--platform", choices=("linux", "darwin", "windows"),
                        help="compile the policy for this platform's paths (windows: `--workspace C:\\…`)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="[POLICY] -- COMMAND",
                        help="an existing `*.policy` file, then the command after `--`")
    parser.set_defaults(handler=run)


#: The options :func:`parse_fast` reads: spelling → (destination, takes a value).
_FAST_OPTIONS: dict[str, tuple[str, bool]] = {
    "--policy": ("policy", True), "-p": ("policy", True), "--workspace": ("workspace", True),
    "-w": ("workspace", True),
    "--home": ("home", True), "--tmpdir": ("tmpdir", True), "--cwd": ("cwd", True), "--format": ("format", True),
    "--script": ("script", True), "--batch": ("batch", False), "--no-cache": ("no_cache", False),
    "--shell": ("shell", True), "--platform": ("platform", True),
}
_SHELLS = ("bash", "powershell", "cmd", "auto")


def parse_fast(argv: list[str]) -> FastArgs | None:
    """The arguments after ``analyze`` parsed as :func:`register`'s parser would (the same
    attributes, ``handler`` included), without importing ``argparse`` (~10 ms of a cold
    start with building the parser) — or None, and the caller uses argparse, for anything
    but the plain forms: each option spelled in full and given once, its value the next
    word not starting with ``-``, ``--format`` text, json or sarif, then nothing, or ``--``
    and the command.  (Abbreviations, ``--opt=value``, ``-h``, a command without ``--``,
    repeated options and every error are argparse's.)"""
    values: dict[str, Any] = {"policy": None, "workspace": None, "home": None, "tmpdir": None, "cwd": None,
                              "format": "text", "script": None, "batch": False, "no_cache": False, "command": [],
                              "shell": "bash", "platform": None}
    if not read_plain_options(argv, _FAST_OPTIONS, values):
        return None
    if values["format"] not in ("text", "json", "sarif") or values["shell"] not in _SHELLS \
            or values["platform"] not in (None, "linux", "darwin", "windows"):
        return None
    return FastArgs(**values, handler=run)


def load_policy(args: AnalyzeArgs) -> Any:
    """The compiled IR for the arguments, from the compiled-policy cache when it is fresh
    (every source file, every variable the sources mention and stockade's own code must be
    unchanged: see :func:`stockade.compiler.cache.cached_ir`)."""
    if getattr(args, "platform", None):  # another platform's paths: compiled for it (not cached)
        from stockade.compiler.pipeline import compile_policy

        return compile_policy(args.policy, workspace=args.workspace, home=args.home, tmpdir=args.tmpdir,
                              platform=args.platform).ir
    from stockade.compiler import cache

    return cache.cached_ir(args.policy, workspace=args.workspace, home=args.home, tmpdir=args.tmpdir,
                           use_cache=not args.no_cache)


def run(args: AnalyzeArgs) -> int:
    """Run the subcommand; returns the exit code."""
    from stockade.cli.common import policy_choice, split_command_operands

    named, command_words = split_command_operands(args.command, args.policy)
    args.policy = policy_choice(named).path
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
    from stockade.compiler.cache import cache_warning

    warning = cache_warning()
    if warning is not None:  # an unusable cache directory: this and later answers are only slower
        print(f"stockade analyze: {warning}", file=sys.stderr)
    from stockade.analyzer import analyze, analyze_script

    shell = getattr(args, "shell", "bash")
    if shell != "bash":
        from stockade.analyzer.winshell import analyze_shell

        def analyze(command: str, ir: Any, cwd: str | None = None) -> Any:  # type: ignore[misc]
            return analyze_shell(command, ir, cwd, shell)
    if args.batch:
        return _batch(ir, args.cwd, shell)
    if args.script:
        try:
            from stockade.analyzer import MAX_SCRIPT_CHARS

            with open(args.script, encoding="utf-8", errors="surrogateescape") as handle:
                text = handle.read(MAX_SCRIPT_CHARS + 1)  # (one more: past the limit, refused; /dev/zero ends)
        except OSError as error:
            print(f"stockade analyze: cannot read script `{args.script}`: {error.strerror}", file=sys.stderr)
            return 2
        if shell != "bash":  # the whole text as that shell's (findings by position in the verdict)
            from stockade import analyzer as _analyzer

            verdict = analyze(text, ir, args.cwd)
            report = _analyzer.ScriptReport(verdict, tuple(
                _analyzer.LineFinding(*_analyzer.line_col(text, reason.span[0]), reason)
                for reason in verdict.reasons))
        else:
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

        text = render_text(verdict, uri)
        from stockade.cli.main import colour_wanted

        if colour_wanted(sys.stdout):
            from stockade.cli.render import paint_verdict_text

            text = paint_verdict_text(text)
        print(text)
    return _EXIT[verdict.decision]


def _batch(ir: Any, cwd: str | None, shell: str = "bash") -> int:
    """``--batch``: one verdict per JSON line (a line's ``shell`` field overrides ``--shell``)."""
    import json

    from stockade.analyzer import analyze
    from stockade.analyzer.winshell import SHELLS, analyze_shell
    from stockade.integrations.generic_hook import strict_json

    worst = "allow"
    out = sys.stdout
    for number, line in enumerate(_lines(sys.stdin), start=1):
        if line is not None and not line.strip():
            continue
        ident: Any = None
        try:
            if line is None:
                raise ValueError(f"longer than {MAX_BATCH_LINE_BYTES // (1024 * 1024)} MiB")
            item = strict_json(line)
            if not isinstance(item, dict):
                raise ValueError("expected a JSON object")
            ident = item.get("id")
            if "command" not in item:
                raise ValueError("missing field `command`")
            command = item["command"]
            if not isinstance(command, str):
                raise ValueError("`command` must be a string")
            line_shell = item.get("shell", shell)
            if line_shell not in SHELLS:
                raise ValueError(f"`shell` must be one of {', '.join(SHELLS)}")
            line_cwd = item.get("cwd", cwd)
            if line_cwd is not None and not isinstance(line_cwd, str):
                raise ValueError("`cwd` must be a string")
            verdict = (analyze(command, ir, line_cwd) if line_shell == "bash"
                       else analyze_shell(command, ir, line_cwd, line_shell))
            record = {"id": ident, "decision": verdict.decision,
                      "reasons": [reason.to_json() for reason in verdict.reasons]}
        except ValueError as error:
            text = str(error)
            if isinstance(error, json.JSONDecodeError):
                text = f"not JSON ({error.msg} at column {error.colno})"
            record = {"id": ident, "decision": "deny",
                      "reasons": [{"verdict": "deny", "code": codes.MALFORMED_BATCH_LINE,
                                   "message": f"line {number}: {text}", "span": None, "rule": None}]}
        decision = record["decision"]
        if _EXIT[decision] and (worst == "allow" or decision == "deny"):
            worst = decision
        out.write(json.dumps(record) + "\n")
        out.flush()
    return _EXIT[worst]


#: A batch line longer than this is answered ``deny`` (A498) unread, and the batch goes on
#: (the size of a hook event, :data:`~stockade.integrations.generic_hook.MAX_EVENT_BYTES`).
MAX_BATCH_LINE_BYTES = 16 * 1024 * 1024


def _lines(stream: Any) -> Any:
    """The lines of standard input as text, whatever the locale: bytes that are not UTF-8
    are kept as lone surrogates (judged as the bytes they are), never a decoding error that
    ends the batch; a line longer than :data:`MAX_BATCH_LINE_BYTES` is skipped unread and
    given as None (read in pieces: it is never held whole)."""
    binary = getattr(stream, "buffer", None)
    if binary is None:  # (a text stream given in place of stdin)
        for line in stream:
            yield None if len(line) > MAX_BATCH_LINE_BYTES else line
        return
    while True:
        raw = binary.readline(MAX_BATCH_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_BATCH_LINE_BYTES:
            while raw and not raw.endswith(b"\n"):  # the rest of the line, a MiB at a time
                raw = binary.readline(1 << 20)
            yield None
            continue
        yield raw.decode("utf-8", "surrogateescape")
