"""Code formatters and fixers: they rewrite the files they are given, in place.

``black src``, ``isort x.py``, ``prettier --write 'src/**/*.ts'``, ``eslint --fix .``, ``ruff
format``, ``gofmt -w``, ``clang-format -i``, ``rustfmt``, ``shfmt -w``, ``rubocop -a`` … A
formatter reads each operand and, in its writing mode, writes it back: a file operand is that
file; a directory operand (or the default ``.``) is the directory itself and every source file
of the formatter's languages below it, as the glob ``DIR/**/*.EXT`` (which, as bash's
``globstar``, does not enter dot-directories such as ``.git``: formatters leave them out). A
check mode (``--check``, ``--diff``, ``-l``) only reads. Each tool is one row of
:data:`FORMATTERS`: its languages, the options that take a value (and what the value is), the
options that turn writing on (when it writes only then) or off, its subcommands.
"""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN, TupleRecord
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import apply_role, parse_options, register
from stockade.analyzer.models.shells import _MODULE_TOOLS

T = "text"

_PY = ("py", "pyi", "ipynb")
_JS = ("js", "jsx", "ts", "tsx", "mjs", "cjs", "mts", "cts", "vue", "svelte")
_WEB = (*_JS, "json", "json5", "jsonc", "css", "scss", "less", "md", "mdx", "yaml", "yml", "html", "graphql",
        "gql", "hbs", "handlebars")
