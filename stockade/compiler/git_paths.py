"""Implied protections of git metadata: what protecting a repository's config or hooks means.

A policy that makes ``R/.git/config`` or ``R/.git/hooks`` read-only (or denies them) means
"the sandbox must not change what git on the host reads as configuration, or runs as code,
for the repository R".  Git reads far more than those two paths, and each of them could
redirect the host's next ``git status`` to a planted ``core.fsmonitor`` or ``core.hooksPath``:

* in the git directory G: ``config``, ``config.worktree`` (read when
  ``extensions.worktreeConfig`` is on), ``commondir`` (names the directory whose ``config``
  and ``hooks`` are used instead), ``hooks``, ``worktrees/`` (the linked worktrees' own
  ``commondir``, ``config.worktree`` and ``gitdir``) and, for each existing submodule gitdir
  under ``modules/``, the same set again;
* the ``.git`` entry itself when it is a ``gitdir:`` file, and the git directory it names
  (with that directory's ``commondir`` target);
* the files named by ``include.path`` / ``includeIf.<condition>.path`` (whatever the
  condition: it may hold later) and the directory named by ``core.hooksPath`` in any of
  those configs, recursively (git's own depth limit, 10), and the executables that
  executable-valued keys (``core.fsmonitor``, ``core.editor`` …) name by a path;
* the user's and the system's git config (``~/.gitconfig``, ``$XDG_CONFIG_HOME/git/config``,
  ``/etc/gitconfig``) and their includes: git reads them for every repository;
* the ``.git`` files of the submodules' worktrees (from the submodule gitdirs'
  ``core.worktree`` and the worktree's ``.gitmodules``).

:func:`implied_git_rules` returns a ``readonly`` :class:`~stockade.compiler.ir.FsRule` for
each such path *that the policy would let the sandbox write* (never a rule that loosens a
``deny``, never one on a path already read-only), with the :class:`~stockade.compiler.ir.Origin`
of the policy rule that implied it, so every backend and the analyzer see the same rules and
every explanation names the policy line.  Paths that do not exist yet get rules too (the
bwrap backend mounts a placeholder; see :func:`placeholder_content` for the git files that
must be a file, not a directory).

Not covered (see the threat model): the index stays writable (``git add`` needs it), so a
command can register a gitlink whose planted repository ``git status`` recurses into; a new
nested repository; ``objects/info/alternates`` and ``info/`` (they name objects and
patterns, never code).

Reading the host's git files is acceptable only because the files read are protected by
these same rules (or lie outside every writable grant): every file is opened component by
component without following a symlink that lies in a writable area, never blocks on a FIFO,
and is read to a bounded size; content that was written by a sandbox earlier can only add
more read-only rules.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from stockade.compiler.ir import FsRule, PolicyIR

#: Bytes read from one git metadata file (a config is rarely more than a few KiB).
READ_LIMIT = 256 * 1024
#: Git's own limit on nested includes.
INCLUDE_DEPTH = 10
#: Nesting of submodule gitdirs followed (``modules/a/modules/b`` …) and of commondir hops.
GITDIR_DEPTH = 4
#: Components of a submodule name under ``modules/`` (names may contain slashes).
MODULE_NAME_DEPTH = 4
#: Bound on the implied rules of one compile (a hostile config cannot make the compile slow).
RULE_LIMIT = 1000
#: Files and directories of a git directory that decide what git reads or runs.
GITDIR_ENTRIES: tuple[str, ...] = ("config", "config.worktree", "commondir", "hooks", "worktrees")
#: The rules a policy names that make a git directory protected (their last component).
TRIGGERS: frozenset[str] = frozenset({"config", "hooks"})
#: Config keys (section, key) whose value is a command that git runs: a first word with a
#: slash names an executable file that must not be writable either.
EXEC_KEYS: frozenset[tuple[str, str]] = frozenset({
    ("core", "fsmonitor"), ("core", "editor"), ("core", "pager"), ("core", "sshcommand"), ("core", "askpass"),
    ("core", "gitproxy"), ("sequence", "editor"), ("diff", "external"), ("gpg", "program"),
    ("credential", "helper"), ("interactive", "difffilter"), ("uploadpack", "packobjectshook"),
})
#: Keys of subsections (``diff.<driver>.textconv`` …) whose value is a command.
EXEC_SUBKEYS: frozenset[tuple[str, str]] = frozenset({
    ("diff", "textconv"), ("diff", "command"), ("filter", "clean"), ("filter", "smudge"), ("filter", "process"),
    ("merge", "driver"), ("gpg", "program"), ("credential", "helper"), ("remote", "receivepack"),
    ("remote", "uploadpack"),
})
#: In the ``source_text`` of an implied rule on a config file (which must be a file).
CONFIG_MARK = " (git config implied by "
#: In the ``source_text`` of the other implied rules.
METADATA_MARK = " (git metadata implied by "
_BOOLEANS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0", ""})

#: Content of the placeholder mounted at a missing ``commondir``: "the common directory is
#: this git directory", which is what git assumes when the file is missing.  An empty
#: file or a directory there makes every git command die (``failed to read …/commondir``).
COMMONDIR_PLACEHOLDER = "."


@dataclass
class GitProtection:
    """What protecting the repositories of a policy implies."""

    #: the implied rules, each with the origin of the policy rule that implied it
    rules: list[FsRule] = field(default_factory=list)
    #: every file whose content decided a rule (a changed one must recompile)
    read: list[str] = field(default_factory=list)
    #: (message, the implying rule) for what cannot be protected
    warnings: list[tuple[str, FsRule]] = field(default_factory=list)


def placeholder_content(path: str, rules: Iterable[FsRule] = ()) -> str | None:
    """The content of the *file* placeholder for a missing protected git path, or None
    (an empty read-only directory is fine there).

    A missing ``commondir``, ``config.worktree`` or include target — any config file this
    module protects (``rules``: the rules at ``path``) — cannot be an empty directory: git
    reads them as files, and a directory there (or an empty ``commondir``) makes git fail.
    ``commondir`` gets ``.`` (the git directory itself: what git assumes when the file is
    missing), a config an empty file (no settings).
    """
    name = posixpath.basename(path)
    parent = posixpath.dirname(path)
    if name == "commondir":
        gitdir = posixpath.basename(parent) == ".git" or os.path.lexists(posixpath.join(parent, "HEAD"))
        return COMMONDIR_PLACEHOLDER if gitdir else None
    if name == "config.worktree" or any(CONFIG_MARK in rule.source_text for rule in rules):
        return ""
    return None


# -- reading the host's git files without following a writable symlink ---------------------

class _Reader:
    """Opens host files component by component: a symlink in a writable area is never
    followed (the sandbox could have planted it), other symlinks are the host's own."""

    def __init__(self, writable: Callable[[str], bool]):
        self.writable = writable

    def resolve(self, path: str) -> tuple[str | None, str | None]:
        """(the path with every trusted symlink resolved, None) or (None, the writable
        symlink met on the way).  A missing tail is kept as written."""
        parts = [p for p in path.split("/") if p]
        current = "/"
        hops = 0
        index = 0
        while index < len(parts):
            candidate = posixpath.join(current, parts[index])
            try:
                mode = os.lstat(candidate).st_mode
            except (OSError, ValueError):
                return posixpath.normpath(posixpath.join(candidate, *parts[index + 1:])), None
            if stat.S_ISLNK(mode):
                hops += 1
                if self.writable(candidate) or hops > 40:
                    return None, candidate
                try:
                    target = os.readlink(candidate)
                except OSError:
                    return None, candidate
                rest = parts[index + 1:]
                parts = [p for p in posixpath.normpath(posixpath.join(current, target)).split("/") if p] + rest
                current, index = "/", 0
                continue
            current = candidate
            index += 1
        return current, None

    @staticmethod
    def read(path: str) -> str | None:
        """The text of a regular file at a resolved path (up to :data:`READ_LIMIT` bytes),
        or None.  Every component is opened with ``O_NOFOLLOW`` (a symlink swapped in after
        :meth:`resolve` is not followed) and the file with ``O_NONBLOCK`` (a FIFO never
        blocks)."""
        parts = [p for p in path.split("/") if p]
        if not parts:
            return None
        flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            for part in parts[:-1]:
                next_fd = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = next_fd
            file_fd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=fd)
            try:
                if not stat.S_ISREG(os.fstat(file_fd).st_mode):
                    return None
                chunks = []
                size = 0
                while size < READ_LIMIT:
                    chunk = os.read(file_fd, READ_LIMIT - size)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                return b"".join(chunks).decode("utf-8", "surrogateescape")
            finally:
                os.close(file_fd)
        except (OSError, ValueError):  # missing, a symlink (ELOOP), unreadable: nothing to follow
            return None
        finally:
            os.close(fd)


