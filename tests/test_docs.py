"""The user documentation keeps up with the code: the language reference names every keyword
of the grammar and every section keyword, and the errors page is generated from the
catalogue."""

from __future__ import annotations

import re
from pathlib import Path

from stockade import catalogue
from stockade.policy_lang.ast_builder import SECTION_KEYWORDS, VERDICTS

ROOT = Path(__file__).resolve().parents[1]
LANGUAGE = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")


def _grammar_keywords() -> set[str]:
    grammar = (ROOT / "stockade" / "policy_lang" / "policy.lark").read_text(encoding="utf-8")
    body = "\n".join(line for line in grammar.splitlines() if not line.lstrip().startswith("//"))
    literals = set(re.findall(r'"([a-z][a-z-]*)"', body))  # "policy", "include", LOCKED: "locked" ...
    return literals


def test_every_grammar_keyword_is_documented() -> None:
    keywords = _grammar_keywords()
    assert {"policy", "include", "enforced", "locked", "because"} <= keywords
    missing = [k for k in sorted(keywords) if f"`{k}" not in LANGUAGE]
    assert not missing, f"docs/language.md does not mention {missing}"


def test_every_section_and_section_keyword_is_documented() -> None:
    for section, keywords in SECTION_KEYWORDS.items():
        assert f"## `{section}" in LANGUAGE, section
        for keyword in keywords:
            assert re.search(rf"`{re.escape(keyword)}[ `]", LANGUAGE), f"`{keyword}` of `{section}`"
    for verdict in (*VERDICTS, "default allow", "default deny"):
        assert f"`{verdict}" in LANGUAGE


def test_every_value_form_is_documented() -> None:
    from stockade.policy_lang.values import DURATION_UNITS, SIZE_UNITS

    for unit in [*DURATION_UNITS, *SIZE_UNITS]:
        assert f"`{unit}`" in LANGUAGE, unit
    for form in ("`*.domain`", "`localhost`", "`:port`", "`~`", "`$WORKSPACE`", "`**`", "`a|b`"):
        assert form in LANGUAGE, form


def test_every_code_the_reference_names_exists() -> None:
    for code in set(re.findall(r"`([PCBARXE][0-9]{3})`", LANGUAGE)):
        assert catalogue.get(code) is not None, code


def test_the_errors_page_is_generated_from_the_catalogue() -> None:
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert page == catalogue.errors_page(), \
        "regenerate it: python3 -m stockade.catalogue --write-errors docs/errors.md"
    for entry in catalogue.ENTRIES.values():
        assert f"### `{entry.code}` {entry.title}" in page


def test_the_limitations_page_covers_every_platform() -> None:
    page = (ROOT / "docs" / "limitations.md").read_text(encoding="utf-8")
    for heading in ("## Linux", "## macOS", "## Windows", "## Exports"):
        assert heading in page, heading
