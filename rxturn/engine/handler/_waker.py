"""One loop timer for every handled turn on an event loop: :class:`LoopWaker`.

A turn's :class:`~._ladder.Ladder` waits for one instant at a time (the earliest of its
attempt clock's, its total deadline's, a backoff's or limiter's wait, the rescue's deadline).
Most turns end long before it comes: the first-event deadline is two minutes out, a reply takes
milliseconds. With a ``loop.call_at`` per turn, each turn made a timer handle, pushed it on the
loop's heap (its comparisons are Python calls), cancelled it, and the loop popped it again: a
sixth of what the ladder costs a turn, for a timer that almost never fires. The ladders of a
loop share one :class:`LoopWaker` instead.

Theory of operation
-------------------
The waker keeps, per waiting ladder (any zero-argument callable: its ``wake``), the instant it
waits for and a copy of the context current when it armed it, and one loop timer armed for the
earliest instant it has seen since the timer last fired.

- :meth:`~LoopWaker.arm` records the instant (replacing the one before); the loop timer moves
  only when the new instant is earlier than the one it is armed for.
- :meth:`~LoopWaker.disarm` forgets the ladder; the loop timer stays where it is.
- When the loop timer fires, every entry due by then (within
  :data:`~rxturn.resilience.clock.SLACK`, the tolerance the ladder judges its instants with) is
  woken, earliest first (ties in the order they were armed), each in its own context, as a
  ``loop.call_at`` callback runs; then the timer is armed again for the earliest entry left. A
  timer armed for an entry since forgotten just fires early for the others: nothing is woken
  and it is armed again. So it fires about once per earliest instant, however many turns come
  and go before it.
- An entry forgotten or armed again by an earlier wake-up of the same firing is not woken then
  (a cancelled handle does not run either); one armed again is woken at its new instant.
- A wake-up that raises is reported to the loop's exception handler, as a timer callback's
  exception is, and the others still run.

A ladder may be woken a little early (within ``SLACK`` of its instant) and always looks at the
clock itself: one woken before anything is due arms again for what is left. The waker holds a
ladder only while it waits; the module keeps the waker of the last loop it served (as
:func:`~rxturn.operators._scheduling.resolve_scheduler` keeps that loop's scheduler).
"""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from collections.abc import Callable

from ...resilience.clock import SLACK

__all__ = ["LoopWaker", "waker_for"]

_NEVER = float("inf")

#: what an entry is: the instant it waits for, and the context it is woken in
_Entry = tuple[float, contextvars.Context]


class LoopWaker:
    """Wakes each armed callable at its instant, on one loop timer (see the module docstring).

    Used from the loop's thread only, as ``loop.call_at`` is.
    """

    __slots__ = ("_timer", "_timer_due", "_waiting", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._waiting: dict[Callable[[], object], _Entry] = {}
        # (weakly: the loop holds its handle, and the handle the waker; a strong reference back
        # would make each waker a reference cycle once its loop has dropped the handle)
        self._timer: weakref.ref[asyncio.TimerHandle] | None = None
        self._timer_due = _NEVER

    def arm(self, wake: Callable[[], object], due: float) -> None:
        """Wake ``wake`` at ``due`` (the loop's time), in a copy of the current context; this
        replaces the instant it was armed for, if any."""
        self._waiting[wake] = (due, contextvars.copy_context())
        if due < self._timer_due:
            self._arm_timer(due)

    def disarm(self, wake: Callable[[], object]) -> None:
        """Do not wake ``wake`` (nothing if it was not armed)."""
        self._waiting.pop(wake, None)

    def _arm_timer(self, due: float) -> None:
        timer = self._timer() if self._timer is not None else None
        if timer is not None:
            timer.cancel()
        self._timer = weakref.ref(self.loop.call_at(due, self._fire))
        self._timer_due = due

    def _fire(self) -> None:
        self._timer = None
        self._timer_due = _NEVER
        waiting = self._waiting
        end = self.loop.time() + SLACK
        # (iterated over a copy: a dispose from another thread may let an entry go meanwhile)
        ready = [(wake, entry) for wake, entry in tuple(waiting.items()) if entry[0] <= end]
        if len(ready) > 1:
            ready.sort(key=_instant)  # earliest first (a stable sort: ties in arming order)
        try:
            for wake, entry in ready:
                if waiting.get(wake) is not entry:  # forgotten or armed again meanwhile
                    continue
                waiting.pop(wake, None)
                try:
                    entry[1].run(wake)
                except (SystemExit, KeyboardInterrupt):
                    raise
                except BaseException as exc:  # as the loop reports a timer callback's error
                    self.loop.call_exception_handler(
                        {"message": "rxturn: a handled turn's wake-up raised", "exception": exc}
                    )
        finally:
            if waiting:
                earliest = min([entry[0] for entry in tuple(waiting.values())], default=_NEVER)
                if earliest < self._timer_due:
                    self._arm_timer(earliest)


def _instant(item: tuple[Callable[[], object], _Entry]) -> float:
    return item[1][0]


_last: LoopWaker | None = None


def waker_for(loop: asyncio.AbstractEventLoop) -> LoopWaker:
    """The waker of ``loop``: the last one made, when it was made for ``loop``."""
    global _last
    last = _last
    if last is None or last.loop is not loop:
        last = _last = LoopWaker(loop)
    return last
