"""The Python API as a hurried user calls it: an ``async def`` callback, an async generator of
rows, a callback or a gate that is not one, an Observable subscribed with no event loop
running. Each either works as one would expect or is a typed error before any request."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import math
import re
import threading
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from reactivex import operators as ops
from reactivex.scheduler import NewThreadScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler

from rxturn.batch import (
    BatchConfig,
    BatchInputError,
    BatchRow,
    RowOk,
    RowResult,
    batch_results,
    run_batch,
)
from rxturn.errors import ConfigError
from rxturn.messages import Message
from rxturn.testing import FakeProvider

from ._support import prompts

SCENARIO = {"models": {"*": [{"text": "an answer"}]}}


def _config(url: str, **kwargs: Any) -> BatchConfig:
    return BatchConfig(provider="anthropic", model="m", base_url=url, **kwargs)


async def test_an_async_callback_is_awaited_for_every_row() -> None:
    seen: list[str] = []

    async def store(result: RowResult) -> None:
        await asyncio.sleep(0)  # an await before the result is kept, as a database write has
        seen.append(result.id)

    async with FakeProvider(SCENARIO) as fake:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "coroutine ... was never awaited" fails the test
            summary = await asyncio.wait_for(
                run_batch(prompts(12), _config(fake.base_url, concurrency=4), on_result=store), 30
            )
            gc.collect()
    assert summary.ok == 12
    assert sorted(seen) == sorted(f"r{i}" for i in range(12))


async def test_an_async_callback_that_raises_stops_the_run_and_is_raised() -> None:
    async def refuse(result: RowResult) -> None:
        await asyncio.sleep(0)
        raise LookupError(f"cannot store {result.id}")

    async with FakeProvider(SCENARIO) as fake:
        with pytest.raises(LookupError, match="cannot store r"):
            await asyncio.wait_for(
                run_batch(prompts(6), _config(fake.base_url), on_result=refuse), 30
            )


async def test_a_raising_callback_stops_a_run_whose_source_awaits_its_next_row() -> None:
    """An async source fed from a queue may wait for ever for its next row: the callback's
    error ends that wait (the source is closed) rather than wait with it."""
    closed: list[bool] = []

    async def rows() -> AsyncIterator[dict[str, Any]]:
        try:
            yield {"id": "a", "prompt": "x"}
            await asyncio.Event().wait()  # nothing more comes
            yield {"id": "b", "prompt": "x"}
        finally:
            closed.append(True)

    def refuse(result: RowResult) -> None:
        raise LookupError(f"cannot store {result.id}")

    async with FakeProvider(SCENARIO) as fake:
        with pytest.raises(LookupError, match="cannot store a"):
            await asyncio.wait_for(run_batch(rows(), _config(fake.base_url), on_result=refuse), 10)
        assert len(fake.requests) == 1
    assert closed == [True]


async def test_an_async_generator_of_rows_is_read_lazily() -> None:
    pulled = 0

    async def rows() -> AsyncIterator[dict[str, Any]]:
        nonlocal pulled
        for row in prompts(30):
            pulled += 1
            await asyncio.sleep(0)
            yield row

    seen: list[RowResult] = []
    async with FakeProvider(SCENARIO) as fake:
        summary = await asyncio.wait_for(
            run_batch(rows(), _config(fake.base_url, concurrency=3), on_result=seen.append), 30
        )
    assert (summary.total, summary.ok) == (30, 30)
    assert pulled == 30
    assert sorted(r.id for r in seen) == sorted(f"r{i}" for i in range(30))


async def test_an_async_generator_feeds_the_observable_too() -> None:
    async def rows() -> AsyncIterator[dict[str, Any]]:
        for row in prompts(5):
            yield row

    async with FakeProvider(SCENARIO) as fake:
        done: asyncio.Future[list[RowResult]] = asyncio.get_running_loop().create_future()
        collected: list[RowResult] = []
        batch_results(rows(), _config(fake.base_url)).subscribe(
            on_next=collected.append,
            on_error=done.set_exception,
            on_completed=lambda: done.set_result(collected),
        )
        results = await asyncio.wait_for(done, 30)
    assert sorted(r.id for r in results if isinstance(r, RowOk)) == [f"r{i}" for i in range(5)]


async def test_a_bad_row_from_an_async_generator_is_a_typed_error_naming_it() -> None:
    async def rows() -> AsyncIterator[object]:
        yield {"id": "a", "prompt": "x"}
        yield ["not", "a", "row"]

    async with FakeProvider(SCENARIO) as fake:
        with pytest.raises(BatchInputError, match=r"^row 2: expected a mapping"):
            await asyncio.wait_for(run_batch(rows(), _config(fake.base_url)), 30)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"on_result": 5}, "on_result must be a callable taking each RowResult, got int"),
        (
            {"gate": "budget"},
            "gate must be a Gate (acquire, correct, restamp, release, pause), got str",
        ),
    ],
)
async def test_a_callback_or_a_gate_that_is_not_one_is_refused_before_any_request(
    arguments: dict[str, Any], words: str
) -> None:
    async with FakeProvider(SCENARIO) as fake:
        with pytest.raises(ConfigError, match=re.escape(words)):
            await asyncio.wait_for(run_batch(prompts(3), _config(fake.base_url), **arguments), 30)
        assert fake.requests == []


async def test_the_observable_refuses_a_gate_that_is_not_one_through_on_error() -> None:
    errors: list[Exception] = []
    batch_results(prompts(2), _config("http://127.0.0.1:9"), gate=object()).subscribe(  # pyright: ignore[reportArgumentType]
        on_error=errors.append
    )
    await asyncio.sleep(0.05)
    assert [type(e) for e in errors] == [ConfigError]


@pytest.mark.parametrize(
    ("scheduler", "words"),
    [
        (None, "running asyncio event loop"),
        ("closed", "AsyncIOScheduler whose event loop is closed"),
    ],
    ids=["no scheduler", "a scheduler on a closed loop"],
)
def test_subscribing_with_no_event_loop_running_is_a_config_error_not_silence(
    scheduler: str | None, words: str
) -> None:
    errors: list[Exception] = []
    closed = asyncio.new_event_loop()
    closed.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine or a task left behind fails the test
        batch_results(prompts(2), _config("http://127.0.0.1:9")).subscribe(
            on_next=lambda _: None,
            on_error=errors.append,
            scheduler=AsyncIOScheduler(closed) if scheduler else None,
        )
        gc.collect()
    assert len(errors) == 1
    assert isinstance(errors[0], ConfigError)
    assert words in str(errors[0])


async def test_a_scheduler_of_a_loop_that_does_not_run_is_refused_on_a_running_one() -> None:
    """Subscribed on this running loop with the scheduler of another loop that nothing runs
    (one made at import time, before ``asyncio.run`` made this one): a ConfigError, not rows
    waiting for ever."""
    other = asyncio.new_event_loop()
    errors: list[Exception] = []
    try:
        batch_results(prompts(2), _config("http://127.0.0.1:9")).subscribe(
            on_error=errors.append, scheduler=AsyncIOScheduler(other)
        )
    finally:
        other.close()
    assert [type(e) for e in errors] == [ConfigError]
    assert "another loop, which is not running" in str(errors[0])


async def test_run_on_the_running_loops_thread_is_a_config_error_not_a_hang() -> None:
    """``Observable.run()`` called where a loop runs (a Jupyter cell, a coroutine) subscribes
    with a NewThreadScheduler and then blocks this thread, the one the rows need: it raises
    a ConfigError at once instead of waiting for ever."""
    async with FakeProvider(SCENARIO) as fake:
        observable = batch_results(prompts(2), _config(fake.base_url))
        errors: list[Exception] = []
        observable.subscribe(on_error=errors.append, scheduler=NewThreadScheduler()).dispose()
        assert [type(e) for e in errors] == [ConfigError]  # at once: run() would wait on it
        with pytest.raises(ConfigError, match=r"\.run\(\) .* would block the loop"):
            observable.run()
        assert await observable.pipe(ops.count()) == 2  # awaited, the same rows run
    assert fake.requests[0]["model"] == "m" and len(fake.requests) == 2


@pytest.mark.parametrize("end", ["completes", "disposed from the thread"])
async def test_a_subscription_with_an_asyncio_scheduler_runs_on_its_loop(end: str) -> None:
    """Subscribed from a thread that runs no loop, with ``scheduler=AsyncIOScheduler(loop)``
    (this test's loop): the rows run on that loop and every call reaches the observer on its
    thread; a dispose from the other thread cancels the rows in flight."""
    scenario = {"models": {"*": [{"text": "an answer"}], "stalled": _STALLED["models"]["*"]}}
    loop = asyncio.get_running_loop()
    calls: list[tuple[str, int]] = []
    done = loop.create_future()
    rows = prompts(3)
    if end != "completes":
        for row in rows:
            row["model"] = "stalled"
    async with FakeProvider(scenario) as fake:
        observable = batch_results(rows, _config(fake.base_url))

        def subscribe() -> Any:
            return observable.subscribe(
                on_next=lambda r: calls.append((r.id, threading.get_ident())),
                on_error=done.set_exception,
                on_completed=lambda: done.set_result(threading.get_ident()),
                scheduler=AsyncIOScheduler(loop),
            )

        subscription = await asyncio.wait_for(asyncio.to_thread(subscribe), 30)
        if end == "completes":
            assert await asyncio.wait_for(done, 30) == threading.get_ident()
            assert sorted(calls) == [(f"r{i}", threading.get_ident()) for i in range(3)]
        else:
            for _ in range(500):
                if len(fake.requests) == 3:
                    break
                await asyncio.sleep(0.01)
            await asyncio.wait_for(asyncio.to_thread(subscription.dispose), 30)
            for _ in range(500):
                if fake.disconnects == 3:
                    break
                await asyncio.sleep(0.01)
            assert (len(fake.requests), fake.disconnects, calls) == (3, 3, [])


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_rows_in_flight_when_the_iterable_raises_are_delivered_before_the_error(
    kind: str,
) -> None:
    """Their requests were sent (and billed): their results reach ``on_result``, then the
    iterable's own exception is raised."""

    def rows() -> Iterator[dict[str, Any]]:
        yield from prompts(3)
        raise ValueError("the source broke")

    async def arows() -> AsyncIterator[dict[str, Any]]:
        for row in prompts(3):
            yield row
        raise ValueError("the source broke")

    seen: list[RowResult] = []
    async with FakeProvider(SCENARIO) as fake:
        with pytest.raises(ValueError, match="the source broke"):
            await asyncio.wait_for(
                run_batch(
                    rows() if kind == "sync" else arows(),
                    _config(fake.base_url, concurrency=5),
                    on_result=seen.append,
                ),
                30,
            )
    assert sorted(r.id for r in seen) == ["r0", "r1", "r2"]
    assert all(isinstance(r, RowOk) for r in seen)


#: a Python str can hold half of a UTF-16 pair, which no UTF-8 text (so no request) can
_LONE = "a string holds a lone UTF-16 surrogate (\\ud800 without its pair), which is not text"


#: JSON has no NaN or infinity: msgspec would write null, and the request would say another thing
_NAN = "a number is NaN or infinite, which JSON has no spelling for"
_HI = [{"role": "user", "content": "hi"}]


def _nested(depth: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    inner = top
    for _ in range(depth):
        inner["a"] = inner = {}
    return top


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (
            {"id": "a", "prompt": "x", "options": {"extra_body": {"k": object()}}},
            "Encoding objects of type object is unsupported",
        ),
        ({"id": "a", "prompt": "x", 7: "seven"}, "an object's keys must be strings"),
        ({1: "a", "x": 2}, "an object's keys must be strings"),
        (
            {
                "custom_id": "a",
                "body": {"messages": [{"role": "user", "content": "hi"}], **_nested(50_000)},
            },
            "nested too deeply",
        ),
        ({"id": "a", "prompt": "x\ud800"}, _LONE),
        ({"id": "\udc00", "prompt": "x"}, _LONE.replace("d800", "dc00")),
        (BatchRow(key="a", messages=(Message.user("x\ud800"),)), _LONE),
        ({"id": "a", "prompt": "x", "options": {"extra_body": {"k": [1.5, math.inf]}}}, _NAN),
        ({"custom_id": "a", "params": {"messages": _HI, "top_p": math.nan}}, _NAN),
        (
            BatchRow(
                key="a", messages=(Message.user("x"),), options={"extra_body": {"k": -math.inf}}
            ),
            _NAN,
        ),
    ],
    ids=[
        "a value of another type",
        "an int key",
        "mixed keys",
        "nesting",
        "a lone surrogate",
        "in the key",
        "in a BatchRow",
        "an infinity",
        "a NaN",
        "an infinity in a BatchRow",
    ],
)
async def test_a_row_that_is_no_json_data_is_a_typed_error_naming_it(
    row: dict[Any, Any] | BatchRow, words: str
) -> None:
    """A Python row can hold what a JSON line cannot; it is refused as the row it is, not with a
    TypeError or RecursionError from deep inside."""
    async with FakeProvider(SCENARIO) as fake:
        rows = [{"id": "first", "prompt": "x"}, row]
        with pytest.raises(BatchInputError, match=rf"^row 2: not JSON data: {re.escape(words)}$"):
            await asyncio.wait_for(run_batch(rows, _config(fake.base_url, concurrency=1)), 30)


