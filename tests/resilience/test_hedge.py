"""The hedge policy and race machine, without a scheduler: every instant is a number."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from rxturn.errors import (
    AuthenticationError,
    BadRequestError,
    Cancelled,
    ConfigError,
    ContextOverflowError,
    OverloadedError,
    PermissionDeniedError,
    RateLimitError,
    ReadError,
    ServerError,
)
from rxturn.events import Delta, MessageDelta, MessageStart, MessageStop, PartStart, PartStop, Ping
from rxturn.resilience.hedge import (
    Cut,
    Decide,
    Fail,
    FirstContentEstimator,
    HedgePolicy,
    HedgeRace,
    HedgeTarget,
    Skipped,
    Start,
    Win,
    error_kind,
    is_content,
)

PRIMARY_CLIENT = object()
OTHER_CLIENT = object()


def policy(**kwargs: object) -> HedgePolicy:
    targets = kwargs.pop("targets", (HedgeTarget("backup"),))
    kwargs.setdefault("delay", 2.0)
    return HedgePolicy(targets, **kwargs)  # pyright: ignore[reportArgumentType]


def race(p: HedgePolicy, **kwargs: object) -> HedgeRace:
    return HedgeRace(p, "primary", PRIMARY_CLIENT, **kwargs)  # pyright: ignore[reportArgumentType]


def kinds(actions: Sequence[object]) -> list[str]:
    return [repr(a) for a in actions]


# -------------------------------------------------------------------------- classification


@pytest.mark.parametrize(
    ("event", "content"),
    [
        (MessageStart(id="m", model="x"), False),
        (Ping(), False),
        (PartStart(0), False),
        (PartStart(0, "thinking"), False),
        (Delta(0, ""), True),
        (Delta(0, "hi"), True),
        (Delta(0, "hm", "thinking"), True),
        (Delta(0, "no", "refusal"), True),
        (Delta(1, '{"a"', "tool_json"), True),
        (PartStart(1, "tool_call", id="t1", name="f"), True),
        (MessageDelta(None, None), False),
        (PartStop(0), False),
        (MessageStop(), True),
    ],
)
def test_content_is_what_shows_an_answer(event: object, content: bool) -> None:
    assert is_content(event) is content  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (Cancelled("x"), "fatal"),
        (asyncio.CancelledError(), "fatal"),
        (ConfigError("x"), "fatal"),
        (BadRequestError("HTTP 400", status_code=400), "fatal"),
        (AuthenticationError("HTTP 401", status_code=401), "fatal"),
        (PermissionDeniedError("HTTP 403", status_code=403), "fatal"),
        # a bigger model may take what overflowed this one: the race goes on
        (ContextOverflowError("prompt is too long", status_code=400), "other"),
        (RateLimitError("HTTP 429", status_code=429), "rate_limit"),
        (OverloadedError("HTTP 529", status_code=529), "rate_limit"),
        (ServerError("HTTP 500", status_code=500), "other"),
        (ReadError("dropped"), "other"),
    ],
)
def test_error_kinds(error: BaseException, kind: str) -> None:
    assert error_kind(error) == kind


# -------------------------------------------------------------------------- the policy


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"targets": ()}, "targets"),
        ({"targets": ("backup",)}, "targets"),
        ({"delay": -1.0}, "delay"),
        ({"delay": float("nan")}, "delay"),
        ({"min_delay": 3.0, "max_delay": 1.0}, "min_delay"),
        ({"quantile": 1.0}, "quantile"),
        ({"max_hedges": 0}, "max_hedges"),
        ({"max_hedges": True}, "max_hedges"),
        ({"budget_ratio": 1.5}, "budget_ratio"),
        ({"budget_min": -1}, "budget_min"),
        ({"min_samples": 0}, "min_samples"),
        ({"window": 0}, "window"),
        ({"window": True}, "window"),
        # past what a deque can hold: accepted, it was an OverflowError in the race's decision
        ({"window": 10**30}, "window"),
        ({"window": 1_000_001}, "window"),
        ({"targets": b"backup"}, "targets must be a non-empty sequence of HedgeTarget"),
    ],
)
def test_policy_rejects_bad_arguments_by_name(kwargs: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        policy(**kwargs)


@pytest.mark.parametrize("window", [0, 1.5, True, 10**30, 1_000_001])
def test_estimator_refuses_a_window_it_cannot_keep(window: object) -> None:
    with pytest.raises(ConfigError, match="window"):
        FirstContentEstimator(window)  # pyright: ignore[reportArgumentType]


def test_the_largest_window_is_kept() -> None:
    estimator = FirstContentEstimator(1_000_000)
    estimator.observe("m", 1.0)
    assert HedgePolicy((HedgeTarget("b"),), window=1_000_000).estimator.window == 1_000_000
    assert estimator.quantile("m", 0.5) == 1.0


def test_target_needs_a_model_or_a_client() -> None:
    with pytest.raises(ConfigError, match="model"):
        HedgeTarget()
    with pytest.raises(ConfigError, match="model"):
        HedgeTarget("")
    with pytest.raises(ConfigError, match="same_quota"):
        HedgeTarget("m", same_quota="yes")  # pyright: ignore[reportArgumentType]


def test_budget_is_a_ratio_of_primaries_over_a_sliding_minute_plus_a_minimum() -> None:
    p = policy(budget_ratio=0.1, budget_min=1)
    for i in range(20):
        p.note_primary(float(i))
    assert p.allowance(19.0) == 3  # 10 % of 20, plus 1
    assert [p.try_spend(20.0) for _ in range(4)] == [True, True, True, False]
    # a minute later the first ten primaries and nothing else have expired
    assert p.allowance(69.5) == 1 + 1  # primaries 10..19 remain
    assert p.available(69.5) == 0  # the three hedges at 20 s still count
    assert p.available(80.0) == 1  # every hedge and primary has left the window: the minimum


def test_adaptive_delay_is_max_delay_until_enough_samples_then_clamped_quantile() -> None:
    p = policy(delay=None, min_delay=0.5, max_delay=8.0, quantile=0.5, min_samples=3)
    assert p.delay_for("primary") == 8.0
    for seconds in (1.0, 2.0):
        p.estimator.observe("primary", seconds)
    assert p.delay_for("primary") == 8.0  # two samples are not enough
    p.estimator.observe("primary", 3.0)
    assert p.delay_for("primary") == 2.0
    for _ in range(10):
        p.estimator.observe("fast", 0.01)
    assert p.delay_for("fast") == 0.5  # the floor


def test_censored_samples_keep_the_estimate_from_drifting_down() -> None:
    est = FirstContentEstimator()
    for seconds in (1.0, 1.0, 1.0, 1.0):
        est.observe("m", seconds)
    # six racers cut at 3 s without content: at least 3 s each
    for _ in range(6):
        est.observe("m", 3.0, censored=True)
    ignored = FirstContentEstimator()
    for seconds in (1.0, 1.0, 1.0, 1.0):
        ignored.observe("m", seconds)
    assert ignored.quantile("m", 0.9) == 1.0  # dropping them: the estimate would say 1 s
    assert est.quantile("m", 0.9) == 3.0  # with them: at least 3 s


def test_kaplan_meier_quantile_with_censoring_in_the_middle() -> None:
    est = FirstContentEstimator()
    # 1 (event), 2 (censored), 3 (event), 4 (event): S(1)=3/4, S(3)=3/4*1/2=3/8, S(4)=0
    est.observe("m", 1.0)
    est.observe("m", 2.0, censored=True)
    est.observe("m", 3.0)
    est.observe("m", 4.0)
    assert est.quantile("m", 0.25) == 1.0
    assert est.quantile("m", 0.5) == 3.0  # 1 - 3/8 = 0.625 >= 0.5
    assert est.quantile("m", 0.7) == 4.0
    assert est.quantile("other", 0.5) is None


# -------------------------------------------------------------------------- the race


def test_primary_first_content_before_the_delay_wins_without_a_hedge() -> None:
    r = race(policy())
    assert kinds(r.start(0.0)) == ["Start(0, None, 'primary')", "Arm(2.0)"]
    assert kinds(r.content(0, 1.5)) == ["Decide()"]
    assert kinds(r.decide(1.5)) == ["Arm(None)", "Win(0)"]
    assert r.winner == 0 and r.hedges_sent == 0
    assert r.hedge_due(2.0) == []


def test_hedge_wins_and_the_primary_is_cut_before_the_win() -> None:
    p = policy()
    r = race(p)
    r.start(0.0)
    actions = r.hedge_due(2.0)
    assert isinstance(actions[0], Start) and actions[0].index == 1
    assert actions[0].target is p.targets[0] and actions[0].reason == "delay"
    assert kinds(actions[1:]) == ["Arm(None)"]  # max_hedges 1: nothing more to arm
    r.content(1, 2.7)
    assert kinds(r.decide(2.7)) == ["Cut(0, 'hedge_lost')", "Win(1)"]
    assert r.racers[0].state == "hedge_lost"
    # the winner's time to content is exact, the loser's elapsed time a lower bound
    assert p.estimator.quantile("backup", 0.5) == pytest.approx(0.7)
    assert p.estimator.quantile("primary", 0.5) == pytest.approx(2.7)


def test_tie_at_the_same_instant_goes_to_the_racer_that_started_first() -> None:
    r = race(policy())
    r.start(0.0)
    r.hedge_due(2.0)
    assert kinds(r.content(1, 3.0)) == ["Decide()"]
    assert r.content(0, 3.0) == []  # the decision is already pending
    assert kinds(r.decide(3.0)) == ["Cut(1, 'hedge_lost')", "Win(0)"]


def test_transient_error_before_the_delay_sends_the_hedge_at_once() -> None:
    r = race(policy())
    r.start(0.0)
    actions = r.failed(0, ServerError("HTTP 500", status_code=500), 0.4)
    assert isinstance(actions[0], Start) and actions[0].reason == "error"
    assert r.racers[1].started == 0.4
    assert r.racers[0].state == "failed"
    assert not any(isinstance(a, Fail) for a in actions)


def test_error_with_another_racer_running_hands_over() -> None:
    r = race(policy())
    r.start(0.0)
    r.hedge_due(2.0)
    assert r.failed(0, ReadError("dropped"), 2.5) == []
    r.content(1, 3.0)
    assert kinds(r.decide(3.0)) == ["Win(1)"]


@pytest.mark.parametrize(
    "error",
    [
        AuthenticationError("HTTP 401", status_code=401),
        BadRequestError("HTTP 400", status_code=400),
        Cancelled("x"),
    ],
)
@pytest.mark.parametrize("who", [0, 1])
def test_fatal_error_on_either_side_ends_the_race(error: BaseException, who: int) -> None:
    r = race(policy())
    r.start(0.0)
    r.hedge_due(2.0)
    actions = r.failed(who, error, 2.2)
    assert kinds(actions) == [f"Cut({1 - who}, 'hedge_lost')", f"Fail({who})"]
    assert r.done


@pytest.mark.parametrize("who", [0, 1])
def test_an_answer_earlier_in_the_instant_beats_a_fatal_error(who: int) -> None:
    """The decision waits for the end of the instant (ties); an error later in that instant
    does not take the answer back."""
    r = race(policy())
    r.start(0.0)
    r.hedge_due(2.0)
    assert kinds(r.content(who, 3.0)) == ["Decide()"]
    assert r.failed(1 - who, AuthenticationError("HTTP 401", status_code=401), 3.0) == []
    assert kinds(r.decide(3.0)) == [f"Win({who})"]


def test_last_racer_failing_with_nothing_left_to_send_fails_the_race() -> None:
    r = race(policy())
    r.start(0.0)
    r.hedge_due(2.0)
    r.failed(1, ServerError("HTTP 500", status_code=500), 2.1)
    assert kinds(r.failed(0, ReadError("x"), 2.5)) == ["Fail(0)"]


def test_every_racer_failed_the_race_fails_with_the_primarys_error() -> None:
    """The retries go to the primary's target: its error, not the last hedge's, is the race's."""
    r = race(policy())
    r.start(0.0)
    r.failed(0, RateLimitError("HTTP 429", status_code=429, retry_after=30.0), 0.3)
    assert kinds(r.failed(1, ServerError("HTTP 500", status_code=500), 0.5)) == ["Fail(0)"]


