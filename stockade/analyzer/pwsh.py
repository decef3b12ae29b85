"""PowerShell: parsing with tree-sitter-powershell and the walk of what the code runs.

**Parsing.**  :func:`parse_ps` hands the grammar UTF-8 bytes (a text that cannot be
encoded is refused: unparsable).  The grammar's blind spots, found by the property tests and
by hand, are guarded:

* a bare argument that starts with a variable and goes on (``cd $env:USERPROFILE\\ws``,
  ``rm $HOME/x``), valid PowerShell, is an ``ERROR`` to the grammar: the text is parsed again
  with such words in double quotes (an expandable string, which is what PowerShell makes of
  them), spans mapped back to the text as written;
* ``ERROR``/``MISSING`` nodes left after that: the ``unparsable`` verdict — and the tree is
  still walked, so what it shows is judged too.

**The walk.**  Every statement, pipeline, script block (``& { }``, ``. { }``,
``Invoke-Command -ScriptBlock``, ``ForEach-Object``, function bodies — walked where they are
written: a superset of what runs), ``$( )`` sub-expressions, and .NET method calls (file,
web client, process and registry methods modelled; see :data:`METHODS`).  Names are
case-insensitive; aliases (``rm``, ``del``, ``ri``, ``rd``, ``erase``, ``iwr``, ``irm``,
``curl``/``wget`` as in Windows PowerShell 5.1, ``cat``, ``gc``, ``sc``, ``ls``, ``gci``,
``cp``, ``mv``, ``ni``, ``md`` …) and module-qualified names map to the cmdlet; parameters
bind by any unambiguous prefix (``-Rec``, ``-fo``) and by position.  Variables assigned to
known values are tracked (``$x = "C:\\x"``, ``$env:X``); anything else is not known, and a
path that is not known is judged by ``unknown-effects``.  ``Invoke-Expression`` of known
text is parsed and walked; of anything else (a download, a variable) it is code that cannot
be seen into.  Native programs (``git``, ``cmd``, ``python``, ``curl.exe`` …) go to the same
models as from bash and CMD (:func:`~stockade.analyzer.models.windows.run_windows`).
"""

from __future__ import annotations

import contextlib
import re

from stockade.analyzer.effects import UNKNOWN, EnvChange, Execute, Unknown, Unparsable, clip, show
from stockade.analyzer.exec import TERMINAL, Invocation, Stdin
from stockade.analyzer.models import windows as win
from stockade.analyzer.models.net import contact_url
from stockade.analyzer.models.windows import run_windows, win_read, win_write
from stockade.analyzer.winpaths import windows_environment

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterator
    from typing import Any

    from stockade.analyzer.effects import SpanT

_PARSER: Any = None
_allocate = object.__new__
MAX_PS_CHARS = 1024 * 1024


def parser() -> Any:
    """The process's tree-sitter parser for PowerShell."""
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_powershell

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_powershell.language()))
    return _PARSER


class PsSource:
    """A parsed PowerShell text: the tree, and the map from its bytes to the text as written."""

    __slots__ = ("base", "byte_to_char", "collapse", "data", "text", "tree")

    def __init__(self, text: str, data: bytes, tree: Any, byte_to_char: list[int] | None, base: int,
                 collapse: SpanT | None):
        self.text = text
        self.data = data
        self.tree = tree
        self.byte_to_char = byte_to_char
        self.base = base
        self.collapse = collapse

    def offset(self, byte: int) -> int:
        table = self.byte_to_char
        if table is None:
            return byte
        return table[min(byte, len(table) - 1)]

    def span(self, node: Any) -> SpanT:
        if self.collapse is not None:
            return self.collapse
        return (self.base + self.offset(node.start_byte), self.base + self.offset(node.end_byte))

    def node_text(self, node: Any) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")


_VAR_BAREWORD = re.compile(r"(?<=[\s(,])(\$(?:env:)?[A-Za-z_][A-Za-z0-9_]*|\$\{[^}\n]*\})([\\/][^\s;|&)}'\"`,]*)")


def _quote_variable_words(text: str) -> tuple[str, list[int]] | None:
    """The text with each bare ``$var\\path`` argument in double quotes, and for each
    character of the new text the offset it came from; None when there is none."""
    matches = list(_VAR_BAREWORD.finditer(text))
    if not matches:
        return None
    out: list[str] = []
    where: list[int] = []
    last = 0
    for match in matches:
        out.append(text[last:match.start()])
        where.extend(range(last, match.start()))
        out.append('"' + match.group(0) + '"')
        where.append(match.start())
        where.extend(range(match.start(), match.end()))
        where.append(match.end() - 1)
        last = match.end()
    out.append(text[last:])
    where.extend(range(last, len(text)))
    return "".join(out), where


def _byte_map(text: str, where: list[int] | None) -> tuple[bytes, list[int] | None]:
    data = text.encode("utf-8", "surrogateescape")
    if len(data) == len(text) and where is None:
        return data, None
    table: list[int] = []
    for index, char in enumerate(text):
        origin = where[index] if where is not None else index
        table.extend([origin] * len(char.encode("utf-8", "surrogateescape")))
    end = (where[-1] + 1) if where else len(text)
    table.append(end)
    return data, table


