"""A reply is untrusted text: on a terminal, none of its escape sequences reach the screen (a
window title changed, the screen cleared, colours), whichever way it is shown. Streamed chat
text was cleaned; ``chat --no-stream`` and ``replay`` wrote it raw. On a pipe or a file the
text stays as it came (it is data there).

In-process: stdout is an in-memory stream that says it is a terminal."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from rxturn.cli import main

from ._support import ThreadedFake

HOSTILE = "Hi \x1b]0;pwned\x07 \x1b[2J there\x9b1m"
SHOWN = "Hi ]0;pwned [2J there1m"
SCENARIO = {"models": {"*": [{"text": HOSTILE}]}}


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _on_a_terminal(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> str:
    """``main(argv)``'s stdout, a terminal (set here: pytest sets its own after fixtures)."""
    monkeypatch.setenv("TERM", "xterm-256color")
    screen = _Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    assert main(argv) == 0
    return screen.getvalue()


def _chat(base_url: str) -> list[str]:
    return ["chat", "--provider", "openai", "--base-url", base_url, "--model", "m", "--no-stream"]


def test_chat_without_streaming(monkeypatch: pytest.MonkeyPatch) -> None:
    with ThreadedFake(SCENARIO) as fake:
        shown = _on_a_terminal(monkeypatch, [*_chat(fake.openai_base_url), "hi"])
    assert shown == SHOWN + "\n"


def test_replay(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": HOSTILE}, "finish_reason": "stop"}],
    }
    path = tmp_path / "hostile.sse"
    path.write_text(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n")
    shown = _on_a_terminal(monkeypatch, ["replay", str(path)])
    assert shown.splitlines()[0] == SHOWN


def test_on_a_pipe_the_text_is_kept_as_it_came(capsys: pytest.CaptureFixture[str]) -> None:
    with ThreadedFake(SCENARIO) as fake:
        assert main([*_chat(fake.openai_base_url), "hi"]) == 0
    assert capsys.readouterr().out == HOSTILE + "\n"
