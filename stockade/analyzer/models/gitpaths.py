"""More of what git touches, on top of :mod:`.vcs`'s model.

* ``git init`` with no directory creates ``.git`` in the current (or ``-C``) directory: outside
  the workspace that is a write there (``git -C ~/.ssh init``).
* ``git checkout-index --prefix=DIR/`` writes the checked-out files below DIR.
* A work tree given by ``--work-tree``/``GIT_WORK_TREE`` is read by the subcommands that
  compare or stage it (``status``, ``diff``, ``add``, ``commit -a``, ``stash``, ``grep``,
  ``ls-files``): its every file, secrets included.
* ``submodule update``/``init`` fetch the URLs ``.gitmodules`` lists: not visible when the same
  command wrote it (a fresh clone); ``clone --recurse-submodules`` fetches them too.
"""

from __future__ import annotations

from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, parse_options, register
from stockade.analyzer.models.vcs import _GLOBAL_VALUES, _below, _env

_GIT = MODELS.get("git")
#: subcommands that read the whole work tree
_READS_TREE = frozenset({"status", "diff", "add", "commit", "stash", "grep", "ls-files", "difftool"})


def model_git(inv: Invocation) -> None:
    """git: :mod:`.vcs`'s model, then the paths listed in the module docstring."""
    if _GIT is not None:
        _GIT(inv)
    argv = inv.argv
    if _OWN.isdisjoint(argv) and (_READS_TREE.isdisjoint(argv) or not _tree_possible(inv)):
        return  # (no subcommand handled below, and no work tree that one reads: no parse)
    parsed = parse_options(argv, _GLOBAL_VALUES, stop_at_first_positional=True)
    if not parsed.positionals:
        return
    repo = "."
    tree: str | None = None
    for option, value, _ in parsed.options:
        if value is None:
            continue
        if option == "-C":
            repo = value if repo == "." or value.startswith(("/", "~")) else repo.rstrip("/") + "/" + value
        elif option == "--work-tree":
            tree = _below(repo, value)
    if tree is None:
        tree = _env(inv, "GIT_WORK_TREE")
    sub, sub_index = parsed.positionals[0]
    rest = argv[sub_index + 1:]
    words = [word for word in rest if not word.startswith("-")]
    if sub == "init" and not words:
        path = inv.path(_below(repo, ".git"))
        workspace = inv.walker.context.workspace.rstrip("/") + "/"
        if path != workspace + ".git":  # (the project's own repository is git's to re-initialise)
            inv.write(path, sub_index, recursive=True)  # (`git -C .git/hooks init` writes into the hooks)
    elif sub == "checkout-index":
        for index, word in enumerate(rest, start=sub_index + 1):
            option, eq, value = word.partition("=")
            if option == "--prefix" and eq and value:
                target = value if value.endswith("/") else value.rpartition("/")[0] or "."
                inv.write(_below(repo, target), index, recursive=True)
    elif sub == "submodule" and words[:1] in (["update"], ["init"], ["sync"]):
        from stockade.analyzer.models.fresh import written_by

        producer = written_by(inv.walker, inv.path(_below(repo, ".gitmodules")))
        if producer is not None:
            inv.unknown(f"`git submodule {words[0]}` fetches the URLs `.gitmodules` lists, which {producer} wrote "
                        "earlier in this command: they are not visible", sub_index)
    elif sub == "filter-repo" and not any(word.startswith(("--target", "--dry-run", "--analyze")) for word in rest):
        # (it rewrites every ref and removes the `origin` remote: the repository's config changes)
        inv.write(_below(repo, ".git/config"), sub_index)
    elif sub == "clone" and any(word.startswith(("--recurse-submodules", "--recursive")) for word in rest):
        inv.unknown("`git clone --recurse-submodules` fetches the submodules the cloned `.gitmodules` lists, which "
                    "are not visible", sub_index)
    if tree is not None and sub in _READS_TREE:
        inv.read(tree, sub_index, recursive=True)


#: the subcommands :func:`model_git` handles whatever the work tree
_OWN = frozenset({"init", "checkout-index", "submodule", "clone", "filter-repo"})


def _tree_possible(inv: Invocation) -> bool:
    """Whether a work tree may be given: a ``--work-tree`` word or ``GIT_WORK_TREE`` set."""
    for word in inv.argv:
        if word[:11] == "--work-tree":
            return True
    return bool(inv.env or inv.walker.state.exported) and _env(inv, "GIT_WORK_TREE") is not None


register("git", model_git)
