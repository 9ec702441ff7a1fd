"""The hedged first token in a turn: the engine's side of :func:`rxturn.operators.hedge`.

With ``TurnEngine(..., hedge=HedgePolicy(...))`` a streaming turn's first attempt is a race
(docs/engine.md): :class:`TurnRace` is what the handler pipes that attempt through. It opens a
hedge's request (the target's client, or the turn's, with the target's model), tells the race
which targets' breakers are open, reports each racer to the turn's attempt log, fires the
observers' ``on_hedge`` / ``on_hedge_skipped``, and, when a hedge wins, moves the rest of the
turn to the winner's target: the handler's later attempts and rescue (``TurnSpec.retarget``)
and the served model (``TurnLegs.hedge_won``). The rules of the race are
:mod:`rxturn.resilience.hedge`'s.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import msgspec
from reactivex import Observable

from ...cost import Pricer
from ...messages import Request, RequestOptions, Usage
from ...operators._hedge import hedge_
from ...resilience.fallback import FallbackManager
from ...resilience.hedge import HedgePolicy, HedgeTarget
from ..observation.observers import ObserverSet
from ._plan import open_attempt

if TYPE_CHECKING:
    from ...clients._base import ModelClient
    from ..failover._legs import TurnLegs
    from ._plan import TurnSpec

__all__ = ["TurnRace"]


class TurnRace:
    """One turn's race: the operator around its first attempt, and the race's watcher."""

    __slots__ = (
        "_targets",
        "client",
        "fallback",
        "legs",
        "observers",
        "options",
        "plan",
        "policy",
        "pricer_of",
        "request",
    )

    def __init__(
        self,
        policy: HedgePolicy,
        client: ModelClient,
        request: Request,
        options: RequestOptions,
        legs: TurnLegs,
        plan: TurnSpec,
        fallback: FallbackManager | None,
        observers: ObserverSet,
        pricer_of: Callable[[object], Pricer] | None = None,
    ) -> None:
        self.policy = policy
        self.pricer_of = pricer_of  # a client's pricer (the engine's rule), when it prices
        self.client = client
        self.request = request
        self.options = options
        self.legs = legs
        self.plan = plan
        self.fallback = fallback
        self.observers = observers
        self._targets: dict[int, HedgeTarget] = {}
        for target in policy.targets:
            self._check(target)

    def _check(self, target: HedgeTarget) -> None:
        """Build the request a target on another client would send, now, before anything is
        sent: a part its wire cannot take (a PDF for Ollama) is the turn's ConfigError here,
        where the hedge's own ConfigError ended the race once the primary was answering."""
        other = target.client
        if other is None or other is self.client:
            return
        build = getattr(other, "_body", None)  # an HTTP client of rxturn's (custom ones: no)
        if build is not None:
            build(self.request, self._options(target), model=self._model(target), stream=True)

    def __call__(self, primary: Observable[Any]) -> Observable[Any]:
        """The first attempt, raced."""
        return primary.pipe(
            hedge_(
                self.policy,
                self._open,
                self.legs.served,
                self.client,
                self._blocked,
                False,  # (the race is the turn's first attempt: no 429 in the turn before it)
                self,
                self._on_hedge,
                self._on_skip,
                None,  # (the scheduler the handler subscribes it on)
                self._on_fail,
            )
        )

    # -- targets ---------------------------------------------------------------------------

    def _model(self, target: HedgeTarget) -> str:
        return target.model if target.model is not None else self.legs.served

    def _client(self, target: HedgeTarget) -> ModelClient:
        return cast("ModelClient", target.client) if target.client is not None else self.client

    def _options(self, target: HedgeTarget) -> RequestOptions:
        return msgspec.structs.replace(self.options, model=self._model(target))

    def _open(self, target: HedgeTarget) -> Observable[Any]:
        source = open_attempt(self._client(target), self.request, self._options(target))
        return cast("Observable[Any]", source)

    def _blocked(self, target: HedgeTarget) -> bool:
        """Whether the target's breaker is open: the primary while the breaker routes away
        from it, or a backup out of rotation."""
        fallback = self.fallback
        if fallback is None:
            return False
        model = self._model(target)
        if model == fallback.primary and fallback.routed_model() != fallback.primary:
            return True
        return model in fallback.failed_fallbacks()

    # -- callbacks -------------------------------------------------------------------------

    def _on_hedge(
        self, *, index: int, model: str, target: HedgeTarget, reason: str, after: float
    ) -> None:
        self._targets[index] = target
        self.legs.raced = (*self.legs.raced, model)
        self._report("on_hedge", self.legs.served, model, reason=reason, after=after)

    def _on_skip(self, *, target: HedgeTarget | None, model: str | None, reason: str) -> None:
        self._report("on_hedge_skipped", self.legs.served, model, reason=reason)

    def _report(self, callback: str, model: str, hedge_model: str | None, **fields: object) -> None:
        """One of the hedge's callbacks, when an observer listens: the turn, the model serving
        it (``model``), the hedge's (``hedge_model``) and the callback's own ``fields``."""
        observers = self.observers
        if observers.interested(callback):
            legs = self.legs
            observers.emit(
                callback,
                turn=legs.turn,
                turn_id=legs.turn_id,
                model=model,
                hedge_model=hedge_model,
                **fields,
            )

    # -- the race's watcher (the attempt log, and the switch to a winning hedge) ------------

    def _pricer(self, index: int) -> Pricer | None:
        """Racer ``index``'s pricer when it asks another client than the turn's (a hedge on
        another provider is priced by that provider's prices); ``None``: the turn's."""
        target = self._targets.get(index)
        other = None if target is None else target.client
        if other is None or other is self.client or self.pricer_of is None:
            return None
        if not self.legs.log.pricing:
            return None
        return self.pricer_of(other)

    def racer_started(self, index: int, model: str) -> contextvars.Context | None:
        return self.legs.log.racer_started(index, model, self._pricer(index))

    def racer_ended(
        self,
        index: int,
        error: BaseException | None,
        usage: Usage | None,
        *,
        outcome: str | None = None,
        disposed: bool = False,
    ) -> None:
        self.legs.log.racer_ended(index, error, usage, outcome=outcome, disposed=disposed)

    def racer_adopted(self, index: int, *, won: bool = False) -> None:
        legs = self.legs
        legs.log.racer_adopted(index)
        if won and index > 0:
            primary = legs.served
            model = self._take_over(index)
            if self.observers.interested("on_hedge_won"):
                self._report("on_hedge_won", primary, model, after=legs.now() - legs.started)
        # the race is over (one racer adopted, whatever else happens): the plan no longer
        # races, and its holding this race, which holds the plan, would make the turn a cycle
        self.plan.race = None

    def _on_fail(self, index: int) -> None:
        """The race fails with racer ``index``'s error: a hedge's (one no other model would
        fix, a 401 say) is that hedge's failure, not the primary's, which only lost the race
        (neutral for the breaker: slow is not failed)."""
        if index > 0:
            self._take_over(index)
        self.plan.race = None  # (as in racer_adopted: the race is over)

    def _take_over(self, index: int) -> str:
        """Hedge ``index`` won the race, or its error ended it: the turn is its target's from
        now on (later attempts, the rescue, their prices, the served model); its model."""
        target = self._targets[index]
        model = self._model(target)
        self.plan.retarget(self._client(target), self._options(target))
        pricer = self._pricer(index)
        if pricer is not None:  # the retries and the rescue go to the hedge's client
            self.legs.log.priced_by(pricer)
        self.legs.hedge_won(model)
        return model
