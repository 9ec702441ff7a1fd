"""``deadlines``: first-event / idle timeouts and the consecutive-timeout rule (docs/behaviour.md
§2.3), on virtual time."""

from __future__ import annotations

from typing import Any

import pytest
from reactivex import abc, typing
from reactivex.testing import TestScheduler

from rxturn.errors import ConfigError, StreamTimeoutError
from rxturn.events import Delta, MessageStart, PartStart, PartStop, StreamEvent
from rxturn.operators import TurnProgress, attempt_guard, deadlines
from rxturn.testing.virtual import Tracked, drive, reply, timeline


class CountingScheduler(TestScheduler):
    """Counts timers scheduled through ``schedule_relative``."""

    def __init__(self) -> None:
        super().__init__()
        self.relative = 0

    def schedule_relative(
        self, duetime: typing.RelativeTime, action: Any, state: Any = None
    ) -> abc.DisposableBase:
        self.relative += 1
        return super().schedule_relative(duetime, action, state)


async def test_an_empty_stream_fails_fast_after_two_first_event_timeouts(
    clean: TestScheduler,
) -> None:
    source = Tracked(clean, timeline([], end=None))
    run = await drive(clean, source.observable.pipe(deadlines(2.0, 3.0, 10, scheduler=clean)))
    assert isinstance(run.error, StreamTimeoutError)
    assert run.end_time == pytest.approx(4.0)  # min(2, 10) = 2 consecutive x 2 s
    assert run.error.kind == "first_event"
    assert run.error.consecutive == 2
    assert run.error.events == 0
    assert run.error.partial is False
    assert "first-event timeout" in str(run.error)
    assert source.spans == [[0.0, pytest.approx(4.0)]]  # the attempt is disposed


async def test_a_single_allowed_timeout_fails_at_the_first_expiry(clean: TestScheduler) -> None:
    run = await drive(
        clean,
        Tracked(clean, timeline([], end=None)).observable.pipe(
            deadlines(0.01, 0.01, 1, scheduler=clean)
        ),
    )
    assert isinstance(run.error, StreamTimeoutError)
    assert run.end_time == pytest.approx(0.01)
    assert run.error.consecutive == 1


async def test_idle_timeout_counts_consecutive_expiries_after_the_last_event(
    clean: TestScheduler,
) -> None:
    events = [MessageStart(id="m"), PartStart(0), Delta(0, "a")]
    source = timeline(events, start=0.5, step=0.5, end=None)  # events at 0.5, 1.0, 1.5
    run = await drive(
        clean, clean.create_cold_observable(source).pipe(deadlines(2.0, 3.0, 2, scheduler=clean))
    )
    assert run.values == events
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.kind == "idle"
    assert run.end_time == pytest.approx(1.5 + 2 * 3.0)
    assert run.error.consecutive == 2
    assert run.error.events == 3
    assert run.error.after == 3.0


async def test_an_event_resets_the_consecutive_count(clean: TestScheduler) -> None:
    # per_event 1, max 2: one expiry at 1.0, an event at 1.5 resets, then two expiries.
    first: list[StreamEvent] = [MessageStart(id="m")]
    later: list[StreamEvent] = [PartStart(0)]
    source = clean.create_cold_observable(
        timeline(first, start=0.0, end=None) + timeline(later, start=1.5, end=None)
    )
    run = await drive(clean, source.pipe(deadlines(1.0, 1.0, 2, scheduler=clean)))
    assert isinstance(run.error, StreamTimeoutError)
    assert run.end_time == pytest.approx(3.5)
    assert run.error.consecutive == 2


async def test_the_wait_switches_to_per_event_after_the_first_event(clean: TestScheduler) -> None:
    source = clean.create_cold_observable(timeline([MessageStart(id="m")], start=0.5, end=None))
    run = await drive(clean, source.pipe(deadlines(10.0, 1.0, 1, scheduler=clean)))
    assert run.end_time == pytest.approx(1.5)  # not at 10 s
    assert isinstance(run.error, StreamTimeoutError) and run.error.kind == "idle"


