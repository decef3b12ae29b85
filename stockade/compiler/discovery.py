"""Which policy applies when none is named: the project's, the user's, or the built-in.

Search order (the first found wins, :func:`discover`):

1. the **project** policy: ``.stockade/policy`` or ``stockade.policy`` in the starting
   directory (the current directory), then in each parent, up to and including the first
   directory that is a git repository's top (it holds ``.git``) or the user's home, or the
   filesystem root — never above the repository or the home directory;
2. the **user** policy: ``$XDG_CONFIG_HOME/stockade/policy`` (default
   ``~/.config/stockade/policy``);
3. the **built-in** policy (``stockade/compiler/builtin/default.policy``).

A candidate that exists but cannot be trusted to be the user's own choice is an error
(``C290``), never silently used nor skipped: a symbolic link, something other than a
regular file, a file owned by another user (root excepted), or one that others than its
owner may write (so a file dropped in a shared ``/tmp`` is refused).

Discovery runs on the host before anything is started; a project policy inside the
workspace is writable by a sandboxed command, so an agent may edit it between runs — the
user's policy and ``locked`` rules of an included base that lives outside the workspace
are what an agent cannot loosen (see the README).

This module imports nothing heavy (it is on the path of ``stockade run``), and raises only
when a candidate is refused.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping

#: The project policy's names, in the order they are looked for in each directory.
PROJECT_NAMES = (os.path.join(".stockade", "policy"), "stockade.policy")


class PolicyChoice:
    """The policy a command uses: ``path`` (None: the built-in), ``origin`` (``named`` —
    given on the command line —, ``project``, ``user`` or ``builtin``) and ``why``, a
    sentence for ``stockade show --which``."""

    __slots__ = ("origin", "path", "why")

    def __init__(self, path: str | None, origin: str, why: str) -> None:
        self.path = path
        self.origin = origin
        self.why = why

    def __repr__(self) -> str:
        return f"PolicyChoice({self.path!r}, {self.origin!r})"

    def to_json(self) -> dict[str, str | None]:
        """The choice as a JSON object."""
        return {"policy": self.path, "origin": self.origin, "why": self.why}


def user_policy_path(environ: Mapping[str, str] | None = None) -> str:
    """``$XDG_CONFIG_HOME/stockade/policy`` (``~/.config`` when unset or not absolute)."""
    env = os.environ if environ is None else environ
    config = env.get("XDG_CONFIG_HOME") or ""
    if not os.path.isabs(config):
        home = env.get("HOME") or os.path.expanduser("~")
        config = os.path.join(home, ".config")
    return os.path.join(config, "stockade", "policy")


def _refuse(path: str, why: str) -> None:
    from stockade import catalogue as codes
    from stockade.diagnostics import Diagnostic, StockadeError

    raise StockadeError(Diagnostic(
        codes.UNTRUSTED_POLICY_FILE, f"refusing the policy file `{path}` found by discovery: {why}",
        help="name the policy to use (`--policy FILE`), or fix the file's owner and mode (`chmod go-w`)"))


def _candidate(path: str) -> bool:
    """Whether ``path`` is a usable policy file; False when nothing is there; raises when
    something is there that cannot be trusted."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        _refuse(path, f"cannot be examined ({error.strerror or error})")
    if stat.S_ISLNK(info.st_mode):
        _refuse(path, "it is a symbolic link (discovery never follows links)")
    if not stat.S_ISREG(info.st_mode):
        _refuse(path, "it is not a regular file")
    if info.st_uid not in (os.getuid(), 0):
        _refuse(path, f"it is owned by another user (uid {info.st_uid})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        _refuse(path, "others than its owner may write it")
    if os.path.basename(os.path.dirname(path)) == ".stockade":
        parent = os.lstat(os.path.dirname(path))
        if stat.S_ISLNK(parent.st_mode):
            _refuse(path, "its `.stockade` directory is a symbolic link")
    return True


def _boundary(directory: str, home: str) -> bool:
    """Whether the upward search stops after ``directory``."""
    return directory == home or os.path.lexists(os.path.join(directory, ".git")) \
        or os.path.dirname(directory) == directory


def project_policy(start: str | None = None, environ: Mapping[str, str] | None = None) -> tuple[str | None, str]:
    """The project policy found from ``start`` (default: the current directory) upwards,
    and the last directory searched."""
    env = os.environ if environ is None else environ
    home = os.path.abspath(env.get("HOME") or os.path.expanduser("~"))
    directory = os.path.abspath(start or os.getcwd())
    while True:
        for name in PROJECT_NAMES:
            path = os.path.join(directory, name)
            if _candidate(path):
                return path, directory
        if _boundary(directory, home):
            return None, directory
        directory = os.path.dirname(directory)


def discover(start: str | None = None, environ: Mapping[str, str] | None = None) -> PolicyChoice:
    """The policy to use when none is named (see the module docstring)."""
    here = os.path.abspath(start or os.getcwd())
    found, last = project_policy(here, environ)
    if found is not None:
        return PolicyChoice(found, "project", f"project policy found searching from `{here}` upwards")
    user = user_policy_path(environ)
    if _candidate(user):
        return PolicyChoice(user, "user", f"user policy (no project policy from `{here}` up to `{last}`)")
    return PolicyChoice(None, "builtin", f"built-in policy (no project policy from `{here}` up to `{last}`, "
                                         f"no user policy `{user}`)")


def choose(named: str | None, start: str | None = None, environ: Mapping[str, str] | None = None) -> PolicyChoice:
    """The policy named on the command line, else :func:`discover`'s."""
    if named is not None:
        return PolicyChoice(named, "named", "named on the command line")
    return discover(start, environ)
