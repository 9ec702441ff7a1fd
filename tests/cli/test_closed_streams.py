"""A command started with a standard stream closed (``<&-``, ``>&-``, ``2>&-``: a supervisor or
a cron job may start it so) behaves as if that stream were ``/dev/null``: a closed stdin reads
as empty, a closed stdout or stderr takes what is written and drops it. Python sets such a
stream to ``None``, where every command failed with a traceback."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from recorded import FIXTURES

from ._support import RXTURN, TIMEOUT, clean_env, fake_server

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess

BASIC = FIXTURES / "anthropic" / "basic_response.sse"


def _closing(fd: int) -> Callable[[], None]:
    def close() -> None:  # in the child, before the command starts
        os.close(fd)

    return close


def _run(args: list[str], closed: int, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``rxturn ARGS`` with descriptor ``closed`` closed and the others as pipes."""
    return subprocess.run(
        [*RXTURN, *args],
        stdin=subprocess.DEVNULL if closed != 0 else None,
        stdout=subprocess.PIPE if closed != 1 else None,
        stderr=subprocess.PIPE if closed != 2 else None,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
        env=clean_env(OPENAI_API_KEY="sk-test-0123456789"),
        preexec_fn=_closing(closed),
        cwd=cwd,
    )


def _no_traceback(out: subprocess.CompletedProcess[str]) -> None:
    for text in (out.stdout, out.stderr):
        assert "Traceback" not in (text or ""), text


def test_a_closed_stdin_reads_as_empty(tmp_path: Path) -> None:
    out = _run(["replay", "-"], 0, tmp_path)
    _no_traceback(out)
    assert (out.returncode, out.stderr) == (2, "rxturn replay: error: empty stream (line 1)\n")
    out = _run(
        ["batch", "run", "-", "-o", "out.jsonl", "--provider", "openai", "--model", "m"],
        0,
        tmp_path,
    )
    _no_traceback(out)
    assert out.returncode == 2
    assert out.stderr.endswith("the input has no rows (it is empty, or only blank lines)\n")


def test_a_closed_stdin_ends_an_interactive_chat(tmp_path: Path) -> None:
    with fake_server({"models": {"*": [{"text": "hi"}]}}, tmp_path) as url:
        out = _run(["chat", "--provider", "openai", "--model", "m", "--base-url", url], 0, tmp_path)
        _no_traceback(out)
        assert out.returncode == 0  # EOF ends the chat


@pytest.mark.parametrize("closed", [1, 2], ids=["stdout", "stderr"])
def test_a_closed_output_stream_drops_what_is_written(closed: int, tmp_path: Path) -> None:
    out = _run(["replay", str(BASIC)], closed, tmp_path)
    _no_traceback(out)
    assert out.returncode == 0
    if closed == 1:
        assert out.stderr == ""  # nothing went wrong, nothing to say
    else:
        assert out.stdout.startswith("Hello there!\n")
    out = _run(["replay", str(tmp_path / "missing.sse")], closed, tmp_path)
    _no_traceback(out)
    assert out.returncode == 2
    with fake_server({"models": {"*": [{"text": "hi"}]}}, tmp_path) as url:
        out = _run(
            ["chat", "--provider", "openai", "--model", "m", "--base-url", url, "hello"],
            closed,
            tmp_path,
        )
        _no_traceback(out)
        assert out.returncode == 0
