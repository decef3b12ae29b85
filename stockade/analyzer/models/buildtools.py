"""Build tools and what runs around them: JVM builds, compilers' plugins, task runners, VMs and CI
runners, and the DuckDB shell.

* **maven** (``mvn``, ``mvnw``) and **gradle** (``gradle``, ``gradlew``) run the project's own
  build (its code, as ``make`` runs the Makefile).  What the command line adds is judged: a
  settings, toolchains or init script file (``mvn -s``, ``gradle -I``) is code or configuration
  the tool runs (``foreign``: unknown when it lies outside the workspace where the agent can
  write, or this text wrote it); ``-Dexec.executable=PROG`` with the exec plugin runs PROG;
  a plugin named by its coordinates (``group:artifact:version:goal``) is downloaded and run
  without the project naming it; ``deploy`` publishes to a repository the build file names;
  ``gradle --scan`` uploads the build to scans.gradle.com; log and local-repository options
  write.
* **task runners**: ``nodemon --exec CMD``, ``chokidar PATTERN -c CMD``, ``concurrently CMD…`` (and its ``--teardown``),
  ``pm2 start CMD``: the commands they run are shell code, walked; ``pm2 startup`` installs a
  boot service.
* **injected code**: plugins, preloaded modules, agents and search directories given to a
  compiler or interpreter (``gcc -fplugin=``, ``-B``, ``-wrapper``, ``javac -processorpath``,
  ``node -r``/``--import``, ``ruby -r``/``-I``, ``perl -I``, ``php -d auto_prepend_file=``,
  ``java -javaagent:``/``-cp``) are ``foreign`` code (see below);
* **elsewhere**: VMs, system containers and CI runners (vagrant, lxc, multipass, kind, act,
  gitlab-runner, earthly …) run commands from files or machines the command does not show;
  ``poetry self add`` installs poetry plugins, ``mise use -g`` writes the global config;
* **duckdb** ``[DB] [SQL…]``, ``-c``/``-s``/``-cmd SQL``: dot-commands as the sqlite3 shell's
  (``.shell`` runs shell code), table functions and ``FROM 'file'`` read the files they name,
  ``COPY … TO 'file'`` writes, ``INSTALL``/``LOAD`` load extensions that cannot be seen into.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, parse_options, register
from stockade.analyzer.models.coderunners import sqlite_text
from stockade.analyzer.models.devtools import FOREIGN, apply, foreign_file
from stockade.analyzer.models.fresh import run_file
from stockade.analyzer.models.net import contact_url, inspector
from stockade.analyzer.models.programs import judge_program

T = "text"
W = "write"
PROP = "property"

# -- maven -------------------------------------------------------------------------------------

#: mvn options that take a value (maven's short options may have several letters: -gs, -pl)
_MVN_VALUES: dict[str, str] = {
    "-s": FOREIGN, "--settings": FOREIGN, "-gs": FOREIGN, "--global-settings": FOREIGN, "-t": FOREIGN,
    "--toolchains": FOREIGN, "-gt": FOREIGN, "--global-toolchains": FOREIGN, "-f": FOREIGN, "--file": FOREIGN,
    "-l": W, "--log-file": W, "-P": T, "--activate-profiles": T, "-pl": T, "--projects": T, "-rf": T,
    "--resume-from": T, "-T": T, "--threads": T, "-b": T, "--builder": T, "-D": PROP, "--define": PROP,
    "-emp": T, "--encrypt-master-password": T, "-ep": T, "--encrypt-password": T, "--color": T,
}
#: system properties whose value is a path maven writes below, or code it loads
_MVN_PROPERTIES: dict[str, str] = {
    "maven.repo.local": "writer", "maven.ext.class.path": FOREIGN, "exec.workingdir": T,
    "outputDirectory": "writer", "maven.multiModuleProjectDirectory": T,
}
#: goals and phases that publish artifacts to a repository named by the build file or settings
_MVN_PUBLISH = frozenset({"deploy", "deploy:deploy", "deploy:deploy-file", "release:perform", "site-deploy",
                          "site:deploy", "wagon:upload", "wagon:upload-single"})


#: build properties whose value is options for a JVM the build starts (gradle's daemon, the
#: test JVMs of maven's surefire and failsafe)
_JVM_OPTION_PROPERTIES = frozenset({"org.gradle.jvmargs", "argLine", "maven.surefire.argLine", "jvm",
                                    "failsafe.argLine", "surefire.argLine"})


def jvm_options(inv: Invocation, options: str, index: int | None, what: str) -> None:
    """JVM options given through a build property (``-Dorg.gradle.jvmargs=-javaagent:A.jar``,
    ``-DargLine=-agentpath:L.so``): an agent or a boot class path is code loaded into the JVM
    (see :func:`injected`)."""
    for word in options.split():
        if word.startswith(("-javaagent:", "-agentpath:")):
            injected(inv, word.partition(":")[2].partition("=")[0], index, f"{what} (`{word.partition(':')[0]}`)")
        elif word.startswith(("-Xbootclasspath/a:", "-Xbootclasspath/p:", "-Xbootclasspath:")):
            injected(inv, word.partition(":")[2], index, f"{what} (`-Xbootclasspath`)", separator=":")


def _option_value(argv: list[str], index: int, name: str, eq: str, attached: str) -> tuple[str, int] | None:
    """The value of the option ``name`` at ``index`` and where it stands: attached to a long
    option (``--opt=v``) or the next word; None when the words end first."""
    if eq and name.startswith("--"):
        return attached, index
    if index + 1 < len(argv):
        return argv[index + 1], index + 1
    return None


def model_maven(inv: Invocation) -> None:
    """``mvn [OPTIONS] [GOALS/PHASES]`` (see the module docstring)."""
    argv = inv.argv
    properties: dict[str, tuple[str, int]] = {}
    goals: list[tuple[str, int]] = []
    index = 1
    while index < len(argv):
        word = argv[index]
        name, eq, attached = word.partition("=")
        if word.startswith("-D") and len(word) > 2:
            key, _, value = word[2:].partition("=")
            properties[key] = (value, index)
        elif word in ("-D", "--define") and index + 1 < len(argv):
            key, _, value = argv[index + 1].partition("=")
            properties[key] = (value, index + 1)
            index += 1
        elif word.startswith("-") and name in _MVN_VALUES:
            found = _option_value(argv, index, name, eq, attached)
            if found is None:
                break
            value, at = found
            index = max(index, at)
            role = _MVN_VALUES[name]
            if role != T:
                apply(inv, role, value, at, f"`{inv.name} {name}`")
        elif not word.startswith("-"):
            goals.append((word, index))
        index += 1
    for key, (value, at) in properties.items():
        prop_role = _MVN_PROPERTIES.get(key)
        if key in _JVM_OPTION_PROPERTIES:
            jvm_options(inv, value, at, f"`{inv.name} -D{key}`")
        elif prop_role is not None and prop_role != T:
            apply(inv, prop_role, value, at, f"`{inv.name} -D{key}`")
        elif "://" in value:  # (a repository: altDeploymentRepository=id::URL, remoteRepositories=URL …)
            for url in re.findall(r"[a-z][a-z0-9+.-]*://[^\s,;\"']+", value, re.I):
                contact_url(inv, url, at, 443)
    for goal, at in goals:
        if goal.count(":") >= 2:  # group:artifact[:version]:goal — a plugin the project does not name
            inv.unknown(f"`{inv.name} {show(goal)}` downloads and runs the plugin `{show(goal.rpartition(':')[0])}`,"
                        " which cannot be seen into", at)
        elif goal in _MVN_PUBLISH:
            inv.unknown(f"`{inv.name} {goal}` publishes artifacts to a repository that the build file or settings "
                        "name, which the command does not show", at)
        elif goal in ("exec:exec", "exec"):
            executable = properties.get("exec.executable")
            if executable is None:
                continue  # (the pom configures the program: the project's own build)
            arguments = properties.get("exec.args", ("", at))[0]
            judge_program(inv.walker, f"{executable[0]} {arguments}".strip(), inv.at(executable[1]),
                          f"`{inv.name} exec:exec -Dexec.executable`")
    url = properties.get("url")
    if url is not None and any(goal.startswith("deploy") for goal, _ in goals):
        contact_url(inv, url[0], url[1], 443)


# -- gradle ------------------------------------------------------------------------------------

_GRADLE_VALUES: dict[str, str] = {
    "-I": FOREIGN, "--init-script": FOREIGN, "-c": FOREIGN, "--settings-file": FOREIGN, "-b": FOREIGN,
    "--build-file": FOREIGN, "-p": FOREIGN, "--project-dir": FOREIGN, "-g": "userhome", "--gradle-user-home": "userhome",
    "--project-cache-dir": "writer", "-D": PROP, "--system-prop": PROP, "-P": T, "--project-prop": T, "-x": T,
    "--exclude-task": T, "--include-build": T, "-M": T, "--write-verification-metadata": T, "--console": T,
    "--warning-mode": T, "--max-workers": T, "--priority": T, "-F": T, "--dependency-verification": T,
    "--update-locks": T, "--tests": T, "--configuration": T, "--dependency": T, "--task": T,
}


def _gradle_home(inv: Invocation, value: str, index: int, what: str) -> None:
    """Gradle's user home (``-g DIR``): written (caches, daemons), and its ``init.d`` scripts and
    ``gradle.properties`` (JVM options: agents) are code the build loads."""
    foreign_file(inv, value, index, what)
    inv.write(value, index, recursive=True)


def model_gradle(inv: Invocation) -> None:
    """``gradle [OPTIONS] [TASKS]`` (see the module docstring)."""
    argv = inv.argv
    index = 1
    while index < len(argv):
        word = argv[index]
        name, eq, attached = word.partition("=")
        short = word[:2] if word[:1] == "-" and word[1:2] != "-" else None
        if short in ("-D", "-P", "-I", "-c", "-b", "-g", "-p", "-x", "-M", "-F") and len(word) > 2:
            role, value, at = _GRADLE_VALUES[short], word[2:], index  # (attached: -Dk=v, -I/tmp/x)
        elif word.startswith("-") and name in _GRADLE_VALUES:
            found = _option_value(argv, index, name, eq, attached)
            if found is None:
                break
            value, at = found
            index = max(index, at)
            role = _GRADLE_VALUES[name]
        else:
            if word == "--scan":
                inv.network("scans.gradle.com", 443, index)
            index += 1
            continue
        if role == PROP:
            key, _, setting = value.partition("=")
            if key == "gradle.user.home" and setting:
                _gradle_home(inv, setting, at, f"`{inv.name} -D{key}`")
            elif key == "org.gradle.java.home" and setting:  # (the JDK whose java runs the build)
                foreign_file(inv, setting, at, f"`{inv.name} -D{key}`")
            elif key in _JVM_OPTION_PROPERTIES:
                jvm_options(inv, setting, at, f"`{inv.name} -D{key}`")
        elif role == "userhome":
            _gradle_home(inv, value, at, f"`{inv.name} {name if name in _GRADLE_VALUES else short}`")
        elif role != T:
            apply(inv, role, value, at, f"`{inv.name} {name if name in _GRADLE_VALUES else short}`")
        index += 1


# -- task runners --------------------------------------------------------------------------------

_NODEMON_VALUES = {"-x": "script", "--exec": "script", "--config": FOREIGN, "-w": T, "--watch": T, "-e": T,
                   "--ext": T, "-i": T, "--ignore": T, "-d": T, "--delay": T, "--signal": T, "-C": T,
                   "--on-change-only": T, "-L": T, "--legacy-watch": T, "-P": T, "--polling-interval": T,
                   "--spawn": T, "-V": T, "--exitcrash": T, "--cwd": T}
_CONCURRENTLY_VALUES = {"-n": T, "--names": T, "-c": T, "--prefix-colors": T, "-p": T, "--prefix": T,
                        "-l": T, "--prefix-length": T, "-t": T, "--timestamp-format": T, "-s": T, "--success": T,
                        "-m": T, "--max-processes": T, "--restart-tries": T, "--restart-after": T,
                        "--default-input-target": T, "--name-separator": T, "--hide": T, "--teardown": "script",
                        "--padding-length": T}


def model_nodemon(inv: Invocation) -> None:
    """``nodemon [--exec CMD] [SCRIPT] [-- ARGS]``: CMD is shell code run on every change;
    SCRIPT is the project's node program (read)."""
    parsed = parse_options(inv.argv, _NODEMON_VALUES, stop_at_first_positional=True)
    for option, value, index in parsed.options:
        role = _NODEMON_VALUES.get(option)
        if role is None or value is None or role == T:
            continue
        apply(inv, role, value, index, f"`nodemon {option}`")
    for word, index in parsed.positionals[:1]:
        inv.read(word, index)



