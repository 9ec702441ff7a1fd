"""The Python API over any iterable of rows: a coroutine, and an Observable of row results."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import time
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from types import AsyncGeneratorType, GeneratorType
from typing import Any, cast

import msgspec
import reactivex
from reactivex import Observable, abc
from reactivex.disposable import Disposable
from reactivex.scheduler import NewThreadScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler

from .._arguments import shown
from ..clients._base import ModelClient
from ..errors import Cancelled, ConfigError
from ..messages import Message
from ._budget import Budget, Gate, LocalGate, check_gate
from ._errors import BatchInputError
from ._input import BatchRow, check_row_options, check_turn, checked_sha, decode_row
from ._runner import BatchConfig, RowOk, RowResult, Runner, checked_config, drive

__all__ = ["BAR_SIZE", "BatchSummary", "Tally", "batch_results", "run_batch", "sized"]

RowInput = Mapping[str, Any] | BatchRow


class BatchSummary(msgspec.Struct, frozen=True, kw_only=True):
    """How a run ended.

    Attributes:
        total: rows of the input.
        ok: rows whose last result is served.
        error: rows whose last result is an error.
        pending: rows with no result yet (not reached, cancelled, or interrupted).
        skipped: rows a resumed run did not send again (their earlier line stands).
        input_tokens: input tokens reported by the rows served in this run.
        output_tokens: output tokens reported by the rows served in this run.
        seconds: wall-clock duration of this run.
        interrupted: the run was stopped before every row was sent.
    """

    total: int
    ok: int
    error: int
    pending: int
    skipped: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        """The CLI's: 130 interrupted, 0 every row ok, 3 some rows failed or are pending."""
        if self.interrupted:
            return 130
        return 0 if self.ok == self.total else 3


class Tally:
    """Running counts (what the progress display and the summary read)."""

    __slots__ = ("done", "error", "input_tokens", "ok", "output_tokens", "started", "total")

    def __init__(self, total: int, *, ok: int = 0, error: int = 0) -> None:
        self.total = total
        self.ok = ok
        self.error = error
        self.done = ok + error
        self.input_tokens = 0
        self.output_tokens = 0
        self.started = time.monotonic()

    def add(self, result: RowResult, previous: str | None = None) -> None:
        """Count ``result``; ``previous`` is the status it supersedes (a retried row)."""
        usage = result.usage if isinstance(result, RowOk) else None
        self.count(
            "ok" if isinstance(result, RowOk) else "error",
            usage.input_tokens if usage is not None else 0,
            usage.output_tokens if usage is not None else 0,
            previous,
        )

    def count(
        self, status: str, input_tokens: int, output_tokens: int, previous: str | None
    ) -> None:
        if previous == "ok":
            self.ok -= 1
        elif previous == "error":
            self.error -= 1
        else:
            self.done += 1
        if status == "ok":
            self.ok += 1
        else:
            self.error += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens

    def summary(self, *, skipped: int = 0, interrupted: bool = False) -> BatchSummary:
        return BatchSummary(
            total=self.total,
            ok=self.ok,
            error=self.error,
            pending=max(self.total - self.ok - self.error, 0),
            skipped=skipped,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            seconds=time.monotonic() - self.started,
            interrupted=interrupted,
        )