def parse_ps(text: str, base: int = 0, collapse: SpanT | None = None) -> PsSource:
    """Parse PowerShell text (see the module docstring for the guards)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        pass  # lone surrogates: surrogateescape bytes below
    data, table = _byte_map(text, None)
    tree = parser().parse(data)
    if tree.root_node.has_error:
        repaired = _quote_variable_words(text)
        if repaired is not None:
            new_text, where = repaired
            new_data, new_table = _byte_map(new_text, where)
            new_tree = parser().parse(new_data)
            if not new_tree.root_node.has_error:
                return PsSource(text, new_data, new_tree, new_table, base, collapse)
    return PsSource(text, data, tree, table, base, collapse)


def first_error(node: Any) -> Any | None:
    """The first ``ERROR`` or ``MISSING`` node, or None."""
    if not node.has_error:
        return None
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_error or current.is_missing:
            return current
        if current.has_error:
            stack.extend(reversed(current.children))
    return node


# -- the command table -----------------------------------------------------------------------

#: alias → cmdlet (Windows PowerShell 5.1's aliases; ``curl``/``wget`` are its web aliases)
ALIASES = {
    "rm": "remove-item", "del": "remove-item", "ri": "remove-item", "rd": "remove-item", "erase": "remove-item",
    "rmdir": "remove-item", "iwr": "invoke-webrequest", "curl": "invoke-webrequest", "wget": "invoke-webrequest",
    "irm": "invoke-restmethod", "cat": "get-content", "gc": "get-content", "type": "get-content",
    "sc": "set-content", "ac": "add-content", "clc": "clear-content", "ls": "get-childitem", "gci": "get-childitem",
    "dir": "get-childitem", "cp": "copy-item", "copy": "copy-item", "cpi": "copy-item", "mv": "move-item",
    "move": "move-item", "mi": "move-item", "ni": "new-item", "mkdir": "new-item", "md": "new-item",
    "ren": "rename-item", "rni": "rename-item", "si": "set-item", "cli": "clear-item", "gi": "get-item",
    "cd": "set-location", "sl": "set-location", "chdir": "set-location", "pushd": "push-location",
    "popd": "pop-location", "iex": "invoke-expression", "icm": "invoke-command", "saps": "start-process",
    "start": "start-process", "ii": "invoke-item", "sp": "set-itemproperty", "gp": "get-itemproperty",
    "echo": "write-output", "write": "write-output", "%": "foreach-object", "foreach": "foreach-object",
    "?": "where-object", "where": "where-object", "sal": "set-alias", "nal": "new-alias", "sv": "set-variable",
    "set": "set-variable", "nv": "new-variable", "ipmo": "import-module", "sls": "select-string",
    "epcsv": "export-csv", "ipcsv": "import-csv", "tee": "tee-object", "kill": "stop-process", "spps": "stop-process",
    "sajb": "start-job", "gcm": "get-command", "rvpa": "resolve-path", "pwd": "get-location", "gl": "get-location",
    "cpp": "copy-itemproperty", "rp": "remove-itemproperty", "clp": "clear-itemproperty", "mp": "move-itemproperty",
    "rnp": "rename-itemproperty", "etsn": "enter-pssession", "nsn": "new-pssession", "oh": "out-host",
}
#: cmdlet → (positional parameters in order, {parameter: role}); roles as the bash models'
#: (``read``, ``write``, ``delete``, ``url``, ``code``, ``dest``, ``text``) plus ``switch``.
Param = dict[str, str]
CMDLETS: dict[str, tuple[tuple[str, ...], Param]] = {
    "remove-item": (("path",), {"path": "delete", "literalpath": "delete", "recurse": "switch", "force": "switch",
                                "include": "text", "exclude": "text", "filter": "text"}),
    "set-content": (("path", "value"), {"path": "write", "literalpath": "write", "value": "text", "encoding": "text"}),
    "add-content": (("path", "value"), {"path": "write", "literalpath": "write", "value": "text", "encoding": "text"}),
    "clear-content": (("path",), {"path": "write", "literalpath": "write"}),
    "out-file": (("filepath", "encoding"), {"filepath": "write", "literalpath": "write", "encoding": "text",
                                            "inputobject": "text", "append": "switch"}),
    "tee-object": (("filepath",), {"filepath": "write", "literalpath": "write", "variable": "text",
                                   "append": "switch"}),
    "export-csv": (("path",), {"path": "write", "literalpath": "write"}),
    "export-clixml": (("path",), {"path": "write", "literalpath": "write"}),
    "get-content": (("path",), {"path": "read", "literalpath": "read", "totalcount": "text", "tail": "text",
                                "encoding": "text", "raw": "switch", "wait": "switch"}),
    "import-csv": (("path",), {"path": "read", "literalpath": "read"}),
    "import-clixml": (("path",), {"path": "read", "literalpath": "read"}),
    "get-filehash": (("path",), {"path": "read", "literalpath": "read", "algorithm": "text"}),
    "select-string": (("pattern", "path"), {"pattern": "text", "path": "read", "literalpath": "read"}),
    "get-childitem": (("path", "filter"), {"path": "list", "literalpath": "list", "filter": "text",
                                           "include": "text", "exclude": "text", "recurse": "switch",
                                           "depth": "text"}),
    "get-item": (("path",), {"path": "list", "literalpath": "list"}),
    "test-path": (("path",), {"path": "list", "literalpath": "list"}),
    "resolve-path": (("path",), {"path": "list", "literalpath": "list"}),
    "get-acl": (("path",), {"path": "list", "literalpath": "list"}),
    "set-acl": (("path", "aclobject"), {"path": "write", "literalpath": "write", "aclobject": "text"}),
    "get-itemproperty": (("path", "name"), {"path": "regread", "literalpath": "regread", "name": "text"}),
    "set-itemproperty": (("path", "name", "value"), {"path": "regwrite", "literalpath": "regwrite", "name": "regname",
                                                     "value": "text", "type": "text"}),
    "new-itemproperty": (("path", "name", "value"), {"path": "regwrite", "literalpath": "regwrite", "name": "regname",
                                                     "value": "text", "propertytype": "text"}),
    "remove-itemproperty": (("path", "name"), {"path": "regwrite", "literalpath": "regwrite", "name": "regname"}),
    "new-item": (("path",), {"path": "create", "name": "name", "itemtype": "text", "value": "text",
                             "target": "linktarget", "force": "switch"}),
    "set-item": (("path", "value"), {"path": "write", "literalpath": "write", "value": "text"}),
    "clear-item": (("path",), {"path": "write", "literalpath": "write"}),
    "copy-item": (("path", "destination"), {"path": "read", "literalpath": "read", "destination": "dest",
                                            "recurse": "switch", "force": "switch", "container": "switch",
                                            "filter": "text", "include": "text", "exclude": "text"}),
    "move-item": (("path", "destination"), {"path": "move", "literalpath": "move", "destination": "dest",
                                            "force": "switch"}),
    "rename-item": (("path", "newname"), {"path": "move", "literalpath": "move", "newname": "newname",
                                          "force": "switch"}),
    "invoke-webrequest": (("uri",), {"uri": "url", "outfile": "write", "infile": "read", "method": "text",
                                     "body": "text", "headers": "text", "usebasicparsing": "switch",
                                     "proxy": "url", "contenttype": "text", "useragent": "text"}),
    "invoke-restmethod": (("uri",), {"uri": "url", "outfile": "write", "infile": "read", "method": "text",
                                     "body": "text", "headers": "text", "proxy": "url", "contenttype": "text"}),
    "start-bitstransfer": (("source", "destination"), {"source": "url", "destination": "write"}),
    "expand-archive": (("path", "destinationpath"), {"path": "read", "literalpath": "read",
                                                      "destinationpath": "writer", "force": "switch"}),
    "compress-archive": (("path", "destinationpath"), {"path": "readr", "literalpath": "readr",
                                                        "destinationpath": "write", "force": "switch",
                                                        "update": "switch"}),
    "send-mailmessage": ((), {"smtpserver": "host", "attachments": "read"}),
    "test-netconnection": (("computername",), {"computername": "host", "port": "text"}),
    "test-connection": (("targetname",), {"targetname": "host", "computername": "host"}),
}
#: cmdlets with no effect the policy describes (output, formatting, inspection)
HARMLESS = frozenset("""
write-output write-host write-verbose write-warning write-error write-debug write-information write-progress
out-null out-host out-string out-default select-object sort-object measure-object group-object format-table
format-list format-wide format-custom convertto-json convertfrom-json convertto-csv convertfrom-csv convertto-html
convertto-xml get-date get-process get-service get-command get-help get-member get-location get-variable
get-alias get-module get-psdrive get-host get-culture get-random get-uptime get-history get-job receive-job
wait-job remove-job get-computerinfo get-hotfix get-eventlog get-winevent get-netipaddress get-netadapter
compare-object select-xml join-path split-path convert-path get-unique new-timespan start-sleep read-host
clear-host get-executionpolicy get-package get-installedmodule find-module get-localuser get-localgroup
get-scheduledtask get-ciminstance get-wmiobject get-psreadlineoption get-error get-pscallstack test-json
new-guid get-filehash get-credential out-gridview measure-command trace-command get-itemproperty stop-process
wait-process get-counter get-timezone get-clipboard set-strictmode write-output format-hex get-childitem
""".split())
#: cmdlets that change the machine in ways only an administrator may (privilege)
PRIVILEGED = frozenset("""
set-service start-service stop-service restart-service suspend-service resume-service remove-service
new-localuser set-localuser add-localgroupmember remove-localgroupmember enable-localuser
format-volume clear-disk initialize-disk remove-partition new-partition set-disk set-mppreference
add-mppreference disable-computerrestore set-netfirewallprofile new-netfirewallrule set-netfirewallrule
remove-netfirewallrule enable-psremoting disable-windowsoptionalfeature enable-windowsoptionalfeature
install-windowsfeature set-itemproperty-unused add-windowscapability restart-computer stop-computer
set-processmitigation bcdedit set-timezone set-date
""".split())
#: cmdlets that install something that runs later (persistence)
PERSISTENT = frozenset("""
new-service register-scheduledtask set-scheduledtask register-scheduledjob new-scheduledtask
register-wmievent register-cimindicationevent set-wmiinstance new-ciminstance register-objectevent
register-engineevent new-psdrive-unused
""".split())
#: cmdlets that run code the analyzer cannot see
OPAQUE = frozenset("""
add-type invoke-item start-job-unused invoke-wmimethod invoke-cimmethod enter-pssession new-pssession
import-pssession invoke-asworkflow start-threadjob-unused install-module install-package install-script
update-module register-psrepository
""".split())

#: .NET methods with effects: lower-case name → role of each argument (``read``/``write``/
#: ``delete``/``url``/``code``/``run``/``env``/``reg``/``unknown``)
METHODS: dict[str, tuple[str, ...]] = {
    "delete": ("delete",), "writealltext": ("write",), "writeallbytes": ("write",), "writealllines": ("write",),
    "appendalltext": ("write",), "appendalllines": ("write",), "createtext": ("write",), "appendtext": ("write",),
    "openwrite": ("write",), "create": ("write",), "createdirectory": ("write",), "setattributes": ("write",),
    "setaccesscontrol": ("write",), "encrypt": ("write",), "decrypt": ("write",),
    "copy": ("read", "write"), "move": ("move", "write"), "replace": ("read", "write", "write"),
    "readalltext": ("read",), "readallbytes": ("read",), "readalllines": ("read",), "readlines": ("read",),
    "openread": ("read",), "opentext": ("read",),
    "downloadstring": ("url",), "downloaddata": ("url",), "downloadfile": ("url", "write"),
    "downloadstringasync": ("url",), "downloadfileasync": ("url", "write"), "uploadstring": ("url",),
    "uploaddata": ("url",), "uploadfile": ("url", "read"), "uploadvalues": ("url",), "getasync": ("url",),
    "getstringasync": ("url",), "postasync": ("url",), "putasync": ("url",), "sendasync": ("unknown",),
    "getbytearrayasync": ("url",), "getstreamasync": ("url",), "openreadasync": ("url",),
    "start": ("run", "args"), "setenvironmentvariable": ("env", "text", "scope"),
    "setvalue": ("reg",), "createsubkey": ("reg",), "deletesubkey": ("reg",), "deletesubkeytree": ("reg",),
    "deletevalue": ("reg",), "invoke": ("code",), "invokereturnasis": ("code",), "loadfrom": ("unknown",),
    "loadfile": ("unknown",), "load": ("unknown",), "run": ("run",), "exec": ("run",), "shellexecute": ("run",),
    "connect": ("unknown",), "beginconnect": ("unknown",),
}
_KNOWN_VARIABLES = {"true": "True", "false": "False", "null": "", "pshome": UNKNOWN}


def _canonical(name: str) -> str:
    """A command name as the tables know it: lower-case, without a module prefix."""
    low = name.lower()
    if "\\" in low and not low.startswith((".", "~")) and ":" not in low:
        module, _, rest = low.rpartition("\\")
        if module.startswith("microsoft.powershell") or module in ("microsoft.powershell.core",):
            low = rest
    return low


class PsRun:
    """One PowerShell text being walked: its variables, aliases, functions and output."""

    def __init__(self, walker: Any, src: PsSource, env: dict[str, str]):
        self.walker = walker
        self.src = src
        self.defaults = windows_environment(walker.context)
        self.env: dict[str, str] = {name.upper(): value for name, value in env.items()} if env else {}
        self.variables: dict[str, str] = {}
        self.aliases: dict[str, str] = {}
        self.functions: set[str] = set()
        #: the items the previous command of a pipeline passes on ((path, recursive); None: not
        #: known) and the items the command being run passes on (see :meth:`Call.generic`)
        self.items_in: list[tuple[str, bool]] | None = None
        self.items_out: list[tuple[str, bool]] | None = None

    # -- values -------------------------------------------------------------------------------
    def env_value(self, name: str) -> str:
        upper = name.upper()
        value = self.env.get(upper)
        if value is None:
            value = self.defaults.get(upper)
        return UNKNOWN if value is None else value

    def variable(self, text: str) -> str:
        """The value of a variable reference (``$x``, ``${x}``, ``$env:X``, ``$HOME``…)."""
        name = text.lstrip("$@")
        if name.startswith("{") and name.endswith("}"):
            name = name[1:-1]
        low = name.lower()
        if low.startswith("env:"):
            return self.env_value(name[4:])
        if low.startswith(("global:", "script:", "local:", "private:", "using:")):
            low = low.split(":", 1)[1]
        if low in self.variables:
            return self.variables[low]
        if low == "home":
            return self.env_value("USERPROFILE")
        if low == "profile":
            return self.env_value("USERPROFILE") + "/Documents/PowerShell/Microsoft.PowerShell_profile.ps1"
        if low == "pwd":
            return self.walker.state.cwd
        if low in _KNOWN_VARIABLES:
            return _KNOWN_VARIABLES[low]
        return UNKNOWN

    def value(self, node: Any) -> list[str]:
        """The values an argument node stands for (several for an array), walking the
        code inside it (sub-expressions, method calls)."""
        kind = node.type
        if kind in ("generic_token", "command_name", "simple_name", "path_command_name_token"):
            return [_unescape_bare(self.src.node_text(node))]
        if kind == "string_literal":
            return [self.string(node)]
        if kind in ("verbatim_string_characters", "expandable_string_literal", "verbatim_here_string_characters",
                    "expandable_here_string_literal"):
            return [self.string_part(node)]
        if kind == "variable":
            text = self.src.node_text(node)
            return [self.variable(text)]
        if kind in ("decimal_integer_literal", "hexadecimal_integer_literal", "real_literal", "integer_literal"):
            return [self.src.node_text(node)]
        if kind == "array_literal_expression":
            out: list[str] = []
            for child in node.named_children:
                out.extend(self.value(child))
            return out or [UNKNOWN]
        if kind in ("unary_expression", "argument_expression", "range_argument_expression",
                    "format_argument_expression", "multiplicative_argument_expression",
                    "additive_argument_expression", "comparison_argument_expression", "bitwise_argument_expression",
                    "logical_argument_expression", "range_expression", "format_expression",
                    "multiplicative_expression", "comparison_expression", "bitwise_expression", "logical_expression",
                    "pipeline_chain", "pipeline", "argument_expression_list"):
            named = node.named_children
            if len(named) == 1:
                return self.value(named[0])
            if kind in ("additive_expression", "additive_argument_expression") or (
                    len(named) == 3 and self.src.node_text(node.children[1]) == "+"):
                pass
            if kind in ("pipeline", "pipeline_chain") or kind == "argument_expression_list":
                self.walk(node)
                return [UNKNOWN]
            if kind == "array_literal_expression":
                return [v for c in named for v in self.value(c)]
            self.walk(node)
            return [UNKNOWN]
        if kind == "additive_expression":
            named = node.named_children
            if len(named) == 1:
                return self.value(named[0])
            if len(named) == 2 and self.src.node_text(node).count("+") == 1:
                left, right = self.value(named[0]), self.value(named[1])
                if len(left) == 1 and len(right) == 1:
                    return [left[0] + right[0]]
            self.walk(node)
            return [UNKNOWN]
        if kind in ("parenthesized_expression", "sub_expression", "array_expression"):
            inner = list(node.named_children)
            if len(inner) == 1 and inner[0].type in ("pipeline", "statement_list"):
                values = self.expression_values(inner[0])
                if values is not None:
                    return values
            self.walk(node)
            return [UNKNOWN]
        if kind == "script_block_expression":
            self.walk(node)
            return ["{" + self.src.node_text(node)[1:-1] + "}"]
        if kind == "invokation_expression":
            return [self.invocation_expression(node)]
        if kind == "cast_expression":
            named = node.named_children
            if named:
                return self.value(named[-1])
        self.walk(node)
        return [UNKNOWN]

    def expression_values(self, node: Any) -> list[str] | None:
        """The values of a parenthesised pipeline when it is a plain expression (no command)."""
        if node.type == "statement_list":
            named = node.named_children
            if len(named) != 1:
                return None
            node = named[0]
        if node.type != "pipeline":
            return None
        chains = node.named_children
        if len(chains) != 1 or chains[0].type != "pipeline_chain":
            return None
        parts = chains[0].named_children
        if len(parts) != 1:
            return None
        if parts[0].type == "command":
            joined = self.path_command(parts[0])
            return None if joined is None else [joined]
        return self.value(parts[0])

    def path_command(self, node: Any) -> str | None:
        """The value of ``Join-Path A B…`` / ``Resolve-Path A`` / ``Convert-Path A`` with known
        arguments (a path made from parts), else None (the command is then walked as any)."""
        name = next((c for c in node.children if c.type == "command_name"), None)
        if name is None or self.src.node_text(name).lower() not in ("join-path", "resolve-path", "convert-path"):
            return None
        elements = next((c for c in node.children if c.type == "command_elements"), None)
        parts: list[str] = []
        for element in (elements.named_children if elements is not None else ()):
            if element.type in ("command_argument_sep",):
                continue
            if element.type == "command_parameter":
                if self.src.node_text(element).lower().lstrip("-") not in ("path", "childpath", "literalpath",
                                                                           "additionalchildpath"):
                    return None
                continue
            values = self.value(element)
            if len(values) != 1:
                return None
            parts.append(values[0])
        if not parts or (len(parts) > 1 and self.src.node_text(name).lower() != "join-path"):
            return None
        return "\\".join(part.rstrip("\\/") if index < len(parts) - 1 else part
                          for index, part in enumerate(parts))

    def string(self, node: Any) -> str:
        named = node.named_children
        if len(named) == 1:
            return self.string_part(named[0])
        return self.string_part(node)

    def string_part(self, node: Any) -> str:
        text = self.src.node_text(node)
        kind = node.type
        if kind == "verbatim_string_characters":
            return text[1:-1].replace("''", "'") if len(text) >= 2 else text
        if kind == "verbatim_here_string_characters":
            return _here_body(text)
        if kind in ("expandable_string_literal", "expandable_here_string_literal"):
            here = kind == "expandable_here_string_literal"
            start = node.start_byte
            pieces: list[str] = []
            cursor = start
            data = self.src.data
            for child in node.named_children:
                pieces.append(data[cursor:child.start_byte].decode("utf-8", "surrogateescape"))
                if child.type == "variable":
                    pieces.append("\x01" + str(len(pieces)))
                    pieces[-1] = self.variable(self.src.node_text(child))
                else:
                    self.walk(child)
                    pieces.append(UNKNOWN)
                cursor = child.end_byte
            pieces.append(data[cursor:node.end_byte].decode("utf-8", "surrogateescape"))
            joined = "".join(pieces)
            body = _here_body(joined) if here else joined[1:-1]
            return _unescape_expandable(body)
        return text

    def invocation_expression(self, node: Any) -> str:
        """A .NET method call: the modelled methods' effects (:data:`METHODS`)."""
        children = node.children
        member = next((c for c in children if c.type == "member_name"), None)
        arguments = next((c for c in children if c.type == "argument_list"), None)
        target = children[0] if children else None
        if target is not None and target.type not in ("type_literal",):
            self.value(target) if target.is_named else None
        if member is None:
            return UNKNOWN
        method = self.src.node_text(member).lower()
        args: list[tuple[str, Any]] = []
        if arguments is not None:
            for item in _argument_items(arguments):
                values = self.value(item)
                args.append((values[0] if values else UNKNOWN, item))
        if method == "combine" and target is not None and "path" in self.src.node_text(target).lower() and args:
            return "\\".join(a.rstrip("\\/") for a, _ in args[:-1]) + ("\\" if len(args) > 1 else "") + args[-1][0]
        roles = METHODS.get(method)
        if roles is None:
            return UNKNOWN
        type_text = self.src.node_text(target).lower() if target is not None else ""
        inv = self.invocation(["." + method, *(a for a, _ in args)], [self.src.span(member),
                                                                      *(self.src.span(n) for _, n in args)])

        if (method in ("create", "invoke", "invokereturnasis") and "scriptblock" in type_text) or (
                method in ("invoke", "invokereturnasis")):
            code = args[0][0] if args else UNKNOWN
            if method == "create" and UNKNOWN not in code:
                run_ps_text(self.walker, code, inv.at(1), exact=True, env=self.env)
            else:
                inv.unknown("runs a script block made at run time", 0)
            return UNKNOWN
        if method == "create" and not any(t in type_text for t in ("file", "directory", "io.")):
            return UNKNOWN
        if method in ("copy", "move", "delete", "replace", "exists") and not any(
                t in type_text for t in ("file", "directory", "io.", "fileinfo")) and target is not None \
                and target.type == "type_literal":
            return UNKNOWN
        if method == "start" and "process" not in type_text:
            return UNKNOWN
        if method in ("load",) and "assembly" not in type_text:
            return UNKNOWN
        for position, (arg, _item) in enumerate(args):
            role = roles[min(position, len(roles) - 1)] if position < len(roles) else "text"
            index = position + 1
            if role == "delete":
                recursive = any(a.lower() == "true" for a, _ in args[1:])
                win.win_delete(inv, arg, index, recursive or "directory" in type_text)
            elif role == "write":
                win.win_write(inv, arg, index)
            elif role == "read":
                win.win_read(inv, arg, index)
            elif role == "move":
                if len(args) > 1:
                    win.win_rename(inv, arg, args[1][0], index)
                break
            elif role == "url":
                contact_url(inv, arg, index)
            elif role == "run":
                rest = " ".join(a for a, _ in args[1:])
                self.native_line(arg + (" " + rest if rest else ""), inv.at(index))
                break
            elif role == "env":
                scope = args[2][0].lower() if len(args) > 2 else "process"
                if "user" in scope or "machine" in scope or UNKNOWN in scope:
                    inv.persistence(f"sets the {scope} environment variable `{show(arg)}` for every later program",
                                    index)
                if "machine" in scope:
                    inv.privilege("changes the machine's environment", index)
                break
            elif role == "reg":
                win.registry_change(inv, arg, index, "changes")
                break
            elif role == "unknown":
                inv.unknown(f"`.{method}()` runs or loads code the analyzer cannot see", 0)
                break
        if not args and roles and roles[0] in ("unknown",):
            inv.unknown(f"`.{method}()` runs or loads code the analyzer cannot see", 0)
        return UNKNOWN

    def invocation(self, argv: list[str], spans: list[SpanT], stdin: Stdin = TERMINAL) -> Invocation:
        return Invocation(self.walker, argv, spans, stdin, {}, spans[0] if spans else (0, 0))

    def native_line(self, line: str, span: SpanT) -> None:
        """A Windows command line (``Start-Process`` arguments, ``Process.Start``) run as CMD parses it."""
        from stockade.analyzer.cmdshell import run_cmd_code

        if UNKNOWN in line.split(" ", 1)[0]:
            self.walker.effects.append(Unknown(f"runs a program that is not known before it runs (`{show(line)}`)",
                                               span))
            return
        run_cmd_code(self.walker, line, span, exact=False, env=self.env)

    # -- statements ----------------------------------------------------------------------------
    def walk(self, node: Any, stdin: Stdin = TERMINAL) -> Stdin | None:
        """Walk a node (statements in order; every child that can run code)."""
        walker = self.walker
        walker.step()
        kind = node.type
        if kind == "pipeline":
            return self.pipeline(node, stdin)
        if kind == "command":
            return self.command(node, stdin)
        if kind == "function_statement":
            name = next((c for c in node.children if c.type == "function_name"), None)
            if name is not None:
                self.functions.add(self.src.node_text(name).lower())
            for child in node.named_children:
                if child.type != "function_name":
                    self.walk(child)
            return None
        if kind == "invokation_expression":
            self.invocation_expression(node)
            return None
        if kind == "comment":
            return None
        if kind == "ERROR":
            for child in node.children:
                if child.is_named:
                    self.walk(child)
            return None
        output: Stdin | None = None
        walker.depth += 1
        try:
            from stockade.analyzer.walker import MAX_DEPTH

            if walker.depth > MAX_DEPTH * 4:
                walker.effects.append(Unparsable("nesting too deep to follow", self.src.span(node)))
                return None
            for child in node.named_children:
                output = self.walk(child)
        finally:
            walker.depth -= 1
        return output

    def pipeline(self, node: Any, stdin: Stdin) -> Stdin | None:
        named = node.named_children
        if named and named[0].type == "assignment_expression":
            self.assignment(named[0])
            return None
        if node.children and node.children[0].type == "assignment_expression":
            self.assignment(node.children[0])
            return None
        output: Stdin | None = None
        for child in named:
            if child.type == "pipeline_chain":
                output = self.chain(child, stdin)
            elif child.type == "assignment_expression":
                self.assignment(child)
            else:
                self.walk(child)
        return output

    def chain(self, node: Any, stdin: Stdin) -> Stdin | None:
        current: Stdin = stdin
        output: Stdin | None = None
        items: list[tuple[str, bool]] | None = None
        for child in node.children:
            if child.type == "|" or not child.is_named:
                continue
            self.items_in, self.items_out = items, None
            if child.type == "command":
                output = self.command(child, current)
                items = self.items_out
            elif child.type == "redirections" or child.type == "redirection":
                self.redirection(child)
                continue
            else:
                values = self.value(child)
                items = [(value, False) for value in values]
                known = [v for v in values if UNKNOWN not in v]
                output = Stdin("\n".join(values) + "\n", "a value") if len(known) == len(values) else Stdin(
                    None, "a value computed at run time")
            current = output or Stdin(None, "the output of the previous command")
        return output

    def assignment(self, node: Any) -> None:
        named = node.named_children
        if len(named) < 2:
            self.walk(node)
            return
        left, right = named[0], named[-1]
        target = self.src.node_text(left).strip()
        operator = next((self.src.node_text(c) for c in node.children if c.type == "assignement_operator"), "=")
        values = self.rhs_values(right)
        value = values[0] if len(values) == 1 else (" ".join(values) if values else UNKNOWN)
        if operator.strip() != "=":
            value = UNKNOWN
        match = re.fullmatch(r"\$\{?((?:env|global|script|local|private):)?([A-Za-z_][A-Za-z0-9_]*)\}?", target)
        if match is None:
            return
        scope, name = (match.group(1) or "").lower(), match.group(2)
        if scope == "env:":
            self.env[name.upper()] = value
            self.walker.effects.append(EnvChange(name, self.src.span(left)))
            if name.upper() in ("PATH", "PSMODULEPATH", "COMSPEC", "PATHEXT"):
                self.walker.effects.append(Unknown(f"`$env:{name}` changes where programs are found",
                                                   self.src.span(left)))
            return
        self.variables[name.lower()] = value

    def rhs_values(self, node: Any) -> list[str]:
        if node.type == "pipeline":
            values = self.expression_values(node)
            if values is not None:
                return values
            self.walk(node)
            return [UNKNOWN]
        return self.value(node)

    def redirection(self, node: Any) -> None:

        for child in ([node] if node.type == "redirection" else node.named_children):
            target = next((c for c in child.named_children if c.type == "redirected_file_name"), None)
            if target is None:
                continue
            words = [c for c in target.named_children if c.type != "command_argument_sep"]
            if not words:
                continue
            value = self.value(words[0])[0]
            if value.lower() in ("$null", "") or value == "" or self.src.node_text(words[0]).lower() == "$null":
                continue
            inv = self.invocation(["redirect", value], [self.src.span(child), self.src.span(words[0])])
            win_write(inv, value, 1)

    # -- commands ------------------------------------------------------------------------------
    def command(self, node: Any, stdin: Stdin) -> Stdin | None:
        """One command: its name, arguments (parameters and values) and redirections."""
        operator = None
        name_node = None
        elements: list[Any] = []
        for child in node.children:
            kind = child.type
            if kind == "command_invokation_operator":
                operator = self.src.node_text(child)
            elif kind in ("command_name", "command_name_expr", "path_command_name") and name_node is None:
                name_node = child
            elif kind == "command_elements":
                elements = [c for c in child.named_children if c.type != "command_argument_sep"]
            elif kind in ("redirections", "redirection"):
                self.redirection(child)
        for element in elements:
            if element.type in ("redirection", "redirections"):
                self.redirection(element)
        elements = [e for e in elements if e.type not in ("redirection", "redirections")]
        if name_node is None:
            for child in node.named_children:
                self.walk(child)
            return None
        # the name: a word, a string, a variable, a script block
        inner = name_node.named_children
        if name_node.type == "command_name_expr" and inner:
            target = inner[0]
            if target.type == "script_block_expression":
                self.walk(target, stdin)
                for element in elements:
                    self.value(element)
                return None
            if target.type == "command_name":
                name = _unescape_bare(self.src.node_text(target))
            else:
                values = self.value(target)
                name = values[0] if values else UNKNOWN
        else:
            name = _unescape_bare(self.src.node_text(name_node))
        args = self.arguments(elements)
        span = self.src.span(name_node)
        return self.run(name, args, span, stdin, operator)

    def arguments(self, elements: list[Any]) -> list[tuple[str, str, SpanT]]:
        """(kind ``param``/``value``/``splat``, text, span) of each argument; a parameter with an
        attached value (``-Path:x``) is a parameter then a value."""
        out: list[tuple[str, str, SpanT]] = []
        for element in elements:
            span = self.src.span(element)
            if element.type == "command_parameter":
                text = self.src.node_text(element)
                name, colon, _ = text.partition(":")
                out.append(("param", name, span))
                if colon:
                    attached = list(element.named_children)
                    values = self.value(attached[-1]) if attached else [UNKNOWN]
                    out.append(("attached", values[0] if values else UNKNOWN, span))
                continue
            if element.type == "variable" and self.src.node_text(element).startswith("@"):
                out.append(("splat", UNKNOWN, span))
                continue
            if element.type == "generic_token" and self.src.node_text(element) == "--%":
                out.append(("stop", "--%", span))
                continue
            for position, value in enumerate(self.value(element)):
                out.append(("value" if position == 0 else "more", value, span))
        return out

    def run(self, name: str, args: list[tuple[str, str, SpanT]], span: SpanT, stdin: Stdin,
            operator: str | None) -> Stdin | None:
        """Run a command by name (cmdlet, alias, function, script file or native program)."""
        walker = self.walker
        if UNKNOWN in name:
            walker.effects.append(Execute((name, *(a for _, a, _ in args)), span))
            walker.effects.append(Unknown(f"the command name `{show(name)}` is not known before it runs", span))
            return None
        canonical = _canonical(name)
        canonical = self.aliases.get(canonical, canonical)
        canonical = ALIASES.get(canonical, canonical)
        if canonical.endswith(".exe") and canonical[:-4] in ("powershell", "pwsh", "cmd"):
            canonical = canonical[:-4]
        if canonical in self.functions:
            walker.effects.append(Execute((name, *(a for _, a, _ in args)), span))
            return None
        low_name = canonical.replace("\\", "/")
        if low_name.endswith(".ps1") or (operator == "." and ("/" in low_name or "\\" in name)):

            walker.effects.append(Execute((name, *(a for _, a, _ in args)), span))
            inv = self.invocation([name], [span])
            win_read(inv, name, 0)
            inv.unknown(f"runs the script `{show(name)}`, whose code is not visible here", 0)
            return None
        model = _CMDLET_MODELS.get(canonical)
        if model is not None or canonical in CMDLETS or canonical in HARMLESS or canonical in PRIVILEGED \
                or canonical in PERSISTENT or canonical in OPAQUE:
            display = _display_name(canonical)
            argv = [display, *(a for kind, a, _ in args if kind != "attached")]
            walker.effects.append(Execute(tuple(argv), span))
            if name.lower() != canonical and name.lower() not in ("%", "?"):
                walker.effects.append(Execute((name, *argv[1:]), span))
            if any(kind == "splat" for kind, _, _ in args):
                walker.effects.append(Unknown(f"`{display}` gets parameters from a variable (splatting) that is "
                                              "not known", span))
            call = Call(self, canonical, args, span, stdin)
            if model is not None:
                return model(call)
            if canonical in CMDLETS:
                return call.generic()
            if canonical in PRIVILEGED:
                call.inv.privilege(f"`{display}` needs administrator rights", 0)
            elif canonical in PERSISTENT:
                call.inv.persistence(f"`{display}` installs something that runs later", 0)
            elif canonical in OPAQUE:
                call.inv.unknown(f"`{display}` runs code the analyzer cannot see into", 0)
            if canonical in ("write-output",):
                values = [a for kind, a, _ in args if kind == "value"]
                text = " ".join(values)
                return Stdin(text + "\n" if UNKNOWN not in text else None, "the output of `Write-Output`")
            return None
        # a native program (or an unknown cmdlet: judged by what is visible)

        argv = [name]
        spans = [span]
        for kind, text, arg_span in args:
            if kind == "attached" and len(argv) > 1:
                argv[-1] = argv[-1] + ":" + text
                continue
            if kind == "stop":
                continue
            argv.append(text)  # (an array's elements are separate arguments of a native program)
            spans.append(arg_span)
        run_windows(walker, argv, spans, stdin, dict(self.env), span)
        return None


