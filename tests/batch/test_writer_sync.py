"""The output writer's fsync runs on its own thread: the caller is not held while the disk
syncs, every written line is covered by an fsync by the time the writer closes, and a failed
fsync is a :class:`BatchWriteError` at the writer's next call."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from rxturn.batch._errors import BatchWriteError
from rxturn.batch._output import OutputWriter

_WAIT_S = 10.0


class _SlowFsync:
    """The real ``os.fsync``, held until the test lets it go; records which thread ran it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.threads: list[str] = []
        self.calls = 0
        self._real = os.fsync

    def __call__(self, fd: int) -> None:
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        self.started.set()
        assert self.release.wait(_WAIT_S), "the test never released the fsync"
        self._real(fd)


def test_an_fsync_does_not_hold_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slow = _SlowFsync()
    monkeypatch.setattr(os, "fsync", slow)
    writer = OutputWriter(tmp_path / "out.jsonl", fsync_lines=2)
    writer.write_lines([b"1\n", b"2\n"])  # the threshold: an fsync starts, and waits
    assert slow.started.wait(_WAIT_S)
    writer.write_lines([b"3\n", b"4\n"])  # not held by the fsync still running
    writer.write_lines([b"5\n"])
    assert slow.calls == 1  # one at a time: the lines since wait for the next
    slow.release.set()
    writer.close()  # waits for the running one, then syncs lines 3-5
    assert slow.calls == 2
    assert slow.threads[0] != threading.main_thread().name
    assert (tmp_path / "out.jsonl").read_bytes() == b"1\n2\n3\n4\n5\n"


def test_the_lines_after_a_running_fsync_get_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = _SlowFsync()
    monkeypatch.setattr(os, "fsync", slow)
    writer = OutputWriter(tmp_path / "out.jsonl", fsync_lines=2)
    writer.write_lines([b"1\n", b"2\n"])
    writer.write_lines([b"3\n", b"4\n"])
    slow.release.set()
    for _ in range(1000):  # the first fsync ends on its thread; the next sync starts theirs
        writer.sync()
        if slow.calls == 2:
            break
        threading.Event().wait(0.005)
    assert slow.calls == 2
    writer.close()
    assert slow.calls == 2  # nothing left unsynced at close


def test_a_failed_fsync_is_raised_by_the_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    writer = OutputWriter(tmp_path / "out.jsonl", fsync_lines=1)
    writer.write_lines([b"1\n"])  # starts the fsync that fails on the writer's thread
    with pytest.raises(BatchWriteError, match=r"cannot write .*out\.jsonl.*Input/output error"):
        for _ in range(1000):
            writer.write_lines([b"2\n"])
            threading.Event().wait(0.005)
    with pytest.raises(BatchWriteError, match="Input/output error"):
        writer.close()  # the lines after the failure are not synced either: said again
    assert writer._fd == -1  # closed all the same


def test_close_without_lines_starts_no_thread(tmp_path: Path) -> None:
    before = threading.active_count()
    writer = OutputWriter(tmp_path / "out.jsonl")
    writer.close()
    writer.close()  # a second close does nothing
    assert threading.active_count() == before


async def test_the_run_syncs_a_line_a_second_after_it_was_written_not_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines are fsynced at least every second: the run's timer looked every 0.2 s, so a line
    written between two looks was synced up to 1.2 s after it. On a virtual clock (the
    timer's sleeps advance it), the sync starts the moment the line has waited a second."""
    import asyncio

    from rxturn.batch import BatchConfig, FileRun, _file

    clock = [0.0]
    synced: list[float] = []
    stop = asyncio.Event()

    async def sleep(seconds: float) -> None:
        clock[0] += seconds
        if clock[0] > 5.0:
            stop.set()
            raise asyncio.CancelledError  # (the timer is done with)

    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    run = FileRun(inp, tmp_path / "out.jsonl", BatchConfig(provider="anthropic", model="m"))
    run.prepare()
    writer = OutputWriter(tmp_path / "other.jsonl", clock=lambda: clock[0])

    def sync() -> None:
        synced.append(clock[0])
        raise asyncio.CancelledError  # (the first is the one looked at)

    monkeypatch.setattr(writer, "sync", sync)
    run.writer, kept = writer, run.writer
    monkeypatch.setattr(_file.asyncio, "sleep", sleep)
    try:
        clock[0] = 0.05  # between two of the timer's looks
        writer.write_lines([b"1\n"])
        clock[0] = 0.0
        with pytest.raises(asyncio.CancelledError):
            await run._sync_every_second(stop)
    finally:
        monkeypatch.undo()
        writer.close()
        run.writer = kept
        run.close()
    assert synced and synced[0] == pytest.approx(1.05)


async def test_the_runs_timer_does_not_spin_while_an_fsync_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Overdue lines whose fsync cannot start yet (one still runs: ``sync`` starts nothing)
    are looked at again in 0.2 s, not at once in a loop that holds the event loop."""
    import asyncio

    from rxturn.batch import BatchConfig, FileRun, _file

    clock = [0.0]
    sleeps: list[float] = []
    stop = asyncio.Event()

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock[0] += seconds
        if clock[0] > 3.0 or len(sleeps) > 1000:
            raise asyncio.CancelledError

    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "prompt": "x"}\n')
    run = FileRun(inp, tmp_path / "out.jsonl", BatchConfig(provider="anthropic", model="m"))
    run.prepare()
    writer = OutputWriter(tmp_path / "other.jsonl", clock=lambda: clock[0])
    monkeypatch.setattr(writer, "sync", lambda: None)  # an fsync runs: nothing new starts
    run.writer, kept = writer, run.writer
    monkeypatch.setattr(_file.asyncio, "sleep", sleep)
    try:
        writer.write_lines([b"1\n"])
        with pytest.raises(asyncio.CancelledError):
            await run._sync_every_second(stop)
    finally:
        monkeypatch.undo()
        writer.close()
        run.writer = kept
        run.close()
    assert len(sleeps) < 30 and min(sleeps) > 0, sleeps[:8]
