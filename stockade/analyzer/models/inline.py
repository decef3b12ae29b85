"""Inline code that only prints: ``python3 -c 'import sys; print(sys.version)'``, ``node -p
'process.version'``.

Code given to an interpreter on its command line cannot be seen into in general (the
``unknown-effects`` verdict), but a coding agent's everyday one-liners print a version, a value
of a JSON file or a computation, and harnesses run what is allowed without a sandbox.  A list
of modules is no bound (``platform.os``, ``dataclasses.builtins``, ``typing.get_type_hints``
evaluating text), so Python code is checked by an abstract run over its ``ast`` (parsed, never
run): listed modules used only through their listed names, builtins and functions only as
callees, values only through attributes that compute, files opened by literal names for
reading (the caller judges them as reads), no assignment in a loop, and an upper bound of the
size of every value, loop and name (a repetition, a width, a power past it may exhaust the
machine).  JavaScript is checked by its tokens: listed names, ``require`` of a literal, no
function, assignment or callback.  Anything else stays unknown.
"""

from __future__ import annotations

import re


def _names(*groups: str) -> frozenset[str]:
    """Dotted names from space-separated groups, each ``"MODULE: a b c"`` (→ ``MODULE.a`` …)."""
    names: set[str] = set()
    for group in groups:
        module, _, rest = group.partition(":")
        names.update(f"{module.strip()}.{name}" for name in rest.split())
    return frozenset(names)


#: Python modules a one-liner may import (the names of each it may use are listed below: a
#: module's other attributes include the modules it imported itself — ``platform.os``,
#: ``dataclasses.builtins`` — so a list of modules alone is no bound)
_PY_MODULES = frozenset({
    "sys", "json", "platform", "math", "datetime", "time", "string", "hashlib", "base64", "uuid", "textwrap",
    "random", "secrets", "statistics", "keyword", "calendar", "unicodedata", "zlib", "binascii", "html", "shlex",
    "collections", "importlib.metadata", "certifi", "ssl", "locale", "sysconfig", "pprint",
    "os", "os.path", "shutil", "multiprocessing", "site", "struct", "tomllib", "getpass", "pathlib",
    "re", "urllib.parse", "ast", "glob",
})
#: the functions and classes of those modules a one-liner may call (each only computes, or reads
#: what it describes of the interpreter and the machine: no host contacted, no file named by a
#: computed string, no code loaded, no sleep, nothing written).  ``platform.uname()``,
#: ``processor()`` and ``platform()`` run ``uname -p`` at most, a system program that only reads
#: (found through ``PATH``, whose changes are judged where they are made); ``architecture()``
#: runs ``file`` on a path it is given (not listed); ``shutil.which``, ``os.cpu_count`` only look
_PY_CALLS = _names(
    "sys: exit getdefaultencoding getfilesystemencoding getrecursionlimit getsizeof getswitchinterval",
    "sys.stdout: write flush", "sys.stderr: write flush", "sys.stdout.buffer: write", "sys.stderr.buffer: write",
    "sys.stdin: read readline readlines",
    "json: loads dumps load dump",
    "platform: python_version python_version_tuple python_implementation system machine release version node "
    "python_compiler python_build python_branch python_revision freedesktop_os_release mac_ver",
    "math: sqrt floor ceil log log2 log10 exp fabs sin cos tan asin acos atan atan2 hypot degrees radians trunc "
    "fsum isnan isinf isfinite isclose gcd lcm isqrt pow copysign fmod modf frexp dist erf gamma lgamma",
    "datetime: datetime date timedelta timezone",
    "datetime.datetime: now utcnow today fromisoformat fromtimestamp utcfromtimestamp strptime",
    "datetime.date: today fromisoformat fromtimestamp",
    "time: time time_ns strftime gmtime localtime monotonic perf_counter ctime asctime mktime process_time",
    "string: capwords",
    "hashlib: md5 sha1 sha224 sha256 sha384 sha512 sha3_224 sha3_256 sha3_384 sha3_512 blake2b blake2s",
    "base64: b64encode b64decode urlsafe_b64encode urlsafe_b64decode standard_b64encode standard_b64decode "
    "b32encode b32decode b16encode b16decode b85encode b85decode a85encode a85decode encodebytes decodebytes",
    "uuid: uuid4 uuid3 uuid5 UUID",
    "textwrap: dedent fill wrap shorten",
    "random: random randint randrange choice choices sample shuffle uniform gauss seed getrandbits randbytes "
    "triangular betavariate expovariate normalvariate",
    "secrets: token_hex token_bytes token_urlsafe choice randbelow randbits compare_digest",
    "statistics: mean median median_low median_high mode multimode stdev pstdev variance pvariance fmean "
    "geometric_mean harmonic_mean quantiles",
    "keyword: iskeyword", "calendar: isleap leapdays monthrange weekday",
    "unicodedata: name lookup category normalize numeric decimal digit bidirectional combining "
    "east_asian_width mirrored",
    "zlib: crc32 adler32 compress", "binascii: hexlify unhexlify crc32 b2a_hex a2b_hex b2a_base64 a2b_base64",
    "html: escape unescape", "shlex: quote split join", "collections: Counter OrderedDict",
    "importlib.metadata: version metadata requires", "certifi: where contents", "ssl: get_default_verify_paths",
    "locale: getpreferredencoding getlocale getencoding getdefaultlocale",
    "sysconfig: get_python_version get_platform get_paths get_path get_config_var get_config_vars "
    "get_scheme_names get_default_scheme",
    "pprint: pprint pformat pp",
    "platform: platform uname processor libc_ver",
    "os: listdir cpu_count getcwd getpid getppid getuid geteuid getgid getegid getlogin uname getenv getloadavg "
    "get_terminal_size",
    "os.path: join basename dirname splitext split normpath isabs expanduser commonpath commonprefix",
    "shutil: which disk_usage get_terminal_size", "multiprocessing: cpu_count",
    "site: getsitepackages getusersitepackages getuserbase", "struct: calcsize", "tomllib: load loads",
    "pathlib: Path PurePath PurePosixPath", "pathlib.Path: home cwd",  # (a path's methods that open, list or
    # change files are not listed: `Path.home().unlink()` is refused)
    "importlib.metadata: entry_points distributions packages_distributions", "getpass: getuser",
    "re: search match fullmatch findall split sub subn escape", "ast: parse dump literal_eval unparse",
    "urllib.parse: quote quote_plus unquote unquote_plus urlparse urlsplit urlunparse urlunsplit urljoin "
    "urlencode parse_qs parse_qsl",
)
#: the values of those modules a one-liner may read
_PY_VALUES = _names(
    "sys: version version_info platform executable argv path maxsize byteorder implementation prefix base_prefix "
    "exec_prefix base_exec_prefix hexversion api_version flags float_info int_info maxunicode platlibdir "
    "copyright builtin_module_names stdlib_module_names abiflags thread_info orig_argv stdout stderr stdin "
    "dont_write_bytecode pycache_prefix",
    "math: pi e tau inf nan", "datetime: MINYEAR MAXYEAR UTC", "datetime.timezone: utc",
    "time: timezone tzname altzone daylight",
    "string: ascii_letters ascii_lowercase ascii_uppercase digits hexdigits octdigits punctuation printable "
    "whitespace",
    "hashlib: algorithms_available algorithms_guaranteed",
    "uuid: NAMESPACE_DNS NAMESPACE_URL NAMESPACE_OID NAMESPACE_X500",
    "keyword: kwlist softkwlist", "calendar: month_name day_name month_abbr day_abbr",
    "unicodedata: unidata_version",
    "ssl: OPENSSL_VERSION OPENSSL_VERSION_INFO OPENSSL_VERSION_NUMBER HAS_SNI HAS_TLSv1_3",
    "os: sep name linesep pathsep curdir pardir extsep altsep devnull environ", "os.path: sep",
    "site: USER_SITE USER_BASE ENABLE_USER_SITE PREFIXES",
)
#: modules, classes and objects whose listed names are used through them (``sys.stdout``)
_PY_PREFIXES = frozenset(name.rpartition(".")[0] for name in (*_PY_CALLS, *_PY_VALUES)) | _PY_MODULES
#: builtins a one-liner may call (only as a callee: ``o = open`` would escape the checks on ``open``)
_PY_BUILTINS = frozenset({
    "print", "len", "str", "int", "float", "bool", "repr", "ascii", "sorted", "list", "dict", "tuple", "set",
    "frozenset", "min", "max", "sum", "abs", "round", "enumerate", "zip", "range", "reversed", "any", "all",
    "hex", "oct", "bin", "ord", "chr", "divmod", "hash", "format", "open", "bytes",
})
#: builtins whose result is a number (never a sequence to repeat)
_PY_NUMERIC = frozenset({"len", "int", "float", "bool", "abs", "round", "sum", "ord", "hash", "divmod"})
#: callables whose integer arguments are sizes of what they build (``range(n)``, ``bytes(n)``)
_PY_SIZED = frozenset({"range", "bytes", "random.getrandbits", "random.randbytes", "random.sample",
                       "secrets.token_hex", "secrets.token_bytes", "secrets.token_urlsafe", "secrets.randbits"})
