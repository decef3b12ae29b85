"""Project and package managers beyond pip/npm's core: where they install from and what they run.

* ``uv add``/``sync``/``lock``/``run``, ``poetry add``, ``pdm add``, ``pipenv install``, ``rye
  add`` take requirement specs like pip's: a URL, a VCS reference or a local archive is contacted
  or read and its build code is unknown; their index options (``--index``, ``--default-index``,
  ``--extra-index-url``, ``--pypi-mirror``…) and variables (``UV_INDEX_URL``, ``UV_DEFAULT_INDEX``,
  ``POETRY_REPOSITORIES_*_URL``, ``PDM_PYPI_URL``, ``PIPENV_PYPI_MIRROR``) are contacted; ``poetry
  source add``/``poetry config repositories.*``/``pdm config pypi.url``/``conda config --add
  channels`` write a config file and redirect later installs (the URL is contacted).
* conda/mamba ``-c URL`` channels; cargo ``add --git``; composer ``--repository``.
* bun ``add``/``install`` is npm's model (registry, specs); npm's ``--script-shell`` (and
  ``npm_config_script_shell``) is the program every package script runs in; ``npm init PKG``
  runs the package ``create-PKG``.
* pip reads unique prefixes of its long options (``--index`` is ``--index-url``), and a wheel
  outside the package index (``pip install ../x.whl``, ``--no-index --find-links DIR``) is code
  the index has not vetted.
"""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, Parsed, parse_options, register
from stockade.analyzer.models.fresh import fresh_project, known_content
from stockade.analyzer.models.net import contact_url
from stockade.analyzer.models.packages import _PIP_VALUES, _pip_spec, env_value
from stockade.analyzer.regex import LazyPattern

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model

_URL = LazyPattern(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"',}]+")

# -- pip: abbreviated long options, wheels from outside the index ----------------------------

#: pip's long options (install, download, wheel and the general ones) for prefix matching
_PIP_LONG = frozenset(o for o in _PIP_VALUES if o.startswith("--")) | frozenset({
    "--no-index", "--user", "--upgrade", "--force-reinstall", "--no-deps", "--pre", "--require-hashes",
    "--no-build-isolation", "--dry-run", "--ignore-installed", "--break-system-packages", "--quiet", "--verbose",
    "--isolated", "--no-cache-dir", "--disable-pip-version-check", "--no-input", "--exists-action",
    "--no-color", "--no-warn-script-location", "--no-compile", "--compile", "--use-pep517", "--no-use-pep517",
    "--check-build-dependencies", "--ignore-requires-python", "--prefer-binary", "--no-clean", "--root-user-action",
    "--require-virtualenv", "--no-python-version-warning", "--use-feature", "--use-deprecated", "--help",
    "--version", "--debug", "--no-warn-conflicts",
})


def _expand_pip_option(word: str) -> str:
    """``--index=URL`` → ``--index-url=URL``: pip (optparse) takes a unique prefix of a long option."""
    if not word.startswith("--") or word == "--":
        return word
    name, eq, value = word.partition("=")
    if name in _PIP_LONG:
        return word
    matches = [option for option in _PIP_LONG if option.startswith(name)]
    if len(matches) != 1:
        return word
    return matches[0] + eq + value


def _in_workspace(inv: Invocation, word: str) -> bool:
    """Whether ``word`` names a path in the workspace (the project's own files)."""
    if UNKNOWN in word:
        return False
    workspace = inv.walker.context.workspace.rstrip("/") + "/"
    return (inv.path(word).rstrip("/") + "/").startswith(workspace)


def _listed_text(inv: Invocation, path: str) -> str | None:
    """The known text of a requirements file read from a descriptor (see :func:`.text.program_text`)."""
    from stockade.analyzer.models.text import program_text

    return program_text(inv, path)


