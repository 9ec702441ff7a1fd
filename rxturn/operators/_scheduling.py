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
from reactivex.scheduler import TimeoutScheduler, VirtualTimeScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler

from ..errors import ConfigError

__all__ = ["clock", "resolve_scheduler"]


def resolve_scheduler(
    *candidates: abc.SchedulerBase | None,
) -> abc.SchedulerBase:
    """The first non-``None`` candidate, else an asyncio scheduler on the running loop.

    Raises:
        ConfigError: the candidate is an asyncio scheduler whose loop is closed, or one that
            does not run while another loop runs on this thread (typically made at import
            time on ``asyncio.get_event_loop()``, before ``asyncio.run`` made the loop that
            runs): its timers would never fire, and every deadline would wait for ever.
    """
    for candidate in candidates:
        if candidate is not None:
            if isinstance(candidate, AsyncIOScheduler):
                _check_loop(candidate._loop)  # pyright: ignore[reportPrivateUsage]
            return candidate
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return TimeoutScheduler.singleton()
    return _asyncio_scheduler(loop)


def _check_loop(loop: asyncio.AbstractEventLoop) -> None:
    if loop.is_closed():
        raise ConfigError(
            "scheduler=AsyncIOScheduler(loop) names a closed event loop: its timers would "
            "never fire (give the running loop's scheduler, or none)"
        )
    if loop.is_running():
        return
    running = asyncio._get_running_loop()
    if running is not None and running is not loop:
        raise ConfigError(
            "scheduler=AsyncIOScheduler(loop) names an event loop that is not running, while "
            "another one runs here: its timers would never fire (give the running loop's "
            "scheduler, or none)"
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
