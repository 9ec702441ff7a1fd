"""One attempt of a handled turn, as the ladder observes it: the shadow fold's verdicts, the
first-event and idle deadlines, the watcher's annotations.

:class:`AttemptSide` is the half of :class:`~._ladder.Ladder` that an attempt's events reach
(the ladder's own half decides what follows a failed attempt and keeps the turn's timer). It
does what ``attempt_guard`` and ``deadlines`` do, in that order, per event (their module
docstrings, in :mod:`rxturn.operators`, explain the rules), and what the handler adds around
each attempt: the client's scrub, the progress noted on rate-limit and 408 errors, and
``RetryAfterBeyondDeadline`` when the caller asked for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from reactivex import abc

from ..errors import (
    RateLimitError,
    RequestTimeoutError,
    RetryAfterBeyondDeadline,
    StreamTimeoutError,
    TruncatedStreamError,
)
from ..events import Delta, StreamEvent
from ..fold import fold
from ..operators._progress import TurnProgress

if TYPE_CHECKING:
    from collections.abc import Callable

    from .handler import TurnPlan

__all__ = ["SLACK", "STREAMING", "AttemptSide"]

#: A deadline due within this many seconds counts as reached (timers may fire a hair early:
#: asyncio's clock resolution, a virtual clock's float arithmetic).
SLACK = 1e-6

#: The turn's phase while an attempt is subscribed (the ladder defines the others).
STREAMING = 1


class AttemptSide(abc.ObserverBase[Any]):
    """The attempt's observer: its state lives in the ladder's slots, declared here."""

    __slots__ = ()

    _plan: TurnPlan
    _downstream: abc.ObserverBase[Any]
    _wrap: bool
    _now: Callable[[], float]
    _progress: TurnProgress
    _phase: int
    _upstream: abc.DisposableBase | None
    _context_ended: bool
    _attempt_due: float | None
    _attempt_started: float
    _seen: int
    _last: float
    _armed_from: float
    _seen_at_arm: int
    _consecutive: int
    _shadow_started: bool
    _repeat_index: int
    _pending_index: int
    _pending: list[str] | None

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

    # ----------------------------------------------------------------------- the attempt

    def on_next(self, value: Any) -> None:
        if self._phase != STREAMING:
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
        if not batch:  # a chunk that decoded to nothing: no event, nothing to forward
            return
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
                            self._pending.append(event.text)  # pyright: ignore[reportOptionalMemberAccess]
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
                if self._phase != STREAMING:
                    return
            self._attempt_failed(error)
            return
        count = len(batch)
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
        if self._phase != STREAMING:
            return
        if not self._progress.shadow.completed:
            self._attempt_failed(TruncatedStreamError(self._progress.events))
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
        """An attempt's error, annotated as the watcher step does, then the ladder's call."""
        if dispose:
            self._drop_upstream()
        self._attempt_due = None  # the ladder's next step re-arms the timer
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

    def _arm_attempt(self, delay: float, reference: float) -> None:
        self._armed_from = reference
        self._seen_at_arm = self._seen
        self._attempt_due = self._now() + max(0.0, delay)
        self._schedule()

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
        if due - t > SLACK:
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
