"""Root is not root inside: with Stockade running as root (as the tests do here), a sandboxed
command gets no host-root power — no writable kernel knob under ``/proc/sys`` or ``/sys``
(the ``core_pattern`` pipe is host root), no setuid/setgid file left for a local user to run,
no reach into the caller's session keyring.

Every probe runs for real under bubblewrap, for every shape of policy the backend emits
(read-only, writable and minimal root; network unshared or all allowed; ``/proc`` denied;
rules that ask for ``write`` below ``/proc`` and ``/sys``; the coding-agent example).  A
kernel knob is probed by opening it ``O_WRONLY`` and closing it **without writing a byte**.
The keyring probe runs in a host helper process that first joins a new anonymous session
keyring of its own (the caller's real keyring is never touched) and adds a canary key to it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.backends.base import compile_ir
from stockade.compiler.ir import Context, FsRule, HostPattern, NetRule, Network, PolicyIR
from stockade.runtime.plan import strip_environment
from stockade.runtime.sandbox import harden_bwrap_argv
from tests.runtime.conftest import box_root, make_box

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("bwrap") is None,
                                reason="bubblewrap runs on Linux only")

# -- the probe: runs only inside the sandbox --------------------------------------------------

#: Kernel knobs that are host root (or host-wide damage) when writable.  Opened O_WRONLY and
#: closed at once: no byte is ever written.
KNOBS = (
    "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/kernel/randomize_va_space",
    "/proc/sys/vm/drop_caches", "/proc/sys/kernel/core_uses_pid", "/proc/sys/fs/binfmt_misc/register",
    "/proc/sys/kernel/hostname", "/proc/sys/net/ipv4/ip_forward", "/proc/sysrq-trigger",
    "/proc/irq/default_smp_affinity", "/proc/fs/nfsd/threads",
)
SYS_KNOBS = (
    "/sys/kernel/uevent_helper", "/sys/power/state", "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/kernel/profiling", "/sys/module/printk/parameters/time", "/sys/fs/cgroup/pids/tasks",
    "/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/unified/cgroup.procs", "/sys/fs/cgroup/cgroup.procs",
)
#: Read-only kernel files Docker masks.
MASKED = ("/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats",
          "/proc/timer_stats")
MASKED_DIRS = ("/proc/acpi", "/proc/scsi", "/proc/asound", "/sys/firmware", "/sys/devices/virtual/powercap")

PROBE = r"""
import ctypes, errno, json, os, stat, sys
out = {}
def err(exc):
    return errno.errorcode.get(exc.errno, str(exc.errno))
def wronly(path):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        return err(exc)
    os.close(fd)  # nothing written
    return "open"
def readable(path):
    try:
        if os.path.isdir(path):
            return "listed %d" % len(os.listdir(path))
        with open(path, "rb") as f:
            return "read %d" % len(f.read(4096))
    except OSError as exc:
        return err(exc)
knobs, sys_knobs, masked, masked_dirs = json.loads(sys.argv[1])
for knob in knobs:
    for prefix in ("", "/proc/1/root", "/proc/self/root"):
        out["knob " + prefix + knob] = wronly(prefix + knob)
for knob in sys_knobs:
    out["knob " + knob] = wronly(knob)
for path in masked + masked_dirs:
    out["masked " + path] = readable(path)

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"x86_64": dict(add_key=248, request_key=249, keyctl=250, mount=165, openat2=437, mknodat=259,
                     io_uring_setup=425, fchmodat2=452),
      "aarch64": dict(add_key=217, request_key=218, keyctl=219, mount=40, openat2=437, mknodat=33,
                      io_uring_setup=425, fchmodat2=452)}[os.uname().machine]
L = ctypes.c_long
def sc(name, *args):
    r = libc.syscall(L(NR[name]), *args)
    return r if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")

scratch = os.path.join(os.getcwd(), "root-probe")
os.makedirs(scratch, exist_ok=True)
# a second procfs or sysfs, where the first is read-only
out["mount proc"] = sc("mount", b"proc", scratch.encode(), b"proc", ctypes.c_ulong(0), None)
out["mount sysfs"] = sc("mount", b"sysfs", scratch.encode(), b"sysfs", ctypes.c_ulong(0), None)

