"""Batched streams (items that are ``list[StreamEvent]``, one per network chunk) through the
operators, on virtual time.

- ``unbatch`` / ``as_batches``: flatten in order / wrap singles; the end passes through.
- ``attempt_guard``: a clean batched stream passes as the same batches; a batch rejected at
  event ``k`` forwards ``batch[:k]`` as one shorter batch (nothing when ``k == 0``) and fails
  with the fold's error; truncation still fails; ``TurnProgress.events`` counts events. The
  property test checks any mix of batches and single events against the same events guarded
  one by one (the per-event path is the oracle).
- ``deadlines``: a batch counts as its events in ``StreamTimeoutError.events``.
"""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from hypothesis import example, given, settings
from hypothesis import strategies as st
from reactivex.testing import TestScheduler
from slow_params import briefly

from operators.event_strategies import START, STREAMS
from rxturn.errors import (
    InvalidToolInputError,
    StreamProtocolError,
    StreamTimeoutError,
    TruncatedStreamError,
)
from rxturn.events import (
    Delta,
    MessageDelta,
    MessageStop,
    PartStart,
    PartStop,
    Ping,
    StreamEvent,
)
from rxturn.messages import Usage
from rxturn.operators import TurnProgress, as_batches, attempt_guard, deadlines, unbatch
from rxturn.testing.virtual import Tracked, drive, reply, timeline

BOOM = RuntimeError("boom")


def flatten(items: list[Any]) -> list[Any]:
    """The events of a mixed stream, one by one (an independent spelling of ``unbatch``)."""
    out: list[Any] = []
    for item in items:
        out.extend(item if isinstance(item, list) else [item])
    return out


def tool_open() -> list[StreamEvent]:
    return [START, PartStart(0, "tool_call", id="call_1", name="lookup")]


# -- unbatch / as_batches ---------------------------------------------------------------------


async def test_unbatch_flattens_batches_in_order_and_passes_single_items(
    clean: TestScheduler,
) -> None:
    items: list[Any] = [
        [START, PartStart(0)],
        [Delta(0, "a"), Delta(0, "b"), PartStop(0)],
        MessageStop(),
    ]
    source = clean.create_cold_observable(timeline(items))  # at 0.01, 0.02, 0.03; end 0.04
    run = await drive(clean, source.pipe(unbatch()))
    assert run.items == [
        (0.01, START),
        (0.01, PartStart(0)),
        (0.02, Delta(0, "a")),
        (0.02, Delta(0, "b")),
        (0.02, PartStop(0)),
        (0.03, MessageStop()),
    ]
    assert run.completed and run.end_time == pytest.approx(0.04)


async def test_unbatch_passes_an_error_after_the_events_before_it(clean: TestScheduler) -> None:
    source = clean.create_cold_observable(timeline([[START, PartStart(0)]], end=BOOM))
    run = await drive(clean, source.pipe(unbatch()))
    assert run.values == [START, PartStart(0)]
    assert run.error is BOOM and not run.completed


async def test_as_batches_wraps_single_items_and_passes_lists(clean: TestScheduler) -> None:
    batch = [START, PartStart(0), Delta(0, "a")]
    single = Ping()
    source = clean.create_cold_observable(timeline([batch, single, [MessageStop()]]))
    run = await drive(clean, source.pipe(as_batches()))
    assert run.values == [batch, [single], [MessageStop()]]
    assert run.values[0] is batch  # a batch passes as it is, not copied
    assert all(type(item) is list for item in run.values)
    assert run.completed


async def test_as_batches_passes_an_error(clean: TestScheduler) -> None:
    source = clean.create_cold_observable(timeline([START], end=BOOM))
    run = await drive(clean, source.pipe(as_batches()))
    assert run.values == [[START]]
    assert run.error is BOOM


async def test_unbatch_undoes_as_batches(clean: TestScheduler) -> None:
    items: list[Any] = [START, [PartStart(0), Delta(0, "a")], Ping(), [PartStop(0)], MessageStop()]
    source = clean.create_cold_observable(timeline(items))
    run = await drive(clean, source.pipe(as_batches(), unbatch()))
    assert run.values == flatten(items)
    assert run.completed


