"""``total_deadline``: one wall-clock budget for a whole turn, all attempts and waits included.

An Rx shell over the rule in :mod:`rxturn.resilience.progress` (the deadline instant and
:func:`~rxturn.resilience.progress.total_timeout`, the error).

docs/behaviour.md §2.5: ``total_deadline = turn start + total`` covers every attempt, every backoff
and every limiter wait. Placed *outside* the retry ladder, the timer's error is never seen by the
ladder, so a total timeout is never followed by another streaming attempt (a total timeout goes to
the rescue if it is enabled, else the turn fails): the rescue operator downstream decides.

One timer per subscription, armed at subscription (or at the shared
:class:`~rxturn.operators.TurnProgress` deadline, so that the ladder's clamping and this timer
agree on the same instant). When it fires, the upstream subscription is disposed (closing the
HTTP response of the attempt in flight) and :class:`~rxturn.errors.StreamTimeoutError` with
``kind="total"`` reports the events of the whole turn, whether partial data was kept and the time
since the turn started. Without a shared progress the operator counts, itself, the provider
events that passed it (a batch as its events; ``AttemptReset`` and ``Fallback`` marks are not
events), and ``partial`` is ``False``: only the shadow guard's fold knows it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, SingleAssignmentDisposable
from reactivex.internal import curry_flip

from .._batching import event_count
from ..events import AttemptReset, Fallback
from ..resilience.progress import TurnProgress, total_timeout
from ._scheduling import clock, resolve_scheduler

__all__ = ["total_deadline_"]

_T = TypeVar("_T")


@curry_flip
def total_deadline_(
    source: Observable[_T],
    seconds: float | None,
    progress: TurnProgress | None = None,
    scheduler: abc.SchedulerBase | None = None,
) -> Observable[_T]:
    """See :func:`rxturn.operators.total_deadline`."""
    if seconds is None:
        return source

    def subscribe(
        observer: abc.ObserverBase[_T], scheduler_: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        sched = resolve_scheduler(scheduler, scheduler_)
        now = clock(sched)
        facts = progress if progress is not None else TurnProgress(now)
        deadline = facts.deadline_at
        if deadline is None:
            deadline = facts.started_at + seconds
        upstream = SingleAssignmentDisposable()

        def fire(_: abc.SchedulerBase, __: Any = None) -> None:
            upstream.dispose()
            error = total_timeout(seconds, facts, now())
            if progress is not None:
                progress.stamp(error)
            observer.on_error(error)

        timer = sched.schedule_relative(max(0.0, deadline - now()), fire)
        if progress is not None:  # the guard upstream counts the turn's events
            upstream.disposable = source.subscribe(observer, scheduler=scheduler_)
        else:

            def on_next(value: _T) -> None:
                if not _is_mark(value):
                    facts.events += event_count(value)
                observer.on_next(value)

            upstream.disposable = source.subscribe(
                on_next, observer.on_error, observer.on_completed, scheduler=scheduler_
            )
        return CompositeDisposable(timer, upstream)

    return Observable(subscribe)


def _is_mark(item: object) -> bool:
    """An ``AttemptReset`` or ``Fallback`` (alone, or as the one item of a batch): no event."""
    if type(item) is list:
        batch: list[object] = item  # pyright: ignore[reportUnknownVariableType]
        return len(batch) == 1 and isinstance(batch[0], AttemptReset | Fallback)
    return isinstance(item, AttemptReset | Fallback)