# setuid / setgid files
target = os.path.join(scratch, "tool")
with open(target, "wb") as f:
    f.write(b"\x7fELF")
for mode in (0o4755, 0o2755, 0o6711):
    try:
        os.chmod(target, mode)
        out["chmod %o" % mode] = "%o" % stat.S_IMODE(os.stat(target).st_mode)
    except OSError as exc:
        out["chmod %o" % mode] = err(exc)
    os.chmod(target, 0o755)
try:
    fd = os.open(target, os.O_RDONLY)
    os.fchmod(fd, 0o4755)
    out["fchmod"] = "%o" % stat.S_IMODE(os.fstat(fd).st_mode)
except OSError as exc:
    out["fchmod"] = err(exc)
os.chmod(target, 0o755)
out["fchmodat2"] = sc("fchmodat2", L(-100), target.encode(), L(0o4755), L(0))
for name, mode in (("creat-suid", 0o4755), ("creat-sgid", 0o2755)):
    try:
        os.close(os.open(os.path.join(scratch, name), os.O_CREAT | os.O_WRONLY | os.O_EXCL, mode))
        out[name] = "%o" % stat.S_IMODE(os.stat(os.path.join(scratch, name)).st_mode)
    except OSError as exc:
        out[name] = err(exc)
out["mknodat"] = sc("mknodat", L(-100), os.path.join(scratch, "node").encode(), L(stat.S_IFREG | 0o4755), L(0))
out["openat2"] = sc("openat2", L(-100), os.path.join(scratch, "o2").encode(), ctypes.c_void_p(0), L(24))
out["io_uring"] = sc("io_uring_setup", L(1), ctypes.c_void_p(0))
try:  # file capabilities: a v2 `security.capability` with CAP_SETUID (needs CAP_SETFCAP, dropped)
    os.setxattr(target, "security.capability", bytes.fromhex("01000002" "80000000" "00000000" "00000000" "00000000"))
    out["setcap"] = "set"
except OSError as exc:
    out["setcap"] = err(exc)
out["plain chmod"] = (os.chmod(target, 0o700), "%o" % stat.S_IMODE(os.stat(target).st_mode))[1]

# keyrings (the helper put a canary key in this run's own session keyring)
out["keyring id"] = sc("keyctl", L(0), L(-3), L(0))  # KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING
found = sc("keyctl", L(10), L(-3), b"user", b"stockade-root-canary", L(0))  # KEYCTL_SEARCH
out["keyring search"] = found
if isinstance(found, int):
    buf = ctypes.create_string_buffer(64)
    n = sc("keyctl", L(11), L(found), buf, L(64))  # KEYCTL_READ
    out["keyring read"] = buf.raw[:n].decode() if isinstance(n, int) else n
out["request_key"] = sc("request_key", b"user", b"stockade-root-canary", None, L(0))
out["add_key"] = sc("add_key", b"user", b"stockade-root-added", b"x", L(1), L(-3))
try:
    with open("/proc/keys") as f:
        out["proc keys canary"] = "stockade-root-canary" in f.read()
except OSError as exc:
    out["proc keys canary"] = err(exc)
