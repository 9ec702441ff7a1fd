"""The official ``anthropic`` SDK, unmodified, against the fake: the scripted reply comes back.

The SDK is the oracle: if it folds the fake's bytes (streaming and not) into exactly the message
the scenario scripted, the fake speaks the real Messages wire format.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import pytest
from anthropic.types import Message, TextBlock, ThinkingBlock, ToolUseBlock

from rxturn.testing import FakeProvider

Serve = Callable[[Any], Awaitable[FakeProvider]]

PROMPT = [{"role": "user", "content": "what is the weather in Paris today"}]  # 7 words
SYSTEM = "be brief"  # 2 words

FULL = {
    "thinking": "The user wants the weather; I should call the tool.",
    "text": 'Let me check the weather in Paris "now" — ünïcode ok.',
    "tool_calls": [
        {"id": "toolu_1", "name": "get_weather", "input": {"city": "Paris", "units": "c"}},
        {"id": "toolu_2", "name": "get_time", "input": {}},
    ],
    "usage": {"input_tokens": 123, "output_tokens": 45},
    "chunk_chars": 5,
}


def _client(base_url: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=base_url, api_key="test", max_retries=0)


async def _create(base_url: str, **kwargs: Any) -> Message:
    async with _client(base_url) as client:
        return await client.messages.create(
            model=kwargs.pop("model", "claude-test"),
            max_tokens=256,
            messages=kwargs.pop("messages", PROMPT),
            **kwargs,
        )


async def _stream(base_url: str, **kwargs: Any) -> tuple[Message, str]:
    async with (
        _client(base_url) as client,
        client.messages.stream(
            model=kwargs.pop("model", "claude-test"),
            max_tokens=256,
            messages=kwargs.pop("messages", PROMPT),
            **kwargs,
        ) as stream,
    ):
        text = "".join([piece async for piece in stream.text_stream])
        return await stream.get_final_message(), text


def _check_full(message: Message) -> None:
    assert message.role == "assistant"
    assert message.model == "claude-test"
    assert message.stop_reason == "tool_use"  # default when tool calls are present
    thinking, text, tool_1, tool_2 = message.content
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.thinking == FULL["thinking"]
    assert thinking.signature  # a signature_delta arrived
    assert isinstance(text, TextBlock)
    assert text.text == FULL["text"]
    assert isinstance(tool_1, ToolUseBlock) and isinstance(tool_2, ToolUseBlock)
    assert (tool_1.id, tool_1.name, tool_1.input) == (
        "toolu_1",
        "get_weather",
        FULL["tool_calls"][0]["input"],
    )
    assert (tool_2.id, tool_2.name, tool_2.input) == ("toolu_2", "get_time", {})
    assert (message.usage.input_tokens, message.usage.output_tokens) == (123, 45)


async def test_create_returns_the_scripted_message(serve: Serve) -> None:
    fake = await serve({"models": {"*": [FULL]}})
    _check_full(await _create(fake.base_url))


async def test_stream_folds_into_the_scripted_message(serve: Serve) -> None:
    fake = await serve({"models": {"*": [FULL]}})
    message, streamed_text = await _stream(fake.base_url)
    _check_full(message)
    assert streamed_text == FULL["text"]
    assert fake.requests[0]["stream"] is True


@pytest.mark.parametrize("streaming", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize(
    ("scripted", "wire"),
    [
        ("end_turn", "end_turn"),
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
        ("tool_call", "tool_use"),
    ],
)
async def test_stop_reason_is_spelled_the_anthropic_way(
    serve: Serve, streaming: bool, scripted: str, wire: str
) -> None:
    fake = await serve({"models": {"*": [{"text": "hi", "stop_reason": scripted}]}})
    message = (await _stream(fake.base_url))[0] if streaming else await _create(fake.base_url)
    assert message.stop_reason == wire


@pytest.mark.parametrize("streaming", [False, True], ids=["create", "stream"])
async def test_absent_usage_is_the_documented_deterministic_count(
    serve: Serve, streaming: bool
) -> None:
    # input = words of system + messages (2 + 7); output = deltas (10 chars / 4 → 3) + 1 tool.
    entry = {"text": "abcdefghij", "chunk_chars": 4, "tool_calls": [{"name": "t", "input": {}}]}
    fake = await serve({"models": {"*": [entry]}})
    kwargs: dict[str, Any] = {"system": SYSTEM}
    message = (
        (await _stream(fake.base_url, **kwargs))[0]
        if streaming
        else await _create(fake.base_url, **kwargs)
    )
    assert (message.usage.input_tokens, message.usage.output_tokens) == (9, 4)
    tool = message.content[1]
    assert isinstance(tool, ToolUseBlock) and tool.id.startswith("toolu_")


@pytest.mark.parametrize("streaming", [False, True], ids=["create", "stream"])
async def test_null_usage_reports_zeros(serve: Serve, streaming: bool) -> None:
    fake = await serve({"models": {"*": [{"text": "hi there", "usage": None}]}})
    message = (await _stream(fake.base_url))[0] if streaming else await _create(fake.base_url)
    assert (message.usage.input_tokens, message.usage.output_tokens) == (0, 0)
    assert message.content[0].type == "text"


async def test_model_lists_advance_and_the_last_entry_repeats(serve: Serve) -> None:
    fake = await serve(
        {"models": {"primary": [{"text": "one"}, {"text": "two"}], "*": [{"text": "any"}]}}
    )
    texts = []
    for model in ("primary", "other", "primary", "primary", "again"):
        message = await _create(fake.base_url, model=model)
        block = message.content[0]
        assert isinstance(block, TextBlock)
        texts.append((model, message.model, block.text))
    assert texts == [
        ("primary", "primary", "one"),
        ("other", "other", "any"),
        ("primary", "primary", "two"),
        ("primary", "primary", "two"),
        ("again", "again", "any"),
    ]


async def test_unknown_model_without_wildcard_is_a_404_not_found(serve: Serve) -> None:
    fake = await serve({"models": {"primary": [{"text": "one"}]}})
    with pytest.raises(anthropic.NotFoundError) as info:
        await _create(fake.base_url, model="nope")
    assert info.value.status_code == 404
    assert info.value.body["error"]["type"] == "not_found_error"  # pyright: ignore[reportIndexIssue, reportOptionalSubscript]
    assert "nope" in info.value.body["error"]["message"]  # pyright: ignore[reportIndexIssue, reportOptionalSubscript]


async def test_message_ids_are_unique_per_request(serve: Serve) -> None:
    fake = await serve({"models": {"*": [{"text": "x"}]}})
    first = await _create(fake.base_url)
    second = (await _stream(fake.base_url))[0]
    assert first.id != second.id
    assert first.id.startswith("msg_") and second.id.startswith("msg_")
