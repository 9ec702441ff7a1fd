"""The OpenAI Responses decoder and parser: recorded streams, derived faults, edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rxturn import replay_message
from rxturn.errors import (
    InvalidToolInputError,
    ProviderStreamError,
    RateLimitError,
    StreamProtocolError,
)
from rxturn.events import Delta, MessageDelta, MessageStop, StreamEvent
from rxturn.messages import RefusalPart, StopReason, TextPart, ThinkingPart, ToolCallPart, Usage
from rxturn.wire import OpenAIResponsesDecoder, decoder_for, parse_openai_response, sniff_format

from ._support import bytewise, run

FILES = sorted(
    (Path(__file__).resolve().parents[1] / "fixtures" / "openai-responses").glob("*.sse")
)


def decode(data: bytes) -> list[StreamEvent]:
    decoder = OpenAIResponsesDecoder()
    return decoder.feed(data) + decoder.close()


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(
        b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e).encode() + b"\n\n"
        for e in events
    )


CREATED = {"type": "response.created", "response": {"id": "resp_1", "model": "gpt-x"}}


def completed(**response: Any) -> dict[str, Any]:
    return {
        "type": "response.completed",
        "response": {"id": "resp_1", "model": "gpt-x", **response},
    }


def test_corpus_is_there() -> None:
    assert len(FILES) >= 10


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_recorded_streams_decode_the_same_bytewise_and_are_sniffed(path: Path) -> None:
    data = path.read_bytes()
    whole = run(OpenAIResponsesDecoder, [data])
    assert whole[1] is None and isinstance(whole[0][-1], MessageStop)
    assert run(OpenAIResponsesDecoder, bytewise(data)) == whole
    assert run(OpenAIResponsesDecoder, [data.replace(b"\n", b"\r\n")]) == whole
    assert sniff_format(data[:4096]) == "openai-responses"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_non_streaming_parse_of_the_final_response_equals_the_streamed_fold(path: Path) -> None:
    """The terminal event's ``response`` is the non-streaming body of the same reply."""
    data = path.read_bytes()
    final = next(
        json.loads(line[5:])["response"]
        for line in data.splitlines()
        if line.startswith(b"data:") and b'"response.completed"' in line
    )
    body = json.dumps(final).encode()
    for keep in (False, True):
        streamed = replay_message(data, keep_thinking=keep)
        parsed = parse_openai_response(body, keep_thinking=keep)
        if path.name == "openrouter_raw_reasoning.sse" and keep:
            continue  # its reasoning has raw text but no summary, and renamed ids (see README)
        assert parsed == streamed


def test_text_refusal_and_usage() -> None:
    message = replay_message(
        sse(
            CREATED,
            {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message"}},
            {
                "type": "response.content_part.added",
                "output_index": 0,
                "content_index": 0,
                "part": {"type": "refusal", "refusal": ""},
            },
            {
                "type": "response.refusal.delta",
                "output_index": 0,
                "content_index": 0,
                "delta": "No",
            },
            {"type": "response.refusal.delta", "output_index": 0, "content_index": 0, "delta": "."},
            completed(usage={"input_tokens": 3, "output_tokens": 2}),
        )
    )
    assert message.content == (RefusalPart("No."),)
    assert message.stop_reason is StopReason.REFUSAL
    assert message.usage == Usage(input_tokens=3, output_tokens=2)


def test_incomplete_at_max_output_tokens_keeps_the_partial_call() -> None:
    message = replay_message(
        sse(
            CREATED,
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "f",
                    "arguments": "",
                },
            },
            {
                "type": "response.function_call_arguments.delta",
                "output_index": 0,
                "delta": '{"a": "b',
            },
            {
                "type": "response.incomplete",
                "response": {
                    "id": "resp_1",
                    "incomplete_details": {"reason": "max_output_tokens"},
                },
            },
        )
    )
    assert message.content == (ToolCallPart("call_1", "f", {}),)  # jiter drops the open string
    assert message.stop_reason is StopReason.MAX_TOKENS