class _Rows:
    """Decodes each row (any shape) with its ``input_sha``; its errors name it ``row N``
    (from 1), where an input file's name ``line N``."""

    __slots__ = ("number", "provider", "seen")

    def __init__(self, provider: str) -> None:
        self.seen: set[str] = set()
        self.number = 0
        self.provider = provider  # a provider line's fields are sent as written to its own

    def decode(self, item: object) -> tuple[BatchRow, str]:
        self.number = number = self.number + 1
        if isinstance(item, BatchRow):
            # JSON first, as for a mapping: a number JSON cannot spell is "not JSON data"
            # wherever it sits, before the options' own checks see it
            sha = checked_sha(item, number)
            row = _checked_row(item, number)
        else:
            if not isinstance(item, Mapping):
                raise BatchInputError(
                    f"row {number}: expected a mapping (one of the row shapes) or a BatchRow, "
                    f"got {type(item).__name__}",
                    line=number,
                )
            obj = dict(cast("Mapping[str, Any]", item))
            sha = checked_sha(obj, number)  # first: the shapes' checks take it for JSON
            try:
                row = decode_row(obj, number, provider=self.provider)
            except BatchInputError as exc:
                raise _as_row(exc, number) from None
            if "id" not in obj and "custom_id" not in obj:  # a native row without a key
                row = msgspec.structs.replace(row, key=f"row-{number}-{sha[:16]}")
        if row.key in self.seen:
            raise BatchInputError(f"row {number}: duplicate key {shown(row.key, 100)}", line=number)
        self.seen.add(row.key)
        return row, sha


def _as_row(exc: BatchInputError, number: int) -> BatchInputError:
    """A decoded row's error ("line N: …", as an input file's line is named) said as the
    iterable's row N."""
    what = str(exc).removeprefix(f"line {number}: ")
    return BatchInputError(f"row {number}: {what}", line=number)


def _checked_row(row: BatchRow, number: int) -> BatchRow:
    """A :class:`BatchRow` made in Python, held to what a decoded row is (a Struct's fields
    are not checked when it is made): else a row with no messages, or options the runner
    never reads, would be sent as it is."""

    def fail(what: str) -> BatchInputError:
        return BatchInputError(f"row {number}: BatchRow: {what}", line=number)

    if not isinstance(row.key, str) or not row.key.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise fail(f"key must be a non-empty string, got {shown(row.key, 100)}")
    messages = cast(object, row.messages)
    if not isinstance(messages, tuple | list) or not all(
        isinstance(m, Message) for m in cast("tuple[object, ...]", messages)
    ):
        raise fail("messages must be a sequence of Message")
    for name in ("system", "model"):
        value: object = getattr(row, name)
        if value is not None and not isinstance(value, str):
            raise fail(f"{name} must be a string or None, got {type(value).__name__}")
    try:
        check_turn(tuple(row.messages), number)
        check_row_options(row.options, number, "options")
    except BatchInputError as exc:  # "line N: …" as a decoded row's: said as this row's
        raise fail(str(exc).removeprefix(f"line {number}: ")) from None
    return row


def _rows(rows: Iterable[RowInput], provider: str) -> Iterator[tuple[BatchRow, str]]:
    """Each row of an iterable, decoded, read as the run takes them. A generator of rows is
    closed when the run stops reading it (cancelled, a bad row, an error of ``on_result``):
    its ``finally`` and ``with`` blocks run then, not when it is collected. Any other iterator
    is the caller's (a database cursor has a ``close()`` too) and is left as it is."""
    rows_ = _Rows(provider)
    source = iter(cast("Iterable[object]", rows))
    try:
        for item in source:
            yield rows_.decode(item)
    finally:
        if isinstance(source, GeneratorType):
            source.close()


async def _async_rows(
    rows: AsyncIterable[RowInput], provider: str
) -> AsyncIterator[tuple[BatchRow, str]]:
    """Each row of an async iterable, decoded, read as the run takes them; an async generator
    of rows is closed (``aclose()``) as :func:`_rows` closes a generator (``async for`` does
    not); any other async iterator is left to its owner."""
    rows_ = _Rows(provider)
    source = aiter(cast("AsyncIterable[object]", rows))
    try:
        async for item in source:
            yield rows_.decode(item)
    finally:
        if isinstance(source, AsyncGeneratorType):
            await source.aclose()


def _check_arguments(
    rows: object, config: object, *, on_result: object = None, gate: object = None
) -> None:
    """Raises ConfigError for arguments no run can take."""
    checked_config(config)
    if (
        isinstance(rows, str | bytes)
        or not (hasattr(rows, "__iter__") or hasattr(rows, "__aiter__"))
        or hasattr(rows, "keys")
    ):
        raise ConfigError(  # (an async iterable is taken too)
            f"rows must be an iterable of rows (mappings or BatchRow), got {type(rows).__name__}"
        )
    if on_result is not None and not callable(on_result):
        raise ConfigError(
            f"on_result must be a callable taking each RowResult, got {type(on_result).__name__}"
        )
    check_gate(gate, "gate")


