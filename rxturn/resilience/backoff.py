"""How long to wait before the next attempt: pure functions, no clock, no global randomness.

The two ladders of the stream handler (docs/behaviour.md §2.4) sleep differently:

- the **transport** ladder backs off exponentially, ``min(base·2^k, max)``, spread by a jitter
  factor drawn from an injected :class:`random.Random` (so tests can pin it and concurrent turns
  do not retry in lock-step);
- the **rate-limit** ladder follows the provider's ``Retry-After`` hint when it is respected,
  else a default delay, both capped.

Either delay is then clamped to the time left before the turn's total deadline
(:func:`clamp_to_deadline`). :func:`parse_retry_after` reads the provider's hint.
"""

from __future__ import annotations

import email.utils
import math
import random
import re
import time
from collections.abc import Mapping
from datetime import UTC
from typing import cast

from .._headers import header
from .._validate import positive
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
# delta-seconds as providers send them: digits, optionally a decimal fraction; no sign, no exponent
_DELTA_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")


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
    # (positive: NaN, a str or a bool never pass, and an int past the largest float, which
    # math.isnan refuses with OverflowError, is a number like any other)
    if policy.respect_retry_after and positive(retry_after, allow_zero=True):
        return float(min(cast("float", retry_after), policy.max_delay))
    return float(min(policy.default_delay, policy.max_delay))


def clamp_to_deadline(delay: float, remaining: float | None) -> float:
    """``delay`` cut to the ``remaining`` seconds before a deadline (``None``: no deadline).

    A deadline already past gives 0: the next attempt starts at once and meets the deadline.
    """
    if remaining is None:
        return delay
    return max(0.0, min(delay, remaining))


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the provider asked us to wait, from ``retry-after-ms`` or ``Retry-After``.

    The one reader of the hint (docs/behaviour.md §2.9):

    - ``retry-after-ms`` (milliseconds, sent by OpenAI and Anthropic) wins when it parses;
    - ``Retry-After`` as delta-seconds: surrounding spaces ignored, a decimal fraction accepted,
      huge values accepted (the rate-limit ladder caps every wait at its ``max_delay``);
    - ``Retry-After`` as an HTTP-date: ``max(0, date - now)``; a date without a zone is UTC.

    Anything else gives ``None``: an absent or empty header, a negative value, a sign, an
    exponent, ``nan``, ``inf``, a unit, digits too many to be a finite float, an unparseable or
    impossible date. Header names are matched case-insensitively.

    Args:
        headers: response headers (a plain dict or a case-insensitive multidict).
        now: the current time as a Unix timestamp (default ``time.time()``), for dates.

    Examples:
        >>> parse_retry_after({"Retry-After": " 5 "})
        5.0
        >>> parse_retry_after({"retry-after-ms": "250"})
        0.25
        >>> parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0)
        10.0
        >>> parse_retry_after({"Retry-After": "soon"}) is None
        True
    """
    millis = header(headers, "retry-after-ms")
    if millis is not None:
        value = _delta_seconds(millis)
        if value is not None:
            return value / 1000.0
    raw = header(headers, "retry-after")
    if raw is None:
        return None
    value = _delta_seconds(raw)
    if value is not None:
        return value
    try:
        date = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if date.tzinfo is None:  # "-0000" or no zone: HTTP dates are UTC
        date = date.replace(tzinfo=UTC)
    try:
        seconds = date.timestamp()
    except (OverflowError, OSError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, seconds - current)


def _delta_seconds(text: str) -> float | None:
    """Non-negative decimal seconds (``"5"``, ``" 1.5 "``), else ``None``."""
    text = text.strip()
    if not _DELTA_SECONDS.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None
