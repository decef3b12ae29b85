"""An evaluator of Windows plans for the tests: SID and SDDL parsers, an in-memory NTFS-like
tree, the plan applied to it, and the access check of a restricted token against it.

What it models (the facts the Windows backend relies on):

* paths compare case-insensitively; ``\\`` separates components;
* a DACL is the object's explicit ACEs (in their stored order: the plan must put denies
  first) followed by the inherited ones, nearest ancestor first — a container inherits
  ``CI`` ACEs, a file ``OI`` ACEs, at any depth; ``IO`` ACEs do not apply to the object
  itself; the object's own ``inheritance: none`` ACEs apply only to it;
* the access check walks the DACL in order: a deny ACE for one of the token's SIDs that
  names a still-undecided requested right denies; allows accumulate; all requested rights
  granted = access;
* the command runs as the plan's sandbox account under a *write-restricted* token: every
  access must pass the normal check (the account, its groups, its logon SID), and the write
  rights must also pass the restricting check (capability and logon SIDs); each plan ACE is
  placed for both the account and the capability SID;
* the user (not the sandbox) has full control everywhere (an inheritable allow on every
  drive root) and the account nothing of its own, so the plan's ACEs decide.  Windows'
  own grants to ``BUILTIN\\Users`` (System32, Program Files) are not modelled: they only
  add reads of system files;
* deleting needs ``DELETE`` on the object or ``FILE_DELETE_CHILD`` on its parent; creating
  needs ``FILE_ADD_FILE``/``FILE_ADD_SUBDIRECTORY`` on the parent and the new object
  inherits from it; renaming needs delete on the source and create at the destination;
* links (symlinks/junctions) are followed before the check: the target's DACL decides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

USER_SID = "S-1-5-21-1004336348-1177238915-682003330-1001"
#: the sandbox account the plan's command runs as (resolved on the machine)
ACCOUNT_SID = "S-1-5-21-1004336348-1177238915-682003330-1007"
#: the groups of the sandbox account's token besides its own SID
ACCOUNT_GROUPS = {"S-1-1-0", "S-1-5-32-545", "S-1-5-11", "S-1-5-4"}
LOGON_SID = "S-1-5-5-0-123456"

FILE_READ_DATA = 0x1
FILE_WRITE_DATA = 0x2  # also FILE_ADD_FILE on directories
FILE_APPEND_DATA = 0x4  # also FILE_ADD_SUBDIRECTORY
FILE_READ_ATTRIBUTES = 0x80
FILE_DELETE_CHILD = 0x40
DELETE = 0x10000
SYNCHRONIZE = 0x100000
FULL = 0x1F01FF

READ_REQUEST = FILE_READ_DATA | FILE_READ_ATTRIBUTES | SYNCHRONIZE
WRITE_REQUEST = FILE_WRITE_DATA | FILE_APPEND_DATA | SYNCHRONIZE
#: each right that modifies an object on its own (data, append, EA, attributes, DACL, owner)
MODIFY_RIGHTS = (FILE_WRITE_DATA, FILE_APPEND_DATA, 0x10, 0x100, 0x40000, 0x80000)


# -- SID and SDDL ---------------------------------------------------------------------------

_SID = re.compile(r"S-1-(\d+)((?:-\d+)+)\Z")
SDDL_TRUSTEES = {"WD": "S-1-1-0", "BA": "S-1-5-32-544", "BU": "S-1-5-32-545", "SY": "S-1-5-18",
                 "LS": "S-1-5-19", "NS": "S-1-5-20", "AU": "S-1-5-11", "CO": "S-1-3-0", "OW": "S-1-3-4",
                 "LW": "S-1-16-4096", "ME": "S-1-16-8192", "RC": "S-1-5-12", "AC": "S-1-15-2-1"}
SDDL_RIGHTS = {"GA": 0x10000000, "GR": 0x80000000, "GW": 0x40000000, "GX": 0x20000000, "RC": 0x20000,
               "SD": 0x10000, "WD": 0x40000, "WO": 0x80000, "FA": 0x1F01FF, "FR": 0x120089, "FW": 0x120116,
               "FX": 0x1200A0, "CC": 0x1, "DC": 0x2, "LC": 0x4, "SW": 0x8, "RP": 0x10, "WP": 0x20,
               "DT": 0x40, "LO": 0x80, "CR": 0x100}
ACE_FLAGS = {"OI", "CI", "NP", "IO", "ID", "SA", "FA"}


class ParseError(ValueError):
    """A SID or SDDL string that does not parse."""


def parse_sid(text: str) -> tuple[int, tuple[int, ...]]:
    """Parse ``S-1-<authority>-<sub>…``: the authority and the sub-authorities (each a
    32-bit value, at most 15 of them), or raise :class:`ParseError`."""
    match = _SID.match(text)
    if not match:
        raise ParseError(f"not a sid: {text!r}")
    authority = int(match.group(1))
    subs = tuple(int(x) for x in match.group(2)[1:].split("-"))
    if authority >= 2 ** 48 or not 1 <= len(subs) <= 15 or any(s >= 2 ** 32 for s in subs):
        raise ParseError(f"sid out of range: {text!r}")
    return authority, subs


@dataclass(frozen=True)
class Ace:
    """One ACE: allow/deny, access mask, flags (OI CI NP IO ID), trustee SID."""

    kind: str
    mask: int
    flags: frozenset[str]
    sid: str
    tag: str = ""  # which plan item added it (for teardown checks)


def parse_ace(text: str) -> Ace:
    """Parse one SDDL ACE string ``(D;OICI;0x001f01ff;;;S-1-…)``."""
    if not (text.startswith("(") and text.endswith(")")):
        raise ParseError(f"ace not parenthesised: {text!r}")
    fields = text[1:-1].split(";")
    if len(fields) != 6:
        raise ParseError(f"ace needs 6 fields: {text!r}")
    kind_s, flags_s, rights_s, obj, inherit_obj, trustee = fields
    if kind_s not in ("A", "D") or obj or inherit_obj:
        raise ParseError(f"unsupported ace type or object ace: {text!r}")
    if len(flags_s) % 2:
        raise ParseError(f"bad ace flags: {flags_s!r}")
    flags = frozenset(flags_s[i:i + 2] for i in range(0, len(flags_s), 2))
    if not flags <= ACE_FLAGS:
        raise ParseError(f"unknown ace flags: {flags_s!r}")
    if rights_s.lower().startswith("0x"):
        mask = int(rights_s, 16)
    else:
        if len(rights_s) % 2 or not rights_s:
            raise ParseError(f"bad rights: {rights_s!r}")
        mask = 0
        for i in range(0, len(rights_s), 2):
            code = rights_s[i:i + 2]
            if code not in SDDL_RIGHTS:
                raise ParseError(f"unknown right {code!r}")
            mask |= SDDL_RIGHTS[code]
    sid = SDDL_TRUSTEES.get(trustee, trustee)
    parse_sid(sid)
    return Ace("deny" if kind_s == "D" else "allow", mask, flags, sid)


def parse_sddl(text: str) -> dict[str, object]:
    """Parse an SDDL security descriptor (``O:`` owner, ``G:`` group, ``D:`` DACL with
    flags and ACEs); every part must be consumed."""
    out: dict[str, object] = {}
    rest = text
    while rest:
        match = re.match(r"([OGDS]):", rest)
        if not match:
            raise ParseError(f"unexpected sddl text: {rest!r}")
        part = match.group(1)
        rest = rest[2:]
        if part in "OG":
            value = re.match(r"(S-1-[0-9-]+|[A-Z]{2})", rest)
            if not value:
                raise ParseError(f"bad {part} owner/group in {text!r}")
            sid = SDDL_TRUSTEES.get(value.group(1), value.group(1))
            parse_sid(sid)
            out[part] = sid
            rest = rest[value.end():]
        else:
            flags = re.match(r"[PAIRNO]*", rest).group(0)  # type: ignore[union-attr]
            rest = rest[len(flags):]
            aces = []
            while rest.startswith("("):
                end = rest.index(")") + 1
                aces.append(parse_ace(rest[:end]))
                rest = rest[end:]
            out[part] = aces
    return out


# -- the filesystem model -------------------------------------------------------------------

def key(path: str) -> str:
    """The comparison key of a windows path."""
    return path.replace("/", "\\").rstrip("\\").lower() if len(path) > 3 else path[:2].lower() + "\\"


def parent_of(path: str) -> str | None:
    """The parent of a windows path, None for a drive root."""
    k = path.rstrip("\\")
    if len(k) <= 2:
        return None
    head = k.rsplit("\\", 1)[0]
    return head + "\\" if len(head) == 2 else head


@dataclass
class Node:
    """One object: a directory, a file or a link (to ``target``)."""

    path: str
    kind: str
    target: str | None = None
    aces: list[Ace] = field(default_factory=list)


class FsModel:
    """An in-memory tree of objects with explicit ACEs."""

    def __init__(self, drives: Iterable[str] = ("C",)):
        self.nodes: dict[str, Node] = {}
        for drive in drives:
            root = f"{drive}:\\"
            self.nodes[key(root)] = Node(root, "dir", aces=[Ace("allow", FULL, frozenset({"OI", "CI"}), USER_SID)])

    def add(self, path: str, kind: str = "dir", target: str | None = None) -> None:
        """Add an object and its missing ancestors (as directories)."""
        parent = parent_of(path)
        if parent is not None and key(parent) not in self.nodes:
            self.add(parent)
        self.nodes.setdefault(key(path), Node(path, kind, target))

    def exists(self, path: str) -> bool:
        return key(path) in self.nodes

    def resolve(self, path: str, depth: int = 0) -> str:
        """Follow links along ``path`` (a missing tail stays as written)."""
        if depth > 16:
            raise RuntimeError("link loop")
        parts = path.rstrip("\\").split("\\")
        for i in range(1, len(parts) + 1):
            prefix = "\\".join(parts[:i])
            node = self.nodes.get(key(prefix if i > 1 else prefix + "\\"))
            if node is not None and node.kind == "link":
                rest = parts[i:]
                return self.resolve("\\".join([node.target.rstrip("\\"), *rest]), depth + 1)  # type: ignore[union-attr]
        return path

    def snapshot(self) -> dict[str, tuple[str, tuple[Ace, ...]]]:
        """The whole tree with ACEs, for before/after comparisons."""
        return {k: (n.kind, tuple(n.aces)) for k, n in self.nodes.items()}

    # -- the DACL --------------------------------------------------------------------------

    def dacl(self, path: str, kind: str | None = None) -> list[Ace]:
        """The effective DACL of ``path`` (which may not exist yet: then what a new object
        of ``kind`` there would get by inheritance)."""
        node = self.nodes.get(key(path))
        kind = kind or (node.kind if node else "file")
        out = [a for a in (node.aces if node else []) if "IO" not in a.flags]
        current = path
        distance = 0
        while True:
            current = parent_of(current)  # type: ignore[assignment]
            if current is None:
                break
            distance += 1
            ancestor = self.nodes.get(key(current))
            if ancestor is None:
                continue
            level = []
            for ace in ancestor.aces:
                wanted = "CI" if kind == "dir" else "OI"
                if wanted in ace.flags and not ("NP" in ace.flags and distance > 1):
                    level.append(ace)
            out.extend(level)
        return out


def check(dacl: list[Ace], sids: set[str], desired: int) -> bool:
    """The DACL walk: deny ACEs on undecided requested rights deny; allows accumulate."""
    remaining = desired
    for ace in dacl:
        if ace.sid not in sids:
            continue
        if ace.kind == "deny":
            if ace.mask & remaining:
                return False
        else:
            remaining &= ~ace.mask
            if not remaining:
                return True
    return remaining == 0


#: the rights a write-restricted token checks against its restricting SIDs (generic write
#: and every right that modifies or removes the object)
WRITE_RIGHTS = FILE_WRITE_DATA | FILE_APPEND_DATA | 0x10 | 0x100 | FILE_DELETE_CHILD | DELETE | 0x40000 | 0x80000


@dataclass
class Token:
    """A restricted token: the normal SIDs and the restricting SIDs; a write-restricted
    token checks only the write rights against the restricting SIDs."""

    normal: set[str]
    restricting: set[str]
    write_restricted: bool = False

    def allows(self, dacl: list[Ace], desired: int) -> bool:
        if not check(dacl, self.normal, desired):
            return False
        if not self.restricting:
            return True
        restricted = desired & WRITE_RIGHTS if self.write_restricted else desired
        return not restricted or check(dacl, self.restricting, restricted | (desired & SYNCHRONIZE))


def token_of(plan: dict) -> Token:
    """The token a plan's spawn steps create: the sandbox account's (its SID
    :data:`ACCOUNT_SID`, logon SID :data:`LOGON_SID`) when the plan has one, else the user's."""
    restricting = {s["sid"] or LOGON_SID for s in plan["token"]["restricting_sids"]}
    user = ACCOUNT_SID if plan["principal"].get("account") else USER_SID
    normal = {user, LOGON_SID} | (ACCOUNT_GROUPS if user == ACCOUNT_SID else set())
    return Token(normal, restricting, bool(plan["token"]["write_restricted"]))