def default_gate(config: BatchConfig) -> LocalGate:
    return LocalGate(Budget(rpm=config.rpm, tpm=config.tpm))


async def _run(
    rows: Iterable[RowInput] | AsyncIterable[RowInput],
    config: BatchConfig,
    emit: Callable[[RowResult], object],
    *,
    api_key: str | None,
    gate: Gate | None,
    client: Any,
    stop: asyncio.Event | None,
) -> None:
    _check_arguments(rows, config, gate=gate)
    gate = gate if gate is not None else default_gate(config)
    stop = stop if stop is not None else asyncio.Event()
    tasks: set[asyncio.Future[None]] = set()
    async with Runner(config, api_key=api_key, gate=gate, client=client) as runner:
        failures: list[BaseException] = []

        async def one(row: BatchRow, sha: str) -> None:
            result = await runner.run_row(row, sha)
            taken = emit(result)
            if inspect.isawaitable(taken):  # an ``async def`` callback: the row's place
                await taken  # stays taken until it is done (no callbacks pile up)

        def start(job: tuple[BatchRow, str]) -> asyncio.Future[None]:
            task = asyncio.ensure_future(one(*job))
            tasks.add(task)

            def done(future: asyncio.Future[None]) -> None:
                tasks.discard(future)
                if future.cancelled():
                    return
                error = future.exception()
                if error is not None and not isinstance(error, Cancelled):
                    failures.append(error)  # the caller's callback, or no row's own failure:
                    stop.set()  # stop, and raise it

            task.add_done_callback(done)
            return task

        try:
            try:
                jobs = (
                    _async_rows(rows, config.provider)
                    if isinstance(rows, AsyncIterable)
                    else _rows(rows, config.provider)
                )
                running = await drive(jobs, start, limit=config.concurrency, stop=stop)
            except Exception:
                # the rows' iterable failed (or a row of no known shape): the rows in flight
                # were sent, so they finish and are delivered; then the error is raised
                if tasks:
                    await asyncio.gather(*list(tasks), return_exceptions=True)
                raise
            if running:
                await asyncio.gather(*running, return_exceptions=True)
        finally:
            for future in list(tasks):
                future.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
        if failures:
            raise failures[0]


async def run_batch(
    rows: Iterable[RowInput] | AsyncIterable[RowInput],
    config: BatchConfig,
    *,
    api_key: str | None = None,
    on_result: Callable[[RowResult], object] | None = None,
    gate: Gate | None = None,
    client: ModelClient | None = None,
    progress: bool | None = None,
) -> BatchSummary:
    """Run every row as one turn, ``config.concurrency`` at a time; the summary.

    ``rows`` is any iterable or async iterable of rows (native, OpenAI Batch or Anthropic
    batch shapes, as mappings, or :class:`~rxturn.batch.BatchRow`), read lazily. A row's
    failure is a :class:`RowError` passed to ``on_result``, not an exception. ``on_result``
    may be an ``async def``: each call is awaited, and the row's place in ``concurrency`` is
    held until it returns; an exception it raises stops the run and is raised here.
    ``progress``: ``None`` (the default) shows a progress bar where someone watches, a widget
    in a Jupyter kernel (with ipywidgets installed) or a text bar when stderr is a terminal,
    and nothing otherwise (a pipe, a log file); ``True`` always shows one, ``False`` never.

    Raises:
        BatchInputError: a row of no known shape, or a duplicate key.
        ConfigError: a bad setting in ``config``, ``rows`` that are no iterable, an
            ``on_result`` that is not callable, a ``gate`` that is no Gate, or a ``progress``
            that is not a bool or None; before any request.
    """
    if progress is not None and not isinstance(progress, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"progress must be True, False or None, got {shown(progress, 100)}")
    _check_arguments(rows, config, on_result=on_result, gate=gate)
    total = len(rows) if hasattr(rows, "__len__") else 0  # pyright: ignore[reportArgumentType]
    tally = Tally(total)
    show = progress if progress is not None else watched()
    bar = _bar(total) if show else None

    def emit(result: RowResult) -> object:
        tally.add(result)
        if bar is not None:
            bar.update(1)
        return on_result(result) if on_result is not None else None

    try:
        await _run(rows, config, emit, api_key=api_key, gate=gate, client=client, stop=None)
    finally:
        if bar is not None:
            bar.close()
    if not total:
        tally.total = tally.done
    return tally.summary()


