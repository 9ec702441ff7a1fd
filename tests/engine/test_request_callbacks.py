"""The request callbacks (``on_request`` … ``on_request_end``): order, arguments, and the context
each request is sent in. Real turns against the fake provider over loopback."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rxturn import AnthropicClient, StreamHandler, TurnEngine
from rxturn.engine.observation.observers import LoggingObserver, Observer, RecordingObserver
from rxturn.engine.records.audit import AttemptRecord, Turn
from rxturn.errors import OverloadedError
from rxturn.events import EventBatch
from rxturn.messages import Message, Request, RequestOptions
from rxturn.sources import from_async_iterable
from rxturn.testing import FakeProvider

SCRIPT = {
    "models": {
        "*": [
            {"status": 529, "retry_after": 0.01},
            {"text": "Hello", "usage": {"input_tokens": 4, "output_tokens": 1}},
        ]
    }
}


async def test_order_and_arguments_of_a_retried_turn() -> None:
    recorder = RecordingObserver(requests=True)
    async with (
        FakeProvider(SCRIPT) as fake,
        AnthropicClient("primary", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, observers=[recorder], handler=StreamHandler.default())
        await engine.run("hi")
        url = fake.base_url
    names = [n for n in recorder.names() if n != "on_text_delta"]
    assert names == [
        "on_run_start",
        "on_turn_start",
        "on_request",
        "on_attempt_start",
        "on_attempt_end",
        "on_attempt_reset",
        "on_attempt_start",
        "on_first_chunk",
        "on_attempt_end",
        "on_stream_success",
        "on_request_end",
        "on_response",
        "on_turn_end",
        "on_run_end",
    ]
    (request,) = recorder.calls_of("on_request")
    assert (request["model"], request["provider"], request["stream"]) == (
        "primary",
        "anthropic",
        True,
    )
    assert request["base_url"] == url.rstrip("/")
    starts = recorder.calls_of("on_attempt_start")
    assert [(s["attempt"], s["kind"], s["after"]) for s in starts] == [
        (1, "stream", None),
        (2, "stream", "OverloadedError"),
    ]
    wait = starts[1]["wait"]
    assert isinstance(wait, float) and wait >= 0.01  # the Retry-After
    ends = recorder.calls_of("on_attempt_end")
    records: list[AttemptRecord] = []
    for call in ends:
        attempt = call["record"]
        assert isinstance(attempt, AttemptRecord)
        records.append(attempt)
    assert [r.outcome for r in records] == ["OverloadedError", "served"]
    first_error = ends[0]["error"]
    assert isinstance(first_error, OverloadedError)
    assert first_error.status_code == 529
    ids = {c["turn_id"] for n in ("on_request", "on_attempt_start", "on_request_end")
           for c in recorder.calls_of(n)}  # fmt: skip
    assert len(ids) == 1
    (end,) = recorder.calls_of("on_request_end")
    message, turn = end["message"], end["record"]
    assert isinstance(message, Message) and isinstance(turn, Turn)
    assert end["error"] is None and message.text == "Hello"
    assert turn.attempt_log == tuple(records)


def test_the_default_recorder_keeps_the_reference_surface() -> None:
    from rxturn.engine.observation.observers import ObserverSet

    assert not ObserverSet([RecordingObserver()]).interested("on_request")
    assert ObserverSet([RecordingObserver(requests=True)]).interested("on_request")


ATTEMPT: contextvars.ContextVar[int | None] = contextvars.ContextVar("attempt", default=None)


class Tagging(Observer):
    def on_attempt_start(self, *, attempt: int, context: contextvars.Context, **_: Any) -> None:
        context.run(ATTEMPT.set, attempt)


class SeesContext(AnthropicClient):
    """Records, inside the task that sends each request, the variable the observer set."""

    seen: list[int | None]

    def stream_batches(self, request: Request, options: RequestOptions | None = None) -> Any:
        inner = super().stream_batches

        async def gen() -> AsyncIterator[EventBatch]:
            self.seen.append(ATTEMPT.get())
            async for batch in _iterate(inner(request, options)):
                yield batch

        return from_async_iterable(gen)


async def _iterate(source: Any) -> AsyncIterator[EventBatch]:
    import asyncio

    queue: asyncio.Queue[Any] = asyncio.Queue()
    done = object()
    source.subscribe(queue.put_nowait, queue.put_nowait, lambda: queue.put_nowait(done))
    while (item := await queue.get()) is not done:
        if isinstance(item, Exception):
            raise item
        yield item


async def test_each_request_is_sent_in_the_context_its_observer_was_handed() -> None:
    async with FakeProvider(SCRIPT) as fake:
        client = SeesContext("primary", api_key="k", base_url=fake.base_url)
        client.seen = []
        async with client:
            engine = TurnEngine(client, observers=[Tagging()], handler=StreamHandler.default())
            await engine.run("hi")
    assert client.seen == [1, 2]
    assert ATTEMPT.get() is None  # the caller's own context is untouched


async def test_logging_observer_summarises_requests(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rxturn.turn")
    async with (
        FakeProvider(SCRIPT) as fake,
        AnthropicClient("primary", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client, observers=[LoggingObserver(requests=True)], handler=StreamHandler.default()
        )
        await engine.run("PRIVATE prompt")
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("on_request ") and "<1 messages>" in line for line in lines)
    assert any(line.startswith("on_attempt_end ") for line in lines)
    assert not any("PRIVATE" in line for line in lines if not line.startswith("on_turn_start"))


class _FirstChunkOnly(Observer):
    """Overrides ``on_first_chunk`` and nothing else (no attempt hooks)."""

    def __init__(self) -> None:
        self.heard: list[tuple[int, int]] = []

    def on_first_chunk(self, *, turn: int, turn_id: int) -> None:
        self.heard.append((turn, turn_id))


async def test_an_observer_of_the_first_chunk_alone_hears_it_with_the_turns_id() -> None:
    first, recorder = _FirstChunkOnly(), RecordingObserver(requests=True)
    async with (
        FakeProvider({"models": {"*": [{"text": "Hello"}, {"text": "again"}]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        alone = TurnEngine(client, observers=[first])
        await alone.run("hi")
        await alone.run("and again")
        both = TurnEngine(client, observers=[first, recorder])
        await both.run("hi")
    assert [turn for turn, _ in first.heard] == [0, 0, 0]  # each run's first turn
    ids = [turn_id for _, turn_id in first.heard]
    assert len(set(ids)) == 3 and min(ids) >= 0
    (request,) = recorder.calls_of("on_request")
    assert ids[2] == request["turn_id"]
