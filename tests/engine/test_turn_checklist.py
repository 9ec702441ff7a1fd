"""Edge cases of one turn, end to end through ``TurnEngine`` on TestScheduler virtual time.

Each expected value is worked out from the documented rules (docs/behaviour.md §2-§4), not read
from a run: the non-streaming turn's race against its deadline, the transport ladder's jitter
band at its extremes, what a retried attempt leaves behind, and the model breaker's counts at
exact virtual instants, including which failures count on it.
"""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest
from reactivex.testing import TestScheduler

from rxturn import (
    BreakerState,
    Cancelled,
    FallbackManager,
    FallbackPolicy,
    Message,
    Observer,
    RateLimitEscalation,
    RateLimitPolicy,
    RecordingObserver,
    RetryPolicy,
    StreamHandler,
    StreamTimeoutError,
    TimeoutPolicy,
    Tool,
    ToolResultPart,
    TurnEngine,
    Usage,
)
from rxturn.errors import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    RateLimitError,
    ServerError,
)
from rxturn.events import Delta, MessageDelta, MessageStart, MessageStop, PartStart, PartStop
from rxturn.testing.virtual import Later, ScriptedClient, reply, run_virtual, timeline

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


# -- the transport ladder's jitter band at its extremes --------------------------------------------


class Fixed(random.Random):
    """A Random whose every draw is ``value`` (the jitter's ``f`` is ``2·value - 1``)."""

    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.mark.parametrize(
    ("draw", "factor"),
    [(0.0, 0.9), (0.5, 1.0), (1.0 - 2.0**-53, 1.1)],
    ids=["lowest", "middle", "highest"],
)
async def test_the_default_jitter_spreads_each_wait_within_ten_percent(
    clean: TestScheduler, draw: float, factor: float
) -> None:
    # Retry k waits 0.1·2^k s × (1 + f·0.1), f = 2·draw - 1 in [-1, 1): 0.09 / 0.18 / 0.36 s at
    # the lowest draw, (just under) 0.11 / 0.22 / 0.44 s at the highest. Every attempt fails
    # 0.01 s after it starts; after the fourth the rescue answers.
    client = ScriptedClient(
        clean, [timeline([], end=ServerError("HTTP 500"))], create=[Message.assistant("rescued")]
    )
    waits: list[float] = []
    handler = StreamHandler(
        rng=Fixed(draw),
        on_wait=lambda **kw: waits.append(kw["seconds"]),
    )
    engine = TurnEngine(client, handler=handler, scheduler=clean)

    await run_virtual(clean, engine.run("hi"))

    expected = [0.1 * factor, 0.2 * factor, 0.4 * factor]
    assert waits == pytest.approx(expected, rel=1e-9)
    assert all(0.9 * 0.1 * 2**k <= wait <= 1.1 * 0.1 * 2**k for k, wait in enumerate(waits))
    starts = [start for start, _ in client.spans if start is not None]
    gaps = [later - (earlier + 0.01) for earlier, later in itertools.pairwise(starts)]
    assert gaps == pytest.approx(expected, abs=1e-6)  # the waits really ran on the clock


# -- what a retried attempt leaves behind ----------------------------------------------------------


async def test_a_retried_attempt_starts_from_end_turn_and_no_usage(clean: TestScheduler) -> None:
    # Attempt 1 says max_tokens and reports usage, then fails; attempt 2 says neither. The
    # reset throws the first attempt's reading away: the reply's stop reason is the default
    # end_turn and it has no usage of its own (what attempt 1 reported is billed, not kept).
    first = [
        MessageStart(id="m1"),
        PartStart(0),
        Delta(0, "first"),
        PartStop(0),
        MessageDelta("max_tokens", Usage(input_tokens=10, output_tokens=2)),
    ]
    second = [MessageStart(id="m2"), PartStart(0), Delta(0, "second"), PartStop(0), MessageStop()]
    client = ScriptedClient(clean, [timeline(first, end=ServerError("HTTP 500")), timeline(second)])
    engine = TurnEngine(client, handler=StreamHandler(), scheduler=clean)

    result = await run_virtual(clean, engine.run("hi"))

    turn = engine.session.runs[0].turns[0]
    assert (result.text, turn.stop_reason, turn.attempts) == ("second", "end_turn", 2)
    assert (turn.input_tokens, turn.output_tokens, result.message.usage) == (0, 0, None)
    assert turn.billed_usage == Usage(input_tokens=10, output_tokens=2)


