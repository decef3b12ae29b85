"""Code that cannot be seen into because the same command made it, and runaway resource use.

* Running, sourcing or interpreting a file that the same command text wrote before (a
  download, a decoded payload, a redirection, an extracted archive, ``chmod +x f``) runs
  code the analyzer has not seen: ``curl -o f URL && sh f``, ``base64 -d > f && . f``.  What
  a compiler or build tool writes (``gcc -o prog && ./prog``) is the project's own code and
  is judged like running it.
* ``kill`` of processes it cannot identify (``-1``, ``0``, init, a pid from a substitution).
* Filling a disk: an endless source (``/dev/zero``, ``yes``) copied to a file without a
  bound, or a file allocated larger than :data:`DISK_LIMIT`.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import (
    CHILD_PID,
    PLAIN_MARK,
    UNKNOWN,
    Delete,
    Execute,
    Harmless,
    Network,
    Read,
    Rename,
    Write,
    show,
)
from stockade.analyzer.exec import Invocation
from stockade.analyzer.globs import glob_regex, has_glob
from stockade.analyzer.models import MODELS, parse_options, register

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    from stockade.analyzer.models import Model
    from stockade.analyzer.walker import Walker

#: programs whose outputs are the project's own code, built from what the analyzer sees
#: programs whose write of a directory means members written below it (an archive extracted)
EXTRACTORS = frozenset({"tar", "gtar", "bsdtar", "unzip", "7z", "7za", "7zr", "cpio", "ar", "patch", "uudecode",
                        "unshar", "unrar", "rar", "unar", "cabextract", "lha", "gunzip", "gzip", "unpigz", "pigz"})
BUILDERS = frozenset({"gcc", "cc", "c++", "g++", "clang", "clang++", "rustc", "go", "cargo", "javac", "tsc", "zig",
                      "ld", "as", "nasm", "make", "cmake", "ninja", "swiftc", "ghc", "kotlinc", "nvcc", "dotnet",
                      "mvn", "gradle", "bazel", "meson", "gfortran", "tcc", "esbuild", "bun", "deno",
                      "py:venv", "virtualenv"})  # (a virtual environment: the interpreter's own files)


def wrote_anything(walker: Walker) -> bool:
    """Whether this command text wrote any file so far (what :func:`written_by` looks for): a
    cheap test before resolving the paths to ask it about."""
    return not _WRITES.isdisjoint(map(type, walker.effects))  # (the scan in C)


_WRITES = frozenset({Write, Rename})


def _write_targets(walker: Walker) -> set[str]:
    """Every path a Write or Rename effect of this text has named (without trailing ``/``),
    kept up to date as effects are added (one pass over the effects in all, not one per
    question: a long script asks at every command).  Effects are only ever appended, or the
    last ones replaced or dropped: a change before the last one seen rebuilds the set; a
    dropped one may stay in it (the set only answers "certainly not written")."""
    effects = walker.effects
    cache = getattr(walker, "_write_targets", None)
    seen = 0 if cache is None or cache[2] is not effects else cache[0]
    if seen and (seen > len(effects) or effects[seen - 1] is not cache[3]):  # type: ignore[index]
        seen = 0
    if not seen:
        cache = walker._write_targets = [0, set(), effects, None]  # type: ignore[attr-defined]
    targets: set[str] = cache[1]  # type: ignore[index]
    count = len(effects)
    for position in range(seen, count):
        effect = effects[position]
        cls = effect.__class__
        if cls is Write:
            targets.add(effect.path.rstrip("/") or "/")  # type: ignore[union-attr]
        elif cls is Rename:
            targets.add(effect.dest.rstrip("/") or "/")  # type: ignore[union-attr]
    cache[0] = count  # type: ignore[index]
    cache[3] = effects[count - 1] if count else None  # type: ignore[index]
    return targets


def may_have_written(walker: Walker, path: str, below: bool = True) -> bool:
    """False when no write or move of this text named ``path`` (or, with ``below``, a
    directory above it): a quick test before the scans of :func:`written_by` and
    :func:`known_content`."""
    targets = _write_targets(walker)
    if not targets:
        return False
    path = path.rstrip("/") or "/"
    if path in targets:
        return True
    while below and path != "/":
        path = path.rpartition("/")[0] or "/"
        if path in targets:
            return True
    return False


def may_have_written_below(walker: Walker, path: str) -> bool:
    """Whether a write or move of this text named a path below the directory ``path``."""
    prefix = path.rstrip("/") + "/"
    return any(target.startswith(prefix) for target in _write_targets(walker))


_NO_IDS: set[int] = set()


def template_write(walker: Walker, effect: object) -> None:
    """The write ``effect`` leaves a tool's own template (``npm init -y``'s package.json,
    ``cargo init``'s Cargo.toml): not code from elsewhere, so :func:`written_by` skips it."""
    ids: set[int] | None = getattr(walker, "template_writes", None)
    if ids is None:
        ids = walker.template_writes = set()  # type: ignore[attr-defined]
    ids.add(id(effect))


def unseen_members(walker: Walker, effect: object) -> None:
    """The write ``effect`` of a directory stands for files below it that cannot be named
    statically (``git apply P``, ``git am MBOX``: the files the patch names): :func:`written_by`
    counts every path below that directory as written by it, as for an extracted archive."""
    ids: set[int] | None = getattr(walker, "member_writes", None)
    if ids is None:
        ids = walker.member_writes = set()  # type: ignore[attr-defined]
    ids.add(id(effect))