#: attributes (and methods) of the values a one-liner computes — strings, numbers, lists and
#: dicts, files opened for reading, dates, digests, version tuples — that only read or compute
_PY_VALUE_ATTRS = frozenset({
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "join", "upper", "lower", "title",
    "capitalize", "casefold", "swapcase", "startswith", "endswith", "find", "rfind", "index", "rindex", "count",
    "replace", "partition", "rpartition", "encode", "decode", "isdigit", "isalpha", "isalnum", "isspace",
    "isupper", "islower", "isnumeric", "isdecimal", "isidentifier", "isascii", "isprintable", "istitle", "zfill",
    "ljust", "rjust", "center", "expandtabs", "removeprefix", "removesuffix", "hex", "format",
    "keys", "values", "items", "get", "hexdigest", "digest", "most_common", "total",
    "isoformat", "strftime", "year", "month", "day", "hour", "minute", "second", "microsecond", "weekday",
    "isoweekday", "timestamp", "date", "time", "tzinfo", "total_seconds", "days", "seconds", "astimezone",
    "utcoffset", "tzname", "ctime", "isocalendar",
    "major", "minor", "micro", "releaselevel", "serial", "name", "cache_tag", "urn", "cafile", "capath",
    "openssl_cafile", "openssl_capath", "read", "readline", "readlines", "real", "imag", "bit_length",
    "is_integer", "as_integer_ratio", "conjugate", "encoding",
    "system", "node", "release", "version", "machine", "processor", "used", "free",
    "group", "groups", "groupdict", "span", "start", "end",  # (a regular expression's match)
    "scheme", "netloc", "path", "query", "fragment", "hostname", "port", "username", "params",  # (a parsed URL)
})
#: of those, the attributes that are data, not methods (a method only where it is called)
_PY_DATA_ATTRS = frozenset({
    "year", "month", "day", "hour", "minute", "second", "microsecond", "tzinfo", "days", "seconds", "major",
    "minor", "micro", "releaselevel", "serial", "name", "cache_tag", "urn", "cafile", "capath", "openssl_cafile",
    "openssl_capath", "real", "imag", "encoding", "hex", "system", "node", "release", "version", "machine",
    "processor", "used", "free", "total", "scheme", "netloc", "path", "query", "fragment", "hostname", "port",
    "username", "params",
})
#: methods whose result can be longer than their receiver and arguments together
_PY_GROWING = {"replace": "product", "join": "product", "expandtabs": "magnitude", "zfill": "width",
               "ljust": "width", "rjust": "width", "center": "width", "encode": "fourfold", "strftime": "product",
               "format": "product"}
