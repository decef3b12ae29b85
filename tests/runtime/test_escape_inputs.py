"""What the next run trusts is out of the sandbox's reach: the policy file and its includes,
stockade's own installation (a venv under the workspace: site-packages, ``.pth`` files, the
package, the launcher) and the bubblewrap binary (a shim planted on PATH is refused).

Every attack runs for real under bubblewrap through ``stockade run`` (the library, or the
CLI as a subprocess) with a private HOME, workspace, cache and audit file under a fresh
directory outside ``/tmp``; the shims and ``.pth`` files only write a marker file in that
directory (and exec the real bubblewrap), so that a test that fails leaves no harm behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.runtime.session import run
from tests.runtime.conftest import ROOT, box_root

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.exists("/usr/bin/bwrap"),
                                reason="bubblewrap is Linux only")

POLICY = """policy "inputs"
include "conf/base.policy"

filesystem {
    read  /
    deny  ~/.ssh
    write $WORKSPACE
}

commands {
    unknown-effects confirm
}
"""

BASE = """policy "base"

filesystem {
    deny $WORKSPACE/secret.txt
}
"""

#: Inline Python (the analyzer cannot see into it: `confirm`, approved), so only the sandbox
#: stands in the way.  Prints {attempt: "ok" | errno name}.
ATTEMPTS = """
import errno, json, os, sys
results = {}
def attempt(name, fn, *args):
    try:
        fn(*args)
        results[name] = "ok"
    except OSError as exc:
        results[name] = errno.errorcode.get(exc.errno, str(exc.errno))
def append(path, text="\\n# changed\\n"):
    with open(path, "a") as handle:
        handle.write(text)
def create(path, text):
    with open(path, "x") as handle:
        handle.write(text)
def swap(path, text):
    create(path + ".new", text)
    os.replace(path + ".new", path)
