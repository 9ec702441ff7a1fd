"""The handler's rules as plain machines: time is a float passed in, no scheduler, no Rx.

Each test states a rule of docs/behaviour.md and drives the one machine that holds it.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys

import pytest

from rxturn.errors import (
    AuthenticationError,
    BadRequestError,
    Cancelled,
    ConfigError,
    ContextOverflowError,
    InvalidToolInputError,
    RateLimitEscalation,
    RescueFailed,
    RescueTimeoutError,
    RetryAfterBeyondDeadline,
    ServerError,
    StreamTimeoutError,
    TruncatedStreamError,
    status_error,
)
from rxturn.events import AttemptReset, Delta, PartStart, PartStop, StreamEvent
from rxturn.fold import fold_events
from rxturn.messages import Usage
from rxturn.resilience.clock import AttemptClock
from rxturn.resilience.guard import EMPTY, ShadowGuard
from rxturn.resilience.limiter import gate_sleep
from rxturn.resilience.policies import RateLimitPolicy, RetryPolicy
from rxturn.resilience.progress import (
    FRESH_BUDGET,
    RescueRace,
    TurnProgress,
    no_reply,
    note_progress,
    rescue_budget,
    rescue_failed,
    total_timeout,
)
from rxturn.resilience.retry import RetryBudget, beyond_deadline
from rxturn.resilience.verdicts import (
    FailureKind,
    classify,
    fails_over,
    failure_kind,
    is_cancel,
)
from rxturn.testing.virtual import reply

# -- the shadow guard ---------------------------------------------------------------------------


def test_the_guard_accepts_a_clean_reply_event_by_event() -> None:
    guard = ShadowGuard()
    events = reply("one two three", usage=Usage(input_tokens=2, output_tokens=3))
    assert [guard.event(e) for e in events] == [None] * len(events)
    assert guard.truncated(len(events)) is None
    assert guard.shadow.usage == Usage(input_tokens=2, output_tokens=3)


def test_a_lane_event_before_message_start_is_rejected() -> None:
    error = ShadowGuard().event(PartStart(0))
    assert error is not None and not isinstance(error, TruncatedStreamError)


def test_a_stream_without_message_stop_is_truncated_whatever_it_carried() -> None:
    guard = ShadowGuard()
    events = reply("cut short")[:-1]
    for event in events:
        assert guard.event(event) is None
    truncated = guard.truncated(len(events))
    assert isinstance(truncated, TruncatedStreamError)


def _tool_reply(fragments: list[str]) -> list[StreamEvent]:
    return [
        reply("x")[0],
        PartStart(0, "tool_call", id="call_1", name="lookup"),
        *(Delta(0, f, "tool_json") for f in fragments),
        PartStop(0),
    ]


def test_collected_tool_json_is_judged_whole_at_the_close() -> None:
    guard = ShadowGuard()
    verdicts = [guard.event(e) for e in _tool_reply(['{"a": ', '"b"', "}"])]
    assert verdicts == [None] * 6


def test_broken_tool_json_fails_at_the_close_with_the_folds_error() -> None:
    guard = ShadowGuard()
    events = _tool_reply(['{"a": ', '"b"', '{"broken'])
    verdicts = [guard.event(e) for e in events]
    assert verdicts[:-1] == [None] * 5  # the JSON is judged at the close
    assert isinstance(verdicts[-1], InvalidToolInputError)


def test_a_batch_verdict_names_the_accepted_prefix() -> None:
    guard = ShadowGuard()
    events = _tool_reply(['{"broken'])
    error = guard.batch(events)
    assert isinstance(error, InvalidToolInputError)
    assert guard.accepted == 3  # start, tool part, fragment; the close is rejected


def test_a_clean_batch_is_accepted_whole_and_reset_starts_over() -> None:
    guard = ShadowGuard()
    events = reply("a b c")
    assert guard.batch(events) is None
    assert guard.shadow.completed
    guard.reset()
    assert not guard.shadow.completed
    assert guard.event(PartStart(0)) is not None  # a fresh attempt needs MessageStart again


def test_the_shadow_is_the_folds_state_whichever_way_the_events_came() -> None:
    events = [
        *reply("one two three four")[:-3],  # through the text's deltas, the lane still open
        *_tool_reply(['{"a": ', '"b"', "}"])[1:],  # a tool call after it (no MessageStart)
        *reply("x")[-2:],  # the usage and the stop
    ]
    expected = fold_events(events).message()
    by_event, by_batch, mixed = ShadowGuard(), ShadowGuard(), ShadowGuard()
    assert [by_event.event(e) for e in events] == [None] * len(events)
    assert by_batch.batch(events) is None
    assert mixed.batch(events[:3]) is None and mixed.event(events[3]) is None
    assert mixed.batch(events[4:]) is None
    for guard in (by_event, by_batch, mixed):
        assert guard.shadow.message() == expected


def test_after_a_rejected_batch_the_shadow_is_the_accepted_prefixs_fold() -> None:
    guard = ShadowGuard()
    events = [reply("x")[0], PartStart(0), Delta(0, "kept"), PartStop(0)]
    events += _tool_reply(['{"broken'])[1:]
    assert isinstance(guard.batch(events), InvalidToolInputError)
    assert guard.accepted == len(events) - 1
    assert guard.shadow.message() == fold_events(events[:-1]).message()
    assert guard.shadow.message().text == "kept"


def test_an_empty_batch_is_no_event_and_changes_nothing() -> None:
    guard = ShadowGuard()
    assert guard.batch([]) is EMPTY  # no event to judge: not the error a lane event gets here
    whole = _tool_reply(['{"a": ', '"b"', "}"])
    assert guard.batch(whole[:3]) is None  # the start, the tool part, a fragment collected
    shadow = guard.shadow
    assert guard.batch([]) is EMPTY
    assert guard.shadow is shadow
    assert guard.batch(whole[3:]) is None  # the run is judged whole, as if nothing came between
    broken = ShadowGuard()
    events = _tool_reply(['{"a": ', '"b"', '{"broken'])
    assert broken.batch(events[:4]) is None
    assert broken.batch([]) is EMPTY
    assert isinstance(broken.batch(events[4:]), InvalidToolInputError)
    assert broken.accepted == 1  # the last fragment; the close is rejected


# -- the attempt clock --------------------------------------------------------------------------


def test_nothing_arrives_fails_fast_after_two_first_event_waits() -> None:
    clock = AttemptClock(first_event=2.0, per_event=3.0, max_consecutive=10)
    clock.begin(100.0)
    assert clock.due == 102.0
    assert clock.expired(102.0, partial=False) is None and clock.due == 104.0
    error = clock.expired(104.0, partial=False)
    assert isinstance(error, StreamTimeoutError)
    assert (error.kind, error.events, error.consecutive) == ("first_event", 0, 2)
    assert error.after == 2.0 and error.elapsed == pytest.approx(4.0)
    assert clock.due is None


def test_an_event_moves_the_wait_to_per_event_only_if_sooner() -> None:
    clock = AttemptClock(first_event=10.0, per_event=3.0)
    clock.begin(0.0)
    assert clock.arrived(1, 1.0) is True and clock.due == 4.0  # 1 + 3 < 10
    assert clock.arrived(2, 2.0) is False  # later events never touch the timer
    late = AttemptClock(first_event=2.0, per_event=3.0)
    late.begin(0.0)
    assert late.arrived(1, 0.5) is False and late.due == 2.0  # 0.5 + 3 > 2: keep


def test_the_idle_wait_is_measured_from_the_last_event() -> None:
    clock = AttemptClock(first_event=10.0, per_event=3.0, max_consecutive=1)
    clock.begin(0.0)
    clock.arrived(1, 1.0)  # due 4
    clock.arrived(1, 3.5)
    assert clock.expired(4.0, partial=True) is None and clock.due == pytest.approx(6.5)
    error = clock.expired(6.5, partial=True)
    assert isinstance(error, StreamTimeoutError)
    assert (error.kind, error.events, error.partial) == ("idle", 2, True)


def test_an_event_resets_the_consecutive_count() -> None:
    clock = AttemptClock(first_event=None, per_event=1.0, max_consecutive=2)
    clock.begin(0.0)
    assert clock.due is None
    clock.arrived(1, 0.0)  # due 1
    assert clock.expired(1.0, partial=False) is None  # 1 of 2
    clock.arrived(1, 1.5)
    assert clock.expired(2.0, partial=False) is None  # events came: the count starts over
    assert clock.due == pytest.approx(2.5)
    assert clock.expired(2.5, partial=False) is None  # 1 of 2
    assert isinstance(clock.expired(3.5, partial=False), StreamTimeoutError)


def test_no_per_event_wait_clears_the_deadline_at_the_first_event() -> None:
    clock = AttemptClock(first_event=5.0, per_event=None)
    clock.begin(0.0)
    assert clock.arrived(1, 1.0) is True and clock.due is None


def test_an_empty_batch_is_no_arrival() -> None:
    clock = AttemptClock(first_event=2.0, per_event=1.0, max_consecutive=1)
    clock.begin(0.0)
    assert clock.arrived(0, 0.5) is False and clock.due == 2.0  # still waiting for the first
    error = clock.expired(2.0, partial=False)
    assert isinstance(error, StreamTimeoutError)
    assert (error.kind, error.events) == ("first_event", 0)
    idle = AttemptClock(first_event=5.0, per_event=1.0, max_consecutive=1)
    idle.begin(0.0)
    idle.arrived(1, 0.5)  # due 1.5
    idle.arrived(1, 1.0)
    assert idle.arrived(0, 1.4) is False and idle.seen == 2
    assert idle.expired(1.5, partial=False) is None
    assert idle.due == 2.0  # the last event's 1.0 + 1: the empty batch at 1.4 moved nothing


# -- the retry budget ---------------------------------------------------------------------------


def test_transport_retries_then_the_last_error_goes_on_with_attempts() -> None:
    budget = RetryBudget(
        RetryPolicy(max_retries=2, jitter=0.0), RateLimitPolicy(), random.Random(1)
    )
    first, second, third = ServerError("HTTP 500"), ServerError("HTTP 502"), ServerError("x")
    decision = budget.failed(first, remaining=None)
    assert (decision.action, decision.ladder) == ("retry", "transport")
    reset = budget.reset(events=3, usage=Usage(input_tokens=1, output_tokens=1))
    assert reset == AttemptReset(
        attempt=2,
        reason=str(first),
        error_type="ServerError",
        usage=Usage(input_tokens=1, output_tokens=1),
        events=3,
    )
    assert budget.failed(second, remaining=None).action == "retry"
    budget.reset(events=0, usage=None)
    decision = budget.failed(third, remaining=None)
    assert (decision.action, decision.error) == ("fail", third)
    assert third.attempts == 3  # pyright: ignore[reportAttributeAccessIssue]


def test_a_retry_is_owed_until_its_wait_ends_or_the_turn_cancels_it() -> None:
    budget = RetryBudget(
        RetryPolicy(max_retries=2, jitter=0.0), RateLimitPolicy(), random.Random(1)
    )
    assert not budget.retry_owed
    budget.failed(ServerError("HTTP 500"), remaining=None)
    assert budget.retry_owed
    budget.reset(events=0, usage=None)
    assert not budget.retry_owed  # the wait is over: attempt 2 is in flight
    budget.failed(ServerError("HTTP 502"), remaining=None)
    assert budget.retry_owed
    budget.cancel_retry()  # the turn ended during the wait (a total timeout, say)
    assert not budget.retry_owed
    assert (budget.attempt, budget.transport_retries) == (2, 2)  # what was spent stays spent
    spent = RetryBudget(RetryPolicy(max_retries=0), RateLimitPolicy(), random.Random(1))
    assert spent.failed(ServerError("HTTP 500"), remaining=None).action == "fail"
    assert not spent.retry_owed  # a failure the ladder lets out owes no retry


def test_the_rate_limit_ladder_has_its_own_budget_and_escalates() -> None:
    budget = RetryBudget(
        RetryPolicy(max_retries=0),
        RateLimitPolicy(escalate_after=1, max_retries=5),
        random.Random(1),
    )
    limited = status_error(429, "slow", retry_after=2.0)
    decision = budget.failed(limited, remaining=None)
    assert (decision.action, decision.ladder, decision.delay) == ("retry", "rate_limit", 2.0)
    budget.reset(events=0, usage=None)
    decision = budget.failed(status_error(429, "slow", retry_after=7.0), remaining=None)
    assert decision.action == "escalate"
    assert isinstance(decision.error, RateLimitEscalation) and decision.error.retry_after == 7.0
    assert budget.transport_retries == 0 and budget.rate_limit_hits == 2


def test_a_wait_is_clamped_to_the_time_left_and_told_to_the_hook() -> None:
    told: list[dict[str, object]] = []
    budget = RetryBudget(
        RetryPolicy(),
        RateLimitPolicy(),
        random.Random(1),
        on_wait=lambda **kw: told.append(kw),
    )
    limited = status_error(429, "slow", retry_after=600.0)
    decision = budget.failed(limited, remaining=4.0)
    assert decision.delay == 4.0
    assert told == [{"reason": "rate_limit", "seconds": 4.0, "attempt": 2, "error": limited}]


def test_a_total_timeout_and_a_permanent_error_are_never_retried() -> None:
    total = StreamTimeoutError("total", after=1.0, events=0, partial=False, elapsed=1.0)
    for error in (total, status_error(400, "bad"), Cancelled()):
        budget = RetryBudget(RetryPolicy(), RateLimitPolicy(), random.Random(1))
        assert budget.failed(error, remaining=None).action == "fail"


def test_a_retry_after_beyond_the_deadline_gives_up() -> None:
    limited = status_error(429, "slow", retry_after=30.0)
    replaced = beyond_deadline(limited, 2, 4.0)
    assert isinstance(replaced, RetryAfterBeyondDeadline) and replaced.__cause__ is limited
    assert beyond_deadline(limited, 2, 40.0) is limited
    assert beyond_deadline(limited, 2, None) is limited
    other = ServerError("HTTP 500")
    assert beyond_deadline(other, 1, 0.0) is other


def test_a_retry_after_the_turn_can_just_wait_out_is_waited_for() -> None:
    # beyond means longer than what is left: a wait that ends at the deadline itself is not
    limited = status_error(429, "slow", retry_after=4.0)
    assert beyond_deadline(limited, 2, 4.0) is limited
    assert isinstance(beyond_deadline(limited, 2, 3.999), RetryAfterBeyondDeadline)


# -- the limiter gate, the total deadline, the rescue budget -------------------------------------


def test_the_gate_sleeps_what_the_limiter_asks_within_max_wait_and_the_deadline() -> None:
    assert gate_sleep(0.0, 0.0, 30.0, None) == 0.0  # granted
    assert gate_sleep(5.0, 0.0, 30.0, None) == 5.0
    assert gate_sleep(5.0, 28.0, 30.0, None) == 2.0  # what is left of max_wait
    assert gate_sleep(5.0, 30.0, 30.0, None) == 0.0  # spent: go without a token
    assert gate_sleep(5.0, 0.0, 30.0, 1.5) == 1.5  # the total deadline is nearer
    assert gate_sleep(5.0, 0.0, 30.0, -1.0) <= 0.0  # past the deadline: go


def test_the_total_timeout_reports_the_whole_turn() -> None:
    now = [10.0]
    progress = TurnProgress(lambda: now[0], total=5.0)
    assert progress.deadline_at == 15.0
    progress.begin_attempt()
    progress.events = 4
    progress.begin_attempt()
    progress.events = 2
    now[0] = 15.0
    assert progress.remaining() == 0.0
    error = total_timeout(5.0, progress, 15.0)
    assert (error.kind, error.events, error.elapsed, error.partial) == ("total", 6, 5.0, False)


def test_the_rescue_budget_is_what_is_left_or_a_fresh_budget() -> None:
    assert rescue_budget(None, 120.0) is None  # no total deadline: none
    assert rescue_budget(7.5, 120.0) == 7.5
    assert rescue_budget(0.0, 30.0) == 30.0
    assert rescue_budget(-3.0, None) == FRESH_BUDGET == 120.0


def test_the_rescue_budget_is_never_negative() -> None:
    # its timer is armed with it as it is: a fresh budget below zero is a deadline now
    assert rescue_budget(-3.0, -1.0) == 0.0
    assert rescue_budget(0.0, -0.5) == 0.0
    assert rescue_budget(1e-9, -1.0) == 1e-9  # what is left, however little, is left


def test_the_rescue_race_is_settled_by_its_first_outcome() -> None:
    race = RescueRace(2.5)
    assert race.outcome() is True  # the reply
    assert race.outcome() is False  # a failure after it changes nothing
    assert race.deadline() is None  # nor does the deadline


def test_a_reply_at_the_deadline_instant_wins() -> None:
    race = RescueRace(2.5)
    assert race.deadline() is None and race.expiring  # judged again one scheduler turn later
    assert race.outcome() is True  # the reply that completed at that instant
    assert race.deadline() is None


def test_the_deadline_times_the_rescue_out_one_turn_later() -> None:
    race = RescueRace(2.5)
    assert race.deadline() is None
    timeout = race.deadline()
    assert isinstance(timeout, RescueTimeoutError) and timeout.budget == 2.5
    assert race.outcome() is True  # the caller hands the timeout on as the outcome


def test_a_lost_rescue_ends_the_turn_with_both_errors_and_the_attempts() -> None:
    progress = TurnProgress(lambda: 0.0)
    progress.begin_attempt()
    progress.begin_attempt()
    stream_error, timeout = ServerError("HTTP 500"), RescueTimeoutError(2.5)
    error = rescue_failed(stream_error, timeout, progress)
    assert isinstance(error, RescueFailed)
    assert (error.stream_error, error.rescue_error) == (stream_error, timeout)
    assert getattr(error, "attempts", None) == 2
    ended = no_reply()
    assert "without a reply" in str(ended)
    assert rescue_failed(stream_error, ended, None).rescue_error is ended


def test_a_rate_limit_or_a_408_learns_what_its_attempt_received() -> None:
    progress = TurnProgress(lambda: 0.0)
    progress.begin_attempt()
    events = reply("one two")
    for event in events[:4]:  # MessageStart, a text part opened, two deltas: no part completed
        assert progress.guard.event(event) is None
    progress.events = 4
    limited, late, other = status_error(429, "slow"), status_error(408, "late"), ServerError("x")
    for error in (limited, late, other):
        note_progress(error, progress)
    assert (limited.events, limited.partial) == (4, False)  # pyright: ignore[reportAttributeAccessIssue]
    assert (late.events, late.partial) == (4, False)  # pyright: ignore[reportAttributeAccessIssue]
    assert str(limited).endswith(", 4 events processed")
    assert not hasattr(other, "events")  # only those two say what they had received
    for event in events[4:6]:
        progress.guard.event(event)
    progress.events = 6
    note_progress(limited, progress)
    assert limited.partial is True and "(partial data), 6 events" in str(limited)  # pyright: ignore[reportAttributeAccessIssue]


# -- the classification table -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "ladder", "rescuable", "fails", "kind"),
    [
        (Cancelled(), "none", False, False, None),
        (asyncio.CancelledError(), "none", False, False, None),
        (ConfigError("bad"), "none", False, False, FailureKind.TRANSIENT),
        (RateLimitEscalation(3), "none", False, True, FailureKind.RATE_LIMIT),
        (RetryAfterBeyondDeadline(1, 30.0, 2.0), "none", False, True, FailureKind.RATE_LIMIT),
        (RescueFailed(ServerError("a"), ServerError("b")), "none", False, True, "transient"),
        (status_error(429, "x"), "rate_limit", True, True, "transient"),
        (status_error(529, "x"), "rate_limit", True, True, "transient"),
        # x-should-retry: false stops the retries of any status (docs/reliability.md), a rate
        # limit's too (a spent quota; the SDKs stop there): the rate-limit ladder took it
        (status_error(429, "x", should_retry=False), "none", False, True, "transient"),
        (status_error(529, "x", should_retry=False), "none", False, True, "transient"),
        (status_error(429, "x", should_retry=True), "rate_limit", True, True, "transient"),
        (
            StreamTimeoutError("total", after=1.0, events=0, partial=False, elapsed=1.0),
            "none",
            True,
            True,
            "transient",
        ),
        (
            StreamTimeoutError("idle", after=1.0, events=0, partial=False, elapsed=1.0),
            "transport",
            True,
            True,
            "transient",
        ),
        (status_error(401, "x"), "none", False, False, "transient"),
        (status_error(400, "x"), "none", False, False, "transient"),
        (status_error(400, "x", should_retry=True), "none", False, False, "transient"),
        (status_error(418, "x", should_retry=True), "transport", True, True, "transient"),
        (status_error(400, "prompt is too long"), "none", False, True, "transient"),
        (status_error(404, "no such model"), "none", False, True, "transient"),
        (status_error(500, "x"), "transport", True, True, "transient"),
        (status_error(501, "x"), "none", False, True, "transient"),
        (TruncatedStreamError(3), "transport", True, True, "transient"),
    ],
)
def test_the_table(
    error: BaseException, ladder: str, rescuable: bool, fails: bool, kind: object
) -> None:
    verdict = classify(error)
    expected_kind = FailureKind(kind) if isinstance(kind, str) else kind
    assert (verdict.ladder, verdict.rescuable, verdict.fails_over, verdict.kind) == (
        ladder,
        rescuable,
        fails,
        expected_kind,
    )
    assert fails_over(error) is fails and failure_kind(error) is expected_kind
    assert is_cancel(error) is (kind is None)  # the one row the breaker does not count


def test_a_context_overflow_may_fail_over_a_refused_key_may_not() -> None:
    assert isinstance(status_error(400, "prompt is too long"), ContextOverflowError)
    assert isinstance(status_error(401, "x"), AuthenticationError)
    assert isinstance(status_error(400, "x"), BadRequestError)


def test_a_cancelled_turn_ends_with_the_tokens_reason_and_its_attempts() -> None:
    from rxturn.resilience.cancel import CancelToken, cancel_error

    token = CancelToken()
    token.cancel("user left")
    progress = TurnProgress(lambda: 0.0)
    progress.begin_attempt()
    progress.begin_attempt()
    error = cancel_error(token, progress)
    assert isinstance(error, Cancelled)
    assert str(error) == "user left"
    assert error.attempts == 2  # pyright: ignore[reportAttributeAccessIssue]
    # without a turn's progress (a tool call, a non-streaming create) nothing is stamped
    assert not hasattr(cancel_error(token), "attempts")


# -- sans-IO ------------------------------------------------------------------------------------


def test_the_rule_machines_import_no_io_and_no_rx() -> None:
    # a fresh interpreter: this one has asyncio and reactivex loaded by the test run itself
    code = (
        "import sys\n"
        "import rxturn.resilience.guard, rxturn.resilience.clock, rxturn.resilience.retry\n"
        "import rxturn.resilience.progress, rxturn.resilience.verdicts, rxturn.resilience.limiter\n"
        "import rxturn.resilience.hedge, rxturn.resilience.fallback\n"
        "bad = [m for m in ('asyncio', 'aiohttp', 'reactivex') if m in sys.modules]\n"
        "sys.exit(repr(bad) if bad else 0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
