"""git as data: global options, the configuration it runs code from, and each subcommand's
options (option → role of its value) and operands.

git runs code and changes where it works in many ways, all modelled here:

* global options (``-c key=value``, ``--config-env``, ``-C``, ``--git-dir``, ``--work-tree``,
  ``--exec-path=``) and the variables that do the same (``GIT_CONFIG_COUNT`` with
  ``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``, ``GIT_CONFIG_PARAMETERS``,
  ``GIT_CONFIG_GLOBAL``/``GIT_CONFIG_SYSTEM``, ``GIT_DIR``, ``GIT_COMMON_DIR``, ``GIT_WORK_TREE``,
  and ``HOME``/``XDG_CONFIG_HOME`` moving the per-user configuration to a place the agent can
  write), as prefix assignments or exported earlier in the text;
* configuration keys whose value is a command (:data:`_CODE_KEYS`), that redirect the network
  (:data:`_NET_KEYS`) or load configuration from elsewhere; configuration written by
  ``git config`` earlier in the same text is remembered (per file) and applies to later git
  commands that read that file (aliases, forced push refspecs);
* aliases: ``alias.x = !code`` is shell code, ``alias.x = push -f`` is expanded;
* subcommands (:data:`_SUBCOMMANDS`): option values that are shell code, programs, files
  written or read; operands that are paths; work-tree writes;
* push spellings that rewrite or delete remote history (``-f``, ``--force-with-lease``,
  ``+refspec``, ``:branch``, ``--delete``, ``--mirror``, ``--prune``, forced refspecs from
  config) are given to the command rules as one normalised argv ``git push --force …``, so a
  rule ``deny git push --force`` matches every spelling; global options are dropped from it.
"""

from __future__ import annotations

import re
import shlex

from stockade.analyzer.effects import UNKNOWN, Execute, Rename, Write, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import Parsed, parse_options, register
from stockade.analyzer.models.net import contact_url, proxies_of
from stockade.analyzer.models.programs import first_word, judge_program, writable_program
from stockade.analyzer.regex import LazyPattern

#: config keys whose value is a command git runs (``!`` aliases are shell code)
_CODE_KEYS = LazyPattern(
    r"^(core\.(fsmonitor|pager|editor|sshcommand|askpass|gitproxy)|diff\..*\.(textconv|command)|"
    r"diff\.external|merge\..*\.driver|filter\..*\.(clean|smudge|process)|pager\..*|"
    r"sequence\.editor|credential\.helper|credential\..*\.helper|gpg\.program|gpg\..*\.program|"
    r"uploadpack\.packobjectshook|sendemail\.(smtpserver|tocmd|cccmd)|web\.browser|browser\..*\.(cmd|path)|"
    r"remote\..*\.(receivepack|uploadpack|vcs)|(diff|merge)tool\..*\.(cmd|path)|man\..*\.(cmd|path)|"
    r"core\.alternaterefscommand|sendemail\.sendmailcmd|instaweb\.httpd|interactive\.difffilter|"
    r"tar\..*\.command|lfs\.customtransfer\..*\.path|lfs\.extension\..*\.(clean|smudge))$", re.I)
#: config keys that load configuration, hooks or programs from elsewhere (cannot be seen into)
_ELSEWHERE_KEYS = LazyPattern(r"^(include\.path|includeif\..*\.path|core\.worktree|init\.templatedir|"
                              r"protocol\.(ext|fd)\.allow|protocol\.allow)$", re.I)
#: config keys whose value is a file git reads (pathnames: ``~`` is the home directory)
_FILE_KEYS = LazyPattern(r"^(core\.excludesfile|core\.attributesfile|commit\.template|blame\.ignorerevsfile|"
                         r"mailmap\.file|http\.(.*\.)?(sslcert|sslkey|sslcainfo|cookiefile)|"
                         r"gpg\.ssh\.allowedsignersfile|user\.signingkey|core\.sshkeyfile)$", re.I | re.S)
#: config keys whose value is (or holds) a host git talks to; ``url.<base>.insteadOf``'s base
_NET_KEYS = LazyPattern(r"^(https?\.(.*\.)?proxy|remote\..*\.(url|pushurl|proxy|lfsurl|lfspushurl)|core\.gitproxy|"
                        r"lfs\.(.*\.)?(url|pushurl))$", re.I)
_INSTEAD_OF = LazyPattern(r"^url\.(.*)\.(insteadof|pushinsteadof)$", re.I | re.S)
#: commands a pager/editor key may name without running anything of note
_PLAIN_PROGRAMS = frozenset({"cat", "less", "more", "false", "true", "", "vi", "vim", "nano", "less -r", "less -frx",
                             "emacs", "code --wait", "delta", "diff-so-fancy"})
#: values of boolean keys (``core.fsmonitor=true`` is git's built-in monitor, not a program)
_BOOLEANS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0", ""})

#: global options that take a value (``--exec-path``, ``--list-cmds`` take one only attached)
_GLOBAL_VALUES = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env",
                            "--super-prefix"})

# Subcommands: option → role of its value; the role of the operands; what the subcommand
# writes: "" nothing, "git" the repository's .git, "tree" the .git and the work tree.
# Value roles: script (shell code), python (code not seen into), write/writer/read/readr
# (paths), text.  Operand roles: text, read, write, delete, writer, and special ones handled
# by the model (after-dashdash, foreach, run, worktree, bundle, clean, no-index, push).
_S = "script"
_DIFF = {"--output": "write", "-O": "read", "--ext-diff": "text"}
_FETCH = {"--upload-pack": _S, "--depth": "text", "--shallow-since": "text", "--shallow-exclude": "text",
          "--refmap": "text", "-j": "text", "--jobs": "text", "-o": "text", "--server-option": "text",
          "--negotiation-tip": "text", "--filter": "text", "--recurse-submodules-default": "text"}
