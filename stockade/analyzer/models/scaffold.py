"""Project initializers, dependency installers and builds: the files ``npm init``, ``cargo init``,
``go mod init`` create, the trees ``npm install`` or ``uv sync`` write, and the outputs a build
leaves (``cargo build``'s ``target``, ``gcc``'s ``a.out``) in the project directory.

An initializer writes a project's manifest (and, for some, a source tree) in the current
directory or in the directory it is given: ``cd ~ && npm init -y`` writes ``~/package.json``,
outside the workspace, and ``cargo new ~/.config/x`` a tree there.  Each row names the files
written relative to that directory; a tree (``src``) is written recursively.  The tool's own
model still runs first (``npm init PKG`` runs a downloaded package; that stays).  An installer
writes its manifest, lock file and dependency tree (``node_modules``, ``vendor``, ``.venv``) in
the current directory (``cd ~ && npm install x`` writes ``~/node_modules``).  These files are the
tool's own: a later command that runs them is not running code from elsewhere because of them
(what the packages themselves run is their models' to judge).
"""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, default_model, register
from stockade.analyzer.models.fresh import template_write

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model

#: (program, subcommand words) → (files written below the directory, trees written below it,
#: whether the first operand after the subcommand is the directory, value options to skip)
_S = frozenset
INITIALIZERS: dict[tuple[str, tuple[str, ...]], tuple[tuple[str, ...], tuple[str, ...], bool, frozenset[str]]] = {
    ("npm", ("init",)): (("package.json",), (), False, _S({"-w", "--workspace", "--scope", "--init-module"})),
    ("pnpm", ("init",)): (("package.json",), (), False, _S()),
    ("yarn", ("init",)): (("package.json", ".yarnrc.yml", ".gitignore", ".editorconfig"), (), False, _S()),
    ("bun", ("init",)): (("package.json", "index.ts", "tsconfig.json", ".gitignore", "README.md"), (), True,
                         _S()),
    ("deno", ("init",)): (("deno.json", "main.ts", "main_test.ts"), (), True, _S()),
    ("cargo", ("init",)): (("Cargo.toml", ".gitignore"), ("src",), True,
                           _S({"--name", "--vcs", "--edition", "--registry"})),
    ("cargo", ("new",)): ((), ("",), True, _S({"--name", "--vcs", "--edition", "--registry"})),
    ("go", ("mod", "init")): (("go.mod",), (), False, _S()),
    ("poetry", ("init",)): (("pyproject.toml",), (), False,
                            _S({"--name", "--description", "--author", "--python", "--dependency",
                                "--dev-dependency", "-l", "--license"})),
    ("poetry", ("new",)): ((), ("",), True, _S({"--name", "--readme"})),
    ("uv", ("init",)): (("pyproject.toml", "README.md", ".python-version", "main.py", ".gitignore"), ("src",),
                        True, _S({"--name", "--python", "-p", "--build-backend", "--vcs", "--author-from",
                                  "--description"})),
    ("pdm", ("init",)): (("pyproject.toml", "pdm.lock"), ("src",), False, _S({"-p", "--project", "--python"})),
    ("hatch", ("new",)): ((), ("",), True, _S()),
    ("composer", ("init",)): (("composer.json",), (), False,
                              _S({"--name", "--description", "--author", "--type", "--homepage", "--require",
                                  "--require-dev", "-s", "--stability", "-l", "--license", "--repository",
                                  "-d", "--working-dir"})),
    ("gem", ("init",)): (("Gemfile",), (), False, _S()),
    ("bundle", ("init",)): (("Gemfile",), (), False, _S({"--gemspec"})),
    ("dart", ("create",)): ((), ("",), True, _S({"-t", "--template"})),
    ("flutter", ("create",)): ((), ("",), True, _S({"-t", "--template", "--org", "--project-name"})),
}