_C = ("c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "m", "mm", "proto", "java", "cs", "cu")


def _t(*names: str) -> dict[str, str]:
    return dict.fromkeys(names, T)


class Formatter(TupleRecord):
    """One formatter: ``exts`` its languages; ``values`` value-taking options → role of the
    value; ``write_on`` options that make it write (empty: it writes unless a ``check``
    option is given); ``check`` options that make it only read; ``subcommands`` the words
    that must come first for it to format (``ruff format``; empty: none); ``default`` the
    operand when none is given (None: no file is touched); ``single_dash`` options are
    long words after one dash (``-style=llvm``, ``-ln bash``): never a cluster."""

    __slots__ = ()
    _fields = ("exts", "values", "write_on", "check", "subcommands", "default", "single_dash")
    exts: tuple[str, ...]
    values: dict[str, str]
    write_on: frozenset[str]
    check: frozenset[str]
    subcommands: dict[str, tuple[frozenset[str], frozenset[str]]]
    default: str | None
    single_dash: bool

    def __new__(cls, exts: tuple[str, ...], values: dict[str, str] | None = None, write_on: str = "",
                check: str = "", subcommands: dict[str, tuple[str, str]] | None = None,
                default: str | None = None, single_dash: bool = False) -> Formatter:
        subs = {name: (frozenset(on.split()), frozenset(off.split())) for name, (on, off) in (subcommands or {}).items()}
        return tuple.__new__(cls, (exts, values or {}, frozenset(write_on.split()), frozenset(check.split()), subs,
                                   default, single_dash))


_RUFF_VALUES = {**_t("--select", "--ignore", "--extend-select", "--extend-ignore", "--per-file-ignores",
                     "--extend-per-file-ignores", "--fixable", "--unfixable", "--extend-fixable", "--exclude",
                     "--extend-exclude", "--target-version", "--line-length", "--stdin-filename", "--output-format",
                     "--range", "--dummy-variable-rgx", "--show-settings-of", "--format"),
                "--config": "read", "--cache-dir": "writer", "-o": "write", "--output-file": "write"}
_ESLINT_VALUES = {**_t("--ext", "-f", "--format", "--ignore-pattern", "--parser", "--parser-options", "--plugin",
                       "--rule", "--env", "--global", "--max-warnings", "--fix-type", "--stdin-filename",
                       "--cache-strategy", "--report-unused-disable-directives-severity", "--flag",
                       "--resolve-plugins-relative-to", "--print-config", "--concurrency"),
                  "-c": "read", "--config": "read", "--rulesdir": "read", "--ignore-path": "read",
                  "-o": "write", "--output-file": "write", "--cache-location": "write"}
_PRETTIER_VALUES = {**_t("--parser", "--print-width", "--tab-width", "--stdin-filepath", "--log-level",
                         "--loglevel", "--cache-strategy", "--end-of-line", "--trailing-comma", "--arrow-parens",
                         "--prose-wrap", "--quote-props", "--html-whitespace-sensitivity",
                         "--embedded-language-formatting", "--config-precedence", "--object-wrap", "--plugin",
                         "--plugin-search-dir", "--experimental-operator-position", "--cursor-offset",
                         "--range-start", "--range-end"),
                    "--config": "read", "--ignore-path": "read", "--cache-location": "write"}

#: ruff's subcommands that format nothing
_RUFF_OTHERS = frozenset({"rule", "config", "linter", "clean", "server", "analyze", "version", "help"})

#: name(s) → the formatter's row
FORMATTERS: dict[str, Formatter] = {
    "black": Formatter(_PY, {**_t("-l", "--line-length", "-t", "--target-version", "--include", "--exclude",
                                  "--extend-exclude", "--force-exclude", "--stdin-filename", "-W", "--workers",
                                  "--python-cell-magics", "--required-version", "-c", "--code"),
                             "--config": "read"}, check="--check --diff -c --code"),
    "isort": Formatter(_PY + ("pyx",), {**_t("-l", "--line-length", "-p", "--project", "-o", "--thirdparty", "-a",
                                             "--add-import", "--rm", "--remove-import", "--profile", "-s", "--skip",
                                             "--sg", "--skip-glob", "-m", "--multi-line", "-j", "--jobs", "--src",
                                             "--virtual-env", "--conda-env", "--py", "--python-version",
                                             "--filename", "--ext", "--extension"),
                                        "--sp": "read", "--settings-path": "read", "--settings-file": "read",
                                        "--settings": "read"},
                       check="-c --check-only --check --diff --df -d --stdout --show-files --show-config"),
    "autopep8 autoflake docformatter": Formatter(
        _PY, {**_t("--max-line-length", "--select", "--ignore", "-j", "--jobs", "--indent-size", "--line-range",
                   "--range", "--exclude", "--imports", "--wrap-summaries", "--wrap-descriptions"),
              "--global-config": "read", "--config": "read"}, write_on="-i --in-place"),
    "yapf": Formatter(_PY, {**_t("--style", "-l", "--lines", "-e", "--exclude")}, write_on="-i --in-place"),
    "pyupgrade add-trailing-comma reorder-python-imports": Formatter(
        _PY, {**_t("--application-directories", "--add-import", "--remove-import", "--replace-import")}),
    "pycln": Formatter(_PY, {**_t("-i", "--include", "-e", "--exclude", "--extend-exclude", "-s", "--skip-imports"),
                             "--config": "read"}, check="-c --check -d --diff"),
    "ruff": Formatter(_PY, _RUFF_VALUES, subcommands={"format": ("", "--check --diff"),
                                                      "check": ("--fix --fix-only", "--no-fix --diff"),
                                                      "": ("--fix --fix-only", "--no-fix --diff")}, default="."),
    "prettier": Formatter(_WEB, _PRETTIER_VALUES, write_on="--write -w"),
    "eslint eslint_d": Formatter(_JS, _ESLINT_VALUES, write_on="--fix", default="."),
    "biome": Formatter(_WEB, {**_t("--config-path", "--max-diagnostics", "--reporter", "--log-level",
                                   "--stdin-file-path", "--indent-style", "--indent-width", "--line-width",
                                   "--vcs-root")},
                       subcommands={"format": ("--write --apply --fix", ""),
                                    "check": ("--write --apply --apply-unsafe --fix --unsafe", ""),
                                    "lint": ("--write --apply --apply-unsafe --fix --unsafe", "")}, default="."),
    "gofmt goimports": Formatter(("go",), {"-r": T, "-cpuprofile": "write", "-local": T, "-srcdir": T},
                                 write_on="-w", single_dash=True),
    "clang-format": Formatter(_C, {**_t("-style", "--style", "-assume-filename", "--assume-filename", "-lines",
                                        "--lines", "-offset", "--offset", "-length", "--length", "-fallback-style",
                                        "--fallback-style", "-cursor", "--cursor", "-qualifier-alignment",
                                        "--qualifier-alignment"), "--files": "read", "-files": "read"},
                              write_on="-i --i", single_dash=True),
    "rustfmt": Formatter(("rs",), {**_t("--edition", "--emit", "--color", "--config", "--print-config",
                                        "--style-edition"), "--config-path": "read"}, check="--check"),
    "shfmt": Formatter(("sh", "bash"), {**_t("-i", "--indent", "-ln", "--language-dialect", "--filename")},
                       write_on="-w --write", single_dash=True),
    "rubocop": Formatter(("rb",), {**_t("-f", "--format", "--only", "--except", "--stdin", "-s",
                                        "--fail-level", "--exclude-limit"),
                                   "-c": "read", "--config": "read", "-o": "write", "--out": "write",
                                   "--cache-root": "writer"},
                         write_on="-a --autocorrect --auto-correct -A --autocorrect-all --auto-correct-all "
                                  "-x --fix-layout", default="."),
    "stylua": Formatter(("lua", "luau"), {**_t("--indent-type", "--indent-width", "--column-width", "-g", "--glob",
                                               "--stdin-filepath"), "--config-path": "read", "-f": "read"},
                        check="-c --check"),
    "swiftformat": Formatter(("swift",), {**_t("--swiftversion", "--rules", "--disable", "--enable", "--exclude",
                                               "--stdinpath", "--indent"), "--config": "read", "--cache": "write",
                                          "--output": "write", "--report": "write"}, check="--lint --dryrun"),
    "ktlint": Formatter(("kt", "kts"), {**_t("--reporter", "--relative", "--editorconfig")}, write_on="-F --format"),
    "nixfmt alejandra": Formatter(("nix",), {}, check="-c --check"),
    "php-cs-fixer": Formatter(("php",), {"--config": "read", "--rules": T, "--cache-file": "write",
                                         "--format": T, "--path-mode": T},
                              subcommands={"fix": ("", "--dry-run")}, default="."),
    "sqlfluff": Formatter(("sql",), {**_t("--dialect", "--templater", "--rules", "--exclude-rules", "-p",
                                          "--processes", "--bench", "--logger"), "--config": "read"},
                          subcommands={"fix": ("", ""), "format": ("", "")}),
    "cmake-format": Formatter(("cmake", "txt"), {"-c": "read", "--config-files": "read", "-o": "write",
                                                 "--outfile-path": "write"}, write_on="-i --in-place"),
    "mdformat": Formatter(("md",), {**_t("--wrap", "--end-of-line", "--extensions", "--codeformatters")},
                          check="--check"),
    "google-java-format": Formatter(("java",), {**_t("--lines", "--offset", "--length")},
                                    write_on="-i -r --replace"),
    "scalafmt": Formatter(("scala", "sc", "sbt"), {"-c": "read", "--config": "read", **_t("--mode", "--exclude")},
                          check="--check --test -l --list --stdout"),
    "djlint": Formatter(("html", "jinja", "j2", "njk", "hbs"), {**_t("--profile", "-e", "--extension",
                                                                       "--indent", "--max-line-length")},
                        write_on="--reformat"),
}


def _source_globs(word: str, exts: tuple[str, ...]) -> list[str]:
    """The files a formatter writes for the operand ``word``: the file itself, and — when it
    is not a file of one of its languages (a directory) — every such file below it."""
    base = word.rstrip("/").rpartition("/")[2]
    if "." in base.lstrip(".") and base.rpartition(".")[2] in exts:
        return [word]
    root = word.rstrip("/") or "/"
    return [word, *(f"{root}/**/*.{ext}" for ext in exts)]


def _formatter_model(row: Formatter):
    values = row.values

    def model(inv: Invocation) -> None:
        argv = inv.argv
        start = 1
        write_on, check = row.write_on, row.check
        if row.subcommands:
            leading = parse_options(argv, values, stop_at_first_positional=True).positionals
            command, first = leading[0] if leading else ("", 0)
            if command in row.subcommands:
                start = first + 1
                write_on, check = row.subcommands[command]
            elif "" in row.subcommands and command not in _RUFF_OTHERS:
                write_on, check = row.subcommands[""]  # `ruff --fix src` (no subcommand)
            else:
                return _other_command(inv)
        if row.single_dash:  # `-style=llvm`, `-ln bash`: a single-dash word is one whole option
            options, positionals = _single_dash(argv, values, start)
            named = {option.lstrip("-") for option, _, _ in options}
            write_on = frozenset(name.lstrip("-") for name in write_on)
            check = frozenset(name.lstrip("-") for name in check)
        else:
            parsed = parse_options(argv, values, start=start)
            options, positionals = list(parsed.options), list(parsed.positionals)
            named = {option for option, _, _ in options}
        for option, value, index in options:
            role = values.get(option)
            if role is not None and value is not None and role != T:
                apply_role(inv, role, value, index)
        writes = (bool(named & write_on) if write_on else True) and not named & check
        operands: list[tuple[str, int | None]] = list(positionals)
        if not operands and row.default is not None:
            operands = [(row.default, None)]
        for word, at in operands:
            if word == "-" or (UNKNOWN in word and not writes):
                continue  # (a check of names not known before it runs: reads, which a policy seldom denies)
            directory = UNKNOWN in word or len(_source_globs(word, row.exts)) > 1
            inv.read(word, at, recursive=directory, skip_hidden=directory)
            if writes:
                for path in _source_globs(word, row.exts):
                    inv.write(path, at)

    return model


def _single_dash(argv: list[str], values: dict[str, str],
                 start: int) -> tuple[list[tuple[str, str | None, int]], list[tuple[str, int]]]:
    """Options of a Go- or LLVM-style command line (``-w``, ``-style=llvm``, ``--lines 1:2``,
    ``-ln bash``: one option a word, ``-x=v`` or ``-x v`` for a value) and its operands."""
    options: list[tuple[str, str | None, int]] = []
    positionals: list[tuple[str, int]] = []
    index = start
    only_operands = False
    while index < len(argv):
        word = argv[index]
        if only_operands or word[:1] != "-" or word == "-":
            positionals.append((word, index))
        elif word == "--":
            only_operands = True
        else:
            name, eq, value = word.partition("=")
            if eq:
                options.append((name, value, index))
            elif (name in values or "-" + name.lstrip("-") in values) and index + 1 < len(argv):
                options.append((name, argv[index + 1], index + 1))
                index += 1
            else:
                options.append((name, None, index))
        index += 1
    return [("-" + name.lstrip("-") if "-" + name.lstrip("-") in values else name, value, at)
            for name, value, at in options], positionals


def _other_command(inv: Invocation) -> None:
    """A subcommand that formats nothing (``ruff rule``, ``ruff clean``): its output options."""
    parsed = parse_options(inv.argv, {"-o", "--output-file", "--config"})
    for path, index in parsed.values_of("-o", "--output-file"):
        inv.write(path, index)
    if inv.argv[1:2] == ["clean"]:
        inv.delete(".ruff_cache", 1, True)


for _names, _row in FORMATTERS.items():
    register(_names, _formatter_model(_row))

# `python -m black …` and its kin: the module is the formatter, judged by its own model
_MODULE_TOOLS.update({name: name for name in ("black", "isort", "autopep8", "yapf", "autoflake", "docformatter",
                                              "pyupgrade", "pycln", "ruff", "mdformat")})
