"""Global request and token budgets: a sliding-window log, and the gates that wait on it.

:class:`Budget` is sans-IO (the caller passes ``now``): a log of ``(time, tokens)`` grants over
the last ``window`` seconds. A request is granted at ``now`` only if the grants in
``(now - window, now]`` plus this one stay within ``rpm`` requests and ``tpm`` tokens, so no
window of that length, anywhere, ever holds more than the budget: there is no burst at a window
boundary, as there is with fixed minutes. A grant's tokens are an estimate (input plus
``max_tokens``); :meth:`Budget.correct` replaces it with what the provider reported, in place, so
the correction leaves the window when the grant does. :meth:`Budget.pause` stops every grant
until a Retry-After expires.

:class:`LocalGate` puts a :class:`Budget` on the asyncio loop: waiters queue in order and sleep
until the budget grants. Worker processes and Ray actors reach the one gate of the run through
a proxy with the same methods (:class:`Gate`), so the budget is global in every mode.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable
from typing import Protocol

from ..errors import ConfigError

__all__ = ["WINDOW_SECONDS", "Budget", "Gate", "LocalGate"]

WINDOW_SECONDS = 60.0


class Budget:
    """Requests and tokens per sliding window (``None``: no limit of that kind).

    Examples:
        >>> budget = Budget(rpm=2)
        >>> budget.take(1, now=0.0)[0], budget.take(1, now=1.0)[0], budget.take(1, now=2.0)[0]
        (0.0, 0.0, 58.0)
    """

    __slots__ = ("_log", "_next", "_open", "_tokens", "paused_until", "rpm", "tpm", "window")

    def __init__(
        self, *, rpm: int | None = None, tpm: int | None = None, window: float = WINDOW_SECONDS
    ) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1  # pyright: ignore[reportUnnecessaryIsInstance]
            ):
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
        if not (isinstance(window, int | float) and window > 0 and math.isfinite(window)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"window must be a positive number of seconds, got {window!r}")
        self.rpm = rpm
        self.tpm = tpm
        self.window = float(window)
        self.paused_until = -math.inf
        # [time, tokens, ticket] per grant, oldest first
        self._log: deque[list[float]] = deque()
        self._open: dict[int, list[float]] = {}  # ticket -> its entry, while in the window
        self._tokens = 0.0
        self._next = 0

    @property
    def limited(self) -> bool:
        return self.rpm is not None or self.tpm is not None

    def _expire(self, now: float) -> None:
        horizon = now - self.window
        log = self._log
        while log and log[0][0] <= horizon:
            entry = log.popleft()
            self._tokens -= entry[1]
            self._open.pop(int(entry[2]), None)

    def wait(self, tokens: int, now: float) -> float:
        """Seconds until a request of ``tokens`` could be granted (0: now), without taking."""
        if now < self.paused_until:
            return self.paused_until - now
        if not self.limited:
            return 0.0
        self._expire(now)
        log, wait = self._log, 0.0
        if self.rpm is not None and len(log) >= self.rpm:
            wait = log[len(log) - self.rpm][0] + self.window - now
        if self.tpm is not None:
            need = min(float(tokens), float(self.tpm))  # a row above the budget runs alone
            excess = self._tokens + need - self.tpm
            if excess > 0:
                freed = 0.0
                for entry in log:
                    freed += entry[1]
                    if freed >= excess:
                        wait = max(wait, entry[0] + self.window - now)
                        break
        return max(wait, 0.0)

    def take(self, tokens: int, now: float) -> tuple[float, int]:
        """Grant a request of ``tokens`` at ``now``: ``(0.0, ticket)``, or ``(wait, -1)``."""
        wait = self.wait(tokens, now)
        if wait > 0:
            return wait, -1
        return 0.0, self.charge(tokens, now)

    def charge(self, tokens: int, now: float) -> int:
        """Record a request at ``now`` whatever the budget says; its ticket."""
        if not self.limited:
            return -1
        self._expire(now)
        ticket = self._next
        self._next += 1
        entry = [now, float(tokens), float(ticket)]
        self._log.append(entry)
        self._open[ticket] = entry
        self._tokens += tokens
        return ticket

    def restamp(self, ticket: int, now: float) -> None:
        """Move a grant to ``now``, when its request is really sent (a grant's request may
        leave a little after the grant: the window counts what the provider sees)."""
        entry = self._open.get(ticket)
        if entry is not None and entry[0] < now:
            self._log.remove(entry)
            entry[0] = now
            self._log.append(entry)

    def correct(self, ticket: int, tokens: int) -> None:
        """Replace a grant's estimated tokens by the reported ones (if still in the window)."""
        entry = self._open.get(ticket)
        if entry is not None:
            self._tokens += tokens - entry[1]
            entry[1] = float(tokens)

    def pause(self, seconds: float, now: float) -> None:
        """No grant before ``now + seconds`` (a Retry-After); a longer pause wins."""
        if seconds > 0 and math.isfinite(seconds):
            self.paused_until = max(self.paused_until, now + seconds)

    def in_window(self, now: float) -> tuple[int, float]:
        """(requests, tokens) granted in the window ending at ``now``."""
        self._expire(now)
        return len(self._log), self._tokens


class Gate(Protocol):
    """What a runner asks of the run's budget, wherever the budget lives."""

    async def acquire(self, tokens: int) -> int:
        """Wait until a request of ``tokens`` is granted; its ticket."""
        ...

    def correct(self, ticket: int, tokens: int) -> None: ...

    def restamp(self, ticket: int) -> None:
        """The request of a grant is being sent now."""
        ...

    def pause(self, seconds: float) -> None:
        """A provider's Retry-After: no request of any worker before it expires."""
        ...


class LocalGate:
    """A :class:`Budget` on the running loop; waiters are served first come, first served."""

    def __init__(self, budget: Budget, clock: Callable[[], float] | None = None) -> None:
        self.budget = budget
        self._clock = clock
        self._lock: asyncio.Lock | None = None
        #: seconds the head of the queue spent waiting (the run's rate-limit waits)
        self.waited = 0.0

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
                wait, ticket = budget.take(tokens, self.now())
                if wait == 0.0:
                    return ticket
                self.waited += wait
                await asyncio.sleep(wait)

    def correct(self, ticket: int, tokens: int) -> None:
        if ticket >= 0:
            self.budget.correct(ticket, tokens)

    def restamp(self, ticket: int) -> None:
        if ticket >= 0:
            self.budget.restamp(ticket, self.now())

    def pause(self, seconds: float) -> None:
        self.budget.pause(seconds, self.now())
