"""``attempt_guard``: accept an attempt's events only if the fold accepts them
(docs/behaviour.md §2.3, "The shadow fold").

An Rx shell over :class:`~rxturn.resilience.guard.ShadowGuard`, whose docstring holds the rules
(the shadow fold's verdicts, truncation, batches and their accepted prefix). Per subscription:
the turn's :class:`~rxturn.operators.TurnProgress` starts an attempt (a fresh shadow); each item
gets the guard's verdict (a batch, one verdict for its events); an accepted item is counted and
forwarded; a rejected one ends the attempt with the fold's error after the batch's accepted
prefix; completion without ``MessageStop`` ends it with the truncation; an empty batch gets the
guard's :data:`~rxturn.resilience.guard.EMPTY`: nothing is forwarded.
"""

from __future__ import annotations

from typing import TypeVar, cast

from reactivex import Observable, abc
from reactivex.disposable import SingleAssignmentDisposable
from reactivex.internal import curry_flip

from ..events import EventBatch, StreamEvent
from ..resilience.guard import EMPTY
from ..resilience.progress import TurnProgress

__all__ = ["attempt_guard_"]

#: An attempt's items: single events, or batches of them (from ``stream_batches``).
_E = TypeVar("_E", bound=StreamEvent | EventBatch)


def _no_clock() -> float:
    return 0.0


@curry_flip
def attempt_guard_(source: Observable[_E], progress: TurnProgress | None = None) -> Observable[_E]:
    """See :func:`rxturn.operators.attempt_guard`."""

    def subscribe(
        observer: abc.ObserverBase[_E], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        facts = progress if progress is not None else TurnProgress(_no_clock)
        facts.begin_attempt()
        guard = facts.guard
        forward = observer.on_next
        upstream = SingleAssignmentDisposable()

        def on_next(item: _E) -> None:
            if type(item) is list:  # a batch
                batch = cast("list[StreamEvent]", item)
                error = guard.batch(batch)
                if error is not None:
                    if error is EMPTY:
                        return
                    upstream.dispose()
                    accepted = guard.accepted
                    if accepted:
                        facts.events += accepted
                        forward(cast(_E, batch[:accepted]))
                    observer.on_error(error)
                    return
                facts.events += len(batch)
                forward(item)
                return
            error = guard.event(cast(StreamEvent, item))
            if error is not None:
                upstream.dispose()
                observer.on_error(error)
                return
            facts.events += 1
            forward(item)

        def on_completed() -> None:
            error = guard.truncated(facts.events)
            if error is None:
                observer.on_completed()
            else:
                observer.on_error(error)

        upstream.disposable = source.subscribe(
            on_next, observer.on_error, on_completed, scheduler=scheduler
        )
        return upstream

    return Observable(subscribe)
