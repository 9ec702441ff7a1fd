"""The kept-alive connection's one read timer (``_IdleTimedProtocol``) over a connection's whole
life, against real aiohttp servers on 127.0.0.1: a stall after good requests on the same
connection, a connection the server closes between requests, a request cancelled mid-read, and
the transport closed. The timer never fires into a request that is over, never outlives its
connection, and every wait is bounded. What asyncio reports to the loop's exception handler
("Task exception was never retrieved", an exception in a callback) fails the test through
tests/conftest.py, and an unclosed session or connection through the fixture's ``gc.collect()``
(warnings are errors)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from rxturn.errors import ReadError
from rxturn.transport import AiohttpTransport, HttpResponse

WAIT = 5.0
ServerFactory = Callable[..., Awaitable[TestServer]]
TIMEOUT = 0.1


def _live_read_timers(loop: asyncio.AbstractEventLoop) -> list[asyncio.TimerHandle]:
    """Read-timeout timers still armed on ``loop`` (not cancelled)."""
    scheduled: list[asyncio.TimerHandle] = loop._scheduled  # pyright: ignore[reportAttributeAccessIssue]
    return [
        handle
        for handle in scheduled
        if not handle.cancelled()
        and getattr(handle._callback, "__name__", "") == "_on_read_timeout"
    ]


class _Site:
    """Routes ``/quick`` (a whole reply), ``/stall`` (one event, then silence until released)
    and ``/stream`` (events every 10 ms until the client leaves); records each request's peer
    and server-side transport."""

    def __init__(self) -> None:
        self.peers: list[Any] = []
        self.transports: list[asyncio.Transport] = []
        self.release = asyncio.Event()

    def _seen(self, request: web.Request) -> None:
        assert request.transport is not None
        self.peers.append(request.transport.get_extra_info("peername"))
        self.transports.append(request.transport)

    async def quick(self, request: web.Request) -> web.Response:
        self._seen(request)
        return web.Response(body=b"data: ok\n\n", content_type="text/event-stream")

    async def stall(self, request: web.Request) -> web.StreamResponse:
        self._seen(request)
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"data: first\n\n")
        await self.release.wait()
        return response

    async def stream(self, request: web.Request) -> web.StreamResponse:
        self._seen(request)
        response = web.StreamResponse()
        await response.prepare(request)
        while True:
            await response.write(b"data: x\n\n")
            await asyncio.sleep(0.01)


@pytest.fixture
async def site(aiohttp_server: ServerFactory) -> AsyncIterator[tuple[_Site, TestServer]]:
    site = _Site()
    app = web.Application()
    app.router.add_route("*", "/quick", site.quick)
    app.router.add_route("*", "/stall", site.stall)
    app.router.add_route("*", "/stream", site.stream)
    server = await aiohttp_server(app)
    try:
        yield site, server
    finally:
        site.release.set()


@pytest.fixture
async def transport() -> AsyncIterator[AiohttpTransport]:
    t = AiohttpTransport(connect_timeout=5.0, read_timeout=TIMEOUT)
    try:
        yield t
    finally:
        await t.aclose()
    gc.collect()


async def _send(transport: AiohttpTransport, server: TestServer, path: str) -> HttpResponse:
    return await asyncio.wait_for(
        transport.send("POST", str(server.make_url(path)), headers={}, body=b"{}", stream=True),
        WAIT,
    )


async def _read_all(response: HttpResponse) -> bytes:
    async def read() -> bytes:
        return b"".join([chunk async for chunk in response.aiter_bytes()])

    try:
        return await asyncio.wait_for(read(), WAIT)
    finally:
        await response.aclose()


async def test_a_stall_after_good_requests_on_the_same_connection_times_out(
    site: tuple[_Site, TestServer], transport: AiohttpTransport
) -> None:
    """Good requests spread over more than one read timeout on one kept-alive connection, then
    one whose server goes silent mid-body: the silence times out (the timer, armed by an earlier
    request, is not lost between requests), and no sooner than the bound after the last chunk,
    although the timer was armed by the request before, 0.7 of the bound earlier."""
    handler, server = site
    loop = asyncio.get_running_loop()
    for _ in range(6):
        assert await _read_all(await _send(transport, server, "/quick")) == b"data: ok\n\n"
        await asyncio.sleep(TIMEOUT / 3)
    await asyncio.sleep(TIMEOUT * 1.5)  # the timer fires idle and lapses
    assert await _read_all(await _send(transport, server, "/quick")) == b"data: ok\n\n"
    await asyncio.sleep(TIMEOUT * 0.7)  # the timer that request armed is due soon
    response = await _send(transport, server, "/stall")
    chunks = response.aiter_bytes()
    try:
        assert await asyncio.wait_for(chunks.__anext__(), WAIT) == b"data: first\n\n"
        last = loop.time()
        with pytest.raises(ReadError, match=r"read timed out after 0\.1s"):
            await asyncio.wait_for(chunks.__anext__(), WAIT)
        # timed from the last chunk, not from when the timer was armed (that would leave at
        # most 0.3 of the bound); the slack is what the loop takes to hand the chunk over
        assert loop.time() - last >= TIMEOUT * 0.6
    finally:
        await response.aclose()
    assert len(set(handler.peers)) == 1  # every request on one connection
    await asyncio.sleep(0)  # the dropped connection's connection_lost runs
    assert _live_read_timers(loop) == []


async def test_a_connection_the_server_closed_between_requests(
    site: tuple[_Site, TestServer],
) -> None:
    """The server closes the kept-alive connection while it idles in the pool: its timer goes
    with it (a 30 s one: it cannot lapse on its own during the test), and the next request gets
    a new connection and its reply."""
    handler, server = site
    loop = asyncio.get_running_loop()
    transport = AiohttpTransport(read_timeout=30.0)
    try:
        await _closed_between_requests(handler, server, transport, loop)
    finally:
        await transport.aclose()


async def _closed_between_requests(
    handler: _Site,
    server: TestServer,
    transport: AiohttpTransport,
    loop: asyncio.AbstractEventLoop,
) -> None:
    assert await _read_all(await _send(transport, server, "/quick")) == b"data: ok\n\n"
    assert len(_live_read_timers(loop)) == 1  # idle, armed by that request
    handler.transports[-1].close()
    for _ in range(100):  # bounded: the client sees the close within a few loop turns
        if not _live_read_timers(loop):
            break
        await asyncio.sleep(0.01)
    assert _live_read_timers(loop) == []
    assert await _read_all(await _send(transport, server, "/quick")) == b"data: ok\n\n"
    assert len(set(handler.peers)) == 2


async def test_a_request_cancelled_mid_read_leaves_no_timer_and_the_next_one_works(
    site: tuple[_Site, TestServer], transport: AiohttpTransport
) -> None:
    """A task reading a live stream is cancelled mid-read; closing the response drops the
    connection (its body is unread) and its timer; nothing fires later, and the transport
    serves the next request."""
    _, server = site
    loop = asyncio.get_running_loop()
    response = await _send(transport, server, "/stream")
    got: list[bytes] = []

    async def reader() -> None:
        async for chunk in response.aiter_bytes():
            got.append(chunk)

    task = asyncio.ensure_future(reader())
    for _ in range(500):
        if got:
            break
        await asyncio.sleep(0.01)
    assert got
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT)
    await response.aclose()
    await asyncio.sleep(0)
    assert _live_read_timers(loop) == []
    await asyncio.sleep(TIMEOUT * 1.5)  # where a stray timer would have fired
    assert await _read_all(await _send(transport, server, "/quick")) == b"data: ok\n\n"


async def test_closing_the_transport_disarms_every_timer(
    site: tuple[_Site, TestServer], transport: AiohttpTransport
) -> None:
    """Three kept-alive connections (three requests at once), each with its armed timer, and
    one response still open: ``aclose`` leaves no timer armed, so nothing fires into a closed
    transport and nothing holds the loop."""
    _, server = site
    loop = asyncio.get_running_loop()
    replies = await asyncio.gather(*(_send(transport, server, "/quick") for _ in range(3)))
    for reply in replies:
        assert await _read_all(reply) == b"data: ok\n\n"
    open_response = await _send(transport, server, "/stall")
    assert len(_live_read_timers(loop)) >= 3
    await transport.aclose()
    await asyncio.sleep(0)  # connection_lost of each closed connection
    assert _live_read_timers(loop) == []
    await open_response.aclose()
    await asyncio.sleep(TIMEOUT * 1.5)


async def test_closing_the_transport_ends_a_read_in_progress(
    site: tuple[_Site, TestServer],
) -> None:
    """A task reading a live stream while another closes the transport (a client closed
    mid-turn) gets a ReadError at once, not a wait that nothing ends: aiohttp detaches the body
    from a connection it closes, and its read timer goes with the connection. A 30 s read
    timeout, so only the close can end the read within the test's bound."""
    _, server = site
    transport = AiohttpTransport(read_timeout=30.0)
    try:
        response = await _send(transport, server, "/stream")
        got: list[bytes] = []

        async def reader() -> None:
            async for chunk in response.aiter_bytes():
                got.append(chunk)

        task = asyncio.ensure_future(reader())
        for _ in range(500):
            if got:
                break
            await asyncio.sleep(0.01)
        assert got
        await transport.aclose()
        with pytest.raises(ReadError, match="closed"):
            await asyncio.wait_for(task, WAIT)
        await response.aclose()
    finally:
        await transport.aclose()
