"""Render a Windows plan (see :mod:`stockade.backends.windows`) as a PowerShell script.

The script applies the plan with ``icacls`` (explicit ACEs for the capability SID), Windows
Firewall cmdlets (``New-NetFirewallRule -LocalUser``) and a small C# helper compiled with
``Add-Type`` for what PowerShell has no cmdlet for (restricted token, Job Object, suspended
process creation, canonical-path checks).  Everything it adds is recorded in a journal as
it is added, and a ``finally`` block removes exactly the journal's entries, newest first,
whatever happened.

Quoting: every value from the plan — paths, SIDs, names, environment values — is emitted as
a single-quoted PowerShell literal by :func:`ps_quote`, in which nothing is interpolated
(``$`` and the backtick are literal); single quotes, including the typographic ones that
PowerShell also accepts as quotes (U+2018–U+201B), are doubled.  Plan paths never contain
newlines or NUL (the backend rejects them); :func:`ps_quote` refuses them anyway.
"""

from __future__ import annotations

from typing import Any

_PS_SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b"


def ps_quote(value: str) -> str:
    """``value`` as a single-quoted PowerShell string literal."""
    if "\x00" in value:
        raise ValueError("a NUL byte cannot be quoted for powershell")
    out = []
    for char in value:
        out.append(char * 2 if char in _PS_SINGLE_QUOTES else char)
    return "'" + "".join(out) + "'"


def ps_array(values: list[str]) -> str:
    """A PowerShell array of single-quoted literals: ``@('a', 'b')``."""
    return "@(" + ", ".join(ps_quote(v) for v in values) + ")"


