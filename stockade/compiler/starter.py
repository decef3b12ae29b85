"""A starter policy for a project: what ``stockade init`` writes.

:func:`detect_tools` looks at the files at the project's root (``package.json``,
``pyproject.toml``, ``Cargo.toml``, ``go.mod``, ``.git`` …) and :func:`starter_policy`
writes a policy for them: the whole machine readable except secrets, the workspace and temp
directories writable, git metadata and shell start-up files read-only, the registries of the
detected package managers reachable, their everyday commands allowed and their publishing
confirmed, privilege escalation denied, and a ``test`` block that pins these decisions.  The
text is canonical (``stockade fmt`` leaves it unchanged).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Tool:
    """A tool a project uses, and what a starter policy grants it."""

    name: str
    markers: tuple[str, ...]
    hosts: tuple[str, ...] = ()
    caches: tuple[str, ...] = ()  # below the home directory; granted when they exist
    allow: tuple[str, ...] = ()
    confirm: tuple[str, ...] = ()
    tests: tuple[tuple[str, str], ...] = field(default=())


TOOLS: tuple[Tool, ...] = (
    Tool("git", (".git",), ("github.com", "gitlab.com"), (), ("git status", "git diff", "git log", "git show",
                                                              "git branch", "git add", "git commit"),
         ("git push",), (("allow", "git status"), ("confirm", "git push origin main"),
                                      ("deny", "git push --force origin main"))),
    Tool("node", ("package.json", "package-lock.json", "pnpm-lock.yaml", "yarn.lock"),
         ("registry.npmjs.org", "registry.yarnpkg.com"), (".npm", ".cache/yarn", ".local/share/pnpm"),
         ("npm test", "npm run", "npm ci", "npx tsc"), ("npm install", "npm publish"),
         (("allow", "npm test"), ("confirm", "npm publish"))),
    Tool("python", ("pyproject.toml", "requirements.txt", "setup.py", "setup.cfg", "Pipfile", "uv.lock"),
         ("pypi.org", "files.pythonhosted.org"), (".cache/pip", ".cache/uv"),
         ("pytest", "python3 -m pytest", "ruff check", "mypy"), ("pip install", "uv pip install", "twine upload"),
         (("allow", "pytest -q"), ("confirm", "pip install requests"))),
    Tool("rust", ("Cargo.toml",), ("crates.io", "static.crates.io", "index.crates.io"),
         (".cargo/registry", ".cargo/git"), ("cargo build", "cargo test", "cargo check", "cargo clippy", "cargo fmt"),
         ("cargo publish", "cargo install"), (("allow", "cargo test"), ("confirm", "cargo publish"))),
    Tool("go", ("go.mod",), ("proxy.golang.org", "sum.golang.org"), ("go/pkg/mod", ".cache/go-build"),
         ("go build", "go test", "go vet"), ("go install",), (("allow", "go test ./..."),)),
)


def detect_tools(root: str) -> list[Tool]:
    """The tools whose marker files are at the project's ``root``."""
    try:
        present = set(os.listdir(root))
    except OSError:
        return []
    return [tool for tool in TOOLS if present.intersection(tool.markers)]


def project_name(root: str) -> str:
    """A policy name for the project: its directory name, in the letters names use."""
    base = os.path.basename(os.path.abspath(root).rstrip("/")) or "project"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-") or "project"


def starter_policy(root: str, home: str | None = None, name: str | None = None) -> str:
    """The starter policy text for the project at ``root`` (canonical, ready to check)."""
    from stockade.policy_lang import parse
    from stockade.policy_lang.formatter import format_policy

    tools = detect_tools(root)
    home = home or os.path.expanduser("~")
    name = name or project_name(root)
    found = ", ".join(t.name for t in tools) or "no known tool"
    fs = ["read /", "deny ~/.ssh ~/.aws ~/.gnupg ~/.netrc ~/.config/gh ~/.docker/config.json ~/.kube",
          'deny "**/.env" "**/.env.*"', "write $WORKSPACE $TMPDIR /tmp"]
    caches = [f"~/{c}" for t in tools for c in t.caches if os.path.isdir(os.path.join(home, c))]
    if caches:
        fs.append("write " + " ".join(caches) + "  # package caches")
    if any(t.name == "git" for t in tools):
        fs.append("readonly $WORKSPACE/.git/hooks $WORKSPACE/.git/config")
    fs.append("readonly ~/.bashrc ~/.zshrc ~/.profile ~/.bash_profile")
    net = ["default deny", "allow localhost"] + [f"allow {' '.join(h + ':443' for h in t.hosts)}  # {t.name}"
                                                 for t in tools if t.hosts]
    commands = ['deny sudo, su, doas because "no privilege escalation"']
    if any(t.name == "git" for t in tools):
        commands.append('deny git push --force|-f because "history rewrite on shared branches"')
    for tool in tools:
        if tool.confirm:
            commands.append("confirm " + ", ".join(tool.confirm))
        if tool.allow:
            commands.append("allow " + ", ".join(tool.allow))
    commands += ["unknown-effects confirm  # code Stockade cannot see into", "unparsable deny"]
    tests = ['deny "sudo true"'] + [f'{verdict} "{command}"' for t in tools for verdict, command in t.tests]

    def block(title: str, lines: list[str]) -> str:
        return f"{title} {{\n" + "".join(f"    {line}\n" for line in lines) + "}\n"

    text = (f"# Starter policy written by `stockade init` (found: {found}).\n"
            "# Check it with `stockade check`, try it with `stockade explain`, and tighten it as you go.\n"
            f'policy "{name}"\n\n'
            + block("filesystem", fs) + "\n" + block("network", net) + "\n"
            + block("environment", ["keep PATH HOME USER LANG LC_* TERM TMPDIR PWD SHELL",
                                    'drop "*_TOKEN" "*_SECRET" "*_KEY" "AWS_*"']) + "\n"
            + block("limits", ["timeout 30m", "memory 4GiB", "processes 512"]) + "\n"
            + block("commands", commands) + "\n" + block('test "starter"', tests))
    ast, diagnostics = parse(text, "<starter>")
    if ast is None:  # pragma: no cover - the template is checked by the tests
        raise AssertionError(f"the starter policy does not parse: {diagnostics}")
    return format_policy(ast, text)
