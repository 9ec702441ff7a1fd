"""The stream handler's building blocks as ReactiveX operators you can put in your own pipelines.

:class:`~rxturn.StreamHandler` is nothing but these operators composed (docs/behaviour.md §2)::

    attempt = reactivex.defer(lambda _: client.stream(request)).pipe(
        attempt_guard(p),                                       # shadow fold, truncation
        deadlines(120.0, 180.0, 10, progress=p),                # one timer per attempt
        scrubbed(client.scrub),                                 # the key out of its error
        annotate_progress(p),                                   # what a 429 / 408 had received
    )
    turn = attempt.pipe(
        rate_limit_gate(limiter, client.base_url, progress=p),  # per attempt: retries re-gate
        retry_ladder(retry, rate_limit, progress=p),            # resubscribes the cold attempt
        total_deadline(300.0, progress=p),                      # one timer for the whole turn
        rescue(lambda: from_awaitable(lambda: client.create(request)), timeout=120.0,
               progress=p),                                     # rxturn.sources.from_awaitable
        cancellable(token, progress=p),                         # outermost: a cancel ends all
    )

``p`` is an optional :class:`TurnProgress`, created per turn inside ``reactivex.defer``, through
which the operators share the facts of the turn (events, shadow fold, attempts, total deadline).
Every time-dependent operator takes ``scheduler`` (else the subscribe-time scheduler, else asyncio
on the running loop), so all of them run on ``reactivex.testing.TestScheduler`` virtual time.
A scheduler that cannot time the stream is a :class:`~rxturn.errors.ConfigError` at
subscription naming the fix: an ``AsyncIOScheduler`` whose loop would never run the timers
(closed, or not running while another loop runs here) or that another thread runs while a loop
runs here, reactivex's ``ImmediateScheduler`` (it cannot wait), and, while an event loop runs on
the subscribing thread, ``CurrentThreadScheduler`` (it would sleep on the loop's thread) and the
schedulers that fire on other threads (``ThreadPoolScheduler``, ``NewThreadScheduler``,
``EventLoopScheduler``, ``TimeoutScheduler``).

A subscriber whose ``on_next`` raises ends the stream with that exception, through its own
``on_error``: ``retry_ladder`` and ``rescue`` never take it for the attempt's error (it is not
retried, and starts no rescue), nor does :class:`~rxturn.StreamHandler`'s turn.

Batches. Every operator here accepts a stream whose items are single events or
:data:`~rxturn.events.EventBatch` lists (what a client's ``stream_batches`` emits, one per network
chunk): ``attempt_guard`` checks a batch event by event and forwards the accepted prefix,
``deadlines`` counts its events, the others pass items through. :func:`unbatch` and
:func:`as_batches` turn such a stream into one shape.

Marble legend: ``S`` MessageStart, ``d`` a delta, ``P`` PartStop, ``M`` MessageStop, ``R``
AttemptReset, ``F`` Fallback, ``#`` an error, ``|`` completion, ``-`` a time step.

Every operator checks its arguments where it is built: a wrong type (a policy, a progress, a
scheduler, a callback that is not callable) is a :class:`~rxturn.errors.ConfigError` naming the
operator and the argument, not an error from inside a subscription later.

Imports are lazy: naming an operator does not import the others.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from reactivex import Observable, abc

from .._exports import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from ..events import AttemptReset, EventBatch, Fallback, StreamEvent
    from ..messages import Message
    from ..resilience.cancel import CancelToken
    from ..resilience.hedge import HedgePolicy, HedgeTarget
    from ..resilience.limiter import RateLimiter
    from ..resilience.policies import RateLimitPolicy, RetryPolicy
    from ._hedge import RaceWatcher
    from ._progress import TurnProgress
    from ._rescue import is_rescuable
    from ._retry_ladder import Decision, decide

__all__ = [
    "Decision",
    "RaceWatcher",
    "TurnProgress",
    "annotate_progress",
    "as_batches",
    "attempt_guard",
    "cancellable",
    "deadlines",
    "decide",
    "give_up_beyond_deadline",
    "hedge",
    "is_rescuable",
    "rate_limit_gate",
    "rescue",
    "retry_ladder",
    "scrubbed",
    "total_deadline",
    "unbatch",
]

_T = TypeVar("_T")
#: An attempt's items: single events, or batches of them.
_E = TypeVar("_E", bound="StreamEvent | EventBatch")

#: The names that are not operators, each imported from its module on first use.
_HOMES: dict[str, str] = {
    "Decision": "._retry_ladder",
    "decide": "._retry_ladder",
    "TurnProgress": "._progress",
    "RaceWatcher": "._hedge",
    "is_rescuable": "._rescue",
}


def _check_seconds(where: str, name: str, value: Any, *, allow_zero: bool = False) -> None:
    """Reject a bad duration where the operator is built, not deep inside a timer callback."""
    if value is None:
        return
    from .._validate import seconds_problem
    from ..errors import ConfigError

    problem = seconds_problem(value, allow_zero=allow_zero)
    if problem is not None:
        raise ConfigError(f"{where}: {name} {problem} (or None for no limit)")


def _check_common(
    where: str,
    *,
    progress: object = None,
    scheduler: object = None,
    progress_required: bool = False,
) -> None:
    """The arguments many operators share: a wrong one is a ConfigError naming it where the
    operator is built, never an AttributeError from inside a subscription or a timer."""
    from .._arguments import check_instance
    from ._progress import TurnProgress

    check_instance(
        progress,
        TurnProgress,
        f"{where}(progress=...)",
        "a TurnProgress",
        optional=not progress_required,
    )
    check_instance(
        scheduler,
        abc.SchedulerBase,
        f"{where}(scheduler=...)",
        "a reactivex scheduler",
        optional=True,
    )


def _check_callables(where: str, **values: object) -> None:
    """Each of ``values`` is callable or ``None``."""
    from .._arguments import check_callable

    for name, value in values.items():
        check_callable(value, f"{where}({name}=...)", "a callable", optional=True)


if not TYPE_CHECKING:  # a name that is not public is then an error for type checkers too
    __getattr__, __dir__ = lazy_exports(globals(), _HOMES)


def attempt_guard(
    progress: TurnProgress | None = None,
) -> Callable[[Observable[_E]], Observable[_E]]:
    """Forward an attempt's events only once the fold accepts them; flag truncation.

    Each event is folded into a shadow state first. An event the fold rejects (a closed tool
    block whose JSON does not parse, a lane event before ``MessageStart``) fails the attempt
    with the fold's error and is **not** forwarded. Completion without ``MessageStop`` fails
    with :class:`~rxturn.errors.TruncatedStreamError`.

    .. code:: text

        source: -S-d-d-P-M-|        -S-d-P(bad tool JSON)-…     -S-d-d-|
        result: -S-d-d-P-M-|        -S-d-#                      -S-d-d-#  (truncated)

    Args:
        progress: share the shadow state, event count and attempt count with the other
            operators of the turn (a fresh private one otherwise).

    Returns:
        An operator ``Observable[StreamEvent] -> Observable[StreamEvent]`` (or the same over
        batches).

    Examples:
        >>> client.stream(request).pipe(attempt_guard())  # doctest: +SKIP
    """
    _check_common("attempt_guard", progress=progress)
    from ._attempt_guard import attempt_guard_

    return attempt_guard_(progress)


def deadlines(
    first_event: float | None,
    per_event: float | None,
    max_consecutive: int = 10,
    *,
    progress: TurnProgress | None = None,
    scheduler: abc.SchedulerBase | None = None,
) -> Callable[[Observable[_T]], Observable[_T]]:
    """First-event and per-event (idle) timeouts of one attempt, at O(1) cost per event.

    Until the first event the wait is ``first_event``, then ``per_event`` between events. Each
    expiry with nothing new is one consecutive timeout; an event resets the count. The attempt
    fails with :class:`~rxturn.errors.StreamTimeoutError` (``kind`` ``"first_event"`` or
    ``"idle"``) after ``min(2, max_consecutive)`` timeouts in a row while nothing has arrived,
    else after ``max_consecutive``. One timer per subscription, never re-armed per event.
    Apply it per attempt (inside the retry): each subscription starts its own clock.

    .. code:: text

        first_event=2, per_event=3, max_consecutive=1
        source: -S--d-----------…
        result: -S--d--#            (idle: 3 s of silence after d)

        first_event=2, max_consecutive=10 (empty stream: fast-fail after 2 x 2 s)
        source: --------…
        result: ----#               (first_event, 2 consecutive)

    Args:
        first_event: seconds to wait for the first event (``None``: no limit).
        per_event: seconds of silence allowed between events (``None``: no limit).
        max_consecutive: expiries in a row that fail the attempt (>= 1).
        progress: lets the error say whether partial data was kept.
        scheduler: where time comes from.

    Returns:
        An operator that mirrors the source or fails it with a timeout.

    Examples:
        >>> attempt.pipe(deadlines(120.0, 180.0, 10))  # doctest: +SKIP
    """
    _check_common("deadlines", progress=progress, scheduler=scheduler)
    from ..errors import ConfigError
    from ._deadlines import deadlines_

    _check_seconds("deadlines", "first_event", first_event)
    _check_seconds("deadlines", "per_event", per_event)
    from .._arguments import shown
    from .._validate import positive

    if not positive(max_consecutive, integer=True):  # callers may be untyped
        raise ConfigError(
            f"deadlines: max_consecutive must be an integer >= 1, got {shown(max_consecutive)}"
        )
    return deadlines_(first_event, per_event, max_consecutive, progress, scheduler)


def total_deadline(
    seconds: float | None,
    *,
    progress: TurnProgress | None = None,
    scheduler: abc.SchedulerBase | None = None,
) -> Callable[[Observable[_T]], Observable[_T]]:
    """One deadline for the whole turn: every attempt, backoff and limiter wait included.

    Put it *outside* :func:`retry_ladder`, so a total timeout is never retried. When it fires,
    the upstream is disposed and :class:`~rxturn.errors.StreamTimeoutError` (``kind="total"``)
    reports the turn's events, whether partial data was kept and the time since the turn began.

    .. code:: text

        seconds=5
        source: -S-d-#--R---S-d-d-…
        result: -S-d-#--R---S-d-#        (5 s after subscription)

    Args:
        seconds: the budget (``None``: the operator is the identity).
        progress: use its turn start, deadline and event count (shared with the ladder's
            clamping); without it the error counts the events that passed this operator and
            says ``partial=False``.
        scheduler: where time comes from.

    Returns:
        An operator that mirrors the source until the deadline.

    Examples:
        >>> turn.pipe(total_deadline(300.0))  # doctest: +SKIP
    """
    _check_common("total_deadline", progress=progress, scheduler=scheduler)
    from ._total_deadline import total_deadline_

    _check_seconds("total_deadline", "seconds", seconds)
    return total_deadline_(seconds, progress, scheduler)


def retry_ladder(
    retry: RetryPolicy | None = None,
    rate_limit: RateLimitPolicy | None = None,
    *,
    rng: random.Random | None = None,
    progress: TurnProgress | None = None,
    scheduler: abc.SchedulerBase | None = None,
    on_wait: Callable[..., object] | None = None,
) -> Callable[[Observable[_T]], Observable[_T | AttemptReset]]:
    """Resubscribe a failed cold attempt on the transport or the rate-limit ladder.

    Rate limits (429 / 503 / 529, in-stream too) wait ``min(retry_after, max_delay)`` (or the
    default delay), retry ``escalate_after`` times, then fail with
    :class:`~rxturn.errors.RateLimitEscalation`; past ``max_retries`` the rate-limit error
    itself goes out (hard stop). Other retryable failures wait ``base·2^k`` (capped, jittered from
    ``rng``) for ``retry.max_retries`` retries, then the last error goes out. Permanent errors and
    ``Cancelled`` go out at once. Waits are clamped to ``progress``' total deadline. Before each
    new attempt, after the wait, an :class:`~rxturn.events.AttemptReset` is emitted. Errors
    that go out carry ``attempts``.

    .. code:: text

        source (per subscription): 1st -S-d-#(500)   2nd -S-d-d-P-M-|
        result:                        -S-d-----R-S-d-d-P-M-|
                                              ^ 0.1 s ±10 %

    Args:
        retry: the transport ladder (default :class:`~rxturn.resilience.policies.RetryPolicy`).
        rate_limit: the rate-limit ladder (default :class:`~rxturn.RateLimitPolicy`).
        rng: jitter source (default: a fresh ``random.Random()``).
        progress: the failed attempt's usage and events for ``AttemptReset``; the deadline.
        scheduler: where time comes from.
        on_wait: told of each wait as it starts, by keyword: ``reason`` (``"rate_limit"`` or
            ``"backoff"``), ``seconds``, ``attempt`` (the one that follows) and ``error``;
            for a user interface that shows waits (``rxturn chat`` does). Called only on a
            failure; an exception it raises is logged and ignored.

    Returns:
        An operator emitting the source's items and the ``AttemptReset`` marks.

    Examples:
        >>> reactivex.defer(lambda _: client.stream(req)).pipe(retry_ladder())  # doctest: +SKIP
    """
    from .._arguments import check_instance
    from ..resilience.policies import RateLimitPolicy, RetryPolicy

    check_instance(retry, RetryPolicy, "retry_ladder(retry=...)", "a RetryPolicy", optional=True)
    check_instance(
        rate_limit,
        RateLimitPolicy,
        "retry_ladder(rate_limit=...)",
        "a RateLimitPolicy",
        optional=True,
    )
    check_instance(rng, random.Random, "retry_ladder(rng=...)", "a random.Random", optional=True)
    _check_common("retry_ladder", progress=progress, scheduler=scheduler)
    _check_callables("retry_ladder", on_wait=on_wait)
    from ._retry_ladder import retry_ladder_

    return retry_ladder_(retry, rate_limit, rng, progress, scheduler, on_wait)


def rescue(
    create: Callable[[], Observable[Message]],
    *,
    timeout: float | None = None,
    progress: TurnProgress | None = None,
    when: Callable[[BaseException], bool] | None = None,
    scheduler: abc.SchedulerBase | None = None,
) -> Callable[[Observable[_T]], Observable[_T | Fallback]]:
    """On a rescuable failure, substitute one non-streaming request (docs/behaviour.md §2.6).

    ``when`` (default :func:`is_rescuable`) picks the failures: spent transport budgets, total
    timeouts, rate-limit hard stops; never cancels, escalations or permanent errors. The
    request's deadline is what is left of ``progress``' total deadline, or a fresh ``timeout``
    if that has passed, or none if the turn has no total deadline (without ``progress``:
    ``timeout``). A reply that completes as the deadline fires is accepted. Success emits
    :class:`~rxturn.events.Fallback` and completes; failure is
    :class:`~rxturn.errors.RescueFailed` with both errors.

    .. code:: text

        source:  -S-d-#(budget spent)
        create:           ----m|
        result:  -S-d-----------F|

    Args:
        create: makes the request Observable (e.g. ``from_awaitable(lambda:
            client.create(request, options))``); called once, at the failure. Its first item
            is the reply; an item that is not a :class:`~rxturn.Message`, like a ``create``
            that returns no Observable, is a :class:`~rxturn.errors.ConfigError`.
        timeout: the fresh budget (seconds) when the total deadline has passed.
        progress: the turn's deadline and attempt count.
        when: which errors to rescue; what it raises ends the turn with that error.
        scheduler: where time comes from.

    Returns:
        An operator mirroring the source, or ending with the rescued ``Fallback``.
    """
    from .._arguments import check_callable

    check_callable(create, "rescue(create=...)", "a callable making the request's Observable")
    _check_callables("rescue", when=when)
    _check_common("rescue", progress=progress, scheduler=scheduler)
    from ._rescue import is_rescuable as default_when
    from ._rescue import rescue_

    _check_seconds("rescue", "timeout", timeout)
    return rescue_(create, timeout, progress, when or default_when, scheduler)


def cancellable(
    token: CancelToken | None, *, progress: TurnProgress | None = None
) -> Callable[[Observable[_T]], Observable[_T]]:
    """Fail with :class:`~rxturn.errors.Cancelled` when ``token`` fires; put it outermost.

    Already cancelled at subscription → fails at once, upstream never subscribed (no request).
    Fired later → disposes the upstream (closing the HTTP response, ending every wait) and
    fails. Upstream operators never see the cancel, so it is never retried nor rescued.

    .. code:: text

        token:  ---------x
        source: -S-d-d-d-…
        result: -S-d-d-d-#(Cancelled)

    Args:
        token: the cancel signal (``None``: the operator is the identity).
        progress: stamps ``attempts`` on the ``Cancelled`` error.

    Returns:
        An operator mirroring the source until the token fires.
    """
    from .._arguments import check_instance
    from ..resilience.cancel import CancelToken

    check_instance(token, CancelToken, "cancellable(token=...)", "a CancelToken", optional=True)
    _check_common("cancellable", progress=progress)
    from ._cancel import cancellable_

    return cancellable_(token, progress)


def rate_limit_gate(
    limiter: RateLimiter | None,
    key: str = "",
    *,
    max_wait: float | None = None,
    progress: TurnProgress | None = None,
    scheduler: abc.SchedulerBase | None = None,
) -> Callable[[Observable[_T]], Observable[_T]]:
    """Hold each subscription until ``limiter`` grants a token for ``key`` (docs/behaviour.md §2.7).

    Waits ``min(needed, max_wait - waited, time to the total deadline)`` per round; once
    ``max_wait`` is spent (or the deadline is reached) it subscribes without a token. Put it
    inside :func:`retry_ladder` so every attempt re-gates.

    .. code:: text

        bucket empty, next token in 1 s
        source:        -S-d-M-|
        result: -------…1 s…-S-d-M-|

    Args:
        limiter: the shared :class:`~rxturn.RateLimiter` (``None`` or disabled: identity).
        key: the bucket key, normally ``client.base_url``.
        max_wait: cap of the total wait (default: the limiter's ``max_wait``).
        progress: the turn's total deadline.
        scheduler: where time comes from.

    Returns:
        An operator delaying the subscription.
    """
    from .._arguments import check_instance
    from ..resilience.limiter import RateLimiter

    check_instance(
        limiter, RateLimiter, "rate_limit_gate(limiter=...)", "a RateLimiter", optional=True
    )
    check_instance(key, str, "rate_limit_gate(key=...)", "a str")
    _check_common("rate_limit_gate", progress=progress, scheduler=scheduler)
    from ._gate import rate_limit_gate_

    _check_seconds("rate_limit_gate", "max_wait", max_wait, allow_zero=True)
    return rate_limit_gate_(limiter, key, max_wait, progress, scheduler)


def scrubbed(
    scrub: Callable[[BaseException], None] | None,
) -> Callable[[Observable[_T]], Observable[_T]]:
    """Pass an attempt's error through ``scrub`` (a client's ``scrub``: its key out of the
    error, in place) before anything downstream sees it; items pass untouched.

    Args:
        scrub: what cleans an error in place (``None``: the identity). If it raises, the
            attempt ends with a :class:`~rxturn.errors.ConfigError` instead, and the error it
            failed to clean is withheld.

    Examples:
        >>> attempt.pipe(scrubbed(client.scrub))  # doctest: +SKIP
    """
    _check_callables("scrubbed", scrub=scrub)
    from ._progress import scrubbed_

    return scrubbed_(scrub)


def annotate_progress(progress: TurnProgress) -> Callable[[Observable[_T]], Observable[_T]]:
    """A rate limit or a 408 that fails an attempt learns what the attempt had received
    (``partial``, ``events``), from ``progress``; items pass untouched. Put it after
    :func:`deadlines`, inside :func:`retry_ladder`.

    Examples:
        >>> attempt.pipe(annotate_progress(p))  # doctest: +SKIP
    """
    _check_common("annotate_progress", progress=progress, progress_required=True)
    from ._progress import annotate_progress_

    return annotate_progress_(progress)


def give_up_beyond_deadline(
    progress: TurnProgress,
) -> Callable[[Observable[_T]], Observable[_T]]:
    """Turn a rate limit whose ``Retry-After`` outlasts the turn (``progress``'s total deadline)
    into :class:`~rxturn.errors.RetryAfterBeyondDeadline`: the ladder lets it out at once
    instead of waiting, so another model can take the turn. Put it after
    :func:`annotate_progress`, inside :func:`retry_ladder`.

    .. code:: text

        4 s left in the turn, Retry-After 30 s
        source: -S-d-#(429)
        result: -S-d-#(RetryAfterBeyondDeadline, caused by the 429)

    Examples:
        >>> attempt.pipe(give_up_beyond_deadline(p))  # doctest: +SKIP
    """
    _check_common("give_up_beyond_deadline", progress=progress, progress_required=True)
    from ._progress import give_up_beyond_deadline_

    return give_up_beyond_deadline_(progress)


def hedge(
    policy: HedgePolicy,
    open_target: Callable[[HedgeTarget], Observable[_E]],
    *,
    model: str,
    client: object | None = None,
    blocked: Callable[[HedgeTarget], bool] | None = None,
    rate_limited: bool = False,
    watcher: RaceWatcher | None = None,
    on_hedge: Callable[..., object] | None = None,
    on_skip: Callable[..., object] | None = None,
    scheduler: abc.SchedulerBase | None = None,
) -> Callable[[Observable[_E]], Observable[_E]]:
    """Race the source (one attempt) against hedges; the first racer with content is the stream.

    The source starts at once; if it has produced no content (a text, thinking, refusal or
    tool-JSON delta, a tool call's start, or the end of a reply; never ``MessageStart``, pings
    or an empty role chunk) within the policy's delay, ``open_target(target)`` is subscribed on
    the first eligible target of ``policy`` (:mod:`rxturn.resilience.hedge` has the rules:
    budget, breakers, quota, ``max_hedges``). Each racer's items are held until one produces
    content; then every other racer is disposed and only then are the winner's held items
    forwarded, followed by the rest of its stream. A fatal error (cancel, 400, 401, 403,
    configuration) ends the race with that error; another error hands over to the racers still
    running, or sends the pending hedge at once; with nobody left, the source's error goes out
    (what is downstream retries the source, so its error is the one to judge).

    .. code:: text

        delay=2
        source:  -S----------------d-d-M-|          (slow first content)
        hedge:           -S-d-d-M-|                 (subscribed at 2 s)
        result:              S-d-d-M-|              (the source disposed first)

    Args:
        policy: targets, delay, budget (shared: it learns and spends across races).
        open_target: a cold Observable of one request to ``target``.
        model: the source's model (the adaptive delay's key; a target's default model).
        client: the source's client (identity only: which targets are the same request).
        blocked: whether a target's breaker is open (skipped); what it raises ends the race
            with that error (every racer let go).
        rate_limited: the source's quota was already rate limited this turn.
        watcher: told of each racer's start and end (:class:`RaceWatcher`); what it raises
            ends the race with that error (every racer let go), as for ``blocked``.
        on_hedge: called by keyword when a hedge is sent (``index``, ``model``, ``target``,
            ``reason`` ``"delay"`` or ``"error"``, ``after`` seconds since the race began).
        on_skip: called by keyword when a due hedge is not sent (``target``, ``model``,
            ``reason``: ``"breaker_open"``, ``"rate_limited"`` or ``"budget"``).
        scheduler: where time comes from.

    Returns:
        An operator over one attempt's items (events or batches).

    Examples:
        >>> race = hedge(policy, lambda t: client.stream(req, opts(t)), model="m")  # doctest: +SKIP
        >>> attempt.pipe(race)  # doctest: +SKIP
    """
    from .._arguments import check_bool, check_callable, check_instance
    from ..resilience.hedge import HedgePolicy

    check_instance(policy, HedgePolicy, "hedge(policy=...)", "a HedgePolicy")
    check_callable(open_target, "hedge(open_target=...)", "a callable opening a target's request")
    check_instance(model, str, "hedge(model=...)", "a str")
    check_bool(rate_limited, "hedge(rate_limited=...)")
    _check_callables("hedge", blocked=blocked, on_hedge=on_hedge, on_skip=on_skip)
    if watcher is not None:
        for method in ("racer_started", "racer_ended", "racer_adopted"):
            if not callable(getattr(watcher, method, None)):
                from .._arguments import described
                from ..errors import ConfigError

                raise ConfigError(
                    f"hedge(watcher=...) must be a RaceWatcher (with {method}()) or None, "
                    f"got {described(watcher)}"
                )
    _check_common("hedge", scheduler=scheduler)
    from ._hedge import hedge_

    return hedge_(
        policy,
        open_target,
        model,
        client,
        blocked,
        rate_limited,
        watcher,
        on_hedge,
        on_skip,
        scheduler,
    )


def unbatch() -> Callable[[Observable[_T | Sequence[_T]]], Observable[_T]]:
    """Emit the events of each :data:`~rxturn.events.EventBatch` one by one; single items pass.

    .. code:: text

        source: -[S,d]-[d,d,P]-M-|
        result: -S-d---d-d-P---M-|

    Examples:
        >>> client.stream_batches(request).pipe(unbatch())  # doctest: +SKIP
    """
    from .._batching import unbatch_

    return unbatch_


def as_batches() -> Callable[[Observable[_T | Sequence[_T]]], Observable[list[_T]]]:
    """Make every item a list: a batch passes as it is, a single item becomes ``[item]``.

    .. code:: text

        source: -[S,d]-R-[S,d,M]-|
        result: -[S,d]-[R]-[S,d,M]-|

    Examples:
        >>> handler_items.pipe(as_batches(), ops.scan(fold_batch, INITIAL_STATE))  # doctest: +SKIP
    """
    from .._batching import as_batches_

    return as_batches_
