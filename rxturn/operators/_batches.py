"""``unbatch`` and ``as_batches``: between the batched hot path and per-event Observables.

A client's ``stream_batches`` emits one :data:`~rxturn.events.EventBatch` per network chunk, and
the stream handler's operators accept either shape item by item (a ``list`` is a batch, anything
else one event), so the handler can run a whole turn at a cost per *chunk* for everything but
the events' own decoding and folding. These two operators turn such a stream into one shape:

- ``unbatch`` — every event on its own, for the per-event Observables (``client.stream``,
  ``StreamHandler.stream_turn``); a single item passes as it is;
- ``as_batches`` — lists only, for consumers that loop over batches (the engine): a single
  item (``AttemptReset``, ``Fallback``, an event from a per-event client) becomes ``[item]``.
"""

from __future__ import annotations

from typing import Any

from reactivex import Observable, abc

__all__ = ["as_batches_", "event_count", "unbatch_"]


def unbatch_(source: Observable[Any]) -> Observable[Any]:
    """See :func:`rxturn.operators.unbatch`."""

    def subscribe(
        observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        forward = observer.on_next

        def on_next(item: Any) -> None:
            if type(item) is list:
                for event in item:  # pyright: ignore[reportUnknownVariableType]
                    forward(event)
            else:
                forward(item)

        return source.subscribe(
            on_next, observer.on_error, observer.on_completed, scheduler=scheduler
        )

    return Observable(subscribe)


def as_batches_(source: Observable[Any]) -> Observable[list[Any]]:
    """See :func:`rxturn.operators.as_batches`."""

    def subscribe(
        observer: abc.ObserverBase[list[Any]], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        forward = observer.on_next

        def on_next(item: Any) -> None:
            forward(item if type(item) is list else [item])  # pyright: ignore[reportUnknownArgumentType]

        return source.subscribe(
            on_next, observer.on_error, observer.on_completed, scheduler=scheduler
        )

    return Observable(subscribe)


def event_count(item: Any) -> int:
    """How many events an item carries: a batch its length, anything else one."""
    return len(item) if type(item) is list else 1  # pyright: ignore[reportUnknownArgumentType]
