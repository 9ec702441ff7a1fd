"""One attempt of a handled turn, as the driver observes it.

:class:`AttemptSide` is the half of :class:`~._ladder.Ladder` that an attempt's events reach
(the ladder's own half decides what follows a failed attempt and keeps the turn's timer). It
holds no rule of its own: per item it asks the attempt's
:class:`~rxturn.resilience.guard.ShadowGuard` for its verdict and tells the attempt's
:class:`~rxturn.resilience.clock.AttemptClock` what arrived (re-arming the turn's one timer only
when the clock's ``due`` moved); a failed attempt's error goes through the steps the handler's
composition places after the deadlines — the client's scrub, the progress a rate limit or a 408
learns, :func:`~rxturn.resilience.retry.beyond_deadline` when the caller asked for it — and on
to the ladder's half.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from reactivex import abc

from ...events import StreamEvent
from ...resilience.clock import AttemptClock
from ...resilience.guard import ShadowGuard
from ...resilience.progress import TurnProgress, note_progress
from ...resilience.retry import beyond_deadline

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._plan import TurnSpec

__all__ = ["STREAMING", "AttemptSide"]

#: The turn's phase while an attempt is subscribed (the ladder defines the others).
STREAMING = 1


class AttemptSide(abc.ObserverBase[Any]):
    """The attempt's observer: its state lives in the ladder's slots, declared here."""

    __slots__ = ()

    _plan: TurnSpec
    _downstream: abc.ObserverBase[Any]
    _wrap: bool
    _now: Callable[[], float]
    _progress: TurnProgress
    _guard: ShadowGuard
    _clock: AttemptClock | None
    _phase: int
    _upstream: abc.DisposableBase | None
    _context_ended: bool

    # -- the ladder's half ------------------------------------------------------------------

    def _schedule(self) -> None:
        """Arm the turn's one timer for the earliest instant it waits for."""
        raise NotImplementedError

    def _decide(self, error: Exception) -> None:
        """The retry ladder's call on a failed attempt."""
        raise NotImplementedError

    def _finish(self) -> None:
        """The turn completed."""
        raise NotImplementedError

    # ----------------------------------------------------------------------- the attempt

    def on_next(self, value: Any) -> None:
        if self._phase != STREAMING:
            return
        if type(value) is list:  # a batch: the path every chunk takes, written out in full
            batch = cast("list[StreamEvent]", value)
            if not batch:  # a chunk that decoded to nothing: no event, nothing to forward
                return
            guard = self._guard
            error = guard.batch(batch)
            if error is not None:  # the guard's verdict: the accepted prefix, then the error
                self._drop_upstream()
                accepted = guard.accepted
                if accepted:
                    self._progress.events += accepted
                    self._arrived(accepted)
                    self._downstream.on_next(batch[:accepted])
                    if self._phase != STREAMING:
                        return
                self._attempt_failed(error)
                return
            count = len(batch)
            self._progress.events += count
            clock = self._clock
            if clock is not None and clock.arrived(count, self._now()):
                self._schedule()
            self._downstream.on_next(batch)
            return
        error = self._guard.event(value)
        if error is not None:  # the guard's verdict: this attempt failed here
            self._attempt_failed(error, dispose=True)
            return
        self._progress.events += 1
        self._arrived(1)
        self._downstream.on_next([value] if self._wrap else value)

    def _arrived(self, count: int) -> None:
        clock = self._clock
        if clock is not None and clock.arrived(count, self._now()):
            self._schedule()

    def on_completed(self) -> None:
        if self._phase != STREAMING:
            return
        error = self._guard.truncated(self._progress.events)
        if error is not None:
            self._attempt_failed(error)
            return
        self._upstream = None
        self._end_attempt(None)
        self._finish()

    def on_error(self, error: Exception) -> None:
        if self._phase != STREAMING:
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
            watcher.attempt_ended("stream", error, self._progress.shadow.usage, disposed=disposed)

    def _attempt_deadline(self, t: float) -> None:
        """The attempt clock's instant came: its verdict."""
        clock = self._clock
        assert clock is not None
        error = clock.expired(t, self._progress.partial)
        if error is not None:
            self._drop_upstream()
            self._attempt_failed(error)