#: dependency installers: the tree and manifests they write in the project directory (the cwd, or
#: ``--prefix``/``-C``/``--cwd``); ``-g``/``--global`` installs elsewhere (their models judge that)
_NODE = ("node_modules",)
_DEPS: dict[tuple[str, tuple[str, ...]], tuple[tuple[str, ...], tuple[str, ...]]] = {
    **{("npm", (sub,)): (("package.json", "package-lock.json"), _NODE)
       for sub in ("install", "i", "ci", "add", "update", "up", "uninstall", "remove", "rm", "un", "dedupe",
                   "prune", "link")},
    **{("pnpm", (sub,)): (("package.json", "pnpm-lock.yaml"), _NODE)
       for sub in ("install", "i", "add", "update", "up", "remove", "rm", "uninstall")},
    **{("yarn", (sub,)): (("package.json", "yarn.lock"), _NODE) for sub in ("install", "add", "remove", "up",
                                                                            "upgrade")},
    **{("bun", (sub,)): (("package.json", "bun.lock", "bun.lockb"), _NODE)
       for sub in ("install", "i", "add", "a", "remove", "rm", "update")},
    **{("go", ("mod", sub)): (("go.mod", "go.sum"), ()) for sub in ("tidy", "edit")},
    ("go", ("get",)): (("go.mod", "go.sum"), ()),
    **{("cargo", (sub,)): (("Cargo.toml", "Cargo.lock"), ()) for sub in ("add", "remove", "rm", "update")},
    **{("poetry", (sub,)): (("pyproject.toml", "poetry.lock"), ()) for sub in ("add", "remove", "lock")},
    **{("uv", (sub,)): (("pyproject.toml", "uv.lock"), (".venv",)) for sub in ("add", "remove", "lock", "sync")},
    **{("composer", (sub,)): (("composer.json", "composer.lock"), ("vendor",))
       for sub in ("require", "install", "update", "remove")},
}
# builds and packers: what they leave in the project directory ("." : a new entry of it, name not known)
_BUILDS: dict[tuple[str, tuple[str, ...]], tuple[tuple[str, ...], tuple[str, ...]]] = {
    **{("cargo", (sub,)): ((), ("target",)) for sub in ("build", "b", "test", "t", "run", "r", "check", "c", "doc",
                                                         "bench")},
    **{("mvn", (phase,)): ((), ("target",)) for phase in ("compile", "test", "package", "verify", "install")},
    **{("gradle", (task,)): ((), ("build", ".gradle")) for task in ("build", "assemble", "test", "jar")},
    ("go", ("build",)): ((".",), ()),
    ("npm", ("pack",)): ((".",), ()),
    ("yarn", ()): (("package.json", "yarn.lock"), _NODE),
    ("pipenv", ("install",)): (("Pipfile", "Pipfile.lock"), ()),
    **{("dotnet", (sub,)): ((), ("bin", "obj")) for sub in ("build", "publish", "test", "run")},
}
_DEPS.update(_BUILDS)
#: options (and variables) that move a build's output elsewhere: then its model judges it
_ELSEWHERE = {"cargo": ("--target-dir", "--manifest-path"), "go": ("-o",), "mvn": ("-f", "--file"),
              "gradle": ("-p", "--project-dir", "-b", "--build-file"), "dotnet": ("-o", "--output")}
_ELSEWHERE_VARS = {"cargo": "CARGO_TARGET_DIR"}
for (_program, _words), (_files, _trees) in _DEPS.items():
    INITIALIZERS[(_program, _words)] = (_files, _trees, False, _S({"-w", "--workspace", "--filter", "-F"}))
#: options that make an installer install globally (not into the project directory)
_GLOBAL = frozenset({"-g", "--global", "--location=global", "-G"})


def _directory(inv: Invocation, at: int, takes_dir: bool, values: frozenset[str]) -> tuple[str, int | None]:
    """The directory the initializer writes in: its operand (when it takes one) or the cwd;
    ``-C DIR``/``--cwd``/``--directory`` and ``--prefix`` move it."""
    argv = inv.argv
    directory: tuple[str, int | None] = (".", None)
    index = at
    while index < len(argv):
        word = argv[index]
        if word in ("-C", "--cwd", "--directory", "--prefix", "-d", "--working-dir") \
                and index + 1 < len(argv):
            directory = (argv[index + 1], index + 1)
            index += 2
            continue
        if word in values:
            index += 2
            continue
        if word == "--" or not word.startswith("-"):
            if takes_dir and word != "--":
                return (word, index) if directory[0] == "." else (directory[0].rstrip("/") + "/" + word, index)
            if word != "--":
                return directory
        index += 1
    return directory


