"""Compare source trees side by side: the same workloads, one interleaved run, ratios.

Each tree (``--tree LABEL=DIR``, the first is the reference; or ``--baseline DIR``, which
compares ``DIR`` as ``before`` with this checkout as ``after``) is copied into a temporary
directory as an installed package: ``site-packages/stockade`` with a ``RECORD`` file (so
the code fingerprint is the installed one's) and its ``bin/stockade`` launcher, compiled
with ``compileall``.  Every process runs one light virtual environment's interpreter
(no pip, stockade's dependencies on its path through a ``.pth`` line, so the development
interpreter's slow ``.pth`` files do not run) with ``PYTHONPATH`` pointing at the tree's
copy, in a user's environment (bytecode caches written), with a private ``HOME``, cache
and state.  The source trees themselves are only read.

Workloads, each run once per tree per round (the trees' order rotating every round, so a
noisy neighbour slows all of them alike); median wall time and median CPU time (user +
system of the process: on a loaded machine far steadier than wall time):

* ``python -c pass``: the interpreter's floor (the same for every tree: its ratios show the noise);
* cold ``stockade analyze -- CMD`` for a plain and a quoted command, and the Claude Code
  hook (``stockade hook claude-code``, one event on stdin) for the same two commands;
* cold ``stockade run -- true`` (cached plan and verdict), when bubblewrap works here.

Then in-process analyzer throughput over the corpus (commands under 120 characters, as
``bench_analyzer.py``) and over the verdict snapshot's commands: one warm worker process
per tree, asked in turn for one trial each (~1,200 commands, ~0.1 s); the median trial, in
commands per second of wall time and of the worker's CPU time.

The outputs of the cold commands must be the same for every tree (a difference is
printed: it is a behaviour change, not a speed figure).

Usage: ``python benchmarks/bench_compare.py --baseline DIR [--rounds N] [--throughput-rounds K] [--keep DIR]``
or ``python benchmarks/bench_compare.py --tree before=DIR1 --tree after=DIR2 [...]``; ``--keep DIR``
sets up the copies in ``DIR`` (a new directory) and leaves them there.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: A worker run in each tree's environment: compiles the policy, warms the analyzer on each
#: command list, then for each list name read on stdin analyzes the list (repeated to about
#: 1,200 commands) and writes the commands per second of wall time and of CPU time.
_WORKER = r"""
import json, sys, time
from stockade.analyzer import analyze
from stockade.compiler.pipeline import compile_policy

policy, workspace, home, tmpdir, lists_file = sys.argv[1:6]
with open(lists_file) as handle:
    lists = json.load(handle)
ir = compile_policy(policy, workspace=workspace, home=home, tmpdir=tmpdir).ir
for commands in lists.values():
    for command in commands:  # warm: parser, models, the per-policy memos
        analyze(command, ir)
print("ready", flush=True)
for line in sys.stdin:
    commands = lists[line.strip()]
    rounds = max(1, 1200 // len(commands))
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        for command in commands:
            analyze(command, ir)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(rounds * len(commands) / wall, rounds * len(commands) / max(cpu, 1e-9), flush=True)
"""


def make_venv(path: Path) -> Path:
    """A virtual environment without pip whose path holds this interpreter's site-packages
    (stockade's dependencies) as a plain ``.pth`` line; its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    deps = sysconfig.get_paths()["purelib"]
    Path(site, "stockade-bench-deps.pth").write_text(deps + "\n")
    return python


def install_copy(tree: Path, dest: Path, python: Path) -> tuple[Path, Path]:
    """Copy ``tree``'s package and launcher under ``dest`` as an installed copy; (the
    directory to put on ``PYTHONPATH``, the launcher)."""
    site = dest / "site-packages"
    shutil.copytree(tree / "stockade", site / "stockade", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    version = subprocess.run([str(python), "-c", "import stockade; print(stockade.__version__)"], check=True,
                             capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(site))).stdout.strip()
    info = site / f"stockade-{version}.dist-info"
    info.mkdir()
    files = sorted(str(p.relative_to(site)) for p in (site / "stockade").rglob("*") if p.is_file())
    (info / "RECORD").write_text("".join(f"{name},,\n" for name in files))
    launcher = dest / "bin" / "stockade"
    launcher.parent.mkdir(parents=True)
    text = (tree / "bin" / "stockade").read_text().split("\n", 1)
    launcher.write_text(f"#!{python}\n{text[1]}")
    launcher.chmod(0o755)
    subprocess.run([str(python), "-m", "compileall", "-q", str(site / "stockade")], check=True)
    return site, launcher


def bwrap_usable() -> bool:
    """Whether bubblewrap can start a sandbox here."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    done = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "true"],
                          capture_output=True)
    return done.returncode == 0


def corpus_commands() -> list[str]:
    """The corpus's commands (the shared corpus next to the checkout when present, else the
    committed copy, as ``tests/analyzer/conftest.py`` chooses)."""
    shared = ROOT.parent / "shared" / "corpus"
    where = shared if (shared / "adversarial.jsonl").exists() else ROOT / "tests" / "analyzer" / "corpus"
    commands = []
    for name in ("adversarial.jsonl", "benign.jsonl"):
        with open(where / name, encoding="utf-8") as handle:
            commands += [json.loads(line)["command"] for line in handle if line.strip()]
    return commands


def snapshot_commands() -> list[str]:
    """The verdict snapshot's commands."""
    path = ROOT / "tests" / "analyzer" / "snapshot" / "verdicts.jsonl"
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line)["command"] for line in handle if line.strip()]