#: nominal size of what a one-liner reads at run time (a file, stdin): bounds are relative to it
_DATA = 10_000
#: the largest value (in characters or elements) a one-liner may build, the work a loop may do
#: and the memory all its names may hold: past them it may exhaust the machine's memory or time
_MAX_SIZE = 2_000_000
_MAX_WORK = 100_000_000
_MAX_HELD = 10_000_000
_HUGE = 10 ** 40  # (a magnitude not known: a number read at run time)
_MAX_CODE = 4000


class _Refused(Exception):
    """The code may do more than compute and print."""


class _Value:
    """What the check knows of a value: an upper bound of its size (characters, elements),
    of its magnitude (when it is an integer) and whether it may be a sequence."""

    __slots__ = ("magnitude", "sequence", "size")

    def __init__(self, size: int, magnitude: int = _HUGE, sequence: bool = True) -> None:
        self.size = size
        self.magnitude = magnitude
        self.sequence = sequence


#: a name bound to a module, class or function of the lists above (its dotted name)
_Api = str


def harmless_python(code: str, endless_input: bool = False) -> list[str] | None:
    """The files a Python one-liner ``code`` opens (by literal names) when it only imports
    listed modules, uses their listed names, computes values of bounded size and prints; None
    when it may do more (see :class:`_PythonCheck`), or when it reads its standard input and
    that never ends (``endless_input``: ``cat /dev/zero | python3 -c 'sys.stdin.read()'``
    holds all of it)."""
    if len(code) > _MAX_CODE or _unlisted_import(code):
        return None
    import ast

    try:
        tree = ast.parse(code)
        check = _PythonCheck()
        check.statements(tree.body, loop=False)
    except (_Refused, SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    if (endless_input and check.stdin) or check.foreign:
        return None  # (a module imported only to run it, `import evil`, runs code that cannot be seen)
    return check.opened


#: an ``import`` or ``from … import`` statement (at the start of the text or after ``;``, a
#: newline or a ``:``): the module names it imports
_IMPORT_RE = re.compile(r"(?:^|[;\n:])[ \t]*(?:import[ \t]+([\w. \t,]+)|from[ \t]+([\w.]+)[ \t]+import\b)")


#: the mark of a name bound to a module not in :data:`_PY_MODULES` (``import django``)
_FOREIGN = "\x00module:"
#: what a one-liner may read of such a module: its version and where it is
_FOREIGN_ATTRS = frozenset({"__version__", "__file__", "__path__", "__name__", "VERSION", "version", "__version_info__",
                            "version_info"})


def _unlisted_import(code: str) -> bool:
    """Whether ``code`` plainly imports names from a module not in :data:`_PY_MODULES` — which the
    check refuses wherever the statement is — found without parsing (a statement in a string
    literal is taken for one too: the strict side)."""
    if "import" not in code:
        return False
    # (`from X import y`: names of a module not listed; `import X` is checked as it is used)
    return any(match.group(1) is None and match.group(2) not in _PY_MODULES for match in _IMPORT_RE.finditer(code))


class _PythonCheck:
    """An abstract run of a one-liner over its syntax tree (never the code itself): each name is
    bound to a listed module or function, or to a value of which an upper bound of its size is
    known.  Only listed statements and expressions pass; a module is used only through its
    listed names; a builtin or module function only as a callee; a value only through listed
    attributes; no assignment inside a loop; every value, loop and name stays within the bounds
    above."""

    def __init__(self) -> None:
        self.names: dict[str, _Value | _Api] = {}
        self.opened: list[str] = []
        self.factor = 1  # how often the code being checked runs (the loops around it)
        self.held = 0
        self.parts = 0  # loops around it whose elements are parts of an iterable
        self.stdin = False  # whether it reads its standard input
        self.foreign: set[str] = set()  # modules not listed imported and not yet asked their version

    def measure(self, size: int) -> int:
        """A length measured of ``size``: inside a loop over an iterable's parts (whose sizes
        are counted once over the loop) any part may be all of it, so not known."""
        return _HUGE if self.parts else size

    # statements
    def statements(self, body: list, loop: bool) -> None:
        for statement in body:
            self.statement(statement, loop)

    def statement(self, node: object, loop: bool) -> None:
        import ast

        if isinstance(node, ast.Import) and not loop:
            for alias in node.names:
                if alias.name not in _PY_MODULES:
                    # an installed (or the project's own) package: its code runs as an installed
                    # program's does; only its version and location are read (_FOREIGN_ATTRS)
                    self.names[alias.asname or alias.name.partition(".")[0]] = _FOREIGN + alias.name
                    self.foreign.add(_FOREIGN + alias.name)
                    continue
                self.names[alias.asname or alias.name.partition(".")[0]] = \
                    alias.name if alias.asname else alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom) and not loop:
            if node.level or node.module not in _PY_MODULES:
                raise _Refused
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                self.stdin = self.stdin or dotted == "sys.stdin"
                if dotted in _PY_VALUES:
                    self.names[alias.asname or alias.name] = _Value(_DATA)
                elif dotted in _PY_CALLS or dotted in _PY_MODULES:
                    self.names[alias.asname or alias.name] = dotted
                else:
                    raise _Refused
        elif isinstance(node, ast.Expr):
            self.value(node.value)
        elif isinstance(node, (ast.Assign, ast.AugAssign)) and not loop:
            value = self.value(node.value if isinstance(node, ast.Assign) else
                               ast.BinOp(ast.Name(node.target.id, ast.Load()) if isinstance(node.target, ast.Name)
                                         else node.target, node.op, node.value))
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                self.bind(target, value)
        elif isinstance(node, ast.For) and not node.orelse:
            iterable = self.value(node.iter)
            saved = self.factor, self.parts
            self.factor *= max(iterable.size, 1)
            self.work(1)
            self.bind(node.target, self.element(node.iter, iterable), loop=True)
            self.statements(node.body, loop=True)
            self.factor, self.parts = saved
        elif isinstance(node, ast.If):
            self.value(node.test)
            before = dict(self.names)
            self.statements(node.body, loop)
            after_body, self.names = self.names, before
            self.statements(node.orelse, loop)
            for name, bound in after_body.items():  # (either branch may have run: the larger bound)
                other = self.names.get(name)
                if isinstance(bound, str) or isinstance(other, str):
                    if bound != other:
                        raise _Refused
                elif other is None or other.size < bound.size or other.magnitude < bound.magnitude:
                    self.names[name] = bound if other is None else _Value(
                        max(bound.size, other.size), max(bound.magnitude, other.magnitude),
                        bound.sequence or other.sequence)
        elif isinstance(node, ast.With):  # (`with open("F") as f: …`: the file opened, bound, the body run)
            for item in node.items:
                value = self.value(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, value, loop)
            self.statements(node.body, loop)
        elif not isinstance(node, ast.Pass):
            raise _Refused

    def bind(self, target: object, value: _Value, loop: bool = False) -> None:
        import ast

        if isinstance(target, ast.Name):
            self.names[target.id] = value
            if not loop:
                self.held += value.size
                if self.held > _MAX_HELD:
                    raise _Refused
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.bind(element.value if isinstance(element, ast.Starred) else element, value, loop)
        else:
            raise _Refused  # (an attribute or an item set: `sys.path[0] = …`, `x.y = …`)

    def work(self, size: int) -> None:
        """``size`` is within the bounds, run as often as the loops around it say."""
        if size > _MAX_SIZE or size * self.factor > _MAX_WORK:
            raise _Refused

    def element(self, node: object, iterable: _Value) -> _Value:
        """A bound of an element of ``iterable``: a number below a ``range``'s bound, else a part of
    the iterable (its size counted once over the loop, its length not known)."""
        import ast

        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" and \
                "range" not in self.names:
            return _Value(1, iterable.size, sequence=False)
        # (the elements share the iterable's size: one at a time is bounded by the work of the loop)
        self.parts += 1
        return _Value(1, _HUGE, True)

    # expressions
    def value(self, node: object) -> _Value:
        """The bound of expression ``node``'s value (refused: it may do more than compute)."""

        result = self._value(node)
        if isinstance(result, str):
            if result not in _PY_VALUES:
                raise _Refused  # (a module, a class or a function as a value: `x = open`, `hook=print`)
            result = _Value(_DATA)
        self.work(result.size)
        return result

    def _value(self, node: object) -> _Value | _Api:
        import ast

        if isinstance(node, ast.Constant):
            return _constant(node.value)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            bound = self.names.get(node.id)
            if bound is None:
                import builtins

                if node.id.startswith("_") or hasattr(builtins, node.id):
                    raise _Refused  # (a builtin as a value: `o = open`, `hook=print`; `__builtins__`)
                return _Value(1, 1, False)  # (a name the code never binds: the run stops there)
            return bound
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            return self.attribute(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            return self.binary(node)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            if isinstance(node.op, ast.Not):
                return _Value(1, 1, False)
            return _Value(operand.size + 1, operand.magnitude + 1, operand.sequence)
        if isinstance(node, ast.BoolOp):
            values = [self.value(child) for child in node.values]
            return _Value(max(v.size for v in values), max(v.magnitude for v in values),
                          any(v.sequence for v in values))
        if isinstance(node, ast.Compare):
            for child in (node.left, *node.comparators):
                self.value(child)
            return _Value(1, 1, False)
        if isinstance(node, ast.IfExp):
            self.value(node.test)
            body, orelse = self.value(node.body), self.value(node.orelse)
            return _Value(max(body.size, orelse.size), max(body.magnitude, orelse.magnitude),
                          body.sequence or orelse.sequence)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and isinstance(getattr(node, "ctx", ast.Load()),
                                                                            ast.Load):
            values = [self.value(child) for child in node.elts]
            return _Value(sum(v.size + 1 for v in values), max((v.magnitude for v in values), default=0))
        if isinstance(node, ast.Dict):
            values = [self.value(child) for child in (*[key for key in node.keys if key is not None],
                                                       *node.values)]
            return _Value(sum(v.size + 1 for v in values), max((v.magnitude for v in values), default=0))
        if isinstance(node, ast.Starred):
            return self.value(node.value)
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            container = self.value(node.value)
            self.value(node.slice)
            return _Value(container.size, container.magnitude, container.sequence)
        if isinstance(node, ast.Slice):
            for part in (node.lower, node.upper, node.step):
                if part is not None:
                    self.value(part)
            return _Value(1, 1, False)
        if isinstance(node, ast.JoinedStr):
            return self.formatted(node)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self.comprehension(node)
        raise _Refused  # (lambda, walrus, await, yield, …)

    def attribute(self, node: object) -> _Value | _Api:
        import ast

        assert isinstance(node, ast.Attribute)
        receiver = self._value(node.value)
        if isinstance(receiver, str) and receiver.startswith(_FOREIGN):
            if node.attr not in _FOREIGN_ATTRS:
                raise _Refused
            self.foreign.discard(receiver)
            return _Value(_DATA)
        if isinstance(receiver, str):  # (a module, class or function: its listed names only)
            dotted = f"{receiver}.{node.attr}"
            self.stdin = self.stdin or dotted == "sys.stdin"
            if dotted in _PY_CALLS or dotted in _PY_VALUES or dotted in _PY_PREFIXES:
                return dotted
            if receiver in _PY_VALUES:
                receiver = _Value(_DATA)
            else:
                raise _Refused
        if node.attr not in _PY_DATA_ATTRS:
            # (a method as a value is called by what it is given to, unchecked: `key="".zfill`,
            # `object_hook="{0.__class__}".format`)
            raise _Refused
        return _Value(receiver.size, _HUGE, True)

    def arguments(self, node: object) -> tuple[list[_Value], list[_Value]]:
        import ast

        assert isinstance(node, ast.Call)
        if any(keyword.arg is None for keyword in node.keywords):
            raise _Refused  # (`f(**options)`)
        return [self.value(argument) for argument in node.args], \
            [self.value(keyword.value) for keyword in node.keywords]

    def call(self, node: object) -> _Value:
        import ast

        assert isinstance(node, ast.Call)
        function = node.func
        if isinstance(function, ast.Name):
            bound = self.names.get(function.id)
            if bound is None and function.id in _PY_BUILTINS:
                return self.builtin(function.id, node)
            if not isinstance(bound, str) or bound not in _PY_CALLS:
                raise _Refused
            return self.api_call(bound, node)
        if not isinstance(function, ast.Attribute):
            raise _Refused  # (a computed callee: `f(x)()`, `items[0]()`)
        receiver = self._value(function.value)
        if isinstance(receiver, str):
            dotted = f"{receiver}.{function.attr}"
            if dotted in ("os.listdir", "glob.glob", "glob.iglob"):
                return self.listdir_call(node)
            if dotted in _PY_CALLS:
                return self.api_call(dotted, node)
            if receiver not in _PY_VALUES:
                raise _Refused
            receiver = _Value(_DATA)
        self.work(receiver.size)
        return self.method(function.attr, receiver, node)

    def builtin(self, name: str, node: object) -> _Value:
        import ast

        assert isinstance(node, ast.Call)
        if name == "open":
            return self.open_call(node)
        if name == "format" and not (len(node.args) < 2 or _literal_format(node.args[1], spec=True)):
            raise _Refused
        positional, keywords = self.arguments(node)
        sizes = sum(v.size + 1 for v in (*positional, *keywords))
        if name in _PY_SIZED:
            sizes += sum(v.magnitude for v in positional)
        if name == "len":
            return _Value(1, self.measure(sizes), False)
        if name in ("abs", "round", "min", "max"):
            return _Value(sizes, max((v.magnitude for v in positional), default=0), name in ("min", "max"))
        if name == "sum":
            return _Value(sizes, self.measure(sum(v.size * max(v.magnitude, 1) for v in positional)), False)
        if name == "ord":
            return _Value(1, 0x110000, False)
        if name == "int" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and \
                type(node.args[0].value) is int:
            return _constant(node.args[0].value)
        if name == "range":
            return _Value(sizes, max((v.magnitude for v in positional), default=0))
        if name in ("float", "bool"):
            return _Value(1, 1, False)
        if name == "format":
            sizes += sum(_widths(argument) for argument in node.args)
        grows = name in ("str", "repr", "ascii", "hex", "oct", "bin", "format")  # (escapes, digits)
        return _Value(4 * sizes if grows else sizes, _HUGE, name not in _PY_NUMERIC)

    def listdir_call(self, node: object) -> _Value:
        """``os.listdir()``, ``os.listdir("DIR")``: a read of the literal directory's names;
        ``glob.glob("PATTERN"[, recursive=True])``: of the names the literal glob matches."""
        import ast

        assert isinstance(node, ast.Call)
        if any(keyword.arg != "recursive" or not isinstance(keyword.value, ast.Constant) for keyword in node.keywords) \
                or len(node.args) > 1 or (node.args and not (
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))):
            raise _Refused
        self.opened.append(node.args[0].value if node.args else ".")  # type: ignore[attr-defined]
        return _Value(_DATA)

    def open_call(self, node: object) -> _Value:
        """``open("NAME"[, "r"])``: a read of the literal file (not a device: ``/dev/zero`` never ends)."""
        import ast

        assert isinstance(node, ast.Call)
        if not node.args or len(node.args) > 2 or not isinstance(node.args[0], ast.Constant) or \
                not isinstance(node.args[0].value, str) or node.args[0].value.startswith(("/dev/", "/proc/", "/sys/")):
            raise _Refused
        modes = [node.args[1]] if len(node.args) == 2 else []
        for keyword in node.keywords:
            if keyword.arg == "mode":
                modes.append(keyword.value)
            elif keyword.arg not in ("encoding", "errors") or not isinstance(keyword.value, ast.Constant):
                raise _Refused  # (`opener=`, `buffering=`, `file=`)
        if not all(isinstance(mode, ast.Constant) and mode.value in ("r", "rb", "rt") for mode in modes):
            raise _Refused
        self.opened.append(node.args[0].value)
        return _Value(_DATA)

    def api_call(self, dotted: str, node: object) -> _Value:
        import ast

        assert isinstance(node, ast.Call)
        positional, keywords = self.arguments(node)
        sizes = sum(v.size + 1 for v in (*positional, *keywords)) + sum(v.magnitude for v in keywords)
        if dotted in _PY_SIZED:
            sizes += sum(v.magnitude for v in positional)
        if dotted in ("json.load", "tomllib.load", "sys.stdin.read", "sys.stdin.readlines", "sys.stdin.readline"):
            return _Value(sizes + _DATA)  # (what it reads)
        if dotted == "time.strftime":
            sizes += sum(_widths(argument) for argument in node.args)
        if dotted in ("re.sub", "re.subn"):  # (each match of the text replaced: their product bounds it)
            product = 1
            for value in positional:
                product *= value.size + 1
            if product > _MAX_SIZE:
                raise _Refused
            return _Value(self.measure(product))
        return _Value(4 * sizes)  # (an encoding, an escape, a digest: a bounded multiple)

    def method(self, name: str, receiver: _Value, node: object) -> _Value:
        import ast

        assert isinstance(node, ast.Call)
        if name not in _PY_VALUE_ATTRS:
            raise _Refused  # (`sys.path.insert(0, DIR)`: a later import loads DIR's code)
        if name == "format" and not (isinstance(node.func, ast.Attribute) and _literal_format(node.func.value)):
            raise _Refused  # (`"{0.__class__}".format(x)` looks attributes up by the text)
        positional, keywords = self.arguments(node)
        arguments = (*positional, *keywords)
        sizes = receiver.size + sum(v.size + 1 for v in arguments)
        if name in ("format", "strftime"):
            sizes += _widths(getattr(node.func, "value", None)) + sum(_widths(argument) for argument in node.args)
        growth = _PY_GROWING.get(name)
        if growth == "product":
            sizes = (receiver.size + 1) * (1 + sum(v.size + 1 for v in arguments)) + sizes
        elif growth == "fourfold":  # (UTF-32)
            sizes *= 4
        elif growth == "width":
            sizes += sum(v.magnitude for v in arguments)
        elif growth == "magnitude":
            sizes *= 1 + sum(v.magnitude for v in arguments)
        if name in ("count", "find", "rfind", "index", "rindex", "bit_length"):
            return _Value(1, self.measure(receiver.size), False)
        return _Value(sizes)

    def binary(self, node: object) -> _Value:
        import ast

        assert isinstance(node, ast.BinOp)
        left, right = self.value(node.left), self.value(node.right)
        op = node.op
        if isinstance(op, ast.Mult):
            if not left.sequence and not right.sequence:
                return _Value(left.size + right.size, _product(left.magnitude, right.magnitude), False)
            size = (left.size * right.magnitude if left.sequence else 0) + \
                (right.size * left.magnitude if right.sequence else 0)
            return _Value(size, max(left.magnitude, right.magnitude), True)
        if isinstance(op, (ast.Pow, ast.LShift)):
            if left.sequence or right.sequence or right.magnitude > 100_000:
                raise _Refused
            bits = right.magnitude * max(left.magnitude, 1).bit_length() if isinstance(op, ast.Pow) else \
                max(left.magnitude, 1).bit_length() + right.magnitude
            if bits > 100_000:
                raise _Refused  # (`10**10**10` never finishes)
            magnitude = (left.magnitude ** right.magnitude if isinstance(op, ast.Pow) else
                         left.magnitude << right.magnitude) if bits < 140 else _HUGE
            return _Value(bits // 3 + 1, magnitude, False)
        if isinstance(op, ast.Mod) and left.sequence:
            if not (isinstance(node.left, ast.Constant) and isinstance(node.left.value, (str, bytes))):
                raise _Refused  # (a format not written in the code: its widths are not known)
            stars = right.magnitude if "*" in str(node.left.value) else 0  # (`"%*d" % (WIDTH, n)`)
            return _Value(left.size + right.size + stars + _widths(node.left), _HUGE, True)
        if isinstance(op, ast.Add):
            return _Value(left.size + right.size, left.magnitude + right.magnitude, left.sequence or right.sequence)
        if isinstance(op, ast.MatMult):
            raise _Refused
        return _Value(max(left.size, right.size), max(left.magnitude, right.magnitude) + 1,
                      left.sequence or right.sequence)

    def formatted(self, node: object) -> _Value:
        """An f-string: its parts; a width in a format spec (written or computed) is a size."""
        import ast

        assert isinstance(node, ast.JoinedStr)
        size = 0
        for part in node.values:
            if isinstance(part, ast.Constant):
                size += _constant(part.value).size
            elif isinstance(part, ast.FormattedValue):
                size += self.field(part, spec=False)
            else:
                raise _Refused
        self.work(size)
        return _Value(size)

    def field(self, node: object, spec: bool) -> int:
        """The size of an f-string's field (``{x:>{w}}``): its value, and the widths its format
        spec asks for, written or computed (a field inside a spec: its value is a width)."""
        import ast

        assert isinstance(node, ast.FormattedValue)
        value = self.value(node.value)
        size = value.size + (value.magnitude if spec else 0)
        if node.format_spec is not None:
            for part in node.format_spec.values:  # type: ignore[attr-defined]
                if isinstance(part, ast.FormattedValue):
                    size += self.field(part, spec=True)
                elif isinstance(part, ast.Constant):
                    size += _constant(part.value).size + _widths(part)
                else:
                    raise _Refused
        self.work(size)
        return size

    def comprehension(self, node: object) -> _Value:
        import ast

        assert isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp))
        saved_names, saved_factor, saved_parts = dict(self.names), self.factor, self.parts
        try:
            count = 1
            for generator in node.generators:
                if generator.is_async:
                    raise _Refused
                iterable = self.value(generator.iter)
                count *= max(iterable.size, 1)
                self.factor *= max(iterable.size, 1)
                self.work(1)
                self.bind(generator.target, self.element(generator.iter, iterable), loop=True)
                for condition in generator.ifs:
                    self.value(condition)
            elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            size = count * sum(self.value(element).size + 1 for element in elements)
        finally:
            self.names, self.factor, self.parts = saved_names, saved_factor, saved_parts
        return _Value(size)


