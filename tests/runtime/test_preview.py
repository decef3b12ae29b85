"""Preview on a real overlay under bubblewrap, the change listing, and the journaled apply
(including interrupted applies rolled back)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from stockade.runtime import apply as apply_mod
from stockade.runtime.apply import STAGE_NAME, apply_changes, recover
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
            if rel.split("/")[0] == STAGE_NAME:
                continue
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


def test_apply_matches_running_the_script_directly(tmp_path: Path) -> None:
    reference = make_workspace(tmp_path / "reference")
    import subprocess

    subprocess.run(["/bin/sh", "-c", SCRIPT], cwd=reference, check=True, capture_output=True)
    ws, overlay = run_preview(tmp_path / "preview")
    try:
        apply_changes(str(ws), overlay.upper)
    finally:
        overlay.cleanup()
    assert snapshot(ws) == snapshot(reference)
    assert not (ws / STAGE_NAME).exists()


@pytest.mark.parametrize("crash_at", [1, 3, 6, 9])
def test_interrupted_apply_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_at: int) -> None:
    ws, overlay = run_preview(tmp_path)
    before = snapshot(ws)
    calls = {"n": 0}
    real_rename = os.rename

    def crashing_rename(src: str, dst: str) -> None:
        calls["n"] += 1
        if calls["n"] == crash_at:
            raise KeyboardInterrupt("simulated crash")
        real_rename(src, dst)

    monkeypatch.setattr(apply_mod, "_rename", crashing_rename)
    try:
        with pytest.raises(KeyboardInterrupt):
            apply_changes(str(ws), overlay.upper)
    finally:
        overlay.cleanup()
    assert (ws / STAGE_NAME).exists()  # the journal is there to recover from
    assert recover(str(ws)) == "rolled back"
    assert snapshot(ws) == before


def test_recover_discards_unjournaled_staging(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    before = snapshot(ws)
    (ws / STAGE_NAME / "new").mkdir(parents=True)
    (ws / STAGE_NAME / "new" / "0").write_text("half")
    assert recover(str(ws)) == "discarded"
    assert snapshot(ws) == before and not (ws / STAGE_NAME).exists()
