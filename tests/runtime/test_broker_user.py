"""The network broker for a normal user, for real: ``stockade run`` (and ``session.run``) as
uid 65534 (``setpriv``), with a home, state and workspace of its own, against a server in a
network namespace this module creates.  The broker's listeners are put in the sandbox's
network namespace from the host, so no process of stockade runs inside; the sandbox cannot
close or replace them; a stopped broker refuses connections; a failed set-up never starts
the command.  The same driver also runs as root, so both users take the same path.

Needs root (to become uid 65534 and to make the test host), ``setpriv`` and bubblewrap, and
an interpreter uid 65534 can run stockade with: this one, or ``/usr/bin/python3`` of the same
version with this interpreter's third-party packages copied next to it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import box_root
from .netns_hosts import NetnsHost, netns_available

ROOT = Path(__file__).resolve().parents[2]
SETPRIV = shutil.which("setpriv")
AS_USER = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"]

pytestmark = pytest.mark.skipif(not netns_available() or SETPRIV is None or shutil.which("bwrap") is None
                                or shutil.which("curl") is None,
                                reason="needs root (to become uid 65534, ip netns), setpriv, bubblewrap and curl")

#: Runs ``session.run`` as the user it is started as (a JSON job on argv[1]; the outcome as JSON).
#: ``stop_after``: stop the broker once that file exists, then create ``go``; ``bad_spec``: one
#: listener the sandbox's namespace cannot have (the proxy's address and port a second time).
DRIVER = """\
import json, os, sys, threading, time
job = json.load(open(sys.argv[1]))
from stockade.runtime import broker as broker_mod
from stockade.runtime.session import run
from stockade.diagnostics import StockadeError
hooks = None
if job.get("stop_after"):
    def on_start(b):
        def stop():
            deadline = time.monotonic() + 60
            while not os.path.exists(job["stop_after"]) and time.monotonic() < deadline:
                time.sleep(0.05)
            b.stop()
            open(job["go"], "w").close()
        threading.Thread(target=stop, daemon=True).start()
    hooks = broker_mod.BrokerHooks(on_start=on_start)
if job.get("bad_spec"):  # (the broker's own specs, and those the run's standby opens before it)
    from stockade.runtime import netns
    specs = broker_mod.Broker.listen_specs
    broker_mod.Broker.listen_specs = lambda self: [*specs(self), specs(self)[0]]
    standby_specs = netns.listener_specs
    netns.listener_specs = lambda *args: [*standby_specs(*args), standby_specs(*args)[0]]
out, err = bytearray(), bytearray()
try:
    outcome = run(job["argv"], policy=job["policy"], workspace=job["ws"], audit=job["audit"], approve=True,
                  stdout=out.extend, stderr=err.extend, environ=job["env"], broker=hooks)
except StockadeError as exc:
    print(json.dumps({"error": [[d.code, d.message] for d in exc.diagnostics]}))
    sys.exit(0)
print(json.dumps({"ran": outcome.ran, "exit_status": outcome.exit_status, "blocked": list(outcome.blocked),
                  "out": out.decode(), "err": err.decode()}))
"""

#: Inside the sandbox: `python3 x.py ARGV...` runs ARGV (so that the analyzer, which cannot
#: see into the script, leaves every destination to the broker).
RUNNER = """\
import subprocess, sys
sys.exit(subprocess.run(sys.argv[1:]).returncode)
"""

#: Inside the sandbox: fetch a URL through the proxy twice, the second time after the broker
#: was stopped (``twice URL MARKER GO``), or try to take the proxy's port (``bind PORT``).
PROBE = r"""
import os, socket, sys, time, urllib.request
mode, args = sys.argv[1], sys.argv[2:]
if mode == "twice":
    url, marker, go = args
    print(urllib.request.urlopen(url, timeout=10).read().decode().strip(), flush=True)
    open(marker, "w").close()
    while not os.path.exists(go):
        time.sleep(0.05)
    try:
        print(urllib.request.urlopen(url, timeout=10).read().decode().strip())
    except Exception as exc:
        print(f"failed: {type(exc).__name__}: {exc}")
        sys.exit(3)
elif mode == "loop":
    url, marker, log = args[:3]  # (then a token naming the run)
    print(urllib.request.urlopen(url, timeout=10).read().decode().strip(), flush=True)
    open(marker, "w").close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            said = "ok"
        except Exception as exc:
            said = f"failed: {exc}"
        with open(log, "a") as out:
            out.write(said + "\n")
        time.sleep(0.05)
elif mode == "bind":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", int(args[0])))
        s.listen(1)
        print("bound")
    except OSError as exc:
        print(f"bind: {exc.strerror}")
    held = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            held += fd != str(s.fileno()) and os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass  # (the directory's own descriptor)
    print("sockets held:", held)
    print(urllib.request.urlopen(args[1], timeout=10).read().decode().strip())