def pip_wrapper(model: Model) -> Model:
    """pip's model, with abbreviated long options expanded; then wheels from outside the index."""

    def pip(inv: Invocation) -> None:
        argv = inv.argv
        expanded = [argv[0], *(_expand_pip_option(word) for word in argv[1:])]
        if expanded != argv:
            inv.argv = expanded
        model(inv)
        parsed = parse_options(inv.argv, _PIP_VALUES)
        if not parsed.positionals or parsed.positionals[0][0] not in ("install", "wheel"):
            return
        for word, index in parsed.positionals[1:]:
            if word.endswith(".whl") and "://" not in word and not _in_workspace(inv, word):
                inv.unknown(f"`{inv.name}` installs the wheel `{show(word)}`, from outside the workspace and the "
                            "package index: its code cannot be seen into", index)
        for path, index in parsed.values_of("-r", "--requirement", "-c", "--constraint"):
            if path.startswith(("/dev/fd/", "/dev/stdin", "/proc/self/fd/")) or path == "-":
                listed = _listed_text(inv, path)
                if listed is not None:  # (known text, `-r <(echo …)`, `-r - <<< …`: its lines are judged)
                    from stockade.analyzer.models.packages import requirements_lines

                    requirements_lines(inv, path, listed, index)
                    continue
                inv.unknown(f"`{inv.name}` installs what another command's output lists, which is not visible", index)
        from stockade.analyzer.models.fresh import fresh_project

        for word, index in [*parsed.positionals[1:], *parsed.values_of("-e", "--editable")]:
            if ("/" in word or word.startswith((".", "~"))) and "://" not in word and "+" not in word.split("/")[0] \
                    and not word.endswith((".whl", ".tar.gz", ".zip", ".tgz")):
                fresh_project(inv, word, ("setup.py", "pyproject.toml", "setup.cfg"), index)
        if parsed.has("--no-index"):
            for path, index in parsed.values_of("-f", "--find-links"):
                if "://" not in path and not _in_workspace(inv, path):
                    inv.unknown(f"`{inv.name} --no-index` installs packages found in `{show(path)}`, outside the "
                                "workspace and the package index", index)

    return pip


for _name in ("pip", "pip3", "pip3.10", "pip3.11", "pip3.12", "pip3.13", "uv-pip"):
    _model = MODELS.get(_name)
    if _model is not None:
        register(_name, pip_wrapper(_model))

# -- Python project managers ------------------------------------------------------------------

_UV_INDEX_OPTIONS = frozenset({"--index", "--default-index", "--index-url", "-i", "--extra-index-url",
                               "--find-links", "-f"})
_UV_VALUES = _UV_INDEX_OPTIONS | {"--directory", "--project", "--config-file", "--cache-dir", "-C", "--python",
                                  "-p", "--color", "-P", "--package", "--extra", "--group", "--optional",
                                  "--tag", "--branch", "--rev", "--script",
                                  "--with", "--marker", "-m", "--bounds", "--resolution",
                                  "--prerelease", "--exclude-newer", "--link-mode", "--keyring-provider",
                                  "--index-strategy", "--upgrade-package", "--reinstall-package", "--config-setting",
                                  "--only-group", "--no-group", "--output-file", "-o", "--format", "--requirements",
                                  "-r", "--constraints", "-c"}
_UV_ENV = ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS")
_UV_RESOLVES = frozenset({"add", "sync", "lock", "run", "export", "tree", "venv", "tool", "remove"})


def _index_value(inv: Invocation, value: str, index: int | None) -> None:
    """An index option's value: ``URL``, ``NAME=URL`` (uv's named index) or a local directory."""
    _, eq, url = value.partition("=")
    url = url if eq and "://" in url else value
    if "://" in url:
        contact_url(inv, url, index, 443)
    elif url:
        inv.read(url, index, recursive=True)


def _python_specs(inv: Invocation, words: list[tuple[str, int]]) -> None:
    for word, index in words:
        if UNKNOWN in word:
            continue
        _pip_spec(inv, word, index)


_UV_MODEL = MODELS.get("uv")
#: uv's options naming a directory it creates or fills (beyond :data:`_UV_VALUES`)
_UV_DIRECTORY_VALUES = frozenset({"--install-dir", "--prompt"})


def _uv_directories(inv: Invocation, parsed: Parsed, sub: str, sub_index: int) -> None:
    """The directories uv writes: its cache (``--cache-dir``/``UV_CACHE_DIR``, explicit: the
    default ``~/.cache/uv`` is uv's own), deleted whole by ``cache clean``/``prune`` (the default
    one too); ``venv [PATH]`` creates PATH (``.venv``); ``python install`` fills the interpreter
    directory (``--install-dir``/``UV_PYTHON_INSTALL_DIR``, else ``~/.local/share/uv/python``)
    and links the interpreters into ``~/.local/bin`` (``UV_PYTHON_BIN_DIR``; not with ``--no-bin``)."""
    operands = parsed.positionals[1:]
    option = parsed.values_of("--cache-dir")
    found = env_value(inv, "UV_CACHE_DIR")
    cache = (option[-1] if option else (found[1], sub_index) if found else None)
    if sub == "cache" and operands and operands[0][0] in ("clean", "prune"):
        where, at = cache or ("~/.cache/uv", operands[0][1])
        inv.delete(where, at, recursive=True)  # (`clean PKG`: that package's entries, below it)
    elif cache is not None and sub not in ("cache", "help", "version", "self"):
        inv.write(cache[0], cache[1], recursive=True)
    if sub == "venv":
        where, at = operands[0] if operands else (".venv", sub_index)
        inv.write(where, at, recursive=True)
    elif sub == "python" and operands and operands[0][0] in ("install", "uninstall", "upgrade"):
        directory = parsed.values_of("--install-dir")
        found = env_value(inv, "UV_PYTHON_INSTALL_DIR")
        where, at = directory[-1] if directory else (found[1], sub_index) if found else \
            ("~/.local/share/uv/python", operands[0][1])
        (inv.delete if operands[0][0] == "uninstall" else inv.write)(where, at, recursive=True)
        if operands[0][0] != "uninstall" and not parsed.has("--no-bin"):
            found = env_value(inv, "UV_PYTHON_BIN_DIR")
            inv.write(found[1] if found else "~/.local/bin", operands[0][1], recursive=True)


