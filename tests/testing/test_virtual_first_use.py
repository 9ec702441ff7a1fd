"""``run_virtual`` lets the loads an engine starts when it is built finish before virtual time
moves: a process's first turn waited for the ``rxturn[cost]`` price data or the tokenizer in a
worker thread, asyncio was idle meanwhile, and the driver ran the test's own scheduled actions
first — a cancel scheduled at 2 s ended the turn before its request, in that first turn only
(``tests/engine/test_tool_phase.py`` failed run on its own, passed in the suite)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest
from reactivex.testing import TestScheduler

import rxturn.cost as cost
import rxturn.engine.context.tokens as tokens
from rxturn import Cancelled, ContextWindow, RecordingObserver, TurnEngine
from rxturn.testing import ScriptedClient, reply, run_virtual, timeline


def _slow(load: Callable[..., object], seconds: float) -> Callable[..., object]:
    def slowly(*args: object) -> object:
        time.sleep(seconds)  # (a worker thread: what a cold process's first load takes)
        return load(*args)

    return slowly


async def test_the_price_data_an_engine_loads_is_waited_for_in_real_time(
    clean: TestScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("genai_prices", reason="the rxturn[cost] extra loads the price data")
    monkeypatch.setattr(cost, "_load_snapshot", _slow(cost._load_snapshot, 0.2))
    monkeypatch.setattr(cost, "_prices_loaded", False)
    monkeypatch.setattr(cost, "_prices_prefetched", False)
    monkeypatch.setattr(cost, "_prices_lock", threading.Lock())
    client = ScriptedClient(clean, [timeline(reply("ok"))])
    engine = TurnEngine(client, scheduler=clean)  # starts the load in a background thread
    later = clean.schedule_absolute(2.0, lambda *_: None)  # the test's own action at 2 s

    result = await run_virtual(clean, engine.run("hi"))
    later.dispose()

    assert result.text == "ok"
    assert client.spans[0][0] == 0.0  # the request went out at 0 s, not at the action's 2 s
    assert cost.prices_loaded()


async def test_the_tokenizer_an_engine_loads_is_waited_for_in_real_time(
    clean: TestScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    load = tokens._load_encoding_offline
    monkeypatch.setattr(tokens, "_load_encoding_offline", _slow(load, 0.2))
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_prefetched", set())
    client = ScriptedClient(clean, [timeline(reply("ok"))])
    # a context window: the turn needs its estimate, so the tokenizer, before the request
    window = ContextWindow(max_tokens=100_000)
    engine = TurnEngine(client, scheduler=clean, context_window=window)
    later = clean.schedule_absolute(2.0, lambda *_: None)

    result = await run_virtual(clean, engine.run("hi"))
    later.dispose()

    assert result.text == "ok"
    assert client.spans[0][0] == 0.0


@pytest.mark.parametrize("load", ["tokenizer", "prices"])
async def test_a_cancel_while_a_first_turn_waits_for_a_load_ends_it_at_once(
    monkeypatch: pytest.MonkeyPatch, load: str
) -> None:
    # The turn waits for the load in a worker thread, held here until the test lets it go.
    # Before, a cancel in that wait was seen only once the load was over (a fresh process's
    # tokenizer: hundreds of milliseconds), after on_turn_start; now at once, before any
    # turn event, as for the user's code a turn awaits before its request.
    entered, release = threading.Event(), threading.Event()

    def held(original: Callable[..., object]) -> Callable[..., object]:
        def wait_then_load(*args: object) -> object:
            entered.set()
            release.wait(10.0)
            return original(*args)

        return wait_then_load

    if load == "tokenizer":
        monkeypatch.setattr(tokens, "_load_encoding_offline", held(tokens._load_encoding_offline))
        monkeypatch.setattr(tokens, "_encodings", {})
        monkeypatch.setattr(tokens, "_prefetched", set())
    else:
        pytest.importorskip("genai_prices", reason="the rxturn[cost] extra loads the price data")
        monkeypatch.setattr(cost, "_load_snapshot", held(cost._load_snapshot))
        monkeypatch.setattr(cost, "_prices_loaded", False)
        monkeypatch.setattr(cost, "_prices_prefetched", False)
        monkeypatch.setattr(cost, "_prices_lock", threading.Lock())
    client = ScriptedClient(TestScheduler(), [timeline(reply("ok"))])
    recorder = RecordingObserver()
    # (a context window: the turn needs its estimate, so the tokenizer, before the request)
    engine = TurnEngine(
        client, context_window=ContextWindow(max_tokens=100_000), observers=[recorder]
    )
    run = asyncio.ensure_future(engine.run("hi"))
    try:
        assert await asyncio.to_thread(entered.wait, 5.0)  # the load is under way
        for _ in range(3):  # and the turn waits for it
            await asyncio.sleep(0)
        engine.cancel("stop")
        with pytest.raises(Cancelled, match="stop"):
            await asyncio.wait_for(run, 5.0)
        assert not release.is_set()  # it ended while the load was still held
    finally:
        release.set()
        await asyncio.gather(run, return_exceptions=True)
    assert recorder.names() == ["on_run_start", "on_run_end"] and client.stream_calls == []
