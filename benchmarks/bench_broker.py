"""Benchmark the network broker: what it adds to ``stockade run -- true``, and its throughput.

1. **Start-up.**  ``stockade run --policy P -- true`` (cached plan and verdict) for a policy
   with host rules (``allow pypi.org github.com``: the broker starts and its listeners are
   put in the sandbox's network namespace, the connect launcher runs before the command)
   against the same policy with ``default deny`` and no rules (no broker), and the
   host-rules policy with the handoff off (``STOCKADE_HANDOFF=off``: no launcher),
   interleaved, medians: the ratio and the added milliseconds;
   as this user and, when this is root with ``setpriv``, as a normal user (uid 65534, a
   home of its own under the benchmark's directory).  The stockade here is this checkout
   (``python -m stockade`` with ``PYTHONPATH``), not an installed copy: both sides pay the
   same interpreter start, the difference is the broker's.
2. **Throughput.**  A 100 MB HTTP download from a server on the host's loopback, by curl:
   direct on the host, against inside ``stockade run`` under an ``allow host-loopback:PORT``
   grant — through the **connect handoff** (curl connects to ``127.0.0.1:PORT``; the broker
   hands it a socket of the host: no relay), through the **relay** with the handoff off
   (``STOCKADE_HANDOFF=off``: listener in the sandbox → broker → host loopback), and
   through the broker's HTTP proxy inside (``curl -x``: proxy clients always relay) — as
   this user and as the normal user, twice in one run (the first connection of a run waits
   for the broker to load the policy, ~10-25 ms); through the HTTP proxy of a broker in
   this process (``curl -x``), and — when ``socat`` is installed — through a bare relay hop
   (socat with 1 MB buffers, no policy: what any user-space relay costs); curl's own
   ``speed_download`` (bytes ÷ curl's total time for that transfer), median of N rounds,
   interleaved; the ratios against direct.

The normal user runs the interpreter that runs this benchmark when it can read it, else
``/usr/bin/python3`` of the same version with this interpreter's ``lark``, ``interegular``
and ``tree_sitter*`` packages copied next to its home.

The start-up figure is the median of the per-round differences (host rules minus no
network rules, measured next to each other in each round, in alternating order), beside
the difference of the two medians and the CPU time the host rules add (the processes'
``getrusage``: on a loaded machine, what a run waits for).  ``--against TREE`` measures another checkout of
stockade the same way in the same rounds (for instance ``main``, to see what a branch
changed); ``--startup`` measures the start-up only, ``--downloads`` the downloads only.

For the downloads on the host's side (direct, the in-process broker, socat) it also prints
where the CPU goes per 100 MB: curl's, this process's (the server, and the in-process
broker's relay) and socat's, and their total against the direct download's.

Usage: ``python benchmarks/bench_broker.py [N] [--startup | --downloads] [--against TREE]`` (default N 20).
Linux with bubblewrap.
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


def _children_cpu_ms() -> float:
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def _cpu_ms(relay_pid: int | None = None) -> tuple[float, float, float]:
    """The CPU time so far (ms) of this process (its threads: the download server, the
    in-process broker), of its waited-for children (curl), and of process ``relay_pid`` with
    its waited-for children (socat forks one per connection; clock ticks, so coarse)."""
    import resource

    mine = resource.getrusage(resource.RUSAGE_SELF)
    relay = 0.0
    if relay_pid is not None:
        try:
            fields = Path(f"/proc/{relay_pid}/stat").read_text().rsplit(")", 1)[1].split()
            relay = sum(int(value) for value in fields[11:15]) * 1000 / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
    return (mine.ru_utime + mine.ru_stime) * 1000, _children_cpu_ms(), relay


def _print_costs(costs: dict[str, list[tuple[float, float, float]]]) -> None:
    """Where the CPU of the host-side downloads goes, per 100 MB (medians): curl's, this
    process's (the server; with the in-process broker, the server and the relay) and a socat
    relay's, and the total against the direct download's.  Direct, the two processes keep
    both cores of a 2-core machine busy, so no path that needs more CPU in all can run as
    fast: the ratio of the totals bounds the speed ratio there."""
    if "direct" not in costs:
        return
    print(f"CPU per 100 MB (ms, medians; curl from getrusage, the server and the in-process broker from this "
          f"process's, socat from /proc in clock ticks), {os.cpu_count()} cores:")
    direct_total = statistics.median(sum(value) for value in costs["direct"])
    for name, values in costs.items():
        curl_ms, mine_ms, relay_ms = (statistics.median(value[i] for value in values) for i in range(3))
        total_ms = statistics.median(sum(value) for value in values)
        counted = "server + broker" if name == "broker in-process (curl -x)" else "server"
        line = f"  {name:72s} curl {curl_ms:6.1f}   {counted} {mine_ms:6.1f}"
        if relay_ms:
            line += f"   socat {relay_ms:6.1f}"
        print(f"{line}   together {total_ms:6.1f} (×{total_ms / direct_total:.2f} of direct)")


def _times_ms(commands: dict[str, tuple[list[str], dict[str, str], Path]], n: int,
              cpu: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """Each command's wall time in each of ``n`` rounds (in alternating order); with
    ``cpu``, the CPU time of its processes there too."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(n):
        for name, (argv, env, cwd) in (reversed(commands.items()) if round_ % 2 else commands.items()):
            used = _children_cpu_ms()
            start = time.perf_counter()
            done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
            times[name].append((time.perf_counter() - start) * 1000)
            if cpu is not None:
                cpu.setdefault(name, []).append(_children_cpu_ms() - used)
            if done.returncode != 0:
                sys.exit(f"{name} failed: {done.stderr[-500:]}")
    return times


