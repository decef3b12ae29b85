"""Damaged cache entries and unusable cache directories, with real runs under bubblewrap:
a damaged plan, verdict or compiled-policy entry is a miss (compiled again and replaced),
never a traceback; a cache directory that cannot be used (a file in its place, a read-only
file system, a FIFO or a directory where an entry should be) gives a run without the cache
and a one-line warning, for ``stockade run``, ``analyze``, ``hook`` and ``check``."""

from __future__ import annotations

import glob
import marshal
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.runtime.conftest import box_root

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")

ROOT = Path(__file__).resolve().parents[2]


# -- damage: a value of another type somewhere in an entry, or a key deleted ------------

def _paths(value: Any, prefix: tuple = (), depth: int = 0) -> list[tuple]:
    """Every place in a nested entry: (path of keys/indexes) up to four levels deep."""
    out = [prefix] if prefix else []
    if depth < 4 and isinstance(value, dict):
        for key in value:
            out += _paths(value[key], (*prefix, key), depth + 1)
    elif depth < 4 and isinstance(value, list):
        for index, item in enumerate(value[:4]):
            out += _paths(item, (*prefix, index), depth + 1)
    return out


_NUMBERISH = (type(None), int, float)
OTHER_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True),
                         st.text(max_size=4), st.binary(max_size=4), st.lists(st.integers(), max_size=2),
                         st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
                         st.tuples(st.integers()), st.sets(st.integers(), max_size=1))


def _other_type(original: Any, value: Any) -> bool:
    """A substitution changes the type (None and numbers count as one kind: a missing limit
    and a limit are both well-typed, a run is not expected to notice)."""
    if isinstance(original, _NUMBERISH) and not isinstance(original, bool) and \
            isinstance(value, _NUMBERISH) and not isinstance(value, bool):
        return False
    return type(original) is not type(value)


@st.composite
def damaged(draw: Any, entry: dict) -> tuple[dict, str]:
    """A copy of ``entry`` with one key deleted (dicts only) or one value replaced by one of
    another type; and what was done."""
    data = marshal.loads(marshal.dumps(entry))  # a deep copy of plain values
    path = draw(st.sampled_from(_paths(data)))
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[last]
        return data, f"del {path}"
    original = parent[last]
    value = draw(OTHER_VALUES.filter(lambda v: _other_type(original, v)))
    parent[last] = value
    return data, f"{path} = {value!r}"


class Machine:
    """A fresh HOME with a workspace without ``.git`` (so the plan has placeholders), and
    private cache and audit locations."""

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.workspace = self.home / "ws"
        self.workspace.mkdir(parents=True)
        self.cache = root / "cache"
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home), "LANG": "C.UTF-8",
                    "STOCKADE_CACHE_DIR": str(self.cache), "STOCKADE_AUDIT": str(root / "audit.jsonl"),
                    "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}

    def cli(self, *args: str, stdin: str | None = None, wrap: list[str] | None = None,
            env: dict | None = None) -> subprocess.CompletedProcess:
        """``stockade ARGS`` as a subprocess (under ``wrap``, a prefix argv, when given)."""
        return subprocess.run([*(wrap or []), sys.executable, "-m", "stockade", *args], env=env or self.env,
                              cwd=self.workspace, input=stdin, capture_output=True, text=True, timeout=120)

    def entries(self, kind: str) -> list[str]:
        return glob.glob(str(self.cache / kind / "*" / "*.marshal"))


@pytest.fixture(scope="module")
def machine() -> Iterator[Machine]:
    root = box_root()
    saved = {name: os.environ.get(name) for name in ("STOCKADE_CACHE_DIR", "STOCKADE_AUDIT")}
    try:
        m = Machine(root)
        os.environ["STOCKADE_CACHE_DIR"] = str(m.cache)  # the in-process runs below use it too
        os.environ["STOCKADE_AUDIT"] = str(root / "audit.jsonl")
        yield m
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(root, ignore_errors=True)


def _run_in_process(machine: Machine, command: list[str]) -> Any:
    from stockade.runtime.session import run

    out = bytearray()
    return run(command, workspace=str(machine.workspace), environ=machine.env, stdout=out.extend,
               stderr=out.extend, approve=False)


def _only_entry(machine: Machine, kind: str) -> str:
    found = machine.entries(kind)
    assert len(found) == 1, found
    return found[0]


