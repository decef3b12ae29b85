"""The library API for harnesses written in Python.

::

    import stockade

    policy = stockade.load_policy("examples/coding-agent.policy", workspace="/home/dev/app")
    verdict = policy.analyze("git push --force origin main")
    verdict.decision                 # "deny" — the same object `stockade analyze --format json` prints
    verdict.to_json()
    policy.check_path("~/.ssh/id_rsa", "read").allowed          # False
    policy.compile("bwrap").text                                # a backend's artifact
    policy.compile("claude-settings").text                      # or an export (codex-rules, srt, cursor)
    outcome = stockade.run(["make", "test"], policy=policy)     # judged, then run under the sandbox
    outcome.ran, outcome.exit_status, outcome.limits_hit        # (see :func:`run`)

Nothing here prints; errors are :class:`~stockade.diagnostics.StockadeError` with located
diagnostics.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.judge import Verdict
    from stockade.backends.base import Artifact
    from stockade.compiler.ir import PolicyIR
    from stockade.compiler.query import PathDecision
    from stockade.diagnostics import Diagnostic
    from stockade.runtime.session import RunOutcome

@dataclass(frozen=True)
class PathCheck:
    """Whether an access to a path is granted, and the decision behind it."""

    path: str
    access: str
    allowed: bool
    decision: PathDecision

    def to_json(self) -> dict:
        """The check as a JSON object (with the deciding rule's origin)."""
        rule = self.decision.rule
        origin = getattr(rule, "origin", None)
        return {"path": self.decision.path, "access": self.access, "allowed": self.allowed,
                "granted": self.decision.access,
                "rule": None if rule is None else {"text": f"{rule.kind} {rule.source_text or rule.pattern}",
                                                   "file": origin.file if origin else None,
                                                   "line": origin.line if origin else None}}


@dataclass(frozen=True)
class Policy:
    """A compiled policy with the operations a harness needs."""

    ir: PolicyIR
    path: str | None = None
    warnings: tuple[Diagnostic, ...] = field(default=())

    @property
    def name(self) -> str:
        """The policy's name."""
        return self.ir.name

    def analyze(self, command: str, cwd: str | None = None) -> Verdict:
        """Judge a shell command or script; never raises (analyzer errors fail closed)."""
        from stockade.analyzer import analyze

        return analyze(command, self.ir, cwd)

    def check_path(self, path: str, access: str = "read", cwd: str | None = None) -> PathCheck:
        """Whether ``access`` (``read`` or ``write``) to ``path`` is granted by the filesystem rules."""
        if access not in ("read", "write"):
            raise ValueError(f"access must be `read` or `write`, not `{access}`")
        decision = self.ir.path_access(path, cwd)
        allowed = decision.can_write if access == "write" else decision.can_read
        return PathCheck(path, access, allowed, decision)

    def check_host(self, host: str, port: int | None = None) -> bool:
        """Whether the network rules allow contact with ``host``:``port``."""
        return self.ir.network_access(host, port).allowed

    def compile(self, target: str, *, strict: bool = False, allow_looser: bool = False, **options: Any) -> Artifact:
        """The artifact for any target of :data:`stockade.backends.registry.TARGETS` — a backend
        (``bwrap``, ``seatbelt``, ``windows``, ``windows-ps``) or an export (``codex-rules``,
        ``codex-config``, ``srt``, ``claude-settings``, ``cursor``) — or ``ir`` (the IR as JSON).

        ``strict`` (exports only) raises when the target cannot express a rule exactly; the
        artifact's ``warnings`` list every approximation otherwise.  An export looser than
        the policy raises (``X602``) unless ``allow_looser``.  An unknown target raises ``B300``.
        """
        from stockade.backends.base import Artifact

        if target == "ir":
            import json

            data = self.ir.to_json()
            return Artifact("ir", json.dumps(data, indent=2), data)
        from stockade.backends.registry import build

        if allow_looser:
            options["allow_looser"] = True
        return build(self.ir, target, strict=strict, extra_names=("ir",), **options)


def load_policy(path: str | os.PathLike[str] | None = None, *, text: str | None = None,
                workspace: str | None = None, home: str | None = None, tmpdir: str | None = None,
                environ: Mapping[str, str] | None = None, platform: str | None = None) -> Policy:
    """Compile a policy file (or ``text``; or the built-in default) into a :class:`Policy`.

    ``workspace`` defaults to the current directory, ``home`` to ``$HOME``, ``tmpdir`` to
    ``$TMPDIR`` or ``/tmp``.  Raises :class:`~stockade.diagnostics.StockadeError` with every
    error found.
    """
    from stockade.compiler.pipeline import compile_policy

    result = compile_policy(path, text=text, workspace=workspace, home=home, tmpdir=tmpdir, environ=environ,
                            platform=platform)
    return Policy(result.ir, os.fspath(path) if path is not None else None, tuple(result.warnings))


def run(command: Sequence[str] | str, policy: Policy | str | os.PathLike[str] | None = None, *,
        workspace: str | None = None, **options: Any) -> RunOutcome:
    """Judge ``command`` and run it confined by ``policy``; returns a
    :class:`~stockade.runtime.session.RunOutcome`.

    ``command`` is shell text (``/bin/sh -c``) or an argv.  ``policy`` is a :class:`Policy`
    from :func:`load_policy` (it runs in the workspace it was loaded for), a policy file, or
    None for the built-in policy.  ``options`` are those of
    :func:`stockade.runtime.session.run`: ``audit``, ``approve``, ``confirm``, ``preview``,
    ``diff``, ``apply``, ``use_cache``, ``stdout``/``stderr`` sinks, ``stdin``, ``environ``,
    ``notify``.  A refused command is an outcome with ``ran=False`` and the reasons; policy
    and environment problems raise :class:`~stockade.diagnostics.StockadeError`.
    """
    from stockade.runtime.session import run as run_session

    target = policy.ir if isinstance(policy, Policy) else policy
    return run_session(command, policy=target, workspace=workspace, **options)
