"""The stream handler end to end: real clients, real HTTP on 127.0.0.1, the fake provider.

Each fault of the fake provider (docs/fake-provider.md: 429 and 529 with ``retry_after``, 500, 401,
404, a dropped connection, a stall, a malformed event, an in-stream error, a truncated stream) runs
through the default ladder on the asyncio scheduler, with small timeouts. Each test checks the
attempts the server saw (streaming and not), the ``AttemptReset`` marks, whether the rescue ran, and
the final message (folded from the handler's items) or the typed error. Teardown closes the clients
and servers and then requires that no asyncio task is left; tests that cut a response off check that
the server saw the client go away (``fake.disconnects``).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from reactivex import Observable

from rxturn.clients import AnthropicClient, OpenAIClient
from rxturn.clients._http import HttpClient
from rxturn.engine.handler import StreamHandler
from rxturn.errors import (
    AuthenticationError,
    Cancelled,
    NotFoundError,
    RateLimitEscalation,
    RescueFailed,
    TruncatedStreamError,
)
from rxturn.events import AttemptReset, Fallback, HandlerEvent
from rxturn.fold import INITIAL_STATE, fold_handler
from rxturn.messages import Message, Request
from rxturn.resilience.cancel import CancelToken
from rxturn.resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy
from rxturn.testing import FakeProvider

WAIT = 10.0  # bound on every wait, in real seconds
REQUEST = Request(messages=(Message.user("Say hello"),))
OK = {"text": "Hello from the fake", "usage": {"input_tokens": 5, "output_tokens": 4}}

FAST = StreamHandler(
    timeouts=TimeoutPolicy(first_event=2.0, per_event=0.25, total=5.0),
    retry=RetryPolicy(base_delay=0.01, max_delay=0.05, jitter=0.0),
    rate_limit=RateLimitPolicy(default_delay=0.01, max_delay=1.0),
)

#: FAST, but an attempt fails after two idle timeouts in a row
FAST_STALL = StreamHandler(
    timeouts=TimeoutPolicy(first_event=2.0, per_event=0.25, total=5.0, max_consecutive_timeouts=2),
    retry=FAST.retry,
    rate_limit=FAST.rate_limit,
)

Make = Callable[..., Awaitable[tuple[FakeProvider, HttpClient]]]


class Outcome:
    def __init__(self) -> None:
        self.items: list[HandlerEvent] = []
        self.error: BaseException | None = None

    @property
    def resets(self) -> list[AttemptReset]:
        return [i for i in self.items if isinstance(i, AttemptReset)]

    @property
    def rescued(self) -> bool:
        return any(isinstance(i, Fallback) for i in self.items)

    def message(self) -> Message:
        state = INITIAL_STATE
        for item in self.items:
            state = fold_handler(state, item)
        assert state.completed, "the turn did not complete"
        return state.message()


async def run(
    source: Observable[HandlerEvent], on_item: Callable[[int], None] | None = None
) -> Outcome:
    """Subscribe and wait (bounded) for the end."""
    outcome = Outcome()
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def record(item: HandlerEvent) -> None:
        outcome.items.append(item)
        if on_item is not None:
            on_item(len(outcome.items))

    def failed(error: Exception) -> None:
        outcome.error = error
        if not done.done():
            done.set_result(None)

    def completed() -> None:
        if not done.done():
            done.set_result(None)

    subscription = source.subscribe(record, failed, completed)
    try:
        await asyncio.wait_for(done, WAIT)
    finally:
        subscription.dispose()
    return outcome


def streaming(fake: FakeProvider) -> list[bool]:
    """For each request the server received: was it a streaming one?"""
    return [bool(body.get("stream")) for body in fake.requests]


@pytest.fixture(autouse=True)
def _collect_leaks() -> Iterator[None]:
    yield
    gc.collect()  # an unclosed aiohttp session or response raises its ResourceWarning here


@pytest.fixture
async def make() -> AsyncIterator[Make]:
    """Start a fake provider and a client on it; teardown closes both and checks for tasks."""
    fakes: list[FakeProvider] = []
    clients: list[HttpClient] = []

    async def _make(scenario: Any, provider: str = "anthropic") -> tuple[FakeProvider, HttpClient]:
        fake = await FakeProvider(scenario).start()
        fakes.append(fake)
        client: HttpClient
        if provider == "anthropic":
            client = AnthropicClient("primary", api_key="test-key", base_url=fake.base_url)
        else:
            client = OpenAIClient("primary", api_key="test-key", base_url=fake.openai_base_url)
        clients.append(client)
        return fake, client

    yield _make
    for client in clients:
        await client.aclose()
    for fake in fakes:
        await fake.stop()
    await _no_tasks_left()


async def _no_tasks_left() -> None:
    current = asyncio.current_task()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    others: list[asyncio.Task[Any]] = []
    while loop.time() < deadline:
        others = [task for task in asyncio.all_tasks() if task is not current]
        if not others:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"tasks outlived the turn: {others}")


PROVIDERS = ["anthropic", "openai"]


# -- success and the ladders ------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_healthy_stream_is_one_attempt(make: Make, provider: str) -> None:
    fake, client = await make({"models": {"*": [OK]}}, provider)
    outcome = await run(FAST.stream_turn(client, REQUEST))
    assert outcome.error is None
    assert outcome.message().text == "Hello from the fake"
    assert outcome.resets == [] and not outcome.rescued
    assert streaming(fake) == [True]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [429, 529])
async def test_a_rate_limit_with_retry_after_is_retried(
    make: Make, provider: str, status: int
) -> None:
    fake, client = await make(
        {"models": {"*": [{"status": status, "retry_after": 0.05}, OK]}}, provider
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    outcome = await run(FAST.stream_turn(client, REQUEST))
    assert outcome.error is None
    assert loop.time() - started >= 0.05  # the Retry-After was honoured
    assert outcome.message().text == "Hello from the fake"
    assert [(r.attempt, r.error_type) for r in outcome.resets] == [
        (2, "RateLimitError" if status == 429 else "OverloadedError")
    ]
    assert streaming(fake) == [True, True]


async def test_four_rate_limits_escalate_without_a_rescue(make: Make) -> None:
    fake, client = await make({"models": {"*": [{"status": 529, "retry_after": 0.01}]}})
    outcome = await run(FAST.stream_turn(client, REQUEST))
    assert isinstance(outcome.error, RateLimitEscalation)
    assert outcome.error.attempts == 4 and outcome.error.retry_after == pytest.approx(0.01)
    assert len(outcome.resets) == 3
    assert streaming(fake) == [True] * 4  # never a non-streaming request


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_server_errors_spend_the_budget_then_the_rescue_answers(
    make: Make, provider: str
) -> None:
    fake, client = await make({"models": {"*": [{"status": 500}] * 4 + [OK]}}, provider)
    outcome = await run(FAST.stream_turn(client, REQUEST))
    assert outcome.error is None
    assert outcome.rescued
    assert [r.attempt for r in outcome.resets] == [2, 3, 4]
    assert outcome.message().text == "Hello from the fake"
    assert streaming(fake) == [True, True, True, True, False]


async def test_a_failed_rescue_reports_both_errors(make: Make) -> None:
    fake, client = await make({"models": {"*": [{"status": 500}]}})
    outcome = await run(FAST.stream_turn(client, REQUEST))
    assert isinstance(outcome.error, RescueFailed)
    assert "HTTP 500" in str(outcome.error.stream_error)
    assert "HTTP 500" in str(outcome.error.rescue_error)
    assert getattr(outcome.error, "attempts", None) == 4
    assert streaming(fake) == [True] * 4 + [False]


@pytest.mark.parametrize(
    ("status", "error_type"), [(401, AuthenticationError), (404, NotFoundError)]
)
async def test_permanent_statuses_end_the_turn_at_once(
    make: Make, status: int, error_type: type[Exception]
) -> None:
    fake, client = await make({"models": {"*": [{"status": status}, OK]}})
    outcome = await run(FAST.stream_turn(client, REQUEST))
    assert isinstance(outcome.error, error_type)
    assert f"HTTP {status}" in str(outcome.error)
    assert getattr(outcome.error, "attempts", None) == 1
    assert outcome.resets == [] and streaming(fake) == [True]


# -- broken streams --------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_dropped_connection_is_retried(make: Make, provider: str) -> None:
    dropped = {"text": "Hello world, how are you?", "chunk_chars": 3, "drop_after_events": 4}
    fake, client = await make({"models": {"*": [dropped, OK]}}, provider)
    outcome = await run(FAST.stream_turn(client, REQUEST))
    assert outcome.error is None
    assert [r.error_type for r in outcome.resets] in (["TruncatedStreamError"], ["ReadError"])
    assert outcome.resets[0].events >= 1
    assert outcome.message().text == "Hello from the fake"  # nothing of attempt 1 mixed in
    assert streaming(fake) == [True, True]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_stall_times_out_and_the_stalled_response_is_closed(
    make: Make, provider: str
) -> None:
    stalled = {"text": "Hello there, slowly", "chunk_chars": 4, "stall_after_events": 3}
    fake, client = await make({"models": {"*": [stalled, OK]}}, provider)
    # two idle timeouts in a row end the attempt (the default ten would wait 2.5 s)
    outcome = await run(FAST_STALL.stream_turn(client, REQUEST))
    assert outcome.error is None
    assert [r.error_type for r in outcome.resets] == ["StreamTimeoutError"]
    assert "idle timeout" in outcome.resets[0].reason
    assert outcome.message().text == "Hello from the fake"
    assert fake.disconnects == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_malformed_event_fails_the_attempt(make: Make, provider: str) -> None:
    broken = {"text": "Hello there", "chunk_chars": 4, "malformed_after_events": 2}
    _, client = await make({"models": {"*": [broken, OK]}}, provider)
    outcome = await run(FAST.stream_turn(client, REQUEST))
    assert outcome.error is None
    assert [r.error_type for r in outcome.resets] == ["StreamProtocolError"]
    assert outcome.message().text == "Hello from the fake"


async def test_an_in_stream_overload_climbs_the_rate_limit_ladder(make: Make) -> None:
    overloaded = {
        "text": "Hello there",
        "error_event_after_events": 3,
        "error_type": "overloaded_error",
    }
    _, client = await make({"models": {"*": [overloaded, OK]}})
    outcome = await run(FAST.stream_turn(client, REQUEST))
    assert outcome.error is None
    assert [r.error_type for r in outcome.resets] == ["OverloadedError"]
    assert outcome.message().text == "Hello from the fake"


async def test_an_in_stream_api_error_climbs_the_transport_ladder(make: Make) -> None:
    failing = {"text": "Hello there", "error_event_after_events": 3, "error_type": "api_error"}
    fake, client = await make({"models": {"*": [failing] * 4 + [OK]}})
    outcome = await run(FAST.stream_turn(client, REQUEST))
    assert outcome.error is None
    assert {r.error_type for r in outcome.resets} == {"ProviderStreamError"}
    assert outcome.rescued and streaming(fake) == [True] * 4 + [False]


async def test_a_truncated_stream_gets_the_ladder(
    make: Make, aiohttp_server: Callable[..., Awaitable[TestServer]]
) -> None:
    # A server of our own: a well-formed Anthropic stream that ends without message_stop.
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_t",
                    "type": "message",
                    "role": "assistant",
                    "model": "primary",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 7, "output_tokens": 0},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "cut"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 3},
            },
        ),
    ]
    import json

    body = b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )
    seen: list[bool] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        payload = await request.json()
        seen.append(bool(payload.get("stream")))
        if payload.get("stream"):
            return web.Response(body=body, content_type="text/event-stream")
        return web.json_response(
            {
                "id": "msg_r",
                "type": "message",
                "role": "assistant",
                "model": "primary",
                "content": [{"type": "text", "text": "rescued"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 7, "output_tokens": 1},
            }
        )

    app = web.Application()
    app.router.add_post("/v1/messages", handler)
    server = await aiohttp_server(app, host="127.0.0.1")
    async with AnthropicClient(
        "primary", api_key="k", base_url=str(server.make_url("")).rstrip("/")
    ) as client:
        outcome = await run(FAST.stream_turn(client, REQUEST))
        assert outcome.error is None and outcome.rescued
        assert {r.error_type for r in outcome.resets} == {"TruncatedStreamError"}
        assert outcome.resets[0].usage is not None  # billed tokens of the lost attempt
        assert outcome.message().text == "rescued"
        assert seen == [True] * 4 + [False]
        failing = StreamHandler(
            timeouts=TimeoutPolicy(rescue=False), retry=RetryPolicy(max_retries=0)
        )
        outcome = await run(failing.stream_turn(client, REQUEST))
        assert isinstance(outcome.error, TruncatedStreamError)
    await server.close()


async def test_a_total_timeout_is_rescued_by_a_non_streaming_request(make: Make) -> None:
    slow = {"text": "Hello there, slowly", "chunk_chars": 2, "delay_ms": 60}
    fake, client = await make({"models": {"*": [slow, OK]}})
    handler = StreamHandler(
        timeouts=TimeoutPolicy(first_event=0.3, per_event=0.3, total=0.3),
        retry=RetryPolicy(base_delay=0.01, jitter=0.0),
    )
    outcome = await run(handler.stream_turn(client, REQUEST))
    assert outcome.error is None and outcome.rescued and outcome.resets == []
    assert outcome.message().text == "Hello from the fake"
    assert streaming(fake) == [True, False]
    assert fake.disconnects == 1  # the slow stream was closed at the deadline


# -- cancellation and disposal ---------------------------------------------------------------------


async def test_cancel_mid_stream_closes_the_response(make: Make) -> None:
    slow = {"text": "Hello there, slowly", "chunk_chars": 2, "delay_ms": 20}
    fake, client = await make({"models": {"*": [slow]}})
    token = CancelToken()
    outcome = await run(
        FAST.stream_turn(client, REQUEST, cancel=token),
        on_item=lambda n: token.cancel() if n == 3 else None,
    )
    assert isinstance(outcome.error, Cancelled)
    assert len(outcome.items) == 3
    assert streaming(fake) == [True]  # no retry, no rescue
    await _until(lambda: fake.disconnects == 1)


async def test_disposing_mid_stream_closes_the_response(make: Make) -> None:
    stalled = {"text": "Hello there", "stall_after_events": 2}
    fake, client = await make({"models": {"*": [stalled]}})
    got: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    items: list[HandlerEvent] = []

    def record(item: HandlerEvent) -> None:
        items.append(item)
        if len(items) == 2 and not got.done():
            got.set_result(None)

    subscription = FAST.stream_turn(client, REQUEST).subscribe(record)
    await asyncio.wait_for(got, WAIT)
    subscription.dispose()
    await _until(lambda: fake.disconnects == 1)
    assert streaming(fake) == [True]


async def _until(predicate: Callable[[], bool]) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(poll(), WAIT)
