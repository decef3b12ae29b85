"""Independent checks of the macOS and Windows artifacts: tools that are not Stockade's own
evaluators read what the backends produce.

* the C# helper embedded in the PowerShell script is compiled by Mono's ``mcs`` at C# 5 —
  the language of the .NET Framework compiler behind Windows PowerShell 5.1's ``Add-Type``
  — and the sizes and field offsets of every structure it passes to Win32 are compared,
  under ``mono``, with the x64 layouts of the Windows SDK headers (table below);
* every generated PowerShell script is parsed by ``tree-sitter-powershell`` and must have
  no ``ERROR`` or ``MISSING`` node;
* every SDDL string of a plan is parsed by ``winacl`` (an independent pure-Python
  implementation of MS-DTYP security descriptors) and must keep its type, mask and SID;
* every SBPL profile is read by ``sexpdata`` (an independent s-expression reader) and every
  operation and filter it uses must be one that real profiles use (Apple's system profiles
  under ``/System/Library/Sandbox/Profiles`` as quoted publicly, and the profiles of Codex
  CLI, Gemini CLI and Anthropic's sandbox runtime).

``mcs``/``mono`` come from Debian's ``mono-mcs`` (installed by ``.ci/run``); without them the
C# checks skip locally and fail under CI (``CI`` set), so a missing install cannot pass
silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from stockade.backends.base import compile_ir
from stockade.backends.windows_ps import _HELPER_CS
from stockade.compiler.pipeline import compile_policy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.policy"))
WIN = {"workspace": "C:\\Users\\dev\\proj", "home": "C:\\Users\\dev", "tmpdir": "C:\\Users\\dev\\AppData\\Local\\Temp"}
MAC = {"workspace": "/Users/dev/ws", "home": "/Users/dev", "tmpdir": "/private/var/folders/xy/T"}


def _windows_artifacts() -> list[tuple[str, Any]]:
    out = []
    for example in EXAMPLES:
        for workspace in (WIN["workspace"], "C:\\Users\\dev\\p[1] it's $x"):
            ir = compile_policy(example, workspace=workspace, home=WIN["home"], tmpdir=WIN["tmpdir"], environ={},
                                platform="windows").ir
            options = {"loopback": "accept"}
            out.append((f"{example.stem}@{workspace}", compile_ir(ir, "windows-ps", **options)))
    return out


def _mac_profiles() -> list[tuple[str, str]]:
    out = []
    for example in EXAMPLES:
        for workspace in (MAC["workspace"], "/Users/dev/p*[x] \"q\"", "/Users/dev/tab\there"):
            ir = compile_policy(example, workspace=workspace, home=MAC["home"], tmpdir=MAC["tmpdir"], environ={},
                                platform="darwin").ir
            out.append((f"{example.stem}@{workspace!r}", compile_ir(ir, "seatbelt").text))
    return out


# -- C# ------------------------------------------------------------------------------------------

def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"`{name}` is missing under CI: .ci/run installs Debian's mono-mcs")
        pytest.skip(f"`{name}` is not installed (Debian package mono-mcs)")
    return path


#: Win32 x64 layouts (size, then field offsets) from the Windows SDK headers: winnt.h
#: (SID_AND_ATTRIBUTES, JOBOBJECT_BASIC_LIMIT_INFORMATION, IO_COUNTERS,
#: JOBOBJECT_EXTENDED_LIMIT_INFORMATION, TOKEN_DEFAULT_DACL), processthreadsapi.h
#: (STARTUPINFOW, STARTUPINFOEXW, PROCESS_INFORMATION), minwinbase.h (SECURITY_ATTRIBUTES).
WIN32_X64: dict[str, tuple[int, dict[str, int]]] = {
    "SidAttr": (16, {"Sid": 0, "Attributes": 8}),
    "BasicLimit": (64, {"PerProcessUserTimeLimit": 0, "PerJobUserTimeLimit": 8, "LimitFlags": 16,
                        "MinimumWorkingSetSize": 24, "MaximumWorkingSetSize": 32, "ActiveProcessLimit": 40,
                        "Affinity": 48, "PriorityClass": 56, "SchedulingClass": 60}),
    "IoCounters": (48, {"ReadOperationCount": 0, "WriteOperationCount": 8, "OtherOperationCount": 16,
                        "ReadTransferCount": 24, "WriteTransferCount": 32, "OtherTransferCount": 40}),
    "ExtendedLimit": (144, {"Basic": 0, "Io": 64, "ProcessMemoryLimit": 112, "JobMemoryLimit": 120,
                            "PeakProcessMemoryUsed": 128, "PeakJobMemoryUsed": 136}),
    "StartupInfo": (104, {"cb": 0, "lpReserved": 8, "lpDesktop": 16, "lpTitle": 24, "dwX": 32, "dwY": 36,
                          "dwXSize": 40, "dwYSize": 44, "dwXCountChars": 48, "dwYCountChars": 52,
                          "dwFillAttribute": 56, "dwFlags": 60, "wShowWindow": 64, "cbReserved2": 66,
                          "lpReserved2": 72, "hStdInput": 80, "hStdOutput": 88, "hStdError": 96}),
    "StartupInfoEx": (112, {"StartupInfo": 0, "lpAttributeList": 104}),
    "ProcessInfo": (24, {"hProcess": 0, "hThread": 8, "dwProcessId": 16, "dwThreadId": 20}),
    "SecurityAttributes": (24, {"nLength": 0, "lpSecurityDescriptor": 8, "bInheritHandle": 16}),
    "TokenDefaultDaclInfo": (8, {"DefaultDacl": 0}),
}


def test_helper_compiles_as_csharp_5_and_matches_win32_layouts(tmp_path: Path) -> None:
    mcs = _tool("mcs")
    (tmp_path / "helper.cs").write_text(_HELPER_CS)
    (tmp_path / "main.cs").write_text("public static class LayoutMain { public static void Main() "
                                      "{ System.Console.Write(StockadeNative.Layout()); } }\n")
    result = subprocess.run([mcs, "-langversion:5", "-warnaserror+", "-nowarn:414,169,649", "-target:exe",
                             f"-out:{tmp_path / 'layout.exe'}", str(tmp_path / "helper.cs"), str(tmp_path / "main.cs")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    mono = _tool("mono")
    run = subprocess.run([mono, str(tmp_path / "layout.exe")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    seen: dict[str, tuple[int, dict[str, int]]] = {}
    for line in run.stdout.splitlines():
        name, size, *fields = line.split()
        seen[name] = (int(size), {f.split("=")[0]: int(f.split("=")[1]) for f in fields})
    assert seen == WIN32_X64


def test_csharp_5_rejects_newer_syntax(tmp_path: Path) -> None:
    """The control: the same compiler at the same level refuses C# 6 (string interpolation)."""
    mcs = _tool("mcs")
    (tmp_path / "new.cs").write_text('public static class X { public static string Y(int a) { return $"{a}"; } }\n')
    result = subprocess.run([mcs, "-langversion:5", "-target:library", f"-out:{tmp_path / 'x.dll'}",
                             str(tmp_path / "new.cs")], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0


# -- PowerShell ------------------------------------------------------------------------------------

def _ps_problems(text: str) -> list[str]:
    import tree_sitter
    import tree_sitter_powershell

    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_powershell.language()))
    tree = parser.parse(text.encode("utf-8"))
    problems: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            problems.append(f"{node.type} at {node.start_point}: {text.encode()[node.start_byte:node.end_byte][:60]!r}")
        stack.extend(node.children)
    return problems


