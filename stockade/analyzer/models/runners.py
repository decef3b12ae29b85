"""Runners and wrappers: programs that run another command, given in their arguments.

Each wrapper is a :class:`Runner` — which options take a value and what that value is (a
file written, shell code, a user to become), how many operands come before the wrapped
command, and whether running it changes privilege.  The wrapped command is then modelled in
turn (``ionice -c3 taskset -c 0 rm -rf ~`` is ``rm``).  Project runners (``uv run``,
``poetry run``…) run a command of the project's environment; package runners (``npx``,
``pnpm dlx``, ``bunx``, ``uvx``, ``pipx run``) download and run a package the analyzer has not
seen, which is code it cannot see into — unless the package is a known development tool
(``npx tsc``), which is then judged by its own model.
"""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN, SpanT, TupleRecord, show
from stockade.analyzer.exec import Invocation, Stdin
from stockade.analyzer.models import MODELS, apply_role, default_model, parse_options, register, visible_operands
from stockade.analyzer.models.envvars import judge_env_var
from stockade.analyzer.models.net import contact_url
from stockade.analyzer.words import shlex_split

_NONE: frozenset[str] = frozenset()
_NO_ROLES: dict[str, str] = {}
T = "text"


class Runner(TupleRecord):
    """How a wrapper's argv is laid out.

    * ``values``: option → role of its value: a :func:`~stockade.analyzer.models.apply_role`
      role, or ``privilege`` (the option changes user or capabilities), ``persistence`` (the
      command runs later: a timer), ``env`` (``NAME=VALUE`` for the command), ``out`` (a file
      written, or ``|cmd``/``!cmd``: shell code the output is piped to);
    * ``flags``: flag → ``privilege``, ``no-command`` (the wrapper acts on a process: no
      command follows), ``user`` (the command stays unprivileged: ``systemd-run --user``),
      ``unknown:<why>``;
    * ``operands``: positionals before the command (``chrt PRIO``, ``gosu USER``);
    * ``privilege``: running it is a privilege change (its reason);
    * ``optional``: options whose value is only ever attached (``prlimit --nofile=N``);
    * ``sub``: a subcommand comes first, its options after it (``perf stat -o F CMD``)."""

    __slots__ = ()
    _fields = ("values", "flags", "operands", "privilege", "optional", "sub")
    values: dict[str, str]
    flags: dict[str, str]
    operands: int
    privilege: str | None
    optional: frozenset[str]
    sub: bool

    def __new__(cls, values: dict[str, str] = _NO_ROLES, flags: dict[str, str] = _NO_ROLES, operands: int = 0,
                privilege: str | None = None, optional: frozenset[str] = _NONE, sub: bool = False) -> Runner:
        return tuple.__new__(cls, (values, flags, operands, privilege, optional, sub))


def _t(*names: str) -> dict[str, str]:
    """Options whose value is plain text."""
    return dict.fromkeys(names, T)


_STRACE = {**_t("-e", "-p", "-P", "-s", "-S", "-I", "-O", "-X", "-a", "-b", "-U", "--trace", "--signal",
                "--status", "--string-limit", "--summary-sort-by", "--trace-path", "--attach"),
           "-o": "out", "--output": "out", "-u": "privilege", "--user": "privilege", "-E": "env", "--env": "env"}
_LTRACE = {**_t("-e", "-p", "-s", "-a", "-A", "-D", "-n", "-x", "-L", "--align", "--indent", "--demangle"),
           "-o": "out", "--output": "out", "-u": "privilege", "-F": "read", "-l": "read", "--library": "read"}
_SUDO_VALUES = {**_t("-g", "--group", "-C", "--close-from", "-h", "--host", "-p", "--prompt", "-r", "--role",
                     "-t", "--type", "-U", "--other-user", "-D", "--chdir", "-T", "--command-timeout"),
                "-u": T, "--user": T}
_SYSTEMD_RUN = {**_t("-u", "--unit", "-p", "--property", "--description", "--slice", "--nice", "--service-type",
                     "--working-directory", "-M", "--machine", "--timer-property", "--path-property",
                     "--socket-property", "--slice-inherit"),
                "-E": "env", "--setenv": "env", "--uid": "privilege", "--gid": "privilege",
                "-H": "unknown:`systemd-run -H` runs the command on another host", "--host": "unknown:"
                "`systemd-run --host` runs the command on another host",
                **dict.fromkeys(("--on-active", "--on-boot", "--on-startup", "--on-unit-active",
                                 "--on-unit-inactive", "--on-calendar", "--on-clock-change",
                                 "--on-timezone-change"), "persistence")}
_VALGRIND = {"--log-file": "out", "--xml-file": "out", "--suppressions": "read", "--db-command": "script",
             "--log-socket": "unknown:`valgrind --log-socket` sends its log to another host"}
_NUMA = _t("-N", "--cpunodebind", "-m", "--membind", "-C", "--physcpubind", "-i", "--interleave", "-p",
           "--preferred", "--preferred-many", "-w", "--weighted-interleave")
_PRLIMIT_RESOURCES = frozenset({f"-{c}" for c in "cdefilmnqrstuvxy"} | {
    "--core", "--data", "--nice", "--fsize", "--sigpending", "--memlock", "--rss", "--nofile", "--msgqueue",
    "--rtprio", "--stack", "--cpu", "--nproc", "--as", "--locks", "--rttime"})
_UNSHARE_NS = frozenset({"-m", "--mount", "-u", "--uts", "-i", "--ipc", "-n", "--net", "-p", "--pid", "-C",
                         "--cgroup", "-T", "--time"})
_UNSHARE_USER = frozenset({"-U", "--user", "-r", "--map-root-user", "-c", "--map-current-user", "--map-user",
                           "--map-users", "--map-auto"})

