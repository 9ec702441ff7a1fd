"""The retry budget of a turn: what follows a failed attempt, on one of two ladders.

Theory of operation. :func:`~rxturn.resilience.verdicts.classify` says which ladder a failure
climbs (docs/behaviour.md §2.4):

- a rate limit (429 / 503 / 529, or in-stream) climbs the **rate-limit ladder**: hit ``n``
  waits ``rate_limit_delay(retry_after)`` clamped to the time left before the total deadline;
  hits ``1..escalate_after`` retry; the next hit fails with
  :class:`~rxturn.errors.RateLimitEscalation` (``attempts=n``, ``retry_after`` the raw hint); a
  hit past ``max_retries`` is a hard stop: the rate-limit error itself goes on (to the rescue);
- any other retryable failure climbs the **transport ladder**: retry ``k`` waits
  ``jittered_delay(k)`` clamped to the deadline, until ``max_retries`` are spent, and then the
  last error goes on; a permanent error, a cancel and a *total* timeout fail at once.

Neither ladder spends the other's budget, and a budget never outlives its turn. A
:class:`RetryBudget` is the state of both ladders for one turn: :meth:`~RetryBudget.failed`
takes the failed attempt's error and the time left, advances the ladders and returns the
:class:`Decision`; after the wait, :meth:`~RetryBudget.reset` builds the
:class:`~rxturn.events.AttemptReset` that precedes the next attempt (with the failed attempt's
event count and reported usage) and counts that attempt. While the wait runs a retry is owed
(:attr:`~RetryBudget.retry_owed`); a turn that ends meanwhile cancels it
(:meth:`~RetryBudget.cancel_retry`). Every error it lets out carries
``attempts``. :func:`decide` is the same decision as a pure function of the counters.

``on_wait`` hooks are told of each wait as it starts (:func:`notify_wait`): ``reason``
(``"rate_limit"`` or ``"backoff"``), ``seconds``, ``attempt`` (the one that follows) and
``error``; what a hook raises is logged and the turn goes on.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Callable
from typing import Literal, NamedTuple

from ..errors import RateLimitError, RateLimitEscalation, RetryAfterBeyondDeadline
from ..events import AttemptReset
from ..messages import Usage
from .backoff import clamp_to_deadline, jittered_delay, rate_limit_delay
from .policies import RateLimitPolicy, RetryPolicy
from .verdicts import classify

__all__ = [
    "Decision",
    "RetryBudget",
    "WaitHook",
    "beyond_deadline",
    "decide",
    "notify_wait",
    "stamp_attempts",
]

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
    """Decide the fate of a failed attempt (see the module docstring).

    Args:
        error: the attempt's error.
        transport_retries: transport retries already made in this turn.
        rate_limit_hits: rate-limit hits before this one in this turn.
        retry: the transport ladder's policy.
        rate_limit: the rate-limit ladder's policy.
        rng: source of the transport jitter.
        remaining: seconds left before the total deadline (``None``: no deadline).
    """
    ladder = classify(error).ladder
    if ladder == "rate_limit":
        hit = rate_limit_hits + 1
        hint: float | None = getattr(error, "retry_after", None)
        if hit > rate_limit.max_retries:
            return Decision("fail", error, ladder="rate_limit")
        if hit > rate_limit.escalate_after:
            return Decision("escalate", RateLimitEscalation(hit, hint), ladder="rate_limit")
        delay = clamp_to_deadline(rate_limit_delay(rate_limit, hint), remaining)
        return Decision("retry", error, delay, ladder="rate_limit")
    if ladder == "none":
        return Decision("fail", error)
    if transport_retries >= retry.max_retries:
        return Decision("fail", error, ladder="transport")
    delay = clamp_to_deadline(jittered_delay(retry, transport_retries, rng), remaining)
    return Decision("retry", error, delay, ladder="transport")


def stamp_attempts(error: BaseException, attempts: int) -> None:
    """Record on ``error`` how many streaming attempts the turn made.

    Only the step that decides a turn's fate calls this, on the error it lets out, so the
    value always belongs to this turn even when a client reuses one exception object.
    """
    with contextlib.suppress(AttributeError, TypeError):  # an exception type with __slots__
        error.attempts = attempts  # pyright: ignore[reportAttributeAccessIssue]  # any exception may carry it


def beyond_deadline(error: Exception, attempts: int, remaining: float | None) -> Exception:
    """``error``, or :class:`~rxturn.errors.RetryAfterBeyondDeadline` (caused by it) when it is
    a rate limit whose ``Retry-After`` outlasts the ``remaining`` seconds of the turn: waiting
    cannot help, another model might (the engine asks for this only when one could answer)."""
    if isinstance(error, RateLimitError):
        wait = error.retry_after
        if remaining is not None and wait is not None and wait > remaining:
            replaced = RetryAfterBeyondDeadline(attempts, wait, remaining)
            replaced.__cause__ = error
            return replaced
    return error


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


class RetryBudget:
    """Both ladders of one turn (see the module docstring).

    Attributes:
        attempt: the streaming attempt in flight (1 for the first).
        transport_retries: transport retries made.
        rate_limit_hits: rate-limit hits seen.
        error: the failed attempt's error while a retry waits (``None`` otherwise).
    """

    __slots__ = (
        "_on_wait",
        "_rate_limit",
        "_retry",
        "_rng",
        "attempt",
        "error",
        "rate_limit_hits",
        "transport_retries",
    )

    def __init__(
        self,
        retry: RetryPolicy,
        rate_limit: RateLimitPolicy,
        rng: random.Random,
        on_wait: WaitHook | None = None,
    ) -> None:
        self._retry = retry
        self._rate_limit = rate_limit
        self._rng = rng
        self._on_wait = on_wait
        self.attempt = 1
        self.transport_retries = 0
        self.rate_limit_hits = 0
        self.error: Exception | None = None

    def __repr__(self) -> str:
        return (
            f"RetryBudget(attempt={self.attempt}, transport_retries={self.transport_retries}, "
            f"rate_limit_hits={self.rate_limit_hits})"
        )

    def failed(self, error: Exception, remaining: float | None) -> Decision:
        """The attempt in flight failed with ``error``, ``remaining`` seconds before the total
        deadline (``None``: none). On ``"retry"`` the wait's hook has been told and the error
        is kept for :meth:`reset`; otherwise the decision's error is the turn's (a ``"fail"``
        error carries ``attempts``)."""
        decision = decide(
            error,
            transport_retries=self.transport_retries,
            rate_limit_hits=self.rate_limit_hits,
            retry=self._retry,
            rate_limit=self._rate_limit,
            rng=self._rng,
            remaining=remaining,
        )
        ladder = decision.ladder
        if ladder == "rate_limit":
            self.rate_limit_hits += 1
        action = decision.action
        if action != "retry":
            if action == "fail":
                stamp_attempts(error, self.attempt)
            return decision
        if ladder == "transport":
            self.transport_retries += 1
        if self._on_wait is not None:
            notify_wait(self._on_wait, decision, self.attempt + 1, error)
        self.error = error
        return decision

    @property
    def retry_owed(self) -> bool:
        """Whether a retry was decided and its wait is not over yet (:meth:`reset` follows)."""
        return self.error is not None

    def cancel_retry(self) -> None:
        """The retry owed is not made: the turn ended during its wait (a total timeout, the
        rescue, a cancel). The ladders keep what they spent; :attr:`retry_owed` is false."""
        self.error = None

    def reset(self, events: int, usage: Usage | None) -> AttemptReset:
        """The wait is over: the ``AttemptReset`` before the next attempt (``events`` and
        ``usage``: what the failed attempt delivered), which becomes the attempt in flight."""
        error = self.error
        assert error is not None, "reset() follows a retry decision"
        self.error = None
        self.attempt += 1
        return AttemptReset(
            attempt=self.attempt,
            reason=str(error),
            error_type=type(error).__name__,
            usage=usage,
            events=events,
        )
