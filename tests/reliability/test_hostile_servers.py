"""Hostile servers: loopback aiohttp servers that misbehave on purpose, against the real clients.

Each server below is what a broken proxy, a wedged model server or an attacker-controlled
``base_url`` can do. The promise under test (docs/reliability.md): every one ends in a typed
error with a readable message — never a hang, never unbounded memory, never a leaked key:

=============================  ===============================================================
server                         expected
=============================  ===============================================================
slowloris (1 byte / 50 ms)     first-event / idle timeout fires although bytes keep arriving
endless stream                 total timeout (and, with rescue on, one non-streaming rescue)
50 MB line                     ``StreamProtocolError`` at the 1 MiB line cap; memory bounded
gzip bomb                      streamed or whole, the cap applies after decompression
HTML 502 from a proxy          ``ServerError`` with the page title, body capped at 8 KiB
200 with a JSON error body     a typed error naming the provider's message
redirect to another host       not followed: the other host never sees the API key
header bytes not UTF-8         the error quotes them as U+FFFD, never as lone surrogates
a message on several lines     quoted on one line, control characters (ANSI escapes) gone
bytes that are not HTTP        ``ReadError`` naming what the parser expected and the bytes it got
=============================  ===============================================================

Times are scaled down (50 ms per byte against a 0.3 s deadline) so the suite stays fast; the
ratios are those of the real defaults.
"""

from __future__ import annotations

import asyncio
import functools
import time
import tracemalloc
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import pytest
from aiohttp import web

from rxturn.engine import TurnEngine
from rxturn.engine.handler import StreamHandler
from rxturn.engine.observation.observers import RecordingObserver
from rxturn.errors import (
    APIStatusError,
    OverloadedError,
    ProviderStreamError,
    ReadError,
    RxturnError,
    ServerError,
    StreamProtocolError,
    StreamTimeoutError,
    UnexpectedResponseError,
)
from rxturn.testing import assert_no_secret

from .conftest import FORMAT_NAMES, RawHTTPServer, RawRequest, Site, make_client, serve, wire_reply
from .conftest import handler_with as shared_handler_with

pytestmark = pytest.mark.timeout(60)

KEY = "sk-ant-test-SECRET-123456"
MIB = 1 << 20
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def sse_response(request: web.Request, *, gzip: bool = False) -> web.StreamResponse:
    headers = {"Content-Type": "text/event-stream"}
    if gzip:
        headers["Content-Encoding"] = "gzip"
    response = web.StreamResponse(headers=headers)
    await response.prepare(request)
    return response


async def write(response: web.StreamResponse, site: Site, data: bytes) -> None:
    await response.write(data)
    site.bytes_sent += len(data)


MESSAGE_START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_h",'
    b'"type":"message","role":"assistant","model":"primary","content":[],'
    b'"usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
)


def text_delta(text: str) -> bytes:
    return (
        b"event: content_block_delta\ndata: "
        + msgspec.json.encode(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            }
        )
        + b"\n\n"
    )


#: The hostile-server tests' deadlines unless a test says otherwise.
handler_with = functools.partial(
    shared_handler_with, first_event=0.3, per_event=0.3, total=5.0, consecutive=10
)


async def run_turn(
    client: Any, handler: StreamHandler, mode: str = "streaming"
) -> tuple[Any, RxturnError | None, RecordingObserver, float]:
    """One engine run; returns (result, typed error, observer log, seconds taken)."""
    recorder = RecordingObserver()
    engine = TurnEngine(
        client,
        handler=handler,
        mode=mode,  # pyright: ignore[reportArgumentType]
        observers=[recorder],
    )
    started = time.monotonic()
    try:
        result = await asyncio.wait_for(engine.run("hi"), 30)
    except RxturnError as exc:
        # every error a hostile server provokes is also checked for the key, graph-wide
        assert_no_secret(exc, KEY, name="error")
        assert_no_secret(recorder.calls, KEY, name="observer calls")
        return None, exc, recorder, time.monotonic() - started
    return result, None, recorder, time.monotonic() - started


