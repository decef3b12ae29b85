"""Property tests of the parser and formatter (hypothesis).

(a) Generated ASTs — random paths with spaces, quotes and unicode, hosts, environment names,
    limits, command patterns with ``|`` alternatives, test cases — survive
    ``format_policy`` → ``parse`` unchanged, and the formatted text is a fixed point.
(b) Mutated example policies (characters deleted, inserted, replaced; lines swapped and
    duplicated; keywords, braces, quotes, unicode, NUL and CR inserted) never make ``parse``
    raise: it returns an AST or located diagnostics; the compiler either succeeds or raises
    ``StockadeError``; and whatever parses formats to a fixed point with the same AST.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.diagnostics import StockadeError
from stockade.policy_lang import parse, values
from stockade.policy_lang.ast import (
    Block,
    CommandRuleNode,
    Comment,
    EnvAssignment,
    EnvNamesNode,
    EnvSetNode,
    FsRuleNode,
    HostNode,
    Include,
    LimitNode,
    NetDefaultNode,
    NetRuleNode,
    PatternNode,
    PolicyFile,
    VerdictSettingNode,
    Word,
)
from stockade.policy_lang.ast import TestCaseNode as CaseNode  # renamed: pytest would try to collect it
from stockade.policy_lang.formatter import format_policy, needs_quotes

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(ROOT.joinpath("examples").rglob("*.policy")) + [
    ROOT / "stockade" / "compiler" / "builtin" / "default.policy"]
SAMPLE_TEXTS = [path.read_text(encoding="utf-8") for path in SAMPLES]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- (a) generated ASTs ----------------------------------------------------------------

SPECIALS = ' \t"\\#{},|$*?~/.-_=:\r\n\x0b\x0c\x85\u00a0\u2028é中😀'
chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
any_text = st.text(st.one_of(chars, st.sampled_from(SPECIALS)), max_size=12)
plain_piece = st.text(st.sampled_from("abcxyz019-_./~*é中"), min_size=1, max_size=6)


@st.composite
def words(draw: st.DrawFn, text: st.SearchStrategy[str], quoted: bool | None = None) -> Word:
    """A word of ``text``; quoted when it must be, else as drawn (``quoted`` forces it)."""
    value = draw(text)
    if quoted is None:
        quoted = needs_quotes(value) or draw(st.booleans())
    return Word(value, quoted or needs_quotes(value))


paths = st.one_of(
    st.builds(lambda v, p: f"${v}/{p}", st.sampled_from(["WORKSPACE", "HOME", "TMPDIR", "{WORKSPACE}"]), plain_piece),
    st.builds(lambda p: f"~/{p}", plain_piece),
    any_text.filter(lambda t: t and "\n" not in t),
)
fs_rules = st.builds(FsRuleNode, st.sampled_from(["read", "write", "readonly", "deny"]),
                     st.lists(words(paths), min_size=1, max_size=3).map(tuple), st.booleans())

labels = st.text(st.sampled_from("abcdefghz0189-"), min_size=1, max_size=8).filter(
    lambda t: not t.startswith("-") and not t.endswith("-"))
host_texts = st.one_of(
    st.just("localhost"), st.just("*"),
    st.lists(labels, min_size=1, max_size=3).map(".".join).filter(lambda t: not t.replace(".", "").isdigit()),
    st.lists(labels, min_size=1, max_size=3).map(lambda parts: "*." + ".".join(parts)),
    st.builds("{}.{}.{}.{}".format, *[st.integers(0, 255)] * 4),
    st.sampled_from(["10.0.0.0/8", "192.168.1.0/24", "fd00::/8", "::1", "[::1]", "2001:db8::/32"]),
)


@st.composite
def hosts(draw: st.DrawFn) -> HostNode:
    text = draw(host_texts)
    port = draw(st.one_of(st.none(), st.integers(1, 65535)))
    if (port is not None and "/" not in text and "::" not in text.strip("[]")) or (text == "[::1]" and port):
        text = f"{text}:{port}"
    word = draw(words(st.just(text)))
    kind, value, parsed_port = values.parse_host(word.text)
    return HostNode(kind, value, parsed_port, word)


net_rules = st.one_of(
    st.builds(NetDefaultNode, st.sampled_from(["allow", "deny"]), st.booleans()),
    st.builds(NetRuleNode, st.sampled_from(["allow", "deny"]), st.lists(hosts(), min_size=1, max_size=3).map(tuple),
              st.booleans()),
)

env_names = st.from_regex(r"[A-Za-z_*?][A-Za-z0-9_*?]{0,8}", fullmatch=True)
env_plain = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)


@st.composite
def assignments(draw: st.DrawFn) -> EnvAssignment:
    name, value = draw(env_plain), draw(any_text)
    quoted = needs_quotes(f"{name}={value}") or draw(st.booleans())
    return EnvAssignment(name, value, Word(f"{name}={value}", quoted))


env_rules = st.one_of(
    st.builds(EnvNamesNode, st.sampled_from(["keep", "drop"]), st.lists(words(env_names), min_size=1, max_size=3)
              .map(tuple), st.booleans()),
    st.builds(EnvSetNode, st.lists(assignments(), min_size=1, max_size=3).map(tuple), st.booleans()),
)

LIMIT_TEXTS = {
    "timeout": st.from_regex(r"[1-9][0-9]{0,3}(\.[0-9]{1,2})?(ms|s|m|h|d)?", fullmatch=True),
    "memory": st.from_regex(r"[1-9][0-9]{0,3}(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?", fullmatch=True),
    "processes": st.from_regex(r"[1-9][0-9]{0,4}", fullmatch=True),
}
LIMIT_TEXTS["cpu"], LIMIT_TEXTS["output"] = LIMIT_TEXTS["timeout"], LIMIT_TEXTS["memory"]
LIMIT_PARSERS = {"timeout": values.parse_duration, "cpu": values.parse_duration, "memory": values.parse_size,
                 "output": values.parse_size, "processes": values.parse_count}


@st.composite
def limit_rules(draw: st.DrawFn) -> LimitNode:
    name = draw(st.sampled_from(sorted(LIMIT_TEXTS)))
    word = draw(words(LIMIT_TEXTS[name]))
    return LimitNode(name, LIMIT_PARSERS[name](word.text), word, draw(st.booleans()))


pattern_words = st.one_of(
    words(st.lists(plain_piece, min_size=1, max_size=3).map("|".join)),  # alternatives: `-rf|-fr`
    words(any_text.filter(bool)),
)
patterns = st.builds(PatternNode, st.lists(pattern_words, min_size=1, max_size=4).map(tuple))
reasons = st.one_of(st.none(), any_text.filter(lambda t: t.strip()))
command_rules = st.one_of(
    st.builds(CommandRuleNode, st.sampled_from(["allow", "confirm", "deny"]),
              st.lists(patterns, min_size=1, max_size=3).map(tuple), reasons, st.booleans()),
    st.builds(VerdictSettingNode, st.sampled_from(["unknown-effects", "unparsable"]),
              st.sampled_from(["allow", "confirm", "deny"]), st.booleans()),
)
test_cases = st.builds(CaseNode, st.sampled_from(["allow", "confirm", "deny"]),
                       words(any_text.filter(lambda t: t.strip()), quoted=True))

RULES = {"filesystem": fs_rules, "network": net_rules, "environment": env_rules, "limits": limit_rules(),
         "commands": command_rules, "test": test_cases}


@st.composite
def blocks(draw: st.DrawFn) -> Block:
    kind = draw(st.sampled_from(sorted(RULES)))
    rules = tuple(draw(st.lists(RULES[kind], max_size=4)))
    return Block(kind, rules, draw(any_text) if kind == "test" else None)


policies = st.builds(
    PolicyFile,
    st.one_of(st.none(), any_text.filter(lambda t: t.strip())),
    st.booleans(),
    st.lists(st.builds(Include, any_text.filter(bool)), max_size=2).map(tuple),
    st.lists(blocks(), max_size=5).map(tuple),
    comments=st.lists(st.builds(Comment, st.text(chars.filter(lambda c: c != "\n"), max_size=10)), max_size=2)
    .map(tuple),
)


@SETTINGS
@given(policies)
def test_generated_asts_survive_format_then_parse(policy: PolicyFile) -> None:
    text = format_policy(policy)
    again, diagnostics = parse(text, "gen.policy")
    assert diagnostics == [], (text, diagnostics)
    assert again == policy, text
    assert format_policy(again, text) == text
    assert [c.text.rstrip() for c in again.comments] == [c.text.rstrip() for c in policy.comments]


# -- (b) mutations of the examples -----------------------------------------------------

INSERTS = ["policy", "include", "enforced", "locked", "because", "filesystem", "network", "commands", "test",
           "limits", "environment", "read", "deny", "allow", "default", "set", "timeout", "{", "}", "{}", '"',
           '""', "\\", "#", ",", "|", "\n", "\r", "\r\n", "\t", "\x00", "\x0b", "\x0c", "\u2028", "\x85", "é",
           "😀", "\ufeff", "${", "${X}", "$UNDEFINED", "**", "~", "10m", "4GiB", "0", "-1", "[::1]:99999",
           "10.0.0.1/8", " ", "=", "\"a\\q\""]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """An example policy with one to four random edits."""
    text = draw(st.sampled_from(SAMPLE_TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "replace", "swap", "duplicate", "truncate"]))
        at = draw(st.integers(0, len(text)))
        if kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)):]
        elif kind == "insert":
            piece = draw(st.one_of(st.sampled_from(INSERTS), st.text(chars, min_size=1, max_size=3)))
            text = text[:at] + piece + text[at:]
        elif kind == "replace":
            text = text[:at] + draw(st.one_of(st.sampled_from(INSERTS), chars)) + text[at + 1:]
        elif kind == "truncate":
            text = text[:at]
        else:
            lines = text.split("\n")
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if kind == "swap":
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines.insert(j, lines[i])
            text = "\n".join(lines)
    return text


def check_diagnostics_are_located(text: str, diagnostics: list) -> None:
    assert diagnostics, "no AST and no diagnostic"
    lines = text.split("\n")
    for diag in diagnostics:
        assert diag.code and diag.message, diag
        assert diag.span is not None, diag
        assert 1 <= diag.span.line <= len(lines), (diag, len(lines))
        assert 1 <= diag.span.column <= len(lines[diag.span.line - 1]) + 1, (diag, lines[diag.span.line - 1])


@SETTINGS
@given(mutated())
def test_mutated_policies_parse_to_an_ast_or_located_diagnostics(text: str) -> None:
    policy, diagnostics = parse(text, "mut.policy")
    if policy is None:
        check_diagnostics_are_located(text, diagnostics)
        return
    out = format_policy(policy, text)
    again, diagnostics = parse(out, "mut.policy")
    assert diagnostics == [] and again == policy, out
    assert format_policy(again, out) == out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_policies_compile_or_raise_stockade_error(text: str) -> None:
    from stockade.compiler.pipeline import compile_policy

    with tempfile.TemporaryDirectory() as tmp:
        try:
            compile_policy(text=text, workspace=tmp, home=tmp, tmpdir=tmp, environ={})
        except StockadeError as error:
            assert error.diagnostics
