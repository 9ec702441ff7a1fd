"""The virtual-time test kit: run turns, ladders and breakers on ``TestScheduler`` time.

Everything time-dependent in rxturn takes a scheduler, so a test can put a whole session —
retry ladders, rate-limit waits, deadlines, the rescue, the breaker's cooldown and probe — on
:class:`reactivex.testing.TestScheduler` virtual time: a 60 s backoff takes microseconds and
every instant is exact. This module gives you the pieces (docs/testing.md has a walkthrough):

- :class:`ScriptedClient` — a :class:`~rxturn.clients.ModelClient` whose ``stream()`` returns a
  scripted **cold** Observable per attempt (one timeline each, the last one repeating): events,
  an error, or nothing more (a hang) at the virtual times you give (:func:`timeline`,
  :func:`reply`); its ``create()`` plays a scripted outcome: a message, an error, :data:`HANG`,
  or either after a virtual delay (:class:`Later`). It records every call and, per attempt,
  when it was subscribed and disposed.
- :func:`run_virtual` — awaits a coroutine (``engine.turn()``, ``engine.run(prompt)``, anything)
  while advancing the scheduler whenever asyncio has nothing left to do: the driver for a
  :class:`~rxturn.TurnEngine` built with ``scheduler=scheduler``.
- :func:`drive` — subscribes any Observable and runs the scheduler until it ends; what the
  subscriber saw, with virtual times, is a :class:`Run`.
- :func:`leftovers` / :func:`assert_clean` — nothing may outlive a turn: no live timer on the
  scheduler, no stray asyncio task.

Enable the pytest fixtures with one line in your ``conftest.py``:
``pytest_plugins = ["rxturn.testing.pytest_plugin"]``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from reactivex import Observable, abc
from reactivex.disposable import Disposable
from reactivex.testing import ReactiveTest, TestScheduler
from reactivex.testing.recorded import Recorded

from .._arguments import check_instance, described, shown
from .._validate import is_int, seconds_problem
from ..errors import ConfigError
from ..events import (
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
from ..messages import Message, Request, RequestOptions, Usage
from ..resilience.cancel import CancelToken

__all__ = [
    "HANG",
    "REQUEST",
    "Later",
    "Run",
    "Script",
    "ScriptedClient",
    "StillRunning",
    "Tracked",
    "assert_clean",
    "drive",
    "events_of",
    "leftovers",
    "on_completed",
    "on_error",
    "on_next",
    "reply",
    "run_virtual",
    "settle",
    "timeline",
]

_R = TypeVar("_R")
_T = TypeVar("_T")

#: ``on_next(t, value)``, ``on_error(t, error)``, ``on_completed(t)``: recorded notifications for
#: :meth:`TestScheduler.create_cold_observable`, ``t`` in (float) virtual seconds.
on_next: Any = ReactiveTest.on_next
on_error: Any = ReactiveTest.on_error
on_completed: Any = ReactiveTest.on_completed

#: A one-message request for handler-level tests.
#: A scripted stream: provider events (and an end) at virtual times, as ``timeline`` builds it
#: (of any item type: events, batches of them, or the messages of a scripted request).
Script = list[Recorded[Any]]

REQUEST = Request(messages=(Message.user("hello"),))


class _Hang:
    def __repr__(self) -> str:
        return "HANG"


#: A ``create()`` outcome that never resolves (until cancelled).
HANG: Any = _Hang()


def _check_seconds(where: str, name: str, value: object, *, allow_zero: bool = True) -> None:
    """A time argument of the kit: a finite number of seconds (``>= 0``, or ``> 0``)."""
    problem = seconds_problem(value, allow_zero=allow_zero)
    if problem is not None:
        raise ConfigError(f"{where}: {name} {problem}")


def _check_count(where: str, name: str, value: object) -> None:
    """A count argument of the kit: a whole number ``>= 0``."""
    if not is_int(value) or value < 0:
        raise ConfigError(f"{where}: {name} must be a whole number >= 0, got {shown(value, 100)}")


def _check_scheduler(where: str, scheduler: object) -> None:
    """The kit drives a :class:`TestScheduler` by hand: any other scheduler has no queue to run."""
    check_instance(
        scheduler, TestScheduler, f"{where}: scheduler", "a reactivex.testing.TestScheduler"
    )


def _check_outcome(where: str, outcome: object) -> None:
    """A scripted ``create()`` outcome: a Message, an exception, :data:`HANG` or :class:`Later`."""
    if isinstance(outcome, Later):
        outcome = outcome.outcome
        where = f"{where}.outcome"
    if isinstance(outcome, type) and issubclass(outcome, BaseException):
        raise ConfigError(f"{where} is the class {outcome.__name__}: pass an instance")
    if not isinstance(outcome, Message | BaseException) and outcome is not HANG:
        got = described(cast("object", outcome))
        raise ConfigError(f"{where} must be a Message, an exception, HANG or Later(...), got {got}")


def _check_scripts(where: str, scripts: object) -> list[Script]:
    """A list of timelines (one per attempt), each a list of recorded notifications."""
    if isinstance(scripts, str | bytes | Mapping) or not isinstance(scripts, Sequence):
        got = described(cast("object", scripts))
        raise ConfigError(f"{where} must be a list of timelines (one per attempt), got {got}")
    checked = list(cast("Sequence[object]", scripts))
    for index, script in enumerate(checked):
        if isinstance(script, Recorded):
            raise ConfigError(
                f"{where} must be a list of timelines (one per attempt), got one timeline: "
                "wrap it in a list, [timeline(...)]"
            )
        if not isinstance(script, list) or not all(
            isinstance(item, Recorded) for item in cast("list[object]", script)
        ):
            raise ConfigError(
                f"{where}[{index}] must be a timeline (a list of recorded notifications, as "
                f"timeline() builds it), got {described(cast('object', script))}"
            )
    return cast("list[Script]", checked)


class Later:
    """A ``create()`` outcome delivered after ``delay`` virtual seconds.

    Raises:
        ConfigError: ``delay`` is not a finite number of seconds ``>= 0``.
    """

    def __init__(self, delay: float, outcome: object) -> None:
        _check_seconds("Later", "delay", delay)
        self.delay = delay
        self.outcome = outcome


def reply(
    text: str = "Hello world",
    *,
    usage: Usage | None = None,
    stop_reason: str = "end_turn",
    message_id: str = "msg_1",
) -> list[StreamEvent]:
    """The events of one complete text reply (one delta per word).

    Raises:
        ConfigError: ``text``, ``stop_reason`` or ``message_id`` is not a str, or ``usage`` not
            a :class:`~rxturn.Usage` (or ``None``).
    """
    for name, value in (("text", text), ("stop_reason", stop_reason), ("message_id", message_id)):
        check_instance(value, str, f"reply: {name}", "a str")
    check_instance(usage, Usage, "reply: usage", "a Usage", optional=True)
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
    events: Sequence[_T],
    *,
    start: float = 0.01,
    step: float = 0.01,
    end: Exception | str | None = "complete",
) -> list[Recorded[_T]]:
    """Recorded notifications: ``events`` at ``start, start+step, …``, then the end.

    ``events`` are the items the stream emits: provider events, batches of them
    (``list[StreamEvent]``), or any other value; a cold Observable made of the result emits
    items of that type. ``end`` is ``"complete"`` (completion one step after the last event), an
    exception (an error one step after), or ``None`` (the stream stalls: no end).

    Raises:
        ConfigError: ``start`` or ``step`` is not a finite number of seconds ``>= 0``,
            ``events`` is not a sequence (a string is not one here), or ``end`` is none of the
            three (an exception class, or a mistyped ``"completed"``, would script a hang).
    """
    _check_seconds("timeline", "start", start)
    _check_seconds("timeline", "step", step)
    given = cast("object", events)  # callers may be untyped
    if isinstance(given, str | bytes | Mapping) or not isinstance(given, Sequence):
        raise ConfigError(f"timeline: events must be a list of items, got {described(events)}")
    ended: object = end
    if isinstance(ended, type) and issubclass(ended, BaseException):
        raise ConfigError(f"timeline: end is the class {ended.__name__}: pass an instance")
    if ended is not None and ended != "complete" and not isinstance(ended, Exception):
        raise ConfigError(
            'timeline: end must be "complete", an Exception instance, or None (a hang), '
            f"got {described(ended)}"
        )
    recorded: list[Recorded[_T]] = [
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

    def __init__(self, scheduler: TestScheduler, recorded: Script) -> None:
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
        streams: one recorded timeline per attempt (see :func:`timeline`); the last one repeats.
        create: outcomes of successive ``create()`` calls (the last repeats): a Message, an
            exception, :data:`HANG`, or :class:`Later`.
        models: per-model scripts for a fallback chain: a request whose ``options.model`` is a
            key here plays that model's timelines (each model counts its own attempts); any
            other model plays ``streams``.
        base_url: the limiter key.
        model: the client's own model name.

    Raises:
        ConfigError: an argument of the wrong shape, said where the client is built: the
            scheduler is not a TestScheduler, ``streams`` (or a model's list) is one timeline
            rather than a list of them, a ``create`` outcome is none of the four.
    """

    def __init__(
        self,
        scheduler: TestScheduler,
        streams: Sequence[Script] = (),
        *,
        create: Sequence[object] = (),
        models: Mapping[str, Sequence[Script]] | None = None,
        base_url: str = "http://scripted.invalid",
        model: str = "scripted",
    ) -> None:
        _check_scheduler("ScriptedClient", scheduler)
        self.scheduler = scheduler
        self._streams = _check_scripts("ScriptedClient: streams", streams)
        check_instance(models, Mapping, "ScriptedClient: models", "a dict", optional=True)
        self._models: dict[str, list[Script]] = {}
        for name, scripts in (models or {}).items():
            check_instance(name, str, "ScriptedClient: a models key", "a str (a model name)")
            self._models[name] = _check_scripts(
                f"ScriptedClient: models[{shown(name, 100)}]", scripts
            )
        outcomes = cast("object", create)  # callers may be untyped
        if isinstance(outcomes, str | bytes | Mapping) or not isinstance(outcomes, Sequence):
            raise ConfigError(
                "ScriptedClient: create must be a list of outcomes (one per call), "
                f"got {described(create)}"
            )
        for index, outcome in enumerate(create):
            _check_outcome(f"ScriptedClient: create[{index}]", outcome)
        self._create = list(create)
        check_instance(base_url, str, "ScriptedClient: base_url", "a str")
        check_instance(model, str, "ScriptedClient: model", "a str")
        self.base_url = base_url
        self.model = model
        self.stream_calls: list[tuple[Request, RequestOptions | None]] = []
        self.create_calls: list[tuple[Request, RequestOptions | None]] = []
        self.attempts: list[Tracked] = []  # one per stream() call, with its subscription spans
        self.models_asked: list[str] = []  # the model of every stream() call, in order

    def stream(
        self, request: Request, options: RequestOptions | None = None
    ) -> Observable[StreamEvent]:
        self.stream_calls.append((request, options))
        asked = (options.model if options is not None else None) or self.model
        script = self._models.get(asked, self._streams)
        if not script:
            raise AssertionError(f"no stream scripted for model {shown(asked, 100)}")
        self.models_asked.append(asked)
        index = min(sum(1 for m in self.models_asked if m == asked), len(script)) - 1
        tracked = Tracked(self.scheduler, script[index])
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
    def values(self) -> list[object]:
        return [item for _, item in self.items]

    @property
    def resets(self) -> list[AttemptReset]:
        return [item for item in self.values if isinstance(item, AttemptReset)]

    @property
    def fallbacks(self) -> list[Fallback]:
        return [item for item in self.values if isinstance(item, Fallback)]

    @property
    def events(self) -> list[StreamEvent]:
        """The provider events (everything but the handler's resets and rescue items)."""
        return [
            cast("StreamEvent", item)
            for item in self.values
            if not isinstance(item, AttemptReset | Fallback)
        ]

    def __repr__(self) -> str:
        return (
            f"Run(items={len(self.items)}, error={self.error!r}, completed={self.completed}, "
            f"end_time={self.end_time})"
        )


