"""System tools: system package managers, services, permissions, processes, cron, disks.

Language package managers are in :mod:`.packages`, container engines in :mod:`.containers`."""

from __future__ import annotations

import re

from stockade.analyzer.effects import CHILD_PID
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import parse_options, register

_PKG_READONLY = {"list", "search", "show", "info", "policy", "depends", "rdepends", "madison", "query",
                 "-Q", "-Ss", "-Si", "-Qi", "-Ql", "outdated", "why", "view", "ls", "config", "help", "--version",
                 "freeze", "check", "audit", "doctor", "-l", "--list", "-s", "--status", "-L"}
_SYSTEM_PKG = {"apt": "/usr", "apt-get": "/usr", "aptitude": "/usr", "dpkg": "/usr", "yum": "/usr",
               "dnf": "/usr", "zypper": "/usr", "pacman": "/usr", "apk": "/usr", "rpm": "/usr", "snap": "/snap",
               "flatpak": "/var/lib/flatpak", "port": "/opt/local", "emerge": "/usr", "nix-env": "/nix"}


def model_system_pkg(inv: Invocation) -> None:
    """A system package manager: installing or removing writes system directories (and
    package scripts run as root); queries only read.  ``dpkg``'s archive operations
    (``-x``, ``-b``, ``-c`` …) are ``dpkg-deb``'s."""
    words = inv.argv[1:]
    if inv.name == "dpkg" and words and words[0].partition("=")[0] in _DEB_OPERATIONS:
        model_dpkg_deb(inv)
        return
    if not words or any(w in _PKG_READONLY for w in words[:2]) or (
            _rpm_query(words) if inv.name == "rpm" else _pkg_query(inv.name, words)):
        return
    inv.write(_SYSTEM_PKG.get(inv.name, "/usr"), 1, recursive=True)



#: dpkg-deb's operations: option → what its operands are (``extract``: DEB then a directory
#: written; ``build``: a directory read then the package written; ``read``: DEB only)
_DEB_OPERATIONS = {
    **dict.fromkeys(("-x", "--extract", "-X", "--vextract", "-R", "--raw-extract"), "extract"),
    **dict.fromkeys(("-e", "--control"), "extract"),
    **dict.fromkeys(("-b", "--build"), "build"),
    **dict.fromkeys(("-c", "--contents", "-I", "--info", "-f", "--field", "--fsys-tarfile", "--ctrl-tarfile", "-W",
                     "--show"), "read"),
}


def model_dpkg_deb(inv: Invocation) -> None:
    """``dpkg-deb -x|-X|-R DEB DIR`` (``-e DEB [DIR]``: ``./DEBIAN``) writes the package's
    files below DIR; ``-b DIR [DEB]`` writes the package (``DIR.deb`` by default); ``-c``,
    ``-I``, ``-f``, ``-W`` read it."""
    operation = None
    operands: list[tuple[str, int]] = []
    for index, word in enumerate(inv.argv[1:], start=1):
        if operation is None and word.partition("=")[0] in _DEB_OPERATIONS:
            operation = _DEB_OPERATIONS[word.partition("=")[0]]
        elif word[:1] != "-" or word == "-":
            operands.append((word, index))
    if operation is None or not operands:
        return
    first, first_index = operands[0]
    if operation == "build":
        inv.read(first, first_index, recursive=True)
        if len(operands) > 1:
            inv.write(operands[1][0], operands[1][1])
        else:
            inv.write(first.rstrip("/") + ".deb", first_index)
        return
    inv.read(first, first_index)
    if operation == "extract":
        if len(operands) > 1:
            inv.write(operands[1][0], operands[1][1], recursive=True)
        elif inv.argv[1].partition("=")[0] in ("-e", "--control"):
            inv.write("DEBIAN", first_index, recursive=True)

#: rpm's query mode (``-q`` with its letters bundled: ``-qa``, ``-qil``, ``-qpR``; not ``-V``,
#: whose ``%verifyscript`` scriptlets run)
_RPM_QUERY_RE = re.compile(r"-q[a-zA-Z]*|--query|--querytags|--version|--help")
#: rpm options that run code or name configuration in any mode (``--eval '%(CMD)'`` runs CMD,
#: ``--pipe CMD`` pipes the output to CMD, macro files and definitions can hold ``%(…)``)
_RPM_CODE = ("-E", "--eval", "--pipe", "-D", "--define", "--macros", "--rcfile", "--load", "--predefine",
             "--dbpath", "--root", "-r")


