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

import asyncio
from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxturn import (
    AnthropicClient,
    BreakerState,
    Cancelled,
    FallbackManager,
    Message,
    NotFoundError,
    Ping,
    RateLimitEscalation,
    RecordingObserver,
    RescueFailed,
    RescueTimeoutError,
    RetryPolicy,
    ServerError,
    StreamHandler,
    StreamTimeoutError,
    TimeoutPolicy,
    TurnEngine,
)
from rxturn.testing import MockRequest, MockResponse, MockTransport
from rxturn.testing.virtual import (
    HANG,
    Later,
    ScriptedClient,
    on_completed,
    on_next,
    reply,
    run_virtual,
    timeline,
)


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


# -- the transport ladder --------------------------------------------------------------------------


async def test_the_default_transport_ladder_makes_four_attempts_then_the_rescue(
    clean: TestScheduler,
) -> None:
    # Every attempt fails 0.01 s after it starts; retry k waits 0.1·2^k s × (1 ± 10 %).
    client = ScriptedClient(
        clean, [timeline([], end=ServerError("HTTP 500"))], create=[Message.assistant("rescued")]
    )
    observer = RecordingObserver()
    engine = TurnEngine(client, handler=StreamHandler(), observers=[observer], scheduler=clean)

    result = await run_virtual(clean, engine.run("hi"))

    assert result.text == "rescued"
    turn = engine.session.runs[0].turns[0]
    assert (turn.attempts, turn.rescued, turn.error) == (4, True, None)
    assert [(a.kind, a.outcome) for a in turn.attempt_log] == [
        ("stream", "ServerError"),
        ("stream", "ServerError"),
        ("stream", "ServerError"),
        ("stream", "ServerError"),
        ("rescue", "served"),
    ]
    spans = [(start, end) for start, end in client.spans if start is not None and end is not None]
    assert len(spans) == 4
    waits = [start - end for (start, _), (_, end) in zip(spans[1:], spans[:-1], strict=True)]
    for k, wait in enumerate(waits):
        assert 0.09 * 2**k <= wait <= 0.11 * 2**k, (k, wait)
    resets = [kw for name, kw in observer.calls if name == "on_attempt_reset"]
    assert len(resets) == 3  # before attempts 2, 3 and 4; never before the first
    assert len(client.create_calls) == 1


# -- the rate-limit ladder over HTTP ---------------------------------------------------------------

RATE_LIMITED = b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}'
SSE_REPLY = [
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"m",'
    b'"usage":{"input_tokens":3,"output_tokens":0}}}\n\n',
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"Hello"}}\n\n',
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":1}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
]


def over_http(
    clean: TestScheduler, transport: MockTransport, **engine_options: Any
) -> tuple[AnthropicClient, TurnEngine]:
    client = AnthropicClient("m", api_key="k", base_url="http://mock.invalid", transport=transport)
    engine = TurnEngine(client, handler=StreamHandler(), scheduler=clean, **engine_options)
    return client, engine


async def test_a_429_storm_with_a_huge_retry_after_waits_60_s_and_escalates_on_hit_4(
    clean: TestScheduler,
) -> None:
    transport = MockTransport(
        MockResponse(429, headers={"Retry-After": str(10**12)}, chunks=[RATE_LIMITED])
    )
    client, engine = over_http(clean, transport)
    async with client:
        with pytest.raises(RateLimitEscalation) as caught:
            await run_virtual(clean, engine.run("hi"))

    assert (caught.value.attempts, caught.value.retry_after) == (4, 10.0**12)
    turn = engine.session.runs[0].turns[0]
    assert turn.error == "RateLimitEscalation"
    # hits 1-3 wait the hint capped at 60 s; hit 4 escalates, never rescued
    assert [(a.kind, a.started) for a in turn.attempt_log] == [
        ("stream", 0.0),
        ("stream", 60.0),
        ("stream", 120.0),
        ("stream", 180.0),
    ]
    assert [r.stream for r in transport.requests] == [True] * 4  # no non-streaming request
    assert all(r.closed for r in transport.responses)


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [
        (None, 5.0),  # no hint: the default 5 s
        ("-5", 5.0),  # a negative hint is no hint
        ("1e3", 5.0),  # nor is an exponent
        ("0", 0.0),
        (" 7 ", 7.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: at once
        ("Fri, 01 Jan 2100 00:00:00 GMT", 60.0),  # a date decades ahead: capped at 60 s
    ],
)
async def test_the_wait_after_a_429_follows_its_retry_after(
    clean: TestScheduler, retry_after: str | None, wait: float
) -> None:
    headers = {} if retry_after is None else {"Retry-After": retry_after}
    answers = [
        MockResponse(429, headers=headers, chunks=[RATE_LIMITED]),
        MockResponse(200, headers={"content-type": "text/event-stream"}, chunks=SSE_REPLY),
    ]
    transport = MockTransport(lambda request: answers[len(transport.requests) - 1])
    client, engine = over_http(clean, transport)
    async with client:
        result = await run_virtual(clean, engine.run("hi"))

    assert result.text == "Hello"
    turn = engine.session.runs[0].turns[0]
    assert [(a.outcome, a.started) for a in turn.attempt_log] == [
        ("RateLimitError", 0.0),
        ("served", wait),
    ]