def _constant(value: object) -> _Value:
    """A literal's bound: a string's length and the widths written in it (``"%0999999d"``)."""
    if isinstance(value, bool) or value is None or value is Ellipsis:
        return _Value(1, 1, False)
    if isinstance(value, int):
        return _Value(len(str(abs(value))) + 1 if value.bit_length() < 4000 else 2000, abs(value), False)
    if isinstance(value, (float, complex)):
        return _Value(1, 1, False)
    if isinstance(value, (str, bytes)):
        return _Value(len(value), 1, True)
    raise _Refused


def _widths(node: object) -> int:
    """A bound of the widths a format written in the code asks for (``"%0999999d"``,
    ``"{:>99999}"``, ``"%10000Y"``): a number of ``n`` digits may be ``10**n``; 0 when ``node``
    is not a literal string."""
    import ast

    if not isinstance(node, ast.Constant) or not isinstance(node.value, (str, bytes)):
        return 0
    text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
    longest = max((len(run) for run in re.findall(r"\d+", text)), default=0)
    return 10 ** longest if longest < 12 else _HUGE


def _product(left: int, right: int) -> int:
    return min(left * right, _HUGE)


def _literal_format(node: object, spec: bool = False) -> bool:
    """``node`` is a format string written in the code whose fields only number or name the
    arguments (no ``{0.attr}``, ``{0[key]}``, no nested width fields)."""
    import ast
    import string

    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return False
    if spec:
        return "{" not in node.value
    try:
        fields = list(string.Formatter().parse(node.value))
    except ValueError:
        return False
    return all(field is None or (not any(mark in field for mark in ".[") and "{" not in (format_spec or ""))
               for _, field, format_spec, _ in fields)


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
_JS_TOKEN = re.compile(r"""\s+|[A-Za-z_$][\w$]*|\d[\d.]*|"(?:[^"\\`$\n]|\\[^`$\n])*"|'(?:[^'\\`$\n]|\\[^`$\n])*'|"""
                       r"""[.,;()\[\]{}:+\-*/%<>=!?&|]""")