def watched() -> bool:
    """Whether a progress bar has a reader: this runs in a Jupyter kernel, or stderr is a
    terminal."""
    ipython: Any = sys.modules.get("IPython")  # a kernel has imported it; never imported here
    if ipython is not None:
        shell = ipython.get_ipython()
        if shell is not None and "IPKernelApp" in shell.config:
            return True
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):  # a closed stream
        return False


#: the bar's columns and rows on a terminal that reports no size
BAR_SIZE = (80, 24)


def sized(stream: Any) -> bool:
    """Whether ``stream`` is a terminal that reports its size, or no terminal at all: a
    pseudo-terminal no one sized (``script``, ``docker run -t`` before its first resize) says
    0 columns, which tqdm takes for -1 and draws nothing in."""
    try:
        return os.get_terminal_size(stream.fileno()).columns > 0
    except (AttributeError, ValueError, OSError):  # not a terminal, or no descriptor
        return True  # (tqdm's own rules then)


def _bar(total: int) -> Any:
    """A tqdm bar: ``tqdm.auto`` draws a widget in a Jupyter kernel, text on stderr elsewhere."""
    from tqdm.auto import tqdm

    fits = sized(sys.stderr)
    return tqdm(
        total=total or None,
        unit="row",
        desc="rxturn batch",
        ncols=None if fits else BAR_SIZE[0],
        nrows=None if fits else BAR_SIZE[1],
    )


_NO_LOOP = (
    "batch_results(...) must be subscribed on a running asyncio event loop (inside a "
    "coroutine, e.g. under asyncio.run), or with scheduler=AsyncIOScheduler(loop) for a loop "
    "another thread runs"
)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _subscribe_loop(
    scheduler: abc.SchedulerBase | None,
) -> tuple[asyncio.AbstractEventLoop | ConfigError, bool]:
    """The loop a subscription runs its rows on, and whether the caller runs it: the
    subscribe-time scheduler's when it is an asyncio one (its loop is where the caller wants
    the results), else the running loop. A ConfigError when there is none, it is closed, or
    it is a loop that does not run while another one runs here, or the subscription is
    ``Observable.run()``'s on the running loop's thread (it would block that loop)."""
    running = _running_loop()
    loop = (
        scheduler._loop  # pyright: ignore[reportPrivateUsage]
        if isinstance(scheduler, AsyncIOScheduler)
        else running
    )
    if loop is None:
        return ConfigError(_NO_LOOP), False
    if loop is running and isinstance(scheduler, NewThreadScheduler):
        # (``Observable.run()``'s: it then blocks this thread, the running loop's, until the
        # last result, which only this loop can bring: for ever)
        return ConfigError(
            "batch_results(...).run() (a subscription with a NewThreadScheduler, then a "
            "blocking wait) on the thread of the running event loop would block the loop the "
            "rows run on for ever: use `await batch_results(...)` (the last result) or "
            "subscribe and await a future"
        ), False
    if loop.is_closed():
        return ConfigError(
            "batch_results(...) was subscribed with an AsyncIOScheduler whose event loop is "
            "closed: nothing would ever run the rows"
        ), False
    if running is not None and loop is not running and not loop.is_running():
        # (a scheduler made at import time on asyncio.get_event_loop(), before asyncio.run
        # made the loop that runs: its loop never runs, and the rows would wait for ever)
        return ConfigError(
            "batch_results(...) was subscribed on a running event loop with an "
            "AsyncIOScheduler of another loop, which is not running: the rows would wait for "
            "it for ever (give the running loop's scheduler, or none)"
        ), False
    return loop, loop is running


