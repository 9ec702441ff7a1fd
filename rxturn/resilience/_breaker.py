"""The model breaker's vocabulary: its states, what a failure is, the triggers and effects, the
transition table, and the immutable chain entries (:mod:`rxturn.resilience.fallback` tells the
story and holds the manager that runs it)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

import msgspec

from .._arguments import shown
from ..errors import ConfigError
from .verdicts import FailureKind, failure_kind

__all__ = [
    "TRANSITIONS",
    "BreakerState",
    "Effect",
    "FailureKind",
    "FailureOutcome",
    "FallbackEntry",
    "Trigger",
    "clean_model_name",
    "failure_kind",
]


class BreakerState(enum.Enum):
    """Where the breaker routes turns: the primary, a backup, or a probe of the primary."""

    PRIMARY = "primary"
    FALLBACK = "fallback"
    RECOVERING = "recovering"


class Trigger(enum.Enum):
    """What happened, after the threshold guards have looked at the counters."""

    FAILURE = "failure"  # a transient failure that trips nothing
    RATE_LIMITED = "rate_limited"  # a rate-limit failure that trips nothing
    TRIP = "trip"  # a PRIMARY failure that brings the streak to trip_threshold
    SUCCESS = "success"  # a success that closes nothing
    CLOSE = "close"  # a RECOVERING success that completes the probe streak
    COOLDOWN_ELAPSED = "cooldown_elapsed"  # begin_turn found the cooldown over
    RESET = "reset"  # FallbackManager.reset(): close from anywhere


class Effect(enum.Enum):
    """What a transition does to the counters (entering a state is an effect too)."""

    NOTHING = "nothing"
    COUNT_FAILURE = "count_failure"  # consecutive_failures += 1
    CLEAR_FAILURES = "clear_failures"  # consecutive_failures = 0
    OPEN = "open"  # enter FALLBACK: start the cooldown clock, zero both counters
    PROBE = "probe"  # enter RECOVERING: the probe streak starts at 0
    COUNT_PROBE_SUCCESS = "count_probe_success"  # probe_successes += 1
    RESTART_PROBE = "restart_probe"  # probe_successes = 0
    CLOSE = "close"  # enter PRIMARY: forget everything, strikes included


_P, _F, _R = BreakerState.PRIMARY, BreakerState.FALLBACK, BreakerState.RECOVERING

#: The whole state machine. Keys absent from this table cannot happen (the guards never produce
#: them); reaching one raises ``AssertionError``.
TRANSITIONS: Final[Mapping[tuple[BreakerState, Trigger], tuple[BreakerState, Effect]]] = {
    (_P, Trigger.FAILURE): (_P, Effect.COUNT_FAILURE),
    (_P, Trigger.RATE_LIMITED): (_P, Effect.COUNT_FAILURE),
    (_P, Trigger.TRIP): (_F, Effect.OPEN),
    (_P, Trigger.SUCCESS): (_P, Effect.CLEAR_FAILURES),
    # A backup failing is the chain's business (strikes), not the breaker's.
    (_F, Trigger.FAILURE): (_F, Effect.NOTHING),
    (_F, Trigger.RATE_LIMITED): (_F, Effect.NOTHING),
    (_F, Trigger.SUCCESS): (_F, Effect.NOTHING),
    (_F, Trigger.COOLDOWN_ELAPSED): (_R, Effect.PROBE),
    (_R, Trigger.FAILURE): (_R, Effect.RESTART_PROBE),
    (_R, Trigger.RATE_LIMITED): (_F, Effect.OPEN),  # no trip event: record_failure says False
    (_R, Trigger.SUCCESS): (_R, Effect.COUNT_PROBE_SUCCESS),
    (_R, Trigger.CLOSE): (_P, Effect.CLOSE),
    (_P, Trigger.RESET): (_P, Effect.CLOSE),
    (_F, Trigger.RESET): (_P, Effect.CLOSE),
    (_R, Trigger.RESET): (_P, Effect.CLOSE),
}


class FallbackEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One backup model in the chain, with its strikes. Immutable: changes return a new entry.

    An entry is *failed* when it was taken out of rotation (``available`` false) or has taken
    ``max_fail_count`` strikes.
    """

    name: str
    available: bool = True
    strikes: int = 0
    max_fail_count: int = 2

    @property
    def failed(self) -> bool:
        return not self.available or self.strikes >= self.max_fail_count

    def struck(self) -> FallbackEntry:
        """This entry with one more strike."""
        return msgspec.structs.replace(self, strikes=self.strikes + 1)

    def cleared(self) -> FallbackEntry:
        """This entry with no strikes (availability is a separate, manual switch)."""
        return msgspec.structs.replace(self, strikes=0) if self.strikes else self

    def with_max_fail_count(self, max_fail_count: int) -> FallbackEntry:
        """Change the strike limit (clamped to >= 1).

        An entry that is failed stays failed: raising the limit pads its strikes up to it.
        Lowering it never removes strikes.
        """
        limit = max(1, max_fail_count)
        strikes = max(self.strikes, limit) if self.failed else self.strikes
        return msgspec.structs.replace(self, strikes=strikes, max_fail_count=limit)


class FailureOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What :meth:`FallbackManager.record_turn_failure` did, for the engine to report.

    Attributes:
        kind: how the failure counted.
        served: the model that failed (the routed model before the failure was recorded).
        tripped: this failure tripped the breaker.
        fallback_to: the backup the trip routes to (``on_fallback(served → fallback_to)``); set
            only when ``tripped`` and a healthy backup exists.
        struck: the backup that took a strike (it was active and failed), if any.
    """

    kind: FailureKind
    served: str | None
    tripped: bool = False
    fallback_to: str | None = None
    struck: str | None = None


def clean_model_name(name: object, what: str) -> str:
    if not isinstance(name, str):
        raise ConfigError(f"{what} must be a model name (str), got {shown(name)}")
    cleaned = name.strip()
    if not cleaned:
        raise ConfigError(f"{what} must not be empty or blank, got {shown(name)}")
    return cleaned