_CHOKIDAR_VALUES = {"-c": "script", "--command": "script", "-d": T, "--debounce": T, "-t": T, "--throttle": T,
                    "-i": T, "--ignore": T, "--polling-interval": T, "--poll-interval": T, "--poll-interval-binary": T}


def model_chokidar(inv: Invocation) -> None:
    """``chokidar PATTERN… -c CMD`` (chokidar-cli): CMD is shell code run on every change (and
    at start with ``--initial``); the patterns name what it watches (read)."""
    parsed = parse_options(inv.argv, _CHOKIDAR_VALUES)
    for option, value, index in parsed.options:
        if _CHOKIDAR_VALUES.get(option) == "script" and value is not None:
            inv.script(value, index, what=f"the command `chokidar {option}` runs on every change")
    for word, index in parsed.positionals:
        inv.read(word, index)


def model_concurrently(inv: Invocation) -> None:
    """``concurrently [OPTIONS] CMD…``: every command is shell code (``npm:NAME`` is
    ``npm run NAME``); ``--teardown CMD`` too."""
    parsed = parse_options(inv.argv, _CONCURRENTLY_VALUES)
    for option, value, index in parsed.options:
        if _CONCURRENTLY_VALUES.get(option) == "script" and value is not None:
            inv.script(value, index, what=f"the command given to `concurrently {option}`")
    for word, index in parsed.positionals:
        for prefix in ("npm:", "yarn:", "pnpm:", "bun:", "node:", "deno:"):
            if word.startswith(prefix):
                word = f"{prefix[:-1]} run {word[len(prefix):]}"
                break
        inv.script(word, index, what="a command run by `concurrently`")