def test_rate_limited_primary_skips_targets_on_its_quota() -> None:
    shared = HedgeTarget("primary-mini", same_quota=True)
    own = HedgeTarget("other", client=OTHER_CLIENT)
    r = race(policy(targets=(shared, own), max_hedges=2))
    r.start(0.0)
    actions = r.failed(0, RateLimitError("HTTP 429", status_code=429, retry_after=30.0), 0.1)
    skipped = [a for a in actions if isinstance(a, Skipped)]
    started = [a for a in actions if isinstance(a, Start)]
    assert [(s.target, s.reason) for s in skipped] == [(shared, "rate_limited")]
    assert [s.target for s in started] == [own]


def test_rate_limit_seen_before_the_race_counts_too() -> None:
    shared = HedgeTarget("primary-mini", same_quota=True)
    r = race(policy(targets=(shared,)), rate_limited=True)
    r.start(0.0)
    actions = r.hedge_due(2.0)
    assert kinds(actions) == [f"Skipped({shared!r}, 'rate_limited')", "Arm(None)"]


def test_open_breaker_is_skipped() -> None:
    down = HedgeTarget("down")
    up = HedgeTarget("up")

    def blocked(target: HedgeTarget) -> bool:
        return target is down

    r = race(policy(targets=(down, up)), blocked=blocked)
    r.start(0.0)
    actions = r.hedge_due(2.0)
    assert isinstance(actions[0], Skipped) and actions[0].reason == "breaker_open"
    assert isinstance(actions[1], Start) and actions[1].target is up