def _rpm_query(words: list[str]) -> bool:
    """Whether ``rpm WORDS`` only queries the package database: the mode is the
    first word, and no option that runs code or points rpm elsewhere is given."""
    return _RPM_QUERY_RE.fullmatch(words[0]) is not None and not any(
        word.partition("=")[0] in _RPM_CODE for word in words)


#: per package manager: its query operations (dpkg -S, pacman -Qi, dnf repoquery …; rpm's: :func:`_rpm_query`)
_PKG_QUERIES = {
    "dpkg": re.compile(r"-[lLsSpcIW]|--(list|listfiles|status|search|print-avail|contents|info|show|get-selections"
                       r"|print-architecture|print-foreign-architectures|audit|verify|compare-versions)"),
    "pacman": re.compile(r"-Q\w*|--query|-S[sgil]+|-F[lsqxo]*|-T|--deptest|-V"),
    "dnf": re.compile(r"repoquery|provides|whatprovides|repolist|list|info|search|check-update|deplist"),
    "yum": re.compile(r"repoquery|provides|whatprovides|repolist|list|info|search|check-update|deplist"),
    "apk": re.compile(r"info|search|list|policy|version|dot|stats"),
    "zypper": re.compile(r"se|search|if|info|lr|repos|pa|packages|patterns|wp|what-provides|lu|list-updates"),
    "apt": re.compile(r"list|show|search|policy|depends|rdepends|showsrc"),
}


def _pkg_query(name: str, words: list[str]) -> bool:
    """Whether a system package manager's first operation only queries its database (the
    manager's query spellings: ``dpkg -L pkg``, ``pacman -Qi``, ``dnf repoquery``);
    an option it does not know keeps the install reading (a write of the system)."""
    pattern = _PKG_QUERIES.get(name)
    if pattern is None:
        return False
    first = next((word for word in words if word not in ("-y", "--quiet", "-q")), "")
    if name in ("dpkg", "pacman"):
        first = words[0]
    return pattern.fullmatch(first) is not None


def model_systemctl(inv: Invocation) -> None:
    """systemctl/service/launchctl: queries read; enabling installs autostart (persistence);
    other changes to system services need privilege."""
    words = [w for w in inv.argv[1:] if not w.startswith("-")]
    user = "--user" in inv.argv
    verb = words[0] if words else ""
    if inv.name == "service" and len(words) >= 2:
        verb = words[1]
    if verb in ("status", "show", "list-units", "list-unit-files", "is-active", "is-enabled", "cat", "list",
                "print", "help", ""):
        return
    if verb in ("enable", "link", "load", "bootstrap", "add-wants", "preset", "reenable", "set-default"):
        inv.persistence(f"`{inv.name} {verb}` installs a service that starts automatically", 1)
    elif not user:
        inv.privilege(f"`{inv.name} {verb}` changes system services", 1)
    elif verb in _USER_UNIT_WRITES:  # (`--user mask`: a link in the user's unit directory)
        inv.write(inv.walker.context.home.rstrip("/") + "/.config/systemd/user", 1, recursive=True)
    elif verb in _USER_UNIT_PROCESSES:
        inv.unknown(f"`{inv.name} --user {verb}` starts or signals the user's services, processes this command "
                    "does not show", 1)


#: ``systemctl --user`` verbs that write the user's unit directory (``~/.config/systemd/user``)
_USER_UNIT_WRITES = frozenset({"mask", "unmask", "disable", "revert", "set-property", "add-requires", "edit"})
#: ``systemctl --user`` verbs that start, stop or signal the user's services
_USER_UNIT_PROCESSES = frozenset({"start", "stop", "restart", "try-restart", "reload", "reload-or-restart",
                                  "try-reload-or-restart", "kill", "isolate", "daemon-reexec", "freeze", "thaw",
                                  "clean", "condrestart", "force-reload"})


