"""Benchmark ``stockade run -- true`` against bare ``bwrap … true`` and ``python -c pass``.

A user runs the installed ``stockade`` command, so the figures come from a **clean
virtual environment** with stockade installed from this checkout (``--venv DIR``, default
``$XDG_CACHE_HOME/stockade-bench/venv``, made on first use and refreshed with the current
code on every run).  The development interpreter is a poor baseline: its site-packages may
run slow ``.pth`` files on every start.

All figures are medians of N runs measured in the same run, **interleaved** (one run of
each command per round, so that a noisy neighbour slows all of them alike), after a
warm-up that fills the plan and verdict caches (in a user's environment: bytecode caches
are written); each is printed as a ratio against the baselines:

* ``python -c pass``: the venv's interpreter, the floor of any Python command;
* ``bwrap <same argv> true``: the sandbox alone, with the argv stockade uses;
* ``stockade run -- true``: cached plan and verdict (the normal repeated case); as root
  the process limit needs a pids cgroup;
* ``… as a normal user``: the same as uid 65534 (``setpriv``), where ``RLIMIT_NPROC``
  replaces the cgroup (only when run as root and ``setpriv`` exists);
* ``stockade run --no-cache -- true``: compile + analyze every time (first-run cost);
* the analyzer gate's share: ``stockade.analyzer.analyze`` in-process on ``true``.

With ``--baseline DIR`` (another checkout, e.g. the commit before a change), that tree is
installed in a second venv (``<venv>-baseline``) and its ``stockade run -- true`` is run
interleaved with the others: the line ``... baseline tree`` and the ratio ``this / baseline``.

Usage: ``python benchmarks/bench_run.py [N] [--venv DIR] [--baseline DIR]``.
"""

from __future__ import annotations

