"""OpenAI-compatible variants: array ``content`` (Mistral), legacy ``function_call``, refusals.

The Mistral stream is a real recording (tests/fixtures/README.md); its expected text and
thinking are computed here from the raw chunks, independently of the decoder. The
``function_call`` streams follow the format OpenAI documented for its legacy functions API
(no public recording was found) and are checked against the openai SDK's own accumulation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rxturn import replay_message
from rxturn.events import Delta, PartStart
from rxturn.fold import fold_events
from rxturn.messages import RefusalPart, StopReason, TextPart, ToolCallPart, Usage
from rxturn.wire import OpenAIDecoder, parse_openai_completion

from ._support import sdk_openai

MISTRAL = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "openai-compatible"
    / "mistral_thinking_chunks.sse"
)


def _chunks(data: bytes) -> list[dict[str, Any]]:
    out = []
    for line in data.splitlines():
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def _decode(data: bytes) -> list[Any]:
    decoder = OpenAIDecoder()
    return decoder.feed(data) + decoder.close()


def test_mistral_array_content_folds_like_a_string() -> None:
    data = MISTRAL.read_bytes()
    text, thinking = [], []
    for chunk in _chunks(data):
        content = chunk["choices"][0]["delta"].get("content")
        if isinstance(content, str):
            text.append(content)
        elif isinstance(content, list):
            for part in content:
                if part["type"] == "text":
                    text.append(part["text"])
                elif part["type"] == "thinking":
                    thinking.extend(p["text"] for p in part["thinking"] if p["type"] == "text")
    assert thinking and text  # the recording has both
    events = _decode(data)
    assert "".join(e.text for e in events if isinstance(e, Delta) and e.kind == "thinking") == (
        "".join(thinking)
    )
    message = replay_message(data, "openai")
    assert message.content == (TextPart("".join(text)),)
    assert message.stop_reason is StopReason.END_TURN
    assert message.usage == Usage(input_tokens=10, output_tokens=232)  # read from the file
    kept = replay_message(data, "openai", keep_thinking=True)
    assert [type(p).__name__ for p in kept.content] == ["ThinkingPart", "TextPart"]
    assert kept.content[0].thinking == "".join(thinking)  # pyright: ignore[reportAttributeAccessIssue]


def _sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + (
        b"data: [DONE]\n\n"
    )


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def test_array_text_parts_are_joined_in_order_and_other_parts_skipped() -> None:
    data = _sse(
        _chunk({"role": "assistant", "content": [{"type": "text", "text": "Hel"}]}),
        _chunk({"content": [{"type": "image_url", "image_url": {"url": "x"}}]}),
        _chunk({"content": [{"type": "text", "text": "lo"}, {"type": "text", "text": "!"}]}),
        _chunk({"content": " ok"}, "stop"),
    )
    assert replay_message(data, "openai").content == (TextPart("Hello! ok"),)


def test_legacy_function_call_is_one_tool_call_like_the_sdk_accumulates() -> None:
    data = _sse(
        _chunk({"role": "assistant", "function_call": {"name": "get_weather", "arguments": ""}}),
        _chunk({"function_call": {"arguments": '{"city": '}}),
        _chunk({"function_call": {"arguments": '"Paris"}'}}),
        _chunk({}, "function_call"),
    )
    sdk = sdk_openai(data).choices[0].message.function_call
    message = replay_message(data, "openai")
    assert message.content == (ToolCallPart("", sdk.name, json.loads(sdk.arguments)),)
    assert message.stop_reason is StopReason.TOOL_CALL
    starts = [e for e in _decode(data) if isinstance(e, PartStart)]
    assert starts == [PartStart(-2, "tool_call", "", "get_weather")]


def test_streamed_refusal_is_a_refusal_part_and_stop_like_the_sdk() -> None:
    data = _sse(
        _chunk({"role": "assistant", "content": None, "refusal": ""}),
        _chunk({"refusal": "I can't"}),
        _chunk({"refusal": " help."}),
        _chunk({}, "stop"),
    )
    sdk = sdk_openai(data).choices[0].message
    message = replay_message(data, "openai")
    assert message.content == (RefusalPart(sdk.refusal),)
    assert message.refusal == "I can't help."
    assert message.text == ""
    assert message.stop_reason is StopReason.REFUSAL


def test_content_filter_finish_is_a_refusal() -> None:
    data = _sse(_chunk({"content": "Par"}), _chunk({}, "content_filter"))
    message = replay_message(data, "openai")
    assert (message.text, message.stop_reason) == ("Par", StopReason.REFUSAL)


def test_non_streaming_array_content_and_function_call() -> None:
    body = json.dumps(
        {
            "id": "x",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                        "function_call": {"name": "f", "arguments": '{"k": 1}'},
                    },
                    "finish_reason": "function_call",
                }
            ],
        }
    ).encode()
    message = parse_openai_completion(body)
    assert message.content == (TextPart("ab"), ToolCallPart("", "f", {"k": 1}))
    assert message.stop_reason is StopReason.TOOL_CALL


def test_refusal_folds_the_same_event_by_event() -> None:
    data = _sse(_chunk({"refusal": "no"}), _chunk({}, "stop"))
    assert fold_events(_decode(data)).message().content == (RefusalPart("no"),)
