"""``rxturn fake-server`` as a real subprocess: first line, serving, signals, bad input."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from cli._support import clean_env

pytestmark = pytest.mark.slow  # each test runs rxturn fake-server as a subprocess

LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)\n")


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rxturn",
        "fake-server",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=clean_env(),
    )


@pytest.fixture
async def server(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    args: tuple[str, ...] = getattr(request, "param", ())
    proc = await _spawn("--port", "0", *args)
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), timeout=30)).decode()
        match = LISTENING.fullmatch(line)
        assert match, f"unexpected first line {line!r}"
        yield proc, f"http://127.0.0.1:{match.group(1)}"
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.communicate()


async def _anthropic_text(base_url: str) -> str:
    body = {"model": "any", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http,
        http.post(base_url + "/v1/messages", json=body) as resp,
    ):
        assert resp.status == 200
        reply = await resp.json()
    return "".join(block["text"] for block in reply["content"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_serves_the_default_scenario_and_stops_on_a_signal(
    server: tuple[asyncio.subprocess.Process, str], sig: signal.Signals
) -> None:
    proc, base_url = server
    assert await _anthropic_text(base_url) == "Hello from the rxturn fake provider."
    proc.send_signal(sig)
    assert await asyncio.wait_for(proc.wait(), timeout=10) == 0


async def test_serves_a_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"models": {"*": [{"text": "from the file"}]}}))
    proc = await _spawn("--port", "0", "--scenario", str(path))
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), timeout=30)).decode()
        match = LISTENING.fullmatch(line)
        assert match
        assert await _anthropic_text(f"http://127.0.0.1:{match.group(1)}") == "from the file"
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), timeout=10) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.communicate()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"models": {"m": [{"chunk_chars": 0}]}}', "models.m[0].chunk_chars: expected int >= 1"),
        ('{"models": ', "invalid JSON"),
        (None, "No such file"),
    ],
    ids=["bad-field", "bad-json", "missing-file"],
)
def test_bad_scenario_is_one_line_on_stderr_and_exit_2(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "scenario.json"
    if content is not None:
        path.write_text(content)
    done = subprocess.run(
        [sys.executable, "-m", "rxturn", "fake-server", "--scenario", str(path)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and expected in done.stderr
    assert "Traceback" not in done.stderr


def test_bad_port_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rxturn", "fake-server", "--port", "70000"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--port" in done.stderr and "Traceback" not in done.stderr


def test_a_port_in_use_is_one_line_and_exit_2() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "rxturn", "fake-server", "--port", str(port)],
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in done.stderr