_HELPER_CS = r'''
using System;
using System.Collections.Generic;
using System.ComponentModel;
using System.IO;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

public static class StockadeNative {
    const uint TOKEN_ALL = 0xF01FF;
    const int TokenGroups = 2, TokenIntegrityLevel = 25;
    const uint SE_GROUP_LOGON_ID = 0xC0000000, SE_GROUP_INTEGRITY = 0x20;
    const int JobBasicUi = 4, JobExtended = 9;

    [StructLayout(LayoutKind.Sequential)] struct SidAttr { public IntPtr Sid; public uint Attributes; }
    [StructLayout(LayoutKind.Sequential)] struct BasicLimit {
        public long PerProcessUserTimeLimit, PerJobUserTimeLimit; public uint LimitFlags;
        public UIntPtr MinimumWorkingSetSize, MaximumWorkingSetSize; public uint ActiveProcessLimit;
        public UIntPtr Affinity; public uint PriorityClass, SchedulingClass; }
    [StructLayout(LayoutKind.Sequential)] struct IoCounters {
        public ulong a, b, c, d, e, f; }
    [StructLayout(LayoutKind.Sequential)] struct ExtendedLimit {
        public BasicLimit Basic; public IoCounters Io; public UIntPtr ProcessMemoryLimit, JobMemoryLimit,
        PeakProcessMemoryUsed, PeakJobMemoryUsed; }
    [StructLayout(LayoutKind.Sequential, CharSet = CharSet.Unicode)] struct StartupInfo {
        public int cb; public string lpReserved, lpDesktop, lpTitle; public int dwX, dwY, dwXSize, dwYSize,
        dwXCountChars, dwYCountChars, dwFillAttribute, dwFlags; public short wShowWindow, cbReserved2;
        public IntPtr lpReserved2, hStdInput, hStdOutput, hStdError; }
    [StructLayout(LayoutKind.Sequential)] struct ProcessInfo {
        public IntPtr hProcess, hThread; public uint dwProcessId, dwThreadId; }
    [StructLayout(LayoutKind.Sequential)] struct SecurityAttributes {
        public int nLength; public IntPtr lpSecurityDescriptor; public bool bInheritHandle; }

    [DllImport("kernel32.dll")] static extern IntPtr GetCurrentProcess();
    [DllImport("kernel32.dll", SetLastError = true)] static extern IntPtr GetStdHandle(int n);
    [DllImport("advapi32.dll", SetLastError = true)] static extern bool OpenProcessToken(IntPtr p, uint a, out IntPtr t);
    [DllImport("advapi32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern bool ConvertStringSidToSidW(string s, out IntPtr sid);
    [DllImport("advapi32.dll", SetLastError = true)] static extern bool CreateRestrictedToken(IntPtr t, uint flags,
        uint nDisable, SidAttr[] disable, uint nPriv, IntPtr priv, uint nRestrict, SidAttr[] restrict, out IntPtr nt);
    [DllImport("advapi32.dll", SetLastError = true)] static extern bool GetTokenInformation(IntPtr t, int c, IntPtr b, uint n, out uint r);
    [DllImport("advapi32.dll", SetLastError = true)] static extern bool SetTokenInformation(IntPtr t, int c, IntPtr b, uint n);
    [DllImport("kernel32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern IntPtr CreateJobObjectW(IntPtr a, string n);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool SetInformationJobObject(IntPtr j, int c, IntPtr i, uint n);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool AssignProcessToJobObject(IntPtr j, IntPtr p);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool TerminateJobObject(IntPtr j, uint code);
    [DllImport("kernel32.dll", SetLastError = true)] static extern uint ResumeThread(IntPtr t);
    [DllImport("kernel32.dll", SetLastError = true)] static extern uint WaitForSingleObject(IntPtr h, uint ms);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool GetExitCodeProcess(IntPtr h, out uint c);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool CloseHandle(IntPtr h);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool CreatePipe(out IntPtr r, out IntPtr w, ref SecurityAttributes sa, uint size);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool SetHandleInformation(IntPtr h, uint mask, uint flags);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool ReadFile(IntPtr h, byte[] b, uint n, out uint r, IntPtr o);
    [DllImport("advapi32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern bool CreateProcessAsUserW(IntPtr t,
        string app, StringBuilder cmd, IntPtr pa, IntPtr ta, bool inherit, uint flags, IntPtr env, string cwd,
        ref StartupInfo si, out ProcessInfo pi);
    [DllImport("kernel32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern IntPtr CreateFileW(string p,
        uint a, uint s, IntPtr sa, uint d, uint f, IntPtr t);
    [DllImport("kernel32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern uint GetFinalPathNameByHandleW(IntPtr h,
        StringBuilder b, uint n, uint f);

    static Exception Fail(string what) { return new Win32Exception(Marshal.GetLastWin32Error(), what); }

    static IntPtr Sid(string s) { IntPtr p; if (!ConvertStringSidToSidW(s, out p)) throw Fail("bad sid " + s); return p; }

    /// The final, canonical spelling of an existing path (reparse points and 8.3 names resolved).
    public static string FinalPath(string path) {
        IntPtr h = CreateFileW(path, 0, 7, IntPtr.Zero, 3, 0x02000000, IntPtr.Zero);
        if (h == new IntPtr(-1)) throw Fail("cannot open " + path);
        try {
            var b = new StringBuilder(32768);
            uint n = GetFinalPathNameByHandleW(h, b, (uint)b.Capacity, 0);
            if (n == 0) throw Fail("cannot resolve " + path);
            string s = b.ToString();
            return s.StartsWith(@"\\?\") ? s.Substring(4) : s;
        } finally { CloseHandle(h); }
    }

    static IntPtr LogonSid(IntPtr token) {
        uint n; GetTokenInformation(token, TokenGroups, IntPtr.Zero, 0, out n);
        IntPtr buf = Marshal.AllocHGlobal((int)n);
        if (!GetTokenInformation(token, TokenGroups, buf, n, out n)) throw Fail("token groups");
        int count = Marshal.ReadInt32(buf);
        int size = Marshal.SizeOf(typeof(SidAttr));
        for (int i = 0; i < count; i++) {
            var e = (SidAttr)Marshal.PtrToStructure(new IntPtr(buf.ToInt64() + IntPtr.Size + i * size), typeof(SidAttr));
            if ((e.Attributes & SE_GROUP_LOGON_ID) == SE_GROUP_LOGON_ID) return e.Sid;
        }
        throw new InvalidOperationException("the token has no logon sid");
    }

    /// Run a command line under the restricted token and a Job Object; returns the exit code.
    public static int Run(string commandLine, string cwd, string capabilitySid, uint tokenFlags,
                          string[] denyOnlySids, string integritySid, uint limitFlags, uint uiRestrictions,
                          long processMemory, long jobMemory, uint activeProcesses, long jobTime100ns,
                          IDictionary<string, string> environment, int timeoutMs, long outputLimit) {
        IntPtr current;
        if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ALL, out current)) throw Fail("open process token");
        var disable = new SidAttr[denyOnlySids.Length];
        for (int i = 0; i < denyOnlySids.Length; i++) disable[i].Sid = Sid(denyOnlySids[i]);
        var restrict = new SidAttr[] { new SidAttr { Sid = Sid(capabilitySid) }, new SidAttr { Sid = LogonSid(current) } };
        IntPtr token;
        if (!CreateRestrictedToken(current, tokenFlags, (uint)disable.Length, disable, 0, IntPtr.Zero,
                                   (uint)restrict.Length, restrict, out token)) throw Fail("create restricted token");
        var label = new SidAttr { Sid = Sid(integritySid), Attributes = SE_GROUP_INTEGRITY };
        int labelSize = Marshal.SizeOf(typeof(SidAttr));
        IntPtr labelBuf = Marshal.AllocHGlobal(labelSize);
        Marshal.StructureToPtr(label, labelBuf, false);
        if (!SetTokenInformation(token, TokenIntegrityLevel, labelBuf, (uint)labelSize)) throw Fail("set integrity level");

        IntPtr job = CreateJobObjectW(IntPtr.Zero, null);
        if (job == IntPtr.Zero) throw Fail("create job object");
        var ext = new ExtendedLimit();
        ext.Basic.LimitFlags = limitFlags;
        ext.Basic.ActiveProcessLimit = activeProcesses;
        ext.Basic.PerJobUserTimeLimit = jobTime100ns;
        ext.ProcessMemoryLimit = new UIntPtr((ulong)processMemory);
        ext.JobMemoryLimit = new UIntPtr((ulong)jobMemory);
        int extSize = Marshal.SizeOf(typeof(ExtendedLimit));
        IntPtr extBuf = Marshal.AllocHGlobal(extSize);
        Marshal.StructureToPtr(ext, extBuf, false);
        if (!SetInformationJobObject(job, JobExtended, extBuf, (uint)extSize)) throw Fail("set job limits");
        IntPtr uiBuf = Marshal.AllocHGlobal(4);
        Marshal.WriteInt32(uiBuf, (int)uiRestrictions);
        if (!SetInformationJobObject(job, JobBasicUi, uiBuf, 4)) throw Fail("set job ui restrictions");

        var sa = new SecurityAttributes { nLength = Marshal.SizeOf(typeof(SecurityAttributes)), bInheritHandle = true };
        IntPtr readEnd, writeEnd;
        if (!CreatePipe(out readEnd, out writeEnd, ref sa, 0)) throw Fail("create pipe");
        SetHandleInformation(readEnd, 1, 0);
        var si = new StartupInfo { cb = Marshal.SizeOf(typeof(StartupInfo)), dwFlags = 0x100,
                                   hStdInput = GetStdHandle(-10), hStdOutput = writeEnd, hStdError = writeEnd };
        var block = new StringBuilder();
        var names = new List<string>(environment.Keys);
        names.Sort(StringComparer.OrdinalIgnoreCase);
        foreach (var name in names) block.Append(name).Append('=').Append(environment[name]).Append('\0');
        block.Append('\0');
        IntPtr env = Marshal.StringToHGlobalUni(block.ToString());
        ProcessInfo pi;
        const uint flags = 0x4 | 0x400 | 0x200;  // CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT | CREATE_NEW_PROCESS_GROUP
        if (!CreateProcessAsUserW(token, null, new StringBuilder(commandLine), IntPtr.Zero, IntPtr.Zero, true,
                                  flags, env, cwd, ref si, out pi)) throw Fail("create process");
        CloseHandle(writeEnd);
        if (!AssignProcessToJobObject(job, pi.hProcess)) {
            TerminateJobObject(job, 1); throw Fail("assign process to job");
        }
        ResumeThread(pi.hThread);
        long written = 0; bool capped = false;
        var stdout = Console.OpenStandardOutput();
        var pump = new Thread(() => {
            var buffer = new byte[65536]; uint got;
            while (ReadFile(readEnd, buffer, (uint)buffer.Length, out got, IntPtr.Zero) && got > 0) {
                long room = outputLimit < 0 ? got : Math.Max(0, outputLimit - written);
                int take = (int)Math.Min(room, got);
                if (take > 0) { stdout.Write(buffer, 0, take); written += take; }
                if (take < got) { capped = true; TerminateJobObject(job, 0xC0000409); break; }
            }
        });
        pump.Start();
        uint waited = WaitForSingleObject(pi.hProcess, timeoutMs < 0 ? 0xFFFFFFFF : (uint)timeoutMs);
        if (waited != 0) { TerminateJobObject(job, 0x102); WaitForSingleObject(pi.hProcess, 0xFFFFFFFF); }
        pump.Join();
        uint code; GetExitCodeProcess(pi.hProcess, out code);
        CloseHandle(pi.hThread); CloseHandle(pi.hProcess); CloseHandle(readEnd); CloseHandle(job);
        if (waited != 0) { Console.Error.WriteLine("stockade: timeout, the job was terminated"); return 124; }
        if (capped) { Console.Error.WriteLine("stockade: output limit reached, the job was terminated"); return 125; }
        return (int)code;
    }
}
'''


