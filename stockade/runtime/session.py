"""The runtime's library API: judge a command, run it confined, preview and apply, audit.

:func:`run` is the one function that chains the stages of a confined run; ``stockade run``
only parses its arguments, calls it, and renders the :class:`RunOutcome`::

    from stockade.runtime.session import run

    out = bytearray()
    outcome = run(["make", "test"], policy="team.policy", workspace="/home/dev/app",
                  stdout=out.extend, stderr=out.extend)
    outcome.ran, outcome.exit_status, outcome.limits_hit

1. **Plan.** The policy is compiled to the platform's sandbox artifact, or its cached plan
   is used (:mod:`stockade.runtime.cache`; a cached run imports neither lark nor
   tree-sitter).  A compiled :class:`~stockade.compiler.ir.PolicyIR` may be given instead
   of a path (it is never cached: its sources are unknown).
2. **Sandbox.** The sandbox tool is located and probed *before* anything is asked, so a
   missing bubblewrap fails closed (``R5xx``) without a prompt.
3. **Gate.** The analyzer judges the command text (the shell text, or the argv
   shell-quoted): ``deny`` refuses; ``confirm`` runs only with ``approve=True`` or when the
   ``confirm`` callback answers True; ``allow`` runs.  Every decision is audited.
4. **Run.** The command runs under the sandbox with the policy's limits and filtered
   environment; output goes to the sinks (default: this process's stdout and stderr).
5. **Preview.** With ``preview=True`` it runs against a copy-on-write view of the
   workspace; the changes are collected and applied only when ``apply`` is True or the
   ``apply`` callback answers True for the :class:`PreviewResult`.
6. **Audit.** The run is appended to the audit trail.

Nothing here prints.  A refusal is an outcome (``ran=False``, with the reasons), not an
exception; policy errors (``C``/``P`` codes) and environment problems (``R5xx``: no
bubblewrap, no user namespaces, a sandbox that does not start, no overlayfs) raise
:class:`~stockade.diagnostics.StockadeError`.  There is no way to run unconfined.
"""

from __future__ import annotations

import os
import sys

from stockade import catalogue
from stockade.runtime.gate import Judgement
from stockade.runtime.limits import Limits
from stockade.runtime.record import Record

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms (it imports `re`)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, ClassVar

    from typing_extensions import TypeIs  # (typing.TypeIs is Python 3.13)

    from stockade.compiler.ir import PolicyIR
    from stockade.diagnostics import StockadeError
    from stockade.runtime.broker import BrokerHooks
    from stockade.runtime.preview import PreviewResult

    Sink = Callable[[bytes], object]


def __getattr__(name: str) -> Any:
    """:class:`~stockade.runtime.preview.PreviewResult`, part of this API, lives with the
    preview (loaded only by a preview run)."""
    if name == "PreviewResult":
        from stockade.runtime.preview import PreviewResult

        return PreviewResult
    raise AttributeError(f"module 'stockade.runtime.session' has no attribute {name!r}")


class RunOutcome(Record):
    """The result of :func:`run`: the verdict, and what happened if the command ran.

    ``exit_status`` is the command's own status (``128 + N`` for signal ``N``, ``124`` when
    the timeout killed it, ``125`` when the process-limit watchdog did); None when it was
    refused.  ``approved_by`` is ``policy``, ``--approve`` or the ``confirm`` callback's
    label; ``recovered`` says what was done with an interrupted apply to the
    workspace, found in stockade's state directory (``discarded``, ``rolled back``,
    ``completed``); ``warnings`` say what the run could not enforce as the policy asks
    (``memory`` held per process only, without a memory cgroup).
    """

    verdict: str
    reasons: tuple[str, ...]
    ran: bool
    command: tuple[str, ...]
    text: str
    workspace: str
    audit: str
    policy: str | None = None
    policy_hash: str | None = None
    approved_by: str | None = None
    exit_status: int | None = None
    returncode: int | None = None
    limits_hit: tuple[str, ...] = ()
    limits: Limits
    duration: float = 0.0
    bytes_out: int = 0
    bytes_err: int = 0
    bytes_shown: int = 0
    preview: PreviewResult | None = None
    backend: str | None = None
    sandbox_argv: tuple[str, ...] = ()
    detail: Mapping[str, Any]
    cached_verdict: bool = False
    recovered: str | None = None
    warnings: tuple[str, ...] = ()
    #: one line per destination the network broker refused (``blocked: host:port (why)``)
    blocked: tuple[str, ...] = ()

    _factories: ClassVar[dict[str, Callable[[], Any]]] = {"limits": Limits, "detail": dict}
    _hidden = frozenset({"sandbox_argv", "detail"})

    def to_json(self) -> dict:
        """The outcome as ``stockade run --format json`` prints it (without the captured
        ``stdout``/``stderr``): the verdict and reasons, and either the analyzer's
        ``detail`` (refused) or the run's figures and ``preview`` (ran)."""
        head = {"verdict": self.verdict, "reasons": list(self.reasons), "ran": self.ran}
        if not self.ran:
            return {**head, "detail": dict(self.detail)}
        return {**head, "exit_status": self.exit_status, "duration": round(self.duration, 6),
                "bytes_out": self.bytes_out, "bytes_err": self.bytes_err, "bytes_shown": self.bytes_shown,
                "limits_hit": list(self.limits_hit), "setup_failed": False, "warnings": list(self.warnings),
                "blocked": list(self.blocked), "preview": None if self.preview is None else self.preview.to_json()}