import marshal
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ensure_venv(path: Path, source: Path = ROOT) -> Path:
    """A venv at ``path`` with the checkout ``source`` installed (deps once, the code every time).
    pip builds from a temporary copy: setuptools writes ``build/`` and ``*.egg-info`` into the
    tree it builds, and ``source`` may be a read-only checkout (``--baseline``)."""
    python = path / "bin" / "python"
    with tempfile.TemporaryDirectory(prefix="stockade-bench-src-") as scratch:
        copy = Path(scratch) / "src"
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__"))
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", str(copy)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(copy)],
                       check=True, stdout=subprocess.DEVNULL)
    site = subprocess.run([str(python), "-c", "import stockade, os; print(os.path.dirname(stockade.__file__))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([str(python), "-m", "compileall", "-q", "-f", site], check=True)
    return path


def interleaved(commands: dict[str, tuple[list[str], dict]], n: int) -> dict[str, float]:
    """Median wall time (ms) of each command over ``n`` rounds; every run must succeed.

    Each value is ``(argv, options)``; ``options`` may hold ``env``, ``cwd``, and ``seccomp``
    (a run plan whose seccomp programs are put on fresh descriptors before each run,
    outside the timing, as ``stockade run`` does).
    """
    from stockade.runtime.sandbox import supply_seccomp

    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(n):
        for name, (argv, options) in commands.items():
            plan = options.get("seccomp")
            run_argv, fds = supply_seccomp(argv, (), plan.get("seccomp")) if plan else (argv, [])
            start = time.perf_counter()
            done = subprocess.run(run_argv, env=options.get("env"), cwd=options.get("cwd"), pass_fds=fds,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
            times[name].append((time.perf_counter() - start) * 1000)
            for fd in fds:
                os.close(fd)
            if done.returncode != 0:
                sys.exit(f"benchmark command failed ({done.returncode}): {name}: {done.stderr.decode()[-400:]}")
    return {name: statistics.median(values) for name, values in times.items()}


def make_repository(path: Path) -> None:
    """A workspace as a coding agent has one: a git repository.  (The policy protects
    ``.git/config`` and ``.git/hooks``; in an empty directory bubblewrap would have to make
    mount points for them on every run, and the bare ``bwrap`` runs would leave theirs
    behind, changing the workspace between the commands compared.)"""
    path.mkdir(parents=True)
    git = shutil.which("git")
    if git is not None:
        subprocess.run([git, "init", "-q", str(path)], check=True)
    else:
        (path / ".git" / "hooks").mkdir(parents=True)
        (path / ".git" / "config").write_text("[core]\n")


def normal_user_setup(work: Path, stockade: Path, env: dict, name: str = "nobody") -> tuple[list[str], dict] | None:
    """The cached ``stockade run -- true`` as uid 65534 (home ``work/name``), or None when that
    cannot be set up."""
    setpriv = shutil.which("setpriv")
    if os.getuid() != 0 or setpriv is None:
        return None
    home = work / name
    ws = home / "ws"
    make_repository(ws)
    for path in (home, *home.rglob("*")):
        os.chown(path, 65534, 65534)
    user_env = {"PATH": env["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--", str(stockade), "run",
            "--workspace", str(ws), "--", "true"]
    warm = subprocess.run(argv, env=user_env, cwd=ws, capture_output=True, text=True)
    if warm.returncode != 0:
        print(f"  (no normal-user figure: {warm.stderr.strip()[-200:]})")
        return None
    return argv, {"env": user_env, "cwd": str(ws)}


def main() -> None:
    """Run the benchmark and print the figures."""
    args = sys.argv[1:]
    venv_dir = None
    if "--venv" in args:
        at = args.index("--venv")
        venv_dir = Path(args[at + 1])
        del args[at:at + 2]
    baseline_dir = None
    if "--baseline" in args:
        at = args.index("--baseline")
        baseline_dir = Path(args[at + 1]).resolve()
        del args[at:at + 2]
    n = int(args[0]) if args else 30
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = ensure_venv(venv_dir or base / "stockade-bench" / "venv")
    python, stockade = venv / "bin" / "python", venv / "bin" / "stockade"
    old_stockade = None
    if baseline_dir is not None:
        old_venv = ensure_venv(venv.with_name(venv.name + "-baseline"), baseline_dir)
        old_stockade = old_venv / "bin" / "stockade"
    work = Path(tempfile.mkdtemp(prefix="stockade-bench-"))
    os.chmod(work, 0o755)
    try:
        env = dict(os.environ, XDG_CACHE_HOME=str(work / "cache"), XDG_STATE_HOME=str(work / "state"))
        for name in ("STOCKADE_CACHE_DIR", "STOCKADE_AUDIT", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"):
            env.pop(name, None)  # a user's environment: bytecode caches are written
        ws = work / "ws"
        make_repository(ws)
        run = [str(stockade), "run", "--workspace", str(ws), "--", "true"]
        old_run = None if old_stockade is None else [str(old_stockade), *run[1:]]
        for _ in range(2):  # compile and cache the plan and verdict; then a cached run
            for argv in (run, old_run) if old_run else (run,):
                warm = subprocess.run(argv, env=env, cwd=ws, capture_output=True, text=True)
                if warm.returncode != 0:
                    sys.exit(f"warm-up failed: {warm.stderr}")
        plans = work / "cache" / "stockade" / "plans"
        plan = marshal.loads(max(plans.rglob("*.marshal"), key=lambda p: p.stat().st_mtime_ns).read_bytes())
        from stockade.runtime.sandbox import harden_bwrap_argv

        bwrap = harden_bwrap_argv(plan["argv"], cwd=str(ws), bwrap=shutil.which("bwrap")) + ["true"]
        commands: dict[str, tuple[list[str], dict]] = {
            "python -c pass": ([str(python), "-c", "pass"], {"env": env, "cwd": str(ws)}),
            "bwrap (same argv) true": (bwrap, {"env": {"PATH": env["PATH"]}, "cwd": str(ws), "seccomp": plan}),
            "stockade run -- true": (run, {"env": env, "cwd": str(ws)}),
        }
        if old_run is not None:
            commands["  ... baseline tree"] = (old_run, {"env": env, "cwd": str(ws)})
        user = normal_user_setup(work, stockade, env)
        if user is not None:
            commands["  ... as a normal user"] = user
        old_user = None if old_stockade is None else normal_user_setup(work, old_stockade, env, "nobody-baseline")
        if old_user is not None:
            commands["  ... baseline tree, normal user"] = old_user
        figures = interleaved(commands, n)
        uncached = run[:2] + ["--no-cache"] + run[2:]
        figures.update(interleaved({"stockade run --no-cache -- true": (uncached, {"env": env, "cwd": str(ws)})},
                                   max(n // 5, 3)))
        from stockade.compiler.ir import PolicyIR
        from stockade.runtime.plan import plan_ir_json

        ir = PolicyIR.from_json(plan_ir_json(plan))
        start = time.perf_counter()
        from stockade.analyzer import analyze

        import_ms = (time.perf_counter() - start) * 1000
        analyze("true", ir, cwd=str(ws))
        gate_times = []
        for _ in range(n):
            start = time.perf_counter()
            analyze("true", ir, cwd=str(ws))
            gate_times.append((time.perf_counter() - start) * 1000)
        gate = statistics.median(gate_times)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base_py, base_bw = figures["python -c pass"], figures["bwrap (same argv) true"]
    print(f"median wall time over {n} interleaved runs (ms), installed in {venv}; "
          f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, uid {os.getuid()}")
    for name, value in figures.items():
        print(f"  {name:<34} {value:8.1f}   x{value / base_py:5.2f} python   x{value / base_bw:6.2f} bwrap")
    if "  ... baseline tree" in figures:
        ratio = figures["stockade run -- true"] / figures["  ... baseline tree"]
        print(f"  this tree / baseline tree ({baseline_dir}): x{ratio:.3f}")
    if "  ... baseline tree, normal user" in figures and "  ... as a normal user" in figures:
        ratio = figures["  ... as a normal user"] / figures["  ... baseline tree, normal user"]
        print(f"  ... as a normal user: x{ratio:.3f}")
    overhead = figures["stockade run -- true"] - base_py - base_bw
    print(f"  stockade's own share (run - python - bwrap): {overhead:.1f} ms; goal: run <= 25 ms")
    print(f"  analyzer gate on a cache miss: import {import_ms:.1f} ms once, then {gate:.2f} ms per judgement "
          f"({gate / figures['stockade run --no-cache -- true'] * 100:.1f}% of an uncached run); "
          "a cache hit skips it (0 ms, no tree-sitter import)")


if __name__ == "__main__":
    main()