def main() -> None:
    """Set up the copies, measure, print."""
    args = sys.argv[1:]
    trees: list[tuple[str, Path]] = []
    rounds, throughput_rounds = 40, 30
    keep: Path | None = None
    while args:
        option = args.pop(0)
        if option == "--tree":
            label, _, where = args.pop(0).partition("=")
            trees.append((label, Path(where).resolve()))
        elif option == "--baseline":
            trees.insert(0, ("before", Path(args.pop(0)).resolve()))
        elif option == "--rounds":
            rounds = int(args.pop(0))
        elif option == "--keep":
            keep = Path(args.pop(0)).resolve()
        elif option == "--throughput-rounds":
            throughput_rounds = int(args.pop(0))
        else:
            sys.exit(f"unknown option {option}\n{__doc__}")
    if len(trees) == 1 and trees[0][0] == "before":
        trees.append(("after", ROOT))
    if len(trees) < 2:
        sys.exit(__doc__)
    work = keep if keep is not None else Path(tempfile.mkdtemp(prefix="stockade-compare-"))
    if keep is not None:
        work.mkdir(parents=True)  # a new directory, left in place for a look at the copies
    os.chmod(work, 0o755)
    try:
        measure(trees, work, rounds, throughput_rounds)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def measure(trees: list[tuple[str, Path]], work: Path, rounds: int, throughput_rounds: int) -> None:
    """Measure every workload for every tree (see the module docstring) and print."""
    python = make_venv(work / "venv")
    home, ws, tmp = work / "home", work / "home" / "ws", work / "tmp"
    home.mkdir()
    tmp.mkdir()
    ws.mkdir()
    git = shutil.which("git")
    if git is not None:  # a workspace as an agent has one (see bench_run.make_repository)
        subprocess.run([git, "init", "-q", str(ws)], check=True)
    policy = ROOT / "examples" / "coding-agent.policy"
    analyze_opts = ["--policy", str(policy), "--workspace", str(ws), "--home", str(home), "--tmpdir", str(tmp)]
    plain, quoted = "git status", "git commit -m 'fix bug'"

    def event(command: str) -> str:
        return json.dumps({"hook_event_name": "PreToolUse", "session_id": "bench", "cwd": str(ws),
                           "tool_name": "Bash", "tool_input": {"command": command}})

    base_env = {k: v for k, v in os.environ.items()
                if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "PYTHONPATH", "PYTHONHOME")
                and not k.startswith("STOCKADE_")}
    base_env.update(HOME=str(home), TMPDIR=str(tmp), LANG="C.UTF-8")
    envs: dict[str, dict[str, str]] = {}
    launchers: dict[str, Path] = {}
    for label, tree in trees:
        site, launchers[label] = install_copy(tree, work / "trees" / label, python)
        envs[label] = dict(base_env, PYTHONPATH=str(site), XDG_CACHE_HOME=str(work / "trees" / label / "cache"),
                           XDG_STATE_HOME=str(work / "trees" / label / "state"))

    # workload → per tree: (argv, stdin)
    cold: dict[str, dict[str, tuple[list[str], str | None]]] = {}
    for name, argv_tail, stdin in (
            (f"analyze -- {plain}", ["analyze", *analyze_opts, "--", plain], None),
            (f"analyze -- {quoted}", ["analyze", *analyze_opts, "--", quoted], None),
            (f"hook claude-code ({plain})", ["hook", "claude-code", *analyze_opts], event(plain)),
            (f"hook claude-code ({quoted})", ["hook", "claude-code", *analyze_opts], event(quoted))):
        cold[name] = {label: ([str(launchers[label]), *argv_tail], stdin) for label, _ in trees}
    if bwrap_usable():
        cold["run -- true"] = {label: ([str(launchers[label]), "run", "--workspace", str(ws), "--", "true"], None)
                               for label, _ in trees}
    else:
        print("(bubblewrap cannot start a sandbox here: no `stockade run` figure)")

    outputs: dict[str, dict[str, tuple[int, str]]] = {name: {} for name in cold}
    for name, per_tree in cold.items():  # warm-up: the policy cache, then bytecode caches
        for label, (argv, stdin) in per_tree.items():
            for _ in range(3):
                done = subprocess.run(argv, input=stdin, env=envs[label], cwd=ws, capture_output=True, text=True)
            outputs[name][label] = (done.returncode, done.stdout.replace(str(work / "trees" / label), "TREE"))
    for name, answers in outputs.items():
        if len(set(answers.values())) > 1:
            print(f"!! outputs differ for {name}: " + "; ".join(f"{label}: {out!r}" for label, out in answers.items()))

    labels = [label for label, _ in trees]
    # kind ("wall", "cpu") → workload → tree → ms per run
    times: dict[str, dict[str, dict[str, list[float]]]] = {
        kind: {name: {label: [] for label in labels} for name in ["python -c pass", *cold]} for kind in ("wall", "cpu")}

    def timed(name: str, label: str, argv: list[str], stdin: str | None, env: dict[str, str]) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, input=stdin, env=env, cwd=ws, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times["wall"][name][label].append(wall * 1000)
        times["cpu"][name][label].append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)

    for index in range(rounds):
        order = labels[index % len(labels):] + labels[:index % len(labels)]
        for label in order:  # the same for every tree: a check on the noise
            timed("python -c pass", label, [str(python), "-c", "pass"], None, base_env)
        for name, per_tree in cold.items():
            for label in order:
                argv, stdin = per_tree[label]
                timed(name, label, argv, stdin, envs[label])

    lists = {"corpus": [c for c in corpus_commands() if len(c) < 120],
             "snapshot": [c for c in snapshot_commands() if len(c) < 120]}
    lists_file = work / "lists.json"
    lists_file.write_text(json.dumps(lists))
    script = work / "worker.py"
    script.write_text(_WORKER)
    workers = {label: subprocess.Popen([str(python), str(script), str(policy), str(ws), str(home), str(tmp),
                                        str(lists_file)], env=envs[label], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True) for label in labels}
    # kind → list → tree → commands/s
    speed: dict[str, dict[str, dict[str, list[float]]]] = {
        kind: {name: {label: [] for label in labels} for name in lists} for kind in ("wall", "cpu")}
    try:
        for worker in workers.values():
            if worker.stdout is None or worker.stdout.readline().strip() != "ready":
                sys.exit("a throughput worker failed to start")
        for index in range(throughput_rounds):  # one trial of each tree in turn: ~0.1 s apart
            order = labels[index % len(labels):] + labels[:index % len(labels)]
            for name in lists:
                for label in order:
                    worker = workers[label]
                    assert worker.stdin is not None and worker.stdout is not None
                    worker.stdin.write(name + "\n")
                    worker.stdin.flush()
                    wall_rate, cpu_rate = worker.stdout.readline().split()
                    speed["wall"][name][label].append(float(wall_rate))
                    speed["cpu"][name][label].append(float(cpu_rate))
    finally:
        for worker in workers.values():
            if worker.stdin is not None:
                worker.stdin.close()
            worker.wait()

    reference = labels[0]
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, uid {os.getuid()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {rounds} interleaved rounds (cold), "
          f"{throughput_rounds} (throughput)")
    for label, tree in trees:
        print(f"  {label}: {tree}")
    width = max(len(name) for name in [*cold, "python -c pass"]) + 2

    def row(name: str, values: dict[str, list[float]], pick: Any, fmt: str) -> str:
        ref = pick(values[reference])
        cells = []
        for label in labels:
            value = pick(values[label])
            cells.append(format(value, fmt) + ("" if label == reference else f" (x{value / ref:.3f})"))
        return f"{name:<{width}}" + "".join(f"{cell:>22}" for cell in cells)

    median = statistics.median
    for kind, title in (("wall", "wall"), ("cpu", "CPU (user+sys)")):
        print(f"\n{'cold process, median ' + title + ' ms':<{width}}" + "".join(f"{label:>22}" for label in labels))
        for name in times[kind]:
            print(row(name, times[kind][name], median, ".1f"))
    for kind, title in (("wall", "wall"), ("cpu", "CPU")):
        print(f"\n{'in-process commands/s of ' + title + ', median':<{width}}"
              + "".join(f"{label:>22}" for label in labels))
        for name, commands in lists.items():
            print(row(f"{name} ({len(commands)} commands)", speed[kind][name], median, ",.0f"))


if __name__ == "__main__":
    main()
