"""Tools whose options carry code: ``gnuplot -e``, ``mix run -e``, ``nim --eval:``, ``xmake lua
-c``, ``scala-cli run -e``, ``php artisan tinker --execute``, ``sbt 'eval …'``, ``rename EXPR``,
``cargo watch -s`` (shell code), ``bazel run --run_under=…`` (a command line) …

Each row of :data:`CODE_OPTIONS` names the program, the subcommand the option belongs to (or
none), the option and what its value is: ``code`` in the tool's own language (code that cannot
be seen into; the paths and shell command lines written in it as literals are judged, as for
``python -c``), or ``shell`` (shell code, walked).  A value given as ``-`` or ``/dev/stdin`` is
code read from the standard input.  The tool's own model (or the default one) still judges the
rest of its arguments.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, default_model, register

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model

#: program → (subcommand or "", option, kind) rows; an option ending in ``:`` or ``=`` takes its
#: value attached only (``nim --eval:CODE``)
CODE_OPTIONS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "gnuplot": (("", "-e", "code"),),
    "mix": (("run", "-e", "code"), ("run", "--eval", "code")),
    "xmake": (("lua", "-c", "code"),),
    "nim": (("", "--eval:", "code"), ("", "-e:", "code")),
    "scala-cli": (("run", "-e", "code"), ("run", "--execute-script", "code"), ("run", "--execute-scala", "code")),
    "lein": (("run", "-e", "code"),),
    "cargo-watch": (("", "-s", "shell"), ("", "--shell", "shell"), ("", "-x", "cargo")),
    "cargo": (("watch", "-s", "shell"), ("watch", "--shell", "shell")),
    "php": (("artisan", "--execute", "code"),),
    "bazel bazelisk": (("run", "--run_under", "shell"), ("test", "--run_under", "shell")),
    "dotnet": (("fsi", "", "stdin"),),
    "jupyter": (("run", "", "stdin"),),
    "ant": (("", "-f", "stdin"), ("", "-buildfile", "stdin"), ("", "-file", "stdin")),
    "ninja": (("", "-f", "stdin"),),
    "deno": (("run", "", "stdin"),), "bun": (("run", "", "stdin"),),
    "java": (("", "--source", "java-source"),),
    "gcc g++ cc c++ clang clang++": (("", "-wrapper", "wrapper"),),
}
#: programs whose first operand is a Perl expression run on each name (``rename 's/a/b/' F…``)
PERL_EXPRESSION = frozenset({"rename", "prename", "perl-rename", "file-rename"})
_PLAIN_PERL = frozenset("s/y/tr!|#,{}[]()^$.*+?\\-_ 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _judge(inv: Invocation, kind: str, value: str, index: int, what: str) -> None:
    from stockade.analyzer.models.shells import named_paths

    if kind == "shell":
        inv.script(value, index, what=what)
    elif kind == "cargo":  # (`cargo watch -x 'run -- …'`: a cargo command line)
        from stockade.analyzer.words import shlex_split

        try:
            words = shlex_split(value)
        except ValueError:
            words = [UNKNOWN]
        inv.run(index, argv=["cargo", *words], spans=[inv.at(index)] * (len(words) + 1))
    elif kind == "wrapper":  # (`gcc -wrapper PROG,ARGS`: every tool of the driver runs through PROG)
        parts = [part for part in value.split(",") if part]
        inv.run(index, argv=parts, spans=[inv.at(index)] * len(parts))
    elif kind == "java-source":  # (`java --source 21 FILE`: the file after the version is the program)
        argv = inv.argv
        position = index + 2
        if position < len(argv) and (argv[position] in ("-", "/dev/stdin") or argv[position].startswith("/dev/fd/")):
            _judge(inv, "stdin", argv[position], position, what)
        return
    elif kind == "stdin" and value not in ("-", "/dev/stdin", "/dev/fd/0") and not value.startswith("/dev/fd/"):
        return
    else:
        source = inv.stdin.what if kind == "stdin" or value in ("-", "/dev/stdin") else None
        where = f"from {source}, which" if source else "that"
        inv.unknown(f"{what} runs code {where} cannot be seen into", index)
        text = inv.stdin.text if source else value
        if text is not None and UNKNOWN not in text:
            named_paths(inv, text, index)


def _with_code_options(name: str, inner: Model, rows: tuple[tuple[str, str, str], ...]) -> Model:
    def model(inv: Invocation) -> None:
        inner(inv)
        argv = inv.argv
        if name == "gnuplot" and inv.stdin.what != "the terminal" and \
                not any(not word.startswith("-") for word in argv[1:] if word not in ("-e",)) and "-e" not in argv:
            _judge(inv, "stdin", "-", 0, "`gnuplot`")  # (no script file: it reads its commands from the input)
        sub = next((word for word in argv[1:] if not word.startswith("-")), "")
        for wanted_sub, option, kind in rows:
            if wanted_sub and sub != wanted_sub:
                continue
            if not option:  # (the operand after the subcommand: `dotnet fsi /dev/stdin`)
                after = [(i, w) for i, w in enumerate(argv) if i > argv.index(sub)] if sub in argv else []
                operand = next(((i, w) for i, w in after if not w.startswith("-") or w == "-"), None)
                if operand is not None:
                    _judge(inv, kind, operand[1], operand[0], f"`{name} {sub}`")
                continue
            for index, word in enumerate(argv[1:], start=1):
                value: str | None = None
                if option[-1] in ":=" and word.startswith(option):
                    value = word[len(option):]
                elif word == option and index + 1 < len(argv):
                    value = argv[index + 1]
                elif option.startswith("--") and word.startswith(option + "="):
                    value = word[len(option) + 1:]
                if value is not None:
                    _judge(inv, kind, value, index, f"`{name} {option.rstrip(':=')}`")

    model.__doc__ = f"`{name}` as before, and the code its options carry ({', '.join(o for _, o, _ in rows)})"
    return model


def model_rename(inv: Invocation) -> None:
    """``rename 's/a/b/' FILE…`` (the Perl one): the expression is Perl code run for each name;
    one that is more than a substitution or transliteration cannot be seen into.  Each file is
    renamed (a write where it lies).  The util-linux ``rename FROM TO FILE…`` is judged the same
    way: a plain FROM is a harmless expression."""
    words = [(index, word) for index, word in enumerate(inv.argv[1:], start=1) if not word.startswith("-")]
    if not words:
        return
    index, expression = words[0]
    if UNKNOWN in expression or not set(expression) <= _PLAIN_PERL or ";" in expression:
        from stockade.analyzer.models.shells import named_paths

        inv.unknown(f"`{inv.name}` runs the Perl expression `{show(expression)[:60]}` for each name", index)
        if UNKNOWN not in expression:
            named_paths(inv, expression, index)
    for at, word in words[1:]:
        inv.write(word, at)


#: (program, the words that must follow it) → what it writes in home: tools that set up the shell
#: (its startup files), dotfile managers, and tools that write their own files there
HOME_WRITERS: dict[tuple[str, tuple[str, ...]], tuple[str, str]] = {
    ("conda", ("init",)): ("~/.bashrc", "`conda init` writes the shell's startup files"),
    ("mamba", ("init",)): ("~/.bashrc", "`mamba init` writes the shell's startup files"),
    ("micromamba", ("shell", "init")): ("~/.bashrc", "`micromamba shell init` writes the shell's startup files"),
    ("pipx", ("ensurepath",)): ("~/.bashrc", "`pipx ensurepath` writes the shell's startup files"),
    ("uv", ("tool", "update-shell")): ("~/.bashrc", "`uv tool update-shell` writes the shell's startup files"),
    ("pnpm", ("setup",)): ("~/.bashrc", "`pnpm setup` writes the shell's startup files"),
    ("volta", ("setup",)): ("~/.bashrc", "`volta setup` writes the shell's startup files"),
    ("opam", ("init",)): ("~/.profile", "`opam init` sets up the shell's startup files"),
    ("broot", ("--install",)): ("~/.bashrc", "`broot --install` writes the shell's startup files"),
    ("vault", ("-autocomplete-install",)): ("~/.bashrc", "`-autocomplete-install` writes the shell's startup files"),
    ("packer", ("-autocomplete-install",)): ("~/.bashrc", "`-autocomplete-install` writes the shell's startup files"),
    ("consul", ("-autocomplete-install",)): ("~/.bashrc", "`-autocomplete-install` writes the shell's startup files"),
    ("nomad", ("-autocomplete-install",)): ("~/.bashrc", "`-autocomplete-install` writes the shell's startup files"),
    ("vagrant", ("autocomplete", "install")): ("~/.bashrc", "`vagrant autocomplete install` writes the shell's "
                                                            "startup files"),
    ("activate-global-python-argcomplete", ()): ("~/.bash_completion", "argcomplete's global activation writes "
                                                                      "the shell's completion files"),
    ("chezmoi", ("apply",)): ("~", "`chezmoi apply` writes the dotfiles of home"),
    ("chezmoi", ("init",)): ("~/.local/share/chezmoi", "`chezmoi init` fetches a dotfiles repository (`--apply`: "
                                                      "writes them)"),
    ("chezmoi", ("update",)): ("~", "`chezmoi update` writes the dotfiles of home"),
    ("yadm", ("clone",)): ("~", "`yadm clone` checks out dotfiles into home"),
    ("vcsh", ("clone",)): ("~", "`vcsh clone` checks out dotfiles into home"),
    ("rcup", ()): ("~", "`rcup` links dotfiles into home"),
    ("home-manager", ("switch",)): ("~", "`home-manager switch` writes the dotfiles of home"),
    ("rustup", ("self", "uninstall")): ("~/.rustup", "`rustup self uninstall` deletes the toolchains in home"),
    ("cargo", ("login",)): ("~/.cargo/credentials.toml", "`cargo login` stores a registry token in home"),
    ("gh", ("alias", "set")): ("~/.config/gh/config.yml", "`gh alias set` writes gh's configuration (a `!` alias "
                                                          "is shell code gh runs later)"),
    ("docker", ("login",)): ("~/.docker/config.json", "`docker login` stores credentials in home"),
    ("lefthook", ("install",)): (".git/hooks", "`lefthook install` writes the repository's git hooks"),
    ("husky", ("install",)): (".git/hooks", "`husky install` points the repository's hooks at `.husky`"),
    ("xdg-mime", ("default",)): ("~/.config/mimeapps.list", "`xdg-mime default` changes which program opens a "
                                                           "kind of file"),
}
_HOME_WRITER_NAMES = frozenset(name for name, _ in HOME_WRITERS)


#: (program, words that must follow it) → the host the subcommand talks to (publishing to a
#: registry, fetching from one), or ``privilege:WHY`` for one that changes the system as root
SUBCOMMAND_EFFECTS: dict[tuple[str, tuple[str, ...]], str] = {
    ("cargo", ("publish",)): "crates.io", ("cargo", ("yank",)): "crates.io", ("cargo", ("owner",)): "crates.io",
    ("uv", ("publish",)): "upload.pypi.org", ("poetry", ("publish",)): "upload.pypi.org",
    ("hatch", ("publish",)): "upload.pypi.org", ("flit", ("publish",)): "upload.pypi.org",
    ("pdm", ("publish",)): "upload.pypi.org", ("deno", ("publish",)): "jsr.io",
    ("mix", ("hex.publish",)): "hex.pm", ("vsce", ("publish",)): "marketplace.visualstudio.com",
    ("ovsx", ("publish",)): "open-vsx.org", ("gem", ("push",)): "rubygems.org", ("dotnet", ("nuget", "push")):
    "api.nuget.org", ("cpan", ("-i",)): "www.cpan.org", ("cpanm", ()): "cpan.metacpan.org",
    ("makepkg", ("-si",)): "privilege:`makepkg -si` installs the package with `sudo pacman`",
    ("makepkg", ("-i",)): "privilege:`makepkg -i` installs the package with `sudo pacman`",
    ("yay", ("-S",)): "privilege:`yay -S` installs packages with `sudo pacman`",
    ("paru", ("-S",)): "privilege:`paru -S` installs packages with `sudo pacman`",
    ("nmcli", ("con", "mod")): "privilege:`nmcli con mod` changes the system's network settings",
    ("nmcli", ("connection", "modify")): "privilege:`nmcli connection modify` changes the system's network settings",
    ("resolvectl", ("dns",)): "privilege:`resolvectl dns` changes the system's name servers",
    ("resolvectl", ("domain",)): "privilege:`resolvectl domain` changes the system's name resolution",
    ("croc", ("send",)): "croc.schollz.com",
    ("s3cmd", ("put",)): "s3.amazonaws.com", ("s3cmd", ("sync",)): "s3.amazonaws.com",
    ("sendmail", ()): "unknown:`sendmail` sends mail to the addresses it is given, through the configured server",
    ("swaks", ()): "unknown:`swaks` sends mail through the server it finds or is given",
    ("docker", ("system", "prune")): "unknown:`docker system prune` deletes the engine's stopped containers, "
                                     "images and build cache",
}
_SUBCOMMAND_NAMES = frozenset(name for name, _ in SUBCOMMAND_EFFECTS)
#: options of these programs that take a value (skipped before the subcommand's words)
_LEADING_VALUES = frozenset({"--registry", "--token", "--index", "-r", "--repository", "--manifest-path", "-p",
                             "--package", "-u", "--username", "--password", "--publish-url", "--config"})


def _with_subcommand_effects(name: str, inner: Model) -> Model:
    def model(inv: Invocation) -> None:
        inner(inv)
        words = [word for word in inv.argv[1:] if not word.startswith("--")]
        for (program, head), effect in SUBCOMMAND_EFFECTS.items():
            if program != name or tuple(words[:len(head)]) != head:
                continue
            if effect.startswith("privilege:"):
                inv.privilege(effect[10:], 0)
                continue
            if effect.startswith("unknown:"):
                inv.unknown(effect[8:], 0)
                continue
            url = next((word.partition("=")[2] or "" for word in inv.argv if word.startswith("--publish-url=")), "")
            if url:
                from stockade.analyzer.models.net import contact_url

                contact_url(inv, url, 0, 443)
            else:
                inv.network(effect, 443, 0)

    model.__doc__ = f"`{name}` as before, and the registry its publishing subcommands contact"
    return model


#: options of a tool whose value is a file it writes (``write``), a directory it writes below
#: (``writer``) or a file it reads (``read``) — ones the tool's own model does not know
FILE_OPTIONS: dict[str, dict[str, str]] = {
    "pip pip3": {"--log": "write", "--log-file": "write", "--cache-dir": "writer", "--report": "write"},
    "cargo": {"--target-dir": "writer"},
    "deno": {"-o": "write", "--output": "write", "--env-file": "env-file"},
    "wget": {"--hsts-file": "write"},
    "git": {"--export-marks": "write", "--import-marks": "read", "--import-marks-if-exists": "read"},
}


def _with_file_options(name: str, inner: Model, roles: dict[str, str]) -> Model:
    def model(inv: Invocation) -> None:
        inner(inv)
        from stockade.analyzer.models import apply_role

        argv = inv.argv
        for index, word in enumerate(argv[1:], start=1):
            option, eq, value = word.partition("=")
            role = roles.get(option)
            if role is None or (option == "-o" and name == "deno" and "compile" not in argv):
                continue
            if role == "env-file":  # (`--env-file[=FILE]`: only ever attached; alone, `.env`)
                inv.read(value if eq else ".env", index)
                continue
            if not eq:
                if index + 1 >= len(argv):
                    continue
                value = argv[index + 1]
            apply_role(inv, role, value, index)
        if name == "cargo" and "vendor" in argv[1:]:  # (`cargo vendor DIR`: the sources are written there)
            at = argv.index("vendor")
            rest = [w for w in argv[at + 1:] if not w.startswith("-")]
            inv.write(rest[0] if rest else "vendor", at, recursive=True)
        if name == "git" and len(argv) > 1 and argv[1] == "credential-store":  # (`--file F`: the store)
            found = cwd_file(argv)
            inv.write(found or "~/.git-credentials", 1)

    model.__doc__ = f"`{name}` as before, and the files its options {', '.join(roles)} name"
    return model


def cwd_file(argv: list[str]) -> str | None:
    """The value of ``--file F`` (or ``--file=F``) in ``argv``."""
    for index, word in enumerate(argv):
        if word == "--file" and index + 1 < len(argv):
            return argv[index + 1]
        if word.startswith("--file="):
            return word[7:]
    return None


#: C preprocessor options whose value is a file it reads (and prints, with ``-E``)
_CC_FILES = frozenset({"-include", "-imacros", "--include"})
#: C preprocessor options that take a value (not a source file)
_CC_VALUES = frozenset({"-o", "-x", "-I", "-L", "-l", "-D", "-U", "-MF", "-MT", "-MQ", "-isystem", "-iquote",
                        "-idirafter", "-std", "-Xlinker", "-Xassembler", "-Xpreprocessor", "-T", "-e", "-arch",
                        "-target", "--target", "-mllvm", "-Xclang", "-iprefix", "-isysroot", "--sysroot", "-aux-info",
                        "-dumpdir", "-dumpbase", "-wrapper", "-B", "-specs"})
_INCLUDE = re.compile(r'^\s*#\s*(?:include|include_next|import|embed)\s*[<"]([^>"]+)[>"]', re.M)


def _included(inv: Invocation, text: str | None, index: int | None) -> None:
    """The files a known C source includes by an absolute (or home) path: read."""
    if text is None or UNKNOWN in text:
        return
    for included in _INCLUDE.findall(text)[:64]:
        if included.startswith(("/", "~")):
            inv.read(included, index)


def _with_sources(name: str, inner: Model) -> Model:
    def model(inv: Invocation) -> None:
        inner(inv)
        argv = inv.argv
        index = 1
        sources = 0
        while index < len(argv):
            word = argv[index]
            if word in _CC_FILES and index + 1 < len(argv):
                inv.read(argv[index + 1], index + 1)  # (`-include F`: F is read first, as if included)
                index += 2
                continue
            if word in _CC_VALUES:
                index += 2
                continue
            if word.startswith("@") and len(word) > 1:  # (`@FILE`: more options read from FILE)
                inv.read(word[1:], index)
            elif not word.startswith("-") and UNKNOWN not in word:  # (a source file: read, printed by -E)
                inv.read(word, index)
                sources += 1
                from stockade.analyzer.models.fresh import known_content, wrote_anything

                text = known_content(inv.walker, inv.path(word)) if wrote_anything(inv.walker) else None
                _included(inv, text, index)
            elif word == "-":  # (`cc -E - <<< '#include "F"'`)
                sources += 1
                _included(inv, inv.stdin.text, index)
            index += 1
        if not sources and name == "cpp":  # (cpp with no file reads its standard input)
            _included(inv, inv.stdin.text, None)

    model.__doc__ = f"`{name}` as before, and the source, response and included files it reads"
    return model


#: (program, words that must follow it) whose operands (or ``-connect``'s value) are hosts or
#: URLs contacted: a profile or a build context fetched, a database, a TLS or ssh server (psql:
#: see agenttools.libpq_target)
URL_OPERANDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "go": (("tool", "pprof"),), "docker": (("build",), ("import",), ("buildx", "build")),
    "podman": (("build",), ("import",)), "yarn": (("plugin", "import"),), "pgcli": ((),),
    "mysql": ((),), "pixi": (("add",),), "openssl": (("s_client",),), "ssh-keyscan": ((),),
    "resolvectl": (("query",),),
}


def _with_url_operands(name: str, inner: Model, heads: tuple[tuple[str, ...], ...]) -> Model:
    def model(inv: Invocation) -> None:
        inner(inv)
        from stockade.analyzer.models.net import contact_url

        argv = inv.argv
        words = [(index, word) for index, word in enumerate(argv[1:], start=1) if not word.startswith("-")]
        for head in heads:
            if tuple(word for _, word in words[:len(head)]) != head:
                continue
            for index, word in words[len(head):]:
                if "://" in word:  # (`psql postgresql://u@host/db`, `pixi add --pypi 'x @ https://…'`)
                    contact_url(inv, word.rpartition(" ")[2] if " @ " in word else word, index, 443)
                elif name in ("ssh-keyscan", "resolvectl") or (name == "openssl" and ":" in word and "/" not in word):
                    host, _, port = word.rpartition(":") if name == "openssl" else (word, "", "22")
                    inv.network(host.strip("[]").lower(), int(port) if port.isdigit() else None, index)
            for index, word in enumerate(argv[:-1]):
                if name == "openssl" and word == "-connect":  # (`s_client -connect HOST:PORT`)
                    host, _, port = argv[index + 1].rpartition(":")
                    inv.network((host or argv[index + 1]).strip("[]").lower(), int(port) if port.isdigit() else 443,
                                index + 1)

    model.__doc__ = f"`{name}` as before, and the hosts and URLs its operands name"
    return model


def model_npm_explore(inv: Invocation) -> None:
    """npm as before; ``npm explore PKG -- CMD``: CMD runs with the shell in the package's directory."""
    if _NPM is not None:
        _NPM(inv)
    argv = inv.argv
    if "explore" in argv[1:2] and "--" in argv:
        import shlex

        rest = argv[argv.index("--") + 1:]
        if rest:
            inv.script(rest[0] if len(rest) == 1 else shlex.join(rest), argv.index("--") + 1,
                       what="the command `npm explore` runs")


