"""The pytest plugin's fake-provider fixtures, as a user's test suite calls them."""

from __future__ import annotations

from typing import Any

import pytest

from rxturn import TurnEngine
from rxturn.errors import ConfigError
from rxturn.testing import DEFAULT_SCENARIO


async def test_fake_provider_without_a_scenario_serves_the_default(fake_provider: Any) -> None:
    # the fixture's default (None) was refused by FakeProvider: a ConfigError ("got NoneType")
    fake = await fake_provider()
    assert fake.scenario == DEFAULT_SCENARIO
    assert fake.base_url.startswith("http://127.0.0.1:")


async def test_fake_client_speaks_every_wire_the_fake_serves(fake_client: Any) -> None:
    # openai-responses was refused: "provider must be anthropic, openai or ollama"
    scenario = {"models": {"*": [{"text": "served"}]}}
    routes = {
        "anthropic": "/v1/messages",
        "openai": "/v1/chat/completions",
        "openai-responses": "/v1/responses",
        "ollama": "/api/chat",
    }
    for provider, route in routes.items():
        async with fake_client(scenario, provider=provider) as (fake, client):
            result = await TurnEngine(client).run("q")
            assert result.text == "served", provider
            assert [record.path for record in fake.records] == [route]


async def test_fake_client_names_an_unknown_provider(fake_client: Any) -> None:
    with pytest.raises(ConfigError, match="openai-responses or ollama, got 'gemini'"):
        async with fake_client({"models": {"*": [{}]}}, provider="gemini"):
            pass