def _speeds(argv: list[str], env: dict[str, str], cwd: Path) -> list[float]:
    """curl's ``speed_download`` of each transfer of ``argv``."""
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"download failed: {done.stderr[-500:]}")
    return [float(line) for line in done.stdout.split()]


AS_USER = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"]


def _normal_user(work: Path, policies: dict[str, Path]) -> tuple[list[str], dict[str, str], Path] | str:
    """The argv prefix (``setpriv … python -m stockade run --workspace WS --policy``), the
    environment and the workspace of uid 65534, or why there is none."""
    setpriv = shutil.which("setpriv")
    if os.getuid() != 0 or setpriv is None:
        return "not root, or no setpriv"
    home = work / "nobody"
    ws = home / "ws"
    ws.mkdir(parents=True)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT),
           "XDG_CACHE_HOME": str(home / "cache"), "XDG_STATE_HOME": str(home / "state"),
           "XDG_CONFIG_HOME": str(home / "config")}
    python = sys.executable
    probe = [setpriv, *AS_USER, python, "-c", "import lark, tree_sitter, stockade"]
    if subprocess.run(probe, env=env, cwd=ws, capture_output=True).returncode != 0:
        python = "/usr/bin/python3"
        same = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                              text=True).stdout.strip() == str(tuple(sys.version_info[:2]))
        if not os.path.exists(python) or not same:
            return f"uid 65534 cannot read {sys.executable}, and /usr/bin/python3 is not Python {sys.version[:4]}"
        import importlib.util

        lib = work / "pylib"
        for name in ("lark", "interegular", "tree_sitter", "tree_sitter_bash", "tree_sitter_powershell"):
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.origin is not None:
                shutil.copytree(Path(spec.origin).parent, lib / name)
        env["PYTHONPATH"] = f"{lib}:{ROOT}"
    for path in (home, *home.rglob("*"), *(work / "pylib").rglob("*")):
        os.chown(path, 65534, 65534)
    for path in (work, *policies.values()):
        os.chmod(path, 0o755)
    return [setpriv, *AS_USER, python, "-m", "stockade", "run", "--workspace", str(ws), "--policy"], env, ws


def _last_run_handoff(env: dict[str, str]) -> str:
    """The ``net_handoff`` of the last run record in the audit trail of ``env``'s state dir."""
    import json

    path = Path(env["XDG_STATE_HOME"]) / "stockade" / "audit.jsonl"
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return "unknown (no audit trail)"
    for line in reversed(lines):
        record = json.loads(line)
        if record.get("event") == "run":
            return str(record.get("net_handoff", "not recorded"))
    return "unknown"