_NPM = MODELS.get("npm")


def model_curlie(inv: Invocation) -> None:
    """``curlie [CURL OPTIONS] URL [ITEMS]``: curl's options, judged as curl's."""
    inv.run(0, argv=["curl", *inv.argv[1:]], spans=list(inv.spans))


_SQL_OUTPUT = re.compile(r"\\(?:o|out|w|write|g)\s+(?!\|)(\S+)|\btee\s+([^\s;]+)|\\T\s*(\S+)", re.I)


def _with_sql_output(name: str, inner: Model) -> Model:
    def model(inv: Invocation) -> None:
        inner(inv)
        argv = inv.argv
        for index, word in enumerate(argv[:-1]):
            if word in ("-c", "--command", "-e", "--execute"):
                for match in _SQL_OUTPUT.finditer(argv[index + 1]):
                    inv.write(next(group for group in match.groups() if group), index + 1)

    model.__doc__ = f"`{name}` as before; `\\o FILE`, `\\w FILE`, `tee FILE` in its commands write FILE"
    return model


_CP = MODELS.get("cp")


def model_cp_links(inv: Invocation) -> None:
    """cp as before; ``cp -s``/``--symbolic-link`` and ``cp -l``/``--link`` make links, judged as
    ``ln -s``/``ln`` (later paths through them are their targets'); ``cp -P``/``-d``/``-a`` of a
    symlink this text made copies the link itself."""
    if _CP is not None:
        _CP(inv)
    argv = inv.argv
    flags = "".join(word[1:] for word in argv[1:] if word[:1] == "-" and word[1:2] != "-")
    longs = {word for word in argv[1:] if word.startswith("--")}
    operands = [word for word in argv[1:] if not word.startswith("-")]
    if len(operands) < 2:
        return
    symbolic = "s" in flags or "--symbolic-link" in longs
    hard = "l" in flags or "--link" in longs
    if symbolic or hard:
        inv.run(0, argv=["ln", *(["-s"] if symbolic else []), *operands],
                spans=[inv.at(0)] * (len(operands) + 1 + symbolic))
        return
    if "P" in flags or "d" in flags or "a" in flags or "--no-dereference" in longs or "--archive" in longs:
        links = inv.walker.state.links

        def unfollowed(word: str) -> str:  # (the path of the link itself: its last name not followed)
            head, _, name = word.rstrip("/").rpartition("/")
            return (inv.path(head or "/") if word.startswith("/") or head else inv.path(".")).rstrip("/") + "/" + name

        source = unfollowed(operands[0])
        if source in links:  # (the link is copied, not what it points to)
            links[unfollowed(operands[-1])] = links[source]


