"""An engine nobody holds is freed at once, by reference counting, not by the cyclic collector.

Many short-lived engines (one per request in a server, one per concurrent conversation) are a
common pattern. If an engine were part of a reference cycle, each one — its history, audit
trail, records — would wait for a full collection, and under load those collections stall the
event loop for hundreds of milliseconds. The engine's collaborators therefore see it through a
weak proxy; these tests hold that line for every kind of turn, and show that an engine only a
stream holds still runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from rxturn import (
    BadRequestError,
    FallbackManager,
    HedgePolicy,
    HedgeTarget,
    RescueFailed,
    RxturnError,
    StreamHandler,
    TurnEngine,
)
from rxturn.engine import TurnStream
from rxturn.engine.agent.tools import tool
from rxturn.engine.observation.observers import RecordingObserver

REPLY = {"models": {"*": [{"text": "hello there", "chunk_chars": 3}]}}


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic collector off: what is freed is freed by reference counting alone."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


#: the kinds of engine each test below runs (made fresh per test: observers and breakers
#: keep state)
KINDS = ["default", "passthrough", "non_streaming", "observers", "failover", "text_streamer"]


def _engine_options(kind: str) -> dict[str, Any]:
    if kind == "passthrough":
        return {"handler": StreamHandler.passthrough()}
    if kind == "non_streaming":
        return {"mode": "non_streaming", "handler": StreamHandler.default()}
    if kind == "observers":
        return {"observers": [RecordingObserver()]}
    if kind == "text_streamer":
        return {"handler": StreamHandler.default(), "text_streamer": lambda text: None}
    if kind == "failover":
        return {"fallback": FallbackManager("primary", ["backup"]), "failover": True}
    if kind in HEDGE_SCENARIOS:
        hedge = HedgePolicy((HedgeTarget("backup"),), delay=0.02)
        return {"handler": StreamHandler.default(), "hedge": hedge}
    return {"handler": StreamHandler.default()}


@pytest.mark.parametrize("kind", KINDS)
async def test_an_engine_nobody_holds_is_freed_without_the_collector(
    fake_client: Any, no_collector: None, kind: str
) -> None:
    async with fake_client(REPLY) as (_, client):
        engine = TurnEngine(client, **_engine_options(kind))
        result = await engine.run("q")
        assert result.text == "hello there"
        gone = weakref.ref(engine)
        del engine, result
        assert gone() is None


async def test_a_tool_calling_run_leaves_no_cycle(fake_client: Any, no_collector: None) -> None:
    script = {
        "models": {
            "*": [
                {"tool_calls": [{"name": "add", "input": {"a": 2, "b": 3}}]},
                {"text": "five"},
            ]
        }
    }
    async with fake_client(script) as (_, client):
        engine = TurnEngine(client, tools=[add], handler=StreamHandler.default())
        assert (await engine.run("2+3?")).text == "five"
        gone = weakref.ref(engine)
        del engine
        assert gone() is None


async def test_an_engine_only_its_stream_holds_still_runs(fake_client: Any) -> None:
    async with fake_client(REPLY) as (_, client):
        texts: list[str] = []
        async with TurnEngine(client, handler=StreamHandler.default()).stream("q") as stream:
            gc.collect()  # nothing but the stream refers to the engine now
            async for event in stream:
                text = getattr(event, "text", None)
                if isinstance(text, str):
                    texts.append(text)
        assert "".join(texts) == "hello there"


@pytest.fixture
def cyclic_garbage() -> Iterator[None]:
    """The collector off, and keeping what it finds in ``gc.garbage`` (see ``_rxturn_garbage``)."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _rxturn_garbage() -> list[str]:
    """The rxturn types of what only a reference cycle held, but the test kit's and the
    transport's: when a server cuts a connection, aiohttp's ``connection_lost`` keeps the error
    it raises in a local of its own frame (a cycle through the connection's protocol, which is
    rxturn's subclass), and that is aiohttp's cycle to break."""
    gc.collect()
    names = sorted(
        {
            f"{type(obj).__module__}.{type(obj).__qualname__}"
            for obj in gc.garbage
            if type(obj).__module__.startswith("rxturn.")
            and not type(obj).__module__.startswith(("rxturn.testing", "rxturn.transport"))
        }
    )
    gc.garbage.clear()
    return names


#: the first attempt of each turn fails, and its retry answers (the ladder's second attempt
#: and its reset): a 529 with a short Retry-After, a stream cut after two deltas
FIRST_ATTEMPT = {
    "retry": {"status": 529, "retry_after": 0.01},
    "cut": {"text": "hello there", "chunk_chars": 3, "drop_after_events": 4},
}


#: the primary's first text comes too late: a hedge to the backup wins each turn's race
HEDGED = {
    "models": {
        "primary": [{"text": "hello there", "first_content_delay_ms": 5_000}],
        "backup": [{"text": "hello there", "chunk_chars": 3}],
    }
}