"""


@dataclass
class World:
    """The module's world: the user's home and workspace, its interpreter, the test host."""

    root: Path
    home: Path
    ws: Path
    python: str
    env: dict[str, str]
    host: NetnsHost
    policy: Path

    def user(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``argv`` as uid 65534, in the workspace, with the user's environment."""
        assert SETPRIV is not None
        return subprocess.run([SETPRIV, *AS_USER, *argv], env=self.env, cwd=self.ws, capture_output=True,
                              text=True, timeout=timeout)

    def cli(self, *command: str) -> subprocess.CompletedProcess[str]:
        """``stockade run --policy P -- COMMAND`` as uid 65534."""
        return self.user(self.python, "-m", "stockade", "run", "--policy", str(self.policy), "--workspace",
                         str(self.ws), "--", *command)

    def drive(self, argv: list[str], as_root: bool = False, **job: object) -> dict:
        """``session.run(argv)`` through the driver, as uid 65534 (or as root)."""
        path = self.root / "job.json"
        path.write_text(json.dumps({"argv": argv, "policy": str(self.policy), "ws": str(self.ws),
                                    "audit": str(self.home / "audit.jsonl"), "env": self.env, **job}))
        os.chmod(path, 0o644)
        command = [self.python, str(self.root / "driver.py"), str(path)]
        if as_root:
            done = subprocess.run(command, env={**self.env, "HOME": str(self.root)}, cwd=self.ws,
                                  capture_output=True, text=True, timeout=120)
        else:
            done = self.user(*command)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


