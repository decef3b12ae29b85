"""The newline :func:`stockade.analyzer.parse.parse_tree` adds after a text (tree-sitter-bash
is much faster with it on some texts) never changes the tree but for the root's end."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fast_path import CORPUS, EXTRA, near_simple, simple_commands, simple_lists

from stockade.analyzer.parse import (
    Source,
    UnsafeText,
    check_scanner_bytes,
    error_repaired_tree,
    heredoc_repaired_tree,
    hide_bare_dollars,
    hide_brace_words,
    hide_escaped_returns,
    hide_prefix_words,
    newline_safe,
    parse,
    parse_tree,
    parser,
    zero_descriptor_repaired,
)

SNAPSHOT = Path(__file__).parent / "snapshot" / "verdicts.jsonl"

#: Pieces of shell text: constructs of every kind, joined at random by the generator below.
_PIECES = ["ls", "a", " ", "  ", "\t", "\n", "|", "||", "&&", ";", "&", "'", '"', "'x y'", '"$y"', "$x", "${x}",
           "${x:-a b}", "$(", ")", "`", "{", "}", "{a,b}", "{1..3}", "x{a,b}y", "(", "<", ">", ">>", "2>&1", "&>",
           "<(", ">(", "<<<", "<<EOF\n", "EOF", "#", "# c", "if ", "then ", "else ", "fi", "for i in a; do ",
           "done", "while ", "case x in a) ;; esac", "function f { ", "f() { ", "x=1 ", "y=(a b) ", "[[ ", " ]]",
           "[ ", " ]", "$((", "))", "((", "!", "~", "~/x", "*", "?", "[ab]", "$'\\n'", "é", "\r", "=", "==",
           "-rf", "--x=y", "/tmp/f", "cat", "grep -v x", "sort", "head -1", "sh", "bash -c 'ls'", "echo"]
shell_text = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12).map("".join)
#: Texts with pipes, the ones parsed with the newline.
_PIPES = ["|", " | ", " |& ", "| tee f", "| sh", "$(a | b | c)", "`a|b|c`", "'|'", '"|"', "(a|b|c)", "{ a|b|c; }",
          "x=$(a|b) ", "case $x in a|b) c|d|e;; esac"]
piped_text = st.lists(st.sampled_from(_PIECES + _PIPES * 4), min_size=2, max_size=14).map("".join)


def _signature(node, root: bool = True, field: str | None = None, out: list | None = None) -> list:
    """Every node in order: type, offsets (not the root's end), flags, field name."""
    out = [] if out is None else out
    out.append((node.type, node.start_byte, None if root else node.end_byte, node.is_missing, node.is_error,
                node.is_named, field))
    for index, child in enumerate(node.children):
        _signature(child, False, node.field_name_for_child(index), out)
    return out


def _same_tree(text: str) -> None:
    """A newline after a :func:`newline_safe` text changes no node (unless the parse with it
    has an error, when it is not used), and :func:`parse_tree` gives the plain tree (of the
    text with its brace and prefix words, escaped CRs and bare ``$`` hidden, as
    :func:`parse_tree` parses it, and repaired as it repairs it)."""
    data = hide_bare_dollars(hide_escaped_returns(hide_prefix_words(hide_brace_words(
        text.encode("utf-8", "surrogateescape")))))
    try:
        check_scanner_bytes(data)
    except UnsafeText:  # bytes the parser must never see (they may crash this process)
        return
    plain_tree = parser().parse(data)
    plain = _signature(plain_tree.root_node)
    # (the repairs parse_tree makes of what the grammar misreads: here-document lines that
    # start with the delimiter, and, for a text with an error, `[` words, arithmetic bases and `<>`)
    repaired = heredoc_repaired_tree(data) if "<<" in text else None
    if repaired is None and plain_tree.root_node.has_error and ("[ " in text or "#$" in text or "<>" in text):
        repaired = error_repaired_tree(text, data)
    expected = plain if repaired is None else _signature(repaired.root_node)
    if "0<" in text or "0>" in text:  # (a descriptor 0 the grammar reads as an argument: parsed again)
        fixed = zero_descriptor_repaired(data, repaired or plain_tree)
        if fixed is not None:
            expected = _signature(parse_tree(text, fixed, False).root_node)
    assert _signature(parse_tree(text, data).root_node) == expected, text
    if newline_safe(text):
        with_newline = parser().parse(data + b"\n").root_node
        if not with_newline.has_error:
            assert with_newline.end_byte == len(data) + 1
            assert _signature(with_newline) == plain, text


def test_known_texts_same_tree() -> None:
    texts = set(CORPUS) | set(EXTRA)
    texts |= {json.loads(line)["command"] for line in SNAPSHOT.read_text().splitlines() if line.strip()}
    texts |= {"a | b | c", "cat x | sort | uniq -c | sort -rn | head", "{rm,-rf,~}", "a|b|c", "ls # x",
              "cat <<EOF\nx\nEOF", "echo 'open", "if true; then ls", "echo a\\", "x=1",
              ">>a | b | c>x|d", "sh 0< x", "{ sh 0<x; } | cat | cat", "echo '0<' 0>f", "exec 0</dev/null"}  # grouped differently when a newline follows: never given one
    for text in texts:
        _same_tree(text)


@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(shell_text, piped_text, near_simple, simple_commands, simple_lists))
def test_generated_texts_same_tree(text: str) -> None:
    _same_tree(text)


def test_pipelines_are_parsed_with_the_newline() -> None:
    for text in ("a | b | c", "cat x | sort | uniq -c | sort -rn | head", "echo 'a|b' | grep a"):
        data = text.encode()
        assert parse_tree(text, data).root_node.end_byte == len(data) + 1
    for text in ("a | b | c\\", "a | b | c ", "cat <<EOF | a | b\nx\nEOF", "a | b | (c", ">>a | b | c>x|d"):
        data = text.encode()
        assert parse_tree(text, data).root_node.end_byte == len(data)


def test_root_span_is_clamped_to_the_text() -> None:
    source = parse("a | b | c", base=5)
    assert isinstance(source, Source)
    assert source.tree.root_node.end_byte == 10
    assert source.span(source.tree.root_node) == (5, 14)
