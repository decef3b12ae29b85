"""Sandbox, container and queue runners that run a command given in their arguments.

``bwrap``, ``nsjail``, ``apptainer``/``singularity exec``, ``flatpak-spawn``,
``distrobox-enter``, ``systemd-nspawn``, ``setarch``/``linux32``, ``runcon``, ``ksu`` and the queues
``pueue add``/``tsp`` run a command the analyzer then models in turn.  A sandbox may narrow
what the command can do, but the analyzer judges the command as if it ran unconfined (the
strict side); a bind mount that shows a host path under another name makes the command's paths
say nothing about what it touches, which is an unknown effect.  The plain wrappers (``chronic``,
``ifne``, ``lckdo``, ``daemonize``, ``trickle``…) are rows of :data:`RUNNERS`.
"""

from __future__ import annotations

from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import parse_options, register
from stockade.analyzer.models.runners import RUNNERS_BY_NAME, Runner, model_runner

T = "text"

#: plain wrappers: the command follows their options (see :class:`~.runners.Runner`)
RUNNERS: dict[str, Runner] = {
    "chronic ifne nq": Runner(),
    "fakechroot": Runner({"-l": "read", "--lib": "read", "-d": "read", "--elfloader": "read", "-e": T,
                          "--environment": T, "-c": "read", "--config-dir": "read", "-b": "read", "--bindir": "read"}),
    "timelimit": Runner(dict.fromkeys(("-t", "-T", "-s", "-S"), T)),
    "lckdo with-lock-ex": Runner(operands=1),  # LOCKFILE CMD
    "daemonize": Runner({"-c": "cwd", "-e": "write", "-o": "write", "-p": "write", "-l": "write", "-u": "privilege",
                         "-E": "env"}),
    "trickle": Runner(dict.fromkeys(("-d", "-u", "-w", "-t", "-l", "-n"), T)),
    "cgexec": Runner({"-g": T}),
    "sandbox-exec": Runner({"-f": "read", "-n": T, "-p": T, "-D": T}),
    "pfexec": Runner(privilege="`pfexec` runs a command with the privileges of an execution profile"),
    "flatpak-spawn": Runner({"--directory": T, "--env": "env", "--forward-fd": T, "--app-path": T, "--usr-path": T,
                             "--sandbox-expose": T, "--sandbox-expose-ro": T, "--sandbox-expose-path": T,
                             "--sandbox-expose-path-ro": T, "--sandbox-flag": T, "--unset-env": T}),
    "tsp": Runner(dict.fromkeys(("-L", "-D", "-W", "-N"), T),
                  dict.fromkeys(("-l", "-t", "-c", "-k", "-K", "-C", "-S", "-r", "-w", "-o", "-i", "-s", "-p", "-u",
                                 "-U", "-V", "-T", "-h"), "no-command")),
    "systemd-nspawn": Runner(dict.fromkeys(("-D", "--directory", "-i", "--image", "-M", "--machine", "-u", "--user",
                                            "--bind", "--bind-ro", "--chdir", "-E", "--setenv", "--template",
                                            "--overlay", "--overlay-ro", "--tmpfs", "--network-interface",
                                            "--network-bridge", "-p", "--port", "--capability", "--drop-capability",
                                            "--private-users", "--register", "--property", "-S", "--slice"), T),
                             privilege="`systemd-nspawn` runs a container as root"),
}

#: bwrap options → how many words follow them
_BWRAP_ARITY = {
    **dict.fromkeys(("--bind", "--bind-try", "--dev-bind", "--dev-bind-try", "--ro-bind", "--ro-bind-try",
                     "--symlink", "--setenv", "--bind-data", "--ro-bind-data", "--file", "--chmod", "--bind-fd",
                     "--ro-bind-fd"), 2),
    "--overlay": 3,
    **dict.fromkeys(("--args", "--uid", "--gid", "--hostname", "--chdir", "--unsetenv", "--lock-file", "--sync-fd",
                     "--info-fd", "--json-status-fd", "--block-fd", "--userns-block-fd", "--userns", "--userns2",
                     "--pidns", "--exec-label", "--file-label", "--proc", "--dev", "--tmpfs", "--mqueue", "--dir",
                     "--remount-ro", "--seccomp", "--add-seccomp-fd", "--perms", "--size", "--cap-add",
                     "--cap-drop", "--argv0", "--overlay-src", "--tmp-overlay", "--ro-overlay"), 1),
}
_BWRAP_BINDS = frozenset({"--bind", "--bind-try", "--dev-bind", "--dev-bind-try", "--ro-bind", "--ro-bind-try"})


