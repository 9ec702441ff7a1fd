"""``deadlines``: first-event and per-event (idle) timeouts of one attempt, one timer at a time.

An Rx shell over :class:`~rxturn.resilience.clock.AttemptClock`, whose docstring holds the rules
(the two waits, consecutive expiries, the fast fail while nothing arrived, O(1) per event). Per
subscription: the clock begins at the scheduler's ``now``; each item tells it how many events
arrived (a batch counts as its events, an empty one as none) and re-arms the one timer only
when the clock's ``due`` moved; the timer asks the clock for its verdict: the
:class:`~rxturn.errors.StreamTimeoutError` (the upstream is disposed first) or the next ``due``.
With a shared :class:`~rxturn.operators.TurnProgress` the error says whether partial data was
kept.
"""

from __future__ import annotations

from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, SerialDisposable, SingleAssignmentDisposable
from reactivex.internal import curry_flip

from .._batching import event_count
from ..resilience.clock import AttemptClock
from ..resilience.progress import TurnProgress
from ._scheduling import clock, resolve_scheduler

__all__ = ["deadlines_"]

_T = TypeVar("_T")


@curry_flip
def deadlines_(
    source: Observable[_T],
    first_event: float | None,
    per_event: float | None,
    max_consecutive: int = 10,
    progress: TurnProgress | None = None,
    scheduler: abc.SchedulerBase | None = None,
) -> Observable[_T]:
    """See :func:`rxturn.operators.deadlines`."""
    if first_event is None and per_event is None:
        return source

    def subscribe(
        observer: abc.ObserverBase[_T], scheduler_: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        sched = resolve_scheduler(scheduler, scheduler_)
        now = clock(sched)
        attempt = AttemptClock(first_event, per_event, max_consecutive)
        timer = SerialDisposable()
        upstream = SingleAssignmentDisposable()
        forward = observer.on_next

        def arm(t: float) -> None:
            due = attempt.due
            timer.disposable = (
                None if due is None else sched.schedule_relative(max(0.0, due - t), fire)
            )

        def fire(_: abc.SchedulerBase, __: Any = None) -> None:
            t = now()
            error = attempt.expired(t, progress.partial if progress is not None else False)
            if error is None:
                if attempt.due is not None:
                    arm(t)
                return
            upstream.dispose()
            observer.on_error(error)

        def on_next(value: _T) -> None:
            t = now()
            if attempt.arrived(event_count(value), t):
                arm(t)
            forward(value)

        start = now()
        attempt.begin(start)
        arm(start)
        upstream.disposable = source.subscribe(
            on_next, observer.on_error, observer.on_completed, scheduler=scheduler_
        )
        return CompositeDisposable(upstream, timer)

    return Observable(subscribe)