# -- deadlines -------------------------------------------------------------------------------------


async def never_answer(request: MockRequest) -> MockResponse:
    await asyncio.Event().wait()  # accepts the request and never sends a header
    raise AssertionError("unreachable")


async def test_a_server_that_never_answers_meets_every_deadline_in_turn(
    clean: TestScheduler,
) -> None:
    # Attempt 1: two 120 s first-event expiries (240 s); attempt 2 after ~0.1 s is cut by the
    # 300 s total deadline; the rescue gets a fresh 120 s and is cut at 420 s.
    transport = MockTransport(never_answer)
    client, engine = over_http(clean, transport)
    async with client:
        with pytest.raises(RescueFailed) as caught:
            await run_virtual(clean, engine.run("hi"))

    stream_error = caught.value.stream_error
    assert isinstance(stream_error, StreamTimeoutError) and stream_error.kind == "total"
    assert isinstance(caught.value.rescue_error, RescueTimeoutError)
    log = engine.session.runs[0].turns[0].attempt_log
    assert [(a.kind, a.outcome) for a in log] == [
        ("stream", "StreamTimeoutError"),
        ("stream", "StreamTimeoutError"),
        ("rescue", "RescueTimeoutError"),
    ]
    assert log[0].ended == pytest.approx(240.0)
    assert 240.09 <= log[1].started <= 240.11
    assert (log[1].ended, log[2].started, log[2].ended) == pytest.approx((300.0, 300.0, 420.0))
    assert [r.stream for r in transport.requests] == [True, True, False]
    assert float(clean.clock) == pytest.approx(420.0)


async def test_a_stream_gone_quiet_is_cut_by_the_total_deadline_not_the_idle_limit(
    clean: TestScheduler,
) -> None:
    # Three events, then silence: ten idle expiries of 180 s would take 1800 s, so the 300 s
    # total deadline ends the attempt; it is never retried and the rescue serves.
    client = ScriptedClient(
        clean, [timeline(reply("a b c")[:3], end=None)], create=[Message.assistant("rescued")]
    )
    engine = TurnEngine(client, handler=StreamHandler(), scheduler=clean)

    result = await run_virtual(clean, engine.run("hi"))

    assert result.text == "rescued"
    assert outcomes(engine) == [
        ("stream", "StreamTimeoutError", 0.0, 300.0),
        ("rescue", "served", 300.0, 300.0),
    ]


async def test_pings_keep_an_idle_stream_alive(clean: TestScheduler) -> None:
    # Any event resets the count of consecutive idle expiries, a keep-alive included: pings
    # every 0.9 s hold a 1 s idle limit (two expiries in a row fail the attempt) for 10 s.
    events = reply("still here")
    script = [
        on_next(0.01, events[0]),
        *(on_next(round(0.01 + 0.9 * i, 6), Ping()) for i in range(1, 12)),
        *(on_next(round(10.5 + 0.01 * i, 6), event) for i, event in enumerate(events[1:])),
        on_completed(11.0),
    ]
    client = ScriptedClient(clean, [script])
    timeouts = TimeoutPolicy(first_event=1.0, per_event=1.0, max_consecutive_timeouts=2)
    engine = TurnEngine(client, handler=StreamHandler(timeouts=timeouts), scheduler=clean)

    result = await run_virtual(clean, engine.run("hi"))

    assert result.text == "still here"
    assert outcomes(engine) == [("stream", "served", 0.0, 11.0)]


# -- cancellation at each phase boundary -----------------------------------------------------------


def backoff_turn(clean: TestScheduler) -> tuple[ScriptedClient, TurnEngine, FallbackManager]:
    # Attempt 1 fails at 0.01; the backoff (1 s, no jitter) ends at 1.01, when attempt 2 starts;
    # its reply's seven events arrive at 1.02 … 1.08 and it completes at 1.09.
    client = ScriptedClient(
        clean, [timeline([], end=ServerError("HTTP 500")), timeline(reply("hello there"))]
    )
    breaker = FallbackManager("scripted", ["backup"])
    handler = StreamHandler(retry=RetryPolicy(base_delay=1.0, jitter=0.0))
    engine = TurnEngine(client, handler=handler, fallback=breaker, scheduler=clean)
    return client, engine, breaker


