"""Parser misreadings and blow-ups found by a second hostile review (issue 13), beyond
``test_robust.py`` and ``test_bounds.py``.

* **A line that starts with a backslash.**  tree-sitter-bash reads a newline followed by
  ``\\`` as part of the next word: ``echo hi⏎\\rm -rf ~`` is one ``echo`` with the arguments
  ``hi``, ``⏎\\rm``, ``-rf``, ``~`` — bash ends the command at the newline and runs
  ``rm -rf ~`` (``\\rm`` is the usual way to skip an alias).  The parse now keeps such a line
  apart (a blank before the backslash, which bash ignores).
* **Here-document delimiters the grammar's scanner reads differently from bash.**  It keeps
  the quotes of ``E'x'`` (bash: ``Ex``), stores each character in one byte (``Ņ``, U+0145,
  becomes ``E``) and ends a body at a line that only starts with the delimiter.  Bash ends the
  body at the first line that is exactly the delimiter; where the two differ, the commands
  after the body are not those of the tree (``cat <<Ņ⏎Ņ⏎rm -rf ~⏎E`` hid ``rm -rf ~``): such a
  text is ``unparsable`` now.
* **Host names of many labels.**  Every suffix of a host was joined to look it up among the
  domain rules: a name of 60,000 labels took 30 s (a ``WebFetch`` event's URL, up to the
  16 MiB of an event, far longer).  Only suffixes as long as a rule's name are tried now.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.analyzer import analyze
from stockade.analyzer.parse import (
    bash_delimiter,
    hide_arithmetic_bases,
    hide_delimiter_prefixes,
    hide_test_brackets,
    parse,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

#: a line starting with a backslash after another command: bash runs it as a command
BACKSLASH_LINES = [
    "echo hi\n\\rm -rf ~", "ls\n\\rm -rf ~", "echo x\n\n\\sudo id", "echo x # note\n\\sudo id",
    "x=1\n\\rm -rf ~", "echo \"$x\"\n\\rm -rf ~", "echo $(ls) \n\\rm -rf ~", "ls >f\n\\rm -rf ~",
    "f() { ls\n\\rm -rf ~; }; f", "(ls\n\\rm -rf ~)", "echo a\r\n\\rm -rf ~", "true\n\\r\\m -rf ~",
    "bash -c 'echo hi\n\\rm -rf ~'", "echo {a,b}\n\\rm -rf ~",
]


@pytest.mark.parametrize("text", BACKSLASH_LINES)
def test_a_line_starting_with_a_backslash_is_its_own_command(ir, text: str) -> None:
    verdict = analyze(text, ir)
    assert verdict.decision == "deny", verdict
    assert any(r.code in ("A401", "A403") for r in verdict.reasons), verdict


def test_the_blank_before_the_backslash_maps_back_to_it(ir) -> None:
    text = "echo hi\n\\rm -rf ~"
    [reason] = [r for r in analyze(text, ir).reasons if r.code == "A403"]
    start, end = reason.span
    assert text[start:end].startswith("\\rm") or text[start:end] == "~"
    source = parse(text)
    assert [child.type for child in source.tree.root_node.named_children] == ["command", "command"]


@pytest.mark.parametrize("text", ["echo 'a\n\\rm -rf ~'", "echo \"a\n\\rm -rf ~\"", "cat <<'E'\nx\n\\rm -rf ~\nE",
                                  "cat <<E\nx\n\\rm -rf ~\nE", "echo a # c\n# \\rm -rf ~", "echo hi\n \\ls"])
def test_backslashes_in_strings_bodies_and_comments_stay_text(ir, text: str) -> None:
    assert analyze(text, ir).decision == "allow"


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["echo hi", "ls -l", "x=1", "cat f", "echo \"$HOME\"", "true # c", "printf %s a"]),
       st.sampled_from(["\n", "\n\n", " \n", "\r\n"]),
       st.sampled_from(["\\sudo id", "\\rm -rf ~", "\\s\\udo -i", "\\rm -rf /"]))
def test_whatever_comes_before_a_backslash_line_it_is_judged(ir, before: str, newline: str, after: str) -> None:
    assert analyze(before + newline + after, ir).decision == "deny"


#: here-documents whose body bash ends elsewhere than the grammar: the commands after it differ
MISREAD_HEREDOCS = [
    "cat <<\u0145\n\u0145\nrm -rf ~\nE\n",          # U+0145 stored as `E`
    "cat <<'\u0145'\n\u0145\nrm -rf ~\nE\n",
    "cat <<-\u0145\n\t\u0145\nrm -rf ~\nE\n",
    "cat <<\u0145 >/tmp/x\n\u0145\nrm -rf ~\nE\n",
    "cat <<E'x'\nEx\nrm -rf ~\nE'x'\n",             # quotes kept by the scanner
    "cat <<E\"\"\nE\nrm -rf ~\nE\"\"\n",
    "cat <<E\"x\"y\nExy\nrm -rf ~\nE\"x\"y\n",
    "cat <<E\u0100\nx\nE\nrm -rf ~\n",                # U+0100 stored as NUL: the body ends early
    "bash -c 'cat <<E\"\"\nE\nrm -rf ~\nE\"\"\n'",
]


@pytest.mark.parametrize("text", MISREAD_HEREDOCS)
def test_heredoc_bodies_bash_ends_elsewhere_are_unparsable(ir, text: str) -> None:
    verdict = analyze(text, ir)
    assert verdict.decision == "deny", verdict
    assert any(r.code == "A400" and "here-document" in r.message for r in verdict.reasons), verdict


@pytest.mark.parametrize(("text", "decision"), [
    # a body line that starts with the delimiter without being it (the grammar's scanner would
    # end the body there) is body text, as bash reads it: the parser is given another first byte
    ("cat <<E\nE \nrm -rf ~\nE\n", "allow"), ("cat <<END\nENDPOINT=1\nEND\n", "allow"),
    ("cat <<EOF\nEOF is near\nEOF", "allow"), ("cat > notes.md <<'END'\nENDPOINT list:\nEND\n", "allow"),
    ("cat <<-EOF > a.txt\n\tEOF_VAR\n\tEOF\necho ok", "allow"), ("x=$(cat <<EOF\nEOFISH\nEOF\n); echo $x", "allow"),
    # ... and the commands after the real end, or a body fed to a shell, are judged
    ("cat <<E\nE \nE\nrm -rf ~\n", "deny"), ("bash <<EOF\nEOFX=1; rm -rf ~\nEOF", "deny"),
    ("bash <<'EOF'\nEOF_MARK=1\nrm -rf ~\nEOF", "deny"), ("cat <<EOF | sh\nEOFOO=1\nrm -rf ~\nEOF", "deny"),
    ("cat <<EOF\nEOF2 $(rm -rf ~)\nEOF", "deny"), ("echo '<<rm'\nrm -rf ~", "deny"),
    ("# cat <<E\nE=/etc; rm -rf \"$E\"", "deny"),
])
def test_body_lines_starting_with_the_delimiter_are_the_body(ir, text: str, decision: str) -> None:
    assert analyze(text, ir).decision == decision


def test_hidden_arithmetic_bases_and_test_brackets_keep_offsets() -> None:
    data = b"echo $(( 10#$d + 1 )); x=10#$y; [ \\( -f a \\) ]"
    hidden = hide_test_brackets(hide_arithmetic_bases(data))
    assert len(hidden) == len(data)
    assert hidden.count(b"10#") == 1 and b"x=10#$y" in hidden  # (only inside `((…))`)
    assert hidden.endswith(b"\x01 \\( -f a \\) ]")


def test_hidden_delimiter_prefixes_keep_offsets() -> None:
    data = b"cat <<-E\n\tEx\n\tE\nEcho\n"
    hidden, spots = hide_delimiter_prefixes(data)
    assert spots == [10] and len(hidden) == len(data) and hidden[10] != data[10]
    assert hide_delimiter_prefixes(b"cat <<E'x'\nEx\nE\n") == (b"cat <<E'x'\nEx\nE\n", [])


@pytest.mark.parametrize("text", [
    "cat <<EOF\nhello\nEOF", "cat <<'EOF'\n$x\nEOF\nls", "cat <<\"EOF\"\nx\nEOF", "cat <<\\EOF\nx\nEOF",
    "cat <<-EOF\n\tx\n\tEOF\nls", "cat > /tmp/f <<'EOF'\na\nEOF", "x=$(cat <<'EOF'\na\nEOF\n)", "x=$(cat <<E\na\nE)",
    "cat <<'E F'\nx\nE F", "cat <<$E\nx\n$E", "cat <<E | wc -l\nx\nE",
    "cat <<EOF\r\nx\r\nEOF\r\n", "cat <<\u00e9t\u00e9\nx\n\u00e9t\u00e9\n".replace("\u00e9", "e"),
])
def test_ordinary_heredocs_are_read_as_before(ir, text: str) -> None:
    verdict = analyze(text, ir)
    assert verdict.decision == "allow", verdict


@pytest.mark.parametrize(("word", "delimiter"), [
    (b"EOF", b"EOF"), (b"'EOF'", b"EOF"), (b"\"EOF\"", b"EOF"), (b"\\EOF", b"EOF"), (b"E'x'", b"Ex"),
    (b"'E'x", b"Ex"), (b"E\"\"", b"E"), (b"\"a\\\"b\"", b"a\"b"), (b"\"a\\xb\"", b"a\\xb"), (b"E;x", b"E"),
    (b"E x", b"E"), (b"E\r", b"E\r"), (b"$E", b"$E"), (b"'a b'c", b"a bc"),
    (b"$(x)", None), (b"\"$(x)\"", None), (b"${x}", None), (b"`x`", None), (b"$'E'", None), (b"'E", None),
])
def test_bash_delimiter_is_the_word_without_quotes(word: bytes, delimiter: bytes | None) -> None:
    assert bash_delimiter(b"cat <<" + word + b"\n", 6) == delimiter


_HOST_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
sys.path.insert(0, TESTS)
from conftest import fixture_ir
from stockade.analyzer import analyze
ir = fixture_ir("/w", "/home/u", "/t")
decision = ir.network_access("a." * 1_000_000 + "github.com", 443)
print(decision.allowed, analyze("curl https://" + "a." * 60000 + "com/", ir).decision)
"""


