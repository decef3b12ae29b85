"""Judging effects against the compiled policy: the verdict and every reason for it.

Command rules are strictest-wins over every argv the command runs (each unwrapping level);
effects are judged against the filesystem (``ir.path_access``, plus the rules *below* a path
for recursive operations), the network (``ir.network_access``), and fixed rules for privilege
escalation and persistence (deny).  Unknown effects take the policy's ``unknown-effects``
verdict, unparsable text its ``unparsable`` verdict.  The strictest reason decides; an allow
rule never loosens what the effects show.

Speed (this runs for every command an agent issues): what depends only on the policy — the
literal rules in order, which rules lie below a path, which paths are persistence locations,
the default network rule — is computed once per IR (:func:`policy_tables`, kept while the IR
lives); reasons render their message and rule text only when read (:class:`Reason`).
"""

from __future__ import annotations

import re
import weakref
from bisect import bisect_left

from stockade import catalogue as codes
from stockade.analyzer.effects import (
    CHILD_PID,
    PLAIN_MARK,
    REF_NAME,
    UNKNOWN,
    UNKNOWN_NAME,
    UNKNOWN_NAME_OR_EMPTY,
    UNKNOWN_NUMBER,
    Delete,
    Effect,
    Execute,
    Harmless,
    LinkTarget,
    Network,
    Opaque,
    Persistence,
    Privilege,
    Read,
    Rename,
    SpanT,
    Unknown,
    Unparsable,
    Write,
    show,
)
from stockade.compiler.ir import VERDICT_RANK

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

    from stockade.compiler.ir import Origin, PolicyIR

_PSEUDO_FILES = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero",
                           "/dev/random", "/dev/urandom", "/dev/full"})
_RC_FILES = (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin",
             ".bash_logout", ".config/fish/config.fish", ".inputrc", ".xprofile", ".xinitrc", ".pam_environment")
_AUTOSTART_DIRS = (".config/autostart", ".config/systemd/user", "Library/LaunchAgents", ".config/upstart",
                   ".local/share/systemd/user")
_SYSTEM_PERSIST = ("/etc/cron", "/etc/profile", "/etc/bash.bashrc", "/etc/zsh", "/etc/rc.local", "/etc/init.d",
                   "/etc/systemd", "/lib/systemd", "/usr/lib/systemd", "/etc/xdg/autostart", "/var/spool/cron",
                   "/Library/LaunchAgents", "/Library/LaunchDaemons", "/etc/ld.so.preload", "/etc/sudoers.d")
_NO_SOURCE: Any = object()
#: Per-IR memo tables are cleared when they reach this size (cheap to refill).
MEMO_SIZE = 4096
#: A path longer than this (Linux's ``PATH_MAX``) is not judged: the ``unparsable`` verdict.
MAX_PATH_CHARS = 4096
#: Characters of paths one command's judging may decide (memoised answers are free);
#: past it, the remaining effects are not judged: the ``unknown-effects`` verdict.
JUDGE_BUDGET = 8 * 1024 * 1024


class _JudgeBudgetSpent(Exception):
    """Judging one command decided more path characters than :data:`JUDGE_BUDGET`."""
#: Joins a root and a name glob in an effect's path: the entries so named at any depth below the
#: root (``find ROOT -name NAME -exec rm -rf {} +``); judged by :meth:`Judge._matched_below`.
MATCHED_BELOW = "/\x01**/"
#: The names git runs from a hooks directory (githooks(5)), and their samples.
_HOOK_NAMES = tuple(name + suffix for name in (
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit", "prepare-commit-msg",
    "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push", "pre-receive", "update",
    "proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
    "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
    "p4-post-changelist", "p4-pre-submit", "post-index-change") for suffix in ("", ".sample"))


class Reason:
    """Why a verdict: a code, a message, the span in the command, and the rule that decided.

    ``message``, ``rule`` (the deciding rule's :class:`Origin`) and ``rule_text`` (the rule as
    policy text) are computed when first read — most verdicts are only counted, never
    rendered.  Treat instances as immutable; equality and hashing use all six values."""

    __slots__ = ("_args", "_message", "_render", "_rule", "_rule_text", "_source", "code", "span", "verdict")

    def __init__(self, verdict: str, code: str, message: str, span: SpanT, rule: Origin | None = None,
                 rule_text: str | None = None):
        self.verdict = verdict
        self.code = code
        self.span = span
        self._message: str | None = message
        self._render: Callable[..., str] | None = None
        self._args: tuple[Any, ...] = ()
        self._source: Any = _NO_SOURCE
        self._rule = rule
        self._rule_text = rule_text

    @classmethod
    def deferred(cls, verdict: str, code: str, render: Callable[..., str], args: tuple, span: SpanT,
                 source: Any = None) -> Reason:
        """A reason whose message is ``render(*args)`` and whose rule is ``source`` (a policy
        rule object, or None), both worked out when first read."""
        self = cls.__new__(cls)
        self.verdict = verdict
        self.code = code
        self.span = span
        self._message = None
        self._render = render
        self._args = args
        self._source = source
        self._rule = None
        self._rule_text = None
        return self

    @property
    def message(self) -> str:
        """The reason in words."""
        message = self._message
        if message is None:
            render = self._render
            assert render is not None, "a reason with neither a message nor a renderer"
            message = self._message = render(*self._args)
        return message

    def _resolve_rule(self) -> None:
        source = self._source
        if source is not _NO_SOURCE:
            self._rule = getattr(source, "origin", None) if source is not None else None
            self._rule_text = rule_text(source)
            self._source = _NO_SOURCE

    @property
    def rule(self) -> Origin | None:
        """Where the deciding policy rule was written (None: a built-in rule)."""
        self._resolve_rule()
        return self._rule

    @property
    def rule_text(self) -> str | None:
        """The deciding rule as policy text."""
        self._resolve_rule()
        return self._rule_text

    def _key(self) -> tuple[object, ...]:
        return self.verdict, self.code, self.message, self.span, self.rule, self.rule_text

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Reason:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Reason(verdict={self.verdict!r}, code={self.code!r}, message={self.message!r}, span={self.span!r}, "
                f"rule={self.rule!r}, rule_text={self.rule_text!r})")

    def to_json(self) -> dict:
        """The reason as a JSON object."""
        rule = self.rule
        return {"verdict": self.verdict, "code": self.code, "message": self.message,
                "span": {"start": self.span[0], "end": self.span[1]},
                "rule": None if rule is None else {"file": rule.file, "line": rule.line, "column": rule.column,
                                                   "layer": rule.layer, "text": self.rule_text}}


