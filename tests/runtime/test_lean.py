"""The cached ``stockade run`` path stays lean: what it imports, the argparse-free fast path
of the CLI (same answers as argparse, or a fallback to it), and the small records that
replace dataclasses on that path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.runtime.conftest import POLICY, box_root, make_box

#: Modules the cached run path must not import (what it achieved; see docs/runtime.md):
#: stockade's slow stages, and every standard module that costs a millisecond or more to
#: import (``typing``, ``json`` and ``enum`` all import ``re``, which compiles patterns).
NOT_ON_THE_CACHED_PATH = ("lark", "tree_sitter", "tree_sitter_bash", "stockade.compiler.pipeline",
                          "stockade.compiler.ir", "stockade.compiler.query", "stockade.analyzer",
                          "stockade.policy_lang", "stockade.diagnostics", "stockade.backends",
                          # the cold halves of the run path's modules
                          "stockade.runtime.preview", "stockade.runtime.audit_read", "stockade.runtime.watchdog",
                          "stockade.cli.run_output", "importlib", "warnings", "dataclasses",
                          "inspect", "argparse", "datetime", "platform", "hashlib", "shlex", "base64", "typing",
                          "re", "json", "enum", "subprocess", "selectors", "signal", "threading", "types",
                          "collections", "functools", "contextlib", "struct", "binascii", "pathlib", "tempfile",
                          "shutil", "fnmatch", "importlib.util")


@pytest.fixture(scope="module")
def lean_box():
    import shutil

    root = box_root()
    try:
        yield make_box(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")
def test_cached_cli_run_imports_only_what_it_needs(lean_box, cli_env) -> None:
    env = dict(cli_env, HOME=str(lean_box.home), TMPDIR=str(lean_box.root / "tmp"))
    args = ["run", "--policy", str(POLICY), "--workspace", str(lean_box.workspace), "--", "true"]
    warm = subprocess.run([sys.executable, "-m", "stockade", *args], env=env, capture_output=True, text=True,
                          timeout=120)
    assert warm.returncode == 0, warm.stderr  # fills the plan and verdict caches
    # without `site` (-S), whose .pth files may import some of these themselves; the cached
    # path needs nothing from site-packages
    probe = ("import sys; sys.path.insert(0, sys.argv[2]); from stockade.cli.main import main; "
             "code = main(sys.argv[3:]); banned = tuple(sys.argv[1].split(',')); "
             "print(sorted(m for m in sys.modules if m in banned or m.startswith(tuple(b + '.' for b in banned)))); "
             "sys.exit(code)")
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-S", "-c", probe, ",".join(NOT_ON_THE_CACHED_PATH), root, *args],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")
def test_a_run_that_never_connects_loads_no_broker_protocol(lean_box, cli_env) -> None:
    """The coding-agent policy has host rules: the run's listeners are in the sandbox (its
    record says how connections would get out), but nothing connected, so the broker's
    protocols and the connect handoff were never loaded (:class:`stockade.runtime.netns.Standby`)."""
    import json

    env = dict(cli_env, HOME=str(lean_box.home), TMPDIR=str(lean_box.root / "tmp"))
    args = ["run", "--policy", str(POLICY), "--workspace", str(lean_box.workspace), "--", "true"]
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); from stockade.cli.main import main; "
             "code = main(sys.argv[2:]); "
             "print(sorted(m for m in sys.modules if m in ('stockade.runtime.broker', 'stockade.runtime.handoff'))); "
             "print('stockade.runtime.netns' in sys.modules); sys.exit(code)")
    root = str(Path(__file__).resolve().parents[2])
    warm = subprocess.run([sys.executable, "-m", "stockade", *args], env=env, capture_output=True, text=True,
                          timeout=120)
    assert warm.returncode == 0, warm.stderr  # fills the plan and verdict caches
    done = subprocess.run([sys.executable, "-S", "-c", probe, root, *args], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "True"]
    audit = Path(cli_env["XDG_STATE_HOME"]) / "stockade" / "audit.jsonl"
    last = [json.loads(line) for line in audit.read_text().splitlines() if '"event":"run"' in line.replace(" ", "")][-1]
    assert last["net_blocked"] == 0 and last["net_handoff"]


PLAIN = [
    ["--", "true"],
    ["--policy", "p.policy", "--workspace", "/w", "--", "make", "test"],
    ["-p", "p", "-w", "/w", "--audit", "a.jsonl", "--approve", "--no-cache", "--", "ls", "-la"],
    ["--preview", "--diff", "--apply", "--format", "json", "--", "sh", "-c", "x"],
    ["-c", "echo hi"],
    ["-c", "echo hi", "--", "true"],
    ["--diff", "--", "true"],
    [],
    ["--"],
    ["--", "--policy", "x"],
]
FALLBACK = [
    ["true"], ["--pol", "p", "--", "true"], ["--policy=p", "--", "true"], ["-pp", "--", "true"], ["-h"],
    ["--policy", "-x", "--", "true"], ["--format", "xml", "--", "true"], ["--policy", "a", "--policy", "b"],
    ["--approve", "--approve", "--", "true"], ["--policy"], ["--unknown", "--", "true"], ["-c"],
]


def _argparse(argv: list[str]) -> dict | None:
    from stockade.cli.main import build_parser

    try:
        args = build_parser("run").parse_args(["run", *argv])
    except SystemExit:
        return None
    return vars(args)


@pytest.mark.parametrize("argv", PLAIN, ids=" ".join)
def test_fast_parse_matches_argparse(argv: list[str]) -> None:
    from stockade.cli.cmd_run import parse_fast

    fast = parse_fast(argv)
    assert fast is not None
    assert vars(fast) == _argparse(argv)


@pytest.mark.parametrize("argv", FALLBACK, ids=" ".join)
def test_fast_parse_leaves_everything_else_to_argparse(argv: list[str]) -> None:
    from stockade.cli.cmd_run import parse_fast

    assert parse_fast(argv) is None


@pytest.mark.parametrize("argv", [["--policy"], ["--format", "xml", "--", "true"], ["-c"]])
def test_errors_are_argparse_errors(argv: list[str], tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "stockade", "run", *argv], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 2 and "usage:" in done.stderr


def test_records_behave_like_frozen_dataclasses() -> None:
    from stockade.runtime.gate import Judgement
    from stockade.runtime.limits import Limits
    from stockade.runtime.record import FrozenRecordError
    from stockade.runtime.session import RunOutcome

    limits = Limits(timeout=3)
    assert limits == Limits(3) and limits != Limits() and hash(limits) == hash(Limits(timeout=3))
    assert repr(limits) == ("Limits(timeout=3, memory=None, cpu=None, cpus=None, processes=None, output=None, "
                            "file_size=None, disk=None)")
    with pytest.raises(AttributeError):
        limits.timeout = 4  # type: ignore[misc]
    with pytest.raises(FrozenRecordError):
        del limits.timeout
    with pytest.raises(TypeError):
        Limits(nope=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Judgement("allow")  # type: ignore[call-arg]
    one, two = Judgement("allow", ()), Judgement("allow", ())
    assert one.detail == {} and one.detail is not two.detail and one.cached is False
    outcome = RunOutcome("allow", (), False, ("true",), "true", "/w", "/a")
    assert outcome.limits == Limits() and outcome.detail == {}
    ran = outcome.replace(ran=True, exit_status=0)
    assert ran.ran and ran.exit_status == 0 and not outcome.ran and "sandbox_argv" not in repr(ran)
