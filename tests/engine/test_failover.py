"""Same-turn failover: a turn whose model fails definitively continues on the next backup.

On virtual time with a scripted client per model (the shipped kit).
"""

from __future__ import annotations

from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxturn import (
    BreakerState,
    FallbackManager,
    FallbackPolicy,
    RecordingObserver,
    StreamHandler,
    TurnEngine,
)
from rxturn.engine import TurnStream
from rxturn.engine.handler import RetryAfterBeyondDeadline
from rxturn.errors import (
    AuthenticationError,
    Cancelled,
    ConnectError,
    NotFoundError,
    RateLimitError,
    ServerError,
)
from rxturn.events import AttemptReset, Delta, MessageStart, PartStart
from rxturn.messages import Message, Usage
from rxturn.resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy
from rxturn.testing.virtual import ScriptedClient, reply, run_virtual, timeline

BACKUP_USAGE = Usage(input_tokens=4, output_tokens=2)


def fails(error: Exception, usage: Usage | None = None) -> list[Any]:
    from rxturn.events import MessageDelta

    events: list[Any] = [MessageStart("m", "x")]
    if usage is not None:
        events.append(MessageDelta(None, usage))
    events += [PartStart(0), Delta(0, "doomed")]
    return timeline(events, end=error)


def setup(
    scheduler: TestScheduler,
    primary: list[list[Any]],
    backup: list[list[Any]] | None = None,
    *,
    handler: StreamHandler | None = None,
    chain: tuple[str, ...] = ("backup",),
    failover: bool = True,
    policy: FallbackPolicy | None = None,
) -> tuple[TurnEngine, ScriptedClient, FallbackManager, RecordingObserver, list[Any]]:
    models = {
        "primary": primary,
        "backup": backup or [timeline(reply("saved", usage=BACKUP_USAGE))],
    }
    client = ScriptedClient(scheduler, models=models)
    breaker = FallbackManager("primary", list(chain), policy=policy or FallbackPolicy())
    observer = RecordingObserver()
    streamed: list[str] = []
    engine = TurnEngine(
        client,
        handler=handler,
        fallback=breaker,
        observers=[observer],
        text_streamer=streamed.append,
        scheduler=scheduler,
        failover=failover,
    )
    engine.history.append(Message.user("hi"))
    return engine, client, breaker, observer, streamed


async def test_a_model_not_found_fails_over_within_the_turn(clean: TestScheduler) -> None:
    engine, client, breaker, observer, streamed = setup(
        clean, [fails(NotFoundError("no such model"), usage=Usage(input_tokens=3, output_tokens=0))]
    )
    result = await run_virtual(clean, engine.turn())

    assert (result.text, result.model) == ("saved", "backup")
    assert client.models_asked == ["primary", "backup"]
    # the breaker counted the primary's failure once, as outcome recording says: no trip yet
    assert breaker.state is BreakerState.PRIMARY and breaker.consecutive_failures == 1
    names = observer.names()
    # after the failure is recorded and before the backup's first delta: the switch, the reset
    backup_delta = len(names) - 1 - names[::-1].index("on_text_delta")
    assert names.index("on_stream_failure") < names.index("on_model_switched") < backup_delta
    assert names.index("on_stream_failure") < names.index("on_attempt_reset") < backup_delta
    assert observer.calls_of("on_stream_failure")[0]["model"] == "primary"
    assert observer.calls_of("on_model_switched") == [
        {"from_model": "primary", "to_model": "backup"}
    ]
    assert observer.calls_of("on_stream_success")[0]["model"] == "backup"
    assert "on_fallback" not in names
    (reset,) = [c["reset"] for c in observer.calls_of("on_attempt_reset")]
    assert isinstance(reset, AttemptReset) and reset.error_type == "NotFoundError"
    # the streamer saw the doomed text, then the reset, then the backup's text
    assert "".join(streamed) == "doomed" + "saved"
    # the audit lists both models' attempts and bills both
    (record,) = engine.session.runs[0].turns
    assert record.model == "backup" and record.error is None
    assert [(a.model, a.outcome) for a in record.attempt_log] == [
        ("primary", "NotFoundError"),
        ("backup", "served"),
    ]
    assert record.billed_usage == Usage(input_tokens=7, output_tokens=2)
    assert (record.input_tokens, record.output_tokens) == (4, 2)


async def test_without_failover_the_turn_fails_as_before(clean: TestScheduler) -> None:
    engine, client, _, _, _ = setup(clean, [fails(NotFoundError("no such model"))], failover=False)
    with pytest.raises(NotFoundError):
        await run_virtual(clean, engine.turn())
    assert client.models_asked == ["primary"]


async def test_a_dead_endpoint_fails_over_once_the_ladder_is_spent(clean: TestScheduler) -> None:
    handler = StreamHandler(
        retry=RetryPolicy(max_retries=2, base_delay=1.0, jitter=0.0),
        timeouts=TimeoutPolicy(rescue=False),
    )
    dead = timeline([], end=ConnectError("connection refused"), start=0.0, step=0.0)
    engine, client, _, _, _ = setup(clean, [dead], handler=handler)
    result = await run_virtual(clean, engine.turn())
    assert result.model == "backup"
    assert client.models_asked == ["primary"] * 3 + ["backup"]
    assert result.attempts == 4  # three streaming attempts on the primary, one on the backup


