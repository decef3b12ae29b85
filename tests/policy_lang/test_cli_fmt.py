"""``stockade fmt`` end to end: printing, --check, --diff, --write, stdin and bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stockade.policy_lang import parse
from stockade.policy_lang.formatter import format_policy

MESSY = 'filesystem {\n  read /   # all\n      write /tmp\n}\nnetwork {\n default deny\n}\npolicy "messy"\n'
CANONICAL = 'policy "messy"\n\nfilesystem {\n    read  /  # all\n    write /tmp\n}\n\nnetwork {\n    default deny\n}\n'
BAD = 'policy "bad"\n\nfilesystem {\n    wrte /tmp\n}\n'


def fmt(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stockade", "fmt", *args], input=stdin, capture_output=True,
                          text=True, cwd=cwd, timeout=60)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"messy": tmp_path / "messy.policy", "canonical": tmp_path / "canonical.policy",
             "bad": tmp_path / "bad.policy"}
    paths["messy"].write_text(MESSY)
    paths["canonical"].write_text(CANONICAL)
    paths["bad"].write_text(BAD)
    return paths


def test_expected_canonical_text_is_what_the_formatter_gives() -> None:
    policy, _ = parse(MESSY)
    assert format_policy(policy, MESSY) == CANONICAL


def test_prints_the_canonical_form(files: dict[str, Path]) -> None:
    result = fmt(str(files["messy"]))
    assert (result.returncode, result.stdout, result.stderr) == (0, CANONICAL, "")
    assert files["messy"].read_text() == MESSY


def test_check_names_the_files_that_would_change(files: dict[str, Path]) -> None:
    result = fmt("--check", str(files["canonical"]))
    assert (result.returncode, result.stdout) == (0, "")
    result = fmt("--check", str(files["canonical"]), str(files["messy"]))
    assert result.returncode == 1
    assert str(files["messy"]) in result.stdout and str(files["canonical"]) not in result.stdout
    assert files["messy"].read_text() == MESSY


def test_diff_is_unified_and_exits_1_on_change(files: dict[str, Path]) -> None:
    result = fmt("--diff", str(files["messy"]))
    assert result.returncode == 1
    assert result.stdout.startswith(f"--- {files['messy']}\n+++ {files['messy']} (formatted)\n@@ ")
    assert "-  read /   # all\n" in result.stdout and "+    read  /  # all\n" in result.stdout
    result = fmt("--diff", str(files["canonical"]))
    assert (result.returncode, result.stdout) == (0, "")


def test_write_rewrites_in_place_keeping_the_mode(files: dict[str, Path]) -> None:
    os.chmod(files["messy"], 0o640)
    result = fmt("--write", str(files["messy"]), str(files["canonical"]))
    assert result.returncode == 0, result.stderr
    assert files["messy"].read_text() == CANONICAL
    assert files["messy"].stat().st_mode & 0o777 == 0o640
    assert f"reformatted {files['messy']}" in result.stderr and str(files["canonical"]) not in result.stderr
    assert sorted(p.name for p in files["messy"].parent.iterdir()) == ["bad.policy", "canonical.policy",
                                                                       "messy.policy"]
    assert fmt("--write", "--check", str(files["messy"])).returncode == 2  # --write excludes --check
    assert fmt("--check", str(files["messy"])).returncode == 0


def test_stdin(files: dict[str, Path]) -> None:
    result = fmt("-", stdin=MESSY)
    assert (result.returncode, result.stdout) == (0, CANONICAL)
    result = fmt("--check", "-", stdin=MESSY)
    assert (result.returncode, result.stdout) == (1, "would reformat <stdin>\n")
    result = fmt("--write", "-", stdin=MESSY)
    assert result.returncode == 2 and "standard input" in result.stderr


def test_syntax_errors_are_rendered_with_the_source_and_exit_2(files: dict[str, Path]) -> None:
    result = fmt("--write", str(files["bad"]), str(files["messy"]))
    assert result.returncode == 2
    assert f"{files['bad']}:4:5: error[P107]: unknown keyword `wrte` in `filesystem`" in result.stderr
    assert "  4 |     wrte /tmp\n" in result.stderr and "^^^^" in result.stderr
    assert "Traceback" not in result.stderr
    assert files["bad"].read_text() == BAD
    assert files["messy"].read_text() == CANONICAL  # the other file is still processed
    result = fmt("-", stdin='policy "x"\nfilesystem {\n    read "unterminated\n}\n')
    assert result.returncode == 2 and "<stdin>:3:10: error[P100]: unterminated string" in result.stderr


def test_missing_file_and_usage_errors(tmp_path: Path, files: dict[str, Path]) -> None:
    result = fmt(str(tmp_path / "missing.policy"))
    assert result.returncode == 2
    assert f"no such file `{tmp_path / 'missing.policy'}`" in result.stderr and "Traceback" not in result.stderr
    result = fmt(str(tmp_path))
    assert result.returncode == 2 and "is a directory" in result.stderr
    (tmp_path / "latin1.policy").write_bytes(b'policy "caf\xe9"\n')
    result = fmt(str(tmp_path / "latin1.policy"))
    assert result.returncode == 2 and "not UTF-8" in result.stderr
    result = fmt(str(files["messy"]), str(files["canonical"]))
    assert result.returncode == 2 and "--check" in result.stderr
    assert fmt().returncode == 2
