"""The fast path for plain and quoted commands is exact: verdicts with and without it are identical.

Differential tests: every corpus command (and every case of test_corpus.MORE), generated
simple commands and lists (plain words, quoted words, expansions, assignments: the path must
take the plain and quoted ones and leave the rest to tree-sitter), and generated near-simple text
(which the path must refuse or get right) are analyzed with ``fast_path=True`` and
``fast_path=False``; decisions, reasons, messages, spans and rules must be equal.  Also
checks that the path really takes the commands it claims.
"""

from __future__ import annotations

from conftest import load_corpus
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_corpus import MORE

from stockade.analyzer import analyze
from stockade.analyzer.fast import lex_plain, lex_quoted

CORPUS = [c["command"] for c in load_corpus("adversarial.jsonl") + load_corpus("benign.jsonl")]
EXTRA = [command for _, command in MORE]

_PROGRAMS = ["ls", "cat", "rm", "git", "sudo", "bash", "sh", "env", "find", "curl", "python3", "tar", "cp", "mv",
             "echo", "xargs", "sed", "awk", "ssh", "chmod", "timeout", "nice", "eval", "cd", "source", "npm", "pip",
             "crontab", "ln", "dd", "tee", "touch", "mkdir", "kill", "unknown-tool", "./x.sh", "/usr/bin/rm", "~/bin/t",
             "if", "then", "do", "done", "export", "declare", "local", "unset", "time", "in", "esac", "test", "exec"]
_ARGS = ["-rf", "-r", "-f", "-la", "--force", "push", "status", "-c", "-e", "-exec", "-delete", "~", "~/.ssh",
         "~/.ssh/id_rsa", "~root", "~+", "/", "/etc/shadow", "/tmp/x", ".", "..", "../../etc/passwd", "./build", "*.md",
         "src/*", ".env", "a=b", "--x=~/y", "https://evil.example/x", "github.com", "localhost:8080", "-o",
         "ProxyCommand=sh", "origin", "main", "-i", "-u", "root", "9", "--", "-", "''", '""', "@.env", "%s", "x,y",
         "'rm -rf ~'", "'cat /etc/shadow'", '"ls -la"', "'a b'", "\"$HOME\"", "'$(id)'", "'{a,b}'", "r''m", "'~'/x",
         "~'/.ssh'", '"~"', "'*'", "--to-command='rm -rf ~'", "core.pager='sh -c id'", "'1e id'", "'BEGIN{system(\"id\")}'"]
_SEPS = [" ", "  ", "\t", " \t "]
#: ``$NAME``/``${NAME}`` words, quoted and not, set and unset, split or not by IFS.
_EXPANSIONS = ["$x", "${x}", "$HOME", "${HOME}/.ssh", "$HOME/x", "$PWD", "$IFS", "$c", "$y", "$unset", "a$x",
               "$x.txt", "$x'a'", "$x\"\"", "~$x", "$x~", "$x$y", "${x}y", "$_", "$x_", "$1", "$@", "$?", "$x[1]",
               "${x:-y}", "${#x}", "\"$x\"", "\"${x}\"", "\"$HOME\"", "\"$x/y\"", "\"a $x b\"", "\" $x \"",
               "\"$x$y\"", "\"${x}y\"", "\"$unset\"", "\"$x[1]\"", "\"$x:y\"", "\"$x-\"", "\"$x{a,b}\"", "\"$\"",
               "\"$1\"", "\"${x}[0]\"", "\"~$x\"", "'$x'", "$e", "\"$e\"", "$e$e", "$e\"\"", "\"$c\"", "$c",
               "--o=$x", "--o=$HOME/y", "--o=\"$x\"/y", "a=${x}/y", "$x=$y", "$x=$HOME/y", "a$x=$y/z", "=$x/y",
               "a==$x", "$x=b/c", "$x:$y", "\"$x\"=$y", "x=\"$y\"$x"]
_NAMES = ["x", "y", "c", "e", "_", "__", "IFS", "PAGER", "GIT_SSH_COMMAND", "PROMPT_COMMAND", "HOME", "PWD", "LD_PRELOAD",
          "BASH_ENV", "_a1"]
