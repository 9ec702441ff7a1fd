"""The resilience knobs as plain data: frozen, keyword-only msgspec Structs.

Four policies configure the resilience ladder (docs/behaviour.md §2.1) and a fifth the model
breaker (§3); their defaults live in :mod:`rxturn._constants`. Times are seconds; ``None``
disables a timeout.

- :class:`TimeoutPolicy`: first-event, per-event (idle) and total deadlines, the
  consecutive-timeout rule, and whether the non-streaming rescue may run.
- :class:`RetryPolicy`: the transport ladder (exponential backoff with jitter).
- :class:`RateLimitPolicy`: the rate-limit ladder for 429 / 503 / 529, with its own budget.
- :class:`LimiterPolicy`: the proactive token bucket (:class:`~.limiter.RateLimiter`).
- :class:`FallbackPolicy`: the model circuit breaker's thresholds
  (:class:`~.fallback.FallbackManager`).

Policies are values, not builders: derive a variant with ``msgspec.structs.replace``. Building one
never fails (it is just data); :meth:`validate` checks it against the rules of docs/behaviour.md
§2.1 and raises :class:`~rxturn.errors.ConfigError` naming the first bad field. Each policy is
validated by what uses it, when that is built: ``StreamHandler`` its timeout, retry and
rate-limit policies, ``RateLimiter`` its ``LimiterPolicy``, ``FallbackManager`` its
``FallbackPolicy`` (and ``set_policy`` a new one), so a bad value is a ``ConfigError`` before any
request is sent. :meth:`sanitized` is the forgiving path (§2.1, "Sanitizing"): a substitution
that turns any policy into a valid one.
"""

from __future__ import annotations

from typing import Self

import msgspec

from .. import _constants as C
from .._arguments import shown
from .._validate import finite, is_int, is_number, positive, seconds_problem
from ..errors import ConfigError

__all__ = [
    "FallbackPolicy",
    "LimiterPolicy",
    "Policy",
    "RateLimitPolicy",
    "RetryPolicy",
    "TimeoutPolicy",
]


class Policy(msgspec.Struct, frozen=True, kw_only=True):
    """What every policy is: frozen keyword-only data, checked by :meth:`validate` when its user
    is built, made valid by :meth:`sanitized`."""

    def validate(self) -> Self:
        """``self`` if every field is valid (so that ``policy.validate()`` can be used inline).

        Raises:
            ConfigError: naming the first bad field and its value.
        """
        raise NotImplementedError

    def sanitized(self) -> Self:
        """``self`` if valid, else the defaults: an invalid configuration is replaced by the
        default one, never patched field by field (:class:`TimeoutPolicy` is the exception,
        docs/behaviour.md §2.1, "Sanitizing")."""
        try:
            return self.validate()
        except ConfigError:
            return type(self)()


class TimeoutPolicy(Policy, frozen=True, kw_only=True):
    """Deadlines of a streaming turn (docs/behaviour.md §2.1).

    Attributes:
        first_event: seconds to wait for the first event of *each* attempt.
        per_event: seconds of silence tolerated between two events once events flow.
        total: seconds for the whole turn from its start, all attempts and backoffs included.
        max_consecutive_timeouts: event timeouts in a row that fail an attempt
            (``min(2, this)`` while the attempt has received nothing yet).
        rescue: after the streaming ladder gives up (transport budget spent, total timeout, or
            the rate-limit hard cap), try one non-streaming request.
    """

    first_event: float | None = C.FIRST_EVENT_TIMEOUT
    per_event: float | None = C.PER_EVENT_TIMEOUT
    total: float | None = C.TOTAL_TIMEOUT
    max_consecutive_timeouts: int = C.MAX_CONSECUTIVE_TIMEOUTS
    rescue: bool = C.RESCUE_ENABLED

    def validate(self) -> TimeoutPolicy:
        """Check the rules of docs/behaviour.md §2.1; the first failure wins.

        Rejected: a zero, negative, NaN or infinite timeout (``None`` disables one instead),
        ``total`` shorter than ``first_event``, ``max_consecutive_timeouts`` below 1.

        Returns:
            ``self``, so that ``policy.validate()`` can be used inline.

        Raises:
            ConfigError: naming the field and the value.
        """
        for name in ("first_event", "per_event", "total"):
            value = getattr(self, name)
            if value is None:
                continue
            problem = seconds_problem(value)
            if problem is not None:
                if "finite" in problem or "at most" in problem:
                    problem += " (use None to disable it)"
                raise ConfigError(f"TimeoutPolicy.{name} {problem}")
        if (
            self.total is not None
            and self.first_event is not None
            and (self.total < self.first_event)
        ):
            raise ConfigError(
                f"TimeoutPolicy.total ({self.total:g}s) must be >= first_event "
                f"({self.first_event:g}s): the first event could never arrive in time"
            )
        if not positive(self.max_consecutive_timeouts, integer=True):
            raise ConfigError(
                "TimeoutPolicy.max_consecutive_timeouts must be an integer >= 1, "
                f"got {shown(self.max_consecutive_timeouts)}"
            )
        # Struct fields are not type-checked when built in Python
        if not isinstance(self.rescue, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"TimeoutPolicy.rescue must be a bool, got {shown(self.rescue)}")
        return self

    def sanitized(self) -> TimeoutPolicy:
        """Substitute field by field (docs/behaviour.md §2.1, "Sanitizing"); always valid.

        An unusable timeout (zero, negative, NaN, infinite, not a number) takes that field's
        default; ``None`` stays disabled; then ``total`` is raised to ``first_event`` if shorter;
        a ``max_consecutive_timeouts`` below 1 becomes 10. Valid fields survive unchanged.
        """
        defaults = TimeoutPolicy()

        def fix(name: str) -> float | None:
            value = getattr(self, name)
            if value is None:
                return None
            if seconds_problem(value) is not None:
                return getattr(defaults, name)
            return float(value)

        first_event, per_event, total = fix("first_event"), fix("per_event"), fix("total")
        if total is not None and first_event is not None and total < first_event:
            total = first_event
        consecutive = self.max_consecutive_timeouts
        if not positive(consecutive, integer=True):
            consecutive = defaults.max_consecutive_timeouts
        rescue = self.rescue if isinstance(self.rescue, bool) else defaults.rescue  # pyright: ignore[reportUnnecessaryIsInstance]
        return TimeoutPolicy(
            first_event=first_event,
            per_event=per_event,
            total=total,
            max_consecutive_timeouts=consecutive,
            rescue=rescue,
        )


