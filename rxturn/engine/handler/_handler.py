"""``StreamHandler``: the resilience ladder of a streaming turn, defined by Rx operators.

What happens when a stream fails is decided here (docs/behaviour.md §2). The handler is, by
definition, the public operators of :mod:`rxturn.operators` composed once per subscription::

    one attempt = client.stream_batches(request, options)  cold: one subscription, one request
                  ─► hedge (first attempt, if raced)     a hedged first token (plan's ``race``)
                  ─► attempt_guard                       shadow fold: bad tool JSON, truncation
                  ─► deadlines(first_event, per_event)   the attempt clock
                  ─► scrubbed(client.scrub)              the key out of the attempt's error
                  ─► annotate_progress                   what a 429 / 408 had received
                  ─► give_up_beyond_deadline (if asked)  a Retry-After the turn cannot wait for
    the turn    = attempt
                  ─► rate_limit_gate (if a limiter)      every attempt waits for a token
                  ─► retry_ladder                        two retry ladders, AttemptReset
                  ─► total_deadline                      one deadline from the turn's start
                  ─► rescue (if enabled)                 non-streaming request → Fallback
                  ─► cancellable (if a token)            outermost: cancel ends every wait

A :class:`~rxturn.operators.TurnProgress` created at subscription carries the turn's facts
between them. Every operator is a shell over one rule of :mod:`rxturn.resilience` (the shadow
guard, the attempt clock, the gate's sleep, the retry budget, the total deadline, the rescue's
budget, the verdicts table). Each subscription drives that composition as one object with one
timer (:class:`~rxturn.engine.handler._ladder.Ladder`), asking the same rules in the same order; two
tests hold the driver and the hand-composed operators to the same items, instants, errors and
requests, on the per-event, the batched and the direct-attach paths, and with a raced first
attempt. Attempts subscribe the
client's ``stream_batches`` when it has one (rxturn's own clients attach without a
subscription), so events move through a network chunk at a time (the operators accept both
shapes); :meth:`StreamHandler.stream_turn` hands them out one by one and
:meth:`StreamHandler.stream_turn_batches` as lists.

Provider events flow through unwrapped; the only items the handler adds are
:class:`~rxturn.events.AttemptReset` (before attempts 2, 3, …) and
:class:`~rxturn.events.Fallback` (the rescued reply, always last). A failed turn ends with the
last attempt's typed error carrying ``attempts``, or with
:class:`~rxturn.errors.RateLimitEscalation`, :class:`~rxturn.errors.RescueFailed` or
:class:`~rxturn.errors.Cancelled`.

:meth:`StreamHandler.passthrough` (what the engine uses when none is configured) makes exactly
one attempt with no deadlines and no rescue: every failure surfaces directly.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from reactivex import Observable, abc

from ..._arguments import check_callable, check_instance
from ..._batching import unbatch_
from ...clients._base import ModelClient
from ...errors import RetryAfterBeyondDeadline
from ...events import HandlerEvent, HandlerStream
from ...messages import Request, RequestOptions
from ...resilience.cancel import CancelToken
from ...resilience.limiter import RateLimiter
from ...resilience.policies import (
    RateLimitPolicy,
    RetryPolicy,
    TimeoutPolicy,
)
from ._ladder import Ladder
from ._plan import AttemptWatcher, TurnSpec

__all__ = ["AttemptWatcher", "RetryAfterBeyondDeadline", "StreamHandler"]


#: The last timeouts, retry and rate-limit policies a handler validated. Policies are frozen,
#: so one that passed stays valid; a handler per conversation passes the same objects (the
#: defaults) each time, and their checks run once instead of per handler.
_VALIDATED: list[object] = [None, None, None]

_P = TypeVar("_P", TimeoutPolicy, RetryPolicy, RateLimitPolicy)


def _validated(policy: _P, slot: int) -> _P:
    if _VALIDATED[slot] is not policy:
        policy.validate()  # raises on a bad field
        _VALIDATED[slot] = policy
    return policy


#: The jitter source of every handler given no ``rng``: unseeded, so as unpredictable as one
#: per handler, without reading the OS's entropy for each (an engine per conversation makes one).
_JITTER = random.Random()


class StreamHandler:
    """Retries, rate limits, timeouts, rescue, limiter and cancellation for streaming turns.

    Args:
        timeouts: deadlines and whether the non-streaming rescue runs.
        retry: the transport ladder.
        rate_limit: the rate-limit ladder (its own budget).
        limiter: a proactive :class:`~rxturn.resilience.limiter.RateLimiter`, shared across turns.
        rng: the jitter source (default: one ``random.Random()`` shared by the handlers made
            without one, seeded from the OS once per process rather than once per handler).
        scheduler: where time comes from (default: the one given to :meth:`stream_turn`, then
            the subscribe-time scheduler, then asyncio on the running loop).
        on_wait: told of each retry wait as it starts, by keyword (``reason``
            ``"rate_limit"`` or ``"backoff"``, ``seconds``, ``attempt``, ``error``): how a
            user interface says what it waits for (:func:`rxturn.operators.retry_ladder`).

    Raises:
        ConfigError: a policy fails its ``validate()``.

    Examples:
        >>> handler = StreamHandler(retry=RetryPolicy(max_retries=5))
        >>> handler.retry.max_retries
        5
    """

    __slots__ = (
        "_limiter",
        "_on_wait",
        "_rate_limit",
        "_retry",
        "_rng",
        "_scheduler",
        "_timeouts",
    )

    _passthrough: ClassVar[StreamHandler | None] = None
    _default: ClassVar[StreamHandler | None] = None

    def __init__(
        self,
        *,
        timeouts: TimeoutPolicy = TimeoutPolicy(),  # noqa: B008 - frozen, immutable value
        retry: RetryPolicy = RetryPolicy(),  # noqa: B008
        rate_limit: RateLimitPolicy = RateLimitPolicy(),  # noqa: B008
        limiter: RateLimiter | None = None,
        rng: random.Random | None = None,
        scheduler: abc.SchedulerBase | None = None,
        on_wait: Callable[..., object] | None = None,
    ) -> None:
        check_handler_arguments(timeouts, retry, rate_limit, limiter, rng, scheduler, on_wait)
        self._timeouts = _validated(timeouts, 0)
        self._retry = _validated(retry, 1)
        self._rate_limit = _validated(rate_limit, 2)
        self._limiter = limiter
        self._rng = rng if rng is not None else _JITTER
        self._scheduler = scheduler
        self._on_wait = on_wait

    @classmethod
    def default(cls) -> StreamHandler:
        """A handler with the default policies (docs/behaviour.md §2.1), as ``rxturn chat`` uses.

        A handler is immutable (its policies are frozen and it keeps no state between turns), so
        every call returns the same one per class: an engine per conversation shares it.
        """
        handler = cls.__dict__.get("_default")
        if handler is None:
            handler = cls()
            cls._default = handler
        return handler

    @classmethod
    def passthrough(cls) -> StreamHandler:
        """The shared no-resilience handler: one attempt, no deadlines, no rescue.

        Its policies are built by hand (docs/behaviour.md §2.1, "Passthrough"): rate-limit
        ``max_retries`` 0 makes the first rate limit a hard stop, so every failure surfaces
        directly (they would not pass ``validate()``, which is for user configurations).
        """
        if cls._passthrough is None:
            handler = cls.__new__(cls)
            handler._timeouts = TimeoutPolicy(
                first_event=None,
                per_event=None,
                total=None,
                max_consecutive_timeouts=1,
                rescue=False,
            )
            handler._retry = RetryPolicy(max_retries=0)
            handler._rate_limit = RateLimitPolicy(max_retries=0, escalate_after=0)
            handler._limiter = None
            handler._rng = random.Random(0)  # never consulted: no retries
            handler._scheduler = None
            handler._on_wait = None
            cls._passthrough = handler
        return cls._passthrough

    @property
    def timeouts(self) -> TimeoutPolicy:
        return self._timeouts

    @property
    def retry(self) -> RetryPolicy:
        return self._retry

    @property
    def rate_limit(self) -> RateLimitPolicy:
        return self._rate_limit

    @property
    def limiter(self) -> RateLimiter | None:
        return self._limiter

    def __repr__(self) -> str:
        if self is StreamHandler._passthrough:
            return "StreamHandler.passthrough()"
        return (
            f"StreamHandler(timeouts={self._timeouts!r}, retry={self._retry!r}, "
            f"rate_limit={self._rate_limit!r}, limiter={self._limiter!r})"
        )

    def stream_turn(
        self,
        client: ModelClient,
        request: Request,
        options: RequestOptions | None = None,
        cancel: CancelToken | None = None,
        *,
        scheduler: abc.SchedulerBase | None = None,
    ) -> HandlerStream:
        """One streaming turn as a cold Observable: each subscription runs the whole ladder.

        Two subscriptions are two turns, each sending its own requests (``ops.share()`` gives
        several subscribers one turn). A subscriber whose ``on_next`` raises ends the turn with
        that exception, through its ``on_error``: it is never retried nor rescued.

        Args:
            client: the provider client; each attempt subscribes ``client.stream_batches``
                when it has one (else ``client.stream``), ``client.create`` is called for the
                rescue, ``client.base_url`` keys the limiter.
            request: what to ask (the same request for every attempt and the rescue).
            options: per-request options, passed unchanged to both paths.
            cancel: the cancel signal; firing it ends the turn with ``Cancelled``.
            scheduler: where time comes from, for this turn.

        Returns:
            Provider events (unwrapped), ``AttemptReset`` before attempts 2+, and a final
            ``Fallback`` if the rescue served the turn; or a typed error (see the module doc).
        """
        plan = self.plan_turn(client, request, options, cancel, scheduler=scheduler)
        return unbatch_(Observable(plan.subscribe))

    def stream_turn_batches(
        self,
        client: ModelClient,
        request: Request,
        options: RequestOptions | None = None,
        cancel: CancelToken | None = None,
        *,
        scheduler: abc.SchedulerBase | None = None,
        deadline: float | None = None,
        watcher: AttemptWatcher | None = None,
        give_up_beyond_deadline: bool = False,
    ) -> Observable[list[HandlerEvent]]:
        """:meth:`stream_turn` in batches: the same items and errors, as lists.

        A provider chunk's events come as one list (an :data:`~rxturn.events.EventBatch`);
        ``AttemptReset`` and ``Fallback`` come alone, as ``[item]``. Fold it with
        ``ops.scan(fold_batch, INITIAL_STATE)``: this is how the engine runs a turn, at one Rx
        emission per chunk rather than per event.

        The engine's extras (all optional): ``deadline`` replaces the policy's total deadline
        for this turn (a failover leg gets what its turn has left); ``watcher`` is told when
        each request starts and ends (:class:`AttemptWatcher`); ``give_up_beyond_deadline``
        turns a rate limit whose Retry-After outlasts the turn into
        :class:`RetryAfterBeyondDeadline` instead of a wait (when another model could answer).
        """
        plan = self.plan_turn(
            client,
            request,
            options,
            cancel,
            scheduler=scheduler,
            deadline=deadline,
            watcher=watcher,
            give_up_beyond_deadline=give_up_beyond_deadline,
        )
        return Observable(plan.subscribe_lists)

    def plan_turn(
        self,
        client: ModelClient,
        request: Request,
        options: RequestOptions | None = None,
        cancel: CancelToken | None = None,
        *,
        scheduler: abc.SchedulerBase | None = None,
        deadline: float | None = None,
        watcher: AttemptWatcher | None = None,
        give_up_beyond_deadline: bool = False,
    ) -> TurnPlan:
        """:meth:`stream_turn_batches` before it is wrapped in an Observable: its
        ``subscribe_lists(observer, scheduler)`` starts one run of the turn and returns its
        disposable (how the engine starts a turn, without a subscription layer)."""
        return TurnPlan(
            client,
            request,
            options,
            cancel,
            timeouts=self._timeouts,
            retry=self._retry,
            rate_limit=self._rate_limit,
            limiter=self._limiter,
            rng=self._rng,
            on_wait=self._on_wait,
            preferred=scheduler if scheduler is not None else self._scheduler,
            deadline=deadline,
            watcher=watcher,
            give_up=give_up_beyond_deadline,
        )


class TurnPlan(TurnSpec):
    """One call of :meth:`StreamHandler.stream_turn` (or ``_batches``): its
    :class:`~._plan.TurnSpec`, and subscribing, which starts a :class:`~._ladder.Ladder` (the
    composition of the module docstring, driven as one object with a fresh
    :class:`~rxturn.operators.TurnProgress` each time)."""

    __slots__ = ()

    def subscribe(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return Ladder(self, observer, scheduler, as_lists=False).start()

    def subscribe_lists(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return Ladder(self, observer, scheduler, as_lists=True).start()


def check_handler_arguments(
    timeouts: object,
    retry: object,
    rate_limit: object,
    limiter: object,
    rng: object,
    scheduler: object,
    on_wait: object,
) -> None:
    """The types of :class:`StreamHandler`'s arguments, each a
    ConfigError naming the argument (the policies' values are their own ``validate``'s)."""
    for name, value, expected in (
        ("timeouts", timeouts, TimeoutPolicy),
        ("retry", retry, RetryPolicy),
        ("rate_limit", rate_limit, RateLimitPolicy),
    ):
        check_instance(value, expected, f"StreamHandler({name}=...)", f"a {expected.__name__}")
    check_instance(
        limiter, RateLimiter, "StreamHandler(limiter=...)", "a RateLimiter", optional=True
    )
    check_instance(rng, random.Random, "StreamHandler(rng=...)", "a random.Random", optional=True)
    check_instance(
        scheduler,
        abc.SchedulerBase,
        "StreamHandler(scheduler=...)",
        "a reactivex scheduler",
        optional=True,
    )
    check_callable(on_wait, "StreamHandler(on_wait=...)", "a callable", optional=True)
