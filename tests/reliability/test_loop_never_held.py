"""The event loop is never held, whatever a server sends (docs/reliability.md §5).

Every test runs real rxturn clients against real aiohttp servers on 127.0.0.1 while a
:class:`~._loopback.LagMonitor` records the longest time the loop was unavailable. The bound
asserted, :data:`MAX_LAG`, is a stall detector: before reading was sliced and paced, a 100 KB gzip
body of keep-alive pings held the loop for ~0.85 s, and a 10 MB reply of small content blocks for
~0.4 s while it was parsed.

Shapes covered, for each wire format where they mean something:

- a compressed body inflating to millions of tiny events (keep-alive pings, empty deltas,
  comment lines, blank lines) — with the caps raised so all of it is read, and with the default
  caps, which stop it at the expansion-ratio limit;
- the same flood uncompressed;
- one line of several megabytes, ended or not (a body with no newline at all), plain and gzip;
- endless compressed floods while the first-event, idle and total deadlines and a cancel fire;
- non-streaming bodies of the same kinds, on the ``create`` path and in the rescue;
- how the transport decompresses (codings, corrupt and truncated data, the two limits) and what
  it asks for;
- the tokenizer loading in a worker thread.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import random
import threading
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import pytest
from aiohttp import web
from multidict import CIMultiDict
from slow_params import mostly_slow

from rxturn.engine import TurnEngine
from rxturn.engine.context import tokens as tokens_module
from rxturn.engine.handler import StreamHandler
from rxturn.errors import (
    Cancelled,
    ConfigError,
    DecompressionLimitError,
    RateLimitError,
    ReadError,
    RxturnError,
    ServerError,
    StreamProtocolError,
    StreamTimeoutError,
    TruncatedStreamError,
)
from rxturn.transport import AiohttpTransport

from ._loopback import LagMonitor, Site, serve
from .conftest import FORMAT_NAMES, handler_with, make_client, wire_reply, wire_stream

KIB = 1 << 10
MIB = 1 << 20
#: Longest tolerated loop stall (a stall detector, see the module docstring).
MAX_LAG = 0.3
#: Caps raised out of the way, so a flood is read to its end (or to a deadline).
NO_CAPS = {"max_decompressed_bytes": 1 << 40, "max_expansion_ratio": 1e12}

Body = Callable[[web.Request, Site], Awaitable[web.StreamResponse]]

# --------------------------------------------------------------------------------- the shapes

ANTHROPIC_HEAD = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_f",'
    b'"type":"message","role":"assistant","model":"primary","content":[],'
    b'"usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
)
OPENAI_HEAD = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"primary",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
)
OLLAMA_HEAD = (
    b'{"model":"primary","created_at":"2025-01-01T00:00:00Z",'
    b'"message":{"role":"assistant","content":""},"done":false}\n'
)
HEADS = {"anthropic": ANTHROPIC_HEAD, "openai": OPENAI_HEAD, "ollama": OLLAMA_HEAD}

# (format, name, unit): one tiny event the flood repeats; none of them carries text.
TINY_EVENTS: list[tuple[str, str, bytes]] = [
    ("anthropic", "ping", b'event: ping\ndata: {"type": "ping"}\n\n'),
    (
        "anthropic",
        "empty-delta",
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":""}}\n\n',
    ),
    ("anthropic", "comment", b":\n"),
    ("openai", "no-choices", b'data: {"choices":[]}\n\n'),
    ("openai", "empty-delta", b'data: {"choices":[{"index":0,"delta":{"content":""}}]}\n\n'),
    ("openai", "keep-alive", b": keep-alive\n\n"),
    ("ollama", "blank-line", b"\n"),
    (
        "ollama",
        "empty-delta",
        b'{"model":"primary","message":{"role":"assistant","content":""},"done":false}\n',
    ),
]
TINY_IDS = [f"{fmt}-{name}" for fmt, name, _ in TINY_EVENTS]
#: One shape per format, for the properties that do not depend on the shape.
ONE_PER_FORMAT = [TINY_EVENTS[0], TINY_EVENTS[4], TINY_EVENTS[7]]
ONE_PER_FORMAT_IDS = [f"{fmt}-{name}" for fmt, name, _ in ONE_PER_FORMAT]


def flood_of(fmt: str, unit: bytes, size: int, most: int = 1_000_000) -> bytes:
    """The format's head, then ``unit`` repeated to ``size`` bytes (at most ``most`` times)."""
    return HEADS[fmt] + unit * min(size // len(unit), most)


def text_unit(fmt: str, text: str) -> bytes:
    """One event carrying ``text`` (so it counts for the deadlines)."""
    piece = msgspec.json.encode(text)
    if fmt == "anthropic":
        return (
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":' + piece + b"}}\n\n"
        )
    if fmt == "openai":
        return b'data: {"choices":[{"index":0,"delta":{"content":' + piece + b"}}]}\n\n"
    return (
        b'{"model":"primary","message":{"role":"assistant","content":'
        + piece
        + b'},"done":false}\n'
    )


