"""Tools that run a source file given on their command line, in languages the shell models do
not cover, and the runners wrapped here (``bun FILE``, ``go run FILE.go``, ``python -m NAME``).

A source file that the same command text wrote before (``curl -o x.dart URL && dart run
x.dart``) is code that cannot be seen into: the run is the policy's ``unknown-effects``
verdict, with a reason naming the file (see :func:`~stockade.analyzer.models.fresh.run_file`).
Tools with no model of their own keep :func:`~stockade.analyzer.models.default_model`'s
judgement of their arguments; wrapped models keep theirs.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, Write, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, default_model, parse_options, register
from stockade.analyzer.models.fresh import known_content, run_file, written_by, wrote_anything

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model

#: tool → the extensions of the source files it runs (compiles and runs, or interprets)
SOURCE_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "swift": (".swift",),
    "kotlin": (".kts", ".kt", ".jar"),
    "kotlinc": (".kts", ".kt"),
    "dart": (".dart",),
    "crystal": (".cr",),
    "nim": (".nim", ".nims"),
    "v": (".v", ".vsh"),
    "zx": (".mjs", ".js", ".ts", ".md", ".cjs"),
    "escript": (".erl", ".escript", ".beam", ".ez"),
    "raku": (".raku", ".p6", ".pl6", ".rakumod", ".pm6", ".pl"),
    "perl6": (".raku", ".p6", ".pl6", ".pm6", ".pl"),
    "rakudo": (".raku", ".p6", ".pl6", ".pm6", ".pl"),
    "ocaml": (".ml", ".cma", ".cmo"),
    "gjs": (".js", ".mjs"),
    "qjs": (".js", ".mjs"),
    "jruby": (".rb",),
    "jython": (".py",),
    "ipython": (".py", ".ipy"),
    "janet": (".janet",),
    "fennel": (".fnl",),
    "csi": (".scm", ".ss"),
    "gsi": (".scm", ".ss"),
    "chez": (".scm", ".ss"),
    "scheme": (".scm", ".ss"),
    "hhvm": (".php", ".hack", ".hh"),
    "xonsh": (".xsh", ".py"),
    "nu": (".nu",),
    "runhaskell": (".hs", ".lhs"),
    "stack": (".hs",),
    "cabal": (".hs",),
    "scala-cli": (".scala", ".sc", ".java"),
    "amm": (".sc",),
    "jbang": (".java", ".jsh", ".kt", ".groovy", ".jar"),
    "dotnet": (".cs", ".csx", ".fsx", ".dll"),
    "go": (".go",),
    "bun": (".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx", ".mts", ".cts"),
}
#: of these, the first operand is the script whatever its name (an interpreter)
SCRIPT_FIRST = frozenset({"zx", "escript", "raku", "perl6", "rakudo", "ocaml", "gjs", "qjs", "jruby", "jython",
                          "janet", "fennel", "hhvm", "xonsh", "nu", "runhaskell"})
#: options of these tools that take a value (so that it is not read as the script)
_VALUES = frozenset({"-e", "-c", "-I", "-M", "-l", "-o", "--output", "-d", "--define", "-D", "--eval", "-r",
                     "--require", "--cwd", "-C", "--config", "--filter", "--preload", "--env-file", "-p",
                     "--project", "-f", "--framework", "--target", "-t"})


def fresh_sources(inv: Invocation) -> None:
    """Each source file among the operands that this command wrote is code that cannot be seen
    into (a read of it either way, through ``run_file``)."""
    if not wrote_anything(inv.walker):
        return
    extensions = SOURCE_EXTENSIONS.get(inv.name, ())
    parsed = parse_options(inv.argv, _VALUES)
    first = True
    for word, index in parsed.positionals[:32]:
        if (word.endswith(extensions) or (first and inv.name in SCRIPT_FIRST)) and \
                written_by(inv.walker, inv.path(word), False) is not None:
            run_file(inv, word, index)
            return
        first = False


def _wrapping(name: str) -> Model:
    """``name``'s model (the default one when it has none), then :func:`fresh_sources`."""
    inner = MODELS.get(name, default_model)

    def model(inv: Invocation) -> None:
        inner(inv)
        fresh_sources(inv)

    return model


