"""Toolchain and global package managers: they download from their own hosts and install
into the user's home or the system, wherever the command is run.

``pipx install``, ``yarn global add``, ``nvm install``, ``rustup update``, ``brew install``,
``pyenv install``, ``volta install``, ``fnm install``, ``rbenv install``, ``sdk install``,
``asdf install``, ``corepack prepare``, and conda/mamba environments from the default
channels. Each is one row of :data:`TOOLCHAINS`: the subcommands that install, the hosts they
download from, the directories they write (a variable that moves one, such as ``PIPX_HOME``
or ``RUSTUP_HOME``, is followed). A row runs after the model the program already has (pipx's
is pip's, conda's the project managers').
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import TupleRecord
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, default_model, parse_options, register


class Toolchain(TupleRecord):
    """One manager: ``installs`` the subcommands (a word, or ``"global add"``-style two words)
    that download and install; ``hosts`` where from; ``writes`` (variable or None, default
    directory) pairs it installs into; ``values`` options that take a value (skipped when
    finding the subcommand); ``unless`` options after which nothing is installed (a
    channel URL the manager's own model judges)."""

    __slots__ = ()
    _fields = ("installs", "hosts", "writes", "values", "unless")
    installs: frozenset[str]
    hosts: tuple[str, ...]
    writes: tuple[tuple[str | None, str], ...]
    values: frozenset[str]
    unless: frozenset[str]

    def __new__(cls, installs: str, hosts: str, writes: tuple[tuple[str | None, str], ...], values: str = "",
                unless: str = "") -> Toolchain:
        return tuple.__new__(cls, (frozenset(installs.split(",")), tuple(hosts.split()), writes,
                                   frozenset(values.split()), frozenset(unless.split())))


_NODE = "nodejs.org"
TOOLCHAINS: dict[str, Toolchain] = {
    "pipx": Toolchain("install,inject,upgrade,upgrade-all,reinstall,reinstall-all,install-all", "pypi.org",
                      (("PIPX_HOME", "~/.local/share/pipx"), ("PIPX_BIN_DIR", "~/.local/bin")),
                      "--python --pip-args --index-url -i --suffix --spec"),
    "yarn": Toolchain("global add,global upgrade,global remove", "registry.yarnpkg.com",
                      ((None, "~/.config/yarn/global"), (None, "~/.yarn/bin"))),
    "nvm": Toolchain("install,install-latest-npm,reinstall-packages", _NODE, (("NVM_DIR", "~/.nvm"),)),
    "fnm": Toolchain("install", _NODE, (("FNM_DIR", "~/.local/share/fnm"),)),
    "volta": Toolchain("install,fetch,pin", _NODE, (("VOLTA_HOME", "~/.volta"),)),
    "n": Toolchain("install,latest,lts,stable,current", _NODE, (("N_PREFIX", "/usr/local"),)),
    "rustup": Toolchain("install,update,toolchain install,target add,component add,self update,default,"
                        "toolchain add,check", "static.rust-lang.org",
                        (("RUSTUP_HOME", "~/.rustup"), ("CARGO_HOME", "~/.cargo")),
                        "--toolchain --profile"),
    "brew": Toolchain("install,upgrade,reinstall,tap,update,uninstall,remove,cleanup,link,unlink,pin,bundle",
                      "formulae.brew.sh ghcr.io", (("HOMEBREW_PREFIX", "/usr/local"),)),
    "pyenv": Toolchain("install,update", "www.python.org", (("PYENV_ROOT", "~/.pyenv"),)),
    "rbenv": Toolchain("install", "cache.ruby-lang.org", (("RBENV_ROOT", "~/.rbenv"),)),
    "goenv": Toolchain("install", "go.dev", (("GOENV_ROOT", "~/.goenv"),)),
    "nodenv": Toolchain("install", "nodejs.org", (("NODENV_ROOT", "~/.nodenv"),)),
    "jenv": Toolchain("add", "", (("JENV_ROOT", "~/.jenv"),)),
    "plenv": Toolchain("install", "www.cpan.org", (("PLENV_ROOT", "~/.plenv"),)),
    "phpenv": Toolchain("install", "www.php.net", (("PHPENV_ROOT", "~/.phpenv"),)),
    "asdf": Toolchain("install,plugin add,plugin update", "github.com", (("ASDF_DATA_DIR", "~/.asdf"),)),
    "sdk": Toolchain("install,upgrade,selfupdate,update", "api.sdkman.io", (("SDKMAN_DIR", "~/.sdkman"),)),
    "corepack": Toolchain("enable,prepare,install,use,up", "registry.npmjs.org",
                          (("COREPACK_HOME", "~/.cache/node/corepack"),), "--install-directory"),
    "conda mamba micromamba": Toolchain("install,create,update,upgrade,env create,env update", "repo.anaconda.com",
                                        (("CONDA_PREFIX", "~/miniconda3"),),
                                        "-n --name -p --prefix --file -f",
                                        "-c --channel --override-channels --offline"),
}


def _toolchain_model(row: Toolchain, previous):
    def model(inv: Invocation) -> None:
        previous(inv)
        parsed = parse_options(inv.argv, row.values)
        words = [word for word, _ in parsed.positionals[:2]]
        if not words:
            return
        at = parsed.positionals[0][1]
        if words[0] not in row.installs and " ".join(words) not in row.installs:
            return
        if row.unless and parsed.has(*row.unless):
            return
        for host in row.hosts:
            inv.network(host, 443, at)
        for variable, default in row.writes:
            moved = inv.env.get(variable) if variable else None
            if moved is None and variable:
                state = inv.walker.state
                if variable in state.exported:
                    moved = state.variables.get(variable)
            inv.write(moved or default, at, recursive=True)

    model.__doc__ = f"{previous.__doc__ or ''} (then the install directories and hosts of its toolchain row)"
    return model


#: ``nvm exec``/``nvm run``'s optional version word (``18``, ``v20.1``, ``lts/*``, ``node``)
_NVM_VERSION = re.compile(r"v?\d[\w.]*|lts/\S*|node|stable|unstable|iojs|system|default|current")
#: options of ``fnm exec``/``volta run`` that take a value
_EXEC_VALUES = {"fnm": frozenset({"--using", "--shell", "--log-level", "--arch", "--fnm-dir"}),
                "volta": frozenset({"--node", "--npm", "--yarn", "--pnpm", "--env"})}


def model_version_exec(inv: Invocation) -> None:
    """Version managers that run a command under a chosen version: ``pyenv``/``rbenv``/
    ``nodenv``/``goenv``/``jenv``/``plenv``/``phpenv``/``luaenv exec CMD…``, ``nvm exec
    [VERSION] CMD…``, ``nvm run [VERSION] ARGS…`` (node with ARGS), ``fnm exec [--using V]
    [--] CMD…``, ``volta run [--node V] CMD…`` (``asdf exec``: :mod:`.runners`): the command
    is walked as a command of its own.  Other subcommands: the model of a program with no
    model."""
    argv = inv.argv
    name = inv.name
    sub = argv[1] if len(argv) > 1 else ""
    runs = sub == "exec" or (name in ("nvm", "volta") and sub == "run")
    if not runs:
        default_model(inv)
        return
    values = _EXEC_VALUES.get(name, frozenset())
    index = 2
    while index < len(argv) and argv[index].startswith("-") and argv[index] != "--":
        index += 1 if "=" in argv[index] or argv[index] not in values else 2
    if index < len(argv) and argv[index] == "--":
        index += 1
    if name == "nvm" and index < len(argv) - (sub == "exec") and _NVM_VERSION.fullmatch(argv[index]):
        index += 1
    if index >= len(argv) and not (name == "nvm" and sub == "run"):
        return
    if name == "nvm" and sub == "run":  # (node with the rest of the words)
        inv.run(index, argv=["node", *argv[index:]], spans=[inv.at(1), *inv.spans[index:]])
        return
    inv.run(index)


for _name in ("pyenv rbenv nodenv goenv jenv plenv phpenv luaenv nvm fnm volta").split():
    register(_name, model_version_exec)
for _names, _row in TOOLCHAINS.items():
    for _name in _names.split():
        register(_name, _toolchain_model(_row, MODELS.get(_name, default_model)))