RUNNERS: dict[str, Runner] = {
    # tracing, profiling and timing: they run their operand
    "strace": Runner(_STRACE, {"-p": "no-command", "--attach": "no-command"}),
    "ltrace": Runner(_LTRACE, {"-p": "no-command"}),
    "valgrind": Runner(_VALGRIND, optional=frozenset(_VALGRIND)),  # (its values are only ever attached)
    "time gtime": Runner({"-f": T, "--format": T, "-o": "out", "--output": "out"}),
    "perf": Runner(sub=True, values={**_t("-e", "--event", "-F", "--freq", "-c", "--count", "-C", "--cpu", "-r", "--repeat",
                         "-t", "--tid", "-u", "--uid", "-G", "--cgroup", "-x", "--field-separator", "-m",
                         "--mmap-pages"), "-o": "out", "--output": "out", "-p": T, "--pid": T}),
    "heaptrack": Runner({"-o": "out", "--output": "out", "-p": T, "--pid": T}, {"-p": "no-command"}),
    # scheduling and resources
    "ionice": Runner(_t("-c", "--class", "-n", "--classdata"),
                     {"-p": "no-command", "--pid": "no-command", "-P": "no-command", "--pgid": "no-command",
                      "-u": "no-command", "--uid": "no-command"}),
    "chrt": Runner(_t("-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline"),
                   {"-p": "no-command", "--pid": "no-command", "-m": "no-command", "--max": "no-command"},
                   operands=1),
    "taskset": Runner({}, {"-p": "no-command", "--pid": "no-command"}, operands=1),
    "numactl": Runner(_NUMA, {"-s": "no-command", "--show": "no-command", "-H": "no-command",
                              "--hardware": "no-command"}),
    "prlimit": Runner({"-p": T, "--pid": T, "-o": T, "--output": T}, {"-p": "no-command", "--pid": "no-command"},
                      optional=_PRLIMIT_RESOURCES),
    "cpulimit": Runner(_t("-l", "--limit", "-e", "--exe", "-p", "--pid", "-c", "--cpu"),
                       {"-p": "no-command", "--pid": "no-command", "-e": "no-command", "--exe": "no-command"}),
    "caffeinate": Runner(_t("-t", "-w")),
    "nocache eatmydata rlwrap dumb-init catchsegv unbuffer ccache distcc sccache": Runner(),
    "tini": Runner(_t("-p", "-e")),
    "ssh-agent": Runner(_t("-a", "-E", "-t", "-P")),
    "dbus-launch": Runner({"--config-file": "read"}),
    "xcrun": Runner(_t("--sdk", "--toolchain"), {"-f": "no-command", "--find": "no-command",
                                                  "--show-sdk-path": "no-command"}),
    # environments and sessions
    "fakeroot": Runner({"-l": "read", "--lib": "read", "--faked": T, "-s": "write", "-i": "read", "-b": T}),
    "xvfb-run": Runner({"-e": "write", "--error-file": "write", "-f": "write", "--auth-file": "write",
                        **_t("-n", "--server-num", "-p", "--xauth-protocol", "-s", "--server-args", "-w",
                             "--wait")}),
    "dbus-run-session": Runner({"--config-file": "read", "--dbus-daemon": T}),
    "firejail": Runner(),  # (its option values are only ever attached: --private=DIR)
    "proot": Runner(_t("-r", "--rootfs", "-R", "-S", "-b", "--bind", "-m", "--mount", "-w", "--cwd", "-q", "--qemu",
                       "-k", "--kernel-release", "-v", "--verbose")),
    "faketime": Runner(_t("-f", "-m", "-p", "--exclude-monotonic"), operands=1),
    "direnv": Runner(operands=2),  # direnv exec DIR CMD
    "sshpass": Runner(_t("-p", "-f", "-d", "-e", "-P")),
    "mpirun mpiexec": Runner(_t("-n", "-np", "--np", "-c", "-H", "--host", "--hostfile", "-machinefile",
                                "--map-by", "--bind-to", "-x", "--mca", "-wdir")),
    "torsocks proxychains proxychains4 tsocks": Runner({"-f": "read", "-i": T, "-P": T, "-a": T, "-u": T, "-p": T}),
    "watchexec": Runner(_t("-w", "--watch", "-e", "--exts", "-i", "--ignore", "-d", "--debounce", "-s",
                           "--signal", "--shell", "-W", "--watch-non-recursive", "-E", "--env",
                           "--project-origin", "--workdir")),
    # privilege changes (denied like sudo/doas)
    "run0": Runner(_SYSTEMD_RUN | _t("-u", "--user", "-g", "--group", "-D", "--chdir", "--background",
                                     "--setenv"), privilege="`run0` runs a command as another user (root)"),
    "gosu": Runner(operands=1, privilege="`gosu` runs a command as another user"),
    "su-exec": Runner(operands=1, privilege="`su-exec` runs a command as another user"),
    "chpst": Runner({"-u": "privilege", "-U": "privilege", "-/": "privilege", **_t("-e", "-n", "-l", "-L", "-m", "-d", "-o",
                                                             "-p", "-f", "-c", "-r", "-t")}),
    "setpriv": Runner({**dict.fromkeys(("--reuid", "--regid", "--ruid", "--rgid", "--euid", "--egid",
                                        "--groups", "--inh-caps", "--ambient-caps", "--bounding-set",
                                        "--securebits"), "privilege"),
                       **_t("--selinux-label", "--apparmor-profile", "--landlock-access", "--landlock-rule",
                            "--pdeathsig", "--ptracer")},
                      {"--init-groups": "privilege", "--clear-groups": "privilege", "--keep-groups": "privilege",
                       "-d": "no-command", "--dump": "no-command"}),
    "chroot": Runner(_t("--userspec", "--groups"), operands=1, privilege="`chroot` needs root"),
    "schroot": Runner(_t("-c", "--chroot", "-u", "--user", "-d", "--directory", "-r", "--run-session"),
                      privilege="`schroot` enters a chroot as another user"),
    "sg newgrp": Runner(operands=1, privilege="`sg` runs a command with another group"),
    "lxc-attach machinectl": Runner(_t("-n", "--name"), privilege="enters a container as root"),
}


_PROXIES = frozenset({"torsocks", "proxychains", "proxychains4", "tsocks"})


def model_runner(inv: Invocation) -> None:
    """See through a :class:`Runner` to the command it runs."""
    spec = RUNNERS_BY_NAME[inv.name]
    if spec.privilege:
        inv.privilege(spec.privilege, 0)
    if inv.name in _PROXIES:
        inv.unknown(f"`{inv.name}` sends the command's connections through a proxy: where they go is not known", 0)
    values, flags = spec.values, spec.flags
    start = 1
    if spec.sub:
        if len(inv.argv) < 2 or inv.argv[1] not in ("stat", "record", "trace", "mem", "c2c", "sched", "lock",
                                                      "kmem", "kvm", "ftrace"):
            return
        start = 2
    parsed = parse_options(inv.argv, values, start=start, stop_at_first_positional=True, optional=spec.optional)
    runs = True
    for option, value, index in parsed.options:
        effect = flags.get(option)
        if effect is not None:
            if effect == "no-command":
                runs = False
            elif effect == "privilege":
                inv.privilege(f"`{inv.name} {option}` changes user, groups or capabilities", index)
            elif effect.startswith("unknown"):
                inv.unknown(effect.partition(":")[2] or f"`{inv.name} {option}` has effects that are not known", index)
        role = values.get(option)
        if role is not None and value is not None:
            value_role(inv, role, option, value, index)
    if not runs:
        return
    words = parsed.positionals[spec.operands:]
    directory = next((value for option, value, _ in parsed.options if values.get(option) == "cwd" and value), None)
    if words and directory is not None:  # (`daemonize -c DIR CMD`: the command runs in DIR)
        run_in(inv, directory, words[0][1])
        return
    if words:
        if inv.name in _SHELL_JOINED and not parsed.has("-n", "--no-shell") and \
                all(value != "none" for value, _ in parsed.values_of("--shell")):
            # the words are joined and run by the shell (`watchexec -- 'cat f | sh'`); several words
            # are judged as the command they spell, each kept one word (`-- sh -c 'rm -rf ~'`)
            rest = inv.argv[words[0][1]:]
            import shlex

            inv.script(rest[0] if len(rest) == 1 else shlex.join(rest), words[0][1],
                       what=f"the command `{inv.name}` runs")
            return
        inv.run(words[0][1])


#: runners that join their command words and run them with the shell (unless told not to)
_SHELL_JOINED = frozenset({"watchexec"})


def value_role(inv: Invocation, role: str, option: str, value: str, index: int) -> None:
    """Apply the role of one option value (the roles of :class:`Runner` ``values``)."""
    if role == "out":
        if value[:1] in ("|", "!"):
            inv.script(value[1:], index, what=f"the command `{inv.name} {option}` pipes its output to")
        else:
            inv.write(value, index)
    elif role == "privilege":
        inv.privilege(f"`{inv.name} {option}` changes user, groups or capabilities", index)
    elif role == "persistence":
        inv.persistence(f"`{inv.name} {option}` runs the command later", index)
    elif role == "env":
        name, eq, text = value.partition("=")
        if eq:
            judge_env_var(inv.walker, name, text, inv.at(index))
    elif role != "cwd":  # (`cwd`: the directory the command runs in, see model_runner)
        apply_role(inv, role, value, index)


#: ``capsh`` options (always ``--name=value``) that change user, groups, capabilities or root
_CAPSH_PRIVILEGE = frozenset({"--user", "--uid", "--gid", "--caps", "--addamb", "--groups", "--chroot", "--drop",
                              "--inh", "--keep", "--secbits", "--mode", "--iab", "--delamb", "--noamb"})
#: ``capsh`` words after which the rest of argv goes to the shell (``--shell=``, /bin/bash)
_CAPSH_SHELL = frozenset({"--", "-+", "=+"})


