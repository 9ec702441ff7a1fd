"""The one place where asyncio and ReactiveX meet.

RxPY has no async-iterable source (it has ``from_future`` and ``start_async``, which run eagerly
and cannot close what they opened). rxturn's IO is asyncio — an HTTP response is an async
iterator of byte chunks — and its pipeline is Rx, so this module provides the bridge, once:

* :func:`from_async_iterable` — a **cold** Observable: every subscription calls ``factory()``
  for a fresh async iterator and drives it from **one asyncio task** on the event loop, calling
  ``on_next`` for each item as soon as it arrives, then ``on_completed`` or ``on_error``.
* :func:`from_awaitable` — the single-value twin, for non-streaming calls.

Theory of operation
-------------------
The task is created at subscription time on the loop of the
:class:`~reactivex.scheduler.eventloop.AsyncIOScheduler` given to the source, else on the running
loop, else (from a thread running none) on the loop of the subscribe-time asyncio scheduler.
Items are emitted on that loop's thread, in iteration order; nothing is buffered.

Disposing the subscription cancels the task. The ``CancelledError`` lands inside the iterator's
pending ``await`` (for rxturn clients: the socket read), so an async generator's ``finally``
runs — that is where a client closes its HTTP response — and the bridge then calls ``aclose()``
on the iterator as well, which also covers a dispose that arrives while the task sits between two
items (for example a downstream ``take(n)`` disposing from inside ``on_next``: the task never
cancels itself, it notices the flag and closes the iterator normally). Nothing is emitted after
dispose.

Errors raised by the iterator (or by ``factory`` itself) reach ``on_error`` unchanged: mapping
library exceptions to :mod:`rxturn.errors` is the transport's job, not the bridge's. An
exception raised by a downstream ``on_next`` also ends the subscription through ``on_error``
(after the iterator is closed), so a broken observer fails the pipeline instead of hanging it.
If asyncio itself cancels the task (the loop is shutting down) the observer gets
:class:`~rxturn.errors.Cancelled`.

Subscribing where no event loop can be found, or with the scheduler of a loop that is not
running while another loop runs here (so that nothing would ever start the task), is a
:class:`~rxturn.errors.ConfigError`, sent to ``on_error`` with a message that says how to fix
it.

Driven by the subscriber's own task
-----------------------------------
A subscriber that will do nothing but wait for the stream's end — the engine's turn, awaiting its
reply — may drive the first bridge its subscription starts itself: during
:func:`subscribe_driving` (one synchronous subscribe, in that task) the first bridge started on
its loop is handed over instead of getting a task, and the subscriber awaits
:meth:`Bridge.drive`. Items,
errors and disposal are the same; a turn saves a task (its object, a copy of the context, a step
handle) and, at the end, the loop iteration that would wake it. A dispose from outside the task
cancels that task (the ``CancelledError`` lands in the pending read, as it would in the bridge's
own task) and :meth:`~Bridge.drive` takes that cancellation back (``Task.uncancel``), so the
subscriber's task goes on; a cancellation of the subscriber's task itself passes through.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, ParamSpec, TypeVar

import reactivex
from reactivex import Observable, abc
from reactivex.disposable import Disposable
from reactivex.scheduler.eventloop import AsyncIOScheduler

from ._arguments import described
from .errors import Cancelled, ConfigError

__all__ = [
    "Bridge",
    "bridge_loop",
    "bridge_loop_here",
    "dead_loop",
    "from_async_iterable",
    "from_awaitable",
    "open_bridge",
    "start_bridge",
    "subscribe_driving",
]

_T = TypeVar("_T")
_S = TypeVar("_S")
_P = ParamSpec("_P")

# asyncio keeps only weak references to tasks; a subscription whose disposable is dropped must
# still run to completion, so running bridge tasks are held here until they finish. A task
# leaves the set as its coroutine ends (``Bridge.run``), or when it is cancelled before its
# coroutine started (``Bridge.cancel``): no done callback, so no callback handle and no copy of
# the context per attempt.
_RUNNING: set[asyncio.Task[None]] = set()

#: The claim a subscribing task holds, during its synchronous subscribe, on the first bridge
#: that subscription starts (see "Driven by the subscriber's own task"): its loop and a list
#: that receives the bridge. A module slot rather than a context variable: setting one would
#: leave new context mappings alive in the task for the rest of the turn. A bridge honours a
#: claim of its own loop only, so a claim seen from another thread's loop is never taken (the
#: other thread's bridge just gets its task, as without a claim).
_claim: tuple[asyncio.AbstractEventLoop, list[Bridge[Any]]] | None = None

_NO_LOOP = (
    "{what} must be subscribed from code running on an asyncio event loop (for example inside "
    "`async def main()` run by `asyncio.run`), or be given "
    "`scheduler=AsyncIOScheduler(loop)` for a loop running in another thread; no running event "
    "loop was found"
)


def from_async_iterable(
    factory: Callable[[], AsyncIterator[_T]],
    *,
    scheduler: abc.SchedulerBase | None = None,
) -> Observable[_T]:
    """A cold Observable that drives a fresh async iterator per subscription.

    Args:
        factory: called once per subscription, inside the driving task, to create the iterator
            (typically an async generator function that opens an HTTP response and closes it in
            ``finally``).
        scheduler: an :class:`~reactivex.scheduler.eventloop.AsyncIOScheduler` naming the loop to
            run on, wherever the subscription is made (a loop another thread runs, say; items
            are then emitted on that thread). Without it the running loop is used; failing
            that, the subscribe-time scheduler if it is an asyncio one.

    Returns:
        An Observable emitting each item on the loop's thread, in order, then completing.

    Raises:
        ConfigError: (at call time) when ``factory`` is not callable (an iterator or a
            coroutine given itself rather than the function that makes one) or ``scheduler`` is
            not an asyncio scheduler; (via ``on_error``) when no event loop can be found at
            subscription, ``scheduler``'s loop is not running while another loop runs there
            (nothing would ever start the stream), or ``factory()`` returns something that is
            not an async iterator.

    Examples:
        >>> async def numbers():
        ...     try:
        ...         for i in range(3):
        ...             yield i
        ...     finally:
        ...         print("closed")
        >>> from_async_iterable(numbers)  # doctest: +ELLIPSIS
        <reactivex.observable.observable.Observable object at ...>
    """
    _check_factory(factory, "from_async_iterable", "an async iterator")
    fixed_loop = _scheduler_loop(scheduler, "from_async_iterable")

    async def produce(state: Bridge[_T]) -> None:
        iterator = _made(factory(), "from_async_iterable", "an async iterator", "__aiter__")
        try:
            async for item in iterator:
                if state.disposed:
                    break
                state.emit(item)
                if state.disposed:
                    break
        finally:
            aclose: Callable[[], Awaitable[Any]] | None = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()

    return _bridge(produce, fixed_loop, "from_async_iterable")


def from_awaitable(
    factory: Callable[[], Awaitable[_T]],
    *,
    scheduler: abc.SchedulerBase | None = None,
) -> Observable[_T]:
    """A cold Observable of one awaited value per subscription; dispose cancels the await.

    Args:
        factory: called once per subscription, inside the driving task (e.g. ``lambda:
            client.create(request)``).
        scheduler: as for :func:`from_async_iterable`.

    Returns:
        An Observable emitting the awaited value, then completing (or failing with its error).

    Raises:
        ConfigError: as for :func:`from_async_iterable` (``from_awaitable(client.create(r))``
            rather than ``from_awaitable(lambda: client.create(r))`` is the usual slip).
    """
    _check_factory(factory, "from_awaitable", "an awaitable")
    fixed_loop = _scheduler_loop(scheduler, "from_awaitable")

    async def produce(state: Bridge[_T]) -> None:
        value = await _made(factory(), "from_awaitable", "an awaitable", "__await__")
        if not state.disposed:
            state.emit(value)

    return _bridge(produce, fixed_loop, "from_awaitable")


def _made(made: _S, what: str, makes: str, protocol: str) -> _S:
    """What ``factory()`` returned, if it is what the bridge drives: else a ConfigError (sent to
    ``on_error``) naming the slip, rather than a ``TypeError`` from inside ``async for`` or
    ``await`` (a coroutine where an async iterator belongs is closed, never left un-awaited)."""
    if hasattr(type(made), protocol):
        return made
    hint = ""
    if inspect.iscoroutine(made):
        made.close()
        hint = " (an `async def` that returns rather than yields: make it an async generator)"
    raise ConfigError(f"{what}: factory() must return {makes}, got {described(made)}{hint}")


def _check_factory(factory: object, what: str, makes: str) -> None:
    """``factory`` is a function (one call per subscription), not the thing it makes: a
    coroutine or an iterator given itself could be consumed once at most, and failed each
    subscription with "object is not callable" (a coroutine then never awaited)."""
    if callable(factory):
        return
    if inspect.iscoroutine(factory):
        factory.close()  # refused: never left un-awaited
    raise ConfigError(
        f"{what}: factory must be a function making {makes} (one per subscription, e.g. "
        f"lambda: ...), got {described(factory)}"
    )


class Bridge(abc.DisposableBase, Generic[_T]):
    """One subscription of a bridged source: the driving task, the flags and the disposable,
    in one slotted object (no closures, no Rx subscription wrappers).

    ``produce(bridge)`` is the coroutine that does the IO: it calls :meth:`emit` for each item
    and stops once :attr:`disposed` is set. :func:`open_bridge` starts one; rxturn's clients
    call it directly for the stream handler (``BatchSource.attach``).
    """

    __slots__ = (
        "cancelling",
        "disposed",
        "finished",
        "loop",
        "observer",
        "producer",
        "started",
        "task",
        "what",
    )

    def __init__(
        self,
        observer: abc.ObserverBase[_T],
        loop: asyncio.AbstractEventLoop,
        produce: Callable[[Bridge[_T]], Awaitable[None]] | None,
        what: str,
    ) -> None:
        self.observer = observer
        self.loop = loop
        self.producer = produce
        self.what = what
        self.disposed = False
        self.finished = False
        self.started = False
        self.cancelling = False  # a dispose cancelled the subscriber's task (``drive``)
        self.task: asyncio.Task[None] | None = None

    def emit(self, item: _T) -> None:
        """Hand ``item`` to the observer."""
        self.observer.on_next(item)

    def produce(self) -> Awaitable[None]:
        """The coroutine doing the IO: ``produce(bridge)`` as given (a subclass may instead
        override this method)."""
        assert self.producer is not None
        return self.producer(self)

    def start(self) -> None:  # on the loop's thread
        if self.disposed:
            return
        claim = _claim
        if claim is not None and claim[0] is self.loop and not claim[1]:
            claim[1].append(self)  # the subscribing task drives it (``drive``)
            return
        task = self.loop.create_task(self.run())
        self.task = task
        _RUNNING.add(task)

    async def run(self) -> None:
        self.started = True
        error: Exception | None = None
        try:
            await self.produce()
        except asyncio.CancelledError:
            if self.disposed:
                return
            # Not our dispose: asyncio cancelled the task (loop shutdown). Tell the observer,
            # then let the cancellation finish the task.
            self.finished = True
            _deliver(
                self.loop,
                self.observer.on_error,
                Cancelled(
                    f"{self.what}: the asyncio task was cancelled (event loop shutting down?)"
                ),
            )
            raise
        except Exception as exc:
            error = exc
        finally:
            _RUNNING.discard(self.task)
        try:
            self._end(error)
        finally:
            error = None  # this frame is in the error's traceback: keeping it makes a cycle

    async def drive(self) -> None:
        """Run the bridge in the calling task: the one that claimed it
        (:func:`subscribe_driving`).

        Returns when the bridge ended or was disposed; raises only what the task itself is
        sent (a cancellation of the task, ``KeyboardInterrupt``)."""
        task = asyncio.current_task(self.loop)
        assert task is not None
        self.task = task
        try:
            self.started = True
            if self.disposed:
                return
            error: Exception | None = None
            try:
                if task.cancelling():
                    # A cancellation already waits for the task: it lands here, before any IO (a
                    # task of its own would never have started), not in the middle of a connect.
                    await asyncio.sleep(0)
                await self.produce()
            except asyncio.CancelledError:
                if self.cancelling:  # our dispose's cancel: take it back, unless another came too
                    self.cancelling = False
                    if task.uncancel() > 0:
                        raise
                    return
                # The task's own cancellation (its caller's): the bridge has nothing to report;
                # the caller disposes the subscription as it unwinds.
                raise
            except Exception as exc:
                error = exc
            # (A dispose cancels the task only while it waits here, inside ``produce``: the
            # cancellation always lands in it, and was taken back above.)
            try:
                self._end(error)
            finally:
                error = None  # this frame is in the error's traceback: keeping it makes a cycle
        finally:
            # the task is the caller's and outlives the bridge: kept (here, or in this frame,
            # which an error of ``produce`` holds in its traceback), it would make a cycle of a
            # task that holds the turn's error, whose traceback holds the bridge
            self.task = task = None

    def _end(self, error: Exception | None) -> None:
        """``produce`` returned (``error``: or raised): the observer's terminal call, unless
        the subscription was disposed."""
        if self.disposed:
            return
        self.finished = True
        if error is None:
            _deliver(self.loop, self.observer.on_completed)
        else:
            _deliver(self.loop, self.observer.on_error, error)

    def cancel(self) -> None:  # on the loop's thread
        task = self.task
        # A dispose from inside on_next (e.g. ``take(n)``) runs in the task itself: never
        # cancel the running task; it sees the flag and closes the iterator normally.
        if task is not None and not task.done() and asyncio.current_task(self.loop) is not task:
            self.cancelling = True  # (``drive`` takes it back from the subscriber's task)
            task.cancel()
            if not self.started:  # its coroutine will never run to take it out
                _RUNNING.discard(task)

    def dispose(self) -> None:
        already = self.disposed or self.finished
        self.disposed = True
        if already:
            return
        loop = self.loop
        if _running_loop() is loop:
            self.cancel()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self.cancel)


def bridge_loop(
    observer: abc.ObserverBase[_T],
    scheduler: abc.SchedulerBase | None,
    fixed_loop: asyncio.AbstractEventLoop | None,
    what: str,
) -> asyncio.AbstractEventLoop | None:
    """The loop a bridge runs on; ``None`` after sending ``observer`` the
    :class:`ConfigError` that says there is none."""
    return bridge_loop_here(observer, scheduler, fixed_loop, what)[0]


def bridge_loop_here(
    observer: abc.ObserverBase[_T],
    scheduler: abc.SchedulerBase | None,
    fixed_loop: asyncio.AbstractEventLoop | None,
    what: str,
) -> tuple[asyncio.AbstractEventLoop | None, bool]:
    """:func:`bridge_loop`, and whether the caller is running that loop (for
    :func:`start_bridge`'s ``here``: asyncio's question for the running loop is a system call
    on some Pythons, asked once for both)."""
    running = _running_loop()
    loop = fixed_loop or running or _asyncio_loop_of(scheduler)
    if loop is None or loop.is_closed():
        observer.on_error(ConfigError(_NO_LOOP.format(what=what)))
        return None, False
    if loop is not running and dead_loop(loop, running) is not None:
        # (``scheduler=`` made on ``asyncio.get_event_loop()`` at import time, before
        # ``asyncio.run`` made the loop that runs: the task would never start)
        observer.on_error(
            ConfigError(
                f"{what}: scheduler=AsyncIOScheduler(loop) names an event loop that is not "
                "running, while another one runs here: the stream would never start (give "
                "the running loop's scheduler, or none)"
            )
        )
        return None, False
    return loop, loop is running


def dead_loop(
    loop: asyncio.AbstractEventLoop, running: asyncio.AbstractEventLoop | None
) -> str | None:
    """Why ``loop`` will never run what is handed to it from a thread running ``running``
    (``"closed"``; ``"idle"``: it is not running while ``running``, another loop, is; a loop
    runs one per thread, so this thread will never run it), or ``None``."""
    if loop.is_closed():
        return "closed"
    if running is not None and running is not loop and not loop.is_running():
        return "idle"
    return None


def open_bridge(
    observer: abc.ObserverBase[_T],
    scheduler: abc.SchedulerBase | None,
    produce: Callable[[Bridge[_T]], Awaitable[None]],
    fixed_loop: asyncio.AbstractEventLoop | None,
    what: str,
) -> abc.DisposableBase:
    """Start driving ``produce`` for ``observer`` (see the module docstring); the disposable
    cancels it. No loop to run on is a :class:`ConfigError` sent to ``on_error``."""
    loop, here = bridge_loop_here(observer, scheduler, fixed_loop, what)
    if loop is None:
        return Disposable()
    return start_bridge(Bridge(observer, loop, produce, what), here=here)


def start_bridge(bridge: Bridge[_T], *, here: bool | None = None) -> Bridge[_T]:
    """Start ``bridge`` on its loop (from its thread, or scheduled from another). ``here``:
    whether the caller is running the bridge's loop, when it has just asked (``None``: ask)."""
    loop = bridge.loop
    if here is None:
        here = _running_loop() is loop
    if here:
        bridge.start()
    else:
        loop.call_soon_threadsafe(bridge.start)
    return bridge


