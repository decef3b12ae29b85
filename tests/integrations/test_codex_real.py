"""The real Codex CLI reads the exported ``.rules`` files and decides as the export means.

``@openai/codex`` (a native binary inside an npm package) is installed once per session into a
temp dir.  ``codex execpolicy check --rules FILE -- ARGV…`` loads the rules offline — a file
Codex cannot load is an error — and prints its decision as JSON::

    {"matchedRules": [{"prefixRuleMatch": {"matchedPrefix": [...], "decision": "forbidden", ...}}],
     "decision": "forbidden"}                      # no "decision" key when no rule matches

``--resolve-host-executables`` is what Codex's own approval check does (a program given as a
path matches rules by its basename), so it is passed here too.  The test skips only when
node/npm is missing or the registry cannot be reached.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integrations.helpers import CONTEXT, CONTEXT_ARGS, EXAMPLES, PROBE_COMMANDS, compile_text, stockade

CODEX_VERSION = "0.171.0"
_NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENETUNREACH",
                   "EHOSTUNREACH", "network request", "getaddrinfo")

FLAGS = "codex matches flags only at their position"
WORDS = "codex matches each word only at its position"

#: Codex's decision for each probe (None: no rule matches), per example.
EXPECTED: dict[str, dict[str, str | None]] = {
    "coding-agent": {
        "sudo ls": "forbidden",
        "/usr/bin/sudo ls": "forbidden",
        "git push --force origin main": "forbidden",
        "git push -f origin main": "forbidden",
        "git push origin feature": "prompt",
        "git status": "allow",
        "git diff --stat": "allow",
        "ls": None,
        "ls -la": None,
        "rm -rf /": None,
        # known gaps, each reported by the export (checked below)
        "git push origin main -f": "prompt",
        "git -C /ws/app push origin feature": None,
    },
    "team-overlay": {
        "sudo ls": "forbidden",
        "pkexec true": "forbidden",
        "git push --force origin main": "forbidden",
        "git push origin feature": "prompt",
        "git status": "allow",
        "ls": None,
        "terraform apply -auto-approve": "forbidden",
        "kubectl delete pod web-1": "forbidden",
        "npm publish": "prompt",
        "twine upload dist/x.whl": "prompt",
        "rm -rf /": "forbidden",
        "rm -fr ~": "forbidden",
        "make test": "allow",
        "pytest -x": "allow",
        # known gaps, each reported by the export (checked below)
        "git push origin main -f": "prompt",
        "rm -r -f /": None,
        "git --no-pager push origin feature": None,
    },
}

#: Probes where Codex is looser than the policy, and the export warning that says so.
GAPS = {
    "git push origin main -f": FLAGS,
    "rm -r -f /": FLAGS,
    "git -C /ws/app push origin feature": WORDS,
    "git --no-pager push origin feature": WORDS,
}


@dataclasses.dataclass(frozen=True)
class Codex:
    """The installed CLI: ``check`` returns Codex's decision (None: no match) or raises."""

    binary: Path
    home: Path

    def run(self, rules: list[Path], argv: list[str]) -> subprocess.CompletedProcess:
        args = [str(self.binary), "execpolicy", "check", "--resolve-host-executables"]
        for path in rules:
            args += ["--rules", str(path)]
        env = dict(os.environ, CODEX_HOME=str(self.home), HOME=str(self.home), NO_COLOR="1")
        return subprocess.run([*args, "--", *argv], capture_output=True, env=env, cwd=self.home, timeout=30)

    def check(self, rules: Path | list[Path], argv: list[str]) -> str | None:
        done = self.run(rules if isinstance(rules, list) else [rules], argv)
        assert done.returncode == 0, f"codex rejected {rules}: {done.stderr.decode()[-1500:]}"
        result = json.loads(done.stdout)
        decisions = [m["prefixRuleMatch"]["decision"] for m in result["matchedRules"]]
        assert (result.get("decision") is None) == (not decisions), result
        return result.get("decision")


@pytest.fixture(scope="session")
def codex(tmp_path_factory) -> Codex:  # type: ignore[no-untyped-def]
    """The real ``@openai/codex`` CLI, installed once per session into a temp dir."""
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node/npm not installed: cannot install @openai/codex")
    where = tmp_path_factory.mktemp("codex")
    try:
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(where),
                               f"@openai/codex@{CODEX_VERSION}"], capture_output=True,
                              env=dict(os.environ, npm_config_cache=str(where / "npm-cache")),  # not ~/.npm
                              timeout=300)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install of @openai/codex timed out (no registry access?)")
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace")
        lines = [line for line in err.splitlines() if any(code in line for code in _NETWORK_ERRORS)]
        if lines:
            pytest.skip(f"npm install of @openai/codex failed for lack of network: {lines[0].strip()[:200]}")
        pytest.fail(f"npm install of @openai/codex@{CODEX_VERSION} failed: {err[-1000:]}")
    binary = where / "node_modules" / ".bin" / "codex"
    home = where / "home"
    home.mkdir()
    version = subprocess.run([str(binary), "--version"], capture_output=True, timeout=60,
                             env=dict(os.environ, CODEX_HOME=str(home), HOME=str(home)))
    assert version.returncode == 0 and CODEX_VERSION in version.stdout.decode(), version
    return Codex(binary, home)


