"""``rxturn.testing.MockTransport``: canned responses through the real client code, no sockets."""

from __future__ import annotations

import asyncio

import pytest

from rxturn.clients import AnthropicClient, OpenAIClient
from rxturn.errors import ConnectError, RateLimitError, ReadError, StreamProtocolError
from rxturn.messages import Message, Request
from rxturn.testing import MockRequest, MockResponse, MockTransport
from rxturn.transport import AsyncTransport, HttpResponse
from rxturn.wire import decoder_for

REQUEST = Request(messages=(Message.user("hi"),))

SSE = [
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","model":"x",'
    b'"usage":{"input_tokens":3,"output_tokens":0}}}\n\n',
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"Hello"}}\n\n',
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":1}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
]


async def collect(client: AnthropicClient) -> tuple[list[object], BaseException | None]:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[BaseException | None] = loop.create_future()
    items: list[object] = []
    client.stream(REQUEST).subscribe(items.append, done.set_result, lambda: done.set_result(None))
    return items, await asyncio.wait_for(done, 5)


def test_it_is_a_transport_and_its_responses_are_responses() -> None:
    transport = MockTransport(MockResponse())
    assert isinstance(transport, AsyncTransport)

    async def one() -> HttpResponse:
        return await transport.send("POST", "http://x.invalid/", headers={}, body=b"", stream=True)

    assert isinstance(asyncio.run(one()), HttpResponse)


async def test_a_fixed_response_streams_through_a_client_chunk_by_chunk() -> None:
    chunks = [SSE[0][:17], SSE[0][17:] + SSE[1], *SSE[2:]]
    transport = MockTransport(MockResponse(chunks=chunks))
    async with AnthropicClient(
        "x", api_key="sk-test", base_url="http://mock.invalid", transport=transport
    ) as client:
        events, error = await collect(client)
        again, _ = await collect(client)  # a fixed response answers every request
    decoder = decoder_for("anthropic")
    assert error is None
    assert events == again == [*decoder.feed(b"".join(SSE)), *decoder.close()]
    assert len(transport.requests) == 2
    sent = transport.requests[0]
    assert (sent.method, sent.url, sent.stream) == ("POST", "http://mock.invalid/v1/messages", True)
    assert sent.headers["x-api-key"] == "sk-test"  # names are lower-cased
    assert b'"stream":true' in sent.body
    assert all(response.closed for response in transport.responses)
    assert transport.responses[0].reads == len(chunks)


async def test_a_handler_answers_per_request_and_may_be_async() -> None:
    seen: list[MockRequest] = []

    async def answer(request: MockRequest) -> MockResponse:
        seen.append(request)
        if len(seen) == 1:
            return MockResponse(
                429,
                headers={"Retry-After": "7", "Content-Type": "application/json"},
                chunks=[b'{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}'],
            )
        return MockResponse(chunks=SSE)

    transport = MockTransport(answer)
    async with AnthropicClient(
        "x", api_key="k", base_url="http://m.invalid", transport=transport
    ) as c:
        _, error = await collect(c)
        events, ok = await collect(c)
    assert isinstance(error, RateLimitError) and error.retry_after == 7.0
    assert ok is None and len(events) == len(SSE) + 1  # + message_start's usage
    assert seen == transport.requests


async def test_a_mid_body_error_comes_after_the_events_before_it() -> None:
    transport = MockTransport(MockResponse(chunks=SSE[:3], error=ReadError("connection reset")))
    async with AnthropicClient(
        "x", api_key="k", base_url="http://m.invalid", transport=transport
    ) as c:
        events, error = await collect(c)
    assert len(events) == 4  # message_start (and its usage), a block start, one delta
    assert isinstance(error, ReadError)
    assert transport.responses[0].closed


async def test_a_raising_handler_is_a_failed_send() -> None:
    def refuse(request: MockRequest) -> MockResponse:
        raise ConnectError("connection refused")

    transport = MockTransport(refuse)
    async with AnthropicClient(
        "x", api_key="k", base_url="http://m.invalid", transport=transport
    ) as c:
        events, error = await collect(c)
    assert events == [] and isinstance(error, ConnectError)
    assert transport.responses == []


async def test_read_joins_the_chunks_and_keeps_the_limit() -> None:
    reply = (
        b'{"id":"c1","model":"gpt","choices":[{"index":0,"message":{"role":"assistant",'
        b'"content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}'
    )
    transport = MockTransport(MockResponse(chunks=[reply[:20], reply[20:]]))
    async with OpenAIClient(
        "gpt", api_key="k", base_url="http://m.invalid", transport=transport
    ) as c:
        message = await c.create(REQUEST)
    assert message.text == "Hi"
    assert transport.requests[0].stream is False

    response = await MockTransport(MockResponse(chunks=[b"x" * 6])).send(
        "POST", "http://m.invalid/", headers={}, body=b"", stream=False
    )
    assert await response.read(6) == b"xxxxxx"
    with pytest.raises(StreamProtocolError, match="exceeds the 5-byte limit"):
        await response.read(5)


async def test_headers_are_case_insensitive_and_close_is_recorded() -> None:
    transport = MockTransport(MockResponse(headers={"Retry-After": "3"}))
    response = await transport.send("POST", "http://m.invalid/", headers={}, body=b"", stream=True)
    assert response.headers["retry-after"] == response.headers["RETRY-AFTER"] == "3"
    assert not response.closed
    await response.aclose()
    await response.aclose()
    assert response.closed
    await transport.aclose()
    assert transport.closed
