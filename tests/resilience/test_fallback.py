"""The model circuit breaker, case by case against docs/behaviour.md §3.

Time is a plain float the tests advance by hand (and once a TestScheduler's virtual clock);
nothing sleeps. Expected values come from the rules written there, not from running the code.
"""

from __future__ import annotations

import asyncio
import math

import pytest
from reactivex.testing import TestScheduler

from rxturn.errors import (
    Cancelled,
    ConfigError,
    FallbackExhausted,
    RateLimitEscalation,
    ReadError,
    ServerError,
    StreamTimeoutError,
)
from rxturn.operators._scheduling import clock as scheduler_clock
from rxturn.resilience.fallback import (
    TRANSITIONS,
    BreakerState,
    FailureKind,
    FallbackEntry,
    FallbackManager,
    FallbackPolicy,
    Trigger,
    failure_kind,
    for_model,
)

T, RL = FailureKind.TRANSIENT, FailureKind.RATE_LIMIT
PRIMARY, FALLBACK, RECOVERING = BreakerState.PRIMARY, BreakerState.FALLBACK, BreakerState.RECOVERING


class FakeClock:
    """A manual clock: ``now`` seconds, advanced by the test."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def manager(
    clock: FakeClock, chain: tuple[str, ...] = ("backup",), **policy: float
) -> FallbackManager:
    return FallbackManager("main", chain, policy=FallbackPolicy(**policy), clock=clock)  # pyright: ignore[reportArgumentType]


def trip(fm: FallbackManager, kind: FailureKind = T) -> None:
    for _ in range(fm.policy.trip_threshold or 1):
        fm.record_failure(kind)
    assert fm.state is FALLBACK


def probe(fm: FallbackManager, clock: FakeClock) -> None:
    """Let the cooldown pass and begin a turn: the breaker moves to RECOVERING."""
    clock.advance(fm.policy.recovery_timeout)
    fm.begin_turn()
    assert fm.state is RECOVERING


# --------------------------------------------------------------------------- §9.5, one by one


def test_initial_state(clock: FakeClock) -> None:
    fm = manager(clock)
    assert fm.state is PRIMARY
    assert fm.consecutive_failures == 0
    assert fm.switched_at is None
    assert not fm.fallback_activated
    assert fm.routed_model() == fm.active_model() == "main"


def test_failure_threshold_third_failure_trips(clock: FakeClock) -> None:
    fm = manager(clock)
    assert [fm.record_failure(T) for _ in range(3)] == [False, False, True]


def test_model_failure_triggers_fallback(clock: FakeClock) -> None:
    fm = manager(clock)
    fm.record_failure(T)
    fm.record_failure(RL)  # both kinds count the same on the primary
    assert fm.state is PRIMARY and fm.consecutive_failures == 2
    assert fm.record_failure(T)
    assert fm.state is FALLBACK
    assert fm.fallback_activated
    assert fm.switched_at == clock.now
    assert fm.routed_model() == fm.active_model() == "backup"


def test_recovery_two_probe_successes_close(clock: FakeClock) -> None:
    fm = manager(clock)
    trip(fm)
    probe(fm, clock)
    assert fm.routed_model() == "main"  # the probe goes to the primary
    fm.record_success()
    assert fm.state is RECOVERING and fm.probe_successes == 1
    fm.record_success()
    assert fm.state is PRIMARY
    assert fm.switched_at is None and not fm.fallback_activated


def test_rate_limit_during_recovery_goes_back_to_fallback_with_new_cooldown(
    clock: FakeClock,
) -> None:
    fm = manager(clock)
    trip(fm)
    probe(fm, clock)
    fm.record_success()
    assert fm.record_failure(RL) is False  # no trip event
    assert fm.state is FALLBACK
    assert fm.switched_at == clock.now  # a new cooldown clock
    assert fm.probe_successes == 0
    clock.advance(59.9)
    fm.begin_turn()
    assert fm.state is FALLBACK  # cooldown measured from the re-open, not the first trip
    clock.advance(0.1)
    fm.begin_turn()
    assert fm.state is RECOVERING


@pytest.mark.parametrize(
    ("cooldown", "elapsed", "expected"),
    [
        (0.0, 0.0, True),
        (3600.0, 0.0, False),
        (3600.0, 3599.0, False),
        (3600.0, 3600.0, True),
        (math.inf, 1e12, False),
    ],
    ids=["0s-now", "1h-now", "1h-almost", "1h-exactly", "never"],
)
def test_should_try_resume_primary(
    clock: FakeClock, cooldown: float, elapsed: float, expected: bool
) -> None:
    fm = manager(clock, recovery_timeout=cooldown)
    assert not fm.should_try_resume_primary()  # not open
    trip(fm)
    clock.advance(elapsed)
    assert fm.should_try_resume_primary() is expected


def test_should_try_resume_primary_is_false_while_recovering(clock: FakeClock) -> None:
    fm = manager(clock, recovery_timeout=0.0)
    trip(fm)
    fm.begin_turn()
    assert fm.state is RECOVERING
    assert not fm.should_try_resume_primary()


def test_reset(clock: FakeClock) -> None:
    fm = manager(clock, chain=("a", "b"))
    trip(fm)
    fm.mark_fallback_failed("a")
    fm.set_fallback_available("b", False)
    fm.reset()
    assert fm.state is PRIMARY
    assert not fm.fallback_activated
    assert fm.consecutive_failures == 0 and fm.switched_at is None
    assert [e.strikes for e in fm.entries] == [0, 0]
    assert fm.failed_fallbacks() == ["b"]  # availability is a manual switch, kept


@pytest.mark.parametrize("kind", [T, RL], ids=["transient", "rate-limit"])
def test_failures_while_open_do_not_retrip(clock: FakeClock, kind: FailureKind) -> None:
    fm = manager(clock)
    trip(fm)
    switched = fm.switched_at
    clock.advance(5)
    assert [fm.record_failure(kind) for _ in range(5)] == [False] * 5
    assert fm.state is FALLBACK
    assert fm.consecutive_failures == 0
    assert fm.switched_at == switched  # the cooldown is not restarted by backup failures


def test_record_success_resets_on_primary(clock: FakeClock) -> None:
    fm = manager(clock)
    fm.record_failure(T)
    fm.record_failure(T)
    assert fm.consecutive_failures == 2
    fm.record_success()
    assert fm.consecutive_failures == 0
    fm.record_failure(T)
    fm.record_failure(T)
    assert fm.state is PRIMARY  # the streak was broken: two more do not trip


def test_success_while_open_is_a_no_op(clock: FakeClock) -> None:
    fm = manager(clock)
    trip(fm)
    fm.record_success()
    assert fm.state is FALLBACK and fm.probe_successes == 0


def test_for_model() -> None:
    fm = for_model("m")
    assert fm.primary == "m"
    assert fm.state is PRIMARY
    assert fm.policy == FallbackPolicy(
        trip_threshold=3, recovery_timeout=60.0, recovery_successes=2, max_fail_count=2
    )
    assert fm.fallback_models() == []


def test_default_manager_has_no_primary() -> None:
    fm = FallbackManager()
    assert fm.primary is None
    assert fm.routed_model() is None


async def test_shared_by_tasks_on_one_loop_trips_exactly_once(clock: FakeClock) -> None:
    # The Python twin of test_concurrent_access: several turns on one asyncio loop share it.
    fm = manager(clock)
    trips: list[bool] = []

    async def failing_turn() -> None:
        await asyncio.sleep(0)
        trips.append(fm.record_failure(T))

    await asyncio.gather(*(failing_turn() for _ in range(10)))
    assert trips.count(True) == 1
    assert trips[2] is True
    assert fm.state is FALLBACK


def test_trip_sets_route_and_switch_time_together(clock: FakeClock) -> None:
    fm = manager(clock)
    assert fm.active_model() == "main" and fm.switched_at is None
    trip(fm)
    assert fm.active_model() == "backup" and fm.switched_at == clock.now


def test_closing_clears_route_and_switch_time_together(clock: FakeClock) -> None:
    fm = manager(clock, recovery_successes=1)
    trip(fm)
    probe(fm, clock)
    fm.record_success()
    assert fm.state is PRIMARY
    assert fm.switched_at is None and fm.active_model() == "main"


def test_reset_clears_all_counters(clock: FakeClock) -> None:
    fm = manager(clock)
    fm.record_failure(T)
    assert fm.consecutive_failures == 1
    trip(fm)
    assert fm.switched_at is not None
    fm.reset()
    assert fm.consecutive_failures == 0 and fm.switched_at is None and fm.probe_successes == 0


# with_max_fail_count: padding and clamping


def failed_entry() -> FallbackEntry:
    entry = FallbackEntry(name="m").struck().struck()
    assert entry.failed and entry.strikes == 2
    return entry


@pytest.mark.parametrize(
    ("entry", "new_limit", "limit", "strikes", "failed"),
    [
        (FallbackEntry(name="m"), 5, 5, 0, False),
        (failed_entry(), 5, 5, 5, True),
        (failed_entry(), 3, 3, 3, True),
        (failed_entry(), 1, 1, 2, True),
        (FallbackEntry(name="m"), 0, 1, 0, False),
        (FallbackEntry(name="m", available=False), 4, 4, 4, True),
    ],
    ids=[
        "no-pad-when-healthy",
        "pads-failed",
        "pads-exactly",
        "no-pad-when-lowering",
        "clamps-to-one",
        "pads-unavailable",
    ],
)
def test_with_max_fail_count(
    entry: FallbackEntry, new_limit: int, limit: int, strikes: int, failed: bool
) -> None:
    changed = entry.with_max_fail_count(new_limit)
    assert (changed.max_fail_count, changed.strikes, changed.failed) == (limit, strikes, failed)


def test_raising_the_policy_limit_keeps_failed_entries_failed(clock: FakeClock) -> None:
    fm = manager(clock, chain=("a", "b"))
    fm.mark_fallback_failed("a")
    fm.mark_fallback_failed("a")
    fm.mark_fallback_failed("b")
    fm.set_policy(FallbackPolicy(max_fail_count=4))
    assert [(e.name, e.strikes, e.max_fail_count) for e in fm.entries] == [("a", 4, 4), ("b", 1, 4)]
    assert fm.failed_fallbacks() == ["a"]


@pytest.mark.parametrize("limit", [0, 1], ids=["zero-clamped", "one"])
def test_policy_strike_limit_is_at_least_one(clock: FakeClock, limit: int) -> None:
    fm = manager(clock, chain=("a", "b"), max_fail_count=limit)
    assert fm.mark_fallback_failed("a")
    assert fm.failed_fallbacks() == ["a"]
    assert fm.fallback_model() == "b"


def test_consecutive_failures_resets_on_trip(clock: FakeClock) -> None:
    fm = manager(clock)
    fm.record_failure(T)
    fm.record_failure(T)
    assert fm.consecutive_failures == 2
    fm.record_failure(T)
    assert fm.consecutive_failures == 0


def test_transient_failure_during_recovery_breaks_success_streak(clock: FakeClock) -> None:
    fm = manager(clock)
    trip(fm)
    probe(fm, clock)
    fm.record_success()
    assert fm.record_failure(T) is False
    assert fm.state is RECOVERING and fm.probe_successes == 0
    fm.record_success()
    assert fm.state is RECOVERING  # one success since the break is not enough
    fm.record_success()
    assert fm.state is PRIMARY


def test_active_model_does_not_return_primary_when_chain_is_exhausted(clock: FakeClock) -> None:
    fm = manager(clock, chain=("a", "b"))
    trip(fm)
    for name in ("a", "a", "b", "b"):
        fm.mark_fallback_failed(name)
    assert fm.active_model() is None
    assert fm.routed_model() is None
    assert fm.fallback_model() is None


# --------------------------------------------------------------------------- edge rules of §5


def test_trip_threshold_zero_trips_on_first_failure(clock: FakeClock) -> None:
    fm = manager(clock, trip_threshold=0)
    assert fm.record_failure(T) is True
    assert fm.state is FALLBACK


def test_trip_threshold_one_trips_on_first_failure(clock: FakeClock) -> None:
    fm = manager(clock, trip_threshold=1)
    assert fm.record_failure(RL) is True


def test_recovery_successes_zero_closes_on_first_success(clock: FakeClock) -> None:
    fm = manager(clock, recovery_successes=0)
    trip(fm)
    probe(fm, clock)
    fm.record_success()
    assert fm.state is PRIMARY


def test_closing_clears_every_strike(clock: FakeClock) -> None:
    fm = manager(clock, chain=("a", "b"))
    trip(fm)
    fm.mark_fallback_failed("a")
    fm.mark_fallback_failed("a")
    fm.mark_fallback_failed("b")
    probe(fm, clock)
    fm.record_success()
    fm.record_success()
    assert fm.state is PRIMARY
    assert [e.strikes for e in fm.entries] == [0, 0]
    assert fm.available_fallbacks() == ["a", "b"]


def test_empty_chain_trips_but_keeps_serving_the_primary(clock: FakeClock) -> None:
    fm = manager(clock, chain=())
    assert [fm.record_failure(T) for _ in range(3)] == [False, False, True]
    assert fm.state is FALLBACK
    assert fm.fallback_model() is None
    assert fm.active_model() == fm.routed_model() == "main"
    fm.begin_turn()  # never exhausted
    probe(fm, clock)  # and the cooldown still leads to a probe


def test_begin_turn_raises_when_every_backup_failed(clock: FakeClock) -> None:
    fm = manager(clock, chain=("a", "b"))
    trip(fm)
    for name in ("a", "a", "b"):
        fm.mark_fallback_failed(name)
    fm.begin_turn()  # "b" still has a strike left
    assert fm.routed_model() == "b"
    fm.mark_fallback_failed("b")
    with pytest.raises(FallbackExhausted) as info:
        fm.begin_turn()
    assert info.value.primary == "main"
    assert info.value.chain == ["a", "b"]
    assert "all fallback models failed" in str(info.value)


def test_exhausted_chain_probes_the_primary_once_the_cooldown_passed(clock: FakeClock) -> None:
    fm = manager(clock, chain=("a",))
    trip(fm)
    fm.mark_fallback_failed("a")
    fm.mark_fallback_failed("a")
    with pytest.raises(FallbackExhausted):
        fm.begin_turn()
    clock.advance(60)
    fm.begin_turn()
    assert fm.state is RECOVERING
    assert fm.routed_model() == "main"


def test_two_strikes_advance_the_chain(clock: FakeClock) -> None:
    fm = manager(clock, chain=("a", "b"))
    trip(fm)
    assert fm.routed_model() == "a"
    assert fm.mark_fallback_failed("a")
    assert fm.routed_model() == "a"  # one strike of two
    fm.mark_fallback_failed("a")
    assert fm.routed_model() == "b"
    assert fm.failed_fallbacks() == ["a"] and fm.available_fallbacks() == ["b"]


def test_routing_while_recovering_is_the_primary(clock: FakeClock) -> None:
    fm = manager(clock)
    trip(fm)
    probe(fm, clock)
    assert fm.active_model() == fm.routed_model() == "main"
    assert fm.fallback_model() == "backup"  # regardless of state


def test_the_whole_cycle_on_virtual_time() -> None:
    # The scenario on a TestScheduler clock: three failed runs trip the breaker, the
    # backup serves, and after the cooldown two successful probes route back to the primary.
    scheduler = TestScheduler()
    fm = FallbackManager("primary", ["backup"], clock=scheduler_clock(scheduler))
    served: list[str | None] = []

    def turn(ok: bool) -> None:
        fm.begin_turn()
        served.append(fm.routed_model())
        if ok:
            fm.record_success()
        else:
            fm.record_failure(T)

    for _ in range(3):
        turn(False)
    turn(True)
    scheduler.advance_by(59.0)
    turn(True)
    scheduler.advance_by(1.0)
    turn(True)
    turn(True)
    turn(True)
    assert served == ["primary"] * 3 + ["backup", "backup"] + ["primary"] * 3
    assert fm.state is PRIMARY


# --------------------------------------------------------------------------- the transition table


def test_transition_table_is_total_over_the_reachable_pairs() -> None:
    # Every failure/success input, in every state, has exactly one row (no silent no-ops).
    for state in BreakerState:
        for trigger in (Trigger.FAILURE, Trigger.RATE_LIMITED, Trigger.SUCCESS, Trigger.RESET):
            assert (state, trigger) in TRANSITIONS, (state, trigger)
    assert TRANSITIONS[(PRIMARY, Trigger.TRIP)][0] is FALLBACK
    assert TRANSITIONS[(FALLBACK, Trigger.COOLDOWN_ELAPSED)][0] is RECOVERING
    assert TRANSITIONS[(RECOVERING, Trigger.RATE_LIMITED)][0] is FALLBACK
    assert TRANSITIONS[(RECOVERING, Trigger.FAILURE)][0] is RECOVERING
    assert TRANSITIONS[(RECOVERING, Trigger.CLOSE)][0] is PRIMARY


# ------------------------------------------------------------------- outcome recording (§6.4)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (RateLimitEscalation(3, 12.0), RL),
        (ServerError("HTTP 500: boom", status_code=500), T),
        (ReadError("connection reset"), T),
        (StreamTimeoutError("idle", after=180, events=3, partial=True, elapsed=200), T),
        (RuntimeError("anything else"), T),
        (Cancelled(), None),
        (asyncio.CancelledError(), None),
    ],
    ids=["escalation", "server", "read", "timeout", "foreign", "cancelled", "asyncio-cancel"],
)
def test_failure_kind(error: BaseException, kind: FailureKind | None) -> None:
    assert failure_kind(error) is kind


def test_cancel_leaves_the_breaker_untouched(clock: FakeClock) -> None:
    fm = manager(clock, trip_threshold=1)
    assert fm.record_turn_failure(Cancelled()) is None
    assert fm.state is PRIMARY and fm.consecutive_failures == 0


def test_turn_failure_that_trips_reports_the_backup(clock: FakeClock) -> None:
    fm = manager(clock, chain=("a", "b"))
    outcomes = [fm.record_turn_failure(ReadError("x")) for _ in range(3)]
    assert [o.tripped for o in outcomes if o] == [False, False, True]
    last = outcomes[-1]
    assert last is not None
    assert (last.served, last.fallback_to, last.struck) == ("main", "a", None)


def test_escalation_trip_without_backup_has_no_fallback_target(clock: FakeClock) -> None:
    fm = manager(clock, chain=(), trip_threshold=0)
    outcome = fm.record_turn_failure(RateLimitEscalation(4))
    assert outcome is not None
    assert outcome.kind is RL and outcome.tripped and outcome.fallback_to is None


def test_failing_backup_takes_a_strike_and_routing_advances(clock: FakeClock) -> None:
    fm = manager(clock, chain=("a", "b"))
    trip(fm)
    first = fm.record_turn_failure(ServerError("HTTP 502", status_code=502))
    assert first is not None
    assert (first.served, first.tripped, first.struck) == ("a", False, "a")
    assert fm.routed_model() == "a"
    second = fm.record_turn_failure(ServerError("HTTP 502", status_code=502))
    assert second is not None and second.struck == "a"
    assert fm.routed_model() == "b"


def test_probe_failure_strikes_no_backup(clock: FakeClock) -> None:
    fm = manager(clock)
    trip(fm)
    probe(fm, clock)
    outcome = fm.record_turn_failure(RateLimitEscalation(4))
    assert outcome is not None
    assert (outcome.served, outcome.tripped, outcome.struck) == ("main", False, None)
    assert fm.state is FALLBACK
    assert fm.entries[0].strikes == 0


def test_served_model_can_be_given(clock: FakeClock) -> None:
    fm = FallbackManager(clock=clock)
    outcome = fm.record_turn_failure(ReadError("x"), served="client-model")
    assert outcome is not None and outcome.served == "client-model"


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("trip_threshold", -1, "trip_threshold must be >= 0"),
        ("recovery_successes", -2, "recovery_successes must be >= 0"),
        ("max_fail_count", -1, "max_fail_count must be >= 0"),
        ("recovery_timeout", -0.5, "recovery_timeout must be >= 0"),
        ("recovery_timeout", math.nan, "recovery_timeout must be >= 0"),
        ("recovery_timeout", "60", "recovery_timeout must be seconds"),
        ("trip_threshold", 2.5, "trip_threshold must be an int"),
        ("trip_threshold", True, "trip_threshold must be an int"),
    ],
    ids=[
        "trip-neg",
        "succ-neg",
        "strikes-neg",
        "timeout-neg",
        "timeout-nan",
        "timeout-str",
        "trip-float",
        "trip-bool",
    ],
)
def test_policy_rejects_bad_values(field: str, value: object, fragment: str) -> None:
    # Like every policy, it is plain data until used: the manager that takes it validates it.
    policy = FallbackPolicy(**{field: value})  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError, match=fragment):
        policy.validate()
    with pytest.raises(ConfigError, match=fragment):
        FallbackManager("main", ["backup"], policy=policy)
    with pytest.raises(ConfigError, match=fragment):
        FallbackManager("main", ["backup"]).set_policy(policy)


@pytest.mark.parametrize("policy", [None, 3, {"trip_threshold": 3}], ids=["none", "int", "dict"])
def test_set_policy_refuses_what_is_no_policy(policy: object) -> None:
    # before: AttributeError ('NoneType' object has no attribute 'validate')
    with pytest.raises(ConfigError, match=r"^set_policy\(policy=\.\.\.\) must be a FallbackPolicy"):
        FallbackManager("main", ["backup"]).set_policy(policy)  # pyright: ignore[reportArgumentType]


def test_policy_accepts_edge_values() -> None:
    FallbackPolicy(trip_threshold=0, recovery_timeout=0, recovery_successes=0, max_fail_count=0)
    FallbackPolicy(recovery_timeout=math.inf).validate()


def test_primary_is_trimmed_and_blank_is_rejected(clock: FakeClock) -> None:
    fm = manager(clock)
    fm.set_primary("  other  ")
    assert fm.primary == "other" and fm.routed_model() == "other"
    for bad in ("", "   ", "\t\n"):
        with pytest.raises(ConfigError, match="primary model must not be empty"):
            fm.set_primary(bad)
    assert fm.primary == "other"
    with pytest.raises(ConfigError, match="primary model"):
        FallbackManager(" ")


def test_set_primary_keeps_the_state(clock: FakeClock) -> None:
    fm = manager(clock)
    trip(fm)
    fm.set_primary("new")
    assert fm.state is FALLBACK
    probe(fm, clock)
    assert fm.routed_model() == "new"


@pytest.mark.parametrize(
    "call",
    [
        lambda fm: fm.add_fallback_model(" "),
        lambda fm: fm.set_fallback_model(""),
        lambda fm: fm.insert_fallback_model(0, ""),
        lambda fm: fm.insert_fallback_model(-1, "x"),
        lambda fm: fm.set_fallback_models(["ok", " "]),
        lambda fm: fm.set_fallback_models("abc"),
        lambda fm: FallbackManager("m", "abc"),
        lambda fm: FallbackManager("m", policy=object()),  # pyright: ignore[reportArgumentType]
    ],
    ids=[
        "add-blank",
        "set-blank",
        "insert-blank",
        "insert-negative",
        "models-blank",
        "models-string",
        "ctor-string-chain",
        "ctor-bad-policy",
    ],
)
def test_chain_rejects_bad_input(clock: FakeClock, call: object) -> None:
    fm = manager(clock)
    with pytest.raises(ConfigError):
        call(fm)  # pyright: ignore[reportCallIssue]
    assert fm.fallback_models() == ["backup"]


def test_chain_operations(clock: FakeClock) -> None:
    fm = manager(clock, chain=())
    fm.add_fallback_model("b")
    fm.add_fallback_model("d")
    fm.insert_fallback_model(1, "c")
    fm.insert_fallback_model(0, " a ")
    fm.insert_fallback_model(99, "e")  # past the end appends
    assert fm.fallback_models() == ["a", "b", "c", "d", "e"]
    assert fm.remove_fallback_model("c")
    assert not fm.remove_fallback_model("zzz")
    assert fm.fallback_models() == ["a", "b", "d", "e"]
    fm.set_fallback_model("x")
    assert fm.fallback_models() == ["x"]
    fm.set_fallback_models(["p", "q"])
    assert fm.remove_fallback_model("p")
    assert fm.fallback_models() == ["q"]
    assert fm.entries[0] == FallbackEntry(name="q", max_fail_count=2)


def test_strike_bookkeeping(clock: FakeClock) -> None:
    fm = manager(clock, chain=("a", "b"))
    assert not fm.mark_fallback_failed("nope")
    assert not fm.clear_fallback_failed("nope")
    assert not fm.set_fallback_available("nope", False)
    fm.mark_fallback_failed("a")
    fm.mark_fallback_failed("a")
    fm.mark_fallback_failed("b")
    assert fm.failed_fallbacks() == ["a"]
    assert fm.clear_fallback_failed("a")
    assert fm.failed_fallbacks() == []
    fm.mark_fallback_failed("b")
    assert fm.fallback_model() == "a"
    assert fm.set_fallback_available("a", False)
    assert fm.fallback_model() is None
    fm.clear_all_fallback_failed()
    assert fm.fallback_model() == "b"  # a is still out of rotation
    fm.set_fallback_available("a", True)
    assert fm.fallback_model() == "a"
    entry = fm.fallback_entry("a")
    assert entry is not None and entry.available and entry.strikes == 0


def test_new_entries_take_the_policy_limit(clock: FakeClock) -> None:
    fm = manager(clock, chain=("a",), max_fail_count=3)
    fm.add_fallback_model("b")
    assert [e.max_fail_count for e in fm.entries] == [3, 3]


def test_repr_names_state_and_chain(clock: FakeClock) -> None:
    fm = manager(clock)
    assert repr(fm) == (
        "FallbackManager(state=PRIMARY, primary='main', chain=['backup'], failures=0)"
    )


def test_record_failure_rejects_a_non_kind(clock: FakeClock) -> None:
    with pytest.raises(ConfigError, match="FailureKind"):
        manager(clock).record_failure("transient")  # pyright: ignore[reportArgumentType]
