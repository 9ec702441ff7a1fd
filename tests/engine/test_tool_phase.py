"""The tool phase: cancellation reaches tools, tools never hold the loop, per-tool timeouts.

Turns run on TestScheduler virtual time (the shipped kit); a synchronous tool runs in a real
worker thread, so those tests also bound their real waits.
"""

from __future__ import annotations

import asyncio
import math
import threading
from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxturn import RecordingObserver, TurnEngine
from rxturn.engine.agent.tools import Tool
from rxturn.errors import Cancelled, ConfigError
from rxturn.events import Delta as D
from rxturn.events import MessageDelta, MessageStart, MessageStop, PartStart, PartStop
from rxturn.messages import ToolResultPart
from rxturn.testing.virtual import ScriptedClient, reply, run_virtual, timeline


def tool_call(name: str) -> list[Any]:
    return timeline(
        [
            MessageStart("m1", "x"),
            PartStart(0, "tool_call", id="call_1", name=name),
            D(0, "{}", "tool_json"),
            PartStop(0),
            MessageDelta("tool_call", None),
            MessageStop(),
        ]
    )


def results_sent(client: ScriptedClient) -> list[ToolResultPart]:
    """The tool results the model was sent in its second request."""
    request, _ = client.stream_calls[1]
    return [p for p in request.messages[-1].content if isinstance(p, ToolResultPart)]


async def test_cancel_during_an_async_tool_cancels_it_and_ends_the_run(
    clean: TestScheduler,
) -> None:
    cancelled_inside = asyncio.Event()

    async def slow() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled_inside.set()
            raise
        return "never"

    client = ScriptedClient(clean, [tool_call("slow"), timeline(reply("done"))])
    engine = TurnEngine(client, tools=[slow], scheduler=clean)
    clean.schedule_absolute(2.0, lambda *_: engine.cancel())
    with pytest.raises(Cancelled):
        await run_virtual(clean, engine.run("go"))
    assert cancelled_inside.is_set()
    assert float(clean.clock) == 2.0  # it ended at the cancel, not later
    assert len(client.stream_calls) == 1
    assert engine.history == []  # a cancelled run discards what it added
    # the `clean` fixture checks that no task and no timer is left behind


@pytest.mark.parametrize("how", ["token", "task"])
async def test_a_turn_whose_tools_are_cancelled_still_ends_for_its_observers(
    clean: TestScheduler, how: str
) -> None:
    # A tool-calling turn leaves on_turn_end to its tool phase; a cancel while the tool ran
    # ended the run with on_turn_start heard and on_turn_end never (an observer pairing the
    # two, a tracer's turn span, stayed open for ever).
    async def slow() -> str:
        await asyncio.Event().wait()
        return "never"

    client = ScriptedClient(clean, [tool_call("slow"), timeline(reply("done"))])
    recorder = RecordingObserver()
    engine = TurnEngine(client, tools=[slow], scheduler=clean, observers=[recorder])
    run = asyncio.ensure_future(engine.run("go"))

    def cancel(*_: object) -> None:
        if how == "token":
            engine.cancel()
        else:
            run.cancel()

    clean.schedule_absolute(2.0, cancel)
    with pytest.raises(Cancelled if how == "token" else asyncio.CancelledError):
        await run_virtual(clean, run)
    names = [n for n in recorder.names() if n.startswith(("on_turn", "on_run", "on_tool"))]
    assert names == [
        "on_run_start",
        "on_turn_start",
        "on_tool_call",
        "on_turn_end",
        "on_run_end",
    ]
    (end,) = recorder.calls_of("on_turn_end")
    assert end["success"] is False and end["error"] == "cancelled"
    duration = end["duration_ms"]
    assert isinstance(duration, float) and 0 < duration <= 2000.0  # turn start to cancel


class _Stop(BaseException):
    """Not an Exception: a test framework's failure, an interrupt."""


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_a_tool_raising_a_base_exception_ends_the_run_with_it(
    clean: TestScheduler, kind: str
) -> None:
    # docs/engine.md, Tools: not an error result for the model; the run ends with it as it came,
    # its messages discarded, its turn and run ended for the observers, the engine usable.
    async def async_stop() -> str:
        raise _Stop("stop")

    def sync_stop() -> str:
        raise _Stop("stop")

    stop = Tool(async_stop if kind == "async" else sync_stop, name="stop")
    client = ScriptedClient(clean, [tool_call("stop"), timeline(reply("next"))])
    recorder = RecordingObserver()
    engine = TurnEngine(client, tools=[stop], scheduler=clean, observers=[recorder])
    with pytest.raises(_Stop, match="stop"):
        await run_virtual(clean, engine.run("go"))
    assert engine.history == [] and len(client.stream_calls) == 1
    names = recorder.names()
    assert names.count("on_turn_start") == names.count("on_turn_end") == 1
    assert recorder.calls_of("on_turn_end")[0]["error"] == "stop"
    assert names[-1] == "on_run_end"
    assert (await run_virtual(clean, engine.run("again"))).text == "next"