def test_a_host_of_a_million_labels_is_decided_in_linear_time() -> None:
    """Run in a child limited to 60 s of CPU: the quadratic lookup took hours for it."""
    code = _HOST_CHILD.replace("TESTS", repr(str(HERE)))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["False", "deny"]


def test_domain_rules_still_match_subdomains_only(ir) -> None:
    import dataclasses

    from stockade.compiler.ir import HostPattern, NetRule, Network, Origin

    rules = (NetRule("allow", HostPattern("domain", "example.com"), origin=Origin("t", 1, 1)),
             NetRule("deny", HostPattern("domain", "a.b.c.example.com"), origin=Origin("t", 2, 1)))
    custom = dataclasses.replace(ir, network=Network("deny", rules))
    assert custom.network_access("a.b.example.com", 443).allowed
    assert custom.network_access("x." * 5000 + "example.com", 443).allowed
    assert not custom.network_access("x." * 5000 + "a.b.c.example.com", 443).allowed
    assert not custom.network_access("example.com", 443).allowed
    assert not custom.network_access("example.com.evil.org", 443).allowed


#: ANSI-C strings as bash makes them: `\xHH`/`\NNN` are bytes (bytes of UTF-8 make the
#: character), and the string ends at a NUL it makes (`$'/\0tmp'` is `/`)
@pytest.mark.parametrize(("text", "code", "path"), [
    ("rm -rf $'/\\0tmp/x'", "A403", "/"), ("rm -rf $'/\\x00tmp'", "A403", "/"), ("rm -rf $'\\c@'/", "A403", "/"),
    ("x=$'/\\0a'; rm -rf \"$x\"", "A403", "/"), ("bash -c $'rm -rf /\\0tmp'", "A403", "/"),
    ("cat $'/etc/shadow\\0.txt'", "A402", "/etc/shadow"), ("cat $'/etc/sh\\0'adow", "A402", "/etc/shadow"),
    ("cat $'/home/u/geheim-\\xc3\\xa4'", "A402", "/home/u/geheim-\u00e4"),
    ("cat $'/home/u/geheim-\\303\\244'", "A402", "/home/u/geheim-\u00e4"),
    ("cat /home/u/geheim-$'\\u00e4'", "A402", "/home/u/geheim-\u00e4"),
])
def test_ansi_c_strings_are_the_bytes_bash_makes(ir, text: str, code: str, path: str) -> None:
    import dataclasses

    from stockade.compiler.ir import FsRule, Origin

    custom = dataclasses.replace(ir, filesystem=(*ir.filesystem, FsRule("deny", "/home/u/geheim-\u00e4",
                                                                          origin=Origin("t", 1, 1))))
    custom = dataclasses.replace(custom, context=dataclasses.replace(ir.context, home="/home/u"))
    verdict = analyze(text, custom)
    assert verdict.decision == "deny", verdict
    assert any(r.code == code and f"`{path}`" in r.message for r in verdict.reasons), verdict


