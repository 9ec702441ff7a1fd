"""The worker pipes: a worker whose parent is gone (its stdout pipe closed) ends quietly, with no
traceback on stderr; a finished row's frame carries its output line as encoded; a line cut off
by a kill is dropped; finished lines wait a little to go out together."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from collections.abc import Callable

from cli._support import clean_env

from rxturn.batch import BatchConfig
from rxturn.batch._file import Done
from rxturn.batch._worker import HOLD_LINES, HOLD_S, Outbox
from rxturn.batch._workers import (
    Message,
    done_frame,
    encode_message,
    parse_done,
    read_lines,
    row_frame,
)


def test_a_worker_writing_to_a_closed_pipe_ends_without_a_traceback() -> None:
    config = BatchConfig(provider="openai", model="m", base_url="http://127.0.0.1:9")
    worker = subprocess.Popen(
        [sys.executable, "-m", "rxturn.batch._worker"],
        env=clean_env(),  # as a batch run started from a user's shell starts it
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdout.close()  # the parent's end of the pipe: gone, as when it is killed
    worker.stdin.write(encode_message(Message(t="config", config=config, run=1)))
    for number in range(1, 4):  # rows that fail at once: their lines go to the closed pipe
        worker.stdin.write(row_frame(number, b"{not json"))
    worker.stdin.flush()
    try:
        _, err = worker.communicate(timeout=60)  # closes stdin: the worker's cue to end
    finally:
        worker.kill()
    text = err.decode(errors="replace")
    assert "Traceback" not in text, text
    assert worker.returncode == 0, text


def test_a_finished_row_crosses_the_pipe_as_encoded_whatever_its_key_and_error() -> None:
    line = encode_message(Message(t="x", raw="an output line: \t, \n and é inside"))
    for done in (
        Done(line, "key\twith\ntabs, newlines and é", "ok", 12, 34),
        Done(line, "e", "error", 0, 0, "BadRequestError: HTTP 400:\tbad\nrequest"),
    ):
        frame = done_frame(7, done)
        assert frame.count(b"\n") == 1 and frame.endswith(b"\n")  # one line on the pipe
        assert parse_done(frame[:-1]) == (7, done)  # the output line as it was encoded


def test_a_line_that_is_no_frame_is_not_taken_for_a_finished_row() -> None:
    assert parse_done(b"done, said a stray print") is None
    assert parse_done(b"d[1, 2]\t{}") is None  # a head of the wrong shape


async def test_lines_split_across_reads_come_whole_and_a_cut_off_end_is_dropped() -> None:
    reader = asyncio.StreamReader()
    got: list[bytes] = []

    async def collect() -> None:
        async for lines in read_lines(reader):
            got.extend(lines)

    task = asyncio.ensure_future(collect())
    for piece in (b"ab", b"c\nde", b"f\n", b"", b"g\nh", b"alf of a line"):
        if piece:
            reader.feed_data(piece)
        await asyncio.sleep(0)
    reader.feed_eof()  # the writer was killed mid-line
    await asyncio.wait_for(task, 10.0)
    assert got == [b"abc", b"def", b"g"]


class _Clock:
    """Stands in for the event loop's ``call_later``: the timers set, to fire by hand."""

    def __init__(self) -> None:
        self.timers: list[_Timer] = []

    def call_later(self, delay: float, callback: Callable[[], None]) -> _Timer:
        timer = _Timer(delay, callback)
        self.timers.append(timer)
        return timer


class _Timer:
    def __init__(self, delay: float, callback: Callable[[], None]) -> None:
        self.delay, self.callback, self.cancelled = delay, callback, False

    def cancel(self) -> None:
        self.cancelled = True


def test_finished_lines_wait_briefly_to_go_out_together_and_budget_messages_go_at_once() -> None:
    out, clock = io.BytesIO(), _Clock()
    outbox = Outbox(out, clock)
    outbox.finished(b"d1\n", running=2)  # two more rows run here: it waits for them a little
    outbox.finished(b"d2\n", running=1)
    assert out.getvalue() == b""
    assert [timer.delay for timer in clock.timers] == [HOLD_S]  # one timer for the group
    clock.timers[0].callback()
    assert out.getvalue() == b"d1\nd2\n"
    outbox.finished(b"d3\n", running=4)
    outbox.send(Message(t="restamp", n=9))  # a budget message: now, with what waits
    assert out.getvalue() == b"d1\nd2\nd3\n" + encode_message(Message(t="restamp", n=9))
    assert clock.timers[1].cancelled  # nothing waits any more
    outbox.finished(b"d4\n", running=0)  # the last row running here: nothing would join it
    assert out.getvalue().endswith(b"d4\n")
    assert len(clock.timers) == 2


def test_no_more_than_hold_lines_finished_lines_wait() -> None:
    out, clock = io.BytesIO(), _Clock()
    outbox = Outbox(out, clock)
    for number in range(HOLD_LINES - 1):
        outbox.finished(b"d%d\n" % number, running=1000)
    assert out.getvalue() == b""
    outbox.finished(b"last\n", running=1000)
    assert out.getvalue().count(b"\n") == HOLD_LINES and out.getvalue().endswith(b"last\n")
    assert clock.timers[0].cancelled