def written_by(walker: Walker, path: str, copies: bool = True) -> str | None:
    """The program (or ``a redirection``) that wrote ``path`` (a resolved path) earlier in this
    command text, or None; writes by :data:`BUILDERS` do not count, nor — without ``copies``,
    for code about to run — those of :data:`COPIERS` (and git from its own objects) whose
    sources were there before (``cp scripts/t.sh /tmp/t.sh && bash /tmp/t.sh`` runs a file of
    the project's; a configuration file copied into place still counts)."""
    if UNKNOWN in path:
        return None
    if not may_have_written(walker, path):
        if not has_glob(path):
            return None
        # (`sh x*`: a glob names whichever written files it matches)
        pattern = glob_regex([part for part in path.split("/") if part], dots=True)
        for target in sorted(_write_targets(walker)):
            if pattern.match(target):
                matched = written_by(walker, target, copies)
                if matched is not None:
                    return matched
        return None
    effects = walker.effects
    found: str | None = None
    producer: Execute | None = None
    count = len(effects)
    templates: set[int] = getattr(walker, "template_writes", None) or _NO_IDS
    members: set[int] = getattr(walker, "member_writes", None) or _NO_IDS
    for position in range(count):
        effect = effects[position]
        cls = effect.__class__
        if cls is Execute:
            producer = effect  # type: ignore[assignment]
            continue
        if cls is Write and id(effect) not in templates:
            target, recursive, span = effect.path, effect.recursive, effect.span  # type: ignore[union-attr]
        elif cls is Rename:
            target, recursive, span = effect.dest, True, effect.span  # type: ignore[union-attr]
        else:
            continue
        if not (target == path or (path.startswith(target.rstrip("/") + "/") and (
                recursive or id(effect) in members or (producer is not None and producer.argv
                                                       and producer.argv[0].rpartition("/")[2] in EXTRACTORS)))):
            continue
        owner = producer
        if owner is not None and owner.span[0] <= span[0]:
            # a later command that starts before this write's word owns it (its redirection)
            for later in range(position + 1, count):
                nxt = effects[later]
                if nxt.__class__ is Execute:
                    if nxt.span[0] <= span[0] and nxt.span != owner.span:  # (the same span: the command
                        owner = None  # walked again, for another value of a word: `${B:-main}`)
                    break
        else:
            owner = None
        program = owner.argv[0].rpartition("/")[2] if owner is not None and owner.argv else ""
        if program in BUILDERS or (not copies and owner is not None and _copies_local(walker, owner, position)):
            # (git writes from its own objects: no operand is a source)
            source = _fresh_source(walker, owner, path, every=program not in BUILDERS) \
                if owner is not None and program != "git" else None
            if source is None:
                continue
            found = f"`{show(program)}` (from {source})"
            continue
        found = f"`{show(program)}`" if program else "a redirection"
    return found


#: programs that copy or move files they are given: what they write is the content of their
#: sources (``cp scripts/test.sh /tmp/t.sh && bash /tmp/t.sh`` runs a file that was there)
COPIERS = frozenset({"cp", "mv", "install", "ln", "rsync", "ditto", "gcp", "gmv"})
#: copier options that take a value (not a source or a destination)
_COPIER_VALUES = frozenset({"-m", "-o", "-g", "-t", "-S", "-T", "--mode", "--owner", "--group", "--target-directory",
                            "--suffix", "-C", "-e", "--rsh", "--exclude", "--include", "-f", "--filter"})


def program_origin(walker: Walker, name: str) -> str:
    """The file a program run by path really is: through the links this text made and the
    copies it made (``cp /bin/rm /tmp/ls``, ``install -m755 /usr/bin/curl bin/x``, ``ln -s
    /usr/bin/rm ./clean``), the program copied — UNKNOWN when a copy's source is not known."""
    path = walker.resolve(name)
    for _ in range(8):
        source = _copied_from(walker, path)
        if source is None or source == path:
            return path
        path = source
    return UNKNOWN  # (copies of copies, or in a circle: not followed)


def _copied_from(walker: Walker, path: str) -> str | None:
    """The source of the last copy this text made to ``path`` (a :data:`COPIERS` program with one
    source: ``cp SRC DEST``, ``cp SRC DIR``), resolved; None when no copy wrote it last."""
    if not may_have_written(walker, path, below=False):
        return None
    found: str | None = None
    producer: Execute | None = None
    for effect in walker.effects:
        cls = effect.__class__
        if cls is Execute:
            producer = effect  # type: ignore[assignment]
            continue
        target = effect.path if cls is Write else effect.dest if cls is Rename else None  # type: ignore[union-attr]
        if target is None or target.rstrip("/") != path:
            continue
        found = None
        argv = producer.argv if producer is not None else ()
        if not argv or argv[0].rpartition("/")[2] not in COPIERS:
            continue
        operands: list[str] = []
        skip = False
        for word in argv[1:]:
            if skip:
                skip = False
            elif word[:1] == "-" and UNKNOWN not in word:
                skip = word in _COPIER_VALUES
            else:
                operands.append(word)
        if len(operands) != 2:
            continue
        source, dest = operands
        if UNKNOWN in source:
            found = UNKNOWN
            continue
        source_path = walker.resolve(source)
        dest_path = walker.resolve(dest).rstrip("/")
        if dest_path == path or dest_path + "/" + source_path.rpartition("/")[2] == path:
            found = source_path
    return found


#: git subcommands that write the working tree from the repository's own objects
_GIT_LOCAL = frozenset({"checkout", "restore", "switch", "reset", "stash", "cherry-pick", "revert", "worktree"})


def _copies_local(walker: Walker, owner: Execute, position: int) -> bool:
    """Whether the command that made the write at ``position`` copies what was already on disk:
    a :data:`COPIERS` program (its sources are asked about by :func:`_fresh_source`), or git
    writing files from its own objects when nothing earlier in this text fetched any
    (``git checkout HEAD~1 -- Makefile``; after ``git fetch URL`` the objects may be new)."""
    argv = owner.argv
    program = argv[0].rpartition("/")[2]
    if program in COPIERS:
        return not (program == "rsync" and any(":" in word for word in argv[1:] if word[:1] != "-"))
    if program != "git" or not any(word in _GIT_LOCAL for word in argv[1:3]):
        return False
    effects = walker.effects
    return not any(effects[index].__class__ is Network for index in range(position))


