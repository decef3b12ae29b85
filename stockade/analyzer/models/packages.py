"""Language package managers: pip, npm/yarn/pnpm, cargo.

A plain install from the configured index is judged by the index it contacts (the package's own
install code is the index's, as with the system package managers).  An install from a URL, a VCS
or a local archive runs build or lifecycle code from a source the policy has not vetted: an
unknown effect, besides the contact.  The index or registry is overridden by flags, by variables
(``PIP_INDEX_URL``, ``npm_config_registry``) and by config commands, which also write the tool's
config file; ``npm pkg set scripts.X=CMD`` stores shell code that ``npm run X`` runs: it is walked.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, Write, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, Parsed, parse_options, register
from stockade.analyzer.models.net import contact_url
from stockade.analyzer.models.netconfig import secret_values, settings_file

_ARCHIVES = (".tar.gz", ".tgz", ".zip", ".tar.bz2", ".tar.xz", ".tar", ".egg")


def env_value(inv: Invocation, *names: str) -> tuple[str, str] | None:
    """The first of the variables set for this command (prefix or exported): (name, value)."""
    env = inv.env
    if env:
        for name in names:
            value = env.get(name)
            if value is not None:
                return name, value
    state = inv.walker.state
    if state.exported:  # (none exported, the common case: no loop)
        for name in names:
            if name in state.exported and name in state.variables:
                return name, state.variables[name]
    return None


_CONFIG_NAMES = ("/.npmrc", "/.yarnrc", "/.yarnrc.yml", "/pip.conf", "/pip.ini", "/.pypirc", "/bunfig.toml",
                 "/.pnpmfile.cjs", "/uv.toml")


def config_written(inv: Invocation) -> None:
    """A package manager run after the same command wrote a config file of one (``echo
    registry=… > .npmrc && npm i``): where it installs from and what it runs are not visible."""
    from stockade.analyzer.models.fresh import known_content

    for effect in inv.walker.effects:
        if type(effect) is Write and effect.path.endswith(_CONFIG_NAMES):
            text = known_content(inv.walker, effect.path, partial=True)
            if text is not None and UNKNOWN not in secret_values(text) and not effect.path.endswith(".cjs"):
                continue  # (its content is judged as the configuration it is: see models.netconfig)
            inv.unknown(f"`{inv.name}` reads `{effect.path.rpartition('/')[2]}`, which this command wrote: its "
                        "registry and scripts are not visible", 0)
            return


_PIP_VALUES = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-t",
               "--target", "--prefix", "--root", "-e", "--editable", "-f", "--find-links", "--cache-dir", "--src",
               "-d", "--dest", "--trusted-host", "--platform", "--python-version", "--implementation", "--abi",
               "--only-binary", "--no-binary", "--progress-bar", "--log", "--proxy", "--cert", "--client-cert",
               "--config-settings", "-C", "--global-option", "--upgrade-strategy", "--report", "--python",
               "--keyring-provider", "--retries", "--timeout", "-w", "--wheel-dir"}
_PIP_CONFIG_FILES = {"--global": "/etc/pip.conf", "--site": "", "--user": "~/.config/pip/pip.conf"}


def model_pip(inv: Invocation) -> None:
    """pip install/download/wheel/uninstall/config: see the module docstring; ``-r`` files are
    read, ``--target``/``--prefix``/``--user`` write site directories, ``--log``/``--report``
    write files, ``--proxy`` is contacted."""
    parsed = parse_options(inv.argv, _PIP_VALUES)
    if not parsed.positionals:
        return
    sub, sub_index = parsed.positionals[0]
    if sub == "config":
        _pip_config(inv, parsed)
        return
    if sub not in ("install", "download", "wheel", "uninstall", "compile", "sync"):  # (compile, sync: uv pip's)
        return
    config_written(inv)
    config_file = env_value(inv, "PIP_CONFIG_FILE")
    if config_file is not None and config_file[1] not in ("", "/dev/null", "os.devnull"):
        settings_file(inv, "pip", config_file[1], sub_index, "`PIP_CONFIG_FILE`")
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("--log", "--report") and value != "-":
            inv.write(value, index)
        elif option == "--proxy":
            contact_url(inv, value, index, 3128)
        elif option in ("--cert", "--client-cert"):
            inv.read(value, index)
    if sub != "uninstall":
        index_flag = parsed.values_of("-i", "--index-url")
        index_env = env_value(inv, "PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX")
        if index_flag:
            contact_url(inv, index_flag[-1][0], index_flag[-1][1], 443)
        elif index_env is not None and not parsed.has("--no-index"):
            contact_url(inv, index_env[1], sub_index, 443)
        elif not parsed.has("--no-index"):
            inv.network("pypi.org", 443, sub_index)
            inv.network("files.pythonhosted.org", 443, sub_index)
        for url, index in parsed.values_of("--extra-index-url", "-f", "--find-links"):
            contact_url(inv, url, index, 443) if "://" in url else inv.read(url, index)
            workspace = inv.walker.context.workspace.rstrip("/") + "/"
            if "://" not in url and sub != "download" and not (inv.path(url) + "/").startswith(workspace):
                # (the project's own wheels directory is its code, as a local directory is)
                inv.unknown(f"`{inv.name}` installs packages found in `{url}`, a directory outside the project "
                            "whose archives (and their build code) cannot be seen into", index)
        for name in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "UV_EXTRA_INDEX_URL", "UV_INDEX"):
            found = env_value(inv, name)
            if found is not None:
                for url in found[1].split():
                    contact_url(inv, url, sub_index, 443) if "://" in url else inv.read(url, sub_index)
        proxy = env_value(inv, "PIP_PROXY")
        if proxy is not None:
            contact_url(inv, proxy[1], sub_index, 3128)
    for path, index in parsed.values_of("-r", "--requirement", "-c", "--constraint"):
        if "://" in path:
            contact_url(inv, path, index, 443)
            inv.unknown(f"`{inv.name}` installs what `{path}` lists, which is not visible", index)
        else:
            inv.read(path, index)
            _requirements_file(inv, path, index, 0)
    for path, index in parsed.values_of("-t", "--target", "--prefix", "--root", "-d", "--dest", "-w",
                                         "--wheel-dir"):
        inv.write(path, index, recursive=True)
    if sub in ("download", "wheel") and not parsed.values_of("-d", "--dest", "-w", "--wheel-dir"):
        inv.write(".", sub_index)  # (the archives are saved in the working directory)
    if parsed.has("--user"):
        inv.write("~/.local", None, recursive=True)
    if parsed.has("--break-system-packages") and sub in ("install", "uninstall"):
        # (the flag exists to change the system's Python: its site directory and scripts)
        inv.write("/usr/local/lib", sub_index, recursive=True)
    specs = list(parsed.positionals[1:]) + parsed.values_of("-e", "--editable")
    for word, index in specs:
        if sub == "uninstall":
            continue
        _pip_spec(inv, word, index)


_REQ_URL_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--index")


def _requirements_file(inv: Invocation, path: str, index: int, depth: int) -> None:
    """A requirements file this text wrote (known content): its option lines (``--index-url
    URL``, ``-f URL``, ``-r FILE``) and requirements (``x @ URL``, ``git+…``) are judged as if
    given on the command line."""
    from stockade.analyzer.models.fresh import known_content

    resolved = inv.path(path)
    text = None if UNKNOWN in resolved or depth > 4 else known_content(inv.walker, resolved, partial=True)
    if text is None:
        _fresh_requirements(inv, path, resolved, index)
        return
    requirements_lines(inv, path, text, index, depth)


def requirements_lines(inv: Invocation, path: str, text: str, index: int, depth: int = 0) -> None:
    """The lines of a requirements file ``path`` whose text is known, judged as
    :func:`_requirements_file` says."""
    for raw in text.splitlines()[:500]:
        line = raw.split(" #", 1)[0].strip().lstrip(UNKNOWN)  # (text appended to a file not known: its lines)
        if not line or line.startswith("#"):
            continue
        if UNKNOWN in line:
            if line.startswith("-"):
                inv.unknown(f"`{show(path)}` gives `{inv.name}` an option that is not known (`{show(line)}`)", index)
            continue
        if line.startswith("-"):
            option, _, value = line.replace("=", " ", 1).partition(" ")
            value = value.strip()
            if option in _REQ_URL_OPTIONS and value:
                contact_url(inv, value, index, 443) if "://" in value else inv.read(value, index)
            elif option == "--trusted-host" and value:
                inv.unknown(f"`{show(path)}` turns TLS certificate checks off for `{show(value)}`", index)
            elif option in ("-r", "--requirement", "-c", "--constraint") and "://" in value:
                contact_url(inv, value, index, 443)
                inv.unknown(f"`{show(path)}` makes `{inv.name}` install what `{show(value)}` lists, which is not visible",
                            index)
            elif option in ("-r", "--requirement", "-c", "--constraint") and value:
                base = path.rpartition("/")[0]
                nested = value if value.startswith("/") or not base else base + "/" + value
                inv.read(nested, index)
                _requirements_file(inv, nested, index, depth + 1)
            elif option in ("-e", "--editable") and value:
                _pip_spec(inv, value, index)
            continue
        _pip_spec(inv, line, index)


def _fresh_requirements(inv: Invocation, path: str, resolved: str, index: int) -> None:
    """A requirements file this text wrote with content not known here (``curl -o``): what it
    lists (indexes, URLs, archives) cannot be seen into."""
    from stockade.analyzer.models.fresh import written_by, wrote_anything

    producer = written_by(inv.walker, resolved) if UNKNOWN not in resolved and wrote_anything(inv.walker) else None
    if producer is not None:
        inv.unknown(f"`{inv.name}` installs what `{show(path)}` lists, which {producer} wrote earlier in this command: "
                    "it cannot be seen into", index)


def _pip_spec(inv: Invocation, word: str, index: int) -> None:
    """One requirement: a URL or VCS reference is contacted and its build code is unknown; a
    local archive's build code is unknown; a local directory is read (the project's own)."""
    _, at, url = word.partition("@")
    if at and "://" in url:  # `pkg @ https://…` (a PEP 508 direct reference)
        word = url.strip()
    if "://" in word:
        vcs = word.split("+", 1)[0] if "+" in word.split("://", 1)[0] else ""
        contact_url(inv, word.split("+", 1)[1] if vcs else word, index, 443)
        if not word.split("#", 1)[0].endswith(".whl"):
            inv.unknown(f"`{inv.name}` builds `{word}` from a source outside the package index (its setup code "
                        "runs)", index)
    elif word.endswith(_ARCHIVES):
        inv.read(word, index)
        inv.unknown(f"`{inv.name}` builds the archive `{word}` (its setup code runs)", index)
    elif word.startswith((".", "/", "~")) or word.endswith(".whl"):
        inv.read(word, index)


def _pip_config(inv: Invocation, parsed: object) -> None:
    """``pip config set/unset/edit``: writes a pip config file (``--user`` by default)."""

    assert isinstance(parsed, Parsed)
    words = [w for w, _ in parsed.positionals]
    if len(words) < 2 or words[1] not in ("set", "unset", "edit"):
        return
    target = "~/.config/pip/pip.conf"
    for flag, path in _PIP_CONFIG_FILES.items():
        if parsed.has(flag) and path:
            target = path
    inv.write(target, parsed.positionals[1][1])
    if parsed.has("--site"):
        inv.unknown("`pip config --site` changes the environment's index settings", parsed.positionals[1][1])
    if (len(words) >= 4 and "index" in words[2]) or (len(words) >= 4 and "find-links" in words[2]):
        contact_url(inv, words[3], parsed.positionals[3][1], 443)


_NPM_VALUES = {"--registry", "--prefix", "-C", "--cwd", "-w", "--workspace", "--userconfig", "--globalconfig",
               "-L", "--location", "--tag", "--otp", "--cache", "--dir", "--filter", "--scope", "--proxy",
               "--https-proxy", "--noproxy", "--no-proxy", "--cache-dir", "--cache-folder", "--store-dir",
               "--global-folder", "--modules-folder", "--virtual-store-dir"}
#: proxy settings of npm/yarn/pnpm given by variables (the proxy is contacted on install)
_NPM_PROXY_VARS = ("npm_config_proxy", "npm_config_https_proxy", "NPM_CONFIG_PROXY", "NPM_CONFIG_HTTPS_PROXY",
                   "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY")
_NPM_INSTALLS = frozenset({"install", "i", "add", "ci", "update", "upgrade", "up", "publish", "exec", "dlx",
                           "create", "init", "isntall", "in", "ins", "inst", "insta", "instal", "install-test",
                           "it", "install-ci-test", "cit"})
_RC_FILES = {"npm": "~/.npmrc", "pnpm": "~/.npmrc", "yarn": "~/.yarnrc"}


def model_npm(inv: Invocation) -> None:
    """npm/yarn/pnpm: install contacts the registry (``--registry``, ``npm_config_registry``);
    a spec that is a URL, a VCS reference (``github:u/r``, ``u/r``, ``git+…``) or a local
    tarball runs unseen lifecycle code; ``-g`` writes the global prefix; ``config set``/``set``
    write the rc file; ``pkg set scripts.X=CMD`` stores shell code (walked);
    ``exec``/``dlx``/``create`` run a downloaded package."""
    parsed = parse_options(inv.argv, _NPM_VALUES)
    for option, value, index in parsed.options:
        if option in ("--userconfig", "--globalconfig") and value:
            settings_file(inv, "npm", value, index, f"`{inv.name} {option}`")
        elif option in ("--cache", "--cache-dir", "--cache-folder", "--store-dir", "--global-folder",
                        "--modules-folder", "--virtual-store-dir") and value:
            inv.write(value, index, recursive=True)  # (the package cache or store it fills)
        elif option.endswith("registry") and option != "--registry" and value:  # --@scope:registry=URL, --config.registry=URL
            contact_url(inv, value, index, 443)
        elif option in ("--proxy", "--https-proxy") and value and value not in ("null", "false"):
            contact_url(inv, value, index, 3128)
    if inv.env or inv.walker.state.exported:  # (else no variable is set: env_value finds none)
        for name in _NPM_PROXY_VARS:
            found = env_value(inv, name)
            if found is not None and found[1] not in ("", "null", "false"):
                contact_url(inv, found[1], 0, 3128)
        userconfig = env_value(inv, "npm_config_userconfig", "NPM_CONFIG_USERCONFIG", "npm_config_globalconfig")
        if userconfig is not None:
            settings_file(inv, "npm", userconfig[1], 0, f"`{userconfig[0]}`")
    if not parsed.positionals:
        return
    sub, sub_index = parsed.positionals[0]
    words = list(parsed.positionals[1:])
    if sub in ("root", "prefix", "bin") and inv.name == "npm" and not parsed.has("-g", "--global"):
        prefix = parsed.values_of("--prefix", "-C")
        base = inv.path(prefix[-1][0]) if prefix else inv.cwd
        inv.output(base + {"root": "/node_modules", "prefix": "", "bin": "/node_modules/.bin"}[sub] + "\n",
                   f"the directory `npm {sub}` prints")
        return
    if sub in ("config", "c", "set") and (sub == "set" or (words and words[0][0] in ("set", "edit", "delete"))):
        location = parsed.values_of("-L", "--location")
        project = bool(location) and location[-1][0] == "project"
        target = ".npmrc" if project else _RC_FILES.get(inv.name, "~/.npmrc")
        if parsed.has("-g", "--global") or (location and location[-1][0] == "global"):
            target = "/usr/local/etc/npmrc"
        inv.write(target, sub_index)
        pairs = words if sub == "set" else words[1:]
        for position, (word, index) in enumerate(pairs):
            key, eq, value = word.partition("=")
            if not eq and position + 1 < len(pairs):
                value = pairs[position + 1][0]
            if key.lower().endswith("registry") and value:  # (`registry`, `@scope:registry`; not `//registry…/:_authToken`)
                contact_url(inv, value, index, 443)
            break
        return
    if (sub == "pkg" and words and words[0][0] == "set") or sub == "set-script":
        pairs = words[1:] if sub == "pkg" else []
        for word, index in pairs:
            key, eq, value = word.partition("=")
            if eq and key.startswith("scripts."):
                inv.script(value, index, what=f"the package script `{key[8:]}`")
        if sub == "set-script" and len(words) >= 2:
            inv.script(words[1][0], words[1][1], what=f"the package script `{words[0][0]}`")
        inv.write("package.json", sub_index)
        return
    if sub == "explore" and inv.name == "npm" and words:  # npm explore PKG [-- CMD…]: CMD joined, run by a shell
        if len(words) > 1:
            inv.script(" ".join(word for word, _ in words[1:]), words[1][1], what="the command given to `npm explore`")
        else:
            inv.unknown("`npm explore` opens a shell, whose commands cannot be seen", sub_index)
        return
    registry = parsed.values_of("--registry")
    if sub in ("login", "adduser", "add-user", "logout") and inv.name in _RC_FILES:
        # (the token the registry gives is stored in the user config: `--userconfig`, else `~/.npmrc`)
        configs = parsed.values_of("--userconfig") if inv.name != "yarn" else []
        named = env_value(inv, "npm_config_userconfig", "NPM_CONFIG_USERCONFIG") if inv.name != "yarn" else None
        target = configs[-1][0] if configs else named[1] if named is not None else _RC_FILES[inv.name]
        inv.write(target, configs[-1][1] if configs else sub_index)
        if not registry:
            inv.network("registry.npmjs.org" if inv.name != "yarn" else "registry.yarnpkg.com", 443, sub_index)
    if sub not in _NPM_INSTALLS:
        if registry:  # (login, whoami, view, search, audit …: the registry is what they talk to)
            contact_url(inv, registry[-1][0], registry[-1][1], 443)
        return
    config_written(inv)
    registry_env = env_value(inv, "npm_config_registry", "NPM_CONFIG_REGISTRY", "YARN_REGISTRY",
                             "YARN_NPM_REGISTRY_SERVER", "BUN_CONFIG_REGISTRY")
    if registry:
        contact_url(inv, registry[-1][0], registry[-1][1], 443)
    elif registry_env is not None:
        contact_url(inv, registry_env[1], sub_index, 443)
    else:
        inv.network("registry.npmjs.org", 443, sub_index)
    prefix = parsed.values_of("--prefix", "-C", "--cwd", "--dir")
    if prefix:
        inv.write(prefix[-1][0], prefix[-1][1], recursive=True)
    elif parsed.has("-g", "--global"):
        inv.write("/usr/local/lib/node_modules", sub_index, recursive=True)
    if sub in ("exec", "dlx", "create"):
        inv.unknown(f"`{inv.name} {sub}` downloads and runs a package", sub_index)
        return
    for word, index in words:
        _npm_spec(inv, word, index)



def _npm_spec(inv: Invocation, word: str, index: int) -> None:
    """One package spec: registry names are the registry's; anything else runs unseen code."""
    if word.startswith("@") and word.count("/") == 1 and "://" not in word:
        return  # @scope/name[@version]
    lower = word.lower()
    if lower.startswith(("github:", "gitlab:", "bitbucket:", "gist:")):
        host = {"github": "github.com", "gitlab": "gitlab.com", "bitbucket": "bitbucket.org",
                "gist": "gist.github.com"}[lower.split(":", 1)[0]]
        inv.network(host, 443, index)
    elif "://" in word:
        contact_url(inv, word.split("+", 1)[1] if word.startswith("git+") else word, index, 443)
    elif word.startswith(("file:", ".", "/", "~")) or word.endswith((".tgz", ".tar.gz", ".tar")):
        path = word[5:] if word.startswith("file:") else word
        inv.read(path, index)
        from stockade.analyzer.models.programs import agent_writable

        resolved = inv.path(path)
        workspace = inv.walker.context.workspace.rstrip("/")
        if not path.endswith((".tgz", ".tar.gz", ".tar")) and (
                (resolved + "/").startswith(workspace + "/") or not agent_writable(inv.walker, resolved)):
            return  # a local directory of the workspace (or a sibling project): not code the agent planted
    elif "/" in word and ":" not in word:
        inv.network("github.com", 443, index)  # user/repo: a GitHub shorthand
    else:
        return
    inv.unknown(f"`{inv.name}` installs `{word}` from outside the registry (its lifecycle scripts run)", index)


