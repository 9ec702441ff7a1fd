"""The virtual-time kit refuses a time or a count no test means, where it is built: a negative,
NaN or infinite delay, a count that is not a whole number. Before, ``Later(-1, ...)`` was
taken, and the scheduler ran its outcome at once (or never, for NaN), far from the line that
wrote it."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, cast

import pytest
from reactivex import empty, never
from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.testing import TestScheduler

from rxturn import StreamHandler, TurnEngine
from rxturn.errors import ConfigError, RateLimitError
from rxturn.events import Delta
from rxturn.messages import Message
from rxturn.resilience.cancel import CancelToken
from rxturn.testing import (
    Later,
    ScriptedClient,
    StillRunning,
    drive,
    reply,
    run_virtual,
    timeline,
)
from rxturn.testing.virtual import Tracked, leftovers, settle

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


# -- shapes: a wrong one is said where it is written, never a hang or a 300 s timeout later -----


def test_one_timeline_where_a_list_of_them_belongs_is_refused() -> None:
    """``ScriptedClient(s, timeline(...))`` played each notification as an attempt's script:
    the turn ran into its total deadline and a rescue nobody scripted."""
    scheduler = TestScheduler()
    with pytest.raises(ConfigError, match=r"^ScriptedClient: streams must be a list of timelines"):
        ScriptedClient(scheduler, timeline(reply("hi")))  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError, match=r"^ScriptedClient: models\['m'\] must be a list of t"):
        ScriptedClient(scheduler, models={"m": timeline(reply("hi"))})  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError, match=r"^ScriptedClient: streams\[1\] must be a timeline"):
        ScriptedClient(scheduler, [timeline(reply("hi")), reply("hi")])  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"create": "hello"}, "ScriptedClient: create must be a list of outcomes"),
        ({"create": ["text"]}, "ScriptedClient: create[0] must be a Message, an exception, HANG"),
        ({"create": [Later(1, 42)]}, "ScriptedClient: create[0].outcome must be a Message"),
        ({"create": [RateLimitError]}, "ScriptedClient: create[0] is the class RateLimitError"),
        ({"models": [("m", [])]}, "ScriptedClient: models must be a dict"),
        ({"base_url": None}, "ScriptedClient: base_url must be a str"),
    ],
    ids=["create-str", "create-item", "later-outcome", "create-class", "models", "base-url"],
)
def test_scripted_client_arguments(kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as error:
        ScriptedClient(TestScheduler(), [timeline(reply("hi"))], **kwargs)
    assert _one_line(error).startswith(says)


@pytest.mark.parametrize(
    ("end", "says"),
    [
        (RateLimitError, "timeline: end is the class RateLimitError: pass an instance"),
        ("completed", 'timeline: end must be "complete", an Exception instance, or None'),
        (asyncio.CancelledError(), 'timeline: end must be "complete"'),
    ],
    ids=["class", "typo", "base-exception"],
)
def test_a_timeline_end_that_would_script_a_hang_is_refused(end: Any, says: str) -> None:
    """Each of these ended the timeline with nothing: the stream hung where an end was meant."""
    with pytest.raises(ConfigError) as error:
        timeline(reply("hi"), end=end)
    assert _one_line(error).startswith(says)


def test_timeline_and_reply_arguments() -> None:
    with pytest.raises(ConfigError, match=r"^timeline: events must be a list of items, got str"):
        timeline("abc")  # a str is a Sequence to the checker, not to the kit
    with pytest.raises(ConfigError, match=r"^reply: text must be a str, got int 3"):
        reply(3)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError, match=r"^reply: usage must be a Usage or None, got dict"):
        reply("hi", usage={"input_tokens": 1})  # pyright: ignore[reportArgumentType]
    ended = timeline(reply("hi"), end=RateLimitError("busy"))
    assert [cast("Any", r.value).kind for r in ended] == ["N"] * 6 + ["E"]
    assert timeline([], end=None) == []


async def test_run_virtual_refuses_another_scheduler_and_an_uncalled_function() -> None:
    loop_scheduler = AsyncIOScheduler(asyncio.get_running_loop())

    async def work() -> int:
        return 1

    awaitable = work()
    with pytest.raises(ConfigError, match=r"^run_virtual: scheduler must be a reactivex.testing"):
        await run_virtual(loop_scheduler, awaitable)  # pyright: ignore[reportArgumentType]
    assert inspect.getcoroutinestate(awaitable) == inspect.CORO_CLOSED  # not left un-awaited
    with pytest.raises(ConfigError, match=r"awaitable must be an awaitable, such as engine.run\("):
        await run_virtual(TestScheduler(), work)  # pyright: ignore[reportArgumentType]
    assert await run_virtual(TestScheduler(), work()) == 1


async def test_drive_arguments() -> None:
    scheduler = TestScheduler()
    with pytest.raises(ConfigError, match=r"^drive: scheduler must be a reactivex.testing"):
        await drive(AsyncIOScheduler(asyncio.get_running_loop()), empty())  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError, match=r"^drive: observable must be an Observable, got str"):
        await drive(scheduler, "events")  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError, match=r"^drive: cancel_at needs the token to fire"):
        await drive(scheduler, never(), cancel_at=1.0)
    with pytest.raises(ConfigError, match=r"^drive: cancel must be a CancelToken or None"):
        await drive(scheduler, never(), cancel="token", cancel_at=1.0)  # pyright: ignore[reportArgumentType]
    token = CancelToken()
    run = await drive(scheduler, never(), cancel=token, cancel_at=1.0, limit=2.0)
    assert token.cancelled and not run.finished


async def test_a_turn_on_another_clock_is_said_to_be_one() -> None:
    """The usual slip: an engine built without ``scheduler=``. Its Retry-After wait runs on
    asyncio's clock, nothing is due on the TestScheduler, and StillRunning said only 'nothing
    left to run', which reads like a hang of the code under test."""
    scheduler = TestScheduler()
    client = ScriptedClient(
        scheduler,
        [timeline([], end=RateLimitError("busy", retry_after=30.0)), timeline(reply("hi"))],
    )
    engine = TurnEngine(client, handler=StreamHandler())  # no scheduler=scheduler
    with pytest.raises(StillRunning, match=r"build the TurnEngine with scheduler="):
        await run_virtual(scheduler, engine.run("x"), idle_rounds=5)


