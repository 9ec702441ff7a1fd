"""The named budget actor and the gate that asks it (so every Ray actor shares one budget)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import uuid
from collections.abc import Callable
from typing import Any

from .._arguments import shown
from ..batch._budget import Budget, LocalGate
from ..errors import ConfigError

__all__ = ["BudgetActor", "RayGate", "budget_actor", "check_limits", "check_name", "ray_module"]

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


#: what the actor answers an ask its caller cancelled before it was granted
CANCELLED = -2


class BudgetActor:
    """A :class:`~rxturn.batch.Budget` behind an async Ray actor (one event loop, FIFO).

    Each ask carries an id from its caller. A caller that stops waiting (cancelled, timed out)
    sends :meth:`cancel` with that id: an ask still waiting is dropped without a grant, a grant
    already made for it (its answer was on the way) is released at once, and an ask whose
    cancel overtook it (an async actor runs calls in any order) is answered ``CANCELLED``
    without a grant. So budget goes only to a caller that receives its ticket, and that caller
    stamps it sent or releases it.
    """

    def __init__(self, rpm: int | None, tpm: int | None, window: float = 60.0) -> None:
        self.budget = Budget(rpm=rpm, tpm=tpm, window=window)
        self.gate: LocalGate | None = None
        self._waiting: dict[str, asyncio.Future[int]] = {}  # ask -> its wait for a grant
        self._granted: dict[str, int] = {}  # ask -> ticket, granted and not yet sent/released
        self._ask_of: dict[int, str] = {}  # ticket -> ask (the reverse of ``_granted``)
        self._cancelled: set[str] = set()  # asks cancelled before they arrived
        self._pause_began = -math.inf  # when the run's pause going on now began

    def _gate(self) -> LocalGate:
        if self.gate is None:
            self.gate = LocalGate(self.budget)
        return self.gate

    async def acquire(self, tokens: int, ask: str = "") -> int:
        if not ask:
            return await self._gate().acquire(tokens)
        if ask in self._cancelled:
            self._cancelled.discard(ask)
            return CANCELLED
        waiter = asyncio.ensure_future(self._gate().acquire(tokens))
        self._waiting[ask] = waiter
        try:
            ticket = await waiter
        except asyncio.CancelledError:
            if ask not in self._waiting:  # dropped by cancel(): this call itself goes on
                return CANCELLED
            raise
        finally:
            self._waiting.pop(ask, None)
        if ticket >= 0:
            self._granted[ask] = ticket
            self._ask_of[ticket] = ask
        return ticket

    async def cancel(self, ask: str) -> None:
        """The caller of ``ask`` stopped waiting: no grant for it, or its grant released."""
        waiter = self._waiting.pop(ask, None)
        if waiter is not None:
            waiter.cancel()  # the gate grants nothing to a cancelled wait
            return
        ticket = self._granted.pop(ask, None)
        if ticket is not None:
            self._ask_of.pop(ticket, None)
            self._gate().release(ticket)
            return
        self._cancelled.add(ask)

    def _settled(self, ticket: int) -> None:
        ask = self._ask_of.pop(ticket, None)
        if ask is not None:
            self._granted.pop(ask, None)

    async def correct(self, ticket: int, tokens: int) -> None:
        self._gate().correct(ticket, tokens)

    async def restamp(self, ticket: int) -> None:
        self._settled(ticket)
        self._gate().restamp(ticket)

    async def release(self, ticket: int) -> None:
        self._settled(ticket)
        self._gate().release(ticket)

    async def pause(self, seconds: float) -> None:
        gate = self._gate()
        now = gate.now()
        if now >= self.budget.paused_until:  # no pause holds: this one begins now
            self._pause_began = now
        gate.pause(seconds)

    async def pause_left(self) -> float:
        """Seconds until the run's Retry-After pause is over (0: none): what a gate without
        a budget asks, so that a pause any actor met holds every actor's requests."""
        gate = self._gate()
        return max(0.0, self.budget.paused_until - gate.now())

    async def pause_now(self) -> tuple[float, float]:
        """``(left, length)``: seconds until the run's Retry-After pause is over, and how long
        it is in all, from its start (``(0, 0)``: none). The driver, which looks once a
        heartbeat, says a long pause by its length, not by what is left when it looks."""
        left = await self.pause_left()
        if left <= 0:
            return 0.0, 0.0
        return left, self.budget.paused_until - self._pause_began

    async def rate_limited(self, seconds: float) -> None:
        """A row of some actor sleeps ``seconds`` after a rate limit (the run's waits)."""
        self._gate().rate_limited(seconds)

    async def waited(self) -> float:
        return self._gate().waited

    async def limits(self) -> tuple[int | None, int | None]:
        """The budget's ``(rpm, tpm)``."""
        return self.budget.rpm, self.budget.tpm

    async def counts(self) -> tuple[int, int]:
        """(requests the current window counts, grants not yet sent)."""
        requests, _ = self.budget.in_window(asyncio.get_running_loop().time())
        return requests, self.budget.held


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
    check_name(name)
    ray = ray_module()
    remote = ray.remote(num_cpus=0, max_concurrency=10_000)(BudgetActor)
    return remote.options(name=name, get_if_exists=True).remote(rpm, tpm, window)


