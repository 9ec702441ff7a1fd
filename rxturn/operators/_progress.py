"""``TurnProgress``: the facts of one turn, shared by the operators that handle it.

The handler's operators each own one concern, but their verdicts need each other's facts: a
timeout error says how many events arrived and whether partial data was kept (the guard's shadow
fold), an ``AttemptReset`` carries the usage the failed attempt reported, backoffs are clamped to
the time left before the turn's total deadline, and every final error says how many streaming
attempts were made. One small mutable record per turn carries those facts between them, the way
anthropic's ``BetaFallbackState`` carries fallback state: explicit, owned by the caller, never a
module global.

Create one per turn **inside** the subscription (``reactivex.defer``), as
:meth:`rxturn.StreamHandler.stream_turn` does, so that resubscribing starts a fresh turn.
Every operator also works without one (each then keeps private bookkeeping).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TypeVar

from ..fold import INITIAL_STATE, TurnState

__all__ = ["TurnProgress"]

_X = TypeVar("_X", bound=BaseException)


class TurnProgress:
    """Mutable facts of one turn.

    Attributes:
        clock: the scheduler's clock, ``() -> seconds`` (see :func:`._scheduling.clock`).
        started_at: when the turn started, on ``clock``.
        deadline_at: when the total deadline fires, on ``clock`` (``None``: no total deadline).
        attempts: streaming attempts started so far (the guard counts subscriptions).
        events: events accepted in the current attempt.
        earlier_events: events accepted by the attempts before the current one.
        shadow: the guard's shadow fold of the current attempt. It is exact for the verdicts
            (lanes, tool JSON, usage, completion, ``has_partial_data``) but may skip repeated
            text fragments, so never build the reply from it: the consumer's own fold does that.
    """

    __slots__ = (
        "attempts",
        "clock",
        "deadline_at",
        "earlier_events",
        "events",
        "shadow",
        "started_at",
    )

    def __init__(self, clock: Callable[[], float], *, total: float | None = None) -> None:
        self.clock = clock
        self.started_at = clock()
        self.deadline_at: float | None = None if total is None else self.started_at + total
        self.attempts = 0
        self.events = 0
        self.earlier_events = 0
        self.shadow: TurnState = INITIAL_STATE

    def __repr__(self) -> str:
        return (
            f"TurnProgress(attempts={self.attempts}, events={self.events}, "
            f"turn_events={self.turn_events}, partial={self.partial})"
        )

    @property
    def turn_events(self) -> int:
        """Events accepted in the whole turn, all attempts."""
        return self.earlier_events + self.events

    @property
    def partial(self) -> bool:
        """Whether the current attempt holds at least one completed part."""
        return self.shadow.has_partial_data

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
        self.shadow = INITIAL_STATE

    def stamp(self, error: _X) -> _X:
        """Set ``error.attempts`` to the streaming attempts made; returns ``error``."""
        stamp_attempts(error, self.attempts)
        return error


def stamp_attempts(error: BaseException, attempts: int) -> None:
    """Record on ``error`` how many streaming attempts the turn made.

    Only the operator that decides a turn's fate calls this, on the error it lets out, so the
    value always belongs to this turn even when a client reuses one exception object.
    """
    with contextlib.suppress(AttributeError, TypeError):  # an exception type with __slots__
        error.attempts = attempts  # type: ignore[attr-defined]  # any exception may carry it
