"""The "Add a tool model" recipe of docs/contributing.md, performed for real.

The recipe's code blocks are run as written (they register two new models, ``logpack`` as a
``Spec`` and ``stowaway`` as a function), and its one-line cases are judged by the analyzer
under ``examples/coding-agent.policy``: they must differ from the verdicts without the
models and match the recipe with them.  Every file, table, function, method and role the
recipe names must exist, so renaming one without updating the recipe fails here.
"""

from __future__ import annotations

import ast
import contextlib
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.analyzer import analyze, models
from stockade.analyzer import exec as analyzer_exec
from stockade.analyzer.exec import Invocation
from stockade.compiler.ir import PolicyIR
from stockade.compiler.pipeline import compile_policy

ROOT = Path(__file__).resolve().parents[1]
CONTRIBUTING = ROOT / "docs" / "contributing.md"
MODELS_DIR = ROOT / "stockade" / "analyzer" / "models"
NEW_TOOLS = ("logpack", "stowaway")


def recipe() -> str:
    """The text of the section "Add a tool model"."""
    text = CONTRIBUTING.read_text(encoding="utf-8")
    found = re.search(r"^## Add a tool model\n(.*?)(?=^## |\Z)", text, re.DOTALL | re.MULTILINE)
    assert found, "docs/contributing.md has no section `## Add a tool model`"
    return found.group(1)


def code_blocks() -> list[str]:
    """The recipe's ```python blocks, dedented (they are indented inside the numbered list)."""
    blocks = re.findall(r"^([ \t]*)```python\n(.*?)^\1```", recipe(), re.DOTALL | re.MULTILINE)
    return [textwrap.dedent(body) for _, body in blocks]


def cases() -> list[tuple[str, str]]:
    """The one-line cases block: (expected, command) tuples as in tests/analyzer/test_corpus.py."""
    tables = [block for block in code_blocks() if block.lstrip().startswith("(")]
    assert len(tables) == 1, "the recipe has one block of one-line cases"
    found: list[tuple[str, str]] = ast.literal_eval(f"[{tables[0]}]")
    assert found and all(expect in ("allow", "flag", "deny") for expect, _ in found)
    return found


def model_blocks() -> list[str]:
    """The blocks that define and register models."""
    return [block for block in code_blocks() if "register(" in block]


def sentence(start: str) -> str:
    """The recipe's text from ``start`` to the end of that sentence (or list)."""
    text = " ".join(recipe().split())
    index = text.find(start)
    assert index >= 0, f"the recipe no longer says {start!r}"
    end = min(i for i in (text.find(";", index), text.find(". ", index), len(text)) if i >= 0)
    return text[index:end]


def backticked(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


@contextlib.contextmanager
def restored_models() -> Iterator[None]:
    """Whatever the recipe registers is unregistered afterwards (the analyzer's tables are global)."""
    saved = dict(models.MODELS)
    try:
        yield
    finally:
        models.MODELS.clear()
        models.MODELS.update(saved)
        analyzer_exec._BY_NAME.clear()


@pytest.fixture(scope="module")
def ir(tmp_path_factory: pytest.TempPathFactory) -> PolicyIR:
    base = tmp_path_factory.mktemp("contributing")
    workspace, tmpdir = base / "ws", base / "tmp"
    workspace.mkdir()
    tmpdir.mkdir()
    return compile_policy(str(ROOT / "examples" / "coding-agent.policy"), workspace=str(workspace),
                          home="/home/stockade-fake-user", tmpdir=str(tmpdir)).ir


def judged(ir: PolicyIR, command: str, fast_path: bool = True) -> str:
    """The case table's word for the analyzer's decision."""
    decision = analyze(command, ir, fast_path=fast_path).decision
    return "allow" if decision == "allow" else decision


def matches(expect: str, decision: str) -> bool:
    return decision in ("confirm", "deny") if expect == "flag" else decision == expect


def test_the_recipe_registers_models_the_analyzer_uses(ir: PolicyIR) -> None:
    for tool in NEW_TOOLS:
        assert tool not in models.MODELS, f"`{tool}` is a real model now: pick another example name"
    table = cases()
    assert {command.split()[0] for _, command in table} == set(NEW_TOOLS)
    before = {command: judged(ir, command) for _, command in table}
    wrong_before = [command for expect, command in table if not matches(expect, before[command])]
    for tool in NEW_TOOLS:  # each model decides at least one case the default model gets wrong
        assert any(command.split()[0] == tool for command in wrong_before), (tool, before)

    with restored_models():
        blocks = model_blocks()
        assert len(blocks) == 2
        for block in blocks:
            exec(compile(block, str(CONTRIBUTING), "exec"), {"__name__": "recipe"})
        assert set(NEW_TOOLS) <= set(models.MODELS)
        for expect, command in table:
            for fast_path in (True, False):
                decision = judged(ir, command, fast_path)
                assert matches(expect, decision), f"{command!r}: expected {expect}, got {decision}"

    # unregistered again: the default model decides, as before (the name → model memo is cleared too)
    assert not set(NEW_TOOLS) & set(models.MODELS)
    assert {command: judged(ir, command) for _, command in table} == before


def test_every_file_the_recipe_names_exists() -> None:
    paths = [word for word in backticked(recipe()) if re.fullmatch(r"[\w./-]+\.py|[\w./-]+/", word)]
    assert paths
    for word in paths:
        candidates = [ROOT / word, MODELS_DIR / word]
        assert any(p.exists() for p in candidates), f"the recipe names `{word}`, which does not exist"


def test_every_topic_module_is_listed() -> None:
    listed = set(backticked(sentence("**Pick the topic module**")))
    registering = {p.name for p in MODELS_DIR.glob("*.py")
                   if p.name != "__init__.py" and "register(" in p.read_text(encoding="utf-8")}
    assert registering <= listed, sorted(registering - listed)


def test_the_tables_and_functions_the_recipe_names_exist() -> None:
    from stockade.analyzer.models import files, wrappers
    from stockade.compiler import argv

    for name in ("MODELS", "register", "default_model", "spec_model", "Spec", "parse_options"):
        assert hasattr(models, name), name
    assert all(isinstance(spec, models.Spec) for spec in files.SPECS.values())
    assert re.search(r"^for _names, _spec in SPECS\.items\(\):\n\s+register\(_names, spec_model\(_spec\)\)",
                     (MODELS_DIR / "files.py").read_text(encoding="utf-8"), re.MULTILINE), "files.py registers SPECS"
    assert all(isinstance(w, wrappers.Wrapper) for w in wrappers.WRAPPERS.values())
    assert isinstance(argv.FLAG_ALIASES, dict)
    for field in ("args", "values", "recursive", "first", "last", "flags"):
        assert field in models.Spec._fields, field
    corpus = ast.parse((ROOT / "tests" / "analyzer" / "test_corpus.py").read_text(encoding="utf-8"))
    assert any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MORE" for t in node.targets)
               for node in corpus.body), "tests/analyzer/test_corpus.py has a MORE table"
    assert "--write" in (ROOT / "tests" / "analyzer" / "snapshot_cases.py").read_text(encoding="utf-8")


def test_the_roles_are_the_ones_spec_models_apply() -> None:
    listed = set(backticked(sentence("The roles are")))
    known = set(models._ACCESS_ROLES) | {"text", "url", "script", "unknown"}
    assert listed == known


def test_the_invocation_methods_exist() -> None:
    listed = backticked(sentence("through the invocation's methods"))
    assert len(listed) >= 9
    for method in listed:
        assert callable(getattr(Invocation, method, None)), f"Invocation has no method `{method}`"