def compress(data: bytes, coding: str = "gzip") -> bytes:
    wbits = {"gzip": 31, "deflate": 15, "raw-deflate": -15}[coding]
    compressor = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return compressor.compress(data) + compressor.flush()


def content_type(fmt: str, streaming: bool) -> str:
    if not streaming:
        return "application/json"
    return "application/x-ndjson" if fmt == "ollama" else "text/event-stream"


def sends(
    fmt: str,
    stream: bytes | None = None,
    reply: bytes | None = None,
    *,
    encoding: str | None = None,
    reply_encoding: str | None = None,
    status: int = 200,
) -> Body:
    """A server answering streaming requests with ``stream`` and others with ``reply``, written
    in 64 KiB pieces (already encoded: ``encoding`` only sets the header; ``reply_encoding``
    overrides it for ``reply``)."""

    async def handler(request: web.Request, site: Site) -> web.StreamResponse:
        body = site.bodies[-1] or {}
        streaming = body.get("stream", fmt == "ollama") is True
        data = stream if streaming else reply
        assert data is not None, "the test did not expect this request"
        headers = {"Content-Type": content_type(fmt, streaming)}
        coding = encoding if streaming or reply_encoding is None else reply_encoding
        if coding:
            headers["Content-Encoding"] = coding
        response = web.StreamResponse(status=status, headers=headers)
        await response.prepare(request)
        for start in range(0, len(data), 64 * KIB):
            await response.write(data[start : start + 64 * KIB])
        await response.write_eof()
        return response

    return handler