class Call:
    """A cmdlet call: its arguments bound to parameter names (prefixes, positions)."""

    def __init__(self, run: PsRun, name: str, args: list[tuple[str, str, SpanT]], span: SpanT, stdin: Stdin):
        self.ps = run
        self.name = name
        self.span = span
        self.stdin = stdin
        params = CMDLETS.get(name, ((), {}))
        self.positions, self.roles = params
        self.bound: dict[str, list[tuple[str, int]]] = {}
        self.flags: set[str] = set()
        argv = [name]
        spans = [span]
        self.positional: list[tuple[str, int]] = []
        pending: str | None = None
        last_bound: list[tuple[str, int]] | None = None
        for kind, text, arg_span in args:
            if kind == "param":
                param = self.resolve_param(text[1:].lower())
                if self.roles.get(param) == "switch" or (param not in self.roles and not _takes_value(name, param)):
                    self.flags.add(param)
                    pending = None
                else:
                    pending = param
                    self.bound.setdefault(param, [])
                argv.append(text)
                spans.append(arg_span)
                continue
            argv.append(text)
            spans.append(arg_span)
            index = len(argv) - 1
            if kind == "more":  # another element of the array the previous value started
                if last_bound is not None:
                    last_bound.append((text, index))
                else:
                    self.positional.append((text, index))
                continue
            if kind == "attached":
                last = argv[-2][1:].lower() if len(argv) > 1 else ""
                param = self.resolve_param(last)
                if param in self.flags:
                    if text.lower() in ("false", "0", ""):
                        self.flags.discard(param)
                    continue
                self.bound.setdefault(param, []).append((text, index))
                pending = None
                continue
            if pending is not None:
                self.bound[pending].append((text, index))
                last_bound = self.bound[pending]
                pending = None
                continue
            last_bound = None
            self.positional.append((text, index))
        for position, (text, index) in zip(self.positions, list(self.positional), strict=False):
            if position in self.bound:
                continue
            self.bound.setdefault(position, []).append((text, index))
            self.positional.remove((text, index))
        self.inv = Invocation(run.walker, argv, spans, stdin, {}, span)

    def resolve_param(self, prefix: str) -> str:
        """The parameter an (abbreviated) name binds to; an ambiguous prefix binds to every
        candidate's first in the table (strict: a switch among them is set)."""
        if prefix in self.roles:
            return prefix
        aliases = _PARAMETER_ALIASES
        if prefix in aliases and (aliases[prefix] in self.roles or aliases[prefix] in ("whatif", "erroraction")):
            return aliases[prefix]
        candidates = [p for p in self.roles if p.startswith(prefix)]
        if len(candidates) >= 1:
            switches = [c for c in candidates if self.roles[c] == "switch"]
            return switches[0] if switches and len(candidates) > 1 and prefix.startswith("r") else candidates[0]
        return prefix

    def values(self, *names: str) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for name in names:
            out.extend(self.bound.get(name, ()))
        return out

    def generic(self) -> Stdin | None:
        """Apply the roles of :data:`CMDLETS` to the bound values."""

        inv = self.inv
        recursive = "recurse" in self.flags
        if "whatif" in self.flags:
            return None
        if self.name in ("get-childitem", "get-item", "resolve-path"):
            listed = self.values("path", "literalpath") or [(".", 0)]
            self.ps.items_out = [(path if self.name != "get-childitem" else path.rstrip("\\/") + "\\*",
                                  recursive) for path, _ in listed]
        first = self.positions[0] if self.positions else None
        if first is not None and self.roles.get(first) in ("delete", "write", "move", "read") \
                and not self.values(first, "literalpath") and self.stdin is not TERMINAL:
            # the paths come from the pipeline: the items the previous command passed on
            if self.ps.items_in is None:
                inv.unknown(f"`{_display_name(self.name)}` acts on objects from the pipeline, which are not known", 0)
            else:
                self.bound.setdefault(first, []).extend((path, 0) for path, _ in self.ps.items_in)
                recursive = recursive or any(deep for _, deep in self.ps.items_in)
        for param, values in self.bound.items():
            role = self.roles.get(param, "text")
            for value, index in values:
                if _provider_path(self, value, index, role):
                    continue
                if role == "delete":
                    win.win_delete(inv, value, index, recursive)
                elif role == "write":
                    win.win_write(inv, value, index)
                elif role == "writer":
                    win.win_write(inv, value, index, True)
                elif role == "read":
                    win.win_read(inv, value, index, recursive)
                elif role == "readr":
                    win.win_read(inv, value, index, True)
                elif role == "list":
                    win.win_read(inv, value, index)
                elif role == "url":
                    contact_url(inv, value, index)
                elif role == "host":
                    if UNKNOWN in value:
                        inv.unknown(f"contacts a host that is not known before it runs (`{show(value)}`)", index)
                    else:
                        inv.network(value, None, index)
                elif role == "dest":
                    win.win_write(inv, value, index, True)
                elif role == "move":
                    if self.name == "rename-item":
                        new = self.values("newname")
                        if not new:
                            continue
                        parent = re.split(r"[\\/]", value)[:-1]
                        dest_word = "\\".join(parent + [new[0][0]]) if parent else new[0][0]
                        win.win_rename(inv, value, dest_word, index)
                        continue
                    dest = self.values("destination")
                    win.win_rename(inv, value, dest[0][0] if dest else ".", index)
                elif role in ("regwrite",):
                    names = self.values("name")
                    win.registry_change(inv, value, index, "changes", names[0][0] if names else None)
        if self.name == "expand-archive" and not self.values("destinationpath"):
            win.win_write(inv, ".", None, True)
        if self.name in ("get-content", "invoke-webrequest", "invoke-restmethod"):
            what = "the content of a file" if self.name == "get-content" else "a download"
            return Stdin(None, what)
        return None