def model_capsh(inv: Invocation) -> None:
    """``capsh [--OPTION=VALUE]… -- ARGS``: after ``--`` (or ``-+``/``=+``) the rest of argv is
    given to the shell (``--shell=PATH``, by default ``/bin/bash``: ``capsh -- -c CODE`` runs
    CODE); after ``==`` it is capsh's own argv again; options that set user, groups,
    capabilities or root are a privilege change."""
    shell = "/bin/bash"
    for index in range(1, len(inv.argv)):
        word = inv.argv[index]
        if word in _CAPSH_SHELL:
            inv.run(index + 1, argv=[shell, *inv.argv[index + 1:]], spans=[inv.at(index), *inv.spans[index + 1:]])
            return
        if word == "==":
            inv.run(index + 1, argv=["capsh", *inv.argv[index + 1:]], spans=[inv.at(index), *inv.spans[index + 1:]])
            return
        name, eq, value = word.partition("=")
        if name == "--shell" and eq:
            shell = value
        elif name in _CAPSH_PRIVILEGE:
            inv.privilege(f"`capsh {name}` changes user, groups or capabilities", index)


def model_busybox(inv: Invocation) -> None:
    """``busybox APPLET ARGS`` (and toybox): the applet is judged as the program of that name;
    ``--install DIR`` writes links into DIR."""
    words = inv.argv[1:]
    if not words or words[0] in ("--list", "--list-full", "--help"):
        return
    if words[0] == "--install":
        inv.write(words[-1] if len(words) > 1 and not words[-1].startswith("-") else "/bin", len(inv.argv) - 1,
                  recursive=True)
        return
    inv.run(1)


def model_script(inv: Invocation) -> None:
    """``script [-c CMD] [FILE]``: runs CMD (shell code; a shell when absent) and writes the
    typescript to FILE (``./typescript`` by default), and ``-I``/``-O``/``-B``/``-T`` logs."""
    parsed = parse_options(inv.argv, {"-c", "--command", "-E", "--echo", "-I", "--log-in", "-O", "--log-out",
                                      "-B", "--log-io", "-T", "--log-timing", "-m", "--logging-format", "-o",
                                      "--output-limit"}, optional=frozenset({"-t", "--timing"}))
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-c", "--command"):
            inv.script(value, index, what="the code given to `script -c`")
        elif option in ("-I", "--log-in", "-O", "--log-out", "-B", "--log-io", "-T", "--log-timing", "-t",
                        "--timing"):
            inv.write(value, index)
    if parsed.positionals:
        inv.write(parsed.positionals[0][0], parsed.positionals[0][1])
    else:
        inv.write("typescript", None)
    from stockade.analyzer.models.devtools import env_value

    shell = env_value(inv, "SHELL")  # (the shell script starts, for `-c` too: `$SHELL -c CMD`)
    if shell and shell.rpartition("/")[2] not in ("sh", "bash", "dash", "zsh", "ksh", "fish", "mksh", "ash"):
        from stockade.analyzer.models.programs import judge_program

        judge_program(inv.walker, shell, inv.at(0), "`SHELL` (the shell `script` starts)", shell=False)
    elif shell and "/" in shell:
        from stockade.analyzer.models.programs import agent_writable

        if agent_writable(inv.walker, inv.path(shell)):
            inv.unknown(f"`script` starts the shell `{show(shell)}` (`SHELL`), a file in a place the agent can "
                        "write: its code cannot be seen into", 0)
    if not parsed.values_of("-c", "--command") and inv.stdin.what != "the terminal":
        # (no command: the shell it starts reads its commands from the input)
        if inv.stdin.text is not None:
            inv.script(inv.stdin.text, None, what="the commands `script`'s shell reads")
        else:
            inv.unknown(f"the shell `script` starts runs the commands of {inv.stdin.what}", 0)


def model_systemd_run(inv: Invocation) -> None:
    """``systemd-run [--user] [--on-…] CMD``: the command runs as a transient service — of the
    system manager (as root) unless ``--user``; a timer option makes it run later."""
    parsed = parse_options(inv.argv, _SYSTEMD_RUN, stop_at_first_positional=True)
    if not parsed.has("--user"):
        inv.privilege("`systemd-run` runs a command as a system service (as root)", 0)
    directory: str | None = None
    for option, value, index in parsed.options:
        role = _SYSTEMD_RUN.get(option)
        if role is not None and value is not None:
            value_role(inv, role, option, value, index)
        if option == "--working-directory" and value is not None:
            directory = value
        elif option in ("-p", "--property") and value is not None and value.startswith("WorkingDirectory="):
            directory = value.partition("=")[2].lstrip("-")  # (a leading `-`: the directory may be missing)
    if parsed.positionals:
        run_in(inv, directory, parsed.positionals[0][1])


def model_sudoedit(inv: Invocation) -> None:
    """``sudoedit FILE…`` (``sudo -e``): edits files as root."""
    inv.privilege("`sudoedit` edits files as another user (root)", 0)
    parsed = parse_options(inv.argv, _SUDO_VALUES)
    for word, index in parsed.positionals:
        inv.write(word, index)


def model_unshare(inv: Invocation) -> None:
    """``unshare [NAMESPACES] CMD``: new mount, pid, net… namespaces need root unless a user
    namespace is made too (``-r``, ``-U``); the command is modelled."""
    values = {"--map-user": T, "--map-group": T, "--map-users": T, "--map-groups": T, "-S": T, "--setuid": T,
              "-G": T, "--setgid": T, "-w": T, "--wd": T, "-R": T, "--root": T, "--propagation": T,
              "--setgroups": T}
    optional = frozenset(_UNSHARE_NS | {"-U", "--user", "--kill-child", "--map-auto"}) - {"-m", "-u", "-i", "-n",
                                                                                             "-p", "-C", "-T", "-U"}
    parsed = parse_options(inv.argv, values, stop_at_first_positional=True, optional=optional)
    names = {option for option, _, _ in parsed.options}
    if names & _UNSHARE_NS and not names & _UNSHARE_USER:
        inv.privilege("`unshare` makes namespaces that need root", 0)
    directory: str | None = None
    for option, value, index in parsed.options:
        if option in ("-R", "--root") and value is not None:
            inv.privilege("`unshare --root` changes the root directory", index)
        elif option in ("-w", "--wd") and value is not None:
            directory = value
    if parsed.positionals:
        run_in(inv, directory, parsed.positionals[0][1])


def model_entr(inv: Invocation) -> None:
    """``entr [-s] CMD``: runs CMD (with ``/_`` the changed file) whenever a file named on
    stdin changes; ``-s`` makes the first argument shell code."""
    parsed = parse_options(inv.argv, set(), stop_at_first_positional=True)
    words = parsed.positionals
    if not words:
        return
    start = words[0][1]
    if parsed.has("-s"):
        inv.script(words[0][0].replace("/_", "/" + UNKNOWN), start, what="the code given to `entr -s`")
        return
    argv = [UNKNOWN if word == "/_" else word for word in inv.argv[start:]]
    inv.run(start, argv=argv, spans=inv.spans[start:], stdin=Stdin(None, "the terminal"))


def model_pee(inv: Invocation) -> None:
    """``pee CMD…`` (moreutils): each argument is shell code (``popen``), fed a copy of the input."""
    for index, word in enumerate(inv.argv[1:], start=1):
        if not word.startswith("--"):
            inv.script(word, index, stdin=inv.stdin, what="a command given to `pee`")


def model_mispipe(inv: Invocation) -> None:
    """``mispipe CMD1 CMD2`` (moreutils): the shell runs ``CMD1 | CMD2``."""
    if len(inv.argv) >= 3:
        inv.script(f"{inv.argv[1]} | {inv.argv[2]}", 1, stdin=inv.stdin, what="the commands given to `mispipe`")