def check_name(name: object) -> None:
    """Raise a ConfigError for a budget actor's name no actor can have."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            f"the budget actor's name must be a non-empty string, got {shown(name, 100)}"
        )


def check_limits(actor: Any, name: str, rpm: int | None, tpm: int | None) -> None:
    """Raise a ConfigError when the budget actor ``name`` (found running: the first caller's
    limits are its own) holds other limits than ``rpm`` / ``tpm``, which would otherwise be
    ignored without a word."""
    ray = ray_module()
    held = tuple(ray.get(actor.limits.remote(), timeout=60))
    if held != (rpm, tpm):
        raise ConfigError(
            f"the budget actor {shown(name, 100)} is running with rpm={held[0]}, tpm={held[1]}; "
            "this "
            f"TurnUDF was given rpm={rpm}, tpm={tpm}: give both the same limits, or give "
            "the TurnUDF another budget_name"
        )


def _actor_gone(error: Exception) -> bool:
    """Whether ``error`` says the actor asked is dead or unreachable (not a failure of the
    call itself)."""
    ray = ray_module()
    return isinstance(error, ray.exceptions.RayActorError)


#: the bits of a RayGate's ticket that are the actor's own (one actor grants fewer tickets)
_TICKET_BITS = 48

#: seconds a gate without a budget trusts what it last heard of the run's pause
PAUSE_LOOK = 0.05


class RayGate:
    """The budget actor seen as a gate (:class:`rxturn.batch.Gate`) from any actor or driver.

    An :meth:`acquire` cancelled while it waits (its attempt's deadline, a stopped row) tells
    the actor, which then grants it nothing or releases what it already granted.

    Without a budget (``limited`` false) nothing is granted or charged: a request waits only
    for the run's Retry-After pause. A pause this gate meets goes to the actor at once; one
    another actor met is learned by asking the actor how long it lasts, at most every
    :data:`PAUSE_LOOK` seconds (one ask shared by the requests starting meanwhile), so every
    actor holds its requests within about a tenth of a second. If the actor cannot be asked
    (it is gone), requests go on unpaused: the rate-limit ladder still retries each row.

    ``remake`` (given by a :class:`~rxturn.ray.TurnUDF`) makes the named actor again, or finds
    the one another actor made, when this one is found dead (``ray.kill``, its owner or node
    gone): an ask the dead actor could not answer is asked again of the new one, once, and
    the gate's later asks and pauses go there. Without it, or when the new one fails too, the
    ask raises Ray's error. A ticket carries the actor that granted it (above
    :data:`_TICKET_BITS`: 0 for the first actor): one the dead actor granted is never sent to
    the new one, whose own tickets count from the start again (its ``release`` would free
    another row's grant).
    """

    def __init__(
        self,
        actor: object,
        *,
        limited: bool = True,
        remake: Callable[[], object] | None = None,
    ) -> None:
        self._actor: Any = actor
        self._remake = remake
        self._generation = 0  # how many times the actor was made again
        self.limited = limited
        self._prefix = uuid.uuid4().hex
        self._asks = itertools.count(1)
        self._local = LocalGate(Budget())  # the pauses, seen here (without a budget)
        self._next_look = 0.0  # loop time after which the actor is asked again
        self._look: asyncio.Future[None] | None = None  # the ask in flight

    async def _paused(self) -> None:
        """Wait out the run's pause, as the actor last told it (asked again when stale)."""
        loop = asyncio.get_running_loop()
        if loop.time() >= self._next_look:
            look = self._look
            if look is None:
                look = self._look = asyncio.ensure_future(self._ask_pause())
            await asyncio.shield(look)  # a cancelled request leaves the shared ask running
        await self._local.acquire(0)

    def _replace(self, dead: object, error: Exception) -> bool:
        """After ``error`` from the actor ``dead``: whether the gate now holds another actor
        to ask (made again, or already replaced by a concurrent ask)."""
        if self._remake is None or not _actor_gone(error):
            return False
        if self._actor is dead:
            self._actor = self._remake()
            self._generation += 1
        return True

    def _mine(self, ticket: int) -> int | None:
        """The current actor's own ticket for ``ticket`` (``None``: granted by a dead one)."""
        if ticket < 0 or ticket >> _TICKET_BITS != self._generation:
            return None
        return ticket & ((1 << _TICKET_BITS) - 1)

    async def _ask_pause(self) -> None:
        try:
            with contextlib.suppress(Exception):  # the actor is gone: no pause is known
                actor = self._actor
                try:
                    left: float = await actor.pause_left.remote()
                except Exception as exc:
                    if not self._replace(actor, exc):
                        raise
                    left = await self._actor.pause_left.remote()
                if left > 0:
                    self._local.pause(left)
        finally:
            self._next_look = asyncio.get_running_loop().time() + PAUSE_LOOK
            self._look = None

    async def acquire(self, tokens: int) -> int:
        if not self.limited:
            await self._paused()
            return -1
        for again in (False, True):
            actor = self._actor
            ask = f"{self._prefix}:{next(self._asks)}"
            ref = actor.acquire.remote(tokens, ask)
            try:
                ticket: int = await ref
            except asyncio.CancelledError:
                actor.cancel.remote(ask)
                raise
            except Exception as exc:  # the actor is dead: ask the one made again, once
                if again or not self._replace(actor, exc):
                    raise
                continue
            if ticket < 0:
                return ticket
            return ticket | self._generation << _TICKET_BITS
        raise AssertionError("unreachable")  # (the second pass returns or raises)

    def correct(self, ticket: int, tokens: int) -> None:
        own = self._mine(ticket) if self.limited else None
        if own is not None:
            self._actor.correct.remote(own, tokens)

    def restamp(self, ticket: int) -> None:
        own = self._mine(ticket) if self.limited else None
        if own is not None:
            self._actor.restamp.remote(own)

    def release(self, ticket: int) -> None:
        own = self._mine(ticket) if self.limited else None
        if own is not None:
            self._actor.release.remote(own)

    def pause(self, seconds: float) -> None:
        if not self.limited:
            self._local.pause(seconds)  # this actor's requests hold at once
        self._actor.pause.remote(seconds)

    def rate_limited(self, seconds: float) -> None:
        """A row here sleeps after a rate limit: the actor counts the run's waits."""
        self._actor.rate_limited.remote(seconds)