class Verdict:
    """The analyzer's answer: ``allow``, ``confirm`` or ``deny``, with every reason (treat as
    immutable; equal when command, decision and reasons are)."""

    __slots__ = ("command", "decision", "reasons")

    def __init__(self, command: str, decision: str, reasons: tuple[Reason, ...] = ()):
        self.command = command
        self.decision = decision
        self.reasons = reasons

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Verdict:
            return NotImplemented
        return (self.command, self.decision, self.reasons) == (other.command, other.decision, other.reasons)

    def __hash__(self) -> int:
        return hash((self.command, self.decision, self.reasons))

    def __repr__(self) -> str:
        return f"Verdict(command={self.command!r}, decision={self.decision!r}, reasons={self.reasons!r})"

    def to_json(self) -> dict:
        """The verdict as a JSON object."""
        return {"command": self.command, "decision": self.decision,
                "reasons": [reason.to_json() for reason in self.reasons]}


# -- per-IR tables -----------------------------------------------------------------------------


class _DefaultRule:
    """The network default as a rule object (for reasons)."""

    def __init__(self, ir: PolicyIR):
        self.origin = ir.network.default_origin
        self.text = f"default {ir.network.default}"


class PolicyTables:
    """What judging needs from one IR, computed once: the query index, the literal
    filesystem rules in pattern order, the policy settings, and memos of the pure functions
    of a path (rules below it, persistence location, the reasons a read or write of it gets)."""

    def __init__(self, ir: PolicyIR):
        self.index = ir.index
        #: the index's answers (its memos, filled as it answers), read before asking it
        self.known_paths = ir.index.known_paths
        self.known_commands = ir.index.known_commands
        self.home = ir.context.home
        self.home_prefix = self.home.rstrip("/") + "/"
        self.literal = tuple(sorted((rule for rule in ir.filesystem if not rule.is_glob), key=lambda r: r.pattern))
        #: the patterns of :attr:`literal`, in the same (sorted) order: those below a path are a range
        self._literal_patterns = [rule.pattern for rule in self.literal]
        self._literal_paths = tuple(rule.pattern for rule in self.literal if rule.pattern != "/")
        self._glob_paths = tuple(rule.pattern for rule in ir.filesystem if rule.is_glob)
        self._glob_rules = tuple(rule for rule in ir.filesystem if rule.is_glob)
        #: the first rule that denies a path (a raw disk device holds it: see Judge._read_reasons)
        self.first_denied = next((rule for rule in ir.filesystem if rule.access == "none"), None)
        self._globs: dict[tuple[str, bool], tuple[str, ...]] = {}
        self.unknown_effects = ir.unknown_effects
        self.unparsable = ir.unparsable
        self.default_rule = _DefaultRule(ir)
        self._below: dict[tuple[str, str], tuple] = {}
        self._persist: dict[str, str | None] = {}
        #: (path as the effect names it, cwd, recursive, verb or skip_hidden) → the reasons a
        #: write (delete, move) or read of it gets, as ``Judge._add`` arguments without the span
        self.writes: dict[tuple, tuple] = {}
        self.reads: dict[tuple, tuple] = {}

    def below(self, path: str, need: str) -> tuple:
        """Literal rules strictly below ``path`` that grant less than ``need`` (pattern order)."""
        key = (path, need)
        found = self._below.get(key)
        if found is None:
            prefix = path.rstrip("/") + "/"
            root = path == "/"
            if root:
                rules: Sequence[Any] = self.literal
            else:  # the patterns that start with `prefix`: one range of the sorted patterns
                patterns = self._literal_patterns
                rules = self.literal[bisect_left(patterns, prefix):bisect_left(patterns, prefix[:-1] + "0")]
            found = tuple(rule for rule in rules
                          if (rule.pattern.startswith(prefix) or (root and rule.pattern != "/"))
                          and ((need == "write" and rule.access != "write")
                               or (need == "read" and rule.access == "none")))
            if len(self._below) >= MEMO_SIZE:
                self._below.clear()
            self._below[key] = found
        return found

    def grants_below(self, path: str, need: str) -> bool:
        """Whether a rule strictly below ``path`` (a literal one, or any glob rule) grants
        ``need`` (``read``: any access; ``write``): when none does, every path below ``path``
        has the access ``path`` has."""
        prefix = path.rstrip("/") + "/"
        patterns = self._literal_patterns
        candidates = self.literal[bisect_left(patterns, prefix):bisect_left(patterns, prefix[:-1] + "0")]
        for rule in (*candidates, *self._glob_rules):
            if (rule.is_glob or rule.pattern.startswith(prefix)) and \
                    (rule.access == "write" if need == "write" else rule.access != "none"):
                return True
        return False

    def glob_candidates(self, path: str, deep: bool = False) -> tuple[str, ...]:
        """The concrete paths a glob path is judged as (:func:`globs.path_candidates`)."""
        key = (path, deep)
        found = self._globs.get(key)
        if found is None:
            from stockade.analyzer.globs import path_candidates

            found = tuple(path_candidates(path, self._literal_paths, self._glob_paths, deep))
            if len(self._globs) >= MEMO_SIZE:
                self._globs.clear()
            self._globs[key] = found
        return found

    def persistence_target(self, path: str) -> str | None:
        """What runs later from ``path`` (a resolved path), or None."""
        memo = self._persist
        if path in memo:
            return memo[path]
        found = _persistence_target(path, self.home_prefix)
        if len(memo) >= MEMO_SIZE:
            memo.clear()
        memo[path] = found
        return found


