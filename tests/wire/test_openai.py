"""The OpenAI Chat Completions decoder: recorded streams, the SDK as oracle, the edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from usage_oracle import chat_expected

from rxturn.errors import (
    InvalidToolInputError,
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
from rxturn.messages import RefusalPart, StopReason, TextPart, ToolCallPart, Usage
from rxturn.wire import OpenAIDecoder, parse_openai_completion

from ._support import OPENAI_FILES, bytewise, chunked, lanes, run, sdk_openai


def fold_usage(events: list[Any]) -> Usage | None:
    deltas = [e for e in events if isinstance(e, MessageDelta)]
    return deltas[-1].usage if deltas else None


FILE_IDS = [path.stem for path in OPENAI_FILES]
DONE = b"data: [DONE]\n\n"


def chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    *,
    usage: dict[str, int] | None = None,
    choices: list[Any] | None = None,
) -> bytes:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
    }
    if choices is not None:
        body["choices"] = choices
    else:
        body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    if usage is not None:
        body["usage"] = usage
    return f"data: {json.dumps(body)}\n\n".encode()


def usage_chunk(prompt: int, completion: int) -> bytes:
    return chunk(
        choices=[],
        usage={
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    )


def tool(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str | None = None
) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {}}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    if name is not None:
        call["function"]["name"] = name
    if arguments is not None:
        call["function"]["arguments"] = arguments
    return call


def decode(data: bytes) -> list[StreamEvent]:
    decoder = OpenAIDecoder()
    events = decoder.feed(data) + decoder.close()
    assert decoder.saw_terminal == any(isinstance(e, MessageStop) for e in events)
    return events


START = MessageStart("chatcmpl-1", "gpt-test")


# --- the recorded corpus -------------------------------------------------------------------------


@pytest.mark.parametrize("path", OPENAI_FILES, ids=FILE_IDS)
def test_recorded_stream_decodes_the_same_whole_bytewise_and_with_trailing_data(path: Path) -> None:
    data = path.read_bytes()
    whole = run(OpenAIDecoder, [data])
    assert whole[1] is None
    assert isinstance(whole[0][-1], MessageStop)
    assert run(OpenAIDecoder, bytewise(data)) == whole
    assert run(OpenAIDecoder, [data + b"data: {garbage after [DONE]\n\n"]) == whole
    assert run(OpenAIDecoder, [data.replace(b"\n", b"\r\n")]) == whole


@settings(max_examples=40, deadline=None)
@given(
    pick=st.integers(0, len(OPENAI_FILES) - 1), cuts=st.lists(st.integers(0, 50_000), max_size=20)
)
def test_recorded_streams_under_random_splits(pick: int, cuts: list[int]) -> None:
    data = OPENAI_FILES[pick].read_bytes()
    assert run(OpenAIDecoder, chunked(data, cuts)) == run(OpenAIDecoder, [data])


@pytest.mark.parametrize("path", OPENAI_FILES, ids=FILE_IDS)
def test_recorded_stream_agrees_with_the_sdk(path: Path) -> None:
    """choices[0] of the openai SDK's own accumulation: content, tool calls, usage, finish."""
    data = path.read_bytes()
    events = decode(data)
    completion = sdk_openai(data)
    choice = next(c for c in completion.choices if c.index == 0)
    ours = lanes(events)
    text = "".join(t for kind, _, _, t in ours if kind == "text")
    assert text == (choice.message.content or "")  # a refusal is not content
    refusal = "".join(t for kind, _, _, t in ours if kind == "refusal")
    assert refusal == (choice.message.refusal or "")  # but a part of its own
    calls = [(id_, name, args) for kind, id_, name, args in ours if kind == "tool_call"]
    assert calls == [
        (c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls or []
    ]
    assert events[0] == MessageStart(completion.id, completion.model)
    last = [e for e in events if isinstance(e, MessageDelta)][-1]
    expected = StopReason.parse(choice.finish_reason) or choice.finish_reason
    if choice.message.refusal and expected is StopReason.END_TURN:
        expected = StopReason.REFUSAL  # a refusal in words ends as a refusal
    assert last.stop_reason == expected
    assert last.usage == chat_expected(completion.usage)


def _file(name: str) -> bytes:
    return next(p for p in OPENAI_FILES if p.stem == name).read_bytes()


def test_refusal_is_not_text_but_a_refusal_lane_and_stop() -> None:
    events = decode(_file("refusal"))
    assert events[0] == MessageStart("chatcmpl-ABfw4IfQfCCrcuybFm41wJyxjbkz7", "gpt-4o-2024-08-06")
    assert events[1] == PartStart(-1, "refusal")
    refusal = "".join(e.text for e in events if isinstance(e, Delta))
    assert all(e.kind == "refusal" for e in events if isinstance(e, Delta))
    assert refusal == "I'm sorry, I can't assist with that request."  # read from the file
    assert events[-3:] == [
        PartStop(-1),
        MessageDelta(
            "refusal", Usage(input_tokens=79, output_tokens=11, output_reasoning_tokens=0)
        ),
        MessageStop(),
    ]


def test_multiple_choices_follow_choice_zero_only() -> None:
    text = "".join(e.text for e in decode(_file("multiple_choices")) if isinstance(e, Delta))
    # written from the file: choice 0 is the first of the three JSON weather objects
    assert text.startswith('{"city":"San Francisco"') and text.count("{") == 1


def test_parallel_tool_calls_get_their_own_lanes() -> None:
    events = decode(_file("multiple_tool_calls"))
    starts = [e for e in events if isinstance(e, PartStart)]
    assert starts == [
        PartStart(2, "tool_call", "call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs"),
        PartStart(3, "tool_call", "call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price"),
    ]
    assert events[-4:] == [
        PartStop(2),
        PartStop(3),
        MessageDelta(
            "tool_call", Usage(input_tokens=149, output_tokens=60, output_reasoning_tokens=0)
        ),
        MessageStop(),
    ]


def test_length_finish_closes_text_but_keeps_tool_lanes_open() -> None:
    usage = Usage(input_tokens=79, output_tokens=1, output_reasoning_tokens=0)
    assert decode(_file("max_tokens_reached"))[-5:] == [
        Delta(0, '{"'),
        MessageDelta(None, usage),  # the usage chunk: billed at once
        PartStop(0),  # the lanes close at [DONE]: content after the finish would still count
        MessageDelta("max_tokens", usage),
        MessageStop(),
    ]
    events = decode(
        chunk({"tool_calls": [tool(0, id="call_a", name="f", arguments='{"q": "par')]})
        + chunk({"content": "and text"})
        + chunk(finish="length")
        + usage_chunk(5, 7)
        + DONE
    )
    assert events == [
        START,
        PartStart(2, "tool_call", "call_a", "f"),
        Delta(2, '{"q": "par', "tool_json"),
        PartStart(0, "text"),
        Delta(0, "and text"),
        MessageDelta(None, Usage(input_tokens=5, output_tokens=7)),
        PartStop(0),
        MessageDelta("max_tokens", Usage(input_tokens=5, output_tokens=7)),
        MessageStop(),
    ]


# --- emitter edge cases ---------------------------------------------------------------------------


def test_usage_chunk_after_finish_carries_usage_in_delta() -> None:
    events = decode(chunk({"content": "hi"}) + chunk(finish="stop") + usage_chunk(10, 5) + DONE)
    assert events == [
        START,
        PartStart(0, "text"),
        Delta(0, "hi"),
        MessageDelta(None, Usage(input_tokens=10, output_tokens=5)),
        PartStop(0),
        MessageDelta("end_turn", Usage(input_tokens=10, output_tokens=5)),
        MessageStop(),
    ]


def test_finish_without_usage_chunk_emits_delta_with_none_usage() -> None:
    events = decode(chunk({"content": "hi"}) + chunk(finish="stop") + DONE)
    assert events[-2:] == [MessageDelta("end_turn", None), MessageStop()]


def test_usage_and_finish_in_same_chunk() -> None:
    decoder = OpenAIDecoder()
    events = decoder.feed(
        chunk({"content": "hi"}, "stop", usage={"prompt_tokens": 3, "completion_tokens": 2})
    )
    # the usage is emitted at once, not deferred to [DONE]; the stop reason comes with the end
    assert events[-1] == MessageDelta(None, Usage(input_tokens=3, output_tokens=2))
    assert decoder.feed(DONE) == [
        PartStop(0),
        MessageDelta("end_turn", Usage(input_tokens=3, output_tokens=2)),
        MessageStop(),
    ]


def test_tool_call_stream_with_usage_chunk() -> None:
    events = decode(
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [tool(0, id="call_1", name="get", arguments="")],
            }
        )
        + chunk({"tool_calls": [tool(0, arguments='{"a"')]})
        + chunk({"tool_calls": [tool(0, arguments=": 1}")]})
        + chunk(finish="tool_calls")
        + usage_chunk(50, 20)
        + DONE
    )
    assert events == [
        START,
        PartStart(2, "tool_call", "call_1", "get"),
        Delta(2, '{"a"', "tool_json"),
        Delta(2, ": 1}", "tool_json"),
        MessageDelta(None, Usage(input_tokens=50, output_tokens=20)),
        PartStop(2),
        MessageDelta("tool_call", Usage(input_tokens=50, output_tokens=20)),
        MessageStop(),
    ]