# -- the model breaker at exact virtual instants ---------------------------------------------------

BREAKER_EVENTS = ("on_stream_success", "on_stream_failure", "on_fallback", "on_model_switched")


async def test_the_breaker_cooldown_probe_and_a_rate_limited_probe_at_exact_instants(
    clean: TestScheduler,
) -> None:
    # replies take no time, so that a turn can begin at any instant after the previous one
    served = timeline(reply("from primary"), start=0.0, step=0.0)
    client = ScriptedClient(
        clean,
        models={
            "primary": [
                timeline([], end=ServerError("HTTP 500")),  # turns 1-3 fail at 0.01, 0.02, 0.03
                timeline([], end=ServerError("HTTP 500")),
                timeline([], end=ServerError("HTTP 500")),
                served,  # the first probe
                timeline([], end=RateLimitError("HTTP 429: slow down", retry_after=0.0)),
                served,  # the second cooldown's probe
                timeline([], end=ServerError("HTTP 500")),  # restarts the probe streak
                served,
                served,
            ],
            "backup": [timeline(reply("from backup"), start=0.0, step=0.0)],
        },
    )
    breaker = FallbackManager("primary", ["backup"])
    observer = RecordingObserver()
    # no transport retry, no rescue; a rate limit escalates on its first hit
    handler = StreamHandler(
        timeouts=TimeoutPolicy(rescue=False),
        retry=RetryPolicy(max_retries=0),
        rate_limit=RateLimitPolicy(escalate_after=0),
    )
    engine = TurnEngine(
        client, handler=handler, fallback=breaker, observers=[observer], scheduler=clean
    )

    async def turn(at: float | None = None) -> tuple[str, list[tuple[str, str | None]]]:
        if at is not None:
            clean.advance_to(at)
        observer.calls.clear()
        try:
            outcome = (await run_virtual(clean, engine.run("q"))).turns[0].model
        except Exception as error:
            outcome = type(error).__name__
        seen = [
            (name, kw.get("to_model", kw.get("model")))
            for name, kw in observer.calls
            if name in BREAKER_EVENTS
        ]
        return outcome, seen

    for _ in range(2):
        assert await turn() == ("ServerError", [("on_stream_failure", "primary")])
    assert await turn() == (
        "ServerError",
        [("on_fallback", "backup"), ("on_stream_failure", "primary")],
    )
    assert (breaker.state, breaker.switched_at) == (BreakerState.FALLBACK, pytest.approx(0.03))

    # 60 s of cooldown: a turn beginning a microsecond before its end is the backup's
    outcome, seen = await turn(at=60.03 - 1e-6)
    assert outcome == "backup"
    assert seen == [("on_model_switched", "backup"), ("on_stream_success", "backup")]
    # at the end of the cooldown exactly, the turn probes the primary
    outcome, seen = await turn(at=60.03)
    assert (outcome, breaker.state, breaker.probe_successes) == (
        "primary",
        BreakerState.RECOVERING,
        1,
    )
    assert seen == [("on_model_switched", "primary"), ("on_stream_success", "primary")]

    # a rate-limit escalation during the probe: straight back to the backup, no trip event, no
    # strike on the backup, and a fresh cooldown from the instant of the failure
    failed_at = float(clean.clock) + 0.01
    outcome, seen = await turn()
    assert (outcome, seen) == ("RateLimitEscalation", [("on_stream_failure", "primary")])
    assert (breaker.state, breaker.switched_at) == (
        BreakerState.FALLBACK,
        pytest.approx(failed_at),
    )
    backup = breaker.fallback_entry("backup")
    assert backup is not None and backup.strikes == 0
    assert (await turn(at=failed_at + 60.0 - 1e-6))[0] == "backup"
    assert (await turn(at=failed_at + 60.0))[0] == "primary"
    assert (breaker.state, breaker.probe_successes) == (BreakerState.RECOVERING, 1)

    # a transient failure during the probe restarts the streak: two more successes close it
    assert (await turn())[0] == "ServerError"
    assert (breaker.state, breaker.probe_successes) == (BreakerState.RECOVERING, 0)
    assert (await turn())[0] == "primary"
    assert breaker.state is BreakerState.RECOVERING
    assert (await turn())[0] == "primary"
    assert (breaker.state, breaker.switched_at) == (BreakerState.PRIMARY, None)


