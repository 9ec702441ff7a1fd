"""``hedge``: race a slow attempt against hedges; the first to produce content is the stream.

A thin Rx shell over :class:`rxturn.resilience.hedge.HedgeRace` (the rules live there): it
subscribes the racers the machine starts, holds each racer's items until the race is decided,
arms the hedge timer on the scheduler, and carries out the machine's actions in the order it
gives them — so every loser is disposed (its connection closed) before the winner's first held
item is forwarded, and no item of a loser ever goes downstream. No ``AttemptReset`` is emitted:
nothing was shown before the win.

The decision is taken one scheduler step after the first content, at the same instant, so that
content arriving at the same instant from a racer that started earlier wins the tie.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any, Protocol, cast

from reactivex import Observable, abc

from .._arguments import described
from ..errors import ConfigError
from ..events import MessageDelta, MessageStop
from ..messages import Usage
from ..resilience.guard import truncation
from ..resilience.hedge import (
    Action,
    Arm,
    Cut,
    Decide,
    Fail,
    HedgePolicy,
    HedgeRace,
    HedgeTarget,
    Skipped,
    Start,
    Win,
    is_content,
)
from ._scheduling import clock, resolve_scheduler

__all__ = ["RaceWatcher", "hedge_"]


class RaceWatcher(Protocol):
    """Told about each racer (the engine's attempt log is one). All calls are synchronous.

    ``racer_started`` may return a :class:`contextvars.Context` to subscribe the racer in.
    ``racer_ended`` reports a racer whose end does not go downstream: a loser (``outcome``
    ``"hedge_lost"``), a racer that failed while others ran on (``error``), or one let go with
    the race (``disposed``). ``racer_adopted`` names the racer whose end the downstream will
    report with the stream's own end (the winner, the racer whose error ends the race, or the
    one still running when the race is disposed); ``won`` says it won the race. When every
    racer failed, each was reported as it failed, and the race's error (the primary's) goes
    downstream with no racer adopted.
    """

    def racer_started(self, index: int, model: str) -> contextvars.Context | None: ...

    def racer_ended(
        self,
        index: int,
        error: BaseException | None,
        usage: Usage | None,
        *,
        outcome: str | None = None,
        disposed: bool = False,
    ) -> None: ...

    def racer_adopted(self, index: int, *, won: bool = False) -> None: ...


class _Seat(abc.ObserverBase[Any]):
    """One racer's subscription and what it holds until the race is decided."""

    __slots__ = ("completed", "error", "held", "index", "race", "reported", "subscription", "usage")

    def __init__(self, race: _Race, index: int) -> None:
        self.race = race
        self.index = index
        self.held: list[Any] = []
        self.usage: Usage | None = None
        self.subscription: abc.DisposableBase | None = None
        self.completed = False
        self.error: Exception | None = None
        self.reported = False  # its end was told to the watcher (racer_ended)

    def _scan(self, event: Any) -> bool:
        if type(event) is MessageDelta and event.usage is not None:
            self.usage = event.usage
        return is_content(event)

    def on_next(self, value: Any) -> None:
        race = self.race
        if race.forwarding is self:
            race.downstream.on_next(value)
            return
        if race.machine.done:
            return
        self.held.append(value)
        if type(value) is list:
            content = False
            for event in value:  # pyright: ignore[reportUnknownVariableType]
                content = self._scan(event) or content
        else:
            content = self._scan(value)
        if content:
            try:
                race.run(race.machine.content(self.index, race.now()))
            except Exception as error:  # a watcher's or a callback's: the race's error
                race.abort(error)

    def on_completed(self) -> None:
        race = self.race
        if race.forwarding is self:
            race.downstream.on_completed()
            return
        if race.machine.done:
            return
        stopped = any(
            type(item) is MessageStop
            or (type(item) is list and any(type(e) is MessageStop for e in item))
            for item in self.held
        )
        events = sum(len(i) if type(i) is list else 1 for i in self.held)  # pyright: ignore[reportUnknownArgumentType]
        error = truncation(stopped, events)
        if error is None:  # a complete reply (maybe an empty one) is an answer
            self.completed = True
            try:
                race.run(race.machine.content(self.index, race.now()))
            except Exception as broken:
                race.abort(broken)
        else:
            self.on_error(error)

    def on_error(self, error: Exception) -> None:
        race = self.race
        if race.forwarding is self:
            race.downstream.on_error(error)
            return
        if race.machine.done:
            return
        self.subscription = None
        self.error = error
        try:
            actions = race.machine.failed(self.index, error, race.now())
            final = any(type(a) is Fail and a.index == self.index for a in actions)
            if not final:
                self.reported = True
                if race.watcher is not None:
                    race.watcher.racer_ended(self.index, error, self.usage)
            race.run(actions)
        except Exception as broken:
            race.abort(broken)

    def dispose(self) -> None:
        subscription, self.subscription = self.subscription, None
        if subscription is not None:
            subscription.dispose()


