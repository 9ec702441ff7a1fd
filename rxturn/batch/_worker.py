"""A batch worker process (``python -m rxturn.batch._worker``): see :mod:`._workers`.

It runs the rows its parent sends on its own :class:`~._runner.Runner`, asks the parent's gate
for budget (only when the run has ``--rpm``/``--tpm``: without, a row waits only for a
Retry-After pause, which the parent broadcasts to every worker), and sends each finished output
line back, as it encoded it (the frames are described in :mod:`._workers`); its finished lines
go out together, a few milliseconds at most after the first of them (:class:`Outbox`; budget
messages at once). It
ignores SIGINT (a Ctrl-C on a terminal reaches the whole process group; the parent decides),
keeps its stdout for the frames alone (anything else printed in it goes to stderr), dies with
its parent (Linux: the kernel's parent-death signal, which reaches a stopped worker
too), and ends, cancelling what is in flight, when its stdin closes. While it has rows it sends an
``alive`` message once a heartbeat, for the parent's watchdog.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import os
import signal
import sys
from typing import IO, Any

from .._heap import tune
from .._streams import to_devnull
from ..cost import cost_available, warm_up_prices
from ._budget import Budget, LocalGate
from ._file import run_line
from ._runner import Runner
from ._workers import Message, decode_message, done_frame, encode_message, read_lines

__all__ = ["Outbox", "RemoteGate", "main"]


class RemoteGate:
    """The parent's gate, asked over the pipe. Tickets are this worker's request ids.

    Without a budget (``limited`` false) nothing is asked: a request waits only for the pause
    the parent broadcasts when any worker meets a Retry-After (:meth:`paused`).
    """

    def __init__(self, send: Any, *, limited: bool = True) -> None:
        self._send = send
        self._ids = itertools.count(1)
        self.limited = limited
        self.waiting: dict[int, asyncio.Future[None]] = {}
        self._local = LocalGate(Budget())  # the broadcast pauses

    async def acquire(self, tokens: int) -> int:
        if not self.limited:
            return await self._local.acquire(tokens)
        request = next(self._ids)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting[request] = future
        self._send(Message(t="acquire", n=request, tokens=tokens))
        try:
            await future
        except asyncio.CancelledError:  # the attempt gave up waiting (its deadline, a stop)
            # the parent drops the ask, or gives the grant back if it was already made
            self._send(Message(t="cancel", n=request))
            raise
        finally:
            self.waiting.pop(request, None)
        return request

    def granted(self, request: int) -> None:
        future = self.waiting.get(request)
        if future is not None and not future.done():
            future.set_result(None)

    def paused(self, seconds: float) -> None:
        """The parent's broadcast: some worker met a Retry-After."""
        self._local.pause(seconds)

    def correct(self, ticket: int, tokens: int) -> None:
        if self.limited:
            self._send(Message(t="correct", n=ticket, tokens=tokens))

    def restamp(self, ticket: int) -> None:
        if self.limited:
            self._send(Message(t="restamp", n=ticket))

    def release(self, ticket: int) -> None:
        if self.limited and ticket >= 0:
            self._send(Message(t="release", n=ticket))

    def pause(self, seconds: float) -> None:
        self._local.pause(seconds)
        self._send(Message(t="pause", seconds=seconds))

    def rate_limited(self, seconds: float) -> None:
        """A row of this worker sleeps after a rate limit: the parent counts the run's waits."""
        self._send(Message(t="wait", seconds=seconds))


def _take_stdout() -> io.BufferedWriter:
    """The frame pipe, as a binary file of this worker's own: file descriptor 1 (and
    ``sys.stdout``) go to stderr from here on, so that whatever else in this process prints
    (a library's ``print``, a C extension's ``printf``, without a newline even) cannot cut
    into a frame and lose the row it carries."""
    sys.stdout.flush()
    frames = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # what was printed before (while the interpreter imported) ends here, as a line of its
    # own that the parent skips, not as the start of the first frame
    os.write(frames, b"\n")
    return os.fdopen(frames, "wb")


#: how long a finished line may wait for others to go out with it (seconds), and how many may
#: wait: one write, and one wake-up of the parent (on the same cores), for several rows
HOLD_S = 0.005
HOLD_LINES = 64