def model_pm2(inv: Invocation) -> None:
    """``pm2 start|restart CMD|SCRIPT``: a command with spaces is shell code, a script the
    project's program (read); ``startup``/``save`` make the processes start at boot."""
    parsed = parse_options(inv.argv, {"--name", "-n", "-i", "--instances", "--interpreter", "--cwd", "-o",
                                      "--output", "-e", "--error", "-l", "--log", "--max-memory-restart",
                                      "--cron", "--cron-restart", "--env", "--node-args", "--watch-delay",
                                      "--namespace", "-x", "--interpreter-args"})
    words = parsed.positionals
    if not words:
        return
    sub, at = words[0]
    if sub in ("startup", "save", "unstartup", "resurrect"):
        inv.persistence(f"`pm2 {sub}` makes the processes it manages start at boot", at)
        return
    for option, value, index in parsed.options:
        if option in ("-o", "--output", "-e", "--error", "-l", "--log") and value:
            inv.write(value, index)
        elif option in ("--interpreter", "--node-args", "--interpreter-args") and value:
            inv.unknown(f"`pm2 {option}` changes the program that runs the script (`{show(value)}`)", index)
    if sub in ("start", "restart", "reload") and len(words) > 1:
        target, index = words[1]
        program = not target.endswith((".json", ".js", ".cjs", ".mjs", ".ts", ".py", ".sh")) and "/" not in target
        if " " in target or (program and UNKNOWN not in target):  # (a command line, or a program's name)
            inv.script(target, index, what=f"the command given to `pm2 {sub}`")
        else:
            inv.read(target, index)


# -- duckdb --------------------------------------------------------------------------------------

_DUCKDB_VALUES = {"-c": "sql", "-s": "sql", "-cmd": "sql", "-init": "file", "-separator": T, "-nullvalue": T,
                  "-newline": T, "-storage_version": T}
_DUCK_READ = re.compile(r"\b(?:read_\w+|glob|parquet_scan|sniff_csv|parquet_metadata|parquet_schema|"
                        r"sqlite_scan|sqlite_attach)\s*\(\s*\[?\s*'([^']*)'", re.I)
_DUCK_FROM = re.compile(r"\bfrom\s+'([^']*)'", re.I)
_DUCK_COPY = re.compile(r"\bcopy\b[^;]*?\bto\s+'([^']*)'", re.I | re.S)
_DUCK_LOAD = re.compile(r"^\s*(?:force\s+)?(install|load)\s+['\"]?([\w./~-]+)", re.I | re.M)


def duckdb_text(inv: Invocation, text: str, index: int | None) -> None:
    """DuckDB SQL and dot-commands (see the module docstring)."""
    if UNKNOWN in text:
        inv.unknown(f"duckdb runs SQL that is not known before it runs (`{show(text)[:60]}`)", index)
        return
    sqlite_text(inv, text, index or 0)
    for match in [*_DUCK_READ.finditer(text), *_DUCK_FROM.finditer(text)]:
        path = match.group(1)
        if "://" in path:
            contact_url(inv, path, index, 443)
        elif path:
            inv.read(path, index)
    for match in _DUCK_COPY.finditer(text):
        target = match.group(1)
        if "://" in target:
            contact_url(inv, target, index, 443)
        elif target:
            inv.write(target, index)
    for match in _DUCK_LOAD.finditer(text):
        inv.unknown(f"duckdb `{match.group(1).upper()} {show(match.group(2))}` loads an extension, code that "
                    "cannot be seen into", index)


