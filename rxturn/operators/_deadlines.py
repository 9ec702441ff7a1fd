"""``deadlines``: first-event and per-event (idle) timeouts of one attempt, one timer each.

docs/behaviour.md §2.3: until the attempt's first event the wait is ``first_event``, afterwards
``per_event``; each expiry with nothing new counts one consecutive timeout, an event resets the
count, and the attempt fails once the count reaches ``min(2, max_consecutive)`` while nothing has
arrived yet (an empty stream fails fast) or ``max_consecutive`` otherwise. Below the threshold the
attempt keeps waiting on the same stream.

Theory of operation. ``ops.timeout`` re-arms a timer per event, which costs a scheduler call
and an allocation for every delta of a long reply. Here an event only records the clock reading
(one cheap call) and bumps a counter. The single timer, when it fires, looks at those: if events
arrived since it was armed, the idle deadline is ``last_event + per_event`` and the timer re-arms
for whatever is left of it; if not, that is one consecutive timeout. So an attempt costs O(1) per
event and one live timer at any moment; the first event re-arms once if ``per_event`` ends
sooner than the pending first-event timer.

A batch (an :data:`~rxturn.events.EventBatch` list) arrived at one instant: it counts as its
events, read the clock once.

The error, :class:`~rxturn.errors.StreamTimeoutError`, says which deadline fired (``kind``
``"first_event"`` or ``"idle"``), how many events arrived, whether partial data was kept (from a
shared :class:`~rxturn.operators.TurnProgress`, when given) and how many expiries in a row.
"""

from __future__ import annotations

from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, SerialDisposable, SingleAssignmentDisposable
from reactivex.internal import curry_flip

from .._batching import event_count
from ..errors import StreamTimeoutError
from ._progress import TurnProgress
from ._scheduling import clock, resolve_scheduler

__all__ = ["deadlines_"]

_T = TypeVar("_T")

# Timers may fire a hair early (asyncio's clock resolution, virtual time's microsecond rounding);
# a deadline due within this many seconds counts as reached.
_SLACK = 1e-6


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
    fast_fail = min(2, max_consecutive)

    def subscribe(
        observer: abc.ObserverBase[_T], scheduler_: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        sched = resolve_scheduler(scheduler, scheduler_)
        now = clock(sched)
        started = now()
        timer = SerialDisposable()
        upstream = SingleAssignmentDisposable()
        forward = observer.on_next
        seen = 0  # events in this attempt
        last = started  # clock reading at the last event
        armed_from = started  # the current wait is measured from here …
        seen_at_arm = 0  # … and covers events after this count
        consecutive = 0

        def arm(delay: float, reference: float) -> None:
            nonlocal armed_from, seen_at_arm
            armed_from, seen_at_arm = reference, seen
            timer.disposable = sched.schedule_relative(max(0.0, delay), fire)

        def fire(_: abc.SchedulerBase, __: Any = None) -> None:
            nonlocal consecutive
            t = now()
            if seen > seen_at_arm:  # events arrived since arming: measure from the last one
                consecutive = 0
                reference, period = last, per_event
            else:
                reference, period = armed_from, first_event if seen == 0 else per_event
            if period is None:
                return
            due = reference + period
            if due - t > _SLACK:
                arm(due - t, reference)
                return
            consecutive += 1
            if consecutive < (fast_fail if seen == 0 else max_consecutive):
                arm(period, t)
                return
            upstream.dispose()
            observer.on_error(
                StreamTimeoutError(
                    "first_event" if seen == 0 else "idle",
                    after=period,
                    events=seen,
                    partial=progress.partial if progress is not None else False,
                    elapsed=t - started,
                    consecutive=consecutive,
                )
            )

        def on_first_event() -> None:
            # The wait switches from first_event to per_event: re-arm if that ends sooner.
            if per_event is None:
                timer.disposable = None
            elif first_event is None or armed_from + first_event > last + per_event:
                arm(per_event, last)

        def on_next(value: _T) -> None:
            nonlocal seen, last
            count = event_count(value)
            if count:  # an empty batch (a client of your own may send one) is no event
                last = now()
                first = seen == 0
                seen += count
                if first:
                    on_first_event()
            forward(value)

        if first_event is not None:
            arm(first_event, started)
        upstream.disposable = source.subscribe(
            on_next, observer.on_error, observer.on_completed, scheduler=scheduler_
        )
        return CompositeDisposable(upstream, timer)

    return Observable(subscribe)