# -- attempt_guard with batches ---------------------------------------------------------------


async def test_guard_forwards_a_clean_batched_stream_as_the_same_batches(
    clean: TestScheduler,
) -> None:
    events = reply("one two three four", usage=Usage(input_tokens=3, output_tokens=4))
    batches = [events[:3], events[3:5], events[5:]]  # [S, P, d] [d, d] [d, P, MD, M]
    progress = TurnProgress(lambda: 0.0)
    source = clean.create_cold_observable(timeline(batches))
    run = await drive(clean, source.pipe(attempt_guard(progress)))
    assert run.values == batches
    assert run.completed and run.error is None
    assert progress.events == len(events)  # events, not the 3 batches
    assert progress.shadow.completed
    assert progress.shadow.usage == Usage(input_tokens=3, output_tokens=4)


async def test_a_batch_rejected_at_its_third_event_forwards_the_two_before_it(
    clean: TestScheduler,
) -> None:
    earlier = tool_open()
    good = [Delta(0, '{"q": ', "tool_json"), Delta(0, "oops", "tool_json")]
    rejected = [*good, PartStop(0), MessageDelta("tool_call"), MessageStop()]
    never = [Ping()]
    progress = TurnProgress(lambda: 0.0)
    source = Tracked(clean, timeline([earlier, rejected, never]))  # at 0.01, 0.02, 0.03
    run = await drive(clean, source.observable.pipe(attempt_guard(progress)))
    assert run.items == [(0.01, earlier), (0.02, good)]  # the prefix as ONE shorter batch
    assert isinstance(run.error, InvalidToolInputError)
    assert run.error.raw == '{"q": oops'
    assert run.end_time == pytest.approx(0.02)
    assert progress.events == len(earlier) + 2
    assert source.spans == [[0.0, pytest.approx(0.02)]]  # upstream disposed at the bad batch


async def test_a_batch_rejected_at_its_first_event_forwards_nothing_of_it(
    clean: TestScheduler,
) -> None:
    earlier = [*tool_open(), Delta(0, "not json", "tool_json")]
    progress = TurnProgress(lambda: 0.0)
    source = clean.create_cold_observable(timeline([earlier, [PartStop(0), MessageStop()]]))
    run = await drive(clean, source.pipe(attempt_guard(progress)))
    assert run.values == [earlier]
    assert isinstance(run.error, InvalidToolInputError)
    assert progress.events == len(earlier)


async def test_a_first_batch_starting_with_a_lane_event_forwards_nothing(
    clean: TestScheduler,
) -> None:
    progress = TurnProgress(lambda: 0.0)
    batch: list[StreamEvent] = [PartStart(0), Delta(0, "x"), START]
    source = clean.create_cold_observable(timeline([batch]))
    run = await drive(clean, source.pipe(attempt_guard(progress)))
    assert run.values == []
    assert isinstance(run.error, StreamProtocolError)
    assert progress.events == 0


async def test_a_batched_stream_without_message_stop_is_truncated(clean: TestScheduler) -> None:
    events = reply("cut short here")[:-1]  # everything but MessageStop: 7 events
    batches = [events[:2], events[2:6], events[6:]]
    progress = TurnProgress(lambda: 0.0)
    source = clean.create_cold_observable(timeline(batches))
    run = await drive(clean, source.pipe(attempt_guard(progress)))
    assert run.values == batches
    assert isinstance(run.error, TruncatedStreamError)
    assert run.error.events == len(events) == 7
    assert progress.events == 7


async def test_events_are_counted_per_attempt_across_batches(clean: TestScheduler) -> None:
    progress = TurnProgress(lambda: 0.0)
    first = reply("a b")[:4]  # S, P, d, d: then the attempt fails
    failed = clean.create_cold_observable(timeline([first[:1], first[1:]], end=BOOM))
    await drive(clean, failed.pipe(attempt_guard(progress)))
    assert progress.events == 4
    second = [*tool_open(), Delta(0, "{", "tool_json"), PartStop(0), MessageStop()]
    retried = clean.create_cold_observable(timeline([second]))
    run = await drive(clean, retried.pipe(attempt_guard(progress)))
    assert isinstance(run.error, InvalidToolInputError)
    assert run.values == [second[:3]]
    assert progress.attempts == 2
    assert progress.events == 3 and progress.earlier_events == 4


