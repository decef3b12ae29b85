"""Git metadata redirection, attempted for real under ``stockade run`` (bubblewrap).

The coding-agent policy makes ``.git/config`` and ``.git/hooks`` read-only.  Each attack
tries to make the user's next ``git status`` (or ``git commit``) on the host run a planted
``core.fsmonitor`` / hook through another file git reads: ``.git/commondir``,
``.git/config.worktree``, a ``.git`` file's ``gitdir:``, the gitdir it names, an
``include.path`` target, a linked worktree's ``commondir``, a submodule's config, a
``core.hooksPath`` directory.  Each must fail inside the sandbox, and the effect is checked
the way the user would meet it: git is run over the workspace in a *second* bubblewrap box
(workspace read-only, HOME private) and must not create the marker file — git is never run
on the host over a repository the sandbox wrote.  Repositories are set up fresh by host git
before any sandbox touches them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runtime.conftest import POLICY, ROOT, box_root

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not shutil.which("git"),
                                reason="bubblewrap and git are needed")


class Repo:
    """A private machine: home, a git workspace in it, and a marker directory."""

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.ws = self.home / "ws"
        self.marker_dir = root / "marker"
        self.marker = self.marker_dir / "MARK"
        self.marker_dir.mkdir(parents=True)
        self.ws.mkdir(parents=True)
        self.env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home), "LANG": "C.UTF-8",
                    "GIT_CONFIG_NOSYSTEM": "1", "XDG_CACHE_HOME": str(root / "cache"),
                    "XDG_STATE_HOME": str(root / "state"), "PYTHONPATH": str(ROOT)}
        (self.home / ".gitconfig").write_text("[user]\n\tname = t\n\temail = t@example.invalid\n"
                                              "[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")

    @property
    def payload(self) -> str:
        """A config whose ``core.fsmonitor`` creates the marker (harmless)."""
        return f'[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch {self.marker}; false"\n'

    def host_git(self, *args: str, cwd: Path | None = None) -> None:
        """Set-up only: host git on a repository no sandbox has written yet."""
        subprocess.run(["git", *args], cwd=cwd or self.ws, env=self.env, check=True, capture_output=True)

    def init(self, *extra: str) -> None:
        self.host_git("init", "-q", *extra, str(self.ws), cwd=self.root)
        (self.ws / "f.txt").write_text("hi\n")
        self.host_git("add", "f.txt")
        self.host_git("commit", "-qm", "one")

    def attack(self, script: str) -> str:
        """Run ``sh script`` under ``stockade run`` with the coding-agent policy (the
        script first prints SANDBOX-STARTED: the sandbox was set up and the attack ran)."""
        path = self.root / "attack.sh"
        path.write_text("echo SANDBOX-STARTED\n" + script.replace("{MARK}", str(self.marker)).replace("{PAYLOAD}", self.payload))
        done = subprocess.run([sys.executable, "-m", "stockade", "run", "--approve", "--policy", str(POLICY),
                               "--workspace", str(self.ws), "--", "/bin/sh", str(path)],
                              env=self.env, cwd=self.ws, capture_output=True, text=True, timeout=120, check=False)
        return done.stdout + done.stderr

    def observe(self, *git_args: str, cwd: Path | None = None, writable: bool = False) -> bool:
        """Run git in a second bubblewrap box (the machine read-only except the marker
        directory, and the repository when ``writable``): whether the planted payload ran."""
        if self.marker.exists():
            self.marker.unlink()
        binds = ["--bind", str(self.root), str(self.root)] if writable else []
        argv = ["bwrap", "--ro-bind", "/", "/", *binds, "--bind", str(self.marker_dir), str(self.marker_dir),
                "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent",
                "--clearenv", "--setenv", "PATH", self.env["PATH"], "--setenv", "HOME", str(self.home),
                "--setenv", "GIT_CONFIG_NOSYSTEM", "1", "--chdir", str(cwd or self.ws), "git", *git_args]
        subprocess.run(argv, capture_output=True, timeout=60, check=False)
        return self.marker.exists()


@pytest.fixture()
def repo() -> Iterator[Repo]:
    root = box_root()
    try:
        yield Repo(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


#: A planted common directory (bare, with the workspace's objects and refs) whose config
#: holds the payload; `$1` is where to make it.
PLANT = """plant() {
  git init -q --bare "$1" && cp -r .git/objects/. "$1/objects/" && cp -r .git/refs/. "$1/refs/" \\
    && cp .git/HEAD "$1/HEAD" && cat > "$1/config" <<'CFG'
{PAYLOAD}CFG
}
"""


def test_observer_sees_a_planted_redirect(repo: Repo) -> None:
    """The control: the observer box does detect a commondir redirect planted without stockade."""
    repo.init()
    script = repo.root / "plant.sh"
    script.write_text((PLANT + 'plant "$PWD/../planted.git" && printf "%s\\n" "$PWD/../planted.git" > .git/commondir\n')
                      .replace("{PAYLOAD}", repo.payload))
    subprocess.run(["bwrap", "--ro-bind", "/", "/", "--bind", str(repo.root), str(repo.root), "--dev", "/dev",
                    "--proc", "/proc", "--unshare-all", "--die-with-parent", "--setenv", "HOME", str(repo.home),
                    "--chdir", str(repo.ws), "/bin/sh", str(script)], check=True, capture_output=True, timeout=60)
    assert repo.observe("status")


def test_git_still_works_inside_and_placeholders_go(repo: Repo) -> None:
    repo.init()
    out = repo.attack("set -e\ngit status --short\necho more >> f.txt\ngit add f.txt\n"
                      "git commit -qm two\ngit log --oneline | wc -l\ncat .git/commondir; echo\necho ALL-OK\n")
    assert "ALL-OK" in out and "2\n" in out and ".\n" in out  # two commits; commondir reads as "." inside
    for name in ("commondir", "config.worktree", "worktrees"):
        assert not os.path.lexists(repo.ws / ".git" / name), name  # removed after the run


def test_commondir_redirect(repo: Repo) -> None:
    repo.init()
    out = repo.attack(PLANT + 'plant "$PWD/planted.git"\n'
                              'printf "%s\\n" "$PWD/planted.git" > .git/commondir && echo ESCAPED\n')
    assert "SANDBOX-STARTED" in out and "ESCAPED" not in out, out
    assert not repo.observe("status")


def test_config_worktree(repo: Repo) -> None:
    repo.init()
    repo.host_git("config", "extensions.worktreeConfig", "true")
    out = repo.attack("cat > .git/config.worktree <<'CFG' && echo ESCAPED\n{PAYLOAD}CFG\n")
    assert "SANDBOX-STARTED" in out and "ESCAPED" not in out, out
    assert not repo.observe("status")


def test_gitdir_file_and_its_gitdir(repo: Repo) -> None:
    repo.init(f"--separate-git-dir={repo.ws / '.gitstore'}")
    assert (repo.ws / ".git").is_file()
    out = repo.attack("cat >> .gitstore/config <<'CFG' && echo ESCAPED-CONFIG\n{PAYLOAD}CFG\n"
                      + PLANT.replace(".git/", ".gitstore/") + 'plant "$PWD/planted.git"\n'
                      "printf 'gitdir: planted.git\\n' > .git && echo ESCAPED-DOTGIT\n")
    assert "SANDBOX-STARTED" in out and "ESCAPED" not in out, out
    assert not repo.observe("status")


@pytest.mark.parametrize("existing", [True, False], ids=["existing", "missing"])
def test_include_path_target(repo: Repo, existing: bool) -> None:
    repo.init()
    repo.host_git("config", "include.path", "../team.gitconfig")
    if existing:
        (repo.ws / "team.gitconfig").write_text("")
    out = repo.attack("cat > team.gitconfig <<'CFG' && echo ESCAPED\n{PAYLOAD}CFG\ngit status --short\n")
    assert "SANDBOX-STARTED" in out and "ESCAPED" not in out, out
    assert "fatal" not in out  # git inside copes with the placeholder
    assert not repo.observe("status")


def test_linked_worktree_commondir(repo: Repo) -> None:
    repo.init()
    linked = repo.home / "linked"
    repo.host_git("worktree", "add", "-q", str(linked))
    out = repo.attack(PLANT + 'plant "$PWD/planted.git"\n'
                              'printf "%s\\n" "$PWD/planted.git" > .git/worktrees/linked/commondir'
                              ' && echo ESCAPED\n')
    assert "SANDBOX-STARTED" in out and "ESCAPED" not in out, out
    assert not repo.observe("status", cwd=linked)


def test_submodule_config(repo: Repo) -> None:
    upstream = repo.root / "upstream"
    upstream.mkdir()
    repo.host_git("init", "-q", cwd=upstream)
    (upstream / "u.txt").write_text("u\n")
    repo.host_git("add", "u.txt", cwd=upstream)
    repo.host_git("commit", "-qm", "u", cwd=upstream)
    repo.init()
    repo.host_git("submodule", "add", "-q", str(upstream), "lib")
    repo.host_git("commit", "-qm", "sub")
    out = repo.attack("cat >> .git/modules/lib/config <<'CFG' && echo ESCAPED-CONFIG\n"
                      "[core]\n\tfsmonitor = \"touch {MARK}; false\"\nCFG\n"
                      "printf 'gitdir: ../planted\\n' > lib/.git && echo ESCAPED-DOTGIT\n")
    assert "SANDBOX-STARTED" in out and "ESCAPED" not in out, out
    assert not repo.observe("status")


def test_hooks_path(repo: Repo) -> None:
    repo.init()
    (repo.ws / ".githooks").mkdir()
    repo.host_git("config", "core.hooksPath", ".githooks")
    out = repo.attack("printf '#!/bin/sh\\ntouch {MARK}\\n' > .githooks/pre-commit && "
                      "chmod +x .githooks/pre-commit && echo ESCAPED\n")
    assert "SANDBOX-STARTED" in out and "ESCAPED" not in out, out
    assert not repo.observe("commit", "-q", "--allow-empty", "-m", "x", writable=True)


def test_changed_git_config_is_not_judged_from_the_cache(repo: Repo) -> None:
    """A plan and verdicts cached before the user adds an include must not let the sandbox
    write the new include target: the plan recompiles, the verdict is judged again."""
    repo.init()
    target = repo.ws / "team.gitconfig"
    target.write_text("")
    command = [sys.executable, "-m", "stockade", "run", "--policy", str(POLICY), "--workspace", str(repo.ws),
               "-c", "printf x > team.gitconfig"]
    first = subprocess.run(command, env=repo.env, cwd=repo.ws, capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 0 and target.read_text() == "x", first.stderr
    target.write_text("")
    with open(repo.ws / ".git" / "config", "a") as config:  # the user's edit (not git: the sandbox wrote here)
        config.write("[include]\n\tpath = ../team.gitconfig\n")
    second = subprocess.run(command, env=repo.env, cwd=repo.ws, capture_output=True, text=True, timeout=120, check=False)
    assert second.returncode == 1 and "team.gitconfig" in second.stderr, second.stderr
    out = repo.attack("printf x > team.gitconfig && echo ESCAPED\n")  # the cached plan mounts it too
    assert "SANDBOX-STARTED" in out and "ESCAPED" not in out, out
    assert target.read_text() == ""