def export(policy: str, out: Path) -> str:
    """``stockade export --to codex-rules`` into ``out``; returns the warnings (stderr)."""
    result = stockade("export", "--to", "codex-rules", "--allow-looser", policy, *CONTEXT_ARGS, "-o", str(out))
    assert result.returncode == 0, result.stderr
    return result.stderr.decode()


@pytest.mark.parametrize("example", EXAMPLES)
def test_real_codex_decides_as_the_export_means(codex: Codex, tmp_path: Path, example: str) -> None:
    from stockade.compiler.pipeline import compile_policy
    from stockade.integrations.codex import DECISION_OF, CodexModel, parse_rules

    rules = tmp_path / f"{example}.rules"
    warnings = export(f"examples/{example}.policy", rules)
    model = CodexModel(tuple(parse_rules(rules.read_text(), rules.name)))
    ir = compile_policy(f"examples/{example}.policy", **CONTEXT).ir
    rank = {None: 0, "allow": 1, "prompt": 2, "forbidden": 3}
    probes = {**EXPECTED[example], **{" ".join(argv): ... for argv in PROBE_COMMANDS}}
    for probe, expected in probes.items():
        argv = probe.split()
        decision = codex.check(rules, argv)
        if expected is not ...:
            assert decision == expected, probe
        ours = model.command_verdict(argv)  # what the export means, read back by our parser
        assert decision == (DECISION_OF[ours] if ours else None), probe
        policy = ir.command_verdict(argv).verdict
        if probe in GAPS:  # codex is looser than the policy here, and the export said so
            assert rank[decision] < rank[DECISION_OF.get(policy)], probe
            assert GAPS[probe] in warnings, probe
        else:
            assert decision == DECISION_OF.get(policy), probe


def test_real_codex_loads_both_exports_together(codex: Codex, tmp_path: Path) -> None:
    files = [tmp_path / f"{example}.rules" for example in EXAMPLES]
    for example, path in zip(EXAMPLES, files, strict=True):
        export(f"examples/{example}.policy", path)
    assert codex.check(files, ["terraform", "apply"]) == "forbidden"
    assert codex.check(files, ["git", "push", "origin", "feature"]) == "prompt"
    assert codex.check(files, ["git", "log"]) == "allow"


def test_real_codex_keeps_odd_words_and_reasons(codex: Codex, tmp_path: Path) -> None:
    """Quotes, backslashes, newlines and carriage returns survive into Codex exactly."""
    from stockade.integrations import export_ir

    ir = compile_text('policy "odd\\nname"\ncommands {\n'
                      '    deny  sudo because "line1\\r\\nline2\\t\\"q\\" back\\\\slash é"\n'
                      '    deny  "a\\nls" x\n'
                      '    deny  "it\'s" "a\\"b" because "quotes"\n'
                      '    allow "b\\rc"\n'
                      '    confirm make because "x"\n}\n')
    blank = dataclasses.replace(ir, commands=tuple(dataclasses.replace(r, reason="  ") if r.text == "make" else r
                                                   for r in ir.commands))
    rules = tmp_path / "odd.rules"
    rules.write_text(export_ir(blank, "codex-rules", allow_looser=True).text)
    done = codex.run([rules], ["sudo", "ls"])
    assert done.returncode == 0, done.stderr.decode()[-1500:]
    match = json.loads(done.stdout)["matchedRules"][0]["prefixRuleMatch"]
    assert match["justification"] == "line1\r\nline2\t\"q\" back\\slash é"
    assert codex.check(rules, ["a\nls", "x"]) == "forbidden"
    assert codex.check(rules, ["ls", "x"]) is None  # the newline did not leak out of the comment
    assert codex.check(rules, ["it's", 'a"b']) == "forbidden"
    assert codex.check(rules, ["b\rc"]) == "allow"
    assert codex.check(rules, ["bc"]) is None
    assert codex.check(rules, ["make", "all"]) == "prompt"  # a blank reason is left out, not refused


@pytest.mark.parametrize(("text", "why"), [
    ('prefix_rule(pattern = ["a"], decision = "block")\n', "invalid decision"),
    ('prefix_rule(pattern = ["a"\n', "Parse error"),
    ('prefix_rule(pattern = [], decision = "allow")\n', "pattern cannot be empty"),
    ('prefix_rule(pattern = ["a"], colour = "red")\n', "colour"),
    ('prefix_rule(pattern = ["a"], justification = " ")\n', "justification cannot be empty"),
    ('prefix_rule(pattern = ["git", "push"], match = [["git", "pull"]])\n', "expected every example to match"),
    ('prefix_rule(pattern = ["git"], not_match = [["git", "status"]])\n', "expected example to not match"),
])
def test_real_codex_rejects_broken_rules(codex: Codex, tmp_path: Path, text: str, why: str) -> None:
    bad = tmp_path / "bad.rules"
    bad.write_text(text)
    done = codex.run([bad], ["ls"])
    assert done.returncode != 0 and done.stdout == b"", done.stdout
    assert b"failed to parse policy" in done.stderr and why.encode() in done.stderr, done.stderr.decode()[-800:]


def test_export_reports_every_gap_codex_has(tmp_path: Path) -> None:
    """The warnings the real-codex test relies on name the rule (no codex needed)."""
    warnings = export("examples/team-overlay.policy", tmp_path / "t.rules")
    assert "`confirm git push`: " + WORDS in warnings
    assert "`deny rm -rf|-fr /`: " + FLAGS in warnings
    assert "`allow git status`" not in warnings  # an allow rule is only exported stricter
