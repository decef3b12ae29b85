"""Control flow for the walker: alternatives and loops, with shell state merged after them.

Branches of ``if``/``case`` and loop bodies are walked from the same state; afterwards, facts
the branches disagree on (a variable's value, the working directory) become unknown.
:class:`ControlFlow` is a mixin of :class:`~stockade.analyzer.walker.Walker`.
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, Write
from stockade.analyzer.words import LISTED_KEY, NAMEREF

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from stockade.analyzer.effects import Effect
    from stockade.analyzer.exec import Stdin
    from stockade.analyzer.parse import Source
    from stockade.analyzer.walker import State
    from stockade.analyzer.words import WordExpander


#: words that end a loop from inside it
#: a ``while`` condition that reads a line (``read x``, ``IFS= read -r line``): fed by an endless
#: stream (``yes |``), the loop never ends
_READ_CONDITION_RE = re.compile(r"(?:\w+=\S*\s+)*read\b")
def _endless_stream(stdin: Stdin) -> bool:
    """Whether ``stdin`` never ends (the output of ``yes``, ``cat /dev/zero``: see :mod:`.models.pipefill`)."""
    from stockade.analyzer.models.pipefill import ENDLESS

    return stdin.what.startswith(ENDLESS)


_LOOP_EXIT_RE = re.compile(r"(?:^|[\s;&|({])(?:break|exit|return)(?:$|[\s;&|)}])")
#: a command put in the background (``&`` not part of ``&&``, ``&>`` or ``>&``)
_BACKGROUND_RE = re.compile(r"(?<![&>])&(?![&>])")

#: commands that print nothing on stdout (a loop of only these does not fill a file it is redirected to)
_SILENT = frozenset({"sleep", ":", "true", "false", "cd", "wait", "read", "shift", "test", "[", "[[", "let", "export",
                     "local", "unset", "set", "trap", "kill", "touch", "mkdir", "rm", "cp", "mv", "chmod", "break",
                     "continue", "declare", "readonly", "usleep"})
_STDOUT_REDIRECT_RE = re.compile(r"^(?:1|&)?>[>|]?\s*(\S+)")


def _prints(walker: Any, node: Any) -> bool:
    """Whether a loop body ``node`` runs a command whose stdout is not redirected away."""
    stack = [node]
    text = walker.src.node_text
    while stack:
        current = stack.pop()
        if current.type == "command":
            name = current.child_by_field_name("name")
            parent = current.parent
            if name is not None and text(name) not in _SILENT and not (
                    parent is not None and parent.type == "redirected_statement" and _to_file(walker, parent, True)):
                return True
            continue
        stack.extend(current.named_children)
    return False


def _to_file(walker: Any, node: Any, anywhere: bool = False) -> bool:
    """Whether the redirected statement ``node`` sends stdout to a file (``anywhere``: or to
    any other place: ``/dev/null`` too)."""
    if node is None or node.type != "redirected_statement":
        return False
    for child in node.named_children:
        if child.type == "file_redirect":
            found = _STDOUT_REDIRECT_RE.match(walker.src.node_text(child))
            if found is not None and (anywhere or found.group(1) not in ("/dev/null", "/dev/stderr", "&2")):
                return True
    return False


#: at most this many values of a variable are remembered from alternative branches
_MAX_ALTERNATIVES = 4


#: the key of ``State.alternatives`` for the working directory (not a variable name)
CWD_KEY = " cwd"


def settle_cwd(state: State, cwds: list[str], entry: tuple[str, tuple[str, ...]] | None = None) -> str:
    """The working directory after alternatives that left ``cwds``: one of them when they
    agree; else a new mark in ``state.alternatives`` (each later command is walked once per
    directory, strictest wins), or unknown when there are too many.  ``entry``: the
    alternatives the commands started from (the mark again when none of them moved)."""
    if entry is not None and len(cwds) == max(len(entry[1]), 1) and all(
            cwd == entry[1][index % len(entry[1])] for index, cwd in enumerate(cwds)):
        return entry[0]
    distinct = sorted(set(cwds))
    if len(distinct) == 1:
        return distinct[0]
    if len(distinct) > _MAX_ALTERNATIVES:
        return UNKNOWN
    mark = "".join([UNKNOWN, UNKNOWN])  # a new object: the cwd holds it until the next cd
    state.alternatives = dict(state.alternatives) if state.alternatives else {}
    state.alternatives[CWD_KEY] = (mark, tuple(distinct))
    return mark


def _list_parts(node: Any, items: list[Any], operators: list[str]) -> None:
    """The commands of a (nested) ``list`` node and the ``&&``/``||`` between them, in order."""
    for child in node.children:
        kind = child.type
        if kind in ("&&", "||"):
            operators.append(kind)
        elif kind == "list":
            _list_parts(child, items, operators)
        elif child.is_named and kind != "comment":
            items.append(child)


class ControlFlow:
    """``if``, ``case``, ``while``/``until``, ``for`` and C-style ``for`` (a Walker mixin)."""

    state: State
    #: (source bytes, span) of an endless loop → what its body holds (see :meth:`_endless`)
    _loop_texts: dict[tuple[bytes, tuple[int, int]], str] | None = None
    if TYPE_CHECKING:  # provided by the Walker this class is mixed into
        src: Source
        words: WordExpander
        effects: list[Effect]

        def walk(self, node: Any, stdin: Stdin = ...) -> None: ...

        def arithmetic(self, node: Any) -> None: ...

        def unknown(self, why: str, span: tuple[int, int]) -> None: ...

        aliases: dict[str, str] | None
        function_depth: int

    def _branches(self, branches: list[list[Any]], stdin: Stdin) -> None:
        """Walk alternative branches from the same state; merge: disagreeing facts become
        unknown."""
        before = self.state
        results: list[State] = []
        for branch in branches:
            self.state = before.copy()
            for node in branch:
                self.walk(node, stdin)
            results.append(self.state)
        self.state = self._merge(before, results)

    def visit_list(self, node: Any, stdin: Stdin) -> None:
        """``a && b || c …``: the first command may succeed or fail; after it, each command
        runs when the one before succeeded (``&&``) or failed (``||``), assumed to succeed
        itself.  Both ways are walked and a working directory or variable they leave different
        holds both values afterwards (strictest wins: ``[ -n "$CI" ] && cd / || cd /tmp;
        rm -rf etc`` is in / or in /tmp).  A way that ends in ``exit`` (``return`` in a
        function) leaves nothing for what follows (``t=$(mktemp -d) || exit 1``); a first
        command that only assigns from a substitution assigns even when it fails, what the
        substitution printed or nothing (see :meth:`_failed_assignment`)."""
        items: list[Any] = []
        operators: list[str] = []
        _list_parts(node, items, operators)
        if len(operators) != len(items) - 1:  # (not the shape expected: one after the other)
            for item in items:
                self.walk(item, stdin)
            return
        failed = self.state.copy()  # the state when the first command fails
        self.walk(items[0], stdin)
        failed = self._failed_assignment(items[0]) or failed
        walked: set[int] = set()
        exited = self._chain(items[1:], operators, True, stdin, walked, None)
        succeeded = self.state
        results = [] if exited else [succeeded]
        if "||" in operators:
            self.state = failed
            if not self._chain(items[1:], operators, False, stdin, walked, results):
                results.append(self.state)
            self.state = succeeded
        else:
            results.append(failed)
        if not results:  # (every way exits: what follows never runs)
            return
        first = results[0]
        if first is not succeeded or any(r.cwd != first.cwd or r.variables != first.variables for r in results[1:]):
            self.state = self._merge(first, results)

    def _failed_assignment(self, node: Any) -> State | None:
        """The state after ``node`` when it is only assignments (``t=$(mktemp -d)``) and its
        last substitution fails: each variable it assigned holds what the substitution
        printed (the value known on success, when it prints it and then fails) or nothing;
        None for any other command (its failure leaves the state before it)."""
        if node.type == "variable_assignment":
            assignments = [node]
        elif node.type == "variable_assignments":
            assignments = node.named_children
        else:
            return None
        names: list[str] = []
        substituted = False
        for child in assignments:
            if child.type != "variable_assignment":
                return None
            target = child.child_by_field_name("name")
            value = child.child_by_field_name("value")
            if target is None or target.type != "variable_name":
                return None
            names.append(self.src.node_text(target))
            stack = [value] if value is not None else []
            while stack:
                current = stack.pop()
                if current.type == "command_substitution":
                    substituted = True
                    break
                stack.extend(current.named_children)
        if not substituted:
            return None
        empty = self.state.copy()
        for name in names:
            if name in empty.variables and not empty.variables[name].startswith(NAMEREF):
                empty.variables[name] = ""
        return self._merge(self.state, [self.state, empty])

    def _exits(self, node: Any) -> bool:
        """Whether ``node`` ends the shell whatever it does: ``exit``, ``return`` in a
        function, or a ``{ …; }`` group whose last command is one."""
        while node.type == "compound_statement" and node.children[:1] and node.children[0].type == "{":
            named = [child for child in node.named_children if child.type != "comment"]
            if not named:
                return False
            node = named[-1]
        if node.type != "command":
            return False
        name_node = node.child_by_field_name("name")
        name = self.src.node_text(name_node) if name_node is not None else ""
        if name not in ("exit", "return") or name in self.state.functions or \
                (self.aliases is not None and name in self.aliases):
            return False
        return name == "exit" or self.function_depth > 0

    def _chain(self, items: list[Any], operators: list[str], ok: bool, stdin: Stdin, walked: set[int],
               side: list[State] | None) -> bool:
        """Walk the commands of a list that run after a first one that succeeded (``ok``) or not
        (each assumed to succeed).  On the second way (``side`` given), a command neither way
        ran (``a || b || c``: ``c`` runs when ``b`` fails) is walked from a copy of the state
        there, its result added to ``side`` unless it exits: every command of the list is
        judged.  Whether the way walked ends in an ``exit`` (see :meth:`_exits`)."""
        exited = False
        for operator, item in zip(operators, items, strict=True):
            if (operator == "&&") == ok:
                self.walk(item, stdin)
                walked.add(id(item))
                ok = True
                exited = exited or self._exits(item)
            elif side is not None and id(item) not in walked:
                saved = self.state
                self.state = saved.copy()
                self.walk(item, stdin)
                walked.add(id(item))
                if not self._exits(item):
                    side.append(self.state)
                self.state = saved
        return exited

    @staticmethod
    def _merge(before: State, results: list[State]) -> State:
        """One state after alternatives: facts they disagree on become unknown."""
        merged = before.copy()
        names = set().union(*(r.variables.keys() for r in results)) if results else set()
        for name in names:
            values: set[str | None] = set()
            for r in results:  # (a value that is itself alternatives stands for each of them)
                value = r.variables.get(name)
                entry = r.alternatives.get(name) if r.alternatives and value is not None else None
                if entry is not None and entry[0] is value:
                    values.update(entry[1])
                else:
                    values.add(value)
            value = values.pop() if len(values) == 1 else None  # None: unset in a branch, or they disagree
            if value is None and 1 < len(values) <= _MAX_ALTERNATIVES:
                # remember what each branch left (strictest wins when a command uses it)
                options = tuple(sorted({UNKNOWN if v is None else v for v in values}))
                mark = "".join([UNKNOWN, UNKNOWN])  # a new object: the variable holds it until reassigned
                if merged.alternatives is None:
                    merged.alternatives = {}
                merged.alternatives[name] = (mark, options)
                merged.variables[name] = mark
                continue
            merged.variables[name] = UNKNOWN if value is None else value
        cwds: list[str] = []
        for r in results:
            entry = r.alternatives.get(CWD_KEY) if r.alternatives else None
            cwds.extend(entry[1] if entry is not None and entry[0] is r.cwd else (r.cwd,))
        merged.cwd = settle_cwd(merged, cwds)
        for r in results:
            merged.functions.update(r.functions)
            merged.links.update(r.links)
            merged.exported |= r.exported
        return merged

    def visit_if_statement(self, node: Any, stdin: Stdin) -> None:
        if node.start_byte > 6 and self.src.data[node.start_byte - 1] in b" \t" and \
                self.coprocess(node, stdin, ControlFlow.visit_if_statement):  # type: ignore[attr-defined]
            return
        conditions: list[Any] = []
        branches: list[list[Any]] = []
        current: list[Any] = []
        has_else = False
        for index, child in enumerate(node.children):
            name = node.field_name_for_child(index)
            if name == "condition" and child.is_named:
                conditions.append(child)
            elif child.type in ("elif_clause", "else_clause"):
                has_else = has_else or child.type == "else_clause"
                if child.type == "elif_clause":
                    parts = list(child.named_children)
                    # an elif's first statements up to `then` are its condition
                    seen_then = False
                    body: list[Any] = []
                    for sub in child.children:
                        if sub.type == "then":
                            seen_then = True
                        elif sub.is_named and not seen_then:
                            conditions.append(sub)
                        elif sub.is_named:
                            body.append(sub)
                    del parts
                    branches.append(body)
                else:
                    branches.append(list(child.named_children))
            elif child.is_named and child.type != "comment":
                current.append(child)
        for condition in conditions:
            self.walk(condition, stdin)
        if not current or not all(branches):  # `if a; then fi`: a syntax error to bash
            self.syntax_error("`then` or `else` with no command", self.src.span(node))  # type: ignore[attr-defined]
        branches.insert(0, current)
        if not has_else:
            branches.append([])
        self._branches(branches, stdin)

    def visit_case_statement(self, node: Any, stdin: Stdin) -> None:
        if node.start_byte > 6 and self.src.data[node.start_byte - 1] in b" \t" and \
                self.coprocess(node, stdin, ControlFlow.visit_case_statement):  # type: ignore[attr-defined]
            return
        value = node.child_by_field_name("value")
        subject = self.words.text(value) if value is not None else None
        if subject is not None and UNKNOWN in subject:
            subject = None
        items: list[tuple[list[Any], bool | None]] = []
        falls_through = False
        for child in node.named_children:
            if child.type == "case_item":
                body = []
                patterns = []
                for index, sub in enumerate(child.children):
                    if child.field_name_for_child(index) == "value":
                        self.words.parts(sub)
                        patterns.append(sub)
                    elif sub.is_named:
                        body.append(sub)
                    elif sub.type in (";&", ";;&"):
                        falls_through = True
                items.append((body, self._case_match(subject, patterns)))
        # the items that may run, in order: none past one that surely matches (`;;` ends the
        # case there), none that surely does not (unless a `;&`/`;;&` may run it anyway)
        branches: list[list[Any]] = []
        matched = False
        for body, status in items:
            if status is False and not falls_through:
                continue
            branches.append(body)
            if status is True and not falls_through:
                matched = True
                break
        if not matched:
            branches.insert(0, [])  # (no item matches)
        self._branches(branches, stdin)

    def _case_match(self, subject: str | None, patterns: list[Any]) -> bool | None:
        """Whether one of a case item's ``patterns`` matches the known ``subject``: True or
        False when every pattern is known text (no tilde, no extended glob), else None —
        also when only a match ignoring case (``shopt -s nocasematch``) tells them apart."""
        if subject is None:
            return None
        from stockade.analyzer.paramexp import glob_regex, operand_tokens

        known = True
        for pattern in patterns:
            text = self.src.node_text(pattern)
            if "~" in text:
                known = False
                continue
            if pattern.type == "extglob_pattern":
                tokens = None if any(char in text for char in "()$`") else [(text, False)]
            else:
                groups = operand_tokens(self.words, [pattern])
                tokens = groups[0] if groups is not None and len(groups) == 1 else None
            regex = glob_regex(tokens) if tokens is not None else None
            if regex is None:
                known = False
                continue
            if regex.fullmatch(subject):
                return True
            if re.compile(regex.pattern, re.S | re.I).fullmatch(subject):
                known = False
        return False if known else None

    def visit_while_statement(self, node: Any, stdin: Stdin) -> None:
        if node.start_byte > 6 and self.src.data[node.start_byte - 1] in b" \t" and \
                self.coprocess(node, stdin, ControlFlow.visit_while_statement):  # type: ignore[attr-defined]
            return
        body = [c for i, c in enumerate(node.children) if c.is_named and node.field_name_for_child(i) != "condition"]
        conditions = []
        for index, child in enumerate(node.children):
            if node.field_name_for_child(index) == "condition" and child.is_named:
                conditions.append(child)
                self.walk(child, stdin)
        text = self.src.node_text
        condition = " ".join(text(c).strip(" \t;\n") for c in conditions)
        forever = ("true", ":", "/bin/true", "/usr/bin/true", "[ 1 ]", "((1))", "(( 1 ))")
        keyword = node.children[0].type if node.children else ""
        if (keyword == "while" and condition in forever) or (keyword == "until" and condition in ("false",
                                                                                                 "/bin/false")) or \
                (keyword == "while" and _READ_CONDITION_RE.match(condition) is not None and
                 _endless_stream(stdin)):  # (`yes | while read x; do …; done`)
            endless = self._endless(node, body, stdin)
        else:
            endless = False
        self._branches([body, []], stdin)
        if endless:
            self._endless_output()

    def _endless(self, node: Any, body: list[Any], stdin: Stdin) -> bool:
        """An endless loop (``while true``/``while :``/``until false``/``for ((;;))``, no
        ``break``, ``exit`` or ``return`` in it) that starts background processes, appends to a
        file or creates a new file or directory every turn exhausts processes, the disk or its
        inodes: unknown effects, as a fork bomb is.  New paths are found by walking the body
        twice in a row: a second turn that writes a path the first did not (``mkdir d; cd d``,
        ``touch x$i; ((i++))``) or one not known (``mkdir d$RANDOM``) grows without end."""
        span = (node.start_byte, node.end_byte)
        # what the body's text holds, read once per loop (a loop inside loops is walked again
        # for each turn of theirs: reading its whole text each time would be quadratic)
        seen = self._loop_texts
        if seen is None:
            seen = self._loop_texts = {}
        key = (self.src.data, span)
        kind = seen.get(key)
        if kind is None:
            text = self.src.node_text
            inside = " ".join(text(b) for b in body)
            kind = seen[key] = ("exit" if _LOOP_EXIT_RE.search(inside) is not None else
                                "background" if _BACKGROUND_RE.search(inside) is not None else
                                "append" if ">>" in inside else
                                "print" if any(_prints(self, b) for b in body) else "")
        if kind == "exit":
            return False
        if kind == "background":
            self.unknown("an endless loop starts background processes without end (it exhausts the processes)", span)
            return False
        if kind == "append":
            self.unknown("an endless loop writes to a file without end (it fills the disk)", span)
            return False
        if kind == "print" and _to_file(self, node.parent):  # (`while :; do date; done > log`)
            self.unknown("an endless loop writes its output to a file without end (it fills the disk)", span)
            return False
        before = self.state
        self.state = before.copy()
        effects = self.effects
        start = len(effects)
        try:
            for child in body:
                self.walk(child, stdin)
            middle = len(effects)
            for child in body:  # (the second turn's effects are what bash would do: they stay)
                self.walk(child, stdin)
        finally:
            self.state = before
        first = {effect.path for effect in effects[start:middle] if type(effect) is Write}
        for effect in effects[middle:]:
            if type(effect) is Write and (UNKNOWN in effect.path or effect.path not in first):
                self.unknown("an endless loop creates a new file or directory every turn (it exhausts the disk "
                             "or its inodes)", span)
                return False
        return kind == "print"  # (its output is endless: a pipe into a file fills the disk too)

    visit_until_statement = visit_while_statement

    def _endless_output(self) -> None:
        """What an endless loop that prints writes to stdout: an endless stream (see
        :mod:`.models.pipefill`: a filter that copies it into a file fills the disk)."""
        from stockade.analyzer.exec import Stdin
        from stockade.analyzer.models.pipefill import ENDLESS

        self.set_output(Stdin(None, ENDLESS + "an endless loop"))  # type: ignore[attr-defined]

    def visit_for_statement(self, node: Any, stdin: Stdin) -> None:
        variable = node.child_by_field_name("variable")
        name = self.src.node_text(variable) if variable is not None else ""
        items: list[str] = []
        has_values = False
        body: Any = None
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "value":
                has_values = True
                items.extend(self.words.fields(child))
            elif field_name == "body":
                body = child
        if not has_values:
            items = [UNKNOWN] if self.state.positional is None else self.state.positional[1:]
        if body is None:
            return
        joined = "".join(items)
        turns = len(items) if has_values and UNKNOWN not in joined and not any(c in joined for c in "*?[") \
            else None  # (None: not known — a glob is as many turns as it matches names)
        if len(items) > 8:
            items = [UNKNOWN]
        before = self.state
        results: list[State] = []
        each: list[str | None] = list(items) if items else [None]  # None: the body runs with no item known
        control = before.variables.get(name)
        if control is not None and control.startswith(NAMEREF):  # a nameref: each item is the name it refers to
            each = [None if item is None else NAMEREF + item for item in each]
        for item in each:
            self.state = before.copy()
            if item is not None:
                self.state.variables[name] = item
                if UNKNOWN not in item and ("*" in item or "?" in item or "[" in item):
                    self.state.variables[LISTED_KEY + name] = item  # (one name it matches: words.resolve_listed)
            self.walk(body, stdin)
            results.append(self.state)
        if results:
            self._doubling(node, before, results[0], turns)
        if not has_values or not items or UNKNOWN in "".join(items):
            results.append(before.copy())  # the body may not run at all
        self.state = self._merge(before, results)

    def _doubling(self, node: Any, before: State, after: State, turns: int | None) -> None:
        """A loop whose turn repeats a variable's value (``x=$x$x``, ``x+=$x``) grows it
        geometrically: over many turns (or a number not known) it exhausts the shell's memory
        — unknown effects, as filling the disk is."""
        for name, value in after.variables.items():
            old = before.variables.get(name)
            if not old or UNKNOWN in old or len(value) < 2 * len(old) or value != old * (len(value) // len(old)):
                continue
            factor = len(value) // len(old)
            if turns is None or turns * factor.bit_length() > 40 or len(old) * factor ** turns > 1 << 30:
                self.unknown(f"each turn of the loop repeats `${name}` {factor} times over: over "
                             f"{'a number not known of' if turns is None else turns} turns it exhausts the memory",
                             (node.start_byte, node.end_byte))
                return

    def visit_c_style_for_statement(self, node: Any, stdin: Stdin) -> None:
        if node.start_byte > 6 and self.src.data[node.start_byte - 1] in b" \t" and \
                self.coprocess(node, stdin, ControlFlow.visit_c_style_for_statement):  # type: ignore[attr-defined]
            return
        forever = True  # `for ((;;))`, `for ((;1;))`: no condition, or a constant one that holds
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "body":
                endless = forever and self._endless(node, [child], stdin)
                self._branches([[child], []], stdin)
                if endless:
                    self._endless_output()
            elif child.is_named:
                if field_name == "condition":
                    condition = self.src.node_text(child).strip()
                    forever = forever and condition.isdigit() and int(condition) != 0
                self.arithmetic(child)
