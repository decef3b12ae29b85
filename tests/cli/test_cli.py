"""The `stockade` command end to end: check, test, compile; exit codes; JSON; no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def stockade(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stockade", *args], capture_output=True, text=True, input=stdin,
                          cwd=cwd or ROOT, timeout=60)


def test_check_all_examples_and_the_builtin_default(tmp_path: Path) -> None:
    examples = sorted(EXAMPLES.glob("*.policy"))
    result = stockade("check", *map(str, examples), "--workspace", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("ok: ") == len(examples) >= 5
    default = stockade("check", "--workspace", str(tmp_path))
    assert default.returncode == 0 and "policy `default`" in default.stdout


def test_check_renders_located_diagnostics_with_caret(tmp_path: Path) -> None:
    bad = tmp_path / "bad.policy"
    bad.write_text('policy "b"\nfilesystem {\n    wrte /tmp\n}\n')
    result = stockade("check", str(bad))
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0] == f"{bad}:3:5: error[P107]: unknown keyword `wrte` in `filesystem`" or \
        lines[0].endswith("bad.policy:3:5: error[P107]: unknown keyword `wrte` in `filesystem`")
    assert lines[1] == "  3 |     wrte /tmp"
    assert lines[2] == "    |     ^^^^"
    assert lines[3] == "  = help: did you mean `write`?"
    assert "Traceback" not in result.stderr and "\x1b[" not in result.stderr


def test_check_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.policy"
    bad.write_text("limits {\n  memory 4Gb\n}\n")
    result = stockade("check", str(bad), "--format", "json")
    assert result.returncode == 2
    data = json.loads(result.stdout)
    diagnostic = data["results"][0]["diagnostics"][0]
    assert diagnostic["code"] == "P111" and diagnostic["span"]["line"] == 2 and diagnostic["help"]


def test_test_command_with_yaml_suite_and_failures(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("- command: git push --force origin main\n  expect: deny\n"
                     "- command: git status\n  expect: deny\n")
    result = stockade("test", str(EXAMPLES / "coding-agent.policy"), str(suite), "--workspace", str(tmp_path))
    assert result.returncode == 1
    assert result.stdout.strip().splitlines()[-1] == "7 passed, 1 failed"
    assert f"{suite}:3:3: test failed: `git status` expected deny, got allow" in result.stdout
    as_json = stockade("test", str(EXAMPLES / "coding-agent.policy"), "--format", "json", "--workspace", str(tmp_path))
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["passed"] == 6


def test_compile_ir_json_to_file(tmp_path: Path) -> None:
    out = tmp_path / "ir.json"
    result = stockade("compile", str(EXAMPLES / "team-overlay.policy"), "--target", "ir", "-o", str(out),
                      "--workspace", str(tmp_path), "--home", "/home/dev")
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["name"] == "payments-team" and len(data["layers"]) == 2
    assert data["context"]["home"] == "/home/dev"


@pytest.mark.parametrize("args", [
    ("compile", "missing.policy"),
    ("compile", "--target", "nonsense"),
    ("check", "/"),
    ("test", "examples/coding-agent.policy", "missing-suite.yaml"),
    ("frobnicate",),
])
def test_usage_and_input_errors_exit_2_without_traceback(args: tuple[str, ...]) -> None:
    result = stockade(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr


def test_no_command_prints_help() -> None:
    result = stockade()
    assert result.returncode == 2 and "usage: stockade" in result.stderr
