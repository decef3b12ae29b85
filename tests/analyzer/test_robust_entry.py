"""``stockade analyze`` (text, ``--script``, ``--batch``) on bytes that are not UTF-8 and on
malformed batch lines, in SUBPROCESSES (issue 13: no input ends a process without its answer).

A UTF-8 locale (``en_US.UTF-8``) gives Python a *strict* standard input and output: a batch
line with bytes that are not UTF-8 ended the whole batch with a traceback, and a verdict quoting
such bytes (a command, a script line) could not be printed.  ``PYTHONIOENCODING=utf-8:strict``
gives the process exactly that stdio whatever locales the machine has; ``LC_ALL=C`` is the
other way Python may read its streams.  Batch lines whose JSON Python reads but JSON does not
have (``NaN``, ``Infinity``, a number too large for a float) or whose ``cwd`` is not a string
are malformed: a ``deny`` for that line, and the batch goes on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
POLICY = str(ROOT / "examples" / "coding-agent.policy")
#: the two ways Python may set up its streams: a UTF-8 locale's strict ones, and the C locale's
STDIO = [{"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"}, {"LC_ALL": "C"}]


def _run(tmp_path: Path, extra: dict[str, str], args: list[str], stdin: bytes | None = None,
         ) -> subprocess.CompletedProcess[bytes]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"), STOCKADE_CACHE_DIR=str(tmp_path / "stockade-cache"),
               NO_COLOR="1", **extra)
    for name in ("LANG", "LC_CTYPE", *(() if "PYTHONIOENCODING" in extra else ("PYTHONIOENCODING",))):
        env.pop(name, None)
    argv = [os.fsencode(sys.executable), b"-m", b"stockade", b"analyze", b"--policy", os.fsencode(POLICY)]
    argv += [arg if isinstance(arg, bytes) else os.fsencode(arg) for arg in args]
    return subprocess.run(argv, input=stdin, capture_output=True, cwd=ROOT, env=env, timeout=240)


@pytest.mark.parametrize("stdio", STDIO, ids=["strict", "C"])
def test_batch_lines_with_bytes_that_are_not_utf8_are_judged(tmp_path: Path, stdio: dict[str, str]) -> None:
    lines = [b'{"id": 1, "command": "cat ~/.ssh/\xff\xfe"}', b'{"id": 2, "command": "echo caf\xe9"}',
             b'{"id": 3, "command": "ls"}']
    result = _run(tmp_path, stdio, ["--batch"], b"\n".join(lines) + b"\n")
    assert b"Traceback" not in result.stderr, result.stderr.decode(errors="replace")[-2000:]
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in records] == [1, 2, 3]
    assert records[0]["decision"] == "deny" and records[0]["reasons"][0]["code"] == "A402"
    assert "\udcff" in records[0]["reasons"][0]["message"]  # (the byte, as a surrogate escape)
    assert [r["decision"] for r in records[1:]] == ["allow", "allow"]
    assert result.returncode == 1


def test_batch_lines_python_reads_but_json_has_not_are_malformed(tmp_path: Path) -> None:
    lines = ['{"id": NaN, "command": "ls"}', '{"id": Infinity, "command": "ls"}', '{"id": 1e999, "command": "ls"}',
             '{"id": 4, "command": "rm -rf x", "cwd": 5}', '{"id": 5, "command": "rm -rf x", "cwd": ["/"]}',
             '{"id": 6, "command": "ls"}']
    result = _run(tmp_path, STDIO[0], ["--batch"], ("\n".join(lines) + "\n").encode())
    outputs = result.stdout.decode().splitlines()
    records = [json.loads(line, parse_constant=lambda name: pytest.fail(f"`{name}` in the output")) for line in outputs]
    assert [r["decision"] for r in records] == ["deny"] * 5 + ["allow"]
    assert all(r["reasons"][0]["code"] == "A498" for r in records[:5])
    assert "`NaN` is not JSON" in records[0]["reasons"][0]["message"]
    assert "too large" in records[2]["reasons"][0]["message"]
    assert "`cwd` must be a string" in records[3]["reasons"][0]["message"]
    assert result.returncode == 1


@pytest.mark.parametrize("stdio", STDIO, ids=["strict", "C"])
def test_a_command_with_bytes_that_are_not_utf8_is_answered(tmp_path: Path, stdio: dict[str, str]) -> None:
    for output in ("text", "json", "sarif"):
        result = _run(tmp_path, stdio, ["--format", output, "--", b"cat ~/.ssh/\xff"])
        assert b"Traceback" not in result.stderr, (output, result.stderr.decode(errors="replace")[-2000:])
        assert result.returncode == 1, output
        assert b"A402" in result.stdout and b".ssh/" in result.stdout, output


@pytest.mark.parametrize("stdio", STDIO, ids=["strict", "C"])
def test_a_script_with_bytes_that_are_not_utf8_is_answered(tmp_path: Path, stdio: dict[str, str]) -> None:
    script = tmp_path / "s.sh"
    script.write_bytes(b"echo \xff\xfe\ncat ~/.ssh/id_\xe9\nls\n")
    for output in ("text", "json"):
        result = _run(tmp_path, stdio, ["--format", output, "--script", str(script)])
        assert b"Traceback" not in result.stderr, (output, result.stderr.decode(errors="replace")[-2000:])
        assert result.returncode == 1, output
        assert b"A402" in result.stdout, output
