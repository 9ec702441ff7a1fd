"""Policies, backoff arithmetic and the ladder decision (docs/behaviour.md §2.1,
§2.4). Expected numbers come from the defaults and formulas written there."""

from __future__ import annotations

import inspect
import math
import random

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxturn.engine.handler import StreamHandler
from rxturn.errors import (
    AuthenticationError,
    ConfigError,
    OverloadedError,
    RateLimitError,
    RateLimitEscalation,
    ServerError,
    StreamTimeoutError,
    TruncatedStreamError,
    is_rate_limit,
    status_error,
)
from rxturn.operators import Decision, decide
from rxturn.resilience.backoff import (
    base_delay,
    clamp_to_deadline,
    jittered_delay,
    parse_retry_after,
    rate_limit_delay,
)
from rxturn.resilience.policies import (
    FallbackPolicy,
    LimiterPolicy,
    RateLimitPolicy,
    RetryPolicy,
    TimeoutPolicy,
)

# -- defaults ---------------------------------------------------------------------------------


def test_timeout_policy_default_values() -> None:
    policy = TimeoutPolicy()
    assert policy.first_event == 120.0
    assert policy.per_event == 180.0
    assert policy.total == 300.0
    assert policy.max_consecutive_timeouts == 10
    assert policy.rescue is True
    assert policy.validate() is policy


def test_retry_policy_default_values() -> None:
    policy = RetryPolicy()
    assert (policy.max_retries, policy.base_delay, policy.max_delay, policy.jitter) == (
        3,
        0.1,
        10.0,
        0.1,
    )


def test_rate_limit_policy_default_values() -> None:
    policy = RateLimitPolicy()
    assert policy.respect_retry_after is True
    assert policy.default_delay == 5.0
    assert policy.max_delay == 60.0
    assert policy.escalate_after == 3
    assert policy.max_retries == 5


def test_limiter_policy_default_values() -> None:
    assert LimiterPolicy() == LimiterPolicy(requests_per_minute=0, max_wait=30.0)


def test_policies_are_frozen_keyword_only_values() -> None:
    policy = RetryPolicy()
    with pytest.raises(AttributeError):
        policy.max_retries = 9  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(TypeError):
        RetryPolicy(3)  # pyright: ignore[reportCallIssue]
    assert msgspec.structs.replace(policy, max_retries=9).max_retries == 9


def test_passthrough_sets_no_resilience_config() -> None:
    handler = StreamHandler.passthrough()
    assert handler.timeouts.first_event is None
    assert handler.timeouts.per_event is None
    assert handler.timeouts.total is None
    assert handler.timeouts.rescue is False
    assert handler.retry.max_retries == 0
    assert handler.rate_limit.max_retries == 0
    assert handler.rate_limit.escalate_after == 0
    assert handler.limiter is None


def test_passthrough_returns_a_shared_instance() -> None:
    assert StreamHandler.passthrough() is StreamHandler.passthrough()
    assert repr(StreamHandler.passthrough()) == "StreamHandler.passthrough()"


def test_default_handler_has_the_reference_defaults() -> None:
    handler = StreamHandler.default()
    assert handler.timeouts == TimeoutPolicy()
    assert handler.retry == RetryPolicy()
    assert handler.rate_limit == RateLimitPolicy()
    assert handler.limiter is None


def test_default_handler_is_shared_per_class() -> None:
    """A handler is immutable: every engine may share the default one (one object, not one per
    conversation); a subclass's default is an instance of that subclass."""

    class Custom(StreamHandler):
        __slots__ = ()

    assert StreamHandler.default() is StreamHandler.default()
    custom = Custom.default()
    assert type(custom) is Custom
    assert custom is Custom.default()
    assert type(StreamHandler.default()) is StreamHandler


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        (TimeoutPolicy(first_event=0), ("first_event", "> 0")),
        (TimeoutPolicy(per_event=0.0), ("per_event", "> 0")),
        (TimeoutPolicy(total=0), ("total", "> 0")),
        (TimeoutPolicy(per_event=-1.0), ("per_event", "> 0")),
        (TimeoutPolicy(total=math.inf), ("total", "finite")),
        (TimeoutPolicy(first_event=math.nan), ("first_event", "nan")),
        (TimeoutPolicy(first_event=400.0), ("total", "first_event")),
        (TimeoutPolicy(max_consecutive_timeouts=0), ("max_consecutive_timeouts", ">= 1")),
        (TimeoutPolicy(first_event="2"), ("first_event", "number")),  # pyright: ignore[reportArgumentType]
        (TimeoutPolicy(total=10**400), ("total", "finite")),
    ],
    ids=[
        "zero-first",
        "zero-per-event",
        "zero-total",
        "negative",
        "infinite-total",
        "nan",
        "total-below-first",
        "zero-consecutive",
        "not-a-number",
        "huge-int-total",
    ],
)
def test_timeout_policy_validate_rejects(policy: TimeoutPolicy, words: tuple[str, str]) -> None:
    with pytest.raises(ConfigError) as info:
        policy.validate()
    for word in words:
        assert word in str(info.value)
    assert str(info.value).startswith("TimeoutPolicy.")


