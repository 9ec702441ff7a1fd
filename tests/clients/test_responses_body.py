"""The Responses API request body, as a pure function, and the client against the fake.

Expected bodies are written from the Responses API reference (input items, function tools,
``function_call_output``, reasoning items with ``encrypted_content``, ``text.format``).
"""

from __future__ import annotations

from typing import Any

import pytest
from _client_support import run_stream

from rxturn.clients import OpenAIResponsesClient
from rxturn.clients.openai_responses import build_responses_body
from rxturn.errors import ConfigError
from rxturn.fold import fold_batch, initial_state
from rxturn.messages import (
    Message,
    RedactedThinkingPart,
    RefusalPart,
    Request,
    RequestOptions,
    ResponseFormat,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
    Usage,
)
from rxturn.testing import FakeProvider

WEATHER = ToolSchema(
    name="get_weather",
    description="Weather for a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)
CLOCK = ToolSchema(name="get_time", input_schema={"type": "object", "properties": {}})


def build(req: Request, opts: RequestOptions | None = None, **kw: Any) -> dict[str, Any]:
    kw.setdefault("max_tokens", None)
    kw.setdefault("stream", True)
    return build_responses_body(req, opts or RequestOptions(), model="gpt-x", **kw)


def test_minimal_body() -> None:
    assert build(Request(messages=(Message.user("hi"),))) == {
        "model": "gpt-x",
        "input": [{"role": "user", "content": "hi"}],
        "stream": True,
    }


def test_a_tool_loop_becomes_input_items_in_order() -> None:
    history = (
        Message.user("Weather in Paris and the time?"),
        Message(
            content=(
                ThinkingPart("Two tools needed.", "enc-abc", id="rs_1"),
                TextPart("Let me check."),
                ToolCallPart("call_1", "get_weather", {"city": "Paris"}),
                ToolCallPart("call_2", "get_time", {}),
            )
        ),
        Message(
            role="user",
            content=(
                ToolResultPart("call_1", "18C, sunny"),
                ToolResultPart("call_2", "clock broken", is_error=True),
                TextPart("Thanks!"),
            ),
        ),
    )
    body = build(Request(messages=history, system="be brief", tools=(WEATHER, CLOCK)))
    assert body["instructions"] == "be brief"
    assert body["input"] == [
        {"role": "user", "content": "Weather in Paris and the time?"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Two tools needed."}],
            "encrypted_content": "enc-abc",
        },
        {"role": "assistant", "content": "Let me check."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "18C, sunny"},
        {"type": "function_call_output", "call_id": "call_2", "output": "clock broken"},
        {"role": "user", "content": "Thanks!"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            "strict": False,  # always sent: the API defaults it to true
        },
        {
            "type": "function",
            "name": "get_time",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        },
    ]


def test_other_providers_thinking_is_left_out_and_a_refusal_is_assistant_text() -> None:
    history = (
        Message.user("q"),
        Message(
            content=(
                ThinkingPart("anthropic thought", "sig"),  # no rs_ id: not a reasoning item
                RedactedThinkingPart("opaque"),
                RefusalPart("I can't."),
            )
        ),
        Message(content=(ThinkingPart("", None, id="rs_2"), TextPart("ok"))),
    )
    assert build(Request(messages=history))["input"] == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "I can't."},
        {"type": "reasoning", "id": "rs_2", "summary": []},
        {"role": "assistant", "content": "ok"},
    ]


def test_strict_tools_tool_choice_and_limits() -> None:
    req = Request(messages=(Message.user("hi"),), tools=(WEATHER,))
    body = build(
        req,
        RequestOptions(strict_tools=True, tool_choice="get_weather", max_tokens=99, temperature=0),
    )
    assert body["tools"][0]["strict"] is True
    assert body["tools"][0]["parameters"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "additionalProperties": False,
        "required": ["city"],
    }
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert body["max_output_tokens"] == 99
    assert body["temperature"] == 0
    assert build(req, RequestOptions(tool_choice="any"))["tool_choice"] == "required"
    assert build(req, RequestOptions(tool_choice="none"))["tool_choice"] == "none"
    assert build(req, max_tokens=500)["max_output_tokens"] == 500