_PARALLEL_VALUES = {"-j": T, "--jobs": T, "-N": T, "-n": T, "--max-args": T, "-L": T, "--max-lines": T,
                    "--colsep": T, "-d": T, "--delimiter": T, "-E": T, "--eof": T, "-I": T, "--replace": T,
                    "--joblog": "write", "--results": "writer", "--res": "writer", "-a": "read", "--arg-file": "read",
                    "--tmpdir": "writer", "--tag-string": T, "--timeout": T, "--delay": T, "--retries": T,
                    "--memfree": T, "--load": T, "--halt": T, "--sshlogin": "url", "-S": "url", "--slf": "read",
                    "--basefile": "read", "--return": "write", "--workdir": T, "--env": T, "--shebang-wrap": T,
                    "--header": T, "--rpl": T, "--tagstring": T, "--termseq": T, "--limit": T, "-P": T}
_PARALLEL_SEPARATORS = (":::", ":::+", "::::", "::::+")


KNOWN_TOOLS = frozenset({
    "tsc", "eslint", "prettier", "jest", "vitest", "mocha", "playwright", "cypress", "webpack", "vite", "rollup",
    "esbuild", "tsx", "ts-node", "next", "nuxt", "astro", "turbo", "nx", "lerna", "stylelint", "biome",
    "oxlint", "svelte-kit", "svelte-check", "vue-tsc", "tailwindcss", "postcss", "babel",
    "pytest", "ruff", "black", "mypy", "isort", "flake8", "pylint", "pyright", "tox", "nox", "coverage",
    "sphinx-build", "mkdocs", "pydocstyle", "bandit", "hatch", "build", "twine-check", "python", "python3",
    "node", "pip", "concurrently", "nodemon",
})
_NPX_VALUES = {"-p": "package", "--package": "package", "-c": "script", "--call": "script", "--node-options": T,
               "--workspace": T, "-w": T, "--registry": "url", "--cache": T, "--prefix": T, "-C": T, "--dir": T,
               "--cwd": T, "--filter": T, "-F": T, "--shell-mode": T}


def package_runner(inv: Invocation, first: int, values: dict[str, str], what: str) -> None:
    """``npx PKG ARGS`` and its kin, from argv word ``first`` on: a known development tool is run
    (and modelled); another package, a version (``pkg@1``), a path, a URL or a repository
    (``github:u/r``) is downloaded and run unseen."""
    parsed = parse_options(inv.argv, values, start=first, stop_at_first_positional=True)
    unseen = False
    for option, value, index in parsed.options:
        role = values.get(option)
        if role is None or value is None:
            continue
        if role == "package":
            inv.unknown(f"`{what}` installs and runs the package `{show(value)}`, which cannot be seen into", index)
            _package_source(inv, value, index)
            unseen = True
        elif role == "script":
            inv.script(value, index, what=f"the code given to `{what} {option}`")
        elif role == "url" and "://" in value:
            from stockade.analyzer.models.net import contact_url

            contact_url(inv, value, index, 443)
    if not parsed.positionals:
        return
    package, index = parsed.positionals[0]
    name = package[1:].partition("@")[0] if package.startswith("@") else package.partition("@")[0]
    plain = name == package and "/" not in package and ":" not in package and UNKNOWN not in package
    if plain and package in KNOWN_TOOLS and not unseen:
        inv.run(index)
        return
    if not unseen:
        inv.unknown(f"`{what}` downloads and runs the package `{show(package)}`, which cannot be seen into", index)
        _package_source(inv, package, index)
        from stockade.analyzer.models.packages import env_value

        registry = env_value(inv, "npm_config_registry", "NPM_CONFIG_REGISTRY", "BUN_CONFIG_REGISTRY")
        if registry is not None:  # (from the registry the variable names)
            from stockade.analyzer.models.net import contact_url

            contact_url(inv, registry[1], index, 443)
    if plain and as_named_program(inv, package, index):
        return
    # the package's arguments, as an unmodelled program's: `npx dotenv -e .env` reads `.env`
    runner, inv.name = inv.name, package
    visible_operands(inv, index + 1)
    inv.name = runner


def as_named_program(inv: Invocation, name: str, index: int, argv: list[str] | None = None,
                     spans: list[SpanT] | None = None) -> bool:
    """A package run unseen whose name is a program with a model (``bunx sh -c CODE``,
    ``uvx bash -c CODE``): it may be that program (a runner falls back to the command on
    ``PATH``, or the package installs one of that name), so its arguments are judged as that
    program's, as well as the unknown effects of the package.  True when judged so."""
    from stockade.analyzer.models import builtin_model

    model = MODELS.get(name) or builtin_model(name)
    if model is None or model is default_model or (argv is None and inv.argv[index:index + 1] != [name]):
        return False
    inv.run(index, argv=argv, spans=spans)
    return True


def _package_source(inv: Invocation, package: str, index: int) -> None:
    """A package given as a URL (``git+https://…``, ``https://…/x.tgz``, ``pkg@https://…``) is
    downloaded from that URL's host."""
    _, at, url = package.partition("@")
    source = url if at and "://" in url else package
    if "://" not in source:
        return
    from stockade.analyzer.models.net import contact_url

    scheme = source.split("://", 1)[0]
    contact_url(inv, source.split("+", 1)[1] if "+" in scheme else source, index, 443)


def model_npx(inv: Invocation) -> None:
    """npx / bunx / pnpx: run a package (see :func:`package_runner`)."""
    package_runner(inv, 1, _NPX_VALUES, inv.name)


_NPM_MODEL = MODELS.get("npm")
_BUN_MODEL = MODELS.get("bun")


def model_js_pm(inv: Invocation) -> None:
    """npm / pnpm / yarn / bun: ``exec``/``dlx``/``x`` run a package (:func:`package_runner`);
    ``yarn node ARGS`` is node with ARGS; everything else is the package manager's own model."""
    parsed = parse_options(inv.argv, {"--registry", "--prefix", "-C", "--cwd", "-w", "--workspace", "--filter",
                                      "-F", "--dir"}, stop_at_first_positional=True)
    if parsed.positionals:
        sub, index = parsed.positionals[0]
        if sub == "node" and inv.name == "yarn":  # `yarn node ARGS`: node, with the project's resolution
            inv.run(index)
            return
        if sub == "exec" and inv.name in ("pnpm", "yarn"):  # a command of the project (node_modules/.bin, PATH)
            command = parse_options(inv.argv, {"--filter", "-F", "-C", "--dir", "--workspace-concurrency"}, start=index + 1,
                                    stop_at_first_positional=True)
            if command.positionals:
                run_in(inv, cwd_of(inv, _CWD_OPTIONS.get(inv.name, ()), command.positionals[0][1]),
                       command.positionals[0][1])
            return
        if sub in ("exec", "dlx", "x"):
            if sub == "dlx":
                package_runner(inv, index + 1, {**_NPX_VALUES, "-p": "package", "--package": "package"},
                               f"{inv.name} {sub}")
                words = [w for w in inv.argv[index + 1:] if not w.startswith("-")]
                if words and words[0] in KNOWN_TOOLS:  # dlx always downloads, even a known tool
                    inv.unknown(f"`{inv.name} dlx` downloads and runs `{show(words[0])}`", index)
            else:
                package_runner(inv, index + 1, _NPX_VALUES, f"{inv.name} {sub}")
            if inv.name != "bun":
                inv.network("registry.npmjs.org", 443, index)
            return
    model = _BUN_MODEL if inv.name == "bun" else _NPM_MODEL
    if model is not None:
        model(inv)


_UV_RUN_VALUES = {**_t("--with", "--with-editable", "--python", "-p", "--package", "--extra", "--group",
                       "--only-group", "--no-group", "--directory", "--project", "--index", "--default-index",
                       "--index-url", "--extra-index-url", "--find-links", "-f", "--index-strategy",
                       "--keyring-provider", "--resolution", "--prerelease", "--exclude-newer", "--link-mode",
                       "--config-file", "--cache-dir", "--python-preference", "--color", "--refresh-package",
                       "--reinstall-package", "--upgrade-package", "-P", "--no-binary-package",
                       "--no-build-package", "--config-setting", "-C"),
                  "--with-requirements": "read", "--env-file": "read"}