def _fresh_source(walker: Walker, builder: Execute, built: str, every: bool = False) -> str | None:
    """A source file a builder's command names (``gcc a.c -o t``; with ``every``, any operand:
    ``cp a b``) that this text wrote before (``echo CODE > a.c``, a download): what the builder
    makes of it is code just written, not the project's own ("`a.c`, which … wrote"); None when
    it names none.  A builder's inputs are asked about once (a builder met while asking is the
    project's own); copies are followed a few deep (``cp a b; cp b c``), and deeper count as
    written."""
    depth: int = getattr(walker, "_fresh_depth", 0)
    if depth and not every:
        return None
    if depth >= 4:
        return "a file copied from copies, too deep to follow"
    walker._fresh_depth = depth + 1  # type: ignore[attr-defined]
    try:
        for word in builder.argv[1:64]:
            if word == "-":  # (`gcc -x c - <<< CODE`: the source is what this text feeds it)
                return "the source on its standard input"
            if every and UNKNOWN in word and word[:1] != "-":  # (`cp "$X" f`, `cp <(…) f`: not known)
                return f"`{show(word)}`, which is not known before it runs"
            if word[:1] == "-" or UNKNOWN in word or ("." not in word.rpartition("/")[2] and not every):
                continue
            source = walker.resolve(word)
            if source == built:
                continue
            producer = written_by(walker, source, False) if not every else _written_at_or_below(walker, source)
            if producer is None and every and foreign_input(walker, source):
                return f"`{show(word)}`, which the agent may have put there"
            if producer is not None:
                return f"`{show(word)}`, which {producer} wrote"
        return None
    finally:
        walker._fresh_depth = depth  # type: ignore[attr-defined]


def _written_at_or_below(walker: Walker, source: str) -> str | None:
    """What wrote a file a copier's operand ``source`` names or holds — the file, a file below
    it (``cp -r d e``), one its glob matches (``cp a.s? b.sh``) — or a device or descriptor whose
    content is another command's (``cp /dev/stdin x``, ``cp <(curl …) x``); None when none is."""
    if source.startswith(("/dev/", "/proc/")):
        return "another command or a device"
    producer = written_by(walker, source, False)
    if producer is not None:
        return producer
    prefix = source.rstrip("/") + "/"
    glob = glob_regex([part for part in source.split("/") if part], dots=True) if has_glob(source) else None
    for target in sorted(_write_targets(walker)):
        if target.startswith(prefix) or (glob is not None and glob.match(target)):
            producer = written_by(walker, target, False)
            if producer is not None:
                return producer
    return None


#: programs that change a file's mode, owner or times, not its content
_KEEP_CONTENT = frozenset({"chmod", "chown", "chgrp", "touch", "chattr", "setfacl", "stat", "ls"})
#: programs that run a file as shell code (``bash f``, ``. f``)
SHELL_RUNNERS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "posh", "yash", "rbash", "source", "."})
#: the interpreters of a ``#!`` line that read the file as shell code
_SHELL_SHEBANG = re.compile(r"#!\s*(?:/usr)?/bin/(?:env\s+(?:-S\s+)?)?(?:sh|bash|dash|zsh|ksh|mksh|ash)\b")
#: bytes of a file's known content followed into (beyond: not followed)
MAX_KNOWN_CONTENT = 64 * 1024


def record_written(walker: Walker, effect: Write, text: str | None, append: bool) -> None:
    """The write ``effect`` (a redirection of a command's output, ``tee``) left ``text`` in its
    file (None: not known); appended to what this command wrote there when ``append``."""
    store: dict[int, tuple[Write, str | None]] | None = getattr(walker, "written_text", None)
    if store is None:
        store = walker.written_text = {}  # type: ignore[attr-defined]
    if append and text is not None:
        # appended to what the file held: unknown before this command (UNKNOWN marks that part)
        previous = known_content(walker, effect.path, before=effect, partial=True)
        text = UNKNOWN + text if previous is None else previous + text
    if text is not None and len(text) > MAX_KNOWN_CONTENT:
        text = None
    store[id(effect)] = (effect, text)
    if text is not None and effect.path.endswith(("/.pre-commit-config.yaml", "/.vscode/settings.json")):
        from stockade.analyzer.models.toolconfigs import harmless_startup

        if harmless_startup(effect.path, text):  # (content that runs nothing: a plain write)
            walker.effects.append(Harmless(effect.path, effect.span))
    if text is not None and effect.path.endswith("/.gitattributes"):
        _attribute_drivers(walker, effect, text)
    elif text is not None and (effect.path.endswith("/.envrc") or "/.husky/" in effect.path) and \
            "/.husky/_/" not in effect.path:
        # shell code direnv or husky runs later (the judge says so): what is known of it is walked now
        known = text.rpartition(UNKNOWN)[2]
        if known.strip():
            walker.nested_script(known, effect.span, exact=False, subshell=True)
    elif text is not None:
        pattern = next((pattern for ending, pattern in _CONFIG_COMMANDS if effect.path.endswith(ending)), None)
        if pattern is not None:  # the commands a tool runs later from this file: walked now
            for found in pattern.finditer(text.replace(UNKNOWN, "")):
                command = found.group(1).strip().strip("'\"")
                if command:
                    walker.nested_script(command.replace('\\"', '"'), effect.span, exact=False, subshell=True)


#: configuration files of tools that run commands named in them at their next start (see the
#: judge's `_startup_code`), and where a command is: its known text is walked when written
_CONFIG_COMMANDS = (
    (".pre-commit-config.yaml", re.compile(r"(?:^|[{,])\s*-?\s*entry\s*:\s*(\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^,}\n]+)", re.M)),
    ("lefthook.yml", re.compile(r"(?:^|[{,])\s*run\s*:\s*(\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^,}\n]+)", re.M)),
    (".vscode/tasks.json", re.compile(r"\"command\"\s*:\s*\"((?:[^\"\\]|\\.)*)\"")),
    ("devcontainer.json", re.compile(r"\"(?:initialize|onCreate|updateContent|postCreate|postStart|postAttach)Command\""
                                     r"\s*:\s*\"((?:[^\"\\]|\\.)*)\"")),
    (".gitpod.yml", re.compile(r"^\s*-?\s*(?:init|command|before)\s*:\s*(.+)$", re.M)),
    ("nodemon.json", re.compile(r"\"exec\"\s*:\s*\"((?:[^\"\\]|\\.)*)\"")),
)