_SUBCOMMANDS: dict[str, tuple[dict[str, str], str, str]] = {
    "status": ({}, "text", ""),
    "diff": (_DIFF, "no-index", ""),
    "log": (_DIFF, "revpaths", ""),
    "show": (_DIFF, "revpaths", ""),
    "whatchanged": (_DIFF, "revpaths", ""),
    "format-patch": ({**_DIFF, "-o": "writer", "--output-directory": "writer", "--in-reply-to": "text",
                      "--subject-prefix": "text", "--to": "text", "--cc": "text", "--from": "text",
                      "--cover-letter": "text", "--signature-file": "read"}, "text", ""),
    "range-diff": (_DIFF, "text", ""),
    "blame": ({"--contents": "read", "-S": "read", "--ignore-revs-file": "read", "-L": "text"}, "read", ""),
    "annotate": ({"--contents": "read", "-S": "read", "-L": "text"}, "read", ""),
    "lfs": ({"--remote": "text", "-I": "text", "--include": "text", "-X": "text", "--exclude": "text"}, "lfs", ""),
    "grep": ({"-f": "read", "-e": "text", "-O": _S, "--open-files-in-pager": _S, "--max-depth": "text",
              "--threads": "text", "-m": "text", "--max-count": "text", "-A": "text", "-B": "text", "-C": "text",
              "--context": "text", "--after-context": "text", "--before-context": "text"}, "grep", ""),
    "ls-files": ({"-X": "read", "--exclude-from": "read", "-x": "text", "--exclude": "text"}, "text", ""),
    "hash-object": ({"-t": "text", "--path": "text"}, "read", "git"),
    "rev-parse": ({}, "text", ""), "describe": ({}, "text", ""), "shortlog": ({}, "text", ""),
    "fsck": ({}, "text", ""), "reflog": ({}, "text", "git"), "cat-file": ({}, "revpaths", ""),
    "for-each-ref": ({}, "text", ""), "ls-tree": ({}, "text", ""), "show-ref": ({}, "text", ""),
    "branch": ({}, "text", "git"), "tag": ({"-F": "read", "--file": "read", "-m": "text", "-u": "text"}, "text", "git"),
    "add": ({"--pathspec-from-file": "read"}, "read", "git"),
    "commit": ({"-F": "read", "--file": "read", "-t": "read", "--template": "read", "-m": "text",
                "--message": "text", "-C": "text", "-c": "text", "--author": "text", "--date": "text",
                "--fixup": "text", "--squash": "text", "--pathspec-from-file": "read"}, "text", "git"),
    "checkout": ({"-b": "text", "-B": "text", "--orphan": "text", "--pathspec-from-file": "read"},
                 "after-dashdash", "tree"),
    "switch": ({"-c": "text", "-C": "text", "--orphan": "text"}, "text", "tree"),
    "restore": ({"-s": "text", "--source": "text", "--pathspec-from-file": "read"}, "paths", "tree"),
    "reset": ({"--pathspec-from-file": "read"}, "text", "tree"),
    "stash": ({"-m": "text", "--message": "text", "--pathspec-from-file": "read"}, "text", "tree"),
    "merge": ({"-m": "text", "-F": "read", "--file": "read", "-s": "text", "--strategy": "text", "-X": "text",
               "--strategy-option": "text"}, "text", "tree"),
    "rebase": ({"-x": _S, "--exec": _S, "--onto": "text", "-s": "text", "--strategy": "text", "-X": "text",
                "--strategy-option": "text", "-C": "text", "--whitespace": "text"}, "text", "tree"),
    "cherry-pick": ({"-m": "text", "--mainline": "text", "-s": "text", "-X": "text"}, "text", "tree"),
    "revert": ({"-m": "text", "--mainline": "text", "-X": "text"}, "text", "tree"),
    "pull": ({**_FETCH, "-s": "text", "--strategy": "text", "-X": "text", "--exec": _S}, "text", "tree"),
    "rm": ({"--pathspec-from-file": "read"}, "delete", "tree"),
    "mv": ({}, "write", "tree"),
    "apply": ({"--directory": "tree-dir", "-p": "text", "--exclude": "text", "--include": "text"}, "read", "tree"),
    "am": ({"--directory": "tree-dir", "-p": "text", "--exclude": "text", "--include": "text", "-S": "text"},
           "read", "tree"),
    "clean": ({"-e": "text", "--exclude": "text"}, "clean", ""),
    "init": ({"--template": "template", "--separate-git-dir": "writer", "-b": "text",
              "--initial-branch": "text", "--object-format": "text", "--shared": "text"}, "init", ""),
    "worktree": ({"-b": "text", "-B": "text", "--reason": "text", "--expire": "text"}, "worktree", "git"),
    "notes": ({"-F": "read", "--file": "read", "-m": "text", "--ref": "text"}, "text", "git"),
    "gc": ({}, "text", "git"), "sparse-checkout": ({}, "text", "tree"),
    "read-tree": ({"--prefix": "text", "--index-output": "write", "--exclude-per-directory": "text"}, "text", "tree"),
    "checkout-index": ({"--prefix": "writer", "--stage": "text"}, "text", "tree"),
    "config": ({}, "text", ""),  # (its own model)
    "remote": ({}, "text", "git"),
    "submodule": ({"--reference": "read", "--depth": "text", "-b": "text", "--branch": "text", "--name": "text",
                   "-j": "text", "--jobs": "text"}, "foreach", "tree"),
    "bisect": ({}, "run", "git"),
    "filter-branch": ({"--env-filter": _S, "--tree-filter": _S, "--index-filter": _S, "--parent-filter": _S,
                       "--msg-filter": _S, "--commit-filter": _S, "--tag-name-filter": _S, "--setup": _S,
                       "--subdirectory-filter": "text", "--prune-empty": "text", "-d": "writer",
                       "--original": "text", "--state-branch": "text"}, "text", "tree"),
    "filter-repo": ({"--filename-callback": "python", "--message-callback": "python",
                     "--name-callback": "python", "--email-callback": "python", "--refname-callback": "python",
                     "--blob-callback": "python", "--commit-callback": "python", "--tag-callback": "python",
                     "--reset-callback": "python", "--paths-from-file": "read", "--replace-text": "read",
                     "--replace-message": "read", "--mailmap": "read", "--path": "text", "--path-glob": "text",
                     "--path-regex": "text", "--path-rename": "text", "--source": "read", "--target": "writer",
                     "--subdirectory-filter": "text", "--to-subdirectory-filter": "text",
                     "--file-info-callback": "python"}, "text", "tree"),
    "difftool": ({"-x": _S, "--extcmd": _S, "-t": "text", "--tool": "text"}, "text", ""),
    "mergetool": ({"-t": "text", "--tool": "text", "-O": "read"}, "text", "tree"),
    "fetch": (_FETCH, "text", "git"),
    "ls-remote": ({"--upload-pack": _S, "-u": _S, "-o": "text", "--server-option": "text", "--sort": "text"},
                  "text", ""),
    "push": ({"--receive-pack": _S, "--exec": _S, "-o": "text", "--push-option": "text", "--repo": "remote", "--signed": "text"},
             "push", ""),
    "send-pack": ({"--receive-pack": _S, "--exec": _S, "--signed": "text"}, "push", ""),
    "archive": ({"--exec": _S, "-o": "write", "--output": "write", "--remote": "remote", "--prefix": "text",
                 "--add-file": "read", "--format": "text", "--add-virtual-file": "text", "--mtime": "text"},
                "revpaths", ""),
    "bundle": ({"--version": "text"}, "bundle", "git"),
    "send-email": ({"--smtp-server": "text", "--to-cmd": _S, "--cc-cmd": _S, "--header-cmd": _S, "--to": "text",
                    "--cc": "text", "--bcc": "text", "--from": "text", "--subject": "text", "--smtp-server-port": "text",
                    "--smtp-user": "text", "--smtp-pass": "text", "--smtp-encryption": "text",
                    "--smtp-domain": "text", "--smtp-auth": "text", "--in-reply-to": "text",
                    "--sendmail-cmd": _S, "--identity": "text", "--compose-encoding": "text",
                    "--transfer-encoding": "text", "--8bit-encoding": "text", "--to-cover": "text",
                    "--cc-cover": "text", "--reply-to": "text", "--batch-size": "text", "--relogin-delay": "text",
                    "-v": "text", "--suppress-cc": "text", "--confirm": "text"}, "send-email", ""),
    "imap-send": ({"--curl": "text", "--no-curl": "text"}, "send-email", ""),
    "instaweb": ({"-d": _S, "--httpd": _S, "-b": _S, "--browser": _S, "-p": "text", "--port": "text"}, "text", ""),
    "web--browse": ({"-b": _S, "--browser": _S, "-c": "text", "--config": "text"}, "text", ""),
    "daemon": ({}, "unknown", ""),
    "p4": ({}, "unknown", "tree"), "svn": ({}, "unknown", "tree"), "cvsimport": ({}, "unknown", "tree"),
    "cvsexportcommit": ({}, "unknown", ""), "cvsserver": ({}, "unknown", ""), "archimport": ({}, "unknown", "tree"),
    "request-pull": ({}, "text", ""),  # (runs `git ls-remote URL`)
    "upload-pack": ({}, "text", ""), "receive-pack": ({}, "text", "git"),
    "hook": ({}, "hook", ""),
    "var": ({}, "text", ""), "help": ({}, "text", ""), "version": ({}, "text", ""),
}
#: subcommands whose operands may be URLs contacted
_NETWORK = frozenset({"clone", "fetch", "pull", "push", "ls-remote", "remote", "submodule", "archive", "send-pack",
                      "subtree",
                      "fetch-pack", "request-pull"})
#: push options that let it overwrite or delete remote history
_FORCING = frozenset({"-f", "--force", "--force-with-lease", "--mirror", "-d", "--delete", "--prune"})
#: how deep aliases may expand (git itself refuses loops)
_MAX_ALIAS_DEPTH = 8


class _Git:
    """What one git invocation sees: its configuration, repository and work tree."""

    __slots__ = ("aliases", "config_tree", "editors", "forced_push", "repo", "tree", "trusts")

    def __init__(self) -> None:
        self.aliases: dict[str, tuple[str, int | None]] = {}
        self.forced_push = ""  # why config makes pushes forced ("" when it does not)
        self.repo = "."  # the -C directory
        self.tree: str | None = None  # --work-tree / GIT_WORK_TREE
        self.config_tree: str | None = None  # core.worktree (the weakest of the three)
        self.trusts: str | None = None  # safe.directory from the command line or variables
        self.editors: dict[str, str] = {}  # `sequence.editor`, `core.editor` → the command


def _new_git() -> _Git:
    """``_Git()`` without ``type.__call__`` (which re-enters the interpreter for ``__init__``:
    ~1,200 machine instructions per git command)."""
    git = _new_object(_Git)
    git.aliases = {}
    git.forced_push = ""
    git.repo = "."
    git.tree = None
    git.config_tree = None
    git.trusts = None
    git.editors = {}
    return git


_new_object = object.__new__


def _known_configs(inv: Invocation) -> dict[str, dict[str, str]]:
    """Configuration files written by ``git config`` earlier in this text: resolved path → keys."""
    configs: dict[str, dict[str, str]] | None = getattr(inv.walker, "git_configs", None)
    if configs is None:
        configs = {}
        inv.walker.git_configs = configs
    return configs


_WRITES = frozenset({Write, Rename})


def _env(inv: Invocation, name: str) -> str | None:
    """A variable git sees: a prefix assignment, or exported earlier in the text."""
    env = inv.env
    if env:
        value = env.get(name)
        if value is not None:
            return value
    state = inv.walker.state
    if state.exported and name in state.exported:
        return state.variables.get(name)
    return None


def model_git(inv: Invocation, depth: int = 0) -> None:
    """git: global options and variables, configuration, aliases, then the subcommand."""
    argv = inv.argv
    git = _new_git()
    parsed = parse_options(argv, _GLOBAL_VALUES, stop_at_first_positional=True)
    _environment(inv, git)
    git_dir: tuple[str, int | None] | None = None
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option == "-c":
            key, eq, setting = value.partition("=")
            _config_value(inv, git, key, setting if eq else "true", index)
        elif option == "--config-env":
            key, _, name = value.partition("=")
            found = _env(inv, name)
            _config_value(inv, git, key, UNKNOWN if found is None else found, index)
        elif option == "-C":
            git.repo = value if git.repo == "." or value.startswith(("/", "~")) else git.repo.rstrip("/") + "/" + value
            inv.read(git.repo, index)  # (git looks into it for its repository)
        elif option == "--git-dir":
            git_dir = (value, index)
        elif option == "--work-tree":
            git.tree = _below(git.repo, value)
        elif option == "--exec-path":
            inv.unknown(f"`git --exec-path={show(value)}` makes git run its programs from elsewhere", index)
    variables = bool(inv.env or inv.walker.state.exported)  # (none: no variable git reads is set)
    if git_dir is None and variables:
        dir_variable = _env(inv, "GIT_DIR")
        if dir_variable is not None:
            git_dir = (dir_variable, None)
    if git_dir is not None:
        _repository(inv, git, *git_dir)
    if variables:  # (`GIT_COMMON_DIR`: the configuration, hooks, refs and objects are taken from there)
        common = _env(inv, "GIT_COMMON_DIR")
        if common:
            _repository(inv, git, common, None)
    if git.tree is None and variables:
        git.tree = _env(inv, "GIT_WORK_TREE")
    if git.tree is None and git.config_tree is not None:  # (`-c core.worktree=DIR`, `git config core.worktree`)
        git.tree = git.config_tree
    if variables:
        index_file = _env(inv, "GIT_INDEX_FILE")
        if index_file:  # git refreshes or rewrites the index it is pointed at (even `git status` does)
            inv.write(index_file, None)
        _trace_files(inv)
        allowed = _env(inv, "GIT_ALLOW_PROTOCOL")
        if allowed is not None and (UNKNOWN in allowed or {"ext", "fd"} & set(allowed.split(":"))):
            inv.unknown(f"`GIT_ALLOW_PROTOCOL={show(allowed)}` lets git run a command as a transport "
                        "(`ext::` URLs in submodules or configuration)")
    if git.trusts is not None:
        _trusted(inv, git)
    if not parsed.positionals:
        return
    _planted(inv, git)
    sub, sub_index = parsed.positionals[0]
    if (sub in _SUBCOMMANDS or sub == "clone") and _help_only(inv, sub, sub_index):
        return
    if sub not in _SUBCOMMANDS and sub != "clone":
        alias = git.aliases.get(sub.lower())
        if alias is not None:
            _expand_alias(inv, sub_index, alias, depth)
            return
    _subcommand(inv, git, sub, sub_index, bool(parsed.options))


