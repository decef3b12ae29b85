"""The `filesize` and `disk` limits in the language: sizes as for `memory`, errors, and the
formatter's round trip."""

from __future__ import annotations

import pytest

from stockade.policy_lang import parse
from stockade.policy_lang.ast import LimitNode
from stockade.policy_lang.formatter import format_policy

TEXT = 'policy "p"\n\nlimits {\n    disk 1GiB  # outside the workspace\n    locked filesize   100MiB\n    memory 4GiB\n}\n'


def _limits(text: str) -> list[LimitNode]:
    policy, diagnostics = parse(text, "t.policy")
    assert policy is not None, diagnostics
    return [rule for block in policy.blocks for rule in block.rules if isinstance(rule, LimitNode)]


def test_disk_and_filesize_take_sizes_like_memory() -> None:
    rules = {rule.name: rule for rule in _limits(TEXT)}
    assert rules["disk"].value == 1 << 30 and not rules["disk"].locked
    assert rules["filesize"].value == 100 << 20 and rules["filesize"].locked
    assert rules["filesize"].word.text == "100MiB"
    assert {r.name: r.value for r in _limits('limits {\n  disk 2GB\n  filesize 512KB\n}\n')} == {
        "disk": 2_000_000_000, "filesize": 512_000}


def test_the_formatter_round_trips_them() -> None:
    policy, _ = parse(TEXT, "t.policy")
    out = format_policy(policy, TEXT)
    assert "    disk            1GiB  # outside the workspace\n" in out
    assert "    locked filesize 100MiB\n" in out
    again, diagnostics = parse(out, "t.policy")
    assert again == policy, diagnostics
    assert format_policy(again, out) == out


@pytest.mark.parametrize("text, code", [
    ("limits {\n  disk 1XB\n}\n", "P111"),
    ("limits {\n  filesize 0B\n}\n", "P112"),
    ("limits {\n  disk\n}\n", None),
    ("limits {\n  filesize 1MiB 2MiB\n}\n", None),
    ("limits {\n  file_size 1MiB\n}\n", "P107"),
    # digits that are not ASCII digits (`²` is a digit to str.isdigit, not to int)
    ("limits {\n  processes \u00b21024\n}\n", None),
    ("limits {\n  processes 1\u00b2\n}\n", None),
    ("limits {\n  memory \u00b2GiB\n}\n", None),
    ("limits {\n  cpus \u00b2\n}\n", None),
    ("network {\n  allow example.com:\u00b2443\n}\n", None),
])
def test_bad_values_are_errors(text: str, code: str | None) -> None:
    _, diagnostics = parse(text, "t.policy")
    errors = [d for d in diagnostics if d.severity == "error"]
    assert errors, text
    if code is not None:
        assert errors[0].code == code
    if "file_size" in text:
        assert "filesize" in (errors[0].help or "")  # did you mean
