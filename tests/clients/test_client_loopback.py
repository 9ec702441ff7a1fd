"""Each client x {stream, create} x reply shapes, against the fake provider on 127.0.0.1.

Expected messages are written from the scenario (docs/fake-provider.md) and the Message JSON rules
(docs/behaviour.md §6): text parts, tool calls with parsed input, stop reason, usage; thinking never
appears in a message but does reach the stream as thinking deltas.
"""

from __future__ import annotations

import asyncio
import logging
import types
from typing import Any, TypedDict

import pytest
from _client_support import (
    PROVIDER_IDS,
    PROVIDERS,
    REQUEST,
    Provider,
    run_stream,
    settle,
    wait_until,
)
from aiohttp import web
from reactivex import operators as ops

from rxturn.clients import AnthropicClient
from rxturn.events import Delta, MessageStart, MessageStop
from rxturn.fold import fold_events
from rxturn.messages import (
    Request,
    RequestOptions,
    StopReason,
    TextPart,
    ToolCallPart,
    ToolSchema,
    Usage,
)
from rxturn.testing import FakeProvider
from rxturn.transport import AiohttpTransport

TEXT = "Hello, world! The weather in Paris is sunny."
THINKING = "The user wants the weather; I should answer briefly."
CALLS = [
    {"id": "call_weather_1", "name": "get_weather", "input": {"city": "Paris", "units": "C"}},
    {"id": "call_time_2", "name": "get_time", "input": {}},
]


class Counts(TypedDict):
    input_tokens: int
    output_tokens: int


USAGE: Counts = {"input_tokens": 17, "output_tokens": 9}


def _call_parts() -> tuple[ToolCallPart, ...]:
    return tuple(ToolCallPart(id=c["id"], name=c["name"], input=c["input"]) for c in CALLS)


#: name → (scenario entry, expected content, expected stop reason, usage expected?)
CASES: dict[str, tuple[dict[str, Any], tuple[Any, ...], StopReason, Usage | None]] = {
    "text": (
        {"text": TEXT, "chunk_chars": 5, "usage": USAGE},
        (TextPart(TEXT),),
        StopReason.END_TURN,
        Usage(**USAGE),
    ),
    "tool-calls": (
        {"tool_calls": CALLS, "usage": USAGE},
        _call_parts(),
        StopReason.TOOL_CALL,
        Usage(**USAGE),
    ),
    "text-and-tool-calls": (
        {"text": "Checking.", "tool_calls": CALLS[:1], "usage": USAGE},
        (TextPart("Checking."), _call_parts()[0]),
        StopReason.TOOL_CALL,
        Usage(**USAGE),
    ),
    "thinking": (
        {"thinking": THINKING, "text": TEXT, "usage": USAGE},
        (TextPart(TEXT),),
        StopReason.END_TURN,
        Usage(**USAGE),
    ),
    "usage-absent": ({"text": TEXT, "usage": None}, (TextPart(TEXT),), StopReason.END_TURN, None),
    "max-tokens": (
        {"text": "cut sh", "stop_reason": "max_tokens", "usage": USAGE},
        (TextPart("cut sh"),),
        StopReason.MAX_TOKENS,
        Usage(**USAGE),
    ),
}


def _in_out(usage: Usage | None) -> tuple[int, int] | None:
    return None if usage is None else (usage.input_tokens, usage.output_tokens)


def bridge_tasks() -> list[asyncio.Task[Any]]:
    """Tasks driving a client stream (rxturn.sources), as opposed to the servers' own tasks."""
    return [t for t in asyncio.all_tasks() if _is_bridge(t.get_coro())]


def _is_bridge(coro: object) -> bool:
    return isinstance(coro, types.CoroutineType) and coro.__qualname__ == "Bridge.run"


def scenario(entry: dict[str, Any]) -> dict[str, Any]:
    return {"models": {"*": [entry]}}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_stream_folds_to_the_scripted_message(provider: Provider, case: str) -> None:
    entry, content, stop, usage = CASES[case]
    async with FakeProvider(scenario(entry)) as fake, provider.client(fake) as client:
        events, error = await run_stream(client.stream(REQUEST))
    assert error is None
    assert isinstance(events[0], MessageStart) and isinstance(events[-1], MessageStop)
    message = fold_events(events).message()
    assert message.content == content
    assert message.stop_reason is stop
    # the counts scripted; the cache / reasoning counts each wire adds are the fake's own
    assert _in_out(message.usage) == _in_out(usage if provider.streams_usage else None)
    assert message.model == "primary" and message.id
    thinking = "".join(e.text for e in events if isinstance(e, Delta) and e.kind == "thinking")
    assert thinking == entry.get("thinking", "")
    assert len(fake.requests) == 1 and fake.requests[0]["stream"] is True


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_create_returns_the_scripted_message(provider: Provider, case: str) -> None:
    entry, content, stop, usage = CASES[case]
    async with FakeProvider(scenario(entry)) as fake, provider.client(fake) as client:
        message = await client.create(REQUEST)
    assert message.content == content
    assert message.stop_reason is stop
    assert _in_out(message.usage) == _in_out(usage)
    assert message.model == "primary" and message.id
    assert fake.requests[0]["stream"] is False


