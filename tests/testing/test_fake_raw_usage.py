"""``raw_usage``: a usage object in the wire's own shape, sent as it is; the official SDKs, pointed
at the fake, fold it, and rxturn's clients fold it to the same counts (streaming and not)."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
from usage_oracle import anthropic_expected, chat_expected, responses_expected

from rxturn import AnthropicClient, OllamaClient, OpenAIClient, OpenAIResponsesClient, TurnEngine
from rxturn.errors import ConfigError, StreamProtocolError
from rxturn.messages import Usage
from rxturn.testing import FakeProvider
from rxturn.testing._scenario import load_scenario

pytestmark = pytest.mark.timeout(60)

ANTHROPIC_RAW = {
    "input_tokens": 20,
    "cache_creation_input_tokens": 1000,
    "cache_read_input_tokens": 4000,
    "cache_creation": {"ephemeral_5m_input_tokens": 600, "ephemeral_1h_input_tokens": 400},
    "output_tokens": 90,
    "output_tokens_details": {"thinking_tokens": 60},
    "server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 0},
    "service_tier": "standard",
}
CHAT_RAW = {
    "prompt_tokens": 3000,
    "completion_tokens": 200,
    "total_tokens": 3200,
    "prompt_tokens_details": {"cached_tokens": 2048, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 128, "audio_tokens": 0},
}
RESPONSES_RAW = {
    "input_tokens": 3000,
    "input_tokens_details": {"cached_tokens": 2048},
    "output_tokens": 200,
    "output_tokens_details": {"reasoning_tokens": 128},
    "total_tokens": 3200,
}


def _script(raw: dict[str, Any]) -> dict[str, Any]:
    return {"models": {"*": [{"text": "Hello there", "raw_usage": raw}]}}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "create"])
async def test_anthropic_raw_usage_as_the_sdk_folds_it(stream: bool) -> None:
    async with FakeProvider(_script(ANTHROPIC_RAW)) as fake:
        sdk = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="k", max_retries=0)
        kwargs: Any = {
            "model": "m",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
        }
        try:
            if stream:
                async with sdk.messages.stream(**kwargs) as s:
                    final = await s.get_final_message()
            else:
                final = await sdk.messages.create(**kwargs)
        finally:
            await sdk.close()
        async with AnthropicClient("m", api_key="k", base_url=fake.base_url) as client:
            engine = TurnEngine(client, mode="streaming" if stream else "non_streaming")
            result = await engine.run("hi")
    expected = anthropic_expected(final.usage)
    assert result.message.usage == expected
    assert expected == Usage(
        input_tokens=5020,
        output_tokens=90,
        cache_read_tokens=4000,
        cache_write_tokens=1000,
        cache_write_5m_tokens=600,
        cache_write_1h_tokens=400,
        output_reasoning_tokens=60,
        details={
            "server_tool_use.web_search_requests": 1,
            "server_tool_use.web_fetch_requests": 0,
        },
    )


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "create"])
async def test_openai_chat_raw_usage_as_the_sdk_folds_it(stream: bool) -> None:
    async with FakeProvider(_script(CHAT_RAW)) as fake:
        sdk = openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="k", max_retries=0)
        messages: Any = [{"role": "user", "content": "hi"}]
        try:
            if stream:
                async with sdk.chat.completions.stream(
                    model="m", messages=messages, stream_options={"include_usage": True}
                ) as s:
                    final = await s.get_final_completion()
            else:
                final = await sdk.chat.completions.create(model="m", messages=messages)
        finally:
            await sdk.close()
        async with OpenAIClient("m", api_key="k", base_url=fake.openai_base_url) as client:
            engine = TurnEngine(client, mode="streaming" if stream else "non_streaming")
            result = await engine.run("hi")
    assert result.message.usage == chat_expected(final.usage)
    assert result.message.usage is not None
    assert (
        result.message.usage.cache_read_tokens,
        result.message.usage.output_reasoning_tokens,
    ) == (2048, 128)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "create"])
async def test_responses_raw_usage_as_the_sdk_folds_it(stream: bool) -> None:
    async with FakeProvider(_script(RESPONSES_RAW)) as fake:
        sdk = openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="k", max_retries=0)
        try:
            if stream:
                async with sdk.responses.stream(model="m", input="hi") as s:
                    final = await s.get_final_response()
            else:
                final = await sdk.responses.create(model="m", input="hi")
        finally:
            await sdk.close()
        async with OpenAIResponsesClient("m", api_key="k", base_url=fake.openai_base_url) as c:
            engine = TurnEngine(c, mode="streaming" if stream else "non_streaming")
            result = await engine.run("hi")
    assert result.message.usage == responses_expected(final.usage)
    assert result.message.usage is not None and result.message.usage.cache_read_tokens == 2048


async def test_ollama_raw_usage_sets_its_counters() -> None:
    raw = {"prompt_eval_count": 33, "eval_count": 7}
    async with (
        FakeProvider(_script(raw)) as fake,
        OllamaClient("m", base_url=fake.base_url) as client,
    ):
        result = await TurnEngine(client).run("hi")
    assert result.message.usage == Usage(input_tokens=33, output_tokens=7)


async def test_garbage_raw_usage_is_the_clients_typed_error() -> None:
    """What the fake sends verbatim, rxturn refuses with its typed error, never a crash."""
    script = {"models": {"*": [{"text": "x", "raw_usage": {"prompt_tokens": -1}}]}}
    async with (
        FakeProvider(script) as fake,
        OpenAIClient("m", api_key="k", base_url=fake.openai_base_url) as client,
    ):
        with pytest.raises(StreamProtocolError, match="'prompt_tokens' is -1"):
            await TurnEngine(client).run("hi")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"text": "x", "raw_usage": [1, 2]}, "raw_usage"),
        ({"text": "x", "raw_usage": {}, "usage": {"input_tokens": 1, "output_tokens": 1}}, "one"),
        ({"status": 500, "raw_usage": {}}, "not an HTTP error"),
    ],
    ids=["not-an-object", "with-usage", "with-status"],
)
def test_raw_usage_is_validated_strictly(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_scenario({"models": {"m": [entry]}})


GARBAGE = {
    "anthropic": {"input_tokens": "lots", "output_tokens": 1},
    "openai": {"prompt_tokens": 3, "completion_tokens": -2},
    "openai-responses": {"input_tokens": 2**60, "output_tokens": 1},
    "ollama": {"prompt_eval_count": -4, "eval_count": 1},
}


@pytest.mark.parametrize("wire", list(GARBAGE))
@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
async def test_garbage_usage_on_every_wire_is_a_typed_error(wire: str, mode: str) -> None:
    script = {"models": {"*": [{"text": "x", "raw_usage": GARBAGE[wire]}]}}
    async with FakeProvider(script) as fake:
        client: Any
        if wire == "anthropic":
            client = AnthropicClient("m", api_key="k", base_url=fake.base_url)
        elif wire == "openai":
            client = OpenAIClient("m", api_key="k", base_url=fake.openai_base_url)
        elif wire == "openai-responses":
            client = OpenAIResponsesClient("m", api_key="k", base_url=fake.openai_base_url)
        else:
            client = OllamaClient("m", base_url=fake.base_url)
        async with client:
            with pytest.raises(StreamProtocolError, match=r"malformed .*usage"):
                await TurnEngine(client, mode=mode).run("hi")  # pyright: ignore[reportArgumentType]
