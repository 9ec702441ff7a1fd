"""What one handled turn needs, as data: :class:`TurnSpec`, and the :class:`AttemptWatcher`
the engine hands it.

A :class:`TurnSpec` is built once per call of :meth:`~.handler.StreamHandler.stream_turn` (or
``_batches``) from the handler's policies and the call's arguments; each subscription's driver
(:class:`~._ladder.Ladder`) reads it and never changes it. Two things the engine may set on it
when a turn hedges its first token: :attr:`TurnSpec.race`, the race the first attempt goes
through, and :meth:`TurnSpec.retarget`, called when a hedge wins so that the later attempts (and
the rescue) go to the winner's target. It also knows how to reach the client:
open one attempt (``stream_batches`` or ``stream``, or the direct attach of rxturn's own HTTP
clients), scrub an error, and make the rescue's non-streaming request.
"""

from __future__ import annotations

import contextvars
import random
from collections.abc import Callable
from typing import Any, Literal, Protocol, cast

from reactivex import Observable, abc
from reactivex.disposable import Disposable

from ...clients._base import ModelClient, create_message
from ...clients._http import HttpClient
from ...events import EventBatch, EventStream
from ...messages import Message, Request, RequestOptions, Usage
from ...resilience.cancel import CancelToken
from ...resilience.limiter import RateLimiter
from ...resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy
from ...resilience.retry import WaitHook

__all__ = ["AttemptWatcher", "TurnSpec", "client_scrubber", "open_attempt"]


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


def open_attempt(
    client: ModelClient, request: Request, options: RequestOptions | None
) -> EventStream | Observable[EventBatch]:
    """One streaming request's Observable: the client's ``stream_batches`` when it has one,
    else its per-event ``stream`` (a client of your own may offer only that: the ladder and the
    hedge race take both)."""
    batches = getattr(client, "stream_batches", None)
    if callable(batches):
        return cast("Observable[EventBatch]", batches(request, options))
    return client.stream(request, options)


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


def _attaches(client: ModelClient) -> bool:
    """Whether an attempt on ``client`` starts without an Rx subscription: rxturn's HTTP clients
    push to the driver directly (``attach_batches``), unless a subclass changed what
    ``stream_batches`` does."""
    return (
        isinstance(client, HttpClient) and type(client).stream_batches is HttpClient.stream_batches
    )


class TurnSpec:
    """One call of :meth:`~.handler.StreamHandler.stream_turn` (or ``_batches``): what each of
    its subscriptions needs, in one object (see the module docstring)."""

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
        client: ModelClient,
        request: Request,
        options: RequestOptions | None,
        cancel: CancelToken | None,
        *,
        timeouts: TimeoutPolicy,
        retry: RetryPolicy,
        rate_limit: RateLimitPolicy,
        limiter: RateLimiter | None,
        rng: random.Random,
        on_wait: WaitHook | None,
        preferred: abc.SchedulerBase | None,
        deadline: float | None,
        watcher: AttemptWatcher | None,
        give_up: bool,
    ) -> None:
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
        self.retry = retry
        self.rate_limit = rate_limit
        self.limiter = limiter if limiter is not None and limiter.enabled else None
        self.key = client.base_url if self.limiter is not None else ""
        self.rng = rng
        self.on_wait = on_wait
        self.watcher = watcher
        self.give_up = give_up
        #: what the first attempt is piped through when the turn hedges its first token (set
        #: by the engine: :class:`~rxturn.engine.handler._hedging.TurnRace`); it reports the
        #: racers to the watcher itself
        self.race: Callable[[Observable[Any]], Observable[Any]] | None = None
        self.direct = _attaches(client)

    def retarget(self, client: ModelClient, options: RequestOptions | None) -> None:
        """Send the turn's later attempts (and its rescue) to ``client`` with ``options``:
        a hedge won the race, and the ladder climbs on the winner's target."""
        self.client = client
        self.options = options
        if self.limiter is not None:
            self.key = client.base_url
        self.direct = _attaches(client)

    def open(self) -> EventStream | Observable[EventBatch]:
        """One attempt's Observable (:func:`open_attempt` on the turn's client)."""
        return open_attempt(self.client, self.request, self.options)

    def attach(self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase) -> Any:
        """One attempt pushing to ``observer`` without Rx (only when :attr:`direct`)."""
        # (an annotation, not a cast() call per attempt: ``direct`` says it is one)
        client: HttpClient = self.client  # pyright: ignore[reportAssignmentType]
        return client.attach_batches(self.request, self.options, observer, scheduler)

    def scrub(self, error: BaseException) -> None:
        """Remove the client's key from ``error`` (its ``scrub``, when it has one)."""
        scrub = client_scrubber(self.client)
        if scrub is not None:
            scrub(error)

    def create_request(self) -> Observable[Message]:
        """The rescue: one non-streaming ``create``, reported to the watcher."""
        from ...sources import from_awaitable

        client, request, options = self.client, self.request, self.options
        request_ = from_awaitable(lambda: create_message(client, request, options))
        return request_ if self.watcher is None else _watched_rescue(request_, self.watcher)