def test_message_start_on_first_chunk_and_text_part_started_once() -> None:
    decoder = OpenAIDecoder()
    assert decoder.feed(chunk({"role": "assistant", "content": ""})) == [START]
    assert decoder.feed(chunk({"content": "a"})) == [PartStart(0, "text"), Delta(0, "a")]
    assert decoder.feed(chunk({"content": "b"})) == [Delta(0, "b")]


def test_reasoning_goes_to_the_thinking_lane() -> None:
    events = decode(
        chunk({"reasoning_content": "think"})
        + chunk({"reasoning": " more"})
        + chunk({"content": "answer"})
        + chunk(finish="stop")
        + DONE
    )
    assert events == [
        START,
        PartStart(1, "thinking"),
        Delta(1, "think", "thinking"),
        Delta(1, " more", "thinking"),
        PartStop(1),
        PartStart(0, "text"),
        Delta(0, "answer"),
        PartStop(0),
        MessageDelta("end_turn", None),
        MessageStop(),
    ]


def test_interleaved_parallel_tool_fragments() -> None:
    events = decode(
        chunk(
            {
                "tool_calls": [
                    tool(0, id="a", name="f", arguments='{"x"'),
                    tool(1, id="b", name="g", arguments='{"y"'),
                ]
            }
        )
        + chunk({"tool_calls": [tool(1, arguments=": 2}")]})
        + chunk({"tool_calls": [tool(0, arguments=": 1}")]})
        + chunk(finish="tool_calls")
        + DONE
    )
    assert lanes(events) == [
        ("tool_call", "a", "f", '{"x": 1}'),
        ("tool_call", "b", "g", '{"y": 2}'),
    ]


