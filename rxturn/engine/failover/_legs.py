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
"""

from __future__ import annotations

from collections.abc import Callable

from ...cost import Pricer
from ...resilience.progress import rescue_budget
from ...resilience.verdicts import fails_over
from ..records._attempts import AttemptHooks, AttemptLog
from ..records._results import AttemptStats

__all__ = ["TurnLegs", "fails_over"]


class TurnLegs:
    """One turn in flight: the model serving it now, the models tried, its attempts.

    Attributes:
        turn: the turn's index in its run.
        served: the model the current leg asks.
        tried: every model the turn has asked, in order.
        log: the turn's attempt log (its model follows ``served``).
        stats: what the handler stream revealed (resets, rescue).
        started: the turn's start on the engine's clock.
        failure_recorded: the current leg's failure was already recorded with the breaker.
        hooks: where the attempt log reports to observers (``None``: nobody listens).
        raced: the models a hedged first token sent hedges to (failover skips them).
    """

    __slots__ = (
        "_earlier",
        "failure_recorded",
        "hooks",
        "log",
        "now",
        "raced",
        "served",
        "started",
        "stats",
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
        self.log = AttemptLog(now, served, hooks, pricer)
        self.stats = AttemptStats()
        self.failure_recorded = False
        self.raced: tuple[str, ...] = ()  # grows only when a turn hedges
        self.turn_id = hooks.turn_id if hooks is not None else -1

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
        self.log.model = model
        self.failure_recorded = False

    def hedge_won(self, model: str) -> None:
        """A hedge to ``model`` won the turn's race: it serves the turn from now on (no
        failover: no ``on_model_switched``, the breaker judges the turn by who served)."""
        if model != self.served:
            self._earlier = (*self._earlier, self.served)
            self.served = model
        self.log.model = model

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
        return max(1, sum(1 for record in self.log.records if record.kind == "stream"))
