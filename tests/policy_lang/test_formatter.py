"""The formatter: canonical layout, comments kept, quoting, idempotence and round trip."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from stockade.policy_lang import parse
from stockade.policy_lang.ast import (
    Block,
    CommandRuleNode,
    Comment,
    EnvAssignment,
    EnvSetNode,
    FsRuleNode,
    PatternNode,
    PolicyFile,
    Word,
)
from stockade.policy_lang.ast import TestCaseNode as CaseNode  # renamed: pytest would try to collect it
from stockade.policy_lang.formatter import bare_word, format_policy, needs_quotes, quote

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(ROOT.joinpath("examples").rglob("*.policy")) + [
    ROOT / "stockade" / "compiler" / "builtin" / "default.policy"]


def fmt(text: str) -> str:
    """Format ``text`` (which must parse) and check the result is a fixed point with the same AST."""
    policy, diagnostics = parse(text, "t.policy")
    assert policy is not None, diagnostics
    out = format_policy(policy, text)
    again, diagnostics = parse(out, "t.policy")
    assert again == policy, diagnostics
    assert format_policy(again, out) == out
    return out


def src(text: str) -> str:
    return dedent(text).lstrip("\n")


# -- layout ----------------------------------------------------------------------------


def test_header_is_reordered_and_blocks_keep_their_order() -> None:
    text = src('''
        include "b.policy"
        network {
        default deny
        }
        enforced
        policy "p"
        include "c.policy"
        filesystem {
        read /
        }
    ''')
    assert fmt(text) == src('''
        policy "p"
        enforced

        include "b.policy"
        include "c.policy"

        network {
            default deny
        }

        filesystem {
            read /
        }
    ''')


def test_keywords_align_within_a_block_with_locked_prefix() -> None:
    text = src('''
        filesystem {
          read /
           locked deny ~/.ssh
        readonly ~/.bashrc
        }
        limits {
        timeout 10m
        processes 512
        }
        network {
        default deny
        allow localhost
        }
    ''')
    assert fmt(text) == src('''
        filesystem {
            read        /
            locked deny ~/.ssh
            readonly    ~/.bashrc
        }

        limits {
            timeout   10m
            processes 512
        }

        network {
            default deny
            allow   localhost
        }
    ''')


def test_command_rules_verdict_settings_and_because_align_like_the_examples() -> None:
    text = src('''
        commands {
        deny sudo,su,doas because "no privilege escalation"
        deny   git push --force|-f   because   "history"
        confirm git push
        unknown-effects confirm
        unparsable deny
        }
    ''')
    assert fmt(text) == src('''
        commands {
            deny    sudo, su, doas       because "no privilege escalation"
            deny    git push --force|-f  because "history"
            confirm git push
            unknown-effects confirm
            unparsable      deny
        }
    ''')


def test_empty_file_and_empty_block() -> None:
    assert fmt("") == ""
    assert fmt("\n\n") == ""
    assert fmt('policy "x"\nnetwork {}\n') == 'policy "x"\n\nnetwork {\n}\n'


def test_crlf_and_tabs_become_canonical() -> None:
    text = 'policy "x"\r\n\r\nfilesystem {\r\n\tread\t/  # c\r\n}\r\n'
    assert fmt(text) == 'policy "x"\n\nfilesystem {\n    read /  # c\n}\n'


# -- comments --------------------------------------------------------------------------


def test_comments_are_kept_in_place() -> None:
    text = src('''
        # about the file

        # about the policy
        policy "x"   # the name
        filesystem {   # opening
          # before read
          read /    # trailing
          write /tmp



          # end of block
        }   # closing
        # before network
        network {
        # only a comment
        }
        # the end
    ''')
    assert fmt(text) == src('''
        # about the file

        # about the policy
        policy "x"  # the name

        filesystem {  # opening
            # before read
            read  /  # trailing
            write /tmp

            # end of block
        }  # closing

        # before network
        network {
            # only a comment
        }
        # the end
    ''')


def test_without_the_source_comments_before_a_closing_brace_move_below_the_block() -> None:
    text = "filesystem {\n    read /  # r\n    # end\n}  # close\n\nnetwork {\n}\n"
    policy, _ = parse(text)
    assert format_policy(policy, text) == text
    assert format_policy(policy) == "filesystem {\n    read /  # r\n}\n\n# end\n# close\n\nnetwork {\n}\n"


def test_braces_inside_words_and_strings_do_not_close_a_block() -> None:
    text = 'filesystem {\n    read ${HOME}/x "}" a{B}  # }\n    # end\n}\n'
    assert fmt(text) == text


def test_comment_text_is_kept_verbatim_but_trailing_space_dropped() -> None:
    text = '#!weird   \n#\npolicy "x"\n'
    assert fmt(text) == '#!weird\n#\npolicy "x"\n'


def test_comments_move_with_reordered_header_items() -> None:
    text = src('''
        # the include
        include "a.policy"
        # the name
        policy "x"
    ''')
    assert fmt(text) == src('''
        # the name
        policy "x"

        # the include
        include "a.policy"
    ''')


def test_blank_lines_between_rules_collapse_to_one() -> None:
    text = "filesystem {\n\n\n    read /\n\n\n\n    write /tmp\n\n}\n"
    assert fmt(text) == "filesystem {\n    read  /\n\n    write /tmp\n}\n"


def test_a_file_of_comments_only() -> None:
    assert fmt("# one\n\n\n# two\n") == "# one\n\n# two\n"


# -- quoting ---------------------------------------------------------------------------


def test_quotes_are_kept_where_written_and_escapes_are_canonical() -> None:
    text = src(r'''
        filesystem {
            deny "**/.env" ~/"x" "a b" "tab\there" "q\"uote" "back\\slash" ${HOME}/x
        }
        commands {
            allow "a|b" x|y "because", "#hash" "{}" ","
        }
        environment {
            set A= B=x C="" D "e" E="a b"
        }
        test "t \"1\"" {
            deny "rm -rf /"
        }
    ''')
    assert fmt(text) == src(r'''
        filesystem {
            deny "**/.env" ~/ "x" "a b" "tab\there" "q\"uote" "back\\slash" ${HOME}/x
        }

        commands {
            allow "a|b" x|y "because", "#hash" "{}" ","
        }

        environment {
            set A= B=x C="" D="e" E="a b"
        }

        test "t \"1\"" {
            deny "rm -rf /"
        }
    ''')


def test_bare_words_get_quotes_only_when_they_must() -> None:
    for text in ("", "a b", 'a"b', "a#b", "a{b", "a}b", "a,b", "because", "${1}", "a${X", "x\u00a0y", "a\nb"):
        assert needs_quotes(text), text
    for text in ("a", "~/.ssh", "**/.env", "a|b", "${HOME}/x", "$X", "a$", "locked", "policy", "include",
                 "enforced", "caf\u00e9", "a\\b"):
        assert not needs_quotes(text), text
    assert quote('a\\"\n\t\r') == '"a\\\\\\"\\n\\t\\r"'


def test_a_built_ast_with_words_that_need_quotes_formats_to_text_that_parses() -> None:
    policy = PolicyFile("p q", False, (), (
        Block("filesystem", (FsRuleNode("read", (Word("my dir/x"), Word("because"), Word("plain"))),)),
        Block("commands", (CommandRuleNode("deny", (PatternNode((Word("rm"), Word("-rf|-fr"))),
                                                    PatternNode((Word("a,b"),))), "why \"not\""),)),
        Block("environment", (EnvSetNode((EnvAssignment("G", "hi there", Word("G=hi there")),)),)),
        Block("test", (CaseNode("deny", Word("rm -rf /", True)),), label="t"),
    ), comments=(Comment(" no position"),))
    out = format_policy(policy)
    assert out == src('''
        policy "p q"

        filesystem {
            read "my dir/x" "because" plain
        }

        commands {
            deny rm -rf|-fr, "a,b"  because "why \\"not\\""
        }

        environment {
            set G="hi there"
        }

        test "t" {
            deny "rm -rf /"
        }

        # no position
    ''')
    again, diagnostics = parse(out)
    assert diagnostics == []
    assert again.blocks[0].rules[0].paths == (Word("my dir/x", True), Word("because", True), Word("plain"))
    assert again.blocks[1].rules[0] == policy.blocks[1].rules[0].__class__(
        "deny", (PatternNode((Word("rm"), Word("-rf|-fr"))), PatternNode((Word("a,b", True),))), 'why "not"')


def test_bare_word_pattern_matches_the_grammar() -> None:
    from stockade.policy_lang.parser import grammar

    assert grammar().get_terminal("WORD").pattern.value == bare_word().pattern


# -- every sample ----------------------------------------------------------------------


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_samples_round_trip_and_are_idempotent(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    policy, diagnostics = parse(text, str(path))
    assert policy is not None, diagnostics
    out = format_policy(policy, text)
    again, diagnostics = parse(out, str(path))
    assert diagnostics == []
    assert again == policy
    assert format_policy(again, out) == out
    assert [c.text.rstrip() for c in again.comments] == [c.text.rstrip() for c in policy.comments]
    assert [c.trailing for c in again.comments] == [c.trailing for c in policy.comments]
    assert not any(line != line.rstrip() for line in out.splitlines())


def test_shipped_policies_are_canonical() -> None:
    """`stockade fmt --check` holds for every policy the project ships."""
    from pathlib import Path

    from stockade.compiler.loader import builtin_default_text
    from stockade.policy_lang import parse
    from stockade.policy_lang.formatter import format_policy

    root = Path(__file__).resolve().parents[2]
    texts = {str(p): p.read_text() for p in (root / "examples").glob("*.policy")}
    texts["<builtin>"] = builtin_default_text()
    for name, text in texts.items():
        ast, diagnostics = parse(text, name)
        assert not diagnostics
        assert format_policy(ast, text) == text, name


def test_trailing_comments_of_consecutive_lines_share_a_column() -> None:
    from stockade.policy_lang import parse
    from stockade.policy_lang.formatter import format_policy

    text = "commands {\n  deny sudo # a\n  allow git status # b\n\n  deny rm # c\n}\n"
    ast, _ = parse(text, "t")
    assert format_policy(ast, text) == (
        "commands {\n    deny  sudo        # a\n    allow git status  # b\n\n    deny  rm  # c\n}\n")
