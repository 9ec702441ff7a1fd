"""``attempt_guard``: forward only what the fold accepts; truncation fails the attempt.

The oracle for the verdicts is :func:`rxturn.fold.fold` applied event by event (the guard's
shortcuts must never change what it decides).
"""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from hypothesis import example, given, settings
from reactivex.testing import TestScheduler
from slow_params import briefly

from operators.event_strategies import START, STREAMS
from rxturn.errors import InvalidToolInputError, StreamProtocolError, TruncatedStreamError
from rxturn.events import (
    Delta,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    StreamEvent,
)
from rxturn.fold import INITIAL_STATE, fold
from rxturn.messages import Usage
from rxturn.operators import TurnProgress, attempt_guard
from rxturn.testing.virtual import Tracked, drive, reply, timeline


async def test_forwards_a_complete_reply_unchanged(clean: TestScheduler) -> None:
    events = reply("one two three", usage=Usage(input_tokens=3, output_tokens=5))
    source = clean.create_cold_observable(timeline(events))
    progress = TurnProgress(lambda: 0.0)
    run = await drive(clean, source.pipe(attempt_guard(progress)))
    assert run.completed and run.error is None
    assert run.values == events
    assert progress.events == len(events)
    assert progress.attempts == 1
    assert progress.shadow.completed
    assert progress.shadow.usage == Usage(input_tokens=3, output_tokens=5)
    assert progress.partial


async def test_completion_without_message_stop_is_truncation(clean: TestScheduler) -> None:
    events = reply("cut short")[:-1]  # everything but MessageStop
    source = clean.create_cold_observable(timeline(events))
    run = await drive(clean, source.pipe(attempt_guard()))
    assert run.values == events
    assert isinstance(run.error, TruncatedStreamError)
    assert run.error.events == len(events)
    assert "without a terminal event" in str(run.error)


async def test_invalid_tool_json_fails_at_the_closing_event_which_is_not_forwarded(
    clean: TestScheduler,
) -> None:
    good = [
        MessageStart(id="m", model="x"),
        PartStart(0, "tool_call", id="call_1", name="lookup"),
        Delta(0, '{"q": ', "tool_json"),
        Delta(0, "oops", "tool_json"),
    ]
    bad = PartStop(0)
    source = Tracked(clean, timeline([*good, bad, MessageDelta("tool_call"), MessageStop()]))
    run = await drive(clean, source.observable.pipe(attempt_guard()))
    assert run.values == good
    assert isinstance(run.error, InvalidToolInputError)
    assert run.error.raw == '{"q": oops'
    assert "invalid tool input JSON" in str(run.error)
    # the attempt's subscription ended at the bad event (0.05 s), not at the stream's end
    assert source.spans == [[0.0, 0.05]]


async def test_a_lane_event_before_message_start_is_rejected(clean: TestScheduler) -> None:
    source = clean.create_cold_observable(timeline([PartStart(0), Delta(0, "x")]))
    run = await drive(clean, source.pipe(attempt_guard()))
    assert run.values == []
    assert isinstance(run.error, StreamProtocolError)


async def test_each_subscription_starts_a_fresh_shadow(clean: TestScheduler) -> None:
    progress = TurnProgress(lambda: 0.0)
    first = clean.create_cold_observable(timeline(reply("a b")[:4], end=TruncatedStreamError(4)))
    await drive(clean, first.pipe(attempt_guard(progress)))
    assert progress.attempts == 1 and progress.events == 4
    assert progress.shadow.started
    second = reactivex.from_iterable(reply("c"))
    await drive(clean, second.pipe(attempt_guard(progress)))
    assert progress.attempts == 2
    assert progress.events == len(reply("c"))
    assert progress.earlier_events == 4
    assert progress.turn_events == 4 + len(reply("c"))


# -- property: the guard decides exactly what the fold decides ------------------------------------


def _oracle(events: list[StreamEvent]) -> tuple[int, Any, Any]:
    """(events accepted, final or failing state, error type or None) by plain folding."""
    state = INITIAL_STATE
    for accepted, event in enumerate(events):
        try:
            state = fold(state, event)
        except Exception as error:
            return accepted, state, type(error)
    return len(events), state, None if state.completed else TruncatedStreamError


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=300, deadline=None)
@given(events=STREAMS)
@example(  # an empty text delta must not let the next one skip the fold
    events=[START, PartStart(0), Delta(0, ""), Delta(0, "a"), PartStop(0), MessageStop()]
)
@example(  # a tool-JSON run interrupted by another lane's event, then resumed
    events=[
        START,
        PartStart(1, "tool_call", id="c", name="tool"),
        Delta(1, '{"k": ', "tool_json"),
        Delta(1, "1", "tool_json"),
        PartStart(0),
        Delta(1, "}", "tool_json"),
        PartStop(1),
        MessageStop(),
    ]
)
@example(  # a repeated index after the lane it pointed at closed and another opened
    events=[
        START,
        PartStart(0),
        Delta(0, "a"),
        PartStop(0),
        PartStart(0),
        Delta(0, "b"),
        Delta(0, "c"),
        PartStop(0),
        MessageStop(),
    ]
)
@example(events=[Delta(0, "x", "thinking"), START])  # thinking before the start still fails
def test_guard_verdicts_equal_the_fold(events: list[StreamEvent]) -> None:
    progress = TurnProgress(lambda: 0.0)
    seen: list[StreamEvent] = []
    errors: list[Exception] = []
    done: list[bool] = []
    reactivex.from_iterable(events).pipe(attempt_guard(progress)).subscribe(
        seen.append, errors.append, lambda: done.append(True)
    )
    accepted, state, error_type = _oracle(events)
    assert seen == events[:accepted]
    assert progress.events == accepted
    if error_type is None:
        assert done == [True] and errors == []
    else:
        assert done == [] and [type(e) for e in errors] == [error_type]
    assert progress.shadow.has_partial_data == state.has_partial_data
    assert progress.shadow.usage == state.usage
    assert progress.shadow.completed == state.completed
    assert progress.shadow.started == state.started


test_guard_verdicts_equal_the_fold_briefly = briefly(test_guard_verdicts_equal_the_fold, 60)