def test_the_primary_itself_is_never_a_hedge_target() -> None:
    again = HedgeTarget("primary", client=PRIMARY_CLIENT)
    r = race(policy(targets=(again,)))
    r.start(0.0)
    assert kinds(r.hedge_due(2.0)) == ["Arm(None)"]  # tried: silently not sent


def test_budget_exhausted_under_a_steady_slow_primary() -> None:
    p = policy(budget_ratio=0.10, budget_min=3)
    sent = 0
    skipped = 0
    for turn in range(30):  # a turn every 2 s, all slow: hedges due 1 s in
        now = turn * 2.0
        r = race(p)
        r.start(now)
        actions = r.hedge_due(now + 1.0)
        sent += sum(isinstance(a, Start) for a in actions)
        skipped += sum(isinstance(a, Skipped) and a.reason == "budget" for a in actions)
        r.cancel(now + 1.5)
    # at most 10 % of the primaries of the last minute plus 3
    assert sent == 6 and skipped == 24


def test_max_hedges_arms_the_next_hedge_after_each_one() -> None:
    a, b = HedgeTarget("a"), HedgeTarget("b")
    r = race(policy(targets=(a, b), max_hedges=2))
    r.start(0.0)
    assert kinds(r.hedge_due(2.0))[-1] == "Arm(4.0)"
    assert kinds(r.hedge_due(4.0))[-1] == "Arm(None)"
    assert [racer.model for racer in r.racers] == ["primary", "a", "b"]