def deltas(recorder: RecordingObserver) -> str:
    parts: list[str] = []
    for call in recorder.calls_of("on_text_delta"):
        delta = call["delta"]
        assert isinstance(delta, str), delta
        parts.append(delta)
    return "".join(parts)


async def eventually(flag: asyncio.Event, what: str, seconds: float = 3.0) -> None:
    try:
        await asyncio.wait_for(flag.wait(), seconds)
    except TimeoutError:
        pytest.fail(f"{what} within {seconds}s")


# ------------------------------------------------------------------------------ slowloris


@pytest.mark.parametrize("events_first", [False, True], ids=["before-first-event", "mid-stream"])
async def test_slowloris_trickle_cannot_keep_a_turn_alive(events_first: bool) -> None:
    """One byte every 50 ms, never completing an event: the event deadline still fires.

    Bytes arriving are not events. Before the first event the fast-fail applies (2 timeouts of
    0.3 s); mid-stream, ``max_consecutive_timeouts`` (2 here) idle timeouts of 0.3 s — never the
    5 s total, and never the client's 120 s socket read timeout, which every byte re-arms.
    """

    async def trickle(request: web.Request, site: Site) -> web.StreamResponse:
        response = await sse_response(request)
        if events_first:
            await write(response, site, MESSAGE_START + text_delta("partial "))
        for byte in b"event: content_block_delta\ndata: {" + b'"x":' * 400:
            await write(response, site, bytes([byte]))
            await asyncio.sleep(0.05)
        return response

    async with serve(trickle) as site, make_client("anthropic", site, api_key=KEY) as client:
        handler = handler_with(consecutive=2)
        _, error, recorder, took = await run_turn(client, handler)
        assert isinstance(error, StreamTimeoutError), error
        assert error.kind == ("idle" if events_first else "first_event")
        assert 0.6 - 0.01 <= took < 3.0, f"took {took:.2f}s"
        assert site.bytes_sent >= 8, "the server was not trickling"
        assert deltas(recorder) == ("partial " if events_first else "")
        await eventually(site.disconnected, "the server did not see the client hang up")


# ------------------------------------------------------------------------------ endless stream


async def test_endless_stream_ends_at_the_total_timeout() -> None:
    """Healthy-looking events every 20 ms forever: only the total deadline can end the turn."""

    async def endless(request: web.Request, site: Site) -> web.StreamResponse:
        response = await sse_response(request)
        await write(response, site, MESSAGE_START)
        for _ in range(10_000):
            await write(response, site, text_delta("tick "))
            await asyncio.sleep(0.02)
        return response

    async with serve(endless) as site, make_client("anthropic", site, api_key=KEY) as client:
        _, error, recorder, took = await run_turn(client, handler_with(total=0.5))
        assert isinstance(error, StreamTimeoutError) and error.kind == "total", error
        assert 0.5 - 0.01 <= took < 4.0
        seen = deltas(recorder)
        assert seen.count("tick ") >= 10 and seen == "tick " * seen.count("tick ")
        assert len(site.requests) == 1, "a total timeout must never start another stream"
        await eventually(site.disconnected, "the endless stream was not closed")


async def test_endless_stream_total_timeout_is_rescued_once_without_streaming() -> None:
    async def endless_or_reply(request: web.Request, site: Site) -> web.StreamResponse:
        if not site.bodies[-1].get("stream"):
            return web.Response(
                body=wire_reply("anthropic", text="rescued"), content_type="application/json"
            )
        return await endless(request, site)

    async def endless(request: web.Request, site: Site) -> web.StreamResponse:
        response = await sse_response(request)
        await write(response, site, MESSAGE_START)
        for _ in range(10_000):
            await write(response, site, text_delta("tick "))
            await asyncio.sleep(0.02)
        return response

    async with (
        serve(endless_or_reply) as site,
        make_client("anthropic", site, api_key=KEY) as client,
    ):
        result, error, recorder, _ = await run_turn(
            client, handler_with(total=0.5, rescue=True, retries=3)
        )
        assert error is None, error
        assert result.text == "rescued" and result.turns[-1].rescued
        assert [body.get("stream") for body in site.bodies] == [True, False], site.bodies
        assert deltas(recorder).startswith("tick ")


