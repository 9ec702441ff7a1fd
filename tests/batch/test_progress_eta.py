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


def _spent(total: int, done: int, seconds_ago: float, tokens: int) -> Tally:
    """``done`` rows finished ``seconds_ago``, each reporting ``tokens`` (half in, half out)."""
    tally = Tally(total)
    for _ in range(done):
        tally.count("ok", tokens // 2, tokens - tokens // 2, None)
    tally.started -= seconds_ago
    return tally


def test_the_eta_is_no_shorter_than_the_token_budget_allows() -> None:
    # 2 rows of 500 tokens in 2 s: 18 s left by the pace; 1000 tokens a minute let 2 rows
    # through a minute, so the 18 rows left take 9 minutes at least
    tally = _spent(total=20, done=2, seconds_ago=2.0, tokens=500)
    report = snapshot(tally, 0, 0.0, tpm=1000)
    assert report.eta_s is not None and report.eta_s >= 18 * 500 / 1000 * 60


def test_the_tighter_of_the_two_budgets_sets_the_eta() -> None:
    tally = _spent(total=20, done=2, seconds_ago=2.0, tokens=500)
    by_tokens = snapshot(tally, 0, 0.0, rpm=600, tpm=1000).eta_s
    by_requests = snapshot(tally, 0, 0.0, rpm=1, tpm=10**9).eta_s
    assert by_tokens is not None and by_tokens >= 540.0
    assert by_requests is not None and by_requests >= 18 * 60


def test_a_token_budget_above_the_pace_leaves_the_eta_to_the_pace() -> None:
    tally = _spent(total=20, done=10, seconds_ago=10.0, tokens=100)  # 6000 tokens/min so far
    report = snapshot(tally, 0, 0.0, tpm=10**6)
    assert report.eta_s is not None and 9.0 <= report.eta_s <= 11.0


def test_rows_reporting_no_usage_leave_the_eta_to_the_pace() -> None:
    tally = _spent(total=20, done=10, seconds_ago=10.0, tokens=0)
    report = snapshot(tally, 0, 0.0, tpm=10)
    assert report.eta_s is not None and 9.0 <= report.eta_s <= 11.0


def test_the_rows_of_an_earlier_run_do_not_make_the_tokens_per_row() -> None:
    # resumed: 10 rows done before (no tokens counted this run), then 2 rows of 500 tokens
    tally = Tally(30, ok=10)
    for _ in range(2):
        tally.count("ok", 250, 250, None)
    tally.started -= 2.0
    report = snapshot(tally, 10, 0.0, tpm=1000)
    assert report.eta_s is not None and report.eta_s >= 18 * 500 / 1000 * 60
