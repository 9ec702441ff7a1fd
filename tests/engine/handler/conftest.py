"""Fixtures for the stream handler tests: a fresh TestScheduler (virtual seconds from 0)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from reactivex.testing import TestScheduler

from ._support import assert_clean


@pytest.fixture
def scheduler() -> TestScheduler:
    return TestScheduler()


@pytest.fixture
async def clean(scheduler: TestScheduler) -> AsyncIterator[TestScheduler]:
    """The scheduler, checked at teardown: no live timer and no stray asyncio task remain."""
    yield scheduler
    await assert_clean(scheduler)