def test_done_events_without_deltas_carry_the_whole_text() -> None:
    message = replay_message(
        sse(
            CREATED,
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]},
            },
            {
                "type": "response.output_item.done",
                "output_index": 1,
                "item": {"type": "function_call", "call_id": "c", "name": "g", "arguments": "{}"},
            },
            completed(),
        )
    )
    assert message.content == (TextPart("Hi"), ToolCallPart("c", "g", {}))
    assert message.stop_reason is StopReason.TOOL_CALL


@pytest.mark.parametrize(
    ("event", "expected", "text"),
    [
        (
            {"type": "error", "code": "rate_limit_exceeded", "message": "slow"},
            RateLimitError,
            "slow",
        ),
        ({"type": "error", "code": "server_error", "message": "boom"}, ProviderStreamError, "boom"),
        (
            {
                "type": "response.failed",
                "response": {
                    "id": "r",
                    "status": "failed",
                    "error": {"code": "server_error", "message": "bad"},
                },
            },
            ProviderStreamError,
            "bad",
        ),
    ],
    ids=["rate-limit", "error", "failed"],
)
def test_errors_are_typed(event: dict[str, Any], expected: type[Exception], text: str) -> None:
    data = sse(CREATED, event)
    decoder = OpenAIResponsesDecoder()
    with pytest.raises(expected, match=text):
        decoder.feed(data)
        decoder.close()


def test_unknown_events_are_ignored_and_malformed_known_ones_fail_with_a_line() -> None:
    body = sse(CREATED, {"type": "response.brand_new.thing", "x": 1}, completed())
    assert replay_message(body).content == ()
    bad = sse(CREATED, {"type": "response.output_text.delta", "delta": 5}, completed())
    with pytest.raises(StreamProtocolError, match=r"line \d+"):
        replay_message(bad)
    with pytest.raises(StreamProtocolError, match=r"before response\.created"):
        decode(sse({"type": "response.output_text.delta", "delta": "x"}))


def test_truncated_stream_has_no_terminal() -> None:
    data = FILES[0].read_bytes()
    cut = data[: data.index(b"event: response.completed")]
    decoder = decoder_for("openai-responses")
    events = decoder.feed(cut) + decoder.close()
    assert not decoder.saw_terminal and not any(isinstance(e, MessageDelta) for e in events)


def test_text_hot_path_matches_slow_path() -> None:
    deltas = [
        {"type": "response.output_text.delta", "output_index": 0, "content_index": c, "delta": d}
        for c, d in [(0, "a"), (0, "b"), (1, "c"), (0, "d")]
    ]
    parts = [
        {
            "type": "response.content_part.added",
            "output_index": 0,
            "content_index": c,
            "part": {"type": "output_text", "text": ""},
        }
        for c in (0, 1)
    ]
    events = decode(sse(CREATED, *parts, *deltas, completed()))
    texts = [(e.index, e.text) for e in events if isinstance(e, Delta)]
    assert texts == [(0, "a"), (0, "b"), (1, "c"), (0, "d")]
    assert replay_message(sse(CREATED, *parts, *deltas, completed())).content == (
        TextPart("abd"),
        TextPart("c"),
    )


def test_non_streaming_errors() -> None:
    with pytest.raises(StreamProtocolError):
        parse_openai_response(b"<html>")
    with pytest.raises(RateLimitError):
        parse_openai_response(b'{"error": {"code": "rate_limit_exceeded", "message": "x"}}')
    with pytest.raises(InvalidToolInputError):
        parse_openai_response(
            b'{"output": [{"type": "function_call", "call_id": "c", "name": "f",'
            b' "arguments": "{"}]}'
        )


# --- a content part spoken of after it closed ------------------------------------------------


