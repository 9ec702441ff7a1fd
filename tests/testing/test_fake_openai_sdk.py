"""The official ``openai`` SDK, unmodified, against the fake: the scripted reply comes back.

Streaming is checked twice: by folding the raw chunks by hand (index-addressed tool-call
deltas, the usage chunk with ``choices: []``) and by the SDK's own accumulator
(``chat.completions.stream(...).get_final_completion()``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from rxturn.testing import FakeProvider

Serve = Callable[[Any], Awaitable[FakeProvider]]

PROMPT: Any = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "what is the weather in Paris today"},
]  # 2 + 7 words

FULL = {
    "thinking": "I should call the weather tool.",
    "text": 'Checking "Paris" — ünïcode ok.',
    "tool_calls": [
        {"id": "call_1", "name": "get_weather", "input": {"city": "Paris", "days": [1, 2]}},
        {"id": "call_2", "name": "get_time", "input": {}},
    ],
    "usage": {"input_tokens": 31, "output_tokens": 7},
    "chunk_chars": 3,
}


def _client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)


async def _create(fake: FakeProvider, model: str = "gpt-test") -> ChatCompletion:
    async with _client(fake.openai_base_url) as client:
        return await client.chat.completions.create(model=model, messages=PROMPT)


async def _chunks(
    fake: FakeProvider, *, include_usage: bool, base_url: str | None = None
) -> list[ChatCompletionChunk]:
    async with _client(base_url or fake.openai_base_url) as client:
        kwargs: dict[str, Any] = {}
        if include_usage:
            kwargs["stream_options"] = {"include_usage": True}
        stream = await client.chat.completions.create(
            model="gpt-test", messages=PROMPT, stream=True, **kwargs
        )
        return [chunk async for chunk in stream]


def _fold(chunks: list[ChatCompletionChunk]) -> dict[str, Any]:
    """A plain reducer over chunks, following the documented streaming rules."""
    text, reasoning = [], []
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    usage = None
    for chunk in chunks:
        if chunk.usage is not None:
            assert chunk.choices == []
            usage = (chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
            extra = (delta.model_extra or {}).get("reasoning_content")
            if extra:
                reasoning.append(extra)
            for call in delta.tool_calls or []:
                slot = calls.setdefault(call.index, {"id": None, "name": None, "args": []})
                if call.id:
                    slot["id"] = call.id
                if call.function and call.function.name:
                    slot["name"] = call.function.name
                if call.function and call.function.arguments:
                    slot["args"].append(call.function.arguments)
            if choice.finish_reason:
                finish = choice.finish_reason
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "calls": [
            (c["id"], c["name"], json.loads("".join(c["args"]))) for _, c in sorted(calls.items())
        ],
        "finish": finish,
        "usage": usage,
    }


EXPECTED_CALLS = [
    ("call_1", "get_weather", {"city": "Paris", "days": [1, 2]}),
    ("call_2", "get_time", {}),
]


async def test_create_returns_the_scripted_completion(serve: Serve) -> None:
    fake = await serve({"models": {"*": [FULL]}})
    completion = await _create(fake)
    choice = completion.choices[0]
    assert completion.model == "gpt-test"
    assert choice.message.content == FULL["text"]
    assert (choice.message.model_extra or {})["reasoning_content"] == FULL["thinking"]
    calls = [
        (c.id, c.function.name, json.loads(c.function.arguments))  # pyright: ignore[reportAttributeAccessIssue]
        for c in choice.message.tool_calls or []
    ]
    assert calls == EXPECTED_CALLS
    assert choice.finish_reason == "tool_calls"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (31, 7)
    assert completion.usage.total_tokens == 38


async def test_stream_with_include_usage_folds_into_the_scripted_reply(serve: Serve) -> None:
    fake = await serve({"models": {"*": [FULL]}})
    chunks = await _chunks(fake, include_usage=True)
    folded = _fold(chunks)
    assert folded == {
        "text": FULL["text"],
        "reasoning": FULL["thinking"],
        "calls": EXPECTED_CALLS,
        "finish": "tool_calls",
        "usage": (31, 7),
    }
    assert chunks[-1].choices == [] and chunks[-1].usage is not None  # usage chunk is last
    assert fake.requests[0]["stream_options"] == {"include_usage": True}


async def test_stream_without_include_usage_has_no_usage_chunk(serve: Serve) -> None:
    fake = await serve({"models": {"*": [FULL]}})
    chunks = await _chunks(fake, include_usage=False)
    assert all(chunk.usage is None and chunk.choices for chunk in chunks)
    assert _fold(chunks)["text"] == FULL["text"]


async def test_sdk_accumulator_agrees(serve: Serve) -> None:
    fake = await serve(
        {
            "models": {
                "*": [
                    {
                        "text": "Hello there, world!",
                        "chunk_chars": 2,
                        "usage": {"input_tokens": 4, "output_tokens": 9},
                    }
                ]
            }
        }
    )
    async with (
        _client(fake.openai_base_url) as client,
        client.chat.completions.stream(
            model="gpt-test", messages=PROMPT, stream_options={"include_usage": True}
        ) as stream,
    ):
        completion = await stream.get_final_completion()
    assert completion.choices[0].message.content == "Hello there, world!"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (4, 9)


@pytest.mark.parametrize(
    ("entry", "content", "refusal"),
    [
        ({"text": "plain"}, "plain", None),
        ({"tool_calls": [{"name": "f"}]}, None, None),
        ({"text": "first", "tool_calls": [{"name": "f"}]}, "first", None),
        ({"text": "no", "stop_reason": "refusal"}, None, "no"),
    ],
    ids=["text", "tools-alone", "text-and-tools", "refusal"],
)
async def test_streamed_message_is_the_created_one(
    serve: Serve, entry: dict[str, Any], content: str | None, refusal: str | None
) -> None:
    """The SDK's accumulated stream and the non-streaming message agree, as on the API (whose
    stream opens with ``content: null`` when the reply has no text: the recorded
    tests/fixtures/openai/tool_call.sse and refusal.sse)."""
    fake = await serve({"models": {"*": [entry]}})
    async with (
        _client(fake.openai_base_url) as client,
        client.chat.completions.stream(model="gpt-test", messages=PROMPT) as stream,
    ):
        streamed = (await stream.get_final_completion()).choices[0].message
    created = (await _create(fake)).choices[0].message
    for message in (streamed, created):
        assert (message.content, message.refusal) == (content, refusal)


@pytest.mark.parametrize("streaming", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize(
    ("scripted", "wire"),
    [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("stop_sequence", "stop"),
        ("tool_call", "tool_calls"),
    ],
)
async def test_finish_reason_is_spelled_the_openai_way(
    serve: Serve, streaming: bool, scripted: str, wire: str
) -> None:
    fake = await serve({"models": {"*": [{"text": "hi", "stop_reason": scripted}]}})
    if streaming:
        finish = _fold(await _chunks(fake, include_usage=True))["finish"]
    else:
        finish = (await _create(fake)).choices[0].finish_reason
    assert finish == wire


@pytest.mark.parametrize("streaming", [False, True], ids=["create", "stream"])
async def test_absent_usage_is_the_documented_deterministic_count(
    serve: Serve, streaming: bool
) -> None:
    # input = 9 words of the messages; output = 2 thinking + 3 text deltas + 1 tool call.
    entry = {
        "thinking": "abcdef",
        "text": "abcdefg",
        "chunk_chars": 3,
        "tool_calls": [{"name": "t"}],
    }
    fake = await serve({"models": {"*": [entry]}})
    if streaming:
        usage = _fold(await _chunks(fake, include_usage=True))["usage"]
    else:
        reply = (await _create(fake)).usage
        assert reply is not None
        usage = (reply.prompt_tokens, reply.completion_tokens)
    assert usage == (9, 6)


@pytest.mark.parametrize("streaming", [False, True], ids=["create", "stream"])
async def test_null_usage_reports_none(serve: Serve, streaming: bool) -> None:
    fake = await serve({"models": {"*": [{"text": "hi", "usage": None}]}})
    if streaming:
        chunks = await _chunks(fake, include_usage=True)
        assert _fold(chunks)["usage"] is None
        assert all(chunk.choices for chunk in chunks)
    else:
        assert (await _create(fake)).usage is None


async def test_chat_completions_without_v1_prefix_is_served(serve: Serve) -> None:
    fake = await serve({"models": {"*": [{"text": "no prefix"}]}})
    chunks = await _chunks(fake, include_usage=False, base_url=fake.base_url)
    assert _fold(chunks)["text"] == "no prefix"
    assert fake.received[0].path == "/chat/completions"


async def test_unknown_model_without_wildcard_is_a_404(serve: Serve) -> None:
    fake = await serve({"models": {"gpt-real": [{"text": "x"}]}})
    with pytest.raises(openai.NotFoundError) as info:
        await _create(fake, model="gpt-missing")
    assert info.value.status_code == 404
    assert info.value.code == "model_not_found"
    assert "gpt-missing" in info.value.message
