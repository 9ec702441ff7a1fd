"""Every scripted fault of the fake provider (docs/fake-provider.md), observed from the client side
over real loopback HTTP.

Byte-level checks use a raw aiohttp client; SDK-level checks use the official SDKs, whose
error classes say what a real client makes of the fault. Waits are bounded everywhere.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import anthropic
import openai
import pytest

from rxturn.testing import FakeProvider

Serve = Callable[[Any], Awaitable[FakeProvider]]

MESSAGES = [{"role": "user", "content": "hello there"}]
PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions", "ollama": "/api/chat"}


def _body(wire: str, *, model: str = "m", stream: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": MESSAGES, "stream": stream}
    if wire == "anthropic":
        body["max_tokens"] = 64
    return body


def _split(wire: str, raw: bytes) -> list[bytes]:
    """Complete events of a body: SSE events end with a blank line, NDJSON lines with LF."""
    sep = b"\n" if wire == "ollama" else b"\n\n"
    *complete, rest = raw.split(sep)
    assert rest == b"" or not rest.endswith(sep)
    return [event for event in complete if event]


_VOLATILE = re.compile(rb'fake\d{6}|"created":\d+|"created_at":"[^"]*"')


def _same(events: list[bytes]) -> list[bytes]:
    """Events with per-request ids and timestamps blanked, to compare two replies."""
    return [_VOLATILE.sub(b"*", event) for event in events]


def _data(wire: str, event: bytes) -> bytes:
    if wire == "ollama":
        return event
    lines = [line for line in event.split(b"\n") if line.startswith(b"data: ")]
    assert len(lines) == 1, event
    return lines[0][len(b"data: ") :]


def _is_terminal(wire: str, event: bytes) -> bool:
    if wire == "anthropic":
        return event.startswith(b"event: message_stop")
    if wire == "openai":
        return event == b"data: [DONE]"
    return json.loads(event).get("done") is True


async def _read_until_error(resp: aiohttp.ClientResponse) -> tuple[bytes, BaseException | None]:
    chunks: list[bytes] = []
    try:
        async for chunk in resp.content.iter_any():
            chunks.append(chunk)
    except (TimeoutError, aiohttp.ClientError) as exc:
        return b"".join(chunks), exc
    return b"".join(chunks), None


async def _full(http: aiohttp.ClientSession, fake: FakeProvider, wire: str) -> list[bytes]:
    async with http.post(fake.base_url + PATHS[wire], json=_body(wire)) as resp:
        return _split(wire, await resp.read())


# ----------------------------------------------------------------------------- HTTP errors


@pytest.mark.parametrize("status", [429, 529])
async def test_anthropic_sdk_sees_the_status_retry_after_and_error_body(
    serve: Serve, status: int
) -> None:
    fake = await serve({"models": {"*": [{"status": status, "retry_after": 0.25}, {"text": "ok"}]}})
    async with anthropic.AsyncAnthropic(
        base_url=fake.base_url, api_key="test", max_retries=0
    ) as client:
        with pytest.raises(anthropic.APIStatusError) as info:
            await client.messages.create(model="m", max_tokens=8, messages=MESSAGES)  # pyright: ignore[reportArgumentType]
        after = await client.messages.create(model="m", max_tokens=8, messages=MESSAGES)  # pyright: ignore[reportArgumentType]
    error = info.value
    assert error.status_code == status
    if status == 429:
        assert isinstance(error, anthropic.RateLimitError)
    assert error.response.headers["retry-after"] == "0.25"
    assert error.response.headers["retry-after-ms"] == "250"
    expected_type = {429: "rate_limit_error", 529: "overloaded_error"}[status]
    assert error.body["type"] == "error"  # pyright: ignore[reportIndexIssue, reportOptionalSubscript]
    assert error.body["error"]["type"] == expected_type  # pyright: ignore[reportIndexIssue, reportOptionalSubscript]
    assert after.content[0].type == "text"  # the next entry is served next


async def test_openai_sdk_sees_a_rate_limit_error(serve: Serve) -> None:
    fake = await serve({"models": {"*": [{"status": 429, "retry_after": 2}]}})
    async with openai.AsyncOpenAI(
        base_url=fake.openai_base_url, api_key="test", max_retries=0
    ) as client:
        with pytest.raises(openai.RateLimitError) as info:
            await client.chat.completions.create(model="m", messages=MESSAGES)  # pyright: ignore[reportArgumentType]
    assert info.value.status_code == 429
    assert info.value.code == "rate_limit_exceeded"
    assert info.value.response.headers["retry-after"] == "2"


async def test_error_type_and_message_are_scriptable(serve: Serve) -> None:
    entry = {
        "status": 400,
        "error_type": "invalid_request_error",
        "error_message": "prompt is too long: 300000 tokens > 200000 maximum",
    }
    fake = await serve({"models": {"*": [entry]}})
    async with anthropic.AsyncAnthropic(
        base_url=fake.base_url, api_key="test", max_retries=0
    ) as client:
        with pytest.raises(anthropic.BadRequestError) as info:
            await client.messages.create(model="m", max_tokens=8, messages=MESSAGES)  # pyright: ignore[reportArgumentType]
    assert info.value.body["error"] == {  # pyright: ignore[reportIndexIssue, reportOptionalSubscript]
        "type": "invalid_request_error",
        "message": "prompt is too long: 300000 tokens > 200000 maximum",
    }


async def test_ollama_error_status_has_an_error_string_and_no_retry_after(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve({"models": {"*": [{"status": 503}]}})
    async with http.post(fake.base_url + "/api/chat", json=_body("ollama")) as resp:
        assert resp.status == 503
        assert "Retry-After" not in resp.headers
        body = await resp.json()
    assert isinstance(body["error"], str)


async def test_a_negative_zero_retry_after_is_sent_as_zero(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    # -0.0 passes ">= 0" (code computes it: -x * 0); it went out as "Retry-After: -0", which
    # rxturn's parse_retry_after ignores (the default wait served instead of none)
    from rxturn.resilience.backoff import parse_retry_after

    fake = await serve({"models": {"*": [{"status": 429, "retry_after": -0.0}]}})
    async with http.post(fake.base_url + "/v1/messages", json=_body("anthropic")) as resp:
        assert resp.status == 429
        headers = dict(resp.headers)
    assert (headers["Retry-After"], headers["retry-after-ms"]) == ("0", "0")
    assert parse_retry_after(headers) == 0.0


@pytest.mark.parametrize("wire", ["anthropic", "openai", "ollama"])
async def test_a_body_that_is_not_json_is_a_400(
    serve: Serve, http: aiohttp.ClientSession, wire: str
) -> None:
    fake = await serve({"models": {"*": [{"text": "x"}]}})
    async with http.post(fake.base_url + PATHS[wire], data=b"{not json") as resp:
        assert resp.status == 400
        assert "error" in await resp.json()
    assert fake.requests == ["{not json"]  # recorded as the text it was; it takes no entry


# ----------------------------------------------------------------------------- drop


@pytest.mark.parametrize("wire", ["anthropic", "openai", "ollama"])
async def test_drop_closes_the_connection_after_n_events(
    serve: Serve, http: aiohttp.ClientSession, wire: str
) -> None:
    entry = {"text": "Hello world, a longer reply.", "chunk_chars": 4}
    fake = await serve({"models": {"*": [entry, {**entry, "drop_after_events": 3}]}})
    full = await _full(http, fake, wire)
    async with http.post(fake.base_url + PATHS[wire], json=_body(wire)) as resp:
        raw, error = await _read_until_error(resp)
    assert isinstance(error, aiohttp.ClientPayloadError)  # the body ended unfinished
    assert _same(_split(wire, raw)) == _same(full[:3])  # the same first three events, then nothing
    assert not any(_is_terminal(wire, event) for event in _split(wire, raw))


async def test_drop_past_the_end_still_loses_the_terminal_event(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve({"models": {"*": [{"text": "hi", "drop_after_events": 1000}]}})
    async with http.post(fake.base_url + PATHS["anthropic"], json=_body("anthropic")) as resp:
        raw, error = await _read_until_error(resp)
    assert isinstance(error, aiohttp.ClientPayloadError)
    events = _split("anthropic", raw)
    assert events[-1].startswith(b"event: message_delta")


async def test_anthropic_sdk_stream_fails_on_a_drop(serve: Serve) -> None:
    fake = await serve({"models": {"*": [{"text": "Hello world", "drop_after_events": 4}]}})
    async with anthropic.AsyncAnthropic(
        base_url=fake.base_url, api_key="test", max_retries=0
    ) as client:
        with pytest.raises(Exception, match=r"incomplete|closed|terminated"):
            async with client.messages.stream(
                model="m",
                max_tokens=8,
                messages=MESSAGES,  # pyright: ignore[reportArgumentType]
            ) as stream:
                await stream.get_final_message()


async def test_non_streaming_drop_closes_before_answering(serve: Serve) -> None:
    fake = await serve({"models": {"*": [{"text": "x", "drop_after_events": 0}]}})
    async with openai.AsyncOpenAI(
        base_url=fake.openai_base_url, api_key="test", max_retries=0
    ) as client:
        with pytest.raises(openai.APIConnectionError):
            await client.chat.completions.create(model="m", messages=MESSAGES)  # pyright: ignore[reportArgumentType]


# ----------------------------------------------------------------------------- stall


@pytest.mark.parametrize("wire", ["anthropic", "openai", "ollama"])
async def test_stall_goes_silent_after_n_events(
    serve: Serve, http: aiohttp.ClientSession, wire: str
) -> None:
    entry = {"text": "Hello world", "stall_after_events": 2}
    fake = await serve({"models": {"*": [{"text": "Hello world"}, entry]}})
    full = await _full(http, fake, wire)
    timeout = aiohttp.ClientTimeout(sock_read=0.2, total=5)
    async with http.post(fake.base_url + PATHS[wire], json=_body(wire), timeout=timeout) as resp:
        raw, error = await _read_until_error(resp)
    assert isinstance(error, asyncio.TimeoutError)  # nothing more came within the read timeout
    assert _same(_split(wire, raw)) == _same(full[:2])


async def test_a_bounded_stall_resumes_the_stream(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    entry = {"text": "Hello world", "stall_after_events": 2, "stall_seconds": 0.01}
    fake = await serve({"models": {"*": [{"text": "Hello world"}, entry]}})
    full = await _full(http, fake, "openai")
    assert _same(await _full(http, fake, "openai")) == _same(full)


async def test_non_streaming_stall_delays_the_answer(serve: Serve) -> None:
    fake = await serve({"models": {"*": [{"text": "late", "stall_after_events": 0}]}})
    async with openai.AsyncOpenAI(
        base_url=fake.openai_base_url, api_key="test", max_retries=0, timeout=0.3
    ) as client:
        with pytest.raises(openai.APITimeoutError):
            await client.chat.completions.create(model="m", messages=MESSAGES)  # pyright: ignore[reportArgumentType]


async def test_an_http_error_waits_its_delay(serve: Serve, http: aiohttp.ClientSession) -> None:
    # a slow error: it went out at once, the delay silently ignored
    fake = await serve({"models": {"*": [{"status": 500, "delay_ms": 60_000}]}})
    timeout = aiohttp.ClientTimeout(total=0.3)
    with pytest.raises(asyncio.TimeoutError):
        async with http.post(
            fake.base_url + PATHS["anthropic"], json=_body("anthropic"), timeout=timeout
        ) as resp:
            await resp.read()


# ----------------------------------------------------------------------------- malformed


@pytest.mark.parametrize("wire", ["anthropic", "openai", "ollama"])
async def test_malformed_inserts_one_event_with_broken_json(
    serve: Serve, http: aiohttp.ClientSession, wire: str
) -> None:
    entry = {"text": "Hello world", "chunk_chars": 3}
    fake = await serve({"models": {"*": [entry, {**entry, "malformed_after_events": 2}]}})
    full = await _full(http, fake, wire)
    broken = await _full(http, fake, wire)
    assert len(broken) == len(full) + 1
    assert _same(broken[:2] + broken[3:]) == _same(full)
    with pytest.raises(json.JSONDecodeError):
        json.loads(_data(wire, broken[2]))
    for event in broken[:2] + broken[3:]:
        data = _data(wire, event)
        if data != b"[DONE]":
            json.loads(data)


async def test_anthropic_sdk_fails_on_malformed_json(serve: Serve) -> None:
    fake = await serve({"models": {"*": [{"text": "Hello", "malformed_after_events": 3}]}})
    async with anthropic.AsyncAnthropic(
        base_url=fake.base_url, api_key="test", max_retries=0
    ) as client:
        with pytest.raises(ValueError):  # json.JSONDecodeError
            async with client.messages.stream(
                model="m",
                max_tokens=8,
                messages=MESSAGES,  # pyright: ignore[reportArgumentType]
            ) as stream:
                await stream.get_final_message()


async def test_non_streaming_malformed_body_is_not_json(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve({"models": {"*": [{"text": "x", "malformed_after_events": 0}]}})
    async with http.post(
        fake.base_url + PATHS["anthropic"], json=_body("anthropic", stream=False)
    ) as resp:
        assert resp.status == 200
        raw = await resp.read()
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)


# ----------------------------------------------------------------------------- error event


@pytest.mark.parametrize("wire", ["anthropic", "openai", "ollama"])
async def test_error_event_ends_the_stream(
    serve: Serve, http: aiohttp.ClientSession, wire: str
) -> None:
    entry = {"text": "Hello world", "chunk_chars": 3}
    fake = await serve({"models": {"*": [entry, {**entry, "error_event_after_events": 3}]}})
    full = await _full(http, fake, wire)
    events = await _full(http, fake, wire)  # the body ends cleanly, right after the error
    assert _same(events[:3]) == _same(full[:3]) and len(events) == 4
    error = json.loads(_data(wire, events[3]))
    if wire == "anthropic":
        assert events[3].startswith(b"event: error\n")
        assert error["type"] == "error" and error["error"]["type"] == "overloaded_error"
    elif wire == "openai":
        assert set(error["error"]) >= {"message", "type"}
    else:
        assert isinstance(error["error"], str)


async def test_sdks_raise_on_an_in_stream_error(serve: Serve) -> None:
    entry = {"text": "Hello world", "error_event_after_events": 3, "error_type": "api_error"}
    fake = await serve({"models": {"*": [entry]}})
    async with anthropic.AsyncAnthropic(
        base_url=fake.base_url, api_key="test", max_retries=0
    ) as client:
        with pytest.raises(anthropic.APIStatusError, match="api_error"):
            async with client.messages.stream(
                model="m",
                max_tokens=8,
                messages=MESSAGES,  # pyright: ignore[reportArgumentType]
            ) as stream:
                await stream.get_final_message()
    async with openai.AsyncOpenAI(
        base_url=fake.openai_base_url, api_key="test", max_retries=0
    ) as oai:
        stream = await oai.chat.completions.create(model="m", messages=MESSAGES, stream=True)  # pyright: ignore[reportArgumentType, reportCallIssue]
        with pytest.raises(openai.APIError) as info:
            async for _ in stream:
                pass
    assert info.value.body["type"] == "api_error"  # pyright: ignore[reportIndexIssue, reportOptionalSubscript]


# ----------------------------------------------------------------------------- pacing


async def test_delay_paces_events(serve: Serve, http: aiohttp.ClientSession) -> None:
    entry = {"text": "abcdefgh", "chunk_chars": 2, "delay_ms": 15}
    fake = await serve({"models": {"*": [{"text": "abcdefgh", "chunk_chars": 2}, entry]}})
    full = await _full(http, fake, "ollama")
    assert _same(await _full(http, fake, "ollama")) == _same(full)  # same bytes, just paced
    for _ in range(500):  # the server notes the end just after the client has read it
        if all(record.ended is not None for record in fake.records):
            break
        await asyncio.sleep(0.01)
    unpaced, paced = fake.records
    assert unpaced.ended is not None and paced.ended is not None
    # The server's own record of the paced reply: n events have n - 1 gaps of delay_ms, and an
    # asyncio sleep never ends early, so a loaded machine only makes it longer. Unpaced events
    # would be written in one go, far below this bound.
    assert len(full) >= 5
    assert paced.ended - paced.arrived >= 0.99 * (len(full) - 1) * 0.015


# ----------------------------------------------------------------------------- bookkeeping


async def test_requests_route_lists_bodies_in_order(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve({"models": {"*": [{"text": "x"}]}})
    sent = []
    for index, wire in enumerate(["openai", "anthropic", "ollama", "openai"]):
        body = _body(wire, model=f"model-{index}")
        sent.append(body)
        async with http.post(fake.base_url + PATHS[wire], json=body) as resp:
            await resp.read()
    async with http.get(fake.base_url + "/_fake/requests") as resp:
        assert resp.status == 200
        records = await resp.json()
    assert [r["body"] for r in records] == sent
    assert [r["model"] for r in records] == [f"model-{i}" for i in range(4)]
    assert all(r["end"] == "completed" for r in records)
    async with http.get(fake.base_url + "/_fake/requests?bodies=1") as resp:
        assert await resp.json() == sent
    assert fake.requests == sent
    assert [r.path for r in fake.received] == [
        "/v1/chat/completions",
        "/v1/messages",
        "/api/chat",
        "/v1/chat/completions",
    ]


async def test_reset_restarts_the_lists(serve: Serve, http: aiohttp.ClientSession) -> None:
    fake = await serve({"models": {"*": [{"text": "first"}, {"text": "second"}]}})

    async def text() -> str:
        async with http.post(
            fake.base_url + "/api/chat", json=_body("ollama", stream=False)
        ) as resp:
            return (await resp.json())["message"]["content"]

    assert [await text(), await text()] == ["first", "second"]
    fake.reset()
    assert await text() == "first"
    assert len(fake.requests) == 1


async def test_reset_restarts_the_latency_draws(
    serve: Serve, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = await serve({"models": {"*": [{"text": "x", "delay_ms": 1, "delay_ms_max": 1000}]}})
    waits: list[float | None] = []

    async def pause(seconds: float | None) -> bool:  # what each reply would wait, at once
        waits.append(seconds)
        return False

    monkeypatch.setattr(fake, "_pause", pause)

    async def run() -> list[float | None]:
        waits.clear()
        for _ in range(3):
            async with http.post(
                fake.base_url + "/api/chat", json=_body("ollama", stream=False)
            ) as resp:
                assert resp.status == 200
        return list(waits)

    first = await run()
    assert len(set(first)) == 3  # drawn, not fixed
    fake.reset()
    assert await run() == first  # the same run, the same draws


async def _wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.005)


@pytest.mark.parametrize("wire", ["anthropic", "openai", "ollama"])
async def test_client_going_away_mid_stream_counts_a_disconnect(serve: Serve, wire: str) -> None:
    fake = await serve({"models": {"*": [{"text": "Hello world", "stall_after_events": 2}]}})
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
        resp = await http.post(fake.base_url + PATHS[wire], json=_body(wire))
        await resp.content.readany()  # the first bytes arrived: the stream is live
        resp.close()  # dispose: drop the connection without reading the rest
    await _wait_for(lambda: fake.disconnects == 1)


async def test_a_paced_stream_abandoned_mid_way_counts_a_disconnect(serve: Serve) -> None:
    fake = await serve({"models": {"*": [{"text": "x" * 400, "chunk_chars": 1, "delay_ms": 5}]}})
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
        resp = await http.post(fake.base_url + PATHS["openai"], json=_body("openai"))
        await resp.content.readany()
        resp.close()
    await _wait_for(lambda: fake.disconnects == 1)


async def test_a_completed_stream_is_not_a_disconnect(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve({"models": {"*": [{"text": "Hello world", "delay_ms": 1}]}})
    for wire in PATHS:
        await _full(http, fake, wire)
    await asyncio.sleep(0.05)
    assert fake.disconnects == 0


async def test_stop_does_not_hang_on_a_stalled_stream() -> None:
    fake = await FakeProvider(
        {"models": {"*": [{"text": "Hello world", "stall_after_events": 2}]}}
    ).start()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        resp = await http.post(fake.base_url + PATHS["anthropic"], json=_body("anthropic"))
        await resp.content.readany()
        await asyncio.wait_for(fake.stop(), timeout=5)
        raw, error = await _read_until_error(resp)
        assert raw.endswith(b"\n\n") or raw == b""  # whole events only, then the cut
        resp.close()
    assert isinstance(error, aiohttp.ClientPayloadError)  # cut, not finished
    assert fake.disconnects == 0  # the server left, not the client
    with pytest.raises(RuntimeError):
        _ = fake.base_url