_VALUES = ["rm", "'sh -c id'", "\"rm -rf ~\"", "\"$x\"", "$x", "$HOME/y", "~/a", "~", "~root", "''", "\"\"", "a,b",
           ",", "rm,-rf,~", "'a b'", "a=b", "=x", "", "a@b", "a%b", "-1", "*", "$e", "\"$c\"", "x$y", "'~'", "a:~/b"]
_assignments = st.lists(st.builds(lambda name, value, sep: name + "=" + value + sep, st.sampled_from(_NAMES),
                                  st.sampled_from(_VALUES), st.sampled_from(_SEPS)), max_size=3).map("".join)

simple_commands = st.builds(
    lambda lead, assign, prog, args, seps, trail: (
        lead + assign + prog + "".join(s + a for s, a in zip(seps, args, strict=False)) + trail).strip() or "x=1",
    st.sampled_from(["", " ", "\t"]), st.one_of(st.just(""), _assignments),
    st.one_of(st.sampled_from(_PROGRAMS), st.sampled_from(_EXPANSIONS), st.just("")),
    st.lists(st.one_of(st.sampled_from(_ARGS), st.sampled_from(_EXPANSIONS)), max_size=6),
    st.lists(st.sampled_from(_SEPS), min_size=6, max_size=6), st.sampled_from(["", " ", "  "]))

_OPS = ["&&", "||", ";", "|", " && ", " || ", "; ", " | ", " ;", "&", "|&", ";;", " ", ""]
simple_lists = st.builds(
    lambda first, rest: first + "".join(op + command for op, command in rest),
    simple_commands, st.lists(st.tuples(st.sampled_from(_OPS), simple_commands), min_size=1, max_size=4))

_CHARS = list("abrm -~/.=*:@%+,_'\"\t") + ["$", "$x", "${x}", "x="] + list(";&|<>()$`\\{}[]!#?\n\r^") + ["é", "\u3000", "日"]
near_simple = st.lists(st.sampled_from(_CHARS), max_size=40).map("".join)


def _same(ir, command: str) -> None:
    fast = analyze(command, ir)
    full = analyze(command, ir, fast_path=False)
    assert fast == full, f"{command!r}\nfast: {fast}\nfull: {full}"


def test_whole_corpus_same_verdicts(ir) -> None:
    for command in CORPUS + EXTRA:
        _same(ir, command)


def test_fast_path_is_taken_for_plain_commands() -> None:
    taken = [c for c in CORPUS if lex_plain(c) is not None]
    assert "sudo rm -rf /var/lib/docker" in taken and "git status && git diff --stat" in taken
    assert "ls -la | grep -i readme" in taken
    assert "bash -c 'rm -rf ~'" not in taken and "r\\\nm -rf ~" not in taken
    assert len(taken) >= 15
    quoted = [c for c in CORPUS if lex_quoted(c) is not None]
    assert "bash -c 'rm -rf ~'" in quoted and "r\\\nm -rf ~" not in quoted  # a backslash: tree-sitter
    assert len(quoted) >= 10


def test_quoted_words_and_spans() -> None:
    statements = lex_quoted(" r''m  -rf\t'a b'\"c\"d ")
    assert statements == [[[[([("r", "lit"), ("", "q"), ("m", "lit")], 1, 5), ([("-rf", "lit")], 7, 10),
                              ([("a b", "q"), ("c", "q"), ("d", "lit")], 11, 20)]]]]
    assert lex_quoted("grep 'a|b$' f && echo \"x\" | sh") == [
        [[[([("grep", "lit")], 0, 4), ([("a|b$", "q")], 5, 11), ([("f", "lit")], 12, 13)]],
         [[([("echo", "lit")], 17, 21), ([("x", "q")], 22, 25)], [([("sh", "lit")], 28, 30)]]]]
    assert lex_quoted('rm -rf "$OUT/root" "a$x$y"/* "$x-"') == [[[[([("rm", "lit")], 0, 2), ([("-rf", "lit")], 3, 6),
                                                              ([("OUT", "v"), ("/root", "q")], 7, 18),
                                                              ([("a", "q"), ("x", "v"), ("y", "v"), ("/*", "lit")],
                                                               19, 28), ([("x", "v"), ("-", "q")], 29, 34)]]]]
    for text in ("echo \"$x[1]\"", "echo \" $x\"", "echo \"$x $y\"", "\"$x\" a", "echo \"${x}\"", "echo \"$1\"",
                 "echo \"$x=$y\"", "echo $x 'a'", "x='a' ls", "a='b'", "'if' x", "if'x' y", "while'a' b",
                 "echo 'a' > f", "echo 'a' # c", "echo \"a\\b\"", "echo \"!x\"", "echo \"`id`\"", "echo 'a';",
                 "echo 'a' &", "a@'b' c", "echo 'é'", "echo 'a' ==", "echo 'a'\nls", "(echo 'a')", "echo 'a"):
        assert lex_quoted(text) is None, text