def _user_python(root: Path) -> tuple[str, str] | None:
    """An interpreter uid 65534 can run stockade with, and its ``PYTHONPATH``."""
    assert SETPRIV is not None
    probe = [SETPRIV, *AS_USER, sys.executable, "-c", "import lark, tree_sitter, tree_sitter_bash"]
    if subprocess.run(probe, capture_output=True, cwd="/").returncode == 0:
        return sys.executable, str(ROOT)
    python = "/usr/bin/python3"
    version = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                             text=True) if os.path.exists(python) else None
    if version is None or version.stdout.strip() != str(tuple(sys.version_info[:2])):
        return None
    import importlib.util

    lib = root / "pylib"
    for name in ("lark", "interegular", "tree_sitter", "tree_sitter_bash", "tree_sitter_powershell"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None:
            shutil.copytree(Path(spec.origin).parent, lib / name, ignore=shutil.ignore_patterns("__pycache__"))
    return python, f"{lib}:{ROOT}"


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    root = box_root()
    host = None
    try:
        found = _user_python(root)
        if found is None:
            pytest.skip(f"uid 65534 cannot run {sys.executable}, and /usr/bin/python3 is another version")
        python, path = found
        home = root / "home"
        ws = home / "ws"
        ws.mkdir(parents=True)
        (ws / "probe.py").write_text(PROBE)
        (ws / "x.py").write_text(RUNNER)
        (root / "driver.py").write_text(DRIVER)
        host = NetnsHost()
        site = root / "site"
        site.mkdir()
        (site / "hello.txt").write_text("hello from the test host\n")
        host.serve([sys.executable, "-m", "http.server", "80", "--bind", host.address, "--directory", str(site)],
                   80)
        policy = root / "user.policy"
        policy.write_text(f'policy "user"\nfilesystem {{\n    read /\n    write $WORKSPACE\n}}\n'
                          f'network {{\n    default deny\n    allow {host.address}:80\n}}\n'
                          'environment {\n    keep PATH HOME LANG\n}\ncommands {\n    unknown-effects allow\n}\n')
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "PYTHONPATH": path,
               **{name: str(home / name.lower()) for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME")}}
        for each in (root, *root.rglob("*")):
            os.chown(each, 65534, 65534)
        os.chmod(root, 0o755)
        os.chmod(ws, 0o777)  # (the root runs write there too)
        yield World(root, home, ws, python, env, host, policy)
    finally:
        if host is not None:
            host.close()
        shutil.rmtree(root, ignore_errors=True)


def test_cli_as_a_normal_user_reaches_an_allowed_host_through_the_proxy(world: World) -> None:
    url = f"http://{world.host.address}/hello.txt"
    done = world.cli("curl", "-fsS", "--max-time", "20", url)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello from the test host\n"
    done = world.cli("python3", "x.py", "curl", "-fsS", "--max-time", "20", "http://198.51.100.7/")  # no rule for it
    assert done.returncode != 0 and "hello" not in done.stdout
    assert "blocked: 198.51.100.7:80 (no rule allows it" in done.stderr and "default deny at" in done.stderr, \
        done.stderr
    records = [json.loads(line) for line in (world.home / "xdg_state_home" / "stockade" / "audit.jsonl")
               .read_text().splitlines()]
    net = [(r["decision"], r["host"]) for r in records if r.get("event") == "net"]
    assert ("allow", world.host.address) in net and ("deny", "198.51.100.7") in net


def test_no_process_of_stockade_runs_inside_the_sandbox(world: World) -> None:
    # every process the sandbox can see (its own pid namespace), by executable (bubblewrap's
    # init by its command line: the connect launcher's Landlock domain keeps its /proc/1/exe
    # out of reach; the launcher itself is gone, it became the command)
    done = world.cli("sh", "-c", "for p in /proc/[0-9]*; do readlink $p/exe || head -c 200 $p/cmdline | "
                     "tr '\\0' '\\n' | head -n 1; done")
    assert done.returncode == 0, done.stderr
    programs = {os.path.basename(line.strip()) for line in done.stdout.splitlines() if line.strip()}
    assert "bwrap" in programs and programs <= {"bwrap", "dash", "bash", "sh", "readlink", "head", "tr"}, programs


@pytest.mark.parametrize("as_root", [False, True], ids=["uid 65534", "root"])
def test_the_sandbox_cannot_close_or_replace_the_listeners(world: World, as_root: bool) -> None:
    url = f"http://{world.host.address}/hello.txt"
    result = world.drive(["python3", "probe.py", "bind", "3128", url], as_root=as_root)
    assert result.get("exit_status") == 0, result
    lines = result["out"].splitlines()
    assert lines == ["bind: Address already in use", "sockets held: 0", "hello from the test host"], result


@pytest.mark.parametrize("as_root", [False, True], ids=["uid 65534", "root"])
def test_a_stopped_broker_refuses_connections(world: World, as_root: bool) -> None:
    marker, go = world.ws / "first-done", world.ws / "go"
    for path in (marker, go):
        path.unlink(missing_ok=True)
    url = f"http://{world.host.address}/hello.txt"
    result = world.drive(["python3", "probe.py", "twice", url, str(marker), str(go)], as_root=as_root,
                         stop_after=str(marker), go=str(go))
    lines = result["out"].splitlines()
    assert lines[0] == "hello from the test host", result
    assert result["exit_status"] == 3 and lines[1].startswith("failed:") and (
        "refused" in lines[1].lower() or "function not implemented" in lines[1].lower()), result  # (ENOSYS: the handoff)


@pytest.mark.parametrize("as_root", [False, True], ids=["uid 65534", "root"])
def test_a_failed_set_up_never_starts_the_command(world: World, as_root: bool) -> None:
    marker = world.ws / "started"
    marker.unlink(missing_ok=True)
    result = world.drive(["sh", "-c", f"touch {marker}"], as_root=as_root, bad_spec=True)
    assert [code for code, _ in result.get("error", [])] == ["R508"], result
    (message,) = [message for _, message in result["error"]]
    assert "the command did not run" in message and "cannot listen inside the sandbox" in message, message
    assert not marker.exists()


def test_the_broker_killed_mid_run_takes_the_sandbox_with_it(world: World) -> None:
    marker, log = world.ws / "fetched", world.ws / "log"
    for path in (marker, log):
        path.unlink(missing_ok=True)
    url = f"http://{world.host.address}/hello.txt"
    assert SETPRIV is not None
    token = f"loop-{os.getpid()}-{id(world)}"
    proc = subprocess.Popen([SETPRIV, *AS_USER, world.python, "-m", "stockade", "run", "--policy", str(world.policy),
                             "--workspace", str(world.ws), "--", "python3", "probe.py", "loop", url, str(marker),
                             str(log), token], env=world.env, cwd=world.ws, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and "ok" in log.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert log.exists() and "ok" in log.read_text(), proc.stderr.read().decode() if proc.poll() else ""
    finally:
        proc.kill()  # SIGKILL: the broker and the run with it
        proc.communicate()
    deadline = time.monotonic() + 10

    def left() -> list[str]:  # the processes that carry the run's token
        found = []
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(entry)
            except OSError:
                pass
        return found
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left() == []  # the sandbox went with it (bubblewrap's --die-with-parent): nothing runs on
    size = log.stat().st_size
    time.sleep(0.3)
    assert log.stat().st_size == size  # no attempt after the kill: nothing is left to make one


def _held_sandbox(*command: str) -> tuple[subprocess.Popen[bytes], int, int]:
    """A bubblewrap sandbox held before ``command`` (``--block-fd``), its report's descriptor
    (``--info-fd``) and the descriptor that releases it."""
    info_read, info_write = os.pipe()
    block_read, block_write = os.pipe()
    argv = ["bwrap", "--unshare-user", "--disable-userns", "--unshare-net", "--unshare-pid", "--die-with-parent",
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--info-fd", str(info_write),
            "--block-fd", str(block_read), "--", *command]
    proc = subprocess.Popen(argv, pass_fds=(info_write, block_read), stdout=subprocess.PIPE)
    os.close(info_write)
    os.close(block_read)
    return proc, info_read, block_write


def test_sandbox_listeners_fall_back_to_the_next_set_that_opens() -> None:
    from stockade.runtime.broker import ListenSpec, SandboxListeners

    proc, info, block = _held_sandbox("cat", "/proc/net/tcp")
    try:
        unbindable = [ListenSpec("proxy", port=3128), ListenSpec("proxy", "192.0.2.1", 9)]  # not its address
        plain = [ListenSpec("proxy", port=3128), ListenSpec("proxy", port=1080)]
        helper = SandboxListeners(info, proc.pid, unbindable, fallbacks=[plain])
        listeners = helper.result()
        helper.reap()
        assert listeners is not None and helper.chosen == 1
        assert [sock.getsockname() for sock in listeners] == [("127.0.0.1", 3128), ("127.0.0.1", 1080)]
        os.write(block, b"G")
        out, _ = proc.communicate(timeout=30)
        assert out.count(b" 0A ") == 2  # the sandbox sees the two listeners (state LISTEN), and nothing else
        for sock in listeners:
            sock.close()
    finally:
        os.close(info)
        os.close(block)
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("as_root", [False, True], ids=["uid 65534", "root"])
def test_a_client_ignoring_the_proxy_is_captured_for_a_normal_user_too(world: World, as_root: bool) -> None:
    """The listeners are opened with the namespace's capabilities for every user: a client
    that ignores the proxy variables reaches the allowed address by capture (recorded as
    such), and an address no rule allows is refused with its record."""
    url = f"http://{world.host.address}/hello.txt?captured-{as_root}"
    result = world.drive(["python3", "x.py", "curl", "-fsS", "--max-time", "20", "--noproxy", "*", url],
                         as_root=as_root)
    assert (result.get("exit_status"), result.get("out")) == (0, "hello from the test host\n"), result
    refused = world.drive(["python3", "x.py", "curl", "-sS", "--max-time", "10", "--noproxy", "*",
                           f"http://198.51.100.9/?captured-{as_root}"], as_root=as_root)
    assert refused["exit_status"] != 0 and any("198.51.100.9:80" in line for line in refused["blocked"]), refused
    records = [json.loads(line) for line in (world.home / "audit.jsonl").read_text().splitlines()]
    net = [(r["protocol"], r["decision"], r["host"]) for r in records
           if r.get("event") == "net" and f"captured-{as_root}" in r.get("command", "")]
    assert ("capture", "allow", world.host.address) in net and ("capture", "deny", "198.51.100.9") in net, net


def test_the_connect_handoff_for_a_normal_user(world: World) -> None:
    """A normal user's run hands a `host-loopback` connection over too (the launcher built in
    its own cache, its filter and Landlock domain made without privilege), and its record has
    the kernel's byte counts."""
    from stockade.runtime.handoff import _compiler

    if _compiler(world.env) is None:
        pytest.skip("no C compiler")
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(100)
            conn.sendall(b"x" * 100000)

    threading.Thread(target=serve, daemon=True).start()
    policy = world.root / "loopback.policy"
    policy.write_text(world.policy.read_text().replace(f"allow {world.host.address}:80", f"allow host-loopback:{port}"))
    os.chmod(policy, 0o644)
    script = (f"import socket; s = socket.create_connection(('127.0.0.1', {port}), 10); s.sendall(b'hi'); n = 0\n"
              "while (c := s.recv(65536)): n += len(c)\nprint(n)")
    try:
        done = world.user(world.python, "-m", "stockade", "run", "--policy", str(policy), "--workspace",
                          str(world.ws), "--", "python3", "-c", script)
    finally:
        server.close()
    assert (done.returncode, done.stdout) == (0, "100000\n"), done.stderr
    records = [json.loads(line) for line in (world.home / "xdg_state_home" / "stockade" / "audit.jsonl")
               .read_text().splitlines()]
    (run_record,) = [r for r in records if r.get("event") == "run" and str(port) in r.get("command", "")]
    assert run_record["net_handoff"] == "handoff"
    (record,) = [r for r in records if r.get("event") == "net" and str(port) in r.get("command", "")]
    assert record["handed_over"] and record["decision"] == "allow"
    assert record.get("bytes") == "unknown" or (100000 <= record["bytes_received"] <= 100001
                                                and record["bytes_sent"] in (2, 3)), record
