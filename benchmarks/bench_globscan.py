"""Benchmark the per-run glob scan (:mod:`stockade.runtime.globscan`) on a generated workspace.

The workspace has the shape of a JavaScript project with its dependencies installed: a
few source directories and a ``node_modules`` tree of packages, each with ``lib/``,
``dist/`` and its own nested ``node_modules/`` (about 10 entries per directory; 100,000
files by default), and a few ``.env*`` files, some deep inside packages.

Figures, each the median of N repetitions, printed as ratios against baselines measured in
the same run:

* ``os.scandir walk``: a plain recursive ``os.scandir`` walk of the tree (no matching, no
  descriptors, no index) — what any scan must at least do once;
* ``python -c pass``: starting an interpreter (the floor of a ``stockade run``);
* ``cold``: the first scan (no index): every directory listed, the index written;
* ``warm``: nothing changed since the last scan: every directory's identity checked,
  none listed;
* ``warm, one directory changed``: a file created in one directory before the scan.

The tree is made once and left untouched for more than the scan's racy window (a directory
changed within a second of a scan is listed again by the next one) before it is measured.

Usage: ``python benchmarks/bench_globscan.py [FILES] [--rounds N] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stockade.runtime.globscan import Scanner, scan_globs

PATTERNS = ["/**/.env*"]


def make_tree(root: Path, files: int) -> tuple[int, int]:
    """A node_modules-like tree of about ``files`` files under ``root``; (files, dirs) made."""
    made_files = made_dirs = 0

    def touch(path: Path, text: str = "") -> None:
        nonlocal made_files
        path.write_text(text)
        made_files += 1

    def mkdir(path: Path) -> Path:
        nonlocal made_dirs
        path.mkdir(parents=True, exist_ok=True)
        made_dirs += 1
        return path

    for sub in ("src", "src/components", "src/lib", "test", "public"):
        d = mkdir(root / sub)
        for i in range(8):
            touch(d / f"file{i}.ts", "export {}\n")
    touch(root / ".env", "SECRET=1\n")
    touch(root / ".env.example", "SECRET=\n")
    touch(root / "package.json", "{}\n")

    def package(base: Path, name: str, depth: int) -> None:
        pkg = mkdir(base / name)
        for item in ("package.json", "README.md", "LICENSE", "index.js", "index.d.ts"):
            touch(pkg / item)
        lib = mkdir(pkg / "lib")
        for i in range(9):
            touch(lib / f"m{i}.js")
        dist = mkdir(pkg / "dist")
        for i in range(6):
            touch(dist / f"bundle{i}.js")
        esm = mkdir(dist / "esm")
        for i in range(6):
            touch(esm / f"bundle{i}.mjs")
        if made_files % 97 == 0:
            touch(pkg / ".env", "X=1\n")  # a package shipping a .env
        if depth < 2 and made_files < files:
            nested = mkdir(pkg / "node_modules")
            for j in range(2):
                package(nested, f"dep{j}", depth + 1)

    modules = mkdir(root / "node_modules")
    n = 0
    while made_files < files:
        package(modules, f"pkg{n}", 0)
        n += 1
    return made_files, made_dirs


def plain_walk(root: str) -> int:
    """Count entries with a plain recursive ``os.scandir`` walk (the baseline)."""
    count = 0
    stack = [root]
    while stack:
        directory = stack.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                count += 1
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return count


def timed(fn, rounds: int) -> float:
    """Median wall time of ``fn()`` in milliseconds."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("files", nargs="?", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--keep", help="build the tree in DIR and keep it")
    args = parser.parse_args()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-globscan-"))
    try:
        ws = base / "ws"
        if not ws.exists():
            files, dirs = make_tree(ws, args.files)
        else:
            files = dirs = -1
        ws_s = str(ws.resolve())
        time.sleep(1.2)  # past the racy window
        index = str(base / "index.marshal")
        entries = plain_walk(ws_s)
        walk = timed(lambda: plain_walk(ws_s), args.rounds)
        python = timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), args.rounds)

        def cold() -> None:
            if os.path.exists(index):
                os.unlink(index)
            scan_globs(PATTERNS, [ws_s], index)

        cold_ms = timed(cold, args.rounds)
        scan_globs(PATTERNS, [ws_s], index)
        warm_ms = timed(lambda: scan_globs(PATTERNS, [ws_s], index), args.rounds)
        probe = Scanner(PATTERNS, __import__("marshal").loads(Path(index).read_bytes())["dirs"])
        probe.scan(ws_s)
        assert probe.listed == 0, probe.listed
        matches = scan_globs(PATTERNS, [ws_s], index)
        changed_dir = ws / "src" / "lib"
        counter = [0]

        def one_changed() -> None:
            counter[0] += 1
            (changed_dir / f"new{counter[0]}.ts").write_text("")
            scan_globs(PATTERNS, [ws_s], index)

        changed_ms = timed(one_changed, args.rounds)
        print(f"tree: {entries} entries ({files} files, {dirs} directories made), {len(matches)} .env* matches")
        print(f"baseline  os.scandir walk           {walk:8.1f} ms")
        print(f"baseline  python -c pass            {python:8.1f} ms")
        for name, ms in (("cold (first scan)", cold_ms), ("warm (nothing changed)", warm_ms),
                         ("warm, one directory changed", changed_ms)):
            print(f"scan      {name:28s}{ms:8.1f} ms   x{ms / walk:5.2f} walk   x{ms / python:5.2f} python")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
