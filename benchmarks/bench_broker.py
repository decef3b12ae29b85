"""Benchmark the network broker: what it adds to ``stockade run -- true``, and its throughput.

1. **Start-up.**  ``stockade run --policy P -- true`` (cached plan and verdict) for a policy
   with host rules (``allow pypi.org github.com``: the broker and the bridge start) against
   the same policy with ``default deny`` and no rules (no broker), interleaved, medians:
   the ratio and the added milliseconds.  The stockade here is this checkout
   (``python -m stockade`` with ``PYTHONPATH``), not an installed copy: both sides pay the
   same interpreter start, the difference is the broker's.
2. **Throughput.**  A 100 MB HTTP download from a server on the host's loopback, by curl:
   direct on the host, against inside ``stockade run`` through the broker (an
   ``allow host-loopback:PORT`` grant: bridge listener → broker → host loopback) and
   through the HTTP proxy of a broker in this process (``curl -x``); curl's own
   ``speed_download`` (start-up excluded), median of N rounds, interleaved; the ratios
   against direct.

Usage: ``python benchmarks/bench_broker.py [N]`` (default 20).  Linux with bubblewrap.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SIZE = 100 * 1024 * 1024

POLICY = """\
policy "bench"
filesystem {{
    read  /
    write $WORKSPACE
}}
network {{
    default deny
{rules}
}}
environment {{
    keep PATH HOME LANG
}}
commands {{
    unknown-effects allow
}}
"""


class _Blob:
    """An HTTP/1.0 server on the host's loopback that answers every request with SIZE bytes."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self.server.getsockname()[1]
        self.chunk = memoryview(b"\0" * (1 << 20))
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                data = conn.recv(65536)
                if not data:
                    return
                head += data
            conn.sendall(f"HTTP/1.0 200 OK\r\nContent-Length: {SIZE}\r\n\r\n".encode())
            for _ in range(SIZE // len(self.chunk)):
                conn.sendall(self.chunk)


def _median_ms(commands: dict[str, list[str]], env: dict[str, str], cwd: Path, n: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(n):
        for name, argv in commands.items():
            start = time.perf_counter()
            done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
            times[name].append((time.perf_counter() - start) * 1000)
            if done.returncode != 0:
                sys.exit(f"{name} failed: {done.stderr[-500:]}")
    return {name: statistics.median(values) for name, values in times.items()}


def _speed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"download failed: {done.stderr[-500:]}")
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Measure and print the figures."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    work = Path(tempfile.mkdtemp(prefix="stockade-bench-broker-", dir="/var/tmp"))
    blob = _Blob()
    try:
        ws = work / "ws"
        ws.mkdir()
        env = {"PATH": os.environ["PATH"], "HOME": str(work), "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT),
               "XDG_CACHE_HOME": str(work / "cache"), "XDG_STATE_HOME": str(work / "state")}
        policies = {}
        for name, rules in (("none", ""), ("hosts", "    allow pypi.org github.com"),
                            ("loopback", f"    allow localhost host-loopback:{blob.port}")):
            path = work / f"{name}.policy"
            path.write_text(POLICY.format(rules=rules))
            policies[name] = path
        run = [sys.executable, "-m", "stockade", "run", "--workspace", str(ws), "--policy"]
        commands = {"no network rules": [*run, str(policies["none"]), "--", "true"],
                    "host rules (broker)": [*run, str(policies["hosts"]), "--", "true"]}
        _median_ms(commands, env, ws, 2)  # compile and cache the plans and verdicts
        figures = _median_ms(commands, env, ws, n)
        base, broker = figures["no network rules"], figures["host rules (broker)"]
        print(f"stockade run -- true, median of {n} interleaved runs (ms):")
        print(f"  no network rules       {base:8.1f}")
        print(f"  host rules (broker)    {broker:8.1f}   ×{broker / base:.2f}   +{broker - base:.1f} ms")

        curl = ["curl", "-s", "-o", "/dev/null", "-w", "%{speed_download}\n"]
        url = f"http://127.0.0.1:{blob.port}/"
        from stockade.compiler.pipeline import compile_policy
        from stockade.runtime.broker import Broker

        ir = compile_policy(str(policies["loopback"]), workspace=str(ws), home=str(work), tmpdir=str(work)).ir
        local = Broker(lambda: ir)
        _, fd = local.start(["true"])
        bridge = socket.socket(fileno=fd)
        listeners = [socket.create_server(("127.0.0.1", 0)) for _ in local.addresses()]
        bridge.sendmsg([b"L"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                 b"".join(s.fileno().to_bytes(4, sys.byteorder) for s in listeners))])
        bridge.recv(1)
        proxy = f"http://127.0.0.1:{listeners[0].getsockname()[1]}"
        sandboxed = [*run, str(policies["loopback"]), "--", *curl, url]
        subprocess.run(sandboxed, env=env, cwd=ws, capture_output=True)  # cache the plan
        speeds: dict[str, list[float]] = {"direct": [], "stockade run, through the broker": [],
                                          "broker in-process (curl -x)": []}
        rounds = max(n // 2, 5)
        for _ in range(rounds):
            speeds["direct"].append(_speed([*curl, "--noproxy", "*", url], env, ws))
            speeds["stockade run, through the broker"].append(_speed(sandboxed, env, ws))
            speeds["broker in-process (curl -x)"].append(
                _speed([*curl, "-x", proxy, url], env, ws))
        local.stop()
        direct = statistics.median(speeds["direct"])
        print(f"100 MB download on loopback, curl speed_download, median of {rounds} rounds (MB/s):")
        for name, values in speeds.items():
            speed = statistics.median(values)
            print(f"  {name:34s} {speed / 1e6:8.0f}   {speed / direct * 100:5.0f} %")
    finally:
        blob.server.shutdown(socket.SHUT_RDWR)
        blob.server.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
