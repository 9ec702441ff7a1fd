"""AiohttpTransport against real aiohttp.web servers on 127.0.0.1 (never the internet)."""

from __future__ import annotations

import asyncio
import gzip
import math
import socket
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

import rxturn.transport.aiohttp as transport_module
from rxturn.errors import ConfigError, ConnectError, ReadError, StreamProtocolError
from rxturn.transport import AiohttpTransport, AsyncTransport, HttpResponse
from rxturn.transport.aiohttp import map_aiohttp_errors

WAIT = 5.0
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ServerFactory = Callable[..., Awaitable[TestServer]]
_T = TypeVar("_T")


async def serve(aiohttp_server: ServerFactory, routes: dict[str, Handler]) -> TestServer:
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_route("*", path, handler)
    return await aiohttp_server(app)


def url(server: TestServer, path: str) -> str:
    return str(server.make_url(path))


async def send(transport: AiohttpTransport, target: str, *, stream: bool = True) -> HttpResponse:
    return await transport.send(
        "POST", target, headers={"content-type": "application/json"}, body=b"{}", stream=stream
    )


def test_transport_satisfies_the_protocol() -> None:
    assert isinstance(AiohttpTransport(), AsyncTransport)


@pytest.mark.parametrize("direct", [True, False], ids=["request-coroutine", "public-request"])
async def test_request_reaches_the_server_and_headers_are_case_insensitive(
    aiohttp_server: ServerFactory,
    transport: AiohttpTransport,
    monkeypatch: pytest.MonkeyPatch,
    direct: bool,
) -> None:
    # the same request whether aiohttp's request coroutine is awaited directly or through the
    # public ``ClientSession.request`` (an aiohttp without the coroutine)
    monkeypatch.setattr(transport_module, "_DIRECT", direct)
    seen: dict[str, Any] = {}

    async def handler(request: web.Request) -> web.Response:
        seen["method"] = request.method
        seen["body"] = await request.read()
        seen["x-api-key"] = request.headers.get("x-api-key")
        return web.Response(body=b"hello", headers={"Request-Id": "req_1"})

    server = await serve(aiohttp_server, {"/v1/messages": handler})
    response = await transport.send(
        "POST",
        url(server, "/v1/messages"),
        headers={"x-api-key": "k"},
        body=b'{"a":1}',
        stream=False,
    )
    try:
        assert isinstance(response, HttpResponse)
        assert response.status == 200
        assert response.headers["request-id"] == "req_1"
        assert response.headers.get("REQUEST-ID") == "req_1"
        assert await response.read(1024) == b"hello"
    finally:
        await response.aclose()
        await response.aclose()  # idempotent
    assert seen == {"method": "POST", "body": b'{"a":1}', "x-api-key": "k"}


async def test_chunks_are_delivered_as_they_arrive(
    aiohttp_server: ServerFactory, transport: AiohttpTransport
) -> None:
    """The second chunk is only written after the client has seen the first: no buffering."""
    first_seen = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"data: one\n\n")
        await asyncio.wait_for(first_seen.wait(), WAIT)
        await response.write(b"data: two\n\n")
        await response.write_eof()
        return response

    server = await serve(aiohttp_server, {"/s": handler})
    response = await send(transport, url(server, "/s"))
    received = b""
    try:
        async for chunk in response.aiter_bytes():
            received += chunk
            if received == b"data: one\n\n":
                first_seen.set()
    finally:
        await response.aclose()
    assert received == b"data: one\n\ndata: two\n\n"


async def test_aclose_mid_stream_drops_the_connection(
    aiohttp_server: ServerFactory, transport: AiohttpTransport
) -> None:
    disconnected = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        try:
            while True:
                await response.write(b"data: x\n\n")
                await asyncio.sleep(0.001)
        except (ConnectionError, asyncio.CancelledError):
            disconnected.set()
            raise

    server = await serve(aiohttp_server, {"/s": handler})
    response = await send(transport, url(server, "/s"))
    async for _ in response.aiter_bytes():
        break
    await response.aclose()
    await asyncio.wait_for(disconnected.wait(), WAIT)