def model_uv(inv: Invocation) -> None:
    """uv: the runner model (``run``, ``tool``, ``pip``), and the indexes ``add``/``sync``/
    ``lock``/``run`` resolve against; ``add`` specs like pip's."""
    if _UV_MODEL is not None:
        _UV_MODEL(inv)
    parsed = parse_options(inv.argv, _UV_VALUES | _UV_DIRECTORY_VALUES)
    if not parsed.positionals:
        return
    sub, sub_index = parsed.positionals[0]
    _uv_directories(inv, parsed, sub, sub_index)
    if sub == "build":  # (`uv build [SRC]`: the build backend runs the project's setup code)
        source = parsed.positionals[1] if len(parsed.positionals) > 1 else (".", sub_index)
        fresh_project(inv, source[0], _PYTHON_PROJECT, source[1])
        return
    if sub == "python":  # `uv python install --mirror URL`: the interpreters are downloaded from URL
        for at, word in enumerate(inv.argv):
            key, eq, attached = word.partition("=")
            if key in ("--mirror", "--pypy-mirror", "--python-downloads-json-url"):
                mirror = attached if eq else (inv.argv[at + 1] if at + 1 < len(inv.argv) else "")
                if mirror:
                    contact_url(inv, mirror, at, 443)
        found = env_value(inv, "UV_PYTHON_INSTALL_MIRROR", "UV_PYPY_INSTALL_MIRROR", "UV_PYTHON_DOWNLOADS_JSON_URL")
        if found is not None and found[1]:
            contact_url(inv, found[1], sub_index, 443)
        return
    if sub not in _UV_RESOLVES:
        return
    run_at = len(inv.argv)
    if sub in ("run", "tool"):  # options after the command are the command's
        later = [i for w, i in parsed.positionals[1:2]]
        run_at = later[0] if later else run_at
    for option, value, index in parsed.options:
        if value is not None and option in _UV_INDEX_OPTIONS and index < run_at:
            _index_value(inv, value, index)
    for name in _UV_ENV:
        found = env_value(inv, name)
        if found is not None:
            for url in found[1].split():
                _index_value(inv, url, sub_index)
    if sub == "add":
        _python_specs(inv, list(parsed.positionals[1:]))


#: per manager: its install subcommands, options with a value, index options, index variables
_MANAGERS = {
    "poetry": (frozenset({"add"}), {"-C", "--directory", "-P", "--project", "--source", "-G", "--group", "-E",
                                    "--extras", "--python", "--platform", "--markers"},
               frozenset(), ("POETRY_REPOSITORIES_",)),
    "pdm": (frozenset({"add"}), {"-p", "--project", "-G", "--group", "-v", "-L", "--lockfile", "-e",
                                 "--editable"}, frozenset(), ("PDM_PYPI_URL",)),
    "pipenv": (frozenset({"install"}), {"--python", "--pypi-mirror", "-i", "--index", "--categories",
                                        "-r", "--requirements", "-e", "--editable"},
               frozenset({"--pypi-mirror", "-i", "--index"}), ("PIPENV_PYPI_MIRROR",)),
    "rye": (frozenset({"add"}), {"--pyproject", "--features", "--optional", "--git", "--url", "--path",
                                 "--tag", "--rev", "--branch"}, frozenset({"--git", "--url"}), ()),
    "conda": (frozenset({"install", "create", "update"}), {"-n", "--name", "-p", "--prefix", "-c", "--channel",
                                                           "--file"},
              frozenset({"-c", "--channel"}), ("CONDA_CHANNELS",)),
}
for _alias in ("mamba", "micromamba"):
    _MANAGERS[_alias] = _MANAGERS["conda"]