async def test_a_retry_after_beyond_the_deadline_fails_over_at_once(clean: TestScheduler) -> None:
    handler = StreamHandler(
        timeouts=TimeoutPolicy(first_event=10.0, total=30.0, rescue=False),
        rate_limit=RateLimitPolicy(max_retries=3),
    )
    limited = timeline([], end=RateLimitError("busy", retry_after=45.0), start=1.0)
    engine, client, breaker, observer, _ = setup(clean, [limited], handler=handler)
    result = await run_virtual(clean, engine.turn())
    assert result.model == "backup"
    # no 30 s wait: the backup was asked right when the 429 arrived, at 1.0
    assert client.spans[1][0] == 1.0
    (failure,) = observer.calls_of("on_stream_failure")
    assert isinstance(failure["error"], RetryAfterBeyondDeadline)
    assert "45s is beyond the turn's remaining deadline (29.0s)" in str(failure["error"])
    assert breaker.consecutive_failures == 1


async def test_the_next_model_gets_what_is_left_of_the_deadline(clean: TestScheduler) -> None:
    handler = StreamHandler(
        retry=RetryPolicy(max_retries=0),
        timeouts=TimeoutPolicy(first_event=40.0, per_event=40.0, total=50.0, rescue=False),
    )
    slow_failure = timeline([], end=ServerError("down"), start=20.0, step=0.0)
    stall = timeline([MessageStart("m", "x")], end=None)
    engine, client, _, _, _ = setup(clean, [slow_failure], [stall], handler=handler)
    with pytest.raises(Exception) as caught:
        await run_virtual(clean, engine.turn())
    assert type(caught.value).__name__ == "StreamTimeoutError"
    # the backup started at 20 and was cut at 50, the turn's own total deadline
    assert client.spans[1] == [20.0, 50.0]


async def test_a_chain_with_no_model_left_ends_with_the_last_error(clean: TestScheduler) -> None:
    engine, client, _, observer, _ = setup(
        clean,
        [fails(NotFoundError("no primary"))],
        [fails(ServerError("backup down"))],
        handler=StreamHandler(
            retry=RetryPolicy(max_retries=0), timeouts=TimeoutPolicy(rescue=False)
        ),
    )
    with pytest.raises(ServerError, match="backup down"):
        await run_virtual(clean, engine.turn())
    assert client.models_asked == ["primary", "backup"]
    failures = [
        (c["model"], type(c["error"]).__name__) for c in observer.calls_of("on_stream_failure")
    ]
    assert failures == [("primary", "NotFoundError"), ("backup", "ServerError")]
    (record,) = engine.session.runs[0].turns
    assert record.error == "ServerError" and record.model == "backup"


async def test_cancel_during_the_failover_leg(clean: TestScheduler) -> None:
    stall = timeline([MessageStart("m", "x"), PartStart(0), Delta(0, "wait")], end=None)
    engine, client, breaker, observer, _ = setup(clean, [fails(NotFoundError("gone"))], [stall])
    clean.schedule_absolute(7.0, lambda *_: engine.cancel())
    with pytest.raises(Cancelled):
        await run_virtual(clean, engine.turn())
    assert client.models_asked == ["primary", "backup"]
    assert client.spans[1][1] == 7.0  # the backup's request was let go at the cancel
    assert breaker.consecutive_failures == 1  # the cancel itself changed nothing
    assert [c["model"] for c in observer.calls_of("on_stream_failure")] == ["primary"]
    (record,) = engine.session.runs[0].turns
    assert [(a.model, a.outcome) for a in record.attempt_log] == [
        ("primary", "NotFoundError"),
        ("backup", "cancelled"),
    ]
    assert record.error == "Cancelled"


async def test_the_trip_fires_on_fallback_and_routing_follows(clean: TestScheduler) -> None:
    engine, client, breaker, observer, _ = setup(
        clean,
        [fails(NotFoundError("gone"))],
        policy=FallbackPolicy(trip_threshold=1),
    )
    first = await run_virtual(clean, engine.turn())
    assert first.model == "backup" and breaker.state is BreakerState.FALLBACK
    assert observer.calls_of("on_fallback") == [{"from_model": "primary", "to_model": "backup"}]
    engine.history[:] = [Message.user("again")]
    second = await run_virtual(clean, engine.turn())
    assert second.model == "backup"
    assert client.models_asked == ["primary", "backup", "backup"]  # routed there directly


async def test_a_request_every_model_would_reject_does_not_fail_over(clean: TestScheduler) -> None:
    engine, client, _, _, _ = setup(clean, [fails(AuthenticationError("bad key"))])
    with pytest.raises(AuthenticationError):
        await run_virtual(clean, engine.turn())
    assert client.models_asked == ["primary"]


async def test_turn_streams_see_the_failover_reset(clean: TestScheduler) -> None:
    engine, _, _, _, _ = setup(clean, [fails(NotFoundError("gone"))])
    seen: list[Any] = []

    def watch(turn: TurnStream) -> None:
        turn.events.subscribe(seen.append)

    engine.turn_streams.subscribe(watch)
    await run_virtual(clean, engine.turn())
    resets = [e for e in seen if isinstance(e, AttemptReset)]
    assert len(resets) == 1
    assert seen.index(resets[0]) == 3  # after the primary's three events
