"""Benchmark the spawn path in-process: ``run_confined`` of ``bwrap … /bin/true``, this tree
against another checkout (``--baseline DIR``), with and without a limit that needs the child
confined before it can fork (``processes``: a pids cgroup as root, ``RLIMIT_NPROC`` otherwise).

Each measurement is a fresh interpreter importing one tree and timing ``K`` runs (median);
the trees and cases are interleaved for ``R`` rounds and the medians of the rounds printed,
with the ratio this / baseline.  No CLI, no plan cache, no analyzer: only the spawn, the
output loop and the wait.

Usage: ``python benchmarks/bench_spawn.py --baseline DIR [R] [K]``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PROBE = """
import os, shutil, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from stockade.runtime.execute import run_confined
from stockade.runtime.limits import Limits

bwrap = os.path.realpath(shutil.which("bwrap"))
prefix = [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
          "--dev", "/dev", "--chdir", "/", "--"]
limits = Limits(processes=1024, timeout=600) if sys.argv[2] == "processes" else Limits(timeout=600)
times = []
for _ in range(int(sys.argv[3])):
    start = time.perf_counter()
    result = run_confined(prefix, ["/bin/true"], {"PATH": "/usr/bin:/bin"}, limits,
                          stdout=lambda b: None, stderr=lambda b: None)
    times.append((time.perf_counter() - start) * 1000)
    assert result.exit_status == 0, result
print(statistics.median(times))
"""


def main() -> None:
    """Run the benchmark and print the figures."""
    args = sys.argv[1:]
    if "--baseline" not in args:
        sys.exit(__doc__)
    at = args.index("--baseline")
    baseline = str(Path(args[at + 1]).resolve())
    del args[at:at + 2]
    rounds = int(args[0]) if args else 6
    runs = int(args[1]) if len(args) > 1 else 25
    trees = {"this tree": str(ROOT), "baseline": baseline}
    figures: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for case in ("processes", "no limit"):
            for name, tree in trees.items():
                done = subprocess.run([sys.executable, "-c", _PROBE, tree, case, str(runs)], capture_output=True,
                                      text=True, check=False)
                if done.returncode != 0:
                    sys.exit(f"{name} ({case}) failed: {done.stderr[-600:]}")
                figures.setdefault((case, name), []).append(float(done.stdout))
    print(f"run_confined(bwrap … /bin/true): median over {rounds} rounds of the median of {runs} runs (ms)")
    for case in ("processes", "no limit"):
        this, base = (statistics.median(figures[(case, name)]) for name in trees)
        print(f"  {case:<10} this tree {this:6.2f}   baseline {base:6.2f}   x{this / base:.3f}")


if __name__ == "__main__":
    main()