async def test_fully_read_connection_is_reused(
    aiohttp_server: ServerFactory, transport: AiohttpTransport
) -> None:
    peers: list[Any] = []

    async def handler(request: web.Request) -> web.Response:
        peers.append(request.transport.get_extra_info("peername") if request.transport else None)
        return web.Response(body=b"ok")

    server = await serve(aiohttp_server, {"/r": handler})
    for _ in range(3):
        response = await send(transport, url(server, "/r"), stream=False)
        assert await response.read(100) == b"ok"
        await response.aclose()
    assert len(peers) == 3 and len(set(peers)) == 1


class TestReadLimit:
    async def test_declared_length_over_the_limit_is_refused_before_reading(
        self, aiohttp_server: ServerFactory, transport: AiohttpTransport
    ) -> None:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=b"x" * 2000)

        server = await serve(aiohttp_server, {"/big": handler})
        response = await send(transport, url(server, "/big"), stream=False)
        try:
            with pytest.raises(StreamProtocolError, match="2000 bytes exceeds the 1000-byte"):
                await response.read(1000)
        finally:
            await response.aclose()

    async def test_chunked_body_over_the_limit_is_cut_off(
        self, aiohttp_server: ServerFactory, transport: AiohttpTransport
    ) -> None:
        async def handler(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse()
            response.enable_chunked_encoding()
            await response.prepare(request)
            for _ in range(20):
                await response.write(b"y" * 100)
            await response.write_eof()
            return response

        server = await serve(aiohttp_server, {"/chunked": handler})
        response = await send(transport, url(server, "/chunked"), stream=False)
        try:
            with pytest.raises(StreamProtocolError, match="exceeds the 1000-byte limit"):
                await response.read(1000)
        finally:
            await response.aclose()

    async def test_decompressed_size_is_what_counts(
        self, aiohttp_server: ServerFactory, transport: AiohttpTransport
    ) -> None:
        """A small gzip body that inflates past the cap is refused (no zip bomb)."""
        bomb = gzip.compress(b"z" * 100_000)
        assert len(bomb) < 1000

        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=bomb, headers={"content-encoding": "gzip"})

        server = await serve(aiohttp_server, {"/gz": handler})
        response = await send(transport, url(server, "/gz"), stream=False)
        try:
            with pytest.raises(StreamProtocolError, match="exceeds the 10000-byte limit"):
                await response.read(10_000)
        finally:
            await response.aclose()

    async def test_body_at_exactly_the_limit_is_fine(
        self, aiohttp_server: ServerFactory, transport: AiohttpTransport
    ) -> None:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=b"x" * 1000)

        server = await serve(aiohttp_server, {"/exact": handler})
        response = await send(transport, url(server, "/exact"), stream=False)
        try:
            assert len(await response.read(1000)) == 1000
        finally:
            await response.aclose()


async def test_redirects_are_not_followed(
    aiohttp_server: ServerFactory, transport: AiohttpTransport
) -> None:
    followed: list[str | None] = []

    async def elsewhere(request: web.Request) -> web.Response:
        followed.append(request.headers.get("x-api-key"))
        return web.Response(body=b"stolen")

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(location="/elsewhere")

    server = await serve(aiohttp_server, {"/v1/messages": redirect, "/elsewhere": elsewhere})
    response = await transport.send(
        "POST",
        url(server, "/v1/messages"),
        headers={"x-api-key": "secret"},
        body=b"{}",
        stream=False,
    )
    try:
        assert response.status == 307
        assert response.headers["location"] == "/elsewhere"
    finally:
        await response.aclose()
    assert followed == []


async def test_connection_refused_is_a_connect_error(transport: AiohttpTransport) -> None:
    with socket.socket() as sock:  # find a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    expected = rf"cannot connect to http://127\.0\.0\.1:{port}/v1"
    with pytest.raises(ConnectError, match=expected) as info:
        await send(transport, f"http://127.0.0.1:{port}/v1?key=sk-secret")
    assert "sk-secret" not in str(info.value)
    assert isinstance(info.value.__cause__, aiohttp.ClientConnectorError)


