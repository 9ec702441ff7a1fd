"""The pure byte emitter: shapes against recorded provider streams, delta splitting, faults.

The recorded lines below are copied from real provider streams (the anthropic-sdk-python and
openai-python test fixtures, see ``tests/fixtures``): the fake's events must carry the same
keys as the real ones.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxturn.testing import load_scenario
from rxturn.testing._emit import (
    ReplyContext,
    error_body,
    fault_plan,
    prompt_words,
    stream_events,
)

# --- recorded (anthropic tool_use_response.sse, openai tool_call.sse / plain_text.sse) ---
REC_A_MESSAGE_START = {
    "type": "message_start",
    "message": {
        "id": "msg_019Q1hrJbZG26Fb9BQhrkHEr",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 377,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
            "service_tier": "standard",
        },
    },
}
REC_A_TEXT_START = {
    "type": "content_block_start",
    "index": 0,
    "content_block": {"type": "text", "text": ""},
}
REC_A_TEXT_DELTA = {
    "type": "content_block_delta",
    "index": 0,
    "delta": {"type": "text_delta", "text": "I"},
}
REC_A_TOOL_START = {
    "type": "content_block_start",
    "index": 1,
    "content_block": {
        "type": "tool_use",
        "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
        "name": "get_weather",
        "input": {},
    },
}
REC_A_JSON_DELTA = {
    "type": "content_block_delta",
    "index": 1,
    "delta": {"type": "input_json_delta", "partial_json": '{"locati'},
}
REC_A_BLOCK_STOP = {"type": "content_block_stop", "index": 1}
REC_A_MESSAGE_DELTA = {
    "type": "message_delta",
    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
    "usage": {"output_tokens": 65},
}
REC_A_MESSAGE_STOP = {"type": "message_stop"}
REC_A_PING = b'event: ping\ndata: {"type": "ping"}\n\n'
REC_O_FIRST = {
    "id": "chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL",
    "object": "chat.completion.chunk",
    "created": 1727346168,
    "model": "gpt-4o-2024-08-06",
    "system_fingerprint": "fp_5050236cbd",
    "choices": [
        {
            "index": 0,
            "delta": {"role": "assistant", "content": "", "refusal": None},
            "logprobs": None,
            "finish_reason": None,
        }
    ],
}
REC_O_TOOL_HEAD = {
    "index": 0,
    "id": "call_c91SqDXlYFuETYv8mUHzz6pp",
    "type": "function",
    "function": {"name": "GetWeatherArgs", "arguments": ""},
}
REC_O_TOOL_ARGS = {"index": 0, "function": {"arguments": '{"'}}
REC_O_FINISH = {
    "id": "chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL",
    "object": "chat.completion.chunk",
    "created": 1727346168,
    "model": "gpt-4o-2024-08-06",
    "system_fingerprint": "fp_5050236cbd",
    "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}],
}
REC_O_USAGE = {
    "id": "chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL",
    "object": "chat.completion.chunk",
    "created": 1727346168,
    "model": "gpt-4o-2024-08-06",
    "system_fingerprint": "fp_5050236cbd",
    "choices": [],
    "usage": {"prompt_tokens": 14, "completion_tokens": 30, "total_tokens": 44},
}


def _entry(**fields: Any) -> Any:
    return load_scenario({"models": {"*": [fields]}}).models["*"][0]


CTX = ReplyContext(model="m", seq=7, created=1_727_346_168, prompt_words=3, include_usage=True)


def _keys(node: Any) -> Any:
    """The key structure of a JSON value (dict keys recursively; lists by their first item)."""
    if isinstance(node, dict):
        return {key: _keys(value) for key, value in node.items()}
    if isinstance(node, list) and node:
        return [_keys(node[0])]
    return None


def _anthropic(events: list[bytes]) -> list[tuple[str, Any]]:
    parsed = []
    for event in events:
        assert event.endswith(b"\n\n") and event.count(b"\n") == 3
        name_line, data_line, _, _ = event.split(b"\n")
        assert name_line.startswith(b"event: ") and data_line.startswith(b"data: ")
        name, data = name_line[7:].decode(), json.loads(data_line[6:])
        assert data["type"] == name  # the event name is repeated in the payload
        parsed.append((name, data))
    return parsed


def _openai(events: list[bytes]) -> list[Any]:
    assert events[-1] == b"data: [DONE]\n\n"
    chunks = []
    for event in events[:-1]:
        assert event.startswith(b"data: ") and event.endswith(b"\n\n") and event.count(b"\n") == 2
        chunks.append(json.loads(event[6:]))
    return chunks


def test_anthropic_events_have_the_recorded_shapes() -> None:
    entry = _entry(text="I'll check.", tool_calls=[{"name": "get_weather", "input": {"a": 1}}])
    parsed = _anthropic(stream_events(entry, "anthropic", CTX))
    names = [name for name, _ in parsed]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    by_kind: dict[Any, Any] = {}
    for name, data in parsed:
        kind = (name, data.get("content_block", data.get("delta", {})).get("type"))
        by_kind.setdefault(kind, data)
    assert _keys(by_kind[("message_start", None)]) == _keys(REC_A_MESSAGE_START)
    assert _keys(by_kind[("content_block_start", "text")]) == _keys(REC_A_TEXT_START)
    assert _keys(by_kind[("content_block_delta", "text_delta")]) == _keys(REC_A_TEXT_DELTA)
    assert _keys(by_kind[("content_block_start", "tool_use")]) == _keys(REC_A_TOOL_START)
    assert _keys(by_kind[("content_block_delta", "input_json_delta")]) == _keys(REC_A_JSON_DELTA)
    assert _keys(by_kind[("content_block_stop", None)]) == _keys(REC_A_BLOCK_STOP)
    assert _keys(by_kind[("message_delta", None)]) == _keys(REC_A_MESSAGE_DELTA)
    assert by_kind[("message_stop", None)] == REC_A_MESSAGE_STOP
    assert stream_events(entry, "anthropic", CTX)[2] == REC_A_PING  # byte for byte


def test_openai_chunks_have_the_recorded_shapes() -> None:
    entry = _entry(text="Hi", tool_calls=[{"name": "GetWeatherArgs", "input": {"city": "x"}}])
    chunks = _openai(stream_events(entry, "openai", CTX))
    assert _keys(chunks[0]) == _keys(REC_O_FIRST)
    assert chunks[0]["choices"][0]["delta"] == REC_O_FIRST["choices"][0]["delta"]
    tool_deltas = [
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in chunks
        if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
    ]
    assert _keys(tool_deltas[0]) == _keys(REC_O_TOOL_HEAD)
    assert _keys(tool_deltas[1]) == _keys(REC_O_TOOL_ARGS)
    assert _keys(chunks[-2]) == _keys(REC_O_FINISH)
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert _keys(chunks[-1]) == _keys(REC_O_USAGE)
    assert {c["id"] for c in chunks} == {chunks[0]["id"]}  # one id for the whole stream


def test_no_usage_chunk_unless_asked() -> None:
    entry = _entry(text="Hi")
    quiet = ReplyContext(model="m", include_usage=False)
    assert all(chunk["choices"] for chunk in _openai(stream_events(entry, "openai", quiet)))


def test_ping_follows_message_start_when_there_is_no_block() -> None:
    names = [name for name, _ in _anthropic(stream_events(_entry(), "anthropic", CTX))]
    assert names == ["message_start", "ping", "message_delta", "message_stop"]


def _texts(wire: str, events: list[bytes], field: str) -> list[str]:
    pieces = []
    if wire == "anthropic":
        for _, data in _anthropic(events):
            delta = data.get("delta", {})
            if delta.get("type") == f"{field}_delta":
                pieces.append(delta[field])
    elif wire == "openai":
        key = {"text": "content", "thinking": "reasoning_content"}[field]
        for chunk in _openai(events):
            for choice in chunk["choices"]:
                if choice["delta"].get(key) and "role" not in choice["delta"]:
                    pieces.append(choice["delta"][key])
    else:
        key = {"text": "content", "thinking": "thinking"}[field]
        for line in events:
            message = json.loads(line)["message"]
            if message.get(key):
                pieces.append(message[key])
    return pieces


@given(
    text=st.text(max_size=60),
    thinking=st.text(max_size=30),
    size=st.integers(min_value=1, max_value=12),
    wire=st.sampled_from(["anthropic", "openai", "ollama"]),
)
def test_deltas_reassemble_to_the_scripted_text(
    text: str, thinking: str, size: int, wire: str
) -> None:
    events = stream_events(_entry(text=text, thinking=thinking, chunk_chars=size), wire, CTX)  # pyright: ignore[reportArgumentType]
    for field, expected in (("text", text), ("thinking", thinking)):
        pieces = _texts(wire, events, field)
        assert "".join(pieces) == expected
        assert all(1 <= len(piece) <= size for piece in pieces)
        assert len(pieces) == -(-len(expected) // size)


@given(
    tool_input=st.dictionaries(
        st.text(max_size=5),
        st.one_of(st.integers(), st.text(max_size=8), st.booleans(), st.none()),
        max_size=4,
    ),
    size=st.integers(min_value=1, max_value=10),
)
def test_tool_input_fragments_parse_back(tool_input: dict[str, Any], size: int) -> None:
    entry = _entry(tool_calls=[{"name": "t", "input": tool_input}], chunk_chars=size)
    fragments = [
        data["delta"]["partial_json"]
        for _, data in _anthropic(stream_events(entry, "anthropic", CTX))
        if data.get("delta", {}).get("type") == "input_json_delta"
    ]
    assert json.loads("".join(fragments)) == tool_input
    arguments = [
        chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
        for chunk in _openai(stream_events(entry, "openai", CTX))
        if chunk["choices"] and "tool_calls" in chunk["choices"][0]["delta"]
    ]
    assert json.loads("".join(arguments)) == tool_input


@pytest.mark.parametrize(
    ("fields", "n_events", "expected"),
    [
        ({}, 10, []),
        ({"drop_after_events": 3}, 10, [(3, "drop")]),
        ({"drop_after_events": 99}, 10, [(9, "drop")]),  # pulled in before the last event
        ({"stall_after_events": 0}, 10, [(0, "stall")]),
        (
            {
                "drop_after_events": 2,
                "malformed_after_events": 2,
                "stall_after_events": 2,
                "error_event_after_events": 1,
            },
            10,
            [(1, "error_event"), (2, "stall"), (2, "malformed"), (2, "drop")],
        ),
    ],
)
def test_fault_plan(fields: dict[str, Any], n_events: int, expected: list[Any]) -> None:
    assert fault_plan(_entry(**fields), n_events) == expected


def test_prompt_words_counts_system_and_message_texts() -> None:
    body = {
        "system": [{"type": "text", "text": "be very brief"}],
        "messages": [
            {"role": "user", "content": "one two"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "three"},
                    {"type": "tool_use", "id": "x", "name": "n", "input": {"text": "not counted"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "x", "content": "four five six"}
                ],
            },
        ],
    }
    assert prompt_words(body) == 3 + 2 + 1 + 3
    assert prompt_words({"messages": []}) == 0


def test_error_bodies_follow_each_provider() -> None:
    anthropic_body = json.loads(error_body("anthropic", 529))
    assert anthropic_body["type"] == "error"
    assert anthropic_body["error"]["type"] == "overloaded_error"
    openai_body = json.loads(error_body("openai", 429))
    assert set(openai_body["error"]) == {"message", "type", "param", "code"}
    assert openai_body["error"]["code"] == "rate_limit_exceeded"
    assert isinstance(json.loads(error_body("ollama", 500))["error"], str)
    assert json.loads(error_body("anthropic", 400, "x_error", "custom"))["error"] == {
        "type": "x_error",
        "message": "custom",
    }
