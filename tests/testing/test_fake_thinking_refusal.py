"""Two rules the fake shares with the real APIs, checked with the official SDKs.

* Anthropic extended thinking: a tool-use continuation must send the assistant's thinking block
  back first, with the signature it came with; otherwise the API answers 400
  ``invalid_request_error`` (and the fake does too, without using up a scenario entry).
* ``stop_reason: "refusal"`` in a scenario makes each wire's own refusal.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import anthropic
import openai
import pytest

from rxturn.testing import FakeProvider

Serve = Callable[[Any], Awaitable[FakeProvider]]

THINK_THEN_CALL = {
    "thinking": "I need the weather tool for Paris.",
    "tool_calls": [{"id": "toolu_w", "name": "get_weather", "input": {"city": "Paris"}}],
}
ANSWER = {"text": "It is sunny."}
THINKING: Any = {"type": "enabled", "budget_tokens": 2048}
TOOLS: Any = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {}}}]


def _anthropic(fake: FakeProvider) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="test", max_retries=0)


async def _first_turn(client: anthropic.AsyncAnthropic) -> list[dict[str, Any]]:
    async with client.messages.stream(
        model="claude-test",
        max_tokens=4096,
        thinking=THINKING,
        tools=TOOLS,
        messages=[{"role": "user", "content": "weather?"}],
    ) as stream:
        final = await stream.get_final_message()
    assert [block.type for block in final.content] == ["thinking", "tool_use"]
    return [block.to_dict() for block in final.content]


def _continuation(assistant: list[dict[str, Any]]) -> list[Any]:
    return [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": assistant},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_w", "content": "sunny"}],
        },
    ]


async def _continue(
    client: anthropic.AsyncAnthropic, assistant: list[dict[str, Any]], *, thinking: bool = True
) -> str:
    extra: dict[str, Any] = {"thinking": THINKING} if thinking else {}
    reply = await client.messages.create(
        model="claude-test",
        max_tokens=4096,
        tools=TOOLS,
        messages=_continuation(assistant),
        **extra,
    )
    return "".join(block.text for block in reply.content if block.type == "text")


async def test_thinking_sent_back_unchanged_is_accepted(serve: Serve) -> None:
    fake = await serve({"models": {"*": [THINK_THEN_CALL, ANSWER]}})
    async with _anthropic(fake) as client:
        blocks = await _first_turn(client)
        assert blocks[0]["signature"]  # the fake signs its thinking
        assert await _continue(client, blocks) == "It is sunny."


async def test_lost_thinking_block_is_the_apis_400(serve: Serve) -> None:
    fake = await serve({"models": {"*": [THINK_THEN_CALL, ANSWER]}})
    async with _anthropic(fake) as client:
        blocks = await _first_turn(client)
        with pytest.raises(anthropic.BadRequestError) as rejected:
            await _continue(client, blocks[1:])
        # the rejected request took no entry: the good continuation still gets the answer
        assert await _continue(client, blocks) == "It is sunny."
    error = rejected.value
    assert error.status_code == 400
    body: Any = error.body
    assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"].startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`."
    )


@pytest.mark.parametrize(
    "tamper",
    [
        lambda b: {**b, "signature": b["signature"][::-1]},  # another signature
        lambda b: {**b, "thinking": b["thinking"] + " (edited)"},  # the text changed under it
        lambda b: {**b, "signature": ""},
    ],
    ids=["signature", "text", "empty"],
)
async def test_changed_signature_is_the_apis_400(serve: Serve, tamper: Any) -> None:
    fake = await serve({"models": {"*": [THINK_THEN_CALL, ANSWER]}})
    async with _anthropic(fake) as client:
        blocks = await _first_turn(client)
        with pytest.raises(anthropic.BadRequestError) as rejected:
            await _continue(client, [tamper(blocks[0]), blocks[1]])
    body: Any = rejected.value.body
    assert body["error"] == {
        "type": "invalid_request_error",
        "message": "messages.1.content.0: Invalid `signature` in `thinking` block",
    }


async def test_without_thinking_requested_nothing_is_enforced(serve: Serve) -> None:
    fake = await serve({"models": {"*": [THINK_THEN_CALL, ANSWER]}})
    async with _anthropic(fake) as client:
        blocks = await _first_turn(client)
        assert await _continue(client, blocks[1:], thinking=False) == "It is sunny."


async def test_a_final_text_turn_needs_no_thinking(serve: Serve) -> None:
    """Only the last assistant message *with a tool_use* must start with thinking."""
    fake = await serve({"models": {"*": [ANSWER]}})
    async with _anthropic(fake) as client:
        reply = await client.messages.create(
            model="claude-test",
            max_tokens=4096,
            thinking=THINKING,
            messages=[
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "weather?"},
            ],
        )
    assert reply.content[-1].type == "text"


# --- refusals, one per wire -----------------------------------------------------------------

REFUSE = {"models": {"*": [{"text": "I can't help with that.", "stop_reason": "refusal"}]}}


@pytest.mark.parametrize("tools", [None, []], ids=["absent", "empty"])
async def test_tool_blocks_without_tools_are_the_apis_400(serve: Serve, tools: Any) -> None:
    # the real API refuses a history with tool_use / tool_result blocks when the request
    # defines no tools (what a client that drops its tools for a structured-output turn sends)
    fake = await serve({"models": {"*": [ANSWER]}})
    extra: dict[str, Any] = {} if tools is None else {"tools": tools}
    async with _anthropic(fake) as client:
        call = [{"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {}}]
        with pytest.raises(anthropic.BadRequestError) as rejected:
            await client.messages.create(
                model="claude-test", max_tokens=64, messages=_continuation(call), **extra
            )
        # the rejected request took no entry; with its tools the same history is answered
        reply = await client.messages.create(
            model="claude-test", max_tokens=64, tools=TOOLS, messages=_continuation(call)
        )
    assert [block.type for block in reply.content] == ["text"]
    body: Any = rejected.value.body
    assert body["error"] == {
        "type": "invalid_request_error",
        "message": "Requests which include `tool_use` or `tool_result` blocks must define tools.",
    }


async def test_anthropic_refusal_is_its_stop_reason(serve: Serve) -> None:
    fake = await serve(REFUSE)
    async with _anthropic(fake) as client:
        async with client.messages.stream(
            model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "x"}]
        ) as stream:
            streamed = await stream.get_final_message()
        created = await client.messages.create(
            model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "x"}]
        )
    for message in (streamed, created):
        assert message.stop_reason == "refusal"
        assert [block.type for block in message.content] == ["text"]


async def test_openai_chat_refusal_is_refusal_deltas(serve: Serve) -> None:
    fake = await serve(REFUSE)
    prompt: Any = [{"role": "user", "content": "x"}]
    async with openai.AsyncOpenAI(
        base_url=fake.openai_base_url, api_key="t", max_retries=0
    ) as client:
        stream = await client.chat.completions.create(model="m", messages=prompt, stream=True)
        chunks = [chunk async for chunk in stream]
        async with client.chat.completions.stream(model="m", messages=prompt) as accumulated:
            final = await accumulated.get_final_completion()
        completion = await client.chat.completions.create(model="m", messages=prompt)
    refusal = "".join(c.choices[0].delta.refusal or "" for c in chunks if c.choices)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert (refusal, content) == ("I can't help with that.", "")
    assert final.choices[0].message.refusal == "I can't help with that."
    assert completion.choices[0].message.refusal == "I can't help with that."
    assert completion.choices[0].message.content is None
    assert completion.choices[0].finish_reason == "stop"


async def test_openai_refusal_without_text_gets_a_sentence(serve: Serve) -> None:
    fake = await serve({"models": {"*": [{"stop_reason": "refusal"}]}})
    async with openai.AsyncOpenAI(
        base_url=fake.openai_base_url, api_key="t", max_retries=0
    ) as client:
        completion = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    assert completion.choices[0].message.refusal  # a refusal always says something


async def test_ollama_refusal_is_plain_text_and_stop(serve: Serve) -> None:
    """Ollama has no refusal: the closest is the text with an ordinary ``stop``."""
    fake = await serve(REFUSE)
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    async with (
        aiohttp.ClientSession() as http,
        http.post(fake.base_url + "/api/chat", json=body) as resp,
    ):
        lines = [json.loads(line) for line in (await resp.read()).splitlines()]
    assert "".join(line["message"]["content"] for line in lines) == "I can't help with that."
    assert lines[-1]["done_reason"] == "stop"
