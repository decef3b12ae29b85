"""The decision API: most specific path wins, strictest command rule wins, network, environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from stockade.compiler.argv import parse_argv
from tests.compiler.helpers import compile_text

POLICY = """
filesystem {
    read     /
    deny     ~/.ssh "**/.env" "**/.env.*" "**/*.pem"
    write    $WORKSPACE /tmp
    readonly $WORKSPACE/.git/hooks ~/.bashrc
    write    $WORKSPACE/.git/hooks/allowed-dir
    deny     /srv
    read     /srv/public
}
network {
    default deny
    allow localhost github.com:443 *.npmjs.org 10.1.0.0/16 [fd00::1]:8443
    deny  bad.npmjs.org 10.1.2.0/24
}
environment {
    keep PATH HOME LC_*
    drop "*_TOKEN"
    set  CI=1
}
commands {
    deny    rm -rf /, sudo
    deny    git push --force|-f
    confirm git push
    allow   git status|diff|log
    confirm docker run --privileged
    allow   make **
    deny    "*" --no-preserve-root
}
"""


@pytest.fixture
def ir(tmp_path: Path):  # type: ignore[no-untyped-def]
    return compile_text(POLICY, tmp_path, workspace="/work/ws", home="/home/dev").ir


@pytest.mark.parametrize("path, access, decided_by", [
    ("/etc/passwd", "read", "/"),
    ("/work/ws/src/main.py", "write", "/work/ws"),
    ("/work/ws/.env", "none", "/**/.env"),
    ("/work/ws/config/.env.production", "none", "/**/.env.*"),
    ("/work/ws/.envrc", "write", "/work/ws"),
    ("/work/ws/certs/server.pem", "none", "/**/*.pem"),
    ("/home/dev/.ssh/id_rsa", "none", "/home/dev/.ssh"),
    ("/home/dev/.ssh", "none", "/home/dev/.ssh"),
    ("/home/dev/.bashrc", "read", "/home/dev/.bashrc"),
    ("/work/ws/.git/hooks/pre-commit", "read", "/work/ws/.git/hooks"),
    ("/work/ws/.git/hooks/allowed-dir/x", "write", "/work/ws/.git/hooks/allowed-dir"),
    ("/srv/private/db", "none", "/srv"),
    ("/srv/public/index.html", "read", "/srv/public"),
    ("~/.ssh/config", "none", "/home/dev/.ssh"),
    ("src/../../ws/.git/hooks/x", "read", "/work/ws/.git/hooks"),
    ("/tmp/build/a.o", "write", "/tmp"),
])
def test_most_specific_path_wins(ir, path: str, access: str, decided_by: str) -> None:  # type: ignore[no-untyped-def]
    decision = ir.path_access(path)
    assert decision.access == access
    assert decision.rule is not None and decision.rule.pattern == decided_by
    assert decision.rule.origin.line > 0


def test_ties_go_to_the_stricter_and_uncovered_paths_have_no_access(tmp_path: Path) -> None:
    ir = compile_text("filesystem {\n  write /data\n  read /data/x\n  readonly $WORKSPACE\n  write $WORKSPACE\n}\n",
                      tmp_path, workspace="/data/x").ir
    # /data/x has `read` and (through the workspace) `readonly` and `write`: readonly wins
    assert ir.path_access("/data/x/f").access == "read"
    assert ir.path_access("/data/y").access == "write"
    assert ir.path_access("/elsewhere").access == "none" and ir.path_access("/elsewhere").rule is None


@pytest.mark.parametrize("argv", [
    ["git", "push", "--force"], ["git", "push", "-f", "origin"], ["git", "push", "origin", "main", "--force"],
    ["/usr/bin/git", "-C", "repo", "push", "-f"], ["git", "-c", "user.name=x", "push", "--force"],
    ["rm", "-rf", "/"], ["rm", "-fr", "/"], ["rm", "-r", "-f", "/"], ["rm", "--recursive", "--force", "/"],
    ["rm", "-R", "-f", "/"], ["rm", "-rfv", "/"], ["sudo", "ls"], ["chmod", "--no-preserve-root", "x"],
])
def test_denied_argv_in_every_spelling(ir, argv: list[str]) -> None:  # type: ignore[no-untyped-def]
    decision = ir.command_verdict(argv)
    assert decision.verdict == "deny", argv
    assert decision.rule is not None and decision.rule.origin is not None


@pytest.mark.parametrize("argv, verdict", [
    (["git", "push", "origin", "main"], "confirm"),
    (["git", "push", "--force-with-lease"], "confirm"),
    (["git", "status"], "allow"),
    (["git", "log", "--oneline"], "allow"),
    (["git", "commit"], None),
    (["rm", "-rf", "./build"], None),
    (["rm", "-r", "/"], None),
    (["docker", "run", "--privileged", "alpine"], "confirm"),
    (["docker", "run", "alpine"], None),
    (["make"], "allow"),
    (["make", "test", "install"], "allow"),
    ([], None),
])
def test_command_verdicts(ir, argv: list[str], verdict: str | None) -> None:  # type: ignore[no-untyped-def]
    assert ir.command_verdict(argv).verdict == verdict


def test_strictest_matching_rule_wins_whatever_the_order(tmp_path: Path) -> None:
    a = compile_text("commands {\n  allow git **\n  deny git push\n}\n", tmp_path).ir
    b = compile_text("commands {\n  deny git push\n  allow git **\n}\n", tmp_path).ir
    for ir in (a, b):
        decision = ir.command_verdict(["git", "push", "origin"])
        assert decision.verdict == "deny" and len(decision.matches) == 2


def test_flag_normalisation() -> None:
    assert parse_argv(["rm", "-rf", "x"]).flags == parse_argv(["rm", "--recursive", "--force", "x"]).flags
    assert parse_argv(["tar", "-xzf", "a.tgz", "dir"]).positionals == ("tar", "dir")
    assert parse_argv(["curl", "-o", "out", "https://x"]).positionals == ("curl", "https://x")
    assert parse_argv(["nice", "-n19", "make"]).flags == {"-n"}
    assert parse_argv(["ls", "--", "-rf"]).positionals == ("ls", "-rf")


@pytest.mark.parametrize("host, port, allowed", [
    ("localhost", 8080, True), ("127.0.0.1", 5432, True), ("::1", 80, True),
    ("github.com", 443, True), ("github.com", 22, False), ("github.com", None, False),
    ("registry.npmjs.org", 443, True), ("npmjs.org", 443, False), ("bad.npmjs.org", 443, False),
    ("10.1.3.4", 80, True), ("10.1.2.4", 80, False), ("10.2.0.1", 80, False),
    ("fd00::1", 8443, True), ("[fd00::1]", 8443, True), ("fd00::1", 80, False),
    ("evil.example", 443, False), ("GitHub.COM.", 443, True),
])
def test_network_decisions(ir, host: str, port: int | None, allowed: bool) -> None:  # type: ignore[no-untyped-def]
    assert ir.network_access(host, port).allowed is allowed


def test_environment_filter(ir) -> None:  # type: ignore[no-untyped-def]
    env = {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "GITHUB_TOKEN": "s3cr3t", "EDITOR": "vi"}
    assert ir.filter_environment(env) == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "CI": "1"}
