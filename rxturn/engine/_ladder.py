"""The handler's ladder fused into one object per turn: what :class:`StreamHandler` runs.

:mod:`rxturn.engine.handler` describes a turn as the public operators composed in order
(guard → deadlines → watcher → limiter gate → retry ladder → total deadline → rescue →
cancel). Composed as Rx operators, each layer costs a subscription per turn (an observer
wrapper, disposables with a lock each, closures and their cells) and each deadline a scheduler
item: ~500 objects a turn keeps alive, walked by every garbage collection while a thousand turns
stream. :class:`Ladder` runs the same steps, in the same order and with the same verdicts, as
the methods of one slotted object:

- **one subscription per attempt** to the client's stream (the only Rx subscription of a turn;
  rxturn's own clients skip even that: :meth:`~rxturn.clients.AnthropicClient.attach_batches`
  pushes an attempt's batches straight to the ladder);
- **one timer per turn**: the first-event / idle deadline of the attempt, the turn's total
  deadline, the limiter's and the backoff's waits and the rescue's deadline are instants kept
  as numbers; the one timer is armed for the earliest (on asyncio a ``loop.call_at`` handle).
  When several fall due at the same instant, the total deadline is judged first, as its own
  timer, armed at the turn's start, would have fired first;
- the facts the operators share (:class:`~rxturn.operators.TurnProgress`), the decisions
  (:func:`rxturn.operators.decide`, :func:`rxturn.operators.is_rescuable`) and the errors are
  the operators' own, so a turn's items, errors and their timing are those of the composition.
  ``tests/engine/test_ladder_equivalence.py`` runs both side by side on virtual time.

The behaviour itself is described in docs/behaviour.md §2 and docs/engine.md.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, cast

from reactivex import Observable, abc
from reactivex.scheduler.eventloop import AsyncIOScheduler

from ..errors import (
    RateLimitError,
    RequestTimeoutError,
    RescueFailed,
    RescueTimeoutError,
    RetryAfterBeyondDeadline,
    RxturnError,
    StreamTimeoutError,
    TruncatedStreamError,
)
from ..events import AttemptReset, Delta, Fallback, StreamEvent
from ..fold import fold
from ..messages import Message
from ..operators._progress import TurnProgress, stamp_attempts
from ..operators._rescue import is_rescuable
from ..operators._retry_ladder import decide
from ..operators._scheduling import clock, resolve_scheduler

if TYPE_CHECKING:
    from .handler import TurnPlan

__all__ = ["Ladder"]

_log = logging.getLogger("rxturn.operators")

# A deadline due within this many seconds counts as reached (timers may fire a hair early:
# asyncio's clock resolution, a virtual clock's float arithmetic).
_SLACK = 1e-6

# What the turn is doing.
_WAITING = 0  # for the limiter, or a backoff before the next attempt
_STREAMING = 1  # an attempt is subscribed
_RESCUING = 2  # the non-streaming request is in flight
_DONE = 3  # ended, disposed or cancelled: nothing more goes out


class Ladder(abc.ObserverBase[Any], abc.DisposableBase):
    """One subscription of a handled turn. It observes the attempt in flight and is the
    disposable the turn's subscriber holds (see the module docstring)."""

    __slots__ = (
        "_armed_from",
        "_attempt",
        "_attempt_due",
        "_attempt_started",
        "_consecutive",
        "_context_ended",
        "_downstream",
        "_last",
        "_last_error",
        "_loop",
        "_now",
        "_pending",
        "_pending_index",
        "_phase",
        "_plan",
        "_progress",
        "_rate_limit_hits",
        "_repeat_index",
        "_rescue",
        "_rescue_budget",
        "_rescue_due",
        "_rescue_error",
        "_rescue_expiring",
        "_sched",
        "_seen",
        "_seen_at_arm",
        "_shadow_started",
        "_timer",
        "_timer_due",
        "_total_due",
        "_transport_retries",
        "_upstream",
        "_wait_due",
        "_waited",
        "_wrap",
    )

    def __init__(
        self,
        plan: TurnPlan,
        observer: abc.ObserverBase[Any],
        scheduler: abc.SchedulerBase | None,
        *,
        as_lists: bool,
    ) -> None:
        self._plan = plan
        self._downstream = observer
        self._wrap = as_lists
        sched = resolve_scheduler(plan.preferred, scheduler)
        self._sched = sched
        self._loop: asyncio.AbstractEventLoop | None = (
            sched._loop  # pyright: ignore[reportPrivateUsage]
            if type(sched) is AsyncIOScheduler
            else None
        )
        self._now = now = clock(sched)
        self._progress = progress = TurnProgress(now, total=plan.total)
        self._total_due = progress.deadline_at
        self._phase: int = _WAITING
        self._timer: Any = None
        self._timer_due: float | None = None
        self._attempt_due: float | None = None
        self._wait_due: float | None = None
        self._rescue_due: float | None = None
        self._rescue_expiring = False
        self._rescue: abc.DisposableBase | None = None
        self._rescue_error: Exception | None = None
        self._rescue_budget = 0.0
        self._last_error: Exception | None = None
        self._upstream: abc.DisposableBase | None = None
        self._context_ended = True
        self._attempt = 0
        self._transport_retries = 0
        self._rate_limit_hits = 0
        self._waited = 0.0
        self._pending: list[str] | None = None  # a tool-JSON run being collected
        self._reset_attempt_state(0.0)

    def _reset_attempt_state(self, started: float) -> None:
        self._attempt_started = started
        self._seen = 0
        self._last = started
        self._armed_from = started
        self._seen_at_arm = 0
        self._consecutive = 0
        self._shadow_started = False
        self._repeat_index = -1
        self._pending_index = -1
        self._pending = None

    # ------------------------------------------------------------------------------ start

    def start(self) -> Ladder:
        """Begin the turn (what subscribing does): cancel check, total deadline, attempt 1."""
        cancel = self._plan.cancel
        if cancel is not None:
            if cancel.cancelled:
                self._cancelled()
                return self
            cancel.add_callback(self._on_cancel)
        self._schedule()  # the total deadline
        self._next_attempt()
        return self

    def _next_attempt(self) -> None:
        """The retry ladder starts attempt ``n``: through the limiter's gate first."""
        self._attempt += 1
        self._waited = 0.0
        self._gate()

    def _gate(self) -> None:
        plan = self._plan
        limiter = plan.limiter
        if limiter is not None:
            wait = limiter.acquire(plan.key, self._now())
            cap = limiter.max_wait
            if wait > 0 and self._waited < cap:
                sleep = min(wait, cap - self._waited)
                remaining = self._progress.remaining()
                if remaining is not None:
                    sleep = min(sleep, remaining)
                if sleep > 0:
                    self._waited += sleep
                    self._phase = _WAITING
                    self._wait_due = self._now() + sleep
                    self._schedule()
                    return
        self._open()

    def _open(self) -> None:
        """Subscribe the attempt: watcher told, deadlines armed, shadow reset, request sent."""
        plan = self._plan
        watcher = plan.watcher
        context = watcher.attempt_started("stream") if watcher is not None else None
        self._context_ended = False
        self._phase = _STREAMING
        if context is None:
            self._subscribe_attempt()
        else:
            context.run(self._subscribe_attempt)

    def _subscribe_attempt(self) -> None:
        plan = self._plan
        started = self._now()
        self._reset_attempt_state(started)
        if plan.first_event is not None:
            self._attempt_due = started + plan.first_event
        else:
            self._attempt_due = None
        self._schedule()
        self._progress.begin_attempt()
        if plan.direct:  # an rxturn client: the attempt pushes to this object directly
            self._upstream = plan.attach(self, self._sched)
            return
        try:
            source = plan.open()
        except Exception as error:  # a client that fails before returning its Observable
            self._attempt_failed(error)
            return
        self._upstream = cast("Observable[Any]", source).subscribe(self, scheduler=self._sched)

    # ----------------------------------------------------------------------- the attempt

    def on_next(self, value: Any) -> None:
        if self._phase != _STREAMING:
            return
        if type(value) is list:
            self._on_batch(cast("list[StreamEvent]", value))
            return
        event = cast(StreamEvent, value)
        if not (type(event) is Delta and self._shadow_started and self._skip(event)):
            try:
                self._accept(event)
            except Exception as error:  # the fold's verdict: this attempt failed here
                self._attempt_failed(error, dispose=True)
                return
        self._progress.events += 1
        self._count(1)
        self._downstream.on_next([value] if self._wrap else value)

    def _skip(self, event: Delta) -> bool:
        """Whether a delta after the reply started needs no shadow fold (see
        :mod:`rxturn.operators._attempt_guard`); a tool-JSON delta is collected."""
        kind = event.kind
        if kind == "text":
            return event.index == self._repeat_index
        if kind == "tool_json":
            if event.index == self._pending_index:
                self._pending.append(event.text)  # pyright: ignore[reportOptionalMemberAccess]
                return True
            return False
        return True  # thinking: never stored

    def _accept(self, event: StreamEvent) -> None:
        progress = self._progress
        pending = self._pending
        if pending is not None:
            self._pending = None
            if pending:
                progress.shadow = fold(
                    progress.shadow, Delta(self._pending_index, "".join(pending), "tool_json")
                )
        progress.shadow = state = fold(progress.shadow, event)
        self._shadow_started = state.started
        self._repeat_index = self._pending_index = -1
        if type(event) is Delta:
            if event.kind == "text":
                if event.text:
                    self._repeat_index = event.index
            elif event.kind == "tool_json":
                self._pending_index = event.index
                self._pending = []

    def _on_batch(self, batch: list[StreamEvent]) -> None:
        position = 0
        delta = Delta
        try:
            for position, event in enumerate(batch):  # noqa: B007 - kept for the error
                # :meth:`_skip`, written out: this loop runs per event
                if type(event) is delta and self._shadow_started:
                    kind = event.kind
                    if kind == "text":
                        if event.index == self._repeat_index:
                            continue
                    elif kind == "tool_json":
                        if event.index == self._pending_index:
                            self._pending.append(event.text)  # pyright: ignore[reportOptionalMemberAccess]  # pyright: ignore[reportOptionalMemberAccess]
                            continue
                    else:  # thinking: never stored
                        continue
                self._accept(event)
        except Exception as error:  # the fold's verdict: this attempt failed here
            self._drop_upstream()
            if position:
                self._progress.events += position
                self._count(position)
                self._downstream.on_next(batch[:position])
                if self._phase != _STREAMING:
                    return
            self._attempt_failed(error)
            return
        count = len(batch)
        if count:
            self._progress.events += count
            self._count(count)
        self._downstream.on_next(batch)

    def _count(self, count: int) -> None:
        """The deadlines' bookkeeping: an event's arrival instant (O(1), no timer work)."""
        self._last = self._now()
        first = self._seen == 0
        self._seen += count
        if first:
            plan = self._plan
            per_event = plan.per_event
            if per_event is None:
                if self._attempt_due is not None:
                    self._attempt_due = None
                    self._schedule()
            elif plan.first_event is None or self._armed_from + plan.first_event > (
                self._last + per_event
            ):
                self._arm_attempt(per_event, self._last)

    def on_completed(self) -> None:
        if self._phase != _STREAMING:
            return
        if not self._progress.shadow.completed:
            self._attempt_failed(TruncatedStreamError(self._progress.events))
            return
        self._upstream = None
        self._end_attempt(None)
        self._finish()

    def on_error(self, error: Exception) -> None:
        if self._phase != _STREAMING:
            return
        self._upstream = None
        self._attempt_failed(error)

    def _drop_upstream(self) -> None:
        upstream, self._upstream = self._upstream, None
        if upstream is not None:
            upstream.dispose()

    def _attempt_failed(self, error: Exception, *, dispose: bool = False) -> None:
        """An attempt's error, annotated as the watcher step does, then the ladder's call."""
        if dispose:
            self._drop_upstream()
        if self._attempt_due is not None:
            self._attempt_due = None
        plan = self._plan
        progress = self._progress
        plan.scrub(error)
        if isinstance(error, RateLimitError | RequestTimeoutError):
            error.note_progress(partial=progress.partial, events=progress.events)
        if plan.give_up and isinstance(error, RateLimitError):
            remaining = progress.remaining()
            wait = error.retry_after
            if remaining is not None and wait is not None and wait > remaining:
                replaced = RetryAfterBeyondDeadline(progress.attempts, wait, remaining)
                replaced.__cause__ = error
                error = replaced
        self._end_attempt(error)
        self._decide(error)

    def _end_attempt(self, error: BaseException | None, *, disposed: bool = False) -> None:
        if self._context_ended:
            return
        self._context_ended = True
        watcher = self._plan.watcher
        if watcher is not None:
            watcher.attempt_ended("stream", error, self._progress.shadow.usage, disposed=disposed)

    # ------------------------------------------------------------------------ the ladder

    def _decide(self, error: Exception) -> None:
        plan = self._plan
        progress = self._progress
        decision = decide(
            error,
            transport_retries=self._transport_retries,
            rate_limit_hits=self._rate_limit_hits,
            retry=plan.retry,
            rate_limit=plan.rate_limit,
            rng=plan.rng,
            remaining=progress.remaining(),
        )
        if decision.ladder == "rate_limit":
            self._rate_limit_hits += 1
        if decision.action != "retry":
            if decision.action == "fail":
                stamp_attempts(error, self._attempt)
            self._give_up(decision.error)
            return
        if decision.ladder == "transport":
            self._transport_retries += 1
        attempt = self._attempt
        if plan.on_wait is not None:
            try:
                plan.on_wait(
                    reason="rate_limit" if decision.ladder == "rate_limit" else "backoff",
                    seconds=decision.delay,
                    attempt=attempt + 1,
                    error=error,
                )
            except Exception:
                _log.exception("on_wait raised; the turn goes on")
        self._last_error = error  # for the reset, which comes after the wait
        self._phase = _WAITING
        self._wait_due = self._now() + decision.delay
        self._schedule()

    def _after_backoff(self) -> None:
        error = self._last_error
        self._last_error = None
        progress = self._progress
        assert error is not None
        reset = AttemptReset(
            attempt=self._attempt + 1,
            reason=str(error),
            error_type=type(error).__name__,
            usage=progress.shadow.usage,
            events=progress.events,
        )
        self._downstream.on_next([reset] if self._wrap else reset)
        if self._phase != _DONE:
            self._next_attempt()

    # ------------------------------------------------------------------------ the timer

    def _arm_attempt(self, delay: float, reference: float) -> None:
        self._armed_from = reference
        self._seen_at_arm = self._seen
        self._attempt_due = self._now() + max(0.0, delay)
        self._schedule()

    def _schedule(self) -> None:
        """Arm the one timer for the earliest instant the turn waits for."""
        due: float | None = None
        for candidate in (self._total_due, self._attempt_due, self._wait_due, self._rescue_due):
            if candidate is not None and (due is None or candidate < due):
                due = candidate
        if due == self._timer_due:
            return
        timer, self._timer = self._timer, None
        if timer is not None:
            if self._loop is not None:
                timer.cancel()
            else:
                timer.dispose()
        self._timer_due = due
        if due is None:
            return
        loop = self._loop
        if loop is not None:
            self._timer = loop.call_at(due, self._fire)
        elif self._rescue_expiring and due == self._rescue_due:
            self._timer = self._sched.schedule(self._fire_scheduled)
        else:
            delay = max(0.0, due - self._now())
            self._timer = self._sched.schedule_relative(delay, self._fire_scheduled)

    def _fire_scheduled(self, _: abc.SchedulerBase, __: Any = None) -> None:
        self._fire()

    def _fire(self) -> None:
        self._timer = None
        self._timer_due = None
        if self._phase == _DONE:
            return
        t = self._now()
        total = self._total_due
        if total is not None and total - t <= _SLACK and self._phase != _RESCUING:
            self._total_due = None
            self._total_timeout(t)
            return
        wait = self._wait_due
        if wait is not None and wait - t <= _SLACK:
            self._wait_due = None
            if self._last_error is not None:
                self._after_backoff()
            else:
                self._gate()
            if self._phase != _DONE:
                self._schedule()
            return
        attempt = self._attempt_due
        if attempt is not None and attempt - t <= _SLACK:
            self._attempt_due = None
            self._attempt_deadline(t)
            if self._phase != _DONE:
                self._schedule()
            return
        rescue = self._rescue_due
        if rescue is not None and rescue - t <= _SLACK:
            if not self._rescue_expiring:
                # One more scheduler turn: a reply that completed at this instant wins.
                self._rescue_expiring = True
                self._schedule()
                return
            self._rescue_due = None
            self._rescue_failed(RescueTimeoutError(self._rescue_budget))
            return
        self._schedule()  # woken early: wait for what is left

    def _attempt_deadline(self, t: float) -> None:
        """The first-event / idle deadline's timer fired (``deadlines``' own rule)."""
        plan = self._plan
        seen = self._seen
        if seen > self._seen_at_arm:  # events arrived since arming: measure from the last one
            self._consecutive = 0
            reference, period = self._last, plan.per_event
        else:
            reference = self._armed_from
            period = plan.first_event if seen == 0 else plan.per_event
        if period is None:
            return
        due = reference + period
        if due - t > _SLACK:
            self._arm_attempt(due - t, reference)
            return
        self._consecutive += 1
        fast_fail = min(2, plan.max_consecutive)
        if self._consecutive < (fast_fail if seen == 0 else plan.max_consecutive):
            self._arm_attempt(period, t)
            return
        self._drop_upstream()
        self._attempt_failed(
            StreamTimeoutError(
                "first_event" if seen == 0 else "idle",
                after=period,
                events=seen,
                partial=self._progress.partial,
                elapsed=t - self._attempt_started,
                consecutive=self._consecutive,
            )
        )

    def _total_timeout(self, t: float) -> None:
        progress = self._progress
        self._drop_upstream()
        self._attempt_due = self._wait_due = None
        self._last_error = None
        total = self._plan.total
        assert total is not None
        error = StreamTimeoutError(
            "total",
            after=total,
            events=progress.turn_events,
            partial=progress.partial,
            elapsed=t - progress.started_at,
        )
        progress.stamp(error)
        self._end_attempt(None, disposed=True)
        self._give_up(error)

    # ------------------------------------------------------------------------ the rescue

    def _give_up(self, error: Exception) -> None:
        """The streaming ladder let ``error`` out: the rescue, or the turn's error."""
        if self._plan.rescue and is_rescuable(error):
            self._start_rescue(error)
        else:
            self._fail(error)

    def _start_rescue(self, stream_error: Exception) -> None:
        # what ``rescue`` computes: the turn's time left if still in the future, else a fresh
        # first-event budget; no deadline when the turn has none
        plan = self._plan
        self._phase = _RESCUING
        self._attempt_due = self._wait_due = None
        self._total_due = None
        self._rescue_error = stream_error
        remaining = self._progress.remaining()
        budget = None if remaining is None else remaining if remaining > 0 else plan.first_event
        if budget is not None:
            self._rescue_due = self._now() + max(0.0, budget)
            self._rescue_budget = budget
        self._schedule()
        try:
            request = plan.create_request()
        except Exception as error:
            self._rescue_failed(error)
            return
        rescue = request.subscribe(
            self._on_rescue_reply, self._rescue_failed, self._on_rescue_done, scheduler=self._sched
        )
        if cast(int, self._phase) == _DONE:  # it ended while subscribing (a cancel, say)
            rescue.dispose()
        else:
            self._rescue = rescue

    def _on_rescue_reply(self, message: Message) -> None:
        if self._phase != _RESCUING:
            return
        self._phase = _DONE
        self._clear_timer()
        self._unregister()
        self._downstream.on_next([Fallback(message)] if self._wrap else Fallback(message))
        self._downstream.on_completed()

    def _on_rescue_done(self) -> None:
        self._rescue_failed(RxturnError("fallback request ended without a reply"))

    def _rescue_failed(self, rescue_error: BaseException) -> None:
        if self._phase != _RESCUING:
            return
        stream_error = self._rescue_error
        assert stream_error is not None
        self._phase = _DONE
        rescue, self._rescue = self._rescue, None
        if rescue is not None:  # what the rescue's watcher sees first, as in ``rescue``
            rescue.dispose()
        error = RescueFailed(stream_error, rescue_error)
        self._progress.stamp(error)
        self._fail(error)

    # ------------------------------------------------------------------------ the end

    def _finish(self) -> None:
        self._phase = _DONE
        self._clear_timer()
        self._unregister()
        self._downstream.on_completed()

    def _fail(self, error: Exception) -> None:
        self._phase = _DONE
        self._clear_timer()
        self._unregister()
        self._downstream.on_error(error)

    def _clear_timer(self) -> None:
        self._total_due = self._attempt_due = self._wait_due = self._rescue_due = None
        timer, self._timer = self._timer, None
        self._timer_due = None
        if timer is not None:
            if self._loop is not None:
                timer.cancel()
            else:
                timer.dispose()

    def _unregister(self) -> None:
        cancel = self._plan.cancel
        if cancel is not None:
            cancel.remove_callback(self._on_cancel)

    def _stop(self) -> None:
        """Tear down whatever is pending, silently."""
        was = self._phase
        self._phase = _DONE
        self._clear_timer()
        self._unregister()
        self._drop_upstream()
        if was == _STREAMING:
            self._end_attempt(None, disposed=True)
        rescue, self._rescue = self._rescue, None
        if rescue is not None:
            rescue.dispose()

    def _on_cancel(self) -> None:
        if self._phase == _DONE:
            return
        self._stop()
        self._cancelled()

    def _cancelled(self) -> None:
        cancel = self._plan.cancel
        assert cancel is not None
        self._phase = _DONE
        error = cancel.error()
        self._progress.stamp(error)
        self._downstream.on_error(error)

    def dispose(self) -> None:
        if self._phase != _DONE:
            self._stop()
        else:
            self._drop_upstream()
            rescue, self._rescue = self._rescue, None
            if rescue is not None:
                rescue.dispose()
