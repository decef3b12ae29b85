"""Benchmark the compiler's decision API and compile time.

Prints, measured in the same run (machines are noisy, so figures are ratios against a
baseline taken alongside):

* the per-decision time of path, command and network lookups in a 10,000-rule policy
  against the same lookups in a 10-rule policy (goal: within 2×);
* the time to compile a 10,000-rule policy from text (goal: under 1 s), against compiling
  the 10-rule policy.

Run: ``python benchmarks/bench_policy.py``
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stockade.compiler.pipeline import compile_policy


def make_policy(n: int, seed: int = 7) -> str:
    """A policy with about ``n`` rules spread over filesystem, network and commands."""
    rng = random.Random(seed)
    fs = ["    read /", "    write $WORKSPACE", "    deny ~/.ssh", "    deny \"**/.env\""]
    net = ["    default deny", "    allow github.com:443"]
    cmds = ["    deny sudo", "    deny git push --force|-f", "    confirm git push", "    allow git status"]
    per = max((n - 10) // 3, 0)
    for i in range(per):
        fs.append(f"    {rng.choice(['read', 'deny', 'readonly', 'write'])} /data/d{i % 97}/sub{i}/leaf{rng.randrange(9)}")
        net.append(f"    {rng.choice(['allow', 'deny'])} h{i}.example{i % 13}.com:{1 + i % 60000}")
        cmds.append(f"    {rng.choice(['allow', 'confirm', 'deny'])} tool{i} sub{i % 7} --flag{i % 5}")
    return ("policy \"bench\"\nfilesystem {\n" + "\n".join(fs) + "\n}\nnetwork {\n" + "\n".join(net)
            + "\n}\ncommands {\n" + "\n".join(cmds) + "\n}\n")


PATHS = ["/work/ws/src/app/main.py", "/home/u/.ssh/id_rsa", "/data/d5/sub500/leaf3/file", "/etc/passwd",
         "/work/ws/.env", "/usr/lib/python3/dist-packages/x.py"]
ARGVS = [["git", "push", "-f", "origin"], ["git", "status"], ["tool500", "sub3", "--flag0"], ["ls", "-la"],
         ["sudo", "rm", "-rf", "/"], ["make", "test"]]
HOSTS = [("github.com", 443), ("h500.example6.com", 501), ("evil.example", 80), ("10.0.0.1", 22)]


def per_decision_ns(ir, rounds: int = 5, loops: int = 400) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Median nanoseconds per decision for each kind of lookup."""
    index = ir.index  # build the index outside the timing
    resolved = [index.resolve(p) for p in PATHS]
    kinds = {
        # the indexes themselves, bypassing the decision memo
        "path": lambda: [index.paths.decide(p) for p in resolved],
        "command": lambda: [index.commands.decide(a) for a in ARGVS],
        "network": lambda: [index.network.decide(h, p) for h, p in HOSTS],
        # what callers see: the same decisions through the memo
        "path+memo": lambda: [ir.path_access(p) for p in PATHS],
        "cmd+memo": lambda: [ir.command_verdict(a) for a in ARGVS],
        "net+memo": lambda: [ir.network_access(h, p) for h, p in HOSTS],
    }
    sizes = {"path": len(PATHS), "command": len(ARGVS), "network": len(HOSTS),
             "path+memo": len(PATHS), "cmd+memo": len(ARGVS), "net+memo": len(HOSTS)}
    out = {}
    for name, fn in kinds.items():
        samples = []
        for _ in range(rounds):
            start = time.perf_counter_ns()
            for _ in range(loops):
                fn()
            samples.append((time.perf_counter_ns() - start) / (loops * sizes[name]))
        out[name] = statistics.median(samples)
    return out


def compile_seconds(text: str, workspace: str) -> tuple[float, int]:
    """Median compile time of ``text`` and its rule count."""
    samples = []
    rules = 0
    for _ in range(3):
        start = time.perf_counter()
        ir = compile_policy(text=text, workspace=workspace, home="/home/u", environ={}).ir
        samples.append(time.perf_counter() - start)
        rules = len(ir.filesystem) + len(ir.network.rules) + len(ir.commands)
    return statistics.median(samples), rules


def main() -> None:
    """Run the benchmark and print figures and ratios."""
    with tempfile.TemporaryDirectory() as workspace:
        small_text, large_text = make_policy(10), make_policy(10_000)
        small_seconds, small_rules = compile_seconds(small_text, workspace)
        large_seconds, large_rules = compile_seconds(large_text, workspace)
        small = compile_policy(text=small_text, workspace=workspace, home="/home/u", environ={}).ir
        large = compile_policy(text=large_text, workspace=workspace, home="/home/u", environ={}).ir
        small_ns = per_decision_ns(small)
        large_ns = per_decision_ns(large)
    print(f"policy sizes: {small_rules} rules vs {large_rules} rules")
    print(f"{'decision':<10} {'10 rules':>12} {'10k rules':>12} {'ratio':>8}   goal: ratio <= 2.0")
    for kind in small_ns:
        ratio = large_ns[kind] / small_ns[kind]
        print(f"{kind:<10} {small_ns[kind] / 1000:>10.2f}us {large_ns[kind] / 1000:>10.2f}us {ratio:>8.2f}")
    print(f"compile: {small_rules} rules {small_seconds * 1000:.1f} ms; {large_rules} rules "
          f"{large_seconds * 1000:.1f} ms (goal < 1000 ms); ratio {large_seconds / small_seconds:.1f}x")


if __name__ == "__main__":
    main()