def test_timeout_policy_none_disables_each_deadline() -> None:
    TimeoutPolicy(first_event=None, per_event=None, total=None).validate()
    TimeoutPolicy(first_event=None, total=1.0).validate()  # no first_event: no ordering rule


def test_timeout_policy_first_failure_wins() -> None:
    with pytest.raises(ConfigError, match="first_event"):
        TimeoutPolicy(first_event=0, total=0, max_consecutive_timeouts=0).validate()


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        (RetryPolicy(base_delay=0), "base_delay"),
        (RetryPolicy(max_delay=0), "max_delay"),
        (RetryPolicy(base_delay=2.0, max_delay=1.0), "max_delay"),
        (RetryPolicy(jitter=math.nan), "jitter"),
        (RetryPolicy(jitter=math.inf), "jitter"),
        (RetryPolicy(jitter=1.5), "jitter"),
        (RetryPolicy(jitter=-0.1), "jitter"),
        (RetryPolicy(max_retries=-1), "max_retries"),
        (RetryPolicy(max_delay=10**400), "max_delay"),
        (RetryPolicy(jitter=10**400), "jitter"),
    ],
    ids=[
        "zero-base",
        "zero-max",
        "max-below-base",
        "nan",
        "inf",
        "above-1",
        "negative",
        "retries",
        "huge-int-max",
        "huge-int-jitter",
    ],
)
def test_retry_policy_validate_rejects(policy: RetryPolicy, field: str) -> None:
    with pytest.raises(ConfigError, match=f"RetryPolicy.{field}"):
        policy.validate()


@pytest.mark.parametrize("jitter", [0.0, 1.0])
def test_retry_policy_accepts_jitter_bounds(jitter: float) -> None:
    RetryPolicy(jitter=jitter).validate()


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        (RateLimitPolicy(default_delay=0), "default_delay"),
        (RateLimitPolicy(default_delay=10.0, max_delay=5.0), "max_delay"),
        (RateLimitPolicy(max_retries=0, escalate_after=0), "max_retries"),
        (RateLimitPolicy(escalate_after=6, max_retries=5), "escalate_after"),
        (RateLimitPolicy(escalate_after=-1), "escalate_after"),
    ],
    ids=["zero-default", "max-below-default", "zero-retries", "escalate-above-max", "negative"],
)
def test_rate_limit_policy_validate_rejects(policy: RateLimitPolicy, field: str) -> None:
    with pytest.raises(ConfigError, match=f"RateLimitPolicy.{field}"):
        policy.validate()


@pytest.mark.parametrize(
    "policy",
    [
        LimiterPolicy(requests_per_minute=-1),
        LimiterPolicy(max_wait=-1.0),
        LimiterPolicy(max_wait=math.inf),
    ],
    ids=["negative-rpm", "negative-wait", "infinite-wait"],
)
def test_limiter_policy_validate_rejects(policy: LimiterPolicy) -> None:
    with pytest.raises(ConfigError, match="LimiterPolicy"):
        policy.validate()


def test_handler_rejects_invalid_policies_at_construction() -> None:
    with pytest.raises(ConfigError, match=r"RetryPolicy\.jitter"):
        StreamHandler(retry=RetryPolicy(jitter=2.0))
    with pytest.raises(ConfigError, match=r"RateLimitPolicy\.max_retries"):
        StreamHandler(rate_limit=RateLimitPolicy(max_retries=0, escalate_after=0))
    with pytest.raises(ConfigError, match=r"TimeoutPolicy\.total"):
        StreamHandler(timeouts=TimeoutPolicy(total=math.inf))


