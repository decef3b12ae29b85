"""Implied git protections (``stockade.compiler.git_paths``): repository layouts → the
read-only rules that protecting ``.git/config`` / ``.git/hooks`` implies, on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stockade.compiler.git_paths import parse_config, placeholder_content
from stockade.compiler.ir import FsRule
from stockade.compiler.pipeline import compile_policy

ROOT = Path(__file__).resolve().parents[2]
POLICY = """policy "git"
filesystem {
    read     /
    write    $WORKSPACE
    deny     $WORKSPACE/secret
    readonly $WORKSPACE/.git/hooks $WORKSPACE/.git/config
}
"""
#: The same with a writable home (the user's git configs become protected).
POLICY_HOME = POLICY.replace("write    $WORKSPACE", "write    $WORKSPACE ~")

HEAD = "ref: refs/heads/main\n"
ENTRIES = (".git/config.worktree", ".git/commondir", ".git/worktrees")

# layout: path → file content ("/" ending: a directory; "->x": a symlink to x);
# expected: implied rule paths relative to the workspace ("~/": the home)
CASES = [
    ("plain repo",        {".git/HEAD": HEAD, ".git/config": "", ".git/hooks/": ""}, ENTRIES),
    ("no .git yet",       {}, ENTRIES),
    ("missing hooks",     {".git/HEAD": HEAD, ".git/config": ""}, ENTRIES),
    ("gitdir file in ws", {".git": "gitdir: store/g\n", "store/g/HEAD": HEAD, "store/g/config": ""},
                          (".git", "store/g/config", "store/g/config.worktree", "store/g/commondir", "store/g/hooks",
                           "store/g/worktrees")),
    ("gitdir file out",   {".git": "gitdir: ../../outside/g\n"}, (".git",)),
    ("commondir in ws",   {".git/HEAD": HEAD, ".git/config": "", ".git/commondir": "../common\n", "common/HEAD": HEAD},
                          ENTRIES + ("common/config", "common/config.worktree", "common/commondir", "common/hooks",
                                     "common/worktrees")),
    ("include.path",      {".git/HEAD": HEAD, ".git/config": "[include]\n\tpath = ../inc.cfg\n", "inc.cfg": ""},
                          ENTRIES + ("inc.cfg",)),
    ("include missing",   {".git/HEAD": HEAD, ".git/config": "[include]\n\tpath = ../later.cfg\n"},
                          ENTRIES + ("later.cfg",)),
    ("includeIf nested",  {".git/HEAD": HEAD, ".git/config": '[includeIf "onbranch:main"]\n  path = "../a.cfg"\n',
                           "a.cfg": "[include] path = b.cfg\n"}, ENTRIES + ("a.cfg", "b.cfg")),
    ("include in deny",   {".git/HEAD": HEAD, ".git/config": "[include]\npath = ../secret/x.cfg\n"}, ENTRIES),
    ("include of a secret", {".git/HEAD": HEAD, ".git/config": "[include]\npath = ../secret/s.cfg\n",
                             "secret/s.cfg": "[core]\nhooksPath = leaked\n"}, ENTRIES),
    ("include ~ home",    {".git/HEAD": HEAD, ".git/config": "[include]\npath = ~/inc.cfg\n"}, ENTRIES),
    ("hooksPath",         {".git/HEAD": HEAD, ".git/config": "[core]\n\thooksPath = .githooks\n"},
                          ENTRIES + (".githooks",)),
    ("fsmonitor path",    {".git/HEAD": HEAD, ".git/config": "[core]\nfsmonitor = tools/watch --fast\n"},
                          ENTRIES + ("tools/watch",)),
    ("fsmonitor bool",    {".git/HEAD": HEAD, ".git/config": "[core]\nfsmonitor = true\n"}, ENTRIES),
    ("alias path",        {".git/HEAD": HEAD, ".git/config": "[alias]\nx = !./bin/x.sh\n"}, ENTRIES + ("bin/x.sh",)),
    ("symlinked config",  {".git/HEAD": HEAD, ".git/config": "->../evil.cfg",
                           "evil.cfg": "[include]\npath = planted.cfg\n"}, ENTRIES),
    ("submodule",         {".git/HEAD": HEAD, ".git/config": "", ".git/modules/lib/HEAD": HEAD,
                           ".git/modules/lib/config": "[core]\n\tworktree = ../../../lib\n",
                           "lib/.git": "gitdir: ../.git/modules/lib\n"},
                          ENTRIES + tuple(f".git/modules/lib/{e}" for e in
                                          ("config", "config.worktree", "commondir", "hooks", "worktrees"))
                          + ("lib/.git",)),
    ("nested module name", {".git/HEAD": HEAD, ".git/config": "", ".git/modules/a/b/HEAD": HEAD},
                          ENTRIES + tuple(f".git/modules/a/b/{e}" for e in
                                          ("config", "config.worktree", "commondir", "hooks", "worktrees"))),
    ("linked worktree",   {".git": "gitdir: main/.git/worktrees/ws\n", "main/.git/HEAD": HEAD, "main/.git/config": "",
                           "main/.git/worktrees/ws/HEAD": HEAD, "main/.git/worktrees/ws/commondir": "../..\n",
                           "main/.git/worktrees/other/HEAD": HEAD},
                          (".git",) + tuple(f"main/.git/worktrees/ws/{e}" for e in
                                            ("config", "config.worktree", "commondir", "hooks", "worktrees"))
                          + tuple(f"main/.git/{e}" for e in ("config", "config.worktree", "commondir", "hooks"))
                          + ("main/.git/worktrees/other",)),
    ("hostile .gitmodules", {".git/HEAD": HEAD, ".git/config": "", ".gitmodules": "[submodule \"x\"]\npath = a\x00b\n"
                             "[submodule \"y\"]\npath\n[include]\npath = /etc\n"}, ENTRIES),
    (".gitmodules",       {".git/HEAD": HEAD, ".git/config": "",
                           ".gitmodules": '[submodule "v"]\n\tpath = vendor/v\n[submodule "o"]\n\tpath = ../../out\n',
                           "vendor/v/.git": "gitdir: ../../.git/modules/v\n"}, ENTRIES + ("vendor/v/.git",)),
]


def build(root: Path, layout: dict[str, str]) -> None:
    for rel, content in layout.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        elif content.startswith("->"):
            os.symlink(content[2:], path)
        else:
            path.write_text(content)


def compile_in(tmp_path: Path, layout: dict[str, str], policy: str = POLICY):
    home = tmp_path / "home"
    ws = home / "ws"
    ws.mkdir(parents=True)
    build(ws, layout)
    return compile_policy(text=policy, workspace=str(ws), home=str(home), tmpdir=str(tmp_path / "t"), environ={}), ws


def implied(ir) -> list[FsRule]:
    return [rule for rule in ir.filesystem if "implied by" in rule.source_text]


@pytest.mark.parametrize("name,layout,expected", CASES, ids=[c[0] for c in CASES])
def test_layouts(tmp_path: Path, name: str, layout: dict[str, str], expected: tuple[str, ...]) -> None:
    result, ws = compile_in(tmp_path, layout)
    got = sorted(os.path.relpath(rule.pattern, ws) for rule in implied(result.ir))
    assert got == sorted(expected)
    assert all(rule.kind == "readonly" for rule in implied(result.ir))


def test_implied_rules_name_the_policy_line(tmp_path: Path) -> None:
    result, ws = compile_in(tmp_path, {".git/HEAD": HEAD, ".git/config": ""})
    rule = next(r for r in implied(result.ir) if r.pattern.endswith("/commondir"))
    hooks = next(r for r in result.ir.filesystem if r.pattern == str(ws / ".git" / "hooks"))
    assert rule.origin == hooks.origin and rule.origin is not None
    assert (rule.origin.line, rule.origin.column) == (6, 14)
    assert rule.source_text == f"{ws}/.git/commondir (git metadata implied by readonly $WORKSPACE/.git/hooks)"
    decision = result.ir.path_access(str(ws / ".git" / "commondir"))
    assert decision.access == "read" and decision.rule == rule


def test_symlinked_config_is_not_followed_and_warned(tmp_path: Path) -> None:
    result, ws = compile_in(tmp_path, next(c[1] for c in CASES if c[0] == "symlinked config"))
    assert not any(r.pattern.endswith("planted.cfg") for r in result.ir.filesystem)
    assert str(ws / ".git" / "config") not in result.sources  # never read through the link
    assert any(w.code == "C240" and ".git/config" in w.message for w in result.warnings)


def test_user_configs_protected_when_home_is_writable(tmp_path: Path) -> None:
    home_layout = {".git/HEAD": HEAD, ".git/config": ""}
    result, ws = compile_in(tmp_path, home_layout, POLICY_HOME)
    home = ws.parent
    got = {r.pattern for r in implied(result.ir)}
    assert str(home / ".gitconfig") in got and str(home / ".config" / "git" / "config") in got


def test_user_config_includes_followed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[include]\n\tpath = ws/user-inc.cfg\n")
    result, ws = compile_in(tmp_path, {".git/HEAD": HEAD, ".git/config": ""})
    assert str(ws / "user-inc.cfg") in {r.pattern for r in implied(result.ir)}
    assert str(home / ".gitconfig") in result.sources  # a changed user config recompiles


def test_read_files_are_cache_sources(tmp_path: Path) -> None:
    result, ws = compile_in(tmp_path, {".git/HEAD": HEAD, ".git/config": "[include]\npath = ../inc.cfg\n",
                                       "inc.cfg": ""})
    assert {str(ws / ".git" / "config"), str(ws / "inc.cfg")} <= set(result.sources)
    assert result.sources[str(ws / ".git" / "config")] == ""  # hashed, its text not kept


def test_fifo_include_target_does_not_block(tmp_path: Path) -> None:
    _, ws = compile_in(tmp_path, {".git/HEAD": HEAD, ".git/config": "[include]\npath = ../fifo\n"})
    os.mkfifo(ws / "fifo2")
    (ws / ".git" / "config").write_text("[include]\npath = ../fifo2\n")
    again = compile_policy(text=POLICY, workspace=str(ws), home=str(ws.parent), tmpdir=str(tmp_path / "t"),
                           environ={})
    assert str(ws / "fifo2") in {r.pattern for r in implied(again.ir)}


def test_windows_context_adds_nothing() -> None:
    result = compile_policy(text=POLICY, workspace="C:\\ws", home="C:\\Users\\u", tmpdir="C:\\t", environ={},
                            platform="windows")
    assert implied(result.ir) == []


@pytest.mark.parametrize("text,expected", [
    ("[core]\n\thooksPath = /x\n", [("core", None, "hookspath", "/x")]),
    ('[includeIf "gitdir:~/w/"]\npath = "a b.cfg" # c\n', [("includeif", "gitdir:~/w/", "path", "a b.cfg")]),
    ("[Core] FsMonitor\n", [("core", None, "fsmonitor", "true")]),
    ("[alias]\n x = \"!echo \\\"hi\\\"\" ; c\n", [("alias", None, "x", '!echo "hi"')]),
    ("[a.B]\nk = v1 \\\n v2\n", [("a", "b", "k", "v1  v2")]),
    ("k = orphan\n[s]\n=bad\n", []),
], ids=["plain", "quoted-sub", "bare-true", "escapes", "old-sub-cont", "junk"])
def test_parse_config(text: str, expected: list) -> None:
    assert parse_config(text) == expected


@pytest.mark.parametrize("path,marked,expected", [
    ("/w/.git/commondir", False, "."),
    ("/w/.git/config.worktree", False, ""),
    ("/w/.git/worktrees", False, None),
    ("/w/commondir", False, None),
    ("/w/inc.cfg", True, ""),
    ("/w/inc.cfg", False, None),
])
def test_placeholder_content(path: str, marked: bool, expected: str | None) -> None:
    text = f"{path} (git config implied by readonly x)" if marked else f"{path} (written)"
    assert placeholder_content(path, [FsRule("readonly", path, source_text=text)]) == expected


@pytest.mark.parametrize("command,decision", [
    ("echo x > .git/commondir", "deny"),
    ("printf 'gitdir: /tmp/p' > .git/worktrees/w/commondir", "deny"),
    ("echo '[core]' >> .git/config.worktree", "deny"),
    ("echo x > notes.txt", "allow"),
])
def test_analyzer_judges_implied_rules(tmp_path: Path, command: str, decision: str) -> None:
    """`stockade analyze` under the coding-agent policy sees the implied rules, and names
    the policy line that implied them."""
    ws = tmp_path / "ws"
    build(ws, {".git/HEAD": HEAD, ".git/config": "", ".git/hooks/": ""})
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    env.pop("STOCKADE_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-m", "stockade", "analyze", "--format", "json", "--policy",
                           str(ROOT / "examples" / "coding-agent.policy"), "--workspace", str(ws),
                           "--home", str(tmp_path / "home"), "--", command],
                          env=env, cwd=ws, capture_output=True, text=True, timeout=60, check=False)
    report = json.loads(done.stdout)
    assert report["decision"] == decision, done.stdout
    if decision == "deny":
        rule = report["reasons"][0]["rule"]
        assert rule["file"].endswith("coding-agent.policy") and rule["line"] == 12


def test_symlinked_dot_git_is_warned(tmp_path: Path) -> None:
    """A `.git` symlink can be swapped by the sandbox (a mount cannot sit on a symlink):
    its target's files are protected, the symlink itself is warned about."""
    result, ws = compile_in(tmp_path, {"real/HEAD": HEAD, "real/config": "", ".git": "->real"})
    assert any(w.code == "C240" and f"`{ws}/.git` is a symlink" in w.message for w in result.warnings)
    assert str(ws / "real" / "commondir") in {r.pattern for r in implied(result.ir)}