print("PROBE " + json.dumps(out))
"""

#: Run by the host helper: join a new anonymous session keyring (this helper process only;
#: the caller's keyring is untouched), add the canary key, then run the sandbox.
HELPER = r"""
import ctypes, json, os, sys
sys.path.insert(0, sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
L = ctypes.c_long
ring = libc.syscall(L(keyctl), L(1), None)  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
assert ring > 0, ctypes.get_errno()
key = libc.syscall(L(add_key), b"user", b"stockade-root-canary", b"root-canary-payload", L(19), L(-3))
assert key > 0, ctypes.get_errno()
from stockade.runtime.execute import run_confined
from stockade.runtime.limits import Limits
prefix, command, env = json.loads(sys.stdin.read())
out, err = bytearray(), bytearray()
result = run_confined(prefix, command, env, Limits(timeout=60), stdout=out.extend, stderr=err.extend)
print(json.dumps({"status": result.exit_status, "out": out.decode("utf-8", "replace"),
                  "err": err.decode("utf-8", "replace")[-3000:], "ring": ring}))
"""


# -- policy shapes -------------------------------------------------------------------------------

def _python_rules() -> tuple[FsRule, ...]:
    """What a minimal root needs to start this interpreter with ctypes."""
    paths = {"/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", sys.base_prefix,
             os.path.dirname(os.path.realpath(sys.executable))}
    return tuple(FsRule("read", p) for p in sorted(paths) if os.path.lexists(p))


SHAPES = {
    "read-root-no-network": lambda ws: ((FsRule("read", "/"), FsRule("write", ws)), Network("deny")),
    "read-root-all-network": lambda ws: ((FsRule("read", "/"), FsRule("write", ws)), Network("allow")),
    "write-root-all-network": lambda ws: ((FsRule("write", "/"),), Network("allow")),
    "write-root-host-allow-list": lambda ws: ((FsRule("write", "/"),),
                                              Network("deny", (NetRule("allow", HostPattern("host", "pypi.org")),))),
    "minimal-root-no-network": lambda ws: ((*_python_rules(), FsRule("write", ws)), Network("deny")),
    "minimal-root-all-network": lambda ws: ((*_python_rules(), FsRule("write", ws)), Network("allow")),
    "write-rules-below-proc-and-sys": lambda ws: ((FsRule("read", "/"), FsRule("write", ws), FsRule("write", "/proc"),
                                                   FsRule("write", "/proc/sys"), FsRule("write", "/proc/sys/kernel"),
                                                   FsRule("write", "/sys"), FsRule("write", "/sys/fs/cgroup"),
                                                   FsRule("read", "/proc/keys"), FsRule("read", "/sys/firmware")),
                                                  Network("allow")),
    "proc-denied": lambda ws: ((FsRule("read", "/"), FsRule("write", ws), FsRule("deny", "/proc")), Network("allow")),
}


def _prefix(tmp: Path, shape: str) -> tuple[list[str], str]:
    if shape == "coding-agent":
        box = make_box(tmp)
        return box.prefix, str(box.workspace)
    ws = tmp / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    rules, network = SHAPES[shape](str(ws))
    ir = PolicyIR("root-probe", Context(str(ws), str(tmp / "home"), str(tmp / "tmp")), filesystem=rules,
                  network=network)
    artifact = compile_ir(ir, "bwrap")
    return harden_bwrap_argv(strip_environment(artifact.data["argv"]), cwd=str(ws)), str(ws)


def probe(tmp: Path, shape: str) -> tuple[dict, int]:
    """Run the probe in a sandbox of ``shape`` from a helper with its own session keyring;
    the probe's findings and the helper's keyring id."""
    prefix, ws = _prefix(tmp, shape)
    command = [sys.executable, "-I", "-S", "-c", PROBE, json.dumps([KNOBS, SYS_KNOBS, MASKED, MASKED_DIRS])]
    done = subprocess.run([sys.executable, "-I", "-c", HELPER, str(ROOT)], cwd=ws, capture_output=True, text=True,
                          input=json.dumps([prefix, command, {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}]),
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    line = next((x for x in report["out"].splitlines() if x.startswith("PROBE ")), None)
    assert report["status"] == 0 and line is not None, report["err"]
    return json.loads(line[len("PROBE "):]), report["ring"]


@pytest.fixture(scope="module")
def probes() -> Iterator[dict[str, tuple[dict, int, Path]]]:
    """Every shape probed once (the tests below read the findings); the roots are kept
    until the module ends so that the tests can look at what the probes left."""
    roots: list[Path] = []
    found: dict[str, tuple[dict, int, Path]] = {}
    try:
        for shape in [*SHAPES, "coding-agent"]:
            root = box_root()
            roots.append(root)
            result, ring = probe(root, shape)
            found[shape] = (result, ring, root)
        yield found
    finally:
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)


ALL_SHAPES = [*SHAPES, "coding-agent"]


@pytest.mark.parametrize("shape", ALL_SHAPES)
def test_no_kernel_knob_is_writable(probes, shape: str) -> None:
    result = probes[shape][0]
    opened = sorted(name for name, value in result.items() if name.startswith("knob ") and value == "open")
    assert opened == [], f"writable inside the sandbox: {opened}"
    if shape != "proc-denied":  # the probe reached the knob: the test can fail
        assert result["knob /proc/sys/kernel/core_pattern"] in ("EROFS", "EACCES")
    assert result["mount proc"] == result["mount sysfs"] == "EPERM"


@pytest.mark.parametrize("shape", ALL_SHAPES)
def test_docker_masked_kernel_files_are_unreadable(probes, shape: str) -> None:
    result = probes[shape][0]
    leaked = {}
    for path in MASKED:
        value = result["masked " + path]
        if value.startswith("read "):
            leaked[path] = value
    for path in MASKED_DIRS:
        value = result["masked " + path]
        if value.startswith("listed ") and value != "listed 0":
            leaked[path] = value
    assert leaked == {}
    assert result["proc keys canary"] is not True


@pytest.mark.parametrize("shape", ALL_SHAPES)
def test_no_setuid_or_setgid_file_can_be_made(probes, shape: str) -> None:
    result, _, root = probes[shape]
    for name in ("chmod 4755", "chmod 2755", "chmod 6711", "fchmod", "fchmodat2", "creat-suid", "creat-sgid",
                 "mknodat"):
        assert result[name] in ("EPERM", "ENOSYS"), (name, result[name])  # ENOSYS: a kernel without fchmodat2
    assert result["openat2"] == "ENOSYS" and result["io_uring"] == "ENOSYS"
    assert result["setcap"] in ("EPERM", "EOPNOTSUPP"), result["setcap"]  # no capability to give a file
    assert result["plain chmod"] == "700"  # ordinary modes still work
    # and nothing the probe left on the host carries the bits (lstat of names the test chose)
    for ws in (root / "ws" / "root-probe", root / "home" / "ws" / "root-probe"):
        for name in ("tool", "creat-suid", "creat-sgid", "node"):
            try:
                mode = os.lstat(ws / name).st_mode
            except FileNotFoundError:
                continue
            assert not mode & (stat.S_ISUID | stat.S_ISGID), (ws / name, oct(mode))


@pytest.mark.parametrize("shape", ALL_SHAPES)
def test_the_session_keyring_is_out_of_reach(probes, shape: str) -> None:
    result, ring, _ = probes[shape]
    assert result["keyring id"] == "EPERM" != ring
    assert result["keyring search"] == result["request_key"] == result["add_key"] == "EPERM"
    assert "keyring read" not in result


def test_kernel_interface_rules_are_stricter_with_a_warning(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    rules, network = SHAPES["write-rules-below-proc-and-sys"](str(ws))
    ir = PolicyIR("t", Context(str(ws), str(tmp_path / "home"), str(tmp_path / "tmp")), filesystem=rules,
                  network=network)
    artifact = compile_ir(ir, "bwrap")
    argv = artifact.data["argv"]
    warned = {w.message.split("`")[1] for w in artifact.warnings if w.code == "B310"}
    assert {"/proc/sys", "/proc/sys/kernel", "/sys", "/sys/fs/cgroup"} <= warned
    assert "/proc/keys" in warned and "/sys/firmware" in warned
    binds = {argv[i + 2] for i, word in enumerate(argv) if word == "--bind"}
    assert not any(p == "/sys" or p.startswith(("/sys/", "/proc/")) for p in binds), binds
    if os.path.isdir("/proc/sys"):
        assert argv[argv.index("/proc/sys") - 1:][:3] == ["--ro-bind", "/proc/sys", "/proc/sys"]
    # a denied /proc stays denied: its kernel files are not bound back in
    rules, network = SHAPES["proc-denied"](str(ws))
    ir = PolicyIR("t", Context(str(ws), str(tmp_path / "home"), str(tmp_path / "tmp")), filesystem=rules,
                  network=network)
    argv = compile_ir(ir, "bwrap").data["argv"]
    assert "--proc" not in argv and not any(word.startswith("/proc/") for word in argv)
    # write / keeps /sys read-only
    ir = PolicyIR("t", Context(str(ws), str(tmp_path / "home"), str(tmp_path / "tmp")),
                  filesystem=(FsRule("write", "/"),), network=Network("allow"))
    artifact = compile_ir(ir, "bwrap")
    argv = artifact.data["argv"]
    assert "--seccomp" in argv
    if os.path.isdir("/sys"):
        assert any(w.code == "B310" and "`/sys`" in w.message for w in artifact.warnings)
        at = argv.index("--ro-bind", argv.index("--bind"))
        assert ["--ro-bind", "/sys", "/sys"] in [argv[i:i + 3] for i in range(at, len(argv))]


def test_stockade_run_with_all_network_gets_the_filter_fresh_and_cached(tmp_path: Path) -> None:
    """The CLI path (plan cache included) keeps the setuid refusal with `default allow`."""
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = tmp_path / "open.policy"
    policy.write_text('policy "open"\nfilesystem {\n    read /\n    write $WORKSPACE\n}\n'
                      'network {\n    default allow\n}\n')
    env = dict(os.environ, HOME=str(tmp_path), TMPDIR=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("STOCKADE_CACHE_DIR", None)
    env.pop("STOCKADE_AUDIT", None)
    script = ("import os,errno\nopen('t','w').close()\n"
              "try:\n    os.chmod('t', 0o4755); print('setuid', oct(os.stat('t').st_mode))\n"
              "except OSError as e:\n    print('refused', errno.errorcode[e.errno])\n"
              "print('core_pattern', 'open' if os.access('/proc/sys/kernel/core_pattern', os.W_OK) else 'ro')\n")
    for _ in range(2):  # the second run uses the cached plan
        (ws / "t").unlink(missing_ok=True)
        done = subprocess.run([sys.executable, "-m", "stockade", "run", "--policy", str(policy), "--workspace",
                               str(ws), "--approve", "--", "python3", "-I", "-S", "-c", script],
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["refused EPERM", "core_pattern ro"], done.stdout
        assert not os.lstat(ws / "t").st_mode & (stat.S_ISUID | stat.S_ISGID)


def test_as_root_host_unix_sockets_stay_refused_with_all_network(tmp_path: Path) -> None:
    """`network { default allow }` as root: a host unix socket (here one this test listens on,
    standing for `/run/docker.sock`) is still refused inside.  (All network goes through the
    network broker from the sandbox's own namespace, so the socket checks are there for every
    user, and the B316 warning is not needed.)"""
    import socket

    ws = tmp_path / "ws"
    ws.mkdir()
    policy = tmp_path / "open.policy"
    policy.write_text('policy "open"\nfilesystem {\n    read /\n    write $WORKSPACE\n}\n'
                      'network {\n    default allow\n}\n')
    from stockade.compiler.pipeline import compile_policy

    ir = compile_policy(str(policy), workspace=str(ws), home=str(tmp_path), tmpdir=str(tmp_path)).ir
    as_user = compile_ir(ir, "bwrap", as_root=False)
    as_root = compile_ir(ir, "bwrap", as_root=True)
    assert as_user.data["seccomp"] == as_root.data["seccomp"]  # with the socket checks
    assert as_user.data["broker"] == {"loopback": []}
    if os.geteuid() != 0:
        pytest.skip("the run part needs root")
    path = str(tmp_path / "host.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)
    env = dict(os.environ, HOME=str(tmp_path), TMPDIR=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("STOCKADE_CACHE_DIR", None)
    env.pop("STOCKADE_AUDIT", None)
    script = ("import socket\n"
              f"try:\n    socket.socket(socket.AF_UNIX).connect({path!r}); print('ESCAPED')\n"
              "except OSError as e:\n    print('refused', e.errno)\n")
    try:
        done = subprocess.run([sys.executable, "-m", "stockade", "run", "--policy", str(policy), "--workspace",
                               str(ws), "--approve", "--", "python3", "-I", "-S", "-c", script],
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["refused", "13"], done.stdout  # EACCES: the filter, not the mount
