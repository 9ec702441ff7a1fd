"""Edge cases of one turn, end to end through ``TurnEngine`` on TestScheduler virtual time.

Each expected value is worked out from the documented rules (docs/behaviour.md §2-§4), not read
from a run: the non-streaming turn's race against its deadline, the transport ladder's jitter
band at its extremes, what a retried attempt leaves behind, and the model breaker's counts at
exact virtual instants, including which failures count on it.
"""

from __future__ import annotations

import random

import pytest
from reactivex.testing import TestScheduler

from rxturn import (
    BreakerState,
    Message,
    StreamHandler,
    StreamTimeoutError,
    TurnEngine,
)
from rxturn.testing.virtual import Later, ScriptedClient, run_virtual

# -- the non-streaming turn against its deadline ---------------------------------------------------


async def test_a_non_streaming_reply_at_the_instant_of_the_total_timeout_is_accepted(
    clean: TestScheduler,
) -> None:
    # One create() against the handler's 300 s total: a reply that completes at the very
    # instant the timeout fires wins, as it does for the rescue's race.
    client = ScriptedClient(clean, create=[Later(300.0, Message.assistant("just in time"))])
    engine = TurnEngine(client, mode="non_streaming", handler=StreamHandler(), scheduler=clean)

    result = await run_virtual(clean, engine.run("hi"))

    assert result.text == "just in time"
    assert float(clean.clock) == pytest.approx(300.0)
    log = engine.session.runs[0].turns[0].attempt_log
    assert [(a.kind, a.outcome, a.ended) for a in log] == [("create", "served", 300.0)]


async def test_a_non_streaming_reply_just_after_the_total_timeout_is_cut(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(clean, create=[Later(300.5, Message.assistant("late"))])
    engine = TurnEngine(client, mode="non_streaming", handler=StreamHandler(), scheduler=clean)

    with pytest.raises(StreamTimeoutError) as caught:
        await run_virtual(clean, engine.run("hi"))

    assert caught.value.kind == "total"
    assert float(clean.clock) == pytest.approx(300.0)
    assert engine.session.runs[0].turns[0].error == "StreamTimeoutError"