def test_every_generated_script_parses_as_powershell() -> None:
    for name, artifact in _windows_artifacts():
        assert _ps_problems(artifact.text) == [], name


def test_powershell_parser_catches_broken_scripts() -> None:
    assert _ps_problems("if ($x) { foreach ($a in @(1, 2) { }\n")
    assert _ps_problems("$a = @{ Kind = 'x'\n")


# -- SDDL ------------------------------------------------------------------------------------------

#: SIDs the launcher resolves on the machine (the sandbox account's, the logon SID)
SAMPLE_USER = "S-1-5-21-1004336348-1177238915-682003330-1007"
SAMPLE_LOGON = "S-1-5-5-0-123456"


def _sddl_strings(plan: dict[str, Any]) -> list[str]:
    out = [entry["sddl"] for entry in plan["acl"]["entries"]]
    out += [ace["sddl"] for glob in plan["globs"] for ace in glob["aces"]]
    out += [device["sddl"] for device in plan["devices"]]
    return out


def _parse_sd(text: str) -> Any:
    from winacl.dtyp.security_descriptor import SECURITY_DESCRIPTOR

    return SECURITY_DESCRIPTOR.from_sddl(text, domain_sid="S-1-5-21-1-2-3")


def test_every_sddl_string_parses_independently() -> None:
    count = 0
    for name, artifact in _windows_artifacts():
        plan = artifact.data
        for ace in _sddl_strings(plan):
            kind, _flags, mask, _, _, sid = ace.strip("()").split(";")
            sd = _parse_sd("D:" + ace)
            parsed = sd.Dacl.aces[0]
            assert int(parsed.Mask) == int(mask, 16), (name, ace)
            assert str(parsed.Sid) == sid, (name, ace)
            assert type(parsed).__name__ == ("ACCESS_DENIED_ACE" if kind == "D" else "ACCESS_ALLOWED_ACE"), ace
            count += 1
        default = plan["token"]["default_dacl"].replace("%ACCOUNT%", SAMPLE_USER).replace("%LOGON%", SAMPLE_LOGON)
        sids = {str(ace.Sid) for ace in _parse_sd(default).Dacl.aces}
        assert sids == {"S-1-5-18", plan["principal"]["sid"], SAMPLE_USER, SAMPLE_LOGON}
        for rule in plan["network"]["firewall_rules"]:
            sd = _parse_sd(rule["local_user_sddl"].replace("%ACCOUNT%", SAMPLE_USER))
            assert [str(ace.Sid) for ace in sd.Dacl.aces] == [SAMPLE_USER], rule
        count += 1
    assert count > 20