def _help_only(inv: Invocation, sub: str, sub_index: int) -> bool:
    """``git SUB --help`` (``--help`` among SUB's options) is ``git help SUB``, and ``git SUB -h``
    (alone) prints SUB's usage: SUB does nothing else.  The command rules then see
    ``git help SUB`` (a rule on ``git push`` is about pushing)."""
    rest = inv.argv[sub_index + 1:]
    if rest != ["-h"] and not any(word[:3] == "--h" for word in rest):
        return False  # (the common case, no `--help` or a prefix of it: no parse)
    if rest != ["-h"]:
        values = _CLONE_VALUES if sub == "clone" else _SUBCOMMANDS[sub][0]
        parsed = parse_options(inv.argv, values, start=sub_index + 1)
        if not any(option == "--help" for option, _, _ in parsed.options):
            return False
    effects = inv.walker.effects
    wanted = tuple(inv.argv)
    for position in range(len(effects) - 1, -1, -1):
        effect = effects[position]
        if effect.__class__ is Execute and getattr(effect, "argv", None) == wanted:
            effects[position] = Execute(("git", "help", sub), inv.at(sub_index))
            break
    return True


def _trace_files(inv: Invocation) -> None:
    """``GIT_TRACE``, ``GIT_TRACE_PACKET``, ``GIT_TRACE2_EVENT``…: set to an absolute path, git
    appends its trace to that file (``GIT_TRACE2*`` to a directory: a new file in it per
    process); ``1``, ``2``, ``true`` or a descriptor number trace to an open descriptor."""
    names = [name for name in (*inv.env, *inv.walker.state.exported) if name.startswith("GIT_TRACE")]
    for name in names:
        value = _env(inv, name)
        if value and (value[:1] == "/" or UNKNOWN in value):
            inv.write(value, None, recursive=name.startswith("GIT_TRACE2"))


def _environment(inv: Invocation, git: _Git) -> None:
    """Configuration from variables: ``GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n``,
    ``GIT_CONFIG_PARAMETERS``, ``GIT_CONFIG_GLOBAL``/``GIT_CONFIG_SYSTEM`` files, and files
    written earlier in the text that git reads anyway (``~/.gitconfig``, the repo's config)."""
    walker = inv.walker
    if not inv.env and not walker.state.exported and not getattr(walker, "git_configs", None) and \
            _WRITES.isdisjoint(map(type, walker.effects)):  # (the scan in C)
        return  # no variable git reads is set, and nothing it reads was written: the common case
    count = _env(inv, "GIT_CONFIG_COUNT")
    if count is not None:
        if not count.isdigit():
            inv.unknown(f"`GIT_CONFIG_COUNT` is not known (`{show(count)}`): git reads configuration from variables")
        else:
            for number in range(min(int(count), 64)):
                key = _env(inv, f"GIT_CONFIG_KEY_{number}")
                value = _env(inv, f"GIT_CONFIG_VALUE_{number}")
                if key is None or UNKNOWN in key:
                    inv.unknown(f"`GIT_CONFIG_KEY_{number}` is not known: git reads configuration from variables")
                    continue
                _config_value(inv, git, key, UNKNOWN if value is None else value, None)
    parameters = _env(inv, "GIT_CONFIG_PARAMETERS")
    if parameters is not None:
        try:
            words = shlex.split(parameters.replace("'='", "' '=' '")) if UNKNOWN not in parameters else None
        except ValueError:
            words = None
        if words is None:
            inv.unknown("`GIT_CONFIG_PARAMETERS` is not known: git reads configuration from it")
        else:
            position = 0  # `'key'='value'` (git 2.31+) or `'key=value'` (older, and `git -c` passes these)
            while position < len(words):
                word = words[position]
                if position + 2 < len(words) and words[position + 1] == "=":
                    key, value, position = word, words[position + 2], position + 3
                else:
                    key, _, value = word.partition("=")
                    position += 1
                if key and key != "=":
                    _config_value(inv, git, key, value, None)
    configs = _known_configs(inv)
    for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"):
        path = _env(inv, name)
        if path is not None:
            _config_file(inv, git, path, None, f"`{name}`")
    moved = _moved_configs(inv)
    for path in _user_configs(inv):
        written = configs.get(inv.path(path))
        if written is not None:
            for key, value in written.items():
                _remember(git, key, value, None)
        elif path in moved:  # (judged as GIT_CONFIG_GLOBAL's file is: known content, or unknown)
            _config_file(inv, git, path, None, moved[path])
        elif path[:1] != "~" and _wrote(inv, path):  # HOME/XDG_CONFIG_HOME moved to where this text wrote
            inv.unknown(f"git reads configuration (which can run commands) from `{show(path)}`, which this command"
                        " wrote")


def _user_configs(inv: Invocation) -> list[str]:
    """The per-user and repository configuration files git reads (``HOME`` and
    ``XDG_CONFIG_HOME`` as git sees them)."""
    home = _env(inv, "HOME") or "~"
    xdg = _env(inv, "XDG_CONFIG_HOME") or home.rstrip("/") + "/.config"
    return [home.rstrip("/") + "/.gitconfig", xdg.rstrip("/") + "/git/config", ".git/config"]


def _moved_configs(inv: Invocation) -> dict[str, str]:
    """The per-user configuration files git reads from a place the agent can write because
    ``HOME`` or ``XDG_CONFIG_HOME`` points there (``HOME=/tmp git log``: ``/tmp/.gitconfig``,
    which can set a pager or an alias): path → the variable that moved it."""
    from stockade.analyzer.models.programs import agent_writable

    home = _env(inv, "HOME")
    xdg = _env(inv, "XDG_CONFIG_HOME")
    if home is None and xdg is None:
        return {}
    user_home, user_xdg, _ = _user_configs(inv)
    moved: dict[str, str] = {}
    if home is not None and inv.path(home) != inv.path("~"):
        moved[user_home] = "`HOME`"
        if xdg is None:
            moved[user_xdg] = "`HOME`"
    if xdg is not None:
        moved[user_xdg] = "`XDG_CONFIG_HOME`"
    return {path: what for path, what in moved.items() if agent_writable(inv.walker, inv.path(path))}


def _wrote(inv: Invocation, path: str) -> bool:
    """Whether this text wrote ``path`` (or moved something there) before this command."""
    from stockade.analyzer.models.fresh import may_have_written

    resolved = inv.path(path)
    if not may_have_written(inv.walker, resolved, below=False):
        return False
    for effect in inv.walker.effects:
        if effect.__class__ is Write and getattr(effect, "path", None) == resolved:
            return True
        if effect.__class__ is Rename and getattr(effect, "dest", None) == resolved:
            return True
    return False


def _config_file(inv: Invocation, git: _Git, path: str, index: int | None, what: str) -> None:
    """Git reads configuration from ``path``: known when written earlier in the text."""
    if path in ("/dev/null", ""):
        return
    inv.read(path, index)  # (git reads the file: a denied one is a read of a secret)
    resolved = inv.path(path)
    written = _known_configs(inv).get(resolved)
    if written is None:
        from stockade.analyzer.models.fresh import known_content

        text = known_content(inv.walker, resolved) if UNKNOWN not in resolved else None
        if text is None or UNKNOWN in text:
            inv.unknown(f"{what} makes git read configuration (which can run commands) from `{show(path)}`", index)
            return
        for key, value in parse_git_config(text):  # (written earlier in the text: judged as its settings)
            _config_value(inv, git, key, value, index)
        return
    for key, value in written.items():
        _remember(git, key, value, index)