class RetryPolicy(Policy, frozen=True, kw_only=True):
    """The transport ladder (docs/behaviour.md §2.1, §2.4).

    Retry ``k`` (0-based) sleeps ``min(base_delay·2^k, max_delay)·(1 + f·jitter)`` with ``f``
    uniform in ``[-1, 1)``: 0.1 s, 0.2 s, 0.4 s (±10 %) with the defaults.

    Attributes:
        max_retries: retries after the first attempt (0 = a single attempt).
        base_delay: seconds before the first retry.
        max_delay: cap of the exponential schedule, before jitter.
        jitter: relative spread in ``[0, 1]``.
    """

    max_retries: int = C.RETRY_MAX_RETRIES
    base_delay: float = C.RETRY_BASE_DELAY
    max_delay: float = C.RETRY_MAX_DELAY
    jitter: float = C.RETRY_JITTER

    def validate(self) -> RetryPolicy:
        """Check ``base_delay > 0``, ``max_delay > 0``, ``max_delay >= base_delay``, ``jitter``
        finite in ``[0, 1]`` and ``max_retries >= 0``; the first failure wins.

        Raises:
            ConfigError: naming the field and the value.
        """
        for name in ("base_delay", "max_delay"):
            problem = seconds_problem(getattr(self, name))
            if problem is not None:
                raise ConfigError(f"RetryPolicy.{name} {problem}")
        if self.max_delay < self.base_delay:
            raise ConfigError(
                f"RetryPolicy.max_delay ({self.max_delay:g}s) must be >= base_delay "
                f"({self.base_delay:g}s)"
            )
        jitter = self.jitter
        if not finite(jitter) or not 0.0 <= jitter <= 1.0:
            raise ConfigError(
                f"RetryPolicy.jitter must be a finite number within [0, 1], got {shown(jitter)}"
            )
        if not positive(self.max_retries, integer=True, allow_zero=True):
            raise ConfigError(
                f"RetryPolicy.max_retries must be an integer >= 0, got {shown(self.max_retries)}"
            )
        return self


