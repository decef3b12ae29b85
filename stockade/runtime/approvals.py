"""Stored approvals: a person's "always" answer to a ``confirm``, with a safety contract.

An approval is a rule of a fixed granularity derived from the command a person approved —
never the whole text, never a bare program name for a tool with subcommands:

* tools with subcommands (git, npm, cargo, docker, kubectl, …): the program and its
  subcommand (``npm test``; two words for ``npm run build``, ``git stash pop``,
  ``docker compose up``, cloud CLIs' service and operation);
* interpreters and shells: the program and the script it runs (``python3 tools/gen.py``,
  ``python3 -m pytest``); inline code (``-c``, ``-e``) is never stored;
* any other program: its name.

A program given as a path (``./bin/tool``) matches only that path.  The rule matches a
command whose program and first positional words are the rule's, whatever follows
(``npm test`` matches ``npm test -- --watch``, never ``npm publish``).

The contract (:func:`apply`): an approval only turns ``confirm`` into ``allow`` — a ``deny``
reason is never overridden — and it is checked for every segment of a compound command: the
verdict becomes ``allow`` only when every ``confirm`` reason belongs to a simple command an
approval matches.  Before one is stored, :func:`describe` says what it will match; the
policy's ``session`` section decides whether approvals may be stored (``approvals
persist|session|never``) and which commands may never be (``never-persist``).

Approvals are kept per session (in the session's state), per project (``approvals/
project-<hash of the workspace>.json``) and per user (``approvals/user.json``) in
Stockade's state directory, which is read-only inside every sandbox.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from stockade import catalogue as codes
from stockade.diagnostics import Diagnostic, StockadeError
from stockade.runtime.sessions import state_root, write_json

#: Tools whose first positional word is a subcommand that changes what they do.
MULTI_COMMAND = frozenset({
    "git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "docker", "podman", "kubectl", "helm", "terraform",
    "pip", "pip3", "uv", "poetry", "pipx", "conda", "mamba", "gem", "bundle", "rake", "mvn", "gradle", "dotnet",
    "make", "just", "task", "gh", "glab", "aws", "gcloud", "az", "systemctl", "apt", "apt-get", "brew", "dnf",
    "yum", "pacman", "rustup", "deno", "composer", "mix", "sbt", "lein", "nix", "hatch", "pdm", "tox", "nox",
    "pre-commit", "ansible-galaxy", "swift", "flutter", "dart", "bazel", "npx", "pnpx", "bunx", "uvx",
    "stockade", "svn", "hg", "fossil", "openssl", "ssh-keygen", "gpg", "kubeadm", "minikube", "kind",
})
#: Subcommands whose own first word selects what they do (two words are stored).
TWO_LEVEL = frozenset({
    ("git", "remote"), ("git", "stash"), ("git", "submodule"), ("git", "worktree"), ("git", "config"),
    ("git", "notes"), ("git", "bisect"), ("git", "lfs"), ("npm", "run"), ("npm", "run-script"), ("npm", "exec"),
    ("npm", "config"), ("pnpm", "run"), ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "run"), ("yarn", "dlx"),
    ("bun", "run"), ("bun", "x"), ("docker", "compose"), ("docker", "container"), ("docker", "image"),
    ("docker", "volume"), ("docker", "network"), ("docker", "system"), ("podman", "compose"), ("kubectl", "config"),
    ("kubectl", "rollout"), ("uv", "run"), ("uv", "pip"), ("uv", "tool"), ("poetry", "run"), ("pipx", "run"),
    ("cargo", "run"), ("go", "run"), ("go", "mod"), ("dotnet", "run"), ("pip", "config"), ("pip3", "config"),
    ("conda", "env"), ("helm", "repo"), ("terraform", "state"), ("terraform", "workspace"), ("systemctl", "--user"),
})
#: Clouds and forges: service then operation, always two words.
SERVICE_TOOLS = frozenset({"aws", "gcloud", "az", "gh", "glab"})
#: Interpreters and shells: the script operand is stored; inline code never is.
INTERPRETERS = frozenset({
    "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "ruby", "perl", "php", "lua", "luajit",
    "Rscript", "bash", "sh", "dash", "zsh", "ksh", "fish", "tclsh", "osascript", "pwsh", "powershell", "julia",
})
_INLINE = frozenset({"-c", "-e", "-E", "--eval", "-p", "--print", "-r", "--command", "-Command", "-EncodedCommand"})
#: Scopes, narrowest first.
SCOPES = ("session", "project", "user")


def _error(code: str, message: str, help: str | None = None) -> StockadeError:
    return StockadeError(Diagnostic(code, message, help=help))


@dataclass(frozen=True)
class Approval:
    """One stored approval: ``program`` (a name, or the path it was given as), the leading
    positional ``words`` it requires, where it is kept and where it came from."""

    program: str
    words: tuple[str, ...]
    scope: str = "session"
    id: str = ""
    origin: Mapping[str, Any] | None = None

    @property
    def text(self) -> str:
        """The rule as a command prefix (``npm test``)."""
        return " ".join((self.program, *self.words))

    def matches(self, argv: Sequence[str]) -> bool:
        """Whether the simple command ``argv`` is one this approval covers."""
        if not argv:
            return False
        if argv[0] != self.program:  # a path matches only itself, a name only itself
            return False
        if os.path.basename(self.program) in INTERPRETERS and any(_inline(word) for word in argv[1:]):
            return False
        positionals = _positionals(argv)
        return tuple(positionals[1:1 + len(self.words)]) == self.words

    def to_json(self) -> dict[str, Any]:
        """The approval as stored."""
        return {"id": self.id, "program": self.program, "words": list(self.words), "scope": self.scope,
                "origin": dict(self.origin or {})}

    @classmethod
    def from_json(cls, data: Any, scope: str) -> Approval | None:
        """An approval read back (None when the entry is malformed)."""
        if not isinstance(data, dict) or not isinstance(data.get("program"), str) or not data["program"]:
            return None
        words = data.get("words")
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            return None
        origin = data.get("origin")
        return cls(data["program"], tuple(words), scope, str(data.get("id") or ""),
                   origin if isinstance(origin, dict) else None)


def _positionals(argv: Sequence[str]) -> list[str]:
    """The program and its positional words, skipping options and their values as the
    command rules do (``git -C dir push`` → ``git push``)."""
    from stockade.compiler.argv import parse_argv

    parsed = parse_argv(list(argv))
    return [argv[0], *parsed.positionals[1:]]


def derive(argv: Sequence[str]) -> Approval:
    """The approval of the right granularity for the simple command ``argv`` (R582 when no
    safe rule names it)."""
    if not argv or not argv[0]:
        raise _error(codes.APPROVAL_REFUSED, "there is no command to approve")
    program = argv[0]
    name = os.path.basename(program)
    if name in INTERPRETERS:
        return _derive_interpreter(program, list(argv[1:]))
    if name not in MULTI_COMMAND:
        return Approval(program, ())
    positionals = _positionals(argv)[1:]
    depth = 2 if name in SERVICE_TOOLS else 1
    if positionals and (name, positionals[0]) in TWO_LEVEL:
        depth = 2
    if len(positionals) < depth:
        raise _error(codes.APPROVAL_REFUSED,
                     f"`{name}` has subcommands and this command names none an approval could be limited to",
                     f"approve a command that names the subcommand, e.g. `{name} test`")
    return Approval(program, tuple(positionals[:depth]))


def _inline(word: str) -> bool:
    """Whether an interpreter's argument may bring code inline (``-c``, ``-e``, ``-ic`` …)."""
    return word in _INLINE or (word.startswith("-") and not word.startswith("--") and bool(set(word[1:]) & set("ceEpr")))


