"""A bug in rxturn that escapes a command (an exception no command expects) still ends in one
line on stderr and exit 1, naming the exception, never a traceback."""

from __future__ import annotations

import argparse

import pytest

import rxturn.cli._replay
from rxturn.cli import main


def test_an_unexpected_exception_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'\nsecond line")

    monkeypatch.setattr(rxturn.cli._replay, "run", broken)
    assert main(["replay", "whatever.sse"]) == 1
    assert capsys.readouterr().err == (
        "rxturn replay: error: internal error (a bug in rxturn): TypeError: unsupported "
        "operand type(s) for +: 'int' and 'str'\\nsecond line\n"
    )
