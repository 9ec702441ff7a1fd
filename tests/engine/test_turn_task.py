"""The turn's own task drives its first attempt (no task of its own), and that is invisible to
the caller: retries, deadlines, an outer ``asyncio.timeout`` and a cancelled task behave as they
would with an attempt task (the cancellations the engine makes are taken back; the caller's
pass through)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rxturn import AnthropicClient, StreamHandler, TurnEngine
from rxturn.engine.observation.observers import Observer
from rxturn.resilience.policies import RetryPolicy, TimeoutPolicy

REPLY = {"models": {"*": [{"text": "hello there", "chunk_chars": 3}]}}

# The first request goes silent after one event; the retry answers.
STALL_THEN_ANSWER = {
    "models": {
        "*": [
            {"text": "never finished", "chunk_chars": 2, "stall_after_events": 1},
            {"text": "second try", "chunk_chars": 3},
        ]
    }
}

QUICK_IDLE = StreamHandler(
    timeouts=TimeoutPolicy(first_event=2.0, per_event=0.1, max_consecutive_timeouts=1),
    retry=RetryPolicy(max_retries=2, base_delay=0.01),
)


def _rxturn_tasks() -> list[asyncio.Task[Any]]:
    """The running tasks whose coroutine is rxturn's (the fake provider's are not)."""
    return [
        task
        for task in asyncio.all_tasks()
        if "/rxturn/" in getattr(task.get_coro(), "cr_code", compile("", "", "exec")).co_filename
    ]


class TaskOfDeltas(Observer):
    """The asyncio task each text delta reaches observers in."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[Any] | None] = set()

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        self.tasks.add(asyncio.current_task())


class WantsAttemptContexts(TaskOfDeltas):
    def on_attempt_start(self, **_: Any) -> None:
        pass


async def test_the_first_attempt_runs_in_the_turns_own_task(fake_client: Any) -> None:
    async with fake_client(REPLY) as (_, client):
        seen = TaskOfDeltas()
        engine = TurnEngine(client, observers=[seen], handler=StreamHandler.default())
        turn = asyncio.ensure_future(engine.run("q"))
        result = await asyncio.wait_for(turn, 5)
        assert result.text == "hello there"
        assert seen.tasks == {turn}


async def test_attempts_sent_in_contexts_of_their_own_get_a_task_each(fake_client: Any) -> None:
    async with fake_client(REPLY) as (_, client):
        seen = WantsAttemptContexts()
        engine = TurnEngine(client, observers=[seen], handler=StreamHandler.default())
        turn = asyncio.ensure_future(engine.run("q"))
        assert (await asyncio.wait_for(turn, 5)).text == "hello there"
        assert len(seen.tasks) == 1 and turn not in seen.tasks


async def test_a_first_attempt_cut_by_its_deadline_leaves_no_cancel_on_the_turns_task(
    fake_client: Any,
) -> None:
    """The idle deadline disposes the silent first attempt, which cancels the turn's task (the
    read it waits in); the engine takes that back, the retry serves, and the task is not left
    cancelling — an ``asyncio.timeout`` around the call neither fires nor misreads it."""
    async with fake_client(STALL_THEN_ANSWER) as (fake, client):
        engine = TurnEngine(client, handler=QUICK_IDLE)
        async with asyncio.timeout(10):
            result = await engine.run("q")
        assert result.text == "second try"
        assert len(fake.requests) == 2
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0
        await asyncio.sleep(0)  # a cancel left pending would be raised at this await
        assert result.turns[0].attempts == 2


async def test_an_outer_timeout_still_ends_the_turn_as_a_timeout(fake_client: Any) -> None:
    stall = {"models": {"*": [{"text": "silent", "chunk_chars": 2, "stall_after_events": 1}]}}
    async with fake_client(stall) as (fake, client):
        engine = TurnEngine(client, handler=StreamHandler.passthrough())
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await engine.run("q")
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0
        for _ in range(100):  # bounded: the abandoned request's connection is closed
            if fake.disconnects >= 1:
                break
            await asyncio.sleep(0.01)
        assert fake.disconnects >= 1


async def test_cancelling_the_turns_task_mid_stream_cancels_it(fake_client: Any) -> None:
    stall = {
        "models": {
            "*": [
                {"text": "silent", "chunk_chars": 2, "stall_after_events": 1},
                {"text": "next one", "chunk_chars": 4},
            ]
        }
    }
    async with fake_client(stall) as (fake, client):
        engine = TurnEngine(client, handler=StreamHandler.default())
        turn = asyncio.ensure_future(engine.run("q"))
        for _ in range(200):  # bounded: until the request reached the server
            if fake.requests:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(turn, 5)
        assert turn.cancelled()
        await asyncio.sleep(0)
        assert _rxturn_tasks() == []  # nothing of the turn still running
        # audited as a cancel, as engine.cancel() is (before: error 'CancelledError')
        (record,) = engine.session.runs[-1].turns
        assert (record.error, [a.outcome for a in record.attempt_log]) == (
            "Cancelled",
            ["cancelled"],
        )
        assert (await asyncio.wait_for(engine.run("again"), 5)).text == "next one"


class CancelsItsTurn(Observer):
    """Cancels the turn's task as the turn starts: the cancellation waits for its next await."""

    def on_turn_start(self, **_: Any) -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()


async def test_a_turn_cancelled_before_its_request_opens_no_connection() -> None:
    """A cancellation already pending when the attempt would start lands before any IO, as it
    did when the attempt had a task of its own (which never started): no connection is opened
    (a connect cut in the middle leaves the server an accepted socket to clean up). The server
    is a bare TCP listener that counts the connections it accepts."""
    accepted: list[int] = []

    async def count(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        writer.close()

    server = await asyncio.start_server(count, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with AnthropicClient("m", api_key="k", base_url=f"http://127.0.0.1:{port}") as client:
            engine = TurnEngine(
                client, observers=[CancelsItsTurn()], handler=StreamHandler.default()
            )
            turn = asyncio.ensure_future(engine.run("q"))
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(turn, 5)
            await asyncio.sleep(0.1)  # time for a connection under way to be accepted
        assert accepted == []
    finally:
        server.close()
        await server.wait_closed()