def _derive_interpreter(program: str, args: list[str]) -> Approval:
    name = os.path.basename(program)
    for i, word in enumerate(args):
        if _inline(word):
            raise _error(codes.APPROVAL_REFUSED, f"inline `{name}` code cannot be approved for always",
                         "approve it once, or put the code in a script and approve the script")
        if word == "-m" and i + 1 < len(args):
            return Approval(program, ("-m", args[i + 1]))
        if not word.startswith("-"):
            return Approval(program, (word,))
    raise _error(codes.APPROVAL_REFUSED, f"`{name}` without a script reads its code from its input",
                 "approve it once instead")


def describe(approval: Approval) -> str:
    """What an approval will match, in words (shown before it is stored)."""
    if not approval.words:
        return (f"every `confirm` of the program `{approval.program}`, whatever its arguments "
                "(never a `deny`)")
    return (f"`confirm` verdicts of `{approval.text}` followed by any arguments — not other "
            f"`{approval.program}` commands, and never a `deny`")


# -- where approvals are kept -----------------------------------------------------------


def store_path(scope: str, workspace: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The file of the ``project`` or ``user`` approvals."""
    root = os.path.join(state_root(environ), "approvals")
    if scope == "user":
        return os.path.join(root, "user.json")
    from stockade.compiler.cache import sha256

    key = sha256(os.path.realpath(workspace or os.getcwd()).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return os.path.join(root, f"project-{key}.json")


@contextmanager
def _locked(path: str) -> Iterator[list[Any]]:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        entries = _read(path)
        yield entries
        write_json(path, {"version": 1, "approvals": entries})
    finally:
        os.close(fd)


def _read(path: str) -> list[Any]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    with os.fdopen(fd, "rb") as handle:
        try:
            data = json.loads(handle.read(16 * 1024 * 1024).decode("utf-8"))
        except ValueError:
            return []
    entries = data.get("approvals") if isinstance(data, dict) else None
    return entries if isinstance(entries, list) else []


def load(workspace: str | None, session_approvals: Sequence[Any] = (),
         environ: Mapping[str, str] | None = None, scopes: Sequence[str] = SCOPES) -> list[Approval]:
    """Every approval that applies: the session's, the project's, the user's."""
    out: list[Approval] = []
    if "session" in scopes:
        out += [a for a in (Approval.from_json(e, "session") for e in session_approvals) if a is not None]
    for scope in ("project", "user"):
        if scope in scopes:
            entries = _read(store_path(scope, workspace, environ))
            out += [a for a in (Approval.from_json(e, scope) for e in entries) if a is not None]
    return out


def check_storable(approval: Approval, argv: Sequence[str], scope: str, settings: Any) -> None:
    """Refuse (R582) an approval the policy's ``session`` section does not let be stored."""
    from stockade.compiler.argv import compile_pattern, parse_argv, pattern_matches

    mode = getattr(settings, "approvals", "persist")
    where = getattr(settings, "approvals_where", "the policy")
    if mode == "never":
        raise _error(codes.APPROVAL_REFUSED, f"the policy does not let approvals be stored (`approvals never`, {where})")
    if mode == "session" and scope != "session":
        raise _error(codes.APPROVAL_REFUSED,
                     f"the policy keeps approvals to the session (`approvals session`, {where}), not `{scope}`",
                     "store it with `--scope session`")
    for rule in getattr(settings, "never_persist", ()):
        compiled = compile_pattern(rule.pattern)
        for candidate in (list(argv), [approval.program, *approval.words]):
            if pattern_matches(compiled, parse_argv(candidate)):
                origin = rule.origin
                where = f"{origin.file}:{origin.line}" if origin is not None else "the policy"
                raise _error(codes.APPROVAL_REFUSED,
                             f"`{' '.join(candidate)}` matches `{rule.text}` ({where}): it may never be stored",
                             "approve it each time instead")


def add(approval: Approval, scope: str, *, workspace: str | None, origin: Mapping[str, Any],
        session_approvals: list[Any] | None = None, environ: Mapping[str, str] | None = None) -> Approval:
    """Store an approval in ``scope`` (session approvals go into ``session_approvals``, the
    session's state list); an equal rule already there is kept, not doubled."""
    if scope not in SCOPES:
        raise _error(codes.APPROVAL_REFUSED, f"unknown scope `{scope}`", "use `session`, `project` or `user`")
    stored = Approval(approval.program, approval.words, scope, "a" + secrets.token_hex(4),
                      {**origin, "added": time.time()})
    if scope == "session":
        if session_approvals is None:
            raise _error(codes.APPROVAL_REFUSED, "a session approval needs a session", "pass `--session ID`")
        entries = session_approvals
        return _add_to(entries, stored)
    with _locked(store_path(scope, workspace, environ)) as entries:
        return _add_to(entries, stored)


def _add_to(entries: list[Any], stored: Approval) -> Approval:
    for entry in entries:
        existing = Approval.from_json(entry, stored.scope)
        if existing is not None and (existing.program, existing.words) == (stored.program, stored.words):
            return existing
    entries.append(stored.to_json())
    return stored


def revoke(approval_id: str, *, workspace: str | None, session_approvals: list[Any] | None = None,
           environ: Mapping[str, str] | None = None) -> Approval | None:
    """Remove the approval with this id from wherever it is kept (None: not found)."""
    if session_approvals is not None:
        for i, entry in enumerate(session_approvals):
            if isinstance(entry, dict) and entry.get("id") == approval_id:
                return Approval.from_json(session_approvals.pop(i), "session")
    for scope in ("project", "user"):
        path = store_path(scope, workspace, environ)
        if not os.path.exists(path):
            continue
        with _locked(path) as entries:
            for i, entry in enumerate(entries):
                if isinstance(entry, dict) and entry.get("id") == approval_id:
                    return Approval.from_json(entries.pop(i), scope)
    return None


# -- applying approvals to a verdict -----------------------------------------------------


@dataclass(frozen=True)
class Applied:
    """The verdict after approvals: the decision, the approvals used (empty: unchanged)."""

    decision: str
    used: tuple[Approval, ...]
    uncovered: tuple[str, ...] = ()


def segments(command: str, ir: Any, cwd: str | None) -> list[tuple[tuple[str, ...], tuple[int, int], list[Any]]]:
    """Every simple command of ``command`` (after unwrapping) with its span and the spans of
    the effects it owns (the effects the analyzer found after it, up to the next command)."""
    from stockade.analyzer.effects import Execute
    from stockade.analyzer.walker import walk_command

    out: list[tuple[tuple[str, ...], tuple[int, int], list[Any]]] = []
    for effect in walk_command(ir.context, command, cwd, True):
        if isinstance(effect, Execute):
            out.append((tuple(effect.argv), tuple(effect.span), [tuple(effect.span)]))  # type: ignore[arg-type]
        elif out:
            out[-1][2].append(tuple(getattr(effect, "span", (-1, -1))))
    return out


def owners(verdict: Mapping[str, Any], command: str, ir: Any,
           cwd: str | None) -> list[tuple[str, tuple[str, ...] | None]]:
    """Each ``confirm`` reason of ``verdict`` (its message) with the simple command it belongs
    to (None: it belongs to none, e.g. a text that does not parse)."""
    found = segments(command, ir, cwd)
    out: list[tuple[str, tuple[str, ...] | None]] = []
    for reason in verdict.get("reasons", ()):
        if not isinstance(reason, dict) or reason.get("verdict") != "confirm":
            continue
        span = reason.get("span") or {}
        key = (span.get("start"), span.get("end"))
        owner = next((seg for seg in found if key in seg[2]), None)
        out.append((str(reason.get("message", "")), None if owner is None else owner[0]))
    return out


def apply(verdict: Mapping[str, Any], command: str, ir: Any, cwd: str | None,
          approvals: Sequence[Approval]) -> Applied:
    """``verdict`` (the analyzer's JSON) after ``approvals``: ``allow`` only when it was
    ``confirm``, has no ``deny`` reason, and every ``confirm`` reason belongs to a simple
    command that an approval matches."""
    decision = str(verdict.get("decision"))
    if decision != "confirm" or not approvals:
        return Applied(decision, ())
    if any(isinstance(r, dict) and r.get("verdict") == "deny" for r in verdict.get("reasons", ())):
        return Applied(decision, ())
    used: list[Approval] = []
    uncovered: list[str] = []
    for message, argv in owners(verdict, command, ir, cwd):
        approval = None if argv is None else next((a for a in approvals if a.matches(argv)), None)
        if approval is None:
            uncovered.append(message)
        elif approval not in used:
            used.append(approval)
    if uncovered or not used:
        return Applied(decision, (), tuple(uncovered))
    return Applied("allow", tuple(used))
