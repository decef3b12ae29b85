"""Cursor: ``sandbox.json`` export and import (the documented subset only).

Format (Cursor docs, "sandbox.json reference"; ``~/.cursor/sandbox.json`` or
``<workspace>/.cursor/sandbox.json``, per-repo over per-user)::

    {"type": "workspace_readwrite" | "workspace_readonly" | "insecure_none",
     "additionalReadwritePaths": [...],   # only with workspace_readwrite
     "additionalReadonlyPaths": [...],
     "disableTmpWrite": false,            # true removes write access to /tmp and temp dirs
     "networkPolicy": {"default": "allow" | "deny"}}

Only these keys are documented in what we could find; the rest of ``networkPolicy`` (host
lists) was not visible in the reference we could read, so host rules are **not** exported
and each is reported: ``default allow`` is written only when the policy denies nothing,
every other policy is exported as ``default deny`` (stricter, each rule that loses an
allowed destination warned about).  Semantics assumed here (Cursor's announcement of agent sandboxing):
sandboxed commands read the whole filesystem, write the workspace (``workspace_readwrite``),
``/tmp`` (unless ``disableTmpWrite``) and the additional read-write paths.  There is no deny
list in ``sandbox.json`` (Cursor points to ``.cursorignore`` for hiding files), so denied
and read-only paths inside readable/writable areas are reported as exported looser.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from stockade import catalogue as codes
from stockade.backends.base import OMITTED, Artifact, Handling, handled
from stockade.integrations.base import (
    Exporter,
    Importer,
    PolicyDraft,
    dedupe,
    expect_list_of_str,
    expect_object,
    fs_fidelity,
    home_form,
    is_under,
    json_text,
    load_json,
    locate_key,
    locate_value,
    quote_word,
    source_comment,
)

TYPES = ("workspace_readwrite", "workspace_readonly", "insecure_none")


@dataclass(frozen=True)
class CursorModel:
    """Cursor's sandbox decisions for a ``sandbox.json`` (see the module docstring)."""

    kind: str
    workspace: str
    tmpdir: str
    readwrite: tuple[str, ...] = ()
    readonly: tuple[str, ...] = ()
    tmp_write: bool = True
    network_default: str = "deny"

    @classmethod
    def from_settings(cls, data: dict, workspace: str, home: str, tmpdir: str = "/tmp") -> CursorModel:
        """Build the model from a parsed file."""
        expand = lambda p: home.rstrip("/") + p[1:] if p == "~" or p.startswith("~/") else (  # noqa: E731
            p if p.startswith("/") else os.path.normpath(os.path.join(workspace, p)))
        net = data.get("networkPolicy") or {}
        return cls(data.get("type", "workspace_readwrite"), workspace, tmpdir,
                   tuple(expand(p) for p in data.get("additionalReadwritePaths") or ()),
                   tuple(expand(p) for p in data.get("additionalReadonlyPaths") or ()),
                   not data.get("disableTmpWrite", False), net.get("default", "deny"))

    def path_access(self, path: str) -> str:
        """``read`` everywhere, ``write`` in the writable areas."""
        if self.kind == "insecure_none":
            return "write"
        writable = list(self.readwrite) if self.kind == "workspace_readwrite" else []
        if self.kind == "workspace_readwrite":
            writable.append(self.workspace)
        if self.tmp_write:
            writable += ["/tmp", self.tmpdir]
        return "write" if any(is_under(path, w) for w in writable) else "read"

    def host_allowed(self, host: str, port: int | None = None) -> bool:
        """The network default decides every host."""
        return self.kind == "insecure_none" or self.network_default == "allow"