#: parameter aliases and the abbreviations PowerShell resolves for the modelled cmdlets
_PARAMETER_ALIASES = {"r": "recurse", "fo": "force", "f": "force", "lp": "literalpath", "pspath": "literalpath",
                      "fullname": "literalpath", "u": "uri", "o": "outfile", "rec": "recurse", "dest": "destination",
                      "fp": "filepath", "cn": "computername", "ea": "erroraction", "wi": "whatif"}


def _takes_value(cmdlet: str, param: str) -> bool:
    """Whether an unknown parameter of a cmdlet takes a value (common parameters do)."""
    return param in ("erroraction", "warningaction", "informationaction", "errorvariable", "outvariable",
                     "outbuffer", "pipelinevariable", "warningvariable", "informationvariable", "credential",
                     "encoding", "stream", "filter", "include", "exclude", "depth", "itemtype", "value", "name",
                     "type", "scope", "verb", "argumentlist", "workingdirectory", "filepath", "computername",
                     "scriptblock", "command", "executionpolicy", "displayname", "binarypathname", "action",
                     "trigger", "taskname", "principal", "settings", "inputobject", "startuptype", "description",
                     "user", "password", "runlevel", "redirectstandardoutput", "redirectstandardinput",
                     "redirectstandarderror", "windowstyle", "session", "argumentlist", "delimiter", "property")