def _failing(clean: TestScheduler, error: Exception | None) -> ScriptedClient:
    # ``None``: a stream that never says a word (the total deadline ends it)
    script = timeline([], end=None) if error is None else timeline([], end=error)
    return ScriptedClient(
        clean, models={"primary": [script], "backup": [timeline(reply("from backup"))]}
    )


@pytest.mark.parametrize(
    "error",
    [
        BadRequestError("HTTP 400: bad request"),
        AuthenticationError("HTTP 401: invalid x-api-key"),
        NotFoundError("HTTP 404: no such model"),
        ServerError("HTTP 500"),
        None,
    ],
    ids=["400", "401", "404", "500", "total-timeout"],
)
async def test_every_failure_but_a_cancel_counts_on_the_breaker(
    clean: TestScheduler, error: Exception | None
) -> None:
    # A permanent error is a model failure like any other: the third in a row trips.
    breaker = FallbackManager("primary", ["backup"])
    handler = StreamHandler(
        timeouts=TimeoutPolicy(first_event=1.0, total=1.0, rescue=False),
        retry=RetryPolicy(max_retries=0),
    )
    engine = TurnEngine(_failing(clean, error), handler=handler, fallback=breaker, scheduler=clean)
    expected = StreamTimeoutError if error is None else type(error)

    for failures in (1, 2):
        with pytest.raises(expected):
            await run_virtual(clean, engine.run("q"))
        assert (breaker.state, breaker.consecutive_failures) == (BreakerState.PRIMARY, failures)
    with pytest.raises(expected):
        await run_virtual(clean, engine.run("q"))
    assert breaker.state is BreakerState.FALLBACK
    assert (await run_virtual(clean, engine.run("q"))).turns[0].model == "backup"


async def test_cancels_never_count_on_the_breaker(clean: TestScheduler) -> None:
    breaker = FallbackManager("primary", ["backup"])
    observer = RecordingObserver()
    client = _failing(clean, None)
    engine = TurnEngine(client, fallback=breaker, observers=[observer], scheduler=clean)
    for i in range(3):
        clean.schedule_absolute(float(clean.clock) + 1.0, lambda *_: engine.cancel())
        with pytest.raises(Cancelled):
            await run_virtual(clean, engine.run("q"))
        assert float(clean.clock) == pytest.approx(i + 1.0)
    assert (breaker.state, breaker.consecutive_failures) == (BreakerState.PRIMARY, 0)
    assert [name for name, _ in observer.calls if name in BREAKER_EVENTS] == []
    assert [t.error for run in engine.session.runs for t in run.turns] == ["Cancelled"] * 3


async def test_an_escalation_on_the_primary_counts_towards_the_trip(clean: TestScheduler) -> None:
    limited = RateLimitError("HTTP 429: slow down", retry_after=0.0)
    breaker = FallbackManager("primary", ["backup"])
    handler = StreamHandler(rate_limit=RateLimitPolicy(escalate_after=0))
    engine = TurnEngine(
        _failing(clean, limited), handler=handler, fallback=breaker, scheduler=clean
    )
    for _ in range(3):
        with pytest.raises(RateLimitEscalation):
            await run_virtual(clean, engine.run("q"))
    assert breaker.state is BreakerState.FALLBACK


