"""A client of your own whose Observable emits something that is no stream event, or whose
``create()`` returns something that is no Message.

``stream()`` emits ``rxturn.events`` and ``stream_batches()`` lists of them; ``None``, a str, a
dict or an int in their place ended the turn with the fold's bare ``TypeError`` ("fold: not a
stream event"). It is the client breaking its contract, which no retry mends: a ``ConfigError``
naming what was emitted, in one line, after one attempt.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import reactivex

from rxturn import StreamHandler, TurnEngine
from rxturn.errors import ConfigError, RescueFailed, StreamProtocolError, status_error
from rxturn.events import MessageStart, PartStart
from rxturn.messages import Message, Request, RequestOptions
from rxturn.resilience.guard import ShadowGuard
from rxturn.resilience.policies import RetryPolicy

WAIT = 10.0
FOREIGN = [(None, "None"), ("hello", "a str"), ({"type": "message_start"}, "a dict"), (7, "an int")]
IDS = ["none", "str", "dict", "int"]


class ForeignClient:
    """Emits a message start, then ``item``: per event, or as one batch when ``batches``."""

    model = "custom"
    base_url = "http://custom.invalid"

    def __init__(self, item: object, *, batches: bool) -> None:
        self.item = item
        self.calls = 0
        if batches:
            self.stream_batches = self._batches

    def _items(self) -> list[Any]:
        self.calls += 1
        return [MessageStart(id="m", model="custom"), self.item]

    def stream(self, request: Request, options: RequestOptions | None = None) -> Any:
        return reactivex.from_iterable(self._items())

    def _batches(self, request: Request, options: RequestOptions | None = None) -> Any:
        return reactivex.from_iterable([self._items()])

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        raise AssertionError("not rescued: the error is the client's, not the provider's")


@pytest.mark.parametrize("batches", [False, True], ids=["stream", "stream_batches"])
@pytest.mark.parametrize("default", [False, True], ids=["passthrough", "default-handler"])
@pytest.mark.parametrize(("item", "named"), FOREIGN, ids=IDS)
async def test_a_foreign_item_is_one_config_error_line_after_one_attempt(
    item: object, named: str, default: bool, batches: bool
) -> None:
    client = ForeignClient(item, batches=batches)
    handler = {"handler": StreamHandler.default()} if default else {}
    engine = TurnEngine(client, **handler)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError) as info:
        await asyncio.wait_for(engine.run("hi"), WAIT)
    said = str(info.value)
    assert said.startswith(f"the client's stream emitted {named}, not a stream event ")
    assert "MessageStart" in said and "\n" not in said
    assert client.calls == 1  # never retried


def test_the_folds_own_errors_keep_their_type() -> None:
    """Only a value that is no event is translated: an event the fold rejects keeps its error."""
    error = ShadowGuard().event(PartStart(0))  # a lane before message_start
    assert isinstance(error, StreamProtocolError)
    guard = ShadowGuard()
    assert isinstance(guard.batch([PartStart(0)]), StreamProtocolError)


def test_a_batch_names_the_foreign_item_after_its_accepted_prefix() -> None:
    guard = ShadowGuard()
    error = guard.batch([MessageStart(id="m", model="x"), PartStart(0), b"raw"])  # pyright: ignore[reportArgumentType]
    assert isinstance(error, ConfigError) and "emitted a bytes," in str(error)
    assert guard.accepted == 2


class ForeignReplyClient:
    """Streams a 500 (so the default handler rescues); ``create()`` returns ``reply``."""

    model = "custom"
    base_url = "http://custom.invalid"

    def __init__(self, reply: object) -> None:
        self.reply = reply

    def stream(self, request: Request, options: RequestOptions | None = None) -> Any:
        return reactivex.throw(status_error(500, "boom"))

    async def create(self, request: Request, options: RequestOptions | None = None) -> Any:
        return self.reply


@pytest.mark.parametrize(("item", "named"), FOREIGN, ids=IDS)
async def test_a_create_returning_no_message_is_one_config_error_line(
    item: object, named: str
) -> None:
    """The non-streaming path read the reply's usage: AttributeError ("'str' object has no
    attribute 'usage'"); the rescue said the same inside its RescueFailed."""
    said = f"the client's create() returned {named}, not a Message"
    engine = TurnEngine(ForeignReplyClient(item), mode="non_streaming")
    with pytest.raises(ConfigError) as info:
        await asyncio.wait_for(engine.run("hi"), WAIT)
    assert str(info.value) == said
    rescuing = TurnEngine(
        ForeignReplyClient(item),
        handler=StreamHandler(retry=RetryPolicy(max_retries=0)),  # one attempt, then the rescue
    )
    with pytest.raises(RescueFailed) as rescued:
        await asyncio.wait_for(rescuing.run("hi"), WAIT)
    assert isinstance(rescued.value.rescue_error, ConfigError)
    assert str(rescued.value.rescue_error) == said
