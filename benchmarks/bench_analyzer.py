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

``--baseline DIR [--tree LABEL=DIR …] [--trials N]`` measures instead the in-process figures
of this checkout against other source trees (e.g. a ``git worktree`` of an earlier commit)
in one run: one worker process per tree (``PYTHONPATH`` at the tree; the corpus and policy
of this checkout), asked in turn, the trees' order rotating every trial, for one
in-process trial, one first pass with fresh policy tables, and one pass timing every
corpus command (its mean over a few runs).  It prints the best and median of each, in
the worker's CPU time (on a shared machine far steadier than wall time), and the ratios
against the baseline.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
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


def _corpus_commands() -> list[str]:
    """The corpus commands, read without ``conftest`` (a baseline tree's IR may lack its names)."""
    shared = ROOT.parent / "shared" / "corpus"
    directory = shared if (shared / "adversarial.jsonl").exists() else ROOT / "tests" / "analyzer" / "corpus"
    commands = []
    for name in ("adversarial.jsonl", "benign.jsonl"):
        with open(directory / name, encoding="utf-8") as handle:
            commands += [json.loads(line)["command"] for line in handle if line.strip()]
    return commands


def _worker() -> None:
    """``--worker``: analyze with the stockade on ``PYTHONPATH``, answering requests on stdin."""
    from stockade.analyzer import analyze
    from stockade.compiler.ir import PolicyIR
    from stockade.compiler.pipeline import compile_policy

    base = tempfile.mkdtemp(prefix="stockade-bench-")
    atexit.register(shutil.rmtree, base, True)  # (leave the machine as found)
    workspace, tmpdir = os.path.join(base, "ws"), os.path.join(base, "tmp")
    os.makedirs(workspace), os.makedirs(tmpdir)
    ir = compile_policy(str(ROOT / "examples" / "coding-agent.policy"), workspace=workspace,
                        home="/home/bench-user", tmpdir=tmpdir).ir
    commands = _corpus_commands()
    typical = [c for c in commands if len(c) < 120]
    for command in commands:
        analyze(command, ir)  # warm: parser, models
    clock = time.thread_time
    print(json.dumps({"typical": len(typical)}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "throughput":  # one trial: the corpus `rounds` times
            start = clock()
            for _ in range(request["rounds"]):
                for command in typical:
                    analyze(command, ir)
            answer: object = request["rounds"] * len(typical) / (clock() - start)
        elif request["op"] == "first":  # a first pass with fresh policy tables
            copy = PolicyIR.from_json(ir.to_json())
            start = clock()
            for command in typical:
                analyze(command, copy)
            answer = len(typical) / (clock() - start)
        else:  # "each": the sum over the whole corpus of every command's mean time (µs)
            total = 0.0
            for command in commands:
                start = clock()
                for _ in range(request["runs"]):
                    analyze(command, ir)
                total += (clock() - start) / request["runs"] * 1e6
            answer = total
        print(json.dumps(answer), flush=True)


def _compare(trees: list[tuple[str, Path]], trials: int) -> None:
    """In-process figures of every tree (the first is the baseline), interleaved (see the module docstring)."""
    workers = {}
    for label, tree in trees:
        env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
        workers[label] = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, text=True, env=env)
    for worker in workers.values():
        json.loads(worker.stdout.readline())

    def ask(label: str, request: dict) -> float:
        worker = workers[label]
        worker.stdin.write(json.dumps(request) + "\n")
        worker.stdin.flush()
        return float(json.loads(worker.stdout.readline()))

    labels = [label for label, _ in trees]
    figures: dict[str, dict[str, list[float]]] = {label: {"in-process": [], "first": [], "each": []}
                                                  for label in labels}
    for trial in range(trials):
        order = labels[trial % len(labels):] + labels[:trial % len(labels)]
        for label in order:
            figures[label]["in-process"].append(ask(label, {"op": "throughput", "rounds": 10}))
        for label in order:
            figures[label]["first"].append(ask(label, {"op": "first"}))
        for label in order:
            figures[label]["each"].append(ask(label, {"op": "each", "runs": 5}))
    for worker in workers.values():
        worker.stdin.close()
        worker.wait()
    base = figures[labels[0]]
    print(f"{trials} interleaved trials, worker CPU time; ratios against `{labels[0]}` (commands/s: higher is faster;"
          " per-command sum: lower is faster)")
    print(f"{'tree':<14} {'in-process/s best':>18} {'median':>8} {'ratio':>6}   {'first pass/s best':>17} "
          f"{'median':>7} {'ratio':>6}   {'per-command sum µs':>18} {'ratio':>6}")
    for label in labels:
        mine = figures[label]
        best, first, each = max(mine["in-process"]), max(mine["first"]), statistics.median(mine["each"])
        print(f"{label:<14} {best:>18,.0f} {statistics.median(mine['in-process']):>8,.0f} "
              f"{best / max(base['in-process']):>6.3f}   {first:>17,.0f} {statistics.median(mine['first']):>7,.0f} "
              f"{first / max(base['first']):>6.3f}   {each:>18,.0f} {each / statistics.median(base['each']):>6.3f}")


def main() -> None:
    """Measure and print."""
    args = sys.argv[1:]
    if args[:1] == ["--worker"]:
        _worker()
        return
    if "--baseline" in args:
        trees = [("baseline", Path(args[args.index("--baseline") + 1]).resolve())]
        trees += [(label, Path(tree).resolve()) for label, _, tree in
                  (args[index + 1].partition("=") for index, arg in enumerate(args) if arg == "--tree")]
        trees.append(("this checkout", ROOT))
        _compare(trees, int(args[args.index("--trials") + 1]) if "--trials" in args else 9)
        return
    venv = None
    if "--venv" in args:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_run import ensure_venv

        venv = ensure_venv(Path(args[args.index("--venv") + 1]))
    from stockade.analyzer import analyze
    from stockade.compiler.pipeline import compile_policy

    base = tempfile.mkdtemp(prefix="stockade-bench-")
    atexit.register(shutil.rmtree, base, True)  # (leave the machine as found)
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
