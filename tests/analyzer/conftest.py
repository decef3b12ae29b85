"""Fixtures for analyzer tests: a policy mirroring examples/coding-agent.policy.

When the real compiler works, the policy is compiled from ``examples/coding-agent.policy``;
until then an equivalent IR is built directly.  The workspace is a tmp dir and home a fake
home, so nothing depends on the machine running the tests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stockade.compiler.ir import (
    CommandRule,
    Context,
    FsRule,
    HostPattern,
    NetRule,
    Network,
    Origin,
    PatternToken,
    PolicyIR,
    VerdictSetting,
)

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "examples" / "coding-agent.policy"


def corpus_dir() -> Path:
    """The shared corpus when present, the committed copy otherwise."""
    shared = ROOT.parent / "shared" / "corpus"
    return shared if (shared / "adversarial.jsonl").exists() else Path(__file__).parent / "corpus"


def load_corpus(name: str) -> list[dict]:
    """One corpus file as a list of cases."""
    with open(corpus_dir() / name, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _o(line: int) -> Origin:
    return Origin(str(POLICY.relative_to(ROOT)), line, 5)


def fixture_ir(workspace: str, home: str, tmpdir: str) -> PolicyIR:
    """An IR equivalent to examples/coding-agent.policy, built by hand."""
    fs = [FsRule("read", "/", origin=_o(6))]
    for p in (".ssh", ".aws", ".gnupg", ".netrc", ".config/gh"):
        fs.append(FsRule("deny", f"{home}/{p}", origin=_o(7)))
    fs += [FsRule("deny", "/**/.env", True, origin=_o(8)), FsRule("deny", "/**/.env.*", True, origin=_o(8))]
    fs += [FsRule("deny", "/etc/shadow", origin=_o(9)), FsRule("deny", "/etc/sudoers", origin=_o(9))]
    fs += [FsRule("write", p, origin=_o(10)) for p in (workspace, tmpdir, "/tmp")]
    fs += [FsRule("readonly", f"{home}/{p}", origin=_o(11)) for p in (".bashrc", ".zshrc", ".profile", ".bash_profile")]
    fs += [FsRule("readonly", f"{workspace}/.git/hooks", origin=_o(12)),
           FsRule("readonly", f"{workspace}/.git/config", origin=_o(12))]
    net = Network("deny", (NetRule("allow", HostPattern("localhost"), origin=_o(17)),
                           *(NetRule("allow", HostPattern("host", h), origin=_o(18))
                             for h in ("github.com", "pypi.org", "files.pythonhosted.org", "registry.npmjs.org"))),
                  default_origin=_o(16))

    def rule(verdict: str, words: str, reason: str | None, line: int) -> CommandRule:
        return CommandRule(verdict, tuple(PatternToken(tuple(w.split("|"))) for w in words.split()), reason,
                           origin=_o(line))

    cmds = [rule("deny", p, "no privilege escalation", 35) for p in ("sudo", "su", "doas")]
    cmds += [rule("deny", "git push --force|-f", "history rewrite on shared branches", 36),
             rule("confirm", "git push", None, 37)]
    cmds += [rule("allow", p, None, 38) for p in ("git status", "git diff", "git log")]
    return PolicyIR("coding-agent", Context(workspace, home, tmpdir), filesystem=tuple(fs), network=net,
                    commands=tuple(cmds), unknown_effects=VerdictSetting("confirm", origin=_o(39)),
                    unparsable=VerdictSetting("deny", origin=_o(40)))


def build_ir(workspace: str, home: str, tmpdir: str) -> PolicyIR:
    """The real compiled policy when the compiler works, else the hand-built equivalent."""
    try:
        from stockade.compiler.pipeline import compile_policy

        return compile_policy(str(POLICY), workspace=workspace, home=home, tmpdir=tmpdir).ir
    except NotImplementedError:
        return fixture_ir(workspace, home, tmpdir)


@pytest.fixture(scope="session")
def sandbox_dirs() -> tuple[str, str, str]:
    """(workspace, home, tmpdir): a shallow real workspace and tmpdir (so `../../..` reaches
    `/` as on a real machine) and a fake home outside every writable directory."""
    import shutil
    import tempfile

    base = tempfile.mkdtemp(prefix="stockade-an-", dir="/var/tmp")
    workspace, tmpdir = os.path.join(base, "ws"), os.path.join(base, "tmp")
    for d in (workspace, tmpdir):
        os.makedirs(d, exist_ok=True)
    yield workspace, "/home/stockade-fake-user", tmpdir
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def ir(sandbox_dirs: tuple[str, str, str]) -> PolicyIR:
    """The coding-agent policy compiled against the sandbox dirs."""
    return build_ir(*sandbox_dirs)


#: The Windows context of :func:`windows_ir` (the examples' user `me`).
WINDOWS_WORKSPACE = "C:\\Users\\me\\ws"
WINDOWS_HOME = "C:\\Users\\me"


@pytest.fixture(scope="session")
def windows_ir() -> PolicyIR:
    """examples/windows-agent.policy compiled for Windows paths (workspace `C:\\Users\\me\\ws`,
    home `C:\\Users\\me`, %TEMP% its `AppData\\Local\\Temp`)."""
    from stockade.compiler.pipeline import compile_policy

    return compile_policy(str(ROOT / "examples" / "windows-agent.policy"), workspace=WINDOWS_WORKSPACE,
                          home=WINDOWS_HOME, platform="windows", environ={}).ir