class CursorExporter(Exporter):
    """IR → Cursor ``sandbox.json``."""

    name: ClassVar[str] = "cursor"
    label: ClassVar[str] = "cursor sandbox.json"
    #: the workspace mode, extra paths, /tmp and the network default
    SECTIONS: ClassVar[dict[str, Handling]] = {
        "filesystem": handled("settings"), "network": handled("settings"), "environment": OMITTED,
        "limits": OMITTED, "commands": OMITTED, "session": OMITTED, "verdicts": OMITTED,
    }

    def settings(self) -> dict:
        """The ``sandbox.json`` object."""
        ir = self.ir
        ctx = ir.context
        workspace_writes = ir.path_access(ctx.workspace).access == "write"
        readwrite, readonly = [], []
        for rule in ir.filesystem:
            if rule.is_glob or is_under(rule.pattern, ctx.workspace) or rule.pattern in ("/tmp", ctx.tmpdir):
                continue
            if rule.kind == "write":
                readwrite.append(home_form(rule.pattern, ctx.home))
            elif rule.kind in ("read", "readonly") and rule.pattern != "/":
                readonly.append(home_form(rule.pattern, ctx.home))
        tmp_write = any(ir.path_access(p).access == "write" for p in ("/tmp", ctx.tmpdir))
        data = {"type": "workspace_readwrite" if workspace_writes else "workspace_readonly",
                "additionalReadwritePaths": dedupe(readwrite) if workspace_writes else [],
                "additionalReadonlyPaths": dedupe(readonly),
                "disableTmpWrite": not tmp_write,
                "networkPolicy": {"default": self.network_default()}}
        if not workspace_writes and readwrite:
            for rule in ir.filesystem:
                if rule.kind == "write" and not is_under(rule.pattern, ctx.workspace):
                    self.cannot_express(f"`write {rule.source_text}`: additional read-write paths apply only to "
                                        "`workspace_readwrite` (exported stricter)", rule.origin)
        return data

    def network_default(self) -> str:
        """``allow`` only when the policy denies nothing (no deny rule, ``default allow``);
        otherwise ``deny``: sandbox.json documents no host list, so a policy with exceptions
        is exported stricter — every rule that loses something is warned about."""
        net = self.ir.network
        if net.default == "allow" and not any(r.action == "deny" for r in net.rules):
            return "allow"
        return "deny"

    def render(self) -> Artifact:
        """The file; fidelity warnings for paths and every host rule."""
        data = self.settings()
        ctx = self.ir.context
        model = CursorModel.from_settings(data, ctx.workspace, ctx.home, ctx.tmpdir)
        fs_fidelity(self, model.path_access)
        net = self.ir.network
        default = data["networkPolicy"]["default"]
        if default == "deny" and net.default == "allow":
            self.cannot_express("`default allow` with exceptions: sandbox.json documents no host list, so the "
                                "network is denied (exported stricter)", net.default_origin)
        for rule in net.rules:
            if rule.action == "allow" and default == "deny":
                self.cannot_express(f"`allow {rule.host}`: no documented host list in sandbox.json (exported "
                                    "stricter: `default deny` decides)", rule.origin)
        if default == "allow":
            self.cannot_express("`default allow`: sandbox.json's `default allow` is cursor's to bound; the policy "
                                "itself refuses private, link-local and metadata addresses without a rule naming "
                                "them, which cursor is documented to block too", net.default_origin)
        return Artifact(self.name, json_text(data), data)


class CursorImporter(Importer):
    """Cursor ``sandbox.json`` → policy."""

    name: ClassVar[str] = "cursor"

    def draft(self) -> PolicyDraft:
        """The documented keys as filesystem and network rules."""
        root = expect_object(self, load_json(self.source, self.file), "(root)")
        draft = PolicyDraft(os.path.splitext(os.path.basename(self.file))[0] or "cursor")
        draft.note(f"imported from cursor `{os.path.basename(self.file)}` by `stockade import --from cursor`")
        kind = root.get("type", "workspace_readwrite")
        if kind not in TYPES:
            raise self.fail(codes.IMPORT_BAD_VALUE, f"unknown sandbox type `{kind}`", *locate_value(self.source,
                                                                                                    str(kind)),
                            help="use " + ", ".join(f"`{t}`" for t in TYPES))
        comment = lambda key: source_comment(self.file, locate_key(self.source, key)[0], key)  # noqa: E731
        if kind == "insecure_none":
            self.warn("`insecure_none` disables cursor's sandbox; imported as full access",
                      *locate_value(self.source, kind))
            draft.add("filesystem", "write /", comment("type"))
            draft.add("network", "default allow", comment("type"))
            return draft
        draft.add("filesystem", "read /", "cursor's sandbox reads the whole filesystem")
        draft.add("filesystem", f"{'write' if kind == 'workspace_readwrite' else 'read'} $WORKSPACE", comment("type"))
        tmp = root.get("disableTmpWrite", False)
        if not isinstance(tmp, bool):
            raise self.fail(codes.IMPORT_WRONG_TYPE, "`disableTmpWrite` must be true or false", *locate_key(self.source,
                                                                                       "disableTmpWrite"))
        if not tmp:
            draft.add("filesystem", "write /tmp $TMPDIR", "cursor's sandbox writes /tmp unless `disableTmpWrite`")
        for key, verb in (("additionalReadwritePaths", "write"), ("additionalReadonlyPaths", "read")):
            for path in expect_list_of_str(self, root.get(key), key):
                if verb == "write" and kind != "workspace_readwrite":
                    self.warn(f"`{path}` in `{key}` has no effect with `{kind}`", *locate_value(self.source, path))
                    continue
                word = path if path.startswith(("/", "~")) else "$WORKSPACE/" + path
                draft.add("filesystem", f"{verb} {quote_word(word)}",
                          source_comment(self.file, locate_value(self.source, path)[0], f"{key} `{path}`"))
        net = expect_object(self, root.get("networkPolicy"), "networkPolicy")
        default = net.get("default", "deny")
        if default not in ("allow", "deny"):
            raise self.fail(codes.IMPORT_BAD_VALUE, "`networkPolicy.default` must be `allow` or `deny`",
                            *locate_key(self.source, "default"))
        draft.add("network", f"default {default}", comment("networkPolicy"))
        for key in sorted(set(net) - {"default"}):
            self.warn(f"`networkPolicy.{key}` is not in the documented format and is not imported",
                      *locate_key(self.source, key))
        for key in sorted(set(root) - {"type", "additionalReadwritePaths", "additionalReadonlyPaths",
                                        "disableTmpWrite", "networkPolicy", "enableSharedBuildCache"}):
            self.warn(f"`{key}` has no stockade equivalent and is not imported", *locate_key(self.source, key))
        return draft