class _Race(abc.DisposableBase):
    __slots__ = (
        "closed",
        "decision",
        "downstream",
        "forwarding",
        "machine",
        "now",
        "on_fail",
        "on_hedge",
        "on_skip",
        "open_target",
        "primary",
        "scheduler",
        "seats",
        "started",
        "timer",
        "watcher",
    )

    def __init__(
        self,
        primary: Observable[Any],
        machine: HedgeRace,
        open_target: Callable[[HedgeTarget], Observable[Any]],
        downstream: abc.ObserverBase[Any],
        scheduler: abc.SchedulerBase,
        watcher: RaceWatcher | None,
        on_hedge: Callable[..., object] | None,
        on_skip: Callable[..., object] | None,
        on_fail: Callable[[int], object] | None = None,
    ) -> None:
        self.primary = primary
        self.machine = machine
        self.open_target = open_target
        self.downstream = downstream
        self.scheduler = scheduler
        self.now = clock(scheduler)
        self.watcher = watcher
        self.on_hedge = on_hedge
        self.on_skip = on_skip
        self.on_fail = on_fail
        self.seats: list[_Seat] = []
        self.forwarding: _Seat | None = None
        self.timer: abc.DisposableBase | None = None
        self.decision: abc.DisposableBase | None = None
        self.closed = False  # disposed: no action is carried out any more
        self.started = self.now()

    def start(self) -> _Race:
        self.run(self.machine.start(self.started))
        return self

    # -- carrying out the machine's actions ------------------------------------------------

    def run(self, actions: list[Action]) -> None:
        for action in actions:
            if self.closed:  # disposed by a callback of an earlier action (a cancel)
                return
            kind: type[Action] = type(action)
            if kind is Start:
                self._start(cast(Start, action))
            elif kind is Cut:
                self._cut(cast(Cut, action))
            elif kind is Arm:
                self._arm(cast(Arm, action).at)
            elif kind is Decide:
                self.decision = self.scheduler.schedule(self._decide)
            elif kind is Win:
                self._win(cast(Win, action).index)
            elif kind is Fail:
                self._fail(cast(Fail, action).index)
            elif kind is Skipped:
                self._skipped(cast(Skipped, action))

    def _start(self, action: Start) -> None:
        index, target = action.index, action.target
        racer = self.machine.racers[index]
        seat = _Seat(self, index)
        self.seats.append(seat)
        if index > 0 and self.on_hedge is not None:
            _notify(
                self.on_hedge,
                index=index,
                model=racer.model,
                target=target,
                reason=action.reason,
                after=racer.started - self.started,
            )
            if self.closed:  # on_hedge cancelled the turn: the hedge is not sent
                return
        context = self.watcher.racer_started(index, racer.model) if self.watcher else None
        if self.closed:  # a callback above (on_hedge, on_attempt_start) cancelled the turn
            return
        try:
            source = self.primary if target is None else self.open_target(target)
            if not isinstance(source, Observable):  # pyright: ignore[reportUnnecessaryIsInstance]
                # the caller's mistake: a configuration error, which ends the race
                raise ConfigError(
                    "hedge: open_target must return an Observable of the target's request, "
                    f"got {described(source)}"
                )
            if context is None:
                seat.subscription = source.subscribe(seat, scheduler=self.scheduler)
            else:
                seat.subscription = context.run(source.subscribe, seat, scheduler=self.scheduler)
        except Exception as error:  # a client that fails before returning its Observable
            seat.on_error(error)

    def _cut(self, action: Cut) -> None:
        seat = self.seats[action.index]
        seat.dispose()
        if self.watcher is not None:
            self.watcher.racer_ended(action.index, None, seat.usage, outcome=action.outcome)

    def _arm(self, at: float | None) -> None:
        timer, self.timer = self.timer, None
        if timer is not None:
            timer.dispose()
        if at is not None:
            self.timer = self.scheduler.schedule_relative(max(0.0, at - self.now()), self._due)

    def _due(self, _: abc.SchedulerBase, __: Any = None) -> None:
        self.timer = None
        try:
            self.run(self.machine.hedge_due(self.now()))
        except Exception as error:  # (``blocked`` is the caller's): the race's error
            self.abort(error)

    def _decide(self, _: abc.SchedulerBase, __: Any = None) -> None:
        self.decision = None
        try:
            self.run(self.machine.decide(self.now()))
        except Exception as error:
            self.abort(error)

    def abort(self, error: Exception) -> None:
        """A step raised (``blocked``, a watcher, a racer's callback): nobody upstream would
        hear of it, and a race left half-decided waits for ever. Every racer is let go (also
        one the machine already counts as decided: the step may have stopped before closing
        it) and the error goes downstream."""
        downstream, seats = self.downstream, self.seats
        try:
            self.dispose()
        finally:
            for seat in seats:
                seat.dispose()
            downstream.on_error(error)

    def _win(self, index: int) -> None:
        seat = self.seats[index]
        if self.watcher is not None:
            self.watcher.racer_adopted(index, won=True)
        self.forwarding = seat
        held, seat.held = seat.held, []
        downstream = self.downstream
        for item in held:
            downstream.on_next(item)
            if self.forwarding is not seat:  # disposed while forwarding
                return
        if seat.completed:
            downstream.on_completed()

    def _fail(self, index: int) -> None:
        seat = self.seats[index]
        if self.on_fail is not None:
            self.on_fail(index)
            if self.closed:  # it cancelled the turn
                return
        if self.watcher is not None and not seat.reported:
            self.watcher.racer_adopted(index)
        error = seat.error
        assert error is not None
        self.downstream.on_error(error)

    def _skipped(self, action: Skipped) -> None:
        if self.on_skip is not None:
            target = action.target
            model = None if target is None else target.model or self.machine.model
            _notify(self.on_skip, target=target, model=model, reason=action.reason)

    # -- disposal ----------------------------------------------------------------------------

    def dispose(self) -> None:
        self.closed = True
        try:
            self._dispose()
        finally:
            for seat in self.seats:  # a racer's error: its traceback holds the frame of the
                seat.error = None  # source that called the seat, which holds the seat (a cycle)
            self.seats = []  # each seat holds the race: without this the two are a cycle

    def _dispose(self) -> None:
        for handle in (self.timer, self.decision):
            if handle is not None:
                handle.dispose()
        self.timer = self.decision = None
        forwarding, self.forwarding = self.forwarding, None
        machine = self.machine
        if forwarding is not None:
            forwarding.dispose()
            return
        # (a racer the machine started but whose Start was not carried out yet has no seat:
        # the dispose came from a callback of the step that started it)
        seats = self.seats
        running = [seats[index] for index in machine.let_go(self.now()) if index < len(seats)]
        # and a racer still subscribed that the machine no longer counts as running: the winner
        # of a decision whose Win the dispose cut short (a callback of its Cut cancelled)
        running += [seat for seat in seats if seat.subscription is not None and seat not in running]
        for position, seat in enumerate(running):
            seat.dispose()
            if self.watcher is None:
                continue
            if position == 0:  # its end is the downstream's to report
                self.watcher.racer_adopted(seat.index)
            else:
                self.watcher.racer_ended(seat.index, None, seat.usage, disposed=True)


