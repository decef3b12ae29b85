"""Argv normalisation and command-pattern matching.

A command pattern is an argv prefix: its positional words must match the command's
positional words in order (``*`` one word, ``**`` any number, ``a|b`` alternatives,
fnmatch wildcards inside a word), and each of its flags must be among the command's flags,
wherever they stand.  Flags are normalised on both sides, so ``-rf`` = ``-fr`` = ``-r -f``
= ``--recursive --force``: short clusters are split and long spellings mapped to one
canonical name through the per-tool table :data:`FLAG_ALIASES`.

The table is data: one entry per command (or ``"cmd sub"`` for a subcommand), mapping each
spelling to its canonical flag, plus the options that take a separate value (so the value
is not mistaken for a positional word).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from stockade.compiler.ir import PatternToken


@dataclass(frozen=True, slots=True)
class FlagTable:
    """How one tool spells its flags: aliases to a canonical name, and value-taking options."""

    aliases: dict[str, str]
    takes_value: frozenset[str] = frozenset()


def _table(aliases: dict[str, str] | None = None, takes_value: Iterable[str] = ()) -> FlagTable:
    return FlagTable(dict(aliases or {}), frozenset(takes_value))


#: Canonical flag spellings per tool (``"tool"`` or ``"tool subcommand"``).
FLAG_ALIASES: dict[str, FlagTable] = {
    "rm": _table({"-R": "-r", "--recursive": "-r", "--force": "-f", "--dir": "-d", "--verbose": "-v",
                  "--interactive": "-i"}),
    "cp": _table({"-R": "-r", "--recursive": "-r", "--force": "-f", "--archive": "-a", "--verbose": "-v"},
                 ["-t", "--target-directory", "-S", "--suffix"]),
    "mv": _table({"--force": "-f", "--verbose": "-v", "--no-clobber": "-n"}, ["-t", "--target-directory", "-S"]),
    "chmod": _table({"-R": "-r", "--recursive": "-r"}),
    "chown": _table({"-R": "-r", "--recursive": "-r"}),
    "ln": _table({"--symbolic": "-s", "--force": "-f"}, ["-t", "--target-directory"]),
    "mkdir": _table({"--parents": "-p"}, ["-m", "--mode"]),
    "git": _table({}, ["-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"]),
    "git push": _table({"--force": "-f", "--delete": "-d", "--tags": "--tags", "--all": "--all",
                        "--mirror": "--mirror"}, ["-o", "--push-option", "--repo", "--receive-pack", "--exec"]),
    "git commit": _table({"--all": "-a", "--message": "-m", "--amend": "--amend", "--no-verify": "-n"},
                         ["-m", "--message", "-F", "--file", "-C", "--reuse-message", "--author", "--date"]),
    "git reset": _table({}),
    "git clean": _table({"--force": "-f", "--dry-run": "-n"}, ["-e", "--exclude"]),
    "git checkout": _table({"--force": "-f"}, ["-b", "-B"]),
    "git branch": _table({"--delete": "-d", "--force": "-f"}),
    "curl": _table({"--output": "-o", "--silent": "-s", "--location": "-L", "--fail": "-f", "--data": "-d",
                    "--insecure": "-k", "--request": "-X", "--header": "-H", "--upload-file": "-T"},
                   ["-o", "--output", "-d", "--data", "--data-binary", "--data-raw", "-X", "--request", "-H",
                    "--header", "-T", "--upload-file", "-u", "--user", "-x", "--proxy", "-A", "--user-agent",
                    "-e", "--referer", "-F", "--form", "-K", "--config", "--connect-timeout", "-m", "--max-time"]),
    "wget": _table({"--output-document": "-O", "--quiet": "-q"}, ["-O", "--output-document", "-P", "-o"]),
    "npm install": _table({"--global": "-g", "--save-dev": "-D"}),
    "pip install": _table({"--user": "--user", "--upgrade": "-U", "--requirement": "-r"}, ["-r", "--requirement", "-c", "-i", "--index-url", "-t", "--target"]),
    "docker run": _table({"--privileged": "--privileged", "--interactive": "-i", "--tty": "-t", "--volume": "-v"},
                         ["-v", "--volume", "-e", "--env", "-p", "--publish", "--name", "-w", "--workdir", "--network", "--entrypoint", "-u", "--user"]),
    "sudo": _table({"--user": "-u"}, ["-u", "--user", "-g", "--group", "-C", "-h", "-p", "-r", "-t", "-U"]),
    "find": _table({}),
    "tar": _table({"--extract": "-x", "--create": "-c", "--file": "-f", "--gzip": "-z", "--verbose": "-v"},
                  ["-f", "--file", "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from"]),
    "chattr": _table({"-R": "-r"}),
    "kill": _table({}, ["-s", "-n"]),
}

_EMPTY = FlagTable({})


def program_name(word: str) -> str:
    """The name a command is known by: the basename of its path (``/bin/rm`` → ``rm``)."""
    return os.path.basename(word) or word


def _table_for(program: str, subcommand: str | None) -> FlagTable:
    if subcommand is not None:
        table = FLAG_ALIASES.get(f"{program} {subcommand}")
        if table is not None:
            return table
    return FLAG_ALIASES.get(program, _EMPTY)


def normalize_flag(flag: str, table: FlagTable) -> list[str]:
    """Canonical flags for one argv word that starts with ``-``.

    ``--name=value`` keeps its name; a short cluster ``-rf`` becomes ``-r``, ``-f``.
    """
    if flag.startswith("--"):
        name = flag.split("=", 1)[0]
        return [table.aliases.get(name, name)]
    if len(flag) > 2 and flag[:2] not in table.takes_value:
        out = []
        for char in flag[1:]:
            if not char.isalpha():  # -n19: the digits are a value, not flags
                break
            short = f"-{char}"
            out.append(table.aliases.get(short, short))
            if short in table.takes_value:  # the rest of the cluster is its value: -ofile
                break
        return out or [flag[:2]]
    return [table.aliases.get(flag[:2], flag[:2])]


def _expects_separate_value(word: str, table: FlagTable) -> bool:
    """Whether the option ``word`` takes the next argv word as its value."""
    if "=" in word or not table.takes_value:
        return False
    if word in table.takes_value:
        return True
    if word.startswith("--"):
        return False
    # a short cluster: the first value-taking letter takes the rest, or the next word if last
    for position, char in enumerate(word[1:], start=1):
        if not char.isalpha():
            return False
        if f"-{char}" in table.takes_value:
            return position == len(word) - 1
    return False


@dataclass(frozen=True, slots=True)
class ParsedArgv:
    """An argv split into positional words (program first) and canonical flags."""

    positionals: tuple[str, ...]
    flags: frozenset[str]


def parse_argv(argv: Sequence[str]) -> ParsedArgv:
    """Split ``argv`` into positionals and normalised flags using the tool's flag table."""
    if not argv:
        return ParsedArgv((), frozenset())
    program = program_name(argv[0])
    positionals = [program]
    flags: set[str] = set()
    table = _table_for(program, None)
    subcommand_seen = False
    skip_value = False
    end_of_options = False
    for word in argv[1:]:
        if skip_value:
            skip_value = False
            continue
        if end_of_options or not word.startswith("-") or word in ("-",):
            positionals.append(word)
            if not subcommand_seen and len(positionals) == 2:
                subcommand_seen = True
                sub = _table_for(program, word)
                if sub is not table:
                    table = sub
            continue
        if word == "--":
            end_of_options = True
            continue
        flags.update(normalize_flag(word, table))
        skip_value = _expects_separate_value(word, table)
    return ParsedArgv(tuple(positionals), frozenset(flags))