@pytest.mark.parametrize(
    ("at", "requests", "outcomes_seen"),
    [
        (0.0, 1, ["cancelled"]),  # as the first request starts
        (0.01, 1, ["cancelled"]),  # the instant attempt 1 fails: the cancel wins
        (0.5, 1, ["ServerError"]),  # during the backoff
        (1.01, 1, ["ServerError"]),  # the instant the backoff ends: no second request
        (1.02, 2, ["ServerError", "cancelled"]),  # at the retry's first event
        (1.08, 2, ["ServerError", "cancelled"]),  # at its MessageStop
        (1.09, 2, ["ServerError", "cancelled"]),  # the instant it completes
    ],
)
async def test_a_cancel_at_each_phase_boundary_is_a_clean_stop(
    clean: TestScheduler, at: float, requests: int, outcomes_seen: list[str]
) -> None:
    client, engine, breaker = backoff_turn(clean)
    observer = RecordingObserver()
    engine.observers.add(observer)
    clean.schedule_absolute(at, lambda *_: engine.cancel())

    with pytest.raises(Cancelled):
        await run_virtual(clean, engine.run("hi"))

    assert len(client.stream_calls) == requests
    for _, disposed_at in client.spans:  # every request was closed, at the cancel at the latest
        assert disposed_at is not None and disposed_at <= at + 1e-9
    turn = engine.session.runs[0].turns[0]
    assert [a.outcome for a in turn.attempt_log] == outcomes_seen
    assert (turn.error, turn.output) == ("Cancelled", "")
    # no breaker change and no failure event: on_turn_end still says it was cancelled
    assert (breaker.state, breaker.consecutive_failures) == (BreakerState.PRIMARY, 0)
    names = [name for name, _ in observer.calls if name in LIFECYCLE]
    assert names == ["on_run_start", "on_turn_start", "on_turn_end", "on_run_end"]
    end = next(kw for name, kw in observer.calls if name == "on_turn_end")
    assert (end["success"], end["error"]) == (False, "cancelled")
    assert engine.history == []  # a cancelled run adds nothing

    # the cancel is re-armed: the next run is served
    assert (await run_virtual(clean, engine.run("again"))).text == "hello there"


LIFECYCLE = {
    "on_run_start",
    "on_turn_start",
    "on_stream_success",
    "on_stream_failure",
    "on_fallback",
    "on_model_switched",
    "on_response",
    "on_turn_end",
    "on_run_end",
}


# -- the breaker's events, in order ----------------------------------------------------------------