async def test_the_breaker_has_recorded_the_outcome_before_the_observers_hear_of_it(
    clean: TestScheduler,
) -> None:
    # The outcome is recorded on the breaker first, then told: on_fallback and
    # on_stream_failure see the tripped breaker, on_stream_failure of a failing backup sees its
    # strike taken, and on_stream_success of the closing probe sees the breaker closed (with the
    # model that served, captured before the breaker moved).
    client = ScriptedClient(
        clean,
        models={
            "primary": [timeline([], end=ServerError("HTTP 500"))] * 3
            + [timeline(reply("probe"), start=0.0, step=0.0)],
            "backup": [timeline([], end=ServerError("HTTP 500"))],
        },
    )
    breaker = FallbackManager("primary", ["backup"], policy=FallbackPolicy(recovery_successes=1))
    heard: list[tuple[str, str | None, BreakerState, int]] = []

    class Watcher(Observer):
        def _note(self, name: str, model: str | None) -> None:
            backup = breaker.fallback_entry("backup")
            assert backup is not None
            heard.append((name, model, breaker.state, backup.strikes))

        def on_fallback(self, *, from_model: str, to_model: str) -> None:
            self._note("on_fallback", to_model)

        def on_stream_failure(self, *, turn: int, model: str, error: BaseException) -> None:
            self._note("on_stream_failure", model)

        def on_stream_success(self, *, turn: int, model: str, **_: object) -> None:
            self._note("on_stream_success", model)

    engine = TurnEngine(
        client,
        handler=StreamHandler(
            timeouts=TimeoutPolicy(rescue=False), retry=RetryPolicy(max_retries=0)
        ),
        fallback=breaker,
        observers=[Watcher()],
        scheduler=clean,
    )
    for _ in range(4):  # three primary failures trip it; the backup fails once
        with pytest.raises(ServerError):
            await run_virtual(clean, engine.run("q"))
    clean.advance_by(60.0)
    assert (await run_virtual(clean, engine.run("q"))).text == "probe"

    F, P = BreakerState.FALLBACK, BreakerState.PRIMARY
    assert heard == [
        ("on_stream_failure", "primary", P, 0),
        ("on_stream_failure", "primary", P, 0),
        ("on_fallback", "backup", F, 0),
        ("on_stream_failure", "primary", F, 0),
        ("on_stream_failure", "backup", F, 1),
        ("on_stream_success", "primary", P, 0),  # closed: every strike forgotten
    ]