def _provider_path(call: Call, value: str, index: int, role: str) -> bool:
    """A path on another PowerShell provider: the registry (``HKCU:\\…``) is judged as
    registry changes; ``env:``, ``variable:``, ``function:``, ``alias:`` have no file effect."""

    low = value.lower()
    if low.startswith(("hkcu:", "hklm:", "hkcr:", "hku:", "registry::", "hkey_", "microsoft.powershell.core\\registry")):
        if role in ("delete", "write", "writer", "dest", "move", "regwrite", "create"):
            names = call.values("name")
            win.registry_change(call.inv, value, index, "deletes" if role == "delete" else "changes",
                                names[0][0] if names else None)
        return True
    if low.startswith(("env:", "variable:", "function:", "alias:", "cert:", "wsman:")):
        if low.startswith("env:") and role in ("write", "delete", "create"):
            name = value[4:].lstrip("\\/")
            call.ps.walker.effects.append(EnvChange(name, call.inv.at(index)))
            if name.upper() in ("PATH", "PSMODULEPATH", "COMSPEC"):
                call.inv.unknown(f"`env:{name}` changes where programs are found", index)
        if low.startswith("function:") and role in ("write", "create"):
            call.ps.functions.add(value[9:].lstrip("\\/").lower())
        return True
    return role == "regread"


