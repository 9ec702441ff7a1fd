"""A turn with no message to send, on a wire whose API refuses one: a ConfigError before any
request (Anthropic answers ``messages: []`` with a 400, and OpenAI Chat Completions an empty
``messages`` with a 400 ``empty_array``), never a request the real API would refuse."""

from __future__ import annotations

from typing import Any

import pytest

from rxturn import (
    AnthropicClient,
    Message,
    OllamaClient,
    OpenAIClient,
    TurnEngine,
)
from rxturn.errors import ConfigError
from rxturn.testing import FakeProvider

SCRIPT = {"models": {"*": [{"text": "ok"}]}}


def _anthropic(fake: FakeProvider) -> Any:
    return AnthropicClient("claude-sonnet-4-5", api_key="k", base_url=fake.base_url)


def _openai(fake: FakeProvider) -> Any:
    return OpenAIClient("gpt-4o", api_key="k", base_url=fake.openai_base_url)


@pytest.mark.parametrize("make", [_anthropic, _openai], ids=["anthropic", "openai"])
async def test_an_empty_conversation_is_refused_before_any_request(make: Any) -> None:
    async with FakeProvider(SCRIPT) as fake, make(fake) as client:
        engine = TurnEngine(client)
        with pytest.raises(ConfigError, match="needs at least one message") as caught:
            await engine.turn()
        assert "\n" not in str(caught.value)
        assert fake.requests == []  # nothing was sent
        # a transient message is a message: the turn goes out
        result = await engine.turn(transient=[Message.user("hi")])
        assert result.message.text == "ok"
        assert len(fake.requests) == 1


async def test_a_system_prompt_alone_is_a_message_on_openai_chat() -> None:
    """Chat Completions carries the system prompt in ``messages``: a request with it alone is
    one the API takes."""
    async with FakeProvider(SCRIPT) as fake, _openai(fake) as client:
        result = await TurnEngine(client, system="say ok").turn()
    assert result.message.text == "ok"
    assert fake.requests[0]["messages"] == [{"role": "system", "content": "say ok"}]


async def test_ollama_takes_an_empty_conversation() -> None:
    """Ollama's /api/chat takes no message (it loads the model): nothing refused there."""
    async with (
        FakeProvider(SCRIPT) as fake,
        OllamaClient("llama3", base_url=fake.base_url) as client,
    ):
        result = await TurnEngine(client).turn()
    assert result.message.text == "ok"
