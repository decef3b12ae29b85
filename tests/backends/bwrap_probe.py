"""Helpers for the bubblewrap conformance tests: a fake home and workspace, probes run
inside bubblewrap in one invocation, and the IR's expected answer for each probe.

A probe is an operation on a path (``read``, ``write``, ``create``, ``mkdir``, ``delete``,
``rename``) or a TCP ``connect``.  What the IR expects is defined on canonical paths
(symlinks resolved, as the compiler canonicalises rule paths; a symlink can be followed
only where the link itself is readable — in a hidden directory it does not exist):

* ``read`` / ``write``: the access of the canonical path;
* ``create`` / ``mkdir`` of a missing path: write access to its canonical path;
* ``delete`` / ``rename``: the entry itself changes, and so does its directory and
  everything below it — write access to the parent, to the entry and to its whole subtree
  (including protected rule paths below it that bubblewrap materialises), and for
  ``rename`` to the new name.  The entry is the link itself for a symlink.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from stockade.compiler.ir import PolicyIR

BWRAP = shutil.which("bwrap")
#: The probe interpreter: the system Python under /usr when there is one (policies that
#: restrict reads usually allow /usr), else the running one.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

#: Runs inside the sandbox: performs each operation and prints one JSON result per probe.
PROBE_SCRIPT = r"""
import errno, json, os, socket, sys
ops = json.loads(sys.argv[1])
out = []
for op in ops:
    kind, path = op["op"], op.get("path")
    try:
        if kind == "read":
            if os.path.isdir(path):
                os.listdir(path)
            else:
                with open(path, "rb") as f:
                    f.read(1)
        elif kind == "write":
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, b"")
            finally:
                os.close(fd)
        elif kind == "create":
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.close(fd)
        elif kind == "mkdir":
            os.mkdir(path)
        elif kind == "delete":
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
        elif kind == "rename":
            os.rename(path, path + ".renamed")
            os.rename(path + ".renamed", path)
        elif kind == "connect":
            socket.create_connection(("127.0.0.1", op["port"]), timeout=3).close()
        out.append({"ok": True})
    except OSError as exc:
        out.append({"ok": False, "errno": errno.errorcode.get(exc.errno or 0, str(exc))})
print(json.dumps(out))
"""

OP_ORDER = {"read": 0, "write": 1, "connect": 2, "create": 3, "mkdir": 3, "rename": 4, "delete": 5}


@dataclass(frozen=True)
class Probe:
    """One operation to try inside the sandbox."""

    op: str
    path: str = ""
    port: int = 0

    def as_json(self) -> dict:
        return {"op": self.op, "path": self.path, "port": self.port}


def ordered(probes: Iterable[Probe]) -> list[Probe]:
    """Non-destructive probes first; deletes deepest first, so no probe spoils another."""
    return sorted(probes, key=lambda p: (OP_ORDER[p.op], -p.path.count("/") if p.op == "delete" else 0, p.path))


def run_probes(argv: Sequence[str], probes: Sequence[Probe]) -> list[dict]:
    """Run every probe in ONE bubblewrap invocation with the compiled ``argv``."""
    assert argv[0] == "bwrap" and argv[-1] == "--"
    payload = json.dumps([p.as_json() for p in probes])
    from stockade.runtime.sandbox import supply_seccomp

    argv, fds = supply_seccomp(argv)  # the seccomp filter, on a descriptor, as `stockade run` does
    command = [BWRAP or "bwrap", *argv[1:], PYTHON, "-I", "-S", "-c", PROBE_SCRIPT, payload]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, pass_fds=fds)
    finally:
        for fd in fds:
            os.close(fd)
    assert done.returncode == 0, f"bwrap failed ({done.returncode}): {done.stderr}"
    results = json.loads(done.stdout)
    assert len(results) == len(probes)
    return results


def resolve(path: str) -> tuple[str, list[str]]:
    """Resolve ``path`` like the kernel: the canonical path, and every symlink followed
    on the way (each as the canonical spelling of the link itself)."""
    todo = [part for part in path.split("/") if part]
    current, links = "/", []
    while todo:
        name = todo.pop(0)
        if name == ".":
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        step = os.path.join(current, name)
        if os.path.islink(step):
            links.append(step)
            if len(links) > 40:
                break
            target = os.readlink(step)
            if target.startswith("/"):
                current = "/"
            todo = [part for part in target.split("/") if part] + todo
        else:
            current = step
    return current, links


def _entry(path: str) -> tuple[str, list[str]]:
    """The canonical spelling of a directory entry itself (its parent resolved, not it)."""
    parent, links = resolve(os.path.dirname(path))
    return os.path.join(parent, os.path.basename(path)), links


def _links_readable(ir: PolicyIR, links: list[str]) -> bool:
    """A symlink can be followed only where the link itself is readable."""
    return all(ir.path_access(link).can_read for link in links)


def _can_write(ir: PolicyIR, path: str) -> bool:
    return ir.path_access(path).can_write


def _subtree_writable(ir: PolicyIR, entry: str) -> bool:
    if not _can_write(ir, entry):
        return False
    if os.path.isdir(entry) and not os.path.islink(entry):
        for top, dirs, files in os.walk(entry):
            if not all(_can_write(ir, os.path.join(top, name)) for name in dirs + files):
                return False
    for rule in ir.filesystem:
        if not rule.is_glob and rule.pattern.startswith(entry + "/") and rule.access != "write":
            return False
    return True


def expected(ir: PolicyIR, probe: Probe) -> bool:
    """Whether the IR allows ``probe`` (see the module docstring)."""
    if probe.op in ("read", "write", "create", "mkdir"):
        path, links = resolve(probe.path)
        decision = ir.path_access(path)
        return _links_readable(ir, links) and (decision.can_read if probe.op == "read" else decision.can_write)
    if probe.op in ("delete", "rename"):
        entry, links = _entry(probe.path)
        ok = _links_readable(ir, links) and _can_write(ir, os.path.dirname(entry)) and _subtree_writable(ir, entry)
        return ok and (probe.op == "delete" or _can_write(ir, entry + ".renamed"))
    if probe.op == "connect":
        return ir.network_access("127.0.0.1", probe.port).allowed
    raise ValueError(probe.op)


Mismatch = tuple[Probe, bool, dict]


def check(ir: PolicyIR, argv: Sequence[str], probes: Sequence[Probe]) -> tuple[list[Mismatch], list[dict]]:
    """Run ``probes`` under ``argv`` and return every probe whose observed result differs
    from the IR's answer (answers are computed before anything runs), and all results."""
    wanted = [expected(ir, probe) for probe in probes]
    results = run_probes(argv, probes)
    mismatches = [(probe, want, got) for probe, want, got in zip(probes, wanted, results, strict=True)
                  if want != got["ok"]]
    return mismatches, results


