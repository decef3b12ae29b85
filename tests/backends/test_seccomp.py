"""The seccomp filter of every bubblewrap sandbox (host unix sockets without all network;
setuid/setgid modes, keyrings, openat2 and io_uring always): its BPF program (decoded and
run by a small classic-BPF interpreter here), how the bubblewrap backend emits it, how the
runtime supplies it to bwrap, and — for real, under bwrap — that it works."""

from __future__ import annotations

import base64
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stockade.backends import seccomp as S
from stockade.backends.base import compile_ir
from stockade.compiler.ir import Context, FsRule, HostPattern, NetRule, Network, PolicyIR
from stockade.diagnostics import StockadeError

ROOT = Path(__file__).resolve().parents[2]
BWRAP = shutil.which("bwrap")
LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux") or BWRAP is None,
                                reason="bubblewrap runs on Linux only")


def _here() -> S.Arch | None:
    try:
        return S.ARCHES[S.arch_name()]
    except StockadeError:
        return None


HERE = _here()

AUDIT_ARCH_I386 = 0x40000003
AUDIT_ARCH_ARM = 0x40000028
AF_INET, AF_INET6, AF_NETLINK = 2, 10, 16
SOCK_DGRAM, SOCK_RAW = 2, 3
SOCK_NONBLOCK, SOCK_CLOEXEC = 0o4000, 0o2000000

ALLOW = S.SECCOMP_RET_ALLOW
KILL = S.SECCOMP_RET_KILL_PROCESS
EACCES = S.SECCOMP_RET_ERRNO | 13
ENOSYS = S.SECCOMP_RET_ERRNO | 38
EPERM = S.SECCOMP_RET_ERRNO | 1
O_RDONLY, O_WRONLY, O_RDWR, O_EXCL, O_TRUNC, O_DIRECTORY = 0, 1, 2, 0o200, 0o1000, 0o200000
O_TMPFILE = 0o20000000 | O_DIRECTORY
AT_FDCWD = -100


# -- a classic BPF interpreter (only what a seccomp filter may use) --------------------------

