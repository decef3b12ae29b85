"""The parser: the examples parse; every kind of mistake is a located diagnostic."""

from __future__ import annotations

from pathlib import Path

import pytest

from stockade.policy_lang import parse
from stockade.policy_lang.ast import CommandRuleNode, FsRuleNode, LimitNode, NetRuleNode, PolicyFile

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.policy"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_parse_without_diagnostics(path: Path) -> None:
    policy, diagnostics = parse(path.read_text(), str(path))
    assert diagnostics == []
    assert isinstance(policy, PolicyFile)
    assert policy.blocks


def codes(text: str) -> list[tuple[str, int, int]]:
    policy, diagnostics = parse(text, "t.policy")
    assert policy is None or not diagnostics
    return [(d.code, d.span.line, d.span.column) for d in diagnostics]


def messages(text: str) -> list[str]:
    return [f"{d.message} | {d.help}" for d in parse(text, "t.policy")[1]]


def test_rules_carry_spans_and_values() -> None:
    text = 'policy "p"\nfilesystem {\n    locked deny ~/.ssh "a b"\n}\nlimits {\n  memory 4GiB\n}\n' \
           'network {\n  allow github.com:443 [::1]:8080 10.0.0.0/8 *.npmjs.org\n}\n' \
           'commands {\n  deny git push --force|-f, rm -rf / because "no"\n}\n'
    policy, diagnostics = parse(text, "t.policy")
    assert diagnostics == []
    fs = policy.rules("filesystem")[0]
    assert isinstance(fs, FsRuleNode) and fs.locked and fs.kind == "deny"
    assert [w.text for w in fs.paths] == ["~/.ssh", "a b"]
    assert (fs.paths[1].span.line, fs.paths[1].span.column) == (3, 24)
    limit = policy.rules("limits")[0]
    assert isinstance(limit, LimitNode) and limit.value == 4 * 1024**3
    hosts = policy.rules("network")[0]
    assert isinstance(hosts, NetRuleNode)
    assert [(h.kind, h.value, h.port) for h in hosts.hosts] == [
        ("host", "github.com", 443), ("cidr", "::1/128", 8080), ("cidr", "10.0.0.0/8", None),
        ("domain", "npmjs.org", None)]
    rule = policy.rules("commands")[0]
    assert isinstance(rule, CommandRuleNode) and rule.reason == "no"
    assert [[w.text for w in p.words] for p in rule.patterns] == [["git", "push", "--force|-f"], ["rm", "-rf", "/"]]


def test_equality_ignores_spans_and_layout() -> None:
    a, _ = parse('filesystem {\n  read /\n}\n', "a")
    b, _ = parse('\n\n# comment\nfilesystem {\n\n      read    /   # x\n}\n', "b")
    assert a == b


@pytest.mark.parametrize("text, expected", [
    ("filesystm {\n read /\n}\n", ("P102", 1, 1)),
    ("filesystem {\n wrte /\n}\n", ("P107", 2, 2)),
    ("filesystem {\n read \"/x\n}\n", ("P100", 2, 7)),
    ("filesystem {\n read /\n", ("P100", 2, 8)),
    ("network {\n allow a.com:0\n}\n", ("P121", 2, 8)),
    ("network {\n allow 10.0.0.1/8\n}\n", ("P122", 2, 8)),
    ("network {\n allow -bad-.com\n}\n", ("P120", 2, 8)),
    ("network {\n default maybe\n}\n", ("P109", 2, 10)),
    ("limits {\n memory 4Gb\n}\n", ("P111", 2, 9)),
    ("limits {\n timeout 10 m\n}\n", ("P109", 2, 13)),
    ("limits {\n processes -1\n}\n", ("P110", 2, 12)),
    ("environment {\n keep 1BAD\n}\n", ("P130", 2, 7)),
    ("environment {\n set NOVALUE\n}\n", ("P109", 2, 6)),
    ("commands {\n deny sudo,, su\n}\n", ("P109", 2, 12)),
    ("commands {\n unparsable maybe\n}\n", ("P109", 2, 13)),
    ("test {\n allow \"ls\"\n}\n", ("P104", 1, 1)),
    ("test \"t\" {\n allow ls -la\n}\n", ("P109", 2, 8)),
    ("filesystem {\n read / because \"x\"\n}\n", ("P106", 2, 9)),
    ("policy \"a\"\npolicy \"b\"\n", ("P103", 2, 8)),
    ("filesystem {\n read \"bad \\q escape\"\n}\n", ("P101", 2, 12)),
    ("}\n", ("P100", 1, 1)),
    ("filesystem { read / }\n", ("P100", 1, 21)),
    ("\x00", ("P100", 1, 1)),
])
def test_each_mistake_is_a_located_diagnostic(text: str, expected: tuple[str, int, int]) -> None:
    found = codes(text)
    assert expected in found, found


def test_messages_use_the_languages_words_and_offer_hints() -> None:
    assert messages("filesystm {\n}\n") == ["unknown section `filesystm` | did you mean `filesystem`?"]
    assert messages("filesystem {\n wrte /\n}\n") == ["unknown keyword `wrte` in `filesystem` | did you mean `write`?"]
    assert messages("network {\n keep PATH\n}\n") == [
        "unknown keyword `keep` in `network` | `keep` belongs in the `environment` section"]
    assert messages("limits {\n memory 4Gb\n}\n") == ["unknown size unit `Gb` | did you mean `GB`?"]
    text = "\n".join(messages("filesystem {\n read / }\n"))
    for lark_word in ("RBRACE", "_NL", "WORD", "$END", "Token"):
        assert lark_word not in text


def test_all_errors_of_a_file_are_reported_in_one_run() -> None:
    text = ('filesystm {\n  read /\n}\nfilesystem {\n  wrte /tmp\n  read "/unterminated\n  deny ~/.ssh\n}\n'
            'network {\n  allow github.com:99999\n}\nlimits {\n  memory 4Gb\n}\nfilesystem {\n  read /\n')
    found = codes(text)
    assert [c for c, _, _ in found] == ["P102", "P107", "P100", "P121", "P111", "P100"]


def test_comments_are_collected_with_their_lines() -> None:
    policy, _ = parse("# head\nfilesystem {  # trailing\n  read /\n}\n", "t")
    assert [(c.text, c.line, c.trailing) for c in policy.comments] == [(" head", 1, False), (" trailing", 2, True)]


def test_crlf_line_endings() -> None:
    policy, diagnostics = parse('policy "w"\r\nfilesystem {\r\n  read /\r\n}\r\n', "t")
    assert diagnostics == [] and policy.name == "w"


def test_quoted_set_values_and_bare_alternatives() -> None:
    policy, diagnostics = parse('environment {\n set GREETING="hi there" CI=1 EMPTY=""\n}\n', "t")
    assert diagnostics == []
    assert [(a.name, a.value) for a in policy.rules("environment")[0].assignments] == [
        ("GREETING", "hi there"), ("CI", "1"), ("EMPTY", "")]
