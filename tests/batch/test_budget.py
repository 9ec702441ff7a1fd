"""The sliding-window budget: no window of its length ever holds more than the budget.

Driven as a simulation on a virtual clock (the budget is sans-IO: the caller passes ``now``).
"""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxturn.batch import Budget
from rxturn.errors import ConfigError


def _simulate(budget: Budget, arrivals: list[float], tokens: list[int]) -> list[tuple[float, int]]:
    """Each request arrives, waits until granted (FIFO), and is recorded at its grant time."""
    granted: list[tuple[float, int]] = []
    now = 0.0
    for arrival, cost in zip(arrivals, tokens, strict=True):
        now = max(now, arrival)
        while True:
            wait, _ = budget.take(cost, now)
            if wait == 0.0:
                granted.append((now, cost))
                break
            assert wait > 0
            now += wait
    return granted


def _max_in_any_window(times: list[float], weights: list[int], window: float) -> int:
    """The most any half-open window [t, t + window) holds (windows starting at a grant)."""
    best = 0
    for i, start in enumerate(times):
        j = bisect.bisect_left(times, start + window)
        best = max(best, sum(weights[i:j]))
    return best


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


def test_a_full_window_waits_for_its_oldest_grant_to_leave() -> None:
    budget = Budget(rpm=3)
    for now in (0.0, 10.0, 20.0):
        assert budget.take(1, now)[0] == 0.0
    assert budget.take(1, 30.0) == (30.0, -1)  # the grant at 0 leaves at 60
    assert budget.take(1, 60.0)[0] == 0.0


def test_a_correction_replaces_the_estimate_in_place() -> None:
    budget = Budget(tpm=1000)
    _, ticket = budget.take(900, 0.0)
    assert budget.wait(200, 1.0) == pytest.approx(59.0)
    budget.correct(ticket, 100)  # the provider reported 100 tokens
    assert budget.wait(200, 1.0) == 0.0
    assert budget.in_window(1.0) == (1, 100.0)
    # the correction leaves the window with its grant, not later
    assert budget.in_window(60.5) == (0, 0.0)


def test_a_row_bigger_than_the_budget_runs_alone() -> None:
    budget = Budget(tpm=100)
    assert budget.take(500, 0.0)[0] == 0.0
    wait, _ = budget.take(500, 1.0)
    assert wait == pytest.approx(59.0)


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