def test_ansi_c_bytes_that_are_not_utf8_stay_bytes() -> None:
    from stockade.analyzer.words import decode_ansi_c

    assert decode_ansi_c("a\\xffb") == "a\udcffb"
    assert decode_ansi_c("\\xc3\\xa1\\x41\\101") == "\u00e1AA"
    assert decode_ansi_c("a{\\xf3\\xb0\\x80\\x80") == "a{\U000f0000"
    assert decode_ansi_c("\\ud800\\xff") == "\ud800\udcff"   # (a lone surrogate: refused when parsed)


_DELIMITER_CHARS = st.sampled_from(["E", "O", "F", "x", "_", "1", "\u0145", "\u00e9", "\u0100", "\u65e5", "-"])


@st.composite
def _heredoc_then_rm(draw: st.DrawFn) -> str:
    """``cat <<WORD``, body lines none of which is the delimiter bash makes of WORD, the
    delimiter, then ``rm -rf ~`` — which bash runs, whatever the lines look like."""
    delimiter = "".join(draw(st.lists(_DELIMITER_CHARS, min_size=1, max_size=4)))
    form = draw(st.sampled_from(["{}", "'{}'", '"{}"', "\\{}", "{}''", "{}\"\"", "'{}'''", "-{}"]))
    word = form.format(delimiter) if not form.startswith("-") else "-" + delimiter
    line = st.one_of(st.just(delimiter + " "), st.just(delimiter + "x"), st.just(delimiter[:-1]),
                     st.just(delimiter.encode("ascii", "replace").decode()), st.just("x" + delimiter),
                     st.just("\t" + delimiter), st.text(st.sampled_from("Ex'\"\\$ \u0145"), max_size=5))
    body = [text for text in draw(st.lists(line, max_size=4)) if text.lstrip("\t" if form == "-{}" else "") != delimiter]
    end = ("\t" if form == "-{}" and draw(st.booleans()) else "") + delimiter
    return "cat <<" + word + "\n" + "".join(text + "\n" for text in body) + end + "\nrm -rf ~\n"


