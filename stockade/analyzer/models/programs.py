"""Programs named by configuration and variables (``core.pager=./x.sh``, ``GIT_SSH=/tmp/x``,
``LESSOPEN='|./pre %s'``): a tool runs that program later, out of sight of the command line.

A program given by path is judged by where it lives: a file in a place an agent can write
(the workspace, the temporary directories) or one written earlier in the same text is code
that cannot be seen into — the ``unknown-effects`` verdict; a program elsewhere (``/usr/bin/vim``)
or named by a bare command name is judged as running it (the command line is walked like
``sh -c``).  Configuration that hides a program in a writable file is a classic way around a
review of the command line, so the place decides, not what the file is called.
"""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN, Read, Unknown, show

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.effects import SpanT
    from stockade.analyzer.walker import Walker

#: directories an agent can write under any policy this analyzer judges (with the workspace
#: and ``$TMPDIR`` of the policy's context)
_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/user")


def agent_writable(walker: Walker, path: str) -> bool:
    """Whether ``path`` (resolved) lies where the agent may have put a file: the workspace, the
    temporary directories, or a file this text wrote."""
    if UNKNOWN in path:
        return True
    context = walker.context
    for root in (context.workspace, context.tmpdir, *_SCRATCH):
        if root and (path == root or path.startswith(root.rstrip("/") + "/")):
            return True
    from stockade.analyzer.models.fresh import written_by

    return written_by(walker, path) is not None


def first_word(command: str) -> str:
    """The program of a command line (its first blank-separated word, quotes removed)."""
    word = command.strip().split(None, 1)[0] if command.strip() else ""
    return word.strip("'\"")


def judge_program(walker: Walker, command: str, span: SpanT, what: str, shell: bool = True) -> None:
    """A tool will run ``command`` (``what`` says where it is set): unknown code when the program
    is a file the agent may have written, else the command line is walked (``shell``: it is
    shell code; otherwise only its program is judged)."""
    if UNKNOWN in command:
        walker.effects.append(Unknown(f"{what} is a program that is not known (`{show(command)}`)", span))
        return
    program = first_word(command)
    if "/" in program or program[:1] == "~":
        path = walker.resolve(program)
        if agent_writable(walker, path):  # (running the file reads it: a denied one is a read of a secret)
            walker.effects.append(Read(path, span, False, False))
            walker.effects.append(Unknown(f"{what} runs `{show(program)}`, a file in a place the agent can write: "
                                          "its code cannot be seen into", span))
            return
    walker.nested_script(command if shell else program, span, exact=True, subshell=True)
