"""The two paths of a turn: the handler's batched stream, and one non-streaming ``create``.

- **streaming**: the handler's batched stream (one item per network chunk) is *published*
  (:class:`Share`): one subscription to it, multicast to the routing
  (:class:`~.observers.TurnRouter`: the text streamer and the observers, event by event),
  to every ``engine.turn_streams`` subscription, and to the fold (``scan(fold_batch)`` →
  ``last``), in that order, then connected. ``AttemptReset`` wipes the fold; a ``Fallback``
  replaces it. With same-turn failover the published stream is the whole turn: a leg that
  fails definitively is followed, inside the same stream, by an ``AttemptReset`` and the
  next model's leg (``catch``). When the handler's ladder is the stream itself (no failover)
  and no thinking is kept, the fold of a batch the ladder forwards is the state its shadow
  guard has just folded it to (:meth:`_TurnSink.follow`): each event is folded once.
  The fold keeps thinking when :func:`rxturn.clients.keeps_thinking` says so for the client
  and options (the rescue's ``create`` follows the same options, so both paths agree).
- **non-streaming**: exactly one ``create`` raced against the cancel signal (checked first)
  and the turn timeout (none configured = an arm that never fires).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import Disposable
from reactivex.subject import Subject

from ..._batching import unbatch_
from ...errors import StreamTimeoutError, TruncatedStreamError
from ...events import HandlerEvent
from ...fold import INITIAL_STATE, TurnState, fold_batch
from ...messages import Message
from ...resilience.cancel import CancelToken
from ...sources import subscribe_driving
from ..handler._ladder import Ladder
from ..observation.observers import TurnRouter
from ..records._results import AttemptStats
from ..turn._race import race

__all__ = ["Composed", "TurnSource", "TurnStream", "create_path", "failover_stream", "stream_path"]

log = logging.getLogger("rxturn.engine")


class TurnStream:
    """One streaming turn's handler events, as ``engine.turn_streams`` hands them out.

    Subscribe to :attr:`batches` (one list per network chunk: cheapest) or :attr:`events`
    (one item per event) **while handling the** ``engine.turn_streams`` **emission**: the turn
    starts right after, and a late subscriber misses what went before (it is a hot stream).
    You see exactly what the engine folds: provider events, ``AttemptReset`` before every
    attempt after the first (also before a same-turn failover to the next model), and a final
    ``Fallback`` when the non-streaming rescue served. Fold with ``scan(fold_batch,
    INITIAL_STATE)`` (or ``fold_handler`` per event) and nothing of a failed attempt reaches
    the reply. The stream completes when the turn's stream ends and errors with the turn's
    error. A subscriber that raises is logged and dropped; the turn goes on.

    Attributes:
        turn: the turn's index in its run.
        model: the model the turn started on.
    """

    __slots__ = ("_shared", "model", "turn")

    def __init__(self, turn: int, model: str, shared: Share) -> None:
        self.turn = turn
        self.model = model
        self._shared = shared

    def __repr__(self) -> str:
        return f"TurnStream(turn={self.turn}, model={self.model!r})"

    @property
    def batches(self) -> Observable[list[HandlerEvent]]:
        """The turn's items as lists (never empty; treat them as read-only)."""
        shared = self._shared

        def subscribe(
            observer: abc.ObserverBase[list[HandlerEvent]],
            scheduler: abc.SchedulerBase | None = None,
        ) -> abc.DisposableBase:
            return shared.add(_Isolated(observer))

        return Observable(subscribe)

    @property
    def events(self) -> Observable[HandlerEvent]:
        """The turn's items one by one."""
        return unbatch_(self.batches)