#: the diff and merge drivers git has built in, and the filters every install knows (git-lfs)
_BUILTIN_DRIVERS = frozenset({
    "lfs", "text", "binary", "union", "ada", "bash", "bibtex", "cpp", "csharp", "css", "dts", "elixir", "fortran",
    "fountain", "golang", "html", "java", "kotlin", "markdown", "matlab", "objc", "pascal", "perl", "php", "python",
    "ruby", "rust", "scheme", "tex"})
_DRIVER_RE = re.compile(r"(?:^|\s)(filter|diff|merge)=([^\s]+)")


def _attribute_drivers(walker: Walker, effect: Write, text: str) -> None:
    """A ``.gitattributes`` written with known content: a filter, diff or merge driver it names
    that git does not have built in runs the program git's configuration gives that driver —
    at the next checkout, diff or merge, where it cannot be seen into."""
    from stockade.analyzer.effects import Unknown

    for line in text.split("\n"):
        if line.lstrip().startswith("#"):
            continue
        for kind, driver in _DRIVER_RE.findall(line):
            if driver not in _BUILTIN_DRIVERS and UNKNOWN not in driver:
                walker.effects.append(Unknown(
                    f"`.gitattributes` names the {kind} driver `{show(driver)}`: git runs the program its "
                    f"configuration gives `{kind}.{show(driver)}` at the next checkout, diff or merge", effect.span))
                return


def known_content(walker: Walker, path: str, before: object = None, partial: bool = False) -> str | None:
    """What the file ``path`` holds (None: not known), following this command text's effects
    up to ``before``: a recorded write leaves its text, ``mv`` and ``cp`` of one file carry it
    to the destination, a write by another program (but ``chmod``, ``touch``…) or a deletion
    leaves it not known.  ``partial``: text appended to a file whose earlier content is not
    known is returned after an UNKNOWN (else such a file is not known)."""
    if path[:8] == "/dev/fd/" and getattr(walker, "fd_texts", None):  # `<(echo …)`: its producer's known output
        from stockade.analyzer.words import process_text

        return process_text(walker, path)
    store: dict[int, tuple[Write, str | None]] | None = getattr(walker, "written_text", None)
    if not store or not may_have_written(walker, path, below=False):
        return None
    contents: dict[str, str | None] = {}
    producer = ""
    carried: str | None = None  # what `mv` moved away (one source)
    copied: str | None = None  # the destination `cp` wrote
    stash: dict[str, str] = {}  # what the files `cp` writes held before it (this command only)
    sources = 0
    for effect in walker.effects:
        if effect is before:
            break
        cls = effect.__class__
        if cls is Execute:
            producer = effect.argv[0].rpartition("/")[2] if effect.argv else ""  # type: ignore[union-attr]
            carried, copied, sources = None, None, 0
            if stash:
                stash = {}
        elif cls is Write:
            target = effect.path  # type: ignore[union-attr]
            entry = store.get(id(effect))
            if entry is not None and entry[0] is effect:
                contents[target] = entry[1]
            elif producer == "mv" and sources == 1 and carried is not None:
                contents[target] = carried
            elif producer == "mv" and stash and any(moved.rpartition("/")[2] == target.rpartition("/")[2]
                                                    for moved in stash):  # (`mv a b DIR/`: DIR/a is a)
                contents[target] = next(text for moved, text in stash.items()
                                        if moved.rpartition("/")[2] == target.rpartition("/")[2])
            elif producer not in _KEEP_CONTENT:
                before_copy = contents.pop(target, None)
                copied = target if producer in ("cp", "install") else None
                if copied is not None:
                    sources = 0  # (`cp a b DIR/`: DIR/a from a, DIR/b from b)
                    if before_copy is not None:  # (what it held, should the copy read it: `cp f .`)
                        stash[target] = before_copy
        elif cls is Read and copied is not None:  # (cp writes DEST, then reads SRC)
            sources += 1
            text = contents.get(effect.path, stash.get(effect.path)) if sources == 1 else None  # type: ignore[union-attr]
            if text is not None:
                contents[copied] = text
            else:
                contents.pop(copied, None)
        elif cls is Delete:
            moved = contents.pop(effect.path, None)  # type: ignore[union-attr]
            if producer == "mv":
                carried, sources = moved, sources + 1
                if moved is not None:  # (`mv a b DIR/`: the Rename of each to DIR follows)
                    stash[effect.path] = moved  # type: ignore[union-attr]
        elif cls is Rename:
            moved = contents.pop(effect.source, None)  # type: ignore[union-attr]
            contents[effect.dest] = moved  # type: ignore[union-attr]
    text = contents.get(path)
    if text is not None and not partial and appended_to_unknown(text):
        return None
    return text


def appended_to_unknown(text: str) -> bool:
    """Whether a file's known content ``text`` (see :func:`known_content`) was appended to
    content not known: it starts with a bare UNKNOWN, not a plain value's marker (a ``$!``
    written to a pid file, ``echo $! > app.pid``, is the whole content)."""
    return text[:1] == UNKNOWN and text[1:2] != PLAIN_MARK