async def test_idle_read_timeout_is_a_read_error(aiohttp_server: ServerFactory) -> None:
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"data: first\n\n")
        await release.wait()  # then go silent until the test ends
        return response

    server = await serve(aiohttp_server, {"/stall": handler})
    transport = AiohttpTransport(read_timeout=0.05)
    try:
        response = await send(transport, url(server, "/stall"))
        try:
            chunks = response.aiter_bytes()
            assert await chunks.__anext__() == b"data: first\n\n"
            with pytest.raises(ReadError, match=r"read timed out after 0\.05s") as info:
                await chunks.__anext__()
            assert isinstance(info.value.__cause__, TimeoutError)
        finally:
            await response.aclose()
    finally:
        release.set()
        await transport.aclose()


async def test_a_trickling_stream_outlasting_the_read_timeout_is_not_timed_out(
    aiohttp_server: ServerFactory,
) -> None:
    """The read timeout bounds the silence between chunks, not the response: chunks 30 ms
    apart for twice the 300 ms bound keep it from firing (its one timer re-arms itself while
    data keeps coming); the silence after the last chunk then does fire it, and no sooner than
    the bound after that chunk was sent.

    The server runs on the test's own loop: a pause of the whole process (a loaded machine)
    longer than the bound less the spacing fires the timer before the server's next chunk can
    go out. With a 100 ms bound that was 70 ms, and a 100 ms pause failed the test; the
    margin is 270 ms now."""
    release = asyncio.Event()
    loop = asyncio.get_running_loop()
    sent_last = 0.0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal sent_last
        response = web.StreamResponse()
        await response.prepare(request)
        for i in range(20):
            sent_last = loop.time()  # no chunk is received before it is sent
            await response.write(f"data: {i}\n\n".encode())
            await asyncio.sleep(0.03)
        await release.wait()
        return response

    server = await serve(aiohttp_server, {"/trickle": handler})
    transport = AiohttpTransport(read_timeout=0.3)
    received: list[bytes] = []
    try:
        response = await send(transport, url(server, "/trickle"))
        try:
            with pytest.raises(ReadError, match=r"read timed out after 0\.3s"):
                async for chunk in response.aiter_bytes():
                    received.append(chunk)
            silence = loop.time() - sent_last
        finally:
            await response.aclose()
    finally:
        release.set()
        await transport.aclose()
    assert b"".join(received) == b"".join(f"data: {i}\n\n".encode() for i in range(20))
    assert silence >= 0.3 - 0.01  # the loop's clock granularity, not a performance bound


async def test_the_read_timeout_arms_one_timer_per_response_not_one_per_chunk(
    aiohttp_server: ServerFactory,
) -> None:
    """200 chunks of one response arm the read timeout's timer a handful of times, where a
    timer per chunk would arm it 200 times (and leave each cancelled one on the loop's heap)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        for i in range(200):
            await response.write(f"data: {i}\n\n".encode())
            await asyncio.sleep(0)  # one chunk on the wire at a time
        return response

    server = await serve(aiohttp_server, {"/many": handler})
    transport = AiohttpTransport(read_timeout=30.0)
    loop = asyncio.get_running_loop()
    armed: list[float] = []
    call_at, call_later = loop.call_at, loop.call_later

    def counting_call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(callback, "__name__", "") == "_on_read_timeout":
            armed.append(when)
        return call_at(when, callback, *args, **kwargs)

    def counting_call_later(delay: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(callback, "__name__", "") == "_on_read_timeout":
            armed.append(delay)
        return call_later(delay, callback, *args, **kwargs)

    loop.call_at = counting_call_at
    loop.call_later = counting_call_later
    try:
        response = await send(transport, url(server, "/many"))
        try:
            chunks = [chunk async for chunk in response.aiter_bytes()]
        finally:
            await response.aclose()
    finally:
        del loop.call_at, loop.call_later  # back to the class's methods
        await transport.aclose()
    assert b"".join(chunks).count(b"data: ") == 200
    assert len(chunks) > 20  # the stream really came in many reads
    assert 1 <= len(armed) <= 3, armed


async def test_a_kept_alive_connection_arms_the_read_timer_once_not_per_request(
    aiohttp_server: ServerFactory,
) -> None:
    """Five requests in a row on one pooled connection share its read timer: it is armed when
    the first goes out and stays armed (idle between responses), where a timer per request
    would arm it five times and leave four cancelled ones on the loop's heap."""

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=b"data: ok\n\n", content_type="text/event-stream")

    server = await serve(aiohttp_server, {"/one": handler})
    transport = AiohttpTransport(read_timeout=30.0)
    loop = asyncio.get_running_loop()
    armed: list[float] = []
    call_at = loop.call_at

    def counting_call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(callback, "__name__", "") == "_on_read_timeout":
            armed.append(when)
        return call_at(when, callback, *args, **kwargs)

    loop.call_at = counting_call_at
    try:
        for _ in range(5):
            response = await send(transport, url(server, "/one"))
            try:
                assert (
                    b"".join([chunk async for chunk in response.aiter_bytes()]) == b"data: ok\n\n"
                )
            finally:
                await response.aclose()
    finally:
        del loop.call_at  # back to the class's method
        await transport.aclose()
    assert len(armed) == 1, armed