# -- drive over real IO, and what a run given up leaves behind -----------------------------------


async def test_drive_waits_for_a_stream_over_real_io() -> None:
    """``drive(scheduler, client.stream(...))`` against the fake provider: nothing is due on
    the TestScheduler while the reply streams, and drive returned after its first settle with
    an unfinished run whose subscription went on receiving items after it returned."""
    from rxturn import AnthropicClient, Message, Request
    from rxturn.testing import FakeProvider

    script = {"models": {"*": [{"text": "one two three", "chunk_chars": 4, "delay_ms": 20}]}}
    async with (
        FakeProvider(script) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        run = await drive(TestScheduler(), client.stream(Request(messages=(Message.user("hi"),))))
    assert run.completed, run
    text = "".join(e.text for e in run.events if isinstance(e, Delta))
    assert text == "one two three"


async def test_a_run_given_up_is_disposed_before_drive_returns() -> None:
    """A hang with no dispose_at: drive gives up when nothing is left to run, and the
    subscription it made (which the caller never sees) is disposed, where it was left live."""
    scheduler = TestScheduler()
    stalled = Tracked(scheduler, timeline(reply("hi")[:2], end=None))
    run = await drive(scheduler, stalled.observable, limit=50.0)
    assert not run.finished and len(run.items) == 2
    assert stalled.spans == [[0.0, 0.02]]  # disposed when driving gave up, after the 2nd item
    assert leftovers(scheduler) == []
