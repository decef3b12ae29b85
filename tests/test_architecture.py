"""The stages import only what the design allows: data flows one way.

The rules are the tables of ``docs/architecture.md`` (its stage table mirrors DESIGN.md's),
read from that file, not copied here.  Every ``import`` and ``from … import`` of every
module under ``stockade/`` (at any depth, lazy ones and ``TYPE_CHECKING`` ones included),
and every string constant that names a stockade module for a lazy import
(``"stockade.integrations.codex:CodexExporter"``), is checked against them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "stockade"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: the shared design document, next to the repository in a development setup (absent in CI)
DESIGN = ROOT.parent / "shared" / "DESIGN.md"
#: the name of the package itself (``stockade/__init__.py``) among the rows
PACKAGE_ROW = "stockade"
#: a string constant that names a stockade module (optionally ``:attribute``), as lazy registries write them
MODULE_STRING = re.compile(r"stockade(?:\.\w+)+(?::\w+)?")


@dataclass(frozen=True)
class Row:
    """One row of an import table: a unit (stage or top-level module) and what it must not import."""

    name: str
    forbidden: frozenset[str]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _unit_name(cell: str) -> str:
    """`stockade.compiler` → compiler; `stockade` → stockade (the package itself)."""
    found = re.search(r"`([^`]+)`", cell)
    assert found, f"no module name in table cell {cell!r}"
    name = found.group(1)
    return PACKAGE_ROW if name == PACKAGE_ROW else name.removeprefix(f"{PACKAGE_ROW}.")


def _names(cell: str) -> frozenset[str]:
    """`compiler, backends` → {compiler, backends}; `—` → nothing."""
    cell = cell.replace("`", "")
    if cell in ("—", "-", ""):
        return frozenset()
    return frozenset(_unit_name(f"`{part.strip()}`") for part in cell.split(","))


def tables(text: str) -> dict[str, list[list[str]]]:
    """Every markdown table of a document, keyed by its header row (cells joined by ``|``)."""
    found: dict[str, list[list[str]]] = {}
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("|") and index + 1 < len(lines) and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+",
                                                                              lines[index + 1].strip()):
            header = "|".join(_cells(line))
            rows = []
            index += 2
            while index < len(lines) and lines[index].startswith("|"):
                rows.append(_cells(lines[index]))
                index += 1
            found[header] = rows
        else:
            index += 1
    return found


def import_rows(text: str, header: str) -> dict[str, Row]:
    """The rows of the table with this header: unit → Row."""
    rows = tables(text).get(header)
    assert rows, f"no table with the header `{header}` in the document"
    result = {}
    for cells in rows:
        name = _unit_name(cells[0])
        assert name not in result, f"`{name}` has two rows"
        result[name] = Row(name, _names(cells[-1]))
    return result


STAGE_HEADER = "package|owns|must not import"
MODULE_HEADER = "module|owns|must not import"
IMPORTERS_HEADER = "module|imported only by"
DOC = ARCHITECTURE.read_text(encoding="utf-8")
STAGES = import_rows(DOC, STAGE_HEADER)
MODULES = import_rows(DOC, MODULE_HEADER)
RULES = {**STAGES, **MODULES}
IMPORTERS = {_unit_name(cells[0]): _names(cells[1]) for cells in tables(DOC)[IMPORTERS_HEADER]}


def imported_modules(source: str, filename: str = "<source>") -> list[tuple[str, int]]:
    """Every stockade module a source text imports (or names for a lazy import), with its line."""
    tree = ast.parse(source, filename)
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{filename}:{node.lineno}: relative import (stockade imports absolutely)"
            if node.module == PACKAGE_ROW:  # from stockade import cli
                found.extend((f"{PACKAGE_ROW}.{alias.name}", node.lineno) for alias in node.names)
            elif node.module:
                found.append((node.module, node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_STRING.fullmatch(node.value):
            found.append((node.value.partition(":")[0], node.lineno))
    return [(module, line) for module, line in found
            if module == PACKAGE_ROW or module.startswith(f"{PACKAGE_ROW}.")]


def unit_of_module(module: str) -> str:
    """The row a module name belongs to: `stockade.cli.main` → cli, `stockade.__version__` → stockade."""
    parts = module.split(".")
    if len(parts) == 1:
        return PACKAGE_ROW
    first = parts[1]
    if (PACKAGE / first).is_dir() or (PACKAGE / f"{first}.py").is_file():
        return first
    return PACKAGE_ROW  # an attribute of the package (`from stockade import __version__`)


def unit_of_file(path: Path) -> str:
    """The row a file under stockade/ belongs to."""
    relative = path.relative_to(PACKAGE)
    if len(relative.parts) > 1:
        return relative.parts[0]
    return PACKAGE_ROW if relative.name == "__init__.py" else relative.stem


def stage_folders() -> list[str]:
    """Every folder of stockade/ that holds Python modules."""
    return sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.rglob("*.py")))


def top_level_modules() -> list[str]:
    """Every module directly in stockade/ (the package's ``__init__`` as ``stockade``)."""
    return sorted(unit_of_file(p) for p in PACKAGE.glob("*.py"))


def shown(unit: str) -> str:
    """A row's module name as written in the tables."""
    return f"`{unit}`" if unit == PACKAGE_ROW else f"`{PACKAGE_ROW}.{unit}`"


def violations(unit: str, source: str, filename: str) -> list[str]:
    """Every import of one module of ``unit`` that the tables forbid."""
    found = []
    for module, line in imported_modules(source, filename):
        target = unit_of_module(module)
        if target == unit:
            continue
        where = f"{filename}:{line}: {shown(unit)} imports `{module}`"
        if target in RULES[unit].forbidden:
            found.append(f"{where}, which docs/architecture.md forbids")
        if target in IMPORTERS and unit not in IMPORTERS[target]:
            found.append(f"{where}, which only {', '.join(sorted(map(shown, IMPORTERS[target])))} may import")
    return found


def test_every_stage_folder_has_a_row() -> None:
    assert stage_folders() == sorted(STAGES), (
        "the folders of stockade/ and the stage table of docs/architecture.md differ: "
        f"folders {stage_folders()}, rows {sorted(STAGES)}")


def test_every_top_level_module_has_a_row() -> None:
    assert top_level_modules() == sorted(MODULES), (
        "the modules directly in stockade/ and the top-level table of docs/architecture.md differ: "
        f"modules {top_level_modules()}, rows {sorted(MODULES)}")


def test_every_name_in_the_tables_is_a_row() -> None:
    named = {name for row in RULES.values() for name in row.forbidden} | set(IMPORTERS)
    named |= {name for importers in IMPORTERS.values() for name in importers}
    assert named <= set(RULES), sorted(named - set(RULES))


@pytest.mark.skipif(not DESIGN.is_file(), reason="DESIGN.md is not checked out next to the repository")
def test_the_stage_table_mirrors_the_design() -> None:
    design = import_rows(DESIGN.read_text(encoding="utf-8"), STAGE_HEADER)
    assert design == STAGES


@pytest.mark.parametrize("unit", sorted(RULES))
def test_imports_follow_the_design(unit: str) -> None:
    paths = sorted(PACKAGE.glob("*.py")) if unit in MODULES else sorted((PACKAGE / unit).rglob("*.py"))
    paths = [p for p in paths if unit_of_file(p) == unit]
    assert paths, unit
    problems = [problem for path in paths
                for problem in violations(unit, path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not problems, "\n".join(problems)


def test_the_scanner_sees_every_kind_of_import() -> None:
    source = '''
import os
import stockade.compiler.ir
from stockade.backends import base
from stockade import cli, __version__
if TYPE_CHECKING:
    from stockade.runtime.session import RunOutcome

def lazy() -> None:
    from stockade.analyzer import analyze

TARGETS = {"codex": "stockade.integrations.codex:CodexExporter"}
"""A docstring that mentions stockade.api is not an import."""
'''
    found = sorted(module for module, _ in imported_modules(source))
    assert found == ["stockade.__version__", "stockade.analyzer", "stockade.backends", "stockade.cli",
                     "stockade.compiler.ir", "stockade.integrations.codex", "stockade.runtime.session"]
    assert [unit_of_module(m) for m in ("stockade.cli.main", "stockade.__version__", "stockade", "stockade.api")] \
        == ["cli", PACKAGE_ROW, PACKAGE_ROW, "api"]


@pytest.mark.parametrize(("unit", "line", "expected"), [
    ("integrations", "from stockade.cli import render", "docs/architecture.md forbids"),
    ("analyzer", "from stockade.cli.render import render", "only `stockade.__main__`, `stockade.cli` may import"),
    ("compiler", "import stockade.api", "only `stockade.cli`, `stockade` may import"),
    ("runtime", "LAZY = 'stockade.policy_lang.parser:parse'", "docs/architecture.md forbids"),
    ("diagnostics", "from stockade.compiler import ir", "docs/architecture.md forbids"),
])
def test_a_forbidden_import_is_reported(unit: str, line: str, expected: str) -> None:
    problems = violations(unit, f"def later() -> None:\n    {line}\n", "example.py")
    assert problems and expected in problems[0], problems


def test_allowed_imports_are_not_reported() -> None:
    source = "import stockade\nfrom stockade.diagnostics import Diagnostic\nfrom stockade.compiler.ir import PolicyIR\n"
    assert violations("analyzer", source, "example.py") == []
    assert violations("__main__", "from stockade.cli.main import console\n", "example.py") == []