@settings(max_examples=300, deadline=None)
@given(_heredoc_then_rm())
def test_the_command_after_a_heredoc_is_judged_whatever_its_delimiter(ir, text: str) -> None:
    assert analyze(text, ir).decision == "deny", text


@pytest.mark.parametrize("text", [
    "cat <<E\n`rm -rf ~`\nE", "cat <<E\nit's `rm -rf ~`\nE", "cat <<E\na `rm -rf ~` b $x `ls`\nE",
    "cat <<-E\n\t`sudo id`\n\tE", "x=$(cat <<E\n`rm -rf ~`\nE\n)", "cat <<E\n`rm -rf ~\nE",
])
def test_backticks_in_an_unquoted_heredoc_run(ir, text: str) -> None:
    """The grammar keeps `` `…` `` in a here-document's body as text; bash runs it."""
    assert analyze(text, ir).decision == "deny", text


@pytest.mark.parametrize("text", ["cat <<'E'\n`rm -rf ~`\nE", "cat <<E\n\\`rm -rf ~\\`\nE", "cat <<E\nplain `date`\nE"])
def test_backticks_quoted_or_escaped_in_a_heredoc_do_not(ir, text: str) -> None:
    assert analyze(text, ir).decision == "allow", text


@pytest.mark.parametrize("text", ["echo \\\r\nrm -rf ~", "echo a\\\r\nrm -rf ~\r\n", "# x\\\r\nrm -rf ~",
                                  "bash -c $'echo \\\\\\r\\nrm -rf ~'", "echo \\\n\\\r\nrm -rf ~",
                                  "cat <<E\nx\\\r\nE\nrm -rf ~"])
