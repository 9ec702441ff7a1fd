"""Edges of docs/behaviour.md §2 found by probing the public API from the outside: each case
failed (a traceback, a wrong value) before the fix it comes with."""

from __future__ import annotations

import pytest
from reactivex.testing import TestScheduler

from rxturn import (
    ConfigError,
    HedgePolicy,
    HedgeTarget,
    LimiterPolicy,
    RateLimiter,
    RateLimitError,
    RateLimitPolicy,
    RetryPolicy,
    StreamHandler,
    TimeoutPolicy,
    TurnEngine,
)
from rxturn.testing.virtual import ScriptedClient, reply, run_virtual, timeline

# -- waits too long for any scheduler ------------------------------------------------------------

# Every one of these values becomes a timer. 10**12 s is past the year 9999, where the
# virtual-time scheduler's datetime ends (it raised OverflowError from inside the ladder); a
# value of 31 years or more is refused when the handler is built, naming the field.
TOO_LONG = [
    (lambda: StreamHandler(timeouts=TimeoutPolicy(first_event=1e12, total=None)), "first_event"),
    (lambda: StreamHandler(timeouts=TimeoutPolicy(per_event=1e300)), "per_event"),
    (lambda: StreamHandler(timeouts=TimeoutPolicy(total=10**12)), "total"),
    (lambda: StreamHandler(retry=RetryPolicy(max_delay=1e300)), "max_delay"),
    (
        lambda: StreamHandler(rate_limit=RateLimitPolicy(default_delay=2e9, max_delay=2e9)),
        "default_delay",
    ),
    (lambda: StreamHandler(rate_limit=RateLimitPolicy(max_delay=1e15)), "max_delay"),
    (lambda: RateLimiter(LimiterPolicy(requests_per_minute=1, max_wait=1e12)), "max_wait"),
    (lambda: HedgePolicy(targets=(HedgeTarget(model="backup"),), delay=1e12), "delay"),
]


@pytest.mark.parametrize(("build", "field"), TOO_LONG)
def test_a_wait_longer_than_31_years_is_refused_naming_its_field(build: object, field: str) -> None:
    with pytest.raises(ConfigError, match=rf"{field}:? must be at most 1e\+09 seconds") as caught:
        build()  # type: ignore[operator]
    assert "\n" not in str(caught.value)


def test_a_disabled_timeout_is_suggested_instead_of_a_huge_one() -> None:
    with pytest.raises(ConfigError, match=r"got 1e\+300 \(use None to disable it\)"):
        TimeoutPolicy(per_event=1e300).validate()


def test_sanitizing_gives_a_huge_timeout_its_default() -> None:
    fixed = TimeoutPolicy(first_event=1e12, per_event=10.0, total=1e300).sanitized()
    assert (fixed.first_event, fixed.per_event, fixed.total) == (120.0, 10.0, 300.0)


async def test_the_longest_accepted_wait_runs_on_virtual_time(clean: TestScheduler) -> None:
    # A 429 without a hint waits default_delay, a second short of 10**9 s (the largest value
    # accepted, here the cap), then the second attempt serves. The first attempt's error comes
    # at 0.01 s.
    client = ScriptedClient(
        clean, [timeline([], end=RateLimitError("HTTP 429: slow down")), timeline(reply("ok"))]
    )
    handler = StreamHandler(
        timeouts=TimeoutPolicy(total=None),
        rate_limit=RateLimitPolicy(default_delay=1e9 - 1, max_delay=1e9),
    )
    engine = TurnEngine(client, handler=handler, scheduler=clean)

    result = await run_virtual(clean, engine.run("hi"), limit=1e9)

    assert result.text == "ok"
    assert client.spans[1][0] == pytest.approx(0.01 + 1e9 - 1)
