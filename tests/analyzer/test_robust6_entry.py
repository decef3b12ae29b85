"""``stockade analyze`` entry points with hostile input, in SUBPROCESSES under ``LC_ALL=C``
(issue 13, a second hostile review; the runner of ``test_entry_points_locale.py``).

* Batch lines a JSON reader may read in another way than the sender meant — a key given twice,
  an integer past Python's 4,300 digits — and a line past 16 MiB: each gets its own ``deny``
  (A498) with the reason, and the batch goes on (the long line is skipped in pieces, never
  held whole).
* The parser's misreadings fixed in ``test_robust6_parser.py`` through every entry point: a
  command in argv, a ``--script`` file, a batch line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.analyzer.test_entry_points_locale import _run

MISREAD = ["echo hi\n\\rm -rf ~", "cat <<E'x'\nEx\nrm -rf ~\nE'x'\n", "cat <<\u0145\n\u0145\nrm -rf ~\nE\n"]


def test_batch_lines_json_readers_disagree_on_are_denied_and_the_batch_goes_on(tmp_path: Path) -> None:
    lines = [b'{"id": 1, "command": "rm -rf ~", "command": "ls"}',
             b'{"id": 2, "command": "ls", "x": 1' + b"0" * 5000 + b"}",
             b'{"id": 3, "command": "echo ' + b"a" * (17 << 20) + b'"}',
             b'{"id": 4, "command": "ls"}']
    result = _run(tmp_path, "C", "--batch", stdin=b"\n".join(lines) + b"\n")
    assert b"Traceback" not in result.stderr, result.stderr[-2000:]
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["decision"], [x["code"] for x in r["reasons"]]) for r in records[:3]] == [("deny", ["A498"])] * 3
    assert "given twice" in records[0]["reasons"][0]["message"]
    assert "5001 digits" in records[1]["reasons"][0]["message"]
    assert records[2]["reasons"][0]["message"] == "line 3: longer than 16 MiB"
    assert (records[3]["id"], records[3]["decision"]) == (4, "allow")


def test_a_long_last_line_without_newline_is_answered(tmp_path: Path) -> None:
    data = b'{"id": 1, "command": "ls"}\n{"id": 2, "command": "' + b"x" * (17 << 20)
    result = _run(tmp_path, "C", "--batch", stdin=data)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["decision"] for r in records] == ["allow", "deny"] and result.returncode == 1


@pytest.mark.parametrize("text", MISREAD)
def test_misread_commands_are_denied_through_every_entry_point(tmp_path: Path, text: str) -> None:
    result = _run(tmp_path, "C", "--", text)
    assert result.returncode == 1 and json.loads(result.stdout)["decision"] == "deny", result.stdout
    script = tmp_path / "s.sh"
    script.write_text("echo start\n" + text + "\n", encoding="utf-8")
    result = _run(tmp_path, "C", "--script", str(script))
    assert result.returncode == 1 and json.loads(result.stdout)["decision"] == "deny", result.stdout
    result = _run(tmp_path, "C", "--batch", stdin=json.dumps({"command": text}).encode() + b"\n")
    assert result.returncode == 1 and json.loads(result.stdout)["decision"] == "deny", result.stdout
