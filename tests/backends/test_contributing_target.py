"""The recipes "Add a target" and "Add a policy section" of ``docs/contributing.md``, performed.

A small target is written here step by step as the recipe says (a class on ``Backend``
with a decision per section and a ``render()``; an export on ``Exporter``), registered in
the one registry, and used through the API and the CLI; then a section is added to the IR
and every target refuses to compile until it decides it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

import stockade
from stockade.backends import registry
from stockade.backends.base import (
    OMITTED,
    RUNTIME,
    Artifact,
    Backend,
    Handling,
    TargetDefinitionError,
    UnsupportedRules,
    handled,
)
from stockade.cli.main import main
from stockade.compiler import ir as ir_module
from stockade.compiler.ir import SECTIONS, Section
from stockade.integrations.base import Exporter, ExportError

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "contributing.md"

POLICY = """policy "toy"
filesystem {
    read /
    write $WORKSPACE
    deny ~/.ssh
}
network {
    default deny
    allow github.com
}
limits {
    timeout 60
}
"""


# -- step 1-3: one module with the class (here: this test file) ---------------------------------

class ListBackend(Backend):
    """A toy sandbox artifact: one line per path decision and the network switch."""

    name: ClassVar[str] = "toy-list"
    SECTIONS: ClassVar[dict[str, Handling]] = {
        "filesystem": handled("render_paths"),
        "network": handled("render_network"),
        "environment": RUNTIME,
        "limits": RUNTIME,
        "commands": RUNTIME,
        "session": RUNTIME,
        "verdicts": RUNTIME,
    }

    def render_paths(self) -> list[str]:
        lines = []
        for rule in self.ir.filesystem:
            if rule.is_glob:
                self.unsupported_rule(f"`{rule.kind} {rule.source_text}`: globs have no toy-list form", rule.origin)
                continue
            lines.append(f"{self.ir.path_access(rule.pattern).access} {rule.pattern}")
        return lines

    def render_network(self) -> list[str]:
        for rule in self.ir.network.rules:
            if rule.action == "allow" and rule.host.kind != "any":
                self.warn(f"`allow {rule.host}` needs a proxy: the toy has no network", rule.origin)
        everything = self.ir.network.default == "allow" and not self.ir.network.rules
        return ["network all" if everything else "network none"]

    def render(self) -> Artifact:
        lines = self.render_paths() + self.render_network()
        return Artifact(self.name, "\n".join(lines) + "\n", {"lines": lines})


class ToyExporter(Exporter):
    """A toy tool's file: the denied paths only."""

    name: ClassVar[str] = "toy-export"
    label: ClassVar[str] = "the toy file"
    SECTIONS: ClassVar[dict[str, Handling]] = {
        **{section.name: OMITTED for section in SECTIONS}, "filesystem": handled("denied"),
    }

    def denied(self) -> list[str]:
        return [rule.pattern for rule in self.ir.filesystem if rule.kind == "deny"]

    def render(self) -> Artifact:
        return Artifact(self.name, "".join(f"deny {path}\n" for path in self.denied()))


# -- step 4: register ---------------------------------------------------------------------------

@pytest.fixture
def registered() -> Iterator[None]:
    registry.register("toy-list", "backend", f"{__name__}:ListBackend", doc="a toy list")
    registry.register("toy-export", "export", f"{__name__}:ToyExporter", doc="a toy file")
    try:
        yield
    finally:
        registry.unregister("toy-list")
        registry.unregister("toy-export")


@pytest.fixture
def policy(tmp_path: Path) -> stockade.api.Policy:
    (tmp_path / "ws").mkdir()
    return stockade.load_policy(text=POLICY, workspace=str(tmp_path / "ws"), home=str(tmp_path / "home"),
                                tmpdir=str(tmp_path / "tmp"), environ={})


