"""Calibration learns from the raw estimate, so its factor converges instead of chasing itself.

The "provider" is a scripted client that reports, as ``input_tokens``, the true size of each
request (one token per character of its messages, a ruler independent of the engine's counter).
The engine's counter under-counts by a fixed ratio (or is exact). The conversation grows every
turn, so the true count changes from turn to turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import reactivex
from reactivex import Observable

from rxturn import TurnEngine
from rxturn.engine.context.tokens import REPLY_PRIMER_TOKENS
from rxturn.engine.context.window import Calibration
from rxturn.events import Delta, MessageDelta, MessageStart, MessageStop, PartStart, PartStop
from rxturn.messages import Message, Request, RequestOptions, Usage


def true_size(messages: Iterable[Message]) -> int:
    """The provider's count: per message its characters plus framing, plus the reply primer
    every request pays (which the engine's estimate adds on top of its counter too)."""
    return sum(len(m.text) + 10 for m in messages) + REPLY_PRIMER_TOKENS


class RulerClient:
    """Replies with the true input size of the request it was sent."""

    model = "ruler"
    base_url = "http://ruler.invalid"

    def stream(self, request: Request, options: RequestOptions | None = None) -> Observable[Any]:
        usage = Usage(input_tokens=true_size(request.messages), output_tokens=2)
        return reactivex.from_iterable(
            [
                MessageStart("m", "ruler"),
                PartStart(0),
                Delta(0, "ok ok"),
                PartStop(0),
                MessageDelta("end_turn", usage),
                MessageStop(),
            ]
        )

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        raise AssertionError("not used")


class ScaledCounter:
    """Counts ``ratio`` times the true size (rounded down): an under-counting tokenizer when < 1."""

    def __init__(self, ratio: float) -> None:
        self.ratio = ratio

    def count_text(self, text: str) -> int:
        return int(len(text) * self.ratio)

    def count_message(self, message: Message) -> int:
        return int((len(message.text) + 10) * self.ratio)

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)


async def run_turns(engine: TurnEngine, turns: int) -> list[tuple[int, int]]:
    """(calibrated estimate, true size) per turn."""
    pairs: list[tuple[int, int]] = []
    for k in range(turns):
        engine.history.append(Message.user(f"question number {k} " + "x" * (k % 7) * 13))
        truth = true_size(engine.history)
        await engine.turn()
        assert engine.last_estimate is not None
        pairs.append((engine.last_estimate.total, truth))
    return pairs


async def test_an_under_counting_counter_converges_and_stays() -> None:
    engine = TurnEngine(
        RulerClient(), counter=ScaledCounter(0.8), calibration=Calibration(enabled=True)
    )
    pairs = await run_turns(engine, 110)
    first_estimate, first_truth = pairs[0]
    assert first_estimate < 0.85 * first_truth  # uncalibrated, it under-counts by ~20 %
    for estimate, truth in pairs[10:]:  # after a few turns, and for 100 more
        assert abs(estimate - truth) <= 0.03 * truth, (estimate, truth)
    ratio = engine.calibration.ratio("ruler")
    assert ratio is not None and 1.2 < ratio < 1.3  # ~1 / 0.8, never drifting back to 1


async def test_an_exact_counter_keeps_the_factor_at_one() -> None:
    engine = TurnEngine(
        RulerClient(), counter=ScaledCounter(1.0), calibration=Calibration(enabled=True)
    )
    pairs = await run_turns(engine, 60)
    assert engine.calibration.ratio("ruler") == 1.0
    assert all(estimate == truth for estimate, truth in pairs)