def test_sddl_parser_rejects_garbage() -> None:
    for bad in ("D:(A;;0xZZ;;;S-1-5-18)", "D:(Q;;0x1;;;S-1-5-18)", "D:(A;;0x1;;;S-1-x)"):
        with pytest.raises(Exception):  # noqa: B017 - winacl raises plain exceptions
            _parse_sd(bad)


# -- SBPL ------------------------------------------------------------------------------------------

#: Operations that real Seatbelt profiles use (Apple's system profiles as quoted publicly;
#: Codex CLI, Gemini CLI and Anthropic's sandbox runtime): every operation a Stockade profile
#: names must be one of them.
SBPL_OPERATIONS = frozenset("""
default file* file-read* file-read-data file-read-metadata file-read-xattr file-write* file-write-data
file-write-create file-write-unlink file-write-mode file-write-owner file-write-times file-write-xattr
file-ioctl file-link file-map-executable file-issue-extension file-mknod file-revoke file-search
process* process-exec process-exec* process-fork process-info* process-info-pidinfo process-info-setcontrol
signal mach* mach-lookup mach-host* mach-register mach-priv-host-port mach-task-name sysctl* sysctl-read
sysctl-write ipc-posix-sem ipc-posix-shm* ipc-posix-shm-read-data ipc-posix-shm-write-data ipc-sysv-sem
ipc-sysv-shm network* network-outbound network-inbound network-bind iokit-open iokit-get-properties
user-preference-read user-preference-write pseudo-tty system-socket system-fsctl system-info
""".split())
#: Filters and value expressions that real profiles use.
SBPL_FILTERS = frozenset("""
literal subpath regex prefix path vnode-type extension global-name local-name sysctl-name sysctl-name-prefix
target remote local require-all require-any require-not iokit-registry-entry-class iokit-user-client-class
preference-domain param string-append regex-quote home-subpath home-literal home-prefix socket-domain
socket-type socket-protocol xattr ioctl-command process-path signing-identifier
""".split())
#: Symbols that appear as arguments (not filters): targets, vnode types, address families.
SBPL_WORDS = frozenset("same-sandbox self children REGULAR-FILE DIRECTORY SYMLINK CHARACTER-DEVICE tcp udp ip "
                       "unix unix-socket".split())


def _sexp_forms(text: str) -> list[Any]:
    import sexpdata

    return list(sexpdata.loads("(" + text + ")"))


def _check_filter(expr: Any, where: str, problems: list[str]) -> None:
    from sexpdata import Symbol

    if not isinstance(expr, list) or not expr:
        return
    head = expr[0]
    name = head.value() if isinstance(head, Symbol) else head
    if name not in SBPL_FILTERS:
        problems.append(f"{where}: unknown filter `{name}`")
    previous: Any = None
    for arg in expr[1:]:
        if isinstance(arg, list):
            _check_filter(arg, where, problems)
        elif isinstance(arg, Symbol) and arg.value() not in SBPL_WORDS and arg.value() != "#":
            problems.append(f"{where}: unexpected symbol `{arg.value()}` in `{name}`")
        elif isinstance(arg, str) and isinstance(previous, Symbol) and previous.value() == "#" and name != "regex":
            problems.append(f"{where}: a regex literal outside `regex`")
        previous = arg


def sbpl_problems(text: str) -> list[str]:
    """Every form of a profile checked against the vocabulary real profiles use."""
    from sexpdata import Symbol

    problems: list[str] = []
    forms = _sexp_forms(text)
    if forms[:1] != [[Symbol("version"), 1]]:
        problems.append("the profile does not start with (version 1)")
    for index, form in enumerate(forms[1:], 2):
        if not isinstance(form, list) or not form or not isinstance(form[0], Symbol):
            problems.append(f"form {index}: not a rule")
            continue
        action = form[0].value()
        if action not in ("allow", "deny"):
            problems.append(f"form {index}: unknown action `{action}`")
            continue
        ops = [a for a in form[1:] if isinstance(a, Symbol)]
        if not ops:
            problems.append(f"form {index}: no operation")
        for op in ops:
            if op.value() not in SBPL_OPERATIONS:
                problems.append(f"form {index}: unknown operation `{op.value()}`")
        for expr in form[1:]:
            if isinstance(expr, list):
                _check_filter(expr, f"form {index}", problems)
            elif not isinstance(expr, Symbol):
                problems.append(f"form {index}: stray value {expr!r}")
    return problems


def test_every_profile_reads_as_sexp_with_known_vocabulary() -> None:
    profiles = _mac_profiles()
    assert len(profiles) >= 3 * len(EXAMPLES)
    for name, text in profiles:
        assert sbpl_problems(text) == [], name


def test_sbpl_check_catches_unknown_vocabulary() -> None:
    assert sbpl_problems('(version 1)\n(allow file-read-everything (subpath "/"))\n')
    assert sbpl_problems('(version 1)\n(allow file-read* (subtree "/"))\n')
    with pytest.raises(Exception):  # noqa: B017 - an unbalanced profile is no s-expression
        _sexp_forms('(version 1)\n(allow file-read* (subpath "/")\n')
