"""An empty batch from a client of your own is no event: the turn goes on as if it never came.

A ``stream_batches`` may emit ``[]`` (a chunk that decoded to nothing). Where batches enter the
handler they are skipped: nothing downstream (the engine's routing, ``engine.turn_streams``,
``stream_turn_batches`` subscribers) ever receives an empty list, and the turn ends as the
events alone say.
"""

from __future__ import annotations

import asyncio
from typing import Any

import reactivex
from reactivex import Observable

from rxturn import Observer, StreamHandler, TurnEngine
from rxturn.events import (
    Delta,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    StreamEvent,
)
from rxturn.messages import Message, Request, RequestOptions, StopReason, Usage
from rxturn.resilience.policies import TimeoutPolicy

REQUEST = Request(messages=(Message.user("hi"),))

WAIT = 10.0

HEAD: list[StreamEvent] = [MessageStart(id="msg_empty", model="custom"), PartStart(0)]
TAIL: list[StreamEvent] = [
    Delta(0, "Hello"),
    Delta(0, " there"),
    PartStop(0),
    MessageDelta("end_turn", Usage(input_tokens=3, output_tokens=2)),
    MessageStop(),
]


class EmptyBatchClient:
    """A batching client of your own whose stream opens, interleaves and ends with ``[]``."""

    model = "custom"
    base_url = "http://custom.invalid"

    def __init__(self) -> None:
        self.calls = 0

    def stream(self, request: Request, options: RequestOptions | None = None) -> Any:
        raise AssertionError("the handler subscribes stream_batches when the client has it")

    def stream_batches(
        self, request: Request, options: RequestOptions | None = None
    ) -> Observable[list[StreamEvent]]:
        self.calls += 1
        return reactivex.from_iterable([[], HEAD, [], TAIL, []])

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        raise AssertionError("the streaming path never calls create()")


class FirstChunk(Observer):
    """Listens for the first chunk (and the attempts, which the first chunk belongs to): the
    routing then looks at the first item of each batch."""

    def __init__(self) -> None:
        self.turns: list[int] = []
        self.attempts = 0

    def on_attempt_start(self, **_: object) -> None:
        self.attempts += 1

    def on_first_chunk(self, *, turn: int, turn_id: int) -> None:
        self.turns.append(turn)


async def test_the_engine_finishes_a_turn_whose_client_sends_empty_batches() -> None:
    client = EmptyBatchClient()
    streamed: list[str] = []
    handler = StreamHandler(timeouts=TimeoutPolicy(first_event=5.0, per_event=5.0, total=8.0))
    first = FirstChunk()
    engine = TurnEngine(client, handler=handler, observers=[first], text_streamer=streamed.append)
    seen: list[object] = []
    engine.events.subscribe(seen.append)
    result = await asyncio.wait_for(engine.turn(), WAIT)
    assert result.message.text == "Hello there"
    assert result.stop_reason is StopReason.END_TURN
    assert result.attempts == 1 and client.calls == 1
    assert streamed == ["Hello", " there"]
    assert seen == [*HEAD, *TAIL]
    assert first.turns == [0] and first.attempts == 1


async def test_stream_turn_batches_never_emits_an_empty_list() -> None:
    items: list[list[Any]] = []
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    StreamHandler().stream_turn_batches(EmptyBatchClient(), REQUEST).subscribe(
        items.append, done.set_exception, lambda: done.set_result(None)
    )
    await asyncio.wait_for(done, WAIT)
    assert items == [HEAD, TAIL]


async def test_stream_turn_hands_out_the_events_alone() -> None:
    items: list[Any] = []
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    StreamHandler().stream_turn(EmptyBatchClient(), REQUEST).subscribe(
        items.append, done.set_exception, lambda: done.set_result(None)
    )
    await asyncio.wait_for(done, WAIT)
    assert items == [*HEAD, *TAIL]
