"""Glob deny rules on the bubblewrap path, attacked for real: a file matching ``deny
"**/.env*"`` must be unreadable in the sandbox however it came to be — created after the
plan was cached, inside a package directory (``node_modules``), in a directory whose mtime
was forged back, or as a symlink — and a tree too large to scan refuses the run.

Every run goes through :func:`stockade.runtime.session.run` with a private home,
workspace, temporary directory, cache and audit file; the probes are inline Python (the
analyzer cannot see into it: ``confirm``, approved), so only the sandbox stands in the way.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from stockade.diagnostics import StockadeError
from stockade.runtime.session import run

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")

POLICY = """policy "globs"
filesystem {
    read  /
    deny  ~/.ssh
    deny  "**/.env*"
    write $WORKSPACE $TMPDIR
    readonly $WORKSPACE/vendor
}
commands {
    unknown-effects confirm
    unparsable      deny
}
"""

#: Prints the content of each path given, or `ERR` when it cannot be read.
READER = ("import sys\n"
          "for path in sys.argv[1:]:\n"
          "    try:\n"
          "        with open(path) as handle:\n"
          "            print(path, handle.read().strip())\n"
          "    except OSError:\n"
          "        print(path, 'ERR')\n")


class Machine:
    """A private home (with the workspace inside), temporary directory, cache and policy."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch):
        self.root = root.resolve()
        self.home = self.root / "home"
        self.ws = self.home / "ws"
        self.tmp = self.root / "tmp"
        self.cache = self.root / "cache"
        for directory in (self.ws, self.tmp, self.home / ".ssh", self.ws / "vendor" / "lib"):
            directory.mkdir(parents=True, exist_ok=True)
        (self.ws / "a.txt").write_text("PUBLIC-A\n")
        self.policy = self.root / "globs.policy"
        self.policy.write_text(POLICY)
        monkeypatch.setenv("STOCKADE_CACHE_DIR", str(self.cache))
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        self.environ = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home), "TMPDIR": str(self.tmp),
                        "LANG": "C.UTF-8"}

    def run(self, argv: list[str], use_cache: bool = True, environ: dict | None = None) -> tuple[object, str]:
        out, err = bytearray(), bytearray()
        outcome = run(argv, policy=str(self.policy), workspace=str(self.ws), audit=str(self.root / "audit.jsonl"),
                      environ=environ or self.environ, stdout=out.extend, stderr=err.extend, approve=True,
                      use_cache=use_cache)
        assert outcome.ran, (outcome.reasons, err.decode())
        assert outcome.exit_status == 0, err.decode()
        return outcome, out.decode()

    def read(self, *paths: str, use_cache: bool = True) -> dict[str, str]:
        """What the sandbox reads at each path (relative to the workspace)."""
        _, out = self.run(["python3", "-I", "-S", "-c", READER, *paths], use_cache=use_cache)
        return dict(line.split(" ", 1) for line in out.splitlines())

    def plans(self) -> list[Path]:
        return sorted((self.cache / "plans").rglob("*.marshal"))


@pytest.fixture()
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    return Machine(tmp_path, monkeypatch)


def test_env_created_after_the_plan_was_cached_is_masked(machine: Machine) -> None:
    assert machine.read("a.txt") == {"a.txt": "PUBLIC-A"}  # compiles and caches the plan
    cached = machine.plans()
    assert len(cached) == 1
    (machine.ws / "sub").mkdir()
    (machine.ws / "sub" / ".env").write_text("SECRET-LATE\n")
    (machine.ws / ".env.local").write_text("SECRET-LOCAL\n")
    seen = machine.read("sub/.env", ".env.local", "a.txt")
    assert machine.plans() == cached  # the same cached plan, not a new compile
    assert seen == {"sub/.env": "ERR", ".env.local": "ERR", "a.txt": "PUBLIC-A"}
    # and once it is gone again, the plan's own argv is used (nothing left to mask)
    (machine.ws / "sub" / ".env").unlink()
    (machine.ws / ".env.local").unlink()
    assert machine.read("a.txt") == {"a.txt": "PUBLIC-A"}


@pytest.mark.parametrize("use_cache", [True, False], ids=["cached", "no-cache"])
def test_env_inside_node_modules_is_masked(machine: Machine, use_cache: bool) -> None:
    pkg = machine.ws / "node_modules" / "pkg" / "node_modules" / "dep"
    pkg.mkdir(parents=True)
    (pkg / ".env").write_text("SECRET-DEP\n")
    (machine.ws / "node_modules" / "pkg" / ".env").write_text("SECRET-PKG\n")
    (machine.ws / ".git" / "objects").mkdir(parents=True)
    (machine.ws / ".git" / "objects" / ".env").write_text("SECRET-GIT\n")
    paths = ["node_modules/pkg/.env", "node_modules/pkg/node_modules/dep/.env", ".git/objects/.env"]
    for _ in range(2):  # compiled, then cached (or compiled twice with --no-cache)
        assert machine.read(*paths, use_cache=use_cache) == dict.fromkeys(paths, "ERR")


