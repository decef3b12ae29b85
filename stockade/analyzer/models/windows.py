"""Windows programs: what ``robocopy``, ``xcopy``, ``icacls``, ``reg``, ``schtasks``, ``sc``,
``certutil``, ``runas``, ``winget`` … read, write, delete, run and contact; and the Windows
shells ``cmd`` and ``powershell``/``pwsh`` as programs (their code is parsed and walked by
:mod:`stockade.analyzer.cmdshell` and :mod:`stockade.analyzer.pwsh`).

Paths are resolved with Windows semantics (:mod:`stockade.analyzer.winpaths`) whoever runs
the program — bash under WSL or Git Bash, CMD or PowerShell.  Switches are case-insensitive
and written ``/x``, ``-x``, ``/x:value``.  Program names are matched case-insensitively,
with or without ``.exe`` (:func:`program_name`).

Persistence (deny): registry autostart keys (``Run``, ``RunOnce``, ``Winlogon``, services,
``Image File Execution Options``, ``AppInit_DLLs``, …), scheduled tasks, services, file
associations (``ftype``/``assoc``), ``setx`` (every later program's environment), the
Startup folders and PowerShell profile scripts (see :func:`persistence_path`).  Privilege
(deny): ``runas``, ``gsudo``, ``sudo``, machine-wide registry and service changes, adding
users to groups.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import (
    UNKNOWN,
    Delete,
    LinkTarget,
    Network,
    Persistence,
    Read,
    Rename,
    Write,
    show,
)
from stockade.analyzer.exec import Invocation, run_command
from stockade.analyzer.models import register
from stockade.analyzer.winpaths import is_mapped_path, resolve_variants, unc_host

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable
    from typing import Any

    from stockade.analyzer.effects import SpanT
    from stockade.analyzer.exec import Stdin

_STRIPPED_SUFFIXES = (".exe", ".com")
_SCRIPT_SUFFIXES = (".cmd", ".bat")
#: programs installed on Windows as ``NAME.cmd`` shims (npm's and others'): the program itself
_CMD_SHIMS = frozenset({"npm", "npx", "yarn", "pnpm", "code", "gradle", "gradlew", "mvn", "mvnw", "ng", "tsc",
                        "eslint", "prettier", "jest", "vite", "node-gyp", "conda", "poetry", "az", "gcloud",
                        "corepack", "bun", "deno", "pipenv", "uv"})


def program_name(word: str) -> str:
    """A Windows program word as the models know it: the last component of a path (either
    separator), lower-cased, without ``.exe``/``.com`` (nor ``.cmd``/``.bat`` when a model
    has the stem: ``npm.cmd`` is npm)."""
    name = word.replace("\\", "/").rpartition("/")[2].lower()
    name = name.rstrip(". ")
    for suffix in _STRIPPED_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    for suffix in _SCRIPT_SUFFIXES:
        stem = name[: -len(suffix)]
        if name.endswith(suffix) and stem in _CMD_SHIMS:
            return stem
    return name


# -- effects with Windows paths -------------------------------------------------------------


def _span(inv: Invocation, index: int | None) -> SpanT:
    return inv.at(index)


def _unc(inv: Invocation, word: str, index: int | None) -> None:
    host = unc_host(word)
    if host is not None:
        if UNKNOWN in host:
            inv.unknown(f"contacts a file server that is not known before it runs (`{show(word)}`)", index)
        else:
            inv.walker.effects.append(Network(host, 445, _span(inv, index)))


def paths(inv: Invocation, word: str) -> list[str]:
    """The mapped paths a Windows word names (see :func:`~stockade.analyzer.winpaths.resolve_variants`)."""
    return resolve_variants(inv.walker, word)


def win_read(inv: Invocation, word: str, index: int | None, recursive: bool = False) -> None:
    """The program reads the Windows path ``word``."""
    if not word or _is_device(word):
        return
    _unc(inv, word, index)
    span = _span(inv, index)
    for path in paths(inv, word):
        inv.walker.effects.append(Read(path, span, recursive))


def _changed_paths(inv: Invocation, word: str, recursive: bool) -> list[str]:
    """The paths a write or delete of ``word`` is judged as.  On Windows ``*`` matches names
    that start with a dot: a recursive change through ``DIR\\*`` is judged as a recursive
    change of ``DIR`` (as bash's ``rm -rf DIR`` is: the rules below it decide), a change of
    single entries leaves the dot-names' variant out (the names it could reach are judged
    for reads)."""
    found = [path for path in paths(inv, word) if "/.*" not in path or "/.*" in word.replace("\\", "/")]
    if recursive and "*" in word:
        for path in list(found):
            head = path.partition("*")[0]
            parent = head.rpartition("/")[0] if not head.endswith("/") else head.rstrip("/")
            if parent and parent not in found:
                found.append(parent)
    return found


def win_write(inv: Invocation, word: str, index: int | None, recursive: bool = False) -> None:
    """The program writes the Windows path ``word`` (a persistence location says so)."""
    if not word or _is_device(word):
        return
    _unc(inv, word, index)
    span = _span(inv, index)
    for path in _changed_paths(inv, word, recursive):
        inv.walker.effects.append(Write(path, span, recursive))
        what = persistence_path(path)
        if what is not None:
            inv.walker.effects.append(Persistence(what, span))


def win_delete(inv: Invocation, word: str, index: int | None, recursive: bool = False) -> None:
    """The program deletes the Windows path ``word``."""
    if not word or _is_device(word):
        return
    _unc(inv, word, index)
    span = _span(inv, index)
    for path in _changed_paths(inv, word, recursive):
        inv.walker.effects.append(Delete(path, span, recursive))


def win_rename(inv: Invocation, source: str, dest: str, index: int | None) -> None:
    """The program moves ``source`` to ``dest``."""
    span = _span(inv, index)
    _unc(inv, source, index)
    _unc(inv, dest, index)
    for src in paths(inv, source):
        for dst in paths(inv, dest):
            inv.walker.effects.append(Rename(src, dst, span))
            what = persistence_path(dst)
            if what is not None:
                inv.walker.effects.append(Persistence(what, span))


_DEVICES = re.compile(r"^(?:con|prn|aux|nul|com[0-9]|lpt[0-9]|conin\$|conout\$)(?:\..*)?:?$", re.IGNORECASE)


def _is_device(word: str) -> bool:
    """``NUL``, ``CON`` … (any directory, any extension): no file."""
    name = word.replace("\\", "/").rpartition("/")[2]
    return bool(_DEVICES.match(name)) or word.lower() in ("/dev/null",)


_PERSIST_PATHS = (
    ("/microsoft/windows/start menu/programs/startup", "the Startup folder"),
    ("/windows/system32/tasks", "the scheduled tasks folder"),
    ("/windows/system32/grouppolicy", "group policy scripts"),
    ("/documents/windowspowershell/", "a PowerShell profile script"),
    ("/documents/powershell/", "a PowerShell profile script"),
    ("/windows/system32/windowspowershell/v1.0/profile", "a PowerShell profile script"),
    ("/powershell/7/profile", "a PowerShell profile script"),
)


def persistence_path(path: str) -> str | None:
    """What runs later from the mapped path ``path`` (case-insensitive), or None."""
    low = path.lower()
    if "start menu" not in low and "system32" not in low and "powershell" not in low:
        return None
    for marker, what in _PERSIST_PATHS:
        if marker.endswith("/"):
            if marker in low and "profile" in low.rpartition("/")[2]:
                return what
        elif marker in low + "/" or low.endswith(marker):
            return what
    return None


# -- switches ------------------------------------------------------------------------------


def switches(argv: list[str], start: int = 1, dash: bool = True, values: frozenset[str] = frozenset(),
             context: Any = None) -> tuple[dict[str, tuple[str | None, int]], list[tuple[str, int]]]:
    """Split Windows-style arguments: ``/name``, ``/name:value`` (and ``-name`` when
    ``dash``) → lower-cased name → (value, index); ``values``: switches whose value is the
    next word; the rest are positionals (word, index).  ``context``: a word that is a path
    of the analyzer's namespace (:func:`~stockade.analyzer.winpaths.is_mapped_path`) is a
    positional."""
    found: dict[str, tuple[str | None, int]] = {}
    positional: list[tuple[str, int]] = []
    index = start
    while index < len(argv):
        word = argv[index]
        if len(word) > 1 and (word[0] == "/" or (dash and word[0] == "-")) and not (
                word[0] == "/" and (("/" in word[1:] and "\\" in word) or (context is not None
                                                                          and is_mapped_path(word, context)))):
            body = word[1:]
            name, colon, value = body.partition(":")
            name = name.lower()
            if colon:
                found[name] = (value, index)
            elif name in values and index + 1 < len(argv):
                found[name] = (argv[index + 1], index + 1)
                index += 1
            else:
                found[name] = (None, index)
        else:
            positional.append((word, index))
        index += 1
    return found, positional


# -- file tools ----------------------------------------------------------------------------


def model_robocopy(inv: Invocation) -> None:
    """``robocopy SRC DST [FILES…] [/e /s /mir /purge /move /mov …]``: reads SRC, writes DST;
    ``/mir`` and ``/purge`` delete in DST what SRC does not have; ``/move``/``/mov`` delete
    from SRC; ``/create``, ``/l`` (list only) change nothing."""
    opts, words = switches(inv.argv, context=inv.walker.context, dash=False)
    if len(words) < 2:
        if words:
            win_read(inv, words[0][0], words[0][1], True)
        return
    (source, si), (dest, di) = words[0], words[1]
    if "l" in opts:
        win_read(inv, source, si, True)
        return
    recursive = bool({"e", "s", "mir"} & opts.keys())
    win_read(inv, source, si, recursive)
    win_write(inv, dest, di, True)
    if "mir" in opts or "purge" in opts:
        win_delete(inv, dest, di, True)
    if "move" in opts or "mov" in opts:
        win_delete(inv, source, si, "move" in opts or recursive)
    for name in ("log", "log+", "unilog", "unilog+"):
        value = opts.get(name)
        if value and value[0]:
            win_write(inv, value[0], value[1])


def model_xcopy(inv: Invocation) -> None:
    """``xcopy SRC [DST] [/s /e …]``: reads SRC (recursively with ``/s``/``/e``), writes DST
    (the current directory without one)."""
    opts, words = switches(inv.argv, context=inv.walker.context, dash=False)
    recursive = bool({"s", "e"} & opts.keys())
    if not words:
        return
    win_read(inv, words[0][0], words[0][1], recursive)
    if len(words) > 1:
        win_write(inv, words[1][0], words[1][1], True)
    else:
        win_write(inv, ".", None, True)


def model_icacls(inv: Invocation) -> None:
    """``icacls PATH /grant|/deny|/remove|/reset|/setowner|/inheritance|/setintegritylevel …``
    changes who may access PATH (a write; ``/t``: the tree below); ``/save FILE`` writes FILE;
    ``icacls DIR /restore FILE`` applies ACLs from FILE to DIR's tree; alone it only lists."""
    opts, words = switches(inv.argv, context=inv.walker.context, dash=False, values=frozenset({"save", "restore", "grant", "deny", "remove",
                                                                   "setowner", "inheritance", "setintegritylevel",
                                                                   "grant:r", "remove:g", "remove:d"}))
    changing = {"grant", "deny", "remove", "reset", "setowner", "inheritance", "setintegritylevel", "restore",
                "substitute"}
    recursive = "t" in opts or "restore" in opts
    changed = bool(changing & opts.keys())
    # /grant:r is `grant` with value "r"; its trustee follows as a positional
    if words:
        target, index = words[0]
        if changed:
            win_write(inv, target, index, recursive)
        else:
            win_read(inv, target, index)
    if "save" in opts and opts["save"][0]:
        win_write(inv, opts["save"][0] or "", opts["save"][1])
    if "restore" in opts and opts["restore"][0]:
        win_read(inv, opts["restore"][0] or "", opts["restore"][1])