def test_tool_calls_without_index_are_told_apart_by_id() -> None:
    no_index = [
        {"id": "a", "function": {"name": "f", "arguments": "{}"}},
        {"id": "b", "function": {"name": "g", "arguments": "{"}},
    ]
    events = decode(
        chunk({"tool_calls": no_index})
        + chunk({"tool_calls": [{"function": {"arguments": "}"}}]})
        + chunk(finish="tool_calls")
        + DONE
    )
    assert lanes(events) == [("tool_call", "a", "f", "{}"), ("tool_call", "b", "g", "{}")]


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("stop", "end_turn"),
        ("tool_calls", "tool_call"),
        ("length", "max_tokens"),
        ("function_call", "tool_call"),
        ("content_filter", "refusal"),
    ],
)
def test_finish_reason_mapping(finish: str, stop: str) -> None:
    assert decode(chunk(finish=finish) + DONE)[-2] == MessageDelta(stop, None)


def test_content_after_the_finish_is_kept_and_the_last_finish_reason_counts() -> None:
    # as the SDK folds it: choice 0's later deltas append to the same text, and its finish_reason
    # is the last one sent (rxturn dropped "late" and kept "stop")
    events = decode(chunk({"content": "a"}, "stop") + chunk({"content": "late"}, "length") + DONE)
    assert events == [
        START,
        PartStart(0, "text"),
        Delta(0, "a"),
        Delta(0, "late"),
        PartStop(0),
        MessageDelta("max_tokens", None),
        MessageStop(),
    ]