def test_plain_words_and_spans() -> None:
    assert lex_plain(" rm  -rf\t./a ", 10) == [[[(["rm", "-rf", "./a"], [(11, 13), (15, 18), (19, 22)], 1, 12, False)]]]
    assert lex_plain("cat ~/x", 0, (3, 4)) == [[[(["cat", "~/x"], [(3, 4), (3, 4)], 0, 7, True)]]]
    for text in ("a= ls", "a==b ls", "if x", "ls;", "ls $(x)", "echo $x", "echo \"$x\"", "echo ${x:-y}", "x=1 ls",
                 "a=1", "r''m -rf ~", "echo 'a b'", "echo \"a\"", "a=1 export B", "ls\n", "ls\r", "echo 日", "ls # c",
                 "", "   ", "echo \"a\\b\"", "x {a,b}", "[ -f x ]", "echo ?", "echo !x", "export A", "a@", "a@b x",
                 "a% x", "g++ -o x", "x ==", "echo a =~ b", "x == y", "ls > f"):
        assert lex_plain(text) is None, text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(simple_commands)
@example("rm -rf ~")
@example("cat ~root/x ~+/y ~nobody")
@example("ls ${HOME}/.ssh$x~")  # tree-sitter-bash splits the word after `$`; the tree walk rejoins it
@example("ls $x~$x~")
def test_generated_simple_commands_same_verdicts(ir, command: str) -> None:
    _same(ir, command)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(near_simple)
@example("if'-* \t-|'thenmcd.:")
@example("while'a' b")
@example("a@")
@example("echo a ==")
def test_generated_near_simple_text_same_verdicts(ir, command: str) -> None:
    _same(ir, command)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(simple_lists)
@example("cd /tmp && ls ~+ | sh")
@example("echo 'rm -rf ~' | sh; ls")
@example("x=rm; $x -rf ~")
@example("IFS=,; c=rm,-rf,.git; $c")
@example("x=a y=$x; echo $y && PAGER='sh -c id' git -p log")
@example("PROMPT_COMMAND=id; e=; $e && HOME=/ cd ~")
@example("x=a; ls ${HOME}/.ssh$x~ | cat ${x}a$x~$x~")
def test_generated_lists_same_verdicts(ir, command: str) -> None:
    _same(ir, command)


def test_plain_list_structure() -> None:
    statements = lex_plain("a && b | c x ; d")
    assert statements is not None
    assert [[[command[0] for command in pipeline] for pipeline in statement] for statement in statements] == \
        [[[["a"]], [["b"], ["c", "x"]]], [[["d"]]]]
    for text in ("ls;", "ls &", "a | | b", "a & b", "x | if y", "a ;; b", "&& a", "a |& b", "a | b=1", "b=1 | c",
                 "a && b= c", "a\nb", "a | 'x' && (b)", "a&&b", "a;b", "x=1; ls", "echo 'a' | sh"):
        assert lex_plain(text) is None, text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(simple_commands, simple_lists),
       st.sampled_from(["{}\n", "{}\n\n", "{} |\n", "{} &&\n", "sh <<< '{}'", "bash <<'EOF'\n{}\nEOF",
                        "bash <<EOF\n{}\nEOF", "bash -c '{}\n'", "eval '{}\n'",
                        "export PAGER x=1 LD_PRELOAD; c=a,b; IFS=,; e=; y=' a  b '; eval '{}'",
                        "f() { eval '{}'; }; f 1 2"]))
@example("rm -rf ~", "sh <<< '{}'")
@example("ls | sh", "bash <<'EOF'\n{}\nEOF")
def test_code_ending_in_a_newline_same_verdicts(ir, command: str, frame: str) -> None:
    """Nested code fed by here-strings and here-documents ends in a newline, which the fast
    path drops; a second newline, or one after an operator, sends the text to tree-sitter."""
    _same(ir, frame.replace("{}", command))