# -- applying a plan ------------------------------------------------------------------------

def glob_regex(pattern: str) -> re.Pattern[str]:
    """A windows glob as a case-insensitive regex (``**`` spans components)."""
    parts = pattern.split("\\")
    out = ""
    for i, part in enumerate(parts):
        if part == "**":
            out += r"(?:[^\\]+\\)*"
            continue
        piece = "".join("[^\\\\]*" if c == "*" else "[^\\\\]" if c == "?" else re.escape(c) for c in part)
        out += piece + ("\\\\" if i < len(parts) - 1 else "")
    return re.compile(out + r"\Z", re.IGNORECASE)


class PreflightFailed(Exception):
    """The plan refused to start (fail closed)."""


def apply_plan(fs: FsModel, plan: dict) -> list[tuple]:
    """Apply a plan's filesystem steps to ``fs``; return the journal of what was added."""
    journal: list[tuple] = []
    for check_ in plan["preflight"]:
        if check_["check"] == "exists" and not fs.exists(check_["target"]):
            raise PreflightFailed(f"missing {check_['target']}")
        if (check_["check"] == "canonical" and fs.exists(check_["target"])
                and key(fs.resolve(check_["target"])) != key(check_["target"])):
            raise PreflightFailed(f"not canonical: {check_['target']}")
    for holder in plan["placeholders"]:
        missing = []
        path: str | None = holder["path"]
        while path is not None and not fs.exists(path):
            missing.append(path)
            path = parent_of(path)
        for item in reversed(missing):
            fs.add(item)
            journal.append(("placeholder", item))
    sid = plan["acl"]["sid"]

    def add_ace(path: str, sddl: str, inheritance: str, tag: str) -> None:
        node = fs.nodes.get(key(path))
        if node is None or node.kind == "link":
            return
        parsed = parse_ace(sddl)
        flags = parsed.flags if (inheritance == "OICI" and node.kind == "dir") else frozenset()
        assert parsed.sid == sid
        # the same entry for the sandbox account (normal check) and the capability SID
        for who in ([ACCOUNT_SID, sid] if plan["principal"].get("account") else [sid]):
            ace = Ace(parsed.kind, parsed.mask, flags, who, tag)
            # AddAccessRule keeps explicit ACEs canonical: explicit denies before explicit allows
            if ace.kind == "deny":
                position = sum(1 for a in node.aces if a.kind == "deny")
                node.aces.insert(position, ace)
            else:
                node.aces.append(ace)
            journal.append(("ace", path, ace))

    for entry in plan["acl"]["entries"]:
        add_ace(entry["path"], entry["sddl"], entry["inheritance"], entry["id"])
    for glob in plan["globs"]:
        regex = glob_regex(glob["pattern"])
        roots = [key(r) for r in glob.get("walk_roots", [glob["base"]])]
        matches = [n.path for k, n in sorted(fs.nodes.items())
                   if any(k.startswith(root.rstrip("\\") + "\\") or k == root for root in roots)
                   and n.kind != "link" and regex.match(n.path)]
        for match in matches:
            for ace in glob["aces"]:
                add_ace(match, ace["sddl"], ace["inheritance"], glob["id"])
            for root in glob["guard_ancestors_within"]:
                ancestor = parent_of(match)
                while ancestor is not None and (key(ancestor) == key(root).rstrip("\\")
                                                or key(ancestor).startswith(key(root).rstrip("\\") + "\\")):
                    add_ace(ancestor, f"(D;;0x{DELETE:08x};;;{sid})", "none", "guard")
                    ancestor = parent_of(ancestor)
    return journal


