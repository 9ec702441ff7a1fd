"""Helpers for the loop-hygiene tests: a loopback server, a loop-lag monitor, task accounting.

Nothing here decides an expected value; it serves bytes and measures.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from aiohttp import web

__all__ = ["LagMonitor", "LoopbackUrls", "Site", "serve", "settled_tasks"]


class LoopbackUrls:
    """The base URLs of a server on ``host``:``port`` (set ``port`` once it listens)."""

    host = "127.0.0.1"
    port = 0

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"


class Site(LoopbackUrls):
    """A loopback server started by :func:`serve`: its base URLs and what it saw."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.requests: list[web.Request] = []
        self.headers: list[dict[str, str]] = []
        self.bodies: list[Any] = []
        self.bytes_sent = 0  # a handler that counts what it wrote keeps it here
        self.disconnected = asyncio.Event()
        self.handled = asyncio.Event()  # a handler was entered (the request is in)


Handler = Callable[[web.Request, Site], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serve(handler: Handler, host: str = "127.0.0.1") -> AsyncGenerator[Site]:
    """Serve ``handler`` for every path on ``host`` (port 0), stopping it afterwards."""
    site_info = Site(host, 0)

    async def endpoint(request: web.Request) -> web.StreamResponse:
        site_info.requests.append(request)
        site_info.headers.append({k.lower(): v for k, v in request.headers.items()})
        raw = await request.read()
        site_info.bodies.append(msgspec.json.decode(raw) if raw else None)
        site_info.handled.set()
        try:
            return await handler(request, site_info)
        except (ConnectionResetError, asyncio.CancelledError):
            site_info.disconnected.set()
            raise

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", endpoint)
    runner = web.AppRunner(
        app, handle_signals=False, access_log=None, shutdown_timeout=0.5, handler_cancellation=True
    )
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    site_info.port = int(runner.addresses[0][1])
    try:
        yield site_info
    finally:
        await runner.cleanup()


class LagMonitor:
    """A task that wakes every ``tick`` seconds and records the largest gap between wake-ups
    beyond the tick: how long the event loop was held by something else.

    A stall detector, not a timing test: bounds asserted on it are a few hundred ms, while the
    stalls it exists to catch last seconds. Time the loop's thread spent waiting for a CPU
    (runnable, while other processes ran: a loaded machine) is not the loop being held, and is
    left out where Linux reports it (``/proc/thread-self/schedstat``): on a busy machine the
    gaps between wake-ups grow by what the scheduler gave to others, the time the loop's own
    code ran or blocked does not.
    """

    def __init__(self, tick: float = 0.005) -> None:
        self.tick = tick
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LagMonitor:
        self._task = asyncio.get_running_loop().create_task(self._watch())
        await asyncio.sleep(0)  # started before the watched work
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _watch(self) -> None:
        schedstat = _open_schedstat()  # on the loop's thread: that thread's own figures
        try:
            last, last_wait = time.perf_counter(), _runqueue_wait(schedstat)
            while True:
                await asyncio.sleep(self.tick)
                now, wait = time.perf_counter(), _runqueue_wait(schedstat)
                self.worst = max(self.worst, now - last - self.tick - (wait - last_wait))
                last, last_wait = now, wait
        finally:
            if schedstat is not None:
                os.close(schedstat)


def _open_schedstat() -> int | None:
    """The calling thread's ``/proc/thread-self/schedstat`` (Linux), open; ``None`` where the
    kernel has none."""
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return None
    try:
        _runqueue_wait(fd)
    except (OSError, IndexError, ValueError):
        os.close(fd)
        return None
    return fd


def _runqueue_wait(schedstat: int | None) -> float:
    """Seconds the thread has spent runnable but waiting for a CPU (schedstat's second field:
    nanoseconds); 0.0 without ``schedstat``."""
    if schedstat is None:
        return 0.0
    return int(os.pread(schedstat, 128, 0).split()[1]) / 1e9


def _server_side(task: asyncio.Task[Any]) -> bool:
    """A task of the loopback *server* (aiohttp.web), e.g. its keep-alive connection handler,
    which lives as long as the client keeps the connection in its pool."""
    return getattr(task.get_coro(), "__qualname__", "").startswith("RequestHandler.")


async def settled_tasks(before: set[asyncio.Task[Any]], seconds: float = 3.0) -> set[str]:
    """Wait (bounded) until the running tasks are back to ``before`` (the loopback server's own
    connection tasks aside); the extra tasks still alive when the wait ends (empty when they all
    finished)."""
    current = asyncio.current_task()
    deadline = time.monotonic() + seconds
    while True:
        extra = {
            task
            for task in asyncio.all_tasks()
            if task not in before and task is not current and not _server_side(task)
        }
        if not extra or time.monotonic() > deadline:
            return {repr(task)[:300] for task in extra}
        await asyncio.sleep(0.01)