def model_takeown(inv: Invocation) -> None:
    """``takeown /f PATH [/r] [/a]``: makes the agent (``/a``: the administrators) owner of
    PATH — an access change (write), recursive with ``/r``; ``/a`` needs administrator rights."""
    opts, _ = switches(inv.argv, context=inv.walker.context, dash=False, values=frozenset({"f", "s", "u", "p", "d"}))
    target = opts.get("f")
    if "s" in opts:
        inv.unknown("`takeown /s` changes files on another computer", opts["s"][1])
    if target and target[0]:
        win_write(inv, target[0], target[1], "r" in opts)
    if "a" in opts:
        inv.privilege("`takeown /a` (ownership for the administrators group)", opts["a"][1])


def model_findstr(inv: Invocation) -> None:
    """``findstr [/s /i …] [/c:STRING|/g:FILE] PATTERN FILES…`` and ``find "STRING" FILES``:
    read the files (``/s``: below them); ``/g:FILE``, ``/f:FILE`` read those files too."""
    opts, words = switches(inv.argv, context=inv.walker.context, dash=False)
    for name in ("g", "f"):
        if name in opts and opts[name][0]:
            win_read(inv, opts[name][0] or "", opts[name][1])
    if not ("c" in opts or "g" in opts) and words:
        words = words[1:]  # the pattern
    for word, index in words:
        win_read(inv, word, index, "s" in opts)


