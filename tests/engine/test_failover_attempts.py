"""The attempts of a non-streaming turn that fails over: each model's request counts.

``Turn.attempts`` (the ``attempts`` of ``rxturn chat --json``) said 1 for every non-streaming
turn, and each failover's ``AttemptReset`` was numbered 2: a turn asked three models, its
notices read "attempt 2: failover to b", "attempt 2: failover to c", and its record said one
attempt. A streaming turn numbers and counts them all, and so does a non-streaming one now.

On virtual time with the shipped scripted client.
"""

from __future__ import annotations

from typing import cast

from reactivex.testing import TestScheduler

from rxturn import FallbackManager, RecordingObserver, TurnEngine
from rxturn.errors import NotFoundError, ServerError
from rxturn.events import AttemptReset
from rxturn.messages import Message, StopReason, TextPart
from rxturn.testing.virtual import ScriptedClient, run_virtual

SERVED = Message(content=(TextPart("saved"),), stop_reason=StopReason.END_TURN)


def _engine(scheduler: TestScheduler, create: list[object]) -> tuple[TurnEngine, RecordingObserver]:
    client = ScriptedClient(scheduler, create=create, model="a")
    observer = RecordingObserver()
    engine = TurnEngine(
        client,
        fallback=FallbackManager("a", ["b", "c"]),
        failover=True,
        mode="non_streaming",
        observers=[observer],
        scheduler=scheduler,
    )
    engine.history.append(Message.user("hi"))
    return engine, observer


async def test_each_model_asked_is_an_attempt(clean: TestScheduler) -> None:
    engine, observer = _engine(clean, [ServerError("down"), NotFoundError("no such model"), SERVED])
    result = await run_virtual(clean, engine.turn())

    assert (result.text, result.model) == ("saved", "c")
    resets = [
        cast(AttemptReset, call["reset"]).attempt for call in observer.calls_of("on_attempt_reset")
    ]
    assert resets == [2, 3]
    (record,) = engine.session.runs[0].turns
    assert [(a.model, a.kind) for a in record.attempt_log] == [
        ("a", "create"),
        ("b", "create"),
        ("c", "create"),
    ]
    assert record.attempts == 3


async def test_one_request_is_one_attempt(clean: TestScheduler) -> None:
    engine, observer = _engine(clean, [SERVED])
    await run_virtual(clean, engine.turn())

    assert observer.calls_of("on_attempt_reset") == []
    (record,) = engine.session.runs[0].turns
    assert record.attempts == 1
