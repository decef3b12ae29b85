"""Configuration files that are code a tool runs when it starts: ``eslint.config.js``,
``.mocharc.js``, ``vite.config.ts``, ``gulpfile.js``, ``Gemfile``, ``build.gradle``,
``nodemon.json``'s commands … A tool started after this command wrote one of its code
configuration files runs code that cannot be seen into (judged as ``make`` after a fresh
Makefile: see :func:`~stockade.analyzer.models.fresh.fresh_project`); the tool's own model
(or the default one) still judges its arguments.
"""

from __future__ import annotations

import json
import re

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, default_model, register
from stockade.analyzer.models.fresh import fresh_found, fresh_project

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model


def _js(*stems: str) -> tuple[str, ...]:
    """``STEM.js``, ``.cjs``, ``.mjs``, ``.ts``, ``.cts``, ``.mts`` for each stem."""
    return tuple(stem + ext for stem in stems for ext in (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"))


#: program names → the files (in the working directory) it loads and runs as code when it starts
CODE_CONFIGS: dict[str, tuple[str, ...]] = {
    "eslint": _js("eslint.config", ".eslintrc"),
    "prettier": _js("prettier.config", ".prettierrc"),
    "stylelint": _js("stylelint.config", ".stylelintrc"),
    "mocha": _js(".mocharc"),
    "jest": _js("jest.config"),
    "vitest": _js("vitest.config", "vitest.workspace", "vite.config"),
    "vite": _js("vite.config"),
    "webpack webpack-cli webpack-dev-server": _js("webpack.config"),
    "rollup": _js("rollup.config"),
    "babel": _js("babel.config", ".babelrc"),
    "next": _js("next.config"),
    "nuxt nuxi": _js("nuxt.config"),
    "astro": _js("astro.config"),
    "svelte-kit": _js("svelte.config"),
    "tailwindcss": _js("tailwind.config"),
    "postcss": _js("postcss.config"),
    "commitlint": _js("commitlint.config", ".commitlintrc"),
    "playwright": _js("playwright.config"),
    "cypress": _js("cypress.config"),
    "karma": _js("karma.conf"),
    "gulp": _js("gulpfile"),
    "grunt": (*_js("Gruntfile", "gruntfile"), "Gruntfile.coffee"),
    "nodemon": ("nodemon.json", *_js("nodemon.config")),
    "lint-staged": (".lintstagedrc", ".lintstagedrc.json", ".lintstagedrc.yaml", ".lintstagedrc.yml",
                    *_js("lint-staged.config", ".lintstagedrc")),
    "lefthook": ("lefthook.yml", ".lefthook.yml", "lefthook.yaml", "lefthook-local.yml"),
    "invoke inv": ("tasks.py", "invoke.yaml"),
    "fab": ("fabfile.py",),
    "mkdocs": ("mkdocs.yml", "mkdocs.yaml"),
    "bundle": ("Gemfile", "gems.rb"),
    "gradle gradlew": ("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts", "gradlew",
                       "init.gradle"),
    "mvn mvnw": ("pom.xml", ".mvn/extensions.xml", ".mvn/jvm.config", "mvnw"),
    "sbt": ("build.sbt", "project/plugins.sbt"),
    "ant": ("build.xml",),
    "deno": ("deno.json", "deno.jsonc"),
    "meson": ("meson.build", "meson_options.txt", "meson.options"),
    "doit": ("dodo.py",),
    "pytest py.test": ("conftest.py",),
    "scons": ("SConstruct", "Sconstruct", "sconstruct", "SConstruct.py", "site_scons/site_init.py"),
    "bazel bazelisk": ("BUILD", "BUILD.bazel", "WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel", ".bazelrc"),
    "autoreconf autoconf autoheader autom4te automake aclocal": ("configure.ac", "configure.in", "aclocal.m4",
                                                                 "acinclude.m4"),
    "swift": ("Package.swift",),
    "mix": ("mix.exs",),
}
#: program names → file names it finds anywhere below its working directory and runs as code
#: (bazel's packages and their ``.bzl`` extensions, scons's ``SConscript`` files); an entry that
#: starts with a dot is a name ending
CODE_FILES_BELOW: dict[str, tuple[str, ...]] = {
    "bazel bazelisk": ("BUILD", "BUILD.bazel", ".bzl"),
    "scons": ("SConscript",),
}


def _with_configs(name: str, inner: Model, names: tuple[str, ...]) -> Model:
    below = next((files for names_, files in CODE_FILES_BELOW.items() if name in names_.split()), ())
    endings = tuple(file for file in below if file.startswith("."))  # (`.bzl`: a name ending)

    def model(inv: Invocation) -> None:
        inner(inv)
        fresh_project(inv, ".", names, None)
        if name in ("pytest", "py.test"):
            _conftests(inv)
        if below:
            fresh_found(inv, ".", lambda file: file in below or file.endswith(endings), "runs the code of", None)

    model.__doc__ = f"`{name}` as before, and the code configuration files it loads at start ({', '.join(names[:3])} …)"
    return model


def _conftests(inv: Invocation) -> None:
    """pytest loads every ``conftest.py`` below its directory (a plugin: code run at start): one
    this command wrote cannot be seen into."""
    from stockade.analyzer.effects import Write
    from stockade.analyzer.models.fresh import written_by, wrote_anything

    walker = inv.walker
    if not wrote_anything(walker):
        return
    base = inv.path(".").rstrip("/") + "/"
    for effect in walker.effects:
        path = getattr(effect, "path", None)
        if effect.__class__ is Write and isinstance(path, str) and path.startswith(base) and \
                path.endswith("/conftest.py") and path != base + "conftest.py":
            producer = written_by(walker, path, False)
            if producer is not None:
                inv.unknown(f"`{inv.name}` loads `{path[len(base):]}`, which {producer} wrote earlier in this "
                            "command: its code cannot be seen into")
                return


for _names, _configs in CODE_CONFIGS.items():
    for _name in _names.split():
        register(_name, _with_configs(_name, MODELS.get(_name, default_model), _configs))


#: program names → options whose value is a configuration file that is code (or names programs) it
#: loads: judged as a foreign file (a read; code not seen into when it lies outside the workspace where
#: the agent can write, or this text wrote it: see :func:`~.devtools.foreign_file`)
CODE_CONFIG_OPTIONS: dict[str, tuple[str, ...]] = {
    "eslint eslint_d": ("-c", "--config", "--rulesdir", "--resolve-plugins-relative-to"),
    "prettier": ("--config", "--plugin"),
    "stylelint": ("-c", "--config", "--custom-syntax"),
    "jest": ("-c", "--config", "--setupFiles", "--setupFilesAfterEnv", "--globalSetup", "--globalTeardown",
             "--testRunner", "--testEnvironment", "--resolver", "--transform"),
    "vitest vite": ("-c", "--config"),
    "webpack webpack-cli webpack-dev-server": ("-c", "--config"),
    "rollup": ("-c", "--config"),
    "babel": ("--config-file",),
    "mocha": ("--config", "-r", "--require", "--file", "--ui", "-u"),
    "playwright": ("-c", "--config"),
    "cypress": ("-C", "--config-file"),
    "nodemon": ("--config",),
    "commitlint": ("-g", "--config"),
    "gulp": ("-f", "--gulpfile"),
    "grunt": ("--gruntfile",),
    "mypy dmypy": ("--config-file",),
    "scons": ("-f", "--file", "--makefile", "--sconstruct", "--site-dir"),
    "bazel bazelisk": ("--bazelrc",),
    "meson": ("--cross-file", "--native-file"),
    "tox": ("-c", "--conf", "--workdir"),
    "nox": ("-f", "--noxfile"),
    "rake": ("-f", "--rakefile", "-r", "--require"),
    # (build files, their libraries and the launcher's directories of JVM builds)
    "ant": ("-f", "-file", "-buildfile", "-lib", "-propertyfile"),
    "sbt": ("-Dsbt.global.base", "-Dsbt.boot.directory", "-Dsbt.ivy.home",
            "--sbt-dir", "-sbt-dir", "--sbt-boot", "-sbt-boot", "--sbt-jar", "-sbt-jar", "--java-home", "-java-home",
            "--ivy", "-ivy"),
    # (CMake's scripts and configuration, zig's build script and runner, other build runners)
    "ctest": ("-S", "-SP", "-SR", "--script", "--script-new-process"),
    "cpack": ("--config",),
    "zig": ("--build-file", "--build-runner", "--zig-lib-dir"),
    "invoke inv": ("-r", "--search-root", "-f", "--config"),
    "doit": ("-f", "--file", "--dir"),
    "air": ("-c",),
    "latexmk": ("-r",),
    # (plugins, scripts and configuration of editors, viewers and players)
    "code code-insiders codium": ("--extensions-dir", "--user-data-dir"),
    "emacs": ("--init-directory", "--init-dir"),
    "bat batcat": ("--config-file",),
    "mpv": ("--script", "--scripts", "--include", "--config-dir", "--input-conf", "--scripts-append"),
}


def _config_options(name: str, inner: Model, options: tuple[str, ...]) -> Model:
    from stockade.analyzer.models.devtools import foreign_file

    wanted = frozenset(options)

    def model(inv: Invocation) -> None:
        argv = inv.argv  # (the files are judged first: what the tool itself writes later is not "earlier")
        for index, word in enumerate(argv[1:], start=1):
            option, eq, attached = word.partition("=")
            if option in wanted:
                value = attached if eq else (argv[index + 1] if index + 1 < len(argv) else "")
                if value and UNKNOWN not in value and not value.startswith("-") and (
                        "/" in value or "." in value or option not in ("--plugin", "--ui", "-u", "--testEnvironment",
                                                                        "--testRunner")):
                    foreign_file(inv, value, index + (0 if eq else 1), f"`{name} {option}`")
        inner(inv)

    model.__doc__ = f"`{name}` as before, and the code configuration its {', '.join(options[:3])} … options name"
    return model


for _names, _options in CODE_CONFIG_OPTIONS.items():
    for _name in _names.split():
        register(_name, _config_options(_name, MODELS.get(_name, default_model), _options))


# -- command lines and code given to options -----------------------------------------------------

#: program names → options whose value is a command line the tool runs (through a shell or split as
#: one): judged by :func:`~.programs.judge_program` (a program where the agent can write is unknown
#: code, anything else is walked); ``script``: shell code (walked); ``code``: code of another
#: language, which cannot be seen into (the paths and shell command lines written in it are judged)
COMMAND_OPTIONS: dict[str, dict[str, str]] = {
    "meson": dict.fromkeys(("--wrapper", "--wrap", "--gdb-path"), "program"),
    "delta": {"--pager": "program"},
    "latexmk": {**dict.fromkeys(("-latex", "-pdflatex", "-lualatex", "-xelatex", "-dvipdf", "-dvips", "-ps2pdf",
                                 "-makeindex", "-bibtex", "-biber", "-pdflualatex", "-pdfxelatex"), "program"),
                "-e": "code"},
    "asciinema": dict.fromkeys(("-c", "--command"), "script"),
    "termtosvg": dict.fromkeys(("-c", "--command"), "script"),
    "ttyrec": {"-e": "script"},
    "repo": dict.fromkeys(("-c", "--command"), "script"),
    "git-filter-repo": dict.fromkeys(("--commit-callback", "--filename-callback", "--blob-callback",
                                      "--name-callback", "--email-callback", "--message-callback",
                                      "--refname-callback", "--tag-callback", "--reset-callback",
                                      "--file-info-callback"), "code"),
    "puppet": dict.fromkeys(("-e", "--execute"), "code"),
    "chef-apply": dict.fromkeys(("-e", "--execute"), "code"),
}


def _command_options(name: str, inner: Model, options: dict[str, str]) -> Model:
    from stockade.analyzer.models.programs import judge_program
    from stockade.analyzer.models.shells import named_paths

    def model(inv: Invocation) -> None:
        argv = inv.argv
        for index, word in enumerate(argv[1:], start=1):
            if word == "--":
                break
            option, eq, attached = word.partition("=")
            role = options.get(option)
            if role is None:
                continue
            at = index if eq else index + 1
            value = attached if eq else (argv[at] if at < len(argv) else "")
            what = f"`{name} {option}`"
            if not value:
                continue
            if role == "program":
                judge_program(inv.walker, value.replace("%O", "").replace("%S", "x.tex"), inv.at(at), what)
            elif role == "script":
                inv.script(value, at, what=f"the command given to {what}")
            else:
                inv.unknown(f"{what} runs code (`{show(value)[:60]}`) that cannot be seen into", at)
                named_paths(inv, value, at)
        inner(inv)

    model.__doc__ = f"`{name}` as before, and the commands or code its {', '.join(list(options)[:3])} … options give"
    return model


for _names, _roles in COMMAND_OPTIONS.items():
    for _name in _names.split():
        register(_name, _command_options(_name, MODELS.get(_name, default_model), _roles))


#: bazel options whose value is ``NAME=VALUE``: a repository's directory (``--override_repository``),
#: or a variable for repository rules, actions or tests (``--repo_env=CC=/tmp/cc``,
#: ``--action_env=PATH=/tmp``): each path in VALUE is judged as a foreign file
_BAZEL_PAIRS = frozenset({"--override_repository", "--override_module", "--repo_env", "--action_env",
                          "--host_action_env", "--test_env"})


def _bazel(inner: Model) -> Model:
    from stockade.analyzer.models.devtools import foreign_file

    def model(inv: Invocation) -> None:
        """bazel: ``--override_repository=NAME=DIR`` builds with the code of DIR; ``--repo_env``,
        ``--action_env``, ``--test_env`` ``NAME=VALUE`` set a variable (a compiler, ``PATH``) for what
        it runs: each path in VALUE is code loaded (:func:`~.devtools.foreign_file`); then as before."""
        argv = inv.argv
        for index, word in enumerate(argv[1:], start=1):
            if word == "--":
                break
            option, eq, pair = word.partition("=")
            at = index
            if not eq and option in _BAZEL_PAIRS and index + 1 < len(argv):
                pair, at = argv[index + 1], index + 1
            if option not in _BAZEL_PAIRS or "=" not in pair:
                continue
            name, _, value = pair.partition("=")
            for entry in value.split(":") if name.endswith("PATH") or "_PATH" in name else [value]:
                if entry and ("/" in entry or entry[:1] in ".~"):
                    foreign_file(inv, entry, at, f"`bazel {option}={name}=`")
        inner(inv)

    return model


for _name in ("bazel", "bazelisk"):
    register(_name, _bazel(MODELS.get(_name, default_model)))


# -- start-up files whose known content runs nothing ---------------------------------------------

#: pre-commit configuration keys that name no code (``repo: meta`` hooks are pre-commit's own)
_PRE_COMMIT_KEYS = frozenset({"repos", "repo", "hooks", "id", "args", "exclude", "files", "types", "types_or",
                              "exclude_types", "stages", "default_stages", "fail_fast", "always_run",
                              "minimum_pre_commit_version", "default_install_hook_types", "verbose", "alias",
                              "name", "pass_filenames", "require_serial", "log_file-never"})
_YAML_LINE = re.compile(r"\s*(?:-\s+)?([A-Za-z_]+)\s*:\s*(.*)")
_YAML_VALUE = re.compile(r"""[\w .,/^$()|?+\\\-\[\]'"]*""")
#: VS Code settings whose value names no program (editor behaviour, files, search, the layout)
_VSCODE_PREFIXES = ("editor.", "files.", "search.", "workbench.", "explorer.", "diffEditor.", "breadcrumbs.",
                    "outline.", "scm.", "window.", "problems.", "zenMode.", "cSpell.", "markdown.preview.",
                    "html.format.", "json.format.")
#: a setting name that can still name or start something that runs (a path, a command, arguments, an
#: environment, a formatter or linter run on save)
_VSCODE_RISKY = re.compile(r"(?i)path|command|executable|args|env|shell|interpreter|runtime|server|binary|cmd|"
                           r"program|launch|task|terminal|script|hook|plugin|extension|format|external|save|codeaction|lint|fix|"
                           r"watch|trust|auto(?:matic)?run")


def _pre_commit_harmless(text: str) -> bool:
    """A ``.pre-commit-config.yaml`` that names no hook code: no ``entry``, no ``repo`` but
    ``meta`` (a remote repository's hooks are code it downloads and runs), plain YAML only."""
    for line in text.split("\n"):
        line = line.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#") or line.strip() == "---":
            continue
        match = _YAML_LINE.fullmatch(line)
        if match is None or match.group(1) not in _PRE_COMMIT_KEYS:
            return False
        key, value = match.group(1), match.group(2).strip()
        if key == "repo" and value.strip("'\"") != "meta":
            return False
        if key == "repos" and value not in ("", "[]"):
            return False
        if not _YAML_VALUE.fullmatch(value):
            return False
    return True


def _vscode_settings_harmless(text: str) -> bool:
    """A ``.vscode/settings.json`` whose settings are all editor behaviour (no terminal, task,
    interpreter, formatter or tool path): VS Code runs nothing it names."""
    stripped = re.sub(r'("(?:[^"\\]|\\.)*")|//[^\n]*|/\*.*?\*/', lambda m: m.group(1) or "", text, flags=re.S)
    stripped = re.sub(r",(\s*[}\]])", r"\1", stripped)
    try:
        settings = json.loads(stripped)
    except ValueError:
        return False
    if not isinstance(settings, dict):
        return False
    items = list(settings.items())
    while items:
        key, value = items.pop()
        if key.startswith("[") and key.endswith("]") and isinstance(value, dict):  # `"[python]": {…}`
            items.extend(value.items())
            continue
        if not key.startswith(_VSCODE_PREFIXES) or _VSCODE_RISKY.search(key):
            return False
        values = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else [value]
        if not all(v is None or isinstance(v, (str, int, float, bool)) for v in values):
            return False
    return True


#: start-up files judged by their content when it is known: path ending → whether it runs nothing
_HARMLESS_WHEN = (
    ("/.pre-commit-config.yaml", _pre_commit_harmless),
    ("/.vscode/settings.json", _vscode_settings_harmless),
)


def harmless_startup(path: str, text: str | None) -> bool:
    """Whether ``text``, known and written to ``path``, makes the tool that reads ``path`` at its
    next start run nothing (see :data:`_HARMLESS_WHEN`); content not known is never harmless."""
    if text is None or UNKNOWN in text:
        return False
    for ending, harmless in _HARMLESS_WHEN:
        if path.endswith(ending):
            return harmless(text)
    return False


#: sphinx-build options that take a value (``-c DIR``: where ``conf.py`` is)
_SPHINX_VALUES = frozenset({"-b", "--builder", "-c", "--conf-dir", "-d", "--doctree-dir", "-j", "--jobs", "-D",
                            "--define", "-A", "--html-define", "-t", "--tag", "-w", "--warning-file", "-M"})


def _sphinx(name: str, inner: Model) -> Model:
    def model(inv: Invocation) -> None:
        """sphinx-build [OPTIONS] SOURCEDIR OUTPUTDIR: runs ``conf.py`` (Python) from the source
        directory or ``-c DIR``: unknown code when this command wrote it."""
        inner(inv)
        from stockade.analyzer.models import parse_options

        parsed = parse_options(inv.argv, _SPHINX_VALUES)
        confs = parsed.values_of("-c", "--conf-dir")
        sources = [word for word, _ in parsed.positionals if UNKNOWN not in word]
        directory = confs[-1][0] if confs else sources[0] if sources else None
        if directory is not None and UNKNOWN not in directory:
            fresh_project(inv, directory, ("conf.py",), confs[-1][1] if confs else None)

    return model


for _name in ("sphinx-build", "sphinx-autobuild"):
    register(_name, _sphinx(_name, MODELS.get(_name, default_model)))
