"""The attempt's clock: the first-event and idle (per-event) deadlines of one attempt.

Theory of operation. Until the attempt's first event the wait is ``first_event``, afterwards
``per_event``. Each expiry with nothing new counts one consecutive timeout, an event resets the
count, and the attempt fails once the count reaches ``min(2, max_consecutive)`` while nothing
has arrived yet (an empty stream fails fast) or ``max_consecutive`` otherwise. Below the
threshold the attempt keeps waiting on the same stream.

Re-arming a timer per event would cost a scheduler call and an allocation for every delta. So
an event only records its arrival instant and bumps a counter (:meth:`AttemptClock.arrived`,
O(1), no timer work). :attr:`AttemptClock.due` is the one instant the attempt's timer should
fire; when it fires, :meth:`AttemptClock.expired` looks at the records: if events arrived since
it was armed, the idle deadline is ``last_event + per_event`` and ``due`` moves to whatever is
left of it; if not, that is one consecutive timeout. The first event moves ``due`` once, if
``per_event`` ends sooner than the pending first-event wait (or clears it: no ``per_event``).

A batch arrived at one instant: it counts as its events, so an empty batch is no arrival (it
neither ends the first-event wait nor moves the idle one). Time is passed in as float seconds;
the caller owns the timer and re-arms it whenever ``due`` changed (the methods say so).
"""

from __future__ import annotations

from ..errors import StreamTimeoutError

__all__ = ["SLACK", "AttemptClock"]

#: A deadline due within this many seconds counts as reached (timers may fire a hair early:
#: asyncio's clock resolution, a virtual clock's float arithmetic).
SLACK = 1e-6


class AttemptClock:
    """The first-event / idle deadlines of the attempt in flight (see the module docstring).

    Attributes:
        due: when the attempt's timer should fire (``None``: no deadline is pending).
        seen: events of the attempt so far.
    """

    __slots__ = (
        "_armed_from",
        "_consecutive",
        "_fast_fail",
        "_last",
        "_seen_at_arm",
        "_started",
        "due",
        "first_event",
        "max_consecutive",
        "per_event",
        "seen",
    )

    def __init__(
        self, first_event: float | None, per_event: float | None, max_consecutive: int = 10
    ) -> None:
        self.first_event = first_event
        self.per_event = per_event
        self.max_consecutive = max_consecutive
        self._fast_fail = min(2, max_consecutive)
        self.due: float | None = None
        self.seen = 0
        self._started = self._last = self._armed_from = 0.0
        self._seen_at_arm = 0
        self._consecutive = 0

    def __repr__(self) -> str:
        return f"AttemptClock(seen={self.seen}, due={self.due})"

    def begin(self, now: float) -> None:
        """An attempt starts at ``now``: its first-event wait, if any, is armed."""
        self._started = self._last = self._armed_from = now
        self.seen = self._seen_at_arm = self._consecutive = 0
        first = self.first_event
        self.due = None if first is None else now + first

    def stop(self) -> None:
        """The attempt ended (or was let go): nothing is due until the next :meth:`begin`."""
        self.due = None

    def arrived(self, count: int, now: float) -> bool:
        """``count`` events arrived at ``now``; whether :attr:`due` changed (re-arm). A count
        of 0 (an empty batch) is no arrival: nothing changes."""
        if not count:
            return False
        self._last = now
        seen = self.seen
        self.seen = seen + count
        if seen:
            return False
        per_event = self.per_event
        if per_event is None:
            if self.due is None:
                return False
            self.due = None
            return True
        first_event = self.first_event
        if first_event is None or self._armed_from + first_event > now + per_event:
            self._arm(per_event, now, now)
            return True
        return False

    def expired(self, now: float, partial: bool) -> StreamTimeoutError | None:
        """The timer armed for :attr:`due` fired at ``now``: the attempt's timeout error
        (``partial``: whether it kept a completed part), or ``None`` with :attr:`due` moved
        (or cleared) to wait on."""
        seen = self.seen
        if seen > self._seen_at_arm:  # events arrived since arming: measure from the last one
            self._consecutive = 0
            reference, period = self._last, self.per_event
        else:
            reference = self._armed_from
            period = self.first_event if seen == 0 else self.per_event
        if period is None:
            self.due = None
            return None
        due = reference + period
        if due - now > SLACK:
            self._arm(due - now, reference, now)
            return None
        self._consecutive += 1
        if self._consecutive < (self._fast_fail if seen == 0 else self.max_consecutive):
            self._arm(period, now, now)
            return None
        self.due = None
        return StreamTimeoutError(
            "first_event" if seen == 0 else "idle",
            after=period,
            events=seen,
            partial=partial,
            elapsed=now - self._started,
            consecutive=self._consecutive,
        )

    def _arm(self, delay: float, reference: float, now: float) -> None:
        self._armed_from = reference
        self._seen_at_arm = self.seen
        self.due = now + max(0.0, delay)
