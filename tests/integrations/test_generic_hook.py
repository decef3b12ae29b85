"""The generic JSON hook through the real CLI."""

from __future__ import annotations

import json

import pytest

from tests.integrations.helpers import CONTEXT_ARGS, stockade


def hook(event: str | bytes):  # type: ignore[no-untyped-def]
    return stockade("hook", "generic", "--policy", "examples/coding-agent.policy", *CONTEXT_ARGS, stdin=event)


@pytest.mark.parametrize(("event", "decision", "code"), [
    ({"command": "git status"}, "allow", 0),
    ({"command": "git push origin feature"}, "confirm", 4),
    ({"command": "sudo rm -rf /"}, "deny", 1),
    ({"command": "cat ~/.aws/credentials", "cwd": "/ws/app"}, "deny", 1),
    ({"tool": "read_file", "path": "/home/dev/.ssh/id_rsa", "access": "read"}, "deny", 1),
    ({"tool": "write_file", "path": "src/app.py", "access": "write", "cwd": "/ws/app"}, "allow", 0),
    ({"tool": "write_file", "path": "/etc/passwd", "access": "write"}, "deny", 1),
    ({"tool": "read_file", "path": "/etc/passwd"}, "allow", 0),
])
def test_verdicts(event: dict, decision: str, code: int) -> None:
    result = hook(json.dumps(event))
    answer = json.loads(result.stdout)
    assert (answer["decision"], result.returncode) == (decision, code)
    if decision != "allow":
        assert answer["reasons"] and answer["reasons"][0]["message"]


def test_command_answer_is_the_analyzer_verdict_json() -> None:
    analyzed = stockade("analyze", "--policy", "examples/coding-agent.policy", *CONTEXT_ARGS, "--no-cache",
                        "--format", "json", "--", "git push -f origin main")
    assert json.loads(hook('{"command": "git push -f origin main"}').stdout) == json.loads(analyzed.stdout)


@pytest.mark.parametrize(("event", "needle"), [
    (b"{", "not JSON"),
    (b'"ls"', "expected a JSON object"),
    (b'{"command": ["ls"]}', "`command` must be a string"),
    (b'{"path": "/x", "access": "exec"}', "`access`"),
    (b'{"tool": "x"}', "expected `command`"),
    (b'{"path": 7}', "`path`"),
])
def test_malformed(event: bytes, needle: str) -> None:
    result = hook(event)
    answer = json.loads(result.stdout)
    assert result.returncode == 1 and answer["decision"] == "deny"
    assert needle in answer["reasons"][0]["message"] and answer["reasons"][0]["code"] == "X631"


def test_the_hook_loads_the_policy_from_the_compiled_policy_cache(tmp_path) -> None:
    """An agent calls the hook on every tool use: the second call decodes the cached IR
    instead of compiling (no grammar loaded), and an edited policy is compiled again."""
    import os
    import subprocess
    import sys

    from tests.integrations.helpers import ROOT

    policy = tmp_path / "p.policy"
    policy.write_text((ROOT / "examples" / "coding-agent.policy").read_text())
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("STOCKADE_CACHE_DIR", None)
    probe = ("import sys; from stockade.cli.main import main; code = main(sys.argv[1:]); "
             "print('lark' in sys.modules, file=sys.stderr); sys.exit(code)")
    args = ["hook", "generic", "--policy", str(policy), *CONTEXT_ARGS]

    def call(command: str) -> tuple[str, str]:
        done = subprocess.run([sys.executable, "-c", probe, *args], input=json.dumps({"command": command}),
                              capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
        return json.loads(done.stdout)["decision"], done.stderr.strip().splitlines()[-1]

    assert call("git push origin feature") == ("confirm", "True")  # compiled and stored
    assert call("git push origin feature") == ("confirm", "False")  # from the cache
    policy.write_text(policy.read_text().replace("confirm git push", "deny    git push"))
    assert call("git push origin feature") == ("deny", "True")  # edited: compiled again
