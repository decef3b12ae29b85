"""Shared test helpers: paths to the repository's examples, and the host kept clean.

Every test process gets private ``XDG_CACHE_HOME`` and ``XDG_STATE_HOME`` (a temporary
directory removed at the end), so neither in-process code nor the ``stockade`` subprocesses
the tests start (they inherit the environment) write Stockade's cache or audit trail under
the real home directory.  (``XDG_CONFIG_HOME`` is left alone: the policies the tests compile
protect git's configuration under it, and the analyzer's cases expect it in its usual place;
tests that depend on the user's policy set it themselves.)  At the
end of the session ``/home`` and ``/etc/stockade`` are compared with their state at the start: a test
that created or changed something there fails the run, naming the paths
(``tests/test_host_leaks.py`` checks the real home directory the same way).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

#: The host paths no test may write (compared at the end of the session): all of ``/home``,
#: and where a leaking Stockade would put its files in ``/etc`` (the rest of ``/etc`` is
#: changed by package installs that may run beside the tests).
WATCHED = (Path("/home"), Path("/etc/stockade"))

_PRIVATE = tempfile.mkdtemp(prefix="stockade-tests-")
atexit.register(shutil.rmtree, _PRIVATE, True)
for _name, _sub in (("XDG_CACHE_HOME", "cache"), ("XDG_STATE_HOME", "state")):
    os.environ[_name] = os.path.join(_PRIVATE, _sub)


def snapshot(roots: tuple[Path, ...], depth: int = 3) -> dict[str, tuple[int, int]]:
    """(mtime, size) of every entry under ``roots``, ``depth`` levels deep (links not followed)."""
    seen: dict[str, tuple[int, int]] = {}

    def walk(path: Path, level: int) -> None:
        try:
            info = path.lstat()
        except OSError:
            return
        seen[str(path)] = (info.st_mtime_ns, info.st_size)
        if level < depth and path.is_dir() and not path.is_symlink():
            try:
                children = sorted(path.iterdir())
            except OSError:
                return
            for child in children:
                walk(child, level + 1)

    for root in roots:
        walk(root, 0)
    return seen


def changed(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """Paths created, removed or modified between two snapshots."""
    return sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))


_BEFORE = snapshot(WATCHED)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a test wrote under a watched path; drop the private dirs."""
    shutil.rmtree(_PRIVATE, ignore_errors=True)
    leaked = changed(_BEFORE, snapshot(WATCHED))
    if leaked:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = "tests wrote to the host: " + ", ".join(leaked[:20])
        if reporter is not None:
            reporter.write_line(message, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def examples_dir() -> Path:
    """The examples folder of the repository."""
    return EXAMPLES
