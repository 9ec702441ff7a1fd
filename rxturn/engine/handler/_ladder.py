"""The handler's composition driven as one object per turn: what :class:`StreamHandler` runs.

:mod:`rxturn.engine.handler` defines a turn as the public operators composed in order
(guard → deadlines → scrub → progress → give-up → limiter gate → retry ladder → total
deadline → rescue → cancel). Each operator is a thin Rx shell over one rule of
:mod:`rxturn.resilience` (docs/design.md lists each rule and where it lives). Composed as Rx
operators, each layer costs a subscription per turn and each deadline a scheduler item: ~500
objects a turn keeps alive. :class:`Ladder` drives the **same rules** — the same machine
objects and functions the operators call, asked in the same order — with:

- **one subscription per attempt** to the client's stream (the only Rx subscription of a turn;
  rxturn's own clients skip even that: :meth:`~rxturn.clients.AnthropicClient.attach_batches`
  pushes an attempt's batches straight to the ladder);
- **one timer per turn**: the attempt clock's ``due``, the turn's total deadline, the limiter's
  and the backoff's waits and the rescue's deadline are instants kept as numbers; the one timer
  is armed for the earliest (on asyncio an entry of the loop's :class:`~._waker.LoopWaker`,
  which wakes every turn of the loop from one ``loop.call_at`` handle). When several fall due at
  the same instant, the total deadline is judged first, as its own timer, armed at the turn's
  start, would have fired first;
- **phases**: waiting (limiter or backoff), streaming, rescuing, done.

It holds no verdict of its own: the shadow guard, the attempt clock, the retry budget, the
gate's sleep, the total deadline's error, the rescue's budget, its race and which failures it
takes all come from :mod:`rxturn.resilience`.
``tests/engine/handler/test_ladder_equivalence.py`` and ``test_paths_equivalence.py`` run the
driver and the hand-composed operators side by side on virtual time, on the per-event, the
batched and the direct-attach paths.

The ladder is also the observer of the attempt in flight: per item it asks the attempt's
:class:`~rxturn.resilience.guard.ShadowGuard` for its verdict and tells the attempt's
:class:`~rxturn.resilience.clock.AttemptClock` what arrived (re-arming the turn's one timer only
when the clock's ``due`` moved); a failed attempt's error goes through the steps the handler's
composition places after the deadlines — the client's scrub, the progress a rate limit or a 408
learns, :func:`~rxturn.resilience.retry.beyond_deadline` when the caller asked for it — and on
to the retry ladder's call. While it hands a batch on, :attr:`Ladder.forwarded` is that batch:
the guard's shadow is then the fold's state after it, which the engine's turn sink takes as its
own rather than folding the batch again.
"""

from __future__ import annotations

from typing import Any, cast

from reactivex import Observable, abc
from reactivex.scheduler.eventloop import AsyncIOScheduler

from ...events import Fallback, StreamEvent
from ...messages import Message
from ...operators._scheduling import clock, resolve_scheduler
from ...resilience.cancel import cancel_error
from ...resilience.clock import SLACK, AttemptClock
from ...resilience.guard import EMPTY
from ...resilience.limiter import gate_sleep
from ...resilience.progress import (
    RescueRace,
    TurnProgress,
    no_reply,
    note_progress,
    rescue_budget,
    rescue_failed,
    total_timeout,
)
from ...resilience.retry import RetryBudget, beyond_deadline
from ...resilience.verdicts import is_rescuable
from ._plan import TurnSpec
from ._waker import LoopWaker, waker_for

__all__ = ["Ladder"]


# What the turn is doing.
_WAITING = 0  # for the limiter, or a backoff before the next attempt
_STREAMING = 1  # an attempt is subscribed
_RESCUING = 2  # the non-streaming request is in flight
_DONE = 3  # ended, disposed or cancelled: nothing more goes out


