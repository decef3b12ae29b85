"""Analyzer speed, measured in one run and reported as figures and ratios.

1. in-process throughput on the corpus (goal ≥ 20,000 typical commands/s on one core);
2. ``stockade analyze --batch`` end to end (process start included);
3. a cold ``stockade analyze -- CMD`` process against ``python -c pass`` (goal ≤ 80 ms).

Run: ``python benchmarks/bench_analyzer.py [--venv DIR]``.  With ``--venv``, the cold process
is the ``stockade`` command installed from this checkout in a clean virtual environment
(made on first use, as ``bench_run.py`` does) and run in a user's environment (bytecode
caches written), against that environment's ``python -c
pass``; without it, this interpreter runs ``python -m stockade`` (its site-packages may
run slow ``.pth`` files on every start).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "analyzer"))


def _corpus() -> list[str]:
    from conftest import load_corpus

    return [c["command"] for c in load_corpus("adversarial.jsonl") + load_corpus("benign.jsonl")]


def _times(runs: int, fn) -> list[float]:
    """Seconds taken by each of ``runs`` calls of ``fn``."""
    taken = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        taken.append(time.perf_counter() - start)
    return taken


def _best_of(runs: int, fn) -> float:
    return min(_times(runs, fn))


def main() -> None:
    """Measure and print."""
    args = sys.argv[1:]
    venv = None
    if "--venv" in args:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_run import ensure_venv

        venv = ensure_venv(Path(args[args.index("--venv") + 1]))
    from stockade.analyzer import analyze
    from stockade.compiler.pipeline import compile_policy

    base = tempfile.mkdtemp(prefix="stockade-bench-")
    workspace, tmpdir = os.path.join(base, "ws"), os.path.join(base, "tmp")
    os.makedirs(workspace), os.makedirs(tmpdir)
    home = "/home/bench-user"
    policy = str(ROOT / "examples" / "coding-agent.policy")
    ir = compile_policy(policy, workspace=workspace, home=home, tmpdir=tmpdir).ir
    commands = _corpus()
    typical = [c for c in commands if len(c) < 120]
    analyze("ls", ir)  # warm: parser, models
    rounds = 20
    trials = _times(7, lambda: [analyze(c, ir) for _ in range(rounds) for c in typical])
    elapsed = min(trials)
    per_second = rounds * len(typical) / elapsed
    median = rounds * len(typical) / statistics.median(trials)
    print(f"in-process: {per_second:,.0f} commands/s ({elapsed / (rounds * len(typical)) * 1e6:.0f} µs each, "
          f"{len(typical)} corpus commands; best of 7, median {median:,.0f}/s); goal 20,000/s → ratio "
          f"{per_second / 20000:.2f}")
    # The loop above repeats the corpus, so the per-policy memos of path decisions are warm
    # after its first round (verdicts are never memoised).  A first pass over the corpus
    # with a policy whose tables are fresh shows the cost when every path is new.
    from stockade.compiler.ir import PolicyIR

    fresh_copies = [PolicyIR.from_json(ir.to_json()) for _ in range(7)]
    first = min(_times(1, lambda copy=copy: [analyze(c, copy) for c in typical])[0] for copy in fresh_copies)
    print(f"  first pass, fresh policy tables (no path memo warm): {len(typical) / first:,.0f} commands/s "
          f"({first / len(typical) * 1e6:.0f} µs each)")
    from conftest import load_corpus

    for name in ("benign", "adversarial"):
        part = [c["command"] for c in load_corpus(f"{name}.jsonl") if len(c["command"]) < 120]
        took = _best_of(7, lambda part=part: [analyze(c, ir) for _ in range(rounds) for c in part])
        print(f"  {name} commands only: {len(part)} commands, {rounds * len(part) / took:,.0f} commands/s")
    floor = _best_of(3, lambda: [analyze("true", ir) for _ in range(rounds * len(typical))])
    print(f"  floor, analyze('true'): {floor / (rounds * len(typical)) * 1e6:.1f} µs (per-command setup, fast "
          "path, model and judge)")
    from stockade.analyzer.fast import lex_plain, lex_quoted

    simple = [c for c in typical if lex_plain(c) is not None or lex_quoted(c) is not None]
    for label, subset, fast in (("plain and quoted commands and lists (fast path)", simple, True),
                                ("the same (tree-sitter)", simple, False),
                                ("other (tree-sitter)", [c for c in typical if c not in simple], True),
                                ("whole corpus, fast path off", typical, False)):
        took = _best_of(3, lambda fast=fast, subset=subset: [analyze(c, ir, fast_path=fast)
                                                             for _ in range(rounds) for c in subset])
        print(f"  {label}: {len(subset)} commands, {rounds * len(subset) / took:,.0f} commands/s "
              f"({took / (rounds * len(subset)) * 1e6:.0f} µs each)")

    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(base, "cache"))
    cli = [sys.executable, "-m", "stockade", "analyze", "--policy", policy, "--workspace", workspace,
           "--home", home, "--tmpdir", tmpdir]
    batch_input = "".join(json.dumps({"id": i, "command": c}) + "\n" for i, c in enumerate(commands * 50))
    subprocess.run([*cli, "--", "ls"], env=env, capture_output=True)  # fill the policy cache
    batch = _best_of(3, lambda: subprocess.run([*cli, "--batch"], input=batch_input, env=env, text=True,
                                               capture_output=True))
    count = len(commands) * 50
    print(f"batch end to end: {count} commands in {batch * 1000:.0f} ms → {count / batch:,.0f} commands/s")

    python = sys.executable
    if venv is not None:
        python = str(venv / "bin" / "python")
        cli = [str(venv / "bin" / "stockade"), *cli[3:]]
        for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"):
            env.pop(name, None)  # a user's environment: bytecode caches are written
        for _ in range(2):  # the policy cache, then the bytecode of a cached run
            subprocess.run([*cli, "--", "ls"], env=env, capture_output=True)
    baseline = _best_of(7, lambda: subprocess.run([python, "-c", "pass"]))
    cold = _best_of(7, lambda: subprocess.run([*cli, "--", "git status && rm -rf ~"], env=env,
                                              capture_output=True))
    where = f"installed in {venv}" if venv is not None else "this interpreter, python -m stockade"
    print(f"cold process ({where}): stockade analyze {cold * 1000:.0f} ms, python -c pass {baseline * 1000:.0f} ms "
          f"(ratio {cold / baseline:.2f}, overhead {(cold - baseline) * 1000:.0f} ms); goal ≤ 80 ms")


if __name__ == "__main__":
    main()
