"""``StreamHandler``: the resilience ladder of a streaming turn, defined by Rx operators.

What happens when a stream fails is decided here (docs/behaviour.md §2). The handler is, by
definition, the public operators of :mod:`rxturn.operators` composed once per subscription::

    one attempt = client.stream(request, options)        cold: one subscription, one HTTP request
                  ─► attempt_guard                      shadow fold: bad tool JSON, truncation
                  ─► deadlines(first_event, per_event)  one timer per attempt
    the turn    = attempt
                  ─► rate_limit_gate (if a limiter)     every attempt waits for a token
                  ─► retry_ladder                       transport + rate-limit ladders, AttemptReset
                  ─► total_deadline                     one timer from the turn's start
                  ─► rescue (if enabled)                non-streaming request → Fallback
                  ─► cancellable (if a token)           outermost: cancel ends every wait

A :class:`~rxturn.operators.TurnProgress` created at subscription carries the turn's facts
between them. Each subscription runs that composition fused into one object with one timer
(:class:`~rxturn.engine._ladder.Ladder`, the same steps and verdicts at a fraction of the
objects per turn; a test holds the two to the same items and instants). Attempts subscribe
the client's ``stream_batches`` when it has one, so events move through the ladder a network
chunk at a time (the operators accept both shapes);
:meth:`StreamHandler.stream_turn` hands them out one by one and
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

import contextvars
import random
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Protocol, cast

from reactivex import Observable, abc
from reactivex.disposable import Disposable

from .._batching import unbatch_
from ..clients._base import ModelClient
from ..clients._http import HttpClient
from ..errors import RetryAfterBeyondDeadline
from ..events import EventBatch, EventStream, HandlerEvent, HandlerStream
from ..messages import Message, Request, RequestOptions, Usage
from ..resilience.cancel import CancelToken
from ..resilience.limiter import RateLimiter
from ..resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy
from ._ladder import Ladder

__all__ = ["AttemptWatcher", "RetryAfterBeyondDeadline", "StreamHandler"]


class AttemptWatcher(Protocol):
    """Told when each request of a turn starts and ends (the engine's attempt log uses it).

    ``kind`` is ``"stream"`` or ``"rescue"``. ``error`` is ``None`` for an attempt that served;
    ``disposed`` is true when the attempt was let go from outside (a cancel, or the turn's
    total deadline) rather than ending by itself. ``usage`` is what the provider had reported.
    Both calls happen synchronously, in the handler's own order, and must not raise.
    ``attempt_started`` may return a :class:`contextvars.Context`: the request is then sent
    inside it (the subscription that sends it runs in that context, so the task that sends
    it inherits its variables — how an observer makes its span current for the HTTP client).
    """

    def attempt_started(self, kind: Literal["stream", "rescue"]) -> contextvars.Context | None: ...

    def attempt_ended(
        self,
        kind: Literal["stream", "rescue"],
        error: BaseException | None,
        usage: Usage | None,
        *,
        disposed: bool = False,
    ) -> None: ...


def client_scrubber(client: object) -> Callable[[BaseException], None] | None:
    """The client's ``scrub(error)`` method, if it has one (every HTTP client of rxturn does):
    what removes its key from an error raised downstream of it. A client of your own may offer
    one; without it, nothing is scrubbed here."""
    scrub = getattr(client, "scrub", None)
    return cast("Callable[[BaseException], None]", scrub) if callable(scrub) else None


def _watched_rescue(source: Observable[Message], watcher: AttemptWatcher) -> Observable[Message]:
    """The rescue request, reported to ``watcher``."""

    def subscribe(
        observer: abc.ObserverBase[Message], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        ended = False
        context = watcher.attempt_started("rescue")

        def on_next(message: Message) -> None:
            nonlocal ended
            if not ended:
                ended = True
                watcher.attempt_ended("rescue", None, message.usage)
            observer.on_next(message)

        def on_error(error: Exception) -> None:
            nonlocal ended
            if not ended:
                ended = True
                watcher.attempt_ended("rescue", error, None)
            observer.on_error(error)

        if context is None:
            inner = source.subscribe(on_next, on_error, observer.on_completed, scheduler=scheduler)
        else:
            inner = context.run(
                source.subscribe, on_next, on_error, observer.on_completed, scheduler=scheduler
            )

        def dispose() -> None:
            nonlocal ended
            if not ended:
                ended = True
                watcher.attempt_ended("rescue", None, None, disposed=True)
            inner.dispose()

        return Disposable(dispose)

    return Observable(subscribe)


class StreamHandler:
    """Retries, rate limits, timeouts, rescue, limiter and cancellation for streaming turns.

    Args:
        timeouts: deadlines and whether the non-streaming rescue runs.
        retry: the transport ladder.
        rate_limit: the rate-limit ladder (its own budget).
        limiter: a proactive :class:`~rxturn.resilience.limiter.RateLimiter`, shared across turns.
        rng: the jitter source (default: a fresh ``random.Random()``).
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
        self._timeouts = timeouts.validate()
        self._retry = retry.validate()
        self._rate_limit = rate_limit.validate()
        self._limiter = limiter
        self._rng = rng if rng is not None else random.Random()
        self._scheduler = scheduler
        self._on_wait = on_wait

    @classmethod
    def default(cls) -> StreamHandler:
        """A handler with the default policies (docs/behaviour.md §2.1), as ``rxturn chat`` uses."""
        return cls()

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
            self,
            client,
            request,
            options,
            cancel,
            preferred=scheduler if scheduler is not None else self._scheduler,
            deadline=deadline,
            watcher=watcher,
            give_up=give_up_beyond_deadline,
        )