async def test_rows_of_every_shape_run_side_by_side() -> None:
    """Native prompt and messages rows, an OpenAI Batch line, an Anthropic batch request, a
    BatchRow and a row without a key in one iterable: each is its own turn, keyed as its shape
    keys it (the last by its number in the iterable, ``row N``, as its errors name it)."""
    rows: list[Any] = [
        {"id": "native", "prompt": "from a prompt"},
        {"id": "messages", "messages": [{"role": "user", "content": "from messages"}]},
        {
            "custom_id": "openai",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"messages": [{"role": "user", "content": "from an openai line"}]},
        },
        {
            "custom_id": "anthropic",
            "params": {
                "max_tokens": 9,
                "messages": [{"role": "user", "content": "from an anthropic request"}],
            },
        },
        BatchRow(key="struct", messages=(Message.user("from a BatchRow"),)),
        {"prompt": "from a row without a key"},
    ]
    # the sixth row, keyed by its number and its content's sha256 (canonical JSON)
    keyless = "row-6-" + hashlib.sha256(b'{"prompt":"from a row without a key"}').hexdigest()[:16]
    seen: list[RowResult] = []
    async with FakeProvider(SCENARIO) as fake:
        summary = await asyncio.wait_for(
            run_batch(rows, _config(fake.base_url), on_result=seen.append), 30
        )
        sent = sorted(str(body["messages"][0]["content"]) for body in fake.requests)
    assert (summary.total, summary.ok) == (6, 6)
    assert sorted(r.id for r in seen) == sorted(
        ["anthropic", "messages", "native", "openai", "struct", keyless]
    )
    assert sent == sorted(
        [
            "from a row without a key",
            "from a prompt",
            "from messages",
            "from an openai line",
            "from an anthropic request",
            "from a BatchRow",
        ]
    )


