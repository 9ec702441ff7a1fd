"""The attempt log of one turn: every request it made, with its usage and times.

:class:`AttemptLog` is the :class:`~rxturn.engine.handler.AttemptWatcher` the engine hands the
stream handler for a turn (and feeds itself for a non-streaming ``create``). It stamps each
attempt with the model being asked and the engine's clock, and keeps the usage the provider had
reported when the attempt ended — also for an attempt that failed, so that the audit's
``billed_usage`` says what the provider billed.

An attempt let go from outside (``disposed``) learns its outcome later: a cancel makes it
``"cancelled"``; a stream attempt cut by the turn's total deadline is a ``StreamTimeoutError``
(that is the only other way a stream attempt is let go while the turn goes on, to the rescue);
a rescue cut by its deadline is a ``RescueTimeoutError``. :meth:`AttemptLog.close` settles them
with the turn's own error, :meth:`AttemptLog.leg_failed` with a failover leg's.

A hedged first token (docs/engine.md) runs several stream attempts at once: the race reports
each racer (:meth:`AttemptLog.racer_started`, :meth:`~AttemptLog.racer_ended`) and names the one
whose end the handler reports as the attempt's (:meth:`~AttemptLog.racer_adopted`). A loser is
recorded ``"hedge_lost"`` with the usage it reported before the cut, or, when it reported none,
the turn's offline input estimate in ``estimated_usage``. Racers are kept apart from the one
attempt in flight, which stays in slots: a turn that does not hedge makes no racer object.

Given :class:`AttemptHooks`, the log is also where the observers' ``on_attempt_start`` and
``on_attempt_end`` fire (docs/observability.md): the start with a fresh copy of the current
:mod:`contextvars` context, which :meth:`AttemptLog.attempt_started` returns so that the caller
sends the request inside it; the end once the attempt's outcome is known. Nobody listening costs
one attribute test per attempt.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from decimal import Decimal
from typing import Literal

import msgspec

from ...cost import Cost, Pricer, total_cost
from ...errors import RescueFailed
from ...messages import Usage, sum_usage
from ...resilience.verdicts import is_cancel
from ..observation.observers import ObserverSet
from ._results import AttemptStats
from .audit import AttemptKind, AttemptRecord

__all__ = ["AttemptHooks", "AttemptLog"]

_PENDING = ""
HEDGE_LOST = "hedge_lost"


class AttemptHooks:
    """Where a turn's attempt log reports attempts: the observers, and the turn's identity."""

    __slots__ = ("end", "observers", "start", "turn", "turn_id")

    def __init__(self, observers: ObserverSet, turn: int, turn_id: int) -> None:
        self.observers = observers
        self.turn = turn
        self.turn_id = turn_id
        self.start = observers.interested("on_attempt_start")
        self.end = observers.interested("on_attempt_end")


class _Racer:
    """A racer of a hedged race, open (the race's other racers run beside the attempt)."""

    __slots__ = ("model", "number", "pricer", "started")

    def __init__(self, model: str, started: float, number: int, pricer: Pricer | None) -> None:
        self.model = model
        self.started = started
        self.number = number  # its attempt number, given at its start
        self.pricer = pricer  # its client's (None: the log's)


class AttemptLog(AttemptStats):
    """Records a turn's attempts (see the module docstring); also the turn's
    :class:`~rxturn.engine.records._results.AttemptStats` (whether the rescue served), and the
    base of the turn's :class:`~rxturn.engine.failover._legs.TurnLegs`: one object per turn for the
    three.

    Attributes:
        streams: how many attempts were recorded that were not the rescue: streams (racers
            included), or the requests of a non-streaming turn (one per model it asked).
    """

    __slots__ = (
        "_clock",
        "_hooks",
        "_last_end",
        "_numbered",
        "_open_kind",
        "_open_model",
        "_open_number",
        "_open_pricer",
        "_open_started",
        "_pending",
        "_pricer",
        "_racers",
        "_records",
        "estimate",
        "model",
        "streams",
    )

    def __init__(
        self,
        clock: Callable[[], float],
        model: str,
        hooks: AttemptHooks | None = None,
        pricer: Pricer | None = None,
    ) -> None:
        self.rescued = False  # (AttemptStats)
        self._clock = clock
        self._pricer = pricer
        self.model = model
        # the attempt in flight (kind None: none), kept as slots: no object per attempt
        self._open_kind: AttemptKind | None = None
        self._open_model = model
        self._open_started = 0.0
        self._open_number = 0  # an adopted racer's number (0: numbered by the records)
        self._open_pricer: Pricer | None = None  # an adopted racer's (None: the log's)
        # grown one record at a time: no object until an attempt ends
        self._records: tuple[AttemptRecord, ...] = ()
        self.streams = 0
        self._pending = 0  # records let go from outside, their outcome still to settle
        # a hedged race only: its open racers, and (record position, number) of racers
        # numbered at their start
        self._racers: dict[int, _Racer] | None = None
        self._numbered: tuple[tuple[int, int], ...] = ()
        #: the turn's offline input estimate (tokens), for a hedge loser that reported none
        self.estimate: int | None = None
        self._hooks = hooks if hooks is not None and (hooks.start or hooks.end) else None
        self._last_end = clock() if self._hooks is not None else 0.0

    @property
    def records(self) -> tuple[AttemptRecord, ...]:
        return self._records

    def attempt_started(self, kind: AttemptKind) -> contextvars.Context | None:
        """Open an attempt; the context to send it in when an observer asked for one."""
        if kind == "rescue":
            # a stream attempt let go before the rescue was cut by the total deadline
            self._settle("StreamTimeoutError", only="stream")
        self._open_kind = kind
        model = self._open_model = self.model
        started = self._open_started = self._clock()
        hooks = self._hooks
        if hooks is None or not hooks.start:
            return None
        records = self._records
        return self._announce(
            hooks,
            len(records) + 1,
            kind,
            model,
            max(0.0, started - self._last_end),
            records[-1].outcome if records else None,
        )

    def _announce(
        self,
        hooks: AttemptHooks,
        attempt: int,
        kind: AttemptKind,
        model: str,
        wait: float,
        after: str | None,
    ) -> contextvars.Context:
        """``on_attempt_start``, with the context the attempt's request is sent in."""
        context = contextvars.copy_context()
        hooks.observers.emit(
            "on_attempt_start",
            turn=hooks.turn,
            turn_id=hooks.turn_id,
            attempt=attempt,
            kind=kind,
            model=model,
            wait=wait,
            after=after,
            context=context,
        )
        return context

    def attempt_ended(
        self,
        kind: AttemptKind,
        error: BaseException | None,
        usage: Usage | None,
        *,
        disposed: bool = False,
    ) -> None:
        if self._open_kind is None and self._racers is not None:
            # A hedged race's attempt that ended before the race adopted a racer (a cancel
            # from inside a racer's callback): the handler's end is the first racer still
            # pending's; with none pending, the race has reported every racer itself.
            if not self._racers:
                return
            self.racer_adopted(min(self._racers))
        if self._open_kind is not None:
            self._open_kind = None
            started, model, number = self._open_started, self._open_model, self._open_number
            pricer, self._open_number, self._open_pricer = self._open_pricer, 0, None
        else:
            started, model, number, pricer = self._clock(), self.model, 0, None
        self._record(kind, started, model, number, error, usage, disposed, None, pricer)

    def _record(
        self,
        kind: AttemptKind,
        started: float,
        model: str,
        number: int,
        error: BaseException | None,
        usage: Usage | None,
        disposed: bool,
        outcome: str | None,
        pricer: Pricer | None = None,
    ) -> None:
        """Add one attempt's record; ``pricer``: the client's that was asked, when it is not
        the log's (a hedge's on another client)."""
        if outcome is None:
            if disposed:
                outcome = _PENDING
            elif error is None:
                outcome = "served"
            else:
                outcome = _outcome_of(error)
        if outcome == _PENDING:
            self._pending += 1
        if kind != "rescue":  # a stream, or the one request of a non-streaming turn's leg
            self.streams += 1
        estimated = None
        if outcome == HEDGE_LOST and usage is None and self.estimate is not None:
            estimated = Usage(input_tokens=self.estimate, output_tokens=0)
        record = AttemptRecord(
            model=model,
            kind=kind,
            outcome=outcome,
            usage=usage,
            started=started,
            ended=self._clock(),
            cost=None if self._pricer is None else (pricer or self._pricer).price(model, usage),
            estimated_usage=estimated,
        )
        records = self._records = (*self._records, record)
        if number:
            self._numbered = (*self._numbered, (len(records) - 1, number))
        else:
            number = len(records)
        if self._hooks is not None:
            self._last_end = record.ended
            if not disposed:
                self._ended(number, record, error)

    # -- a hedged race ----------------------------------------------------------------------

    @property
    def pricing(self) -> bool:
        """Whether attempts are priced (the ``rxturn[cost]`` extra)."""
        return self._pricer is not None

    def priced_by(self, pricer: Pricer) -> None:
        """Price the turn's later attempts with ``pricer``: they go to another client (a hedge
        on it won the race). Without pricing, nothing changes."""
        if self._pricer is not None:
            self._pricer = pricer

    def racer_started(
        self, index: int, model: str, pricer: Pricer | None = None
    ) -> contextvars.Context | None:
        """A racer of a hedged race starts (``index`` 0 is the primary); ``pricer``: its
        client's, when that is not the turn's."""
        racers = self._racers
        if racers is None:
            racers = self._racers = {}
        number = len(self._records) + len(racers) + (self._open_kind is not None) + 1
        racer = racers[index] = _Racer(model, self._clock(), number, pricer)
        hooks = self._hooks
        if hooks is None or not hooks.start:
            return None
        records = self._records
        return self._announce(
            hooks,
            number,
            "stream",
            model,
            0.0 if index else max(0.0, racer.started - self._last_end),
            records[-1].outcome if records and not index else None,
        )

    def racer_ended(
        self,
        index: int,
        error: BaseException | None,
        usage: Usage | None,
        *,
        outcome: str | None = None,
        disposed: bool = False,
    ) -> None:
        """A racer whose end the handler does not report: a loser, a failure others
        outran, or one let go with the race."""
        racers = self._racers
        racer = racers.pop(index, None) if racers is not None else None
        if racer is not None:
            self._record(
                "stream",
                racer.started,
                racer.model,
                racer.number,
                error,
                usage,
                disposed,
                outcome,
                racer.pricer,
            )

    def racer_adopted(self, index: int) -> None:
        """The racer whose end the handler will report as the attempt's own."""
        racers = self._racers
        racer = racers.pop(index, None) if racers is not None else None
        if racer is not None:
            self._open_kind = "stream"
            self._open_model = racer.model
            self._open_started = racer.started
            self._open_number = racer.number
            self._open_pricer = racer.pricer

    def _number_of(self, position: int) -> int:
        for where, number in self._numbered:
            if where == position:
                return number
        return position + 1

    def _ended(self, attempt: int, record: AttemptRecord, error: BaseException | None) -> None:
        hooks = self._hooks
        if hooks is not None and hooks.end:
            hooks.observers.emit(
                "on_attempt_end",
                turn=hooks.turn,
                turn_id=hooks.turn_id,
                attempt=attempt,
                record=record,
                error=error,
            )

    def _settle(self, outcome: str, *, only: Literal["stream", "rescue"] | None = None) -> None:
        for index, record in enumerate(self._records):
            if record.outcome == _PENDING and (only is None or record.kind == only):
                settled = _replace_outcome(record, outcome)
                self._pending -= 1
                records = self._records
                self._records = (*records[:index], settled, *records[index + 1 :])
                self._ended(self._number_of(index), settled, None)

    def close(self, error: BaseException | None) -> tuple[AttemptRecord, ...]:
        """Settle attempts let go from outside with the turn's ``error``; the final log."""
        if self._open_kind is not None:  # still open when the turn ended: let go with it
            self.attempt_ended(self._open_kind, None, None, disposed=True)
        if self._racers:
            for index in list(self._racers):
                self.racer_ended(index, None, None, disposed=True)
        self._settle_with(error)
        return self._records

    def leg_failed(self, error: BaseException) -> None:
        """A leg of the turn failed with ``error`` and the turn goes on (same-turn failover):
        the leg's attempts let go from outside are settled with it now, as :meth:`close`
        settles them with the turn's error (a rescue its deadline cut is a
        ``RescueTimeoutError``, not ``"cancelled"`` because the next leg served)."""
        self._settle_with(error)

    def _settle_with(self, error: BaseException | None) -> None:
        if self._pending:
            if error is None or is_cancel(error):
                self._settle("cancelled")
            else:
                rescue_error = error.rescue_error if isinstance(error, RescueFailed) else error
                self._settle("StreamTimeoutError", only="stream")
                self._settle(type(rescue_error).__name__, only="rescue")

    def totals(self) -> tuple[Usage | None, Usage | None, Cost | None]:
        """What the log adds up to, in one pass: ``(billed, discarded, cost)`` (see
        :meth:`billed`, :meth:`discarded`, :meth:`cost`; the turn's audit entry takes all three)."""
        usages: list[Usage | None] = []
        unserved: list[Usage | None] = []
        costs: list[Decimal | None] = []
        for record in self._records:
            usage = record.usage
            usages.append(usage)
            if record.outcome != "served":
                unserved.append(usage)
            costs.append(record.cost)
        return (
            sum_usage(usages),
            sum_usage(unserved),
            total_cost(costs) if self._pricer is not None else None,
        )

    def billed(self) -> Usage | None:
        """Every usage the attempts reported, summed (:func:`~.audit.billed` of the log)."""
        return self.totals()[0]

    def cost(self) -> Cost | None:
        """Every attempt's cost, summed (``None`` without pricing)."""
        return self.totals()[2]

    def discarded(self) -> Usage | None:
        """Usage of every attempt that did not serve."""
        return self.totals()[1]


def _outcome_of(error: BaseException) -> str:
    return "cancelled" if is_cancel(error) else type(error).__name__


def _replace_outcome(record: AttemptRecord, outcome: str) -> AttemptRecord:
    return msgspec.structs.replace(record, outcome=outcome)
