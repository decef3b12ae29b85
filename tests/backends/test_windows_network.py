"""The Windows plan's network part: firewall rules limited to loopback, and everything beyond it
through the network broker on ``127.0.0.1:$BrokerPort`` (one line per policy)."""

from __future__ import annotations

import pytest

from stockade.backends.base import compile_ir
from stockade.compiler.ir import Context, FsRule, HostPattern, NetRule, Network, PolicyIR

CTX = Context("C:\\Users\\dev\\proj", "C:\\Users\\dev", "C:\\Users\\dev\\AppData\\Local\\Temp", "windows")
WS = CTX.workspace
LOCAL = NetRule("allow", HostPattern("localhost"))


def plan_of(net: Network) -> dict:
    return compile_ir(PolicyIR("n", CTX, filesystem=(FsRule("write", WS),), network=net), "windows").data


# (network block, mode, firewall rules, proxy variables set)
CASES = [
    (Network("deny", (LOCAL,)), "loopback", 2, False),
    (Network("deny", (LOCAL, NetRule("allow", HostPattern("localhost", port=8080)))), "loopback", 2, False),
    (Network("deny", (LOCAL, NetRule("allow", HostPattern("host", "github.com", 443)))), "broker", 2, True),
    (Network("deny", (LOCAL, NetRule("allow", HostPattern("domain", "npmjs.org")))), "broker", 2, True),
    (Network("deny", (LOCAL, NetRule("allow", HostPattern("cidr", "10.0.0.0/8")))), "broker", 2, True),
    (Network("allow"), "broker", 2, True),
    (Network("allow", (NetRule("deny", HostPattern("cidr", "169.254.169.254/32")),)), "broker", 2, True),
    (Network("allow", (NetRule("allow", HostPattern("cidr", "0.0.0.0/0")),
                       NetRule("allow", HostPattern("cidr", "::/0")))), "all", 0, False),
]


@pytest.mark.parametrize("net, mode, rules, proxied", CASES)
def test_network_plan(net: Network, mode: str, rules: int, proxied: bool) -> None:
    network = plan_of(net)["network"]
    assert (network["mode"], len(network["firewall_rules"]), bool(network["environment"])) == (mode, rules, proxied)
    assert (network["broker"] is not None) is proxied
    for rule in network["firewall_rules"]:  # every address but loopback, which the firewall exempts
        assert rule["action"] == "block"
        assert rule["remote_addresses"] == ["0.0.0.0-126.255.255.255", "128.0.0.0-255.255.255.255", "::",
                                            "::2-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"]
    if proxied:
        env = network["environment"]
        assert env["HTTPS_PROXY"] == "http://127.0.0.1:${BROKER_PORT}"
        assert env["ALL_PROXY"] == "socks5h://127.0.0.1:${BROKER_PORT}"
        assert "https_proxy" not in env  # Windows names are case-insensitive: one spelling each


def test_script_takes_the_broker_port_and_fails_closed_without_it() -> None:
    net = Network("deny", (LOCAL, NetRule("allow", HostPattern("host", "github.com", 443))))
    script = compile_ir(PolicyIR("n", CTX, filesystem=(FsRule("write", WS),), network=net), "windows-ps").text
    assert "[int]$BrokerPort = 0)" in script.split("param(", 1)[1].split("\n", 1)[0]
    assert "$environment['HTTPS_PROXY'] = 'http://127.0.0.1:' + [string]$BrokerPort" in script
    assert "$environment['ALL_PROXY'] = 'socks5h://127.0.0.1:' + [string]$BrokerPort" in script
    plain = compile_ir(PolicyIR("n", CTX, filesystem=(FsRule("write", WS),), network=Network("deny", (LOCAL,))),
                       "windows-ps").text
    assert "HTTPS_PROXY" not in plain