async def test_an_empty_iterable_is_an_empty_summary_and_no_request() -> None:
    async with FakeProvider(SCENARIO) as fake:
        summary = await asyncio.wait_for(run_batch(iter(()), _config(fake.base_url)), 30)
        assert fake.requests == []
    assert (summary.total, summary.ok, summary.error, summary.pending) == (0, 0, 0, 0)
    assert summary.exit_code == 0


async def test_a_key_seen_twice_is_a_typed_error_naming_the_second_row() -> None:
    """The key of an Anthropic batch request (``custom_id``) and of a native row (``id``) are
    one key space: the same key in both shapes is a duplicate."""
    rows: list[dict[str, Any]] = [
        {"id": "k1", "prompt": "x"},
        {
            "custom_id": "k1",
            "params": {"max_tokens": 5, "messages": [{"role": "user", "content": "y"}]},
        },
    ]
    async with FakeProvider(SCENARIO) as fake:
        with pytest.raises(BatchInputError, match=r"^row 2: duplicate key 'k1'$") as caught:
            await asyncio.wait_for(run_batch(rows, _config(fake.base_url)), 30)
        assert len(fake.requests) == 1  # the first row was read, and sent, before the second
    assert caught.value.line == 2


_STALLED = {"models": {"*": [{"text": "never", "stall_after_events": 1}]}}