def test_env_in_a_directory_whose_mtime_is_forged_back_is_masked(machine: Machine) -> None:
    """The sandbox of a long run waits for the host to write a ``.env``, then sets the
    directory's mtime back (``os.utime``, as ``touch -d`` does) so that an index trusting
    mtimes would skip the directory on the next run."""
    sub = machine.ws / "config"
    sub.mkdir()
    (sub / "settings.txt").write_text("x\n")
    time.sleep(1.2)  # older than the scan's racy window: the first scan trusts its identity
    forger = (
        "import os, time\n"
        "st = os.stat('config')\n"
        "open('started', 'w').close()\n"
        "for _ in range(400):\n"
        "    if os.path.exists('go'):\n"
        "        break\n"
        "    time.sleep(0.025)\n"
        "os.utime('config', ns=(st.st_atime_ns, st.st_mtime_ns))\n"
        "print('forged', os.stat('config').st_mtime_ns == st.st_mtime_ns)\n")
    result: dict[str, str] = {}

    def long_run() -> None:
        result["out"] = machine.run(["python3", "-I", "-S", "-c", forger])[1]

    thread = threading.Thread(target=long_run)
    thread.start()
    try:
        for _ in range(400):
            if (machine.ws / "started").exists():
                break
            time.sleep(0.025)
        (sub / ".env").write_text("SECRET-FORGED\n")  # the host writes a secret meanwhile
        (machine.ws / "go").write_text("")
    finally:
        thread.join(30)
    assert result.get("out", "").strip() == "forged True"
    assert machine.read("config/.env", "config/settings.txt") == {"config/.env": "ERR", "config/settings.txt": "x"}


def test_a_symlink_named_env_masks_what_it_points_to(machine: Machine) -> None:
    assert machine.read("a.txt") == {"a.txt": "PUBLIC-A"}  # plan cached before the links exist
    (machine.ws / "public.txt").write_text("PUBLIC-TARGET\n")
    (machine.ws / "data").mkdir()
    (machine.ws / "data" / "inner.txt").write_text("PUBLIC-INNER\n")
    (machine.ws / "lib").mkdir()
    os.symlink("../public.txt", machine.ws / "lib" / ".env")
    os.symlink("data", machine.ws / ".env.d")
    seen = machine.read("lib/.env", "public.txt", ".env.d/inner.txt", "data/inner.txt", "a.txt")
    # stricter than the policy for the targets, never looser; the rest is untouched
    assert seen == {"lib/.env": "ERR", "public.txt": "ERR", ".env.d/inner.txt": "ERR", "data/inner.txt": "ERR",
                    "a.txt": "PUBLIC-A"}
    # re-pointed at another file: that one is masked now, the first one is readable again
    (machine.ws / "lib" / ".env").unlink()
    os.symlink("../a.txt", machine.ws / "lib" / ".env")
    assert machine.read("lib/.env", "public.txt", "a.txt") == {"lib/.env": "ERR", "public.txt": "PUBLIC-TARGET",
                                                               "a.txt": "ERR"}


def test_a_later_env_inside_a_read_only_directory_is_masked_after_its_mount(machine: Machine) -> None:
    """The mask of a new match goes after the mounts it lies in (here the read-only bind of
    ``vendor``), or that bind would cover it."""
    assert machine.read("vendor/lib/x") == {"vendor/lib/x": "ERR"}  # compiled and cached
    (machine.ws / "vendor" / "lib" / ".env").write_text("SECRET-VENDOR\n")
    (machine.ws / "vendor" / "lib" / "x").write_text("PUBLIC-X\n")
    assert machine.read("vendor/lib/.env", "vendor/lib/x") == {"vendor/lib/.env": "ERR", "vendor/lib/x": "PUBLIC-X"}
    # (the path is built, not written as a literal: the analyzer denies code that writes a
    # read-only path it names, and this run must reach the sandbox)
    writer = ("import os\ntry:\n    open(os.path.join('vendor', 'lib', 'y'), 'w')\n    print('wrote')\n"
              "except OSError:\n    print('read-only')\n")
    assert machine.run(["python3", "-I", "-S", "-c", writer])[1].strip() == "read-only"  # the bind still holds