def model_chmod(inv: Invocation) -> None:
    """chmod: changes modes (a write); setuid/setgid bits are privilege escalation."""
    words = [(w, i) for i, w in enumerate(inv.argv[1:], start=1) if not w.startswith("-") or re.match(r"^-[rwxXst]", w)]
    recursive = any(w in ("-R", "--recursive") for w in inv.argv[1:])
    if not words:
        return
    reference = next((i for i, w in enumerate(inv.argv) if w == "--reference" or w.startswith("--reference=")), None)
    if reference is not None:  # `--reference=RFILE` (or `--reference RFILE`) instead of a mode
        words = [(w, i) for w, i in words if i != reference + 1 or "=" in inv.argv[reference]]
        for word, index in words:
            inv.write(word, index, recursive=recursive)
        return
    mode, mode_index = words[0]
    if re.search(r"[+=][rwxXt]*s", mode) or re.fullmatch(r"[0-7]*[4-7][0-7]{3}", mode):
        inv.privilege(f"`chmod {mode}` sets the setuid/setgid bit", mode_index)
    for word, index in words[1:]:
        inv.write(word, index, recursive=recursive)


def model_chown(inv: Invocation) -> None:
    """chown/chgrp: giving files to another user needs privilege; the files are written."""
    words = [(w, i) for i, w in enumerate(inv.argv[1:], start=1) if not w.startswith("-")]
    recursive = any(w in ("-R", "--recursive") for w in inv.argv[1:])
    if not words:
        return
    inv.privilege(f"`{inv.name}` changes file ownership", words[0][1])
    for word, index in words[1:]:
        inv.write(word, index, recursive=recursive)


_ALTERNATIVES_QUERIES = frozenset({"--display", "--query", "--list", "--get-selections", "--help", "--version"})


def model_update_alternatives(inv: Invocation) -> None:
    """update-alternatives/alternatives: anything but a query rewrites the links in the
    alternatives directory (``--altdir``, else ``/etc/alternatives``) and its state
    (``--admindir``, else ``/var/lib/dpkg/alternatives``)."""
    parsed = parse_options(inv.argv, {"--altdir", "--admindir", "--log", "--root", "--set-selections-never"})
    if any(option in _ALTERNATIVES_QUERIES for option, _, _ in parsed.options) or len(inv.argv) == 1:
        return
    altdir = parsed.values_of("--altdir")
    admindir = parsed.values_of("--admindir")
    inv.write(altdir[-1][0] if altdir else "/etc/alternatives", altdir[-1][1] if altdir else 0, recursive=True)
    inv.write(admindir[-1][0] if admindir else "/var/lib/dpkg/alternatives", admindir[-1][1] if admindir else 0,
              recursive=True)
    for value, index in parsed.values_of("--log"):
        inv.write(value, index)


def model_logrotate(inv: Invocation) -> None:
    """logrotate [-s STATE] [-l LOG] CONFIG…: reads its configuration, writes the state file;
    rotating moves and deletes the logs the configuration names and runs its
    ``postrotate``/``prerotate`` scripts, which the command does not show (``-d``: a dry run)."""
    parsed = parse_options(inv.argv, {"-s", "--state", "-l", "--log", "-m", "--mail"})
    for option, value, index in parsed.options:
        if value is not None and option in ("-s", "--state", "-l", "--log"):
            inv.write(value, index)
        elif value is not None and option in ("-m", "--mail"):
            inv.unknown(f"`logrotate {option}` mails logs with `{value}`", index)
    for word, index in parsed.positionals:
        inv.read(word, index, recursive=True)
    if not parsed.has("-d", "--debug") and parsed.positionals:
        inv.unknown("`logrotate` rotates the logs its configuration names and runs its scripts, which the command "
                    "does not show", parsed.positionals[0][1])


def model_kill(inv: Invocation) -> None:
    """kill: signalling every process (``-1``) or init (``1``) is out of the command's reach;
    pkill/killall match processes by name (not visible which)."""
    if inv.name == "pkill" and own_children(inv):
        return  # (`pkill -P $$`, `pkill -P "$pid"` of a job it started: the command's own descendants)
    if inv.name in ("pkill", "killall", "killall5"):
        inv.unknown(f"`{inv.name}` signals every process whose name matches", 0)
        return
    targets = [w for w in inv.argv[1:] if (w.lstrip("-").isdigit() and not w.startswith("-")) or w == "-1"]
    if any(t in ("1", "-1") for t in targets[-len(targets):] if targets):
        inv.unknown("`kill` signals every process or init", 0)


def own_children(inv: Invocation) -> bool:
    """Whether a pkill/pgrep selects only children (``-P PPID``, ``--parent``) of this shell
    (``$$``) or of jobs it started (``$!``): the command's own processes."""
    argv = inv.argv
    parents: list[str] = []
    for index, word in enumerate(argv[1:], start=1):
        if word in ("-P", "--parent") and index + 1 < len(argv):
            parents.extend(argv[index + 1].split(","))
        elif word.startswith("--parent="):
            parents.extend(word.partition("=")[2].split(","))
        elif word.startswith("-P") and len(word) > 2:
            parents.extend(word[2:].split(","))
    return bool(parents) and all(parent in ("self", CHILD_PID) for parent in parents)