#: the primary's 500 sends the hedge at once; "hedge_failed": the hedge's 500 ends the race too
#: (the primary's retry answers), "hedge_after_error": the hedge answers (both racers' errors:
#: each holds, in its traceback, a frame that holds the racer's seat)
HEDGE_FAILED = {
    "models": {
        "primary": [{"status": 500}, REPLY["models"]["*"][0]] * 3,
        "backup": [{"status": 500}],
    }
}
HEDGE_AFTER_ERROR = {"models": {"primary": [{"status": 500}], "backup": REPLY["models"]["*"]}}
HEDGE_SCENARIOS = {
    "hedged": HEDGED,
    "hedge_failed": HEDGE_FAILED,
    "hedge_after_error": HEDGE_AFTER_ERROR,
}


#: every turn ends in the error it raises: a refusal, or every attempt's stream cut (the
#: streaming ladder's retries, then the non-streaming rescue, whose connection is cut too)
FAILING = {
    "refused": ({"status": 400, "error_message": "refused"}, BadRequestError, "refused"),
    "cut_every_attempt": (
        {"text": "hello there", "chunk_chars": 3, "drop_after_events": 4},
        RescueFailed,
        "rescue request failed",
    ),
}


@pytest.mark.parametrize("kind", [*KINDS, *FIRST_ATTEMPT, *FAILING, *HEDGE_SCENARIOS])
async def test_a_finished_turn_leaves_no_cycle(
    fake_client: Any, cyclic_garbage: None, kind: str
) -> None:
    # the engine stays alive: its turns' own parts (the handler's ladder, the turn's plan, the
    # fold's sink, the attempt records, a hedge's race) must still go when each turn ends
    scenario: dict[str, Any] = HEDGE_SCENARIOS.get(kind, REPLY)
    if kind in FIRST_ATTEMPT:
        scenario = {"models": {"*": [FIRST_ATTEMPT[kind], REPLY["models"]["*"][0]] * 3}}
    failing = FAILING.get(kind)
    if failing is not None:
        scenario = {"models": {"*": [failing[0]]}}
    async with fake_client(scenario, model="primary") as (_, client):
        engine = TurnEngine(client, **_engine_options(kind))
        assert _rxturn_garbage() == []  # what setting up made is not counted
        for _ in range(3):
            if failing is not None:
                with pytest.raises(failing[1], match=failing[2]):
                    await engine.run("q")
            else:
                assert (await engine.run("q")).text == "hello there"
        assert _rxturn_garbage() == []


#: every attempt of every turn fails (the ladder's retries, the failover's next model, the hedge
#: and its primary): the turn ends in the last error
ALL_FAIL = {"models": {"*": [{"status": 529, "retry_after": 0.01}]}}


@pytest.mark.parametrize(
    "kind", ["default", "non_streaming", "failover", "hedge_failed", "turn_streams"]
)
async def test_a_turn_failing_in_a_task_of_its_own_leaves_no_cycle(
    fake_client: Any, cyclic_garbage: None, kind: str
) -> None:
    # a turn in a task (create_task, gather, a TaskGroup): the task keeps the turn's error, so
    # nothing in that error's traceback may hold the task; "turn_streams": a subscriber's
    # stream keeps the error too (it ends with it), so nothing in its traceback may hold that
    async with fake_client(ALL_FAIL, model="primary") as (_, client):
        engine = TurnEngine(client, **_engine_options(kind))
        errors: list[str] = []
        if kind == "turn_streams":

            def subscribe(stream: TurnStream) -> None:
                stream.batches.subscribe(on_error=lambda error: errors.append(type(error).__name__))

            engine.turn_streams.subscribe(subscribe)
        for _ in range(2):
            task = asyncio.create_task(engine.run("q"))
            with pytest.raises(RxturnError):
                await task
            del task
        assert _rxturn_garbage() == []
        assert len(errors) == (2 if kind == "turn_streams" else 0)  # each turn's stream ended


@pytest.mark.parametrize("how", ["cancelled", "stream_left_early"])
async def test_a_turn_ended_early_leaves_no_cycle(
    fake_client: Any, cyclic_garbage: None, how: str
) -> None:
    # with an observer and an engine.events subscriber attached (a turn stream's subscriber is
    # not: a cancelled turn never ends its stream, whose subscribers then stay in a cycle)
    async with fake_client(REPLY, model="primary") as (_, client):
        engine = TurnEngine(client, observers=[RecordingObserver()])
        seen: list[object] = []
        engine.events.subscribe(seen.append)
        assert _rxturn_garbage() == []
        for steps in range(6):  # cut at a different point of the turn each time
            if how == "cancelled":
                task = asyncio.create_task(engine.run("q"))
                for _ in range(steps):
                    await asyncio.sleep(0)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                del task
            else:
                async with engine.stream("q") as stream:
                    async for _ in stream:
                        break
            seen.clear()  # (what the consumers heard is theirs to keep)
        assert _rxturn_garbage() == []