def model_hub(inv: Invocation) -> None:
    """``hub ARGS`` (GitHub's git wrapper): judged as ``git ARGS`` (its own subcommands talk to
    GitHub's API)."""
    inv.run(0, argv=["git", *inv.argv[1:]], spans=list(inv.spans))


_GIT = MODELS.get("git")


def model_git_subtree(inv: Invocation) -> None:
    """git as before; ``git subtree push|split --rejoin`` pushes like ``git push`` (the command
    rules on ``git push`` see it)."""
    if _GIT is not None:
        _GIT(inv)
    words = [(index, word) for index, word in enumerate(inv.argv[1:], start=1) if not word.startswith("-")]
    if len(words) >= 2 and words[0][1] == "subtree" and words[1][1] == "push":
        from stockade.analyzer.effects import Execute

        rest = [word for _, word in words[2:]]
        inv.walker.effects.append(Execute(("git", "push", *rest), inv.at(words[1][0])))


def model_direnv(inv: Invocation) -> None:
    """``direnv allow [DIR]``: the ``.envrc`` there (a file the agent can write) runs in every
    shell of the user's that enters the directory — code run later, outside any sandbox, that
    cannot be seen into; ``direnv exec DIR CMD`` runs CMD (see :mod:`.runners`)."""
    if _DIRENV is not None:
        _DIRENV(inv)
    words = [(index, word) for index, word in enumerate(inv.argv[1:], start=1) if not word.startswith("-")]
    if words and words[0][1] in ("allow", "permit", "grant"):
        inv.unknown("`direnv allow` lets the `.envrc` run in the user's shells whenever they enter the directory",
                    words[0][0])


