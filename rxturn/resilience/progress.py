"""The facts of one turn, its total deadline and the rescue's budget.

Theory of operation. The handler's rules each own one concern, but their verdicts need each
other's facts: a timeout error says how many events arrived and whether partial data was kept
(the shadow guard's fold), an ``AttemptReset`` carries the usage the failed attempt reported,
backoffs are clamped to the time left before the turn's total deadline, and every final error
says how many streaming attempts were made. One small mutable record per turn,
:class:`TurnProgress`, carries those facts between them: explicit, owned by the caller, never a
module global. It holds the turn's :class:`~rxturn.resilience.guard.ShadowGuard`.

The **total deadline** is one instant, ``deadline_at = start + total``: it covers every
attempt, every backoff and every limiter wait, and when it is reached :func:`total_timeout`
is the turn's error (the events of the whole turn, whether partial data was kept, the time
since the start). No streaming attempt follows it; the rescue may.

The **rescue budget** (:func:`rescue_budget`) is what is left of the total deadline while it
is still in the future; once it has passed (the usual case after a total timeout), a *fresh*
budget (the first-event timeout, :data:`FRESH_BUDGET` when that is disabled); no deadline at all
when the turn has none. It is never negative, so its timer is armed with it as it is. Same-turn
failover gives its next leg the same budget.

The **rescue race** (:class:`RescueRace`): the rescue request runs against that budget; the
first outcome settles it, and a reply that completes at the same instant the deadline is reached
wins: the deadline is judged one scheduler turn late, so a result already delivered (or queued)
first is accepted. A rescue that fails (its error, :func:`no_reply` when its request ends
without a reply, or the race's timeout) ends the turn with :func:`rescue_failed`: the stream's
error and the rescue's together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .._arguments import described, shown
from .._constants import FIRST_EVENT_TIMEOUT
from .._validate import finite
from ..errors import (
    ConfigError,
    RateLimitError,
    RequestTimeoutError,
    RescueFailed,
    RescueTimeoutError,
    RxturnError,
    StreamTimeoutError,
)
from ..fold import TurnState
from .guard import ShadowGuard
from .retry import stamp_attempts

__all__ = [
    "FRESH_BUDGET",
    "RescueRace",
    "TurnProgress",
    "no_reply",
    "note_progress",
    "rescue_budget",
    "rescue_failed",
    "stamp_attempts",
    "total_timeout",
]

_X = TypeVar("_X", bound=BaseException)

#: The fresh budget of a rescue (or a failover leg) after the turn's deadline has passed, when
#: the first-event timeout that sets it is disabled: the default first-event timeout.
FRESH_BUDGET: float = FIRST_EVENT_TIMEOUT


def rescue_budget(remaining: float | None, fresh: float | None) -> float | None:
    """Seconds the rescue (or the next failover leg) gets: ``remaining`` (the time left before
    the turn's total deadline) while positive, else ``fresh`` (else :data:`FRESH_BUDGET`);
    ``None`` (no deadline) when the turn has none. Never negative: a timer may be armed with
    it as it is."""
    if remaining is None:
        return None
    if remaining > 0:
        return remaining
    return max(0.0, fresh) if fresh is not None else FRESH_BUDGET


class RescueRace:
    """The rescue request against its deadline (see the module docstring).

    Attributes:
        budget: the rescue's seconds (``None``: no deadline).
        expiring: the deadline's instant came once; it is judged again one scheduler turn later.
        settled: an outcome decided the race.
    """

    __slots__ = ("budget", "expiring", "settled")

    def __init__(self, budget: float | None) -> None:
        self.budget = budget
        self.expiring = False
        self.settled = False

    def __repr__(self) -> str:
        return f"RescueRace(budget={self.budget}, settled={self.settled})"

    def outcome(self) -> bool:
        """A reply or a failure arrived: whether it decides the race (only the first does)."""
        if self.settled:
            return False
        self.settled = True
        return True

    def deadline(self) -> RescueTimeoutError | None:
        """The deadline's instant came: ``None`` the first time (look again one scheduler turn
        later, :attr:`expiring`) or once settled; the second time, the timeout, which the
        caller hands on as the race's outcome."""
        if self.settled:
            return None
        if not self.expiring:
            self.expiring = True
            return None
        assert self.budget is not None, "a race without a budget has no deadline"
        return RescueTimeoutError(self.budget)


