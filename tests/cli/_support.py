"""Running the real ``rxturn`` console script as a user would: piped, or on a pseudo-terminal.

Everything is bounded: a process that outlives its deadline is killed and the test fails.
:func:`screen` replays what a terminal received (the few control sequences the CLI uses) so a
test can assert on what the user finally *sees*, not only on the bytes.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import threading
import time
import unicodedata
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rxturn.testing import FakeProvider

#: The console script installed by ``pip install -e .``, else ``python -m rxturn``.
_SCRIPT = shutil.which("rxturn", path=str(Path(sys.executable).parent))
RXTURN: list[str] = [_SCRIPT] if _SCRIPT else [sys.executable, "-m", "rxturn"]

TIMEOUT = 60.0


#: Variables a user's shell does not set, dropped from a child's environment unless a test
#: passes them: with ``PYTHONUNBUFFERED`` (set on this machine, and by some CI images) every
#: write of the child reached its pipe or file at once, so a child run by a test never met
#: what a user's block-buffered stdout does (a failure that surfaces only at the last flush,
#: stdout and stderr lines out of order in one file); ``PYTHONIOENCODING`` and ``PYTHONUTF8``
#: would choose the streams' encoding and error handler in the shell's stead.
NOT_A_USERS = ("PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONUTF8")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: without API keys, colour settings or
    :data:`NOT_A_USERS`, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("NO_COLOR", "FORCE_COLOR", *NOT_A_USERS)
    }
    env.update(extra)
    return env


def run(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``rxturn ARGS`` with stdout and stderr as pipes."""
    return subprocess.run(
        [*RXTURN, *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
        env=env if env is not None else clean_env(),
        stdin=subprocess.DEVNULL if stdin is None else None,
    )


@dataclass
class TtyRun:
    out: str  # what the stdout terminal received (stderr too when ``merged``)
    err: str  # stderr when it was its own terminal or pipe
    returncode: int


def _winsize(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def run_tty(
    *args: str,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    cols: int = 100,
    stderr: str = "tty",
) -> TtyRun:
    """``rxturn ARGS`` with stdout on a pseudo-terminal ``cols`` wide.

    ``stderr``: ``"tty"`` its own terminal, ``"merged"`` the same terminal as stdout (what a
    user sees), ``"pipe"`` a pipe.
    """
    out_master, out_slave = pty.openpty()
    _winsize(out_slave, 40, cols)
    err_master = err_slave = -1
    if stderr == "tty":
        err_master, err_slave = pty.openpty()
        _winsize(err_slave, 40, cols)
    err_target: Any = {"tty": err_slave, "merged": out_slave, "pipe": subprocess.PIPE}[stderr]
    base = clean_env(TERM="xterm-256color") if env is None else env
    proc = subprocess.Popen(
        [*RXTURN, *args],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=out_slave,
        stderr=err_target,
        env=base,
    )
    os.close(out_slave)
    if err_slave >= 0:
        os.close(err_slave)
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin.encode())
        proc.stdin.close()
    err_key = err_master
    if stderr == "pipe":
        assert proc.stderr is not None
        err_key = proc.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out_master: [], err_key: []}
    open_fds = [fd for fd in (out_master, err_key) if fd >= 0]
    deadline = time.monotonic() + TIMEOUT
    try:
        while open_fds:
            if time.monotonic() > deadline:
                raise AssertionError(f"rxturn {' '.join(args)} did not finish in {TIMEOUT}s")
            ready, _, _ = select.select(open_fds, [], [], 0.2)
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # EIO: the terminal's last writer has gone
                    data = b""
                if data:
                    chunks[fd].append(data)
                else:
                    open_fds.remove(fd)
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for fd in (out_master, err_master):
            if fd >= 0:
                os.close(fd)
        if proc.stderr is not None:
            proc.stderr.close()
    return TtyRun(
        out=b"".join(chunks[out_master]).decode("utf-8"),
        err=b"".join(chunks[err_key]).decode("utf-8"),
        returncode=code,
    )


