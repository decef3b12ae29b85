"""Hostile words given to the models: any argv of the programs with a model of their own
(runners, sandboxes, code-carrying options, typing tools, git, compilers …) ends in a verdict,
never in the analyzer's internal error (A499, which fails closed but hides the model's bug)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade import catalogue
from stockade.analyzer import analyze

PROGRAMS = ["capsh", "bwrap", "nsjail", "apptainer", "distrobox-enter", "setarch", "runcon", "ksu", "pueue", "tsp",
            "tmux", "screen", "gdb", "lldb", "pee", "mispipe", "bun", "gio", "kitty", "kitten", "wezterm", "zellij",
            "xdotool", "wtype", "i3-msg", "hyprctl", "nvim", "vim", "systemctl", "gnuplot", "mix", "nim", "cargo",
            "bazel", "dotnet", "jupyter", "ant", "ninja", "gcc", "cpp", "java", "deno", "rename", "conda", "pipx",
            "chezmoi", "direnv", "hub", "git", "psql", "mysql", "openssl", "ssh-keyscan", "resolvectl", "npm",
            "curlie", "cp", "ln", "ssh", "scp", "sshfs", "sftp", "tar", "cpio", "find", "sed", "awk", "date",
            "python3", "php", "docker", "make", "cmake", "script", "trap", "source", "sh", "compgen", "pytest",
            "unshare", "systemd-run", "poetry", "uv", "pnpm", "yarn", "daemonize", "curl", "gh", "croc"]
WORDS = ["-", "--", "-c", "-e", "-f", "-o", "-p", "-C", "-S", "-w", "-i", "-s", "-l", "-x", "=", "@", "'#(x)'",
         "'a[x]'", "'\"'", '"$@"', '"${@:2}"', '"${x@P}"', "~", "..", "c/..", "/dev/stdin", "localhost:x",
         "root@localhost", "host:f", "x", "1", "\\;", "-E", "--eval:", "--run_under", "-wrapper", ",", "exec",
         "send-text", "if-shell", "set-hook", "load-buffer", "run", "--directory", "--cwd", "-T", "'{a}'",
         "'%output{x}'", "'rm -rf ~'", "subtree", "push", "alias", "set", "--abstract-unix-socket", "'\\\\o f'"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(PROGRAMS), st.lists(st.sampled_from(WORDS), max_size=7))
def test_any_words_end_in_a_verdict(ir, program: str, words: list[str]) -> None:
    verdict = analyze(" ".join([program, *words]), ir)
    assert verdict.decision in ("allow", "confirm", "deny")
    internal = [r.message for r in verdict.reasons if r.code == catalogue.ANALYZER_INTERNAL_ERROR]
    assert not internal, internal