def model_duckdb(inv: Invocation) -> None:
    """``duckdb [OPTIONS] [DB [SQL…]]``: the database file is written (unless ``-readonly``)."""
    argv = inv.argv
    index = 1
    positionals: list[tuple[str, int]] = []
    readonly = False
    while index < len(argv):
        word = argv[index]
        role = _DUCKDB_VALUES.get(word if not word.startswith("--") else word[1:])
        if role is not None and index + 1 < len(argv):
            value = argv[index + 1]
            if role == "sql":
                duckdb_text(inv, value, index + 1)
            elif role == "file":
                run_file(inv, value, index + 1)
            index += 2
            continue
        if word in ("-readonly", "--readonly"):
            readonly = True
        elif not word.startswith("-") or word == "-":
            positionals.append((word, index))
        index += 1
    if positionals:
        database, at = positionals[0]
        if database not in (":memory:", ""):
            if readonly:
                inv.read(database, at)
            else:
                inv.write(database, at)
        for text, at in positionals[1:]:
            duckdb_text(inv, text, at)
    if len(positionals) <= 1 and inv.stdin.text is not None:
        duckdb_text(inv, inv.stdin.text, None)
    elif len(positionals) <= 1 and inv.stdin.what != "the terminal" and not any(
            _DUCKDB_VALUES.get(w) == "sql" for w in argv):
        inv.unknown(f"duckdb runs SQL and dot-commands from {inv.stdin.what}, which cannot be seen into", None)


# -- code injected into a compiler or interpreter ---------------------------------------------------
#
# A plugin, preloaded module, agent or search directory given to a compiler or interpreter is code
# that runs inside it.  The program's own script is judged as running a file is (the project's own
# code); injected code is ``foreign``: unknown when it lies outside the workspace where the agent
# can write (/tmp) or this text wrote it.


def injected(inv: Invocation, value: str, index: int | None, what: str, separator: str = "") -> None:
    """``value`` (a file, or a ``separator``-separated list of files and directories) is code
    loaded into the program (see above)."""
    from stockade.analyzer.models.devtools import foreign_file

    for entry in value.split(separator) if separator else [value]:
        if entry and UNKNOWN in entry:
            inv.unknown(f"{what} loads code from a path that is not known (`{show(entry)}`)", index)
        elif entry:
            foreign_file(inv, entry, index, what)


#: C/C++ compiler options whose value (attached after ``=`` or as the next word) is code the
#: compiler runs or loads: option → how the value is split (``,``: the program of ``-wrapper``)
_CC_INJECTED = {"-fplugin": "", "-fpass-plugin": "", "-specs": "", "--specs": "", "-B": "", "-wrapper": ",",
                "--ld-path": "", "-fuse-ld": "", "--gcc-toolchain": ""}


def model_cc(inv: Invocation) -> None:
    """gcc/clang: ``-fplugin=SO``, ``-fpass-plugin=SO``, ``-Xclang -load -Xclang SO``,
    ``-B PREFIX`` (where it finds cc1, as, ld), ``-wrapper PROG,ARGS``, ``-specs=FILE``,
    ``-fuse-ld=/path``/``--ld-path=``: injected code (see above); then the compiler's spec."""
    argv = inv.argv
    for index, word in enumerate(argv[1:], start=1):
        name, eq, value = word.partition("=")
        if eq and name in _CC_INJECTED:
            if name == "-fuse-ld" and "/" not in value:
                continue  # (`-fuse-ld=lld`: a linker by name)
            injected(inv, value.partition(",")[0] if name == "-wrapper" else value, index, f"`{inv.name} {name}=`")
        elif word in _CC_INJECTED and index + 1 < len(argv):
            value = argv[index + 1]
            injected(inv, value.partition(",")[0] if word == "-wrapper" else value, index + 1, f"`{inv.name} {word}`")
        elif word.startswith("-B") and len(word) > 2:
            injected(inv, word[2:], index, f"`{inv.name} -B`")
        elif word == "-load" and index >= 2 and argv[index - 1] == "-Xclang" and index + 2 < len(argv):
            injected(inv, argv[index + 2], index + 2, f"`{inv.name} -Xclang -load`")
    _CC_MODEL(inv)


def model_javac(inv: Invocation) -> None:
    """javac: ``-processorpath``/``--processor-path``/``--processor-module-path`` (annotation
    processors, run while compiling), ``-J-javaagent:JAR``/``-J-agentpath:`` and ``-Xplugin:``
    from a ``-cp`` there: injected code (see above); then javac's spec."""
    argv = inv.argv
    for index, word in enumerate(argv[1:], start=1):
        if word in ("-processorpath", "--processor-path", "--processor-module-path") and index + 1 < len(argv):
            injected(inv, argv[index + 1], index + 1, f"`javac {word}`", separator=":")
        elif word.startswith(("-J-javaagent:", "-J-agentpath:")):
            injected(inv, word.partition(":")[2].partition("=")[0], index, f"`javac {word.partition(':')[0]}`")
    _JAVAC_MODEL(inv)


