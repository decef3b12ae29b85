"""The pre-check of Python one-liners (``_unlisted_import``) refuses only code the abstract
run over the ``ast`` refuses too: it may save the parse, never change an answer to allow."""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.analyzer.models import inline

_STATEMENTS = [
    "import sys", "import json, sys", "import shutil", "import ctypes", "import os.path", "import sys as s", "from json import loads",
    "from os import system", "from . import x", "import importlib.metadata", "print(sys.version)",
    "print('import shutil')", "x = 1", "if 1: import os", "import  math ,  subprocess", "from sysconfig import get_paths",
]


def _ast_refuses(code: str) -> bool:
    try:
        inline._PythonCheck().statements(ast.parse(code).body, loop=False)
    except (inline._Refused, SyntaxError, ValueError, NameError, AttributeError):
        return True
    return False


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_STATEMENTS), min_size=1, max_size=4), st.sampled_from([";", "\n", "; "]))
def test_precheck_refuses_only_what_the_walk_refuses(statements: list[str], separator: str) -> None:
    code = separator.join(statements)
    if inline._unlisted_import(code) and "'import" not in code:  # (a statement inside a string: strict on purpose)
        assert _ast_refuses(code), code


def test_precheck_cases() -> None:
    # (`import X` of a module not listed is checked as X is used: only its version or location)
    assert not inline._unlisted_import("import subprocess,os;subprocess.run(['x'])")
    assert inline.harmless_python("import subprocess,os;subprocess.run(['x'])") is None
    assert inline.harmless_python("import django; print(django.__version__)") == []
    assert inline.harmless_python("import evil") is None
    assert inline.harmless_python("import evil as e; print(e.__dict__)") is None
    assert inline._unlisted_import("import sys\nfrom subprocess import run")
    assert not inline._unlisted_import("import sys, json; print(sys.version)")
    assert not inline._unlisted_import("import importlib.metadata as m; print(m.version('x'))")
    assert inline.harmless_python("import sys; print(sys.version)") == []
    assert inline.harmless_python("import subprocess; subprocess.run(['id'])") is None
