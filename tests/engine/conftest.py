"""Loopback fixtures: a real fake provider on 127.0.0.1 and a real client pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from rxturn.clients import AnthropicClient, OllamaClient, OpenAIClient
from rxturn.testing import FakeProvider


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
