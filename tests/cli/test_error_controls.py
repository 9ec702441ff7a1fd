"""Error and notice lines carry text a server chose (an error message, a reason): its control
characters — an ESC that starts a colour or a cursor move, a bell, a carriage return — are
shown escaped, never sent to the terminal, where a hostile endpoint could repaint or retitle
it. (Reply text on a terminal has its own filter.)"""

from __future__ import annotations

import pytest

from rxturn.cli._console import one_line
from rxturn.cli._replay import _describe
from rxturn.cli._view import describe_error
from rxturn.errors import APIStatusError

HOSTILE = "bad\x1b[31m red\x1b]0;title\x07 \r\n second\x9b2J\x7f"
SHOWN = "bad\\x1b[31m red\\x1b]0;title\\x07 \\r\\n second\\x9b2J\\x7f"


def test_one_line_escapes_every_control_character() -> None:
    assert one_line(HOSTILE) == SHOWN
    assert one_line("tab\tstays, é and 漢字 too") == "tab\tstays, é and 漢字 too"


def test_a_provider_error_line_shows_them_escaped() -> None:
    error = APIStatusError(f"HTTP 400: {HOSTILE}", status_code=400)
    line = describe_error(error, "model m at http://127.0.0.1:9/v1/messages")
    assert "\x1b" not in line and "\x07" not in line and "\x9b" not in line
    assert SHOWN in line


@pytest.mark.parametrize("control", ["\x1b", "\x07", "\x00", "\x9b"])
def test_replay_errors_escape_them_too(control: str) -> None:
    text = _describe(ValueError(f"in-stream error: x{control}y"))
    assert control not in text