_JS_REQUIRE = re.compile(r"""\brequire\s*\(\s*(['"])([^'"]*)\1\s*\)""")
_JS_MODULES = frozenset({"os", "path", "util", "url", "node:os", "node:path", "node:util", "node:url"})
#: how a ``require`` of a file path starts (any other name is a package below ``node_modules``:
#: ``require("x.json")`` loads ``node_modules/x.json``, ``x.json.js`` or ``x.json/index.js``)
_JS_PATH_PREFIXES = ("./", "../", "/")
#: what node loads for ``require("P")`` when the file ``P`` does not exist, in its order: P with
#: each extension, then P as a directory (its package.json's ``main``, an index file)
JS_FALLBACKS = (".js", ".json", ".node", "/package.json", "/index.js", "/index.json", "/index.node")


#: listed functions that call a function given to them (a comparator, a reviver, a replacer):
#: handed a function the code only reads (``[a, b].sort(require)``, ``JSON.parse(s, require)``)
#: they would call it; the arguments each may have
_JS_CALLERS = {"sort": 0, "parse": 1, "stringify": 1, "Array": 0}
#: object keys a runtime calls on its own (``String(o)``, ``JSON.stringify(o)``): a function
#: read as their value (``{toJSON: process.kill}``) would be called with a key (``"-1"``)
_JS_IMPLICIT = frozenset({"toString", "valueOf", "toJSON", "then", "constructor", "__proto__", "get", "set",
                          "toLocaleString", "inspect"})
