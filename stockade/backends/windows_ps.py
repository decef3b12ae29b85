"""Render a Windows plan (see :mod:`stockade.backends.windows`) as a PowerShell script.

The script applies the plan with .NET's ACL classes (explicit ACEs for the capability SID,
written once and kept: persisted grants, removed by ``-Uninstall``), Windows Firewall
cmdlets (``New-NetFirewallRule -LocalUser``) and a small C# helper compiled with
``Add-Type`` (C# 5, what Windows PowerShell 5.1 compiles) for what PowerShell has no cmdlet
for: the restricted token and its default DACL, the Job Object, suspended process creation
with an explicit handle list and desktop, the null device's ACE, canonical-path checks.
What a run adds for itself (firewall rules, placeholders) is written to a journal file in
Stockade's state directory *before* it is added; a ``finally`` block removes exactly the
journal's entries, newest first, and a run that finds a journal left by a killed run
replays it before starting.

Quoting: every value from the plan — paths, SIDs, names, environment values — is emitted as
a single-quoted PowerShell literal by :func:`ps_quote`, in which nothing is interpolated
(``$`` and the backtick are literal, and ``-LiteralPath`` is used wherever a path meets a
cmdlet, so ``[`` in a name is no wildcard); single quotes, including the typographic ones
that PowerShell also accepts as quotes (U+2018–U+201B), are doubled.  Plan paths never
contain newlines or NUL (the backend rejects them); :func:`ps_quote` refuses them anyway.
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
using System.Security.AccessControl;
using System.Security.Principal;
using System.Text;
using System.Threading;

public static class StockadeNative {
    const uint TOKEN_ALL = 0xF01FF;
    const int TokenUser = 1, TokenGroups = 2, TokenDefaultDacl = 6, TokenIntegrityLevel = 25;
    const uint SE_GROUP_LOGON_ID = 0xC0000000, SE_GROUP_INTEGRITY = 0x20;
    const int JobBasicUi = 4, JobExtended = 9;
    const uint HANDLE_FLAG_INHERIT = 1, DUPLICATE_SAME_ACCESS = 2;
    const uint EXTENDED_STARTUPINFO_PRESENT = 0x80000;
    const int PROC_THREAD_ATTRIBUTE_HANDLE_LIST = 0x20002;
    const uint DACL_SECURITY_INFORMATION = 4;
    const uint READ_CONTROL = 0x20000, WRITE_DAC = 0x40000;
    const uint LOGON_WITH_PROFILE = 1;

    [StructLayout(LayoutKind.Sequential)] public struct SidAttr { public IntPtr Sid; public uint Attributes; }
    [StructLayout(LayoutKind.Sequential)] public struct BasicLimit {
        public long PerProcessUserTimeLimit, PerJobUserTimeLimit; public uint LimitFlags;
        public UIntPtr MinimumWorkingSetSize, MaximumWorkingSetSize; public uint ActiveProcessLimit;
        public UIntPtr Affinity; public uint PriorityClass, SchedulingClass; }
    [StructLayout(LayoutKind.Sequential)] public struct IoCounters {
        public ulong ReadOperationCount, WriteOperationCount, OtherOperationCount, ReadTransferCount,
        WriteTransferCount, OtherTransferCount; }
    [StructLayout(LayoutKind.Sequential)] public struct ExtendedLimit {
        public BasicLimit Basic; public IoCounters Io; public UIntPtr ProcessMemoryLimit, JobMemoryLimit,
        PeakProcessMemoryUsed, PeakJobMemoryUsed; }
    [StructLayout(LayoutKind.Sequential, CharSet = CharSet.Unicode)] public struct StartupInfo {
        public int cb; public string lpReserved, lpDesktop, lpTitle; public int dwX, dwY, dwXSize, dwYSize,
        dwXCountChars, dwYCountChars, dwFillAttribute, dwFlags; public short wShowWindow, cbReserved2;
        public IntPtr lpReserved2, hStdInput, hStdOutput, hStdError; }
    [StructLayout(LayoutKind.Sequential, CharSet = CharSet.Unicode)] public struct StartupInfoEx {
        public StartupInfo StartupInfo; public IntPtr lpAttributeList; }
    [StructLayout(LayoutKind.Sequential)] public struct ProcessInfo {
        public IntPtr hProcess, hThread; public uint dwProcessId, dwThreadId; }
    [StructLayout(LayoutKind.Sequential)] public struct SecurityAttributes {
        public int nLength; public IntPtr lpSecurityDescriptor; public int bInheritHandle; }
    [StructLayout(LayoutKind.Sequential)] public struct TokenDefaultDaclInfo { public IntPtr DefaultDacl; }

    [DllImport("kernel32.dll")] static extern IntPtr GetCurrentProcess();
    [DllImport("kernel32.dll", SetLastError = true)] static extern IntPtr GetStdHandle(int n);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool DuplicateHandle(IntPtr sp, IntPtr h, IntPtr tp,
        out IntPtr target, uint access, bool inherit, uint options);
    [DllImport("advapi32.dll", SetLastError = true)] static extern bool OpenProcessToken(IntPtr p, uint a, out IntPtr t);
    [DllImport("advapi32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern bool ConvertStringSidToSidW(string s, out IntPtr sid);
    [DllImport("advapi32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern bool ConvertSidToStringSidW(IntPtr sid, out IntPtr s);
    [DllImport("advapi32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern bool ConvertStringSecurityDescriptorToSecurityDescriptorW(
        string sddl, uint revision, out IntPtr sd, out uint size);
    [DllImport("advapi32.dll", SetLastError = true)] static extern bool GetSecurityDescriptorDacl(IntPtr sd, out bool present, out IntPtr dacl, out bool defaulted);
    [DllImport("advapi32.dll", SetLastError = true)] static extern bool CreateRestrictedToken(IntPtr t, uint flags,
        uint nDisable, SidAttr[] disable, uint nPriv, IntPtr priv, uint nRestrict, SidAttr[] restrict, out IntPtr nt);
    [DllImport("advapi32.dll", SetLastError = true)] static extern bool GetTokenInformation(IntPtr t, int c, IntPtr b, uint n, out uint r);
    [DllImport("advapi32.dll", SetLastError = true)] static extern bool SetTokenInformation(IntPtr t, int c, IntPtr b, uint n);
    [DllImport("advapi32.dll", SetLastError = true)] static extern bool GetKernelObjectSecurity(IntPtr h, uint info, byte[] sd, uint n, out uint needed);
    [DllImport("advapi32.dll", SetLastError = true)] static extern bool SetKernelObjectSecurity(IntPtr h, uint info, byte[] sd);
    [DllImport("kernel32.dll", SetLastError = true)] static extern IntPtr LocalFree(IntPtr p);
    [DllImport("kernel32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern IntPtr CreateJobObjectW(IntPtr a, string n);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool SetInformationJobObject(IntPtr j, int c, IntPtr i, uint n);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool AssignProcessToJobObject(IntPtr j, IntPtr p);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool TerminateJobObject(IntPtr j, uint code);
    [DllImport("kernel32.dll", SetLastError = true)] static extern uint ResumeThread(IntPtr t);
    [DllImport("kernel32.dll", SetLastError = true)] static extern uint WaitForSingleObject(IntPtr h, uint ms);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool GetExitCodeProcess(IntPtr h, out uint c);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool CloseHandle(IntPtr h);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool CancelIoEx(IntPtr h, IntPtr o);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool CreatePipe(out IntPtr r, out IntPtr w, ref SecurityAttributes sa, uint size);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool ReadFile(IntPtr h, byte[] b, uint n, out uint r, IntPtr o);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool InitializeProcThreadAttributeList(IntPtr list, int count, int flags, ref IntPtr size);
    [DllImport("kernel32.dll", SetLastError = true)] static extern bool UpdateProcThreadAttribute(IntPtr list, uint flags, IntPtr attr,
        IntPtr value, IntPtr size, IntPtr prev, IntPtr retSize);
    [DllImport("kernel32.dll", SetLastError = true)] static extern void DeleteProcThreadAttributeList(IntPtr list);
    [DllImport("advapi32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern bool CreateProcessAsUserW(IntPtr t,
        string app, StringBuilder cmd, IntPtr pa, IntPtr ta, bool inherit, uint flags, IntPtr env, string cwd,
        ref StartupInfoEx si, out ProcessInfo pi);
    [DllImport("advapi32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern bool CreateProcessWithLogonW(string user,
        string domain, string password, uint logonFlags, string app, StringBuilder cmd, uint flags, IntPtr env,
        string cwd, ref StartupInfo si, out ProcessInfo pi);
    [DllImport("kernel32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern IntPtr CreateFileW(string p,
        uint a, uint s, IntPtr sa, uint d, uint f, IntPtr t);
    [DllImport("kernel32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern uint GetFinalPathNameByHandleW(IntPtr h,
        StringBuilder b, uint n, uint f);

    static Exception Fail(string what) { return new Win32Exception(Marshal.GetLastWin32Error(), what); }

    static IntPtr Sid(string s) { IntPtr p; if (!ConvertStringSidToSidW(s, out p)) throw Fail("bad sid " + s); return p; }

    static string SidString(IntPtr sid) {
        IntPtr text; if (!ConvertSidToStringSidW(sid, out text)) throw Fail("sid to string");
        try { return Marshal.PtrToStringUni(text); } finally { LocalFree(text); }
    }

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

    /// Grant a SID rights on a device (``\\.\NUL``) by adding one ACE to its DACL, unless an
    /// equal ACE is there already. The device's DACL lives until reboot.
    public static void GrantDevice(string device, string sid, int mask) {
        IntPtr h = CreateFileW(device, READ_CONTROL | WRITE_DAC, 7, IntPtr.Zero, 3, 0, IntPtr.Zero);
        if (h == new IntPtr(-1)) throw Fail("cannot open " + device);
        try {
            uint needed;
            GetKernelObjectSecurity(h, DACL_SECURITY_INFORMATION, null, 0, out needed);
            var buffer = new byte[needed];
            if (!GetKernelObjectSecurity(h, DACL_SECURITY_INFORMATION, buffer, needed, out needed)) throw Fail("read dacl of " + device);
            var sd = new RawSecurityDescriptor(buffer, 0);
            var who = new SecurityIdentifier(sid);
            var dacl = sd.DiscretionaryAcl ?? new RawAcl(GenericAcl.AclRevision, 1);
            foreach (GenericAce ace in dacl) {
                var known = ace as CommonAce;
                if (known != null && known.AceQualifier == AceQualifier.AccessAllowed && known.SecurityIdentifier == who
                    && (known.AccessMask & mask) == mask) return;
            }
            dacl.InsertAce(dacl.Count, new CommonAce(AceFlags.None, AceQualifier.AccessAllowed, mask, who, false, null));
            sd.DiscretionaryAcl = dacl;
            var updated = new byte[sd.BinaryLength];
            sd.GetBinaryForm(updated, 0);
            if (!SetKernelObjectSecurity(h, DACL_SECURITY_INFORMATION, updated)) throw Fail("write dacl of " + device);
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

    static IntPtr UserSid(IntPtr token) {
        uint n; GetTokenInformation(token, TokenUser, IntPtr.Zero, 0, out n);
        IntPtr buf = Marshal.AllocHGlobal((int)n);
        if (!GetTokenInformation(token, TokenUser, buf, n, out n)) throw Fail("token user");
        return ((SidAttr)Marshal.PtrToStructure(buf, typeof(SidAttr))).Sid;
    }

    static IntPtr Inheritable(IntPtr h) {
        IntPtr copy;
        if (!DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), out copy, 0, true, DUPLICATE_SAME_ACCESS))
            throw Fail("duplicate handle");
        return copy;
    }

    /// Stage 2, as the sandbox account: run a command line under a write-restricted copy of
    /// this process's token (restricting SIDs: the capability and logon SIDs); returns its
    /// exit code.  The job that stage 1 put this process in holds the child too.
    public static int RunRestricted(string commandLine, string cwd, string capabilitySid, uint tokenFlags,
                                    string[] denyOnlySids, string defaultDacl, string desktop, string integritySid) {
        IntPtr current;
        if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ALL, out current)) throw Fail("open process token");
        var disable = new SidAttr[denyOnlySids.Length];
        for (int i = 0; i < denyOnlySids.Length; i++) disable[i].Sid = Sid(denyOnlySids[i]);
        IntPtr logon = LogonSid(current);
        var restrict = new SidAttr[] { new SidAttr { Sid = Sid(capabilitySid) }, new SidAttr { Sid = logon } };
        IntPtr token;
        if (!CreateRestrictedToken(current, tokenFlags, (uint)disable.Length, disable, 0, IntPtr.Zero,
                                   (uint)restrict.Length, restrict, out token)) throw Fail("create restricted token");
        var label = new SidAttr { Sid = Sid(integritySid), Attributes = SE_GROUP_INTEGRITY };
        int labelSize = Marshal.SizeOf(typeof(SidAttr));
        IntPtr labelBuf = Marshal.AllocHGlobal(labelSize);
        Marshal.StructureToPtr(label, labelBuf, false);
        if (!SetTokenInformation(token, TokenIntegrityLevel, labelBuf, (uint)labelSize)) throw Fail("set integrity level");
        // the default DACL of new objects (pipes, events, its own threads) must name SIDs that
        // pass the restricting check too, or the child cannot open what it creates
        string daclText = defaultDacl.Replace("%ACCOUNT%", SidString(UserSid(current))).Replace("%LOGON%", SidString(logon));
        IntPtr sd; uint sdSize; bool present, defaulted; IntPtr dacl;
        if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(daclText, 1, out sd, out sdSize)) throw Fail("parse default dacl");
        if (!GetSecurityDescriptorDacl(sd, out present, out dacl, out defaulted)) throw Fail("default dacl");
        var dd = new TokenDefaultDaclInfo { DefaultDacl = dacl };
        int ddSize = Marshal.SizeOf(typeof(TokenDefaultDaclInfo));
        IntPtr ddBuf = Marshal.AllocHGlobal(ddSize);
        Marshal.StructureToPtr(dd, ddBuf, false);
        if (!SetTokenInformation(token, TokenDefaultDacl, ddBuf, (uint)ddSize)) throw Fail("set default dacl");

        // only the three standard handles are inherited (PROC_THREAD_ATTRIBUTE_HANDLE_LIST)
        var handles = new List<IntPtr>();
        var std = new IntPtr[3];
        for (int i = 0; i < 3; i++) {
            IntPtr h = GetStdHandle(-10 - i);
            std[i] = (h == IntPtr.Zero || h == new IntPtr(-1)) ? IntPtr.Zero : Inheritable(h);
            if (std[i] != IntPtr.Zero && !handles.Contains(std[i])) handles.Add(std[i]);
        }
        IntPtr listSize = IntPtr.Zero;
        InitializeProcThreadAttributeList(IntPtr.Zero, 1, 0, ref listSize);
        IntPtr list = Marshal.AllocHGlobal(listSize);
        if (!InitializeProcThreadAttributeList(list, 1, 0, ref listSize)) throw Fail("attribute list");
        IntPtr handleArray = Marshal.AllocHGlobal(IntPtr.Size * Math.Max(1, handles.Count));
        for (int i = 0; i < handles.Count; i++) Marshal.WriteIntPtr(handleArray, i * IntPtr.Size, handles[i]);
        if (handles.Count > 0 && !UpdateProcThreadAttribute(list, 0, new IntPtr(PROC_THREAD_ATTRIBUTE_HANDLE_LIST),
                handleArray, new IntPtr(IntPtr.Size * handles.Count), IntPtr.Zero, IntPtr.Zero)) throw Fail("handle list");
        var si = new StartupInfoEx();
        si.StartupInfo.cb = Marshal.SizeOf(typeof(StartupInfoEx));
        si.StartupInfo.lpDesktop = desktop;
        si.StartupInfo.dwFlags = 0x100;  // STARTF_USESTDHANDLES
        si.StartupInfo.hStdInput = std[0]; si.StartupInfo.hStdOutput = std[1]; si.StartupInfo.hStdError = std[2];
        si.lpAttributeList = list;
        ProcessInfo pi;
        // CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT; the environment is this process's own
        uint flags = 0x400 | EXTENDED_STARTUPINFO_PRESENT;
        bool created = CreateProcessAsUserW(token, null, new StringBuilder(commandLine), IntPtr.Zero, IntPtr.Zero,
                                            handles.Count > 0, flags, IntPtr.Zero, cwd, ref si, out pi);
        int createError = Marshal.GetLastWin32Error();
        DeleteProcThreadAttributeList(list);
        foreach (var h in handles) CloseHandle(h);
        if (!created) throw new Win32Exception(createError, "create process");
        WaitForSingleObject(pi.hProcess, 0xFFFFFFFF);
        uint code; GetExitCodeProcess(pi.hProcess, out code);
        CloseHandle(pi.hThread); CloseHandle(pi.hProcess);
        return (int)code;
    }

    /// Stage 1, as the user: start the runner as the sandbox account in a Job Object,
    /// copy its output (up to the limit) and enforce the timeout; returns the exit code.
    public static int Launch(string account, string password, string runnerCommandLine, string cwd,
                             uint limitFlags, uint uiRestrictions, long processMemory, long jobMemory,
                             uint activeProcesses, long jobTime100ns, IDictionary<string, string> environment,
                             int timeoutMs, long outputLimit) {
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

        // the pipe's read end stays here (not inheritable); the secondary logon service gives
        // the runner the standard handles named below and nothing else
        var sa = new SecurityAttributes { nLength = Marshal.SizeOf(typeof(SecurityAttributes)), bInheritHandle = 0 };
        IntPtr readEnd, writePipe;
        if (!CreatePipe(out readEnd, out writePipe, ref sa, 0)) throw Fail("create pipe");
        IntPtr writeEnd = Inheritable(writePipe);
        CloseHandle(writePipe);
        IntPtr stdin = GetStdHandle(-10);
        IntPtr input = (stdin == IntPtr.Zero || stdin == new IntPtr(-1)) ? IntPtr.Zero : Inheritable(stdin);
        // lpDesktop stays null: then the secondary logon service itself grants the new logon
        // access to the inherited window station and desktop (the runner names it explicitly)
        var si = new StartupInfo { cb = Marshal.SizeOf(typeof(StartupInfo)), lpDesktop = null, dwFlags = 0x100,
                                   hStdInput = input, hStdOutput = writeEnd, hStdError = writeEnd };
        var block = new StringBuilder();
        var names = new List<string>(environment.Keys);
        names.Sort(StringComparer.OrdinalIgnoreCase);
        foreach (var name in names) block.Append(name).Append('=').Append(environment[name]).Append('\0');
        block.Append('\0');
        IntPtr env = Marshal.StringToHGlobalUni(block.ToString());
        ProcessInfo pi;
        // CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT | CREATE_NEW_PROCESS_GROUP
        uint flags = 0x4 | 0x400 | 0x200;
        bool created = CreateProcessWithLogonW(account, ".", password, LOGON_WITH_PROFILE, null,
                                               new StringBuilder(runnerCommandLine), flags, env, cwd, ref si, out pi);
        int createError = Marshal.GetLastWin32Error();
        CloseHandle(writeEnd);
        if (input != IntPtr.Zero) CloseHandle(input);
        Marshal.FreeHGlobal(env);
        if (!created) throw new Win32Exception(createError, "log on the sandbox account");
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
        pump.IsBackground = true;
        pump.Start();
        // one deadline for the command and its output: a background grandchild that keeps the
        // pipe open cannot hold the run past the timeout
        DateTime deadline = timeoutMs < 0 ? DateTime.MaxValue : DateTime.UtcNow.AddMilliseconds(timeoutMs);
        uint waited = WaitForSingleObject(pi.hProcess, timeoutMs < 0 ? 0xFFFFFFFF : (uint)timeoutMs);
        bool timedOut = waited != 0;
        if (timedOut) TerminateJobObject(job, 0x102);
        TimeSpan left = deadline == DateTime.MaxValue ? TimeSpan.FromSeconds(5) : deadline - DateTime.UtcNow;
        if (left < TimeSpan.FromSeconds(1)) left = TimeSpan.FromSeconds(1);
        if (!pump.Join(left)) {
            // the command ended but something still holds its output open: end the whole job
            TerminateJobObject(job, 0x102);
            CancelIoEx(readEnd, IntPtr.Zero);
            pump.Join(TimeSpan.FromSeconds(5));
        }
        WaitForSingleObject(pi.hProcess, 5000);
        uint code; GetExitCodeProcess(pi.hProcess, out code);
        CloseHandle(pi.hThread); CloseHandle(pi.hProcess); CloseHandle(readEnd); CloseHandle(job);
        if (timedOut) { Console.Error.WriteLine("stockade: timeout, the job was terminated"); return 124; }
        if (capped) { Console.Error.WriteLine("stockade: output limit reached, the job was terminated"); return 125; }
        return (int)code;
    }

    /// Sizes and field offsets of the structures passed to Win32, for the layout test.
    public static string Layout() {
        var sb = new StringBuilder();
        Type[] types = { typeof(SidAttr), typeof(BasicLimit), typeof(IoCounters), typeof(ExtendedLimit),
                         typeof(StartupInfo), typeof(StartupInfoEx), typeof(ProcessInfo), typeof(SecurityAttributes),
                         typeof(TokenDefaultDaclInfo) };
        foreach (var t in types) {
            sb.Append(t.Name).Append(' ').Append(Marshal.SizeOf(t));
            foreach (var f in t.GetFields()) sb.Append(' ').Append(f.Name).Append('=').Append(Marshal.OffsetOf(t, f.Name).ToInt64());
            sb.Append('\n');
        }
        return sb.ToString();
    }
}
'''


def _ps_int(value: int | float | None) -> str:
    return "-1" if value is None else str(int(value))


def _prelude(plan: dict[str, Any]) -> list[str]:
    """Parameters, the helper type, the state directory and the journal functions."""
    state = plan["state"]
    return [
        "#Requires -Version 5.1",
        f"# stockade windows sandbox for policy {ps_quote(plan['policy'])} (plan version {plan['plan_version']})",
        "# generated by `stockade compile --target windows-ps`; do not edit: recompile the policy",
        "# usage: powershell -ExecutionPolicy Bypass -File sandbox.ps1 -Command 'cmd.exe /c dir' [-BrokerPort PORT]",
        "#        powershell -ExecutionPolicy Bypass -File sandbox.ps1 -Uninstall   (removes the persisted grants)",
        "param([string]$Command = '', [switch]$Uninstall, [int]$BrokerPort = 0)",
        "Set-StrictMode -Version 3.0",
        "$ErrorActionPreference = 'Stop'",
        f"$CapabilitySid = {ps_quote(plan['principal']['sid'])}",
        f"$AccountName = {ps_quote(plan['principal']['account']['name'])}",
        f"$StateDir = [Environment]::ExpandEnvironmentVariables({ps_quote(state['dir'])})",
        f"$JournalFile = [Environment]::ExpandEnvironmentVariables({ps_quote(state['journal'])})",
        f"$GrantsFile = [Environment]::ExpandEnvironmentVariables({ps_quote(state['grants'])})",
        "$Journal = New-Object System.Collections.Generic.List[object]",
        "$Helper = @'" + _HELPER_CS + "'@",
        "if (-not ('StockadeNative' -as [type])) { Add-Type -TypeDefinition $Helper -Language CSharp }",
        "",
        "# -- state: a journal of what this run adds, written before each addition --",
        "function Add-Journal([hashtable]$Entry) {",
        "    $Journal.Add($Entry)",
        "    Add-Content -LiteralPath $JournalFile -Value (ConvertTo-Json -Compress -InputObject $Entry) -Encoding UTF8",
        "}",
        "function Remove-JournalEntry($Entry) {",
        "    switch ([string]$Entry.Kind) {",
        "        'firewall' { Remove-NetFirewallRule -Name ([string]$Entry.Name) -ErrorAction SilentlyContinue }",
        "        'placeholder' {",
        "            $p = [string]$Entry.Path",
        "            if ((Test-Path -LiteralPath $p) -and -not (Get-ChildItem -LiteralPath $p -Force)) "
        "{ Remove-Item -LiteralPath $p }",
        "        }",
        "    }",
        "}",
        "function Restore-FromJournal {",
        "    # a run killed before its finally block left its journal: undo it, newest first",
        "    if (-not (Test-Path -LiteralPath $JournalFile)) { return }",
        "    $lines = @(Get-Content -LiteralPath $JournalFile -Encoding UTF8 | Where-Object { $_ })",
        "    for ($i = $lines.Count - 1; $i -ge 0; $i--) {",
        "        try { Remove-JournalEntry (ConvertFrom-Json -InputObject $lines[$i]) }",
        "        catch { Write-Warning \"stockade: recovery step failed: $_\" }",
        "    }",
        "    Remove-Item -LiteralPath $JournalFile",
        "}",
        "",
        "# -- persisted grants: an ACE is written once; an equal explicit ACE already there is kept",
        "# (writing the ACL of a directory re-propagates to everything below it) --",
        "function Add-StockadeAce([string]$Path, [string]$Type, [int]$Mask, [bool]$Inherit) {",
        "    if (-not (Test-Path -LiteralPath $Path)) {",
        "        Write-Warning \"stockade: ${Path} does not exist; ACE skipped (the path stays as strict as its parent)\"",
        "        return",
        "    }",
        "    $item = Get-Item -LiteralPath $Path -Force",
        "    $inheritance = [System.Security.AccessControl.InheritanceFlags]::None",
        "    if ($Inherit -and $item.PSIsContainer) {",
        "        $inheritance = [System.Security.AccessControl.InheritanceFlags]'ContainerInherit, ObjectInherit'",
        "    }",
        "    $kind = if ($Type -eq 'deny') { [System.Security.AccessControl.AccessControlType]::Deny } "
        "else { [System.Security.AccessControl.AccessControlType]::Allow }",
        "    $acl = $item.GetAccessControl([System.Security.AccessControl.AccessControlSections]::Access)",
        "    $changed = $false",
        "    foreach ($who in @($AccountSid, $CapabilitySid)) {",
        "        $sid = New-Object System.Security.Principal.SecurityIdentifier($who)",
        "        $present = $false",
        "        foreach ($have in $acl.GetAccessRules($true, $false, [System.Security.Principal.SecurityIdentifier])) {",
        "            if ($have.IdentityReference -eq $sid -and $have.AccessControlType -eq $kind -and "
        "$have.InheritanceFlags -eq $inheritance -and ([int]$have.FileSystemRights -band $Mask) -eq $Mask) { $present = $true }",
        "        }",
        "        if ($present) { continue }",
        "        # AddAccessRule keeps the DACL canonical (explicit denies before allows) and merges only",
        "        # rules of the same type and inheritance, so a rename guard (deny DELETE, this object",
        "        # only) survives the allow on the same object",
        "        $rule = New-Object System.Security.AccessControl.FileSystemAccessRule($sid, "
        "[System.Security.AccessControl.FileSystemRights]$Mask, $inheritance, "
        "[System.Security.AccessControl.PropagationFlags]::None, $kind)",
        "        $acl.AddAccessRule($rule)",
        "        $changed = $true",
        "    }",
        "    if (-not $changed) { return }",
        "    $item.SetAccessControl($acl)  # one write (one propagation) for both SIDs",
        "    Add-Content -LiteralPath $GrantsFile -Value $Path -Encoding UTF8",
        "}",
        "function Remove-StockadeGrants {",
        "    if (-not (Test-Path -LiteralPath $GrantsFile)) { return }",
        "    foreach ($path in @(Get-Content -LiteralPath $GrantsFile -Encoding UTF8 | Sort-Object -Unique)) {",
        "        if (-not $path -or -not (Test-Path -LiteralPath $path)) { continue }",
        "        $item = Get-Item -LiteralPath $path -Force",
        "        $acl = $item.GetAccessControl([System.Security.AccessControl.AccessControlSections]::Access)",
        "        foreach ($who in @($AccountSid, $CapabilitySid)) {",
        "            $acl.PurgeAccessRules((New-Object System.Security.Principal.SecurityIdentifier($who)))",
        "        }",
        "        $item.SetAccessControl($acl)",
        "    }",
        "    Remove-Item -LiteralPath $GrantsFile",
        "}",
        "function Test-Within([string]$Path, [string]$Root) {",
        "    # below or equal, with a separator check: C:\\work2 is not inside C:\\work",
        "    $root = $Root.TrimEnd('\\')",
        "    return ($Path.Equals($root, [StringComparison]::OrdinalIgnoreCase) -or "
        "$Path.StartsWith($root + '\\', [StringComparison]::OrdinalIgnoreCase))",
        "}",
        "function Assert-Canonical([string]$Path) {",
        "    if (-not (Test-Path -LiteralPath $Path)) { return }",
        "    $final = [StockadeNative]::FinalPath($Path)",
        "    if (-not [string]::Equals($final.TrimEnd('\\'), $Path.TrimEnd('\\'), [StringComparison]::OrdinalIgnoreCase)) {",
        "        throw \"stockade: ${Path} resolves to ${final} (link, junction or short name); point the policy at the real path\"",
        "    }",
        "}",
        "",
        "# -- the sandbox account: created once (elevated), its password kept with DPAPI for this user --",
        "function Get-SandboxAccount {",
        "    $credential = Join-Path $StateDir 'account.dpapi'",
        "    $account = Get-LocalUser -Name $AccountName -ErrorAction SilentlyContinue",
        "    if ($account -and (Test-Path -LiteralPath $credential)) {",
        "        $secret = Get-Content -LiteralPath $credential | ConvertTo-SecureString",
        "    } else {",
        "        $bytes = New-Object byte[] 24",
        "        [System.Security.Cryptography.RandomNumberGenerator]::Create().GetBytes($bytes)",
        "        $secret = ConvertTo-SecureString ([Convert]::ToBase64String($bytes) + 'a1!A') -AsPlainText -Force",
        "        if ($account) { Set-LocalUser -Name $AccountName -Password $secret }",
        "        else {",
        "            New-LocalUser -Name $AccountName -Password $secret -AccountNeverExpires -PasswordNeverExpires "
        "-UserMayNotChangePassword -Description 'stockade sandbox (commands run as this account)' | Out-Null",
        "            Add-LocalGroupMember -SID 'S-1-5-32-545' -Member $AccountName -ErrorAction SilentlyContinue",
        "        }",
        "        $secret | ConvertFrom-SecureString | Set-Content -LiteralPath $credential",
        "    }",
        "    $sid = (Get-LocalUser -Name $AccountName).SID.Value",
        "    $plain = [Runtime.InteropServices.Marshal]::PtrToStringUni("
        "[Runtime.InteropServices.Marshal]::SecureStringToGlobalAllocUnicode($secret))",
        "    return @{ Sid = $sid; Password = $plain }",
        "}",
        "function Install-Runner([string]$Dir) {",
        "    # the runner the account starts: readable and executable by it, writable only by",
        "    # SYSTEM and Administrators (a protected DACL, nothing inherited)",
        "    New-Item -ItemType Directory -Force -Path $Dir | Out-Null",
        "    $security = New-Object System.Security.AccessControl.DirectorySecurity",
        "    $security.SetAccessRuleProtection($true, $false)",
        "    $all = [System.Security.AccessControl.InheritanceFlags]'ContainerInherit, ObjectInherit'",
        "    $none = [System.Security.AccessControl.PropagationFlags]::None",
        "    $allow = [System.Security.AccessControl.AccessControlType]::Allow",
        "    foreach ($who in @('S-1-5-18', 'S-1-5-32-544')) {",
        "        $security.AddAccessRule((New-Object System.Security.AccessControl.FileSystemAccessRule("
        "(New-Object System.Security.Principal.SecurityIdentifier($who)), 'FullControl', $all, $none, $allow)))",
        "    }",
        "    $security.AddAccessRule((New-Object System.Security.AccessControl.FileSystemAccessRule("
        "(New-Object System.Security.Principal.SecurityIdentifier($AccountSid)), 'ReadAndExecute', $all, $none, $allow)))",
        "    (Get-Item -LiteralPath $Dir).SetAccessControl($security)",
        "    Set-Content -LiteralPath (Join-Path $Dir 'helper.cs') -Value $Helper -Encoding UTF8",
        "    Set-Content -LiteralPath (Join-Path $Dir 'runner.ps1') -Value $RunnerScript -Encoding UTF8",
        "}",
        "$RunnerScript = @'",
        "param([string]$Request)",
        "$ErrorActionPreference = 'Stop'",
        "$r = ConvertFrom-Json ([Text.Encoding]::UTF8.GetString([Convert]::FromBase64String($Request)))",
        "Add-Type -Path (Join-Path $PSScriptRoot 'helper.cs')",
        "exit ([StockadeNative]::RunRestricted([string]$r.command, [string]$r.cwd, [string]$r.capability, "
        "[uint32]$r.flags, [string[]]@($r.deny_only), [string]$r.default_dacl, [string]$r.desktop, [string]$r.integrity))",
        "'@",
        "",
        "New-Item -ItemType Directory -Force -Path $StateDir | Out-Null",
        "Restore-FromJournal",
        "$Account = Get-SandboxAccount",
        "$AccountSid = $Account.Sid",
        "if ($Uninstall) {",
        "    Remove-StockadeGrants",
        "    $runner = [Environment]::ExpandEnvironmentVariables('%ProgramData%\\stockade\\runner')",
        "    if (Test-Path -LiteralPath $runner) { Remove-Item -LiteralPath $runner -Recurse -Force }",
        "    Remove-LocalUser -Name $AccountName -ErrorAction SilentlyContinue",
        "    Remove-Item -LiteralPath (Join-Path $StateDir 'account.dpapi') -ErrorAction SilentlyContinue",
        "    exit 0",
        "}",
        "if (-not $Command) { throw 'stockade: -Command is required' }",
        "",
    ]


def render_powershell(plan: dict[str, Any]) -> str:
    """The PowerShell script that applies ``plan``, runs ``$Command`` and tears down."""
    out: list[str] = _prelude(plan)
    emit = out.append
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
        emit("        foreach ($m in $missing) { Add-Journal @{ Kind = 'placeholder'; Path = $m }; "
             "New-Item -ItemType Directory -Path $m | Out-Null }")
        emit("    }")
    emit("    # -- persisted ACEs for the capability SID, shallow to deep, deny before allow per object --")
    for ace in plan["acl"]["entries"]:
        inherit = "$true" if ace["inheritance"] == "OICI" else "$false"
        emit(f"    Add-StockadeAce {ps_quote(ace['path'])} {ps_quote(ace['type'])} {ace['mask_hex']} {inherit}"
             f"  # {ace['id']} {ace['sddl']}")
    for device in plan["devices"]:
        # without the grant writes to the device fail: stricter, so a refusal only warns
        emit(f"    try {{ [StockadeNative]::GrantDevice({ps_quote(device['path'])}, $CapabilitySid, {device['mask_hex']}) }}"
             f" catch {{ Write-Warning \"stockade: cannot grant {device['path']}: $_ (writes to it will fail)\" }}"
             f"  # {device['sddl']}, until reboot")
    if plan["globs"]:
        emit("    # -- globs: ACEs on the matches that exist now, looked for below the walk roots only --")
    for glob in plan["globs"]:
        emit(f"    $regex = [regex]::new((ConvertTo-StockadeRegex {ps_quote(glob['pattern'])}), 'IgnoreCase')")
        emit(f"    foreach ($walk in {ps_array(glob['walk_roots'])}) {{")
        emit("        if (-not (Test-Path -LiteralPath $walk)) { continue }")
        emit("        $found = @(Get-ChildItem -LiteralPath $walk -Recurse -Force -Attributes !ReparsePoint "
             "-ErrorAction SilentlyContinue | Where-Object { $regex.IsMatch($_.FullName) })")
        emit("        foreach ($match in $found) {")
        for ace in glob["aces"]:
            emit(f"            Add-StockadeAce $match.FullName {ps_quote(ace['type'])} {ace['mask_hex']} $true")
        if glob["guard_ancestors_within"]:
            emit(f"            foreach ($root in {ps_array(glob['guard_ancestors_within'])}) {{")
            emit("                $a = Split-Path -Parent $match.FullName")
            emit("                while ($a -and (Test-Within $a $root)) {")
            emit("                    Add-StockadeAce $a 'deny' 0x00010000 $false; $a = Split-Path -Parent $a")
            emit("                }")
            emit("            }")
        emit("        }")
        emit("    }")
    network = plan["network"]
    if network["firewall_rules"]:
        emit("    # -- network: block the capability SID everywhere but loopback --")
    for rule in network["firewall_rules"]:
        direction = "Outbound" if rule["direction"] == "outbound" else "Inbound"
        emit(f"    Add-Journal @{{ Kind = 'firewall'; Name = {ps_quote(rule['name'])} }}")
        emit(f"    New-NetFirewallRule -Name {ps_quote(rule['name'])} -DisplayName {ps_quote(rule['name'])} "
             f"-Direction {direction} -Action Block -Profile Any -RemoteAddress {ps_array(rule['remote_addresses'])} "
             f"-LocalUser ({ps_quote(rule['local_user_sddl'])}.Replace('%ACCOUNT%', $AccountSid)) | Out-Null")
    env = plan["environment"]
    emit("    # -- environment: rebuilt from the policy, plus what every windows process needs --")
    emit(f"    $keep = {ps_array(env['keep'])}; $drop = {ps_array(env['drop'])}")
    emit(f"    $windowsKeep = {ps_array(env['windows_keep'])}")
    emit("    $environment = New-Object 'System.Collections.Generic.Dictionary[string,string]' "
         "([StringComparer]::OrdinalIgnoreCase)")
    emit("    foreach ($entry in [Environment]::GetEnvironmentVariables().GetEnumerator()) {")
    emit("        $name = [string]$entry.Key")
    emit("        $kept = ($keep.Count -eq 0) -or ($keep | Where-Object { $name -like $_ }) -or ($windowsKeep -contains $name)")
    emit("        if (-not $kept) { continue }")
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
    runner = next(s["runner"] for s in plan["spawn"] if s["step"] == "logon-sandbox-account")
    emit("    # -- the runner: started as the sandbox account, it makes the write-restricted token --")
    emit(f"    $RunnerDir = [Environment]::ExpandEnvironmentVariables({ps_quote(runner)})")
    emit("    Install-Runner $RunnerDir")
    emit(f"    $request = @{{ command = $Command; cwd = {ps_quote(plan['context']['workspace'])}; "
         f"capability = $CapabilitySid; flags = {token['flags_value']}; deny_only = {ps_array(token['deny_only_sids'])}; "
         f"default_dacl = {ps_quote(token['default_dacl'])}; desktop = {ps_quote(token['desktop'])}; "
         f"integrity = {ps_quote(token['integrity_level']['sid'])} }}")
    emit("    $encoded = [Convert]::ToBase64String([Text.Encoding]::UTF8.GetBytes((ConvertTo-Json -Compress -InputObject $request)))")
    emit("    $powershell = Join-Path $env:SystemRoot 'System32\\WindowsPowerShell\\v1.0\\powershell.exe'")
    emit("    $runnerLine = '\"' + $powershell + '\" -NoProfile -NonInteractive -ExecutionPolicy Bypass -File \"' + "
         "(Join-Path $RunnerDir 'runner.ps1') + '\" -Request ' + $encoded")
    emit("    # -- Job Object + the runner as the sandbox account, then wait --")
    emit(f"    $ExitCode = [StockadeNative]::Launch($AccountName, $Account.Password, $runnerLine, "
         f"{ps_quote(plan['context']['workspace'])}, {job['limit_flags_value']}, {job['ui_restrictions_value']}, "
         f"{_ps_int(limits.get('process_memory_bytes'))}, {_ps_int(limits.get('job_memory_bytes'))}, "
         f"{int(limits.get('active_processes', 0))}, {_ps_int(limits.get('job_user_time_100ns'))}, $environment, "
         f"{_ps_int(None if timeout is None else timeout * 1000)}, "
         f"{_ps_int(plan['output_limit_bytes'])})")
    emit("} finally {")
    emit("    # -- teardown: undo exactly what the journal recorded, newest first (the ACEs are")
    emit("    # persisted grants: -Uninstall removes them) --")
    emit("    for ($i = $Journal.Count - 1; $i -ge 0; $i--) {")
    emit("        try { Remove-JournalEntry $Journal[$i] } catch { Write-Warning \"stockade: teardown step failed: $_\" }")
    emit("    }")
    emit("    if (Test-Path -LiteralPath $JournalFile) { Remove-Item -LiteralPath $JournalFile }")
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
