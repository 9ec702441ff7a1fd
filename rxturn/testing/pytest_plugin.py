"""pytest fixtures for testing code built on rxturn: virtual time, scripted clients, the fake.

Enable them with one line in your top-level ``conftest.py``::

    pytest_plugins = ["rxturn.testing.pytest_plugin"]

(It is not registered as an automatic ``pytest11`` plugin: installing rxturn does not add
fixtures to every test suite of the environment.) The async fixtures and your async tests need
``pytest-asyncio`` (``pytest-aiohttp`` brings it); the fixtures work in its strict and auto
modes.

Fixtures:

- ``scheduler`` — a fresh :class:`reactivex.testing.TestScheduler` (virtual seconds from 0);
- ``clean`` — the same scheduler, checked at teardown: no live timer on it and no stray asyncio
  task may remain (:func:`~rxturn.testing.virtual.assert_clean`);
- ``scripted_client`` — ``scripted_client(*timelines, create=(...))`` builds a
  :class:`~rxturn.testing.virtual.ScriptedClient` on ``scheduler``;
- ``fake_provider`` — ``await fake_provider(scenario)`` starts a
  :class:`~rxturn.testing.FakeProvider` on 127.0.0.1 (no scenario: the default one); every one
  started is stopped at teardown;
- ``fake_client`` — ``async with fake_client(scenario, provider="anthropic", model="primary")
  as (fake, client)``: a fake provider and an rxturn client pointed at it, both closed after
  (``provider``: ``anthropic``, ``openai``, ``openai-responses`` or ``ollama``).

docs/testing.md shows them at work.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
from reactivex.testing import TestScheduler
from reactivex.testing.recorded import Recorded

from ._scenario import DEFAULT_SCENARIO
from .virtual import ScriptedClient, assert_clean

async_fixture: Any
try:  # pytest-asyncio's own decorator: the async fixtures then work in its strict mode too
    from pytest_asyncio import fixture as async_fixture
except ImportError:  # pragma: no cover - without pytest-asyncio, async tests cannot run anyway
    async_fixture = pytest.fixture

__all__ = ["clean", "fake_client", "fake_provider", "scheduler", "scripted_client"]

ScriptedFactory = Callable[..., ScriptedClient]
FakeFactory = Callable[[Any], Awaitable[Any]]
FakeClientFactory = Callable[..., AbstractAsyncContextManager[tuple[Any, Any]]]


@pytest.fixture
def scheduler() -> TestScheduler:
    """A fresh TestScheduler: virtual seconds from 0."""
    return TestScheduler()


@async_fixture
async def clean(scheduler: TestScheduler) -> AsyncIterator[TestScheduler]:
    """The scheduler, checked at teardown: no live timer and no stray asyncio task remain."""
    yield scheduler
    await assert_clean(scheduler)


@pytest.fixture
def scripted_client(scheduler: TestScheduler) -> ScriptedFactory:
    """``scripted_client(*timelines, create=(...), base_url=...)`` on the test's scheduler."""

    def make(
        *timelines: list[Recorded[Any]],
        create: Sequence[Any] = (),
        base_url: str = "http://scripted.invalid",
    ) -> ScriptedClient:
        return ScriptedClient(scheduler, list(timelines), create=create, base_url=base_url)

    return make


@async_fixture
async def fake_provider() -> AsyncIterator[FakeFactory]:
    """``await fake_provider(scenario)``: a started FakeProvider, stopped at teardown."""
    from . import FakeProvider

    started: list[FakeProvider] = []

    async def start(scenario: Any = DEFAULT_SCENARIO) -> FakeProvider:
        # (a default of None was refused by FakeProvider: fake_provider() could not start)
        fake = await FakeProvider(scenario).start()
        started.append(fake)
        return fake

    yield start
    for fake in started:
        await fake.stop()


@asynccontextmanager
async def _fake_client(
    scenario: Any, provider: str = "anthropic", model: str = "primary"
) -> AsyncGenerator[tuple[Any, Any]]:
    from ..clients import AnthropicClient, OllamaClient, OpenAIClient, OpenAIResponsesClient
    from . import FakeProvider

    async with FakeProvider(scenario) as fake:
        client: Any
        if provider == "anthropic":
            client = AnthropicClient(model, api_key="test-key", base_url=fake.base_url)
        elif provider == "openai":
            client = OpenAIClient(model, api_key="test-key", base_url=fake.openai_base_url)
        elif provider == "openai-responses":  # (the fake speaks it; the fixture refused it)
            client = OpenAIResponsesClient(model, api_key="test-key", base_url=fake.openai_base_url)
        elif provider == "ollama":
            client = OllamaClient(model, base_url=fake.base_url)
        else:
            from .._arguments import shown
            from ..errors import ConfigError

            raise ConfigError(
                "fake_client provider must be anthropic, openai, openai-responses or ollama, "
                f"got {shown(provider, 100)}"
            )
        async with client:
            yield fake, client


@pytest.fixture
def fake_client() -> FakeClientFactory:
    """``async with fake_client(scenario, provider=..., model=...) as (fake, client)``."""
    return _fake_client