def _kind(path: str) -> str:
    try:
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):  # ValueError: a NUL byte (from a hostile file)
        return "missing"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


# -- the git config format -------------------------------------------------------------------

def parse_config(text: str) -> list[tuple[str, str | None, str, str]]:
    """The entries of a git config file as (section, subsection, key, value); section and
    key lower-cased (git compares them case-insensitively), subsection as written.

    Follows git's syntax: ``[section]``, ``[section "sub"]``, the old ``[section.sub]``,
    ``key = value`` with quotes, the escapes ``\\"`` ``\\\\`` ``\\n`` ``\\t`` ``\\b``, ``#``/``;``
    comments and a trailing ``\\`` continuing a line; a key without ``=`` is true.  Lines it
    cannot read are skipped (git would refuse the file; nothing is lost by reading less).
    """
    entries: list[tuple[str, str | None, str, str]] = []
    section: str | None = None
    subsection: str | None = None
    lines = text.replace("\r\n", "\n").split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            header, _, rest = stripped[1:].partition("]")
            rest = rest.strip()
            if "\"" in header:
                name, _, quoted = header.partition("\"")
                section = name.strip().lower()
                sub = quoted.rsplit("\"", 1)[0] if "\"" in quoted else None
                subsection = sub.replace("\\\"", "\"").replace("\\\\", "\\") if sub is not None else None
            elif "." in header:
                name, _, sub = header.partition(".")
                section, subsection = name.strip().lower(), sub.strip().lower()
            else:
                section, subsection = header.strip().lower(), None
            if not rest or rest[0] in "#;":
                continue
            stripped = rest  # `[core] editor = vi` on one line
        if section is None:
            continue
        key, eq, raw = stripped.partition("=")
        key = key.strip().lower()
        if not key or not all(c.isalnum() or c == "-" for c in key):
            continue
        if not eq:
            entries.append((section, subsection, key, "true"))
            continue
        value, more = _config_value(raw)
        while more and index < len(lines):
            tail, more = _config_value(lines[index], started=bool(value))
            index += 1
            value += tail
        entries.append((section, subsection, key, value))
    return entries


