"""CLI edges: -V/--version, `stockade help CMD`, --quiet, --color and NO_COLOR (on a real
pty), `audit` without FILE and unwrapped when piped, readable sizes, `run --cwd`, the SARIF
tool version, one JSON name for reasons, rule locations relative to the current directory,
and a clear message for a batch line without `command`."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stockade import __version__
from stockade.cli.common import size_text

ROOT = Path(__file__).resolve().parents[2]

POLICY = """policy "edges"

filesystem {
    read  /
    write $WORKSPACE $TMPDIR /tmp
}

network {
    default deny
}

commands {
    confirm git push
}
"""

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def private_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "STOCKADE_")) and k != "NO_COLOR"}
    for name in ("home", "cache", "state", "config"):
        (tmp_path / name).mkdir(exist_ok=True)
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               PYTHONPATH=str(ROOT), TERM="xterm", COLUMNS="200", **extra)
    return env


def stockade(tmp_path: Path, *args: str, stdin: str | None = None, cwd: Path | None = None,
             **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stockade", *args], capture_output=True, text=True, input=stdin,
                          cwd=cwd or tmp_path, env=private_env(tmp_path, **extra), timeout=120)


def on_pty(tmp_path: Path, *args: str, **extra: str) -> str:
    """What a terminal shows for `stockade ARGS` (stdout and stderr on a pty)."""
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.chdir(tmp_path)
            os.execvpe(sys.executable, [sys.executable, "-m", "stockade", *args], private_env(tmp_path, **extra))
        finally:
            os._exit(127)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    os.waitpid(pid, 0)
    return shown.decode("utf-8", "replace")


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "edges.policy"
    path.write_text(POLICY)
    return path


def test_version_and_help(tmp_path: Path) -> None:
    for flag in ("-V", "--version"):
        result = stockade(tmp_path, flag)
        assert (result.returncode, result.stdout.strip()) == (0, f"stockade {__version__}")
    helped = stockade(tmp_path, "help", "analyze")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: stockade analyze")
    assert helped.stdout == stockade(tmp_path, "analyze", "--help").stdout
    overview = stockade(tmp_path, "help")
    assert overview.returncode == 0 and "stockade help COMMAND" in overview.stdout
    unknown = stockade(tmp_path, "help", "anlyze")
    assert unknown.returncode == 2 and "did you mean `analyze`?" in unknown.stderr


def test_quiet_prints_only_errors_and_results(tmp_path: Path, policy: Path) -> None:
    noisy = tmp_path / "noisy.policy"
    noisy.write_text(POLICY.replace("    write $WORKSPACE $TMPDIR /tmp\n", "    write $WORKSPACE $TMPDIR /tmp\n    write /tmp\n"))
    loud = stockade(tmp_path, "check", "noisy.policy")
    assert loud.returncode == 0 and loud.stdout.startswith("ok: ")
    for args in (("-q", "check", "edges.policy"), ("check", "--quiet", "edges.policy"), ("test", "edges.policy", "-q")):
        result = stockade(tmp_path, *args)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), args
    failing = tmp_path / "failing.policy"
    failing.write_text(POLICY + 'test "t" {\n    allow "git push"\n}\n')
    result = stockade(tmp_path, "-q", "test", "failing.policy")
    assert result.returncode == 1 and "test failed" in result.stdout and "0 passed, 1 failed" in result.stdout
    assert stockade(tmp_path, "-q", "analyze", "edges.policy", "--", "git push").returncode == 4  # results stay


def test_color_flag_and_no_color(tmp_path: Path, policy: Path) -> None:
    plain = stockade(tmp_path, "analyze", "edges.policy", "--", "git push")
    assert "\x1b[" not in plain.stdout  # piped: no colour
    forced = stockade(tmp_path, "--color", "always", "analyze", "edges.policy", "--", "git push")
    assert "\x1b[1;33mconfirm\x1b[0m: 1 reason" in forced.stdout
    assert "\x1b[" in stockade(tmp_path, "check", "/nonexistent.policy", "--color=always").stderr
    bad = stockade(tmp_path, "--color", "sometimes", "check")
    assert bad.returncode == 2 and "expected auto, always or never" in bad.stderr


def test_analyze_colours_on_a_terminal_and_no_color_removes_even_bold(tmp_path: Path, policy: Path) -> None:
    shown = on_pty(tmp_path, "analyze", "edges.policy", "--", "git push")
    assert "\x1b[1;33mconfirm" in shown
    assert "\x1b[" not in on_pty(tmp_path, "analyze", "edges.policy", "--", "git push", NO_COLOR="1")
    assert "\x1b[" not in on_pty(tmp_path, "--color", "never", "analyze", "edges.policy", "--", "git push")
    trail = tmp_path / "trail.jsonl"
    trail.write_text(json.dumps({"time": "2026-12-01T10:00:00+00:00", "event": "decision", "verdict": "deny",
                                 "policy": "edges", "command": "sudo ls", "runs": False}) + "\n")
    table = on_pty(tmp_path, "audit", str(trail))
    assert "sudo ls" in table and "\x1b[" in table
    without = on_pty(tmp_path, "audit", str(trail), NO_COLOR="1")
    assert "sudo ls" in without and "\x1b[" not in without  # no colour and no bold


def test_audit_reads_the_default_trail_and_does_not_wrap_when_piped(tmp_path: Path) -> None:
    long_command = "echo " + "x" * 150 + " && git status --porcelain --untracked-files=all"
    trail = tmp_path / "state" / "stockade" / "audit.jsonl"
    trail.parent.mkdir(parents=True)
    trail.write_text(json.dumps({"time": "2026-12-01T10:00:00+00:00", "event": "decision", "verdict": "allow",
                                 "policy": "edges", "command": long_command, "runs": True}) + "\n")
    result = stockade(tmp_path, "audit")
    assert result.returncode == 0, result.stderr
    assert f"audit: {trail}" in result.stdout
    assert any(long_command in line for line in result.stdout.splitlines())  # one line, not folded at 80
    assert "1 record(s)" in result.stdout
    other = tmp_path / "other.jsonl"
    other.write_text("")
    assert "0 record(s)" in stockade(tmp_path, "audit", "--file", str(other)).stdout
    assert "0 record(s)" in stockade(tmp_path, "audit", str(other), STOCKADE_AUDIT=str(trail)).stdout
    assert "1 record(s)" in stockade(tmp_path, "audit", STOCKADE_AUDIT=str(trail)).stdout


def test_sizes_are_readable() -> None:
    assert [size_text(v) for v in (4 << 30, 512 << 20, 1500, 900, int(1.5 * (1 << 20)) + 3)] == \
        ["4GiB", "512MiB", "1.5KiB", "900B", "1.5MiB"]
    from stockade.cli.run_output import _limit_value
    from stockade.runtime.limits import Limits

    limits = Limits(memory=256 << 20)
    assert _limit_value(limits, "memory") == "256MiB"


@needs_bwrap
def test_run_cwd_starts_the_command_in_a_directory_of_the_workspace(tmp_path: Path, policy: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "pkg").mkdir(parents=True)
    result = stockade(tmp_path, "run", str(policy), "--workspace", str(workspace), "--cwd", "pkg", "--", "pwd",
                      STOCKADE_AUDIT=str(tmp_path / "audit.jsonl"))
    assert (result.returncode, result.stdout.strip()) == (0, str(workspace / "pkg")), result.stderr
    outside = stockade(tmp_path, "run", str(policy), "--workspace", str(workspace), "--cwd", str(tmp_path), "--",
                       "pwd")
    assert outside.returncode == 2 and "not a directory inside the workspace" in outside.stderr


def test_sarif_names_the_tool_version(tmp_path: Path, policy: Path) -> None:
    result = stockade(tmp_path, "analyze", "edges.policy", "--format", "sarif", "--", "git push")
    driver = json.loads(result.stdout)["runs"][0]["tool"]["driver"]
    assert driver["name"] == "stockade" and driver["version"] == __version__


def test_json_uses_reasons_for_commands_and_scripts(tmp_path: Path, policy: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text("ls\ngit push\n")
    by_script = json.loads(stockade(tmp_path, "analyze", "edges.policy", "--script", "s.sh", "--format",
                                    "json").stdout)
    by_command = json.loads(stockade(tmp_path, "analyze", "edges.policy", "--format", "json", "--",
                                     "git push").stdout)
    assert "findings" not in by_script and by_script["reasons"][0]["line"] == 2
    assert by_script["reasons"][0]["code"] == by_command["reasons"][0]["code"]


def test_rule_locations_are_relative_to_the_current_directory(tmp_path: Path, policy: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    here = stockade(tmp_path, "analyze", "-w", str(tmp_path), str(policy), "--", "git push")
    assert "at edges.policy:13" in here.stdout
    below = stockade(tmp_path, "analyze", "-w", str(tmp_path), str(policy), "--", "git push", cwd=sub)
    assert f"at {policy}:13" in below.stdout  # the same cached policy, shown from elsewhere


def test_batch_line_without_command(tmp_path: Path, policy: Path) -> None:
    lines = '{"id": 1, "command": "ls"}\n{"id": 2, "cmd": "ls"}\n{"id": 3, "command": 7}\nnot json\n'
    result = stockade(tmp_path, "analyze", "edges.policy", "--batch", stdin=lines)
    messages = [json.loads(line)["reasons"][0]["message"] if json.loads(line)["reasons"] else ""
                for line in result.stdout.splitlines()]
    assert messages[1:] == ["line 2: missing field `command`", "line 3: `command` must be a string",
                            "line 4: not JSON (Expecting value at column 1)"]


@pytest.mark.parametrize("record, shown", [
    ({"host": "github.com", "port": 443}, "github.com:443"),
    ({"host": "2001:db8::1", "port": 443}, "[2001:db8::1]:443"),
    ({"host": "[::1]", "port": 80}, "[::1]:80"),
    ({"host": "host-loopback", "port": 5432}, "host-loopback:5432"),
    ({"host": "x.test", "port": 53, "protocol": "dns"}, "name lookup of x.test"),
])
def test_audit_shows_destinations_as_clients_write_them(record: dict, shown: str) -> None:
    from stockade.cli.cmd_audit import _destination

    assert _destination(record) == shown