class TurnPlan:
    """One call of :meth:`StreamHandler.stream_turn` (or ``_batches``): what each of its
    subscriptions needs, in one object. Subscribing starts a :class:`~._ladder.Ladder`: the
    operators of the module docstring, fused (a fresh :class:`TurnProgress` each time)."""

    __slots__ = (
        "cancel",
        "client",
        "direct",
        "first_event",
        "give_up",
        "key",
        "limiter",
        "max_consecutive",
        "on_wait",
        "options",
        "per_event",
        "preferred",
        "race",
        "rate_limit",
        "request",
        "rescue",
        "retry",
        "rng",
        "total",
        "watcher",
    )

    def __init__(
        self,
        handler: StreamHandler,
        client: ModelClient,
        request: Request,
        options: RequestOptions | None,
        cancel: CancelToken | None,
        *,
        preferred: abc.SchedulerBase | None,
        deadline: float | None,
        watcher: AttemptWatcher | None,
        give_up: bool,
    ) -> None:
        timeouts = handler.timeouts
        self.client = client
        self.request = request
        self.options = options
        self.cancel = cancel
        self.preferred = preferred
        self.total = timeouts.total if deadline is None or timeouts.total is None else deadline
        self.first_event = timeouts.first_event
        self.per_event = timeouts.per_event
        self.max_consecutive = timeouts.max_consecutive_timeouts
        self.rescue = timeouts.rescue
        self.retry = handler.retry
        self.rate_limit = handler.rate_limit
        limiter = handler.limiter
        self.limiter = limiter if limiter is not None and limiter.enabled else None
        self.key = client.base_url if self.limiter is not None else ""
        self.rng = handler._rng  # pyright: ignore[reportPrivateUsage]
        self.on_wait = handler._on_wait  # pyright: ignore[reportPrivateUsage]
        self.watcher = watcher
        self.give_up = give_up
        #: what the first attempt is piped through when the turn hedges its first token
        #: (set by the engine: :class:`~rxturn.engine._hedging.TurnRace`); it reports the
        #: racers to the watcher itself
        self.race: Callable[[Observable[Any]], Observable[Any]] | None = None
        # rxturn's HTTP clients start an attempt without an Rx subscription (``attach_batches``),
        # unless a subclass changed what ``stream_batches`` does
        self.direct = (
            isinstance(client, HttpClient)
            and type(client).stream_batches is HttpClient.stream_batches
        )

    def retarget(self, client: ModelClient, options: RequestOptions | None) -> None:
        """Send the turn's later attempts (and its rescue) to ``client`` with ``options``:
        a hedge won the race, and the ladder climbs on the winner's target."""
        self.client = client
        self.options = options
        if self.limiter is not None:
            self.key = client.base_url
        self.direct = (
            isinstance(client, HttpClient)
            and type(client).stream_batches is HttpClient.stream_batches
        )

    def open(self) -> EventStream | Observable[EventBatch]:
        """One attempt's Observable: the client's ``stream_batches`` when it has one, else its
        per-event ``stream`` (a client of your own may offer only that: the ladder takes both).
        """
        batches = getattr(self.client, "stream_batches", None)
        if callable(batches):
            return cast("Observable[EventBatch]", batches(self.request, self.options))
        return self.client.stream(self.request, self.options)

    def attach(self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase) -> Any:
        """One attempt pushing to ``observer`` without Rx (only when :attr:`direct`)."""
        client = cast(HttpClient, self.client)
        return client.attach_batches(self.request, self.options, observer, scheduler)

    def scrub(self, error: BaseException) -> None:
        """Remove the client's key from ``error`` (its ``scrub``, when it has one)."""
        scrub = client_scrubber(self.client)
        if scrub is not None:
            scrub(error)

    def create_request(self) -> Observable[Message]:
        """The rescue: one non-streaming ``create``, reported to the watcher."""
        from ..sources import from_awaitable

        client, request, options = self.client, self.request, self.options
        request_ = from_awaitable(lambda: client.create(request, options))
        return request_ if self.watcher is None else _watched_rescue(request_, self.watcher)

    def subscribe(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return Ladder(self, observer, scheduler, as_lists=False).start()

    def subscribe_lists(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return Ladder(self, observer, scheduler, as_lists=True).start()