async def test_an_idle_connections_read_timer_lapses_and_wakes_for_the_next_request(
    aiohttp_server: ServerFactory,
) -> None:
    """The timer of a connection left idle in the pool for longer than the read timeout
    fires idle and says nothing; the next request on that connection is timed from its own
    start: it gets its reply, and its silence then times out after the bound."""
    release = asyncio.Event()

    async def quick(request: web.Request) -> web.Response:
        return web.Response(body=b"data: ok\n\n", content_type="text/event-stream")

    async def stall(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"data: first\n\n")
        await release.wait()
        return response

    server = await serve(aiohttp_server, {"/quick": quick, "/stall": stall})
    transport = AiohttpTransport(read_timeout=0.05)
    loop = asyncio.get_running_loop()
    try:
        response = await send(transport, url(server, "/quick"))
        try:
            assert b"".join([chunk async for chunk in response.aiter_bytes()]) == b"data: ok\n\n"
        finally:
            await response.aclose()
        await asyncio.sleep(0.15)  # idle past the bound: the armed timer fires and lapses
        response = await send(transport, url(server, "/quick"))
        try:
            assert b"".join([chunk async for chunk in response.aiter_bytes()]) == b"data: ok\n\n"
        finally:
            await response.aclose()
        response = await send(transport, url(server, "/stall"))
        try:
            chunks = response.aiter_bytes()
            assert await chunks.__anext__() == b"data: first\n\n"
            last = loop.time()
            with pytest.raises(ReadError, match=r"read timed out after 0\.05s"):
                await chunks.__anext__()
            assert loop.time() - last >= 0.05 - 0.01  # the clock's granularity, not a bound
        finally:
            await response.aclose()
    finally:
        release.set()
        await transport.aclose()


async def test_server_dropping_a_chunked_stream_is_a_read_error(
    aiohttp_server: ServerFactory, transport: AiohttpTransport
) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(b"data: partial\n\n")
        await asyncio.sleep(0)
        assert request.transport is not None
        request.transport.abort()  # no terminating chunk: the body is incomplete
        return response

    server = await serve(aiohttp_server, {"/drop": handler})
    response = await send(transport, url(server, "/drop"))
    received: list[bytes] = []
    try:
        with pytest.raises(ReadError, match=r"response body incomplete|server disconnected"):
            async for chunk in response.aiter_bytes():
                received.append(chunk)
    finally:
        await response.aclose()
    assert b"".join(received) == b"data: partial\n\n"


async def test_invalid_url_is_a_config_error(transport: AiohttpTransport) -> None:
    with pytest.raises(ConfigError, match="invalid URL"):
        await send(transport, "ftp://127.0.0.1/x")
    with pytest.raises(ConfigError, match="invalid URL"):
        await send(transport, "not a url")


