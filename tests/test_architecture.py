"""The stages import only what DESIGN.md allows: data flows one way.

Every ``import`` and ``from … import`` in a stage's modules (at any depth, lazy ones
included) is checked against the table of DESIGN.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "stockade"
#: stage → stages it must not import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "policy_lang": ("compiler", "backends", "analyzer", "runtime"),
    "compiler": ("backends", "analyzer", "runtime"),
    "backends": ("analyzer", "runtime"),
    "analyzer": ("backends", "runtime"),
    "runtime": ("policy_lang",),
}


def imported_modules(path: Path) -> list[tuple[str, int]]:
    """Every module a file imports, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
    return found


@pytest.mark.parametrize("stage", sorted(FORBIDDEN))
def test_stage_imports_follow_the_design(stage: str) -> None:
    files = sorted((PACKAGE / stage).rglob("*.py"))
    assert files, stage
    violations = [f"{path.relative_to(PACKAGE.parent)}:{line}: imports `{module}`"
                  for path in files for module, line in imported_modules(path)
                  for other in FORBIDDEN[stage] if module == f"stockade.{other}" or module.startswith(f"stockade.{other}.")]
    assert not violations, "\n".join(violations)
