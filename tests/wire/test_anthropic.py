"""The Anthropic Messages decoder: recorded streams, the SDK as oracle, the edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jiter
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from usage_oracle import anthropic_expected

from rxturn.errors import (
    APIStatusError,
    OverloadedError,
    ProviderStreamError,
    RateLimitError,
    StreamProtocolError,
)
from rxturn.events import (
    Delta,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    StreamEvent,
)
from rxturn.messages import StopReason, TextPart, ToolCallPart, Usage
from rxturn.wire import AnthropicDecoder, parse_anthropic_message

from ._support import ANTHROPIC_FILES, bytewise, chunked, lanes, run, sdk_anthropic

FILE_IDS = [path.stem for path in ANTHROPIC_FILES]


def sse(*events: dict[str, Any]) -> bytes:
    """An Anthropic stream: ``event: <type>`` + ``data: <json>`` per event."""
    return b"".join(
        f"event: {event.get('type', 'message')}\ndata: {json.dumps(event)}\n\n".encode()
        for event in events
    )


START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "usage": {"input_tokens": 25, "output_tokens": 1},
    },
}
STOP = {"type": "message_stop"}
#: What ``START`` reports at once: the input tokens billed even if the stream then fails.
START_USAGE = MessageDelta(None, Usage(input_tokens=25, output_tokens=1))


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(stop: str | None, usage: dict[str, int] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "message_delta", "delta": {"stop_reason": stop}}
    if usage is not None:
        event["usage"] = usage
    return event


def decode(data: bytes) -> list[StreamEvent]:
    decoder = AnthropicDecoder()
    events = decoder.feed(data) + decoder.close()
    assert decoder.saw_terminal == any(isinstance(e, MessageStop) for e in events)
    return events


# --- the recorded corpus -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ANTHROPIC_FILES, ids=FILE_IDS)
def test_recorded_stream_decodes_the_same_whole_bytewise_and_with_trailing_data(path: Path) -> None:
    data = path.read_bytes()
    whole = run(AnthropicDecoder, [data])
    assert whole[1] is None
    assert isinstance(whole[0][-1], MessageStop)
    assert run(AnthropicDecoder, bytewise(data)) == whole
    # anything after message_stop is ignored, even garbage
    assert run(AnthropicDecoder, [data + b"\n\nevent: error\ndata: {not json\n\n"]) == whole
    # the same stream with CRLF line ends
    assert run(AnthropicDecoder, [data.replace(b"\n", b"\r\n")]) == whole


@settings(max_examples=40, deadline=None)
@given(
    pick=st.integers(0, len(ANTHROPIC_FILES) - 1), cuts=st.lists(st.integers(0, 5000), max_size=20)
)
def test_recorded_streams_under_random_splits(pick: int, cuts: list[int]) -> None:
    data = ANTHROPIC_FILES[pick].read_bytes()
    assert run(AnthropicDecoder, chunked(data, cuts)) == run(AnthropicDecoder, [data])


@pytest.mark.parametrize("path", ANTHROPIC_FILES, ids=FILE_IDS)
def test_recorded_stream_agrees_with_the_sdk(path: Path) -> None:
    """Lane by lane, the decoded events carry what the anthropic SDK accumulates."""
    data = path.read_bytes()
    events = decode(data)
    message = sdk_anthropic(data)
    modelled = [
        block
        for block in message.content
        if block.type in ("text", "tool_use", "thinking", "redacted_thinking")
    ]
    ours = lanes(events)
    assert len(ours) == len(modelled)
    for (kind, id_, name, text), block in zip(ours, modelled, strict=True):
        if block.type == "text":
            assert (kind, text) == ("text", block.text)
        elif block.type == "thinking":
            assert (kind, text) == ("thinking", block.thinking)
        elif block.type == "redacted_thinking":
            assert (kind, text) == ("thinking", "")
        else:
            assert (kind, id_, name) == ("tool_call", block.id, block.name)
            assert (
                jiter.from_json(text.encode(), partial_mode=True) if text else {}
            ) == block.input
    start = events[0]
    assert isinstance(start, MessageStart)
    assert (start.id, start.model) == (message.id, message.model)
    last_delta = [e for e in events if isinstance(e, MessageDelta)][-1]
    assert last_delta.stop_reason == (StopReason.parse(message.stop_reason) or message.stop_reason)
    assert last_delta.usage == anthropic_expected(message.usage)
    # the SDK's total input is rxturn's: uncached + cache writes + cache reads
    assert last_delta.usage is not None
    assert last_delta.usage.input_tokens == (
        message.usage.input_tokens
        + (message.usage.cache_creation_input_tokens or 0)
        + (message.usage.cache_read_input_tokens or 0)
    )


def _file(name: str) -> bytes:
    return next(p for p in ANTHROPIC_FILES if p.stem == name).read_bytes()


def test_basic_response_event_by_event() -> None:
    # written from the file: one text block "Hello", " there", "!"; end_turn; 11 in / 6 out
    assert decode(_file("basic_response")) == [
        MessageStart("msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK", "claude-3-opus-latest"),
        MessageDelta(None, Usage(input_tokens=11, output_tokens=1)),  # message_start's usage
        PartStart(0, "text"),
        Delta(0, "Hello"),
        Delta(0, " there"),
        Delta(0, "!"),
        PartStop(0),
        MessageDelta("end_turn", Usage(input_tokens=11, output_tokens=6)),
        MessageStop(),
    ]


def test_tool_use_response() -> None:
    events = decode(_file("tool_use_response"))
    tools = [e for e in events if isinstance(e, PartStart) and e.kind == "tool_call"]
    assert tools == [PartStart(1, "tool_call", "toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather")]
    # the empty partial_json fragment is dropped; the block's own "input": {} is ignored
    assert [e.text for e in events if isinstance(e, Delta) and e.kind == "tool_json"] == [
        '{"locati',
        'on": "P',
        "ar",
        'is"}',
    ]
    assert PartStop(1) in events
    assert events[-2] == MessageDelta(
        "tool_call",
        Usage(input_tokens=377, output_tokens=65, cache_read_tokens=0, cache_write_tokens=0),
    )


def test_incomplete_tool_json_stays_open_at_max_tokens() -> None:
    events = decode(_file("incomplete_partial_json_response"))
    assert PartStart(1, "tool_call", "toolu_01EKqbqmZrGRXy18eN7m9kvY", "make_file") in events
    assert PartStop(1) not in events  # no synthesized close: the fold keeps the partial input
    assert events[-2:] == [
        MessageDelta(
            "max_tokens",
            Usage(input_tokens=450, output_tokens=124, cache_read_tokens=0, cache_write_tokens=0),
        ),
        MessageStop(),
    ]


@pytest.mark.parametrize(
    ("name", "text_index", "ignored"),
    [
        ("compaction_response", 1, [0]),
        ("fallback_response", 1, [0]),
        ("stream-a-toolrefusal", 2, [0, 1]),
    ],
)
def test_unknown_blocks_do_not_leak(name: str, text_index: int, ignored: list[int]) -> None:
    events = decode(_file(name))
    touched = {e.index for e in events if isinstance(e, (PartStart, Delta, PartStop))}
    assert touched == {text_index}
    assert not set(ignored) & touched


def test_refusal_keeps_the_raw_stop_reason_and_sdk_usage_rule() -> None:
    events = decode(_file("refusal_response"))
    # an empty text block opens and closes; output_tokens 0 in the delta wins over start's 1
    assert events[1:] == [
        MessageDelta(None, Usage(input_tokens=20, output_tokens=1)),
        PartStart(0, "text"),
        PartStop(0),
        MessageDelta("refusal", Usage(input_tokens=20, output_tokens=0)),
        MessageStop(),
    ]


def test_thinking_stream_with_signature_and_empty_delta() -> None:
    events = decode(_file("stream-a-refusal"))
    thinking = [e for e in events if isinstance(e, Delta) and e.kind == "thinking"]
    assert len(thinking) == 3  # the empty thinking_delta and the signature_delta are dropped
    assert events[2] == PartStart(0, "thinking")
    assert PartStop(0) in events and Delta(1, "Hi") in events


# --- emitter edge cases ---------------------------------------------------------------------------


def test_ignores_events_after_message_stop() -> None:
    late = sse(
        delta(0, {"type": "text_delta", "text": "late"}),
        {"type": "error", "error": {"type": "overloaded_error", "message": "late"}},
    )
    data = (
        sse(
            START,
            block_start(0, {"type": "text", "text": ""}),
            delta(0, {"type": "text_delta", "text": "on time"}),
            STOP,
        )
        + late
    )
    for chunks in ([data], bytewise(data)):
        events, error = run(AnthropicDecoder, chunks)
        assert error is None
        assert Delta(0, "late") not in events and events[-1] == MessageStop()


def test_thinking_delta_is_thinking_and_signature_is_a_signature_delta() -> None:
    events = decode(
        sse(
            START,
            block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(0, {"type": "thinking_delta", "thinking": "hmm"}),
            delta(0, {"type": "signature_delta", "signature": "c2ln"}),
            block_stop(0),
            STOP,
        )
    )
    assert events[1:] == [
        START_USAGE,
        PartStart(0, "thinking"),
        Delta(0, "", "signature"),  # the block's own (empty) signature, replaced below
        Delta(0, "hmm", "thinking"),
        Delta(0, "c2ln", "signature"),
        PartStop(0),
        MessageStop(),
    ]


def test_redacted_thinking_emits_one_empty_thinking_delta_and_its_data() -> None:
    events = decode(
        sse(
            START, block_start(0, {"type": "redacted_thinking", "data": "xyz"}), block_stop(0), STOP
        )
    )
    assert events[1:] == [
        START_USAGE,
        PartStart(0, "thinking"),
        Delta(0, "", "thinking"),
        Delta(0, "xyz", "redacted_thinking"),
        PartStop(0),
        MessageStop(),
    ]


def test_block_left_open_at_message_stop_is_not_closed() -> None:
    # docs/behaviour.md §6: no synthesized PartStop, so a cut tool call keeps its input
    events = decode(
        sse(
            START,
            block_start(0, {"type": "thinking", "thinking": ""}),
            delta(0, {"type": "thinking_delta", "thinking": "x"}),
            STOP,
        )
    )
    assert events[-1] == MessageStop() and not any(isinstance(e, PartStop) for e in events)


@pytest.mark.parametrize(
    ("start_usage", "delta_usage", "expected"),
    [
        (
            {"input_tokens": 25, "output_tokens": 1},
            {"output_tokens": 15},
            Usage(input_tokens=25, output_tokens=15),
        ),
        (
            {"input_tokens": 25, "output_tokens": 1},
            {"input_tokens": 40, "output_tokens": 15},
            Usage(input_tokens=40, output_tokens=15),
        ),
        ({"input_tokens": 25, "output_tokens": 1}, None, Usage(input_tokens=25, output_tokens=1)),
        ({"input_tokens": 0, "output_tokens": 0}, None, None),
        (None, {"output_tokens": 0}, None),
    ],
    ids=[
        "input-from-start",
        "delta-revision-wins",
        "no-delta-usage-keeps-latch",
        "all-zero-omitted",
        "no-start-usage",
    ],
)
def test_usage_combines_start_latch_and_delta(
    start_usage: dict[str, int] | None, delta_usage: dict[str, int] | None, expected: Usage | None
) -> None:
    start = json.loads(json.dumps(START))
    if start_usage is None:
        del start["message"]["usage"]
    else:
        start["message"]["usage"] = start_usage
    events = decode(sse(start, message_delta("end_turn", delta_usage), STOP))
    assert events[-2] == MessageDelta("end_turn", expected)


def test_duplicate_message_start_keeps_the_first() -> None:
    second = {
        "type": "message_start",
        "message": {
            "id": "msg_2",
            "model": "other",
            "usage": {"input_tokens": 99, "output_tokens": 9},
        },
    }
    events = decode(sse(START, second, message_delta("end_turn", {"output_tokens": 3}), STOP))
    assert events == [
        MessageStart("msg_1", "claude-test"),
        START_USAGE,
        MessageDelta("end_turn", Usage(input_tokens=25, output_tokens=3)),
        MessageStop(),
    ]


@pytest.mark.parametrize(
    ("wire", "canonical"),
    [
        ("end_turn", "end_turn"),
        ("tool_use", "tool_call"),
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
        ("pause_turn", "pause_turn"),
        (None, None),
    ],
)
def test_stop_reason_is_canonical_when_known_else_raw(
    wire: str | None, canonical: str | None
) -> None:
    assert decode(sse(START, message_delta(wire), STOP))[2] == MessageDelta(
        canonical, Usage(input_tokens=25, output_tokens=1)
    )


def test_malformed_usage_counts_are_a_typed_error() -> None:
    # zeroing them would hide a broken event; rxturn reports it (docs/reliability.md §1: never skip)
    data = sse(START, message_delta("end_turn", {"output_tokens": "many"}))  # pyright: ignore[reportArgumentType]
    events, error = run(AnthropicDecoder, [data])
    assert events == [MessageStart("msg_1", "claude-test"), START_USAGE]
    assert error is not None
    assert error.startswith("StreamProtocolError: malformed Anthropic usage: 'output_tokens'")
    assert error.endswith("(line 5)")


def test_malformed_message_start_usage_names_its_line() -> None:
    # the line is worked out only for the error; it must still be the event's own data line
    start = {**START, "message": {**START["message"], "usage": {"input_tokens": -1}}}
    data = sse(block_start(0, {"type": "text", "text": ""}))  # events before it shift nothing
    events, error = run(AnthropicDecoder, [sse(start) + data])
    assert events == [MessageStart("msg_1", "claude-test")]
    assert error is not None
    assert error.startswith("StreamProtocolError: malformed Anthropic usage: 'input_tokens'")
    assert error.endswith("(line 2)")
    _, error = run(AnthropicDecoder, [sse(START, block_start(0, {"type": "text"}), start)])
    assert error is None  # a duplicate message_start is ignored, its usage unread


def test_data_line_without_space_and_multi_line_data() -> None:
    compact = (
        b'event: message_start\ndata:{"type":"message_start","message":{"id":"m","model":"x"}}\n\n'
    )
    multi = b'event: message_stop\ndata: {"type":\ndata:"message_stop"}\n\n'
    assert decode(compact + multi) == [MessageStart("m", "x"), MessageStop()]


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error_type", "cls"),
    [
        ("overloaded_error", OverloadedError),
        ("rate_limit_error", RateLimitError),
        ("api_error", ProviderStreamError),
        ("invalid_request_error", ProviderStreamError),
    ],
)
def test_in_stream_error_event(
    error_type: str, cls: type[APIStatusError | ProviderStreamError]
) -> None:
    data = sse(
        START,
        block_start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "Hi"}),
        {"type": "error", "error": {"type": error_type, "message": "Something broke"}},
        delta(0, {"type": "text_delta", "text": "never"}),
    )
    decoder = AnthropicDecoder()
    # the events before the error come first; the error is raised by the next call, and again
    assert decoder.feed(data) == [
        MessageStart("msg_1", "claude-test"),
        START_USAGE,
        PartStart(0, "text"),
        Delta(0, "Hi"),
    ]
    for _ in range(2):
        with pytest.raises(cls) as caught:
            decoder.close()
        error = caught.value
        assert type(error) is cls
        assert str(error) == f"{error_type}: Something broke"
        assert error.error_type == error_type
        if isinstance(error, RateLimitError):
            assert error.status_code is None
    assert not decoder.saw_terminal


def test_error_as_the_first_event_raises_at_once() -> None:
    decoder = AnthropicDecoder()
    with pytest.raises(OverloadedError, match="overloaded_error: Overloaded"):
        decoder.feed(
            sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        )


def test_error_event_without_details() -> None:
    with pytest.raises(ProviderStreamError, match=r"^error: stream failed$"):
        AnthropicDecoder().feed(sse({"type": "error"}))


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            b'event: message_start\ndata: {"type": "message_start", \n\n',
            "invalid JSON in data of event 'message_start'",
        ),
        (
            sse({"type": "message_start", "message": []}),
            "unexpected JSON shape in data of event 'message_start'",
        ),
        (
            sse({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use"}}),
            "unexpected JSON shape in data of event 'content_block_start'",
        ),
        (sse({"no_type": 1}), "unexpected JSON shape"),
        (b"event: message_start\ndata: []\n\n", "unexpected JSON shape"),
    ],
    ids=["bad-json", "bad-shape", "tool-use-without-id", "no-type", "not-an-object"],
)
def test_malformed_events_name_what_and_where(events: bytes, message: str) -> None:
    with pytest.raises(StreamProtocolError) as caught:
        AnthropicDecoder().feed(events)
    assert str(caught.value).startswith(message)
    assert caught.value.where == "line 2"


@pytest.mark.parametrize(
    ("events", "message", "line"),
    [
        (
            [delta(3, {"type": "text_delta", "text": "x"})],
            "content_block_delta for block 3, which is not open",
            5,
        ),
        ([block_stop(0)], "content_block_stop for block 0, which is not open", 5),
        (
            [block_start(0, {"type": "text"}), block_start(0, {"type": "text"})],
            "content_block_start for block 0, which is already open",
            8,
        ),
        (
            [
                block_start(0, {"type": "text"}),
                block_stop(0),
                delta(0, {"type": "text_delta", "text": "x"}),
            ],
            "content_block_delta for block 0, which is not open",
            11,
        ),
        (
            [
                block_start(0, {"type": "text"}),
                delta(0, {"type": "text_delta", "text": "x"}),
                block_stop(0),
                delta(0, {"type": "text_delta", "text": "y"}),
            ],
            "content_block_delta for block 0, which is not open",
            14,
        ),
        (
            [delta(-1, {"type": "text_delta", "text": "x"})],
            "content_block_delta for block -1, which is not open",
            5,
        ),
    ],
    ids=[
        "delta-never-opened",
        "stop-never-opened",
        "opened-twice",
        "delta-after-stop",
        "delta-after-a-run-and-its-stop",
        "delta-to-a-negative-block",
    ],
)
def test_lane_violations(events: list[dict[str, Any]], message: str, line: int) -> None:
    _, error = run(AnthropicDecoder, [sse(START, *events)])
    assert error == f"StreamProtocolError: {message} (line {line})"


def test_events_before_message_start_are_a_protocol_error() -> None:
    _, error = run(AnthropicDecoder, [sse(block_start(0, {"type": "text"}))])
    assert error == "StreamProtocolError: 'content_block_start' event before message_start (line 2)"


def test_unknown_event_and_delta_types_are_skipped() -> None:
    events = decode(
        sse(
            START,
            {"type": "brand_new_event", "payload": [1, 2]},
            block_start(0, {"type": "text", "text": ""}),
            delta(0, {"type": "text_annotation_delta", "text": 42}),
            delta(0, {"type": "citations_delta", "citation": {"type": "x"}}),
            delta(0, {"type": "text_delta", "text": "ok"}),
            delta(
                0, {"type": "input_json_delta", "partial_json": "{}"}
            ),  # wrong kind for a text lane
            block_start(1, {"type": "mcp_tool_use", "id": "x", "name": "y", "input": {}}),
            delta(1, {"type": "input_json_delta", "partial_json": '{"leak": true}'}),
            block_stop(1),
            block_stop(0),
            STOP,
        )
    )
    assert events[1:] == [
        START_USAGE,
        PartStart(0, "text"),
        Delta(0, "ok"),
        PartStop(0),
        MessageStop(),
    ]


# --- truncation ----------------------------------------------------------------------------------


def test_truncated_stream_has_no_message_stop_at_any_cut() -> None:
    data = _file("tool_use_response")
    stop_at = data.index(b"event: message_stop")
    for cut in range(0, len(data), 7):
        decoder = AnthropicDecoder()
        events = decoder.feed(data[:cut]) + decoder.close()
        complete = cut > stop_at + len(b'event: message_stop\ndata: {"type":"message_stop"}') - 1
        assert decoder.saw_terminal is complete
        assert (events[-1:] == [MessageStop()]) is complete


# --- non-streaming replies ------------------------------------------------------------------------


def test_parse_message_text_and_tool_use_in_order() -> None:
    body = json.dumps(
        {
            "id": "msg_9",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "hidden", "signature": "s"},
                {"type": "text", "text": "Let me check."},
                {"type": "text", "text": ""},
                {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {"type": "tool_use", "id": "toolu_2", "name": "no_input"},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 12, "output_tokens": 34},
        }
    ).encode()
    message = parse_anthropic_message(body)
    assert message.id == "msg_9" and message.model == "claude-x"
    assert message.content == (
        TextPart("Let me check."),
        ToolCallPart("toolu_1", "get_weather", {"city": "Paris"}),
        ToolCallPart("toolu_2", "no_input", None),
    )
    assert message.stop_reason is StopReason.TOOL_CALL
    assert message.usage == Usage(input_tokens=12, output_tokens=34)


@pytest.mark.parametrize(
    ("extra", "stop", "usage"),
    [
        ({}, StopReason.END_TURN, None),
        (
            {"stop_reason": "stop_sequence", "usage": {"input_tokens": 0, "output_tokens": 0}},
            StopReason.STOP_SEQUENCE,
            None,
        ),
        (
            {"stop_reason": "pause_turn", "usage": {"input_tokens": 3}},
            StopReason.END_TURN,
            Usage(input_tokens=3),
        ),
        ({"stop_reason": "refusal"}, StopReason.REFUSAL, None),
    ],
    ids=["minimal", "stop-sequence-zero-usage", "unknown-stop", "refusal"],
)
def test_parse_message_defaults(
    extra: dict[str, Any], stop: StopReason, usage: Usage | None
) -> None:
    body = {"id": "m", "model": "x", "content": [], **extra}
    message = parse_anthropic_message(json.dumps(body).encode())
    assert message.content == ()
    assert (message.stop_reason, message.usage) == (stop, usage)


def test_parse_message_errors() -> None:
    with pytest.raises(StreamProtocolError, match="invalid JSON in Anthropic message body"):
        parse_anthropic_message(b"<html>")
    with pytest.raises(StreamProtocolError, match="a content block of the Anthropic message body"):
        parse_anthropic_message(b'{"content": [{"type": "tool_use", "name": "x"}]}')
    with pytest.raises(OverloadedError, match="overloaded_error: busy"):
        parse_anthropic_message(
            b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'
        )


# --- the remaining edges -------------------------------------------------------------------------


def test_framing_errors_are_final() -> None:
    decoder = AnthropicDecoder(max_line_bytes=16)
    with pytest.raises(StreamProtocolError, match=r"longer than 16 bytes \(line 1\)"):
        decoder.feed(b"data: " + b"x" * 40 + b"\n\n")
    for call in (lambda: decoder.feed(b"\n"), decoder.close):
        with pytest.raises(StreamProtocolError, match="longer than 16 bytes"):
            call()


def test_event_data_limit_hit_at_close() -> None:
    decoder = AnthropicDecoder(max_event_bytes=8)
    assert decoder.feed(b"data: 1234\ndata: 12345") == []
    with pytest.raises(StreamProtocolError, match=r"data longer than 8 bytes \(line 2\)"):
        decoder.close()


def test_feed_and_close_after_message_stop_return_nothing() -> None:
    decoder = AnthropicDecoder()
    assert decoder.feed(sse(START, STOP))[-1] == MessageStop()
    assert decoder.feed(b"event: error\ndata: {}\n\n") == []
    assert decoder.close() == []
    assert decoder.saw_terminal


def test_delta_usage_with_input_tokens_only() -> None:
    # the SDK copies the delta's output_tokens over the start's even when it is missing
    data = sse(START, message_delta("end_turn", {"input_tokens": 30}), STOP)
    events = decode(data)
    assert sdk_anthropic(data).usage.output_tokens is None
    assert events[2] == MessageDelta("end_turn", Usage(input_tokens=30))
    end = events[2]
    assert isinstance(end, MessageDelta)
    assert end.usage == anthropic_expected(sdk_anthropic(data).usage)


def test_unknown_block_types_still_follow_the_lane_rules() -> None:
    twice = sse(START, block_start(0, {"type": "text"}), block_start(0, {"type": "new_block"}))
    assert run(AnthropicDecoder, [twice])[1] == (
        "StreamProtocolError: content_block_start for block 0, which is already open (line 8)"
    )
    stray = sse(START, delta(4, {"type": "new_delta", "x": 1}))
    assert run(AnthropicDecoder, [stray])[1] == (
        "StreamProtocolError: content_block_delta for block 4, which is not open (line 5)"
    )
    early = sse(block_start(0, {"type": "new_block"}))
    assert run(AnthropicDecoder, [early])[1] == (
        "StreamProtocolError: 'content_block_start' event before message_start (line 2)"
    )


def test_parse_message_with_a_content_block_that_is_not_an_object() -> None:
    with pytest.raises(StreamProtocolError, match="a content block of the Anthropic message body"):
        parse_anthropic_message(b'{"content": [42]}')


def test_message_start_usage_is_reported_at_once() -> None:
    """The input tokens are billed from ``message_start`` on: reported before any content, so
    that an attempt failing before ``message_delta`` still has its usage on record."""
    events, error = run(AnthropicDecoder, [sse(START, block_start(0, {"type": "text"}))])
    assert error is None
    assert events == [MessageStart("msg_1", "claude-test"), START_USAGE, PartStart(0, "text")]
    zero = json.loads(json.dumps(START))
    zero["message"]["usage"] = {"input_tokens": 0, "output_tokens": 0}
    assert decode(sse(zero, STOP)) == [MessageStart("msg_1", "claude-test"), MessageStop()]
