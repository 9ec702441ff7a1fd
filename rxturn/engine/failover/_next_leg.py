"""The streaming path's failover: the next leg, in the same stream as the one that failed.

:class:`NextLeg` is what follows a leg whose error reached the end of the handler: when the turn
fails over (:func:`~rxturn.engine.failover._legs.fail_over`), the consumers get the
``AttemptReset`` first, synchronously, then the new leg's stream on the next model; else the
error goes out as it is. It is built only when failover is on and asks the turn's caller, through
:class:`LegPlanner`, for the decision and for the new leg's stream.
"""

from __future__ import annotations

from typing import Protocol

import msgspec
from reactivex import Observable, abc

from ...events import HandlerEvent
from ...messages import Request, RequestOptions
from ._legs import TurnLegs

__all__ = ["LegPlanner", "NextLeg", "prefixed"]


class LegPlanner(Protocol):
    """What a failover leg asks of the turn's call."""

    def fail_over(self, legs: TurnLegs, error: BaseException) -> str | None:
        """Record the leg's failure and switch ``legs`` to the next model (``None``: none)."""
        ...

    def plan_leg(
        self, legs: TurnLegs, request: Request, options: RequestOptions
    ) -> Observable[list[HandlerEvent]]:
        """The handled stream of the next leg (``options`` name its model)."""
        ...


def prefixed(
    first: list[HandlerEvent], then: Observable[list[HandlerEvent]]
) -> Observable[list[HandlerEvent]]:
    """``first`` as one batch, synchronously at subscription, then ``then``."""

    def subscribe(
        observer: abc.ObserverBase[list[HandlerEvent]],
        scheduler: abc.SchedulerBase | None = None,
    ) -> abc.DisposableBase:
        observer.on_next(first)
        return then.subscribe(observer, scheduler=scheduler)

    return Observable(subscribe)


class NextLeg:
    """Same-turn failover's next leg: what follows a leg that failed definitively (``None``
    lets the error out), built only when a leg fails."""

    __slots__ = ("legs", "options", "planner", "request")

    def __init__(
        self, planner: LegPlanner, legs: TurnLegs, request: Request, options: RequestOptions
    ) -> None:
        self.planner = planner
        self.legs = legs
        self.request = request
        self.options = options

    def __call__(self, error: Exception) -> Observable[list[HandlerEvent]] | None:
        planner, legs = self.planner, self.legs
        target = planner.fail_over(legs, error)
        if target is None:
            return None
        options = msgspec.structs.replace(self.options, model=target)
        return prefixed([legs.reset(error)], planner.plan_leg(legs, self.request, options))