_UVX_VALUES = {**_UV_RUN_VALUES, "--from": "package", "--index": "url", "--default-index": "url", "--index-url": "url",
               "--extra-index-url": "url", "-i": "url"}


#: options that change the directory a tool (and the command it runs) works in
_CWD_OPTIONS = {"poetry": ("-C", "--directory"), "uv": ("--directory",), "conda": ("--cwd",), "mamba": ("--cwd",),
                "micromamba": ("--cwd",), "pnpm": ("-C", "--dir"), "yarn": ("--cwd",)}


def cwd_of(inv: Invocation, names: tuple[str, ...], stop: int) -> str | None:
    """The value of the last option of ``names`` (``-C DIR``, ``--cwd=DIR``) before argv word ``stop``."""
    found: str | None = None
    argv = inv.argv
    for index in range(1, min(stop, len(argv))):
        word = argv[index]
        option, eq, value = word.partition("=")
        if option in names:
            found = value if eq else (argv[index + 1] if index + 1 < len(argv) else None)
    return found


def run_in(inv: Invocation, directory: str | None, start: int, argv: list[str] | None = None,
           spans: list[SpanT] | None = None) -> None:
    """Run ``argv[start:]`` as :meth:`Invocation.run` does, in ``directory`` when one is given
    (``poetry -C DIR run CMD``, ``systemd-run --working-directory=DIR CMD``): its relative paths
    are below DIR."""
    if directory is None:
        inv.run(start, argv=argv, spans=spans)
        return
    walker = inv.walker
    saved = walker.state.cwd
    walker.state.cwd = inv.path(directory)
    try:
        inv.run(start, argv=argv, spans=spans)
    finally:
        walker.state.cwd = saved


def project_run(inv: Invocation, start: int, values: dict[str, str], what: str) -> None:
    """``uv run`` / ``poetry run`` / ``pdm run`` … from argv word ``start``: runs a command of
    the project's environment (a ``.py`` file is run by python, a URL is unseen code)."""
    parsed = parse_options(inv.argv, values, start=start, stop_at_first_positional=True)
    for option, value, index in parsed.options:
        role = values.get(option)
        if role in ("read", "write") and value is not None:
            apply_role(inv, role, value, index)
        elif option == "--with" and value and what == "uv run":  # (as `uvx --with`: packages the project lacks)
            from stockade.analyzer.models.net import contact_url

            for spec in value.split(","):
                if "://" in spec:
                    contact_url(inv, spec.partition("+")[2] if spec.startswith("git+") else spec, index, 443)
            inv.unknown(f"`uv run --with {show(value)}` installs packages the project does not name into the "
                        "environment the command runs in: their code runs there", index)
    if not parsed.positionals:
        return
    word, index = parsed.positionals[0]
    if "://" in word:
        from stockade.analyzer.models.net import contact_url

        contact_url(inv, word, index, 443)
        inv.unknown(f"`{what}` runs code from `{show(word)}`, which cannot be seen into", index)
        return
    directory = cwd_of(inv, _CWD_OPTIONS.get(inv.name, ()), index)
    if word.endswith((".py", ".pyw")) or parsed.has("--script", "-s"):
        run_in(inv, directory, index, argv=["python3", *inv.argv[index:]], spans=[inv.at(index), *inv.spans[index:]])
        return
    run_in(inv, directory, index)


def _subcommand(inv: Invocation, values: set[str]) -> tuple[str, int] | None:
    parsed = parse_options(inv.argv, values, stop_at_first_positional=True)
    return parsed.positionals[0] if parsed.positionals else None


_PY_GLOBAL = {"--directory", "--project", "--config-file", "--cache-dir", "-C", "--python", "-p", "--color", "-P",
              "--env", "-e", "-n", "--name", "--prefix"}


def model_uv(inv: Invocation) -> None:
    """uv: ``run`` runs a project command; ``tool run``/``x`` a package (``uvx``); ``pip`` is pip."""
    found = _subcommand(inv, _PY_GLOBAL)
    if found is None:
        return
    sub, index = found
    if sub == "run":
        project_run(inv, index + 1, _UV_RUN_VALUES, "uv run")
    elif sub == "tool" and index + 1 < len(inv.argv) and inv.argv[index + 1] in ("run", "install"):
        inv.network("pypi.org", 443, index)
        if inv.argv[index + 1] == "install":
            inv.write("~/.local", index, recursive=True)
        package_runner(inv, index + 2, _UVX_VALUES, f"uv tool {inv.argv[index + 1]}")
    elif sub == "pip":
        inv.run(index, argv=["pip", *inv.argv[index + 1:]], spans=[inv.at(index), *inv.spans[index + 1:]])
    elif sub in ("add", "sync", "lock"):
        _uv_project(inv, sub, index)


#: ``uv add``/``sync``/``lock`` options that take a value (index options: role url)
_UV_ADD_VALUES = {"--git": "git", "--branch": T, "--tag": T, "--rev": T, "-r": "read", "--requirements": "read",
                  "--index": "url", "--default-index": "url", "--index-url": "url", "-i": "url",
                  "--extra-index-url": "url", "-f": "url", "--find-links": "url", "--optional": T, "--group": T,
                  "--package": T, "--script": "read", "--extra": T, "-m": T, "--marker": T, "--bounds": T,
                  "--python": T, "-p": T, "--directory": T, "--project": T, "--config-file": "read",
                  "--cache-dir": T, "-C": T, "--config-setting": T, "--index-strategy": T,
                  "--keyring-provider": T, "--resolution": T, "--prerelease": T, "--exclude-newer": T,
                  "--no-binary-package": T, "--no-build-package": T, "--link-mode": T, "--python-platform": T,
                  "--refresh-package": T, "--reinstall-package": T, "--upgrade-package": T, "-P": T,
                  "--no-install-package": T, "--only-group": T, "--no-group": T, "--color": T}


def _uv_project(inv: Invocation, sub: str, index: int) -> None:
    """``uv add SPECS`` (a URL, VCS or local archive is installed from a source outside the
    index: :func:`~stockade.analyzer.models.packages._pip_spec`), ``uv sync``/``lock``: the
    index is contacted (``--index``, ``UV_INDEX_URL``, …); ``pyproject.toml`` is written by add."""
    from stockade.analyzer.models.packages import _pip_spec, env_value

    parsed = parse_options(inv.argv, _UV_ADD_VALUES, start=index + 1)
    indexes = False
    for option, value, at in parsed.options:
        role = _UV_ADD_VALUES.get(option)
        if value is None or role is None:
            continue
        if role == "url":
            indexes = indexes or option not in ("--extra-index-url", "-f", "--find-links", "--index")
            contact_url(inv, value, at, 443) if "://" in value else inv.read(value, at)
        elif role == "git":
            _pip_spec(inv, value if value.startswith("git+") else "git+" + value, at)
        elif role == "read":
            inv.read(value, at)
    for name in ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX", "UV_EXTRA_INDEX_URL", "PIP_INDEX_URL",
                 "UV_FIND_LINKS"):
        found = env_value(inv, name)
        if found is not None:
            for url in found[1].split():
                contact_url(inv, url.rpartition("=")[2] if "=" in url.partition("://")[0] else url, index, 443)
            indexes = indexes or name in ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "PIP_INDEX_URL")
    if not indexes and not parsed.has("--offline", "--frozen"):
        inv.network("pypi.org", 443, index)
        inv.network("files.pythonhosted.org", 443, index)
    if sub != "add":
        return
    for word, at in parsed.positionals:
        if word.startswith(("git+", "hg+", "svn+", "bzr+")) and "://" not in word:
            word = word.replace("+", "+ssh://", 1)
        _pip_spec(inv, word, at)