async def test_the_breaker_trips_on_the_third_failure_with_events_in_order(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(
        clean,
        models={
            "primary": [timeline([], end=ServerError("HTTP 500"))],
            "backup": [timeline(reply("from backup"))],
        },
    )
    breaker = FallbackManager("primary", ["backup"])
    observer = RecordingObserver()
    engine = TurnEngine(client, fallback=breaker, observers=[observer], scheduler=clean)

    def seen() -> list[tuple[str, Any, Any]]:
        calls = [
            (name, kw.get("from_model", kw.get("model")), kw.get("to_model"))
            for name, kw in observer.calls
            if name in LIFECYCLE - {"on_run_start", "on_run_end"}
        ]
        observer.calls.clear()
        return calls

    for _ in range(2):
        with pytest.raises(ServerError):
            await run_virtual(clean, engine.run("q"))
        assert seen() == [
            ("on_turn_start", None, None),
            ("on_stream_failure", "primary", None),
            ("on_turn_end", None, None),
        ]
        assert breaker.state is BreakerState.PRIMARY
    with pytest.raises(ServerError):
        await run_virtual(clean, engine.run("q"))
    assert seen() == [
        ("on_turn_start", None, None),
        ("on_fallback", "primary", "backup"),  # the trip, before the failure event
        ("on_stream_failure", "primary", None),
        ("on_turn_end", None, None),
    ]
    assert breaker.state is BreakerState.FALLBACK

    result = await run_virtual(clean, engine.run("q"))
    assert result.text == "from backup"
    assert seen() == [
        ("on_model_switched", "primary", "backup"),  # before the turn starts
        ("on_turn_start", None, None),
        ("on_stream_success", "backup", None),
        ("on_response", None, None),
        ("on_turn_end", None, None),
    ]
    failed = engine.session.runs[2].turns[0]
    assert (failed.model, failed.error, failed.output) == ("primary", "ServerError", "")


async def test_a_total_deadline_reached_during_a_backoff_sends_no_doomed_request(
    clean: TestScheduler,
) -> None:
    # Attempts fail 0.01 s after they start and wait 10 s: at 0, 10.01 and 20.02; the third
    # wait is clamped to the 25 s total deadline. Whereas a ladder that sleeps, then checks the
    # deadline, would open one more stream at 25 s only to fail it, rxturn's total deadline is
    # one timer: it ends the backoff and the rescue starts, with no fourth request.
    client = ScriptedClient(
        clean, [timeline([], end=ServerError("HTTP 500"))], create=[Message.assistant("rescued")]
    )
    handler = StreamHandler(
        timeouts=TimeoutPolicy(first_event=20.0, total=25.0),
        retry=RetryPolicy(max_retries=100, base_delay=10.0, max_delay=10.0, jitter=0.0),
    )
    engine = TurnEngine(client, handler=handler, scheduler=clean)

    result = await run_virtual(clean, engine.run("hi"))

    assert result.text == "rescued"
    assert [start for start, _ in client.spans] == pytest.approx([0.0, 10.01, 20.02])
    assert outcomes(engine)[-1] == ("rescue", "served", pytest.approx(25.0), pytest.approx(25.0))


# -- same-turn failover ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("primary", "rescue_cut_at"),
    [
        # 4 attempts fail by 0.8 s; the rescue has the rest of the 300 s total deadline
        (timeline([], end=ServerError("HTTP 500")), 300.0),
        # silent: 240 s + the total deadline at 300 s; the rescue gets a fresh 120 s
        (timeline([], end=None), 420.0),
    ],
    ids=["server-errors", "silent"],
)
async def test_a_rescue_cut_by_its_deadline_before_a_failover_is_audited_as_such(
    clean: TestScheduler, primary: Any, rescue_cut_at: float
) -> None:
    client = ScriptedClient(
        clean,
        models={"primary": [primary], "backup": [timeline(reply("from backup"))]},
        create=[HANG],
    )
    engine = TurnEngine(
        client,
        handler=StreamHandler(),
        fallback=FallbackManager("primary", ["backup"]),
        failover=True,
        scheduler=clean,
    )

    result = await run_virtual(clean, engine.run("hi"))

    assert (result.text, result.turns[0].model) == ("from backup", "backup")
    log = engine.session.runs[0].turns[0].attempt_log
    rescue = next(a for a in log if a.kind == "rescue")
    # the deadline cut it, nobody cancelled it: the same outcome as without failover
    assert (rescue.model, rescue.outcome) == ("primary", "RescueTimeoutError")
    assert rescue.ended == pytest.approx(rescue_cut_at)
    assert (log[-1].model, log[-1].outcome) == ("backup", "served")
    assert log[-1].started == pytest.approx(rescue_cut_at)


@pytest.mark.parametrize(("budget", "said"), [(1800.0, "1800s"), (299.75, "299.75s")])
async def test_a_rescue_timeout_says_its_budget_in_plain_seconds(
    clean: TestScheduler, budget: float, said: str
) -> None:
    # A silent stream meets the total deadline; the rescue's fresh budget is the first-event
    # timeout, and the error says how long that was, as every other rxturn timeout does.
    client = ScriptedClient(clean, [timeline([], end=None)], create=[HANG])
    timeouts = TimeoutPolicy(first_event=budget, total=budget)
    engine = TurnEngine(client, handler=StreamHandler(timeouts=timeouts), scheduler=clean)

    with pytest.raises(RescueFailed) as caught:
        await run_virtual(clean, engine.run("hi"))

    assert isinstance(caught.value.rescue_error, RescueTimeoutError)
    assert str(caught.value.rescue_error).endswith(f"exceeded its deadline, {said})")


async def test_a_cancel_at_the_instant_the_primary_fails_sends_nothing_to_the_backup(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(
        clean,
        models={
            "primary": [timeline([], end=NotFoundError("HTTP 404: no such model"))],
            "backup": [timeline(reply("from backup"))],
        },
    )
    breaker = FallbackManager("primary", ["backup"])
    observer = RecordingObserver()
    engine = TurnEngine(
        client, fallback=breaker, failover=True, observers=[observer], scheduler=clean
    )
    clean.schedule_absolute(0.01, lambda *_: engine.cancel())  # when the 404 arrives

    with pytest.raises(Cancelled):
        await run_virtual(clean, engine.run("hi"))

    assert client.models_asked == ["primary"]
    assert outcomes(engine) == [("stream", "cancelled", 0.0, 0.01)]
    assert [name for name, _ in observer.calls if name in LIFECYCLE] == [
        "on_run_start",
        "on_turn_start",
        "on_turn_end",
        "on_run_end",
    ]
    assert (breaker.state, breaker.consecutive_failures) == (BreakerState.PRIMARY, 0)