def test_done_without_finish_reason_finishes_as_stop() -> None:
    assert decode(chunk({"content": "a"}) + DONE)[-3:] == [
        PartStop(0),
        MessageDelta("end_turn", None),
        MessageStop(),
    ]


def test_finish_then_end_of_body_without_done_completes() -> None:
    events = decode(chunk({"content": "a"}, "stop"))
    assert events[-2:] == [MessageDelta("end_turn", None), MessageStop()]


@pytest.mark.parametrize("done", [DONE, b"data:  [DONE] \n\n"], ids=["exact", "spaced"])
def test_done_ends_the_stream_whether_exact_or_with_spaces(done: bytes) -> None:
    # the exact marker is recognised before JSON decoding, the spaced one after it fails
    data = chunk({"content": "Hi"}) + done + chunk({"content": "ignored"})
    assert decode(data) == [
        START,
        PartStart(0, "text"),
        Delta(0, "Hi"),
        PartStop(0),
        MessageDelta("end_turn", None),
        MessageStop(),
    ]


def test_malformed_usage_chunk_names_its_line() -> None:
    # the line is worked out only for the error; it must still be the usage chunk's own line
    data = (
        chunk({"content": "Hi"})
        + chunk(finish="stop")
        + chunk(choices=[], usage={"prompt_tokens": -3})
    )
    events, error = run(OpenAIDecoder, [data + DONE])
    assert events[:2] == [START, PartStart(0, "text")]
    assert error is not None
    assert error.startswith("StreamProtocolError: malformed OpenAI usage: 'prompt_tokens'")
    assert error.endswith("(line 5)")


def test_each_chunks_usage_replaces_the_last_as_the_sdk_folds_it() -> None:
    """The SDK's snapshot takes every chunk's ``usage``, ``null`` included: a usage sent
    before the finish and not repeated is gone; one on the last chunk stands."""
    forgotten = (
        chunk(
            {"content": "a"}, usage={"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5}
        )
        + chunk({"content": "b"})
        + chunk(finish="stop")
        + DONE
    )
    assert sdk_openai(forgotten).usage is None
    assert decode(forgotten)[-2] == MessageDelta("end_turn", None)
    first = {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5}
    last = {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}
    kept = chunk({"content": "a"}, usage=first) + chunk(finish="stop", usage=last)
    expected = chat_expected(sdk_openai(kept + DONE).usage)
    assert expected == Usage(input_tokens=4, output_tokens=2)
    assert decode(kept + DONE)[-2] == MessageDelta("end_turn", expected)
    # a chunk after the usage chunk that drops it again: the message ends without usage
    dropped = chunk({"content": "a"}, "stop") + usage_chunk(3, 1) + chunk(choices=[]) + DONE
    assert sdk_openai(dropped).usage is None
    assert fold_usage(decode(dropped)) is None


# --- truncation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"",
        chunk({"content": "a"}),
        chunk({"content": "a"}) + b'data: {"id": "chatcmpl-1", "cho',
        DONE,
    ],
    ids=["empty", "no-finish-no-done", "cut-mid-chunk", "done-before-any-chunk"],
)
def test_truncated_streams_have_no_message_stop(data: bytes) -> None:
    decoder = OpenAIDecoder()
    events = decoder.feed(data) + decoder.close()
    assert not decoder.saw_terminal and MessageStop() not in events


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "cls", "message"),
    [
        (
            {"message": "Slow down", "type": "rate_limit_error"},
            RateLimitError,
            "rate_limit_error: Slow down",
        ),
        (
            {"message": "Slow down", "type": None, "code": "rate_limit_exceeded"},
            RateLimitError,
            "rate_limit_exceeded: Slow down",
        ),
        ({"message": "busy", "code": 503}, OverloadedError, "503: busy"),
        (
            {"message": "busy", "type": "server_error", "code": 529},
            OverloadedError,
            "server_error: busy",
        ),
        ({"message": "bad", "type": "server_error"}, ProviderStreamError, "server_error: bad"),
        ("plain string", ProviderStreamError, "error: plain string"),
    ],
    ids=["rate-type", "rate-code", "503", "529", "other", "string"],
)
def test_error_chunk(error: Any, cls: type[Exception], message: str) -> None:
    data = chunk({"content": "partial"}) + f"data: {json.dumps({'error': error})}\n\n".encode()
    decoder = OpenAIDecoder()
    assert decoder.feed(data) == [START, PartStart(0, "text"), Delta(0, "partial")]
    with pytest.raises(cls) as caught:
        decoder.close()
    assert type(caught.value) is cls and str(caught.value) == message
    if isinstance(caught.value, RateLimitError):
        assert caught.value.status_code is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"data: {nope\n\n", "StreamProtocolError: invalid JSON in chunk data: "),
        (
            b"event: chunk\ndata: [1]\n\n",
            "StreamProtocolError: unexpected JSON shape in data of event 'chunk': ",
        ),
        (
            b'data: {"id": "x"}\n\n',
            "StreamProtocolError: chat.completion.chunk without 'choices' or 'error'",
        ),
        (
            b'data: {"choices": [{"index": 0, "delta": {"content": 5}}]}\n\n',
            "StreamProtocolError: unexpected JSON shape",
        ),
    ],
    ids=["bad-json", "array", "no-choices", "content-not-a-string"],
)
def test_malformed_chunks(data: bytes, message: str) -> None:
    events, error = run(OpenAIDecoder, [chunk({"content": "a"}) + data])
    assert events[:3] == [START, PartStart(0, "text"), Delta(0, "a")]
    assert error is not None and error.startswith(message)
    assert error.endswith(f"(line {3 if data.startswith(b'data') else 4})")


