"""``engine.turn_streams``: a user's own pipeline on a turn's shared handler stream."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from reactivex import operators as ops
from reactivex.testing import TestScheduler

from rxturn import RecordingObserver, StreamHandler, TurnEngine
from rxturn.engine import TurnStream
from rxturn.errors import ServerError
from rxturn.events import AttemptReset, Delta, MessageStart, PartStart
from rxturn.fold import INITIAL_STATE, TurnState, fold_batch
from rxturn.messages import Message, Usage
from rxturn.resilience.policies import RetryPolicy
from rxturn.testing.virtual import ScriptedClient, reply, run_virtual, timeline

RETRY = StreamHandler(retry=RetryPolicy(max_retries=1, base_delay=1.0, jitter=0.0))


def retried_client(scheduler: TestScheduler) -> ScriptedClient:
    broken = timeline(
        [MessageStart("m", "x"), PartStart(0), Delta(0, "junk")], end=ServerError("x")
    )
    good = timeline(reply("Hello there", usage=Usage(input_tokens=2, output_tokens=2)))
    return ScriptedClient(scheduler, [broken, good])


async def test_a_users_fold_of_the_turn_equals_the_reply(clean: TestScheduler) -> None:
    engine = TurnEngine(retried_client(clean), handler=RETRY, scheduler=clean)
    engine.history.append(Message.user("hi"))
    folded: list[TurnState] = []
    events: list[Any] = []
    ended: list[str] = []

    def on_turn(turn: TurnStream) -> None:
        assert turn.turn == 0 and turn.model == "scripted"
        turn.batches.pipe(ops.scan(fold_batch, INITIAL_STATE), ops.last()).subscribe(folded.append)
        turn.events.subscribe(events.append, on_completed=lambda: ended.append("completed"))

    engine.turn_streams.subscribe(on_turn)
    result = await run_virtual(clean, engine.turn())
    assert [state.message() for state in folded] == [result.message]
    assert "junk" not in result.text  # nothing of the failed attempt in the reply
    assert [type(e).__name__ for e in events].count("AttemptReset") == 1  # but the reset shows
    assert [e.text for e in events if isinstance(e, Delta)] == ["junk", "Hello", " there"]
    assert ended == ["completed"]


async def test_a_raising_subscriber_is_dropped_and_the_turn_goes_on(
    clean: TestScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    engine = TurnEngine(retried_client(clean), handler=RETRY, scheduler=clean)
    engine.history.append(Message.user("hi"))
    calls: list[Any] = []

    def boom(event: Any) -> None:
        calls.append(event)
        raise RuntimeError("user bug")

    def watch(turn: TurnStream) -> None:
        turn.events.subscribe(boom)

    engine.turn_streams.subscribe(watch)
    with caplog.at_level(logging.ERROR, logger="rxturn.engine"):
        result = await run_virtual(clean, engine.turn())
    assert result.text == "Hello there"
    assert len(calls) == 1  # dropped after the first raise
    assert any("turn_streams subscriber raised" in r.getMessage() for r in caplog.records)


async def test_observers_and_turn_streams_see_the_same_events(clean: TestScheduler) -> None:
    observer = RecordingObserver()
    engine = TurnEngine(retried_client(clean), handler=RETRY, scheduler=clean, observers=[observer])
    engine.history.append(Message.user("hi"))
    seen: list[Any] = []

    def watch(turn: TurnStream) -> None:
        turn.events.subscribe(seen.append)

    engine.turn_streams.subscribe(watch)
    await run_virtual(clean, engine.turn())
    deltas = [c["delta"] for c in observer.calls_of("on_text_delta")]
    assert deltas == [e.text for e in seen if isinstance(e, Delta)]
    resets = [c["reset"] for c in observer.calls_of("on_attempt_reset")]
    assert resets == [e for e in seen if isinstance(e, AttemptReset)]
