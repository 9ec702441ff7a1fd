"""One clock: a whole session — ladders, deadlines, breaker cooldown and probe — on virtual time.

The FallbackManager is given no clock: ``TurnEngine(scheduler=...)`` hands it the scheduler's.
Every time below is a virtual second, exact.
"""

from __future__ import annotations

from reactivex.testing import TestScheduler

from rxturn import BreakerState, FallbackManager, RecordingObserver, StreamHandler, TurnEngine
from rxturn.errors import ServerError
from rxturn.events import MessageStart
from rxturn.messages import Message
from rxturn.resilience.policies import RetryPolicy, TimeoutPolicy
from rxturn.testing.virtual import ScriptedClient, reply, run_virtual, timeline

HANDLER = StreamHandler(
    retry=RetryPolicy(max_retries=1, base_delay=2.0, jitter=0.0),
    timeouts=TimeoutPolicy(
        first_event=10.0, per_event=30.0, total=100.0, max_consecutive_timeouts=1, rescue=False
    ),
)


def duration_ms(call: dict[str, object]) -> float:
    """The ``duration_ms`` of a recorded ``on_turn_end`` / ``on_run_end`` call."""
    value = call["duration_ms"]
    assert isinstance(value, float), value
    return value


async def test_a_whole_session_runs_on_the_engine_scheduler(clean: TestScheduler) -> None:
    fails = timeline([MessageStart("m", "x")], end=ServerError("down"))  # fails at 0.02
    stalls = timeline([], end=None)  # nothing: the first-event deadline fires after 10 s
    client = ScriptedClient(
        clean,
        models={
            # turn 1: stall, retry; turns 2 and 3: fail twice each; then the probes succeed
            "primary": [stalls, fails, fails, fails, fails, fails, timeline(reply("back"))],
            "backup": [timeline(reply("from the backup"))],
        },
    )
    breaker = FallbackManager("primary", ["backup"])  # no clock given
    observer = RecordingObserver()
    engine = TurnEngine(
        client, handler=HANDLER, fallback=breaker, observers=[observer], scheduler=clean
    )

    async def turn() -> None:
        engine.history[:] = [Message.user("hi")]
        try:
            await run_virtual(clean, engine.turn())
        except Exception as error:  # a failed turn: the test looks at the breaker
            assert isinstance(error, Exception)

    # turn 1: attempt 1 stalls 10 s (first-event deadline), waits 2 s, attempt 2 fails at
    # 12.02: the turn fails at 12.02, having taken exactly 12.02 virtual seconds
    await turn()
    ends = observer.calls_of("on_turn_end")
    assert ends[-1]["success"] is False
    assert abs(duration_ms(ends[-1]) - 12_020.0) < 1e-6
    log = engine.session.runs[-1].turns[-1].attempt_log
    assert [(a.outcome, a.started, a.ended) for a in log] == [
        ("StreamTimeoutError", 0.0, 10.0),
        ("ServerError", 12.0, 12.02),
    ]
    # turns 2 and 3: fail at 0.02, wait 2 s, fail 0.02 later: 2.04 s each; the third
    # failure trips the breaker at 12.02 + 2 * 2.04 = 16.10
    await turn()
    await turn()
    assert breaker.state is BreakerState.FALLBACK
    assert breaker.switched_at is not None and abs(breaker.switched_at - 16.10) < 1e-9

    await turn()  # the backup serves
    assert client.models_asked[-1] == "backup"
    clean.advance_by(59.0)  # virtual time passes between turns: cooldown not over
    await turn()
    assert client.models_asked[-1] == "backup"
    clean.advance_by(1.0)  # now 60 s after the trip: the next turn probes the primary
    await turn()
    assert client.models_asked[-1] == "primary" and breaker.state is BreakerState.RECOVERING
    await turn()
    assert breaker.state is BreakerState.PRIMARY  # two probe successes close it
    switched = observer.calls_of("on_model_switched")
    assert [(s["from_model"], s["to_model"]) for s in switched] == [
        ("primary", "backup"),
        ("backup", "primary"),
    ]


async def test_an_explicit_clock_is_kept(clean: TestScheduler) -> None:
    def frozen() -> float:
        return 5.0

    breaker = FallbackManager("primary", ["backup"], clock=frozen)
    TurnEngine(ScriptedClient(clean, [timeline(reply())]), fallback=breaker, scheduler=clean)
    assert breaker.adopt_clock(lambda: 1.0) is False
    for _ in range(3):
        breaker.record_turn_failure(ServerError("x"))
    assert breaker.switched_at == 5.0


async def test_run_durations_come_from_the_scheduler(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [timeline(reply("ok"), start=4.0)])
    observer = RecordingObserver()
    engine = TurnEngine(client, observers=[observer], scheduler=clean)
    await run_virtual(clean, engine.run("go"))
    # six events from 4.0, 0.01 apart; complete at 4.06
    (run_end,) = observer.calls_of("on_run_end")
    assert abs(duration_ms(run_end) - 4060.0) < 1e-6
    (turn_end,) = observer.calls_of("on_turn_end")
    assert abs(duration_ms(turn_end) - 4060.0) < 1e-6
