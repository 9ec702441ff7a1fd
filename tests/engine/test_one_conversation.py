"""One engine is one conversation: a second ``run()``/``turn()`` while one is in flight is
refused at once (nothing sent, history unchanged, the fix named); engines sharing one client
run concurrently without touching each other's conversation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from rxturn import AnthropicClient, ConfigError, Message, RequestOptions, TurnEngine
from rxturn.engine.observation.observers import Observer
from rxturn.testing import FakeProvider

#: the first reply streams for a tenth of a second and more; every later one comes at once
SLOW = {
    "models": {
        "*": [{"text": "first reply", "delay_ms": 15, "chunk_chars": 2}, {"text": "next reply"}]
    }
}


class _Started(Observer):
    def __init__(self) -> None:
        self.event = asyncio.Event()

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        self.event.set()  # the first call's request is out and its reply streaming


Second = Callable[[TurnEngine], Coroutine[Any, Any, Any]]
SECONDS: dict[str, Second] = {
    "run": lambda engine: engine.run("again"),
    "turn": lambda engine: engine.turn(),
}


@pytest.mark.parametrize("second", ["run", "turn"])
@pytest.mark.parametrize("first", ["run", "turn"])
async def test_a_second_call_in_flight_is_refused_at_once(first: str, second: str) -> None:
    async with (
        FakeProvider(SLOW) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        started = _Started()
        engine = TurnEngine(client, observers=[started], history=[Message.user("hi")])
        running = asyncio.create_task(SECONDS[first](engine))
        await asyncio.wait_for(started.event.wait(), 5)
        history = list(engine.history)
        with pytest.raises(ConfigError) as caught:
            await asyncio.wait_for(SECONDS[second](engine), 5)
        message = str(caught.value)
        assert f"{second}() while a {first}() is in flight" in message
        assert "one engine is one conversation" in message and "share a client" in message
        assert engine.history == history
        assert len(fake.requests) == 1, "the refused call sent nothing"
        result = await asyncio.wait_for(running, 10)
        assert result.text == "first reply"
        # once the first is done, the engine takes the next call
        await asyncio.wait_for(engine.run("next"), 10)
        assert len(fake.requests) == 2


async def test_a_refused_call_leaves_the_engine_usable_after_a_failure() -> None:
    async with (
        FakeProvider({"models": {"*": [{"status": 400}, {"text": "ok"}]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        with pytest.raises(Exception, match="400"):
            await engine.run("one")
        assert (await engine.run("two")).text == "ok"


async def test_engines_sharing_a_client_run_concurrently() -> None:
    scenario = {
        "models": {
            name: [{"text": f"reply from {name}", "delay_ms": 5, "chunk_chars": 3}]
            for name in ("a", "b", "c")
        }
    }
    async with (
        FakeProvider(scenario) as fake,
        AnthropicClient("a", api_key="k", base_url=fake.base_url) as client,
    ):
        engines = {
            name: TurnEngine(client, request_options=RequestOptions(model=name))
            for name in ("a", "b", "c")
        }
        results = await asyncio.wait_for(
            asyncio.gather(*(engine.run(f"hi {name}") for name, engine in engines.items())), 20
        )
    assert [r.text for r in results] == ["reply from a", "reply from b", "reply from c"]
    for name, engine in engines.items():
        assert [m.text for m in engine.history] == [f"hi {name}", f"reply from {name}"]
        assert [t.model for t in engine.session.runs[0].turns] == [name]
    assert sorted(r["model"] for r in fake.requests) == ["a", "b", "c"]
    assert client.model == "a", "the shared client is never mutated"
