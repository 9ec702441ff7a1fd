"""TurnEngine's batched stream path, seen from outside: the per-event fan-out is unchanged.

- a client of your own with only ``stream()`` (no ``stream_batches``) still runs a turn, and
  the streamer and observers see each delta in order, also across a retry;
- over the fake provider (events arriving many per chunk), ``engine.events`` gets every event
  one by one, in the order of the client's per-event ``stream()`` (the oracle, from a fresh
  fake with the same scenario), and for each text delta the ``text_streamer`` runs before
  ``on_text_delta``, which runs before ``engine.events``;
- an observer whose ``on_text_delta`` raises is logged and stops neither the streamer, the
  other observers nor the turn.
"""

from __future__ import annotations

import asyncio
import logging
import types
from collections.abc import Iterator
from typing import Any

import pytest
import reactivex
from reactivex import Observable
from reactivex import operators as ops

from rxturn import Observer, RecordingObserver, StreamHandler, TurnEngine
from rxturn.clients import ModelClient
from rxturn.engine import TurnStream
from rxturn.errors import TruncatedStreamError
from rxturn.events import (
    AttemptReset,
    Delta,
    EventBatch,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    StreamEvent,
)
from rxturn.messages import Message, Request, RequestOptions, StopReason, Usage
from rxturn.resilience.policies import RetryPolicy
from rxturn.testing import _server

WAIT = 10.0  # bound on every wait (seconds)
FAST = StreamHandler(retry=RetryPolicy(base_delay=0.001, max_delay=0.002))

TEXT_DELTAS = ["Hel", "lo", " wor", "ld"]
THINKING_DELTAS = ["hmm", " ok"]
EVENTS: list[StreamEvent] = [
    MessageStart(id="msg_custom", model="custom"),
    PartStart(0, "thinking"),
    *(Delta(0, t, "thinking") for t in THINKING_DELTAS),
    PartStop(0),
    PartStart(1),
    *(Delta(1, t) for t in TEXT_DELTAS),
    PartStop(1),
    MessageDelta("end_turn", Usage(input_tokens=4, output_tokens=2)),
    MessageStop(),
]


class PerEventClient:
    """A minimal client of your own: ``stream()`` returns a cold Observable, one per attempt,
    from ``scripts`` (the last repeats). No ``stream_batches``."""

    model = "custom"
    base_url = "http://custom.invalid"

    def __init__(self, *scripts: list[StreamEvent]) -> None:
        self.scripts = scripts
        self.stream_calls = 0

    def stream(
        self, request: Request, options: RequestOptions | None = None
    ) -> Observable[StreamEvent]:
        self.stream_calls += 1
        return reactivex.from_iterable(self.scripts[min(self.stream_calls, len(self.scripts)) - 1])

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        raise AssertionError("the streaming path never calls create()")


class BatchSpy:
    """Wraps a real client and records the size of each batch its ``stream_batches`` emits
    (proof that the engine ran on the batched path, with several events per item)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.model = client.model
        self.base_url = client.base_url
        self.sizes: list[int] = []

    def stream(self, request: Request, options: RequestOptions | None = None) -> Any:
        raise AssertionError("the engine subscribes stream_batches when the client has it")

    def stream_batches(self, request: Request, options: RequestOptions | None = None) -> Any:
        def record(batch: EventBatch) -> None:
            self.sizes.append(len(batch))

        return self.client.stream_batches(request, options).pipe(ops.do_action(record))

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        raise AssertionError("the streaming path never calls create()")


class Calls(Observer):
    """Appends ``(label, delta)`` for text and thinking deltas to a shared log."""

    def __init__(self, log: list[tuple[str, Any]], label: str = "observer") -> None:
        self.log = log
        self.label = label

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        self.log.append((self.label, delta))

    def on_thinking_delta(self, *, turn: int, delta: str) -> None:
        self.log.append((self.label + ":thinking", delta))


class Raises(Observer):
    def __init__(self) -> None:
        self.calls = 0

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        self.calls += 1
        raise RuntimeError(f"observer broke on {delta!r}")


@pytest.fixture(autouse=True)
def _fixed_created(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Freeze the fake's reply timestamp (Ollama's message id is built from it), so a turn and
    its oracle run on two fakes see the same ids."""
    monkeypatch.setattr(_server, "time", types.SimpleNamespace(time=lambda: 1_700_000_000.0))
    yield


def scenario(entry: dict[str, Any]) -> dict[str, Any]:
    return {"models": {"*": [entry]}}


# -- a client with only stream() ----------------------------------------------------------------


async def test_a_client_with_only_stream_runs_a_turn() -> None:
    client = PerEventClient(EVENTS)
    assert not hasattr(client, "stream_batches")
    assert isinstance(client, ModelClient)
    log: list[tuple[str, Any]] = []
    engine = TurnEngine(
        client, observers=[Calls(log)], text_streamer=lambda text: log.append(("streamer", text))
    )
    events: list[Any] = []
    engine.events.subscribe(events.append)
    result = await engine.turn()
    assert client.stream_calls == 1
    assert result.message.text == "Hello world"
    assert result.stop_reason is StopReason.END_TURN
    assert result.usage == Usage(input_tokens=4, output_tokens=2)
    assert log == [
        *(("observer:thinking", t) for t in THINKING_DELTAS),
        *(entry for t in TEXT_DELTAS for entry in (("streamer", t), ("observer", t))),
    ]
    assert events == EVENTS