def _walk_known(inv: Invocation | None, walker: Walker, word: str, text: str, span: tuple[int, int],
                positional: list[str] | None) -> None:
    """Walk the known content of a file this command wrote, as the shell code it is: in a
    child shell, or — ``source``/``.`` — in this shell, whose functions, variables and working
    directory it changes (``echo 'f(){ rm -rf ~; }' > lib.sh; . ./lib.sh; f``), with the
    arguments after the file as positional parameters while it runs."""
    if inv is not None and inv.name in ("source", "."):
        state = walker.state
        saved = state.positional
        if len(inv.argv) > 2:
            state.positional = [saved[0] if saved else "bash", *inv.argv[2:]]
        try:
            walker.nested_script(text, span, exact=False, subshell=False, env=inv.env)
        finally:
            if len(inv.argv) > 2:
                walker.state.positional = saved
        return
    walker.nested_script(text, span, exact=False, subshell=True, positional=positional,
                         env=None if inv is None else inv.env)


def run_file(inv: Invocation, word: str, index: int | None) -> None:
    """A program runs the code in the file ``word`` (a script, a makefile, a debugger command
    file): a read of it, and unknown code when this command wrote it — unless a shell runs it
    and its content is known (``echo CODE > f && bash f``): then that code is walked."""
    if word in ("", "-"):
        return
    inv.read(word, index)
    if not wrote_anything(inv.walker):
        return
    path = inv.path(word)
    producer = written_by(inv.walker, path, False)
    glob = has_glob(path) and UNKNOWN not in path and path.rstrip("/") not in _write_targets(inv.walker)
    if (producer is not None and glob) or (producer is None and UNKNOWN not in path and may_have_written_below(
            inv.walker, path)):
        # (`find . -name c -exec sh {} \;`, `sh *.sh`: each written file the glob matches is run; `find . -exec
        # sh {} \;` runs each file below the root, and a directory is no script)
        pattern = glob_regex([part for part in path.split("/") if part], dots=True) if glob else None
        prefix = path.rstrip("/") + "/"
        matched = [target for target in sorted(_write_targets(inv.walker)) if not has_glob(target) and (
            pattern.match(target) if pattern is not None else target.startswith(prefix))]
        for target in matched[:16]:
            run_file(inv, target, index)
        if len(matched) > 16:
            inv.unknown(f"`{inv.name}` runs the files `{show(word)}` matches, more than this command wrote to follow", index)
        return
    if producer is not None:
        if inv.name in SHELL_RUNNERS:
            text = known_content(inv.walker, path, partial=True)
            if text is not None and appended_to_unknown(text):  # appended to: the known part is code too
                inv.unknown(f"`{inv.name}` runs `{show(word)}`, which {producer} appended to earlier in this "
                            "command: what it held before cannot be seen into", index)
                text = text.lstrip(UNKNOWN)
                if text.startswith("#!") or UNKNOWN in text:
                    return
            if text is not None and (not text.startswith("#!") or _SHELL_SHEBANG.match(text)):
                positional = None
                if inv.name not in ("source", ".") and index is not None:
                    positional = [word, *inv.argv[index + 1:]]
                _walk_known(inv, inv.walker, word, text, inv.at(index), positional)
                return
        inv.unknown(f"`{inv.name}` runs `{show(word)}`, which {producer} wrote earlier in this command: "
                    "its content cannot be seen into", index)
        _named_in_known(inv, path, index)


def _named_in_known(inv: Invocation, path: str, index: int | None) -> None:
    """Code this text wrote with known content, run by an interpreter that is not a shell
    (``echo 'os.system("cat ~/.netrc")' > p.py && python3 p.py``): it stays unknown code, and
    the paths and shell command lines written in it as literals are judged as well (as for
    ``python3 -c``: see :func:`.shells.named_paths`)."""
    if inv.name in SHELL_RUNNERS:
        return
    text = known_content(inv.walker, path)
    if text is not None and UNKNOWN not in text:
        from stockade.analyzer.models.shells import named_paths

        named_paths(inv, text, index)


def foreign_input(walker: Walker, path: str) -> bool:
    """Whether the file ``path`` (resolved) that a redirection feeds a command may hold what the
    agent put there: written earlier in this text, or outside the workspace where it can write
    (``sqlite3 db < /tmp/x.sql``).  The project's own files and system files are not."""
    if UNKNOWN in path or (path.startswith(("/dev/", "/proc/")) and not path.startswith("/dev/shm/")):
        return False  # (a path not known is judged as such where it is read; `< <(cmd)` is the command's output)
    workspace = walker.context.workspace.rstrip("/")
    if path.startswith(workspace + "/"):
        return wrote_anything(walker) and written_by(walker, path, False) is not None
    from stockade.analyzer.models.programs import agent_writable

    return agent_writable(walker, path)


def fresh_project(inv: Invocation, directory: str, names: tuple[str, ...], index: int | None) -> None:
    """A build or package tool runs the project files ``names`` found in ``directory`` (a
    Makefile, CMakeLists.txt, package.json): unknown code when this command wrote them (a fresh
    clone or extracted archive)."""
    if not wrote_anything(inv.walker):
        return
    base = directory.rstrip("/") or "/"
    for name in names:
        path = inv.path(base + "/" + name)
        producer = written_by(inv.walker, path, False)
        if producer is not None:
            inv.unknown(f"`{inv.name}` runs the code of `{show(base)}/{name}`, which {producer} wrote earlier in this "
                        "command: it cannot be seen into", index)
            return


def fresh_found(inv: Invocation, directory: str, matches: Callable[[str], bool], what: str,
                index: int | None) -> bool:
    """A tool finds files below ``directory`` by their names and runs them as code (test
    discovery: ``pytest tests``, ``python -m unittest``; ``BUILD`` files below a bazel
    workspace): one this command wrote whose name ``matches`` is unknown code.  ``what`` says
    what the tool does with it (``runs the tests in``).  True when one was found."""
    walker = inv.walker
    if not wrote_anything(walker) or UNKNOWN in directory:
        return False
    base = inv.path(directory).rstrip("/")
    prefix = base + "/"
    for target in sorted(_write_targets(walker)):
        if target.startswith(prefix) and not has_glob(target) and matches(target.rpartition("/")[2]):
            producer = written_by(walker, target, False)
            if producer is not None:
                inv.unknown(f"`{inv.name}` {what} `{show(target)}`, which {producer} wrote earlier in this command: "
                            "its code cannot be seen into", index)
                return True
    return False