def model_bwrap(inv: Invocation) -> None:
    """``bwrap [OPTIONS] CMD``: the command is modelled; a bind whose source and destination
    differ (``--bind ~ /x``) makes its paths name other host files (unknown); ``--chdir`` moves
    the command, whose relative paths are then not known to be the workspace's."""
    argv, index = inv.argv, 1
    while index < len(argv):
        word = argv[index]
        if word == "--":
            index += 1
            break
        if not word.startswith("--"):
            break
        arity = _BWRAP_ARITY.get(word, 0)
        values = argv[index + 1:index + 1 + arity]
        if word in _BWRAP_BINDS and len(values) == 2 and inv.path(values[0]) != inv.path(values[1]):
            inv.unknown(f"`bwrap {word}` shows `{values[0]}` at `{values[1]}`: what the command does there "
                        "is done to the source", index)
        elif word == "--chdir" and values:
            inv.unknown(f"`bwrap --chdir {values[0]}` runs the command in a directory of the sandbox", index)
        index += 1 + arity
    if index < len(argv):
        inv.run(index)


def model_nsjail(inv: Invocation) -> None:
    """``nsjail [OPTIONS] -- CMD``: the command after ``--`` is modelled; ``-R``/``-B`` binds and
    ``--chroot`` show host paths under other names (unknown); without ``--`` its config runs
    a command the text does not show."""
    argv = inv.argv
    if "--" not in argv:
        if len(argv) > 1:
            inv.unknown("`nsjail` runs the command its options or config file name, which is not judged", 0)
        return
    stop = argv.index("--")
    for index in range(1, stop):
        option = argv[index].partition("=")[0]
        if option in ("-R", "--bindmount_ro", "-B", "--bindmount", "-c", "--chroot", "-C", "--config"):
            inv.unknown(f"`nsjail {option}` maps host paths into the jail under other names", index)
            break
    inv.run(stop + 1)


_APPTAINER_VALUES = {**dict.fromkeys(("-B", "--bind", "--mount", "-H", "--home", "--env", "--env-file", "-o",
                                      "--overlay", "-W", "--workdir", "--pwd", "--security", "--app", "--network",
                                      "--network-args", "--dns", "--hostname", "-S", "--scratch", "--fusemount",
                                      "--add-caps", "--drop-caps", "--apply-cgroups", "--cpus", "--memory",
                                      "--oci", "--platform", "--arch", "--library", "--docker-login"), T)}


def model_apptainer(inv: Invocation) -> None:
    """``apptainer exec [OPTS] IMAGE CMD`` (and singularity): the programs are the image's
    (unknown), and the container sees the home, the working directory and /tmp of the host, so
    the command is also judged as run here; ``run`` runs
    the image's own script (unknown code); ``-B SRC:DEST`` binds a host path under another name."""
    words = inv.argv
    if len(words) < 2 or words[1] not in ("exec", "run", "instance", "shell", "test"):
        return
    sub = words[1]
    parsed = parse_options(words, _APPTAINER_VALUES, start=2, stop_at_first_positional=True)
    for option, value, index in parsed.options:
        if option in ("-B", "--bind", "--mount") and value and ":" in value:
            source, _, rest = value.partition(":")
            if inv.path(source) != inv.path(rest.partition(":")[0]):
                inv.unknown(f"`{inv.name} {option} {value}` shows a host path under another name", index)
        elif option in ("--add-caps", "--security"):
            inv.privilege(f"`{inv.name} {option}` changes the container's capabilities or security", index)
    positionals = parsed.positionals
    if sub == "exec" and len(positionals) >= 2:
        inv.unknown(f"`{inv.name} exec` runs the command with the programs of the image `{positionals[0][0]}`, "
                    "which are not seen", positionals[0][1])
        inv.run(positionals[1][1])
    elif sub in ("run", "instance", "test") and positionals:
        inv.unknown(f"`{inv.name} {sub}` runs the image's own script, whose code is not seen", positionals[0][1])