def _config_redirect(inv: Invocation, words: list[tuple[str, int]]) -> None:
    """``poetry source add NAME URL``, ``poetry config repositories.X URL``, ``pdm config
    pypi.url URL``, ``conda config --add channels URL``: a config file is written and later
    installs use the URL."""
    name = inv.name
    if name == "poetry" and words[:1] and words[0][0] == "source" and len(words) >= 4 and words[1][0] == "add":
        inv.write("pyproject.toml", words[1][1])
        contact_url(inv, words[3][0], words[3][1], 443)
    elif name in ("poetry", "pdm") and words[:1] and words[0][0] == "config" and len(words) >= 3:
        key = words[1][0]
        if key.startswith(("repositories.", "pypi.")) and "://" in words[2][0]:
            local = "--local" in inv.argv or "-l" in inv.argv
            inv.write(("poetry.toml" if name == "poetry" else "pdm.toml") if local else
                      ("~/.config/pypoetry/config.toml" if name == "poetry" else "~/.config/pdm/config.toml"),
                      words[0][1])
            contact_url(inv, words[2][0], words[2][1], 443)
    elif name in ("conda", "mamba", "micromamba") and words[:1] and words[0][0] == "config":
        inv.write("~/.condarc", words[0][1])
        for url, index in words[1:]:
            if "://" in url:
                contact_url(inv, url, index, 443)


_PROJECT_MODELS = {name: MODELS.get(name) for name in _MANAGERS}
#: subcommands that resolve against the configured index (its options and variables count)
_RESOLVES = frozenset({"add", "install", "lock", "update", "sync", "upgrade", "create"})


def model_manager(inv: Invocation) -> None:
    """poetry/pdm/pipenv/rye/conda/mamba: the runner model (``run``), then install specs, index
    options and variables, and config commands that redirect installs."""
    own = _PROJECT_MODELS.get(inv.name)
    if own is not None:
        own(inv)
    installs, values, index_options, variables = _MANAGERS[inv.name]
    parsed = parse_options(inv.argv, values)
    words = list(parsed.positionals)
    if not words:
        return
    sub, sub_index = words[0]
    if sub in ("config", "source"):
        _config_redirect(inv, words)
        return
    if sub not in installs and sub not in _RESOLVES:
        return
    for option, value, index in parsed.options:
        if value is not None and option in index_options and "://" in value:
            contact_url(inv, value, index, 443)
            if option in ("--git", "--url"):
                inv.unknown(f"`{inv.name} {option}` builds a package from `{show(value)}` (its setup code runs)",
                            index)
    state = inv.walker.state
    names = set(inv.env) | {n for n in state.exported if n in state.variables}
    for name in sorted(names):
        if any(name == v or (v.endswith("_") and name.startswith(v) and name.endswith("_URL")) for v in variables):
            value = inv.env.get(name, state.variables.get(name, ""))
            for url in value.split():
                if "://" in url:
                    contact_url(inv, url, sub_index, 443)
    if sub not in installs:
        return
    if inv.name in ("conda", "mamba", "micromamba"):
        _conda_channels(inv, parsed, sub_index)
        for word, index in words[1:]:
            if "://" in word or word.endswith((".tar.bz2", ".conda")):
                (contact_url(inv, word, index, 443) if "://" in word else inv.read(word, index))
                inv.unknown(f"`{inv.name}` installs `{show(word)}` from outside its channels (its scripts run)",
                            index)
        return
    # (`pipenv install -e git+https://…`, `pdm add -e URL`: an editable install's value is a spec)
    editable = [(value, index) for option, value, index in parsed.options
                if option in ("-e", "--editable") and value is not None]
    _python_specs(inv, words[1:] + editable)


def _conda_channels(inv: Invocation, parsed: Parsed, index: int) -> None:
    """conda/mamba installs contact their channels: a channel named (``-c conda-forge``) is
    on ``conda.anaconda.org``, a URL is its host; without ``-c`` the default channels
    (``repo.anaconda.com``) are contacted too unless ``--override-channels`` is given.  A
    ``--offline`` install contacts nothing."""
    if parsed.has("--offline", "--use-local"):
        return
    for value, at in parsed.values_of("-c", "--channel"):
        if "://" not in value and UNKNOWN not in value and not value.startswith(("/", ".", "~", "file:")):
            inv.network("conda.anaconda.org", 443, at)
    if not parsed.has("--override-channels"):
        inv.network("repo.anaconda.com", 443, index)


register("uv", model_uv)
register(" ".join(_MANAGERS), model_manager)

#: the files a Python build backend runs or reads for its build code (``setup.py``, the backend
#: that ``pyproject.toml`` names)
_PYTHON_PROJECT = ("setup.py", "pyproject.toml", "setup.cfg")
#: ``python -m build`` options that take a value
_BUILD_VALUES = frozenset({"-o", "--outdir", "-C", "--config-setting", "--installer", "--config-json"})


