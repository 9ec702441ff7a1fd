"""``HttpClient.stream_batches`` over loopback, for every client flavour against the fake
provider (127.0.0.1).

The oracle is the per-event ``stream()`` of the same scenario, served by a fresh fake so that
the ids derived from the request's sequence number match: the batches, concatenated, must be
exactly those events; every batch is a non-empty ``list``; a paced reply arrives as several
batches; disposing after the first batch closes the connection; a fault mid-stream delivers the
batches before it, then the same typed error as ``stream()``.

Chunk boundaries are pinned twice without the fake: a server of our own that writes a body cut
inside an event (paced by what the client has emitted), and a scripted transport whose chunks
are exactly known, so each batch must be exactly the events its chunk completed (none: no item).
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from _client_support import (
    PROVIDER_IDS,
    PROVIDERS,
    REQUEST,
    WAIT,
    Provider,
    run_stream,
    settle,
    wait_until,
)
from aiohttp import web
from aiohttp.test_utils import TestServer
from reactivex import operators as ops

from rxturn.clients import AnthropicClient
from rxturn.errors import OverloadedError, ProviderStreamError, StreamProtocolError
from rxturn.events import Delta, MessageStart, MessageStop, PartStart, StreamEvent
from rxturn.testing import FakeProvider, MockResponse, MockTransport, _server
from rxturn.wire import decoder_for

ServerFactory = Callable[..., Awaitable[TestServer]]

TEXT = "Hello, world! The weather in Paris is sunny."
CALLS = [{"id": "call_weather_1", "name": "get_weather", "input": {"city": "Paris"}}]


@pytest.fixture(autouse=True)
def _fixed_created(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Freeze the fake's reply timestamp: Ollama's message id is built from it, and the two runs
    compared here must not straddle a second boundary."""
    monkeypatch.setattr(_server, "time", types.SimpleNamespace(time=lambda: 1_700_000_000.0))
    yield


def scenario(entry: dict[str, Any]) -> dict[str, Any]:
    return {"models": {"*": [entry]}}


def bridge_tasks() -> list[asyncio.Task[Any]]:
    """Tasks driving a client stream (rxturn.sources), as opposed to the servers' own tasks."""
    return [t for t in asyncio.all_tasks() if _is_bridge(t.get_coro())]


def _is_bridge(coro: object) -> bool:
    return isinstance(coro, types.CoroutineType) and coro.__qualname__ == "Bridge.run"


async def per_event(provider: Provider, entry: dict[str, Any]) -> tuple[list[StreamEvent], Any]:
    """The oracle: ``stream()`` of ``entry`` from a fresh fake."""
    async with FakeProvider(scenario(entry)) as fake, provider.client(fake) as client:
        return await run_stream(client.stream(REQUEST))


async def batched(provider: Provider, entry: dict[str, Any]) -> tuple[list[Any], Any]:
    """``stream_batches()`` of ``entry`` from a fresh fake: the items and the error."""
    async with FakeProvider(scenario(entry)) as fake, provider.client(fake) as client:
        items, error = await run_stream(client.stream_batches(REQUEST))
        assert len(fake.requests) == 1 and fake.requests[0]["stream"] is True
    return items, error


def assert_batches(items: list[Any]) -> list[StreamEvent]:
    """Every item is a non-empty list of events; returns them concatenated."""
    assert items, "no batch at all"
    for item in items:
        assert type(item) is list and item, item
    return [event for batch in items for event in batch]


ENTRIES = {
    "text": {"text": TEXT, "chunk_chars": 3},
    "thinking-text-tool": {
        "thinking": "Let me see.",
        "text": "Checking.",
        "tool_calls": CALLS,
        "chunk_chars": 4,
        "usage": {"input_tokens": 5, "output_tokens": 7},
    },
}


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_batches_concatenate_to_the_per_event_stream(provider: Provider, entry: str) -> None:
    expected, expected_error = await per_event(provider, ENTRIES[entry])
    items, error = await batched(provider, ENTRIES[entry])
    assert error is None and expected_error is None
    events = assert_batches(items)
    assert len(events) == len(expected)
    for got, want in zip(events, expected, strict=True):
        assert type(got) is type(want) and got == want
    assert isinstance(events[0], MessageStart) and isinstance(events[-1], MessageStop)
    text = "".join(e.text for e in events if isinstance(e, Delta) and e.kind == "text")
    assert text == ENTRIES[entry]["text"]


@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_a_paced_reply_arrives_in_several_batches(provider: Provider) -> None:
    """With ``delay_ms`` the fake writes each event on its own, 5 ms apart."""
    entry = {"text": "Hello there, world", "chunk_chars": 3, "delay_ms": 5}
    expected, _ = await per_event(provider, entry)
    items, error = await batched(provider, entry)
    assert error is None
    assert len(items) > 1
    assert assert_batches(items) == expected


@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_disposing_after_the_first_batch_closes_the_connection(provider: Provider) -> None:
    """The fake stalls after 3 events until the client leaves: only a dispose ends it."""
    entry = {"text": TEXT, "chunk_chars": 2, "stall_after_events": 3}
    async with FakeProvider(scenario(entry)) as fake, provider.client(fake) as client:
        items, error = await run_stream(client.stream_batches(REQUEST).pipe(ops.take(1)))
        assert error is None and len(items) == 1
        await wait_until(lambda: fake.disconnects == 1)
        await settle()
        assert bridge_tasks() == [], "the disposed stream leaves no task"
    events = assert_batches(items)
    assert isinstance(events[0], MessageStart)
    assert not any(isinstance(e, MessageStop) for e in events)