def events_of(recorded: Sequence[Recorded[_T]]) -> list[_T]:
    """The values of the on_next notifications of a recorded timeline."""
    out: list[_T] = []
    for record in recorded:
        value: Any = record.value
        if value.kind == "N":
            out.append(value.value)
    return out


def _queue_of(scheduler: TestScheduler) -> Any:
    # reactivex keeps a virtual-time scheduler's timers in a private priority queue
    return scheduler._queue  # pyright: ignore[reportPrivateUsage]


def leftovers(scheduler: TestScheduler) -> list[object]:
    """Scheduled items that are still live (not yet run, not disposed)."""
    return [item for item, _ in _queue_of(scheduler).items if not item.is_cancelled()]


async def assert_clean(scheduler: TestScheduler) -> None:
    """Nothing outlives a turn: no live timer on ``scheduler``, no other asyncio task."""
    await settle()
    assert leftovers(scheduler) == []
    current = asyncio.current_task()
    assert [task for task in asyncio.all_tasks() if task is not current] == []


async def settle(rounds: int = 8) -> None:
    """Let asyncio run what is ready (tasks started or woken at this virtual instant).

    Raises:
        ConfigError: ``rounds`` is not a whole number ``>= 0``.
    """
    _check_count("settle", "rounds", rounds)
    for _ in range(rounds):
        await asyncio.sleep(0)


