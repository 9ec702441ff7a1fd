"""Virtual-time test kit for the stream handler and its operators.

- :class:`ScriptedClient` — a :class:`~rxturn.clients.ModelClient` test double whose ``stream()``
  returns scripted **cold** observables on a :class:`~reactivex.testing.TestScheduler` (one per
  attempt, the last one repeating) and whose ``create()`` plays a scripted outcome: a message, an
  error, a hang, or either of those after a virtual delay.
- :func:`drive` — subscribes an Observable at virtual time 0 and runs the TestScheduler item by
  item, letting asyncio settle between instants (the rescue's ``client.create`` is a coroutine run
  by a real asyncio task), until the turn ends or nothing is left to run. A 60 s backoff takes
  milliseconds.
- :func:`leftovers` — timers still live on the scheduler (must be none after a turn ends).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from reactivex import Observable
from reactivex.disposable import Disposable
from reactivex.notification import Notification
from reactivex.testing import ReactiveTest, TestScheduler
from reactivex.testing.recorded import Recorded

from rxturn.events import (
    AttemptReset,
    Delta,
    Fallback,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    StreamEvent,
)
from rxturn.messages import Message, Request, RequestOptions, Usage
from rxturn.resilience.cancel import CancelToken

__all__ = [
    "HANG",
    "REQUEST",
    "Later",
    "Run",
    "ScriptedClient",
    "Tracked",
    "assert_clean",
    "drive",
    "events_of",
    "leftovers",
    "reply",
    "settle",
    "timeline",
]

on_next = ReactiveTest.on_next
on_error = ReactiveTest.on_error
on_completed = ReactiveTest.on_completed

REQUEST = Request(messages=(Message.user("hello"),))


class _Hang:
    def __repr__(self) -> str:
        return "HANG"


#: A ``create()`` outcome that never resolves (until cancelled).
HANG: Any = _Hang()


class Later:
    """A ``create()`` outcome delivered after ``delay`` virtual seconds."""

    def __init__(self, delay: float, outcome: Any) -> None:
        self.delay = delay
        self.outcome = outcome


def reply(
    text: str = "Hello world",
    *,
    usage: Usage | None = None,
    stop_reason: str = "end_turn",
    message_id: str = "msg_1",
) -> list[StreamEvent]:
    """The events of one complete text reply (one delta per word)."""
    words = text.split(" ")
    deltas = [Delta(0, word if i == 0 else " " + word) for i, word in enumerate(words)]
    return [
        MessageStart(id=message_id, model="scripted"),
        PartStart(0),
        *deltas,
        PartStop(0),
        MessageDelta(stop_reason, usage),
        MessageStop(),
    ]


def timeline(
    events: Sequence[StreamEvent],
    *,
    start: float = 0.01,
    step: float = 0.01,
    end: Exception | str | None = "complete",
) -> list[Recorded[Any]]:
    """Recorded notifications: ``events`` at ``start, start+step, …``, then the end.

    ``end`` is ``"complete"`` (completion one step after the last event), an exception (an error
    one step after), or ``None`` (the stream stalls: no end).
    """
    recorded: list[Recorded[Any]] = [
        on_next(round(start + i * step, 6), event) for i, event in enumerate(events)
    ]
    t = round(start + len(events) * step, 6)
    if end == "complete":
        recorded.append(on_completed(t))
    elif isinstance(end, Exception):
        recorded.append(on_error(t, end))
    return recorded


class Tracked:
    """A cold timeline that records when each subscription started and was disposed.

    (``ColdObservable.subscriptions`` rounds times to integer ticks, too coarse for seconds.)
    ``spans`` holds ``[subscribed_at, disposed_at]`` per subscription, ``disposed_at`` being
    ``None`` while it is live; termination also disposes, so a natural end is recorded too.
    """

    def __init__(self, scheduler: TestScheduler, recorded: list[Recorded[Any]]) -> None:
        self.scheduler = scheduler
        self.cold = scheduler.create_cold_observable(recorded)
        self.spans: list[list[float | None]] = []
        self.observable: Observable[Any] = Observable(self._subscribe)

    def _subscribe(self, observer: Any, scheduler: Any = None) -> Any:
        span: list[float | None] = [float(self.scheduler.clock), None]
        self.spans.append(span)
        inner = self.cold.subscribe(observer, scheduler=scheduler)

        def dispose() -> None:
            if span[1] is None:
                span[1] = float(self.scheduler.clock)
            inner.dispose()

        return Disposable(dispose)


class ScriptedClient:
    """A scripted :class:`~rxturn.clients.ModelClient` on a TestScheduler.

    Args:
        scheduler: the TestScheduler the cold streams run on.
        streams: one recorded timeline per attempt; the last one repeats.
        create: outcomes of successive ``create()`` calls (the last repeats): a Message, an
            exception, :data:`HANG`, or :class:`Later`.
        base_url: the limiter key.
    """

    model = "scripted"

    def __init__(
        self,
        scheduler: TestScheduler,
        streams: Sequence[list[Recorded[Any]]],
        *,
        create: Sequence[Any] = (),
        base_url: str = "http://scripted.invalid",
    ) -> None:
        self.scheduler = scheduler
        self._streams = list(streams)
        self._create = list(create)
        self.base_url = base_url
        self.stream_calls: list[tuple[Request, RequestOptions | None]] = []
        self.create_calls: list[tuple[Request, RequestOptions | None]] = []
        self.attempts: list[Tracked] = []  # one per stream() call, with its subscription spans

    def stream(
        self, request: Request, options: RequestOptions | None = None
    ) -> Observable[StreamEvent]:
        self.stream_calls.append((request, options))
        index = min(len(self.stream_calls), len(self._streams)) - 1
        tracked = Tracked(self.scheduler, self._streams[index])
        self.attempts.append(tracked)
        return tracked.observable

    @property
    def spans(self) -> list[list[float | None]]:
        """``[subscribed_at, disposed_at]`` of every attempt, in order."""
        return [span for tracked in self.attempts for span in tracked.spans]

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        self.create_calls.append((request, options))
        if not self._create:
            raise AssertionError("create() was not scripted for this test")
        outcome = self._create[min(len(self.create_calls), len(self._create)) - 1]
        if isinstance(outcome, Later):
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[None] = loop.create_future()

            def resolve(*_: Any) -> None:
                if not ready.done():
                    ready.set_result(None)

            timer = self.scheduler.schedule_relative(outcome.delay, resolve)
            try:
                await ready
            finally:
                timer.dispose()
            outcome = outcome.outcome
        if outcome is HANG:
            await asyncio.Event().wait()
        if isinstance(outcome, BaseException):
            raise outcome
        assert isinstance(outcome, Message)
        return outcome


class Run:
    """What a subscriber saw: items with their virtual times, and how the stream ended."""

    def __init__(self) -> None:
        self.items: list[tuple[float, Any]] = []
        self.error: Exception | None = None
        self.completed = False
        self.end_time: float | None = None

    @property
    def finished(self) -> bool:
        return self.completed or self.error is not None

    @property
    def values(self) -> list[Any]:
        return [item for _, item in self.items]

    @property
    def resets(self) -> list[AttemptReset]:
        return [item for item in self.values if isinstance(item, AttemptReset)]

    @property
    def fallbacks(self) -> list[Fallback]:
        return [item for item in self.values if isinstance(item, Fallback)]

    @property
    def events(self) -> list[StreamEvent]:
        return [item for item in self.values if not isinstance(item, AttemptReset | Fallback)]

    def __repr__(self) -> str:
        return (
            f"Run(items={len(self.items)}, error={self.error!r}, completed={self.completed}, "
            f"end_time={self.end_time})"
        )


def events_of(recorded: Sequence[Recorded[Any]]) -> list[Any]:
    """The values of the on_next notifications of a recorded timeline."""
    out: list[Any] = []
    for record in recorded:
        value: Notification[Any] = record.value
        if value.kind == "N":
            out.append(value.value)  # type: ignore[attr-defined]
    return out


def leftovers(scheduler: TestScheduler) -> list[Any]:
    """Scheduled items that are still live (not yet run, not disposed)."""
    return [item for item, _ in scheduler._queue.items if not item.is_cancelled()]


async def assert_clean(scheduler: TestScheduler) -> None:
    """Nothing outlives a turn: no live timer on ``scheduler``, no other asyncio task."""
    await settle()
    assert leftovers(scheduler) == []
    current = asyncio.current_task()
    assert [task for task in asyncio.all_tasks() if task is not current] == []


async def settle(rounds: int = 8) -> None:
    """Let asyncio run what is ready (tasks started or woken at this virtual instant)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


