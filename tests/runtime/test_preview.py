"""Preview on a real overlay under bubblewrap, the change listing, and the journaled apply
(including applies killed part way and rolled back from the journal in the state dir)."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest

from stockade.runtime import apply as apply_mod
from stockade.runtime.apply import apply_changes, journal_dir, recover
from stockade.runtime.execute import run_confined
from stockade.runtime.limits import Limits
from stockade.runtime.preview import Overlay
from stockade.runtime.sandbox import harden_bwrap_argv

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="overlayfs is Linux only")

SCRIPT = ("rm a; echo new > n; printf 'b\\nX\\nc\\n' > d/b; rm -r e; mkdir -p nd/deep; echo y > nd/deep/y; "
          "mv torename renamed; chmod 700 g; ln -s n sl; chmod 755 d/x; rm -r r; mkdir r; echo fresh > r/f")


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry below root: type, mode, and content or link target."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("file", stat.S_IMODE(st.st_mode), Path(full).read_bytes())
    return out


def make_workspace(root: Path) -> Path:
    ws = root / "ws"
    for rel, text in {"a": "a\n", "d/b": "b\nc\n", "d/x": "x\n", "e/c": "c\n", "torename": "r\n", "g/k": "keep\n",
                      "r/old": "old\n"}.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    os.chmod(ws / "d" / "x", 0o644)
    os.chmod(ws / "g", 0o755)
    return ws


def run_preview(root: Path, script: str = SCRIPT) -> tuple[Path, Overlay]:
    ws = make_workspace(root)
    time.sleep(0.02)  # the workspace is older than the preview (ctimes are stamped by a coarse clock)
    real = os.path.realpath(ws)
    prefix = harden_bwrap_argv(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--bind", real, real, "--dev", "/dev",
                                "--proc", "/proc", "--"], cwd=real)
    overlay = Overlay(real, base_dir=str(root))
    overlay.probe()
    result = run_confined(prefix, ["/bin/sh", "-c", script], {"PATH": "/usr/bin:/bin"}, Limits(timeout=20),
                          pre_exec=overlay.pre_exec(), stdout=lambda b: None, stderr=lambda b: None)
    assert result.exit_status == 0
    return ws, overlay


def test_preview_leaves_workspace_untouched_and_lists_changes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "pristine")
    before = snapshot(ws)
    ws2, overlay = run_preview(tmp_path)
    try:
        assert snapshot(ws2) == before  # the real workspace is untouched
        changes = {(c.kind, c.path): c for c in overlay.changes()}
        assert ("deleted", "a") in changes
        assert ("added", "n") in changes
        assert changes[("modified", "d/b")].added_lines == 1
        assert ("deleted", "e") in changes and ("deleted", "e/c") in changes
        assert changes[("renamed", "renamed")].old_path == "torename"
        assert changes[("mode", "g")].new_mode == 0o700
        assert changes[("mode", "d/x")].new_mode == 0o755
        assert changes[("added", "sl")].entry == "symlink"
        assert ("added", "nd/deep/y") in changes
        assert ("deleted", "r/old") in changes and ("added", "r/f") in changes
    finally:
        overlay.cleanup()


def no_temporaries(ws: Path) -> bool:
    """Whether no temporary name of an apply is left in the workspace."""
    return not [n for _d, dirs, files in os.walk(ws) for n in dirs + files if n.startswith(".stockade-")]


def test_apply_matches_running_the_script_directly(tmp_path: Path) -> None:
    reference = make_workspace(tmp_path / "reference")
    import subprocess

    subprocess.run(["/bin/sh", "-c", SCRIPT], cwd=reference, check=True, capture_output=True)
    ws, overlay = run_preview(tmp_path / "preview")
    state = str(tmp_path / "state")
    try:
        assert apply_changes(str(ws), overlay.upper, since_ns=overlay.started_ns, state_root=state) > 0
    finally:
        overlay.cleanup()
    assert snapshot(ws) == snapshot(reference)
    assert no_temporaries(ws) and not os.path.exists(journal_dir(str(ws), state))


def _apply_killed_at(ws: Path, overlay: Overlay, state: str, crash_at: int | str,
                     exclude: frozenset[str] = frozenset()) -> int:
    """Apply in a child process that kills itself (SIGKILL) at rename number ``crash_at``,
    or right after the journal turns to state ``crash_at``; the child's wait status."""
    import signal

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            calls = {"n": 0}
            real_rename, real_write = apply_mod._rename, apply_mod._write_journal

            def crashing_rename(*args: object, **kwargs: object) -> None:
                calls["n"] += 1
                if calls["n"] == crash_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                real_rename(*args, **kwargs)  # type: ignore[arg-type]

            def crashing_write(directory: str, journal: dict) -> None:
                real_write(directory, journal)
                if crash_at == journal["state"]:
                    os.kill(os.getpid(), signal.SIGKILL)

            apply_mod._rename = crashing_rename
            apply_mod._write_journal = crashing_write
            apply_changes(str(ws), overlay.upper, exclude, since_ns=overlay.started_ns, state_root=state)
        finally:
            os._exit(0)
    return os.waitpid(pid, 0)[1]


@pytest.mark.parametrize("crash_at", ["placing", "switching", 1, 2, 3, 6, 9, 13])
def test_apply_killed_part_way_is_rolled_back_by_the_next_run(tmp_path: Path, crash_at: int | str) -> None:
    ws, overlay = run_preview(tmp_path)
    before = snapshot(ws)
    state = str(tmp_path / "state")
    try:
        status = _apply_killed_at(ws, overlay, state, crash_at)
    finally:
        overlay.cleanup()
    assert os.WIFSIGNALED(status)  # a real crash, part way
    assert os.path.exists(os.path.join(journal_dir(str(ws), state), "journal.json"))
    assert snapshot(ws) != before or isinstance(crash_at, str)
    assert recover(str(ws), state) == ("discarded" if crash_at == "placing" else "rolled back")
    assert snapshot(ws) == before
    assert no_temporaries(ws) and not os.path.exists(journal_dir(str(ws), state))


def test_apply_killed_after_its_commit_is_completed_by_the_next_run(tmp_path: Path) -> None:
    import subprocess

    reference = make_workspace(tmp_path / "reference")
    subprocess.run(["/bin/sh", "-c", SCRIPT], cwd=reference, check=True, capture_output=True)
    ws, overlay = run_preview(tmp_path / "preview")
    state = str(tmp_path / "state")
    try:
        assert os.WIFSIGNALED(_apply_killed_at(ws, overlay, state, "done"))
    finally:
        overlay.cleanup()
    assert not no_temporaries(ws)  # the old entries are still there
    assert recover(str(ws), state) == "completed"
    assert snapshot(ws) == snapshot(reference) and no_temporaries(ws)


def test_recover_discards_an_unreadable_journal(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    before = snapshot(ws)
    state = str(tmp_path / "state")
    directory = Path(journal_dir(str(ws), state))
    directory.mkdir(parents=True)
    (directory / "journal.json").write_text("{half")
    assert recover(str(ws), state) == "discarded"
    assert snapshot(ws) == before and not directory.exists()
    assert recover(str(ws), state) is None