def shadowed_imports(inv: Invocation, directory: str, script: str | None, index: int | None) -> None:
    """A module file this command wrote, with content not known here (downloaded, copied,
    extracted), where the interpreter looks for imports first (the script's directory, or the
    working directory: ``requests.py``; ``node_modules/`` for node): the code a later
    ``import`` loads cannot be seen into."""
    walker = inv.walker
    base = directory.rstrip("/") + "/"
    node = inv.name.startswith("node")
    for effect in walker.effects:
        if effect.__class__ is not Write:
            continue
        path = effect.path
        if not path.startswith(base) or path == script:
            continue
        rest = path[len(base):]
        if (node and rest.startswith("node_modules/")) or (not node and _python_module_file(rest)):
            producer = written_by(walker, path, False)
            if producer is None:
                continue
            content = known_content(walker, path)
            if content is None:  # (downloaded, copied: not seen)
                inv.unknown(f"`{inv.name}` loads modules from `{show(directory)}` first, where {producer} wrote "
                            f"`{show(rest)}` earlier in this command: what an import runs cannot be seen into", index)
                return
            if not node and _imported(inv, script, rest):
                _known_module(inv, path, rest, content, index)



def _imported(inv: Invocation, script: str | None, rest: str) -> bool:
    """Whether the module file ``rest`` (below a directory python imports from first) may be
    loaded by the code run: its top-level name is a standard library module's (which the listed
    modules import in turn: ``re.py`` shadows ``import json``'s own ``import re``) or one the
    code, when known, imports (``python3 -m pytest`` importing the project's modules runs the
    project's code, as by design)."""
    import sys

    top = rest.split("/")[0].partition(".")[0]
    if top in sys.stdlib_module_names or top in ("sitecustomize", "usercustomize"):  # (site imports these first)
        return True
    if script is not None:
        code = known_content(inv.walker, script)
    else:
        argv = inv.argv
        code = next((argv[i + 1] for i in range(1, len(argv) - 1) if argv[i] == "-c"), None)
    if code is None or UNKNOWN in code:
        return False
    return re.search(rf"\b(?:import|from)\s+(?:[\w.]+\s*,\s*)*{re.escape(top)}\b", code) is not None


def _known_module(inv: Invocation, path: str, rest: str, content: str, index: int | None) -> None:
    """A module this command wrote with known content that the code run imports: code just
    written runs (unknown, as a script just written is), and its literal paths and command
    lines are judged (:func:`.shells.named_paths`)."""
    inv.unknown(f"`{inv.name}` imports `{show(rest)}`, which this command wrote: the code it runs cannot be seen into",
                index)
    if UNKNOWN not in content:
        from stockade.analyzer.models.shells import named_paths

        named_paths(inv, content, index)


def _python_module_file(rest: str) -> bool:
    """Whether ``rest`` (a path below a directory on ``sys.path``) is a file some ``import``
    may load: ``NAME.py``, ``NAME.pyc`` or an extension ``NAME….so``, directly or in
    directories whose names are identifiers (a package, or a namespace package's portion:
    ``import pkg.mod``) — ``get-pip.py`` or ``my-notes/x.py`` no import statement can name."""
    *directories, name = rest.split("/")
    stem, dot, extension = name.partition(".")
    return bool(dot) and stem.isidentifier() and (extension in ("py", "pyc") or name.endswith(".so")) and \
        all(directory.isidentifier() for directory in directories)


def _script(inv: Invocation) -> tuple[str | None, int | None]:
    """The script an interpreter runs (its first operand), None for ``-c``/``-m``/stdin."""
    argv = inv.argv
    skip = False
    for index, word in enumerate(argv[1:], start=1):
        if skip:
            skip = False
            continue
        if word in ("-c", "-m", "-e", "--eval", "-p", "--print") or (word[:2] in ("-c", "-m") and word[1:2] != "-"):
            return None, index
        if word in ("-W", "-X", "-r", "--require", "--import", "--input-type"):
            skip = True
            continue
        if word[:1] != "-" or word == "-":
            return (None, index) if word == "-" else (word, index)
    return None, None