def endless(fmt: str, head: bytes, unit: bytes) -> Body:
    """A streaming server sending ``head`` then ``unit`` forever, gzip-compressed (about 1 MiB
    of events per few hundred bytes on the wire), until the client hangs up."""

    async def handler(request: web.Request, site: Site) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": content_type(fmt, True), "Content-Encoding": "gzip"}
        )
        await response.prepare(request)
        compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
        block = unit * (MIB // len(unit))
        await response.write(compressor.compress(head) + compressor.flush(zlib.Z_SYNC_FLUSH))
        while True:
            await response.write(compressor.compress(block) + compressor.flush(zlib.Z_SYNC_FLUSH))
            await asyncio.sleep(0)

    return handler


async def turn_under_watch(
    body: Body,
    fmt: str,
    *,
    handler: StreamHandler | None = None,
    mode: str = "streaming",
    transport: dict[str, Any] | None = None,
    cancel_after: float | None = None,
) -> tuple[Any, RxturnError | None, float, Site]:
    """One engine turn against ``body`` while the loop is watched.

    Returns (result, typed error, worst loop lag, the server's record).
    """
    async with serve(body) as site:
        client_transport = AiohttpTransport(**(transport or {}))
        client = make_client(fmt, site, transport=client_transport)
        engine = TurnEngine(
            client,
            handler=handler or StreamHandler.passthrough(),
            mode=mode,  # pyright: ignore[reportArgumentType]
        )
        await engine.counter.warm_up()  # pyright: ignore[reportAttributeAccessIssue]
        try:
            async with LagMonitor() as monitor:
                if cancel_after is not None:
                    asyncio.get_running_loop().call_later(cancel_after, engine.cancel)
                try:
                    result = await asyncio.wait_for(engine.run("hi"), 60)
                except RxturnError as exc:
                    return None, exc, monitor.worst, site
                return result, None, monitor.worst, site
        finally:
            await client.aclose()
            await client_transport.aclose()


def assert_free(lag: float) -> None:
    assert lag < MAX_LAG, f"the event loop was held for {lag * 1000:.0f} ms"


# ----------------------------------------------------------------- floods of tiny events


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "name", "unit"), TINY_EVENTS, ids=TINY_IDS)
async def test_a_compressed_flood_of_tiny_events_never_holds_the_loop(
    fmt: str, name: str, unit: bytes
) -> None:
    """Up to a million tiny events (up to 32 MiB) from a gzip body of a few hundred KB, all of
    it read (caps raised): sliced and paced, the loop stays free; the stream then ends without
    its terminal event."""
    flood = flood_of(fmt, unit, 32 * MIB)
    wire = compress(flood)
    assert len(wire) < len(flood) // 100
    _, error, lag, _ = await turn_under_watch(
        sends(fmt, stream=wire, encoding="gzip"), fmt, transport=NO_CAPS
    )
    assert isinstance(error, TruncatedStreamError), error
    assert_free(lag)


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "name", "unit"), ONE_PER_FORMAT, ids=ONE_PER_FORMAT_IDS)
async def test_by_default_a_compressed_flood_stops_at_the_expansion_ratio(
    fmt: str, name: str, unit: bytes
) -> None:
    """With the default caps such a flood is a decompression bomb: it stops at the expansion
    ratio, with the error naming the limit, and is neither retried nor rescued."""
    flood = flood_of(fmt, unit, 32 * MIB, most=32 * MIB)
    _, error, lag, site = await turn_under_watch(
        sends(fmt, stream=compress(flood), reply=b"{}", encoding="gzip"),
        fmt,
        handler=handler_with(retries=3, rescue=True),
    )
    assert isinstance(error, DecompressionLimitError), error
    assert error.limit == "max_expansion_ratio" and error.value == 100
    assert "max_expansion_ratio=100" in str(error)
    assert len(site.requests) == 1, "a decompression bomb was retried or rescued"
    assert_free(lag)


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "name", "unit"), TINY_EVENTS, ids=TINY_IDS)
async def test_an_uncompressed_flood_of_tiny_events_never_holds_the_loop(
    fmt: str, name: str, unit: bytes
) -> None:
    flood = flood_of(fmt, unit, 12 * MIB, most=1_500_000)
    _, error, lag, _ = await turn_under_watch(sends(fmt, stream=flood), fmt)
    assert isinstance(error, TruncatedStreamError), error
    assert_free(lag)


# ------------------------------------------------------------------------- one huge line


