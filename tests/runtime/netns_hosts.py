"""Test hosts in network namespaces: a veth pair per host, servers started inside, removed after.

:class:`NetnsHost` creates ``ip netns`` namespace with one end of a veth pair (the host
keeps the other end), addresses on both ends from a /30, and starts servers inside with
``ip netns exec``.  Everything it made is removed by :meth:`NetnsHost.close`.  Needs root
(``ip netns add``); the tests that use it are skipped without it.

Addresses come from the documentation ranges (``203.0.113.0/24``, ``198.51.100.0/24``): they
are no one's address on the internet and the broker treats them as ordinary (public)
addresses, unlike the private ranges.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path


def netns_available() -> bool:
    """Whether this process can make network namespaces with veth pairs (root and `ip`)."""
    return os.geteuid() == 0 and shutil.which("ip") is not None and sys.platform.startswith("linux")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


class NetnsHost:
    """One test host: a namespace reached from the host at ``address`` (see the module doc)."""

    def __init__(self, subnet: str = "203.0.113"):
        # subnet: the first three octets of a /24 (`203.0.113`); a random /30 of it is used
        # (so that concurrent test runs do not collide): the host gets .1 of it, the namespace .2
        import random

        base = 4 * random.randrange(1, 63)
        self.name = f"stk-{uuid.uuid4().hex[:8]}"
        self.host_if = f"sk{self.name[4:]}h"
        self.ns_if = f"sk{self.name[4:]}n"
        self.address = f"{subnet}.{base + 2}"
        self.gateway = f"{subnet}.{base + 1}"
        self.servers: list[subprocess.Popen[bytes]] = []
        _ip("netns", "add", self.name)
        try:
            _ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
            _ip("link", "set", self.ns_if, "netns", self.name)
            _ip("addr", "add", f"{self.gateway}/30", "dev", self.host_if)
            _ip("link", "set", self.host_if, "up")
            _ip("-n", self.name, "addr", "add", f"{self.address}/30", "dev", self.ns_if)
            _ip("-n", self.name, "link", "set", self.ns_if, "up")
            _ip("-n", self.name, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise

    def serve(self, argv: list[str], port: int, cwd: str | Path | None = None) -> subprocess.Popen[bytes]:
        """Start ``argv`` inside the namespace and wait until ``port`` accepts connections there."""
        proc = subprocess.Popen(["ip", "netns", "exec", self.name, *argv], cwd=cwd, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        self.servers.append(proc)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            probe = subprocess.run(["ip", "netns", "exec", self.name, sys.executable, "-c",
                                    f"import socket; socket.create_connection(('{self.address}', {port}), 1)"],
                                   capture_output=True, timeout=20)
            if probe.returncode == 0:
                return proc
            if proc.poll() is not None:
                raise RuntimeError(f"server {argv} ended: {proc.stderr.read().decode() if proc.stderr else ''}")
            time.sleep(0.1)
        raise RuntimeError(f"server {argv} did not listen on {port}")

    def close(self) -> None:
        """Stop the servers, remove the namespace and the veth pair."""
        for proc in self.servers:
            proc.kill()
            proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()
        self.servers = []
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True, timeout=20)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=20)
