"""One turn, from its setup to its recorded outcome: the call on one of two paths.

:class:`TurnCalls` is the collaborator of :class:`~rxturn.engine.TurnEngine` (one per engine)
that runs a turn: it asks :class:`~rxturn.engine.turn._setup.TurnSetup` for the request and the
estimate, makes the call, records the outcome (:mod:`rxturn.engine.turn._outcome`) and the audit
entry. The call goes one of two ways:

- **streaming**: one subscription to the handler's batched stream, multicast to the routing
  (text streamer, observers, ``engine.events``), to ``engine.turn_streams`` and to the fold;
  with ``failover=True`` a leg that fails definitively continues, in the same stream, on the
  next model of the chain after an ``AttemptReset`` (:mod:`rxturn.engine.failover`);
- **non-streaming**: exactly one ``create`` per leg, raced against the cancel signal and the
  turn timeout; failover loops over the legs with the same steps.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar

import msgspec
from reactivex import Observable, abc
from reactivex.subject import Subject

from ...clients._base import create_message, keeps_thinking
from ...clients._request import requested_max_tokens
from ...cost import Pricer, pricer_for, prices_loaded, warm_up_prices
from ...errors import Cancelled, FallbackExhausted
from ...events import HandlerEvent
from ...fold import initial_state
from ...messages import Message, Request, RequestOptions, StopReason, ToolCallPart
from ...operators._scheduling import clock, resolve_scheduler
from ...resilience.cancel import CancelToken
from ...resilience.hedge import HedgePolicy
from ...resilience.verdicts import is_cancel
from ..context.tokens import (
    ContextEstimate,
    counter_loaded,
    prime_counter,
    warm_up_counter,
)
from ..context.window import Calibration
from ..failover._legs import TurnLegs, can_fail_over, fail_over, record_leg_failure
from ..failover._next_leg import NextLeg
from ..fanout._turn_stream import (
    Composed,
    TurnSource,
    TurnStream,
    create_path,
    failover_stream,
    stream_path,
)
from ..handler._handler import StreamHandler, TurnPlan
from ..observation.observers import ObserverSet
from ..records._attempts import AttemptHooks
from ..records._results import TextStreamer, TurnMode, TurnResult
from ..records.audit import Turn
from ._outcome import emit_turn_end, record_turn_success, turn_end_error
from ._race import race
from ._setup import SetupHost, TurnSetup, resolve_host

__all__ = ["CallsHost", "TurnCalls", "provider_name"]

log = logging.getLogger("rxturn.engine")

_PROVIDERS = {"anthropic": "anthropic", "openai": "openai", "ollama": "ollama"}


def provider_name(client: object) -> str:
    """The provider a client speaks to, as telemetry names it (``"anthropic"``, ``"openai"``,
    ``"ollama"``); a client of your own may say with a ``provider`` attribute, else its class
    name is used."""
    own = getattr(client, "provider", None)
    if isinstance(own, str) and own:
        return own
    wire = getattr(client, "wire_format", None)
    if isinstance(wire, str):
        for prefix, name in _PROVIDERS.items():
            if wire.startswith(prefix):
                return name
    return type(client).__name__


def client_pricer(client: object) -> Pricer:
    """The pricer of the attempts sent through ``client``: its provider's prices, found by its
    base URL first (the engine's client's, and a hedge's on another client)."""
    return pricer_for(provider_name(client), getattr(client, "base_url", None))


_turn_ids = itertools.count(1)
_T = TypeVar("_T")
# (an enum member read from its class costs several times a global's read on Python 3.11)
_END_TURN = StopReason.END_TURN
_TOOL_CALL = StopReason.TOOL_CALL


def _as_sent(client: object, options: RequestOptions) -> RequestOptions:
    """``options`` as the request carries them, for ``on_request``: with the client's default
    ``max_tokens`` when they set none (Anthropic's requests always carry one)."""
    tokens = requested_max_tokens(client, options)
    if tokens is None or tokens == options.max_tokens:
        return options
    return msgspec.structs.replace(options, max_tokens=tokens)


class CallsHost(SetupHost, Protocol):
    """What the turn's call reads on its engine (beyond what setup reads)."""

    handler: StreamHandler | None
    text_streamer: TextStreamer | None
    mode: TurnMode
    scheduler: abc.SchedulerBase | None
    failover: bool
    hedge: HedgePolicy | None
    cancel_token: CancelToken

    @property
    def calibration(self) -> Calibration: ...


class TurnCalls:
    """One turn (:meth:`turn`) and what it runs on: the two paths, the failover legs.

    Attributes:
        setup: the engine's turn setup.
        pricer: prices every attempt (``None`` without the ``rxturn[cost]`` extra).
        events: the engine's ``events`` Subject once someone asked for it.
        turn_streams: the engine's ``turn_streams`` Subject once someone asked for it.
        turn_started: when the last turn began (its ``on_turn_start``), on the engine's clock:
            a tool-calling turn's ``on_turn_end`` comes after its tool phase, timed from here.
    """

    __slots__ = (
        "_clock_cache",
        "_live",
        "events",
        "host",
        "pricer",
        "setup",
        "turn_started",
        "turn_streams",
    )

    def __init__(
        self,
        host: CallsHost,
        setup: TurnSetup,
        pricer: Pricer | None,
        live: Callable[[], CallsHost | None] | None = None,
    ) -> None:
        self.host = host
        self._live = live
        self.setup = setup
        self.pricer = pricer
        # made on first use: most engines never subscribe them
        self.events: Subject[HandlerEvent] | None = None
        self.turn_streams: Subject[TurnStream] | None = None
        self._clock_cache: tuple[abc.SchedulerBase, Callable[[], float]] | None = None
        self.turn_started = 0.0

    def live_host(self) -> CallsHost:
        """The engine itself for the length of one call (:func:`~._setup.resolve_host`): the
        weak proxy's indirection paid once, not on every attribute a turn reads."""
        return resolve_host(self._live, self.host)

    # ----------------------------------------------------------------------------- time

    def scheduler(self) -> abc.SchedulerBase:
        """The engine's scheduler, else asyncio on the running loop."""
        return resolve_scheduler(self.host.scheduler)

    def now(self) -> Callable[[], float]:
        """The engine's clock: its scheduler's (asyncio's loop time by default)."""
        return self.clock_of(self.scheduler())

    def clock_of(self, scheduler: abc.SchedulerBase) -> Callable[[], float]:
        """``scheduler``'s clock (the engine's scheduler, resolved)."""
        cached = self._clock_cache
        if cached is not None and cached[0] is scheduler:
            return cached[1]
        now = clock(scheduler)
        if self.host.scheduler is not None:
            self._clock_cache = (scheduler, now)
        return now

    # ----------------------------------------------------------------------------- one turn

    async def turn(
        self,
        transient: Sequence[Message],
        *,
        run_input: str | None,
        in_run: bool,
        scheduler: abc.SchedulerBase | None = None,
        tools_ran: bool = False,
    ) -> TurnResult:
        """One turn over the history (plus ``transient``): setup, the call, the outcome, the
        audit entry. ``run_input`` is the prompt of the run in progress, ``in_run`` whether one
        is (its tool phase then ends a tool-calling turn). ``scheduler``: the engine's, when the
        caller (a run) has resolved it already. ``tools_ran``: the run's tool phase came before
        this turn (a forced tool choice no longer applies: :meth:`TurnSetup.routed_options`)."""
        host, setup = self.live_host(), self.setup
        if scheduler is None:  # resolved once a turn (asyncio's asks for the loop)
            scheduler = resolve_scheduler(host.scheduler)
        now = self.clock_of(scheduler)
        if host.fallback is not None:
            if host.scheduler is not None:
                host.fallback.adopt_clock(now)
            try:
                host.fallback.begin_turn()
            except FallbackExhausted as exc:  # no model left: refused before any turn event
                _append_refused(host, setup.turn_input(run_input, host=host), exc)
                raise
        turn = len(host.session.audit.current_run.turns)
        query = setup.turn_input(run_input, host=host)
        try:  # before the request: a failure here is a failed turn too, with no attempt
            if self.pricer is not None and not prices_loaded():
                # the price data (about half a second to load, once per process) loads in a worker
                # thread, or this waits there for the load the engine started: not on the loop
                await _until_cancel(warm_up_prices(), host, scheduler)
            transients: Sequence[Message] = (
                await _until_cancel(setup.transients(turn, query, transient), host, scheduler)
                if setup.gathers(host=host)
                else transient
            )
            window = host.context_window
            # Nothing first-use between a turn's start and its request: a tokenizer still loading
            # is waited for only when the turn needs the estimate before its reply (compaction,
            # on_request, a hedge loser's offline estimate).
            loaded = counter_loaded(host.counter)
            estimate_first = (
                window is not None
                or loaded
                or (host.observers.listening and host.observers.interested("on_request"))
                or host.hedge is not None
            )
            estimate: ContextEstimate | None = None
            raw_estimate = 0
            if estimate_first:
                if not loaded:  # a tokenizer loads in a thread, not on the loop (a cancel ends it)
                    await _until_cancel(warm_up_counter(host.counter), host, scheduler)
                await _prime(host, transients)
                estimate, raw_estimate = setup.estimate(transients, host=host)
            if (
                window is not None
                and estimate is not None
                and window.should_compact(estimate.total)
            ):
                # Deferred turn (docs/behaviour.md §4.5): no turn events; compact, then run it once.
                await _until_cancel(setup.compact(estimate), host, scheduler)
                query = setup.turn_input(run_input, host=host)
                transients = await _until_cancel(
                    setup.transients(turn, query, transient), host, scheduler
                )
                await _prime(host, transients)
                estimate, raw_estimate = setup.estimate(transients, host=host)
                if window.should_compact(estimate.total):
                    log.warning(
                        "context still %d tokens after compaction (threshold %d); sending anyway",
                        estimate.total,
                        window.threshold,
                    )
            request = setup.build_request(transients, host=host)
            options = setup.routed_options(host=host, tools_ran=tools_ran)
            served = options.model or host.client.model
            setup.note_routed_model(served)
        except BaseException as exc:
            _append_refused(host, query, exc)
            raise
        observers = host.observers
        # (an observer's arguments built only for one that listens: ``listening`` first, an
        # attribute, and the engine without observers makes no call to find out)
        if observers.listening and observers.interested("on_turn_start"):
            observers.emit("on_turn_start", turn=turn, query=query)
        turn_id = next(_turn_ids)
        listeners = host.observers
        hooks = _attempt_hooks(listeners, turn, turn_id) if listeners.listening else None
        legs = TurnLegs(turn, served, now, hooks, self.pricer)
        legs.turn_id = turn_id
        legs.estimate = estimate.total if estimate is not None else None
        if observers.listening and observers.interested("on_request"):
            observers.emit(
                "on_request",
                turn=turn,
                turn_id=turn_id,
                model=served,
                request=request,
                options=_as_sent(host.client, options),
                provider=provider_name(host.client),
                base_url=host.client.base_url,
                stream=host.mode == "streaming",
                estimated_input_tokens=estimate.total if estimate is not None else 0,
            )
        started = self.turn_started = legs.started
        try:
            # the call: cancel guard, one of two paths, the leg's outcome recorded
            try:
                host.cancel_token.raise_if_cancelled()
                if host.mode == "streaming":
                    message = await self.stream_turn(
                        legs, request, options, scheduler=scheduler, host=host
                    )
                else:
                    message = await self.create_turn(legs, request, options, scheduler=scheduler)
            except BaseException as exc:
                if isinstance(exc, Exception) and not legs.failure_recorded:
                    record_leg_failure(legs, exc, host.fallback, host.observers)
                raise
            fallback = host.fallback
            if fallback is not None or host.observers.listening:  # (else it has nobody to tell)
                record_turn_success(
                    fallback,
                    host.observers,
                    turn=legs.turn,
                    served=legs.served,
                    usage=message.usage,
                    # (only the breaker reads it: not asked of the legs without one)
                    routed=fallback is not None and legs.is_routed(fallback),
                )
        except BaseException as exc:
            failed = _audit_record(host, legs, query, None, None, exc)
            host.session.audit.append(failed)
            _request_end(host.observers, turn, turn_id, failed, None, exc)
            host.observers.emit(
                "on_turn_end",
                turn=turn,
                success=False,
                error=turn_end_error(exc),
                duration_ms=(now() - started) * 1000,
                input_tokens=0,
                output_tokens=0,
            )
            raise
        if estimate is None:  # the request went out first; the reply is not in the history yet
            if not counter_loaded(host.counter):
                await warm_up_counter(host.counter)
            await _prime(host, transients)
            estimate, raw_estimate = setup.estimate(transients, host=host)
        usage = message.usage
        stop_reason = message.stop_reason or _END_TURN
        tool_calls = tuple(message.tool_calls)
        if tool_calls:
            message, tool_calls = _distinct_call_ids(message, tool_calls, host.session.history)
        if stop_reason is _END_TURN and tool_calls:
            stop_reason = _TOOL_CALL
        record = _audit_record(host, legs, query, message, stop_reason, None, tool_calls)
        if usage is not None:
            host.calibration.record_served(record.model, raw_estimate, usage.input_tokens)
        if host.observers.listening:
            _request_end(host.observers, turn, turn_id, record, message, None)
        if observers.listening and observers.interested("on_response"):  # (message.text: a join)
            observers.emit("on_response", turn=turn, text=message.text, usage=usage)
        session = host.session
        session.history.append(message)
        session.audit.append(record)
        result = TurnResult(
            turn=turn,
            message=message,
            stop_reason=stop_reason,
            usage=usage,
            model=record.model,
            attempts=record.attempts,
            rescued=record.rescued,
            discarded_usage=record.discarded_usage,
            attempt_log=record.attempt_log,
            billed_usage=record.billed_usage,
            cost=record.cost,
        )
        # With tool calls inside a run, the tool phase fires this turn's on_turn_end.
        if observers.listening and not (in_run and stop_reason is _TOOL_CALL):
            emit_turn_end(observers, now, result, started)
        return result

    # ----------------------------------------------------------------------------- failover

    def fail_over(self, legs: TurnLegs, error: BaseException) -> str | None:
        """Record the leg's failure and switch to the next model (``None``: the turn fails)."""
        host = self.host
        return fail_over(
            legs,
            error,
            host.fallback,
            host.observers,
            enabled=host.failover,
            note_model=self.setup.note_routed_model,
        )

    def plan_leg(
        self, legs: TurnLegs, request: Request, options: RequestOptions
    ) -> Observable[list[HandlerEvent]]:
        """The handled stream of a failover leg, within what is left of the turn's deadline."""
        host = self.live_host()
        timeouts = (host.handler or StreamHandler.passthrough()).timeouts
        plan = self._plan(
            host,
            legs,
            request,
            options,
            self.scheduler(),
            deadline=legs.deadline(timeouts.total, timeouts.first_event),
            give_up=can_fail_over(legs, host.fallback, host.failover),
        )
        return Observable(plan.subscribe_lists)

    def _plan(
        self,
        host: CallsHost,
        legs: TurnLegs,
        request: Request,
        options: RequestOptions,
        scheduler: abc.SchedulerBase,
        *,
        deadline: float | None,
        give_up: bool,
    ) -> TurnPlan:
        """One leg's plan from ``host``'s handler (passthrough when none is configured)."""
        handler = host.handler or StreamHandler.passthrough()
        return handler.plan_turn(
            host.client,
            request,
            options,
            host.cancel_token,
            scheduler=scheduler,
            deadline=deadline,
            watcher=legs,
            give_up_beyond_deadline=give_up,
        )

    # ----------------------------------------------------------------------------- the paths

    def stream_turn(
        self,
        legs: TurnLegs,
        request: Request,
        options: RequestOptions,
        *,
        quiet: bool = False,
        scheduler: abc.SchedulerBase | None = None,
        host: CallsHost | None = None,
    ) -> Coroutine[Any, Any, Message]:
        """The streaming call: its plan, router and fold seed built now, and the coroutine
        that runs it (:func:`stream_path`'s own: no coroutine of this method around it).
        ``scheduler`` and ``host`` (the engine): when the caller has resolved them already."""
        if host is None:
            host = self.live_host()
        if scheduler is None:
            scheduler = self.scheduler()
        plan = self._plan(
            host,
            legs,
            request,
            options,
            scheduler,
            deadline=None,
            # (failover off, the engine's default: not asked of the legs)
            give_up=not quiet
            and host.failover
            and can_fail_over(legs, host.fallback, host.failover),
        )
        if host.hedge is not None and not quiet:
            from ..handler._hedging import TurnRace

            plan.race = TurnRace(
                host.hedge,
                host.client,
                request,
                options,
                legs,
                plan,
                host.fallback,
                host.observers,
                client_pricer,
            )
        source: TurnSource = plan
        if host.failover and not quiet:
            legs_after = NextLeg(self, legs, request, options)
            source = Composed(failover_stream(Observable(plan.subscribe_lists), legs_after))
        # The fold keeps thinking when the request enables it (or the options say so).
        seed = initial_state(keep_thinking=keeps_thinking(host.client, options))
        # Attempts sent in contexts of their own (an observer's on_attempt_start hands one out)
        # each get a task; otherwise the turn's task drives the first one itself.
        drive = legs.hooks is None or not legs.hooks.start
        if quiet:
            router = _QUIET.router(legs.turn, on_control=legs)
            return stream_path(source, scheduler, router, legs, seed=seed, drive=drive)
        events = self.events
        router = host.observers.router(
            legs.turn,
            streamer=host.text_streamer,
            sink=events if events is not None and events.observers else None,
            on_control=legs,
            on_first=_first_chunk(host.observers, legs) if host.observers.listening else None,
        )
        streams = self.turn_streams
        return stream_path(
            source,
            scheduler,
            router,
            legs,
            publish_to=streams if streams is not None and streams.observers else None,
            turn=(legs.turn, legs.served),
            seed=seed,
            drive=drive,
        )

    async def create_turn(
        self,
        legs: TurnLegs,
        request: Request,
        options: RequestOptions,
        *,
        quiet: bool = False,
        scheduler: abc.SchedulerBase | None = None,
    ) -> Message:
        host = self.live_host()
        handler = host.handler or StreamHandler.passthrough()
        if scheduler is None:
            scheduler = self.scheduler()
        deadline = handler.timeouts.total
        while True:
            context = legs.attempt_started("create")
            try:
                message = await create_path(
                    functools.partial(create_message, host.client, request, options),
                    host.cancel_token,
                    deadline,
                    scheduler,
                    context,
                )
            except BaseException as exc:
                legs.attempt_ended("create", exc, None)
                target = None if quiet else self.fail_over(legs, exc)
                if target is None:
                    raise
                host.observers.emit("on_attempt_reset", turn=legs.turn, reset=legs.reset(exc))
                options = msgspec.structs.replace(options, model=target)
                deadline = legs.deadline(handler.timeouts.total, handler.timeouts.first_event)
                continue
            legs.attempt_ended("create", None, message.usage)
            return message


def _distinct_call_ids(
    message: Message, calls: tuple[ToolCallPart, ...], history: Sequence[Message]
) -> tuple[Message, tuple[ToolCallPart, ...]]:
    """``message`` with each tool call id that the conversation already holds (an earlier
    call of this reply, or a call of an earlier reply) made distinct (``<id>_2``,
    ``<id>_3``…), and its calls.

    Ollama names no call, so its calls are ``call_0``, ``call_1``… in every reply, and a
    server that is not the reference API can name two calls alike. Every call runs; but
    their results could not tell which answers which, and the next request would hold one id
    twice, which the Anthropic API refuses with a 400 (``tool_use ids must be unique``) — on
    any wire the conversation moves to by failover. The request is stateless on every wire,
    so an id of rxturn's making there is as good as the server's.
    """
    ids = [call.id for call in calls]
    earlier = {
        part.id
        for past in history
        if past.role == "assistant"
        for part in past.content
        if isinstance(part, ToolCallPart)
    }
    if len(set(ids)) == len(ids) and earlier.isdisjoint(ids):
        return message, calls
    taken = earlier.union(ids)
    seen = set(earlier)
    content: list[Any] = []
    for part in message.content:
        if isinstance(part, ToolCallPart):
            if part.id in seen:
                number = 2
                while f"{part.id}_{number}" in taken:
                    number += 1
                fresh = f"{part.id}_{number}"
                # (a repeat within one reply is the server's slip; across replies, Ollama's way)
                level = logging.DEBUG if part.id in earlier else logging.WARNING
                log.log(
                    level,
                    "tool call id %r is already in the conversation; its call %r runs as %r",
                    part.id,
                    part.name,
                    fresh,
                )
                taken.add(fresh)
                part = msgspec.structs.replace(part, id=fresh)
            seen.add(part.id)
        content.append(part)
    distinct = msgspec.structs.replace(message, content=tuple(content))
    return distinct, tuple(distinct.tool_calls)


async def _until_cancel(
    work: Coroutine[Any, Any, _T], host: CallsHost, scheduler: abc.SchedulerBase
) -> _T:
    """The user's code a turn awaits before its request (context contributors, the memory
    provider, the compactor), and a first turn's wait for the tokenizer or the price data,
    raced against the cancel signal: a cancel ends the turn with ``Cancelled`` at once,
    before any turn event, however long that takes."""

    def never() -> _T:  # no timer: only the work cancelling itself gets here
        raise asyncio.CancelledError

    return await race(work, host.cancel_token, None, scheduler, never)


async def _prime(host: CallsHost, transients: Sequence[Message]) -> None:
    """Long new messages tokenised off the loop before the (synchronous) estimate counts them:
    a long prompt held the event loop for as long as tiktoken took (~150 ms per MB)."""
    await prime_counter(host.counter, host.session.history)
    await prime_counter(host.counter, transients)


def _append_refused(host: CallsHost, query: str, error: BaseException) -> None:
    """The audit entry of a turn that failed before its request (no model left to serve it, a
    context contributor or the compactor raising, a cancel while they ran): a failed turn like
    any other, with no attempt and nothing billed."""
    turns = host.session.audit.current_run.turns
    host.session.audit.append(
        Turn(
            turn=len(turns),
            input=query,
            output="",
            tool_calls=(),
            input_tokens=0,
            output_tokens=0,
            attempts=0,
            error=_error_name(error),
        )
    )


def _audit_record(
    host: CallsHost,
    legs: TurnLegs,
    query: str,
    message: Message | None,
    stop_reason: StopReason | None,
    error: BaseException | None,
    tool_calls: tuple[ToolCallPart, ...] = (),
) -> Turn:
    """The turn's audit entry, served (``message``, its ``tool_calls``) or failed
    (``error``); closes the log."""
    attempt_log = legs.close(error)
    billed, discarded, cost = legs.totals()
    usage = message.usage if message is not None else None
    return Turn(
        turn=legs.turn,
        input=query,
        output=message.text if message is not None else "",
        tool_calls=tool_calls,
        input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
        model=legs.served,
        attempts=legs.streaming_attempts(),
        rescued=message is not None and legs.rescued,
        stop_reason=stop_reason,
        discarded_usage=discarded,
        attempt_log=attempt_log,
        billed_usage=billed,
        error=_error_name(error),
        cost=cost,
    )


def _error_name(error: BaseException | None) -> str | None:
    """A failed turn's ``error``: the error's class name, ``"Cancelled"`` for any cancel (the
    task's own ``CancelledError`` included, which read ``"CancelledError"`` before)."""
    if error is None:
        return None
    return Cancelled.__name__ if is_cancel(error) else type(error).__name__


def _first_chunk(observers: ObserverSet, legs: TurnLegs) -> Callable[[], None] | None:
    # Asked of the observers alone: one that hears only the first chunk still hears it.
    if not observers.interested("on_first_chunk"):
        return None
    turn, turn_id = legs.turn, legs.turn_id

    def first() -> None:
        observers.emit("on_first_chunk", turn=turn, turn_id=turn_id)

    return first


def _attempt_hooks(observers: ObserverSet, turn: int, turn_id: int) -> AttemptHooks | None:
    if observers.interested("on_attempt_start") or observers.interested("on_attempt_end"):
        return AttemptHooks(observers, turn, turn_id)
    return None


def _request_end(
    observers: ObserverSet,
    turn: int,
    turn_id: int,
    record: Turn,
    message: Message | None,
    error: BaseException | None,
) -> None:
    if observers.listening and observers.interested("on_request_end"):
        observers.emit(
            "on_request_end",
            turn=turn,
            turn_id=turn_id,
            record=record,
            message=message,
            error=error,
        )


_QUIET = ObserverSet()