def subscribe_driving(
    loop: asyncio.AbstractEventLoop,
    subscribe: Callable[_P, _S],
    *args: _P.args,
    **kwargs: _P.kwargs,
) -> tuple[_S, Bridge[object] | None]:
    """``subscribe(*args, **kwargs)``, claiming for the calling task the first bridge it starts on
    ``loop`` (see the module docstring): its result, and the bridge the caller must
    :meth:`~Bridge.drive` (``None``: the subscription needs no driving by this task)."""
    global _claim
    claimed: list[Bridge[object]] = []  # (what start() appends: an annotation, not a cast call)
    previous, _claim = _claim, (loop, claimed)
    try:
        result = subscribe(*args, **kwargs)
    finally:
        _claim = previous
    return result, (claimed[0] if claimed else None)


def _bridge(
    produce: Callable[[Bridge[_T]], Awaitable[None]],
    fixed_loop: asyncio.AbstractEventLoop | None,
    what: str,
) -> Observable[_T]:
    def subscribe(
        observer: abc.ObserverBase[_T], subscribe_scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return open_bridge(observer, subscribe_scheduler, produce, fixed_loop, what)

    return reactivex.create(subscribe)


def _deliver(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    """Call an observer's terminal callback; an exception there is reported, never lost."""
    try:
        callback(*args)
    except Exception as exc:  # an observer bug: nobody upstream can handle it
        loop.call_exception_handler(
            {"message": "rxturn.sources: observer callback raised", "exception": exc}
        )


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _asyncio_loop_of(scheduler: abc.SchedulerBase | None) -> asyncio.AbstractEventLoop | None:
    if isinstance(scheduler, AsyncIOScheduler):
        return scheduler._loop  # pyright: ignore[reportPrivateUsage]
    return None


def _scheduler_loop(
    scheduler: abc.SchedulerBase | None, what: str
) -> asyncio.AbstractEventLoop | None:
    if scheduler is None:
        return None
    loop = _asyncio_loop_of(scheduler)
    if loop is None:
        raise ConfigError(
            f"{what}: scheduler must be an AsyncIOScheduler (asyncio drives the IO), "
            f"got {type(scheduler).__name__}"
        )
    return loop
