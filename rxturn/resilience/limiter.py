"""Proactive rate limiting: a token bucket per provider base URL (docs/behaviour.md §2.7).

Theory of operation. A :class:`TokenBucket` holds up to ``capacity`` tokens (the requests per
minute) and starts full, so a burst of ``capacity`` requests goes out at once. Tokens refill
continuously at ``capacity / 60`` per second; the refill is computed lazily from the time passed
in by the caller, so the bucket never reads a clock and never sleeps. :meth:`TokenBucket.take`
either consumes one token (returns ``0.0``) or says how many seconds until one is available.
A zero-capacity bucket can never grant a token: it answers ``math.inf`` rather than dividing
by zero.

A :class:`RateLimiter` keeps one bucket per key (the client's ``base_url``), created on first use,
so two providers never throttle each other; ``requests_per_minute == 0`` disables it and no bucket
is ever allocated. The waiting itself (bounded by ``max_wait``, the total deadline and the cancel
signal) is the job of :func:`rxturn.operators.rate_limit_gate`, which passes the scheduler's
clock in. A limiter is meant to be shared by every turn that talks to the same providers; a lock
keeps it consistent if turns run on several threads.
"""

from __future__ import annotations

import math
import threading

from .._arguments import check_instance, shown
from .policies import LimiterPolicy

__all__ = ["RateLimiter", "TokenBucket", "gate_sleep"]


class TokenBucket:
    """A continuously refilling token bucket, driven by the times it is given.

    Args:
        capacity: maximum tokens, also the refill per minute.
        now: the time (seconds, any epoch) at which the bucket starts full.
    """

    __slots__ = ("_last", "_tokens", "capacity", "refill_per_second")

    def __init__(self, capacity: float, now: float) -> None:
        if capacity < 0 or math.isnan(capacity):
            raise ValueError(f"bucket capacity must be >= 0, got {shown(capacity, 100)}")
        self.capacity = float(capacity)
        self.refill_per_second = self.capacity / 60.0
        self._tokens = self.capacity
        self._last = now

    def __repr__(self) -> str:
        return f"TokenBucket(capacity={self.capacity:g}, tokens={self._tokens:.3f})"

    def _refill(self, now: float) -> None:
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(self.capacity, self._tokens + elapsed * self.refill_per_second)
            self._last = now

    def available(self, now: float) -> float:
        """Tokens available at ``now`` (after refill), without consuming any."""
        self._refill(now)
        return self._tokens

    def take(self, now: float) -> float:
        """Consume one token at ``now``: ``0.0`` if granted, else the seconds until one is.

        Returns ``math.inf`` for a bucket that can never hold a whole token.
        """
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        if self.refill_per_second <= 0 or self.capacity < 1.0:
            return math.inf
        return (1.0 - self._tokens) / self.refill_per_second


class RateLimiter:
    """One :class:`TokenBucket` per key, created lazily; shared across turns.

    Args:
        policy: requests per minute (0 disables) and the gate's ``max_wait``.

    Raises:
        ConfigError: if the policy is invalid.

    Examples:
        >>> limiter = RateLimiter(LimiterPolicy(requests_per_minute=60))
        >>> limiter.acquire("https://api.example", now=0.0)
        0.0
    """

    __slots__ = ("_buckets", "_lock", "policy")

    def __init__(self, policy: LimiterPolicy | None = None) -> None:
        check_instance(
            policy, LimiterPolicy, "RateLimiter(policy=...)", "a LimiterPolicy", optional=True
        )
        self.policy = (policy if policy is not None else LimiterPolicy()).validate()
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    @classmethod
    def per_minute(
        cls, requests: int, *, max_wait: float = LimiterPolicy().max_wait
    ) -> RateLimiter:
        """Shorthand for ``RateLimiter(LimiterPolicy(requests_per_minute=…, max_wait=…))``."""
        return cls(LimiterPolicy(requests_per_minute=requests, max_wait=max_wait))

    def __repr__(self) -> str:
        return (
            f"RateLimiter(requests_per_minute={self.policy.requests_per_minute}, "
            f"max_wait={self.policy.max_wait:g}, buckets={len(self._buckets)})"
        )

    @property
    def enabled(self) -> bool:
        return self.policy.requests_per_minute > 0

    @property
    def max_wait(self) -> float:
        return float(self.policy.max_wait)

    def bucket_count(self) -> int:
        """How many buckets exist (one per key seen so far; none while disabled)."""
        return len(self._buckets)

    def _bucket(self, key: str, now: float) -> TokenBucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.policy.requests_per_minute, now)
        return bucket

    def acquire(self, key: str, now: float) -> float:
        """Take a token for ``key`` at ``now``: ``0.0`` if granted, else seconds to wait.

        A disabled limiter always grants and allocates nothing.
        """
        if self.policy.requests_per_minute <= 0:
            return 0.0
        with self._lock:
            return self._bucket(key, now).take(now)

    def available(self, key: str, now: float) -> float:
        """Tokens available for ``key`` at ``now``, without consuming (``inf`` if disabled)."""
        if self.policy.requests_per_minute <= 0:
            return math.inf
        with self._lock:
            return self._bucket(key, now).available(now)


def gate_sleep(wait: float, waited: float, cap: float, remaining: float | None) -> float:
    """The limiter gate's next sleep before an attempt (``<= 0``: go ahead now).

    The gate asks the limiter for a token; refused with a wait ``wait``, it sleeps
    ``min(wait, cap - waited, remaining)`` and asks again: ``waited`` is what this attempt
    already slept, ``cap`` the gate's ``max_wait``, ``remaining`` the time left before the
    turn's total deadline (``None``: none). Once ``max_wait`` is spent, or the deadline has
    passed, the attempt goes ahead **without** a token (the reactive rate-limit ladder takes
    over if the provider objects).
    """
    if wait <= 0 or waited >= cap:
        return 0.0
    sleep = min(wait, cap - waited)
    if remaining is not None:
        sleep = min(sleep, remaining)
    return sleep
