"""Per-session workspaces: a session's own clone (git) or copy (other trees).

``stockade session start --worktree`` gives a session a workspace of its own, so parallel
agents cannot touch each other's files:

* **git**: a clone that shares the repository's objects (``git clone --shared``: new
  objects go to the clone, the repository's are only read), on a branch
  ``stockade/<session>`` from the current ``HEAD``.  Its ``.git`` lies inside its own
  workspace, so the policy's ``$WORKSPACE/.git/hooks`` and ``.git/config`` rules protect it
  exactly as in the main workspace.  (A linked ``git worktree`` keeps its index and HEAD in
  the main repository's ``.git/worktrees/``, which the metadata protection makes read-only:
  the session could not commit.)
* **copy**: a copy of the tree (symlinks copied as symlinks), and a manifest of the
  original's files (hashes) to merge against.

They live in ``$STOCKADE_WORKTREES``, else ``$XDG_DATA_HOME/stockade/worktrees/<session>``.
``stockade session end --merge`` commits what the session left uncommitted in its clone
and fetches its branch into the repository as ``stockade/<session>``, then merges it into
the checked-out branch when the repository's work tree is clean (else the branch is left
for the person to merge); for a copy, it copies back each file the session changed whose
original is unchanged since the start and lists the others as conflicts.  ``--discard``
removes the clone or copy (and nothing else).

Git never runs on the host in a tree a sandbox wrote: every git command here runs inside a
sandbox (no network, only the session's clone and the repository's ``.git`` writable as the
step needs) with hooks disabled.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from typing import Any

from stockade import catalogue as codes
from stockade.diagnostics import Diagnostic, StockadeError


def _error(message: str, help: str | None = None) -> StockadeError:
    return StockadeError(Diagnostic(codes.WORKTREE_FAILED, message, help=help))


def worktrees_root(environ: Mapping[str, str] | None = None) -> str:
    """Where session worktrees are made."""
    env = os.environ if environ is None else environ
    if env.get("STOCKADE_WORKTREES"):
        return os.path.abspath(env["STOCKADE_WORKTREES"])
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(os.path.abspath(base), "stockade", "worktrees")


_BOX_POLICY = """policy "stockade-session-git"
filesystem {{
    read  /
{writable}}}
network {{
    default deny
}}
environment {{
    keep PATH HOME LANG LC_* TMPDIR GIT_*
}}
commands {{
    unknown-effects allow
    unparsable      deny
}}
"""


def _quote(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def boxed(argv: Sequence[str], cwd: str, writable: Sequence[str],
          environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """Run ``argv`` in a sandbox where only ``writable`` (and ``cwd``'s own tree, when listed)
    can be written and nothing can be contacted; its exit status and output."""
    from stockade.api import load_policy
    from stockade.runtime.session import run

    grant = f"    write {' '.join(_quote(p) for p in writable)}\n" if writable else ""
    guarded = [os.path.join(p, ".git", name) for p in writable for name in ("hooks", "config")
               if os.path.isdir(os.path.join(p, ".git"))]
    guarded += [os.path.join(p, name) for p in writable if os.path.basename(p) == ".git" for name in ("hooks", "config")]
    if guarded:  # git's code and configuration stay as they are, even in these boxes
        grant += f"    readonly {' '.join(_quote(p) for p in guarded)}\n"
    text = _BOX_POLICY.format(writable=grant)
    policy = load_policy(text=text, workspace=cwd)
    out = bytearray()
    env = dict(os.environ if environ is None else environ)
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", **_GIT_CONFIG)
    outcome = run(list(argv), policy=policy.ir, workspace=cwd, approve=True, use_cache=False,
                  stdout=out.extend, stderr=out.extend, environ=env)
    if not outcome.ran:
        raise _error(f"`{' '.join(argv[:3])}` was refused in its sandbox: {'; '.join(outcome.reasons)}")
    return int(outcome.exit_status or 0), out.decode("utf-8", "replace")


_GIT = ("git",)
#: Configuration every boxed git gets (through the environment): no hooks, no fsmonitor.
_GIT_CONFIG = {"GIT_CONFIG_COUNT": "3", "GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": "/dev/null",
               "GIT_CONFIG_KEY_1": "core.fsmonitor", "GIT_CONFIG_VALUE_1": "false",
               "GIT_CONFIG_KEY_2": "protocol.file.allow", "GIT_CONFIG_VALUE_2": "always"}


def _is_git(workspace: str) -> bool:
    return os.path.isdir(os.path.join(workspace, ".git")) and not os.path.islink(os.path.join(workspace, ".git"))


def create(session: str, workspace: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Make the session's own workspace; its description (``kind``, ``path``, ``origin``…)."""
    root = worktrees_root(environ)
    path = os.path.join(root, session)
    if os.path.lexists(path):
        raise _error(f"`{path}` exists already", "end the session that owns it, or remove it")
    os.makedirs(root, mode=0o700, exist_ok=True)
    if _is_git(workspace):
        branch = f"stockade/{session}"
        status, output = boxed([*_GIT, "clone", "--quiet", "--shared", "--no-checkout", workspace, path],
                               workspace, [root], environ)
        if status != 0:
            raise _error(f"`git clone --shared` failed: {output.strip()[-400:]}")
        status, output = boxed([*_GIT, "-C", path, "checkout", "--quiet", "-b", branch, "HEAD"], path, [path],
                               environ)
        if status != 0:
            shutil.rmtree(path, ignore_errors=True)
            raise _error(f"`git checkout` in the session clone failed: {output.strip()[-400:]}")
        return {"kind": "git", "path": path, "origin": workspace, "branch": branch}
    os.mkdir(path, 0o700)
    status, output = boxed(["cp", "-a", "--", workspace + "/.", path], workspace, [path], environ)
    if status != 0:
        shutil.rmtree(path, ignore_errors=True)
        raise _error(f"copying the workspace failed: {output.strip()[-400:]}")
    return {"kind": "copy", "path": path, "origin": workspace, "manifest": _manifest(workspace)}


def _manifest(root: str, limit: int = 200_000) -> dict[str, str]:
    """Every regular file and symlink below ``root`` → its content hash (read without
    following symlinks; ``.git`` excluded)."""
    from stockade.runtime import beneath
    from stockade.runtime.journal import snapshot

    out: dict[str, str] = {}
    with beneath.Tree(root) as tree:
        stack = [""]
        while stack and len(out) < limit:
            rel = stack.pop()
            try:
                names = tree.listdir(rel)
            except OSError:
                continue
            for name in names:
                child = f"{rel}/{name}" if rel else name
                if child == ".git":
                    continue
                st = tree.lstat(child)
                if st is None:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    stack.append(child)
                else:
                    snap = snapshot(root, child, keep_data=False)
                    out[child] = f"{snap.kind}:{snap.sha256 or snap.target or ''}"
    return out


def finish(tree: Mapping[str, Any], merge: bool, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Merge (``merge``) or discard the session's workspace; what happened (``lines``,
    ``conflicts``)."""
    path = str(tree["path"])
    origin = str(tree["origin"])
    lines: list[str] = []
    conflicts: list[str] = []
    if merge and tree.get("kind") == "git":
        branch = str(tree["branch"])
        boxed([*_GIT, "-C", path, "add", "-A"], path, [path], environ)
        status, output = boxed([*_GIT, "-C", path, "-c", "user.name=stockade", "-c", "user.email=stockade@localhost",
                                "commit", "--quiet", "--allow-empty", "-m", f"stockade session {os.path.basename(path)}"],
                               path, [path], environ)
        git_dir = os.path.join(origin, ".git")
        status, output = boxed([*_GIT, "-C", origin, "fetch", "--quiet", path, f"+{branch}:{branch}"], origin,
                               [git_dir], environ)
        if status != 0:
            raise _error(f"fetching the session branch failed: {output.strip()[-400:]}")
        lines.append(f"the session's work is on branch `{branch}` of `{origin}`")
        status, output = boxed([*_GIT, "-C", origin, "status", "--porcelain", "--untracked-files=no"], origin, [],
                               environ)
        if status == 0 and not output.strip():
            status, output = boxed([*_GIT, "-C", origin, "-c", "user.name=stockade",
                                    "-c", "user.email=stockade@localhost", "merge", "--no-edit", "--quiet", branch],
                                   origin, [origin], environ)
            if status == 0:
                lines.append(f"merged `{branch}` into the checked-out branch")
            else:
                boxed([*_GIT, "-C", origin, "merge", "--abort"], origin, [origin], environ)
                conflicts.append(f"merging `{branch}` conflicts: merge it yourself (`git merge {branch}`)")
        else:
            lines.append(f"the work tree of `{origin}` has changes: merge it yourself (`git merge {branch}`)")
    elif merge:
        conflicts += _merge_copy(tree, lines, environ)
    if not conflicts:
        shutil.rmtree(path, ignore_errors=True)  # the clone or copy is ours: nothing in it is followed
        lines.append(f"removed `{path}`")
    return {"lines": lines, "conflicts": conflicts}


def _merge_copy(tree: Mapping[str, Any], lines: list[str], environ: Mapping[str, str] | None) -> list[str]:
    path, origin = str(tree["path"]), str(tree["origin"])
    before: Mapping[str, str] = tree.get("manifest") or {}
    after = _manifest(path)
    now = _manifest(origin)
    conflicts = []
    changed = [rel for rel in sorted(set(after) | set(before)) if after.get(rel) != before.get(rel)]
    for rel in changed:
        if now.get(rel) != before.get(rel):
            conflicts.append(f"`{rel}` changed in both the workspace and the session's copy")
            continue
        target_dir = os.path.dirname(os.path.join(origin, rel))
        if rel in after:
            status, output = boxed(["cp", "-a", "--parents", "--", rel, origin], path,
                                   [origin], environ)
        else:
            status, output = boxed(["rm", "-f", "--", os.path.join(origin, rel)], origin, [target_dir], environ)
        if status != 0:
            conflicts.append(f"`{rel}`: {output.strip()[-200:]}")
        else:
            lines.append(f"{'copied' if rel in after else 'removed'} `{rel}`")
    return conflicts