def _run_next_instant(scheduler: TestScheduler, limit: float) -> bool:
    """Run every item due at the earliest pending instant; False if none is due by ``limit``."""
    queue = scheduler._queue
    while queue and queue.peek().is_cancelled():
        queue.dequeue()
    if not queue:
        return False
    due = scheduler.to_seconds(queue.peek().duetime)
    if due > limit:
        return False
    if due > scheduler.clock:
        scheduler.advance_to(due)
        return True
    while queue and queue.peek().duetime <= scheduler.now:
        item = queue.dequeue()
        if not item.is_cancelled():
            item.invoke()
    return True


async def drive(
    scheduler: TestScheduler,
    observable: Observable[Any],
    *,
    cancel: CancelToken | None = None,
    cancel_at: float | None = None,
    dispose_at: float | None = None,
    limit: float = 100_000.0,
) -> Run:
    """Subscribe at the scheduler's current time and run until the stream ends (or is disposed).

    Driving stops as soon as the subscriber has seen the end (or the subscription is disposed):
    what is still scheduled then has outlived the turn, and the ``clean`` fixture reports it.
    The test's own cancel/dispose actions are withdrawn at that point.

    Args:
        scheduler: the TestScheduler everything runs on.
        observable: what to subscribe.
        cancel: the token to fire at ``cancel_at``.
        cancel_at: virtual time of the cancel.
        dispose_at: virtual time at which the subscription is disposed.
        limit: give up (and return) past this virtual time: a hang shows as an unfinished run.
    """
    run = Run()
    disposed = False
    scaffolding: list[Any] = []

    def record(item: Any) -> None:
        run.items.append((float(scheduler.clock), item))

    def failed(error: Exception) -> None:
        run.error = error
        run.end_time = float(scheduler.clock)

    def done() -> None:
        run.completed = True
        run.end_time = float(scheduler.clock)

    if cancel_at is not None:
        assert cancel is not None, "cancel_at needs the token"
        token = cancel
        scaffolding.append(scheduler.schedule_absolute(cancel_at, lambda *_: token.cancel()))
    subscription = observable.subscribe(record, failed, done, scheduler=scheduler)
    if dispose_at is not None:

        def dispose(*_: Any) -> None:
            nonlocal disposed
            disposed = True
            subscription.dispose()

        scaffolding.append(scheduler.schedule_absolute(dispose_at, dispose))
    while True:
        await settle()
        if run.finished or disposed:
            break
        if not _run_next_instant(scheduler, limit):
            break
    for action in scaffolding:
        action.dispose()
    await settle()
    return run
