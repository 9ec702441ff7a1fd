"""Same-turn failover: which failures move a turn to the next model, and the turn's legs.

With ``TurnEngine(..., failover=True)`` and a fallback manager whose chain has a healthy backup
the turn has not tried yet, a turn whose model fails definitively continues on that backup,
inside the same turn (docs/engine.md). *Definitively* means the error reached the engine: the
stream handler has already spent its ladders and the rescue, or the error is one no retry can
fix for this model (404 model not found, a dead endpoint), or the provider asked to wait longer
than the turn has left (:class:`~rxturn.engine.handler.RetryAfterBeyondDeadline`).

Not every error is the model's: a cancel is the user's, and a request the provider rejects as
malformed (400, except a context overflow a bigger model may take) or a key it refuses (401)
would fail the same way on any model of the chain. Those end the turn as they are: the
"fails over" column of :mod:`rxturn.resilience.verdicts` (:func:`fails_over`). A leg's
deadline is the rescue's budget (:func:`~rxturn.resilience.progress.rescue_budget`).

Both paths fail over through the same three steps here: :func:`can_fail_over` (the engine's
switch, a chain, a model not yet asked), :func:`fail_over` (the verdict, the leg's failure on
the breaker, the switch to the next model) and :meth:`TurnLegs.reset` (the ``AttemptReset``
that tells the turn's consumers). The streaming path continues in the same stream
(:class:`~rxturn.engine.failover._next_leg.NextLeg`); the non-streaming path loops over
``create``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ...cost import Pricer
from ...events import AttemptReset
from ...resilience.fallback import FallbackManager
from ...resilience.progress import rescue_budget
from ...resilience.verdicts import fails_over
from ..observation.observers import ObserverSet
from ..records._attempts import AttemptHooks, AttemptLog
from ..records._results import AttemptStats
from ..turn._outcome import record_turn_failure

__all__ = ["TurnLegs", "can_fail_over", "fail_over", "fails_over", "record_leg_failure"]

log = logging.getLogger("rxturn.engine")


class TurnLegs(AttemptLog):
    """One turn in flight: the model serving it now, the models tried, its attempts.

    It is the turn's :class:`~rxturn.engine.records._attempts.AttemptLog` (the watcher the
    handler reports each attempt to) and so its
    :class:`~rxturn.engine.records._results.AttemptStats` (the router's ``on_control``): one
    object per turn for the three (``log`` and ``stats`` are the object itself).

    Attributes:
        turn: the turn's index in its run.
        served: the model the current leg asks.
        tried: every model the turn has asked, in order.
        model: the model its attempt log stamps on attempts (follows ``served``).
        rescued: whether the non-streaming rescue served (a ``Fallback``).
        started: the turn's start on the engine's clock.
        failure_recorded: the current leg's failure was already recorded with the breaker.
        hooks: where the attempt log reports to observers (``None``: nobody listens).
        raced: the models a hedged first token sent hedges to (failover skips them).
    """

    __slots__ = (
        "_earlier",
        "failure_recorded",
        "hooks",
        "now",
        "raced",
        "served",
        "started",
        "turn",
        "turn_id",
    )

    def __init__(
        self,
        turn: int,
        served: str,
        now: Callable[[], float],
        hooks: AttemptHooks | None = None,
        pricer: Pricer | None = None,
    ) -> None:
        self.turn = turn
        self.served = served
        self._earlier: tuple[str, ...] = ()  # the models asked before ``served``
        self.now = now
        self.started = now()
        self.hooks = hooks
        AttemptLog.__init__(self, now, served, hooks, pricer)
        self.failure_recorded = False
        self.raced: tuple[str, ...] = ()  # grows only when a turn hedges
        self.turn_id = hooks.turn_id if hooks is not None else -1

    @property
    def log(self) -> AttemptLog:
        """The turn's attempt log: the legs themselves."""
        return self

    @property
    def stats(self) -> AttemptStats:
        """What the handler stream revealed (the rescue): the legs themselves."""
        return self

    @property
    def tried(self) -> tuple[str, ...]:
        return (*self._earlier, self.served)

    @property
    def leg(self) -> int:
        """0 for the model the breaker routed the turn to, 1, 2, … for failover legs."""
        return len(self._earlier)

    def switch(self, model: str) -> None:
        self._earlier = (*self._earlier, self.served)
        self.served = model
        self.model = model
        self.failure_recorded = False

    def hedge_won(self, model: str) -> None:
        """A hedge to ``model`` won the turn's race (or its error ended it): it serves the turn
        from now on (no failover: no ``on_model_switched``, the breaker judges the turn by who
        served, or failed)."""
        if model != self.served:
            self._earlier = (*self._earlier, self.served)
            self.served = model
        self.model = model

    def asked(self) -> tuple[str, ...]:
        """Every model the turn has asked, racers included (what failover skips)."""
        return (*self._earlier, self.served, *self.raced)

    def deadline(self, total: float | None, fresh: float | None) -> float | None:
        """The next leg's total deadline: what the turn has left, or ``fresh`` once past (the
        rescue's budget, :func:`~rxturn.resilience.progress.rescue_budget`)."""
        if total is None:
            return None
        return rescue_budget(total - (self.now() - self.started), fresh)

    def streaming_attempts(self) -> int:
        return max(1, self.streams)

    def is_routed(self, fallback: FallbackManager | None) -> bool:
        """Whether the breaker routes to the model serving this leg (its outcome counts)."""
        return self.leg == 0 or (fallback is not None and fallback.routed_model() == self.served)

    def reset(self, error: BaseException) -> AttemptReset:
        """The ``AttemptReset`` that announces a failover to the model now serving."""
        records = self.records
        return AttemptReset(
            attempt=self.streaming_attempts() + 1,
            reason=f"failover to {self.served}: {error}",
            error_type=type(error).__name__,
            usage=records[-1].usage if records else None,
        )


def record_leg_failure(
    legs: TurnLegs,
    error: BaseException,
    fallback: FallbackManager | None,
    observers: ObserverSet,
) -> None:
    """The leg's failure on the breaker and the observers (docs/behaviour.md §4.2)."""
    record_turn_failure(
        fallback,
        observers,
        turn=legs.turn,
        served=legs.served,
        error=error,
        routed=legs.is_routed(fallback),
    )


def can_fail_over(legs: TurnLegs, fallback: FallbackManager | None, enabled: bool) -> bool:
    """Whether the turn may move on: failover on, a chain with a model not yet asked."""
    return (
        enabled
        and fallback is not None
        and legs.turn >= 0
        and fallback.failover_model(legs.asked()) is not None
    )


def fail_over(
    legs: TurnLegs,
    error: BaseException,
    fallback: FallbackManager | None,
    observers: ObserverSet,
    *,
    enabled: bool,
    note_model: Callable[[str], None],
) -> str | None:
    """Record the leg's failure and switch to the next model; ``None``: the turn fails with
    ``error`` (failover off or impossible, or an error that does not fail over)."""
    if not (can_fail_over(legs, fallback, enabled) and fails_over(error)):
        return None
    assert fallback is not None
    legs.leg_failed(error)
    record_leg_failure(legs, error, fallback, observers)
    legs.failure_recorded = True
    target = fallback.failover_model(legs.asked())
    if target is None:
        return None
    log.info("turn %d fails over from %r to %r: %s", legs.turn, legs.served, target, error)
    legs.switch(target)
    note_model(target)
    return target
