"""SIGTERM (what a supervisor, ``timeout`` or ``kill`` sends) ends every command the way Ctrl-C
does, from the first line of ``rxturn.cli.main`` on: never killed mid-way (exit -15) with a
connection left open. ``fake-server`` stops cleanly (exit 0); ``chat`` cancels its running turn
(``--json`` still prints the failed turn with its audit) and exits 130; the interactive chat
ends at once, even while it waits for a line of stdin; the other commands exit 130.

Each test waits for a state it can observe (the command blocked opening a FIFO, a request
arrived at the fake server, a reply printed) before sending the signal, so none depends on
timing."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ._support import RXTURN, TIMEOUT, clean_env, fake_server, records, until

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess


def _start(args: list[str], *, stdin: Any = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*RXTURN, *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )


def _terminate(proc: subprocess.Popen[bytes]) -> tuple[int, str, str]:
    """Send SIGTERM; the exit status, stdout and stderr (bounded). A stdin pipe stays open
    (``communicate`` would close it: an EOF racing the signal)."""
    stdin, proc.stdin = proc.stdin, None
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if stdin is not None:
            stdin.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out.decode(), err.decode()


def _blocked_reading(pid: int) -> bool:
    """Whether process ``pid`` sleeps in a read of a pipe or FIFO (Linux: its wait channel). A
    signal then interrupts the read; one that arrives between the ``open`` and the ``read``
    is taken only once the read returns, as in any Python program."""
    return "pipe_read" in Path(f"/proc/{pid}/wchan").read_text()


def _opened_by_reader(fifo: Path) -> int | None:
    """The FIFO's write end once the command has opened its read end (``None`` before)."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
            raise
        return None


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["fake-server", "--port", "0", "--scenario"], 0),
        (["replay"], 130),
        (["batch", "status", "--input"], 130),
    ],
    ids=["fake-server", "replay", "batch-status"],
)
def test_a_command_terminated_while_it_reads_its_input(
    args: list[str], expected: int, tmp_path: Path
) -> None:
    fifo = tmp_path / "input"
    os.mkfifo(fifo)
    if args[0] == "batch":
        (tmp_path / "out.jsonl").write_text("")
        args = ["batch", "status", str(tmp_path / "out.jsonl"), "--input", str(fifo)]
    else:
        args = [*args, str(fifo)]
    proc = _start(args)
    writer = until(lambda: _opened_by_reader(fifo), "the command to open its input")
    try:
        until(lambda: _blocked_reading(proc.pid), "the command to read its input")
        code, _, err = _terminate(proc)
    finally:
        os.close(writer)
    assert "Traceback" not in err
    assert code == expected, err


STALLED = {"models": {"slow": [{"text": "never finished", "stall_after_events": 2}]}}


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
def test_a_one_shot_chat_cancels_its_turn_and_closes_the_stream(
    json_output: bool, tmp_path: Path
) -> None:
    with fake_server(STALLED, tmp_path) as url:
        args = ["chat", "--provider", "anthropic", "--base-url", url, "--model", "slow"]
        proc = _start([*args, *(["--json"] if json_output else []), "hi"])
        until(lambda: records(url), "the request to arrive")
        code, out, err = _terminate(proc)
        record = until(lambda: [r for r in records(url) if r["end"]], "the stream to end")[0]
    assert code == 130, err
    assert "Traceback" not in err
    assert record["end"] == "disconnected"  # the command closed its connection
    if json_output:
        printed = json.loads(out)
        assert printed["error"]["type"] == "Cancelled"
        assert [turn["error"] for turn in printed["turns"]] == ["Cancelled"]
    else:
        assert out == ""  # nothing of an unfinished reply on a pipe


def test_an_interactive_chat_ends_while_it_waits_for_a_line(tmp_path: Path) -> None:
    with fake_server({"models": {"*": [{"text": "first reply"}]}}, tmp_path) as url:
        args = ["chat", "--provider", "anthropic", "--base-url", url, "--model", "m"]
        proc = _start(args, stdin=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"hello\n")
        proc.stdin.flush()  # stdin stays open: the chat waits for the next line
        assert proc.stdout.readline() == b"first reply\n"
        code, _, err = _terminate(proc)
    assert code == 130, err
    assert "Traceback" not in err and "Fatal" not in err


def test_an_interactive_chat_ends_during_a_turn(tmp_path: Path) -> None:
    with fake_server(STALLED, tmp_path) as url:
        args = ["chat", "--provider", "anthropic", "--base-url", url, "--model", "slow"]
        proc = _start(args, stdin=subprocess.PIPE)
        assert proc.stdin is not None
        proc.stdin.write(b"hello\nsecond prompt, never sent\n")
        proc.stdin.flush()
        until(lambda: records(url), "the request to arrive")
        code, _, err = _terminate(proc)
        ended = until(lambda: [r for r in records(url) if r["end"]], "the stream to end")
    assert code == 130, err
    assert "Traceback" not in err
    assert len(ended) == 1  # it ended the chat, not only the turn
