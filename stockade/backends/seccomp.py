"""The seccomp filter every bubblewrap sandbox gets: host sockets, setuid files, keyrings.

Why
===

**Host sockets.**  ``--unshare-net`` cuts the network, but not every socket is in the
network namespace:

* a **unix socket with a path** (``/run/docker.sock``, a socket under ``/tmp``) is reached
  through the filesystem, and a read-only bind mount does not stop ``connect()`` to it
  (nor ``sendto()`` to a datagram socket): the docker socket alone is root on the host;
* an **abstract** unix socket is per network namespace (unreachable once the network is
  unshared), but the filter does not rely on that;
* a **vsock** socket (``AF_VSOCK``) talks to the hypervisor and is not namespaced at all;
* **io_uring** can create and connect sockets without the ``socket()`` system call.

So when a policy does not allow all network, the filter also refuses sockets:
``socket()`` of family ``AF_UNIX`` or ``AF_VSOCK`` fails with ``EACCES``;
``socketpair(AF_UNIX, …)`` keeps working for ``SOCK_STREAM`` and ``SOCK_SEQPACKET`` (local
pipes: a connected pair cannot be pointed anywhere else) but fails with ``EACCES`` for
``SOCK_DGRAM``/``SOCK_RAW`` (a datagram socket can ``sendto()`` any host socket path).

**Root is not root inside** (every policy, all network or not).  The sandbox's uid is the
caller's, so a command of Stockade running as root creates files owned by root:

* a **setuid/setgid file** it leaves behind gives euid (egid) 0 to whoever runs it later.
  ``chmod``/``fchmod``/``fchmodat``/``fchmodat2`` with ``S_ISUID`` or ``S_ISGID`` in the mode,
  and file creation with them (``open``/``openat`` with ``O_CREAT`` or ``O_TMPFILE``,
  ``creat``, ``mknod``/``mknodat``) fail with ``EPERM``; ``openat2`` passes its mode in a
  struct a filter cannot read, so it fails with ``ENOSYS`` (libc and programs fall back to
  ``openat``).  ``mkdir`` keeps working: the kernel drops ``S_ISUID``/``S_ISGID`` from its
  mode (a directory only inherits ``S_ISGID`` from its parent);
* the caller's **session keyring** is inherited: ``add_key``, ``keyctl`` and
  ``request_key`` fail with ``EPERM`` (as in Docker's default profile and Flatpak);
* ``io_uring_setup``/``io_uring_enter``/``io_uring_register`` fail with ``ENOSYS`` (its
  ``openat`` and socket operations bypass the checks above; programs fall back to ordinary
  system calls).

Everything else is allowed.

How
===

A classic BPF program (``struct sock_filter``: ``u16 code, u8 jt, u8 jf, u32 k``, native
little-endian), assembled here without libseccomp, run by the kernel on every system call
with ``struct seccomp_data`` (``nr`` at offset 0, ``arch`` at 4, ``args[i]`` at
``16 + 8*i``):

1. the audit architecture must be the one the filter was built for, else the process is
   killed (``SECCOMP_RET_KILL_PROCESS``): a 32-bit (i386, arm) system call would otherwise
   use other numbers and slip through;
2. on x86_64, a system call number with the x32 bit (``0x40000000``) kills the process too
   (x32 calls share the x86_64 audit arch);
3. the number selects the checks above.  Arguments are compared on their low 32 bits: the
   kernel reads ``domain``, ``type`` and ``flags`` as ``int`` and a mode as ``umode_t``, so
   the high bits cannot hide a family, ``O_CREAT`` or ``S_ISUID``.

Supported architectures: ``x86_64`` and ``aarch64`` (others: error ``B309`` when the policy
needs the socket checks, never a sandbox without them; with all network allowed, a sandbox
without the filter and a ``B309`` warning).

The program is built once, when the policy is compiled, and travels in the placeholder
word of the argv (and so in the cached run plan); a run only decodes and checks it
(:func:`parse_placeholder`).  This module is on that path, so it imports nothing heavy
(no ``dataclasses``, ``platform`` or ``base64``; diagnostics only for an error).
"""

