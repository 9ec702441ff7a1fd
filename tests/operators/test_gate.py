"""``rate_limit_gate``: each subscription waits for a limiter token (docs/behaviour.md §2.7)."""

from __future__ import annotations

import pytest
from reactivex.testing import TestScheduler

from rxturn.operators import TurnProgress, rate_limit_gate
from rxturn.operators._scheduling import clock
from rxturn.resilience.limiter import RateLimiter
from rxturn.resilience.policies import LimiterPolicy
from rxturn.testing.virtual import Tracked, drive, reply, timeline

KEY = "https://provider.invalid"


def test_no_limiter_or_a_disabled_one_is_the_identity() -> None:
    source = TestScheduler().create_cold_observable(timeline([]))
    assert rate_limit_gate(None)(source) is source
    assert rate_limit_gate(RateLimiter(LimiterPolicy(requests_per_minute=0)))(source) is source


async def test_a_full_bucket_subscribes_at_once(clean: TestScheduler) -> None:
    source = Tracked(clean, timeline(reply()))
    run = await drive(
        clean,
        source.observable.pipe(rate_limit_gate(RateLimiter.per_minute(60), KEY, scheduler=clean)),
    )
    assert run.completed
    assert source.spans[0][0] == 0.0


async def test_an_empty_bucket_waits_for_the_next_token(clean: TestScheduler) -> None:
    limiter = RateLimiter.per_minute(60)  # one token per second
    for _ in range(60):
        limiter.acquire(KEY, 0.0)
    source = Tracked(clean, timeline(reply()))
    run = await drive(clean, source.observable.pipe(rate_limit_gate(limiter, KEY, scheduler=clean)))
    assert run.completed
    assert source.spans[0][0] == pytest.approx(1.0)


async def test_max_wait_degrades_to_going_ahead_without_a_token(clean: TestScheduler) -> None:
    limiter = RateLimiter(LimiterPolicy(requests_per_minute=1, max_wait=0.05))
    limiter.acquire(KEY, 0.0)  # the next token is 60 s away
    source = Tracked(clean, timeline(reply()))
    run = await drive(clean, source.observable.pipe(rate_limit_gate(limiter, KEY, scheduler=clean)))
    assert run.completed
    assert source.spans[0][0] == pytest.approx(0.05)


async def test_the_wait_is_clamped_to_the_total_deadline(clean: TestScheduler) -> None:
    limiter = RateLimiter.per_minute(1)
    limiter.acquire(KEY, 0.0)
    progress = TurnProgress(clock(clean), total=0.08)
    source = Tracked(clean, timeline(reply()))
    await drive(
        clean,
        source.observable.pipe(rate_limit_gate(limiter, KEY, progress=progress, scheduler=clean)),
    )
    assert source.spans[0][0] == pytest.approx(0.08)  # not 30 s


async def test_an_expired_deadline_goes_ahead_at_once(clean: TestScheduler) -> None:
    limiter = RateLimiter.per_minute(1)
    limiter.acquire(KEY, 0.0)
    progress = TurnProgress(clock(clean), total=1.0)
    clean.advance_to(2.0)
    source = Tracked(clean, timeline(reply()))
    await drive(
        clean,
        source.observable.pipe(rate_limit_gate(limiter, KEY, progress=progress, scheduler=clean)),
    )
    assert source.spans[0][0] == 2.0


async def test_buckets_are_keyed(clean: TestScheduler) -> None:
    limiter = RateLimiter.per_minute(1)
    limiter.acquire(KEY, 0.0)
    source = Tracked(clean, timeline(reply()))
    await drive(
        clean,
        source.observable.pipe(rate_limit_gate(limiter, "https://other.invalid", scheduler=clean)),
    )
    assert source.spans[0][0] == 0.0


async def test_disposal_during_the_wait_cancels_it(clean: TestScheduler) -> None:
    limiter = RateLimiter.per_minute(1)
    limiter.acquire(KEY, 0.0)
    source = Tracked(clean, timeline(reply()))
    run = await drive(
        clean,
        source.observable.pipe(rate_limit_gate(limiter, KEY, scheduler=clean)),
        dispose_at=5.0,
    )
    assert not run.finished
    assert source.spans == []
