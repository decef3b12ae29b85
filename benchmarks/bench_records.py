"""The record machinery (IR nodes, effect records) measured against a baseline checkout.

Every figure is taken for both trees in the same run, **interleaved** (one run of each tree
per round, so that a noisy neighbour slows both alike), each tree on its own
``PYTHONPATH`` with its own bytecode cache, policy cache and module bundle (a user's
environment: bytecode caches are written).  Processes are timed by wall clock and by their
CPU time (user + system, from ``getrusage``), in-process figures by CPU time: on a busy
machine the CPU figures are the steadier comparison:

* cold ``python -m stockade analyze -- 'git status'`` (policy cache and module bundle
  warm), against ``python -c pass``;
* the import of :mod:`stockade.analyzer` and the walker in a fresh process (where class
  definitions are paid), and ``PolicyIR.from_json`` of the example policy;
* in-process analyzer throughput over the corpus (commands shorter than 120 characters, as
  ``bench_analyzer.py``), best of several passes;
* compiling a 10,000-rule policy (``bench_policy.make_policy``), median of three;
* cached ``stockade run -- true`` when bubblewrap can run here.

Run: ``python benchmarks/bench_records.py --baseline DIR [-n N]``; ``DIR`` is a checkout of
the code before the change (``before``), this checkout is ``after``.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Run by each tree's interpreter: prints one JSON object of figures (CPU time of the process,
#: steadier than wall time on a busy machine).
_WORKER = r'''
import json, sys, time
kind, corpus_file, policy_file, ws = sys.argv[1:5]
out = {}
if kind == "import":
    import dataclasses
    process, spent = dataclasses._process_class, [0.0, 0]
    def timed(*args, **kwargs):  # the time @dataclass takes to build each class
        start = time.process_time()
        try:
            return process(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - start
            spent[1] += 1
    dataclasses._process_class = timed
    start = time.process_time()
    import stockade.analyzer, stockade.analyzer.walker, stockade.compiler.query
    out["import_ms"] = (time.process_time() - start) * 1000
    out["dataclass_ms"], out["dataclasses"] = spent[0] * 1000, spent[1]
    dataclasses._process_class = process
    from stockade.compiler.pipeline import compile_policy
    from stockade.compiler.ir import PolicyIR
    data = compile_policy(policy_file, workspace=ws, home="/home/bench-user", tmpdir=ws).ir.to_json()
    times = []
    for _ in range(50):
        start = time.process_time()
        PolicyIR.from_json(data)
        times.append(time.process_time() - start)
    out["from_json_us"] = min(times) * 1e6
elif kind == "throughput":
    from stockade.analyzer import analyze
    from stockade.compiler.pipeline import compile_policy
    ir = compile_policy(policy_file, workspace=ws, home="/home/bench-user", tmpdir=ws).ir
    commands = [c for c in json.load(open(corpus_file)) if len(c) < 120]
    analyze("ls", ir)
    rounds, best = 5, None
    for _ in range(5):
        start = time.process_time()
        for _ in range(rounds):
            for c in commands:
                analyze(c, ir)
        took = time.process_time() - start
        best = took if best is None else min(best, took)
    out["per_second"] = rounds * len(commands) / best
    out["commands"] = len(commands)
elif kind == "compile":
    from stockade.compiler.pipeline import compile_policy
    text = open(policy_file).read()
    times = []
    for _ in range(3):
        start = time.process_time()
        compile_policy(text=text, workspace=ws, home="/home/u", environ={})
        times.append(time.process_time() - start)
    out["compile_ms"] = sorted(times)[1] * 1000
print(json.dumps(out))
'''


def _tree_env(tree: Path, scratch: Path) -> dict[str, str]:
    """The environment of one tree's processes: its code first, its own caches."""
    env = dict(os.environ, PYTHONPATH=str(tree), HOME=str(scratch / "home"), XDG_CACHE_HOME=str(scratch / "cache"),
               XDG_STATE_HOME=str(scratch / "state"), PYTHONPYCACHEPREFIX=str(scratch / "pycache"))
    for name in ("PYTHONDONTWRITEBYTECODE", "STOCKADE_CACHE_DIR", "STOCKADE_AUDIT"):
        env.pop(name, None)  # a user's environment: bytecode caches (and the module bundle) are written
    (scratch / "home").mkdir(parents=True, exist_ok=True)
    return env


def _timed(argv: list[str], env: dict[str, str] | None, cwd: str) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of one run; the run must succeed.  CPU time
    counts only the process's own work, so it is the steadier figure on a busy machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    taken = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"benchmark command failed ({done.returncode}): {argv}: {done.stderr.decode()[-400:]}")
    return taken, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def _interleaved(commands: dict[str, tuple[list[str], dict[str, str] | None]], cwd: str,
                 n: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and CPU milliseconds of each command over ``n`` interleaved rounds."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(n):
        for name, (argv, env) in commands.items():
            taken, used = _timed(argv, env, cwd)
            wall[name].append(taken)
            cpu[name].append(used)
    return ({name: statistics.median(values) for name, values in wall.items()},
            {name: statistics.median(values) for name, values in cpu.items()})


def _worker(kind: str, env: dict[str, str], files: tuple[str, str, str]) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _WORKER, kind, *files], env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        sys.exit(f"worker {kind} failed: {done.stderr[-600:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _workers(kind: str, key: str, envs: dict[str, dict[str, str]], files: tuple[str, str, str], rounds: int,
             best: str) -> dict[str, float]:
    """``key`` from ``rounds`` interleaved worker runs per tree (``best``: ``min``, ``max`` or ``median``)."""
    values: dict[str, list[float]] = {name: [] for name in envs}
    for _ in range(rounds):
        for name, env in envs.items():
            values[name].append(_worker(kind, env, files)[key])
    pick = {"min": min, "max": max, "median": statistics.median}[best]
    return {name: pick(found) for name, found in values.items()}