def model_py_build(inv: Invocation) -> None:
    """``python -m build [SRCDIR]`` / ``pyproject-build``: builds the project in SRCDIR (the
    working directory by default) into ``dist/`` (``-o DIR``), running its setup code (unknown
    when this command wrote it) after installing the build requirements from the index."""
    parsed = parse_options(inv.argv, _BUILD_VALUES)
    source = parsed.positionals[0] if parsed.positionals else (".", None)
    outdir = parsed.values_of("-o", "--outdir")
    inv.read(source[0], source[1])
    inv.write(outdir[-1][0] if outdir else source[0].rstrip("/") + "/dist", outdir[-1][1] if outdir else source[1],
              recursive=True)
    if not parsed.has("-n", "--no-isolation", "-x", "--skip-dependency-check"):
        inv.network("pypi.org", 443, None)
    fresh_project(inv, source[0], _PYTHON_PROJECT, source[1])


register("py:build pyproject-build", model_py_build)

# -- JavaScript: bun as npm, npm's script shell, npm init PKG ---------------------------------

_NPM_CORE = MODELS.get("npm")  # runners.model_js_pm: exec/dlx, then packages.model_npm
_BUN_OWN = MODELS.get("bun")


def _npm_install_model(inv: Invocation) -> None:
    from stockade.analyzer.models.packages import model_npm

    model_npm(inv)


def model_bun(inv: Invocation) -> None:
    """bun: its own model (``x``, ``run``, builds), and ``add``/``install``/``update`` as npm's
    (registry, URL and VCS specs); ``-e``/``-p CODE`` is inline JavaScript, judged as node's;
    ``--env-file`` files are read; ``--preload``/``-r`` modules and a ``-c`` bunfig (which can
    preload more) are code it loads (:func:`~.devtools.foreign_file`)."""
    if _BUN_OWN is not None:
        _BUN_OWN(inv)
    parsed = parse_options(inv.argv, {"--registry", "--cwd", "-c", "--config", "--filter", "-e", "--eval", "-p",
                                      "--print", "--env-file", "--preload", "-r"},
                           stop_at_first_positional=True)
    if parsed.has("-e", "--eval", "-p", "--print"):  # (`bun -e CODE`: inline JavaScript, judged as node's)
        inv.run(0, argv=["node", *inv.argv[1:]], spans=[inv.at(0), *inv.spans[1:]])
        return
    from stockade.analyzer.models.devtools import foreign_file

    for value, index in parsed.values_of("--env-file"):
        inv.read(value, index)
    for option in ("--preload", "-r", "-c", "--config"):  # (code bun loads first; a bunfig can name more)
        for value, index in parsed.values_of(option):
            foreign_file(inv, value, index, f"`bun {option}`")
    from stockade.analyzer.models.net import inspect_options

    inspect_options(inv, 1, parsed.positionals[0][1] if parsed.positionals else len(inv.argv), 6499)
    if parsed.positionals and parsed.positionals[0][0] in ("create", "c") and len(parsed.positionals) > 1:
        # `bun create NAME`: runs the package `create-NAME` (or a template), as `npm create NAME`
        at = parsed.positionals[0][1]
        inv.run(at, argv=["npm", "create", *inv.argv[at + 1:]], spans=[inv.at(0), *inv.spans[at:]])
    elif parsed.positionals and parsed.positionals[0][0] in ("add", "a", "install", "i", "update", "upgrade"):
        _npm_install_model(inv)
    elif parsed.positionals and parsed.positionals[0][0] == "run":
        # `bun run [flags] NAME ARGS`: a package script (the project's own), a file, or a program
        run = parse_options(inv.argv, {"--cwd", "--filter", "-F", "--env-file", "--preload", "-r", "--elide-lines"},
                            start=parsed.positionals[0][1] + 1, stop_at_first_positional=True)
        for option in ("--preload", "-r"):
            for value, index in run.values_of(option):
                foreign_file(inv, value, index, f"`bun run {option}`")
        if run.positionals:
            name, at = run.positionals[0]
            if name.endswith((".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx", ".mts", ".cts")):
                from stockade.analyzer.models.fresh import run_file

                run_file(inv, name, at)
            else:
                inv.run(at)
    if parsed.positionals:
        _bun_home(inv, parsed.positionals[0])


#: bun build's options that take a value (``--outdir``/``--outfile`` are where it writes)
_BUN_BUILD_VALUES = frozenset({"--outdir", "--outfile", "--target", "--format", "--root", "--entry-naming",
                               "--chunk-naming", "--asset-naming", "--public-path", "--external", "-e", "--define",
                               "--loader", "--sourcemap", "--env", "--banner", "--footer", "--conditions",
                               "--packages", "--jsx-factory", "--jsx-fragment", "--jsx-import-source",
                               "--jsx-runtime", "--tsconfig-override", "--compile-exec-argv", "--windows-icon",
                               "--windows-title", "--drop"})