def main() -> None:
    """Measure and print the figures."""
    args = sys.argv[1:]
    startup_only = "--startup" in args
    downloads_only = "--downloads" in args
    against = None
    if "--against" in args:
        at = args.index("--against")
        against = str(Path(args[at + 1]).resolve())
        del args[at:at + 2]
    args = [arg for arg in args if arg not in ("--startup", "--downloads")]
    n = int(args[0]) if args else 20
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
        me = f"uid {os.getuid()}"
        runs: dict[str, tuple[list[str], dict[str, str], Path]] = {
            me: ([sys.executable, "-m", "stockade", "run", "--workspace", str(ws), "--policy"], env, ws)}
        user = _normal_user(work, policies)
        if isinstance(user, str):
            print(f"(no normal-user figures: {user})")
        else:
            runs["uid 65534 (normal user)"] = user
        trees = {"": str(ROOT), **({f" [{Path(against).name}]": against} if against else {})}
        commands = {}
        for who, (run, run_env, run_ws) in runs.items():
            for tag, tree in trees.items():
                tree_env = {**run_env, "PYTHONPATH": run_env["PYTHONPATH"].replace(str(ROOT), tree)}
                commands[f"{who}{tag}: no network rules"] = ([*run, str(policies["none"]), "--", "true"], tree_env,
                                                             run_ws)
                commands[f"{who}{tag}: host rules (broker)"] = ([*run, str(policies["hosts"]), "--", "true"],
                                                                tree_env, run_ws)
                commands[f"{who}{tag}: host rules, no handoff"] = ([*run, str(policies["hosts"]), "--", "true"],
                                                                   {**tree_env, "STOCKADE_HANDOFF": "off"}, run_ws)
        if not downloads_only:
            _times_ms(commands, 2)  # compile and cache the plans and verdicts
            loads = [os.getloadavg()[0]]
            cpu: dict[str, list[float]] = {}
            times = _times_ms(commands, n, cpu)
            loads.append(os.getloadavg()[0])
            print(f"stockade run -- true, {n} interleaved rounds (ms); load average {min(loads):.2f}-{max(loads):.2f}, "
                  f"{os.cpu_count()} cores; added = median of the rounds' differences (difference of the medians):")
            for who in runs:
                for tag in trees:
                    base = times[f"{who}{tag}: no network rules"]
                    broker = times[f"{who}{tag}: host rules (broker)"]
                    relay = times[f"{who}{tag}: host rules, no handoff"]
                    added = statistics.median(b - a for a, b in zip(base, broker, strict=True))
                    added_relay = statistics.median(b - a for a, b in zip(base, relay, strict=True))
                    cpu_added = (statistics.median(cpu[f"{who}{tag}: host rules (broker)"])
                                 - statistics.median(cpu[f"{who}{tag}: no network rules"]))
                    print(f"  {who + tag:24s} no network rules {statistics.median(base):7.1f}   host rules "
                          f"{statistics.median(broker):7.1f}   added {added:+.1f} ms "
                          f"({statistics.median(broker) - statistics.median(base):+.1f}; CPU {cpu_added:+.1f})   "
                          f"without the handoff {statistics.median(relay):7.1f}, added {added_relay:+.1f} ms")
        if startup_only:
            return

        curl = ["curl", "-s", "-w", "%{speed_download}\n"]
        sink = ["-o", "/dev/null"]
        url = f"http://127.0.0.1:{blob.port}/"
        from stockade.compiler.pipeline import compile_policy
        from stockade.runtime.broker import Broker

        ir = compile_policy(str(policies["loopback"]), workspace=str(ws), home=str(work), tmpdir=str(work)).ir
        local = Broker(lambda: ir)
        listeners = [socket.create_server(("127.0.0.1", 0)) for _ in local.listen_specs()]
        local.adopt(listeners)
        local.serve()
        proxy = f"http://127.0.0.1:{listeners[0].getsockname()[1]}"
        downloads: dict[str, tuple[list[str], dict[str, str], Path]] = {
            "direct": ([*curl, "--noproxy", "*", *sink, url], env, ws)}
        if shutil.which("setsid"):  # a sandbox runs in a session (and scheduler autogroup) of its own
            downloads["direct, in a new session (setsid)"] = (["setsid", "-w", *curl, "--noproxy", "*", *sink, url],
                                                              env, ws)
        bwrap = shutil.which("bwrap")
        if bwrap:  # what a sandbox costs the download without the broker: the host's network, a session of its own
            downloads["curl in a bare bwrap (host network, new session)"] = (
                [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--new-session",
                 "--die-with-parent", "--", *curl, "--noproxy", "*", *sink, url], env, ws)
        for who, (run, run_env, run_ws) in runs.items():
            twice = [*sink, url, *sink, url]  # two in one run
            relay_env = {**run_env, "STOCKADE_HANDOFF": "off"}
            for label, argv, each_env in (
                    ("handoff", [*run, str(policies["loopback"]), "--", *curl, *twice], run_env),
                    ("relay", [*run, str(policies["loopback"]), "--", *curl, *twice], relay_env),
                    ("proxy, curl -x", [*run, str(policies["loopback"]), "--", *curl, "--noproxy", "",
                                        "-x", "http://127.0.0.1:3128", *twice], run_env)):
                downloads[f"stockade run, {label} ({who})"] = (argv, each_env, run_ws)
                done = subprocess.run(argv, env=each_env, cwd=run_ws, capture_output=True, text=True)  # cache the plan
                if done.returncode != 0:
                    sys.exit(f"{label} ({who}) failed: {done.stderr[-500:]}")
            subprocess.run([*run, str(policies["loopback"]), "--", "true"], env=run_env, cwd=run_ws)
            handoff = _last_run_handoff(run_env)
            print(f"({who}: the connect handoff is {handoff})")
        downloads["broker in-process (curl -x)"] = ([*curl, "-x", proxy, *sink, url], env, ws)
        socat = None
        if shutil.which("socat"):  # the cost of any relay hop: socat with 1 MB buffers, no policy
            with socket.create_server(("127.0.0.1", 0)) as probe:
                relay_port = probe.getsockname()[1]
            socat = subprocess.Popen(["socat", "-b", str(1 << 20), f"TCP-LISTEN:{relay_port},reuseaddr,fork",
                                      f"TCP:127.0.0.1:{blob.port}"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            downloads["a relay hop alone (socat -b 1M, no broker)"] = (
                [*curl, "--noproxy", "*", *sink, f"http://127.0.0.1:{relay_port}/"], env, ws)
        speeds: dict[str, list[float]] = {}
        costs: dict[str, list[tuple[float, float, float]]] = {}  # host-side rows: curl, this process, socat
        socat_row = "a relay hop alone (socat -b 1M, no broker)"
        host_side = {"direct", "broker in-process (curl -x)", socat_row}
        rounds = max(n // 2, 5)
        for _ in range(rounds):
            for name, (argv, run_env, run_ws) in downloads.items():
                relay_pid = socat.pid if socat is not None and name == socat_row else None
                before = _cpu_ms(relay_pid)
                got = _speeds(argv, run_env, run_ws)
                if name in host_side:
                    time.sleep(0.05)  # (the server's and the relay's threads or processes finish the connection)
                    after = _cpu_ms(relay_pid)
                    costs.setdefault(name, []).append((after[1] - before[1], after[0] - before[0],
                                                       after[2] - before[2]))
                if len(got) == 2:  # a run's first download waits for the broker to load the policy
                    speeds.setdefault(f"{name}, first download", []).append(got[0])
                    speeds.setdefault(f"{name}, second download", []).append(got[1])
                else:
                    speeds.setdefault(name, []).append(got[0])
        local.stop()
        if socat is not None:
            socat.kill()
            socat.wait()
        direct = statistics.median(speeds["direct"])
        print(f"100 MB download on loopback, curl speed_download, median of {rounds} rounds (MB/s); load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}:")
        for name, values in speeds.items():
            speed = statistics.median(values)
            print(f"  {name:72s} {speed / 1e6:8.0f}   {speed / direct * 100:5.0f} %")
        _print_costs(costs)
    finally:
        blob.server.shutdown(socket.SHUT_RDWR)
        blob.server.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