def model_jobs(inv: Invocation) -> None:
    """``jobs -p``: the pids of this shell's jobs (one per line)."""
    if any(word[:1] == "-" and "p" in word for word in inv.argv[1:]):
        inv.output(CHILD_PID + "\n", "the pids of this shell's jobs `jobs -p` prints")


#: loginctl subcommands that end or signal whole sessions (every process of a user or seat)
_LOGINCTL_KILLS = frozenset({"terminate-user", "kill-user", "terminate-session", "kill-session", "terminate-seat",
                             "flush-devices"})


def model_loginctl(inv: Invocation) -> None:
    """``loginctl terminate-user|kill-user|terminate-session …``: every process of that user or
    session is signalled (as ``kill -1``): which ones cannot be seen; ``enable-linger`` keeps a
    user's services running after logout (persistence)."""
    words = [(word, index) for index, word in enumerate(inv.argv[1:], start=1) if not word.startswith("-")]
    if not words:
        return
    sub, at = words[0]
    if sub in _LOGINCTL_KILLS:
        inv.unknown(f"`loginctl {sub}` signals every process of the sessions it names", at)
    elif sub == "enable-linger":
        inv.persistence("`loginctl enable-linger` keeps the user's services running after logout", at)
    elif sub in ("poweroff", "reboot", "halt", "suspend", "hibernate", "hybrid-sleep", "suspend-then-hibernate",
                 "kexec", "soft-reboot"):  # (logind's power actions, as `systemctl poweroff`)
        inv.privilege(f"`loginctl {sub}` stops or restarts the machine", at)


def model_crontab(inv: Invocation) -> None:
    """crontab: listing reads; installing or editing a table is persistence."""
    if "-l" in inv.argv[1:]:
        return
    inv.persistence("`crontab` installs commands that run on a schedule", 0)


def model_at(inv: Invocation) -> None:
    """at/batch: schedules commands for later (persistence)."""
    if any(w in ("-l", "-c") for w in inv.argv[1:]) or inv.name == "atq":
        return
    inv.persistence(f"`{inv.name}` schedules commands to run later", 0)


def model_mkfs(inv: Invocation) -> None:
    """mkfs/fdisk/wipefs…: write the device named."""
    for index, word in enumerate(inv.argv[1:], start=1):
        if word.startswith("/"):
            inv.write(word, index, recursive=True)


def model_mount(inv: Invocation) -> None:
    """mount/umount/modprobe/insmod/setcap…: need root."""
    if inv.name in ("mount", "findmnt") and len(inv.argv) == 1:
        return
    inv.privilege(f"`{inv.name}` needs administrator rights", 0)


def model_sysctl(inv: Invocation) -> None:
    """sysctl: prints kernel parameters (``-n``, ``-a``, ``-N``, names) unless it sets one —
    ``NAME=VALUE``, ``-w``/``--write``, or a load of files (``-p``/``--load``, ``--system``,
    BSD's ``-f``) —, which needs administrator rights."""
    for word in inv.argv[1:]:
        if ("=" in word and not word.startswith("--pattern")) or word in ("--write", "--load", "--system") or \
                word.startswith(("--load=", "--write=")) or \
                (word[:1] == "-" and word[1:2] != "-" and any(letter in word[1:] for letter in "wpf")):
            inv.privilege(f"`{inv.name} {word}` changes kernel parameters and needs administrator rights", 0)
            return
    inv.read("/proc/sys", None, recursive=True)


def model_account_cache(inv: Invocation) -> None:
    """chsh/chfn change the user's entry in ``/etc/passwd`` (a login shell runs at every login)
    through a setuid helper; ldconfig rewrites the system's library cache (``-p``/
    ``--print-cache``: only prints it)."""
    if inv.name == "ldconfig" and any(w in ("-p", "--print-cache", "--help", "-V", "--version") for w in inv.argv[1:]):
        return
    if inv.name in ("chsh", "chfn") and any(w in ("-l", "--list-shells", "-h", "--help") for w in inv.argv[1:]):
        return
    inv.privilege(f"`{inv.name}` changes the system's account database or library cache", 0)


