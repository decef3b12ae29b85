"""An exact fast path for simple commands: no tree-sitter for ``git status`` or ``rm -rf ./build``.

Most commands an agent runs are one program with plain arguments, or a few of them joined
by ``&&``, ``||``, ``;`` and ``|``.  For those, a hand lexer
produces the same words the tree walk would — and then *the same* machinery runs:
:func:`~stockade.analyzer.words.expand_fields` (tilde, splitting, quote removal),
:func:`~stockade.analyzer.exec.run_command` (wrappers, nested scripts, per-tool models) and
the judge.  Nested code found by a model (``bash -c '…'``) is handed back to the walker,
which tries this path again and otherwise parses with tree-sitter.

The lexer accepts, conservatively, only text that is:

* ASCII, printable (space and tab separate words; no newline, ``\\r`` or other controls);
* words made of letters, digits and ``- _ . / : @ % + , = ~ *`` — no ``; & | < > ( ) ` \\
  { } [ ] ! # ? ^`` or quotes inside other constructs — and, in plain text (no quotes or
  ``$``), the argument ``{}`` (find's and xargs's placeholder, never the command word: there
  tree-sitter-bash reads a compound statement; as an argument it is a concatenation of
  ``{`` and ``}``, whose value is ``{}``);
* single-quoted strings (any printable ASCII but ``'``) and double-quoted strings without
  backtick, backslash or ``!``;
* ``$NAME`` and ``${NAME}`` (unquoted, or inside double quotes; no operators, special or
  positional parameters, never followed by ``[``), looked up when the command runs: unset
  is UNKNOWN, unquoted values are split on ``$IFS`` by the same
  :func:`~stockade.analyzer.words.expand_fields`.  Declined where tree-sitter-bash reads them
  differently: blanks between an opening quote (or an expansion) and a ``$`` in double
  quotes (the grammar drops them), an expansion later followed by ``=`` and ``$`` in one word
  (``$x=$HOME/y`` is split in two), more than one expansion in the command word;
* leading assignments ``NAME=value`` (not ``_=``, not ``+=``, the value nonempty and not
  starting with ``=``): alone they are a statement (``x=1; …``, set in turn, as
  ``visit_variable_assignment``; never a pipeline's part), before a command its environment
  (``EnvChange`` and the environment-variable models, as ``visit_command``); a command word
  after them holds no ``:`` (``x=1 a:b`` is a syntax error to tree-sitter-bash);
* whose command word is not a reserved word or a declaration builtin (nor starts with one,
  unquoted, followed by a quoted string: ``if'x'`` is the keyword to tree-sitter), and has no ``=``
  and no ``@``, ``%`` or ``+`` (tree-sitter-bash reads
  ``a@``/``a%``/``a+:`` in command position as a malformed variable and reports a syntax
  error, which the analyzer must see the same way);
* with no word starting ``==`` or ``=~`` (the grammar's test operators, which it parses
  differently in a command: ``x == y`` is one argument, a trailing ``==`` an error).

A single trailing newline is allowed (nested code fed by here-strings and here-documents
ends with one).  Lists (:func:`lex_list`): such commands joined by ``&&``, ``||``, ``;`` and ``|`` (no
empty command, no trailing operator, no lone ``&``).  They are walked as the tree walk
walks ``program``/``list``/``pipeline`` nodes: in order, every part of a pipeline in a
subshell with the previous part's output as its standard input, and the walker's depth
raised by the same number of levels.

:func:`run_simple` also takes, around such a simple command or list, a trailing comment
(``ls  # list``: dropped, as the tree walk skips the program's ``comment`` child) and, for a
simple command, one trailing redirection of a plain word with ``>``, ``>>`` or ``<``
(``echo x >> notes``): tree-sitter-bash reads a ``redirected_statement``, whose redirection
the walk records before it walks the command, one level deeper.

Plain text (no quotes, no ``$``) takes a shorter lane: :func:`run_simple` and
:func:`_plain_list` split it with ``str.split`` and run the argv directly (a plain word is its
own field unless it starts with a tilde), without building the parts lists :func:`lex_simple`
and :func:`lex_list` return.

Anything else returns ``None`` and goes to tree-sitter.  ``tests/analyzer/test_fast_path.py``
asserts, over the whole corpus and over generated simple commands, that verdicts (reasons
and spans included) are identical with and without this path.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, EnvChange, SpanT, clip
from stockade.analyzer.exec import Stdin, run_command
from stockade.analyzer.models.envvars import judge_env_var
from stockade.analyzer.words import expand_fields, tilde

_new_tuple = tuple.__new__  # a record without its Python-level __new__ (as in exec.py)

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.walker import Walker

_UNQUOTED = r"A-Za-z0-9_./:@%+,=~*\-"
_NAME = r"[A-Za-z_][A-Za-z0-9_]*+"
#: ``$NAME`` or ``${NAME}`` (no operators, no special parameters), never followed by ``[``.
_VAR = rf"\$(?:\{{{_NAME}\}}|{_NAME})(?!\[)"
_SQ = r"'[ -&(-~\t]*'"                       # printable ASCII except '
_DQ = rf'"(?:[ #%-\[\]-_a-~\t]++|{_VAR})*+"'  # printable ASCII except " \ ` ! ; $ only in _VAR
_TEST_OP_RE = re.compile(r"(?:^|[ \t])=[=~]")
_PART_RE = re.compile(rf"([{_UNQUOTED}]+)|'([^']*)'|\"([^\"]*)\"|\$(?:\{{([A-Za-z0-9_]+)\}}|([A-Za-z0-9_]+))")
_DQ_VAR_RE = re.compile(r"\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))")
#: An expansion, later ``=`` and another ``$``: tree-sitter-bash splits ``$x=$HOME/y`` into
#: ``$x=$`` and ``HOME/y`` (no error reported), so such words are declined.
_EXPANSION_EQ_EXPANSION_RE = re.compile(r"\$[^=]*=.*\$")
#: A ``$`` that starts no ``$NAME``/``${NAME}`` (``$(``, ``${x:-y}``, ``$1``…): text without
#: single quotes holding one does not lex (saves the tokenizer's pass).
_BAD_DOLLAR_RE = re.compile(r"\$(?![A-Za-z_]|\{[A-Za-z_][A-Za-z0-9_]*\})")
#: A leading ``NAME=`` (an assignment word when it opens a command).
_ASSIGN_RE = re.compile(r"(?!_=)[A-Za-z_][A-Za-z0-9_]*=")  # `_=1` is a command to tree-sitter-bash
#: A superset of the text the tokenizer accepts, checked before it on text with single quotes:
#: outside quotes none of ``< > ( ) ` \\ [ ] ! # ? ^`` or a newline, double-quoted strings
#: without `` ` \\ !`` and with ``$`` only before a name or ``{``.  Text it rejects has a
#: character no token holds (``cat <<'EOF' …``, ``echo '…' >> f``) and never lexes.
_QUOTED_TEXT_RE = re.compile(r"""(?:[^'"<>()`\\\[\]!#?^\n]++|'[^']*+'|"(?:[^"`\\!$]++|\$[A-Za-z_{])*+")*+""")
#: Tokens for ``findall``: (blanks before it, an operator, a word) — one of the last two set.
#: Text no token matches is skipped by ``findall``: the lexers check that the tokens' lengths
#: add up to the whole text (less trailing blanks), which only an exact tiling does.
_TOKENS_RE = re.compile(rf"([ \t]*)(?:(&&|\|\||[;|])|((?:[{_UNQUOTED}]++|{_SQ}|{_DQ}|{_VAR})++))")
#: Text whose first word certainly holds ``@ % +`` in its unquoted start, or ``=`` there
#: without being an assignment ``NAME=``: never lexed.
_BAD_HEAD_RE = re.compile(r"[ \t]*(?:[A-Za-z0-9_./:,~*\-]*[@%+]|(?!(?!_=)[A-Za-z_][A-Za-z0-9_]*=)[A-Za-z0-9_./:,~*\-]*=)")
#: The common case, no quotes at all: the same language restricted to unquoted words.
_PLAIN_TOKENS_RE = re.compile(rf"([ \t]*)(?:(&&|\|\||[;|])|([{_UNQUOTED}]+))")
#: A simple command of plain words whose first word holds none of ``= @ % +`` (no assignment,
#: nothing tree-sitter-bash reads as a malformed variable): all :func:`lex_simple` then checks
#: is that the command word is not reserved and no word starts with ``==`` or ``=~``.
_PLAIN_SIMPLE_RE = re.compile(rf"[ \t]*[A-Za-z0-9_./:,~*\-]++(?:[ \t]++(?:[{_UNQUOTED}]++|\{{\}}(?![^ \t])))*+[ \t]*+")
#: The characters of plain words, blanks and operators: :func:`_plain_list` splits such text
#: and checks that every operator (``&& || ; |``) stands apart between two commands, that a
#: command's first word holds none of ``= @ % + { }`` (no assignment, nothing tree-sitter-bash
#: reads as a malformed variable or a compound statement) and braces come only as ``{}``.
_PLAIN_LIST_TEXT_RE = re.compile(rf"[{_UNQUOTED} \t;&|{{}}]*+")
#: A character a command's first plain word may not hold (see :data:`_PLAIN_LIST_TEXT_RE`).
_BAD_PLAIN_HEAD_RE = re.compile(r"[=@%+{}]")
#: A comment to the end of the text: a ``#`` after a blank, then printable ASCII.  The first
#: such ``#`` may lie in a quoted string, but then the text before it holds an unterminated
#: quote, which no lexer accepts; where that text lexes, the ``#`` starts a word: a comment
#: (tree-sitter-bash makes it the program's last child, which the walk skips).
_TRAILING_COMMENT_RE = re.compile(r"[ \t]#[ -~\t]*+\Z")
#: One redirection at the end of the text: blanks, ``>``, ``>>`` or ``<`` (so not ``>&``, ``>|``,
#: ``<<``, ``<(``, ``&>`` or a descriptor's ``2>``), and a plain word (its target).
_TRAILING_REDIRECT_RE = re.compile(rf"[ \t]+(>>|>|<)[ \t]*+([{_UNQUOTED}]++)[ \t]*+\Z")
#: Unquoted text made only of words, blanks and operator characters: ``str.split`` tiles it
#: (blanks are only space and tab), so no regex has to walk the words.
_PLAIN_TEXT_RE = re.compile(rf"[{_UNQUOTED} \t;&|]*")

#: First words tree-sitter-bash parses as something other than a simple command.
_NOT_SIMPLE = frozenset({
    "if", "then", "elif", "else", "fi", "for", "select", "while", "until", "do", "done", "case", "esac", "in",
    "function", "time", "coproc", "declare", "typeset", "export", "local", "readonly", "unset", "unsetenv",
    "-",  # a lone `-` before `a=b` or `a@b` is dropped or an error to tree-sitter-bash
})

Word = tuple[list[tuple[str, str]], int, int]


def lex_simple(text: str) -> list[Word] | None:
    """The words of a simple command as ``(parts, start, end)``, or None when the text is not
    one (then tree-sitter decides).  ``parts`` are ``(text, "lit"|"q")`` as in
    :meth:`~stockade.analyzer.words.WordExpander.parts`."""
    words: list[Word] = []
    position = 0
    if _PLAIN_SIMPLE_RE.fullmatch(text) is not None and "==" not in text and "=~" not in text:
        # the common case in one check: plain words, the first without ``= @ % +`` (so no
        # assignment, and nothing _command_head refuses but a reserved word)
        for word in text.split():
            start = text.find(word, position)
            position = start + len(word)
            words.append(([(word, "lit")], start, position))
        return None if words[0][0][0][0] in _NOT_SIMPLE else words
    return _lex_other(text)


def _lex_other(text: str) -> list[Word] | None:
    """:func:`lex_simple` of text that :data:`_PLAIN_SIMPLE_RE` (with no test operator)
    does not take: assignments, quotes, expansions (:func:`run_simple` checked that already)."""
    words: list[Word] = []
    position = 0
    if not text.isascii() or ("==" in text or "=~" in text) and _TEST_OP_RE.search(text):
        return None
    quoted = _quoted(text)
    if quoted is None:
        return None
    if not quoted:
        # only words and blanks (space, tab): `str.split` finds the words; an operator
        # character can only be part of one
        if "&" in text or "|" in text or ";" in text:
            return None
        for word in text.split():
            start = text.find(word, position)
            position = start + len(word)
            words.append(([(word, "lit")], start, position))
        return words if words and _command_head(text, words) >= 0 else None
    for blank, operator, word in _TOKENS_RE.findall(text):
        if operator:
            return None
        start = position + len(blank)
        position = start + len(word)
        if "'" in word or '"' in word or "$" in word:
            parts = _word_parts(word)
            if parts is None:
                return None
            words.append((parts, start, position))
        else:
            words.append(([(word, "lit")], start, position))
    if position != len(text.rstrip(" \t")) or not words or _command_head(text, words) < 0:
        return None
    return words


def _quoted(text: str) -> bool | None:
    """Whether the text needs the tokenizer (quotes or ``$``); None when it certainly does not
    lex (saves the tokenizer's pass over text that tree-sitter will parse anyway): text with
    a character outside words, blanks, operators, quotes and ``$``, text without single
    quotes holding `` ` \\ !`` (which only a single-quoted string may contain) or a ``$``
    starting no ``$NAME``/``${NAME}``, or a first
    word with ``@ % +`` in its unquoted start or ``=`` there not making it an assignment."""
    if ("=" in text or "@" in text or "%" in text or "+" in text) and _BAD_HEAD_RE.match(text) is not None:
        return None  # (the regex needs one of those four characters to match)
    if "'" in text:
        return True if _QUOTED_TEXT_RE.fullmatch(text) is not None else None
    if '"' not in text and "$" not in text:
        return False if _PLAIN_TEXT_RE.fullmatch(text) is not None else None
    if "`" in text or "\\" in text or "!" in text or "$" in text and _BAD_DOLLAR_RE.search(text) is not None:
        return None
    return True


def _command_head(text: str, words: list[Word]) -> int:
    """The index of the command word after leading assignments ``NAME=value`` (``len(words)``
    when there are only assignments), or -1 when tree-sitter would not read the words as
    the same simple command: a command word that is a reserved word or declaration builtin,
    or holds ``= @ % +`` (or ``:`` after assignments: ``x=1 a:b`` is a syntax error to
    tree-sitter-bash), or more than one expansion (it splits ``a$x$y-`` and
    ``${x}/a$y.b`` in command position into several words); an assignment with an empty
    value or one starting with ``=``."""
    index = 0
    for parts, start, end in words:
        first, kind = parts[0]
        if kind != "lit" or "=" not in first:
            break
        match = _ASSIGN_RE.match(first)
        if match is None:
            break
        if match.end() == end - start or text[start + match.end()] == "=":
            return -1
        index += 1
    else:
        return index
    first, start, end = words[index]
    head = text[start:end]
    if "=" in head or "@" in head or "%" in head or "+" in head or ":" in head and index \
            or "$" in head and head.count("$") > 1 \
            or first[0][0] in _NOT_SIMPLE and (first[0][1] == "lit" or len(first) == 1 and first[0][1] == "q"):
        return -1
    return index


def _word_parts(word: str) -> list[tuple[str, str]] | None:
    """A word's parts: ``(text, "lit"|"q")`` and, for expansions, ``(name, "v"|"qv")``
    (unquoted, double-quoted), looked up when the command runs; None for a shape the
    tree walk reads differently."""
    if "$" in word and "=" in word and _EXPANSION_EQ_EXPANSION_RE.search(word) is not None:
        return None
    parts: list[tuple[str, str]] = []
    quoted = False  # a quoted part seen
    for part in _PART_RE.finditer(word):
        unquoted, single, double, braced, name = part.groups()
        if unquoted is not None:
            parts.append((unquoted, "lit"))
        elif single is not None:
            parts.append((single, "q"))
            quoted = True
        elif double is not None:
            quoted = True
            if "$" not in double:
                parts.append((double, "q"))
                continue
            position = 0
            for var in _DQ_VAR_RE.finditer(double):
                if var.start() > position:
                    text = double[position:var.start()]
                    if not text.strip(" \t"):
                        # blanks between the opening quote or an expansion and a `$`:
                        # tree-sitter-bash puts them inside the expansion node, and their
                        # text is lost to the tree walk; decline rather than differ
                        return None
                    parts.append((text, "q"))
                parts.append((var.group(1) or var.group(2), "qv"))
                position = var.end()
            if position < len(double):
                parts.append((double[position:], "q"))
        else:
            if quoted and part.end() < len(word):
                # an unquoted expansion after a quoted part, more text after it: tree-sitter-bash
                # splits some of these in two words (`'a'x=$HOME/y`, `x'a'$H.y`); decline them all
                return None
            parts.append((braced or name, "v"))
    return parts


Pipeline = list[list[Word]]
Statement = list[Pipeline]


def lex_list(text: str) -> list[Statement] | None:
    """Simple commands joined by ``&&``/``||`` (a statement's pipelines), ``;`` (statements)
    and ``|`` (a pipeline's commands), or None when the text is anything else."""
    if not text.isascii() or ("==" in text or "=~" in text) and _TEST_OP_RE.search(text):
        return None
    quoted = _quoted(text)
    if quoted is None:
        return None
    command: list[Word] = []
    pipeline: Pipeline = [command]
    statements: list[Statement] = [[pipeline]]
    position = 0
    for blank, operator, word in (_TOKENS_RE if quoted else _PLAIN_TOKENS_RE).findall(text):
        start = position + len(blank)
        if word:
            position = start + len(word)
            if quoted and ("'" in word or '"' in word or "$" in word):
                parts = _word_parts(word)
                if parts is None:
                    return None
                command.append((parts, start, position))
            else:
                command.append(([(word, "lit")], start, position))
            continue
        position = start + len(operator)
        if not command:
            return None
        # a command of assignments only is a statement of its own, never a pipeline's part
        head = _command_head(text, command)
        if head < 0 or head == len(command) and (operator == "|" or len(pipeline) > 1):
            return None
        command = []
        pipeline = _attach(statements, operator, command)
    if position != len(text.rstrip(" \t")):  # findall skipped text no token matches
        return None
    if not command or not _list_command_ok(text, command, len(pipeline) == 1):
        return None
    return statements


def _list_command_ok(text: str, command: list[Word], alone: bool) -> bool:
    """Whether a list's command is simple; one of assignments only must be a statement of
    its own (``alone``: not a pipeline's part, where tree-sitter nests it differently)."""
    head = _command_head(text, command)
    return head >= 0 and (alone or head < len(command))


def run_simple(walker: "Walker", text: str, base: int, collapse: SpanT | None, stdin: "Stdin",
               depth_limit: int) -> bool:
    """Run ``text`` through the models if it is a simple command or a list of them; False
    when it is not (the caller parses it).  The walker's depth is raised as the tree walk
    would (program → [list →] [pipeline →] command), so limits trigger at the same nesting.
    One final newline (a here-string's, a here-document line's) ends the command as the
    end of text does; it is dropped (any other newline makes the lexers refuse the text)."""
    if text[-1:] == "\n":
        text = text[:-1]
    if "#" in text:
        comment = _TRAILING_COMMENT_RE.search(text)
        if comment is not None:  # a comment to the end (the text before it must lex: see the regex)
            text = text[:comment.start()]
    if ">" in text or "<" in text:
        redirect = _TRAILING_REDIRECT_RE.search(text)
        if redirect is not None:
            return _run_redirected(walker, text, redirect, base, collapse, stdin, depth_limit)
    if ";" in text or "|" in text or "&" in text:
        return _run_list(walker, text, base, collapse, stdin, depth_limit)
    if walker.depth + 3 > depth_limit:  # program → variable_assignments → variable_assignment
        return False
    if _PLAIN_SIMPLE_RE.fullmatch(text) is not None and "==" not in text and "=~" not in text:
        # plain words, the first without ``= @ % +`` (what lex_simple's first check accepts)
        command = _plain_command(text, text.split(), 0, base, collapse)
        if command is None:
            return False
        _run_plain(walker, command, base, collapse, stdin, 2)
        return True
    words = _lex_other(text)  # (lex_simple, less the plain check just made)
    if words is None:
        return False
    _run_words(walker, words, base, collapse, stdin, 2)
    return True


def _run_redirected(walker: "Walker", text: str, redirect: re.Match[str], base: int, collapse: SpanT | None,
                    stdin: "Stdin", depth_limit: int) -> bool:
    """Run a simple command with one redirection of a plain word at its end (``echo x >> f``,
    ``sort < data``), as the tree walk runs the ``redirected_statement`` tree-sitter-bash reads
    (program → redirected_statement → command): the redirection's effect first, then the
    command (standard input unchanged).  False when the rest is not a simple command with a
    command word."""
    if walker.depth + 3 > depth_limit:
        return False
    body = text[:redirect.start()]
    words = lex_simple(body)
    if words is None:
        return False
    if _command_head(body, words) == len(words):  # assignments alone: not a command
        return False
    operator, target = redirect.group(1), redirect.group(2)
    if target[0] == "~":
        target = tilde(target, walker)
    span = collapse if collapse is not None else (base + redirect.start(2), base + redirect.end(2))
    walker.file_access(target, span, read=operator == "<", write=operator != "<")
    _run_words(walker, words, base, collapse, stdin, 3)
    return True


#: A command of plain words, lexed for running: its argv (before tilde expansion), their
#: spans, the command's start and end in the lexed text, and whether a word may start with ``~``.
PlainCommand = tuple[list[str], list[SpanT], int, int, bool]


def _plain_command(text: str, fields: list[str], offset: int, base: int,
                   collapse: SpanT | None) -> PlainCommand | None:
    """The :data:`PlainCommand` of ``text`` (at ``offset`` in the lexed text; ``fields`` its
    ``str.split()``), text that :data:`_PLAIN_SIMPLE_RE` accepts; None when its command word is
    reserved (tree-sitter reads it as something else than a simple command)."""
    if fields[0] in _NOT_SIMPLE:
        return None
    spans: list[SpanT] = []
    if " ".join(fields) == text:  # one space between words, none around: the offsets add up
        position = offset
        for word in fields:
            end = position + len(word)
            spans.append((base + position, base + end))
            position = end + 1
        start, end = offset, offset + len(text)
    else:
        position = 0
        for word in fields:
            found = text.find(word, position)  # the next word starts at the next non-blank
            position = found + len(word)
            spans.append((base + offset + found, base + offset + position))
        start, end = spans[0][0] - base, spans[-1][1] - base
    if collapse is not None:
        spans = [collapse] * len(fields)
    return fields, spans, start, end, "~" in text


def _plain_list(text: str, base: int, collapse: SpanT | None) -> list[list[list[PlainCommand]]] | None:
    """:func:`lex_list` for text of plain words and operators whose commands open with a word
    holding none of ``= @ % +`` (so no assignments), the operators standing apart (``a && b``,
    not ``a&&b``): the same statements, of :data:`PlainCommand` — or None (then
    :func:`lex_list` decides)."""
    if _PLAIN_LIST_TEXT_RE.fullmatch(text) is None or "==" in text or "=~" in text:
        return None
    tokens = text.split()
    exact = " ".join(tokens) == text  # one space between tokens, none around: the offsets add up
    tilde_possible = "~" in text
    braces = "{" in text or "}" in text
    unseen = text.count("&") + text.count("|") + text.count(";")  # operator characters not yet met
    commands: list[PlainCommand] = []
    operators: list[str] = []  # operators[i] joins commands[i] and commands[i + 1]
    fields: list[str] = []
    spans: list[SpanT] = []
    position = start = end = 0
    for token in tokens:
        found = position if exact else text.find(token, position)  # (the next token starts there)
        position = found + len(token) + exact  # (+ 1 for the space after it, when exact)
        if token in _OPERATORS:
            if not fields:  # no command before it
                return None
            unseen -= len(token)
            commands.append((fields, spans if collapse is None else [collapse] * len(fields), start, end,
                             tilde_possible))
            operators.append(token)
            fields = []
            spans = []
            continue
        if not fields:
            start = found
            if not token.isalnum() and _BAD_PLAIN_HEAD_RE.search(token) is not None or token in _NOT_SIMPLE:
                return None
        elif braces and ("{" in token or "}" in token) and token != "{}":
            return None
        end = found + len(token)
        fields.append(token)
        spans.append((base + found, base + end))
    if unseen or not fields:  # an operator inside a token (`a;b`), or at the end
        return None
    commands.append((fields, spans if collapse is None else [collapse] * len(fields), start, end, tilde_possible))
    statements = [[[commands[0]]]]
    for operator, command in zip(operators, commands[1:]):
        _attach(statements, operator, command)
    return statements


def _attach(statements: list, operator: str, command: list) -> list:
    """Add ``command`` to a list's ``statements`` after ``operator``: to the last pipeline
    (``|``), as a new statement (``;``), or as a new pipeline of the last statement
    (``&&``, ``||``); the pipeline it is now in."""
    if operator == "|":
        pipeline = statements[-1][-1]
        pipeline.append(command)
    elif operator == ";":
        pipeline = [command]
        statements.append([pipeline])
    else:
        pipeline = [command]
        statements[-1].append(pipeline)
    return pipeline


_OPERATORS = frozenset({"&&", "||", ";", "|"})


def _run_plain(walker: "Walker", command: PlainCommand, base: int, collapse: SpanT | None, stdin: "Stdin",
               depth: int) -> None:
    """Run a :data:`PlainCommand` ``depth`` levels below the walker's depth, as
    :func:`_run_words` runs the same words (a plain word is its own one field unless it
    starts with a tilde; its span is already in the command)."""
    argv, spans, start, end, tilde_possible = command
    if tilde_possible:
        argv, spans = _tilde_fields(argv, spans, walker)
    span = collapse if collapse is not None else (base + start, base + end)
    walker.depth += depth
    try:
        run_command(walker, argv, spans, stdin, {}, span)
    finally:
        walker.depth -= depth


def _tilde_fields(words: list[str], spans: list[SpanT], walker: "Walker") -> tuple[list[str], list[SpanT]]:
    """Plain words with those that start with ``~`` expanded (as :func:`expand_fields`)."""
    argv: list[str] = []
    argv_spans: list[SpanT] = []
    for word, span in zip(words, spans):
        if word[0] == "~":
            for value in expand_fields([(word, "lit")], walker):
                argv.append(value)
                argv_spans.append(span)
        else:
            argv.append(word)
            argv_spans.append(span)
    return argv, argv_spans


def _run_list(walker: "Walker", text: str, base: int, collapse: SpanT | None, stdin: "Stdin",
              depth_limit: int) -> bool:
    if walker.depth + 4 > depth_limit:
        return False
    statements: list = _plain_list(text, base, collapse)
    if statements is not None:
        run = _run_plain
    else:
        statements = lex_list(text)
        if statements is None:
            return False
        run = _run_words
    for statement in statements:
        depth = 2 if len(statement) > 1 else 1  # program [→ list]
        for pipeline in statement:
            if len(pipeline) == 1:
                run(walker, pipeline[0], base, collapse, stdin, depth + 1)
                continue
            current = stdin
            last = len(pipeline) - 1
            for index, command in enumerate(pipeline):  # as Walker.visit_pipeline / walk_producing
                saved = walker.state
                walker.state = saved.copy()
                try:
                    walker._last_output = None
                    run(walker, command, base, collapse, current, depth + 2)
                    output = walker._last_output
                    walker._last_output = None
                finally:
                    walker.state = saved
                if index < last:
                    if output is None:
                        start, end = (command[2], command[3]) if run is _run_plain else (command[0][1], command[-1][2])
                        output = _new_tuple(Stdin, (None, f"the output of `{clip(text[start:end])}`"))
                    current = output
    return True


def _run_words(walker: "Walker", words: list[Word], base: int, collapse: SpanT | None, stdin: "Stdin",
               depth: int) -> None:
    """Expand one command's words and run it ``depth`` levels below the walker's depth, as
    :meth:`~stockade.analyzer.walker.Walker.visit_command` does (for a statement of
    assignments alone, as ``visit_variable_assignment(s)``)."""
    first_start = words[0][1]  # the command's span starts at its first word, an assignment or not
    assignments = 0
    for parts, _, _ in words:  # leading NAME=value words (the lexer checked their values)
        first, kind = parts[0]
        if kind != "lit" or "=" not in first or _ASSIGN_RE.match(first) is None:
            break
        assignments += 1
    if assignments:
        if assignments == len(words):
            # a statement of assignments: each sets its variable in turn (later values see it)
            state = walker.state
            for parts, start, end in words:
                name, value = _assignment(parts, walker)
                state.variables[name] = value
                if name in state.exported or "*" in state.exported or name in ("PROMPT_COMMAND", "PS4"):
                    judge_env_var(walker, name, value,
                                  collapse if collapse is not None else (base + start, base + end))
            return
        prefix = []
        for parts, start, end in words[:assignments]:
            name, value = _assignment(parts, walker)
            prefix.append((name, value,
                           collapse if collapse is not None else (base + start + len(name) + 1, base + end)))
        words = words[assignments:]
    argv: list[str] = []
    spans: list[SpanT] = []
    for parts, start, end in words:
        span = collapse if collapse is not None else (base + start, base + end)
        if len(parts) == 1:
            # the lexer's text is ASCII: a quoted string, or a literal without braces or a
            # leading tilde, is its own one field (as expand_fields would return)
            value, kind = parts[0]
            if kind == "q" or kind == "lit" and "{" not in value and value[0] != "~":
                argv.append(value)
                spans.append(span)
                continue
        for value in expand_fields(_resolved(parts, walker), walker):
            argv.append(value)
            spans.append(span)
    if not argv:  # the words expanded to nothing: no command, the assignments stay in the shell
        if assignments:
            for name, value, _ in prefix:
                walker.state.variables[name] = value
        return
    span = collapse if collapse is not None else (base + first_start, base + words[-1][2])
    env: dict[str, str] = {}
    if assignments:
        for name, value, value_span in prefix:
            env[name] = value
            walker.effects.append(EnvChange(name, span))
            judge_env_var(walker, name, value, value_span)
    walker.depth += depth
    try:
        run_command(walker, argv, spans, stdin, env, span)
    finally:
        walker.depth -= depth


def _assignment(parts: list[tuple[str, str]], walker: "Walker") -> tuple[str, str]:
    """Name and value of an assignment word, as ``Walker.assignment_value``: the value's parts
    joined without splitting (``WordExpander.text``), a leading unquoted ``~`` expanded."""
    name, _, head = parts[0][0].partition("=")
    value_parts = _resolved(parts, walker)
    value_parts = ([(head, "lit")] if head else []) + value_parts[1:]
    value = "".join([text for text, _ in value_parts])
    if value_parts and value_parts[0][1] == "lit" and value[:1] == "~":
        value = tilde(value, walker)
    return name, value


def _resolved(parts: list[tuple[str, str]], walker: "Walker") -> list[tuple[str, str]]:
    """Parts with ``$NAME`` looked up: the value (UNKNOWN when the script does not determine
    it), subject to splitting when unquoted — as WordExpander's simple_expansion/expansion."""
    out = parts
    for index, (text, kind) in enumerate(parts):
        if kind == "v" or kind == "qv":
            if out is parts:
                out = list(parts)
            value = walker.lookup(text)
            out[index] = (UNKNOWN if value is None else value, "exp" if kind == "v" else "q")
    return out