def model_interpreter(inv: Invocation) -> None:
    """Interpreters' preloading options (``node -r/--require/--import/--loader``, ``ruby -r/-I``,
    node's output files and directories (``--cpu-prof-dir``, ``--redirect-warnings`` …),
    ``perl -I``, ``php -d auto_prepend_file=``/``extension=``, ``java -javaagent:``/``-cp``):
    injected code (see above); then the interpreter's own model."""
    argv = inv.argv
    name = inv.name
    index = 1
    while index < len(argv):
        word = argv[index]
        if name == "java" and word[:1] == "@" and len(word) > 1:
            _java_option(inv, word, "", index)  # (`java @argfile`: options read from a file)
            index += 1
            continue
        if not word.startswith("-") or word == "--":
            break  # (the script: what follows is its arguments)
        option, eq, attached = word.partition("=")
        following = argv[index + 1] if index + 1 < len(argv) else ""
        if option in _NODE_INSPECT and name.startswith(("node", "ts-node", "tsx")):
            takes_next = option in ("--inspect-port", "--debug-port") and not eq
            inspector(inv, option, attached if eq else following if takes_next else "", index)
            index += 1 if takes_next else 0
        elif name.startswith(("node", "ts-node", "tsx")) and option in _NODE_FILES:
            value = attached if eq else following
            role = _NODE_FILES[option]
            if option == "--snapshot-blob" and "--build-snapshot" in argv[1:index]:
                role = "file"  # (`--build-snapshot --snapshot-blob F`: the snapshot is written to F)
            if value and role == "code":
                injected(inv, value, index, f"`{name} {option}`")
            elif value:
                inv.write(value, index, recursive=role == "directory")
            index += 0 if eq else 1
        elif name.startswith(("node", "ts-node", "tsx")) and option in _NODE_PRELOAD:
            value = attached if eq else following
            if value and (value.startswith((".", "/", "~", "file:")) or "/" in value):
                injected(inv, value.removeprefix("file://"), index, f"`{name} {option}`")
            index += 0 if eq else 1
        elif name == "ruby" and word[:2] in ("-r", "-I"):
            value = word[2:] or following
            if "/" in value:
                injected(inv, value, index, f"`ruby {word[:2]}`", separator=":" if word[:2] == "-I" else "")
            index += 0 if word[2:] else 1
        elif name == "perl" and word[:2] == "-I":
            injected(inv, word[2:] or following, index, "`perl -I`")
            index += 0 if word[2:] else 1
        elif name == "php" and word[:2] == "-d":
            key, _, setting = (word[2:] or following).partition("=")
            if key.strip() in ("auto_prepend_file", "auto_append_file", "extension", "zend_extension",
                               "extension_dir") and setting:
                injected(inv, setting.strip("'\""), index, f"`php -d {key.strip()}=`")
            index += 0 if word[2:] else 1
        elif name == "java":
            index += _java_option(inv, word, following, index)
        elif name in _PRELOADS and (option in _PRELOADS[name] or word[:2] in _PRELOADS[name]):
            if option not in _PRELOADS[name]:  # (`-LFILE`: the value attached)
                value, option, taken = word[2:], word[:2], 0
            elif eq and option.startswith("--"):  # (`--load=FILE`)
                value, taken = attached, 0
            else:
                value, taken = following, 1
            if value and (name != "irb" or "/" in value):  # (`irb -r json`: a library of the load path)
                injected(inv, value, index + taken, f"`{name} {option}`")
            index += taken
        index += 1
    _INTERPRETER_MODELS[name](inv)


#: java options whose value is a list of class or module directories and jars (code it loads)
_JAVA_PATHS = frozenset({"-cp", "-classpath", "--class-path", "-p", "--module-path", "--upgrade-module-path"})
#: java ``-XX:`` options naming a file the JVM writes, or a file of options it reads
_JAVA_XX_FILES = {"HeapDumpPath": "write", "ErrorFile": "write", "LogFile": "write", "Flags": FOREIGN,
                  "VMOptionsFile": FOREIGN, "CompileCommandFile": FOREIGN, "ReplayDataFile": "write"}


def _java_option(inv: Invocation, word: str, following: str, index: int) -> int:
    """One option of ``java`` before its main class or ``-jar``: ``-javaagent:``/``-agentpath:``,
    class and module paths (``-cp``, ``--class-path=``, ``--module-path``, ``-Xbootclasspath/a:``)
    and ``@argfile`` (more options, read from the file) are injected code; ``-XX:OnError=CMD``,
    ``-XX:OnOutOfMemoryError=CMD`` are command lines the JVM runs (``;`` between commands,
    ``%p`` its pid); ``-Xlog:…:file=F``, ``-Xloggc:F``, ``-XX:HeapDumpPath=F`` … write F.
    Returns how many following words it took."""
    option, eq, attached = word.partition("=")
    if word.startswith(("-javaagent:", "-agentpath:")):
        injected(inv, word.partition(":")[2].partition("=")[0], index, f"`java {word.partition(':')[0]}`")
    elif option in _JAVA_PATHS and (eq or following):
        if eq and option.startswith("--"):
            injected(inv, attached, index, f"`java {option}`", separator=":")
            return 0
        injected(inv, following, index + 1, f"`java {word}`", separator=":")
        return 1
    elif word.startswith(("-Xbootclasspath/a:", "-Xbootclasspath/p:", "-Xbootclasspath:")):
        injected(inv, word.partition(":")[2], index, f"`java {word.partition(':')[0]}`", separator=":")
    elif word[:1] == "@" and len(word) > 1:
        foreign_file(inv, word[1:], index, "`java @argfile` (options read from a file)")
    elif word.startswith("-XX:"):
        key, eq, value = word[4:].partition("=")
        if key in ("OnError", "OnOutOfMemoryError") and value:
            for command in value.split(";"):
                if command.strip():
                    judge_program(inv.walker, command.replace("%p", "4242").strip(), inv.at(index), f"`java -XX:{key}`")
        elif key in _JAVA_XX_FILES and value:
            apply(inv, _JAVA_XX_FILES[key], value, index, f"`java -XX:{key}`")
    elif word.startswith("-Xloggc:") and len(word) > 8:
        inv.write(word[8:], index)
    elif word.startswith("-Xlog:") and ":file=" in word:
        target = word.partition(":file=")[2]
        target = target[1:].partition('"')[0] if target[:1] == '"' else target.partition(":")[0]
        if target:
            inv.write(target.replace("%p", "1").replace("%t", "0"), index)
    return 0


#: interpreters' options whose value is a file of code (or configuration naming code) they load
#: before the script: julia's start-up file and system image, php's ini (``auto_prepend_file``,
#: extensions) and zend extension, irb's required library
_PRELOADS: dict[str, tuple[str, ...]] = {"julia": ("-L", "--load", "-J", "--sysimage"), "php": ("-c", "-z"),
                                         "irb": ("-r",)}