# -- sanitizing (reference with_*_config) -----------------------------------------------------


def test_timeout_sanitized_substitutes_only_invalid_fields() -> None:
    fixed = TimeoutPolicy(first_event=30.0, per_event=0.0, total=math.inf).sanitized()
    assert fixed == TimeoutPolicy(first_event=30.0, per_event=180.0, total=300.0)
    raised = TimeoutPolicy(first_event=400.0).sanitized()
    assert raised.first_event == 400.0 and raised.total == 400.0
    assert TimeoutPolicy(max_consecutive_timeouts=0).sanitized().max_consecutive_timeouts == 10
    assert TimeoutPolicy(total=None).sanitized().total is None


_anything = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-5, 10**6),
    st.text(max_size=3),
)


@given(
    first=_anything,
    per=_anything,
    total=_anything,
    consecutive=st.one_of(st.integers(-3, 50), st.floats(), st.none()),
)
def test_sanitized_timeouts_always_validate(
    first: object, per: object, total: object, consecutive: object
) -> None:
    policy = TimeoutPolicy(
        first_event=first,  # pyright: ignore[reportArgumentType]
        per_event=per,  # pyright: ignore[reportArgumentType]
        total=total,  # pyright: ignore[reportArgumentType]
        max_consecutive_timeouts=consecutive,  # pyright: ignore[reportArgumentType]
    )
    policy.sanitized().validate()


def test_retry_and_rate_limit_sanitized_fall_back_to_defaults() -> None:
    assert RetryPolicy(jitter=3.0).sanitized() == RetryPolicy()
    good = RetryPolicy(max_retries=7)
    assert good.sanitized() is good
    assert RateLimitPolicy(default_delay=-1).sanitized() == RateLimitPolicy()
    assert LimiterPolicy(requests_per_minute=-3).sanitized() == LimiterPolicy()


# -- backoff ------------------------------------------------------------------------------------


def test_base_delay_is_exponential() -> None:
    policy = RetryPolicy()
    assert [base_delay(policy, k) for k in range(4)] == pytest.approx([0.1, 0.2, 0.4, 0.8])


def test_base_delay_is_capped_and_saturates() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=10.0)
    assert base_delay(policy, 3) == 8.0
    assert base_delay(policy, 4) == 10.0
    assert base_delay(policy, 10_000) == 10.0


def test_jittered_delay_with_zero_jitter_is_the_raw_delay() -> None:
    policy = RetryPolicy(jitter=0.0)
    rng = random.Random(1)
    assert [jittered_delay(policy, k, rng) for k in range(3)] == [0.1, 0.2, 0.4]


@given(seed=st.integers(0, 2**32), retry=st.integers(0, 12))
def test_jittered_delay_stays_within_the_band(seed: int, retry: int) -> None:
    policy = RetryPolicy(jitter=0.2)
    delay = jittered_delay(policy, retry, random.Random(seed))
    raw = base_delay(policy, retry)
    assert raw * 0.8 <= delay <= raw * 1.2


def test_jittered_delays_differ_between_random_sources() -> None:
    policy = RetryPolicy()
    delays = {jittered_delay(policy, 0, random.Random(seed)) for seed in range(20)}
    assert len(delays) > 1


@given(seed=st.integers(0, 2**32))
def test_max_jitter_stays_non_negative_and_below_double(seed: int) -> None:
    policy = RetryPolicy(jitter=1.0)
    delay = jittered_delay(policy, 2, random.Random(seed))
    assert 0.0 <= delay <= 2 * base_delay(policy, 2)


def test_rate_limit_delay_honours_the_hint_and_caps_it() -> None:
    policy = RateLimitPolicy()
    assert rate_limit_delay(policy, 7.0) == 7.0
    assert rate_limit_delay(policy, None) == 5.0
    assert rate_limit_delay(policy, 10_000.0) == 60.0
    ignoring = RateLimitPolicy(respect_retry_after=False)
    assert rate_limit_delay(ignoring, 7.0) == 5.0