_counter = iter(range(10 ** 9))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_a_damaged_plan_is_a_miss_and_the_run_still_works(machine: Machine, data: Any) -> None:
    for path in machine.entries("plans"):
        os.unlink(path)
    first = _run_in_process(machine, ["true"])
    assert first.ran and first.exit_status == 0
    path = _only_entry(machine, "plans")
    good = marshal.loads(Path(path).read_bytes())
    bad, what = data.draw(damaged(good))
    if data.draw(st.booleans(), label="damage the packed IR's bytes"):
        bad["ir"] = data.draw(st.binary(max_size=8))
        what += "; ir = random bytes"
    Path(path).write_bytes(marshal.dumps(bad))
    # a fresh command text half the time: a verdict miss, so the analyzer loads the plan's IR
    command = ["true"] if data.draw(st.booleans(), label="cached verdict") else ["true", str(next(_counter))]
    outcome = _run_in_process(machine, command)
    assert outcome.ran and outcome.exit_status == 0, (what, outcome.reasons)
    from stockade.runtime.plan import plan_problem

    assert plan_problem(good) is None
    now = marshal.loads(Path(_only_entry(machine, "plans")).read_bytes())
    if plan_problem(bad) is not None:
        assert plan_problem(now) is None, what  # compiled again and replaced


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_a_damaged_verdict_is_a_miss_and_the_run_still_works(machine: Machine, data: Any) -> None:
    command = ["true", f"v{next(_counter)}"]
    before = set(machine.entries("verdicts"))
    first = _run_in_process(machine, command)
    assert first.ran and not first.cached_verdict
    (path,) = set(machine.entries("verdicts")) - before
    assert _run_in_process(machine, command).cached_verdict
    bad, what = data.draw(damaged(marshal.loads(Path(path).read_bytes())))
    Path(path).write_bytes(marshal.dumps(bad))
    outcome = _run_in_process(machine, command)
    assert outcome.ran and outcome.exit_status == 0, what


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_a_damaged_compiled_policy_is_a_miss(machine: Machine, data: Any) -> None:
    from stockade.compiler import cache
    from stockade.compiler.pipeline import compile_policy

    context = {"workspace": str(machine.workspace), "home": str(machine.home), "tmpdir": "/tmp"}
    fresh = compile_policy(None, **context).ir
    path = cache.entry_path("ir", cache.entry_key(None, context, "ir"))
    if os.path.exists(path):
        os.unlink(path)  # what an earlier example left
    assert cache.cached_ir(None, **context) == fresh
    good = marshal.loads(Path(path).read_bytes())
    bad, what = data.draw(damaged(good))
    Path(path).write_bytes(marshal.dumps(bad))
    loaded = cache.cached_ir(None, **context)  # never raises
    if cache.load_checked("ir", cache.entry_key(None, context, "ir")) is None or \
            cache.ir_json_problem(bad.get("ir")) is not None:
        assert loaded == fresh, what  # a miss: compiled again
        assert cache.ir_json_problem(marshal.loads(Path(path).read_bytes())["ir"]) is None


# -- through the CLI: every kind of damage, every command --------------------------------

