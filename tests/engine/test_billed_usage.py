"""Billed usage on every path: the audit itemises every attempt and sums what was billed.

Everything runs on TestScheduler virtual time (the shipped kit), so the attempt times in the
log are exact: they are the script's times plus the waits the policies prescribe.
"""

from __future__ import annotations

from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxturn import StreamHandler, TurnEngine
from rxturn.engine.records.audit import AttemptRecord
from rxturn.errors import Cancelled, RateLimitError, RescueFailed, ServerError
from rxturn.events import Delta, MessageDelta, MessageStart, PartStart, PartStop
from rxturn.messages import Message, StopReason, TextPart, Usage
from rxturn.resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy
from rxturn.testing.virtual import ScriptedClient, reply, run_virtual, timeline

NO_JITTER = RetryPolicy(max_retries=1, base_delay=0.5, jitter=0.0)


def engine_for(client: ScriptedClient, scheduler: TestScheduler, **kw: Any) -> TurnEngine:
    engine = TurnEngine(client, scheduler=scheduler, **kw)
    engine.history.append(Message.user("hi"))
    return engine


def started_then_failed(usage: Usage, error: Exception) -> list[Any]:
    """An attempt that reported its usage, sent one text delta, then failed."""
    return timeline(
        [MessageStart("m_fail", "x"), MessageDelta(None, usage), PartStart(0), Delta(0, "Hal")],
        end=error,
    )


async def test_a_retried_attempt_is_billed_and_itemised(clean: TestScheduler) -> None:
    failed = Usage(input_tokens=12, output_tokens=1)
    kept = Usage(input_tokens=12, output_tokens=4)
    client = ScriptedClient(
        clean,
        [started_then_failed(failed, ServerError("boom")), timeline(reply("Hello", usage=kept))],
    )
    engine = engine_for(client, clean, handler=StreamHandler(retry=NO_JITTER))
    result = await run_virtual(clean, engine.turn())

    assert result.text == "Hello" and result.usage == kept
    # events at 0.01..0.04, the error at 0.05; the retry waits 0.5 s; the reply's six
    # events arrive 0.01 apart from 0.01 and it completes 0.07 after its start
    assert result.attempt_log == (
        AttemptRecord(
            model="scripted",
            kind="stream",
            outcome="ServerError",
            usage=failed,
            started=0.0,
            ended=0.05,
        ),
        AttemptRecord(
            model="scripted",
            kind="stream",
            outcome="served",
            usage=kept,
            started=pytest.approx(0.55),  # pyright: ignore[reportArgumentType]
            ended=pytest.approx(0.55 + 0.07),  # pyright: ignore[reportArgumentType]
        ),
    )
    assert result.billed_usage == Usage(input_tokens=24, output_tokens=5)
    (record,) = engine.session.runs[0].turns
    assert record.billed_usage == Usage(input_tokens=24, output_tokens=5)
    assert (record.input_tokens, record.output_tokens) == (12, 4)  # the reply's, unchanged
    assert record.attempt_log == result.attempt_log
    assert record.discarded_usage == failed and record.error is None


async def test_the_attempt_before_the_rescue_keeps_its_usage(clean: TestScheduler) -> None:
    """Today's loss: the last streaming attempt's usage, before the non-streaming rescue."""
    first = Usage(input_tokens=9, output_tokens=2)
    last = Usage(input_tokens=9, output_tokens=3)
    rescued = Message(
        role="assistant",
        content=(TextPart("saved"),),
        stop_reason=StopReason.END_TURN,
        usage=Usage(input_tokens=9, output_tokens=1),
    )
    client = ScriptedClient(
        clean,
        [
            started_then_failed(first, ServerError("boom 1")),
            started_then_failed(last, ServerError("boom 2")),
        ],
        create=[rescued],
    )
    engine = engine_for(client, clean, handler=StreamHandler(retry=NO_JITTER))
    result = await run_virtual(clean, engine.turn())

    assert result.rescued and result.text == "saved"
    log = result.attempt_log
    assert [(a.kind, a.outcome, a.usage) for a in log] == [
        ("stream", "ServerError", first),
        ("stream", "ServerError", last),
        ("rescue", "served", rescued.usage),
    ]
    assert log[2].started == pytest.approx(log[1].ended)  # the rescue starts as streaming ends
    assert result.billed_usage == Usage(input_tokens=27, output_tokens=6)
    assert result.discarded_usage == Usage(input_tokens=18, output_tokens=5)
    assert result.attempts == 2


async def test_a_failed_turn_is_recorded_with_what_it_was_billed(clean: TestScheduler) -> None:
    billed = Usage(input_tokens=5, output_tokens=1)
    client = ScriptedClient(clean, [started_then_failed(billed, ServerError("down"))])
    passthrough_with_retry = StreamHandler(
        retry=NO_JITTER, timeouts=TimeoutPolicy(rescue=False, total=None)
    )
    engine = engine_for(client, clean, handler=passthrough_with_retry)
    with pytest.raises(ServerError):
        await run_virtual(clean, engine.turn())
    (record,) = engine.session.runs[0].turns
    assert record.error == "ServerError"
    assert (record.output, record.input_tokens, record.output_tokens) == ("", 0, 0)
    assert [a.outcome for a in record.attempt_log] == ["ServerError", "ServerError"]
    assert record.billed_usage == Usage(input_tokens=10, output_tokens=2)
    assert record.attempts == 2