@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_streamed_and_non_streamed_replies_agree(provider: Provider) -> None:
    entry = {"text": TEXT, "tool_calls": CALLS, "usage": USAGE}
    async with FakeProvider(scenario(entry)) as fake, provider.client(fake) as client:
        events, error = await run_stream(client.stream(REQUEST))
        created = await client.create(REQUEST)
    assert error is None
    streamed = fold_events(events).message()
    assert streamed.content == created.content
    assert streamed.stop_reason is created.stop_reason


class TestRequests:
    @pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
    async def test_model_override_reaches_the_wire_and_the_client_is_unchanged(
        self, provider: Provider
    ) -> None:
        scen = {
            "models": {"primary": [{"text": "from primary"}], "backup": [{"text": "from backup"}]}
        }
        async with FakeProvider(scen) as fake, provider.client(fake, "primary") as client:
            options = RequestOptions(model="backup")
            events, error = await run_stream(client.stream(REQUEST, options))
            created = await client.create(REQUEST, options)
            plain = await client.create(REQUEST)
            assert client.model == "primary"
        assert error is None
        assert [body["model"] for body in fake.requests] == ["backup", "backup", "primary"]
        assert fold_events(events).message().text == "from backup"
        assert (created.text, created.model) == ("from backup", "backup")
        assert (plain.text, plain.model) == ("from primary", "primary")

    async def test_anthropic_headers_and_body(self) -> None:
        provider = PROVIDERS[0]
        tools = (ToolSchema(name="get_weather", input_schema={"type": "object"}),)
        request = Request(messages=REQUEST.messages, system="Be brief.", tools=tools)
        async with (
            FakeProvider(scenario({"text": "ok"})) as fake,
            provider.client(
                fake, extra_headers={"x-client": "c", "x-shared": "client"}, max_tokens=321
            ) as client,
        ):
            options = RequestOptions(extra_headers={"x-shared": "options"}, tool_choice="auto")
            await run_stream(client.stream(request, options))
        (received,) = fake.received
        headers = {k.lower(): v for k, v in received.headers.items()}
        assert received.path == "/v1/messages"
        assert headers["x-api-key"] == provider.key
        assert headers["anthropic-version"] == "2023-06-01"
        assert headers["content-type"] == "application/json"
        assert (headers["x-client"], headers["x-shared"]) == ("c", "options")
        assert received.body == {
            "model": "primary",
            "max_tokens": 321,
            "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
            "system": "Be brief.",
            "stream": True,
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "auto"},
        }

    @pytest.mark.parametrize("provider", PROVIDERS[1:3], ids=PROVIDER_IDS[1:3])
    async def test_openai_headers_and_stream_options(self, provider: Provider) -> None:
        async with FakeProvider(scenario({"text": "ok"})) as fake, provider.client(fake) as client:
            await run_stream(client.stream(REQUEST))
        (received,) = fake.received
        headers = {k.lower(): v for k, v in received.headers.items()}
        assert received.path == "/v1/chat/completions"
        if provider.key is None:
            assert "authorization" not in headers
            assert "stream_options" not in received.body
        else:
            assert headers["authorization"] == f"Bearer {provider.key}"
            assert received.body["stream_options"] == {"include_usage": True}

    async def test_ollama_native_path(self) -> None:
        provider = PROVIDERS[3]
        async with (
            FakeProvider(scenario({"text": "ok"})) as fake,
            provider.client(fake, max_tokens=12) as client,
        ):
            await client.create(REQUEST)
        (received,) = fake.received
        assert received.path == "/api/chat"
        assert received.body["options"] == {"num_predict": 12}
        assert received.body["stream"] is False


