"""The two paths of a turn: the handler's batched stream, and one non-streaming ``create``.

- **streaming**: one subscription to :meth:`StreamHandler.stream_turn_batches` (one item per
  network chunk). A tap fans each event out (:mod:`._fanout`) before ``scan(fold_batch)`` →
  ``last`` builds the message. ``AttemptReset`` wipes the fold; a ``Fallback`` replaces it.
- **non-streaming**: exactly one ``create`` raced against the cancel signal (checked first)
  and the turn timeout (none configured = an arm that never fires).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from reactivex import abc
from reactivex import operators as ops
from reactivex.disposable import CompositeDisposable

from ..clients._base import ModelClient
from ..errors import StreamTimeoutError, TruncatedStreamError
from ..events import HandlerEvent
from ..fold import INITIAL_STATE, TurnState, fold_batch
from ..messages import Message, Request, RequestOptions
from ..resilience.cancel import CancelToken
from .handler import StreamHandler

__all__ = ["create_path", "stream_path"]


async def stream_path(
    handler: StreamHandler,
    client: ModelClient,
    request: Request,
    options: RequestOptions,
    cancel_token: CancelToken,
    scheduler: abc.SchedulerBase,
    tap: Callable[[list[HandlerEvent]], None],
    stop_tap: Callable[[], None],
    rescued: Callable[[], bool],
) -> Message:
    """Run the handler's stream to its last fold state; the message it folded to.

    ``rescued()`` says whether a ``Fallback`` served the reply (then no ``MessageStop`` is
    owed); a stream that completes without either is truncated.
    """
    stream = handler.stream_turn_batches(
        client, request, options, cancel_token, scheduler=scheduler
    )
    loop = asyncio.get_running_loop()
    done: asyncio.Future[TurnState] = loop.create_future()

    def finish(state: TurnState) -> None:
        stop_tap()
        if not done.done():
            done.set_result(state)

    def fail(error: Exception) -> None:
        stop_tap()
        if not done.done():
            done.set_exception(error)

    # One stream of batches: the tap fans each event out to the streamer, the observers
    # and ``engine.events`` (in the routing table's order) before the fold sees its batch.
    subscription = stream.pipe(
        ops.do_action(tap),
        ops.scan(fold_batch, INITIAL_STATE),
        ops.last_or_default(INITIAL_STATE),
    ).subscribe(on_next=finish, on_error=fail, scheduler=scheduler)
    try:
        state = await done
    finally:
        subscription.dispose()
    if not (state.completed or rescued()):
        raise TruncatedStreamError(0)
    return state.message()


async def create_path(
    client: ModelClient,
    request: Request,
    options: RequestOptions,
    cancel_token: CancelToken,
    timeout: float | None,
    scheduler: abc.SchedulerBase,
) -> Message:
    """One non-streaming attempt raced against cancel (checked first) and the timeout."""
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[str] = loop.create_future()

    def settle(kind: str) -> None:
        if not outcome.done():
            outcome.set_result(kind)

    reply = loop.create_task(client.create(request, options))
    reply.add_done_callback(lambda _: settle("reply"))
    cleanup = CompositeDisposable(cancel_token.on_cancel(lambda: settle("cancel")))
    if timeout is not None:

        def on_timeout(*_: object) -> None:
            settle("timeout")

        cleanup.add(scheduler.schedule_relative(timeout, on_timeout))
    try:
        await outcome
    finally:
        cleanup.dispose()
        if not reply.done():
            reply.cancel()
            await asyncio.gather(reply, return_exceptions=True)
    # Biased order: cancel first, then a finished reply (even at the deadline), then timeout.
    if cancel_token.cancelled:
        raise cancel_token.error()
    if reply.done() and not reply.cancelled():
        return reply.result()
    raise StreamTimeoutError(
        "total", after=timeout or 0.0, events=0, partial=False, elapsed=timeout or 0.0
    )