def _runs_a_package(inv: Invocation, operands: list[tuple[str, int]], takes_dir: bool) -> bool:
    """``npm init vite``, ``yarn init PKG``: a package initializer (downloaded code) writes the files."""
    return inv.name in ("npm", "pnpm", "yarn") and bool(operands) and not takes_dir


def _output_elsewhere(inv: Invocation) -> bool:
    """Whether an option or variable puts the build's output somewhere else (``cargo build
    --target-dir D``, ``go build -o F``, ``CARGO_TARGET_DIR``)."""
    options = _ELSEWHERE.get(inv.name, ())
    if options and any(word == option or word.startswith(option + "=") for word in inv.argv[1:] for option in options):
        return True
    variable = _ELSEWHERE_VARS.get(inv.name)
    return variable is not None and (variable in inv.env or variable in inv.walker.state.exported)


def _initializer(name: str, previous: Model) -> Model:
    rows = {words: row for (program, words), row in INITIALIZERS.items() if program == name}
    firsts = frozenset(words[0] for words in rows if words)
    bare = () in rows

    def model(inv: Invocation) -> None:
        previous(inv)
        for word in inv.argv[1:]:  # (the first operand names no row: nothing to do)
            if word[:1] != "-":
                if word not in firsts:
                    return
                break
        else:
            if not bare:
                return
        if any(word in _GLOBAL for word in inv.argv[1:]):
            return  # (a global install: the tool's model judges where it writes)
        if _output_elsewhere(inv):
            return
        words = [(word, index) for index, word in enumerate(inv.argv[1:], start=1) if not word.startswith("-")]
        for sub, row in rows.items():
            if tuple(word for word, _ in words[:len(sub)]) != sub or (not sub and words):
                continue
            files, trees, takes_dir, values = row
            directory, at = _directory(inv, words[len(sub) - 1][1] + 1 if sub else 1, takes_dir, values)
            if UNKNOWN in directory:
                return  # (a directory not known: the tool's model judged the word already)
            base = directory.rstrip("/") or "/"
            effects = inv.walker.effects
            start = len(effects)
            for file in files:
                inv.write(f"{base}/{file}" if base != "/" else f"/{file}", at)
            for tree in trees:
                inv.write(f"{base}/{tree}".rstrip("/") if tree else base, at, recursive=True)
            if (inv.name, sub) in _DEPS or not _runs_a_package(inv, words[len(sub):], takes_dir):
                for effect in effects[start:]:  # (the tool's own template: not code from elsewhere)
                    template_write(inv.walker, effect)
            return

    model.__doc__ = f"{previous.__doc__ or name}; its init subcommands write the project's files (scaffold.py)"
    return model


for _name in sorted({program for program, _ in INITIALIZERS}):
    register(_name, _initializer(_name, MODELS.get(_name, default_model)))


#: C compilers: without ``-o`` they write ``a.out`` (``-c``/``-S``: objects named after the sources)
_COMPILERS = ("gcc", "cc", "c++", "g++", "clang", "clang++", "tcc", "gfortran")
_COMPILE_ONLY = frozenset({"-c", "-S"})
_NO_OUTPUT = frozenset({"-E", "-M", "-MM", "-fsyntax-only", "--version", "-v", "--help", "-###", "-dumpversion",
                        "-dumpmachine", "-print-search-dirs"})


def _compiler_output(name: str, previous: Model) -> Model:
    def model(inv: Invocation) -> None:
        previous(inv)
        argv = inv.argv[1:]
        if any(word == "-o" or word.startswith("-o") for word in argv) or any(word in _NO_OUTPUT or
                                                                             word.startswith("-print-")
                                                                             for word in argv):
            return
        if not any(word[:1] != "-" for word in argv):
            return
        inv.write("." if any(word in _COMPILE_ONLY for word in argv) else "a.out", None)

    model.__doc__ = f"{previous.__doc__ or name}; without -o it writes a.out in the cwd (scaffold.py)"
    return model


for _name in _COMPILERS:
    register(_name, _compiler_output(_name, MODELS.get(_name, default_model)))
