"""Every float flag of every command refuses a number it cannot take with the text the user
typed: ``1e400`` parses as ``inf`` and ``-1`` as ``-1.0``, and a line saying ``got inf``
names something nobody wrote. The flags are found on the parser, so a new one is covered."""

from __future__ import annotations

import argparse

import pytest

from rxturn.cli import build_parser, main

from ._support import closed_port

#: What each command needs besides the flag under test to get as far as using it.
_BASE = {
    "chat": ["--provider", "ollama", "--model", "m", "--hedge", "h", "hi"],
    "batch run": ["in.jsonl", "-o", "out.jsonl", "--provider", "ollama", "--model", "m"],
}


def _float_flags() -> list[tuple[str, str]]:
    """(command, flag) for every option whose value is read as a number with a fraction."""
    found: list[tuple[str, str]] = []

    def walk(parser: argparse.ArgumentParser, words: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, f"{words} {name}".strip())
                continue
            if not action.option_strings or not callable(action.type):
                continue
            try:
                value = action.type("0.5")
            except (argparse.ArgumentTypeError, ValueError, TypeError):
                continue
            if isinstance(value, float):
                found.append((words, action.option_strings[-1]))

    walk(build_parser(), "")
    return found


def test_the_float_flags_are_the_ones_known() -> None:
    # a new float flag needs its command's arguments in _BASE (fake-server has none)
    assert {command for command, _ in _float_flags()} <= set(_BASE)
    assert ("chat", "--hedge-delay") in _float_flags()
    assert ("batch run", "--temperature") in _float_flags()


@pytest.mark.parametrize("typed", ["1e400", "-1e400", "nan", "inf", "-inf", "-1", "x"])
@pytest.mark.parametrize(("command", "flag"), _float_flags())
def test_a_refused_number_is_quoted_as_typed(
    command: str, flag: str, typed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    words = [*command.split(), f"{flag}={typed}", *_BASE[command]]
    if command == "chat":
        words += ["--base-url", f"http://127.0.0.1:{closed_port()}"]
    with pytest.raises(SystemExit) as stopped:
        main(words)
    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert (
        err == f"rxturn {command}: error: argument {flag}: expected a number >= 0, got {typed!r}\n"
    )
