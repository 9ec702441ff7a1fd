"""``retry_ladder``: resubscribe a failed attempt, on one of two ladders with separate budgets.

An Rx shell over :class:`~rxturn.resilience.retry.RetryBudget`, whose docstring holds the rules
(docs/behaviour.md §2.4: which ladder, the waits, escalation, the hard stop, ``AttemptReset``,
``on_wait``). The source must be **cold**: each subscription is one attempt (one HTTP request).
Per subscription: one budget; a failed attempt's error gets the budget's decision; a retry
waits its delay on the scheduler, then emits the budget's ``AttemptReset`` (with the failed
attempt's event count and usage, from a shared :class:`~rxturn.operators.TurnProgress`) and
resubscribes; anything else lets the decision's error out.
"""

from __future__ import annotations

import random
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import SerialDisposable, SingleAssignmentDisposable
from reactivex.internal import curry_flip

from .._batching import event_count
from ..events import AttemptReset
from ..resilience.policies import RateLimitPolicy, RetryPolicy
from ..resilience.progress import TurnProgress
from ..resilience.retry import Decision, RetryBudget, WaitHook, decide, notify_wait
from ._scheduling import resolve_scheduler

__all__ = ["Decision", "WaitHook", "decide", "notify_wait", "retry_ladder_"]

_T = TypeVar("_T")


@curry_flip
def retry_ladder_(
    source: Observable[_T],
    retry: RetryPolicy | None = None,
    rate_limit: RateLimitPolicy | None = None,
    rng: random.Random | None = None,
    progress: TurnProgress | None = None,
    scheduler: abc.SchedulerBase | None = None,
    on_wait: WaitHook | None = None,
) -> Observable[_T | AttemptReset]:
    """See :func:`rxturn.operators.retry_ladder`."""
    retry_policy = retry if retry is not None else RetryPolicy()
    rate_policy = rate_limit if rate_limit is not None else RateLimitPolicy()
    jitter_source = rng if rng is not None else random.Random()

    def subscribe(
        observer: abc.ObserverBase[_T | AttemptReset],
        scheduler_: abc.SchedulerBase | None = None,
    ) -> abc.DisposableBase:
        sched = resolve_scheduler(scheduler, scheduler_)
        current = SerialDisposable()  # the attempt in flight, or the wait before the next one
        budget = RetryBudget(retry_policy, rate_policy, jitter_source, on_wait)
        events = 0  # events of the current attempt, when no TurnProgress counts them
        counting = progress is None

        def forward(value: _T) -> None:
            nonlocal events
            if counting:
                events += event_count(value)  # a batch counts as its events
            try:
                observer.on_next(value)
            except Exception as raised:
                # the subscriber's own failure, never the attempt's: let out to the source, it
                # came back as the attempt's error, and one that looked retryable sent the
                # request again to a subscriber that never heard its error
                current.dispose()
                observer.on_error(raised)

        def start() -> None:
            nonlocal events
            events = 0
            # Assign before subscribing: a source failing synchronously schedules the next wait
            # into ``current`` from inside ``subscribe``, which must not be overwritten.
            subscription = SingleAssignmentDisposable()
            current.disposable = subscription
            subscription.disposable = source.subscribe(
                forward, on_error, observer.on_completed, scheduler=scheduler_
            )

        def on_error(error: Exception) -> None:
            decision = budget.failed(error, progress.remaining() if progress is not None else None)
            if decision.action != "retry":
                observer.on_error(decision.error)
                return

            def next_attempt(_: abc.SchedulerBase, __: Any = None) -> None:
                if progress is not None:
                    reset = budget.reset(progress.events, progress.shadow.usage)
                else:
                    reset = budget.reset(events, None)
                try:
                    observer.on_next(reset)
                except Exception as raised:  # (as in ``forward``)
                    current.dispose()
                    observer.on_error(raised)
                    return
                if not current.is_disposed:  # the subscriber may have let go on the reset
                    start()

            current.disposable = sched.schedule_relative(decision.delay, next_attempt)

        start()
        return current

    return Observable(subscribe)