def _config_value(raw: str, started: bool = False) -> tuple[str, bool]:
    """A value's text from one line and whether a trailing backslash continues it
    (``started``: a continued value, whose leading blanks are kept as git keeps them)."""
    out: list[str] = []
    quoted = False
    pending_space = ""
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            if i + 1 >= len(raw):
                return "".join(out) + pending_space, True
            nxt = raw[i + 1]
            out.append(pending_space + {"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
            pending_space = ""
            started = True
            i += 2
            continue
        if c == "\"":
            quoted = not quoted
            out.append(pending_space)
            pending_space = ""
            started = True
        elif not quoted and c in "#;":
            break
        elif not quoted and c.isspace():
            if started:
                pending_space += c
        else:
            out.append(pending_space + c)
            pending_space = ""
            started = True
        i += 1
    return "".join(out), False


def _first_word(command: str) -> str:
    command = command.strip().lstrip("!").strip()
    if not command:
        return ""
    if command[0] in "\"'":
        end = command.find(command[0], 1)
        return command[1:end] if end > 0 else command[1:]
    return command.split()[0]


# -- the walk ----------------------------------------------------------------------------------

class _Walker:
    """Collects the implied rules of one compile."""

    def __init__(self, ir: PolicyIR, environ: Mapping[str, str] | None):
        self.ir = ir
        self.home = ir.context.home
        self.environ = environ or {}
        self.out = GitProtection()
        self.reader = _Reader(self.writable)
        self.protected: set[str] = set()
        self.gitdirs: set[str] = set()
        self.configs: set[str] = set()
        self.trigger: FsRule | None = None

    def writable(self, path: str) -> bool:
        return self.ir.path_access(path).can_write

    # -- rules -------------------------------------------------------------------------

    def protect(self, path: str, config: bool = False) -> str | None:
        """Make ``path`` read-only if the policy lets the sandbox write it; the resolved
        path (None when it lies behind a writable symlink, which is warned about)."""
        assert self.trigger is not None
        if "\x00" in path:  # from a hostile file: no file has such a name
            return None
        path = posixpath.normpath(path)
        resolved, link = self.reader.resolve(path)
        if resolved is None:
            self.warn(f"`{link}` is a symlink the sandbox can replace: git metadata behind it "
                      f"(`{path}`) cannot be protected")
            return None
        if resolved in self.protected:
            return resolved
        if len(self.out.rules) >= RULE_LIMIT:
            self.warn(f"more than {RULE_LIMIT} git paths to protect: `{resolved}` and the ones after it are not "
                      f"made read-only")
            return resolved
        self.protected.add(resolved)
        if self.writable(resolved):
            rule = self.trigger
            mark = CONFIG_MARK if config else METADATA_MARK
            self.out.rules.append(FsRule("readonly", resolved, False, rule.locked,
                                         f"{resolved}{mark}{rule.kind} {rule.source_text or rule.pattern})",
                                         rule.origin))
        return resolved

    def warn(self, message: str) -> None:
        assert self.trigger is not None
        if all(message != seen for seen, _ in self.out.warnings):
            self.out.warnings.append((message, self.trigger))

    def read(self, path: str) -> str | None:
        text = self.reader.read(path)
        if text is not None and path not in self.out.read:
            self.out.read.append(path)
        return text

    # -- repositories --------------------------------------------------------------------

    def repository(self, rule: FsRule, gitdir: str) -> None:
        """Everything protecting ``gitdir`` (named by a rule on ``gitdir/config|hooks``) implies."""
        self.trigger = rule
        parent = posixpath.dirname(gitdir)
        worktree = parent if posixpath.basename(gitdir) == ".git" else None
        kind = _kind(gitdir)
        if kind == "symlink":
            self.warn(f"`{gitdir}` is a symlink the sandbox can replace: the repository it names "
                      f"cannot be protected from redirection")
        elif kind == "file":  # a `gitdir: <path>` file (linked worktree, submodule, --separate-git-dir)
            self.protect(gitdir)
            target = self._gitdir_file(gitdir)
            if target is not None:
                self.gitdir(target, worktree, 0)
        else:
            self.gitdir(gitdir, worktree, 0)
        for config in self._global_configs():
            self.config(config, worktree or gitdir, 0)

    def _gitdir_file(self, path: str) -> str | None:
        text = self.read(path)
        if text is None:
            return None
        first = text.split("\n", 1)[0].strip()
        if not first.startswith("gitdir:"):
            return None
        target = first[len("gitdir:"):].strip()
        if not target:
            return None
        return posixpath.normpath(posixpath.join(posixpath.dirname(path), target))

    def gitdir(self, gitdir: str, worktree: str | None, depth: int) -> None:
        """Protect a git directory's entries, its common directory and its submodules."""
        resolved = self.reader.resolve(gitdir)[0]
        if resolved is None:
            self.protect(gitdir)  # warns
            return
        if resolved in self.gitdirs or depth > GITDIR_DEPTH:
            return
        self.gitdirs.add(resolved)
        gitdir = resolved
        for entry in GITDIR_ENTRIES:
            if entry == "worktrees" and self._linked_inside(gitdir):
                continue
            self.protect(posixpath.join(gitdir, entry), config=entry.startswith("config"))
        base = worktree or gitdir
        for entry in ("config", "config.worktree"):
            self.config(posixpath.join(gitdir, entry), base, 0)
        common = posixpath.join(gitdir, "commondir")
        if _kind(common) == "file":
            text = self.read(common)
            target = text.strip("\r\n") if text else ""
            if target:
                self.gitdir(posixpath.normpath(posixpath.join(gitdir, target)), worktree, depth + 1)
        self._modules(posixpath.join(gitdir, "modules"), depth)
        if worktree is not None:
            self._gitmodules(worktree)

    def _linked_inside(self, common: str) -> bool:
        """When the protected repository is a linked worktree of ``common`` (its git
        directory is ``common/worktrees/<id>``), ``worktrees/`` stays writable — it holds
        that worktree's index, HEAD and logs — and the *other* worktrees' directories are
        protected instead (the linked one's own entries already are).  True in that case."""
        prefix = posixpath.join(common, "worktrees") + "/"
        own = {g for g in self.gitdirs if g.startswith(prefix)}
        if not own:
            return False
        try:
            names = sorted(os.listdir(prefix))
        except OSError:
            names = []
        for name in names[:RULE_LIMIT]:
            path = prefix + name
            if path not in own:
                self.protect(path)
        return True

    def _modules(self, modules: str, depth: int, name_depth: int = 0) -> None:
        """Every existing submodule gitdir under ``modules/`` (names may have slashes)."""
        if name_depth >= MODULE_NAME_DEPTH or _kind(modules) != "dir":
            return
        try:
            names = sorted(os.listdir(modules))
        except OSError:
            return
        for name in names[:RULE_LIMIT]:
            path = posixpath.join(modules, name)
            if _kind(path) != "dir":
                continue
            if os.path.lexists(posixpath.join(path, "HEAD")):
                worktree = self._core_worktree(path)
                self.gitdir(path, worktree, depth + 1)
                if worktree is not None and _kind(posixpath.join(worktree, ".git")) == "file":
                    self.protect(posixpath.join(worktree, ".git"))
            else:
                self._modules(path, depth, name_depth + 1)

    def _core_worktree(self, gitdir: str) -> str | None:
        text = self.read(posixpath.join(gitdir, "config"))
        if text is None:
            return None
        for section, sub, key, value in parse_config(text):
            if section == "core" and sub is None and key == "worktree" and value:
                return posixpath.normpath(posixpath.join(gitdir, self._expand(value)))
        return None

    def _gitmodules(self, worktree: str) -> None:
        """The ``.git`` files of the submodules ``.gitmodules`` lists (existing ones)."""
        text = self.read(posixpath.join(worktree, ".gitmodules"))
        if text is None:
            return
        count = 0
        for section, _, key, value in parse_config(text):
            if section != "submodule" or key != "path" or not value or count >= RULE_LIMIT:
                continue
            count += 1
            path = posixpath.normpath(posixpath.join(worktree, value))
            if not (path + "/").startswith(worktree.rstrip("/") + "/") or path == worktree:
                continue  # a path outside the worktree is not a submodule git would use
            dot_git = posixpath.join(path, ".git")
            if _kind(dot_git) == "file":
                self.protect(dot_git)

    # -- configs -------------------------------------------------------------------------

    def _global_configs(self) -> list[str]:
        xdg = self.environ.get("XDG_CONFIG_HOME") or posixpath.join(self.home, ".config")
        return [posixpath.join(self.home, ".gitconfig"), posixpath.join(xdg, "git", "config"), "/etc/gitconfig"]

    def _expand(self, value: str) -> str:
        if value == "~" or value.startswith("~/"):
            return self.home + value[1:]
        return value

    def config(self, path: str, worktree: str, depth: int) -> None:
        """Protect what a config file names: includes (recursively), the hooks directory,
        executables named by a path."""
        resolved = self.protect(path, config=True)
        if resolved is None or resolved in self.configs or depth > INCLUDE_DEPTH:
            return
        self.configs.add(resolved)
        if not self.ir.path_access(resolved).can_read:
            return  # a denied file (a secret an include names) is not read: its content could leak into rules
        text = self.read(resolved)
        if text is None:
            return
        here = posixpath.dirname(resolved)
        for section, sub, key, value in parse_config(text):
            if not value:
                continue
            if key == "path" and (section == "include" or (section == "includeif" and sub is not None)):
                if value.startswith("~") and not (value == "~" or value.startswith("~/")):
                    continue  # `~user/`: git expands it from the password database; not followed
                self.config(posixpath.join(here, self._expand(value)), worktree, depth + 1)
            elif section == "core" and sub is None and key == "hookspath":
                self.protect(posixpath.join(worktree, self._expand(value)))
            elif (section, key) in (EXEC_SUBKEYS if sub is not None else EXEC_KEYS) \
                    or (section == "alias" and value.startswith("!")) or section == "pager":
                if section == "core" and key == "fsmonitor" and value.lower() in _BOOLEANS:
                    continue
                word = self._expand(_first_word(value))
                if "/" in word:
                    self.protect(posixpath.join(worktree, word))


def _gitdir_of(rule: FsRule) -> str | None:
    """The git directory a literal protecting rule names (``G`` of ``G/config``, ``G/hooks``)."""
    if rule.is_glob or rule.kind not in ("readonly", "deny"):
        return None
    name = posixpath.basename(rule.pattern)
    if name not in TRIGGERS:
        return None
    gitdir = posixpath.dirname(rule.pattern)
    if posixpath.basename(gitdir) == ".git":
        return gitdir
    if _kind(gitdir) == "dir" and os.path.lexists(posixpath.join(gitdir, "HEAD")):
        return gitdir  # a bare repository, or a git directory named by a `.git` file
    return None


def implied_git_rules(ir: PolicyIR, environ: Mapping[str, str] | None = None,
                      lexical: Callable[[FsRule], str | None] | None = None) -> GitProtection:
    """The ``readonly`` rules that protecting a repository's git config or hooks implies
    (see the module doc), each carrying the origin of the rule that implied it.

    ``lexical`` gives a rule's path as written, variables expanded but symlinks not
    resolved: a ``.git`` that is a symlink (resolved away in the rule's canonical pattern)
    is then found and warned about.  Only POSIX platforms are inspected.
    """
    walker = _Walker(ir, environ)
    if ir.context.platform == "windows":
        return walker.out
    for rule in ir.filesystem:
        gitdir = _gitdir_of(rule)
        if lexical is not None and not rule.is_glob and rule.kind in ("readonly", "deny"):
            written = lexical(rule)
            if written and posixpath.basename(written) in TRIGGERS:
                dot_git = posixpath.dirname(posixpath.normpath(written))
                if posixpath.basename(dot_git) == ".git" and _kind(dot_git) == "symlink":
                    walker.trigger = rule
                    walker.warn(f"`{dot_git}` is a symlink the sandbox can replace: the repository it "
                                f"names cannot be protected from redirection")
        if gitdir is not None:
            walker.repository(rule, gitdir)
    return walker.out


def with_git_rules(ir: PolicyIR, protection: GitProtection) -> PolicyIR:
    """The IR with the implied rules appended (the IR itself when there are none)."""
    from dataclasses import replace

    return replace(ir, filesystem=ir.filesystem + tuple(protection.rules)) if protection.rules else ir
