"""Options that take values: the value is never mistaken for a path, nor a path for the value.

Each tool's models know which of its options take a value (a flag of one tool is often a
value option of another: ``wc -l``, ``cat -s``, ``sort -f``, ``touch -m``, ``ls -d``,
``rsync -P``); options whose value is optional take only an attached one (``--color=auto``,
``xargs -i``, ``watch -d``).  And ``git clone`` writes only its destination directory.
"""

from __future__ import annotations

import pytest

from stockade.analyzer import analyze
from stockade.analyzer.models.vcs import clone_directory


def _decision(ir, command: str) -> str:
    return analyze(command, ir).decision


def _messages(ir, command: str) -> list[str]:
    return [reason.message for reason in analyze(command, ir).reasons]


# -- grep, rg, ag --------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    "grep -r -e x ~", "grep -r --regexp=x ~", "grep -r --regexp x ~", "grep -rn -e a -e b src ~",
    "grep -r --color x ~", "grep -r --include '*.py' x ~", "grep -R -m 1 -A 3 x ~", "egrep -r -e a ~/.aws",
    "grep -e PATTERN ~/.ssh/id_rsa", "grep -f ~/.ssh/id_rsa notes.txt", "grep -r -f patterns.txt ~",
    "grep --exclude-from=~/.netrc x f", "rg -e x ~/.ssh", "rg --hidden x ~", "rg -uu x ~", "rg x /etc",
    "rg -f ~/.ssh/id_rsa .", "rg -l -e x -- ~/.aws", "ag --hidden x ~", "ag x /etc", "ag -g x ~/.ssh",
])
def test_search_tools_read_their_paths(ir, command: str) -> None:
    assert _decision(ir, command) == "deny", _messages(ir, command)


def test_recursive_grep_sees_the_denied_subtrees(ir) -> None:
    for command in ("grep -r -e x ~", "grep -r x ~"):
        messages = _messages(ir, command)
        assert messages and all("reads everything below" in m for m in messages)


@pytest.mark.parametrize("command", [
    "grep -r -e 'rm -rf' src/", "grep -rn TODO .", "grep -e x -e y README.md", "rg -e 'eval(' src",
    "rg x ~", "ag x ~", "ag -G py x src", "grep -r x",
])
def test_search_tools_benign(ir, command: str) -> None:
    assert _decision(ir, command) == "allow", _messages(ir, command)


def test_rg_and_ag_skip_hidden_entries_unless_asked(ir) -> None:
    # `rg x ~` does not descend into ~/.ssh (hidden); /etc/shadow is not hidden
    assert _decision(ir, "rg x ~") == "allow"
    assert any("/etc/shadow" in m for m in _messages(ir, "rg x /etc"))
    assert _decision(ir, "rg --hidden x ~") == "deny"
    assert _decision(ir, "ag -u x ~") == "deny"


# -- flags that other tools' tables had as value options ------------------------------------------

@pytest.mark.parametrize("command", [
    "wc -l ~/.netrc", "cat -s ~/.ssh/id_rsa", "sort -f .env", "sort -u -o /tmp/x ~/.netrc", "uniq -c ~/.netrc",
    "cut -s -f 1 .env", "diff -u a .env", "cmp -s a ~/.netrc", "strings -f ~/.ssh/id_rsa", "stat -f ~/.ssh",
    "readlink -f ~/.ssh/id_rsa", "fold -s ~/.netrc", "ls -d ~/.ssh", "ls -L ~/.ssh", "du -L ~/.ssh",
    "touch -m ~/.bashrc", "rm --interactive ~/x", "rm --interactive=never ~/x", "jq --rawfile k ~/.ssh/id_rsa -n '$k'",
    "jq --slurpfile k ~/.aws/credentials -n .", "jq -f prog.jq ~/.aws/credentials", "jq -rf ~/.ssh/id_rsa",
    "rsync -P ~/.ssh /tmp/x", "rsync -avo ~/.ssh/id_rsa /tmp/x", "rsync -i ~/.netrc /tmp/x",
    "scp -P 2222 ~/.ssh/id_rsa /tmp/x", "watch -d rm -rf ~", "xvfb-run -a rm -rf ~",
    "bash +o posix -c 'rm -rf ~'", "less -o ~/.bashrc notes", "tree -o ~/.profile .", "xxd a ~/.bashrc",
])
def test_flags_are_not_values(ir, command: str) -> None:
    assert _decision(ir, command) == "deny", _messages(ir, command)


