"""The Ollama ``/api/chat`` NDJSON decoder, on streams written from the Ollama API docs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxturn.errors import InvalidToolInputError, ProviderStreamError, StreamProtocolError
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
from rxturn.wire import OllamaDecoder, parse_ollama_chat

from ._support import bytewise, chunked, lanes, run

MODEL = "llama3.2"
CREATED = "2023-08-04T08:52:19.385406455-07:00"


def line(message: dict[str, Any] | None = None, **fields: Any) -> bytes:
    body: dict[str, Any] = {"model": MODEL, "created_at": CREATED}
    if message is not None:
        body["message"] = {"role": "assistant", **message}
    body.update(fields)
    body.setdefault("done", False)
    return json.dumps(body).encode() + b"\n"


def done(
    reason: str = "stop", prompt: int | None = 26, evals: int | None = 290, **extra: Any
) -> bytes:
    fields: dict[str, Any] = {
        "done": True,
        "done_reason": reason,
        "total_duration": 4883583458,
        "load_duration": 1334875,
        **extra,
    }
    if prompt is not None:
        fields["prompt_eval_count"] = prompt
    if evals is not None:
        fields["eval_count"] = evals
    return line({"content": ""}, **fields)


# the documented example: "Why is the sky blue?" streamed as content chunks
TEXT_STREAM = (
    line({"content": "The"}) + line({"content": " sky is"}) + line({"content": " blue."}) + done()
)

# the documented streaming tool call (Ollama blog "Streaming responses with tool calling")
TOOL_STREAM = (
    line({"content": "", "thinking": "The user wants the weather."})
    + line(
        {
            "content": "",
            "tool_calls": [
                {
                    "function": {
                        "name": "get_current_weather",
                        "arguments": {"format": "celsius", "location": "Toronto"},
                    }
                }
            ],
        }
    )
    + done()
)

START = MessageStart(f"ollama-{CREATED}", MODEL)


def decode(data: bytes) -> list[StreamEvent]:
    decoder = OllamaDecoder()
    events = decoder.feed(data) + decoder.close()
    assert decoder.saw_terminal == any(isinstance(e, MessageStop) for e in events)
    return events


@pytest.mark.parametrize("data", [TEXT_STREAM, TOOL_STREAM], ids=["text", "tool"])
def test_whole_bytewise_trailing_and_crlf_agree(data: bytes) -> None:
    whole = run(OllamaDecoder, [data])
    assert whole[1] is None and isinstance(whole[0][-1], MessageStop)
    assert run(OllamaDecoder, bytewise(data)) == whole
    assert run(OllamaDecoder, [data + b'{"garbage after done']) == whole
    assert run(OllamaDecoder, [data.replace(b"\n", b"\r\n")]) == whole


@settings(max_examples=100, deadline=None)
@given(
    pick=st.sampled_from([TEXT_STREAM, TOOL_STREAM]),
    cuts=st.lists(st.integers(0, 2000), max_size=12),
)
def test_random_splits(pick: bytes, cuts: list[int]) -> None:
    assert run(OllamaDecoder, chunked(pick, cuts)) == run(OllamaDecoder, [pick])


def test_text_stream() -> None:
    assert decode(TEXT_STREAM) == [
        START,
        PartStart(0, "text"),
        Delta(0, "The"),
        Delta(0, " sky is"),
        Delta(0, " blue."),
        PartStop(0),
        MessageDelta("end_turn", Usage(input_tokens=26, output_tokens=290)),
        MessageStop(),
    ]


def test_thinking_then_whole_tool_call() -> None:
    assert decode(TOOL_STREAM) == [
        START,
        PartStart(1, "thinking"),
        Delta(1, "The user wants the weather.", "thinking"),
        PartStop(1),
        PartStart(2, "tool_call", "call_0", "get_current_weather"),
        Delta(2, '{"format":"celsius","location":"Toronto"}', "tool_json"),
        PartStop(2),
        # Ollama says "stop" when it calls tools: promoted to tool_call
        MessageDelta("tool_call", Usage(input_tokens=26, output_tokens=290)),
        MessageStop(),
    ]


def test_text_before_and_after_tool_calls_keeps_order_and_ids() -> None:
    calls = [
        {"id": "call_abc", "function": {"index": 0, "name": "f", "arguments": {"a": 1}}},
        {"function": {"name": "g", "arguments": {}}},
    ]
    events = decode(
        line({"content": "Let me look."})
        + line({"content": "", "tool_calls": calls})
        + line({"content": "Done."})
        + done()
    )
    assert lanes(events) == [
        ("text", "", "", "Let me look."),
        ("tool_call", "call_abc", "f", '{"a":1}'),
        ("tool_call", "call_1", "g", "{}"),
        ("text", "", "", "Done."),
    ]
    # every lane is closed, so the message keeps this order
    assert sum(isinstance(e, PartStop) for e in events) == 4


def test_done_reason_length() -> None:
    events = decode(line({"content": "cut"}) + done("length", 10, 128))
    assert events[-3:] == [
        PartStop(0),
        MessageDelta("max_tokens", Usage(input_tokens=10, output_tokens=128)),
        MessageStop(),
    ]


def test_length_with_tool_calls_stays_max_tokens() -> None:
    events = decode(
        line({"tool_calls": [{"function": {"name": "f", "arguments": {}}}]}) + done("length")
    )
    assert events[-2].stop_reason == "max_tokens"  # pyright: ignore[reportAttributeAccessIssue]


@pytest.mark.parametrize(
    ("prompt", "evals", "usage"),
    [(None, None, None), (0, 0, None), (7, None, Usage(input_tokens=7))],
    ids=["absent", "zero", "prompt-only"],
)
def test_usage(prompt: int | None, evals: int | None, usage: Usage | None) -> None:
    assert decode(line({"content": "x"}) + done("stop", prompt, evals))[-2] == MessageDelta(
        "end_turn", usage
    )


def test_unknown_done_reason_is_kept_raw() -> None:
    assert decode(done("unload", None, None))[-2] == MessageDelta("unload", None)


def test_lines_after_done_are_ignored() -> None:
    decoder = OllamaDecoder()
    events = decoder.feed(TEXT_STREAM + line({"content": "late"}) + b'{"error": "late"}\n')
    assert events[-1] == MessageStop() and Delta(0, "late") not in events
    assert decoder.close() == []


def test_truncated_stream() -> None:
    for data in (b"", TEXT_STREAM[: TEXT_STREAM.rindex(b'{"model"')], TEXT_STREAM[:-40]):
        decoder = OllamaDecoder()
        events = decoder.feed(data) + decoder.close()
        assert not decoder.saw_terminal and MessageStop() not in events


def test_error_line() -> None:
    decoder = OllamaDecoder()
    data = line({"content": "Hel"}) + b'{"error": "model runner has unexpectedly stopped"}\n'
    assert decoder.feed(data) == [START, PartStart(0, "text"), Delta(0, "Hel")]
    with pytest.raises(
        ProviderStreamError, match=r"^error: model runner has unexpectedly stopped$"
    ):
        decoder.close()
    with pytest.raises(ProviderStreamError):
        OllamaDecoder().feed(b'{"error": "model \\"nope\\" not found"}\n')


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json}\n", "StreamProtocolError: invalid JSON in NDJSON line: "),
        (
            b'{"message": {"content": 1}}\n',
            "StreamProtocolError: unexpected JSON shape in NDJSON line: ",
        ),
        (
            b'{"message": {"tool_calls": [{"function": {"arguments": {}}}]}}\n',
            "StreamProtocolError: tool call 0 has no function name",
        ),
        (
            b'{"message": {"content": "\xff"}}\n',
            "StreamProtocolError: NDJSON line is not valid UTF-8",
        ),
    ],
    ids=["bad-json", "bad-shape", "nameless-tool", "bad-utf8"],
)
def test_malformed_lines_name_the_line(data: bytes, message: str) -> None:
    events, error = run(OllamaDecoder, [line({"content": "a"}) + b"\n" + data])
    assert events == [START, PartStart(0, "text"), Delta(0, "a")]
    assert error is not None and error.startswith(message) and error.endswith("(line 3)")


# --- non-streaming replies -----------------------------------------------------------------------


def test_parse_chat_reply() -> None:
    body = json.dumps(
        {
            "model": MODEL,
            "created_at": CREATED,
            "message": {
                "role": "assistant",
                "content": "Calling.",
                "thinking": "hidden",
                "tool_calls": [
                    {"function": {"name": "calculate", "arguments": {"expression": "2 + 2"}}},
                    {"id": "call_x", "function": {"name": "s", "arguments": '{"k": "v"}'}},
                    {"function": {"name": "n"}},
                ],
            },
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 15,
            "eval_count": 25,
        }
    ).encode()
    message = parse_ollama_chat(body)
    assert (message.id, message.model) == (f"ollama-{CREATED}", MODEL)
    assert message.content == (
        TextPart("Calling."),
        ToolCallPart("call_0", "calculate", {"expression": "2 + 2"}),
        ToolCallPart("call_x", "s", {"k": "v"}),
        ToolCallPart("call_2", "n", {}),
    )
    assert message.stop_reason is StopReason.TOOL_CALL
    assert message.usage == Usage(input_tokens=15, output_tokens=25)


def test_parse_chat_reply_plain_and_errors() -> None:
    plain = parse_ollama_chat(
        b'{"model": "m", "message": {"content": "hi"}, "done": true, "done_reason": "length"}'
    )
    assert (plain.text, plain.stop_reason, plain.usage) == ("hi", StopReason.MAX_TOKENS, None)
    with pytest.raises(ProviderStreamError, match="error: boom"):
        parse_ollama_chat(b'{"error": "boom"}')
    with pytest.raises(InvalidToolInputError):
        parse_ollama_chat(
            b'{"message": {"tool_calls": [{"function": {"name": "f", "arguments": "{bad"}}]}}'
        )
    with pytest.raises(StreamProtocolError, match="invalid JSON in Ollama chat body"):
        parse_ollama_chat(b"")


# --- the remaining edges -------------------------------------------------------------------------


def test_framing_errors_are_final_and_feed_after_done_is_empty() -> None:
    decoder = OllamaDecoder(max_line_bytes=16)
    with pytest.raises(StreamProtocolError, match="longer than 16 bytes"):
        decoder.feed(b"x" * 40 + b"\n")
    with pytest.raises(StreamProtocolError):
        decoder.feed(b"{}\n")
    finished = OllamaDecoder()
    assert finished.feed(TEXT_STREAM)[-1] == MessageStop()
    assert finished.feed(line({"content": "late"})) == []


def test_thinking_in_several_lines_then_text_then_argument_forms() -> None:
    calls = [
        {"function": {"name": "no_args"}},
        {"function": {"name": "as_text", "arguments": '{"a": 1}'}},
    ]
    events = decode(
        line({"content": "", "thinking": "one"})
        + line({"content": "", "thinking": " two"})
        + line({"content": "Hi"})
        + line({"content": "", "tool_calls": calls})
        + done()
    )
    assert events[1:9] == [
        PartStart(1, "thinking"),
        Delta(1, "one", "thinking"),
        Delta(1, " two", "thinking"),
        PartStop(1),
        PartStart(0, "text"),
        Delta(0, "Hi"),
        PartStop(0),
        PartStart(2, "tool_call", "call_0", "no_args"),
    ]
    assert lanes(events)[2:] == [
        ("tool_call", "call_0", "no_args", ""),
        ("tool_call", "call_1", "as_text", '{"a": 1}'),
    ]


def test_parse_chat_reply_without_message_is_no_reply() -> None:
    """A body without ``message`` is some other document, never an empty reply (a stream's
    done line may go without one: test_done_line_without_message)."""
    with pytest.raises(StreamProtocolError, match="missing required field `message`"):
        parse_ollama_chat(b'{"model": "m", "done": true}')


def test_parse_chat_reply_with_an_empty_message() -> None:
    message = parse_ollama_chat(b'{"model": "m", "message": {"content": ""}, "done": true}')
    assert (message.content, message.stop_reason, message.usage) == ((), StopReason.END_TURN, None)


def test_done_line_without_message() -> None:
    events = decode(
        line({"content": "a"}) + b'{"model": "m", "done": true, "done_reason": "stop"}\n'
    )
    assert events[-3:] == [PartStop(0), MessageDelta("end_turn", None), MessageStop()]


def test_parse_chat_reply_that_says_it_is_not_done_is_no_reply() -> None:
    """``"done": false`` is one line of a stream, not the reply: it was served as a whole
    reply (the non-streaming mode and the rescue kept a cut reply as complete)."""
    with pytest.raises(StreamProtocolError) as caught:
        parse_ollama_chat(b'{"model": "m", "message": {"content": "Hel"}, "done": false}')
    assert str(caught.value) == "Ollama chat body is not a finished reply (done is false)"


@pytest.mark.parametrize("done", [b', "done": true', b""], ids=["done", "no-done-field"])
def test_parse_chat_reply_that_is_done_or_does_not_say(done: bytes) -> None:
    # compatible servers may leave ``done`` out of a non-streaming body
    message = parse_ollama_chat(b'{"model": "m", "message": {"content": "Hello"}' + done + b"}")
    assert message.content == (TextPart("Hello"),)