def test_a_masked_env_stays_masked_when_its_directories_are_renamed(machine: Machine) -> None:
    """A run's glob masks are not pinned (a mount per directory above each match would make
    bubblewrap slow): renaming the directories above a masked file moves the mount along."""
    (machine.ws / "deep" / "dir").mkdir(parents=True)
    (machine.ws / "deep" / "dir" / ".env").write_text("SECRET-DEEP\n")
    assert machine.read("deep/dir/.env") == {"deep/dir/.env": "ERR"}
    # (the secret's path is built, not written as a literal: the analyzer denies code that names a
    # denied path, and this run must reach the sandbox)
    attack = ("import os\n"
              "def read(path):\n"
              "    try:\n"
              "        return open(path).read().strip()\n"
              "    except OSError:\n"
              "        return 'ERR'\n"
              "os.rename('deep', 'moved')\n"
              "os.rename('moved/dir', 'moved/d2')\n"
              "env = os.path.join('moved', 'd2', '.' + 'env')\n"
              "seen = [read(env)]\n"
              "for step in (lambda: os.link(env, 'hard'), lambda: os.rename(env, 'x'),\n"
              "             lambda: os.unlink(env)):\n"
              "    try:\n"
              "        step()\n"
              "        seen.append('done')\n"
              "    except OSError:\n"
              "        seen.append('refused')\n"
              "seen.append(read('hard'))\n"
              "print(seen)\n")
    _, out = machine.run(["python3", "-I", "-S", "-c", attack])
    assert out.strip() == "['ERR', 'refused', 'refused', 'refused', 'ERR']"
    assert (machine.ws / "moved" / "d2" / ".env").read_text() == "SECRET-DEEP\n"  # untouched on the host
    assert machine.read("moved/d2/.env") == {"moved/d2/.env": "ERR"}  # and masked at its new place


def test_a_tree_over_the_scan_budget_refuses_the_run(machine: Machine) -> None:
    for i in range(30):
        (machine.ws / "node_modules" / f"p{i}").mkdir(parents=True)
        for j in range(5):
            (machine.ws / "node_modules" / f"p{i}" / f"f{j}.js").write_text("")
    machine.run(["true"])  # under the default budget: runs
    environ = dict(machine.environ, STOCKADE_GLOB_SCAN_LIMIT="100")
    marker = machine.ws / "ran"
    with pytest.raises(StockadeError) as err:
        run(["python3", "-I", "-S", "-c", f"open({str(marker)!r}, 'w').close()"], policy=str(machine.policy),
            workspace=str(machine.ws), audit=str(machine.root / "audit.jsonl"), environ=environ, approve=True)
    diagnostic = err.value.diagnostics[0]
    assert diagnostic.code == "R550"
    assert "`**/.env*`" in diagnostic.message and "more than 100 entries" in diagnostic.message
    assert diagnostic.help and "STOCKADE_GLOB_SCAN_LIMIT" in diagnostic.help
    assert not marker.exists()
    # too many matches (each one a mount): refused too
    for i in range(5):
        (machine.ws / "node_modules" / f"p{i}" / ".env").write_text("SECRET\n")
    with pytest.raises(StockadeError) as err:
        run(["python3", "-I", "-S", "-c", f"open({str(marker)!r}, 'w').close()"], policy=str(machine.policy),
            workspace=str(machine.ws), audit=str(machine.root / "audit.jsonl"), approve=True,
            environ=dict(machine.environ, STOCKADE_GLOB_MATCH_LIMIT="3"))
    assert err.value.diagnostics[0].code == "R550" and "more than 3 matches" in err.value.diagnostics[0].message
    assert not marker.exists()


def test_a_damaged_index_is_a_full_scan_and_the_sandbox_cannot_write_it(machine: Machine) -> None:
    (machine.ws / "deep" / "er").mkdir(parents=True)
    (machine.ws / "deep" / "er" / ".env").write_text("SECRET-DEEP\n")
    assert machine.read("deep/er/.env") == {"deep/er/.env": "ERR"}
    indexes = sorted((machine.cache / "globscan").rglob("*.marshal"))
    assert len(indexes) == 1
    # the sandbox cannot replace the index, even with the cache inside the workspace's reach
    # (the path goes through a variable: the analyzer denies code that opens a read-only path it
    # names for writing, and this run must reach the sandbox)
    _, out = machine.run(["python3", "-I", "-S", "-c",
                          f"import sys\nindex = {str(indexes[0])!r}\ntry:\n    open(index, 'wb').write(b'x')\n"
                          f"    print('wrote')\nexcept OSError:\n    print('refused')\n"])
    assert out.strip() == "refused"
    indexes[0].write_bytes(b"\x00garbage")  # damaged on the host side
    (machine.ws / "deep" / "er" / ".env.prod").write_text("SECRET-PROD\n")
    assert machine.read("deep/er/.env", "deep/er/.env.prod") == {"deep/er/.env": "ERR", "deep/er/.env.prod": "ERR"}