def build_fixture(root: str, *, home_inside_workspace: bool = False) -> dict[str, str]:
    """A fake machine under ``root``: a home with secrets and rc files, a workspace with a
    git repository, a ``.env``, and symlinks pointing out of the workspace."""
    ws = os.path.join(root, "ws")
    home = os.path.join(ws, "home") if home_inside_workspace else os.path.join(root, "home")
    tmp = os.path.join(root, "tmp")
    files = {
        f"{home}/.ssh/id_rsa": "PRIVATE KEY", f"{home}/.ssh/known_hosts": "host",
        f"{home}/.aws/credentials": "aws", f"{home}/.bashrc": "rc", f"{home}/.profile": "rc",
        f"{home}/notes.txt": "notes", f"{home}/proj/.env": "SECRET=1",
        f"{ws}/src/main.py": "print()", f"{ws}/.env": "SECRET=2", f"{ws}/.env.local": "SECRET=3",
        f"{ws}/.git/config": "[core]", f"{ws}/.git/hooks/pre-commit": "#!/bin/sh",
        f"{ws}/.git/HEAD": "ref: refs/heads/main", f"{tmp}/scratch.txt": "tmp",
    }
    for path, text in files.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    os.makedirs(f"{ws}/empty", exist_ok=True)
    os.makedirs(f"{tmp}/review-scratch", exist_ok=True)
    os.symlink(f"{home}/.ssh", f"{ws}/sshlink")
    os.symlink(f"{home}/.ssh/id_rsa", f"{ws}/keylink")
    os.symlink(f"{ws}/.git/hooks", f"{ws}/hookslink")
    os.symlink(tmp, f"{ws}/tmplink")
    os.symlink(f"{home}/.ssh/authorized_keys", f"{ws}/dangling")
    return {"root": root, "ws": ws, "home": home, "tmp": tmp}


def fixture_probes(fx: dict[str, str]) -> list[Probe]:
    """The probe list for :func:`build_fixture`: paths × operations, through symlinks too."""
    ws, home, tmp = fx["ws"], fx["home"], fx["tmp"]
    probes = [
        Probe("read", p) for p in (
            f"{home}/.ssh/id_rsa", f"{home}/.ssh", f"{home}/.aws/credentials", f"{home}/.bashrc",
            f"{home}/notes.txt", f"{home}/proj/.env", f"{ws}/src/main.py", f"{ws}/.env", f"{ws}/.env.local",
            f"{ws}/.git/config", f"{ws}/.git/hooks/pre-commit", f"{ws}/.git/hooks", f"{ws}/sshlink/id_rsa",
            f"{ws}/keylink", f"{ws}/hookslink/pre-commit", f"{tmp}/scratch.txt", "/etc/hostname", "/usr/bin")
    ]
    probes += [Probe("write", p) for p in (
        f"{home}/.ssh/id_rsa", f"{home}/.bashrc", f"{home}/.profile", f"{home}/notes.txt", f"{ws}/src/main.py",
        f"{ws}/.env", f"{ws}/.git/config", f"{ws}/.git/hooks/pre-commit", f"{ws}/.git/HEAD",
        f"{ws}/keylink", f"{ws}/hookslink/pre-commit", f"{tmp}/scratch.txt", "/etc/hostname")]
    probes += [Probe("create", p) for p in (
        f"{ws}/new.txt", f"{ws}/src/new.py", f"{ws}/.git/hooks/post-checkout", f"{ws}/.git/new",
        f"{home}/.ssh/authorized_keys", f"{ws}/sshlink/authorized_keys2", f"{ws}/tmplink/new-through-link",
        f"{ws}/hookslink/pre-push", f"{home}/.gnupg", f"{home}/.netrc", f"{tmp}/new", "/etc/stockade-probe",
        f"{home}/new-in-home")]
    probes += [Probe("mkdir", p) for p in (f"{ws}/newdir", f"{home}/.aws/sub", f"{ws}/.git/hooks/d", "/newtop")]
    probes += [Probe("rename", p) for p in (
        f"{ws}/.git", f"{ws}/.git/hooks", f"{ws}/src", f"{ws}/src/main.py", f"{ws}/.env", f"{home}/.ssh",
        f"{home}/.bashrc", f"{home}/notes.txt", f"{ws}/sshlink")]
    probes += [Probe("delete", p) for p in (
        f"{ws}/.git/hooks/pre-commit", f"{ws}/.git/config", f"{ws}/.env", f"{ws}/empty", f"{ws}/sshlink",
        f"{home}/.ssh/id_rsa", f"{home}/.bashrc", f"{home}/notes.txt", f"{ws}/dangling")]
    return ordered(probes)