class _Source:
    """The rows as a sync or an async generator that notes when it is closed (its ``finally``
    runs: where a source closes the file or the cursor it reads). It is held here, as a
    caller's variable holds it, so that no garbage collection closes it instead."""

    def __init__(self, rows: list[dict[str, Any]], kind: str) -> None:
        self.rows, self.kind, self.closed = rows, kind, False
        self.held: object = None

    def __call__(self) -> Any:
        self.held = self.sync() if self.kind == "sync" else self.agen()
        return self.held

    def sync(self) -> Iterator[dict[str, Any]]:
        try:
            yield from self.rows
        finally:
            self.closed = True

    async def agen(self) -> AsyncIterator[dict[str, Any]]:
        try:
            for row in self.rows:
                yield row
        finally:
            self.closed = True


def _raise(_: object) -> None:
    raise ValueError("the callback broke")


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("stop", ["a bad row", "on_result raises"])
async def test_a_run_that_stops_early_closes_its_source(kind: str, stop: str) -> None:
    """The run stops reading a generator of rows it has not finished: the generator is closed
    then (its ``finally`` runs), not left suspended until it is collected."""
    rows = prompts(10)
    if stop == "a bad row":
        rows[2] = {"id": "bad"}
    source = _Source(rows, kind)
    async with FakeProvider(SCENARIO) as fake:
        with pytest.raises((BatchInputError, ValueError)):
            await asyncio.wait_for(
                run_batch(
                    source(),
                    _config(fake.base_url, concurrency=1),
                    on_result=_raise if stop == "on_result raises" else None,
                ),
                30,
            )
    assert source.closed


