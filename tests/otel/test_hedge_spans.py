"""A hedged first token in OpenTelemetry: racers are sibling attempt spans, the loser's status
stays UNSET, and the ``chat`` span says how many hedges went out and whether one won."""

from __future__ import annotations

from opentelemetry.trace import StatusCode
from reactivex.testing import TestScheduler

from rxturn import HedgePolicy, HedgeTarget, StreamHandler, TurnEngine
from rxturn.events import Delta, MessageStart, PartStart
from rxturn.messages import Message
from rxturn.testing.virtual import ScriptedClient, on_next, reply, run_virtual, timeline

from .conftest import Telemetry

SLOW = [on_next(0.01, MessageStart()), on_next(30.0, PartStart(0)), on_next(30.0, Delta(0, "x"))]


async def _turn(telemetry: Telemetry, clean: TestScheduler, *, hedge_wins: bool) -> None:
    answer = reply("from the backup")
    answer[0] = MessageStart(id="msg_b", model="backup")  # what the backup says it is
    fast = timeline(answer, start=0.5)
    client = ScriptedClient(
        clean,
        models={
            "scripted": [SLOW if hedge_wins else timeline(reply("primary"), start=3.0)],
            "backup": [fast if hedge_wins else SLOW],
        },
    )
    engine = TurnEngine(
        client,
        handler=StreamHandler(),
        hedge=HedgePolicy((HedgeTarget("backup"),), delay=2.0),
        observers=[telemetry.observer()],
        scheduler=clean,
    )
    engine.history.append(Message.user("hi"))
    await run_virtual(clean, engine.turn())


async def test_a_winning_hedge_and_its_loser_are_sibling_attempt_spans(
    telemetry: Telemetry, clean: TestScheduler
) -> None:
    await _turn(telemetry, clean, hedge_wins=True)
    (chat,) = telemetry.named("chat")
    attempts = telemetry.children(chat)
    assert [a.name for a in attempts] == ["rxturn.attempt", "rxturn.attempt"]
    by_model = {a.attributes["gen_ai.request.model"]: a for a in attempts}  # pyright: ignore[reportOptionalSubscript]
    loser, winner = by_model["scripted"], by_model["backup"]
    assert loser.attributes["rxturn.attempt.outcome"] == "hedge_lost"  # pyright: ignore[reportOptionalSubscript]
    assert loser.status.status_code is StatusCode.UNSET
    assert "error.type" not in (loser.attributes or {})
    assert winner.attributes["rxturn.attempt.outcome"] == "served"  # pyright: ignore[reportOptionalSubscript]
    assert chat.attributes["rxturn.hedges"] == 1  # pyright: ignore[reportOptionalSubscript]
    assert chat.attributes["rxturn.hedge.won"] is True  # pyright: ignore[reportOptionalSubscript]
    assert chat.attributes["gen_ai.response.model"] == "backup"  # pyright: ignore[reportOptionalSubscript]
    assert chat.status.status_code is not StatusCode.ERROR
    assert not [e for e in chat.events if e.name == "rxturn.failover"]


async def test_a_primary_that_wins_says_a_hedge_went_out_and_lost(
    telemetry: Telemetry, clean: TestScheduler
) -> None:
    await _turn(telemetry, clean, hedge_wins=False)
    (chat,) = telemetry.named("chat")
    assert chat.attributes["rxturn.hedges"] == 1  # pyright: ignore[reportOptionalSubscript]
    assert chat.attributes["rxturn.hedge.won"] is False  # pyright: ignore[reportOptionalSubscript]
    outcomes = sorted(
        a.attributes["rxturn.attempt.outcome"]  # pyright: ignore[reportArgumentType, reportOptionalSubscript]
        for a in telemetry.children(chat)
    )
    assert outcomes == ["hedge_lost", "served"]


async def test_no_hedge_no_hedge_attributes(telemetry: Telemetry, clean: TestScheduler) -> None:
    client = ScriptedClient(clean, models={"scripted": [timeline(reply("quick"))]})
    engine = TurnEngine(
        client,
        handler=StreamHandler(),
        hedge=HedgePolicy((HedgeTarget("backup"),), delay=2.0),
        observers=[telemetry.observer()],
        scheduler=clean,
    )
    engine.history.append(Message.user("hi"))
    await run_virtual(clean, engine.turn())
    (chat,) = telemetry.named("chat")
    assert "rxturn.hedges" not in (chat.attributes or {})
