"""Input with no end (``/dev/zero``, ``/dev/urandom``, a stream that never closes) or simply too
large is refused once it passes a bound, with one line and exit 2, instead of being read until
the machine runs out of memory. The bounds are far above any real input (512 MiB for a recorded
stream, 64 MiB for a prompt on stdin); the tests lower them to keep the machine free."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import rxturn._replay
import rxturn.cli._console
from rxturn import replay_message
from rxturn.cli import main
from rxturn.errors import ConfigError

from ._support import ThreadedFake, closed_port

LIMIT = 1024


class _Stdin(io.TextIOWrapper):
    """A text stdin over ``data`` (with a ``buffer``, as the real one has)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")

    def isatty(self) -> bool:
        return False


@pytest.fixture
def small_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rxturn._replay, "MAX_STREAM_BYTES", LIMIT)
    monkeypatch.setattr(rxturn.cli._console, "MAX_PROMPT_BYTES", LIMIT)


@pytest.mark.usefixtures("small_bounds")
def test_replay_reads_a_file_no_further_than_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "big.sse"
    path.write_bytes(b"data: " + b"x" * LIMIT + b"\n\n")
    with pytest.raises(
        ConfigError, match=r"^larger than 1 KiB, the most a replay reads \(.*big\.sse\)$"
    ):
        replay_message(path)


@pytest.mark.usefixtures("small_bounds")
def test_replay_of_an_endless_file_ends(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "/dev/zero"]) == 2
    assert capsys.readouterr().err == (
        "rxturn replay: error: larger than 1 KiB, the most a replay reads (/dev/zero)\n"
    )


@pytest.mark.usefixtures("small_bounds")
def test_replay_of_too_much_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", _Stdin(b"data: " + b"x" * LIMIT))
    assert main(["replay", "-"]) == 2
    assert capsys.readouterr().err == (
        "rxturn replay: error: larger than 1 KiB, the most a replay reads (stdin)\n"
    )


@pytest.mark.usefixtures("small_bounds")
def test_a_prompt_on_stdin_beyond_the_bound_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", _Stdin(b"word " * LIMIT))
    url = f"http://127.0.0.1:{closed_port()}"
    assert main(["chat", "--provider", "ollama", "--base-url", url, "--model", "m", "-"]) == 2
    assert capsys.readouterr().err == (
        "rxturn chat: error: the prompt on stdin is larger than 1 KiB; nothing was sent\n"
    )


@pytest.mark.usefixtures("small_bounds")
def test_an_interactive_line_beyond_the_bound_ends_the_chat(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # read whole before (`chat < /dev/zero` until memory ran out: MemoryError, "a bug in rxturn")
    monkeypatch.setattr("sys.stdin", _Stdin(b"hi\n" + b"word " * LIMIT + b"\nhi again\n"))
    with ThreadedFake({"models": {"*": [{"text": "served"}]}}) as fake:
        args = ["chat", "--provider", "ollama", "--base-url", fake.base_url, "--model", "m"]
        assert main(args) == 2
        assert len(fake.requests) == 1  # the first line only
    assert capsys.readouterr() == (
        "served\n",
        "rxturn chat: error: line 2 of stdin is larger than 1 KiB; nothing was sent\n",
    )