class _Isolated(abc.ObserverBase[Any]):
    """A user's subscriber of a turn: what it raises is logged and it is dropped."""

    __slots__ = ("_done", "_observer")

    def __init__(self, observer: abc.ObserverBase[Any]) -> None:
        self._observer = observer
        self._done = False

    def on_next(self, value: Any) -> None:
        if self._done:
            return
        try:
            self._observer.on_next(value)
        except Exception:
            self._done = True
            log.exception("a turn_streams subscriber raised; it is dropped, the turn goes on")

    def on_error(self, error: Exception) -> None:
        if self._done:
            return
        self._done = True
        try:
            self._observer.on_error(error)
        except Exception:
            log.exception("a turn_streams subscriber raised in on_error")

    def on_completed(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            self._observer.on_completed()
        except Exception:
            log.exception("a turn_streams subscriber raised in on_completed")


class Share(abc.ObserverBase[list[HandlerEvent]]):
    """The turn's multicast: one subscription to the handler stream, its items to every
    subscriber in order (``publish`` without a Subject, a lock or an observer hop per
    subscriber: one emission per batch reaches each subscriber as one plain call)."""

    __slots__ = ("_error", "_observers", "_stopped")

    def __init__(self) -> None:
        self._observers: tuple[abc.ObserverBase[list[HandlerEvent]], ...] = ()
        self._stopped = False
        self._error: Exception | None = None

    def add(self, observer: abc.ObserverBase[list[HandlerEvent]]) -> abc.DisposableBase:
        """Subscribe ``observer`` (hot: it sees what comes next); dispose to let go. After
        the end, a new subscriber gets the end at once (as a ``Subject`` does)."""
        if self._stopped:
            if self._error is not None:
                observer.on_error(self._error)
            else:
                observer.on_completed()
            return Disposable()
        self._observers = (*self._observers, observer)

        def remove() -> None:
            self._observers = tuple(o for o in self._observers if o is not observer)

        return Disposable(remove)

    def on_next(self, value: list[HandlerEvent]) -> None:
        for observer in self._observers:
            observer.on_next(value)

    def on_error(self, error: Exception) -> None:
        observers, self._observers, self._stopped = self._observers, (), True
        self._error = error
        for observer in observers:
            observer.on_error(error)

    def on_completed(self) -> None:
        observers, self._observers, self._stopped = self._observers, (), True
        for observer in observers:
            observer.on_completed()


class TurnSource(Protocol):
    """How a turn's stream is started: a handler's :class:`~.handler.TurnPlan`, or
    :class:`Composed` around an Observable (same-turn failover)."""

    def subscribe_lists(
        self,
        observer: abc.ObserverBase[list[HandlerEvent]],
        scheduler: abc.SchedulerBase | None = None,
    ) -> abc.DisposableBase: ...


class Composed:
    """An Observable of batches as a :class:`TurnSource`."""

    __slots__ = ("_stream",)

    def __init__(self, stream: Observable[list[HandlerEvent]]) -> None:
        self._stream = stream

    def subscribe_lists(
        self,
        observer: abc.ObserverBase[list[HandlerEvent]],
        scheduler: abc.SchedulerBase | None = None,
    ) -> abc.DisposableBase:
        return self._stream.subscribe(observer, scheduler=scheduler)


class _TurnSink(abc.ObserverBase[list[HandlerEvent]]):
    """The one subscriber of a turn's stream, in this order per batch: the routing (text
    streamer, observers, ``engine.events``), the user's turn streams (a :class:`Share`, when
    anybody subscribed ``engine.turn_streams``), then the fold (``scan(fold_batch)`` →
    ``last``: ``settled``, with the last ``state`` or an ``error``, and ``done`` set when the
    turn's task waits for it).

    A turn whose stream ends while its own task drives it (the usual turn: one attempt) never
    waits, so ``done`` is made only when the stream is still running once the task is free.
    """

    __slots__ = ("_folding", "_ladder", "_router", "_share", "done", "error", "settled", "state")

    def __init__(self, router: TurnRouter, share: Share | None, seed: TurnState) -> None:
        self._router = router
        self._share = share
        self._folding = True
        self._ladder: Ladder | None = None
        self.state = seed
        self.settled = False
        self.error: Exception | None = None
        self.done: asyncio.Future[TurnState] | None = None

    def on_next(self, value: list[HandlerEvent]) -> None:
        self._router.on_next(value)
        if self._share is not None:
            self._share.on_next(value)
        if self._folding:
            ladder = self._ladder
            if ladder is not None and ladder.forwarded is value:
                # the ladder's shadow guard has just folded this batch: the same fold from the
                # same state (see follow), so its state is this fold's, and it accepted it
                self.state = ladder.guard.shadow
                return
            try:
                self.state = fold_batch(self.state, value)
            except Exception as error:  # as scan would: the fold's error ends the turn
                self._folding = False
                self._router.stop()
                self._settle(error)

    def follow(self, ladder: Ladder | None) -> None:
        """Take the fold's state from ``ladder``'s shadow guard for every batch it hands this
        sink itself (:attr:`Ladder.forwarded`), rather than folding it a second time.

        Only when the fold starts from :data:`~rxturn.fold.INITIAL_STATE` (the guard's, per
        attempt: thinking is not kept) and the ladder is this sink's only source: then before
        each attempt the sink's state is the initial one too (the turn's start, or the
        ``AttemptReset`` the ladder sends ahead of a retry), the guard has folded exactly the
        batches the ladder forwarded since, and a batch the guard took is one the fold takes.
        Every other item (the ladder's ``AttemptReset`` and ``Fallback``, a batch of a source
        the ladder does not hand over itself) is folded here as before. ``None``: stop following
        (once the stream is disposed).
        """
        self._ladder = ladder

    def on_error(self, error: Exception) -> None:
        self._end(error)

    def on_completed(self) -> None:
        self._end(None)

    def _end(self, error: Exception | None) -> None:
        self._router.stop()
        # the share keeps the turn's error, whose traceback holds the frames that drove the
        # turn into this sink: held here after the end, the share would make a cycle
        share, self._share = self._share, None
        if share is not None:
            if error is None:
                share.on_completed()
            else:
                share.on_error(error)
        if self._folding:
            self._folding = False
            self._settle(error)

    def _settle(self, error: Exception | None) -> None:
        """The fold's outcome, once (both callers have stopped the routing first)."""
        if self.settled:
            return
        self.settled = True
        done = self.done
        if done is None:  # the turn's task reads it once it is free
            self.error = error
            return
        if done.done():
            return
        if error is None:
            done.set_result(self.state)
        else:
            done.set_exception(error)


async def stream_path(
    source: TurnSource,
    scheduler: abc.SchedulerBase,
    router: TurnRouter,
    stats: AttemptStats,
    publish_to: Subject[TurnStream] | None = None,
    turn: tuple[int, str] = (0, ""),
    seed: TurnState = INITIAL_STATE,
    drive: bool = True,
) -> Message:
    """Run the turn's stream to its last fold state; the message it folded to.

    ``stats.rescued`` says whether a ``Fallback`` served the reply (then no ``MessageStop`` is
    owed); a stream that completes without either is truncated. ``publish_to`` (when it has
    subscribers) gets a :class:`TurnStream` for ``turn`` (its index and model) before the
    stream starts. ``seed`` is the fold's first state (:func:`rxturn.fold.initial_state`:
    whether thinking is kept). ``drive``: the turn's task drives its first attempt's IO itself
    (not when each attempt must be sent in a context of its own: an observer's
    ``on_attempt_start`` hands one out).
    """
    loop = asyncio.get_running_loop()
    share: Share | None = None
    if publish_to is not None:
        share = Share()
        try:
            publish_to.on_next(TurnStream(turn[0], turn[1], share))
        except Exception:
            log.exception("engine.turn_streams refused the turn's stream; the turn goes on")
    # The turn's task has nothing to do but wait for its reply: it drives the first attempt's
    # IO itself rather than a task of its own (rxturn.sources, "Driven by the subscriber's own
    # task"); later attempts (retries, a hedge, a rescue) get their own tasks.
    sink = _TurnSink(router, share, seed)
    if drive:
        connection, first = subscribe_driving(loop, source.subscribe_lists, sink, scheduler)
    else:
        connection, first = source.subscribe_lists(sink, scheduler), None
    if type(connection) is Ladder and seed is INITIAL_STATE:
        # the handler's ladder drives the turn straight into the sink: its shadow fold is the
        # reply's (batches it forwarded while subscribing, if any, the sink folded itself)
        sink.follow(connection)
    try:
        if first is not None:
            await first.drive()
        if not sink.settled:  # later attempts run on tasks of their own: wait for them
            sink.done = loop.create_future()
            state = await sink.done
        elif sink.error is not None:
            error, sink.error = sink.error, None
            try:
                raise error
            finally:  # this frame is in its traceback: holding it, here or in the sink, is a cycle
                error = None
        else:
            state = sink.state
    finally:
        connection.dispose()
        # the ladder holds the sink and the sink (following it) the ladder: without this the
        # turn's objects would wait for the cycle collector instead of going with the turn
        sink.follow(None)
        # the future holds the turn's error, whose traceback holds this frame (and the sink)
        done, sink.done = sink.done, None
        if done is not None and done.done() and not done.cancelled():
            done.exception()  # an error that lost to an outer cancel is still retrieved
        # the share keeps the turn's error (for late subscribers), whose traceback holds this
        # frame: holding the share here would make a cycle
        done = share = None
    if not (state.completed or stats.rescued):
        raise TruncatedStreamError(0)
    return state.message()


def failover_stream(
    first: Observable[list[HandlerEvent]],
    next_leg: Callable[[Exception], Observable[list[HandlerEvent]] | None],
) -> Observable[list[HandlerEvent]]:
    """``first``, and on its error whatever ``next_leg(error)`` gives (itself failing over the
    same way); ``None`` lets the error out."""

    def on_error(error: Exception, _: Observable[Any]) -> Observable[list[HandlerEvent]]:
        leg = next_leg(error)
        if leg is None:
            return reactivex.throw(error)
        return failover_stream(leg, next_leg)

    return first.pipe(ops.catch(on_error))


async def create_path(
    create: Callable[[], Coroutine[Any, Any, Message]],
    cancel_token: CancelToken,
    timeout: float | None,
    scheduler: abc.SchedulerBase,
    context: contextvars.Context | None = None,
) -> Message:
    """One non-streaming attempt raced against cancel (checked first) and the timeout
    (:func:`~._race.race`); the request is sent from a task running in ``context`` when one is
    given."""

    def expired() -> Message:
        after = timeout or 0.0
        raise StreamTimeoutError("total", after=after, events=0, partial=False, elapsed=after)

    return await race(create(), cancel_token, timeout, scheduler, expired, context=context)