def _run_next_instant(scheduler: TestScheduler, limit: float) -> bool:
    """Run one scheduler turn at the earliest pending instant; False if none is due by ``limit``.

    One turn is the items due when it starts. What they schedule for that same instant (a
    timer of zero, a deadline judged again one turn later) waits for the next call, so that the
    caller lets asyncio run first what they woke: a reply a coroutine delivers at a deadline's
    instant then reaches the race before the deadline is judged again, as it does on a running
    loop (``TestScheduler.advance_to`` would run the whole instant at once).
    """
    queue = _queue_of(scheduler)
    while queue and queue.peek().is_cancelled():
        queue.dequeue()
    if not queue:
        return False
    head = queue.peek()
    if scheduler.to_seconds(head.duetime) > limit:
        return False
    if head.duetime > scheduler.now:
        # the clock moves to the instant without running anything (as advance_to does it)
        scheduler._clock = scheduler.to_seconds(head.duetime)  # pyright: ignore[reportPrivateUsage]
    batch = [item for item, _ in queue.items if item.duetime <= scheduler.now]
    due = {id(item) for item in batch}  # ``batch`` keeps them alive: no id is reused
    while queue and id(queue.peek()) in due:
        item = queue.dequeue()
        if not item.is_cancelled():
            item.invoke()
    return True


