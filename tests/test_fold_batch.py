"""``fold_batch`` against the one-event-at-a-time fold (hypothesis, differential).

``fold_batch`` skips building intermediate states for runs of hot-lane deltas. Whatever the
batching, it must reach the state ``fold_handler`` reaches event by event — the same message,
the same public fields, the same error — and must never disturb a state someone else holds.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slow_params import briefly

from rxturn.errors import RxturnError
from rxturn.events import (
    AttemptReset,
    Delta,
    Fallback,
    HandlerEvent,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    Ping,
)
from rxturn.fold import INITIAL_STATE, TurnState, fold_batch, fold_handler, fold_item
from rxturn.messages import Message, TextPart, Usage

INDICES = st.integers(min_value=0, max_value=2)

events = st.one_of(
    st.builds(
        PartStart,
        index=INDICES,
        kind=st.sampled_from(["text", "thinking", "tool_call"]),
        id=st.sampled_from(["t1", "t2"]),
        name=st.sampled_from(["lookup", ""]),
    ),
    # text and tool JSON, weighted: runs of deltas are what fold_batch shortcuts
    *[
        st.builds(
            Delta,
            index=INDICES,
            text=st.sampled_from(["", "a", "bc", '{"k":', "1}", "[1"]),
            kind=st.sampled_from(["text", "text", "tool_json", "thinking"]),
        )
    ]
    * 4,
    st.builds(PartStop, index=st.one_of(st.none(), INDICES)),
    st.builds(
        MessageDelta,
        stop_reason=st.sampled_from([None, "max_tokens", "tool_use", "weird"]),
        usage=st.one_of(
            st.none(),
            st.builds(Usage, input_tokens=st.integers(0, 9), output_tokens=st.integers(0, 9)),
        ),
    ),
    st.just(Ping()),
    st.just(AttemptReset(attempt=2, reason="dropped")),
    st.just(Fallback(Message(id="r", content=(TextPart("rescued"),)))),
)
turns = st.lists(events, max_size=60).map(
    lambda body: [MessageStart(id="m", model="x"), *body, MessageStop()]
)


def outcome(step: Any, state: TurnState, items: list[Any]) -> tuple[Any, ...]:
    """What a consumer can observe after folding ``items`` with ``step``: public fields and
    the message, or the error's type and text."""
    try:
        for item in items:
            state = step(state, item)
        return (
            state.id,
            state.model,
            state.started,
            state.completed,
            state.usage,
            state.stop_reason,
            state.open_lanes,
            state.has_partial_data,
            state.message(),
        )
    except RxturnError as error:
        return (type(error), str(error))


def split(seq: list[HandlerEvent], cuts: list[int]) -> list[list[HandlerEvent]]:
    bounds = sorted({min(c, len(seq)) for c in cuts} | {0, len(seq)})
    return [seq[a:b] for a, b in pairwise(bounds)]


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=400, deadline=None)
@given(turns, st.lists(st.integers(0, 70), max_size=12))
def test_any_batching_folds_like_one_event_at_a_time(
    seq: list[HandlerEvent], cuts: list[int]
) -> None:
    expected = outcome(fold_handler, INITIAL_STATE, seq)
    assert outcome(fold_batch, INITIAL_STATE, split(seq, cuts)) == expected
    assert outcome(fold_batch, INITIAL_STATE, [seq]) == expected


test_any_batching_folds_like_one_event_at_a_time_briefly = briefly(
    test_any_batching_folds_like_one_event_at_a_time, 60
)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=200, deadline=None)
@given(turns, st.integers(0, 60), turns)
def test_a_batch_never_disturbs_a_state_someone_else_holds(
    seq: list[HandlerEvent], at: int, other: list[HandlerEvent]
) -> None:
    prefix, rest = seq[:at], seq[at:]
    try:
        held = fold_batch(INITIAL_STATE, prefix)
    except RxturnError:
        return
    before = outcome(fold_handler, held, [])
    alternative = outcome(fold_batch, held, [other[1:]])  # a fork from the same state
    assert outcome(fold_handler, held, []) == before
    assert outcome(fold_batch, held, [rest]) == outcome(fold_handler, held, rest)
    assert outcome(fold_batch, held, [other[1:]]) == alternative
    assert outcome(fold_handler, held, []) == before


test_a_batch_never_disturbs_a_state_someone_else_holds_briefly = briefly(
    test_a_batch_never_disturbs_a_state_someone_else_holds, 40
)


def test_a_hot_run_appends_without_rebuilding_the_state() -> None:
    start = fold_batch(INITIAL_STATE, [MessageStart(id="m"), PartStart(0), Delta(0, "a")])
    after = fold_batch(start, [Delta(0, "b"), Delta(0, "c")])
    assert after.message().content == (TextPart("abc"),)
    assert start.message().content == (TextPart("a"),)  # the held state still sees its prefix
    assert fold_batch(after, []) is after  # an empty batch changes nothing
    # two forks of one held state, both continuing its hot lane: neither sees the other
    fork = fold_batch(start, [Delta(0, "x"), Delta(0, "y")])
    assert fork.message().content == (TextPart("axy"),)
    assert after.message().content == (TextPart("abc"),)


def test_an_error_mid_batch_is_the_fold_s_error() -> None:
    seq: list[HandlerEvent] = [
        MessageStart(id="m"),
        PartStart(0, "tool_call", id="t", name="lookup"),
        Delta(0, '{"a":', "tool_json"),
        Delta(0, "oops", "tool_json"),
        PartStop(0),
    ]
    with pytest.raises(RxturnError) as one_by_one:
        outcome_state = INITIAL_STATE
        for event in seq:
            outcome_state = fold_handler(outcome_state, event)
    with pytest.raises(type(one_by_one.value), match="lookup"):
        fold_batch(INITIAL_STATE, seq)


def test_fold_item_takes_single_items_and_batches() -> None:
    state = fold_item(INITIAL_STATE, MessageStart(id="m"))
    state = fold_item(state, [PartStart(0), Delta(0, "x")])
    state = fold_item(state, Delta(0, "y"))
    assert state.message().content == (TextPart("xy"),)
    assert fold_item(state, AttemptReset(attempt=2, reason="r")) is INITIAL_STATE
