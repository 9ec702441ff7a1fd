"""The asyncio↔Rx bridge: ordering, errors, cancellation and cleanup (rxturn.sources)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.testing import TestScheduler

from rxturn.errors import Cancelled, ConfigError
from rxturn.sources import from_async_iterable, from_awaitable

WAIT = 5.0  # bound on every wait in this file (seconds)


class Recorder:
    """Collects what an Observable delivers; ``done`` resolves on completion or error."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.error: BaseException | None = None
        self.completed = False
        self.done = asyncio.get_running_loop().create_future()

    def on_next(self, value: Any) -> None:
        assert not self.done.done(), "item after the terminal notification"
        self.items.append(value)

    def on_error(self, error: BaseException) -> None:
        assert not self.done.done()
        self.error = error
        self.done.set_result(None)

    def on_completed(self) -> None:
        assert not self.done.done()
        self.completed = True
        self.done.set_result(None)

    def subscribe(self, source: reactivex.Observable[Any]) -> reactivex.abc.DisposableBase:
        return source.subscribe(self.on_next, self.on_error, self.on_completed)

    async def wait(self) -> None:
        await asyncio.wait_for(asyncio.shield(self.done), WAIT)


async def settle() -> None:
    """Let cancelled tasks run their cleanup (bounded)."""
    for _ in range(10):
        await asyncio.sleep(0)


async def wait_until(predicate: Any) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.001)

    await asyncio.wait_for(poll(), WAIT)


async def test_items_arrive_in_order_then_completion() -> None:
    async def gen() -> AsyncIterator[int]:
        for i in range(5):
            await asyncio.sleep(0)
            yield i

    rec = Recorder()
    rec.subscribe(from_async_iterable(gen))
    await rec.wait()
    assert rec.items == [0, 1, 2, 3, 4]
    assert rec.completed and rec.error is None


async def test_each_subscription_calls_the_factory_again() -> None:
    calls: list[int] = []

    async def gen() -> AsyncIterator[int]:
        calls.append(1)
        yield len(calls)

    source = from_async_iterable(gen)
    first, second = Recorder(), Recorder()
    first.subscribe(source)
    second.subscribe(source)
    await first.wait()
    await second.wait()
    assert len(calls) == 2
    assert sorted(first.items + second.items) == [1, 2]


async def test_error_passes_through_unchanged_after_items() -> None:
    boom = KeyError("boom")

    async def gen() -> AsyncIterator[str]:
        yield "a"
        yield "b"
        raise boom

    rec = Recorder()
    rec.subscribe(from_async_iterable(gen))
    await rec.wait()
    assert rec.items == ["a", "b"]
    assert rec.error is boom
    assert not rec.completed


async def test_factory_error_reaches_on_error() -> None:
    def factory() -> AsyncIterator[int]:
        raise ValueError("cannot build")

    rec = Recorder()
    rec.subscribe(from_async_iterable(factory))
    await rec.wait()
    assert isinstance(rec.error, ValueError) and str(rec.error) == "cannot build"


async def test_dispose_mid_iteration_runs_finally_and_leaves_no_task() -> None:
    before = asyncio.all_tasks()
    closed = asyncio.Event()
    blocked = asyncio.Event()
    cancelled_inside: list[bool] = []

    async def gen() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
            blocked.set()
            await asyncio.Event().wait()  # never fires: a stalled socket read
            yield 3  # pragma: no cover
        except asyncio.CancelledError:
            cancelled_inside.append(True)
            raise
        finally:
            closed.set()

    rec = Recorder()
    subscription = rec.subscribe(from_async_iterable(gen))
    await asyncio.wait_for(blocked.wait(), WAIT)
    assert len(asyncio.all_tasks()) == len(before) + 1
    subscription.dispose()
    await asyncio.wait_for(closed.wait(), WAIT)
    await settle()
    assert rec.items == [1, 2]
    assert not rec.done.done(), "a disposed subscription gets no terminal notification"
    assert cancelled_inside == [True]
    assert asyncio.all_tasks() == before


async def test_dispose_from_on_next_stops_a_never_suspending_iterator() -> None:
    """``take(n)`` disposes from inside on_next; the bridge must stop without another item."""
    produced: list[int] = []
    closed = asyncio.Event()

    async def endless() -> AsyncIterator[int]:
        i = 0
        try:
            while True:
                produced.append(i)
                yield i  # never awaits: only the flag can stop this loop
                i += 1
        finally:
            closed.set()

    before = asyncio.all_tasks()
    rec = Recorder()
    rec.subscribe(from_async_iterable(endless).pipe(ops.take(3)))
    await rec.wait()
    await asyncio.wait_for(closed.wait(), WAIT)
    await settle()
    assert rec.items == [0, 1, 2] and rec.completed
    assert produced == [0, 1, 2]
    assert asyncio.all_tasks() == before


