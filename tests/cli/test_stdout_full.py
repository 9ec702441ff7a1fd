"""A stdout that refuses what is written for another reason than a closed pipe (a full disk:
``> /dev/full``, a quota, an I/O error) is a failure of the command, said in one line,
``rxturn COMMAND: error: cannot write to stdout: <why>``, exit 1: not a traceback, and not
a success the output file does not hold. (A closed pipe stays the quiet exit 141.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from recorded import FIXTURES

from ._support import RXTURN, TIMEOUT, clean_env, fake_server

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess

BASIC = FIXTURES / "anthropic" / "basic_response.sse"
FULL = "cannot write to stdout: No space left on device"


def _to_full_disk(args: list[str]) -> subprocess.CompletedProcess[str]:
    with open("/dev/full", "w") as full:
        return subprocess.run(
            [*RXTURN, *args],
            stdin=subprocess.DEVNULL,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT,
            env=clean_env(),
        )


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["text", "json"])
def test_replay(extra: list[str]) -> None:
    out = _to_full_disk(["replay", str(BASIC), *extra])
    assert (out.returncode, out.stderr) == (1, f"rxturn replay: error: {FULL}\n")


def test_demo() -> None:
    out = _to_full_disk(["demo"])
    assert out.returncode == 1
    assert out.stderr.endswith(f"rxturn demo: error: {FULL}\n")
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["text", "json"])
def test_chat(extra: list[str], tmp_path: Path) -> None:
    with fake_server({"models": {"*": [{"text": "a reply"}]}}, tmp_path) as url:
        out = _to_full_disk(
            ["chat", "--provider", "anthropic", "--model", "m", "--base-url", url, *extra, "hi"]
        )
    assert (out.returncode, out.stderr) == (1, f"rxturn chat: error: {FULL}\n")


def test_fake_server_cannot_say_where_it_listens() -> None:
    out = _to_full_disk(["fake-server"])
    assert (out.returncode, out.stderr) == (1, f"rxturn fake-server: error: {FULL}\n")
