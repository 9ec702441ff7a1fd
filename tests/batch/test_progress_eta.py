"""The progress line's ETA under a request budget: the pace so far (a first burst of rows that
fit in the window) says nothing of a budget that lets ``rpm`` rows through a minute; the ETA is
never below what the budget allows for the rows left."""

from __future__ import annotations

from rxturn.batch._api import Tally
from rxturn.batch._progress import snapshot


def _tally(total: int, done: int, seconds_ago: float) -> Tally:
    tally = Tally(total)
    for _ in range(done):
        tally.count("ok", 1, 1, None)
    tally.started -= seconds_ago
    return tally


def test_the_eta_is_no_shorter_than_the_request_budget_allows() -> None:
    tally = _tally(total=20, done=2, seconds_ago=2.0)  # 1 row/s so far: 18 s by the pace
    report = snapshot(tally, 0, 0.0, rpm=2)
    assert report.eta_s is not None and report.eta_s >= 18 * 60 / 2


def test_without_a_budget_the_eta_is_the_pace() -> None:
    tally = _tally(total=20, done=10, seconds_ago=10.0)
    report = snapshot(tally, 0, 0.0)
    assert report.eta_s is not None and 9.0 <= report.eta_s <= 11.0


def test_a_budget_above_the_pace_leaves_the_eta_to_the_pace() -> None:
    tally = _tally(total=20, done=10, seconds_ago=10.0)  # 60 rows/min so far
    report = snapshot(tally, 0, 0.0, rpm=6000)
    assert report.eta_s is not None and 9.0 <= report.eta_s <= 11.0
