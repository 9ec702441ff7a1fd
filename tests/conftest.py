"""Suite-wide setup, and the fixtures of the virtual-time kit (``tests/virtual_time.py``).

CI may start the suite with file descriptor 0 closed. Python then sets ``sys.stdin`` and
``sys.__stdin__`` to ``None``, and IPython, which jupyter_client imports to run the notebook
tests, asserts that a stdin exists. So when there is none, stdin becomes ``/dev/null``. Because
``open`` takes the lowest free descriptor, that is fd 0, and child processes inherit it as well.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator

import pytest
from reactivex.testing import TestScheduler
from virtual_time import assert_clean

if sys.__stdin__ is None:
    sys.stdin = sys.__stdin__ = open(os.devnull)  # noqa: SIM115 - lives as long as the process


@pytest.fixture
def scheduler() -> TestScheduler:
    """A fresh TestScheduler: virtual seconds from 0."""
    return TestScheduler()


@pytest.fixture
async def clean(scheduler: TestScheduler) -> AsyncIterator[TestScheduler]:
    """The scheduler, checked at teardown: no live timer and no stray asyncio task remain."""
    yield scheduler
    await assert_clean(scheduler)
