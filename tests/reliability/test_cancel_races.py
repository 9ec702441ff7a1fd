"""Cancellation races end clean (docs/reliability.md §7).

A cancel lands at every point of a turn — before the request is sent, during the connect, while
waiting for the headers, mid-stream, while an error body is read, while a failing non-streaming
reply is read, during a backoff, during a rate-limit wait (the ladder's and the limiter's),
during the rescue — on both paths where the point exists. Each time the turn must end with
:class:`~rxturn.errors.Cancelled` (or, when the caller cancels the asyncio task instead of the
token, with ``CancelledError``), the server must see the hang-up where a request was in flight,
and ``asyncio.all_tasks()`` must come back to what it was. The suite-wide fixture in
``tests/conftest.py`` then fails the test if asyncio reported an unretrieved exception, a pending
task destroyed, or an unclosed session / connection / transport (a ``ResourceWarning``).

Real servers on 127.0.0.1 answer every request; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from rxturn.engine import TurnEngine
from rxturn.engine.handler import StreamHandler
from rxturn.engine.observation.observers import Observer
from rxturn.errors import Cancelled
from rxturn.resilience.limiter import RateLimiter
from rxturn.resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy

from ._loopback import Site, serve, settled_tasks
from .conftest import make_client, wire_reply, wire_stream

MODES = ["streaming", "non_streaming"]
LONG = 30.0  # every wait a cancel must cut short is this long: the turn never ends by itself


async def hold(request: web.Request, site: Site) -> web.StreamResponse:
    """Never answer (until the client hangs up)."""
    await asyncio.sleep(LONG * 2)
    raise AssertionError("the client never hung up")


def resilient(**overrides: Any) -> StreamHandler:
    timeouts: dict[str, Any] = {
        "first_event": LONG,
        "per_event": LONG,
        "total": LONG * 2,
        "rescue": False,
    }
    retry: dict[str, Any] = {"max_retries": 0, "base_delay": 0.001, "max_delay": 0.01}
    rate: dict[str, Any] = {"default_delay": 0.001, "max_delay": 0.01}
    for key, value in overrides.items():
        if key in timeouts:
            timeouts[key] = value
        elif key.startswith("retry_"):
            retry[key.removeprefix("retry_")] = value
        elif key.startswith("rate_"):
            rate[key.removeprefix("rate_")] = value
    return StreamHandler(
        timeouts=TimeoutPolicy(**timeouts),
        retry=RetryPolicy(**retry),
        rate_limit=RateLimitPolicy(**rate),
        limiter=overrides.get("limiter"),
    )


async def run_and_cancel(
    engine: TurnEngine,
    when: Callable[[], Any] | None,
    *,
    how: str = "token",
    after: float = 0.05,
) -> BaseException | None:
    """Run one turn; once ``when()`` is true (polled, bounded), wait ``after`` s and cancel it —
    with the engine's token, or by cancelling the asyncio task (``when=None``: the test cancels
    by itself). Returns what the turn raised."""
    turn = asyncio.ensure_future(engine.run("hi"))

    async def trigger() -> None:
        if when is None:
            return
        for _ in range(500):
            if when() or turn.done():
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the cancel point was never reached")
        await asyncio.sleep(after)
        if how == "token":
            engine.cancel("stop")
        else:
            turn.cancel()

    trigger_task = asyncio.ensure_future(trigger())
    try:
        await asyncio.wait_for(asyncio.shield(turn), 10)
    except BaseException as exc:
        outcome: BaseException | None = exc
    else:
        outcome = None
    await trigger_task
    return outcome


def assert_cancelled(outcome: BaseException | None, how: str) -> None:
    if how == "token":
        assert isinstance(outcome, Cancelled), repr(outcome)
        assert str(outcome) == "stop"
    else:
        assert isinstance(outcome, asyncio.CancelledError), repr(outcome)


@asynccontextmanager
async def watched() -> AsyncGenerator[None]:
    """Fail unless the running tasks come back to what they were before the block."""
    before = set(asyncio.all_tasks())
    yield
    left = await settled_tasks(before)
    assert not left, f"tasks outlived the turn: {left}"


# ---------------------------------------------------------------------------- before send


class CancelAtTurnStart(Observer):
    def __init__(self) -> None:
        self.engine: TurnEngine | None = None

    def on_turn_start(self, *, turn: int, query: str) -> None:
        assert self.engine is not None
        self.engine.cancel("stop")


@pytest.mark.parametrize("mode", MODES)
async def test_a_cancel_before_the_request_is_sent(mode: str) -> None:
    observer = CancelAtTurnStart()
    async with serve(hold) as site, make_client("anthropic", site) as client:
        engine = TurnEngine(client, handler=resilient(), mode=mode, observers=[observer])  # pyright: ignore[reportArgumentType]
        observer.engine = engine
        async with watched():
            outcome = await run_and_cancel(engine, None)
        assert_cancelled(outcome, "token")
        assert len(site.requests) == 0


# ---------------------------------------------------------------------------- during connect


@asynccontextmanager
async def silent_tcp() -> AsyncGenerator[tuple[int, asyncio.Event]]:
    """A TCP server that accepts and never says a word: a TLS handshake to it never ends."""
    accepted = asyncio.Event()
    writers: list[asyncio.StreamWriter] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        accepted.set()
        await reader.read()  # until the client hangs up
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield port, accepted
    finally:
        for writer in writers:
            writer.close()
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("how", ["token", "task"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_cancel_during_the_connect(mode: str, how: str) -> None:
    async with silent_tcp() as (port, accepted):
        from rxturn.clients import AnthropicClient

        async with AnthropicClient(
            "m", api_key="sk-test", base_url=f"https://127.0.0.1:{port}", connect_timeout=LONG
        ) as client:
            engine = TurnEngine(client, handler=resilient(), mode=mode)  # pyright: ignore[reportArgumentType]
            async with watched():
                outcome = await run_and_cancel(engine, accepted.is_set, how=how)
            assert_cancelled(outcome, how)


# ------------------------------------------------------------------ waiting for the reply


@pytest.mark.parametrize("how", ["token", "task"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_cancel_while_waiting_for_the_headers(mode: str, how: str) -> None:
    async with serve(hold) as site, make_client("anthropic", site) as client:
        engine = TurnEngine(client, handler=resilient(), mode=mode)  # pyright: ignore[reportArgumentType]
        async with watched():
            outcome = await run_and_cancel(engine, site.handled.is_set, how=how)
        assert_cancelled(outcome, how)
        await asyncio.wait_for(site.disconnected.wait(), 5)


@pytest.mark.parametrize("how", ["token", "task"])
async def test_a_cancel_mid_stream(how: str) -> None:
    head = wire_stream("anthropic", text=["one ", "two "], complete=False)
    sent = asyncio.Event()

    async def half(request: web.Request, site: Site) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(head)
        sent.set()
        await asyncio.sleep(LONG * 2)
        return response

    async with serve(half) as site, make_client("anthropic", site) as client:
        engine = TurnEngine(client, handler=resilient())
        async with watched():
            outcome = await run_and_cancel(engine, sent.is_set, how=how)
        assert_cancelled(outcome, how)
        await asyncio.wait_for(site.disconnected.wait(), 5)


@pytest.mark.parametrize("how", ["token", "task"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_cancel_while_an_error_body_is_read(mode: str, how: str) -> None:
    started = asyncio.Event()

    async def slow_error(request: web.Request, site: Site) -> web.StreamResponse:
        response = web.StreamResponse(status=500, headers={"Content-Type": "text/html"})
        await response.prepare(request)
        await response.write(b"<html><title>down</title>")
        started.set()
        await asyncio.sleep(LONG * 2)
        return response

    async with serve(slow_error) as site, make_client("anthropic", site) as client:
        engine = TurnEngine(client, handler=resilient(), mode=mode)  # pyright: ignore[reportArgumentType]
        async with watched():
            outcome = await run_and_cancel(engine, started.is_set, how=how)
        assert_cancelled(outcome, how)
        await asyncio.wait_for(site.disconnected.wait(), 5)


class _CancelOnFailureLog(logging.Handler):
    """Cancels the engine the moment the client logs a failed request: inside the reply task,
    just before its exception is raised, so the cancel and the failure land together."""

    def __init__(self, engine: TurnEngine) -> None:
        super().__init__(logging.DEBUG)
        self.engine = engine
        self.fired = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "failed" in record.getMessage():
            self.fired += 1
            self.engine.cancel("stop")


@pytest.mark.parametrize("status", [500, 400])
async def test_a_cancel_that_wins_while_the_failing_reply_is_read(status: int) -> None:
    """The non-streaming reply fails in the same instant the cancel wins the race: the turn is
    Cancelled and the reply's exception is retrieved (no "Task exception was never retrieved")."""

    async def failing(request: web.Request, site: Site) -> web.StreamResponse:
        return web.json_response(
            {"type": "error", "error": {"type": "api_error", "message": "boom"}}, status=status
        )

    reports: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: reports.append(context))
    logger = logging.getLogger("rxturn.clients")
    async with serve(failing) as site, make_client("anthropic", site) as client:
        engine = TurnEngine(client, handler=resilient(), mode="non_streaming")
        spy = _CancelOnFailureLog(engine)
        level = logger.level
        logger.addHandler(spy)
        logger.setLevel(logging.DEBUG)
        try:
            async with watched():
                outcome = await run_and_cancel(engine, None)
        finally:
            logger.removeHandler(spy)
            logger.setLevel(level)
        assert spy.fired == 1, "the race was not provoked"
        assert_cancelled(outcome, "token")
    del outcome
    gc.collect()
    loop.set_exception_handler(None)
    assert not reports, [str(context.get("message")) for context in reports]


