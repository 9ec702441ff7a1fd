"""Batches and single events: ``unbatch_``, ``as_batches_`` and ``event_count``.

These sit below both the clients (``HttpClient.stream`` is ``stream_batches`` unbatched) and
the operators (the deadlines and the retry ladder count a batch as its events; the façade
exports :func:`rxturn.operators.unbatch` and :func:`rxturn.operators.as_batches`), so that
neither layer imports the other.

A client's ``stream_batches`` emits one :data:`~rxturn.events.EventBatch` per network chunk, and
the stream handler's operators accept either shape item by item (a ``list`` is a batch, anything
else one event), so the handler can run a whole turn at a cost per *chunk* for everything but
the events' own decoding and folding. These two operators turn such a stream into one shape:

- ``unbatch`` — every event on its own, for the per-event Observables (``client.stream``,
  ``StreamHandler.stream_turn``); a single item passes as it is;
- ``as_batches`` — lists only, for consumers that loop over batches (the engine): a single
  item (``AttemptReset``, ``Fallback``, an event from a per-event client) becomes ``[item]``.

An empty batch (a client of your own may emit one for a chunk that decoded to nothing) is no
event: the shadow guard's verdict on it is ``EMPTY`` (:mod:`rxturn.resilience.guard`), so the
handler forwards nothing where batches enter, and ``as_batches`` never hands one on, so a
consumer may read ``batch[0]``.

A batch is a ``Sequence`` in the signatures (read-only, so a batch of stream events is also a
batch of handler items) and a ``list`` at run time: ``type(item) is list`` tells the shapes
apart, as everywhere on the hot path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar, cast

from reactivex import Observable, abc

__all__ = ["as_batches_", "event_count", "unbatch_"]

_T = TypeVar("_T")


def unbatch_(source: Observable[_T | Sequence[_T]]) -> Observable[_T]:
    """See :func:`rxturn.operators.unbatch`."""

    def subscribe(
        observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        forward = observer.on_next

        def on_next(item: _T | Sequence[_T]) -> None:
            if type(item) is list:
                for event in cast("list[_T]", item):
                    forward(event)
            else:
                forward(cast("_T", item))

        return source.subscribe(
            on_next, observer.on_error, observer.on_completed, scheduler=scheduler
        )

    return Observable(subscribe)


def as_batches_(source: Observable[_T | Sequence[_T]]) -> Observable[list[_T]]:
    """See :func:`rxturn.operators.as_batches`."""

    def subscribe(
        observer: abc.ObserverBase[list[_T]], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        forward = observer.on_next

        def on_next(item: _T | Sequence[_T]) -> None:
            if type(item) is not list:
                forward([cast("_T", item)])
            elif item:  # an empty batch is no event: never handed on
                forward(cast("list[_T]", item))

        return source.subscribe(
            on_next, observer.on_error, observer.on_completed, scheduler=scheduler
        )

    return Observable(subscribe)


def event_count(item: object) -> int:
    """How many events an item carries: a batch its length, anything else one."""
    return len(cast("list[object]", item)) if type(item) is list else 1
