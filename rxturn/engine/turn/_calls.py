"""One turn's call: the cancel guard, the two paths, same-turn failover, the observer hooks.

:class:`TurnCalls` is the part of :class:`~rxturn.engine.TurnEngine` that makes a prepared
turn's call and records its outcome (:mod:`rxturn.engine.turn._outcome`):

- **streaming**: one subscription to the handler's batched stream, multicast to the routing
  (text streamer, observers, ``engine.events``), to ``engine.turn_streams`` and to the fold;
  with ``failover=True`` a leg that fails definitively continues, in the same stream, on the
  next model of the chain after an ``AttemptReset``;
- **non-streaming**: exactly one ``create`` per leg, raced against the cancel signal and the
  turn timeout.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import msgspec
from reactivex import Observable, abc
from reactivex.subject import Subject

from ...clients._base import ModelClient, keeps_thinking
from ...events import AttemptReset, HandlerEvent
from ...fold import initial_state
from ...messages import Message, Request, RequestOptions
from ...operators._scheduling import resolve_scheduler
from ...resilience.fallback import FallbackManager
from ...resilience.hedge import HedgePolicy
from ..agent._loop import AgentLoop
from ..failover._legs import TurnLegs, fails_over
from ..fanout._turn_stream import (
    Composed,
    TurnSource,
    TurnStream,
    create_path,
    failover_stream,
    stream_path,
)
from ..handler._handler import StreamHandler
from ..observation.observers import ObserverSet
from ..records._attempts import AttemptHooks
from ..records._results import TextStreamer, TurnMode
from ..records.audit import Turn
from ._outcome import record_turn_failure, record_turn_success

__all__ = ["TurnCalls"]

log = logging.getLogger("rxturn.engine")


class TurnCalls(AgentLoop):
    """``_do_turn`` and what it runs on: the streaming and non-streaming paths, failover."""

    # provided by the engine
    client: ModelClient
    handler: StreamHandler | None
    fallback: FallbackManager | None
    text_streamer: TextStreamer | None
    mode: TurnMode
    scheduler: abc.SchedulerBase | None
    failover: bool
    hedge: HedgePolicy | None
    _events: Subject[HandlerEvent] | None
    _turn_streams: Subject[TurnStream] | None

    def _note_routed_model(self, served: str) -> None:
        raise NotImplementedError

    async def _do_turn(self, legs: TurnLegs, request: Request, options: RequestOptions) -> Message:
        """One turn's call: cancel guard, one of two paths, outcome recording."""
        try:
            self.cancel_token.raise_if_cancelled()
            if self.mode == "streaming":
                message = await self._stream_turn(legs, request, options)
            else:
                message = await self._create_turn(legs, request, options)
        except BaseException as exc:
            if isinstance(exc, Exception) and not legs.failure_recorded:
                self._record_failure(legs, exc)
            raise
        record_turn_success(
            self.fallback,
            self.observers,
            turn=legs.turn,
            served=legs.served,
            usage=message.usage,
            routed=self._is_routed(legs),
        )
        return message

    # ----------------------------------------------------------------------------- observers

    def _attempt_hooks(self, turn: int, turn_id: int) -> AttemptHooks | None:
        observers = self.observers
        if observers.interested("on_attempt_start") or observers.interested("on_attempt_end"):
            return AttemptHooks(observers, turn, turn_id)
        return None

    def _request_end(
        self,
        turn: int,
        turn_id: int,
        record: Turn,
        message: Message | None,
        error: BaseException | None,
    ) -> None:
        if self.observers.interested("on_request_end"):
            self.observers.emit(
                "on_request_end",
                turn=turn,
                turn_id=turn_id,
                record=record,
                message=message,
                error=error,
            )

    # ----------------------------------------------------------------------------- failover

    def _is_routed(self, legs: TurnLegs) -> bool:
        """Whether the breaker routes to the model serving this leg (its outcome counts)."""
        return legs.leg == 0 or (
            self.fallback is not None and self.fallback.routed_model() == legs.served
        )

    def _record_failure(self, legs: TurnLegs, error: BaseException) -> None:
        """The leg's failure on the breaker and the observers (docs/behaviour.md §4.2)."""
        record_turn_failure(
            self.fallback,
            self.observers,
            turn=legs.turn,
            served=legs.served,
            error=error,
            routed=self._is_routed(legs),
        )

    def _can_fail_over(self, legs: TurnLegs) -> bool:
        return (
            self.failover
            and self.fallback is not None
            and legs.turn >= 0
            and self.fallback.failover_model(legs.asked()) is not None
        )

    def _fail_over(self, legs: TurnLegs, error: BaseException) -> str | None:
        """Record the leg's failure and pick the next model; ``None``: the turn fails with it."""
        if not (self._can_fail_over(legs) and fails_over(error)):
            return None
        assert self.fallback is not None
        self._record_failure(legs, error)
        legs.failure_recorded = True
        target = self.fallback.failover_model(legs.asked())
        if target is None:
            return None
        log.info("turn %d fails over from %r to %r: %s", legs.turn, legs.served, target, error)
        legs.switch(target)
        self._note_routed_model(target)
        return target

    def _failover_reset(self, legs: TurnLegs, error: BaseException) -> AttemptReset:
        records = legs.log.records
        return AttemptReset(
            attempt=legs.streaming_attempts() + 1,
            reason=f"failover to {legs.served}: {error}",
            error_type=type(error).__name__,
            usage=records[-1].usage if records else None,
        )

    # ----------------------------------------------------------------------------- the paths

    def _resolve_scheduler(self) -> abc.SchedulerBase:
        return resolve_scheduler(self.scheduler)

    async def _stream_turn(
        self, legs: TurnLegs, request: Request, options: RequestOptions, *, quiet: bool = False
    ) -> Message:
        handler = self.handler or StreamHandler.passthrough()
        scheduler = self._resolve_scheduler()
        plan = handler.plan_turn(
            self.client,
            request,
            options,
            self.cancel_token,
            scheduler=scheduler,
            watcher=legs.log,
            give_up_beyond_deadline=not quiet and self._can_fail_over(legs),
        )
        if self.hedge is not None and not quiet:
            from ..handler._hedging import TurnRace

            plan.race = TurnRace(
                self.hedge, self.client, request, options, legs, plan, self.fallback, self.observers
            )
        source: TurnSource = plan
        if self.failover and not quiet:
            legs_after = _NextLeg(self, legs, request, options)
            source = Composed(failover_stream(Observable(plan.subscribe_lists), legs_after))
        # The fold keeps thinking when the request enables it (or the options say so).
        seed = initial_state(keep_thinking=keeps_thinking(self.client, options))
        if quiet:
            router = _QUIET.router(legs.turn, on_control=legs.stats.note)
            return await stream_path(source, scheduler, router, legs.stats, seed=seed)
        events = self._events
        router = self.observers.router(
            legs.turn,
            streamer=self.text_streamer,
            sink=events if events is not None and events.observers else None,
            on_control=legs.stats.note,
            on_first=self._first_chunk(legs),
        )
        streams = self._turn_streams
        return await stream_path(
            source,
            scheduler,
            router,
            legs.stats,
            publish_to=streams if streams is not None and streams.observers else None,
            turn=(legs.turn, legs.served),
            seed=seed,
        )

    def _first_chunk(self, legs: TurnLegs) -> Callable[[], None] | None:
        hooks = legs.hooks
        if hooks is None or not self.observers.interested("on_first_chunk"):
            return None
        observers, turn, turn_id = self.observers, hooks.turn, hooks.turn_id

        def first() -> None:
            observers.emit("on_first_chunk", turn=turn, turn_id=turn_id)

        return first

    async def _create_turn(
        self, legs: TurnLegs, request: Request, options: RequestOptions, *, quiet: bool = False
    ) -> Message:
        handler = self.handler or StreamHandler.passthrough()
        scheduler = self._resolve_scheduler()
        deadline = handler.timeouts.total
        while True:
            log_ = legs.log
            context = log_.attempt_started("create")
            try:
                message = await create_path(
                    functools.partial(self.client.create, request, options),
                    self.cancel_token,
                    deadline,
                    scheduler,
                    context,
                )
            except BaseException as exc:
                log_.attempt_ended("create", exc, None)
                target = None if quiet else self._fail_over(legs, exc)
                if target is None:
                    raise
                self.observers.emit(
                    "on_attempt_reset", turn=legs.turn, reset=self._failover_reset(legs, exc)
                )
                options = msgspec.structs.replace(options, model=target)
                deadline = legs.deadline(handler.timeouts.total, handler.timeouts.first_event)
                continue
            log_.attempt_ended("create", None, message.usage)
            return message