"""


@pytest.fixture()
def machine() -> Iterator[dict[str, Path]]:
    """A private HOME, workspace (holding the policy and its include), cache and audit
    file, under a fresh directory outside /tmp."""
    root = box_root().resolve()
    home, ws = root / "home", root / "ws"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY canary\n")
    (ws / "conf").mkdir(parents=True)
    (ws / "team.policy").write_text(POLICY)
    (ws / "conf" / "base.policy").write_text(BASE)
    (ws / "secret.txt").write_text("SECRET canary\n")
    try:
        yield {"root": root, "home": home, "ws": ws, "cache": root / "cache", "audit": root / "audit.jsonl",
               "marker": root / "MARKER"}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _environ(m: dict[str, Path], path: str = "/usr/local/bin:/usr/bin:/bin") -> dict[str, str]:
    return {"PATH": path, "HOME": str(m["home"]), "TMPDIR": str(m["root"] / "tmp"), "LANG": "C.UTF-8",
            "STOCKADE_CACHE_DIR": str(m["cache"]), "STOCKADE_AUDIT": str(m["audit"])}


def _results(stdout: str) -> dict[str, str]:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert lines, stdout
    return json.loads(lines[-1])


def test_the_sandbox_cannot_edit_the_policy_or_its_include(machine, monkeypatch: pytest.MonkeyPatch) -> None:
    """The policy and its include live in the writable workspace: writing, replacing or
    renaming them (or the include's directory) fails, and the next run still denies."""
    ws = machine["ws"]
    monkeypatch.setenv("STOCKADE_CACHE_DIR", str(machine["cache"]))
    before = {name: (ws / name).read_bytes() for name in ("team.policy", "conf/base.policy")}
    attack = ATTEMPTS + (
        f"os.chdir({str(ws)!r})\n"
        "attempt('edit the policy', append, 'team.policy', '\\nfilesystem {\\n    write /\\n}\\n')\n"
        "attempt('edit the include', append, 'conf/base.policy')\n"
        "attempt('truncate the include', os.truncate, 'conf/base.policy', 0)\n"
        "attempt('replace the include', swap, 'conf/base.policy', 'policy \"base\"\\n')\n"
        "attempt('move the include dir', os.rename, 'conf', 'conf.away')\n"
        "attempt('move the policy', os.rename, 'team.policy', 'team.away')\n"
        "attempt('remove the policy', os.unlink, 'team.policy')\n"
        "print(json.dumps(results))\n")
    # (the name is built: the analyzer denies code that opens the denied file by its name, and this
    # run must reach the sandbox)
    read_secret = [sys.executable, "-I", "-S", "-c", "print(open('secret' + '.txt').read())"]
    hashes = set()
    for _ in range(2):  # compiled, then from the cached plan
        out, err = bytearray(), bytearray()
        outcome = run([sys.executable, "-I", "-S", "-c", attack], policy=str(ws / "team.policy"), workspace=str(ws),
                      audit=str(machine["audit"]), environ=_environ(machine), stdout=out.extend, stderr=err.extend,
                      approve=True)
        assert outcome.ran and outcome.exit_status == 0, (out.decode(), err.decode())
        results = _results(out.decode())
        assert [name for name, value in results.items() if value == "ok"] == [], results
        assert results["edit the policy"] == "EROFS" and results["edit the include"] == "EROFS", results
        assert {name: (ws / name).read_bytes() for name in before} == before
        # the next run: the same policy, still denying the secret (the sandbox's read fails)
        out, err = bytearray(), bytearray()
        after = run(read_secret, policy=str(ws / "team.policy"), workspace=str(ws), audit=str(machine["audit"]),
                    environ=_environ(machine), stdout=out.extend, stderr=err.extend, approve=True)
        assert after.ran and after.exit_status != 0 and "SECRET" not in out.decode(), (out.decode(), err.decode())
        hashes.update({outcome.policy_hash, after.policy_hash})
    assert len(hashes) == 1


def _cli(args: list[str], env: dict[str, str], cwd: Path, python: str = sys.executable) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "stockade", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def _shim(directory: Path, marker: Path) -> Path:
    """A harmless stand-in for bubblewrap: it leaves a marker and execs the real one."""
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "bwrap"
    shim.write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexec /usr/bin/bwrap \"$@\"\n")
    shim.chmod(0o755)
    return shim


def test_a_bwrap_planted_on_path_by_the_sandbox_is_refused(machine) -> None:
    """A workspace directory early on PATH: the sandbox plants a `bwrap` there; the next run
    refuses it (R512, naming it and the writable directory) and the shim never runs."""
    ws, marker = machine["ws"], machine["marker"]
    bindir = ws / "bin"
    bindir.mkdir()
    env = {**os.environ, **_environ(machine, f"{bindir}:/usr/local/bin:/usr/bin:/bin"), "PYTHONPATH": str(ROOT)}
    shim = f"#!/bin/sh\necho ran >> '{marker}'\nexec /usr/bin/bwrap \"$@\"\n"
    plant = ATTEMPTS + (
        f"attempt('plant', create, {str(bindir / 'bwrap')!r}, {shim!r})\n"
        f"attempt('chmod', os.chmod, {str(bindir / 'bwrap')!r}, 0o755)\n"
        "print(json.dumps(results))\n")
    args = ["run", "--policy", str(ws / "team.policy"), "--workspace", str(ws), "--approve", "--"]
    first = _cli([*args, sys.executable, "-I", "-S", "-c", plant], env, machine["root"])
    assert first.returncode == 0 and _results(first.stdout) == {"plant": "ok", "chmod": "ok"}, first.stderr
    assert (bindir / "bwrap").is_file()
    for _ in range(2):  # the shim is refused every time, compiled or cached
        second = _cli([*args, "true"], env, machine["root"])
        assert second.returncode == 3, second.stdout + second.stderr
        assert "R512" in second.stderr and f"`{bindir / 'bwrap'}`" in second.stderr, second.stderr
        assert f"the policy lets the sandbox write `{bindir}" in second.stderr, second.stderr
    assert not marker.exists()


