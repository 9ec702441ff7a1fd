"""A batch worker process (``python -m rxturn.batch._worker``): see :mod:`._workers`.

It runs the rows its parent sends on its own :class:`~._runner.Runner`, asks the parent's gate
for budget, and sends each finished output line back. It ignores SIGINT (a Ctrl-C on a
terminal reaches the whole process group; the parent decides), and ends, cancelling what is in
flight, when its stdin closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import sys
from typing import Any

from ._file import run_line
from ._runner import Runner
from ._workers import Message, decode_message, encode_message

__all__ = ["RemoteGate", "main"]


class RemoteGate:
    """The parent's gate, asked over the pipe. Tickets are this worker's request ids."""

    def __init__(self, send: Any) -> None:
        self._send = send
        self._ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[None]] = {}

    async def acquire(self, tokens: int) -> int:
        request = next(self._ids)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting[request] = future
        self._send(Message(t="acquire", n=request, tokens=tokens))
        try:
            await future
        finally:
            self.waiting.pop(request, None)
        return request

    def granted(self, request: int) -> None:
        future = self.waiting.get(request)
        if future is not None and not future.done():
            future.set_result(None)

    def charge(self, tokens: int) -> int:
        request = next(self._ids)
        self._send(Message(t="charge", n=request, tokens=tokens))
        return request

    def correct(self, ticket: int, tokens: int) -> None:
        self._send(Message(t="correct", n=ticket, tokens=tokens))

    def restamp(self, ticket: int) -> None:
        self._send(Message(t="restamp", n=ticket))

    def pause(self, seconds: float) -> None:
        self._send(Message(t="pause", seconds=seconds))


async def _main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 30)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    def send(message: Message) -> None:
        out.write(encode_message(message))
        out.flush()

    first = await reader.readline()
    if not first:
        return
    setup = decode_message(first)
    assert setup.config is not None
    api_key = os.environ.get(setup.key_env) if setup.key_env else None
    gate = RemoteGate(send)
    tasks: set[asyncio.Future[None]] = set()
    async with Runner(setup.config, api_key=api_key, gate=gate) as runner:

        async def one(number: int, raw: bytes) -> None:
            try:
                done = await run_line(runner, number, raw, setup.run)
            except Exception as exc:  # not a row's failure (those are lines): stop the run
                send(Message(t="failed", n=number, raw=f"{type(exc).__name__}: {exc}"))
                return
            send(Message(t="done", n=number, done=done))

        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                message = decode_message(line)
                if message.t == "row":
                    task = asyncio.ensure_future(one(message.n, message.raw.encode()))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                elif message.t == "grant":
                    gate.granted(message.n)
        finally:
            for task in list(tasks):
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(BrokenPipeError):  # the parent went away
        asyncio.run(_main())


if __name__ == "__main__":
    main()