# -- the plan ----------------------------------------------------------------------


def _environment_problem(code: str, message: str, help: str | None = None) -> StockadeError:
    from stockade.diagnostics import Diagnostic, StockadeError  # only when something is wrong

    return StockadeError(Diagnostic(code, message, help=help))


def make_context(workspace: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The run's context: the workspace (real path), home, tmpdir and platform."""
    return {"workspace": os.path.realpath(workspace or os.getcwd()),
            "home": environ.get("HOME") or os.path.expanduser("~"),
            "tmpdir": environ.get("TMPDIR") or "/tmp",
            "platform": "darwin" if sys.platform == "darwin" else "linux"}


def _target(ctx: Mapping[str, str]) -> str:
    return "seatbelt" if ctx["platform"] == "darwin" else "bwrap"


def _trusted_inputs() -> dict[str, str]:
    """What the next run trusts besides stockade's state: its installation
    (:func:`~stockade.runtime.plan.input_context`) and, on Linux, the bubblewrap binary
    (located and checked here, before the plan, so that the plan can refuse a writable one)."""
    from stockade.runtime.plan import input_context

    out = input_context()
    if sys.platform.startswith("linux"):
        from stockade.runtime.sandbox import find_bwrap

        out["bwrap"] = find_bwrap()
    return out


def plan_from_ir(ir: PolicyIR, ctx: Mapping[str, str]) -> dict:
    """The run plan of an already compiled policy (not cached); stockade's state paths in
    ``ctx["state"]``, its installation and the policy's files are protected (see
    :func:`~stockade.runtime.plan.protect_inputs`)."""
    from stockade.backends.base import compile_ir
    from stockade.runtime.plan import build_plan, protect_inputs

    target = _target(ctx)
    ir, facts = protect_inputs(ir, ctx, [layer.file for layer in ir.layers])  # its policy files too
    return {**build_plan(ir, compile_ir(ir, target, **_options(target)), target, Limits.from_ir(ir).to_json()),
            **facts}


def _options(target: str) -> dict[str, Any]:
    # bwrap: the globs' matches under the workspace and writable roots are decided at each
    # run's start (stockade.runtime.globscan), not at compile time; `by_runtime`: the run
    # enforces the sections the artifact leaves to it (limits, commands...), so no warning
    return {"glob_per_run": True, "by_runtime": True} if target == "bwrap" else {"by_runtime": True}


def load_plan(policy: str | None, ctx: Mapping[str, str], use_cache: bool = True,
              environ: Mapping[str, str] | None = None) -> tuple[dict, str | None]:
    """The run plan and its cache key for a policy file (None: the built-in policy) and
    context: from the cache, or compiled and cached (``use_cache=False`` compiles afresh).
    Stockade's state paths in ``ctx["state"]`` (newline-separated), its installation and the
    policy's files are protected from the sandbox (see
    :func:`~stockade.runtime.plan.protect_inputs`)."""
    from stockade.runtime import cache

    target = _target(ctx)
    key = cache.plan_key(policy, ctx, target)
    if key is not None and use_cache:
        from stockade.runtime.plan import facts_hold, inputs_covered, plan_problem

        hit = cache.load_plan(key, variables=environ)
        if (hit is not None and plan_problem(hit) is None
                and facts_hold(hit["facts"], hit["placeholders"], hit["placeholder_files"])
                and inputs_covered(hit, ctx) and hit["bwrap"] == (ctx.get("bwrap") or None)
                and hit["bwrap_writable"] is None):  # (a refusal is decided afresh)
            return hit, key  # (a damaged entry is a miss: compiled again and replaced)
    from stockade.backends.base import compile_ir
    from stockade.compiler.pipeline import compile_policy
    from stockade.runtime.plan import build_plan, protect_inputs

    try:
        result = compile_policy(policy, workspace=ctx["workspace"], home=ctx["home"], tmpdir=ctx["tmpdir"],
                                platform=ctx["platform"], environ=environ)
    except OSError as exc:
        raise _environment_problem(catalogue.UNREADABLE_POLICY,
                                   f"cannot read the policy `{policy}`: {exc.strerror or exc}") from None
    ir, facts = protect_inputs(result.ir, ctx, list(result.sources))  # the policy's files too
    artifact = compile_ir(ir, target, **_options(target))
    plan = {**build_plan(ir, artifact, target, Limits.from_ir(ir).to_json()), **facts}
    if key is not None:
        plan = cache.store_plan(key, plan, result.sources, variables=environ)
    return plan, key


def sandbox_prefix(plan: Mapping[str, Any], ctx: Mapping[str, str]) -> tuple[str, list[str]]:
    """The backend and the checked sandbox prefix argv for a plan (raises R5xx)."""
    from stockade.runtime import sandbox

    if plan.get("bwrap_writable"):  # before the probe runs it
        raise sandbox.refuse_bwrap(plan["bwrap"], f"the policy lets the sandbox write `{plan['bwrap_writable']}`, "
                                                  "so a command could have planted or replaced it")
    tool = sandbox.require_sandbox("darwin" if ctx["platform"] == "darwin" else sys.platform,
                                   bwrap=ctx.get("bwrap") or None)
    if tool.backend == "bwrap":
        if plan.get("backend") != "bwrap" or plan.get("bwrap") != tool.path:
            raise _environment_problem(catalogue.ARTIFACT_REFUSED, "the cached plan is not for this bubblewrap")
        return "bwrap", sandbox.harden_bwrap_argv(plan["argv"], cwd=ctx["workspace"], bwrap=tool.path)
    return "seatbelt", sandbox.seatbelt_argv(plan.get("profile") or "", plan.get("params"), tool.path)


def apply_state_dir(workspace: str, state_root: str | None = None) -> str:
    """Where a preview's apply to ``workspace`` (a real path) keeps its journal:
    ``<state>/apply/<sha256 of the path>`` in stockade's state directory (default: the
    cache directory, read-only inside every sandbox), never in the workspace."""
    from stockade.compiler.cache import cache_dir, sha256

    root = os.path.abspath(state_root or cache_dir())
    return os.path.join(root, "apply", sha256(workspace.encode("utf-8", "surrogateescape")).hexdigest()[:32])


# -- the run -----------------------------------------------------------------------


def _command(command: Sequence[str] | str) -> tuple[list[str], str]:
    if isinstance(command, str):
        return ["/bin/sh", "-c", command], command
    argv = [os.fspath(word) for word in command]
    if not argv:
        raise ValueError("no command: give shell text or a non-empty argv")
    return argv, " ".join(_quote(word) for word in argv)


#: The characters ``shlex.quote`` leaves unquoted (``[\w@%+=:,./-]``, ASCII).
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def _quote(word: str) -> str:
    """``shlex.quote`` (the same text, without importing ``shlex`` or compiling a regex)."""
    if not word:
        return "''"
    if _SAFE.issuperset(word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def _is_ir(policy: object) -> TypeIs[PolicyIR]:
    return policy is not None and not isinstance(policy, (str, os.PathLike)) and hasattr(policy, "context")


def run(command: Sequence[str] | str, *, policy: str | os.PathLike[str] | PolicyIR | None = None,
        workspace: str | None = None, audit: str | None = None, approve: bool = False,
        confirm: Callable[[Judgement], bool] | None = None, preview: bool = False, diff: bool = False,
        apply: bool | Callable[[PreviewResult], bool] = False, use_cache: bool = True,
        stdout: Sink | None = None, stderr: Sink | None = None, stdin: int | None = None,
        environ: Mapping[str, str] | None = None, notify: Callable[[str], None] | None = None,
        cwd: str | None = None, audit_extra: Mapping[str, Any] | None = None,
        force_confirm: str | None = None, broker: BrokerHooks | None = None) -> RunOutcome:
    """Judge ``command``, then run it confined by ``policy``; see the module docstring.

    ``cwd`` is the directory the command starts in (default: the workspace); it must be the
    workspace or a directory inside it, and the analyzer judges relative paths from it.

    ``command`` is shell text (run as ``/bin/sh -c TEXT``) or an argv.  ``policy`` is a
    policy file, a compiled ``PolicyIR`` (its workspace is the run's), or None for the
    built-in policy.  ``workspace`` defaults to the current directory; ``audit`` to
    ``$STOCKADE_AUDIT`` or ``~/.local/state/stockade/audit.jsonl``.

    ``confirm(judgement)`` is asked for a ``confirm`` verdict unless ``approve``; without
    it such a command is refused.  Its ``approved_by`` attribute, if any, names who
    approved in the audit trail (default ``confirm``).

    With ``preview``, ``diff`` fills :attr:`PreviewResult.diff`, and ``apply`` (a bool, or
    a callable given the :class:`PreviewResult` when there is something to apply) decides
    whether the changes reach the workspace.

    ``stdout``/``stderr`` receive the command's output as bytes (default: this process's
    file descriptors 1 and 2); ``stdin`` is a file descriptor (default: inherited).
    ``environ`` (default ``os.environ``) is the environment the command's is filtered
    from, and supplies ``$HOME``, ``$TMPDIR`` and the policy's variables.  ``notify``
    receives messages for the user (an interrupted apply that was recovered).

    ``audit_extra`` is added to every audit record of the run (a session's ``session`` and
    ``step``); ``force_confirm``, a reason, turns an ``allow`` into ``confirm`` (a session
    past a limit under ``on-limit confirm``).
    ``broker`` (:class:`~stockade.runtime.broker.BrokerHooks`) gives the run's network broker,
    when the policy needs one, a resolver of its own and a callback once it has started.
    """
    from stockade.runtime import audit as audit_mod

    argv, text = _command(command)
    env_in = os.environ if environ is None else environ
    if workspace is not None and not os.path.isdir(workspace):
        raise _environment_problem(catalogue.WORKSPACE_UNUSABLE, f"the workspace `{workspace}` is not a directory")
    run_cwd = None
    if cwd is not None:
        run_cwd = os.path.realpath(cwd)
        root = os.path.realpath(workspace or os.getcwd())
        if not os.path.isdir(run_cwd) or not (run_cwd == root or run_cwd.startswith(root.rstrip("/") + "/")):
            raise _environment_problem(catalogue.WORKSPACE_UNUSABLE,
                                       f"`--cwd {cwd}` is not a directory inside the workspace `{root}`",
                                       help="the command starts in the workspace or a directory inside it")
    audit_path = audit or audit_mod.default_audit_path()
    from stockade.compiler.cache import cache_dir
    from stockade.runtime.audit import state_root
    from stockade.runtime.plan import prepare_state

    # where this process keeps them: the cache, the state directory (sessions, approvals), the audit trail
    state = "\n".join(prepare_state([cache_dir(), state_root()], [audit_path]))
    state_ctx = {"state": state, **_trusted_inputs()}  # all read-only inside (part of the plan key)
    from stockade.runtime.runlock import RunLock

    lock = RunLock.acquire(cache_dir())  # held shared from before the plan's facts are checked: see runlock
    try:
        return _judged(argv, text, policy, workspace, env_in, audit_path, state_ctx, approve, confirm, preview, diff,
                       apply, use_cache, stdout, stderr, stdin, environ, notify, lock, run_cwd,
                       audit_extra=audit_extra, force_confirm=force_confirm, hooks=broker)
    finally:
        lock.release()


def _chdir(prefix: Sequence[str], backend: str, cwd: str | None) -> list[str]:
    """A bwrap prefix whose command starts in ``cwd`` (the plan's ``--chdir`` value
    replaced); other backends start in the host process's directory (see :func:`_confined`)."""
    out = list(prefix)
    if cwd is None or backend != "bwrap":
        return out
    end = len(out) - 1 if out and out[-1] == "--" else len(out)
    found = [i for i in range(1, end - 1) if out[i] == "--chdir"]
    if found:
        out[found[-1] + 1] = cwd
        return out
    return [*out[:end], "--chdir", cwd, *out[end:]]


def _judged(argv: list[str], text: str, policy: str | os.PathLike[str] | PolicyIR | None, workspace: str | None,
            env_in: Mapping[str, str], audit_path: str, state_ctx: Mapping[str, str], approve: bool,
            confirm: Callable[[Judgement], bool] | None, preview: bool,
            diff: bool, apply: bool | Callable[[PreviewResult], bool], use_cache: bool, stdout: Sink | None,
            stderr: Sink | None, stdin: int | None, environ: Mapping[str, str] | None,
            notify: Callable[[str], None] | None, lock: Any, run_cwd: str | None = None, *,
            audit_extra: Mapping[str, Any] | None = None, force_confirm: str | None = None,
            hooks: BrokerHooks | None = None) -> RunOutcome:
    """Plan, judge and run (the middle of :func:`run`, under the run lock); ``run_cwd``: the
    checked starting directory inside the workspace (None: the workspace)."""
    from stockade.runtime import audit as audit_mod
    from stockade.runtime import gate

    path = None
    if _is_ir(policy):
        ir_workspace = policy.context.workspace
        if workspace is not None and os.path.realpath(workspace) != ir_workspace:
            raise _environment_problem(
                catalogue.WORKSPACE_BUSY_OR_MISMATCH,
                f"the policy was compiled for the workspace `{ir_workspace}`, not `{workspace}`",
                help="load the policy with the workspace to run in, or pass its path instead")
        ctx = {**make_context(ir_workspace, env_in), "home": policy.context.home,
               "tmpdir": policy.context.tmpdir, **state_ctx}
        plan, key = plan_from_ir(policy, ctx), None
    else:
        ctx = {**make_context(workspace, env_in), **state_ctx}
        path = None if policy is None else os.fspath(policy)
        plan, key = load_plan(path, ctx, use_cache=use_cache, environ=environ)
    backend, prefix = sandbox_prefix(plan, ctx)  # fail closed before asking anything
    fresh: list[dict] = []

    def load_ir() -> Any:
        if _is_ir(policy):
            return policy
        from stockade.compiler.cache import ir_json_problem
        from stockade.compiler.ir import PolicyIR
        from stockade.runtime.plan import plan_ir_json

        try:
            data = plan_ir_json(plan)
        except (EOFError, ValueError, TypeError):
            data = None
        if key is not None and ir_json_problem(data) is not None:  # a damaged cached plan: compiled again
            fresh.append(load_plan(path, ctx, use_cache=False, environ=environ)[0])
            data = plan_ir_json(fresh[0])
        return PolicyIR.from_json(data)

    if sys.platform not in ("linux", "darwin") and notify is not None:  # no broker there yet: say which rules
        from stockade.backends.netplan import unenforced_network_rules

        for problem in unenforced_network_rules(load_ir(), False, sys.platform):
            where = f" ({problem.span.file}:{problem.span.line})" if problem.span is not None else ""
            notify(f"warning[{problem.code}]: {problem.message}{where}")
    # a verdict is cached per plan key and IR hash: an edited include or git config (which
    # changes the IR, not the key) is not judged by a stale verdict
    judgement = gate.judge(text, load_ir, run_cwd or ctx["workspace"],
                           key and f"{key}:{plan.get('policy_hash') or ''}")
    if fresh:
        plan = fresh[0]
        backend, prefix = sandbox_prefix(plan, ctx)
    _warn_cache(lock, plan, notify)
    if force_confirm and judgement.decision == "allow":
        judgement = gate.Judgement("confirm", (*judgement.reasons, force_confirm),
                                   {**judgement.detail, "decision": "confirm"}, judgement.cached)
    ask = None if confirm is None else (lambda _prompt: bool(confirm(judgement)))
    decision = gate.decide(judgement, approve, ask, asked_by="confirm")
    if decision.approved_by == "confirm":  # the callback may say who approved only once it has
        decision = decision.replace(approved_by=getattr(confirm, "approved_by", "confirm"))
    base = {"policy": plan.get("policy"), "policy_hash": plan.get("policy_hash"), "command": text,
            "workspace": ctx["workspace"], "pid": os.getpid(), **(audit_extra or {})}
    audit_mod.append_record(audit_path, {"time": audit_mod.now_iso(), **base, "event": "decision",
                                         "verdict": judgement.decision, "reasons": list(judgement.reasons),
                                         "approved_by": decision.approved_by, "runs": decision.runs,
                                         "cached_verdict": judgement.cached})
    outcome = RunOutcome(judgement.decision, judgement.reasons, False, tuple(argv), text, ctx["workspace"],
                         audit_path, plan.get("policy"), plan.get("policy_hash"), decision.approved_by,
                         detail=judgement.detail, cached_verdict=judgement.cached, backend=backend,
                         sandbox_argv=tuple(prefix))
    if not decision.runs:
        return outcome
    if run_cwd is not None and run_cwd != ctx["workspace"]:
        ctx = {**ctx, "cwd": run_cwd}  # after the plan and verdict keys: where the command starts
        prefix = _chdir(prefix, backend, run_cwd)
    if not plan.get("glob_scan"):
        return _confined(outcome, plan, ctx, prefix, argv, env_in, preview, diff, apply, stdout, stderr, stdin,
                         notify, base, lock, hooks)
    from stockade.runtime.globscan import DamagedPlan, plan_with_globs

    for attempt in range(3):  # this run's glob masks, from the tree as it is now (raises R550)
        try:
            scanned = plan_with_globs(plan, key, env_in, use_index=use_cache)
        except DamagedPlan:
            if key is None:
                raise
            plan = load_plan(path, ctx, use_cache=False, environ=environ)[0]  # a damaged cached plan: compiled again
            backend, prefix = sandbox_prefix(plan, ctx)
            outcome = outcome.replace(sandbox_argv=tuple(prefix))
            scanned = plan_with_globs(plan, key, env_in, use_index=use_cache)
        if scanned is not plan:
            from stockade.runtime.sandbox import harden_bwrap_argv

            prefix = _chdir(harden_bwrap_argv(scanned["argv"], cwd=ctx["workspace"], bwrap=prefix[0]), backend,
                            ctx.get("cwd"))
            outcome = outcome.replace(sandbox_argv=tuple(prefix))
        try:
            return _confined(outcome, scanned, ctx, prefix, argv, env_in, preview, diff, apply, stdout, stderr,
                             stdin, notify, base, lock, hooks)
        except Exception as exc:
            # a match removed between the scan and bubblewrap's mounts fails the set-up before
            # the command starts (R507): scan again, at most twice
            codes = [d.code for d in getattr(exc, "diagnostics", ())]
            if scanned is plan or codes != [catalogue.SANDBOX_SETUP_FAILED] or attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _warn_cache(lock: Any, plan: Mapping[str, Any], notify: Callable[[str], None] | None) -> None:
    """One line for the user when the cache directory cannot be used (the run goes on
    without the cache; without the run lock, no placeholder is removed)."""
    from stockade.compiler.cache import cache_warning

    warning = cache_warning()
    if notify is None or (warning is None and (lock.problem is None or not plan["placeholders"])):
        return
    left = "; the placeholders bubblewrap makes are left on the host" \
        if lock.problem is not None and plan["placeholders"] else ""
    notify(f"{warning or f'warning: {lock.problem}'}{left}")


def _confined(outcome: RunOutcome, plan: Mapping[str, Any], ctx: Mapping[str, str], prefix: list[str],
              argv: list[str], env_in: Mapping[str, str], preview: bool, diff: bool,
              apply: bool | Callable[[PreviewResult], bool], stdout: Sink | None, stderr: Sink | None,
              stdin: int | None, notify: Callable[[str], None] | None, base: dict[str, Any], lock: Any,
              hooks: BrokerHooks | None = None) -> RunOutcome:
    """Run an approved command (the second half of :func:`run`)."""
    from stockade.runtime import audit as audit_mod
    from stockade.runtime.cache import filter_environment
    from stockade.runtime.execute import run_confined
    from stockade.runtime.plan import create_placeholder_files

    limits = Limits(**plan.get("limits", {}))
    env = filter_environment(plan.get("env_rules", []), env_in)
    recovered = None
    if os.path.lexists(apply_state_dir(ctx["workspace"])):  # only stockade's own state is trusted
        from stockade.runtime.apply import recover

        recovered = recover(ctx["workspace"])
        if recovered and notify is not None:
            notify(f"an interrupted apply in the workspace was {recovered}")
    overlay = None
    if preview:
        from stockade.runtime.preview import open_overlay

        overlay = open_overlay(ctx["workspace"])
    settled = None
    try:
        checked = plan.get("seccomp") if plan.get("machine") == os.uname().machine else None
        placeholder_files = plan.get("placeholder_files") or {}
        lock.record(plan["placeholders"], placeholder_files)  # before the sandbox makes them (the last run out
        # removes them)
        if placeholder_files:
            create_placeholder_files(placeholder_files)
        bridge: _Bridge | _HostBridge | None = None
        run_prefix = prefix
        command = argv
        if plan.get("broker") is not None and outcome.backend == "bwrap":
            bridge = _start_broker(plan, outcome.audit, base, hooks, prefix)
            env = {**env, **bridge.environment}
            run_prefix = [*prefix[:-1], *bridge.options, prefix[-1]]  # (before the final `--`)
            command = [*bridge.argv, *argv]  # (the connect launcher, when there is one, execs argv)
        elif plan.get("broker") is not None and outcome.backend == "seatbelt":
            bridge = _start_host_broker(plan, outcome.audit, base, hooks)
            env = {**env, **bridge.environment}
            run_prefix = seatbelt_broker_prefix(prefix, bridge.broker.http_port)
        try:
            host_cwd = ctx["workspace"] if outcome.backend == "bwrap" or overlay else ctx.get("cwd") or ctx["workspace"]
            result = run_confined(run_prefix, command, env, limits, cwd=host_cwd, stdout=stdout,
                                  stderr=stderr, stdin=stdin, pre_exec=overlay.pre_exec() if overlay else None,
                                  seccomp_programs=checked, workspace=ctx["workspace"],
                                  pass_fds=bridge.fds if bridge else (), after_spawn=bridge.started if bridge else None)
        finally:
            lock.release()  # the sandbox is gone: no mount of this run over a placeholder is left
            if bridge is not None:
                bridge.close()
        if result.setup_failed:
            lines = result.stderr_tail.decode("utf-8", "replace").strip().splitlines()
            raise _environment_problem(catalogue.SANDBOX_SETUP_FAILED,
                                       "the sandbox could not be set up; the command did not run: "
                                               f"`{lines[-1] if lines else result.returncode}`")
        if overlay is not None:
            from stockade.runtime.preview import settle_preview

            settled = settle_preview(overlay, plan, diff, apply)
    finally:
        if overlay is not None:
            overlay.cleanup()
    record = {"time": audit_mod.now_iso(), **base, "event": "run", "verdict": outcome.verdict,
              "backend": outcome.backend, "sandbox_argv": prefix, "command_argv": argv, "limits": limits.to_json(),
              **result.to_json()}
    blocked: tuple[str, ...] = ()
    warnings = result.warnings
    if bridge is not None:
        blocked = tuple(bridge.broker.summary())
        warnings = (*warnings, *bridge.broker.problems)
        record["net_blocked"] = len(bridge.broker.blocked())
        if isinstance(bridge, _Bridge):
            record["net_handoff"] = bridge.handoff_state()
    if settled is not None:
        record["preview"] = settled.to_json()
    audit_mod.append_record(outcome.audit, record)
    return outcome.replace(ran=True, exit_status=result.exit_status, returncode=result.returncode,
                   limits_hit=result.limits_hit, limits=limits, duration=result.duration, bytes_out=result.bytes_out,
                   bytes_err=result.bytes_err, bytes_shown=result.bytes_shown, preview=settled, recovered=recovered,
                   warnings=warnings, blocked=blocked)


class _Bridge:
    """A run's broker and how its listeners get into the sandbox's network namespace.

    bubblewrap is given ``--info-fd`` (it reports the sandbox's pid and namespaces once it
    has made them) and ``--block-fd`` (the sandbox waits there, set up, before the command
    starts).  :meth:`started`, called once bubblewrap has started, reads the report, opens
    the broker's listeners inside that namespace from the host
    (:class:`~stockade.runtime.netns.SandboxListeners`), hands them to the broker (or to the
    :class:`~stockade.runtime.netns.Standby` that makes it at the first use), and only then
    lets the command start.  When any of that fails it raises R508 and leaves the sandbox
    held: the caller kills it before :meth:`close` lets go of the block, so the command
    never starts.

    ``make_broker`` makes the :class:`~stockade.runtime.broker.Broker` (for ``loopback_ports``,
    whose proxy variables :attr:`environment` holds before it exists): with ``standby`` (the
    :class:`~stockade.runtime.netns.Standby`'s arguments), :attr:`broker` is a standby that
    calls it at the sandbox's first use of the network; without, :meth:`started` calls it
    once bubblewrap runs, so that the broker's modules load while bubblewrap sets the
    sandbox up.  :attr:`broker` is there from :meth:`started` on.  ``launch``
    (:class:`~stockade.runtime.launcher.Launch`, or None and ``why_not``): the connect
    launcher, run by bubblewrap before the command (:attr:`argv` goes before it); its
    listener reaches the broker for the connect handoff.
    """

    def __init__(self, make_broker: Callable[[], Any], loopback_ports: Sequence[int] = (), launch: Any = None,
                 why_not: str = "", *, standby: Mapping[str, Any] | None = None):
        from stockade.runtime.execute import _pipe
        from stockade.runtime.proxyenv import proxy_environment, proxy_ports

        self._make_broker = make_broker
        self._standby = standby
        self.broker: Any = None
        self.environment = proxy_environment(*proxy_ports(loopback_ports))
        self._info, info_write = _pipe()
        block_read, self._block = _pipe()
        self._own_fds: tuple[int, ...] = (info_write, block_read)
        self.options = ["--info-fd", str(info_write), "--block-fd", str(block_read)]
        self.launch = launch
        self.why_not = why_not
        self.argv: list[str] = []
        if launch is not None:
            self.options += launch.options
            self.argv = list(launch.argv)
        self.fds: tuple[int, ...] = (*self._own_fds, *(launch.fds if launch is not None else ()))
        self._pending = True
        self._helper: Any = None

    def handoff_state(self) -> str:
        """How this run's connections got out, for its audit record: ``handoff`` (the
        launcher's listener came), else ``relay`` and why."""
        if self._standby is not None:
            active = self.broker.handoff_active()
        else:
            active = self.broker.handoff is not None and self.broker.handoff.active
        if active:
            return "handoff"
        if self.launch is None:
            return f"relay: {self.why_not}" if self.why_not else "relay"
        return ("relay: the launcher sent no listener (a kernel without Landlock ABI 6 or seccomp user "
                "notification, or the command did not start)")

    def started(self, pid: int | None = None) -> None:
        """bubblewrap (``pid``) has started, or failed to (None): close the descriptors it was
        given here, put the listeners in its sandbox, start the broker, release the command."""
        if not self._pending:
            return
        self._pending = False
        for fd in self._own_fds:
            os.close(fd)
        self.fds = self._own_fds = ()
        launch = self.launch
        if launch is not None:
            launch.started()
        if self._standby is not None:  # (the broker is made when the sandbox first uses the network)
            from stockade.runtime.netns import Standby

            self.broker = Standby(self._make_broker, **self._standby)
        else:
            self.broker = self._make_broker()  # (its modules load while bubblewrap works)
        if pid is None:
            return
        from stockade.runtime.netns import SandboxListeners

        if launch is not None and self._standby is None:
            import stockade.runtime.handoff  # noqa: F401 - (loaded before the helper runs: start_handoff needs it)
        try:
            first, *fallbacks = self.broker.spec_attempts()  # with the stub resolver and capture, then without
            self._helper = SandboxListeners(self._info, pid, first, fallbacks=fallbacks)
            listeners = self._helper.result()
        except OSError as exc:
            raise _bridge_failed(str(exc.strerror or exc)) from None
        if listeners is None:
            return  # bubblewrap ended before it made the sandbox: its own error says why
        if self._standby is not None:
            self.broker.hold(listeners, self._helper.chosen, launch.channel if launch is not None else None)
        else:
            self.broker.choose(self._helper.chosen)
            self.broker.adopt(listeners)
            self.broker.serve()
            if launch is not None:
                self.broker.start_handoff(launch.channel)  # (its connects wait in the kernel until it serves)
        self._helper.reap()  # (a forked helper is gone before the command starts)
        try:
            os.write(self._block, b"G")  # the command starts; its connections wait in the listeners' queues
        except OSError:
            pass  # the sandbox is gone already (its set-up failed): bubblewrap says why

    def close(self) -> None:
        """The run is over (the sandbox is gone): stop the broker, release the descriptors."""
        self.started(None)
        if self.broker is not None:
            self.broker.stop()
        if self.launch is not None:
            self.launch.close()  # (the channel too, if the broker or the handoff did not close it)
        if self._helper is not None:
            self._helper.reap()
        for fd in (self._info, self._block):
            if fd >= 0:
                os.close(fd)
        self._info = self._block = -1


def _bridge_failed(why: str) -> StockadeError:
    return _environment_problem(catalogue.BROKER_UNREACHABLE, f"the network broker cannot listen inside the "
                                f"sandbox, so the command did not run: {why}",
                                help="the broker needs Linux 4.9 or later (`NS_GET_USERNS`) and bubblewrap's "
                                     "`--info-fd`/`--block-fd`; the command runs with no network at all under "
                                     "a policy without network rules")


class _HostBridge:
    """A run's broker on the host's own loopback (macOS: the sandbox shares it, and its
    Seatbelt profile lets it reach only the broker's port): listening before the sandbox
    starts, stopped with the run."""

    fds: tuple[int, ...] = ()
    options: tuple[str, ...] = ()

    def __init__(self, broker: Any):
        self.broker = broker
        try:
            broker.listen_on_host()
        except OSError as exc:  # the command does not run (never without its broker)
            raise _environment_problem(catalogue.BROKER_UNREACHABLE, "the network broker cannot listen on the "
                                       f"host's loopback, so the command did not run: {exc.strerror or exc}",
                                       help="the broker needs one free port on 127.0.0.1") from None
        self.environment = broker.environment()
        broker.serve()

    def started(self, pid: int | None = None) -> None:
        """Nothing to do: the broker listens already."""

    def close(self) -> None:
        """The run is over: stop the broker (its port refuses connections from then on)."""
        self.broker.stop()


def seatbelt_broker_prefix(prefix: Sequence[str], port: int) -> list[str]:
    """The ``sandbox-exec`` prefix with the broker's port as the profile's ``BROKER_PORT``
    parameter (``0`` in the compiled plan: no connection beyond loopback).  Raises R510 when
    the prefix has no such parameter (a profile that does not admit the broker)."""
    from stockade.backends.netplan import BROKER_PORT_PARAM

    out = list(prefix)
    for index in range(len(out) - 1):
        if out[index] == "-D" and out[index + 1].startswith(f"{BROKER_PORT_PARAM}="):
            out[index + 1] = f"{BROKER_PORT_PARAM}={int(port)}"
            return out
    raise _environment_problem(catalogue.ARTIFACT_REFUSED, f"the seatbelt profile has no `{BROKER_PORT_PARAM}` "
                               "parameter, so the network broker cannot be reached; the command did not run",
                               help="compile the policy again (`stockade run --no-cache`)")


def _start_host_broker(plan: Mapping[str, Any], audit_path: str, base: Mapping[str, Any],
                       hooks: BrokerHooks | None) -> _HostBridge:
    """The run's network broker on the host's loopback (macOS, :class:`_HostBridge`)."""
    from stockade.runtime.broker import Broker

    def load_ir() -> Any:
        from stockade.compiler.ir import PolicyIR
        from stockade.runtime.plan import plan_ir_json

        return PolicyIR.from_json(plan_ir_json(plan))

    return _HostBridge(Broker(load_ir, audit_path=audit_path, base=base,
                              resolver=hooks.resolver if hooks else None, on_start=hooks.on_start if hooks else None))


def _start_broker(plan: Mapping[str, Any], audit_path: str, base: Mapping[str, Any],
                  hooks: BrokerHooks | None, prefix: Sequence[str] = ()) -> _Bridge:
    """The run's network broker (:mod:`stockade.runtime.broker`) for a plan that needs one;
    it is made once bubblewrap runs and starts serving once its listeners are inside the
    sandbox (:meth:`_Bridge.started`).  With the connect launcher when it can be had
    (:func:`~stockade.runtime.launcher.launcher_binary`) and the bwrap ``prefix`` makes ``/dev``
    its own."""
    from stockade.runtime import launcher

    def load_ir() -> Any:
        from stockade.compiler.ir import PolicyIR
        from stockade.runtime.plan import plan_ir_json

        return PolicyIR.from_json(plan_ir_json(plan))

    def make_broker() -> Any:
        from stockade.runtime.broker import Broker

        broker = Broker(load_ir, loopback_ports=plan["broker"]["loopback"], audit_path=audit_path, base=base,
                        resolver=hooks.resolver if hooks else None, on_start=hooks.on_start if hooks else None,
                        rule_ports=plan["broker"].get("ports", ()), decided=plan["broker"].get("decided", ()))
        broker.may_capture = hooks.capture if hooks else True
        return broker

    launch, why_not = None, ""
    if hooks is not None and not hooks.handoff:
        why_not = "turned off by the caller"
    elif not launcher.usable_prefix(list(prefix)):
        why_not = "the sandbox's /dev is not a tmpfs of its own"
    else:
        binary, why_not = launcher.launcher_binary()
        if binary is not None:
            try:
                launch = launcher.Launch(binary)
            except OSError as exc:
                why_not = f"cannot pass the launcher: {exc.strerror or exc}"
    # a caller's on_start gets the broker itself, at once; else it is made at the sandbox's first use of the network
    standby = None if hooks is not None and hooks.on_start is not None else {
        "loopback_ports": plan["broker"]["loopback"], "rule_ports": plan["broker"].get("ports", ()),
        "may_capture": hooks.capture if hooks else True}
    return _Bridge(make_broker, plan["broker"]["loopback"], launch, why_not, standby=standby)