class StillRunning(AssertionError):
    """:func:`run_virtual`'s coroutine had not finished when virtual time ran out (a hang)."""

    def __init__(self, at: float) -> None:
        super().__init__(
            f"still running at virtual time {at:g}s with nothing left to run: a hang, or a "
            "wait on another clock (build the TurnEngine with scheduler= this TestScheduler)"
        )
        self.at = at


async def run_virtual(
    scheduler: TestScheduler,
    awaitable: Awaitable[_R],
    *,
    limit: float = 100_000.0,
    idle_rounds: int = 200,
) -> _R:
    """Await ``awaitable`` on ``scheduler``'s virtual time; its result (or its error).

    Runs it as a task and, whenever asyncio has nothing ready, advances the scheduler to its
    next due instant and runs what is due there. A turn of a ``TurnEngine(...,
    scheduler=scheduler)`` over a :class:`ScriptedClient` so runs its backoffs, deadlines and
    breaker cooldowns in no real time. Work done in worker threads (synchronous tools) is given
    ``idle_rounds`` short real pauses to report back before virtual time moves on; the loads an
    engine starts in background threads when it is built (the tokenizer, the price data) are
    waited for, in real time, before ``awaitable`` runs, so a process's first turn sees virtual
    time as every later one does.

    Raises:
        StillRunning: nothing was left to run before ``limit`` and the coroutine had not
            finished (a hang); the task is cancelled first, so nothing leaks.
        ConfigError: ``scheduler`` is not a TestScheduler, ``awaitable`` is not awaitable
            (``engine.run`` rather than ``engine.run(prompt)``), ``limit`` is not a finite
            number of seconds ``> 0``, or ``idle_rounds`` not a whole number ``>= 0`` (checked
            before ``awaitable`` is started; a coroutine refused is closed, never left
            un-awaited).
    """
    try:
        _check_scheduler("run_virtual", scheduler)
        if not inspect.isawaitable(awaitable):
            raise ConfigError(
                "run_virtual: awaitable must be an awaitable, such as engine.run(prompt) "
                f"(call the function), got {described(awaitable)}"
            )
        _check_seconds("run_virtual", "limit", limit, allow_zero=False)
        _check_count("run_virtual", "idle_rounds", idle_rounds)
    except ConfigError:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise
    try:
        await _first_use_loaded()
    except BaseException:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise
    task: asyncio.Task[_R] = asyncio.ensure_future(awaitable)
    try:
        while True:
            await settle()
            if task.done():
                break
            if _run_next_instant(scheduler, limit):
                continue
            for _ in range(idle_rounds):  # a worker thread may still be about to report
                await asyncio.sleep(0.001)
                if task.done() or _has_due(scheduler, limit):
                    break
            if task.done() or _has_due(scheduler, limit):
                continue
            raise StillRunning(float(scheduler.clock))
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    return task.result()