def no_reply() -> RxturnError:
    """The rescue's error when its request completed without a reply."""
    return RxturnError("fallback request ended without a reply")


def rescue_failed(
    stream_error: Exception, rescue_error: BaseException, progress: TurnProgress | None
) -> RescueFailed:
    """The turn's error once the rescue lost: the error streaming gave up on and the rescue's,
    stamped with the streaming attempts made when the turn's ``progress`` is known."""
    error = RescueFailed(stream_error, rescue_error)
    if progress is not None:
        progress.stamp(error)
    return error


class TurnProgress:
    """Mutable facts of one turn.

    Create one per turn **inside** the subscription (``reactivex.defer``), as
    :meth:`rxturn.StreamHandler.stream_turn` does, so that resubscribing starts a fresh turn.

    Attributes:
        clock: the scheduler's clock, ``() -> seconds``.
        started_at: when the turn started, on ``clock``.
        deadline_at: when the total deadline fires, on ``clock`` (``None``: no total deadline).
        attempts: streaming attempts started so far.
        events: events accepted in the current attempt.
        earlier_events: events accepted by the attempts before the current one.
        guard: the shadow guard of the current attempt.
    """

    __slots__ = (
        "attempts",
        "clock",
        "deadline_at",
        "earlier_events",
        "events",
        "guard",
        "started_at",
    )

    def __init__(self, clock: Callable[[], float], *, total: float | None = None) -> None:
        if not callable(clock):
            raise ConfigError(
                f"TurnProgress: clock must be a callable returning seconds, got {described(clock)}"
            )
        if total is not None and not finite(total):
            raise ConfigError(
                "TurnProgress: total must be a finite number of seconds or None, "
                f"got {shown(total)}"
            )
        self.clock = clock
        self.started_at = clock()
        self.deadline_at: float | None = None if total is None else self.started_at + total
        self.attempts = 0
        self.events = 0
        self.earlier_events = 0
        self.guard = ShadowGuard()

    def __repr__(self) -> str:
        return (
            f"TurnProgress(attempts={self.attempts}, events={self.events}, "
            f"turn_events={self.turn_events}, partial={self.partial})"
        )

    @property
    def shadow(self) -> TurnState:
        """The guard's shadow fold of the current attempt: the fold's state after the events
        accepted so far (from :data:`~rxturn.fold.INITIAL_STATE`: thinking is not kept)."""
        return self.guard.shadow

    @property
    def turn_events(self) -> int:
        """Events accepted in the whole turn, all attempts."""
        return self.earlier_events + self.events

    @property
    def partial(self) -> bool:
        """Whether the current attempt holds at least one completed part."""
        return self.guard.shadow.has_partial_data

    def remaining(self) -> float | None:
        """Seconds left before the total deadline (negative once past; ``None``: none)."""
        if self.deadline_at is None:
            return None
        return self.deadline_at - self.clock()

    def begin_attempt(self) -> None:
        """A streaming attempt starts: its shadow and event count start from zero."""
        self.attempts += 1
        self.earlier_events += self.events
        self.events = 0
        self.guard.reset()

    def stamp(self, error: _X) -> _X:
        """Set ``error.attempts`` to the streaming attempts made; returns ``error``."""
        stamp_attempts(error, self.attempts)
        return error


def total_timeout(after: float, progress: TurnProgress, now: float) -> StreamTimeoutError:
    """The turn's error when its total deadline of ``after`` seconds is reached at ``now``
    (the step that lets it out stamps its ``attempts``)."""
    return StreamTimeoutError(
        "total",
        after=after,
        events=progress.turn_events,
        partial=progress.partial,
        elapsed=now - progress.started_at,
    )


def note_progress(error: BaseException, progress: TurnProgress) -> None:
    """A rate limit or a 408 learns what its attempt had received (its ``partial`` and
    ``events``): the caller can tell a refusal from a reply cut short."""
    if isinstance(error, RateLimitError | RequestTimeoutError):
        error.note_progress(partial=progress.partial, events=progress.events)