def check_executed(walker: Walker, name: str, span: tuple[int, int]) -> None:
    """A command run by path (``./f``) that this command wrote: unknown code."""
    from stockade.analyzer.effects import Unknown

    if not wrote_anything(walker):
        return
    path = walker.resolve(name)
    producer = written_by(walker, path, False)
    if producer is not None:
        text = known_content(walker, path, partial=True)
        if text is not None and appended_to_unknown(text):  # appended to: the known part is code too
            walker.effects.append(Unknown(f"runs `{show(name)}`, which {producer} appended to earlier in this "
                                          "command: what it held before cannot be seen into", span))
            text = text.lstrip(UNKNOWN)
            if UNKNOWN in text:
                return
        if text is not None and (not text.startswith("#!") or _SHELL_SHEBANG.match(text)):
            _walk_known(None, walker, name, text, span, None)  # (run by path: a shell script or `#!/bin/sh`)
            return
        walker.effects.append(Unknown(f"runs `{show(name)}`, which {producer} wrote earlier in this command: "
                                      "its content cannot be seen into", span))


# -- kill ---------------------------------------------------------------------------------------

_KILL_MODEL = MODELS.get("kill")


def model_kill(inv: Invocation) -> None:
    """kill: ``-1`` (every process), ``0`` (the whole process group), ``1`` (init), a process
    group (``-PGID`` after the signal) or a pid not known before it runs cannot be identified."""
    if inv.name != "kill":
        if _KILL_MODEL is not None:
            _KILL_MODEL(inv)
        return
    words = inv.argv[1:]
    if words and words[0] in ("-l", "-L", "--list", "--table"):
        return
    position = 0
    signal = False
    while position < len(words):
        word = words[position]
        if word == "--":
            position += 1
            break
        if word in ("-s", "-n", "--signal", "-q", "--queue"):
            position += 2
            signal = True
            continue
        if word.startswith("-") and not signal and position + 1 < len(words) and UNKNOWN not in word:
            signal = True  # -9, -KILL, -SIGTERM
            position += 1
            continue
        break
    if any(word in ("-0", "-s0", "-n0") or (word in ("0", "SIG0") and at > 0 and words[at - 1] in ("-s", "-n", "--signal"))
           for at, word in enumerate(words[:position])):
        return  # (signal 0 only tests whether the process exists)
    targets = [(word, at + 1) for at, word in enumerate(words) if at >= position]
    text = inv.walker.command
    for word, position in targets:
        if word.startswith("%") or word == "self":
            continue  # a job of this shell, the shell itself (`$$`)
        if word == CHILD_PID or word == "-" + CHILD_PID:
            continue  # a job this command started (`$!`), its process group (`-$!` under `set -m`)
        if UNKNOWN in word:
            start, stop = inv.at(position)
            source = text[start:stop].strip('"')
            if source in ("$!", "${!}") or _job_variable(text, source) or _JOBS_RE.fullmatch(source):
                continue  # the job this shell just started
            inv.unknown(f"`kill` signals processes that are not known before it runs (`{show(word)}`)", position)
        elif word in ("-1", "0", "1") or (word.startswith("-") and word[1:].isdigit()):
            inv.unknown(f"`kill {word}` signals every process, a whole process group or init", position)
        elif has_glob(word):  # (`[0-9]*`, from a loop over `/proc/[0-9]*`: any process; a name is an error)
            inv.unknown(f"`kill` signals the processes `{show(word)}` stands for, which cannot be identified", position)


#: `$(jobs -p)`: the pids of this shell's own jobs
_JOBS_RE = re.compile(r"\$\(\s*jobs\s+-[lnrs]*p[lnrs]*\s*\)|`\s*jobs\s+-[lnrs]*p[lnrs]*\s*`")


def _job_variable(text: str, source: str) -> bool:
    """Whether ``source`` (``$NAME``/``${NAME}``) is a variable the command text sets to ``$!``."""
    match = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", source)
    if match is None:
        return False
    return re.search(r"(^|[\s;&|(])" + match.group(1) + r"=\"?\$\{?!\}?", text) is not None


# -- filling a disk -------------------------------------------------------------------------------

#: allocations beyond this many bytes are filling the disk
DISK_LIMIT = 1 << 30
_ENDLESS = frozenset({"/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"})
_SIZE_RE = re.compile(r"(\d+)\s*([kKmMgGtTpPeEbBwc]?)(i?B)?")
_UNITS = {"": 1, "c": 1, "w": 2, "b": 512, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50,
          "e": 1 << 60}
#: standard output sent to a file, after any redirections of input or of errors (``< /dev/urandom > f``)
_STDOUT_FILE_RE = re.compile(r"(?:[ \t]*(?:0?<(?![<(&])|2>>?(?!&))[ \t]*[^\s;&|)<>]+|[ \t]*2>&1)*"
                             r"[ \t]*(?:1)?>>?\|?[ \t]*([^\s;&|)<>]+)")


def size_of(text: str) -> int | None:
    """Bytes in a size like ``100G``, ``1MiB``, ``512k`` (None: not a known size)."""
    match = _SIZE_RE.fullmatch(text.strip())
    if match is None:
        return None
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def stdout_to_file(inv: Invocation) -> bool:
    """Whether the command's standard output is redirected to a file (``yes > f``, ``>f yes``),
    or goes to the file ``exec > FILE`` made this shell's standard output (when it is not piped
    on: ``exec > f; yes | head``)."""
    walker = inv.walker
    own = walker.command_stdout
    if own is not None:
        return own not in _NULL_STDOUT
    text = walker.command
    end = inv.span[1]
    if inv.spans:
        end = min(end, inv.spans[-1][1])
    match = _STDOUT_FILE_RE.match(text, end)
    if match is None:
        after = text[inv.span[1]:inv.span[1] + 2]
        match = _STDOUT_FILE_RE.match(text, inv.span[1]) if after.strip()[:1] == ">" else None
    if match is None:
        following = text[end:].lstrip(" \t")
        return walker.exec_stdout is not None and not (
            following[:1] == "|" and following[:2] != "||")
    return match.group(1) not in _NULL_STDOUT