def run_filter(insns: list[S.Insn], nr: int, arch: int, *args: int) -> int:
    """The action the kernel would take for a system call (``struct seccomp_data``)."""
    full = list(args) + [0] * (6 - len(args))
    data = (nr.to_bytes(4, "little", signed=nr < 0) + arch.to_bytes(4, "little") + (0x1234).to_bytes(8, "little")
            + b"".join((a & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little") for a in full))
    acc, pc, steps = 0, 0, 0
    while True:
        steps += 1
        assert steps <= len(insns), "a classic BPF program only jumps forward"
        insn = insns[pc]
        if insn.code == S.LD_ABS:
            assert insn.k % 4 == 0 and insn.k + 4 <= len(data)
            acc = int.from_bytes(data[insn.k:insn.k + 4], "little")
            pc += 1
        elif insn.code == S.AND:
            acc &= insn.k
            pc += 1
        elif insn.code in (S.JEQ, S.JGE):
            taken = acc == insn.k if insn.code == S.JEQ else acc >= insn.k
            pc += 1 + (insn.jt if taken else insn.jf)
        elif insn.code == S.RET:
            return insn.k
        else:
            raise AssertionError(f"unexpected opcode {insn.code:#x} at {pc}")


@pytest.fixture(params=sorted(S.ARCHES))
def arch(request) -> S.Arch:
    return S.ARCHES[request.param]


@pytest.fixture(params=[True, False], ids=["sockets", "all-network"])
def sockets(request) -> bool:
    return request.param


def _insns(arch: S.Arch, sockets: bool = True) -> list[S.Insn]:
    return S.decode(S.program(arch.name, sockets))


def _special(arch: S.Arch) -> set[int]:
    """Every system call number the filter looks at."""
    return {arch.socket, arch.socketpair, *arch.io_uring, arch.openat2, *arch.keyring,
            *(nr for nr, _ in arch.chmods), *(nr for nr, _, _ in arch.creates)}


def test_program_is_well_formed(arch: S.Arch, sockets: bool) -> None:
    insns = _insns(arch, sockets)
    assert len(S.program(arch.name, sockets)) == 8 * len(insns) and len(insns) < 64
    # the architecture is checked first, and a mismatch kills the process
    assert insns[0] == S.Insn(S.LD_ABS, 0, 0, S.OFFSET_ARCH)
    assert insns[1].code == S.JEQ and insns[1].k == arch.audit_arch and insns[1].jt == 0
    assert insns[2 + insns[1].jf] == S.Insn(S.RET, 0, 0, KILL)
    assert insns[2] == S.Insn(S.LD_ABS, 0, 0, S.OFFSET_NR)
    for pc, insn in enumerate(insns):
        if insn.code in (S.JEQ, S.JGE):
            assert pc + 1 + max(insn.jt, insn.jf) < len(insns)
    assert insns[-1].code == S.RET
    assert {insn.code for insn in insns} <= {S.LD_ABS, S.AND, S.JEQ, S.JGE, S.RET}
    assert S.program(arch.name, sockets) == S.program(arch.name, sockets)  # deterministic
    assert S.program(arch.name) == S.program(arch.name, True) != S.program(arch.name, False)


def test_known_constants() -> None:
    x86, arm = S.ARCHES["x86_64"], S.ARCHES["aarch64"]
    assert (x86.audit_arch, x86.socket, x86.socketpair) == (0xC000003E, 41, 53)
    assert (arm.audit_arch, arm.socket, arm.socketpair) == (0xC00000B7, 198, 199)
    assert x86.io_uring == arm.io_uring == (425, 426, 427)
    assert x86.openat2 == arm.openat2 == 437
    # add_key, request_key, keyctl
    assert (x86.keyring, arm.keyring) == ((248, 249, 250), (217, 218, 219))
    # chmod 90/1 fchmod 91/1 fchmodat 268/2 fchmodat2 452/2 (nr / mode argument)
    assert x86.chmods == ((90, 1), (91, 1), (268, 2), (452, 2))
    assert arm.chmods == ((52, 1), (53, 2), (452, 2))  # asm-generic: no chmod
    # open 2 (flags 1, mode 2), openat 257 (2, 3), creat 85 (mode 1), mknod 133 (1), mknodat 259 (2)
    assert x86.creates == ((2, 1, 2), (257, 2, 3), (85, -1, 1), (133, -1, 1), (259, -1, 2))
    assert arm.creates == ((56, 2, 3), (33, -1, 2))  # openat, mknodat
    assert (S.O_CREAT, S.O_TMPFILE_BIT, S.S_ISUID, S.S_ISGID) == (0o100, 0o20000000, 0o4000, 0o2000)


def test_setid_modes_are_refused_by_every_chmod(arch: S.Arch, sockets: bool) -> None:
    insns = _insns(arch, sockets)
    for nr, mode_arg in arch.chmods:
        for mode in (0o4755, 0o2755, 0o6755, 0o4000, 0o2000, 0o7777, 0o104755, 0xFFFF0000 | 0o4000,
                     (1 << 40) | 0o2644):
            args = [AT_FDCWD, 0x1000, 0, 0]
            args[mode_arg] = mode
            assert run_filter(insns, nr, arch.audit_arch, *args) == EPERM, (nr, oct(mode))
        for mode in (0o755, 0o644, 0o1777, 0o777, 0, 0o100755, (1 << 40) | 0o755):  # sticky is fine
            args = [AT_FDCWD, 0x1000, 0, 0]
            args[mode_arg] = mode
            assert run_filter(insns, nr, arch.audit_arch, *args) == ALLOW, (nr, oct(mode))


def test_creating_a_file_with_setid_modes_is_refused(arch: S.Arch, sockets: bool) -> None:
    insns = _insns(arch, sockets)
    for nr, flags_arg, mode_arg in arch.creates:
        def action(flags: int, mode: int, nr: int = nr, flags_arg: int = flags_arg, mode_arg: int = mode_arg) -> int:
            args = [AT_FDCWD, 0x1000, 0, 0]
            if flags_arg >= 0:
                args[flags_arg] = flags
            args[mode_arg] = mode
            return run_filter(insns, nr, arch.audit_arch, *args)

        for flags in (S.O_CREAT | O_WRONLY, S.O_CREAT | O_EXCL | O_RDWR | O_TRUNC, O_TMPFILE | O_RDWR,
                      (1 << 33) | S.O_CREAT):
            assert action(flags, 0o4755) == action(flags, 0o2711) == action(flags, 0o106755) == EPERM, (nr, flags)
            assert action(flags, 0o644) == action(flags, 0o1777) == action(flags, 0o100600) == ALLOW, (nr, flags)
        if flags_arg >= 0:
            # without O_CREAT/O_TMPFILE the kernel ignores the mode, and so does the filter
            for flags in (O_RDONLY, O_RDWR | O_TRUNC, O_DIRECTORY, O_EXCL, (1 << 33) | O_WRONLY):
                assert action(flags, 0o4755) == action(flags, 0xFFFFFFFF) == ALLOW, (nr, flags)


def test_openat2_falls_back_and_keyrings_are_refused(arch: S.Arch, sockets: bool) -> None:
    insns = _insns(arch, sockets)
    # openat2's mode is in a struct the filter cannot read: ENOSYS, so libc uses openat
    assert run_filter(insns, arch.openat2, arch.audit_arch, AT_FDCWD, 0x1000, 0x2000, 24) == ENOSYS
    for nr in arch.keyring:  # add_key, request_key, keyctl: the caller's keyrings are not reachable
        for args in ((0, -3 & 0xFFFFFFFF, 0), (1, 0, 0), (0x1000, 0x2000, 0x3000, 4, -3 & 0xFFFFFFFF)):
            assert run_filter(insns, nr, arch.audit_arch, *args) == EPERM, nr


def test_unix_and_vsock_sockets_are_refused(arch: S.Arch) -> None:
    insns = _insns(arch)
    for kind in (S.SOCK_STREAM, SOCK_DGRAM, S.SOCK_SEQPACKET, S.SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK):
        assert run_filter(insns, arch.socket, arch.audit_arch, S.AF_UNIX, kind, 0) == EACCES
        assert run_filter(insns, arch.socket, arch.audit_arch, S.AF_VSOCK, kind, 0) == EACCES
    # the kernel reads `domain` as an int: high bits cannot smuggle AF_UNIX past the filter
    assert run_filter(insns, arch.socket, arch.audit_arch, (7 << 32) | S.AF_UNIX, 1, 0) == EACCES
    for family in (AF_INET, AF_INET6, AF_NETLINK, 0, 0xFFFFFFFF):
        assert run_filter(insns, arch.socket, arch.audit_arch, family, S.SOCK_STREAM, 0) == ALLOW


def test_socketpair_keeps_local_pipes(arch: S.Arch) -> None:
    insns = _insns(arch)
    for kind in (S.SOCK_STREAM, S.SOCK_SEQPACKET, S.SOCK_STREAM | SOCK_CLOEXEC, S.SOCK_SEQPACKET | SOCK_NONBLOCK):
        assert run_filter(insns, arch.socketpair, arch.audit_arch, S.AF_UNIX, kind, 0, 0) == ALLOW
    # a datagram pair could sendto() any host socket path (SOCK_RAW is a datagram for AF_UNIX)
    for kind in (SOCK_DGRAM, SOCK_DGRAM | SOCK_CLOEXEC, SOCK_RAW):
        assert run_filter(insns, arch.socketpair, arch.audit_arch, S.AF_UNIX, kind, 0, 0) == EACCES
    assert run_filter(insns, arch.socketpair, arch.audit_arch, AF_INET, SOCK_DGRAM, 0, 0) == ALLOW


def test_io_uring_is_unavailable(arch: S.Arch, sockets: bool) -> None:
    insns = _insns(arch, sockets)
    for nr in arch.io_uring:  # its openat and socket operations would bypass the filter
        assert run_filter(insns, nr, arch.audit_arch, 8, 0) == ENOSYS


def test_everything_else_is_allowed(arch: S.Arch, sockets: bool) -> None:
    insns = _insns(arch, sockets)
    special = _special(arch)
    for nr in range(600):
        if nr not in special:
            assert run_filter(insns, nr, arch.audit_arch, S.AF_UNIX, SOCK_DGRAM, 0o6777, 0o6777) == ALLOW, nr


def test_with_all_network_sockets_are_not_checked(arch: S.Arch) -> None:
    insns = _insns(arch, sockets=False)
    for kind in (S.SOCK_STREAM, SOCK_DGRAM):
        assert run_filter(insns, arch.socket, arch.audit_arch, S.AF_UNIX, kind, 0) == ALLOW
        assert run_filter(insns, arch.socket, arch.audit_arch, S.AF_VSOCK, kind, 0) == ALLOW
        assert run_filter(insns, arch.socketpair, arch.audit_arch, S.AF_UNIX, kind, 0, 0) == ALLOW
    assert S.EACCES not in {insn.k & 0xFFFF for insn in insns if insn.code == S.RET and insn.k != ALLOW}


def test_other_abis_are_killed(arch: S.Arch, sockets: bool) -> None:
    insns = _insns(arch, sockets)
    other = next(a for a in S.ARCHES.values() if a is not arch)
    for audit in (AUDIT_ARCH_I386, AUDIT_ARCH_ARM, other.audit_arch, 0):
        assert run_filter(insns, 0, audit) == KILL
        assert run_filter(insns, arch.socket, audit, S.AF_UNIX, 1, 0) == KILL


def test_x32_system_calls_are_killed_on_x86_64() -> None:
    x86 = S.ARCHES["x86_64"]
    insns = _insns(x86)
    assert run_filter(insns, S.X32_SYSCALL_BIT | x86.socket, x86.audit_arch, S.AF_UNIX, 1, 0) == KILL
    assert run_filter(insns, S.X32_SYSCALL_BIT | 0, x86.audit_arch) == KILL
    assert run_filter(insns, -1, x86.audit_arch) == KILL  # 0xffffffff is above the bit too
    # aarch64 has no x32 ABI: no such check, an unknown number is left to the kernel (ENOSYS)
    arm = S.ARCHES["aarch64"]
    assert run_filter(_insns(arm), S.X32_SYSCALL_BIT, arm.audit_arch) == ALLOW


def test_unknown_architecture_is_an_error_not_a_missing_filter() -> None:
    for machine in ("riscv64", "i686", "aarch64_be", "ppc64le", ""):
        with pytest.raises(StockadeError) as err:
            S.arch_name(machine)
        assert err.value.diagnostics[0].code == "B309"
        assert f"`{machine}`" in err.value.diagnostics[0].message
    assert S.arch_name("AMD64") == "x86_64" and S.arch_name("arm64") == "aarch64"


def test_placeholder_round_trip_and_malformed_ones(arch: S.Arch) -> None:
    word = S.placeholder(arch.name)
    assert word.startswith(S.PLACEHOLDER_PREFIX) and not word.isdigit()
    assert S.parse_placeholder(word) == (arch.name, S.program(arch.name))
    other = next(a for a in S.ARCHES if a != arch.name)
    bad = [
        "3",
        S.PLACEHOLDER_PREFIX + "x86_64",
        S.PLACEHOLDER_PREFIX + "mips:" + S.encoded_program(arch.name),
        S.PLACEHOLDER_PREFIX + f"{arch.name}:not base64!",
        S.PLACEHOLDER_PREFIX + f"{arch.name}:" + base64.b64encode(b"1234567").decode(),
        S.PLACEHOLDER_PREFIX + f"{arch.name}:",
        S.PLACEHOLDER_PREFIX + f"{other}:" + S.encoded_program(arch.name),  # label and program disagree
    ]
    for word in bad:
        with pytest.raises(ValueError):
            S.parse_placeholder(word)


# -- the bubblewrap backend ---------------------------------------------------------------------

def _ir(tmp: Path, network: Network) -> PolicyIR:
    return PolicyIR("t", Context(str(tmp), str(tmp / "home"), str(tmp / "tmp")),
                    filesystem=(FsRule("read", "/"), FsRule("write", str(tmp))), network=network)


@pytest.mark.parametrize("network, sockets", [
    (Network("allow"), True),  # all network goes through the broker: host sockets stay refused
    (Network("deny", (NetRule("allow", HostPattern("any")),)), True),
    (Network("deny"), True),
    (Network("deny", (NetRule("allow", HostPattern("host", "github.com", 443)),)), True),
    (Network("deny", (NetRule("allow", HostPattern("localhost")),)), True),
    (Network("allow", (NetRule("deny", HostPattern("host", "evil.example")),)), True),
])
def test_backend_always_adds_the_filter_with_socket_checks_unless_all_network(tmp_path: Path, network: Network,
                                                                             sockets: bool) -> None:
    artifact = compile_ir(_ir(tmp_path, network), "bwrap", seccomp_arch="aarch64", as_root=False)
    argv = artifact.data["argv"]
    assert "--seccomp" in argv and ("--unshare-net" in argv) is sockets
    word = argv[argv.index("--seccomp") + 1]
    assert word == S.placeholder("aarch64", sockets)
    assert base64.b64decode(artifact.data["seccomp"]) == S.program("aarch64", sockets)
    assert artifact.data["seccomp_arch"] == "aarch64"
    assert argv.index("--seccomp") < argv.index("--") == len(argv) - 1
    # the text names the placeholder and says how to supply the filter by hand
    assert word in artifact.text and artifact.data["seccomp"] in artifact.text.split("bwrap \\")[0]


def test_backend_refuses_an_architecture_without_filter(tmp_path: Path) -> None:
    with pytest.raises(StockadeError) as err:
        compile_ir(_ir(tmp_path, Network("deny")), "bwrap", seccomp_arch="riscv64")
    assert err.value.diagnostics[0].code == "B309"
    # all network allowed goes through the broker from the sandbox's own namespace: the
    # socket checks are needed there too, as root or not
    for as_root in (True, False):
        with pytest.raises(StockadeError) as err:
            compile_ir(_ir(tmp_path, Network("allow")), "bwrap", seccomp_arch="riscv64", as_root=as_root)
        assert err.value.diagnostics[0].code == "B309"


def test_backend_defaults_to_this_machine(tmp_path: Path) -> None:
    if HERE is None:
        pytest.skip("this machine has no seccomp filter")
    assert compile_ir(_ir(tmp_path, Network("deny")), "bwrap").data["seccomp_arch"] == HERE.name


# -- the runtime: supplying the filter ----------------------------------------------------------

def test_supply_replaces_the_placeholder_with_a_descriptor_holding_the_program() -> None:
    from stockade.runtime.sandbox import supply_seccomp

    if HERE is None:
        pytest.skip("this machine has no seccomp filter")
    argv = ["bwrap", "--unshare-net", "--seccomp", S.placeholder(HERE.name), "--"]
    out, fds = supply_seccomp(argv)
    try:
        assert len(fds) == 1 and out == ["bwrap", "--unshare-net", "--seccomp", str(fds[0]), "--"]
        assert os.read(fds[0], 65536) == S.program(HERE.name)
    finally:
        for fd in fds:
            os.close(fd)
    assert supply_seccomp(["bwrap", "--unshare-net", "--"]) == (["bwrap", "--unshare-net", "--"], [])


@pytest.mark.parametrize("argv, message", [
    (["bwrap", "--seccomp", "7", "--"], "names no descriptor"),
    (["bwrap", "--add-seccomp-fd", "7", "--"], "names no descriptor"),
    (["bwrap", "--seccomp", S.PLACEHOLDER_PREFIX + "x86_64:AAAA", "--"], "malformed"),
    (["bwrap", "--setenv", S.placeholder("x86_64"), "x", "--seccomp", "9", "--"], "not the argument"),
])
def test_supply_refuses_an_argv_whose_filter_is_not_supplied(argv: list[str], message: str) -> None:
    from stockade.runtime.sandbox import supply_seccomp

    with pytest.raises(StockadeError) as err:
        supply_seccomp(argv)
    assert err.value.diagnostics[0].code == "R510" and message in err.value.diagnostics[0].message
    assert supply_seccomp(["bwrap", "--seccomp", "7", "--"], supplied=[7])[0][2] == "7"


def test_supply_refuses_a_filter_for_another_architecture() -> None:
    from stockade.runtime.sandbox import supply_seccomp

    if HERE is None:
        pytest.skip("this machine has no seccomp filter")
    other = next(a for a in S.ARCHES if a != HERE.name)
    with pytest.raises(StockadeError) as err:
        supply_seccomp(["bwrap", "--seccomp", S.placeholder(other), "--"])
    assert err.value.diagnostics[0].code == "R510" and f"`{other}`" in err.value.diagnostics[0].message


def test_the_plan_keeps_the_filter(tmp_path: Path) -> None:
    from stockade.runtime.plan import build_plan
    from stockade.runtime.sandbox import harden_bwrap_argv

    ir = _ir(tmp_path, Network("deny"))
    artifact = compile_ir(ir, "bwrap", seccomp_arch="x86_64")
    import marshal

    plan = marshal.loads(marshal.dumps(build_plan(ir, artifact, "bwrap", {})))  # as the cache stores it
    argv = harden_bwrap_argv(plan["argv"], cwd=str(tmp_path))
    assert argv[argv.index("--seccomp") + 1] == S.placeholder("x86_64")
    assert not any(path.startswith(S.PLACEHOLDER_PREFIX) for path in plan["facts"])
    if S.supported_arch() == "x86_64":  # the program is checked once, when the plan is made
        assert plan["seccomp"] == {S.placeholder("x86_64"): S.program("x86_64")}
        assert plan["machine"] == os.uname().machine


def test_the_runtime_spells_the_placeholder_prefix_as_the_backend_does() -> None:
    from stockade.runtime import sandbox

    assert sandbox._PLACEHOLDER_PREFIX == S.PLACEHOLDER_PREFIX


def test_a_checked_program_is_used_and_anything_else_is_checked(tmp_path: Path) -> None:
    from stockade.runtime.sandbox import supply_seccomp

    here = S.supported_arch()
    if here is None:
        pytest.skip("no seccomp filter for this architecture")
    word = S.placeholder(here)
    words, fds = supply_seccomp(["bwrap", "--seccomp", word, "--"], checked={word: S.program(here)})
    try:
        assert os.read(fds[0], 1 << 16) == S.program(here) and words[2] == str(fds[0])
    finally:
        for fd in fds:
            os.close(fd)
    other = "aarch64" if here == "x86_64" else "x86_64"
    with pytest.raises(StockadeError, match="R510"):
        supply_seccomp(["bwrap", "--seccomp", S.placeholder(other), "--"], checked={word: S.program(here)})


# -- for real, under bubblewrap ------------------------------------------------------------------

PROBE = r"""
import errno, os, socket
def attempt(name, make):
    try:
        make()
        print(name, "ok")
    except OSError as exc:
        print(name, errno.errorcode.get(exc.errno, exc.errno))
def pair():
    a, b = socket.socketpair()
    a.sendall(b"ping")
    assert b.recv(4) == b"ping"
attempt("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
attempt("unix-dgram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
attempt("vsock", lambda: socket.socket(40, socket.SOCK_STREAM))
attempt("pair", pair)
attempt("pair-seqpacket", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET))
attempt("pair-dgram", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
attempt("inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
attempt("listdir", lambda: os.listdir("/"))
for pid in ("1", "self"):
    with open(f"/proc/{pid}/status") as f:
        print("seccomp-" + pid, next(l.split()[1] for l in f if l.startswith("Seccomp:")))
"""

EXPECTED_FILTERED = {"unix": "EACCES", "unix-dgram": "EACCES", "vsock": "EACCES", "pair": "ok",
                     "pair-seqpacket": "ok", "pair-dgram": "EACCES", "inet": "ok", "listdir": "ok",
                     "seccomp-1": "2", "seccomp-self": "2"}


def _run(argv: list[str], command: list[str]) -> tuple[int, str, str]:
    from stockade.runtime.execute import run_confined
    from stockade.runtime.limits import Limits
    from stockade.runtime.plan import strip_environment
    from stockade.runtime.sandbox import harden_bwrap_argv

    out, err = bytearray(), bytearray()
    result = run_confined(harden_bwrap_argv(strip_environment(argv)), command, {"PATH": "/usr/bin:/bin"},
                          Limits(timeout=30), stdout=out.extend, stderr=err.extend)
    return result.exit_status, out.decode(), err.decode()


def _results(stdout: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in stdout.splitlines())


@LINUX_ONLY
def test_under_bwrap_unix_sockets_fail_and_the_rest_works(tmp_path: Path) -> None:
    status, out, err = _run(compile_ir(_ir(tmp_path, Network("deny")), "bwrap").data["argv"],
                            [sys.executable, "-I", "-S", "-c", PROBE])
    assert status == 0, err
    assert _results(out) == EXPECTED_FILTERED
    status, out, _ = _run(compile_ir(_ir(tmp_path, Network("deny")), "bwrap").data["argv"], ["ls", "/"])
    assert status == 0 and "usr" in out.split()


@LINUX_ONLY
def test_under_bwrap_all_network_keeps_the_socket_checks(tmp_path: Path) -> None:
    """All network allowed is served by the broker from the sandbox's own namespace, so host
    unix sockets stay refused (compiled as for a normal user)."""
    status, out, err = _run(compile_ir(_ir(tmp_path, Network("allow")), "bwrap", as_root=False).data["argv"],
                            [sys.executable, "-I", "-S", "-c", PROBE])
    assert status == 0, err
    results = _results(out)
    assert results["unix"] == "EACCES" and results["seccomp-self"] == "2"


@LINUX_ONLY
def test_a_plain_user_of_the_argv_cannot_run_without_the_filter(tmp_path: Path) -> None:
    artifact = compile_ir(_ir(tmp_path, Network("deny")), "bwrap")
    done = subprocess.run([BWRAP, *artifact.data["argv"][1:], "true"], capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "Invalid fd" in done.stderr
    # ... and the text's instructions do supply it (bash)
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    hint = next(line for line in artifact.text.splitlines() if line.startswith("#   3<"))
    redirect = hint[len("#   "):-len(" bwrap ...")]
    argv = list(artifact.data["argv"])
    argv[argv.index("--seccomp") + 1] = "3"
    script = redirect + " " + shlex.join([BWRAP, *argv[1:], sys.executable, "-I", "-S", "-c", PROBE])
    done = subprocess.run([bash, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert _results(done.stdout) == EXPECTED_FILTERED


@LINUX_ONLY
def test_stockade_run_blocks_unix_sockets_fresh_and_from_the_plan_cache(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = dict(os.environ, HOME=str(tmp_path), TMPDIR=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("STOCKADE_CACHE_DIR", None)
    env.pop("STOCKADE_AUDIT", None)
    command = ["run", "--policy", str(ROOT / "examples" / "coding-agent.policy"), "--workspace", str(ws),
               "--approve", "--", "python3", "-I", "-S", "-c", PROBE]
    for _ in range(2):  # the second run uses the cached plan
        done = subprocess.run([sys.executable, "-m", "stockade", *command], env=env, cwd=ROOT, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert _results(done.stdout) == EXPECTED_FILTERED
    plans = list((tmp_path / "cache" / "stockade" / "plans").rglob("*.marshal"))
    assert len(plans) == 1 and S.PLACEHOLDER_PREFIX.encode() in plans[0].read_bytes()