_SECTION = LazyPattern(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')


def parse_git_config(text: str) -> list[tuple[str, str]]:
    """The ``section[.subsection].key`` settings of a git configuration file's text, in order
    (values unquoted, comments dropped; a key without ``=`` is ``true``)."""
    out: list[tuple[str, str]] = []
    section = ""
    for line in text.splitlines()[:2000]:
        found = _SECTION.match(line)
        if found is not None:
            section = found.group(1) + ("." + found.group(2) if found.group(2) is not None else "")
            line = found.group(3)
        line = line.strip()
        if not line or line[0] in "#;" or not section:
            continue
        key, equals, value = line.partition("=")
        value = value.strip() if equals else "true"
        if value[:1] == '"' and value.endswith('"') and len(value) > 1:
            value = value[1:-1]
        else:
            value = re.split(r"\s[#;]", value, maxsplit=1)[0].strip()
        out.append((f"{section}.{key.strip()}", value))
    return out


def _repository(inv: Invocation, git: _Git, path: str, index: int | None) -> None:
    """``--git-dir``/``GIT_DIR``: a repository other than the workspace's has hooks and a
    configuration the policy does not protect, and git runs code from both."""
    resolved = inv.path(_below(git.repo, path))
    protected = inv.path(inv.walker.context.workspace.rstrip("/") + "/.git")
    inv.read(_below(git.repo, path), index)  # (its objects, refs and configuration)
    if resolved != protected:
        inv.unknown(f"git uses the repository `{show(resolved)}`, whose hooks and configuration can run code", index)


def _trusted(inv: Invocation, git: _Git) -> None:
    """``safe.directory`` (``-c``, ``GIT_CONFIG_*``): git then uses a repository owned by someone
    else — one the agent or another user planted outside the workspace, whose configuration and
    hooks run code.  The workspace's own repository is protected by the policy; elsewhere the
    effects cannot be seen into."""
    here = inv.path(git.repo)
    workspace = inv.walker.context.workspace.rstrip("/")
    if UNKNOWN in here or not (here == workspace or here.startswith(workspace + "/")):
        inv.unknown(f"`safe.directory={show(git.trusts or '')}` makes git trust the repository in `{show(here)}`, "
                    "whose configuration and hooks run code", None)


def _planted(inv: Invocation, git: _Git) -> None:
    """A repository outside the workspace whose ``.git`` this text wrote (``echo … >
    DIR/.git/config``) has configuration or hooks that run code the analyzer did not see; and a
    ``.git`` file this text wrote anywhere (``gitdir: /tmp/e``) sends git to another repository.
    (A repository an earlier, separate command left in ``/tmp`` is judged as an existing file is.)"""
    here = inv.path(git.repo)
    if UNKNOWN in here:
        return
    from stockade.analyzer.models.fresh import written_by, wrote_anything

    walker = inv.walker
    if wrote_anything(walker) and git.tree is None:
        producer = written_by(walker, here.rstrip("/") + "/.git")
        if producer is not None and producer not in ("`mkdir`", "`git`"):  # (not `git init`, `mkdir -p x/.git`)
            inv.unknown(f"git runs in `{show(here)}`, whose `.git` {producer} wrote in this command: it can point "
                        "git at another repository, whose configuration and hooks run code")
            return
    if _top(inv, git) is not None:
        return
    inside = here.rstrip("/") + "/.git/"
    known = _known_configs(inv)  # (written by `git config`: judged when written)
    for effect in inv.walker.effects:
        path = getattr(effect, "dest", None) if effect.__class__ is Rename else getattr(effect, "path", None)
        if effect.__class__ in (Write, Rename) and isinstance(path, str) and (path + "/").startswith(inside) \
                and path.rstrip("/") != inside.rstrip("/") and path not in known:
            inv.unknown(f"git runs in `{show(here)}`, whose `{show(path)}` this command wrote: its configuration"
                        " and hooks run code")
            return


def _expand_alias(inv: Invocation, sub_index: int, alias: tuple[str, int | None], depth: int) -> None:
    """``git NAME args``, NAME an alias: shell code (``!…``) or a git command line."""
    value, index = alias
    where = sub_index if index is None else index
    if value.startswith("!"):
        what = f"the shell alias `{inv.argv[sub_index]}`"
        code = value[1:] + "".join(" " + shlex.quote(w) for w in inv.argv[sub_index + 1:])
        if UNKNOWN in code or not writable_program(inv.walker, code, inv.at(where), what):
            inv.script(code, where, what=what)  # (a program in a file the agent can write: unknown)
        return
    if depth >= _MAX_ALIAS_DEPTH:
        return
    if UNKNOWN in value:
        inv.unknown(f"the alias `{inv.argv[sub_index]}` is not known before it runs", where)
        return
    try:
        words = shlex.split(value)
    except ValueError:
        inv.unknown(f"the alias `{inv.argv[sub_index]}` cannot be split into words", where)
        return
    argv = [*inv.argv[:sub_index], *words, *inv.argv[sub_index + 1:]]
    spans = [*inv.spans[:sub_index], *[inv.at(sub_index)] * len(words), *inv.spans[sub_index + 1:]]
    inv.walker.effects.append(Execute(("git", *words, *inv.argv[sub_index + 1:]), inv.at(sub_index)))
    expanded = Invocation(inv.walker, argv, spans, inv.stdin, inv.env, inv.span)
    model_git(expanded, depth + 1)


def _below(repo: str, path: str) -> str:
    """A path given to a git subcommand, relative to ``-C`` when one was given."""
    return path if repo == "." or path.startswith(("/", "~")) else repo.rstrip("/") + "/" + path


# -- configuration ----------------------------------------------------------------------------


def _remember(git: _Git, key: str, value: str, index: int | None) -> None:
    """What configuration changes about later steps of this git command: aliases, forced pushes."""
    lower = key.lower()
    if lower.startswith("alias."):
        git.aliases[lower[6:]] = (value, index)
    elif lower.startswith("remote.") and lower.endswith(".push") and value.startswith("+"):
        git.forced_push = f"config `{key}` is a forced refspec"
    elif lower == "safe.directory":
        git.trusts = value
    elif lower in ("sequence.editor", "core.editor"):
        git.editors[lower] = value
    elif lower == "core.worktree" and UNKNOWN not in value and value:
        # the work tree git checks files out into; a relative one is below the repository's .git
        git.config_tree = value if value.startswith(("/", "~")) else _below(git.repo, ".git/" + value)
    elif lower.startswith("remote.") and lower.endswith(".mirror") and value.lower() in ("true", "yes", "on", "1"):
        git.forced_push = f"config `{key}` makes pushes mirror"


def _config_value(inv: Invocation, git: _Git | None, key: str, value: str, index: int | None,
                  lasting: bool = False) -> None:
    """Judge one configuration setting (from ``-c``, a variable or ``git config``; ``lasting``:
    written to a repository's configuration, as ``git clone -c`` does, though ``git`` is given)."""
    if git is not None:
        _remember(git, key, value, index)
    lower = key.lower()
    if lower.startswith("alias."):
        if value.startswith("!"):
            what = f"the shell alias in git config `{key}`"
            if UNKNOWN in value or not writable_program(inv.walker, value[1:], inv.at(index), what):
                inv.script(value[1:], index, what=what)
        return
    if lower == "core.hookspath":
        if git is None or lasting:  # (`git config core.hooksPath DIR`: every later git command runs DIR's hooks)
            inv.persistence("`core.hooksPath` makes git run hooks from another directory", index)
        else:  # (`git -c`, a variable: this command only)
            _hooks_directory(inv, value, index)
        return
    if lower.startswith(("include.", "includeif.")) and git is not None:
        _config_file(inv, git, value, index, f"git config `{key}`")
        return
    if lower == "core.worktree" and UNKNOWN not in value and value:
        return  # (a known work tree: the subcommands' writes land there, judged where they do)
    if _FILE_KEYS.match(key):
        if value and value[:1] in ("/", "~", ".") and UNKNOWN not in value:
            inv.read(value, index)  # (a pathname setting: git reads that file)
            if lower.endswith("cookiefile"):  # (with `http.saveCookies` git writes it back)
                inv.write(value, index)
        return
    if lower.endswith("curloptresolve"):  # (`http.curloptResolve=HOST:PORT:ADDR`: HOST is reached at ADDR)
        parts = value.lstrip("+").split(":", 2)
        if len(parts) == 3:
            for address in parts[2].split(","):
                inv.network(address.strip("[] ").lower(), int(parts[1]) if parts[1].isdigit() else None, index)
        return
    if lower.startswith("trace2.") and lower.endswith("target") and value[:1] in ("/", "~", "."):
        inv.write(value, index, recursive=value.endswith("/"))  # (trace2.eventTarget=FILE: git appends to it)
        return
    if _ELSEWHERE_KEYS.match(key):
        inv.unknown(f"git config `{key}` loads configuration or code from elsewhere", index)
        return
    instead = _INSTEAD_OF.match(key)
    if instead is not None:
        _contact(inv, instead.group(1), index)
        return
    if _NET_KEYS.match(key) and not lower.endswith("gitproxy"):
        _contact(inv, value, index)
        return
    if lower.startswith("submodule.") and lower.endswith(".update"):
        if value.startswith("!"):  # (`submodule.NAME.update=!CMD`: `git submodule update` runs CMD)
            judge_program(inv.walker, value[1:], inv.at(index), f"git config `{key}`")
        return
    if not _CODE_KEYS.match(key):
        return
    code = value[1:] if value.startswith("!") else value
    if code.lower().strip() in _PLAIN_PROGRAMS:
        return
    if lower == "core.fsmonitor" and code.lower() in _BOOLEANS:  # the built-in monitor, or none
        return
    if lower.endswith("helper") and not value.startswith("!") and "/" not in value:  # `git credential-NAME`
        return
    judge_program(inv.walker, code, inv.at(index), f"git config `{key}`")


def _hooks_directory(inv: Invocation, value: str, index: int | None) -> None:
    """``git -c core.hooksPath=DIR``: this git command runs its hooks from DIR.  ``/dev/null``
    (or a directory that does not exist) runs none; the project's own hooks directory
    (``.githooks`` of the workspace) runs the project's code, as ``make`` runs its Makefile —
    unless this command wrote there; a directory elsewhere that the agent can write holds
    hooks that cannot be seen into."""
    from stockade.analyzer.models.fresh import may_have_written
    from stockade.analyzer.models.programs import agent_writable

    if value in ("", "/dev/null"):
        return
    path = inv.path(value)
    inv.read(path, index, recursive=True)  # (git runs the files below it)
    workspace = inv.walker.context.workspace.rstrip("/")
    inside = UNKNOWN not in path and (path + "/").startswith(workspace + "/") and \
        not (path + "/").startswith(workspace + "/.git/")
    if inside and not may_have_written(inv.walker, path):
        return
    if inside or agent_writable(inv.walker, path):
        inv.unknown(f"`core.hooksPath` makes git run the hooks in `{show(value)}`, which this command or the agent "
                    "could have written: they cannot be seen into", index)


def _ext_argv(command: str) -> list[str]:
    """The argv git's ``ext::`` transport runs for ``command`` (git-remote-ext(1)): words split
    at unescaped spaces, ``%`` + space a space, ``%%`` a percent sign, ``%s``/``%S`` the service
    (``git-upload-pack``), ``%G``/``%V`` (options) dropped."""
    words: list[str] = []
    current: list[str] = []
    started = False
    index = 0
    while index < len(command):
        char = command[index]
        if char == "%" and index + 1 < len(command):
            following = command[index + 1]
            index += 2
            started = True
            if following in " %":
                current.append(following)
            elif following == "s":
                current.append("upload-pack")
            elif following == "S":
                current.append("git-upload-pack")
            elif following not in "GV":
                current.append("%" + following)
            continue
        if char == " ":
            if started:
                words.append("".join(current))
            current, started = [], False
        else:
            current.append(char)
            started = True
        index += 1
    if started:
        words.append("".join(current))
    return words


def _transport(inv: Invocation, url: str, index: int | None) -> bool:
    """``ext::COMMAND`` runs COMMAND as git's transport (walked as a command of its own, and
    code that speaks to git: unknown effects); ``fd::N`` talks over a file descriptor the
    caller set up.  True when ``url`` is one of them."""
    if url.startswith("ext::"):
        inv.unknown(f"`{show(url)}` runs a command as git's transport", index)
        argv = _ext_argv(url[5:])
        if argv:
            where = inv.at(index)
            inv.run(0, argv=argv, spans=[where] * len(argv))
        return True
    if url.startswith("fd::"):
        inv.unknown(f"`{show(url)}` makes git talk over a file descriptor set up by the caller", index)
        return True
    return False


#: git's scp-like repository address ``host:path`` (a colon before any slash; not ``C:``, not ``::``)
_SCP_LIKE = LazyPattern(r"^[A-Za-z0-9_.-]{2,}:(?!:|//)")
#: subcommands whose first operand is the repository (the others: refspecs, paths, a directory)
_REPOSITORY_FIRST = frozenset({"clone", "fetch", "pull", "push", "ls-remote", "send-pack"})


def _contact(inv: Invocation, url: str, index: int | None) -> None:
    """git will talk to ``url`` (a URL, ``user@host:path`` or ``host[:port]``; ``ext::``/``fd::``
    transports: :func:`_transport`)."""
    if not url:
        return
    if "::" in url and _transport(inv, url, index):
        return
    if "://" in url:
        contact_url(inv, url, index, 443)
    elif re.match(r"^[\w.-]+@[\w.\x00-]+:", url):
        contact_url(inv, "ssh://" + url.split("@", 1)[1].split(":", 1)[0], index, 22)
    elif url.startswith(("/", ".", "~")):
        inv.read(url, index, recursive=True)
    else:
        contact_url(inv, "http://" + url, index, 80)


#: ``git config`` options that change the file even with one operand
_CONFIG_CHANGES = frozenset({"--unset", "--unset-all", "--remove-section", "--rename-section", "--replace-all",
                             "--add"})


def _git_config(inv: Invocation, start: int, repo: str) -> None:
    """``git config [scope] key value``: a write to that file (``.git/config``, ``~/.gitconfig``,
    ``/etc/gitconfig``, ``--file F``), remembered for later git commands; reading is a read."""
    here, workspace = inv.path(repo), inv.walker.context.workspace.rstrip("/")
    inside = UNKNOWN not in here and (here == workspace or here.startswith(workspace + "/"))
    scope_file = workspace + "/.git/config" if inside else _below(repo, ".git/config")  # (found walking up)
    words: list[tuple[str, int]] = []
    reading = False
    argv = inv.argv
    index = start
    while index < len(argv):
        word = argv[index]
        if word == "--global":
            scope_file = _env(inv, "GIT_CONFIG_GLOBAL") or _user_configs(inv)[0]
        elif word == "--system":
            scope_file = _env(inv, "GIT_CONFIG_SYSTEM") or "/etc/gitconfig"
        elif word in ("-f", "--file", "--blob"):
            if index + 1 < len(argv):
                scope_file = _below(repo, argv[index + 1])
            index += 1
        elif word.startswith("--file="):
            scope_file = _below(repo, word[7:])
        elif word in ("--get", "--get-all", "--list", "-l", "--get-regexp", "--show-origin", "--name-only",
                      "--get-urlmatch", "--get-color", "--get-colorbool", "-e", "--edit") or (
                not words and word in ("get", "list")):
            reading = word not in ("-e", "--edit")
            if not reading:  # (the editor: judged where GIT_EDITOR/EDITOR are set)
                inv.write(scope_file, index)
                return
        elif not word.startswith("-"):
            words.append((word, index))
        index += 1
    changing = any(word in _CONFIG_CHANGES for word in argv[start:])
    if words and words[0][0] in ("set", "unset", "rename-section", "remove-section"):
        words = words[1:]
        changing = True
    if reading or not words or (len(words) < 2 and not changing):  # `git config KEY` reads it
        inv.read(scope_file, None if not words else words[0][1])
        return
    key, key_index = words[0]
    value = words[1][0] if len(words) > 1 else ""
    inv.write(scope_file, key_index)
    _known_configs(inv).setdefault(inv.path(scope_file), {})[key.lower()] = value
    _config_value(inv, None, key, value if len(words) > 1 else "", key_index)


# -- subcommands ---------------------------------------------------------------------------


def _subcommand(inv: Invocation, git: _Git, sub: str, sub_index: int, had_globals: bool) -> None:
    """Model ``git … SUB args`` from the subcommand's row of :data:`_SUBCOMMANDS`."""
    repo = git.repo
    if sub == "config":
        _git_config(inv, sub_index + 1, repo)
        return
    if sub == "clone":
        _git_clone(inv, git, sub_index)
        return
    values, operands, writes = _SUBCOMMANDS.get(sub, (_NO_VALUES, "text", ""))
    _config_writes(inv, git, sub, sub_index)
    parsed = parse_options(inv.argv, values, start=sub_index + 1,
                           stop_at_first_positional=operands in ("foreach", "run"),
                           optional=_OPTIONAL_VALUES.get(sub, _NO_FLAGS))
    if sub in _PATCHERS:
        writes = _patch_writes(parsed, sub)
    if writes:
        inv.write(_below(repo, ".git"), sub_index)
    if writes == "tree":
        _tree_write(inv, git, sub_index)
        if sub in _PATCHERS or _foreign_tree(inv, sub, parsed):  # the files the patch names (or the fetched
            from stockade.analyzer.models.fresh import unseen_members  # commits hold): below the work tree

            unseen_members(inv.walker, inv.walker.effects[-1])
    for option, value, index in parsed.options:
        role = values.get(option)
        if role is None or value is None:
            continue
        if role == _S:
            _option_program(inv, value, index, f"`git {sub} {option}`")
            if sub in ("rebase", "pull"):
                _other_checkout_program(inv, value.split(), index, f"`git {sub} {option}`")
        elif role == "python":
            inv.unknown(f"`git {sub} {option}` runs Python code that cannot be seen into", index)
        elif role in ("write", "writer", "read", "readr"):
            path = _below(repo, value)
            if role.startswith("write"):
                inv.write(path, index, recursive=role == "writer")
            else:
                inv.read(path, index, recursive=role == "readr")
        elif role == "template":
            inv.read(_below(repo, value), index, recursive=True)
            inv.persistence(f"`git {sub} --template` installs the template's hooks in the repository", index)
        elif role == "remote":  # a URL is contacted (a remote's name is not a host)
            if "://" in value or "@" in value:
                _contact(inv, value, index)
            elif _SCP_LIKE.match(value):  # (`--remote=host:repo`: ssh to host)
                contact_url(inv, "ssh://" + value.split(":", 1)[0], index, 22)
        elif role == "tree-dir":  # a directory of the work tree that the subcommand writes below
            inv.write(_below(git.tree if git.tree is not None else repo, value), index, recursive=True)
    positionals = list(parsed.positionals)
    if sub in _NETWORK and not (positionals and positionals[0][0] == "foreach"):
        for word, index in positionals:
            if "://" in word or re.match(r"^[\w.-]+@[\w.-]+:", word) or word.startswith(("ext::", "fd::")):
                _contact(inv, word, index)
        if sub in _REPOSITORY_FIRST and positionals and _SCP_LIKE.match(positionals[0][0]):
            # (`git clone host:repo`, `git fetch host:repo main`: the repository is reached over ssh;
            # later words are refspecs, whose `a:b` is no host)
            contact_url(inv, "ssh://" + positionals[0][0].split(":", 1)[0], positionals[0][1], 22)
        proxies_of(inv, "the remote", sub_index)  # (a configured remote is contacted through them too)
        if sub in _REPOSITORY_FIRST and positionals:
            _local_repository(inv, git, sub, *positionals[0])
    handler = _OPERANDS.get(operands)
    if handler is not None:
        handler(inv, git, sub, sub_index, parsed, positionals)
    elif operands != "text":
        for word, index in positionals:
            path = _below(repo, word)
            if operands == "read":
                inv.read(path, index)
                if git.tree is not None:  # (with the work tree elsewhere, a pathspec may name a file there)
                    inv.read(_below(git.tree, word), index)
            elif operands == "write":
                inv.write(path, index, recursive=True)
            elif operands == "delete":
                inv.delete(path, index, recursive=parsed.has("-r"))
            elif operands == "writer":
                inv.write(path, index, recursive=True)
    if had_globals and operands != "push":  # command rules see the subcommand without git's global options
        inv.walker.effects.append(Execute(("git", *inv.argv[sub_index:]), inv.at(sub_index)))
    if sub == "rev-parse":
        _rev_parse(inv, git, parsed)
    elif sub == "rebase" and parsed.has("-i", "--interactive", "--edit-todo"):
        _rebase_todo(inv, git, sub_index)


#: sequence editors that leave git's todo list as git wrote it
_KEEPING_EDITORS = frozenset({":", "true", "cat", "false"})
#: a todo line that runs a command (git-rebase(1): ``exec``/``x`` and the rest of the line)
_TODO_EXEC = LazyPattern(r"(?:^|[0-9$/]\s*[iac]\\?\s*)x[ \t]+(\S.*)$|\bexec[ \t]+(\S.*)$", re.M)


def _rebase_todo(inv: Invocation, git: _Git, sub_index: int) -> None:
    """``git rebase -i``: git writes its todo list and runs the sequence editor on it
    (``GIT_SEQUENCE_EDITOR``, ``sequence.editor``, else the editor: ``GIT_EDITOR``,
    ``core.editor``, ``VISUAL``, ``EDITOR``), then carries the list out — and an ``exec CMD``
    line of it runs CMD in a shell.  A non-interactive editor (``sed -i …``) writes the lines
    its arguments hold (``1i exec rm -rf ~``): those commands are walked; one that fills the
    list from a file the agent can write (``cp /tmp/todo``) puts there what cannot be seen into."""
    editor = _env(inv, "GIT_SEQUENCE_EDITOR") or git.editors.get("sequence.editor") or \
        _env(inv, "GIT_EDITOR") or git.editors.get("core.editor") or _env(inv, "VISUAL") or _env(inv, "EDITOR")
    if not editor or UNKNOWN in editor or editor.strip() in _KEEPING_EDITORS:
        return  # (a program not known is judged where it is set)
    try:
        words = shlex.split(editor)
    except ValueError:
        words = editor.split()
    what = f"the sequence editor `{show(editor)}`"
    for word in words[1:]:  # (the text it inserts: `\n` is a line break for sed, printf, echo -e)
        text = word.replace("\\n", "\n")
        for found in _TODO_EXEC.finditer(text):
            command = (found.group(1) or found.group(2) or "").strip()
            if command:
                inv.script(command, sub_index, what=f"an `exec` line {what} adds to the rebase's todo list")
    from stockade.analyzer.effects import Read
    from stockade.analyzer.models.programs import agent_writable

    todo = inv.path(_below(git.repo, ".git/rebase-merge/git-rebase-todo"))
    effects = inv.walker.effects
    start = len(effects)
    inv.walker.nested_script(f"{editor} {shlex.quote(todo)}", inv.at(sub_index), exact=False, subshell=True)
    sources = [effect.path for effect in effects[start:] if effect.__class__ is Read and effect.path != todo and
               agent_writable(inv.walker, effect.path)]
    del effects[start:]  # (the editor itself is judged where it is set)
    if sources:
        inv.unknown(f"{what} fills the rebase's todo list, whose `exec` lines git runs, from `{show(sources[0])}`: "
                    "what it runs cannot be seen into", sub_index)


#: subcommands that write the work tree from commits of the repository (one fetched earlier
#: from a URL, when this text did: see :func:`~stockade.analyzer.models.fresh.written_by`)
_FROM_COMMITS = frozenset({"checkout", "switch", "reset", "restore", "cherry-pick", "revert", "stash", "merge",
                           "rebase"})


def _foreign_tree(inv: Invocation, sub: str, parsed: Parsed) -> bool:
    """Whether the work-tree files ``sub`` writes may come from another repository: ``git pull
    URL`` (a stranger's fork, not the configured remote) merges that repository's commits; a
    checkout, merge or reset may take commits this text fetched (``git fetch URL && git checkout
    FETCH_HEAD``; :mod:`.fresh` tells them apart by what the text contacted before)."""
    if sub == "pull":
        first = parsed.positionals[0][0] if parsed.positionals else ""
        return "://" in first or "@" in first or bool(_SCP_LIKE.match(first)) or first.startswith(("/", ".", "~"))
    if sub not in _FROM_COMMITS:
        return False
    from stockade.analyzer.effects import Network

    return any(effect.__class__ is Network for effect in inv.walker.effects)


def _local_repository(inv: Invocation, git: _Git, sub: str, word: str, index: int) -> None:
    """``git push /srv/backup.git`` (``file://…``, ``~/r.git``, ``../r``): the repository is a
    directory of this machine, and push writes its objects and refs there; ``fetch``/``pull``/
    ``ls-remote`` read it (``git fetch ~/.ssh`` reads that directory)."""
    path = word[7:] if word.startswith("file://") else word
    if word.startswith("file://") and not path.startswith("/"):
        path = "/" + path.partition("/")[2]  # (`file://localhost/srv/r.git`)
    if not path.startswith(("/", "./", "../", "~")) and path not in (".", ".."):
        return  # (a remote's name, or a URL)
    path = _below(git.repo, path)
    if sub in ("push", "send-pack"):
        inv.write(path, index, recursive=True)
    else:
        inv.read(path, index, recursive=True)


def _option_program(inv: Invocation, command: str, index: int | None, what: str) -> None:
    """A command line an option gives git to run (``--upload-pack``, ``--exec``, ``difftool -x``,
    ``rebase -x``): like a program named by configuration, a file where the agent can write
    is code that cannot be seen into; else the command line is walked."""
    if UNKNOWN not in command and "/" not in first_word(command) and first_word(command)[:1] != "~":
        inv.script(command, index, what=f"the command given to {what}")
        return
    judge_program(inv.walker, command, inv.at(index), what)


_NO_VALUES: dict[str, str] = {}
_NO_FLAGS: frozenset[str] = frozenset()

#: subcommands that write the repository's configuration (``.git/config``): subcommand →
#: (its first operand (an action) that does, or options that do).  ``remote add``,
#: ``branch -u``, ``push -u``, ``checkout --track``, ``submodule add/init``… record remotes,
#: upstreams and submodules there.
_CONFIG_WRITERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "remote": (frozenset({"add", "rename", "remove", "rm", "set-url", "set-branches"}), _NO_FLAGS),
    "branch": (_NO_FLAGS, frozenset({"-u", "--set-upstream-to", "--unset-upstream", "-t", "--track",
                                     "--edit-description"})),
    "push": (_NO_FLAGS, frozenset({"-u", "--set-upstream"})),
    "fetch": (_NO_FLAGS, frozenset({"--set-upstream"})),
    "pull": (_NO_FLAGS, frozenset({"--set-upstream"})),
    "checkout": (_NO_FLAGS, frozenset({"-t", "--track"})),
    "switch": (_NO_FLAGS, frozenset({"-t", "--track"})),
    "submodule": (frozenset({"add", "init", "deinit", "sync", "set-url", "set-branch"}), frozenset({"--init"})),
    "maintenance": (frozenset({"register", "unregister", "start", "stop"}), _NO_FLAGS),
}