def _ps_int(value: int | float | None) -> str:
    return "-1" if value is None else str(int(value))


def render_powershell(plan: dict[str, Any]) -> str:
    """The PowerShell script that applies ``plan``, runs ``$Command`` and tears down."""
    sid = plan["principal"]["sid"]
    out: list[str] = []
    emit = out.append
    emit("#Requires -Version 5.1")
    emit(f"# stockade windows sandbox for policy {ps_quote(plan['policy'])} (plan version {plan['plan_version']})")
    emit("# generated by `stockade compile --target windows-ps`; do not edit: recompile the policy")
    emit("# usage: powershell -ExecutionPolicy Bypass -File sandbox.ps1 -Command 'cmd.exe /c dir' [-BrokerPort PORT]")
    emit("param([Parameter(Mandatory = $true)][string]$Command, [int]$BrokerPort = 0)")
    emit("Set-StrictMode -Version 3.0")
    emit("$ErrorActionPreference = 'Stop'")
    emit(f"$CapabilitySid = {ps_quote(sid)}")
    emit("$Journal = New-Object System.Collections.Generic.List[object]")
    emit("$Helper = @'" + _HELPER_CS + "'@")
    emit("Add-Type -TypeDefinition $Helper -Language CSharp")
    emit("")
    emit("function Invoke-Icacls([string]$Path, [string[]]$Arguments) {")
    emit("    $output = & icacls.exe $Path @Arguments 2>&1")
    emit("    if ($LASTEXITCODE -ne 0) { throw \"icacls failed on ${Path}: $output\" }")
    emit("}")
    emit("function Add-StockadeAce([string]$Id, [string]$Path, [string]$Type, [string]$Rights, [bool]$Inherit, [string]$IfMissing) {")
    emit("    if (-not (Test-Path -LiteralPath $Path)) {")
    emit("        Write-Warning \"stockade: ${Path} does not exist; ACE $Id skipped (the path stays as strict as its parent)\"")
    emit("        return")
    emit("    }")
    emit("    $flags = ''")
    emit("    if ($Inherit -and (Test-Path -LiteralPath $Path -PathType Container)) { $flags = '(OI)(CI)' }")
    emit("    $verb = if ($Type -eq 'deny') { '/deny' } else { '/grant' }")
    emit("    Invoke-Icacls $Path @($verb, ('*' + $CapabilitySid + ':' + $flags + '(' + $Rights + ')'))")
    emit("    $Journal.Add(@{ Kind = 'ace'; Path = $Path; Type = $Type })")
    emit("}")
    emit("function Assert-Canonical([string]$Path) {")
    emit("    if (-not (Test-Path -LiteralPath $Path)) { return }")
    emit("    $final = [StockadeNative]::FinalPath($Path)")
    emit("    if (-not [string]::Equals($final.TrimEnd('\\'), $Path.TrimEnd('\\'), [StringComparison]::OrdinalIgnoreCase)) {")
    emit("        throw \"stockade: ${Path} resolves to ${final} (link, junction or short name); point the policy at the real path\"")
    emit("    }")
    emit("}")
    emit("")
    emit("# -- preflight (fails closed before anything is changed) --")
    for check in plan["preflight"]:
        target = ps_quote(check["target"])
        kind = check["check"]
        if kind == "fixed-local-drive":
            emit(f"if (([System.IO.DriveInfo]::new({target})).DriveType -ne 'Fixed') "
                 f"{{ throw ('stockade: ' + {target} + ' is not a local fixed drive') }}")
        elif kind == "ntfs":
            emit(f"if (([System.IO.DriveInfo]::new({target})).DriveFormat -ne 'NTFS') "
                 f"{{ throw ('stockade: ' + {target} + ' is not NTFS') }}")
        elif kind == "exists":
            emit(f"if (-not (Test-Path -LiteralPath {target} -PathType Container)) "
                 f"{{ throw ('stockade: the workspace ' + {target} + ' does not exist') }}")
        elif kind == "canonical":
            emit(f"Assert-Canonical {target}")
        elif kind == "elevated":
            emit("if (-not ([Security.Principal.WindowsPrincipal][Security.Principal.WindowsIdentity]::GetCurrent())"
                 ".IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)) "
                 "{ throw 'stockade: firewall rules need an elevated shell (run as administrator)' }")
    emit("")
    emit("$ExitCode = 1")
    emit("try {")
    emit("    # -- placeholders for protected paths that do not exist yet --")
    for holder in plan["placeholders"]:
        path = ps_quote(holder["path"])
        emit(f"    if (-not (Test-Path -LiteralPath {path})) {{")
        emit(f"        $missing = @(); $p = {path}")
        emit("        while ($p -and -not (Test-Path -LiteralPath $p)) { $missing += $p; $p = Split-Path -Parent $p }")
        emit("        [array]::Reverse($missing)")
        emit("        foreach ($m in $missing) { New-Item -ItemType Directory -Path $m | Out-Null; "
             "$Journal.Add(@{ Kind = 'placeholder'; Path = $m }) }")
        emit("    }")
    emit("    # -- ACEs for the capability SID, shallow to deep, deny before allow per object --")
    for ace in plan["acl"]["entries"]:
        inherit = "$true" if ace["inheritance"] == "OICI" else "$false"
        emit(f"    Add-StockadeAce {ps_quote(ace['id'])} {ps_quote(ace['path'])} {ps_quote(ace['type'])} "
             f"{ps_quote(','.join(ace['rights']))} {inherit} {ps_quote(ace['if_missing'])}  # {ace['sddl']}")
    if plan["globs"]:
        emit("    # -- globs: ACEs on the matches that exist now (see the plan's warnings) --")
    for glob in plan["globs"]:
        emit(f"    $pattern = {ps_quote(glob['pattern'])}")
        emit("    $regex = [regex]::new((ConvertTo-StockadeRegex $pattern), 'IgnoreCase')")
        emit(f"    if (Test-Path -LiteralPath {ps_quote(glob['base'])}) {{")
        emit(f"        $found = @(Get-ChildItem -LiteralPath {ps_quote(glob['base'])} -Recurse -Force "
             "-Attributes !ReparsePoint -ErrorAction SilentlyContinue | Where-Object { $regex.IsMatch($_.FullName) })")
        emit("        foreach ($match in $found) {")
        for ace in glob["aces"]:
            emit(f"            Add-StockadeAce {ps_quote(glob['id'])} $match.FullName {ps_quote(ace['type'])} "
                 f"{ps_quote(','.join(ace['rights']))} $true 'skip'")
        if glob["guard_ancestors_within"]:
            emit(f"            foreach ($root in {ps_array(glob['guard_ancestors_within'])}) {{")
            emit("                $a = Split-Path -Parent $match.FullName")
            emit("                while ($a -and $a.StartsWith($root, [StringComparison]::OrdinalIgnoreCase)) {")
            emit("                    Add-StockadeAce 'guard' $a 'deny' 'DE' $false 'skip'; $a = Split-Path -Parent $a")
            emit("                }")
            emit("            }")
        emit("        }")
        emit("    }")
    network = plan["network"]
    if network["firewall_rules"]:
        emit("    # -- network: block the capability SID everywhere but loopback --")
    for rule in network["firewall_rules"]:
        direction = "Outbound" if rule["direction"] == "outbound" else "Inbound"
        emit(f"    New-NetFirewallRule -Name {ps_quote(rule['name'])} -DisplayName {ps_quote(rule['name'])} "
             f"-Direction {direction} -Action Block -Profile Any -RemoteAddress {ps_array(rule['remote_addresses'])} "
             f"-LocalUser {ps_quote(rule['local_user_sddl'])} | Out-Null")
        emit(f"    $Journal.Add(@{{ Kind = 'firewall'; Name = {ps_quote(rule['name'])} }})")
    env = plan["environment"]
    emit("    # -- environment: rebuilt from the policy --")
    emit(f"    $keep = {ps_array(env['keep'])}; $drop = {ps_array(env['drop'])}")
    emit("    $environment = @{}")
    emit("    foreach ($entry in [Environment]::GetEnvironmentVariables().GetEnumerator()) {")
    emit("        $name = [string]$entry.Key")
    emit("        if ($keep.Count -gt 0 -and -not ($keep | Where-Object { $name -like $_ })) { continue }")
    emit("        if ($drop | Where-Object { $name -like $_ }) { continue }")
    emit("        $environment[$name] = [string]$entry.Value")
    emit("    }")
    for item in env["set"]:
        emit(f"    $environment[{ps_quote(item['name'])}] = {ps_quote(item['value'])}")
    broker = network.get("broker")
    if broker:
        emit("    # -- network broker: every destination beyond loopback goes through it (port 0: none, fail closed) --")
    for name, value in sorted(network.get("environment", {}).items()):
        if broker and broker["port_placeholder"] in value:
            head, _, tail = value.partition(broker["port_placeholder"])
            rest = f" + {ps_quote(tail)}" if tail else ""
            emit(f"    $environment[{ps_quote(name)}] = {ps_quote(head)} + [string]$BrokerPort{rest}")
        else:
            emit(f"    $environment[{ps_quote(name)}] = {ps_quote(value)}")
    job = plan["job"]
    limits = job["limits"]
    token = plan["token"]
    timeout = next((s.get("timeout_seconds") for s in plan["spawn"] if s["step"] == "wait"), None)
    emit("    # -- restricted token + Job Object + suspended process, then wait --")
    emit(f"    $ExitCode = [StockadeNative]::Run($Command, {ps_quote(plan['context']['workspace'])}, $CapabilitySid, "
         f"{token['flags_value']}, {ps_array(token['deny_only_sids'])}, {ps_quote(token['integrity_level']['sid'])}, "
         f"{job['limit_flags_value']}, {job['ui_restrictions_value']}, "
         f"{_ps_int(limits.get('process_memory_bytes'))}, {_ps_int(limits.get('job_memory_bytes'))}, "
         f"{int(limits.get('active_processes', 0))}, {_ps_int(limits.get('job_user_time_100ns'))}, $environment, "
         f"{_ps_int(None if timeout is None else timeout * 1000)}, {_ps_int(plan['output_limit_bytes'])})")
    emit("} finally {")
    emit("    # -- teardown: undo exactly what the journal recorded, newest first --")
    emit("    for ($i = $Journal.Count - 1; $i -ge 0; $i--) {")
    emit("        $entry = $Journal[$i]")
    emit("        try {")
    emit("            switch ($entry.Kind) {")
    emit("                'firewall' { Remove-NetFirewallRule -Name $entry.Name }")
    emit("                'ace' { $verb = if ($entry.Type -eq 'deny') { '/remove:d' } else { '/remove:g' }; "
         "Invoke-Icacls $entry.Path @($verb, ('*' + $CapabilitySid)) }")
    emit("                'placeholder' { if (-not (Get-ChildItem -LiteralPath $entry.Path -Force)) "
         "{ Remove-Item -LiteralPath $entry.Path } }")
    emit("            }")
    emit("        } catch { Write-Warning \"stockade: teardown step failed: $_\" }")
    emit("    }")
    emit("}")
    emit("exit $ExitCode")
    text = "\n".join(out) + "\n"
    if plan["globs"]:
        # the glob → regex converter is only needed (and only emitted) when there are globs
        converter = "\n".join([
            "function ConvertTo-StockadeRegex([string]$Pattern) {",
            "    $out = '^'",
            "    $parts = $Pattern -split '\\\\'",
            "    for ($i = 0; $i -lt $parts.Count; $i++) {",
            "        $part = $parts[$i]",
            "        if ($part -eq '**') { $out += '(?:[^\\\\]+\\\\)*'; continue }",
            "        $out += [regex]::Escape($part).Replace('\\*', '[^\\\\]*').Replace('\\?', '[^\\\\]')",
            "        if ($i -lt $parts.Count - 1) { $out += '\\\\' }",
            "    }",
            "    return $out + '$'",
            "}",
        ])
        text = text.replace("\nfunction Assert-Canonical", "\n" + converter + "\nfunction Assert-Canonical", 1)
    return text