#: comparisons (what remains of ``=`` after them assigns: ``=``, ``+=``, ``>>=``, ``??=``)
_JS_COMPARISON = re.compile(r"[=!]==?|(?<![<>])[<>]=")


def harmless_javascript(code: str) -> list[str] | None:
    """The JSON files a JavaScript one-liner ``code`` reads by ``require`` when it only reads
    values (``process.version``, a JSON file) and prints them; None when it may do more.

    No functions (``=>``, ``function``, method bodies ``x() {…}``), no calls of a computed
    callee; ``require`` only of a literal name (a listed module or a JSON file by its path:
    ``./x.json``, not ``x.json``, a package); a name not
    listed only as a property read or an object key; no function handed to a listed one that
    calls it; no assignment; no ``Array(n)`` (a string of ``n`` copies)."""
    if len(code) > _MAX_CODE or "=>" in code or "function" in code or re.search(r"[\])]\s*\(|\)\s*\{", code):
        return None  # (no functions, no calls of a computed callee: `process["binding"](…)`)
    if "//" in code or "/*" in code or "*/" in code:
        return None  # (a comment: JavaScript does not read what follows as this check does)
    tokens = []
    position = 0
    for match in _JS_TOKEN.finditer(code):
        if match.start() != position:
            return None
        position = match.end()
        if not match.group().isspace():
            tokens.append((match.group(), match.start()))
    if position != len(code) or "=" in _JS_COMPARISON.sub("", "".join(
            token for token, _ in tokens if token[0] not in "'\"")):
        return None
    files = []
    for at, (token, start) in enumerate(tokens):
        previous = tokens[at - 1][0] if at else ""
        following = tokens[at + 1][0] if at + 1 < len(tokens) else ""
        if token == "/" and (previous in ("", "new") or not (previous[0].isalnum() or previous[0] in "_$)]")):
            return None  # (where an expression starts, `/` opens a regular expression: `/"/` hides what follows)
        if previous in ("{", ",") and following == ":" and (token.strip("'\"") in _JS_IMPLICIT or "\\" in token):
            return None
        if not (token[0].isalpha() or token[0] in "_$"):
            continue
        if token == "new" and not all(name in _JS_NAMES or name == "." for name, _ in _js_chain(tokens, at + 1)):
            return None  # (`new process.kill`: a function read, called)
        if token == "require":  # (only `require("NAME")`: `require("./ev" + "il")` runs a file)
            required = _JS_REQUIRE.match(code, start)
            if required is None:
                return None
            module = required.group(2)
            if "\\" in module:  # (an escape hides the name: `"~/.s\\x73h/x.json"`)
                return None
            if module.endswith(".json") and module.startswith(_JS_PATH_PREFIXES):
                files.append(module)
            elif module not in _JS_MODULES:
                return None
        elif token not in _JS_NAMES:
            key = previous in ("{", ",") and following == ":"  # (`{a: 1}`: a key, not a name read)
            # (a name not listed only as a property read: `require("./tsconfig.json").compilerOptions`)
            if not key and (previous != "." or token.startswith("_") or following == "("):
                return None
        if token in _JS_CALLERS and following == "(" and not _js_arguments(tokens, at + 1, _JS_CALLERS[token]):
            return None
    return files


