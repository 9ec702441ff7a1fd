"""The proactive token bucket (docs/behaviour.md §2.7), with the clock passed in."""

from __future__ import annotations

import math

import pytest

from rxturn.errors import ConfigError
from rxturn.resilience.limiter import RateLimiter, TokenBucket
from rxturn.resilience.policies import LimiterPolicy


def test_burst_then_throttle() -> None:
    bucket = TokenBucket(5, now=0.0)
    assert [bucket.take(0.0) for _ in range(5)] == [0.0] * 5
    # capacity 5/min refills one token every 12 s
    assert bucket.take(0.0) == pytest.approx(12.0)


def test_refill_after_idle_restores_a_full_bucket_and_no_more() -> None:
    bucket = TokenBucket(3, now=0.0)
    for _ in range(3):
        bucket.take(0.0)
    assert bucket.available(60.0) == pytest.approx(3.0)
    assert bucket.available(600.0) == pytest.approx(3.0)


def test_subsecond_refill_precision() -> None:
    bucket = TokenBucket(10, now=0.0)
    for _ in range(10):
        bucket.take(0.0)
    assert bucket.available(6.0) == pytest.approx(1.0)
    other = TokenBucket(10, now=0.0)
    for _ in range(10):
        other.take(0.0)
    assert other.take(5.9) == pytest.approx(0.1)  # 0.983 tokens: 0.1 s short of one


def test_available_does_not_consume() -> None:
    bucket = TokenBucket(2, now=0.0)
    assert bucket.available(0.0) == 2.0
    assert bucket.available(0.0) == 2.0
    assert bucket.take(0.0) == 0.0
    assert bucket.available(0.0) == 1.0


def test_disabled_limiter_short_circuits_without_a_bucket() -> None:
    limiter = RateLimiter(LimiterPolicy(requests_per_minute=0))
    assert not limiter.enabled
    assert all(limiter.acquire("a", 0.0) == 0.0 for _ in range(100))
    assert limiter.bucket_count() == 0
    assert limiter.available("a", 0.0) == math.inf


def test_buckets_are_per_provider() -> None:
    limiter = RateLimiter.per_minute(1)
    assert limiter.acquire("https://a", 0.0) == 0.0
    assert limiter.acquire("https://a", 0.0) == pytest.approx(60.0)
    assert limiter.acquire("https://b", 0.0) == 0.0
    assert limiter.bucket_count() == 2


def test_zero_capacity_bucket_does_not_divide_by_zero() -> None:
    bucket = TokenBucket(0, now=0.0)
    assert bucket.take(0.0) == math.inf
    assert bucket.take(1e9) == math.inf


def test_limiter_validates_its_policy() -> None:
    with pytest.raises(ConfigError, match="requests_per_minute"):
        RateLimiter(LimiterPolicy(requests_per_minute=-1))
    with pytest.raises(ValueError, match="capacity"):
        TokenBucket(-1, now=0.0)


def test_repr_shows_no_internals_beyond_counts() -> None:
    limiter = RateLimiter.per_minute(60, max_wait=5.0)
    limiter.acquire("k", 0.0)
    assert repr(limiter) == "RateLimiter(requests_per_minute=60, max_wait=5, buckets=1)"
