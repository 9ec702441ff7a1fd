"""One awaitable raced against the turn's cancel signal and a timeout on the engine's clock.

The non-streaming ``create`` and every tool call run this way: the work as a task, the cancel
signal and the timer each settling one shared outcome, whichever comes first.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from reactivex import abc
from reactivex.disposable import CompositeDisposable

from ..._validate import MAX_SECONDS
from ...resilience.cancel import CancelToken, cancel_error

__all__ = ["GRACE", "race"]

_T = TypeVar("_T")

log = logging.getLogger("rxturn.engine")

#: Seconds (on the race's clock) a cancelled loser is given to wind down before it is left.
GRACE = 1.0


async def race(
    work: Coroutine[Any, Any, _T],
    cancel_token: CancelToken,
    timeout: float | None,
    scheduler: abc.SchedulerBase,
    expired: Callable[[], _T],
    *,
    context: contextvars.Context | None = None,
) -> _T:
    """Run ``work`` as a task (in ``context`` when given) until it finishes, ``cancel_token``
    fires, or ``timeout`` seconds pass on ``scheduler``'s clock (no timer when it is ``None``
    or longer than :data:`~rxturn._validate.MAX_SECONDS`, as a tool's infinite timeout is).

    The verdict is biased, whatever settled first in the same instant: a cancel wins (raises
    :func:`cancel_error`), then a finished task (its result, or its error raised), then the
    timeout (what ``expired()`` returns or raises). The timeout is judged one scheduler turn
    after its instant, as the rescue's deadline is, so that work woken at that same instant
    (a reply the provider delivered then) has finished and wins, whichever of the two the
    instant ran first. A task that lost is cancelled and awaited (a worker thread it started
    runs on, its result dropped), for at most :data:`GRACE` seconds on ``scheduler``'s clock:
    one that ignores its cancellation (a tool catching ``CancelledError`` in a retry loop) is
    then left running, logged at WARNING, rather than holding the turn until it chooses to end.
    An error it ended with is retrieved, so asyncio never reports it as unretrieved.
    """
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[None] = loop.create_future()

    def settle(*_: object) -> None:
        if not outcome.done():
            outcome.set_result(None)

    def time_up(*_: object) -> None:  # judged one scheduler turn later (see above)
        if not outcome.done():
            cleanup.add(scheduler.schedule(settle))

    task: asyncio.Task[_T] = loop.create_task(work, context=context)
    task.add_done_callback(settle)
    cleanup = CompositeDisposable(cancel_token.on_cancel(settle))
    if timeout is not None and timeout <= MAX_SECONDS:  # longer (a tool's inf): no bound
        cleanup.add(scheduler.schedule_relative(timeout, time_up))
    try:
        await outcome
    finally:
        cleanup.dispose()
        if not task.done():
            task.cancel()
            await _wound_down(task, scheduler)
        elif not task.cancelled():
            task.exception()  # it may have failed in the instant the cancel or the timer won
    if cancel_token.cancelled:
        raise cancel_error(cancel_token)
    if task.done() and not task.cancelled():
        try:
            return task.result()
        finally:
            # the task keeps its error, whose traceback holds this frame: holding the task
            # here too would make a cycle of the two (and of all the turn they hold)
            del task
    return expired()  # (a task left running lost to the timer)


async def _wound_down(task: asyncio.Task[Any], scheduler: abc.SchedulerBase) -> None:
    """Wait for the cancelled ``task`` to end, at most :data:`GRACE` seconds on ``scheduler``'s
    clock; its outcome retrieved once it ends, now or later."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()

    def settle(*_: object) -> None:
        if not ended.done():
            ended.set_result(None)

    task.add_done_callback(settle)
    timer = scheduler.schedule_relative(GRACE, settle)
    try:
        await ended
    finally:
        timer.dispose()
        task.remove_done_callback(settle)
    if task.done():
        if not task.cancelled():
            task.exception()
        return
    log.warning("a task ignored its cancellation for %gs after it lost a race; left running", GRACE)
    task.add_done_callback(_retrieve)


def _retrieve(task: asyncio.Task[Any]) -> None:
    """A done callback: the outcome of a task left running, retrieved when it ends."""
    if not task.cancelled():
        task.exception()
