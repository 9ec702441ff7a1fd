"""The turn's sink (the one subscriber of a streaming turn's stream) settles the turn: when the
stream ends while the turn's own task drives it, no future is made; when it ends later, the
future made for the wait receives the outcome. Its router, with nobody listening, still routes
the control items."""

from __future__ import annotations

import asyncio

import pytest

from rxturn import Observer
from rxturn.engine.fanout._turn_stream import _TurnSink
from rxturn.engine.observation.observers import ObserverSet
from rxturn.errors import ServerError
from rxturn.events import AttemptReset, Delta, HandlerEvent
from rxturn.fold import INITIAL_STATE
from rxturn.testing.virtual import reply


def _sink() -> _TurnSink:
    return _TurnSink(ObserverSet().router(0), None, INITIAL_STATE)


def _events() -> list[HandlerEvent]:
    return list(reply("all of it"))


def test_a_stream_that_ends_first_settles_without_a_future() -> None:
    sink = _sink()
    sink.on_next(_events())
    sink.on_completed()
    assert sink.settled and sink.error is None and sink.done is None
    assert sink.state.completed and sink.state.message().text == "all of it"


def test_an_error_is_kept_for_the_task_to_raise() -> None:
    sink = _sink()
    error = ServerError("HTTP 500: down")
    sink.on_error(error)
    sink.on_completed()  # a later end changes nothing
    assert sink.settled and sink.error is error and sink.done is None


async def test_a_future_made_while_the_stream_runs_receives_the_outcome() -> None:
    sink = _sink()
    sink.on_next(_events())
    assert not sink.settled
    sink.done = asyncio.get_running_loop().create_future()
    sink.on_completed()
    state = await sink.done
    assert state.message().text == "all of it"


async def test_a_future_made_while_the_stream_runs_receives_the_error() -> None:
    sink = _sink()
    sink.done = asyncio.get_running_loop().create_future()
    sink.on_error(ServerError("HTTP 500: down"))
    with pytest.raises(ServerError, match="down"):
        await sink.done


def test_a_router_nobody_listens_to_still_routes_a_reset_and_what_follows_it() -> None:
    # no streamer, no engine.events, no observer: the deltas before the reset reach nobody;
    # the reset reaches on_control, which adds an observer that hears the deltas after it
    heard: list[str] = []
    observers = ObserverSet()

    class Hears(Observer):
        def on_text_delta(self, *, turn: int, delta: str) -> None:
            heard.append(delta)

    controls: list[object] = []

    def on_control(item: object) -> None:
        controls.append(item)
        observers.add(Hears())

    router = observers.router(0, on_control=on_control)
    reset = AttemptReset(attempt=2, reason="x")
    router.on_next([Delta(0, "before")])
    router.on_next([Delta(0, "lost"), reset, Delta(0, "after")])
    assert controls == [reset]
    assert heard == ["after"]