# --- non-streaming replies ------------------------------------------------------------------------


def _completion(message: dict[str, Any], finish: str | None = "stop", **extra: Any) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-9",
            "object": "chat.completion",
            "model": "gpt-x",
            "choices": [
                {"index": 1, "message": {"content": "other choice"}},
                {"index": 0, "message": message, "finish_reason": finish},
            ],
            **extra,
        }
    ).encode()


def test_parse_completion_text_and_tool_calls() -> None:
    body = _completion(
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a": 1}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": ""}},
                {"id": "call_3", "type": "function", "function": {"name": "h"}},
            ],
        },
        "tool_calls",
        usage={"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
    )
    message = parse_openai_completion(body)
    assert (message.id, message.model) == ("chatcmpl-9", "gpt-x")
    assert message.content == (
        TextPart("Checking."),
        ToolCallPart("call_1", "f", {"a": 1}),
        ToolCallPart("call_2", "g", {}),
        ToolCallPart("call_3", "h", {}),
    )
    assert message.stop_reason is StopReason.TOOL_CALL
    assert message.usage == Usage(input_tokens=9, output_tokens=4)


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("stop", StopReason.REFUSAL),  # refused in words: a refusal, not an end of turn
        ("length", StopReason.MAX_TOKENS),
        (None, StopReason.REFUSAL),
        ("content_filter", StopReason.REFUSAL),
    ],
)
def test_parse_completion_stop_and_refusal(finish: str | None, stop: StopReason) -> None:
    message = parse_openai_completion(
        _completion(
            {"content": None, "refusal": "no"},
            finish,
            usage={"prompt_tokens": 0, "completion_tokens": 0},
        )
    )
    assert (message.content, message.stop_reason, message.usage) == (
        (RefusalPart("no"),),
        stop,
        None,
    )


@pytest.mark.parametrize(
    ("finish", "stop"),
    [("stop", StopReason.END_TURN), (None, StopReason.END_TURN), ("content_filter", "refusal")],
)
def test_parse_completion_empty(finish: str | None, stop: StopReason) -> None:
    message = parse_openai_completion(_completion({"content": None}, finish))
    assert (message.content, message.stop_reason) == ((), stop)


def test_parse_completion_errors() -> None:
    with pytest.raises(InvalidToolInputError) as caught:
        parse_openai_completion(
            _completion(
                {"tool_calls": [{"id": "c", "function": {"name": "f", "arguments": '{"a": '}}]}
            )
        )
    assert caught.value.raw == '{"a": '
    with pytest.raises(StreamProtocolError, match="invalid JSON in OpenAI chat completion body"):
        parse_openai_completion(b"not json")
    with pytest.raises(RateLimitError, match="rate_limit_exceeded: quota"):
        parse_openai_completion(
            b'{"error": {"message": "quota", "type": null, "code": "rate_limit_exceeded"}}'
        )