@dataclass(frozen=True, slots=True)
class CompiledPattern:
    """A command pattern prepared for matching."""

    positionals: tuple[PatternToken, ...]
    flags: tuple[frozenset[str], ...]  # each: canonical alternatives, one of which must be present

    @property
    def program_alternatives(self) -> tuple[str, ...]:
        return self.positionals[0].alternatives if self.positionals else ("*",)


def compile_pattern(pattern: Sequence[PatternToken]) -> CompiledPattern:
    """Split a pattern into positional tokens and normalised flag requirements."""
    positionals: list[PatternToken] = []
    flag_groups: list[frozenset[str]] = []
    program = pattern[0].alternatives[0] if pattern else ""
    table = _table_for(program_name(program), None)
    pending: list[tuple[str, ...]] = []
    for token in pattern:
        if token.is_flag:
            pending.append(token.alternatives)
        else:
            positionals.append(token)
            if len(positionals) == 2 and len(token.alternatives) == 1:
                table = _table_for(program_name(program), token.alternatives[0])
    for alternatives in pending:
        # a cluster like -rf requires each of its letters; alternatives give a choice
        if len(alternatives) == 1:
            for name in normalize_flag(alternatives[0], table):
                flag_groups.append(frozenset([name]))
        else:
            choice: set[str] = set()
            for alternative in alternatives:
                choice.update(normalize_flag(alternative, table))
            flag_groups.append(frozenset(choice))
    return CompiledPattern(tuple(positionals), tuple(flag_groups))


def _word_matches(word: str, alternatives: tuple[str, ...]) -> bool:
    for alternative in alternatives:
        if alternative == word or alternative == "*":
            return True
        if ("*" in alternative or "?" in alternative or "[" in alternative) and fnmatchcase(word, alternative):
            return True
    return False


def _positionals_match(tokens: tuple[PatternToken, ...], words: tuple[str, ...]) -> bool:
    if not tokens:
        return True  # a pattern is a prefix: the rest of the words may be anything
    head, rest = tokens[0], tokens[1:]
    if head.is_rest:
        return any(_positionals_match(rest, words[i:]) for i in range(len(words) + 1))
    if not words or not _word_matches(words[0], head.alternatives):
        return False
    return _positionals_match(rest, words[1:])


def pattern_matches(pattern: CompiledPattern, parsed: ParsedArgv) -> bool:
    """Whether a compiled pattern matches a parsed argv."""
    for group in pattern.flags:
        if group.isdisjoint(parsed.flags):
            return False
    return _positionals_match(pattern.positionals, parsed.positionals)