async def test_a_sync_tool_runs_off_the_loop(clean: TestScheduler) -> None:
    released = threading.Event()
    loop = asyncio.get_running_loop()

    def waits_for_the_loop() -> str:
        # set by a callback on the event loop: only reachable if the loop is not held
        loop.call_soon_threadsafe(lambda: loop.call_later(0.01, released.set))
        return "released" if released.wait(5.0) else "the loop was held"

    client = ScriptedClient(clean, [tool_call("waits_for_the_loop"), timeline(reply("done"))])
    engine = TurnEngine(client, tools=[waits_for_the_loop], scheduler=clean)
    result = await run_virtual(clean, engine.run("go"))
    assert result.text == "done"
    assert [r.content for r in results_sent(client)] == ["released"]


async def test_cancel_during_a_sync_tool_returns_at_once_and_drops_its_result(
    clean: TestScheduler,
) -> None:
    started = threading.Event()
    release = threading.Event()
    finished = threading.Event()

    def blocking() -> str:
        started.set()
        release.wait(10.0)
        finished.set()
        return "late"

    client = ScriptedClient(clean, [tool_call("blocking"), timeline(reply("done"))])
    engine = TurnEngine(client, tools=[blocking], scheduler=clean)

    async def cancel_when_the_tool_runs() -> None:
        await asyncio.to_thread(started.wait, 10.0)
        engine.cancel()

    canceller = asyncio.create_task(cancel_when_the_tool_runs())
    try:
        with pytest.raises(Cancelled):
            # nothing is scheduled while the thread blocks: give it real time to start
            await run_virtual(clean, engine.run("go"), idle_rounds=10_000)
        assert not finished.is_set()  # the run returned while the thread still ran
    finally:
        release.set()
        await canceller
    await asyncio.to_thread(finished.wait, 10.0)
    await asyncio.sleep(0.01)
    assert len(client.stream_calls) == 1 and engine.history == []  # the late result is dropped


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_a_tool_timeout_goes_back_to_the_model(clean: TestScheduler, kind: str) -> None:
    gate = threading.Event()

    async def hangs_async() -> str:
        await asyncio.Event().wait()
        return "never"

    def hangs_sync() -> str:
        gate.wait(10.0)
        return "never"

    function = hangs_async if kind == "async" else hangs_sync
    client = ScriptedClient(clean, [tool_call("hangs"), timeline(reply("I see"))])
    engine = TurnEngine(client, tools=[Tool(function, name="hangs", timeout=30.0)], scheduler=clean)
    try:
        result = await run_virtual(clean, engine.run("go"))
    finally:
        gate.set()
    assert result.text == "I see"
    (sent,) = results_sent(client)
    assert sent.is_error
    assert sent.content == "ToolTimeoutError: tool 'hangs' did not finish within 30s"
    # the second request went out when the timeout fired, on virtual time
    assert client.spans[1][0] == pytest.approx(0.07 + 30.0)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "5", True])
def test_a_tool_timeout_must_be_positive_seconds(bad: Any) -> None:
    with pytest.raises(ConfigError, match="tool timeout"):
        Tool(lambda: None, name="t", timeout=bad)


def test_a_tool_timeout_past_any_float_is_no_bound_as_inf_is() -> None:
    # float() of it raised OverflowError
    assert Tool(lambda: None, name="t", timeout=10**400).timeout == math.inf
    assert Tool(lambda: None, name="t", timeout=math.inf).timeout == math.inf


async def test_a_tool_turns_on_turn_end_times_the_whole_turn(clean: TestScheduler) -> None:
    # on_turn_start .. on_turn_end bracket a turn, and duration_ms is the time between, as for
    # a turn without tools. Before, a tool-calling turn's duration ran from its tool phase
    # only: 0 ms here, for a turn whose reply took 4 virtual seconds to start.
    def instant() -> str:
        return "ok"

    call = [
        MessageStart("m1", "x"),
        PartStart(0, "tool_call", id="call_1", name="instant"),
        D(0, "{}", "tool_json"),
        PartStop(0),
        MessageDelta("tool_call", None),
        MessageStop(),
    ]
    client = ScriptedClient(clean, [timeline(call, start=4.0), timeline(reply("done"))])
    recorder = RecordingObserver()
    engine = TurnEngine(client, tools=[instant], scheduler=clean, observers=[recorder])
    await run_virtual(clean, engine.run("go"))
    first, _ = recorder.calls_of("on_turn_end")
    assert first["turn"] == 0
    # six events from 4.0, 0.01 apart, the stream completes at 4.06; the tool takes no time
    assert first["duration_ms"] == pytest.approx(4060.0)