def model_read_tool(inv: Invocation) -> None:
    """Windows tools that only read their operands (``where``, ``tree``, ``sort``, ``fc``,
    ``comp``, ``more``, …) or inspect the system (``whoami``, ``hostname``, ``ipconfig``,
    ``systeminfo``, ``tasklist``): their non-switch arguments are reads."""
    _, words = switches(inv.argv, context=inv.walker.context, dash=inv.name in ("tasklist", "systeminfo"))
    if inv.name in ("where", "whoami", "hostname", "ipconfig", "systeminfo", "tasklist", "ver", "chcp"):
        return
    for word, index in words:
        win_read(inv, word, index)


def model_attrib(inv: Invocation) -> None:
    """``attrib [+r|-r|+h|-h|+s|-s|+a|-a …] PATH [/s] [/d]``: with a ``+``/``-`` attribute it
    changes PATH (``/s``: the files below it); alone it lists."""
    opts, words = switches(inv.argv, context=inv.walker.context, dash=False)
    changes = [w for w, _ in words if w[:1] in "+-" and len(w) == 2]
    targets = [(w, i) for w, i in words if not (w[:1] in "+-" and len(w) == 2)]
    for word, index in targets:
        if changes:
            win_write(inv, word, index, "s" in opts)
        else:
            win_read(inv, word, index, "s" in opts)


def model_mklink(inv: Invocation) -> None:
    """``mklink [/d|/h|/j] LINK TARGET``: writes LINK, a link to TARGET (reading through it later
    must be as allowed as reading TARGET)."""
    _, words = switches(inv.argv, context=inv.walker.context, dash=False)
    if len(words) >= 2:
        (link, li), (target, ti) = words[0], words[1]
        win_write(inv, link, li)
        for path in paths(inv, target):
            inv.walker.effects.append(LinkTarget(path, inv.at(ti)))


# -- registry, tasks, services ---------------------------------------------------------------

_HIVES = {"hklm": "hklm", "hkey_local_machine": "hklm", "hkcu": "hkcu", "hkey_current_user": "hkcu",
          "hkcr": "hkcr", "hkey_classes_root": "hkcr", "hku": "hku", "hkey_users": "hku", "hkcc": "hkcc",
          "hkey_current_config": "hkcc"}
#: Registry key paths (lower-case, without the hive) from which Windows runs programs later.
_AUTOSTART_KEYS = (
    r"software\microsoft\windows\currentversion\run", r"software\microsoft\windows\currentversion\runonce",
    r"software\microsoft\windows\currentversion\runservices", r"software\microsoft\windows\currentversion\runonceex",
    r"software\microsoft\windows\currentversion\policies\explorer\run",
    r"software\wow6432node\microsoft\windows\currentversion\run",
    r"software\wow6432node\microsoft\windows\currentversion\runonce",
    r"software\microsoft\windows nt\currentversion\winlogon",
    r"software\microsoft\windows nt\currentversion\image file execution options",
    r"software\microsoft\windows nt\currentversion\silentprocessexit",
    r"software\microsoft\windows nt\currentversion\windows",  # AppInit_DLLs, Load
    r"software\microsoft\windows\currentversion\explorer\shell folders",
    r"software\microsoft\windows\currentversion\explorer\user shell folders",
    r"software\microsoft\active setup\installed components", r"software\microsoft\command processor",  # AutoRun
    r"system\currentcontrolset\services", r"system\currentcontrolset\control\session manager",
    r"system\currentcontrolset\control\lsa", r"software\classes\exefile", r"software\classes\ms-settings",
    r"software\classes\mscfile", r"environment",  # UserInitMprLogonScript
    r"software\microsoft\windows\currentversion\shellserviceobjectdelayload",
    r"software\policies\microsoft\windows\system\scripts",
)