_NODE_PRELOAD = frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader"})
#: node's options naming a file or directory it writes (profiles, reports, warnings, V8's log),
#: or code and configuration it loads (``code``: a snapshot's heap, a configuration file that sets
#: options such as ``--require``; ``--build-snapshot --snapshot-blob F`` writes F instead)
_NODE_FILES = {"--cpu-prof-dir": "directory", "--heap-prof-dir": "directory", "--diagnostic-dir": "directory",
               "--report-directory": "directory", "--report-dir": "directory", "--redirect-warnings": "file",
               "--logfile": "file", "--trace-event-file-pattern": "file", "--snapshot-blob": "code",
               "--experimental-config-file": "code", "--env-file-never": "code"}
#: node's inspector options: ``--inspect[=[HOST:]PORT]`` (and ``-brk``/``-wait``), ``--inspect-port``
_NODE_INSPECT = frozenset({"--inspect", "--inspect-brk", "--inspect-wait", "--inspect-port", "--debug-port"})
_CC_MODEL = MODELS["gcc"]
_JAVAC_MODEL = MODELS["javac"]
_INTERPRETER_MODELS = {name: MODELS[name] for name in ("node", "nodejs", "ts-node", "tsx", "ruby", "perl", "php",
                                                        "java", "julia", "irb")}


# -- machines, containers and CI jobs the command line does not show --------------------------------

#: program → (the subcommands that run commands in a VM, container or CI job — None: every
#: invocation but a listing —, what they do); what runs there is in a file or machine the
#: command does not show
ELSEWHERE: dict[str, tuple[frozenset[str] | None, str]] = {
    "vagrant": (frozenset({"ssh", "up", "provision", "reload", "resume", "rsync", "powershell", "winrm", "upload"}),
                "runs commands in a Vagrant machine (its provisioners, or the command given)"),
    "lxc incus": (frozenset({"exec", "console", "launch", "start", "shell", "file", "config"}),
                  "runs commands in a system container"),
    "buildah": (frozenset({"run", "from", "copy", "add", "mount", "unshare"}), "runs commands in a build container"),
    "multipass": (frozenset({"exec", "shell", "launch", "start", "mount", "transfer"}), "runs commands in a VM"),
    "minikube": (frozenset({"ssh", "start", "mount", "cp", "kubectl", "tunnel", "service", "addons"}),
                 "runs commands in (or opens) the minikube VM"),
    "kind k3d": (frozenset({"create", "load", "cluster", "image", "node"}),
                 "starts privileged cluster containers on the host's container daemon"),
    "colima": (frozenset({"ssh", "start"}), "runs commands in the colima VM"),
    "limactl": (frozenset({"shell", "start", "copy", "create"}), "runs commands in a Lima VM"),
    "lima orb": (None, "runs a command in a VM"),
    "orbctl": (frozenset({"run", "shell", "create", "push", "pull"}), "runs commands in an OrbStack machine"),
    "toolbox distrobox": (frozenset({"run", "enter", "create", "ephemeral"}), "runs commands in a toolbox container "
                                                                          "that shares the home directory"),
    "devcontainer devpod": (frozenset({"up", "exec", "run-user-commands", "ssh", "build"}),
                            "runs the dev container's commands (from its configuration file)"),
    "act": (None, "runs the CI workflow's steps in containers, with the secrets and services they name"),
    "gitlab-runner": (frozenset({"exec", "run", "run-single"}), "runs CI jobs from the pipeline file"),
    "circleci": (frozenset({"local", "build"}), "runs CI jobs from the pipeline file in containers"),
    "earthly": (None, "runs the Earthfile's targets (commands in containers, optionally privileged)"),
    "dagger": (frozenset({"run", "call", "up", "shell", "query"}), "runs a Dagger pipeline's code"),
    "ctr": (frozenset({"run", "c", "container", "containers", "t", "task", "tasks", "snapshot"}),
                          "runs containers through containerd's socket (as root)"),
    "tkn": (frozenset({"pipeline", "p", "task", "t", "clustertask", "pipelinerun", "pr", "taskrun", "tr", "hub",
                       "bundle"}), "starts pipelines on the cluster of the kubeconfig"),
    "argo": (frozenset({"submit", "resubmit", "retry", "resume", "cron", "template"}),
             "runs workflows on the cluster of the kubeconfig"),
    "argocd flux": (frozenset({"app", "reconcile", "create", "bootstrap", "resume", "sync", "login"}),
                    "changes what the cluster of its configuration deploys"),
    # (cluster and deploy tools that talk to the server of their configuration or environment)
    "skaffold tilt devspace garden okteto": (frozenset({"run", "dev", "deploy", "up", "delete", "down", "apply",
                                                        "build", "debug", "exec", "enter", "sync", "purge",
                                                        "destroy", "test"}),
                                             "builds and deploys to the cluster of the kubeconfig as its "
                                             "configuration file says"),
    "helmfile": (frozenset({"apply", "sync", "destroy", "delete", "deps", "repos", "diff", "template", "fetch",
                            "write-values", "test"}), "installs the charts its configuration names on the cluster"),
    "cdktf": (frozenset({"deploy", "destroy", "apply", "diff", "synth", "get"}),
              "runs the CDK app's code and terraform's providers against the cloud of its configuration"),
    "fab fab2": (None, "runs the tasks of the fabfile on the remote hosts they name"),
    # (remote execution and deploy tools: commands run on the hosts of their configuration)
    "salt salt-ssh": (None, "runs commands on the minions or hosts its targets match"),
    "salt-call": (None, "runs Salt states and modules on this machine as the minion (as root)"),
    "salt-run": (None, "runs Salt runners on the master"),
    "cap capistrano mina shipit": (None, "runs the deploy tasks of its configuration on the remote servers it names"),
    "kamal mrsk": (frozenset({"deploy", "setup", "redeploy", "rollback", "app", "server", "accessory", "proxy",
                              "traefik", "build", "prune", "remove", "env", "envify", "lock", "registry", "init"}),
                   "deploys and runs commands on the servers of its configuration"),
    "dep": (frozenset({"deploy", "rollback", "run", "ssh", "provision", "setup"}),
            "runs the deploy recipe's tasks on the hosts of its configuration"),
    "pyinfra": (None, "runs operations on the hosts of its inventory"),
    "pssh parallel-ssh pdsh clush mussh dsh": (None, "runs commands on the hosts of its host list"),
    "mcollective mco": (None, "runs actions on the nodes of the collective"),
    "k9s kdash": (None, "opens an interactive console of the cluster of the kubeconfig (shells in pods, edits, "
                        "deletions)"),
    "nomad": (frozenset({"job", "run", "stop", "alloc", "exec", "node", "deployment", "namespace", "var",
                         "volume", "acl", "system", "operator", "server", "agent", "plan", "status"}),
              "changes jobs on the Nomad cluster of its environment (`NOMAD_ADDR`)"),
    "consul": (frozenset({"kv", "exec", "services", "acl", "intention", "config", "catalog", "members", "watch",
                          "lock", "event", "snapshot", "agent", "connect", "operator"}),
               "talks to the Consul cluster of its environment (`CONSUL_HTTP_ADDR`)"),
    "vault": (frozenset({"kv", "read", "write", "delete", "list", "login", "token", "secrets", "auth", "policy",
                         "operator", "ssh", "agent", "server", "unwrap", "lease", "audit", "patch"}),
              "reads or changes secrets on the Vault server of its environment (`VAULT_ADDR`)"),
    "istioctl linkerd velero kapp kn juju waypoint boundary packer": (
        frozenset({"install", "uninstall", "upgrade", "deploy", "delete", "apply", "inject", "backup", "restore",
                   "create", "service", "run", "ssh", "exec", "remove-application", "destroy-model", "build",
                   "connect", "up", "x", "kube-inject", "dashboard", "proxy-config", "init"}),
        "changes or runs code on the cluster or cloud of its configuration"),
}
_LISTING = frozenset({"-l", "--list", "--version", "-V", "--help", "-h", "-n", "--dryrun", "--dry-run", "ls", "list",
                      "status", "version", "help", "graph"})


