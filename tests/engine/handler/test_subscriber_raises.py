"""A turn's subscriber whose ``on_next`` raises: the turn ends with that exception, through the
subscriber's ``on_error``, and nothing more is sent.

Before, the exception went back up to the attempt's source: the bridge reported it as the
attempt's error, and one that looked retryable (here a ``ServerError`` the subscriber raised
itself) made the ladder send the request again and hand the new attempt's events to the
subscriber that had failed; the turn then completed and the subscriber never heard its own
error. On a source that does not catch it (virtual time), it escaped from the scheduler's run,
the turn's timers still armed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxturn import AnthropicClient, StreamHandler
from rxturn.errors import ServerError
from rxturn.messages import Message, Request
from rxturn.resilience.policies import RetryPolicy, TimeoutPolicy
from rxturn.testing import FakeProvider
from rxturn.testing.virtual import REQUEST, ScriptedClient, leftovers, reply, timeline

pytestmark = pytest.mark.timeout(30)

HANDLER = StreamHandler(
    retry=RetryPolicy(max_retries=2, base_delay=0.01, jitter=0.0),
    timeouts=TimeoutPolicy(first_event=5.0, per_event=5.0, total=10.0),
)


class Raising:
    """A subscriber whose ``on_next`` raises a retryable-looking error on its third item."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.errors: list[Exception] = []
        self.completed = False
        self.error = ServerError("the subscriber's own 500", status_code=500)

    def on_next(self, item: Any) -> None:
        self.items.append(item)
        if len(self.items) == 3:
            raise self.error

    def on_completed(self) -> None:
        self.completed = True


@pytest.mark.parametrize("batched", [False, True], ids=["events", "batches"])
async def test_over_a_client_the_turn_ends_with_the_subscribers_error(batched: bool) -> None:
    scenario = {"models": {"*": [{"text": "Hello there, world", "chunk_chars": 2, "delay_ms": 5}]}}
    async with (
        FakeProvider(scenario) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        request = Request(messages=(Message.user("hi"),))
        turn = (HANDLER.stream_turn_batches if batched else HANDLER.stream_turn)(client, request)
        subscriber = Raising()
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_error(error: Exception) -> None:
            subscriber.errors.append(error)
            done.set_result(None)

        def on_completed() -> None:
            subscriber.on_completed()
            done.set_result(None)

        turn.subscribe(subscriber.on_next, on_error, on_completed)
        await asyncio.wait_for(done, 10)
    assert subscriber.errors == [subscriber.error] and not subscriber.completed
    assert len(subscriber.items) == 3
    assert len(fake.requests) == 1


def test_on_virtual_time_the_turn_ends_with_it_and_leaves_nothing_scheduled(
    scheduler: TestScheduler,
) -> None:
    client = ScriptedClient(scheduler, [timeline(reply("a b c"))])
    subscriber = Raising()
    HANDLER.stream_turn(client, REQUEST).subscribe(
        subscriber.on_next, subscriber.errors.append, subscriber.on_completed
    )
    scheduler.advance_to(20.0)
    assert subscriber.errors == [subscriber.error] and not subscriber.completed
    assert len(subscriber.items) == 3 and len(client.stream_calls) == 1
    assert leftovers(scheduler) == []