@pytest.mark.parametrize(
    ("hint", "expected"),
    [(10**400, 60.0), (float("inf"), 60.0), (float("nan"), 5.0), (-1.0, 5.0), ("30", 5.0)],
    ids=["int-past-floats", "inf", "nan", "negative", "str"],
)
def test_a_retry_after_hint_of_any_value_is_a_delay(hint: object, expected: float) -> None:
    # before: 10**400 (an error a custom client raised with it) made math.isnan raise
    # OverflowError inside the retry ladder, and "30" a TypeError
    assert rate_limit_delay(RateLimitPolicy(), hint) == expected  # pyright: ignore[reportArgumentType]


def test_rate_limit_delay_caps_the_default_too() -> None:
    assert rate_limit_delay(RateLimitPolicy(default_delay=5.0, max_delay=5.0), None) == 5.0


@pytest.mark.parametrize(
    ("delay", "remaining", "expected"),
    [(3.0, None, 3.0), (3.0, 10.0, 3.0), (3.0, 1.5, 1.5), (3.0, -2.0, 0.0)],
    ids=["no-deadline", "fits", "clamped", "past"],
)
def test_clamp_to_deadline(delay: float, remaining: float | None, expected: float) -> None:
    assert clamp_to_deadline(delay, remaining) == expected


def test_parse_retry_after() -> None:
    from datetime import UTC, datetime

    now = datetime(2024, 1, 1, 0, 0, 0, tzinfo=UTC).timestamp()

    def parse(value: str | None, now: float | None = None) -> float | None:
        return parse_retry_after({} if value is None else {"Retry-After": value}, now=now)

    assert parse(" 120 ") == 120.0
    assert parse("99999999999") == 99999999999.0
    assert parse("Mon, 01 Jan 2024 00:00:30 GMT", now) == 30.0
    assert parse("Sun, 31 Dec 2023 23:00:00 GMT", now) == 0.0
    for garbage in (None, "", "soon", "-5", "nan", "inf"):
        assert parse(garbage) is None


# -- the ladder decision ------------------------------------------------------------------------


def _decide(
    error: Exception,
    *,
    transport: int = 0,
    hits: int = 0,
    retry: RetryPolicy | None = None,
    rate_limit: RateLimitPolicy | None = None,
    remaining: float | None = None,
) -> Decision:
    return decide(
        error,
        transport_retries=transport,
        rate_limit_hits=hits,
        retry=retry or RetryPolicy(jitter=0.0),
        rate_limit=rate_limit or RateLimitPolicy(),
        rng=random.Random(0),
        remaining=remaining,
    )


def test_rate_limit_retry_clamps_a_huge_hint_below_the_ceiling() -> None:
    decision = _decide(status_error(429, "slow down", retry_after=600.0))
    assert decision.action == "retry" and decision.ladder == "rate_limit"
    assert decision.delay == 60.0


def test_rate_limit_retry_is_clamped_to_the_deadline() -> None:
    decision = _decide(status_error(429, "x", retry_after=30.0), remaining=0.08)
    assert decision.delay == pytest.approx(0.08)


def test_rate_limit_escalates_after_the_ceiling() -> None:
    policy = RateLimitPolicy(escalate_after=2, max_retries=5)
    error = status_error(529, "overloaded", retry_after=0.001)
    assert _decide(error, hits=1, rate_limit=policy).action == "retry"
    decision = _decide(error, hits=2, rate_limit=policy)
    assert decision.action == "escalate"
    assert isinstance(decision.error, RateLimitEscalation)
    assert decision.error.attempts == 3
    assert decision.error.retry_after == 0.001


def test_rate_limit_hard_stops_after_max_retries() -> None:
    policy = RateLimitPolicy(escalate_after=2, max_retries=2)
    error = status_error(429, "x")
    assert _decide(error, hits=1, rate_limit=policy).action == "retry"
    decision = _decide(error, hits=2, rate_limit=policy)
    assert decision.action == "fail" and decision.error is error


def test_default_rate_limit_ladder_retries_three_times_then_escalates() -> None:
    error = status_error(429, "x")
    actions = [_decide(error, hits=hits).action for hits in range(4)]
    assert actions == ["retry", "retry", "retry", "escalate"]