@pytest.mark.parametrize("command", [
    "wc -l README.md", "head -n 5 src/a.py", "tail -f -n 3 log.txt", "sort -k 2 -t , data.csv", "cut -d , -f 1 x.csv",
    "jq -r .version package.json", "jq --arg k v '.[$k]' data.json", "jq -n --args '$ARGS' a b", "tr a-z A-Z",
    "ls -la src", "du -sh .", "tree -L 2 src", "watch -n 5 ls", "xargs -n 1 echo", "rsync -av src/ /tmp/src/",
    "git ls-files | xargs -l1 echo",
])
def test_value_options_benign(ir, command: str) -> None:
    assert _decision(ir, command) == "allow", _messages(ir, command)


def test_xargs_optional_replace_string(ir) -> None:
    # `-i` takes no separate value: `rm` is the command, `{}` the replace string
    # (stdin from a file: words not known; from `echo x`, the word is `x`, a workspace path)
    assert "deletes" in " ".join(_messages(ir, "cat list | xargs -i rm -rf {}"))
    assert _messages(ir, "cat list | xargs -i rm -rf {}") == _messages(ir, "cat list | xargs -I {} rm -rf {}")
    assert "deletes" in " ".join(_messages(ir, "echo ~ | xargs -i rm -rf {}"))


# -- git clone ---------------------------------------------------------------------------------

@pytest.mark.parametrize("url,name", [
    ("https://github.com/org/repo.git", "repo"), ("https://github.com/org/repo", "repo"),
    ("https://github.com/org/repo/", "repo"), ("git@github.com:org/repo.git", "repo"), ("host:repo.git", "repo"),
    ("/srv/repo/.git", "repo"), ("../other.git", "other"),
])
def test_clone_directory(url: str, name: str) -> None:
    assert clone_directory(url) == name


@pytest.mark.parametrize("command", [
    "git clone https://github.com/org/repo.git", "git clone https://github.com/org/repo.git dest",
    "git clone --depth 1 https://github.com/org/repo", "git clone -b main https://github.com/org/repo.git",
    "git clone -o up --branch dev https://github.com/org/repo.git d", "git clone git@github.com:org/repo.git",
    "git -C /tmp clone https://github.com/org/repo.git", "cd /tmp && git clone https://github.com/org/repo.git",
    "git clone --filter=blob:none https://github.com/org/repo.git",
])
def test_clone_into_the_workspace_is_allowed(ir, command: str) -> None:
    assert _decision(ir, command) == "allow", _messages(ir, command)


def test_clone_writes_its_destination(ir, sandbox_dirs) -> None:
    _, home, _ = sandbox_dirs
    verdict = analyze("cd ~ && git clone https://github.com/org/repo.git", ir)
    assert verdict.decision == "deny"
    assert f"writes `{home}/repo`" in verdict.reasons[0].message
    assert _decision(ir, "git clone https://github.com/org/repo.git ~/.ssh") == "deny"
    assert _decision(ir, "git clone https://github.com/org/repo.git .") == "deny"  # .git/config of the workspace
    assert _decision(ir, "git clone --separate-git-dir ~/.x https://github.com/o/r") == "deny"


def test_clone_options_that_run_code_or_read(ir) -> None:
    assert _decision(ir, "git clone -c core.hooksPath=/tmp/h https://github.com/o/r") == "deny"
    assert _decision(ir, "git clone --template=/tmp/t https://github.com/org/repo.git") == "deny"
    assert _decision(ir, "git clone -u 'rm -rf ~' /srv/r.git") == "deny"
    assert _decision(ir, "git clone ~/.ssh") == "deny"  # a local source is read
    assert _decision(ir, "git clone https://evil.example/r.git") == "deny"