_NULL_STDOUT = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "&2", "&1"})


def _fills(inv: Invocation, what: str) -> None:
    inv.unknown(f"{what}: it fills the disk", 0)


_DD_MODEL = MODELS.get("dd")


def model_dd(inv: Invocation) -> None:
    """dd: copying an endless source without ``count=`` (or beyond :data:`DISK_LIMIT`) fills the disk."""
    if _DD_MODEL is not None:
        _DD_MODEL(inv)
    operands = dict(word.partition("=")[::2] for word in inv.argv[1:] if "=" in word)
    source = operands.get("if")
    if "of" in operands and ("seek" in operands or "oseek" in operands):
        # (`seek=N` makes the file N output blocks long before a byte is copied, as `truncate -s`)
        seek = size_of(operands.get("seek", operands.get("oseek", "")))
        block = size_of(operands.get("obs", operands.get("bs", "512"))) or 512
        if seek is None or seek * block > DISK_LIMIT:
            _fills(inv, f"`dd seek={show(operands.get('seek', operands.get('oseek', '')))}` makes a huge file")
            return
    if source not in _ENDLESS or ("of" not in operands and not stdout_to_file(inv)):
        return
    count = size_of(operands.get("count", "")) if "count" in operands else None
    block = size_of(operands.get("bs", operands.get("obs", "512"))) or 512
    if count is None or count * block > DISK_LIMIT:
        _fills(inv, f"`dd` copies `{source}` without a bound")


def model_fallocate(inv: Invocation) -> None:
    """fallocate -l LEN FILE: writes FILE; a length beyond :data:`DISK_LIMIT` fills the disk."""
    parsed = parse_options(inv.argv, {"-l", "--length", "-o", "--offset"})
    for value, _ in parsed.values_of("-l", "--length"):
        size = size_of(value)
        if size is None or size > DISK_LIMIT:
            _fills(inv, f"`fallocate -l {show(value)}` allocates a huge file")
    for word, index in parsed.positionals:
        inv.write(word, index)


_YES_MODEL = MODELS.get("yes")
_CAT_MODEL = MODELS.get("cat")
_HEAD_MODEL = MODELS.get("head")


def model_yes(inv: Invocation) -> None:
    """yes: endless output; redirected to a file, it fills the disk."""
    if _YES_MODEL is not None:
        _YES_MODEL(inv)
    if stdout_to_file(inv):
        _fills(inv, "`yes` writes without end to a file")


def model_cat(inv: Invocation) -> None:
    """cat: as files.py's model; an endless device copied to a file fills the disk."""
    if _CAT_MODEL is not None:
        _CAT_MODEL(inv)
    for word in inv.argv[1:]:
        if (word in _ENDLESS or (word[:1] != "-" and inv.path(word) in _ENDLESS)) and stdout_to_file(inv):
            # (`ln -s /dev/zero z; cat z > big`: a link to the device is the device)
            _fills(inv, f"`{inv.name} {word}` writes without end to a file")
            return
    if (getattr(inv.walker, "written_text", None) or getattr(inv.walker, "fd_texts", None)) and inv.name == "cat" \
            and len(inv.argv) > 1:
        texts = [known_content(inv.walker, inv.path(word)) for word in inv.argv[1:] if word[:1] != "-"]
        if texts and None not in texts and not any(word[:1] == "-" for word in inv.argv[1:]):
            inv.output("".join(texts))  # type: ignore[arg-type]  # (files this command wrote)


def model_head(inv: Invocation) -> None:
    """head: as files.py's model; ``-c SIZE`` of an endless device beyond :data:`DISK_LIMIT`
    into a file fills the disk."""
    if _HEAD_MODEL is not None:
        _HEAD_MODEL(inv)
    if not any(word in _ENDLESS for word in inv.argv[1:]):
        return
    parsed = parse_options(inv.argv, {"-c", "--bytes", "-n", "--lines"})
    for value, _ in parsed.values_of("-c", "--bytes"):
        size = size_of(value)
        if (size is None or size > DISK_LIMIT) and stdout_to_file(inv):
            _fills(inv, f"`head -c {show(value)}` of an endless device writes a huge file")


def _endless_copier(name: str) -> Model:
    """``NAME``'s model, plus: an endless device among its operands, with the output going
    to a file (``cp`` always writes one), fills the disk."""
    inner = MODELS[name]

    def model(inv: Invocation) -> None:
        inner(inv)
        words = inv.argv[1:]
        endless = next((w for w in words if w in _ENDLESS), None)
        if name == "seq" and any(w.lower().lstrip("+") in ("inf", "infinity") for w in words):
            endless = "inf"
        if endless is not None and (name == "cp" or stdout_to_file(inv)):
            _fills(inv, f"`{inv.name} {endless}` writes without end to a file")

    return model


#: options of cp and install that take a value (the rest are flags)
_COPY_VALUES = frozenset({"-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "--owner", "-g",
                          "--group", "--strip-program", "--backup", "--sparse", "--reflink", "--preserve",
                          "--no-preserve", "-Z", "--context"})
_COPY_OPTIONAL = frozenset({"--backup", "--sparse", "--reflink", "--preserve", "--no-preserve", "--context"})


def known_directory(inv: Invocation, word: str) -> bool:
    """Whether ``word`` names a directory the analysis knows of: the working directory, the
    workspace, home, the temporary directories, or one ``mkdir`` made earlier in this text."""
    path = inv.path(word)
    if UNKNOWN in path:
        return False
    context = inv.walker.context
    if path in ("/", "/tmp", "/var/tmp", inv.cwd, context.workspace, context.home, context.tmpdir):
        return True
    return written_by(inv.walker, path) == "`mkdir`"