def _repo_config(inv: Invocation, git: _Git) -> str:
    """The repository's ``.git/config``: at the workspace's top when git runs anywhere in it (git
    finds the repository by walking up: `cd src && git remote add …` writes the top's), else
    below ``-C``/the working directory."""
    top = _top(inv, git)
    if top is not None and git.tree is None:
        return top + "/.git/config"
    return _below(git.repo, ".git/config")


def _config_writes(inv: Invocation, git: _Git, sub: str, sub_index: int) -> None:
    """A subcommand that records settings in the repository's ``.git/config`` writes it (the
    policy may make it read-only: the write then fails in the sandbox and is judged so here)."""
    writer = _CONFIG_WRITERS.get(sub)
    if writer is None:
        return
    actions, options = writer
    first_operand = True
    for index in range(sub_index + 1, len(inv.argv)):
        word = inv.argv[index]
        if word == "--":
            break
        if word[:1] == "-":
            name = word.partition("=")[0]
            # a short cluster (`-fu`) sets each flag
            if name in options or (name[1:2] != "-" and any("-" + flag in options for flag in name[1:])):
                inv.write(_repo_config(inv, git), index)
                return
        elif first_operand:
            first_operand = False
            if word in actions:
                inv.write(_repo_config(inv, git), index)
                return
