"""``retry_ladder``: resubscription on two ladders with separate budgets, ``AttemptReset`` marks
(docs/behaviour.md §2.4), on virtual time."""

from __future__ import annotations

import random
from typing import Any

import pytest
import reactivex
from reactivex import Observable
from reactivex.testing import TestScheduler

from rxturn.errors import (
    AuthenticationError,
    Cancelled,
    RateLimitEscalation,
    ServerError,
    status_error,
)
from rxturn.events import AttemptReset, MessageDelta, MessageStart
from rxturn.messages import Usage
from rxturn.operators import TurnProgress, attempt_guard, retry_ladder
from rxturn.operators._scheduling import clock
from rxturn.resilience.policies import RetryPolicy
from rxturn.testing.virtual import Tracked, drive, reply, timeline

EXACT = RetryPolicy(jitter=0.0)


def attempts(
    scheduler: TestScheduler, *timelines: list[Any]
) -> tuple[Observable[Any], list[Tracked]]:
    """A cold source whose n-th subscription plays ``timelines[n]`` (the last repeats)."""
    tracked = [Tracked(scheduler, t) for t in timelines]
    count = 0

    def subscribe(observer: Any, scheduler_: Any = None) -> Any:
        nonlocal count
        count += 1
        return tracked[min(count, len(tracked)) - 1].observable.subscribe(
            observer, scheduler=scheduler_
        )

    return Observable(subscribe), tracked


def spans(tracked: list[Tracked]) -> list[list[float | None]]:
    return [span for t in tracked for span in t.spans]


async def test_transport_failures_retry_with_exponential_backoff(clean: TestScheduler) -> None:
    boom = ServerError("HTTP 500: boom")
    failing = timeline([MessageStart(id="m")], end=boom)  # event at 0.01, error at 0.02
    source, tracked = attempts(clean, failing, failing, timeline(reply("ok")))
    run = await drive(clean, source.pipe(retry_ladder(EXACT, scheduler=clean)))
    assert run.completed
    # attempt 1 fails at 0.02, waits 0.1; attempt 2 fails 0.02 later, waits 0.2
    assert spans(tracked) == [
        [0.0, 0.02],
        [pytest.approx(0.12), pytest.approx(0.14)],
        [pytest.approx(0.34), pytest.approx(0.34 + 0.01 * (len(reply("ok")) + 1))],
    ]
    assert [(t, r.attempt) for t, r in run.items if isinstance(r, AttemptReset)] == [
        (pytest.approx(0.12), 2),
        (pytest.approx(0.34), 3),
    ]


async def test_the_reset_precedes_every_event_of_the_retried_attempt(
    clean: TestScheduler,
) -> None:
    source, _ = attempts(
        clean, timeline(reply("first try")[:3], end=ServerError("HTTP 502")), timeline(reply("ok"))
    )
    run = await drive(clean, source.pipe(retry_ladder(EXACT, scheduler=clean)))
    values = run.values
    reset_at = values.index(run.resets[0])
    assert values[:reset_at] == reply("first try")[:3]
    assert values[reset_at + 1 :] == reply("ok")


async def test_the_transport_budget_ends_with_the_last_error(clean: TestScheduler) -> None:
    errors = [ServerError(f"HTTP 500: failure {i}") for i in range(5)]
    source, tracked = attempts(clean, *[timeline([], end=e) for e in errors])
    run = await drive(clean, source.pipe(retry_ladder(EXACT, scheduler=clean)))
    assert run.error is errors[3]  # 4 attempts: the first and 3 retries
    assert getattr(run.error, "attempts", None) == 4
    assert len(spans(tracked)) == 4
    assert [r.attempt for r in run.resets] == [2, 3, 4]
    assert [r.reason for r in run.resets] == [str(e) for e in errors[:3]]
    assert {r.error_type for r in run.resets} == {"ServerError"}


@pytest.mark.parametrize(
    "error",
    [AuthenticationError("HTTP 401: bad key"), status_error(404, "no model"), Cancelled()],
    ids=["401", "404", "cancelled"],
)
async def test_permanent_errors_are_not_retried(clean: TestScheduler, error: Exception) -> None:
    source, tracked = attempts(clean, timeline([], end=error), timeline(reply()))
    run = await drive(clean, source.pipe(retry_ladder(scheduler=clean)))
    assert run.error is error
    assert run.end_time == pytest.approx(0.01)
    assert len(spans(tracked)) == 1
    assert run.resets == []


async def test_a_60_second_rate_limit_backoff_runs_in_virtual_time(clean: TestScheduler) -> None:
    limited = status_error(429, "slow down", retry_after=60.0)
    source, tracked = attempts(clean, timeline([], end=limited), timeline(reply("ok")))
    run = await drive(clean, source.pipe(retry_ladder(EXACT, scheduler=clean)))
    assert run.completed
    assert spans(tracked)[1][0] == pytest.approx(60.01)


async def test_rate_limits_escalate_on_the_fourth_hit(clean: TestScheduler) -> None:
    limited = status_error(529, "overloaded", retry_after=0.5)
    source, tracked = attempts(clean, timeline([], end=limited))
    run = await drive(clean, source.pipe(retry_ladder(EXACT, scheduler=clean)))
    assert isinstance(run.error, RateLimitEscalation)
    assert run.error.attempts == 4
    assert run.error.retry_after == 0.5
    assert len(spans(tracked)) == 4
    assert [r.attempt for r in run.resets] == [2, 3, 4]