def model_uvx(inv: Invocation) -> None:
    """``uvx PKG``: ``uv tool run``."""
    inv.network("pypi.org", 443, 0)
    package_runner(inv, 1, _UVX_VALUES, "uvx")


_PIP_MODEL = MODELS.get("pipx")


def model_pipx(inv: Invocation) -> None:
    """``pipx run PKG`` downloads and runs a package; other subcommands are pip's model."""
    found = _subcommand(inv, {"--python", "--pip-args", "--index-url", "--spec"})
    if found is not None and found[0] == "run":
        inv.network("pypi.org", 443, found[1])
        package_runner(inv, found[1] + 1, {"--spec": "package", "--python": T, "--pip-args": T, "--index-url": "url",
                                           "--path": T}, "pipx run")
        return
    if _PIP_MODEL is not None:
        _PIP_MODEL(inv)


_PROJECT_RUNNERS = {"poetry": _t("-C", "--directory", "-P", "--project"),
                    "pdm": _t("-p", "--project", "-v"), "hatch": _t("-e", "--env"),
                    "rye": _t("--pyproject"), "pixi": _t("-e", "--environment", "--manifest-path"),
                    "pipenv": {}, "conda": _t("-n", "--name", "-p", "--prefix", "--cwd"),
                    "mamba": _t("-n", "--name", "-p", "--prefix", "--cwd"),
                    "micromamba": _t("-n", "--name", "-p", "--prefix", "--cwd"),
                    "devbox": _t("-c", "--config", "-e", "--env", "--env-file")}


def model_project_runner(inv: Invocation) -> None:
    """``poetry run CMD``, ``pdm run``, ``hatch run``, ``pixi run``, ``conda run -n ENV``…: the
    command is modelled; other subcommands manage the environment (judged by what is visible)."""
    values = _PROJECT_RUNNERS[inv.name]
    found = _subcommand(inv, set(values) | _PY_GLOBAL)
    if found is not None and found[0] != "run" and inv.name == "pixi":  # `pixi add|global install -c URL`
        channels = parse_options(inv.argv, {"-c", "--channel", "-e", "--environment", "--manifest-path"},
                                 start=found[1] + 1)
        for value, index in channels.values_of("-c", "--channel"):
            if "://" in value:
                contact_url(inv, value, index, 443)
    if found is None or found[0] != "run":
        return
    project_run(inv, found[1] + 1, values, f"{inv.name} run")


def model_nix_shell(inv: Invocation) -> None:
    """``nix-shell [-p PKGS] [--run|--command CODE] [FILE]``: the code is shell code; the file
    (``shell.nix``) is read; ``--arg``/``--argstr`` take two words."""
    argv = inv.argv
    index = 1
    while index < len(argv):
        word = argv[index]
        if word in ("--run", "--command") and index + 1 < len(argv):
            inv.script(argv[index + 1], index + 1, what=f"the code given to `nix-shell {word}`")
            index += 2
        elif word in ("--arg", "--argstr", "--option"):
            index += 3
        elif word in ("-I", "-A", "--attr", "-E", "--expr", "--keep", "-j", "--max-jobs", "--cores"):
            index += 2
        elif word == "-p" or word == "--packages" or word.startswith("-"):
            index += 1
        else:
            if not any(w in ("-p", "--packages", "-E", "--expr") for w in argv[1:index]):
                inv.read(word, index)
            index += 1


_NIX_VALUES = frozenset({"--arg", "--argstr", "--option", "-I", "--include", "--override-input", "--expr",
                         "-f", "--file", "--profile", "--store", "--eval-store", "-j", "--max-jobs", "--cores",
                         "--inputs-from", "--override-flake", "--reference-lock-file", "--output-lock-file"})


def _nix_run_program(inv: Invocation) -> None:
    """``nix run FLAKE#ATTR [-- ARGS]``: the program run is the package's main program, named
    by its attribute (``nixpkgs#bash`` runs ``bash``); when that name has a model, the
    arguments are judged as that program's (``nix run nixpkgs#bash -- -c CODE`` runs CODE)."""
    argv = inv.argv
    index = 2
    while index < len(argv) and argv[index].startswith("-") and argv[index] != "--":
        index += 1 + (argv[index] in _NIX_VALUES) + (argv[index] in ("--arg", "--argstr", "--option"))
    if index >= len(argv) or argv[index] == "--":
        return
    installable = argv[index]
    name = installable.rpartition("#")[2].rpartition(".")[2] if "#" in installable else ""
    rest = index + 1
    if rest < len(argv) and argv[rest] == "--":
        rest += 1
    if name and UNKNOWN not in name:
        as_named_program(inv, name, index, argv=[name, *argv[rest:]], spans=[inv.spans[index], *inv.spans[rest:]])


_PIXI_EXEC_VALUES = frozenset({"-s", "--spec", "-c", "--channel", "-p", "--platform", "--with"})


def _fetched_tool(inv: Invocation, start: int, values: frozenset[str], what: str) -> None:
    """``pkgx [+PKG…] CMD ARGS``, ``pixi exec [-s SPEC] CMD ARGS``: CMD comes from a package the
    tool downloads (unseen); named like a modelled program, its arguments are judged as that
    program's."""
    argv = inv.argv
    index = start
    while index < len(argv) and (argv[index][:1] in ("-", "+") and argv[index] != "--"):
        index += 1 + (argv[index] in values)
    if index < len(argv) and argv[index] == "--":
        index += 1
    if index >= len(argv):
        return
    command = argv[index]
    inv.unknown(f"`{what}` downloads and runs `{show(command)}`, which cannot be seen into", index)
    if "/" not in command and UNKNOWN not in command:
        as_named_program(inv, command, index)


def model_pkgx(inv: Invocation) -> None:
    """``pkgx [+PKG…] CMD ARGS`` (see :func:`_fetched_tool`)."""
    _fetched_tool(inv, 1, frozenset(), inv.name)


_PIXI_MODEL = MODELS.get("pixi")


def model_pixi(inv: Invocation) -> None:
    """``pixi exec CMD`` runs a tool from a package (see :func:`_fetched_tool`); else pixi's model."""
    words = [word for word in inv.argv[1:] if not word.startswith("-")]
    if words[:1] == ["exec"] or words[:1] == ["x"]:
        _fetched_tool(inv, inv.argv.index(words[0]) + 1, _PIXI_EXEC_VALUES, f"pixi {words[0]}")
        return
    if _PIXI_MODEL is not None:
        _PIXI_MODEL(inv)
    else:
        default_model(inv)


def model_sops_exec(inv: Invocation) -> None:
    """``sops exec-env FILE CMD``/``exec-file FILE CMD``: CMD is shell code run with the file's
    decrypted values (``{}`` in exec-file's command: the decrypted copy's path, in the temporary
    directory); else sops reads
    and writes its file operands as visible."""
    words = [(w, i) for i, w in enumerate(inv.argv[1:], start=1) if not w.startswith("-")]
    if len(words) >= 3 and words[0][0] in ("exec-env", "exec-file"):
        inv.read(words[1][0], words[1][1])
        # (`{}`: the decrypted copy, a file sops makes in the temporary directory)
        inv.script(words[2][0].replace("{}", "/tmp/sops-exec-file"), words[2][1],
                   what=f"the command given to `sops {words[0][0]}`")
        return
    default_model(inv)