#: ``ip`` objects and the verbs that change them (``ip link set eth0 down``, ``ip route add``)
_IP_CHANGES = frozenset({"add", "a", "del", "delete", "d", "set", "change", "chg", "replace", "flush", "append",
                         "prepend", "up", "down", "attach", "detach", "exec", "save", "restore", "test"})
#: read-only first words of administration tools that otherwise change the system
_ADMIN_QUERIES = {
    "hostnamectl": frozenset({"", "status", "--help", "--version", "hostname"}),
    "timedatectl": frozenset({"", "status", "show", "list-timezones", "timesync-status", "show-timesync", "--help"}),
    "localectl": frozenset({"", "status", "list-locales", "list-keymaps", "list-x11-keymap-layouts", "--help"}),
    "ifconfig": frozenset({"", "-a", "-s", "--help"}),
    "route": frozenset({"", "-n", "-e", "-ee", "--help"}),
    "swapon": frozenset({"--show", "-s", "--summary", "--help", "--version"}),
    "losetup": frozenset({"", "-a", "--all", "-l", "--list", "-j", "--associated", "--help"}),
    "ethtool": frozenset(),
}


def model_admin(inv: Invocation) -> None:
    """Administration tools that change the machine (``ip link set``, ``swapoff -a``,
    ``ifconfig eth0 down``, ``hostnamectl set-hostname``, ``losetup``, ``cryptsetup``): they need
    administrator rights (privilege); their read-only queries (``ip addr``, ``swapon --show``,
    ``ifconfig -a``, ``hostnamectl status``) change nothing.  ``add-apt-repository`` and
    ``apt-key add`` write the package sources under ``/etc/apt``."""
    name = inv.name
    words = [word for word in inv.argv[1:] if word not in ("-4", "-6", "-c", "-color", "--color", "-s", "-d", "-j",
                                                           "-json", "-p", "-pretty", "-br", "-brief")]
    if name == "ip":
        if not words or words[0] in ("-V", "-Version", "help") or not _IP_CHANGES.intersection(words[1:]):
            return
        inv.privilege(f"`ip {' '.join(words[:2])}` changes the network configuration", 0)
        return
    if name in ("add-apt-repository", "apt-add-repository") or (name == "apt-key" and words[:1] in (["add"], ["adv"])):
        inv.write("/etc/apt/sources.list.d" if name != "apt-key" else "/etc/apt/trusted.gpg.d", 0, recursive=True)
        return
    if name == "apt-key":
        return  # (list, finger, export: queries)
    queries = _ADMIN_QUERIES.get(name, frozenset())
    first = inv.argv[1] if len(inv.argv) > 1 else ""
    if name == "ifconfig" and (len(inv.argv) <= 2 or first in queries):  # `ifconfig [-a|IFACE]`: shows
        return
    if name in _ADMIN_QUERIES and (first in queries or (name == "ethtool" and not first.startswith("-s")
                                                     and not first.startswith(("-K", "-A", "-G", "-L", "-E")))):
        return
    inv.privilege(f"`{name}` changes the system and needs administrator rights", 0)


register("ip ifconfig route swapon swapoff losetup cryptsetup dmsetup hostnamectl timedatectl localectl ethtool "
         "hwclock add-apt-repository apt-add-repository apt-key", model_admin)
register(" ".join(_SYSTEM_PKG), model_system_pkg)
register("systemctl service launchctl update-rc.d chkconfig", model_systemctl)
register("chmod", model_chmod)
register("chown chgrp", model_chown)
register("kill pkill killall killall5", model_kill)
register("jobs", model_jobs, builtin=True)
register("loginctl", model_loginctl)
register("update-alternatives alternatives", model_update_alternatives)
register("chsh chfn ldconfig", model_account_cache)
register("logrotate", model_logrotate)
register("crontab", model_crontab)
register("at batch atq", model_at)
register("mkfs mkfs.ext4 mkfs.ext3 mkfs.xfs mkfs.vfat mkfs.btrfs mke2fs fdisk sfdisk parted wipefs mkswap "
         "shred-dev blkdiscard", model_mkfs)
register("sysctl", model_sysctl)
register("dpkg-deb", model_dpkg_deb)
register("mount umount modprobe insmod rmmod setcap iptables nft ufw useradd usermod userdel "
         "groupadd passwd visudo chpasswd reboot shutdown halt poweroff init telinit runlevel-never", model_mount)