def test_transport_ladder_retries_then_gives_up() -> None:
    error = ServerError("HTTP 500: boom")
    delays = [_decide(error, transport=k).delay for k in range(3)]
    assert delays == pytest.approx([0.1, 0.2, 0.4])
    assert _decide(error, transport=3).action == "fail"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_permanent_statuses_fail_at_once(status: int) -> None:
    decision = _decide(status_error(status, "nope"))
    assert decision.action == "fail" and decision.ladder == "none"


def test_total_timeout_is_never_retried() -> None:
    error = StreamTimeoutError("total", after=1.0, events=0, partial=False, elapsed=1.0)
    assert _decide(error).action == "fail"
    idle = StreamTimeoutError("idle", after=1.0, events=3, partial=False, elapsed=1.0)
    assert _decide(idle).action == "retry"


def test_truncation_is_transient() -> None:
    assert _decide(TruncatedStreamError(4)).action == "retry"


# -- rate-limit detection, as the ladder sees it -------------------------------------------------


@pytest.mark.parametrize(
    ("status", "cls", "rate_limited"),
    [
        (429, RateLimitError, True),
        (503, OverloadedError, True),
        (529, OverloadedError, True),
        (500, ServerError, False),
        (401, AuthenticationError, False),
    ],
)
def test_status_classification(status: int, cls: type, rate_limited: bool) -> None:
    error = status_error(status, "body", retry_after=2.0)
    assert type(error) is cls
    assert is_rate_limit(error) is rate_limited
    ladder = _decide(error).ladder
    assert ladder == ("rate_limit" if rate_limited else ("transport" if status == 500 else "none"))


def test_in_stream_rate_limit_without_hint_uses_the_default_delay() -> None:
    error = RateLimitError("rate_limit_error: slow down", status_code=None)
    decision = _decide(error)
    assert decision.ladder == "rate_limit" and decision.delay == 5.0


# -- error displays -----------------------------------------------------------------------------


def test_error_displays() -> None:
    assert "init failed" not in str(TruncatedStreamError(3)).lower()
    assert "without a terminal event" in str(TruncatedStreamError(3))
    total = StreamTimeoutError("total", after=900.0, events=2, partial=True, elapsed=900.0)
    assert "900.0s" in str(total) and "partial" in str(total)
    escalation = RateLimitEscalation(4, 5.0)
    assert "4 retries" in str(escalation) and "5s" in str(escalation)


# -- the policy family ---------------------------------------------------------------------------

POLICIES = (TimeoutPolicy, RetryPolicy, RateLimitPolicy, LimiterPolicy, FallbackPolicy)


@pytest.mark.parametrize("cls", POLICIES, ids=lambda cls: cls.__name__)
def test_every_policy_is_a_frozen_keyword_only_struct_with_validate_and_sanitized(
    cls: type[msgspec.Struct],
) -> None:
    assert cls.__struct_config__.frozen
    parameters = inspect.signature(cls).parameters.values()
    assert parameters and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
    assert cls.__module__ == "rxturn.resilience.policies"
    policy = cls()
    assert policy.validate() is policy  # pyright: ignore[reportAttributeAccessIssue]
    assert policy.sanitized() == policy  # pyright: ignore[reportAttributeAccessIssue]


def test_fallback_policy_defaults_come_from_the_constants() -> None:
    from rxturn import _constants as C

    assert FallbackPolicy() == FallbackPolicy(
        trip_threshold=C.BREAKER_TRIP_THRESHOLD,
        recovery_timeout=C.BREAKER_RECOVERY_TIMEOUT,
        recovery_successes=C.BREAKER_RECOVERY_SUCCESSES,
        max_fail_count=C.BREAKER_MAX_FAIL_COUNT,
    )
    assert (
        C.BREAKER_TRIP_THRESHOLD,
        C.BREAKER_RECOVERY_TIMEOUT,
        C.BREAKER_RECOVERY_SUCCESSES,
        C.BREAKER_MAX_FAIL_COUNT,
    ) == (3, 60.0, 2, 2)


def test_fallback_policy_keeps_its_old_import_paths() -> None:
    import rxturn
    from rxturn.resilience import fallback

    assert rxturn.FallbackPolicy is fallback.FallbackPolicy is FallbackPolicy