@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_dispose_by_hand_stops_the_batches(provider: Provider) -> None:
    entry = {"text": TEXT, "chunk_chars": 2, "stall_after_events": 3}
    async with FakeProvider(scenario(entry)) as fake, provider.client(fake) as client:
        items: list[Any] = []
        subscription = client.stream_batches(REQUEST).subscribe(items.append)
        await wait_until(lambda: len(items) >= 1)
        assert fake.disconnects == 0
        subscription.dispose()
        await wait_until(lambda: fake.disconnects == 1)
        seen = len(items)
        await settle()
        assert len(items) == seen  # nothing after the dispose
        assert bridge_tasks() == []
    assert_batches(items)


FAULTS = {
    "malformed": (
        {"text": "Hello world", "chunk_chars": 2, "malformed_after_events": 3},
        {p.name: StreamProtocolError for p in PROVIDERS},
    ),
    "error-event": (
        {
            "text": "Hello world",
            "chunk_chars": 2,
            "error_event_after_events": 3,
            "error_type": "overloaded_error",
        },
        {
            "anthropic": OverloadedError,
            "openai": OverloadedError,
            "openai-ollama-profile": OverloadedError,
            "ollama": ProviderStreamError,
            "openai-responses": OverloadedError,
        },
    ),
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_a_fault_mid_stream_delivers_the_batches_before_it_then_the_typed_error(
    provider: Provider, fault: str
) -> None:
    entry, errors = FAULTS[fault]
    expected, expected_error = await per_event(provider, entry)
    items, error = await batched(provider, entry)
    assert isinstance(error, errors[provider.name]), error
    assert type(error) is type(expected_error) and str(error) == str(expected_error)
    events = assert_batches(items)
    assert events == expected  # every event decoded before the fault, in order
    assert isinstance(events[0], MessageStart)
    assert not any(isinstance(e, MessageStop) for e in events)


# --- a chunk cut inside an event: our own server, paced by what the client has seen ----------

_SSE = [
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_cut",'
    b'"type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,'
    # no usage at the start, so each wire event decodes to exactly one event
    b'"usage":{"input_tokens":0,"output_tokens":0}}}\n\n',
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"Hi"}}\n\n',
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":1}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
]


async def test_a_chunk_ending_inside_an_event_emits_only_the_events_it_completed(
    aiohttp_server: ServerFactory,
) -> None:
    """The server writes event 1 and half of event 2, then waits until the client has emitted
    its first batch before writing the rest: that batch must be exactly ``[event 1]``, and the
    half event must arrive whole in a later batch."""
    first_batch = asyncio.Event()
    head, tail = _SSE[1][:40], _SSE[1][40:]

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(_SSE[0] + head)
        await asyncio.wait_for(first_batch.wait(), WAIT)
        await response.write(tail + b"".join(_SSE[2:]))
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/messages", handler)
    server = await aiohttp_server(app, host="127.0.0.1")
    base = str(server.make_url("")).rstrip("/")
    items: list[Any] = []

    def on_batch(batch: Any) -> None:
        items.append(batch)
        first_batch.set()

    decoder = decoder_for("anthropic")
    expected = [*decoder.feed(b"".join(_SSE)), *decoder.close()]  # the whole body at once
    async with AnthropicClient("m", api_key="k", base_url=base) as client:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[BaseException | None] = loop.create_future()
        client.stream_batches(REQUEST).subscribe(
            on_batch, done.set_result, lambda: done.set_result(None)
        )
        error = await asyncio.wait_for(done, WAIT)
    assert error is None
    assert items[0] == [MessageStart(id="msg_cut", model="m")]
    assert items[1][0] == PartStart(0)
    assert assert_batches(items) == expected


@pytest.mark.parametrize("terminated", [True, False], ids=["terminated", "last-unterminated"])
async def test_each_batch_is_exactly_what_its_chunk_completed(terminated: bool) -> None:
    """Without its blank line the last event is completed by the end of the body: its own
    batch, after the chunk's."""
    e = _SSE
    last = e[5] if terminated else e[5].rstrip(b"\n")
    chunks = [
        e[0][:30],  # completes nothing: no item
        e[0][30:],  # → [E0]
        e[1] + e[2] + e[3][:10],  # → [E1, E2]
        b": keep-alive comment\n\n",  # an SSE comment: no event, no item
        e[3][10:] + e[4] + last,  # → [E3, E4, E5], or [E3, E4] then [E5] at the end
    ]
    decoder = decoder_for("anthropic")
    whole = [*decoder.feed(b"".join(e)), *decoder.close()]  # the whole body at once
    assert len(whole) == len(e)  # one event per wire event in this script
    transport = MockTransport(
        MockResponse(headers={"content-type": "text/event-stream"}, chunks=chunks)
    )
    async with AnthropicClient(
        "m", api_key="k", base_url="http://scripted.invalid", transport=transport
    ) as client:
        items, error = await run_stream(client.stream_batches(REQUEST))
    assert error is None
    tail = [whole[3:6]] if terminated else [whole[3:5], whole[5:6]]
    assert items == [whole[0:1], whole[1:3], *tail]
    assert [request.url for request in transport.requests] == [
        "http://scripted.invalid/v1/messages"
    ]
    assert transport.responses[0].closed
