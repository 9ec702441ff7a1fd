"""The fold (docs/behaviour.md §1 case by case, §6), its purity, and its cost model.

Expected values come from the rules of docs/behaviour.md §1 and §6, from jiter (the official
SDK's partial parser) or from an independent model of a generated event script — never from
running the fold itself.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jiter
import msgspec
import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import operators as ops
from slow_params import briefly

from rxturn.errors import ConfigError, InvalidToolInputError, StreamProtocolError
from rxturn.events import (
    AttemptReset,
    Delta,
    Fallback,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    Ping,
    StreamEvent,
)
from rxturn.fold import (
    INITIAL_STATE,
    TurnState,
    fold,
    fold_batch,
    fold_events,
    fold_handler,
    initial_state,
)
from rxturn.messages import (
    Message,
    StopReason,
    TextPart,
    ToolCallPart,
    Usage,
    message_to_json,
)

START = MessageStart(id="msg_1", model="model-x")


def folded(*events: StreamEvent) -> TurnState:
    return fold_events([START, *events])


def text_lane(index: int, *chunks: str) -> list[StreamEvent]:
    return [PartStart(index, "text"), *(Delta(index, c) for c in chunks), PartStop(index)]


def tool_lane(index: int, call_id: str, name: str, *chunks: str) -> list[StreamEvent]:
    return [
        PartStart(index, "tool_call", id=call_id, name=name),
        *(Delta(index, c, kind="tool_json") for c in chunks),
        PartStop(index),
    ]


# -- docs/behaviour.md §1, case by case ------------------------------------------------------------


class TestReferenceChecklist:
    def test_stop_reason_from_api_str(self) -> None:
        cases = {
            "tool_call": StopReason.TOOL_CALL,
            "tool_use": StopReason.TOOL_CALL,
            "max_tokens": StopReason.MAX_TOKENS,
            "end_turn": StopReason.END_TURN,
            "stop_sequence": StopReason.STOP_SEQUENCE,
        }
        for spelling, reason in cases.items():
            assert StopReason.parse(spelling) is reason
            assert folded(MessageDelta(stop_reason=spelling)).stop_reason is reason
        assert StopReason.parse("unknown") is None

    def test_stop_reason_to_api_str_and_should_continue(self) -> None:
        assert [r.value for r in StopReason] == [
            "end_turn",
            "tool_call",
            "max_tokens",
            "stop_sequence",
            "refusal",  # added for refusals (docs/wire-formats.md)
        ]
        assert [r for r in StopReason if r.continues_loop] == [StopReason.TOOL_CALL]

    def test_usage_and_default(self) -> None:
        assert Usage(input_tokens=100, output_tokens=50).total_tokens == 150
        assert Usage().total_tokens == 0

    def test_text_message(self) -> None:
        message = folded(*text_lane(0, "Hello", " world"), MessageStop()).message()
        assert message.content == (TextPart("Hello world"),)

    def test_tool_call(self) -> None:
        message = folded(*tool_lane(0, "call_1", "search", '{"q":"rust"}')).message()
        assert message.content == (ToolCallPart("call_1", "search", {"q": "rust"}),)

    def test_interleaved_tool_calls(self) -> None:
        state = folded(
            PartStart(0, "tool_call", id="a", name="first"),
            PartStart(1, "tool_call", id="b", name="second"),
            Delta(0, '{"msg":', kind="tool_json"),
            Delta(1, '{"q":', kind="tool_json"),
            Delta(0, '"a"}', kind="tool_json"),
            Delta(1, '"b"}', kind="tool_json"),
            PartStop(None),
            PartStop(None),
        )
        assert state.message().content == (
            ToolCallPart("a", "first", {"msg": "a"}),
            ToolCallPart("b", "second", {"q": "b"}),
        )
        assert state.open_lanes == 0

    def test_empty(self) -> None:
        assert INITIAL_STATE.message().content == ()
        assert fold_events([]).message().content == ()

    def test_usage(self) -> None:
        usage = Usage(input_tokens=10, output_tokens=5)
        assert folded(MessageDelta(usage=usage)).usage == usage

    def test_message_delta_overwrites_usage(self) -> None:
        first, second = Usage(input_tokens=10, output_tokens=5), Usage(input_tokens=1)
        assert folded(MessageDelta(usage=first), MessageDelta(usage=second)).usage == second
        # overwrite even with None (docs/behaviour.md §1 rule 5)
        assert folded(MessageDelta(usage=first), MessageDelta(usage=None)).usage is None

    def test_invalid_tool_json_carries_raw_verbatim(self) -> None:
        raw = '{"a": 1,, "b": "\u00e9\\n"'
        with pytest.raises(InvalidToolInputError) as info:
            folded(*tool_lane(0, "c", "t", raw[:5], raw[5:]))
        assert info.value.raw == raw
        assert f"raw_len={len(raw)}" in str(info.value)
        assert "invalid tool input JSON" in str(info.value)
        assert "'t'" in str(info.value)  # names the tool

    def test_tool_call_empty_input(self) -> None:
        message = folded(*tool_lane(0, "c", "noargs")).message()
        assert message.content == (ToolCallPart("c", "noargs", {}),)

    def test_ignores_delta_with_mismatched_index(self) -> None:
        state = folded(PartStart(0, "text"), Delta(5, "lost"), Delta(0, "kept"), PartStop(0))
        assert state.message().content == (TextPart("kept"),)

    def test_ignores_input_json_with_mismatched_index(self) -> None:
        state = folded(
            PartStart(0, "tool_call", id="c", name="t"),
            Delta(1, '{"x": 1}', kind="tool_json"),
            PartStop(0),
        )
        assert state.message().content == (ToolCallPart("c", "t", {}),)

    def test_text_lane_receiving_only_tool_json_yields_nothing(self) -> None:
        state = folded(PartStart(0, "text"), Delta(0, '{"x": 1}', kind="tool_json"), PartStop(0))
        assert state.message().content == ()

    def test_legacy_tool_call_delta_string_value(self) -> None:
        # A tool call's arguments arrive as string fragments of JSON (a Delta carries only
        # strings), appended like any other tool_json fragment.
        state = folded(*tool_lane(0, "c", "t", '{"k":', '"v"}'))
        assert state.message().tool_calls[0].input == {"k": "v"}

    def test_legacy_tool_call_delta_non_string_is_not_representable(self) -> None:
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert({"index": 0, "text": 5, "kind": "tool_json"}, Delta)

    def test_ping_is_a_no_op(self) -> None:
        state = folded(PartStart(0, "text"), Delta(0, "a"))
        assert fold(state, Ping()) is state
        assert fold(INITIAL_STATE, Ping()) is INITIAL_STATE  # allowed before message_start

    def test_message_stop_is_a_no_op_on_content(self) -> None:
        state = folded(*text_lane(0, "a"))
        after = fold(state, MessageStop())
        assert after.message() == state.message()
        assert after.completed and not state.completed

    def test_multiple_text_parts(self) -> None:
        state = folded(*text_lane(0, "one"), *text_lane(1, "two"), *text_lane(2, "three"))
        assert state.message().content == (TextPart("one"), TextPart("two"), TextPart("three"))

    def test_drops_thinking_not_into_text(self) -> None:
        state = folded(
            PartStart(0, "thinking"),
            Delta(0, "hmm", kind="thinking"),
            PartStop(0),
            PartStart(1, "text"),
            Delta(1, "hmm", kind="thinking"),  # thinking aimed at a text lane: not text either
            Delta(1, "answer"),
            PartStop(1),
        )
        assert state.message().content == (TextPart("answer"),)
        assert "hmm" not in message_to_json(state.message()).decode()

    def test_thinking_delta_serde_roundtrip(self) -> None:
        for text in ("hmm", ""):
            delta = Delta(0, text, kind="thinking")
            encoded = msgspec.json.encode(delta)
            assert json.loads(encoded) == {
                "type": "delta",
                "index": 0,
                "text": text,
                "kind": "thinking",
            }
            assert msgspec.json.decode(encoded, type=StreamEvent) == delta


# -- further rules: the message (§6), batches ----------------------------------------------------


class TestOrdering:
    @pytest.mark.parametrize(
        ("event", "name"),
        [
            (PartStart(0), "part_start"),
            (Delta(0, "x"), "delta"),
            (Delta(0, "x", kind="thinking"), "delta"),
            (PartStop(0), "part_stop"),
            (MessageDelta(stop_reason="end_turn"), "message_delta"),
            (MessageStop(), "message_stop"),
        ],
        ids=lambda v: v if isinstance(v, str) else type(v).__name__,
    )
    def test_event_before_message_start_is_a_protocol_error(
        self, event: StreamEvent, name: str
    ) -> None:
        with pytest.raises(StreamProtocolError, match=f"{name} before message_start"):
            fold(INITIAL_STATE, event)

    def test_message_start_sets_id_and_model_once(self) -> None:
        state = fold(INITIAL_STATE, START)
        assert (state.id, state.model, state.started) == ("msg_1", "model-x", True)
        again = fold(state, MessageStart(id="other", model="other"))
        assert (again.id, again.model) == ("msg_1", "model-x")


class TestLanes:
    def test_part_stop_none_closes_the_oldest_open_lane(self) -> None:
        state = folded(
            PartStart(0, "text"), PartStart(0, "text"), Delta(0, "first"), PartStop(None)
        )
        # the delta went to the oldest lane with index 0, and PartStop(None) closed that one
        assert state.has_partial_data and state.open_lanes == 1
        assert state.message().content == (TextPart("first"),)

    def test_part_stop_index_closes_the_oldest_lane_with_that_index_whatever_its_kind(
        self,
    ) -> None:
        state = folded(
            PartStart(3, "tool_call", id="c", name="t"),
            PartStart(3, "text"),
            Delta(3, "txt"),
            Delta(3, "{}", kind="tool_json"),
            PartStop(3),
        )
        assert state.open_lanes == 1
        assert state.has_partial_data  # the tool lane (opened first) closed
        assert state.message().content == (ToolCallPart("c", "t", {}), TextPart("txt"))

    def test_part_stop_without_open_lane_is_a_no_op(self) -> None:
        state = folded(*text_lane(0, "a"))
        assert fold(state, PartStop(None)) is state
        assert fold(state, PartStop(7)) is state

    def test_tool_lane_without_name_yields_nothing_and_is_not_parsed(self) -> None:
        state = folded(*tool_lane(0, "c", "", "not json"))
        assert state.message().content == ()
        assert not state.has_partial_data

    def test_thinking_and_empty_text_lanes_yield_nothing(self) -> None:
        state = folded(PartStart(0, "thinking"), PartStop(0), *text_lane(1))
        assert state.message().content == ()
        assert not state.has_partial_data

    def test_delta_goes_to_the_first_matching_kind_at_that_index(self) -> None:
        state = folded(
            PartStart(0, "thinking"),
            PartStart(0, "text"),
            Delta(0, "visible"),
            PartStop(None),
            PartStop(None),
        )
        assert state.message().content == (TextPart("visible"),)

    def test_parts_keep_open_order_whatever_the_close_order(self) -> None:
        state = folded(
            PartStart(0, "text"),
            PartStart(1, "tool_call", id="c", name="t"),
            Delta(0, "hello"),
            Delta(1, '{"a":1}', kind="tool_json"),
            PartStop(1),
            PartStop(0),
        )
        assert state.message().content == (TextPart("hello"), ToolCallPart("c", "t", {"a": 1}))

    def test_invalid_json_is_raised_by_the_closing_part_stop(self) -> None:
        state = folded(PartStart(0, "tool_call", id="c", name="t"), Delta(0, "{oops", "tool_json"))
        with pytest.raises(InvalidToolInputError):
            fold(state, PartStop(0))

    def test_has_partial_data_counts_completed_parts_only(self) -> None:
        state = folded(PartStart(0, "text"), Delta(0, "streaming"))
        assert not state.has_partial_data  # still open
        assert fold(state, PartStop(0)).has_partial_data
        assert folded(*tool_lane(0, "c", "t")).has_partial_data


class TestOpenLanesAtTheEnd:
    def test_open_text_lane_keeps_its_text(self) -> None:
        state = folded(PartStart(0, "text"), Delta(0, "cut off"), MessageStop())
        assert state.message().content == (TextPart("cut off"),)

    @pytest.mark.parametrize(
        "raw",
        [
            '{"filename": "taxes.txt", "lines": ["# GUIDE", "", "Filing',
            '{"a": 1, "b": [1, 2',
            '{"a": tru',
            '{"n": 1.',
            '{"k"',
            "[1, {",
        ],
    )
    def test_open_tool_lane_is_parsed_as_the_sdk_does(self, raw: str) -> None:
        state = folded(
            PartStart(0, "tool_call", id="c", name="t"),
            Delta(0, raw, kind="tool_json"),
            MessageDelta(stop_reason="max_tokens"),
            MessageStop(),
        )
        message = state.message()
        expected = jiter.from_json(raw.encode(), partial_mode=True)
        assert message.content == (ToolCallPart("c", "t", expected),)
        assert message.stop_reason is StopReason.MAX_TOKENS

    def test_open_tool_lane_without_json_gets_empty_input(self) -> None:
        state = folded(PartStart(0, "tool_call", id="c", name="t"), MessageStop())
        assert state.message().content == (ToolCallPart("c", "t", {}),)

    def test_open_tool_lane_with_unparseable_json_fails_at_message_stop(self) -> None:
        raw = '{"a": xyz'
        with pytest.raises(ValueError):
            jiter.from_json(raw.encode(), partial_mode=True)  # the SDK rejects it too
        state = folded(PartStart(0, "tool_call", id="c", name="t"), Delta(0, raw, "tool_json"))
        with pytest.raises(InvalidToolInputError) as info:
            fold(state, MessageStop())
        assert info.value.raw == raw
        with pytest.raises(InvalidToolInputError):
            state.message()


class TestStopReasonAndUsage:
    def test_end_turn_with_tool_calls_is_tool_call(self) -> None:
        state = folded(*tool_lane(0, "c", "t", "{}"), MessageDelta(stop_reason="end_turn"))
        assert state.stop_reason is StopReason.END_TURN
        assert state.message().stop_reason is StopReason.TOOL_CALL

    def test_other_reasons_are_kept_even_with_tool_calls(self) -> None:
        state = folded(*tool_lane(0, "c", "t", "{}"), MessageDelta(stop_reason="max_tokens"))
        assert state.message().stop_reason is StopReason.MAX_TOKENS

    @pytest.mark.parametrize("unknown", ["pause_turn", "model_context_window_exceeded", "", None])
    def test_unrecognised_stop_reason_keeps_the_previous_one(self, unknown: str | None) -> None:
        assert folded(MessageDelta(stop_reason=unknown)).stop_reason is StopReason.END_TURN
        state = folded(MessageDelta(stop_reason="max_tokens"), MessageDelta(stop_reason=unknown))
        assert state.stop_reason is StopReason.MAX_TOKENS

    def test_default_is_end_turn_and_no_usage(self) -> None:
        message = folded(MessageStop()).message()
        assert message.stop_reason is StopReason.END_TURN
        assert message.usage is None


class TestHandlerItems:
    def test_attempt_reset_starts_over(self) -> None:
        state = folded(*text_lane(0, "stale"))
        assert fold_handler(state, AttemptReset(attempt=2, reason="boom")) is INITIAL_STATE

    def test_fallback_is_adopted_wholesale(self) -> None:
        rescued = Message(
            id="r",
            model="backup",
            content=(TextPart("saved"),),
            stop_reason=StopReason.MAX_TOKENS,
            usage=Usage(input_tokens=3, output_tokens=4),
        )
        state = fold_handler(folded(*text_lane(0, "partial")), Fallback(rescued))
        assert state.message() is rescued
        assert (state.id, state.model, state.stop_reason, state.usage) == (
            "r",
            "backup",
            StopReason.MAX_TOKENS,
            rescued.usage,
        )
        assert state.completed and state.has_partial_data

    @pytest.mark.parametrize("message", [None, {"role": "assistant", "content": "x"}, "x"])
    def test_a_fallback_without_a_message_is_refused_where_it_is_built(
        self, message: object
    ) -> None:
        # before: Fallback(None) was built, and fold_handler raised AttributeError ('NoneType'
        # object has no attribute 'id')
        with pytest.raises(ConfigError, match=r"^Fallback\.message must be a Message, got "):
            Fallback(message)  # pyright: ignore[reportArgumentType]

    def test_stream_events_pass_through(self) -> None:
        events = [START, *text_lane(0, "a", "b"), MessageStop()]
        state = INITIAL_STATE
        for event in events:
            state = fold_handler(state, event)
        assert state.message().content == (TextPart("ab"),)


# -- purity --------------------------------------------------------------------------------------


def test_old_states_never_change() -> None:
    events = [
        START,
        *text_lane(0, "a", "b"),
        *tool_lane(1, "c", "t", '{"x":', "1}"),
        PartStart(2, "text"),
        Delta(2, "tail"),
        MessageDelta(stop_reason="end_turn", usage=Usage(input_tokens=1)),
        MessageStop(),
    ]
    states = [INITIAL_STATE]
    snapshots = [message_to_json(INITIAL_STATE.message())]
    for event in events:
        states.append(fold(states[-1], event))
        snapshots.append(message_to_json(states[-1].message()))
    assert [message_to_json(s.message()) for s in states] == snapshots
    assert INITIAL_STATE._frags is None and INITIAL_STATE._head.parts is None


def test_a_one_lane_reply_keeps_no_runs_log() -> None:
    """The run of the first lane is implied: a reply whose text is one lane, the usual reply,
    folds without the runs log (one list fewer per fold kept alive while a turn streams)."""
    state = folded(*text_lane(0, "Hel", "lo"), MessageStop())
    assert state.message().content == (TextPart("Hello"),)
    assert state._head.runs is None


def test_forks_on_either_side_of_the_second_run_see_their_own_texts() -> None:
    """A state still in its implied first run, continued twice: once by a second lane (the first
    run is written out), once by the first lane alone; each sees only its own fragments."""
    base = folded(PartStart(0, "text"), PartStart(1, "text"), Delta(0, "one "))
    switched = fold_events([Delta(1, "two"), Delta(0, "three"), PartStop(0), PartStop(1)], base)
    alone = fold_events([Delta(0, "again"), PartStop(0), PartStop(1)], base)
    assert switched.message().content == (TextPart("one three"), TextPart("two"))
    assert alone.message().content == (TextPart("one again"),)
    assert base.message().content == (TextPart("one "),)


def test_two_continuations_forked_from_one_state_do_not_interfere() -> None:
    base = folded(PartStart(0, "text"), Delta(0, "shared "))
    left = [Delta(0, "left"), PartStop(0), *tool_lane(1, "l", "tl", '{"side":"l"}')]
    right = [Delta(0, "right!"), PartStop(0), *text_lane(1, "more")]
    a, b = base, base
    for ea, eb in zip(left, right, strict=False):  # alternate: each append lands on a shared log
        a, b = fold(a, ea), fold(b, eb)
    for eb in right[len(left) :]:
        b = fold(b, eb)
    assert a.message().content == (TextPart("shared left"), ToolCallPart("l", "tl", {"side": "l"}))
    assert b.message().content == (TextPart("shared right!"), TextPart("more"))
    assert base.message().content == (TextPart("shared "),)
    assert not base.has_partial_data


# -- properties over generated scripts -----------------------------------------------------------


@dataclass(frozen=True)
class _LaneScript:
    kind: str  # "text" | "thinking" | "tool_call"
    call_id: str
    name: str
    payload: str  # text, or the tool input's JSON encoding
    value: Any  # the tool input (tool lanes)


def _extend_json_values(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # A named function: hypothesis cannot read a multi-line lambda's source.
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    _extend_json_values,
    max_leaves=6,
)


@st.composite
def _lane_scripts(draw: st.DrawFn) -> list[_LaneScript]:
    lanes: list[_LaneScript] = []
    for number in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["text", "thinking", "tool_call"]))
        if kind == "tool_call":
            value = draw(st.dictionaries(st.text(max_size=5), _json_values, max_size=3))
            lanes.append(
                _LaneScript(kind, f"call_{number}", f"tool_{number}", json.dumps(value), value)
            )
        else:
            lanes.append(_LaneScript(kind, "", "", draw(st.text(max_size=20)), None))
    return lanes


def _split(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=6)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def _pieces(draw: st.DrawFn, text: str) -> list[str]:
    return _split(draw, text)


@st.composite
def _scripted_events(draw: st.DrawFn) -> tuple[list[_LaneScript], list[StreamEvent]]:
    """Events for the lanes: each lane's own order kept, lanes interleaved at random, lanes
    opened in script order (so the expected part order is the script order)."""
    lanes = draw(_lane_scripts())
    delta_kind = {"text": "text", "thinking": "thinking", "tool_call": "tool_json"}
    queues: list[list[StreamEvent]] = []
    for index, lane in enumerate(lanes):
        start = PartStart(index, lane.kind, id=lane.call_id, name=lane.name)  # pyright: ignore[reportArgumentType]
        deltas = [
            Delta(index, piece, kind=delta_kind[lane.kind])  # pyright: ignore[reportArgumentType]
            for piece in _split(draw, lane.payload)
        ]
        queues.append([start, *deltas, PartStop(index)])
    events: list[StreamEvent] = [START]
    started = 0
    while any(queues):
        ready = [i for i, q in enumerate(queues) if q and (i < started or i == started)]
        pick = draw(st.sampled_from(ready))
        event = queues[pick].pop(0)
        if isinstance(event, PartStart):
            started += 1
        events.append(event)
    events.append(MessageDelta(stop_reason=draw(st.sampled_from(["end_turn", "max_tokens"]))))
    events.append(MessageStop())
    return lanes, events


def _expected_content(lanes: list[_LaneScript]) -> tuple[Any, ...]:
    parts: list[Any] = []
    for lane in lanes:
        if lane.kind == "text" and lane.payload:
            parts.append(TextPart(lane.payload))
        elif lane.kind == "tool_call":
            parts.append(ToolCallPart(lane.call_id, lane.name, lane.value))
    return tuple(parts)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=200, deadline=None)
@given(_scripted_events())
def test_fold_matches_an_independent_model_of_the_script(
    script: tuple[list[_LaneScript], list[StreamEvent]],
) -> None:
    lanes, events = script
    message = fold_events(events).message()
    assert message.content == _expected_content(lanes)
    has_tools = any(lane.kind == "tool_call" for lane in lanes)
    declared = StopReason.parse(events[-2].stop_reason)  # pyright: ignore[reportAttributeAccessIssue]
    expected_reason = (
        StopReason.TOOL_CALL if has_tools and declared is StopReason.END_TURN else declared
    )
    assert message.stop_reason is expected_reason


test_fold_matches_an_independent_model_of_the_script_briefly = briefly(
    test_fold_matches_an_independent_model_of_the_script, 40
)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=100, deadline=None)
@given(st.data())
def test_fold_is_independent_of_how_deltas_are_chunked(data: st.DataObject) -> None:
    lanes = data.draw(_lane_scripts())
    messages = []
    for _ in range(2):
        events: list[StreamEvent] = [START]
        for index, lane in enumerate(lanes):
            kind = {"text": "text", "thinking": "thinking", "tool_call": "tool_json"}[lane.kind]
            events.append(PartStart(index, lane.kind, id=lane.call_id, name=lane.name))  # pyright: ignore[reportArgumentType]
            pieces = data.draw(_pieces(lane.payload))
            events.extend(Delta(index, piece, kind=kind) for piece in pieces)  # pyright: ignore[reportArgumentType]
            events.append(PartStop(index))
        events.append(MessageStop())
        messages.append(message_to_json(fold_events(events).message()))
    assert messages[0] == messages[1]


test_fold_is_independent_of_how_deltas_are_chunked_briefly = briefly(
    test_fold_is_independent_of_how_deltas_are_chunked, 25
)


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=100, deadline=None)
@given(_scripted_events(), st.integers(0, 10_000))
def test_forking_at_any_point_matches_a_straight_fold(
    script: tuple[list[_LaneScript], list[StreamEvent]], where: int
) -> None:
    _, events = script
    cut = where % (len(events) + 1)
    prefix = fold_events(events[:cut])
    # a decoy continuation appends different fragments to the shared logs first
    decoy = prefix
    try:
        for event in events[cut : cut + 4]:
            if isinstance(event, Delta):
                event = Delta(event.index, "DECOY" + event.text, kind=event.kind)
            decoy = fold(decoy, event)
    except InvalidToolInputError:
        pass  # the decoy's JSON is garbage; its fragments are in the log all the same
    real = fold_events(events[cut:], prefix)
    assert message_to_json(real.message()) == message_to_json(fold_events(events).message())


test_forking_at_any_point_matches_a_straight_fold_briefly = briefly(
    test_forking_at_any_point_matches_a_straight_fold, 25
)


_SPEC_STOP_REASONS = {"end_turn", "tool_call", "max_tokens", "stop_sequence"}


@pytest.mark.slow  # the long run; the inner loop runs it briefly, below
@settings(max_examples=100, deadline=None)
@given(
    _scripted_events(),
    st.one_of(
        st.none(), st.builds(Usage, input_tokens=st.integers(0, 9), output_tokens=st.integers(0, 9))
    ),
)
def test_message_json_has_the_spec_shape(
    script: tuple[list[_LaneScript], list[StreamEvent]], usage: Usage | None
) -> None:
    _, events = script
    events = [*events[:-1], MessageDelta(usage=usage), events[-1]]
    document = json.loads(message_to_json(fold_events(events).message()))
    assert list(document) == ["id", "model", "role", "content", "stop_reason", "usage"]
    assert (document["id"], document["model"], document["role"]) == (
        "msg_1",
        "model-x",
        "assistant",
    )
    assert document["stop_reason"] in _SPEC_STOP_REASONS
    if usage is None:
        assert document["usage"] is None
    else:
        assert document["usage"] == {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
        }
    for part in document["content"]:
        if part["type"] == "text":
            assert set(part) == {"type", "text"} and part["text"]
        else:
            assert part["type"] == "tool_call"
            assert set(part) == {"type", "id", "name", "input"}


test_message_json_has_the_spec_shape_briefly = briefly(test_message_json_has_the_spec_shape, 25)


# -- cost model ----------------------------------------------------------------------------------


def test_deltas_append_in_place_and_never_copy_the_text() -> None:
    state = folded(PartStart(0, "text"))
    log_ids = set()
    for i in range(1000):
        state = fold(state, Delta(0, f"{i},"))
        log_ids.add(id(state._frags))
    assert len(log_ids) == 1  # one shared log, appended in place: O(1) per delta
    assert state.message().text == "".join(f"{i}," for i in range(1000))


@pytest.mark.parametrize(
    "fold_with",
    [fold, fold_handler, fold_batch],
    ids=["fold", "fold_handler", "fold_batch"],
)
def test_a_scan_without_its_seed_says_to_start_from_the_initial_state(
    fold_with: Callable[[Any, Any], Any],
) -> None:
    """``ops.scan(fold)`` hands the fold its first item as the state: the error says what to
    seed the scan with, where it was an AttributeError about ``_head``."""
    events: list[Any] = [MessageStart(id="m"), PartStart(0), Delta(0, "Hi"), MessageStop()]
    if fold_with is fold_batch:
        events = [[event] for event in events]
    with pytest.raises(TypeError, match=r"state must be a TurnState .*INITIAL_STATE"):
        reactivex.from_iterable(events).pipe(ops.scan(fold_with), ops.last()).run()
    for state in (None, {}, AttemptReset(attempt=2, reason="x")):
        with pytest.raises(TypeError, match="state must be a TurnState"):
            fold_handler(state, AttemptReset(attempt=2, reason="x"))  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="got str"):
        fold_events([MessageStart(id="m")], state="x")  # pyright: ignore[reportArgumentType]


def test_initial_state_keep_thinking_must_be_a_bool() -> None:
    with pytest.raises(ConfigError, match=r"keep_thinking=\.\.\.\) must be True or False"):
        initial_state(keep_thinking="no")  # pyright: ignore[reportArgumentType]
    assert initial_state(keep_thinking=False) is INITIAL_STATE
    assert initial_state(keep_thinking=True).keep_thinking
