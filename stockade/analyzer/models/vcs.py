"""git: global options (``-c key=value`` that run code, ``-C``), subcommands as data."""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import parse_options, register
from stockade.analyzer.models.net import contact_url
from stockade.analyzer.regex import LazyPattern

#: config keys whose value is a command git runs (``!`` aliases are shell code)
_CODE_KEYS = LazyPattern(
    r"^(core\.(fsmonitor|pager|editor|sshcommand|askpass|hookspath|gitproxy)|diff\..*\.(textconv|command)|"
    r"diff\.external|merge\..*\.driver|filter\..*\.(clean|smudge|process)|pager\..*|alias\..*|"
    r"sequence\.editor|credential\.helper|credential\..*\.helper|gpg\.program|gpg\..*\.program|"
    r"uploadpack\.packobjectshook|sendemail\.(smtpserver|tocmd|cccmd)|web\.browser|browser\..*\.cmd|"
    r"remote\..*\.(receivepack|uploadpack|vcs)|protocol\.ext\.allow|include\.path|includeif\..*|"
    r"core\.(worktree|gitdir)|init\.templatedir)$", re.I)
_GLOBAL_VALUES = {"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env",
                  "--super-prefix", "--list-cmds"}

#: subcommand → (role of positional arguments, writes to the repository)
_SUBCOMMANDS: dict[str, tuple[str, bool]] = {
    "status": ("text", False), "diff": ("text", False), "log": ("text", False), "show": ("text", False),
    "blame": ("read", False), "grep": ("text", False), "ls-files": ("text", False), "rev-parse": ("text", False),
    "branch": ("text", True), "tag": ("text", True), "describe": ("text", False), "shortlog": ("text", False),
    "add": ("read", True), "commit": ("text", True), "checkout": ("text", True), "switch": ("text", True),
    "restore": ("write", True), "reset": ("text", True), "stash": ("text", True), "merge": ("text", True),
    "rebase": ("text", True), "cherry-pick": ("text", True), "revert": ("text", True), "rm": ("delete", True),
    "mv": ("text", True), "init": ("writer", False), "worktree": ("text", True), "notes": ("text", True),
    "gc": ("text", True), "apply": ("read", True), "am": ("read", True), "format-patch": ("text", True),
    "config": ("text", False), "remote": ("text", True), "submodule": ("text", True), "bisect": ("text", True),
    "clean": ("text", True), "fsck": ("text", False), "reflog": ("text", False), "cat-file": ("text", False),
    "for-each-ref": ("text", False), "ls-tree": ("text", False), "show-ref": ("text", False),
    "archive": ("text", False), "bundle": ("text", False), "sparse-checkout": ("text", True),
}
_NETWORK = {"clone", "fetch", "pull", "push", "ls-remote", "remote", "submodule"}


def model_git(inv: Invocation) -> None:
    """git: ``-c`` keys that name commands are walked as shell code; ``-C DIR`` moves the
    repository; network subcommands contact URL remotes; ``config`` writes the repository's
    ``.git/config`` (or ``~/.gitconfig`` with ``--global``); ``clone`` writes its target."""
    parsed = parse_options(inv.argv, _GLOBAL_VALUES, stop_at_first_positional=True)
    repo = "."
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option == "-c":
            key, _, setting = value.partition("=")
            _config_value(inv, key, setting, index)
        elif option == "-C":
            repo = value if repo == "." else repo.rstrip("/") + "/" + value
        elif option in ("--exec-path", "--config-env"):
            inv.unknown(f"`git {option}` makes git run programs from elsewhere", index)
    if not parsed.positionals:
        return
    sub, sub_index = parsed.positionals[0]
    rest = inv.argv[sub_index + 1:]
    rest_spans = list(range(sub_index + 1, len(inv.argv)))
    role, writes = _SUBCOMMANDS.get(sub, ("text", False))
    if writes:
        inv.write(repo.rstrip("/") + "/.git", sub_index)
    if sub == "config":
        _git_config(inv, rest, rest_spans, repo)
        return
    if sub in _NETWORK:
        for offset, word in enumerate(rest):
            if "://" in word or re.match(r"^[\w.-]+@[\w.-]+:", word):
                host_word = word if "://" in word else "ssh://" + word.split(":", 1)[0]
                contact_url(inv, host_word, rest_spans[offset], 443)
        if sub == "clone":
            _git_clone(inv, sub_index, repo)
        return
    if role != "text":
        for offset, word in enumerate(rest):
            if word.startswith("-") or word == "--":
                continue
            path = word if repo == "." else repo.rstrip("/") + "/" + word
            if role == "read":
                inv.read(path, rest_spans[offset])
            elif role == "write":
                inv.write(path, rest_spans[offset])
            elif role == "delete":
                inv.delete(path, rest_spans[offset], recursive="-r" in rest)
            elif role == "writer":
                inv.write(path, rest_spans[offset], recursive=True)
    if sub == "clean" and any(w.startswith("-") and "f" in w.lstrip("-")[:3] for w in rest):
        inv.delete(repo, sub_index, recursive=True)