async def test_finally_may_await_after_dispose_from_on_next() -> None:
    """The generator's cleanup can await (an HTTP close does) and still completes."""
    cleaned = asyncio.Event()

    async def gen() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
        finally:
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            cleaned.set()

    rec = Recorder()
    rec.subscribe(from_async_iterable(gen).pipe(ops.take(1)))
    await rec.wait()
    await asyncio.wait_for(cleaned.wait(), WAIT)
    assert rec.items == [1]


async def test_dispose_before_the_task_starts_never_calls_the_factory() -> None:
    calls: list[int] = []

    async def gen() -> AsyncIterator[int]:  # pragma: no cover - must not run
        calls.append(1)
        yield 1

    before = asyncio.all_tasks()
    rec = Recorder()
    rec.subscribe(from_async_iterable(gen)).dispose()
    await settle()
    assert calls == [] and rec.items == [] and not rec.done.done()
    assert asyncio.all_tasks() == before


async def test_dispose_closes_a_plain_async_iterator_with_aclose() -> None:
    class Chunks:
        def __init__(self) -> None:
            self.closed = False
            self.sent = 0

        def __aiter__(self) -> Chunks:
            return self

        async def __anext__(self) -> int:
            self.sent += 1
            return self.sent

        async def aclose(self) -> None:
            self.closed = True

    chunks = Chunks()
    rec = Recorder()
    rec.subscribe(from_async_iterable(lambda: chunks).pipe(ops.take(2)))
    await rec.wait()
    assert rec.items == [1, 2]
    assert chunks.closed


async def test_on_next_error_fails_the_subscription_and_closes_the_iterator() -> None:
    closed = asyncio.Event()

    async def gen() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
        finally:
            closed.set()

    done = asyncio.get_running_loop().create_future()
    errors: list[BaseException] = []
    bad = RuntimeError("observer bug")

    def on_next(value: int) -> None:
        raise bad

    def on_error(error: BaseException) -> None:
        errors.append(error)
        done.set_result(None)

    from_async_iterable(gen).subscribe(on_next, on_error)
    await asyncio.wait_for(done, WAIT)
    assert errors == [bad]
    assert closed.is_set()


async def test_external_cancellation_reports_cancelled() -> None:
    started = asyncio.Event()

    async def gen() -> AsyncIterator[int]:
        started.set()
        await asyncio.Event().wait()
        yield 1  # pragma: no cover

    before = asyncio.all_tasks()
    rec = Recorder()
    rec.subscribe(from_async_iterable(gen))
    await asyncio.wait_for(started.wait(), WAIT)
    (task,) = asyncio.all_tasks() - before
    task.cancel()
    await rec.wait()
    assert isinstance(rec.error, Cancelled)
    assert "cancelled" in str(rec.error)
    await settle()
    assert task.cancelled()


def test_subscribing_without_a_loop_is_a_config_error() -> None:
    async def gen() -> AsyncIterator[int]:  # pragma: no cover - never driven
        yield 1

    errors: list[BaseException] = []
    from_async_iterable(gen).subscribe(on_error=errors.append)
    (error,) = errors
    assert isinstance(error, ConfigError)
    assert "event loop" in str(error) and "from_async_iterable" in str(error)

    from_awaitable(lambda: asyncio.sleep(0)).subscribe(on_error=errors.append)
    assert isinstance(errors[1], ConfigError) and "from_awaitable" in str(errors[1])


def test_a_non_asyncio_scheduler_is_rejected_at_call_time() -> None:
    async def gen() -> AsyncIterator[int]:  # pragma: no cover - never driven
        yield 1

    with pytest.raises(ConfigError, match=r"AsyncIOScheduler.*TestScheduler"):
        from_async_iterable(gen, scheduler=TestScheduler())


async def test_a_scheduler_of_a_loop_that_never_runs_is_a_config_error_not_a_hang() -> None:
    # made, never run (as at import time on asyncio.get_event_loop(), before asyncio.run made
    # the loop that runs): the task was handed to it and the subscription waited for ever
    idle = asyncio.new_event_loop()
    made: list[int] = []

    async def gen() -> AsyncIterator[int]:  # pragma: no cover - never driven
        made.append(1)
        yield 1

    try:
        for source in (
            from_async_iterable(gen, scheduler=AsyncIOScheduler(idle)),
            from_awaitable(lambda: asyncio.sleep(0), scheduler=AsyncIOScheduler(idle)),
        ):
            rec = Recorder()
            rec.subscribe(source)
            await rec.wait()
            assert isinstance(rec.error, ConfigError)
            assert "not running" in str(rec.error) and "running loop's scheduler" in str(rec.error)
    finally:
        idle.close()
    assert made == []


