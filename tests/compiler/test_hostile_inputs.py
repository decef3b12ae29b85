"""Hostile policy inputs: devices, FIFOs, huge files, lone surrogates, floods of diagnostics.

Each must end in a located diagnostic (never a hang or a traceback); the FIFO test would
block forever on a plain ``open``/``read``, so it runs the check in a thread with a bound.
"""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

import pytest

import stockade
from stockade import catalogue as codes
from stockade.cli.render import MAX_SHOWN_DIAGNOSTICS, print_diagnostics
from stockade.compiler.loader import MAX_POLICY_BYTES
from stockade.diagnostics import Diagnostic, Span, StockadeError


def _load_errors(path: Path, tmp_path: Path) -> list[Diagnostic]:
    outcome: list[list[Diagnostic]] = []

    def target() -> None:
        try:
            stockade.load_policy(path, workspace=str(tmp_path), home=str(tmp_path))
            outcome.append([])
        except StockadeError as error:
            outcome.append(error.diagnostics)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "loading the policy hung"
    return outcome[0]


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_include_of_a_device_is_refused(tmp_path: Path, device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    policy = tmp_path / "p.policy"
    policy.write_text(f'include "{device}"\nfilesystem {{\n  read /\n}}\n')
    found = _load_errors(policy, tmp_path)
    assert [(d.code, d.span.line if d.span else None) for d in found] == [(codes.UNREADABLE_POLICY, 1)]
    assert "character device" in found[0].message


def test_include_of_a_fifo_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.policy"
    os.mkfifo(fifo)
    policy = tmp_path / "p.policy"
    policy.write_text('include "pipe.policy"\n')
    found = _load_errors(policy, tmp_path)
    assert [d.code for d in found] == [codes.UNREADABLE_POLICY]
    assert "a FIFO" in found[0].message


def test_the_policy_itself_may_not_be_a_device(tmp_path: Path) -> None:
    found = _load_errors(Path("/dev/zero"), tmp_path)
    assert [d.code for d in found] == [codes.UNREADABLE_POLICY]


def test_a_huge_include_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    big = tmp_path / "big.policy"
    with open(big, "wb") as handle:
        handle.truncate(MAX_POLICY_BYTES * 4)  # sparse: costs no disk
    policy = tmp_path / "p.policy"
    policy.write_text('include "big.policy"\n')
    found = _load_errors(policy, tmp_path)
    assert [d.code for d in found] == [codes.UNREADABLE_POLICY]
    assert "larger than" in found[0].message


def test_a_lone_surrogate_in_text_is_a_diagnostic() -> None:
    with pytest.raises(StockadeError) as caught:
        stockade.load_policy(text='filesystem {\n  read /\ud800\n}\n', workspace="/tmp", home="/tmp")
    [found] = caught.value.diagnostics
    assert found.code == codes.SYNTAX_ERROR and (found.span.line, found.span.column) == (2, 9)
    assert "surrogate" in found.message


def test_thirty_thousand_diagnostics_print_a_capped_list() -> None:
    source = "".join(f"  wrte /x{i}\n" for i in range(30_000))
    items = [Diagnostic(codes.UNKNOWN_KEYWORD, "unknown keyword `wrte` in `filesystem`",
                        Span("many.policy", i + 1, 3, i + 1, 7), "did you mean `write`?") for i in range(30_000)]
    stream = io.StringIO()
    print_diagnostics(items, {"many.policy": source}, stream)
    text = stream.getvalue()
    assert text.count("error[P107]") == MAX_SHOWN_DIAGNOSTICS
    assert f"and {30_000 - MAX_SHOWN_DIAGNOSTICS} more" in text


@pytest.mark.parametrize("content", [
    b"- command: " + b"[" * 10_000 + b"]" * 10_000 + b"\n  expect: deny\n",
    "".join(" " * i + "- \n" for i in range(0, 3000, 2)).encode(),
    b"- command: \xff\xfe\n  expect: deny\n",
    b"tests:\n" + b"".join(b"  " * i + b"- a:\n" for i in range(200)),
])
def test_yaml_suites_never_give_tracebacks(tmp_path: Path, content: bytes) -> None:
    from stockade.compiler.policy_tests import load_yaml_suite

    suite = tmp_path / "suite.yaml"
    suite.write_bytes(content)
    with pytest.raises(StockadeError) as caught:
        load_yaml_suite(str(suite))
    assert [d.code for d in caught.value.diagnostics][:1] == [codes.BAD_TEST_SUITE]


def test_a_yaml_suite_may_not_be_a_fifo(tmp_path: Path) -> None:
    from stockade.compiler.policy_tests import load_yaml_suite

    fifo = tmp_path / "suite.yaml"
    os.mkfifo(fifo)
    with pytest.raises(StockadeError) as caught:
        load_yaml_suite(str(fifo))
    assert "a FIFO" in caught.value.diagnostics[0].message