#: ``git clone`` options that take a value (the next word when not attached with ``=``)
_CLONE_VALUES = {"-b", "--branch", "-o", "--origin", "-c", "--config", "--depth", "--reference",
                 "--reference-if-able", "--separate-git-dir", "-u", "--upload-pack", "--template", "-j", "--jobs",
                 "--shallow-since", "--shallow-exclude", "--filter", "--server-option", "--bundle-uri",
                 "--ref-format", "--revision"}


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


def _git_clone(inv: Invocation, sub_index: int, repo: str) -> None:
    """``git clone [options] URL [DIR]`` writes DIR (default: named after the URL) below the
    cwd, or below ``-C DIR``; ``--separate-git-dir`` writes that directory too; ``-c`` keys
    are judged like ``git -c``; ``--template`` installs hooks and ``-u`` runs a command."""
    parsed = parse_options(inv.argv, _CLONE_VALUES, start=sub_index + 1)
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-c", "--config"):
            key, _, setting = value.partition("=")
            _config_value(inv, key, setting, index)
        elif option == "--separate-git-dir":
            inv.write(_below_repo(repo, value), index, recursive=True)
        elif option in ("--reference", "--reference-if-able"):
            inv.read(_below_repo(repo, value), index)
        elif option == "--template":
            inv.read(_below_repo(repo, value), index, recursive=True)
            inv.persistence("`git clone --template` installs the template's hooks in the new repository", index)
        elif option in ("-u", "--upload-pack"):
            inv.script(value, index, what="the command given to `git clone --upload-pack`")
    positionals = parsed.positionals
    if not positionals:
        return
    url, url_index = positionals[0]
    if "://" not in url and not re.match(r"^[\w.-]+@[\w.-]+:|^[\w.-]+:", url):
        inv.read(_below_repo(repo, url), url_index, recursive=True)  # a local repository is copied
    if len(positionals) >= 2:
        target, target_index = positionals[1]
    else:
        target, target_index = clone_directory(url), url_index
    inv.write(_below_repo(repo, target or "."), target_index, recursive=True)


def _below_repo(repo: str, path: str) -> str:
    """A path given to a git subcommand, relative to ``-C`` when one was given."""
    return path if repo == "." or path.startswith(("/", "~")) else repo.rstrip("/") + "/" + path


def _config_value(inv: Invocation, key: str, value: str, index: int) -> None:
    if not _CODE_KEYS.match(key):
        return
    lower = key.lower()
    if lower.startswith("alias.") and not value.startswith("!"):
        return
    if lower == "core.hookspath":
        inv.persistence("`core.hooksPath` makes git run hooks from another directory", index)
        return
    if lower.startswith(("include", "core.worktree", "core.gitdir", "init.templatedir", "protocol.ext")):
        inv.unknown(f"git config `{key}` loads configuration or code from elsewhere", index)
        return
    code = value[1:] if value.startswith("!") else value
    if code.lower() in ("cat", "less", "false", "true", ""):
        return
    inv.script(code, index, what=f"the command in git config `{key}`")


def _git_config(inv: Invocation, rest: list[str], spans: list[int], repo: str) -> None:
    scope_file = repo.rstrip("/") + "/.git/config"
    words: list[tuple[str, int]] = []
    reading = False
    skip = False
    for offset, word in enumerate(rest):
        if skip:
            skip = False
            continue
        if word in ("--global",):
            scope_file = "~/.gitconfig"
        elif word == "--system":
            scope_file = "/etc/gitconfig"
        elif word in ("-f", "--file"):
            if offset + 1 < len(rest):
                scope_file = rest[offset + 1]
            skip = True
        elif word in ("--get", "--get-all", "--list", "-l", "--get-regexp", "--show-origin", "--name-only",
                      "get", "list"):
            reading = True
        elif not word.startswith("-"):
            words.append((word, spans[offset]))
    if reading or len(words) < 2:
        inv.read(scope_file, spans[0] if spans else None)
        return
    key, key_index = words[0]
    if key in ("set",) and len(words) >= 3:
        key, key_index = words[1]
        words = words[1:]
    inv.write(scope_file, key_index)
    _config_value(inv, key, words[1][0] if len(words) > 1 else UNKNOWN, key_index)


register("git", model_git)