#: options whose value is only ever attached (``grep -O[pager]``)
_OPTIONAL_VALUES = {"grep": frozenset({"-O", "--open-files-in-pager"})}


#: subcommands that write the files named inside a patch or mailbox
_PATCHERS = frozenset({"apply", "am"})


def _patch_writes(parsed: Parsed, sub: str) -> str:
    """What ``git apply``/``git am`` writes (a row's third field): ``apply --check``/``--stat``/
    ``--numstat``/``--summary`` (without ``--apply``) only read the patch, ``--cached`` writes
    only the index; ``am --abort``/``--quit``/``--show-current-patch`` apply nothing new."""
    if sub == "apply":
        if parsed.has("--check", "--stat", "--numstat", "--summary") and not parsed.has("--apply"):
            return ""
        return "git" if parsed.has("--cached") else "tree"
    if parsed.has("--abort", "--quit", "--show-current-patch"):
        return "git"
    return "tree"


def _tree_write(inv: Invocation, git: _Git, index: int) -> None:
    """The subcommand writes files of the work tree (never inside ``.git``): judged as a write
    of the work tree's top directory, so a work tree the policy does not let it write is denied."""
    tree = git.tree if git.tree is not None else git.repo
    inv.write(tree, index)


def _top(inv: Invocation, git: _Git) -> str | None:
    """The work tree's top directory when known: ``--work-tree``, else the workspace when git
    runs inside it (the workspace is the repository)."""
    if git.tree is not None:
        return inv.path(git.tree) if UNKNOWN not in git.tree else None
    here = inv.path(git.repo)
    workspace = inv.walker.context.workspace.rstrip("/")
    if UNKNOWN not in here and (here == workspace or here.startswith(workspace + "/")):
        return workspace
    return None


