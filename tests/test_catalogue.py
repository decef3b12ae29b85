"""The diagnostics catalogue (`stockade/catalogue.py`) against the source that raises codes.

Every code literal in `stockade/` (and every `codes.NAME` reference, once the literals are
converted) is catalogued; every entry is used somewhere or marked reserved with a reason;
names and codes are unique; a code's family letter matches the stage that raises it; the
examples really trigger their code; the README's code list is the generated one; and
`stockade explain` prints entries and refuses unknown codes.
"""

from __future__ import annotations

import ast
import json
import marshal
import os
import re
import subprocess
import sys
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

from stockade import catalogue
from stockade.diagnostics import Diagnostic

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "stockade"
#: A string constant that looks like a diagnostic code: one capital letter and three digits.
CODE_LITERAL = re.compile(r"^[A-Z][0-9]{3}$")
#: Codes raised outside their family's stage package (besides `stockade/cli`, the edge that
#: fronts every stage), each with the reason.
CROSS_STAGE = {
    ("C204", "runtime"): "`stockade run` loads the policy it is given and reports an unreadable one",
}


@dataclass(frozen=True)
class Use:
    """One place a code is used: a literal (``"B300"``) or a name (``codes.UNKNOWN_TARGET``)."""

    code: str
    file: str
    line: int
    how: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.how}"


def uses_in(source: str, file: str, table: types.ModuleType = catalogue) -> tuple[list[Use], list[Use]]:
    """The code uses of one module: (literals and known names, names the catalogue lacks).

    Names are attribute reads on an alias of :mod:`stockade.catalogue` (``from stockade
    import catalogue as codes``, ``import stockade.catalogue as codes``) and names imported
    from it; f-string parts are string constants too, so they are scanned as well.  Names
    are looked up in ``table`` (the catalogue module)."""
    tree = ast.parse(source, filename=file)
    aliases: set[str] = set()
    found: list[Use] = []
    missing: list[Use] = []

    def by_name(name: str, line: int) -> None:
        value = getattr(table, name, None)
        if isinstance(value, str) and table.get(value) is not None and table.get(value).name == name:
            found.append(Use(str(value), file, line, f"name {name}"))
        elif name.isupper() and name not in ("FAMILIES", "ENTRIES", "README_BEGIN", "README_END"):
            missing.append(Use(name, file, line, f"name {name} is not in the catalogue"))

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "stockade":
            aliases.update(a.asname or a.name for a in node.names if a.name == "catalogue")
        elif isinstance(node, ast.ImportFrom) and node.module == "stockade.catalogue":
            for alias in node.names:
                by_name(alias.name, node.lineno)
        elif isinstance(node, ast.Import):
            aliases.update(a.asname for a in node.names if a.name == "stockade.catalogue" and a.asname)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE_LITERAL.match(node.value):
            found.append(Use(node.value, file, node.lineno, f"literal {node.value!r}"))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            by_name(node.attr, node.lineno)
    return found, missing


def scan(root: Path = PACKAGE) -> tuple[list[Use], list[Use]]:
    """:func:`uses_in` over every module of the package but the catalogue itself."""
    found: list[Use] = []
    missing: list[Use] = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "catalogue.py":
            continue
        more, lacking = uses_in(path.read_text(encoding="utf-8"), str(path.relative_to(root.parent)))
        found += more
        missing += lacking
    return found, missing


def uncatalogued(uses: list[Use]) -> list[Use]:
    """The uses whose code has no catalogue entry."""
    return [use for use in uses if catalogue.get(use.code) is None]


USES, MISSING_NAMES = scan()


def test_the_scan_sees_the_codes_the_source_uses() -> None:
    # a scan that found nothing would make the tests below pass vacuously
    assert len({use.code for use in USES}) > 90 and any(use.code == "B300" for use in USES)


def test_every_code_used_in_the_source_is_catalogued() -> None:
    assert not uncatalogued(USES), "add these codes to stockade/catalogue.py:\n" + "\n".join(
        map(str, uncatalogued(USES)))
    assert not MISSING_NAMES, "\n".join(map(str, MISSING_NAMES))


