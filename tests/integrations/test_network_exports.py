"""Network rules in every export, from the same IR rules, never looser than the policy.

One line per case: the policy's network rules, what the target's network settings hold, and
the source lines of the rules it warns about (each a rule the target cannot express, made
stricter).  A property over generated network blocks checks every export with the target's
own decision model against ``ir.network_access``: nothing the policy denies is reachable.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.compiler.query import HOST_LOOPBACK_NAME
from stockade.integrations import export_ir
from stockade.integrations.codex_config import codex_decider
from stockade.integrations.srt import NetLists, SrtModel
from tests.integrations.helpers import GOLDEN, check_golden, compile_text

EXAMPLES = ["coding-agent", "company-base", "read-only-reviewer", "team-overlay"]


def ir_of(lines: str):  # type: ignore[no-untyped-def]
    """A policy whose network block is ``lines`` (rules from line 3 on)."""
    return compile_text("filesystem {\n    read /\n}\nnetwork {\n" + lines + "\n}\n")


def warned_lines(artifact) -> list[int]:  # type: ignore[no-untyped-def]
    return sorted({w.span.line for w in artifact.warnings if w.span and w.code == "X601"
                   and ("network" in w.message or "`allow" in w.message or "`deny" in w.message
                        or "`default" in w.message or "loopback" in w.message)})


def srt_net(artifact) -> tuple:  # type: ignore[no-untyped-def]
    net = artifact.data["network"]
    return net["allowedDomains"], net["deniedDomains"], net["allowLocalBinding"]


def claude_net(artifact) -> tuple:  # type: ignore[no-untyped-def]
    net = artifact.data["sandbox"]["network"]
    return net["allowedDomains"], net["deniedDomains"], net["allowLocalBinding"]


def codex_net(artifact) -> tuple:  # type: ignore[no-untyped-def]
    net = artifact.data["permissions"]["stockade"]["network"]
    return net["enabled"], net["domains"]


def cursor_net(artifact) -> str:  # type: ignore[no-untyped-def]
    return artifact.data["networkPolicy"]["default"]


# (target, network block, settings, warned lines)
CASES = [
    ("srt", "default deny\nallow github.com:443 *.npmjs.org", (["github.com:443", "*.npmjs.org"], [], False), []),
    ("srt", "default deny\nallow localhost github.com", (["github.com"], [], True), []),
    ("srt", "default deny\nallow localhost:3000", ([], [], False), [6]),
    ("srt", "default deny\nallow *.example.com\ndeny bad.example.com", (["*.example.com"], ["bad.example.com"], False),
     []),
    ("srt", "default deny\nallow 10.0.0.0/8 10.1.2.3", (["10.1.2.3"], [], False), [6]),
    ("srt", "default deny\nallow *", ([], [], True), [6]),
    ("srt", "default allow\ndeny 169.254.169.254", ([], ["169.254.169.254"], True), [5]),
    ("srt", "default deny\nallow host-loopback:5432", (["localhost:5432"], [], False), []),
    ("srt", "default deny\nallow localhost\ndeny 127.0.0.1:6379", ([], ["127.0.0.1:6379"], False), [6]),
    ("claude-settings", "default deny\nallow github.com *.npmjs.org\ndeny bad.npmjs.org",
     (["github.com", "*.npmjs.org"], ["bad.npmjs.org"], False), []),
    ("claude-settings", "default deny\nallow localhost pypi.org:443", (["pypi.org:443"], [], True), []),
    ("claude-settings", "default allow", ([], [], True), [5]),
    ("codex-config", "default deny\nallow github.com pypi.org", (True, {"github.com": "allow", "pypi.org": "allow"}),
     []),
    ("codex-config", "default deny\nallow github.com:443", (False, {}), [6]),
    ("codex-config", "default deny\nallow *.npmjs.org", (False, {}), [6]),
    ("codex-config", "default deny\nallow *.npmjs.org npmjs.org\ndeny bad.npmjs.org",
     (True, {"*.npmjs.org": "allow", "npmjs.org": "allow", "bad.npmjs.org": "deny"}), []),
    ("codex-config", "default deny\nallow localhost", (False, {}), [6]),
    ("codex-config", "default allow", (False, {}), [5]),
    ("cursor", "default allow", "allow", [5]),
    ("cursor", "default allow\ndeny 169.254.169.254", "deny", [5]),
    ("cursor", "default deny\nallow github.com", "deny", [6]),
]

READERS = {"srt": srt_net, "claude-settings": claude_net, "codex-config": codex_net, "cursor": cursor_net}


@pytest.mark.parametrize("target, block, expected, lines", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_network_export(target: str, block: str, expected: object, lines: list[int]) -> None:
    artifact = export_ir(ir_of(block), target)
    assert READERS[target](artifact) == expected
    assert warned_lines(artifact) == lines


@pytest.mark.parametrize("example", EXAMPLES)
def test_codex_config_golden(example: str) -> None:
    from stockade.compiler.pipeline import compile_policy
    from tests.integrations.helpers import CONTEXT

    artifact = export_ir(compile_policy(f"examples/{example}.policy", **CONTEXT).ir, "codex-config")
    check_golden(GOLDEN / "codex-config" / f"{example}.toml", artifact.text)
    import tomllib

    assert tomllib.loads(artifact.text) == artifact.data


# -- never looser -----------------------------------------------------------------------

HOSTS = ["github.com", "api.github.com", "npmjs.org", "registry.npmjs.org", "bad.npmjs.org", "example.com",
         "10.1.2.3", "169.254.169.254", "127.0.0.1", "localhost", HOST_LOOPBACK_NAME]
WORDS = ["github.com", "github.com:443", "*.github.com", "*.npmjs.org", "npmjs.org", "bad.npmjs.org",
         "bad.npmjs.org:443", "10.0.0.0/8", "10.1.2.3", "169.254.169.254", "localhost", "localhost:8080", "*",
         "*:443", "host-loopback:5432", "example.com"]


def _deciders(target: str, artifact):  # type: ignore[no-untyped-def]
    if target == "srt":
        return SrtModel.from_settings(artifact.data, "/home/dev", "/ws/app").host_allowed
    if target == "claude-settings":
        return SrtModel.from_settings({"network": artifact.data["sandbox"]["network"]}, "/home/dev",
                                      "/ws/app").host_allowed
    if target == "codex-config":
        net = artifact.data["permissions"]["stockade"]["network"]
        lists = NetLists(allowed=[d for d, v in net["domains"].items() if v == "allow"] if net["enabled"] else [],
                         denied=[d for d, v in net["domains"].items() if v == "deny"])
        return codex_decider(lists)
    return lambda host, port: artifact.data["networkPolicy"]["default"] == "allow" and \
        not host.startswith(("10.", "169.254.", "127.")) and host not in ("localhost", HOST_LOOPBACK_NAME)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["allow", "deny"]),
       st.lists(st.tuples(st.sampled_from(["allow", "deny"]), st.sampled_from(WORDS)), max_size=6,
                unique_by=lambda t: t[1]))
def test_exports_are_never_looser(default: str, rules: list[tuple[str, str]]) -> None:
    block = f"default {default}\n" + "\n".join(f"{action} {word}" for action, word in rules)
    ir = ir_of(block)
    for target in READERS:
        decide = _deciders(target, export_ir(ir, target))
        for host in HOSTS:
            for port in (None, 22, 443, 5432, 8080):
                if decide(host, port):
                    assert ir.network_access(host, port).allowed, (target, block, host, port)


def test_real_srt_schema_accepts_the_network_keys() -> None:
    """The keys written are those of srt's NetworkConfigSchema (allowLocalBinding included)."""
    data = json.loads((GOLDEN / "srt" / "coding-agent.json").read_text())
    assert set(data["network"]) == {"allowedDomains", "deniedDomains", "allowLocalBinding", "strictAllowlist"}


# -- importing the network keys back -------------------------------------------------------

# (srt network object, rules of the imported network block, X620 warnings)
IMPORT_CASES = [
    ({"allowedDomains": ["github.com"], "deniedDomains": []}, ["default deny", "allow   github.com"], 0),
    ({"allowedDomains": ["localhost:5432"], "deniedDomains": []}, ["default deny", "allow   host-loopback:5432"], 0),
    ({"allowedDomains": ["localhost"], "deniedDomains": []}, ["default deny"], 1),
    ({"allowedDomains": [], "deniedDomains": [], "allowLocalBinding": True}, ["default deny", "allow   localhost"], 0),
]


@pytest.mark.parametrize("network, rules, dropped", IMPORT_CASES)
def test_network_import(network: dict, rules: list[str], dropped: int) -> None:
    from stockade.integrations import import_text

    text = json.dumps({"network": network, "filesystem": {"denyRead": [], "allowRead": [], "allowWrite": ["."],
                                                          "denyWrite": []}})
    result = import_text(text, "srt", "s.json")
    block = result.text.split("network {", 1)[1].split("}", 1)[0]
    assert [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")] == rules
    assert sum(w.code == "X620" for w in result.warnings) == dropped
