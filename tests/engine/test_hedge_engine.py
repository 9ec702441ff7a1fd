"""The hedged first token inside a TurnEngine turn, on virtual time (every instant exact)."""

from __future__ import annotations

from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxturn import (
    BreakerState,
    FallbackManager,
    HedgePolicy,
    HedgeTarget,
    RecordingObserver,
    StreamHandler,
    TurnEngine,
)
from rxturn.engine.observation.observers import Observer
from rxturn.errors import (
    AuthenticationError,
    Cancelled,
    ConfigError,
    NotFoundError,
    OverloadedError,
    RateLimitError,
    ReadError,
    ServerError,
)
from rxturn.events import Delta, MessageDelta, MessageStart, MessageStop, PartStart, PartStop
from rxturn.messages import Message, RequestOptions, Usage
from rxturn.resilience.policies import RetryPolicy, TimeoutPolicy
from rxturn.testing.virtual import (
    Script,
    ScriptedClient,
    on_completed,
    on_error,
    on_next,
    reply,
    run_virtual,
    timeline,
)

HANDLER = StreamHandler(
    retry=RetryPolicy(max_retries=2, base_delay=1.0, jitter=0.0),
    timeouts=TimeoutPolicy(
        first_event=60.0, per_event=60.0, total=100.0, max_consecutive_timeouts=1, rescue=False
    ),
)


def slow(text: str, first_content_at: float, *, reported: Usage | None = None) -> Script:
    """A reply whose preamble (and, like Anthropic's, its input usage) comes at once."""
    early = [on_next(0.01, MessageStart(id="msg_slow", model="primary"))]
    if reported is not None:
        early.append(on_next(0.01, MessageDelta(None, reported)))
    return [
        *early,
        on_next(first_content_at, PartStart(0)),
        on_next(first_content_at, Delta(0, text)),
        on_next(first_content_at + 0.01, PartStop(0)),
        on_next(
            first_content_at + 0.01,
            MessageDelta("end_turn", Usage(input_tokens=7, output_tokens=2)),
        ),
        on_next(first_content_at + 0.01, MessageStop()),
        on_completed(first_content_at + 0.02),
    ]


def engine_for(
    client: ScriptedClient, scheduler: TestScheduler, policy: HedgePolicy, **kwargs: Any
) -> tuple[TurnEngine, RecordingObserver, list[str]]:
    observer = RecordingObserver(requests=True)
    shown: list[str] = []
    engine = TurnEngine(
        client,
        handler=HANDLER,
        hedge=policy,
        observers=[observer],
        text_streamer=shown.append,
        scheduler=scheduler,
        **kwargs,
    )
    engine.history.append(Message.user("hi"))
    return engine, observer, shown


