"""Inline code that only prints: ``python3 -c 'import sys; print(sys.version)'``, ``node -p
'process.version'``.

Code given to an interpreter on its command line cannot be seen into in general (the
``unknown-effects`` verdict), but a coding agent's everyday one-liners print a version, a value
of a JSON file or a computation.  Such code is recognised by its syntax — for Python by the
``ast`` of the text (parsed, never run), for JavaScript by its tokens — when it only imports
modules from a list of ones without side effects, calls functions that only compute, and prints;
files it opens by a literal name are reads (judged as such by the caller).  Anything else (an
import or a name not listed, attribute access to a dunder, ``eval``, ``getattr``, a write)
stays unknown.
"""

from __future__ import annotations

import re

#: Python modules whose functions only compute or describe the interpreter and the platform
_PY_MODULES = frozenset({
    "sys", "json", "platform", "math", "cmath", "datetime", "time", "re", "string", "decimal", "fractions",
    "statistics", "itertools", "functools", "collections", "random", "hashlib", "base64", "uuid", "textwrap",
    "pprint", "struct", "locale", "sysconfig", "keyword", "calendar", "operator", "unicodedata", "zlib",
    "binascii", "html", "secrets", "typing", "dataclasses", "enum", "numbers", "copy", "heapq", "bisect",
    "array", "ipaddress", "shlex", "difflib", "colorsys", "importlib.metadata", "ssl", "zoneinfo",
    "certifi",
})
#: names a one-liner may not use (they run, load or reach code and objects the text does not show)
_PY_FORBIDDEN = frozenset({
    "eval", "exec", "compile", "__import__", "getattr", "setattr", "delattr", "globals", "locals", "vars",
    "breakpoint", "input", "help", "memoryview", "exit", "quit", "modules", "system", "popen", "spawn",
    "fork", "remove", "unlink", "rmdir", "rename", "replace_file", "chmod", "chown", "kill", "mkdir",
    "makedirs", "symlink", "link", "truncate", "connect", "load_module", "import_module", "settrace",
    "setprofile", "addaudithook", "call_tracing", "load_extension", "enable_load_extension", "urlopen",
    "stdin_fd", "open_code", "dump", "backup", "iterdump", "main",
    # (objects reached by a name given as a string, past the checks on names: `attrgetter("__class__…")`,
    # `Formatter().get_field(…)`; code loaded by entry points; a host contacted)
    "attrgetter", "methodcaller", "Formatter", "get_field", "get_value", "get_server_certificate",
})
#: attributes of ``sys`` that decide where imports come from
_PY_IMPORT_STATE = frozenset({"path", "meta_path", "path_hooks", "path_importer_cache"})
_MAX_CODE = 4000


def harmless_python(code: str) -> list[str] | None:
    """The files a Python one-liner ``code`` opens (by literal names) when it only imports
    listed modules, computes and prints; None when it may do more."""
    if len(code) > _MAX_CODE:
        return None
    import ast

    try:
        tree = ast.parse(code)
        if not all(_python_statement(statement) for statement in tree.body):
            return None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return [node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call) and
            isinstance(node.func, ast.Name) and node.func.id == "open" and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)]