# ------------------------------------------------------------------------------ size limits


async def _peak_during(action: Callable[[], Awaitable[Any]]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        value = await action()
        return value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_a_50_mb_line_is_cut_at_the_line_cap(fmt: str) -> None:
    """One 50 MB line (no line end): cut at 1 MiB with a typed error; memory stays bounded."""
    chunk = b"x" * (64 * 1024)
    head = {
        "anthropic": MESSAGE_START + text_delta("before ") + b"data: ",
        "openai": b'data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":'
        b'[{"index":0,"delta":{"content":"before "}}]}\n\ndata: {"x":"',
        "ollama": b'{"model":"m","message":{"role":"assistant","content":"before "},'
        b'"done":false}\n{"model":"',
    }[fmt]

    async def huge_line(request: web.Request, site: Site) -> web.StreamResponse:
        response = await sse_response(request)
        await write(response, site, head)
        for _ in range(50 * MIB // len(chunk)):
            await write(response, site, chunk)
        return response

    async with serve(huge_line) as site, make_client(fmt, site, api_key=KEY) as client:
        (_, error, recorder, _), peak = await _peak_during(
            lambda: run_turn(client, StreamHandler.passthrough())
        )
        assert isinstance(error, StreamProtocolError), error
        assert "longer than 1048576 bytes" in str(error) and "line" in str(error)
        assert deltas(recorder) == "before ", "text sent before the bad line was lost"
        assert peak < 24 * MIB, f"peak {peak / MIB:.1f} MiB"
        await eventually(site.disconnected, "the server kept writing after the error")
        assert site.bytes_sent < 40 * MIB, "the client read far past the cap"


@functools.cache
def gzip_bomb(prefix: bytes, size: int = 64 * MIB) -> bytes:
    """``prefix`` + ``size`` bytes of ``a``, gzip-compressed (ratio about 1000:1)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"a" * MIB
    parts = [compressor.compress(prefix)]
    parts += [compressor.compress(block) for _ in range(size // MIB)]
    parts.append(compressor.flush())
    return b"".join(parts)


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
async def test_a_gzip_bomb_is_capped_after_decompression(mode: str) -> None:
    """~64 KiB on the wire expanding to 64 MiB: the caps count decompressed bytes."""
    stream_bomb = gzip_bomb(b"data: ")
    reply_bomb = gzip_bomb(b'{"id":"m","type":"message","content":[{"type":"text","text":"')
    assert len(stream_bomb) < 256 * 1024

    async def bomb(request: web.Request, site: Site) -> web.StreamResponse:
        streaming = site.bodies[-1].get("stream")
        data = stream_bomb if streaming else reply_bomb
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream" if streaming else "application/json",
                "Content-Encoding": "gzip",
            }
        )
        await response.prepare(request)
        for start in range(0, len(data), 16 * 1024):
            await write(response, site, data[start : start + 16 * 1024])
        return response

    async with serve(bomb) as site, make_client("anthropic", site, api_key=KEY) as client:
        (_, error, _, _), peak = await _peak_during(
            lambda: run_turn(client, StreamHandler.passthrough(), mode)
        )
        assert isinstance(error, StreamProtocolError), error
        cap = "longer than 1048576 bytes" if mode == "streaming" else "10000000-byte limit"
        assert cap in str(error)
        assert peak < 40 * MIB, f"peak {peak / MIB:.1f} MiB for a 64 MiB bomb"


async def test_a_gzip_bomb_in_an_error_body_is_read_only_to_8_kib() -> None:
    bomb_body = gzip_bomb(b"<html><title>boom</title>", 32 * MIB)

    async def bomb(request: web.Request, site: Site) -> web.StreamResponse:
        response = web.StreamResponse(
            status=500, headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}
        )
        await response.prepare(request)
        await write(response, site, bomb_body)
        return response

    async with serve(bomb) as site, make_client("anthropic", site, api_key=KEY) as client:
        (_, error, _, _), peak = await _peak_during(
            lambda: run_turn(client, StreamHandler.passthrough())
        )
        assert isinstance(error, ServerError), error
        assert len(error.body) <= 8 * 1024 + 100 and len(str(error)) <= 600
        assert peak < 16 * MIB, f"peak {peak / MIB:.1f} MiB"


# ------------------------------------------------------------------------------ error pages


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_an_html_502_from_a_proxy_is_a_readable_server_error(fmt: str, mode: str) -> None:
    page = (
        b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title>"
        b"<style>body{font:sans-serif}</style></head><body><h1>Bad Gateway</h1>"
        + b"<p>upstream connect error or disconnect/reset before headers</p>" * 4000
        + b"<hr><center>nginx/1.25.3</center></body></html>"
    )

    async def proxy(request: web.Request, site: Site) -> web.StreamResponse:
        return web.Response(status=502, body=page, content_type="text/html")

    async with serve(proxy) as site, make_client(fmt, site, api_key=KEY) as client:
        _, error, _, _ = await run_turn(client, StreamHandler.passthrough(), mode)
        assert type(error) is ServerError, error
        assert error.status_code == 502
        message = str(error)
        assert message.startswith("HTTP 502: Bad Gateway"), message  # the status said once
        assert "<" not in message and len(message) <= 500, message
        assert len(error.body) <= 8 * 1024 + 100, f"body kept {len(error.body)} chars"


ERROR_BODIES = {
    "anthropic": (
        b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        OverloadedError,
        "Overloaded",
    ),
    "openai": (
        b'{"error":{"message":"The server had an error processing your request.",'
        b'"type":"server_error","param":null,"code":null}}',
        ProviderStreamError,
        "The server had an error processing your request.",
    ),
    "ollama": (
        b'{"error":"model requires more system memory (12.0 GiB) than is available"}',
        ProviderStreamError,
        "model requires more system memory",
    ),
}


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_status_200_with_a_json_error_body_is_a_typed_error(fmt: str, mode: str) -> None:
    body, error_type, text = ERROR_BODIES[fmt]

    async def liar(request: web.Request, site: Site) -> web.StreamResponse:
        return web.Response(status=200, body=body, content_type="application/json")

    async with serve(liar) as site, make_client(fmt, site, api_key=KEY) as client:
        result, error, _, _ = await run_turn(client, StreamHandler.passthrough(), mode)
        assert result is None, "a JSON error body was taken for a reply"
        assert isinstance(error, error_type), error
        assert text in str(error), f"the provider's message is lost: {error}"


# ------------------------------------------------------------------------------ redirects


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_a_redirect_to_another_host_never_carries_the_key(
    fmt: str, status: int, mode: str
) -> None:
    async def collector(request: web.Request, site: Site) -> web.StreamResponse:
        return web.Response(body=wire_reply(fmt, text="stolen"), content_type="application/json")

    async with serve(collector, host="127.0.0.2") as other:

        async def redirector(request: web.Request, site: Site) -> web.StreamResponse:
            return web.Response(
                status=status, headers={"Location": other.base_url + request.path_qs}
            )

        async with serve(redirector) as site, make_client(fmt, site, api_key=KEY) as client:
            result, error, _, _ = await run_turn(client, StreamHandler.passthrough(), mode)
        assert result is None and type(error) is APIStatusError, error
        assert error.status_code == status
        assert "not followed" in str(error) and KEY not in str(error)
        assert other.requests == [], "the redirect was followed"
        assert len(site.requests) == 1
        sent = site.headers[0]
        assert KEY in sent.get("x-api-key", "") + sent.get("authorization", "")


# Header values as raw bytes that are not UTF-8 (aiohttp hands them on as lone surrogates).
NOT_UTF8 = b"\xff\xfe"
HEADER_BYTES: dict[str, tuple[bytes, type[RxturnError], str]] = {
    "location": (
        b"HTTP/1.1 302 Found\r\nLocation: http://elsewhere/" + NOT_UTF8 + b"\r\n",
        APIStatusError,
        "message",
    ),
    "content-type": (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/x-" + NOT_UTF8 + b"\r\n",
        UnexpectedResponseError,
        "content_type",
    ),
    "request-id": (
        b"HTTP/1.1 500 Oops\r\nrequest-id: req-" + NOT_UTF8 + b"\r\n",
        ServerError,
        "request_id",
    ),
}


def _text_fields(error: BaseException) -> dict[str, str]:
    fields = {"message": str(error)}
    fields.update({k: v for k, v in vars(error).items() if isinstance(v, str)})
    return fields


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("where", list(HEADER_BYTES))
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_header_bytes_that_are_not_utf8_reach_no_error_as_surrogates(
    fmt: str, where: str, mode: str
) -> None:
    """A ``Location``, ``Content-Type`` or request id the error quotes must be text that a JSON
    line or a log file can hold (``rxturn chat --json`` crashed on a lone surrogate)."""
    head, expected, field = HEADER_BYTES[where]

    def respond(request: RawRequest) -> bytes:
        return head + b"Connection: close\r\n\r\nnot what was asked for"

    async with RawHTTPServer(respond) as server, make_client(fmt, server) as client:
        _, error, _, _ = await run_turn(client, StreamHandler.passthrough(), mode)
    assert error is not None and type(error) is expected, repr(error)
    fields = _text_fields(error)
    for value in fields.values():
        value.encode("utf-8")  # raises on a lone surrogate
    assert "\ufffd\ufffd" in fields[field], fields


# A provider message with line breaks, an ANSI escape, a bell and a NUL, as JSON escapes.
MULTI_LINE = "first line\\nsecond\\r\\n\\u001b[2J\\u0007 \\u0000end"


def _in_stream_error(fmt: str) -> bytes:
    if fmt == "ollama":
        return b'{"error":"' + MULTI_LINE.encode() + b'"}\n'
    event = (
        b'{"type":"error","error":{"type":"api_error","message":"' + MULTI_LINE.encode() + b'"}}'
    )
    return b"event: error\ndata: " + event + b"\n\n"


@pytest.mark.parametrize("where", ["status", "status-text", "in-stream"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_a_provider_message_on_several_lines_is_one_line_without_controls(
    fmt: str, where: str
) -> None:
    """The error quotes the provider's message on one line, its control characters gone: a
    server cannot break a log line in two or send escape sequences to a terminal through it."""
    body = b'{"error":{"type":"api_error","message":"' + MULTI_LINE.encode() + b'"}}'

    async def handler(request: web.Request, site: Site) -> web.StreamResponse:
        if where == "status":
            return web.Response(status=500, body=body, content_type="application/json")
        if where == "status-text":
            text = b"first line\nsecond\r\n\x1b[2J\x07 \x00end"
            return web.Response(status=502, body=text, content_type="text/plain")
        kind = "application/x-ndjson" if fmt == "ollama" else "text/event-stream"
        return web.Response(status=200, body=_in_stream_error(fmt), content_type=kind)

    async with serve(handler) as site, make_client(fmt, site, api_key=KEY) as client:
        _, error, _, _ = await run_turn(client, StreamHandler.passthrough())
    assert isinstance(error, ServerError | ProviderStreamError), repr(error)
    assert "first line second [2J end" in str(error), str(error)
    assert str(error).isprintable(), repr(str(error))


BROKEN_HTTP = {
    "status line": (b"HTTP/1.1 OK then nothing\r\n\r\n", b"HTTP/1.1 OK then nothing"),
    "content-length": (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", b"Content-Length: -1"),
    "chunk size": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n",
        b"zz",
    ),
}


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("case", list(BROKEN_HTTP))
async def test_a_response_that_is_not_http_says_what_it_got(case: str, mode: str) -> None:
    """aiohttp's parser explains on several lines (what it expected, the bytes it got, a
    pointer); the error keeps that on one line instead of stopping at "Bad status line:"."""
    response, offending = BROKEN_HTTP[case]
    async with (
        RawHTTPServer(lambda request: response) as server,
        make_client("anthropic", server) as client,
    ):
        _, error, _, _ = await run_turn(client, StreamHandler.passthrough(), mode)
    assert isinstance(error, ReadError), repr(error)
    assert "invalid HTTP response" in str(error), str(error)
    assert repr(offending) in str(error) and "\n" not in str(error), str(error)