async def test_the_sources_scheduler_wins_over_the_running_loop() -> None:
    # (as documented: the scheduler names the loop to run on, wherever the subscription is made)
    other = asyncio.new_event_loop()
    runner = threading.Thread(target=other.run_forever, daemon=True)
    runner.start()
    loop = asyncio.get_running_loop()
    threads: list[int] = []

    async def gen() -> AsyncIterator[int]:
        threads.append(threading.get_ident())
        yield 7

    rec = Recorder()

    def on_next(v: int) -> None:
        loop.call_soon_threadsafe(rec.on_next, v)

    def on_error(e: Exception) -> None:
        loop.call_soon_threadsafe(rec.on_error, e)

    def on_completed() -> None:
        loop.call_soon_threadsafe(rec.on_completed)

    try:
        source = from_async_iterable(gen, scheduler=AsyncIOScheduler(other))
        source.subscribe(on_next, on_error, on_completed)
        await rec.wait()
    finally:
        other.call_soon_threadsafe(other.stop)
        runner.join(WAIT)
        other.close()
    assert rec.items == [7] and rec.completed
    assert threads == [runner.ident]


async def test_subscribe_from_another_thread_runs_on_the_scheduler_loop() -> None:
    loop = asyncio.get_running_loop()
    threads: list[int] = []

    async def gen() -> AsyncIterator[int]:
        threads.append(threading.get_ident())
        yield 7

    rec = Recorder()
    source = from_async_iterable(gen, scheduler=AsyncIOScheduler(loop))

    def on_next(v: int) -> None:
        loop.call_soon_threadsafe(rec.on_next, v)

    def on_error(e: Exception) -> None:
        loop.call_soon_threadsafe(rec.on_error, e)

    def on_completed() -> None:
        loop.call_soon_threadsafe(rec.on_completed)

    def subscribe_elsewhere() -> None:
        source.subscribe(on_next, on_error, on_completed)

    worker = threading.Thread(target=subscribe_elsewhere)
    worker.start()
    worker.join(WAIT)
    await rec.wait()
    assert rec.items == [7] and rec.completed
    assert threads == [threading.get_ident()]


class TestFromAwaitable:
    async def test_single_value_then_completion(self) -> None:
        async def answer() -> int:
            await asyncio.sleep(0)
            return 42

        rec = Recorder()
        rec.subscribe(from_awaitable(answer))
        await rec.wait()
        assert rec.items == [42] and rec.completed

    async def test_error_passes_through(self) -> None:
        boom = OSError("nope")

        async def fail() -> int:
            raise boom

        rec = Recorder()
        rec.subscribe(from_awaitable(fail))
        await rec.wait()
        assert rec.error is boom and rec.items == []

    async def test_dispose_cancels_the_await(self) -> None:
        started = asyncio.Event()
        cancelled = asyncio.Event()

        async def slow() -> int:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return 1  # pragma: no cover

        before = asyncio.all_tasks()
        rec = Recorder()
        subscription = rec.subscribe(from_awaitable(slow))
        await asyncio.wait_for(started.wait(), WAIT)
        subscription.dispose()
        await asyncio.wait_for(cancelled.wait(), WAIT)
        await settle()
        assert not rec.done.done()
        assert asyncio.all_tasks() == before


def test_a_factory_given_as_what_it_makes_is_refused_at_call_time() -> None:
    """``from_awaitable(client.create(r))`` instead of ``lambda: client.create(r)``: each
    subscription failed with "'coroutine' object is not callable", and the coroutine was never
    awaited. It is a ConfigError now, and the coroutine is closed (no RuntimeWarning)."""

    async def value() -> int:
        return 1

    async def items() -> AsyncIterator[int]:
        yield 1

    coroutine = value()
    with pytest.raises(ConfigError, match=r"^from_awaitable: factory must be a function making"):
        from_awaitable(coroutine)  # pyright: ignore[reportArgumentType]
    assert coroutine.cr_frame is None  # closed
    generator = items()
    with pytest.raises(ConfigError, match=r"^from_async_iterable: factory must be a function"):
        from_async_iterable(generator)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError, match=r"got int 3$"):
        from_awaitable(3)  # pyright: ignore[reportArgumentType]


async def test_a_factory_making_the_wrong_thing_is_a_config_error_on_error() -> None:
    """A factory returning something the bridge cannot drive failed with a bare TypeError from
    inside ``async for`` / ``await``; a coroutine where an async iterator belongs was also
    left un-awaited. Each is a ConfigError naming the bridge and what it got."""

    async def returns() -> list[int]:  # an ``async def`` that returns rather than yields
        return [1]

    made: list[Any] = []

    def coroutine_factory() -> Any:
        made.append(returns())
        return made[-1]

    cases: list[tuple[reactivex.Observable[Any], str]] = [
        (
            from_async_iterable(lambda: [1, 2]),  # pyright: ignore[reportArgumentType]
            "from_async_iterable: factory() must return an async iterator, got list [1, 2]",
        ),
        (
            from_async_iterable(coroutine_factory),
            "from_async_iterable: factory() must return an async iterator, got coroutine",
        ),
        (
            from_awaitable(lambda: 3),  # pyright: ignore[reportArgumentType]
            "from_awaitable: factory() must return an awaitable, got int 3",
        ),
    ]
    for observable, message in cases:
        rec = Recorder()
        rec.subscribe(observable)
        await rec.wait()
        assert isinstance(rec.error, ConfigError)
        assert str(rec.error).startswith(message)
    assert made[0].cr_frame is None  # closed, never left un-awaited
