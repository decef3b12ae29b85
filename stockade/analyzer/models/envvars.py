"""Environment variables that make later programs run code or load libraries.

A value assigned to one of these (as a command prefix or exported) is shell code (or a
program) that some tool will run: it is parsed and walked like ``sh -c``.
"""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN, Read, SpanT, Unknown, Write, show
from stockade.analyzer.models.netconfig import CONFIG_VARS, judge_config_var
from stockade.analyzer.models.netenv import ENDPOINT_SUFFIXES, NET_VARS, java_proxies, judge_net_var
from stockade.analyzer.models.optionvars import OPTION_VARS, harmless_options
from stockade.analyzer.models.programs import judge_program

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.walker import Walker

#: variables whose value is a command line run through a shell
COMMAND_VARS = frozenset({
    "PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL", "GIT_EDITOR", "SUDO_EDITOR",
    "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND",
    "LESSOPEN", "LESSCLOSE", "PROMPT_COMMAND", "GIT_SEQUENCE_EDITOR", "BROWSER", "FCEDIT", "RSYNC_RSH",
    "CVS_RSH", "PERL5DB", "GIT_EXEC_PATH-cmd", "SYSTEMD_EDITOR", "BUNDLER_EDITOR", "HGEDITOR", "SVN_EDITOR",
    "PSQL_PAGER", "PSQL_EDITOR", "KUBE_EDITOR",
    "P4EDITOR", "TIG_EDITOR", "LESSEDIT",
    # programs build tools run in place of (or wrapped around) their compilers
    "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTC", "RUSTDOC", "CARGO_BUILD_RUSTC_WRAPPER", "CC", "CXX",
    "CCACHE_PREFIX", "CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER", "CARGO_BUILD_RUSTC",
    "CARGO_BUILD_RUSTDOC", "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
    # (the pagers of bat and delta)
    "BAT_PAGER", "DELTA_PAGER",
})
#: variables that load code the analyzer cannot see
CODE_VARS = frozenset({
    "LD_PRELOAD", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "ENV",
    "PYTHONSTARTUP", "PERL5OPT", "RUBYOPT", "NODE_OPTIONS", "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR", "GIT_CONFIG_PARAMETERS", "SHELLOPTS", "BASHOPTS",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "GCONV_PATH", "PYTHONHOME",
    "PYTHONINSPECT", "PERL5DB", "LUA_INIT", "LUA_PATH", "LUA_CPATH", "ZDOTDIR", "GIT_EXTERNAL_DIFF",
    "MAVEN_OPTS", "GRADLE_OPTS", "SBT_OPTS", "DOTNET_STARTUP_HOOKS", "R_PROFILE_USER", "R_ENVIRON_USER",
    # (a module Python imports by its name from `sys.path`, the working directory first; OpenSSL's
    # configuration loads engines and providers, shared objects, for Python, curl, git …)
    "_PYTHON_SYSCONFIGDATA_NAME", "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES",
    # (options or start-up code of man, vim, ex, the BEAM, Lua versions)
    "MANOPT", "VIMINIT", "EXINIT", "GVIMINIT", "MYVIMRC", "ERL_FLAGS", "ERL_AFLAGS", "ERL_ZFLAGS",
    "ELIXIR_ERL_OPTIONS", "LUA_INIT_5_4", "LUA_INIT_5_3", "LUA_INIT_5_2", "LUA_PATH_5_4", "LUA_CPATH_5_4",
    "PHPRC", "PHP_INI_SCAN_DIR", "CORECLR_PROFILER_PATH", "CORECLR_ENABLE_PROFILING", "JULIA_LOAD_PATH",
    "R_PROFILE",
})
#: variables naming one file (or, for the loader's, a list) that programs read and run or load
SOURCED_VARS = frozenset({"BASH_ENV", "ENV", "PYTHONSTARTUP", "LD_PRELOAD", "LD_AUDIT", "DYLD_INSERT_LIBRARIES"})
#: variables that make an interpreter import code from the directories they list: code from
#: the workspace is the project's own (``PYTHONPATH=src``), from elsewhere it cannot be seen into
PATH_LIST_VARS = frozenset({"PYTHONPATH", "NODE_PATH", "PERL5LIB", "PERLLIB", "RUBYLIB", "CLASSPATH", "FPATH",
                            "GEM_PATH", "GUILE_LOAD_PATH", "TCLLIBPATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH"})
