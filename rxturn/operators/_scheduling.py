"""Where time comes from: scheduler resolution and a cheap float clock.

Every time-dependent operator takes ``scheduler: abc.SchedulerBase | None``. It is resolved as
RxPY's ``_timeout.py`` does (the operator's argument, then the subscribe-time scheduler), with
one asyncio-first twist: when neither is given and an event loop is running, the default is an
:class:`~reactivex.scheduler.eventloop.AsyncIOScheduler` on that loop, never a thread pool.

:func:`clock` returns a zero-argument function giving the scheduler's time in float seconds.
Hot paths call it per event, so it avoids ``scheduler.now`` (a ``datetime`` per call): on an
asyncio scheduler it is ``loop.time`` and on a virtual-time scheduler it reads the virtual clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from reactivex import abc
from reactivex.scheduler import (
    EventLoopScheduler,
    ImmediateScheduler,
    NewThreadScheduler,
    TimeoutScheduler,
    TrampolineScheduler,
    VirtualTimeScheduler,
)
from reactivex.scheduler.eventloop import AsyncIOScheduler

from ..errors import ConfigError
from ..sources import dead_loop

__all__ = ["check_scheduler", "clock", "resolve_scheduler"]


def resolve_scheduler(
    *candidates: abc.SchedulerBase | None,
) -> abc.SchedulerBase:
    """The first non-``None`` candidate, else an asyncio scheduler on the running loop.

    Raises:
        ConfigError: the candidate cannot time this stream (:func:`check_scheduler`).
    """
    for candidate in candidates:
        if candidate is not None:
            check_scheduler(candidate)
            return candidate
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return TimeoutScheduler.singleton()
    return _asyncio_scheduler(loop)


_FIX = "give the running loop's AsyncIOScheduler, a TestScheduler, or none"


def check_scheduler(
    scheduler: abc.SchedulerBase, *, where: str = "", on_loop: bool | None = None
) -> None:
    """Refuse a scheduler that cannot time a stream subscribed here.

    A virtual-time scheduler is driven by its owner and always fits. Otherwise:

    * an ``ImmediateScheduler`` cannot wait at all (every timer raises ``WouldBlockException``);
    * an asyncio scheduler whose loop is closed, or is not running while another loop runs
      here (typically made at import time on ``asyncio.get_event_loop()``, before
      ``asyncio.run`` made the loop that runs), would never fire its timers: every deadline
      would wait for ever;
    * when an event loop runs the stream (its events arrive on the loop's thread), a
      trampoline (``CurrentThreadScheduler``) waits by sleeping on that thread, holding the
      loop and so the very events it times; and a scheduler that fires on other threads (a
      thread pool, ``NewThreadScheduler``, ``EventLoopScheduler``, ``TimeoutScheduler``, the
      asyncio scheduler of a loop another thread runs) would retry, time out or give up from
      that thread, racing the events still arriving on the loop's (a retried attempt
      subscribed there finds no loop).

    Args:
        scheduler: the scheduler given.
        where: what the message names first (``"TurnEngine(...)"``; empty: nothing).
        on_loop: whether an event loop runs the stream (``None``: whether one runs on this
            thread; ``True`` where that is known before any loop runs: a ``TurnEngine``'s turns
            are coroutines).

    Raises:
        ConfigError: naming the scheduler and the fix.
    """
    if isinstance(scheduler, VirtualTimeScheduler):
        return
    prefix = f"{where}: " if where else ""
    if isinstance(scheduler, ImmediateScheduler):
        raise ConfigError(
            f"{prefix}scheduler=ImmediateScheduler cannot wait (it refuses every timer with "
            f"WouldBlockException): {_FIX}"
        )
    running = asyncio._get_running_loop()
    if isinstance(scheduler, AsyncIOScheduler):
        loop = scheduler._loop  # pyright: ignore[reportPrivateUsage]
        problem = dead_loop(loop, running)
        if problem == "closed":
            raise ConfigError(
                f"{prefix}scheduler=AsyncIOScheduler(loop) names a closed event loop: its "
                f"timers would never fire ({_FIX})"
            )
        if problem == "idle":
            raise ConfigError(
                f"{prefix}scheduler=AsyncIOScheduler(loop) names an event loop that is not "
                f"running, while another one runs here: its timers would never fire ({_FIX})"
            )
        if running is not None and loop is not running:
            raise ConfigError(
                f"{prefix}scheduler=AsyncIOScheduler(loop) names the event loop of another "
                "thread, while another one runs here: its timers would fire on that thread, "
                f"racing the stream's events on this one ({_FIX})"
            )
        return
    if not (running is not None if on_loop is None else on_loop):
        return  # no loop runs the stream: any scheduler of reactivex's may time it
    name = type(scheduler).__name__
    if isinstance(scheduler, TrampolineScheduler):
        raise ConfigError(
            f"{prefix}scheduler={name} waits by sleeping on its thread, which runs the "
            f"stream's asyncio event loop: it would hold the loop and the events it times "
            f"({_FIX})"
        )
    if isinstance(scheduler, (NewThreadScheduler, EventLoopScheduler, TimeoutScheduler)):
        raise ConfigError(
            f"{prefix}scheduler={name} fires its timers on other threads than the stream's "
            f"asyncio event loop: a retry or timeout would race the stream's events on the "
            f"loop's thread ({_FIX})"
        )


# The last loop's scheduler: an AsyncIOScheduler holds nothing but its loop, so every turn on
# that loop can share one instead of allocating its own.
_last_scheduler: AsyncIOScheduler | None = None
_last_time: Callable[[], float] | None = None


def _asyncio_scheduler(loop: asyncio.AbstractEventLoop) -> AsyncIOScheduler:
    global _last_scheduler, _last_time
    last = _last_scheduler
    if last is None or last._loop is not loop:  # pyright: ignore[reportPrivateUsage]
        last = _last_scheduler = AsyncIOScheduler(loop)
        _last_time = loop.time
    return last


def clock(scheduler: abc.SchedulerBase) -> Callable[[], float]:
    """A fast ``() -> seconds`` reading of ``scheduler``'s notion of time."""
    if isinstance(scheduler, AsyncIOScheduler):
        if scheduler is _last_scheduler and _last_time is not None:
            return _last_time  # one bound method for every turn on the loop
        return scheduler._loop.time  # pyright: ignore[reportPrivateUsage]
    if isinstance(scheduler, VirtualTimeScheduler):
        virtual = scheduler

        def read_virtual() -> float:
            return float(virtual.clock)

        return read_virtual

    def read_now() -> float:
        return scheduler.now.timestamp()

    return read_now