def _bun_home(inv: Invocation, first: tuple[str, int]) -> None:
    """What bun writes beyond the project: ``build --outdir DIR``/``--outfile FILE``; ``pm cache
    rm`` deletes the package cache (``BUN_INSTALL_CACHE_DIR``, else ``~/.bun/install/cache``);
    ``upgrade`` replaces bun's own executable (under ``BUN_INSTALL``, else ``~/.bun``) with one
    downloaded from GitHub."""
    sub, at = first
    if sub == "build":
        build = parse_options(inv.argv, _BUN_BUILD_VALUES, start=at + 1)
        for value, index in build.values_of("--outdir"):
            inv.write(value, index, recursive=True)
        for value, index in build.values_of("--outfile"):
            inv.write(value, index)
    elif sub == "pm" and inv.argv[at + 1:at + 3] in (["cache", "rm"], ["cache", "clean"]):
        cache = env_value(inv, "BUN_INSTALL_CACHE_DIR")
        root = env_value(inv, "BUN_INSTALL")
        inv.delete(cache[1] if cache else (root[1] if root else "~/.bun") + "/install/cache", at + 2, recursive=True)
    elif sub == "upgrade" and "--help" not in inv.argv:
        root = env_value(inv, "BUN_INSTALL")
        inv.write((root[1] if root else "~/.bun") + "/bin/bun", at)
        inv.network("github.com", 443, at)


# -- deno: the files its options name, its install root and cache, fmt and upgrade -------------

_DENO_OWN = MODELS.get("deno")
#: deno's options (of every subcommand) that take a value
_DENO_VALUES = frozenset({"-c", "--config", "--import-map", "--lock", "--cert", "--location", "--seed", "-L",
                          "--log-level", "--ext", "--watch-exclude", "--root", "-n", "--name", "-o", "--output",
                          "--env-file", "--reload", "-r", "--v8-flags", "--inspect", "--inspect-brk",
                          "--inspect-wait", "--allow-read", "--allow-write", "--allow-net", "--allow-env",
                          "--allow-run", "--allow-ffi", "--allow-sys", "--deny-read", "--deny-write", "--deny-net",
                          "--deny-env", "--deny-run", "--deny-ffi", "--deny-sys", "--target", "--include",
                          "--exclude", "--indent-width", "--line-width", "--prose-wrap", "--version", "--icon",
                          "--frozen", "--preload", "--conditions", "--permission-set"})
#: deno's options whose value is optional, and so only ever attached (``--allow-read=/x``)
_DENO_OPTIONAL = frozenset(v for v in _DENO_VALUES if v.startswith(("--allow-", "--deny-", "--inspect"))) | {
    "--reload", "-r", "--frozen", "--lock", "--env-file", "--watch-exclude"}


def model_deno(inv: Invocation) -> None:
    """deno: its own model (what it runs), then the files its options name — ``--config``,
    ``--cert``, ``--import-map`` (a file read, or a URL fetched) and ``--lock`` (written) —, the
    module cache ``DENO_DIR`` (written, when named), ``install --root``/``DENO_INSTALL_ROOT``
    (``-g``: ``~/.deno``), ``fmt`` (rewrites its operands in place unless ``--check``) and
    ``upgrade`` (replaces deno's own executable with one from ``dl.deno.land``)."""
    if _DENO_OWN is not None:
        _DENO_OWN(inv)
    parsed = parse_options(inv.argv, _DENO_VALUES, optional=_DENO_OPTIONAL)
    for option, value, index in parsed.options:
        if value is None or value == "":
            continue
        if option in ("-c", "--config", "--cert"):
            inv.read(value, index)
        elif option == "--import-map":
            if "://" in value:
                contact_url(inv, value, index, 443)
            else:
                inv.read(value, index)
        elif option == "--lock":
            inv.write(value, index)
    cache = env_value(inv, "DENO_DIR")
    if cache is not None:
        inv.write(cache[1], 0, recursive=True)
    if not parsed.positionals:
        return
    sub, at = parsed.positionals[0]
    operands = parsed.positionals[1:]
    if sub == "install" and (parsed.has("-g", "--global") or parsed.values_of("--root")
                             or env_value(inv, "DENO_INSTALL_ROOT") is not None):
        named = parsed.values_of("--root")
        found = env_value(inv, "DENO_INSTALL_ROOT")
        root, index = named[-1] if named else (found[1], 0) if found else ("~/.deno", at)
        inv.write(root.rstrip("/") + "/bin", index, recursive=True)
    elif sub == "fmt" and not parsed.has("--check"):
        from stockade.analyzer.models.formatters import _WEB, _source_globs

        targets: list[tuple[str, int | None]] = list(operands) or [(".", None)]
        for word, place in targets:
            if word != "-":  # (a file, or the source files below a directory: as the other formatters)
                for path in _source_globs(word, _WEB):
                    inv.write(path, place)
    elif sub == "upgrade" and "--help" not in inv.argv:
        inv.write("~/.deno/bin/deno", at)
        inv.network("dl.deno.land", 443, at)


