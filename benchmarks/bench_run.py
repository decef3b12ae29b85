"""Benchmark ``stockade run -- true`` against bare ``bwrap … true`` and ``python -c pass``.

All figures are measured in the same run (median wall time of N runs after a warm-up that
fills the plan and verdict caches) and printed with ratios against the baselines:

* ``python -c pass`` (this interpreter, with site): the floor of any Python CLI;
* ``bwrap <cached argv> true``: the sandbox alone, with the same argv stockade uses;
* ``stockade run -- true``: cached plan and verdict (the normal repeated case);
* ``stockade run --no-cache -- true``: compile + analyze every time (first-run cost);
* the analyzer gate's share: ``stockade.analyzer.analyze`` in-process on ``true``.

Usage: ``python benchmarks/bench_run.py [N]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def median_ms(argv: list[str], n: int, env: dict[str, str], cwd: str, seccomp: bool = False) -> float:
    """Median wall time of ``argv`` in milliseconds over ``n`` runs; every run must succeed.

    With ``seccomp``, the filter is put on a fresh descriptor before each run (outside the
    timing), as ``stockade run`` does, so that bare bubblewrap runs the same sandbox.
    """
    from stockade.runtime.sandbox import supply_seccomp

    times = []
    for _ in range(n):
        run_argv, fds = supply_seccomp(argv) if seccomp else (argv, [])
        start = time.perf_counter()
        done = subprocess.run(run_argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              check=False, pass_fds=fds)
        times.append((time.perf_counter() - start) * 1000)
        for fd in fds:
            os.close(fd)
        if done.returncode != 0:
            sys.exit(f"benchmark command failed ({done.returncode}): {argv[:3]}…: {done.stderr.decode()[-300:]}")
    return statistics.median(times)


def main() -> None:
    """Run the benchmark and print the figures."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    work = tempfile.mkdtemp(prefix="stockade-bench-")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"), XDG_STATE_HOME=os.path.join(work, "state"))
    ws = os.path.join(work, "ws")
    os.mkdir(ws)
    py = sys.executable
    run = [py, "-m", "stockade", "run", "--workspace", ws, "--", "true"]
    warm = subprocess.run(run, env=env, cwd=ws, capture_output=True, text=True)
    if warm.returncode != 0:
        sys.exit(f"warm-up failed: {warm.stderr}")
    plans = os.path.join(work, "cache", "stockade", "plans")
    plan_file = next(os.path.join(d, f) for d, _, fs in os.walk(plans) for f in fs)
    with open(plan_file, encoding="utf-8") as handle:
        plan = json.load(handle)
    from stockade.runtime.sandbox import harden_bwrap_argv

    bwrap = harden_bwrap_argv(plan["argv"], cwd=ws, bwrap="/usr/bin/bwrap") + ["true"]
    figures = {
        "python -c pass": median_ms([py, "-c", "pass"], n, env, ws),
        "python -S -c pass": median_ms([py, "-S", "-c", "pass"], n, env, ws),
        "bwrap (same argv) true": median_ms(bwrap, n, env, ws, seccomp=True),
        "stockade run -- true": median_ms(run, n, env, ws),
        "stockade run --no-cache -- true": median_ms(run[:4] + ["--no-cache"] + run[4:], max(n // 5, 3), env, ws),
    }
    from stockade.compiler.ir import PolicyIR

    ir = PolicyIR.from_json(plan["ir"])
    start = time.perf_counter()
    from stockade.analyzer import analyze

    import_ms = (time.perf_counter() - start) * 1000
    analyze("true", ir, cwd=ws)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        analyze("true", ir, cwd=ws)
        times.append((time.perf_counter() - start) * 1000)
    gate = statistics.median(times)
    base_py, base_bw = figures["python -c pass"], figures["bwrap (same argv) true"]
    print(f"median wall time over {n} runs (ms); machine: {os.cpu_count()} cores, {sys.version.split()[0]}")
    for name, value in figures.items():
        print(f"  {name:<34} {value:8.1f}   x{value / base_py:5.2f} python   x{value / base_bw:6.2f} bwrap")
    overhead = figures["stockade run -- true"] - base_py - base_bw
    print(f"  stockade's own overhead (run - python - bwrap): {overhead:.1f} ms")
    print(f"  analyzer gate on a cache miss: import {import_ms:.1f} ms once, then {gate:.2f} ms per judgement "
          f"({gate / figures['stockade run --no-cache -- true'] * 100:.1f}% of an uncached run); "
          "a cache hit skips it (0 ms, no tree-sitter import)")


if __name__ == "__main__":
    main()