async def test_each_backup_has_two_strikes_then_the_chain_is_exhausted_until_the_cooldown(
    clean: TestScheduler,
) -> None:
    failing = [timeline([], end=ServerError("HTTP 500"), start=0.0)]  # fails at once
    client = ScriptedClient(
        clean,
        models={
            "primary": failing * 3 + [timeline(reply("probe"), start=0.0, step=0.0)],
            "b1": failing,
            "b2": failing,
        },
    )
    breaker = FallbackManager("primary", ["b1", "b2"])
    observer = RecordingObserver()
    handler = StreamHandler(timeouts=TimeoutPolicy(rescue=False), retry=RetryPolicy(max_retries=0))
    engine = TurnEngine(
        client, handler=handler, fallback=breaker, observers=[observer], scheduler=clean
    )

    async def turn() -> tuple[str, list[tuple[str, str | None, str | None]]]:
        observer.calls.clear()
        try:
            outcome = (await run_virtual(clean, engine.run("q"))).turns[0].model
        except Exception as error:
            outcome = type(error).__name__
        seen = [
            (name, kw.get("from_model", kw.get("model")), kw.get("to_model"))
            for name, kw in observer.calls
            if name in BREAKER_EVENTS or name == "on_turn_start"
        ]
        return outcome, seen

    for _ in range(3):
        await turn()
    assert breaker.state is BreakerState.FALLBACK  # tripped at virtual time 0
    assert client.models_asked == ["primary"] * 3

    # b1 serves and fails twice (a strike each), then routing moves on to b2
    assert await turn() == (
        "ServerError",
        [
            ("on_model_switched", "primary", "b1"),
            ("on_turn_start", None, None),
            ("on_stream_failure", "b1", None),
        ],
    )
    assert await turn() == (
        "ServerError",
        [("on_turn_start", None, None), ("on_stream_failure", "b1", None)],
    )
    assert await turn() == (
        "ServerError",
        [
            ("on_model_switched", "b1", "b2"),  # no second on_fallback: the breaker tripped once
            ("on_turn_start", None, None),
            ("on_stream_failure", "b2", None),
        ],
    )
    await turn()
    assert breaker.failed_fallbacks() == ["b1", "b2"]
    assert client.models_asked == ["primary"] * 3 + ["b1", "b1", "b2", "b2"]

    # every backup spent: refused before any turn event, nothing asked
    assert await turn() == ("FallbackExhausted", [])
    assert len(client.models_asked) == 7
    # the cooldown counts from the trip: at 60 s the primary is probed instead of refusing
    clean.advance_to(60.0)
    assert await turn() == (
        "primary",
        [
            ("on_model_switched", "b2", "primary"),
            ("on_turn_start", None, None),
            ("on_stream_success", "primary", None),
        ],
    )


@pytest.mark.parametrize(("finishes_at", "result"), [(2.0, "done"), (2.5, "ToolTimeoutError")])
async def test_a_tool_finishing_at_the_instant_of_its_timeout_is_accepted(
    clean: TestScheduler, finishes_at: float, result: str
) -> None:
    # A tool's timeout runs the same race as the non-streaming turn: a result delivered at the
    # timeout's instant wins; half a second later the model gets the timeout instead.
    async def slow() -> str:
        """Takes a while."""
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        timer = clean.schedule_relative(finishes_at, lambda *_: woken.set_result(None))
        try:
            await woken
        finally:
            timer.dispose()  # a tool cut by its timeout leaves no timer behind
        return "done"

    call = [
        MessageStart(id="m1"),
        PartStart(0, kind="tool_call", id="call_1", name="slow"),
        Delta(0, "{}", kind="tool_json"),
        PartStop(0),
        MessageDelta("tool_use"),
        MessageStop(),
    ]
    client = ScriptedClient(
        clean, [timeline(call, start=0.0, step=0.0), timeline(reply("ok"), start=0.0, step=0.0)]
    )
    engine = TurnEngine(client, tools=[Tool(slow, timeout=2.0)], scheduler=clean)

    await run_virtual(clean, engine.run("hi"))

    (answer,) = engine.history[2].content
    assert isinstance(answer, ToolResultPart)
    assert str(answer.content).startswith(result)
    assert answer.is_error is (result != "done")


# -- the idle limit with its default numbers -------------------------------------------------------


async def test_ten_idle_expiries_of_180_s_fail_an_attempt_that_had_started(
    clean: TestScheduler,
) -> None:
    # One event at 0.01 s, then silence, with the total deadline disabled: the attempt fails
    # at the tenth consecutive 180 s expiry, 0.01 + 10 · 180 = 1800.01 s.
    client = ScriptedClient(clean, [timeline(reply("never finished")[:1], end=None)])
    handler = StreamHandler(
        timeouts=TimeoutPolicy(total=None, rescue=False), retry=RetryPolicy(max_retries=0)
    )
    engine = TurnEngine(client, handler=handler, scheduler=clean)

    with pytest.raises(StreamTimeoutError) as caught:
        await run_virtual(clean, engine.run("hi"))

    error = caught.value
    assert (error.kind, error.consecutive, error.events) == ("idle", 10, 1)
    assert float(clean.clock) == pytest.approx(1800.01)