#: variables naming a file (``MAKEFILES``: files separated by blanks) or directories (separated by
#: ``:``) of code or configuration that a tool loads: judged as :func:`~.devtools.foreign_file`
#: judges an option's (the project's own below the workspace, and the user's real ones, are read;
#: one elsewhere where the agent can write, or that this text wrote, is unknown code)
FOREIGN_VARS = frozenset({"CMAKE_TOOLCHAIN_FILE", "MAKEFILES", "BAT_CONFIG_PATH", "YARN_YARN_PATH",
                          "CMAKE_PROJECT_INCLUDE", "CMAKE_PROJECT_INCLUDE_BEFORE"})
#: (Python's user site directory, whose ``.pth`` files run at start; Julia's depots, with
#: ``config/startup.jl`` and packages; R's libraries; gawk's ``-f``/``@include`` search path and
#: extensions; vim's runtime directory; the configuration directories of every XDG tool: nvim's
#: ``init.lua``, git's config)
FOREIGN_DIR_VARS = frozenset({"PYTHONUSERBASE", "JULIA_DEPOT_PATH", "R_LIBS", "R_LIBS_USER", "R_LIBS_SITE",
                              "AWKPATH", "AWKLIBPATH", "VIMRUNTIME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS"})
#: variables naming a lesskey file: its ``#env`` section can set ``LESSOPEN`` (a program less runs)
LESSKEY_VARS = frozenset({"LESSKEY", "LESSKEYIN", "LESSKEY_SYSTEM", "LESSKEYIN_SYSTEM", "LESSKEY_CONTENT"})
#: variables naming a file (False) or a directory (True) that programs write: ``SSLKEYLOGFILE``
#: (TLS keys appended by curl, python, browsers), git's object store, build and cache directories
WRITTEN_VARS = {"SSLKEYLOGFILE": False, "GIT_OBJECT_DIRECTORY": True, "CARGO_TARGET_DIR": True,
                "GOCACHE": True, "GOMODCACHE": True, "PIP_CACHE_DIR": True, "npm_config_cache": True,
                "NPM_CONFIG_CACHE": True, "CCACHE_DIR": True}
#: prompt strings: bash expands them (substitutions run) when it prints them (``PS4`` under ``set -x``)
PROMPT_VARS = frozenset({"PS0", "PS1", "PS2", "PS4"})


#: variables that are another one under a tool's own name (npm passes ``npm_config_node_options``
#: to the scripts it runs as ``NODE_OPTIONS``)
ALIAS_VARS = {"npm_config_node_options": "NODE_OPTIONS", "NPM_CONFIG_NODE_OPTIONS": "NODE_OPTIONS",
              "yarn_node_options": "NODE_OPTIONS", "YARN_NODE_OPTIONS": "NODE_OPTIONS"}
#: rustc flag variables: a ``-C linker=PROG`` in them is a program cargo and rustc run
RUSTFLAG_VARS = frozenset({"RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS", "RUSTDOCFLAGS",
                           "CARGO_BUILD_RUSTDOCFLAGS"})