def _no_traceback(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr and "Error:" not in done.stderr.replace("error[", ""), done.stderr


def _all_commands(machine: Machine, wrap: list[str] | None = None, warn: bool = True) -> None:
    """``run``, ``analyze``, ``hook`` and ``check`` all work (no traceback; a one-line
    warning when the cache cannot be written)."""
    ws = str(machine.workspace)
    run = machine.cli("run", "--workspace", ws, "--", "true", wrap=wrap)
    assert run.returncode == 0, run.stderr
    analyze = machine.cli("analyze", "--workspace", ws, "--", "ls", wrap=wrap)
    assert analyze.returncode == 0 and analyze.stdout.startswith("allow"), analyze.stderr
    hook = machine.cli("hook", "generic", "--workspace", ws, stdin='{"command": "ls"}', wrap=wrap)
    assert hook.returncode == 0 and '"decision": "allow"' in hook.stdout, hook.stderr
    check = machine.cli("check", wrap=wrap)
    assert check.returncode == 0, check.stderr
    for done in (run, analyze, hook, check):
        _no_traceback(done)
    if warn:
        for done in (run, analyze, hook):
            lines = [line for line in done.stderr.splitlines() if "warning" in line]
            assert len(lines) == 1 and "cache" in lines[0] and "going on without the cache" in lines[0], done.stderr


def test_damaged_entries_of_each_kind_through_the_cli(machine: Machine) -> None:
    """Each field of each kind of entry deleted, or of another type, for the commands that
    read it: ``run`` (plans, verdicts), ``analyze`` and ``hook`` (compiled policies)."""
    shutil.rmtree(machine.cache, ignore_errors=True)
    _all_commands(machine, warn=False)
    ws = str(machine.workspace)
    readers = {"plans": [("run", "--workspace", ws, "--", "true")],
               "verdicts": [("run", "--workspace", ws, "--", "true")],
               "ir": [("analyze", "--workspace", ws, "--", "ls"), ("hook", "generic", "--workspace", ws)]}
    others = (None, 7, "x", [1], {"a": b"x"}, b"\x00")
    # of a plan, the fields whose damage gave the original code a traceback (every field is
    # damaged in process above)
    plan_fields = {"argv", "placeholders", "seccomp", "facts", "limits", "env_rules", "sources", "variables", "ir"}
    for kind, commands in readers.items():
        (path,) = machine.entries(kind)
        entry = marshal.loads(Path(path).read_bytes())
        for index, field in enumerate(sorted(f for f in entry if kind != "plans" or f in plan_fields)):
            deleted = {k: v for k, v in entry.items() if k != field}
            for bad in [{**entry, field: others[index % len(others)]}] + ([deleted] if index % 3 == 0 else []):
                Path(path).write_bytes(marshal.dumps(bad))
                for command in commands:
                    done = machine.cli(*command, stdin='{"command": "ls"}' if command[0] == "hook" else None)
                    _no_traceback(done)
                    assert done.returncode == 0, (kind, field, done.stderr)
                    assert "allow" in done.stdout or command[0] == "run", (kind, field, done.stdout)
                Path(path).write_bytes(marshal.dumps(entry))


@pytest.mark.parametrize("kind", ["fifo", "directory", "truncated"])
def test_an_entry_that_is_not_a_readable_file_is_a_miss(machine: Machine, kind: str) -> None:
    shutil.rmtree(machine.cache, ignore_errors=True)
    _all_commands(machine, warn=False)
    for path in [*machine.entries("plans"), *machine.entries("verdicts"), *machine.entries("ir"),
                 str(machine.cache / "bwrap-probe")]:
        data = Path(path).read_bytes()
        os.unlink(path)
        if kind == "fifo":
            os.mkfifo(path)  # reading it would block forever
        elif kind == "directory":
            os.mkdir(path)
        else:
            Path(path).write_bytes(data[: len(data) // 2])
    _all_commands(machine, warn=kind == "directory")  # a FIFO or a truncated entry is replaced


@pytest.mark.parametrize("where", ["file", "under a file", "entry kind is a file"])
def test_an_unusable_cache_directory_gives_runs_without_the_cache(machine: Machine, where: str) -> None:
    shutil.rmtree(machine.cache, ignore_errors=True)
    if where == "file":
        machine.cache.write_text("not a directory\n")
    elif where == "under a file":
        machine.cache.write_text("not a directory\n")
        machine.env["STOCKADE_CACHE_DIR"] = str(machine.cache / "stockade")
    else:
        machine.cache.mkdir()
        for kind in ("plans", "verdicts", "ir"):
            (machine.cache / kind).write_text("")
    try:
        _all_commands(machine)
    finally:
        machine.env["STOCKADE_CACHE_DIR"] = str(machine.cache)
        if machine.cache.is_dir():
            shutil.rmtree(machine.cache)
        else:
            machine.cache.unlink()


@pytest.mark.parametrize("warm", [False, True], ids=["empty", "warm"])
def test_a_cache_on_a_read_only_file_system(machine: Machine, warm: bool) -> None:
    """EROFS: stockade itself runs in a bubblewrap box where its cache directory is mounted
    read-only (its sandboxes nest inside)."""
    shutil.rmtree(machine.cache, ignore_errors=True)
    machine.cache.mkdir()
    if warm:
        _all_commands(machine, warn=False)
    wrap = [shutil.which("bwrap") or "bwrap", "--dev-bind", "/", "/", "--ro-bind", str(machine.cache),
            str(machine.cache), "--die-with-parent", "--"]
    if warm:  # the plan is a hit; the verdict of a new command text cannot be stored
        run = machine.cli("run", "--workspace", str(machine.workspace), "--", "true", "new", wrap=wrap)
        assert run.returncode == 0, run.stderr
        _no_traceback(run)
        assert run.stderr.count("warning") == 1 and "Read-only file system" in run.stderr, run.stderr
    else:
        _all_commands(machine, wrap=wrap)