# -- cmdlets with a model of their own -------------------------------------------------------


def _new_item(call: Call) -> Stdin | None:
    """``New-Item PATH [-Name N] [-ItemType File|Directory|SymbolicLink|Junction|HardLink]
    [-Target|-Value T]``: writes PATH (or PATH\\N); a link's target is judged as a link."""
    from stockade.analyzer.effects import LinkTarget

    inv = call.inv
    paths = call.values("path") or [(".", None)]  # type: ignore[list-item]
    names = call.values("name")
    item_type = (call.values("itemtype") or [("file", 0)])[0][0].lower()
    for path, index in paths:
        if _provider_path(call, path, index, "create"):
            continue
        target = path if not names else path.rstrip("\\/") + "\\" + names[0][0]
        win.win_write(inv, target, index)
        if item_type in ("symboliclink", "junction", "hardlink"):
            for link_target, link_index in call.values("target", "value"):
                for resolved in win.paths(inv, link_target):
                    call.ps.walker.effects.append(LinkTarget(resolved, inv.at(link_index)))
    return None


def _location(call: Call) -> Stdin | None:
    """``Set-Location``/``Push-Location``/``Pop-Location``: the working directory."""
    from stockade.analyzer.winpaths import resolve_variants

    walker = call.ps.walker
    state = walker.state
    if call.name == "pop-location":
        if state.dirstack:
            state.cwd = state.dirstack[-1]
            state.dirstack = state.dirstack[:-1]
        return None
    values = call.values("path", "literalpath") or call.positional
    if not values:
        return None
    target = values[0][0]
    if target.lower().startswith(("hkcu:", "hklm:", "env:", "cert:", "variable:", "function:")):
        return None
    if call.name == "push-location":
        state.dirstack = [*state.dirstack, state.cwd]
    state.cwd = UNKNOWN if UNKNOWN in target else resolve_variants(walker, target)[0]
    return None


def _invoke_expression(call: Call) -> Stdin | None:
    """``Invoke-Expression TEXT`` / ``… | iex``: known text is walked as PowerShell; anything
    else is code that cannot be seen into."""
    values = call.values("command") or call.positional
    inv = call.inv
    if values:
        text = " ".join(v for v, _ in values)
        if UNKNOWN in text or (text.startswith("{") is False and not text.strip()):
            inv.unknown(f"`Invoke-Expression` runs code that is not known before it runs (`{clip(text)}`)", 1)
            return None
        run_ps_text(call.ps.walker, text, inv.at(values[0][1]), exact=True, env=call.ps.env)
        return None
    stdin = call.stdin
    if stdin.text is None or UNKNOWN in (stdin.text or ""):
        inv.unknown(f"`Invoke-Expression` runs code from {stdin.what}, which is not known before it runs", 0)
    else:
        run_ps_text(call.ps.walker, stdin.text, call.span, exact=False, env=call.ps.env)
    return None


def _invoke_command(call: Call) -> Stdin | None:
    """``Invoke-Command -ScriptBlock {…}`` (the block was walked where it is written);
    ``-ComputerName``/``-Session`` run it elsewhere; ``-FilePath`` runs a script."""

    inv = call.inv
    for name in ("computername", "session", "connectionuri", "vmname", "hostname", "containerid"):
        if name in call.bound or name in call.flags:
            inv.unknown(f"`Invoke-Command -{name}` runs code on another computer or session", 0)
    for path, index in call.values("filepath"):
        win.win_read(inv, path, index)
        inv.unknown(f"`Invoke-Command -FilePath` runs the script `{show(path)}`, whose code is not visible", index)
    for block, index in call.values("scriptblock") + call.positional:
        if not block.startswith("{"):
            inv.unknown("`Invoke-Command` runs a script block that is not known before it runs", index)
    return None