def registry_key(word: str) -> tuple[str, str] | None:
    """(hive, lower-case key path) of a registry key word (``HKCU\\Software\\…``,
    ``HKCU:\\Software\\…``, ``Registry::HKEY_CURRENT_USER\\…``), or None."""
    text = word.strip().strip('"').replace("/", "\\")
    low = text.lower()
    if low.startswith("registry::"):
        low = low[len("registry::"):]
    elif low.startswith("microsoft.powershell.core\\registry::"):
        low = low.split("::", 1)[1]
    hive, _, rest = low.partition("\\")
    hive = hive.rstrip(":")
    if hive not in _HIVES:
        return None
    return _HIVES[hive], "\\".join(part for part in rest.split("\\") if part)


def registry_change(inv: Invocation, word: str, index: int | None, verb: str, value_name: str | None = None) -> None:
    """Judge a change of registry key ``word`` (``verb``: what is done to it): autostart and
    hijack keys are persistence, the machine's hives need administrator rights (privilege),
    any other key is a change the policy does not describe (unknown effects)."""
    key = registry_key(word)
    if key is None:
        inv.unknown(f"{verb} the registry key `{show(word)}`, which is not known before it runs", index)
        return
    hive, path = key
    if UNKNOWN in path:
        inv.unknown(f"{verb} a registry key that is not known before it runs (`{show(word)}`)", index)
        return
    rel = path.removeprefix("software\\classes\\") if hive == "hkcr" else path
    if hive == "hkcr":
        rel = "software\\classes\\" + rel
    for start in _AUTOSTART_KEYS:
        if rel == start or rel.startswith(start + "\\") or (start.endswith("windows") and rel == start):
            if start == "environment" and value_name is not None and value_name.lower() not in (
                    "userinitmprlogonscript", "path", "pathext", "comspec", UNKNOWN):
                break
            inv.persistence(f"{verb} the autostart registry key `{show(word)}`", index)
            return
    if "\\shell\\open\\command" in rel or rel.endswith("\\shell\\open") or "\\inprocserver32" in rel:
        inv.persistence(f"{verb} a registry handler that runs a program (`{show(word)}`)", index)
        return
    if (hive in ("hklm", "hku", "hkcr") and not rel.startswith("software\\classes\\")) or hive == "hklm":
        inv.privilege(f"{verb} the machine registry (`{show(word)}`)", index)
        return
    inv.unknown(f"{verb} the registry key `{show(word)}`, which the policy does not describe", index)


_CREDENTIAL_HIVES = ("sam", "security", "system")


def model_reg(inv: Invocation) -> None:
    """``reg add|delete|import|copy|load|unload|restore|save|export|query|compare``: changes
    are judged by :func:`registry_change`; ``save``/``export`` write a file (the credential
    hives ``SAM``, ``SECURITY`` and ``SYSTEM`` need administrator rights: privilege);
    ``import`` applies a file's keys (not visible: unknown effects)."""
    argv = inv.argv
    if len(argv) < 2:
        return
    sub = argv[1].lower()
    opts, words = switches(argv, context=inv.walker.context, start=2, dash=False, values=frozenset({"v", "t", "d", "s", "reg:32", "reg:64"}))
    value_name = opts.get("v", (None, 0))[0]
    if sub in ("query", "compare"):
        return
    if sub in ("add", "delete", "copy", "restore", "load", "unload", "flags"):
        if words:
            registry_change(inv, words[0][0], words[0][1], "changes" if sub != "delete" else "deletes", value_name)
            if sub == "copy" and len(words) > 1:
                registry_change(inv, words[1][0], words[1][1], "changes")
            if sub in ("restore", "load") and len(words) > 1:
                win_read(inv, words[1][0], words[1][1])
        else:
            inv.unknown(f"`reg {sub}` without a key", 1)
        return
    if sub in ("save", "export"):
        if words:
            key = registry_key(words[0][0])
            if key and key[0] == "hklm" and key[1].split("\\")[0] in _CREDENTIAL_HIVES:
                inv.privilege(f"`reg {sub}` of the credential hive `{words[0][0]}`", words[0][1])
        if len(words) > 1:
            win_write(inv, words[1][0], words[1][1])
        return
    if sub == "import":
        if words:
            win_read(inv, words[0][0], words[0][1])
        inv.unknown("`reg import` applies the registry keys a file holds, which are not visible", 1)
        return
    inv.unknown(f"`reg {argv[1]}` is not a subcommand the analyzer knows", 1)


def model_schtasks(inv: Invocation) -> None:
    """``schtasks /create|/change`` installs a program run later (persistence); ``/run``
    runs a task's program (not visible: unknown effects); ``/query`` only lists."""
    opts, _ = switches(inv.argv, context=inv.walker.context, dash=False, values=frozenset({"tn", "tr", "sc", "ru", "rp", "s", "xml"}))
    if "create" in opts or "change" in opts:
        action = "create" if "create" in opts else "change"
        inv.persistence(f"`schtasks /{action}` (a scheduled task)", opts[action][1])
        if "ru" in opts and (opts["ru"][0] or "").lower() in ("system", "nt authority\\system"):
            inv.privilege("`schtasks /ru SYSTEM`", opts["ru"][1])
        return
    if "run" in opts or "delete" in opts or "end" in opts:
        inv.unknown("`schtasks` runs or removes a scheduled task, whose program is not visible", 1)
        return
    if "s" in opts:
        inv.unknown("`schtasks /s` acts on another computer", opts["s"][1])