async def _first_use_loaded() -> None:
    """The first-use loads an engine starts in background threads when it is built (the
    tokenizer, the ``rxturn[cost]`` price data) finished, waited for in real time: a turn that
    waited for one in a worker thread left asyncio idle, so virtual time moved on to the
    test's own scheduled actions (a cancel at 2 s landed before the request) in a process's
    first turn only."""
    from ..cost import finish_prefetch
    from ..engine.context.tokens import finish_prefetches

    await finish_prefetches()
    await finish_prefetch()


async def _others_went_on(
    scheduler: TestScheduler, limit: float, rounds: int, progress: Callable[[], object]
) -> bool:
    """Whether, within ``rounds`` real pauses of 1 ms, other asyncio tasks (real IO, a worker
    thread's waiter) made ``progress`` (an item, the end) or put something due on the
    scheduler; at once False when no other task is alive (nothing else could)."""
    current = asyncio.current_task()
    if not any(task is not current and not task.done() for task in asyncio.all_tasks()):
        return False
    before = progress()
    for _ in range(rounds):
        await asyncio.sleep(0.001)
        if progress() != before or _has_due(scheduler, limit):
            return True
    return False


def _has_due(scheduler: TestScheduler, limit: float) -> bool:
    queue = _queue_of(scheduler)
    live = [item for item, _ in queue.items if not item.is_cancelled()]
    return any(scheduler.to_seconds(item.duetime) <= limit for item in live)


async def drive(
    scheduler: TestScheduler,
    observable: Observable[object],
    *,
    cancel: CancelToken | None = None,
    cancel_at: float | None = None,
    dispose_at: float | None = None,
    limit: float = 100_000.0,
    idle_rounds: int = 200,
) -> Run:
    """Subscribe at the scheduler's current time and run until the stream ends (or is disposed).

    Driving stops as soon as the subscriber has seen the end (or the subscription is disposed):
    what is still scheduled then has outlived the turn, and the ``clean`` fixture reports it.
    The test's own cancel/dispose actions are withdrawn at that point.

    When nothing is due on the scheduler but other asyncio tasks are alive (a request over
    real IO, a worker thread about to report), up to ``idle_rounds`` short real pauses let them
    go on before driving gives up, as :func:`run_virtual` does. A run given up (nothing left to
    run, or ``limit`` reached) is returned unfinished and its subscription is disposed first,
    so nothing it started outlives ``drive`` and no item arrives after it returned.

    Args:
        scheduler: the TestScheduler everything runs on.
        observable: what to subscribe.
        cancel: the token to fire at ``cancel_at``.
        cancel_at: virtual time of the cancel.
        dispose_at: virtual time at which the subscription is disposed.
        limit: give up (and return) past this virtual time: a hang shows as an unfinished run.
        idle_rounds: real pauses of 1 ms granted to other asyncio tasks when nothing is due.

    Raises:
        ConfigError: a time that is not a finite number of seconds ``>= 0``, ``idle_rounds``
            not a whole number ``>= 0``, ``scheduler`` not a TestScheduler, ``observable`` not
            an Observable, ``cancel`` not a CancelToken, or ``cancel_at`` without ``cancel``.
    """
    _check_scheduler("drive", scheduler)
    check_instance(observable, abc.ObservableBase, "drive: observable", "an Observable")
    check_instance(cancel, CancelToken, "drive: cancel", "a CancelToken", optional=True)
    for name, value in (("cancel_at", cancel_at), ("dispose_at", dispose_at), ("limit", limit)):
        if value is not None or name == "limit":
            _check_seconds("drive", name, value)
    if cancel_at is not None and cancel is None:
        raise ConfigError("drive: cancel_at needs the token to fire (cancel=...)")
    _check_count("drive", "idle_rounds", idle_rounds)
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

    if cancel_at is not None and cancel is not None:
        token = cancel

        def fire(*_: Any) -> None:
            token.cancel()

        scaffolding.append(scheduler.schedule_absolute(cancel_at, fire))
    subscription = observable.subscribe(record, failed, done, scheduler=scheduler)
    if dispose_at is not None:

        def dispose(*_: Any) -> None:
            nonlocal disposed
            disposed = True
            subscription.dispose()

        scaffolding.append(scheduler.schedule_absolute(dispose_at, dispose))

    def seen() -> tuple[int, bool]:
        return len(run.items), run.finished

    while True:
        await settle()
        if run.finished or disposed:
            break
        if _run_next_instant(scheduler, limit):
            continue
        if not await _others_went_on(scheduler, limit, idle_rounds, seen):
            break
    for action in scaffolding:
        action.dispose()
    if not (run.finished or disposed):  # given up: what it started must not outlive drive
        subscription.dispose()
    await settle()
    return run
