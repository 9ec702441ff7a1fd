"""Fixtures for the operator tests (the virtual-time kit lives in ``tests/handler/_support``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from handler._support import assert_clean
from reactivex.testing import TestScheduler


@pytest.fixture
def scheduler() -> TestScheduler:
    return TestScheduler()


@pytest.fixture
async def clean(scheduler: TestScheduler) -> AsyncIterator[TestScheduler]:
    """The scheduler, checked at teardown: no live timer and no stray asyncio task remain."""
    yield scheduler
    await assert_clean(scheduler)