#: compiler and linker flag variables (make's implicit rules, configure, cgo, CMake's first run
#: pass them to the compiler): ``-wrapper PROG``, ``-B DIR``, ``-fplugin=``, ``-fuse-ld=PATH`` in
#: them run programs, as on the compiler's command line
CFLAG_VARS = frozenset({"CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "FFLAGS", "OBJCFLAGS", "CGO_CFLAGS",
                        "CGO_CXXFLAGS", "CGO_CPPFLAGS", "CGO_FFLAGS", "CGO_LDFLAGS", "EXTRA_CFLAGS", "KCFLAGS",
                        "HOSTCFLAGS", "HOSTLDFLAGS", "CCFLAGS", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"})


def judge_cflags(walker: Walker, name: str, value: str, span: SpanT) -> None:
    """``CFLAGS='-wrapper /tmp/x'``: the flags are judged as the compiler's own options would be
    (``cc FLAGS``, see :func:`~stockade.analyzer.models.buildtools.model_cc`)."""
    import shlex

    if "\x00" in value:
        if "-" in value.replace("\x00", ""):
            walker.effects.append(Unknown(f"`{name}` holds compiler flags not known before it runs "
                                          f"(`{show(value)}`)", span))
        return
    try:
        words = shlex.split(value)
    except ValueError:
        words = value.split()
    if any(word[:2] in ("-B", "-f", "-w", "-s", "--", "-W", "-X", "-i") or word[:1] == "@" for word in words):
        walker.nested_script(shlex.join(["cc", *words]), span, exact=False, subshell=True)


def warning_imports(filters: str) -> bool:
    """Python warning filters (``-W``, ``PYTHONWARNINGS``: ``action:message:category:module:line``,
    comma-separated) name a category by a dotted name that Python imports (``ignore::evil.X``),
    or one not known here."""
    for entry in filters.split(","):
        fields = entry.split(":")
        if "\x00" in entry or (len(fields) > 2 and "." in fields[2]):
            return True
    return False


def _rust_linkers(walker: Walker, name: str, value: str, span: SpanT) -> None:
    """``RUSTFLAGS='-C linker=PROG'`` (``-Clinker=``, ``--codegen linker=``): PROG is run."""
    words = value.replace("\x1f", " ").split()  # (CARGO_ENCODED_RUSTFLAGS separates flags with 0x1f)
    for position, word in enumerate(words):
        setting = word[2:] if word.startswith("-C") and len(word) > 2 else (
            words[position + 1] if word in ("-C", "--codegen") and position + 1 < len(words) else
            word.partition("=")[2] if word.startswith("--codegen=") else "")
        key, eq, program = setting.partition("=")
        if eq and key == "linker":
            judge_program(walker, program, span, f"`{name}` (`-C {key}=`)")


def _known_startup(walker: Walker, name: str, value: str, span: SpanT) -> bool:
    """``BASH_ENV=f`` (``ENV=f``): the shells started with it source ``f`` first.  When this
    command text wrote ``f`` with a known content (``echo CODE > f; BASH_ENV=f bash -c …``),
    that content is walked as the shell code it is (True); else (False) it cannot be seen into."""
    from stockade.analyzer.models.fresh import known_content

    path = walker.resolve(value)
    text = known_content(walker, path)
    if text is None or "\x00" in text:
        return False
    walker.effects.append(Read(path, span))
    walker.nested_script(text, span, exact=False, subshell=True)
    return True


def _foreign_var(walker: Walker, name: str, value: str, span: SpanT) -> None:
    """``CMAKE_TOOLCHAIN_FILE=/tmp/t.cmake``: each file named is read, and is code that cannot be
    seen into when it lies outside the workspace where the agent can write, or this text wrote it."""
    from stockade.analyzer.models.fresh import written_by
    from stockade.analyzer.models.programs import agent_writable

    workspace = walker.context.workspace.rstrip("/") + "/"
    written = walker.command[span[0]:span[1]]
    inherited = f"${name}" in written or "${" + name in written  # (`R_LIBS=lib:$R_LIBS`: its own value)
    entries = value.split() if name == "MAKEFILES" else value.split(":") if name in FOREIGN_DIR_VARS else [value]
    for entry in entries:
        if not entry or (inherited and entry == UNKNOWN):
            continue
        if "\x00" in entry:
            walker.effects.append(Unknown(f"`{name}` makes a tool load code from a file that is not known "
                                          f"(`{show(entry)}`)", span))
            return
        path = walker.resolve(entry)
        walker.effects.append(Read(path, span))
        producer = written_by(walker, path, False)
        if producer is not None or (not path.startswith(workspace) and agent_writable(walker, path)):
            why = f"{producer} wrote it earlier in this command" if producer else "it lies where the agent can write"
            walker.effects.append(Unknown(f"`{name}` makes a tool load the code or configuration in `{show(entry)}`, "
                                          f"and {why}: it cannot be seen into", span))
            return


def judge_env_var(walker: Walker, name: str, value: str, span: SpanT) -> None:
    """Walk the code an environment variable will make some program run."""
    name = ALIAS_VARS.get(name, name)
    if name in RUSTFLAG_VARS:
        _rust_linkers(walker, name, value, span)
        return
    if name[:13] == "CARGO_TARGET_" and name.endswith(("_LINKER", "_RUNNER")):
        judge_program(walker, value, span, f"`{name}`")
        return
    if name in CFLAG_VARS:
        judge_cflags(walker, name, value, span)
        return
    if name in NET_VARS or name.endswith(ENDPOINT_SUFFIXES):  # (proxies, servers, CA bundles, TLS: see .netenv)
        judge_net_var(walker, name, value, span)
        return
    if "roxy" in value and name in OPTION_VARS:  # (`JAVA_TOOL_OPTIONS=-Dhttps.proxyHost=H`)
        java_proxies(walker, value, span)
    if name in CONFIG_VARS:  # (`WGETRC=f`, `CURL_HOME=d`: a tool's configuration: see .netconfig)
        judge_config_var(walker, name, value, span)
    elif name in COMMAND_VARS:
        if value.strip() in ("", "cat", "less", "more", "less -R", "less -FRX", "vim", "vi", "nano", "code --wait"):
            return
        if name in ("LESSOPEN", "LESSCLOSE"):  # `|cmd %s`, `||cmd %s`, `-cmd`: a pipe or a file preprocessor
            value = value.lstrip("|-").replace("%s", "file")
        judge_program(walker, value, span, f"`{name}`")
    elif name in FOREIGN_VARS or name in FOREIGN_DIR_VARS:
        if value:
            _foreign_var(walker, name, value, span)
    elif name in LESSKEY_VARS:
        if value not in ("", "/dev/null"):
            walker.effects.append(Unknown(f"`{name}` makes less load key bindings and variables (which can set an "
                                          f"input preprocessor) from `{show(value)}`", span))
    elif name in PROMPT_VARS:
        if "\x00" in value:
            walker.effects.append(Unknown(f"`{name}` is set to a prompt that is not known (`{show(value)}`)", span))
        elif "$" in value or "`" in value:
            walker.nested_script(": " + value, span, exact=False, subshell=True)
    elif name.startswith("BASH_FUNC_"):  # env 'BASH_FUNC_ls%%=() { …; }': a function bash imports
        function = name[len("BASH_FUNC_"):].partition("%")[0] or "f"
        if "\x00" in value:
            walker.effects.append(Unknown(f"`{name}` defines a function that is not known (`{show(value)}`)", span))
        else:
            walker.nested_script(f"{function}{value}\n{function}", span, exact=False, subshell=True)
    elif name in PATH_LIST_VARS:
        workspace = walker.context.workspace.rstrip("/") + "/"
        written = walker.command[span[0]:span[1]]
        inherited = f"${name}" in written or "${" + name in written  # (`P="$PWD/src:$P"`: P's own value)
        for entry in value.split(":"):
            if inherited and (entry == UNKNOWN or not entry):
                continue  # (what the variable held when the command started: loaded anyway, without it)
            if inherited and entry.endswith(UNKNOWN) and UNKNOWN not in entry[:-1]:
                entry = entry[:-1]  # (`src${P:+:$P}`: the entry, then maybe P's own value)
            path = walker.resolve(entry) if entry else walker.state.cwd
            if "\x00" in path or not (path + "/").startswith(workspace):
                walker.effects.append(Unknown(f"`{name}` makes programs load code from `{show(path)}`, "
                                              "which cannot be seen into", span))
                return
    elif name in OPTION_VARS and "\x00" not in value and harmless_options(name, value):
        return  # `NODE_OPTIONS=--max-old-space-size=4096`: tuning only (see .optionvars)
    elif name in SOURCED_VARS and value and "\x00" not in value:
        if name in ("BASH_ENV", "ENV") and _known_startup(walker, name, value, span):
            return
        for entry in value.replace(":", " ").split() if name.startswith("LD_") else [value]:
            walker.effects.append(Read(walker.resolve(entry), span))  # (the file is read to be run or loaded)
        walker.effects.append(Unknown(f"`{name}` makes programs load code that cannot be seen into", span))
    elif name == "PYTHONPYCACHEPREFIX" and value:  # (Python writes the modules it compiles below it)
        walker.effects.append(Write(walker.resolve(value), span, recursive=True))
    elif name in WRITTEN_VARS and value and "\x00" not in value:  # (a file or directory programs write)
        walker.effects.append(Write(walker.resolve(value), span, recursive=WRITTEN_VARS[name]))
    elif name in ("PGHOST", "MYSQL_HOST") and value and "\x00" not in value and \
            not value.startswith("/"):  # (the database server the client connects to; a path: a socket)
        from stockade.analyzer.effects import Network

        for host in value.split(","):
            walker.effects.append(Network(host.strip().lower(), None, span))
    elif name == "PYTHONWARNINGS" and warning_imports(value):
        walker.effects.append(Unknown(f"`{name}` makes Python import the module of a warning category "
                                      f"(`{show(value)}`), which cannot be seen into", span))
    elif name == "PERL5OPT" and "\x00" not in value and ("-M" in value or "-m" in value):
        import shlex  # (perl reads its switches from it, split at white space: `-Mwarnings;system(…)` runs code)

        walker.effects.append(Unknown(f"`{name}` makes programs load code that cannot be seen into", span))
        walker.nested_script(shlex.join(["perl", *value.split(), "-e", "0"]), span, exact=False, subshell=True)
    elif name in CODE_VARS or name.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")):
        walker.effects.append(Unknown(f"`{name}` makes programs load code that cannot be seen into", span))
