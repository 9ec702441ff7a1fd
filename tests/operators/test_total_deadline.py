"""``total_deadline``: one timer for the whole turn (docs/behaviour.md §2.5), on virtual
time."""

from __future__ import annotations

import pytest
from reactivex.testing import TestScheduler

from rxturn.errors import ConfigError, StreamTimeoutError
from rxturn.events import AttemptReset
from rxturn.operators import TurnProgress, attempt_guard, total_deadline
from rxturn.operators._scheduling import clock
from rxturn.testing.virtual import Tracked, drive, reply, timeline


async def test_fires_once_the_budget_is_spent_and_disposes_upstream(clean: TestScheduler) -> None:
    events = reply("a b c d e f")
    source = Tracked(clean, timeline(events, step=1.0))
    run = await drive(clean, source.observable.pipe(total_deadline(3.5, scheduler=clean)))
    assert run.values == events[:4]  # events at 0.01, 1.01, 2.01, 3.01 … cut at 3.5
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.kind == "total"
    assert run.end_time == pytest.approx(3.5)
    assert run.error.elapsed == pytest.approx(3.5)
    assert source.spans == [[0.0, 3.5]]


async def test_a_stream_that_finishes_in_time_is_untouched(clean: TestScheduler) -> None:
    events = reply("quick")
    run = await drive(
        clean,
        clean.create_cold_observable(timeline(events)).pipe(total_deadline(10.0, scheduler=clean)),
    )
    assert run.completed and run.values == events


async def test_reports_turn_events_and_partial_data_from_progress(clean: TestScheduler) -> None:
    progress = TurnProgress(clock(clean), total=1.0)
    events = reply("one two three four five six")
    source = clean.create_cold_observable(timeline(events, step=0.2))
    run = await drive(
        clean,
        source.pipe(
            attempt_guard(progress), total_deadline(1.0, progress=progress, scheduler=clean)
        ),
    )
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.events == 5 == len(run.values)  # 0.01 … 0.81
    assert run.error.partial is False  # no PartStop yet
    assert getattr(run.error, "attempts", None) == 1
    assert "total timeout after 1.0s, 5 events" in str(run.error)


async def test_uses_the_shared_deadline_not_its_own_subscription_time(
    clean: TestScheduler,
) -> None:
    progress = TurnProgress(clock(clean), total=2.0)  # the turn started at 0
    clean.advance_to(1.5)
    source = clean.create_cold_observable(timeline([], end=None))
    run = await drive(clean, source.pipe(total_deadline(2.0, progress=progress, scheduler=clean)))
    assert run.end_time == pytest.approx(2.0)
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.elapsed == pytest.approx(2.0)


def test_none_is_the_identity() -> None:
    source = TestScheduler().create_cold_observable(timeline([]))
    assert total_deadline(None)(source) is source


def test_a_bad_budget_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="total_deadline: seconds"):
        total_deadline(-1.0)


async def test_without_progress_the_error_counts_the_events_that_passed(
    clean: TestScheduler,
) -> None:
    # two attempts: 3 events, a reset mark, then 2 events and a stall (the marks are no events)
    first = reply("one two three")[:3]
    items: list[object] = [*first, AttemptReset(attempt=2, reason="server_error"), *first[:2]]
    source = clean.create_cold_observable(timeline(items, end=None))
    run = await drive(clean, source.pipe(total_deadline(1.0, scheduler=clean)))
    assert isinstance(run.error, StreamTimeoutError)
    assert run.values == items
    assert run.error.events == 5
    assert "total timeout after 1.0s, 5 events" in str(run.error)


async def test_without_progress_a_batch_counts_as_its_events(clean: TestScheduler) -> None:
    events = reply("one two three")
    batches: list[object] = [
        events[:3],
        [AttemptReset(attempt=2, reason="server_error")],
        events[:4],
    ]
    source = clean.create_cold_observable(timeline(batches, end=None))
    run = await drive(clean, source.pipe(total_deadline(1.0, scheduler=clean)))
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.events == 7