class RateLimitPolicy(Policy, frozen=True, kw_only=True):
    """The rate-limit ladder for 429 / 503 / 529 (docs/behaviour.md §2.1, §2.4).

    Its budget is independent of the transport ladder's. Hit ``n`` (1-based) retries after
    ``min(retry_after, max_delay)`` when the provider gave a hint and it is respected, else
    ``min(default_delay, max_delay)``, both clamped to the time left before the total deadline.
    Hits ``1..escalate_after`` retry; the next hit raises
    :class:`~rxturn.errors.RateLimitEscalation` (never rescued); a hit past ``max_retries`` is a
    hard stop (rescue if enabled). With the defaults (3 < 5) the hard stop is unreachable.

    Attributes:
        respect_retry_after: honour the provider's ``Retry-After`` hint.
        default_delay: seconds to wait when there is no (respected) hint.
        max_delay: cap of any single rate-limit wait.
        escalate_after: rate-limit retries before escalating.
        max_retries: hard cap on rate-limit retries.
    """

    respect_retry_after: bool = C.RATE_LIMIT_RESPECT_RETRY_AFTER
    default_delay: float = C.RATE_LIMIT_DEFAULT_DELAY
    max_delay: float = C.RATE_LIMIT_MAX_DELAY
    escalate_after: int = C.RATE_LIMIT_ESCALATE_AFTER
    max_retries: int = C.RATE_LIMIT_MAX_RETRIES

    def validate(self) -> RateLimitPolicy:
        """Check ``default_delay > 0``, ``max_delay >= default_delay``, ``max_retries >= 1``,
        ``0 <= escalate_after <= max_retries``; the first failure wins.

        Raises:
            ConfigError: naming the field and the value.
        """
        problem = seconds_problem(self.default_delay)
        if problem is not None:
            raise ConfigError(f"RateLimitPolicy.default_delay {problem}")
        problem = seconds_problem(self.max_delay)
        if problem is not None:
            raise ConfigError(f"RateLimitPolicy.max_delay {problem}")
        if self.max_delay < self.default_delay:
            raise ConfigError(
                f"RateLimitPolicy.max_delay ({self.max_delay:g}s) must be >= default_delay "
                f"({self.default_delay:g}s)"
            )
        if not positive(self.max_retries, integer=True):
            raise ConfigError(
                "RateLimitPolicy.max_retries must be an integer >= 1, "
                f"got {shown(self.max_retries)}"
            )
        if not positive(self.escalate_after, integer=True, allow_zero=True):
            raise ConfigError(
                "RateLimitPolicy.escalate_after must be an integer >= 0, "
                f"got {shown(self.escalate_after)}"
            )
        if self.escalate_after > self.max_retries:
            raise ConfigError(
                f"RateLimitPolicy.escalate_after ({shown(self.escalate_after)}) must be <= "
                f"max_retries ({self.max_retries})"
            )
        # Struct fields are not type-checked when built in Python
        if not isinstance(self.respect_retry_after, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                "RateLimitPolicy.respect_retry_after must be a bool, "
                f"got {shown(self.respect_retry_after)}"
            )
        return self


class LimiterPolicy(Policy, frozen=True, kw_only=True):
    """The proactive token bucket (docs/behaviour.md §2.7).

    Attributes:
        requests_per_minute: bucket capacity and refill per minute, per base URL; 0 disables.
        max_wait: seconds an attempt may wait for a token before it goes ahead without one.
    """

    requests_per_minute: int = C.LIMITER_REQUESTS_PER_MINUTE
    max_wait: float = C.LIMITER_MAX_WAIT

    def validate(self) -> LimiterPolicy:
        """Check ``requests_per_minute`` is an integer >= 0 and ``max_wait`` finite >= 0.

        Raises:
            ConfigError: naming the field and the value.
        """
        rpm = self.requests_per_minute
        if not positive(rpm, integer=True, allow_zero=True):
            raise ConfigError(
                f"LimiterPolicy.requests_per_minute must be an integer >= 0, got {shown(rpm)}"
            )
        problem = seconds_problem(self.max_wait, allow_zero=True)
        if problem is not None:
            raise ConfigError(f"LimiterPolicy.max_wait {problem}")
        return self


class FallbackPolicy(Policy, frozen=True, kw_only=True):
    """The model breaker's numbers (docs/behaviour.md §3). Validated by the
    :class:`~.fallback.FallbackManager` that takes it (and by ``set_policy``).

    Attributes:
        trip_threshold: consecutive PRIMARY failures that trip the breaker (0 trips on the first).
        recovery_timeout: seconds in FALLBACK before the next turn probes the primary
            (``math.inf``: never probe on its own).
        recovery_successes: probe successes in a row that close the breaker (0: the first does).
        max_fail_count: strikes each backup may take before routing skips it; values below 1
            count as 1.
    """

    trip_threshold: int = C.BREAKER_TRIP_THRESHOLD
    recovery_timeout: float = C.BREAKER_RECOVERY_TIMEOUT
    recovery_successes: int = C.BREAKER_RECOVERY_SUCCESSES
    max_fail_count: int = C.BREAKER_MAX_FAIL_COUNT

    def validate(self) -> FallbackPolicy:
        """Check the counts are integers >= 0 and ``recovery_timeout`` is seconds >= 0
        (infinity allowed); the first failure wins.

        Returns:
            ``self``, so that ``policy.validate()`` can be used inline.

        Raises:
            ConfigError: naming the field and the value.
        """
        for name in ("trip_threshold", "recovery_successes", "max_fail_count"):
            value: object = getattr(self, name)
            if not is_int(value):
                raise ConfigError(f"FallbackPolicy.{name} must be an int, got {shown(value)}")
            if value < 0:
                raise ConfigError(f"FallbackPolicy.{name} must be >= 0, got {shown(value)}")
        timeout: object = self.recovery_timeout
        if not is_number(timeout):
            raise ConfigError(
                f"FallbackPolicy.recovery_timeout must be seconds, got {shown(timeout)}"
            )
        if not positive(timeout, allow_zero=True):
            raise ConfigError(
                f"FallbackPolicy.recovery_timeout must be >= 0 seconds, got {shown(timeout)}"
            )
        return self

    @property
    def strikes(self) -> int:
        """``max_fail_count`` clamped to at least 1: what each chain entry actually gets."""
        return max(1, self.max_fail_count)