def _rev_parse(inv: Invocation, git: _Git, parsed: Parsed) -> None:
    """``git rev-parse --show-toplevel`` (``--absolute-git-dir``, ``--git-dir``) prints a known path inside the
    workspace."""
    words = inv.argv
    top = _top(inv, git)
    if top is None:
        return
    if "--show-toplevel" in words:
        inv.output(top + "\n", "the work tree's top directory `git rev-parse` prints")
    elif "--show-cdup" in words and git.tree is None:  # (the way up to the top: `../..`, or nothing)
        import os.path

        up = os.path.relpath(top, inv.path(git.repo))
        inv.output(("" if up == "." else up + "/") + "\n", "the way to the top directory `git rev-parse` prints")
    elif "--absolute-git-dir" in words or (git.tree is None and _env(inv, "GIT_DIR") is None and (
            "--git-dir" in words or "--git-common-dir" in words)):
        # (`--git-dir` prints `.git` at the top and the absolute path below it: the same directory)
        inv.output(top + "/.git\n", "the repository directory `git rev-parse` prints")


def _op_after_dashdash(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
                       positionals: list[tuple[str, int]]) -> None:
    """``checkout [tree-ish] [--] paths``: the paths are written (the first word is a branch or
    commit unless ``--`` comes first)."""
    argv = inv.argv
    try:
        dashdash = argv.index("--", sub_index + 1)
    except ValueError:
        dashdash = -1
    paths = [(w, i) for w, i in positionals if i > dashdash] if dashdash >= 0 else positionals[1:]
    _write_paths(inv, git, paths)


def _op_paths(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
              positionals: list[tuple[str, int]]) -> None:
    """``restore paths``: every operand is a path written."""
    _write_paths(inv, git, positionals)


def _write_paths(inv: Invocation, git: _Git, paths: list[tuple[str, int]]) -> None:
    top = _top(inv, git)
    for word, index in paths:
        path = _below(git.tree if git.tree is not None else git.repo, word)
        resolved = inv.path(path)
        # the top of the work tree (or above it): git writes the tree's files, never .git
        recursive = top is None or not (top == resolved or top.startswith(resolved.rstrip("/") + "/"))
        inv.write(path, index, recursive=recursive and resolved != "/")


def _op_grep(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
             positionals: list[tuple[str, int]]) -> None:
    """``grep --no-index``/``--untracked PATTERN [PATHS]``: searches files as they are on
    disk (not the index), every one below each path (default ``.``)."""
    rest = inv.argv[sub_index + 1:]
    if "--no-index" not in rest and "--untracked" not in rest:
        _grep_pathspecs(inv, git, parsed, positionals)
        return
    words = [(word, index) for word, index in positionals if word != "--"]
    if words and not parsed.values_of("-e", "-f"):
        words = words[1:]
    for word, index in words or [(".", sub_index)]:
        inv.read(_below(git.repo, word), index, recursive=True)


def _grep_pathspecs(inv: Invocation, git: _Git, parsed: Parsed, positionals: list[tuple[str, int]]) -> None:
    """``git grep KEY -- '.env*'``: the tracked files the pathspecs name are read (a glob as the
    files it can match; a leading ``*`` matches across directories, as in git's pathspecs)."""
    words = [(word, index) for word, index in positionals if word != "--"]
    if words and not parsed.values_of("-e", "-f"):
        words = words[1:]
    for word, index in words:
        if word[:1] == ":" or UNKNOWN in word:
            continue  # (magic pathspecs: not followed)
        inv.read(_below(git.repo, word), index, recursive=True)
        if word[:1] == "*" and "/" not in word:
            inv.read(_below(git.repo, "**/" + word.lstrip("*") if word.lstrip("*") else word), index)


def _op_revpaths(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
                 positionals: list[tuple[str, int]]) -> None:
    """``diff/log/show [REV…] [--] PATH…``: the paths are read — the work tree's file (``git diff
    .env`` prints it) or the history of it (``git log -p -- .env``, ``git show HEAD:.env``), which
    a policy that denies the path also means to keep out of the agent's reach.  A word may be a
    revision (``main``), which is then a read of a name in the repository: the same verdict
    under a policy that lets the agent read its workspace."""
    for word, index in positionals:
        if word[:2] == ":/" or not word or UNKNOWN in word:
            continue  # (`:/message`: a commit found by its message; a value not known: a revision, as a rule)
        path = word.partition(":")[2] if ":" in word else word  # (`HEAD:.env`, `:0:.env`, `:.env`)
        if path[:1] == ":" or (path[:1].isdigit() and path[1:2] == ":"):
            path = path.partition(":")[2] if path[:1] != ":" else path[1:]
        if path:
            inv.read(_below(git.repo, path), index)


def _op_no_index(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
                 positionals: list[tuple[str, int]]) -> None:
    """``diff --no-index A B`` reads two files or trees; so does ``diff A B`` when one of the
    two is outside the repository (or git runs outside one); the paths of any other diff are
    read too (:func:`_op_revpaths`)."""
    if "--no-index" not in inv.argv[sub_index + 1:]:
        _op_revpaths(inv, git, sub, sub_index, parsed, positionals)
        if len(positionals) != 2:
            return
        top = _top(inv, git)
        paths = [inv.path(_below(git.repo, word)) for word, _ in positionals]
        if top is not None and all(p == top or p.startswith(top + "/") for p in paths):
            return  # revisions or paths of the repository
        if not all(p.startswith("/") or p[:1] == UNKNOWN for p in paths):
            return
        if not any(word.startswith(("/", "~", ".")) or "/" in word for word, _ in positionals):
            return  # two revisions (`git diff main feature`)
    for word, index in positionals[:2]:
        inv.read(_below(git.repo, word), index, recursive=True)


def _op_init(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
             positionals: list[tuple[str, int]]) -> None:
    """``init [DIR]`` creates DIR and its ``.git``; in the workspace's top directory it
    (re)initialises the workspace's repository, whose protected parts it leaves alone."""
    top = _top(inv, git)
    for word, index in positionals[:1]:
        path = _below(git.repo, word)
        inv.write(path, index, recursive=top is None or inv.path(path) != top)


def _op_lfs(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
            positionals: list[tuple[str, int]]) -> None:
    """``git lfs install|uninstall|update``: write the filter configuration (the user's
    ``~/.gitconfig``; ``--system`` /etc/gitconfig; ``--local``/``--worktree`` the repository's;
    ``--file F``) and the repository's hooks (not with ``--skip-repo``); ``track``/``untrack``
    write ``.gitattributes``; ``fetch``/``pull``/``push`` contact the remote's LFS server."""
    if not positionals:
        return
    action, index = positionals[0]
    if action in ("install", "uninstall", "update"):
        flags = {option for option, _, _ in parsed.options}
        if action != "update":
            if "--system" in flags:
                inv.write("/etc/gitconfig", index)
            elif flags & {"--local", "--worktree"}:
                inv.write(_repo_config(inv, git), index)
            else:
                inv.write(_user_configs(inv)[0], index)
        if "--skip-repo" not in flags and git.repo is not None:
            inv.write(_below(git.repo, ".git/hooks"), index, recursive=True)
    elif action in ("track", "untrack"):
        inv.write(_below(git.repo, ".gitattributes"), index)
    elif action in ("fetch", "pull", "push", "clone", "migrate"):
        for number, (word, at) in enumerate(positionals[1:]):  # (`git lfs push URL`: the remote is a URL)
            if "://" in word or re.match(r"^[\w.-]+@[\w.-]+:", word):
                _contact(inv, word, at)
            elif number == 0 and _SCP_LIKE.match(word):  # (`host:repo`: over ssh)
                contact_url(inv, "ssh://" + word.split(":", 1)[0], at, 22)
        proxies_of(inv, "the remote", index)
        if action in ("pull", "clone", "migrate"):
            inv.write(_below(git.repo, ".git"), index)


def _op_foreach(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
                positionals: list[tuple[str, int]]) -> None:
    """``submodule [opts] foreach [--recursive] CMD…``: the words are shell code run in each submodule."""
    if positionals and positionals[0][0] == "add" and len(positionals) >= 2:
        target, index = positionals[2] if len(positionals) >= 3 else (clone_directory(positionals[1][0]),
                                                                      positionals[1][1])
        inv.write(_below(git.repo, target or "."), index, recursive=True)
        return
    if not positionals or positionals[0][0] != "foreach":
        return
    start = positionals[0][1] + 1
    words = inv.argv[start:]
    while words and words[0] in ("--recursive", "-q", "--quiet"):
        words = words[1:]
        start += 1
    if words:
        inv.script(" ".join(words), start, what="the command of `git submodule foreach`")
        # (run in each submodule: a relative program is the submodule's file, from its own repository)
        _other_checkout_program(inv, " ".join(words).split(), start, "`git submodule foreach`")


def _op_run(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
            positionals: list[tuple[str, int]]) -> None:
    """``bisect run CMD ARGS…``: the command runs at each step."""
    if positionals and positionals[0][0] == "run":
        inv.run(positionals[0][1] + 1)
        _other_checkout_program(inv, inv.argv[positionals[0][1] + 1:], positionals[0][1] + 1, "`git bisect run`")


#: interpreters whose first operand is the program file they run
_SCRIPT_RUNNERS = frozenset({"sh", "bash", "dash", "zsh", "python", "python3", "node", "perl", "ruby"})


