"""The analyzer's records behave like named tuples whose kind is part of their value, and lazy patterns like
compiled ones; the IR's shared ``==``/``hash``/``repr`` match what ``@dataclass`` generates."""

from __future__ import annotations

import dataclasses
import pickle
import re

import pytest

from stockade.analyzer.effects import Delete, Execute, Read, TupleRecord, Unknown, Write
from stockade.analyzer.exec import Stdin
from stockade.analyzer.models import Parsed, Spec
from stockade.analyzer.models.wrappers import Wrapper
from stockade.analyzer.regex import LazyPattern
from stockade.compiler.ir import CommandRule, FsRule, Origin, PatternToken
from stockade.compiler.query import PathDecision


def test_effect_records_are_named_tuples() -> None:
    read = Read("/a", (0, 2))
    assert tuple(read) == ("/a", (0, 2), False, False) and isinstance(read, tuple) and isinstance(read, TupleRecord)
    assert (read.path, read.span, read.recursive, read.skip_hidden) == ("/a", (0, 2), False, False)
    assert Read(path="/a", span=(0, 2), skip_hidden=True).skip_hidden is True
    assert repr(read) == "Read(path='/a', span=(0, 2), recursive=False, skip_hidden=False)"
    assert read._replace(recursive=True) == Read("/a", (0, 2), True)
    assert read._asdict() == {"path": "/a", "span": (0, 2), "recursive": False, "skip_hidden": False}
    assert pickle.loads(pickle.dumps(read)) == read and type(pickle.loads(pickle.dumps(read))) is Read
    assert Write("/a", (0, 1)) == Write("/a", (0, 1)) and hash(Write("/a", (0, 1))) == hash(Write("/a", (0, 1)))
    assert Execute(("ls",), (0, 2)).argv == ("ls",) and Unknown("why", (0, 1)).why == "why"
    with pytest.raises(AttributeError):
        read.path = "/b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Read("/a")  # type: ignore[call-arg]


def test_record_kinds_are_part_of_the_value() -> None:
    write, delete = Write("/a", (0, 1)), Delete("/a", (0, 1))
    assert write != delete and write.__eq__(delete) is False and write != tuple(write)
    assert len({write, delete, Write("/a", (0, 1))}) == 2
    assert {write: 1, delete: 2}[Delete("/a", (0, 1))] == 2
    assert Read("/a", (0, 1)) != Read("/a", (0, 1), True)


def test_model_records_defaults() -> None:
    assert tuple(Spec()) == ("read", None, None, {}, frozenset(), {}, False, frozenset(), frozenset(), None)
    assert Spec(stdin_out=True).stdin_out and Spec("write").args == "write"
    assert Wrapper(operands=1).operands == 1 and Wrapper().values == frozenset()
    assert Stdin(None, "the terminal").what == "the terminal"
    assert Parsed((), (("x", 1),)).positionals == (("x", 1),)


def test_lazy_pattern_compiles_on_first_use() -> None:
    lazy = LazyPattern(r"a(b+)", re.I)
    assert lazy._compiled is None
    assert lazy.match("ABB").group(1) == "BB"
    assert lazy._compiled is re.compile(r"a(b+)", re.I)
    assert [m.group() for m in lazy.finditer("ab xab")] == ["ab", "ab"]
    assert lazy.sub("-", "abb!") == "-!"


def test_ir_equality_hash_and_repr_are_the_dataclass_ones() -> None:
    rule = FsRule("deny", "/x", origin=Origin("p", 1, 2))
    same = FsRule("deny", "/x", origin=Origin("q", 3, 4))  # origins are not compared
    assert rule == same and hash(rule) == hash(same) and rule != FsRule("read", "/x")
    assert rule != ("deny", "/x") and FsRule.__eq__(rule, object()) is NotImplemented
    assert repr(rule) == "FsRule(kind='deny', pattern='/x', is_glob=False, locked=False, source_text='')"
    token = PatternToken(("git",))
    assert hash(token) == hash((("git",),)) and repr(token) == "PatternToken(alternatives=('git',))"
    command = CommandRule("deny", (token,))
    assert dataclasses.replace(command, reason="r") == CommandRule("deny", (token,), "r")
    assert dataclasses.is_dataclass(command) and [f.name for f in dataclasses.fields(command)][:2] == ["verdict",
                                                                                                   "pattern"]
    with pytest.raises(dataclasses.FrozenInstanceError):  # frozen by the shared base, not generated methods
        command.verdict = "allow"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del command.reason
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(command)) == command and copy.deepcopy(command) == command
    assert dataclasses.asdict(Origin("p", 1, 2)) == {"file": "p", "line": 1, "column": 2, "layer": 0}
    with pytest.raises(TypeError):
        Origin("p", 1)  # a missing argument
    with pytest.raises(TypeError):
        Origin("p", 1, 2, 0, 5)  # too many
    with pytest.raises(TypeError):
        Origin("p", 1, 2, file="q")  # twice
    with pytest.raises(TypeError):
        Origin("p", 1, 2, colour=1)  # unknown
    assert PathDecision("/x", "read", None) == PathDecision("/x", "read", None)
    assert repr(PathDecision("/x", "none", None)) == "PathDecision(path='/x', access='none', rule=None)"