from __future__ import annotations

import binascii
import os
import struct
from typing import NamedTuple

from stockade import catalogue as codes

# -- classic BPF and seccomp constants (linux/filter.h, linux/bpf_common.h, linux/seccomp.h)

BPF_LD, BPF_ALU, BPF_JMP, BPF_RET = 0x00, 0x04, 0x05, 0x06
BPF_W, BPF_ABS, BPF_K = 0x00, 0x20, 0x00
BPF_AND, BPF_JEQ, BPF_JGE = 0x50, 0x10, 0x30

LD_ABS = BPF_LD | BPF_W | BPF_ABS  # 0x20: A = seccomp_data[k:k+4]
JEQ = BPF_JMP | BPF_JEQ | BPF_K  # 0x15
JGE = BPF_JMP | BPF_JGE | BPF_K  # 0x35
AND = BPF_ALU | BPF_AND | BPF_K  # 0x54
RET = BPF_RET | BPF_K  # 0x06

SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000

EPERM = 1
EACCES = 13
ENOSYS = 38

AF_UNIX = 1
AF_VSOCK = 40
SOCK_STREAM = 1
SOCK_SEQPACKET = 5
SOCK_TYPE_MASK = 0xF  # the rest of `type` is SOCK_NONBLOCK / SOCK_CLOEXEC

S_ISUID = 0o4000
S_ISGID = 0o2000
SETID_BITS = S_ISUID | S_ISGID
O_CREAT = 0o100  # the same on x86_64 and in asm-generic (aarch64)
O_TMPFILE_BIT = 0o20000000  # __O_TMPFILE: creates an inode with `mode` too
CREATING_FLAGS = O_CREAT | O_TMPFILE_BIT

OFFSET_NR = 0
OFFSET_ARCH = 4
X32_SYSCALL_BIT = 0x40000000

#: The word in a bwrap argv that stands for the file descriptor of the filter.  It names the
#: architecture and carries the program (base64), so the argv alone is enough for the
#: runtime to supply it; bubblewrap itself rejects it (`Invalid fd`), so an argv whose
#: filter was not supplied cannot run.
PLACEHOLDER_PREFIX = "STOCKADE_SECCOMP_FD:"


def arg_offset(index: int) -> int:
    """The offset of the low 32 bits of system call argument ``index`` (little-endian)."""
    return 16 + 8 * index


class Arch(NamedTuple):
    """What the filter needs to know about one architecture (system call numbers; for
    the mode checks, which argument holds the mode, and the open flags)."""

    name: str
    audit_arch: int
    socket: int
    socketpair: int
    io_uring: tuple[int, ...]
    #: (nr, mode argument): chmod-like calls, refused with S_ISUID/S_ISGID in the mode
    chmods: tuple[tuple[int, int], ...]
    #: (nr, flags argument or -1 when it always creates, mode argument): file creation
    creates: tuple[tuple[int, int, int], ...]
    openat2: int
    keyring: tuple[int, ...]  # add_key, request_key, keyctl
    x32_bit: bool = False


ARCHES: dict[str, Arch] = {
    # AUDIT_ARCH_X86_64 = EM_X86_64 (62) | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
    "x86_64": Arch("x86_64", 0xC000003E, socket=41, socketpair=53, io_uring=(425, 426, 427),
                   chmods=((90, 1), (91, 1), (268, 2), (452, 2)),  # chmod fchmod fchmodat fchmodat2
                   creates=((2, 1, 2), (257, 2, 3), (85, -1, 1), (133, -1, 1), (259, -1, 2)),  # open openat
                   openat2=437, keyring=(248, 249, 250), x32_bit=True),  # creat mknod mknodat
    # AUDIT_ARCH_AARCH64 = EM_AARCH64 (183) | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE (asm-generic numbers)
    "aarch64": Arch("aarch64", 0xC00000B7, socket=198, socketpair=199, io_uring=(425, 426, 427),
                    chmods=((52, 1), (53, 2), (452, 2)),  # fchmod fchmodat fchmodat2
                    creates=((56, 2, 3), (33, -1, 2)),  # openat mknodat
                    openat2=437, keyring=(217, 218, 219)),
}
_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def supported_arch(machine: str | None = None) -> str | None:
    """The supported architecture for ``machine`` (default: this machine's, as
    ``platform.machine()`` reports it), or None."""
    raw = os.uname().machine if machine is None else machine
    name = _ALIASES.get(raw.lower(), raw.lower())
    return name if name in ARCHES else None


