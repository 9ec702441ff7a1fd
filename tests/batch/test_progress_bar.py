"""The progress bar on a terminal that reports no size (a pseudo-terminal no one sized, as
``script`` or ``docker run -t`` make): tqdm took its 0 columns for -1 and drew nothing for the
whole run; the bar is drawn at a standard width instead."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from typing import TextIO

import pytest

from rxturn.batch._api import Tally, _bar
from rxturn.batch._progress import Reporter

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


def _drawn(master: int) -> str:
    os.set_blocking(master, False)
    chunks: list[bytes] = []
    try:
        while chunk := os.read(master, 65536):
            chunks.append(chunk)
    except (BlockingIOError, OSError):  # all read
        pass
    return b"".join(chunks).decode(errors="replace")


@pytest.fixture
def terminal() -> Iterator[tuple[int, TextIO]]:
    """A new pseudo-terminal (0 rows, 0 columns): its master and a text stream on its slave."""
    master, slave = os.openpty()
    try:
        assert os.get_terminal_size(slave).columns == 0
        with open(slave, "w", closefd=False) as stream:
            yield master, stream
    finally:
        os.close(slave)
        os.close(master)


def test_the_command_s_bar_shows_on_a_terminal_of_no_size(terminal: tuple[int, TextIO]) -> None:
    master, stream = terminal
    tally = Tally(4)
    tally.count("ok", 3, 2, None)

    async def show() -> None:
        reporter = Reporter("bar", tally, stream)
        reporter.start()
        reporter.stop()

    asyncio.run(show())
    drawn = _drawn(master)
    assert "1/4" in drawn and "ok 1 err 0" in drawn, repr(drawn)


def test_the_api_s_bar_shows_on_a_terminal_of_no_size(
    terminal: tuple[int, TextIO], monkeypatch: pytest.MonkeyPatch
) -> None:
    master, stream = terminal
    monkeypatch.setattr(sys, "stderr", stream)
    bar = _bar(4)
    bar.update(3)
    bar.close()
    assert "3/4" in _drawn(master)