# ------------------------------------------------------------------------ the ladder's waits


def failing_stream(status: int, headers: dict[str, str] | None = None) -> Any:
    async def handler(request: web.Request, site: Site) -> web.StreamResponse:
        return web.json_response(
            {"type": "error", "error": {"type": "api_error", "message": "try later"}},
            status=status,
            headers=headers,
        )

    return handler


@pytest.mark.parametrize("how", ["token", "task"])
async def test_a_cancel_during_a_backoff_wait(how: str) -> None:
    async with serve(failing_stream(500)) as site, make_client("anthropic", site) as client:
        handler = resilient(retry_max_retries=3, retry_base_delay=LONG, retry_max_delay=LONG)
        engine = TurnEngine(client, handler=handler)
        async with watched():
            outcome = await run_and_cancel(
                engine, lambda: len(site.requests) >= 1, how=how, after=0.2
            )
        assert_cancelled(outcome, how)
        assert len(site.requests) == 1


@pytest.mark.parametrize("how", ["token", "task"])
async def test_a_cancel_during_a_rate_limit_wait(how: str) -> None:
    limited = failing_stream(429, {"retry-after": str(int(LONG))})
    async with serve(limited) as site, make_client("anthropic", site) as client:
        handler = resilient(rate_default_delay=LONG, rate_max_delay=LONG * 2)
        engine = TurnEngine(client, handler=handler)
        async with watched():
            outcome = await run_and_cancel(
                engine, lambda: len(site.requests) >= 1, how=how, after=0.2
            )
        assert_cancelled(outcome, how)
        assert len(site.requests) == 1