_TABLES: dict[int, tuple[Any, PolicyTables]] = {}
#: The (weak reference to the IR, tables) last returned by :func:`policy_tables`: an agent's
#: commands are judged against one policy, so :meth:`Judge._start` checks it first.
_LAST: tuple[Any, PolicyTables | None] = (lambda: None, None)


def policy_tables(ir: PolicyIR) -> PolicyTables:
    """The :class:`PolicyTables` of ``ir`` (built on first use, dropped when the IR is)."""
    global _LAST
    key = id(ir)
    entry = _TABLES.get(key)
    if entry is not None and entry[0]() is ir:
        _LAST = entry
        return entry[1]
    tables = PolicyTables(ir)
    try:
        ref = weakref.ref(ir, lambda dead: _forget(key, dead))
    except TypeError:  # an IR that cannot be weakly referenced: no caching
        return tables
    _LAST = _TABLES[key] = (ref, tables)
    return tables


def _forget(key: int, dead: Any) -> None:
    """Drop the tables of an IR that is gone (its weak reference ``dead`` fired)."""
    global _LAST
    if _TABLES.get(key, (None,))[0] is dead:
        del _TABLES[key]
    if _LAST[0] is dead:
        _LAST = (lambda: None, None)


def _persistence_target(path: str, home_prefix: str) -> str | None:
    if path.startswith(home_prefix):
        rel = path[len(home_prefix):]
        for name in _RC_FILES:
            if rel == name:
                return f"a shell startup file (`~/{name}`)"
        for name in _AUTOSTART_DIRS:
            if rel == name or rel.startswith(name + "/"):
                return f"an autostart location (`~/{name}`)"
    if "/.git/hooks/" in path + "/" and not path.endswith("/.git/hooks"):
        return "a git hook"
    if path.endswith("/.git/hooks"):
        return "the git hooks directory"
    if path.startswith(_SYSTEM_PERSIST):  # (one C-level test before finding which)
        for prefix in _SYSTEM_PERSIST:
            if path.startswith(prefix):
                return f"a system startup location (`{prefix}`)"
    return None


#: files whose code a tool runs the next time it starts (not this command): basename → what runs it
_STARTUP_NAMES = {
    ".envrc": "direnv runs it as shell code when a shell enters its directory",
    ".pre-commit-config.yaml": "pre-commit runs the hooks it names at the next commit",
    "lefthook.yml": "lefthook runs the commands it names as git hooks",
    ".lefthook.yml": "lefthook runs the commands it names as git hooks",
    "devcontainer.json": "a dev container runs the commands it names when it is built or opened",
    ".gitpod.yml": "Gitpod runs the tasks it names when the workspace opens",
    "sitecustomize.py": "Python runs it at every start when it is on the module path",
    "usercustomize.py": "Python runs it at every start when it is on the module path",
}
#: (path ending, what runs it): files and directories of code run at a tool's next start
_STARTUP_ENDINGS = (
    ("/.vscode/tasks.json", "VS Code runs the tasks it names (on folder open, or when asked)"),
    ("/.vscode/settings.json", "VS Code runs the programs its settings name (terminal, formatters, linters)"),
    ("/.vscode/launch.json", "VS Code runs the programs it names when debugging starts"),
    (".code-workspace", "VS Code runs the tasks and programs it names when the workspace opens"),
    ("/.git/info/attributes", "git runs the filter and diff drivers it names"),
    (".pth", "Python runs its `import` lines at every start when it is in a site-packages directory"),
)
#: home-relative files whose code runs when a tool next starts
_STARTUP_HOME = {
    ".ssh/config": "ssh runs the ProxyCommand and LocalCommand it names",
    ".ssh/rc": "sshd runs it at every login",
    ".ssh/environment": "sshd sets its variables at every login",
    ".config/git/attributes": "git runs the filter and diff drivers it names",
    ".bash_aliases": "bash runs it at the start of an interactive shell",
    ".vimrc": "vim runs its commands at every start", ".exrc": "vi runs its commands at every start",
    ".config/nvim/init.vim": "neovim runs it at every start", ".config/nvim/init.lua": "neovim runs it at every start",
    ".emacs": "emacs runs it at every start", ".emacs.d/init.el": "emacs runs it at every start",
    ".tmux.conf": "tmux runs its commands (run-shell) at every start",
    ".config/tmux/tmux.conf": "tmux runs its commands (run-shell) at every start",
    ".config/direnv/direnvrc": "direnv runs it before every `.envrc`",
    ".cargo/config.toml": "cargo runs the programs it names (rustc-wrapper, runner, linker)",
    ".cargo/config": "cargo runs the programs it names (rustc-wrapper, runner, linker)",
    ".pythonrc": "Python runs it at an interactive start (PYTHONSTARTUP)",
    ".pythonrc.py": "Python runs it at an interactive start (PYTHONSTARTUP)",
}


