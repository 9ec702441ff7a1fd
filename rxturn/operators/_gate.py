"""``rate_limit_gate``: delay each subscription until the proactive limiter grants a token.

docs/behaviour.md §2.7; an Rx shell over :func:`~rxturn.resilience.limiter.gate_sleep`, which
holds the rule for each wait. Placed *inside* the retry ladder, every attempt is gated, so a retried
attempt (after a 429, say) waits for a token again. The loop, per subscription:

1. ask the limiter for a token for ``key`` at the scheduler's ``now``; granted → subscribe;
2. refused with a wait ``w``: if ``max_wait`` is already spent, go ahead **without** a token
   (the reactive rate-limit ladder takes over if the provider objects); else sleep
   ``min(w, max_wait - waited, time left before the total deadline)``; a sleep of zero (the
   deadline has passed) also goes ahead; then ask again.

A disabled limiter (0 requests per minute) subscribes at once. The sleep is a scheduler timer,
so disposing the subscription (for example through :func:`rxturn.operators.cancellable`) ends it
immediately.
"""

from __future__ import annotations

from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import SerialDisposable, SingleAssignmentDisposable
from reactivex.internal import curry_flip

from ..resilience.limiter import RateLimiter, gate_sleep
from ..resilience.progress import TurnProgress
from ._scheduling import clock, resolve_scheduler

__all__ = ["rate_limit_gate_"]

_T = TypeVar("_T")


@curry_flip
def rate_limit_gate_(
    source: Observable[_T],
    limiter: RateLimiter | None,
    key: str = "",
    max_wait: float | None = None,
    progress: TurnProgress | None = None,
    scheduler: abc.SchedulerBase | None = None,
) -> Observable[_T]:
    """See :func:`rxturn.operators.rate_limit_gate`."""
    if limiter is None or not limiter.enabled:
        return source
    cap = limiter.max_wait if max_wait is None else max_wait

    def subscribe(
        observer: abc.ObserverBase[_T], scheduler_: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        sched = resolve_scheduler(scheduler, scheduler_)
        now = clock(sched)
        current = SerialDisposable()
        waited = 0.0

        def proceed() -> None:
            subscription = SingleAssignmentDisposable()
            current.disposable = subscription
            subscription.disposable = source.subscribe(observer, scheduler=scheduler_)

        def attempt(_: abc.SchedulerBase | None = None, __: Any = None) -> None:
            nonlocal waited
            sleep = gate_sleep(
                limiter.acquire(key, now()),
                waited,
                cap,
                progress.remaining() if progress is not None else None,
            )
            if sleep <= 0:
                proceed()
                return
            waited += sleep
            current.disposable = sched.schedule_relative(sleep, attempt)

        attempt()
        return current

    return Observable(subscribe)