def test_a_new_code_literal_outside_the_catalogue_is_caught() -> None:
    source = ('from stockade import catalogue as codes\nfrom stockade.diagnostics import Diagnostic\n\n'
              'def f(name: str) -> Diagnostic:\n    return Diagnostic("B399", f"unknown `{name}`")\n\n'
              'def g() -> str:\n    return codes.NO_SUCH_CODE_NAME\n\n'
              'def h() -> str:\n    return codes.UNKNOWN_TARGET\n')
    found, missing = uses_in(source, "new.py")
    assert [str(use) for use in uncatalogued(found)] == ["new.py:5: literal 'B399'"]
    assert [use.code for use in missing] == ["NO_SUCH_CODE_NAME"]
    assert [use.code for use in found if use.how.startswith("name")] == ["B300"]


def test_every_entry_is_used_or_reserved_with_a_reason() -> None:
    used = {use.code for use in USES}
    unused = [e.code for e in catalogue.ENTRIES.values() if e.code not in used and not e.reserved]
    assert not unused, f"no source raises {unused}: remove them, or give `reserved=\"why\"`"
    reserved_but_used = [e.code for e in catalogue.ENTRIES.values() if e.reserved and e.code in used]
    assert not reserved_but_used


def test_codes_and_names_are_unique_and_well_formed() -> None:
    entries = list(catalogue.ENTRIES.values())
    assert len({e.code for e in entries}) == len(entries) == len({e.name for e in entries})
    for item in entries:
        assert re.fullmatch(r"[A-Z][0-9]{3}", item.code), item
        assert re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*", item.name), item
        assert getattr(catalogue, item.name) == item.code and type(getattr(catalogue, item.name)) is str
    with pytest.raises(ValueError, match="declared twice"):
        catalogue.entry("B300", "again", explanation="...")
    assert list(catalogue.ENTRIES) == sorted(catalogue.ENTRIES)


def test_a_code_that_has_two_names_is_refused() -> None:
    module = types.ModuleType("catalogue_copy")
    source = (PACKAGE / "catalogue.py").read_text(encoding="utf-8") + "\nALSO_UNKNOWN_TARGET = UNKNOWN_TARGET\n"
    exec(compile(source, "catalogue_copy.py", "exec"), module.__dict__)
    with pytest.raises(ValueError, match="two names"):
        module.get("B300")


def test_family_prefix_matches_the_stage_that_raises_it() -> None:
    digits: dict[str, set[str]] = {}
    for item in catalogue.ENTRIES.values():
        assert item.code[0] in catalogue.FAMILIES, item
        digits.setdefault(item.code[0], set()).add(item.code[1])
    assert all(len(d) == 1 for d in digits.values()), digits  # P1xx, C2xx, B3xx ...
    assert len({d for ds in digits.values() for d in ds}) == len(digits)
    wrong = []
    for use in USES:
        package = Path(use.file).parts[1] if len(Path(use.file).parts) > 2 else ""
        stage = catalogue.FAMILIES[use.code[0]][0]
        if package not in (stage, "cli") and (use.code, package) not in CROSS_STAGE:
            wrong.append(f"{use} ({use.code} belongs to `{stage}`)")
    assert not wrong, "\n".join(wrong)
    for code, package in CROSS_STAGE:  # every exception is still needed
        assert any(u.code == code and Path(u.file).parts[1] == package for u in USES), (code, package)


def test_entries_have_a_title_an_explanation_and_a_fix() -> None:
    for item in catalogue.ENTRIES.values():
        assert item.title and item.title == item.title.strip() and not item.title.endswith("."), item
        assert item.title[0].islower() or item.title[0] == "`", item  # like a message: lowercase
        paragraphs = item.explanation.split("\n\n")
        assert len(paragraphs) >= 2 and all(p.strip().endswith((".", ")")) for p in paragraphs), item
        assert item.example_kind in (None, "policy", "shell", "text"), item
        assert (item.example is None) == (item.example_kind is None), item
        assert item.to_json()["code"] == item.code and json.dumps(item.to_json())


