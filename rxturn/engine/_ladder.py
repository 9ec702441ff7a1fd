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
  ``tests/engine/handler/test_ladder_equivalence.py`` runs both side by side on virtual time.

What an attempt's events meet (the shadow fold, the first-event and idle deadlines, the
watcher's annotations) is :class:`~._attempt.AttemptSide`, the ladder's other half. The
behaviour itself is described in docs/behaviour.md §2 and docs/engine.md.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

from reactivex import Observable, abc
from reactivex.scheduler.eventloop import AsyncIOScheduler

from ..errors import (
    RescueFailed,
    RescueTimeoutError,
    RxturnError,
    StreamTimeoutError,
)
from ..events import AttemptReset, Fallback
from ..messages import Message
from ..operators._progress import TurnProgress, stamp_attempts
from ..operators._rescue import is_rescuable
from ..operators._retry_ladder import decide, notify_wait
from ..operators._scheduling import clock, resolve_scheduler
from ._attempt import SLACK, STREAMING, AttemptSide

if TYPE_CHECKING:
    from .handler import TurnPlan

__all__ = ["Ladder"]


# What the turn is doing.
_WAITING = 0  # for the limiter, or a backoff before the next attempt
_STREAMING = STREAMING  # an attempt is subscribed
_RESCUING = 2  # the non-streaming request is in flight
_DONE = 3  # ended, disposed or cancelled: nothing more goes out


class Ladder(AttemptSide, abc.DisposableBase):
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
        racing = plan.race is not None and self._attempt == 1  # it reports its racers
        context = watcher.attempt_started("stream") if watcher and not racing else None
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
        race = plan.race if self._attempt == 1 else None  # a hedged first token
        if plan.direct and race is None:  # an rxturn client: it pushes to this object directly
            self._upstream = plan.attach(self, self._sched)
            return
        try:
            source = plan.open() if race is None else race(cast("Observable[Any]", plan.open()))
        except Exception as error:  # a client that fails before returning its Observable
            self._attempt_failed(error)
            return
        self._upstream = cast("Observable[Any]", source).subscribe(self, scheduler=self._sched)

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
        if plan.on_wait is not None:
            notify_wait(plan.on_wait, decision, self._attempt + 1, error)
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

    def _schedule(self) -> None:
        """Arm the one timer for the earliest instant the turn waits for."""
        due: float | None = None
        for candidate in (self._total_due, self._attempt_due, self._wait_due, self._rescue_due):
            if candidate is not None and (due is None or candidate < due):
                due = candidate
        if due == self._timer_due:
            return
        timer, self._timer = self._timer, None
        if timer is not None:  # a loop's TimerHandle, or a scheduler's disposable
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
        if total is not None and total - t <= SLACK and self._phase != _RESCUING:
            self._total_due = None
            self._total_timeout(t)
            return
        wait = self._wait_due
        if wait is not None and wait - t <= SLACK:
            self._wait_due = None
            if self._last_error is not None:
                self._after_backoff()
            else:
                self._gate()
            if self._phase != _DONE:
                self._schedule()
            return
        attempt = self._attempt_due
        if attempt is not None and attempt - t <= SLACK:
            self._attempt_due = None
            self._attempt_deadline(t)
            if self._phase != _DONE:
                self._schedule()
            return
        rescue = self._rescue_due
        if rescue is not None and rescue - t <= SLACK:
            if not self._rescue_expiring:
                # One more scheduler turn: a reply that completed at this instant wins.
                self._rescue_expiring = True
                self._schedule()
                return
            self._rescue_due = None
            self._rescue_failed(RescueTimeoutError(self._rescue_budget))
            return
        self._schedule()  # woken early: wait for what is left

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
        self._schedule()  # nothing left to wait for: the timer goes

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