def model_nix(inv: Invocation) -> None:
    """``nix run PKG`` runs a package unseen; ``nix shell PKGS -c CMD`` and ``nix develop -c CMD``
    run CMD (modelled)."""
    words = inv.argv[1:]
    if not words:
        return
    sub = words[0]
    if sub == "run":
        inv.unknown("`nix run` builds and runs a package that cannot be seen into", 1)
        _nix_run_program(inv)
        return
    if sub == "profile" and len(words) > 1 and words[1] in ("install", "add", "upgrade", "rollback", "switch"):
        inv.unknown(f"`nix profile {words[1]}` puts packages that cannot be seen into on every later shell's PATH", 2)
        return
    if sub in ("shell", "develop") and not any(w in ("-c", "--command") for w in words):
        inv.unknown(f"`nix {sub}` opens a shell that runs code from the terminal, which is not known", 1)
        return
    if sub in ("shell", "develop"):
        for index, word in enumerate(inv.argv[2:], start=2):
            if word in ("-c", "--command") and index + 1 < len(inv.argv):
                inv.run(index + 1)
                return


def model_hyperfine(inv: Invocation) -> None:
    """``hyperfine CMD…``: every positional is shell code, as are ``--prepare``/``--setup``/
    ``--cleanup``; ``--export-*`` write files."""
    values = {"-w": T, "--warmup": T, "-m": T, "--min-runs": T, "-M": T, "--max-runs": T, "-r": T, "--runs": T,
              "-p": "script", "--prepare": "script", "-c": "script", "--cleanup": "script", "-s": "script",
              "--setup": "script", "-S": T, "--shell": T, "-n": T, "--command-name": T, "--export-json": "write",
              "--export-csv": "write", "--export-markdown": "write", "--export-asciidoc": "write",
              "--export-orgmode": "write", "-o": T, "--output": T, "--style": T, "--time-unit": T, "-u": T,
              "--sort": T, "-i": T}
    parsed = parse_options(inv.argv, values)
    for option, value, index in parsed.options:
        role = values.get(option)
        if role is not None and value is not None:
            apply_role(inv, role, value, index)
    for word, index in parsed.positionals:
        inv.script(word, index, what="a command benchmarked by `hyperfine`")


def model_tmux(inv: Invocation) -> None:
    """tmux/screen: a command given to a new session or window, or sent as keys, runs as shell
    code (walked); ``run-shell``, ``pipe-pane``, ``tmux -c CMD`` and ``if-shell``'s condition
    likewise, for each command of a ``\\;``-separated list (``if-shell``'s own commands too)."""
    words = inv.argv[1:]
    if inv.name == "screen":
        parsed = parse_options(inv.argv, {"-S", "-c", "-e", "-h", "-L", "-Logfile", "-p", "-t", "-X", "-s"},
                               stop_at_first_positional=True)
        sent = parsed.values_of("-X")
        if sent and sent[-1][0] == "eval" and parsed.positionals:  # `-X eval 'stuff TEXT' …`: screen commands
            for text, index in parsed.positionals:
                if text.startswith("stuff "):
                    keys = text[6:].strip()
                    if len(keys) > 1 and keys[0] == keys[-1] and keys[0] in "\"'":
                        keys = keys[1:-1]
                    for escape in ("\\n", "\\r", "\\015", "\\012", "^M"):
                        keys = keys.replace(escape, "\n")
                    inv.script(keys, index, what="the keys `screen -X eval stuff` types into a session")
                elif text.split()[:1] in (["exec"], ["screen"]):
                    inv.script(text.split(None, 1)[1] if " " in text else "", index,
                               what="the command `screen -X eval` runs")
            return
        if sent and sent[-1][0] == "stuff" and parsed.positionals:  # `-X stuff TEXT`: typed into the session
            text = " ".join(word for word, _ in parsed.positionals).replace("\\n", "\n").replace("\\r", "\n")
            inv.script(text, parsed.positionals[0][1], what="the keys `screen -X stuff` types into a session")
        elif parsed.positionals and (not sent or sent[-1][0] in ("exec", "screen")):
            inv.run(parsed.positionals[0][1])
        return
    if not words:
        return
    argv = inv.argv
    index = 1
    while index < len(argv) and argv[index][:1] == "-" and argv[index] != "--":  # tmux's own options
        option = argv[index]
        if option == "-c" and index + 1 < len(argv):  # `tmux -c CMD`: runs CMD with the shell, as a login shell
            inv.script(argv[index + 1], index + 1, what="the command given to `tmux -c`")
            return
        index += 2 if option in ("-L", "-S", "-f", "-T") else 1
    index += index < len(argv) and argv[index] == "--"
    start = index
    for end in [*(i for i in range(start, len(argv)) if argv[i] == ";"), len(argv)]:  # (`\;` separates commands)
        if end > start:
            _tmux_command(inv, start, end)
        start = end + 1


#: tmux commands whose positionals are a shell command (joined), and the options that take a value
_TMUX_SHELL = frozenset({"new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane",
                         "respawnp", "respawn-window", "respawnw", "run-shell", "run", "send-keys", "send",
                         "display-popup", "popup", "pipe-pane", "pipep"})
_TMUX_VALUES = frozenset({"-s", "-n", "-t", "-c", "-x", "-y", "-F", "-e", "-l", "-p", "-w", "-h", "-E", "-T", "-S",
                          "-N"})


def _tmux_command(inv: Invocation, start: int, end: int) -> None:
    """One tmux command, ``argv[start:end]``: a shell command it runs is walked; ``if-shell``
    runs its first argument with the shell (unless ``-F``) and its others are tmux commands."""
    argv = inv.argv[:end]
    sub = argv[start]
    for index in range(start + 1, end):  # `#(CMD)` in a format runs CMD (display -p, status lines, titles)
        word = argv[index]
        position = word.find("#(")
        while position != -1:
            close = word.find(")", position)
            inv.script(word[position + 2:close if close != -1 else len(word)], index,
                       what="the command a tmux format `#(…)` runs")
            position = word.find("#(", position + 2)
    if sub in _TMUX_SHELL:
        parsed = parse_options(argv, {"-t", "-N"} if sub in ("send-keys", "send") else _TMUX_VALUES, start=start + 1)
        directory = next((value for option, value, _ in parsed.options if option == "-c" and value), None)
        if parsed.positionals:
            words = [word for word, _ in parsed.positionals]
            if sub in ("send-keys", "send"):
                words = [word for word in words if word not in ("Enter", "C-m", "C-c")]
            walker, saved = inv.walker, inv.walker.state.cwd
            if directory is not None and sub not in ("send-keys", "send"):  # (`new -c DIR CMD`: CMD runs in DIR)
                walker.state.cwd = inv.path(directory)
            try:
                inv.script(" ".join(words), parsed.positionals[0][1], what=f"the command given to `tmux {sub}`")
            finally:
                walker.state.cwd = saved
    elif sub in ("load-buffer", "loadb") and "-" in argv[start + 1:]:  # (the buffer from stdin, pasted as keys)
        if inv.stdin.text is not None:
            inv.script(inv.stdin.text, start, what="the text `tmux load-buffer -` pastes")
        else:
            inv.unknown(f"`tmux {sub} -` pastes {inv.stdin.what} as typed keys", start)
    elif sub in ("set-buffer", "setb"):  # (pasted later as typed keys)
        parsed = parse_options(argv, {"-b", "-t", "-n"}, start=start + 1)
        for text, index in parsed.positionals[:1]:
            inv.script(text, index, what="the text `tmux set-buffer` pastes")
    elif sub in ("set-hook", "bind-key", "bind", "set-option", "set", "setw", "set-window-option"):
        parsed = parse_options(argv, {"-t", "-T", "-N"}, start=start + 1)
        positionals = list(parsed.positionals)
        if sub.startswith("set") and sub != "set-hook" and positionals:
            option = positionals[0][0]
            if option in ("default-command", "default-shell") and len(positionals) > 1:
                if option == "default-command":
                    inv.script(positionals[1][0], positionals[1][1], what="tmux's `default-command`")
                else:
                    from stockade.analyzer.models.programs import judge_program

                    judge_program(inv.walker, positionals[1][0], inv.at(positionals[1][1]), "tmux's `default-shell`")
            return
        rest = positionals[1:]  # (the tmux command a hook or a key binding runs: one string, or its words)
        if len(rest) == 1:
            try:
                words = shlex_split(rest[0][0])
            except ValueError:
                inv.unknown(f"the tmux command `{show(rest[0][0])}` cannot be read", rest[0][1])
                return
        else:
            words = [word for word, _ in rest]
        if words:
            inv.run(rest[0][1], argv=[inv.argv[0], *words], spans=[inv.at(rest[0][1])] * (len(words) + 1))
    elif sub in ("source-file", "source"):
        parsed = parse_options(argv, {"-t"}, start=start + 1)
        for path, index in parsed.positionals:
            inv.read(path, index)
            inv.unknown(f"`tmux {sub}` runs the tmux commands in `{show(path)}`, which cannot be seen into", index)
    elif sub in ("if-shell", "if"):
        parsed = parse_options(argv, {"-t"}, start=start + 1)
        positionals = list(parsed.positionals)
        if positionals and not parsed.has("-F"):
            inv.script(positionals[0][0], positionals[0][1], what="the condition `tmux if-shell` runs")
        for text, index in positionals[1:3]:
            try:
                words = shlex_split(text)
            except ValueError:
                inv.unknown(f"the tmux command `{show(text)}` cannot be read", index)
                continue
            if words:
                inv.run(index, argv=[inv.argv[0], *words], spans=[inv.at(index)] * (len(words) + 1))