class _Cursor:
    """An iterator of the caller's with a ``close()`` of its own (a database cursor): the run
    reads it and leaves it open, whether the run ends or stops early."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows, self.closed = iter(rows), False

    def __iter__(self) -> _Cursor:
        return self

    def __next__(self) -> dict[str, Any]:
        return next(self.rows)

    async def __anext__(self) -> dict[str, Any]:
        try:
            return next(self.rows)
        except StopIteration:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("bad", [False, True])
async def test_an_iterator_of_the_callers_is_left_open(kind: str, bad: bool) -> None:
    rows = prompts(4)
    if bad:
        rows[1] = {"id": "bad"}
    cursor = _Cursor(rows) if kind == "sync" else _AsyncCursor(rows)
    async with FakeProvider(SCENARIO) as fake:
        run = run_batch(cursor, _config(fake.base_url, concurrency=1))
        if bad:
            with pytest.raises(BatchInputError):
                await asyncio.wait_for(run, 30)
        else:
            assert (await asyncio.wait_for(run, 30)).ok == 4
    assert not cursor.closed


class _AsyncCursor(_Cursor):
    def __aiter__(self) -> _AsyncCursor:
        return self


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("how", ["cancel the coroutine", "take(3) of the Observable"])
async def test_stopping_early_closes_every_stream_in_flight(how: str, kind: str) -> None:
    """The coroutine cancelled (``asyncio.CancelledError`` reaches its caller), or an Rx
    operator that stops reading: the rows still in flight are cancelled, their connections
    closed, the rows' generator closed, and no task is left behind."""
    scenario = {"models": {"*": [{"text": "an answer"}], "stalled": _STALLED["models"]["*"]}}
    rows = prompts(8)
    for row in rows[3:]:
        row["model"] = "stalled"  # three rows are served; five never end on their own
    source = _Source(rows, kind)  # (five in flight: it is never read to its end)
    async with FakeProvider(scenario) as fake:
        config = _config(fake.base_url, concurrency=5)
        if how == "cancel the coroutine":
            run = asyncio.ensure_future(run_batch(source(), config))
            for _ in range(500):
                if len(fake.requests) == 8:
                    break
                await asyncio.sleep(0.01)
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(run, 30)
        else:
            done: asyncio.Future[list[RowResult]] = asyncio.get_running_loop().create_future()
            batch_results(source(), config).pipe(ops.take(3), ops.to_list()).subscribe(
                on_next=done.set_result, on_error=done.set_exception
            )
            served = await asyncio.wait_for(done, 30)
            assert sorted(r.id for r in served) == ["r0", "r1", "r2"]
        # (take(3) may end the run before every stalled row's request was sent)
        for _ in range(500):
            if fake.disconnects == len(fake.requests) - 3:
                break
            await asyncio.sleep(0.01)
        assert fake.disconnects == len(fake.requests) - 3 > 0
        assert all(r.end == "disconnected" for r in fake.records if r.model == "stalled")
        # the server's handler of a closed connection ends a few loop turns after its record
        # (a task rxturn left behind would never end: a stalled row's stream is endless)
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for _ in range(200):
            if not left:
                break
            await asyncio.sleep(0.01)
            left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert left == []
    assert source.closed