register("deno", model_deno)


def _script_shell(inv: Invocation, value: str, index: int | None, what: str) -> None:
    from stockade.analyzer.models.programs import judge_program

    judge_program(inv.walker, value, inv.at(index), what, shell=False)


#: subcommands that run the package.json's scripts (lifecycle or named)
_RUNS_SCRIPTS = frozenset({"run", "run-script", "rum", "urn", "test", "t", "tst", "start", "stop", "restart",
                           "install", "i", "ci", "add", "rebuild", "pack", "publish"})


def _project_scripts(inv: Invocation, words: list[tuple[str, int]]) -> None:
    """A subcommand that runs package.json's scripts, in a project this command wrote
    (``echo '{"scripts":…}' > package.json && npm test``, a fresh clone): unknown code;
    ``pack --pack-destination DIR`` writes the tarball there."""
    if not words or words[0][0] not in _RUNS_SCRIPTS:
        return
    argv = inv.argv
    directory = "."
    for index, word in enumerate(argv[1:], start=1):
        option, eq, value = word.partition("=")
        if option in ("--prefix", "-C", "--cwd", "--dir") and (eq or index + 1 < len(argv)):
            directory = value if eq else argv[index + 1]
        elif option == "--pack-destination" and (eq or index + 1 < len(argv)):
            inv.write(value if eq else argv[index + 1], index if eq else index + 1, recursive=True)
    if directory == "." and _known_manifest(inv):
        return  # its scripts are walked (models.launchers)
    fresh_project(inv, directory, ("package.json",), words[0][1])


def _known_manifest(inv: Invocation) -> bool:
    """Whether this command wrote ``./package.json`` with content known here, a JSON object
    (whose scripts :mod:`stockade.analyzer.models.launchers` walks)."""
    text = known_content(inv.walker, inv.path("package.json"))
    if text is None:
        return False
    import json

    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


_JS_VALUES = {"--prefix", "-C", "--cwd", "--dir", "--registry", "-w", "--workspace", "--filter", "-F",
              "--pack-destination", "--script-shell", "--userconfig", "--globalconfig", "-L", "--location", "--tag",
              "--otp", "--cache", "--scope"}


#: configuration keys given as options (``--KEY=VALUE``) that name code every script runs in or loads
_JS_CODE_CONFIG = frozenset({"script-shell", "node-options", "use-yarnrc"})


def js_wrapper(model: Model) -> Model:
    """npm/pnpm/yarn: the model, then ``--script-shell`` (or ``npm_config_script_shell``, pnpm's
    ``--config.script-shell``), the program package scripts run in, ``--node-options`` (their
    ``NODE_OPTIONS``), ``yarn --use-yarnrc FILE``, and ``npm init PKG``, which runs the package ``create-PKG``."""

    def js(inv: Invocation) -> None:
        argv = inv.argv
        _project_scripts(inv, list(parse_options(argv, _JS_VALUES).positionals))
        model(inv)
        for index, word in enumerate(argv[1:], start=1):
            # (`--KEY=VALUE`, `--KEY VALUE` set npm's configuration KEY; pnpm's `--config.KEY=VALUE`)
            key, eq, value = word.removeprefix("--config.").removeprefix("--").partition("=")
            if word[:2] != "--" or key not in _JS_CODE_CONFIG:
                continue
            at = index
            if not eq and index + 1 < len(argv):
                value, at = argv[index + 1], index + 1
            if not value:
                continue
            what = f"`{inv.name} {word.partition('=')[0]}`"
            if key == "script-shell":
                _script_shell(inv, value, at, what)
            elif key == "node-options":  # (the NODE_OPTIONS of every script it runs)
                from stockade.analyzer.models.envvars import judge_env_var

                judge_env_var(inv.walker, "NODE_OPTIONS", value, inv.at(at))
            else:  # (`yarn --use-yarnrc FILE`: a yarnrc, which can name the yarn that runs: `yarn-path`)
                from stockade.analyzer.models.devtools import foreign_file

                foreign_file(inv, value, at, what)
        found = env_value(inv, "npm_config_script_shell", "NPM_CONFIG_SCRIPT_SHELL")
        if found is not None:
            _script_shell(inv, found[1], 0, f"`{found[0]}`")
        words = [(w, i) for i, w in enumerate(argv[1:], start=1) if not w.startswith("-")]
        if len(words) >= 2 and words[0][0] in ("init", "innit"):
            package = words[1][0]
            inv.unknown(f"`{inv.name} {words[0][0]} {show(package)}` downloads and runs the package that creates "
                        "the project, which cannot be seen into", words[1][1])
        if len(words) >= 3 and words[0][0] == "config" and words[1][0] == "set" and \
                words[2][0].partition("=")[0] == "script-shell":
            shell = words[2][0].partition("=")[2] or (words[3][0] if len(words) > 3 else "")
            if shell:
                _script_shell(inv, shell, words[2][1], f"`{inv.name} config set script-shell`")

    return js


