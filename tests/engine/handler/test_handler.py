"""``StreamHandler.stream_turn``: every behavioural case of docs/behaviour.md §2, on virtual
time.

A :class:`ScriptedClient` plays one recorded timeline per attempt on a TestScheduler and a
scripted outcome for ``create()`` (the rescue). Each test asserts what a subscriber saw (events,
``AttemptReset`` marks, ``Fallback``), the typed error, how many ``stream()`` / ``create()``
calls were made, when, and (the ``clean`` fixture) that no timer or task outlives the turn.
Expected values come from the rules and defaults of docs/behaviour.md §2.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxturn.engine.handler import StreamHandler
from rxturn.errors import (
    Cancelled,
    InvalidToolInputError,
    RateLimitError,
    RateLimitEscalation,
    RescueFailed,
    ServerError,
    StreamTimeoutError,
    TruncatedStreamError,
    status_error,
)
from rxturn.events import (
    AttemptReset,
    Delta,
    Fallback,
    HandlerEvent,
    MessageDelta,
    PartStart,
    PartStop,
)
from rxturn.fold import INITIAL_STATE, fold_handler
from rxturn.messages import (
    Message,
    RequestOptions,
    ResponseFormat,
    StopReason,
    TextPart,
    ToolCallPart,
    Usage,
)
from rxturn.resilience.cancel import CancelToken
from rxturn.resilience.limiter import RateLimiter
from rxturn.resilience.policies import LimiterPolicy, RateLimitPolicy, RetryPolicy, TimeoutPolicy
from rxturn.testing.virtual import HANG, REQUEST, Later, Run, ScriptedClient, drive, reply, timeline

EXACT = RetryPolicy(jitter=0.0)  # 0.1, 0.2, 0.4 s: exact times in assertions
NO_RESCUE = TimeoutPolicy(rescue=False)
RESCUED = Message.assistant("rescued")


def make(**policies: Any) -> StreamHandler:
    policies.setdefault("retry", EXACT)
    return StreamHandler(rng=random.Random(7), **policies)


async def turn(
    scheduler: TestScheduler,
    client: ScriptedClient,
    handler: StreamHandler,
    *,
    options: RequestOptions | None = None,
    cancel: CancelToken | None = None,
    **kwargs: Any,
) -> Run:
    observable = handler.stream_turn(client, REQUEST, options, cancel, scheduler=scheduler)
    return await drive(scheduler, observable, cancel=cancel, **kwargs)


def fails(error: Exception, events: int = 0, at: float = 0.01) -> list[Any]:
    """An attempt that delivers the first ``events`` events of a reply, then fails."""
    return timeline(reply("partial words here")[:events], start=at, end=error)


def stalls(events: int = 0, step: float = 0.01) -> list[Any]:
    """An attempt that delivers ``events`` events, then goes silent forever."""
    return timeline(reply("stalled reply words")[:events], step=step, end=None)


def folded(run: Run) -> Message:
    state = INITIAL_STATE
    for item in run.values:
        assert isinstance(item, HandlerEvent), item
        state = fold_handler(state, item)
    return state.message()


# -- the happy path ---------------------------------------------------------------------------


async def test_happy_path_forwards_events_unwrapped(clean: TestScheduler) -> None:
    events = reply("Hello world", usage=Usage(input_tokens=3, output_tokens=2))
    client = ScriptedClient(clean, [timeline(events)])
    run = await turn(clean, client, make())
    assert run.completed
    assert run.values == events  # no AttemptReset, no Fallback, no wrapper
    assert len(client.stream_calls) == 1 and client.create_calls == []
    assert folded(run).text == "Hello world"


async def test_a_slow_but_healthy_stream_completes(clean: TestScheduler) -> None:
    # every gap (0.5 s) is under per_event (1 s); the whole reply takes ~5 s
    events = reply(" ".join(["w"] * 6))
    client = ScriptedClient(clean, [timeline(events, step=0.5)])
    handler = make(timeouts=TimeoutPolicy(first_event=1.0, per_event=1.0, total=30.0))
    run = await turn(clean, client, handler)
    assert run.completed and run.values == events
    assert len(client.stream_calls) == 1


# -- the transport ladder --------------------------------------------------------------------


async def test_a_failed_attempt_is_reset_and_retried(clean: TestScheduler) -> None:
    client = ScriptedClient(
        clean, [fails(ServerError("HTTP 500"), events=3), timeline(reply("second try"))]
    )
    run = await turn(clean, client, make())
    assert run.completed
    assert len(client.stream_calls) == 2
    assert [r.attempt for r in run.resets] == [2]
    # the reset comes after the failed attempt's events and before any of the retried one's
    values = run.values
    cut = values.index(run.resets[0])
    assert values[:cut] == reply("partial words here")[:3]
    assert values[cut + 1 :] == reply("second try")
    assert folded(run).text == "second try"  # the folded message never mixes attempts


async def test_internal_server_errors_get_four_attempts_then_the_rescue(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(clean, [fails(ServerError("HTTP 500: boom"))], create=[RESCUED])
    run = await turn(clean, client, make())
    assert run.completed
    assert len(client.stream_calls) == 4
    assert [r.attempt for r in run.resets] == [2, 3, 4]
    assert run.values[-1] == Fallback(RESCUED)
    assert run.fallbacks[0].stop_reason is StopReason.END_TURN
    assert run.fallbacks[0].usage is None
    assert len(client.create_calls) == 1
    # attempts at 0, 0.11, 0.32, 0.73 (fail 0.01 after start; waits 0.1, 0.2, 0.4)
    assert [span[0] for span in client.spans] == pytest.approx([0.0, 0.11, 0.32, 0.73])


async def test_the_transport_delay_is_exponential(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [fails(ServerError("HTTP 502"))])
    run = await turn(clean, client, make(timeouts=NO_RESCUE))
    assert isinstance(run.error, ServerError)
    assert getattr(run.error, "attempts", None) == 4
    assert [t for t, item in run.items if isinstance(item, AttemptReset)] == pytest.approx(
        [0.11, 0.32, 0.73]
    )


async def test_failure_surfaces_without_retries_and_rescue(clean: TestScheduler) -> None:
    error = ServerError("HTTP 500: API down")
    client = ScriptedClient(clean, [fails(error)])
    run = await turn(clean, client, make(retry=RetryPolicy(max_retries=0), timeouts=NO_RESCUE))
    assert run.error is error
    assert "API down" in str(run.error)
    assert getattr(run.error, "attempts", None) == 1


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (status_error(401, "Invalid API key"), "Invalid API key"),
        (status_error(403, "forbidden"), "HTTP 403"),
        (status_error(404, "model not found"), "HTTP 404"),
        (status_error(400, "bad request"), "HTTP 400"),
        (status_error(422, "unprocessable"), "HTTP 422"),
        (status_error(400, "prompt is too long: context length exceeded"), "context"),
    ],
    ids=["401", "403", "404", "400", "422", "context-overflow"],
)
async def test_permanent_errors_are_neither_retried_nor_rescued(
    clean: TestScheduler, error: Exception, text: str
) -> None:
    client = ScriptedClient(clean, [fails(error)], create=[RESCUED])
    run = await turn(clean, client, make())
    assert run.error is error and text in str(run.error)
    assert len(client.stream_calls) == 1
    assert client.create_calls == []
    assert run.resets == []


async def test_a_cancelled_stream_is_not_retried(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [fails(Cancelled("stopped"))], create=[RESCUED])
    run = await turn(clean, client, make())
    assert isinstance(run.error, Cancelled)
    assert len(client.stream_calls) == 1 and client.create_calls == []


async def test_a_client_failing_synchronously_goes_through_the_ladder(
    clean: TestScheduler,
) -> None:
    class Broken(ScriptedClient):
        def stream(self, request: Any, options: Any = None) -> Any:
            self.stream_calls.append((request, options))
            raise ServerError("HTTP 500: sync")

    client = Broken(clean, [])
    run = await turn(clean, client, make(timeouts=NO_RESCUE))
    assert isinstance(run.error, ServerError)
    assert len(client.stream_calls) == 4


# -- attempt failures found by the guard -------------------------------------------------------


def _bad_tool_attempt() -> list[Any]:
    events = [
        reply("ok")[0],
        PartStart(0, "tool_call", id="call_1", name="lookup"),
        Delta(0, '{"broken', "tool_json"),
        PartStop(0),
    ]
    return timeline(events)


async def test_invalid_tool_json_fails_each_attempt_with_context(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [_bad_tool_attempt()])
    run = await turn(clean, client, make(timeouts=NO_RESCUE))
    assert isinstance(run.error, InvalidToolInputError)
    assert "invalid tool input JSON" in str(run.error)
    assert getattr(run.error, "attempts", None) == 4
    assert len(run.events) == 12  # 3 good events x 4 attempts; the bad PartStop never passes
    assert not any(isinstance(e, PartStop) for e in run.events)


async def test_invalid_tool_json_with_rescue_enabled_gets_the_ladder(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(clean, [_bad_tool_attempt()], create=[RESCUED])
    run = await turn(clean, client, make())
    assert run.completed and run.values[-1] == Fallback(RESCUED)
    assert len(client.stream_calls) == 4 and len(client.create_calls) == 1


async def test_a_truncated_stream_is_not_a_completed_turn(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [timeline(reply("cut off")[:-1])])
    run = await turn(clean, client, make(retry=RetryPolicy(max_retries=0), timeouts=NO_RESCUE))
    assert isinstance(run.error, TruncatedStreamError)
    assert "without a terminal event" in str(run.error)


async def test_a_truncated_stream_with_rescue_enabled_gets_the_ladder(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(clean, [timeline(reply("cut off")[:-1])], create=[RESCUED])
    run = await turn(clean, client, make())
    assert run.completed and run.values[-1] == Fallback(RESCUED)
    assert len(client.stream_calls) == 4 and len(client.create_calls) == 1
    assert {r.error_type for r in run.resets} == {"TruncatedStreamError"}


async def test_resets_carry_the_usage_the_failed_attempt_reported(clean: TestScheduler) -> None:
    usage = Usage(input_tokens=120, output_tokens=30)
    billed = [*reply("lost words")[:-1], MessageDelta("end_turn", usage)]  # no MessageStop
    client = ScriptedClient(clean, [timeline(billed), timeline(reply("kept"))])
    run = await turn(clean, client, make())
    assert run.completed
    assert run.resets == [
        AttemptReset(
            attempt=2,
            reason=str(TruncatedStreamError(len(billed))),
            error_type="TruncatedStreamError",
            usage=usage,
            events=len(billed),
        )
    ]


# -- the rate-limit ladder ---------------------------------------------------------------------


async def test_rate_limits_use_their_own_delay(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [fails(status_error(429, "slow down")), timeline(reply())])
    handler = make(
        retry=RetryPolicy(base_delay=2.0, max_delay=2.0, jitter=0.0),
        rate_limit=RateLimitPolicy(default_delay=0.05, max_delay=60.0),
    )
    run = await turn(clean, client, handler)
    assert run.completed
    assert client.spans[1][0] == pytest.approx(0.06)  # 0.05 s, not the 2 s transport delay


async def test_retry_after_is_honoured_up_to_the_cap(clean: TestScheduler) -> None:
    client = ScriptedClient(
        clean,
        [
            fails(status_error(529, "overloaded", retry_after=7.0)),
            fails(status_error(429, "x", retry_after=600.0)),
            timeline(reply()),
        ],
    )
    run = await turn(clean, client, make())
    assert run.completed
    assert [span[0] for span in client.spans] == pytest.approx([0.0, 7.01, 67.02])


async def test_the_default_ladder_escalates_on_the_fourth_hit_without_rescue(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(
        clean, [fails(status_error(429, "slow down", retry_after=60.0))], create=[RESCUED]
    )
    run = await turn(clean, client, make(timeouts=TimeoutPolicy(total=None)))
    assert isinstance(run.error, RateLimitEscalation)
    assert run.error.attempts == 4 and run.error.retry_after == 60.0
    assert "4 retries" in str(run.error)
    assert len(client.stream_calls) == 4
    assert client.create_calls == []
    assert run.end_time == pytest.approx(180.04)  # three 60 s backoffs, in virtual time


async def test_escalation_after_a_lower_threshold(clean: TestScheduler) -> None:
    client = ScriptedClient(
        clean, [fails(status_error(529, "x", retry_after=0.001))], create=[RESCUED]
    )
    run = await turn(clean, client, make(rate_limit=RateLimitPolicy(escalate_after=2)))
    assert isinstance(run.error, RateLimitEscalation)
    assert run.error.attempts == 3 and run.error.retry_after == 0.001
    assert len(client.stream_calls) == 3 and client.create_calls == []


async def test_the_hard_stop_takes_the_rescue_when_enabled(clean: TestScheduler) -> None:
    ladder = RateLimitPolicy(escalate_after=2, max_retries=2)
    client = ScriptedClient(
        clean, [fails(status_error(429, "x", retry_after=0.01))], create=[RESCUED]
    )
    run = await turn(clean, client, make(rate_limit=ladder))
    assert run.completed and run.values[-1] == Fallback(RESCUED)
    assert len(client.stream_calls) == 3 and len(client.create_calls) == 1


async def test_the_hard_stop_without_rescue_surfaces_the_rate_limit(clean: TestScheduler) -> None:
    ladder = RateLimitPolicy(escalate_after=2, max_retries=2)
    error = status_error(429, "x", retry_after=0.01)
    client = ScriptedClient(clean, [fails(error)])
    run = await turn(clean, client, make(rate_limit=ladder, timeouts=NO_RESCUE))
    assert run.error is error
    assert isinstance(run.error, RateLimitError)
    assert getattr(run.error, "attempts", None) == 3


async def test_rate_limit_and_transport_budgets_are_independent(clean: TestScheduler) -> None:
    limited = status_error(429, "x", retry_after=0.01)
    client = ScriptedClient(clean, [fails(ServerError("HTTP 500")), *[fails(limited)] * 4])
    run = await turn(clean, client, make())
    assert isinstance(run.error, RateLimitEscalation)
    assert run.error.attempts == 4  # the transport retry did not count
    assert len(client.stream_calls) == 5


async def test_rate_limit_budget_does_not_leak_across_turns(clean: TestScheduler) -> None:
    handler = make()
    for _ in range(2):
        client = ScriptedClient(clean, [fails(status_error(429, "x", retry_after=0.01))])
        run = await turn(clean, client, handler)
        assert isinstance(run.error, RateLimitEscalation) and run.error.attempts == 4
        assert len(client.stream_calls) == 4


async def test_a_rate_limit_after_partial_data_keeps_its_facts(clean: TestScheduler) -> None:
    events = [*reply("kept part")[:2], Delta(0, "kept"), PartStop(0)]
    client = ScriptedClient(
        clean, [timeline(events, end=status_error(429, "x", retry_after=0.5)), timeline(reply())]
    )
    run = await turn(clean, client, make())
    assert run.completed
    assert run.resets[0].events == 4
    assert run.resets[0].error_type == "RateLimitError"


async def test_a_rate_limit_delay_is_clamped_to_the_total_deadline(clean: TestScheduler) -> None:
    client = ScriptedClient(
        clean, [fails(status_error(429, "x", retry_after=600.0))], create=[RESCUED]
    )
    handler = make(timeouts=TimeoutPolicy(first_event=0.05, per_event=0.05, total=0.08))
    run = await turn(clean, client, handler)
    assert run.completed and run.values[-1] == Fallback(RESCUED)  # rescued, never escalated
    assert run.end_time == pytest.approx(0.08)
    assert len(client.stream_calls) == 1


async def test_a_rate_limit_delay_clamped_without_rescue_ends_in_a_total_timeout(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(clean, [fails(status_error(429, "x", retry_after=600.0))])
    handler = make(
        timeouts=TimeoutPolicy(first_event=0.05, per_event=0.05, total=0.08, rescue=False)
    )
    run = await turn(clean, client, handler)
    assert isinstance(run.error, StreamTimeoutError) and run.error.kind == "total"
    assert run.end_time == pytest.approx(0.08)


# -- timeouts -----------------------------------------------------------------------------------


async def test_an_empty_stream_fails_fast_after_the_lower_threshold(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [stalls(0)])
    handler = make(
        timeouts=TimeoutPolicy(
            first_event=0.01, per_event=0.01, total=10.0, max_consecutive_timeouts=10, rescue=False
        ),
        retry=RetryPolicy(max_retries=0),
    )
    run = await turn(clean, client, handler)
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.kind == "first_event" and run.error.consecutive == 2
    assert run.end_time == pytest.approx(0.02)  # 2 x 10 ms, well under 10 x 10 ms
    assert client.spans == [[0.0, pytest.approx(0.02)]]


async def test_an_idle_timeout_after_partial_data_says_so(clean: TestScheduler) -> None:
    closed_part = [*reply("kept")[:3], PartStop(0)]  # MessageStart, PartStart, Delta, PartStop
    client = ScriptedClient(clean, [timeline(closed_part, end=None)])
    handler = make(
        timeouts=TimeoutPolicy(
            first_event=1.0, per_event=1.0, total=10.0, max_consecutive_timeouts=1, rescue=False
        ),
        retry=RetryPolicy(max_retries=0),
    )
    run = await turn(clean, client, handler)
    assert isinstance(run.error, StreamTimeoutError)
    assert run.error.kind == "idle"
    assert run.error.partial is True and run.error.events == 4
    assert run.error.consecutive == 1


async def test_idle_timeouts_still_retry(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [stalls(2), timeline(reply("recovered"))])
    handler = make(
        timeouts=TimeoutPolicy(
            first_event=1.0, per_event=0.5, total=30.0, max_consecutive_timeouts=2
        )
    )
    run = await turn(clean, client, handler)
    assert run.completed
    assert len(client.stream_calls) == 2
    assert run.resets[0].error_type == "StreamTimeoutError"
    assert client.spans[0][1] == pytest.approx(0.02 + 2 * 0.5)


async def test_first_event_timeouts_re_arm_per_attempt(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [stalls(0)])
    handler = make(
        timeouts=TimeoutPolicy(first_event=120.0, per_event=180.0, total=None, rescue=False)
    )
    run = await turn(clean, client, handler)
    assert isinstance(run.error, StreamTimeoutError) and run.error.kind == "first_event"
    # each attempt: 2 x 120 s fast-fail; then waits 0.1, 0.2, 0.4 s
    assert [span[0] for span in client.spans] == pytest.approx([0.0, 240.1, 480.3, 720.7])
    assert run.end_time == pytest.approx(960.7)


async def test_a_mid_stream_total_timeout_takes_the_rescue(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [stalls(3, step=0.1)], create=[RESCUED])
    handler = make(timeouts=TimeoutPolicy(first_event=0.2, per_event=10.0, total=0.4))
    run = await turn(clean, client, handler)
    assert run.completed and run.values[-1] == Fallback(RESCUED)
    assert run.end_time == pytest.approx(0.4)
    assert len(client.stream_calls) == 1 and len(client.create_calls) == 1
    assert run.resets == []


async def test_a_mid_stream_total_timeout_is_never_retried(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [stalls(3, step=0.1)])
    handler = make(timeouts=TimeoutPolicy(first_event=0.2, per_event=10.0, total=0.4, rescue=False))
    run = await turn(clean, client, handler)
    assert isinstance(run.error, StreamTimeoutError) and run.error.kind == "total"
    assert run.error.events == 3  # real progress is reported
    assert getattr(run.error, "attempts", None) == 1
    assert len(client.stream_calls) == 1 and run.resets == []
    assert client.spans == [[0.0, pytest.approx(0.4)]]


async def test_the_total_timeout_covers_retried_attempts(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [fails(ServerError("HTTP 503x"), events=2, at=0.5)])
    handler = make(
        timeouts=TimeoutPolicy(first_event=1.0, per_event=1.0, total=2.0, rescue=False),
        retry=RetryPolicy(max_retries=10, jitter=0.0),
    )
    run = await turn(clean, client, handler)
    assert isinstance(run.error, StreamTimeoutError) and run.error.kind == "total"
    assert run.error.elapsed == pytest.approx(2.0)
    attempts = len(client.stream_calls)
    assert attempts >= 2
    assert run.error.events == len(run.events)  # the whole turn's events, all attempts


async def test_a_hanging_rescue_is_cut_by_a_fresh_first_event_budget(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(clean, [stalls(3, step=0.1)], create=[HANG])
    handler = make(timeouts=TimeoutPolicy(first_event=0.2, per_event=10.0, total=0.4))
    run = await turn(clean, client, handler)
    assert isinstance(run.error, RescueFailed)
    assert "deadline" in str(run.error.rescue_error)
    assert isinstance(run.error.stream_error, StreamTimeoutError)
    assert run.end_time == pytest.approx(0.6)  # 0.4 total + a fresh 0.2 budget
    assert len(client.create_calls) == 1


async def test_a_deadline_expiring_during_backoff_goes_to_the_rescue(
    clean: TestScheduler,
) -> None:
    # A ladder that sleeps and then checks the deadline opens one more (doomed) stream when the
    # backoff, clamped to the deadline, wakes up exactly at it: here the total deadline is one
    # timer, scheduled first, so it wins that instant and no request is wasted past the deadline.
    client = ScriptedClient(clean, [fails(ServerError("HTTP 500"), at=0.05)], create=[RESCUED])
    handler = make(
        timeouts=TimeoutPolicy(first_event=0.1, per_event=0.1, total=0.2),
        retry=RetryPolicy(base_delay=1.0, max_delay=1.0, jitter=0.0),
    )
    run = await turn(clean, client, handler)
    assert run.completed and run.values[-1] == Fallback(RESCUED)
    assert run.end_time == pytest.approx(0.2)
    assert len(client.stream_calls) == 1 and len(client.create_calls) == 1
    assert run.resets == []


# -- the rescue ---------------------------------------------------------------------------------


async def test_the_rescue_forwards_the_request_options(clean: TestScheduler) -> None:
    options = RequestOptions(
        model="routed-model",
        tool_choice="any",
        response_format=ResponseFormat(name="answer", schema={"type": "object"}),
    )
    client = ScriptedClient(clean, [fails(ServerError("x"))], create=[RESCUED])
    run = await turn(clean, client, make(), options=options)
    assert run.completed
    assert client.create_calls == [(REQUEST, options)]
    assert all(call == (REQUEST, options) for call in client.stream_calls)


async def test_the_rescue_keeps_tool_calls_stop_reason_and_usage(clean: TestScheduler) -> None:
    message = Message(
        id="msg_r",
        model="scripted",
        content=(TextPart("let me look"), ToolCallPart("call_9", "search", {"q": "rx"})),
        stop_reason=StopReason.MAX_TOKENS,
        usage=Usage(input_tokens=42, output_tokens=13),
    )
    client = ScriptedClient(clean, [fails(ServerError("x"), events=4)], create=[message])
    run = await turn(clean, client, make())
    assert run.values[-1] == Fallback(message)
    result = folded(run)  # the consumer adopts the rescued reply wholesale
    assert result == message
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert result.usage == Usage(input_tokens=42, output_tokens=13)
    assert result.tool_calls == [ToolCallPart("call_9", "search", {"q": "rx"})]


async def test_a_failed_rescue_reports_both_errors(clean: TestScheduler) -> None:
    stream_error = ServerError("HTTP 500: API down")
    rescue_error = ServerError("HTTP 502: still down")
    client = ScriptedClient(clean, [fails(stream_error)], create=[rescue_error])
    run = await turn(clean, client, make())
    assert isinstance(run.error, RescueFailed)
    assert run.error.stream_error is stream_error
    assert run.error.rescue_error is rescue_error
    assert getattr(run.error, "attempts", None) == 4


async def test_the_rescue_is_bounded_by_the_remaining_total_deadline(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(clean, [fails(ServerError("x"))], create=[HANG])
    handler = make(timeouts=TimeoutPolicy(first_event=5.0, per_event=5.0, total=10.0))
    run = await turn(clean, client, handler)
    assert isinstance(run.error, RescueFailed)
    assert "fallback request exceeded its deadline" in str(run.error)
    assert run.end_time == pytest.approx(10.0)


async def test_a_slow_rescue_within_its_deadline_succeeds(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [fails(ServerError("x"))], create=[Later(3.0, RESCUED)])
    run = await turn(clean, client, make())
    assert run.completed and run.values[-1] == Fallback(RESCUED)
    assert run.end_time == pytest.approx(0.74 + 3.0)


# -- cancellation and disposal -------------------------------------------------------------------


async def test_a_cancelled_token_never_calls_the_provider(clean: TestScheduler) -> None:
    token = CancelToken()
    token.cancel()
    client = ScriptedClient(clean, [timeline(reply())], create=[RESCUED])
    run = await turn(clean, client, make(), cancel=token)
    assert isinstance(run.error, Cancelled)
    assert client.stream_calls == [] and client.create_calls == []


async def test_cancel_mid_stream_closes_the_attempt(clean: TestScheduler) -> None:
    token = CancelToken()
    client = ScriptedClient(
        clean, [timeline(reply(" ".join(["w"] * 20)), step=0.1)], create=[RESCUED]
    )
    run = await turn(clean, client, make(), cancel=token, cancel_at=0.55)
    assert isinstance(run.error, Cancelled)
    assert run.end_time == pytest.approx(0.55)
    assert client.spans == [[0.0, pytest.approx(0.55)]]
    assert len(client.stream_calls) == 1 and client.create_calls == []


async def test_cancel_during_a_60_second_backoff_returns_at_once(clean: TestScheduler) -> None:
    token = CancelToken()
    client = ScriptedClient(clean, [fails(status_error(429, "x", retry_after=60.0))])
    run = await turn(clean, client, make(), cancel=token, cancel_at=1.0)
    assert isinstance(run.error, Cancelled)
    assert run.end_time == 1.0
    assert len(client.stream_calls) == 1


async def test_cancel_during_the_rescue_cancels_the_request(clean: TestScheduler) -> None:
    token = CancelToken()
    client = ScriptedClient(clean, [fails(ServerError("x"))], create=[HANG])
    run = await turn(clean, client, make(), cancel=token, cancel_at=5.0)
    assert isinstance(run.error, Cancelled)
    assert run.end_time == 5.0
    assert len(client.create_calls) == 1  # its task is gone: the clean fixture checks


async def test_cancel_during_the_rescue_before_it_starts(clean: TestScheduler) -> None:
    token = CancelToken()
    client = ScriptedClient(clean, [fails(ServerError("x"))], create=[RESCUED])
    run = await turn(clean, client, make(), cancel=token, cancel_at=0.7)  # in the last backoff
    assert isinstance(run.error, Cancelled)
    assert client.create_calls == []
    assert len(client.stream_calls) == 3


async def test_disposal_tears_everything_down_silently(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [stalls(3)], create=[RESCUED])
    run = await turn(clean, client, make(), dispose_at=30.0)
    assert not run.finished
    assert client.spans == [[0.0, 30.0]]


# -- the proactive limiter ----------------------------------------------------------------------


def _drained(rpm: int, *, max_wait: float = 30.0, key: str = "http://scripted.invalid") -> Any:
    limiter = RateLimiter(LimiterPolicy(requests_per_minute=rpm, max_wait=max_wait))
    for _ in range(rpm):
        limiter.acquire(key, 0.0)
    return limiter


async def test_a_full_bucket_lets_the_attempt_start_at_once(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [timeline(reply())])
    run = await turn(clean, client, make(limiter=RateLimiter.per_minute(60)))
    assert run.completed and client.spans[0][0] == 0.0


async def test_the_limiter_throttles_a_burst_of_turns(clean: TestScheduler) -> None:
    handler = make(limiter=RateLimiter.per_minute(2))
    starts = []
    for _ in range(3):
        client = ScriptedClient(clean, [timeline(reply())])
        run = await turn(clean, client, handler)
        assert run.completed
        starts.append(client.spans[0][0])
    first = starts[0]
    assert starts[1] == pytest.approx(first + 0.08)  # immediately after the first turn
    assert starts[2] == pytest.approx(first + 30.0)  # waited for the refill (2/min)


async def test_sixty_rpm_lets_three_quick_turns_through(clean: TestScheduler) -> None:
    handler = make(limiter=RateLimiter.per_minute(60))
    for _ in range(3):
        client = ScriptedClient(clean, [timeline(reply())])
        assert (await turn(clean, client, handler)).completed
    assert clean.clock < 5.0


async def test_the_limiter_wait_is_clamped_to_the_total_deadline(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [timeline(reply())])
    handler = make(
        limiter=_drained(1),
        timeouts=TimeoutPolicy(first_event=0.05, per_event=0.05, total=0.08, rescue=False),
    )
    run = await turn(clean, client, handler)
    assert isinstance(run.error, StreamTimeoutError) and run.error.kind == "total"
    assert run.end_time == pytest.approx(0.08)  # not 30 s, let alone 60 s
    assert client.stream_calls == []


async def test_cancel_interrupts_the_limiter_wait(clean: TestScheduler) -> None:
    token = CancelToken()
    client = ScriptedClient(clean, [timeline(reply())])
    run = await turn(clean, client, make(limiter=_drained(1)), cancel=token, cancel_at=2.0)
    assert isinstance(run.error, Cancelled) and run.end_time == 2.0
    assert client.stream_calls == []


async def test_a_spent_max_wait_goes_ahead_without_a_token(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [timeline(reply())])
    run = await turn(clean, client, make(limiter=_drained(1, max_wait=0.05)))
    assert run.completed
    assert client.spans[0][0] == pytest.approx(0.05)


async def test_a_retried_attempt_re_gates(clean: TestScheduler) -> None:
    limiter = RateLimiter(LimiterPolicy(requests_per_minute=1, max_wait=1.2))
    client = ScriptedClient(clean, [fails(ServerError("x")), timeline(reply())])
    run = await turn(clean, client, make(limiter=limiter))
    assert run.completed
    # attempt 1 took the only token; attempt 2 waits the whole max_wait after its 0.1 s backoff
    assert client.spans[1][0] == pytest.approx(0.01 + 0.1 + 1.2)


# -- passthrough ----------------------------------------------------------------------------------


async def test_passthrough_makes_one_attempt_and_surfaces_every_failure(
    clean: TestScheduler,
) -> None:
    for error in (ServerError("HTTP 500"), status_error(429, "x", retry_after=1.0)):
        client = ScriptedClient(clean, [fails(error)], create=[RESCUED])
        run = await turn(clean, client, StreamHandler.passthrough())
        assert run.error is error
        assert getattr(run.error, "attempts", None) == 1
        assert len(client.stream_calls) == 1 and client.create_calls == []


async def test_passthrough_has_no_deadlines_but_still_detects_truncation(
    clean: TestScheduler,
) -> None:
    client = ScriptedClient(clean, [stalls(2)])
    run = await turn(clean, client, StreamHandler.passthrough(), dispose_at=10_000.0)
    assert not run.finished  # a stall is never timed out
    truncated = ScriptedClient(clean, [timeline(reply()[:-1])])
    run = await turn(clean, truncated, StreamHandler.passthrough())
    assert isinstance(run.error, TruncatedStreamError)


async def test_the_handler_scheduler_is_used_when_none_is_given(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [fails(ServerError("x")), timeline(reply())])
    handler = StreamHandler(retry=EXACT, scheduler=clean)
    run = await drive(clean, handler.stream_turn(client, REQUEST))
    assert run.completed and client.spans[1][0] == pytest.approx(0.11)
