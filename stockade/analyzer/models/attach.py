"""Code run inside other processes: debuggers and tracers that attach to a running process, and
the JVM options JDK tools pass on to the JVM they start.

``gdb -p 1``, ``lldb --attach-pid N``, ``strace -p N``, ``gcore N``, ``py-spy dump --pid N``:
attaching to a process (by ptrace) lets the tool read its memory — secrets the process holds —
and make it run anything, as that process, outside what the command shows: unknown effects,
whatever the process is.  A debugger run in batch (``gdb -batch -ex bt -p N``, ``lldb -p N -o
bt -o detach``) runs only the commands its model judges, and a tracer or profiler that only
observes (strace, perf, py-spy…) a job the same command started (``./server & perf record -p
$!``) adds nothing to what that job was judged to do.  The tool's own model still judges the rest
of the command.

``jshell -R-javaagent:x.jar``, ``jdb -J-Dx=1``: ``-J``/``-R`` pass an option to the JVM that
runs the tool (or jshell's execution engine); such options are judged as the same options in
``JAVA_TOOL_OPTIONS`` are (:func:`~stockade.analyzer.models.optionvars.harmless_options`):
heap and encoding settings are harmless, agents, ``-XX:OnError=`` and other properties are
code or settings that cannot be seen into.  ``jshell --execution SPEC`` runs the snippets in an
engine the spec names (a remote JVM): not known.
"""

from __future__ import annotations

from stockade.analyzer.effects import CHILD_PID, UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, default_model, register
from stockade.analyzer.models.optionvars import harmless_options

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model

#: program → options whose value is the process id (or name) attached to; "" marks a tool whose
#: positional operands are process ids (``gcore PID``)
ATTACHERS: dict[str, frozenset[str]] = {
    "gdb": frozenset({"-p", "--pid", "-pid"}),
    "lldb": frozenset({"-p", "--attach-pid", "-n", "--attach-name"}),
    "strace": frozenset({"-p", "--attach"}),
    "ltrace": frozenset({"-p"}),
    "perf": frozenset({"-p", "--pid", "-t", "--tid"}),
    "gdbserver": frozenset({"--attach"}),
    "gcore": frozenset({""}),
    "pstack": frozenset({""}),
    "eu-stack": frozenset({"-p", "--pid"}),
    "py-spy": frozenset({"-p", "--pid"}),
    "rbspy": frozenset({"-p", "--pid"}),
    "pyrasite": frozenset({""}),
    "jcmd": frozenset({""}),
    "jmap": frozenset({""}),
    "jstack": frozenset({""}),
    "jattach": frozenset({""}),
    "bpftrace": frozenset({"-p"}),
    "reptyr": frozenset({""}),
}


#: tracers and profilers that only observe the process they attach to (they run no code in it):
#: attaching to a job the command itself started (``./server & strace -p $!``) adds nothing
OBSERVERS = frozenset({"strace", "ltrace", "perf", "eu-stack", "py-spy", "rbspy", "pstack", "gcore", "jstack"})


def _attached(inv: Invocation) -> tuple[str, int] | None:
    """The process the command attaches to (its word and argv index), or None."""
    options = ATTACHERS.get(inv.name, frozenset())
    argv = inv.argv
    for index in range(1, len(argv)):
        word = argv[index]
        if word == "--":
            break
        name, eq, value = word.partition("=")
        if eq and name in options:
            return value, index
        if word in options and index + 1 < len(argv):
            return argv[index + 1], index + 1
        if word[:2] in options and len(word) > 2 and word[:2] != "--" and word[2:].isdigit():
            return word[2:], index  # (`-p1234`)
    if "" in options:
        operands = [(word, index) for index, word in enumerate(argv[1:], start=1) if word[:1] != "-"]
        for word, index in operands:
            if word.isdigit() or UNKNOWN in word or inv.name in ("jattach", "pyrasite", "reptyr"):
                return word, index
    if inv.name == "gdb":  # `gdb PROGRAM PID`: the second operand is a process to attach to
        operands = [(word, index) for index, word in enumerate(argv[1:], start=1) if word[:1] != "-"]
        if len(operands) >= 2 and operands[1][0].isdigit() and "--args" not in argv:
            return operands[1]
    return None


#: debugger commands that end a session (after them, nothing typed runs)
_ENDS = frozenset({"detach", "quit", "q", "exit", "kill"})


def _visible_session(inv: Invocation) -> bool:
    """A debugger run in batch — ``gdb -batch -ex bt -p N``, ``lldb -p N -o bt -o detach`` —
    runs only the commands its model judges; an interactive one runs what is typed later."""
    argv = inv.argv
    if inv.name == "gdb":
        return any(word.lstrip("-") in ("batch", "batch-silent") for word in argv[1:])
    if inv.name == "lldb":
        if any(word in ("-b", "--batch") for word in argv[1:]):
            return True
        commands = [argv[index + 1].strip() for index in range(1, len(argv) - 1)
                    if argv[index] in ("-o", "--one-line")]
        return bool(commands) and commands[-1] in _ENDS
    return False


def _attacher(name: str, previous: Model) -> Model:
    def model(inv: Invocation) -> None:
        previous(inv)
        found = _attached(inv)
        if found is not None and found[0] == CHILD_PID and inv.name in OBSERVERS:
            return  # (a job this command started, whose code is judged where it started)
        if found is not None and not _visible_session(inv):
            inv.unknown(f"`{inv.name}` attaches to the running process `{show(found[0])}`: it can read its memory "
                        "and make it run anything, which the command does not show", found[1])

    model.__doc__ = f"{previous.__doc__ or name}; attaching to a running process is unknown code (attach.py)"
    return model


#: JDK tools that pass ``-J<option>`` to their JVM (jshell also ``-R<option>`` to its engine)
JDK_TOOLS = ("jshell", "jdb", "javadoc", "javap", "jar", "jarsigner", "keytool", "jlink", "jpackage", "jdeps",
             "jconsole", "jdeprscan", "jimage", "jmod", "serialver", "jwebserver", "jfr")


def _jvm_options(name: str, previous: Model) -> Model:
    def model(inv: Invocation) -> None:
        previous(inv)
        argv = inv.argv
        for index in range(1, len(argv)):
            word = argv[index]
            if word == "--":
                break
            if word[:2] in ("-J", "-R") and len(word) > 2 and (word[:2] == "-J" or inv.name == "jshell"):
                option = word[2:]
                if not harmless_options("JAVA_TOOL_OPTIONS", option):
                    inv.unknown(f"`{inv.name} {word[:2]}` gives the JVM the option `{show(option)}`, which can load "
                                "code or change what the JVM does: not known", index)
            elif inv.name == "jshell" and (word == "--execution" or word.startswith("--execution=")):
                inv.unknown("`jshell --execution` runs the snippets in the engine its spec names, which can be "
                            "another machine's JVM", index)

    model.__doc__ = f"{previous.__doc__ or name}; -J/-R options are judged as JVM options (attach.py)"
    return model


for _name in ATTACHERS:
    register(_name, _attacher(_name, MODELS.get(_name, default_model)))
for _name in JDK_TOOLS:
    register(_name, _jvm_options(_name, MODELS.get(_name, default_model)))