def _start_process(call: Call) -> Stdin | None:
    """``Start-Process FILE [-ArgumentList ARGS] [-Verb RunAs] [-WorkingDirectory D]``: FILE
    runs with ARGS (a command line: walked as CMD would run it); ``-Verb RunAs`` asks for
    administrator rights (privilege); other verbs open a file with its program (unknown)."""
    inv = call.inv
    files = call.values("filepath") or call.positional[:1]
    verb = (call.values("verb") or [("", 0)])[0][0].lower()
    if verb == "runas" or verb == UNKNOWN:
        inv.privilege("`Start-Process -Verb RunAs` runs a program with administrator rights",
                      call.values("verb")[0][1])
    elif verb not in ("", "open"):
        inv.unknown(f"`Start-Process -Verb {verb}` runs the program a file type is opened with", 0)
    if "credential" in call.bound:
        inv.privilege("`Start-Process -Credential` runs a program as another user", 0)
    if not files:
        return None
    program, index = files[0]
    args = call.values("argumentlist") or call.positional[1:]
    if "://" in program:

        contact_url(inv, program, index)
        return None
    line = _quote_program(program) + "".join(" " + a for a, _ in args)
    call.ps.native_line(line, inv.at(index))
    return None


def _execution_policy(call: Call) -> Stdin | None:
    """``Set-ExecutionPolicy POLICY [-Scope S]``: ``-Scope Process`` changes only this
    process; any other scope changes what later sessions run (persistence), the machine's
    (the default scope) needs administrator rights."""
    scope = (call.values("scope") or [("localmachine", 0)])[0][0].lower()
    if scope == "process":
        return None
    call.inv.persistence(f"`Set-ExecutionPolicy` for the scope `{scope}` (scripts later sessions may run)", 0)
    if scope == "localmachine":
        call.inv.privilege("`Set-ExecutionPolicy` for the whole machine", 0)
    return None


def _set_alias(call: Call) -> Stdin | None:
    """``Set-Alias NAME VALUE``: later uses of NAME run VALUE."""
    values = call.values("name") or call.positional[:1]
    targets = call.values("value") or call.positional[1:2]
    if len(call.positional) >= 2 and not call.values("name"):
        values, targets = call.positional[:1], call.positional[1:2]
    if values and targets:
        target = targets[0][0].lower()
        call.ps.aliases[values[0][0].lower()] = ALIASES.get(target, target)
    return None


def _set_variable(call: Call) -> Stdin | None:
    """``Set-Variable NAME VALUE``."""
    names = call.values("name") or call.positional[:1]
    values = call.values("value") or call.positional[1:2]
    if names:
        call.ps.variables[names[0][0].lower()] = values[0][0] if values else UNKNOWN
    return None


def _foreach(call: Call) -> Stdin | None:
    """``ForEach-Object``/``Where-Object``: the script blocks were walked where written;
    ``ForEach-Object -MemberName M``: a method by name (not known)."""
    if call.positional and not call.positional[0][0].startswith("{") and call.name == "foreach-object":
        method = call.positional[0][0]
        if method.lower() in METHODS:
            call.inv.unknown(f"`ForEach-Object {method}` calls a method on objects that are not known", 0)
    return Stdin(None, f"the output of `{_display_name(call.name)}`")


def _import_module(call: Call) -> Stdin | None:
    """``Import-Module PATH``: a module file runs (not visible); an installed module by name is
    not judged."""

    for value, index in call.values("name") + call.positional:
        if "\\" in value or "/" in value or value.lower().endswith((".psm1", ".ps1", ".dll", ".psd1")):
            win.win_read(call.inv, value, index)
            call.inv.unknown(f"`Import-Module` runs the code of `{show(value)}`, which is not visible here", index)
    return None


def _start_job(call: Call) -> Stdin | None:
    """``Start-Job``: the block was walked where written; ``-FilePath`` runs a script."""

    for path, index in call.values("filepath"):
        win.win_read(call.inv, path, index)
        call.inv.unknown(f"`Start-Job -FilePath` runs `{show(path)}`, whose code is not visible", index)
    return None


def _new_object(call: Call) -> Stdin | None:
    """``New-Object -ComObject X``: COM objects (``WScript.Shell``, ``Shell.Application``,
    ``Schedule.Service``) run programs and change the system: unknown effects."""
    com = call.values("comobject")
    if com or "comobject" in call.flags:
        name = com[0][0] if com else "…"
        if name.lower() in ("schedule.service",):
            call.inv.persistence(f"`New-Object -ComObject {name}` (scheduled tasks)", 0)
        else:
            call.inv.unknown(f"`New-Object -ComObject {name}` can run programs the analyzer cannot see", 0)
    return None


def _write_output(call: Call) -> Stdin | None:
    values = [v for v, _ in call.positional] + [v for v, _ in call.values("inputobject")]
    text = " ".join(values)
    return Stdin(text + "\n" if UNKNOWN not in text else None, "the output of `Write-Output`")


_CMDLET_MODELS: dict[str, Callable[[Call], Stdin | None]] = {
    "new-item": _new_item, "set-location": _location, "push-location": _location, "pop-location": _location,
    "invoke-expression": _invoke_expression, "invoke-command": _invoke_command, "start-process": _start_process,
    "set-executionpolicy": _execution_policy, "set-alias": _set_alias, "new-alias": _set_alias,
    "set-variable": _set_variable, "new-variable": _set_variable, "foreach-object": _foreach,
    "where-object": _foreach, "import-module": _import_module, "start-job": _start_job,
    "start-threadjob": _start_job, "new-object": _new_object, "write-output": _write_output,
}
CMDLETS.update({
    "invoke-expression": (("command",), {"command": "text"}),
    "invoke-command": (("scriptblock",), {"scriptblock": "text", "computername": "text", "filepath": "text",
                                          "session": "text", "argumentlist": "text", "asjob": "switch"}),
    "start-process": (("filepath", "argumentlist"), {"filepath": "text", "argumentlist": "text", "verb": "text",
                                                      "workingdirectory": "text", "wait": "switch",
                                                      "nonewwindow": "switch", "passthru": "switch",
                                                      "windowstyle": "text", "credential": "text",
                                                      "redirectstandardoutput": "write",
                                                      "redirectstandardinput": "read",
                                                      "redirectstandarderror": "write", "loaduserprofile": "switch"}),
    "set-executionpolicy": (("executionpolicy",), {"executionpolicy": "text", "scope": "text", "force": "switch"}),
    "set-alias": (("name", "value"), {"name": "text", "value": "text", "scope": "text", "option": "text"}),
    "new-alias": (("name", "value"), {"name": "text", "value": "text", "scope": "text", "option": "text"}),
    "set-variable": (("name", "value"), {"name": "text", "value": "text", "scope": "text"}),
    "new-variable": (("name", "value"), {"name": "text", "value": "text", "scope": "text"}),
    "foreach-object": (("process",), {"process": "text", "begin": "text", "end": "text", "membername": "text",
                                      "parallel": "text"}),
    "where-object": (("filterscript",), {"filterscript": "text", "property": "text"}),
    "import-module": (("name",), {"name": "text", "force": "switch"}),
    "start-job": (("scriptblock",), {"scriptblock": "text", "filepath": "text", "name": "text"}),
    "start-threadjob": (("scriptblock",), {"scriptblock": "text", "filepath": "text"}),
    "new-object": (("typename", "argumentlist"), {"typename": "text", "comobject": "text", "argumentlist": "text"}),
    "write-output": (("inputobject",), {"inputobject": "text", "noenumerate": "switch"}),
    "set-location": (("path",), {"path": "text", "literalpath": "text", "passthru": "switch"}),
    "push-location": (("path",), {"path": "text", "literalpath": "text"}),
    "pop-location": ((), {"stackname": "text"}),
})
for _write_role in ("set-itemproperty", "new-itemproperty", "remove-itemproperty"):
    CMDLETS[_write_role][1]["force"] = "switch"

def is_cmdlet(name: str) -> bool:
    """Whether ``name`` is a cmdlet the analyzer models (case-insensitive)."""
    low = name.lower()
    return low in CMDLETS or low in HARMLESS or low in PRIVILEGED or low in PERSISTENT or low in OPAQUE


_DISPLAY: dict[str, str] = {}


def _display_name(canonical: str) -> str:
    """``remove-item`` → ``Remove-Item`` (how command rules and reasons name a cmdlet)."""
    found = _DISPLAY.get(canonical)
    if found is None:
        found = _DISPLAY[canonical] = "-".join(part[:1].upper() + part[1:] for part in canonical.split("-"))
    return found


# -- helpers -------------------------------------------------------------------------------------


def _argument_items(node: Any) -> list[Any]:
    """The argument expressions of a method's ``argument_list``."""
    items: list[Any] = []
    for child in node.named_children:
        if child.type == "argument_expression_list":
            items.extend(c for c in child.named_children)
        else:
            items.append(child)
    return items


