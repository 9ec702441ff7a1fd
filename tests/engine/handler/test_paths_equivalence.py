"""The handler's driver against the public operators composed by hand, on the paths production
runs: rxturn's own HTTP client attached directly, and a client's ``stream_batches`` through Rx.

A real :class:`~rxturn.clients.AnthropicClient` talks to :class:`~rxturn.testing.MockTransport`
(canned SSE bodies, HTTP errors, a body cut mid-stream, a request that never answers, the
non-streaming rescue's JSON); time is a ``TestScheduler``'s. Each scenario runs four ways on
fresh schedulers, transports and clients:

- ``direct``: ``StreamHandler`` over the client itself (the driver attaches each attempt);
- ``batched``: ``StreamHandler`` over a wrapper that only offers the client's ``stream_batches``
  (the driver subscribes it);
- ``composed``: the documented composition by hand over ``client.stream_batches``
  (``attempt_guard`` → ``deadlines`` → ``scrubbed`` → ``annotate_progress`` →
  ``give_up_beyond_deadline`` when asked → ``rate_limit_gate`` → ``retry_ladder`` →
  ``total_deadline`` → ``rescue`` → ``cancellable`` → ``as_batches``);
- ``per_event``: ``StreamHandler`` over a wrapper that only offers the per-event ``stream``.

The first three must agree on every batch and its virtual instant, the end (error type,
message, ``attempts``) and its instant, the ``on_wait`` calls, and the requests sent and
released; the fourth on the same events, one per item.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from reactivex import Observable
from reactivex.testing import TestScheduler

from rxturn.clients import AnthropicClient
from rxturn.engine.handler import StreamHandler
from rxturn.errors import ReadError
from rxturn.messages import Message, Request, RequestOptions
from rxturn.resilience.cancel import CancelToken
from rxturn.resilience.limiter import RateLimiter
from rxturn.resilience.policies import LimiterPolicy, RateLimitPolicy, RetryPolicy, TimeoutPolicy
from rxturn.sources import from_awaitable
from rxturn.testing import MockRequest, MockResponse, MockTransport
from rxturn.testing.virtual import Run, assert_clean, drive

from .composition import composed_turn

REQUEST = Request(messages=(Message.user("hi"),))
BASE = "http://mock.invalid"


def _sse(kind: str, data: str) -> bytes:
    return f"event: {kind}\ndata: {data}\n\n".encode()


START = _sse(
    "message_start",
    '{"type":"message_start","message":{"id":"m1","model":"x",'
    '"usage":{"input_tokens":3,"output_tokens":0}}}',
)
TEXT_OPEN = _sse(
    "content_block_start",
    '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
)


def _text(words: str) -> bytes:
    return _sse(
        "content_block_delta",
        '{"type":"content_block_delta","index":0,'
        f'"delta":{{"type":"text_delta","text":"{words}"}}}}',
    )


STOP0 = _sse("content_block_stop", '{"type":"content_block_stop","index":0}')
END = _sse(
    "message_delta",
    '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}',
) + _sse("message_stop", '{"type":"message_stop"}')
TOOL_OPEN = _sse(
    "content_block_start",
    '{"type":"content_block_start","index":1,'
    '"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}',
)


def _json(fragment: str) -> bytes:
    escaped = fragment.replace('"', '\\"')
    return _sse(
        "content_block_delta",
        '{"type":"content_block_delta","index":1,'
        f'"delta":{{"type":"input_json_delta","partial_json":"{escaped}"}}}}',
    )


STOP1 = _sse("content_block_stop", '{"type":"content_block_stop","index":1}')

#: A clean reply in three network chunks (so three batches).
OK = MockResponse(chunks=[START + TEXT_OPEN, _text("Hello") + _text(" there"), STOP0 + END])
#: The reply's first chunks, then the connection drops.
DROPPED = MockResponse(chunks=[START + TEXT_OPEN, _text("Hel")], error=ReadError("reset"))
#: No message_stop: truncated.
CUT = MockResponse(chunks=[START + TEXT_OPEN, _text("Hello") + STOP0])
#: A tool call whose JSON never parses, rejected in the middle of a chunk.
BAD_TOOL = MockResponse(
    chunks=[START + TEXT_OPEN + _text("ok") + STOP0, TOOL_OPEN + _json('{"a": ') + STOP1 + END]
)


def _status(status: int, kind: str, retry_after: str | None = None) -> MockResponse:
    headers = {"Content-Type": "application/json"}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    body = f'{{"type":"error","error":{{"type":"{kind}","message":"no"}}}}'.encode()
    return MockResponse(status, headers=headers, chunks=[body])


SERVER = _status(500, "api_error")
LIMITED = _status(429, "rate_limit_error", "0.02")
RESCUED = MockResponse(
    headers={"Content-Type": "application/json"},
    chunks=[
        b'{"id":"m2","type":"message","role":"assistant","model":"x",'
        b'"content":[{"type":"text","text":"rescued"}],"stop_reason":"end_turn",'
        b'"usage":{"input_tokens":3,"output_tokens":1}}'
    ],
)
HANG = None  # a request that never answers

FAST = TimeoutPolicy(first_event=0.05, per_event=0.03, total=1.0)
TIGHT = TimeoutPolicy(first_event=0.05, per_event=0.05, total=0.08)
NO_RESCUE = TimeoutPolicy(rescue=False)


@dataclass
class Case:
    streams: list[MockResponse | None]  # per streaming request, the last repeats
    create: MockResponse | None = None  # the rescue's answer (None: it never answers)
    timeouts: TimeoutPolicy = field(default_factory=TimeoutPolicy)
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(jitter=0.3, base_delay=0.01))
    rate_limit: RateLimitPolicy = field(default_factory=RateLimitPolicy)
    limiter: tuple[int, float] | None = None
    cancel_at: float | None = None
    give_up: bool = False  # a Retry-After beyond the deadline gives up (the engine's failover)


CASES: dict[str, Case] = {
    "clean reply": Case([OK]),
    "server error, then a reply": Case([SERVER, OK]),
    "dropped mid-body, then a reply": Case([DROPPED, OK]),
    "truncated, then a reply": Case([CUT, OK]),
    "invalid tool JSON mid-chunk": Case([BAD_TOOL], timeouts=NO_RESCUE),
    "rate limited, then a reply": Case([LIMITED, LIMITED, OK]),
    "rate-limit escalation": Case([LIMITED], RESCUED, rate_limit=RateLimitPolicy(escalate_after=1)),
    "transport budget spent, rescued": Case([SERVER], RESCUED, retry=RetryPolicy(max_retries=1)),
    "first-event timeouts, then a reply": Case([HANG, OK], timeouts=FAST),
    "total deadline during a hang, rescued": Case([HANG], RESCUED, TIGHT),
    "total deadline, the rescue hangs": Case([HANG], None, TIGHT),
    "cancel during a backoff": Case([SERVER], cancel_at=0.005),
    "limiter waits, then a reply": Case([OK], limiter=(60, 30.0)),
    "Retry-After beyond the deadline gives up": Case(
        [_status(429, "rate_limit_error", "600")], RESCUED, FAST, give_up=True
    ),
    "Retry-After within the deadline waits": Case([LIMITED, OK], RESCUED, FAST, give_up=True),
}


class Http:
    """A real client over a scripted transport, answering in virtual time."""

    def __init__(self, case: Case, scheduler: TestScheduler) -> None:
        self.case = case
        self.scheduler = scheduler
        self.streams = 0
        self.creates = 0
        self.transport = MockTransport(self.answer)
        self.client = AnthropicClient(
            "x", api_key="sk-paths-secret", base_url=BASE, transport=self.transport
        )

    async def answer(self, request: MockRequest) -> MockResponse:
        if request.stream:
            self.streams += 1
            script = self.case.streams
            response = script[min(self.streams, len(script)) - 1]
        else:
            self.creates += 1
            response = self.case.create
        if response is None:
            await asyncio.get_running_loop().create_future()  # never answers
        assert response is not None
        return response

    def requests(self) -> list[tuple[bool, bool]]:
        """Per request, streaming or not; paired in order with whether each response handed
        out was released (a request that never answered has none)."""
        released = [r.closed for r in self.transport.responses]
        released += [False] * (len(self.transport.requests) - len(released))
        return [(r.stream, c) for r, c in zip(self.transport.requests, released, strict=True)]


class BatchesOnly:
    """The client seen through ``stream_batches`` alone (the driver subscribes it)."""

    def __init__(self, client: AnthropicClient) -> None:
        self.client = client
        self.model = client.model
        self.base_url = client.base_url
        self.scrub = client.scrub

    def stream(self, request: Request, options: RequestOptions | None = None) -> Any:
        raise AssertionError("the handler subscribes stream_batches when the client has it")

    def stream_batches(self, request: Request, options: RequestOptions | None = None) -> Any:
        return self.client.stream_batches(request, options)

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        return await self.client.create(request, options)


class EventsOnly(BatchesOnly):
    """The client seen through its per-event ``stream`` alone."""

    stream_batches = None  # pyright: ignore[reportAssignmentType]

    def stream(self, request: Request, options: RequestOptions | None = None) -> Any:
        return self.client.stream(request, options)


def _limiter(case: Case) -> RateLimiter | None:
    if case.limiter is None:
        return None
    rpm, max_wait = case.limiter
    limiter = RateLimiter(LimiterPolicy(requests_per_minute=rpm, max_wait=max_wait))
    for _ in range(rpm):
        limiter.acquire(BASE, 0.0)
    return limiter


def _handler(case: Case, waits: list[object]) -> StreamHandler:
    return StreamHandler(
        timeouts=case.timeouts,
        retry=case.retry,
        rate_limit=case.rate_limit,
        limiter=_limiter(case),
        rng=random.Random(7),
        on_wait=lambda **kw: waits.append(_wait_facts(kw)),
    )


def _wait_facts(kw: dict[str, Any]) -> object:
    return (kw["reason"], round(kw["seconds"], 9), kw["attempt"], type(kw["error"]).__name__)


def direct(case: Case, http: Http, token: CancelToken, waits: list[object]) -> Observable[Any]:
    handler = _handler(case, waits)
    assert handler.plan_turn(http.client, REQUEST).direct
    return handler.stream_turn_batches(
        http.client,
        REQUEST,
        None,
        token,
        scheduler=http.scheduler,
        give_up_beyond_deadline=case.give_up,
    )


def batched(case: Case, http: Http, token: CancelToken, waits: list[object]) -> Observable[Any]:
    client = BatchesOnly(http.client)
    handler = _handler(case, waits)
    assert not handler.plan_turn(client, REQUEST).direct
    return handler.stream_turn_batches(
        client,
        REQUEST,
        None,
        token,
        scheduler=http.scheduler,
        give_up_beyond_deadline=case.give_up,
    )


def per_event(case: Case, http: Http, token: CancelToken, waits: list[object]) -> Observable[Any]:
    return _handler(case, waits).stream_turn_batches(
        EventsOnly(http.client),
        REQUEST,
        None,
        token,
        scheduler=http.scheduler,
        give_up_beyond_deadline=case.give_up,
    )


def composed(case: Case, http: Http, token: CancelToken, waits: list[object]) -> Observable[Any]:
    client = http.client
    return composed_turn(
        lambda: client.stream_batches(REQUEST),
        lambda: from_awaitable(lambda: client.create(REQUEST)),
        scheduler=http.scheduler,
        token=token,
        timeouts=case.timeouts,
        retry=case.retry,
        rate_limit=case.rate_limit,
        limiter=_limiter(case),
        key=client.base_url,
        scrub=client.scrub,
        give_up=case.give_up,
        on_wait=lambda **kw: waits.append(_wait_facts(kw)),
    )


@dataclass
class Recording:
    run: Run
    waits: list[object]
    requests: list[tuple[bool, bool]]


async def _record(case: Case, build: Any) -> Recording:
    scheduler = TestScheduler()
    http = Http(case, scheduler)
    token = CancelToken()
    waits: list[object] = []
    async with http.client:
        run = await drive(
            scheduler,
            build(case, http, token, waits),
            cancel=token,
            cancel_at=case.cancel_at,
            limit=100.0,
        )
        await assert_clean(scheduler)
    return Recording(run, waits, http.requests())


def _end(run: Run) -> tuple[bool, float | None, tuple[str, str, object, str | None] | None]:
    error = run.error
    facts = None
    if error is not None:
        cause = getattr(error, "stream_error", None)
        facts = (
            type(error).__name__,
            str(error),
            getattr(error, "attempts", None),
            type(cause).__name__ if cause is not None else None,
        )
    return (run.completed, run.end_time, facts)


def _flat(run: Run) -> list[object]:
    return [event for _, batch in run.items for event in batch]


@pytest.mark.parametrize("name", sorted(CASES))
async def test_every_path_matches_the_composed_operators(name: str) -> None:
    case = CASES[name]
    reference = await _record(case, composed)
    assert reference.run.finished, "the scenario must end"
    for build in (direct, batched):
        other = await _record(case, build)
        assert other.run.items == reference.run.items, build.__name__
        assert _end(other.run) == _end(reference.run), build.__name__
        assert other.waits == reference.waits, build.__name__
        assert other.requests == reference.requests, build.__name__
    single = await _record(case, per_event)
    assert all(len(batch) == 1 for _, batch in single.run.items)
    assert _flat(single.run) == _flat(reference.run)
    assert _end(single.run)[2] == _end(reference.run)[2]


def test_the_scenarios_reach_each_ending_and_each_shape() -> None:
    async def survey() -> tuple[set[str], int]:
        endings: set[str] = set()
        prefixes = 0
        for case in CASES.values():
            run = (await _record(case, composed)).run
            if run.error is not None:
                endings.add(type(run.error).__name__)
            elif run.completed:
                last = run.values[-1]
                endings.add("rescued" if "Fallback" in repr(last) else "completed")
            sizes = [len(batch) for _, batch in run.items]
            prefixes += any(size > 1 for size in sizes)
        return endings, prefixes

    endings, multi = asyncio.run(survey())
    assert {
        "completed",
        "rescued",
        "Cancelled",
        "RescueFailed",
        "InvalidToolInputError",
        "RetryAfterBeyondDeadline",
    } <= endings
    assert multi >= 5  # batches of several events, not one event per item
