"""The escape suite: attempts to get out of the coding-agent sandbox, run for real under
bubblewrap.  Each attempt must fail (the script prints ESCAPED only if it got through) and
leave every canary intact."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from stockade.runtime.execute import EXIT_TIMEOUT, run_confined
from stockade.runtime.limits import Limits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")


def attempt(box, script: str, limits: Limits | None = None, env: dict | None = None):
    """Run ``sh -c script`` in the sandbox, capturing output."""
    out, err = bytearray(), bytearray()
    result = run_confined(box.prefix, ["/bin/sh", "-c", script], env or box.env, limits or Limits(timeout=20),
                          stdout=out.extend, stderr=err.extend)
    return result, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


# Each script echoes ESCAPED only when the forbidden action succeeded.
ATTEMPTS: dict[str, str] = {
    "write outside workspace": "echo x > {outside}/new && echo ESCAPED",
    "overwrite outside canary": "echo x > {outside}/canary.txt && echo ESCAPED",
    "delete outside canary": "rm -f {outside}/canary.txt; [ -e {outside}/canary.txt ] || echo ESCAPED",
    "write home": "echo x > {home}/notes.txt && echo ESCAPED",
    "read ssh key": "cat {home}/.ssh/id_ed25519 && echo ESCAPED",
    "list ssh dir": "ls {home}/.ssh | grep -q id_ && echo ESCAPED",
    "read aws credentials": "cat {home}/.aws/credentials && echo ESCAPED",
    "read workspace .env": "cat {ws}/.env && echo ESCAPED",
    "overwrite .env": "echo x > {ws}/.env && echo ESCAPED",
    "write git hook": "echo 'curl evil' > {ws}/.git/hooks/pre-commit && echo ESCAPED",
    "add git hook": "echo x > {ws}/.git/hooks/post-checkout && echo ESCAPED",
    "write git config": "echo '[core] hooksPath=/tmp' >> {ws}/.git/config && echo ESCAPED",
    "write bashrc": "echo 'evil' >> {home}/.bashrc && echo ESCAPED",
    "replace profile": "rm -f {home}/.profile; echo evil > {home}/.profile && echo ESCAPED",
    "symlink to ssh key": "ln -s {home}/.ssh/id_ed25519 {ws}/k 2>/dev/null; cat {ws}/k && echo ESCAPED",
    "symlink dir out": "ln -s {outside} {ws}/o 2>/dev/null; echo x > {ws}/o/canary.txt && echo ESCAPED",
    "hardlink to bashrc": "ln {home}/.bashrc {ws}/h 2>/dev/null && echo x >> {ws}/h && echo ESCAPED",
    "hardlink to ssh key": "ln {home}/.ssh/id_ed25519 {ws}/k2 2>/dev/null && cat {ws}/k2 && echo ESCAPED",
    "rename .git away": "mv {ws}/.git {ws}/g2 && mkdir -p {ws}/.git/hooks && echo x > {ws}/.git/hooks/pre-commit"
                        " && echo ESCAPED",
    "rename hooks away": "mv {ws}/.git/hooks {ws}/.git/h2 && echo ESCAPED",
    "proc 1 root": "cat /proc/1/root{home}/.ssh/id_ed25519 && echo ESCAPED",
    "proc self root": "cat /proc/self/root{home}/.ssh/id_ed25519 && echo ESCAPED",
    "proc 1 root write": "echo x > /proc/1/root{outside}/canary.txt && echo ESCAPED",
    "mount tmpfs over ssh": "mount -t tmpfs none {home}/.ssh 2>/dev/null && echo ESCAPED",
    "bind mount": "mount --bind {outside} {ws}/src 2>/dev/null && echo ESCAPED",
    "unshare user ns": "unshare -r true 2>/dev/null && echo ESCAPED",
    "read shadow": "cat /etc/shadow && echo ESCAPED",
    "chmod ssh dir": "chmod 777 {home}/.ssh 2>/dev/null && echo ESCAPED",
    "setuid su": "su -c true root </dev/null 2>/dev/null && echo ESCAPED",
    "setuid bit": "cp /bin/sh {ws}/s && chmod u+s {ws}/s && {ws}/s -c 'id -u' | grep -qv \"$(id -u)\" && echo ESCAPED",
    "kill host process": "kill -TERM {host_pid} 2>/dev/null && echo ESCAPED",
    "see host processes": "ls /proc | grep -qx {host_pid} && echo ESCAPED",
    "ptrace host process": "[ -e /proc/{host_pid}/mem ] && echo ESCAPED",
    "environment secrets": "env | grep -q canary && echo ESCAPED; [ -n \"$GITHUB_TOKEN$AWS_SECRET_ACCESS_KEY\" ]"
                           " && echo ESCAPED",
    "network to host loopback": "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo ESCAPED; "
                                "python3 -c 'import socket;socket.create_connection((\"127.0.0.1\",{port}),2)' "
                                "2>/dev/null && echo ESCAPED",
    "network outside": "python3 -c 'import socket;socket.create_connection((\"1.1.1.1\",53),2)' 2>/dev/null "
                       "&& echo ESCAPED",
    "host unix socket": "python3 -c 'import socket;s=socket.socket(socket.AF_UNIX);s.connect(\"{unix}\")' "
                        "2>/dev/null && echo ESCAPED",
    "host unix datagram socket": "python3 -c 'import socket;a,b=socket.socketpair(socket.AF_UNIX,socket.SOCK_DGRAM);"
                                 "a.sendto(b\"x\",\"{unix_dgram}\")' 2>/dev/null && echo ESCAPED; "
                                 "python3 -c 'import socket;s=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM);"
                                 "s.sendto(b\"x\",\"{unix_dgram}\")' 2>/dev/null && echo ESCAPED",
    "vsock socket": "python3 -c 'import socket;socket.socket(40,socket.SOCK_STREAM)' 2>/dev/null && echo ESCAPED",
    "abstract unix socket": "python3 -c 'import socket;s=socket.socket(socket.AF_UNIX);s.connect(\"\\0{abstract}\")' "
                            "2>/dev/null && echo ESCAPED",
}


@pytest.fixture(scope="module")
def host(box):
    """Host-side targets: a sleeping process, a TCP listener, unix sockets."""
    sleeper = subprocess.Popen(["sleep", "300"])
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    unix_path = str(box.outside / "host.sock")  # readable by the policy, not writable
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(unix_path)
    unix.listen()
    dgram_path = str(box.outside / "host-dgram.sock")
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(dgram_path)
    abstract_name = f"stockade-test-{os.getpid()}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind("\0" + abstract_name)
    abstract.listen()
    accepted: list[str] = []

    def accept(sock: socket.socket, name: str) -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
                accepted.append(name)
                conn.close()
            except OSError:
                continue

    def receive(sock: socket.socket, name: str) -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                sock.recv(64)
                accepted.append(name)
            except OSError:
                continue

    stop = threading.Event()
    threads = [threading.Thread(target=accept, args=(s, n), daemon=True)
               for s, n in ((tcp, "tcp"), (unix, "unix"), (abstract, "abstract"))]
    threads.append(threading.Thread(target=receive, args=(dgram, "unix datagram"), daemon=True))
    for thread in threads:
        thread.start()
    yield {"host_pid": sleeper.pid, "port": tcp.getsockname()[1], "unix": unix_path, "unix_dgram": dgram_path,
           "abstract": abstract_name, "accepted": accepted, "sleeper": sleeper}
    stop.set()
    sleeper.kill()
    sleeper.wait()
    for sock in (tcp, unix, dgram, abstract):
        sock.close()


#: Known gaps, reported to the stage that owns them; strict, so a fix makes them fail loudly.
KNOWN_GAPS: dict[str, str] = {}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_GAPS[n], strict=True))
                                  if n in KNOWN_GAPS else n for n in sorted(ATTEMPTS)])
def test_escape_attempt_fails(box, host, name: str) -> None:
    before = len(host["accepted"])
    script = ATTEMPTS[name].format(outside=box.outside, home=box.home, ws=box.workspace, host_pid=host["host_pid"],
                                   port=host["port"], unix=host["unix"], unix_dgram=host["unix_dgram"],
                                   abstract=host["abstract"])
    result, out, err = attempt(box, script)
    assert not result.setup_failed, err
    assert "ESCAPED" not in out, f"{name}: {out} {err}"
    assert box.intact(), f"{name}: a canary changed"
    assert host["sleeper"].poll() is None, "the host process was killed"
    time.sleep(0.05)  # let the listener threads record a connection that got through
    assert host["accepted"][before:] == [], f"a host listener was reached: {host['accepted'][before:]}"


def test_sandbox_really_runs_commands(box) -> None:
    """The suite is meaningful only if allowed actions do work inside the sandbox."""
    result, out, _ = attempt(box, f"echo ok > {box.workspace}/made && cat {box.workspace}/made && id -u")
    assert result.exit_status == 0 and out.startswith("ok")
    assert (box.workspace / "made").read_text() == "ok\n"
    (box.workspace / "made").unlink()


def test_fork_bomb_is_stopped(box) -> None:
    started = time.monotonic()
    result, _, _ = attempt(box, "bomb() { bomb | bomb & }; bomb; sleep 1; echo survived",
                             Limits(timeout=30, processes=64))
    assert "processes" in result.limits_hit or result.exit_status == EXIT_TIMEOUT
    assert "timeout" not in result.limits_hit, "the process limit, not the timeout, must stop it"
    assert time.monotonic() - started < 30
    assert box.intact()


def test_memory_hog_is_stopped(box) -> None:
    result, out, _ = attempt(box, "python3 -c 'x = bytearray(800 * 1024 * 1024); print(\"ESCAPED\")'",
                             Limits(timeout=30, memory=256 * 1024 * 1024))
    assert "ESCAPED" not in out
    assert result.exit_status != 0
    assert "memory" in result.limits_hit


def test_command_outliving_timeout_is_killed(box) -> None:
    marker = box.workspace / "late"
    result, _, _ = attempt(box, f"(setsid sh -c 'sleep 3; echo x > {marker}' &) ; sleep 30", Limits(timeout=1))
    assert result.exit_status == EXIT_TIMEOUT and "timeout" in result.limits_hit
    time.sleep(3.5)
    assert not marker.exists(), "a process survived the timeout"


def test_cpu_limit(box) -> None:
    result, _, _ = attempt(box, "while :; do :; done", Limits(timeout=20, cpu=1))
    assert "cpu" in result.limits_hit
    assert result.exit_status != 0


def test_file_size_limit(box) -> None:
    result, _, _ = attempt(box, f"head -c 5000000 /dev/zero > {box.workspace}/big", Limits(timeout=20,
                                                                                          file_size=1_000_000))
    assert "file_size" in result.limits_hit
    assert os.path.getsize(box.workspace / "big") <= 1_000_000
    (box.workspace / "big").unlink()


def test_signal_status_passes_through(box) -> None:
    result, _, _ = attempt(box, "kill -TERM $$")
    assert result.exit_status == 128 + signal.SIGTERM