def test_a_code_is_its_string() -> None:
    code = catalogue.UNKNOWN_TARGET
    assert code == "B300" and type(code) is str
    found = catalogue.get(code)
    assert found is not None and found.title == "unknown target" and catalogue.get(" b300 ") is found
    data = Diagnostic(code, "unknown target `x`").to_json()
    assert json.loads(json.dumps(data))["code"] == "B300"
    assert marshal.loads(marshal.dumps(data)) == data  # the plan cache marshals warnings: no str subclass
    assert str(Diagnostic(code, "m")) == "error[B300]: m" and f"{code}" == "B300"
    assert catalogue.get("B999") is None


@pytest.mark.parametrize("item", [e for e in catalogue.ENTRIES.values() if e.example_kind == "policy"],
                         ids=lambda e: e.code)
def test_policy_examples_trigger_their_code(item: catalogue.Entry, tmp_path: Path) -> None:
    from stockade.compiler.pipeline import compile_policy
    from stockade.diagnostics import StockadeError

    path = tmp_path / "example.policy"
    path.write_text(item.example or "", encoding="utf-8")
    try:
        result = compile_policy(str(path), workspace=str(tmp_path), home=str(tmp_path), tmpdir=str(tmp_path),
                                environ={})
        codes = [d.code for d in result.warnings]
    except StockadeError as error:
        codes = [d.code for d in error.diagnostics]
    assert item.code in codes, (item.code, codes)