def test_the_recipe_is_in_the_docs() -> None:
    text = DOC.read_text()
    for needle in ("## Add a target", "## Add a policy section", "handled(\"method\")", "RUNTIME", "UNSUPPORTED",
                   "OMITTED", "stockade/backends/registry.py", "test_contributing_target.py"):
        assert needle in text


def test_a_registered_backend_compiles_through_the_api(registered: None, policy: stockade.api.Policy) -> None:
    artifact = policy.compile("toy-list")
    assert "none " + policy.ir.context.home + "/.ssh" in artifact.text and artifact.text.endswith("network none\n")
    codes = [(w.code, w.message.split(" section")[0]) for w in artifact.warnings]
    assert ("B301", "`allow github.com` needs a proxy: the toy has no network") in codes
    assert ("B321", "the limits") in codes  # RUNTIME, and the policy has a limit
    assert not any("environment" in message for _, message in codes)  # RUNTIME, but no rules there


def test_a_registered_backend_compiles_through_the_cli(registered: None, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "toy.policy"
    source.write_text(POLICY)
    (tmp_path / "ws").mkdir()
    code = main(["compile", str(source), "--target", "toy-list", "--workspace", str(tmp_path / "ws"),
                 "--home", str(tmp_path / "home"), "--tmpdir", str(tmp_path / "tmp")])
    out, err = capsys.readouterr()
    assert code == 0 and out.endswith("network none\n")
    assert "warning[B321]: the limits section is not in the toy-list artifact" in err


def test_the_backend_refuses_what_it_cannot_express(registered: None, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    policy = stockade.load_policy(text=POLICY.replace("deny ~/.ssh", 'deny ~/.ssh "**/.env"'),
                                  workspace=str(tmp_path / "ws"), home=str(tmp_path), environ={})
    with pytest.raises(UnsupportedRules) as caught:
        policy.compile("toy-list")
    assert [(d.code, d.span.line if d.span else None) for d in caught.value.diagnostics
            if d.severity == "error"] == [("B302", 5)]


def test_a_registered_export(registered: None, policy: stockade.api.Policy) -> None:
    artifact = policy.compile("toy-export")
    assert artifact.text == f"deny {policy.ir.context.home}/.ssh\n"
    omitted = [w.message for w in artifact.warnings if w.code == "X601"]
    assert "the toy file has no network rules: `default deny` is not exported" in omitted
    assert "the toy file has no limits: `timeout` is not exported" in omitted
    with pytest.raises(ExportError):
        policy.compile("toy-export", strict=True)


def test_a_target_without_a_decision_is_flagged(registered: None, policy: stockade.api.Policy) -> None:
    class Incomplete(ListBackend):
        SECTIONS: ClassVar[dict[str, Handling]] = {k: v for k, v in ListBackend.SECTIONS.items() if k != "limits"}

    with pytest.raises(TargetDefinitionError, match="no decision for the section `limits`"):
        Incomplete(policy.ir).compile()


# -- "Add a policy section" ---------------------------------------------------------------------

def test_adding_a_section(registered: None, policy: stockade.api.Policy, monkeypatch: pytest.MonkeyPatch) -> None:
    # step 2: declare it once in ir.SECTIONS
    sockets = Section("sockets", "which unix sockets can be reached", "socket rules", lambda ir: ())
    monkeypatch.setattr(ir_module, "SECTIONS", (*SECTIONS, sockets))
    # step 3: every registered target (ours too) now refuses to compile
    for name in registry.names():
        with pytest.raises(TargetDefinitionError, match="no decision for the section `sockets`"):
            registry.target_class(name).decisions()
    with pytest.raises(TargetDefinitionError):
        policy.compile("toy-list")

    # ... until it decides the new section
    class WithSockets(ListBackend):
        SECTIONS: ClassVar[dict[str, Handling]] = {**ListBackend.SECTIONS, "sockets": RUNTIME}

    assert WithSockets(policy.ir).compile().text.endswith("network none\n")
