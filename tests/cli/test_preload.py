"""The hot commands' module bundle (``stockade.cli.preload``): written after a run, used by
the next, never trusted over a changed source, ignored when damaged.

Each test works on a copy of the ``stockade`` package in a temporary directory, run in a
fresh interpreter, so that sources can be edited and bundles written without touching the
checkout."""

from __future__ import annotations

import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Installs the bundle of a made-up command, imports two modules, reports how each was
#: loaded and what the module holds, then saves the bundle as ``console()`` does.
PROBE = """
import sys
from stockade.cli.preload import install
bundle = install("probe")
import stockade.runtime.audit as audit, stockade.runtime.record as record
for module in (audit, record):
    print(module.__name__, type(module.__spec__.loader).__name__, module.__file__, module.__cached__,
          hasattr(module, "MARKER"))
print("saved", bundle.save())
"""


@pytest.fixture()
def package(tmp_path: Path) -> Path:
    """A copy of the stockade package (sources only) under ``tmp_path/src``."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "stockade", src / "stockade", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return src


def _probe(src: Path, **env: str) -> dict[str, list[str]]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    environ.update(PYTHONPATH=str(src), **env)
    done = subprocess.run([sys.executable, "-c", PROBE], env=environ, capture_output=True, text=True, timeout=60,
                          cwd=src)
    assert done.returncode == 0, done.stderr
    return {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()}


def _bundle(src: Path) -> Path:
    return src / "stockade" / "__pycache__" / f"hot-probe.{sys.implementation.cache_tag}.bundle"


def test_the_second_run_loads_from_the_bundle_the_first_wrote(package: Path) -> None:
    first = _probe(package)
    assert first["stockade.runtime.audit"][0] == "SourceFileLoader"
    assert first["saved"] == ["True"]
    modules = marshal.loads(_bundle(package).read_bytes())["modules"]
    assert {"stockade.runtime.audit", "stockade.runtime.record"} <= set(modules)
    assert all(name.startswith("stockade.") for name in modules)
    second = _probe(package)
    assert second["stockade.runtime.audit"][0] == "BundleLoader"
    assert second["stockade.runtime.record"][0] == "BundleLoader"
    # the same module attributes as a normal import
    assert second["stockade.runtime.audit"][1:] == first["stockade.runtime.audit"][1:]
    assert second["stockade.runtime.audit"][1] == str(package / "stockade" / "runtime" / "audit.py")
    assert second["saved"] == ["False"]  # nothing changed: the file is not rewritten


def test_an_edited_module_is_imported_from_its_source_and_the_bundle_renewed(package: Path) -> None:
    _probe(package)
    audit = package / "stockade" / "runtime" / "audit.py"
    audit.write_text(audit.read_text() + "\nMARKER = 1\n")
    edited = _probe(package)
    assert edited["stockade.runtime.audit"][0] == "SourceFileLoader"
    assert edited["stockade.runtime.audit"][-1] == "True"  # the new source, not the bundled code
    assert edited["stockade.runtime.record"][0] == "BundleLoader"
    assert edited["saved"] == ["True"]
    again = _probe(package)
    assert again["stockade.runtime.audit"][0] == "BundleLoader"
    assert again["stockade.runtime.audit"][-1] == "True"


def test_a_module_replaced_by_a_file_of_the_same_size_and_mtime_is_not_served(package: Path) -> None:
    _probe(package)
    audit = package / "stockade" / "runtime" / "audit.py"
    st = audit.stat()
    text = audit.read_text()
    replacement = audit.with_suffix(".new")
    replacement.write_text(text.replace("def now_iso", "def now_iZo"))  # the same size
    os.utime(replacement, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(replacement, audit)  # what installers do: a new file (a new inode)
    assert audit.stat().st_size == st.st_size and audit.stat().st_mtime_ns == st.st_mtime_ns
    report = _probe(package)
    assert report["stockade.runtime.audit"][0] == "SourceFileLoader"


def test_a_module_whose_source_is_gone_is_not_served(package: Path) -> None:
    _probe(package)
    (package / "stockade" / "runtime" / "audit.py").unlink()
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=dict(environ, PYTHONPATH=str(package)),
                          capture_output=True, text=True, timeout=60, cwd=package)
    assert done.returncode != 0 and "No module named 'stockade.runtime.audit'" in done.stderr


@pytest.mark.parametrize("damage", [b"", b"not marshal", marshal.dumps([1, 2]),
                                    marshal.dumps({"version": 2, "magic": b"old!", "modules": {}})])
def test_a_damaged_or_foreign_bundle_is_ignored_and_replaced(package: Path, damage: bytes) -> None:
    path = _bundle(package)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(damage)
    report = _probe(package)
    assert report["stockade.runtime.audit"][0] == "SourceFileLoader"
    assert report["saved"] == ["True"]
    assert _probe(package)["stockade.runtime.audit"][0] == "BundleLoader"


def test_damaged_bundled_code_falls_back_to_the_source(package: Path) -> None:
    _probe(package)
    path = _bundle(package)
    data = marshal.loads(path.read_bytes())
    entry = data["modules"]["stockade.runtime.audit"]
    data["modules"]["stockade.runtime.audit"] = (*entry[:4], b"\x00garbage")
    path.write_bytes(marshal.dumps(data))
    report = _probe(package)
    assert report["stockade.runtime.audit"][0] == "BundleLoader"  # found, but its code came from the .py
    assert report["stockade.runtime.audit"][1] == str(package / "stockade" / "runtime" / "audit.py")


def test_no_bundle_is_written_when_python_writes_no_bytecode(package: Path) -> None:
    report = _probe(package, PYTHONDONTWRITEBYTECODE="1")
    assert report["saved"] == ["False"]
    assert not _bundle(package).exists()


def test_the_pycache_prefix_is_honoured(package: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "pycache"
    _probe(package, PYTHONPYCACHEPREFIX=str(prefix))
    assert not _bundle(package).exists()
    found = list(prefix.rglob("hot-probe.*.bundle"))
    assert len(found) == 1 and str(package.resolve()).lstrip("/") in str(found[0])
    assert _probe(package, PYTHONPYCACHEPREFIX=str(prefix))["stockade.runtime.audit"][0] == "BundleLoader"


def test_a_hot_cli_command_writes_its_bundle(package: Path, tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environ.update(PYTHONPATH=str(package), STOCKADE_CACHE_DIR=str(tmp_path / "cache"), HOME=str(tmp_path))
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "stockade", "analyze", "--", "ls"], env=environ,
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    path = package / "stockade" / "__pycache__" / f"hot-analyze.{sys.implementation.cache_tag}.bundle"
    modules = marshal.loads(path.read_bytes())["modules"]
    assert "stockade.analyzer" in modules and "stockade.cli.cmd_analyze" in modules
    assert "stockade.cli.main" not in modules  # loaded before the bundle is installed
