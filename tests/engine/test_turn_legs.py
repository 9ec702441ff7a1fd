"""A turn's legs are its attempt log and its stats: what they count and settle."""

from __future__ import annotations

from rxturn.engine.failover._legs import TurnLegs
from rxturn.errors import Cancelled, RescueFailed, RescueTimeoutError, StreamTimeoutError
from rxturn.events import AttemptReset, Fallback
from rxturn.messages import Message, Usage


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


def test_stream_attempts_are_counted_racers_included() -> None:
    legs = TurnLegs(0, "m", _Clock())
    assert legs.streaming_attempts() == 1  # none recorded yet: the one in flight
    legs.attempt_started("stream")
    legs.attempt_ended("stream", RuntimeError("x"), None)
    legs.racer_started(0, "m")
    legs.racer_started(1, "h")
    legs.racer_ended(1, None, None, outcome="hedge_lost")
    legs.racer_adopted(0)
    legs.attempt_ended("stream", None, Usage(input_tokens=1, output_tokens=2))
    legs.attempt_started("rescue")
    legs.attempt_ended("rescue", RuntimeError("y"), None)
    assert [r.outcome for r in legs.records] == [
        "RuntimeError",
        "hedge_lost",
        "served",
        "RuntimeError",
    ]
    assert legs.streaming_attempts() == 3


def test_attempts_let_go_are_settled_with_the_turns_error() -> None:
    legs = TurnLegs(0, "m", _Clock())
    legs.attempt_started("stream")
    legs.attempt_ended("stream", None, None, disposed=True)
    legs.attempt_started("rescue")  # the stream let go before it: cut by the total deadline
    legs.attempt_ended("rescue", None, None, disposed=True)
    assert [r.outcome for r in legs.records] == ["StreamTimeoutError", ""]
    stream_error = StreamTimeoutError("total", after=1.0, events=0, partial=False, elapsed=1.0)
    closed = legs.close(RescueFailed(stream_error, RescueTimeoutError(2.0)))
    assert [r.outcome for r in closed] == ["StreamTimeoutError", "RescueTimeoutError"]

    cancelled = TurnLegs(0, "m", _Clock())
    cancelled.attempt_started("stream")
    assert [r.outcome for r in cancelled.close(Cancelled("stop"))] == ["cancelled"]
    served = TurnLegs(0, "m", _Clock())
    served.attempt_started("stream")
    served.attempt_ended("stream", None, None)
    assert [r.outcome for r in served.close(None)] == ["served"]


def test_usage_sums_and_the_rescue_flag() -> None:
    legs = TurnLegs(0, "m", _Clock())
    legs.attempt_started("stream")
    legs.attempt_ended("stream", RuntimeError("x"), Usage(input_tokens=3, output_tokens=1))
    legs.attempt_started("stream")
    legs.attempt_ended("stream", None, Usage(input_tokens=3, output_tokens=4))
    assert legs.billed() == Usage(input_tokens=6, output_tokens=5)
    assert legs.discarded() == Usage(input_tokens=3, output_tokens=1)
    assert legs.log is legs and legs.stats is legs
    legs(AttemptReset(attempt=2, reason="r", error_type="E"))
    assert not legs.rescued
    legs(Fallback(message=Message.assistant("ok")))
    assert legs.rescued
