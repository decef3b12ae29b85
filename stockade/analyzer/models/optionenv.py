"""Variables that hold command-line options of one tool (``TAR_OPTIONS``, ``MAKEFLAGS``,
``ZIPOPT``, ``XZ_OPT``, ``PARALLEL`` …).

The tool reads the words of such a variable as if they came first on its command line, so
``TAR_OPTIONS=--to-command=sh tar xf a.tar`` is ``tar --to-command=sh xf a.tar``: the tool's
model judges the command with those words in place (their spans are the whole command's).
A value the analyzer does not know is an unknown effect: it may hold any option.
"""

from __future__ import annotations

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, register
from stockade.analyzer.models.devtools import env_value, split_words

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model

#: programs → the variables whose words are options of theirs, in the order the tool reads them
OPTION_ENV: dict[str, tuple[str, ...]] = {
    "tar gtar": ("TAR_OPTIONS",),
    "make gmake": ("GNUMAKEFLAGS", "MAKEFLAGS", "MFLAGS"),
    "zip": ("ZIPOPT",),
    "unzip": ("UNZIP", "UNZIPOPT"),
    "gzip": ("GZIP",),
    "xz": ("XZ_DEFAULTS", "XZ_OPT"),
    "bzip2": ("BZIP2", "BZIP"),
    "parallel": ("PARALLEL",),
    "grep egrep fgrep": ("GREP_OPTIONS",),
    "fzf": ("FZF_DEFAULT_OPTS",),
    "rg": ("RIPGREP_OPTIONS",),
    "bun": ("BUN_OPTIONS",),
    "mvn mvnw mvnd": ("MAVEN_ARGS",),
}
#: variables whose first word may be bare flag letters (``MAKEFLAGS=ks`` is ``-k -s``)
_LETTER_FLAGS = frozenset({"MAKEFLAGS", "GNUMAKEFLAGS", "MFLAGS"})
#: tools whose first argument may be an old-style key of bundled letters (``tar xf``)
_KEY_FIRST = frozenset({"tar", "gtar"})


def _with_options(model: Model, variables: tuple[str, ...]) -> Model:
    """``model`` run with the words of ``variables`` (when set) before the command's arguments."""

    def wrapped(inv: Invocation) -> None:
        words: list[str] = []
        for name in variables:
            value = env_value(inv, name)
            if value is None or not value.strip():
                continue
            split = split_words(value) if UNKNOWN not in value else None
            if split is None:
                inv.unknown(f"`{name}` holds options of `{inv.name}` that are not known (`{show(value)}`)", None)
                continue
            if name in _LETTER_FLAGS and split and split[0][:1] != "-" and "=" not in split[0]:
                split[0] = "-" + split[0]
            words.extend(split)
        if words:
            argv = inv.argv
            # (tar's old-style key `xf` must stay first, with its values after it: the options go last)
            at = len(argv) if inv.name in _KEY_FIRST and len(argv) > 1 and argv[1][:1] != "-" else 1
            inv.argv = [*argv[:at], *words, *argv[at:]]
            inv.spans = [*inv.spans[:at], *[inv.span] * len(words), *inv.spans[at:]]
        model(inv)

    wrapped.__doc__ = model.__doc__
    return wrapped


for _names, _variables in OPTION_ENV.items():
    for _name in _names.split():
        _model = MODELS.get(_name)
        if _model is not None:
            register(_name, _with_options(_model, _variables))