# -- property: batching never changes a verdict --------------------------------------------------


class _Seen:
    def __init__(self) -> None:
        self.items: list[Any] = []
        self.errors: list[Exception] = []
        self.completed = False

    def run(self, items: list[Any], progress: TurnProgress) -> _Seen:
        reactivex.from_iterable(items).pipe(attempt_guard(progress)).subscribe(
            self.items.append, self.errors.append, self._done
        )
        return self

    def _done(self) -> None:
        self.completed = True


def _expected_items(items: list[Any], accepted: int) -> list[Any]:
    """What a batched run forwards when the per-event run accepted ``accepted`` events: whole
    items while they fit, then the rejected batch's prefix (if not empty)."""
    out: list[Any] = []
    left = accepted
    for item in items:
        size = len(item) if isinstance(item, list) else 1
        if left >= size:
            out.append(item)
            left -= size
            continue
        if left:
            assert isinstance(item, list)
            out.append(item[:left])
        break
    return out


@st.composite
def _split(draw: st.DrawFn) -> list[Any]:
    """Events cut at drawn points; each piece a batch, or (one event) sometimes bare."""
    events = draw(STREAMS)
    items: list[Any] = []
    i = 0
    while i < len(events):
        size = draw(st.integers(1, max(1, min(6, len(events) - i))))
        piece = events[i : i + size]
        items.append(piece[0] if size == 1 and draw(st.booleans()) else piece)
        i += size
    return items


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=300, deadline=None)
@given(items=_split())
@example(  # tool JSON run across batches, rejected at the close in the middle of a batch
    items=[
        [START, PartStart(0, "tool_call", id="c", name="tool"), Delta(0, '{"k": ', "tool_json")],
        [Delta(0, "1", "tool_json"), PartStop(0), MessageStop()],
    ]
)
@example(  # the bad close mid-batch after a bare event
    items=[
        START,
        [
            PartStart(0, "tool_call", id="c", name="t"),
            Delta(0, "[", "tool_json"),
            PartStop(0),
            MessageStop(),
        ],
    ]
)
@example(  # repeated text lane, then a lane event for a closed lane inside one batch
    items=[[START, PartStart(0), Delta(0, "a"), Delta(0, "b"), PartStop(0), Delta(0, "c")]]
)
@example(items=[[Delta(0, "x", "thinking"), START]])  # thinking before the start, in a batch
def test_batched_verdicts_equal_the_per_event_run(items: list[Any]) -> None:
    events = flatten(items)
    oracle_progress = TurnProgress(lambda: 0.0)
    oracle = _Seen().run(events, oracle_progress)
    progress = TurnProgress(lambda: 0.0)
    seen = _Seen().run(items, progress)

    accepted = len(oracle.items)
    assert flatten(seen.items) == oracle.items
    assert seen.items == _expected_items(items, accepted)
    assert all(item for item in seen.items if isinstance(item, list))  # never an empty batch
    assert progress.events == oracle_progress.events == accepted
    assert seen.completed == oracle.completed
    assert [(type(e), str(e)) for e in seen.errors] == [(type(e), str(e)) for e in oracle.errors]
    if oracle.errors and isinstance(oracle.errors[0], TruncatedStreamError):
        assert seen.errors[0].events == oracle.errors[0].events == len(events)  # pyright: ignore[reportAttributeAccessIssue]
    assert progress.shadow.completed == oracle_progress.shadow.completed
    assert progress.shadow.started == oracle_progress.shadow.started
    assert progress.shadow.has_partial_data == oracle_progress.shadow.has_partial_data
    assert progress.shadow.usage == oracle_progress.shadow.usage


test_batched_verdicts_equal_the_per_event_run_briefly = briefly(
    test_batched_verdicts_equal_the_per_event_run, 60
)


# -- deadlines with batches ------------------------------------------------------------------