def _notify(callback: Callable[..., object], **facts: object) -> None:
    """Call a user's callback; what it raises is logged, never the race's problem."""
    try:
        callback(**facts)
    except Exception:  # pragma: no cover - logged
        import logging

        logging.getLogger("rxturn.operators").exception("hedge callback failed")


def hedge_(
    policy: HedgePolicy,
    open_target: Callable[[HedgeTarget], Observable[Any]],
    model: str,
    client: object | None,
    blocked: Callable[[HedgeTarget], bool] | None,
    rate_limited: bool,
    watcher: RaceWatcher | None,
    on_hedge: Callable[..., object] | None,
    on_skip: Callable[..., object] | None,
    scheduler: abc.SchedulerBase | None,
    on_fail: Callable[[int], object] | None = None,
) -> Callable[[Observable[Any]], Observable[Any]]:
    """The operator (:func:`rxturn.operators.hedge` checks the arguments and documents them);
    ``on_fail(index)``: the race fails with racer ``index``'s error, which goes downstream
    next (the engine's: the turn's outcome is then that racer's model's)."""

    def operator(source: Observable[Any]) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], subscribe_scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            sched = resolve_scheduler(scheduler, subscribe_scheduler)
            machine = HedgeRace(policy, model, client, blocked=blocked, rate_limited=rate_limited)
            race = _Race(
                source, machine, open_target, observer, sched, watcher, on_hedge, on_skip, on_fail
            )
            return race.start()

        return Observable(subscribe)

    return operator