def model_sc(inv: Invocation) -> None:
    """``sc [\\\\server] create|config|failure|sdset …`` installs or changes a service
    (persistence, with administrator rights); ``start``/``stop``/``delete``/``control``
    need administrator rights (privilege); ``query``/``qc`` only read."""
    argv = inv.argv
    index = 1
    if index < len(argv) and argv[index].startswith("\\\\"):
        _unc(inv, argv[index], index)
        index += 1
    if index >= len(argv):
        return
    sub = argv[index].lower()
    if sub in ("create", "config", "failure", "sdset", "triggerinfo", "failureflag", "sidtype", "privs"):
        inv.persistence(f"`sc {sub}` (a service)", index)
        inv.privilege(f"`sc {sub}` changes a service", index)
    elif sub in ("start", "stop", "delete", "control", "pause", "continue"):
        inv.privilege(f"`sc {sub}` controls a service", index)


_CERTUTIL_DECODE = ("-decode", "-decodehex", "-encode", "-encodehex", "/decode", "/decodehex", "/encode",
                    "/encodehex")


def model_certutil(inv: Invocation) -> None:
    """``certutil -urlcache [-split] [-f] URL [FILE]`` and ``-verifyctl``: downloads (network,
    writes FILE); ``-decode IN OUT`` / ``-encode``: reads IN, writes OUT."""
    argv = inv.argv
    low = [a.lower() for a in argv]
    words = [(w, i) for i, w in enumerate(argv) if i > 0 and (w[:1] not in "-/" or is_mapped_path(w, inv.walker.context))]
    if any(w in ("-urlcache", "/urlcache", "-verifyctl", "/verifyctl", "-url", "/url") for w in low):
        urls = [(w, i) for w, i in words if "://" in w]
        for word, index in urls:
            from stockade.analyzer.models.net import contact_url

            contact_url(inv, word, index)
        rest = [(w, i) for w, i in words if "://" not in w]
        if rest:
            win_write(inv, rest[-1][0], rest[-1][1])
        elif urls:
            name = urls[0][0].rstrip("/").rpartition("/")[2] or UNKNOWN
            win_write(inv, name, urls[0][1])
        return
    if any(w in _CERTUTIL_DECODE for w in low):
        if words:
            win_read(inv, words[0][0], words[0][1])
        if len(words) > 1:
            win_write(inv, words[1][0], words[1][1])
        return
    for word, index in words:
        if "://" in word:
            from stockade.analyzer.models.net import contact_url

            contact_url(inv, word, index)


def model_bitsadmin(inv: Invocation) -> None:
    """``bitsadmin /transfer NAME URL FILE`` downloads; ``/setnotifycmdline`` runs a program
    later (persistence); other jobs are not visible (unknown effects)."""
    low = [a.lower() for a in inv.argv]
    if "/setnotifycmdline" in low:
        inv.persistence("`bitsadmin /setnotifycmdline` (a program run when a job ends)", low.index("/setnotifycmdline"))
        return
    from stockade.analyzer.models.net import contact_url

    urls = [(w, i) for i, w in enumerate(inv.argv) if "://" in w]
    for word, index in urls:
        contact_url(inv, word, index)
    if urls:
        last = urls[-1][1] + 1
        if last < len(inv.argv):
            win_write(inv, inv.argv[last], last)
    elif "/transfer" in low or "/addfile" in low or "/create" in low:
        inv.unknown("`bitsadmin` transfers files the analyzer cannot see", 1)


# -- privilege and running other programs ------------------------------------------------------


def model_runas(inv: Invocation) -> None:
    """``runas /user:NAME PROGRAM``: runs PROGRAM as another user (privilege); the program's
    command line is walked as CMD text."""
    inv.privilege(f"`{inv.name}` runs a program as another user", 0)
    _, words = switches(inv.argv, context=inv.walker.context, dash=False)
    if words:
        run_cmd_text(inv, words[-1][0], words[-1][1])


def model_gsudo(inv: Invocation) -> None:
    """``gsudo``/``sudo`` (Windows): runs the rest elevated (privilege), the rest walked."""
    inv.privilege(f"`{inv.name}` runs a program with administrator rights", 0)
    index = 1
    argv = inv.argv
    while index < len(argv) and argv[index].startswith("-"):
        if argv[index].lower() in ("-u", "--user", "-i", "--integrity"):
            index += 1
        index += 1
    if index < len(argv):
        run_windows(inv.walker, argv[index:], inv.spans[index:], inv.stdin, inv.env, inv.at(index))


_INSTALLERS = {"winget": "cdn.winget.microsoft.com", "choco": "community.chocolatey.org",
               "scoop": "raw.githubusercontent.com", "cinst": "community.chocolatey.org"}
_INSTALL_VERBS = frozenset({"install", "upgrade", "update", "add", "import", "uninstall", "remove", "repair",
                            "configure", "source", "bucket", "cup", "reset"})
_LIST_VERBS = frozenset({"list", "search", "show", "info", "status", "export", "which", "prefix", "cat", "home",
                         "--version", "-v", "help", "outdated", "config", "cache", "checkup", "depends", "hash"})


def model_installer(inv: Invocation) -> None:
    """``winget``/``choco``/``scoop``: installing, upgrading or removing software contacts the
    tool's source and runs installers (unknown effects); ``list``/``show``/``search`` only
    read (``search`` and ``show`` contact the source)."""
    name = inv.name.lower().removesuffix(".exe")  # (`choco.exe` from bash)
    host = _INSTALLERS[name]
    verb = next((a.lower() for a in inv.argv[1:] if not a.startswith("-")), "")
    if name == "cinst":
        verb = "install"
    if verb in ("list", "export", "which", "prefix", "status", "help", "config", "cache", "checkup", ""):
        return
    inv.network(host, 443, 1)
    if verb in _INSTALL_VERBS or verb not in _LIST_VERBS:
        inv.unknown(f"`{name} {verb}` installs or changes software (its installers are not visible)", 1)
        if name == "choco":
            inv.privilege("`choco` installs for the whole machine (administrator rights)", 1)