#: tools whose `-h` names a file of hosts, not help
_HOST_LIST_TOOLS = frozenset({"pssh", "parallel-ssh", "pdsh", "clush", "mussh", "dsh"})


def model_elsewhere(inv: Invocation) -> None:
    """A program of :data:`ELSEWHERE`: unknown effects for the subcommands that run code there."""
    subcommands, what = ELSEWHERE_BY_NAME[inv.name]
    from stockade.analyzer.models.netclients import server_flags

    server_flags(inv)  # (`vault -address=URL`, `consul -http-addr H:P`: the server it talks to)
    words = [(w, i) for i, w in enumerate(inv.argv[1:], start=1) if not w.startswith("-")]
    listing = _LISTING if inv.name not in _HOST_LIST_TOOLS else _LISTING - {"-h"}  # (`pssh -h HOSTS`)
    if any(w in listing for w in inv.argv[1:2]) or (words and words[0][0] in listing):
        return
    if subcommands is None:
        inv.unknown(f"`{inv.name}` {what}, which the command does not show", 0)
        return
    for word, index in words[:2]:
        if inv.name == "vagrant" and word == "ssh" and any(w in ("-c", "--command") for w in inv.argv[index + 1:]):
            return  # (`vagrant ssh -c CMD`: a visible command run in the machine, as `ssh HOST CMD`)
        if word in subcommands:
            inv.unknown(f"`{inv.name} {word}` {what}, which the command does not show", index)
            _shared_home_command(inv, word, index)
            return


#: toolbox/distrobox options that take a value
_TOOLBOX_VALUES = frozenset({"-c", "--container", "-d", "--distro", "-r", "--release", "-n", "--name",
                             "-a", "--additional-flags", "--image", "-i"})


def _shared_home_command(inv: Invocation, sub: str, index: int) -> None:
    """``distrobox enter [NAME] -- CMD``, ``toolbox run [-c NAME] CMD``: the container shares this
    machine's home directory (and more of its files), so CMD touches the same paths as it would
    here: it is judged as run here, besides the container's unknown effects."""
    if inv.name not in ("toolbox", "distrobox") or sub not in ("run", "enter", "ephemeral"):
        return
    argv = inv.argv
    if "--" in argv[index + 1:]:
        start = argv.index("--", index + 1) + 1
    elif inv.name == "toolbox" and sub == "run":
        start = index + 1
        while start < len(argv) and argv[start].startswith("-"):
            start += 1 + (argv[start] in _TOOLBOX_VALUES)
    else:
        return
    if start < len(argv):
        inv.run(start)


ELSEWHERE_BY_NAME = {name: row for names, row in ELSEWHERE.items() for name in names.split()}


# -- plugins of package managers --------------------------------------------------------------------


def model_poetry_self(inv: Invocation) -> None:
    """``poetry self add|install|update|lock|remove``: changes poetry's own environment (its
    plugins run inside every later poetry command); else poetry's model."""
    words = [(w, i) for i, w in enumerate(inv.argv[1:], start=1) if not w.startswith("-")]
    if len(words) > 1 and words[0][0] == "self" and words[1][0] in ("add", "install", "update", "lock", "sync"):
        inv.unknown(f"`poetry self {words[1][0]}` installs packages into poetry itself: plugins run in every later "
                    "poetry command and cannot be seen into", words[1][1])
        inv.write("~/.local/share/pypoetry", words[1][1], recursive=True)
        return
    _POETRY_MODEL(inv)


def model_mise(inv: Invocation) -> None:
    """mise/rtx: ``exec``/``x TOOL -- CMD`` runs CMD; ``use -g``/``--global`` writes the global
    config (``~/.config/mise``); ``install``/``use`` download tool versions (their install
    scripts run: unknown unless the tool is pinned by the project — not visible here);
    ``run``/``r``/``watch`` run the project's tasks."""
    argv = inv.argv
    words = [(w, i) for i, w in enumerate(argv[1:], start=1) if not w.startswith("-")]
    if not words:
        return
    sub, at = words[0]
    if sub in ("exec", "x"):
        for index, word in enumerate(argv[at + 1:], start=at + 1):
            if word == "--" and index + 1 < len(argv):
                inv.run(index + 1)
                return
        return
    if sub in ("use", "u", "install", "i", "plugins", "plugin", "p", "upgrade", "up"):
        if sub in ("use", "u") and any(w in ("-g", "--global") for w in argv[at + 1:]):
            inv.write("~/.config/mise/config.toml", at)
        if sub in ("plugins", "plugin", "p"):
            for word, index in words[1:]:
                if "://" in word or word.startswith("git@"):
                    contact_url(inv, word, index, 443)
        inv.unknown(f"`{inv.name} {sub}` downloads and installs tools whose install code cannot be seen into", at)