# -- terminal emulators ---------------------------------------------------------------------------

#: terminal emulators: the options after which the rest of argv is the command they run
#: (``xterm -e CMD ARGS``, ``gnome-terminal -- CMD``); ``--command=TEXT`` is a command line
_TERMINALS: dict[str, frozenset[str]] = {
    **{name: frozenset({"-e", "--"}) for name in ("xterm", "uxterm", "urxvt", "rxvt", "rxvt-unicode", "st",
                                                  "lxterminal", "qterminal", "mate-terminal", "sakura")},
    **{name: frozenset({"-e", "--command", "-x", "--execute", "--"})
       for name in ("gnome-terminal", "xfce4-terminal", "terminator", "tilix", "konsole", "alacritty",
                    "kgx", "ptyxis", "terminology", "cool-retro-term")},
    **{name: frozenset({"--"}) for name in ("kitty", "foot", "wezterm")},
    "ghostty": frozenset({"-e", "--"}),
}
#: terminals whose first operand (after their options) is the command they run (``kitty sh -c …``)
_POSITIONAL_TERMINALS = {"kitty": frozenset({"-o", "--override", "-c", "--config", "-T", "--title", "--class",
                                              "--name", "-d", "--directory", "--session", "--listen-on",
                                              "--watcher", "--start-as", "--instance-group", "--app-id"}),
                         "foot": frozenset({"-o", "--override", "-c", "--config", "-T", "--title", "-a", "--app-id",
                                            "-D", "--working-directory", "-f", "--font", "-w", "--window-size-pixels",
                                            "-W", "--window-size-chars", "-s", "--server", "-L", "--login-shell"})}


def model_terminal(inv: Invocation) -> None:
    """A terminal emulator runs the command after ``-e``/``-x``/``--`` (``xterm -e CMD ARGS``;
    one word with blanks is a command line its shell runs: ``xterm -e 'cat f | less'``), or the
    command line ``--command=TEXT`` gives; without one it opens a shell for a person to type in."""
    markers = _TERMINALS.get(inv.name, frozenset())
    argv = inv.argv
    for index, word in enumerate(argv[1:], start=1):
        name, eq, value = word.partition("=")
        if eq and name in ("--command", "--execute", "-e", "-x") and name in markers:
            inv.script(value, index, what=f"the command `{inv.name} {name}` runs")
            return
        if word in markers:
            rest = argv[index + 1:]
            if not rest:
                return
            if len(rest) == 1 and (" " in rest[0] or word in ("--command", "-x", "--execute")):
                inv.script(rest[0], index + 1, what=f"the command `{inv.name} {word}` runs")
            else:
                inv.run(index + 1)
            return
    values = _POSITIONAL_TERMINALS.get(inv.name)
    if values is not None:  # (`kitty sh -c CODE`, `foot CMD ARGS`)
        index = 1
        while index < len(argv) and argv[index].startswith("-"):
            index += 2 if argv[index] in values else 1
        if index < len(argv):
            inv.run(index)


if None in (_NPM_MODEL, _PIP_MODEL):  # pragma: no cover
    raise ImportError("runners.py wraps models registered before it: import it after them")
for _names, _runner in RUNNERS.items():
    for _name in _names.split():
        register(_name, model_runner)
RUNNERS_BY_NAME: dict[str, Runner] = {name: runner for names, runner in RUNNERS.items() for name in names.split()}
register("busybox toybox", model_busybox)
register("capsh", model_capsh)
register("script", model_script)
register("systemd-run", model_systemd_run)
register("sudoedit", model_sudoedit)
register("unshare", model_unshare)
register("entr", model_entr)
register("pee", model_pee)
register("mispipe", model_mispipe)
register("npx bunx pnpx", model_npx)
register("npm pnpm yarn bun", model_js_pm)
register("uv", model_uv)
register("uvx", model_uvx)
register("pipx", model_pipx)
register(" ".join(_PROJECT_RUNNERS), model_project_runner)
register("nix-shell", model_nix_shell)
register("nix", model_nix)
register("hyperfine", model_hyperfine)
register("tmux screen", model_tmux)


def model_asdf(inv: Invocation) -> None:
    """``asdf exec CMD …`` runs CMD with the versions asdf selects (its toolchain row judges
    installs); other subcommands as a program without a model."""
    words = [(word, index) for index, word in enumerate(inv.argv[1:], start=1) if not word.startswith("-")]
    if len(words) >= 2 and words[0][0] == "exec":
        inv.run(words[1][1])
        return
    default_model(inv)


#: dotenv loaders: program → (options naming an env file, the options that take any other value, the
#: file read when none is named)
_DOTENV: dict[str, tuple[frozenset[str], frozenset[str], str]] = {
    "dotenv": (frozenset({"-e"}), frozenset({"-v", "-p", "-c"}), ".env"),
    "dotenvx": (frozenset({"-f", "--env-file"}), frozenset({"-e", "--env", "--convention", "--ops-off",
                                                              "-fk", "--env-keys-file"}), ".env"),
    "env-cmd": (frozenset({"-f", "--file", "-r", "--rc-file"}), frozenset({"-e", "--environments"}), ".env"),
}


def model_dotenv(inv: Invocation) -> None:
    """``dotenv [-e FILE]… [--] CMD`` (dotenv-cli), ``dotenvx run [-f FILE]… -- CMD``,
    ``env-cmd [-f FILE] CMD``: the env files are read (``.env`` when none is named: a file the
    policy may deny) and CMD runs with their variables, which are not known."""
    files, others, default = _DOTENV[inv.name]
    argv = inv.argv
    start = 1
    if inv.name == "dotenvx":
        if len(argv) < 2 or argv[1] != "run":
            default_model(inv)
            return
        start = 2
    parsed = parse_options(argv, files | others, start=start, stop_at_first_positional=True,
                           optional=frozenset({"-c"}) if inv.name == "dotenv" else frozenset())
    named = [(value, index) for option, value, index in parsed.options if option in files and value]
    for value, index in named or [(default, start - 1 if start > 1 else 0)]:
        inv.read(value, index)
    if parsed.positionals:
        inv.run(parsed.positionals[0][1])


register("asdf", model_asdf)
register(" ".join(_DOTENV), model_dotenv)
register("pkgx", model_pkgx)
register("pixi", model_pixi)
register("sops", model_sops_exec)
register(" ".join(_TERMINALS), model_terminal)
