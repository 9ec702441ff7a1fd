"""Fixtures for transport tests: a transport that is always closed, and a leak check."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator

import pytest

from rxturn.transport import AiohttpTransport


@pytest.fixture
async def transport() -> AsyncIterator[AiohttpTransport]:
    t = AiohttpTransport(connect_timeout=5.0, read_timeout=10.0)
    try:
        yield t
    finally:
        await t.aclose()
    # An unclosed aiohttp session/connector/response warns (ResourceWarning) when collected;
    # collecting here attributes such a leak to the test that caused it (warnings are errors).
    gc.collect()