def _startup_code(path: str, home_prefix: str) -> str | None:
    """What runs the code of ``path`` (resolved) the next time a tool starts — direnv's
    ``.envrc``, pre-commit's config, VS Code's tasks, husky's hooks, ssh configuration, editors'
    startup files — or None (git's configuration files are judged by what is written to them:
    see models.vcs and models.netconfig)."""
    name = path.rpartition("/")[2]
    found = _STARTUP_NAMES.get(name)
    if found is not None:
        return found if name not in ("sitecustomize.py", "usercustomize.py") or "/site-packages/" in path or \
            "/dist-packages/" in path else None
    if "/.husky/" in path and "/.husky/_/" not in path and not name.startswith("."):
        return "husky runs it as a git hook"
    if path.startswith(home_prefix):
        found = _STARTUP_HOME.get(path[len(home_prefix):])
        if found is not None:
            return found
        if path[len(home_prefix):].startswith(".ipython/") and "/startup/" in path:
            return "IPython runs it at every start"
    for ending, what in _STARTUP_ENDINGS:
        if path.endswith(ending):
            if ending == ".pth" and "/site-packages/" not in path and "/dist-packages/" not in path:
                continue
            return what
    return None


# -- messages (rendered when read) ---------------------------------------------------------------


def _msg_command(argv: tuple[str, ...], verdict: str, rule: Any) -> str:
    because = f": {rule.reason}" if rule is not None and rule.reason else ""
    return f"command `{show(' '.join(argv))[:80]}` matches `{verdict} {rule.text if rule else ''}`{because}"


def _msg_unknown_path(op: str, path: str) -> str:
    return f"{op} a path that is not known before it runs (`{show(path)}`)"


def _msg_proc_environ(path: str) -> str:
    return f"reads `{show(path)}`, the environment of another process (it can hold secrets the policy keeps out)"


def _msg_raw_device(path: str, pattern: str) -> str:
    return (f"reads `{path}`, a disk or memory device that holds every file, including `{pattern}`, which the "
            "policy denies")


def _msg_denied_below_unknown(verb: str, path: str) -> str:
    return f"{verb} a file below `{path}` whose name is not known before it runs, and the policy denies `{path}`"


def _msg_not_writable_below_unknown(verb: str, path: str) -> str:
    return (f"{verb} a path below `{path}` whose name is not known before it runs, and the policy makes nothing "
            f"below `{path}` writable")


def _msg_denied_read(path: str) -> str:
    return f"reads `{path}`, which the policy denies"


def _msg_denied_read_below(path: str, pattern: str) -> str:
    return f"reads everything below `{path}`, including `{pattern}`, which the policy denies"


def _msg_persistence_write(verb: str, target: str) -> str:
    return f"{verb} {target}: code that runs later (persistence)"


def _msg_startup(verb: str, path: str, what: str) -> str:
    return f"{verb} `{path}`: {what}, so what it runs later cannot be seen into"


def _msg_not_writable(verb: str, path: str) -> str:
    return f"{verb} `{path}`, which the policy does not make writable"


def _msg_not_writable_below(verb: str, path: str, pattern: str) -> str:
    return f"{verb} everything below `{path}`, including `{pattern}`, which the policy does not make writable"


def _msg_link(path: str) -> str:
    return f"makes a link to `{path}`, which the policy denies: reads through it would bypass the rule"


def _msg_network(host: str, port: int | None) -> str:
    where = host if port is None else f"{host}:{port}"
    return f"contacts `{where}`, which the network policy does not allow"


def _msg_privilege(what: str) -> str:
    return f"privilege escalation: {what}"


def _msg_persistence(what: str) -> str:
    return f"persistence: {what}"


def _msg_opaque(program: str, path: str, access: str) -> str:
    what = "denies" if access == "none" else "does not make writable"
    return f"`{program}` has no model: what it does to `{path}`, which the policy {what}, is not known"


def _msg_unparsable(why: str) -> str:
    return f"cannot parse the command reliably: {why}"


def _msg_path_too_long(op: str, size: int) -> str:
    return (f"cannot parse the command reliably: it {op} a path of {size} characters, longer than the analyzer "
            f"judges ({MAX_PATH_CHARS})")


def _hidden_below(pattern: str, root: str) -> bool:
    """Whether ``pattern`` (a path below ``root``) passes through a dot-file or dot-directory."""
    relative = pattern[len(root.rstrip("/")) + 1:]
    return any(part.startswith(".") for part in relative.split("/"))


def _same(text: str) -> str:
    return text


def _judged_path(path: str) -> str | None:
    """The path a read or write is judged as: None for pseudo-files (``/dev/null``, descriptors),
    :data:`UNKNOWN` itself (the same object: callers test ``is UNKNOWN``) when the path is not
    known, a glob as one concrete name (dot-files are not matched by ``*``)."""
    if path in _PSEUDO_FILES or path.startswith(("/dev/fd/", "/proc/self/fd/")):
        return None
    if UNKNOWN in path:
        return UNKNOWN
    if "*" not in path and "?" not in path and "[" not in path:  # no glob
        return path
    return path.replace("*", "x").replace("?", "x").replace("[", "x")


#: block and memory devices: reading one reads the files of every filesystem on it
#: another process's environment (not this one's: ``/proc/self/environ`` is the command's own)
_PROC_ENVIRON = re.compile(r"/proc/(?!self/|thread-self/)[^/]+/(?:task/[^/]+/)?environ$")
_RAW_DEVICE = re.compile(r"/dev/(?:[shv]d[a-z]|xvd[a-z]|nvme[0-9]|mmcblk[0-9]|dm-[0-9]|md[0-9]|loop[0-9]|sr[0-9]|"
                         r"mapper/|disk/|root$|mem$|kmem$|port$|nbd[0-9]|zd[0-9]|rbd[0-9])")


