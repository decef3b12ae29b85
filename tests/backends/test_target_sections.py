"""The section × target contract: every registered target decides every policy section.

For each target of :data:`stockade.backends.registry.TARGETS` and each section of
:data:`stockade.compiler.ir.SECTIONS` there is exactly one decision (handled by a method
that exists, left to ``stockade run``, unsupported, or — exports only — omitted); a section
added to the IR without a decision makes every target fail loudly; and the driver applies
the decisions: one ``B321`` warning per RUNTIME section that has rules (none for the
runtime itself), every rule of an UNSUPPORTED section listed with its span.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from stockade.backends import registry
from stockade.backends.base import (
    RUNTIME,
    UNSUPPORTED,
    Artifact,
    Backend,
    Handling,
    TargetDefinitionError,
    UnsupportedRules,
    compile_ir,
)
from stockade.compiler import ir as ir_module
from stockade.compiler.ir import SECTIONS, PolicyIR, Section
from stockade.compiler.pipeline import compile_policy
from stockade.diagnostics import StockadeError

ROOT = Path(__file__).resolve().parents[2]
EVERY_PAIR = [(target, section.name) for target in registry.names() for section in SECTIONS]

POLICY = """policy "sections"
filesystem {
    read /
    write $WORKSPACE
}
network {
    default deny
}
environment {
    keep PATH
}
limits {
    timeout 60
    memory 1GiB
}
commands {
    deny sudo
    unparsable deny
}
"""


def _ir(tmp_path: Path, text: str = POLICY, platform: str = "linux") -> PolicyIR:
    if platform == "windows":
        return compile_policy(text=text, workspace="C:\\Users\\dev\\proj", home="C:\\Users\\dev",
                              tmpdir="C:\\Users\\dev\\AppData\\Local\\Temp", environ={}, platform="windows").ir
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return compile_policy(text=text, workspace=str(workspace), home=str(tmp_path), tmpdir=str(tmp_path),
                          environ={}, platform=platform).ir


def _platform(target: str) -> str:
    return {"windows": "windows", "windows-ps": "windows", "seatbelt": "darwin"}.get(target, "linux")


# -- every target × every section ------------------------------------------------------------

@pytest.mark.parametrize(("target", "section"), EVERY_PAIR, ids=[f"{t}-{s}" for t, s in EVERY_PAIR])
def test_every_target_decides_every_section(target: str, section: str) -> None:
    cls = registry.target_class(target)
    handling = cls.SECTIONS.get(section)
    assert isinstance(handling, Handling), f"target `{target}` has no decision for the section `{section}`"
    assert handling.kind in cls.KINDS
    if registry.TARGETS[target].kind == "backend":
        assert handling.kind != "omitted", "a sandbox artifact cannot leave a section out silently"
    if handling.kind == "handled":
        assert handling.method and callable(getattr(cls, handling.method, None))


@pytest.mark.parametrize("target", registry.names())
def test_no_decision_for_an_unknown_section(target: str) -> None:
    cls = registry.target_class(target)
    assert set(cls.SECTIONS) == {section.name for section in SECTIONS}
    assert [section.name for section, _ in cls.decisions()] == [section.name for section in SECTIONS]


@pytest.mark.parametrize("target", registry.names())
def test_a_new_section_makes_every_target_fail_loudly(target: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ir = _ir(tmp_path, platform=_platform(target))
    fake = Section("sockets", "a section added to the IR", "socket rules", lambda ir: ())
    monkeypatch.setattr(ir_module, "SECTIONS", (*SECTIONS, fake))
    with pytest.raises(TargetDefinitionError, match="no decision for the section `sockets`"):
        registry.target_class(target).decisions()
    with pytest.raises(TargetDefinitionError, match="sockets"):
        registry.build(ir, target)  # the driver refuses too, before rendering anything


def test_the_examples_compile_for_every_target(tmp_path: Path) -> None:
    # the handlers a target declares are the ones its render() calls (checked by the driver)
    for target in registry.names():
        ir = _ir(tmp_path, (ROOT / "examples/coding-agent.policy").read_text(), _platform(target))
        artifact = registry.build(ir, target, allow_looser=True)
        assert artifact.text


# -- what the driver does with each decision -----------------------------------------------

def test_runtime_sections_warn_once_each(tmp_path: Path) -> None:
    artifact = compile_ir(_ir(tmp_path), "bwrap", environ={"PATH": "/usr/bin"})
    runtime = {w.message.split(" section")[0].removeprefix("the "): w for w in artifact.warnings if w.code == "B321"}
    assert sorted(runtime) == ["commands", "limits", "verdicts"]
    assert "`timeout`, `memory`" in runtime["limits"].message and runtime["limits"].span.line == 13
    assert runtime["commands"].span.line == 17


def test_runtime_sections_without_rules_do_not_warn(tmp_path: Path) -> None:
    ir = _ir(tmp_path, 'policy "bare"\nfilesystem {\n    read /\n}\n')
    assert [w for w in compile_ir(ir, "bwrap").warnings if w.code == "B321"] == []


def test_the_runtime_gets_no_runtime_warnings(tmp_path: Path) -> None:
    artifact = compile_ir(_ir(tmp_path), "bwrap", by_runtime=True)
    assert [w for w in artifact.warnings if w.code == "B321"] == []
    assert not any("keep nothing" in w.message for w in artifact.warnings)  # the runtime builds the environment


def test_seatbelt_leaves_environment_and_limits_to_the_runtime(tmp_path: Path) -> None:
    artifact = compile_ir(_ir(tmp_path, platform="darwin"), "seatbelt")
    sections = {w.message.split(" section")[0] for w in artifact.warnings if w.code == "B321"}
    assert sections == {"the environment", "the limits", "the commands", "the verdicts"}


def test_seatbelt_refuses_disk_and_does_not_claim_the_runtime_enforces_it(tmp_path: Path) -> None:
    ir = _ir(tmp_path, POLICY.replace("timeout 60", "timeout 60\n    disk 1GiB"), platform="darwin")
    with pytest.raises(UnsupportedRules) as caught:
        compile_ir(ir, "seatbelt")
    diagnostics = caught.value.diagnostics
    assert [d.code for d in diagnostics if d.severity == "error"] == ["B320"]
    limits = next(d for d in diagnostics if d.code == "B321" and "limits" in d.message)
    assert "`disk`" not in limits.message and "`timeout`" in limits.message


class _NoLimits(Backend):
    """A backend that cannot enforce limits at all (and renders nothing else)."""

    name: ClassVar[str] = "test-no-limits"
    SECTIONS: ClassVar[dict[str, Handling]] = {**{s.name: RUNTIME for s in SECTIONS}, "limits": UNSUPPORTED}

    def render(self) -> Artifact:
        return Artifact(self.name, "nothing\n")


def test_unsupported_section_lists_every_rule_with_its_span(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedRules) as caught:
        _NoLimits(_ir(tmp_path)).compile()
    errors = [d for d in caught.value.diagnostics if d.severity == "error"]
    assert [(d.code, d.span.line if d.span else None) for d in errors] == [("B302", 13), ("B302", 14)]
    assert "`timeout`" in errors[0].message and "`memory`" in errors[1].message


class _ForgetfulNetwork(Backend):
    """Declares the network handled but never renders it: a programming error."""

    name: ClassVar[str] = "test-forgetful"
    SECTIONS: ClassVar[dict[str, Handling]] = {**{s.name: RUNTIME for s in SECTIONS},
                                               "network": Handling("handled", "render_network")}

    def render_network(self) -> list[str]:
        return []

    def render(self) -> Artifact:
        return Artifact(self.name, "")


def test_a_handler_render_never_calls_is_caught(tmp_path: Path) -> None:
    with pytest.raises(TargetDefinitionError, match="network"):
        _ForgetfulNetwork(_ir(tmp_path, POLICY.replace("default deny", "default deny\n    allow github.com"))).compile()


def test_backends_cannot_omit(tmp_path: Path) -> None:
    class Omitting(_NoLimits):
        SECTIONS: ClassVar[dict[str, Handling]] = {**_NoLimits.SECTIONS, "limits": Handling("omitted")}

    with pytest.raises(TargetDefinitionError, match="limits"):
        Omitting(_ir(tmp_path)).compile()


# -- one registry, one code for an unknown target ------------------------------------------

def _cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_STATE_HOME": str(tmp_path / "state")}
    return subprocess.run([sys.executable, "-m", "stockade", *args], cwd=ROOT, env=env, capture_output=True,
                          check=False)


@pytest.mark.parametrize(("args", "hint"), [
    (("compile", "examples/coding-agent.policy", "--target", "bwrp"), "did you mean `bwrap`?"),
    (("compile", "examples/coding-agent.policy", "--target", "srt"), "stockade export --to srt"),
    (("export", "--to", "crusor", "examples/coding-agent.policy"), "did you mean `cursor`?"),
    (("import", "--from", "codex", "x.rules"), "did you mean `codex-rules`?"),
])
def test_unknown_target_is_b300_everywhere(args: tuple[str, ...], hint: str, tmp_path: Path) -> None:
    result = _cli(*args, tmp_path=tmp_path)
    assert result.returncode == 2
    assert b"error[B300]: unknown target" in result.stderr and hint.encode() in result.stderr
    assert b"X602" not in result.stderr


def test_api_unknown_target_is_b300(tmp_path: Path) -> None:
    import stockade

    policy = stockade.load_policy(text=POLICY, workspace=str(tmp_path), home=str(tmp_path), environ={})
    with pytest.raises(StockadeError) as caught:
        policy.compile("sbpl")
    assert [d.code for d in caught.value.diagnostics] == ["B300"]
    assert "ir, bwrap" in (caught.value.diagnostics[0].help or "")


def test_cli_lists_come_from_the_registry(tmp_path: Path) -> None:
    exports = registry.names("export")
    text = _cli("export", "--help", tmp_path=tmp_path).stdout.decode()
    assert all(name in text for name in exports)
    text = _cli("compile", "--help", tmp_path=tmp_path).stdout.decode()
    assert all(name in text for name in registry.names("backend"))
