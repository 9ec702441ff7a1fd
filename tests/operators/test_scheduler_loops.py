"""A time-dependent operator given a scheduler that cannot time a stream subscribed here: a
ConfigError at subscription naming the fix, not a deadline that never fires, a loop held, or a
verdict delivered from another thread.

The asyncio scheduler of a loop that will never run its timers (closed, or not running while
another loop runs here) or that another thread runs; reactivex's ``ImmediateScheduler`` (it
cannot wait); and, while an event loop runs on this thread, the trampoline
(``CurrentThreadScheduler``: it sleeps on the loop's thread) and the schedulers that fire on
other threads."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
import reactivex
from reactivex import Observable, abc
from reactivex.scheduler import (
    CurrentThreadScheduler,
    EventLoopScheduler,
    ImmediateScheduler,
    NewThreadScheduler,
    ThreadPoolScheduler,
    TimeoutScheduler,
)
from reactivex.scheduler.eventloop import AsyncIOScheduler, AsyncIOThreadSafeScheduler

from rxturn.errors import ConfigError, ServerError, StreamTimeoutError
from rxturn.messages import Message
from rxturn.operators import deadlines, rescue, retry_ladder, total_deadline
from rxturn.sources import from_async_iterable

Operator = Callable[[abc.SchedulerBase], Callable[[Observable[Any]], Observable[Any]]]

OPERATORS: dict[str, Operator] = {
    "deadlines": lambda s: deadlines(0.05, 0.05, scheduler=s),
    "total_deadline": lambda s: total_deadline(0.05, scheduler=s),
    "retry_ladder": lambda s: retry_ladder(scheduler=s),
    # (checked at subscription: before, only once the stream had failed, so a turn that never
    # needed the rescue never said so, and this stalled source waited for ever)
    "rescue": lambda s: rescue(lambda: reactivex.never(), timeout=0.05, scheduler=s),
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


@pytest.fixture
def other_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop another thread runs."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5.0)
        loop.close()


#: scheduler kind -> (the scheduler, given the other thread's loop; what the error says)
MISFITS: dict[str, tuple[Callable[[asyncio.AbstractEventLoop], abc.SchedulerBase], str]] = {
    "immediate": (lambda _: ImmediateScheduler(), "ImmediateScheduler cannot wait"),
    "current thread": (lambda _: CurrentThreadScheduler(), "waits by sleeping on its thread"),
    "thread pool": (lambda _: ThreadPoolScheduler(1), "fires its timers on other threads than"),
    "new thread": (lambda _: NewThreadScheduler(), "fires its timers on other threads than"),
    "event loop": (lambda _: EventLoopScheduler(), "fires its timers on other threads than"),
    "timeout": (lambda _: TimeoutScheduler(), "fires its timers on other threads than"),
    "another thread's loop": (AsyncIOScheduler, "the event loop of another thread"),
    "another thread's loop, thread-safe": (
        AsyncIOThreadSafeScheduler,
        "the event loop of another thread",
    ),
}


@pytest.mark.parametrize("kind", sorted(MISFITS))
@pytest.mark.parametrize("name", sorted(OPERATORS))
async def test_a_scheduler_that_cannot_time_the_loops_stream_is_a_config_error(
    name: str, kind: str, other_loop: asyncio.AbstractEventLoop
) -> None:
    # before: the immediate scheduler's WouldBlockException escaped (a retry's into nowhere:
    # a hang), the trampoline slept on the loop's thread until the deadline, the threaded ones
    # timed out or resubscribed the attempt on their own thread (where no loop runs), and
    # another loop's plain scheduler never woke that loop (a hang)
    make, says = MISFITS[kind]
    scheduler = make(other_loop)
    source = (
        from_async_iterable(_stalls)
        if name != "retry_ladder"
        else reactivex.throw(ServerError("x", status_code=500))
    )
    try:
        with pytest.raises(ConfigError, match=says) as raised:
            await asyncio.wait_for(source.pipe(OPERATORS[name](scheduler)), 2.0)
        assert "give the running loop's AsyncIOScheduler, a TestScheduler, or none" in str(
            raised.value
        )
    finally:
        if isinstance(scheduler, EventLoopScheduler):
            scheduler.dispose()


def test_off_the_loop_reactivex_schedulers_still_time_a_stream() -> None:
    # no event loop on this thread: the trampoline and a thread of its own may wait
    for scheduler in (CurrentThreadScheduler(), NewThreadScheduler()):
        with pytest.raises(StreamTimeoutError, match=r"^total timeout after"):
            reactivex.never().pipe(total_deadline(0.01, scheduler=scheduler)).run()
