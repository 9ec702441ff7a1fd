"""``TurnEngine(scheduler=...)`` with a reactivex scheduler that cannot time a turn on the running
loop: the turn fails with a ConfigError naming the fix, before any request is sent.

Before, each went wrong its own way: ``ImmediateScheduler``'s ``WouldBlockException`` came out of
the turn untyped; ``CurrentThreadScheduler`` slept on the loop's thread until the deadlines
passed (the reply never read); a thread pool or ``EventLoopScheduler`` retried the attempt from
its own thread, which failed with "must be subscribed from code running on an asyncio event
loop"; and the plain ``AsyncIOScheduler`` of another thread's loop never woke that loop (a hang).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest
from reactivex import abc
from reactivex.scheduler import (
    CurrentThreadScheduler,
    EventLoopScheduler,
    ImmediateScheduler,
    ThreadPoolScheduler,
)
from reactivex.scheduler.eventloop import AsyncIOScheduler

from rxturn import StreamHandler, TurnEngine
from rxturn.clients import OpenAIClient
from rxturn.errors import ConfigError
from rxturn.messages import Message
from rxturn.resilience.policies import RetryPolicy, TimeoutPolicy
from rxturn.testing import MockResponse, MockTransport

pytestmark = pytest.mark.timeout(30)


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


SCHEDULERS: dict[str, Callable[[asyncio.AbstractEventLoop], abc.SchedulerBase]] = {
    "immediate": lambda _: ImmediateScheduler(),
    "current thread": lambda _: CurrentThreadScheduler(),
    "thread pool": lambda _: ThreadPoolScheduler(1),
    "event loop": lambda _: EventLoopScheduler(),
    "another thread's loop": AsyncIOScheduler,
}


@pytest.mark.parametrize("kind", sorted(SCHEDULERS))
async def test_a_scheduler_that_cannot_time_the_turn_fails_it_before_any_request(
    kind: str, other_loop: asyncio.AbstractEventLoop
) -> None:
    transport = MockTransport(MockResponse(status=500))
    client = OpenAIClient("m", api_key="k", base_url="http://mock.invalid/v1", transport=transport)
    scheduler = SCHEDULERS[kind](other_loop)
    engine = TurnEngine(
        client,
        handler=StreamHandler(
            retry=RetryPolicy(max_retries=1, base_delay=0.01, jitter=0.0),
            timeouts=TimeoutPolicy(first_event=0.5, per_event=0.5, total=1.0, rescue=False),
        ),
        scheduler=scheduler,
    )
    engine.history.append(Message.user("hi"))
    try:
        async with client:
            with pytest.raises(ConfigError, match=r"^scheduler=.*or none\)?$"):
                await asyncio.wait_for(engine.turn(), 5.0)
    finally:
        if isinstance(scheduler, EventLoopScheduler):
            scheduler.dispose()
    assert transport.requests == []
