"""Configuration files that are code a tool runs when it starts: ``eslint.config.js``,
``.mocharc.js``, ``vite.config.ts``, ``gulpfile.js``, ``Gemfile``, ``build.gradle``,
``nodemon.json``'s commands … A tool started after this command wrote one of its code
configuration files runs code that cannot be seen into (judged as ``make`` after a fresh
Makefile: see :func:`~stockade.analyzer.models.fresh.fresh_project`); the tool's own model
(or the default one) still judges its arguments.
"""

from __future__ import annotations

from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, default_model, register
from stockade.analyzer.models.fresh import fresh_project

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
}


def _with_configs(name: str, inner: Model, names: tuple[str, ...]) -> Model:
    def model(inv: Invocation) -> None:
        inner(inv)
        fresh_project(inv, ".", names, None)

    model.__doc__ = f"`{name}` as before, and the code configuration files it loads at start ({', '.join(names[:3])} …)"
    return model


for _names, _configs in CODE_CONFIGS.items():
    for _name in _names.split():
        register(_name, _with_configs(_name, MODELS.get(_name, default_model), _configs))