def test_cancel_cuts_every_running_racer_as_cancelled() -> None:
    r = race(policy())
    r.start(0.0)
    r.hedge_due(2.0)
    actions = r.cancel(2.5)
    assert kinds(actions) == ["Cut(0, 'cancelled')", "Cut(1, 'cancelled')"]
    assert r.cancel(3.0) == []


def test_racers_cut_by_a_cancel_are_lower_bounds_for_the_estimate() -> None:
    """Both silent until the turn is cancelled (or its deadline lets the race go): each waited
    that long without content, a lower bound the estimate keeps, where nothing was kept and a
    model slower than the turns' deadlines had its delay read from its fast races alone."""
    p = policy()
    r = race(p)
    r.start(0.0)
    r.hedge_due(2.0)
    r.cancel(30.0)
    assert p.estimator.quantile("primary", 0.9) == 30.0
    assert p.estimator.quantile("backup", 0.9) == 28.0
    # content seen in the cancel's own instant, before the decision: an exact sample
    q = policy()
    again = race(q)
    again.start(0.0)
    again.content(0, 4.0)
    again.cancel(4.0)
    assert (q.estimator.count("primary"), q.estimator.quantile("primary", 0.5)) == (1, 4.0)
    fast = policy()
    for start in (0.0, 10.0, 20.0):  # three fast answers, then a race that never got one
        one = race(fast)
        one.start(start)
        one.content(0, start + 1.0)
        one.decide(start + 1.0)
    slow = race(fast)
    slow.start(100.0)
    slow.let_go(400.0)
    assert fast.estimator.quantile("primary", 0.9) == 300.0


def test_nothing_happens_after_the_race_is_decided() -> None:
    r = race(policy())
    r.start(0.0)
    r.content(0, 1.0)
    r.decide(1.0)
    assert r.failed(0, ReadError("x"), 1.5) == []
    assert r.content(0, 1.6) == []
    assert isinstance(r.decide(1.7), list) and r.decide(1.7) == []
    assert not any(isinstance(a, Decide | Win | Cut) for a in r.cancel(2.0))
