"""An agent loop with extended thinking and tools, against the fake provider.

The fake enforces the Anthropic API's rule: with thinking requested, a tool-use continuation
must send the assistant's thinking block back first, signed as it came. A loop that keeps
thinking passes; the same loop with ``keep_thinking`` forced off gets the API's 400 — which is
what proves the fake enforces it. The Responses API loop sends reasoning items back with their
encrypted content.
"""

from __future__ import annotations

from typing import Any

import pytest

from rxturn import (
    AnthropicClient,
    BadRequestError,
    OpenAIResponsesClient,
    RequestOptions,
    RetryPolicy,
    StopReason,
    StreamHandler,
    TurnEngine,
)
from rxturn.messages import ThinkingPart, ToolCallPart, message_to_json
from rxturn.testing import FakeProvider

THOUGHT = "The user wants Oslo's weather: call the tool."
THINK_AND_CALL = {
    "thinking": THOUGHT,
    "text": "Let me look.",
    "tool_calls": [{"id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}],
}
ANSWER = {"text": "Cold: -3 C in Oslo."}
SCENARIO = {"models": {"*": [THINK_AND_CALL, ANSWER]}}


def weather(city: str) -> str:
    return f"{city}: -3 C"


def _assistant_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    (assistant,) = [m for m in body["messages"] if m["role"] == "assistant"]
    return assistant["content"]


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
async def test_loop_with_thinking_and_tools_passes(mode: Any) -> None:
    async with (
        FakeProvider(SCENARIO) as fake,
        AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client, tools=[weather], mode=mode, request_options=RequestOptions(thinking=2048)
        )
        result = await engine.run("Weather in Oslo?")
    assert result.text == ANSWER["text"]
    assert result.stop_reason is StopReason.END_TURN
    first = result.turns[0].message
    assert isinstance(first.content[0], ThinkingPart)
    assert first.content[0].thinking == THOUGHT
    assert first.content[0].signature  # the fake's signature, kept
    continuation = fake.requests[1]
    assert continuation["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    blocks = _assistant_blocks(continuation)
    assert [b["type"] for b in blocks] == ["thinking", "text", "tool_use"]
    assert blocks[0] == {
        "type": "thinking",
        "thinking": THOUGHT,
        "signature": first.content[0].signature,
    }
    assert fake.requests[0]["thinking"] == continuation["thinking"]


async def test_the_same_loop_without_kept_thinking_gets_the_apis_400() -> None:
    async with (
        FakeProvider(SCENARIO) as fake,
        AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client,
            tools=[weather],
            request_options=RequestOptions(thinking=2048),
            keep_thinking=False,
        )
        with pytest.raises(BadRequestError) as rejected:
            await engine.run("Weather in Oslo?")
    assert rejected.value.status_code == 400
    assert "Expected `thinking` or `redacted_thinking`, but found `text`" in str(rejected.value)
    assert [b["type"] for b in _assistant_blocks(fake.requests[1])] == ["text", "tool_use"]


@pytest.mark.parametrize(
    "thinking",
    [{"type": "enabled", "budget_tokens": 2048}, {"type": "adaptive"}],
    ids=["enabled", "adaptive"],
)
async def test_thinking_enabled_through_extra_body_is_kept_too(thinking: dict[str, Any]) -> None:
    """``adaptive`` thinking has no ``RequestOptions`` field: ``extra_body`` is the way to ask
    for it, and the continuation must still carry the thinking block, or the API refuses it."""
    async with (
        FakeProvider(SCENARIO) as fake,
        AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client,
            tools=[weather],
            request_options=RequestOptions(extra_body={"thinking": thinking}),
        )
        result = await engine.run("Weather in Oslo?")
    assert result.text == ANSWER["text"]
    continuation = fake.requests[1]
    assert continuation["thinking"] == thinking
    assert [b["type"] for b in _assistant_blocks(continuation)] == ["thinking", "text", "tool_use"]


async def test_the_rescue_keeps_thinking_too() -> None:
    """The stream drops, the transport budget (0 retries) is spent, the non-streaming rescue
    serves the tool call: its parse keeps the thinking block, so the loop goes on."""
    dropped = {**THINK_AND_CALL, "drop_after_events": 4}
    scenario = {"models": {"*": [dropped, THINK_AND_CALL, ANSWER]}}
    handler = StreamHandler(retry=RetryPolicy(max_retries=0))
    async with (
        FakeProvider(scenario) as fake,
        AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client,
            tools=[weather],
            handler=handler,
            request_options=RequestOptions(thinking=2048),
        )
        result = await engine.run("Weather in Oslo?")
    assert result.turns[0].rescued
    assert [b["stream"] for b in fake.requests] == [True, False, True]
    assert result.text == ANSWER["text"]
    assert _assistant_blocks(fake.requests[2])[0]["type"] == "thinking"


async def test_without_thinking_the_message_json_is_unchanged() -> None:
    """A reply that streams thinking, to a request that did not enable it: stream-only."""
    async with (
        FakeProvider({"models": {"*": [{"thinking": "hmm", "text": "Hi."}]}}) as fake,
        AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
    ):
        result = await TurnEngine(client).run("hello")
    assert message_to_json(result.message).decode().count('"type"') == 1  # one text part
    assert [p.text for p in result.message.content] == ["Hi."]  # pyright: ignore[reportAttributeAccessIssue]


async def test_kept_thinking_counts_in_the_context_estimate() -> None:
    estimates: list[int] = []
    for keep in (True, False):
        async with (
            FakeProvider(SCENARIO) as fake,
            AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
        ):
            engine = TurnEngine(client, tools=[weather], keep_thinking=keep)
            await engine.run("Weather in Oslo?")
            assert engine.last_estimate is not None
            estimates.append(engine.last_estimate.conversation)
    kept, dropped = estimates
    assert kept > dropped


async def test_responses_loop_sends_reasoning_items_back() -> None:
    entry = {
        "thinking": THOUGHT,
        "tool_calls": [{"id": "call_1", "name": "weather", "input": {"city": "Oslo"}}],
    }
    async with (
        FakeProvider({"models": {"*": [entry, ANSWER]}}) as fake,
        OpenAIResponsesClient("gpt-x", api_key="k", base_url=fake.openai_base_url) as client,
    ):
        engine = TurnEngine(
            client, tools=[weather], request_options=RequestOptions(reasoning_effort="low")
        )
        result = await engine.run("Weather in Oslo?")
    assert result.text == ANSWER["text"]
    reasoning, call = result.turns[0].message.content
    assert isinstance(reasoning, ThinkingPart) and isinstance(call, ToolCallPart)
    assert reasoning.signature  # encrypted_content, because the client asked for it
    second = fake.requests[1]
    assert second["include"] == ["reasoning.encrypted_content"]
    assert second["store"] is False
    assert second["input"] == [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "type": "reasoning",
            "id": reasoning.id,
            "summary": [{"type": "summary_text", "text": THOUGHT}],
            "encrypted_content": reasoning.signature,
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "weather",
            "arguments": '{"city":"Oslo"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Oslo: -3 C"},
    ]


async def test_a_reasoning_item_the_reply_ended_after_is_not_sent_back() -> None:
    """A reply cut short at max_output_tokens while reasoning is one reasoning item alone; the
    Responses API refuses a reasoning item without the item it led to ("provided without its
    required following item"), so the next run leaves it out — and keeps the others."""
    entries = [{"thinking": THOUGHT, "stop_reason": "max_tokens"}, {"thinking": "ok", "text": "Hi"}]
    async with (
        FakeProvider({"models": {"*": [*entries, ANSWER]}}) as fake,
        OpenAIResponsesClient("gpt-x", api_key="k", base_url=fake.openai_base_url) as client,
    ):
        engine = TurnEngine(client, request_options=RequestOptions(reasoning_effort="low"))
        cut = await engine.run("Think hard.")
        assert cut.stop_reason is StopReason.MAX_TOKENS
        assert [type(p) for p in cut.message.content] == [ThinkingPart]
        await engine.run("Go on.")
        await engine.run("Thanks.")
    assert fake.requests[1]["input"] == [
        {"role": "user", "content": "Think hard."},
        {"role": "user", "content": "Go on."},
    ]
    kinds = [item.get("type", item.get("role")) for item in fake.requests[2]["input"]]
    assert kinds == ["user", "user", "reasoning", "assistant", "user"]
