"""``rescue``: one non-streaming request after a rescuable failure (docs/behaviour.md §2.6)."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from reactivex import Observable
from reactivex.testing import TestScheduler

from rxturn.errors import (
    AuthenticationError,
    Cancelled,
    ConfigError,
    RateLimitEscalation,
    RescueFailed,
    RescueTimeoutError,
    RxturnError,
    ServerError,
    StreamTimeoutError,
    TruncatedStreamError,
    status_error,
)
from rxturn.events import Fallback
from rxturn.messages import Message, StopReason, TextPart, ToolCallPart, Usage
from rxturn.operators import TurnProgress, is_rescuable, rescue
from rxturn.operators._scheduling import clock
from rxturn.testing.virtual import Tracked, drive, on_completed, reply, timeline
from rxturn.testing.virtual import on_next as on_next_at

RESCUED = Message(
    id="msg_rescued",
    model="scripted",
    content=(TextPart("rescued"), ToolCallPart("call_1", "lookup", {"q": 1})),
    stop_reason=StopReason.MAX_TOKENS,
    usage=Usage(input_tokens=42, output_tokens=13),
)


def failing(scheduler: TestScheduler, error: Exception, at: float = 1.0) -> Observable[Any]:
    return scheduler.create_cold_observable(timeline([], start=at, end=error))


def reply_at(scheduler: TestScheduler, at: float, message: Message = RESCUED) -> Tracked:
    """A request Observable that replies ``message`` ``at`` seconds after subscription."""
    return Tracked(scheduler, [*timeline([message], start=at, end=None), on_completed(at)])


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ServerError("HTTP 500"), True),
        (TruncatedStreamError(3), True),
        (status_error(429, "x"), True),
        (StreamTimeoutError("total", after=1, events=0, partial=False, elapsed=1), True),
        (AuthenticationError("HTTP 401"), False),
        (status_error(400, "context length exceeded"), False),
        (Cancelled(), False),
        (RateLimitEscalation(4), False),
        (ConfigError("bad"), False),
        (ValueError("a bug"), False),
    ],
    ids=[
        "500",
        "truncated",
        "429",
        "total",
        "401",
        "overflow",
        "cancel",
        "escalation",
        "config",
        "foreign",
    ],
)
def test_is_rescuable(error: Exception, expected: bool) -> None:
    assert is_rescuable(error) is expected


async def test_success_emits_the_fallback_and_completes(clean: TestScheduler) -> None:
    request = reply_at(clean, 0.5)
    run = await drive(
        clean,
        failing(clean, ServerError("HTTP 500")).pipe(
            rescue(lambda: request.observable, timeout=10.0, scheduler=clean)
        ),
    )
    assert run.completed
    assert run.items == [(1.5, Fallback(RESCUED))]
    assert run.fallbacks[0].stop_reason is StopReason.MAX_TOKENS
    assert run.fallbacks[0].usage == Usage(input_tokens=42, output_tokens=13)
    assert request.spans == [[1.0, 1.5]]


@pytest.mark.parametrize(
    "error",
    [AuthenticationError("HTTP 401"), Cancelled(), RateLimitEscalation(4)],
    ids=["permanent", "cancel", "escalation"],
)
async def test_other_failures_pass_through(clean: TestScheduler, error: Exception) -> None:
    calls: list[int] = []

    def create() -> Observable[Message]:
        calls.append(1)
        return reactivex.just(RESCUED)

    run = await drive(clean, failing(clean, error).pipe(rescue(create, scheduler=clean)))
    assert run.error is error
    assert calls == []


async def test_a_failed_rescue_keeps_both_errors(clean: TestScheduler) -> None:
    stream_error = ServerError("HTTP 500: API down")
    rescue_error = ServerError("HTTP 503: still down")
    run = await drive(
        clean,
        failing(clean, stream_error).pipe(
            rescue(lambda: reactivex.throw(rescue_error), scheduler=clean)
        ),
    )
    assert isinstance(run.error, RescueFailed)
    assert run.error.stream_error is stream_error
    assert run.error.rescue_error is rescue_error
    assert "API down" in str(run.error) and "still down" in str(run.error)


async def test_a_hanging_rescue_is_cut_by_its_deadline(clean: TestScheduler) -> None:
    request = Tracked(clean, timeline([], end=None))
    run = await drive(
        clean,
        failing(clean, ServerError("x")).pipe(
            rescue(lambda: request.observable, timeout=2.0, scheduler=clean)
        ),
    )
    assert isinstance(run.error, RescueFailed)
    assert isinstance(run.error.rescue_error, RescueTimeoutError)
    assert "fallback request exceeded its deadline" in str(run.error.rescue_error)
    assert run.end_time == pytest.approx(3.0)
    assert request.spans == [[1.0, 3.0]]  # the request was cancelled


async def test_a_reply_completing_as_the_deadline_fires_is_accepted(clean: TestScheduler) -> None:
    # The request's reply and the deadline are due at the same virtual instant (3.0), and the
    # deadline timer was scheduled first: the reply still wins.
    request = reply_at(clean, 2.0)
    run = await drive(
        clean,
        failing(clean, ServerError("x")).pipe(
            rescue(lambda: request.observable, timeout=2.0, scheduler=clean)
        ),
    )
    assert run.completed
    assert run.items == [(3.0, Fallback(RESCUED))]


async def test_the_remaining_total_deadline_bounds_the_rescue(clean: TestScheduler) -> None:
    progress = TurnProgress(clock(clean), total=4.0)
    request = Tracked(clean, timeline([], end=None))
    run = await drive(
        clean,
        failing(clean, ServerError("x")).pipe(
            rescue(lambda: request.observable, timeout=100.0, progress=progress, scheduler=clean)
        ),
    )
    assert isinstance(run.error, RescueFailed)
    assert run.end_time == pytest.approx(4.0)  # 3 s left at the failure (t=1)


async def test_a_passed_deadline_gives_a_fresh_budget(clean: TestScheduler) -> None:
    progress = TurnProgress(clock(clean), total=0.5)
    request = Tracked(clean, timeline([], end=None))
    run = await drive(
        clean,
        failing(clean, ServerError("x")).pipe(
            rescue(lambda: request.observable, timeout=2.0, progress=progress, scheduler=clean)
        ),
    )
    assert isinstance(run.error, RescueFailed)
    assert run.end_time == pytest.approx(3.0)  # failure at 1.0, past the deadline: 1.0 + 2.0


async def test_no_total_deadline_means_no_rescue_deadline(clean: TestScheduler) -> None:
    progress = TurnProgress(clock(clean), total=None)
    request = Tracked(clean, timeline([], end=None))
    run = await drive(
        clean,
        failing(clean, ServerError("x")).pipe(
            rescue(lambda: request.observable, timeout=2.0, progress=progress, scheduler=clean)
        ),
        dispose_at=1000.0,
    )
    assert not run.finished  # still waiting at 1000 s: nothing cut it
    assert request.spans == [[1.0, 1000.0]]


async def test_a_create_that_raises_fails_the_rescue(clean: TestScheduler) -> None:
    def create() -> Observable[Message]:
        raise RxturnError("cannot build the request")

    run = await drive(clean, failing(clean, ServerError("x")).pipe(rescue(create, scheduler=clean)))
    assert isinstance(run.error, RescueFailed)
    assert "cannot build" in str(run.error)


async def test_a_rescue_emitting_something_else_than_a_message_is_a_config_error(
    clean: TestScheduler,
) -> None:
    # a Fallback holding a str would replace the reply with it: the caller's mistake, said so
    request = Tracked(clean, [on_next_at(0.5, "the reply text"), on_completed(1.0)])
    run = await drive(
        clean,
        failing(clean, ServerError("x")).pipe(
            rescue(lambda: request.observable, timeout=5.0, scheduler=clean)
        ),
    )
    assert run.values == []
    assert isinstance(run.error, ConfigError)
    assert str(run.error) == (
        "rescue: create()'s Observable must emit the reply as a Message, got str 'the reply text'"
    )
    assert request.spans == [[1.0, 1.5]]  # let go of at once


async def test_a_when_that_raises_ends_the_turn_with_its_error(clean: TestScheduler) -> None:
    # it raised into the source's on_error before: out of the scheduler, the turn never ended
    def when(error: BaseException) -> bool:
        raise ValueError("my predicate is broken")

    stream_error = ServerError("x")
    run = await drive(
        clean,
        failing(clean, stream_error).pipe(
            rescue(lambda: reactivex.just(RESCUED), when=when, scheduler=clean)
        ),
    )
    assert isinstance(run.error, ValueError)
    assert str(run.error) == "my predicate is broken"
    assert run.error.__context__ is stream_error
    assert run.end_time == 1.0


async def test_a_rescue_ending_without_a_reply_fails(clean: TestScheduler) -> None:
    run = await drive(
        clean, failing(clean, ServerError("x")).pipe(rescue(reactivex.empty, scheduler=clean))
    )
    assert isinstance(run.error, RescueFailed)
    assert "without a reply" in str(run.error)


async def test_a_successful_stream_is_untouched(clean: TestScheduler) -> None:
    events = reply()
    run = await drive(
        clean,
        clean.create_cold_observable(timeline(events)).pipe(
            rescue(lambda: reactivex.just(RESCUED), scheduler=clean)
        ),
    )
    assert run.completed and run.values == events
