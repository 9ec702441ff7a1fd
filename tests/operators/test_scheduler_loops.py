"""A time-dependent operator given the asyncio scheduler of a loop that will never run its timers
(closed, or not running while another loop runs here): a ConfigError at subscription, not a
deadline that never fires."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import reactivex
from reactivex import Observable
from reactivex.scheduler.eventloop import AsyncIOScheduler

from rxturn.errors import ConfigError, ServerError, StreamTimeoutError
from rxturn.messages import Message
from rxturn.operators import deadlines, rescue, retry_ladder, total_deadline
from rxturn.sources import from_async_iterable

Operator = Callable[[AsyncIOScheduler], Callable[[Observable[Any]], Observable[Any]]]

OPERATORS: dict[str, Operator] = {
    "deadlines": lambda s: deadlines(0.05, 0.05, scheduler=s),
    "total_deadline": lambda s: total_deadline(0.05, scheduler=s),
    "retry_ladder": lambda s: retry_ladder(scheduler=s),
}


async def _stalls() -> AsyncIterator[object]:
    await asyncio.sleep(5.0)  # bounded: the test's wait_for ends it long before
    yield None


def _dead_loops() -> list[tuple[str, asyncio.AbstractEventLoop]]:
    idle = asyncio.new_event_loop()  # made, never run (as at import time)
    closed = asyncio.new_event_loop()
    closed.close()
    return [("not running", idle), ("closed", closed)]


@pytest.mark.parametrize("name", sorted(OPERATORS))
async def test_a_scheduler_whose_loop_never_runs_is_a_config_error(name: str) -> None:
    for state, loop in _dead_loops():
        source = (
            from_async_iterable(_stalls)
            if name != "retry_ladder"
            else reactivex.throw(ServerError("x", status_code=500))
        )
        with pytest.raises(
            ConfigError, match=rf"names {'a closed' if state == 'closed' else 'an'}"
        ):
            await asyncio.wait_for(source.pipe(OPERATORS[name](AsyncIOScheduler(loop))), 2.0)
        loop.close()


async def test_the_rescue_says_so_instead_of_starting_a_request_without_a_deadline() -> None:
    idle = asyncio.new_event_loop()
    try:
        stream = reactivex.throw(ServerError("x", status_code=500))
        made: list[int] = []

        def create() -> Observable[Message]:
            made.append(1)
            return reactivex.never()

        with pytest.raises(ConfigError, match="not running"):
            await asyncio.wait_for(
                stream.pipe(rescue(create, timeout=0.05, scheduler=AsyncIOScheduler(idle))), 2.0
            )
        assert made == []
    finally:
        idle.close()


async def test_the_running_loops_scheduler_still_fires() -> None:
    here = AsyncIOScheduler(asyncio.get_running_loop())
    with pytest.raises(StreamTimeoutError, match=r"^total timeout after"):
        await asyncio.wait_for(
            from_async_iterable(_stalls).pipe(total_deadline(0.05, scheduler=here)), 2.0
        )
