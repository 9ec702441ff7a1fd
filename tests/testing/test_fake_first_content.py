"""The fake provider's slow first content, and its record of how each request ended."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from rxturn.errors import ConfigError
from rxturn.testing import FakeProvider
from rxturn.testing._scenario import load_scenario

Serve = Callable[[Any], Awaitable[FakeProvider]]

PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions", "ollama": "/api/chat"}
_VOLATILE = re.compile(rb'fake\d{6}|"created":\d+|"created_at":"[^"]*"')


def _body(wire: str, *, model: str = "m") -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    body["stream"] = True
    if wire == "anthropic":
        body["max_tokens"] = 64
    return body


def _split(wire: str, raw: bytes) -> list[bytes]:
    """Complete events: SSE events end with a blank line, NDJSON lines with LF."""
    sep = b"\n" if wire == "ollama" else b"\n\n"
    return [event for event in raw.split(sep) if event]


def _same(events: list[bytes]) -> list[bytes]:
    """Events with per-request ids and timestamps blanked, to compare two replies."""
    return [_VOLATILE.sub(b"*", event) for event in events]


SLOW = {"text": "Hello there, slowly", "first_content_delay_ms": 60_000}

#: What each wire sends before its first content: its first event's marker.
PREAMBLE = {
    "anthropic": [b"event: message_start"],
    "openai": [b'"delta":{"role":"assistant","content":"","refusal":null}'],
}


async def _until_quiet(resp: aiohttp.ClientResponse, quiet: float = 0.3) -> bytes:
    """Read what arrives until nothing more comes for ``quiet`` seconds (bounded)."""
    data = b""
    while True:
        try:
            chunk = await asyncio.wait_for(resp.content.readany(), quiet)
        except TimeoutError:
            return data
        if not chunk:
            return data
        data += chunk


async def _records(http: aiohttp.ClientSession, fake: FakeProvider) -> list[dict[str, Any]]:
    async with http.get(fake.base_url + "/_fake/requests") as resp:
        assert resp.status == 200
        return await resp.json()


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
async def test_the_preamble_comes_at_once_and_then_nothing(
    serve: Serve, http: aiohttp.ClientSession, wire: str
) -> None:
    fake = await serve({"models": {"*": [SLOW]}})
    async with http.post(fake.base_url + PATHS[wire], json=_body(wire)) as resp:
        assert resp.status == 200
        events = _split(wire, await _until_quiet(resp))
    assert len(events) == len(PREAMBLE[wire])
    for event, marker in zip(events, PREAMBLE[wire], strict=True):
        assert marker in event
    await asyncio.sleep(0)
    for _ in range(100):  # the server notices the close on its next loop turns
        if fake.records[0].end is not None:
            break
        await asyncio.sleep(0.01)
    record = fake.records[0]
    assert record.end == "disconnected" and record.ended is not None
    assert record.ended >= record.arrived
    assert fake.disconnects == 1


@pytest.mark.parametrize("wire", ["anthropic", "openai", "ollama"])
async def test_after_the_delay_the_reply_is_the_same_reply(
    serve: Serve, http: aiohttp.ClientSession, wire: str
) -> None:
    slow = {**SLOW, "first_content_delay_ms": 20}
    fake = await serve({"models": {"*": [{"text": SLOW["text"]}, slow]}})
    replies: list[list[bytes]] = []
    for _ in range(2):
        async with http.post(fake.base_url + PATHS[wire], json=_body(wire)) as resp:
            replies.append(_same(_split(wire, await resp.read())))
    assert replies[0] == replies[1]
    assert [r["end"] for r in await _records(http, fake)] == ["completed", "completed"]


async def test_records_route_lists_model_arrival_and_end_in_order(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve({"models": {"*": [{"text": "x"}, {"status": 529}, {"text": "y"}]}})
    for index, wire in enumerate(["openai", "anthropic", "ollama"]):
        async with http.post(fake.base_url + PATHS[wire], json=_body(wire, model=f"m{index}")) as r:
            await r.read()
    records = await _records(http, fake)
    assert [(r["path"], r["model"], r["end"]) for r in records] == [
        ("/v1/chat/completions", "m0", "completed"),
        ("/v1/messages", "m1", "completed"),  # an error response is a completed response
        ("/api/chat", "m2", "completed"),
    ]
    assert [r["body"] for r in records] == fake.requests
    arrived = [r["arrived"] for r in records]
    assert arrived == sorted(arrived)
    assert all(r["ended"] >= r["arrived"] for r in records)
    async with http.get(fake.base_url + "/_fake/requests?bodies=1") as resp:  # bodies alone
        assert await resp.json() == fake.requests


async def test_a_scripted_drop_is_recorded_as_dropped(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve({"models": {"*": [{"text": "abcdefgh", "drop_after_events": 2}]}})
    async with http.post(fake.base_url + PATHS["anthropic"], json=_body("anthropic")) as resp:
        with pytest.raises(aiohttp.ClientPayloadError):  # the body ends unfinished
            await resp.content.read()
    assert fake.records[0].end == "dropped"


@pytest.mark.parametrize("value", [-1, "soon", None])
def test_first_content_delay_is_validated(value: object) -> None:
    with pytest.raises(ConfigError, match=r"models\['\*'\]\[0\]\.first_content_delay_ms"):
        load_scenario({"models": {"*": [{"text": "x", "first_content_delay_ms": value}]}})


async def test_a_non_streaming_reply_does_not_wait_the_first_content_delay(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    # (docs/fake-provider.md, "Non-streaming requests": a streaming key; delay_ms slows a whole
    # reply) a day's delay: were it waited, the bounded wait below would end the test
    fake = await serve({"models": {"*": [{"text": "at once", "first_content_delay_ms": 8.64e7}]}})
    body = {**_body("anthropic"), "stream": False}
    async with asyncio.timeout(10):
        async with http.post(fake.base_url + PATHS["anthropic"], json=body) as resp:
            reply = await resp.json()
    assert reply["content"] == [{"type": "text", "text": "at once"}]
