"""``TurnEngine(scheduler=...)`` with a reactivex scheduler that cannot time a turn: a ConfigError
naming the fix where the engine is built (or the scheduler assigned) for the kinds that never can
(a turn is a coroutine: its stream runs on an event loop), else when the turn starts, before any
request is sent.

Before, each went wrong its own way, in the turn: ``ImmediateScheduler``'s
``WouldBlockException`` came out of it untyped; ``CurrentThreadScheduler`` slept on the loop's
thread until the deadlines passed (the reply never read); a thread pool or
``EventLoopScheduler`` retried the attempt from its own thread, which failed with "must be
subscribed from code running on an asyncio event loop"; and the plain ``AsyncIOScheduler`` of
another thread's loop never woke that loop (a hang).
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


def _client() -> tuple[OpenAIClient, MockTransport]:
    transport = MockTransport(MockResponse(status=500))
    client = OpenAIClient("m", api_key="k", base_url="http://mock.invalid/v1", transport=transport)
    return client, transport


async def test_another_threads_loop_is_refused_at_build_here_and_at_the_turn_if_built_elsewhere(
    other_loop: asyncio.AbstractEventLoop,
) -> None:
    client, transport = _client()
    scheduler = AsyncIOScheduler(other_loop)
    handler = StreamHandler(
        retry=RetryPolicy(max_retries=1, base_delay=0.01, jitter=0.0),
        timeouts=TimeoutPolicy(first_event=0.5, per_event=0.5, total=1.0, rescue=False),
    )
    says = r"scheduler=AsyncIOScheduler\(loop\) names the event loop of another thread"
    with pytest.raises(ConfigError, match=rf"^TurnEngine\(scheduler=\.\.\.\): {says}"):
        TurnEngine(client, handler=handler, scheduler=scheduler)
    # built on a thread running no loop, where that loop could be the one to run its turns
    engine = await asyncio.to_thread(TurnEngine, client, handler=handler, scheduler=scheduler)
    engine.history.append(Message.user("hi"))
    async with client:
        with pytest.raises(ConfigError, match=rf"^{says}"):
            await asyncio.wait_for(engine.turn(), 5.0)
    assert transport.requests == []


NEVER: dict[str, Callable[[], abc.SchedulerBase]] = {
    "immediate": ImmediateScheduler,
    "current thread": CurrentThreadScheduler,
    "thread pool": lambda: ThreadPoolScheduler(1),
    "event loop": EventLoopScheduler,
}


@pytest.mark.parametrize("kind", sorted(NEVER))
def test_a_scheduler_that_never_fits_a_turn_is_refused_where_the_engine_is_built(
    kind: str,
) -> None:
    scheduler = NEVER[kind]()
    client, _ = _client()
    try:
        with pytest.raises(ConfigError, match=r"^TurnEngine\(scheduler=\.\.\.\): scheduler="):
            TurnEngine(client, scheduler=scheduler)
        engine = TurnEngine(client)
        with pytest.raises(ConfigError, match=r"^engine\.scheduler = \.\.\.: scheduler="):
            engine.scheduler = scheduler
        assert engine.scheduler is None
    finally:
        if isinstance(scheduler, EventLoopScheduler):
            scheduler.dispose()
