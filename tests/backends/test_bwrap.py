"""Unit and golden tests of the bubblewrap backend (the argv it generates, its warnings and
errors); running it for real is ``test_bwrap_conformance``."""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from pathlib import Path

import pytest

import stockade
from stockade.backends.base import UnsupportedRules, compile_ir
from stockade.backends.bwrap import BwrapBackend
from stockade.backends.paths import order_key
from stockade.compiler.ir import Context, EnvRule, FsRule, HostPattern, NetRule, Network, Origin, PolicyIR
from stockade.compiler.pipeline import compile_policy
from stockade.diagnostics import StockadeError
from tests.backends.bwrap_probe import build_fixture

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden" / "bwrap"
MOUNT_OPTIONS = {"--ro-bind", "--bind", "--tmpfs", "--dev", "--proc", "--symlink"}


def _ir(tmp: Path, *rules: FsRule, network: Network = Network(), env: tuple[EnvRule, ...] = ()) -> PolicyIR:
    return PolicyIR("t", Context(str(tmp), str(tmp / "home"), str(tmp / "tmp")), filesystem=rules,
                    network=network, environment=env)


def _body(text: str) -> str:
    """The rendered text without its leading comment lines."""
    lines = text.split("\n")
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "\n".join(lines)


def _groups(text: str) -> list[list[str]]:
    """The argv groups of the rendered text (one option per line)."""
    body = [line.rstrip(" \\") for line in _body(text).splitlines()[1:]]
    return [shlex.split(line) for line in body]


def _argv_from_text(text: str) -> list[str]:
    """Parse the rendered text back as a shell would (comment lines dropped)."""
    return shlex.split(_body(text).replace(" \\\n", " "))


def _mount_dests(argv: list[str]) -> list[str]:
    dests = []
    for i, arg in enumerate(argv):
        if arg in MOUNT_OPTIONS:
            dests.append(argv[i + 2] if arg in ("--ro-bind", "--bind", "--symlink") else argv[i + 1])
    return dests


# -- goldens ---------------------------------------------------------------------------------

@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.policy")), ids=lambda p: p.stem)
def test_golden(example: Path) -> None:
    # a root directly under /tmp, so that nothing but `$ROOT` varies between runs
    with tempfile.TemporaryDirectory(prefix="stockade-golden-", dir="/tmp") as raw:
        _check_golden(example, build_fixture(os.path.realpath(raw)))


