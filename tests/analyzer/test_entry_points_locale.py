"""Every ``stockade analyze`` entry point holds the scanner guard under any locale (issue 13).

tree-sitter-bash's scanner reads C's ctype table out of bounds for a character above U+00FF
after ``{``; whether that segfaults depends on the locale's table (``LC_ALL=C`` or ``POSIX``
on some machines, ``C.UTF-8`` on others) and the address-space layout.  Untrusted text reached
it as bytes that are valid UTF-8 again once the parser gets them: ANSI-C escapes in pure ASCII
text (``$'\\udcf3…'``), JSON ``\\udcXX`` escapes (batch), raw bytes split by a backslash-newline
(``--script``).  Each entry point runs in a SUBPROCESS under each locale, with many code
points at once (without the guard at least one of them lands on an unmapped page), and must
answer ``deny`` with the refusal (``A400``) — not crash, not allow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCALES = ["C", "POSIX", "C.UTF-8"]
#: Code points above U+00FF across the whole range (no surrogates).
CODE_POINTS = [cp for cp in range(0x100, 0x110000, 0x1000) if not 0xD800 <= cp < 0xE000]


def _run(tmp_path: Path, locale: str, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, LC_ALL=locale, HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"), STOCKADE_CACHE_DIR=str(tmp_path / "stockade-cache"),
               NO_COLOR="1")
    env.pop("LANG", None)
    env.pop("LC_CTYPE", None)
    return subprocess.run([sys.executable, "-m", "stockade", "analyze", "--format", "json", *args], input=stdin,
                          capture_output=True, cwd=ROOT, env=env, timeout=240)


def _escaped(cp: int) -> str:
    """The UTF-8 bytes of ``cp`` as ANSI-C ``\\udcXX`` escapes (pure ASCII)."""
    return "".join(f"\\udc{byte:02x}" for byte in chr(cp).encode())


def _smuggled(cp: int) -> str:
    """The UTF-8 bytes of ``cp`` as ``surrogateescape`` characters."""
    return chr(cp).encode().decode("ascii", "surrogateescape")


def _refused(reasons: list[dict]) -> bool:
    return bool(reasons) and all(r["code"] == "A400" and "scanner bug" in r["message"] for r in reasons)


@pytest.mark.parametrize("locale", LOCALES)
def test_analyze_text_ascii_ansi_c_escapes(tmp_path: Path, locale: str) -> None:
    command = "bash -c $'" + " ".join("a{" + _escaped(cp) for cp in CODE_POINTS) + "'"
    assert command.isascii()
    result = _run(tmp_path, locale, "--", command)
    assert result.returncode == 1, result.stderr.decode(errors="replace")[-2000:]
    assert _refused(json.loads(result.stdout)["reasons"])


@pytest.mark.parametrize("locale", LOCALES)
def test_analyze_script_bytes_split_by_backslash_newline(tmp_path: Path, locale: str) -> None:
    script = tmp_path / "s.sh"
    lines = []
    for cp in CODE_POINTS:
        data = chr(cp).encode()
        lines.append(b"echo a{" + data[:1] + b"\\\n" + data[1:])
    script.write_bytes(b"\n".join(lines) + b"\n")
    result = _run(tmp_path, locale, "--script", str(script))
    assert result.returncode == 1, result.stderr.decode(errors="replace")[-2000:]
    findings = json.loads(result.stdout)["reasons"]
    assert _refused(findings) and findings[0]["line"] == 1


@pytest.mark.parametrize("locale", LOCALES)
def test_analyze_batch_json_escapes_and_nesting(tmp_path: Path, locale: str) -> None:
    lines = [json.dumps({"id": cp, "command": "echo a{" + _smuggled(cp)}) for cp in CODE_POINTS]
    assert all("\\udc" in line for line in lines)
    lines.append("[" * 100_000 + "]" * 100_000)  # nested too deeply for the JSON reader
    lines.append(json.dumps({"id": "last", "command": "ls"}))
    result = _run(tmp_path, locale, "--batch", stdin=("\n".join(lines) + "\n").encode())
    assert result.returncode == 1, result.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == len(CODE_POINTS) + 2
    for record in records[:-2]:
        assert record["decision"] == "deny" and _refused(record["reasons"]), record
    nested, last = records[-2:]
    assert nested["decision"] == "deny" and nested["reasons"][0]["code"] == "A498"
    assert "nested too deeply" in nested["reasons"][0]["message"]
    assert (last["id"], last["decision"]) == ("last", "allow")
