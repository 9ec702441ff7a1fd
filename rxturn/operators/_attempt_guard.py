"""``attempt_guard``: accept an attempt's events only if the fold accepts them
(docs/behaviour.md §2.3, "The shadow fold").

Every provider event is folded into a *shadow* state before it is forwarded, so the handler
knows what a consumer's fold will know, at the same event:

- an event the fold rejects (a closed tool block with invalid JSON, a lane event before
  ``MessageStart``) fails the attempt with the fold's typed error, and that event is **not**
  forwarded: a consumer never sees a half-applied reply;
- a stream that completes without ``MessageStop`` is truncated, whatever it carried:
  :class:`~rxturn.errors.TruncatedStreamError`, which the retry ladder treats as transient;
- the shadow answers ``has_partial_data`` and the usage the attempt reported, for timeout errors
  and ``AttemptReset``.

Cost: the shadow fold is the only real per-event work of the handler, so runs of deltas are
not folded one by one. Between two structural events the open lanes do not change, so consecutive
deltas with the same index and kind land in the same lane:

- a text delta repeating the lane of the text delta just before it is forwarded without folding:
  the lane is already non-empty, and no verdict depends on its exact text;
- tool-JSON deltas repeating the previous one's lane are collected and folded as one joined
  fragment just before the next other event (the JSON must be exact: it is parsed at the close);
- thinking deltas are never stored by the fold, so once the reply has started they are skipped.

Every verdict is therefore exactly the fold's, at the same event; only the shadow's text is
incomplete, and the consumer's own fold builds the reply.

A batch (an :data:`~rxturn.events.EventBatch` list) gets the same checks event by event; if one
is rejected, the events before it go on as a shorter batch, then the error.
"""

from __future__ import annotations

from typing import TypeVar, cast

from reactivex import Observable, abc
from reactivex.disposable import SingleAssignmentDisposable
from reactivex.internal import curry_flip

from ..errors import TruncatedStreamError
from ..events import Delta, EventBatch, StreamEvent
from ..fold import fold
from ._progress import TurnProgress

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
        forward = observer.on_next
        upstream = SingleAssignmentDisposable()
        started = False  # the shadow has folded MessageStart: deltas can no longer fail
        repeat_index = -1  # lane index of the previous event, if a folded non-empty text delta
        pending_index = -1  # lane index of the collected tool-JSON run, if any
        pending: list[str] = []

        def flush() -> None:
            facts.shadow = fold(facts.shadow, Delta(pending_index, "".join(pending), "tool_json"))
            pending.clear()

        def accept(event: StreamEvent) -> None:
            """Fold one event into the shadow unless a shortcut above applies (raises when the
            fold rejects it)."""
            nonlocal started, repeat_index, pending_index
            if pending:
                flush()
            facts.shadow = state = fold(facts.shadow, event)
            started = state.started
            repeat_index = pending_index = -1
            if type(event) is Delta:
                if event.kind == "text":
                    if event.text:
                        repeat_index = event.index
                elif event.kind == "tool_json":
                    pending_index = event.index

        def on_next(item: _E) -> None:
            if type(item) is list:  # a batch
                on_batch(item)
                return
            event = cast(StreamEvent, item)
            if type(event) is Delta and started:
                kind = event.kind
                if kind == "text":
                    if event.index == repeat_index:
                        facts.events += 1
                        forward(item)
                        return
                elif kind == "tool_json":
                    if event.index == pending_index:
                        pending.append(event.text)
                        facts.events += 1
                        forward(item)
                        return
                else:  # thinking: never stored
                    facts.events += 1
                    forward(item)
                    return
            try:
                accept(event)
            except Exception as error:  # the fold's verdict: this attempt failed here
                upstream.dispose()
                observer.on_error(error)
                return
            facts.events += 1
            forward(item)

        def on_batch(batch: EventBatch) -> None:
            """The same checks over a batch; forward what precedes a rejected event, if any.
            An empty batch is no event: nothing is forwarded."""
            if not batch:
                return
            delta = Delta
            position = 0
            try:
                for position, event in enumerate(batch):  # noqa: B007 - kept for the error
                    if type(event) is delta and started:
                        kind = event.kind
                        if kind == "text":
                            if event.index == repeat_index:
                                continue
                        elif kind == "tool_json":
                            if event.index == pending_index:
                                pending.append(event.text)
                                continue
                        else:  # thinking: never stored
                            continue
                    accept(event)
            except Exception as error:  # the fold's verdict: this attempt failed here
                upstream.dispose()
                if position:
                    facts.events += position
                    forward(cast(_E, batch[:position]))
                observer.on_error(error)
                return
            facts.events += len(batch)
            forward(cast(_E, batch))

        def on_completed() -> None:
            if facts.shadow.completed:
                observer.on_completed()
            else:
                observer.on_error(TruncatedStreamError(facts.events))

        upstream.disposable = source.subscribe(
            on_next, observer.on_error, on_completed, scheduler=scheduler
        )
        return upstream

    return Observable(subscribe)