async def test_a_longer_per_event_wait_extends_the_first_timer(clean: TestScheduler) -> None:
    source = clean.create_cold_observable(timeline([MessageStart(id="m")], start=0.5, end=None))
    run = await drive(clean, source.pipe(deadlines(1.0, 5.0, 1, scheduler=clean)))
    assert run.end_time == pytest.approx(5.5)
    assert isinstance(run.error, StreamTimeoutError) and run.error.kind == "idle"


async def test_first_event_is_re_armed_per_subscription(clean: TestScheduler) -> None:
    source = clean.create_cold_observable(timeline([MessageStart(id="m")], start=0.5, end=None))
    guarded = source.pipe(deadlines(1.0, 5.0, 1, scheduler=clean))
    first = await drive(clean, guarded)
    assert first.end_time == pytest.approx(5.5)
    second = await drive(clean, guarded)  # a new attempt at 5.5: first_event counts from there
    assert second.end_time == pytest.approx(5.5 + 5.5)


async def test_disabled_first_event_waits_forever_for_the_first_event(
    clean: TestScheduler,
) -> None:
    source = Tracked(clean, timeline([MessageStart(id="m")], start=500.0, end=None))
    run = await drive(
        clean, source.observable.pipe(deadlines(None, 1.0, 1, scheduler=clean)), limit=2000.0
    )
    assert run.end_time == pytest.approx(501.0)
    assert isinstance(run.error, StreamTimeoutError) and run.error.kind == "idle"


async def test_disabled_per_event_stops_timing_after_the_first_event(
    clean: TestScheduler,
) -> None:
    source = timeline([MessageStart(id="m"), PartStart(0)], start=0.5, step=400.0)
    run = await drive(
        clean, clean.create_cold_observable(source).pipe(deadlines(1.0, None, 1, scheduler=clean))
    )
    assert run.completed


def test_both_disabled_is_the_identity() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(timeline([]))
    assert deadlines(None, None, 3)(source) is source


async def test_a_steady_stream_completes_and_leaves_no_timer(clean: TestScheduler) -> None:
    events = reply(" ".join(["w"] * 50))
    run = await drive(
        clean,
        clean.create_cold_observable(timeline(events, step=2.0)).pipe(
            deadlines(3.0, 3.0, 1, scheduler=clean)
        ),
    )
    assert run.completed and run.values == events


async def test_timers_are_not_re_armed_per_event() -> None:
    scheduler = CountingScheduler()
    events = reply(" ".join(["w"] * 995))  # 1000 events, 10 ms apart: 10 s of stream
    source = scheduler.create_cold_observable(timeline(events, step=0.01))
    before = scheduler.relative  # the cold observable schedules one action per message
    run = await drive(scheduler, source.pipe(deadlines(1.0, 1.0, 3, scheduler=scheduler)))
    assert run.completed
    timers = scheduler.relative - before - len(events) - 1
    assert timers <= 15, f"{timers} timers for {len(events)} events"


async def test_the_error_reports_partial_data_from_the_shared_progress(
    clean: TestScheduler,
) -> None:
    progress = TurnProgress(lambda: 0.0)
    events = [MessageStart(id="m"), PartStart(0), Delta(0, "kept"), PartStop(0)]
    source = clean.create_cold_observable(timeline(events, end=None))
    run = await drive(
        clean,
        source.pipe(
            attempt_guard(progress), deadlines(1.0, 1.0, 1, progress=progress, scheduler=clean)
        ),
    )
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.partial is True
    assert run.error.events == 4
    assert "partial data" in str(run.error)


async def test_disposal_cancels_the_timer(clean: TestScheduler) -> None:
    source = Tracked(clean, timeline([], end=None))
    run = await drive(
        clean, source.observable.pipe(deadlines(5.0, 5.0, 10, scheduler=clean)), dispose_at=1.0
    )
    assert not run.finished
    assert source.spans == [[0.0, 1.0]]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((0.0, 1.0, 3), "first_event"),
        ((1.0, -1.0, 3), "per_event"),
        ((float("inf"), 1.0, 3), "finite"),
        ((1.0, 1.0, 0), "max_consecutive"),
    ],
    ids=["zero", "negative", "infinite", "consecutive"],
)
def test_bad_arguments_are_config_errors(args: tuple[Any, Any, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words) as info:
        deadlines(*args)
    assert str(info.value).startswith("deadlines: ")