class TestLifecycle:
    @pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
    async def test_each_subscription_is_one_request(self, provider: Provider) -> None:
        async with FakeProvider(scenario({"text": "ok"})) as fake, provider.client(fake) as client:
            source = client.stream(REQUEST)
            assert fake.requests == []  # cold: nothing sent before subscribing
            for _ in range(3):
                _, error = await run_stream(source)
                assert error is None
                await settle()
                assert bridge_tasks() == [], "a finished stream leaves no task"
        assert len(fake.requests) == 3

    @pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
    async def test_events_arrive_before_the_body_ends_and_dispose_disconnects(
        self, provider: Provider
    ) -> None:
        """The fake stalls after 3 events (until the client leaves): events seen before the
        stall prove nothing is buffered; disposing must close the connection. (A Responses
        stream opens with three events that carry no text, so it stalls two events later.)"""
        stall = 5 if provider.name == "openai-responses" else 3
        entry = {"text": TEXT, "chunk_chars": 2, "stall_after_events": stall}
        async with FakeProvider(scenario(entry)) as fake, provider.client(fake) as client:
            events: list[Any] = []
            subscription = client.stream(REQUEST).subscribe(events.append)
            await wait_until(lambda: len(events) >= 2)
            assert isinstance(events[0], MessageStart)
            assert fake.disconnects == 0
            assert len(bridge_tasks()) == 1
            subscription.dispose()
            await wait_until(lambda: fake.disconnects == 1)
            await settle()
        assert not any(isinstance(e, MessageStop) for e in events)
        assert bridge_tasks() == []

    async def test_take_disposes_the_stream_early(self) -> None:
        provider = PROVIDERS[0]
        entry = {"text": TEXT, "chunk_chars": 1, "stall_after_events": 8}
        async with FakeProvider(scenario(entry)) as fake, provider.client(fake) as client:
            events, error = await run_stream(client.stream(REQUEST).pipe(ops.take(2)))
            await wait_until(lambda: fake.disconnects == 1)
        assert error is None and len(events) == 2

    async def test_dispose_while_waiting_for_headers_cancels_the_request(
        self, aiohttp_server: Any
    ) -> None:
        arrived = asyncio.Event()
        cancelled = asyncio.Event()

        async def slow(request: web.Request) -> web.Response:
            arrived.set()
            try:
                await asyncio.Event().wait()  # never answers
            except asyncio.CancelledError:
                cancelled.set()
                raise
            raise AssertionError("unreachable")  # pragma: no cover

        app = web.Application()
        app.router.add_post("/v1/messages", slow)
        server = await aiohttp_server(app)  # the test server cancels handlers on disconnect
        async with AnthropicClient("m", base_url=str(server.make_url("")).rstrip("/")) as client:
            events: list[Any] = []
            subscription = client.stream(REQUEST).subscribe(events.append)
            await asyncio.wait_for(arrived.wait(), 10)
            assert len(bridge_tasks()) == 1
            subscription.dispose()
            await asyncio.wait_for(cancelled.wait(), 10)
            await settle()
            assert bridge_tasks() == []
        assert events == []

    async def test_shared_transport_is_left_open_by_the_client(self) -> None:
        async with FakeProvider(scenario({"text": "ok"})) as fake:
            transport = AiohttpTransport()
            try:
                async with AnthropicClient(
                    "m", base_url=fake.base_url, transport=transport
                ) as client:
                    await client.create(REQUEST)
                assert not transport.closed
                async with AnthropicClient(
                    "m", base_url=fake.base_url, transport=transport
                ) as other:
                    assert (await other.create(REQUEST)).text == "ok"
            finally:
                await transport.aclose()

    async def test_aclose_closes_the_own_pool_and_a_later_request_reopens(self) -> None:
        async with FakeProvider(scenario({"text": "ok"})) as fake:
            client = AnthropicClient("m", base_url=fake.base_url)
            await client.create(REQUEST)
            await client.aclose()
            await client.aclose()
            assert (await client.create(REQUEST)).text == "ok"
            await client.aclose()

    async def test_close_is_aclose_under_the_sdks_name(self) -> None:
        """``await client.close()``, as with the SDKs' async clients, was an AttributeError."""
        async with FakeProvider(scenario({"text": "ok"})) as fake:
            client = AnthropicClient("m", base_url=fake.base_url)
            await client.create(REQUEST)
            pool = client._transport
            assert isinstance(pool, AiohttpTransport) and not pool.closed
            await client.close()
            assert pool.closed
            assert (await client.create(REQUEST)).text == "ok"
            await client.close()


@pytest.mark.parametrize("provider", PROVIDERS[:2], ids=PROVIDER_IDS[:2])
async def test_debug_log_names_the_request_never_the_key(
    provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    scen = {"models": {"primary": [{"text": "ok"}, {"status": 401}]}}
    async with FakeProvider(scen) as fake, provider.client(fake) as client:
        await run_stream(client.stream(REQUEST))
        _, error = await run_stream(client.stream(REQUEST))
        assert error is not None
        path = "/v1/messages" if provider.name == "anthropic" else "/v1/chat/completions"
        url = fake.base_url + path
    lines = [r.getMessage() for r in caplog.records if r.name == "rxturn.clients"]
    assert f"POST {url} model=primary stream=True" in lines
    assert any(
        line.startswith(f"POST {url} model=primary stream=True failed: AuthenticationError")
        for line in lines
    )
    assert provider.key is not None
    for record in caplog.records:
        assert provider.key not in record.getMessage()
        assert provider.key not in str(record.args)
