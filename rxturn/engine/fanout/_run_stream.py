"""A run consumed with ``async for``: :meth:`TurnEngine.stream`.

``async with engine.stream(prompt) as s`` starts :meth:`TurnEngine.run` on ``prompt`` (the
agent loop: tools run between turns) and ``async for event in s`` yields the handler events of
every turn of it as they are folded — provider events, ``AttemptReset`` and ``Fallback``
included — ending when the run ends (raising its error if it failed). ``s.text_stream`` is
the text view of the same events; ``s.result`` is the :class:`RunResult` once the run is done.
One consumer reads at a time, inside the block; read again after its end, the stream ends at
once (or raises the run's error again).

What ``text_stream`` yields on a reset: text that was already yielded and is withdrawn — an
attempt that failed after streaming some text (``AttemptReset``), or streamed text that the
non-streaming rescue replaces (``Fallback``) — is announced by yielding that event itself,
then the text that replaces it follows (the retry's text from its start, or the rescue's
reply in one piece). A reset before any text of the attempt yields nothing, and what is
withdrawn is the current turn's text: an earlier turn of the run was served, and its text
stands (the run's turns are told apart by ``engine.turn_streams``). So a consumer that
prints ``str`` pieces and erases (or marks) what it printed on any other item never shows a
reply spliced from two attempts.

Leaving the block before the run is done (``break``, an exception, a ``return``) cancels the
run (:meth:`TurnEngine.cancel`) and waits for it to wind down: its request is closed, no task
is left behind, and the history is left as it was (a cancelled run adds nothing). Events wait
in a buffer of at most ``max_buffered`` items for the consumer; a consumer that falls that far
behind cancels the run, and the iteration raises :class:`~rxturn.errors.Cancelled` saying so.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Self

from reactivex import abc
from reactivex.subject import Subject

from ..._arguments import shown
from ..._validate import positive
from ...errors import ConfigError
from ...events import AttemptReset, Delta, Fallback, HandlerEvent
from ...messages import Message
from ..records._results import RunResult
from ._turn_stream import TurnStream

__all__ = ["DEFAULT_MAX_BUFFERED", "RunStream", "TextPiece"]

#: Events a :class:`RunStream` holds for a consumer that has not caught up.
DEFAULT_MAX_BUFFERED = 65_536

TextPiece = str | AttemptReset | Fallback
"""What ``text_stream`` yields: text, or the event that withdraws the text yielded so far."""

_DONE = object()
_TURN = object()  # a turn of the run starts (for text_stream; never yielded)


class RunStream:
    """``async with engine.stream(prompt) as s``: a run's events with ``async for``.

    Built by :meth:`TurnEngine.stream`; see the module docstring for what it yields.
    """

    __slots__ = (
        "_began",
        "_buffer",
        "_cancel",
        "_claim",
        "_events",
        "_markers",
        "_max",
        "_overflowed",
        "_prompt",
        "_raised",
        "_release",
        "_reset",
        "_run",
        "_started",
        "_subscription",
        "_task",
        "_turn_subscription",
        "_turns",
        "_waiter",
    )

    def __init__(
        self,
        *,
        prompt: str | Message,
        events: Subject[HandlerEvent],
        turns: Subject[TurnStream],
        run: Callable[[str | Message], Awaitable[RunResult]],
        claim: Callable[[], None],
        release: Callable[[], None],
        cancel: Callable[[str], None],
        reset: Callable[[], None],
        max_buffered: int = DEFAULT_MAX_BUFFERED,
    ) -> None:
        if not positive(max_buffered, integer=True):
            raise ConfigError(
                f"stream(max_buffered=...) must be an int >= 1, got {shown(max_buffered, 100)}"
            )
        self._prompt = prompt
        self._events = events
        self._turns = turns
        self._run = run
        self._claim = claim
        self._release = release
        self._cancel = cancel
        self._reset = reset
        self._max = max_buffered
        self._buffer: collections.deque[HandlerEvent | object] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._task: asyncio.Task[RunResult] | None = None
        self._subscription: abc.DisposableBase | None = None
        self._turn_subscription: abc.DisposableBase | None = None
        self._overflowed = False
        self._markers = 0  # turn markers in the buffer (not events: outside max_buffered)
        self._started = False
        self._began = False  # the run's task ran its first step (its ``finally`` will run)
        self._raised: BaseException | None = None

    def __repr__(self) -> str:
        state = "done" if self.done else "running" if self._task is not None else "not started"
        return f"RunStream({state}, buffered={len(self._buffer) - self._markers})"

    # ------------------------------------------------------------------ the block

    async def __aenter__(self) -> Self:
        if self._started:
            raise ConfigError("a RunStream is entered once; call engine.stream() again")
        self._started = True
        self._claim()  # refused at once while another run or turn is in flight
        self._subscription = self._events.subscribe(self._push, scheduler=None)
        self._turn_subscription = self._turns.subscribe(self._turn_began, scheduler=None)
        self._task = asyncio.get_running_loop().create_task(self._guarded())
        self._task.add_done_callback(self._ended)
        return self

    async def _guarded(self) -> RunResult:
        self._began = True
        try:
            return await self._run(self._prompt)
        finally:
            self._release()

    def _ended(self, _: object) -> None:
        if not self._began:
            # cancelled before its first step (a cancel of the block's task while its exit
            # waited for the run, the block left at once): the run never began, so neither its
            # ``finally`` nor the run's own re-arming of the cancel signal ran
            self._release()
            self._reset()
        self._push(_DONE)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        task = self._task
        left_early = task is not None and not task.done()
        try:
            if task is not None and left_early:
                self._cancel("the stream's block was left before the run ended")
                await asyncio.gather(task, return_exceptions=True)
        finally:
            self._close()
        if exc_type is None and not left_early and task is not None and not task.cancelled():
            error = task.exception()
            if error is not None and error is not self._raised:
                raise error  # the run failed and the block never iterated to see it

    def _close(self) -> None:
        if self._subscription is not None:
            self._subscription.dispose()
            self._subscription = None
        if self._turn_subscription is not None:
            self._turn_subscription.dispose()
            self._turn_subscription = None
        self._buffer.clear()
        self._markers = 0

    # ------------------------------------------------------------------ events in

    def _push(self, item: HandlerEvent | object) -> None:
        if item is _TURN:
            self._markers += 1
        elif item is not _DONE and len(self._buffer) - self._markers >= self._max:
            if not self._overflowed:
                self._overflowed = True
                self._cancel(f"the stream's consumer fell {self._max} events behind (max_buffered)")
            return
        self._buffer.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _turn_began(self, _: TurnStream) -> None:
        self._push(_TURN)

    # ------------------------------------------------------------------ events out

    def __aiter__(self) -> AsyncIterator[HandlerEvent]:
        return self._iterate()

    async def _iterate(self, *, turns: bool = False) -> AsyncIterator[HandlerEvent]:
        """The buffered events; ``turns``: the marker of each turn's start too."""
        self._check_readable()
        buffer = self._buffer
        while True:
            while not buffer:
                self._check_readable(waiting=True)
                self._waiter = asyncio.get_running_loop().create_future()
                try:
                    await self._waiter
                finally:
                    self._waiter = None
            item = buffer[0]
            if item is _DONE:  # left in place: a later iteration ends here too
                self._finish()
                return
            buffer.popleft()
            if item is _TURN:
                self._markers -= 1
                if not turns:
                    continue
            yield item  # pyright: ignore[reportReturnType]  # every other item is a HandlerEvent

    def _check_readable(self, *, waiting: bool = False) -> None:
        """Refuse a read (``waiting``: a wait for the next event) that nothing could ever end."""
        if self._task is None or self._subscription is None:  # not entered, or already left
            raise ConfigError("iterate a RunStream inside `async with engine.stream(...) as s`")
        if waiting and self._waiter is not None:
            raise ConfigError(
                "a RunStream has one consumer at a time: another `async for` (over the stream "
                "or its text_stream) is already waiting for the next event"
            )

    def _finish(self) -> None:
        task = self._task
        assert task is not None and task.done()
        if task.cancelled():
            raise asyncio.CancelledError
        error = task.exception()
        if error is not None:
            self._raised = error
            raise error

    @property
    def text_stream(self) -> AsyncIterator[TextPiece]:
        """The text of the run as it streams; text already yielded that is withdrawn (a reset,
        a rescue's reply) is announced by yielding the withdrawing event (module docstring).

        It consumes the same events as ``async for event in s``: use one or the other.
        """
        return self._texts()

    async def _texts(self) -> AsyncIterator[TextPiece]:
        shown = False  # text of the current turn yielded (and not yet withdrawn)
        async for event in self._iterate(turns=True):
            if isinstance(event, Delta):
                if event.kind == "text" and event.text:
                    shown = True
                    yield event.text
            elif event is _TURN:
                # a turn of the run begins: a reset withdraws this turn's text, never the text
                # of an earlier turn (served, in the history)
                shown = False
            elif isinstance(event, AttemptReset):
                if shown:
                    shown = False
                    yield event
            elif isinstance(event, Fallback):
                if shown:
                    yield event
                text = event.message.text
                shown = bool(text)
                if text:
                    yield text

    # ------------------------------------------------------------------ the result

    @property
    def done(self) -> bool:
        """Whether the run has ended (served, failed or cancelled)."""
        return self._task is not None and self._task.done()

    @property
    def result(self) -> RunResult:
        """The run's :class:`RunResult` once it is done.

        Raises:
            ConfigError: the run has not ended yet (iterate to the end first).
            RxturnError: the run's own error, when it failed.
        """
        task = self._task
        if task is None or not task.done():
            raise ConfigError(
                "RunStream.result is ready once the run has ended: iterate the stream to its "
                "end (or await the block's exit) first"
            )
        return task.result()