def model_lolbin(inv: Invocation) -> None:
    """Programs that run code given to them (``mshta``, ``rundll32``, ``regsvr32``,
    ``wscript``, ``cscript``, ``msiexec``, ``installutil``, ``msbuild`` …): unknown effects;
    URLs among their arguments are contacted."""
    from stockade.analyzer.models.net import contact_url

    for index, word in enumerate(inv.argv[1:], start=1):
        for part in re.findall(r"(?:https?|ftp)://[^\s\"']+", word):
            contact_url(inv, part, index)
        if word[:1] not in "/-" and ("\\" in word or "." in word) and "://" not in word:
            win_read(inv, word, index)
    inv.unknown(f"`{inv.name}` runs code the analyzer cannot see into", 0)


def model_net(inv: Invocation) -> None:
    """``net user … /add``, ``net localgroup … /add``, ``net start|stop``, ``net share``:
    privilege; ``net use \\\\server`` contacts the server."""
    argv = inv.argv
    if len(argv) < 2:
        return
    sub = argv[1].lower()
    low = [a.lower() for a in argv]
    if sub in ("use", "view"):
        for index, word in enumerate(argv[2:], start=2):
            _unc(inv, word, index)
        return
    if sub in ("user", "localgroup", "group", "accounts") and any(w in ("/add", "/delete", "/del", "/active:yes")
                                                                      for w in low):
        inv.privilege(f"`net {sub}` changes accounts or groups", 1)
    elif sub in ("start", "stop", "pause", "continue", "share", "session", "file"):
        if len(argv) > 2 or sub in ("start", "stop"):
            inv.privilege(f"`net {sub}` changes services or shares", 1)
    elif sub in ("user", "localgroup", "group") and len(argv) > 3:
        inv.privilege(f"`net {sub}` changes an account", 1)


def model_setx(inv: Invocation) -> None:
    """``setx NAME VALUE [/m]``: sets a variable for every program started later (the user's
    or, with ``/m``, the machine's environment in the registry): persistence."""
    opts, words = switches(inv.argv, context=inv.walker.context, dash=False, values=frozenset({"s", "u", "p", "k", "f", "a", "r", "d"}))
    if words:
        inv.persistence(f"`setx {show(words[0][0])}` (a variable every later program gets)", words[0][1])
    if "m" in opts:
        inv.privilege("`setx /m` changes the machine's environment", opts["m"][1])


def model_assoc(inv: Invocation) -> None:
    """``ftype TYPE=COMMAND`` / ``assoc .EXT=TYPE``: what runs when a file is opened (persistence)."""
    if any("=" in word for word in inv.argv[1:]):
        inv.persistence(f"`{inv.name}` changes the program files are opened with", 1)


def model_wmic(inv: Invocation) -> None:
    """``wmic process call create "CMD"`` runs CMD (walked); ``/node:`` acts on other
    computers; other ``wmic`` changes are not visible."""
    low = [a.lower() for a in inv.argv]
    if any(w.startswith("/node:") for w in low):
        inv.unknown("`wmic /node:` acts on another computer", 1)
    if "call" in low and "create" in low:
        index = low.index("create") + 1
        if index < len(inv.argv):
            run_cmd_text(inv, " ".join(inv.argv[index:]), index)
        return
    if any(w in ("call", "set", "delete", "create") for w in low):
        inv.unknown("`wmic` changes system state the analyzer cannot see", 1)


def model_wsl(inv: Invocation) -> None:
    """``wsl [-d D] [-u USER] [-e] CMD…`` / ``wsl -- CMD``: CMD runs in Linux (walked as bash);
    ``-u root`` is privilege; ``wsl`` alone is an interactive shell (unknown)."""
    argv = inv.argv
    index = 1
    while index < len(argv):
        word = argv[index]
        low = word.lower()
        if low in ("-d", "--distribution", "--cd", "--shell-type"):
            index += 2
            continue
        if low in ("-u", "--user"):
            if index + 1 < len(argv) and argv[index + 1] == "root":
                inv.privilege("`wsl -u root`", index + 1)
            index += 2
            continue
        if low in ("-e", "--exec", "--"):
            index += 1
            break
        if low.startswith("-"):
            if low in ("--install", "--import", "--unregister", "--update", "--set-default", "--mount"):
                inv.unknown(f"`wsl {word}` changes the Linux installation", index)
                return
            index += 1
            continue
        break
    if index >= len(argv):
        inv.unknown("`wsl` starts a Linux shell whose commands are not visible", 0)
        return
    inv.run(index)


def model_bash_exe(inv: Invocation) -> None:
    """``bash.exe`` on Windows (WSL's or Git's): the bash model."""
    from stockade.analyzer.models.shells import model_shell

    model_shell(inv)


# -- the Windows shells as programs ----------------------------------------------------------

_PS_VALUE_OPTIONS = ("executionpolicy", "windowstyle", "inputformat", "outputformat", "version",
                     "configurationname", "workingdirectory", "psconsolefile", "settingsfile", "custompipename",
                     "encodedarguments", "mta", "sta", "configurationfile")
_PS_FLAG_OPTIONS = ("noprofile", "noninteractive", "nologo", "noexit", "login", "interactive",
                    "noprofileloadtime", "mta", "sta", "help")