_CARGO_FALLBACK = MODELS.get("cargo")


def model_cargo(inv: Invocation) -> None:
    """cargo install ``--git URL``/``--index URL``/``--registry``: contacts it, and the crate's
    build script runs (unknown); ``--path`` is read; everything else as the generic build tool."""
    parsed = parse_options(inv.argv, {"--git", "--index", "--registry-index", "--registry", "--path", "--branch",
                                      "--tag", "--rev",
                                      "--root", "--version", "--vers", "--features", "-F", "-j", "--jobs",
                                      "--target", "--target-dir", "--profile", "-Z", "--config", "-C",
                                      "--manifest-path", "--bin", "--example"})
    if not (parsed.positionals and parsed.positionals[0][0] == "install"):
        for url, at in parsed.values_of("--index", "--registry-index"):  # (search, publish, add, login …)
            contact_url(inv, url.removeprefix("sparse+"), at, 443)
    for registry, index in parsed.values_of("--registry"):  # a named registry: CARGO_REGISTRIES_<NAME>_INDEX
        found = env_value(inv, "CARGO_REGISTRIES_" + registry.upper().replace("-", "_") + "_INDEX")
        if found is not None:
            contact_url(inv, found[1].removeprefix("sparse+"), index, 443)
    if parsed.positionals and parsed.positionals[0][0] == "install":
        for option, value, index in parsed.options:
            if value is None:
                continue
            if option in ("--git", "--index", "--registry-index"):
                contact_url(inv, value, index, 443)
                if option == "--git":
                    inv.unknown(f"`cargo install --git {value}` builds a crate from outside the registry (its "
                                "build script runs)", index)
            elif option == "--path":
                inv.read(value, index, recursive=True)
            elif option in ("--root", "--target-dir"):
                inv.write(value, index, recursive=True)
    for value, index in parsed.values_of("--manifest-path"):  # (a project elsewhere: its build script runs)
        from stockade.analyzer.models.devtools import foreign_file

        foreign_file(inv, value, index, "`cargo --manifest-path`")
    for value, index in parsed.values_of("--config"):  # (any subcommand: `KEY=VALUE`, or a file)
        if "=" in value:
            for url in re.findall(r"[a-z][a-z0-9+.-]*://[^\s\"',\]]+", value):
                contact_url(inv, url.removeprefix("sparse+"), index, 443)
            inv.unknown(f"`cargo --config {value}` overrides cargo's configuration", index)
        else:
            settings_file(inv, "cargo", value, index, "`cargo --config`")
    if _CARGO_FALLBACK is not None:
        _CARGO_FALLBACK(inv)


register("pip pip3 pip3.10 pip3.11 pip3.12 pip3.13 pipx uv-pip", model_pip)
register("npm yarn pnpm", model_npm)
register("cargo", model_cargo)