async def test_a_client_with_only_stream_is_retried_and_resets_arrive_one_by_one() -> None:
    cut = EVENTS[:7]  # through the first text delta, then the stream ends: truncated
    client = PerEventClient(cut, EVENTS)
    streamed: list[str] = []
    observer = RecordingObserver()
    engine = TurnEngine(client, handler=FAST, observers=[observer], text_streamer=streamed.append)
    events: list[Any] = []
    engine.events.subscribe(events.append)
    result = await engine.turn()
    assert client.stream_calls == 2
    assert result.message.text == "Hello world" and result.attempts == 2
    resets = [e for e in events if isinstance(e, AttemptReset)]
    assert len(resets) == 1 and resets[0].attempt == 2
    assert resets[0].error_type == TruncatedStreamError.__name__
    assert events == [*cut, resets[0], *EVENTS]  # single items, never lists
    assert streamed == [TEXT_DELTAS[0], *TEXT_DELTAS]  # the failed attempt's delta too
    seq = [
        (name, kw.get("delta"))
        for name, kw in observer.calls
        if name in ("on_text_delta", "on_attempt_reset")
    ]
    assert seq == [
        ("on_text_delta", TEXT_DELTAS[0]),
        ("on_attempt_reset", None),
        *(("on_text_delta", t) for t in TEXT_DELTAS),
    ]


class BatchClient:
    """A client of your own with ``stream_batches``: one cold Observable of batches per
    attempt, from ``scripts`` (the last repeats)."""

    model = "custom"
    base_url = "http://custom.invalid"

    def __init__(self, *scripts: list[list[StreamEvent]]) -> None:
        self.scripts = scripts
        self.calls = 0

    def stream(self, request: Request, options: RequestOptions | None = None) -> Any:
        raise AssertionError("the engine subscribes stream_batches when the client has it")

    def stream_batches(
        self, request: Request, options: RequestOptions | None = None
    ) -> Observable[EventBatch]:
        self.calls += 1
        return reactivex.from_iterable(self.scripts[min(self.calls, len(self.scripts)) - 1])

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        raise AssertionError("the streaming path never calls create()")


async def test_nothing_of_a_batch_cut_short_by_the_guard_reaches_the_retried_reply() -> None:
    # attempt 1: a text part, then (in the same batch) a tool call whose JSON breaks at its
    # close: the text and the tool's start are forwarded, the close is not, the attempt fails
    first = [
        [MessageStart(id="msg_1", model="custom"), PartStart(0), Delta(0, "stale ")],
        [
            Delta(0, "text"),
            PartStop(0),
            PartStart(1, "tool_call", id="call_1", name="lookup"),
            Delta(1, '{"broken', "tool_json"),
            PartStop(1),
            MessageStop(),
        ],
    ]
    second = [EVENTS[:5], EVENTS[5:9], EVENTS[9:]]  # thinking, text split across batches
    client = BatchClient(first, second)
    engine = TurnEngine(client, handler=FAST)
    batches: list[list[Any]] = []

    def watch(stream: TurnStream) -> None:
        stream.batches.subscribe(batches.append)

    engine.turn_streams.subscribe(watch)
    result = await engine.turn()
    assert client.calls == 2 and result.attempts == 2
    assert result.message.id == "msg_custom"
    assert result.message.text == "Hello world"
    assert [type(part).__name__ for part in result.message.content] == ["TextPart"]
    assert result.usage == Usage(input_tokens=4, output_tokens=2)
    assert batches[1] == first[1][:4]  # the accepted prefix went on, ahead of the error
    assert isinstance(batches[2][0], AttemptReset)


# -- over the fake provider: batches on the wire, events one by one outside -------------------


async def oracle_events(
    entry: dict[str, Any], fake_client: Any, provider: str
) -> list[StreamEvent]:
    """The client's per-event ``stream()`` of the same scenario, from a fresh fake."""
    async with fake_client(scenario(entry), provider) as (_, client):
        out: list[StreamEvent] = []
        done: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()
        client.stream(Request(messages=(Message.user("hi"),))).subscribe(
            out.append, done.set_result, lambda: done.set_result(None)
        )
        assert await asyncio.wait_for(done, WAIT) is None
        return out


