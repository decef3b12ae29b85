"""Concurrent runs and their shared state, for real under bubblewrap: parallel runs never
remove each other's placeholder directories (which would detach the mounts that protect a
path in the other sandboxes), the removal never follows a symlink a sandboxed command planted,
and the run lock stays out of every sandbox.

bubblewrap makes a placeholder directory on the host for each protected path that does not
exist yet (here: ``$WORKSPACE/.git`` of the built-in policy, in a workspace without ``.git``);
see ``stockade.runtime.runlock``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.runtime.conftest import box_root

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")

ROOT = Path(__file__).resolve().parents[2]


class Machine:
    """A fresh HOME (outside /tmp, which the built-in policy lets sandboxes write), a workspace
    in it without ``.git``, and private cache and audit locations."""

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.workspace = self.home / "ws"
        self.workspace.mkdir(parents=True)
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home), "LANG": "C.UTF-8",
                    "STOCKADE_CACHE_DIR": str(root / "cache"), "STOCKADE_AUDIT": str(root / "audit.jsonl"),
                    "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}

    def run(self, *args: str, policy: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
        """``stockade run [--policy P] --workspace WS ARGS`` as a subprocess."""
        extra = ["--policy", str(policy)] if policy is not None else []
        return subprocess.run([sys.executable, "-m", "stockade", "run", *extra, "--workspace", str(self.workspace),
                               *args], env=self.env, cwd=self.workspace, capture_output=True, text=True,
                              timeout=timeout)


@pytest.fixture()
def machine() -> Iterator[Machine]:
    root = box_root()
    try:
        yield Machine(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


#: Inside the sandbox: wait so that the runs overlap, then try to create what the policy
#: protects (``.git/hooks``, ``.git/config``).  The built-in policy's placeholder (a read-only
#: tmpfs on ``.git``) stops it, unless another run's host ``rmdir`` detached that mount.
PROBE = """sleep 0.4
mkdir -p .git/hooks 2>/dev/null && echo '#!/bin/sh' > .git/hooks/pre-commit 2>/dev/null && echo ESCAPED
echo '[core]' >> .git/config 2>/dev/null && echo ESCAPED
exit 0
"""


def test_thirty_parallel_runs_all_succeed_and_keep_their_placeholders(machine: Machine) -> None:
    (machine.workspace / "probe.sh").write_text(PROBE)
    with ThreadPoolExecutor(30) as pool:
        results = list(pool.map(lambda _: machine.run("--approve", "--", "sh", "./probe.sh"), range(30)))
    failed = [(r.returncode, r.stderr.strip().splitlines()[-1:]) for r in results if r.returncode != 0]
    assert not failed, f"{len(failed)} of 30 parallel runs failed: {failed[:3]}"
    assert not [r.stdout for r in results if "ESCAPED" in r.stdout]
    assert "Traceback" not in "".join(r.stderr for r in results)
    # the last run out removed every placeholder: the workspace is as it was
    assert sorted(os.listdir(machine.workspace)) == ["probe.sh"]


POLICY_WITH_PLACEHOLDER = """policy "placeholder"
filesystem {
    read /
    write $WORKSPACE
    readonly $WORKSPACE/sub/.git/hooks
}
commands {
    unknown-effects confirm
}
"""

POLICY_WORKSPACE = """policy "workspace"
filesystem {
    read /
    write $WORKSPACE
}
commands {
    unknown-effects confirm
}
"""

#: Run by the second sandbox while the first one lives: replace the placeholder's parent
#: ``sub`` (a plain directory in this sandbox) with a symlink to a victim directory outside
#: the workspace, then let the first run end.
SWAP = """mv sub sub.moved && ln -s {victim} sub && touch swapped
"""
WAIT = """while [ ! -e swapped ]; do sleep 0.05; done
"""


def test_placeholder_removal_does_not_follow_a_planted_symlink(machine: Machine) -> None:
    victim = machine.root / "victim"
    (victim / ".git").mkdir(parents=True)  # empty: what the host's rmdir of `sub/.git` would remove
    (machine.workspace / "sub").mkdir()
    first, second = machine.root / "first.policy", machine.root / "second.policy"
    first.write_text(POLICY_WITH_PLACEHOLDER)
    second.write_text(POLICY_WORKSPACE)
    (machine.workspace / "swap.sh").write_text(SWAP.format(victim=victim))
    (machine.workspace / "wait.sh").write_text(WAIT)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(machine.run, "--approve", "--", "sh", "./wait.sh", policy=first, timeout=60)
        deadline = time.monotonic() + 60
        while not (machine.workspace / "sub" / ".git").is_dir():  # the first sandbox is up
            assert time.monotonic() < deadline and not waiting.done(), waiting.result().stderr
            time.sleep(0.02)
        swapped = machine.run("--approve", "--", "sh", "./swap.sh", policy=second)
        assert swapped.returncode == 0, swapped.stderr
        done = waiting.result()
    assert done.returncode == 0, done.stderr
    assert (machine.workspace / "sub").is_symlink()
    assert (victim / ".git").is_dir(), "the host removed a directory through a symlink planted in the workspace"
    # put back, the left placeholder is reused by the next run of its policy, which removes it
    os.unlink(machine.workspace / "sub")
    os.rename(machine.workspace / "sub.moved", machine.workspace / "sub")
    assert (machine.workspace / "sub" / ".git").is_dir()
    again = machine.run("--", "true", policy=first)
    assert again.returncode == 0, again.stderr
    assert not (machine.workspace / "sub" / ".git").exists()


def test_rmdir_nofollow_walks_without_following_links(tmp_path: Path) -> None:
    from stockade.runtime.runlock import remove_empty_dirs, rmdir_nofollow

    real = tmp_path.resolve()
    (real / "a" / "b").mkdir(parents=True)
    (real / "outside" / "b").mkdir(parents=True)
    (real / "link").symlink_to(real / "outside")
    assert not rmdir_nofollow(str(real / "link" / "b"))  # a symlink on the way: left alone
    assert (real / "outside" / "b").is_dir()
    assert not rmdir_nofollow(str(real / "a" / ".." / "outside" / "b"))
    assert not rmdir_nofollow("relative/path")
    (real / "a" / "b" / "c").mkdir()
    remove_empty_dirs([str(real / "a"), str(real / "a" / "b"), str(real / "a" / "b" / "c")])  # deepest first
    assert not (real / "a").exists()
    (real / "full").mkdir()
    (real / "full" / "f").write_text("x")
    assert not rmdir_nofollow(str(real / "full")) and (real / "full" / "f").exists()


LOCK_PROBE = """for fd in /proc/self/fd/*; do
  case "$(readlink "$fd")" in *run.lock*|*placeholders*) echo LEAKED "$fd";; esac
done
python3 - <<'EOF'
import fcntl, os
path = os.environ["LOCK"]
fd = os.open(path, os.O_RDONLY)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("ESCAPED: exclusive lock")
except OSError:
    pass
try:
    os.open(path, os.O_WRONLY)
    print("ESCAPED: writable lock")
except OSError:
    pass
EOF
"""


def test_the_run_lock_stays_out_of_the_sandbox(machine: Machine) -> None:
    """The sandbox inherits no descriptor of the lock (it could unlock the run's hold), cannot
    take it exclusively while its run lives, and cannot write stockade's cache directory."""
    (machine.workspace / "lock.sh").write_text(LOCK_PROBE)
    machine.env["LOCK"] = str(machine.root / "cache" / "run.lock")
    policy = machine.root / "p.policy"
    policy.write_text(POLICY_WORKSPACE.replace('"workspace"\n', '"workspace"\nenvironment {\n    keep PATH LOCK\n}\n'))
    done = machine.run("--approve", "--", "sh", "./lock.sh", policy=policy)
    assert done.returncode == 0, done.stderr
    assert (machine.root / "cache" / "run.lock").exists()
    assert "LEAKED" not in done.stdout and "ESCAPED" not in done.stdout, done.stdout
