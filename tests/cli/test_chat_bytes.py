"""Bytes that are not UTF-8 where ``chat`` takes text: a command-line argument (Python hands
such bytes over as lone surrogates) or a line of the interactive chat's stdin. None of them can
be sent as JSON: each is a one-line error naming where it was, with nothing sent (exit 2 for an
argument; the interactive chat goes on with the next line). They ended in a traceback from the
request encoder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rxturn.cli import main

from ._support import RXTURN, TIMEOUT, clean_env, closed_port, fake_server, received

BAD = "\udcff"  # how Python decodes the byte 0xFF of an argument (surrogateescape)


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ([f"x{BAD}"], "PROMPT"),
        (["--system", BAD, "hi"], "--system"),
        (["--fallback", f"b{BAD}", "hi"], "--fallback"),
        (["--hedge", f"h{BAD}", "hi"], "--hedge"),
        # (chat sent it, to a URL holding a lone surrogate; batch run refused it)
        (["--base-url", f"http://127.0.0.1:9/{BAD}", "hi"], "--base-url"),
    ],
    ids=["prompt", "system", "fallback", "hedge", "base-url"],
)
def test_an_argument_that_is_not_utf8_is_a_bad_argument(
    extra: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    code = main(["chat", "--provider", "ollama", "--base-url", url, "--model", "m", *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"rxturn chat: error: {named} is not valid UTF-8; nothing was sent\n"


def test_a_model_name_that_is_not_utf8_is_a_bad_argument(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    assert main(["chat", "--provider", "ollama", "--base-url", url, "--model", BAD, "hi"]) == 2
    assert capsys.readouterr().err == (
        "rxturn chat: error: --model is not valid UTF-8; nothing was sent\n"
    )


@pytest.mark.slow  # the console script against rxturn fake-server
@pytest.mark.parametrize("errors", ["surrogateescape", "strict"])
def test_an_interactive_line_that_is_not_utf8_is_skipped_with_an_error(
    errors: str, tmp_path: Path
) -> None:
    """Whatever the locale makes of stdin's undecodable bytes (a C locale escapes them, a
    UTF-8 one refuses them)."""
    with fake_server({"models": {"*": [{"text": "served"}]}}, tmp_path) as url:
        out = subprocess.run(
            [*RXTURN, "chat", "--provider", "anthropic", "--model", "m", "--base-url", url],
            input=b"caf\xe9\nhello\n",
            capture_output=True,
            timeout=TIMEOUT,
            env=clean_env(PYTHONIOENCODING=f"utf-8:{errors}"),
        )
        bodies = received(url)
    assert out.returncode == 0
    assert out.stdout == b"served\n"
    assert (
        out.stderr == b"rxturn chat: error: line 1 of stdin is not valid UTF-8; nothing was sent\n"
    )
    assert [body["messages"][-1]["content"] for body in bodies] == ["hello"]


class _BrokenStdin:
    """A stdin whose reads fail (a terminal hung up: EIO)."""

    class buffer:  # the attribute a text stream has
        @staticmethod
        def readline(size: int = -1) -> bytes:
            raise OSError(5, "Input/output error")

    @staticmethod
    def isatty() -> bool:
        return False


def test_an_interactive_chat_whose_stdin_fails_ends_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", _BrokenStdin())
    url = f"http://127.0.0.1:{closed_port()}"
    assert main(["chat", "--provider", "ollama", "--base-url", url, "--model", "m"]) == 1
    assert capsys.readouterr().err == (
        "rxturn chat: error: cannot read stdin: Input/output error\n"
    )
