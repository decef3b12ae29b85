"""``stockade.run`` from a threaded host: 8 threads at once, 200 runs, while other threads
of the host keep locks busy — no run hangs, every status is right, and no limit is lost.

A child forked from a threaded process holds copies of every lock another thread held at
the fork; Python run there before the exec (a garbage collection whose finalizer takes a
lock, an import) can wait forever on one of them.  The host here makes that likely: one
thread holds a lock of its own nearly all the time, one makes garbage cycles whose
finalizers take that lock and log, one logs all the time through a handler that holds its
lock while it writes, one imports and reloads modules.  Such a hang is rare even so; what
the test checks for certain is its cause: the workload counts the forks made from Python
(``os.register_at_fork`` hooks, which ``os.fork`` runs and a fork in C does not), and
there must be none.  Each run hits a limit of the policy — ``filesize``, ``processes`` (a
pids cgroup as root, ``RLIMIT_NPROC`` otherwise), ``timeout``, ``disk`` (mounted by the
pre-exec helper) — and must be stopped by it every time: a limit set in the wrong process,
or too late, shows as a run that was not stopped.

The workload runs in a subprocess with a private HOME, workspace, cache and state, under
an overall timeout: a deadlock fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runtime.conftest import box_root

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")

ROOT = Path(__file__).resolve().parents[2]
RUNS = 200
THREADS = 8

def _policy(limits: str) -> str:
    return ('policy "threaded"\n\nfilesystem {\n    read  /\n    deny  ~/.ssh\n    write $WORKSPACE $TMPDIR\n}\n\n'
            f"limits {{\n{limits}\n}}\n\ncommands {{\n    unknown-effects allow\n}}\n")


#: The policies: the short timeout in a policy of its own (a loaded machine may take seconds
#: for the other runs, which must not be cut short).
POLICIES = {"limits": _policy("    filesize  1MiB\n    processes 16\n    timeout   120s"),
            "timeout": _policy("    timeout 2s"), "disk": _policy("    disk 1MiB\n    timeout 120s")}
#: One command per limit; each hits it on every run.
COMMANDS = {
    "file_size": 'head -c 2M /dev/zero > "big-$$"; echo "rc=$?"; rm -f "big-$$"',
    "processes": "i=0; while [ $i -lt 40 ]; do sleep 0.3 & i=$((i+1)); done; wait; echo all-forked",
    "timeout": "sleep 30; echo not-stopped",
    # the `disk` layer is mounted by the pre-exec helper: the other way of spawning
    "disk": 'head -c 2M /dev/zero > "$TMPDIR/big-$$"; echo "rc=$?"',
}


def workload(root: str, runs: int, threads: int) -> None:
    """Run ``runs`` commands through :func:`stockade.run` on ``threads`` threads while other
    threads keep the logging, import and allocator machinery busy; print one JSON line of
    results.  Runs in the subprocess the test starts."""
    import gc
    import importlib
    import logging
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    import stockade

    home, workspace, tmpdir = Path(root, "home"), Path(root, "home", "ws"), Path(root, "tmp")
    for path in (workspace, tmpdir, home / ".ssh"):
        path.mkdir(parents=True, exist_ok=True)
    for name, text in POLICIES.items():
        Path(root, f"{name}.policy").write_text(text)
    environ = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(tmpdir), "LANG": "C.UTF-8"}
    audit = str(Path(root, "audit.jsonl"))

    class SlowHandler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:  # holds the handler's lock meanwhile
            time.sleep(0.0005)

    log = logging.getLogger("host")
    log.addHandler(SlowHandler())
    log.setLevel(logging.INFO)
    log.propagate = False
    stop = threading.Event()

    held = threading.Lock()  # a lock of the host's own: nothing re-initialises it in a forked child

    class Finalized:
        def __init__(self) -> None:
            self.cycle = self

        def __del__(self) -> None:
            with held:
                log.info("finalized")

    def holder() -> None:
        while not stop.is_set():
            with held:
                time.sleep(0.002)
            time.sleep(0)

    def logger() -> None:
        while not stop.is_set():
            log.info("busy")

    def garbage() -> None:
        while not stop.is_set():
            for _ in range(200):
                Finalized()
            gc.collect(0)
            time.sleep(0)

    def importer() -> None:
        names = ["json", "csv", "fractions", "colorsys", "textwrap"]
        while not stop.is_set():
            for name in names:
                importlib.reload(importlib.import_module(name))

    forks: list[int] = []  # Python-level forks (os.fork runs these hooks; a fork in C does not)
    os.register_at_fork(before=lambda: forks.append(threading.get_ident()))
    busy = [threading.Thread(target=f, daemon=True) for f in (logger, garbage, importer, holder)]
    for thread in busy:
        thread.start()

    def one(index: int) -> dict:
        kind = list(COMMANDS)[index % len(COMMANDS)]
        out, err = bytearray(), bytearray()
        policy = Path(root, f"{kind if kind in POLICIES else 'limits'}.policy")
        outcome = stockade.run(COMMANDS[kind], policy=str(policy), workspace=str(workspace), approve=True,
                               audit=audit, environ=environ, stdout=out.extend, stderr=err.extend)
        return {"kind": kind, "ran": outcome.ran, "exit_status": outcome.exit_status,
                "limits_hit": list(outcome.limits_hit), "duration": outcome.duration, "out": out.decode("utf-8", "replace")[-300:],
                "err": err.decode("utf-8", "replace")[-300:]}

    try:
        for index in range(len(COMMANDS)):  # the plans compiled and cached once, as a host's first runs do
            one(index)
        forks.clear()
        with ThreadPoolExecutor(threads) as pool:
            results = list(pool.map(one, range(runs)))
    finally:
        stop.set()
        for thread in busy:
            thread.join()
    print("RESULTS " + json.dumps({"runs": results, "python_forks": len(forks)}), flush=True)


def test_runs_from_eight_threads_finish_with_their_limits(tmp_path: Path) -> None:
    root = box_root()
    env = {key: value for key, value in os.environ.items() if not key.startswith("STOCKADE_")}
    env.update(HOME=str(Path(root, "home")), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"), PYTHONPATH=str(ROOT))
    code = (f"from tests.runtime.test_threaded_spawn import workload; "
            f"workload({str(root)!r}, {RUNS}, {THREADS})")
    try:
        done = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), env=env, capture_output=True,
                              text=True, timeout=900)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"the threaded workload did not finish (deadlock?): {str(expired.stderr)[-2000:]}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [line for line in done.stdout.splitlines() if line.startswith("RESULTS ")][-1]
    report = json.loads(line[len("RESULTS "):])
    results = report["runs"]
    assert report["python_forks"] == 0  # no child ran Python between fork and exec
    assert len(results) == RUNS and all(result["ran"] for result in results)
    wrong = []
    for result in results:
        kind, hits, status = result["kind"], result["limits_hit"], result["exit_status"]
        if kind == "file_size":
            ok = hits == ["file_size"] and status == 0 and "rc=153" in result["out"]  # 128 + SIGXFSZ
        elif kind == "processes":
            ok = hits == ["processes"] and "all-forked" not in result["out"]
        elif kind == "disk":
            ok = hits == ["disk"] and status == 0 and "rc=1" in result["out"]  # ENOSPC
        else:
            ok = hits == ["timeout"] and status == 124 and "not-stopped" not in result["out"]
        if not ok:
            wrong.append(result)
    assert not wrong, json.dumps(wrong[:3], indent=1)
    assert {result["kind"] for result in results} == set(COMMANDS)