async def test_aclose_is_idempotent_and_the_transport_reopens(
    aiohttp_server: ServerFactory,
) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=b"ok")

    server = await serve(aiohttp_server, {"/r": handler})
    transport = AiohttpTransport()
    assert transport.closed
    for _ in range(2):
        response = await send(transport, url(server, "/r"), stream=False)
        assert not transport.closed
        assert await response.read(10) == b"ok"
        await response.aclose()
        await transport.aclose()
        await transport.aclose()
        assert transport.closed


@pytest.mark.parametrize(
    ("exc", "expected", "text"),
    [
        (
            aiohttp.ConnectionTimeoutError(),
            ConnectError,
            "timed out connecting to http://h/p after 3s",
        ),
        (
            aiohttp.SocketTimeoutError(),
            ReadError,
            "read timed out after 7s (no data from http://h/p)",
        ),
        (TimeoutError(), ReadError, "read timed out after 7s"),
        (aiohttp.ServerDisconnectedError(), ReadError, "server disconnected (http://h/p)"),
        (
            aiohttp.ClientPayloadError("boom"),
            ReadError,
            "response body incomplete (http://h/p): the connection closed before the body ended",
        ),
        (ConnectionResetError(104, "reset by peer"), ReadError, "connection error (http://h/p)"),
        (aiohttp.ClientOSError(32, "broken pipe"), ReadError, "connection error (http://h/p)"),
    ],
    ids=[
        "connect-timeout",
        "socket-timeout",
        "timeout",
        "disconnect",
        "payload",
        "oserror",
        "client-oserror",
    ],
)
def test_error_mapping_table(exc: Exception, expected: type[Exception], text: str) -> None:
    with (
        pytest.raises(expected) as info,
        map_aiohttp_errors("http://user:pw@h/p?key=secret", connect_timeout=3, read_timeout=7),
    ):
        raise exc
    assert str(info.value).startswith(text)
    assert "secret" not in str(info.value) and "pw" not in str(info.value)
    assert info.value.__cause__ is exc


def test_cancellation_and_foreign_errors_pass_through() -> None:
    with pytest.raises(asyncio.CancelledError), map_aiohttp_errors("http://h/"):
        raise asyncio.CancelledError
    with pytest.raises(KeyError), map_aiohttp_errors("http://h/"):
        raise KeyError("not a transport failure")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"connect_timeout": 0},
        {"read_timeout": -1},
        {"limit": 0},
        {"limit_per_host": -1},
        {"connect_timeout": "10"},
        {"keepalive_timeout": True},
        # infinite timeouts failed later, in aiohttp (OverflowError sending, or in a callback)
        {"connect_timeout": math.inf},
        {"keepalive_timeout": math.inf},
        {"read_timeout": math.inf},
        # integers past any float (OverflowError where they became floats)
        {"connect_timeout": 10**400},
        {"read_timeout": 10**400},
        {"keepalive_timeout": 10**400},
    ],
    ids=[
        "connect0",
        "read-neg",
        "limit0",
        "per-host-neg",
        "str",
        "bool",
        "connect-inf",
        "keepalive-inf",
        "read-inf",
        "connect-huge",
        "read-huge",
        "keepalive-huge",
    ],
)
def test_bad_settings_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        AiohttpTransport(**kwargs)


def test_an_expansion_ratio_past_any_float_is_no_bound() -> None:
    # as an infinite one is (float() of it raised OverflowError)
    assert AiohttpTransport(max_expansion_ratio=10**400).max_expansion_ratio == math.inf
    assert AiohttpTransport(max_expansion_ratio=math.inf).max_expansion_ratio == math.inf


@pytest.mark.loop_reports_expected  # the leak it provokes is also reported to the loop
async def test_the_leak_check_is_armed(aiohttp_server: ServerFactory) -> None:
    """A session that is never closed does warn when collected: the gc.collect() in the
    fixtures would turn a real leak into a failing test (warnings are errors). (A transport
    that is dropped closes its pool itself: the test below.)"""
    import gc
    import warnings

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=b"ok")

    server = await serve(aiohttp_server, {"/r": handler})
    leaky = aiohttp.ClientSession()
    response = await leaky.get(url(server, "/r"))
    await response.read()
    connector = leaky.connector  # closed by hand below, once the warning is seen
    assert connector is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del leaky, response
        gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert any(text.startswith("Unclosed client session") for text in leaks), leaks
    await connector.close()