def test_the_cache_inside_the_workspace_is_protected_and_scanned_safely(machine: Machine,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOCKADE_CACHE_DIR", str(machine.ws / ".cache" / "stockade"))
    (machine.ws / "s").mkdir()
    (machine.ws / "s" / ".env").write_text("SECRET-S\n")
    writer = ("import glob, os\n"
              f"paths = glob.glob({str(machine.ws / '.cache' / 'stockade' / 'globscan')!r} + '/*/*')\n"
              "bad = []\n"
              "for path in paths:\n"
              "    try:\n"
              "        open(path, 'ab').close()\n"
              "        bad.append(path)\n"
              "    except OSError:\n"
              "        pass\n"
              "print(len(paths), bad)\n")
    for _ in range(2):
        assert machine.read("s/.env") == {"s/.env": "ERR"}
    assert machine.run(["python3", "-I", "-S", "-c", writer])[1].strip() == "1 []"


# -- the scanner on its own (no sandbox) ---------------------------------------------------


def test_the_matcher_agrees_with_the_compilers_regex() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from stockade.compiler.query import glob_to_regex
    from stockade.runtime.globscan import compile_glob, glob_match

    part = st.text(alphabet="ab.*?/", min_size=0, max_size=8)

    @settings(max_examples=400, deadline=None)
    @given(pattern=part, path=st.text(alphabet="ab./", min_size=0, max_size=10))
    def agree(pattern: str, path: str) -> None:
        pattern = "/" + pattern
        path = "/" + path
        assert glob_match(compile_glob(pattern), path) == bool(glob_to_regex(pattern).match(path))

    agree()
    for pattern, path in [("/**/.env*", "/w/a/.env.local"), ("/w/**/x", "/w/x"), ("/w/**", "/w/a/b"),
                          ("/w/*/x", "/w/a/x"), ("/w/a**b", "/w/a/c/b")]:
        assert glob_match(compile_glob(pattern), path) == bool(glob_to_regex(pattern).match(path)) is True


def test_the_scan_is_incremental_and_never_follows_links(tmp_path: Path) -> None:
    from stockade.runtime.globscan import Scanner, scan_globs

    root = tmp_path.resolve() / "w"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / ".env").write_text("s")
    outside = tmp_path.resolve() / "outside"
    (outside / "deeper").mkdir(parents=True)
    (outside / ".env").write_text("s")
    os.symlink(outside, root / "link")  # a link to a directory: never descended into
    os.symlink(outside, root / "a" / ".env.link")  # a matching link: reported with its target
    time.sleep(1.2)  # older than the racy window
    patterns = ["/**/.env*"]
    first = Scanner(patterns)
    first.scan(str(root))
    assert first.listed == 3  # w, w/a, w/a/b
    assert sorted(first.hits) == [(f"{root}/a/.env.link", "l"), (f"{root}/a/b/.env", "f")]
    second = Scanner(patterns, first.new)
    second.scan(str(root))
    assert second.listed == 0 and sorted(second.hits) == sorted(first.hits)
    (root / "a" / "b" / ".env.new").write_text("s")
    third = Scanner(patterns, second.new)
    third.scan(str(root))
    assert third.listed == 1 and (f"{root}/a/b/.env.new", "f") in third.hits
    index = str(tmp_path / "index.marshal")
    assert scan_globs(patterns, [str(root)], index) == [
        (f"{root}/a/.env.link", "l", str(outside), "d"), (f"{root}/a/b/.env", "f"), (f"{root}/a/b/.env.new", "f")]


def test_a_damaged_glob_field_in_a_cached_plan_is_a_miss(machine: Machine) -> None:
    import marshal

    (machine.ws / "e").mkdir()
    (machine.ws / "e" / ".env").write_text("SECRET-E\n")
    assert machine.read("e/.env") == {"e/.env": "ERR"}
    for field, value in (("glob_scan", {"patterns": "x"}), ("glob_static", "x")):
        [entry] = machine.plans()
        plan = marshal.loads(entry.read_bytes())
        plan[field] = value
        entry.write_bytes(marshal.dumps(plan))
        assert machine.read("e/.env") == {"e/.env": "ERR"}, field  # compiled again, never a traceback
    # the remembered argv of the current matches, kept next to the plan: damaged, it is re-planned
    [overlay] = sorted((machine.cache / "globplans").rglob("*.marshal"))
    for field, value in (("glob_set", [("a", 1)]), ("glob_argv", "bwrap"), ("glob_argv", ["true"]),
                         ("seccomp", {"x": "y"}), ("glob_placeholders", ["relative"])):
        data = marshal.loads(overlay.read_bytes())
        data[field] = value
        overlay.write_bytes(marshal.dumps(data))
        assert machine.read("e/.env") == {"e/.env": "ERR"}, field
