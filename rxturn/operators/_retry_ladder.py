"""``retry_ladder``: resubscribe a failed attempt, on one of two ladders with separate budgets.

docs/behaviour.md §2.4, as a pure decision (:func:`decide`) and an operator that acts on it.
The source must be **cold**: each subscription is one attempt (one HTTP request).

- A rate limit (:func:`~rxturn.errors.is_rate_limit`: 429 / 503 / 529, or in-stream) climbs the
  **rate-limit ladder**: hit ``n`` waits ``rate_limit_delay(retry_after)`` clamped to the time
  left before the total deadline; hits ``1..escalate_after`` retry; the next hit fails with
  :class:`~rxturn.errors.RateLimitEscalation` (``attempts=n``, ``retry_after`` the raw hint);
  a hit past ``max_retries`` is a hard stop: the rate-limit error itself goes downstream, where
  the rescue may pick it up.
- Any other failure climbs the **transport ladder**: a non-retryable error
  (:func:`~rxturn.errors.is_retryable` is false: 400/401/403/404/422, context overflow,
  :class:`~rxturn.errors.Cancelled`) and a *total* timeout fail at once; otherwise retry ``k``
  waits ``jittered_delay(k)`` clamped to the deadline, until ``max_retries`` are spent, and then
  the last error goes downstream.

Neither ladder spends the other's budget, and budgets never outlive one subscription (a turn).
Before attempt 2, 3, … (after the wait) the operator emits
:class:`~rxturn.events.AttemptReset` with the failed attempt's error, its event count and the
usage it reported (from a shared :class:`~rxturn.operators.TurnProgress`), then resubscribes.
Every error it lets out carries ``attempts``: the streaming attempts made.

``on_wait``, when given, is told about every wait *as it starts* (the ``AttemptReset`` only
comes once it is over), so a user interface can say what it waits for and for how long:
``on_wait(reason=..., seconds=..., attempt=..., error=...)`` with ``reason`` ``"rate_limit"``
or ``"backoff"``, ``seconds`` the wait, ``attempt`` the attempt that follows it and ``error``
the failure that caused it. It runs only on a failure, never per event; if it raises, the
error is logged and the turn goes on.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import SerialDisposable, SingleAssignmentDisposable
from reactivex.internal import curry_flip

from .._batching import event_count
from ..errors import RateLimitEscalation, StreamTimeoutError, is_rate_limit, is_retryable
from ..events import AttemptReset
from ..resilience.backoff import clamp_to_deadline, jittered_delay, rate_limit_delay
from ..resilience.policies import RateLimitPolicy, RetryPolicy
from ._progress import TurnProgress, stamp_attempts
from ._scheduling import resolve_scheduler

__all__ = ["Decision", "WaitHook", "decide", "notify_wait", "retry_ladder_"]

_T = TypeVar("_T")

_log = logging.getLogger("rxturn.operators")

#: ``on_wait(reason=..., seconds=..., attempt=..., error=...)``: see the module docstring.
WaitHook = Callable[..., object]


class Decision(NamedTuple):
    """What to do after a failed attempt.

    ``action`` is ``"retry"`` (after ``delay`` seconds), ``"fail"`` (let ``error`` out: a
    permanent error, a total timeout, a spent transport budget or a rate-limit hard stop) or
    ``"escalate"`` (``error`` is a :class:`RateLimitEscalation`). ``ladder`` names the ladder
    whose counter the decision advanced.
    """

    action: Literal["retry", "fail", "escalate"]
    error: Exception
    delay: float = 0.0
    ladder: Literal["transport", "rate_limit", "none"] = "none"


def decide(
    error: Exception,
    *,
    transport_retries: int,
    rate_limit_hits: int,
    retry: RetryPolicy,
    rate_limit: RateLimitPolicy,
    rng: random.Random,
    remaining: float | None,
) -> Decision:
    """Decide the fate of a failed attempt (docs/behaviour.md §2.4).

    Args:
        error: the attempt's error.
        transport_retries: transport retries already made in this turn.
        rate_limit_hits: rate-limit hits before this one in this turn.
        retry: the transport ladder's policy.
        rate_limit: the rate-limit ladder's policy.
        rng: source of the transport jitter.
        remaining: seconds left before the total deadline (``None``: no deadline).
    """
    if is_rate_limit(error):
        hit = rate_limit_hits + 1
        hint: float | None = getattr(error, "retry_after", None)
        if hit > rate_limit.max_retries:
            return Decision("fail", error, ladder="rate_limit")
        if hit > rate_limit.escalate_after:
            return Decision("escalate", RateLimitEscalation(hit, hint), ladder="rate_limit")
        delay = clamp_to_deadline(rate_limit_delay(rate_limit, hint), remaining)
        return Decision("retry", error, delay, ladder="rate_limit")
    if not is_retryable(error):
        return Decision("fail", error)
    if isinstance(error, StreamTimeoutError) and error.kind == "total":
        return Decision("fail", error)
    if transport_retries >= retry.max_retries:
        return Decision("fail", error, ladder="transport")
    delay = clamp_to_deadline(jittered_delay(retry, transport_retries, rng), remaining)
    return Decision("retry", error, delay, ladder="transport")


def notify_wait(on_wait: WaitHook, decision: Decision, attempt: int, error: Exception) -> None:
    """Tell ``on_wait`` of the wait ``decision`` starts before ``attempt`` (see the module
    docstring); what it raises is logged and the turn goes on."""
    try:
        on_wait(
            reason="rate_limit" if decision.ladder == "rate_limit" else "backoff",
            seconds=decision.delay,
            attempt=attempt,
            error=error,
        )
    except Exception:
        _log.exception("on_wait raised; the turn goes on")


@curry_flip
def retry_ladder_(
    source: Observable[_T],
    retry: RetryPolicy | None = None,
    rate_limit: RateLimitPolicy | None = None,
    rng: random.Random | None = None,
    progress: TurnProgress | None = None,
    scheduler: abc.SchedulerBase | None = None,
    on_wait: WaitHook | None = None,
) -> Observable[_T | AttemptReset]:
    """See :func:`rxturn.operators.retry_ladder`."""
    retry_policy = retry if retry is not None else RetryPolicy()
    rate_policy = rate_limit if rate_limit is not None else RateLimitPolicy()
    jitter_source = rng if rng is not None else random.Random()

    def subscribe(
        observer: abc.ObserverBase[_T | AttemptReset],
        scheduler_: abc.SchedulerBase | None = None,
    ) -> abc.DisposableBase:
        sched = resolve_scheduler(scheduler, scheduler_)
        current = SerialDisposable()  # the attempt in flight, or the wait before the next one
        attempt = 0
        transport_retries = 0
        rate_limit_hits = 0
        events = 0  # events of the current attempt, when no TurnProgress counts them
        forward: Any = observer.on_next

        if progress is None:

            def count(value: _T) -> None:
                nonlocal events
                events += event_count(value)  # a batch counts as its events
                observer.on_next(value)

            forward = count

        def start() -> None:
            nonlocal attempt, events
            attempt += 1
            events = 0
            # Assign before subscribing: a source failing synchronously schedules the next wait
            # into ``current`` from inside ``subscribe``, which must not be overwritten.
            subscription = SingleAssignmentDisposable()
            current.disposable = subscription
            subscription.disposable = source.subscribe(
                forward, on_error, observer.on_completed, scheduler=scheduler_
            )

        def on_error(error: Exception) -> None:
            nonlocal transport_retries, rate_limit_hits
            decision = decide(
                error,
                transport_retries=transport_retries,
                rate_limit_hits=rate_limit_hits,
                retry=retry_policy,
                rate_limit=rate_policy,
                rng=jitter_source,
                remaining=progress.remaining() if progress is not None else None,
            )
            if decision.ladder == "rate_limit":
                rate_limit_hits += 1
            if decision.action != "retry":
                if decision.action == "fail":
                    stamp_attempts(error, attempt)
                observer.on_error(decision.error)
                return
            if decision.ladder == "transport":
                transport_retries += 1
            reset = AttemptReset(
                attempt=attempt + 1,
                reason=str(error),
                error_type=type(error).__name__,
                usage=progress.shadow.usage if progress is not None else None,
                events=progress.events if progress is not None else events,
            )

            if on_wait is not None:
                notify_wait(on_wait, decision, attempt + 1, error)

            def next_attempt(_: abc.SchedulerBase, __: Any = None) -> None:
                observer.on_next(reset)
                if not current.is_disposed:  # the subscriber may have let go on the reset
                    start()

            current.disposable = sched.schedule_relative(decision.delay, next_attempt)

        start()
        return current

    return Observable(subscribe)