async def test_a_dropped_transport_closes_its_pool_on_its_loop(
    aiohttp_server: ServerFactory,
) -> None:
    """A client dropped unclosed while its loop runs (a notebook cell run again) printed
    "Unclosed client session" and "Unclosed connector" when collected, its connection left
    open until then; its pool now closes on the loop, quietly (the fixtures fail the test on
    a warning or a report to the loop)."""
    import gc

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=b"ok")

    server = await serve(aiohttp_server, {"/r": handler})
    dropped = AiohttpTransport()
    response = await send(dropped, url(server, "/r"), stream=False)
    await response.read(10)
    await response.aclose()
    session = dropped._pools[asyncio.get_running_loop()].session
    assert session is not None and not session.closed
    del dropped, response
    gc.collect()
    for _ in range(20):  # bounded: the close is a task the loop runs next
        if session.closed:
            break
        await asyncio.sleep(0)
    assert session.closed


def _serve_once_on_this_loop(
    transport: AiohttpTransport,
) -> Callable[[], Coroutine[Any, Any, bytes]]:
    """One request with ``transport`` to a server started on the running loop (each
    ``asyncio.run`` below is a new loop, with a server of its own)."""

    async def once() -> bytes:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=b"ok")

        app = web.Application()
        app.router.add_post("/r", handler)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        try:
            response = await send(transport, url(server, "/r"), stream=False)
            try:
                return await response.read(10)
            finally:
                await response.aclose()
        finally:
            await server.close()

    return once


def test_a_pool_serves_one_asyncio_run_after_another() -> None:
    """A client made at module level and used by one ``asyncio.run`` after another: the
    second run was a ConfigError ("belongs to another event loop", with advice to close it on
    a loop that no longer existed), and the first run's session was reported unclosed at
    exit. Each run's shutdown now closes its pool; the next run opens its own."""
    transport = AiohttpTransport()
    once = _serve_once_on_this_loop(transport)
    for _ in range(3):
        assert asyncio.run(once()) == b"ok"
        assert transport.closed  # closed by asyncio.run's shutdown, on its loop


def test_a_pool_whose_loop_closed_without_shutdown_gives_way() -> None:
    """A loop closed by hand (``run_until_complete``, then ``close``: no shutdown of its
    async generators) leaves its pool open on a dead loop: the next loop gets a pool of its
    own, and the dead one is marked closed, so nothing reports it unclosed."""
    transport = AiohttpTransport()
    once = _serve_once_on_this_loop(transport)
    first = asyncio.new_event_loop()
    try:
        assert first.run_until_complete(once()) == b"ok"
        dead = transport._pools[first].session
        assert not dead.closed
    finally:
        first.close()
    assert asyncio.run(once()) == b"ok"
    assert dead.closed
    assert transport.closed


