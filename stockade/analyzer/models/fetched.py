"""Installing, building and running what the same command text wrote or downloaded, and where
package and build tools are told to connect.

* **Fresh project files.** ``go`` reads ``go.mod``/``go.work`` before anything else: a
  ``toolchain`` line (or a ``go`` line newer than the one installed) makes it download and run
  another toolchain, so a ``go.mod`` this text wrote with content not known here (``curl -o
  go.mod``), or with a ``toolchain`` line, is code that cannot be seen into.  ``uv``, ``poetry``
  and ``pdm`` build the project ``pyproject.toml`` describes and install from the indexes it
  names: one written with unknown content is unknown code; the indexes of known (or appended,
  ``printf '[[tool.uv.index]]…' >> pyproject.toml``) text are contacted.
* **Fresh wheels.** ``pip install x.whl`` of a wheel this text wrote installs code (console
  scripts, ``.pth`` files run at every start) that cannot be seen into.
* **Proxies in system properties.** ``-Dhttps.proxyHost=H`` (``http.``, ``socksProxyHost``,
  maven's ``-DproxyHost``) sends a JVM tool's connections (gradle, maven, java, sbt) to ``H``.
* **Package runners with more packages.** ``uvx --with PKG TOOL`` (``uv tool run --with``)
  installs ``PKG`` next to the tool; ``npm exec -c CODE`` (``npx -c``) runs shell code with the
  packages' programs first on ``PATH`` (``node`` may be a package's): neither can be seen into.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, parse_options, register
from stockade.analyzer.models.fresh import known_content, written_by, wrote_anything
from stockade.analyzer.models.net import contact_url

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model


def _wrap(names: str, check: object) -> None:
    for name in names.split():
        inner: Model | None = MODELS.get(name)

        def model(inv: Invocation, inner: Model | None = inner) -> None:
            if inner is not None:
                inner(inv)
            check(inv)  # type: ignore[operator]

        register(name, model)


def _fresh_file(inv: Invocation, path: str) -> tuple[str | None, str | None]:
    """(what wrote ``path`` earlier in this text, the text it holds: appended text follows an
    UNKNOWN; None when not known), or (None, None) when this text did not write it."""
    if UNKNOWN in path or not wrote_anything(inv.walker):
        return None, None
    producer = written_by(inv.walker, path)
    if producer is None:
        return None, None
    return producer, known_content(inv.walker, path, partial=True)


# -- go: go.mod's toolchain ------------------------------------------------------------------------

_GO_TOOLCHAIN = re.compile(r"^\s*toolchain\s", re.MULTILINE)


def _go(inv: Invocation) -> None:
    """go: a ``go.mod``/``go.work`` this text wrote in the working directory (or ``-C DIR``) or
    a directory above it (go looks upwards); ``go mod edit -toolchain=``, ``go get toolchain@``."""
    if len(inv.argv) < 2 or inv.argv[1] in ("help", "-h", "--help"):
        return
    for at, word in enumerate(inv.argv[2:], start=2):
        if word.startswith(("-toolchain=", "toolchain@", "go@")) or (word == "-toolchain" and inv.argv[1] == "mod"):
            inv.unknown(f"`go {inv.argv[1]} {show(word)}` makes go download and run another toolchain, which cannot "
                        "be seen into", at)
            return
    directory = inv.path(inv.argv[2] if inv.argv[1] == "-C" and len(inv.argv) > 2 else ".").rstrip("/") or "/"
    for _ in range(64):
        for name in ("go.mod", "go.work"):
            producer, text = _fresh_file(inv, (directory if directory != "/" else "") + "/" + name)
            if producer is None:
                continue
            if text is None or _GO_TOOLCHAIN.search(text.replace(UNKNOWN, "\n")):
                inv.unknown(f"`go` reads `{show(directory)}/{name}`, which {producer} wrote earlier in this command: "
                            "its `toolchain` line makes go download and run another toolchain, which cannot be seen "
                            "into", 1)
                return
        if directory == "/":
            return
        directory = directory.rpartition("/")[0] or "/"


# -- pip: wheels this text wrote ------------------------------------------------------------------

def _pip(inv: Invocation) -> None:
    parsed = parse_options(inv.argv, _pip_values())
    if not parsed.positionals or parsed.positionals[0][0] not in ("install", "wheel", "download"):
        return
    for value, index in parsed.values_of("-f", "--find-links"):
        if "://" not in value:
            fresh = _fresh_archive(inv, inv.path(value))
            if fresh is not None:
                inv.unknown(f"`{inv.name}` installs from `{show(value)}`, where this command wrote `{show(fresh)}`: its "
                            "code cannot be seen into", index)
    for word, index in parsed.positionals[1:]:
        if word.endswith(".whl") and "://" not in word:
            producer, _ = _fresh_file(inv, inv.path(word))
            if producer is not None:
                inv.unknown(f"`{inv.name}` installs the wheel `{show(word)}`, which {producer} wrote earlier in this "
                            "command: its code (scripts, `.pth` files run at every start) cannot be seen into", index)


def _fresh_archive(inv: Invocation, directory: str) -> str | None:
    """A wheel or source archive this text wrote in ``directory`` (not by a build), or None."""
    from stockade.analyzer.effects import Write

    if UNKNOWN in directory or not wrote_anything(inv.walker):
        return None
    base = directory.rstrip("/") + "/"
    for effect in inv.walker.effects:
        path = effect.path if effect.__class__ is Write else ""
        if path.startswith(base) and "/" not in path[len(base):] and path.endswith(
                (".whl", ".tar.gz", ".zip", ".tgz", ".tar.bz2")) and written_by(inv.walker, path) is not None:
            return path
    return None


def _pip_values() -> set[str]:
    from stockade.analyzer.models.packages import _PIP_VALUES

    return set(_PIP_VALUES)


# -- uv, poetry, pdm: pyproject.toml's indexes ---------------------------------------------------

#: tables of pyproject.toml (and uv.toml) whose keys name indexes
_INDEX_TABLES = re.compile(r"^\s*\[\[?\s*(?:tool\.uv(?:\.index|\.pip)?|tool\.poetry\.source|tool\.pdm\.source|"
                           r"index|pip)\s*\]\]?\s*$")
_INDEX_KEYS = frozenset({"url", "index-url", "extra-index-url", "find-links", "default-index"})
_TOML_KEY = re.compile(r"""^\s*([A-Za-z0-9_.-]+)\s*=\s*(.*)$""")
_TOML_STRING = re.compile(r"""(["'])(.*?)\1""")
_PROJECT_VALUES = {"--directory", "--project", "-C", "--cwd", "--config-file", "-p", "--python"}


def _project(inv: Invocation) -> None:
    """uv/poetry/pdm subcommands that resolve: the ``pyproject.toml`` (uv: ``uv.toml``) this text wrote."""
    parsed = parse_options(inv.argv, _PROJECT_VALUES, stop_at_first_positional=True)
    if not parsed.positionals or parsed.positionals[0][0] not in (
            "sync", "lock", "add", "install", "update", "run", "build", "export", "tree", "pip"):
        return
    sub, index = parsed.positionals[0]
    directory = next((value for value, _ in parsed.values_of("--directory", "--project", "-C", "--cwd")), ".")
    for name in ("pyproject.toml", "uv.toml") if inv.name == "uv" else ("pyproject.toml",):
        producer, text = _fresh_file(inv, inv.path(directory.rstrip("/") + "/" + name))
        if producer is None:
            continue
        if text is None:
            inv.unknown(f"`{inv.name} {sub}` builds and installs from `{name}`, which {producer} wrote earlier in this "
                        "command: its build code and indexes cannot be seen into", index)
            return
        _indexes(inv, text, index)


def _indexes(inv: Invocation, text: str, index: int) -> None:
    """The index URLs of TOML ``text`` (appended text after an UNKNOWN: its table not known, so
    any index key counts) are contacted."""
    in_table = text[:1] == UNKNOWN
    for line in text.lstrip(UNKNOWN).splitlines()[:2000]:
        if line.lstrip().startswith("["):
            in_table = bool(_INDEX_TABLES.match(line))
            continue
        match = _TOML_KEY.match(line)
        if not in_table or match is None or match.group(1) not in _INDEX_KEYS:
            continue
        for _, value in _TOML_STRING.findall(match.group(2)):
            if UNKNOWN in value:
                inv.unknown(f"`{inv.name}` uses an index that is not known (`{show(value)}`)", index)
            elif "://" in value:
                contact_url(inv, value, index, 443)


# -- JVM tools: proxies in system properties --------------------------------------------------------

_PROXY_PROPERTY = re.compile(r"-D(https?\.proxyHost|socksProxyHost|ftp\.proxyHost|proxyHost)=(.+)")
_PROXY_PORTS = {"https.proxyHost": ("https.proxyPort", 443), "http.proxyHost": ("http.proxyPort", 80),
                "socksProxyHost": ("socksProxyPort", 1080), "ftp.proxyHost": ("ftp.proxyPort", 80),
                "proxyHost": ("proxyPort", 80)}


def _jvm_proxies(inv: Invocation) -> None:
    """``-Dhttps.proxyHost=H [-Dhttps.proxyPort=P]``: the tool's connections go to ``H``."""
    words: list[tuple[str, int | None]] = []
    argv = inv.argv
    for index, word in enumerate(argv[1:], start=1):
        if word in ("-D", "--system-prop") and index + 1 < len(argv):  # (`mvn -D proxyHost=H`)
            words.append(("-D" + argv[index + 1], index + 1))
        elif word.startswith("--system-prop="):
            words.append(("-D" + word.partition("=")[2], index))
        elif word.startswith("-D"):
            words.append((word, index))
    if inv.name in ("gradle", "gradlew", "mvn", "mvnw", "mvnd"):
        words += _property_files(inv)
    properties: dict[str, tuple[str, int | None]] = {}
    for word, at in words:
        if "=" in word:
            key, _, value = word[2:].partition("=")
            properties[key] = (value, at)
    for word, at in words:
        match = _PROXY_PROPERTY.fullmatch(word)
        if match is None:
            continue
        host = match.group(2).strip()
        port_key, default = _PROXY_PORTS[match.group(1)]
        port_text = properties.get(port_key, (str(default), at))[0].strip()
        if UNKNOWN in host:
            inv.unknown(f"`{inv.name}` sends its connections through a proxy that is not known (`{show(word)}`)", at)
            continue
        inv.network(host, int(port_text) if port_text.isdigit() else None, at)


#: files a JVM build reads its system properties and JVM options from, in the project
_PROPERTY_FILES = {"gradle": ("gradle.properties",), "gradlew": ("gradle.properties",),
                   "mvn": (".mvn/jvm.config", ".mvn/maven.config"), "mvnw": (".mvn/jvm.config", ".mvn/maven.config"),
                   "mvnd": (".mvn/jvm.config", ".mvn/maven.config")}


def _property_files(inv: Invocation) -> list[tuple[str, int | None]]:
    """The system properties of the build's property files this text wrote (``systemProp.X=V``
    in gradle.properties, ``-DX=V`` in ``.mvn/jvm.config``), as ``-DX=V`` words; a file with
    content not known (``org.gradle.jvmargs`` may load an agent) is unknown code."""
    directory = next((inv.argv[at + 1] for at in range(1, len(inv.argv) - 1)
                      if inv.argv[at] in ("-p", "--project-dir")), ".")
    found: list[tuple[str, int | None]] = []
    for name in _PROPERTY_FILES.get(inv.name, ()):
        producer, text = _fresh_file(inv, inv.path(directory.rstrip("/") + "/" + name))
        if producer is None:
            continue
        if text is None:
            inv.unknown(f"`{inv.name}` reads `{name}`, which {producer} wrote earlier in this command: its settings "
                        "(JVM options, proxies) cannot be seen into", 0)
            continue
        for line in text.replace(UNKNOWN, "\n").splitlines()[:2000]:
            line = line.strip()
            if line.startswith("systemProp."):
                found.append(("-D" + line[len("systemProp."):].replace(" = ", "=").replace(": ", "="), None))
            elif line.startswith("org.gradle.jvmargs"):  # (the daemon's JVM options: an agent loads code)
                key, _, value = line.partition("=") if "=" in line else line.partition(":")
                if key.strip() == "org.gradle.jvmargs":
                    from stockade.analyzer.models.buildtools import jvm_options

                    jvm_options(inv, value.strip(), None, f"`org.gradle.jvmargs` in `{name}`")
            else:
                found += [(word, None) for word in line.split() if word.startswith("-D")]
    return found


# -- package runners: more packages, shell code ---------------------------------------------------

def _uvx(inv: Invocation) -> None:
    """``uvx [--with PKG]… TOOL`` / ``uv tool run --with PKG TOOL``: PKG is installed and loaded."""
    from stockade.analyzer.models.runners import _UVX_VALUES

    start = 1
    if inv.name == "uv":
        words = inv.argv
        at = next((i for i in range(1, len(words) - 1) if words[i] == "tool" and words[i + 1] == "run"), None)
        at = at + 1 if at is not None else next((i for i, w in enumerate(words) if w == "x" and i > 0), None)
        if at is None:
            return
        start = at + 1
    parsed = parse_options(inv.argv, set(_UVX_VALUES), start=start, stop_at_first_positional=True)
    for value, index in parsed.values_of("--with"):
        inv.unknown(f"`{inv.name} --with {show(value)}` installs and loads the packages `{show(value)}`, which cannot "
                    "be seen into", index)


def _npm_exec_code(inv: Invocation) -> None:
    """``npm exec -c CODE`` / ``npx -c CODE``: CODE runs with the packages' programs first on PATH."""
    words = inv.argv
    start = 1
    if inv.name in ("npm", "pnpm", "yarn", "bun"):
        sub = next(((i, w) for i, w in enumerate(words[1:], start=1) if not w.startswith("-")), None)
        if sub is None or sub[1] not in ("exec", "x"):
            return
        start = sub[0] + 1
    index = start
    while index < len(words):  # (the package's own options, after its name, are not npx's: `npx prettier -c .`)
        word = words[index]
        if word in ("-p", "--package", "-w", "--workspace") and index + 1 < len(words):
            index += 2
            continue
        if not word.startswith("-"):
            return
        if word in ("-c", "--call") or word.startswith("--call="):
            inv.unknown(f"`{inv.name} {'exec ' if inv.name != 'npx' else ''}-c` runs shell code with the programs "
                        "of the packages (`node_modules/.bin`) first on `PATH`: what a name runs cannot be seen into",
                        index)
            return
        if word == "--":
            return
        index += 1


_wrap("go", _go)
_wrap("pip pip3 pip3.10 pip3.11 pip3.12 pip3.13 uv-pip", _pip)
_wrap("uv poetry pdm", _project)
_wrap("gradle gradlew mvn mvnw mvnd java sbt ant kotlin groovy scala jbang", _jvm_proxies)
_wrap("uvx uv", _uvx)
_wrap("npm npx pnpm", _npm_exec_code)
