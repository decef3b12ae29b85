"""``stockade analyze``'s argument fast path gives exactly what argparse gives, or declines."""

from __future__ import annotations

import pytest

PLAIN = [
    ["--", "ls -la"],
    ["--", "git", "status"],
    ["--policy", "p.policy", "--", "rm -rf ~"],
    ["-p", "p.policy", "--workspace", "/w", "--home", "/h", "--tmpdir", "/t", "--cwd", "/w/sub", "--", "true"],
    ["--format", "json", "--", "cat x"],
    ["--format", "sarif", "--no-cache", "--", "cat x"],
    ["--batch"],
    ["--policy", "p", "--batch", "--no-cache"],
    ["--script", "s.sh"],
    ["--script", "s.sh", "--format", "json"],
    ["--", "--policy", "x"],
    [],
]
FALLBACK = [
    ["ls"], ["--pol", "p", "--", "true"], ["--policy=p", "--", "true"], ["-pp", "--", "true"], ["-h"],
    ["--policy", "-x", "--", "true"], ["--format", "xml", "--", "true"], ["--policy", "a", "--policy", "b"],
    ["--batch", "--batch"], ["--policy"], ["--unknown", "--", "true"], ["--script"],
]


def _argparse(argv: list[str]) -> dict | None:
    from stockade.cli.main import build_parser

    try:
        args = build_parser("analyze").parse_args(["analyze", *argv])
    except SystemExit:
        return None
    return vars(args)


@pytest.mark.parametrize("argv", PLAIN, ids=" ".join)
def test_fast_parse_matches_argparse(argv: list[str]) -> None:
    from stockade.cli.cmd_analyze import parse_fast

    fast = parse_fast(argv)
    assert fast is not None
    assert vars(fast) == _argparse(argv)


@pytest.mark.parametrize("argv", FALLBACK, ids=" ".join)
def test_fast_parse_leaves_everything_else_to_argparse(argv: list[str]) -> None:
    from stockade.cli.cmd_analyze import parse_fast

    assert parse_fast(argv) is None
