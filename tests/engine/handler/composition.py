"""The handler's composition written by hand from the public operators, for the equivalence
tests: what ``StreamHandler`` promises to behave as (rxturn/engine/handler/_handler.py draws it)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import reactivex
from reactivex import Observable
from reactivex.testing import TestScheduler

from rxturn.messages import Message
from rxturn.operators import (
    TurnProgress,
    annotate_progress,
    as_batches,
    attempt_guard,
    cancellable,
    deadlines,
    give_up_beyond_deadline,
    rate_limit_gate,
    rescue,
    retry_ladder,
    scrubbed,
    total_deadline,
)
from rxturn.operators._scheduling import clock
from rxturn.resilience.cancel import CancelToken
from rxturn.resilience.limiter import RateLimiter
from rxturn.resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy


def composed_turn(
    open_attempt: Callable[[], Observable[Any]],
    create: Callable[[], Observable[Message]],
    *,
    scheduler: TestScheduler,
    token: CancelToken,
    timeouts: TimeoutPolicy,
    retry: RetryPolicy,
    rate_limit: RateLimitPolicy,
    limiter: RateLimiter | None,
    key: str,
    scrub: Callable[[BaseException], None] | None = None,
    give_up: bool = False,
    on_wait: Callable[..., object] | None = None,
) -> Observable[Any]:
    """One turn as the operators composed in the handler's order, a fresh ``TurnProgress`` per
    subscription; items as batches (what ``stream_turn_batches`` emits)."""
    rng = random.Random(7)

    def per_turn(_: Any) -> Observable[Any]:
        progress = TurnProgress(clock(scheduler), total=timeouts.total)
        attempt = reactivex.defer(lambda _: open_attempt()).pipe(
            attempt_guard(progress),
            deadlines(
                timeouts.first_event,
                timeouts.per_event,
                timeouts.max_consecutive_timeouts,
                progress=progress,
                scheduler=scheduler,
            ),
            scrubbed(scrub),
            annotate_progress(progress),
        )
        if give_up:
            attempt = attempt.pipe(give_up_beyond_deadline(progress))
        attempt = attempt.pipe(
            rate_limit_gate(limiter, key, progress=progress, scheduler=scheduler)
        )
        turn = attempt.pipe(
            retry_ladder(
                retry, rate_limit, rng=rng, progress=progress, scheduler=scheduler, on_wait=on_wait
            ),
            total_deadline(timeouts.total, progress=progress, scheduler=scheduler),
        )
        if timeouts.rescue:
            turn = turn.pipe(
                rescue(create, timeout=timeouts.first_event, progress=progress, scheduler=scheduler)
            )
        return turn.pipe(cancellable(token, progress=progress), as_batches())

    return reactivex.defer(per_turn)