def _message_item(output_index: int, text: str) -> list[dict[str, Any]]:
    """One message item's events, as the API streams them: added, part added, a delta, part
    done, item done."""
    item_id = f"msg_{output_index}"
    at = {"item_id": item_id, "output_index": output_index, "content_index": 0}
    part = {"type": "output_text", "text": text, "annotations": []}
    return [
        {
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": {"type": "message", "id": item_id, "role": "assistant", "content": []},
        },
        {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
        {"type": "response.output_text.delta", **at, "delta": text},
        {"type": "response.content_part.done", **at, "part": part},
        {
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": {"type": "message", "id": item_id, "role": "assistant", "content": [part]},
        },
    ]


def _late_delta(events: list[dict[str, Any]], at: int) -> list[dict[str, Any]]:
    """``events`` with a text delta for output 0, content 0 inserted at ``at``."""
    late = {"type": "response.output_text.delta", "item_id": "msg_0", "output_index": 0}
    return [*events[:at], {**late, "content_index": 0, "delta": "B"}, *events[at:]]


@pytest.mark.parametrize(
    "events",
    [
        # the second message's delta names the first, closed part (a stale output_index): it
        # came out as a second part besides the first, and the second message's text twice
        [
            *_message_item(0, "A"),
            *_message_item(1, "B")[:2],
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": "B",
            },
            *_message_item(1, "B")[3:],
        ],
        _late_delta(_message_item(0, "A"), 4),  # after content_part.done
        _late_delta(_message_item(0, "A"), 5),  # after output_item.done
        # a new part of an item already done
        [
            *_message_item(0, "A"),
            {
                "type": "response.content_part.added",
                "item_id": "msg_0",
                "output_index": 0,
                "content_index": 1,
                "part": {"type": "output_text", "text": ""},
            },
        ],
    ],
    ids=["stale-index", "after-part-done", "after-item-done", "part-added-after-item-done"],
)
def test_text_for_a_part_already_closed_is_a_malformed_stream(events: list[dict[str, Any]]) -> None:
    data = sse(CREATED, *events, completed())
    for chunks in ([data], bytewise(data)):
        decoded, error = run(OpenAIResponsesDecoder, chunks)
        assert error is not None and error.startswith("StreamProtocolError: "), (error, decoded)
        assert "output 0 content " in error and "already done" in error
        assert "\n" not in error and "(line " in error
        # the text before the bad event went out, once
        assert [e.text for e in decoded if isinstance(e, Delta)] == ["A"]


@pytest.mark.parametrize(
    "repeat", ["part-done-twice", "part-done-after-item-done", "item-done-twice"]
)
def test_a_part_closed_again_keeps_its_text_once(repeat: str) -> None:
    events = _message_item(0, "A")
    part_done, item_done = events[3], events[4]
    tail = {
        "part-done-twice": [part_done, part_done, item_done],
        "part-done-after-item-done": [item_done, part_done],
        "item-done-twice": [part_done, item_done, item_done],
    }[repeat]
    message = replay_message(sse(CREATED, *events[:3], *tail, completed()))
    assert message.content == (TextPart("A"),)


_CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
_REASONING = {"type": "reasoning", "id": "rs_1", "summary": []}


def _item_events(item: dict[str, Any], done: dict[str, Any]) -> list[dict[str, Any]]:
    """An output item at index 0: added, one delta, done."""
    added = {"type": "response.output_item.added", "output_index": 0, "item": item}
    if item["type"] == "function_call":
        delta = {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_1",
            "delta": '{"a": 1}',
        }
    else:
        delta = {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "item_id": "rs_1",
            "summary_index": 0,
            "delta": "hmm",
        }
    return [added, delta, {"type": "response.output_item.done", "output_index": 0, "item": done}]