def interpreter_imports(inv: Invocation) -> None:
    """After python's or node's model: :func:`shadowed_imports` for the script's directory (and
    python's ``PYTHONPATH`` directories)."""
    if not wrote_anything(inv.walker):
        return
    script, index = _script(inv)
    path = inv.path(script) if script is not None else None
    directory = path.rpartition("/")[0] or "/" if path is not None else inv.cwd
    shadowed_imports(inv, directory, path, index)
    if not inv.name.startswith("node"):  # (PYTHONPATH's directories come before the standard library too)
        state = inv.walker.state
        value = inv.env.get("PYTHONPATH")
        if value is None and "PYTHONPATH" in state.exported:
            value = state.variables.get("PYTHONPATH")
        for entry in (value or "").split(":"):
            if entry and UNKNOWN not in entry and inv.path(entry) != directory:
                shadowed_imports(inv, inv.path(entry), path, index)


def node_modules(inv: Invocation) -> None:
    """node's model, plus modules this command wrote where it resolves imports."""
    _NODE(inv)
    interpreter_imports(inv)


#: where an interpreter found on PATH has certifi's CA bundle (it stands for the bundle of the
#: Python installation: a file the agent did not write)
CERTIFI_BUNDLE = "/usr/lib/python3/dist-packages/certifi/cacert.pem"
_CERTIFI_CODE = re.compile(r"\s*(?:import certifi\s*[;\n]\s*print\(\s*certifi\.where\(\s*\)\s*\)|"
                           r"from certifi import where\s*[;\n]\s*print\(\s*where\(\s*\)\s*\))\s*;?\s*")


def _certifi(inv: Invocation) -> bool:
    """``python -m certifi`` (``-c 'import certifi; print(certifi.where())'``) of an interpreter
    on PATH prints the path of the installation's CA bundle and runs no code of the project:
    its output is known (a module of that name this command wrote is judged as run instead).
    True when it was that command."""
    argv = inv.argv
    if "/" in argv[0] or len(argv) != 3:
        return False
    if not ((argv[1] == "-m" and argv[2] == "certifi") or (argv[1] == "-c" and _CERTIFI_CODE.fullmatch(argv[2]))):
        return False
    if wrote_anything(inv.walker) and any(written_by(inv.walker, inv.path(candidate)) is not None
                                          for candidate in ("certifi.py", "certifi/__main__.py", "certifi/__init__.py")):
        return False
    inv.output(CERTIFI_BUNDLE + "\n", f"the output of `{inv.name} {argv[1]} certifi`")
    return True


def python_module(inv: Invocation) -> None:
    """python's model, plus ``-m NAME`` of a module this command wrote in the working
    directory (``NAME.py`` or ``NAME/__main__.py``: python looks there first), and modules
    this command wrote where the script's imports are looked for first; ``python -m
    certifi`` prints a known path (:func:`_certifi`)."""
    if _certifi(inv):
        return
    _PYTHON(inv)
    if not wrote_anything(inv.walker):
        return
    interpreter_imports(inv)
    argv = inv.argv
    for index, word in enumerate(argv[1:], start=1):
        if word == "-m" or (word[:2] == "-m" and word[2:3] != "-"):
            module = word[2:] or (argv[index + 1] if index + 1 < len(argv) else "")
            at = index if word[2:] else index + 1
            base = module.replace(".", "/")
            for candidate in (base + ".py", base + "/__main__.py", base + "/__init__.py"):
                if module and written_by(inv.walker, inv.path(candidate), False) is not None:
                    run_file(inv, candidate, at)
                    return
            return
        if word[:1] != "-" or word in ("-c", "--"):
            return


_PYTHON = MODELS["python3"]
_NODE = MODELS["node"]
for _name in SOURCE_EXTENSIONS:
    register(_name, _wrapping(_name))
register("python python2 python3 pypy pypy3", python_module)
register("node nodejs", node_modules)