class Ladder(abc.ObserverBase[Any], abc.DisposableBase):
    """One subscription of a handled turn. It observes the attempt in flight and is the
    disposable the turn's subscriber holds (see the module docstring)."""

    __slots__ = (
        "_budget",
        "_clock",
        "_context_ended",
        "_downstream",
        "_now",
        "_phase",
        "_plan",
        "_progress",
        "_race",
        "_rescue",
        "_rescue_due",
        "_rescue_error",
        "_sched",
        "_timer",
        "_timer_due",
        "_total_due",
        "_upstream",
        "_wait_due",
        "_waited",
        "_waker",
        "_wrap",
        "forwarded",
        "guard",
    )

    def __init__(
        self,
        plan: TurnSpec,
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
        #: on asyncio, what wakes the turn (no loop timer of its own: see _waker)
        self._waker: LoopWaker | None = (
            waker_for(sched._loop)  # pyright: ignore[reportPrivateUsage]
            if type(sched) is AsyncIOScheduler
            else None
        )
        self._now = now = clock(sched)
        self._progress = progress = TurnProgress(now, total=plan.total)
        #: the attempt's shadow guard; its ``shadow`` is the fold of the attempt's accepted
        #: events, exact (:mod:`rxturn.resilience.guard`)
        self.guard = progress.guard
        #: the batch being handed downstream while it is (``None`` otherwise): the guard's
        #: shadow is the fold's state after it, so the one downstream may take its reply from
        #: there instead of folding the batch again (:mod:`rxturn.engine.fanout._turn_stream`)
        self.forwarded: list[Any] | None = None
        self._clock: AttemptClock | None = (
            None
            if plan.first_event is None and plan.per_event is None
            else AttemptClock(plan.first_event, plan.per_event, plan.max_consecutive)
        )
        self._budget: RetryBudget | None = None  # made at the first failure
        self._total_due = progress.deadline_at
        self._phase: int = _WAITING
        self._timer: Any = None
        self._timer_due: float | None = None
        self._wait_due: float | None = None
        self._rescue_due: float | None = None
        self._race: RescueRace | None = None  # made when the rescue starts
        self._rescue: abc.DisposableBase | None = None
        self._rescue_error: Exception | None = None
        self._upstream: abc.DisposableBase | None = None
        self._context_ended = True
        self._waited = 0.0

    # ------------------------------------------------------------------------------ start

    def start(self) -> Ladder:
        """Begin the turn (what subscribing does): cancel check, total deadline, attempt 1."""
        cancel = self._plan.cancel
        if cancel is not None:
            if cancel.cancelled:
                self._cancelled()
                return self
            cancel.add_callback(self)  # (see __call__)
        self._next_attempt()
        if self._phase != _DONE:
            # The total deadline, unless opening the attempt already armed the timer for the
            # earliest instant (total included): one timer armed per turn, not armed twice.
            self._schedule()
        return self

    def _next_attempt(self) -> None:
        """The retry ladder starts the next attempt: through the limiter's gate first."""
        self._waited = 0.0
        self._gate()

    def _gate(self) -> None:
        limiter = self._plan.limiter
        if limiter is not None:
            sleep = gate_sleep(
                limiter.acquire(self._plan.key, self._now()),
                self._waited,
                limiter.max_wait,
                self._progress.remaining(),
            )
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
        # the first attempt (no failure yet, so no retry budget) of a hedged turn: the race
        # reports its racers itself
        racing = plan.race is not None and self._budget is None
        context = watcher.attempt_started("stream") if watcher and not racing else None
        self._context_ended = False
        self._phase = _STREAMING
        if context is None:
            self._subscribe_attempt()
        else:
            context.run(self._subscribe_attempt)

    def _subscribe_attempt(self) -> None:
        plan = self._plan
        attempt_clock = self._clock
        if attempt_clock is not None:
            attempt_clock.begin(self._now())
            self._schedule()
        self._progress.begin_attempt()
        self.forwarded = None  # (a callback of the batch in hand started this attempt)
        hedged = plan.race if self._budget is None else None  # a hedged first token
        if plan.direct and hedged is None:  # an rxturn client: it pushes to this object directly
            self._upstream = plan.attach(self, self._sched)
            return
        try:
            source = plan.open()
            if hedged is not None:
                source = hedged(cast("Observable[Any]", source))
        except Exception as error:  # a client that fails before returning its Observable
            self._attempt_failed(error)
            return
        self._upstream = cast("Observable[Any]", source).subscribe(self, scheduler=self._sched)

    # ----------------------------------------------------------------------- the attempt

    def on_next(self, value: Any) -> None:
        if self._phase != _STREAMING:
            return
        if type(value) is list:  # a batch: the path every chunk takes, written out in full
            # an annotation, not a cast() call per chunk
            batch: list[StreamEvent] = value  # pyright: ignore[reportUnknownVariableType]
            guard = self.guard
            error = guard.batch(batch)
            if error is not None:  # the guard's verdict: the accepted prefix, then the error
                if error is EMPTY:  # an empty batch: no event, nothing to forward
                    return
                self._drop_upstream()
                accepted = guard.accepted
                if accepted:
                    self._progress.events += accepted
                    self._arrived(accepted)
                    self._forward(batch[:accepted])
                    if self._phase != _STREAMING:
                        return
                self._attempt_failed(error)
                return
            count = len(batch)
            self._progress.events += count
            clock = self._clock
            if clock is not None and clock.arrived(count, self._now()):
                self._schedule()
            self.forwarded = batch
            try:
                self._downstream.on_next(batch)
            except Exception as raised:
                self._subscriber_raised(raised)
            self.forwarded = None
            return
        error = self.guard.event(value)
        if error is not None:  # the guard's verdict: this attempt failed here
            self._attempt_failed(error, dispose=True)
            return
        self._progress.events += 1
        self._arrived(1)
        if self._wrap:
            self._forward([value])
        else:
            try:
                self._downstream.on_next(value)
            except Exception as raised:
                self._subscriber_raised(raised)

    def _forward(self, batch: list[Any]) -> None:
        """Hand ``batch`` downstream, the guard's shadow being the fold's state after it."""
        self.forwarded = batch
        try:
            self._downstream.on_next(batch)
        except Exception as raised:
            self._subscriber_raised(raised)
        self.forwarded = None

    def _subscriber_raised(self, error: Exception) -> None:
        """The subscriber's ``on_next`` raised ``error``: the subscriber's own failure, never
        the attempt's. Let out to the attempt's source, it came back as the attempt's error
        (the bridge reports what its ``on_next`` raised), and one that looked retryable (a
        ``ServerError`` the subscriber raised) sent the request again and handed the new
        attempt's events to the subscriber that had failed, which never heard its error. The
        turn ends with it instead, as the bridge ends on it."""
        if self._phase == _DONE:  # it let go first (disposed, then raised): nobody to tell
            return
        self._drop_upstream()
        self._end_attempt(error)
        self._fail(error)

    def _arrived(self, count: int) -> None:
        clock = self._clock
        if clock is not None and clock.arrived(count, self._now()):
            self._schedule()

    def on_completed(self) -> None:
        if self._phase != _STREAMING:
            return
        error = self.guard.truncated(self._progress.events)
        if error is not None:
            self._attempt_failed(error)
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
        """An attempt's error, through the steps after the deadlines, then the ladder's call."""
        if dispose:
            self._drop_upstream()
        if self._clock is not None:
            self._clock.stop()  # the ladder's next step re-arms the timer
        plan = self._plan
        progress = self._progress
        plan.scrub(error)
        note_progress(error, progress)
        if plan.give_up:
            error = beyond_deadline(error, progress.attempts, progress.remaining())
        self._end_attempt(error)
        self._decide(error)

    def _end_attempt(self, error: BaseException | None, *, disposed: bool = False) -> None:
        if self._context_ended:
            return
        self._context_ended = True
        watcher = self._plan.watcher
        if watcher is not None:
            # (the guard the progress holds, read directly: no property call per attempt)
            watcher.attempt_ended("stream", error, self.guard.shadow.usage, disposed=disposed)

    def _attempt_deadline(self, t: float) -> None:
        """The attempt clock's instant came: its verdict."""
        clock = self._clock
        assert clock is not None
        error = clock.expired(t, self._progress.partial)
        if error is not None:
            self._drop_upstream()
            self._attempt_failed(error)

    # ------------------------------------------------------------------------ the ladder

    def _decide(self, error: Exception) -> None:
        budget = self._budget
        if budget is None:
            plan = self._plan
            budget = self._budget = RetryBudget(plan.retry, plan.rate_limit, plan.rng, plan.on_wait)
        decision = budget.failed(error, self._progress.remaining())
        if decision.action != "retry":
            self._give_up(decision.error)
            return
        self._phase = _WAITING
        self._wait_due = self._now() + decision.delay
        self._schedule()

    def _after_backoff(self, budget: RetryBudget) -> None:
        progress = self._progress
        reset = budget.reset(progress.events, progress.shadow.usage)
        try:
            self._downstream.on_next([reset] if self._wrap else reset)
        except Exception as raised:
            self._fail(raised)  # (no attempt in flight)
            return
        if self._phase != _DONE:
            self._next_attempt()

    # ------------------------------------------------------------------------ the timer

    def _schedule(self) -> None:
        """Arm the one timer for the earliest instant the turn waits for."""
        # the earliest of the total deadline, the attempt clock's, a wait's and the rescue's
        # (each looked at in turn: no tuple to build and walk, three times a turn)
        due = self._total_due
        attempt_clock = self._clock
        if attempt_clock is not None:
            candidate = attempt_clock.due
            if candidate is not None and (due is None or candidate < due):
                due = candidate
        candidate = self._wait_due
        if candidate is not None and (due is None or candidate < due):
            due = candidate
        candidate = self._rescue_due
        if candidate is not None and (due is None or candidate < due):
            due = candidate
        if due == self._timer_due:
            return
        self._timer_due = due
        waker = self._waker
        if waker is not None:  # asyncio: an entry of the loop's waker (see __call__)
            if due is None:
                waker.disarm(self)
            else:
                waker.arm(self, due)
            return
        timer, self._timer = self._timer, None
        if timer is not None:  # a scheduler's disposable
            timer.dispose()
        if due is None:
            return
        if self._race is not None and self._race.expiring and due == self._rescue_due:
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
        total = self._total_due  # None once rescuing: _start_rescue clears it, nothing re-sets it
        if total is not None and total - t <= SLACK:
            self._total_due = None
            self._total_timeout(t)
            return
        wait = self._wait_due
        if wait is not None and wait - t <= SLACK:
            self._wait_due = None
            budget = self._budget
            if budget is not None and budget.retry_owed:
                self._after_backoff(budget)
            else:
                self._gate()
            if self._phase != _DONE:
                self._schedule()
            return
        attempt_clock = self._clock
        attempt = None if attempt_clock is None else attempt_clock.due
        if attempt is not None and attempt - t <= SLACK:
            self._attempt_deadline(t)
            if self._phase != _DONE:
                self._schedule()
            return
        rescue = self._rescue_due
        race = self._race
        if rescue is not None and race is not None and rescue - t <= SLACK:
            error = race.deadline()
            if error is None:  # judged again one scheduler turn later (race.expiring)
                self._schedule()
                return
            self._rescue_due = None
            self._rescue_failed(error)
            return
        self._schedule()  # woken early: wait for what is left

    def _total_timeout(self, t: float) -> None:
        progress = self._progress
        self._drop_upstream()
        self._stop_waits()
        total = self._plan.total
        assert total is not None
        error = progress.stamp(total_timeout(total, progress, t))
        self._end_attempt(None, disposed=True)
        self._give_up(error)

    def _stop_waits(self) -> None:
        """No attempt deadline, no limiter or backoff wait pending (and no retry owed)."""
        if self._clock is not None:
            self._clock.stop()
        self._wait_due = None
        if self._budget is not None:
            self._budget.cancel_retry()

    # ------------------------------------------------------------------------ the rescue

    def _give_up(self, error: Exception) -> None:
        """The streaming ladder let ``error`` out: the rescue, or the turn's error."""
        if self._plan.rescue and is_rescuable(error):
            self._start_rescue(error)
        else:
            self._fail(error)

    def _start_rescue(self, stream_error: Exception) -> None:
        plan = self._plan
        self._phase = _RESCUING
        self._stop_waits()
        self._total_due = None
        self._rescue_error = stream_error
        budget = rescue_budget(self._progress.remaining(), plan.first_event)
        self._race = RescueRace(budget)
        if budget is not None:
            self._rescue_due = self._now() + budget
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
        race = self._race
        if self._phase != _RESCUING or race is None or not race.outcome():
            return
        self._phase = _DONE
        self._clear_timer()
        self._unregister()
        try:
            self._downstream.on_next([Fallback(message)] if self._wrap else Fallback(message))
        except Exception as raised:  # the subscriber's own failure: it hears it, not an end
            self._downstream.on_error(raised)
            return
        self._downstream.on_completed()

    def _on_rescue_done(self) -> None:
        self._rescue_failed(no_reply())

    def _rescue_failed(self, rescue_error: BaseException) -> None:
        race = self._race
        if self._phase != _RESCUING or race is None or not race.outcome():
            return
        stream_error = self._rescue_error
        assert stream_error is not None
        # not kept past the rescue: its traceback holds the frames that streamed this ladder's
        # attempt (holding the ladder), a cycle that would keep the turn for the collector
        self._rescue_error = None
        self._phase = _DONE
        rescue, self._rescue = self._rescue, None
        if rescue is not None:  # what the rescue's watcher sees first, as in ``rescue``
            rescue.dispose()
        self._fail(rescue_failed(stream_error, rescue_error, self._progress))

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
        self._stop_waits()
        self._total_due = self._rescue_due = None
        self._schedule()  # nothing left to wait for: the timer goes

    def _unregister(self) -> None:
        cancel = self._plan.cancel
        if cancel is not None:
            cancel.remove_callback(self)

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

    def __call__(self) -> None:
        """The ladder's wake-up, the one callback it hands out: its loop's waker woke it, or its
        cancel token did (so no bound method is kept alive per turn in flight for either)."""
        cancel = self._plan.cancel
        if cancel is not None and cancel.cancelled:
            self._on_cancel()
        else:
            self._fire()

    def _on_cancel(self) -> None:
        if self._phase == _DONE:
            return
        self._stop()
        self._cancelled()

    def _cancelled(self) -> None:
        cancel = self._plan.cancel
        assert cancel is not None
        self._phase = _DONE
        self._downstream.on_error(cancel_error(cancel, self._progress))

    def dispose(self) -> None:
        if self._phase != _DONE:
            self._stop()
        else:
            self._drop_upstream()
            rescue, self._rescue = self._rescue, None
            if rescue is not None:
                rescue.dispose()