@pytest.mark.parametrize("how", ["token", "task"])
async def test_a_cancel_while_the_limiter_holds_the_attempt(how: str) -> None:
    stream = wire_stream("anthropic", text=["hi"])

    async def healthy(request: web.Request, site: Site) -> web.StreamResponse:
        return web.Response(body=stream, content_type="text/event-stream")

    limiter = RateLimiter.per_minute(1, max_wait=LONG)
    async with serve(healthy) as site, make_client("anthropic", site) as client:
        engine = TurnEngine(client, handler=resilient(limiter=limiter))
        assert (await engine.run("first")).text == "hi"  # spends the only token
        async with watched():
            outcome = await run_and_cancel(engine, lambda: True, how=how, after=0.2)
        assert_cancelled(outcome, how)
        assert len(site.requests) == 1, "the held attempt was sent anyway"


@pytest.mark.parametrize("how", ["token", "task"])
async def test_a_cancel_during_the_rescue(how: str) -> None:
    async def stream_fails_rescue_hangs(request: web.Request, site: Site) -> web.StreamResponse:
        if len(site.requests) == 1:
            return await failing_stream(500)(request, site)
        return await hold(request, site)

    async with serve(stream_fails_rescue_hangs) as site, make_client("anthropic", site) as client:
        engine = TurnEngine(client, handler=resilient(rescue=True))
        async with watched():
            outcome = await run_and_cancel(engine, lambda: len(site.requests) >= 2, how=how)
        assert_cancelled(outcome, how)
        assert site.bodies[-1].get("stream") is not True, "the second request was not the rescue"
        await asyncio.wait_for(site.disconnected.wait(), 5)


async def test_a_served_rescue_leaves_nothing_behind() -> None:
    """The control: the same rescue, answered, ends clean too."""
    reply = wire_reply("anthropic", text="rescued")

    async def stream_fails(request: web.Request, site: Site) -> web.StreamResponse:
        if len(site.requests) == 1:
            return await failing_stream(500)(request, site)
        return web.Response(body=reply, content_type="application/json")

    async with serve(stream_fails) as site, make_client("anthropic", site) as client:
        engine = TurnEngine(client, handler=resilient(rescue=True))
        async with watched():
            result = await engine.run("hi")
        assert result.text == "rescued" and len(site.requests) == 2


# ------------------------------------------------------------------ the hygiene check itself


@pytest.mark.loop_reports_expected
async def test_the_suite_records_an_unretrieved_task_exception() -> None:
    """The conftest check is armed: a task whose exception nobody retrieves is recorded (this
    test is marked as expecting it, and checks the record itself)."""
    import loop_hygiene

    async def fail() -> None:
        raise RuntimeError("nobody looks at me")

    task = asyncio.ensure_future(fail())
    await asyncio.sleep(0.01)
    assert task.done()
    del task
    gc.collect()
    reports = loop_hygiene.take()
    assert any(
        "never retrieved" in report and "nobody looks at me" in report for report in reports
    ), reports