_QUIET = ObserverSet()


def _prefixed(
    first: list[HandlerEvent], then: Observable[list[HandlerEvent]]
) -> Observable[list[HandlerEvent]]:
    """``first`` as one batch, synchronously at subscription, then ``then``."""

    def subscribe(
        observer: abc.ObserverBase[list[HandlerEvent]],
        scheduler: abc.SchedulerBase | None = None,
    ) -> abc.DisposableBase:
        observer.on_next(first)
        return then.subscribe(observer, scheduler=scheduler)

    return Observable(subscribe)


class _NextLeg:
    """Same-turn failover's next leg: what follows a leg that failed definitively (``None``
    lets the error out), built only when a leg fails."""

    __slots__ = ("calls", "legs", "options", "request")

    def __init__(
        self, calls: TurnCalls, legs: TurnLegs, request: Request, options: RequestOptions
    ) -> None:
        self.calls = calls
        self.legs = legs
        self.request = request
        self.options = options

    def __call__(self, error: Exception) -> Observable[list[HandlerEvent]] | None:
        calls, legs = self.calls, self.legs
        target = calls._fail_over(legs, error)  # pyright: ignore[reportPrivateUsage]
        if target is None:
            return None
        reset = calls._failover_reset(legs, error)  # pyright: ignore[reportPrivateUsage]
        handler = calls.handler or StreamHandler.passthrough()
        timeouts = handler.timeouts
        plan = handler.plan_turn(
            calls.client,
            self.request,
            msgspec.structs.replace(self.options, model=target),
            calls.cancel_token,
            scheduler=calls._resolve_scheduler(),  # pyright: ignore[reportPrivateUsage]
            deadline=legs.deadline(timeouts.total, timeouts.first_event),
            watcher=legs.log,
            give_up_beyond_deadline=calls._can_fail_over(legs),  # pyright: ignore[reportPrivateUsage]
        )
        return _prefixed([reset], Observable(plan.subscribe_lists))