def _private_env(tmp: Path) -> dict[str, str]:
    """A private HOME, cache and state, and `stockade` on PATH running this tree."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "stockade"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m stockade "$@"\n')
    shim.chmod(0o755)
    (tmp / "home").mkdir()
    return dict(os.environ, PATH=f"{bin_dir}:{os.environ.get('PATH', os.defpath)}", PYTHONPATH=str(ROOT),
                HOME=str(tmp / "home"), XDG_CACHE_HOME=str(tmp / "xdg-cache"), XDG_STATE_HOME=str(tmp / "xdg-state"),
                STOCKADE_CACHE_DIR=str(tmp / "cache"), STOCKADE_AUDIT=str(tmp / "audit.jsonl"), NO_COLOR="1")


@pytest.mark.parametrize("item", [e for e in catalogue.ENTRIES.values() if e.example_kind == "shell"],
                         ids=lambda e: e.code)
def test_shell_examples_trigger_their_code(item: catalogue.Entry, tmp_path: Path) -> None:
    lines = (item.example or "").split("\n")
    assert all(line.startswith("$ ") for line in lines), item.example
    script = "\n".join(line[2:] for line in lines)
    # examples only check, compile, analyze, export, import, explain, audit and answer hooks:
    # nothing here runs a command (no `stockade run`)
    assert re.search(r"\bstockade (check|compile|analyze|export|import|explain|audit|hook)\b", script)
    assert "stockade run" not in script
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    done = subprocess.run(["/bin/sh", "-c", script], cwd=work, capture_output=True, text=True, timeout=120,
                          env=_private_env(tmp_path))
    output = done.stdout + done.stderr
    assert f"[{item.code}]" in output or f'"code": "{item.code}"' in output, output
    assert "Traceback" not in output


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_code_list_is_generated_from_the_catalogue() -> None:
    text = _readme()
    start, end = text.index(catalogue.README_BEGIN), text.index(catalogue.README_END)
    assert text[start:end + len(catalogue.README_END)] == catalogue.readme_block(), \
        "regenerate it: python3 -m stockade.catalogue --write-readme README.md"
    assert catalogue.with_readme_block(text) == text
    for letter, title, members in catalogue.by_family():
        assert f"**{letter}" in text and all(f"`{m.code}` {m.title}" in text for m in members), title


def test_readme_generator_rewrites_a_stale_list(tmp_path: Path) -> None:
    stale = tmp_path / "README.md"
    stale.write_text(f"intro\n\n{catalogue.README_BEGIN}\n* `P100` old\n{catalogue.README_END}\n\nrest\n")
    done = subprocess.run([sys.executable, "-m", "stockade.catalogue", "--write-readme", str(stale)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert stale.read_text() == f"intro\n\n{catalogue.readme_block()}\n\nrest\n"


def stockade(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stockade", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, env=dict(os.environ, HOME=str(tmp), XDG_CACHE_HOME=str(tmp / "xdg"),
                                               STOCKADE_CACHE_DIR=str(tmp / "cache"), NO_COLOR="1"))


def test_explain_prints_the_entry_in_any_case_and_by_name(tmp_path: Path) -> None:
    done = stockade("explain", "c220", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "C220: loosens a locked rule" and lines[1] == "compiler · LOOSENS_LOCKED_RULE"
    assert "Layers only tighten." in done.stdout and "    include \"base.policy\"" in done.stdout
    assert stockade("explain", "loosens_locked_rule", tmp=tmp_path).stdout == done.stdout
    assert all(len(line) <= 88 for line in lines if not line.startswith("    "))


def test_explain_json(tmp_path: Path) -> None:
    done = stockade("explain", "B300", "--format", "json", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["ok"] is True and data["code"] == "B300" and data["name"] == "UNKNOWN_TARGET"
    assert data["family"] == "backends" and data["explanation"] == catalogue.ENTRIES["B300"].explanation


def test_explain_refuses_an_unknown_code_with_a_suggestion(tmp_path: Path) -> None:
    done = stockade("explain", "B399", tmp=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["stockade: error[E001]: unknown diagnostic code `B399`",
                                        "  = help: did you mean `B309`?"]
    as_json = stockade("explain", "unknown-targt", "--format", "json", tmp=tmp_path)
    assert as_json.returncode == 2
    diagnostic = json.loads(as_json.stdout)["diagnostics"][0]
    assert diagnostic["code"] == "E001" and "`B300`" in diagnostic["help"]
    nothing_close = stockade("explain", "hello", tmp=tmp_path)
    assert nothing_close.returncode == 2 and "the README lists every code" in nothing_close.stderr


def test_readme_explain_sample_is_the_real_output(tmp_path: Path) -> None:
    text = _readme()
    start = text.index("$ stockade explain p111\n") + len("$ stockade explain p111\n")
    sample = text[start:text.index("```", start)]
    assert stockade("explain", "p111", tmp=tmp_path).stdout == sample


def _recipe_blocks() -> list[str]:
    text = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    start = text.index("## Add a diagnostic\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else len(text)]
    return [textwrap.dedent(block) for block in re.findall(r"```python\n(.*?)```", section, re.S)]


def test_contributing_recipe_adds_a_diagnostic(tmp_path: Path) -> None:
    declare, use = _recipe_blocks()
    # step 2: the declaration, added to (a copy of) the catalogue, is a new entry
    module = types.ModuleType("catalogue_with_new_code")
    source = (PACKAGE / "catalogue.py").read_text(encoding="utf-8")
    exec(compile(source + "\n" + declare, "catalogue_with_new_code.py", "exec"), module.__dict__)
    assigned = next(n for n in ast.parse(declare).body if isinstance(n, ast.Assign))
    name = assigned.targets[0].id  # type: ignore[attr-defined]
    code = getattr(module, name)
    assert type(code) is str and catalogue.get(code) is None
    added = module.get(code)
    assert added is not None and added.name == name and added.code[0] == "C" and added.example_kind == "policy"
    assert len(added.explanation.split("\n\n")) >= 2 and added.title[0].islower()
    # step 3: raising it by name is a use the scan resolves; without step 2 the scan refuses it
    found, missing = uses_in(use, "new.py", module)
    assert [u.code for u in found] == [code] and not missing
    assert [u.code for u in uses_in(use, "new.py")[1]] == [name]
    # and a literal would be caught (test_a_new_code_literal_outside_the_catalogue_is_caught)
    # step 4: the README list of the extended catalogue names the new code; the command works
    assert f"`{code}` {added.title}" in module.readme_block()
    assert "`python3 -m stockade.catalogue --write-readme README.md`" in catalogue.readme_block()
    readme = tmp_path / "README.md"
    readme.write_text(f"{catalogue.README_BEGIN}\n{catalogue.README_END}\n")
    done = subprocess.run([sys.executable, "-m", "stockade.catalogue", "--write-readme", str(readme)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and readme.read_text() == catalogue.readme_block() + "\n"