def _into_directory(name: str) -> Model:
    """``NAME`` (cp, install): its model, plus — when it copies into a directory (``-t DIR``,
    several sources, or a destination ending in ``/``) — a write of ``DIR/BASENAME`` for each
    source, followed by the read of that source (so :func:`known_content` and
    :func:`written_by` follow each file to where it lands)."""
    inner = MODELS[name]

    def model(inv: Invocation) -> None:
        parsed = parse_options(inv.argv, _COPY_VALUES, optional=_COPY_OPTIONAL)
        into = len(parsed.positionals) == 2 and known_directory(inv, parsed.positionals[-1][0])
        inner(inv)
        if any(option in ("-d", "--directory") for option, _, _ in parsed.options):
            return  # (`install -d`: the operands are directories made)
        target = next(((value, index) for option, value, index in parsed.options
                       if option in ("-t", "--target-directory") and value is not None), None)
        sources = parsed.positionals
        if target is None:
            if len(sources) < 2 or (len(sources) == 2 and not sources[-1][0].endswith("/") and not into):
                return
            target, sources = sources[-1], sources[:-1]
        directory, at = target
        if not directory or UNKNOWN in directory:
            return
        recursive = any(option in ("-r", "-R", "--recursive", "-a", "--archive") or
                        (option[:2] != "--" and ("r" in option or "R" in option or "a" in option))
                        for option, _, _ in parsed.options)
        for word, index in sources[:64]:
            base = word.rstrip("/").rpartition("/")[2]
            if not base or base in (".", "..") or UNKNOWN in base:
                continue
            dest = directory.rstrip("/") + "/" + base
            if name == "mv":  # (moved: what it held goes with it, see known_content)
                inv.write(dest, at, True)
                continue
            inv.write(dest, at, recursive)
            inv.read(word, index, recursive)

    return model


_TEE_MODEL = MODELS.get("tee")


def model_tee(inv: Invocation) -> None:
    """tee: as files.py's model (its operands are written); what it writes there and to its
    output is its input (known input: the files' content is known, ``-a`` appends it)."""
    start = len(inv.walker.effects)
    if _TEE_MODEL is not None:
        _TEE_MODEL(inv)
    append = any(word in ("-a", "--append") or (word[:1] == "-" and word[1:2] != "-" and "a" in word)
                 for word in inv.argv[1:])
    text = inv.stdin.text
    for effect in inv.walker.effects[start:]:
        if effect.__class__ is Write:
            record_written(inv.walker, effect, text, append)
    if text is not None:
        inv.output(text)


#: an awk loop with no condition that ends it (``while (1)``, ``for (;;)``)
_AWK_FOREVER = re.compile(r"\b(?:while\s*\(\s*(?:[1-9][0-9]*|\"[^\"]+\")\s*\)|for\s*\(\s*;\s*;\s*\))")
_AWK_ENDS = re.compile(r"\b(?:exit|break|return|getline|nextfile|next)\b")
_AWK_MODELS = {name: MODELS.get(name) for name in ("awk", "gawk", "mawk", "nawk", "busybox-awk")}


def model_awk(inv: Invocation) -> None:
    """awk: as text.py's model; a program that loops forever printing (``BEGIN { while (1)
    print }``: no ``exit``, ``break`` or input that ends it) has endless output, which into a
    file fills the disk."""
    inner = _AWK_MODELS.get(inv.name)
    if inner is not None:
        inner(inv)
    parsed = parse_options(inv.argv, {"-F", "-v", "-f", "--field-separator", "--assign", "--file", "-e", "--source",
                                      "-i", "--include", "-l", "--load", "-E", "--exec"}, stop_at_first_positional=True)
    program = parsed.positionals[0][0] if parsed.positionals and not parsed.has(
        "-f", "--file", "-E", "--exec") else None
    if program is None or UNKNOWN in program or "print" not in program:
        return
    code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', program)  # (the strings' text is no code)
    if not _AWK_FOREVER.search(program) or _AWK_ENDS.search(code):
        return
    if stdout_to_file(inv):
        _fills(inv, f"`{inv.name}` loops forever printing to a file")
    else:
        from stockade.analyzer.models.pipefill import ENDLESS

        inv.output(None, ENDLESS + f"`{inv.name}`")


def model_jot(inv: Invocation) -> None:
    """jot [OPTIONS] [REPS [BEGIN [END [STEP]]]]: BSD's number printer; ``0`` repetitions print
    without end, which into a file fills the disk."""
    parsed = parse_options(inv.argv, {"-b", "-w", "-s", "-p"})
    if parsed.positionals and parsed.positionals[0][0] == "0":
        if stdout_to_file(inv):
            _fills(inv, "`jot 0` prints without end to a file")
        else:
            from stockade.analyzer.models.pipefill import ENDLESS

            inv.output(None, ENDLESS + "`jot`")


_COPIERS = ("cp", "base64", "xxd", "od", "hexdump", "strings", "seq", "tail")
if None in (_KILL_MODEL, _DD_MODEL, _YES_MODEL, _CAT_MODEL, _HEAD_MODEL, _TEE_MODEL) or any(
        name not in MODELS for name in _COPIERS):  # pragma: no cover
    raise ImportError("models.fresh wraps the models of files.py and system.py: import it after them")
register("kill", model_kill)
register("dd", model_dd)
register("fallocate", model_fallocate)
register("yes", model_yes)
register("cat", model_cat)
register("head", model_head)
register("tee", model_tee)
register("jot", model_jot)
for _name, _model in _AWK_MODELS.items():
    if _model is not None:
        register(_name, model_awk)
for _name in _COPIERS:
    register(_name, _endless_copier(_name))
register("cp", _into_directory("cp"))
register("install", _into_directory("install"))
register("mv", _into_directory("mv"))