def _unknown_below(path: str) -> str | None:
    """For an absolute path whose name is not known from some component on (``~/.ssh/…``,
    ``/dev/sd…``): the known directory above that component, when it is plain (no ``.``/``..``
    components, no glob, not ``/``); else None.  (The unknown part could climb out with ``..``:
    the path is judged as below that directory, the strict reading of what was written.)"""
    head = path[:path.find(UNKNOWN)]
    directory = head.rpartition("/")[0]
    if not directory.startswith("/") or "/./" in directory + "/" or "/../" in directory + "/" or \
            "*" in directory or "?" in directory or "[" in directory:
        return None
    return directory


def plain_names_glob(path: str) -> str | None:
    """A path whose only unknown parts are plain names or numbers (:data:`UNKNOWN_NAME`,
    :data:`UNKNOWN_NUMBER`, :data:`UNKNOWN_NAME_OR_EMPTY`: no ``/``, no leading dot) as the glob
    of the names it could be: ``*`` for each name, ``[0-9]*`` for each number
    (``/ws/backup-*.tgz``), ``*`` for a ref name's first form (see :func:`plain_names_globs`); None
    when another part is unknown, or none is plain."""
    plain = path.replace(UNKNOWN_NAME, "*").replace(UNKNOWN_NUMBER, "[0-9]*").replace(
        UNKNOWN_NAME_OR_EMPTY, "*").replace(CHILD_PID, "[0-9]*").replace(REF_NAME, "*")
    return None if UNKNOWN in plain or plain == path else plain


def plain_names_globs(path: str) -> list[str]:
    """The globs :func:`plain_names_glob` judges ``path`` as, and, for a part that may be empty
    and is a whole component (``$PWD/$(git rev-parse HEAD)``), the path without it too."""
    plain = plain_names_glob(path)
    if plain is None:
        return []
    out = [plain]
    if REF_NAME in path and path.count(REF_NAME) == 1:
        # a ref name holds `/` (`feature/x`: `*/**/*`, no hidden component) or is empty
        for ref in ("*/**/*", ""):
            other = plain_names_glob(path.replace(REF_NAME, ref)) or path.replace(REF_NAME, ref)
            if UNKNOWN not in other and other not in out:
                out.append(other.replace("//", "/") if len(other) > 1 else other)
    elif REF_NAME in path:
        return []  # (more than one: not followed)
    if UNKNOWN_NAME_OR_EMPTY in path:
        parts = path.split("/")
        shorter = [part for part in parts if part != UNKNOWN_NAME_OR_EMPTY]
        if len(shorter) != len(parts):
            alternative = plain_names_glob("/".join(shorter) or "/")
            if alternative is None and UNKNOWN not in "/".join(shorter):
                alternative = "/".join(shorter) or "/"
            if alternative is not None and alternative not in out:
                out.append(alternative)
    return out


def _is_glob(path: str) -> bool:
    """Whether a known path is a glob (judged as every path it could match); a ``[`` with no
    ``]`` after it is a literal character, as in bash."""
    if UNKNOWN in path:
        return False
    if "*" in path or "?" in path:
        return True
    start = path.find("[")
    return start != -1 and path.find("]", start + 1) != -1


def _each_plain(path_in: str, reasons_of: Callable[[str], tuple]) -> tuple | None:
    """The reasons of every name a path holding plain values could be (each reason once), from
    ``reasons_of``; None when the path's plain values give no names to judge."""
    plains = plain_names_globs(path_in)
    if not plains:
        return None
    collected: list[tuple] = []
    for plain in plains:
        collected += [reason for reason in reasons_of(plain) if reason not in collected]
    return tuple(collected)


