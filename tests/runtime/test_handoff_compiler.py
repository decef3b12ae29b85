"""The connect launcher's compiler is never one a sandboxed command could have written.

The host compiles the launcher on first use; a ``cc`` found through the caller's ``PATH``
(``.``, the workspace's ``bin/``, ``node_modules/.bin``) would be a program the sandbox put
there, run on the host.  Only the system's directories and an absolute ``$STOCKADE_CC``
count.
"""

from __future__ import annotations

import os
from pathlib import Path

from stockade.runtime import handoff


def _plant(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    planted = directory / "cc"
    planted.write_text("#!/bin/sh\nexit 0\n")  # (never run: only its path is looked at)
    planted.chmod(0o755)
    return planted


def test_a_cc_on_the_callers_path_is_not_chosen(tmp_path: Path) -> None:
    planted = _plant(tmp_path / "ws" / "bin")
    for path in (f"{planted.parent}:/usr/bin:/bin", str(planted.parent), "", ":"):
        chosen = handoff._compiler({"PATH": path})
        assert chosen is None or os.path.dirname(chosen) in handoff.COMPILER_DIRECTORIES, (path, chosen)


def test_the_working_directory_is_not_searched(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    _plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    chosen = handoff._compiler({"PATH": ".:"})
    assert chosen is None or os.path.dirname(chosen) in handoff.COMPILER_DIRECTORIES


def test_stockade_cc_must_be_an_absolute_path(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    planted = _plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert handoff._compiler({handoff.COMPILER_VARIABLE: "cc"}) is None
    assert handoff._compiler({handoff.COMPILER_VARIABLE: str(planted)}) == str(planted)
