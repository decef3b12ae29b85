"""The shared network plan: which policies go through the broker, the proxy variables, and the
warnings (``B330``) for rules a platform cannot enforce — never a silent downgrade."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stockade.backends.netplan import needs_broker, proxy_environment, unenforced_network_rules
from stockade.cli.cmd_check import broker_available
from stockade.compiler.ir import Context, HostPattern, NetRule, Network, Origin, PolicyIR

ROOT = Path(__file__).resolve().parents[2]
CTX = Context("/work/ws", "/home/dev", "/tmp", "linux")


def ir_of(default: str, *hosts: tuple[str, str, str, int | None]) -> PolicyIR:
    rules = tuple(NetRule(action, HostPattern(kind, value, port), origin=Origin("n.policy", i, 11))  # type: ignore[arg-type]
                  for i, (action, kind, value, port) in enumerate(hosts, 2))
    return PolicyIR("n", CTX, network=Network(default, rules, default_origin=Origin("n.policy", 1, 5)))  # type: ignore[arg-type]


# (default, rules, needs the broker in a network namespace, on a shared loopback)
BROKER_CASES = [
    ("deny", (), False, False),
    ("deny", (("allow", "localhost", "localhost", None),), False, False),
    ("deny", (("allow", "localhost", "localhost", 8080),), False, False),
    ("deny", (("deny", "host", "evil.example", None),), False, False),
    ("deny", (("allow", "host", "github.com", 443),), True, True),
    ("deny", (("allow", "domain", "npmjs.org", None),), True, True),
    ("deny", (("allow", "cidr", "10.0.0.0/8", None),), True, True),
    ("deny", (("allow", "any", "", None),), True, True),
    ("deny", (("allow", "host-loopback", "", 5432),), True, False),
    ("allow", (), True, True),
    ("allow", (("deny", "cidr", "169.254.169.254/32", None),), True, True),
]


@pytest.mark.parametrize("default, rules, namespaced, shared", BROKER_CASES)
def test_needs_broker(default: str, rules: tuple, namespaced: bool, shared: bool) -> None:
    ir = ir_of(default, *rules)
    assert (needs_broker(ir), needs_broker(ir, host_loopback_direct=True)) == (namespaced, shared)


def test_proxy_environment_spellings() -> None:
    env = proxy_environment(41234)
    assert env["HTTP_PROXY"] == env["http_proxy"] == env["HTTPS_PROXY"] == "http://127.0.0.1:41234"
    assert env["ALL_PROXY"] == env["all_proxy"] == "socks5h://127.0.0.1:41234"  # names resolved by the broker
    for name in ("npm_config_proxy", "npm_config_https_proxy", "YARN_HTTPS_PROXY", "PIP_PROXY", "CARGO_HTTP_PROXY"):
        assert env[name] == "http://127.0.0.1:41234", name
    assert env["NO_PROXY"] == env["no_proxy"] == "localhost,127.0.0.1,::1"


def test_every_rule_the_platform_cannot_enforce_is_warned_with_its_location() -> None:
    ir = ir_of("allow", ("allow", "localhost", "localhost", None), ("allow", "host", "github.com", 443),
               ("deny", "cidr", "169.254.169.254/32", None), ("allow", "domain", "npmjs.org", None))
    warnings = unenforced_network_rules(ir, broker_available=False, platform="win32")
    assert [(w.code, w.severity, w.span.line if w.span else None) for w in warnings] == [
        ("B330", "warning", 1), ("B330", "warning", 3), ("B330", "warning", 5)]
    assert "`default allow`" in warnings[0].message and "`allow github.com:443`" in warnings[1].message
    assert all("stricter than the policy" in w.message and "win32" in w.message for w in warnings)
    assert unenforced_network_rules(ir, broker_available=True, platform="linux") == []
    assert unenforced_network_rules(ir_of("deny", ("allow", "localhost", "localhost", None)), False, "win32") == []


@pytest.mark.skipif(broker_available(), reason="the broker runs here: nothing to warn about")
def test_check_warns_where_no_broker_runs(tmp_path: Path) -> None:
    policy = tmp_path / "net.policy"
    policy.write_text("network {\n    default deny\n    allow localhost github.com:443 *.npmjs.org\n}\n")
    text = subprocess.run([sys.executable, "-m", "stockade", "check", str(policy)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert text.returncode == 0
    assert [line.split(": warning")[0].rsplit(":", 2)[1:] for line in text.stderr.splitlines()
            if "warning[B330]" in line] == [["3", "21"], ["3", "36"]]
    data = json.loads(subprocess.run([sys.executable, "-m", "stockade", "check", str(policy), "--format", "json"],
                                     capture_output=True, text=True, cwd=ROOT, timeout=60).stdout)
    assert [w["code"] for w in data["results"][0]["warnings"]] == ["B330", "B330"]


@pytest.mark.parametrize("target", ["seatbelt", "windows"])
def test_artifacts_alone_warn_about_every_brokered_rule(target: str) -> None:
    from stockade.backends.base import compile_ir
    from stockade.compiler.ir import FsRule

    ctx = Context("C:\\w", "C:\\h", "C:\\t", "windows") if target == "windows" else Context("/w", "/h", "/t", "darwin")
    net = Network("allow", (NetRule("allow", HostPattern("localhost"), origin=Origin("n.policy", 2, 11)),
                            NetRule("allow", HostPattern("host", "github.com", 443), origin=Origin("n.policy", 3, 11)),
                            NetRule("deny", HostPattern("host", "evil.example"), origin=Origin("n.policy", 4, 10))),
                  default_origin=Origin("n.policy", 1, 5))
    ir = PolicyIR("n", ctx, filesystem=(FsRule("write", ctx.workspace), FsRule("read", "/")), network=net)
    brokered = [w.span.line for w in compile_ir(ir, target).warnings
                if w.code == "B321" and "network broker" in w.message and w.span]
    assert brokered == [1, 3]  # `default allow` and `allow github.com:443`; not localhost, not the deny
    quiet = compile_ir(ir, target, by_runtime=True).warnings
    assert not [w for w in quiet if "network broker" in w.message]