def _other_checkout_program(inv: Invocation, words: list[str], index: int, what: str) -> None:
    """``git rebase -x ./check.sh``, ``git bisect run ./test.sh``: the command runs at each commit
    the rebase replays or the bisection checks out, and a program that is a file of the work tree
    (a relative path, ``sh ./x``) is that file as it is at those commits — not the one in the work
    tree now (a commit of another branch, ``--onto evil``, brings its own): unknown code.  So is
    ``git submodule foreach ./x.sh``, which runs each submodule's own file."""
    interpreted = bool(words) and words[0].rpartition("/")[2] in _SCRIPT_RUNNERS and len(words) > 1 and \
        words[1][:1] != "-"
    program = (words[1] if interpreted else words[0]) if words else ""
    if (interpreted or "/" in program) and program[:1] not in ("", "/", "~", "$") and UNKNOWN not in program:
        inv.unknown(f"{what} runs `{show(program)}` as it is in each commit or submodule it checks out, which is not the "
                    "file in the work tree and cannot be seen into", index)


def _op_worktree(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
                 positionals: list[tuple[str, int]]) -> None:
    """``worktree add PATH`` writes a directory; ``move A B`` moves one; ``remove P`` deletes it."""
    if not positionals:
        return
    action = positionals[0][0]
    rest = positionals[1:]
    if action == "add" and rest:
        inv.write(_below(git.repo, rest[0][0]), rest[0][1], recursive=True)
    elif action == "move" and len(rest) >= 2:
        inv.delete(_below(git.repo, rest[0][0]), rest[0][1], recursive=True)
        inv.write(_below(git.repo, rest[1][0]), rest[1][1], recursive=True)
    elif action == "remove" and rest:
        inv.delete(_below(git.repo, rest[0][0]), rest[0][1], recursive=True)


def _op_bundle(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
               positionals: list[tuple[str, int]]) -> None:
    """``bundle create FILE`` writes it; ``verify``/``list-heads``/``unbundle FILE`` read it."""
    if len(positionals) < 2:
        return
    action, (file, index) = positionals[0][0], positionals[1]
    if action == "create":
        inv.write(_below(git.repo, file), index)
    else:
        inv.read(_below(git.repo, file), index)


def _op_clean(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
              positionals: list[tuple[str, int]]) -> None:
    """``clean -f [paths]`` deletes untracked files of the work tree (never ``.git``): the
    pathspecs recursively, or the work tree below the cwd (judged as its top directory)."""
    if not parsed.has("-f", "--force"):
        return
    base = git.tree if git.tree is not None else git.repo
    if not positionals:
        inv.delete(base, sub_index)
        return
    top = _top(inv, git)
    for word, index in positionals:
        path = _below(base, word)
        resolved = inv.path(path)
        whole = top is not None and (top == resolved or top.startswith(resolved.rstrip("/") + "/"))
        inv.delete(path, index, recursive=not whole)


def _op_push(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
             positionals: list[tuple[str, int]]) -> None:
    """``push``: the command rules see ``git push [--force] args``, ``--force`` whenever the
    push may overwrite or delete remote history (forcing options, ``+refspec``, ``:ref``,
    forced refspecs from configuration)."""
    options = parsed.options
    forced = bool(git.forced_push) or any(option in _FORCING for option, _, _ in options)
    if not forced:
        forced = any(word.startswith("+") or (n and word.startswith(":")) for n, (word, _) in enumerate(positionals))
    if not forced:  # (git takes a long option's unique prefix: `--mirr`, `--del`; an ambiguous one is refused)
        forced = any(option.startswith("--force") or (option[:2] == "--" and len(option) > 2 and any(
            name.startswith(option) for name in _FORCING if name[:2] == "--")) for option, _, _ in options)
    words = inv.argv[sub_index + 1:]
    if forced and not any(word in ("-f", "--force") for word in words):  # (`-4f`, `-qf`: bundled)
        words = ["--force", *words]
    normalised = ("git", "push", *words)  # (send-pack, push's plumbing, is judged as push)
    if normalised != tuple(inv.argv):
        inv.walker.effects.append(Execute(normalised, inv.at(sub_index)))


def _op_unknown(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
                positionals: list[tuple[str, int]]) -> None:
    if sub in _BRIDGES:
        inv.unknown(f"`git {sub}` talks to the {_BRIDGES[sub]} server its configuration names, which the command "
                    "does not show", sub_index)
        return
    inv.unknown(f"`git {sub}` runs services and hooks that cannot be seen into", sub_index)


#: git's bridges to other version-control systems: the kind of server each talks to
_BRIDGES = {"p4": "Perforce", "svn": "Subversion", "cvsimport": "CVS", "cvsexportcommit": "CVS",
            "cvsserver": "CVS", "archimport": "GNU Arch"}


def _op_send_email(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
                   positionals: list[tuple[str, int]]) -> None:
    """``git send-email``: mails the patches it reads (files, directories, or revisions it
    formats) through a mail server: ``--smtp-server HOST`` is contacted, a path there is a
    program run; without one the configured server or ``sendmail`` carries them, and where
    the mail goes cannot be seen into."""
    for value, index in parsed.values_of("--smtp-server"):
        if value.startswith(("/", "./", "~")):
            inv.script(value, index, what="the mail program given to `git send-email --smtp-server`")
        else:
            ports = parsed.values_of("--smtp-server-port")
            port = int(ports[-1][0]) if ports and ports[-1][0].isdigit() else 587
            contact_url(inv, f"smtp://{value.rpartition('@')[2]}:{port}", index, port)
    for word, index in positionals:
        if word.startswith(("/", ".", "~")) or "/" in word or word.endswith((".patch", ".diff", ".eml", ".mbox")):
            inv.read(_below(git.repo, word), index, recursive=True)
    recipients = ", ".join(value for value, _ in parsed.values_of("--to", "--cc", "--bcc"))
    inv.unknown(f"`git {sub}` mails what it reads{f' to `{show(recipients)}`' if recipients else ''} through a "
                "mail server: where it goes cannot be seen into", sub_index)


def _op_hook(inv: Invocation, git: _Git, sub: str, sub_index: int, parsed: Parsed,
             positionals: list[tuple[str, int]]) -> None:
    """``git hook run NAME`` runs a hook of the repository (protected when it is the workspace's)."""
    if _top(inv, git) is None:
        inv.unknown(f"`git {sub}` runs a hook of a repository the policy does not protect", sub_index)


_OPERANDS = {
    "after-dashdash": _op_after_dashdash, "paths": _op_paths, "no-index": _op_no_index, "revpaths": _op_revpaths,
    "foreach": _op_foreach,
    "run": _op_run, "init": _op_init, "worktree": _op_worktree, "bundle": _op_bundle, "clean": _op_clean, "push": _op_push,
    "unknown": _op_unknown, "hook": _op_hook, "send-email": _op_send_email, "grep": _op_grep, "lfs": _op_lfs,
}


# -- clone ---------------------------------------------------------------------------------

#: ``git clone`` options → role of the value
_CLONE_VALUES = {"-b": "text", "--branch": "text", "-o": "text", "--origin": "text", "-c": "config",
                 "--config": "config", "--depth": "text", "--reference": "read", "--reference-if-able": "read",
                 "--separate-git-dir": "writer", "-u": _S, "--upload-pack": _S, "--template": "template",
                 "-j": "text", "--jobs": "text", "--shallow-since": "text", "--shallow-exclude": "text",
                 "--filter": "text", "--server-option": "text", "--bundle-uri": "url", "--ref-format": "text",
                 "--revision": "text"}


def clone_directory(url: str) -> str:
    """The directory ``git clone URL`` creates: the URL's last path component without a
    trailing ``/``, ``/.git`` or ``.git`` (``host:org/repo.git`` → ``repo``); empty when
    there is none."""
    name = url.rstrip("/")
    if name.endswith("/.git"):
        name = name[:-5].rstrip("/")
    name = name.rsplit("/", 1)[-1]
    if "://" not in url and ":" in name:
        name = name.rsplit(":", 1)[-1]  # scp-like host:repo
    if name.endswith(".git"):
        name = name[:-4]
    return name if name not in (".", "..") else ""


def _git_clone(inv: Invocation, git: _Git, sub_index: int) -> None:
    """``git clone [options] URL [DIR]`` writes DIR (default: named after the URL) below the
    cwd, or below ``-C DIR``; ``--separate-git-dir`` writes that directory too; ``-c`` keys
    are judged like ``git -c``; ``--template`` installs hooks and ``-u`` runs a command."""
    repo = git.repo
    parsed = parse_options(inv.argv, _CLONE_VALUES, start=sub_index + 1)
    for option, value, index in parsed.options:
        role = _CLONE_VALUES.get(option)
        if value is None or role is None:
            continue
        if role == "config":  # (written to the new repository's configuration)
            key, eq, setting = value.partition("=")
            _config_value(inv, git, key, setting if eq else "true", index, lasting=True)
        elif role == "writer":
            inv.write(_below(repo, value), index, recursive=True)
        elif role == "read":
            inv.read(_below(repo, value), index)
        elif role == "template":
            inv.read(_below(repo, value), index, recursive=True)
            inv.persistence("`git clone --template` installs the template's hooks in the new repository", index)
        elif role == _S:
            inv.script(value, index, what=f"the command given to `git clone {option}`")
        elif role == "url":
            _contact(inv, value, index)
    positionals = parsed.positionals
    if not positionals:
        return
    url, url_index = positionals[0]
    if "://" in url or re.match(r"^[\w.-]+@[\w.-]+:", url):
        _contact(inv, url, url_index)
    elif url.startswith(("ext::", "fd::")):
        _transport(inv, url, url_index)
    elif _SCP_LIKE.match(url):  # `host:repo`: over ssh
        contact_url(inv, "ssh://" + url.split(":", 1)[0], url_index, 22)
    elif not re.match(r"^[\w.-]+:", url):
        inv.read(_below(repo, url), url_index, recursive=True)  # a local repository is copied
    if len(positionals) >= 2:
        target, target_index = positionals[1]
    else:
        target, target_index = clone_directory(url), url_index
    inv.write(_below(repo, target or "."), target_index, recursive=True)


register("git", model_git)