# --- the remaining edges -------------------------------------------------------------------------


def test_errors_are_final_and_done_ends_the_data() -> None:
    decoder = OpenAIDecoder(max_line_bytes=16)
    with pytest.raises(StreamProtocolError, match="longer than 16 bytes"):
        decoder.feed(b"data: " + b"x" * 40 + b"\n\n")
    with pytest.raises(StreamProtocolError):
        decoder.feed(DONE)
    with pytest.raises(StreamProtocolError):
        decoder.close()
    done = OpenAIDecoder()
    assert done.feed(chunk({"content": "a"}) + DONE)[-1] == MessageStop()
    assert done.feed(b"data: {not json}\n\n") == []
    assert done.close() == [] and done.close() == []


def test_error_as_the_first_chunk_raises_at_once() -> None:
    with pytest.raises(RateLimitError):
        OpenAIDecoder().feed(b'data: {"error": {"message": "m", "code": 429}}\n\n')


def test_event_data_limit_hit_at_close() -> None:
    decoder = OpenAIDecoder(max_event_bytes=8)
    decoder.feed(b"data: 1234\ndata: 12345")
    with pytest.raises(StreamProtocolError, match="data longer than 8 bytes"):
        decoder.close()


def test_empty_data_choice_without_delta_and_zero_usage() -> None:
    events = decode(
        chunk({"content": "a"}, usage={"prompt_tokens": 2, "completion_tokens": 1})
        + b"data:\n\n"
        + chunk(choices=[{"index": 0, "finish_reason": "stop"}])
        + usage_chunk(0, 0)
        + DONE
    )
    # the all-zero usage chunk releases the deferred delta; as the SDK's, its usage is the
    # last chunk's, which reports nothing
    assert events[-3:] == [
        PartStop(0),
        MessageDelta("end_turn", None),
        MessageStop(),
    ]


def test_reasoning_after_text_then_more_text() -> None:
    events = decode(
        chunk({"content": "a"})
        + chunk({"reasoning": "hmm"})
        + chunk({"content": "b"})
        + chunk({"reasoning_content": "more"})
        + chunk(finish="stop")
        + DONE
    )
    assert events == [
        START,
        PartStart(0, "text"),
        Delta(0, "a"),
        PartStart(1, "thinking"),
        Delta(1, "hmm", "thinking"),
        PartStop(1),
        Delta(0, "b"),
        PartStart(1, "thinking"),
        Delta(1, "more", "thinking"),
        PartStop(0),
        PartStop(1),
        MessageDelta("end_turn", None),
        MessageStop(),
    ]


def test_tool_call_entries_without_index_id_or_function() -> None:
    events = decode(
        chunk({"tool_calls": [{"function": {"name": "f", "arguments": "{"}}]})  # no index, no id
        + chunk({"tool_calls": [{"index": 3}]})  # nothing to open a call with: skipped
        + chunk({"tool_calls": [{"function": {"arguments": "}"}}]})
        + chunk(finish="tool_calls")
        + DONE
    )
    assert lanes(events) == [("tool_call", "", "f", "{}")]


def test_parse_completion_without_usage_or_choice_zero() -> None:
    message = parse_openai_completion(
        b'{"id": "c", "model": "m", "choices": [{"index": 1, "message": {"content": "x"}}]}'
    )
    assert (message.content, message.stop_reason, message.usage) == ((), StopReason.END_TURN, None)


def test_a_known_tool_call_id_without_index_continues_its_call() -> None:
    events = decode(
        chunk(
            {
                "tool_calls": [
                    {"id": "a", "function": {"name": "f", "arguments": "{"}},
                    {"id": "b", "function": {"name": "g", "arguments": "["}},
                ]
            }
        )
        + chunk({"tool_calls": [{"id": "a", "function": {"arguments": "}"}}]})
        + chunk({"tool_calls": [{"id": "b", "function": {"arguments": "]"}}]})
        + chunk(finish="tool_calls")
        + DONE
    )
    assert lanes(events) == [("tool_call", "a", "f", "{}"), ("tool_call", "b", "g", "[]")]
