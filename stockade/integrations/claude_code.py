"""Claude Code: the ``PreToolUse`` hook, and ``settings.json`` export and import.

**Hook** (Claude Code hooks reference, ``PreToolUse``): Claude Code runs the hook command
with one JSON event on stdin — ``hook_event_name`` ``"PreToolUse"``, ``tool_name``,
``tool_input``, ``cwd``, ``session_id`` … — and reads, on exit code 0, a JSON answer::

    {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                            "permissionDecision": "allow" | "ask" | "deny",
                            "permissionDecisionReason": "…"}}

(``deny``: the reason is shown to Claude; ``ask``: shown to the user in the prompt.)  Exit
code 2 would also block, but its stderr is all Claude sees, so this hook always exits 0
with JSON — malformed events included (a ``deny`` with the reason).  Tools judged:
``Bash`` (``command``, by the analyzer; under a policy compiled for Windows the shell is
told apart per command), ``PowerShell`` (``command``, as PowerShell), ``Read`` (``file_path``), ``Write``/``Edit``/
``MultiEdit`` (``file_path``, write access), ``NotebookEdit`` (``notebook_path``), ``Glob``
and ``Grep`` (``pattern``, ``path`` — a content search is judged like ``grep -r``),
``WebFetch`` (``url``, network rules).  Other tools get no opinion (no output), leaving
Claude Code's own permission flow in charge.  ``confirm`` maps to ``ask``.

**settings.json** (Claude Code settings and permissions docs): ``permissions.allow/ask/deny``
hold rules ``Tool(specifier)`` — ``Bash(git push *)`` (``*`` matches any text; ``:*`` is the
older prefix spelling), ``Read(//abs/**)`` / ``Edit(~/x/**)`` (gitignore-style; ``//`` starts
an absolute path, ``~/`` the home directory), ``WebFetch(domain:example.com)``.  Rules are
checked deny, then ask, then allow: any deny wins.  The ``sandbox`` block configures the
sandbox-runtime under Bash: ``enabled``, ``failIfUnavailable``, ``allowUnsandboxedCommands``,
``filesystem.{denyRead,allowRead,allowWrite,denyWrite}`` (same path prefixes; the working
and temp directories are writable by default) and ``network``: ``allowedDomains`` and
``deniedDomains`` (``host``, ``*.domain`` — subdomains only —, optional ``:port``; denied
checked first), ``allowLocalBinding`` (the sandbox's own loopback; a ``localhost`` entry is
the host's loopback through the proxy, Stockade's ``host-loopback``).
``env`` sets environment variables.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from stockade import catalogue as codes
from stockade.backends.base import OMITTED, Artifact, Handling, handled
from stockade.compiler.ir import CommandRule, PolicyIR
from stockade.compiler.query import glob_to_regex
from stockade.integrations.base import (
    Exporter,
    PolicyDraft,
    command_fidelity,
    dedupe,
    expect_list_of_str,
    expect_object,
    fs_fidelity,
    has_glob,
    home_form,
    json_text,
    load_json,
    locate_value,
    pattern_word,
    quote_word,
    source_comment,
)
from stockade.integrations.generic_hook import (
    HookDecision,
    judge_command,
    judge_path,
    judge_search,
    judge_url,
    malformed,
)
from stockade.integrations.srt import SrtImporter, SrtModel, filesystem_lists, network_fidelity, network_settings

SCHEMA_URL = "https://json.schemastore.org/claude-code-settings.json"

# -- the hook --------------------------------------------------------------------------

_FILE_TOOLS = {"Read": ("file_path", "read"), "Write": ("file_path", "write"), "Edit": ("file_path", "write"),
               "MultiEdit": ("file_path", "write"), "NotebookEdit": ("notebook_path", "write")}
PERMISSION = {"allow": "allow", "confirm": "ask", "deny": "deny"}


def judge_event(ir: PolicyIR, event: Any) -> HookDecision:
    """Judge one ``PreToolUse`` event (malformed → deny; unknown tools → no opinion)."""
    if not isinstance(event, dict):
        return malformed(f"expected a JSON object, got {type(event).__name__}")
    name = event.get("hook_event_name")
    if name is not None and name != "PreToolUse":
        return malformed(f"`hook_event_name` is `{name}`, this hook handles `PreToolUse`")
    tool = event.get("tool_name")
    if not isinstance(tool, str) or not tool:
        return malformed("`tool_name` must be a non-empty string")
    tool_input = event.get("tool_input")
    if not isinstance(tool_input, dict):
        return malformed("`tool_input` must be a JSON object", {"tool": tool})
    cwd = event.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not (cwd.startswith("/") or _windows_absolute(ir, cwd))):
        return malformed("`cwd` must be an absolute path", {"tool": tool})

    def text_field(key: str) -> str | HookDecision:
        value = tool_input.get(key)
        if not isinstance(value, str) or not value or "\0" in value:
            return malformed(f"`tool_input.{key}` of `{tool}` must be a non-empty string", {"tool": tool})
        return value

    def optional_text_field(key: str) -> str | HookDecision | None:
        return None if tool_input.get(key) is None else text_field(key)

    if tool == "Bash" or tool == "PowerShell":
        command = text_field("command")
        if isinstance(command, HookDecision):
            return command
        # PowerShell events are PowerShell; Bash events under a Windows policy may be any shell
        shell = "powershell" if tool == "PowerShell" else "auto" if ir.context.platform == "windows" else "bash"
        if shell == "bash":
            answer = judge_command(ir, command, cwd)
            return HookDecision(answer.decision, answer.reasons, {"tool": tool, "command": command})
        from stockade.analyzer.winshell import analyze_shell

        verdict = analyze_shell(command, ir, cwd, shell)
        return HookDecision(verdict.decision, tuple(verdict.to_json()["reasons"]), {"tool": tool, "command": command})
    if tool in _FILE_TOOLS:
        key, access = _FILE_TOOLS[tool]
        path = text_field(key)
        if isinstance(path, HookDecision):
            return path
        return judge_path(ir, path, access, cwd, {"tool": tool, "path": path, "access": access})
    if tool in ("Glob", "Grep"):
        pattern = text_field("pattern")
        if isinstance(pattern, HookDecision):
            return pattern
        given_root = optional_text_field("path")
        if isinstance(given_root, HookDecision):
            return given_root
        root = given_root or cwd or ir.context.workspace
        subject = {"tool": tool, "path": root, "access": "read", "pattern": pattern}
        return judge_search(ir, root, pattern, cwd, subject, contents=tool == "Grep")
    if tool == "WebFetch":
        url = text_field("url")
        if isinstance(url, HookDecision):
            return url
        return judge_url(ir, url, {"tool": tool, "url": url})
    return HookDecision(None, (), {"tool": tool})


def _windows_absolute(ir: PolicyIR, path: str) -> bool:
    """A Windows absolute path (``C:\\…``), accepted as a ``cwd`` under a policy compiled for Windows."""
    return ir.context.platform == "windows" and len(path) > 2 and path[0].isalpha() and path[1] == ":" \
        and path[2] in "\\/"


def hook_output(answer: HookDecision, approve_allowed: bool = False,
                updated_input: Mapping[str, Any] | None = None) -> dict | None:
    """Claude Code's answer for a decision (None: print nothing — no decision — and Claude
    Code's own permission flow decides).

    * ``deny`` → ``deny``; ``confirm`` → ``ask``;
    * ``allow`` → no decision, unless ``approve_allowed`` (then ``allow``, which skips
      Claude Code's own prompt for the call; its deny and ask rules still apply);
    * with ``updated_input`` (``--confine``: the command rewritten to run under ``stockade
      run``), an ``allow`` or ``confirm`` is answered with that input: ``allow`` when
      ``approve_allowed`` and the verdict is ``allow``, else ``ask`` — the person sees and
      approves the confined command (a decision is needed for Claude Code to apply
      ``updatedInput``; ``ask`` is the one that leaves the approval to the person).
    """
    if answer.decision is None:
        return None
    if updated_input is not None and answer.decision in ("allow", "confirm"):
        decision = "allow" if approve_allowed and answer.decision == "allow" else "ask"
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                       "permissionDecisionReason": f"stockade: runs confined by `stockade run`: "
                                                                   f"{answer.message}",
                                       "updatedInput": dict(updated_input)}}
    if answer.decision == "allow" and not approve_allowed:
        return None
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                   "permissionDecision": PERMISSION[answer.decision],
                                   "permissionDecisionReason": f"stockade: {answer.message}"}}


def confined_input(tool_input: Mapping[str, Any], policy: str, workspace: str, approve: bool,
                   launcher: Sequence[str]) -> dict[str, Any]:
    """A ``Bash`` tool input whose command runs under ``stockade run`` with the same policy
    and workspace (``launcher``: how to start stockade, e.g. ``[python, "-m",
    "stockade"]``): ``… run --policy P --workspace W [--approve] -- bash -c COMMAND``,
    every word shell-quoted, so that bash gives ``stockade run`` exactly the original text.
    ``approve`` passes ``--approve`` (a ``confirm`` the person approves in Claude Code's
    prompt).  The other fields of the input are kept: Claude Code replaces the whole input."""
    import shlex

    words = [*launcher, "run", "--policy", policy, "--workspace", workspace, *(["--approve"] if approve else []),
             "--", "bash", "-c", str(tool_input["command"])]
    return {**tool_input, "command": shlex.join(words)}


# -- settings: paths and rules ----------------------------------------------------------


def claude_path(path: str, home: str) -> str:
    """An absolute path or absolute glob in Claude Code's spelling (``~/…`` or ``//…``)."""
    if path.startswith("/**/"):
        return "//" + path[1:]
    shown = home_form(path, home)
    return shown if shown.startswith("~") else "/" + path


def absolute_path(spec: str, home: str, workspace: str) -> str:
    """Claude Code's path spelling back to an absolute path (``/x`` and relative → workspace)."""
    if spec.startswith("//"):
        return spec[1:]
    if spec == "~" or spec.startswith("~/"):
        return home.rstrip("/") + spec[1:]
    if spec.startswith("**/"):
        return "/" + spec
    spec = spec.lstrip("/")
    if spec.startswith("./"):
        spec = spec[2:]
    return os.path.normpath(os.path.join(workspace, spec))


_RULE = re.compile(r"^([A-Za-z_][\w-]*)(?:\((.*)\))?$", re.DOTALL)


def parse_rule(text: str) -> tuple[str, str | None] | None:
    """``Bash(git push *)`` → (``Bash``, ``git push *``); None if not a rule."""
    match = _RULE.match(text.strip())
    return (match.group(1), match.group(2)) if match else None


def bash_regex(spec: str) -> re.Pattern[str]:
    """A ``Bash(...)`` specifier as a regex over the command text (``:*`` = prefix)."""
    if spec.endswith(":*"):
        spec = spec[:-2] + " *"
    out = "".join(".*" if ch == "*" else re.escape(ch) for ch in spec)
    if spec.endswith(" *"):
        out = out[: -len(re.escape(" ") + ".*")] + "(?: .*)?"
    return re.compile(out + r"\Z", re.DOTALL)


@dataclass(frozen=True)
class ClaudeModel:
    """Claude Code's decisions for a settings object: permission rules and the sandbox."""

    rules: Mapping[str, tuple[tuple[str, str], ...]]
    sandbox: SrtModel
    home: str
    workspace: str

    @classmethod
    def from_settings(cls, settings: dict, home: str, workspace: str, tmpdir: str = "/tmp") -> ClaudeModel:
        """Build the model; the sandbox's working and temp directories are writable by default."""
        permissions = settings.get("permissions") or {}
        rules = {}
        for kind in ("deny", "ask", "allow"):
            parsed = [parse_rule(r) for r in permissions.get(kind) or () if isinstance(r, str)]
            rules[kind] = tuple((p[0], p[1] or "") for p in parsed if p)
        sandbox = settings.get("sandbox") or {}
        fs = {k: [e if isinstance(e, str) else e.get("path", "") for e in v]
              for k, v in (sandbox.get("filesystem") or {}).items() if isinstance(v, list)}
        fs = {k: [absolute_path(e, home, workspace) for e in v] for k, v in fs.items()}
        # the sandbox also enforces the file-tool rules: Read denies, Edit denies and Edit allows
        for kind, tool, key in (("deny", "Read", "denyRead"), ("deny", "Edit", "denyWrite"),
                                ("allow", "Edit", "allowWrite")):
            for rule_tool, spec in rules[kind]:
                if rule_tool == tool and spec:
                    path = absolute_path(spec[:-3] if spec.endswith("/**") else spec, home, workspace)
                    fs.setdefault(key, []).append(path or "/")
        model = SrtModel.from_settings({"filesystem": fs, "network": sandbox.get("network") or {}}, home, workspace,
                                       extra_write=(workspace, tmpdir))
        return cls(rules, model, home, workspace)

    def command_verdict(self, argv: Sequence[str]) -> str | None:
        """The permission verdict of the Bash rules for a command (None: no rule)."""
        text = " ".join(argv)
        for kind, verdict in (("deny", "deny"), ("ask", "confirm"), ("allow", "allow")):
            for tool, spec in self.rules[kind]:
                if tool == "Bash" and (spec in ("", "*") or bash_regex(spec).match(text)):
                    return verdict
        return None

    def tool_decision(self, tool: str, path: str) -> str | None:
        """deny/ask/allow of the file-tool rules of ``tool`` for ``path`` (None: no rule)."""
        for kind in ("deny", "ask", "allow"):
            for rule_tool, spec in self.rules[kind]:
                if rule_tool == tool and (not spec or glob_to_regex(absolute_path(spec, self.home,
                                                                                  self.workspace)).match(path)):
                    return kind
        return None

    def path_access(self, path: str) -> str:
        """Access through the file tools: ``Read`` rules for reading, ``Edit`` rules for writing."""
        if self.tool_decision("Read", path) != "allow":
            return "none"
        return "write" if self.tool_decision("Edit", path) == "allow" else "read"


class ClaudeSettingsExporter(Exporter):
    """IR → Claude Code ``settings.json`` (permissions, sandbox, env)."""

    name: ClassVar[str] = "claude-settings"
    label: ClassVar[str] = "claude code settings"
    #: permissions (commands, file tools, WebFetch), the sandbox block and `env` (set only)
    SECTIONS: ClassVar[dict[str, Handling]] = {
        "filesystem": handled("file_rules"), "network": handled("settings"), "environment": handled("settings"),
        "limits": OMITTED, "commands": handled("bash_rules"), "session": OMITTED, "verdicts": OMITTED,
    }

    def bash_rules(self, rule: CommandRule) -> list[str]:
        """The ``Bash(...)`` rules of one command rule (each alternative spelled out)."""
        tokens = list(rule.pattern)
        text = f"{rule.verdict} {rule.text}"
        words: list[list[str]] = []
        for token in tokens:
            if token.is_rest:
                words.append(["*"])
            else:
                words.append(list(token.alternatives))
        if rule.verdict == "allow" and any(a == "*" for t in tokens[:-1] for a in t.alternatives):
            self.cannot_express(f"`{text}`: `*` matches one word in stockade but any text in claude code "
                                "(exported looser)", rule.origin)
        if rule.verdict != "allow" and any(t.is_flag for t in tokens[1:]):
            self.cannot_express(f"`{text}`: claude code matches flags only at their position and in their "
                                "spelling (exported looser)", rule.origin)
        combos = list(itertools.islice(itertools.product(*words), 65))
        if len(combos) > 64:
            self.cannot_express(f"`{text}` has more than 64 spellings; only the first 64 are exported", rule.origin)
            combos = combos[:64]
        out = []
        for combo in combos:
            spec = " ".join(combo)
            out.append(f"Bash({spec})")
            if not spec.endswith("*"):
                out.append(f"Bash({spec} *)")
        return out

    def file_rules(self) -> dict[str, list[str]]:
        """Read/Edit permission rules from the filesystem rules."""
        ctx = self.ir.context
        out: dict[str, list[str]] = {"allow": [], "deny": []}
        for rule in self.ir.filesystem:
            spec = claude_path(rule.pattern, ctx.home)
            specs = [spec, spec.rstrip("/") + "/**"]
            if spec in ("/", "//"):
                specs = ["//**"]
            if rule.kind == "deny":
                out["deny"] += [f"{tool}({s})" for tool in ("Read", "Edit") for s in specs]
            elif rule.kind == "readonly":
                out["deny"] += [f"Edit({s})" for s in specs]
                out["allow"] += [f"Read({s})" for s in specs]
            elif rule.kind == "write":
                out["allow"] += [f"{tool}({s})" for tool in ("Read", "Edit") for s in specs]
            else:
                out["allow"] += [f"Read({s})" for s in specs]
        return out

    def settings(self) -> dict:
        """The settings object."""
        ctx = self.ir.context
        permissions: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
        for rule in self.ir.commands:
            permissions[{"allow": "allow", "confirm": "ask", "deny": "deny"}[rule.verdict]] += self.bash_rules(rule)
        files = self.file_rules()
        permissions["allow"] += files["allow"]
        permissions["deny"] += files["deny"]
        net = network_settings(self)
        allowed, denied = net.allowed, net.denied
        permissions["allow"] += [f"WebFetch(domain:{d})" for d in allowed if ":" not in d.lstrip("[")]
        permissions["deny"] += [f"WebFetch(domain:{d})" for d in denied if ":" not in d.lstrip("[") and d != "*"]
        lists = filesystem_lists(self.ir)
        for writable in (ctx.workspace, ctx.tmpdir):  # claude code's defaults, closed when the policy does
            if self.ir.path_access(writable).access != "write" and writable not in lists.deny_write:
                lists.deny_write.append(writable)
        show = lambda paths: [claude_path(p, ctx.home) for p in paths]  # noqa: E731 - a local shorthand
        sandbox = {"enabled": True, "failIfUnavailable": True, "allowUnsandboxedCommands": False,
                   "filesystem": {"denyRead": show(lists.deny_read), "allowRead": show(lists.allow_read),
                                  "allowWrite": show(lists.allow_write), "denyWrite": show(lists.deny_write)},
                   "network": {"allowedDomains": allowed, "deniedDomains": denied,
                               "allowLocalBinding": net.allow_local_binding}}
        settings: dict[str, Any] = {"$schema": SCHEMA_URL,
                                    "permissions": {k: dedupe(v) for k, v in permissions.items()},
                                    "sandbox": sandbox}
        env = {r.name: r.value or "" for r in self.ir.environment if r.action == "set"}
        if env:
            settings["env"] = env
        return settings

    def render(self) -> Artifact:
        """The settings file; fidelity warnings for the sandbox and the file-tool rules."""
        settings = self.settings()
        ctx = self.ir.context
        model = ClaudeModel.from_settings(settings, ctx.home, ctx.workspace, ctx.tmpdir)
        fs_fidelity(self, model.sandbox.path_access)
        fs_fidelity(self, model.path_access)
        command_fidelity(self, model.command_verdict)
        network_fidelity(self, None, model.sandbox.host_allowed)
        for rule in self.ir.environment:
            if rule.action != "set":
                self.cannot_express(f"claude code settings cannot {rule.action} inherited variables: "
                                    f"`{rule.action} {rule.name}` is not exported", rule.origin)
        return Artifact(self.name, json_text(settings), settings)


class ClaudeSettingsImporter(SrtImporter):
    """Claude Code ``settings.json`` → policy."""

    name: ClassVar[str] = "claude-settings"

    def unprefix(self, entry: str) -> str:
        """Claude Code's ``//abs`` → ``/abs``; ``/x`` (relative to the settings file) → workspace."""
        if entry.startswith("//"):
            return entry[1:]
        if entry.startswith("/"):
            self.warn(f"`{entry}` is relative to the settings file; imported relative to the workspace",
                      *locate_value(self.source, entry))
            return entry[1:]
        return entry

    def draft(self) -> PolicyDraft:
        """Permissions, sandbox and env as policy rules."""
        root = expect_object(self, load_json(self.source, self.file), "(root)")
        draft = PolicyDraft(os.path.splitext(os.path.basename(self.file))[0] or "claude-settings")
        draft.note(f"imported from claude code settings `{os.path.basename(self.file)}` by "
                   "`stockade import --from claude-settings`")
        sandbox = expect_object(self, root.get("sandbox"), "sandbox")
        fs = expect_object(self, sandbox.get("filesystem"), "filesystem")
        self.add_filesystem(draft, fs, "filesystem", "sandbox.")
        draft.add("filesystem", "write $WORKSPACE $TMPDIR", "claude code's sandbox writes the working and temp "
                                                            "directories by default")
        net = expect_object(self, sandbox.get("network"), "network")
        self.add_network(draft, {"allowedDomains": net.get("allowedDomains")}, "sandbox.")
        permissions = expect_object(self, root.get("permissions"), "permissions")
        self.permission_entries = {e for k in ("deny", "ask", "allow") if isinstance(permissions.get(k), list)
                                   for e in permissions[k] if isinstance(e, str)}
        for kind in ("deny", "ask", "allow"):
            for entry in expect_list_of_str(self, permissions.get(kind), kind):
                self.add_permission(draft, kind, entry)
        env = expect_object(self, root.get("env"), "env")
        for name, value in env.items():
            line, _ = locate_value(self.source, name)
            if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise self.fail(codes.IMPORT_WRONG_TYPE, f"`env.{name}` must be a string variable", line)
            from stockade.policy_lang.formatter import needs_quotes, quote

            shown = quote(value) if not value or needs_quotes(value) or "=" in value else value
            draft.add("environment", f"set {name}={shown}", source_comment(self.file, line, f"env.{name}"))
        return draft

    def add_permission(self, draft: PolicyDraft, kind: str, entry: str) -> None:
        """One permission rule."""
        line, col = locate_value(self.source, entry)
        parsed = parse_rule(entry)
        if parsed is None:
            raise self.fail(codes.IMPORT_BAD_PERMISSION_RULE, f"`{entry}` is not a permission rule", line, col,
                            help="rules look like `Bash(git push *)` or `Read(~/.ssh/**)`")
        tool, spec = parsed
        comment = source_comment(self.file, line, f"permissions.{kind} `{entry}`")
        verdict = {"deny": "deny", "ask": "confirm", "allow": "allow"}[kind]
        if tool == "Bash":
            words = (spec or "*").strip()
            if words.endswith((":*", " *")):
                words = words[:-2].rstrip()
            elif kind == "allow" and "*" not in words and f"Bash({words} *)" not in self.permission_entries:
                self.warn(f"`{entry}` matches exactly one command in claude code; imported as a prefix", line, col)
            parts = words.split() or ["*"]
            text = " ".join("**" if w == "*" and i else pattern_word(w) if w != "*" else "*"
                            for i, w in enumerate(parts))
            draft.add("commands", f"{verdict} {text}", comment)
        elif tool in ("Read", "Edit", "Write") and spec:
            if kind == "ask":
                self.warn(f"`{entry}`: stockade has no `confirm` for file access; not imported", line, col)
                return
            path = self.unprefix(spec)
            if path.endswith("/**"):
                path = path[:-3] or "/"
            word = quote_word("/" if path == "" else path, force=has_glob(path))
            if not path.startswith(("/", "~", "**", "$")):
                word = quote_word("$WORKSPACE/" + path, force=has_glob(path))
            rule = {("deny", "Read"): "deny", ("deny", "Edit"): "readonly", ("deny", "Write"): "readonly",
                    ("allow", "Read"): "read", ("allow", "Edit"): "write", ("allow", "Write"): "write"}[(kind, tool)]
            draft.add("filesystem", f"{rule} {word}", comment)
        elif tool == "WebFetch" and spec and spec.startswith("domain:"):
            if kind == "ask":
                self.warn(f"`{entry}`: stockade has no `confirm` for network access; not imported", line, col)
                return
            draft.add("network", f"{'deny' if kind == 'deny' else 'allow'} {quote_word(spec[7:])}", comment)
        else:
            self.warn(f"`{entry}` has no stockade equivalent and is not imported", line, col)