def _row(label: str, before: float, after: float, unit: str, higher_is_better: bool = False) -> str:
    change = (after / before - 1) * 100
    worse = -change if higher_is_better else change
    return (f"| {label} | {before:,.1f} {unit} | {after:,.1f} {unit} | {change:+.1f} % "
            f"| {'worse' if worse > 10 else 'within 10 %'} |")


def main() -> None:
    """Measure both trees and print a Markdown table."""
    args = sys.argv[1:]
    if "--baseline" not in args:
        sys.exit("usage: bench_records.py --baseline DIR [-n N]")
    baseline = Path(args[args.index("--baseline") + 1]).resolve()
    n = int(args[args.index("-n") + 1]) if "-n" in args else 20
    trees = {"before": baseline, "after": ROOT}
    work = Path(tempfile.mkdtemp(prefix="stockade-bench-records-"))
    try:
        ws = work / "ws"
        ws.mkdir()
        if shutil.which("git"):
            subprocess.run(["git", "init", "-q", str(ws)], check=True)
        envs = {name: _tree_env(tree, work / name) for name, tree in trees.items()}
        sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "analyzer")]
        from conftest import load_corpus

        corpus = work / "corpus.json"
        corpus.write_text(json.dumps([c["command"] for c in load_corpus("adversarial.jsonl")
                                      + load_corpus("benign.jsonl")]))
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_policy import make_policy

        large = work / "large.policy"
        large.write_text(make_policy(10_000))
        policy = str(ROOT / "examples" / "coding-agent.policy")
        files = (str(corpus), policy, str(ws))
        compile_files = (str(corpus), str(large), str(ws))

        analyze = [sys.executable, "-m", "stockade", "analyze", "--workspace", str(ws), "--", "git status"]
        run = [sys.executable, "-m", "stockade", "run", "--workspace", str(ws), "--", "true"]
        for env in envs.values():
            for _ in range(3):  # bytecode, the policy cache, the module bundle
                _timed(analyze, env, str(ws))
        cold, cold_cpu = _interleaved({"python -c pass": ([sys.executable, "-c", "pass"], None),
                             **{name: (analyze, env) for name, env in envs.items()}}, str(ws), n)
        imports = _workers("import", "import_ms", envs, files, max(n // 2, 5), "median")
        building = _workers("import", "dataclass_ms", envs, files, max(n // 2, 5), "median")
        classes = _workers("import", "dataclasses", envs, files, 1, "min")
        decode = _workers("import", "from_json_us", envs, files, 3, "min")
        throughput = _workers("throughput", "per_second", envs, files, 3, "max")
        compile_ms = _workers("compile", "compile_ms", envs, compile_files, 3, "min")
        runs: tuple[dict[str, float], dict[str, float]] | None = None
        bwrap_ok = shutil.which("bwrap") is not None
        if bwrap_ok:
            for env in envs.values():
                for _ in range(3):
                    done = subprocess.run(run, env=env, cwd=ws, capture_output=True, text=True, check=False)
                    if done.returncode != 0:
                        print(f"(no cached run figure: {done.stderr.strip()[-300:]})")
                        bwrap_ok = False
                        break
        if bwrap_ok:
            runs = _interleaved({name: (run, env) for name, env in envs.items()}, str(ws), n)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    floor = cold["python -c pass"]
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"median of {n} interleaved runs unless said; python -c pass {floor:.1f} ms wall, "
          f"{cold_cpu['python -c pass']:.1f} ms CPU")
    print("\n| measurement | before | after | change | |\n| --- | --- | --- | --- | --- |")
    print(_row("cold `stockade analyze -- 'git status'` (median)", cold["before"], cold["after"], "ms"))
    print(_row("  the same less `python -c pass`", cold["before"] - floor, cold["after"] - floor, "ms"))
    print(_row("  its CPU time (median)", cold_cpu["before"], cold_cpu["after"], "ms"))
    print(_row("  its CPU time less `python -c pass`'s", cold_cpu["before"] - cold_cpu["python -c pass"],
               cold_cpu["after"] - cold_cpu["python -c pass"], "ms"))
    print(_row("import analyzer + walker + query, fresh process (median)", imports["before"], imports["after"],
               "ms"))
    print(_row(f"  of which `@dataclass` building {classes['before']:.0f} / {classes['after']:.0f} classes",
               building["before"], building["after"], "ms"))
    print(_row("`PolicyIR.from_json`, example policy (best)", decode["before"], decode["after"], "µs"))
    print(_row("analyzer throughput in-process (best)", throughput["before"], throughput["after"], "cmd/s",
               higher_is_better=True))
    print(_row("compile a 10,000-rule policy (best of 3 medians)", compile_ms["before"], compile_ms["after"], "ms"))
    if runs is not None:
        print(_row("cached `stockade run -- true` (median)", runs[0]["before"], runs[0]["after"], "ms"))
        print(_row("  its CPU time (median)", runs[1]["before"], runs[1]["after"], "ms"))
    else:
        print("| cached `stockade run -- true` | not measured (bubblewrap cannot run here) | | | |")


if __name__ == "__main__":
    main()
