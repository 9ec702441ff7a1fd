"""The handler's fused ladder against the public operators composed by hand.

``StreamHandler`` runs a turn as one object (``rxturn/engine/handler/_ladder.py``) rather than a
chain of Rx operators, for its cost per turn. The promise is that nothing a subscriber can see
changes: the same items at the same virtual instants, the same end (error type, message,
``attempts``) at the same instant, the same requests made and let go at the same instants.
Each scenario below runs twice on fresh TestSchedulers — once through
``handler.stream_turn_batches``, once through the public operators in the documented order
(``attempt_guard`` → ``deadlines`` → ``annotate_progress`` → ``rate_limit_gate`` →
``retry_ladder`` → ``total_deadline`` → ``rescue`` → ``cancellable`` → ``as_batches``) — and
the two recordings must be equal. Each scenario runs again with its events delivered two to a
batch through ``stream_batches`` (the driver's batched path: a batch's verdict, its accepted
prefix, the attempt clock told once per batch). ``test_paths_equivalence.py`` does the same on
the batched and the direct-attach paths, with a real client.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from reactivex import Observable
from reactivex.testing import ReactiveTest, TestScheduler

from rxturn.engine.handler import StreamHandler
from rxturn.errors import ServerError, status_error
from rxturn.events import Delta, Fallback, PartStart, PartStop
from rxturn.messages import Message
from rxturn.resilience.cancel import CancelToken
from rxturn.resilience.limiter import RateLimiter
from rxturn.resilience.policies import LimiterPolicy, RateLimitPolicy, RetryPolicy, TimeoutPolicy
from rxturn.sources import from_awaitable
from rxturn.testing.virtual import (
    HANG,
    REQUEST,
    Later,
    Run,
    ScriptedClient,
    assert_clean,
    drive,
    reply,
    timeline,
)

from .composition import composed_turn

RESCUED = Message.assistant("rescued")


def _fails(error: Exception, events: int = 0, at: float = 0.01) -> list[Any]:
    return timeline(reply("partial words here")[:events], start=at, end=error)


def _stalls(events: int = 0, step: float = 0.01) -> list[Any]:
    return timeline(reply("stalled reply words")[:events], step=step, end=None)


def _bad_tool() -> list[Any]:
    events = [
        reply("ok")[0],
        PartStart(0, "tool_call", id="call_1", name="lookup"),
        Delta(0, '{"a": ', "tool_json"),
        Delta(0, '"b"', "tool_json"),
        Delta(0, '{"broken', "tool_json"),
        PartStop(0),
    ]
    return timeline(events)


def _slow(step: float) -> list[Any]:
    return timeline(reply("one two three four five"), step=step)


@dataclass
class Case:
    streams: list[list[Any]]
    create: list[object] = field(default_factory=list[object])
    timeouts: TimeoutPolicy = field(default_factory=TimeoutPolicy)
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(jitter=0.3))
    rate_limit: RateLimitPolicy = field(default_factory=RateLimitPolicy)
    limiter: tuple[int, float] | None = None  # (requests per minute, max wait), drained
    cancel_at: float | None = None
    dispose_at: float | None = None


FAST = TimeoutPolicy(first_event=0.05, per_event=0.03, total=1.0)
TIGHT = TimeoutPolicy(first_event=0.05, per_event=0.05, total=0.08)
NO_RESCUE = TimeoutPolicy(rescue=False)
LIMITED = status_error(429, "slow down", retry_after=0.02)

CASES: dict[str, Case] = {
    "clean reply": Case([timeline(reply())]),
    "server error, then a reply": Case([_fails(ServerError("HTTP 500"), 3), timeline(reply())]),
    "transport budget spent, rescued": Case([_fails(ServerError("HTTP 502"))], [RESCUED]),
    "transport budget spent, no rescue": Case(
        [_fails(ServerError("HTTP 502"), 2)], timeouts=NO_RESCUE
    ),
    "permanent error": Case([_fails(status_error(400, "bad request"), 2)], [RESCUED]),
    "first-event timeouts, then a reply": Case([_stalls(), _stalls(), timeline(reply())], [], FAST),
    "idle stall mid-stream, then a reply": Case([_stalls(3), timeline(reply())], [], FAST),
    "slow but steady stream": Case([_slow(0.02)], [], FAST),
    "consecutive idle expiries": Case(
        [_stalls(2)],
        [RESCUED],
        TimeoutPolicy(first_event=0.05, per_event=0.01, total=5.0, max_consecutive_timeouts=3),
    ),
    "truncated stream": Case([timeline(reply()[:4])], [RESCUED]),
    "invalid tool JSON": Case([_bad_tool()], timeouts=NO_RESCUE),
    "rate limits, then a reply": Case([_fails(LIMITED), _fails(LIMITED, 2), timeline(reply())]),
    "rate-limit escalation": Case(
        [_fails(LIMITED)], [RESCUED], rate_limit=RateLimitPolicy(escalate_after=2)
    ),
    "rate-limit hard stop, rescued": Case(
        [_fails(LIMITED)], [RESCUED], rate_limit=RateLimitPolicy(escalate_after=2, max_retries=2)
    ),
    "rate-limit wait clamped to the total deadline": Case(
        [_fails(status_error(429, "x", retry_after=600.0))], [RESCUED], TIGHT
    ),
    # the rescue's budget is the time left, so its deadline falls on the total deadline's
    # instant: a rescuing turn has no total deadline, the rescue's race times out
    "transport budget spent, the rescue hangs to the total deadline": Case(
        [_fails(ServerError("HTTP 502"))],
        [HANG],
        FAST,
        RetryPolicy(base_delay=0.05, max_delay=0.1, max_retries=2, jitter=0.3),
    ),
    "total deadline during a hang, rescued": Case([_stalls(2)], [Later(0.02, RESCUED)], TIGHT),
    "total deadline, the rescue fails": Case([_stalls()], [ServerError("HTTP 500")], TIGHT),
    "total deadline, the rescue hangs": Case([_stalls()], [HANG], TIGHT),
    "cancel mid-stream": Case([_slow(0.05)], cancel_at=0.12),
    "cancel during a backoff": Case([_fails(ServerError("HTTP 500"))], cancel_at=0.05),
    "cancel during the rescue": Case([_stalls()], [HANG], TIGHT, cancel_at=0.2),
    "disposed mid-stream": Case([_slow(0.05)], dispose_at=0.12),
    "limiter waits, then a reply": Case([timeline(reply())], limiter=(60, 30.0)),
    "limiter wait cut short by max_wait": Case([timeline(reply())], limiter=(1, 0.5)),
    "limiter and retries": Case(
        [_fails(ServerError("HTTP 500")), timeline(reply())], limiter=(120, 30.0)
    ),
}


def _limiter(case: Case) -> RateLimiter | None:
    if case.limiter is None:
        return None
    rpm, max_wait = case.limiter
    limiter = RateLimiter(LimiterPolicy(requests_per_minute=rpm, max_wait=max_wait))
    for _ in range(rpm):
        limiter.acquire("http://scripted.invalid", 0.0)
    return limiter


def _by_operators(
    case: Case, client: ScriptedClient, scheduler: TestScheduler, token: CancelToken
) -> Observable[Any]:
    return composed_turn(
        lambda: client.stream(REQUEST),
        lambda: from_awaitable(lambda: client.create(REQUEST)),
        scheduler=scheduler,
        token=token,
        timeouts=case.timeouts,
        retry=case.retry,
        rate_limit=case.rate_limit,
        limiter=_limiter(case),
        key=client.base_url,
    )


def _by_handler(
    case: Case, client: ScriptedClient, scheduler: TestScheduler, token: CancelToken
) -> Observable[Any]:
    handler = StreamHandler(
        timeouts=case.timeouts,
        retry=case.retry,
        rate_limit=case.rate_limit,
        limiter=_limiter(case),
        rng=random.Random(7),
    )
    return handler.stream_turn_batches(client, REQUEST, None, token, scheduler=scheduler)


def _error_facts(error: BaseException | None) -> object:
    if error is None:
        return None
    cause = getattr(error, "stream_error", None)
    return (
        type(error).__name__,
        str(error),
        getattr(error, "attempts", None),
        type(cause).__name__ if cause is not None else None,
    )


def _in_pairs(script: list[Any]) -> list[Any]:
    """``script`` with its events two to a batch, each batch at its last event's instant (a lone
    last event alone); the end stays where it was."""
    events = [r for r in script if r.value.kind == "N"]
    ends = [r for r in script if r.value.kind != "N"]
    batches = [events[i : i + 2] for i in range(0, len(events), 2)]
    paired = [ReactiveTest.on_next(b[-1].time, [r.value.value for r in b]) for b in batches]
    return paired + ends


class BatchesOnly:
    """A scripted client seen through ``stream_batches`` alone (its scripts play batches)."""

    def __init__(self, client: ScriptedClient) -> None:
        self.client = client
        self.model = client.model
        self.base_url = client.base_url

    def stream(self, request: Any, options: Any = None) -> Any:
        raise AssertionError("the handler subscribes stream_batches when the client has it")

    def stream_batches(self, request: Any, options: Any = None) -> Any:
        return self.client.stream(request, options)

    async def create(self, request: Any, options: Any = None) -> Message:
        return await self.client.create(request, options)


def _by_handler_on_batches(
    case: Case, client: ScriptedClient, scheduler: TestScheduler, token: CancelToken
) -> Observable[Any]:
    return _by_handler(case, BatchesOnly(client), scheduler, token)  # pyright: ignore[reportArgumentType]


async def _record(case: Case, build: Any, *, batched: bool = False) -> tuple[Run, list[Any], int]:
    scheduler = TestScheduler()
    streams = [_in_pairs(script) for script in case.streams] if batched else case.streams
    client = ScriptedClient(scheduler, streams, create=case.create)
    token = CancelToken()
    run = await drive(
        scheduler,
        build(case, client, scheduler, token),
        cancel=token,
        cancel_at=case.cancel_at,
        dispose_at=case.dispose_at,
        limit=100.0,
    )
    await assert_clean(scheduler)
    return run, client.spans, len(client.create_calls)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_the_fused_ladder_matches_the_operators(name: str) -> None:
    case = CASES[name]
    fused, fused_spans, fused_creates = await _record(case, _by_handler)
    composed, spans, creates = await _record(case, _by_operators)
    assert fused.items == composed.items
    assert (fused.completed, fused.end_time) == (composed.completed, composed.end_time)
    assert _error_facts(fused.error) == _error_facts(composed.error)
    assert fused_spans == spans
    assert fused_creates == creates


@pytest.mark.parametrize("name", sorted(CASES))
async def test_the_driver_matches_the_operators_on_batches(name: str) -> None:
    case = CASES[name]
    driven, driven_spans, driven_creates = await _record(case, _by_handler_on_batches, batched=True)
    composed, spans, creates = await _record(case, _by_operators, batched=True)
    assert driven.items == composed.items
    assert (driven.completed, driven.end_time) == (composed.completed, composed.end_time)
    assert _error_facts(driven.error) == _error_facts(composed.error)
    assert driven_spans == spans
    assert driven_creates == creates


def test_the_batched_scripts_hold_batches_of_several_events() -> None:
    scripts = [_in_pairs(script) for case in CASES.values() for script in case.streams]
    sizes = [len(r.value.value) for script in scripts for r in script if r.value.kind == "N"]
    assert sizes.count(2) >= 20 and sizes.count(1) >= 5


def test_the_cases_cover_every_ending() -> None:
    # the table is only worth something if it reaches each way a turn can end
    async def endings() -> set[str]:
        seen: set[str] = set()
        for case in CASES.values():
            run, _, creates = await _record(case, _by_operators)
            if run.completed:
                last = run.values[-1]
                rescued = isinstance(last, list) and isinstance(last[-1], Fallback)
                seen.add("rescued" if creates and rescued else "completed")
            elif run.error is not None:
                seen.add(type(run.error).__name__)
            else:
                seen.add("disposed")
        return seen

    import asyncio

    seen = asyncio.run(endings())
    assert {
        "completed",
        "rescued",
        "disposed",
        "Cancelled",
        "RescueFailed",
        "RateLimitEscalation",
        "ServerError",
        "BadRequestError",
        "InvalidToolInputError",
    } <= seen