@pytest.mark.parametrize("provider", ["anthropic", "openai", "ollama"])
async def test_engine_events_get_every_event_one_by_one_in_order(
    fake_client: Any, provider: str
) -> None:
    entry = {
        "thinking": "Think first.",
        "text": "Hello there, world!",
        "chunk_chars": 2,
        "usage": {"input_tokens": 5, "output_tokens": 9},
    }  # not counted from the prompt
    expected = await oracle_events(entry, fake_client, provider)
    async with fake_client(scenario(entry), provider) as (fake, client):
        log: list[tuple[str, Any]] = []
        spy = BatchSpy(client)
        engine = TurnEngine(
            spy,
            history=[Message.user("hi")],  # (the API refuses a request with no message)
            observers=[Calls(log)],
            text_streamer=lambda text: log.append(("streamer", text)),
        )
        engine.events.subscribe(lambda event: log.append(("events", event)))
        result = await engine.turn()
        assert len(fake.requests) == 1
    assert sum(spy.sizes) == len(expected) and max(spy.sizes) > 3  # many events per item
    events = [item for label, item in log if label == "events"]
    assert all(not isinstance(e, list) for e in events)
    assert events == expected
    assert result.message.text == "Hello there, world!"
    # each text delta: streamer, then the observer, then engine.events
    deltas = [e.text for e in expected if isinstance(e, Delta) and e.kind == "text"]
    assert len(deltas) > 3
    text_log = [
        (label, item)
        for label, item in log
        if label in ("streamer", "observer")
        or (label == "events" and isinstance(item, Delta) and item.kind == "text")
    ]
    assert text_log == [
        entry_
        for d in deltas
        for entry_ in (("streamer", d), ("observer", d), ("events", Delta(_lane(expected), d)))
    ]


def _lane(events: list[StreamEvent]) -> int:
    """The index of the (single) text lane of a reply."""
    (index,) = {e.index for e in events if isinstance(e, Delta) and e.kind == "text"}
    return index


@pytest.mark.parametrize("others", [False, True], ids=["alone", "among-others"])
async def test_a_raising_observer_stops_neither_the_streamer_nor_the_others(
    fake_client: Any, caplog: pytest.LogCaptureFixture, others: bool
) -> None:
    """Alone (the engine's one-observer shortcut) or between two others (its loop)."""
    text = "Hello there, world!"
    entry = {"text": text, "chunk_chars": 3}
    chunks = [text[i : i + 3] for i in range(0, len(text), 3)]
    async with fake_client(scenario(entry)) as (_, client):
        log: list[tuple[str, Any]] = []
        broken = Raises()
        observers: list[Observer] = (
            [Calls(log, "before"), broken, Calls(log, "after")] if others else [broken]
        )
        engine = TurnEngine(
            client,
            history=[Message.user("hi")],  # (the API refuses a request with no message)
            observers=observers,
            text_streamer=lambda t: log.append(("streamer", t)),
        )
        with caplog.at_level(logging.ERROR, logger="rxturn.engine.observers"):
            result = await engine.turn()
    assert result.message.text == text
    assert broken.calls == len(chunks)
    labels = ("streamer", "before", "after") if others else ("streamer",)
    assert log == [(label, c) for c in chunks for label in labels]
    failures = [r for r in caplog.records if r.name == "rxturn.engine.observers"]
    assert len(failures) == len(chunks)
    assert all("Raises.on_text_delta" in r.getMessage() for r in failures)
    assert all(r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in failures)


# -- callbacks that change the turn mid-batch ---------------------------------------------------


class OneBatchClient(PerEventClient):
    """A client whose whole reply arrives as one batch (one network chunk)."""

    def stream_batches(
        self, request: Request, options: RequestOptions | None = None
    ) -> Observable[list[StreamEvent]]:
        self.stream_calls += 1
        return reactivex.from_iterable([list(EVENTS)])


async def test_a_cancel_from_a_callback_stops_the_rest_of_the_batch() -> None:
    """One event at a time, nothing reached the UI after a cancel; a batch must not either."""
    from rxturn.errors import Cancelled

    seen: list[str] = []
    log: list[tuple[str, Any]] = []

    def streamer(text: str) -> None:
        seen.append(text)
        engine.cancel("stop")

    engine = TurnEngine(OneBatchClient(), text_streamer=streamer, observers=[Calls(log)])
    with pytest.raises(Cancelled):
        await asyncio.wait_for(engine.turn(), WAIT)
    # the delta being fanned out when the cancel came still reaches the observer after the
    # streamer (as one event at a time); nothing after it does
    assert seen == TEXT_DELTAS[:1]
    assert log == [("observer:thinking", t) for t in THINKING_DELTAS] + [
        ("observer", TEXT_DELTAS[0])
    ]


async def test_observers_added_or_removed_mid_batch_take_effect_at_the_next_delta() -> None:
    log: list[tuple[str, Any]] = []
    late = Calls(log, "late")
    leaving = Calls(log, "leaving")

    class Adds(Observer):
        def on_thinking_delta(self, *, turn: int, delta: str) -> None:
            if delta == THINKING_DELTAS[0]:
                engine.add_observer(late)

        def on_text_delta(self, *, turn: int, delta: str) -> None:
            if delta == TEXT_DELTAS[1]:
                engine.observers.remove(leaving)

    engine = TurnEngine(OneBatchClient(), observers=[leaving, Adds()])
    await asyncio.wait_for(engine.turn(), WAIT)
    assert [entry for entry in log if entry[0] == "late:thinking"] == [
        ("late:thinking", THINKING_DELTAS[1])
    ]
    assert [d for who, d in log if who == "late"] == TEXT_DELTAS
    assert [d for who, d in log if who == "leaving"] == TEXT_DELTAS[:2]