def arch_name(machine: str | None = None) -> str:
    """The supported architecture for ``machine`` (default ``platform.machine()``);
    raises B309 for any other."""
    name = supported_arch(machine)
    if name is None:
        from stockade.diagnostics import Diagnostic, StockadeError

        raw = os.uname().machine if machine is None else machine
        raise StockadeError(Diagnostic(
            codes.NO_SECCOMP_FILTER,
            f"no seccomp filter for the architecture `{raw}`: the sandbox could not block host unix "
                    f"sockets, so it is not built",
            help=f"supported architectures: {', '.join(sorted(ARCHES))}; or allow all network in the policy "
                 f"(`network {{ default allow }}`)"))
    return name


class Insn(NamedTuple):
    """One ``struct sock_filter``."""

    code: int
    jt: int
    jf: int
    k: int

    def pack(self) -> bytes:
        """The instruction as the kernel reads it (8 bytes, little-endian)."""
        return struct.pack("<HBBI", self.code, self.jt, self.jf, self.k)


class _Assembler:
    """Straight-line BPF with forward jumps to labels (resolved to 8-bit offsets)."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int | str, int | str, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.items)

    def op(self, code: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        self.items.append((code, jt, jf, k))

    def assemble(self) -> list[Insn]:
        out = []
        for pc, (code, jt, jf, k) in enumerate(self.items):
            offsets = []
            for target in (jt, jf):
                offset = target if isinstance(target, int) else self.labels[target] - pc - 1
                if not 0 <= offset <= 255:
                    raise ValueError(f"jump out of range at {pc}")
                offsets.append(offset)
            out.append(Insn(code, offsets[0], offsets[1], k))
        return out


def build_filter(arch: str, sockets: bool = True) -> list[Insn]:
    """The filter's instructions for ``arch`` (a key of :data:`ARCHES`); the socket checks
    only when ``sockets`` (a sandbox without all network)."""
    a = ARCHES[arch]
    asm = _Assembler()
    asm.op(LD_ABS, OFFSET_ARCH)
    asm.op(JEQ, a.audit_arch, 0, "kill")
    asm.op(LD_ABS, OFFSET_NR)
    if a.x32_bit:
        asm.op(JGE, X32_SYSCALL_BIT, "kill", 0)
    if sockets:
        asm.op(JEQ, a.socket, "socket", 0)
        asm.op(JEQ, a.socketpair, "socketpair", 0)
    for nr in (*a.io_uring, a.openat2):
        asm.op(JEQ, nr, "enosys", 0)
    for nr in a.keyring:
        asm.op(JEQ, nr, "eperm", 0)
    for nr, mode_arg in a.chmods:
        asm.op(JEQ, nr, f"mode{mode_arg}", 0)
    for nr, flags_arg, mode_arg in a.creates:
        asm.op(JEQ, nr, f"mode{mode_arg}" if flags_arg < 0 else f"create{flags_arg}_{mode_arg}", 0)
    asm.op(RET, SECCOMP_RET_ALLOW)
    if sockets:
        asm.label("socket")  # socket(domain, type, protocol)
        asm.op(LD_ABS, arg_offset(0))
        asm.op(JEQ, AF_UNIX, "eacces", 0)
        asm.op(JEQ, AF_VSOCK, "eacces", "allow")
        asm.label("socketpair")  # socketpair(domain, type, protocol, sv)
        asm.op(LD_ABS, arg_offset(0))
        asm.op(JEQ, AF_UNIX, 0, "allow")
        asm.op(LD_ABS, arg_offset(1))
        asm.op(AND, SOCK_TYPE_MASK)
        asm.op(JEQ, SOCK_STREAM, "allow", 0)
        asm.op(JEQ, SOCK_SEQPACKET, "allow", "eacces")
    # open(path, flags, mode), openat(dfd, path, flags, mode): the mode counts only when
    # the flags create a file (glibc passes 0 otherwise, other callers anything)
    for flags_arg, mode_arg in sorted({(f, m) for _, f, m in a.creates if f >= 0}):
        asm.label(f"create{flags_arg}_{mode_arg}")
        asm.op(LD_ABS, arg_offset(flags_arg))
        asm.op(AND, CREATING_FLAGS)
        asm.op(JEQ, 0, "allow", f"mode{mode_arg}")
    for mode_arg in sorted({m for _, m in a.chmods} | {m for _, _, m in a.creates}):
        asm.label(f"mode{mode_arg}")  # the mode of chmod, creat, mknod, or a creating open
        asm.op(LD_ABS, arg_offset(mode_arg))
        asm.op(AND, SETID_BITS)
        asm.op(JEQ, 0, "allow", "eperm")
    asm.label("eperm")
    asm.op(RET, SECCOMP_RET_ERRNO | EPERM)
    if sockets:
        asm.label("eacces")
        asm.op(RET, SECCOMP_RET_ERRNO | EACCES)
    asm.label("enosys")
    asm.op(RET, SECCOMP_RET_ERRNO | ENOSYS)
    asm.label("kill")
    asm.op(RET, SECCOMP_RET_KILL_PROCESS)
    asm.label("allow")
    asm.op(RET, SECCOMP_RET_ALLOW)
    return asm.assemble()


def program(arch: str, sockets: bool = True) -> bytes:
    """The packed filter (what ``bwrap --seccomp FD`` reads from ``FD``)."""
    return b"".join(insn.pack() for insn in build_filter(arch, sockets))


def decode(data: bytes) -> list[Insn]:
    """Unpack a filter into its instructions (raises ValueError if it is not one)."""
    if not data or len(data) % 8 or len(data) // 8 > 4096:
        raise ValueError("a seccomp program is 1 to 4096 instructions of 8 bytes")
    return [Insn(*fields) for fields in struct.iter_unpack("<HBBI", data)]


def encoded_program(arch: str, sockets: bool = True) -> str:
    """The packed filter in base64."""
    return binascii.b2a_base64(program(arch, sockets), newline=False).decode("ascii")


def placeholder(arch: str, sockets: bool = True) -> str:
    """The argv word standing for the filter's file descriptor (see :data:`PLACEHOLDER_PREFIX`)."""
    return f"{PLACEHOLDER_PREFIX}{arch}:{encoded_program(arch, sockets)}"


def parse_placeholder(word: str) -> tuple[str, bytes]:
    """The architecture and program of a placeholder word (raises ValueError if malformed)."""
    if not word.startswith(PLACEHOLDER_PREFIX):
        raise ValueError("not a seccomp placeholder")
    arch, sep, encoded = word[len(PLACEHOLDER_PREFIX):].partition(":")
    if not sep or arch not in ARCHES:
        raise ValueError(f"unknown architecture `{arch}`")
    try:
        data = binascii.a2b_base64(encoded.encode("ascii"), strict_mode=True)
    except (ValueError, UnicodeEncodeError):
        raise ValueError("the program is not valid base64") from None
    if not data or len(data) % 8 or len(data) // 8 > 4096:
        raise ValueError("a seccomp program is 1 to 4096 instructions of 8 bytes")
    head = struct.unpack_from("<HBBIHBBI", data) if len(data) >= 16 else ()
    if head[:4] != (LD_ABS, 0, 0, OFFSET_ARCH) or head[4:5] != (JEQ,) or head[5] != 0 \
            or head[7] != ARCHES[arch].audit_arch:
        raise ValueError(f"the program does not start by checking the `{arch}` architecture")
    return arch, data