def _check_golden(example: Path, fx: dict[str, str]) -> None:
    ir = compile_policy(str(example), workspace=fx["ws"], home=fx["home"], tmpdir=fx["tmp"]).ir
    artifact = compile_ir(ir, "bwrap", environ={"PATH": "/usr/bin:/bin", "HOME": "/home/dev", "GH_TOKEN": "x",
                                                "LANG": "C.UTF-8"}, glob_roots=[fx["root"]], seccomp_arch="x86_64")
    data = {key: value for key, value in artifact.data.items() if key != "warnings"}
    rendered = (artifact.text + "# data: " + json.dumps(data, indent=1, sort_keys=True).replace("\n", "\n# ")
                + "\n" + "".join(f"# warning: {w}\n" for w in artifact.warnings))
    rendered = rendered.replace(fx["root"], "$ROOT").replace(os.path.dirname(stockade.__file__), "$STOCKADE")
    golden = GOLDEN / (example.stem + ".bwrap")
    if os.environ.get("STOCKADE_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(rendered)
    assert golden.exists(), f"missing golden file {golden}; run with STOCKADE_UPDATE_GOLDEN=1"
    assert rendered == golden.read_text()


# -- structure -------------------------------------------------------------------------------

def test_argv_shape_is_complete_and_deterministic(tmp_path: Path) -> None:
    fx = build_fixture(str(tmp_path.resolve()))
    ir = compile_policy(str(ROOT / "examples/coding-agent.policy"), workspace=fx["ws"], home=fx["home"],
                        tmpdir=fx["tmp"]).ir
    first = compile_ir(ir, "bwrap", glob_roots=[fx["root"]])
    argv = first.data["argv"]
    assert argv[0] == "bwrap" and argv[-1] == "--"
    for flag in ("--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                 "--unshare-net", "--die-with-parent", "--new-session", "--clearenv"):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv[argv.index("--chdir") + 1] == fx["ws"]
    assert argv[argv.index("--ro-bind"):argv.index("--ro-bind") + 3] == ["--ro-bind", "/", "/"]
    dests = _mount_dests(argv)
    assert dests == sorted(dests, key=order_key)  # shallow -> deep
    assert compile_ir(ir, "bwrap", glob_roots=[fx["root"]]).data == first.data
    # the text is the same argv, one option per line
    assert ["bwrap"] + [arg for group in _groups(first.text) for arg in group] == argv
    assert _argv_from_text(first.text) == argv


def test_denied_dirs_files_and_readonly_rebinds(tmp_path: Path) -> None:
    (tmp_path / "ws/.git/hooks").mkdir(parents=True)
    (tmp_path / "ws/secret/pub").mkdir(parents=True)
    (tmp_path / "ws/key").write_text("k")
    ws = tmp_path / "ws"
    ir = _ir(ws, FsRule("read", "/"), FsRule("write", str(ws)), FsRule("readonly", f"{ws}/.git/hooks"),
             FsRule("deny", f"{ws}/secret"), FsRule("read", f"{ws}/secret/pub"), FsRule("deny", f"{ws}/key"))
    groups = _groups(compile_ir(ir, "bwrap").text)
    assert ["--bind", str(ws), str(ws)] in groups
    assert ["--bind-try", f"{ws}/.git", f"{ws}/.git"] in groups  # pin: .git cannot be moved aside
    assert ["--ro-bind", f"{ws}/.git/hooks", f"{ws}/.git/hooks"] in groups
    assert ["--perms", "0111", "--tmpfs", f"{ws}/secret"] in groups  # traversable to reach pub
    assert ["--ro-bind", f"{ws}/secret/pub", f"{ws}/secret/pub"] in groups
    assert ["--ro-bind", "/dev/null", f"{ws}/key"] in groups
    assert ["--remount-ro", f"{ws}/secret"] in groups


def test_minimal_root_when_root_is_not_readable(tmp_path: Path) -> None:
    ir = _ir(tmp_path, FsRule("read", "/usr"), FsRule("write", str(tmp_path)))
    artifact = compile_ir(ir, "bwrap")
    groups = _groups(artifact.text)
    assert ["--ro-bind", "/", "/"] not in groups
    assert ["--ro-bind", "/usr", "/usr"] in groups
    assert ["--chmod", "0111", "/"] in groups and ["--remount-ro", "/"] in groups
    assert artifact.data["minimal_root"] is True
    if os.path.islink("/bin"):
        assert ["--symlink", os.readlink("/bin"), "/bin"] in groups
    # nothing needed to start is denied here except what /usr does not cover
    unreadable = {w.message.split("`")[1] for w in artifact.warnings if w.code == "B308"}
    assert "/usr" not in unreadable and "/bin" not in unreadable


def test_minimal_root_warns_when_start_paths_are_denied(tmp_path: Path) -> None:
    artifact = compile_ir(_ir(tmp_path, FsRule("write", str(tmp_path))), "bwrap")
    unreadable = {w.message.split("`")[1] for w in artifact.warnings if w.code == "B308"}
    assert "/usr" in unreadable
    assert not any(g[0] == "--symlink" for g in _groups(artifact.text))


# -- network -------------------------------------------------------------------------------

def _net(default: str, *rules: NetRule) -> Network:
    return Network(default, rules, default_origin=Origin("p.policy", 3, 5))


@pytest.mark.parametrize("network, broker, warned", [
    (_net("allow"), {"loopback": []}, 1),
    (_net("deny", NetRule("allow", HostPattern("any"))), {"loopback": []}, 1),
    (_net("deny"), None, 0),
    (_net("allow", NetRule("deny", HostPattern("host", "evil.example"))), {"loopback": []}, 1),
    (_net("deny", NetRule("allow", HostPattern("host-loopback", "", 5432))), {"loopback": [5432]}, 1),
    (_net("deny", NetRule("allow", HostPattern("localhost"))), None, 1),
    (_net("deny", NetRule("allow", HostPattern("host", "github.com", 443), origin=Origin("p.policy", 9, 11)),
          NetRule("allow", HostPattern("localhost"), origin=Origin("p.policy", 10, 11))),
     {"loopback": [], "ports": [443]}, 2),  # ports: the ones `allow` rules name (captured, see netstub)
])
def test_network(tmp_path: Path, network: Network, broker: dict | None, warned: int) -> None:
    artifact = compile_ir(_ir(tmp_path, FsRule("read", "/"), network=network), "bwrap")
    assert "--unshare-net" in artifact.data["argv"]  # the sandbox's namespace is always its own
    assert artifact.data["broker"] == broker
    warnings = [w for w in artifact.warnings if w.code == "B301"]
    assert len(warnings) == warned
    by_runtime = compile_ir(_ir(tmp_path, FsRule("read", "/"), network=network), "bwrap", by_runtime=True)
    assert not [w for w in by_runtime.warnings if w.code == "B301"]  # the broker enforces them
    if warned == 2:
        assert "github.com:443" in warnings[0].message and warnings[0].span.line == 9
        assert "own loopback" in warnings[1].message and warnings[1].span.line == 10


# -- environment ---------------------------------------------------------------------------

def test_environment_without_environ_is_minimal(tmp_path: Path) -> None:
    ir = _ir(tmp_path, FsRule("read", "/"), env=(EnvRule("keep", "HOME"), EnvRule("set", "CI", "1")))
    artifact = BwrapBackend(ir).compile()
    assert artifact.data["env"] == {"CI": "1", "PATH": "/usr/local/bin:/usr/bin:/bin"}
    argv = artifact.data["argv"]
    assert argv.index("--clearenv") < argv.index("--setenv")


def test_environment_with_environ_is_filtered(tmp_path: Path) -> None:
    ir = _ir(tmp_path, FsRule("read", "/"), env=(EnvRule("drop", "*_TOKEN"), EnvRule("set", "CI", "1")))
    artifact = BwrapBackend(ir, environ={"GH_TOKEN": "t", "LANG": "C", "ODD": "a\nb 'c'"}).compile()
    assert artifact.data["env"] == {"CI": "1", "LANG": "C", "ODD": "a\nb 'c'"}
    assert "t" not in artifact.data["argv"]


def test_environment_value_with_nul_is_an_error(tmp_path: Path) -> None:
    ir = _ir(tmp_path, FsRule("read", "/"))
    with pytest.raises(UnsupportedRules) as err:
        BwrapBackend(ir, environ={"BAD": "a\x00b"}).compile()
    assert err.value.diagnostics[0].code == "B306"


# -- bad input -------------------------------------------------------------------------------

def test_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StockadeError) as err:
        compile_ir(_ir(tmp_path / "nope", FsRule("read", "/")), "bwrap")
    assert err.value.diagnostics[0].code == "B305"
    assert "does not exist" in err.value.diagnostics[0].message


@pytest.mark.parametrize("name", ["it's \"quoted\"", "with space", "new\nline", "ünïcødé-日本", "-dash", "$HOME`x`"])
def test_hostile_path_names_round_trip(tmp_path: Path, name: str) -> None:
    ws = tmp_path / name
    (ws / "secret").mkdir(parents=True)
    ir = _ir(ws, FsRule("read", "/"), FsRule("write", str(ws)), FsRule("deny", f"{ws}/secret"))
    artifact = compile_ir(ir, "bwrap")
    argv = artifact.data["argv"]
    assert _argv_from_text(artifact.text) == argv
    i = argv.index(f"{ws}/secret") - 1
    assert argv[i - 2:i + 2] == ["--perms", "0000", "--tmpfs", f"{ws}/secret"]


def test_dotdot_and_symlinked_rule_paths_are_canonicalised(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "secret").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(real)
    ir = _ir(real, FsRule("read", "/"), FsRule("write", str(real)),
             FsRule("deny", f"{tmp_path}/alias/x/../secret"))
    groups = _groups(compile_ir(ir, "bwrap").text)
    assert ["--bind", str(real), str(real)] in groups
    assert ["--perms", "0000", "--tmpfs", f"{real}/secret"] in groups


def test_symlink_name_with_stricter_access_is_not_loosened(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "data")
    ir = _ir(tmp_path, FsRule("read", "/"), FsRule("write", str(tmp_path)), FsRule("deny", f"{tmp_path}/link"))
    artifact = compile_ir(ir, "bwrap")
    assert ["--perms", "0000", "--tmpfs", f"{tmp_path}/data"] in _groups(artifact.text)
    assert any(w.code == "B307" for w in artifact.warnings)


def test_symlinked_workspace_is_used_canonically(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "ws").symlink_to(tmp_path / "real")
    ir = PolicyIR("t", Context(str(tmp_path / "ws"), str(tmp_path), str(tmp_path)),
                  filesystem=(FsRule("read", "/"), FsRule("write", str(tmp_path / "real"))))
    argv = compile_ir(ir, "bwrap").data["argv"]
    assert argv[argv.index("--chdir") + 1] == str(tmp_path / "real")


def test_nul_in_a_rule_path_is_an_error(tmp_path: Path) -> None:
    ir = _ir(tmp_path, FsRule("read", "/"), FsRule("deny", "/a\x00b", origin=Origin("p.policy", 4, 2)))
    with pytest.raises(UnsupportedRules) as err:
        compile_ir(ir, "bwrap")
    assert [d.code for d in err.value.errors] == ["B306"] and err.value.errors[0].span.line == 4


def test_glob_walk_limit_fails_closed(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"d{i}").mkdir()
    ir = _ir(tmp_path, FsRule("read", "/"), FsRule("write", str(tmp_path)),
             FsRule("deny", "/**/.env", is_glob=True, source_text="**/.env"))
    with pytest.raises(UnsupportedRules) as err:
        compile_ir(ir, "bwrap", glob_roots=[str(tmp_path)], glob_walk_limit=3)
    assert err.value.errors[0].code == "B304" and "**/.env" in err.value.errors[0].message


def test_glob_matches_are_masked_and_warned(tmp_path: Path) -> None:
    (tmp_path / "a/b").mkdir(parents=True)
    (tmp_path / "a/b/.env").write_text("s")
    (tmp_path / ".env.d").mkdir()
    ir = _ir(tmp_path, FsRule("read", "/"), FsRule("write", str(tmp_path)),
             FsRule("deny", "/**/.env", is_glob=True), FsRule("deny", "/**/.env.*", is_glob=True))
    artifact = compile_ir(ir, "bwrap", glob_roots=[str(tmp_path)])
    groups = _groups(artifact.text)
    assert ["--ro-bind", "/dev/null", f"{tmp_path}/a/b/.env"] in groups
    assert ["--perms", "0000", "--tmpfs", f"{tmp_path}/.env.d"] in groups
    assert ["--bind-try", f"{tmp_path}/a", f"{tmp_path}/a"] in groups  # pins
    assert sum(w.code == "B304" for w in artifact.warnings) == 2


def test_glob_walk_skips_package_and_cache_trees(tmp_path: Path) -> None:
    for tree in ("node_modules/pkg", ".git/objects", "src/conf"):
        (tmp_path / tree).mkdir(parents=True)
        (tmp_path / tree / ".env").write_text("s")
    ir = _ir(tmp_path, FsRule("read", "/"), FsRule("write", str(tmp_path)),
             FsRule("deny", "/**/.env", is_glob=True, source_text="**/.env"))
    artifact = compile_ir(ir, "bwrap", glob_roots=[str(tmp_path)])
    masked = [g[-1] for g in _groups(artifact.text) if g[:2] == ["--ro-bind", "/dev/null"]
              and not g[-1].startswith("/proc/")]  # the kernel's masked files (/proc/keys...)
    assert masked == [f"{tmp_path}/src/conf/.env"]
    assert any("not walked" in w.message for w in artifact.warnings if w.code == "B304")


def test_section_decisions() -> None:
    # the argv encodes mounts, the network namespace and the environment; `stockade run`
    # applies the limits and judges commands, so the argv alone warns about those (B321)
    assert BwrapBackend.name == "bwrap"
    kinds = {name: handling.kind for name, handling in BwrapBackend.SECTIONS.items()}
    assert kinds == {"filesystem": "handled", "network": "handled", "environment": "handled",
                     "limits": "runtime", "commands": "runtime", "session": "runtime", "verdicts": "runtime"}