def model_distrobox_enter(inv: Invocation) -> None:
    """``distrobox-enter [NAME] [OPTS] -- CMD`` (``distrobox enter`` is in
    :mod:`~.buildtools`): the container's programs are its image's (unknown), and it shares the
    home directory, so the command is also judged as run here; ``--root`` runs it as root."""
    argv = inv.argv
    stop = argv.index("--") if "--" in argv else len(argv)
    inv.unknown("`distrobox-enter` runs commands in a toolbox container that shares the home directory", 0)
    for index in range(1, stop):
        if argv[index] in ("-r", "--root"):
            inv.privilege("`distrobox-enter --root` runs the command as root", index)
    if stop + 1 < len(argv):
        inv.run(stop + 1)


def model_setarch(inv: Invocation) -> None:
    """``setarch ARCH [FLAGS] [CMD]``, ``linux32``/``linux64 [FLAGS] [CMD]``: the flags take no
    value; the command (a shell when absent) is modelled."""
    index = 2 if inv.name == "setarch" else 1
    while index < len(inv.argv) and inv.argv[index].startswith("-"):
        index += 1
        if inv.argv[index - 1] == "--":
            break
    if index < len(inv.argv):
        inv.run(index)


def model_runcon(inv: Invocation) -> None:
    """``runcon CONTEXT CMD`` or ``runcon [-u USER] [-r ROLE] [-t TYPE] [-l RANGE] CMD``: runs the
    command in another SELinux security context (a privilege change); the command is modelled."""
    inv.privilege("`runcon` runs a command in another SELinux security context", 0)
    parsed = parse_options(inv.argv, dict.fromkeys(("-u", "--user", "-r", "--role", "-t", "--type", "-l", "--range"),
                                                   T), stop_at_first_positional=True)
    skip = 0 if parsed.options else 1  # (with no option the first word is the context)
    if len(parsed.positionals) > skip:
        inv.run(parsed.positionals[skip][1])


def model_ksu(inv: Invocation) -> None:
    """``ksu [USER] [OPTS] [-e CMD ARGS]``: Kerberos su, a privilege change; the command after
    ``-e`` is modelled."""
    inv.privilege("`ksu` runs a command as another user", 0)
    if "-e" in inv.argv[1:]:
        index = inv.argv.index("-e", 1)
        if index + 1 < len(inv.argv):
            inv.run(index + 1)


_PUEUE_ADD = {**dict.fromkeys(("-d", "--delay", "-g", "--group", "-a", "--after", "-o", "--priority", "-l",
                               "--label", "-w", "--working-directory"), T)}


def model_pueue(inv: Invocation) -> None:
    """``pueue add [OPTS] [--] CMD…``: the words are joined and run later by the pueue daemon
    with ``sh -c`` (in ``-w DIR`` when given: unknown)."""
    if len(inv.argv) < 2 or inv.argv[1] != "add":
        return
    parsed = parse_options(inv.argv, _PUEUE_ADD, start=2, stop_at_first_positional=True)
    for option, value, index in parsed.options:
        if option in ("-w", "--working-directory") and value is not None:
            inv.unknown(f"`pueue add {option} {value}` runs the command in another directory", index)
    if parsed.positionals:
        start = parsed.positionals[0][1]
        inv.script(" ".join(inv.argv[start:]), start, what="the command `pueue add` queues")


for _names, _runner in RUNNERS.items():
    for _name in _names.split():
        RUNNERS_BY_NAME[_name] = _runner
    register(_names, model_runner)
register("bwrap", model_bwrap)
register("nsjail", model_nsjail)
register("apptainer singularity", model_apptainer)
register("distrobox-enter", model_distrobox_enter)
register("setarch linux32 linux64 i386 x86_64", model_setarch)
register("runcon", model_runcon)
register("ksu", model_ksu)
register("pueue", model_pueue)
