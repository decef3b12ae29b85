"""The analysis time of typical PowerShell and CMD commands against typical bash commands.

Run: ``python benchmarks/bench_windows_shells.py [ROUNDS]``.  Each shell's commands are
analysed in-process against ``examples/coding-agent.policy`` (Windows commands through
:func:`stockade.analyzer.winshell.analyze_shell`, bash through
:func:`stockade.analyzer.analyze`), rounds interleaved; the figure is the median time per
command of each shell, and its ratio to bash's in the same run (the goal: within 2×).  A
second table does the same with the policy compiled for Windows paths.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stockade.analyzer import analyze  # noqa: E402
from stockade.analyzer.winshell import analyze_shell  # noqa: E402
from stockade.compiler.pipeline import compile_policy  # noqa: E402

BASH = ["git status", "rm -rf build", "ls -la src | grep main", "cat README.md > notes.txt", "npm install",
        "python -m pytest -q", "cp a.txt b.txt && mv b.txt c.txt", "mkdir -p dist/lib"]
POWERSHELL = ["git status", "Remove-Item -Recurse -Force .\\build", "Get-ChildItem src | Select-String main",
              "Get-Content README.md > notes.txt", "npm install", "python -m pytest -q",
              "Copy-Item a.txt b.txt; Move-Item b.txt c.txt", "New-Item -ItemType Directory dist\\lib"]
CMD = ["git status", "rmdir /s /q build", "dir /b src | findstr main", "type README.md > notes.txt", "npm install",
       "python -m pytest -q", "copy a.txt b.txt && move b.txt c.txt", "mkdir dist\\lib"]


def per_command(commands: list[str], judge: object, rounds: int) -> float:
    """Median seconds per command over ``rounds`` passes of the list."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for command in commands:
            judge(command)  # type: ignore[operator]
        samples.append((time.perf_counter() - start) / len(commands))
    return statistics.median(samples)


def table(ir: object, title: str, rounds: int) -> None:
    shells = {
        "bash": (BASH, lambda c: analyze(c, ir)),  # type: ignore[arg-type]
        "powershell": (POWERSHELL, lambda c: analyze_shell(c, ir, None, "powershell")),  # type: ignore[arg-type]
        "cmd": (CMD, lambda c: analyze_shell(c, ir, None, "cmd")),  # type: ignore[arg-type]
    }
    for commands, judge in shells.values():  # warm up: parsers, models, policy tables
        for command in commands:
            judge(command)
    times: dict[str, list[float]] = {name: [] for name in shells}
    for _ in range(5):  # interleaved blocks
        for name, (commands, judge) in shells.items():
            times[name].append(per_command(commands, judge, max(1, rounds // 5)))
    base = statistics.median(times["bash"])
    print(f"\n{title}")
    print(f"{'shell':<12}{'µs/command':>12}{'÷ bash':>9}")
    for name in shells:
        value = statistics.median(times[name])
        print(f"{name:<12}{value * 1e6:>12.1f}{value / base:>9.2f}")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    policy = ROOT / "examples" / "coding-agent.policy"
    with tempfile.TemporaryDirectory() as base:
        workspace, home = os.path.join(base, "ws"), os.path.join(base, "home")
        os.makedirs(workspace)
        os.makedirs(home)
        ir = compile_policy(str(policy), workspace=workspace, home=home, tmpdir=base, environ={}).ir
        table(ir, f"examples/coding-agent.policy ({rounds} rounds)", rounds)
    windows = compile_policy(str(ROOT / "examples" / "windows-agent.policy"), workspace="C:\\Users\\me\\ws",
                             home="C:\\Users\\me", platform="windows", environ={}).ir
    table(windows, f"examples/windows-agent.policy compiled for Windows ({rounds} rounds)", rounds)


if __name__ == "__main__":
    main()
