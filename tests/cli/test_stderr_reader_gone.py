"""A reader of stderr that goes away (``2>&1 >/dev/null | head -0``, a log collector that
died) changes nothing of a command's work or exit status: notices and error lines are dropped,
stdout still gets everything, and the exit code is the command's own. Only stdout's reader
going away stops a command (exit 141)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from recorded import FIXTURES

from ._support import RXTURN, TIMEOUT, clean_env, fake_server

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess

BASIC = FIXTURES / "anthropic" / "basic_response.sse"


def _stderr_reader_gone(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    """``rxturn ARGS`` with stderr a pipe whose reader has closed before the command starts."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [*RXTURN, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=write_end,
            timeout=TIMEOUT,
            env=clean_env(),
        )
    finally:
        os.close(write_end)


def test_a_bad_argument_still_exits_2() -> None:
    assert _stderr_reader_gone(["replay", "/nonexistent/stream.sse"]).returncode == 2
    assert _stderr_reader_gone(["chat", "--provider", "nope", "--model", "m", "x"]).returncode == 2


def test_a_replay_still_prints_its_reply() -> None:
    out = _stderr_reader_gone(["replay", str(BASIC)])
    assert (out.returncode, out.stdout.decode().splitlines()[0]) == (0, "Hello there!")


def test_the_demo_plays_to_the_end_without_its_notices() -> None:
    out = _stderr_reader_gone(["demo"])
    assert out.returncode == 0
    # the demo's last words are its summary, after every scene
    assert out.stdout.decode().count("\n") > 10


def test_a_chat_with_retry_notices_serves_and_a_failed_one_exits_1(tmp_path: Path) -> None:
    scenario = {
        "models": {
            "good": [{"status": 500}, {"text": "served after a retry"}],
            "bad": [{"status": 401}],
        }
    }
    with fake_server(scenario, tmp_path) as url:
        base = ["chat", "--provider", "anthropic", "--base-url", url]
        served = _stderr_reader_gone([*base, "--model", "good", "hi"])
        failed = _stderr_reader_gone([*base, "--model", "bad", "hi"])
    assert (served.returncode, served.stdout) == (0, b"served after a retry\n")
    assert (failed.returncode, failed.stdout) == (1, b"")