_ESCAPE = re.compile(r"\x1b\[([0-9;]*)([A-Za-z])")


def screen(raw: str, cols: int = 100) -> list[str]:
    """The lines a terminal ``cols`` wide shows after receiving ``raw`` (scrollback included).

    Understands what the CLI may send: printable text (wide characters take two columns,
    a full row wraps), ``\\r``, ``\\n``, cursor up (``ESC[nA``), erase to the end of the screen
    (``ESC[J``) or line (``ESC[K``) and colours (``ESC[...m``, ignored). Anything else fails.
    """
    rows: list[list[str]] = [[]]
    row = col = 0

    def line() -> list[str]:
        while len(rows) <= row:
            rows.append([])
        return rows[row]

    index = 0
    while index < len(raw):
        char = raw[index]
        if char == "\x1b":
            match = _ESCAPE.match(raw, index)
            assert match is not None, f"unexpected escape at {raw[index : index + 10]!r}"
            amount, command = match.groups()
            if command == "A":
                row = max(0, row - int(amount or 1))
            elif command == "J":
                del line()[col:]
                del rows[row + 1 :]
            elif command == "K":
                del line()[col:]
            elif command != "m":
                raise AssertionError(f"unexpected escape {match.group()!r}")
            index = match.end()
            continue
        if char == "\r":
            col = 0
        elif char == "\n":
            row += 1
            line()
        else:
            width = 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
            if col + width > cols:
                row, col = row + 1, 0
            cells = line()
            cells.extend(" " * (col + width - len(cells)))
            cells[col] = char
            if width == 2:
                cells[col + 1] = ""
            col += width
        index += 1
    return ["".join(cells).rstrip() for cells in rows]


SGR = re.compile(r"\x1b\[[0-9;]*m")


@contextmanager
def fake_server(
    scenario: dict[str, Any], tmp_path: Path, env: dict[str, str] | None = None
) -> Iterator[str]:
    """``rxturn fake-server --scenario`` as a subprocess on 127.0.0.1; yields its URL.
    ``env``: its environment (default: ``clean_env()``); it is stopped with SIGTERM."""
    path = tmp_path / f"scenario-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(scenario))
    proc = subprocess.Popen(
        [*RXTURN, "fake-server", "--scenario", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env if env is not None else clean_env(),
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], TIMEOUT)
        assert ready, "fake-server printed nothing"
        first = proc.stdout.readline().strip()
        assert first.startswith("listening on http://127.0.0.1:"), first
        yield first.removeprefix("listening on ")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def records(url: str) -> list[dict[str, Any]]:
    """The fake server's record of every request it received (``GET /_fake/requests``)."""
    with urllib.request.urlopen(f"{url}/_fake/requests", timeout=10) as response:
        found: list[dict[str, Any]] = json.load(response)
    return found


def received(url: str) -> list[dict[str, Any]]:
    """Every request body the fake server received (``GET /_fake/requests``: its records)."""
    return [record["body"] for record in records(url)]


def until(condition: Any, what: str) -> Any:
    """``condition()``'s first true value, asked every 20 ms; fails after :data:`TIMEOUT`."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def finish(proc: subprocess.Popen[Any]) -> tuple[int, str, str]:
    """Wait for ``proc`` to end (killed after :data:`TIMEOUT`): its exit status, stdout and
    stderr as text."""
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, _as_text(out), _as_text(err)


def _as_text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode() if isinstance(data, bytes) else data


def closed_port() -> int:
    """A loopback port with nothing listening on it."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ThreadedFake:
    """A FakeProvider on its own event loop in a thread, for code that runs ``asyncio.run``."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        self.fake = FakeProvider(scenario)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> FakeProvider:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.fake.start(), self._loop).result(10)
        return self.fake

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.fake.stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