async def test_the_two_budgets_are_independent(clean: TestScheduler) -> None:
    limited = status_error(429, "x", retry_after=0.1)
    boom = ServerError("HTTP 500")
    source, tracked = attempts(
        clean,
        timeline([], end=boom),
        *[timeline([], end=limited)] * 3,
        *[timeline([], end=boom)] * 3,
        timeline(reply("ok")),
    )
    run = await drive(clean, source.pipe(retry_ladder(EXACT, scheduler=clean)))
    # 1 transport failure + 3 rate-limit retries + 2 more transport failures: still in budget
    assert len(spans(tracked)) == 7
    assert isinstance(run.error, ServerError)
    assert getattr(run.error, "attempts", None) == 7


async def test_budgets_do_not_leak_across_subscriptions(clean: TestScheduler) -> None:
    limited = status_error(429, "x", retry_after=0.1)
    source, _ = attempts(clean, timeline([], end=limited))
    ladder = source.pipe(retry_ladder(EXACT, scheduler=clean))
    for _ in range(2):
        run = await drive(clean, ladder)
        assert isinstance(run.error, RateLimitEscalation) and run.error.attempts == 4


async def test_resets_carry_the_failed_attempts_usage_and_events(clean: TestScheduler) -> None:
    progress = TurnProgress(clock(clean))
    usage = Usage(input_tokens=12, output_tokens=7)
    partial = [*reply("billed but lost")[:-2], MessageDelta("end_turn", usage)]
    source, _ = attempts(
        clean, timeline(partial, end=ServerError("HTTP 500")), timeline(reply("ok"))
    )
    run = await drive(
        clean,
        source.pipe(
            attempt_guard(progress), retry_ladder(EXACT, progress=progress, scheduler=clean)
        ),
    )
    assert run.completed
    assert run.resets == [
        AttemptReset(
            attempt=2, reason="HTTP 500", error_type="ServerError", usage=usage, events=len(partial)
        )
    ]


async def test_without_progress_the_ladder_counts_events_itself(clean: TestScheduler) -> None:
    source, _ = attempts(clean, timeline(reply()[:3], end=ServerError("x")), timeline(reply()))
    run = await drive(clean, source.pipe(retry_ladder(EXACT, scheduler=clean)))
    assert run.resets[0].events == 3 and run.resets[0].usage is None


async def test_backoff_is_clamped_to_the_total_deadline(clean: TestScheduler) -> None:
    progress = TurnProgress(clock(clean), total=5.0)
    limited = status_error(429, "x", retry_after=60.0)
    source, tracked = attempts(clean, timeline([], end=limited), timeline(reply("ok")))
    run = await drive(clean, source.pipe(retry_ladder(EXACT, progress=progress, scheduler=clean)))
    assert run.completed
    assert spans(tracked)[1][0] == pytest.approx(5.0)


async def test_jitter_comes_from_the_injected_random(clean: TestScheduler) -> None:
    rng = random.Random(42)
    expected = 0.1 * (1 + (2 * random.Random(42).random() - 1) * 0.1)
    source, tracked = attempts(clean, timeline([], end=ServerError("x")), timeline(reply()))
    await drive(clean, source.pipe(retry_ladder(RetryPolicy(), rng=rng, scheduler=clean)))
    assert spans(tracked)[1][0] == pytest.approx(0.01 + expected, abs=1e-6)


async def test_a_source_failing_synchronously_is_retried_through_the_scheduler(
    clean: TestScheduler,
) -> None:
    calls = 0

    def factory(_: Any) -> Observable[Any]:
        nonlocal calls
        calls += 1
        return (
            reactivex.throw(ServerError("sync")) if calls < 3 else reactivex.from_iterable(reply())
        )

    run = await drive(clean, reactivex.defer(factory).pipe(retry_ladder(EXACT, scheduler=clean)))
    assert run.completed
    assert calls == 3
    assert run.end_time == pytest.approx(0.3)
    assert [r.attempt for r in run.resets] == [2, 3]


async def test_disposal_during_backoff_cancels_the_retry(clean: TestScheduler) -> None:
    source, tracked = attempts(clean, timeline([], end=status_error(429, "x", retry_after=30.0)))
    run = await drive(clean, source.pipe(retry_ladder(scheduler=clean)), dispose_at=10.0)
    assert not run.finished
    assert len(spans(tracked)) == 1


async def test_letting_go_on_the_reset_starts_no_new_attempt(clean: TestScheduler) -> None:
    source, tracked = attempts(clean, timeline([], end=ServerError("x")), timeline(reply()))
    ladder = source.pipe(retry_ladder(EXACT, scheduler=clean))
    subscription: list[Any] = []

    def on_next(item: Any) -> None:
        if isinstance(item, AttemptReset):
            subscription[0].dispose()

    subscription.append(ladder.subscribe(on_next, scheduler=clean))
    clean.start()
    assert len(spans(tracked)) == 1  # the retried attempt was never subscribed
