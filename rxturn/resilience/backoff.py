"""How long to wait before the next attempt: pure functions, no clock, no global randomness.

The two ladders of the stream handler (reference §2.1, §2.3 step 6) sleep differently:

- the **transport** ladder backs off exponentially, ``min(base·2^k, max)``, spread by a jitter
  factor drawn from an injected :class:`random.Random` (so tests can pin it and concurrent turns
  do not retry in lock-step);
- the **rate-limit** ladder follows the provider's ``Retry-After`` hint when it is respected,
  else a default delay, both capped.

Either delay is then clamped to the time left before the turn's total deadline
(:func:`clamp_to_deadline`). :func:`parse_retry_after` reads the header (reference §4.3).
"""

from __future__ import annotations

import email.utils
import math
import random
from datetime import UTC, datetime

from .policies import RateLimitPolicy, RetryPolicy

__all__ = [
    "base_delay",
    "clamp_to_deadline",
    "jittered_delay",
    "parse_retry_after",
    "rate_limit_delay",
]

# 2**60 · base overflows any useful delay; past it the schedule is simply the cap.
_MAX_SHIFT = 60


def base_delay(policy: RetryPolicy, retry: int) -> float:
    """``min(base_delay · 2^retry, max_delay)`` seconds for the 0-based ``retry``.

    Saturating: a huge ``retry`` gives the cap, never an overflow.
    """
    if retry < 0:
        raise ValueError(f"retry index must be >= 0, got {retry}")
    if retry >= _MAX_SHIFT:
        return float(policy.max_delay)
    return float(min(policy.base_delay * (1 << retry), policy.max_delay))


def jittered_delay(policy: RetryPolicy, retry: int, rng: random.Random) -> float:
    """:func:`base_delay` x ``(1 + f·jitter)``, ``f`` uniform in ``[-1, 1)`` from ``rng``.

    With ``jitter == 0`` the result is exactly the base delay and ``rng`` is not consulted.
    The result stays within ``[base·(1-jitter), base·(1+jitter)]``, so never negative.
    """
    delay = base_delay(policy, retry)
    if policy.jitter == 0:
        return delay
    factor = 2.0 * rng.random() - 1.0  # uniform in [-1, 1)
    return max(0.0, delay * (1.0 + factor * policy.jitter))


def rate_limit_delay(policy: RateLimitPolicy, retry_after: float | None) -> float:
    """The rate-limit wait: ``min(hint, max_delay)`` if a hint is present and respected,
    else ``min(default_delay, max_delay)``. A negative or NaN hint counts as absent."""
    if (
        policy.respect_retry_after
        and retry_after is not None
        and not math.isnan(retry_after)
        and retry_after >= 0
    ):
        return float(min(retry_after, policy.max_delay))
    return float(min(policy.default_delay, policy.max_delay))


def clamp_to_deadline(delay: float, remaining: float | None) -> float:
    """``delay`` cut to the ``remaining`` seconds before a deadline (``None``: no deadline).

    A deadline already past gives 0: the next attempt starts at once and meets the deadline.
    """
    if remaining is None:
        return delay
    return max(0.0, min(delay, remaining))


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header value, or ``None`` if absent or unusable.

    Accepts delta-seconds (trimmed; non-negative integer, huge values accepted; a decimal
    fraction too, as some providers send one) or an HTTP-date, which gives
    ``max(0, date - now)``.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
        return None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    reference = now if now is not None else datetime.now(UTC)
    return max(0.0, (when - reference).total_seconds())