class Judge:
    """Holds effects against one policy."""

    def __init__(self, ir: PolicyIR, cwd: str | None = None):
        self._start(ir, cwd)

    def _start(self, ir: PolicyIR, cwd: str | None) -> None:
        """Set up (``__init__``; :func:`~stockade.analyzer.analyze` calls it on ``object.__new__(Judge)``:
        in CPython 3.11 ``Judge(…)`` re-enters the interpreter through ``type.__call__``)."""
        self.ir = ir
        self.cwd = cwd
        self.reasons: list[Reason] = []
        self._seen: dict[tuple, list[Reason]] = {}
        self._work = 0  # path characters decided (see JUDGE_BUDGET)
        ref, tables = _LAST  # the IR of the previous command, usually
        if ref() is not ir or tables is None:
            tables = policy_tables(ir)
        self._tables = tables

    def _add(self, verdict: str, code: str, render: Callable[..., str], args: tuple, span: SpanT,
             source: Any = None) -> None:
        """Record one reason unless an equal one (verdict, code, message, span) is recorded."""
        reason = _new_object(Reason)  # Reason.deferred(…), inline: one call less per reason
        reason.verdict = verdict
        reason.code = code
        reason.span = span
        reason._message = None
        reason._render = render
        reason._args = args
        reason._source = source
        reason._rule = None
        reason._rule_text = None
        key = (verdict, code, span)
        bucket = self._seen.get(key)
        if bucket is None:
            self._seen[key] = [reason]
        else:  # same verdict, code and span: only now are the messages worth rendering
            message = reason.message
            for other in bucket:
                if other.message == message:
                    return
            bucket.append(reason)
        self.reasons.append(reason)

    def add(self, verdict: str, code: str, message: str, span: SpanT, rule: object = None) -> None:
        """Record one reason with a ready message (deduplicated)."""
        self._add(verdict, code, _same, (message,), span, rule)

    def unknown(self, message: str, span: SpanT) -> None:
        setting = self._tables.unknown_effects
        self._add(setting.verdict, codes.UNKNOWN_EFFECTS, _same, (message,), span, setting)

    # -- effects ----------------------------------------------------------------------------

    def judge(self, effects: Iterable[Effect]) -> None:
        """Judge every effect."""
        handlers = _HANDLERS
        known_commands = self._tables.known_commands
        try:
            for effect in effects:
                cls = effect.__class__
                if type(effect) is Execute:  # the most frequent effect; a known, allowed argv needs no call
                    decision = known_commands.get(effect.argv)
                    if decision is not None and (decision.verdict is None or decision.verdict == "allow"):
                        continue
                handler = handlers.get(cls)
                if handler is not None:
                    handler(self, effect)
        except _JudgeBudgetSpent:
            self.unknown(f"judging stopped at its budget ({JUDGE_BUDGET} path characters); the command's further "
                         "effects are not judged", effect.span)

    def _spend(self, path: str) -> None:
        """Count a path about to be decided against :data:`JUDGE_BUDGET`."""
        self._work += len(path)
        if self._work > JUDGE_BUDGET:
            raise _JudgeBudgetSpent()

    def judge_Execute(self, effect: Execute) -> None:
        argv = effect.argv  # a tuple: the index's key
        decision = self._tables.known_commands.get(argv)
        if decision is None:
            decision = self._tables.index.command_verdict(argv)
        verdict = decision.verdict
        if verdict is not None and verdict != "allow":
            self._add(verdict, codes.COMMAND_RULE, _msg_command, (effect.argv, verdict, decision.rule), effect.span,
                      decision.rule)

    def _path(self, path: str, span: SpanT, op: str) -> str | None:
        """:func:`_judged_path`, with the reason an unknown path gets recorded (then None)."""
        judged = _judged_path(path)
        if judged is UNKNOWN:
            setting = self._tables.unknown_effects
            self._add(setting.verdict, codes.UNKNOWN_EFFECTS, _msg_unknown_path, (op, path), span, setting)
            return None
        return judged

    def judge_Read(self, effect: Read) -> None:
        memo = self._tables.reads
        key = (effect.path, self.cwd, effect.recursive, effect.skip_hidden)
        found = memo.get(key)
        if found is None:
            found = self._read_reasons(effect.path, effect.recursive, effect.skip_hidden)
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            memo[key] = found
        for verdict, code, render, args, source in found:
            self._add(verdict, code, render, args, effect.span, source)

    def _read_reasons(self, path_in: str, recursive: bool, skip_hidden: bool) -> tuple:
        """The reasons a read of ``path_in`` gets (``_add`` arguments but the span): a pure
        function of the path, the cwd and the policy, memoised by :meth:`judge_Read`.  A glob
        gets the reasons of every path it could match (:meth:`PolicyTables.glob_candidates`)."""
        if path_in[:6] == "/proc/" and _PROC_ENVIRON.match(path_in):
            return self._environ_reasons(path_in)
        if PLAIN_MARK in path_in:
            found = _each_plain(path_in, lambda plain: self._read_reasons(plain, recursive, skip_hidden))
            if found is not None:
                return found
        if _is_glob(path_in) and not path_in.startswith("/dev/fd/"):
            reasons: list[tuple] = []
            for candidate in self._tables.glob_candidates(path_in, deep=not skip_hidden):
                for reason in self._read_reasons(candidate, recursive, skip_hidden):
                    if reason not in reasons:
                        reasons.append(reason)
            return tuple(reasons)
        path = _judged_path(path_in)
        if path is None:
            return ()
        if path is UNKNOWN:
            directory = _unknown_below(path_in)
            if directory is not None and not self._tables.grants_below(directory, "read"):
                above = self._tables.index.path_access(directory, self.cwd)
                if above.access == "none":  # (`cat ~/.ssh/"$K"`: whatever K is, a denied file)
                    return (("deny", codes.DENIED_READ, _msg_denied_below_unknown, ("reads", above.path), above.rule),)
            setting = self._tables.unknown_effects
            return ((setting.verdict, codes.UNKNOWN_EFFECTS, _msg_unknown_path, ("reads", path_in), setting),)
        if len(path) > MAX_PATH_CHARS:
            setting = self._tables.unparsable
            return ((setting.verdict, codes.UNPARSABLE_COMMAND, _msg_path_too_long, ("reads", len(path)), setting),)
        decision = self._tables.known_paths.get((path, self.cwd))
        if decision is None:
            self._spend(path)
            decision = self._tables.index.path_access(path, self.cwd)
        if decision.access == "none":  # not decision.can_read (a property: a call)
            return (("deny", codes.DENIED_READ, _msg_denied_read, (decision.path,), decision.rule),)
        if path.startswith("/dev/") and _RAW_DEVICE.match(path) and self._tables.first_denied is not None:
            # a disk or memory device holds every file, the denied ones too: reading it reads them
            rule = self._tables.first_denied
            return (("deny", codes.DENIED_READ, _msg_raw_device, (path, rule.pattern), rule),)
        if not recursive:
            return ()
        rules = self._tables.below(decision.path, "read")
        if skip_hidden and rules:
            rules = tuple(rule for rule in rules if not _hidden_below(rule.pattern, decision.path))
        return tuple(("deny", codes.DENIED_READ, _msg_denied_read_below, (decision.path, rule.pattern), rule)
                     for rule in rules[:3])

    def _environ_reasons(self, path: str) -> tuple:
        """A read of another process's environment (``/proc/1/environ``, ``/proc/*/environ``):
        it holds the variables the policy's environment rules keep from the sandbox (tokens,
        keys), which a command run without it can read there — unknown effects."""
        setting = self._tables.unknown_effects
        return ((setting.verdict, codes.UNKNOWN_EFFECTS, _msg_proc_environ, (path,), setting),)

    def _write(self, path_in: str, span: SpanT, recursive: bool, verb: str) -> None:
        memo = self._tables.writes
        key = (path_in, self.cwd, recursive, verb)
        found = memo.get(key)
        if found is None:
            found = self._write_reasons(path_in, recursive, verb)
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            memo[key] = found
        for verdict, code, render, args, source in found:
            self._add(verdict, code, render, args, span, source)

    def _write_reasons(self, path_in: str, recursive: bool, verb: str) -> tuple:
        """The reasons writing (deleting, moving) ``path_in`` gets (``_add`` arguments but the
        span): a pure function of the path, the cwd and the policy, memoised by :meth:`_write`
        (a glob: the reasons of every path it could match)."""
        if PLAIN_MARK in path_in:
            each = _each_plain(path_in, lambda plain: self._write_reasons(plain, recursive, verb))
            if each is not None:
                return each
        if MATCHED_BELOW in path_in and UNKNOWN not in path_in:
            return self._matched_below_reasons(path_in, recursive, verb)
        if _is_glob(path_in) and not path_in.startswith("/dev/fd/"):
            found: list[tuple] = []
            for candidate in self._tables.glob_candidates(path_in):
                for reason in self._write_reasons(candidate, recursive, verb):
                    if reason not in found:
                        found.append(reason)
            return tuple(found)
        path = _judged_path(path_in)
        if path is None:
            return ()
        if path is UNKNOWN:
            directory = _unknown_below(path_in)
            if directory is not None and not self._tables.grants_below(directory, "write"):
                above = self._tables.index.path_access(directory, self.cwd)
                if above.access != "write":  # (`rm -rf "/etc/$X"`: nothing below /etc is writable)
                    return (("deny", codes.DENIED_WRITE, _msg_not_writable_below_unknown, (verb, above.path),
                             above.rule),)
            setting = self._tables.unknown_effects
            return ((setting.verdict, codes.UNKNOWN_EFFECTS, _msg_unknown_path, (verb, path_in), setting),)
        if len(path) > MAX_PATH_CHARS:
            setting = self._tables.unparsable
            return ((setting.verdict, codes.UNPARSABLE_COMMAND, _msg_path_too_long, (verb, len(path)), setting),)
        decision = self._tables.known_paths.get((path, self.cwd))
        if decision is None:
            self._spend(path)
            decision = self._tables.index.path_access(path, self.cwd)
        resolved = decision.path
        reasons: list[tuple[Any, ...]] = []
        target = self._tables.persistence_target(resolved)
        if target is not None:
            reasons.append(("deny", codes.PERSISTENCE, _msg_persistence_write, (verb, target), None))
        elif verb == "writes":
            startup = _startup_code(resolved, self._tables.home_prefix)
            if startup is not None:  # code a tool runs at its next start: not visible now
                setting = self._tables.unknown_effects
                reasons.append((setting.verdict, codes.UNKNOWN_EFFECTS, _msg_startup, (verb, resolved, startup),
                                setting))
        if decision.access != "write":  # not decision.can_write
            reasons.append(("deny", codes.DENIED_WRITE, _msg_not_writable, (verb, resolved), decision.rule))
        elif recursive:
            for rule in self._tables.below(resolved, "write")[:3]:
                reasons.append(("deny", codes.DENIED_WRITE, _msg_not_writable_below, (verb, resolved, rule.pattern),
                                rule))
        return tuple(reasons)

    def _matched_below(self, path_in: str, recursive: bool, verb: str) -> tuple:
        """Reasons for ``ROOT/**/NAME`` (entries named by the glob NAME at any depth below ROOT,
        as ``find -name NAME -exec rm -rf {} +`` touches): ROOT must be writable, and a rule
        below it that grants less is touched only when a component of its path below ROOT can
        be such an entry (or be inside one, when ``recursive``)."""
        from stockade.analyzer.globs import name_regex

        root, _, name = path_in.partition(MATCHED_BELOW)
        matches = name_regex(name).match
        decision = self._tables.index.path_access(root, self.cwd)
        resolved = decision.path
        if decision.access != "write":
            return (("deny", codes.DENIED_WRITE, _msg_not_writable, (verb, resolved + "/…/" + name), decision.rule),)
        reasons: list[tuple[Any, ...]] = []
        prefix = resolved.rstrip("/") + "/"
        for rule in self._tables.below(resolved, "write"):
            parts = rule.pattern[len(prefix):].split("/")
            if rule.pattern.endswith("/.git/hooks"):  # what a hooks directory can hold
                parts = parts + list(_HOOK_NAMES)
            hit = any(matches(part) for part in (parts if recursive else parts[-1:]))
            hit = hit or (not recursive and rule.pattern.endswith("/.git/hooks")
                          and any(matches(hook) for hook in _HOOK_NAMES))
            if hit:
                reasons.append(("deny", codes.DENIED_WRITE, _msg_not_writable_below, (verb, resolved + "/…/" + name,
                                                                          rule.pattern), rule))
                if len(reasons) >= 3:
                    break
        return tuple(reasons)

    _matched_below_reasons = _matched_below

    def judge_Write(self, effect: Write) -> None:
        self._write(effect.path, effect.span, effect.recursive, "writes")

    def judge_Delete(self, effect: Delete) -> None:
        self._write(effect.path, effect.span, effect.recursive, "deletes")

    def judge_Rename(self, effect: Rename) -> None:
        self._write(effect.source, effect.span, True, "moves")
        self._write(effect.dest, effect.span, True, "writes")

    def judge_LinkTarget(self, effect: LinkTarget) -> None:
        if PLAIN_MARK in effect.path:
            plains = plain_names_globs(effect.path)
            if plains:  # (a link to `app-$(git rev-parse HEAD)`: to each name it could be)
                for plain in plains:
                    for candidate in self._tables.glob_candidates(plain):
                        self.judge_LinkTarget(LinkTarget(candidate, effect.span))
                return
        path = self._path(effect.path, effect.span, "links to")
        if path is None:
            return
        if len(path) > MAX_PATH_CHARS:
            setting = self._tables.unparsable
            self._add(setting.verdict, codes.UNPARSABLE_COMMAND, _msg_path_too_long, ("links to", len(path)),
                      effect.span, setting)
            return
        decision = self._tables.known_paths.get((path, self.cwd))
        if decision is None:
            self._spend(path)
            decision = self._tables.index.path_access(path, self.cwd)
        if decision.access == "none":  # not decision.can_read (a property: a call)
            # a link (hard or symbolic) to a denied path is access to it: the denied read
            self._add("deny", codes.DENIED_READ, _msg_link, (decision.path,), effect.span, decision.rule)

    def judge_Network(self, effect: Network) -> None:
        decision = self._tables.index.network_access(effect.host, effect.port)
        if not decision.allowed:
            rule = decision.rule if decision.rule is not None else self._tables.default_rule
            self._add("deny", codes.DENIED_NETWORK, _msg_network, (effect.host, effect.port), effect.span, rule)

    def judge_Privilege(self, effect: Privilege) -> None:
        self._add("deny", codes.PRIVILEGE_ESCALATION, _msg_privilege, (effect.what,), effect.span)

    def judge_Persistence(self, effect: Persistence) -> None:
        self._add("deny", codes.PERSISTENCE, _msg_persistence, (effect.what,), effect.span)

    def judge_Unknown(self, effect: Unknown) -> None:
        setting = self._tables.unknown_effects
        self._add(setting.verdict, codes.UNKNOWN_EFFECTS, _same, (effect.why,), effect.span, setting)

    def judge_Opaque(self, effect: Opaque) -> None:
        path = _judged_path(effect.path)
        if path is None or path is UNKNOWN:  # an unknown path: its read already says so
            return
        decision = self._tables.known_paths.get((path, self.cwd))
        if decision is None:
            decision = self._tables.index.path_access(path, self.cwd)
        if decision.access != "write":
            setting = self._tables.unknown_effects
            self._add(setting.verdict, codes.UNKNOWN_EFFECTS, _msg_opaque, (effect.program, decision.path,
                                                                            decision.access),
                      effect.span, setting)

    def judge_Harmless(self, effect: Harmless) -> None:
        """The start-up file the write at ``effect.span`` made holds nothing that runs: its
        reason "code run at the tool's next start" (added when the write was judged) goes."""
        name = "/" + effect.path.rpartition("/")[2]

        def retracted(reason: Reason) -> bool:
            return reason._render is _msg_startup and reason.span == effect.span and \
                str(reason._args[1]).endswith(name)

        kept = [r for r in self.reasons if not retracted(r)]
        if len(kept) == len(self.reasons):
            return
        self.reasons = kept
        for key, bucket in list(self._seen.items()):
            if key[2] == effect.span:
                self._seen[key] = [r for r in bucket if not retracted(r)]

    def judge_Unparsable(self, effect: Unparsable) -> None:
        setting = self._tables.unparsable
        self._add(setting.verdict, codes.UNPARSABLE_COMMAND, _msg_unparsable, (effect.why,), effect.span, setting)

    def verdict(self, command: str) -> Verdict:
        """The strictest reason decides; no reason means allow.  Reasons are listed strictest
        first, then by position (allow-verdict reasons are not listed)."""
        reasons = self.reasons
        listed: tuple[Reason, ...]
        if not reasons:
            decision, listed = "allow", ()
        elif len(reasons) == 1:
            only = reasons[0]
            decision, listed = only.verdict, () if only.verdict == "allow" else (only,)
        else:
            rank = VERDICT_RANK
            decision = "allow"
            for reason in reasons:
                if rank[reason.verdict] > rank[decision]:
                    decision = reason.verdict
            ordered = sorted(reasons, key=lambda r: (-rank[r.verdict], r.span))
            if ordered[-1].verdict != "allow":  # allow-verdict reasons sort last: here there are none
                listed = tuple(ordered)
            else:
                listed = tuple(r for r in ordered if r.verdict != "allow")
        # Verdict(command, decision, listed) without type.__call__ (which in CPython 3.11
        # re-enters the interpreter: one such call per command)
        verdict = _new_object(Verdict)
        verdict.command = command
        verdict.decision = decision
        verdict.reasons = listed
        return verdict


