"""The turn's ladders with their default numbers, end to end, through the public API only.

Every case runs a ``TurnEngine`` turn with ``StreamHandler()`` (the documented defaults, nothing
overridden unless the case says so) over the test kit's scripted client on virtual time, and
checks what docs/behaviour.md §2 gives as the numbers: 120 s for the first event of each
attempt (two expiries while nothing arrived), 300 s for the whole turn, four streaming attempts
0.1 / 0.2 / 0.4 s (±10 %) apart, rate-limit waits of the hint capped at 60 s (5 s without one),
escalation on the fourth hit, and the rescue's budget: what is left of the total deadline, or a
fresh 120 s once it has passed. Times below are worked out from those numbers, not read from
a run.
"""

from __future__ import annotations

import pytest
from reactivex.testing import TestScheduler

from rxturn import (
    Message,
    RescueFailed,
    RetryPolicy,
    ServerError,
    StreamHandler,
    TurnEngine,
)
from rxturn.testing.virtual import Later, ScriptedClient, run_virtual, timeline


def outcomes(engine: TurnEngine) -> list[tuple[str, str, float, float]]:
    turn = engine.session.runs[-1].turns[-1]
    return [(a.kind, a.outcome, a.started, a.ended) for a in turn.attempt_log]


# -- the rescue's deadline -----------------------------------------------------------------------


async def test_a_rescue_reply_at_the_instant_its_fresh_budget_ends_is_accepted(
    clean: TestScheduler,
) -> None:
    # The stream never says a word: two 120 s first-event expiries fail attempt 1 at 240 s,
    # attempt 2 (after a ~0.1 s backoff) is cut by the total deadline at 300 s, and the rescue
    # gets a fresh 120 s budget: it ends at 420 s, the instant its reply arrives. A reply that
    # completes at the same instant as the deadline wins (docs/behaviour.md §2.6).
    client = ScriptedClient(
        clean, [timeline([], end=None)], create=[Later(120.0, Message.assistant("rescued"))]
    )
    engine = TurnEngine(client, handler=StreamHandler(), scheduler=clean)

    result = await run_virtual(clean, engine.run("hi"))

    assert result.text == "rescued"
    rescue = outcomes(engine)[-1]
    assert rescue == ("rescue", "served", pytest.approx(300.0), pytest.approx(420.0))


async def test_a_rescue_reply_at_the_instant_the_total_deadline_ends_is_accepted(
    clean: TestScheduler,
) -> None:
    # The only attempt fails at 0.25 s (no transport retries): the rescue gets what is left of
    # the 300 s total deadline, 299.75 s, and its reply arrives exactly then.
    client = ScriptedClient(
        clean,
        [timeline([], start=0.25, end=ServerError("HTTP 500"))],
        create=[Later(299.75, Message.assistant("rescued"))],
    )
    engine = TurnEngine(
        client, handler=StreamHandler(retry=RetryPolicy(max_retries=0)), scheduler=clean
    )

    result = await run_virtual(clean, engine.run("hi"))

    assert result.text == "rescued"
    assert outcomes(engine) == [
        ("stream", "ServerError", 0.0, 0.25),
        ("rescue", "served", 0.25, 300.0),
    ]


async def test_a_rescue_reply_just_after_its_budget_is_cut(clean: TestScheduler) -> None:
    # The control: the same rescue, 0.5 s later than its fresh 120 s budget, is cut at 420 s.
    client = ScriptedClient(
        clean, [timeline([], end=None)], create=[Later(120.5, Message.assistant("late"))]
    )
    engine = TurnEngine(client, handler=StreamHandler(), scheduler=clean)

    with pytest.raises(RescueFailed, match="deadline"):
        await run_virtual(clean, engine.run("hi"))

    assert outcomes(engine)[-1] == (
        "rescue",
        "RescueTimeoutError",
        pytest.approx(300.0),
        pytest.approx(420.0),
    )