for _name in ("npm", "pnpm", "yarn"):
    _model = MODELS.get(_name)
    if _model is not None:
        register(_name, js_wrapper(_model))
register("bun", model_bun)

# -- cargo add, composer ----------------------------------------------------------------------

_CARGO_OWN = MODELS.get("cargo")


def model_cargo(inv: Invocation) -> None:
    """cargo: its model, and ``add --git URL`` (a dependency from outside the registry: contacted,
    and its build script runs at the next build), ``add --path`` (read); ``add`` writes Cargo.toml."""
    if _CARGO_OWN is not None:
        _CARGO_OWN(inv)
    parsed = parse_options(inv.argv, {"--git", "--branch", "--tag", "--rev", "--path", "--registry", "-F",
                                      "--features", "--rename", "--manifest-path", "-p", "--package", "--target",
                                      "--config", "-C", "-Z"})
    for text, index in parsed.values_of("--config"):
        # (`--config http.proxy=HOST`, `--config registries.x.index=URL`: where cargo's traffic goes)
        key, eq, setting = text.partition("=")
        key, setting = key.strip(), setting.strip().strip("'\"")
        if eq and setting and (key in ("http.proxy", "registry.index") or key.endswith((".index", ".registry"))):
            contact_url(inv, setting, index, 3128 if key == "http.proxy" else 443)
    if not parsed.positionals or parsed.positionals[0][0] != "add":
        return
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option == "--git":
            contact_url(inv, value, index, 443)
            inv.unknown(f"`cargo add --git {show(value)}` adds a crate from outside the registry (its build script "
                        "runs at the next build)", index)
        elif option == "--path":
            inv.read(value, index, recursive=True)
        elif option == "--manifest-path":
            inv.write(value, index)


_COMPOSER_VALUES = {"-d", "--working-dir", "--repository", "--repository-url", "--stability", "-s", "--prefer-install"}


def model_composer(inv: Invocation) -> None:
    """composer: ``--repository``/``--repository-url`` and ``config repositories.*`` URLs are
    contacted (config writes composer.json, or the global config with ``-g``); ``-d`` is the
    project directory; ``global`` acts on ~/.config/composer; installs run the packages'
    plugins and scripts (the registry's, as with npm)."""
    parsed = parse_options(inv.argv, _COMPOSER_VALUES)
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("--repository", "--repository-url"):
            for url in _URL.findall(value) or [value]:
                contact_url(inv, url, index, 443)
    words = list(parsed.positionals)
    if words and words[0][0] == "global":
        inv.write("~/.config/composer", words[0][1], recursive=True)
        words = words[1:]
    if not words:
        return
    sub, sub_index = words[0]
    if sub == "config" and len(words) >= 3 and words[1][0].startswith(("repositories", "repo.", "repos.")):
        inv.write("~/.config/composer/config.json" if "-g" in inv.argv or "--global" in inv.argv else "composer.json",
                  sub_index)
        for word, index in words[2:]:
            for url in _URL.findall(word):
                contact_url(inv, url, index, 443)
    elif sub == "create-project" and len(words) >= 3:
        inv.write(words[2][0], words[2][1], recursive=True)
    _composer_registry(inv, sub, sub_index)


#: composer subcommands that fetch packages (from Packagist unless a repository says otherwise)
_COMPOSER_FETCHES = frozenset({"require", "install", "update", "upgrade", "u", "i", "create-project", "reinstall",
                               "outdated", "search", "show-remote", "remove", "rm", "bump"})


def _composer_registry(inv: Invocation, sub: str, index: int) -> None:
    """composer's fetching subcommands contact Packagist (``repo.packagist.org``), its default
    repository; ``remove`` and ``outdated`` resolve against it too."""
    if sub in _COMPOSER_FETCHES:
        inv.network("repo.packagist.org", 443, index)


register("composer", model_composer)
register("cargo", model_cargo)
