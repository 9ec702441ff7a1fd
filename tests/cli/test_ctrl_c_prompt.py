"""The interactive chat's prompt on a terminal. Ctrl-C there (no turn running) says how the chat
ends and goes on reading the line: the ``> `` a person types after is shown again (it was not:
the hint was the last thing on the screen, and the next prompt was typed after nothing).
Ctrl-D there ends the chat and the prompt's line (the shell's prompt followed ``> ``)."""

from __future__ import annotations

import io
import os
import signal
import threading

import pytest

from rxturn.cli import main

from ._support import closed_port

HINT = "\n(/quit, Ctrl-D or EOF ends the chat)\n"


class _Terminal:
    """A terminal's stdin: the first read is where the user presses Ctrl-C; once the chat has
    answered it (``answered``), they press Ctrl-D."""

    def __init__(self, answered: threading.Event) -> None:
        self.answered = answered

    def isatty(self) -> bool:
        return True

    def readline(self, size: int = -1) -> str:
        os.kill(os.getpid(), signal.SIGINT)
        self.answered.wait(10)
        return ""  # Ctrl-D


class _Screen(io.StringIO):
    """stderr, telling ``answered`` once the hint is on it."""

    def __init__(self, answered: threading.Event) -> None:
        super().__init__()
        self.answered = answered

    def write(self, text: str) -> int:
        written = super().write(text)
        if HINT in self.getvalue():
            self.answered.set()
        return written


@pytest.mark.parametrize(("extra", "prompt"), [([], "> "), (["--json"], "")], ids=["text", "json"])
def test_ctrl_c_at_the_prompt_shows_the_prompt_again(
    extra: list[str], prompt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered = threading.Event()
    screen = _Screen(answered)
    monkeypatch.setattr("sys.stdin", _Terminal(answered))
    monkeypatch.setattr("sys.stderr", screen)
    url = f"http://127.0.0.1:{closed_port()}"  # (no turn runs: nothing is sent)
    code = main(["chat", "--provider", "ollama", "--base-url", url, "--model", "m", *extra])
    assert answered.is_set()
    # (with --json no prompt is shown at all: a program reads the lines)
    ended = "\n" if prompt else ""
    assert (code, screen.getvalue()) == (0, f"{prompt}{HINT}{prompt}{ended}")


class _AtItsEnd:
    """A terminal's stdin where the user presses Ctrl-D at once."""

    def isatty(self) -> bool:
        return True

    def readline(self, size: int = -1) -> str:
        return ""


def test_ctrl_d_at_the_prompt_ends_its_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", _AtItsEnd())
    url = f"http://127.0.0.1:{closed_port()}"
    assert main(["chat", "--provider", "ollama", "--base-url", url, "--model", "m"]) == 0
    assert capsys.readouterr() == ("", "> \n")
