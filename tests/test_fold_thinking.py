"""The fold's ``keep_thinking``: thinking, signatures and redacted thinking in the message."""

from __future__ import annotations

from rxturn.events import (
    AttemptReset,
    Delta,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    StreamEvent,
)
from rxturn.fold import INITIAL_STATE, fold_batch, fold_events, fold_handler, initial_state
from rxturn.messages import (
    RedactedThinkingPart,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    message_to_json,
)

EVENTS: list[StreamEvent] = [
    MessageStart("m", "x"),
    PartStart(0, "thinking"),
    Delta(0, "", "signature"),
    Delta(0, "Let me ", "thinking"),
    Delta(0, "think.", "thinking"),
    Delta(0, "sig-1", "signature"),
    Delta(0, "sig-2", "signature"),  # replaces, as the SDK does
    PartStop(0),
    PartStart(1, "thinking"),
    Delta(1, "", "thinking"),
    Delta(1, "opaque", "redacted_thinking"),
    PartStop(1),
    PartStart(2, "text"),
    Delta(2, "Hi"),
    PartStop(2),
    PartStart(3, "tool_call", "t1", "f"),
    Delta(3, '{"a": 1}', "tool_json"),
    PartStop(3),
    MessageDelta("tool_use"),
    MessageStop(),
]


def test_kept_in_block_order_with_the_last_signature() -> None:
    message = fold_events(EVENTS, keep_thinking=True).message()
    assert message.content == (
        ThinkingPart("Let me think.", "sig-2"),
        RedactedThinkingPart("opaque"),
        TextPart("Hi"),
        ToolCallPart("t1", "f", {"a": 1}),
    )
    assert message.stop_reason is StopReason.TOOL_CALL
    assert message_to_json(message).startswith(
        b'{"id":"m","model":"x","role":"assistant","content":[{"type":"thinking",'
        b'"thinking":"Let me think.","signature":"sig-2"},'
        b'{"type":"redacted_thinking","data":"opaque"},'
    )


def test_off_by_default_and_then_the_message_is_what_it_always_was() -> None:
    plain = fold_events(EVENTS).message()
    assert plain.content == (TextPart("Hi"), ToolCallPart("t1", "f", {"a": 1}))
    without_thinking = [
        e for e in EVENTS if not (hasattr(e, "index") and getattr(e, "index", None) in (0, 1))
    ]
    assert message_to_json(plain) == message_to_json(fold_events(without_thinking).message())
    assert fold_events(EVENTS, INITIAL_STATE) is not None
    assert not INITIAL_STATE.keep_thinking


def test_batches_and_single_events_agree() -> None:
    one_by_one = fold_events(EVENTS, keep_thinking=True).message()
    for size in (1, 2, 3, 7, len(EVENTS)):
        state = initial_state(keep_thinking=True)
        for start in range(0, len(EVENTS), size):
            state = fold_batch(state, EVENTS[start : start + size])
        assert state.message() == one_by_one


def test_attempt_reset_keeps_the_option() -> None:
    state = fold_events(EVENTS[:5], keep_thinking=True)
    reset = fold_handler(state, AttemptReset(attempt=2, reason="x"))
    assert reset.keep_thinking and reset.open_lanes == 0
    assert fold_events(EVENTS, reset).message().content[0] == ThinkingPart("Let me think.", "sig-2")
    assert fold_handler(fold_events(EVENTS[:5]), AttemptReset(2, "x")) is INITIAL_STATE


def test_open_thinking_lane_and_lane_id() -> None:
    events: list[StreamEvent] = [
        MessageStart("r", "x"),
        PartStart(0, "thinking", "rs_1"),
        Delta(0, "part", "thinking"),
    ]
    state = fold_events(events, keep_thinking=True)
    assert state.message().content == (ThinkingPart("part", None, "rs_1"),)
    assert not state.has_partial_data  # thinking is not an answer
    assert b'"id":"rs_1"' in message_to_json(state.message())


def test_signature_for_a_lane_that_is_not_open_is_dropped() -> None:
    events: list[StreamEvent] = [MessageStart("m"), Delta(5, "sig", "signature"), MessageStop()]
    assert fold_events(events, keep_thinking=True).message().content == ()


def test_kept_thinking_and_refusals_count_in_the_context_estimate() -> None:
    from rxturn.engine.context.tokens import TiktokenCounter
    from rxturn.messages import Message, RefusalPart

    counter = TiktokenCounter()
    plain = fold_events(EVENTS).message()
    kept = fold_events(EVENTS, keep_thinking=True).message()
    assert counter.count_messages([kept]) > counter.count_messages([plain])
    refused = Message(content=(RefusalPart("I can't help with that."),))
    assert counter.count_messages([refused]) > counter.count_messages([Message(content=())])
