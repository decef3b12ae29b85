"""The compiled-policy cache: a hit only while every source, variable and the code are unchanged."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stockade.compiler import cache
from stockade.compiler.pipeline import compile_policy


def _store(policy: Path, env: dict[str, str], context: dict[str, str]) -> str:
    key = cache.entry_key(str(policy), context, "ir")
    result = compile_policy(policy, workspace=context["workspace"], home="/home/u", environ=env)
    cache.store_checked("ir", key, {"ir": result.ir.to_json()}, result.sources, env)
    return key


def test_edited_include_or_changed_variable_is_a_miss(tmp_path: Path) -> None:
    env = {"STOCKADE_CACHE_DIR": str(tmp_path / "cache"), "PROJECT": "/srv/a"}
    (tmp_path / "base.policy").write_text("filesystem {\n  deny ~/.ssh\n}\n")
    top = tmp_path / "top.policy"
    top.write_text('include "base.policy"\nfilesystem {\n  write $PROJECT\n}\n')
    context = {"workspace": str(tmp_path)}
    key = _store(top, env, context)
    assert cache.load_checked("ir", key, env) is not None
    assert cache.load_checked("ir", key, {**env, "PROJECT": "/srv/b"}) is None  # variable changed
    (tmp_path / "base.policy").write_text("filesystem {\n  deny ~/.ssh ~/.aws\n}\n")
    assert cache.load_checked("ir", key, env) is None  # an include changed: never a stale policy
    top.write_text(top.read_text() + "\n")
    assert cache.entry_key(str(top), context, "ir") != key  # the policy's own bytes are in the key


def test_context_and_purpose_are_part_of_the_key(tmp_path: Path) -> None:
    policy = tmp_path / "p.policy"
    policy.write_text("filesystem {\n  read /\n}\n")
    a = cache.entry_key(str(policy), {"workspace": "/a"}, "ir")
    assert a != cache.entry_key(str(policy), {"workspace": "/b"}, "ir")
    assert a != cache.entry_key(str(policy), {"workspace": "/a"}, "plan:bwrap")
    assert cache.entry_key(str(tmp_path / "missing.policy"), {}, "ir") is None


def test_damaged_entries_are_misses(tmp_path: Path) -> None:
    env = {"STOCKADE_CACHE_DIR": str(tmp_path)}
    path = Path(cache.entry_path("ir", "ab" * 32, env))
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert cache.load_checked("ir", "ab" * 32, env) is None


def test_bytecode_written_on_import_does_not_change_the_code_fingerprint(tmp_path: Path, monkeypatch) -> None:
    """Python writes ``__pycache__`` as modules are first imported: that must not make every
    second run a cache miss."""
    import stockade

    root = Path(stockade.__file__).parent / "compiler"
    before = cache.code_fingerprint()
    monkeypatch.setattr(cache, "_fingerprint", None)
    made = root / "__pycache__" / "stockade-fingerprint-probe.cpython-311.pyc"
    existed = made.parent.exists()
    made.parent.mkdir(exist_ok=True)
    try:
        made.write_bytes(b"x")
        assert cache.code_fingerprint() == before
    finally:
        made.unlink()
        if not existed:
            made.parent.rmdir()


def _fingerprint_of(package_parent: Path) -> str:
    import subprocess
    import sys

    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import stockade.compiler.cache as c; "
             "print(c.code_fingerprint())")
    done = subprocess.run([sys.executable, "-S", "-c", probe, str(package_parent)], capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("layout", ["checkout", "site-packages", "site-packages with RECORD"])
def test_the_code_fingerprint_sees_a_replaced_module(tmp_path: Path, layout: str) -> None:
    import shutil

    import stockade

    parent = tmp_path / ("src" if layout == "checkout" else "lib/site-packages")
    shutil.copytree(Path(stockade.__file__).parent, parent / "stockade",
                    ignore=shutil.ignore_patterns("__pycache__"))
    record = parent / f"stockade-{stockade.__version__}.dist-info" / "RECORD"
    if layout.endswith("RECORD"):
        record.parent.mkdir()
        record.write_text("stockade/__init__.py,sha256=old,100\n")
    module = parent / "stockade" / "backends" / "bwrap.py"
    before = _fingerprint_of(parent)
    assert _fingerprint_of(parent) == before
    replacement = module.with_suffix(".new")
    replacement.write_text(module.read_text() + "\n# changed\n")
    os.replace(replacement, module)  # what installers do (and they rewrite RECORD)
    if layout.endswith("RECORD"):
        record.write_text("stockade/__init__.py,sha256=new,100\nstockade/backends/bwrap.py,sha256=new,1\n")
    after = _fingerprint_of(parent)
    if layout.endswith("RECORD"):  # the RECORD alone decides (one stat, no directory scan)
        os.utime(record, ns=(5, 5))
        assert _fingerprint_of(parent) != after
    assert after != before
    if layout == "checkout":  # an edit in place is seen in a checkout
        module.write_text(module.read_text() + "# again\n")
        os.utime(module, ns=(1, 1))
        assert _fingerprint_of(parent) != after