async def test_idle_timeout_counts_the_events_in_batches(clean: TestScheduler) -> None:
    first = [START, PartStart(0), Delta(0, "a")]
    second = [Delta(0, "b"), Delta(0, "c"), Delta(0, "d")]
    source = Tracked(clean, timeline([first, second], start=0.5, step=0.5, end=None))
    run = await drive(clean, source.observable.pipe(deadlines(2.0, 3.0, 2, scheduler=clean)))
    assert run.values == [first, second]
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.kind == "idle"
    assert run.error.events == 6  # two batches of 3, not 2 items
    assert run.error.consecutive == 2
    assert run.end_time == pytest.approx(1.0 + 2 * 3.0)  # measured from the last batch
    assert source.spans == [[0.0, pytest.approx(7.0)]]


async def test_mixed_single_events_and_batches_are_counted_as_events(
    clean: TestScheduler,
) -> None:
    items: list[Any] = [START, [PartStart(0), Delta(0, "a"), Delta(0, "b"), PartStop(0)], Ping()]
    source = clean.create_cold_observable(timeline(items, start=1.0, step=1.0, end=None))
    progress = TurnProgress(lambda: 0.0)
    run = await drive(
        clean,
        source.pipe(
            attempt_guard(progress), deadlines(5.0, 1.5, 1, progress=progress, scheduler=clean)
        ),
    )
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.kind == "idle"
    assert run.error.events == 6 == progress.events
    assert run.error.partial is True  # the closed text part, from the shared progress
    assert run.end_time == pytest.approx(3.0 + 1.5)


async def test_a_first_batch_switches_the_wait_to_per_event(clean: TestScheduler) -> None:
    source = clean.create_cold_observable(timeline([[START, PartStart(0)]], start=0.5, end=None))
    run = await drive(clean, source.pipe(deadlines(10.0, 1.0, 1, scheduler=clean)))
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.kind == "idle" and run.error.events == 2
    assert run.end_time == pytest.approx(1.5)  # not at 10 s


# -- retry_ladder ------------------------------------------------------------------------------


async def test_retry_ladder_without_progress_counts_a_batch_as_its_events(
    clean: TestScheduler,
) -> None:
    """``AttemptReset.events`` says how many events the failed attempt delivered: 6 in two
    batches, not 2 items."""
    from rxturn.errors import ReadError
    from rxturn.events import AttemptReset
    from rxturn.operators import retry_ladder
    from rxturn.resilience.policies import RetryPolicy

    attempts = iter(
        [
            timeline(
                [[START, PartStart(0), Delta(0, "a")], [Delta(0, "b"), Delta(0, "c"), PartStop(0)]],
                end=ReadError("reset"),
            ),
            timeline([[START, PartStart(0), PartStop(0), MessageStop()]]),
        ]
    )
    source = reactivex.defer(lambda _: clean.create_cold_observable(next(attempts)))
    run = await drive(clean, source.pipe(retry_ladder(RetryPolicy(max_retries=1), scheduler=clean)))
    (reset,) = [v for v in run.values if isinstance(v, AttemptReset)]
    assert reset.events == 6


async def test_an_empty_batch_is_no_event_for_the_deadlines(clean: TestScheduler) -> None:
    """A client of your own may emit ``[]``: the first-event wait must not end with it."""
    source = clean.create_cold_observable(timeline([[], []], step=1.0, end=None))
    run = await drive(clean, source.pipe(deadlines(3.0, 1.5, 1, scheduler=clean)))
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.kind == "first_event" and run.error.events == 0
    assert run.end_time == pytest.approx(3.0)


async def test_the_guard_drops_empty_batches(clean: TestScheduler) -> None:
    events = reply("one two")
    source = clean.create_cold_observable(timeline([[], events[:3], [], events[3:], []]))
    progress = TurnProgress(lambda: 0.0)
    run = await drive(clean, source.pipe(attempt_guard(progress)))
    assert run.values == [events[:3], events[3:]]
    assert run.completed and progress.events == len(events)


async def test_as_batches_never_hands_on_an_empty_batch(clean: TestScheduler) -> None:
    source = clean.create_cold_observable(timeline([[], START, [], [MessageStop()]]))
    run = await drive(clean, source.pipe(as_batches()))
    assert run.values == [[START], [MessageStop()]]
    assert run.completed