def model_dotnet(inv: Invocation) -> None:
    """dotnet: ``new install|-i PKG`` and ``tool install|update PKG`` (global or local) download
    and install packages from NuGet (templates run their post-actions; tools are programs):
    unknown code, from api.nuget.org (or ``--add-source``/``--nuget-source``); ``workload
    install`` likewise; MSBuild switches (:func:`_msbuild_switch`); else dotnet's model."""
    argv = inv.argv
    words = [(w, i) for i, w in enumerate(argv[1:], start=1) if not w.startswith("-")]
    sub = words[0][0] if words else ""
    verb = words[1][0] if len(words) > 1 else ""
    installs = (sub == "new" and (verb in ("install", "update") or any(w in ("-i", "--install") for w in argv))) or \
        (sub in ("tool", "workload") and verb in ("install", "update", "restore"))
    if installs:
        at = words[1][1] if len(words) > 1 else words[0][1]
        inv.unknown(f"`dotnet {sub} {verb or 'install'}` downloads and installs packages whose code cannot be seen "
                    "into", at)
        sources = [argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("--add-source", "--nuget-source",
                                                                          "--source")]
        if not sources:
            inv.network("api.nuget.org", 443, at)
        for source in sources:
            if "://" in source:
                contact_url(inv, source, None, 443)
        if sub == "tool" and any(w in ("-g", "--global") for w in argv):
            inv.write("~/.dotnet/tools", at, recursive=True)
    for index, word in enumerate(argv[1:], start=1):
        if word == "--":
            break
        _msbuild_switch(inv, word, argv[index + 1] if index + 1 < len(argv) else "", index)
    _DOTNET_MODEL(inv)


#: MSBuild properties whose value is a command line the build runs (build events, ``dotnet run``'s
#: program), and those naming a file of MSBuild code it imports or a compiler it runs
_MSBUILD_COMMANDS = frozenset({"prebuildevent", "postbuildevent", "runcommand", "prelinkevent"})
_MSBUILD_IMPORTS = frozenset({
    "custombeforemicrosoftcommontargets", "customaftermicrosoftcommontargets", "custombeforemicrosoftcommonprops",
    "customaftermicrosoftcommonprops", "custombeforemicrosoftcsharptargets", "customaftermicrosoftcsharptargets",
    "directorybuildpropspath", "directorybuildtargetspath", "directorypackagespropspath", "msbuildextensionspath",
    "msbuildextensionspath32", "msbuildextensionspath64", "msbuilduserextensionspath", "roslyntargetspath",
    "csctoolpath", "vbctoolpath", "fsctoolpath", "dotnethostpath", "forceimportbeforecpptargets",
    "forceimportaftercpptargets", "nugetrestoretargets", "restoreconfigfile",
})


def _msbuild_switch(inv: Invocation, word: str, following: str, index: int) -> None:
    """One MSBuild switch of ``dotnet build|msbuild|run|test|publish|pack``: ``-p:NAME=VALUE``
    (``/p:``, ``--property:``; ``;`` between properties) setting a build event or ``RunCommand``
    runs that command line; one naming an imported targets or props file, an extensions
    directory or a compiler loads code (:func:`~.devtools.foreign_file`); ``-logger:``/``-dl:``
    with an assembly path and an ``@`` response file (more switches) likewise."""
    if word[:1] == "@" and len(word) > 1:
        foreign_file(inv, word[1:], index, "`dotnet @file` (switches read from a file)")
        return
    if word[:1] not in "-/" or ":" not in word:
        if word in ("-p", "--property") and "=" in following:  # (`dotnet run -p:` needs `:`; `-p K=V` as well)
            word = "-p:" + following
            index += 1
        else:
            return
    switch, _, rest = word.lstrip("-/").partition(":")
    switch = switch.lower()
    if switch in ("p", "property"):
        for setting in rest.split(";"):
            key, eq, value = setting.partition("=")
            key, value = key.strip().lower(), value.strip().strip('"')
            if not eq or not value:
                continue
            what = f"`dotnet -p:{key}`"
            if UNKNOWN in key:
                inv.unknown(f"`dotnet -p:` sets a build property that is not known (`{show(setting)}`)", index)
            elif key in _MSBUILD_COMMANDS:
                judge_program(inv.walker, value, inv.at(index), what)
            elif key in _MSBUILD_IMPORTS:
                foreign_file(inv, value, index, what)
    elif switch in ("logger", "l", "distributedlogger", "dl"):
        assembly = rest.split(";")[0].split("*")[0].rpartition(",")[2].strip().strip('"')
        if "/" in assembly or assembly.lower().endswith(".dll"):
            foreign_file(inv, assembly, index, f"`dotnet -{switch}:`")


_DOTNET_MODEL = MODELS["dotnet"]
register("dotnet", model_dotnet)
_POETRY_MODEL = MODELS["poetry"]
register("poetry", model_poetry_self)
register("mise rtx", model_mise)
register(" ".join(ELSEWHERE_BY_NAME), model_elsewhere)
register("gcc cc g++ c++ clang clang++", model_cc)
register("javac", model_javac)
register(" ".join(_INTERPRETER_MODELS), model_interpreter)
register("mvn mvnw mvnd", model_maven)
register("gradle gradlew", model_gradle)
register("nodemon", model_nodemon)
register("chokidar", model_chokidar)
register("concurrently", model_concurrently)
register("pm2", model_pm2)
register("duckdb", model_duckdb)