def _python_statement(node: object) -> bool:
    import ast

    if isinstance(node, ast.Import):
        return all(alias.name in _PY_MODULES for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and node.module in _PY_MODULES and all(
            alias.name != "*" and alias.name not in _PY_FORBIDDEN for alias in node.names)
    if isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return _python_expression(node)
    if isinstance(node, (ast.For, ast.If)):  # (no `while`: a loop without an end is not a one-liner's)
        return _python_expression(node.test if isinstance(node, ast.If) else node.iter) and all(
            _python_statement(child) for child in (*node.body, *node.orelse)) and (
            isinstance(node, ast.If) or _python_expression(node.target))
    return isinstance(node, ast.Pass)


def _import_state(node: object) -> bool:
    """Whether ``node`` is ``sys.path`` (or another attribute of ``sys`` deciding imports)."""
    import ast

    return isinstance(node, ast.Attribute) and node.attr in _PY_IMPORT_STATE and isinstance(node.value, ast.Name) \
        and node.value.id == "sys"


def _python_expression(node: object) -> bool:
    """Every name, attribute and call below ``node`` is allowed (see the module docstring)."""
    import ast

    for child in ast.walk(node):  # type: ignore[arg-type]
        if isinstance(child, ast.Name) and (child.id in _PY_FORBIDDEN or child.id.startswith("__")):
            return False
        if isinstance(child, ast.Attribute) and (child.attr in _PY_FORBIDDEN or child.attr.startswith("_")):
            return False
        if isinstance(child, ast.Attribute) and child.attr == "load" and not (
                isinstance(child.value, ast.Name) and child.value.id == "json"):
            return False  # (`EntryPoint.load()` imports and runs any installed module; `json.load` reads)
        if isinstance(child, (ast.Attribute, ast.Subscript)) and _import_state(child.value) and (
                isinstance(child, ast.Attribute) or not isinstance(child.ctx, ast.Load)):
            return False  # (`sys.path.insert(0, DIR)`, `sys.path[:0] = …`: a later import loads DIR's code)
        if isinstance(child, ast.Attribute) and _import_state(child) and not isinstance(child.ctx, ast.Load):
            return False  # (`sys.path = […]`)
        if isinstance(child, (ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
            return False
        if isinstance(child, ast.Call) and not isinstance(child.func, (ast.Name, ast.Attribute)):
            return False  # (a computed callee: `f(x)()`, `items[0]()`)
        if isinstance(child, ast.Constant) and isinstance(child.value, (str, bytes)) and (
                "__" in child.value if isinstance(child.value, str) else b"__" in child.value):
            return False  # (a dunder name as text, for whatever looks attributes up by name)
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id == "open":
            # a read of a file named by a literal (the caller judges the literal path)
            if not child.args or not isinstance(child.args[0], ast.Constant) or len(child.args) > 2:
                return False
            mode = child.args[1] if len(child.args) == 2 else next(
                (keyword.value for keyword in child.keywords if keyword.arg == "mode"), None)
            if mode is not None and not (isinstance(mode, ast.Constant) and mode.value in ("r", "rb", "rt")):
                return False
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and \
                child.func.attr in ("write", "writelines", "write_text", "write_bytes") and not (
                    isinstance(child.func.value, ast.Attribute) and child.func.value.attr in ("stdout", "stderr")):
            return False
    return True


#: JavaScript tokens of a one-liner that only prints (identifiers of values and pure functions)
_JS_NAMES = frozenset({
    "console", "log", "info", "error", "dir", "process", "version", "versions", "platform", "arch", "release",
    "execPath", "env", "argv", "JSON", "stringify", "parse", "Object", "keys", "values", "entries", "require",
    "length", "join", "Math", "max", "min", "floor", "ceil", "round", "Date", "now", "toISOString", "new",
    "Number", "String", "Boolean", "Array", "isArray", "toString", "toFixed", "name", "dependencies",
    "devDependencies", "scripts", "engines", "main", "type", "cpus", "totalmem", "freemem", "hostname",
    "homedir", "tmpdir", "EOL", "sep", "resolve", "basename", "dirname", "extname", "node", "v8", "uv",
    "modules", "openssl", "true", "false", "null", "undefined", "Intl", "DateTimeFormat", "resolvedOptions",
    "timeZone", "toUpperCase", "toLowerCase", "split", "trim", "slice", "sort", "size",
})
_JS_TOKEN = re.compile(r"""\s+|[A-Za-z_$][\w$]*|\d[\d.]*|"[^"\\`$]*"|'[^'\\`$]*'|[.,;()\[\]{}:+\-*/%<>=!?&|]""")
_JS_REQUIRE = re.compile(r"""\brequire\s*\(\s*(['"])([^'"]*)\1\s*\)""")
_JS_MODULES = frozenset({"os", "path", "util", "url", "node:os", "node:path", "node:util", "node:url"})


def harmless_javascript(code: str) -> list[str] | None:
    """The JSON files a JavaScript one-liner ``code`` reads by ``require`` when it only reads
    values (``process.version``, a JSON file) and prints them; None when it may do more."""
    if len(code) > _MAX_CODE or "=>" in code or "function" in code or re.search(r"[\])]\s*\(", code):
        return None  # (no functions, no calls of a computed callee: `process["binding"](…)`)
    files = []
    for match in _JS_REQUIRE.finditer(code):
        module = match.group(2)
        if module.endswith(".json"):
            files.append(module)
        elif module not in _JS_MODULES:
            return None
    position = 0
    previous = ""
    for match in _JS_TOKEN.finditer(code):
        if match.start() != position:
            return None
        token = match.group()
        position = match.end()
        # (a name not listed only as a property read: `require("./tsconfig.json").compilerOptions`)
        if (token[0].isalpha() or token[0] in "_$") and token not in _JS_NAMES and (
                previous != "." or token.startswith("_") or code[position:].lstrip()[:1] == "("):
            return None
        if not token.isspace():
            previous = token
    if position != len(code) or re.search(r"(?<![=!<>])=(?!=)", code):
        return None
    return files


def harmless_inline(name: str, code: str) -> list[str] | None:
    """The files the inline code of interpreter ``name`` reads when it only computes and
    prints (None: it may do more)."""
    if code.lstrip()[:1] in ("-", ""):  # (an option taken for the code: not a one-liner)
        return None
    if name.startswith(("python", "pypy")):
        return harmless_python(code)
    if name in ("node", "nodejs"):
        return harmless_javascript(code)
    return None
