"""Fixtures for the fake-provider tests: servers on 127.0.0.1 that stop after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from rxturn.testing import FakeProvider

Serve = Callable[[Any], Awaitable[FakeProvider]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Start a FakeProvider for a scenario; every one started is stopped at teardown."""
    started: list[FakeProvider] = []

    async def _serve(scenario: Any) -> FakeProvider:
        fake = await FakeProvider(scenario).start()
        started.append(fake)
        return fake

    yield _serve
    for fake in started:
        await fake.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A raw aiohttp client (bounded total timeout) for byte-level checks."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        yield session