class Outbox:
    """What this worker sends its parent, written to ``out``.

    A finished row's line waits up to :data:`HOLD_S` for others to go out with it, unless no
    other row is running here (none would join it) or :data:`HOLD_LINES` wait already; a
    budget message (:meth:`send`) goes at once, with whatever waits. Nothing is lost by the
    wait: a row stays the parent's, in flight, until its line arrives, and a worker that dies
    has its rows run elsewhere.
    """

    def __init__(self, out: IO[bytes], loop: Any) -> None:
        self._out = out
        self._loop = loop
        self._queued: list[bytes] = []
        self._timer: Any = None  # the handle of the timer that sends what waits, while set

    def send(self, message: Message) -> None:
        """A budget message (or the heartbeat, a failure): now. A ``restamp`` that waited
        would have the parent count its grant from too early."""
        self._queued.append(encode_message(message))
        self.flush()

    def finished(self, frame: bytes, running: int) -> None:
        """A finished row's frame; ``running``: the rows still running in this worker."""
        queued = self._queued
        queued.append(frame)
        if not running or len(queued) >= HOLD_LINES:
            self.flush()
        elif self._timer is None:
            self._timer = self._loop.call_later(HOLD_S, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        queued = self._queued
        if not queued:
            return
        data = b"".join(queued)
        queued.clear()
        try:
            self._out.write(data)
            self._out.flush()
        except BrokenPipeError:
            # the parent is gone (killed): nobody reads what is left, and the end of stdin
            # stops this loop; later writes go to /dev/null instead of raising again (this
            # runs as a loop callback, where an exception is printed as a traceback)
            to_devnull(self._out)


async def _main(out: io.BufferedWriter) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 30)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    outbox = Outbox(out, loop)
    send = outbox.send
    running = 0  # rows received here and not finished

    chunks = read_lines(reader)
    lines: list[bytes] = []
    async for lines in chunks:  # the first line is the run's settings
        if lines:
            break
    if not lines:
        return
    setup = decode_message(lines[0])
    assert setup.config is not None
    api_key = (os.environ.get(setup.key_env) or "").strip() or None if setup.key_env else None
    limited = setup.config.rpm is not None or setup.config.tpm is not None
    gate = RemoteGate(send, limited=limited)
    tasks: set[asyncio.Future[None]] = set()
    try:
        runner = Runner(setup.config, api_key=api_key, gate=gate)
    except Exception as exc:  # no row can run here: the parent ends the run with this, once
        send(Message(t="fatal", raw=str(exc), error=type(exc).__name__))
        return
    async with runner:
        try:
            runner.prepare()
            if cost_available():  # the price data its engine started loading, loaded now
                await warm_up_prices()
        except Exception as exc:  # as above
            send(Message(t="fatal", raw=str(exc), error=type(exc).__name__))
            return
        tune()  # the set-up is done: freeze it, rarer young collections (rxturn._heap)

        async def one(number: int, raw: bytes) -> None:
            nonlocal running
            try:
                done = await run_line(runner, number, raw, setup.run)
            except Exception as exc:  # not a row's failure (those are lines): stop the run
                send(Message(t="failed", n=number, raw=f"{type(exc).__name__}: {exc}"))
                return
            finally:
                running -= 1
            outbox.finished(done_frame(number, done), running)

        def receive(line: bytes) -> None:
            nonlocal running
            if line[:1] == b"r":
                number, _, raw = line.partition(b" ")
                task = asyncio.ensure_future(one(int(number[1:]), raw))
                running += 1
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                return
            message = decode_message(line)
            if message.t == "grant":
                gate.granted(message.n)
            elif message.t == "pause":
                gate.paused(message.seconds)

        async def beat(interval: float) -> None:
            # the parent's watchdog kills a worker that holds rows and says nothing for a
            # while: this loop says it is alive, once a heartbeat, while it has rows
            alive = Message(t="alive")
            while True:
                await asyncio.sleep(interval)
                if tasks:
                    outbox.send(alive)

        heart = asyncio.ensure_future(beat(setup.beat)) if setup.beat > 0 else None
        try:
            for line in lines[1:]:
                receive(line)
            async for lines in chunks:
                for line in lines:
                    receive(line)
        finally:
            if heart is not None:
                heart.cancel()
            for task in list(tasks):
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            outbox.flush()


#: the parent's pid, set by the pool (the worker ends at once if it is no longer its parent)
PARENT_ENV = "RXTURN_BATCH_PARENT"


def _die_with_parent() -> bool:
    """On Linux, have the kernel SIGKILL this worker when its parent dies: a worker stopped
    (SIGSTOP, a debugger) never reads the end of its stdin, and would outlive a parent killed
    with ``kill -9``. False if the parent is gone already."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # no prctl here: the end of stdin still ends it
            pass
    parent = os.environ.get(PARENT_ENV, "")
    return not parent.isdigit() or os.getppid() == int(parent)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not _die_with_parent():
        return
    try:
        with contextlib.suppress(BrokenPipeError):  # the parent went away
            asyncio.run(_main(_take_stdout()))
    except Exception as exc:  # a bug: one line (the parent runs this worker's rows elsewhere)
        sys.stderr.write(f"rxturn batch: worker {os.getpid()}: {type(exc).__name__}: {exc}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
