"""Client tests: every test ends with a garbage collection, so a leaked (unclosed) aiohttp
session, connector or response raises its ResourceWarning inside the test that leaked it
(pytest turns warnings into errors)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _collect_leaks() -> Iterator[None]:
    yield
    gc.collect(1)  # young generations: cheap, and where a test's own leaks live