@pytest.mark.parametrize("flaw", ["group-writable directory", "owned by another user"])
def test_an_untrustworthy_bwrap_on_path_is_refused(machine, flaw: str) -> None:
    """A `bwrap` whose directory others may write, or that another user owns, is refused
    before it runs (also before the probe stamp is looked at)."""
    ws, marker = machine["ws"], machine["marker"]
    shim = _shim(machine["root"] / "bin", marker)
    if flaw == "group-writable directory":
        shim.parent.chmod(0o775)
        expected = f"`{shim.parent}` is writable by group"
    else:
        os.chown(shim, 65534, 65534)
        expected = f"`{shim}` is owned by uid 65534, not root or the caller"
    env = {**os.environ, **_environ(machine, f"{shim.parent}:/usr/bin:/bin"), "PYTHONPATH": str(ROOT)}
    done = _cli(["run", "--policy", str(ws / "team.policy"), "--workspace", str(ws), "--", "true"], env,
                machine["root"])
    assert done.returncode == 3 and "R512" in done.stderr and expected in done.stderr, done.stderr
    assert not marker.exists()


def test_a_replaced_bwrap_is_probed_again(machine) -> None:
    """The probe stamp names the binary by inode and ctime too: a binary replaced with one
    of the same size and mtime does not match the stamp of the one probed."""
    from stockade.runtime.sandbox import _probe_key

    trusted = machine["root"] / "trusted"
    trusted.mkdir()
    binary = trusted / "bwrap"
    shutil.copy2("/usr/bin/bwrap", binary)
    before = _probe_key(str(binary))
    st = binary.stat()
    data = bytearray(binary.read_bytes())
    data[-1] ^= 0xFF  # never run: only its identity matters
    (trusted / "new").write_bytes(bytes(data))
    os.replace(trusted / "new", binary)
    os.utime(binary, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert binary.stat().st_size == st.st_size and binary.stat().st_mtime_ns == st.st_mtime_ns
    assert _probe_key(str(binary)) != before


def _venv(machine: dict[str, Path]) -> tuple[Path, Path]:
    """A venv under the workspace with this checkout's stockade copied into its
    site-packages and the launcher in its bin (deps from the system site-packages)."""
    venv = machine["ws"] / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True,
                   timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    shutil.copytree(ROOT / "stockade", site / "stockade", ignore=shutil.ignore_patterns("__pycache__"))
    launcher = venv / "bin" / "stockade"
    launcher.write_text(f"#!{venv / 'bin' / 'python'}\n" + (ROOT / "bin" / "stockade").read_text().split("\n", 1)[1])
    launcher.chmod(0o755)
    return venv, site


def test_the_sandbox_cannot_change_stockades_installation(machine) -> None:
    """Stockade installed in a venv under the workspace: the sandboxed command cannot plant
    a `.pth` in its site-packages, edit or add to the stockade package, edit the launcher or
    `pyvenv.cfg`, nor rename the venv or its site-packages away; the next start runs no
    planted code."""
    ws, marker = machine["ws"], machine["marker"]
    venv, site = _venv(machine)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, **_environ(machine)}
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import stockade; print(stockade.__file__)"],
                           env=env, cwd=machine["root"], capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(site / "stockade" / "__init__.py"), where
    package = site / "stockade"
    before = {p: p.read_bytes() for p in [package / "__init__.py", venv / "bin" / "stockade", venv / "pyvenv.cfg"]}
    # harmless: a marker (its path through a variable: the analyzer denies inline code that opens
    # a path it names for writing where the policy does not let it write, and this run must
    # reach the sandbox)
    pth = f"import os; m = {str(marker)!r}; open(m, 'a').close()\n"
    attack = ATTEMPTS + (
        f"attempt('plant a .pth', create, {str(site / 'evil.pth')!r}, {pth!r})\n"
        f"attempt('edit the package', append, {str(package / '__init__.py')!r})\n"
        f"attempt('add a module', create, {str(package / 'evil.py')!r}, 'x = 1\\n')\n"
        f"attempt('edit the launcher', append, {str(venv / 'bin' / 'stockade')!r})\n"
        f"attempt('edit pyvenv.cfg', append, {str(venv / 'pyvenv.cfg')!r})\n"
        f"attempt('move site-packages', os.rename, {str(site)!r}, {str(site) + '.away'!r})\n"
        f"attempt('move the venv', os.rename, {str(venv)!r}, {str(venv) + '.away'!r})\n"
        "print(json.dumps(results))\n")
    args = ["run", "--policy", str(ws / "team.policy"), "--workspace", str(ws), "--approve", "--"]
    for launch in ([str(venv / "bin" / "stockade")], [str(venv / "bin" / "python"), "-m", "stockade"]):
        done = subprocess.run([*launch, *args, sys.executable, "-I", "-S", "-c", attack], env=env,
                              cwd=machine["root"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        results = _results(done.stdout)
        assert [name for name, value in results.items() if value == "ok"] == [], results
        assert results["plant a .pth"] == "EROFS" and results["edit the package"] == "EROFS", results
    assert not (site / "evil.pth").exists() and not (package / "evil.py").exists()
    assert {p: p.read_bytes() for p in before} == before
    # the next start of stockade runs nothing planted
    done = subprocess.run([str(venv / "bin" / "stockade"), *args, "true"], env=env, cwd=machine["root"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()


def test_a_plan_cached_for_another_interpreter_is_not_reused(machine) -> None:
    """The same stockade code (this checkout, on the path through a `.pth`) started by two
    interpreters that share one cache: the plan the first cached protects nothing of the
    second's venv under the workspace, so the second compiles its own, which does."""
    ws = machine["ws"]
    venv = ws / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True,
                   timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "stockade-dev.pth").write_text(f"{ROOT}\n")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, **_environ(machine)}
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import stockade; print(stockade.__file__)"],
                           env=env, cwd=machine["root"], capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(ROOT / "stockade" / "__init__.py"), where
    args = ["run", "--policy", str(ws / "team.policy"), "--workspace", str(ws), "--approve", "--"]
    first = _cli([*args, "true"], {**env, "PYTHONPATH": str(ROOT)}, machine["root"])
    assert first.returncode == 0, first.stderr
    attack = ATTEMPTS + (
        f"attempt('plant a .pth', create, {str(site / 'evil.pth')!r}, '# planted\\n')\n"
        "print(json.dumps(results))\n")
    second = _cli([*args, sys.executable, "-I", "-S", "-c", attack], env, machine["root"],
                  python=str(venv / "bin" / "python"))
    assert second.returncode == 0, second.stderr
    assert _results(second.stdout) == {"plant a .pth": "EROFS"} and not (site / "evil.pth").exists()


def test_a_policy_named_through_a_symlink_the_sandbox_could_replace_is_refused(machine) -> None:
    """A mount cannot protect a symlink: a policy named through one in the writable
    workspace could be swapped by the command for the next run, so stockade refuses (R513)
    before anything runs, naming the real path to use."""
    ws, root = machine["ws"], machine["root"]
    (root / "policies" / "conf").mkdir(parents=True)
    (root / "policies" / "team.policy").write_text(POLICY)
    (root / "policies" / "conf" / "base.policy").write_text(BASE)
    (ws / "linked.policy").symlink_to(root / "policies" / "team.policy")
    attack = ATTEMPTS + (
        f"os.chdir({str(ws)!r})\n"
        "attempt('unlink', os.unlink, 'linked.policy')\n"
        "attempt('swap', create, 'linked.policy',"
        " 'policy \"loose\"\\nfilesystem {\\n    read /\\n    write /\\n}\\n')\n"
        "print(json.dumps(results))\n")
    env = {**os.environ, **_environ(machine), "PYTHONPATH": str(ROOT)}
    for _ in range(2):
        done = _cli(["run", "--policy", str(ws / "linked.policy"), "--workspace", str(ws), "--approve", "--",
                     sys.executable, "-I", "-S", "-c", attack], env, root)
        assert done.returncode == 3, done.stdout + done.stderr
        assert "R513" in done.stderr and f"the symlink `{ws / 'linked.policy'}`" in done.stderr, done.stderr
        assert (ws / "linked.policy").is_symlink()
    real = _cli(["run", "--policy", str(root / "policies" / "team.policy"), "--workspace", str(ws), "--", "true"],
                env, root)
    assert real.returncode == 0, real.stderr


def test_a_compiled_policy_given_to_run_has_its_files_protected_too(machine, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run(policy=PolicyIR)` (never cached): the files the IR was compiled from are
    read-only inside as well."""
    import stockade

    ws = machine["ws"]
    monkeypatch.setenv("STOCKADE_CACHE_DIR", str(machine["cache"]))
    monkeypatch.setenv("HOME", str(machine["home"]))
    policy = stockade.load_policy(str(ws / "team.policy"), workspace=str(ws))
    attack = ATTEMPTS + (
        f"attempt('edit the policy', append, {str(ws / 'team.policy')!r})\n"
        f"attempt('edit the include', append, {str(ws / 'conf' / 'base.policy')!r})\n"
        "print(json.dumps(results))\n")
    out, err = bytearray(), bytearray()
    outcome = run([sys.executable, "-I", "-S", "-c", attack], policy=policy.ir, audit=str(machine["audit"]),
                  environ=_environ(machine), stdout=out.extend, stderr=err.extend, approve=True)
    assert outcome.ran and outcome.exit_status == 0, (out.decode(), err.decode())
    assert _results(out.decode()) == {"edit the policy": "EROFS", "edit the include": "EROFS"}


def test_a_missing_user_site_cannot_be_created_where_home_is_writable(machine) -> None:
    """`write ~` and no user site directory yet: the command cannot create it (and plant a
    `.pth` that the next start of stockade would run); the rest of home stays writable."""
    ws, home, marker = machine["ws"], machine["home"], machine["marker"]
    (ws / "home.policy").write_text('policy "home"\n\nfilesystem {\n    read /\n    write ~\n}\n\n'
                                    "commands {\n    unknown-effects confirm\n}\n")
    env = {**os.environ, **_environ(machine), "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONNOUSERSITE", None)
    usersite = subprocess.run([sys.executable, "-c", "import site; print(site.ENABLE_USER_SITE, site.USER_SITE)"],
                              env=env, capture_output=True, text=True, timeout=60).stdout.split()
    if usersite[0] != "True":
        pytest.skip("the user site directory is disabled for this interpreter")
    site = Path(usersite[1])
    assert site.is_relative_to(home) and not (home / ".local").exists()
    pth = f"import os; m = {str(marker)!r}; open(m, 'a').close()\n"  # harmless: a marker (see above)
    attack = ATTEMPTS + (
        f"attempt('make the user site', os.makedirs, {str(site)!r})\n"
        f"attempt('plant a .pth', create, {str(site / 'evil.pth')!r}, {pth!r})\n"
        f"attempt('write home', create, {str(home / 'notes.txt')!r}, 'fine\\n')\n"
        "print(json.dumps(results))\n")
    args = ["run", "--policy", str(ws / "home.policy"), "--workspace", str(ws), "--approve", "--"]
    for _ in range(2):  # compiled, then cached
        done = _cli([*args, sys.executable, "-I", "-S", "-c", attack], env, machine["root"])
        assert done.returncode == 0, done.stdout + done.stderr
        results = _results(done.stdout)
        assert results["make the user site"] != "ok" and results["plant a .pth"] != "ok", results
        assert not site.exists() and results["write home"] == "ok", results
        (home / "notes.txt").unlink()
    assert not marker.exists()