def _js_chain(tokens: list[tuple[str, int]], start: int) -> list[tuple[str, int]]:
    """The names and dots from ``tokens[start]`` on (``Intl.DateTimeFormat`` after ``new``)."""
    chain = []
    for token, start_at in tokens[start:]:
        if token != "." and not (token[0].isalpha() or token[0] in "_$"):
            break
        chain.append((token, start_at))
    return chain


def _js_arguments(tokens: list[tuple[str, int]], opening: int, allowed: int) -> bool:
    """The call whose ``(`` is ``tokens[opening]`` has at most ``allowed`` arguments, or a
    second one that is ``null`` (``JSON.stringify(x, null, 2)``)."""
    depth = 0
    arguments: list[list[str]] = [[]]
    for token, _ in tokens[opening:]:
        if token in "([{":
            depth += 1
        elif token in ")]}":
            depth -= 1
            if depth == 0:
                break
        elif token == "," and depth == 1:
            arguments.append([])
            continue
        if depth >= 1 and not (depth == 1 and token == "("):
            arguments[-1].append(token)
    given = [argument for argument in arguments if argument]
    return len(given) <= allowed or (allowed == 1 and given[1] in (["null"], ["undefined"]))


def harmless_inline(name: str, code: str, endless_input: bool = False) -> list[str] | None:
    """The files the inline code of interpreter ``name`` reads when it only computes and
    prints (None: it may do more; ``endless_input``: its standard input never ends)."""
    if code.lstrip()[:1] in ("-", ""):  # (an option taken for the code: not a one-liner)
        return None
    if name.startswith(("python", "pypy")):
        return harmless_python(code, endless_input)
    if name in ("node", "nodejs"):
        return harmless_javascript(code)
    return None