def test_a_backslash_before_cr_lf_is_no_line_join(ir, text: str) -> None:
    """Bash escapes the CR and ends the command at the LF; the grammar joined the lines."""
    assert analyze(text, ir).decision == "deny", text


@pytest.mark.parametrize("text", ["ls \\\r\n-l", "echo '\\\r\nrm -rf ~'", "echo \"a\\\r\nb\""])
def test_a_backslash_before_cr_lf_in_quotes_or_before_options_is_harmless(ir, text: str) -> None:
    assert analyze(text, ir).decision == "allow", text


@pytest.mark.parametrize(("text", "decision"), [
    ("cat <<E\n\\\\$(rm -rf ~)\nE", "deny"),            # `\\` is one backslash, then bash runs $(…)
    ("cat <<E\n \\\\$(rm -rf ~)\nE", "deny"),
    ("cat <<E\n\\\\${x:-$(rm -rf ~)}\nE", "deny"),
    ("cat <<E\n\\\\$x $(sudo id)\nE", "deny"),
    ("cat <<E\n\\$(rm -rf ~)\nE", "allow"),             # an escaped `$`: text
    ("cat <<E\n\\\\\\$(rm -rf ~)\nE", "allow"),
    ("cat <<E | sh\n\\$(rm -rf ~)\nE", "deny"),         # (the text reaches a shell)
    ("cat <<E\nx \\$(rm -rf ~)\nE", "allow"),
])
def test_expansions_at_a_heredocs_start_are_those_bash_performs(ir, text: str, decision: str) -> None:
    """The grammar reads the backslashes at the start of a body with the wrong parity."""
    assert analyze(text, ir).decision == decision, text


@pytest.mark.parametrize("text", ["$\nrm -rf ~", "x=$\nrm -rf ~", "ls <&$\nrm -rf ~", "echo $ \nrm -rf ~",
                                  "a=$\t\nsudo id", "echo $$$\nrm -rf ~", "bash -c 'x=$\nrm -rf ~'",
                                  "x=$\r\nrm -rf ~", "$\r\nrm -rf ~", "x=$\f\nrm -rf ~", "x=$\v\nrm -rf ~"])
def test_a_dollar_before_a_blank_or_newline_is_itself(ir, text: str) -> None:
    """The grammar read ``$⏎rm`` as the expansion ``$rm``: the command on the next line was hidden."""
    assert analyze(text, ir).decision == "deny", text


@pytest.mark.parametrize("text", ["mkdir -p /tmp/build.$$ && cd /tmp/build.$$ && ls", "echo $ x", "echo cost: 5$",
                                  "echo $$ $# $?", "[[ a =~ b$ ]]"])
def test_bare_dollars_and_special_parameters_read_as_before(ir, text: str) -> None:
    assert analyze(text, ir).decision == "allow", text


@pytest.mark.parametrize("text", ["cat <<E''\n$E\nE\nrm -rf ~\n", "cat <<E\n$E\nE\nrm -rf ~\n"])
def test_a_heredoc_end_that_swallows_the_lines_after_it_is_caught(ir, text: str) -> None:
    assert analyze(text, ir).decision == "deny", text
