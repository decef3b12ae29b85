"""The bwrap backend's run-time glob options: ``glob_per_run`` leaves the workspace and the
writable roots to the runtime's scan, ``glob_matches`` / ``glob_hidden`` plan given matches
without walking (what :mod:`stockade.runtime.globscan` re-plans with)."""

from __future__ import annotations

import os
from pathlib import Path

from stockade.backends.base import compile_ir
from stockade.compiler.ir import Context, FsRule, PolicyIR


def _ir(root: Path, *rules: FsRule) -> PolicyIR:
    return PolicyIR("t", Context(str(root / "home" / "ws"), str(root / "home"), str(root / "tmp")), filesystem=rules)


def _tree(tmp_path: Path) -> Path:
    root = tmp_path.resolve()
    for directory in ("home/ws/src", "home/proj", "home/ws/vendor/pkg", "tmp"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "home" / "proj" / ".env").write_text("s")  # under home, outside the workspace
    (root / "home" / "ws" / "src" / ".env").write_text("s")  # under the workspace
    return root


RULES = (FsRule("read", "/"), FsRule("write", "{ws}"), FsRule("write", "{tmp}"),
         FsRule("readonly", "{ws}/vendor"), FsRule("deny", "/**/.env*", is_glob=True, source_text="**/.env*"))


def _rules(root: Path) -> list[FsRule]:
    ws, tmp = str(root / "home" / "ws"), str(root / "tmp")
    return [FsRule(r.kind, r.pattern.format(ws=ws, tmp=tmp), is_glob=r.is_glob, source_text=r.source_text)
            for r in RULES]


def test_per_run_leaves_the_workspace_and_writable_roots_to_the_runtime(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    ir = _ir(root, *_rules(root))
    artifact = compile_ir(ir, "bwrap", glob_per_run=True, glob_roots=[str(root / "home")])
    argv = artifact.data["argv"]
    assert f"{root}/home/proj/.env" in argv  # compile time: home outside the roots
    assert f"{root}/home/ws/src/.env" not in argv  # left to the run
    scan = artifact.data["glob_scan"]
    assert scan["patterns"] == ["/**/.env*"] and scan["rules"] == ["**/.env*"]
    # a shared temporary directory outside the workspace and home is not scanned per run
    # (too costly where other programs leave tens of thousands of directories)
    assert scan["roots"] == [f"{root}/home/ws"]
    assert scan["static"] == [f"{root}/home/proj/.env"]
    assert any(w.code == "B304" and "at the start of each run" in w.message for w in artifact.warnings)
    # without the option (`stockade compile`): everything at compile time, as before
    plain = compile_ir(ir, "bwrap", glob_roots=[str(root / "home")])
    assert f"{root}/home/ws/src/.env" in plain.data["argv"] and "glob_scan" not in plain.data


def test_given_matches_are_planned_in_order_without_pins(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    ws = f"{root}/home/ws"
    (root / "home" / "ws" / "vendor" / "pkg" / ".env").write_text("s")
    (root / "home" / "ws" / "a" / "b").mkdir(parents=True)
    (root / "home" / "ws" / "a" / "b" / ".env.d").mkdir()
    ir = _ir(root, *_rules(root))
    given = [f"{ws}/vendor/pkg/.env", f"{ws}/a/b/.env.d", f"{ws}/src/.env"]
    argv = compile_ir(ir, "bwrap", glob_matches=given).data["argv"]
    at = {word: len(argv) - 1 - i for i, word in enumerate(reversed(argv))}  # first occurrences
    # a mask comes after the mount it lies in (the read-only vendor bind)
    assert argv[at[f"{ws}/vendor/pkg/.env"] - 1] == "/dev/null"
    assert at[f"{ws}/vendor"] < at[f"{ws}/vendor/pkg/.env"]
    assert argv[at[f"{ws}/a/b/.env.d"] - 1] == "--tmpfs"
    assert f"{ws}/a" not in argv and f"{ws}/a/b" not in argv  # denied matches are not pinned


def test_a_given_symlink_masks_its_target_and_hidden_dirs_are_hidden(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    ws = f"{root}/home/ws"
    (root / "home" / "ws" / "public.txt").write_text("p")
    os.symlink("public.txt", f"{ws}/.env")
    (root / "home" / "ws" / "locked").mkdir()
    artifact = compile_ir(_ir(root, *_rules(root)), "bwrap", glob_matches=[f"{ws}/.env"],
                          glob_hidden=[f"{ws}/locked"])
    argv = artifact.data["argv"]
    assert argv[argv.index(f"{ws}/public.txt") - 1] == "/dev/null"
    assert f"{ws}/.env" not in argv  # never a mount on the link itself (bubblewrap would follow it)
    assert argv[argv.index(f"{ws}/locked") - 1] == "--tmpfs"
    assert any(w.code == "B307" for w in artifact.warnings) and any("cannot be listed" in w.message
                                                                    for w in artifact.warnings)
