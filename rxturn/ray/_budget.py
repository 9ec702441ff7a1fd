"""The named budget actor and the gate that asks it (so every Ray actor shares one budget)."""

from __future__ import annotations

from typing import Any

from ..batch._budget import Budget, LocalGate
from ..errors import ConfigError

__all__ = ["BudgetActor", "RayGate", "budget_actor", "ray_module"]

#: the budget actor's default name (one per Ray namespace)
DEFAULT_NAME = "rxturn-budget"


def ray_module() -> Any:
    """``import ray``, or a clear error naming the extra."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "Ray is not installed: pip install 'rxturn[ray]' (it brings ray[data])"
        ) from None
    return ray


class BudgetActor:
    """A :class:`~rxturn.batch.Budget` behind an async Ray actor (one event loop, FIFO)."""

    def __init__(self, rpm: int | None, tpm: int | None, window: float = 60.0) -> None:
        self.budget = Budget(rpm=rpm, tpm=tpm, window=window)
        self.gate: LocalGate | None = None

    def _gate(self) -> LocalGate:
        if self.gate is None:
            self.gate = LocalGate(self.budget)
        return self.gate

    async def acquire(self, tokens: int) -> int:
        return await self._gate().acquire(tokens)

    async def correct(self, ticket: int, tokens: int) -> None:
        self._gate().correct(ticket, tokens)

    async def restamp(self, ticket: int) -> None:
        self._gate().restamp(ticket)

    async def pause(self, seconds: float) -> None:
        self._gate().pause(seconds)

    async def waited(self) -> float:
        return self._gate().waited


def budget_actor(
    name: str = DEFAULT_NAME,
    *,
    rpm: int | None = None,
    tpm: int | None = None,
    window: float = 60.0,
) -> object:
    """The named budget actor ``name``: the running one, or a new one with these limits.

    Create it in the driver before the actor pool and keep the handle: the driver then owns it
    (it lives as long as the handle does) and its limits are the ones given here; an actor
    that finds it running shares it.
    """
    Budget(rpm=rpm, tpm=tpm, window=window)  # a bad limit fails here, in the caller
    ray = ray_module()
    remote = ray.remote(num_cpus=0, max_concurrency=10_000)(BudgetActor)
    return remote.options(name=name, get_if_exists=True).remote(rpm, tpm, window)


class RayGate:
    """The budget actor seen as a gate (:class:`rxturn.batch.Gate`) from any actor or driver."""

    def __init__(self, actor: object) -> None:
        self._actor: Any = actor
        #: what the progress display reads (the actor keeps the true count)
        self.waited = 0.0

    async def acquire(self, tokens: int) -> int:
        ticket: int = await self._actor.acquire.remote(tokens)
        return ticket

    def correct(self, ticket: int, tokens: int) -> None:
        self._actor.correct.remote(ticket, tokens)

    def restamp(self, ticket: int) -> None:
        self._actor.restamp.remote(ticket)

    def pause(self, seconds: float) -> None:
        self._actor.pause.remote(seconds)