def teardown(fs: FsModel, journal: list[tuple]) -> None:
    """Undo a journal, newest first: remove exactly the ACEs and placeholders added."""
    for item in reversed(journal):
        if item[0] == "ace":
            node = fs.nodes[key(item[1])]
            node.aces.remove(item[2])
        elif item[0] == "placeholder":
            children = [k for k in fs.nodes if parent_of(fs.nodes[k].path) and key(parent_of(fs.nodes[k].path)) == key(item[1])]
            if not children:
                del fs.nodes[key(item[1])]


# -- probes ---------------------------------------------------------------------------------

class Evaluator:
    """Answers probes for one applied plan."""

    def __init__(self, fs: FsModel, token: Token):
        self.fs = fs
        self.token = token

    def _allowed(self, path: str, desired: int, kind: str | None = None) -> bool:
        return self.token.allows(self.fs.dacl(path, kind), desired)

    def read(self, path: str) -> bool:
        path = self.fs.resolve(path)
        return self.fs.exists(path) and self._allowed(path, READ_REQUEST)

    def write(self, path: str) -> bool:
        """Whether any modification is possible: data, append, attributes or extended
        attributes, or the security descriptor."""
        path = self.fs.resolve(path)
        return self.fs.exists(path) and any(self._allowed(path, right | SYNCHRONIZE) for right in MODIFY_RIGHTS)

    def create(self, path: str, kind: str = "file") -> bool:
        """Create a new object at ``path`` and write to it."""
        path = self.fs.resolve(path)
        parent = parent_of(path)
        if self.fs.exists(path) or parent is None or not self.fs.exists(parent):
            return False
        if not self._allowed(parent, FILE_WRITE_DATA if kind == "file" else FILE_APPEND_DATA):
            return False
        return self._allowed(path, WRITE_REQUEST if kind == "file" else FILE_APPEND_DATA, kind)

    def _delete_one(self, path: str) -> bool:
        parent = parent_of(path)
        return self._allowed(path, DELETE) or (parent is not None and self._allowed(parent, FILE_DELETE_CHILD))

    def delete(self, path: str) -> bool:
        """Delete ``path`` (a directory with everything below it)."""
        path = self.fs.resolve(path)
        if not self.fs.exists(path):
            return False
        k = key(path)
        below = [n.path for kk, n in self.fs.nodes.items() if kk.startswith(k + "\\")]
        return all(self._delete_one(p) for p in [*below, path])

    def rename(self, source: str, destination: str) -> bool:
        """Rename ``source`` to a new ``destination`` (its subtree moves with it)."""
        source = self.fs.resolve(source)
        if not self.fs.exists(source) or not self._delete_one(source):
            return False
        node = self.fs.nodes[key(source)]
        return self.create(destination, "dir" if node.kind == "dir" else "file")


def fnmatch_any(name: str, patterns: Iterable[str]) -> bool:
    """Whether ``name`` matches one of the fnmatch patterns (case-sensitive)."""
    return any(fnmatchcase(name, p) for p in patterns)