def batch_results(
    rows: Iterable[RowInput] | AsyncIterable[RowInput],
    config: BatchConfig,
    *,
    api_key: str | None = None,
    gate: Gate | None = None,
    client: ModelClient | None = None,
) -> Observable[RowResult]:
    """The same run as a cold Observable: one :class:`RowOk` / :class:`RowError` per row, in
    completion order, then completion. Subscribe on a running asyncio loop, or pass
    ``subscribe(..., scheduler=AsyncIOScheduler(loop))``: the rows then run on that loop
    (one another thread runs, say), and every result is delivered on its thread; subscribed
    with neither (or with a scheduler whose loop is closed), it signals a ConfigError
    through ``on_error``. Another kind of scheduler is not used: the rows' IO is asyncio's,
    and their timing is the engine's. Disposing the subscription cancels the rows in flight,
    from any thread; so does an exception raised by the observer's ``on_next``, which then
    reaches its ``on_error`` at once. ``rows`` may be an async iterable. Each subscription
    runs the rows again; rows given as an iterator are read by the first one, and a later
    one signals a ConfigError (it would run no row). Compose it with any Rx operator::

        batch_results(rows, config).pipe(ops.filter(lambda r: r.status == "ok"))
    """

    # an iterator is read once: a second run over it would find no row and "succeed" empty
    once = isinstance(rows, Iterator | AsyncIterator)
    used = False

    def subscribe(
        observer: abc.ObserverBase[RowResult], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        nonlocal used
        loop, here = _subscribe_loop(scheduler)
        if isinstance(loop, ConfigError):  # nothing would ever run the rows: say so
            observer.on_error(loop)
            return Disposable()
        if used:
            observer.on_error(
                ConfigError(
                    f"batch_results: rows is an iterator ({type(rows).__name__}), given to an "
                    "earlier subscription that reads it: this one would run no row; pass a "
                    "list (or another iterable that can be read again) to subscribe more than "
                    "once"
                )
            )
            return Disposable()
        used = once
        task: asyncio.Task[None] | None = None
        stop: asyncio.Event | None = None
        disposed = False
        broken: list[Exception] = []  # what the observer's on_next raised

        def deliver(result: RowResult) -> None:
            if broken:
                return  # the observer failed: it hears nothing more but that failure
            try:
                observer.on_next(result)
            except Exception as exc:
                # as a source ends on a raising on_next: the rows in flight are let go (nobody
                # is left to take their results) and the exception goes to on_error now, not
                # once the slowest row in flight has finished
                broken.append(exc)
                cancel()

        def finished(future: asyncio.Future[None]) -> None:
            if broken:
                observer.on_error(broken.pop())
                return
            if future.cancelled():
                return
            error = future.exception()
            if error is None:
                observer.on_completed()
            else:
                observer.on_error(cast(Exception, error))

        def start() -> None:  # on the loop's thread
            nonlocal task, stop
            if disposed:
                return
            stop = asyncio.Event()
            task = loop.create_task(
                _run(
                    rows,
                    config,
                    deliver,
                    api_key=api_key,
                    gate=gate,
                    client=client,
                    stop=stop,
                )
            )
            task.add_done_callback(finished)

        def cancel() -> None:  # on the loop's thread
            if stop is not None:
                stop.set()
            if task is not None:
                task.cancel()

        def dispose() -> None:
            nonlocal disposed
            disposed = True
            if _running_loop() is loop:
                cancel()
            elif not loop.is_closed():
                loop.call_soon_threadsafe(cancel)

        if here:
            start()
        else:  # the scheduler's loop, run by another thread (or not yet running)
            loop.call_soon_threadsafe(start)
        return Disposable(dispose)

    return reactivex.create(subscribe)