@pytest.mark.parametrize("announced", [True, False], ids=["announced", "done-only"])
def test_an_output_item_done_twice_comes_out_once(announced: bool) -> None:
    # a function call's output_item.done sent twice came out as two tool calls (the agent loop
    # would run the tool twice), a reasoning item's as two thinking parts
    call_done = {**_CALL, "arguments": '{"a": 1}', "status": "completed"}
    summary = [{"type": "summary_text", "text": "hmm"}]
    thought_done = {**_REASONING, "summary": summary, "encrypted_content": "enc"}
    calls, thoughts = _item_events(_CALL, call_done), _item_events(_REASONING, thought_done)
    if not announced:  # a compatible server that sends the items whole, once done
        calls, thoughts = calls[2:], thoughts[2:]
    message = replay_message(sse(CREATED, *calls, calls[-1], completed(output=[call_done])))
    assert message.content == (ToolCallPart("call_1", "f", {"a": 1}),)
    message = replay_message(
        sse(CREATED, *thoughts, thoughts[-1], completed(output=[thought_done])),
        keep_thinking=True,
    )
    assert message.content == (ThinkingPart("hmm", "enc", id="rs_1"),)


@pytest.mark.parametrize(
    ("part", "delta"),
    [
        ({"type": "output_text", "text": ""}, "response.refusal.delta"),
        ({"type": "refusal", "refusal": ""}, "response.output_text.delta"),
    ],
    ids=["refusal-into-text", "text-into-refusal"],
)
def test_a_delta_of_the_other_kind_than_its_part_is_a_malformed_stream(
    part: dict[str, Any], delta: str
) -> None:
    # it was dropped: a refusal sent into a text part folded to an end of turn, text sent into
    # a refusal part vanished
    at = {"item_id": "msg_0", "output_index": 0, "content_index": 0}
    data = sse(
        CREATED,
        _message_item(0, "")[0],
        {"type": "response.content_part.added", **at, "part": part},
        {"type": delta, **at, "delta": "No."},
        completed(),
    )
    for chunks in ([data], bytewise(data)):
        _, error = run(OpenAIResponsesDecoder, chunks)
        assert error is not None and error.startswith("StreamProtocolError: " + delta), error
        assert "output 0 content 0, which is " in error and error.endswith(
            "part (line 11)"
        )  # the 4th event's data line


@pytest.mark.parametrize(
    "event", ["response.created", "response.in_progress", "response.completed"]
)
def test_a_lifecycle_event_of_another_response_is_a_malformed_stream(event: str) -> None:
    # two responses spliced into one stream (a proxy's retry): the reply took the other's
    # usage and stop reason; the official SDK refuses such a stream
    other = {"id": "resp_2", "model": "gpt-x", "usage": {"input_tokens": 9, "output_tokens": 9}}
    events = [CREATED, *_message_item(0, "A")]
    if event == "response.completed":
        data = sse(*events, {"type": event, "response": other})
    else:
        data = sse(*events, {"type": event, "response": other}, completed())
    for chunks in ([data], bytewise(data)):
        decoded, error = run(OpenAIResponsesDecoder, chunks)
        assert error == (
            f"StreamProtocolError: {event} is about response 'resp_2', but the stream began "
            "with 'resp_1' (line 20)"  # the 7th event's data line
        ), error
        assert [e.text for e in decoded if isinstance(e, Delta)] == ["A"]


def test_a_lifecycle_event_without_an_id_is_not_held_against_the_stream() -> None:
    # some compatible servers repeat no id in the terminal event
    data = sse(CREATED, *_message_item(0, "A"), {"type": "response.completed", "response": {}})
    assert replay_message(data).content == (TextPart("A"),)


@pytest.mark.parametrize("status", ["queued", "in_progress", "cancelled"])
def test_a_non_streaming_response_not_finished_is_no_reply(status: str) -> None:
    # a background response answered before it ran folded to an empty end of turn: the
    # non-streaming mode and the rescue "succeeded" with nothing
    body = json.dumps({"id": "resp_1", "model": "gpt-x", "status": status, "output": []})
    with pytest.raises(StreamProtocolError) as caught:
        parse_openai_response(body.encode())
    assert str(caught.value) == (
        f"OpenAI response body is not a finished reply (status {status!r})"
    )


