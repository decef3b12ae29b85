"""The diagnostics catalogue: every code Stockade reports, once, with what it means.

Each code is declared here by name::

    UNKNOWN_TARGET = entry("B300", "unknown target", explanation=..., example=...)

and raised by that name: ``Diagnostic(codes.UNKNOWN_TARGET, ...)`` with
``from stockade import catalogue as codes``.  The value of a constant is the code text
itself, a plain ``str`` typed :data:`Code` for the type checker (a ``NewType``), so
``Diagnostic.code``, comparisons, JSON and ``marshal`` output are unchanged (``marshal``,
which the plan and policy caches use, refuses ``str`` subclasses: a constant of a subclass
would break them).  :func:`get` looks an entry up (any case), :data:`ENTRIES`
holds them all in code order, ``stockade explain CODE`` prints one, and the README's code
list is generated from them (:func:`readme_block`; ``python3 -m stockade.catalogue
--readme`` prints it, ``--write-readme FILE`` rewrites it between the markers).

The first letter of a code names the stage that reports it (:data:`FAMILIES`).  This
module is imported on hot paths (every module that raises a diagnostic): it imports
nothing, and its texts are plain string constants (loading them costs less than reading a
second file would).
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported at run time: it costs ~7 ms
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, NewType

    #: A diagnostic code (``"B300"``) for the type checker; at run time a plain ``str``.
    Code = NewType("Code", str)
else:
    Code = str

#: Code family (first letter) → (the stage package that reports it, a title).
FAMILIES: dict[str, tuple[str, str]] = {
    "P": ("policy_lang", "policy language"),
    "C": ("compiler", "compiler"),
    "B": ("backends", "backends"),
    "A": ("analyzer", "analyzer verdicts"),
    "R": ("runtime", "runtime"),
    "X": ("integrations", "integrations (export, import, hooks)"),
    "E": ("cli", "command line"),
}

README_BEGIN = "<!-- codes:begin -->"
README_END = "<!-- codes:end -->"


class Entry:
    """One catalogue entry: the code, its constant's name, a short title, an explanation
    (what it means, why Stockade refuses or warns, how to fix it) and an example that
    triggers it (``example_kind``: ``policy`` — a policy file, checked by the tests —,
    ``shell`` — a command line —, or ``text``)."""

    __slots__ = ("code", "example", "example_kind", "explanation", "name", "reserved", "title")

    def __init__(self, code: Code, name: str, title: str, explanation: str, example: str | None,
                 example_kind: str | None, reserved: str | None) -> None:
        self.code = code
        self.name = name
        self.title = title
        self.explanation = explanation
        self.example = example
        self.example_kind = example_kind
        #: Why a code no source uses stays in the catalogue (None: it is in use).
        self.reserved = reserved

    @property
    def family(self) -> str:
        """The family title (``backends``)."""
        return FAMILIES[self.code[0]][1]

    @property
    def stage(self) -> str:
        """The stage package that reports this code (``backends``)."""
        return FAMILIES[self.code[0]][0]

    def to_json(self) -> dict[str, Any]:
        """The entry as a JSON object."""
        return {"code": str(self.code), "name": self.name, "title": self.title, "family": self.family,
                "explanation": self.explanation, "example": self.example, "example_kind": self.example_kind,
                "reserved": self.reserved}

    def __repr__(self) -> str:
        return f"Entry({self.code!s}, {self.name})"


#: Code text → (title, explanation, example, example kind, reserved), as declared; the
#: :class:`Entry` objects are made on first use (:data:`ENTRIES`), not at import.
_DECLARED: dict[str, tuple[str, str, str | None, str | None, str | None]] = {}


def entry(code: str, title: str, *, explanation: str, example: str | None = None,
          example_kind: str | None = None, reserved: str | None = None) -> Code:
    """Declare a code (once); returns it (a :data:`Code`) for the module constant."""
    if code in _DECLARED:
        raise ValueError(f"diagnostic code `{code}` is declared twice")
    _DECLARED[code] = (title, explanation, example, example_kind, reserved)
    return Code(code)


if TYPE_CHECKING:  # pragma: no cover
    #: Code text → entry, in code order (built on first access by :func:`__getattr__`).
    ENTRIES: dict[str, Entry]


def _entries() -> dict[str, Entry]:
    """:data:`ENTRIES`, built once: an :class:`Entry` per declared code, named after its
    module constant (a code with no constant, or with two, is a programming error)."""
    built = globals().get("ENTRIES")
    if built is not None:
        return built
    names: dict[str, str] = {}
    for name, value in list(globals().items()):
        if isinstance(value, str) and value in _DECLARED and name.isupper():
            if value in names:
                raise ValueError(f"diagnostic code `{value}` has two names: {names[value]}, {name}")
            names[value] = name
    made: dict[str, Entry] = {}
    for code in sorted(_DECLARED):
        title, explanation, example, kind, reserved = _DECLARED[code]
        if code not in names:
            raise ValueError(f"diagnostic code `{code}` has no module constant")
        made[code] = Entry(Code(code), names[code], title, explanation, example,
                            kind or ("policy" if example is not None else None), reserved)
    globals()["ENTRIES"] = made
    return made


def __getattr__(name: str) -> Any:
    """:data:`ENTRIES` on first access."""
    if name == "ENTRIES":
        return _entries()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get(code: str) -> Entry | None:
    """The entry of ``code`` (any case, surrounding spaces ignored), or None."""
    return _entries().get(code.strip().upper())


# -- P1xx: policy language -------------------------------------------------------------------

SYNTAX_ERROR = entry(
    "P100", "syntax error",
    explanation="The policy file cannot be parsed: an unexpected character or word, a block that is not "
                "closed, or a NUL byte. Every syntax error of a file is reported in one run, each at its "
                "place with the words that could come there.\n\n"
                "Fix the line shown: every rule is one line inside a `section { ... }` block, and every block "
                "is closed with `}`.",
    example='filesystem {\n    read /usr\n')
UNKNOWN_ESCAPE = entry(
    "P101", "unknown escape in a string",
    explanation="A quoted string holds a backslash escape the language does not know. Strings know `\\\"`, "
                "`\\\\`, `\\n`, `\\t` and `\\r`; anything else is refused rather than guessed.\n\n"
                "Write the character itself, or double the backslash to mean a backslash.",
    example='filesystem {\n    deny "~/\\.ssh"\n}\n')
UNKNOWN_SECTION = entry(
    "P102", "unknown section",
    explanation="A block starts with a name that is not a section. Sections are `filesystem`, `network`, "
                "`environment`, `limits`, `commands` and `test \"name\"`.\n\n"
                "Correct the spelling (the hint suggests the closest section).",
    example="filesystm {\n    read /usr\n}\n")
DUPLICATE_HEADER = entry(
    "P103", "header given twice",
    explanation="The policy header says `policy \"name\"` or `enforced` more than once. A file has one name "
                "and is either enforced or not.\n\n"
                "Remove the repeated line.",
    example='policy "a"\npolicy "b"\n')
EMPTY_VALUE = entry(
    "P104", "empty value",
    explanation="Something that needs text is empty: the policy name, an include path, a path, a word of a "
                "command pattern, the reason after `because`, the command of a test case, or the name of a "
                "`test` block. An empty value never means \"anything\" or \"nothing\": it is refused.\n\n"
                "Write the value, or remove the line.",
    example='filesystem {\n    read ""\n}\n')
BLOCK_TAKES_NO_NAME = entry(
    "P105", "section takes no name",
    explanation="Only `test` blocks have a name (`test \"pushes\" {`); the other sections are written "
                "without one.\n\n"
                "Remove the name after the section keyword.",
    example='filesystem "home" {\n    read /usr\n}\n')
MISPLACED_MODIFIER = entry(
    "P106", "modifier not allowed here",
    explanation="`because \"reason\"` explains a command rule and is allowed only on `allow`, `confirm` and "
                "`deny` rules in `commands` (not on `unknown-effects`/`unparsable`); `locked` has no meaning "
                "in a `test` block.\n\n"
                "Remove the modifier, or move the rule to the section where it applies.",
    example='filesystem {\n    deny ~/.ssh because "secrets"\n}\n')
UNKNOWN_KEYWORD = entry(
    "P107", "unknown keyword in a section",
    explanation="A rule starts with a word its section does not know. `filesystem` takes `read`, `write`, "
                "`readonly`, `deny`; `network` takes `default`, `allow`, `deny`; `environment` takes `keep`, "
                "`drop`, `set`; `limits` takes the limit names; `commands` takes `allow`, `confirm`, `deny`, "
                "`unknown-effects`, `unparsable`; `test` takes `allow`, `confirm`, `deny`.\n\n"
                "Correct the spelling (the hint suggests the closest keyword) or move the rule to its section.",
    example="filesystem {\n    wrte /tmp\n}\n")
UNEXPECTED_COMMA = entry(
    "P108", "unexpected comma",
    explanation="Commas separate the argv patterns of a command rule (`deny sudo, su`); elsewhere values are "
                "separated by spaces.\n\n"
                "Replace the comma by a space.",
    example="filesystem {\n    read /usr, /bin\n}\n")
BAD_ARGUMENTS = entry(
    "P109", "wrong values for a keyword",
    explanation="A keyword got the wrong number or kind of values: no value at all, several where it takes "
                "one (a limit, a test command), `default` other than `allow`/`deny`, a verdict setting "
                "other than `allow`/`confirm`/`deny`, `set` without `NAME=value`, an empty command pattern "
                "between commas, or a test case that is not one quoted command.\n\n"
                "Write the values the message names.",
    example="network {\n    default maybe\n}\n")
BAD_NUMBER = entry(
    "P110", "not a number",
    explanation="A limit's value is not a number with a unit (`10m`, `4GiB`) or, for `processes`, not a "
                "whole number greater than zero.\n\n"
                "Write a number followed by its unit, e.g. `timeout 10m`, `memory 4GiB`, `processes 512`.",
    example="limits {\n    timeout soon\n}\n")
UNKNOWN_UNIT = entry(
    "P111", "unknown unit",
    explanation="A duration or size has a unit Stockade does not know. Durations take `ms`, `s`, `m`, `h`, "
                "`d` (a bare number is seconds); sizes take `B`, `KB`/`MB`/`GB`/`TB` (powers of 1000) and "
                "`KiB`/`MiB`/`GiB`/`TiB` (powers of 1024). Units are case-sensitive: `Gb` is refused rather "
                "than read as bits or bytes.\n\n"
                "Use one of the units listed (the hint suggests the closest).",
    example="limits {\n    memory 4Gb\n}\n")
VALUE_TOO_SMALL = entry(
    "P112", "value too small",
    explanation="A duration is zero, or a size is less than one byte. A zero limit would stop every "
                "command, which is never what a policy means.\n\n"
                "Give a positive value, or remove the limit.",
    example="limits {\n    timeout 0s\n}\n")
BAD_HOST = entry(
    "P120", "bad host or address",
    explanation="A network destination is not a host name, `*.domain`, `localhost`, an IP address or a "
                "`[IPv6]:port`: a label with characters other than letters, digits and `-`, a name longer "
                "than 253 characters, a wildcard that does not lead a domain, an unclosed `[`, or a "
                "malformed address.\n\n"
                "Write the destination in one of the forms of the `network` section (see the README).",
    example="network {\n    allow git*.com\n}\n")
BAD_PORT = entry(
    "P121", "bad port",
    explanation="The port after `host:` is not a number from 1 to 65535.\n\n"
                "Correct the port, or leave it out to mean every port.",
    example="network {\n    allow github.com:99999\n}\n")
BAD_CIDR = entry(
    "P122", "bad CIDR",
    explanation="An address range is not a valid CIDR, or it has host bits set (`10.0.0.1/8`), which would "
                "make the range it means ambiguous.\n\n"
                "Write the network address of the range (the hint gives it, e.g. `10.0.0.0/8`).",
    example="network {\n    allow 10.0.0.1/8\n}\n")
BAD_VARIABLE_NAME = entry(
    "P130", "bad environment variable name",
    explanation="An `environment` rule names something that is not a variable: names are letters, digits "
                "and `_`; `keep` and `drop` also take `*` and `?` as wildcards, `set` does not.\n\n"
                "Correct the name.",
    example="environment {\n    set MY-VAR=1\n}\n")
GRAMMAR_UNAVAILABLE = entry(
    "P199", "policy grammar cannot be built",
    explanation="An internal error: the policy grammar could not be loaded, so no policy can be read. This "
                "points at a broken installation (a missing or incompatible `lark`), not at the policy.\n\n"
                "Reinstall stockade with its dependencies (`pip install stockade`).")

# -- C2xx: compiler --------------------------------------------------------------------------

UNDEFINED_VARIABLE = entry(
    "C201", "undefined variable",
    explanation="A path uses a `$VARIABLE` that is neither a context variable (`$WORKSPACE`, `$HOME`, "
                "`$TMPDIR`) nor set in the environment the policy is compiled in. An undefined variable is "
                "an error, never an empty string: `$MISSING/.ssh` must not silently become `/.ssh`.\n\n"
                "Define the variable when compiling, or write the path without it.",
    example="filesystem {\n    read $NO_SUCH_VARIABLE_HERE/data\n}\n")
POLICY_NOT_FOUND = entry(
    "C202", "policy file not found",
    explanation="A policy file (named on the command line or by an `include`) does not exist or is a "
                "directory, or there is no policy to compile at all. Include paths are relative to the "
                "including file.\n\n"
                "Correct the path.",
    example='include "missing.policy"\n')
INCLUDE_CYCLE = entry(
    "C203", "include cycle",
    explanation="A policy includes itself, directly or through other files, or includes are nested deeper "
                "than the compiler allows. Layers form a stack, so a cycle has no order.\n\n"
                "Remove the `include` that closes the cycle (the notes show each step).",
    example='include "example.policy"\n')
UNREADABLE_POLICY = entry(
    "C204", "policy file cannot be read",
    explanation="A policy file exists but cannot be read: it is not UTF-8 text, or the system refused to "
                "read it (permissions, an I/O error). `stockade run` reports it when it loads the policy.\n\n"
                "Fix the file's encoding or permissions.",
    example="$ printf 'policy \"x\"\\n\\377\\n' > bad.policy\n$ stockade check bad.policy",
    example_kind="shell")
UNSUPPORTED_TILDE = entry(
    "C205", "`~user` paths are not supported",
    explanation="Only `~` (the home directory of the compile context) may start a path; `~alice` would "
                "depend on the machine's user database.\n\n"
                "Write the path in full, or use `~` / `$HOME`.",
    example="filesystem {\n    read ~root/notes\n}\n")
WILDCARD_IN_VARIABLE = entry(
    "C206", "a variable's value holds glob characters inside a glob",
    explanation="A `*`, `?` or `[` that comes from a variable (`$WORKSPACE`, `$HOME`, `~`, an environment "
                "variable) is part of a name, never a wildcard: `write $WORKSPACE` on a workspace named "
                "`p*` grants that one directory, not every `p…` beside it.  A path whose written text has "
                "wildcards of its own and whose variables hold such characters cannot say which is which "
                "(globs have no escape), so it is refused.\n\n"
                "Rename the directory, or write the rule without the variable.",
    example=None)
DUPLICATE_RULE = entry(
    "C210", "duplicate rule",
    explanation="A warning: the same rule, or the same setting with the same value, is given twice in one "
                "layer. It changes nothing, but usually hides a copy-and-paste mistake.\n\n"
                "Remove one of them.",
    example="filesystem {\n    read /usr\n    read /usr\n}\n")
CONFLICTING_RULES = entry(
    "C211", "conflicting rules",
    explanation="Two rules of one layer say different things about the same path, destination, variable or "
                "command pattern (`read /x` and `deny /x`), or a setting is given twice with different "
                "values. Within a layer nothing decides which one you meant, so it is an error (across "
                "layers, the higher layer applies).\n\n"
                "Keep the rule you mean.",
    example="filesystem {\n    read /opt\n    deny /opt\n}\n")
RULES_MEET = entry(
    "C212", "rules meet once variables are resolved",
    explanation="A warning: two filesystem rules written differently (`$WORKSPACE/build` and `build`) name "
                "the same path once variables and relative paths are resolved, with different access. The "
                "stricter one applies.\n\n"
                "Write one rule, or check that the variables mean what you expect.",
    example="filesystem {\n    read $WORKSPACE/build\n    deny build\n}\n")
EMPTY_ALTERNATIVE = entry(
    "C213", "empty alternative in a command pattern",
    explanation="A `|` choice in a command pattern has an empty side (`push|`), which would match a missing "
                "word.\n\n"
                "Write every alternative, e.g. `git push|pull`.",
    example="commands {\n    deny git push|\n}\n")
LOOSENS_LOCKED_RULE = entry(
    "C220", "loosens a locked rule",
    explanation="A higher layer tries to grant more than a `locked` rule (or any rule of an `enforced` file) "
                "of a lower layer allows: more access on or below a locked path, `default allow` over a "
                "locked `default deny`, a destination the lower layer denies, keeping a variable a locked "
                "`drop` removes, a higher limit, or a milder verdict. Layers only tighten.\n\n"
                "Remove the loosening rule, or ask the owner of the lower layer to change it.",
    example='# base.policy\nfilesystem {\n    locked deny ~/.ssh\n}\n\n'
            '# team.policy\ninclude "base.policy"\nfilesystem {\n    read ~/.ssh/known_hosts\n}\n',
    example_kind="text")
BAD_TEST_SUITE = entry(
    "C230", "bad test suite",
    explanation="A YAML test suite given to `stockade test` cannot be used: it cannot be read, is not valid "
                "YAML, is not a list of cases (or a mapping with `tests:`), or a case lacks `command`, has an "
                "`expect` other than `allow`/`confirm`/`deny`, or has an unknown field.\n\n"
                "Each case is a mapping with `command`, `expect` and optionally `name`.",
    example="# suite.yaml\n- command: git status\n  expect: maybe\n", example_kind="text")
GIT_FILE_THROUGH_WRITABLE_SYMLINK = entry(
    "C240", "git file reached through a writable symlink",
    explanation="A warning: protecting a repository's git config or hooks makes the compiler read the files "
                "git reads as configuration, but one of them is reached through a symlink in a path the "
                "sandbox may write. Such a symlink is not followed (the agent could have planted it), so "
                "what it points to is not protected.\n\n"
                "Protect the repository's real git directory, or replace the symlink by the directory it "
                "names.")
DISK_LIMIT_DISCARDS_WRITES = entry(
    "C245", "writes under the `disk` limit do not persist",
    explanation="A warning for every writable path outside the workspace when the policy sets `limits { disk "
                "... }`: under that limit, `stockade run` writes those paths into a private size-limited "
                "layer that is discarded after the run. A writable `/` cannot be combined with `disk` at "
                "all (the run is refused, R545).\n\n"
                "Write what must persist into the workspace, or remove the `disk` limit.",
    example="filesystem {\n    write /tmp\n}\nlimits {\n    disk 1GiB\n}\n")
UNREACHABLE_COMMAND_RULE = entry(
    "C250", "command rule that never decides",
    explanation="A warning: every command this rule matches is also matched by a stricter rule, and the "
                "strictest matching rule wins, so this rule never decides anything (say `allow git status` "
                "under `deny git`). The warning names the rule that decides instead.\n\n"
                "Remove the rule, or narrow the stricter one (`deny git push` instead of `deny git`).",
    example="commands {\n    deny  git\n    allow git status\n}\n")
REOPENED_TREE = entry(
    "C251", "grant re-opens part of a denied tree",
    explanation="A warning: a `read` or `write` rule lies inside a tree that a `deny` (or, for `write`, a "
                "`readonly`) rule protects. The most specific path wins, so the grant holds for its own "
                "path: `read ~/.aws/credentials` under `deny ~/.aws` makes the credentials readable. The "
                "warning says which access the path gets, in case that was not meant.\n\n"
                "Remove the grant if the whole tree should stay protected; keep it if the exception is meant.",
    example="filesystem {\n    read /\n    deny ~/.aws\n    read ~/.aws/credentials\n}\n")
INCLUDED_TESTS_NOT_RUN = entry(
    "C252", "tests of an included layer are not run",
    explanation="A warning: an included file has `test` blocks, and checking or testing the including "
                "policy runs only its own tests (an included layer's expectations may not hold once higher "
                "layers tighten it).\n\n"
                "Run them on their own: `stockade test base.policy`.",
    example="$ printf 'test \"t\" {\\n  allow \"true\"\\n}\\n' > base.policy\n"
            "$ printf 'include \"base.policy\"\\n' > top.policy\n$ stockade check top.policy",
    example_kind="shell")

UNTRUSTED_POLICY_FILE = entry(
    "C290", "discovered policy file refused",
    explanation="With no policy named, Stockade looks for `.stockade/policy` or `stockade.policy` from the "
                "current directory upwards (to the repository's top or the home directory), then for "
                "`$XDG_CONFIG_HOME/stockade/policy`. A file found there that is a symbolic link, not a "
                "regular file, owned by another user, or writable by others than its owner could have been "
                "planted by someone else, so it is refused — never used, and never silently skipped for a "
                "weaker one.\n\n"
                "Name the policy explicitly with `--policy FILE`, or fix the file (`chmod go-w FILE`).",
    example="$ cp examples/coding-agent.policy stockade.policy && chmod o+w stockade.policy && stockade check", example_kind="shell")

# -- B3xx: backends --------------------------------------------------------------------------

UNKNOWN_TARGET = entry(
    "B300", "unknown target",
    explanation="`stockade compile --target`, `stockade export --to`, `stockade import --from` (or the "
                "library) names a target that does not exist, or a target of the other kind (an export "
                "target given to `compile`).\n\n"
                "Use one of the targets listed in the hint (`stockade compile --target ir` prints the "
                "compiled policy itself).",
    example="$ stockade compile examples/coding-agent.policy --target nonsense", example_kind="shell")
APPROXIMATED_RULE = entry(
    "B301", "rule approximated more strictly",
    explanation="A warning: the target cannot express a rule exactly, so it enforces something stricter "
                "(never looser). Typically network allow-lists where the artifact is used without "
                "`stockade run`'s network broker: bubblewrap cannot filter by host, so a policy that allows "
                "some hosts gets no network at all; `allow localhost` reaches only the sandbox's own "
                "loopback.\n\n"
                "Accept the stricter behaviour, or run the command with `stockade run`, which enforces host "
                "rules through its broker.",
    example="$ printf 'network {\\n    allow github.com\\n}\\n' > example.policy\n"
            "$ stockade compile example.policy --target bwrap --workspace .",
    example_kind="shell")
UNSUPPORTED_RULE = entry(
    "B302", "rule cannot be expressed by the target",
    explanation="The target has no safe approximation of a rule (or of a whole IR construct), so compiling "
                "fails, listing every such rule. Stockade never drops a rule silently.\n\n"
                "Remove the rule for this target (a layer for the platform), or compile for another target.")
MISSING_PATH = entry(
    "B303", "path missing or unreachable in the sandbox",
    explanation="A warning from bubblewrap: a path the policy names does not exist or cannot be reached as "
                "written. A protected path that does not exist yet is covered by an empty read-only "
                "placeholder at its first missing component (stricter than the policy); a writable path "
                "whose parent is not writable cannot be created inside the sandbox; a missing read-only git "
                "file is mounted as a file git reads as missing; a workspace that is not readable makes the "
                "sandbox start in `/`.\n\n"
                "Create the path before the run, or adjust the rule.",
    example="$ printf 'filesystem {\\n    read /\\n    write /no/such/dir\\n}\\n' > example.policy\n"
            "$ stockade compile example.policy --target bwrap --workspace .",
    example_kind="shell")
GLOB_ENFORCED_ON_MATCHES = entry(
    "B304", "glob enforced on existing matches only",
    explanation="Bubblewrap mounts paths, not patterns: a glob rule (`deny \"**/.env*\"`) is enforced on the "
                "matches that exist when the plan is made (`stockade run` rescans the workspace and writable "
                "roots at every start); matches created later elsewhere are protected only by the analyzer. "
                "A directory that cannot be listed is hidden. When a glob's walk exceeds the "
                "`glob_walk_limit` option, compiling fails instead (never a silent gap).\n\n"
                "Prefer literal paths for secrets, or narrow the glob (`$WORKSPACE/**/.env*`).",
    example="$ printf 'filesystem {\\n    read /\\n    deny \"**/.env*\"\\n}\\n' > example.policy\n"
            "$ stockade compile example.policy --target bwrap --workspace .",
    example_kind="shell")
BAD_WORKSPACE = entry(
    "B305", "workspace missing or invalid",
    explanation="The workspace given to the bubblewrap backend does not exist, is not a directory, or is not "
                "a usable path. A sandbox cannot be rooted in a directory that is not there.\n\n"
                "Create it, or pass an existing directory with `--workspace`.",
    example="$ stockade compile examples/coding-agent.policy --target bwrap --workspace /no/such/dir",
    example_kind="shell")
UNREPRESENTABLE_VALUE = entry(
    "B306", "path or variable bubblewrap cannot pass",
    explanation="A filesystem path or an environment variable cannot be written into a bubblewrap command "
                "line (an invalid variable name, a NUL byte, a path bubblewrap cannot mount). Compiling "
                "fails rather than dropping the rule.\n\n"
                "Correct the path or variable.")
SYMLINK_STRICTER_ACCESS = entry(
    "B307", "symlink resolves to a path with stricter access",
    explanation="A warning: a path the policy names is a symlink whose target the policy gives less access. "
                "Bubblewrap mounts real paths, so the stricter access applies to both.\n\n"
                "Name the real path in the policy, or grant the access on the target too.")
START_PATH_UNREADABLE = entry(
    "B308", "system path unreadable in the sandbox",
    explanation="A warning: a path programs need to start (such as `/usr`, `/lib`, `/bin`) is not readable "
                "under the policy, so commands may fail to start in the sandbox's minimal root.\n\n"
                "Grant `read` on the system paths.",
    example="$ printf 'filesystem {\\n    write $WORKSPACE\\n}\\n' > example.policy\n"
            "$ stockade compile example.policy --target bwrap --workspace .",
    example_kind="shell")
NO_SECCOMP_FILTER = entry(
    "B309", "no seccomp filter for this architecture",
    explanation="Stockade's seccomp filter (which refuses host unix sockets, setuid/setgid modes and keyring "
                "calls) exists only for some CPU architectures. Without it the sandbox cannot block host "
                "unix sockets, so a policy that unshares the network is refused (an error); with all network "
                "allowed it is a warning that setuid files and keyrings stay reachable.\n\n"
                "Run on a supported architecture, or allow all network (`network { default allow }`).")
KERNEL_OR_CONTEXT_PATH = entry(
    "B310", "kernel interface or unusable context path",
    explanation="Two cases. A warning from bubblewrap: a kernel interface (`/proc/sys`, `/sys` and the like) "
                "stays read-only or hidden inside the sandbox although the policy makes it writable, since "
                "writing it would change the host. An error from Seatbelt or Windows: a context path "
                "(workspace, home, temporary directory) cannot be used on that platform, e.g. not a Windows "
                "path or without a drive letter.\n\n"
                "For the warning, nothing to do (or stop granting write on `/`); for the error, pass context "
                "paths of the target platform (`--platform windows --workspace C:\\\\Users\\\\me\\\\project`).",
    example="$ stockade compile examples/coding-agent.policy --target windows --workspace /home/me/app",
    example_kind="shell")
UNUSABLE_PATH = entry(
    "B311", "path the target cannot express",
    explanation="A filesystem path (or a context path) cannot be written for this target: on Windows a path "
                "with `..`, a stream, a device name or not on a local drive; on Seatbelt a path its profile "
                "language cannot hold. Compiling fails rather than dropping the rule.\n\n"
                "Write a plain absolute path of the target platform.")
PATH_RULE_APPROXIMATED = entry(
    "B312", "path rule approximated on this platform",
    explanation="A warning: Seatbelt cannot compare how deep two glob rules match beyond the deepest rule, "
                "so where both may match, the rule granting less access applies; Windows skips a POSIX path "
                "(`/etc/...`), which has no meaning there.\n\n"
                "Put platform-specific paths in a layer for that platform, or accept the stricter reading.",
    example="$ printf 'filesystem {\\n    read /etc\\n}\\nnetwork {\\n    allow localhost\\n}\\n' > example.policy\n"
            "$ stockade compile example.policy --target windows --platform windows --workspace 'C:\\w' --home 'C:\\h'",
    example_kind="shell")
SEATBELT_START_OR_WINDOWS_GLOB = entry(
    "B313", "no process can start, or glob on existing matches",
    explanation="Two cases. Seatbelt warns that no process can start under the profile because a system path "
                "is not readable. Windows applies a glob rule as ACEs on the matches existing when the plan "
                "is applied; that is an error unless compiled with the option `globs=existing`, and then a "
                "warning that later matches are not covered.\n\n"
                "Grant `read` on system paths (`read /usr /System /bin /Library`); on Windows list secrets as "
                "literal paths.",
    example="$ printf 'filesystem {\\n    read /usr\\n}\\n' > example.policy\n"
            "$ stockade compile example.policy --target seatbelt --platform darwin --workspace /Users/me/app"
            " --home /Users/me",
    example_kind="shell")
LOOPBACK_DENY_UNENFORCEABLE = entry(
    "B314", "denying localhost cannot be enforced",
    explanation="The policy denies localhost, but Windows firewall rules do not filter loopback traffic, so "
                "a confined process could still reach local services. Compiling fails unless the option "
                "`loopback=accept` accepts the gap (then it is a warning).\n\n"
                "Add `allow localhost` to the network block, or compile with `loopback=accept`.",
    example="$ printf 'network {\\n    deny localhost\\n}\\n' > example.policy\n"
            "$ stockade compile example.policy --target windows --platform windows --workspace 'C:\\w' --home 'C:\\h'",
    example_kind="shell")
ALL_DRIVES_ROOT = entry(
    "B315", "rule on the root applied to the known drives",
    explanation="A warning from the Windows target: a rule on `/` covers the root of every drive, but the plan "
                "can only apply it to the drives it knows; other drives stay inaccessible.\n\n"
                "Name the drives the command needs.",
    example="$ printf 'filesystem {\\n    read /\\n}\\nnetwork {\\n    allow localhost\\n}\\n' > example.policy\n"
            "$ stockade compile example.policy --target windows --platform windows --workspace 'C:\\w' --home 'C:\\h'",
    example_kind="shell")
ROOT_KEEPS_SOCKETS_REFUSED = entry(
    "B316", "running as root: host unix sockets stay refused",
    explanation="A warning: the policy allows all network, but stockade runs as root, and host unix sockets "
                "such as `/run/docker.sock` trust uid 0, which is host root inside the sandbox too. The "
                "seccomp filter keeps refusing them. (bubblewrap sandboxes now always have a network "
                "namespace of their own, served by the network broker, so their seccomp filter refuses host "
                "unix sockets for every user and this warning is not raised for them.)\n\n"
                "Nothing to change: host unix sockets are not reachable from a sandbox.")
UNSUPPORTED_LIMIT = entry(
    "B320", "limit the target cannot enforce",
    explanation="A limit of the policy has no enforcement on this target: `disk` is enforced only by "
                "`stockade run` with bubblewrap on Linux, and the Windows plan limits neither the size of "
                "one file (`filesize`) nor `disk`. Compiling fails rather than pretending.\n\n"
                "Remove the limit for this target (a layer for the platform).",
    example="$ printf 'limits {\\n    disk 1GiB\\n}\\n' > disk.policy\n"
            "$ stockade compile disk.policy --target seatbelt",
    example_kind="shell")

RUNTIME_SECTION = entry(
    "B321", "section enforced by `stockade run`, not by the artifact",
    explanation="A warning: the compiled artifact does not encode this section of the policy (for example "
                "`limits` in a bubblewrap argv, or `environment` in a Seatbelt profile); `stockade run` "
                "enforces it when it runs a command under the artifact, and `stockade hook` judges "
                "commands. Running the artifact by hand enforces less than the policy. The same goes for "
                "each host rule of a Seatbelt profile or a Windows plan: the network broker `stockade run` "
                "starts enforces it, and the artifact alone reaches loopback only.\n\n"
                "Run commands through `stockade run`, or remove the section's rules for this target.",
    example="$ printf 'limits {\\n    timeout 1m\\n}\\n' > limits.policy\n"
            "$ stockade compile limits.policy --target bwrap",
    example_kind="shell")

NETWORK_NOT_ENFORCED = entry(
    "B330", "network rule not enforced on this platform",
    explanation="A warning from `stockade check` and `stockade run`: the policy allows destinations beyond "
                "the sandbox's loopback (a host, a domain, an address range, or `default allow`), which "
                "`stockade run` enforces through its network broker, and no broker can run here. Each such "
                "rule is enforced stricter: the sandbox reaches loopback only, and the named destinations "
                "are blocked. Nothing is allowed that the policy denies.\n\n"
                "Run on a platform where the broker runs (Linux with bubblewrap, macOS), or accept that "
                "the listed destinations are unreachable.",
    example="$ stockade check net.policy      # network { allow github.com:443 }, where no broker runs\n"
            "net.policy:2:11: warning[B330]: `allow github.com:443` cannot be enforced on win32: no network "
            "broker, so it is blocked (stricter than the policy)",
    example_kind="text")

# -- A4xx: analyzer verdict reasons ----------------------------------------------------------

UNPARSABLE_COMMAND = entry(
    "A400", "command cannot be parsed",
    explanation="The analyzer cannot parse the command reliably (a syntax error, constructs it does not "
                "model), so it cannot know what the command does. The verdict is the policy's `unparsable` "
                "setting (default `deny`).\n\n"
                "Rewrite the command plainly, or set `unparsable confirm` in `commands`.",
    example="$ stockade analyze -- 'echo $('", example_kind="shell")
COMMAND_RULE = entry(
    "A401", "command rule matched",
    explanation="A `commands` rule matched the command (an argv prefix, flags normalised), and its verdict "
                "(`confirm` or `deny`) applies, with its `because` reason. The strictest matching rule wins.\n\n"
                "Run another command, or change the rule.",
    example="$ stockade analyze --policy examples/coding-agent.policy -- git push --force origin main",
    example_kind="shell")
DENIED_READ = entry(
    "A402", "read denied",
    explanation="The command reads a path the policy gives no access (or, when it reads recursively, a "
                "directory with denied paths below it). It is denied before it runs; in the sandbox it "
                "would fail anyway.\n\n"
                "Do not read the path, or grant `read` on it.",
    example="$ stockade analyze --policy examples/coding-agent.policy -- cat ~/.ssh/id_rsa", example_kind="shell")
DENIED_WRITE = entry(
    "A403", "write denied",
    explanation="The command writes, creates, deletes or renames a path the policy does not let it write (or "
                "works recursively on a directory with protected paths below it).\n\n"
                "Write inside the writable paths (the workspace, `$TMPDIR`), or grant `write`.",
    example="$ stockade analyze --policy examples/coding-agent.policy -- rm -rf /usr", example_kind="shell")
DENIED_NETWORK = entry(
    "A404", "network destination denied",
    explanation="The command contacts a host (`curl`, `git clone`, `pip install` ...) the network policy does "
                "not allow.\n\n"
                "Use an allowed destination, or add `allow HOST` to `network`.",
    example="$ stockade analyze --policy examples/coding-agent.policy -- curl https://example.com",
    example_kind="shell")
PERSISTENCE = entry(
    "A405", "persistence",
    explanation="The command installs something that runs later, outside the agent's session: it writes a "
                "shell start-up file (`~/.bashrc` ...), an autostart or systemd unit, a cron table, or "
                "installs a service. Always denied: persistence outlives the sandbox.\n\n"
                "Do not install persistent code from an agent; do it yourself, by hand.",
    example="$ stockade analyze -- crontab jobs.txt", example_kind="shell")
PRIVILEGE_ESCALATION = entry(
    "A406", "privilege escalation",
    explanation="The command tries to gain privileges: `sudo`, `su`, `doas`, changing file ownership, "
                "setting the setuid/setgid bit, changing system services. Always denied.\n\n"
                "Run the privileged step yourself, outside the agent.",
    example="$ stockade analyze -- chmod u+s tool", example_kind="shell")
UNKNOWN_EFFECTS = entry(
    "A410", "unknown effects",
    explanation="The analyzer cannot see what part of the command does: dynamic code (`eval \"$x\"`, "
                "`bash -c \"$cmd\"`, `curl ... | sh`, inline interpreter code), a path computed at run time, "
                "or a link whose target is denied. The verdict is the policy's `unknown-effects` setting "
                "(default `confirm`).\n\n"
                "Write the command so its effects are visible, or set `unknown-effects` in `commands`.",
    example="$ stockade analyze -- 'eval \"$CMD\"'", example_kind="shell")
MALFORMED_BATCH_LINE = entry(
    "A498", "malformed batch input line",
    explanation="`stockade analyze --batch` reads one JSON object per line; this line could not be read (not "
                "JSON, or a missing field). It is answered with `deny` and the batch goes on.\n\n"
                "Send one JSON object per line, as described in the README.",
    example="$ echo 'not json' | stockade analyze --batch", example_kind="shell")
ANALYZER_INTERNAL_ERROR = entry(
    "A499", "internal analyzer error",
    explanation="The analyzer failed on this command (a bug). It fails closed: the verdict is the policy's "
                "`unparsable` setting (default `deny`), and `deny` if that setting is `allow`: never "
                "`allow`.\n\n"
                "Report the command and the message as a bug.")

# -- R5xx: runtime ---------------------------------------------------------------------------

BWRAP_MISSING = entry(
    "R501", "bubblewrap not installed",
    explanation="`stockade run` confines commands with bubblewrap on Linux, and `bwrap` is not on `PATH`. "
                "Stockade refuses to run a command unconfined.\n\n"
                "Install bubblewrap (`apt install bubblewrap`, `dnf install bubblewrap`).")
USER_NAMESPACES_UNAVAILABLE = entry(
    "R502", "user namespaces unavailable",
    explanation="The kernel does not let unprivileged processes create user namespaces (disabled by a sysctl "
                "or an AppArmor restriction), so bubblewrap cannot build a sandbox.\n\n"
                "Enable unprivileged user namespaces as the hint describes, or run where they are allowed.")
BWRAP_CANNOT_SANDBOX = entry(
    "R503", "bubblewrap cannot build a sandbox",
    explanation="A probe run of bubblewrap failed: it cannot be executed, or it cannot create a sandbox on "
                "this machine (often a container without the needed privileges). Its last error line is "
                "shown.\n\n"
                "Follow the hint (namespaces, container options), then run again.")
SANDBOX_EXEC_MISSING = entry(
    "R504", "sandbox-exec missing",
    explanation="On macOS, `stockade run` confines commands with `/usr/bin/sandbox-exec`, which is missing. "
                "Stockade refuses to run a command unconfined.\n\n"
                "Check the macOS installation (sandbox-exec ships with the system).")
PLATFORM_UNSUPPORTED = entry(
    "R505", "no sandbox on this platform",
    explanation="`stockade run` can confine commands only on Linux (bubblewrap) and macOS (Seatbelt) so "
                "far; it refuses to run unconfined elsewhere.\n\n"
                "Use `stockade compile --target windows` to produce a plan and apply it with your own tooling.")
SANDBOX_START_FAILED = entry(
    "R506", "sandbox tool cannot be started",
    explanation="The sandbox tool could not be executed (missing, not executable, or the system refused to "
                "start it). The command did not run.\n\n"
                "Check that the sandbox tool is installed and executable.")
SANDBOX_SETUP_FAILED = entry(
    "R507", "sandbox could not be set up",
    explanation="Bubblewrap started but failed while building the sandbox (for example a path the plan "
                "mounts was removed or replaced meanwhile); the command did not run. Its last error line is "
                "shown.\n\n"
                "Run again (`--no-cache` recompiles the plan for the current files).")
BROKER_UNREACHABLE = entry(
    "R508", "network broker cannot listen inside the sandbox",
    explanation="For a policy that allows some destinations, `stockade run` opens the network broker's "
                "listening sockets inside the sandbox's own network namespace from the host, after "
                "bubblewrap has made the sandbox and before the command starts (see docs/network.md). "
                "A step of that failed — bubblewrap did not report its sandbox, the sandbox's process was "
                "gone, its namespaces could not be entered (a kernel before Linux 4.9 has no "
                "`NS_GET_USERNS`), or a socket could not be opened there — so the command did not run: it "
                "never runs without the broker's rules.\n\n"
                "The message names the step. Run again; on an old kernel, a policy without network rules "
                "(`default deny` and no `allow`) runs with no network at all and needs no broker.")
ARTIFACT_REFUSED = entry(
    "R510", "sandbox artifact refused",
    explanation="The compiled artifact `stockade run` was asked to use is not trustworthy: a bubblewrap argv "
                "that does not end with `--`, a missing or malformed seccomp filter placeholder, a filter "
                "for another architecture, an empty Seatbelt profile or a bad profile parameter, or a cached "
                "plan compiled for another bubblewrap. It refuses rather than run with less confinement.\n\n"
                "Let `stockade run` compile the policy itself (`--no-cache` recompiles stale plans).")
BWRAP_UNTRUSTED = entry(
    "R512", "bubblewrap binary not trusted",
    explanation="The `bwrap` found on `PATH` could have been replaced by someone other than root: it, or one "
                "of its parent directories, is a symlink, writable by its group or others, or owned by "
                "a user other than root and the caller. A replaced bubblewrap would confine nothing.\n\n"
                "Use a bubblewrap installed by the system (`/usr/bin/bwrap`), owned by root, first on `PATH`, in "
                "a directory the policy does not let the sandbox write.")
SYMLINK_INPUT_UNTRUSTED = entry(
    "R513", "protected input reached through a writable symlink",
    explanation="A file the run depends on (the policy, a protected git file) is reached through a symlink "
                "in a path the policy lets the sandbox write: the agent could replace the symlink and change "
                "what a later run reads. The run is refused.\n\n"
                "Name the file by its real path, or move the symlink out of the writable paths.")
WORKSPACE_UNUSABLE = entry(
    "R520", "workspace missing or replaced",
    explanation="The workspace is not a directory, was replaced (by a symlink?) since the run started, or a "
                "preview's scratch directory would be inside it.\n\n"
                "Run in an existing directory; set `TMPDIR` outside the workspace for previews.")
OVERLAY_UNAVAILABLE = entry(
    "R521", "preview overlay unavailable",
    explanation="`stockade run --preview` needs a copy-on-write view of the workspace (unprivileged overlayfs "
                "in a user namespace, Linux 5.11+), and it cannot be mounted here.\n\n"
                "Run without `--preview` to let the command write the workspace directly.")
WORKSPACE_BUSY_OR_MISMATCH = entry(
    "R522", "workspace busy, or policy compiled for another workspace",
    explanation="Two cases: another stockade is applying a preview's changes to this workspace (the apply "
                "takes a lock), or a policy loaded through the library was compiled for another workspace "
                "than the one the run was given.\n\n"
                "Wait for the other apply to finish and run again; or load the policy with the workspace to "
                "run in.")
UNAPPLIABLE_ENTRY = entry(
    "R523", "change cannot be applied",
    explanation="A preview changed an entry that is not a file, directory or symlink (a device, a FIFO, a "
                "socket), which an apply does not copy into the workspace.\n\n"
                "Remove the entry in the command, or create it yourself.")
STATE_DIRECTORY_UNUSABLE = entry(
    "R524", "state directory unusable",
    explanation="Stockade's state directory (its cache directory) cannot hold a preview's scratch copy or an "
                "apply's journal: it cannot be created or written.\n\n"
                "Set `STOCKADE_CACHE_DIR` to a writable directory outside the workspace.")
APPLY_FAILED = entry(
    "R525", "apply failed",
    explanation="Applying a preview's changes failed (the workspace could not be opened, or a change could "
                "not be placed); what was placed is rolled back, so nothing was applied. If the roll back "
                "itself failed, the journal is kept and the next run retries it.\n\n"
                "Fix the cause shown, then run `stockade run -- true` in the workspace to finish a roll back.")
APPLY_CONFLICT = entry(
    "R526", "workspace changed since the preview",
    explanation="Paths the preview would change were also changed in the workspace since the preview "
                "started. Applying would overwrite those changes, so nothing was applied.\n\n"
                "Run the command again to preview it against the current files.")
AUDIT_WRITE_FAILED = entry(
    "R530", "audit file cannot be written",
    explanation="The audit trail cannot be opened or appended to. `stockade run` records its decision "
                "before the command starts, so a command whose decision cannot be recorded does not run.\n\n"
                "Pass a writable file with `--audit FILE` (or fix the default path's permissions).")
AUDIT_READ_FAILED = entry(
    "R531", "audit file cannot be read",
    explanation="`stockade audit` cannot open the audit file.\n\n"
                "Check the path and its permissions.",
    example="$ stockade audit /no/such/audit.jsonl", example_kind="shell")
RUN_LOCK_HELD = entry(
    "R540", "run lock held",
    explanation="Another process holds the workspace's run lock exclusively for longer than a run removing "
                "its placeholders ever does (milliseconds); the command did not run.\n\n"
                "Find the process holding the lock (`fuser PATH`) and let it finish.")
DISK_LIMIT_UNENFORCEABLE = entry(
    "R545", "`disk` limit cannot be enforced",
    explanation="The `disk` limit needs bubblewrap on Linux, tmpfs and overlayfs in a private mount "
                "namespace, and no writable `/`. When it cannot be set up (another platform, `/` writable, a "
                "writable root replaced by a symlink, the layer failed) the command does not run.\n\n"
                "Grant write on the workspace and the paths that need it rather than `/`, or remove the "
                "`disk` limit on this platform.")
GLOB_SCAN_INCOMPLETE = entry(
    "R550", "glob scan incomplete",
    explanation="Before each run, `stockade run` scans the workspace and writable roots for matches of the "
                "policy's glob rules so it can mask them. The scan exceeded its budget (entries, depth, CPU "
                "time, matches) or a scan root became a symlink, so some matches could stay unmasked: the "
                "run is refused.\n\n"
                "Remove what is not needed from the tree, narrow the glob (`$WORKSPACE/**/.env*`), or raise "
                "`STOCKADE_GLOB_SCAN_LIMIT`, `STOCKADE_GLOB_SCAN_SECONDS` or `STOCKADE_GLOB_MATCH_LIMIT`.")
ANALYZER_UNAVAILABLE = entry(
    "R560", "analyzer cannot be loaded",
    explanation="The analyzer (tree-sitter and its bash grammar) cannot be imported. Stockade refuses to judge "
                "commands with command rules alone.\n\n"
                "Reinstall stockade with its dependencies (`pip install stockade`).")

BAD_SESSION = entry(
    "R580", "bad session",
    explanation="The session id is not a valid name (1-128 letters, digits, `.`, `_` or `-`), or the "
                "session's state in Stockade's state directory cannot be read.\n\n"
                "Name sessions with letters, digits, `.`, `_` and `-`; remove an unreadable session's directory "
                "(`stockade session show ID` names it) to start it again.")
NO_SUCH_SESSION = entry(
    "R581", "no such session",
    explanation="No session of that id has state in Stockade's state directory (`$STOCKADE_STATE`, or "
                "`$XDG_STATE_HOME/stockade`).\n\n"
                "`stockade session list` shows the sessions there are.")
APPROVAL_REFUSED = entry(
    "R582", "approval cannot be stored",
    explanation="A `confirm` answer could not become a stored approval: the policy says `approvals never` "
                "(or `session` for a persisted one), the command matches a `never-persist` pattern, the "
                "command is not a `confirm` (a `deny` can never be approved), or no rule of a safe "
                "granularity names it (inline interpreter code, a multi-command tool without its "
                "subcommand).\n\n"
                "Approve the command once instead (`--approve` or `yes` at the prompt).")
REVERT_REFUSED = entry(
    "R583", "file not reverted",
    explanation="`stockade revert` restores the files a session changed to their state before the session. "
                "A file that was changed since by someone else (its content is not what the session left), "
                "that the session's journal could not keep (over the size budget), or that is now reached "
                "through a symlink is not touched, and is listed.\n\n"
                "Look at the listed files (`stockade session diff ID`) and restore them by hand if you want "
                "the session's version gone.")
WORKTREE_FAILED = entry(
    "R584", "session worktree failed",
    explanation="`stockade session start --worktree` or `stockade session end --merge|--discard` could not "
                "create, merge or remove the session's own worktree; the message says which step failed. Git "
                "runs inside a sandbox for these steps, never on the host directly.\n\n"
                "Merge the branch `stockade/ID` yourself, or remove the session's directory under "
                "`$STOCKADE_WORKTREES` (`~/.local/share/stockade/worktrees`).")

SESSION_RUN_REFUSED = entry(
    "R585", "run refused by its session",
    explanation="`stockade run --session ID` refuses the command before judging it: the session is stopped "
                "(it reached a limit of the policy's `session` section with `on-limit stop`), past "
                "`max-steps`, or ended.\n\n"
                "Look at what the session did (`stockade audit --session ID`), then run "
                "`stockade session resume ID`.")

# -- X6xx: integrations ----------------------------------------------------------------------

STRICT_EXPORT_REFUSED = entry(
    "X600", "export refused under `--strict`",
    explanation="`stockade export --strict` turns every export warning (X601: a rule the other tool cannot "
                "express exactly) into an error, so nothing is written.\n\n"
                "Drop `--strict` to accept the approximations, or remove the rules named.",
    example="$ stockade export examples/coding-agent.policy --to codex-rules --strict", example_kind="shell")
EXPORT_APPROXIMATED = entry(
    "X601", "rule the export target cannot express",
    explanation="A warning: the other tool's configuration has no place, or no exact form, for a rule (say "
                "filesystem rules in codex rules); the export names the rule and its line instead of "
                "dropping it silently.\n\n"
                "Enforce the rule another way (`stockade run`), or accept the gap.",
    example="$ stockade export examples/coding-agent.policy --to codex-rules", example_kind="shell")
EXPORT_LOOSER = entry(
    "X602", "export looser than the policy",
    explanation="The exported configuration would allow something the policy forbids: a path readable or "
                "writable, a host reachable, or a command allowed where the policy says no (say a target with "
                "no place for `deny` rules, which would leave `~/.ssh` readable). Stockade checks every export "
                "against the policy on probe paths, hosts and commands taken from its rules, and refuses a "
                "looser result; the message names the rule and a concrete probe.\n\n"
                "Export to a target that can express the rule, enforce the policy with `stockade run` or the "
                "hook instead, or pass `--allow-looser` to write the looser file knowingly (each looser "
                "probe is then a warning).",
    example="$ stockade export examples/coding-agent.policy --to cursor", example_kind="shell")
IMPORT_INVALID_JSON = entry(
    "X610", "import input is not valid JSON",
    explanation="`stockade import` expected a JSON file (srt, Claude Code or Cursor settings) and the input "
                "does not parse; the error is located in the input.\n\n"
                "Fix the JSON at the place shown.")
IMPORT_WRONG_TYPE = entry(
    "X611", "import entry has the wrong type",
    explanation="An entry of the imported file has the wrong JSON type: a list where an object is expected, "
                "a list entry that is not a string or path object, a flag that is not `true`/`false`.\n\n"
                "Fix the entry as the message says.")
IMPORT_BAD_VALUE = entry(
    "X612", "import entry has an invalid value",
    explanation="An entry of the imported file has a value the tool itself would not accept: an unknown "
                "sandbox type, a network default other than `allow`/`deny`, an invalid domain.\n\n"
                "Use one of the values the hint lists.")
IMPORT_INVALID_RULES_FILE = entry(
    "X613", "not a valid codex rules file",
    explanation="A codex `.rules` file is Starlark-like; this one does not parse.\n\n"
                "Fix the syntax at the place shown.")
IMPORT_UNKNOWN_CALL = entry(
    "X614", "unknown statement in a codex rules file",
    explanation="A codex rules file holds `prefix_rule(...)` calls; this statement is something else, or "
                "calls an unknown function.\n\n"
                "Remove the statement, or write it as `prefix_rule(...)`.")
IMPORT_BAD_PREFIX_RULE = entry(
    "X615", "malformed `prefix_rule`",
    explanation="A `prefix_rule(...)` call has positional arguments, an unknown argument, no `pattern`, a "
                "pattern that is not a non-empty list of strings (or lists of strings), a non-literal value, "
                "or a `justification` that is not a string.\n\n"
                "Write `prefix_rule(pattern=[\"git\", \"push\"], decision=\"forbidden\", justification=\"...\")`.")
IMPORT_UNKNOWN_DECISION = entry(
    "X616", "unknown codex decision",
    explanation="A `prefix_rule` has a `decision` codex does not know.\n\n"
                "Use `allow`, `prompt` or `forbidden`.")
IMPORT_BAD_PERMISSION_RULE = entry(
    "X617", "not a Claude Code permission rule",
    explanation="An entry of `permissions.allow`/`ask`/`deny` in Claude Code settings is not a permission "
                "rule.\n\n"
                "Rules look like `Bash(git push *)` or `Read(~/.ssh/**)`.")
IMPORT_UNREADABLE_INPUT = entry(
    "X618", "import input cannot be read",
    explanation="The file given to `stockade import` cannot be read, is larger than 16 MiB, or is not "
                "UTF-8.\n\n"
                "Check the path and the file's encoding.",
    example="$ stockade import /no/such/settings.json --from claude-settings", example_kind="shell")
IMPORT_RESULT_UNPARSABLE = entry(
    "X619", "imported policy does not parse",
    explanation="An internal error: the policy text an importer produced does not parse. The import is "
                "refused rather than writing a broken policy.\n\n"
                "Report the input file as a bug.")
IMPORT_RESULT_INVALID = entry(
    "X621", "imported policy does not compile",
    explanation="The policy an import would write does not compile: its rules conflict (say `deny` and "
                "`readonly` on the same path), or an entry became a path or value the language refuses (an "
                "undefined variable such as `$WORKSPACEknown_hosts`, a `~user` path). The import is refused "
                "rather than writing a policy that `stockade check` rejects; the compiler's diagnostics follow, "
                "located in the policy text the import produced.\n\n"
                "Fix the entries of the input file they name, or import and edit the rules by hand.",
    example="$ echo '{\"filesystem\": {\"denyRead\": [\"$WORKSPACEknown_hosts\"]}}' > settings.json\n"
            "$ stockade import --from srt settings.json", example_kind="shell")
IMPORT_ENTRY_DROPPED = entry(
    "X620", "import entry with no Stockade equivalent",
    explanation="A warning: an entry of the imported file has no Stockade equivalent (say codex "
                "`network_rule(...)`) and is not imported; the warning locates it in the input.\n\n"
                "Add the rule to the policy by hand if you need it.")
HOOK_ACCESS_DECISION = entry(
    "X630", "hook file or network decision",
    explanation="The reason a hook gives for a file access (a generic `{\"path\": ..., \"access\": "
                "\"read\"|\"write\"}` event, Claude Code's file tools) or a URL fetch (Claude Code's "
                "`WebFetch`): granted or denied by the policy's filesystem or network rules, naming the rule "
                "that decided (or the network default).\n\n"
                "For a deny, grant the access in `filesystem` or `network`, or leave the path or host alone.",
    example="$ echo '{\"path\": \"~/.ssh/id_rsa\", \"access\": \"read\"}' | stockade hook generic",
    example_kind="shell")
HOOK_MALFORMED_EVENT = entry(
    "X631", "malformed hook event",
    explanation="A hook event cannot be read: empty, too large, not JSON, nested too deeply, or without the "
                "fields of a command or file event. It is answered with `deny`.\n\n"
                "Send one JSON object such as `{\"command\": \"git status\"}`.",
    example="$ echo 'not json' | stockade hook generic", example_kind="shell")
HOOK_POLICY_NOT_LOADED = entry(
    "X632", "hook policy not loaded",
    explanation="The hook could not load its policy (missing, unreadable or with errors), so it answers every "
                "event with `deny`.\n\n"
                "Fix the policy (`stockade check POLICY`).",
    example="$ echo '{\"command\": \"ls\"}' | stockade hook generic --policy missing.policy", example_kind="shell")
HOOK_AUDIT_FAILED = entry(
    "X633", "hook audit trail not written",
    explanation="The hook could not append its decision to the audit file, so it answers `deny`: a decision "
                "that cannot be recorded is not given.\n\n"
                "Pass a writable `--audit FILE`.")
HOOK_INTERNAL_ERROR = entry(
    "X639", "internal hook error",
    explanation="The hook failed on this event (a bug). It fails closed: the answer is `deny`, never "
                "`allow`.\n\n"
                "Report the event and the message as a bug.")

SESSION_STOPPED = entry(
    "X640", "session stopped",
    explanation="The command belongs to an agent session that reached a limit of the policy's `session` "
                "section (`max-denials`, `max-steps`, `max-failures`) with `on-limit stop`, or that has "
                "ended. Every further command of the session is denied until a person resumes it.\n\n"
                "Look at what the session did (`stockade audit --session ID`), then run "
                "`stockade session resume ID`.")
SESSION_NEEDS_PERSON = entry(
    "X641", "session limit reached: a person decides",
    explanation="The session reached a limit of the policy's `session` section with `on-limit confirm`: "
                "commands the policy allows now need a person's confirmation, until the session is resumed "
                "(`stockade session resume ID`).\n\n"
                "Confirm each command, or look at the session (`stockade audit --session ID`) and resume it.")
READ_BEFORE_EDIT = entry(
    "X642", "edit of a file the session has not read",
    explanation="In an agent session, a file tool (`Write`, `Edit`, `MultiEdit`, `NotebookEdit`) may change "
                "an existing file only after the session read it, and only while its content is what was "
                "read: this stops blind overwrites and edits over a person's concurrent changes.\n\n"
                "Read the file (again) with the `Read` tool, then edit it.")
APPROVED = entry(
    "X643", "approved by a stored approval",
    explanation="A `confirm` verdict was turned into `allow` by an approval a person stored (`always`): "
                "the reason names the approval and where it is kept. Approvals never override `deny`.\n\n"
                "List them with `stockade approvals list`; remove one with `stockade approvals revoke`.")

# -- E0xx: command line ----------------------------------------------------------------------

USAGE_ERROR = entry(
    "E001", "usage error",
    explanation="The command line is valid for the argument parser but names something that does not exist "
                "(say `stockade explain` given a code that is not in the catalogue: the hint suggests the "
                "closest) or combines options that do not make sense together.\n\n"
                "Check `stockade COMMAND --help`; the README lists every diagnostic code.",
    example="$ stockade explain B399", example_kind="shell")
POLICY_NAMING = entry(
    "E010", "policy named ambiguously",
    explanation="Every command names its policy the same way: as its first operand (a path to an existing "
                "file ending in `.policy`) or with `--policy FILE`, and the command to judge or run comes "
                "after `--`. A word before `--` that is not such a file, a policy named both ways, or a "
                "policy operand that does not exist is refused rather than guessed at: a command must never "
                "be judged against a policy other than the one meant.\n\n"
                "Write `stockade analyze team.policy -- git push` or `stockade analyze --policy team.policy "
                "-- git push`. A policy file whose name does not end in `.policy` is named with `--policy`.",
    example="$ stockade analyze team.policy git push", example_kind="shell")


# -- rendering (``stockade explain``, the README) --------------------------------------------


def by_family() -> list[tuple[str, str, list[Entry]]]:
    """The entries grouped by family: (letter, title, entries in code order)."""
    groups: list[tuple[str, str, list[Entry]]] = []
    for letter, (_, title) in FAMILIES.items():
        members = sorted((e for e in _entries().values() if e.code[0] == letter), key=lambda e: e.code)
        if members:
            groups.append((letter, title, members))
    return groups


def readme_block() -> str:
    """The README's code list (between :data:`README_BEGIN` and :data:`README_END`, markers
    included): one line per family, each code with its title."""
    lines = [README_BEGIN, "<!-- generated from stockade/catalogue.py: "
             "`python3 -m stockade.catalogue --write-readme README.md` -->", ""]
    for letter, title, members in by_family():
        codes = " · ".join(f"`{item.code}` {item.title}" for item in members)
        lines.append(f"* **{letter}{members[0].code[1]}xx** {title}: {codes}")
    lines += ["", README_END]
    return "\n".join(lines)


def with_readme_block(text: str) -> str:
    """``text`` (a README) with its code list replaced by :func:`readme_block`."""
    start = text.index(README_BEGIN)
    end = text.index(README_END, start) + len(README_END)
    return text[:start] + readme_block() + text[end:]


def errors_page() -> str:
    """``docs/errors.md``: every code with its title, explanation and example, by family."""
    lines = ["# Diagnostic codes", "",
             "<!-- generated from stockade/catalogue.py: "
             "`python3 -m stockade.catalogue --write-errors docs/errors.md` -->", "",
             "Every problem Stockade reports has a code; its first letter names the stage that reports "
             "it. `stockade explain CODE` prints the same text as this page.", ""]
    for letter, title, members in by_family():
        lines += [f"## {letter}{members[0].code[1]}xx: {title}", ""]
        for item in members:
            lines += [f"### `{item.code}` {item.title}", ""]
            for paragraph in item.explanation.split("\n\n"):
                lines += [paragraph, ""]
            if item.reserved:
                lines += [f"*Reserved:* {item.reserved}", ""]
            if item.example:
                lines += ["Example:" if item.example_kind != "policy" else "Example policy:", "", "```",
                          item.example.rstrip("\n"), "```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _main(argv: list[str]) -> int:
    """``python3 -m stockade.catalogue --readme`` (print the block), ``--write-readme FILE``
    or ``--write-errors FILE`` (the errors page)."""
    if len(argv) == 2 and argv[0] == "--write-errors":
        with open(argv[1], "w", encoding="utf-8") as handle:
            handle.write(errors_page())
        return 0
    if argv == ["--readme"]:
        print(readme_block())
        return 0
    if len(argv) == 2 and argv[0] == "--write-readme":
        with open(argv[1], encoding="utf-8") as handle:
            text = handle.read()
        new = with_readme_block(text)
        if new != text:
            with open(argv[1], "w", encoding="utf-8") as handle:
                handle.write(new)
        return 0
    print("usage: python3 -m stockade.catalogue --readme | --write-readme README.md | --write-errors docs/errors.md")
    return 2


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(_main(sys.argv[1:]))
