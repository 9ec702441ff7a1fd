"""Global request and token budgets: a sliding-window log, and the gates that wait on it.

:class:`Budget` is sans-IO (the caller passes ``now``). A request goes through two states:

* **granted** (:meth:`Budget.take`): not sent yet. It counts in *every* window, the current
  one and every later one, because it may be sent at any moment from now on;
* **sent** (:meth:`Budget.restamp`, called once the request has reached the provider, or
  later): it now counts in the windows that hold its send time, and leaves the log ``window``
  seconds after it.

A grant whose request is never sent (its row was cancelled, the run stopped, its attempt gave up
at a deadline) is given back with :meth:`Budget.release`; until then it holds its share of the
budget. A request is granted at ``now`` only if the sent requests in ``(now - window, now]``
plus every grant not yet sent plus this one stay within ``rpm`` requests and ``tpm`` tokens.
So as long as each request is stamped at or after the moment the provider saw it, no window of
that length, anywhere, ever holds more than the budget at the provider: however long a granted
request waits before it leaves, it is counted all the while. There is no burst at a window
boundary either, as there is with fixed minutes. A grant's tokens are an estimate (input plus
``max_tokens``); :meth:`Budget.correct` replaces it with what the provider reported, in place,
so the correction leaves the window when the request does. :meth:`Budget.pause` stops every
grant until a Retry-After expires.

:class:`LocalGate` puts a :class:`Budget` on the asyncio loop: waiters queue in order and sleep
until the budget grants (woken early when a grant is sent, released or corrected). Worker
processes and Ray actors reach the one gate of the run through a proxy with the same methods
(:class:`Gate`), so the budget is global in every mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import math
from collections import deque
from collections.abc import Callable
from typing import Protocol

from .._arguments import check_callable, check_instance, described, shown
from .._validate import finite, positive
from ..errors import ConfigError

__all__ = [
    "MAX_PER_MINUTE",
    "MAX_PER_MINUTE_TEXT",
    "WINDOW_SECONDS",
    "Budget",
    "Gate",
    "LocalGate",
    "WaitClock",
]

WINDOW_SECONDS = 60.0


MAX_PER_MINUTE = 10**15
"""The largest ``rpm`` / ``tpm``: far above any provider's limit, and where the budget's sums
(floats) still count every token exactly; a larger number is a typo, not a budget (one past
what a float holds broke the run deep inside)."""
MAX_PER_MINUTE_TEXT = "10**15"


class Budget:
    """Requests and tokens per sliding window (``None``: no limit of that kind).

    Examples:
        >>> budget = Budget(rpm=2)
        >>> _, first = budget.take(1, now=0.0)
        >>> _, second = budget.take(1, now=1.0)
        >>> budget.take(1, now=100.0)  # granted, neither sent: no time alone frees them
        (inf, -1)
        >>> budget.restamp(first, now=120.0)  # sent at 120: counted until 180
        >>> budget.take(1, now=130.0)
        (50.0, -1)
        >>> budget.release(second)  # never sent
        True
        >>> budget.take(1, now=130.0)
        (0.0, 2)
    """

    __slots__ = (
        "_held",
        "_held_tokens",
        "_log",
        "_next",
        "_open",
        "_tokens",
        "limited",
        "paused_until",
        "rpm",
        "tpm",
        "window",
    )

    def __init__(
        self, *, rpm: int | None = None, tpm: int | None = None, window: float = WINDOW_SECONDS
    ) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1  # pyright: ignore[reportUnnecessaryIsInstance]
            ):
                raise ConfigError(f"{name} must be an integer >= 1, got {shown(value)}")
            if value is not None and value > MAX_PER_MINUTE:
                raise ConfigError(
                    f"{name} must be at most {MAX_PER_MINUTE_TEXT} (per minute), got "
                    f"{described(value)}"
                )
        if not (positive(window) and finite(window)):
            raise ConfigError(f"window must be a positive number of seconds, got {shown(window)}")
        self.rpm = rpm
        self.tpm = tpm
        self.window = float(window)
        #: whether anything is counted (without limits a grant is only a pause's check)
        self.limited = rpm is not None or tpm is not None
        self.paused_until = -math.inf
        # sent requests: [sent at, tokens, ticket], in order of sending time
        self._log: deque[list[float]] = deque()
        self._open: dict[int, list[float]] = {}  # ticket -> its sent entry, while in the window
        self._tokens = 0.0  # tokens of the sent requests in the log
        self._held: dict[int, float] = {}  # ticket -> tokens, granted and not sent yet
        self._held_tokens = 0.0
        self._next = 0

    def _expire(self, now: float) -> None:
        horizon = now - self.window
        log = self._log
        while log and log[0][0] <= horizon:
            entry = log.popleft()
            self._tokens -= entry[1]
            self._open.pop(int(entry[2]), None)

    def wait(self, tokens: int, now: float) -> float:
        """Seconds until a request of ``tokens`` could be granted (0: now), without taking.

        ``math.inf`` when only a grant not yet sent stands in the way: no time alone frees it,
        only its sending (:meth:`restamp`) or its release (:meth:`release`).
        """
        if now < self.paused_until:
            return self.paused_until - now
        if not self.limited:
            return 0.0
        self._expire(now)
        log, wait = self._log, 0.0
        if self.rpm is not None:
            over = len(log) + len(self._held) - self.rpm  # sent requests that must leave first
            if over >= 0:
                if over >= len(log):
                    return math.inf
                wait = log[over][0] + self.window - now
        if self.tpm is not None:
            need = min(float(tokens), float(self.tpm))  # a row above the budget runs alone
            excess = self._tokens + self._held_tokens + need - self.tpm
            if excess > 0:
                freed = 0.0
                for entry in log:
                    freed += entry[1]
                    if freed >= excess:
                        wait = max(wait, entry[0] + self.window - now)
                        break
                else:
                    return math.inf
        return max(wait, 0.0)

    def take(self, tokens: int, now: float) -> tuple[float, int]:
        """Grant a request of ``tokens`` at ``now``: ``(0.0, ticket)``, or ``(wait, -1)``.

        The grant counts in every window until its request is sent (:meth:`restamp`) or the
        grant is given back (:meth:`release`).
        """
        wait = self.wait(tokens, now)
        if wait > 0:
            return wait, -1
        return 0.0, self.charge(tokens)

    def charge(self, tokens: int, now: float | None = None) -> int:
        """Record a grant whatever the budget says; its ticket (``-1`` without limits)."""
        del now  # a grant not yet sent has no time: it counts in every window
        if not self.limited:
            return -1
        ticket = self._next
        self._next += 1
        self._held[ticket] = float(tokens)
        self._held_tokens += tokens
        return ticket

    def restamp(self, ticket: int, now: float) -> None:
        """The request of ``ticket`` was sent: it counts from ``now`` (call it once the provider
        has the request, or later; a later time only holds the budget a little longer).

        A request already sent moves to ``now`` if that is later; an unknown or expired ticket
        is ignored."""
        tokens = self._held.pop(ticket, None)
        if tokens is not None:
            self._held_tokens -= tokens
            entry = [now, tokens, float(ticket)]
            self._tokens += tokens
        else:
            entry = self._open.get(ticket)
            if entry is None or entry[0] >= now:
                return
            self._log.remove(entry)
            entry[0] = now
        self._open[ticket] = entry
        log = self._log
        if not log or log[-1][0] <= now:
            log.append(entry)
            return
        index = len(log)  # an earlier time than the newest (a caller's clock): keep the order
        while index > 0 and log[index - 1][0] > now:
            index -= 1
        log.insert(index, entry)

    def release(self, ticket: int) -> bool:
        """Give back a grant whose request will not be sent; ``False`` if it is not held
        (sent already, released already, or unknown): a sent request stays counted."""
        tokens = self._held.pop(ticket, None)
        if tokens is None:
            return False
        self._held_tokens -= tokens
        return True

    def correct(self, ticket: int, tokens: int) -> None:
        """Replace a grant's estimated tokens by the reported ones (held, or sent and still
        in the window)."""
        held = self._held.get(ticket)
        if held is not None:
            self._held[ticket] = float(tokens)
            self._held_tokens += tokens - held
            return
        entry = self._open.get(ticket)
        if entry is not None:
            self._tokens += tokens - entry[1]
            entry[1] = float(tokens)

    def pause(self, seconds: float, now: float) -> None:
        """No grant before ``now + seconds`` (a Retry-After); a longer pause wins."""
        if seconds > 0 and math.isfinite(seconds):
            self.paused_until = max(self.paused_until, now + seconds)

    def in_window(self, now: float) -> tuple[int, float]:
        """(requests, tokens) the window ending at ``now`` counts: the requests sent in it and
        every grant not sent yet."""
        self._expire(now)
        return len(self._log) + len(self._held), self._tokens + self._held_tokens

    @property
    def held(self) -> int:
        """Grants whose requests are not sent yet (nor released)."""
        return len(self._held)


class WaitClock:
    """The wall time during which at least one wait was going on (sans-IO: callers pass ``now``).

    Waits overlap (many rows sleep after the same rate limit, a row sleeps while another waits
    for its grant): each second counts once, however many waited in it. A wait is either open
    (:meth:`begin` … :meth:`end`: its end is not known in advance, a wait for a grant) or of a
    known length (:meth:`add`: a retry's sleep, a pause); ``now`` never goes back.

    Examples:
        >>> clock = WaitClock()
        >>> clock.add(0.0, 5.0)  # a row sleeps 5 s
        >>> clock.add(2.0, 5.0)  # another, from 2 s to 7 s: overlaps the first
        >>> clock.waited(4.0), clock.waited(10.0)
        (4.0, 7.0)
        >>> clock.begin(12.0)
        >>> clock.waited(13.0)
        8.0
        >>> clock.end(14.0)
        >>> clock.waited(20.0)
        9.0
    """

    __slots__ = ("_ends", "_open", "_since", "_total")

    def __init__(self) -> None:
        self._open = 0  # waits begun and not ended
        self._ends: list[float] = []  # a heap: when each wait of known length ends
        self._since: float | None = None  # since when something waits (None: nothing does)
        self._total = 0.0  # seconds counted up to ``_since`` (or to now, nothing waiting)

    def _advance(self, now: float) -> None:
        ends = self._ends
        while ends and ends[0] <= now:
            end = heapq.heappop(ends)
            if not ends and not self._open and self._since is not None:
                self._total += max(end - self._since, 0.0)
                self._since = None

    def _start(self, now: float) -> None:
        self._advance(now)
        if self._since is None:
            self._since = now

    def begin(self, now: float) -> None:
        """A wait of unknown length begins."""
        self._start(now)
        self._open += 1

    def end(self, now: float) -> None:
        """A wait :meth:`begin` began is over."""
        self._advance(now)
        self._open = max(self._open - 1, 0)
        if not self._open and not self._ends and self._since is not None:
            self._total += max(now - self._since, 0.0)
            self._since = None

    def add(self, now: float, seconds: float) -> None:
        """A wait of ``seconds`` begins now (a negative, NaN or infinite length is ignored)."""
        if not (seconds > 0 and math.isfinite(seconds)):
            return
        self._start(now)
        heapq.heappush(self._ends, now + seconds)

    def waited(self, now: float) -> float:
        """Seconds up to ``now`` during which something waited."""
        self._advance(now)
        since = self._since
        return self._total + (max(now - since, 0.0) if since is not None else 0.0)


#: The methods a :class:`Gate` has (a gate of the caller's is checked for them).
GATE_METHODS = ("acquire", "correct", "restamp", "release", "pause")


def check_gate(gate: object, where: str) -> None:
    """A ConfigError unless ``gate`` is ``None`` or has every :class:`Gate` method."""
    if gate is not None and not all(callable(getattr(gate, n, None)) for n in GATE_METHODS):
        raise ConfigError(
            f"{where} must be a Gate ({', '.join(GATE_METHODS)}), got {type(gate).__name__}"
        )


class Gate(Protocol):
    """What a runner asks of the run's budget, wherever the budget lives.

    Every ticket :meth:`acquire` returns ends in :meth:`restamp` (its request was sent) or
    :meth:`release` (it will not be): until then it holds budget in every window.
    """

    async def acquire(self, tokens: int) -> int:
        """Wait until a request of ``tokens`` is granted; its ticket. Cancelled while waiting,
        it grants nothing."""
        ...

    def correct(self, ticket: int, tokens: int) -> None: ...

    def restamp(self, ticket: int) -> None:
        """The request of a grant has been sent (it counts from now)."""
        ...

    def release(self, ticket: int) -> None:
        """The request of a grant will not be sent: give its budget back."""
        ...

    def pause(self, seconds: float) -> None:
        """A provider's Retry-After: no request of any worker before it expires."""
        ...


class LocalGate:
    """A :class:`Budget` on the running loop; waiters are served first come, first served."""

    def __init__(self, budget: Budget, clock: Callable[[], float] | None = None) -> None:
        check_instance(budget, Budget, "LocalGate(budget=...)", "a Budget")
        check_callable(clock, "LocalGate(clock=...)", "a () -> seconds callable", optional=True)
        self.budget = budget
        self._clock = clock
        self._lock: asyncio.Lock | None = None
        self._changed: asyncio.Event | None = None  # set when a grant is sent/released/corrected
        self._waits = WaitClock()
        #: called with the seconds of each Retry-After pause, once it holds (the command
        #: line's notice of a long one where no progress is shown)
        self.on_pause: Callable[[float], object] | None = None

    @property
    def waited(self) -> float:
        """Seconds during which the run waited for the provider's rate limit, the wait going
        on now included (a progress line shows a long wait while it lasts): a request waiting
        for its grant (the head of the queue), a Retry-After pause, and a row's sleep on the
        rate-limit ladder (:meth:`rate_limited`), each second counted once however many
        waited in it."""
        return self._waits.waited(self.now())

    def rate_limited(self, seconds: float) -> None:
        """A row sleeps ``seconds`` after a rate-limit answer (429/529) before its retry."""
        self._waits.add(self.now(), seconds)

    def now(self) -> float:
        if self._clock is not None:
            return self._clock()
        return asyncio.get_running_loop().time()

    async def acquire(self, tokens: int) -> int:
        budget = self.budget
        now = self.now()
        if self._lock is None or not self._lock.locked():
            wait, ticket = budget.take(tokens, now)
            if wait == 0.0:
                return ticket
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            while True:
                start = self.now()
                wait, ticket = budget.take(tokens, start)
                if wait == 0.0:
                    return ticket
                changed = self._changed
                if changed is None:
                    changed = self._changed = asyncio.Event()
                changed.clear()
                # until the wait is over, or the budget changed: then ask again
                self._waits.begin(start)
                try:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(changed.wait(), None if math.isinf(wait) else wait)
                finally:
                    self._waits.end(self.now())

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()

    def correct(self, ticket: int, tokens: int) -> None:
        if ticket >= 0:
            self.budget.correct(ticket, tokens)
            self._wake()

    def restamp(self, ticket: int) -> None:
        if ticket >= 0:
            self.budget.restamp(ticket, self.now())
            self._wake()

    def release(self, ticket: int) -> None:
        if ticket >= 0 and self.budget.release(ticket):
            self._wake()

    def pause(self, seconds: float) -> None:
        now = self.now()
        self.budget.pause(seconds, now)
        self._waits.add(now, seconds)  # every new request of the run waits it out
        if self.on_pause is not None:
            self.on_pause(seconds)