@pytest.mark.parametrize("status", ["completed", "incomplete", None])
def test_a_finished_non_streaming_response_is_a_reply(status: str | None) -> None:
    item = {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]}
    body = {"id": "resp_1", "model": "gpt-x", "status": status, "output": [item]}
    message = parse_openai_response(json.dumps(body).encode())
    assert message.content == (TextPart("Hi"),)


def _summary(texts: list[str], *, streamed: bool) -> bytes:
    """A reasoning item whose summary parts are announced, with or without their deltas."""
    item = {"type": "reasoning", "id": "rs_1", "summary": []}
    at = {"item_id": "rs_1", "output_index": 0}
    events: list[dict[str, Any]] = [
        CREATED,
        {"type": "response.output_item.added", **at, "item": item},
    ]
    for index, text in enumerate(texts):
        where = {**at, "summary_index": index}
        part = {"type": "summary_text", "text": ""}
        events.append({"type": "response.reasoning_summary_part.added", **where, "part": part})
        if streamed:
            events.append({"type": "response.reasoning_summary_text.delta", **where, "delta": text})
        events.append({"type": "response.reasoning_summary_text.done", **where, "text": text})
    summary = [{"type": "summary_text", "text": text} for text in texts]
    done = {**item, "summary": summary}
    events += [{"type": "response.output_item.done", **at, "item": done}, completed(output=[done])]
    return sse(*events)


@pytest.mark.parametrize(
    ("texts", "streamed"),
    [(["A", "B"], False), (["", ""], True), (["A", "", "B"], True), (["A", "B"], True)],
    ids=["whole-at-done", "empty-parts", "an-empty-part", "streamed"],
)
def test_reasoning_summary_parts_join_as_in_the_final_item(
    texts: list[str], streamed: bool
) -> None:
    # the final item's summary, joined: a separator went out for each announced part after the
    # first, and then (no non-empty delta had come) the whole summary again, separators included
    message = replay_message(_summary(texts, streamed=streamed), keep_thinking=True)
    assert message.content == (ThinkingPart("\n\n".join(texts), None, "rs_1"),)


@pytest.mark.parametrize(
    ("item", "stray"),
    [
        (
            {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f", "arguments": ""},
            {"type": "response.output_text.delta", "content_index": 0, "delta": "x"},
        ),
        (
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "response.refusal.delta", "content_index": 0, "delta": "x"},
        ),
        (
            {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
            {"type": "response.function_call_arguments.delta", "delta": "{}"},
        ),
    ],
    ids=["text-at-a-call", "refusal-at-reasoning", "arguments-at-a-message"],
)
def test_a_delta_aimed_at_an_item_of_another_type_is_a_malformed_stream(
    item: dict[str, Any], stray: dict[str, Any]
) -> None:
    at = {"item_id": item["id"], "output_index": 0}
    data = sse(
        CREATED,
        {"type": "response.output_item.added", **at, "item": item},
        {**stray, **at},
        {"type": "response.output_item.done", **at, "item": item},
        completed(output=[item]),
    )
    with pytest.raises(StreamProtocolError, match=f"output 0, which is a '{item['type']}' item"):
        decode(data)


def test_a_content_part_of_a_call_is_nothing() -> None:
    # content_part events aimed at a function call: the SDK's accumulator skips them; the part's
    # text at its done came out as a text part the final response lacks
    item = {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f", "arguments": "{}"}
    at = {"item_id": "fc_1", "output_index": 0, "content_index": 0}
    part = {"type": "output_text", "text": "stray", "annotations": []}
    message = replay_message(
        sse(
            CREATED,
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
            {"type": "response.content_part.done", **at, "part": part},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            completed(output=[item]),
        )
    )
    assert message.content == (ToolCallPart("c", "f", {}),)