_DIRENV = MODELS.get("direnv")


def _home_writes(name: str, inner: Model) -> Model:
    def model(inv: Invocation) -> None:
        inner(inv)
        words = [word for word in inv.argv[1:] if not word.startswith("--") or word == "--install"]
        for (program, head), (path, why) in HOME_WRITERS.items():
            if program == name and tuple(words[:len(head)]) == head:
                if path in ("~/.bashrc", "~/.profile", "~/.bash_completion"):  # (code every new shell runs)
                    inv.persistence(why, 0)
                inv.write(path, 0, recursive=True)

    model.__doc__ = f"`{name}` as before, and the files in home its setup subcommands write"
    return model


for _names, _rows in CODE_OPTIONS.items():
    for _name in _names.split():
        register(_name, _with_code_options(_name, MODELS.get(_name, default_model), _rows))
register(" ".join(PERL_EXPRESSION), model_rename)
for _name in _HOME_WRITER_NAMES:
    register(_name, _home_writes(_name, MODELS.get(_name, default_model)))
register("direnv", model_direnv)
for _name in _SUBCOMMAND_NAMES:
    register(_name, _with_subcommand_effects(_name, MODELS.get(_name, default_model)))
register("hub", model_hub)
register("git", model_git_subtree)
for _names, _roles in FILE_OPTIONS.items():
    for _name in _names.split():
        register(_name, _with_file_options(_name, MODELS.get(_name, default_model), _roles))
for _name in ("gcc", "g++", "cc", "c++", "clang", "clang++", "cpp", "tcc"):
    register(_name, _with_sources(_name, MODELS.get(_name, default_model)))
for _name, _heads in URL_OPERANDS.items():
    register(_name, _with_url_operands(_name, MODELS.get(_name, default_model), _heads))
register("npm", model_npm_explore)
register("curlie", model_curlie)
for _name in ("psql", "mysql", "mariadb"):
    register(_name, _with_sql_output(_name, MODELS.get(_name, default_model)))
for _alias in ("nc.openbsd", "nc.traditional", "netcat.openbsd", "netcat-openbsd"):
    if "nc" in MODELS:
        register(_alias, MODELS["nc"])
register("cp", model_cp_links)