_new_object = object.__new__


_HANDLERS: dict[type, Callable[[Judge, Any], None]] = {
    Execute: Judge.judge_Execute, Read: Judge.judge_Read, Write: Judge.judge_Write, Delete: Judge.judge_Delete,
    Rename: Judge.judge_Rename, LinkTarget: Judge.judge_LinkTarget, Network: Judge.judge_Network,
    Privilege: Judge.judge_Privilege, Persistence: Judge.judge_Persistence, Unknown: Judge.judge_Unknown,
    Unparsable: Judge.judge_Unparsable, Opaque: Judge.judge_Opaque, Harmless: Judge.judge_Harmless,
}


def rule_text(rule: Any) -> str | None:
    """The rule as policy text, for reports (any kind of IR rule or setting: told apart by its fields)."""
    if rule is None:
        return None
    if hasattr(rule, "host"):
        return f"{rule.action} {rule.host}"
    if hasattr(rule, "kind") and isinstance(getattr(rule, "pattern", None), str):
        return f"{rule.kind} {rule.pattern}"
    if hasattr(rule, "verdict") and hasattr(rule, "pattern"):
        return f"{rule.verdict} {rule.text}"
    if hasattr(rule, "verdict") and hasattr(rule, "name"):  # unknown-effects / unparsable
        return rule.text
    return getattr(rule, "text", None)