def _here_body(text: str) -> str:
    """The body of a here-string ``@"…"@`` / ``@'…'@`` (the lines between the markers)."""
    lines = text.split("\n")
    if len(lines) >= 2:
        return "\n".join(lines[1:-1])
    return text[2:-2]


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "v": "\v"}


def _unescape_expandable(text: str) -> str:
    """Backtick escapes of a double-quoted string (```n``, ```"``, ```$`` …) and ``""``."""
    if "`" not in text and '""' not in text:
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "`" and index + 1 < len(text):
            nxt = text[index + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            index += 2
            continue
        if char == '"' and text[index + 1:index + 2] == '"':
            out.append('"')
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _unescape_bare(text: str) -> str:
    """A bare word: backticks escape the next character."""
    if "`" not in text:
        return text
    return re.sub(r"`(.)", lambda m: m.group(1), text)


def _quote_program(program: str) -> str:
    """A program path for a command line (quoted when it has a blank)."""
    return f'"{program}"' if " " in program and not program.startswith('"') else program


# -- entry points ----------------------------------------------------------------------------------


@contextlib.contextmanager
def windows_resolution(walker: Any) -> Iterator[None]:
    """While walking Windows code, the walker's path resolution (used by the bash tool models:
    git, npm, python …) follows Windows semantics."""
    previous = _use_windows_resolution(walker)
    try:
        yield
    finally:
        _restore_resolution(walker, previous)


def _use_windows_resolution(walker: Any) -> Any:
    """Make ``walker.resolve`` follow Windows semantics; returns what to restore."""
    from stockade.analyzer.winpaths import resolve_variants

    previous = walker.__dict__.get("resolve")

    def resolve(word: str, cwd: str | None = None) -> str:
        return resolve_variants(walker, word, cwd)[0]

    walker.resolve = resolve
    return previous


def _restore_resolution(walker: Any, previous: Any) -> None:
    if previous is None:
        walker.__dict__.pop("resolve", None)
    else:
        walker.resolve = previous


def new_walker(context: Any, command: str, cwd: str | None) -> Any:
    """A walker for a Windows-shell text (``cwd``: a Windows or mapped directory)."""
    from stockade.analyzer.walker import Walker

    walker = _allocate(Walker)  # Walker(…) without type.__call__ (see walker._new_object)
    walker._start(context, command, None, True)
    if cwd:
        from stockade.analyzer.winpaths import resolve_word, win_context

        mapped = resolve_word(cwd, context.workspace, context.home)
        walker.state.cwd = mapped.lower() if win_context(context).fold else mapped
    return walker


def run_ps_text(walker: Any, text: str, span: SpanT, exact: bool = True, env: dict[str, str] | None = None) -> None:
    """Parse and walk PowerShell code found in an argument (a child process: see
    :func:`~stockade.analyzer.cmdshell.nested_walk`)."""
    from stockade.analyzer.cmdshell import nested_walk

    nested_walk(walker, text, span, exact, lambda base, collapse: _walk_text(walker, text, base, collapse, env or {}))


def _walk_text(walker: Any, text: str, base: int, collapse: SpanT | None, env: dict[str, str]) -> None:
    if len(text) > MAX_PS_CHARS:
        walker.effects.append(Unparsable(f"the PowerShell text is longer than the analyzer reads ({MAX_PS_CHARS})",
                                         collapse or (base, base + len(text))))
        return
    if not text.isascii():  # a lone surrogate has no bytes to parse: refused, not an internal error
        from stockade.analyzer.parse import UnsafeText, encode

        try:
            encode(text)
        except UnsafeText as refused:
            walker.effects.append(Unparsable(refused.why, collapse or (base + refused.start, base + refused.end)))
            return
    if _PLAIN_RE.fullmatch(text) and _plain_commands(walker, text, base, collapse, env):
        return
    source = parse_ps(text, base, collapse)
    error = first_error(source.tree.root_node)
    if error is not None:
        what = "missing token" if error.is_missing else "syntax the PowerShell grammar does not accept"
        walker.effects.append(Unparsable(f"{what} near `{clip(source.node_text(error) or text)}`", source.span(error)))
    previous = _use_windows_resolution(walker)
    try:
        PsRun(walker, source, env).walk(source.tree.root_node)
    finally:
        _restore_resolution(walker, previous)


#: Plain commands: bare words only (no character PowerShell gives a meaning but ``-``
#: starting a parameter), the first a command name (not a number, a keyword or an operator);
#: several joined by ``;`` or ``|``, each with at most one ``>``/``>>`` to a plain file name.
_NAME = r"[A-Za-z_][A-Za-z0-9_]*(?:[.\-][A-Za-z0-9_]+)*"
_ARG = r"(?:--?[A-Za-z]+|[A-Za-z0-9_.\\/~*?][A-Za-z0-9_.\\/~*?\-]*(?::[\\/][A-Za-z0-9_.\\/~*?\-]*)?)"
_TARGET = r"[A-Za-z0-9_.\\/~][A-Za-z0-9_.\\/~\-]*"
_PIECE = rf"{_NAME}(?:[ \t]+{_ARG})*(?:[ \t]+>>?[ \t]*{_TARGET})?"
_PLAIN_RE = re.compile(rf"[ \t]*{_PIECE}(?:[ \t]*[;|][ \t]*{_PIECE})*[ \t]*")
_PLAIN_TOKEN_RE = re.compile(r">>?|[;|]|[^\s;|>]+")
_KEYWORDS = frozenset("""
begin break catch class continue data define do dynamicparam else elseif end enum exit filter finally for foreach
from function hidden if in inlinescript parallel param process return sequence static switch throw trap try until
using var while workflow configuration
""".split())


def _plain_commands(walker: Any, text: str, base: int, collapse: SpanT | None, env: dict[str, str]) -> bool:
    """Plain commands (see :data:`_PLAIN_RE`) walked without the grammar: their words are what
    the grammar makes of them (``-Name`` and ``-Name:value`` parameters, bare values).  False
    (nothing walked) when a first word is a keyword: a statement, left to the grammar."""
    tokens = [(m.group(), m.start(), m.end()) for m in _PLAIN_TOKEN_RE.finditer(text)]
    pieces: list[tuple[list[tuple[str, int, int]], tuple[str, int, int] | None, str]] = []
    words: list[tuple[str, int, int]] = []
    redirect: tuple[str, int, int] | None = None
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token[0] in (";", "|"):
            pieces.append((words, redirect, token[0]))
            words, redirect = [], None
        elif token[0] in (">", ">>"):
            redirect = tokens[index + 1]
            index += 1
        else:
            words.append(token)
        index += 1
    pieces.append((words, redirect, ";"))
    if any(piece[0][0][0].lower() in _KEYWORDS for piece in pieces):
        return False  # a statement: the grammar's
    source = PsSource(text, b"", None, None, base, collapse)

    def span(start: int, end: int) -> SpanT:
        return collapse if collapse is not None else (base + start, base + end)

    previous = _use_windows_resolution(walker)
    try:
        run = PsRun(walker, source, env)
        stdin: Stdin = TERMINAL
        items: list[tuple[str, bool]] | None = None
        for words, redirect, separator in pieces:
            run.items_in, run.items_out = items, None
            args: list[tuple[str, str, SpanT]] = []
            for word, start, end in words[1:]:
                if len(word) > 1 and word[0] == "-" and (word[1].isalpha() or word[1] in "-_?"):
                    name, colon, value = word.partition(":")
                    args.append(("param", name, span(start, end)))
                    if colon:
                        args.append(("attached", value, span(start, end)))
                else:
                    args.append(("value", word, span(start, end)))
            name, start, end = words[0]
            walker.step()
            output = run.run(name, args, span(start, end), stdin, None)
            if redirect is not None:
                target, start, end = redirect
                win_write(run.invocation(["redirect", target], [span(start, end), span(start, end)]), target, 1)
            stdin = (output or Stdin(None, "the output of the previous command")) if separator == "|" else TERMINAL
            items = run.items_out if separator == "|" else None
    finally:
        _restore_resolution(walker, previous)
    return True


def walk_powershell(context: Any, command: str, cwd: str | None = None) -> list[Any]:
    """All effects of a PowerShell command or script (the entry point of ``--shell powershell``)."""
    from stockade.analyzer.walker import BudgetSpent

    walker = new_walker(context, command, cwd)
    try:
        _walk_text(walker, command, 0, None, {})
    except BudgetSpent as spent:
        walker.effects.append(Unknown(f"the analysis stopped at its work budget ({spent.why}); what the command "
                                      "does beyond that is not judged", (0, len(command))))
    except RecursionError:
        walker.effects.append(Unparsable("nesting too deep to follow", (0, len(command))))
    return walker.effects


__all__ = ["ALIASES", "CMDLETS", "parse_ps", "run_ps_text", "walk_powershell", "windows_resolution"]