@pytest.mark.parametrize("encoding", [None, "gzip"], ids=["identity", "gzip"])
@pytest.mark.parametrize("ended", [True, False], ids=["ended-line", "no-newline"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_a_multi_megabyte_line_is_cut_at_the_line_cap_without_holding_the_loop(
    fmt: str, ended: bool, encoding: str | None
) -> None:
    """One line of 6 MiB — ended, or a body with no line end at all — after a healthy head."""
    line = (b"data: " if fmt != "ollama" else b"") + b'{"pad":"' + b"x" * (6 * MIB) + b'"}'
    body = HEADS[fmt] + line + (b"\n\n" if ended else b"")
    if encoding:
        body = compress(body)
    _, error, lag, _ = await turn_under_watch(sends(fmt, stream=body, encoding=encoding), fmt)
    assert isinstance(error, StreamProtocolError), error
    assert "line longer than 1048576 bytes" in str(error)
    assert_free(lag)


@pytest.mark.parametrize("encoding", [None, "gzip"], ids=["identity", "gzip"])
async def test_a_body_without_any_newline_is_cut_at_the_line_cap(encoding: str | None) -> None:
    body = b"x" * (8 * MIB)
    _, error, lag, _ = await turn_under_watch(
        sends("openai", stream=compress(body) if encoding else body, encoding=encoding), "openai"
    )
    assert isinstance(error, StreamProtocolError), error
    assert "line longer than 1048576 bytes (line 1)" in str(error)
    assert_free(lag)


# ------------------------------------------------------------- deadlines and cancel fire


@pytest.mark.parametrize(
    "fmt", mostly_slow("fmt", FORMAT_NAMES, ids=FORMAT_NAMES, keep={"anthropic"})
)
async def test_the_first_event_deadline_fires_during_an_endless_compressed_flood(
    fmt: str,
) -> None:
    """Keep-alives forever and not one event: the first-event deadline still fires."""
    unit = {"anthropic": b":\n", "openai": b": keep-alive\n\n", "ollama": b"\n"}[fmt]
    _, error, lag, site = await turn_under_watch(
        endless(fmt, b"", unit), fmt, handler=handler_with(first_event=0.4), transport=NO_CAPS
    )
    assert isinstance(error, StreamTimeoutError) and error.kind == "first_event", error
    assert_free(lag)
    await asyncio.wait_for(site.disconnected.wait(), 5)


@pytest.mark.parametrize(
    ("fmt", "name", "unit"),
    mostly_slow("fmt,name,unit", TINY_EVENTS, ids=TINY_IDS, keep={"openai-keep-alive"}),
)
async def test_the_idle_deadline_fires_during_an_endless_compressed_flood(
    fmt: str, name: str, unit: bytes
) -> None:
    """The head's events, then tiny non-events forever: the per-event deadline fires."""
    _, error, lag, site = await turn_under_watch(
        endless(fmt, HEADS[fmt], unit),
        fmt,
        handler=handler_with(first_event=5, per_event=0.4),
        transport=NO_CAPS,
    )
    assert isinstance(error, StreamTimeoutError) and error.kind == "idle", error
    assert_free(lag)
    await asyncio.wait_for(site.disconnected.wait(), 5)


@pytest.mark.parametrize("fmt", mostly_slow("fmt", FORMAT_NAMES, ids=FORMAT_NAMES, keep={"ollama"}))
async def test_the_total_deadline_fires_during_an_endless_compressed_flood(fmt: str) -> None:
    """One-character text events forever (every one resets the idle timer): the total fires."""
    _, error, lag, site = await turn_under_watch(
        endless(fmt, HEADS[fmt], text_unit(fmt, "a")),
        fmt,
        handler=handler_with(first_event=0.5, per_event=0.5, total=0.6),
        transport=NO_CAPS,
    )
    assert isinstance(error, StreamTimeoutError) and error.kind == "total", error
    assert_free(lag)
    await asyncio.wait_for(site.disconnected.wait(), 5)


@pytest.mark.parametrize("fmt", mostly_slow("fmt", FORMAT_NAMES, ids=FORMAT_NAMES, keep={"openai"}))
async def test_a_cancel_ends_a_turn_during_an_endless_compressed_flood(fmt: str) -> None:
    _, error, lag, site = await turn_under_watch(
        endless(fmt, HEADS[fmt], text_unit(fmt, "")),
        fmt,
        handler=handler_with(first_event=30, per_event=30, total=30),
        transport=NO_CAPS,
        cancel_after=0.4,
    )
    assert isinstance(error, Cancelled), error
    assert_free(lag)
    await asyncio.wait_for(site.disconnected.wait(), 5)


# ------------------------------------------------------------------- non-streaming bodies


def many_blocks_reply(fmt: str, size: int = 9_800_000) -> bytes:
    """A valid reply of ``size`` bytes made of a huge number of small parts (the costliest
    shape to parse), whose served text is ``"ok"``."""
    if fmt == "anthropic":
        head = (
            b'{"id":"m","type":"message","role":"assistant","model":"primary",'
            b'"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1},"content":['
        )
        unit = b'{"type":"server_tool_result_of_some_kind"},'
        tail = b'{"type":"text","text":"ok"}]}'
        return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail
    assert fmt == "openai"
    head = (
        b'{"id":"c","object":"chat.completion","created":1,"model":"primary","choices":['
        b'{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok",'
        b'"annotations":['
    )
    unit = b'{"type":"url_citation","url_citation":{"url":"u","title":"t"}},'
    tail = b'{"type":"x"}]}}]}'
    return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail


@pytest.mark.slow
@pytest.mark.parametrize("encoding", [None, "gzip"], ids=["identity", "gzip"])
@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
async def test_a_huge_valid_reply_is_parsed_without_holding_the_loop(
    fmt: str, encoding: str | None
) -> None:
    """~10 MB of small parts: read in slices, parsed in a worker thread, served."""
    reply = many_blocks_reply(fmt)
    wire = compress(reply) if encoding else reply
    result, error, lag, _ = await turn_under_watch(
        sends(fmt, reply=wire, encoding=encoding), fmt, mode="non_streaming"
    )
    assert error is None, error
    assert result.text == "ok"
    assert_free(lag)


@pytest.mark.slow
async def test_the_rescue_reads_a_huge_reply_without_holding_the_loop() -> None:
    """The stream fails, the non-streaming rescue gets the ~10 MB gzip reply: served."""
    broken = HEADS["anthropic"] + b"data: {not json\n\n"
    result, error, lag, site = await turn_under_watch(
        sends(
            "anthropic",
            stream=broken,
            reply=compress(many_blocks_reply("anthropic")),
            reply_encoding="gzip",
        ),
        "anthropic",
        handler=handler_with(first_event=5, per_event=5, total=20, rescue=True),
    )
    assert error is None, error
    assert result.text == "ok" and len(site.requests) == 2
    assert_free(lag)


OVERSIZED = [(fmt, shape) for shape in ("whitespace", "no-newline", "bomb") for fmt in FORMAT_NAMES]


@pytest.mark.parametrize(
    ("fmt", "shape"),
    mostly_slow(
        "fmt,shape",
        OVERSIZED,
        ids=[f"{fmt}-{shape}" for fmt, shape in OVERSIZED],
        keep={"anthropic-whitespace", "openai-no-newline", "ollama-bomb"},
    ),
)
async def test_an_oversized_reply_stops_at_the_body_cap_without_holding_the_loop(
    fmt: str, shape: str
) -> None:
    """Past 10 MB (after decompression) a reply is refused, whatever its shape."""
    if shape == "whitespace":  # valid JSON with 24 MiB of spaces before it
        wire, encoding = compress(b" " * (24 * MIB) + wire_reply(fmt, text="x")), "gzip"
    elif shape == "no-newline":
        wire, encoding = b"x" * (24 * MIB), None
    else:
        wire, encoding = compress(b'{"pad":"' + b"a" * (64 * MIB)), "gzip"
    _, error, lag, _ = await turn_under_watch(
        sends(fmt, reply=wire, encoding=encoding), fmt, mode="non_streaming"
    )
    assert isinstance(error, StreamProtocolError), error
    assert "10000000-byte limit" in str(error)
    assert_free(lag)


# ------------------------------------------------------------------------- decompression


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate", "gzip-members"])
@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
async def test_gzip_and_both_deflate_flavours_are_decoded(mode: str, coding: str) -> None:
    text = [f"piece {i} " for i in range(200)]
    stream = wire_stream("anthropic", text=text)
    reply = wire_reply("anthropic", text="".join(text))
    if coding == "gzip-members":  # concatenated gzip members are one valid gzip body
        cut_s, cut_r = len(stream) // 2, len(reply) // 2
        stream_wire = compress(stream[:cut_s]) + compress(stream[cut_s:])
        reply_wire = compress(reply[:cut_r]) + compress(reply[cut_r:])
        header = "gzip"
    else:
        stream_wire, reply_wire = compress(stream, coding), compress(reply, coding)
        header = "gzip" if coding == "gzip" else "deflate"
    result, error, _, _ = await turn_under_watch(
        sends("anthropic", stream=stream_wire, reply=reply_wire, encoding=header),
        "anthropic",
        mode=mode,
    )
    assert error is None, error
    assert result.text == "".join(text)


async def test_the_client_asks_only_for_what_it_decodes() -> None:
    _, error, _, site = await turn_under_watch(
        sends("anthropic", stream=wire_stream("anthropic", text=["hi"])), "anthropic"
    )
    assert error is None, error
    assert site.headers[0]["accept-encoding"] == "gzip, deflate"


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("coding", ["br", "zstd", "gzip, gzip", "compress"])
async def test_an_unsupported_content_encoding_is_a_read_error(coding: str, mode: str) -> None:
    stream, reply = wire_stream("anthropic", text=["hi"]), wire_reply("anthropic", text="hi")
    _, error, _, _ = await turn_under_watch(
        sends("anthropic", stream=stream, reply=reply, encoding=coding), "anthropic", mode=mode
    )
    assert isinstance(error, ReadError), error
    assert f"Content-Encoding {coding!r} is not supported" in str(error)
    assert "gzip, deflate" in str(error)


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("second", ["gzip", "br"])
async def test_a_repeated_content_encoding_header_is_one_stacked_coding(
    second: str, mode: str
) -> None:
    """Two ``Content-Encoding`` headers are one list (RFC 9110): the body is coded twice, which
    is refused as stacked, not inflated once and handed on as binary noise."""
    streaming = mode == "streaming"
    body = (
        wire_stream("anthropic", text=["hi"]) if streaming else wire_reply("anthropic", text="hi")
    )

    async def handler(request: web.Request, site: Site) -> web.StreamResponse:
        headers = CIMultiDict(
            [
                ("Content-Type", content_type("anthropic", streaming)),
                ("Content-Encoding", "gzip"),
                ("Content-Encoding", second),
            ]
        )
        return web.Response(body=compress(compress(body)), headers=headers)

    _, error, _, _ = await turn_under_watch(handler, "anthropic", mode=mode)
    assert isinstance(error, ReadError), error
    assert f"stacked Content-Encoding 'gzip, {second}' is not supported" in str(error)


async def test_an_error_status_with_an_unsupported_encoding_is_still_its_status_error() -> None:
    _, error, _, _ = await turn_under_watch(
        sends("anthropic", stream=b"\x00\x01garbage", encoding="br", status=500), "anthropic"
    )
    assert isinstance(error, ServerError), error
    assert "not supported" in error.body


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
async def test_an_error_body_past_max_decompressed_bytes_is_still_its_status_error(
    mode: str,
) -> None:
    """The error body is read only to 8 KiB, but one inflating step may pass a small cap: the
    429 (its Retry-After, its retry verdict) still says what failed, not a decompression
    error that is never retried."""
    body = compress(b'{"error":{"type":"rate_limit_error","message":"' + b"x" * 100_000 + b'"}}')

    async def handler(request: web.Request, site: Site) -> web.StreamResponse:
        headers = {"Content-Encoding": "gzip", "Retry-After": "7"}
        return web.Response(status=429, body=body, headers=headers, content_type="application/json")

    _, error, _, _ = await turn_under_watch(
        handler, "anthropic", mode=mode, transport={"max_decompressed_bytes": 4096}
    )
    assert isinstance(error, RateLimitError), error
    assert error.retry_after == 7
    assert "max_decompressed_bytes=4096" in error.body


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("damage", ["corrupt", "truncated"])
async def test_damaged_compressed_bodies_are_read_errors(damage: str, mode: str) -> None:
    text = [f"piece {i} " for i in range(200)]
    stream = compress(wire_stream("anthropic", text=text))
    reply = compress(wire_reply("anthropic", text="".join(text)))
    if damage == "corrupt":  # the deflate data after the gzip header, overwritten
        stream = stream[:10] + b"\xff" * 64 + stream[74:]
        reply = reply[:10] + b"\xff" * 64 + reply[74:]
    else:  # the server ends the body cleanly, halfway through the compressed stream
        stream, reply = stream[: len(stream) // 2], reply[: len(reply) // 2]
    _, error, _, _ = await turn_under_watch(
        sends("anthropic", stream=stream, reply=reply, encoding="gzip"), "anthropic", mode=mode
    )
    if damage == "truncated" and mode == "streaming":
        # events read before the cut were delivered; the cut itself is the error
        assert isinstance(error, ReadError | TruncatedStreamError), error
    else:
        assert isinstance(error, ReadError), error
    expected = "invalid gzip data" if damage == "corrupt" else "stopped before its end"
    if isinstance(error, ReadError):
        assert expected in str(error), error


async def test_a_truncated_gzip_stream_is_reported_as_a_read_error_at_its_end() -> None:
    """The cut lands after the terminal event: the reply is complete, but the body was not.
    The transport's read reports it; the client loop surfaces it as a ReadError."""
    stream = wire_stream("anthropic", text=["hello"])
    wire = compress(stream)[:-8]  # drop the gzip trailer (CRC and size) only
    _, error, _, _ = await turn_under_watch(
        sends("anthropic", stream=wire, encoding="gzip"), "anthropic"
    )
    assert isinstance(error, ReadError) and "stopped before its end" in str(error), error


@functools.cache
def poorly_compressible() -> tuple[bytes, bytes]:
    """A stream and a reply of random text, gzip-compressed: built once for both modes."""
    rng = random.Random(7)
    pieces = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz ", k=64)) for _ in range(60_000)]
    reply = wire_reply("anthropic", text="".join(pieces))
    compressed = compress(reply)
    assert len(compressed) > len(reply) // 3
    return compress(wire_stream("anthropic", text=pieces)), compressed


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
async def test_max_decompressed_bytes_stops_a_body_that_compresses_poorly(mode: str) -> None:
    """A body of random text (ratio ~1.3) under a 2 MiB decompressed-bytes cap."""
    stream, reply = poorly_compressible()
    _, error, lag, _ = await turn_under_watch(
        sends("anthropic", stream=stream, reply=reply, encoding="gzip"),
        "anthropic",
        mode=mode,
        transport={"max_decompressed_bytes": 2 * MIB},
    )
    assert isinstance(error, DecompressionLimitError), error
    assert error.limit == "max_decompressed_bytes" and error.value == 2 * MIB
    assert f"max_decompressed_bytes={2 * MIB}" in str(error)
    assert not error.retryable
    assert_free(lag)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_decompressed_bytes": 0},
        {"max_decompressed_bytes": 1.5},
        {"max_decompressed_bytes": True},
        {"max_expansion_ratio": 0},
        {"max_expansion_ratio": -1},
        {"max_expansion_ratio": "10"},
    ],
)
def test_decompression_limits_are_validated(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        AiohttpTransport(**kwargs)


def test_gzip_fixture_round_trips() -> None:
    """The helper's gzip is what the standard library reads (guards the tests above)."""
    assert gzip.decompress(compress(b"abc" * 1000)) == b"abc" * 1000


# ------------------------------------------------------------------------------ tokenizer


async def test_the_tokenizer_loads_in_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh load (the process cache emptied for this test) runs off the loop's thread."""
    threads: list[str] = []
    load = tokens_module._load_encoding_offline

    def spy(name: str) -> Any:
        threads.append(threading.current_thread().name)
        return load(name)

    monkeypatch.setattr(tokens_module, "_encodings", {})
    monkeypatch.setattr(tokens_module, "_load_encoding_offline", spy)
    counter = tokens_module.TiktokenCounter()
    assert not counter.loaded
    async with LagMonitor() as monitor:
        await counter.warm_up()
    assert counter.loaded and counter.count_text("hello world") == 2
    assert threads and threads[0] != threading.current_thread().name, threads
    assert_free(monitor.worst)
    await counter.warm_up()  # loaded: returns at once, no second load
    await tokens_module.warm_up()
    assert len(threads) == 1


async def test_the_engine_loads_the_tokenizer_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[str] = []
    load = tokens_module._load_encoding_offline

    def spy(name: str) -> Any:
        threads.append(threading.current_thread().name)
        return load(name)

    monkeypatch.setattr(tokens_module, "_encodings", {})
    monkeypatch.setattr(tokens_module, "_load_encoding_offline", spy)
    body = sends("anthropic", stream=wire_stream("anthropic", text=["hi"]))
    async with serve(body) as site, make_client("anthropic", site) as client:
        engine = TurnEngine(client)
        result = await engine.run("hello")
    assert result.text == "hi"
    assert threads and threads[0] != threading.current_thread().name, threads
    assert engine.last_estimate is not None and engine.last_estimate.total > 0


async def test_an_unknown_encoding_fails_its_warm_up_with_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown tiktoken encoding"):
        await tokens_module.TiktokenCounter("no-such-encoding").warm_up()
