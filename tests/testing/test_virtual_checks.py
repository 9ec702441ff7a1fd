"""The virtual-time kit refuses a time or a count no test means, where it is built: a negative,
NaN or infinite delay, a count that is not a whole number. Before, ``Later(-1, ...)`` was
taken, and the scheduler ran its outcome at once (or never, for NaN), far from the line that
wrote it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from reactivex import empty
from reactivex.testing import TestScheduler

from rxturn.errors import ConfigError
from rxturn.messages import Message
from rxturn.testing import Later, drive, run_virtual, timeline
from rxturn.testing.virtual import settle

BAD_SECONDS: list[Any] = [-1, -0.5, float("nan"), float("inf"), -float("inf"), 10**400, "1", True]
BAD_COUNTS: list[Any] = [-1, 1.5, float("nan"), float("inf"), "3", True, None]


def _one_line(error: pytest.ExceptionInfo[ConfigError]) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("delay", BAD_SECONDS, ids=repr)
def test_a_later_outcome_needs_a_delay_of_zero_or_more_seconds(delay: Any) -> None:
    with pytest.raises(ConfigError, match=r"^Later: delay must be") as error:
        Later(delay, Message.assistant("late"))
    _one_line(error)


def test_what_later_takes() -> None:
    assert Later(0, "x").delay == 0
    assert Later(2.5, "x").delay == 2.5


@pytest.mark.parametrize("field", ["start", "step"])
@pytest.mark.parametrize("value", BAD_SECONDS, ids=repr)
def test_a_timeline_needs_times_of_zero_or_more_seconds(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"^timeline: {field} must be") as error:
        timeline([1, 2], **{field: value})
    _one_line(error)


def test_a_timeline_at_zero_is_fine() -> None:
    assert len(timeline([1, 2], start=0, step=0)) == 3


@pytest.mark.parametrize("limit", [*BAD_SECONDS, 0], ids=repr)
async def test_run_virtual_needs_a_positive_limit(limit: Any) -> None:
    async def nothing() -> None:
        return None

    awaitable = nothing()
    with pytest.raises(ConfigError, match=r"^run_virtual: limit must be") as error:
        await run_virtual(TestScheduler(), awaitable, limit=limit)
    _one_line(error)
    awaitable.close()  # never started


@pytest.mark.parametrize("rounds", BAD_COUNTS, ids=repr)
async def test_run_virtual_needs_a_whole_number_of_idle_rounds(rounds: Any) -> None:
    async def nothing() -> None:
        return None

    awaitable = nothing()
    with pytest.raises(ConfigError, match=r"^run_virtual: idle_rounds must be") as error:
        await run_virtual(TestScheduler(), awaitable, idle_rounds=rounds)
    _one_line(error)
    awaitable.close()


@pytest.mark.parametrize("field", ["cancel_at", "dispose_at", "limit"])
@pytest.mark.parametrize("value", BAD_SECONDS, ids=repr)
async def test_drive_needs_times_of_zero_or_more_seconds(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"^drive: {field} must be") as error:
        await drive(TestScheduler(), empty(), **{field: value})
    _one_line(error)
    assert asyncio.current_task() is not None


@pytest.mark.parametrize("rounds", BAD_COUNTS, ids=repr)
async def test_settle_needs_a_whole_number_of_rounds(rounds: Any) -> None:
    with pytest.raises(ConfigError, match=r"^settle: rounds must be") as error:
        await settle(rounds)
    _one_line(error)