class _LoopThread:
    """An event loop running in a thread of its own (another thread's loop, as a user's)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=10)

    def close(self) -> None:
        self.run(self.loop.shutdown_asyncgens())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


def test_aclose_on_another_loop_closes_the_pool_on_its_own() -> None:
    """``await client.aclose()`` on a loop other than the pool's (still running, in another
    thread) raised "got Future ... attached to a different loop", left the pool open and a
    "Task was destroyed but it is pending!" behind; it now has the pool closed on its loop."""
    other = _LoopThread()
    transport = AiohttpTransport()

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=b"ok")

    app = web.Application()
    app.router.add_post("/r", handler)
    server = TestServer(app, host="127.0.0.1")
    other.run(server.start_server())

    async def request() -> bytes:  # its connection stays in the pool
        response = await send(transport, url(server, "/r"), stream=False)
        try:
            return await response.read(10)
        finally:
            await response.aclose()

    try:
        assert other.run(request()) == b"ok"
        pool = transport._pools[other.loop].session
        assert pool.connector is not None and not pool.closed

        async def close_here() -> None:
            await transport.aclose()
            for _ in range(100):  # bounded: the close runs on the other loop
                if pool.closed:
                    return
                await asyncio.sleep(0.01)

        asyncio.run(close_here())
        assert pool.closed
        assert transport.closed
    finally:
        other.run(server.close())
        other.close()


def test_two_loops_in_two_threads_share_a_transport_at_once() -> None:
    """Two threads, each running its loop, sending through one client at the same time (a
    threaded web server running ``asyncio.run`` per request, with a client made at module
    level): the second was a ConfigError ("its connection pool belongs to another event
    loop"), whenever the two overlapped. Each loop now has a pool of its own."""
    server_thread, first, second = _LoopThread(), _LoopThread(), _LoopThread()
    both_in = asyncio.Event()  # (on the server's loop)
    arrived: list[object] = []

    async def handler(request: web.Request) -> web.Response:
        arrived.append(request)
        if len(arrived) == 2:
            both_in.set()
        await asyncio.wait_for(both_in.wait(), 5)  # bounded: the other may never come
        return web.Response(body=b"ok")

    app = web.Application()
    app.router.add_post("/r", handler)
    server = TestServer(app, host="127.0.0.1")
    server_thread.run(server.start_server())
    transport = AiohttpTransport()

    async def request() -> bytes:
        response = await send(transport, url(server, "/r"), stream=False)
        try:
            return await response.read(10)
        finally:
            await response.aclose()

    try:
        one = asyncio.run_coroutine_threadsafe(request(), first.loop)
        two = asyncio.run_coroutine_threadsafe(request(), second.loop)
        assert one.result(timeout=10) == b"ok"
        assert two.result(timeout=10) == b"ok"
        pools = [transport._pools[loop.loop].session for loop in (first, second)]
        assert pools[0] is not pools[1]
        first.close()  # each loop's shutdown closes its own pool
        assert pools[0].closed and not pools[1].closed
        second.close()
        assert transport.closed
    finally:
        for loop in (first, second):
            if not loop.loop.is_closed():
                loop.close()
        server_thread.run(server.close())
        server_thread.close()


async def test_connections_use_tcp_nodelay(
    aiohttp_server: ServerFactory, transport: AiohttpTransport
) -> None:
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"data: x\n\n")
        await release.wait()  # keep the connection busy while the test looks at it
        return response

    server = await serve(aiohttp_server, {"/r": handler})
    response = await send(transport, url(server, "/r"))
    try:
        raw: Any = response._response  # pyright: ignore[reportAttributeAccessIssue]  # the aiohttp response
        sock = raw.connection.transport.get_extra_info("socket")
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        release.set()
        await response.aclose()


async def test_a_body_of_megabytes_is_streamed_whole_without_a_resource_warning(
    aiohttp_server: ServerFactory, transport: AiohttpTransport
) -> None:
    # before, the bytes went to aiohttp as they were: past 1 MiB it warned "Sending a large
    # body directly with raw bytes might lock the event loop" (a ResourceWarning, an error
    # in this suite) on every request with a few MB of inline media
    body = b'{"image":"' + b"A" * (transport_module.LARGE_BODY_BYTES + 1) + b'"}'
    seen: dict[str, Any] = {}

    async def handler(request: web.Request) -> web.Response:
        seen["body"] = await request.read()
        seen["length"] = request.headers.get("content-length")
        seen["type"] = request.headers.get("content-type")
        return web.Response(body=b"ok")

    app = web.Application(client_max_size=2 * len(body))
    app.router.add_route("POST", "/v1/messages", handler)
    server = await aiohttp_server(app)
    response = await transport.send(
        "POST",
        url(server, "/v1/messages"),
        headers={"content-type": "application/json"},
        body=body,
        stream=False,
    )
    try:
        assert response.status == 200
    finally:
        await response.aclose()
    assert seen["body"] == body
    assert seen["length"] == str(len(body))
    assert seen["type"] == "application/json"  # (a stream's own default is octet-stream)