async def test_a_cancelled_attempt_is_cancelled_and_still_billed(clean: TestScheduler) -> None:
    billed = Usage(input_tokens=7, output_tokens=0)
    hang = timeline([MessageStart("m", "x"), MessageDelta(None, billed)], end=None)
    client = ScriptedClient(clean, [hang])
    engine = engine_for(client, clean, handler=StreamHandler())
    clean.schedule_absolute(3.0, lambda *_: engine.cancel())
    with pytest.raises(Cancelled):
        await run_virtual(clean, engine.turn())
    (record,) = engine.session.runs[0].turns
    assert record.error == "Cancelled"
    assert record.attempt_log == (
        AttemptRecord(
            model="scripted",
            kind="stream",
            outcome="cancelled",
            usage=billed,
            started=0.0,
            ended=3.0,
        ),
    )
    assert record.billed_usage == billed


async def test_an_attempt_cut_by_the_total_deadline_is_a_timeout(clean: TestScheduler) -> None:
    stall = timeline([MessageStart("m", "x"), PartStart(0), Delta(0, "so"), PartStop(0)], end=None)
    client = ScriptedClient(clean, [stall])
    timeouts = TimeoutPolicy(first_event=5.0, per_event=100.0, total=10.0, rescue=False)
    engine = engine_for(client, clean, handler=StreamHandler(timeouts=timeouts))
    with pytest.raises(Exception) as caught:
        await run_virtual(clean, engine.turn())
    assert type(caught.value).__name__ == "StreamTimeoutError"
    (record,) = engine.session.runs[0].turns
    (attempt,) = record.attempt_log
    assert (attempt.outcome, attempt.started, attempt.ended) == ("StreamTimeoutError", 0.0, 10.0)
    assert attempt.usage is None and record.billed_usage is None  # usage stays optional


async def test_a_rescue_that_fails_is_itemised_too(clean: TestScheduler) -> None:
    client = ScriptedClient(
        clean,
        [timeline([MessageStart("m", "x")], end=ServerError("boom"))],
        create=[ServerError("rescue down")],
    )
    engine = engine_for(client, clean, handler=StreamHandler(retry=RetryPolicy(max_retries=0)))
    with pytest.raises(RescueFailed):
        await run_virtual(clean, engine.turn())
    (record,) = engine.session.runs[0].turns
    assert [(a.kind, a.outcome) for a in record.attempt_log] == [
        ("stream", "ServerError"),
        ("rescue", "ServerError"),
    ]
    assert record.error == "RescueFailed"


async def test_a_rate_limit_says_what_the_attempt_had_received(clean: TestScheduler) -> None:
    events = [MessageStart("m", "x"), PartStart(0), Delta(0, "Hi"), PartStop(0)]
    client = ScriptedClient(clean, [timeline(events, end=RateLimitError("slow down"))])
    engine = engine_for(client, clean)  # passthrough: the first rate limit surfaces
    with pytest.raises(RateLimitError) as caught:
        await run_virtual(clean, engine.turn())
    assert (caught.value.partial, caught.value.events) == (True, 4)
    assert str(caught.value) == "slow down (partial data), 4 events processed"


async def test_a_retried_rate_limit_reports_it_in_the_reset(clean: TestScheduler) -> None:
    events = [MessageStart("m", "x"), PartStart(0), Delta(0, "Hi")]
    client = ScriptedClient(
        clean,
        [timeline(events, end=RateLimitError("slow down", retry_after=1.0)), timeline(reply())],
    )
    engine = engine_for(
        client, clean, handler=StreamHandler(rate_limit=RateLimitPolicy(max_retries=3))
    )
    resets: list[Any] = []
    engine.events.subscribe(resets.append)
    await run_virtual(clean, engine.turn())
    (reset,) = [e for e in resets if type(e).__name__ == "AttemptReset"]
    assert reset.reason == "slow down, 3 events processed"  # no completed part: not partial


@pytest.mark.parametrize("reported", [1.5, -3], ids=["a float", "negative"])
async def test_a_custom_clients_count_that_is_no_token_count_fails_no_turn(
    clean: TestScheduler, reported: float
) -> None:
    """A client of one's own may build a Usage holding any number: the turn is served, and the
    calibration of the context estimate takes no sample from it (a float kept as a sample
    broke every later scale, and refusing it must not fail the turn that brought it)."""
    odd = Usage(input_tokens=reported, output_tokens=4)  # pyright: ignore[reportArgumentType]
    client = ScriptedClient(clean, [timeline(reply("Hello", usage=odd))])
    engine = engine_for(client, clean)
    result = await run_virtual(clean, engine.turn())
    assert result.text == "Hello"
    assert engine.calibration.samples(result.model) == ()
