"""The sliding-window budget: no window of its length ever holds more than the budget.

Driven as a simulation on a virtual clock (the budget is sans-IO: the caller passes ``now``).
A request is granted, then sent some time later (stamped with :meth:`Budget.restamp`), or given
back (:meth:`Budget.release`); what must hold is the rate at which requests are *sent*.
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slow_params import briefly

from rxturn.batch import BatchConfig, Budget, LocalGate, Runner
from rxturn.errors import ConfigError


def _simulate(
    budget: Budget,
    arrivals: list[float],
    tokens: list[int],
    delays: list[float] | None = None,
) -> list[tuple[float, int]]:
    """Each request arrives, waits until granted (FIFO), and is sent ``delay`` seconds after
    its grant (0: at once). Returns ``(sent at, tokens)`` of every request."""
    delays = delays if delays is not None else [0.0] * len(arrivals)
    due: list[tuple[float, int, int]] = []  # (send time, ticket, tokens), granted, not sent
    sent: list[tuple[float, int]] = []

    def send_due(now: float) -> None:
        while due and due[0][0] <= now:
            at, ticket, cost = heapq.heappop(due)
            budget.restamp(ticket, at)
            sent.append((at, cost))

    now = 0.0
    for arrival, cost, delay in zip(arrivals, tokens, delays, strict=True):
        now = max(now, arrival)
        while True:
            send_due(now)
            wait, ticket = budget.take(cost, now)
            if wait == 0.0:
                heapq.heappush(due, (now + delay, ticket, cost))
                break
            assert wait > 0
            # no time alone frees a grant not yet sent: only its sending does
            assert math.isfinite(wait) or due
            now = min(now + wait, due[0][0] if due else math.inf)
    send_due(math.inf)
    return sorted(sent)


def _max_in_any_window(times: list[float], weights: list[int], window: float) -> int:
    """The most any half-open window [t, t + window) holds (windows starting at a grant)."""
    best = 0
    for i, start in enumerate(times):
        j = bisect.bisect_left(times, start + window)
        best = max(best, sum(weights[i:j]))
    return best


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=150, deadline=None)
@given(
    rpm=st.integers(1, 20),
    gaps=st.lists(st.floats(0, 10, allow_nan=False), min_size=1, max_size=80),
)
def test_no_window_holds_more_requests_than_rpm(rpm: int, gaps: list[float]) -> None:
    arrivals = [sum(gaps[: i + 1]) for i in range(len(gaps))]
    granted = _simulate(Budget(rpm=rpm), arrivals, [1] * len(arrivals))
    times = [t for t, _ in granted]
    assert len(granted) == len(arrivals)
    assert _max_in_any_window(times, [1] * len(times), 60.0) <= rpm


test_no_window_holds_more_requests_than_rpm_briefly = briefly(
    test_no_window_holds_more_requests_than_rpm, 30
)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=150, deadline=None)
@given(
    tpm=st.integers(400, 2000),  # every row fits (a bigger one runs alone: below)
    costs=st.lists(st.integers(1, 400), min_size=1, max_size=60),
    gaps=st.lists(st.floats(0, 5, allow_nan=False), min_size=60, max_size=60),
)
def test_no_window_holds_more_tokens_than_tpm(
    tpm: int, costs: list[int], gaps: list[float]
) -> None:
    arrivals = [sum(gaps[: i + 1]) for i in range(len(costs))]
    granted = _simulate(Budget(tpm=tpm), arrivals, costs)
    times = [t for t, _ in granted]
    assert _max_in_any_window(times, [c for _, c in granted], 60.0) <= tpm


test_no_window_holds_more_tokens_than_tpm_briefly = briefly(
    test_no_window_holds_more_tokens_than_tpm, 30
)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=150, deadline=None)
@given(
    rpm=st.integers(1, 10),
    gaps=st.lists(st.floats(0, 10, allow_nan=False), min_size=1, max_size=60),
    delays=st.lists(st.floats(0, 200, allow_nan=False), min_size=60, max_size=60),
)
def test_grants_held_unsent_past_a_window_never_overfill_one(
    rpm: int, gaps: list[float], delays: list[float]
) -> None:
    # a granted request may wait for up to three windows before it is sent: every window of
    # sending times still holds at most rpm requests
    arrivals = [sum(gaps[: i + 1]) for i in range(len(gaps))]
    sent = _simulate(Budget(rpm=rpm), arrivals, [1] * len(arrivals), delays[: len(arrivals)])
    times = [t for t, _ in sent]
    assert len(sent) == len(arrivals)
    assert _max_in_any_window(times, [1] * len(times), 60.0) <= rpm


test_grants_held_unsent_past_a_window_never_overfill_one_briefly = briefly(
    test_grants_held_unsent_past_a_window_never_overfill_one, 30
)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=150, deadline=None)
@given(
    tpm=st.integers(400, 2000),
    costs=st.lists(st.integers(1, 400), min_size=1, max_size=60),
    gaps=st.lists(st.floats(0, 5, allow_nan=False), min_size=60, max_size=60),
    delays=st.lists(st.floats(0, 200, allow_nan=False), min_size=60, max_size=60),
)
def test_tokens_of_grants_held_unsent_never_overfill_a_window(
    tpm: int, costs: list[int], gaps: list[float], delays: list[float]
) -> None:
    arrivals = [sum(gaps[: i + 1]) for i in range(len(costs))]
    sent = _simulate(Budget(tpm=tpm), arrivals, costs, delays[: len(costs)])
    times = [t for t, _ in sent]
    assert _max_in_any_window(times, [c for _, c in sent], 60.0) <= tpm


test_tokens_of_grants_held_unsent_never_overfill_a_window_briefly = briefly(
    test_tokens_of_grants_held_unsent_never_overfill_a_window, 30
)


def test_a_grant_not_sent_counts_in_every_window_until_it_is_sent() -> None:
    budget = Budget(rpm=2, window=1.0)
    _, first = budget.take(1, 0.0)
    _, second = budget.take(1, 0.0)
    # both wait far longer than a window before they are sent: still counted all the while
    assert budget.take(1, 1.5) == (math.inf, -1)
    assert budget.in_window(4.0) == (2, 2.0)
    budget.restamp(first, 5.0)
    budget.restamp(second, 5.0)
    # the next one goes a window after they were sent, not after they were granted
    assert budget.take(1, 5.0) == (1.0, -1)
    assert budget.take(1, 6.0)[0] == 0.0


def test_a_released_grant_gives_its_budget_back() -> None:
    budget = Budget(rpm=1, tpm=100)
    _, ticket = budget.take(60, 0.0)
    assert budget.take(60, 30.0) == (math.inf, -1)
    assert budget.release(ticket)
    assert budget.held == 0
    assert budget.in_window(30.0) == (0, 0.0)
    assert budget.take(60, 30.0)[0] == 0.0
    assert not budget.release(ticket)  # released once


def test_a_sent_request_cannot_be_released() -> None:
    budget = Budget(rpm=1)
    _, ticket = budget.take(1, 0.0)
    budget.restamp(ticket, 1.0)
    assert not budget.release(ticket)
    assert budget.take(1, 2.0) == (59.0, -1)  # it stays counted until 61


def test_a_full_window_waits_for_its_oldest_grant_to_leave() -> None:
    budget = Budget(rpm=3)
    for now in (0.0, 10.0, 20.0):
        wait, ticket = budget.take(1, now)
        assert wait == 0.0
        budget.restamp(ticket, now)
    assert budget.take(1, 30.0) == (30.0, -1)  # the request sent at 0 leaves at 60
    assert budget.take(1, 60.0)[0] == 0.0


def test_a_correction_replaces_the_estimate_in_place() -> None:
    budget = Budget(tpm=1000)
    _, ticket = budget.take(900, 0.0)
    budget.correct(ticket, 950)  # corrected before it is sent: the held grant's tokens
    assert budget.in_window(0.5) == (1, 950.0)
    budget.restamp(ticket, 0.0)
    assert budget.wait(200, 1.0) == pytest.approx(59.0)
    budget.correct(ticket, 100)  # the provider reported 100 tokens
    assert budget.wait(200, 1.0) == 0.0
    assert budget.in_window(1.0) == (1, 100.0)
    # the correction leaves the window with its grant, not later
    assert budget.in_window(60.5) == (0, 0.0)


def test_a_row_bigger_than_the_budget_runs_alone() -> None:
    budget = Budget(tpm=100)
    wait, ticket = budget.take(500, 0.0)
    assert wait == 0.0
    assert budget.take(500, 0.5) == (math.inf, -1)  # not sent yet
    budget.restamp(ticket, 0.0)
    wait, _ = budget.take(500, 1.0)
    assert wait == pytest.approx(59.0)


def test_a_restamp_earlier_than_the_newest_keeps_the_log_in_order() -> None:
    budget = Budget(rpm=2, window=10.0)
    _, late = budget.take(1, 0.0)
    _, early = budget.take(1, 0.0)
    budget.restamp(late, 5.0)
    budget.restamp(early, 3.0)  # a caller whose clock reads a little behind
    assert budget.take(1, 6.0) == (7.0, -1)  # the one sent at 3 leaves first, at 13
    assert budget.in_window(13.5) == (1, 1.0)


async def test_a_waiter_held_back_by_an_unsent_grant_is_woken_by_its_release() -> None:
    gate = LocalGate(Budget(rpm=1, window=3600.0))
    first = await gate.acquire(1)
    second = asyncio.ensure_future(gate.acquire(1))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not second.done()  # an hour-long window: only the release can free it
    gate.release(first)
    ticket = await asyncio.wait_for(second, 5.0)
    assert ticket >= 0 and ticket != first
    assert gate.budget.held == 1


async def test_a_cancelled_waiter_is_granted_nothing() -> None:
    gate = LocalGate(Budget(rpm=1, window=3600.0))
    first = await gate.acquire(1)
    waiter = asyncio.ensure_future(gate.acquire(1))
    await asyncio.sleep(0)
    waiter.cancel()
    gate.release(first)
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert gate.budget.held == 0


def test_a_pause_holds_every_grant_until_it_expires() -> None:
    budget = Budget()  # no limits: only the pause
    budget.pause(2.5, now=10.0)
    assert budget.wait(1, 10.0) == pytest.approx(2.5)
    assert budget.wait(1, 12.0) == pytest.approx(0.5)
    budget.pause(1.0, now=11.0)  # a shorter pause does not shorten the longer one
    assert budget.wait(1, 12.0) == pytest.approx(0.5)
    assert budget.take(1, 12.5)[0] == 0.0


@pytest.mark.parametrize(
    "kwargs", [{"rpm": 0}, {"tpm": -5}, {"rpm": 1.5}, {"rpm": True}, {"window": 0}]
)
def test_bad_limits_are_config_errors(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        Budget(**kwargs)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda: LocalGate(None), r"^LocalGate\(budget=\.\.\.\) must be a Budget"),  # pyright: ignore[reportArgumentType]
        (lambda: LocalGate(Budget(), clock=5.0), r"^LocalGate\(clock=\.\.\.\) must be"),  # pyright: ignore[reportArgumentType]
        (
            lambda: Runner(BatchConfig(provider="openai", model="m"), api_key="k", gate="budget"),  # pyright: ignore[reportArgumentType]
            r"^Runner\(gate=\.\.\.\) must be a Gate \(acquire, correct, restamp, release, pause\)",
        ),
    ],
    ids=["gate-budget-none", "gate-clock-float", "runner-gate-str"],
)
def test_a_gate_of_the_wrong_type_is_refused_where_it_is_given(
    build: Callable[[], object], says: str
) -> None:
    # before: accepted, then AttributeError ('NoneType' object has no attribute 'take',
    # 'str' object has no attribute 'acquire') at the first row, or TypeError calling the clock
    with pytest.raises(ConfigError, match=says):
        build()


@pytest.mark.parametrize(
    "window",
    [0, -1.0, math.inf, math.nan, 10**400, True],
    ids=["zero", "negative", "inf", "nan", "huge-int", "bool"],
)
def test_a_window_must_be_finite_positive_seconds(window: Any) -> None:
    with pytest.raises(ConfigError, match="window must be a positive number of seconds"):
        Budget(rpm=1, window=window)


async def test_the_wait_in_progress_counts_in_waited_before_it_ends() -> None:
    """The progress line reads ``waited`` every second: a wait for budget that lasts minutes
    (``--rpm 2``) must show while it lasts, not only once it is over."""
    now = [100.0]
    gate = LocalGate(Budget(rpm=1, window=3600.0), clock=lambda: now[0])
    first = await gate.acquire(1)
    waiter = asyncio.ensure_future(gate.acquire(1))
    for _ in range(5):
        await asyncio.sleep(0)
    assert gate.waited == 0.0
    now[0] += 7.5  # the virtual clock: the waiter has been waiting 7.5 s
    assert gate.waited == pytest.approx(7.5)
    gate.release(first)
    await asyncio.wait_for(waiter, 5.0)
    assert gate.waited == pytest.approx(7.5)  # counted once, not again when it ends
    now[0] += 10.0
    assert gate.waited == pytest.approx(7.5)  # nobody waits now