def _ps_option(word: str) -> str | None:
    """The full (lower-case) name of a powershell.exe/pwsh parameter word (``-nop``,
    ``--NoProfile``, ``/c``, ``-ec``), or None when it is not one."""
    if len(word) < 2 or word[0] not in "-/":
        return None
    name = word.lstrip("-/").lower() if word[:2] != "--" or len(word) > 2 else ""
    if not name:
        return None
    if name in ("c", "command"):
        return "command"
    if name in ("e", "ec", "enc", "en") or ("encodedcommand".startswith(name) and len(name) >= 2 and name[1] == "n"):
        return "encodedcommand"
    if name in ("f", "file"):
        return "file"
    if name in ("cwa", "commandwithargs"):
        return "commandwithargs"
    if name in ("ep", "ex", "exec") or ("executionpolicy".startswith(name) and len(name) >= 3):
        return "executionpolicy"
    if name in ("wd",):
        return "workingdirectory"
    if name in ("w",):
        return "windowstyle"
    for full in ("command", "file", "encodedcommand", *_PS_VALUE_OPTIONS, *_PS_FLAG_OPTIONS):
        if full.startswith(name) and len(name) >= 2:
            return full
    return None


def model_powershell(inv: Invocation) -> None:
    """``powershell``/``pwsh`` ``-Command TEXT…`` (the rest of the line), ``-EncodedCommand
    B64`` (UTF-16LE, decoded), ``-File SCRIPT`` (read; its code is not visible),
    ``-Command -`` (code on stdin); other parameters (``-NoProfile``, ``-ExecutionPolicy
    Bypass``, ``-WindowStyle Hidden`` …) are skipped.  The code is walked as PowerShell."""
    argv = inv.argv
    index = 1
    while index < len(argv):
        word = argv[index]
        option = _ps_option(word)
        if option is None:
            # the first other word: powershell.exe reads it as -Command, pwsh as -File
            if word.lower().endswith(".ps1") or (inv.name == "pwsh" and not word.startswith("-") and "." in word
                                                 and " " not in word):
                _ps_file(inv, word, index)
            else:
                _ps_code(inv, " ".join(argv[index:]), index)
            return
        if option in ("command", "commandwithargs"):
            if index + 1 >= len(argv):
                inv.unknown(f"`{inv.name} {word}` without code", index)
                return
            if argv[index + 1] == "-":
                _ps_stdin(inv)
                return
            _ps_code(inv, " ".join(argv[index + 1:]), index + 1)
            return
        if option == "encodedcommand":
            if index + 1 >= len(argv):
                inv.unknown(f"`{inv.name} {word}` without code", index)
                return
            decoded = decode_encoded_command(argv[index + 1])
            if decoded is None:
                from stockade.analyzer.effects import Unparsable

                inv.walker.effects.append(Unparsable(f"`{inv.name} -EncodedCommand` is not base64 of UTF-16LE text",
                                                     inv.at(index + 1)))
                return
            _ps_code(inv, decoded, index + 1, exact=False)
            return
        if option == "file":
            if index + 1 < len(argv):
                _ps_file(inv, argv[index + 1], index + 1)
            return
        if option in _PS_VALUE_OPTIONS and option not in ("mta", "sta"):
            index += 2
            continue
        index += 1
    _ps_stdin(inv)


def _ps_file(inv: Invocation, word: str, index: int) -> None:
    if word == "-":
        _ps_stdin(inv)
        return
    win_read(inv, word, index)
    inv.unknown(f"`{inv.name}` runs the script `{show(word)}`, whose code is not visible here", index)


def _ps_stdin(inv: Invocation) -> None:
    text = inv.stdin.text
    if text is None and inv.stdin.what == "the terminal":
        return  # an interactive shell: what is typed there is the user's
    if text is None:
        inv.unknown(f"`{inv.name}` runs code from {inv.stdin.what}, which is not known before it runs", 0)
    else:
        _ps_code(inv, text, None, exact=False)


def _ps_code(inv: Invocation, text: str, index: int | None, exact: bool = True) -> None:
    from stockade.analyzer.pwsh import run_ps_text

    if UNKNOWN in text:
        inv.unknown(f"the code given to `{inv.name}` is not known before it runs (`{show(text)[:80]}`)", index)
        return
    run_ps_text(inv.walker, text, inv.at(index), exact=exact, env=inv.env)


def decode_encoded_command(word: str) -> str | None:
    """The text of a ``-EncodedCommand`` argument (base64 of UTF-16LE), or None."""
    import base64
    import binascii

    cleaned = re.sub(r"\s+", "", word.strip("\"'"))
    try:
        raw = base64.b64decode(cleaned + "=" * (-len(cleaned) % 4), validate=True)
        return raw.decode("utf-16-le")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None


def model_cmd(inv: Invocation) -> None:
    """``cmd [/q /d /e:on /v:on /s] /c|/k TEXT…``: TEXT (the rest of the line) is walked as CMD
    (``/v:on``: ``!VAR!`` is expanded); without ``/c``/``/k`` the commands come from stdin."""
    argv = inv.argv
    delayed = False
    index = 1
    while index < len(argv):
        word = argv[index]
        low = word.lower()
        if low[:1] == "/" or low.startswith("//"):
            body = low.lstrip("/")
            if body[:1] in ("c", "k", "r") and (len(body) == 1 or not body[1].isalpha()):
                rest = word.lstrip("/")[1:]
                words = ([rest] if rest else []) + argv[index + 1:]
                run_cmd_text(inv, " ".join(words), index + (0 if rest else 1), delayed=delayed)
                return
            if body.startswith("v:on") or body == "v":
                delayed = True
            index += 1
            continue
        break
    text = inv.stdin.text
    if text is None and inv.stdin.what == "the terminal":
        return  # an interactive shell: what is typed there is the user's
    if text is None:
        inv.unknown(f"`{inv.name}` runs commands from {inv.stdin.what}, which are not known before it runs", 0)
    else:
        from stockade.analyzer.cmdshell import run_cmd_code

        run_cmd_code(inv.walker, text, inv.span, exact=False, env=inv.env, delayed=delayed)