async def test_a_hedge_wins_the_turn_and_the_loser_is_billed_and_neutral(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(
        clean,
        models={
            "scripted": [
                slow("from the primary", 30.0, reported=Usage(input_tokens=11, output_tokens=0))
            ],
            "backup": [
                timeline(
                    reply("from the backup", usage=Usage(input_tokens=5, output_tokens=3)),
                    start=0.5,
                )
            ],
        },
    )
    policy = HedgePolicy((HedgeTarget("backup"),), delay=2.0)
    engine, observer, shown = engine_for(client, clean, policy)
    result = await run_virtual(clean, engine.turn())

    assert result.message.text == "from the backup" and result.model == "backup"
    assert "".join(shown) == "from the backup"
    log = result.attempt_log
    # the backup, sent at 2 s, streams from 2.5 s one event per 10 ms: MessageStart 2.50,
    # PartStart 2.51, its first text 2.52 (the win), its eighth and last event 2.57, end 2.58
    assert [(a.model, a.outcome) for a in log] == [
        ("scripted", "hedge_lost"),
        ("backup", "served"),
    ]
    assert [(a.started, a.ended) for a in log] == [
        (0.0, pytest.approx(2.52)),
        (2.0, pytest.approx(2.58)),
    ]
    assert log[0].usage == Usage(input_tokens=11, output_tokens=0)
    assert log[0].estimated_usage is None  # it reported usage: no estimate
    assert result.billed_usage == Usage(input_tokens=11 + 5, output_tokens=3)
    # the primary was disposed at the instant of the hedge's first content
    assert client.attempts[0].spans == [[0.0, pytest.approx(2.52)]]
    assert observer.calls_of("on_attempt_reset") == []
    assert observer.calls_of("on_model_switched") == []
    assert [c["model"] for c in observer.calls_of("on_stream_success")] == ["backup"]
    hedges = observer.calls_of("on_hedge")
    assert [(h["model"], h["hedge_model"], h["reason"], h["after"]) for h in hedges] == [
        ("scripted", "backup", "delay", 2.0)
    ]


async def test_a_loser_that_reported_nothing_gets_an_offline_estimate_not_billed(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(
        clean,
        models={
            "scripted": [slow("late", 30.0)],
            "backup": [
                timeline(reply("quick", usage=Usage(input_tokens=5, output_tokens=1)), start=0.1)
            ],
        },
    )
    engine, _, _ = engine_for(client, clean, HedgePolicy((HedgeTarget("backup"),), delay=1.0))
    result = await run_virtual(clean, engine.turn())
    loser = result.attempt_log[0]
    assert loser.outcome == "hedge_lost" and loser.usage is None
    assert engine.last_estimate is not None
    assert loser.estimated_usage == Usage(input_tokens=engine.last_estimate.total, output_tokens=0)
    assert result.billed_usage == Usage(input_tokens=5, output_tokens=1)


async def test_a_fast_primary_sends_no_hedge(clean: TestScheduler) -> None:
    client = ScriptedClient(
        clean, models={"scripted": [timeline(reply("quick"))], "backup": [timeline(reply("b"))]}
    )
    engine, observer, _ = engine_for(
        client, clean, HedgePolicy((HedgeTarget("backup"),), delay=2.0)
    )
    result = await run_virtual(clean, engine.turn())
    assert result.message.text == "quick" and client.models_asked == ["scripted"]
    assert [a.outcome for a in result.attempt_log] == ["served"]
    assert observer.calls_of("on_hedge") == []


async def test_after_the_win_retries_stay_on_the_winners_target(clean: TestScheduler) -> None:
    drops = [
        on_next(0.1, MessageStart()),
        on_next(0.2, PartStart(0)),
        on_next(0.2, Delta(0, "half")),
        on_error(0.3, ReadError("connection dropped")),
    ]
    client = ScriptedClient(
        clean,
        models={
            "scripted": [slow("primary", 30.0)],
            "backup": [drops, timeline(reply("whole"))],
        },
    )
    engine, observer, _ = engine_for(
        client, clean, HedgePolicy((HedgeTarget("backup"),), delay=2.0)
    )
    result = await run_virtual(clean, engine.turn())
    assert result.message.text == "whole" and result.model == "backup"
    assert client.models_asked == ["scripted", "backup", "backup"]
    # the winner's failure climbs the ladder as usual: a reset (its text was shown), a wait
    resets = observer.calls_of("on_attempt_reset")
    assert len(resets) == 1
    assert [a.outcome for a in result.attempt_log] == ["hedge_lost", "ReadError", "served"]
    assert observer.calls_of("on_model_switched") == []


async def test_cancel_mid_race_records_every_racer_cancelled(clean: TestScheduler) -> None:
    client = ScriptedClient(
        clean, models={"scripted": [slow("p", 50.0)], "backup": [slow("b", 50.0)]}
    )
    engine, _, shown = engine_for(client, clean, HedgePolicy((HedgeTarget("backup"),), delay=2.0))

    def cancel(*_: object) -> None:
        engine.cancel()

    clean.schedule_absolute(5.0, cancel)
    with pytest.raises(Cancelled):
        await run_virtual(clean, engine.turn())
    log = engine.session.runs[-1].turns[-1].attempt_log
    assert sorted((a.model, a.outcome, a.ended) for a in log) == [
        ("backup", "cancelled", 5.0),
        ("scripted", "cancelled", 5.0),
    ]
    assert client.spans == [[0.0, 5.0], [2.0, 5.0]]
    assert shown == []


async def test_both_racers_silent_until_the_total_deadline(clean: TestScheduler) -> None:
    silent = [on_next(0.01, MessageStart())]
    client = ScriptedClient(clean, models={"scripted": [silent], "backup": [silent]})
    handler = StreamHandler(
        retry=RetryPolicy(max_retries=0),
        timeouts=TimeoutPolicy(first_event=None, per_event=None, total=30.0, rescue=False),
    )
    engine = TurnEngine(
        client,
        handler=handler,
        hedge=HedgePolicy((HedgeTarget("backup"),), delay=2.0),
        scheduler=clean,
    )
    engine.history.append(Message.user("hi"))
    with pytest.raises(Exception, match="total") as raised:
        await run_virtual(clean, engine.turn())
    assert type(raised.value).__name__ == "StreamTimeoutError"
    assert client.spans == [[0.0, 30.0], [2.0, 30.0]]
    log = engine.session.runs[-1].turns[-1].attempt_log
    assert sorted(a.outcome for a in log) == ["StreamTimeoutError", "StreamTimeoutError"]


async def test_same_turn_failover_skips_the_models_the_race_tried(clean: TestScheduler) -> None:
    # the primary wins the race against backup, then fails definitively (404 mid-stream)
    dies = [
        on_next(0.01, MessageStart()),
        on_next(3.0, PartStart(0)),
        on_next(3.0, Delta(0, "x")),
        on_error(3.1, NotFoundError("HTTP 404: gone", status_code=404)),
    ]
    client = ScriptedClient(
        clean,
        models={
            "primary": [dies],
            "backup": [slow("b", 40.0)],
            "backup2": [timeline(reply("from backup2"))],
        },
    )
    fallback = FallbackManager("primary", ["backup", "backup2"])
    policy = HedgePolicy((HedgeTarget("backup"),), delay=2.0)
    engine, _, _ = engine_for(client, clean, policy, fallback=fallback, failover=True)
    result = await run_virtual(clean, engine.turn())
    assert result.message.text == "from backup2" and result.model == "backup2"
    assert client.models_asked == ["primary", "backup", "backup2"]


async def test_a_target_whose_breaker_is_open_is_skipped(clean: TestScheduler) -> None:
    client = ScriptedClient(
        clean, models={"primary": [slow("p", 5.0)], "backup": [timeline(reply("b"))]}
    )
    fallback = FallbackManager("primary", ["backup"])
    fallback.set_fallback_available("backup", False)  # out of rotation: its breaker is open
    engine, observer, _ = engine_for(
        client, clean, HedgePolicy((HedgeTarget("backup"),), delay=2.0), fallback=fallback
    )
    result = await run_virtual(clean, engine.turn())
    assert result.message.text == "p" and client.models_asked == ["primary"]
    skipped = observer.calls_of("on_hedge_skipped")
    assert [(s["hedge_model"], s["reason"]) for s in skipped] == [("backup", "breaker_open")]


def test_hedge_is_refused_where_it_cannot_act(scheduler: TestScheduler) -> None:
    client = ScriptedClient(scheduler)
    with pytest.raises(ConfigError, match="non_streaming"):
        TurnEngine(client, hedge=HedgePolicy((HedgeTarget("b"),)), mode="non_streaming")
    with pytest.raises(ConfigError, match="HedgePolicy"):
        TurnEngine(client, hedge=HedgeTarget("b"))  # pyright: ignore[reportArgumentType]


def test_a_hedge_that_could_only_ask_the_primary_itself_is_refused(
    scheduler: TestScheduler,
) -> None:
    """A target that is the primary's own request (its client and model) is never sent: the
    race counts it tried. Such a policy was accepted and silently did nothing."""
    client = ScriptedClient(scheduler)  # serves "scripted"
    own = RequestOptions(model="mine")
    for targets, options in [
        ((HedgeTarget("scripted"),), None),
        ((HedgeTarget(client=client),), None),
        ((HedgeTarget("scripted", client=client), HedgeTarget("scripted")), None),
        ((HedgeTarget("mine"),), own),
    ]:
        with pytest.raises(ConfigError, match="the primary's own request"):
            TurnEngine(client, hedge=HedgePolicy(targets), request_options=options)
    # one target that can act is enough; another client, or the model beside a routed primary
    TurnEngine(client, hedge=HedgePolicy((HedgeTarget("scripted"), HedgeTarget("b"))))
    TurnEngine(client, hedge=HedgePolicy((HedgeTarget(client=ScriptedClient(scheduler)),)))
    TurnEngine(
        client,
        fallback=FallbackManager("primary", ["scripted"]),
        hedge=HedgePolicy((HedgeTarget("scripted"),)),
    )


async def test_the_same_model_on_another_client_is_a_target(clean: TestScheduler) -> None:
    primary = ScriptedClient(clean, models={"m": [slow("from the first endpoint", 30.0)]})
    other = ScriptedClient(
        clean,
        models={"m": [timeline(reply("from the second endpoint"), start=0.3)]},
        base_url="http://second.invalid",
    )
    engine, observer, shown = engine_for(
        primary,
        clean,
        HedgePolicy((HedgeTarget(client=other),), delay=1.5),
        request_options=RequestOptions(model="m"),
    )
    result = await run_virtual(clean, engine.turn())
    assert result.message.text == "from the second endpoint" and result.model == "m"
    assert "".join(shown) == "from the second endpoint"
    assert primary.models_asked == ["m"] and other.models_asked == ["m"]
    assert other.spans[0][0] == 1.5
    assert [a.outcome for a in result.attempt_log] == ["hedge_lost", "served"]
    won = observer.calls_of("on_hedge_won")
    assert [(w["model"], w["hedge_model"]) for w in won] == [("m", "m")]


@pytest.mark.parametrize(
    "error",
    [
        RateLimitError("HTTP 429", status_code=429, retry_after=60.0),
        OverloadedError("HTTP 529", status_code=529),
        ServerError("HTTP 500", status_code=500),
        ReadError("connection dropped"),
    ],
)
async def test_a_primary_failing_before_the_delay_sends_the_hedge_at_once(
    clean: TestScheduler, error: Exception
) -> None:
    client = ScriptedClient(
        clean,
        models={
            "scripted": [[on_next(0.01, MessageStart()), on_error(0.3, error)]],
            "backup": [timeline(reply("the backup"), start=0.1)],
        },
    )
    engine, observer, _ = engine_for(
        client, clean, HedgePolicy((HedgeTarget("backup"),), delay=5.0)
    )
    result = await run_virtual(clean, engine.turn())
    assert result.message.text == "the backup" and result.model == "backup"
    assert client.spans[1][0] == 0.3  # at the failure, not at the 5 s delay
    assert [h["reason"] for h in observer.calls_of("on_hedge")] == ["error"]
    assert [a.outcome for a in result.attempt_log] == [type(error).__name__, "served"]
    assert observer.calls_of("on_attempt_reset") == []  # nothing was shown before the win


class _CancelsOnce(Observer):
    """Cancels its engine from inside the first call of one callback (a user's stop button
    wired to an observer)."""

    def __init__(self, callback: str) -> None:
        self.engine: TurnEngine | None = None
        setattr(self, callback, self._cancel_once)
        self._fired = False

    def _cancel_once(self, **_: object) -> None:
        if not self._fired and self.engine is not None:
            self._fired = True
            self.engine.cancel("stop")


RACE_CALLBACKS = {
    # the primary fails before the delay: its on_attempt_end comes while the race starts the
    # hedge (before: IndexError in the race's dispose, the turn never ended)
    "failed": (
        "on_attempt_end",
        [[on_next(0.01, MessageStart()), on_error(0.3, ServerError("HTTP 500"))]],
        [slow("b", 30.0)],
    ),
    # the loser's on_attempt_end, as the race cuts it for the winner (before: the winner's
    # connection stayed open after the turn)
    "cut": ("on_attempt_end", [slow("p", 30.0)], [slow("b", 3.0)]),
    # the primary's own start (before: its end reported twice)
    "started": ("on_attempt_start", [slow("p", 30.0)], [slow("b", 30.0)]),
    # the hedge's announcement (before: the hedge sent after the cancel)
    "hedge": ("on_hedge", [slow("p", 30.0)], [slow("b", 30.0)]),
}


@pytest.mark.parametrize("case", list(RACE_CALLBACKS))
async def test_a_cancel_from_inside_a_racers_callback_ends_the_turn_at_once(
    clean: TestScheduler, case: str
) -> None:
    callback, primary, backup = RACE_CALLBACKS[case]
    client = ScriptedClient(clean, models={"scripted": primary, "backup": backup})
    canceller, observer = _CancelsOnce(callback), RecordingObserver(requests=True)
    engine = TurnEngine(
        client,
        handler=HANDLER,
        hedge=HedgePolicy((HedgeTarget("backup"),), delay=2.0),
        observers=[observer, canceller],
        scheduler=clean,
    )
    canceller.engine = engine
    engine.history.append(Message.user("hi"))
    with pytest.raises(Cancelled, match="stop"):
        await run_virtual(clean, engine.turn(), limit=50.0)
    assert float(clean.clock) < 30.0  # at the cancel, not when a racer answered
    names = observer.names()
    assert names.count("on_attempt_start") == names.count("on_attempt_end")
    assert names.count("on_turn_start") == names.count("on_turn_end") == 1
    assert all(end is not None for _, end in client.spans)  # every request sent was closed
    sent = 2 if case == "cut" else 1  # (cut: the hedge went out at 2 s, before the cancel)
    assert len(client.models_asked) == sent  # nothing went out after the cancel
    assert (await run_virtual(clean, engine.turn(), limit=100.0)).model in ("scripted", "backup")


@pytest.mark.parametrize(
    ("primary_error", "hedge_error", "retry_at"),
    [
        # the primary said "come back in 30 s": its retry waits for it, whatever the hedge said
        # (before: the hedge's 500 went to the ladder and the primary was asked again at 1.5 s)
        (
            RateLimitError("HTTP 429", status_code=429, retry_after=30.0),
            ServerError("HTTP 500", status_code=500),
            30.5,
        ),
        # a hedge's 429 is its own quota's: the primary's 500 is retried after the backoff
        # (before: the primary waited out the hedge's 30 s)
        (
            ServerError("HTTP 500", status_code=500),
            RateLimitError("HTTP 429", status_code=429, retry_after=30.0),
            1.5,
        ),
    ],
)
async def test_every_racer_failing_retries_the_primary_on_the_primarys_own_error(
    clean: TestScheduler, primary_error: Exception, hedge_error: Exception, retry_at: float
) -> None:
    client = ScriptedClient(
        clean,
        models={
            "scripted": [
                [on_next(0.01, MessageStart()), on_error(0.3, primary_error)],
                timeline(reply("second try")),
            ],
            "backup": [[on_next(0.01, MessageStart()), on_error(0.2, hedge_error)]],
        },
    )
    engine, observer, _ = engine_for(
        client, clean, HedgePolicy((HedgeTarget("backup"),), delay=5.0)
    )
    result = await run_virtual(clean, engine.turn())
    assert result.message.text == "second try" and result.model == "scripted"
    assert client.models_asked == ["scripted", "backup", "scripted"]
    # the primary fails at 0.3 (the hedge goes out then), the hedge at 0.5; the retry: the
    # ladder's answer to the primary's error, from 0.5 (1 s backoff, or the 30 s Retry-After)
    assert client.spans[2][0] == pytest.approx(retry_at)
    assert [a.outcome for a in result.attempt_log] == [
        type(primary_error).__name__,
        type(hedge_error).__name__,
        "served",
    ]
    names = observer.names()
    assert names.count("on_attempt_start") == names.count("on_attempt_end") == 3


async def test_a_hedges_fatal_error_is_the_hedges_failure_not_the_primarys(
    clean: TestScheduler,
) -> None:
    """The backup's 401 ends the race (no other model would fix it) and fails the turn; the
    primary only lost the race, and a loser is neutral for the breaker: the failure is the
    backup's, which takes its strikes and goes out of rotation, so later turns skip it. Before:
    each such turn counted against the primary, and the third tripped the breaker over to the
    very backup that answered 401."""
    client = ScriptedClient(
        clean,
        models={
            "primary": [slow("p", 5.0)],
            "backup": [[on_next(0.01, MessageStart()), on_error(0.1, AuthenticationError("401"))]],
        },
    )
    fallback = FallbackManager("primary", ["backup"])
    engine, observer, _ = engine_for(
        client, clean, HedgePolicy((HedgeTarget("backup"),), delay=2.0), fallback=fallback
    )
    failed = 0
    while "backup" not in fallback.failed_fallbacks():
        with pytest.raises(AuthenticationError):
            await run_virtual(clean, engine.turn())
        failed += 1
        turn = engine.session.runs[-1].turns[-1]
        assert [(a.model, a.outcome) for a in turn.attempt_log] == [
            ("primary", "hedge_lost"),
            ("backup", "AuthenticationError"),
        ]
        assert turn.model == "backup"
        assert fallback.state is BreakerState.PRIMARY and fallback.consecutive_failures == 0
        assert failed < 5, "the backup's failures never struck it"
    result = await run_virtual(clean, engine.turn())  # the hedge skips it now: the primary serves
    assert result.model == "primary" and result.message.text == "p"
    assert observer.calls_of("on_hedge_skipped")[-1]["reason"] == "breaker_open"
    assert observer.calls_of("on_fallback") == []
    assert [c["model"] for c in observer.calls_of("on_stream_failure")] == ["backup"] * failed


async def test_a_fatal_error_later_in_the_instant_of_an_answer_does_not_take_it_back(
    clean: TestScheduler,
) -> None:
    """The primary's first text and the hedge's 401 come at the same instant, the text first:
    the primary answered, and serves (before: the turn failed with the hedge's 401 and the
    primary, which had answered, was recorded as the race's loser; a millisecond later, the
    primary served)."""
    client = ScriptedClient(
        clean,
        models={
            "scripted": [slow("from the primary", 3.0)],
            "backup": [[on_next(0.01, MessageStart()), on_error(1.0, AuthenticationError("401"))]],
        },
    )
    engine, _, shown = engine_for(client, clean, HedgePolicy((HedgeTarget("backup"),), delay=2.0))
    result = await run_virtual(clean, engine.turn())
    assert result.message.text == "".join(shown) == "from the primary"
    assert [(a.model, a.outcome) for a in result.attempt_log] == [
        ("backup", "AuthenticationError"),
        ("scripted", "served"),
    ]
