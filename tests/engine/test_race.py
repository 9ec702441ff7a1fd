"""The one race of an awaitable against the cancel signal and a timeout (engine/turn/_race.py), on
TestScheduler virtual time: the verdict's order, and that the loser is cancelled and its error
retrieved."""

from __future__ import annotations

import asyncio
import gc

import pytest
from reactivex.testing import TestScheduler

from rxturn.engine.turn._race import GRACE, race
from rxturn.errors import Cancelled
from rxturn.resilience.cancel import CancelToken
from rxturn.testing.virtual import run_virtual


class Timeout(Exception):
    pass


def expired() -> str:
    raise Timeout


async def sleeper(scheduler: TestScheduler, at: float, value: str, log: list[str]) -> str:
    """Finishes when virtual time reaches ``at``; records whether it was cancelled."""
    woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake(*_: object) -> None:
        if not woken.done():
            woken.set_result(None)

    scheduler.schedule_absolute(at, wake)
    try:
        await woken
    except asyncio.CancelledError:
        log.append("cancelled")
        raise
    return value


async def test_the_work_finishing_first_gives_its_result() -> None:
    scheduler, token, log = TestScheduler(), CancelToken(), []
    work = sleeper(scheduler, 1.0, "reply", log)
    assert await run_virtual(scheduler, race(work, token, 5.0, scheduler, expired)) == "reply"
    assert log == [] and scheduler.clock == 1.0


async def test_no_timeout_means_no_timer() -> None:
    scheduler, token, log = TestScheduler(), CancelToken(), []
    work = sleeper(scheduler, 900.0, "late", log)
    assert await run_virtual(scheduler, race(work, token, None, scheduler, expired)) == "late"


async def test_the_timeout_cancels_the_work_and_gives_expired() -> None:
    scheduler, token, log = TestScheduler(), CancelToken(), []
    work = sleeper(scheduler, 9.0, "reply", log)
    with pytest.raises(Timeout):
        await run_virtual(scheduler, race(work, token, 2.0, scheduler, expired))
    assert log == ["cancelled"] and scheduler.clock == 2.0
    work2 = sleeper(scheduler, 19.0, "reply", [])
    got = await run_virtual(scheduler, race(work2, token, 2.0, scheduler, lambda: "timed out"))
    assert got == "timed out"


async def test_a_cancel_cancels_the_work_and_raises_the_tokens_error() -> None:
    scheduler, token, log = TestScheduler(), CancelToken(), []
    scheduler.schedule_absolute(3.0, lambda *_: token.cancel("stop"))
    work = sleeper(scheduler, 9.0, "reply", log)
    with pytest.raises(Cancelled, match="stop"):
        await run_virtual(scheduler, race(work, token, 5.0, scheduler, expired))
    assert log == ["cancelled"] and scheduler.clock == 3.0


async def test_a_cancel_before_the_start_wins_over_a_finished_reply() -> None:
    scheduler, token = TestScheduler(), CancelToken()
    token.cancel("early")

    async def instant() -> str:
        return "reply"

    with pytest.raises(Cancelled, match="early"):
        await run_virtual(scheduler, race(instant(), token, None, scheduler, expired))


async def test_a_reply_done_in_the_instant_of_the_timeout_wins_over_it() -> None:
    """The reply's wake-up is due at the timer's instant and runs first: the task has finished
    when the race looks, so the reply wins."""
    scheduler, token = TestScheduler(), CancelToken()
    woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    scheduler.schedule_absolute(2.0, lambda *_: woken.set_result(None))

    async def reply() -> str:
        await woken
        return "reply"

    assert await run_virtual(scheduler, race(reply(), token, 2.0, scheduler, expired)) == "reply"
    assert scheduler.clock == 2.0


async def test_the_works_error_is_raised() -> None:
    scheduler, token = TestScheduler(), CancelToken()

    async def failing() -> str:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await run_virtual(scheduler, race(failing(), token, 5.0, scheduler, expired))


async def test_an_error_that_lost_to_a_cancel_is_retrieved() -> None:
    """The work fails in the same instant the cancel fires: Cancelled wins, and asyncio has no
    unretrieved task exception to report."""
    scheduler, token = TestScheduler(), CancelToken()
    reported: list[object] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: reported.append(context))

    async def failing_with_cancel() -> str:
        token.cancel("both")
        raise ValueError("lost")

    with pytest.raises(Cancelled):
        await run_virtual(scheduler, race(failing_with_cancel(), token, None, scheduler, expired))
    gc.collect()
    await asyncio.sleep(0)
    loop.set_exception_handler(None)
    assert reported == []


async def test_work_that_ignores_its_cancel_is_left_running_after_a_grace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # a tool that swallows CancelledError (a retry loop around an await) held the run until it
    # chose to end: 900 s here, for ever for some; the race now waits GRACE for it, then leaves it
    scheduler, token = TestScheduler(), CancelToken()
    woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake(*_: object) -> None:
        if not woken.done():
            woken.set_result(None)

    scheduler.schedule_absolute(900.0, wake)
    ignored: list[float] = []

    async def stubborn() -> str:
        while not woken.done():
            try:
                await asyncio.shield(woken)
            except asyncio.CancelledError:
                ignored.append(scheduler.clock)
        return "late"

    with caplog.at_level("WARNING", logger="rxturn.engine"), pytest.raises(Timeout):
        await run_virtual(scheduler, race(stubborn(), token, 1.0, scheduler, expired))
    assert scheduler.clock == 1.0 + GRACE
    assert ignored == [1.0]
    assert [r.getMessage() for r in caplog.records] == [
        f"a task ignored its cancellation for {GRACE:g}s after it lost a race; left running"
    ]
    woken.set_result(None)  # the abandoned task ends now, inside the test
    for _ in range(5):
        await asyncio.sleep(0)
