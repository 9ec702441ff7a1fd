"""``retry_ladder`` and ``rescue`` under a subscriber whose ``on_next`` raises: the subscriber's
own error ends the stream through its ``on_error``; it is never taken for the attempt's.

Before, the bridge reported the exception as the stream's error, and one that looked retryable
or rescuable (a ``ServerError`` the subscriber raised) made ``retry_ladder`` subscribe the
attempt again (the factory called a second time, its items handed to the subscriber that had
failed, then completion) and ``rescue`` start its request; the subscriber never heard its own
error.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import reactivex
from reactivex import Observable
from reactivex.scheduler.eventloop import AsyncIOScheduler

from rxturn.errors import ServerError
from rxturn.messages import Message
from rxturn.operators import rescue, retry_ladder
from rxturn.resilience.policies import RetryPolicy
from rxturn.sources import from_async_iterable

pytestmark = pytest.mark.timeout(30)

Operator = Callable[[list[int]], Callable[[Observable[Any]], Observable[Any]]]


def _retry(_: list[int]) -> Callable[[Observable[Any]], Observable[Any]]:
    here = AsyncIOScheduler(asyncio.get_running_loop())
    return retry_ladder(RetryPolicy(max_retries=2, base_delay=0.001, jitter=0.0), scheduler=here)


def _rescue(made: list[int]) -> Callable[[Observable[Any]], Observable[Any]]:
    def create() -> Observable[Message]:
        made.append(1)
        return reactivex.just(Message.assistant("rescued"))

    return rescue(create, timeout=5.0)


OPERATORS: dict[str, Operator] = {"retry_ladder": _retry, "rescue": _rescue}


@pytest.mark.parametrize("name", sorted(OPERATORS))
async def test_the_subscribers_error_ends_the_stream_and_is_never_the_attempts(name: str) -> None:
    subscribed: list[int] = []
    made: list[int] = []

    async def attempt() -> AsyncIterator[int]:
        subscribed.append(1)
        for i in range(5):
            yield i

    own = ServerError("the subscriber's own 500", status_code=500)
    items: list[Any] = []
    done: asyncio.Future[object] = asyncio.get_running_loop().create_future()

    def on_next(item: Any) -> None:
        items.append(item)
        if len(items) == 2:
            raise own

    from_async_iterable(attempt).pipe(OPERATORS[name](made)).subscribe(
        on_next, done.set_result, lambda: done.set_result("completed")
    )
    assert await asyncio.wait_for(done, 5.0) is own
    assert items == [0, 1] and subscribed == [1] and made == []