def run_cmd_text(inv: Invocation, text: str, index: int | None, delayed: bool = False) -> None:
    """Walk ``text`` (an argument of ``inv``) as CMD code."""
    from stockade.analyzer.cmdshell import run_cmd_code

    if len(text) >= 2 and text[0] == '"' and text[-1] == '"' and text.count('"') == 2:
        text = text[1:-1]
    if UNKNOWN in text and not text.replace(UNKNOWN, "").strip():
        inv.unknown(f"the code given to `{inv.name}` is not known before it runs", index)
        return
    run_cmd_code(inv.walker, text, inv.at(index), exact=True, env=inv.env, delayed=delayed)


# -- running a program from a Windows shell ------------------------------------------------------

WINDOWS_MODELS: dict[str, Callable[[Invocation], None]] = {}


def run_windows(walker: object, argv: list[str], spans: list[SpanT], stdin: Stdin, env: dict[str, str],
                span: SpanT) -> None:
    """Run a program named in CMD or PowerShell: its name normalised (:func:`program_name`),
    a ``.bat``/``.cmd`` file read and judged as code that is not visible, a Windows model or
    else the tool model bash uses (git, npm, pip, python, curl … judged the same way)."""
    from stockade.analyzer.exec import Invocation as _Inv

    if not argv:
        return
    raw = argv[0]
    name = program_name(raw)
    sub = [name, *argv[1:]]
    if "*" in name or "?" in name or "[" in name:  # Windows shells do not expand a program's name
        from stockade.analyzer.effects import Execute, Unknown

        first = spans[0] if spans else span
        walker.effects.append(Execute(tuple(sub), first))  # type: ignore[attr-defined]
        walker.effects.append(Unknown(f"the program name `{show(raw)}` is not one the analyzer knows", first))  # type: ignore[attr-defined]
        return
    if UNKNOWN not in raw and name.endswith(_SCRIPT_SUFFIXES) and name not in WINDOWS_MODELS:
        from stockade.analyzer.effects import Execute

        walker.effects.append(Execute(tuple(sub), spans[0] if spans else span))  # type: ignore[attr-defined]
        inv = _Inv(walker, sub, spans, stdin, env, span)  # type: ignore[arg-type]
        win_read(inv, raw, 0)
        inv.unknown(f"runs the batch file `{show(raw)}`, whose commands are not visible here", 0)
        return
    if "\\" in raw or (len(raw) > 1 and raw[1] == ":"):
        # a program run by a Windows path: the model of its name, and its file is read
        from stockade.analyzer.effects import Read

        for path in resolve_variants(walker, raw):
            walker.effects.append(Read(path, spans[0] if spans else span))  # type: ignore[attr-defined]
    model = WINDOWS_MODELS.get(name)
    if model is not None and name in _UNIX_TOO:  # the Windows program, not the Unix one of that name
        from stockade.analyzer.effects import Execute

        walker.step()  # type: ignore[attr-defined]
        walker.effects.append(Execute(tuple(sub), spans[0] if spans else span))  # type: ignore[attr-defined]
        model(_Inv(walker, sub, spans, stdin, env, span))  # type: ignore[arg-type]
        return
    run_command(walker, sub, spans, stdin, env, span)  # type: ignore[arg-type]


_REGISTRY: tuple[tuple[str, Callable[[Invocation], None]], ...] = (
    ("robocopy", model_robocopy), ("xcopy", model_xcopy), ("icacls", model_icacls), ("cacls", model_icacls),
    ("takeown", model_takeown), ("attrib", model_attrib), ("findstr", model_findstr),
    *((name, model_read_tool) for name in ("where", "tree", "fc", "comp", "whoami", "hostname", "ipconfig",
                                           "systeminfo", "tasklist", "chcp")), ("mklink", model_mklink), ("reg", model_reg),
    ("schtasks", model_schtasks), ("sc", model_sc), ("certutil", model_certutil), ("bitsadmin", model_bitsadmin),
    ("runas", model_runas), ("gsudo", model_gsudo), ("winget", model_installer), ("choco", model_installer),
    ("cinst", model_installer), ("scoop", model_installer), ("net", model_net), ("net1", model_net),
    ("setx", model_setx), ("ftype", model_assoc), ("assoc", model_assoc), ("wmic", model_wmic), ("wsl", model_wsl),
    ("cmd", model_cmd), ("powershell", model_powershell), ("pwsh", model_powershell),
    *((name, model_lolbin) for name in ("mshta", "rundll32", "regsvr32", "wscript", "cscript", "msiexec",
                                        "installutil", "msbuild", "regasm", "regsvcs", "cmstp", "odbcconf",
                                        "forfiles", "pcalua", "msxsl")),
)

#: names Unix programs have too: from bash only with ``.exe`` (``tree -o FILE`` is the Unix tree)
_UNIX_TOO = frozenset({"tree", "where", "fc", "comp", "whoami", "hostname", "sort", "find", "more"})
for _name, _model in _REGISTRY:
    WINDOWS_MODELS[_name] = _model
    register(f"{_name}.exe" if _name in _UNIX_TOO else f"{_name} {_name}.exe", _model)
register("wsl.exe", model_wsl)
register("bash.exe sh.exe", model_bash_exe)

__all__ = ["WINDOWS_MODELS", "decode_encoded_command", "paths", "persistence_path", "program_name",
           "registry_change", "registry_key", "run_windows", "switches", "win_delete", "win_read", "win_rename",
           "win_write"]