def test_response_format_is_text_format_json_schema() -> None:
    fmt = ResponseFormat(name="answer", schema={"type": "object"}, strict=True)
    body = build(
        Request(messages=(Message.user("hi"),), tools=(WEATHER,)),
        RequestOptions(response_format=fmt),
    )
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "name": "answer",
            "schema": {"type": "object", "additionalProperties": False},
            "strict": True,
        }
    }
    assert "tools" not in body


def test_kept_thinking_asks_for_encrypted_reasoning_and_no_storage() -> None:
    body = build(Request(messages=(Message.user("hi"),)), keep_thinking=True)
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]


def test_without_storage_a_reasoning_item_goes_back_only_with_its_encrypted_content() -> None:
    """Under store: false the API has no item to look an ``rs_`` id up by: a reasoning item
    without encrypted_content is its 400 ("Item with id 'rs_…' not found"); stored, it is
    sent."""
    call = ToolCallPart(id="call_1", name="get_time", input={})
    history = (
        Message.user("q"),
        Message(content=(ThinkingPart("stored", None, id="rs_1"), call)),
        Message(role="user", content=(ToolResultPart(tool_call_id="call_1", content="noon"),)),
        Message(content=(ThinkingPart("sealed", "enc", id="rs_2"), TextPart("ok"))),
        Message.user("and?"),
    )
    req = Request(messages=history, tools=(CLOCK,))
    stored = [item.get("id") for item in build(req)["input"] if item.get("type") == "reasoning"]
    assert stored == ["rs_1", "rs_2"]
    for body in (
        build(req, keep_thinking=True),
        build(req, RequestOptions(extra_body={"store": False})),
    ):
        reasoning = [item for item in body["input"] if item.get("type") == "reasoning"]
        assert reasoning == [
            {
                "type": "reasoning",
                "id": "rs_2",
                "summary": [{"type": "summary_text", "text": "sealed"}],
                "encrypted_content": "enc",
            }
        ]
        assert [item.get("type") for item in body["input"]][1:3] == [
            "function_call",
            "function_call_output",
        ]


def test_stop_sequences_are_refused() -> None:
    with pytest.raises(ConfigError, match="Responses API has no stop sequences"):
        build(Request(messages=(Message.user("hi"),)), RequestOptions(stop_sequences=("x",)))


# --- the client against the fake --------------------------------------------------------------


async def test_client_streams_and_creates_with_reasoning_kept() -> None:
    """With ``reasoning_effort`` the client keeps reasoning items, on both paths, and asks for
    them encrypted; the folded stream equals the non-streaming parse."""
    entry = {
        "thinking": "Need the tool.",
        "tool_calls": [{"id": "call_9", "name": "get_weather", "input": {"city": "Oslo"}}],
        "usage": {"input_tokens": 12, "output_tokens": 4},
    }
    opts = RequestOptions(reasoning_effort="low")
    req = Request(messages=(Message.user("Oslo weather?"),), tools=(WEATHER,))
    async with (
        FakeProvider({"models": {"*": [entry]}}) as fake,
        OpenAIResponsesClient("gpt-x", base_url=fake.openai_base_url) as client,
    ):
        events, error = await run_stream(client.stream(req, opts))
        created = await client.create(req, opts)
        plain = await client.create(req)
    assert error is None
    streamed = fold_batch(initial_state(keep_thinking=True), events).message()
    for message in (streamed, created):
        assert message.stop_reason is StopReason.TOOL_CALL
        # the fake reports no cache hits and one reasoning token per thinking piece
        assert message.usage == Usage(
            input_tokens=12, output_tokens=4, cache_read_tokens=0, output_reasoning_tokens=2
        )
        thinking, call = message.content
        assert isinstance(thinking, ThinkingPart)
        assert thinking.thinking == "Need the tool."
        assert thinking.id.startswith("rs_")
        assert thinking.signature  # encrypted_content came back because the client asked
        assert call == ToolCallPart("call_9", "get_weather", {"city": "Oslo"})
    assert [type(p) for p in plain.content] == [ToolCallPart]  # not kept without reasoning
    bodies = fake.requests
    assert [b.get("include") for b in bodies] == [
        ["reasoning.encrypted_content"],
        ["reasoning.encrypted_content"],
        None,
    ]
    assert [b["stream"] for b in bodies] == [True, False, False]
    assert fake.received[0].path == "/v1/responses"
    assert fake.received[0].headers["accept"] == "text/event-stream"
