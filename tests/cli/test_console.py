"""The terminal plumbing in-process: erasing exactly the rows an attempt covered, untrusted
control characters kept off the terminal, the colour rules."""

from __future__ import annotations

import io
import os
import pty
from collections.abc import Iterator
from typing import TextIO

import pytest

from rxturn.cli._console import LiveText, wants_color

from ._support import screen

COLS = 80  # what LiveText assumes when its stream has no terminal size


@pytest.mark.parametrize(
    "text",
    [
        "short",
        "x" * 78,  # with the 2-column prefix: exactly one full row
        "x" * 79,  # one column into the second row
        "x" * 158,  # exactly two full rows
        "line one\nline two\n",  # ends on a fresh row
        "\n\nafter blank lines",
        "\tindented\tby tabs" * 6,
        "全角" * 25,  # double-width characters wrap early
        "x" * 77 + "全",  # a wide character that does not fit the row's last column
    ],
)
def test_erase_removes_exactly_the_rows_the_attempt_covered(text: str) -> None:
    out = io.StringIO()
    out.write("a line above\n")
    live = LiveText(out, prefix="  ")
    for start in range(0, len(text), 7):  # as fragments, the way a stream delivers it
        live.write(text[start : start + 7])
    live.erase()
    live.write("the reply")
    live.end()
    received = out.getvalue().replace("\n", "\r\n")  # what a terminal's line discipline sends
    assert [line for line in screen(received, cols=COLS) if line] == [
        "a line above",
        "  the reply",
    ]


def test_control_characters_from_a_reply_never_reach_the_terminal() -> None:
    out = io.StringIO()
    live = LiveText(out)
    live.write("safe\x1b]0;pwned\x07 \x1b[2Jtext\r\x9b1m\x7f\n\tnext")
    assert out.getvalue() == "safe]0;pwned [2Jtext1m\n\tnext"


@pytest.fixture
def terminal() -> Iterator[TextIO]:
    master, slave = pty.openpty()
    stream = open(slave, "w")  # noqa: SIM115 - closed below
    try:
        yield stream
    finally:
        stream.close()
        os.close(master)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, True),
        ({"NO_COLOR": "1"}, False),
        ({"NO_COLOR": "0"}, False),  # any non-empty value
        ({"NO_COLOR": ""}, False),  # any value, an empty one included
        ({"TERM": "dumb"}, False),
    ],
)
def test_colour_on_a_terminal_follows_no_color_and_term(
    terminal: TextIO, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: bool
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert wants_color(terminal) is expected


def test_never_colour_off_a_terminal_unless_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert wants_color(io.StringIO()) is False
    assert wants_color(io.StringIO(), forced=True) is True  # --color
